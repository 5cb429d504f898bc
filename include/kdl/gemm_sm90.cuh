// kdl/gemm_sm90.cuh -- the Hopper (sm_90a) GEMM: TMA + wgmma, warp-specialized, persistent.
//
// kdl::GemmSm90<ElementA, LayoutA, ElementB, LayoutB, ElementAccum, TileM, TileN, TileK, Stages, Schedule,
//               ClusterM, ClusterN, RasterAlongM, PromoteEvery, BlockScaling, Epilogue> computes, per batch b,
//   D[b] = Epilogue(A[b] * B[b])      A: M x K, B: K x N,
// with the operands (sm90::OperandTile, kdl/gemm_sm90_operands.cuh; TileK x element = 128 bytes):
//   f16 or bf16 (TileK 64), A row- or column-major, B column- or row-major (wgmma reads a
//     column-major A / row-major B "MN-major" through its transpose bits);
//   float, read as tf32 (TileK 32), fp8 e4m3 / e5m2 mixed allowed (TileK 128), s8 / u8 mixed
//     allowed (TileK 128): A row-major, B column-major (K-major);
// f32 accumulation (s32 for s8 / u8, handed to the epilogue as float). Its host side has GemmSm80's
// static interface (kThreads, kSmemBytes, can_implement, workspace_size, run; split-K needs a
// workspace of workspace_size bytes).
//
// The algorithm:
//   * 3 warpgroups, 384 threads. Warpgroup 0 is the producer: it gives registers away
//     (setmaxnreg.dec 40) and one thread (a stage loader's small tiles: four, by turns, kIssuers)
//     issues, per k-tile, the TMA loads of the A tile
//     (TileM x TileK) and the B tile (TileN x TileK; TileK x element = 128 bytes; one box, or
//     one per 64 columns of an MN-major tile) into a ring of
//     `Stages` stages written with the 128-byte swizzle, announcing the bytes on the stage's full
//     barrier (expect_tx). Before it refills a stage it waits on the stage's empty barrier.
//   * Warpgroups 1 and 2 are the consumers (setmaxnreg.inc 232). Per k-tile a consumer waits on
//     the full barrier, issues the k-tile's wgmmas (32 bytes of K per k-step; A and B read from
//     shared memory through descriptors) as one group, keeps that group in flight, waits for the
//     previous group (wgmma.wait_group 1) and only then releases the previous stage (one arrival
//     per consumer warp on its empty barrier): a stage is never overwritten while a wgmma may
//     still read it.
//   * Schedules. Cooperative: both consumers take every tile and split it along M, TileM/2 rows
//     each (TileM 128 or 256). Pingpong: consumer c takes the CTA's tiles c, c + 2, ... whole
//     (TileM 64 or 128, at most 128 accumulator registers) and skips the other's k-tiles in the
//     ring (the producer fills it in the CTA's tile order); two named barriers hand the turn over
//     ("consumer c may issue"): a consumer waits for its turn, issues its tile's mainloop, then
//     passes the turn, so the two mainloops alternate and one's epilogue runs under the other's
//     MMAs.
//   * Persistent: the grid is the number of SMs (asked at run time); CTA i takes work units i,
//     i + grid, ... of all batches, each batch's units walked in GemmSm80's grouped raster
//     (bands of 8 tiles; RasterAlongM = false: bands of M-tiles, M fastest inside a band; true:
//     bands of N-tiles, N fastest, the sm80 template's flag). The ring's stage and phase carry on
//     from one tile to the next, so the producer loads the next tile while the consumers run the
//     epilogue of this one.
//   * Clusters of ClusterM x ClusterN CTAs (each 1 or 2; grid: SMs / cluster size clusters) walk
//     units of ClusterM x ClusterN adjacent tiles; the CTAs of a cluster column (same N-tile)
//     share the B tile, those of a cluster row (same M-tile) the A tile: each loads its slice of
//     the shared tile and multicasts it to the others (halving that operand's L2 reads). A stage's
//     empty barrier then counts the reading consumer warps of every CTA that writes a slice of it
//     (its row and its column: remote arrivals, released at CTA scope: see
//     mbarrier_arrive_cluster_cta_scope), and no CTA exits before its peers are done with it (a
//     cluster barrier at the end).
//   * fp8 promotion (PromoteEvery = N >= 1): fp8 wgmma accumulates with reduced precision, so N
//     k-tiles at a time accumulate in a temporary wgmma accumulator started from zero; after they
//     complete (wgmma.wait_group 0) it is added into the f32 accumulator. Block scaling
//     (BlockScaling<BlockMA, BlockNB, BlockK>, DeepGEMM-style; BlockK = TileK) promotes every k-tile
//     with its scales: acc += tmp * scale_a[row block] * scale_b[column block]. The k-block's scales
//     (GemmProblem::scale_a/_b, k-block major) travel with its stage: the producer warpgroup's second
//     warp copies them (cp.async) into the stage's scale slot and arrives on its full barrier when they
//     have landed, so a consumer reads them from shared memory instead of waiting on global loads.
//     Both need the second accumulator: at most 64 f32 registers each.
//   * Serial split-K (GemmProblem::split_k = S > 1, for few output tiles, e.g. 128 x 8192 x 8192):
//     a unit is one k-slice of a tile (the slices of a tile are consecutive units, so they run on
//     different SMs at the same time); slices 0..S-2 store their f32 partial sums in workspace slots of
//     their own and count themselves on the tile's semaphore, the last slice waits for them, adds the
//     slots in slice order and runs the epilogue: deterministic, see reduce_slices.
//   * Stream-K tail (split_k = 1, a workspace given, the last wave of tile groups 1/4 to 2/3 full: see
//     stream_k_groups): the full waves run whole tiles; the last wave's k-tiles are spread evenly over
//     all walkers and added in the same workspace protocol as split-K (unit_at).
//   * Residues: TMA zero-fills what lies outside M, N, K (3-D tensor maps: K, rows, batch);
//     the epilogue stores in range only.
//   * Epilogue, TMA store (a functor that hands D's values back: Epilogue::ElementD and
//     compute<V>, see detail::EpilogueD in kdl/epilogue.cuh; every functor kdlc emits does): per m64 block of its rows,
//     each consumer warpgroup passes its accumulator pairs to compute<2> (which loads C and the
//     broadcasts, stores extra outputs and accumulates amax itself), converts D to its type into
//     boxes of 64 rows x 128 bytes in its own part of the epilogue buffer (128-byte swizzle), and
//     one thread stores the boxes with TMA (clipped at M and N) without waiting for them: the stores
//     run under the next tile's mainloop, and a buffer is only rewritten once TMA has read it. A
//     cooperative tile without clusters writes its second pass into the stage of its last k-tile,
//     held from the producer until that pass's stores have read it (kHoldStage), so its second pass
//     need not wait for the first pass's store. The pingpong 128 x 128 conv patch kernels pace their
//     epilogue's shared-memory writes beside the other consumer's wgmmas (kPaceEpilogue).
//     run() takes this path when TMA can describe D (16-byte aligned, ld and batch stride
//     multiples of 16 bytes) and N x sizeof(D) is a multiple of 16 bytes (the TMA store clips at N in
//     16-byte granules); otherwise, and for functors with apply<V> only, the staged path:
//     each consumer warp stages its 16 rows of the accumulator through the buffer, 32 columns at a
//     time (16 x 32 f32, rows padded to 40 floats: conflict-free float2 writes and 16-byte reads),
//     and hands V consecutive in-range columns at a time (V = Epilogue::kVectorWidth when
//     declared, else 8) to Epilogue::apply<V>, so a store_tile becomes one 16-byte store. Either
//     way every thread of the block then calls finish. The two consumer warpgroups never wait on
//     each other in the epilogue; meanwhile the producer, gated only by the empty barriers, has
//     already filled up to Stages k-tiles of the next tile.
//
// Shared memory (kdl/gemm_sm90_smem.h): Stages x (A tile, B tile), every tile 1024-byte aligned (the
// swizzle atom), then full[Stages] and empty[Stages] barriers, then the epilogue buffer (1024-byte
// aligned; 16 KB per consumer warpgroup where that fits, else 10 KB); 1 KB slack aligns the dynamic base.
// The kernel needs the sm_90a target (-gencode=arch=compute_90a,code=sm_90a); built for any
// other target its body traps, and run() refuses devices that are not compute capability 9.x.
#pragma once
#include "kdl/gemm_sm80_tma.cuh"  // detail::TmaDtype, driver_api, per-device set-up
#include "kdl/fast_div.h"  // FastDiv: place_group's divisions
#include "kdl/gemm_sm90_operands.cuh"  // sm90::OperandTile: TMA maps, loads and descriptors per type and layout
#include "kdl/gemm_sm90_smem.h"
#include "kdl/smem_layout.cuh"  // SwizzledTile: the 128-byte swizzle of D's staging box
#include "kdl/wgmma_sm90.cuh"

#include <stdlib.h>
#include <string.h>


// KDL_TRACE (a diagnostic build, tests/gpu/standalone/trace_sm90.cu): the producer thread and thread 0 of each
// consumer warpgroup of the first KDL_TRACE_CTAS CTAs stamp clock64() at fixed points of every unit
// (consumer: unit top, first stage ready, mainloop end, epilogue end; producer: unit top, first load,
// last load), so that the cycles between two tiles can be taken apart (docs/perf-notes.md v28).
// Off (and empty) in every other build.
#ifdef KDL_TRACE
#ifndef KDL_TRACE_CTAS
#define KDL_TRACE_CTAS 132
#endif
#define KDL_TRACE_UNITS 48
__device__ unsigned long long kdl_trace[KDL_TRACE_CTAS][3][KDL_TRACE_UNITS][4];
#define KDL_TRACE_AT(role, j, e) do { if (blockIdx.x < KDL_TRACE_CTAS && (j) < KDL_TRACE_UNITS) kdl_trace[blockIdx.x][role][j][e] = clock64(); } while (0)
// Per CTA (the last launch's): the global timer (ns) at its start and at its consumers' last store, its SM, and
// its units under the fixed walk (with tickets, what it would have walked).
__device__ unsigned long long kdl_trace_cta[KDL_TRACE_CTAS][4];
#define KDL_TRACE_CTA(e, v) do { if (blockIdx.x < KDL_TRACE_CTAS) kdl_trace_cta[blockIdx.x][e] = (v); } while (0)
#else
#define KDL_TRACE_AT(role, j, e) do {} while (0)
#define KDL_TRACE_CTA(e, v) do {} while (0)
#endif
// KDL_TRACE_WAITS (with KDL_TRACE): the cycles each consumer's thread 0 waits on a stage's full barrier and the
// producer's issuers on its empty barrier, summed per k-tile index over the units of every launch, with the count
// (docs/perf-notes.md v31). Two global atomics per wait: they slow the producer, so compare such builds only
// with each other.
#if defined(KDL_TRACE) && defined(KDL_TRACE_WAITS)
__device__ unsigned long long kdl_trace_wait[KDL_TRACE_CTAS][3][2][128];
#define KDL_TRACE_T0(v) const unsigned long long v = clock64()
#define KDL_TRACE_WAIT(role, kt, t0)                                                              \
  do {                                                                                            \
    if (blockIdx.x < KDL_TRACE_CTAS) {                                                            \
      const int k_ = (kt) < 127 ? (kt) : 127;                                                     \
      atomicAdd(&kdl_trace_wait[blockIdx.x][role][0][k_], (unsigned long long)(clock64() - (t0))); \
      atomicAdd(&kdl_trace_wait[blockIdx.x][role][1][k_], 1ull);                                  \
    }                                                                                             \
  } while (0)
#else
#define KDL_TRACE_T0(v) do {} while (0)
#define KDL_TRACE_WAIT(role, kt, t0) do {} while (0)
#endif
#ifdef KDL_TRACE
__device__ __forceinline__ unsigned long long kdl_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned kdl_smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %smid;" : "=r"(s));
  return s;
}
#endif

