// Standalone test of kdl::GemmSm90 (kdl/gemm_sm90.cuh) on an sm_90a device: fresh random bf16, f16,
// fp8, f32 (tf32 math), s8 and u8 inputs, outputs poisoned with NaN, D = alpha * acc through an
// epilogue shaped like a generated one; every A/B layout of f16 and bf16 (MN-major operands), both
// schedules, clusters 1x1 / 2x1 / 1x2 / 2x2, both rasters, odd M/N/K, batches and padded leading
// dimensions (padding of D checked untouched); checked against an fp64 CPU reference on small cases
// and, on large ones, cuBLASLt (16-bit A row x B col, f32 compute) or fp64 on the GPU (the others).
// One PASS/FAIL line per case, then "N passed, M failed"; exit status non-zero on any failure. A
// watchdog fails the run instead of hanging on a stuck pipeline.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

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

  // D's values (GemmSm90's TMA store of D, and its overlapped epilogue), or stored by apply<V>.
  using ElementD = T;
  template <int V>
  __device__ __forceinline__ void compute(const Params& p, State& s, const ::kdl::EpilogueCoord& c, const float (&acc)[V],
                                          float (&out_D)[V]) const {
    (void)s; (void)c;
#pragma unroll
    for (int i = 0; i < V; ++i) out_D[i] = (p.alpha * acc[i]);
  }
  template <int V>
  __device__ __forceinline__ void apply(const Params& p, State& s, const ::kdl::EpilogueCoord& c, const float (&acc)[V]) const {
    float out_D[V];
    compute<V>(p, s, c, acc, out_D);
    ::kdl::store_tile<T, V>(p.D, p.ldd, p.batch_stride_D, c, out_D);
  }

  __device__ __forceinline__ void finish(const Params& p, State& s) const {
    (void)p; (void)s;
  }
};
}  // namespace kdl_test

template <class T> float to_f(T x) { return float(x); }  // fp8 (cuda_fp8.h's conversion)
template <> float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
template <> float to_f(half x) { return __half2float(x); }
template <class T> T from_f(float x) { return T(x); }  // fp8: round to nearest, saturating
template <> __nv_bfloat16 from_f(float x) { return __float2bfloat16(x); }
template <> half from_f(float x) { return __float2half(x); }
template <class T> cudaDataType_t cuda_type();
template <> cudaDataType_t cuda_type<__nv_bfloat16>() { return CUDA_R_16BF; }
template <> cudaDataType_t cuda_type<half>() { return CUDA_R_16F; }
template <class T> const char* type_name();
template <> const char* type_name<__nv_bfloat16>() { return "bf16"; }
template <> const char* type_name<half>() { return "f16"; }
template <> const char* type_name<__nv_fp8_e4m3>() { return "e4m3"; }
template <> const char* type_name<__nv_fp8_e5m2>() { return "e5m2"; }
template <> const char* type_name<float>() { return "f32"; }  // inputs: read as tf32
template <> const char* type_name<int8_t>() { return "s8"; }
template <> const char* type_name<uint8_t>() { return "u8"; }
template <class T> struct detail_is_fp8 : std::false_type {};
template <> struct detail_is_fp8<__nv_fp8_e4m3> : std::true_type {};
template <> struct detail_is_fp8<__nv_fp8_e5m2> : std::true_type {};

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

// fp64 reference on the GPU (large cases cuBLASLt does not check here: fp8, tf32, s8/u8, other
// layouts): one thread per output, D = alpha * sum_k A(m, k) * B(k, n) over the dequantised inputs,
// A(m, k) at A[m * sam + k * sak], B(k, n) at B[k * sbk + n * sbn].
// Block scales (sa, sb non-null): A's element (m, k) times sa[(k / bk) * ld_sa + m / bma], B's (n, k) times
// sb[(k / bk) * ld_sb + n / bnb].
struct RefScales {
  const float* sa = nullptr;
  const float* sb = nullptr;
  int64_t ld_sa = 0, ld_sb = 0;
  int bma = 1, bnb = 1, bk = 1;
};
template <class TA, class TB>
__global__ void ref_gemm_f64(const TA* A, const TB* B, float* D, int M, int N, int K, int64_t sam, int64_t sak,
                             int64_t sbk, int64_t sbn, float alpha, RefScales sc) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (n >= N) return;
  double s = 0;
  for (int k = 0; k < K; ++k) {
    double x = (double)float(A[m * sam + k * sak]) * (double)float(B[k * sbk + n * sbn]);
    if (sc.sa) x *= (double)sc.sa[(k / sc.bk) * sc.ld_sa + m / sc.bma] * (double)sc.sb[(k / sc.bk) * sc.ld_sb + n / sc.bnb];
    s += x;
  }
  D[(int64_t)m * N + n] = (float)(alpha * s);
}

