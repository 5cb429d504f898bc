// kdl/gemm_host.h -- the host side of every GEMM kernel kdlc emits, written once.
//
// An emitted NAME.cu holds its Epilogue functor and a description of the kernel:
//
//   struct Kernel {
//     using Arguments = ::kdl_kernels::NAME::Arguments;  // NAME.h's C++ API struct
//     using Epilogue = ...;                               // the generated functor
//     using Gemm = ::kdl::GemmSm80Tma<..., Epilogue>;     // the device template instance
//     static constexpr const char* kName = "NAME";
//     static constexpr const char* kOp = "gemm";
//     static constexpr ::kdl::KernelTarget kTarget = {"sm80", 80, false};
//     static constexpr int kMaxSplitK = 1;                // serial(N): N (Arguments has split_k)
//     static constexpr auto kArgs = ::std::make_tuple(...);  // the argument table, C ABI order
//   };
//
// GemmHost<Kernel> is the rest: NAME.h's can_implement / workspace_size / run and the bodies of the
// extern "C" entry points of kdl/abi.h. The argument table (kdl::arg::*, one entry per argument:
// its name, dtype word, and where it lives in Arguments and in Epilogue::Params) is the one list
// that drives the checks, the copy into Epilogue::Params, the C ABI unpacking and kdl_kernel_info.
//
// can_implement checks in a fixed order: the arguments alone first (pure, so a CPU test sees every
// argument error without a GPU), then the device (its architecture, then its shared memory).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kdl/abi.h"
#include "kdl/gemm_problem.h"
#include "kdl/runtime.h"

