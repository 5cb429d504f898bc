// Correctness test for kdl::GemmSm80Tma (TMA-fed shared memory, ldmatrix + mma.sync math).
// run_case() and the host helpers are shared with test_gemm_sm80.cu (gemm_case.cuh).
// Each case also asks which path run() takes (GemmSm80Tma::uses_tma: TMA or the GemmSm80
// fallback) and fails when it is not the expected one.
#include "kdl/gemm_sm80_tma.cuh"
#include "common.cuh"
#include <random>
#include <algorithm>
#include <string>
#include <type_traits>

#include "gemm_case.cuh"

template <class TIn, int TM, int TN, int WM, int WN, int S, class TOut = TIn>
using T = kdl::GemmSm80Tma<TIn, RowMajor, 8, TIn, ColMajor, 8, float, TM, TN, 64, WM, WN, S, false, TestEpilogue<TOut, TOut>>;

static Case mk(int m, int n, int k, int b = 1, int split = 1) { Case c; c.m = m; c.n = n; c.k = k; c.batch = b; c.split = split; return c; }

template <class Gemm, class TIn, class TOut>
static void tcase(const char* name, const Case& c, bool expect_tma) {
  const int before = g_fail;
  bool used = false;
  run_case<Gemm, TIn, RowMajor, ColMajor, TOut>(name, c, [&](const kdl::GemmProblem& p) { used = Gemm::uses_tma(p); });
  if (used != expect_tma) {
    printf("FAIL %-34s path: %s, expected %s\n", name, used ? "TMA" : "GemmSm80 fallback", expect_tma ? "TMA" : "fallback");
    if (g_fail == before) { --g_pass; ++g_fail; }
  }
}

int main() {
  int dev = 0, major = 0; CK(cudaGetDevice(&dev)); CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  const bool hopper = major == 9;
  using B1 = T<bf16, 128, 256, 2, 4, 4>;
  using B2 = T<bf16, 256, 128, 4, 2, 3>;
  using H1 = T<half, 128, 256, 2, 4, 3>;
  using B1f = T<bf16, 128, 256, 2, 4, 4, float>;
  // odd sizes: M, N in {1, 7, 127, 1000}, K in {8, 64, 264}
  const int mn[4] = {1, 7, 127, 1000}, ks[3] = {8, 64, 264};
  for (int m : mn)
    for (int n : mn)
      for (int k : ks) tcase<B1, bf16, bf16>("tma bf16 128x256x64 s4", mk(m, n, k), hopper);
  for (int k : ks) {
    tcase<B2, bf16, bf16>("tma bf16 256x128x64 s3", mk(1000, 127, k), hopper);
    tcase<H1, half, half>("tma half 128x256x64 s3", mk(127, 1000, k), hopper);
  }
  // batched + full epilogue + padded ld
  { Case c = mk(300, 700, 2000, 3); c.use_c = true; c.beta = 0.75f; c.alpha = 1.25f; c.bias = true; c.rowb = true; c.act = 1; c.amax = true;
    tcase<B1, bf16, bf16>("tma batch3 C+bias+gelu+amax", c, hopper); }
  { Case c = mk(129, 255, 104, 2); c.pad_a = 4; c.pad_b = 12; c.pad_d = 3; c.use_c = true; c.beta = -1.f; c.alpha_dev = true;
    tcase<B2, bf16, bf16>("tma padded ld, batch2", c, hopper); }
  { Case c = mk(64, 40, 64); c.offset_d = 1; c.amax = true; tcase<B1, bf16, bf16>("tma misaligned D", c, hopper); }
  tcase<B1f, bf16, float>("tma bf16 -> f32", mk(1000, 1000, 1000), hopper);
  tcase<H1, half, half>("tma half batch2", mk(777, 1500, 448, 2), hopper);
  // large
  tcase<B1, bf16, bf16>("tma bf16 large", mk(2048, 2048, 2048), hopper);
  tcase<B2, bf16, bf16>("tma bf16 large", mk(1536, 2304, 4160), hopper);
  // fallbacks: split-K goes to GemmSm80
  tcase<B1, bf16, bf16>("tma split-K 3 -> fallback", mk(1300, 300, 520, 1, 3), false);
  { Case c = mk(300, 700, 2000, 3, 5); c.use_c = true; c.beta = 0.75f; c.bias = true; c.act = 1; c.amax = true;
    tcase<B2, bf16, bf16>("tma split-K 5 -> fallback", c, false); }
  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
