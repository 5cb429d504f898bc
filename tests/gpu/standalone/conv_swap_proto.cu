// A whole-kernel prototype of the swapped patch mainloop (docs/perf-notes.md v60): conv fprop 3x3, pad 1, stride 1,
// bf16 NHWC X [32][56][56][256], KRSC W [256][3][3][256], Y = acc (bf16), as implicit GEMM with the operands' roles
// swapped -- each unit is 64 filters x 256 output pixels, D transposed:
//   * A: W's 64 filters of the k-tile's (channel block, tap), one {64 c, 1 tap, 64 k} box, 8 KB a stage (6 stages);
//   * B: two n128 windows of a patch laid out as the kernel's (X as {c, n, w, h}, images innermost) at G = 16 images per
//     pixel: a unit is 2 output rows x 8 columns x 16 images, its patch 4 rows x 10 columns x 16 images (80 KB, two
//     slots); output row i's window for tap (r, s) is 16 contiguous 1 KB atoms from ((r + i) * 10 + s) * 2 KB;
//   * per k-step two m64n128k16 with the same A; pingpong (two consumer warpgroups take the CTA's units by turns; the
//     ring in unit order serialises their mainloops, each epilogue runs under the other's);
//   * the epilogue: stmatrix.trans into a 16 KB staging tile [pixel][64 filters] (128-byte swizzle), one TMA store
//     per output row through Y as {k, n, q, p}; the staging tile is shared by the two consumers (an mbarrier hands it
//     over).
// It is a timing prototype with one shape built in, not a kernel of the library: the patch slots are not guarded by
// their own barriers (the ring's depth keeps a slot's reuse 4 k-tiles behind its last reader, as in wgmma_rate).
// Launched as a programmatic dependent, as the library's kernels are (-DKDL_PROTO_NO_PDL: plainly); -DKDL_PROTO_PACE=N
// pauses N cycles after each stmatrix as the library's paced epilogue does; -DKDL_PROTO_WATCHDOG traps a wait that
// lasts ~4 G cycles, printing where it hung.
// It checks its Y against the library's pingpong 128 x 128 patch kernel (the spec of the benchmark's
// cb_fprop3x3_sm90a_128x128x64p, emitted by kdlc into pp.cu / pp.h and linked in) on every output and both against an
// fp64 CPU reference on sampled outputs, then times the two alternating in batches (median per-launch time of each,
// and of the per-pair ratios). Usage: conv_swap_proto [BATCHES=9] [LAUNCHES PER BATCH=20]; tests/gpu/standalone/
// run_swap_proto.sh builds and runs it. Measured on the H200 (docs/perf-notes.md v60): bit for bit the library's
// outputs; library / prototype 1.012-1.014 per pair with the dependent launch, 1.000-1.012 without, 0.992-0.997 paced.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kdl/ptx_sm90.cuh"
#include "kdl/runtime.h"
#include "kdl/wgmma_sm90.cuh"
#include "common.cuh"  // CK, fill_rand
#include "tma_map.cuh"  // encode_map
#include "pp.h"
#ifdef KDL_PROTO_LIBKERNEL
#include "kdl/conv_sm90.cuh"
// -DKDL_PROTO_LIBKERNEL: the "prototype" is the library's swapped kernel (kdl::sm90::ConvFpropSwap), instantiated
// here with a pointwise functor of its own and launched through its own run(): the library's kernel beside itself
// and beside the patch GEMM, in this harness.
struct ProtoEpilogue {
  struct Params {
    __nv_bfloat16* Y; int64_t ldy; int64_t batch_stride_Y; float alpha;
  };
  struct State {};
  using ElementD = __nv_bfloat16;
  static constexpr bool kPointwise = true;
  static kdl::OutputD<__nv_bfloat16> output_d(const Params& p) { return {p.Y, p.ldy, p.batch_stride_Y}; }
  template <int V, class Coord = kdl::EpilogueCoord>
  __device__ __forceinline__ void compute(const Params& p, State&, const Coord&, const float (&acc)[V], float (&out)[V]) const {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = p.alpha * acc[i];
  }
  __device__ __forceinline__ void finish(const Params&, State&) const {}
};
using LibSwap = kdl::sm90::ConvFpropSwap<__nv_bfloat16, 3, 3, ProtoEpilogue>;
#endif