namespace kdl {

template <class Gemm>
__global__ void __launch_bounds__(Gemm::kThreads, 1) gemm_sm90_kernel(const __grid_constant__ typename Gemm::KernelParams params) {
#if KDL_WGMMA_SM90A
  Gemm::device_main(params);
#elif defined(__CUDA_ARCH__)
  __trap();  // built without sm_90a: never launched (run() checks the device)
#endif
}

// Whether GemmSm90::run launches its kernel as a programmatic dependent launch, so that its set-up overlaps the
// tail of the kernel before it in the stream (the kernel waits for that one's writes before it touches memory):
// yes, unless the environment variable KDL_PDL is "0" when the process first asks (docs/language.md section 8).
inline bool programmatic_launch() {
  static const bool on = [] {
    const char* e = getenv("KDL_PDL");
    return e == nullptr || strcmp(e, "0") != 0;
  }();
  return on;
}

namespace detail {
template <class E> struct is_fp8 { static constexpr bool value = false; };
template <> struct is_fp8<__nv_fp8_e4m3> { static constexpr bool value = true; };
template <> struct is_fp8<__nv_fp8_e5m2> { static constexpr bool value = true; };

// Whether an AGather lets GemmSm90 take its tiles in run-time order (GemmSm90::kDyn): yes unless it declares
// `kDynamicOrder = false`.
template <class G, class = void>
struct allows_dynamic_order { static constexpr bool value = true; };
template <class G>
struct allows_dynamic_order<G, decltype((void)G::kDynamicOrder)> { static constexpr bool value = G::kDynamicOrder; };

// A patch loader's slot size (GemmSm90::kPatch; 0: the loader fills A in the stages).
template <class G, class = void>
struct patch_slot_bytes { static constexpr int value = 0; };
template <class G>
struct patch_slot_bytes<G, decltype((void)G::kPatchSlotBytes)> { static constexpr int value = G::kPatchSlotBytes; };
template <class G, class = void>
struct patch_taps { static constexpr int value = 1; };
template <class G>
struct patch_taps<G, decltype((void)G::kPatchTaps)> { static constexpr int value = G::kPatchTaps; };

// D's TMA element type: the operands' (16-bit types, float, bytes), and s32.
template <class E>
struct Sm90StoreDtype : Sm90TmaDtype<E> {};
template <>
struct Sm90StoreDtype<int32_t> {
  static constexpr CUtensorMapDataType value = CU_TENSOR_MAP_DATA_TYPE_INT32;
};
}  // namespace detail

namespace sm90 {
// Block scaling of the mainloop (fp8): NoBlockScaling, or one f32 scale per BlockMA x BlockK block of A
// and per BlockNB x BlockK block of B, applied when each k-block is promoted into the f32 accumulator.
struct NoBlockScaling {
  static constexpr bool kEnabled = false;
  static constexpr int kBlockMA = 1, kBlockNB = 1, kBlockK = 1;  // unused
};
template <int BlockMA, int BlockNB, int BlockK>
struct BlockScaling {
  static constexpr bool kEnabled = true;
  static constexpr int kBlockMA = BlockMA, kBlockNB = BlockNB, kBlockK = BlockK;
};
// Where the A tiles come from: TMA (NoGather, the GEMM), or a gather (an implicit GEMM's A, e.g.
// kdl/conv_sm90.cuh's ConvFpropGather): all 128 producer threads write the K-major, 128-byte-swizzled
// A tile of a stage with cp.async (`Rows<TileM>`: init(params, batch, tm, thread) once per tile,
// load(params, stage_a, kt) per k-tile) and arrive on the
// stage's full barrier when their copies land (cp.async.mbarrier.arrive.noinc); B still comes by TMA,
// one tile shared by every batch (the gather's batch is the implicit GEMM's, e.g. the image).
// The gather also says where k-tile kt lies along B's K (`b_k(params, kt)`): it may walk K in its own order.
// An AGather with kLoadsStage loads both tiles of a stage itself, by TMA from the producer's issuing threads
// in two steps: `Load prepare<TileA, TileB>(params, batch, m0, n0, kt, slice_b, slice_a)` finds the
// coordinates of the A tile at rows m0 and the B tile at columns n0, k-tile kt (before the stage is free),
// `issue<TileA, TileB>(params, load, stage_a, stage_b, full, mask_b, mask_a)` loads them in TileA's and
// TileB's layouts; with ClusterM > 1 only B's slice `slice_b` (of TileB's ClusterM), multicast to the CTAs
// of `mask_b`, with ClusterN > 1 only A's slice `slice_a` to those of `mask_a` (AGather::kMaxClusterM,
// kMaxClusterN say what the loader can); m0 or n0 may lie past the last row or column (the cluster's last
// tile; the loader still completes the stage); e.g. conv fprop's X in im2col
// mode and W as a 3-D tensor, kdl/conv_sm90.cuh); GemmSm90 then encodes no tensor map of A or B.
// A patch loader (kPatchSlotBytes > 0: kdl/conv_sm90.cuh's ConvFpropPatchLoader) loads B alone into the stages
// (`issue<TileA, TileB>(params, load, stage_b, full)`) and, once per kPatchTaps k-tiles, a patch of A's source
// into one of two slots (by turns), on the full barrier of a k-tile before the patch's first
// (`issue_patch(params, m0, patch, slot, full)`: patch `patch` of the unit at rows m0, `patch_bytes(params)` of
// it). The consumers read A out of the slot: m64 block i of the tile at k-tile `t` into its patch at
// `tap_offset(params, t)` + i * `block_step(params)` (16-byte units, from the slot's start); `store_d(params, src,
// col, row)` stores a 64-row box of D at the tile row `row` (tiles_m x TileM rows: the loader's tiles, every one
// whole), TMA clipping what lies outside the output.
// A thread gather's per-thread rows (AGather::Rows<TileM>); nothing for the TMA loaders, which need none.
template <bool Gathers, class AGather, int TileM>
struct GatherRows {
  using type = typename AGather::template Rows<TileM>;
};
template <class AGather, int TileM>
struct GatherRows<false, AGather, TileM> {
  struct type {};
};
struct NoGather {
  static constexpr bool kEnabled = false;
  static constexpr bool kLoadsStage = false;
  static constexpr int kMaxClusterM = 1;  // unused (GemmSm90 loads by its own tensor maps)
  static constexpr int kMaxClusterN = 1;
  struct Params {};
};
}  // namespace sm90

template <class ElementA, class LayoutA, class ElementB, class LayoutB, class ElementAccum, int TileM, int TileN,
          int TileK, int Stages, Sm90Schedule Schedule, int ClusterM, int ClusterN, bool RasterAlongM, int PromoteEvery,
          class BlockScaling, class Epilogue, class AGather = sm90::NoGather>
struct GemmSm90 {
  static constexpr bool kFp8 = detail::is_fp8<ElementA>::value;
  // The operands: wgmma's families (f16, bf16, tf32 = float, fp8 e4m3/e5m2 mixed, s8/u8 mixed); f16
  // and bf16 in either layout (MN-major through wgmma's transpose bits), the others K-major.
  static_assert(sm90::WgmmaOperand<ElementA>::kFamily == sm90::WgmmaOperand<ElementB>::kFamily,
                "GemmSm90: A and B must both be f16, both bf16, both float (tf32), both fp8 (e4m3 / e5m2, mixed "
                "allowed) or both 8-bit integers (s8 / u8, mixed allowed)");
  static constexpr bool kAKMajor = detail::is_same_t<LayoutA, RowMajor>::value;
  static constexpr bool kBKMajor = detail::is_same_t<LayoutB, ColMajor>::value;
  static_assert((kAKMajor || detail::is_same_t<LayoutA, ColMajor>::value) &&
                    (kBKMajor || detail::is_same_t<LayoutB, RowMajor>::value),
                "GemmSm90: LayoutA and LayoutB must be kdl::RowMajor or kdl::ColMajor");
  // The accumulator: f32, s32 for s8/u8 (the epilogue receives it converted to float).
  using Acc = sm90::wgmma_accum_t<ElementA, ElementB>;
  static_assert(detail::is_same_t<ElementAccum, Acc>::value,
                "GemmSm90: ElementAccum must be float (int32_t for s8 / u8 operands)");
  static_assert(TileK * int(sizeof(ElementA)) == 128,
                "GemmSm90: TileK must be one 128-byte swizzled row (64 for 16-bit types, 128 for 8-bit types, 32 for "
                "float)");
  static_assert(TileN == 64 || TileN == 128 || TileN == 256, "GemmSm90: TileN must be 64, 128 or 256 (the wgmma N)");
  static_assert(Stages >= 2 && Stages <= 8, "GemmSm90: Stages must be 2..8");
  static_assert((ClusterM == 1 || ClusterM == 2) && (ClusterN == 1 || ClusterN == 2),
                "GemmSm90: ClusterM and ClusterN must be 1 or 2 (clusters of up to 2 x 2 CTAs)");

  static constexpr bool kPingpong = Schedule == Sm90Schedule::Pingpong;
  static_assert(kPingpong ? (TileM == 64 || TileM == 128) : (TileM == 128 || TileM == 256),
                "GemmSm90: TileM must be 128 or 256 for the cooperative schedule (two consumer warpgroups split it), "
                "64 or 128 for pingpong (one consumer warpgroup owns it)");
  static constexpr int kConsumers = 2;                  // consumer warpgroups
  static constexpr int kClusterM = ClusterM;
  static constexpr int kClusterN = ClusterN;
  static constexpr int kClusterSize = ClusterM * ClusterN;
  using BlockScalingT = BlockScaling;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  // A gathered by the producer warpgroup (AGather): its 128 threads compute addresses, so they keep more
  // registers than the TMA producer's issuing threads.
  static constexpr bool kGather = AGather::kEnabled;
  static constexpr bool kLoadsStage = AGather::kLoadsStage;  // A and B by the AGather's TMA loads
  // A stage loader loads this CTA's slice of the A tile (multicast to the CTAs of its cluster row, ClusterN of
  // them) and of the B tile (to its cluster column, ClusterM of them), where the loader can:
  // AGather::kMaxClusterN, kMaxClusterM.
  static_assert(!kLoadsStage || (!kGather && ClusterM <= AGather::kMaxClusterM && ClusterN <= AGather::kMaxClusterN),
                "GemmSm90: a stage loader shares A across at most its kMaxClusterN CTAs, B across its kMaxClusterM");
  static constexpr bool kProducerLoads = kGather || kLoadsStage;  // produce_gathered runs the producer
  static_assert(!kGather || (kAKMajor && ClusterN == 1 && sizeof(ElementA) == 2),
                "GemmSm90: a gathered A is a K-major 16-bit tile of one CTA (ClusterN == 1)");
  static constexpr int kProducerRegs = kGather ? 56 : 40;
  // The TMA producer: lane 0 of the producer warpgroup's first kIssuers warps, taking turns by k-tile
  // (each issues every kIssuers-th k-tile of the CTA's walk). A stage loader's one thread spent ~700
  // cycles per k-tile on a conv's coordinates, waits and issue (ncu, docs/perf-notes.md v18), more than
  // the wgmmas of a tile of at most 128 x 128 take (~512): the ring ran dry. Four issuers there; one
  // for larger tiles and GemmSm90's own maps (a second one measured 0.3-2 % slower on those). At most Stages of
  // them: an issuer waits on its stage's empty barrier by parity, and passes at once when the stage's last two uses
  // are both unreleased; what it has issued before (its previous k-tile, kIssuers back, waited for the release of
  // the k-tile Stages before that) proves every use up to kIssuers + Stages back released, which covers 2 x Stages
  // back only while kIssuers <= Stages (4 issuers on 3 stages overwrote a stage in use: a launch failure, found
  // by the GPU suite's random kernels).
  static constexpr int kIssuers = kLoadsStage && TileM <= 128 && TileN <= 128 ? (Stages < 4 ? Stages : 4) : 1;
  static_assert(kIssuers <= Stages, "GemmSm90: more stage-loader issuers than stages would race on the empty barriers");
  static constexpr int kConsumerRegs = kGather ? 224 : 232;
  static_assert((kProducerRegs + kConsumers * kConsumerRegs) * 128 <= 65536,
                "GemmSm90: the setmaxnreg budgets exceed the SM's 64K registers");
  static constexpr int kRowsPerConsumer = kPingpong ? TileM : TileM / kConsumers;  // rows one consumer computes
  static constexpr int kMmaM = kRowsPerConsumer / 64;   // m64 wgmmas per consumer per k-step
  static constexpr int kAccRegs = TileN / 2;            // f32 registers of one m64 x TileN accumulator
  static_assert(kMmaM * kAccRegs <= 128, "GemmSm90: the accumulator exceeds 128 registers per consumer thread "
                                         "(pingpong: TileM x TileN <= 128 x 128 or 64 x 256)");
  // fp8 promotion: PromoteEvery k-tiles accumulate in a temporary wgmma accumulator (from zero), which
  // is then added (block scaling: times the k-block's scales) into the f32 accumulator.
  static constexpr bool kBlockScaled = BlockScaling::kEnabled;
  static constexpr int kPromoteEvery = kBlockScaled ? 1 : PromoteEvery;
  static constexpr bool kPromote = kPromoteEvery > 0;
  static_assert(PromoteEvery >= 0, "GemmSm90: PromoteEvery must be 0 (fast accumulation) or >= 1");
  static_assert(!kPromote || kFp8, "GemmSm90: promotion and block scaling are for fp8 operands");
  static_assert(!kBlockScaled || PromoteEvery <= 1, "GemmSm90: block scaling promotes every k-block: PromoteEvery must be 0 or 1");
  static_assert(!kBlockScaled || (BlockScaling::kBlockK == TileK && BlockScaling::kBlockMA >= 1 &&
                                  BlockScaling::kBlockNB % TileN == 0),
                "GemmSm90: block scaling needs BlockK == TileK (one k-tile per k-block) and BlockNB a multiple of TileN "
                "(one B scale per tile and k-block)");
  // Promotion every k-tile (block scaling, PromoteEvery 1) runs two k-tiles at a time in two temporaries.
// `kdlc build`'s second try (KDL_SM90_EPILOGUE_CHECKED, for a kernel ptxas reported spilling) promotes one
// k-tile at a time: one temporary accumulator fewer.
#if defined(KDL_SM90_NO_PAIR_PROMOTE) || defined(KDL_SM90_EPILOGUE_CHECKED)
  static constexpr bool kPairPromote = false;
#else
  static constexpr bool kPairPromote = kPromote && kPromoteEvery == 1;
#endif
  static_assert(!kPromote || kMmaM * kAccRegs <= 64,
                "GemmSm90: promotion keeps a second accumulator: at most 64 f32 registers each (e.g. cooperative "
                "128 x 128, pingpong 64 x 128)");
  static_assert(sm90::wgmma_n_supported<ElementA>(TileN), "GemmSm90: TileN is not a wgmma N for these operands");
  static constexpr int kKSteps = TileK * int(sizeof(ElementA)) / 32;  // wgmma k-steps (32 bytes of K) per k-tile
  static constexpr int kReaderWarps = (kPingpong ? 1 : kConsumers) * 4;  // consumer warps that read each stage
  static constexpr int kRasterGroup = 8;                 // tiles per raster band
  // The operand tiles of a stage; the CTAs of a cluster row share (and slice) A, those of a column B.
  using TileA = sm90::OperandTile<ElementA, kAKMajor, TileM, TileK, ClusterN>;
  using TileB = sm90::OperandTile<ElementB, kBKMajor, TileN, TileK, ClusterM>;
  static constexpr int kTurnBarrier = 1;                 // pingpong: named barriers 1, 2 = "consumer 0, 1 may issue"

