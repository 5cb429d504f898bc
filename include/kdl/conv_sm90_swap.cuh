// kdl/conv_sm90_swap.cuh -- the swapped patch mainloop for conv fprop on sm90a (docs/perf-notes.md v60): a third
// mainloop of Conv2dSm90Fprop's pingpong 128 x 128 patch kernels, which run() takes where it measured faster.
//
// The implicit GEMM with the operands' roles swapped (D transposed: filters x output pixels). A unit is 64 filters x
// 256 output pixels: 2 output rows x 8 columns x 16 images.
//   * A: W's 64 filters of the k-tile's (channel block, tap), one {64 c, 1 tap, 64 k} box per stage (8 KB).
//   * B: the unit's patch -- its input pixels with the filter's halo, (R + 1) rows x (S + 7) columns x 16 images x 64
//     channels, laid out [h][w][image][channel] as ConvFpropPatchLoader's (X described as {c, n, w, h}), loaded once
//     per channel block into one of two slots. A pixel is two 1 KB swizzle atoms, so output row i's window for tap
//     (r, s) is 16 contiguous atoms from ((r + i) * (S + 7) + s) * 2 KB: one K-major n128 operand.
//   * Per k-step two wgmma m64n128k16 with the same A (one per output row).
//   * Pingpong: a producer thread (TMA) and two consumer warpgroups taking the CTA's units by turns (mbarriers hand the
//     turn over once a consumer has seen its unit's last k-tile loaded: the ring's parity tells phases apart only one
//     apart); a slot's mbarrier says when an earlier unit's last patch has been read (produce(): where the ring does
//     not already order a slot's reuse).
//   * Epilogue: the functor's compute on whole rows of registers -- pointwise functors only (no C, [channel] input,
//     extra output or amax: EpiloguePointwise) -- then D through `stmatrix.trans` into one 16 KB staging tile [pixel]
//     [64 filters] (128-byte swizzle) that the consumers hand over by an mbarrier, one TMA store per output row
//     through Y as {k, n, q, p}. TMA zero-fills the loads past X's and W's edges and clips the stores, so any n, h, w,
//     c, k and padding run.
// Measured (H200, the first 3x3 shape of the benchmark, N32 C256 56x56 K256): see Conv2dSm90Fprop::swap_pays for
// where run() takes it, and docs/perf-notes.md v60-v61 (tests/gpu/standalone/conv_swap_proto.cu, the prototype).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include "kdl/epilogue.cuh"
#include "kdl/gemm_sm90_smem.h"
#include "kdl/per_device.h"
#include "kdl/ptx_sm90.cuh"
#include "kdl/wgmma_sm90.cuh"

namespace kdl {
namespace sm90 {

template <class Element, int R, int S, class Epilogue>
struct ConvFpropSwap {
  // Shared memory (kdl/gemm_sm90_smem.h, which kdlc's plan reads too): the stages of W, two patch slots, the staging
  // tile, the barriers.
  static constexpr int kStages = conv_swap_stages(R, S, kGemmSm90SmemLimit);
  static constexpr bool kFits = R * S >= 2 && kStages >= 4 && sizeof(Element) == 2;
  static constexpr int kStage = 8192, kSlot = conv_swap_slot_bytes(R, S), kStaging = 16384, kPW = S + 7;
  static constexpr int kSlots = kStages * kStage, kStg = kSlots + 2 * kSlot, kBars = kStg + kStaging;
  // full[kStages], empty[kStages], slot_empty[2], stg_free, turn[2]
  static constexpr int kSmemBytes = 1024 + kBars + (2 * kStages + 5) * 8;
  static_assert(!kFits || kSmemBytes == conv_swap_smem_bytes(R, S, kGemmSm90SmemLimit), "kdl: the plan's shared memory");
  static constexpr int kThreads = 384;
  using ElementD = typename ::kdl::detail::EpilogueD<Epilogue>::Element;
  // The functor's compute reads no coordinate (kdlc says so: `static constexpr bool kPointwise = true;`): the only
  // functors this mainloop takes (Conv2dSm90Fprop::kSwap).
  static constexpr bool kPointwise = ::kdl::detail::EpiloguePointwise<Epilogue>::value;