using namespace kdl::sm90;
using bf16 = __nv_bfloat16;

namespace {

#ifndef KDL_PROTO_N
#define KDL_PROTO_N 32  // images (a multiple of 16; other than 32 only with -DKDL_PROTO_RUNTIME)
#endif
constexpr int kN = KDL_PROTO_N, kH = 56, kW = 56, kC = 256, kK = 256;
constexpr int kUnits = (kK / 64) * (kN / 16) * (kW / 8) * (kH / 2);  // 4 x 2 x 7 x 28 = 1568
constexpr int kKtiles = (kC / 64) * 9;                               // 36 per unit
constexpr int kStages = 6, kStage = 8192, kSlot = 4 * 10 * 16 * 128, kStaging = 16384;
constexpr int kRing = 0, kSlots = kStages * kStage, kStg = kSlots + 2 * kSlot, kBars = kStg + kStaging;
constexpr int kSmem = 1024 + kBars + (2 * kStages + 5) * 8;

// mbarrier_wait with a watchdog (KDL_PROTO_WATCHDOG builds): a wait longer than ~4 G cycles prints where and traps.
__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity, int tag, int a) {
#ifdef KDL_PROTO_WATCHDOG
  const long long t0 = clock64();
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
    if (clock64() - t0 > 4000000000ll) {
      printf("stuck: block %d thread %d tag %d at %d parity %u\n", blockIdx.x, threadIdx.x, tag, a, parity);
      __trap();
    }
  }
#else
  (void)tag, (void)a;
  mbarrier_wait(bar, parity);
#endif
}

struct Unit {
  int fb, ib, qb, pb;  // filter block (64), image block (16), column block (8), row pair
};
// The library's needs, one at a time (docs/perf-notes.md v60: the library's general form ran 15-22 % slower):
//   -DKDL_PROTO_RUNTIME  the counts and the walk's divisors as kernel arguments (Shape) instead of constants;
//   -DKDL_PROTO_COMPUTE  the epilogue computes each accumulator's output coordinate, checks it and scales by alpha;
//   -DKDL_PROTO_SLOTS    two mbarriers hand a patch slot back once its last tap has been read (the producer waits);
//   -DKDL_PROTO_ITER     the ring's stage and phase kept as counters instead of derived from the k-tile's index;
//   -DKDL_PROTO_NEST     (with ITER) the channel blocks an outer loop, the 9 taps a constant inner one;
//   -DKDL_PROTO_PARAMS   the maps and the shape in one kernel parameter block, as a library kernel's;
//   -DKDL_PROTO_ALPHA    Y = alpha * acc on every accumulator (the library's pointwise epilogue);
//   -DKDL_PROTO_N=16|64  (with RUNTIME) another number of images: a fixed cost per launch would move the ratio;
//   -DKDL_PROTO_LIBKERNEL the "prototype" is the library's own swapped kernel (kdl::sm90::ConvFpropSwap) instantiated in
//                        this file and launched by its run(): the library's kernel beside itself (run() takes it for
//                        this shape) or, with KDL_CONV_MAINLOOP=patch, beside the patch GEMM; compile this file
//                        with -D flags of the header's and link pp.cu built without them to bisect the kernel.
// v61 (docs/perf-notes.md): RUNTIME + ITER + NEST + ALPHA 1.005-1.012 ahead of the library's swapped kernel, which runs
// 2.7-2.9 % ahead of the patch GEMM.
// Measured (H200, beside the library's patch GEMM): ITER + NEST 6 % faster than it, RUNTIME + ITER + NEST 4 %, all five
// level (docs/perf-notes.md v60, bench/results/2026-12-01-h200-v60-swap-in-library.txt).
struct Shape {
  int ktiles, units, fblocks, nblocks, qblocks, n, p, q, k;
  float alpha;
};
#ifdef KDL_PROTO_RUNTIME
#define KDL_KT (sh.ktiles)
#define KDL_UNITS (sh.units)
#else
#define KDL_KT kKtiles
#define KDL_UNITS kUnits
#endif
__device__ __forceinline__ Unit unit_of(int u, const Shape& sh) {
  Unit x;
#ifdef KDL_PROTO_RUNTIME
  x.fb = u % sh.fblocks;
  const int pt = u / sh.fblocks;
  x.ib = pt % sh.nblocks;
  x.qb = (pt / sh.nblocks) % sh.qblocks;
  x.pb = pt / (sh.nblocks * sh.qblocks);
#else
  (void)sh;
  x.fb = u % 4;
  const int pt = u / 4;
  x.ib = pt % 2;
  x.qb = (pt / 2) % 7;
  x.pb = pt / 14;
#endif
  return x;
}