  // A patch loader (detail::patch_slot_bytes): the stages hold B alone; two patch slots follow them.
  static constexpr int kPatchSlotBytes = detail::patch_slot_bytes<AGather>::value;
  static constexpr bool kPatch = kPatchSlotBytes > 0;
  static constexpr int kPatchTaps = detail::patch_taps<AGather>::value;  // k-tiles per patch
  // Where the next patch is loaded: on the stage of the k-tile kPatchAhead into the current one, the first that may
  // overwrite the slot (last read by the patch before the current one, whose last k-tile is then the one Stages
  // back: its release is what the producer waits for), kPatchTaps - kPatchAhead k-tiles before its first tap;
  // 0: at the patch's own first k-tile (Stages - 1 >= kPatchTaps).
  static constexpr int kPatchAhead = Stages - 1 < kPatchTaps ? Stages - 1 : 0;
  static_assert(!kPatch || (kLoadsStage && ClusterM == 1 && ClusterN == 1 && kAKMajor && !kFp8 &&
                            kPatchSlotBytes % 1024 == 0 && Stages <= kPatchTaps + 1 &&
                            detail::EpilogueD<Epilogue>::kComputes && TileN % (128 / int(sizeof(typename
                            detail::EpilogueD<Epilogue>::Element))) == 0),
                "GemmSm90: a patch loader runs without clusters, 16-bit K-major A, at most "
                "kPatchTaps + 1 stages (a slot is reloaded once the stage of the k-tile Stages back is released), and "
                "an epilogue that stores D by TMA (its tiles' rows are the loader's, mapped to D's by output_row)");
  static constexpr int kTileBytesA = kPatch ? 0 : TileA::kBytes;
  static constexpr int kTileBytesB = TileB::kBytes;
  static constexpr int kStageBytes = kTileBytesA + kTileBytesB;
  static constexpr int kPatchOffset = Stages * kStageBytes;
  static constexpr int kBarOffset = kPatchOffset + 2 * kPatchSlotBytes;
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
  // Block scaling: each stage's scale slot holds the k-block's TileM scales of A and its scale of B.
  static constexpr bool kStageScales = kBlockScaled;
  static constexpr GemmSm90SmemShape kSmemShape{int(sizeof(ElementA)), int(sizeof(ElementB)), TileM, TileN, TileK,
                                                Stages, int(Schedule), kStageScales ? TileM : 0, kPatchSlotBytes};
  static constexpr int kScaleOffset = gemm_sm90_scale_offset(kSmemShape);
  static constexpr int kScaleSlotBytes = gemm_sm90_scale_slot_bytes(kSmemShape);
  static constexpr int kEpiOffset = gemm_sm90_epilogue_offset(kSmemShape);  // 1024-byte aligned
  static constexpr int kEpiBytes = gemm_sm90_epilogue_smem_bytes(kSmemShape);
  static constexpr int kEpiWgBytes = kEpiBytes / kConsumers;  // one consumer warpgroup's part
  static_assert(kEpiOffset >= kBarOffset + 2 * Stages * 8 && kEpiWgBytes >= 4 * kEpiWarpFloats * 4 &&
                    kEpiWgBytes % 1024 == 0,
                "GemmSm90: the epilogue buffer must follow the barriers and hold 4 warps' staging");
  static constexpr int kSmemBytes = 1024 + kEpiOffset + kEpiBytes;
  static_assert(kSmemBytes == gemm_sm90_smem_bytes(kSmemShape), "GemmSm90: kdl/gemm_sm90_smem.h disagrees");
  // The TMA store of D (a functor that computes D, D in boxes of 64 rows x 128 bytes with the 128-byte
  // swizzle, kChunkBoxes of them per pass through the warpgroup's buffer).
  using ElementD = typename detail::EpilogueD<Epilogue>::Element;
  static constexpr int kBoxCols = 128 / int(sizeof(ElementD));
  static constexpr int kBoxBytes = 64 * 128;
  using Swizzle128 = SwizzledTile<128>;  // a box row's 16-byte units, as the TMA store's map reads them
  static constexpr bool kTmaStoreD = detail::EpilogueD<Epilogue>::kComputes && TileN % kBoxCols == 0;
  static constexpr int kBoxesPerBlock = kTmaStoreD ? TileN / kBoxCols : 1;
  static constexpr int kChunkBoxes = kBoxesPerBlock < kEpiWgBytes / kBoxBytes ? kBoxesPerBlock : kEpiWgBytes / kBoxBytes;
  static_assert(kChunkBoxes >= 1 && kBoxesPerBlock % kChunkBoxes == 0, "GemmSm90: D's boxes per chunk");
  // A 16-bit D written into the boxes by `stmatrix.x4` (two 8-column groups of a warp's 16 rows per instruction)
  // instead of one 4-byte write per pair: a quarter of the store instructions. Where a consumer's epilogue runs
  // beside the other consumer's wgmmas (pingpong) it measured faster: the conv patch mainloop 0.4-1.5 % in pairs
  // beside cuDNN (docs/perf-notes.md v54), the pingpong GEMMs beside cuBLASLt (v54, v55). The cooperative tiles,
  // whose epilogue runs beside no wgmma, were level (v25, v54) and keep the 4-byte writes.
  static constexpr bool kStmatrixD = kTmaStoreD && kPingpong &&
                                     (std::is_same_v<ElementD, half> || std::is_same_v<ElementD, __nv_bfloat16>);
  // A pingpong consumer's epilogue runs beside the other consumer's mainloop and slows its wgmmas (docs/perf-notes.md
  // v50: ~330 cycles of a 20 k-cycle unit on the conv patch kernel). Paced, it writes one stmatrix.x4 (512 bytes per
  // warp) at a time and sleeps kPaceCyclesPerKtile cycles per k-tile of its unit (at most kPaceMaxCycles) after each:
  // 16 pauses of 252 cycles stretch a 128 x 128 tile's epilogue from ~4.7 k to ~9 k cycles, inside the other's 20 k
  // (36 k-tiles), so its wgmmas meet the epilogue's shared-memory traffic spread out instead of in bursts. Only while
  // the other consumer has a unit beside it (the CTA's last epilogue is not paced). Where it measured faster (v57,
  // beside cuDNN in one process): the 128 x 128 conv patch kernels, +0.7 % on N32 C256 56x56 K256, +0.2 % on N32 C512
  // 28x28 K512, +4.8 % on N128 C64 56x56 K64 (pauses of 150-600 cycles alike). Not elsewhere: the 128 x 64 patch
  // kernels lost 1.4-5.5 %, the pingpong 64 x 128 GEMMs 1-3 %, the 128 x 128 GEMMs level at K = 4096-8192 and -2 % at
  // K = 1024 (whose other mainloop is too short to hide the stretched epilogue).
  static constexpr bool kPaceEpilogue = kStmatrixD && kPatch && TileM == 128 && TileN == 128;
  static constexpr int kPaceCyclesPerKtile = 7, kPaceMaxCycles = 256;
  // Straight-line interior chunks where the functor can say its tile needs no checks (whole<2>).
  // KDL_SM90_EPILOGUE_CHECKED turns them off: `kdlc build`'s second try for a kernel whose first
  // compile ptxas reported spilling (codegen/build_ptxas.h, kSm90CheckedEpilogueFlag).
#ifdef KDL_SM90_EPILOGUE_CHECKED
  static constexpr bool kEpiWhole = false;
#else
  static constexpr bool kEpiWhole = kTmaStoreD && HasEpilogueWhole<Epilogue, 2>::value;
#endif
  // The functor's [col] vectors (ColVector, kdl/epilogue.cuh), loaded into registers at each unit's start: a lane
  // holds columns 8 j + 2 (lane % 4) + {0, 1} of the 8-column groups j = lane / 4 + 8 q, kColRegs values per vector,
  // and the TMA-store epilogue hands each pair its values by a shuffle from the lane that holds them (instead of
  // loads whose latency the epilogue waits for window by window: docs/perf-notes.md v45). The first vectors that
  // fit in 8 registers (one at TileN 256); the functor loads the others itself, and all of them in kdlc build's
  // later tries (KDL_SM90_NO_COL_REGS, the first of them for a functor with [col] vectors, then the checked and
  // narrower epilogues: each later try is the build it was before the vectors were held).
  static constexpr int kColRegs = TileN / 32;
#if defined(KDL_SM90_NO_COL_REGS) || defined(KDL_SM90_EPILOGUE_CHECKED) || \
    (defined(KDL_EPILOGUE_MAX_VECTOR_WIDTH) && KDL_EPILOGUE_MAX_VECTOR_WIDTH < 16)
  static constexpr int kColVecs = 0;
#else
  static constexpr int kColVecs = !kTmaStoreD || TileN % 64 != 0 ? 0
                                  : ColVectorCount<Epilogue>::value < 8 / kColRegs ? ColVectorCount<Epilogue>::value
                                                                                  : 8 / kColRegs;
#endif
  static constexpr bool kStageCols = kColVecs > 0;
  using ColRegs = float[kStageCols ? kColVecs : 1][kStageCols ? kColRegs : 1];
  static constexpr int kEpiBarrier = kTurnBarrier + 4;  // named barriers 5, 6: consumer 0's, 1's epilogue buffer
  static constexpr int kHoldBarrier = kTurnBarrier + 6;  // named barrier 7: both consumers, before a held stage's pass
  // The cooperative TMA-store epilogue writes its second pass (of two) into the stage its tile's last k-tile was
  // read from, which the consumers hold back from the producer until the stores have read it (released after
  // the next unit's first k-tile is issued), instead of waiting for the first pass's store to read the buffer
  // (docs/perf-notes.md v21: +1 % at 4096^3, +0.8-1.4 % on the conv; v23, the 256 x 128 tile: +0.2-1.3 % on the
  // GEMMs and the 3x3 conv, -1.5-2 % on the memory-bound 1x1, where the producer misses the held stage). Needs a
  // stage that holds both consumers' passes and a second stage for the next unit's first k-tile; clusters (remote
  // releases) keep the plain wait.
  // The passes: kChunksPerBlock per m64 block, kMmaM blocks (two: 128 x 256's one block in two chunks, or
  // 256 x 128's two blocks of one chunk each).
  static constexpr int kChunksPerBlock = kBoxesPerBlock / kChunkBoxes;
  static constexpr int kEpiPasses = kMmaM * kChunksPerBlock;
  static constexpr bool kHoldStage = !kPingpong && Stages >= 2 && kClusterSize == 1 && !kPromote && kTmaStoreD &&
                                     kEpiPasses == 2 && kConsumers * kChunkBoxes * kBoxBytes <= kStageBytes;
  // A unit holds its last stage only when its k-loop has at least 4 x Stages k-tiles: the held stage is one the
  // producer cannot refill for the next unit's first k-tile, which a short k-loop misses more than the wait for
  // the first pass's store costs (docs/perf-notes.md v29: without it the 1x1 conv's 256 x 128 tile, 2 k-tiles,
  // +3.5 %, the K64 conv's 256 x 64 s4, 9 k-tiles, +6 %; GEMMs of 8 to 64 k-tiles within 0.5 %, held or not).
  static constexpr int kHoldMinKtiles = 4 * Stages;
  // Units in a run-time order (run() decides per problem: dynamic_order): each CTA takes its next unit by an
  // atomic ticket on a counter in the workspace (KernelParams::tickets) instead of walking every walkers-th
  // unit. Where a kernel is DRAM-bound the SMs do not move bytes at one rate (the 1x1 conv's CTAs ended
  // between 80 and 154 us of a 154 us launch under the static walk, SMs busy 82 %: docs/perf-notes.md v30);
  // tickets give the faster SMs more units. The producer's first issuer takes the tickets (one unit ahead)
  // and publishes each unit's index in a ring in shared memory, which the other walkers of the CTA (its
  // other issuers, every consumer warp) read. Cooperative kernels without clusters, block scales or a
  // thread-gathered A (a pingpong consumer would also have to read its partner's units), and not for a loader
  // that declares kDynamicOrder = false (the conv wgrad's).
  static constexpr bool kDyn = kClusterSize == 1 && !kPingpong && !kGather && !kStageScales &&
                               detail::allows_dynamic_order<AGather>::value;
  static constexpr int kTicketSlots = 8;
  static constexpr int kTicketOffset = kBarOffset + 2 * Stages * 8;  // ring (ints), full[slots], empty[slots]
  // Readers of a slot: the producer's other issuers, every consumer warp (the producer's first issuer writes it).
  static constexpr int kTicketReaders = (kProducerLoads ? kIssuers - 1 : 0) + kConsumers * 4;
  struct Tickets {
    uint32_t smem;  // the ring's shared-memory address (ints), then full[kTicketSlots], empty[kTicketSlots]
    __device__ __forceinline__ int* ring() const { return static_cast<int*>(__cvta_shared_to_generic(smem)); }
    __device__ __forceinline__ uint64_t* full(int s) const {
      return static_cast<uint64_t*>(__cvta_shared_to_generic(smem + kTicketSlots * 4 + s * 8));
    }
    __device__ __forceinline__ uint64_t* empty(int s) const {
      return static_cast<uint64_t*>(__cvta_shared_to_generic(smem + kTicketSlots * 12 + s * 8));
    }
    // Unit index j of the walk (-1: no more); warp: every lane of the calling warp reads it (lane 0 then arrives).
    __device__ __forceinline__ int read(int j, bool warp) const {
      const int slot = j % kTicketSlots;
      int id = 0;
      if (!warp || (threadIdx.x & 31) == 0) {
        sm90::mbarrier_wait(full(slot), uint32_t(j / kTicketSlots) & 1u);
        id = *reinterpret_cast<volatile int*>(ring() + slot);
        sm90::mbarrier_arrive(empty(slot));
      }
      // A warp reader: lane 0 reads, the warp gets it by a shuffle from lane 0, which ptxas knows to be
      // warp-uniform (what follows from it, the unit's k-range, stays in uniform registers, and so do the
      // k-loop's descriptors: tests/nvcc/kloop_uniform.py).
      if (warp) id = __shfl_sync(0xffffffffu, id, 0);
      return id;
    }
    // The writer (the producer's first issuer): unit j, the ticket `ticket` (-1 past the last unit), published
    // to the readers. The writer takes a CTA's first ticket at its start and each next one as it issues the
    // loads of its current unit's last k-tile: late enough that every CTA holds one unit before any takes a
    // second (a problem of fewer units than twice the CTAs stays one wave), early enough that the atomic's
    // latency runs under that k-tile's wait.
    __device__ __forceinline__ int write(int j, int ticket, int total) const {
      const int slot = j % kTicketSlots;
      sm90::mbarrier_wait(empty(slot), (uint32_t(j / kTicketSlots) & 1u) ^ 1u);
      const int id = ticket < total ? ticket : -1;
      *reinterpret_cast<volatile int*>(ring() + slot) = id;
      sm90::mbarrier_arrive(full(slot));
      return id;
    }
  };
  static constexpr int kMinSmemBytes = kSmemBytes;  // kdl::GemmHost's device check (no smaller fallback)
  static_assert(kSmemBytes <= 232448,
                "GemmSm90: Stages x (TileM + TileN) x 128 B + the epilogue buffer exceeds the 227 KB of shared memory");

  struct KernelParams {
    CUtensorMap tmA;  // TileA::encode: {K, M, batch} (row-major) or {M, K, batch} (column-major)
    CUtensorMap tmB;  // TileB::encode: {K, N, batch} (column-major) or {N, K, batch} (row-major)
    CUtensorMap tmD;  // kTmaStoreD and store_d: D {N, M, batch}, box kBoxCols x 64, 128-byte swizzle
    int store_d;      // 1: D goes through tmD (run() could describe it to TMA); 0: apply<V> stores it
    int* tickets;     // kDyn and dynamic_order: the launch's ticket counter (zeroed before it); null: the static walk
    int m, n, batch;
    int tiles_m, tiles_n, ktiles;
    // place_group's divisors: units per batch, units per raster band, units across the last band
    FastDiv div_batch, div_band, div_last_band;
    int split;            // serial split-K slices (1: none)
    int dp_groups;        // stream-K tail: the tile groups walked whole (a multiple of the walkers)
    int sk_groups;        // stream-K tail: the last tile groups, whose k-tiles are spread over all walkers (0: none)
    float* partials;      // split > 1 or sk_groups > 0: TileM x TileN f32 partial sums per slot (workspace)
    int* semaphores;      // per tile that adds slices: the slices stored (split-K) or added (stream-K tail)
    // Block scaling: scale of A's block (row / BlockMA, k-block kb) at scale_a[b * bs_sa + kb * ld_sa + row / BlockMA],
    // of B's block (col / BlockNB, kb) at scale_b[b * bs_sb + kb * ld_sb + col / BlockNB].
    const float* scale_a;
    const float* scale_b;
    int64_t ld_sa, bs_sa, ld_sb, bs_sb;
    typename Epilogue::Params ep;
    typename AGather::Params gather;  // kGather: what the producer threads gather A from
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
    // Skips n positions (a pingpong consumer passing over the other consumer's tile).
    __device__ __forceinline__ void advance(int n) {
      const int s = stage + n;
      phase ^= uint32_t(s / Stages) & 1u;
      stage = s % Stages;
    }
  };

  // Work unit u of the persistent walk: one k-slice (split-K; else all of K) of ClusterM x ClusterN
  // tiles, one per CTA of the cluster (the CTA of cluster rank r takes tile (r % ClusterM, r / ClusterM)
  // of the unit); the slices of a tile group are consecutive units, the groups of a batch walked in
  // GemmSm80's grouped raster. A CTA whose tile lies past M or N still runs the pipeline (TMA
  // zero-fills; the epilogue stores nothing): its peers need its slices.
  struct Unit {
    int batch, tm, tn;
    int slice, kt_begin, kt_end;  // k-tiles [kt_begin, kt_end) of the tile
    int slices;                   // slices of the tile (1: the unit is the whole tile)
    int slot;                     // slices > 1: the tile's semaphore (and first partial-sum slot) in the workspace
  };
  __device__ __forceinline__ static int units_m(const KernelParams& P) { return (P.tiles_m + ClusterM - 1) / ClusterM; }
  __device__ __forceinline__ static int units_n(const KernelParams& P) { return (P.tiles_n + ClusterN - 1) / ClusterN; }
  __device__ __forceinline__ static int total_units(const KernelParams& P) {
    return units_m(P) * units_n(P) * P.batch * P.split;
  }
  __device__ __forceinline__ static void slice_range(const KernelParams& P, int slice, int& kt_begin, int& kt_end) {
    if (P.split == 1) {  // no 64-bit divisions in the common case
      kt_begin = 0;
      kt_end = P.ktiles;
      return;
    }
    kt_begin = int((int64_t)P.ktiles * slice / P.split);
    kt_end = int((int64_t)P.ktiles * (slice + 1) / P.split);
  }
  // The CTA's tile of tile group `group`: per batch, groups in bands of kRasterBand unit rows (columns,
  // RasterAlongM) walked column (row) by column, the last band narrower where the units do not divide
  // (detail::raster_tile's order). Every division is by a divisor fixed at launch, as a multiply and a
  // shift (P.div_*, FastDiv): placing a unit is on the consumers' path from one tile to the next.
  static constexpr int kRasterBand = kRasterGroup / (RasterAlongM ? ClusterN : ClusterM);
  static_assert(kRasterBand >= 1, "GemmSm90: the raster group is narrower than the cluster");
  __device__ __forceinline__ static void place_group(const KernelParams& P, int group, int rm, int rn, Unit& w) {
    int in_batch, band, r;
    P.div_batch.divmod(group, w.batch, in_batch);
    P.div_band.divmod(in_batch, band, r);  // the band, and the group's place in it
    const int first = band * kRasterBand;
    int along, across;  // the unit along the band (M for !RasterAlongM) and across it
    if ((RasterAlongM ? units_n(P) : units_m(P)) - first >= kRasterBand) {
      along = first + r % kRasterBand;
      across = r / kRasterBand;
    } else {
      P.div_last_band.divmod(r, across, along);
      along += first;
    }
    const int um = RasterAlongM ? across : along, un = RasterAlongM ? along : across;
    w.tm = um * ClusterM + rm;
    w.tn = un * ClusterN + rn;
  }
  __device__ __forceinline__ static Unit unit_of(const KernelParams& P, int u, int rm, int rn) {
    Unit w;
    const int group = P.split == 1 ? u : u / P.split;
    w.slice = u - group * P.split;
    w.slices = P.split;
    slice_range(P, w.slice, w.kt_begin, w.kt_end);
    place_group(P, group, rm, rn, w);
    w.slot = (w.batch * P.tiles_m + w.tm) * P.tiles_n + w.tn;
    return w;
  }

