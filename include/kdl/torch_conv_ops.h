// kdl/torch_conv_ops.h -- what every convolution op of a PyTorch extension written by `kdlc emit --torch`
// shares (docs/torch.md, "Convolution ops"); the GEMM ops' counterpart is kdl/torch_ops.h, whose messages,
// dtype names and error conventions this file reuses.
//
//   ConvProblem p("kdl_spec.kernel", ConvOp::Fprop, 3, 3, 0, 0);   // the filter the spec fixes (0: run time)
//   p.input("X", X, ConvTensor::X, at::kBFloat16, "bf16");         // (n, c, h, w): device, dtype, rank at once
//   p.input("W", W, ConvTensor::W, at::kBFloat16, "bf16");         // (k, c, r, s)
//   p.residual("residual", residual, at::kBFloat16, "bf16");        // optional, the output's shape
//   p.vector("bias", bias, at::kFloat, "f32");                      // [channel]: the output's channels
//   p.geometry(stride, padding, dilation, {});                       // then every size checked
//   at::Tensor Y = p.output(at::kBFloat16);                          // (n, k, p, q), channels_last
//   p.bind(X, args.X, args.ldx, args.batch_stride_X);                // pixel stride, image stride (or a copy)
//   p.launch(args, &can_implement, &workspace_size, &run);
//
// Shapes are PyTorch's: activations (n, channels, rows, cols) and filters (k, c, r, s), whatever their memory
// format, as F.conv2d takes them; the kernel reads NHWC and KRSC, i.e. `torch.channels_last`. A tensor is taken
// as it is when its strides are channels_last with packed rows (the channel stride 1, the pixel stride at least
// the channels, the row stride the row's pixels times the pixel stride, the image stride at least an image),
// so a channel slice x[:, :c] of a wider channels_last tensor is passed with its pixel stride; any other
// strides -- an NCHW-contiguous tensor above all -- are copied with .contiguous(torch.channels_last) (the copy
// lives as long as the ConvProblem). Outputs are allocated channels_last: out.is_contiguous(memory_format=
// torch.channels_last) holds. Alignment is the kernel's can_implement's to check, never fixed by a copy.
//
// Errors are c10::Error (RuntimeError in Python) through TORCH_CHECK, each starting with the op's name.
#pragma once
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/MemoryFormat.h>
#include <kdl/torch_ops.h>

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kdl::torch_ops {

enum class ConvOp { Fprop, Dgrad, Wgrad };
// The three tensors of a convolution, named after the forward pass: X (n, c, h, w), W (k, c, r, s) and
// Y (n, k, p, q). fprop reads X and W and writes Y; dgrad reads Y (dY) and W and writes X (dX); wgrad reads
// Y (dY) and X and writes W (dW). A residual and the extra outputs have the output's shape.
enum class ConvTensor { X, W, Y };

class ConvProblem {
 public:
  // `fixed_r`, `fixed_s`: the filter the spec fixes (0: a run-time one); `fixed_stride_h`, `_w` alike.
  ConvProblem(const char* op, ConvOp kind, int fixed_r, int fixed_s, int fixed_stride_h, int fixed_stride_w)
      : op_(op), kind_(kind), fixed_r_(fixed_r), fixed_s_(fixed_s), fixed_sh_(fixed_stride_h), fixed_sw_(fixed_stride_w) {}
  const char* op() const { return op_; }

  // ---- the arguments, in the op's order ----

  // One of the op's two inputs (fprop X and W, dgrad Y and W, wgrad Y and X), 4-D.
  void input(const char* name, const at::Tensor& t, ConvTensor which, c10::ScalarType dtype, const char* spec_dtype) {
    add(name, t, dtype, spec_dtype);
    KDL_TORCH_CHECK(t.dim() == 4, op_, ": ", name, " must be 4-D ", dims(which), ", got ", t.dim(), "-D ",
                    shape_text(t));
    inputs_.push_back({name, t, which});
  }
  // The optional residual: the output's shape (checked by geometry()); None reads as 0.
  void residual(const char* name, const std::optional<at::Tensor>& t, c10::ScalarType dtype, const char* spec_dtype) {
    if (!t.has_value() || !t->defined()) return;
    add(name, *t, dtype, spec_dtype);
    KDL_TORCH_CHECK(t->dim() == 4, op_, ": ", name, " must be 4-D ", dims(output_tensor()), " like the output, got ",
                    t->dim(), "-D ", shape_text(*t));
    residual_ = {name, *t, output_tensor()};
  }
  // A [channel] input: one value per channel of the output (fprop k, dgrad c, wgrad k), 1-D (shared by the
  // images) or 2-D (n, channels); a wgrad's output has no images, so 1-D.
  void vector(const char* name, const at::Tensor& t, c10::ScalarType dtype, const char* spec_dtype) {
    add(name, t, dtype, spec_dtype);
    KDL_TORCH_CHECK(t.dim() == 1 || (t.dim() == 2 && kind_ != ConvOp::Wgrad), op_, ": ", name, " must be 1-D (",
                    channel_name(), ",)", kind_ != ConvOp::Wgrad ? cat(" or 2-D (n, ", channel_name(), ")") : "",
                    ", got ", t.dim(), "-D ", shape_text(t));
    vectors_.push_back({name, t, ConvTensor::Y});
  }
  // A [] input: one element on the device.
  void scalar(const char* name, const at::Tensor& t, c10::ScalarType dtype, const char* spec_dtype) {
    add(name, t, dtype, spec_dtype);
    check_one_element(op_, name, t);
  }

  // The convolution's stride, padding and dilation (two values each, as F.conv2d's), and `extra`: dgrad's
  // input_size ((h, w) or dX's whole (n, c, h, w); empty: the smallest h, w whose forward gives dY's p, q),
  // wgrad's kernel_size ((r, s); empty: the spec's filter). Then every size is derived and checked.
  void geometry(c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation, c10::IntArrayRef extra) {
    pair("stride", stride, stride_h, stride_w, 1);
    pair("padding", padding, pad_h, pad_w, 0);
    pair("dilation", dilation, dilation_h, dilation_w, 1);
    KDL_TORCH_CHECK(fixed_sh_ == 0 || (stride_h == fixed_sh_ && stride_w == fixed_sw_), op_, ": stride must be (",
                    fixed_sh_, ", ", fixed_sw_, "): the spec fixes stride = (", fixed_sh_, ", ", fixed_sw_, "), got (",
                    stride_h, ", ", stride_w, ")");
    const Input* x = find(ConvTensor::X);
    const Input* w = find(ConvTensor::W);
    const Input* y = find(ConvTensor::Y);
    switch (kind_) {
      case ConvOp::Fprop:
        n = x->t.size(0), c = x->t.size(1), h = x->t.size(2), wd = x->t.size(3);
        k = w->t.size(0), r = w->t.size(2), s = w->t.size(3);
        KDL_TORCH_CHECK(w->t.size(1) == c, op_, ": ", w->name, " must be (k, c, r, s) with c = ", c, " (", x->name,
                        " is (n, c, h, w) = ", shape_text(x->t), "), got ", shape_text(w->t));
        check_filter(w);
        p = out_size(h, pad_h, dilation_h, r, stride_h, "h");
        q = out_size(wd, pad_w, dilation_w, s, stride_w, "w");
        break;
      case ConvOp::Dgrad:
        n = y->t.size(0), k = y->t.size(1), p = y->t.size(2), q = y->t.size(3);
        c = w->t.size(1), r = w->t.size(2), s = w->t.size(3);
        KDL_TORCH_CHECK(w->t.size(0) == k, op_, ": ", w->name, " must be (k, c, r, s) with k = ", k, " (", y->name,
                        " is (n, k, p, q) = ", shape_text(y->t), "), got ", shape_text(w->t));
        check_filter(w);
        if (extra.empty()) {
          h = (p - 1) * stride_h - 2 * pad_h + dilation_h * (r - 1) + 1;
          wd = (q - 1) * stride_w - 2 * pad_w + dilation_w * (s - 1) + 1;
          KDL_TORCH_CHECK(h >= 1 && wd >= 1, op_, ": no input size gives ", y->name, "'s p, q = ", p, ", ", q,
                          " with this padding; give input_size");
        } else {
          KDL_TORCH_CHECK(extra.size() == 2 || extra.size() == 4, op_,
                          ": input_size must be (h, w) or (n, c, h, w) of dX, got ", extra.size(), " values");
          if (extra.size() == 4)
            KDL_TORCH_CHECK(extra[0] == n && extra[1] == c, op_, ": input_size (n, c, h, w) must have n = ", n,
                            " and c = ", c, " (", y->name, "'s n, ", w->name, "'s c), got (", extra[0], ", ", extra[1],
                            ", ...)");
          h = extra[extra.size() - 2];
          wd = extra[extra.size() - 1];
          KDL_TORCH_CHECK(h >= 1 && wd >= 1, op_, ": input_size's h and w must be positive, got ", h, ", ", wd);
          check_forward(*y, cat("input_size (h, w) = (", h, ", ", wd, ") gives p, q = "));
        }
        break;
      case ConvOp::Wgrad:
        n = y->t.size(0), k = y->t.size(1), p = y->t.size(2), q = y->t.size(3);
        c = x->t.size(1), h = x->t.size(2), wd = x->t.size(3);
        KDL_TORCH_CHECK(x->t.size(0) == n, op_, ": ", x->name, " must be (n, c, h, w) with n = ", n, " (", y->name,
                        " is (n, k, p, q) = ", shape_text(y->t), "), got ", shape_text(x->t));
        if (extra.empty()) {
          KDL_TORCH_CHECK(fixed_r_ > 0 && fixed_s_ > 0, op_,
                          ": kernel_size (r, s) must be given: the spec fixes no filter (filter = (R, S))");
          r = fixed_r_, s = fixed_s_;
        } else {
          KDL_TORCH_CHECK(extra.size() == 2, op_, ": kernel_size must be (r, s), got ", extra.size(), " values");
          r = extra[0], s = extra[1];
          KDL_TORCH_CHECK(r >= 1 && s >= 1, op_, ": kernel_size must be positive, got (", r, ", ", s, ")");
          KDL_TORCH_CHECK(fixed_r_ == 0 || (r == fixed_r_ && s == fixed_s_), op_, ": kernel_size must be (", fixed_r_,
                          ", ", fixed_s_, "): the spec fixes filter = (", fixed_r_, ", ", fixed_s_, "), got (", r, ", ",
                          s, ")");
        }
        check_forward(*y, cat(y->name, " must be (n, k, p, q) with p, q (the forward of ", x->name, " ",
                              shape_text(x->t), " with this filter, stride, padding and dilation) = "));
        break;
    }
    if (residual_.name) check_like_output(residual_);
    for (const Input& v : vectors_) {
      const at::Tensor& t = v.t;
      const int64_t len = output_channels();
      const bool ok = t.dim() == 1 ? t.size(0) == len : (t.size(0) == n && t.size(1) == len);
      KDL_TORCH_CHECK(ok, op_, ": ", v.name, " must be (", channel_name(), ",) = (", len, ",)",
                      kind_ != ConvOp::Wgrad ? cat(" or (n, ", channel_name(), ") = (", n, ", ", len, ")") : "",
                      ", got ", shape_text(t));
    }
    for (int64_t v : {n, c, h, wd, k, r, s, p, q})
      KDL_TORCH_CHECK(v <= INT_MAX, op_, ": a size (", v, ") is larger than the kernel takes (", INT_MAX, ")");
  }

  // split_k of a `split_k = serial(max)` kernel (0: the kernel chooses).
  void split_k(int64_t slices, int max) const { check_split_k(op_, slices, max); }

  int64_t n = 0, c = 0, h = 0, wd = 0, k = 0, r = 0, s = 0, p = 0, q = 0;
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;

  // ---- outputs ----

  // The op's output (and its extra outputs): fprop (n, k, p, q), dgrad (n, c, h, w), wgrad (k, c, r, s), in
  // torch.channels_last on the first input's device.
  at::Tensor output(c10::ScalarType dtype) const {
    return at::empty(shape_of(output_tensor()), options_.dtype(dtype).memory_format(at::MemoryFormat::ChannelsLast));
  }
  // An amax output: one f32 (the kernel zeroes it, then folds |.| into it).
  at::Tensor amax_output() const { return at::empty({}, options_.dtype(c10::ScalarType::Float)); }

  // ---- the kernel's Arguments (CUDA only) ----

  template <class Args>
  void sizes(Args& a) const {
    a.n = int(n), a.h = int(h), a.w = int(wd), a.c = int(c), a.k = int(k), a.r = int(r), a.s = int(s);
    a.pad_h = int(pad_h), a.pad_w = int(pad_w), a.stride_h = int(stride_h), a.stride_w = int(stride_w);
    a.dilation_h = int(dilation_h), a.dilation_w = int(dilation_w);
    a.p = int(p), a.q = int(q);
  }

  // A 4-D tensor's pointer, pixel (or tap) stride and image (or filter) stride, copied into channels_last
  // when its strides are not (the top of this file). An absent residual binds null.
  template <class T>
  void bind(const at::Tensor& t, T*& data, int64_t& ld, int64_t& batch_stride) {
    const at::Tensor& u = fits_channels_last(t) ? t : keep(t.contiguous(at::MemoryFormat::ChannelsLast));
    data = static_cast<T*>(u.data_ptr());
    ld = pixel_stride(u);
    batch_stride = u.size(0) > 1 ? u.stride(0) : 0;
  }
  template <class T>
  void bind(const std::optional<at::Tensor>& t, T*& data, int64_t& ld, int64_t& batch_stride) {
    if (!t.has_value() || !t->defined()) {
      data = nullptr, ld = 0, batch_stride = 0;
      return;
    }
    bind(*t, data, ld, batch_stride);
  }
  template <class T>
  void bind_vector(const at::Tensor& t, T*& data, int64_t& batch_stride) {
    const at::Tensor& u = t.size(-1) <= 1 || t.stride(-1) == 1 ? t : keep(t.contiguous());
    data = static_cast<T*>(u.data_ptr());
    batch_stride = u.dim() == 2 && u.size(0) > 1 ? u.stride(0) : 0;
  }
  template <class T>
  void bind_scalar(const at::Tensor& t, T*& data) const {
    data = static_cast<T*>(t.data_ptr());
  }

  // kdl/torch_ops.h's launch_kernel: can_implement's message verbatim, a workspace from PyTorch's caching
  // allocator, run() on the current stream. Nothing synchronises.
  template <class Args>
  void launch(const Args& a, const char* (*can_implement)(const Args&), size_t (*workspace_size)(const Args&),
              cudaError_t (*run)(const Args&, void*, cudaStream_t)) const {
    launch_kernel(op_, options_, a, can_implement, workspace_size, run);
  }

  // Are `t`'s strides those the kernel reads (channels_last, packed rows)? Sizes of 1 constrain nothing.
  static bool fits_channels_last(const at::Tensor& t) {
    if (t.size(1) > 1 && t.stride(1) != 1) return false;
    const int64_t ld = pixel_stride(t);
    if (ld < t.size(1)) return false;
    if (t.size(2) > 1 && t.stride(2) != t.size(3) * ld) return false;
    return t.size(0) <= 1 || t.stride(0) >= t.size(2) * t.size(3) * ld;
  }

 private:
  struct Input {
    const char* name = nullptr;
    at::Tensor t;
    ConvTensor which = ConvTensor::X;
  };

  // The stride between neighbouring pixels (or taps): the column stride, or where there is one column the
  // row stride, or where there is one pixel the channels.
  static int64_t pixel_stride(const at::Tensor& t) {
    if (t.size(3) > 1) return t.stride(3);
    if (t.size(2) > 1) return t.stride(2);
    return t.size(1) > 0 ? t.size(1) : 1;
  }

  void add(const char* name, const at::Tensor& t, c10::ScalarType dtype, const char* spec_dtype) {
    check_device_dtype(op_, first_, options_, name, t, dtype, spec_dtype);
  }

  ConvTensor output_tensor() const {
    return kind_ == ConvOp::Fprop ? ConvTensor::Y : kind_ == ConvOp::Dgrad ? ConvTensor::X : ConvTensor::W;
  }
  int64_t output_channels() const { return kind_ == ConvOp::Dgrad ? c : k; }
  const char* channel_name() const { return kind_ == ConvOp::Dgrad ? "c" : "k"; }
  static const char* dims(ConvTensor t) {
    return t == ConvTensor::X ? "(n, c, h, w)" : t == ConvTensor::W ? "(k, c, r, s)" : "(n, k, p, q)";
  }
  std::vector<int64_t> shape_of(ConvTensor t) const {
    if (t == ConvTensor::X) return {n, c, h, wd};
    if (t == ConvTensor::W) return {k, c, r, s};
    return {n, k, p, q};
  }
  void check_like_output(const Input& x) const {
    const std::vector<int64_t> want = shape_of(x.which);
    KDL_TORCH_CHECK(x.t.sizes() == c10::IntArrayRef(want), op_, ": ", x.name, " must be ", dims(x.which), " = (",
                    want[0], ", ", want[1], ", ", want[2], ", ", want[3], ") like the output, got ", shape_text(x.t));
  }
  void check_filter(const Input* w) const {
    KDL_TORCH_CHECK(fixed_r_ == 0 || (r == fixed_r_ && s == fixed_s_), op_, ": ", w->name,
                    " must be (k, c, ", fixed_r_, ", ", fixed_s_, "): the spec fixes filter = (", fixed_r_, ", ",
                    fixed_s_, "), got ", shape_text(w->t));
  }
  // dY's p and q must be the forward's of h, w (dgrad's input_size, wgrad's X): `what` and the forward's p, q lead
  // the message.
  void check_forward(const Input& y, const std::string& what) const {
    const int64_t fp = out_size(h, pad_h, dilation_h, r, stride_h, "h"), fq = out_size(wd, pad_w, dilation_w, s, stride_w, "w");
    KDL_TORCH_CHECK(fp == p && fq == q, op_, ": ", what, fp, ", ", fq, ", but ", y.name, " is (n, k, p, q) = ",
                    shape_text(y.t));
  }
  int64_t out_size(int64_t in, int64_t pad, int64_t dil, int64_t f, int64_t stride, const char* what) const {
    const int64_t span = in + 2 * pad - dil * (f - 1) - 1;
    KDL_TORCH_CHECK(span >= 0, op_, ": the filter (", f, " taps, dilation ", dil, ") does not fit ", what, " = ", in,
                    " with padding ", pad);
    return span / stride + 1;
  }
  void pair(const char* what, c10::IntArrayRef v, int64_t& a, int64_t& b, int64_t min) const {
    KDL_TORCH_CHECK(v.size() == 1 || v.size() == 2, op_, ": ", what, " must have 2 values (or 1 for both), got ",
                    v.size());
    a = v[0];
    b = v[v.size() - 1];
    KDL_TORCH_CHECK(a >= min && b >= min && a <= INT_MAX && b <= INT_MAX, op_, ": ", what, " must be at least ", min,
                    ", got (", a, ", ", b, ")");
  }
  const Input* find(ConvTensor t) const {
    for (const Input& x : inputs_)
      if (x.which == t) return &x;
    return nullptr;
  }
  // A copy made for the launch stays alive as long as this ConvProblem.
  const at::Tensor& keep(at::Tensor copy) {
    copies_.push_back(std::move(copy));
    return copies_.back();
  }

  const char* op_;
  ConvOp kind_;
  int fixed_r_, fixed_s_, fixed_sh_, fixed_sw_;
  const char* first_ = nullptr;
  std::vector<Input> inputs_, vectors_;
  Input residual_;
  at::TensorOptions options_;
  std::vector<at::Tensor> copies_;
};

}  // namespace kdl::torch_ops
