// kdl/gemm_sm90.cuh -- the Hopper (sm_90a) GEMM: TMA + wgmma, warp-specialized, persistent.
//
// kdl::GemmSm90<ElementA, LayoutA, ElementB, LayoutB, ElementAccum, TileM, TileN, TileK, Stages, Schedule,
//               ClusterM, ClusterN, RasterAlongM, PromoteEvery, BlockScaling, Epilogue> computes, per batch b,
//   D[b] = Epilogue(A[b] * B[b])      A: M x K row-major, B: K x N column-major (both K-major),
// f16 or bf16 operands, f32 accumulation. Its host side has GemmSm80's static interface
// (kThreads, kSmemBytes, can_implement, workspace_size, run).
//
// The algorithm (cooperative schedule):
//   * 3 warpgroups, 384 threads. Warpgroup 0 is the producer: it gives registers away
//     (setmaxnreg.dec 40) and one thread issues, per k-tile, the TMA loads of the A tile
//     (TileM x 64) and the B tile (TileN x 64) into a ring of `Stages` stages written with the
//     128-byte swizzle, announcing the bytes on the stage's full barrier (expect_tx). Before it
//     refills a stage it waits on the stage's empty barrier.
//   * Warpgroups 1 and 2 are the consumers (setmaxnreg.inc 232): they split the tile along M,
//     TileM/2 rows each (one m64 wgmma for TileM = 128, two for TileM = 256). Per k-tile a
//     consumer waits on the full barrier, issues 4 k16 steps of wgmma (A and B read from shared
//     memory through descriptors) as one group, keeps that group in flight, waits for the
//     previous group (wgmma.wait_group 1) and only then releases the previous stage (one
//     arrival per consumer warp on its empty barrier): a stage is never overwritten while a
//     wgmma may still read it.
//   * Persistent: the grid is the number of SMs (asked at run time); CTA i takes tiles i,
//     i + grid, ... of all batches, each batch's tiles walked in GemmSm80's grouped raster
//     (bands of 8 M-tiles, M fastest inside a band). The ring's stage and phase carry on from
//     one tile to the next, so the producer loads the next tile while the consumers run the
//     epilogue of this one.
//   * ClusterM = 2: clusters of 2 CTAs (grid: SMs / 2 clusters) walk units of 2 tiles adjacent
//     along M (bands of 4 units); each CTA loads half of the shared B tile and multicasts it to
//     both (halving B's L2 reads); a stage's empty barrier then counts the consumer warps of
//     both CTAs (remote arrivals, released at CTA scope: see mbarrier_arrive_cluster_cta_scope),
//     and no CTA exits before its peer is done with it (a cluster barrier at the end).
//   * Residues: TMA zero-fills what lies outside M, N, K (3-D tensor maps: K, rows, batch);
//     the epilogue stores in range only.
//   * Epilogue: each consumer warp stages its 16 rows of the accumulator through a dedicated
//     shared-memory buffer (not the mainloop stages), 32 columns at a time (16 x 32 f32, rows
//     padded to 40 floats: conflict-free float2 writes and 16-byte reads), and hands V
//     consecutive in-range columns at a time (V = Epilogue::kVectorWidth when declared, else 8)
//     to Epilogue::apply<V>, so a store_tile becomes one 16-byte store; every thread of the block
//     then calls finish. The buffer is per warp, so the epilogue needs only __syncwarp (the two
//     consumer warpgroups never wait on each other). Meanwhile the producer, gated only by the
//     empty barriers, has already filled up to Stages k-tiles of the next tile. A TMA store that
//     overlaps the next tile's mainloop is later work, as are clusters along N (multicast of A),
//     the pingpong schedule, other layouts and element types.
//
// Shared memory: Stages x (A tile, B tile), every tile 1024-byte aligned (the swizzle atom),
// then full[Stages] and empty[Stages] barriers, then the epilogue's staging buffer (8 consumer
// warps x 16 x 40 f32 = 20 KB); 1 KB slack aligns the dynamic base.
// The kernel needs the sm_90a target (-gencode=arch=compute_90a,code=sm_90a); built for any
// other target its body traps, and run() refuses devices that are not compute capability 9.x.
#pragma once
#include "kdl/gemm_sm80_tma.cuh"  // detail::raster_tile, detail::TmaDtype, driver_api, per-device set-up
#include "kdl/gemm_sm90_smem.h"
#include "kdl/wgmma_sm90.cuh"