  // Stream-K tail (sk_groups > 0): the full waves of tile groups are walked whole (walker v takes groups
  // v, v + walkers, ... < dp_groups); the k-tiles of the remaining sk_groups groups, laid end to end
  // (group after group, K inside), are cut into `walkers` equal ranges, and walker v takes range
  // walkers - 1 - v, one unit per tile it touches, its last tile first. A range (shorter than K) holds
  // the end of one tile and the start of the next; walking the start of the next one first (from k = 0),
  // then the end of the earlier one, keeps every walker within K - length k-tiles of the same k at any
  // time: the tail reads A and B panels in step, as the full waves do (walking the earlier tile first
  // spread the walkers over all of K, and the tail's panels fell out of L2: 10-15 % slower where the
  // last wave was nearly full, docs/perf-notes.md v20). A tile's slices are numbered from its first
  // range (slice 0: the start of the tile, a walker's first unit, run at once) to its last (the end of
  // the tile, a walker's second unit, which adds the others' partial sums and runs the epilogue); a
  // middle slice is a walker's only unit. So a slice waits only on first or only units, and those wait
  // only on first units, which never wait.
  __device__ __forceinline__ static int64_t sk_iters(const KernelParams& P) { return (int64_t)P.sk_groups * P.ktiles; }
  __device__ __forceinline__ static int64_t sk_begin(const KernelParams& P, int range, int walkers) {
    return sk_iters(P) * range / walkers;
  }
  __device__ __forceinline__ static int sk_range_of(const KernelParams& P, int64_t iter, int walkers) {
    return int(((iter + 1) * walkers - 1) / sk_iters(P));  // the range holding k-iteration `iter`
  }
  // The number of units walker v takes.
  __device__ __forceinline__ static int walk_length(const KernelParams& P, int v, int walkers) {
    if (P.sk_groups == 0) {
      const int n = total_units(P);
      return v < n ? (n - v + walkers - 1) / walkers : 0;
    }
    const int range = walkers - 1 - v;
    const int64_t lo = sk_begin(P, range, walkers), hi = sk_begin(P, range + 1, walkers);
    const int tiles = hi > lo ? int((hi - 1) / P.ktiles - lo / P.ktiles) + 1 : 0;
    return P.dp_groups / walkers + tiles;
  }
  // Unit j of walker v's walk.
  __device__ __forceinline__ static Unit unit_at(const KernelParams& P, int v, int walkers, int j, int rm, int rn) {
    if (P.sk_groups == 0) return unit_of(P, v + j * walkers, rm, rn);
    Unit w;
    const int dp = P.dp_groups / walkers;
    if (j < dp) {
      place_group(P, v + j * walkers, rm, rn, w);
      w.slice = 0;
      w.slices = 1;
      w.kt_begin = 0;
      w.kt_end = P.ktiles;
      w.slot = 0;
      return w;
    }
    const int range = walkers - 1 - v;
    const int64_t lo = sk_begin(P, range, walkers), hi = sk_begin(P, range + 1, walkers);
    const int t = int((hi - 1) / P.ktiles) - (j - dp);  // the tail tile: the range's last one first
    const int64_t t0 = (int64_t)t * P.ktiles, t1 = t0 + P.ktiles;
    w.kt_begin = int((lo > t0 ? lo : t0) - t0);
    w.kt_end = int((hi < t1 ? hi : t1) - t0);
    const int first = sk_range_of(P, t0, walkers), last = sk_range_of(P, t1 - 1, walkers);
    w.slice = range - first;
    w.slices = last - first + 1;
    place_group(P, P.dp_groups + t, rm, rn, w);
    w.slot = t * kClusterSize + rm + rn * ClusterM;
    return w;
  }

  // Patch slot i's shared-memory address (a patch loader), from the ring's base (stage 0's address).
  __device__ __forceinline__ static uint32_t patch_slot_addr(uint32_t ring_base, int i) {
    return ring_base + uint32_t(kPatchOffset + i * kPatchSlotBytes);
  }
  // The multicast masks of a cluster (rank = rm + rn * ClusterM): the CTAs of cluster row rm (they share an
  // A tile) and of cluster column rn (a B tile).
  __host__ __device__ static constexpr uint16_t row_mask(int rm) {
    uint16_t m = 0;
    for (int r = 0; r < ClusterN; ++r) m |= uint16_t(1u << (rm + r * ClusterM));
    return m;
  }
  __host__ __device__ static constexpr uint16_t column_mask(int rn) {
    uint16_t m = 0;
    for (int r = 0; r < ClusterM; ++r) m |= uint16_t(1u << (r + rn * ClusterM));
    return m;
  }

  // The producer warpgroup when A is gathered: every thread walks the CTA's units; per k-tile it waits
  // for the stage to be free, thread 0 loads B by TMA (shared by every batch: batch coordinate 0), and
  // every thread gathers its rows of A and arrives on the full barrier when its copies have landed.
  // Or the whole stage by the AGather's loads (kLoadsStage): lane 0 of the first kIssuers warps, by turns.
  template <class StageA, class StageB, class FullBar, class EmptyBar>
  // (rm, rn): this CTA's place in its cluster (a gathered A: (rm, 0)); its slice of B goes to its cluster
  // column, its slice of A to its cluster row.
  __device__ __forceinline__ static void produce_gathered(const KernelParams& P, int walker, int walkers, int thread,
                                                          int rm, int rn, const StageA& stage_a, const StageB& stage_b,
                                                          const FullBar& full_bar, const EmptyBar& empty_bar,
                                                          const Tickets& tk, bool dyn) {
    if constexpr (kLoadsStage) {
      AGather::prefetch(P.gather);
    } else if (thread == 0) {
      sm90::tma_prefetch(&P.tmB);
    }
    static_assert(!kGather || ClusterM == 1, "GemmSm90: a gathered A runs without clusters");
    const uint16_t mask_a = row_mask(rm), mask_b = column_mask(rn);  // who receives this CTA's slices of A / B
    Ring ring;
    typename sm90::GatherRows<kGather, AGather, TileM>::type rows;  // this thread's rows of the A tile (a thread gather)
    const int n_walk = walk_length(P, walker, walkers);
    int turn = 0;  // a stage loader's issuers take turns: this one (thread / 32) fills every kIssuers-th k-tile
    int patch_tap = 0, patch_slot = 0;  // a patch loader: the k-tile's place in its patch, the patch's slot
    bool next_patch_loaded = false;     // a patch loader: the next unit's first patch is on its way
    int ticket = kDyn && dyn && thread == 0 ? atomicAdd(P.tickets, 1) : 0;  // the first issuer's (Tickets::write)
    for (int j = 0;; ++j) {
      Unit w;
      if (kDyn && dyn) {
        const int id = thread == 0 ? tk.write(j, ticket, total_units(P)) : tk.read(j, false);
        if (id < 0) break;
        w = unit_of(P, id, rm, rn);
      } else {
        if (j >= n_walk) break;
        w = unit_at(P, walker, walkers, j, rm, rn);
      }
      if constexpr (kGather) rows.init(P.gather, w.batch, w.tm, thread);
      if (thread == 0) KDL_TRACE_AT(2, j, 0);
      const bool first_patch_loaded = next_patch_loaded;  // by the previous unit (a patch loader)
      next_patch_loaded = false;
      for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
        if (kDyn && dyn && thread == 0 && kt == w.kt_end - 1) ticket = atomicAdd(P.tickets, 1);  // the next unit's
        // A patch loader: the patch this k-tile's stage brings (-1: none), its slot and its unit's rows. A unit's
        // first k-tile brings its first patch; with kPatchAhead, the k-tile kPatchAhead into each patch brings the
        // next one: the unit's, or in the static walk of a cooperative kernel the next unit's first (every issuer
        // counts every k-tile). A pingpong unit's first patch rides on its own first k-tile, whose full barrier its
        // consumer waits for (the previous unit's k-tiles are the other consumer's; loading it there instead, with
        // a barrier per slot, measured 13-14 % slower on the 128 x 64 tile and level on 128 x 128 but at c = 64:
        // docs/perf-notes.md v49). Its slot is free then: the slot's last patch ended at least Stages - 1 k-tiles
        // back (Stages <= kPatchTaps + 1), in the other consumer's unit (whose wgmmas retire in order before its last
        // release) or in this consumer's previous unit (retired before its epilogue).
        int patch_cb = -1, slot = patch_slot, patch_m0 = w.tm * TileM;
        if constexpr (kPatch) {
          if (kt == w.kt_begin) {
            if (!first_patch_loaded) patch_cb = 0;
          } else if (kPatchAhead == 0 ? patch_tap == 0 : patch_tap == kPatchAhead) {
            if (kPatchAhead == 0) {
              patch_cb = (kt - w.kt_begin) / kPatchTaps;
            } else if (kt + kPatchTaps - kPatchAhead < w.kt_end) {
              patch_cb = (kt - w.kt_begin) / kPatchTaps + 1;
              slot = patch_slot ^ 1;
            } else if (!kPingpong && !(kDyn && dyn) && j + 1 < n_walk) {
              patch_cb = 0;
              patch_m0 = unit_at(P, walker, walkers, j + 1, rm, rn).tm * TileM;
              slot = patch_slot ^ 1;
              next_patch_loaded = true;
            }
          }
          if (++patch_tap == kPatchTaps) {
            patch_tap = 0;
            patch_slot ^= 1;
          }
        }
        if constexpr (kIssuers > 1) {
          const bool mine = turn == thread / 32;
          turn = turn + 1 == kIssuers ? 0 : turn + 1;
          if (!mine) {
            ring.advance();
            continue;
          }
        }
        uint64_t* const full = full_bar(ring.stage);
        if constexpr (kLoadsStage) {
          // The k-tile's coordinates, found while the stage may still be in use: after the wait only the TMA
          // issue remains (the divisions and parameter loads, ~90 dependent instructions in the fprop loader,
          // docs/perf-notes.md v18, otherwise lay between a stage's release and its refill).
          const auto load = AGather::template prepare<TileA, TileB>(P.gather, w.batch, w.tm * TileM, w.tn * TileN, kt, rm, rn);
          KDL_TRACE_T0(tw_);
          sm90::mbarrier_wait(empty_bar(ring.stage), ring.phase ^ 1u);
          KDL_TRACE_WAIT(2, kt, tw_);
          if (kt == w.kt_begin) KDL_TRACE_AT(2, j, 1);  // the unit's first and last loads (whichever issuer has them)
          if (kt == w.kt_end - 1) KDL_TRACE_AT(2, j, 2);
          if constexpr (kPatch) {
            // The slot's last readers (the patch two back) have released every k-tile up to the one Stages back
            // (wgmmas retire in order; kPatchAhead = Stages - 1 when that is less than kPatchTaps), which this wait
            // has seen released.
            sm90::mbarrier_arrive_expect_tx(full, (uint32_t)kStageBytes + (patch_cb >= 0 ? AGather::patch_bytes(P.gather) : 0u));
            if (patch_cb >= 0) AGather::issue_patch(P.gather, patch_m0, patch_cb, patch_slot_addr(stage_a(0), slot), full);
            AGather::template issue<TileA, TileB>(P.gather, load, stage_b(ring.stage), full);
          } else {
            (void)slot;
            (void)patch_cb;
            (void)patch_m0;
            (void)first_patch_loaded;
            sm90::mbarrier_arrive_expect_tx(full, (uint32_t)kStageBytes);
            AGather::template issue<TileA, TileB>(P.gather, load, stage_a(ring.stage), stage_b(ring.stage), full, mask_b,
                                                  mask_a);
          }
        } else {
          sm90::mbarrier_wait(empty_bar(ring.stage), ring.phase ^ 1u);
          if (thread == 0) {
            sm90::mbarrier_arrive_expect_tx(full, (uint32_t)kTileBytesB);
            TileB::load(stage_b(ring.stage), &P.tmB, full, AGather::b_k(P.gather, kt), w.tn * TileN, 0, 0, mask_b);
          }
        }
        if constexpr (kGather) {
          rows.load(P.gather, stage_a(ring.stage), kt);
          sm90::cp_async_mbarrier_arrive_noinc(full);
        }
        ring.advance();
      }
    }
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
    auto scale_slot = [&](int s) { return base + uint32_t(kScaleOffset + s * kScaleSlotBytes); };  // kStageScales

    const int warpgroup = threadIdx.x / 128;
    const int wg_thread = threadIdx.x % 128;
    const int walker = blockIdx.x / ClusterM, walkers = gridDim.x / ClusterM;  // grid: ClusterM x c, ClusterN
    // This CTA's place in the cluster: rank = rm + rn * ClusterM. It shares the A tile with the CTAs
    // of its cluster row (same rm) and the B tile with those of its cluster column (same rn).
    const uint32_t cta_rank = kClusterSize > 1 ? sm90::cluster_cta_rank() : 0u;
    const int rm = int(cta_rank) % ClusterM, rn = int(cta_rank) / ClusterM;
    const Tickets tk{base + kTicketOffset};
    const bool dyn = kDyn && P.tickets != nullptr;

#ifdef KDL_TRACE
    if (threadIdx.x == 0) {
      KDL_TRACE_CTA(0, kdl_globaltimer());
      KDL_TRACE_CTA(2, kdl_smid());
      KDL_TRACE_CTA(3, walk_length(P, walker, walkers));
    }
#endif
    if (threadIdx.x == 0) {
#pragma unroll
      for (int s = 0; s < Stages; ++s) {
        // The producer's expect_tx arrival (and, gathering A, one per producer thread when its copies land;
        // staging block scales, one per lane of the scale warp when its copies land).
        sm90::mbarrier_init(full_bar(s), kGather ? 1 + 128 : kStageScales ? 1 + 32 : 1);
        // One arrival per reading consumer warp of every CTA that writes a slice of this stage.
        sm90::mbarrier_init(empty_bar(s), kReaderWarps * (ClusterM + ClusterN - 1));
      }
      if constexpr (kDyn) {
        static_assert(!kDyn || kTicketOffset + kTicketSlots * 20 <= kEpiOffset, "GemmSm90: no room for the ticket ring");
        for (int s = 0; s < kTicketSlots; ++s) {
          sm90::mbarrier_init(tk.full(s), 1);
          sm90::mbarrier_init(tk.empty(s), kTicketReaders);
        }
      }
      sm90::fence_mbarrier_init();
    }
    if constexpr (kClusterSize > 1)
      sm90::cluster_sync();  // the peers' barriers are initialised before any remote arrive or multicast
    else
      __syncthreads();
    // Programmatic dependent launch (run() launches so): the set-up above overlapped the previous kernel of the
    // stream; nothing reads or writes global memory before the previous kernel's writes are visible (but a KDL_TRACE
    // build's stamps into its own buffer). No griddep_launch_dependents anywhere: the next such kernel launches as this
    // grid's CTAs exit (the implicit trigger), which still hides its launch and set-up. An explicit trigger let it
    // launch while this grid ran, and cost the pingpong kernels: at the set-up 0.4-17 %, after the producer's last load
    // still 1-10 % (64 x 128 at 8192 x 1024 x 8192: 564 against 620 TFLOP/s), the cooperative ones nothing
    // (docs/perf-notes.md v55, v56; tests/nvcc/kloop_uniform.py checks the SASS).
    sm90::griddep_wait();

    Epilogue epilogue{};
    typename Epilogue::State state{};
    ColRegs cols{};  // this unit's [col] vectors (kStageCols)

