// kdl/numeric.cuh -- element types and conversions used by KDL device code.
//
// Element types: half (cuda_fp16.h), __nv_bfloat16, float (tf32 in the MMA),
// int8_t, uint8_t, int32_t, __nv_fp8_e4m3, __nv_fp8_e5m2.
//
//   kdl::to_float<T>(T)        exact widening to float (int32 rounds above 2^24)
//   kdl::convert_out<T>(float) one rounding, round-to-nearest-even:
//       half / bf16 : RNE, overflow -> +-inf, NaN -> NaN
//       fp8 e4m3/e5m2: RNE, saturating to the largest finite value, NaN -> NaN
//       s8 / u8 / s32: RNE, saturating to the type's range, NaN -> 0
//       float       : identity
#pragma once
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <stdint.h>

namespace kdl {

template <class T> struct NumericTraits;
template <> struct NumericTraits<half>          { static constexpr int kBits = 16; static constexpr bool kIsInt = false; };
template <> struct NumericTraits<__nv_bfloat16> { static constexpr int kBits = 16; static constexpr bool kIsInt = false; };
template <> struct NumericTraits<float>         { static constexpr int kBits = 32; static constexpr bool kIsInt = false; };
template <> struct NumericTraits<int8_t>        { static constexpr int kBits = 8;  static constexpr bool kIsInt = true; };
template <> struct NumericTraits<uint8_t>       { static constexpr int kBits = 8;  static constexpr bool kIsInt = true; };
template <> struct NumericTraits<int32_t>       { static constexpr int kBits = 32; static constexpr bool kIsInt = true; };
template <> struct NumericTraits<__nv_fp8_e4m3> { static constexpr int kBits = 8;  static constexpr bool kIsInt = false; };
template <> struct NumericTraits<__nv_fp8_e5m2> { static constexpr int kBits = 8;  static constexpr bool kIsInt = false; };

// ---- widening --------------------------------------------------------------
template <class T> __device__ __forceinline__ float to_float(T x);
template <> __device__ __forceinline__ float to_float<float>(float x) { return x; }
template <> __device__ __forceinline__ float to_float<half>(half x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }
template <> __device__ __forceinline__ float to_float<int8_t>(int8_t x) { return (float)x; }
template <> __device__ __forceinline__ float to_float<uint8_t>(uint8_t x) { return (float)x; }
template <> __device__ __forceinline__ float to_float<int32_t>(int32_t x) { return (float)x; }
template <> __device__ __forceinline__ float to_float<__nv_fp8_e4m3>(__nv_fp8_e4m3 x) { return static_cast<float>(x); }
template <> __device__ __forceinline__ float to_float<__nv_fp8_e5m2>(__nv_fp8_e5m2 x) { return static_cast<float>(x); }

// ---- narrowing (one rounding) -----------------------------------------------
template <class T> __device__ __forceinline__ T convert_out(float x);
template <> __device__ __forceinline__ float convert_out<float>(float x) { return x; }
template <> __device__ __forceinline__ half convert_out<half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 convert_out<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
// cvt.rni.s32.f32 saturates to the int32 range and maps NaN to 0.
template <> __device__ __forceinline__ int32_t convert_out<int32_t>(float x) { return __float2int_rn(x); }
template <> __device__ __forceinline__ int8_t convert_out<int8_t>(float x) {
  int v = __float2int_rn(x);
  v = v < -128 ? -128 : (v > 127 ? 127 : v);
  return (int8_t)v;
}
template <> __device__ __forceinline__ uint8_t convert_out<uint8_t>(float x) {
  int v = __float2int_rn(x);
  v = v < 0 ? 0 : (v > 255 ? 255 : v);
  return (uint8_t)v;
}
template <> __device__ __forceinline__ __nv_fp8_e4m3 convert_out<__nv_fp8_e4m3>(float x) {
  __nv_fp8_e4m3 r; r.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); return r;
}
template <> __device__ __forceinline__ __nv_fp8_e5m2 convert_out<__nv_fp8_e5m2>(float x) {
  __nv_fp8_e5m2 r; r.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2); return r;
}

// float -> tf32 (round to nearest, ties away; the mma reads the top 19 bits)
__device__ __forceinline__ uint32_t float_to_tf32(uint32_t bits) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(bits)));
  return r;
}

}  // namespace kdl