namespace kdl {

// The architecture a kernel was built for: it runs on compute capability >= min_cc (major*10+minor),
// or exactly min_cc for architecture-specific targets (sm90a).
struct KernelTarget {
  const char* arch;
  int min_cc;
  bool exact;
};

// ---- the argument table ------------------------------------------------------------------------
namespace arg {

// What every input of a mainloop says of itself: its Arguments members (pointer, leading dimension, batch
// stride) and its alignment in elements.
template <class Args, class T>
struct InputTensor {
  const char* name;
  const char* dtype;
  const T* Args::*data;
  int64_t Args::*ld;
  int64_t Args::*batch_stride;
  int align;  // elements
};

// A matrix operand of the mainloop (A, B): into GemmProblem, not the epilogue. Checked when k > 0.
template <class Args, class T>
struct Mainloop : InputTensor<Args, T> {};
template <class Args, class T>
constexpr Mainloop<Args, T> mainloop(const char* name, const char* dtype, const T* Args::*data, int64_t Args::*ld,
                                     int64_t Args::*batch_stride, int align) {
  return {{name, dtype, data, ld, batch_stride, align}};
}

// A tensor of a convolution's mainloop (the GEMM's A or B; kdl/conv_host.h): into Conv2dProblem, not
// the epilogue. `name` is the language's: "X" (n x h x w x c), "Y" (n x p x q x k) or "W" (k x r x s x c),
// which says its extents; ld is its pixel (tap) stride, batch_stride its image (filter) stride;
// Conv2dSm80::can_implement checks its pointer, strides and alignment.
template <class Args, class T>
struct ConvInput : InputTensor<Args, T> {};
template <class Args, class T>
constexpr ConvInput<Args, T> conv_input(const char* name, const char* dtype, const T* Args::*data, int64_t Args::*ld,
                                        int64_t Args::*batch_stride, int align) {
  return {{name, dtype, data, ld, batch_stride, align}};
}

// The f32 block scales of an fp8 mainloop operand (scale_A after A, scale_B after B; into
// GemmProblem::scale_a / scale_b): one per `block` rows of A ('m') or columns of B ('n') and k-block,
// "k-block major" (the scale of block (i, kb) at data[b * batch_stride + kb * ld + i]).
template <class Args>
struct BlockScales {
  const char* name;
  char along;  // 'm': scale_A, 'n': scale_B
  int block;   // rows of A or columns of B per scale
  const float* Args::*data;
  int64_t Args::*ld;
  int64_t Args::*batch_stride;
};
template <class Args>
constexpr BlockScales<Args> block_scales(const char* name, char along, int block, const float* Args::*data,
                                         int64_t Args::*ld, int64_t Args::*batch_stride) {
  return {name, along, block, data, ld, batch_stride};
}

// An m x n tensor of the epilogue: C (T const: read; may be null, reads as 0), D and extra outputs
// (T not const: written, so their batches must not overlap); row-major unless made with kColMajor.
constexpr bool kColMajor = true;
template <class Args, class Params, class T>
struct Tensor {
  const char* name;
  const char* dtype;
  T* Args::*data;
  int64_t Args::*ld;
  int64_t Args::*batch_stride;
  T* Params::*p_data;
  int64_t Params::*p_ld;
  int64_t Params::*p_batch_stride;
  bool col_major;  // element (m, n) at n * ld + m
  static constexpr bool kWritten = !std::is_const<T>::value;
};
template <class Args, class Params, class T>
constexpr Tensor<Args, Params, T> tensor(const char* name, const char* dtype, T* Args::*data, int64_t Args::*ld,
                                         int64_t Args::*batch_stride, T* Params::*p_data, int64_t Params::*p_ld,
                                         int64_t Params::*p_batch_stride, bool col_major = false) {
  return {name, dtype, data, ld, batch_stride, p_data, p_ld, p_batch_stride, col_major};
}

// A broadcast vector input ([row]: length m, [col]: length n), one per batch or shared (stride 0).
template <class Args, class Params, class T>
struct Vector {
  const char* name;
  const char* dtype;
  const char* broadcast;  // "row", "col"
  const T* Args::*data;
  int64_t Args::*batch_stride;
  const T* Params::*p_data;
  int64_t Params::*p_batch_stride;
};
template <class Args, class Params, class T>
constexpr Vector<Args, Params, T> vector(const char* name, const char* dtype, const char* broadcast,
                                         const T* Args::*data, int64_t Args::*batch_stride, const T* Params::*p_data,
                                         int64_t Params::*p_batch_stride) {
  return {name, dtype, broadcast, data, batch_stride, p_data, p_batch_stride};
}

// One device scalar input ([]).
template <class Args, class Params, class T>
struct Scalar {
  const char* name;
  const char* dtype;
  const T* Args::*data;
  const T* Params::*p_data;
};
template <class Args, class Params, class T>
constexpr Scalar<Args, Params, T> scalar(const char* name, const char* dtype, const T* Args::*data,
                                         const T* Params::*p_data) {
  return {name, dtype, data, p_data};
}

// An amax output: one device float, max |.| over an output; run() zeroes it before the launch,
// also when the output is empty, so its pointer is checked whatever the problem size.
template <class Args, class Params>
struct Amax {
  const char* name;
  const char* dtype;
  float* Args::*data;
  float* Params::*p_data;
};
template <class Args, class Params>
constexpr Amax<Args, Params> amax(const char* name, const char* dtype, float* Args::*data, float* Params::*p_data) {
  return {name, dtype, data, p_data};
}

// A runtime scalar parameter (f32); its default is the Arguments member's initializer.
template <class Args, class Params>
struct Param {
  const char* name;
  float Args::*value;
  float Params::*p_value;
};
template <class Args, class Params>
constexpr Param<Args, Params> param(const char* name, float Args::*value, float Params::*p_value) {
  return {name, value, p_value};
}

// ---- what each kind of entry means -------------------------------------------------------------

template <class A, class T> int32_t abi_kind(const InputTensor<A, T>&) { return KDL_ARG_TENSOR; }
template <class A, class P, class T> int32_t abi_kind(const Tensor<A, P, T>&) { return KDL_ARG_TENSOR; }
template <class A> int32_t abi_kind(const BlockScales<A>&) { return KDL_ARG_TENSOR; }
template <class A, class P, class T> int32_t abi_kind(const Vector<A, P, T>&) { return KDL_ARG_VECTOR; }
template <class A, class P, class T> int32_t abi_kind(const Scalar<A, P, T>&) { return KDL_ARG_DEVICE_SCALAR; }
template <class A, class P> int32_t abi_kind(const Amax<A, P>&) { return KDL_ARG_DEVICE_SCALAR; }
template <class A, class P> int32_t abi_kind(const Param<A, P>&) { return KDL_ARG_PARAM; }

template <class E> const char* dtype_word(const E& e) { return e.dtype; }
template <class A> const char* dtype_word(const BlockScales<A>&) { return "f32"; }
template <class A, class P> const char* dtype_word(const Param<A, P>&) { return "f32"; }

template <class E> const char* broadcast_word(const E&) { return ""; }
template <class A, class P, class T> const char* broadcast_word(const Vector<A, P, T>& e) { return e.broadcast; }

template <class E, class Args> double default_value(const E&, const Args&) { return 0; }
template <class A, class P> double default_value(const Param<A, P>& e, const A& defaults) { return defaults.*e.value; }

// kdl_arg (kdl/abi.h) -> the Arguments member(s).
template <class A, class T> void unpack(const InputTensor<A, T>& e, const kdl_arg& x, A& a) {
  a.*e.data = static_cast<const T*>(x.data);
  a.*e.ld = x.ld;
  a.*e.batch_stride = x.batch_stride;
}
template <class A> void unpack(const BlockScales<A>& e, const kdl_arg& x, A& a) {
  a.*e.data = static_cast<const float*>(x.data);
  a.*e.ld = x.ld;
  a.*e.batch_stride = x.batch_stride;
}
template <class A, class P, class T> void unpack(const Tensor<A, P, T>& e, const kdl_arg& x, A& a) {
  a.*e.data = static_cast<T*>(x.data);
  a.*e.ld = x.ld;
  a.*e.batch_stride = x.batch_stride;
}
template <class A, class P, class T> void unpack(const Vector<A, P, T>& e, const kdl_arg& x, A& a) {
  a.*e.data = static_cast<const T*>(x.data);
  a.*e.batch_stride = x.batch_stride;
}
template <class A, class P, class T> void unpack(const Scalar<A, P, T>& e, const kdl_arg& x, A& a) {
  a.*e.data = static_cast<const T*>(x.data);
}
template <class A, class P> void unpack(const Amax<A, P>& e, const kdl_arg& x, A& a) { a.*e.data = static_cast<float*>(x.data); }
template <class A, class P> void unpack(const Param<A, P>& e, const kdl_arg& x, A& a) { a.*e.value = (float)x.value; }

// The Arguments member(s) -> Epilogue::Params (mainloop operands go to GemmProblem instead).
template <class A, class T, class P> void to_params(const Mainloop<A, T>&, const A&, P&) {}
template <class A, class P> void to_params(const BlockScales<A>&, const A&, P&) {}

// The block scales -> GemmProblem (every other entry: nothing; A and B are GemmHost::problem_of's).
template <class E, class A> void to_problem(const E&, const A&, GemmProblem&) {}
template <class A> void to_problem(const BlockScales<A>& e, const A& a, GemmProblem& p) {
  if (e.along == 'm') {
    p.scale_a = a.*e.data;
    p.ld_scale_a = a.*e.ld;
    p.batch_stride_scale_a = a.*e.batch_stride;
  } else {
    p.scale_b = a.*e.data;
    p.ld_scale_b = a.*e.ld;
    p.batch_stride_scale_b = a.*e.batch_stride;
  }
}
template <class A, class P, class T> void to_params(const Tensor<A, P, T>& e, const A& a, P& p) {
  p.*e.p_data = a.*e.data;
  p.*e.p_ld = a.*e.ld;
  p.*e.p_batch_stride = a.*e.batch_stride;
}
template <class A, class P, class T> void to_params(const Vector<A, P, T>& e, const A& a, P& p) {
  p.*e.p_data = a.*e.data;
  p.*e.p_batch_stride = a.*e.batch_stride;
}
template <class A, class P, class T> void to_params(const Scalar<A, P, T>& e, const A& a, P& p) { p.*e.p_data = a.*e.data; }
template <class A, class P> void to_params(const Amax<A, P>& e, const A& a, P& p) { p.*e.p_data = a.*e.data; }
template <class A, class P> void to_params(const Param<A, P>& e, const A& a, P& p) { p.*e.p_value = a.*e.value; }

// Checks of what run() touches whatever the problem size (nullptr: fine).
template <class E, class A> const char* check_always(const E&, const char*, const A&) { return nullptr; }
template <class A, class P> const char* check_always(const Amax<A, P>& e, const char* kernel, const A& a) {
  return check_device_pointer(kernel, e.name, a.*e.data);
}

// Checks of what the kernel reads or writes when the output is not empty (nullptr: fine).
template <class A, class T> const char* check(const Mainloop<A, T>& e, const char* kernel, const A& a) {
  if (a.k == 0) return nullptr;  // nothing is read
  return check_mainloop_operand(kernel, e.name, a.*e.data, a.*e.ld, a.*e.batch_stride, e.align, a.batch);
}
// The pointer and batch stride (by name); the leading dimension against the blocks is GemmSm90's
// (can_implement, after its problem-size limits).
template <class A> const char* check(const BlockScales<A>& e, const char* kernel, const A& a) {
  return check_vector_input(kernel, e.name, a.*e.data, a.*e.batch_stride, a.batch);
}
template <class A, class P, class T> const char* check(const Tensor<A, P, T>& e, const char* kernel, const A& a) {
  using Self = Tensor<A, P, T>;
  return check_epilogue_tensor(kernel, e.name, a.*e.data, a.*e.ld, a.*e.batch_stride, a.m, a.n, a.batch,
                               /*optional=*/!Self::kWritten, /*written=*/Self::kWritten, e.col_major);
}
template <class A, class P, class T> const char* check(const Vector<A, P, T>& e, const char* kernel, const A& a) {
  return check_vector_input(kernel, e.name, a.*e.data, a.*e.batch_stride, a.batch);
}
template <class A, class P, class T> const char* check(const Scalar<A, P, T>& e, const char* kernel, const A& a) {
  return check_device_pointer(kernel, e.name, a.*e.data);
}
template <class A, class P> const char* check(const Amax<A, P>&, const char*, const A&) { return nullptr; }
template <class A, class P> const char* check(const Param<A, P>&, const char*, const A&) { return nullptr; }

// The bytes a written tensor's batches span ([begin, end); empty for everything else), so that two
// outputs writing the same memory are refused like overlapping batches of one.
struct ByteRange {
  uintptr_t begin = 0, end = 0;
  const char* name = nullptr;
};
template <class E, class A> ByteRange written_range(const E&, const A&) { return {}; }
template <class A, class P, class T> ByteRange written_range(const Tensor<A, P, T>& e, const A& a) {
  if (!Tensor<A, P, T>::kWritten || a.*e.data == nullptr || a.m == 0 || a.n == 0) return {};
  const int64_t extent = (e.col_major ? row_major_extent(a.n, a.m, a.*e.ld) : row_major_extent(a.m, a.n, a.*e.ld)) +
                         (int64_t)(a.batch - 1) * a.*e.batch_stride;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(a.*e.data);
  return {begin, begin + (uintptr_t)extent * sizeof(T), e.name};
}

// Zeroes an amax output before the launch (the kernel folds its maxima into it).
template <class E, class A> cudaError_t prepare_output(const E&, const A&, cudaStream_t) { return cudaSuccess; }
template <class A, class P> cudaError_t prepare_output(const Amax<A, P>& e, const A& a, cudaStream_t stream) {
  return cudaMemsetAsync(a.*e.data, 0, sizeof(float), stream);
}

template <class E> struct is_mainloop : std::false_type {};
template <class A, class T> struct is_mainloop<Mainloop<A, T>> : std::true_type {};

}  // namespace arg

namespace detail {
template <class A, class = void>
struct has_split_k : std::false_type {};
template <class A>
struct has_split_k<A, std::void_t<decltype(std::declval<A&>().split_k)>> : std::true_type {};

// What the argument table alone gives every kind of kernel host (GemmHost, ConvHost): the C ABI
// unpacking of kdl_arg[] and kdl_kernel_info.
template <class K>
struct ArgTable {
  using Arguments = typename K::Arguments;
  using Table = std::remove_cv_t<decltype(K::kArgs)>;
  static constexpr int kNumArgs = (int)std::tuple_size<Table>::value;