template <class T> constexpr bool is_int8() { return std::is_same<T, int8_t>::value || std::is_same<T, uint8_t>::value; }
// A fresh random input: uniform in [-1, 1) rounded to T; s8 / u8 over their whole range.
template <class T>
static T rand_in(std::mt19937& rng) {
  if constexpr (is_int8<T>()) {
    return T(std::uniform_int_distribution<int>(std::is_same<T, int8_t>::value ? -128 : 0,
                                                std::is_same<T, int8_t>::value ? 127 : 255)(rng));
  } else {
    return from_f<T>(std::uniform_real_distribution<float>(-1.f, 1.f)(rng));
  }
}

// One case: fresh random A (M x K, LA) and B (K x N, LB), leading dimensions rounded up to 16 bytes
// (TMA's rule) and padded by 16 more bytes (3 columns of D) when `padded`, D poisoned with NaN;
// every element of D checked.
template <class Gemm, class TA, class TB, class TOut, class LA = kdl::RowMajor, class LB = kdl::ColMajor>
static void run_case(const char* cfg, int M, int N, int K, int batch, bool padded = false, int split = 1) {
  constexpr bool a_row = std::is_same<LA, kdl::RowMajor>::value, b_col = std::is_same<LB, kdl::ColMajor>::value;
  char name[200];
  snprintf(name, sizeof name, "%s %s%s x %s%s -> %s m=%d n=%d k=%d batch=%d%s split_k=%d", cfg, type_name<TA>(),
           a_row ? "" : " col", type_name<TB>(), b_col ? "" : " row", type_name<TOut>(), M, N, K, batch,
           padded ? " padded" : "", split);
  const float alpha = 0.5f;
  constexpr int kAlignA = 16 / sizeof(TA), kAlignB = 16 / sizeof(TB);
  auto ld_of = [&](int inner, int align) { return (int64_t)(inner + align - 1) / align * align + (padded ? align : 0); };
  // A(m, k) at m * sam + k * sak; B(k, n) at k * sbk + n * sbn.
  const int64_t lda = ld_of(a_row ? K : M, kAlignA), ldb = ld_of(b_col ? K : N, kAlignB), ldd = N + (padded ? 3 : 0);
  const int64_t sam = a_row ? lda : 1, sak = a_row ? 1 : lda, sbk = b_col ? 1 : ldb, sbn = b_col ? ldb : 1;
  const int64_t bsA = (a_row ? M : K) * lda, bsB = (b_col ? N : K) * ldb, bsD = (int64_t)M * ldd;
  std::vector<TA> hA((size_t)bsA * batch);
  std::vector<TB> hB((size_t)bsB * batch);
  std::vector<TOut> hD((size_t)bsD * batch);
  for (auto& x : hA) x = rand_in<TA>(g_rng);
  for (auto& x : hB) x = rand_in<TB>(g_rng);
  TA* A;
  TB* B;
  TOut *D, *Dref = nullptr;
  CK(cudaMalloc(&A, hA.size() * sizeof(TA)));
  CK(cudaMalloc(&B, hB.size() * sizeof(TB)));
  CK(cudaMalloc(&D, hD.size() * sizeof(TOut)));
  CK(cudaMemcpy(A, hA.data(), hA.size() * sizeof(TA), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(B, hB.data(), hB.size() * sizeof(TB), cudaMemcpyHostToDevice));
  CK(cudaMemset(D, 0xff, hD.size() * sizeof(TOut)));  // NaN in bf16, f16 and f32

  kdl::GemmProblem p{M, N, K, batch, A, lda, bsA, B, ldb, bsB, split};
  // Block scales: random in [1/2, 2], leading dimensions padded by 1 and 2, every batch its own.
  RefScales sc;
  std::vector<float> hsa, hsb;
  float *dsa = nullptr, *dsb = nullptr;
  if constexpr (Gemm::kBlockScaled) {
    using BS = typename Gemm::BlockScalingT;
    sc.bma = BS::kBlockMA;
    sc.bnb = BS::kBlockNB;
    sc.bk = BS::kBlockK;
    const int kb = (K + sc.bk - 1) / sc.bk;
    sc.ld_sa = (M + sc.bma - 1) / sc.bma + 1;
    sc.ld_sb = (N + sc.bnb - 1) / sc.bnb + 2;
    hsa.resize((size_t)batch * kb * sc.ld_sa);
    hsb.resize((size_t)batch * kb * sc.ld_sb);
    std::uniform_real_distribution<float> e(-1.f, 1.f);
    for (auto& x : hsa) x = std::exp2(e(g_rng));
    for (auto& x : hsb) x = std::exp2(e(g_rng));
    CK(cudaMalloc(&dsa, hsa.size() * 4));
    CK(cudaMalloc(&dsb, hsb.size() * 4));
    CK(cudaMemcpy(dsa, hsa.data(), hsa.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dsb, hsb.data(), hsb.size() * 4, cudaMemcpyHostToDevice));
    p.scale_a = dsa;
    p.ld_scale_a = sc.ld_sa;
    p.batch_stride_scale_a = (int64_t)kb * sc.ld_sa;
    p.scale_b = dsb;
    p.ld_scale_b = sc.ld_sb;
    p.batch_stride_scale_b = (int64_t)kb * sc.ld_sb;
    sc.sa = dsa;
    sc.sb = dsb;
  }
  if (const char* why = Gemm::can_implement(p)) {
    printf("FAIL %s: can_implement: %s\n", name, why);
    ++g_fail;
    return;
  }
  // Split-K's workspace, poisoned: the kernel must not depend on what it holds.
  void* ws = nullptr;
  if (const size_t wsb = Gemm::workspace_size(p)) {
    CK(cudaMalloc(&ws, wsb));
    CK(cudaMemset(ws, 0x7f, wsb));
  }
  typename Gemm::Params ep{D, ldd, bsD, alpha};
  cudaError_t e = Gemm::run(p, ep, ws, 0);
  if (e == cudaSuccess) e = sync_or_die(name, 20.0);
  if (e != cudaSuccess) {
    printf("FAIL %s: %s\n", name, cudaGetErrorString(e));
    ++g_fail;
    exit(1);  // a sticky error poisons every later case
  }
  CK(cudaMemcpy(hD.data(), D, hD.size() * sizeof(TOut), cudaMemcpyDeviceToHost));

  // Large unbatched unpadded cases: cuBLASLt (16-bit inputs) or fp64 on the GPU (fp8); else fp64 on the CPU.
  const bool device_ref = (double)M * N * K * batch > 6e7 && batch == 1 && !padded;
  constexpr bool kLt = sizeof(TA) == 2 && a_row && b_col;
  const char* ref_name = !device_ref ? "fp64 CPU" : kLt ? "cuBLASLt" : "fp64 GPU";
  std::vector<float> ref((size_t)bsD * batch, 0.f);
  if (device_ref) {
    if constexpr (kLt) {
      CK(cudaMalloc(&Dref, hD.size() * sizeof(TOut)));
      lt_reference<TA>(A, B, Dref, M, N, K, alpha);
      std::vector<TOut> hR(hD.size());
      CK(cudaMemcpy(hR.data(), Dref, hR.size() * sizeof(TOut), cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < hR.size(); ++i) ref[i] = to_f(hR[i]);
    } else {
      float* R;
      CK(cudaMalloc(&R, ref.size() * sizeof(float)));
      ref_gemm_f64<TA, TB><<<dim3((N + 127) / 128, M), 128>>>(A, B, R, M, N, K, sam, sak, sbk, sbn, alpha, sc);
      CK(cudaMemcpy(ref.data(), R, ref.size() * sizeof(float), cudaMemcpyDeviceToHost));
      cudaFree(R);
    }
  } else {
    std::vector<double> a(hA.size()), b(hB.size());
    for (size_t i = 0; i < a.size(); ++i) a[i] = to_f(hA[i]);
    for (size_t i = 0; i < b.size(); ++i) b[i] = to_f(hB[i]);
    for (int z = 0; z < batch; ++z)
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
          const double* ar = &a[z * bsA + m * sam];
          const double* br = &b[z * bsB + n * sbn];
          double s = 0;
          if (hsa.empty()) {
            for (int k = 0; k < K; ++k) s += ar[k * sak] * br[k * sbk];
          } else {
            const float* sa = &hsa[(size_t)z * p.batch_stride_scale_a];
            const float* sb = &hsb[(size_t)z * p.batch_stride_scale_b];
            for (int k = 0; k < K; ++k)
              s += ar[k * sak] * br[k * sbk] * (double)sa[(k / sc.bk) * sc.ld_sa + m / sc.bma] *
                   (double)sb[(k / sc.bk) * sc.ld_sb + n / sc.bnb];
          }
          ref[z * bsD + (int64_t)m * ldd + n] = (float)(alpha * s);
        }
  }
  // 16-bit output: a few units in the last place of |ref|, plus slack for sums near zero.
  // (The cuBLASLt reference is rounded to 16 bits too, and may sum in a different order.)
  // tf32 (f32 output): tf32's 10-bit mantissa. s8 / u8 (f32 output of an exact s32 sum): f32 rounding only.
  const double rel = is_int8<TA>() ? 1e-6 : std::is_same<TOut, half>::value ? 2e-3 : 1.6e-2;
  const double abs_tol = is_int8<TA>() ? 0.0
                                       : 2e-3 * std::sqrt((double)K) * (hsa.empty() ? 1.0 : 4.0);  // block scales: products up to 4x
  double worst = 0;
  size_t bad = 0, first_bad = 0, checked = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const size_t n = i % ldd;
    const double d = to_f(hD[i]);
    if (n >= (size_t)N) {  // the padding columns of D: never written
      if (!std::isnan(d)) {
        if (bad++ == 0) first_bad = i;
      }
      continue;
    }
    ++checked;
    const double r = ref[i];
    const double err = std::fabs(d - r) / (abs_tol + rel * std::fabs(r) + 1e-30);
    if (!(err <= 1.0)) {
      if (bad++ == 0) first_bad = i;
      if (!(err <= worst)) worst = err;
    } else if (err > worst) {
      worst = err;
    }
  }
  if (bad == 0) {
    printf("PASS %s (%s ref, worst error %.2f of tolerance)\n", name, ref_name, worst);
    ++g_pass;
  } else {
    const size_t z = first_bad / bsD, m = (first_bad % bsD) / ldd, n = first_bad % ldd;
    printf("FAIL %s (%s ref): %zu of %zu wrong, first at batch %zu row %zu col %zu: got %g want %g\n", name, ref_name,
           bad, checked, z, m, n, (double)to_f(hD[first_bad]), (double)ref[first_bad]);
    ++g_fail;
  }
  cudaFree(A);
  cudaFree(B);
  cudaFree(D);
  if (Dref) cudaFree(Dref);
  if (ws) cudaFree(ws);
  if (dsa) cudaFree(dsa);
  if (dsb) cudaFree(dsb);
}

