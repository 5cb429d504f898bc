// CPU reference of the three 2-D convolutions (groups = 1, NHWC activations, KRSC filters), in fp64 from the
// stored (rounded) elements, for the GPU test suite. Direct loops, no GEMM lowering: an independent check of
// the kernels' implicit GEMMs (include/kdl/conv_sm80.cuh, whose formulas this file restates):
//   fprop  Y[n,p,q,k]  = sum_{r,s,c} X[n, p*sh-ph+r*dh, q*sw-pw+s*dw, c] W[k,r,s,c]
//   dgrad  dX[n,h,w,c] = sum over (r, s, k) with h = p*sh-ph+r*dh, w = q*sw-pw+s*dw for some output pixel
//                        (p, q) of dY[n,p,q,k] W[k,r,s,c]        (the adjoint of fprop in X)
//   wgrad  dW[k,r,s,c] = sum_{n,p,q} dY[n,p,q,k] X[n, p*sh-ph+r*dh, q*sw-pw+s*dw, c]   (the adjoint in W)
// Taps outside the image read 0 (the padding). Strides follow kdl/conv_problem.h: an activation's pixel
// (h, w) of image n is at n * imageStride + (h * width + w) * pixelStride; a filter's tap (r, s) of filter k
// at k * filterStride + (r * S + s) * tapStride.
//
// The accumulators come out in the output's epilogue view (kdl::conv_epilogue_extent), which evalEpilogue
// reads as (batch, m, n): fprop (n, p*Q+q, k), dgrad (n, h*W+w, c), wgrad (0, k, (r*S+s)*C+c).
#pragma once
#include <cstdint>
#include <vector>

#include "tests/gpu/reference.h"

namespace kdl::gputest {

struct ConvDims {
  int64_t n = 1, h = 1, w = 1, c = 1, k = 1, r = 1, s = 1;
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  // The output's spatial size (convOutputSize of each axis); <= 0 when the filter does not fit.
  int64_t p() const;
  int64_t q() const;
};

// (in + 2 pad - dil (filter - 1) - 1) / stride + 1, or 0 when the dilated filter exceeds the padded input.
int64_t convOutputSize(int64_t in, int pad, int dil, int64_t filter, int stride);

// An NHWC activation tensor as stored: `width` pixels per row, pixel / image strides in elements.
struct ActView {
  const HostTensor* t = nullptr;
  int64_t width = 1, pixelStride = 1, imageStride = 1;
  double at(int64_t n, int64_t y, int64_t x, int64_t ch) const {
    return t->at((size_t)(n * imageStride + (y * width + x) * pixelStride + ch));
  }
};

// A KRSC filter tensor as stored: `s` taps per filter row, tap / filter strides in elements.
struct FilterView {
  const HostTensor* t = nullptr;
  int64_t s = 1, tapStride = 1, filterStride = 1;
  double at(int64_t k, int64_t r, int64_t s_, int64_t ch) const {
    return t->at((size_t)(k * filterStride + (r * s + s_) * tapStride + ch));
  }
};

// fprop: X (n x h x w x c), W (k x r x s x c) -> acc[((n * P + p) * Q + q) * K + k].
std::vector<double> convFpropReference(const ConvDims& d, const ActView& X, const FilterView& W, int threads);
// dgrad: dY (n x p x q x k), W -> acc[((n * H + h) * W + w) * C + c].
std::vector<double> convDgradReference(const ConvDims& d, const ActView& dY, const FilterView& W, int threads);
// wgrad: dY (n x p x q x k), X (n x h x w x c) -> acc[((k * R + r) * S + s) * C + c].
std::vector<double> convWgradReference(const ConvDims& d, const ActView& dY, const ActView& X, int threads);

}  // namespace kdl::gputest
