// The shared body of the standalone correctness tests (test_gemm_sm80.cu, test_gemm_sm80_tma.cu):
// run_case() and its host helpers -- fp64 GPU reference over the same quantised operands, epilogue
// math and output rounding reproduced on the host, writes outside D checked.
#pragma once
#include "common.cuh"
#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <type_traits>

using kdl::RowMajor;
using kdl::ColMajor;
using bf16 = __nv_bfloat16;

static std::mt19937_64 g_rng(12345);
static int g_fail = 0, g_pass = 0;

// ---------------- host conversions mirroring kdl::convert_out ----------------
template <class T> T host_from_float(float x);
template <> float host_from_float<float>(float x) { return x; }
template <> half host_from_float<half>(float x) { return __float2half_rn(x); }
template <> bf16 host_from_float<bf16>(float x) { return __float2bfloat16_rn(x); }
template <> __nv_fp8_e4m3 host_from_float<__nv_fp8_e4m3>(float x) { __nv_fp8_e4m3 r; r.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); return r; }
template <> __nv_fp8_e5m2 host_from_float<__nv_fp8_e5m2>(float x) { __nv_fp8_e5m2 r; r.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2); return r; }
static long long sat_rint(float x, long long lo, long long hi) {
  if (std::isnan(x)) return 0;
  double r = std::nearbyint((double)x);
  return (long long)std::min<double>(std::max<double>(r, (double)lo), (double)hi);
}
template <> int8_t host_from_float<int8_t>(float x) { return (int8_t)sat_rint(x, -128, 127); }
template <> uint8_t host_from_float<uint8_t>(float x) { return (uint8_t)sat_rint(x, 0, 255); }
template <> int32_t host_from_float<int32_t>(float x) { return (int32_t)sat_rint(x, INT32_MIN, INT32_MAX); }
template <class T> float host_to_float(T x) { return (float)x; }
template <> float host_to_float<half>(half x) { return __half2float(x); }
template <> float host_to_float<bf16>(bf16 x) { return __bfloat162float(x); }
template <class T> bool is_intt() { return false; }
template <> bool is_intt<int8_t>() { return true; }
template <> bool is_intt<uint8_t>() { return true; }
template <> bool is_intt<int32_t>() { return true; }
template <class T> double out_tol() { return 1e-2; }
template <> double out_tol<float>() { return 2e-3; }
template <> double out_tol<half>() { return 3e-3; }
template <> double out_tol<__nv_fp8_e4m3>() { return 8e-2; }
template <> double out_tol<__nv_fp8_e5m2>() { return 1.5e-1; }

// ---------------- fp64 reference GEMM ----------------
__global__ void ref_gemm(const float* A, int64_t sam, int64_t sak, int64_t sab, const float* B, int64_t sbk,
                         int64_t sbn, int64_t sbb, double* R, int M, int N, int K, int batch) {
  int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y, b = blockIdx.z;
  if (n >= N) return;
  double s = 0;
  for (int k = 0; k < K; ++k) s += (double)A[b * sab + m * sam + k * sak] * (double)B[b * sbb + k * sbk + n * sbn];
  R[((int64_t)b * M + m) * N + n] = s;
}

template <class T> float gen_val(std::mt19937_64& r) {
  if (is_intt<T>()) return (float)((int)(r() % 17) - 8);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  return u(r);
}

struct Case {
  int m, n, k, batch, split;
  int pad_a = 0, pad_b = 0, pad_d = 0;  // extra leading-dimension elements
  float alpha = 1.f, beta = 0.f;
  bool bias = false, rowb = false, use_c = false, alpha_dev = false;
  int act = 0;
  bool amax = false;
  int offset_d = 0;  // misalign D by this many elements
};

