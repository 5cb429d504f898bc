// Standalone test of the wgmma building blocks (kdl/wgmma_sm90.cuh) on one warpgroup.
// One CTA of 128 threads: A (64 x K) and B (N x K) are loaded from global memory by plain stores
// into 128B-swizzled shared memory (the layout TMA's SWIZZLE_128B writes), K-major or MN-major;
// K / kWgmmaK steps of wgmma_ss accumulate D = A * B^T (64 x N, f32 or s32), whose registers are
// written out through acc_coord(). Every operand type pair wgmma takes (f16, bf16, tf32, e4m3 x
// e4m3/e5m2, s8/u8 x s8/u8), every N for one pair per family, all four layouts for f16/bf16.
// Also the epilogue's stmatrix staging (stmatrix_acc_x4), row- and column-major, bit-exact.
// Fresh random inputs each run; checked against a CPU reference of the values the GPU was given
// (exact for s8/u8). Build for sm_90a only:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -I include ...
#include "kdl/ptx_sm90.cuh"
#include "kdl/wgmma_sm90.cuh"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CK

namespace sm90 = kdl::sm90;
using sm90::Major;
using e4m3 = __nv_fp8_e4m3;
using e5m2 = __nv_fp8_e5m2;

// The descriptor encoding, pinned (compile time): 128B swizzle, SBO 1024, LBO "1".
static_assert(sm90::make_desc_kmajor_sw128<__nv_bfloat16>(0x400, 64, 0).bits == 0x4000004000010040ull, "desc bits");
static_assert(sm90::make_desc_kmajor_sw128<__nv_bfloat16>(0, 64, 1).bits == 0x4000004000010002ull, "k16 step = 32 B");
static_assert(sm90::make_desc_kmajor_sw128<__nv_bfloat16>(0, 64, 4).bits == 0x4000004000010200ull, "next 64-col block");
// A k-step is 32 bytes of K for every type, so the descriptors of step s agree across types.
static_assert(sm90::make_desc_kmajor_sw128<e4m3>(0, 64, 1).bits == 0x4000004000010002ull, "fp8 k32 step = 32 B");
static_assert(sm90::make_desc_kmajor_sw128<float>(0, 64, 1).bits == 0x4000004000010002ull, "tf32 k8 step = 32 B");
static_assert(sm90::make_desc_kmajor_sw128<int8_t>(0, 128, 4).bits == 0x4000004000010400ull, "next 128-byte block");
static_assert(sm90::kWgmmaK<half> == 16 && sm90::kWgmmaK<__nv_bfloat16> == 16 && sm90::kWgmmaK<float> == 8 &&
                  sm90::kWgmmaK<e4m3> == 32 && sm90::kWgmmaK<e5m2> == 32 && sm90::kWgmmaK<int8_t> == 32 &&
                  sm90::kWgmmaK<uint8_t> == 32,
              "kWgmmaK");
static_assert(std::is_same_v<sm90::wgmma_accum_t<int8_t, uint8_t>, int32_t> &&
                  std::is_same_v<sm90::wgmma_accum_t<e4m3, e5m2>, float>,
              "accumulator types");
static_assert(sm90::wgmma_n_supported<e4m3>(40) && !sm90::wgmma_n_supported<int8_t>(40) &&
                  sm90::wgmma_n_supported<int8_t>(48) && sm90::wgmma_n_supported<int8_t>(24) &&
                  !sm90::wgmma_n_supported<half>(260) && !sm90::wgmma_n_supported<half>(12),
              "wgmma_n_supported");
static_assert(sm90::acc_coord(0, 0).row == 0 && sm90::acc_coord(0, 2).row == 8 && sm90::acc_coord(37, 5).col == 11 &&
                  sm90::acc_coord(127, 127).row == 63 && sm90::acc_coord(127, 127).col == 255,
              "acc_coord");

constexpr int kM = 64;

// Byte offset of element (mn, k) of an operand tile with `mn_rows` rows of MN and K of K, where
// the descriptors expect it.
template <class T, Major kMajor>
__device__ uint32_t operand_offset(int mn, int k, int mn_rows, int K) {
  return kMajor == Major::MN ? sm90::sw128_byte_offset(k, mn * int(sizeof(T)), K)
                             : sm90::sw128_byte_offset(mn, k * int(sizeof(T)), mn_rows);
}

