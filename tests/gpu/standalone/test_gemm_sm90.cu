// Standalone test of kdl::GemmSm90 (kdl/gemm_sm90.cuh) on an sm_90a device: fresh random bf16 and
// f16 inputs, outputs poisoned with NaN, D = alpha * acc through an epilogue shaped like a
// generated one; checked against an fp64 CPU reference on small cases and cuBLASLt (f32
// compute) on large ones. One PASS/FAIL line per case, then "N passed, M failed"; exit status
// non-zero on any failure. A watchdog fails the run instead of hanging on a stuck pipeline.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <unistd.h>

#include "kdl/gemm_sm90.cuh"

#include "common.cuh"  // CK
#define CKL(x)                                                                          \
  do {                                                                                  \
    cublasStatus_t s_ = (x);                                                            \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                  \
      fprintf(stderr, "cuBLASLt error %d at %s:%d: %s\n", (int)s_, __FILE__, __LINE__, #x); \
      exit(2);                                                                          \
    }                                                                                   \
  } while (0)

namespace kdl_test {
// Shaped like a generated Epilogue (tests/golden/emit/*/*.cu): D = alpha * acc.
template <class T>
struct Epilogue {
  struct Params {
    T* D; ::int64_t ldd; ::int64_t batch_stride_D;
    float alpha;
  };
  struct State {
  };

  template <int V>
  __device__ __forceinline__ void apply(const Params& p, State& s, const ::kdl::EpilogueCoord& c, const float (&acc)[V]) const {
    (void)s;
    float out_D[V];
#pragma unroll
    for (int i = 0; i < V; ++i) out_D[i] = (p.alpha * acc[i]);
    ::kdl::store_tile<T, V>(p.D, p.ldd, p.batch_stride_D, c, out_D);
  }

  __device__ __forceinline__ void finish(const Params& p, State& s) const {
    (void)p; (void)s;
  }
};
}  // namespace kdl_test

template <class T> float to_f(T x);
template <> float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <> float to_f(half x) { return __half2float(x); }
template <class T> T from_f(float x);
template <> __nv_bfloat16 from_f(float x) { return __float2bfloat16(x); }
template <> half from_f(float x) { return __float2half(x); }
template <class T> cudaDataType_t cuda_type();
template <> cudaDataType_t cuda_type<__nv_bfloat16>() { return CUDA_R_16BF; }
template <> cudaDataType_t cuda_type<half>() { return CUDA_R_16F; }

static cublasLtHandle_t g_lt;
static void* g_lt_ws;
static const size_t kLtWs = 64ull << 20;

static int g_pass = 0, g_fail = 0;
static std::mt19937 g_rng(12345);

