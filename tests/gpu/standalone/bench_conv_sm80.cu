// Times kdl::Conv2dSm80 tile configurations directly (no generator) on the issue's conv shapes, bf16 NHWC,
// to pick the bench specs' tiles. Prints TFLOP/s (median of 7 runs of 10 launches). cuDNN is measured by
// bench/conv_bench.py in the same session; this file only compares our configurations.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I include tests/gpu/standalone/bench_conv_sm80.cu
// With -DKDL_TEST_SM90 (and -gencode=arch=compute_90a,code=sm_90a) the first argument picks the sm90a sets:
//   s: cooperative candidates per shape; g: the dgrad and wgrad; 9: every sm90a fprop tile; p: pingpong tiles
//   without and with clusters (2, 1) beside the cooperative 128x256 (docs/perf-notes.md v17); n: clusters (1, 2)
//   (X shared by two filter tiles) and the stage loader's two steps (v22); x: the 1x1 in clusters along N (v23);
//   y: the 1x1's tiles, schedules and clusters (v29); E: the 3x3 shapes' cooperative tiles in clusters (v30); T: the
//   conv benchmark's best sm90a fprop tiles on the four target shapes, one line each (v31); L SHAPE: the cooperative 128x256 s4 fprop (the 1x1: 256x128)
//   launched back to back for ~5 s, beside cudnn_loop.py SHAPE, for the figure at the power cap (v29).
#include <cuda_bf16.h>

#include <algorithm>
#include <vector>

#include "common.cuh"
#include "kdl/conv_sm80.cuh"
#ifdef KDL_TEST_SM90
#include "kdl/conv_sm90.cuh"
#endif

using kdl::ConvKind;
using Epi = StoreEpilogueApply<__nv_bfloat16>;

struct Shape {
  const char* name;
  int n, c, h, w, k, r, s, pad;
};

static int g_reps = 7;  // timed batches of 10 launches (mode L: many, for a steady clock and power reading)

template <class C>
static void bench(const char* cfg, ConvKind kind, const Shape& sh, int split = 1) {
  kdl::Conv2dProblem p{};
  p.n = sh.n; p.h = sh.h; p.w = sh.w; p.c = sh.c; p.k = sh.k; p.r = sh.r; p.s = sh.s;
  p.pad_h = p.pad_w = sh.pad; p.stride_h = p.stride_w = 1; p.dil_h = p.dil_w = 1;
  p.p = sh.h + 2 * sh.pad - sh.r + 1; p.q = sh.w + 2 * sh.pad - sh.s + 1;
  p.split_k = split;
  p.images_packed = 1;  // the output is packed (kdl::Conv2dSm90Fprop then runs tiles across images)
  const size_t nx = (size_t)p.n * p.h * p.w * p.c, ny = (size_t)p.n * p.p * p.q * p.k, nw = (size_t)p.k * p.r * p.s * p.c;
  __nv_bfloat16 *x, *y, *w, *o;
  CK(cudaMalloc(&x, nx * 2)); CK(cudaMalloc(&y, ny * 2)); CK(cudaMalloc(&w, nw * 2));
  // Random inputs in [-1, 1): constant ones draw less power and run at higher clocks than real data.
  fill_rand<<<1024, 256>>>(x, nx, 1); fill_rand<<<1024, 256>>>(y, ny, 2); fill_rand<<<1024, 256>>>(w, nw, 3);
  CK(cudaGetLastError());
  typename Epi::Params ep{};
  ep.alpha = 1.f;
  if (kind == ConvKind::Fprop) {
    p.A = x; p.lda = p.c; p.batch_stride_a = (int64_t)p.h * p.w * p.c;
    p.B = w; p.ldb = p.c; p.batch_stride_b = (int64_t)p.r * p.s * p.c;
    CK(cudaMalloc(&o, ny * 2)); ep.D = o; ep.ldd = p.k; ep.batch_stride_D = (int64_t)p.p * p.q * p.k;
  } else if (kind == ConvKind::Dgrad) {
    p.A = y; p.lda = p.k; p.batch_stride_a = (int64_t)p.p * p.q * p.k;
    p.B = w; p.ldb = p.c; p.batch_stride_b = (int64_t)p.r * p.s * p.c;
    CK(cudaMalloc(&o, nx * 2)); ep.D = o; ep.ldd = p.c; ep.batch_stride_D = (int64_t)p.h * p.w * p.c;
  } else {
    p.A = y; p.lda = p.k; p.batch_stride_a = (int64_t)p.p * p.q * p.k;
    p.B = x; p.ldb = p.c; p.batch_stride_b = (int64_t)p.h * p.w * p.c;
    CK(cudaMalloc(&o, nw * 2)); ep.D = o; ep.ldd = (int64_t)p.r * p.s * p.c; ep.batch_stride_D = 0;
  }
  if (const char* e = C::can_implement(p)) {
    printf("%-8s %-28s %-22s can_implement: %s\n", kind == ConvKind::Fprop ? "fprop" : kind == ConvKind::Dgrad ? "dgrad" : "wgrad",
           sh.name, cfg, e);
    return;
  }
  void* ws = nullptr;
  if (size_t b = C::workspace_size(p)) CK(cudaMalloc(&ws, b));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) CK(C::run(p, ep, ws, 0));
  std::vector<float> ms;
  for (int rep = 0; rep < g_reps; ++rep) {
    CK(cudaEventRecord(a));
    for (int i = 0; i < 10; ++i) C::run(p, ep, ws, 0);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float t;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t / 10);
  }
  std::sort(ms.begin(), ms.end());
  ms[3] = ms[ms.size() / 2];
  const double flop = 2.0 * p.n * p.p * p.q * (double)p.k * p.r * p.s * p.c;
  printf("%-8s %-28s %-22s %8.3f ms %7.1f TFLOP/s\n", kind == ConvKind::Fprop ? "fprop" : kind == ConvKind::Dgrad ? "dgrad" : "wgrad",
         sh.name, cfg, ms[3], flop / ms[3] / 1e9);
  cudaFree(x); cudaFree(y); cudaFree(w); cudaFree(o);
  if (ws) cudaFree(ws);
}