template <class T, Major kMajor>
__device__ sm90::SmemDesc operand_desc(uint32_t tile_addr, int mn_rows, int K, int k_step) {
  if constexpr (kMajor == Major::MN) return sm90::make_desc_mnmajor_sw128<T>(tile_addr, K, k_step);
  else return sm90::make_desc_kmajor_sw128<T>(tile_addr, mn_rows, k_step);
}

// kShorthand: call the 16-bit form wgmma_ss<N, T, TransA, TransB> instead of the general one.
template <class TA, class TB, int N, int K, Major kMajorA, Major kMajorB, bool kShorthand>
__global__ void __launch_bounds__(128, 1)
    wgmma_tile_kernel(const TA* __restrict__ A, const TB* __restrict__ B, sm90::wgmma_accum_t<TA, TB>* D) {
  using Acc = sm90::wgmma_accum_t<TA, TB>;
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* sA = smem;
  unsigned char* sB = smem + kM * K * sizeof(TA);  // a multiple of 1024 bytes
  const int t = threadIdx.x;
  for (int i = t; i < kM * K; i += 128)
    *reinterpret_cast<TA*>(sA + operand_offset<TA, kMajorA>(i / K, i % K, kM, K)) = A[i];
  for (int i = t; i < N * K; i += 128)
    *reinterpret_cast<TB*>(sB + operand_offset<TB, kMajorB>(i / K, i % K, N, K)) = B[i];
  // Generic-proxy stores must be made visible to the async proxy that wgmma reads through.
  sm90::fence_proxy_async_shared();
  __syncthreads();

  Acc d[N / 2];
#pragma unroll
  for (int r = 0; r < N / 2; ++r) {  // garbage: the first step must not read it
    if constexpr (std::is_same_v<Acc, float>) d[r] = __int_as_float(0x7fc00000);
    else d[r] = 0x7f7f7f7f;
  }
  const uint32_t a_addr = sm90::smem_addr(sA), b_addr = sm90::smem_addr(sB);
  sm90::warpgroup_fence_acc(d);
  sm90::wgmma_fence();
#pragma unroll
  for (int s = 0; s < K / sm90::kWgmmaK<TA>; ++s) {
    const sm90::SmemDesc da = operand_desc<TA, kMajorA>(a_addr, kM, K, s);
    const sm90::SmemDesc db = operand_desc<TB, kMajorB>(b_addr, N, K, s);
    if constexpr (kShorthand) sm90::wgmma_ss<N, TA, int(kMajorA), int(kMajorB)>(d, da, db, s > 0);
    else sm90::wgmma_ss<N, TA, TB, kMajorA, kMajorB>(d, da, db, s > 0);
  }
  sm90::wgmma_commit_group();
  sm90::wgmma_wait_group<0>();
  sm90::warpgroup_fence_acc(d);
#pragma unroll
  for (int r = 0; r < N / 2; ++r) {
    const sm90::AccCoord c = sm90::acc_coord(t, r);
    D[c.row * N + c.col] = d[r];
  }
}

// Host side: a random value of each operand type and the exact value the GPU reads.
template <class T>
struct HostOperand;
template <> struct HostOperand<half> {
  static constexpr const char* kName = "f16";
  static half random(std::mt19937& g) { return __float2half(std::uniform_real_distribution<float>(-1.f, 1.f)(g)); }
  static double value(half x) { return double(__half2float(x)); }
};
template <> struct HostOperand<__nv_bfloat16> {
  static constexpr const char* kName = "bf16";
  static __nv_bfloat16 random(std::mt19937& g) {
    return __float2bfloat16(std::uniform_real_distribution<float>(-1.f, 1.f)(g));
  }
  static double value(__nv_bfloat16 x) { return double(__bfloat162float(x)); }
};
template <> struct HostOperand<float> {  // tf32: values with 10 mantissa bits, read exactly
  static constexpr const char* kName = "tf32";
  static float random(std::mt19937& g) {
    float x = std::uniform_real_distribution<float>(-1.f, 1.f)(g);
    uint32_t bits;
    memcpy(&bits, &x, 4);
    bits &= ~0x1FFFu;
    memcpy(&x, &bits, 4);
    return x;
  }
  static double value(float x) { return double(x); }
};
template <class F8>
struct HostFp8 {  // fp8 over a few binades (normals and e4m3 subnormals)
  static F8 random(std::mt19937& g) { return F8(std::uniform_real_distribution<float>(-4.f, 4.f)(g)); }
  static double value(F8 x) { return double(float(x)); }
};
template <> struct HostOperand<e4m3> : HostFp8<e4m3> { static constexpr const char* kName = "e4m3"; };
template <> struct HostOperand<e5m2> : HostFp8<e5m2> { static constexpr const char* kName = "e5m2"; };
template <> struct HostOperand<int8_t> {
  static constexpr const char* kName = "s8";
  static int8_t random(std::mt19937& g) { return int8_t(std::uniform_int_distribution<int>(-128, 127)(g)); }
  static double value(int8_t x) { return double(x); }
};
template <> struct HostOperand<uint8_t> {
  static constexpr const char* kName = "u8";
  static uint8_t random(std::mt19937& g) { return uint8_t(std::uniform_int_distribution<int>(0, 255)(g)); }
  static double value(uint8_t x) { return double(x); }
};