  // kdl_arg[] (nargs and args already checked) -> the Arguments members.
  static void unpack(const kdl_arg* args, Arguments& a) { unpack_each(args, a, std::make_index_sequence<(size_t)kNumArgs>{}); }

  // kdl_kernel_info, built from the argument table once (thread-safe static initialisation).
  static const kdl_kernel_info* info() {
    static const InfoTable* table = [] {
      static InfoTable t;
      const Arguments defaults{};
      fill_info(t, defaults, std::make_index_sequence<(size_t)kNumArgs>{});
      t.info = kdl_kernel_info{KDL_ABI_VERSION, K::kName, K::kOp, K::kTarget.arch, kNumArgs, t.names,
                               t.kinds,         t.dtypes, t.broadcasts, t.defaults};
      return &t;
    }();
    return &table->info;
  }

 private:
  struct InfoTable {
    const char* names[kNumArgs];
    int32_t kinds[kNumArgs];
    const char* dtypes[kNumArgs];
    const char* broadcasts[kNumArgs];
    double defaults[kNumArgs];
    kdl_kernel_info info;
  };
  template <size_t... I>
  static void unpack_each(const kdl_arg* args, Arguments& a, std::index_sequence<I...>) {
    (arg::unpack(std::get<I>(K::kArgs), args[I], a), ...);
  }
  template <size_t... I>
  static void fill_info(InfoTable& t, const Arguments& defaults, std::index_sequence<I...>) {
    ((t.names[I] = std::get<I>(K::kArgs).name, t.kinds[I] = arg::abi_kind(std::get<I>(K::kArgs)),
      t.dtypes[I] = arg::dtype_word(std::get<I>(K::kArgs)), t.broadcasts[I] = arg::broadcast_word(std::get<I>(K::kArgs)),
      t.defaults[I] = arg::default_value(std::get<I>(K::kArgs), defaults)),
     ...);
  }
};

// Two written tensors must not share memory (their stores would race): the first pair of `ranges`
// (empty ones skipped) that overlaps, as a message, or nullptr.
inline const char* overlap_message(const char* kernel, const arg::ByteRange* ranges, int count) {
  for (int i = 0; i < count; ++i)
    for (int j = i + 1; j < count; ++j)
      if (ranges[i].name && ranges[j].name && ranges[i].begin < ranges[j].end && ranges[j].begin < ranges[i].end)
        return error_message("%s: %s and %s overlap in memory; written outputs must not share elements", kernel,
                             ranges[i].name, ranges[j].name);
  return nullptr;
}
}  // namespace detail

// ---- the host side of one kernel -----------------------------------------------------------------

template <class K>
struct GemmHost {
  using Arguments = typename K::Arguments;
  using Gemm = typename K::Gemm;
  using Params = typename K::Epilogue::Params;
  using Table = std::remove_cv_t<decltype(K::kArgs)>;
  static constexpr int kNumArgs = (int)std::tuple_size<Table>::value;
  static constexpr bool kHasSplitK = detail::has_split_k<Arguments>::value;
  // B follows A, or A's block scales.
  static constexpr size_t kIndexB = arg::is_mainloop<std::tuple_element_t<1, Table>>::value ? 1 : 2;
  static_assert(kNumArgs >= 2 && arg::is_mainloop<std::tuple_element_t<0, Table>>::value &&
                    arg::is_mainloop<std::tuple_element_t<kIndexB, Table>>::value,
                "the argument table starts with the mainloop operands A and B (each followed by its block scales, "
                "if any)");