// -DKDL_PROTO_PARAMS: the maps and the shape in one parameter block, as a library kernel's Params.
struct Params {
  CUtensorMap mw, mx, my;
  Shape sh;
};
#ifdef KDL_PROTO_PARAMS
__global__ void __launch_bounds__(384, 1) swap_proto(const __grid_constant__ Params P) {
  const CUtensorMap &mw = P.mw, &mx = P.mx, &my = P.my;
  const Shape& sh = P.sh;
#else
__global__ void __launch_bounds__(384, 1) swap_proto(const __grid_constant__ CUtensorMap mw,
                                                     const __grid_constant__ CUtensorMap mx,
                                                     const __grid_constant__ CUtensorMap my,
                                                     const __grid_constant__ Shape sh) {
#endif
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kBars);
  uint64_t* empty = full + kStages;
  uint64_t* stg_free = empty + kStages;
  uint64_t* turn = stg_free + 1;
  uint64_t* slot_empty = turn + 2;  // KDL_PROTO_SLOTS
  // turn[c]: consumer c may wait on its next unit's k-tiles (the ring's parity tells phases apart only one apart: the
  // other consumer's unit must have seen its last k-tile loaded first)
  const int tid = threadIdx.x, wg = tid / 128;
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], 4);
    }
    mbarrier_init(stg_free, 1);
    mbarrier_init(&turn[0], 1);
    mbarrier_init(&turn[1], 1);
    mbarrier_init(&slot_empty[0], 4);
    mbarrier_init(&slot_empty[1], 4);
    fence_mbarrier_init();
  }
  __syncthreads();
#ifndef KDL_PROTO_NO_PDL
  griddep_wait();  // launched as a programmatic dependent (the library's kernels are): nothing global before
#endif
  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (tid != 0) return;
    tma_prefetch(&mw);
    tma_prefetch(&mx);
    int t = 0, patch = 0;
#ifdef KDL_PROTO_ITER
    int s = 0, ph = 0;