static int g_pass = 0, g_fail = 0;

template <class TA, class TB, int N, int K, Major kMajorA = Major::K, Major kMajorB = Major::K, bool kShorthand = false>
static void run_case(std::mt19937& rng) {
  using Acc = sm90::wgmma_accum_t<TA, TB>;
  constexpr bool kExact = std::is_same_v<Acc, int32_t>;
  char name[128];
  snprintf(name, sizeof name, "%s x %s m64n%dk%d K=%d A %s B %s%s", HostOperand<TA>::kName, HostOperand<TB>::kName, N,
           sm90::kWgmmaK<TA>, K, kMajorA == Major::MN ? "M-major" : "K-major",
           kMajorB == Major::MN ? "N-major" : "K-major", kShorthand ? " (wgmma_ss<N, T, TransA, TransB>)" : "");
  std::vector<TA> hA(kM * K);
  std::vector<TB> hB(size_t(N) * K);
  std::vector<double> a(hA.size()), b(hB.size());
  for (size_t i = 0; i < hA.size(); ++i) { hA[i] = HostOperand<TA>::random(rng); a[i] = HostOperand<TA>::value(hA[i]); }
  for (size_t i = 0; i < hB.size(); ++i) { hB[i] = HostOperand<TB>::random(rng); b[i] = HostOperand<TB>::value(hB[i]); }
  TA* dA;
  TB* dB;
  Acc* dD;
  CK(cudaMalloc(&dA, hA.size() * sizeof(TA)));
  CK(cudaMalloc(&dB, hB.size() * sizeof(TB)));
  CK(cudaMalloc(&dD, size_t(kM) * N * sizeof(Acc)));
  CK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(TA), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(TB), cudaMemcpyHostToDevice));
  // Unwritten elements fail: NaN for f32, -2139062144 (beyond any s8/u8 sum here) for s32.
  CK(cudaMemset(dD, kExact ? 0x80 : 0xFF, size_t(kM) * N * sizeof(Acc)));
  const size_t smem = size_t(kM) * K * sizeof(TA) + size_t(N) * K * sizeof(TB);
  auto kernel = wgmma_tile_kernel<TA, TB, N, K, kMajorA, kMajorB, kShorthand>;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<1, 128, smem>>>(dA, dB, dD);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<Acc> hD(size_t(kM) * N);
  CK(cudaMemcpy(hD.data(), dD, hD.size() * sizeof(Acc), cudaMemcpyDeviceToHost));
  // Error bound relative to sum_k |a*b| (the products are exact in f32): f32 accumulation of K
  // terms, 2^-23 per addition. fp8 wgmma accumulates with fewer mantissa bits (on an H100 the
  // error reached 2.1e-4, about 2^-12, of sum|a*b| at K = 256), so its bound is 2^-10; a wrong
  // layout or descriptor gives errors of order 1.
  const double tol = kExact ? 0.0
                     : (std::is_same_v<TA, e4m3> || std::is_same_v<TA, e5m2>) ? std::ldexp(1.0, -10)
                                                                                : K * std::ldexp(1.0, -23);
  double worst = 0;
  int bad = 0, first_m = -1, first_n = -1;
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < N; ++n) {
      double ref = 0, mag = 0;
      for (int k = 0; k < K; ++k) {
        const double p = a[size_t(m) * K + k] * b[size_t(n) * K + k];
        ref += p;
        mag += std::fabs(p);
      }
      const double got = double(hD[size_t(m) * N + n]), e = std::fabs(got - ref);
      const double ratio = mag > 0 ? e / mag : e;
      if (!std::isfinite(got) || e > tol * mag) {
        if (bad++ == 0) { first_m = m; first_n = n; }
      }
      if (std::isfinite(ratio) && ratio > worst) worst = ratio;
    }
  if (bad == 0) {
    printf("PASS %-64s max |err| / sum|a*b| %.1e\n", name, worst);
    ++g_pass;
  } else {
    printf("FAIL %-64s %d bad elements (first at m=%d n=%d: got %g), max |err| / sum|a*b| %.1e\n", name, bad, first_m,
           first_n, double(hD[size_t(first_m) * N + first_n]), worst);
    ++g_fail;
  }
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dD));
}