  struct Params {
    CUtensorMap tmX, tmW, tmY;
    int n, p, q, k;
    int cblocks, ktiles;                  // channel blocks, k-tiles per unit (cblocks x R x S)
    int fblocks, nblocks, qblocks, units;  // filter blocks (64), image blocks (16), column blocks (8); units
    int pad_h, pad_w;
    typename Epilogue::Params ep;
  };
  struct Unit {
    int fb, ib, qb, pb;
  };
  __device__ __forceinline__ static Unit unit_of(const Params& g, int u) {
    Unit x;
    x.fb = u % g.fblocks;
    const int pt = u / g.fblocks;
    x.ib = pt % g.nblocks;
    const int rest = pt / g.nblocks;
    x.qb = rest % g.qblocks;
    x.pb = rest / g.qblocks;
    return x;
  }
  // The ring's position: a stage and the parity of its phase, advanced by counters (deriving them from the k-tile's
  // index per k-tile measured 3-5 % slower in the prototype, and a run-time k-tile loop without the constant tap loop
  // inside it 4 % more: docs/perf-notes.md v60).
  struct Ring {
    int s, ph;
    __device__ __forceinline__ void next() {
      if (++s == kStages) s = 0, ph ^= 1;
    }
  };

  __device__ static void device_main(const Params& g) {
    extern __shared__ __align__(1024) uint8_t kdl_swap_smem[];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(kdl_swap_smem) + 1023) & ~uintptr_t(1023));
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + kBars);
    uint64_t* empty = full + kStages;
    uint64_t* slot_empty = empty + kStages;
    uint64_t* stg_free = slot_empty + 2;
    uint64_t* turn = stg_free + 1;
    const int tid = threadIdx.x, wg = tid / 128;
    if (tid == 0) {
      for (int s = 0; s < kStages; ++s) {
        mbarrier_init(&full[s], 1);
        mbarrier_init(&empty[s], 4);
      }
      mbarrier_init(&slot_empty[0], 4);
      mbarrier_init(&slot_empty[1], 4);
      mbarrier_init(stg_free, 1);
      mbarrier_init(&turn[0], 1);
      mbarrier_init(&turn[1], 1);
      fence_mbarrier_init();
    }
    __syncthreads();
    griddep_wait();  // a programmatic dependent launch: nothing global before the previous kernel's writes are visible
    if (wg == 0) {
      // The producer warpgroup: one thread issues every load; the other 127 leave at once (kept waiting at a warp
      // barrier beside the issuing lane, they cost the kernel 2.5 %: docs/perf-notes.md v61). The functor's finish
      // needs no thread of theirs (kSwap takes pointwise functors only: no amax).
      setmaxnreg_dec<40>();
      if (tid == 0) produce(g, smem, full, empty, slot_empty);
      return;
    }
    setmaxnreg_inc<232>();
    Epilogue epilogue{};
    typename Epilogue::State state{};
    consume(g, epilogue, state, smem, full, empty, slot_empty, stg_free, turn, wg - 1, tid - 128 * wg);
    epilogue.finish(g.ep, state);
  }

  // The patch slots' barriers (slot_empty[2], four arrivals -- one per consumer warp -- a phase). A patch is loaded into
  // the slot of the patch two before it once that one has been read to its last tap. Within a unit the ring orders
  // this when a patch has at least kStages - 1 taps: the producer's wait for stage t - kStages, released by the unit's
  // consumer only when its wgmmas up to that k-tile are complete, falls on or after that patch's last tap; so does a
  // unit's first patch, whose slot held the previous unit's second-to-last patch. Left is a unit's patch whose slot
  // held an earlier unit's last patch (the second patch of a unit, or every patch when a unit has one): that unit's
  // consumer announces its last patch read when its unit ends, and the producer waits for it. With fewer taps than
  // kStages - 1 (kAllSlots) every patch is announced and awaited. (The first form -- a unit's last two patches
  // announced, each read in the loop, and its first two awaited -- ran 2 % slower than none at all on the first 3x3
  // shape; this one, one arrival per warp and one wait per unit, 0.7 %: docs/perf-notes.md v61.)
  static constexpr bool kAllSlots = R * S < kStages - 1;
  __device__ __forceinline__ static bool tracked_patch(const Params& g, int cb) { return kAllSlots || cb == g.cblocks - 1; }

  // One thread: per k-tile a W box into the ring's stage, per channel block's first tap the patch into a slot (after
  // the wait above where it is due).
  __device__ __forceinline__ static void produce(const Params& g, uint8_t* smem, uint64_t* full, uint64_t* empty,
                                                 uint64_t* slot_empty) {
    tma_prefetch(&g.tmW);
    tma_prefetch(&g.tmX);
    tma_prefetch(&g.tmY);
    Ring ring{0, 0};
    // Per slot: the tracked patches loaded into it so far, and whether the last patch loaded into it was one.
    int patch = 0, tracked0 = 0, tracked1 = 0;
    bool held0 = false, held1 = false;
    for (int u = blockIdx.x; u < g.units; u += gridDim.x) {
      const Unit x = unit_of(g, u);
      for (int cb = 0; cb < g.cblocks; ++cb, ++patch)
        for (int tap = 0; tap < R * S; ++tap) {
          const int s = ring.s;
          mbarrier_wait(&empty[s], ring.ph ^ 1);
          if (tap == 0) {
            const bool now = tracked_patch(g, cb);
            if (patch & 1) {
              if (held1) mbarrier_wait(&slot_empty[1], (tracked1 - 1) & 1);
              held1 = now;
              tracked1 += now;
            } else {
              if (held0) mbarrier_wait(&slot_empty[0], (tracked0 - 1) & 1);
              held0 = now;
              tracked0 += now;
            }
          }
          mbarrier_arrive_expect_tx(&full[s], kStage + (tap == 0 ? kSlot : 0));
          tma_load_3d(smem + s * kStage, &g.tmW, &full[s], cb * 64, tap, x.fb * 64);
          if (tap == 0)
            tma_load_4d(smem + kSlots + (patch & 1) * kSlot, &g.tmX, &full[s], cb * 64, x.ib * 16, x.qb * 8 - g.pad_w,
                        x.pb * 2 - g.pad_h);
          ring.next();
        }
    }
  }

  __device__ __forceinline__ static void consume(const Params& g, Epilogue& epilogue, typename Epilogue::State& state,
                                                 uint8_t* smem, uint64_t* full, uint64_t* empty, uint64_t* slot_empty,
                                                 uint64_t* stg_free, uint64_t* turn, int c, int ct) {
    const int warp = ct / 32, lane = ct % 32;
    const AccCoord lc = stmatrix_x4_lane_coord(lane, true);
    float acc[2][64];
    for (int u = blockIdx.x + c * gridDim.x, j = c; u < g.units; u += 2 * gridDim.x, j += 2) {
      const Unit x = unit_of(g, u);
      if (j > 0) mbarrier_wait(&turn[c], ((j - 1) / 2) & 1);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int r = 0; r < 64; ++r) acc[i][r] = 0.f;
      const long long t0 = (long long)j * g.ktiles;  // the unit's first k-tile in the CTA's ring
      const int patch0 = (j & 1) * (g.cblocks & 1);   // the parity of its first patch in the CTA's patches
      Ring ring{int(t0 % kStages), int((t0 / kStages) & 1)};
      int prev = -1, prev_slot = -1;  // the stage read before this k-tile; kAllSlots: its patch's slot if its last tap
      for (int cb = 0; cb < g.cblocks; ++cb) {
        const int slot = (patch0 + cb) & 1;
        const uint32_t patch_at = smem_addr(smem + kSlots + slot * kSlot);
        for (int tap = 0; tap < R * S; ++tap) {
          const int s = ring.s, r = tap / S, sx = tap - r * S;
          mbarrier_wait(&full[s], ring.ph);
          if (cb == g.cblocks - 1 && tap == R * S - 1 && ct == 0) mbarrier_arrive(&turn[c ^ 1]);
          const uint32_t a = smem_addr(smem + s * kStage);
          const uint32_t b = patch_at + uint32_t(kPW * r + sx) * 2048u;
          warpgroup_fence_acc(acc[0]);
          warpgroup_fence_acc(acc[1]);
          wgmma_fence();
#pragma unroll
          for (int ks = 0; ks < 4; ++ks)
#pragma unroll
            for (int i = 0; i < 2; ++i)
              wgmma_ss<128, Element>(acc[i], make_desc_kmajor_sw128<Element>(a, 64, ks),
                                     make_smem_desc(b + uint32_t(i * kPW) * 2048u + uint32_t(ks) * kWgmmaKBytes, 16, 1024),
                                     true);
          wgmma_commit_group();
          wgmma_wait_group<1>();
          warpgroup_fence_acc(acc[0]);
          warpgroup_fence_acc(acc[1]);
          if (prev >= 0 && lane == 0) {
            mbarrier_arrive(&empty[prev]);
            if (kAllSlots && prev_slot >= 0) mbarrier_arrive(&slot_empty[prev_slot]);
          }
          prev = s;
          if constexpr (kAllSlots) prev_slot = tap == R * S - 1 ? slot : -1;
          ring.next();
        }
      }
      wgmma_wait_group<0>();
      warpgroup_fence_acc(acc[0]);
      warpgroup_fence_acc(acc[1]);
      if (lane == 0) {
        mbarrier_arrive(&empty[prev]);
        mbarrier_arrive(&slot_empty[(patch0 + g.cblocks - 1) & 1]);  // the unit's last patch (a tracked one) read
      }
      epilogue_unit(g, epilogue, state, acc, smem + kStg, stg_free, x, j, c, warp, ct, lc);
    }
    if (ct == 0) tma_store_wait<0>();
  }

  // The unit's epilogue: compute, then D staged transposed and stored one output row at a time.
  __device__ __forceinline__ static void epilogue_unit(const Params& g, Epilogue& epilogue,
                                                       typename Epilogue::State& state, float (&acc)[2][64], uint8_t* stg,
                                                       uint64_t* stg_free, const Unit& x, int j, int c, int warp, int ct,
                                                       const AccCoord& lc) {
    epilogue_prepare(epilogue, g.ep, state);
    // D computed on whole vectors of registers: the functor reads no coordinate, and the outputs past the edges are
    // clipped by the store.
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      float out[64];
      epilogue.template compute<64>(g.ep, state, EpilogueCoordWhole{{0, 0, 0, 64}}, acc[i], out);
#pragma unroll
      for (int r = 0; r < 64; ++r) acc[i][r] = out[r];
    }
    // The staging tile is free once the previous unit's stores (the other consumer's) have read it.
    if (j > 0) mbarrier_wait(stg_free, (j - 1) & 1);
    const int chunk = 2 * warp + lc.row / 8;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      if (i == 1) named_barrier_sync(1 + c, 128);  // row 0's store has read the tile
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const int px = 16 * jj + lc.col;
        stmatrix_acc_x4<ElementD, true>(acc[i], jj, smem_addr(stg + px * 128 + ((chunk ^ (px & 7)) << 4)));
      }
      fence_proxy_async_shared();
      named_barrier_sync(1 + c, 128);
      if (ct == 0) {
        tma_store_4d(&g.tmY, stg, x.fb * 64, x.ib * 16, x.qb * 8, x.pb * 2 + i);
        tma_store_commit();
        tma_store_wait_read<0>();
      }
    }
    if (ct == 0) mbarrier_arrive(stg_free);
  }

  // Fills g for p (X, W and Y's maps, the walk); false where TMA cannot describe X or Y.
  static bool encode(Params& g, const Conv2dProblem& p, const typename Epilogue::Params& ep) {
    const DriverApi& api = driver_api();
    if (api.cuTensorMapEncodeTiled == nullptr) return false;
    const OutputD<ElementD> d = ::kdl::detail::output_d<Epilogue>(ep);
    const int64_t eb = sizeof(Element), yb = sizeof(ElementD);
    const int64_t image_x = p.n > 1 ? p.batch_stride_a : p.lda * p.w * p.h;
    const int64_t image_y = p.n > 1 ? d.batch_stride : d.ld * p.q * p.p;
    auto aligned = [](const void* ptr, int64_t bytes) { return (reinterpret_cast<uintptr_t>(ptr) % 16) == 0 && bytes % 16 == 0; };
    if (d.data == nullptr || !aligned(p.A, p.lda * eb) || (image_x * eb) % 16 || image_x <= 0 || !aligned(d.data, d.ld * yb) ||
        (image_y * yb) % 16 || image_y <= 0 || ((int64_t)p.k * yb) % 16 || d.ld < p.k)
      return false;
    const cuuint32_t estr[4] = {1, 1, 1, 1};
    {
      const cuuint64_t dims[4] = {(cuuint64_t)p.c, (cuuint64_t)p.n, (cuuint64_t)p.w, (cuuint64_t)p.h};
      const cuuint64_t strides[3] = {(cuuint64_t)(image_x * eb), (cuuint64_t)(p.lda * eb), (cuuint64_t)(p.lda * p.w * eb)};
      const cuuint32_t box[4] = {64, 16, (cuuint32_t)kPW, (cuuint32_t)(R + 1)};
      if (api.cuTensorMapEncodeTiled(&g.tmX, ::kdl::detail::Sm90TmaDtype<Element>::value, 4, const_cast<void*>(p.A), dims, strides,
                                     box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return false;
    }
    {
      const cuuint64_t dims[4] = {(cuuint64_t)p.k, (cuuint64_t)p.n, (cuuint64_t)p.q, (cuuint64_t)p.p};
      const cuuint64_t strides[3] = {(cuuint64_t)(image_y * yb), (cuuint64_t)(d.ld * yb), (cuuint64_t)(d.ld * p.q * yb)};
      const cuuint32_t box[4] = {(cuuint32_t)(128 / yb), 16, 8, 1};
      if (api.cuTensorMapEncodeTiled(&g.tmY, ::kdl::detail::Sm90StoreDtype<ElementD>::value, 4, d.data, dims, strides, box, estr,
                                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return false;
    }
    if (encode_filter_taps(&g.tmW, p, 64, int(eb), ::kdl::detail::Sm90TmaDtype<Element>::value) != cudaSuccess) return false;
    g.n = p.n;
    g.p = p.p;
    g.q = p.q;
    g.k = p.k;
    g.cblocks = (p.c + 63) / 64;
    g.ktiles = g.cblocks * R * S;
    g.fblocks = (p.k + 63) / 64;
    g.nblocks = (p.n + 15) / 16;
    g.qblocks = (p.q + 7) / 8;
    const int64_t units = (int64_t)g.fblocks * g.nblocks * g.qblocks * ((p.p + 1) / 2);
    if (units <= 0 || units > 0x7fffffff || (int64_t)p.n * p.p * p.q >= 0x7fffffffLL) return false;
    g.units = (int)units;
    g.pad_h = p.pad_h;
    g.pad_w = p.pad_w;
    g.ep = ep;
    return true;
  }

  static cudaError_t run(const Params& g, cudaStream_t stream);
};

template <class Swap>
__global__ void __launch_bounds__(384, 1) conv_fprop_swap_kernel(const __grid_constant__ typename Swap::Params params) {
#if KDL_WGMMA_SM90A
  Swap::device_main(params);
#elif defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a: never launched (run() checks the device)
#endif
}

template <class Element, int R, int S, class Epilogue>
cudaError_t ConvFpropSwap<Element, R, S, Epilogue>::run(const Params& g, cudaStream_t stream) {
  using Self = ConvFpropSwap<Element, R, S, Epilogue>;
  const int dev = current_device();
  if (dev < 0) return cudaErrorNoDevice;
  static PerDeviceOnce set_up;
  if (cudaError_t e = set_up.run(dev, [dev] {
        int major = 0;
        if (cudaError_t e2 = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev); e2 != cudaSuccess)
          return e2;
        if (major != 9) return cudaErrorInvalidDeviceFunction;
        return cudaFuncSetAttribute(conv_fprop_swap_kernel<Self>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
      });
      e != cudaSuccess)
    return e;
  int sms = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev); e != cudaSuccess) return e;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3((unsigned)(g.units < sms ? g.units : sms));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = kSmemBytes;
  cfg.stream = stream;
  cudaLaunchAttribute attr;
  if (programmatic_launch()) {
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&cfg, conv_fprop_swap_kernel<Self>, g);
}

}  // namespace sm90
}  // namespace kdl
