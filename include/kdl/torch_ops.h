// kdl/torch_ops.h -- what every op of a PyTorch extension written by `kdlc emit --torch` shares, so
// that each generated op is a short list of its arguments (docs/torch.md):
//
//   Problem p("kdl_spec.kernel");       // every message starts with "kdl_spec.kernel: "
//   p.matrix_a("A", A, at::kBFloat16, "bf16");   // device, dtype and rank, checked at once
//   p.matrix_b("B", B, at::kBFloat16, "bf16");
//   p.vector("bias", bias, at::kFloat, "f32", Broadcast::Col);
//   p.resolve();                        // m, n, k and the batch; every size checked against them
//   at::Tensor D = p.output(Layout::Row, at::kBFloat16);        // the op's output, in its layout
//   p.bind_matrix(A, Layout::Row, args.A, args.lda, args.batch_stride_A);  // ld, batch stride (or a copy)
//   p.launch(args, &can_implement, &workspace_size, &run);      // current stream, cached workspace
//
// Shapes are logical whatever the layout: A (m, k), B (k, n), C, D and extra outputs (m, n); a leading
// batch dimension makes them 3-D, and a 2-D one beside 3-D ones is shared by every batch (batch stride
// 0). A tensor is taken as it is when its strides fit its declared layout (row: the last stride is 1,
// the row stride >= the columns; col: the second-to-last stride is 1, the last >= the rows; a
// dimension of size 1 constrains nothing), otherwise a copy in that layout is made. Alignment is the
// kernel's can_implement's to check, never fixed by a copy.
//
// Errors are c10::Error (RuntimeError in Python), thrown through TORCH_CHECK, for devices, dtypes,
// ranks, sizes and what the kernel refuses; each starts with the op's name and names the argument.
// (Not c10::ValueError: thrown from an extension's inline code it crashed PyTorch 2.11 on the GPU
// machine, where c10::Error through TORCH_CHECK is caught and raised as RuntimeError.)
//
// Batches folded into M: when the batch is a stack of row-major rows (A and every m x n matrix 3-D,
// row-major, each batch right after the previous one's rows; B 2-D and shared; [row] inputs given per
// batch or not at all; no [col] input per batch; no block scales), the launch runs one GEMM of
// batch x m rows instead of `batch` GEMMs with a shared B (batch stride 0): F.linear's case, which
// the sm90a path's TMA could not take otherwise, and a larger M for the tile scheduler. Host C++17 (or newer), built against PyTorch's headers and CUDA's include directory.
#pragma once
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace kdl::torch_ops {

// ---- messages --------------------------------------------------------------------------------------
//
// cat(...) joins a message's pieces without std::ostream: c10::str's ostringstream, instantiated in an
// extension built with one libstdc++'s headers and run with another's (g++ 13 against PyTorch 2.11's
// process on the GPU machine), crashed in std::ostream::_M_insert<long> on the first number of a
// message. Numbers go through std::to_string, devices through Device::str(); TORCH_CHECK then gets one
// std::string, which it passes on as it is.
namespace detail {
inline void append(std::string& s, const char* x) { s += x ? x : "(null)"; }
inline void append(std::string& s, const std::string& x) { s += x; }
inline void append(std::string& s, char x) { s += x; }
inline void append(std::string& s, const c10::Device& d) { s += d.str(); }
template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, char> && !std::is_same_v<T, bool>, int> = 0>
inline void append(std::string& s, T x) { s += std::to_string(x); }
}  // namespace detail

template <class... Ts>
std::string cat(const Ts&... xs) {
  std::string s;
  (detail::append(s, xs), ...);
  return s;
}

// TORCH_CHECK (c10::Error: RuntimeError in Python) with a message built by cat(), only on failure.
#define KDL_TORCH_CHECK(cond, ...) TORCH_CHECK((cond), ::kdl::torch_ops::cat(__VA_ARGS__))

enum class Layout { Row, Col };
enum class Broadcast { Row, Col };  // a [row] vector has one value per row of D (length m), [col] per column (n)

// A dtype as Python spells it: "torch.bfloat16".
inline std::string dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Half: return "torch.float16";
    case c10::ScalarType::BFloat16: return "torch.bfloat16";
    case c10::ScalarType::Float: return "torch.float32";
    case c10::ScalarType::Double: return "torch.float64";
    case c10::ScalarType::Float8_e4m3fn: return "torch.float8_e4m3fn";
    case c10::ScalarType::Float8_e5m2: return "torch.float8_e5m2";
    case c10::ScalarType::Char: return "torch.int8";
    case c10::ScalarType::Byte: return "torch.uint8";
    case c10::ScalarType::Short: return "torch.int16";
    case c10::ScalarType::Int: return "torch.int32";
    case c10::ScalarType::Long: return "torch.int64";
    case c10::ScalarType::Bool: return "torch.bool";
    default: return std::string("torch.") + c10::toString(t);
  }
}