#include <string.h>

namespace kdl {

template <class Gemm>
__global__ void __launch_bounds__(Gemm::kThreads, 1) gemm_sm90_kernel(const __grid_constant__ typename Gemm::KernelParams params) {
#if KDL_WGMMA_SM90A
  Gemm::device_main(params);
#elif defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a: never launched (run() checks the device)
#endif
}

namespace sm90 {
// Block scaling of the mainloop (fp8): NoBlockScaling, or one f32 scale per BlockMA x BlockK block of A
// and per BlockNB x BlockK block of B, applied when each k-block is promoted into the f32 accumulator.
struct NoBlockScaling {
  static constexpr bool kEnabled = false;
};
template <int BlockMA, int BlockNB, int BlockK>
struct BlockScaling {
  static constexpr bool kEnabled = true;
  static constexpr int kBlockMA = BlockMA, kBlockNB = BlockNB, kBlockK = BlockK;
};
}  // namespace sm90

template <class ElementA, class LayoutA, class ElementB, class LayoutB, class ElementAccum, int TileM, int TileN,
          int TileK, int Stages, Sm90Schedule Schedule, int ClusterM, int ClusterN, bool RasterAlongM, int PromoteEvery,
          class BlockScaling, class Epilogue>
struct GemmSm90 {
  static_assert(detail::is_same_t<ElementA, ElementB>::value, "GemmSm90: A and B must have the same element type");
  static_assert(detail::is_same_t<LayoutA, RowMajor>::value && detail::is_same_t<LayoutB, ColMajor>::value,
                "GemmSm90: A must be RowMajor and B ColMajor (K-major) on this version");
  static_assert(detail::is_same_t<ElementAccum, float>::value, "GemmSm90: ElementAccum must be float");
  static_assert(Schedule == Sm90Schedule::Cooperative, "GemmSm90: only the cooperative schedule on this version");
  static_assert(ClusterN == 1, "GemmSm90: ClusterN must be 1 on this version");
  static_assert(!RasterAlongM, "GemmSm90: RasterAlongM must be false on this version");
  static_assert(PromoteEvery == 0 && !BlockScaling::kEnabled, "GemmSm90: no promotion or block scaling on this version");
  static_assert(detail::is_same_t<ElementA, half>::value || detail::is_same_t<ElementA, __nv_bfloat16>::value,
                "GemmSm90: ElementA must be half or __nv_bfloat16 (other types are not on the sm90a path yet)");
  static_assert(TileK == 64, "GemmSm90: TileK must be 64 (one 128-byte swizzled row of 16-bit elements)");
  static_assert(TileM == 128 || TileM == 256, "GemmSm90: TileM must be 128 or 256 (two consumer warpgroups of m64 wgmmas)");
  static_assert(TileN == 64 || TileN == 128 || TileN == 256, "GemmSm90: TileN must be 64, 128 or 256 (the wgmma N)");
  static_assert(Stages >= 2 && Stages <= 8, "GemmSm90: Stages must be 2..8");
  static_assert(ClusterM == 1 || ClusterM == 2, "GemmSm90: ClusterM must be 1 or 2 (clusters of 1 or 2 CTAs along M)");

  static constexpr int kConsumers = 2;                  // consumer warpgroups
  static constexpr int kClusterM = ClusterM;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kProducerRegs = 40;
  static constexpr int kConsumerRegs = 232;
  static_assert((kProducerRegs + kConsumers * kConsumerRegs) * 128 <= 65536,
                "GemmSm90: the setmaxnreg budgets exceed the SM's 64K registers");
  static constexpr int kRowsPerConsumer = TileM / kConsumers;
  static constexpr int kMmaM = kRowsPerConsumer / 64;   // m64 wgmmas per consumer per k16 step
  static constexpr int kAccRegs = TileN / 2;            // f32 registers of one m64 x TileN accumulator
  static_assert(kMmaM * kAccRegs <= 128, "GemmSm90: the accumulator exceeds 128 registers per consumer thread");
  static constexpr int kK16 = TileK / 16;
  static constexpr int kRasterGroup = 8;                 // M-tiles per raster band
  static constexpr int kBRowsPerCta = TileN / ClusterM;  // rows of the B tile each CTA of a cluster loads

