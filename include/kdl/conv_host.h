// kdl/conv_host.h -- the host side of every convolution kernel kdlc emits, written once (the GEMM's is
// kdl/gemm_host.h, whose argument table this reuses).
//
// An emitted conv NAME.cu holds its Epilogue functor and a description of the kernel:
//
//   struct Kernel {
//     using Arguments = ::kdl_kernels::NAME::Arguments;
//     using Epilogue = ...;  using Params = Epilogue::Params;
//     using Conv = ::kdl::Conv2dSm80<::kdl::ConvKind::Fprop, ...>;   // the device template instance
//     static constexpr const char* kName = "NAME";
//     static constexpr const char* kOp = "conv2d_fprop";
//     static constexpr ::kdl::KernelTarget kTarget = {"sm80", 80, false};
//     static constexpr int kMaxSplitK = 1;                            // serial(N): N (Arguments has split_k)
//     static constexpr auto kArgs = ::std::make_tuple(
//         ::kdl::arg::conv_input("X", ...), ::kdl::arg::conv_input("W", ...),   // the GEMM's A and B
//         [::kdl::arg::tensor("residual", ...),] ::kdl::arg::tensor("Y", ...), ... the epilogue's entries);
//   };
//
// ConvHost<Kernel> is the rest: NAME.h's can_implement / workspace_size / run and the extern "C" entry
// points (kdl/abi.h, with kdl_conv2d_shape). It derives p and q, fills the default strides (0: packed),
// checks the arguments, then builds the Conv2dProblem and the Epilogue::Params.
//
// Strides (kdl/conv_problem.h): an activation tensor's `ld` is its pixel stride, its `batch_stride` its
// image stride; a filter's `ld` is its tap stride, its `batch_stride` its filter stride. The epilogue's
// tensors are the output's GEMM view (conv_epilogue_extent): pixels x channels per image for fprop and
// dgrad; for wgrad the filters' rows k x r*s*c, so a wgrad output (dW, extra outputs, residual) is given
// as a filter and the host hands the epilogue ld = its filter stride (its taps must be packed).
//
// can_implement checks in a fixed order: sizes, strides, dilations, padding, p / q and split_k by
// name; then the template's own checks (Conv::can_implement: filter and stride fixed by the spec, the
// padded input against the dilated filter, 32-bit indexing, the mainloop tensors' pointers and
// alignment); then the epilogue's tensors, vectors and scalars; then that outputs are disjoint. All of
// that is pure (a CPU test sees every message); the device (arch, shared memory) comes last.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kdl/abi.h"
#include "kdl/conv_problem.h"
#include "kdl/gemm_host.h"
#include "kdl/runtime.h"

namespace kdl {

namespace detail {

// The shape of one conv tensor: `rows` x `cols` pixels (taps) of `channels` each, `images` of them.
struct ConvTensorShape {
  int64_t rows, cols, channels;
  bool filter;  // ld is a tap stride, batch_stride a filter stride
};

// ld 0 -> the channels, batch_stride 0 -> the pixels (taps) * ld: packed.
inline void fill_packed_strides(const ConvTensorShape& t, int64_t& ld, int64_t& batch_stride) {
  if (ld == 0) ld = t.channels;
  if (batch_stride == 0) batch_stride = t.rows * t.cols * ld;
}

}  // namespace detail

template <class K>
struct ConvHost {
  using Arguments = typename K::Arguments;
  using Conv = typename K::Conv;
  using Params = typename K::Epilogue::Params;
  using Table = std::remove_cv_t<decltype(K::kArgs)>;
  static constexpr int kNumArgs = (int)std::tuple_size<Table>::value;
  static constexpr ConvKind kKind = Conv::kKind;
  static constexpr bool kHasSplitK = detail::has_split_k<Arguments>::value;

  static int split_k_of(const Arguments& a) {
    if constexpr (kHasSplitK) return a.split_k;
    else return 1;
  }
  static constexpr int kMaxSplit = [] {
    if constexpr (kHasSplitK) return K::kMaxSplitK;
    else return 1;
  }();

  // Y's spatial size for these sizes, or 0 where the padded input is smaller than the dilated filter
  // (Conv::can_implement says so) or a stride or dilation is not positive (checked first).
  static int derived_extent(int in, int pad, int dil, int f, int stride) {
    if (stride < 1 || dil < 1 || f < 1 || in < 1 || pad < 0) return 0;
    const int64_t span = (int64_t)dil * (f - 1) + 1, padded = (int64_t)in + 2 * (int64_t)pad;
    if (padded < span) return 0;
    const int64_t out = (padded - span) / stride + 1;
    return out > 0x7fffffff ? 0 : (int)out;
  }