// "[3, 5]": a tensor's sizes as the messages show them.
inline std::string shape_text(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

// Does `t` (2-D, or 3-D with a batch first) have the strides of `layout` as it is?
inline bool fits_layout(const at::Tensor& t, Layout layout) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  if (layout == Layout::Row) return (cols <= 1 || t.stride(-1) == 1) && (rows <= 1 || t.stride(-2) >= cols);
  return (rows <= 1 || t.stride(-2) == 1) && (cols <= 1 || t.stride(-1) >= rows);
}

// The leading dimension of `t` in `layout` (which it fits): the stride between rows (row) or columns
// (col); where there is one line only, its stride is free, so at least the line's length.
inline int64_t leading_dimension(const at::Tensor& t, Layout layout) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const int64_t lines = layout == Layout::Row ? rows : cols, length = layout == Layout::Row ? cols : rows;
  const int64_t stride = layout == Layout::Row ? t.stride(-2) : t.stride(-1);
  if (lines > 1) return stride;
  return stride >= length && stride > 0 ? stride : (length > 0 ? length : 1);
}

// `t` in `layout`: itself when it fits, else a copy (row: contiguous; col: the transpose's contiguous copy,
// transposed back).
inline at::Tensor in_layout(const at::Tensor& t, Layout layout) {
  if (fits_layout(t, layout)) return t;
  if (layout == Layout::Row) return t.contiguous();
  return t.transpose(-1, -2).contiguous().transpose(-1, -2);
}

// The checks every op makes of each tensor argument as it comes: a tensor at all, the op's device (the first
// argument's, which must be CUDA or meta), the spec's dtype. `first` names the first argument once it is set.
inline void check_device_dtype(const char* op, const char*& first, at::TensorOptions& options, const char* name,
                               const at::Tensor& t, c10::ScalarType dtype, const char* spec_dtype) {
  KDL_TORCH_CHECK(t.defined(), op, ": ", name, " is not a tensor");
  if (!first) {
    KDL_TORCH_CHECK(t.is_cuda() || t.is_meta(), op, ": ", name, " must be a CUDA tensor, got one on ", t.device());
    options = t.options();
    first = name;
  } else {
    KDL_TORCH_CHECK(t.device() == options.device(), op, ": ", name, " must be on ", options.device(), " (", first,
                    "'s device), got ", t.device());
  }
  KDL_TORCH_CHECK(t.scalar_type() == dtype, op, ": ", name, " must be ", dtype_name(dtype), " (", spec_dtype,
                  " in the spec), got ", dtype_name(t.scalar_type()));
}

// A [] input: one element (0-D or a 1-element 1-D tensor).
inline void check_one_element(const char* op, const char* name, const at::Tensor& t) {
  KDL_TORCH_CHECK(t.dim() <= 1 && t.numel() == 1, op, ": ", name,
                  " must hold one element (a [] input: a 0-D or 1-element tensor), got ", shape_text(t));
}

// split_k of a `split_k = serial(max)` kernel (0: the kernel chooses, kdl/split_k.h).
inline void check_split_k(const char* op, int64_t slices, int max) {
  KDL_TORCH_CHECK(slices >= 0 && slices <= max, op, ": split_k (", slices, ") must be in 0..", max,
                  " (split_k = serial(", max, ") in the spec; 0: the kernel chooses)");
}

// The kernel's can_implement (its message, verbatim, after the op's name), a workspace from PyTorch's
// caching allocator (on `options`' device), and run() on the current stream of the current device (the
// caller's CUDAGuard). Nothing synchronises and nothing allocates outside PyTorch's allocator, so a CUDA
// graph can capture it.
template <class Args>
void launch_kernel(const char* op, const at::TensorOptions& options, const Args& a,
                   const char* (*can_implement)(const Args&), size_t (*workspace_size)(const Args&),
                   cudaError_t (*run)(const Args&, void*, cudaStream_t)) {
  if (const char* why = can_implement(a)) {
    KDL_TORCH_CHECK(false, op, ": ", std::string(why));
  }
  const size_t bytes = workspace_size(a);
  at::Tensor workspace;
  if (bytes > 0) workspace = at::empty({static_cast<int64_t>(bytes)}, options.dtype(c10::ScalarType::Byte));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  const cudaError_t err = run(a, bytes > 0 ? workspace.data_ptr() : nullptr, stream);
  KDL_TORCH_CHECK(err == cudaSuccess, op, ": the kernel failed to launch: ", cudaGetErrorString(err));
}