// A GemmSm90 configuration of the test; D is bf16 for fp8 inputs, f32 for tf32 and s8 / u8 inputs,
// else the input type.
template <class TA, class TB, int TileM, int TileN, int Stages, kdl::Sm90Schedule Schedule = kdl::Sm90Schedule::Cooperative,
          int ClusterM = 1, int ClusterN = 1, bool RasterAlongM = false, bool SplitK = false, int PromoteEvery = 0,
          class BlockScaling = kdl::sm90::NoBlockScaling, class LA = kdl::RowMajor, class LB = kdl::ColMajor>
struct Config {
  using TOut = typename std::conditional<detail_is_fp8<TA>::value, __nv_bfloat16,
                                         typename std::conditional<sizeof(TA) == 2, TA, float>::type>::type;
  using LayoutA = LA;
  using LayoutB = LB;
  static constexpr bool kSplitK = SplitK;
  static constexpr int kTileK = 128 / sizeof(TA);
  using Epi = kdl_test::Epilogue<TOut>;
  using Gemm = kdl::GemmSm90<TA, LA, TB, LB, kdl::sm90::wgmma_accum_t<TA, TB>, TileM, TileN, kTileK, Stages, Schedule,
                             ClusterM, ClusterN, RasterAlongM, PromoteEvery, BlockScaling, Epi>;
  struct G : Gemm {
    using Params = typename Epi::Params;
    using BlockScalingT = BlockScaling;
  };
  static void name(char* buf, size_t cap) {
    int n = snprintf(buf, cap, "%dx%dx%d s%d %s c%dx%d%s", TileM, TileN, kTileK, Stages,
                     Schedule == kdl::Sm90Schedule::Pingpong ? "pingpong" : "coop", ClusterM, ClusterN,
                     RasterAlongM ? " rasterM" : "");
    if (BlockScaling::kEnabled)
      snprintf(buf + n, cap - n, " blockscale(%d,%d,%d)", BlockScaling::kBlockMA, BlockScaling::kBlockNB, BlockScaling::kBlockK);
    else if (PromoteEvery > 0)
      snprintf(buf + n, cap - n, " promote/%d", PromoteEvery);
  }
};