  // The tensor shapes of the op's X, W and Y (the epilogue's tensors are shaped like the output).
  static detail::ConvTensorShape shape_of(const Arguments& a, char tensor) {
    switch (tensor) {
      case 'X': return {a.h, a.w, a.c, false};
      case 'Y': return {a.p, a.q, a.k, false};
      default: return {a.r, a.s, a.c, true};
    }
  }
  static char output_tensor() { return kKind == ConvKind::Fprop ? 'Y' : kKind == ConvKind::Dgrad ? 'X' : 'W'; }

  // The arguments with p, q derived (where 0) and every 0 stride filled (packed).
  static Arguments resolved(const Arguments& given) {
    Arguments a = given;
    if (a.p == 0) a.p = derived_extent(a.h, a.pad_h, a.dilation_h, a.r, a.stride_h);
    if (a.q == 0) a.q = derived_extent(a.w, a.pad_w, a.dilation_w, a.s, a.stride_w);
    std::apply([&](const auto&... e) { (fill_strides(e, a), ...); }, K::kArgs);
    return a;
  }

  static Conv2dProblem problem_of(const Arguments& a) {
    const auto& A = std::get<0>(K::kArgs);
    const auto& B = std::get<1>(K::kArgs);
    return Conv2dProblem{a.n, a.h, a.w, a.c, a.k, a.r, a.s, a.p, a.q, a.pad_h, a.pad_w, a.stride_h, a.stride_w,
                         a.dilation_h, a.dilation_w, a.*A.data, a.*A.ld, a.*A.batch_stride, a.*B.data, a.*B.ld,
                         a.*B.batch_stride, split_k_of(a)};
  }

  // The problem as the kernel runs it (of resolved arguments): split_k 0 (the kernel chooses) resolved for
  // the current device (kdl/split_k.h); run() and workspace_size() agree on it.
  static Conv2dProblem problem_to_run(const Arguments& a) {
    Conv2dProblem p = problem_of(a);
    if constexpr (kHasSplitK)
      if (p.split_k == 0) p.split_k = Conv::split_k_for(p, kMaxSplit);
    return p;
  }

  static Params params_of(const Arguments& a) {
    Params p{};
    std::apply([&](const auto&... e) { (to_params(e, a, p), ...); }, K::kArgs);
    return p;
  }

  // The argument checks that need no device, in the order they are reported (nullptr: fine), on the
  // arguments as given (p, q, strides 0 or not).
  static const char* check_arguments(const Arguments& given) {
    if (const char* e = check_sizes(given)) return e;
    const Arguments a = resolved(given);
    if (const char* e = check_output_size(given, a)) return e;
    if constexpr (kHasSplitK) {
      if (a.split_k < 0 || a.split_k > K::kMaxSplitK)
        return error_message("%s: split_k (%d) must be in 0..%d (split_k = serial(%d) in the spec; 0: the kernel chooses)",
                             K::kName, a.split_k, K::kMaxSplitK, K::kMaxSplitK);
    }
    const char* err = nullptr;
    std::apply([&](const auto&... e) { ((err = err ? err : arg::check_always(e, K::kName, a)), ...); }, K::kArgs);
    if (err) return err;
    Conv2dProblem checked = problem_of(a);
    if (checked.split_k == 0) checked.split_k = 1;  // what the kernel chooses is always runnable
    if (const char* e = Conv::can_implement(checked)) {
      const char* prefix = "kdl conv: ";  // the template's; the kernel's name says it here
      return error_message("%s: %s", K::kName, std::strncmp(e, prefix, std::strlen(prefix)) ? e : e + std::strlen(prefix));
    }
    std::apply([&](const auto&... e) { ((err = err ? err : check(e, a)), ...); }, K::kArgs);
    if (err) return err;
    return check_outputs_disjoint(a);
  }

  // NAME.h's can_implement: the arguments, then the current device.
  static const char* can_implement(const Arguments& a) {
    if (const char* e = check_arguments(a)) return e;
    if (const char* e = check_device_arch(K::kName, K::kTarget.arch, K::kTarget.min_cc, K::kTarget.exact)) return e;
    return check_device_smem(K::kName, Conv::kMinSmemBytes);
  }

  // 0 for arguments whose output size cannot be derived (can_implement refuses them).
  static size_t workspace_size(const Arguments& given) {
    const Arguments a = resolved(given);
    if (a.p < 1 || a.q < 1 || split_k_of(a) < 0) return 0;
    return Conv::workspace_size(problem_to_run(a));
  }

