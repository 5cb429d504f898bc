// Per-tile timeline of the sm90a GEMM / conv fprop (docs/perf-notes.md v28). This file defines KDL_TRACE:
// the kernel's producer thread and thread 0 of each consumer warpgroup stamp clock64() at fixed points of
// every unit (kdl_trace in kdl/gemm_sm90.cuh); the driver runs each configuration and prints where the
// cycles between two tiles go (medians over the CTAs), and one CTA's units in full.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I include -I tests/gpu/standalone \
//        tests/gpu/standalone/trace_sm90.cu -lcublasLt -o trace_sm90 && ./trace_sm90 [ghc]
// Modes: g GEMM 4096^3 bf16 cooperative 128x256 s4, h GEMM 8192x1024x8192 the same, c conv fprop
// N32 C256 56x56 K256 cooperative 128x256 s4; with the CTAs' end times on the global timer (analyse_ctas) only:
// u the 1x1 cooperative 256x128 s4, p the 1x1 pingpong 128x128 s5, k K64 cooperative 256x64 s5, d K512 128x256 s4
// (with analyse too); with analyse_pp (perf-notes v50): q K512 and r the first shape on pingpong 128x128 s6
// (im2col), Q and R the same on the patch mainloop; with analyse: C (the first shape) and D (K512), cooperative
// 128x256 built with the patch (run() takes it with KDL_CONV_MAINLOOP=patch). The stamps cost a few tens of cycles
// each (read against a build without them, not as absolute time). With -DKDL_TRACE_WAITS also the barrier waits by
// k-tile: the consumers' full-barrier and the producer's empty-barrier waits (perf-notes v31; their atomics slow
// the producer).
#define KDL_TRACE 1
#define KDL_TEST_SM90 1
#define main kdl_bench_conv_main_unused
#include "bench_conv_sm80.cu"
#undef main
#include "bench_common.cuh"
#include <algorithm>
#include <initializer_list>

using Tr = unsigned long long[KDL_TRACE_CTAS][3][KDL_TRACE_UNITS][4];

template <class G>
static void gemm_launches(Bufs& b, int M, int N, int K, int n) {
  kdl::GemmProblem p{M, N, K, 1, b.A, K, 0, b.B, K, 0, 1};
  StoreEpilogue<bf16>::Params ep{b.D, N, 0, 1.f};
  if (const char* why = G::can_implement(p)) { fprintf(stderr, "trace: %s\n", why); exit(2); }
  for (int i = 0; i < n; ++i) CK(G::run(p, ep, nullptr, 0));
  CK(cudaDeviceSynchronize());
}

static double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
static double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}

// With KDL_TRACE_WAITS: the barrier waits by k-tile over every launch's units, for each role asked (0, 1: the
// consumers' full-barrier waits, 2: the producer's empty-barrier waits); nothing otherwise.
static void print_waits(std::initializer_list<int> roles) {
#ifdef KDL_TRACE_WAITS
  static unsigned long long wt[KDL_TRACE_CTAS][3][2][128];
  CK(cudaMemcpyFromSymbol(wt, kdl_trace_wait, sizeof(wt)));
  for (int role : roles) {
    double tot = 0;
    printf("  %s waits by k-tile (mean cycles per unit):", role == 2 ? "producer empty" : role ? "consumer 1 full" : "consumer 0 full");
    for (int k = 0; k < 128; ++k) {
      double c = 0, n = 0;
      for (int b = 0; b < KDL_TRACE_CTAS; ++b) c += double(wt[b][role][0][k]), n += double(wt[b][role][1][k]);
      if (n == 0) continue;
      tot += c / n;
      printf("%s%d:%.0f", k % 12 ? " " : "\n   ", k, c / n);
    }
    printf("\n   total %.0f cycles per unit\n", tot);
  }
#else
  (void)roles;
#endif
}