// The same with layouts first (the MN-major configurations).
template <class LA, class LB, class T, int TileM, int TileN, int Stages, kdl::Sm90Schedule Schedule, int ClusterM = 1,
          int ClusterN = 1, bool SplitK = false>
using LConfig = Config<T, T, TileM, TileN, Stages, Schedule, ClusterM, ClusterN, false, SplitK, 0, kdl::sm90::NoBlockScaling,
                       LA, LB>;

// --only TEXT: only the configurations whose name contains TEXT.
static const char* g_only = nullptr;

// full: every small M x N x K; else a subset. quick: the small cases only (compute-sanitizer).
template <class TA, class TB, class C>
static void run_config_t(bool full, bool quick) {
  using G = typename C::G;
  using TOut = typename C::TOut;
  using LA = typename C::LayoutA;
  using LB = typename C::LayoutB;
  char cfg[96];
  C::name(cfg, sizeof cfg);
  if (g_only && !strstr(cfg, g_only)) return;
  const int small_mn[] = {1, 127, 1000};
  // K rounded up to 16 bytes (TMA's stride rule): 200 -> 208 and 264 -> 272 for fp8, still not multiples of TileK.
  constexpr int kAlign = 16 / sizeof(TA);
  auto k_of = [](int k) { return (k + kAlign - 1) / kAlign * kAlign; };
  const int ks[] = {64, k_of(200), 4096};
  for (int M : small_mn)
    for (int N : small_mn)
      for (int K : ks) {
        if (!full && (M == 1000) != (N == 1000)) continue;  // a subset
        if (quick && (K > 200 || (M == 1000 && N == 1000))) continue;
        run_case<G, TA, TB, TOut, LA, LB>(cfg, M, N, K, 1);
      }
  run_case<G, TA, TB, TOut, LA, LB>(cfg, 1000, 127, k_of(200), 3);
  run_case<G, TA, TB, TOut, LA, LB>(cfg, 333, 517, k_of(264), 2, /*padded=*/true);
  if (C::kSplitK) {  // serial split-K: odd sizes, batches, more slices than SMs need, padded
    run_case<G, TA, TB, TOut, LA, LB>(cfg, 127, 1000, k_of(200) * 5, 1, false, 3);
    run_case<G, TA, TB, TOut, LA, LB>(cfg, 333, 517, 4096, 2, true, 7);
  }
  if (quick) return;
  if (C::kSplitK) {
    run_case<G, TA, TB, TOut, LA, LB>(cfg, 128, 8192, 8192, 1, false, 4);
    run_case<G, TA, TB, TOut, LA, LB>(cfg, 1000, 1000, 4096, 1, false, 5);
  }
  run_case<G, TA, TB, TOut, LA, LB>(cfg, 4096, 4096, 4096, 1);
  // Stream-K tail (a last wave of tile groups 1/4 to 2/3 full, K >= 8 k-tiles; each configuration
  // meets it in at least one of these): odd sizes, batches, padded.
  run_case<G, TA, TB, TOut, LA, LB>(cfg, 2000, 1500, k_of(1000), 1);
  run_case<G, TA, TB, TOut, LA, LB>(cfg, 2000, 3000, k_of(1000), 1);
  run_case<G, TA, TB, TOut, LA, LB>(cfg, 3000, 3000, k_of(1000), 1);
  run_case<G, TA, TB, TOut, LA, LB>(cfg, 1000, 1000, k_of(1000), 3, /*padded=*/true);
  run_case<G, TA, TB, TOut, LA, LB>(cfg, 4000, 4100, k_of(200), 1);
  if (full) run_case<G, TA, TB, TOut, LA, LB>(cfg, 4100, 1000, 4096, 1);
}

