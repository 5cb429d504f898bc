// Benchmark: kdl::GemmSm90 (TMA + wgmma, warp-specialized cooperative and pingpong, persistent; kdl/gemm_sm90.cuh)
// beside cuBLASLt, bf16, A row (MxK), B col (NxK), D row, alpha=1, beta=0, f32 accumulation. Same
// process, same buffers; 7 batches of CUDA-event-timed launches alternating with cuBLASLt's (the
// clock drifts under the power cap), medians and the median per-pair ratio. Helpers (NVML probe, timing, fill) are bench_common.cuh's.
// Usage: bench_gemm_sm90 [rounds (default 1) [filter: only configurations whose "MxNxK [bf16 ]name" contains it]]
//        bench_gemm_sm90 ROUNDS pointwise|implicit: a conv benchmark shape as the plain GEMM it is (the 1x1, or
//        the first 3x3's implicit GEMM with A as a matrix), tiled loads beside the conv path's (docs/perf-notes.md v17)
//        bench_gemm_sm90 ROUNDS mlp [filter]: samples/torch/mlp.py's two GEMMs (4000 x 4096 x 1024, 4000 x 1024 x 4096)
//        without their epilogues, every sm90a tile the sample could take (docs/perf-notes.md v44)
#include "common.cuh"
#include "kdl/gemm_sm90.cuh"
#include <cublasLt.h>
#include <algorithm>
#include <random>
#include <string>
#include <cstring>
#include <functional>
#include <utility>
#include <atomic>
#include <thread>
#include <dlfcn.h>

#include "bench_common.cuh"

constexpr kdl::Sm90Schedule Coop = kdl::Sm90Schedule::Cooperative, Pp = kdl::Sm90Schedule::Pingpong;
template <int TM, int TN, int S, int CM = 1, kdl::Sm90Schedule Sch = Coop, int CN = 1, bool RasterM = false>
using Sm90 = kdl::GemmSm90<bf16, kdl::RowMajor, bf16, kdl::ColMajor, float, TM, TN, 64, S, Sch, CM, CN, RasterM, 0,
                           kdl::sm90::NoBlockScaling, StoreEpilogue<bf16>>;

template <int TM, int TN, int S, int CM = 1, kdl::Sm90Schedule Sch = Coop, int CN = 1>
using Sm90E4m3 = kdl::GemmSm90<__nv_fp8_e4m3, kdl::RowMajor, __nv_fp8_e4m3, kdl::ColMajor, float, TM, TN, 128, S, Sch, CM, CN,
                               false, 0, kdl::sm90::NoBlockScaling, StoreEpilogue<bf16>>;

template <int TM, int TN, int S, int Promote, class BS, kdl::Sm90Schedule Sch = Coop>
using Sm90E4m3P = kdl::GemmSm90<__nv_fp8_e4m3, kdl::RowMajor, __nv_fp8_e4m3, kdl::ColMajor, float, TM, TN, 128, S, Sch, 1, 1,
                                false, Promote, BS, StoreEpilogue<bf16>>;
using Bs1x128 = kdl::sm90::BlockScaling<1, 128, 128>;

static std::function<void()> g_lt_run;
// Set up the anchor (check and time it) when the first configuration the filter selects runs (bench_cfg), so that
// a filter that selects none of a section's configurations does not time or print its anchor.
static std::function<void()> g_anchor_setup;
static const char* g_only = nullptr;  // argv[2]: run only the configurations whose "MxNxK name" contains it (profiling)
static const float* g_scale_a;  // block scales (all 1) for the block-scaled configurations
static const float* g_scale_b;

// fp64 reference of a few rows (the bench's own check of its fp8 figures): max |x - ref| / (|ref| + 1).
__global__ void ref_rows_f64(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const bf16* D, int rows, int N, int K, float* out) {
  for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < rows * N; idx += gridDim.x * blockDim.x) {
    const int m = idx / N, n = idx % N;
    double s = 0;
    for (int k = 0; k < K; ++k) s += (double)float(A[(size_t)m * K + k]) * (double)float(B[(size_t)n * K + k]);
    const float d = fabsf(__bfloat162float(D[(size_t)m * N + n]) - (float)s) / (fabsf((float)s) + 1.f);
    atomicMax((int*)out, __float_as_int(d != d ? 1e30f : d));
  }
}