  static constexpr int kTileBytesA = TileM * TileK * 2;
  static constexpr int kTileBytesB = TileN * TileK * 2;
  static constexpr int kStageBytes = kTileBytesA + kTileBytesB;
  static constexpr int kBarOffset = Stages * kStageBytes;
  // Epilogue staging: per consumer warp 16 rows x kEpiCols columns of f32, rows padded by 8 floats.
  static constexpr int kEpiV = detail::EpilogueVectorWidth<Epilogue>::value;
  static_assert(kEpiV == 1 || kEpiV == 2 || kEpiV == 4 || kEpiV == 8 || kEpiV == 16,
                "GemmSm90: the epilogue vector width must be a power of two <= 16");
  static constexpr int kEpiCols = 32;
  static constexpr int kEpiStride = kEpiCols + 8;
  static constexpr int kEpiWarpFloats = 16 * kEpiStride;
  static constexpr int kEpiVecPerRow = kEpiCols / kEpiV;
  static constexpr int kEpiItems = 16 * kEpiVecPerRow;  // V-vectors per warp per pass
  static_assert(kEpiItems % 32 == 0, "GemmSm90: epilogue items must be a multiple of the warp");
  static constexpr int kEpiOffset = (kBarOffset + 2 * Stages * 8 + 127) & ~127;
  static constexpr int kEpiBytes = kConsumers * 4 * kEpiWarpFloats * 4;
  static constexpr int kSmemBytes = 1024 + kEpiOffset + kEpiBytes;
  static constexpr GemmSm90SmemShape kSmemShape{int(sizeof(ElementA)), int(sizeof(ElementB)), TileM, TileN, TileK,
                                                Stages, int(Schedule)};
  static_assert(kSmemBytes == gemm_sm90_smem_bytes(kSmemShape), "GemmSm90: kdl/gemm_sm90_smem.h disagrees");
  static constexpr int kMinSmemBytes = kSmemBytes;  // kdl::GemmHost's device check (no smaller fallback)
  static_assert(kSmemBytes <= 232448,
                "GemmSm90: Stages x (TileM + TileN) x 128 B + the epilogue buffer exceeds the 227 KB of shared memory");

  struct KernelParams {
    CUtensorMap tmA;  // {K, M, batch}, box TileK x TileM
    CUtensorMap tmB;  // {K, N, batch}, box TileK x TileN / ClusterM
    int m, n, batch;
    int tiles_m, tiles_n, ktiles;
    typename Epilogue::Params ep;
  };

  // ---------------------------------------------------------------- device ----
  // The ring position: stage index and the parity of its current phase.
  struct Ring {
    int stage = 0;
    uint32_t phase = 0;
    __device__ __forceinline__ void advance() {
      if (++stage == Stages) {
        stage = 0;
        phase ^= 1u;
      }
    }
  };

  // Work unit u of the persistent walk (one tile per CTA of the cluster: ClusterM tiles adjacent
  // along M sharing one B tile) -> this CTA's (batch, tm, tn). A CTA whose tm lies past M still
  // runs the pipeline (TMA zero-fills; the epilogue stores nothing): its peer needs its half of B.
  __device__ __forceinline__ static int units_per_batch(const KernelParams& P) {
    return (P.tiles_m + ClusterM - 1) / ClusterM * P.tiles_n;
  }
  __device__ __forceinline__ static void unit_coords(const KernelParams& P, int u, uint32_t cta_rank, int& batch, int& tm,
                                                     int& tn) {
    const int per_batch = units_per_batch(P);
    batch = u / per_batch;
    int pm;
    detail::raster_tile<false, kRasterGroup / ClusterM>(u - batch * per_batch, (P.tiles_m + ClusterM - 1) / ClusterM,
                                                        P.tiles_n, pm, tn);
    tm = pm * ClusterM + int(cta_rank);
  }