static void analyse(const char* what) {
  static Tr t;
  CK(cudaMemcpyFromSymbol(t, kdl_trace, sizeof(t)));
  std::vector<double> ml[2], epi[2], w1[2], top[2], idle, skew, period, total, idle_sum, pwait, plead;
  for (int b = 0; b < KDL_TRACE_CTAS; ++b) {
    int n = 0;
    while (n < KDL_TRACE_UNITS && t[b][0][n][3] != 0) ++n;
    if (n < 2) continue;
    double isum = 0;
    for (int j = 0; j < n; ++j)
      for (int c = 0; c < 2; ++c) {
        auto& e = t[b][c][j];
        ml[c].push_back(double(e[2] - e[1]));
        epi[c].push_back(double(e[3] - e[2]));
        if (j > 0) w1[c].push_back(double(e[1] - e[0]));
        if (j + 1 < n) top[c].push_back(double(t[b][c][j + 1][0] - e[3]));
      }
    for (int j = 0; j + 1 < n; ++j) {
      const double last = double(std::max(t[b][0][j][2], t[b][1][j][2]));
      const double next = double(std::min(t[b][0][j + 1][1], t[b][1][j + 1][1]));
      idle.push_back(next - last);
      isum += next - last;
      skew.push_back(double((long long)(t[b][1][j][2] - t[b][0][j][2])));
      period.push_back(double(t[b][0][j + 1][0] - t[b][0][j][0]));
      if (t[b][2][j + 1][1]) {
        pwait.push_back(double(t[b][2][j + 1][1] - t[b][2][j + 1][0]));
        plead.push_back(double((long long)(t[b][0][j][2] - t[b][2][j + 1][1])));  // first load of j+1 before j's end
      }
    }
    const double tot = double(t[b][0][n - 1][3] - t[b][0][0][0]);
    total.push_back(tot);
    idle_sum.push_back(isum / tot);
  }
  printf("%s: %zu CTAs traced\n", what, total.size());
  {
    std::vector<double> tt = total;  // per-CTA spans (one SM's clock each: not comparable across CTAs in time)
    std::sort(tt.begin(), tt.end());
    if (!tt.empty())
      printf("  per CTA span: min %.0f / median %.0f / 90%% %.0f / max %.0f cycles\n", tt.front(), tt[tt.size() / 2],
             tt[tt.size() * 9 / 10], tt.back());
  }
  printf("  per CTA: total %.0f cycles (median), gaps between tiles' tensor work %.2f %% of it (median)\n", median(total),
         100 * median(idle_sum));
  for (int c = 0; c < 2; ++c)
    printf("  consumer %d: mainloop %.0f / %.0f, epilogue %.0f / %.0f, epilogue end -> next unit %.0f / %.0f, "
           "unit top -> first stage ready %.0f / %.0f (median / mean cycles)\n",
           c, median(ml[c]), mean(ml[c]), median(epi[c]), mean(epi[c]), median(top[c]), mean(top[c]), median(w1[c]),
           mean(w1[c]));
  printf("  tile gap (both consumers' last wgmma done -> first next wgmma) %.0f / %.0f, consumer 1 - 0 end skew %.0f / %.0f, "
         "unit period %.0f / %.0f\n",
         median(idle), mean(idle), median(skew), mean(skew), median(period), mean(period));
  if (!pwait.empty())
    printf("  producer: next unit's first empty wait %.0f / %.0f; its first load issued %.0f / %.0f cycles before this unit's "
           "mainloop end\n",
           median(pwait), mean(pwait), median(plead), mean(plead));
  print_waits({0, 2});
  // one CTA's units in full
  const int b = 7;
  printf("  CTA %d: unit: [c0 top, ready, ml end, epi end] [c1 ...] relative to c0's first top\n", b);
  const unsigned long long z = t[b][0][0][0];
  for (int j = 0; j < KDL_TRACE_UNITS && t[b][0][j][3]; ++j)
    printf("    %2d: [%7lld %7lld %7lld %7lld] [%7lld %7lld %7lld %7lld] producer [%7lld %7lld %7lld]\n", j,
           (long long)(t[b][0][j][0] - z), (long long)(t[b][0][j][1] - z), (long long)(t[b][0][j][2] - z),
           (long long)(t[b][0][j][3] - z), (long long)(t[b][1][j][0] - z), (long long)(t[b][1][j][1] - z),
           (long long)(t[b][1][j][2] - z), (long long)(t[b][1][j][3] - z),
           t[b][2][j][0] ? (long long)(t[b][2][j][0] - z) : 0LL, t[b][2][j][1] ? (long long)(t[b][2][j][1] - z) : 0LL,
           t[b][2][j][2] ? (long long)(t[b][2][j][2] - z) : 0LL);
}