__global__ void to_e4m3(const bf16* src, __nv_fp8_e4m3* dst, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = __nv_fp8_e4m3(__bfloat162float(src[i]));
}

// Whether the filter (argv[2]) selects the configuration `name` on M x N x K (fp8: A and B are fp8 copies).
static bool selected(const char* name, int M, int N, int K, bool fp8) {
  char full[160];
  snprintf(full, sizeof full, "%dx%dx%d %s%s", M, N, K, fp8 ? "" : "bf16 ", name);
  return !g_only || strstr(full, g_only);
}

// A and B default to the bf16 buffers; fp8 configurations pass their fp8 copies.
template <class Gemm>
static void bench_cfg(const char* name, int M, int N, int K, Bufs& b, int iters, const void* A = nullptr,
                      const void* B = nullptr, int split = 1, bool stream_k = true) {
  if (!selected(name, M, N, K, A != nullptr)) return;
  if (g_anchor_setup) std::exchange(g_anchor_setup, nullptr)();
  kdl::GemmProblem p{M, N, K, 1, A ? A : b.A, K, 0, B ? B : b.B, K, 0, split};
  if constexpr (Gemm::kBlockScaled) {
    p.scale_a = g_scale_a;
    p.ld_scale_a = M;
    p.scale_b = g_scale_b;
    p.ld_scale_b = (N + 127) / 128;
  }
  void* ws = nullptr;  // without a workspace run() walks the last wave whole (no stream-K tail)
  if (const size_t wsb = Gemm::workspace_size(p); wsb && (split > 1 || stream_k)) CK(cudaMalloc(&ws, wsb));
  StoreEpilogue<bf16>::Params ep{b.D, N, 0, 1.f};
  if (const char* w = Gemm::can_implement(p)) { printf("  %-30s skip: %s\n", name, w); return; }
  CK(cudaMemset(b.D, 0xff, (size_t)M * N * 2));
  CK(Gemm::run(p, ep, ws, 0));
  CK(cudaDeviceSynchronize());
  CK(cudaMemset(b.diff, 0, 4));
  max_rel_diff<<<264, 256>>>(b.D, b.Dref, (size_t)M * N, b.diff);
  float diff; CK(cudaMemcpy(&diff, b.diff, 4, cudaMemcpyDeviceToHost));
  // The card's clock drifts under load (power cap): time ours and cuBLASLt in alternating
  // batches and report each one's median and the median of the per-pair ratios.
  auto ours = [&] { Gemm::run(p, ep, ws, 0); };
  if (Gemm::kClusterSize > 1) {  // how many clusters the device can hold at once (the grid has SMs / ClusterM)
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = Gemm::kClusterM;
    attr[0].val.clusterDim.y = Gemm::kClusterN;
    attr[0].val.clusterDim.z = 1;
    cfg.blockDim = dim3(Gemm::kThreads, 1, 1);
    cfg.dynamicSmemBytes = Gemm::kSmemBytes;
    cfg.gridDim = dim3(132 / Gemm::kClusterN, Gemm::kClusterN, 1);
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int clusters = -1;
    cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, kdl::gemm_sm90_kernel<Gemm>, &cfg);
    printf("    max active clusters: %d (%s)\n", clusters, cudaGetErrorString(e));
  }
  std::vector<float> ts, tls, ratio;
  std::vector<double> mhzs;
  for (int r = 0; r < 7; ++r) {
    ts.push_back(time_median_ms(ours, iters, 1));
    mhzs.push_back(g_last_mhz);
    tls.push_back(time_median_ms(g_lt_run, iters, 1));
    ratio.push_back(tls.back() / ts.back());
  }
  auto median = [](auto v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  const float t = median(ts), t_lt = median(tls), rat = median(ratio);
  const double mhz = median(mhzs);
  double tf = 2.0 * M * N * K / (t * 1e-3) / 1e12;
  printf("  %-30s %8.3f ms %7.1f TFLOP/s  cuBLASLt %7.1f TFLOP/s  ratio %.3fx (median of 7 alternating pairs)  maxreldiff vs Lt %.2e%s\n",
         name, t, tf, 2.0 * M * N * K / (t_lt * 1e-3) / 1e12, rat, diff,
         diff <= 2e-2 ? "" : A ? "  (fp8: accumulates unlike cuBLASLt's fast accumulation; see the fp64 lines)" : "  MISMATCH");
  if (mhz > 0) printf("    clock %4.0f MHz  %6.1f TFLOP/s per GHz\n", mhz, tf / (mhz * 1e-3));
  printf("CSV,%d,%d,%d,%s,%.4f,%.1f,%.4f,%.0f\n", M, N, K, name, t, tf, t_lt, mhz);
  if (ws) cudaFree(ws);
}

