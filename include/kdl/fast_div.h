// kdl/fast_div.h -- division of a non-negative int by a divisor fixed at launch, as a multiply and a shift.
//
// A persistent kernel places every unit it walks (tile coordinates from a unit index: raster groups,
// batches); with run-time divisors each 32-bit division is ~25 dependent instructions, and the sm90a
// consumers ran ~1.3 k cycles of them between two tiles with the tensor pipe idle (docs/perf-notes.md
// v28). The host finds (mul, shift) once per launch; the device then divides in two instructions.
//
// For a divisor d >= 2 with 2^(l-1) < d <= 2^l: mul = ceil(2^(31+l) / d) (< 2^32), and for every
// 0 <= n < 2^31, n / d == umulhi(n, mul) >> (l - 1). Writing mul = (2^(31+l) + e) / d with 0 <= e < d,
// n * mul / 2^(31+l) = n / d + n * e / (d * 2^(31+l)), and n * e < 2^31 * 2^l, so the error term stays
// below 1 / d and the floor is exact. d = 1 is kept apart (mul would need 33 bits).
#pragma once

#include <stdint.h>

#ifdef __CUDACC__
#define KDL_FAST_DIV_FN __host__ __device__ __forceinline__
#else
#define KDL_FAST_DIV_FN inline
#endif

namespace kdl {

struct FastDiv {
  uint32_t d = 1, mul = 0, shift = 0;

  FastDiv() = default;
  // d >= 1 (host side, once per launch).
  explicit FastDiv(int divisor) : d(uint32_t(divisor < 1 ? 1 : divisor)) {
    if (d == 1) return;
    uint32_t l = 0;
    while ((1ull << l) < d) ++l;
    mul = uint32_t(((1ull << (31 + l)) + d - 1) / d);
    shift = l - 1;
  }

  // n / d for 0 <= n < 2^31.
  KDL_FAST_DIV_FN int div(int n) const {
    if (d == 1) return n;
#ifdef __CUDA_ARCH__
    return int(__umulhi(uint32_t(n), mul) >> shift);
#else
    return int(uint32_t((uint64_t(uint32_t(n)) * mul) >> 32) >> shift);
#endif
  }
  // n / d and n % d.
  KDL_FAST_DIV_FN void divmod(int n, int& q, int& r) const {
    q = div(n);
    r = n - q * int(d);
  }
};

}  // namespace kdl

#undef KDL_FAST_DIV_FN