// One call of an op: its arguments' checks, the problem's sizes, and what the launch needs.
class Problem {
 public:
  explicit Problem(const char* op) : op_(op) {}
  const char* op() const { return op_; }

  // ---- the arguments, in the op's order: each checks its device, dtype and rank at once ----

  void matrix_a(const char* name, const at::Tensor& t, c10::ScalarType dtype, const char* spec_dtype) {
    add(name, t, Role::A, dtype, spec_dtype);
  }
  void matrix_b(const char* name, const at::Tensor& t, c10::ScalarType dtype, const char* spec_dtype) {
    add(name, t, Role::B, dtype, spec_dtype);
  }
  // C (an input) and every m x n tensor the op is given.
  void matrix_mn(const char* name, const at::Tensor& t, c10::ScalarType dtype, const char* spec_dtype) {
    add(name, t, Role::MN, dtype, spec_dtype);
  }
  // The f32 block scales of fp8 A (one per `block_m` rows and `block_k` of k: (ceil(m / block_m),
  // ceil(k / block_k))) and of fp8 B ((ceil(k / block_k), ceil(n / block_n))): A's and B's shape in blocks.
  void scales_a(const char* name, const at::Tensor& t, int block_m, int block_k) {
    add(name, t, Role::ScalesA, c10::ScalarType::Float, "f32", block_m, block_k);
  }
  void scales_b(const char* name, const at::Tensor& t, int block_k, int block_n) {
    add(name, t, Role::ScalesB, c10::ScalarType::Float, "f32", block_k, block_n);
  }
  // A [row] / [col] input: 1-D (shared by every batch) or 2-D (batch, length).
  void vector(const char* name, const at::Tensor& t, c10::ScalarType dtype, const char* spec_dtype, Broadcast b) {
    add(name, t, b == Broadcast::Row ? Role::RowVector : Role::ColVector, dtype, spec_dtype);
  }
  // A [] input: one element on the device.
  void scalar(const char* name, const at::Tensor& t, c10::ScalarType dtype, const char* spec_dtype) {
    add(name, t, Role::Scalar, dtype, spec_dtype);
  }

  // m, n, k and the batch from A and B; every other argument's sizes checked against them.
  void resolve() {
    const Arg* a = find(Role::A);
    const Arg* b = find(Role::B);
    KDL_TORCH_CHECK(a && b, op_, ": internal error: the op declares no A or B");
    m = a->t.size(-2);
    k = a->t.size(-1);
    n = b->t.size(-1);
    KDL_TORCH_CHECK(b->t.size(-2) == k, op_, ": ", b->name, " must be (k, n) with k = ", k, " (", a->name,
                      " is (m, k) = ", shape_text(a->t), "), got ", shape_text(b->t));
    const Arg* first3d = nullptr;
    for (const Arg& x : args_) {
      if (!is_matrix(x.role) || x.t.dim() != 3) continue;
      if (!first3d) {
        first3d = &x;
        batched = true;
        batch = x.t.size(0);
      }
      KDL_TORCH_CHECK(x.t.size(0) == batch, op_, ": ", x.name, " has a batch of ", x.t.size(0), " but ",
                        first3d->name, " has ", batch,
                        "; the 3-D arguments must agree (a 2-D one is shared by every batch)");
    }
    for (const Arg& x : args_) check_sizes(x);
    check_int("m", m);
    check_int("n", n);
    check_int("k", k);
    check_int("batch", batch);
  }

  // split_k of a `split_k = serial(max)` kernel (0: the kernel chooses, kdl/split_k.h).
  void split_k(int64_t slices, int max) const { check_split_k(op_, slices, max); }

  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool batched = false;  // some matrix argument is 3-D: the outputs are too

  // ---- outputs ----