  static int split_k_of(const Arguments& a) {
    if constexpr (kHasSplitK) return a.split_k;
    else return 1;
  }
  static constexpr int kMaxSplit = [] {
    if constexpr (kHasSplitK) return K::kMaxSplitK;
    else return 1;
  }();

  static GemmProblem problem_of(const Arguments& a) {
    const auto& A = std::get<0>(K::kArgs);
    const auto& B = std::get<kIndexB>(K::kArgs);
    GemmProblem p{a.m, a.n, a.k, a.batch, a.*A.data, a.*A.ld, a.*A.batch_stride,
                  a.*B.data, a.*B.ld, a.*B.batch_stride, split_k_of(a)};
    std::apply([&](const auto&... e) { (arg::to_problem(e, a, p), ...); }, K::kArgs);
    return p;
  }

  // The problem as the kernel runs it: split_k 0 (the kernel chooses) resolved for the current device
  // (kdl/split_k.h); run() and workspace_size() agree on it.
  static GemmProblem problem_to_run(const Arguments& a) {
    GemmProblem p = problem_of(a);
    if constexpr (kHasSplitK)
      if (p.split_k == 0) p.split_k = Gemm::split_k_for(p, kMaxSplit);
    return p;
  }

  static Params params_of(const Arguments& a) {
    Params p{};
    std::apply([&](const auto&... e) { (arg::to_params(e, a, p), ...); }, K::kArgs);
    return p;
  }