// A pingpong kernel's units: consumer c runs the CTA's units c, c + 2, ...; unit j's stamps are t[b][j % 2][j]. The
// tensor pipe's handoff: unit j's mainloop end (its last wgmma done) against unit j + 1's first stage ready (the other
// consumer, which may issue once unit j's last k-tile is issued: negative = overlapped).
static void analyse_pp(const char* what) {
  static Tr t;
  CK(cudaMemcpyFromSymbol(t, kdl_trace, sizeof(t)));
  std::vector<double> ml, epi, ready, handoff, period, total;
  for (int b = 0; b < KDL_TRACE_CTAS; ++b) {
    int n = 0;
    while (n < KDL_TRACE_UNITS && t[b][n % 2][n][3] != 0) ++n;
    if (n < 3) continue;
    for (int j = 0; j < n; ++j) {
      auto& e = t[b][j % 2][j];
      ml.push_back(double(e[2] - e[1]));
      epi.push_back(double(e[3] - e[2]));
      if (j > 1) ready.push_back(double(e[1] - e[0]));
      if (j + 1 < n) {
        handoff.push_back(double((long long)(t[b][(j + 1) % 2][j + 1][1] - e[2])));
        period.push_back(double(t[b][(j + 1) % 2][j + 1][2] - e[2]));
      }
    }
    total.push_back(double(t[b][(n - 1) % 2][n - 1][3] - t[b][0][0][0]));
  }
  printf("%s: %zu CTAs traced (pingpong)\n", what, total.size());
  printf("  per CTA total %.0f cycles (median)\n", median(total));
  printf("  unit: mainloop (first stage ready -> last wgmma done) %.0f / %.0f, epilogue %.0f / %.0f, unit top -> first stage "
         "ready %.0f / %.0f (median / mean cycles)\n", median(ml), mean(ml), median(epi), mean(epi), median(ready), mean(ready));
  printf("  handoff (next unit's first stage ready - this unit's last wgmma done) %.0f / %.0f; mainloop end to the next "
         "unit's mainloop end %.0f / %.0f\n", median(handoff), mean(handoff), median(period), mean(period));
  {  // one CTA's units in full: the consumer's four stamps and the producer's three (unit top, first load, last load)
    const int b = 7;
    const unsigned long long z = t[b][0][0][0];
    printf("  CTA %d: unit (consumer): [top, ready, ml end, epi end] producer [top, first load, last load], cycles from "
           "unit 0's top\n", b);
    for (int j = 0; j < KDL_TRACE_UNITS && t[b][j % 2][j][3]; ++j) {
      auto& e = t[b][j % 2][j];
      auto& q = t[b][2][j];
      printf("    %2d (c%d): [%7lld %7lld %7lld %7lld] producer [%7lld %7lld %7lld]\n", j, j % 2, (long long)(e[0] - z),
             (long long)(e[1] - z), (long long)(e[2] - z), (long long)(e[3] - z), q[0] ? (long long)(q[0] - z) : 0LL,
             q[1] ? (long long)(q[1] - z) : 0LL, q[2] ? (long long)(q[2] - z) : 0LL);
    }
  }
  print_waits({0, 1, 2});
}