  // An m x n output ((batch, m, n) when batched) in `layout`, on A's device.
  at::Tensor output(Layout layout, c10::ScalarType dtype) const {
    std::vector<int64_t> shape;
    if (batched) shape.push_back(batch);
    shape.push_back(layout == Layout::Row ? m : n);
    shape.push_back(layout == Layout::Row ? n : m);
    at::Tensor t = at::empty(shape, options_.dtype(dtype));
    return layout == Layout::Row ? t : t.transpose(-1, -2);
  }
  // An amax output: one f32 on A's device (the kernel zeroes it, then folds |.| of every batch into it).
  at::Tensor amax_output() const { return at::empty({}, options_.dtype(c10::ScalarType::Float)); }

  // ---- the kernel's Arguments (CUDA only) ----

  template <class Args>
  void sizes(Args& a) const {
    a.m = static_cast<int>(m);
    a.n = static_cast<int>(n);
    a.k = static_cast<int>(k);
    a.batch = static_cast<int>(batch);
  }

  // A matrix (2-D or 3-D) in `layout`: its pointer, leading dimension and batch stride (0 when it is
  // shared by the batches), copied into the layout when its strides do not fit (the copy lives as long
  // as this Problem). Outputs, allocated in their layout, are never copied.
  template <class T>
  void bind_matrix(const at::Tensor& t, Layout layout, T*& data, int64_t& ld, int64_t& batch_stride) {
    const at::Tensor u = keep(t, in_layout(t, layout));
    data = static_cast<T*>(u.data_ptr());
    ld = leading_dimension(u, layout);
    batch_stride = u.dim() == 3 && u.size(0) > 1 ? u.stride(0) : 0;
    note_fold(t, u, layout, ld);
  }
  template <class T>
  void bind_vector(const at::Tensor& t, T*& data, int64_t& batch_stride) {
    const at::Tensor u = keep(t, t.size(-1) <= 1 || t.stride(-1) == 1 ? t : t.contiguous());
    data = static_cast<T*>(u.data_ptr());
    batch_stride = u.dim() == 2 && u.size(0) > 1 ? u.stride(0) : 0;
    // A [row] input folds with the batch when it is given per batch and contiguous ((batch, m) is then
    // one row per folded row); a shared one would have to repeat. A [col] input folds when shared.
    const Arg* x = find_tensor(t);
    if (x && x->role == Role::RowVector) fold_ok_ = fold_ok_ && u.dim() == 2 && u.stride(0) == m;
    if (x && x->role == Role::ColVector) fold_ok_ = fold_ok_ && !(u.dim() == 2 && u.size(0) > 1);
  }
  template <class T>
  void bind_scalar(const at::Tensor& t, T*& data) const {
    data = static_cast<T*>(t.data_ptr());
  }

  // launch_kernel() with the batch folded into M where the bound arguments allow it.
  template <class Args>
  void launch(const Args& a, const char* (*can_implement)(const Args&), size_t (*workspace_size)(const Args&),
              cudaError_t (*run)(const Args&, void*, cudaStream_t)) const {
    Args b = a;
    if (folds()) {  // one GEMM of batch x m rows (see the top of this file)
      b.m = static_cast<int>(batch * m);
      b.batch = 1;
    }
    launch_kernel(op_, options_, b, can_implement, workspace_size, run);
  }

 private:
  enum class Role { A, B, MN, ScalesA, ScalesB, RowVector, ColVector, Scalar };
  struct Arg {
    const char* name;
    at::Tensor t;
    Role role;
    int block0, block1;  // block scales: rows and columns per scale
  };
  static bool is_matrix(Role r) { return r == Role::A || r == Role::B || r == Role::MN || r == Role::ScalesA || r == Role::ScalesB; }

  void add(const char* name, const at::Tensor& t, Role role, c10::ScalarType dtype, const char* spec_dtype,
           int block0 = 1, int block1 = 1) {
    check_device_dtype(op_, first_, options_, name, t, dtype, spec_dtype);
    if (is_matrix(role)) {
      KDL_TORCH_CHECK(t.dim() == 2 || t.dim() == 3, op_, ": ", name, " must be 2-D ", dims(role, false),
                        " or 3-D ", dims(role, true), ", got ", t.dim(), "-D ", shape_text(t));
    } else if (role == Role::Scalar) {
      check_one_element(op_, name, t);
    } else {
      KDL_TORCH_CHECK(t.dim() == 1 || t.dim() == 2, op_, ": ", name, " must be 1-D (", length_name(role),
                        ") or 2-D (batch, ", length_name(role), "), got ", t.dim(), "-D ", shape_text(t));
    }
    args_.push_back({name, t, role, block0, block1});
  }