#endif
    for (int u = blockIdx.x, j = 0; u < KDL_UNITS; u += gridDim.x, ++j) {
      const Unit x = unit_of(u, sh);
      for (int kt = 0; kt < KDL_KT; ++kt, ++t) {
#ifdef KDL_PROTO_ITER
        const int cb = kt / 9, tap = kt - cb * 9;
        wait(&empty[s], ph ^ 1, 1, t);
#else
        const int s = t % kStages, cb = kt / 9, tap = kt - cb * 9;
        wait(&empty[s], ((t / kStages) & 1) ^ 1, 1, t);
#endif
#ifdef KDL_PROTO_SLOTS
        if (tap == 0 && patch >= 2) wait(&slot_empty[patch & 1], ((patch / 2) - 1) & 1, 5, patch);
#endif
        patch += tap == 0;
        mbarrier_arrive_expect_tx(&full[s], kStage + (tap == 0 ? kSlot : 0));
        tma_load_3d(smem + kRing + s * kStage, &mw, &full[s], cb * 64, tap, x.fb * 64);
        if (tap == 0)
          tma_load_4d(smem + kSlots + (cb & 1) * kSlot, &mx, &full[s], cb * 64, x.ib * 16, x.qb * 8 - 1, x.pb * 2 - 1);
#ifdef KDL_PROTO_ITER
        if (++s == kStages) s = 0, ph ^= 1;
#endif
      }
    }
    return;
  }
  setmaxnreg_inc<232>();
  const int c = wg - 1, ct = tid - 128 * wg, warp = ct / 32, lane = ct % 32;
  float acc[2][64];
  // The lane's stmatrix.trans row in the staging tile: pixel 16 jj + col, filters' 16-byte chunk 2 warp + (lane / 8) % 2.
  const AccCoord lc = stmatrix_x4_lane_coord(lane, true);
  for (int u = blockIdx.x + c * gridDim.x, j = c; u < KDL_UNITS; u += 2 * gridDim.x, j += 2) {
    const Unit x = unit_of(u, sh);
    int prev = -1, prev_end = -1;
    if (j > 0) wait(&turn[c], ((j - 1) / 2) & 1, 4, j);
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int r = 0; r < 64; ++r) acc[i][r] = 0.f;
#ifdef KDL_PROTO_ITER
    // -DKDL_PROTO_ITER: the stage and its phase as counters (one division per unit, none per k-tile)
    int s = (j * KDL_KT) % kStages, ph = ((j * KDL_KT) / kStages) & 1;
#endif
#ifdef KDL_PROTO_NEST
    // -DKDL_PROTO_NEST (with ITER): channel blocks outside (a run-time count), the 9 taps inside (a constant count)
    for (int cb = 0, kt = 0; cb < KDL_KT / 9; ++cb)
      for (int tap = 0; tap < 9; ++tap, ++kt) {
      const int r = tap / 3, sx = tap - r * 3;
      wait(&full[s], ph, 2, kt);
#else
    for (int kt = 0; kt < KDL_KT; ++kt) {
#endif
#if defined(KDL_PROTO_ITER) && !defined(KDL_PROTO_NEST)
      const int cb = kt / 9, tap = kt - cb * 9, r = tap / 3, sx = tap - r * 3;
      wait(&full[s], ph, 2, kt);
#elif !defined(KDL_PROTO_ITER)
      const int t = j * KDL_KT + kt, s = t % kStages, cb = kt / 9, tap = kt - cb * 9, r = tap / 3, sx = tap - r * 3;
      wait(&full[s], (t / kStages) & 1, 2, t);
#endif
      if (kt == KDL_KT - 1 && ct == 0) mbarrier_arrive(&turn[c ^ 1]);
      const uint32_t a = smem_addr(smem + kRing + s * kStage);
      const uint32_t b = smem_addr(smem + kSlots + (cb & 1) * kSlot) + uint32_t(10 * r + sx) * 2048u;
      warpgroup_fence_acc(acc[0]);
      warpgroup_fence_acc(acc[1]);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
#pragma unroll
        for (int i = 0; i < 2; ++i)
          wgmma_ss<128, bf16>(acc[i], make_desc_kmajor_sw128<bf16>(a, 64, ks),
                              make_smem_desc(b + uint32_t(i) * 20480u + uint32_t(ks) * kWgmmaKBytes, 16, 1024), true);
      wgmma_commit_group();
      wgmma_wait_group<1>();
      warpgroup_fence_acc(acc[0]);
      warpgroup_fence_acc(acc[1]);
      if (prev >= 0 && lane == 0) {
        mbarrier_arrive(&empty[prev]);
#ifdef KDL_PROTO_SLOTS
        if (prev_end >= 0) mbarrier_arrive(&slot_empty[prev_end]);
#endif
      }
      prev = s;
      prev_end = tap == 8 ? (cb & 1) : -1;
#ifdef KDL_PROTO_ITER
      if (++s == kStages) s = 0, ph ^= 1;
#endif
    }
    wgmma_wait_group<0>();
    warpgroup_fence_acc(acc[0]);
    warpgroup_fence_acc(acc[1]);
    if (lane == 0) {
      mbarrier_arrive(&empty[prev]);
#ifdef KDL_PROTO_SLOTS
      mbarrier_arrive(&slot_empty[prev_end]);
#endif
    }
    (void)prev_end;
#ifdef KDL_PROTO_ALPHA
    // -DKDL_PROTO_ALPHA: Y = alpha * acc on every accumulator, unchecked (the library's pointwise epilogue)
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int r = 0; r < 64; ++r) acc[i][r] *= sh.alpha;
#endif
#ifdef KDL_PROTO_COMPUTE
    {  // each accumulator's output coordinate, checked, and alpha (as the library's compute<1> loop)
      const int f0 = x.fb * 64 + warp * 16 + (lane >> 2), t4 = lane & 3;
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int jn = 0; jn < 16; ++jn)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int px = 8 * jn + 2 * t4 + e, n = x.ib * 16 + (px & 15), q = x.qb * 8 + (px >> 4), p = x.pb * 2 + i;
            const bool in = n < sh.n && p < sh.p && q < sh.q;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              float& v = acc[i][4 * jn + 2 * h + e];
              v = in && f0 + 8 * h < sh.k ? sh.alpha * v : 0.f;
            }
          }
    }