  __device__ __forceinline__ static void device_main(const KernelParams& P) {
    extern __shared__ __align__(1024) uint8_t kdl_sm90_smem[];
    const uint32_t raw = smem_u32(kdl_sm90_smem);
    const uint32_t base = (raw + 1023u) & ~1023u;
    auto stage_a = [&](int s) { return base + uint32_t(s * kStageBytes); };
    auto stage_b = [&](int s) { return base + uint32_t(s * kStageBytes + kTileBytesA); };
    uint64_t* const bars = static_cast<uint64_t*>(__cvta_shared_to_generic(base + kBarOffset));
    auto full_bar = [&](int s) { return bars + s; };
    auto empty_bar = [&](int s) { return bars + Stages + s; };

    const int warpgroup = threadIdx.x / 128;
    const int wg_thread = threadIdx.x % 128;
    const int total_units = units_per_batch(P) * P.batch;
    const int first_unit = blockIdx.x / ClusterM, unit_stride = gridDim.x / ClusterM;
    const uint32_t cta_rank = ClusterM > 1 ? sm90::cluster_cta_rank() : 0u;

    if (threadIdx.x == 0) {
#pragma unroll
      for (int s = 0; s < Stages; ++s) {
        sm90::mbarrier_init(full_bar(s), 1);                 // the producer's expect_tx arrival
        // One arrival per consumer warp of every CTA of the cluster (each refills part of it).
        sm90::mbarrier_init(empty_bar(s), kConsumers * 4 * ClusterM);
      }
      sm90::fence_mbarrier_init();
    }
    if constexpr (ClusterM > 1)
      sm90::cluster_sync();  // the peer's barriers are initialised before any remote arrive or multicast
    else
      __syncthreads();

    Epilogue epilogue{};
    typename Epilogue::State state{};

    if (warpgroup == 0) {
      // ---- producer ----
      sm90::setmaxnreg_dec<kProducerRegs>();
      if (wg_thread == 0 && P.ktiles > 0) {
        sm90::tma_prefetch(&P.tmA);
        sm90::tma_prefetch(&P.tmB);
        Ring ring;
        for (int u = first_unit; u < total_units; u += unit_stride) {
          int batch, tm, tn;
          unit_coords(P, u, cta_rank, batch, tm, tn);
          for (int kt = 0; kt < P.ktiles; ++kt) {
            // A fresh barrier counts as having completed the phase before its first, so the
            // first pass over the ring (parity 1) does not wait.
            sm90::mbarrier_wait(empty_bar(ring.stage), ring.phase ^ 1u);
            sm90::mbarrier_arrive_expect_tx(full_bar(ring.stage), (uint32_t)kStageBytes);
            sm90::tma_load_3d(__cvta_shared_to_generic(stage_a(ring.stage)), &P.tmA, full_bar(ring.stage), kt * TileK,
                              tm * TileM, batch);
            if constexpr (ClusterM == 1) {
              sm90::tma_load_3d(__cvta_shared_to_generic(stage_b(ring.stage)), &P.tmB, full_bar(ring.stage), kt * TileK,
                                tn * TileN, batch);
            } else {  // this CTA's slice of B, to the same place in every CTA of the cluster
              sm90::tma_load_3d_multicast(
                  __cvta_shared_to_generic(stage_b(ring.stage) + uint32_t(cta_rank * kBRowsPerCta * 128)), &P.tmB,
                  full_bar(ring.stage), kt * TileK, tn * TileN + int(cta_rank) * kBRowsPerCta, batch,
                  uint16_t((1u << ClusterM) - 1));
            }
            ring.advance();
          }
        }
      }
    } else {
      // ---- consumers ----
      sm90::setmaxnreg_inc<kConsumerRegs>();
      using T = ElementA;
      const int consumer = warpgroup - 1;
      const int lane_warp_leader = (wg_thread % 32) == 0;
      float acc[kMmaM][kAccRegs];
      Ring ring;
      // Releases a stage in every CTA of the cluster: each one's producer refills its part of it.
      auto release = [&](int s) {
        if constexpr (ClusterM == 1) {
          sm90::mbarrier_arrive(empty_bar(s));
        } else {
#pragma unroll
          for (int r = 0; r < ClusterM; ++r) sm90::mbarrier_arrive_cluster_cta_scope(empty_bar(s), uint32_t(r));
        }
      };
      for (int u = first_unit; u < total_units; u += unit_stride) {
        int batch, tm, tn;
        unit_coords(P, u, cta_rank, batch, tm, tn);
#pragma unroll
        for (int i = 0; i < kMmaM; ++i)
#pragma unroll
          for (int r = 0; r < kAccRegs; ++r) acc[i][r] = 0.f;

        int prev_stage = -1;  // the stage whose wgmmas are the group still in flight
        for (int kt = 0; kt < P.ktiles; ++kt) {
          sm90::mbarrier_wait(full_bar(ring.stage), ring.phase);
          const uint32_t a_tile = stage_a(ring.stage) + uint32_t(consumer * kRowsPerConsumer * 128);
          const uint32_t b_tile = stage_b(ring.stage);
#pragma unroll
          for (int i = 0; i < kMmaM; ++i) sm90::warpgroup_fence_acc(acc[i]);
          sm90::wgmma_fence();
#pragma unroll
          for (int k16 = 0; k16 < kK16; ++k16) {
            const sm90::SmemDesc db = sm90::make_desc_kmajor_sw128<T>(b_tile, TileN, k16);
#pragma unroll
            for (int i = 0; i < kMmaM; ++i) {
              const sm90::SmemDesc da = sm90::make_desc_kmajor_sw128<T>(a_tile + uint32_t(i * 64 * 128), 64, k16);
              sm90::wgmma_ss<TileN, T>(acc[i], da, db, true);
            }
          }
          sm90::wgmma_commit_group();
#pragma unroll
          for (int i = 0; i < kMmaM; ++i) sm90::warpgroup_fence_acc(acc[i]);
          // The previous k-tile's group has completed: its stage may be refilled.
          sm90::wgmma_wait_group<1>();
          if (prev_stage >= 0 && lane_warp_leader) release(prev_stage);
          prev_stage = ring.stage;
          ring.advance();
        }
        sm90::wgmma_wait_group<0>();
#pragma unroll
        for (int i = 0; i < kMmaM; ++i) sm90::warpgroup_fence_acc(acc[i]);
        if (prev_stage >= 0 && lane_warp_leader) release(prev_stage);

        // ---- epilogue: registers -> per-warp staging (16 x 32 f32) -> Epilogue::apply<V>, in range only ----
        {
          constexpr int V = kEpiV;
          const int lane = wg_thread % 32, warp_in_wg = wg_thread / 32;
          const int g = lane >> 2, t = lane & 3;
          float* const stg = reinterpret_cast<float*>(kdl_sm90_smem + (base - raw) + kEpiOffset) +
                             (consumer * 4 + warp_in_wg) * kEpiWarpFloats;
          const int row0 = tm * TileM + consumer * kRowsPerConsumer + warp_in_wg * 16;
          const int col0 = tn * TileN;
#pragma unroll
          for (int i = 0; i < kMmaM; ++i) {
            if (row0 + i * 64 >= P.m) continue;  // warp-uniform: this warp's 16 rows lie past M
#pragma unroll
            for (int c = 0; c < TileN / kEpiCols; ++c) {
              if (col0 + c * kEpiCols >= P.n) continue;  // warp-uniform: the 32 columns lie past N
              // Accumulator register 4j + {0,1} holds (row g, cols 8j + 2t + {0,1}), 4j + {2,3} row g + 8.
#pragma unroll
              for (int jj = 0; jj < kEpiCols / 8; ++jj) {
                const int j = c * (kEpiCols / 8) + jj;
                *reinterpret_cast<float2*>(stg + g * kEpiStride + jj * 8 + 2 * t) =
                    make_float2(acc[i][4 * j], acc[i][4 * j + 1]);
                *reinterpret_cast<float2*>(stg + (g + 8) * kEpiStride + jj * 8 + 2 * t) =
                    make_float2(acc[i][4 * j + 2], acc[i][4 * j + 3]);
              }
              __syncwarp();
#pragma unroll
              for (int it = 0; it < kEpiItems / 32; ++it) {
                const int idx = it * 32 + lane;
                const int r = idx / kEpiVecPerRow;
                const int cv = idx % kEpiVecPerRow;
                const float* src = stg + r * kEpiStride + cv * V;
                float v[V];
                load_staged_row<V>(src, lane, v);
                const int row = row0 + i * 64 + r;
                const int col = col0 + c * kEpiCols + cv * V;
                if (row < P.m && col < P.n) {
                  const EpilogueCoord ec{batch, row, col, (P.n - col) < V ? (P.n - col) : V};
                  epilogue.template apply<V>(P.ep, state, ec, v);
                }
              }
              __syncwarp();  // the next pass overwrites the buffer
            }
          }
        }
      }
    }
    __syncwarp();
    epilogue.finish(P.ep, state);
    // No CTA leaves while a peer may still multicast into its shared memory or arrive on its
    // barriers: every peer has consumed its last stage before it arrives here.
    if constexpr (ClusterM > 1) sm90::cluster_sync();
  }