  // Whether the bound arguments let the launch fold the batch into M (the top of this file).
  bool folds() const { return batched && batch > 1 && fold_ok_ && batch * m <= INT_MAX; }
  void note_fold(const at::Tensor& t, const at::Tensor& u, Layout layout, int64_t ld) {
    const Arg* x = find_tensor(t);
    const Role role = x ? x->role : Role::MN;  // outputs are not arguments: m x n
    if (role == Role::B) {
      fold_ok_ = fold_ok_ && u.dim() == 2;
    } else if (role == Role::A || role == Role::MN) {
      // 3-D, row-major, batch b's rows right after batch b-1's: row i of batch b is row b*m + i.
      fold_ok_ = fold_ok_ && u.dim() == 3 && layout == Layout::Row && u.stride(0) == m * ld;
    } else {
      fold_ok_ = false;  // block scales
    }
  }
  const Arg* find_tensor(const at::Tensor& t) const {
    for (const Arg& x : args_)
      if (x.t.is_same(t)) return &x;
    return nullptr;
  }

  const Arg* find(Role r) const {
    for (const Arg& x : args_)
      if (x.role == r) return &x;
    return nullptr;
  }

  static const char* dims(Role r, bool batch) {
    switch (r) {
      case Role::A: return batch ? "(batch, m, k)" : "(m, k)";
      case Role::B: return batch ? "(batch, k, n)" : "(k, n)";
      case Role::ScalesA: return batch ? "(batch, m blocks, k blocks)" : "(m blocks, k blocks)";
      case Role::ScalesB: return batch ? "(batch, k blocks, n blocks)" : "(k blocks, n blocks)";
      default: return batch ? "(batch, m, n)" : "(m, n)";
    }
  }
  static const char* length_name(Role r) { return r == Role::RowVector ? "m" : "n"; }
  static int64_t blocks(int64_t size, int block) { return (size + block - 1) / block; }

  void check_sizes(const Arg& x) const {
    const at::Tensor& t = x.t;
    switch (x.role) {
      case Role::A:
      case Role::B:
      case Role::Scalar: return;  // A and B set the sizes; a scalar has one element
      case Role::MN:
        KDL_TORCH_CHECK(t.size(-2) == m && t.size(-1) == n, op_, ": ", x.name, " must be (m, n) = (", m, ", ", n,
                          ")", batched ? " or (batch, m, n)" : "", ", got ", shape_text(t));
        return;
      case Role::ScalesA:
      case Role::ScalesB: {
        const bool ofA = x.role == Role::ScalesA;
        const int64_t rows = ofA ? blocks(m, x.block0) : blocks(k, x.block0);
        const int64_t cols = ofA ? blocks(k, x.block1) : blocks(n, x.block1);
        KDL_TORCH_CHECK(t.size(-2) == rows && t.size(-1) == cols, op_, ": ", x.name, " must be ",
                          ofA ? "(ceil(m / " : "(ceil(k / ", x.block0, "), ceil(", ofA ? "k" : "n", " / ", x.block1,
                          ")) = (", rows, ", ", cols, ")", batched ? " or 3-D with the batch first" : "",
                          ", got ", shape_text(t));
        return;
      }
      case Role::RowVector:
      case Role::ColVector: {
        const int64_t length = x.role == Role::RowVector ? m : n;
        const bool ok = t.dim() == 1 ? t.size(0) == length : t.size(0) == batch && t.size(1) == length;
        KDL_TORCH_CHECK(ok, op_, ": ", x.name, " must be (", length_name(x.role), ",) = (", length, ",) or (batch, ",
                          length_name(x.role), ") = (", batch, ", ", length, "), got ", shape_text(t));
        return;
      }
    }
  }

  void check_int(const char* what, int64_t v) const {
    KDL_TORCH_CHECK(v <= INT_MAX, op_, ": ", what, " (", v, ") is larger than the kernel takes (", INT_MAX, ")");
  }

  // A copy made for the launch stays alive as long as this Problem.
  const at::Tensor& keep(const at::Tensor& original, at::Tensor used) {
    if (!used.is_same(original)) {
      copies_.push_back(std::move(used));
      return copies_.back();
    }
    return original;
  }

  const char* op_;
  const char* first_ = nullptr;  // the first argument's name (its device is the op's)
  std::vector<Arg> args_;
  at::TensorOptions options_;
  std::vector<at::Tensor> copies_;
  bool fold_ok_ = true;
};

}  // namespace kdl::torch_ops