// Every N the instruction allows for TA x TB, at one K.
template <class TA, class TB, int K, int... Ns>
static void each_n(std::mt19937& rng, std::integer_sequence<int, Ns...>) {
  (run_case<TA, TB, Ns, K>(rng), ...);
}
using AllN = std::integer_sequence<int, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152,
                                   160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256>;
using AllNInt = std::integer_sequence<int, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256>;

// The tile widths a mainloop uses, at K = two 128-byte blocks.
template <class TA, class TB>
static void tile_shapes(std::mt19937& rng) {
  constexpr int K = 2 * 128 / int(sizeof(TA));
  run_case<TA, TB, 64, K>(rng);
  run_case<TA, TB, 128, K>(rng);
  run_case<TA, TB, 192, K>(rng);
  run_case<TA, TB, 256, K>(rng);
}

// f16/bf16 in one layout combination, through the shorthand and the general entry point.
template <class T, Major kMajorA, Major kMajorB>
static void layouts(std::mt19937& rng) {
  run_case<T, T, 64, 64, kMajorA, kMajorB, true>(rng);
  run_case<T, T, 128, 128, kMajorA, kMajorB>(rng);
  run_case<T, T, 192, 64, kMajorA, kMajorB>(rng);
  run_case<T, T, 256, 128, kMajorA, kMajorB>(rng);
}

// stmatrix: the 64 x N accumulator fragment of a warpgroup (values In, placed by acc_coord),
// stored as T by stmatrix_acc_x4 into a staging tile, row-major (plain) or column-major (.trans),
// with plain rows or the 128B swizzle of a TMA store box (64 elements of the contiguous
// dimension per block), then copied out element by element.
template <bool kTrans, bool kSwizzled, int N>
__device__ uint32_t staging_offset(int row, int col) {
  if constexpr (kTrans) return kSwizzled ? sm90::sw128_byte_offset(col, row * 2, N) : uint32_t(col * kM + row) * 2;
  else return kSwizzled ? sm90::sw128_byte_offset(row, col * 2, kM) : uint32_t(row * N + col) * 2;
}

template <class T, int N, bool kTrans, bool kSwizzled>
__global__ void __launch_bounds__(128, 1) stmatrix_kernel(const float* __restrict__ In, T* Out) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  float d[N / 2];
#pragma unroll
  for (int r = 0; r < N / 2; ++r) {
    const sm90::AccCoord c = sm90::acc_coord(t, r);
    d[r] = In[c.row * N + c.col];
  }
  const uint32_t base = sm90::smem_addr(smem);
  const sm90::AccCoord lc = sm90::stmatrix_x4_lane_coord(lane, kTrans);
#pragma unroll
  for (int j = 0; j < N / 16; ++j)
    sm90::stmatrix_acc_x4<T, kTrans>(d, j, base + staging_offset<kTrans, kSwizzled, N>(16 * warp + lc.row, 16 * j + lc.col));
  __syncthreads();
  for (int i = t; i < kM * N; i += 128) {
    const int row = i / N, col = i % N;
    Out[kTrans ? col * kM + row : row * N + col] =
        *reinterpret_cast<const T*>(smem + staging_offset<kTrans, kSwizzled, N>(row, col));
  }
}