// can_implement refuses what TMA cannot describe, with a message.
template <class G>
static void refusals(int elem_bytes) {
  const int k = 128 / elem_bytes * 4;
  auto expect = [&](const char* what, const kdl::GemmProblem& p) {
    const char* why = G::can_implement(p);
    if (why) { printf("PASS refuse %s: %s\n", what, why); ++g_pass; } else { printf("FAIL refuse %s\n", what); ++g_fail; }
  };
  kdl::GemmProblem ok{64, 64, k, 1, (void*)0x1000, k, 0, (void*)0x1000, k, 0, 1};
  if constexpr (G::kBlockScaled) {  // 1 x 128 / 128 x 128 blocks: 64 row scales, 1 column-block scale per k-block
    ok.scale_a = ok.scale_b = (const float*)0x2000;
    ok.ld_scale_a = 64;
    ok.ld_scale_b = 1;
  }
  if (G::can_implement(ok)) { printf("FAIL accept aligned: %s\n", G::can_implement(ok)); ++g_fail; }
  kdl::GemmProblem p = ok;
  p.lda = k + 8 / elem_bytes;  // 8 bytes of padding: not a multiple of 16 bytes
  expect("lda + 8 bytes", p);
  p = ok;
  p.A = (void*)0x1008;
  expect("A + 8 bytes", p);
  p = ok;
  p.batch = 2;
  p.batch_stride_b = (int64_t)64 * k + 8 / elem_bytes;
  p.batch_stride_a = (int64_t)64 * k;
  expect("batch_stride_b + 8 bytes", p);
  p = ok;
  p.split_k = 5;  // 4 k-tiles
  expect("split_k=5 > k-tiles", p);
  p.split_k = 0;
  expect("split_k=0", p);
  p = ok;
  p.split_k = 4;
  if (G::can_implement(p)) { printf("FAIL accept split_k=4: %s\n", G::can_implement(p)); ++g_fail; }
  if constexpr (G::kBlockScaled) {
    p = ok;
    p.scale_a = nullptr;
    expect("block scaling without scale_a", p);
    p = ok;
    p.ld_scale_a = 63;  // 64 rows of 1 x 128 blocks need 64
    expect("ld_scale_a < ceil(m / BlockMA)", p);
  }
}