  // ------------------------------------------------------------------ host ----
  static constexpr long long kMaxDim = 0x7fffffffLL - 256;

  static long long tiles_m_of(const GemmProblem& p) { return (p.m + TileM - 1) / TileM; }
  static long long tiles_n_of(const GemmProblem& p) { return (p.n + TileN - 1) / TileN; }
  static int ktiles_of(const GemmProblem& p) { return (int)((p.k + TileK - 1) / TileK); }

  // The byte stride between batches TMA is given: the caller's for batch > 1, else one that
  // keeps the 1-deep batch dimension describable.
  static uint64_t batch_stride_bytes(int64_t ld, int64_t batch_stride, int rows, int batch) {
    const uint64_t row_stride = (uint64_t)ld * 2;
    if (batch > 1) return (uint64_t)batch_stride * 2;
    const uint64_t whole = row_stride * (uint64_t)(rows < 1 ? 1 : rows);
    return whole < (1ull << 40) ? whole : row_stride;
  }

  // Why TMA cannot describe an operand (nullptr: it can): cuTensorMapEncodeTiled needs a
  // 16-byte aligned base and strides that are multiples of 16 bytes below 2^40.
  static const char* tma_refusal(const char* name, const void* ptr, int64_t ld, int64_t batch_stride, int rows,
                                 int batch, char* msg, size_t cap) {
    const uint64_t bstride = batch_stride_bytes(ld, batch_stride, rows, batch);
    if (reinterpret_cast<uintptr_t>(ptr) % 16)
      snprintf(msg, cap, "kdl gemm sm90: %s must be 16-byte aligned for TMA", name);
    else if (((uint64_t)ld * 2) % 16 || (uint64_t)ld * 2 >= (1ull << 40))
      snprintf(msg, cap, "kdl gemm sm90: ld%s (%lld) must be a multiple of 8 elements (16 bytes) for TMA", name,
               (long long)ld);
    else if (batch > 1 && batch_stride == 0)
      snprintf(msg, cap, "kdl gemm sm90: batch_stride_%s is 0 (broadcast); TMA cannot describe a zero stride", name);
    else if (bstride % 16 || bstride >= (1ull << 40))
      snprintf(msg, cap, "kdl gemm sm90: batch_stride_%s (%lld) must be a multiple of 8 elements (16 bytes) for TMA",
               name, (long long)batch_stride);
    else
      return nullptr;
    return msg;
  }