  static cudaError_t run(const Arguments& given, void* workspace, cudaStream_t stream) {
    if (can_implement(given) != nullptr) return cudaErrorInvalidValue;
    const Arguments a = resolved(given);
    Conv2dProblem problem = problem_to_run(a);
    problem.images_packed = images_packed(a) ? 1 : 0;
    if (problem.split_k > 1 && workspace == nullptr) return cudaErrorInvalidValue;
    cudaError_t err = cudaSuccess;
    std::apply([&](const auto&... e) { ((err = err != cudaSuccess ? err : arg::prepare_output(e, a, stream)), ...); },
               K::kArgs);
    if (err != cudaSuccess) return err;
    return Conv::run(problem, params_of(a), workspace, stream);
  }

  // A kernel with two mainloops (kdl::Conv2dSm90Fprop with the patch mainloop): the one run() takes for the
  // arguments ("patch" or "im2col"), or nullptr where can_implement refuses them.
  static const char* path(const Arguments& given) {
    if (can_implement(given) != nullptr) return nullptr;
    const Arguments a = resolved(given);
    Conv2dProblem problem = problem_to_run(a);
    problem.images_packed = images_packed(a) ? 1 : 0;
    return Conv::mainloop(problem, params_of(a));
  }

  // ---- the C ABI (kdl/abi.h) ----

  // kdl_conv2d_shape -> the Arguments' sizes; stride and dilation 0 read as 1.
  static const char* unpack_shape(const kdl_conv2d_shape* s, Arguments& a) {
    if (const char* e = check_abi_conv_shape(K::kName, s)) return e;
    a.n = (int)s->n, a.h = (int)s->h, a.w = (int)s->w, a.c = (int)s->c, a.k = (int)s->k;
    a.r = (int)s->r, a.s = (int)s->s, a.p = (int)s->p, a.q = (int)s->q;
    a.pad_h = s->pad_h, a.pad_w = s->pad_w;
    a.stride_h = s->stride_h == 0 ? 1 : s->stride_h, a.stride_w = s->stride_w == 0 ? 1 : s->stride_w;
    a.dilation_h = s->dilation_h == 0 ? 1 : s->dilation_h, a.dilation_w = s->dilation_w == 0 ? 1 : s->dilation_w;
    if constexpr (kHasSplitK) a.split_k = s->split_k;
    else if (s->split_k != 1 && s->split_k != 0)
      return error_message("%s: split_k (%d) must be 1 (or 0); the kernel has no split-K", K::kName, (int)s->split_k);
    return nullptr;
  }

  static const char* unpack(const kdl_conv2d_shape* s, const kdl_arg* args, int32_t nargs, Arguments& a) {
    if (const char* e = unpack_shape(s, a)) return e;
    if (nargs != kNumArgs)
      return error_message("%s: %d arguments given, the kernel takes %d", K::kName, (int)nargs, kNumArgs);
    if (args == nullptr) return error_message("%s: args is null", K::kName);
    detail::ArgTable<K>::unpack(args, a);
    return nullptr;
  }

  static const char* abi_can_implement(const kdl_conv2d_shape* shape, const kdl_arg* args, int32_t nargs) {
    Arguments a;
    if (const char* e = unpack(shape, args, nargs, a)) return e;
    return can_implement(a);
  }
  static size_t abi_workspace_size(const kdl_conv2d_shape* shape) {
    Arguments a;
    if (unpack_shape(shape, a) != nullptr) return 0;
    return workspace_size(a);
  }
  static int abi_run(const kdl_conv2d_shape* shape, const kdl_arg* args, int32_t nargs, void* workspace,
                     size_t workspace_bytes, void* stream) {
    Arguments a;
    if (unpack(shape, args, nargs, a) != nullptr || can_implement(a) != nullptr) return KDL_ERR_INVALID;
    if (workspace_bytes < workspace_size(a)) return KDL_ERR_INVALID;
    const cudaError_t e = run(a, workspace, static_cast<cudaStream_t>(stream));
    return e == cudaSuccess ? KDL_OK : KDL_ERR_CUDA + (int)e;
  }

  static const char* abi_path(const kdl_conv2d_shape* shape, const kdl_arg* args, int32_t nargs) {
    Arguments a;
    if (unpack(shape, args, nargs, a) != nullptr) return nullptr;
    return path(a);
  }

  static const kdl_kernel_info* abi_info() { return detail::ArgTable<K>::info(); }

