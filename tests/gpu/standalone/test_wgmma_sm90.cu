// Standalone test of the wgmma building blocks (kdl/wgmma_sm90.cuh) on one warpgroup.
// One CTA of 128 threads: A (64 x K) and B (N x K) are loaded from global memory by plain stores
// into 128B-swizzled shared memory (the layout TMA's SWIZZLE_128B writes), K-major or MN-major;
// K/16 wgmma steps accumulate D = A * B^T (64 x N, f32), whose registers are written out through
// acc_coord(). Checked against an fp64 CPU reference. Build for sm_90a only:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -I include ...
#include "kdl/ptx_sm90.cuh"
#include "kdl/wgmma_sm90.cuh"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <random>
#include <vector>
#include <cuda_runtime.h>

#include "common.cuh"  // CK

namespace sm90 = kdl::sm90;

// The descriptor encoding, pinned (compile time): 128B swizzle, SBO 1024, LBO "1".
static_assert(sm90::make_desc_kmajor_sw128<__nv_bfloat16>(0x400, 64, 0).bits == 0x4000004000010040ull, "desc bits");
static_assert(sm90::make_desc_kmajor_sw128<__nv_bfloat16>(0, 64, 1).bits == 0x4000004000010002ull, "k16 step = 32 B");
static_assert(sm90::make_desc_kmajor_sw128<__nv_bfloat16>(0, 64, 4).bits == 0x4000004000010200ull, "next 64-col block");
static_assert(sm90::acc_coord(0, 0).row == 0 && sm90::acc_coord(0, 2).row == 8 && sm90::acc_coord(37, 5).col == 11 &&
                  sm90::acc_coord(127, 127).row == 63 && sm90::acc_coord(127, 127).col == 255,
              "acc_coord");

constexpr int kM = 64;

// Place element (m, k) of A and (n, k) of B where the descriptors expect it.
template <int TransA>
__device__ uint32_t a_offset(int m, int k, int K) {
  return TransA ? sm90::sw128_byte_offset(k, m * 2, K) : sm90::sw128_byte_offset(m, k * 2, kM);
}
template <int TransB>
__device__ uint32_t b_offset(int n, int k, int N, int K) {
  return TransB ? sm90::sw128_byte_offset(k, n * 2, K) : sm90::sw128_byte_offset(n, k * 2, N);
}