#endif
    // Epilogue: the staging tile is free once the previous unit's (the other consumer's) stores have read it.
    if (j > 0) wait(stg_free, (j - 1) & 1, 3, j);
    uint8_t* stg = smem + kStg;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      if (i == 1) named_barrier_sync(1 + c, 128);  // row 0's store has read the tile
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const int px = 16 * jj + lc.col, chunk = 2 * warp + lc.row / 8;
        stmatrix_acc_x4<bf16, true>(acc[i], jj, smem_addr(stg + px * 128 + ((chunk ^ (px & 7)) << 4)));
#ifdef KDL_PROTO_PACE
        // Paced as the library's pingpong 128 x 128 patch epilogue (kPaceEpilogue, docs/perf-notes.md v57): a pause
        // after each stmatrix while the other consumer has a unit beside this one.
        if (u + gridDim.x < KDL_UNITS) {
          const long long p0 = clock64();
          while (clock64() - p0 < KDL_PROTO_PACE) __nanosleep(32);
        }
#endif
      }
      fence_proxy_async_shared();
      named_barrier_sync(1 + c, 128);
      if (ct == 0) {
        tma_store_4d(&my, stg, x.fb * 64, x.ib * 16, x.qb * 8, x.pb * 2 + i);
        tma_store_commit();
        tma_store_wait_read<0>();
      }
    }
    if (ct == 0) mbarrier_arrive(stg_free);
  }
  if (ct == 0) tma_store_wait<0>();
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int batches = argc > 1 ? atoi(argv[1]) : 9, per = argc > 2 ? atoi(argv[2]) : 20;
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const size_t xn = (size_t)kN * kH * kW * kC, wn = (size_t)kK * 9 * kC, yn = (size_t)kN * kH * kW * kK;
  bf16 *x, *w, *y0, *y1;
  CK(cudaMalloc(&x, xn * 2));
  CK(cudaMalloc(&w, wn * 2));
  CK(cudaMalloc(&y0, yn * 2));
  CK(cudaMalloc(&y1, yn * 2));
  fill_rand<<<1024, 256>>>(x, xn, 11);
  fill_rand<<<1024, 256>>>(w, wn, 29);
  CK(cudaMemset(y0, 0xFF, yn * 2));  // NaN: an unwritten output shows
  CK(cudaMemset(y1, 0xFF, yn * 2));
  const cuuint64_t w_dims[3] = {kC, 9, kK}, w_str[2] = {kC * 2, 9 * kC * 2};
  const cuuint32_t w_box[3] = {64, 1, 64};
  const cuuint64_t x_dims[4] = {kC, kN, kW, kH}, x_str[3] = {(cuuint64_t)kH * kW * kC * 2, kC * 2, (cuuint64_t)kW * kC * 2};
  const cuuint32_t x_box[4] = {64, 16, 10, 4};
  const cuuint64_t y_dims[4] = {kK, kN, kW, kH}, y_str[3] = {(cuuint64_t)kH * kW * kK * 2, kK * 2, (cuuint64_t)kW * kK * 2};
  const cuuint32_t y_box[4] = {64, 16, 8, 1};
  const CUtensorMap mw = encode_map("W", w, 3, w_dims, w_str, w_box), mx = encode_map("X", x, 4, x_dims, x_str, x_box),
                    my = encode_map("Y", y1, 4, y_dims, y_str, y_box);
  CK(cudaFuncSetAttribute(swap_proto, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  const Shape shape{kKtiles, kUnits, kK / 64, kN / 16, kW / 8, kN, kH, kW, kK, 1.0f};
#ifdef KDL_PROTO_LIBKERNEL
  LibSwap::Params lg{};
  {
    kdl::Conv2dProblem cp{};
    cp.n = kN, cp.h = kH, cp.w = kW, cp.c = kC, cp.k = kK, cp.r = 3, cp.s = 3, cp.p = kH, cp.q = kW;
    cp.pad_h = cp.pad_w = 1, cp.stride_h = cp.stride_w = cp.dil_h = cp.dil_w = 1;
    cp.A = x, cp.lda = kC, cp.batch_stride_a = (int64_t)kH * kW * kC;
    cp.B = w, cp.ldb = kC, cp.batch_stride_b = 9 * kC;
    cp.split_k = 1, cp.images_packed = 1;
    const ProtoEpilogue::Params ep{y1, kK, (int64_t)kH * kW * kK, 1.0f};
    if (!LibSwap::encode(lg, cp, ep)) {
      fprintf(stderr, "LibSwap::encode failed\n");
      return 1;
    }
  }
  auto proto = [&] { CK(LibSwap::run(lg, 0)); };
#else
  auto proto = [&] {
#ifndef KDL_PROTO_NO_PDL
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(sms);
    cfg.blockDim = dim3(384);
    cfg.dynamicSmemBytes = kSmem;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
#ifdef KDL_PROTO_PARAMS
    CK(cudaLaunchKernelEx(&cfg, swap_proto, Params{mw, mx, my, shape}));
#else
    CK(cudaLaunchKernelEx(&cfg, swap_proto, mw, mx, my, shape));
#endif
#else
#ifdef KDL_PROTO_PARAMS
    swap_proto<<<sms, 384, kSmem>>>(Params{mw, mx, my, shape});
#else
    swap_proto<<<sms, 384, kSmem>>>(mw, mx, my, shape);
#endif
#endif
  };
#endif
  kdl_kernels::pp::Arguments args;
  args.n = kN, args.h = kH, args.w = kW, args.c = kC, args.k = kK, args.pad_h = 1, args.pad_w = 1;
  args.X = x, args.W = w, args.Y = y0;
  if (const char* why = kdl_kernels::pp::can_implement(args)) {
    fprintf(stderr, "pp: %s\n", why);
    return 1;
  }
  auto lib = [&] { CK(kdl_kernels::pp::run(args)); };
  printf("library kernel's mainloop for this problem: %s\n", kdl_kernels::pp::path(args));
  lib();
  CK(cudaDeviceSynchronize());
  printf("library kernel ran\n");
  fflush(stdout);
  proto();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  // Check: the prototype against the library kernel on every output, both against fp64 on sampled outputs.
  std::vector<bf16> h0(yn), h1(yn), hx(xn), hw(wn);
  CK(cudaMemcpy(h0.data(), y0, yn * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h1.data(), y1, yn * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hx.data(), x, xn * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hw.data(), w, wn * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  size_t bad = 0;
  for (size_t i = 0; i < yn; ++i) {
    const double a = __bfloat162float(h0[i]), b = __bfloat162float(h1[i]);
    if (!std::isfinite(b) || !std::isfinite(a)) {
      ++bad;
      continue;
    }
    num += (a - b) * (a - b);
    den += a * a;
  }
  const double rel = std::sqrt(num / (den > 0 ? den : 1));
  double rnum[2] = {0, 0}, rden = 0;
  uint32_t h = 12345;
  for (int sample = 0; sample < 4000; ++sample) {
    h = h * 1664525u + 1013904223u;
    const size_t o = (size_t)(h >> 4) % yn;
    const int k = int(o % kK), q = int((o / kK) % kW), p = int((o / kK / kW) % kH), n = int(o / kK / kW / kH);
    double ref = 0;
    for (int r = 0; r < 3; ++r)
      for (int s = 0; s < 3; ++s) {
        const int ih = p + r - 1, iw = q + s - 1;
        if (ih < 0 || ih >= kH || iw < 0 || iw >= kW) continue;
        const bf16* xp = &hx[(((size_t)n * kH + ih) * kW + iw) * kC];
        const bf16* wp = &hw[((size_t)k * 9 + r * 3 + s) * kC];
        for (int ch = 0; ch < kC; ++ch) ref += (double)__bfloat162float(xp[ch]) * (double)__bfloat162float(wp[ch]);
      }
    const double v0 = __bfloat162float(h0[o]), v1 = __bfloat162float(h1[o]);
    rnum[0] += (v0 - ref) * (v0 - ref);
    rnum[1] += (v1 - ref) * (v1 - ref);
    rden += ref * ref;
  }
  const double e0 = std::sqrt(rnum[0] / rden), e1 = std::sqrt(rnum[1] / rden);
  const bool ok = bad == 0 && rel < 1e-2 && e1 < 1e-2 && std::isfinite(e1);
  printf("conv_swap_proto: %s, %d SMs; N%d C%d %dx%d K%d 3x3 pad 1 bf16\n", prop.name, sms, kN, kC, kH, kW, kK);
  printf("check: %zu unwritten / non-finite outputs; prototype vs library kernel |d|/|y| %.2e; vs fp64 (4000 samples): "
         "library %.2e, prototype %.2e -> %s\n",
         bad, rel, e0, e1, ok ? "OK" : "FAIL");
  cudaEvent_t ev[3];
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int i = 0; i < 10; ++i) {
    lib();
    proto();
  }
  {  // the library's host time per launch (launches queued without waiting)
    CK(cudaDeviceSynchronize());
    const auto h0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 50; ++i) lib();
    const auto h1 = std::chrono::steady_clock::now();
    CK(cudaDeviceSynchronize());
    const auto h2 = std::chrono::steady_clock::now();
    printf("host: %.1f us per library launch queued; %.1f us per launch to the end\n",
           std::chrono::duration<double, std::micro>(h1 - h0).count() / 50,
           std::chrono::duration<double, std::micro>(h2 - h0).count() / 50);
  }
  std::vector<float> tl, tp, ratio;
  for (int b = 0; b < batches; ++b) {
    CK(cudaEventRecord(ev[0]));
    for (int i = 0; i < per; ++i) lib();
    CK(cudaEventRecord(ev[1]));
    for (int i = 0; i < per; ++i) proto();
    CK(cudaEventRecord(ev[2]));
    CK(cudaEventSynchronize(ev[2]));
    float a = 0, c = 0;
    CK(cudaEventElapsedTime(&a, ev[0], ev[1]));
    CK(cudaEventElapsedTime(&c, ev[1], ev[2]));
    tl.push_back(a * 1000 / per);
    tp.push_back(c * 1000 / per);
    ratio.push_back(a / c);
  }
  CK(cudaGetLastError());
  printf("time (median of %d batches of %d, alternating): library pingpong 128x128 patch %.1f us, swapped prototype %.1f us;"
         " library / prototype per pair: median %.3f (min %.3f, max %.3f)\n",
         batches, per, median(tl), median(tp), median(ratio), *std::min_element(ratio.begin(), ratio.end()),
         *std::max_element(ratio.begin(), ratio.end()));
  return ok ? 0 : 1;
}
