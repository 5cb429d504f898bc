// Shared by the standalone benchmarks (bench_gemm_sm80.cu, bench_gemm_sm80_tma.cu): the NVML probe,
// the timing and fill helpers and the buffers.
#pragma once
#include "common.cuh"
#include <cublasLt.h>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <random>
#include <string>
#include <thread>

// Optional NVML (dlopen'ed, no header needed): mean SM clock and energy over each timed region,
// so configs can be compared per clock / per joule on the power-capped card.
namespace nvml {
typedef int (*InitFn)();
typedef int (*HandleFn)(unsigned, void**);
typedef int (*ClockFn)(void*, int, unsigned*);
typedef int (*EnergyFn)(void*, unsigned long long*);
static void* dev = nullptr;
static ClockFn clock_fn = nullptr;
static EnergyFn energy_fn = nullptr;
static void init() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (!h) return;
  auto in = (InitFn)dlsym(h, "nvmlInit_v2");
  auto gh = (HandleFn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
  clock_fn = (ClockFn)dlsym(h, "nvmlDeviceGetClockInfo");
  energy_fn = (EnergyFn)dlsym(h, "nvmlDeviceGetTotalEnergyConsumption");
  if (!in || !gh || !clock_fn || in() != 0 || gh(0, &dev) != 0) { dev = nullptr; }
}
struct Probe {  // samples the SM clock (NVML_CLOCK_SM = 1) every ~2 ms between start() and stop()
  std::atomic<bool> run{false};
  std::thread th;
  double sum = 0; int n = 0; unsigned long long e0 = 0, e1 = 0;
  void start() {
    if (!dev) return;
    energy_fn(dev, &e0);
    run = true;
    th = std::thread([this] { while (run) { unsigned c; if (clock_fn(dev, 1, &c) == 0) { sum += c; ++n; } std::this_thread::sleep_for(std::chrono::milliseconds(2)); } });
  }
  void stop() { if (!dev) return; run = false; th.join(); energy_fn(dev, &e1); }
  double mhz() const { return n ? sum / n : 0; }
  double joules() const { return (e1 - e0) * 1e-3; }
};
}  // namespace nvml
static double g_last_mhz = 0, g_last_j = 0;

using bf16 = __nv_bfloat16;
using kdl::RowMajor;
using kdl::ColMajor;

#define CKL(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "cublasLt %d at %s:%d\n", (int)s_, __FILE__, __LINE__); exit(3); } } while (0)

__global__ void max_rel_diff(const bf16* a, const bf16* b, size_t n, float* out) {
  float m = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    float x = __bfloat162float(a[i]), y = __bfloat162float(b[i]);
    float d = fabsf(x - y) / (fabsf(y) + 1.f);
    if (!(d <= m)) m = (d != d) ? 1e30f : d;
  }
  atomicMax((int*)out, __float_as_int(m));
}

template <class F>
static float time_median_ms(F&& f, int iters, int batches) {
  cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int i = 0; i < 3; ++i) f();
  CK(cudaDeviceSynchronize());
  std::vector<float> t;
  nvml::Probe pr;
  pr.start();
  for (int b = 0; b < batches; ++b) {
    CK(cudaEventRecord(e0));
    for (int i = 0; i < iters; ++i) f();
    CK(cudaEventRecord(e1)); CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); t.push_back(ms / iters);
  }
  pr.stop();
  g_last_mhz = pr.mhz();
  g_last_j = pr.joules() / ((double)batches * iters);  // per launch
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  cudaEventDestroy(e0); cudaEventDestroy(e1);
  return t[t.size() / 2];
}

struct Bufs { bf16 *A, *B, *D, *Dref; float* diff; void* ws; size_t ws_bytes; void* lt_ws; size_t elems_a, elems_b; };

struct BenchShape { int m, n, k; };