// A column-major A and a row-major B (16-bit): their leading dimensions are M's and N's.
template <class G>
static void refusals_mn_major() {
  auto expect = [&](const char* what, const kdl::GemmProblem& p, bool refused) {
    const char* why = G::can_implement(p);
    if (!why == !refused) {
      printf("PASS %s %s%s%s\n", refused ? "refuse" : "accept", what, why ? ": " : "", why ? why : "");
      ++g_pass;
    } else {
      printf("FAIL %s %s%s%s\n", refused ? "refuse" : "accept", what, why ? ": " : "", why ? why : "");
      ++g_fail;
    }
  };
  const kdl::GemmProblem ok{200, 304, 64, 1, (void*)0x1000, 200, 0, (void*)0x1000, 304, 0, 1};
  expect("col A lda=m=200, row B ldb=n=304 (k=64 < both)", ok, false);
  kdl::GemmProblem p = ok;
  p.lda = 192;
  expect("col A lda=192 < m", p, true);
  p = ok;
  p.ldb = 296;
  expect("row B ldb=296 < n", p, true);
  p = ok;
  p.lda = 204;  // 408 bytes: not a multiple of 16
  expect("col A lda=204 (408 bytes)", p, true);
  p = ok;
  p.batch = 2;
  p.batch_stride_a = 200 * 64;
  p.batch_stride_b = 304 * 64 + 4;  // 8 bytes over
  expect("row B batch_stride + 8 bytes", p, true);
}