static double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Waits for the stream with a time limit: a hung pipeline fails the test instead of the run.
static cudaError_t sync_or_die(const char* what, double limit_s) {
  const double t0 = now_s();
  for (;;) {
    cudaError_t e = cudaStreamQuery(0);
    if (e != cudaErrorNotReady) return e;
    if (now_s() - t0 > limit_s) {
      printf("FAIL %s: kernel did not finish in %.0f s (hang)\n%d passed, %d failed\n", what, limit_s, g_pass, g_fail + 1);
      fflush(stdout);
      _exit(3);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// D(NxM col-major) = B^T(NxK) * A^T(KxM): our row-major D.
template <class T>
static void lt_reference(const T* A, const T* B, T* D, int M, int N, int K, float alpha) {
  cublasLtMatmulDesc_t op;
  CKL(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CKL(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CKL(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  cublasLtMatrixLayout_t la, lb, ld;
  CKL(cublasLtMatrixLayoutCreate(&la, cuda_type<T>(), K, N, K));
  CKL(cublasLtMatrixLayoutCreate(&lb, cuda_type<T>(), K, M, K));
  CKL(cublasLtMatrixLayoutCreate(&ld, cuda_type<T>(), N, M, N));
  cublasLtMatmulPreference_t pref;
  CKL(cublasLtMatmulPreferenceCreate(&pref));
  CKL(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kLtWs, sizeof kLtWs));
  cublasLtMatmulHeuristicResult_t heur;
  int nres = 0;
  CKL(cublasLtMatmulAlgoGetHeuristic(g_lt, op, la, lb, ld, ld, pref, 1, &heur, &nres));
  if (nres < 1) { fprintf(stderr, "cuBLASLt: no algorithm\n"); exit(2); }
  const float beta = 0.f;
  CKL(cublasLtMatmul(g_lt, op, &alpha, B, la, A, lb, &beta, D, ld, D, ld, &heur.algo, g_lt_ws, kLtWs, 0));
  CK(cudaDeviceSynchronize());
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(op);
}

template <class Gemm, class T>
static void run_case(const char* cfg, const char* tname, int M, int N, int K, int batch) {
  char name[160];
  snprintf(name, sizeof name, "%s %s m=%d n=%d k=%d batch=%d", cfg, tname, M, N, K, batch);
  const float alpha = 0.5f;
  const int64_t lda = K, ldb = K, ldd = N;
  const int64_t bsA = (int64_t)M * lda, bsB = (int64_t)N * ldb, bsD = (int64_t)M * ldd;
  std::vector<T> hA((size_t)bsA * batch), hB((size_t)bsB * batch), hD((size_t)bsD * batch);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (auto& x : hA) x = from_f<T>(dist(g_rng));
  for (auto& x : hB) x = from_f<T>(dist(g_rng));
  T *A, *B, *D, *Dref = nullptr;
  CK(cudaMalloc(&A, hA.size() * sizeof(T)));
  CK(cudaMalloc(&B, hB.size() * sizeof(T)));
  CK(cudaMalloc(&D, hD.size() * sizeof(T)));
  CK(cudaMemcpy(A, hA.data(), hA.size() * sizeof(T), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B, hB.data(), hB.size() * sizeof(T), cudaMemcpyHostToDevice));
  CK(cudaMemset(D, 0xff, hD.size() * sizeof(T)));  // NaN in bf16 and f16

  kdl::GemmProblem p{M, N, K, batch, A, lda, bsA, B, ldb, bsB, 1};
  if (const char* why = Gemm::can_implement(p)) {
    printf("FAIL %s: can_implement: %s\n", name, why);
    ++g_fail;
    return;
  }
  typename Gemm::Params ep{D, ldd, bsD, alpha};
  cudaError_t e = Gemm::run(p, ep, nullptr, 0);
  if (e == cudaSuccess) e = sync_or_die(name, 20.0);
  if (e != cudaSuccess) {
    printf("FAIL %s: %s\n", name, cudaGetErrorString(e));
    ++g_fail;
    exit(1);  // a sticky error poisons every later case
  }
  CK(cudaMemcpy(hD.data(), D, hD.size() * sizeof(T), cudaMemcpyDeviceToHost));

  const bool use_lt = (double)M * N * K * batch > 6e7;
  std::vector<float> ref((size_t)bsD * batch);
  if (use_lt) {
    CK(cudaMalloc(&Dref, hD.size() * sizeof(T)));
    lt_reference<T>(A, B, Dref, M, N, K, alpha);
    std::vector<T> hR(hD.size());
    CK(cudaMemcpy(hR.data(), Dref, hR.size() * sizeof(T), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < hR.size(); ++i) ref[i] = to_f(hR[i]);
  } else {
    std::vector<double> a(hA.size()), b(hB.size());
    for (size_t i = 0; i < a.size(); ++i) a[i] = to_f(hA[i]);
    for (size_t i = 0; i < b.size(); ++i) b[i] = to_f(hB[i]);
    for (int z = 0; z < batch; ++z)
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
          const double* ar = &a[z * bsA + (int64_t)m * lda];
          const double* br = &b[z * bsB + (int64_t)n * ldb];
          double s = 0;
          for (int k = 0; k < K; ++k) s += ar[k] * br[k];
          ref[z * bsD + (int64_t)m * ldd + n] = (float)(alpha * s);
        }
  }
  // 16-bit output: a few units in the last place of |ref|, plus slack for sums near zero.
  // (The cuBLASLt reference is rounded to 16 bits too, and may sum in a different order.)
  const double rel = std::is_same<T, half>::value ? 2e-3 : 1.6e-2;
  const double abs_tol = 2e-3 * std::sqrt((double)K);
  double worst = 0;
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = to_f(hD[i]), r = ref[i];
    const double err = std::fabs(d - r) / (abs_tol + rel * std::fabs(r));
    if (!(err <= 1.0)) {
      if (bad++ == 0) first_bad = i;
      if (!(err <= worst)) worst = err;
    } else if (err > worst) {
      worst = err;
    }
  }
  if (bad == 0) {
    printf("PASS %s (%s ref, worst error %.2f of tolerance)\n", name, use_lt ? "cuBLASLt" : "fp64 CPU", worst);
    ++g_pass;
  } else {
    const size_t z = first_bad / bsD, m = (first_bad % bsD) / ldd, n = first_bad % ldd;
    printf("FAIL %s (%s ref): %zu of %zu wrong, first at batch %zu row %zu col %zu: got %g want %g\n", name,
           use_lt ? "cuBLASLt" : "fp64 CPU", bad, ref.size(), z, m, n, (double)to_f(hD[first_bad]),
           (double)ref[first_bad]);
    ++g_fail;
  }
  cudaFree(A);
  cudaFree(B);
  cudaFree(D);
  if (Dref) cudaFree(Dref);
}

template <class T, int TileM, int TileN, int Stages, int ClusterM = 1>
struct Config {
  using Epi = kdl_test::Epilogue<T>;
  using Gemm = kdl::GemmSm90<T, kdl::RowMajor, T, kdl::ColMajor, float, TileM, TileN, 64, Stages,
                               kdl::Sm90Schedule::Cooperative, ClusterM, 1, false, 0, kdl::sm90::NoBlockScaling, Epi>;
  struct G : Gemm {
    using Params = typename Epi::Params;
  };
};

template <class T, int TileM, int TileN, int Stages, int ClusterM = 1>
static void run_config(const char* tname, bool full, bool quick) {
  using G = typename Config<T, TileM, TileN, Stages, ClusterM>::G;
  char cfg[64];
  snprintf(cfg, sizeof cfg, "%dx%dx64 s%d c%dx1", TileM, TileN, Stages, ClusterM);
  const int small_mn[] = {1, 127, 1000};
  const int ks[] = {64, 200, 4096};
  for (int M : small_mn)
    for (int N : small_mn)
      for (int K : ks) {
        if (!full && (M == 1000) != (N == 1000)) continue;  // f16: a subset
        if (quick && (K > 200 || (M == 1000 && N == 1000))) continue;
        run_case<G, T>(cfg, tname, M, N, K, 1);
      }
  if (quick) {
    if (full) run_case<G, T>(cfg, tname, 1000, 127, 200, 2);
    return;
  }
  run_case<G, T>(cfg, tname, 4096, 4096, 4096, 1);
  run_case<G, T>(cfg, tname, 4000, 4100, 200, 1);
  if (full) {
    run_case<G, T>(cfg, tname, 1000, 127, 200, 2);
    run_case<G, T>(cfg, tname, 4100, 1000, 4096, 1);
  }
}

// --quick: the small cases only (for compute-sanitizer).
int main(int argc, char** argv) {
  const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  int dev = 0, major = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("device: %s (%d SMs)\n", prop.name, prop.multiProcessorCount);
  if (major != 9) {
    printf("FAIL: needs a compute capability 9.x device\n");
    return 1;
  }
  CKL(cublasLtCreate(&g_lt));
  CK(cudaMalloc(&g_lt_ws, kLtWs));

  // can_implement refuses what TMA cannot describe, with a message.
  {
    using G = Config<__nv_bfloat16, 128, 128, 4>::G;
    kdl::GemmProblem p{64, 64, 60, 1, (void*)0x1000, 60, 0, (void*)0x1000, 64, 0, 1};
    const char* why = G::can_implement(p);
    if (why) { printf("PASS refuse lda=60: %s\n", why); ++g_pass; } else { printf("FAIL refuse lda=60\n"); ++g_fail; }
    p.lda = 64;
    p.A = (void*)0x1008;
    why = G::can_implement(p);
    if (why) { printf("PASS refuse A+8: %s\n", why); ++g_pass; } else { printf("FAIL refuse A+8\n"); ++g_fail; }
    p.A = (void*)0x1000;
    p.split_k = 2;
    why = G::can_implement(p);
    if (why) { printf("PASS refuse split_k=2: %s\n", why); ++g_pass; } else { printf("FAIL refuse split_k=2\n"); ++g_fail; }
  }

  run_config<__nv_bfloat16, 128, 128, 5>("bf16", true, quick);
  run_config<__nv_bfloat16, 128, 256, 4>("bf16", true, quick);
  run_config<half, 128, 128, 5>("f16", false, quick);
  run_config<half, 128, 256, 4>("f16", false, quick);
  run_config<__nv_bfloat16, 128, 256, 4, 2>("bf16", true, quick);
  run_config<__nv_bfloat16, 256, 128, 4, 2>("bf16", false, quick);
  run_config<half, 128, 128, 5, 2>("f16", false, quick);

  printf("%d passed, %d failed\n", g_pass, g_fail);
  cudaFree(g_lt_ws);
  cublasLtDestroy(g_lt);
  return g_fail == 0 ? 0 : 1;
}