// What every standalone bench sets up first: buffers for the largest of `shapes` (A and B random bf16,
// D, Dref, diff, cuBLASLt's workspace of lt_ws_bytes, a split-K workspace of ws_bytes when > 0), NVML,
// and the device line.
static Bufs bench_setup(const std::vector<BenchShape>& shapes, size_t lt_ws_bytes, size_t ws_bytes = 0) {
  size_t maxA = 0, maxB = 0, maxD = 0;
  for (auto s : shapes) { maxA = std::max(maxA, (size_t)s.m * s.k); maxB = std::max(maxB, (size_t)s.n * s.k); maxD = std::max(maxD, (size_t)s.m * s.n); }
  Bufs b{};
  CK(cudaMalloc(&b.A, maxA * 2)); CK(cudaMalloc(&b.B, maxB * 2)); CK(cudaMalloc(&b.D, maxD * 2)); CK(cudaMalloc(&b.Dref, maxD * 2));
  CK(cudaMalloc(&b.diff, 4));
  b.ws_bytes = ws_bytes;
  if (ws_bytes) CK(cudaMalloc(&b.ws, ws_bytes));
  CK(cudaMalloc(&b.lt_ws, lt_ws_bytes));
  b.elems_a = maxA;
  b.elems_b = maxB;
  fill_rand<<<1024, 256>>>(b.A, maxA, 1); fill_rand<<<1024, 256>>>(b.B, maxB, 2);
  CK(cudaDeviceSynchronize());
  cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
  nvml::init();
  printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  return b;
}

// cuBLASLt's bf16 GEMM for row-major A (M x K), column-major B (K x N) and row-major D, seen in its
// column-major terms: D^T (N x M, ld N) = op(B) (N x K) * A^T (K x M); f32 compute, the heuristic's
// best algorithm within `ws_bytes` of workspace. run() writes b.Dref from b.A and b.B -- or, given
// `ab_type` and operands (e.g. CUDA_R_8F_E4M3 and fp8 copies), from those: the same TN GEMM with a
// bf16 D (cuBLASLt's fp8 path, scales 1; fast_accum: CUBLASLT_MATMUL_DESC_FAST_ACCUM).
struct LtBf16Tn {
  cublasLtHandle_t lt;
  const Bufs* b;
  size_t ws_bytes;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulHeuristicResult_t heur;
  float alpha = 1.f, beta = 0.f;

  const void* A;
  const void* B;

  LtBf16Tn(cublasLtHandle_t handle, const Bufs& bufs, size_t workspace_bytes, int M, int N, int K,
           cudaDataType_t ab_type = CUDA_R_16BF, const void* a = nullptr, const void* bm = nullptr, bool fast_accum = false)
      : lt(handle), b(&bufs), ws_bytes(workspace_bytes), A(a ? a : bufs.A), B(bm ? bm : bufs.B) {
    CKL(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CKL(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CKL(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (fast_accum) {  // fp8: accumulate in the tensor core's own precision, like GemmSm90 with PromoteEvery = 0
      const int8_t on = 1;
      CKL(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &on, sizeof on));
    }
    CKL(cublasLtMatrixLayoutCreate(&la, ab_type, K, N, K));
    CKL(cublasLtMatrixLayoutCreate(&lb, ab_type, K, M, K));
    CKL(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, N, M, N));
    cublasLtMatmulPreference_t pref;
    CKL(cublasLtMatmulPreferenceCreate(&pref));
    CKL(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    int nres = 0;
    CKL(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &heur, &nres));
    CKL(cublasLtMatmulPreferenceDestroy(pref));
  }
  ~LtBf16Tn() {
    cublasLtMatrixLayoutDestroy(la); cublasLtMatrixLayoutDestroy(lb); cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(op);
  }
  LtBf16Tn(const LtBf16Tn&) = delete;
  LtBf16Tn& operator=(const LtBf16Tn&) = delete;
  cublasStatus_t run() const {
    return cublasLtMatmul(lt, op, &alpha, B, la, A, lb, &beta, b->Dref, ld, b->Dref, ld, &heur.algo, b->lt_ws, ws_bytes, 0);
  }
};