// --quick: the small cases only (for compute-sanitizer).
int main(int argc, char** argv) {
  const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  if (argc > 2 && strcmp(argv[1], "--only") == 0) g_only = argv[2];
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

  using bf16 = __nv_bfloat16;
  using kdl::Sm90Schedule;
  constexpr Sm90Schedule Coop = Sm90Schedule::Cooperative, Pp = Sm90Schedule::Pingpong;
  refusals<Config<bf16, bf16, 128, 128, 4>::G>(2);

  // cooperative
  run_config_t<bf16, bf16, Config<bf16, bf16, 128, 128, 5>>(true, quick);
  run_config_t<bf16, bf16, Config<bf16, bf16, 128, 256, 4, Coop, 1, 1, false, true>>(true, quick);
  run_config_t<half, half, Config<half, half, 128, 128, 5>>(false, quick);
  run_config_t<half, half, Config<half, half, 128, 256, 4>>(false, quick);
  run_config_t<bf16, bf16, Config<bf16, bf16, 128, 256, 4, Coop, 2, 1>>(true, quick);
  run_config_t<bf16, bf16, Config<bf16, bf16, 256, 128, 4, Coop, 2, 1>>(false, quick);
  run_config_t<half, half, Config<half, half, 128, 128, 5, Coop, 2, 1>>(false, quick);
  run_config_t<bf16, bf16, Config<bf16, bf16, 256, 128, 4>>(true, quick);  // two m64 blocks, the held stage
  run_config_t<__nv_fp8_e4m3, __nv_fp8_e4m3, Config<__nv_fp8_e4m3, __nv_fp8_e4m3, 256, 128, 4>>(false, quick);
  // pingpong
  run_config_t<bf16, bf16, Config<bf16, bf16, 128, 128, 5, Pp, 1, 1, false, true>>(true, quick);
  run_config_t<bf16, bf16, Config<bf16, bf16, 64, 256, 5, Pp>>(false, quick);
  run_config_t<half, half, Config<half, half, 64, 128, 6, Pp>>(false, quick);
  run_config_t<bf16, bf16, Config<bf16, bf16, 128, 128, 5, Pp, 2, 1>>(false, quick);
  // clusters along N, 2 x 2, raster along M
  run_config_t<bf16, bf16, Config<bf16, bf16, 128, 256, 4, Coop, 1, 2>>(true, quick);
  run_config_t<bf16, bf16, Config<bf16, bf16, 128, 128, 5, Coop, 2, 2, false, true>>(false, quick);
  run_config_t<bf16, bf16, Config<bf16, bf16, 128, 128, 5, Pp, 1, 2, true>>(false, quick);
  run_config_t<bf16, bf16, Config<bf16, bf16, 128, 256, 4, Coop, 1, 1, true>>(false, quick);

  // fp8 (TileK 128), bf16 D
  using e4m3 = __nv_fp8_e4m3;
  using e5m2 = __nv_fp8_e5m2;
  refusals<Config<e4m3, e4m3, 128, 128, 4>::G>(1);
  refusals<Config<e4m3, e4m3, 128, 128, 5, Coop, 1, 1, false, true, 0, kdl::sm90::BlockScaling<1, 128, 128>>::G>(1);
  run_config_t<e4m3, e4m3, Config<e4m3, e4m3, 128, 256, 4, Coop, 1, 1, false, true>>(true, quick);
  run_config_t<e4m3, e5m2, Config<e4m3, e5m2, 128, 128, 5>>(false, quick);
  run_config_t<e5m2, e4m3, Config<e5m2, e4m3, 64, 256, 5, Pp>>(false, quick);
  run_config_t<e5m2, e5m2, Config<e5m2, e5m2, 128, 128, 5, Coop, 2, 2>>(false, quick);
  // fp8 promotion every N k-tiles, and DeepGEMM-style block scales (1 x 128 of A, 128 x 128 of B)
  using BS = kdl::sm90::BlockScaling<1, 128, 128>;
  run_config_t<e4m3, e4m3, Config<e4m3, e4m3, 128, 128, 5, Coop, 1, 1, false, false, 2>>(false, quick);
  run_config_t<e4m3, e4m3, Config<e4m3, e4m3, 128, 128, 5, Coop, 1, 1, false, true, 0, BS>>(true, quick);
  run_config_t<e4m3, e5m2, Config<e4m3, e5m2, 64, 128, 6, Pp, 1, 2, false, true, 0, BS>>(false, quick);
  run_config_t<e4m3, e4m3, Config<e4m3, e4m3, 128, 128, 5, Coop, 2, 1, false, false, 0, kdl::sm90::BlockScaling<128, 128, 128>>>(
      false, quick);

  // f16 / bf16 MN-major operands (A column-major, B row-major): TMA boxes of 64 columns; cluster
  // slices of whole 64-column blocks, or of K rows for a 64-wide tile.
  using Row = kdl::RowMajor;
  using Col = kdl::ColMajor;
  refusals_mn_major<LConfig<Col, Row, bf16, 128, 128, 5, Coop>::G>();
  run_config_t<bf16, bf16, LConfig<Col, Col, bf16, 128, 128, 5, Coop>>(true, quick);
  run_config_t<bf16, bf16, LConfig<Row, Row, bf16, 128, 256, 4, Coop, 2, 1>>(true, quick);
  run_config_t<bf16, bf16, LConfig<Col, Row, bf16, 64, 128, 6, Pp, 1, 2, true>>(true, quick);
  run_config_t<half, half, LConfig<Col, Row, half, 128, 128, 5, Coop, 2, 2>>(false, quick);
  run_config_t<half, half, LConfig<Row, Row, half, 128, 64, 6, Pp, 2, 1>>(false, quick);
  run_config_t<half, half, LConfig<Col, Col, half, 256, 128, 4, Coop>>(false, quick);

  // tf32 (float operands, TileK 32), f32 D
  refusals<Config<float, float, 128, 128, 4>::G>(4);
  run_config_t<float, float, Config<float, float, 128, 128, 5, Coop, 1, 1, false, true>>(true, quick);
  run_config_t<float, float, Config<float, float, 128, 256, 4, Coop, 2, 1>>(false, quick);
  run_config_t<float, float, Config<float, float, 64, 256, 5, Pp, 1, 2>>(false, quick);

  // s8 / u8 (TileK 128), s32 accumulation, f32 D
  refusals<Config<int8_t, int8_t, 128, 128, 4>::G>(1);
  run_config_t<int8_t, int8_t, Config<int8_t, int8_t, 128, 256, 4, Coop, 1, 1, false, true>>(true, quick);
  run_config_t<uint8_t, int8_t, Config<uint8_t, int8_t, 128, 128, 5, Pp, 1, 2>>(false, quick);
  run_config_t<int8_t, uint8_t, Config<int8_t, uint8_t, 128, 128, 5, Coop, 2, 1>>(false, quick);
  run_config_t<uint8_t, uint8_t, Config<uint8_t, uint8_t, 256, 128, 4, Coop>>(false, quick);

  printf("%d passed, %d failed\n", g_pass, g_fail);
  cudaFree(g_lt_ws);
  cublasLtDestroy(g_lt);
  return g_fail == 0 ? 0 : 1;
}
