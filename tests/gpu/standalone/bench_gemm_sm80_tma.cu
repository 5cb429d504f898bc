// Benchmark: kdl::GemmSm80Tma (TMA-fed smem, mma.sync math) beside kdl::GemmSm80 and cuBLASLt,
// bf16, A row (MxK), B col (NxK), D row, alpha=1, beta=0. Same process, same buffers; median over
// 7 batches of CUDA-event-timed launches; cuBLASLt re-timed right after each config (clock drift).
// Helpers (NVML probe, timing, fill) are shared with bench_gemm_sm80.cu (bench_common.cuh).
// Usage: bench_gemm_sm80_tma [rounds (default 2)]
#include "common.cuh"
#include "kdl/gemm_sm80_tma.cuh"
#include <cublasLt.h>
#include <algorithm>
#include <random>
#include <string>
#include <cstring>
#include <functional>
#include <atomic>
#include <thread>
#include <dlfcn.h>

#include "bench_common.cuh"


template <int TM, int TN, int WM, int WN, int S, bool R>
using Sm80 = kdl::GemmSm80<bf16, RowMajor, 8, bf16, ColMajor, 8, float, TM, TN, 64, WM, WN, S, R, StoreEpilogue<bf16>>;
template <int TM, int TN, int WM, int WN, int S, bool R>
using Tma = kdl::GemmSm80Tma<bf16, RowMajor, 8, bf16, ColMajor, 8, float, TM, TN, 64, WM, WN, S, R, StoreEpilogue<bf16>>;

static std::function<void()> g_lt_run;

template <class Gemm>
static void bench_cfg(const char* name, int M, int N, int K, Bufs& b, int iters) {
  kdl::GemmProblem p{M, N, K, 1, b.A, K, 0, b.B, K, 0, 1};
  StoreEpilogue<bf16>::Params ep{b.D, N, 0, 1.f};
  if (const char* w = Gemm::can_implement(p)) { printf("  %-30s skip: %s\n", name, w); return; }
  CK(cudaMemset(b.D, 0xff, (size_t)M * N * 2));
  CK(Gemm::run(p, ep, nullptr, 0));
  CK(cudaDeviceSynchronize());
  CK(cudaMemset(b.diff, 0, 4));
  max_rel_diff<<<264, 256>>>(b.D, b.Dref, (size_t)M * N, b.diff);
  float diff; CK(cudaMemcpy(&diff, b.diff, 4, cudaMemcpyDeviceToHost));
  float t = time_median_ms([&] { Gemm::run(p, ep, nullptr, 0); }, iters, 7);
  const double mhz = g_last_mhz, joule = g_last_j;
  float t_lt = time_median_ms(g_lt_run, iters, 7);
  const double mhz_lt = g_last_mhz;
  double tf = 2.0 * M * N * K / (t * 1e-3) / 1e12;
  printf("  %-30s %8.3f ms %7.1f TFLOP/s  (%5.1f%% of adjacent cuBLASLt %6.1f)  maxreldiff vs Lt %.2e%s\n", name, t, tf,
         100.0 * t_lt / t, 2.0 * M * N * K / (t_lt * 1e-3) / 1e12, diff, diff > 2e-2 ? "  MISMATCH" : "");
  if (mhz > 0)
    printf("    clock %4.0f MHz (Lt %4.0f)  %6.1f TFLOP/s per GHz  %5.2f J per launch\n", mhz, mhz_lt, tf / (mhz * 1e-3), joule);
  printf("CSV,%d,%d,%d,%s,%.4f,%.1f,%.4f,%.0f\n", M, N, K, name, t, tf, t_lt, mhz);
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 2;
  std::vector<BenchShape> shapes = {{2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}, {8192, 1024, 8192}};
  const size_t lt_ws_bytes = 64u << 20;
  Bufs b = bench_setup(shapes, lt_ws_bytes);
  cublasLtHandle_t lt; CKL(cublasLtCreate(&lt));
  {  // path check
    kdl::GemmProblem p{256, 256, 256, 1, b.A, 256, 0, b.B, 256, 0, 1};
    StoreEpilogue<bf16>::Params ep{b.D, 256, 0, 1.f};
    printf("GemmSm80Tma path: %s\n", Tma<128, 256, 2, 4, 4, false>::uses_tma(p) ? "TMA" : "FALLBACK (GemmSm80)");
  }
  for (auto s : shapes) {
    const int M = s.m, N = s.n, K = s.k;
    const LtBf16Tn cublas(lt, b, lt_ws_bytes, M, N, K);
    auto lt_run = [&] { cublas.run(); };
    const double flops = 2.0 * M * N * K;
    int iters = std::max(3, (int)(20e-3 / (flops / 600e12)));
    iters = std::min(iters, 200);
    g_lt_run = lt_run;
    float t_lt = time_median_ms(lt_run, iters, 7);
    CK(cudaDeviceSynchronize());
    printf("%dx%dx%d  cuBLASLt %8.3f ms %7.1f TFLOP/s\n", M, N, K, t_lt, flops / (t_lt * 1e-3) / 1e12);
    for (int r = 0; r < rounds; ++r) {
      bench_cfg<Sm80<128, 256, 2, 4, 3, false>>("Sm80    128x256x64 s3 rN", M, N, K, b, iters);
      bench_cfg<Tma<128, 256, 2, 4, 3, false>>("Sm80Tma 128x256x64 s3 rN", M, N, K, b, iters);
      bench_cfg<Tma<128, 256, 2, 4, 4, false>>("Sm80Tma 128x256x64 s4 rN", M, N, K, b, iters);
      bench_cfg<Sm80<256, 128, 4, 2, 3, false>>("Sm80    256x128x64 s3 rN", M, N, K, b, iters);
      bench_cfg<Tma<256, 128, 4, 2, 4, false>>("Sm80Tma 256x128x64 s4 rN", M, N, K, b, iters);
    }
  }
  cublasLtDestroy(lt);
  return 0;
}