    if (warpgroup == 0) {
      // ---- producer ----
      sm90::setmaxnreg_dec<kProducerRegs>();
      if constexpr (kProducerLoads) {
        if (P.ktiles > 0 && (kGather || (wg_thread % 32 == 0 && wg_thread / 32 < kIssuers)))
          produce_gathered(P, walker, walkers, wg_thread, rm, rn, stage_a, stage_b, full_bar, empty_bar, tk, dyn);
      } else if (wg_thread == 0 && P.ktiles > 0) {
        sm90::tma_prefetch(&P.tmA);
        sm90::tma_prefetch(&P.tmB);
        const uint16_t mask_a = row_mask(rm), mask_b = column_mask(rn);  // who receives this CTA's slices of A / B
        Ring ring;
        const int n_walk = walk_length(P, walker, walkers);
        int ticket = dyn ? atomicAdd(P.tickets, 1) : 0;  // Tickets::write
        for (int j = 0;; ++j) {
          Unit w;
          if (dyn) {
            const int id = tk.write(j, ticket, total_units(P));
            if (id < 0) break;
            w = unit_of(P, id, rm, rn);
          } else {
            if (j >= n_walk) break;
            w = unit_at(P, walker, walkers, j, rm, rn);
          }
          const int batch = w.batch, tm = w.tm, tn = w.tn;
          KDL_TRACE_AT(2, j, 0);
          for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
            if (dyn && kt == w.kt_end - 1) ticket = atomicAdd(P.tickets, 1);  // the next unit's
            // A fresh barrier counts as having completed the phase before its first, so the
            // first pass over the ring (parity 1) does not wait.
            KDL_TRACE_T0(tw_);
            sm90::mbarrier_wait(empty_bar(ring.stage), ring.phase ^ 1u);
            KDL_TRACE_WAIT(2, kt, tw_);
            if (kt == w.kt_begin) KDL_TRACE_AT(2, j, 1);
            if (kt == w.kt_end - 1) KDL_TRACE_AT(2, j, 2);
            uint64_t* const full = full_bar(ring.stage);
            sm90::mbarrier_arrive_expect_tx(full, (uint32_t)kStageBytes);
            // This CTA's slice of A (of B), to the same place in every CTA of its cluster row (column).
            TileA::load(stage_a(ring.stage), &P.tmA, full, kt * TileK, tm * TileM, batch, rn, mask_a);
            TileB::load(stage_b(ring.stage), &P.tmB, full, kt * TileK, tn * TileN, batch, rm, mask_b);
            ring.advance();
          }
        }
      }
      if constexpr (kStageScales) {
        if (wg_thread / 32 == 1 && P.ktiles > 0) produce_scales(P, walker, walkers, wg_thread % 32, rm, rn, full_bar, empty_bar, scale_slot);
      }
      // The producer warpgroup's threads leave once their loads are issued -- the idle ones at once -- where nothing
      // below needs them (no cluster barrier, a finish without a block-wide reduction). Kept waiting at the warp
      // barrier below beside a lane that issues loads for the whole kernel, they cost the swapped conv kernel 2.5 %
      // (docs/perf-notes.md v61).
      if constexpr (kClusterSize == 1 && detail::EpilogueFinishLocal<Epilogue>::value) return;
    } else {
      // ---- consumers ----
      sm90::setmaxnreg_inc<kConsumerRegs>();
      // Warp-uniform by construction, but ptxas cannot prove threadIdx.x / 128 (or / 32) uniform, and values
      // computed from it (a consumer's rows, its ring position) go to vector registers; broadcast from lane 0,
      // they are uniform, and the mainloop's descriptor and stage arithmetic runs in uniform registers instead
      // of being copied there (R2UR) before every wgmma (docs/perf-notes.md v19: 78 -> 46 instructions per
      // k-tile of a pingpong 128x128 consumer, 55 -> 40 of a cooperative 128x256 one).
      const int consumer = __shfl_sync(0xffffffffu, warpgroup, 0) - 1;
      const bool warp_leader = (wg_thread % 32) == 0;
      const int warp_in_wg = __shfl_sync(0xffffffffu, wg_thread / 32, 0);  // uniform (see consumer)
      Acc acc[kMmaM][kAccRegs];
      float tmp[kPromote ? kMmaM : 1][kPromote ? kAccRegs : 1];  // fp8 promotion's wgmma accumulator
      float tmp2[kPairPromote ? kMmaM : 1][kPairPromote ? kAccRegs : 1];  // kPairPromote: the second k-tile's
      Ring ring;
      // Releases a stage in every CTA that wrote a slice of it (its own, its cluster row and column).
      auto release = [&](int s) {
        if constexpr (kClusterSize == 1) {
          sm90::mbarrier_arrive(empty_bar(s));
        } else {
#pragma unroll
          for (int r = 0; r < kClusterSize; ++r)
            if (r % ClusterM == rm || r / ClusterM == rn) sm90::mbarrier_arrive_cluster_cta_scope(empty_bar(s), uint32_t(r));
        }
      };
      // Cooperative: both consumers take every tile, consumer c its rows [c * TileM/2, (c+1) * TileM/2).
      // Pingpong: consumer c takes the CTA's tiles c, c + 2, c + 4, ... whole, and skips the other's
      // k-tiles in the ring; the turn barriers make the two mainloops alternate.
      constexpr int kTileStep = kPingpong ? 2 : 1;
      const int row_off = kPingpong ? 0 : consumer * kRowsPerConsumer;
      // Stage s's descriptors (k-step 0): stage 0's plus s stages of bytes (OperandTile::desc_offset); only
      // the low half changes (the start address), so the mainloop works on 32-bit values.
      const uint32_t desc_a0 = uint32_t(TileA::desc(stage_a(0), row_off, 0).bits);
      const uint32_t desc_b0 = uint32_t(TileB::desc(stage_b(0), 0, 0).bits);
      auto desc_a = [&](int s) { return desc_a0 + uint32_t(s) * uint32_t(kStageBytes >> 4); };
      auto desc_b = [&](int s) { return desc_b0 + uint32_t(s) * uint32_t(kStageBytes >> 4); };
      // A patch loader: A's descriptor at slot 0's start (this consumer's first m64 block: its output row), the
      // step between m64 blocks; per k-tile the slot and the tap's offset (patch_tap's place in the patch). The
      // slots go by turns over the CTA's patches: a pingpong consumer counts the other's too (skip_unit).
      uint32_t desc_p0 = 0, p_block = 0;
      int patch_tap = 0, patch_slot = 0;
      if constexpr (kPatch) {
        p_block = AGather::block_step(P.gather);
        desc_p0 = uint32_t(TileA::desc(patch_slot_addr(stage_a(0), 0), 0, 0).bits) + uint32_t(row_off / 64) * p_block;
      }
      const int n_walk = walk_length(P, walker, walkers);
      // Pingpong: the other consumer's unit j of the walk, skipped -- its k-tiles in the ring, and (a patch loader)
      // its whole patches in the slots' turns.
      auto skip_unit = [&](int j) {
        const Unit w = unit_at(P, walker, walkers, j, rm, rn);
        const int ktiles = w.kt_end - w.kt_begin;
        ring.advance(ktiles);
        if constexpr (kPatch) patch_slot ^= (ktiles / kPatchTaps) & 1;
      };
      if (kPingpong && consumer == 1 && n_walk > 0) skip_unit(0);  // consumer 0's first unit
      // kHoldStage: the stage the last epilogue's second pass went to, not yet released. Thread 0 of each
      // consumer issued that pass's stores; once they have read it, it arrives for its warpgroup's four warps.
      int held = -1;
      auto release_held = [&]() {
        if constexpr (kHoldStage) {
          if (held >= 0) {
            if (wg_thread == 0) {
              sm90::tma_store_wait_read<0>();
#pragma unroll
              for (int r = 0; r < 4; ++r) sm90::mbarrier_arrive(empty_bar(held));
            }
            held = -1;
          }
        }
      };
      for (int j = kPingpong ? consumer : 0;; j += kTileStep) {  // j: the unit's index in this CTA's walk
        Unit w;
        if (kDyn && dyn) {
          // The unit the ring hands out. The exit is a vote and the k-range comes from the parameters (whole units:
          // dynamic_order has one slice), both warp-uniform to ptxas: the k-loop's bounds, and with them the ring's
          // stage and the wgmma descriptors, stay in uniform registers (tests/nvcc/kloop_uniform.py).
          const int id = tk.read(j, true);
          if (__any_sync(0xffffffffu, id < 0)) break;
          w = unit_of(P, id, rm, rn);
          w.kt_begin = 0;
          w.kt_end = P.ktiles;
          w.slice = 0;
          w.slices = 1;
        } else {
          if (j >= n_walk) break;
          w = unit_at(P, walker, walkers, j, rm, rn);
        }
        if (kPingpong && j > 0) sm90::named_barrier_sync(kTurnBarrier + consumer, 256);  // the other's mainloop is issued
        if (wg_thread == 0) KDL_TRACE_AT(consumer, j, 0);
        // The tile's rows of C (the functor's source tile), asked for into L2 now, a k-loop before the epilogue reads
        // them (kdl/epilogue.cuh, SourceTile); by the unit whose epilogue runs (the last slice of a split tile).
        // (Not for a patch loader's tiles, whose rows are not consecutive rows of C.)
        if constexpr (HasSourceTile<Epilogue>::value && !kPatch) {
          if (w.slice + 1 == w.slices) prefetch_source(P, w, row_off, wg_thread);
        }
        if constexpr (kStageCols) load_cols<0>(P, w.batch, w.tn * TileN, wg_thread % 32, cols);

        // ---- mainloop: acc = A tile rows * B tile over the unit's k-tiles ----
#pragma unroll
        for (int i = 0; i < kMmaM; ++i)
#pragma unroll
          for (int r = 0; r < kAccRegs; ++r) acc[i][r] = Acc(0);
        int prev_stage = -1;  // the stage whose wgmmas are the group still in flight
        int kt = w.kt_begin;
        if constexpr (kPairPromote) {
          // Promotion every k-tile, two k-tiles at a time: both issued into their own temporary accumulator,
          // the first promoted while the second's wgmmas run, then the second; every group completes
          // inside the pair (ptxas serializes wgmma whose groups cross a loop's back edge while other
          // accumulators are read: docs/perf-notes.md v14). An odd last k-tile takes the loop below.
          for (; kt + 1 < w.kt_end; kt += 2) {
            static_assert(!kGather, "GemmSm90: a gathered A is 16-bit (no promotion)");
            const int s0 = ring.stage;
            sm90::mbarrier_wait(full_bar(s0), ring.phase);
            ring.advance();
            const int s1 = ring.stage;
            issue_ktile(tmp, desc_a(s0), desc_b(s0), false);
            sm90::mbarrier_wait(full_bar(s1), ring.phase);
            ring.advance();
            issue_ktile(tmp2, desc_a(s1), desc_b(s1), false);
            // The pair's scales (block scaling), read while its wgmmas run from the stages' scale slots (the
            // full barriers waited for above cover them). Read before the second issue, they spilled.
            float sa[kMmaM][2], sb = 1.f, sa2[kMmaM][2], sb2 = 1.f;
            if constexpr (kBlockScaled) {
              read_block_scales(scale_slot(s0), row_off + warp_in_wg * 16, sa, sb);
              read_block_scales(scale_slot(s1), row_off + warp_in_wg * 16, sa2, sb2);
            } else {
#pragma unroll
              for (int i = 0; i < kMmaM; ++i) sa[i][0] = sa[i][1] = sa2[i][0] = sa2[i][1] = 1.f;
            }
            sm90::wgmma_wait_group<1>();  // the first k-tile's group
            if (warp_leader) release(s0);
            promote(acc, tmp, sa, sb);
            sm90::wgmma_wait_group<0>();
            if (warp_leader) release(s1);
            promote(acc, tmp2, sa2, sb2);
          }
        }
        for (; kt < w.kt_end; ++kt) {
          KDL_TRACE_T0(tw_);
          sm90::mbarrier_wait(full_bar(ring.stage), ring.phase);
          if (wg_thread == 0) KDL_TRACE_WAIT(consumer, kt, tw_);
          if (kt == w.kt_begin && wg_thread == 0) KDL_TRACE_AT(consumer, j, 1);
          // A gathered A was written through the generic proxy (cp.async); wgmma reads through the async one.
          if constexpr (kGather) sm90::fence_proxy_async_shared();
          uint32_t a_tile = desc_a(ring.stage);
          const uint32_t b_tile = desc_b(ring.stage);
          if constexpr (kPatch) {
            a_tile = desc_p0 + uint32_t(patch_slot * (kPatchSlotBytes >> 4)) + AGather::tap_offset(P.gather, patch_tap);
            if (++patch_tap == kPatchTaps) {
              patch_tap = 0;
              patch_slot ^= 1;
            }
          }
          if constexpr (!kPromote) {
            issue_ktile(acc, a_tile, b_tile, true, p_block);
            // The previous k-tile's group has completed: its stage may be refilled.
            sm90::wgmma_wait_group<1>();
            if (prev_stage >= 0 && warp_leader) release(prev_stage);
            prev_stage = ring.stage;
            if constexpr (kHoldStage) release_held();  // the held stage, under this k-tile's wgmmas
          } else {
            // fp8 promotion: the group's first k-step starts tmp from zero; at the group's last k-tile
            // (or the unit's) wait for the wgmmas and add tmp (times the k-block's scales) into acc.
            // (Promotion every k-tile takes the pair loop above, but for an odd last k-tile.)
            const int kt_in_group = (kt - w.kt_begin) % kPromoteEvery;
            const bool promote_now = kt_in_group == kPromoteEvery - 1 || kt + 1 == w.kt_end;
            issue_ktile(tmp, a_tile, b_tile, kt_in_group > 0);
            if (promote_now) {
              float sa[kMmaM][2], sb = 1.f;  // this thread's rows' A scales and the tile's B scale, k-block kt
              if constexpr (kBlockScaled) read_block_scales(scale_slot(ring.stage), row_off + warp_in_wg * 16, sa, sb);
              sm90::wgmma_wait_group<0>();
              if (warp_leader) {
                if (prev_stage >= 0) release(prev_stage);
                release(ring.stage);
              }
              prev_stage = -1;
              promote(acc, tmp, sa, sb);
            } else {
              sm90::wgmma_wait_group<1>();
              if (prev_stage >= 0 && warp_leader) release(prev_stage);
              prev_stage = ring.stage;
            }
          }
          ring.advance();
        }
        // Pingpong: the other consumer may issue its mainloop (when it has a next unit).
        if (kPingpong && j + 1 < n_walk) sm90::named_barrier_arrive(kTurnBarrier + (consumer ^ 1), 256);
        sm90::wgmma_wait_group<0>();
#pragma unroll
        for (int i = 0; i < kMmaM; ++i) sm90::warpgroup_fence_acc(acc[i]);
        if (wg_thread == 0) KDL_TRACE_AT(consumer, j, 2);
        if constexpr (kHoldStage) release_held();  // a unit without k-tiles
        // (kHoldStage implies kTmaStoreD: a held stage always goes to store_tile_tma below.)
        // A unit of the whole K (slices == 1) holds where K has kHoldMinKtiles k-tiles: P.ktiles, read from the
        // parameters here (the unit's own k-range kept live across the k-loop pushed the 256 x 64 tile's descriptors
        // out of the uniform registers: R2UR in its k-loop, tests/nvcc/kloop_uniform.py).
        const bool hold = kHoldStage && prev_stage >= 0 && w.slices == 1 && P.store_d && P.ktiles >= kHoldMinKtiles;
        if (prev_stage >= 0 && warp_leader && !hold) release(prev_stage);
        if (kPingpong && j + 1 < n_walk) skip_unit(j + 1);  // the other's unit

        // ---- serial split-K / stream-K tail: add the earlier slices' partial sums; all but the last slice store and stop ----
        if (w.slices > 1) {
          if (w.tm >= P.tiles_m || w.tn >= P.tiles_n) continue;  // a cluster's tile past M or N: nothing to add or store
          if (!reduce_slices(P, w, acc, consumer, wg_thread)) continue;
        }

        // ---- epilogue: registers -> Epilogue::compute<2> -> swizzled boxes of D -> TMA store (not waited for);
        //      or registers -> per-warp staging (16 x 32 f32) -> Epilogue::apply<V>, in range only ----
        uint8_t* const epi_smem = kdl_sm90_smem + (base - raw) + kEpiOffset;
        epilogue_prepare(epilogue, P.ep, state);  // the functor's device scalars, once per tile (not live in the mainloop)
        if constexpr (kTmaStoreD) {
          if (P.store_d) {
            uint8_t* pass2 = nullptr;
            if constexpr (kHoldStage) {
              if (hold) {
                pass2 = kdl_sm90_smem + (stage_a(prev_stage) - raw) + consumer * kChunkBoxes * kBoxBytes;
                held = prev_stage;
              }
            }
            store_tile_tma(P, epilogue, state, acc, cols, epi_smem + consumer * kEpiWgBytes, consumer, wg_thread, w.batch,
                           w.tm * TileM + row_off, w.tn * TileN, pass2, epilogue_pace(w, j + 1 < n_walk));
            if (wg_thread == 0) KDL_TRACE_AT(consumer, j, 3);
            continue;
          }
        }
        store_tile_epilogue(P, epilogue, state, acc, epi_smem, consumer, warp_in_wg, w.batch,
                            w.tm * TileM + row_off + warp_in_wg * 16, w.tn * TileN);
      }
      if constexpr (kHoldStage) release_held();
      // The last TMA stores have read their boxes and written D before the block's shared memory goes.
      if constexpr (kTmaStoreD)
        if (wg_thread == 0) sm90::tma_store_wait<0>();
#ifdef KDL_TRACE
      if (wg_thread == 0) atomicMax(&kdl_trace_cta[blockIdx.x < KDL_TRACE_CTAS ? blockIdx.x : 0][1], kdl_globaltimer());
#endif
    }
    __syncwarp();
    epilogue.finish(P.ep, state);
    // No CTA leaves while a peer may still multicast into its shared memory or arrive on its
    // barriers: every peer has consumed its last stage before it arrives here.
    if constexpr (kClusterSize > 1) sm90::cluster_sync();
  }

  // Adding the slices of a tile (split-K, or the stream-K tail) for one unit (slice s of S). The threads
  // that hold the tile's accumulator (cooperative: both consumers, 256 threads; pingpong: one consumer) take
  // part; returns true for the one slice that then runs the epilogue. Either way the sum does not depend
  // on timing (fixed order), and the partials are laid out by fragment: register quad q of consumer
  // thread t at float4 q * 128 + t.
  //   * Split-K (P.split > 1), fan-in: slices 0..S-2 store their partial sums in slots of their own and
  //     count themselves on the tile's semaphore without waiting; slice S-1 waits for the count to reach
  //     S-1, then adds the slots in slice order into its accumulator (its own slice first) and resets the
  //     semaphore. The slices run at the same time (consecutive units), so the tile's fixup costs one
  //     store and S-1 loads on the critical path instead of S-1 store/load round trips one after another.
  //   * Stream-K tail: in turn (slice s waits until s slices have been added into the tile's one slot,
  //     adds them, and stores the sum back unless it is the last): the tail's slices end at different
  //     times by construction, the first ones early in their walkers' walks.
  // A slice waits only on lower units, and every CTA walks its units in increasing order, so the lowest
  // unfinished unit can always proceed (the grid is resident: one CTA per SM, at most SMs CTAs).
  __device__ __forceinline__ static bool reduce_slices(const KernelParams& P, const Unit& w, Acc (&acc)[kMmaM][kAccRegs],
                                                       int consumer, int wg_thread) {
    constexpr int kTileThreads = kPingpong ? 128 : 256;
    const int bar_id = kTurnBarrier + 2 + (kPingpong ? consumer : 0);  // named barriers 3 (cooperative) or 3, 4
    const bool leader = kPingpong ? wg_thread == 0 : (consumer == 0 && wg_thread == 0);
    // s32 partial sums (s8 / u8) are kept as s32 in the same 4-byte words.
    using Acc4 = typename std::conditional<detail::is_same_t<Acc, float>::value, float4, int4>::type;
    const bool fan_in = P.split > 1;
    const size_t thread_off = kPingpong ? 0 : (size_t)consumer * (TileM * TileN / kConsumers);
    // The slot of slice `slice`: split-K, one per slice but the last; the stream-K tail, one per tile.
    auto slot_of = [&](int slice) {
      const size_t slot = fan_in ? (size_t)w.slot * (P.split - 1) + slice : (size_t)w.slot;
      return reinterpret_cast<Acc4*>(P.partials + slot * (TileM * TileN) + thread_off);
    };
    auto add_slot = [&](const Acc4* part) {
#pragma unroll
      for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int q = 0; q < kAccRegs / 4; ++q) {
          const Acc4 v = __ldcg(part + (i * (kAccRegs / 4) + q) * 128 + wg_thread);
          acc[i][4 * q] += v.x;
          acc[i][4 * q + 1] += v.y;
          acc[i][4 * q + 2] += v.z;
          acc[i][4 * q + 3] += v.w;
        }
    };
    int* const sem = P.semaphores + w.slot;
    const bool last = w.slice == w.slices - 1;
    if (w.slice > 0 && (last || !fan_in)) {
      if (leader) detail::sem_wait(sem, fan_in ? w.slices - 1 : w.slice);
      sm90::named_barrier_sync(bar_id, kTileThreads);
      const int n = fan_in ? w.slices - 1 : 1;  // one loop for both (one copy of the adds: register pressure)
#pragma unroll 1
      for (int s = 0; s < n; ++s) add_slot(slot_of(s));
    }
    if (!last) {
      Acc4* const part = slot_of(w.slice);
#pragma unroll
      for (int i = 0; i < kMmaM; ++i)
#pragma unroll
        for (int q = 0; q < kAccRegs / 4; ++q)
          __stcg(part + (i * (kAccRegs / 4) + q) * 128 + wg_thread,
                 Acc4{acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]});
      __threadfence();
      sm90::named_barrier_sync(bar_id, kTileThreads);
      if (leader) {
        if (fan_in) detail::sem_add_release(sem, 1);
        else detail::sem_release(sem, w.slice + 1);
      }
      return false;
    }
    if (leader) *sem = 0;  // every thread of the tile has passed the wait: leave the semaphore reset
    return true;
  }

  // One k-tile of this consumer's rows into accumulator d (the f32 one, or a promotion temporary) as one
  // committed wgmma group; accumulate = false starts d from zero at the k-tile's first k-step. a_tile /
  // b_tile: the descriptors of the stage's A rows of this consumer and of its B tile at k-step 0; every
  // other k-step's is a compile-time offset from them (OperandTile::desc_offset).
  // a_block: a patch loader's step between m64 blocks of A (16-byte units); else the tile's (TileA's offsets).
  template <class A>
  __device__ __forceinline__ static void issue_ktile(A (&d)[kMmaM][kAccRegs], uint32_t a_tile, uint32_t b_tile,
                                                     bool accumulate, uint32_t a_block = 0) {
    constexpr uint64_t kHiA = TileA::desc(0, 0, 0).bits >> 32 << 32, kHiB = TileB::desc(0, 0, 0).bits >> 32 << 32;
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) sm90::warpgroup_fence_acc(d[i]);
    sm90::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      const sm90::SmemDesc db{kHiB | (b_tile + uint32_t(TileB::desc_offset(0, ks)))};