// Makes cuBLASLt on M x N x K the anchor the configurations alternate with (g_lt_run) and prints its time alone.
static void time_anchor(const LtBf16Tn& cublas, int M, int N, int K, int iters) {
  g_lt_run = [&cublas] { cublas.run(); };
  const float t_lt = time_median_ms(g_lt_run, iters, 7);
  printf("%dx%dx%d  cuBLASLt %8.3f ms %7.1f TFLOP/s\n", M, N, K, t_lt, 2.0 * M * N * K / (t_lt * 1e-3) / 1e12);
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 1;
  g_only = argc > 2 ? argv[2] : nullptr;
  if (g_only && (strcmp(g_only, "pointwise") == 0 || strcmp(g_only, "implicit") == 0)) {
    // pointwise: the 1x1 conv of the conv benchmark (N64 C128 112x112 K128) as the plain GEMM it is: M =
    // 64*112*112 pixels, N = 128 filters, K = 128 channels; memory-bound (205 MB in, 205 MB out).
    // implicit: the GEMM of the first 3x3 conv shape (N32 C256 56x56 K256: M = 32*56*56, N = 256,
    // K = 9*256) with A as a plain matrix. Tiled TMA here against the conv path's im2col TMA
    // (bench_conv_sm80 9 times that): how much of a tile's speed on the conv is the loads'.
    const bool pointwise = strcmp(g_only, "pointwise") == 0;
    g_only = nullptr;
    const int M = pointwise ? 64 * 112 * 112 : 32 * 56 * 56, N = pointwise ? 128 : 256, K = pointwise ? 128 : 9 * 256;
    const size_t lt_ws_bytes = 64u << 20;
    Bufs b = bench_setup({{M, N, K}}, lt_ws_bytes);
    cublasLtHandle_t lt; CKL(cublasLtCreate(&lt));
    const LtBf16Tn cublas(lt, b, lt_ws_bytes, M, N, K);
    const int iters = 50;
    time_anchor(cublas, M, N, K, iters);
    for (int r = 0; r < rounds; ++r) {
      if (pointwise) {
        bench_cfg<Sm90<256, 128, 4>>("Sm90 256x128x64 s4", M, N, K, b, iters);
        bench_cfg<Sm90<256, 128, 3>>("Sm90 256x128x64 s3", M, N, K, b, iters);
        bench_cfg<Sm90<128, 128, 5>>("Sm90 128x128x64 s5", M, N, K, b, iters);
        bench_cfg<Sm90<128, 128, 5, 1, Pp>>("Sm90 pingpong 128x128x64 s5", M, N, K, b, iters);
      } else {
        bench_cfg<Sm90<128, 256, 4>>("Sm90 128x256x64 s4", M, N, K, b, iters);
        bench_cfg<Sm90<128, 128, 6, 1, Pp>>("Sm90 pingpong 128x128x64 s6", M, N, K, b, iters);
        bench_cfg<Sm90<128, 128, 5, 1, Pp>>("Sm90 pingpong 128x128x64 s5", M, N, K, b, iters);
        bench_cfg<Sm90<128, 128, 6>>("Sm90 128x128x64 s6", M, N, K, b, iters);
        bench_cfg<Sm90<128, 128, 6, 2, Pp>>("Sm90 pingpong 128x128x64 s6 c2x1", M, N, K, b, iters);
      }
    }
    cublasLtDestroy(lt);
    return 0;
  }
  if (g_only && strcmp(g_only, "mlp") == 0) {
    // mlp: samples/torch/mlp.py's two GEMMs without their epilogues (tokens 4000, 1024 -> 4096 -> 1024): up
    // 4000 x 4096 x 1024 (16 k-tiles, 3.9 waves of 128 x 256 tiles) and down 4000 x 1024 x 4096 (64 k-tiles,
    // 128 tiles of 128 x 256 for 132 SMs: one partial wave).
    g_only = argc > 3 ? argv[3] : nullptr;
    const size_t lt_ws_bytes = 64u << 20;
    Bufs b = bench_setup({{4000, 4096, 4096}}, lt_ws_bytes);
    cublasLtHandle_t lt; CKL(cublasLtCreate(&lt));
    for (auto s : std::vector<BenchShape>{{4000, 4096, 1024}, {4000, 1024, 4096}}) {
      const int M = s.m, N = s.n, K = s.k;
      const LtBf16Tn cublas(lt, b, lt_ws_bytes, M, N, K);
      const int iters = 100;
      time_anchor(cublas, M, N, K, iters);
      for (int r = 0; r < rounds; ++r) {
        bench_cfg<Sm90<128, 256, 4>>("Sm90 128x256x64 s4", M, N, K, b, iters);
        bench_cfg<Sm90<128, 256, 4>>("Sm90 128x256x64 s4 no-ws", M, N, K, b, iters, nullptr, nullptr, 1, false);
        bench_cfg<Sm90<256, 128, 4>>("Sm90 256x128x64 s4", M, N, K, b, iters);
        bench_cfg<Sm90<256, 128, 4, 1, Coop, 2>>("Sm90 256x128x64 s4 c1x2", M, N, K, b, iters);
        bench_cfg<Sm90<128, 256, 4, 2>>("Sm90 128x256x64 s4 c2x1", M, N, K, b, iters);
        bench_cfg<Sm90<128, 128, 6>>("Sm90 128x128x64 s6", M, N, K, b, iters);
        bench_cfg<Sm90<128, 128, 6, 1, Pp>>("Sm90 pingpong 128x128x64 s6", M, N, K, b, iters);
        bench_cfg<Sm90<128, 128, 6, 1, Pp>>("Sm90 pingpong 128x128x64 s6 no-ws", M, N, K, b, iters, nullptr, nullptr, 1, false);
        bench_cfg<Sm90<128, 128, 5, 1, Pp, 2>>("Sm90 pingpong 128x128x64 s5 c1x2", M, N, K, b, iters);
      }
    }
    cublasLtDestroy(lt);
    return 0;
  }
  if (g_only && strcmp(g_only, "ksweep") == 0) {
    // ksweep: 8192 x 4096 x K, K = 512 .. 4096 (8 to 64 k-tiles of 64): how a tile's epilogue choices
    // (docs/perf-notes.md v29: the held stage) trade against the length of its k-loop.
    g_only = nullptr;
    const size_t lt_ws_bytes = 64u << 20;
    Bufs b = bench_setup({{8192, 4096, 4096}}, lt_ws_bytes);
    cublasLtHandle_t lt; CKL(cublasLtCreate(&lt));
    for (int K : {512, 1024, 2048, 4096}) {
      const int M = 8192, N = 4096;
      const LtBf16Tn cublas(lt, b, lt_ws_bytes, M, N, K);
      const int iters = 50;
      time_anchor(cublas, M, N, K, iters);
      for (int r = 0; r < rounds; ++r) {
        bench_cfg<Sm90<128, 256, 4>>("Sm90 128x256x64 s4", M, N, K, b, iters);
        bench_cfg<Sm90<256, 128, 4>>("Sm90 256x128x64 s4", M, N, K, b, iters);
      }
    }
    cublasLtDestroy(lt);
    return 0;
  }
  std::vector<BenchShape> shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}, {8192, 1024, 8192}};
  const size_t lt_ws_bytes = 64u << 20;
  Bufs b = bench_setup(shapes, lt_ws_bytes);
  cublasLtHandle_t lt; CKL(cublasLtCreate(&lt));
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
      bench_cfg<Sm90<128, 256, 4>>("Sm90 128x256x64 s4 no-sk", M, N, K, b, iters, nullptr, nullptr, 1, false);
      bench_cfg<Sm90<128, 256, 4>>("Sm90 128x256x64 s4", M, N, K, b, iters);
      bench_cfg<Sm90<128, 256, 4, 2>>("Sm90 128x256x64 s4 c2x1", M, N, K, b, iters);
      bench_cfg<Sm90<256, 128, 4>>("Sm90 256x128x64 s4 (held)", M, N, K, b, iters);
      bench_cfg<Sm90<128, 128, 5, 1, Pp>>("Sm90 pingpong 128x128x64 s5", M, N, K, b, iters);
      bench_cfg<Sm90<64, 128, 8, 1, Pp>>("Sm90 pingpong 64x128x64 s8", M, N, K, b, iters);
    }
  }
  // Small M: 128 x 8192 x 8192 has 32-128 output tiles for 132 SMs.
  {
    const int M = 128, N = 8192, K = 8192;
    const LtBf16Tn cublas(lt, b, lt_ws_bytes, M, N, K);
    const int iters = 50;
    time_anchor(cublas, M, N, K, iters);
    for (int r = 0; r < rounds; ++r) {
      // B (128 MB) streams from DRAM once whatever the tile; 128 x 64 tiles are 128 units for 132 SMs
      // without split-K's serial fixup (docs/perf-notes.md v9).
      bench_cfg<Sm90<128, 64, 8>>("Sm90 128x64x64 s8", M, N, K, b, iters);
      bench_cfg<Sm90<64, 128, 8, 1, Pp>>("Sm90 pingpong 64x128x64 s8", M, N, K, b, iters);
      bench_cfg<Sm90<128, 128, 5, 1, Pp>>("Sm90 pingpong 128x128x64 s5 split 2", M, N, K, b, iters, nullptr, nullptr, 2);
      bench_cfg<Sm90<128, 128, 5>>("Sm90 128x128x64 s5 split 2", M, N, K, b, iters, nullptr, nullptr, 2);
    }
  }

  // e4m3 x e4m3 -> bf16 (per-tensor scales 1) beside cuBLASLt's fp8 GEMM.
  __nv_fp8_e4m3 *A8, *B8;
  CK(cudaMalloc(&A8, b.elems_a)); CK(cudaMalloc(&B8, b.elems_b));
  {  // block scales of 1 (the largest shape's k-blocks x rows / column blocks)
    const size_t kb = 8192 / 128, na = kb * 8192, nb = kb * 64;
    std::vector<float> ones(na, 1.f);
    float *sa, *sb;
    CK(cudaMalloc(&sa, na * 4)); CK(cudaMalloc(&sb, nb * 4));
    CK(cudaMemcpy(sa, ones.data(), na * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(sb, ones.data(), nb * 4, cudaMemcpyHostToDevice));
    g_scale_a = sa;
    g_scale_b = sb;
  }
  to_e4m3<<<1024, 256>>>(b.A, A8, b.elems_a); to_e4m3<<<1024, 256>>>(b.B, B8, b.elems_b);
  CK(cudaDeviceSynchronize());
  for (auto s : shapes) {
    const int M = s.m, N = s.n, K = s.k;
    const LtBf16Tn cublas(lt, b, lt_ws_bytes, M, N, K, CUDA_R_8F_E4M3, A8, B8, /*fast_accum=*/true);
    const double flops = 2.0 * M * N * K;
    const int iters = std::min(200, std::max(3, (int)(20e-3 / (flops / 1200e12))));
    g_anchor_setup = [&] {
      CK(cudaMemset(b.Dref, 0xff, (size_t)M * N * 2));
      CKL(cublas.run());
      CK(cudaDeviceSynchronize());
      {  // cuBLASLt's fp8 output against fp64 on the first 16 rows
        CK(cudaMemset(b.diff, 0, 4));
        ref_rows_f64<<<264, 256>>>(A8, B8, b.Dref, 16, N, K, b.diff);
        float d; CK(cudaMemcpy(&d, b.diff, 4, cudaMemcpyDeviceToHost));
        printf("  cuBLASLt fp8 (fast accum) vs fp64, 16 rows: max rel diff %.2e\n", d);
      }
      g_lt_run = [&] { cublas.run(); };
      const float t_lt = time_median_ms(g_lt_run, iters, 7);
      CK(cudaDeviceSynchronize());
      printf("%dx%dx%d e4m3  cuBLASLt fp8 %8.3f ms %7.1f TFLOP/s\n", M, N, K, t_lt, flops / (t_lt * 1e-3) / 1e12);
    };
    for (int r = 0; r < rounds; ++r) {
      bench_cfg<Sm90E4m3<128, 256, 4>>("Sm90 e4m3 128x256x128 s4 no-sk", M, N, K, b, iters, A8, B8, 1, false);
      bench_cfg<Sm90E4m3<128, 256, 4>>("Sm90 e4m3 128x256x128 s4", M, N, K, b, iters, A8, B8);
      bench_cfg<Sm90E4m3<128, 256, 4, 2>>("Sm90 e4m3 128x256x128 s4 c2x1", M, N, K, b, iters, A8, B8);
      bench_cfg<Sm90E4m3<128, 128, 6>>("Sm90 e4m3 128x128x128 s6", M, N, K, b, iters, A8, B8);
      bench_cfg<Sm90E4m3<64, 256, 5, 1, Pp>>("Sm90 e4m3 pingpong 64x256x128 s5", M, N, K, b, iters, A8, B8);
      // Ours against fp64 on the first 16 rows (D holds the last configuration's output).
      auto vs_fp64 = [&](const char* what, const char* cfg) {
        if (!selected(cfg, M, N, K, true)) return;  // D does not hold that configuration's output
        CK(cudaMemset(b.diff, 0, 4));
        ref_rows_f64<<<264, 256>>>(A8, B8, b.D, 16, N, K, b.diff);
        float d; CK(cudaMemcpy(&d, b.diff, 4, cudaMemcpyDeviceToHost));
        printf("  %s vs fp64, 16 rows: max rel diff %.2e\n", what, d);
      };
      vs_fp64("Sm90 e4m3 pingpong 64x256x128 (fast accumulation)", "Sm90 e4m3 pingpong 64x256x128 s5");
      bench_cfg<Sm90E4m3P<128, 128, 6, 2, kdl::sm90::NoBlockScaling>>("Sm90 e4m3 128x128x128 s6 promote/2", M, N, K, b, iters,
                                                                        A8, B8);
      vs_fp64("Sm90 e4m3 promote/2", "Sm90 e4m3 128x128x128 s6 promote/2");
      bench_cfg<Sm90E4m3P<128, 128, 6, 0, Bs1x128>>("Sm90 e4m3 128x128x128 s6 blockscale 1x128,128x128", M, N, K, b, iters,
                                                     A8, B8);
      vs_fp64("Sm90 e4m3 blockscale (scales 1)", "Sm90 e4m3 128x128x128 s6 blockscale 1x128,128x128");
      // Five stages keep the 32 KB epilogue buffer that six stages and their scale slots leave no room for.
      bench_cfg<Sm90E4m3P<128, 128, 5, 0, Bs1x128>>("Sm90 e4m3 128x128x128 s5 blockscale 1x128,128x128", M, N, K, b, iters,
                                                     A8, B8);
      bench_cfg<Sm90E4m3P<64, 128, 8, 0, Bs1x128, Pp>>("Sm90 e4m3 pingpong 64x128x128 s8 blockscale", M, N, K, b, iters, A8, B8);
      bench_cfg<Sm90E4m3P<64, 128, 7, 0, Bs1x128, Pp>>("Sm90 e4m3 pingpong 64x128x128 s7 blockscale", M, N, K, b, iters, A8, B8);
      bench_cfg<Sm90E4m3P<128, 128, 6, 1, kdl::sm90::NoBlockScaling>>("Sm90 e4m3 128x128x128 s6 promote/1", M, N, K, b, iters,
                                                                        A8, B8);
      bench_cfg<Sm90E4m3P<128, 128, 6, 4, kdl::sm90::NoBlockScaling>>("Sm90 e4m3 128x128x128 s6 promote/4", M, N, K, b, iters,
                                                                        A8, B8);
    }
    g_anchor_setup = nullptr;  // none selected on this shape: it refers to this iteration's cuBLASLt plan
  }
  cublasLtDestroy(lt);
  return 0;
}