  // The argument checks that need no device, in the order they are reported (nullptr: fine).
  static const char* check_arguments(const Arguments& a) {
    if (a.m < 0 || a.n < 0 || a.k < 0)
      return error_message("%s: negative problem size (m=%d, n=%d, k=%d)", K::kName, a.m, a.n, a.k);
    if (a.batch < 1) return error_message("%s: batch (%d) must be at least 1", K::kName, a.batch);
    if constexpr (kHasSplitK) {
      if (a.split_k < 0 || a.split_k > K::kMaxSplitK)
        return error_message("%s: split_k (%d) must be in 0..%d (split_k = serial(%d) in the spec; 0: the kernel chooses)",
                             K::kName, a.split_k, K::kMaxSplitK, K::kMaxSplitK);
    }
    const char* err = nullptr;
    std::apply([&](const auto&... e) { ((err = err ? err : arg::check_always(e, K::kName, a)), ...); }, K::kArgs);
    if (err) return err;
    if (a.m > 0 && a.n > 0) {
      std::apply([&](const auto&... e) { ((err = err ? err : arg::check(e, K::kName, a)), ...); }, K::kArgs);
      if (err) return err;
    }
    GemmProblem checked = problem_of(a);
    if (checked.split_k == 0) checked.split_k = 1;  // what the kernel chooses is always runnable
    if (const char* e = Gemm::can_implement(checked)) return error_message("%s: %s", K::kName, e);
    return a.m > 0 && a.n > 0 ? check_outputs_disjoint(a) : nullptr;
  }