#pragma unroll
      for (int i = 0; i < kMmaM; ++i) {
        const uint32_t a = kPatch ? a_tile + uint32_t(i) * a_block + uint32_t(TileA::desc_offset(0, ks))
                                  : a_tile + uint32_t(TileA::desc_offset(i * 64, ks));
        mma_kstep(d[i], sm90::SmemDesc{kHiA | a}, db, accumulate || ks > 0);
      }
    }
    sm90::wgmma_commit_group();
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) sm90::warpgroup_fence_acc(d[i]);
  }
  // acc += tmp (block scaling: times the k-block's scales; register r holds row g, + 8 when bit 1 of r is set).
  __device__ __forceinline__ static void promote(float (&acc)[kMmaM][kAccRegs], float (&tmp)[kMmaM][kAccRegs],
                                                 const float (&sa)[kMmaM][2], float sb) {
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) {
      sm90::warpgroup_fence_acc(tmp[i]);
      const float s0 = sa[i][0] * sb, s1 = sa[i][1] * sb;
#pragma unroll
      for (int r = 0; r < kAccRegs; ++r) {
        if constexpr (kBlockScaled)
          acc[i][r] = fmaf(tmp[i][r], (r >> 1) & 1 ? s1 : s0, acc[i][r]);
        else
          acc[i][r] += tmp[i][r];
      }
    }
  }

  // Block scaling: a stage's scales for this thread's accumulator rows (rows g and g + 8 of each m64 block,
  // tile row row_in_tile + 64 i + g) and the tile's B scale, from the stage's scale slot (shared memory at
  // `slot`; rows past M hold 0).
  __device__ __forceinline__ static void read_block_scales(uint32_t slot, int row_in_tile, float (&sa)[kMmaM][2],
                                                           float& sb) {
    const int g = (threadIdx.x % 32) >> 2;
#pragma unroll
    for (int i = 0; i < kMmaM; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) sa[i][h] = sm90::ld_shared_f32(slot + uint32_t(4 * (row_in_tile + i * 64 + g + 8 * h)));
    sb = sm90::ld_shared_f32(slot + uint32_t(4 * TileM));
  }

  // Block scaling: the producer warpgroup's second warp walks the CTA's units as the TMA producer does and,
  // per k-tile, copies the k-block's scales into the stage's scale slot once the stage is free: lane l the
  // scales of A of tile rows l, l + 32, ... (0 past M) and lane 0 the tile's scale of B (0 past N), then
  // each lane arrives on the stage's full barrier when its copies have landed.
  template <class FullBar, class EmptyBar, class ScaleSlot>
  __device__ __forceinline__ static void produce_scales(const KernelParams& P, int walker, int walkers, int lane,
                                                        int rm, int rn, const FullBar& full_bar,
                                                        const EmptyBar& empty_bar, const ScaleSlot& scale_slot) {
    // (Within the producer's kProducerRegs: 32-bit offsets per unit, two pointers stepped per k-tile.)
    constexpr int kRowsPerLane = (TileM + 31) / 32;
    Ring ring;
    const int n_walk = walk_length(P, walker, walkers);
    for (int j = 0; j < n_walk; ++j) {
      const Unit w = unit_at(P, walker, walkers, j, rm, rn);
      const int col = w.tn * TileN;
      const float* ak = P.scale_a + w.batch * P.bs_sa + (long long)w.kt_begin * P.ld_sa;
      const float* bk = P.scale_b + w.batch * P.bs_sb + (long long)w.kt_begin * P.ld_sb +
                        (col < P.n ? col / BlockScaling::kBlockNB : 0);
      int off[kRowsPerLane];  // lane's rows' offsets in a k-block's scales of A; -1: past M (or past the tile)
#pragma unroll
      for (int i = 0; i < kRowsPerLane; ++i) {
        const int r = lane + 32 * i, row = w.tm * TileM + r;
        off[i] = r < TileM && row < P.m ? row / BlockScaling::kBlockMA : -1;
      }
      for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
        sm90::mbarrier_wait(empty_bar(ring.stage), ring.phase ^ 1u);
        const uint32_t slot = scale_slot(ring.stage);
#pragma unroll
        for (int i = 0; i < kRowsPerLane; ++i)
          if (lane + 32 * i < TileM)
            cp_async<4>(slot + uint32_t(4 * (lane + 32 * i)), ak + (off[i] < 0 ? 0 : off[i]), off[i] < 0 ? 0 : 4);
        if (lane == 0) cp_async<4>(slot + uint32_t(4 * TileM), bk, col < P.n ? 4 : 0);
        sm90::cp_async_mbarrier_arrive_noinc(full_bar(ring.stage));
        ring.advance();
        ak += P.ld_sa;
        bk += P.ld_sb;
      }
    }
  }

  // One k-step (32 bytes of K) of one m64 x TileN accumulator: wgmma k16 (16-bit), k8 (tf32) or k32
  // (8-bit), each operand K- or MN-major (the transpose bits of 16-bit wgmma).
  __device__ __forceinline__ static void mma_kstep(Acc (&d)[kAccRegs], sm90::SmemDesc a, sm90::SmemDesc b, bool accumulate) {
    sm90::wgmma_ss<TileN, ElementA, ElementB, TileA::kMajor, TileB::kMajor>(d, a, b, accumulate);
  }

  // Vector S.. of the functor's [col] vectors at the tile's columns this lane holds (kStageCols); 0 past N.
  template <int S>
  __device__ __forceinline__ static void load_cols(const KernelParams& P, int batch, int col0, int lane, ColRegs& r) {
    if constexpr (S < kColVecs) {
      const auto v = Epilogue::template col_vector<S>(P.ep);
      using T = typename decltype(v)::Element;
      const T* const base = v.base != nullptr ? v.base + (int64_t)batch * v.batch_stride : nullptr;
      const int c = col0 + 8 * (lane >> 2) + 2 * (lane & 3);
#pragma unroll
      for (int q = 0; q < kColRegs / 2; ++q)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = c + 64 * q + e;
          r[S][2 * q + e] = base != nullptr && col < P.n ? to_float<T>(base[col]) : 0.f;
        }
      load_cols<S + 1>(P, batch, col0, lane, r);
    }
  }

  // A consumer warpgroup's rows of unit w's tile of C (in M and N), each 128-byte line of them once, prefetched into L2.
  __device__ __forceinline__ static void prefetch_source(const KernelParams& P, const Unit& w, int row_off, int wg_thread) {
    const auto c = Epilogue::source_c(P.ep);
    using T = typename decltype(c)::Element;
    const int r0 = w.tm * TileM + row_off, c0 = w.tn * TileN;
    const int rows = P.m - r0 < kRowsPerConsumer ? P.m - r0 : kRowsPerConsumer;
    const int cols = P.n - c0 < TileN ? P.n - c0 : TileN;
    if (c.base == nullptr || rows <= 0 || cols <= 0) return;
    const char* const tile = reinterpret_cast<const char*>(c.base + (int64_t)w.batch * c.batch_stride + (int64_t)r0 * c.ld + c0);
    const int64_t ld_bytes = c.ld * (int64_t)sizeof(T);
    const int row_bytes = cols * int(sizeof(T));
    const int lines = (row_bytes + 127) / 128 + 1;  // a row's lines, one more where it starts inside a line
    for (int i = wg_thread; i < rows * lines; i += 128) {
      const int r = i / lines, l = i - r * lines;
      const uintptr_t row = reinterpret_cast<uintptr_t>(tile + r * ld_bytes);
      const uintptr_t line = (row & ~uintptr_t(127)) + uintptr_t(l) * 128;
      if (line < row + uintptr_t(row_bytes)) sm90::prefetch_l2(reinterpret_cast<const void*>(line));
    }
  }

  // One consumer warp's share of the epilogue: its 16 rows of each m64 accumulator (rows row0 +
  // 64 i ..), staged 32 columns at a time through its own buffer and handed V consecutive in-range
  // columns at a time to Epilogue::apply<V> (one 16-byte store for a store_tile).
  __device__ __forceinline__ static void store_tile_epilogue(const KernelParams& P, Epilogue& epilogue,
                                                             typename Epilogue::State& state,
                                                             const Acc (&acc)[kMmaM][kAccRegs], uint8_t* epi_smem,
                                                             int consumer, int warp_in_wg, int batch, int row0, int col0) {
    constexpr int V = kEpiV;
    const int lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;
    float* const stg = reinterpret_cast<float*>(epi_smem) + (consumer * 4 + warp_in_wg) * kEpiWarpFloats;
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
          // (s32 accumulators -- s8 / u8 -- are handed to the epilogue as float, as on the sm80 path.)
          *reinterpret_cast<float2*>(stg + g * kEpiStride + jj * 8 + 2 * t) =
              make_float2(float(acc[i][4 * j]), float(acc[i][4 * j + 1]));
          *reinterpret_cast<float2*>(stg + (g + 8) * kEpiStride + jj * 8 + 2 * t) =
              make_float2(float(acc[i][4 * j + 2]), float(acc[i][4 * j + 3]));
        }
        __syncwarp();