// The last launch's CTAs on the global timer: when each ended after the kernel's first start, by SM (and how many
// units it walked): a CTA that ends early left its SM idle for the rest of the launch.
static void analyse_ctas(const char* what) {
  static unsigned long long c[KDL_TRACE_CTAS][4];
  CK(cudaMemcpyFromSymbol(c, kdl_trace_cta, sizeof(c)));
  unsigned long long t0 = ~0ull, t1 = 0;
  int n = 0;
  for (int b = 0; b < KDL_TRACE_CTAS; ++b)
    if (c[b][1]) {
      t0 = std::min(t0, c[b][0]);
      t1 = std::max(t1, c[b][1]);
      ++n;
    }
  if (!n) return;
  std::vector<double> ends;
  std::vector<std::pair<int, double>> by_sm;
  double busy = 0, last_start = 0;
  for (int b = 0; b < KDL_TRACE_CTAS; ++b)
    if (c[b][1]) {
      ends.push_back(double(c[b][1] - t0) / 1e3);
      last_start = std::max(last_start, double(c[b][0] - t0) / 1e3);
      by_sm.push_back({int(c[b][2]), double(c[b][1] - t0) / 1e3});
      busy += double(c[b][1] - c[b][0]);
    }
  std::sort(ends.begin(), ends.end());
  std::sort(by_sm.begin(), by_sm.end());
  printf("%s: %d CTAs; kernel %.2f us; CTA starts: max %.2f us; CTA ends: min %.2f / 10%% %.2f / median %.2f / 90%% %.2f / "
         "max %.2f us; SMs busy %.1f %% of (CTAs x kernel)\n",
         what, n, double(t1 - t0) / 1e3, last_start, ends.front(), ends[n / 10], ends[n / 2], ends[n * 9 / 10], ends.back(),
         100.0 * busy / (double(n) * double(t1 - t0)));
  printf("  end (us) by SM:");
  for (size_t i = 0; i < by_sm.size(); ++i) printf("%s%d:%.1f", i % 12 ? " " : "\n   ", by_sm[i].first, by_sm[i].second);
  printf("\n  units by CTA (first 16):");
  for (int b = 0; b < 16 && b < KDL_TRACE_CTAS; ++b) printf(" %llu", c[b][3]);
  printf("\n");
}

