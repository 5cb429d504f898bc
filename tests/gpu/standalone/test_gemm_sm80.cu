// Correctness test for kdl::GemmSm80 (hand-written epilogues shaped like generated ones).
// Reference: fp64 naive GEMM on the GPU over the same (already quantised) operands;
// epilogue math and output rounding reproduced on the host.
#include "common.cuh"
#include <random>
#include <algorithm>
#include <string>
#include <type_traits>

#include "gemm_case.cuh"

template <class TIn, class LA, int AA, class LB, int AB, class Acc, int TM, int TN, int TK, int WM, int WN, int S, bool R, class TOut>
using G = kdl::GemmSm80<TIn, LA, AA, TIn, LB, AB, Acc, TM, TN, TK, WM, WN, S, R, TestEpilogue<TOut, TOut>>;

static Case mk(int m, int n, int k, int b = 1, int split = 1) { Case c; c.m = m; c.n = n; c.k = k; c.batch = b; c.split = split; return c; }

int main() {
  // ---- bf16 TN, the performance configuration ----
  using BF_TN = G<bf16, RowMajor, 8, ColMajor, 8, float, 128, 256, 32, 2, 4, 4, false, bf16>;
  run_case<BF_TN, bf16, RowMajor, ColMajor, bf16>("bf16 TN 128x256x32 s4", mk(1, 1, 8));
  run_case<BF_TN, bf16, RowMajor, ColMajor, bf16>("bf16 TN 128x256x32 s4", mk(7, 13, 24));
  run_case<BF_TN, bf16, RowMajor, ColMajor, bf16>("bf16 TN 128x256x32 s4", mk(127, 1000, 136, 2));
  run_case<BF_TN, bf16, RowMajor, ColMajor, bf16>("bf16 TN 128x256x32 s4", mk(1000, 1000, 1000));
  run_case<BF_TN, bf16, RowMajor, ColMajor, bf16>("bf16 TN 128x256x32 s4", mk(256, 512, 4096));
  { Case c = mk(300, 700, 2000, 3, 5); c.use_c = true; c.beta = 0.75f; c.alpha = 1.25f; c.bias = true; c.rowb = true; c.act = 1; c.amax = true;
    run_case<BF_TN, bf16, RowMajor, ColMajor, bf16>("bf16 TN splitk5 C+bias+gelu+amax", c); }
  { Case c = mk(129, 255, 104); c.pad_a = 4; c.pad_b = 12; c.pad_d = 3; c.use_c = true; c.beta = -1.f; c.alpha_dev = true;
    run_case<BF_TN, bf16, RowMajor, ColMajor, bf16>("bf16 TN K%TileK!=0, padded ld", c); }
  { Case c = mk(64, 40, 64); c.offset_d = 1; c.amax = true;
    run_case<BF_TN, bf16, RowMajor, ColMajor, bf16>("bf16 TN misaligned D", c); }
  using BF_TN_f32 = G<bf16, RowMajor, 8, ColMajor, 8, float, 128, 256, 32, 2, 4, 4, false, float>;
  using BF_TN_e4 = G<bf16, RowMajor, 8, ColMajor, 8, float, 128, 256, 32, 2, 4, 4, false, __nv_fp8_e4m3>;
  using BF_TN_e5 = G<bf16, RowMajor, 8, ColMajor, 8, float, 128, 256, 32, 2, 4, 4, false, __nv_fp8_e5m2>;
  { Case c = mk(100, 200, 512, 1, 16);
    run_case<BF_TN_f32, bf16, RowMajor, ColMajor, float>("bf16 TN -> f32 splitk16", c); }
  { Case c = mk(200, 96, 256); c.act = 2;
    run_case<BF_TN_e4, bf16, RowMajor, ColMajor, __nv_fp8_e4m3>("bf16 TN -> e4m3 relu", c); }
  { Case c = mk(65, 33, 128); c.alpha = 100.f;
    run_case<BF_TN_e5, bf16, RowMajor, ColMajor, __nv_fp8_e5m2>("bf16 TN -> e5m2 (saturating)", c); }
  using BF_TN_M = G<bf16, RowMajor, 8, ColMajor, 8, float, 128, 256, 64, 2, 4, 3, true, bf16>;
  run_case<BF_TN_M, bf16, RowMajor, ColMajor, bf16>("bf16 TN 128x256x64 s3 rasterM", mk(777, 1500, 448, 2));
  run_case<BF_TN_M, bf16, RowMajor, ColMajor, bf16>("bf16 TN 128x256x64 s3 rasterM", mk(1300, 300, 520, 1, 3));

  // ---- other layouts (bf16 / half) ----
  using BF_NN = G<bf16, ColMajor, 8, RowMajor, 8, float, 128, 256, 32, 2, 4, 4, false, bf16>;
  using BF_NT = G<bf16, ColMajor, 8, ColMajor, 8, float, 128, 256, 32, 2, 4, 4, false, bf16>;
  using BF_TT = G<bf16, RowMajor, 8, RowMajor, 8, float, 128, 256, 32, 2, 4, 4, false, bf16>;
  run_case<BF_NN, bf16, ColMajor, RowMajor, bf16>("bf16 A col B row", mk(1000, 1000, 1000));
  run_case<BF_NN, bf16, ColMajor, RowMajor, bf16>("bf16 A col B row", mk(7, 127, 40, 2, 2));
  run_case<BF_NT, bf16, ColMajor, ColMajor, bf16>("bf16 A col B col", mk(1000, 1000, 1000));
  run_case<BF_NT, bf16, ColMajor, ColMajor, bf16>("bf16 A col B col", mk(127, 1, 200, 1, 3));
  run_case<BF_TT, bf16, RowMajor, RowMajor, bf16>("bf16 A row B row", mk(1000, 1000, 1000));
  run_case<BF_TT, bf16, RowMajor, RowMajor, bf16>("bf16 A row B row", mk(1, 7, 64, 3));
  using H_TN2 = G<half, RowMajor, 2, ColMajor, 2, float, 64, 64, 64, 2, 2, 3, false, half>;
  using H_NN4 = G<half, ColMajor, 4, RowMajor, 2, float, 128, 128, 32, 2, 2, 5, true, half>;
  using H_NT = G<half, ColMajor, 8, ColMajor, 8, float, 64, 128, 32, 2, 2, 2, false, float>;
  using H_TT = G<half, RowMajor, 8, RowMajor, 4, float, 128, 64, 32, 2, 2, 8, false, half>;
  run_case<H_TN2, half, RowMajor, ColMajor, half>("half TN align2 64x64x64", mk(333, 255, 126, 2));
  run_case<H_TN2, half, RowMajor, ColMajor, half>("half TN align2 64x64x64", mk(1000, 1000, 1000, 1, 4));
  run_case<H_NN4, half, ColMajor, RowMajor, half>("half NN align4/2 s5", mk(1002, 999, 1000));
  run_case<H_NT, half, ColMajor, ColMajor, float>("half A col B col s2", mk(1000, 1000, 1000));
  run_case<H_TT, half, RowMajor, RowMajor, half>("half A row B row s8", mk(500, 1000, 1000, 1, 2));

  // ---- tf32 / s8, TN only ----
  using TF = G<float, RowMajor, 4, ColMajor, 4, float, 128, 128, 32, 2, 2, 4, false, float>;
  using TF1 = G<float, RowMajor, 1, ColMajor, 1, float, 64, 128, 16, 2, 2, 3, false, float>;
  run_case<TF, float, RowMajor, ColMajor, float>("tf32 TN align4", mk(1000, 1000, 1000));
  run_case<TF, float, RowMajor, ColMajor, float>("tf32 TN align4 splitk", mk(77, 130, 1000, 2, 3));
  run_case<TF1, float, RowMajor, ColMajor, float>("tf32 TN align1", mk(129, 65, 333));
  run_case<H_NN4, half, ColMajor, RowMajor, half>("half NN ragged K (MN-contig)", mk(37, 45, 77));
  using S8 = G<int8_t, RowMajor, 16, ColMajor, 16, int32_t, 128, 128, 64, 2, 2, 3, false, int32_t>;
  using S8o = G<int8_t, RowMajor, 4, ColMajor, 4, int32_t, 128, 256, 64, 2, 4, 4, false, int8_t>;
  run_case<S8, int8_t, RowMajor, ColMajor, int32_t>("s8 TN -> s32", mk(1000, 1000, 1008));
  run_case<S8, int8_t, RowMajor, ColMajor, int32_t>("s8 TN -> s32 splitk", mk(100, 300, 2048, 2, 7));
  { Case c = mk(300, 129, 512); c.alpha = 0.05f;
    run_case<S8o, int8_t, RowMajor, ColMajor, int8_t>("s8 TN -> s8 saturating align4", c); }
  { Case c = mk(64, 64, 256); c.alpha = 0.5f; c.use_c = true; c.beta = 1.f;
    run_case<S8o, int8_t, RowMajor, ColMajor, int8_t>("s8 TN -> s8 +C", c); }

  // ---- can_implement diagnostics ----
  {
    kdl::GemmProblem p{64, 64, 64, 1, (const void*)0x1002, 64, 0, (const void*)0x1000, 64, 0, 1};
    const char* w = BF_TN::can_implement(p);
    printf("%s can_implement(misaligned A): %s\n", w ? "ok  " : "FAIL", w ? w : "(accepted)"); w ? ++g_pass : ++g_fail;
    kdl::GemmProblem q{64, 64, 64, 1, (const void*)0x1000, 64, 0, (const void*)0x1000, 64, 0, 3};
    w = BF_TN::can_implement(q);
    printf("%s can_implement(split_k > k tiles): %s\n", w ? "ok  " : "FAIL", w ? w : "(accepted)"); w ? ++g_pass : ++g_fail;
    kdl::GemmProblem r{64, 64, 64, 1, (const void*)0x1000, 60, 0, (const void*)0x1000, 64, 0, 1};
    w = BF_TN::can_implement(r);
    printf("%s can_implement(lda %% align): %s\n", w ? "ok  " : "FAIL", w ? w : "(accepted)"); w ? ++g_pass : ++g_fail;
    kdl::GemmProblem t{64, 64, 60, 1, (const void*)0x1000, 64, 0, (const void*)0x1000, 64, 0, 1};
    w = BF_TN::can_implement(t);
    printf("%s can_implement(k %% align): %s\n", w ? "ok  " : "FAIL", w ? w : "(accepted)"); w ? ++g_pass : ++g_fail;
  }
  printf("\nRESULT: %d passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