 private:
  // Sizes, strides, dilations and padding, each by name (the template repeats some, without names).
  static const char* check_sizes(const Arguments& a) {
    const int sizes[] = {a.n, a.h, a.w, a.c, a.k, a.r, a.s};
    const char* names[] = {"n", "h", "w", "c", "k", "r", "s"};
    for (int i = 0; i < 7; ++i)
      if (sizes[i] < 1) return error_message("%s: %s (%d) must be at least 1", K::kName, names[i], sizes[i]);
    const int steps[] = {a.stride_h, a.stride_w, a.dilation_h, a.dilation_w};
    const char* stepNames[] = {"stride_h", "stride_w", "dilation_h", "dilation_w"};
    for (int i = 0; i < 4; ++i)
      if (steps[i] < 1) return error_message("%s: %s (%d) must be at least 1", K::kName, stepNames[i], steps[i]);
    if (a.pad_h < 0) return error_message("%s: pad_h (%d) must not be negative", K::kName, a.pad_h);
    if (a.pad_w < 0) return error_message("%s: pad_w (%d) must not be negative", K::kName, a.pad_w);
    if (a.p < 0) return error_message("%s: p (%d) must not be negative (0: derived)", K::kName, a.p);
    if (a.q < 0) return error_message("%s: q (%d) must not be negative (0: derived)", K::kName, a.q);
    return nullptr;
  }

  // A p or q given (not 0) must be the derived size; a size that cannot be derived is the template's
  // to explain (the padded input against the dilated filter).
  static const char* check_output_size(const Arguments& given, const Arguments& a) {
    const int P = derived_extent(a.h, a.pad_h, a.dilation_h, a.r, a.stride_h);
    const int Q = derived_extent(a.w, a.pad_w, a.dilation_w, a.s, a.stride_w);
    if (given.p != 0 && P > 0 && given.p != P)
      return error_message("%s: p (%d) must be %d, Y's height for h=%d, r=%d, pad_h=%d, stride_h=%d, dilation_h=%d (0: derived)",
                           K::kName, given.p, P, a.h, a.r, a.pad_h, a.stride_h, a.dilation_h);
    if (given.q != 0 && Q > 0 && given.q != Q)
      return error_message("%s: q (%d) must be %d, Y's width for w=%d, s=%d, pad_w=%d, stride_w=%d, dilation_w=%d (0: derived)",
                           K::kName, given.q, Q, a.w, a.s, a.pad_w, a.stride_w, a.dilation_w);
    return nullptr;
  }

  // ---- per entry of the argument table ----

  template <class E>
  static void fill_strides(const E&, Arguments&) {}
  template <class T>
  static void fill_strides(const arg::ConvInput<Arguments, T>& e, Arguments& a) {
    detail::fill_packed_strides(shape_of(a, e.name[0]), a.*e.ld, a.*e.batch_stride);
  }
  template <class T>
  static void fill_strides(const arg::Tensor<Arguments, Params, T>& e, Arguments& a) {
    detail::fill_packed_strides(shape_of(a, output_tensor()), a.*e.ld, a.*e.batch_stride);
  }

  // An epilogue tensor's GEMM view (conv_epilogue_extent): ld and batch stride as the epilogue reads them.
  struct EpilogueView {
    int64_t ld, batch_stride;
  };
  template <class T>
  static EpilogueView view_of(const arg::Tensor<Arguments, Params, T>& e, const Arguments& a) {
    if (kKind == ConvKind::Wgrad) return {a.*e.batch_stride, 0};  // rows k, a filter stride apart
    return {a.*e.ld, a.*e.batch_stride};
  }
  static ConvEpilogueExtent extent_of(const Arguments& a) { return conv_epilogue_extent(kKind, problem_of(a)); }

  // Whether the epilogue's tensors hold their images back to back and its vectors are shared (Conv2dProblem::
  // images_packed): then the n images read as one of n * pixels rows.
  template <class E>
  static bool packed_images(const E&, const Arguments&) {
    return true;  // scalars, params, amax, the mainloop tensors
  }
  template <class T>
  static bool packed_images(const arg::Tensor<Arguments, Params, T>& e, const Arguments& a) {
    const EpilogueView v = view_of(e, a);
    return a.*e.data == nullptr || v.batch_stride == (int64_t)extent_of(a).m * v.ld;
  }
  template <class T>
  static bool packed_images(const arg::Vector<Arguments, Params, T>& e, const Arguments& a) {
    return a.*e.data == nullptr || a.*e.batch_stride == 0;
  }
  static bool images_packed(const Arguments& a) {
    bool all = true;
    std::apply([&](const auto&... e) { ((all = all && packed_images(e, a)), ...); }, K::kArgs);
    return all;
  }