int main(int argc, char** argv) {
  const char* modes = argc > 1 ? argv[1] : "ghc";
  using Coop = kdl::GemmSm90<bf16, kdl::RowMajor, bf16, kdl::ColMajor, float, 128, 256, 64, 4,
                             kdl::Sm90Schedule::Cooperative, 1, 1, false, 0, kdl::sm90::NoBlockScaling, StoreEpilogue<bf16>>;
  for (const char* m = modes; *m; ++m) {
    static Tr zero;
    CK(cudaMemcpyToSymbol(kdl_trace, zero, sizeof(zero)));
#ifdef KDL_TRACE_WAITS
    {
      static unsigned long long wz[KDL_TRACE_CTAS][3][2][128];
      CK(cudaMemcpyToSymbol(kdl_trace_wait, wz, sizeof(wz)));
    }
#endif
    if (*m == 'g' || *m == 'h') {
      const int M = *m == 'g' ? 4096 : 8192, N = *m == 'g' ? 4096 : 1024, K = *m == 'g' ? 4096 : 8192;
      Bufs b = bench_setup({{M, N, K}}, 64u << 20);
      gemm_launches<Coop>(b, M, N, K, 20);
      analyse(*m == 'g' ? "GEMM 4096^3 coop 128x256 s4" : "GEMM 8192x1024x8192 coop 128x256 s4");
      analyse_ctas(*m == 'g' ? "GEMM 4096^3 coop 128x256 s4" : "GEMM 8192x1024x8192 coop 128x256 s4");
    } else if (*m == 'c') {
      const Shape s{"N32 C256 56x56 K256 3x3", 32, 256, 56, 56, 256, 3, 3, 1};
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, kdl::Sm90Schedule::Cooperative, 3, 3, 1, 1,
                                 StoreEpilogue<__nv_bfloat16>>>("coop 128x256 s4", ConvKind::Fprop, s);
      analyse("conv fprop N32 C256 56x56 K256 coop 128x256 s4");
      analyse_ctas("conv fprop N32 C256 56x56 K256 coop 128x256 s4");
    } else if (*m == 'q' || *m == 'r' || *m == 'Q' || *m == 'R' || *m == 'C' || *m == 'D') {
      // The 3x3 shapes on pingpong 128 x 128 s6, im2col (q K512, r the first shape) and the patch mainloop (Q, R: run()
      // takes it for pingpong tiles), and cooperative 128 x 256 built with the patch (C the first shape, D K512: run()
      // takes it with KDL_CONV_MAINLOOP=patch, else im2col).
      using E = StoreEpilogue<__nv_bfloat16>;
      constexpr auto Pp = kdl::Sm90Schedule::Pingpong, Co = kdl::Sm90Schedule::Cooperative;
      const bool k512 = *m == 'q' || *m == 'Q' || *m == 'D';
      const Shape s = k512 ? Shape{"N32 C512 28x28 K512 3x3", 32, 512, 28, 28, 512, 3, 3, 1}
                           : Shape{"N32 C256 56x56 K256 3x3", 32, 256, 56, 56, 256, 3, 3, 1};
      const char* what = *m == 'q' ? "conv K512 pingpong 128x128 s6 im2col" : *m == 'r' ? "conv first shape pingpong 128x128 s6 im2col"
                         : *m == 'Q' ? "conv K512 pingpong 128x128 s6 patch" : *m == 'R' ? "conv first shape pingpong 128x128 s6 patch"
                         : *m == 'C' ? "conv first shape coop 128x256 (patch build)" : "conv K512 coop 128x256 (patch build)";
      if (*m == 'q' || *m == 'r') {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Pp, 3, 3, 1, 1, E>>("pp 128x128 s6", ConvKind::Fprop, s);
        analyse_pp(what);
      } else if (*m == 'Q' || *m == 'R') {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Pp, 3, 3, 1, 1, E, true, 1, 1, true>>("pp 128x128 s6 patch",
                                                                                                    ConvKind::Fprop, s);
        analyse_pp(what);
      } else {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Co, 3, 3, 1, 1, E, true, 1, 1, true>>("coop 128x256 patch b",
                                                                                                     ConvKind::Fprop, s);
        analyse(what);
      }
      analyse_ctas(what);
    } else if (*m == 'u' || *m == 'p' || *m == 'k' || *m == 'd') {
      using E = StoreEpilogue<__nv_bfloat16>;
      constexpr auto Co = kdl::Sm90Schedule::Cooperative, Pp = kdl::Sm90Schedule::Pingpong;
      const Shape one{"N64 C128 112x112 K128 1x1", 64, 128, 112, 112, 128, 1, 1, 0};
      const Shape k64{"N128 C64 56x56 K64 3x3", 128, 64, 56, 56, 64, 3, 3, 1};
      const Shape big{"N32 C512 28x28 K512 3x3", 32, 512, 28, 28, 512, 3, 3, 1};
      if (*m == 'u') {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 1, 1, 0, 0, E>>("coop 256x128 s4", ConvKind::Fprop, one);
        analyse_ctas("conv 1x1 coop 256x128 s4");
      } else if (*m == 'p') {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 5, Pp, 1, 1, 0, 0, E>>("pp 128x128 s5", ConvKind::Fprop, one);
        analyse_ctas("conv 1x1 pingpong 128x128 s5");
      } else if (*m == 'k') {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 5, Co, 3, 3, 1, 1, E>>("coop 256x64 s5", ConvKind::Fprop, k64);
        analyse_ctas("conv K64 coop 256x64 s5");
      } else {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Co, 3, 3, 1, 1, E>>("coop 128x256 s4", ConvKind::Fprop, big);
        analyse("conv K512 coop 128x256 s4");
        analyse_ctas("conv K512 coop 128x256 s4");
      }
    }
  }
  return 0;
}
