// kdl/conv_problem.h -- the problem a convolution template runs (shared by the device templates and the
// host side of generated conv kernels, kdl/conv_host.h). Plain C++.
//
// A 2-D convolution, groups = 1, NHWC activations and KRSC filters:
//   X : n x h x w x c      (input activations)
//   W : k x r x s x c      (filters)
//   Y : n x p x q x k      (output activations), p = (h + 2 pad_h - dil_h (r - 1) - 1) / stride_h + 1, q alike
//   fprop  Y  = conv(X, W)          implicit GEMM  M = n*p*q, N = k, K = r*s*c
//   dgrad  dX = conv^T(dY, W)       implicit GEMM  M = n*h*w, N = c, K = r*s*k
//   wgrad  dW = sum dY (x) X        implicit GEMM  M = k,     N = r*s*c, K = n*p*q
//
// Strides (elements). An activation tensor (X, Y) has a pixel stride `ld` (between (h, w) and (h, w+1);
// >= its channels: padded channels are allowed) and an image stride `batch_stride` (between images;
// >= rows * cols * ld); the rows of an image are cols * ld apart (the image's pixels are packed).
// A filter tensor (W) has a tap stride `ld` (between (r, s) and (r, s+1); >= c) and a filter stride
// `batch_stride` (between k and k+1; >= r * s * ld); its taps are packed (r, s) -> (r * s_ + s) * ld.
#pragma once
#include <stdint.h>

namespace kdl {

enum class ConvKind { Fprop = 0, Dgrad = 1, Wgrad = 2 };

struct Conv2dProblem {
  int n, h, w, c;  // X
  int k;           // output channels
  int r, s;        // filter
  int p, q;        // Y's spatial size (derived by the host side before the template sees it)
  int pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
  // The two mainloop tensors: fprop A = X, B = W; dgrad A = Y (dY), B = W; wgrad A = Y (dY), B = X.
  const void* A; int64_t lda; int64_t batch_stride_a;
  const void* B; int64_t ldb; int64_t batch_stride_b;
  int split_k;  // serial split-K slices (wgrad; 1 for the others), >= 1
  // 1 when every tensor of the epilogue holds its images back to back (image stride == the image's pixels
  // * ld) and every [channel] vector is shared by the images: a kernel may then run the n images as one
  // image of n*p*q pixels (kdl::Conv2dSm90Fprop: tiles that cross images). Set by the host side.
  int images_packed = 0;
};

// The problem's unique bytes for the split-K memory term (kdl/split_k.h): X, W and Y each moved once
// (the implicit GEMM's view would count X r x s times over).
inline double conv_unique_bytes(const Conv2dProblem& p, int element_bytes) {
  return double(element_bytes) * (double(p.n) * p.h * p.w * p.c + double(p.k) * p.r * p.s * p.c +
                                   double(p.n) * p.p * p.q * p.k);
}

// The output's GEMM view, which the epilogue's tensors share (Epilogue::Params: ld = pixel stride,
// batch_stride = image stride). EpilogueCoord{batch, m, n} of the epilogue is:
//   fprop: batch = image, m = p * q_ + q (pixel of the image), n = k           -> m < p*q, n < k, batch < n
//   dgrad: batch = image, m = h * w_ + w,                       n = c           -> m < h*w, n < c, batch < n
//   wgrad: batch = 0,     m = k,                  n = (r * s_ + s) * c + c    -> m < k, n < r*s*c, batch 1
//          (dW's epilogue ld is its filter stride, and its taps must be packed: tap stride == c)
struct ConvEpilogueExtent {
  int m, n, batch;
};
inline ConvEpilogueExtent conv_epilogue_extent(ConvKind kind, const Conv2dProblem& p) {
  switch (kind) {
    case ConvKind::Fprop: return {p.p * p.q, p.k, p.n};
    case ConvKind::Dgrad: return {p.h * p.w, p.c, p.n};
    case ConvKind::Wgrad: return {p.k, p.r * p.s * p.c, 1};
  }
  return {0, 0, 0};
}

}  // namespace kdl