  static const char* can_implement(const GemmProblem& p) {
    static thread_local char msg[320];
    auto fail = [&](const char* fmt, long long a = 0, long long b = 0, long long c = 0) -> const char* {
      snprintf(msg, sizeof(msg), fmt, a, b, c);
      return msg;
    };
    if (p.m < 0 || p.n < 0 || p.k < 0) return fail("kdl gemm sm90: negative problem size (m=%lld, n=%lld, k=%lld)", p.m, p.n, p.k);
    if (p.m > kMaxDim || p.n > kMaxDim || p.k > kMaxDim)
      return fail("kdl gemm sm90: problem too large (m=%lld, n=%lld, k=%lld)", p.m, p.n, p.k);
    if (p.batch < 1 || p.batch > 65535) return fail("kdl gemm sm90: batch (%lld) must be in [1, 65535]", p.batch);
    if (p.split_k != 1) return fail("kdl gemm sm90: split_k (%lld) must be 1 (no split-K on the sm90a path yet)", p.split_k);
    if (tiles_m_of(p) * tiles_n_of(p) * p.batch > 0x7fffffffLL) return fail("kdl gemm sm90: too many output tiles");
    if (p.m == 0 || p.n == 0 || p.k == 0) return nullptr;
    if (p.A == nullptr) return fail("kdl gemm sm90: A is null");
    if (p.B == nullptr) return fail("kdl gemm sm90: B is null");
    if (p.lda < p.k) return fail("kdl gemm sm90: lda (%lld) < k (%lld) for row-major A", p.lda, p.k);
    if (p.ldb < p.k) return fail("kdl gemm sm90: ldb (%lld) < k (%lld) for column-major B", p.ldb, p.k);
    if (p.batch > 1 && (p.batch_stride_a < 0 || p.batch_stride_b < 0))
      return fail("kdl gemm sm90: negative batch stride (a=%lld, b=%lld)", p.batch_stride_a, p.batch_stride_b);
    if (const char* e = tma_refusal("A", p.A, p.lda, p.batch_stride_a, p.m, p.batch, msg, sizeof(msg))) return e;
    if (const char* e = tma_refusal("B", p.B, p.ldb, p.batch_stride_b, p.n, p.batch, msg, sizeof(msg))) return e;
    return nullptr;
  }