  template <class E>
  static void to_params(const E& e, const Arguments& a, Params& p) {
    arg::to_params(e, a, p);
  }
  template <class T>
  static void to_params(const arg::ConvInput<Arguments, T>&, const Arguments&, Params&) {}
  template <class T>
  static void to_params(const arg::Tensor<Arguments, Params, T>& e, const Arguments& a, Params& p) {
    const EpilogueView v = view_of(e, a);
    p.*e.p_data = a.*e.data;
    p.*e.p_ld = v.ld;
    p.*e.p_batch_stride = v.batch_stride;
  }

  // What the epilogue reads and writes (the mainloop tensors are Conv::can_implement's).
  template <class E>
  static const char* check(const E& e, const Arguments& a) {
    return arg::check(e, K::kName, a);  // scalars, amax, params: shape-free
  }
  template <class T>
  static const char* check(const arg::ConvInput<Arguments, T>&, const Arguments&) {
    return nullptr;
  }
  template <class T>
  static const char* check(const arg::Tensor<Arguments, Params, T>& e, const Arguments& a) {
    using Self = arg::Tensor<Arguments, Params, T>;
    if (kKind == ConvKind::Wgrad && a.*e.data != nullptr && a.*e.ld != a.c)
      return error_message("%s: %s's taps must be packed: its tap stride (%lld) must be c (%d)", K::kName, e.name,
                           (long long)(a.*e.ld), a.c);
    if (const char* err = check_strides(e.name, a.*e.data != nullptr, Self::kWritten, a.*e.ld, a.*e.batch_stride, a))
      return err;
    const ConvEpilogueExtent x = extent_of(a);
    const EpilogueView v = view_of(e, a);
    return check_epilogue_tensor(K::kName, e.name, a.*e.data, v.ld, v.batch_stride, x.m, x.n, x.batch,
                                 /*optional=*/!Self::kWritten, /*written=*/Self::kWritten);
  }
  // An epilogue tensor's strides in the conv's words (check_epilogue_tensor then says the rest in the GEMM
  // view's): the pixel stride holds the channels; a written tensor's images (filters) do not overlap.
  static const char* check_strides(const char* name, bool given, bool written, int64_t ld, int64_t batch_stride,
                                   const Arguments& a) {
    if (!given) return nullptr;
    const detail::ConvTensorShape t = shape_of(a, output_tensor());
    const char* unit = t.filter ? "tap" : "pixel";
    if (ld < t.channels)
      return error_message("%s: the %s stride of %s (%lld) must be at least its channels (%lld)", K::kName, unit, name,
                           (long long)ld, (long long)t.channels);
    const int64_t images = t.filter ? a.k : a.n, span = t.rows * t.cols * ld;
    if (written && images > 1 && batch_stride < span)
      return error_message("%s: the %s stride of %s (%lld) must be at least %lld (%lld %ss x %lld): its %s would "
                           "overwrite each other",
                           K::kName, t.filter ? "filter" : "image", name, (long long)batch_stride, (long long)span,
                           (long long)(t.rows * t.cols), unit, (long long)ld, t.filter ? "filters" : "images");
    return nullptr;
  }

  template <class T>
  static const char* check(const arg::Vector<Arguments, Params, T>& e, const Arguments& a) {
    return check_vector_input(K::kName, e.name, a.*e.data, a.*e.batch_stride, extent_of(a).batch);
  }

  template <class E>
  static arg::ByteRange written_range(const E&, const Arguments&) {
    return {};
  }
  template <class T>
  static arg::ByteRange written_range(const arg::Tensor<Arguments, Params, T>& e, const Arguments& a) {
    if (!arg::Tensor<Arguments, Params, T>::kWritten || a.*e.data == nullptr) return {};
    const ConvEpilogueExtent x = extent_of(a);
    const EpilogueView v = view_of(e, a);
    const int64_t extent = row_major_extent(x.m, x.n, v.ld) + (int64_t)(x.batch - 1) * v.batch_stride;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(a.*e.data);
    return {begin, begin + (uintptr_t)extent * sizeof(T), e.name};
  }

  // Two written tensors (the output, extra outputs) must not share memory: their stores would race.
  static const char* check_outputs_disjoint(const Arguments& a) {
    arg::ByteRange ranges[kNumArgs];
    int n = 0;
    std::apply([&](const auto&... e) { ((ranges[n] = written_range(e, a), n += ranges[n].name != nullptr), ...); },
               K::kArgs);
    return detail::overlap_message(K::kName, ranges, n);
  }
};

}  // namespace kdl