template <class Gemm, class TIn, class LA, class LB, class TOut>
void run_case(const char* name, const Case& cs,
              const std::function<void(const kdl::GemmProblem&)>& inspect = {}) {  // sees the problem run() gets
  using Ep = TestEpilogue<TOut, TOut>;
  const int M = cs.m, N = cs.n, K = cs.k, Bt = cs.batch;
  constexpr bool a_row = std::is_same<LA, RowMajor>::value, b_row = std::is_same<LB, RowMajor>::value;
  // A(m,k): row -> m*lda + k ; col -> k*lda + m.  B(k,n): row -> k*ldb + n ; col -> n*ldb + k
  auto rup = [](int64_t x) { return (x + 15) / 16 * 16; };  // keeps every tested alignment legal
  const int64_t lda = rup((a_row ? K : M) + cs.pad_a), ldb = rup((b_row ? N : K) + cs.pad_b);
  const int64_t sizeA = (a_row ? (int64_t)M * lda : (int64_t)K * lda), sizeB = (b_row ? (int64_t)K * ldb : (int64_t)N * ldb);
  const int64_t bsA = sizeA + 8 * 16, bsB = sizeB + 8 * 16;  // keeps 16B alignment with 1..2 byte types
  const int64_t ldd = N + cs.pad_d, bsD = (int64_t)M * ldd + 64;
  std::vector<TIn> hA(bsA * Bt), hB(bsB * Bt);
  std::vector<float> fA(bsA * Bt), fB(bsB * Bt);
  for (size_t i = 0; i < hA.size(); ++i) { float v = gen_val<TIn>(g_rng); hA[i] = host_from_float<TIn>(v); fA[i] = host_to_float(hA[i]); }
  for (size_t i = 0; i < hB.size(); ++i) { float v = gen_val<TIn>(g_rng); hB[i] = host_from_float<TIn>(v); fB[i] = host_to_float(hB[i]); }
  std::vector<TOut> hC(bsD * Bt);
  for (auto& x : hC) x = host_from_float<TOut>(gen_val<TOut>(g_rng));
  std::vector<float> hbias((size_t)N * Bt), hrow(M);
  for (auto& x : hbias) x = gen_val<float>(g_rng);
  for (auto& x : hrow) x = gen_val<float>(g_rng);
  float alpha_dev_val = 0.5f;

  TIn *dA, *dB; float *dfA, *dfB, *dbias, *drow, *damax, *dalpha; double* dR; TOut *dC, *dDbuf;
  CK(cudaMalloc(&dA, hA.size() * sizeof(TIn))); CK(cudaMalloc(&dB, hB.size() * sizeof(TIn)));
  CK(cudaMalloc(&dfA, fA.size() * 4)); CK(cudaMalloc(&dfB, fB.size() * 4));
  CK(cudaMalloc(&dR, (size_t)Bt * M * N * 8));
  CK(cudaMalloc(&dC, hC.size() * sizeof(TOut))); CK(cudaMalloc(&dDbuf, (hC.size() + 64) * sizeof(TOut)));
  CK(cudaMalloc(&dbias, hbias.size() * 4)); CK(cudaMalloc(&drow, hrow.size() * 4));
  CK(cudaMalloc(&damax, 4)); CK(cudaMalloc(&dalpha, 4));
  TOut* dD = dDbuf + cs.offset_d;
  CK(cudaMemcpy(dA, hA.data(), hA.size() * sizeof(TIn), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, hB.data(), hB.size() * sizeof(TIn), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dfA, fA.data(), fA.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dfB, fB.data(), fB.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dC, hC.data(), hC.size() * sizeof(TOut), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dbias, hbias.data(), hbias.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(drow, hrow.data(), hrow.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dalpha, &alpha_dev_val, 4, cudaMemcpyHostToDevice));
  ref_gemm<<<dim3((N + 127) / 128, M, Bt), 128>>>(dfA, a_row ? lda : 1, a_row ? 1 : lda, bsA, dfB, b_row ? ldb : 1,
                                                  b_row ? 1 : ldb, bsB, dR, M, N, K, Bt);
  CK(cudaGetLastError());

  kdl::GemmProblem p{M, N, K, Bt, dA, lda, bsA, dB, ldb, bsB, cs.split};
  typename Ep::Params ep{dD, ldd, bsD, cs.use_c ? dC : nullptr, ldd, bsD, cs.bias ? dbias : nullptr, (int64_t)N,
                         cs.rowb ? drow : nullptr, cs.alpha_dev ? dalpha : nullptr, cs.alpha, cs.beta, cs.act,
                         cs.amax ? damax : nullptr};
  const char* why = Gemm::can_implement(p);
  if (why) { printf("FAIL %-34s can_implement: %s\n", name, why); ++g_fail; return; }
  if (inspect) inspect(p);
  size_t ws_bytes = Gemm::workspace_size(p);
  void* ws = nullptr;
  if (ws_bytes) { CK(cudaMalloc(&ws, ws_bytes)); CK(cudaMemset(ws, 0x5a, ws_bytes)); }  // garbage: run() must cope
  std::vector<double> hR((size_t)Bt * M * N);
  CK(cudaMemcpy(hR.data(), dR, hR.size() * 8, cudaMemcpyDeviceToHost));
  bool ok = true;
  double worst = 0; std::string what;
  for (int rep = 0; rep < 2 && ok; ++rep) {  // twice: workspace reuse, fresh poison
    CK(cudaMemset(dDbuf, 0xff, (hC.size() + 64) * sizeof(TOut)));
    CK(cudaMemset(damax, 0, 4));
    CK(Gemm::run(p, ep, ws, 0));
    CK(cudaDeviceSynchronize());
    std::vector<TOut> hD(hC.size() + 64);
    CK(cudaMemcpy(hD.data(), dDbuf, hD.size() * sizeof(TOut), cudaMemcpyDeviceToHost));
    float gamax = 0; CK(cudaMemcpy(&gamax, damax, 4, cudaMemcpyDeviceToHost));
    double num = 0, den = 0, ramax = 0; long long bad = 0, untouched_bad = 0;
    for (int b = 0; b < Bt; ++b)
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
          double acc = hR[((size_t)b * M + m) * N + n];
          float x = (float)((cs.alpha_dev ? cs.alpha * alpha_dev_val : cs.alpha) * acc);
          x += cs.use_c ? cs.beta * host_to_float(hC[b * bsD + (int64_t)m * ldd + n]) : 0.f;
          x += (cs.bias ? hbias[(size_t)b * N + n] : 0.f) + (cs.rowb ? hrow[m] : 0.f);
          if (cs.act == 1) x = 0.5f * x * (1.f + erff(x * 0.70710678f));
          else if (cs.act == 2) x = x < 0 ? 0 : x;
          ramax = std::max(ramax, (double)fabsf(x));
          double e = host_to_float(host_from_float<TOut>(x));
          double o = host_to_float(hD[cs.offset_d + b * bsD + (int64_t)m * ldd + n]);
          if (std::isnan(o)) { ++bad; continue; }
          if (is_intt<TOut>() && o != e) ++bad;
          num += (o - e) * (o - e); den += e * e;
        }
    // elements outside the output (padding / batch gap / leading offset) must stay poisoned
    for (int b = 0; b < Bt; ++b)
      for (int m = 0; m < M; ++m)
        for (int n = N; n < ldd; ++n) {
          TOut v = hD[cs.offset_d + b * bsD + (int64_t)m * ldd + n];
          unsigned char c0; memcpy(&c0, &v, 1);
          if (c0 != 0xff) ++untouched_bad;
        }
    double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    worst = std::max(worst, rel);
    if (bad || untouched_bad || rel > out_tol<TOut>()) {
      ok = false;
      char buf[160]; snprintf(buf, sizeof buf, "rep %d: rel %.3g, %lld bad/NaN, %lld writes outside", rep, rel, bad, untouched_bad);
      what = buf;
    }
    if (cs.amax && fabs(gamax - ramax) > 1e-2 * ramax + 1e-6) {
      ok = false;
      char buf[160]; snprintf(buf, sizeof buf, "amax %.6g vs ref %.6g", gamax, ramax); what = buf;
    }
  }
  printf("%s %-34s m=%d n=%d k=%d b=%d split=%d  rel=%.2e %s\n", ok ? "ok  " : "FAIL", name, M, N, K, Bt, cs.split, worst, what.c_str());
  ok ? ++g_pass : ++g_fail;
  cudaFree(dA); cudaFree(dB); cudaFree(dfA); cudaFree(dfB); cudaFree(dR); cudaFree(dC); cudaFree(dDbuf);
  cudaFree(dbias); cudaFree(drow); cudaFree(damax); cudaFree(dalpha); if (ws) cudaFree(ws);
}