template <class T, int N, int K, int TransA, int TransB>
__global__ void __launch_bounds__(128, 1) wgmma_tile_kernel(const T* __restrict__ A, const T* __restrict__ B, float* D) {
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* sA = smem;
  unsigned char* sB = smem + kM * K * sizeof(T);  // a multiple of 1024 bytes
  const int t = threadIdx.x;
  for (int i = t; i < kM * K; i += 128) {
    const int m = i / K, k = i % K;
    *reinterpret_cast<T*>(sA + a_offset<TransA>(m, k, K)) = A[i];
  }
  for (int i = t; i < N * K; i += 128) {
    const int n = i / K, k = i % K;
    *reinterpret_cast<T*>(sB + b_offset<TransB>(n, k, N, K)) = B[i];
  }
  // Generic-proxy stores must be made visible to the async proxy that wgmma reads through.
  sm90::fence_proxy_async_shared();
  __syncthreads();

  float d[N / 2];
#pragma unroll
  for (int r = 0; r < N / 2; ++r) d[r] = __int_as_float(0x7fc00000);  // NaN: the first step must not read it
  const uint32_t a_addr = sm90::smem_addr(sA), b_addr = sm90::smem_addr(sB);
  sm90::warpgroup_fence_acc(d);
  sm90::wgmma_fence();
#pragma unroll
  for (int k16 = 0; k16 < K / 16; ++k16) {
    const sm90::SmemDesc da = TransA ? sm90::make_desc_mnmajor_sw128<T>(a_addr, K, k16)
                                     : sm90::make_desc_kmajor_sw128<T>(a_addr, kM, k16);
    const sm90::SmemDesc db = TransB ? sm90::make_desc_mnmajor_sw128<T>(b_addr, K, k16)
                                     : sm90::make_desc_kmajor_sw128<T>(b_addr, N, k16);
    sm90::wgmma_ss<N, T, TransA, TransB>(d, da, db, k16 > 0);
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

static int g_pass = 0, g_fail = 0;

template <class T>
static T from_float(float x);
template <>
__nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <>
half from_float<half>(float x) { return __float2half(x); }

template <class T, int N, int K, int TransA, int TransB>
static void run_case(const char* type_name, std::mt19937& rng) {
  char name[96];
  snprintf(name, sizeof name, "%s m64n%dk16 K=%d A %s B %s", type_name, N, K, TransA ? "M-major" : "K-major",
           TransB ? "N-major" : "K-major");
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<T> hA(kM * K), hB(size_t(N) * K);
  std::vector<double> a(hA.size()), b(hB.size());
  for (size_t i = 0; i < hA.size(); ++i) { hA[i] = from_float<T>(u(rng)); a[i] = double(float(hA[i])); }
  for (size_t i = 0; i < hB.size(); ++i) { hB[i] = from_float<T>(u(rng)); b[i] = double(float(hB[i])); }
  T *dA, *dB;
  float* dD;
  CK(cudaMalloc(&dA, hA.size() * sizeof(T)));
  CK(cudaMalloc(&dB, hB.size() * sizeof(T)));
  CK(cudaMalloc(&dD, size_t(kM) * N * sizeof(float)));
  CK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(T), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(T), cudaMemcpyHostToDevice));
  CK(cudaMemset(dD, 0xFF, size_t(kM) * N * sizeof(float)));  // NaN: unwritten elements fail
  const size_t smem = (size_t(kM) + N) * K * sizeof(T);
  auto kernel = wgmma_tile_kernel<T, N, K, TransA, TransB>;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<1, 128, smem>>>(dA, dB, dD);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> hD(size_t(kM) * N);
  CK(cudaMemcpy(hD.data(), dD, hD.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double err2 = 0, ref2 = 0;
  int bad = 0, first_m = -1, first_n = -1;
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < N; ++n) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += a[size_t(m) * K + k] * b[size_t(n) * K + k];
      const double got = hD[size_t(m) * N + n], e = got - ref;
      if (!std::isfinite(got) || std::fabs(e) > 1e-3 * (1 + std::fabs(ref))) {
        if (bad++ == 0) { first_m = m; first_n = n; }
      }
      err2 += std::isfinite(got) ? e * e : 1e30;
      ref2 += ref * ref;
    }
  const double rel = std::sqrt(err2 / ref2);
  const bool ok = rel < 1e-5 && bad == 0;
  if (ok) {
    printf("PASS %-44s rel Frobenius error %.2e\n", name, rel);
    ++g_pass;
  } else {
    printf("FAIL %-44s rel Frobenius error %.2e, %d bad elements (first at m=%d n=%d: got %g)\n", name, rel, bad,
           first_m, first_n, bad ? hD[size_t(first_m) * N + first_n] : 0.0);
    ++g_fail;
  }
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dD));
}

template <class T, int TransA, int TransB>
static void all_shapes(const char* type_name, std::mt19937& rng) {
  run_case<T, 64, 64, TransA, TransB>(type_name, rng);
  run_case<T, 64, 128, TransA, TransB>(type_name, rng);
  run_case<T, 64, 256, TransA, TransB>(type_name, rng);
  run_case<T, 128, 64, TransA, TransB>(type_name, rng);
  run_case<T, 128, 128, TransA, TransB>(type_name, rng);
  run_case<T, 128, 256, TransA, TransB>(type_name, rng);
  run_case<T, 256, 64, TransA, TransB>(type_name, rng);
  run_case<T, 256, 128, TransA, TransB>(type_name, rng);
  run_case<T, 256, 256, TransA, TransB>(type_name, rng);
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
  // K-major A and B (A row-major, B column-major: the layout every type supports).
  all_shapes<__nv_bfloat16, 0, 0>("bf16", rng);
  all_shapes<half, 0, 0>("f16 ", rng);
  // MN-major operands (16-bit types only).
  run_case<__nv_bfloat16, 64, 128, 1, 0>("bf16", rng);
  run_case<__nv_bfloat16, 128, 128, 0, 1>("bf16", rng);
  run_case<__nv_bfloat16, 256, 256, 1, 1>("bf16", rng);
  run_case<half, 256, 64, 1, 0>("f16 ", rng);
  run_case<half, 256, 128, 0, 1>("f16 ", rng);
  run_case<half, 128, 256, 1, 1>("f16 ", rng);
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