  // NAME.h's can_implement: the arguments, then the current device.
  static const char* can_implement(const Arguments& a) {
    if (const char* e = check_arguments(a)) return e;
    if (const char* e = check_device_arch(K::kName, K::kTarget.arch, K::kTarget.min_cc, K::kTarget.exact)) return e;
    return check_device_smem(K::kName, Gemm::kMinSmemBytes);
  }

  static size_t workspace_size(const Arguments& a) { return Gemm::workspace_size(problem_to_run(a)); }

  static cudaError_t run(const Arguments& a, void* workspace, cudaStream_t stream) {
    if (can_implement(a) != nullptr) return cudaErrorInvalidValue;
    const GemmProblem problem = problem_to_run(a);
    // Split-K needs its workspace; with split_k = 1 a workspace is optional (GemmSm90 uses one, when
    // given, for its stream-K tail; without one it runs the last wave whole).
    if (problem.split_k > 1 && Gemm::workspace_size(problem) > 0 && workspace == nullptr) return cudaErrorInvalidValue;
    cudaError_t err = cudaSuccess;
    std::apply([&](const auto&... e) { ((err = err != cudaSuccess ? err : arg::prepare_output(e, a, stream)), ...); },
               K::kArgs);
    if (err != cudaSuccess) return err;
    return Gemm::run(problem, params_of(a), workspace, stream);
  }