template <class T, int N, bool kTrans, bool kSwizzled>
static void run_stmatrix_case(std::mt19937& rng) {
  char name[128];
  snprintf(name, sizeof name, "stmatrix_acc_x4%s %s 64x%d %s staging", kTrans ? " .trans" : "", HostOperand<T>::kName,
           N, kSwizzled ? "128B-swizzled" : "plain");
  std::uniform_real_distribution<float> u(-8.f, 8.f);
  std::vector<float> hIn(size_t(kM) * N);
  for (float& x : hIn) x = u(rng);
  float* dIn;
  T* dOut;
  CK(cudaMalloc(&dIn, hIn.size() * sizeof(float)));
  CK(cudaMalloc(&dOut, hIn.size() * sizeof(T)));
  CK(cudaMemcpy(dIn, hIn.data(), hIn.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemset(dOut, 0xFF, hIn.size() * sizeof(T)));  // NaN: unwritten elements fail
  const size_t smem = size_t(kM) * N * sizeof(T);
  auto kernel = stmatrix_kernel<T, N, kTrans, kSwizzled>;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<1, 128, smem>>>(dIn, dOut);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<T> hOut(hIn.size());
  CK(cudaMemcpy(hOut.data(), dOut, hOut.size() * sizeof(T), cudaMemcpyDeviceToHost));
  int bad = 0, first_m = -1, first_n = -1;
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < N; ++n) {
      T want;
      if constexpr (std::is_same_v<T, half>) want = __float2half_rn(hIn[size_t(m) * N + n]);
      else want = __float2bfloat16_rn(hIn[size_t(m) * N + n]);
      const T got = hOut[kTrans ? size_t(n) * kM + m : size_t(m) * N + n];
      if (memcmp(&got, &want, sizeof(T)) != 0 && bad++ == 0) { first_m = m; first_n = n; }
    }
  if (bad == 0) {
    printf("PASS %-64s bit-exact\n", name);
    ++g_pass;
  } else {
    printf("FAIL %-64s %d wrong elements (first at m=%d n=%d)\n", name, bad, first_m, first_n);
    ++g_fail;
  }
  CK(cudaFree(dIn));
  CK(cudaFree(dOut));
}

template <class T, bool kTrans, bool kSwizzled>
static void stmatrix_widths(std::mt19937& rng) {
  run_stmatrix_case<T, 64, kTrans, kSwizzled>(rng);
  run_stmatrix_case<T, 128, kTrans, kSwizzled>(rng);
  run_stmatrix_case<T, 256, kTrans, kSwizzled>(rng);
}

int main() {
  int dev = 0;
  cudaDeviceProp prop;
  CK(cudaGetDevice(&dev));
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  if (prop.major != 9) {
    printf("wgmma needs sm_90a; 0 passed, 1 failed\n");
    return 1;
  }
  std::mt19937 rng(std::random_device{}());
  // fp8: every N for e4m3 x e4m3 at K = 128 (one 128-byte block), every pair at the tile widths.
  each_n<e4m3, e4m3, 128>(rng, AllN{});
  tile_shapes<e4m3, e4m3>(rng);
  tile_shapes<e4m3, e5m2>(rng);
  tile_shapes<e5m2, e4m3>(rng);
  tile_shapes<e5m2, e5m2>(rng);
  run_case<e5m2, e4m3, 40, 128>(rng);
  run_case<e4m3, e5m2, 200, 128>(rng);
  // tf32 (float operands), K-major.
  each_n<float, float, 32>(rng, AllN{});
  tile_shapes<float, float>(rng);
  // s8/u8, s32 accumulation (exact).
  each_n<int8_t, int8_t, 128>(rng, AllNInt{});
  tile_shapes<int8_t, int8_t>(rng);
  tile_shapes<int8_t, uint8_t>(rng);
  tile_shapes<uint8_t, int8_t>(rng);
  tile_shapes<uint8_t, uint8_t>(rng);
  // f16/bf16: every N K-major, every tile width, and all four layouts (MN-major = A column-major
  // / B row-major).
  each_n<__nv_bfloat16, __nv_bfloat16, 64>(rng, AllN{});
  tile_shapes<half, half>(rng);
  layouts<__nv_bfloat16, Major::K, Major::K>(rng);
  layouts<__nv_bfloat16, Major::K, Major::MN>(rng);
  layouts<__nv_bfloat16, Major::MN, Major::K>(rng);
  layouts<__nv_bfloat16, Major::MN, Major::MN>(rng);
  layouts<half, Major::K, Major::K>(rng);
  layouts<half, Major::K, Major::MN>(rng);
  layouts<half, Major::MN, Major::K>(rng);
  layouts<half, Major::MN, Major::MN>(rng);
  // stmatrix: row- and column-major staging, plain and swizzled, f16 and bf16.
  stmatrix_widths<__nv_bfloat16, false, false>(rng);
  stmatrix_widths<__nv_bfloat16, false, true>(rng);
  stmatrix_widths<__nv_bfloat16, true, false>(rng);
  stmatrix_widths<__nv_bfloat16, true, true>(rng);
  stmatrix_widths<half, false, false>(rng);
  stmatrix_widths<half, false, true>(rng);
  stmatrix_widths<half, true, false>(rng);
  stmatrix_widths<half, true, true>(rng);
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