template <ConvKind K, int TM, int TN, int TK, int WM, int WN, int ST, int F = 0>
using C = kdl::Conv2dSm80<K, __nv_bfloat16, 8, 8, float, TM, TN, TK, WM, WN, ST, F, F, 1, 1, Epi>;

template <ConvKind K, int F>
static void configs(const Shape& s, int split = 1) {
  bench<C<K, 128, 128, 32, 2, 2, 4, F>>("128x128x32 2x2 s4", K, s, split);
  bench<C<K, 128, 128, 64, 2, 2, 3, F>>("128x128x64 2x2 s3", K, s, split);
  bench<C<K, 128, 256, 32, 2, 4, 3, F>>("128x256x32 2x4 s3", K, s, split);
  bench<C<K, 256, 128, 32, 4, 2, 3, F>>("256x128x32 4x2 s3", K, s, split);
  bench<C<K, 128, 256, 64, 2, 4, 3, F>>("128x256x64 2x4 s3", K, s, split);
}

int main(int argc, char** argv) {
  const Shape shapes[] = {{"N32 C256 56x56 K256 3x3", 32, 256, 56, 56, 256, 3, 3, 1},
                          {"N128 C64 56x56 K64 3x3", 128, 64, 56, 56, 64, 3, 3, 1},
                          {"N32 C512 28x28 K512 3x3", 32, 512, 28, 28, 512, 3, 3, 1},
                          {"N64 C128 112x112 K128 1x1", 64, 128, 112, 112, 128, 1, 1, 0}};
#ifdef KDL_TEST_SM90
  if (argc > 2 && argv[1][0] == 'L') {  // L SHAPE: the cooperative 128x256 s4 fprop for ~5 s (clock and power beside cuDNN's)
    using E = StoreEpilogue<__nv_bfloat16>;
    g_reps = 3000;
    const Shape& s = shapes[atoi(argv[2])];
    if (s.r == 1)
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, kdl::Sm90Schedule::Cooperative, 1, 1, 1, 1, E>>("sm90a 256x128 coop s4", ConvKind::Fprop, s);
    else
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, kdl::Sm90Schedule::Cooperative, 3, 3, 1, 1, E>>("sm90a 128x256 coop s4", ConvKind::Fprop, s);
    return 0;
  }
  if (argc > 1 && argv[1][0] == 'T') {  // the benchmark's best sm90a fprop tiles on the four target shapes
    constexpr auto Co = kdl::Sm90Schedule::Cooperative, Pp = kdl::Sm90Schedule::Pingpong;
    using E = StoreEpilogue<__nv_bfloat16>;
    for (int i : {0, 2})
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Co, 3, 3, 1, 1, E>>("sm90a 128x256 coop s4", ConvKind::Fprop, shapes[i]);
    bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 3, 3, 1, 1, E>>("sm90a 256x128 coop s4", ConvKind::Fprop, shapes[0]);
    bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 5, Co, 3, 3, 1, 1, E>>("sm90a 256x64 coop s5", ConvKind::Fprop, shapes[1]);
    bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 64, 8, Pp, 3, 3, 1, 1, E>>("sm90a 128x64 ping s8", ConvKind::Fprop, shapes[1]);
    bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 4, Co, 1, 1, 0, 0, E>>("sm90a 256x64 coop s4", ConvKind::Fprop, shapes[3]);
    return 0;
  }
  if (argc > 1 && argv[1][0] == 's') {  // sm90a cooperative candidates per shape (stages 3 and 4), tiles across images
    using Sch = kdl::Sm90Schedule;
    using E = StoreEpilogue<__nv_bfloat16>;
    for (int i : {0, 2}) {
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Sch::Cooperative, 3, 3, 1, 1, E>>("sm90a 128x256 coop s4", ConvKind::Fprop, shapes[i]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 3, Sch::Cooperative, 3, 3, 1, 1, E>>("sm90a 128x256 coop s3", ConvKind::Fprop, shapes[i]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Sch::Cooperative, 3, 3, 1, 1, E>>("sm90a 256x128 coop s4", ConvKind::Fprop, shapes[i]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 3, Sch::Cooperative, 3, 3, 1, 1, E>>("sm90a 256x128 coop s3", ConvKind::Fprop, shapes[i]);
    }
    bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 5, Sch::Cooperative, 3, 3, 1, 1, E>>("sm90a 256x64 coop s5", ConvKind::Fprop, shapes[1]);
    bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 4, Sch::Cooperative, 3, 3, 1, 1, E>>("sm90a 256x64 coop s4", ConvKind::Fprop, shapes[1]);
    bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Sch::Cooperative, 1, 1, 1, 1, E>>("sm90a 256x128 coop s4", ConvKind::Fprop, shapes[3]);
    bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 3, Sch::Cooperative, 1, 1, 1, 1, E>>("sm90a 256x128 coop s3", ConvKind::Fprop, shapes[3]);
    return 0;
  }
  if (argc > 1 && argv[1][0] == 'g') {  // the sm90a dgrad and wgrad on the first shape (wgrad: serial split-K)
    using Sch = kdl::Sm90Schedule;
    using E = StoreEpilogue<__nv_bfloat16>;
    bench<kdl::Conv2dSm90Dgrad<__nv_bfloat16, 128, 256, 4, Sch::Cooperative, 3, 3, 1, 1, E>>("sm90a dgrad 128x256 coop s4", ConvKind::Dgrad, shapes[0]);
    bench<kdl::Conv2dSm90Dgrad<__nv_bfloat16, 256, 128, 4, Sch::Cooperative, 3, 3, 1, 1, E>>("sm90a dgrad 256x128 coop s4", ConvKind::Dgrad, shapes[0]);
    for (int split : {4, 7, 8, 14}) {
      printf("split %d\n", split);
      bench<kdl::Conv2dSm90Wgrad<__nv_bfloat16, 128, 256, 4, Sch::Cooperative, 3, 3, 1, 1, E>>("sm90a wgrad 128x256 coop s4", ConvKind::Wgrad, shapes[0], split);
      bench<kdl::Conv2dSm90Wgrad<__nv_bfloat16, 256, 128, 4, Sch::Cooperative, 3, 3, 1, 1, E>>("sm90a wgrad 256x128 coop s4", ConvKind::Wgrad, shapes[0], split);
      bench<kdl::Conv2dSm90Wgrad<__nv_bfloat16, 128, 128, 5, Sch::Cooperative, 3, 3, 1, 1, E>>("sm90a wgrad 128x128 coop s5", ConvKind::Wgrad, shapes[0], split);
    }
    return 0;
  }
  if (argc > 1 && argv[1][0] == 'p') {  // the sm90a fprop: pingpong tiles without and with clusters (2, 1), 2 rounds
    constexpr auto Co = kdl::Sm90Schedule::Cooperative, Pp = kdl::Sm90Schedule::Pingpong;
    using E = StoreEpilogue<__nv_bfloat16>;
    for (int round = 0; round < 2; ++round) {
      for (int i : {0, 2}) {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Co, 3, 3, 1, 1, E, true, 1>>("coop 128x256 s4 c1x1", ConvKind::Fprop, shapes[i]);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Pp, 3, 3, 1, 1, E, true, 1>>("ping 128x128 s6 c1x1", ConvKind::Fprop, shapes[i]);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Pp, 3, 3, 1, 1, E, true, 2>>("ping 128x128 s6 c2x1", ConvKind::Fprop, shapes[i]);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 5, Pp, 3, 3, 1, 1, E, true, 2>>("ping 128x128 s5 c2x1", ConvKind::Fprop, shapes[i]);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 64, 256, 5, Pp, 3, 3, 1, 1, E, true, 2>>("ping 64x256 s5 c2x1", ConvKind::Fprop, shapes[i]);
      }
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 5, Co, 3, 3, 1, 1, E, true, 1>>("coop 256x64 s5 c1x1", ConvKind::Fprop, shapes[1]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 64, 8, Pp, 3, 3, 1, 1, E, true, 2>>("ping 128x64 s8 c2x1", ConvKind::Fprop, shapes[1]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 64, 8, Pp, 3, 3, 1, 1, E, true, 1>>("ping 128x64 s8 c1x1", ConvKind::Fprop, shapes[1]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 1, 1, 1, 1, E, true, 1>>("coop 256x128 s4 c1x1", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Pp, 1, 1, 1, 1, E, true, 1>>("ping 128x128 s6 c1x1", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Pp, 1, 1, 1, 1, E, true, 2>>("ping 128x128 s6 c2x1", ConvKind::Fprop, shapes[3]);
    }
    return 0;
  }
  if (argc > 1 && argv[1][0] == 'n') {  // the sm90a fprop: clusters (1, 2) sharing X (cuDNN's pingpong 128x128), 2 rounds
    constexpr auto Co = kdl::Sm90Schedule::Cooperative, Pp = kdl::Sm90Schedule::Pingpong;
    using E = StoreEpilogue<__nv_bfloat16>;
    for (int round = 0; round < 2; ++round) {
      for (int i : {0, 2}) {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Co, 3, 3, 1, 1, E, true, 1, 1>>("coop 128x256 s4 c1x1", ConvKind::Fprop, shapes[i]);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Pp, 3, 3, 1, 1, E, true, 1, 1>>("ping 128x128 s6 c1x1", ConvKind::Fprop, shapes[i]);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Pp, 3, 3, 1, 1, E, true, 1, 2>>("ping 128x128 s6 c1x2", ConvKind::Fprop, shapes[i]);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 3, 3, 1, 1, E, true, 1, 2>>("coop 256x128 s4 c1x2", ConvKind::Fprop, shapes[i]);
      }
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 5, Co, 3, 3, 1, 1, E, true, 1, 1>>("coop 256x64 s5 c1x1", ConvKind::Fprop, shapes[1]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 64, 8, Pp, 3, 3, 1, 1, E, true, 1, 1>>("ping 128x64 s8 c1x1", ConvKind::Fprop, shapes[1]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 1, 1, 1, 1, E, true, 1, 1>>("coop 256x128 s4 c1x1", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Dgrad<__nv_bfloat16, 128, 256, 4, Co, 3, 3, 1, 1, E>>("dgrad coop 128x256 s4", ConvKind::Dgrad, shapes[0]);
    }
    return 0;
  }
  if (argc > 1 && argv[1][0] == 'x') {  // the 1x1: clusters along N, 2 rounds (v23)
    constexpr auto Co = kdl::Sm90Schedule::Cooperative;
    using E = StoreEpilogue<__nv_bfloat16>;
    for (int round = 0; round < 2; ++round) {
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 1, 1, 0, 0, E>>("coop 256x128 s4", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 1, 1, 0, 0, E, true, 1, 2>>("coop 256x128 s4 c1x2", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 3, Co, 1, 1, 0, 0, E, true, 1, 2>>("coop 256x128 s3 c1x2", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 4, Co, 1, 1, 0, 0, E>>("coop 256x64 s4", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 4, Co, 1, 1, 0, 0, E, true, 1, 2>>("coop 256x64 s4 c1x2", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 4, Co, 1, 1, 0, 0, E, true, 2, 2>>("coop 256x64 s4 c2x2", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Co, 3, 3, 1, 1, E>>("coop 128x256 s4 (3x3)", ConvKind::Fprop, shapes[0]);
    }
    return 0;
  }
  if (argc > 1 && argv[1][0] == 'E') {  // the 3x3 shapes' cooperative tiles in clusters (W or X multicast), 2 rounds
    constexpr auto Co = kdl::Sm90Schedule::Cooperative;
    using E = StoreEpilogue<__nv_bfloat16>;
    for (int round = 0; round < 2; ++round)
      for (int i : {0, 2}) {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Co, 3, 3, 1, 1, E>>("coop 128x256 s4", ConvKind::Fprop, shapes[i]);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Co, 3, 3, 1, 1, E, true, 2, 1>>("coop 128x256 s4 c2x1", ConvKind::Fprop, shapes[i]);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 3, Co, 3, 3, 1, 1, E, true, 2, 1>>("coop 128x256 s3 c2x1", ConvKind::Fprop, shapes[i]);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 3, 3, 1, 1, E, true, 1, 2>>("coop 256x128 s4 c1x2", ConvKind::Fprop, shapes[i]);
        if (i == 2) bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Co, 3, 3, 1, 1, E, true, 1, 2>>("coop 128x256 s4 c1x2", ConvKind::Fprop, shapes[i]);
      }
    return 0;
  }
  if (argc > 1 && argv[1][0] == 'y') {  // the 1x1: W shared by clusters along M (cuDNN's multicast) and N, 2 rounds (v29)
    constexpr auto Co = kdl::Sm90Schedule::Cooperative, Pp = kdl::Sm90Schedule::Pingpong;
    using E = StoreEpilogue<__nv_bfloat16>;
    for (int round = 0; round < 2; ++round) {
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 1, 1, 0, 0, E>>("coop 256x128 s4", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 3, Co, 1, 1, 0, 0, E>>("coop 256x128 s3", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 4, Co, 1, 1, 0, 0, E>>("coop 256x64 s4", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Co, 1, 1, 0, 0, E, true, 2, 1>>("coop 256x128 s4 c2x1", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 3, Co, 1, 1, 0, 0, E, true, 2, 1>>("coop 256x128 s3 c2x1", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 3, Co, 1, 1, 0, 0, E, true, 1, 2>>("coop 256x128 s3 c1x2", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 5, Pp, 1, 1, 0, 0, E>>("pp 128x128 s5", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Pp, 1, 1, 0, 0, E>>("pp 128x128 s6", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 4, Pp, 1, 1, 0, 0, E>>("pp 128x128 s4", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Co, 1, 1, 0, 0, E>>("coop 128x128 s6", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 5, Pp, 1, 1, 0, 0, E, true, 2, 1>>("pp 128x128 s5 c2x1", ConvKind::Fprop, shapes[3]);
      bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, Co, 1, 1, 0, 0, E, true, 2, 1>>("coop 128x128 s6 c2x1", ConvKind::Fprop, shapes[3]);
    }
    return 0;
  }
  if (argc > 1 && argv[1][0] == '9') {  // the sm90a fprop
    using Sch = kdl::Sm90Schedule;
    for (int i = 0; i < 4; ++i) {
      const Shape& s = shapes[i];
      if (s.r == 3) {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 5, Sch::Cooperative, 3, 3, 1, 1, StoreEpilogue<__nv_bfloat16>>>("sm90a 128x128 coop s5", ConvKind::Fprop, s);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, Sch::Cooperative, 3, 3, 1, 1, StoreEpilogue<__nv_bfloat16>>>("sm90a 128x256 coop s4", ConvKind::Fprop, s);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Sch::Cooperative, 3, 3, 1, 1, StoreEpilogue<__nv_bfloat16>>>("sm90a 256x128 coop s4", ConvKind::Fprop, s);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 5, Sch::Pingpong, 3, 3, 1, 1, StoreEpilogue<__nv_bfloat16>>>("sm90a 128x128 ping s5", ConvKind::Fprop, s);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 64, 6, Sch::Cooperative, 3, 3, 1, 1, StoreEpilogue<__nv_bfloat16>>>("sm90a 128x64 coop s6", ConvKind::Fprop, s);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 64, 5, Sch::Cooperative, 3, 3, 1, 1, StoreEpilogue<__nv_bfloat16>>>("sm90a 256x64 coop s5", ConvKind::Fprop, s);
      } else {
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 5, Sch::Cooperative, 1, 1, 1, 1, StoreEpilogue<__nv_bfloat16>>>("sm90a 128x128 coop s5", ConvKind::Fprop, s);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 256, 128, 4, Sch::Cooperative, 1, 1, 1, 1, StoreEpilogue<__nv_bfloat16>>>("sm90a 256x128 coop s4", ConvKind::Fprop, s);
        bench<kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 5, Sch::Pingpong, 1, 1, 1, 1, StoreEpilogue<__nv_bfloat16>>>("sm90a 128x128 ping s5", ConvKind::Fprop, s);
      }
    }
    return 0;
  }
#endif
  if (argc > 1) {  // the second sweep: narrow tiles for 64 channels, wgrad split-K
    bench<C<ConvKind::Fprop, 128, 64, 32, 2, 2, 4, 3>>("128x64x32 2x2 s4", ConvKind::Fprop, shapes[1]);
    bench<C<ConvKind::Fprop, 128, 64, 64, 2, 2, 3, 3>>("128x64x64 2x2 s3", ConvKind::Fprop, shapes[1]);
    bench<C<ConvKind::Fprop, 256, 64, 32, 4, 1, 4, 3>>("256x64x32 4x1 s4", ConvKind::Fprop, shapes[1]);
    bench<C<ConvKind::Fprop, 256, 64, 64, 4, 1, 3, 3>>("256x64x64 4x1 s3", ConvKind::Fprop, shapes[1]);
    bench<C<ConvKind::Fprop, 256, 64, 32, 4, 2, 4, 3>>("256x64x32 4x2 s4", ConvKind::Fprop, shapes[1]);
    bench<C<ConvKind::Fprop, 256, 128, 32, 4, 2, 4, 1>>("256x128x32 4x2 s4", ConvKind::Fprop, shapes[3]);
    bench<C<ConvKind::Fprop, 128, 128, 32, 2, 2, 5, 1>>("128x128x32 2x2 s5", ConvKind::Fprop, shapes[3]);
    bench<C<ConvKind::Fprop, 256, 128, 32, 4, 2, 4, 3>>("256x128x32 4x2 s4", ConvKind::Fprop, shapes[0]);
    bench<C<ConvKind::Dgrad, 256, 128, 32, 4, 2, 4, 3>>("256x128x32 4x2 s4", ConvKind::Dgrad, shapes[0]);
    for (int split : {3, 6, 7, 8, 12, 16}) {
      printf("split %d\n", split);
      bench<C<ConvKind::Wgrad, 128, 128, 32, 2, 2, 4, 3>>("128x128x32 2x2 s4", ConvKind::Wgrad, shapes[0], split);
      bench<C<ConvKind::Wgrad, 256, 128, 32, 4, 2, 3, 3>>("256x128x32 4x2 s3", ConvKind::Wgrad, shapes[0], split);
      bench<C<ConvKind::Wgrad, 128, 256, 32, 2, 4, 3, 3>>("128x256x32 2x4 s3", ConvKind::Wgrad, shapes[0], split);
    }
    return 0;
  }
  for (int i = 0; i < 3; ++i) configs<ConvKind::Fprop, 3>(shapes[i]);
  configs<ConvKind::Fprop, 1>(shapes[3]);
  configs<ConvKind::Dgrad, 3>(shapes[0]);
  configs<ConvKind::Wgrad, 3>(shapes[0], 1);
  configs<ConvKind::Wgrad, 3>(shapes[0], 4);
  return 0;
}