  // ---- the C ABI (kdl/abi.h) ----

  // kdl_gemm_shape + kdl_arg[] -> Arguments; nullptr or what is wrong.
  static const char* unpack(const kdl_gemm_shape* s, const kdl_arg* args, int32_t nargs, Arguments& a) {
    if (const char* e = check_abi_shape(K::kName, s)) return e;
    if (nargs != kNumArgs)
      return error_message("%s: %d arguments given, the kernel takes %d", K::kName, (int)nargs, kNumArgs);
    if (args == nullptr) return error_message("%s: args is null", K::kName);
    a.m = (int)s->m;
    a.n = (int)s->n;
    a.k = (int)s->k;
    a.batch = (int)s->batch;
    if constexpr (kHasSplitK) a.split_k = s->split_k;
    else if (s->split_k != 1 && s->split_k != 0)
      return error_message("%s: split_k (%d) must be 1 (or 0); the kernel has no split-K", K::kName, (int)s->split_k);
    detail::ArgTable<K>::unpack(args, a);
    return nullptr;
  }

  static const char* abi_can_implement(const kdl_gemm_shape* shape, const kdl_arg* args, int32_t nargs) {
    Arguments a;
    if (const char* e = unpack(shape, args, nargs, a)) return e;
    return can_implement(a);
  }
  static size_t abi_workspace_size(const kdl_gemm_shape* shape) {
    if (check_abi_shape(K::kName, shape) != nullptr) return 0;
    Arguments a;
    a.m = (int)shape->m;
    a.n = (int)shape->n;
    a.k = (int)shape->k;
    a.batch = (int)shape->batch;
    if constexpr (kHasSplitK) a.split_k = shape->split_k;
    return workspace_size(a);
  }
  static int abi_run(const kdl_gemm_shape* shape, const kdl_arg* args, int32_t nargs, void* workspace,
                     size_t workspace_bytes, void* stream) {
    Arguments a;
    if (unpack(shape, args, nargs, a) != nullptr || can_implement(a) != nullptr) return KDL_ERR_INVALID;
    if (workspace_bytes < workspace_size(a)) {
      if (problem_to_run(a).split_k > 1) return KDL_ERR_INVALID;
      workspace = nullptr;  // too small for the optional stream-K tail (split_k = 1): run without it
    }
    const cudaError_t e = run(a, workspace, static_cast<cudaStream_t>(stream));
    return e == cudaSuccess ? KDL_OK : KDL_ERR_CUDA + (int)e;
  }

  static const kdl_kernel_info* abi_info() { return detail::ArgTable<K>::info(); }

 private:
  // Two written tensors (D, extra outputs) must not share memory: their stores would race.
  // Called after each one's own checks (ld, batch strides), so the ranges are well-formed.
  static const char* check_outputs_disjoint(const Arguments& a) {
    arg::ByteRange ranges[kNumArgs];
    int n = 0;
    std::apply([&](const auto&... e) { ((ranges[n] = arg::written_range(e, a), n += ranges[n].name != nullptr), ...); },
               K::kArgs);
    return detail::overlap_message(K::kName, ranges, n);
  }
};

}  // namespace kdl
