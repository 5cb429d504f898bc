// kdl/activations.cuh -- scalar float activations used by generated epilogues.
// NaN inputs propagate (relu(NaN) = NaN, clamp(NaN) = NaN) except where noted.
#pragma once
#include <cuda_runtime.h>

namespace kdl {

__device__ __forceinline__ float relu(float x) { return x < 0.f ? 0.f : x; }
__device__ __forceinline__ float relu6(float x) { return x < 0.f ? 0.f : (x > 6.f ? 6.f : x); }
__device__ __forceinline__ float leaky_relu(float x, float slope) { return x < 0.f ? x * slope : x; }
__device__ __forceinline__ float clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
__device__ __forceinline__ float select(float c, float a, float b) { return c != 0.f ? a : b; }
__device__ __forceinline__ float select(bool c, float a, float b) { return c ? a : b; }

__device__ __forceinline__ float exp(float x) { return ::expf(x); }
__device__ __forceinline__ float exp2(float x) { return ::exp2f(x); }
__device__ __forceinline__ float log(float x) { return ::logf(x); }
__device__ __forceinline__ float log1p(float x) { return ::log1pf(x); }
__device__ __forceinline__ float sqrt(float x) { return ::sqrtf(x); }
__device__ __forceinline__ float rsqrt(float x) { return ::rsqrtf(x); }
__device__ __forceinline__ float tanh(float x) { return ::tanhf(x); }
__device__ __forceinline__ float erf(float x) { return ::erff(x); }
__device__ __forceinline__ float abs(float x) { return ::fabsf(x); }
__device__ __forceinline__ float min(float a, float b) { return ::fminf(a, b); }
__device__ __forceinline__ float max(float a, float b) { return ::fmaxf(a, b); }
__device__ __forceinline__ float pow(float a, float b) { return ::powf(a, b); }
__device__ __forceinline__ float neg(float x) { return -x; }
__device__ __forceinline__ float square(float x) { return x * x; }
__device__ __forceinline__ float recip(float x) { return 1.f / x; }

__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + ::expf(-x)); }
__device__ __forceinline__ float silu(float x) { return x * sigmoid(x); }
__device__ __forceinline__ float swish(float x, float beta) { return x * sigmoid(beta * x); }
// exact (erf) GELU
__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.f + ::erff(x * 0.70710678118654752f)); }
// tanh approximation GELU
__device__ __forceinline__ float gelu_tanh(float x) {
  const float k0 = 0.79788456080286536f, k1 = 0.044715f;
  return 0.5f * x * (1.f + ::tanhf(k0 * (x + k1 * x * x * x)));
}
__device__ __forceinline__ float softplus(float x) { return x > 20.f ? x : ::log1pf(::expf(x)); }
__device__ __forceinline__ float mish(float x) { return x * ::tanhf(softplus(x)); }
__device__ __forceinline__ float elu(float x, float alpha) { return x > 0.f ? x : alpha * (::expf(x) - 1.f); }
__device__ __forceinline__ float hardsigmoid(float x) { return clamp(x * (1.f / 6.f) + 0.5f, 0.f, 1.f); }
__device__ __forceinline__ float hardswish(float x) { return x * hardsigmoid(x); }

}  // namespace kdl