#pragma unroll
        for (int it = 0; it < kEpiItems / 32; ++it) {
          const int idx = it * 32 + lane;
          const int r = idx / kEpiVecPerRow;
          const int cv = idx % kEpiVecPerRow;
          float v[V];
          load_staged_row<V>(stg + r * kEpiStride + cv * V, lane, v);
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

  // The pause after each of the epilogue's stmatrix.x4 for unit w (kPaceEpilogue): 0 unless the other consumer
  // runs a mainloop beside it (`beside`).
  __device__ __forceinline__ static int epilogue_pace(const Unit& w, bool beside) {
    if constexpr (!kPaceEpilogue) return 0;
    const int p = kPaceCyclesPerKtile * (w.kt_end - w.kt_begin);
    return beside ? (p < kPaceMaxCycles ? p : kPaceMaxCycles) : 0;
  }
  // One consumer warpgroup's epilogue through the TMA store of D: per m64 block of its rows, kChunkBoxes
  // boxes (64 rows x 128 bytes of D) at a time, every thread hands its accumulator pairs (row g / g + 8,
  // columns 8j + 2t + {0, 1}) to Epilogue::compute<2> (in range only), converts the results to D's type
  // and writes them into the warpgroup's buffer with the 128-byte swizzle (16-byte unit u of row r at
  // u ^ (r % 8): conflict-free); then one thread issues the boxes' TMA stores (clipped at M and N) and
  // goes on without waiting, so the stores run under the next tile's mainloop. The buffer is reused
  // once TMA has read it (the wait at the top of each pass).
  __device__ __forceinline__ static void store_tile_tma(const KernelParams& P, Epilogue& epilogue,
                                                        typename Epilogue::State& state, const Acc (&acc)[kMmaM][kAccRegs],
                                                        const ColRegs& cols, uint8_t* buf, int consumer, int wg_thread,
                                                        int batch, int row0,
                                                        int col0, uint8_t* pass2 = nullptr, int pace = 0) {
    const int bar = kEpiBarrier + consumer;
    // Interior chunks of a tile whose epilogue tensors all take pair accesses (the functor's
    // whole<2>, once per tile) run without any per-pair check (EpilogueCoordWhole).
    bool whole = false;
    if constexpr (kEpiWhole) whole = epilogue.template whole<2>(P.ep, batch);
#pragma unroll
    for (int i = 0; i < kMmaM; ++i) {
      const int block_row = row0 + i * 64;
      const bool rows_in = block_row < P.m;  // warpgroup-uniform
      if (!rows_in && pass2 == nullptr) continue;
#pragma unroll
      for (int ch = 0; ch < kChunksPerBlock; ++ch) {
        const int chunk_col = col0 + ch * kChunkBoxes * kBoxCols;
        const bool held_pass = pass2 != nullptr && i * kChunksPerBlock + ch == 1;  // the second of two (kHoldStage)
        if (chunk_col >= P.n && !held_pass) continue;  // uniform across the tile
        uint8_t* const pbuf = held_pass ? pass2 : buf;
        if (pbuf == buf) {
          if (!rows_in) continue;
          if (wg_thread == 0) sm90::tma_store_wait_read<0>();  // the previous pass's boxes have been read
          sm90::named_barrier_sync(bar, 128);
        } else {
          // The held stage (kHoldStage: both consumers here once, rows or columns in or not): the other
          // consumer may still be reading it with its last wgmmas (the two drift apart by up to the ring),
          // and this pass overwrites its A rows or B.
          sm90::named_barrier_sync(kHoldBarrier, 256);
          if (!rows_in || chunk_col >= P.n) continue;
        }
        // Interior chunks (all of it inside M and N, the common case) skip the per-pair range checks,
        // and with whole<2> also the functor's null and alignment checks.
        if (block_row + 64 <= P.m && chunk_col + kChunkBoxes * kBoxCols <= P.n && (!kEpiWhole || whole))
          write_chunk<kEpiWhole ? kChunkWhole : kChunkInterior>(P, epilogue, state, acc[i], cols, pbuf, ch, wg_thread,
                                                                 batch, block_row, chunk_col, pace);
        else
          write_chunk<kChunkChecked>(P, epilogue, state, acc[i], cols, pbuf, ch, wg_thread, batch, block_row, chunk_col,
                                     pace);
        sm90::fence_proxy_async_shared();  // the writes are visible to the TMA (async proxy)
        sm90::named_barrier_sync(bar, 128);
        if (wg_thread == 0) {
#pragma unroll
          for (int bx = 0; bx < kChunkBoxes; ++bx)
            if (chunk_col + bx * kBoxCols < P.n) {
              if constexpr (kPatch)
                AGather::store_d(P.gather, pbuf + bx * kBoxBytes, chunk_col + bx * kBoxCols, block_row);
              else
                sm90::tma_store_3d(&P.tmD, pbuf + bx * kBoxBytes, chunk_col + bx * kBoxCols, block_row, batch);
            }
          sm90::tma_store_commit();
        }
      }
    }
  }
  // Chunk ch of one m64 block's accumulator (a) through Epilogue::compute<2> into the chunk's boxes in
  // buf (128-byte swizzle: 16-byte unit u of row r at u ^ (r % 8)). kChunkInterior: the chunk lies
  // inside M and N; kChunkWhole: and the functor's whole<2> holds for the tile (EpilogueCoordWhole);
  // kChunkChecked: every pair is checked against M and N.
  static constexpr int kChunkChecked = 0, kChunkInterior = 1, kChunkWhole = 2;
  static constexpr int kWholeWindow = 8;  // 8-column groups between the warp barriers of a whole chunk
  template <int Mode>
  __device__ __forceinline__ static void write_chunk(const KernelParams& P, Epilogue& epilogue,
                                                     typename Epilogue::State& state, const Acc (&a)[kAccRegs],
                                                     const ColRegs& cols, uint8_t* buf, int ch, int wg_thread, int batch,
                                                     int block_row, int chunk_col, int pace = 0) {
    const int lane = wg_thread % 32, warp = wg_thread / 32;
    // kStmatrixD: the box row and 16-byte unit (from the x4's first group) this lane addresses for stmatrix.
    const sm90::AccCoord x4 = sm90::stmatrix_x4_lane_coord(lane, false);
    const int g = lane >> 2, t = lane & 3;
    // The pair's coordinates as a per-thread base plus a constant (row0 + 8 h, col_t + bx * kBoxCols +
    // 8 jj), so that its addresses fold into a row pointer plus an immediate.
    const int row0 = block_row + warp * 16 + g, col_t = chunk_col + 2 * t;
    // A patch loader's tile rows are not the output's: each of this thread's two rows' output row (the GEMM row the
    // functor reads C and writes extra outputs at) or -1 past the output (no compute: its D is clipped by the store).
    int out_row[2] = {row0, row0 + 8};
    if constexpr (kPatch) {
      out_row[0] = AGather::output_row(P.gather, row0);
      out_row[1] = AGather::output_row(P.gather, row0 + 8);
    }
#pragma unroll
    for (int bx = 0; bx < kChunkBoxes; ++bx) {
      uint32_t packed[4];  // kStmatrixD: an x4's registers (rows g / g + 8 of two consecutive 8-column groups)
#pragma unroll
      for (int jj = 0; jj < kBoxCols / 8; ++jj) {
        const int j = (ch * kChunkBoxes + bx) * (kBoxCols / 8) + jj;  // the accumulator's 8-column group
        const int cb = jj * 8 + 2 * t;                                // column in the box
        const int col = col_t + (bx * kBoxCols + jj * 8);
        // Both rows' pairs (g and g + 8: the same columns) are computed before either is stored, so
        // that nothing is written between their loads of the same [col] values.
        float d[2][2] = {{0.f, 0.f}, {0.f, 0.f}};
        // The [col] vectors' values at the pair's columns, from the lane that holds group j (kStageCols).
        float cv[kStageCols ? 2 * kColVecs : 1];
        if constexpr (kStageCols) {
#pragma unroll
          for (int s = 0; s < kColVecs; ++s)
#pragma unroll
            for (int e = 0; e < 2; ++e) cv[2 * s + e] = __shfl_sync(0xffffffffu, cols[s][(j / 8) * 2 + e], 4 * (j % 8) + t);
        }
        // The functor's compute at coordinate ec, with the held vectors' values beside it (kStageCols).
        const auto compute = [&](const auto& ec, const float (&v)[2], float (&out)[2]) {
          using Coord = std::decay_t<decltype(ec)>;
          if constexpr (kStageCols)
            epilogue.template compute<2>(P.ep, state, WithCols<Coord, kColVecs>{ec, cv}, v, out);
          else
            epilogue.template compute<2>(P.ep, state, ec, v, out);
        };
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int row = out_row[h];
          const float v[2] = {float(a[4 * j + 2 * h]), float(a[4 * j + 2 * h + 1])};
          // The chunk's mode holds for its columns (a whole or interior chunk lies inside N) and, but for a patch
          // loader's, its rows; those are checked by out_row alone (its tiles are whole: rows past the output map to -1).
          const bool row_in = kPatch ? row >= 0 : (Mode != kChunkChecked || row < P.m);
          if (row_in) {
            if constexpr (Mode == kChunkWhole)
              compute(EpilogueCoordWhole{{batch, row, col, 2}}, v, d[h]);
            else if constexpr (Mode == kChunkInterior)
              compute(EpilogueCoord{batch, row, col, 2}, v, d[h]);
            else if (col < P.n)
              compute(EpilogueCoord{batch, row, col, (P.n - col) < 2 ? (P.n - col) : 2}, v, d[h]);
          }
        }
        if constexpr (kStmatrixD) {
          // Groups jj - 1 and jj (16-byte units of the box row) in one x4, each lane addressing its row x4.row of
          // the warp's 16 and unit jj - 1 + x4.col / 8 (the 128-byte swizzle as below).
          packed[2 * (jj % 2)] = sm90::pack_b16x2<ElementD>(d[0][0], d[0][1]);
          packed[2 * (jj % 2) + 1] = sm90::pack_b16x2<ElementD>(d[1][0], d[1][1]);
          if (jj % 2 == 1) {
            const int r = warp * 16 + x4.row, unit = jj - 1 + x4.col / 8;
            sm90::stmatrix_x4(smem_u32(buf + bx * kBoxBytes + r * 128 + Swizzle128::chunk_in_row(r, unit)), packed[0], packed[1],
                              packed[2], packed[3]);
            if (pace > 0) sm90::sleep_cycles(pace);  // kPaceEpilogue: one x4 at a time beside the other's wgmmas
          }
        } else {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int r = warp * 16 + g + 8 * h;  // row in the box
            const int byte = cb * int(sizeof(ElementD));
            store_pair(buf + bx * kBoxBytes + r * 128 + (Swizzle128::chunk_in_row(r, byte >> 4) | (byte & 15)), d[h]);
          }
        }
        // Straight-line (whole) chunks: a warp barrier every kWholeWindow column groups bounds how far
        // ptxas hoists the next groups' loads and computations (it fills the registers otherwise:
        // spills at 2 x 1 clusters); each window keeps 2 x kWholeWindow pairs' loads in flight.
        if constexpr (Mode == kChunkWhole) {
          const int done = bx * (kBoxCols / 8) + jj + 1;
          if (done % kWholeWindow == 0 && done < kChunkBoxes * (kBoxCols / 8)) __syncwarp();
        }
      }
    }
  }
  // Two consecutive elements of D, converted, to shared memory.
  __device__ __forceinline__ static void store_pair(uint8_t* dst, const float (&d)[2]) {
    const ElementD e0 = convert_out<ElementD>(d[0]), e1 = convert_out<ElementD>(d[1]);
    if constexpr (sizeof(ElementD) == 1) {
      uint16_t v;
      memcpy(&v, &e0, 1);
      memcpy(reinterpret_cast<uint8_t*>(&v) + 1, &e1, 1);
      *reinterpret_cast<uint16_t*>(dst) = v;
    } else if constexpr (sizeof(ElementD) == 2) {
      uint32_t v;
      memcpy(&v, &e0, 2);
      memcpy(reinterpret_cast<uint8_t*>(&v) + 2, &e1, 2);
      *reinterpret_cast<uint32_t*>(dst) = v;
    } else {
      uint2 v;
      memcpy(&v.x, &e0, 4);
      memcpy(&v.y, &e1, 4);
      *reinterpret_cast<uint2*>(dst) = v;
    }
  }

  // ------------------------------------------------------------------ host ----
  static constexpr long long kMaxDim = 0x7fffffffLL - 256;

  static long long tiles_m_of(const GemmProblem& p) { return (p.m + TileM - 1) / TileM; }
  static long long tiles_n_of(const GemmProblem& p) { return (p.n + TileN - 1) / TileN; }
  static int ktiles_of(const GemmProblem& p) { return (int)((p.k + TileK - 1) / TileK); }

  // Why TMA cannot describe an operand (nullptr: it can): cuTensorMapEncodeTiled needs a
  // 16-byte aligned base and strides that are multiples of 16 bytes below 2^40. `rows`: the
  // operand's rows in memory (OperandTile::rows_in_memory).
  static const char* tma_refusal(const char* name, const void* ptr, int64_t ld, int64_t batch_stride, int64_t rows,
                                 int batch, int elem_bytes, char* msg, size_t cap) {
    const uint64_t bstride = detail::sm90_batch_stride_bytes(ld, batch_stride, rows, batch, elem_bytes);
    const int align = 16 / elem_bytes;  // elements per 16 bytes
    if (reinterpret_cast<uintptr_t>(ptr) % 16)
      snprintf(msg, cap, "kdl gemm sm90: %s must be 16-byte aligned for TMA", name);
    else if (((uint64_t)ld * elem_bytes) % 16 || (uint64_t)ld * elem_bytes >= (1ull << 40))
      snprintf(msg, cap, "kdl gemm sm90: ld%s (%lld) must be a multiple of %d elements (16 bytes) for TMA", name,
               (long long)ld, align);
    else if (batch > 1 && batch_stride == 0)
      snprintf(msg, cap, "kdl gemm sm90: batch_stride_%s is 0 (broadcast); TMA cannot describe a zero stride", name);
    else if (bstride % 16 || bstride >= (1ull << 40))
      snprintf(msg, cap, "kdl gemm sm90: batch_stride_%s (%lld) must be a multiple of %d elements (16 bytes) for TMA",
               name, (long long)batch_stride, align);
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
    if (p.split_k < 1 || p.split_k > 65535) return fail("kdl gemm sm90: split_k (%lld) must be in [1, 65535]", p.split_k);
    if (p.k == 0 && p.split_k > 1) return fail("kdl gemm sm90: split_k (%lld) > 1 requires k > 0", p.split_k);
    if (p.k > 0 && p.split_k > ktiles_of(p))
      return fail("kdl gemm sm90: split_k (%lld) exceeds the number of K tiles (%lld = ceil(k=%lld / TileK))", p.split_k,
                  ktiles_of(p), p.k);
    if (tiles_m_of(p) * tiles_n_of(p) * p.batch * p.split_k > 0x7fffffffLL)
      return fail("kdl gemm sm90: too many output tiles x split_k slices");
    if (p.m == 0 || p.n == 0 || p.k == 0) return nullptr;
    if (p.A == nullptr) return fail("kdl gemm sm90: A is null");
    if (p.B == nullptr) return fail("kdl gemm sm90: B is null");
    if constexpr (kLoadsStage) return nullptr;  // A and B are the stage loader's (checked by its caller)
    if constexpr (kGather) {  // A is the gather's (checked by its caller); B is shared by every batch
      if (p.ldb < TileB::min_ld(p.k, p.n)) return fail("kdl gemm sm90: ldb (%lld) < k (%lld)", p.ldb, TileB::min_ld(p.k, p.n));
      return tma_refusal("B", p.B, p.ldb, 0, TileB::rows_in_memory(p.k, p.n), 1, int(sizeof(ElementB)), msg, sizeof(msg));
    }
    if (p.lda < TileA::min_ld(p.k, p.m))
      return fail(kAKMajor ? "kdl gemm sm90: lda (%lld) < k (%lld) for row-major A"
                           : "kdl gemm sm90: lda (%lld) < m (%lld) for column-major A",
                  p.lda, TileA::min_ld(p.k, p.m));
    if (p.ldb < TileB::min_ld(p.k, p.n))
      return fail(kBKMajor ? "kdl gemm sm90: ldb (%lld) < k (%lld) for column-major B"
                           : "kdl gemm sm90: ldb (%lld) < n (%lld) for row-major B",
                  p.ldb, TileB::min_ld(p.k, p.n));
    if (p.batch > 1 && (p.batch_stride_a < 0 || p.batch_stride_b < 0))
      return fail("kdl gemm sm90: negative batch stride (a=%lld, b=%lld)", p.batch_stride_a, p.batch_stride_b);
    if constexpr (kBlockScaled) {
      const long long kblocks = (p.k + BlockScaling::kBlockK - 1) / BlockScaling::kBlockK;
      const long long mb = (p.m + BlockScaling::kBlockMA - 1) / BlockScaling::kBlockMA;
      const long long nb = (p.n + BlockScaling::kBlockNB - 1) / BlockScaling::kBlockNB;
      if (p.scale_a == nullptr || p.scale_b == nullptr) return fail("kdl gemm sm90: block scaling needs scale_A and scale_B");
      if (p.ld_scale_a < mb) return fail("kdl gemm sm90: ld_scale_A (%lld) < ceil(m / %lld) = %lld", p.ld_scale_a,
                                         BlockScaling::kBlockMA, mb);
      if (p.ld_scale_b < nb) return fail("kdl gemm sm90: ld_scale_B (%lld) < ceil(n / %lld) = %lld", p.ld_scale_b,
                                         BlockScaling::kBlockNB, nb);
      if (p.batch > 1 && (p.batch_stride_scale_a < 0 || p.batch_stride_scale_b < 0))
        return fail("kdl gemm sm90: negative batch stride of scale_A / scale_B (%lld, %lld)", p.batch_stride_scale_a,
                    p.batch_stride_scale_b);
      (void)kblocks;
    }
    if (const char* e = tma_refusal("A", p.A, p.lda, p.batch_stride_a, TileA::rows_in_memory(p.k, p.m), p.batch,
                                    int(sizeof(ElementA)), msg, sizeof(msg)))
      return e;
    if (const char* e = tma_refusal("B", p.B, p.ldb, p.batch_stride_b, TileB::rows_in_memory(p.k, p.n), p.batch,
                                    int(sizeof(ElementB)), msg, sizeof(msg)))
      return e;
    return nullptr;
  }

  // D's tensor map for the TMA store ({N, M, batch}, box kBoxCols x 64, 128-byte swizzle), when TMA can
  // describe D (16-byte aligned base, ld and batch stride multiples of 16 bytes, no zero batch stride);
  // false: the epilogue stores D through apply<V> instead.
  template <class Params>
  static bool encode_d(CUtensorMap* map, const GemmProblem& p, const Params& ep) {
    constexpr int kElem = int(sizeof(ElementD));
    // A's and B's TMA limits (tma_refusal), and: the TMA store clips at N in 16-byte granules (measured
    // on the H100: N = 127 bf16 columns wrote column 127 too), so rows of D must end on a 16-byte boundary.
    char why[200];
    const OutputD<ElementD> d = detail::output_d<Epilogue>(ep);
    if (d.data == nullptr || d.ld < p.n || ((uint64_t)p.n * kElem) % 16 ||
        tma_refusal("D", d.data, d.ld, d.batch_stride, p.m, p.batch, kElem, why, sizeof(why)) != nullptr)
      return false;
    const DriverApi& api = driver_api();
    if (api.cuTensorMapEncodeTiled == nullptr) return false;
    cuuint64_t dims[3] = {(cuuint64_t)p.n, (cuuint64_t)p.m, (cuuint64_t)p.batch};
    cuuint64_t strides[2] = {(cuuint64_t)d.ld * kElem,
                             (cuuint64_t)detail::sm90_batch_stride_bytes(d.ld, d.batch_stride, p.m, p.batch, kElem)};
    cuuint32_t box[3] = {(cuuint32_t)kBoxCols, 64, 1};
    cuuint32_t estr[3] = {1, 1, 1};
    return api.cuTensorMapEncodeTiled(map, detail::Sm90StoreDtype<ElementD>::value, 3, d.data, dims, strides, box, estr,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                      CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
  }

  static size_t tiles_total(const GemmProblem& p) { return (size_t)tiles_m_of(p) * (size_t)tiles_n_of(p) * (size_t)p.batch; }
  // Tile groups: ClusterM x ClusterN adjacent tiles, one per CTA of a cluster.
  // The unit grid: a cluster's tiles per unit (the device's units_m / units_n from the same tiles).
  static long long units_m_of(const GemmProblem& p) { return (tiles_m_of(p) + ClusterM - 1) / ClusterM; }
  static long long units_n_of(const GemmProblem& p) { return (tiles_n_of(p) + ClusterN - 1) / ClusterN; }
  static long long groups_of(const GemmProblem& p) { return units_m_of(p) * units_n_of(p) * p.batch; }
  // Stream-K tail (without split_k): when the tile groups do not fill the walkers (one CTA per SM, one
  // cluster per kClusterSize SMs) in whole waves, the last, partial wave's k-tiles are spread over all
  // walkers instead (see unit_at): the last wave then takes about (its groups / walkers) of a tile's
  // time instead of a whole one (128 x 256 tiles at 8192^3 on 132 SMs: 15.5 waves run in ~15.5 tile
  // times instead of 16). It has a fixed cost (the semaphores' memset before the launch, a partial-sum
  // store and load on the tail's critical path; forced on at 4096^3 and 8192x1024x8192, whose last
  // waves are 0.88 and 0.94 full, it still lost 3-5 % with the tail walked in step through K:
  // docs/perf-notes.md v9, v20), so it is
  // used only where the last wave is at most 2/3 full (it then saves at least a third of a tile's
  // time), and at least a quarter full (else a tile is cut into more than ~4 slices added one after
  // the other), with at least one full wave, K of at least 8 k-tiles, and a workspace given to run().
  // Returns the tail's groups (0: not used).
  static int stream_k_groups(const GemmProblem& p, int sms) {
    if (p.split_k != 1 || p.m == 0 || p.n == 0 || ktiles_of(p) < 8) return 0;
    const long long walkers = sms / kClusterSize, groups = groups_of(p);
    if (walkers < 1 || groups < walkers) return 0;
    const long long r = groups % walkers;
    return (4 * r < walkers || 3 * r > 2 * walkers) ? 0 : (int)r;
  }
  // The CTAs of this kernel that run at once on device `dev` (of `sms` SMs), the persistent walk's
  // walkers times the cluster size: every SM for single CTAs; for clusters, as many clusters as
  // cudaOccupancyMaxActiveClusters says fit at once, which can be fewer than sms / cluster size (a
  // GPC holds whole clusters only: an H100's 132 SMs hold 32 clusters of 4, not 33, and a 33rd walker
  // would run its whole share after the others, measured 0.6x: docs/perf-notes.md v12). Asked once
  // per device (after prepare_device's shared-memory opt-in); sms / cluster size where it cannot be.
  static int resident_ctas(int dev, int sms) {
    if constexpr (kClusterSize == 1) {
      return sms;
    } else {
      static std::atomic<int> known[PerDeviceOnce::kMaxDevices] = {};
      const bool cached = dev >= 0 && dev < PerDeviceOnce::kMaxDevices;
      if (cached)
        if (const int v = known[dev].load(std::memory_order_relaxed)) return v;
      cudaLaunchAttribute attr;
      const cudaLaunchConfig_t cfg = cluster_launch((unsigned)(sms / kClusterSize > 0 ? sms / kClusterSize : 1), attr, nullptr);
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, gemm_sm90_kernel<GemmSm90>, &cfg) != cudaSuccess || clusters < 1) {
        cudaGetLastError();
        return (sms / kClusterSize) * kClusterSize;  // not cached: asked again next time
      }
      const int v = (clusters < sms / kClusterSize ? clusters : sms / kClusterSize) * kClusterSize;
      if (cached) known[dev].store(v, std::memory_order_relaxed);
      return v;
    }
  }
  // The launch of `clusters` clusters of ClusterM x ClusterN CTAs: grid (ClusterM x clusters, ClusterN),
  // the cluster shape in `attr` (which the returned config points to).
  // (Without clusters, the grid is `clusters` CTAs and attr is left unused.)
  static cudaLaunchConfig_t cluster_launch(unsigned clusters, cudaLaunchAttribute& attr, cudaStream_t stream) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(clusters * ClusterM, (unsigned)ClusterN, 1);
    cfg.blockDim = dim3(kThreads, 1, 1);
    cfg.dynamicSmemBytes = kSmemBytes;
    cfg.stream = stream;
    if constexpr (kClusterSize > 1) {
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = ClusterM;
      attr.val.clusterDim.y = ClusterN;
      attr.val.clusterDim.z = 1;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
    }
    return cfg;
  }
  static int device_sms() {
    const int dev = current_device();
    int sms = 0;
    if (dev < 0 || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
    if (prepare_device(dev) != cudaSuccess) return sms;
    return resident_ctas(dev, sms);
  }
  // Workspace: partial-sum slots (TileM x TileN f32 / s32 each), then one int semaphore per tile that adds
  // slices (reduce_slices). Split-K: a semaphore per output tile and a slot per slice but the last
  // (fan-in); stream-K tail: a semaphore and a slot per CTA tile of the tail (added in turn).
  // (Never asked for a problem in run-time order: workspace_size returns first, run() has no stream-K tail then.)
  static size_t sems_of(const GemmProblem& p, int sms) {
    return p.split_k > 1 ? (size_t)tiles_total(p) : (size_t)stream_k_groups(p, sms) * kClusterSize;
  }
  // Whether run() hands out p's units in run-time order (kDyn; with a workspace, which holds the counter):
  // one slice per tile, and DRAM-bound on this device -- the problem's FLOP per byte (its own bytes, or the
  // convolution's: GemmProblem::unique_bytes) below half the ridge of tensor FLOP/s over DRAM bytes/s. Where
  // the tensor pipe is the limit the SMs run at one rate and the static walk is as balanced (the tickets cost
  // 1-5 % there: the counter's reset before the launch, the ring's waits; docs/perf-notes.md v30).
  // walkers: the CTAs that run at once (resident_ctas; 0: the current device's).
  static bool dynamic_order(const GemmProblem& p, int walkers = 0) {
    if constexpr (!kDyn) {
      return false;
    } else {
      if (p.split_k != 1 || p.m <= 0 || p.n <= 0 || p.k <= 0) return false;
      if (walkers <= 0) walkers = device_sms();
      return dynamic_order_pays(2.0 * p.m * p.n * p.k * p.batch, unique_bytes_of(p), device_ridge(), groups_of(p), walkers);
    }
  }
  // The problem's unique DRAM bytes (the memory terms of split_k_for and dynamic_order): a convolution's
  // (GemmProblem::unique_bytes: X read once, not r x s times), or the GEMM's A, B and D.
  static double unique_bytes_of(const GemmProblem& p) {
    return p.unique_bytes > 0 ? p.unique_bytes
                              : gemm_unique_bytes(p.m, p.n, p.k, p.batch, (int)sizeof(ElementA), (int)sizeof(ElementB),
                                                  detail::EpilogueD<Epilogue>::kBytes);
  }
  // The current device's ridge of tensor FLOP/s over DRAM bytes/s for this kernel's wgmma (0 where unknown).
  static double device_ridge() {
    static PerDeviceCount known;
    return tensor_ridge_on_device(known, /*wgmma=*/true, 8 * (int)sizeof(ElementA));
  }
  static size_t slots_of(const GemmProblem& p, int sms) {
    return p.split_k > 1 ? (size_t)tiles_total(p) * (size_t)(p.split_k - 1) : sems_of(p, sms);
  }
  static size_t sem_offset(size_t slots) { return (slots * TileM * TileN * sizeof(float) + 255) / 256 * 256; }
  // The slices (1..max_split) to run p in on the current device (kdl/split_k.h): the units (tiles x
  // slices) are walked by the CTAs that run at once, so only splits that fit one wave.
  // The memory term's bytes: unique_bytes_of (a convolution's through GemmProblem::unique_bytes).
  static int split_k_for(const GemmProblem& p, int max_split) {
    if (p.m <= 0 || p.n <= 0 || p.k <= 0) return 1;
    const int ctas = device_sms();
    return choose_split_k((long long)tiles_total(p), ktiles_of(p), max_split, ctas > 0 ? ctas : 1, /*one_wave=*/true,
                          split_k_memory(unique_bytes_of(p), (long long)tiles_total(p), TileM, TileN, TileK,
                                         device_ridge()));
  }
  static size_t workspace_size(const GemmProblem& p) {
    if (dynamic_order(p)) return 16;  // the ticket counter
    const int sms = p.split_k > 1 ? 0 : device_sms();
    const size_t sems = sems_of(p, sms);
    return sems ? sem_offset(slots_of(p, sms)) + sems * sizeof(int) : 0;
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
    return run(p, ep, workspace, stream, typename AGather::Params{});
  }
  // kGather: `gather` says where A comes from (p.A is not read); B is one matrix for every batch.
  static cudaError_t run(const GemmProblem& p, const typename Epilogue::Params& ep, void* workspace, cudaStream_t stream,
                         const typename AGather::Params& gather) {
    if (can_implement(p) != nullptr) return cudaErrorInvalidValue;
    if (p.m == 0 || p.n == 0) return cudaSuccess;
    const int dev = current_device();
    if (dev < 0) return cudaErrorNoDevice;
    if (cudaError_t e = prepare_device(dev); e != cudaSuccess) return e;
    int sms = 0;
    if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev); e != cudaSuccess) return e;
    sms = resident_ctas(dev, sms);  // from here: the CTAs that run at once (for clusters, fewer than the SMs)
    KernelParams kp;
    memset(&kp, 0, sizeof(kp));
    if (p.k > 0 && !kLoadsStage) {
      if constexpr (kGather) {
        if (cudaError_t e = TileB::encode(&kp.tmB, p.B, p.ldb, 0, p.k, p.n, 1); e != cudaSuccess) return e;
      } else {
        if (cudaError_t e = TileA::encode(&kp.tmA, p.A, p.lda, p.batch_stride_a, p.k, p.m, p.batch); e != cudaSuccess)
          return e;
        if (cudaError_t e = TileB::encode(&kp.tmB, p.B, p.ldb, p.batch_stride_b, p.k, p.n, p.batch); e != cudaSuccess)
          return e;
      }
    }
    kp.gather = gather;
    kp.m = p.m;
    kp.n = p.n;
    kp.batch = p.batch;
    kp.tiles_m = (int)tiles_m_of(p);
    kp.tiles_n = (int)tiles_n_of(p);
    {  // place_group's divisors
      const int um = (int)units_m_of(p), un = (int)units_n_of(p);
      const int banded = RasterAlongM ? un : um, other = RasterAlongM ? um : un;
      kp.div_batch = FastDiv(um * un);
      kp.div_band = FastDiv(kRasterBand * other);
      kp.div_last_band = FastDiv(banded % kRasterBand ? banded % kRasterBand : kRasterBand);
    }
    kp.ktiles = ktiles_of(p);
    kp.split = p.split_k;
    kp.scale_a = p.scale_a;
    kp.scale_b = p.scale_b;
    kp.ld_sa = p.ld_scale_a;
    kp.bs_sa = p.batch > 1 ? p.batch_stride_scale_a : 0;
    kp.ld_sb = p.ld_scale_b;
    kp.bs_sb = p.batch > 1 ? p.batch_stride_scale_b : 0;
    kp.partials = nullptr;
    kp.semaphores = nullptr;
    // Without a workspace the tail wave runs whole tiles (stream-K is an optimisation, split-K is not); a
    // DRAM-bound problem takes its units in run-time order instead (dynamic_order; its counter is the workspace).
    const bool dyn = workspace != nullptr && dynamic_order(p, sms);
    // (A patch loader's units are whole tiles: its patches start at a unit's first k-tile.)
    kp.sk_groups = (p.split_k == 1 && workspace != nullptr && !dyn && !kPatch) ? stream_k_groups(p, sms) : 0;
    kp.dp_groups = (int)groups_of(p) - kp.sk_groups;
    if (p.split_k > 1 || kp.sk_groups > 0) {
      if (workspace == nullptr) return cudaErrorInvalidValue;
      kp.partials = static_cast<float*>(workspace);
      kp.semaphores = reinterpret_cast<int*>(static_cast<char*>(workspace) + sem_offset(slots_of(p, sms)));
      if (cudaError_t e = cudaMemsetAsync(kp.semaphores, 0, sems_of(p, sms) * sizeof(int), stream); e != cudaSuccess)
        return e;
    }
    kp.ep = ep;
    if constexpr (kPatch)
      kp.store_d = 1;  // through the loader's map of D (store_d), which its caller has encoded
    else if constexpr (kTmaStoreD)
      kp.store_d = encode_d(&kp.tmD, p, ep) ? 1 : 0;
    kp.tickets = nullptr;
    if (dyn) {
      kp.tickets = static_cast<int*>(workspace);
      if (cudaError_t e = cudaMemsetAsync(kp.tickets, 0, sizeof(int), stream); e != cudaSuccess) return e;
    }
    const long long units = groups_of(p) * p.split_k;
    // One walker per SM, or one cluster per walker (sms is resident_ctas: the clusters that fit at once, times
    // their size); a programmatic dependent launch unless a memset of the workspace went before it here.
    const long long walkers = sms / kClusterSize;
    cudaLaunchAttribute attrs[2];
    cudaLaunchConfig_t cfg = cluster_launch((unsigned)(units < walkers ? units : walkers), attrs[0], stream);
    if (programmatic_launch() && kp.semaphores == nullptr && kp.tickets == nullptr) {
      attrs[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attrs[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = attrs;
      ++cfg.numAttrs;
    }
    return cudaLaunchKernelEx(&cfg, gemm_sm90_kernel<GemmSm90>, kp);
  }
};

}  // namespace kdl