  static size_t workspace_size(const GemmProblem&) { return 0; }

  // {K, rows, batch} with a TileK x rows_box box, 128-byte swizzle, out-of-range elements zero.
  static cudaError_t encode(CUtensorMap* map, const void* ptr, int64_t ld, int64_t batch_stride, int k, int rows,
                            int batch, int rows_box) {
    const DriverApi& api = driver_api();
    if (api.cuTensorMapEncodeTiled == nullptr) return cudaErrorNotSupported;
    cuuint64_t dims[3] = {(cuuint64_t)k, (cuuint64_t)rows, (cuuint64_t)batch};
    cuuint64_t strides[2] = {(cuuint64_t)((uint64_t)ld * 2), (cuuint64_t)batch_stride_bytes(ld, batch_stride, rows, batch)};
    cuuint32_t box[3] = {(cuuint32_t)TileK, (cuuint32_t)rows_box, 1};
    cuuint32_t estr[3] = {1, 1, 1};
    const CUresult r = api.cuTensorMapEncodeTiled(map, detail::TmaDtype<ElementA>::value, 3, const_cast<void*>(ptr), dims,
                                                  strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
  }

  // Per device: compute capability 9.x and the kernel's dynamic shared memory opted into.
  static cudaError_t prepare_device(int dev) {
    static PerDeviceOnce set_up;
    return set_up.run(dev, [dev] {
      int major = 0;
      if (cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev); e != cudaSuccess) return e;
      if (major != 9) return cudaErrorInvalidDeviceFunction;
      return cudaFuncSetAttribute(gemm_sm90_kernel<GemmSm90>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    });
  }

  static cudaError_t run(const GemmProblem& p, const typename Epilogue::Params& ep, void* workspace, cudaStream_t stream) {
    (void)workspace;
    if (can_implement(p) != nullptr) return cudaErrorInvalidValue;
    if (p.m == 0 || p.n == 0) return cudaSuccess;
    const int dev = current_device();
    if (dev < 0) return cudaErrorNoDevice;
    if (cudaError_t e = prepare_device(dev); e != cudaSuccess) return e;
    int sms = 0;
    if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev); e != cudaSuccess) return e;
    KernelParams kp;
    memset(&kp, 0, sizeof(kp));
    if (p.k > 0) {
      if (cudaError_t e = encode(&kp.tmA, p.A, p.lda, p.batch_stride_a, p.k, p.m, p.batch, TileM); e != cudaSuccess) return e;
      if (cudaError_t e = encode(&kp.tmB, p.B, p.ldb, p.batch_stride_b, p.k, p.n, p.batch, kBRowsPerCta); e != cudaSuccess)
        return e;
    }
    kp.m = p.m;
    kp.n = p.n;
    kp.batch = p.batch;
    kp.tiles_m = (int)tiles_m_of(p);
    kp.tiles_n = (int)tiles_n_of(p);
    kp.ktiles = ktiles_of(p);
    kp.ep = ep;
    const long long units = (kp.tiles_m + ClusterM - 1) / ClusterM * (long long)kp.tiles_n * p.batch;
    if constexpr (ClusterM == 1) {
      const unsigned grid = (unsigned)(units < sms ? units : sms);
      gemm_sm90_kernel<GemmSm90><<<grid, kThreads, kSmemBytes, stream>>>(kp);
      return cudaGetLastError();
    } else {
      // One cluster per ClusterM SMs (clusters that do not fit at once run after the others).
      cudaLaunchConfig_t cfg = {};
      cudaLaunchAttribute attr[1];
      attr[0].id = cudaLaunchAttributeClusterDimension;
      attr[0].val.clusterDim.x = ClusterM;
      attr[0].val.clusterDim.y = 1;
      attr[0].val.clusterDim.z = 1;
      cfg.blockDim = dim3(kThreads, 1, 1);
      cfg.dynamicSmemBytes = kSmemBytes;
      cfg.stream = stream;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      const long long clusters = sms / ClusterM;
      const long long c = units < clusters ? units : clusters;
      cfg.gridDim = dim3((unsigned)(c * ClusterM), 1, 1);
      return cudaLaunchKernelEx(&cfg, gemm_sm90_kernel<GemmSm90>, kp);
    }
  }
};

}  // namespace kdl
