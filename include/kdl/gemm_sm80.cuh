// kdl/gemm_sm80.cuh -- multistage tensor-core GEMM for sm_80+ (cp.async + ldmatrix + mma.sync).
//
//   D[b, m, n] = Epilogue( sum_k A[b, m, k] * B[b, k, n] )
//
// Operands (leading dimension `ld*` in elements, batch strides in elements):
//   A RowMajor : M x K, K contiguous   A(m,k) = A[m*lda + k]
//   A ColMajor : M x K, M contiguous   A(m,k) = A[k*lda + m]
//   B RowMajor : K x N, N contiguous   B(k,n) = B[k*ldb + n]
//   B ColMajor : K x N, K contiguous   B(k,n) = B[n*ldb + k]
//
// Supported element/layout combinations (anything else is a static_assert):
//   half, bf16 : all four A/B layout combinations, f32 accumulation
//   float (tf32 MMA, cvt.rna), int8_t (s32 accumulation): A RowMajor + B ColMajor only ("TN")
//
// Alignment: AlignA/AlignB elements per vector copy; AlignX*sizeof(X) must be 4, 8 or 16
// bytes. The pointer, the leading dimension and (batch > 1) the batch stride must be
// multiples of it. K must be a multiple of the alignment of each K-contiguous operand
// (A RowMajor / B ColMajor); M and N are arbitrary: ragged vectors at the M/N edge of
// MN-contiguous operands are zero-filled by cp.async src-size (only in-range bytes are read).
//
// Split-K (problem.split_k > 1) is serial: slice s of a tile waits for slice s-1 through a
// per-tile semaphore in the workspace, adds the partial sums it finds there, and either
// writes them back (s < split_k-1) or runs the epilogue (last slice). run() zeroes the
// semaphores with cudaMemsetAsync before each split-K launch, and the last slice also resets
// its semaphore, so a workspace can be reused and never needs host-side initialisation.
// Slices of the same tile must not be split across concurrently running launches that
// share a workspace.
//
// Raster: tiles are visited in groups of kRasterGroup (8) tiles: RasterAlongM=false
// sweeps along N over bands of 8 M-tiles (M fastest inside the band); RasterAlongM=true
// sweeps along M over bands of 8 N-tiles.
#pragma once
#include <cuda_runtime.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include "kdl/numeric.cuh"
#include "kdl/epilogue.cuh"
#include "kdl/mma_sm80.cuh"
#include "kdl/copy_sm80.cuh"
#include "kdl/gemm_sm80_smem.h"
#include "kdl/smem_layout.cuh"
#include "kdl/gemm_problem.h"
#include "kdl/per_device.h"
#include "kdl/split_k.h"

namespace kdl {

namespace detail {
template <class X, class Y> struct is_same_t { static constexpr bool value = false; };
template <class X> struct is_same_t<X, X> { static constexpr bool value = true; };

// Epilogue vector width: Epilogue::kVectorWidth when declared, else 8; at most KDL_EPILOGUE_MAX_VECTOR_WIDTH
// (`kdlc build`'s later tries of an sm90a kernel that ptxas reports spilling: codegen/build_ptxas.h).
#ifndef KDL_EPILOGUE_MAX_VECTOR_WIDTH
#define KDL_EPILOGUE_MAX_VECTOR_WIDTH 16
#endif
template <class E, class = void> struct EpilogueVectorWidthDeclared { static constexpr int value = 8; };
template <class E> struct EpilogueVectorWidthDeclared<E, decltype((void)E::kVectorWidth)> {
  static constexpr int value = E::kVectorWidth;
};
template <class E> struct EpilogueVectorWidth {
  static constexpr int value = EpilogueVectorWidthDeclared<E>::value < KDL_EPILOGUE_MAX_VECTOR_WIDTH
                                   ? EpilogueVectorWidthDeclared<E>::value
                                   : KDL_EPILOGUE_MAX_VECTOR_WIDTH;
};

__device__ __forceinline__ void sem_wait(const int* sem, int value) {
  int v;
  do {
    asm volatile("ld.global.acquire.gpu.b32 %0, [%1];\n" : "=r"(v) : "l"(sem) : "memory");
  } while (v != value);
}
__device__ __forceinline__ void sem_release(int* sem, int value) {
  asm volatile("st.global.release.gpu.b32 [%0], %1;\n" ::"l"(sem), "r"(value) : "memory");
}
__device__ __forceinline__ void sem_add_release(int* sem, int value) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;\n" ::"l"(sem), "r"(value) : "memory");
}

// Global -> shared copier for one operand tile. The smem tile is kRows rows of kRowElems
// contiguous elements (the operand's contiguous dimension), swizzled.
//   ContigK: rows = M (or N) index, contiguous = K.   Else: rows = K, contiguous = M (or N).
template <class E, bool ContigK, int TileMN, int TileK, int Align, int kThreads>
struct TileCopier {
  static constexpr int kRows = ContigK ? TileMN : TileK;
  static constexpr int kRowElems = ContigK ? TileK : TileMN;
  static constexpr int kRowBytes = kRowElems * (int)sizeof(E);
  using Swz = SwizzledTile<kRowBytes>;
  static constexpr int kBytes = kRows * kRowBytes;
  static constexpr int kVecBytes = Align * (int)sizeof(E);
  static constexpr int kVecPerRow = kRowElems / Align;
  static constexpr int kVecs = kRows * kVecPerRow;
  static constexpr int kIters = kVecs / kThreads;
  static constexpr int kRowStep = kThreads / kVecPerRow;
  static_assert(kVecBytes == 4 || kVecBytes == 8 || kVecBytes == 16, "Align * sizeof(Element) must be 4, 8 or 16 bytes");
  static_assert(kRowElems % Align == 0, "tile extent must be a multiple of the alignment");
  static_assert(kThreads % kVecPerRow == 0 && kVecs % kThreads == 0,
                "tile too small / too large for the thread count with this alignment");
  // When the rows covered by one pass of the block are a multiple of the swizzle period,
  // the smem offset of pass j is additive; otherwise it is recomputed.
  static constexpr bool kAdditive = (kRowStep % Swz::kRowPeriod) == 0;

  // Rows of the MN dimension past the matrix edge are clamped to the last row instead of
  // being zero-filled: they only feed accumulators of rows/columns that are never stored.
  // The K residue (and ragged MN vectors of MN-contiguous operands) are zero-filled.
  // Few vectors per thread: one pointer each. Many (low alignment): one pointer + row math.
  static constexpr bool kFewPtrs = kIters <= 8;
  static constexpr int kPtrs = kFewPtrs ? kIters : 1;
  const char* ptr[kPtrs];   // next tile; kFewPtrs: vector j, else pass-0 base (row 0 of the tile)
  int64_t step_bytes;       // pointer advance per tile
  int64_t ld_bytes;
  uint32_t soff;            // smem offset of vector 0
  int kpos;                 // ContigK: K index of this thread's column in the next tile; else K row
  int ext;                  // K
  int fixed_bytes;          // !ContigK: valid bytes of this thread's vector along MN
  int row_first, row_last;  // !kFewPtrs && ContigK: first MN row of this thread, last valid MN row
  int row0_, cb_;

  __device__ __forceinline__ void init(const char* base, int64_t ld, int mn0, int MN, int K, int k_begin, int tid) {
    const int row0 = tid / kVecPerRow;
    const int col0 = (tid % kVecPerRow) * Align;
    ld_bytes = ld * (int64_t)sizeof(E);
    ext = K;
    const int cb = col0 * (int)sizeof(E);
    soff = (uint32_t)(Swz::offset(row0, cb >> 4) + (cb & 15));
    row0_ = row0;
    cb_ = cb;
    if constexpr (ContigK) {
      if constexpr (kFewPtrs) {
#pragma unroll
        for (int j = 0; j < kIters; ++j) {
          int r = mn0 + row0 + j * kRowStep;
          r = r < MN ? r : MN - 1;
          ptr[j] = base + (int64_t)r * ld_bytes + (int64_t)(k_begin + col0) * sizeof(E);
        }
      } else {
        ptr[0] = base + (int64_t)(k_begin + col0) * sizeof(E);
        row_first = mn0 + row0;
        row_last = MN - 1;
      }
      kpos = k_begin + col0;
      step_bytes = (int64_t)TileK * sizeof(E);
      fixed_bytes = 0;
    } else {
      int rem = MN - mn0 - col0;
      rem = rem < 0 ? 0 : (rem > Align ? Align : rem);
      fixed_bytes = rem * (int)sizeof(E);
      const int64_t cofs = rem > 0 ? (int64_t)(mn0 + col0) * sizeof(E) : 0;
      if constexpr (kFewPtrs) {
#pragma unroll
        for (int j = 0; j < kIters; ++j) ptr[j] = base + (int64_t)(k_begin + row0 + j * kRowStep) * ld_bytes + cofs;
      } else {
        ptr[0] = base + (int64_t)(k_begin + row0) * ld_bytes + cofs;
      }
      kpos = k_begin + row0;
      step_bytes = (int64_t)TileK * ld_bytes;
    }
  }
  __device__ __forceinline__ uint32_t smem_offset(int j) const {
    if constexpr (kAdditive) return soff + j * kRowStep * kRowBytes;
    else return (uint32_t)(Swz::offset(row0_ + j * kRowStep, cb_ >> 4) + (cb_ & 15));
  }
  __device__ __forceinline__ const char* gptr(int j) const {
    if constexpr (kFewPtrs) return ptr[j];
    else if constexpr (ContigK) {
      int r = row_first + j * kRowStep;
      r = r < row_last ? r : row_last;
      return ptr[0] + (int64_t)r * ld_bytes;
    } else {
      return ptr[0] + (int64_t)(j * kRowStep) * ld_bytes;
    }
  }
  // Issue copies J0 <= j < J1 of the next tile into the stage at smem address s (no advance).
  template <int J0, int J1>
  __device__ __forceinline__ void load_range(uint32_t s) const {
    if constexpr (ContigK) {
      // K % Align == 0 (can_implement): a vector is entirely in or out of range.
      const bool valid = kpos < ext;
#pragma unroll
      for (int j = J0; j < J1; ++j) cp_async_pred<kVecBytes>(s + smem_offset(j), gptr(j), valid);
    } else {
#pragma unroll
      for (int j = J0; j < J1; ++j)
        cp_async<kVecBytes>(s + smem_offset(j), gptr(j), (kpos + j * kRowStep < ext) ? fixed_bytes : 0);
    }
  }
  // Step to the next tile (after all of this tile's copies were issued).
  __device__ __forceinline__ void advance() {
#pragma unroll
    for (int j = 0; j < kPtrs; ++j) ptr[j] += step_bytes;
    kpos += TileK;
  }
  // Issue the copies of the next tile into the stage at smem address s, then advance.
  __device__ __forceinline__ void load(uint32_t s) {
    load_range<0, kIters>(s);
    advance();
  }
  // Part `g` of `G` (copies spread over G k-steps; empty parts are allowed).
  // (g is a constant once the k-step loop is unrolled, so the dispatch folds away.)
  template <int G, int Q = 0>
  __device__ __forceinline__ void load_part(int g, uint32_t s) const {
    if constexpr (Q < G) {
      if (g == Q) load_range<(Q * kIters) / G, ((Q + 1) * kIters) / G>(s);
      else load_part<G, Q + 1>(g, s);
    }
  }
};

// The epilogue's row map of a GEMM: row gm of batch `batch` is output row gm of that batch.
struct SameBatchRows {
  int batch;
  __device__ __forceinline__ int2 operator()(int gm) const { return make_int2(batch, gm); }
};

// Per-block tile coordinate with grouped rasterization.
template <bool AlongM, int G>
__device__ __forceinline__ void raster_tile(int id, int tiles_m, int tiles_n, int& tm, int& tn) {
  if constexpr (!AlongM) {
    const int per_group = G * tiles_n;
    const int group = id / per_group;
    const int first = group * G;
    const int gsize = (tiles_m - first) < G ? (tiles_m - first) : G;
    const int r = id - group * per_group;
    tm = first + r % gsize;
    tn = r / gsize;
  } else {
    const int per_group = G * tiles_m;
    const int group = id / per_group;
    const int first = group * G;
    const int gsize = (tiles_n - first) < G ? (tiles_n - first) : G;
    const int r = id - group * per_group;
    tn = first + r % gsize;
    tm = r / gsize;
  }
}
}  // namespace detail

template <class Gemm>
__global__ void __launch_bounds__(Gemm::kThreads, 1) gemm_sm80_kernel(const typename Gemm::KernelParams params) {
  Gemm::device_main(params);
}

template <class ElementA, class LayoutA, int AlignA,
          class ElementB, class LayoutB, int AlignB,
          class ElementAcc,
          int TileM, int TileN, int TileK, int WarpsM, int WarpsN, int Stages,
          bool RasterAlongM, class Epilogue>
struct GemmSm80 {
  static constexpr int kThreads = WarpsM * WarpsN * 32;
  static constexpr int kWarps = WarpsM * WarpsN;
  static constexpr int kRasterGroup = 8;  // tiles per raster band (docs/perf-notes.md)

  using Mma = MmaOp<ElementA>;
  static_assert(detail::is_same_t<ElementA, ElementB>::value, "A and B must have the same element type");
  static_assert(detail::is_same_t<typename Mma::Acc, ElementAcc>::value,
                "ElementAcc must be float for half/bf16/float(tf32) and int32_t for int8_t");
  static constexpr bool kAContigK = detail::is_same_t<LayoutA, RowMajor>::value;
  static constexpr bool kBContigK = detail::is_same_t<LayoutB, ColMajor>::value;
  static_assert(kAContigK || detail::is_same_t<LayoutA, ColMajor>::value, "LayoutA must be RowMajor or ColMajor");
  static_assert(kBContigK || detail::is_same_t<LayoutB, RowMajor>::value, "LayoutB must be RowMajor or ColMajor");
  static_assert(sizeof(ElementA) == 2 || (kAContigK && kBContigK),
                "tf32 and s8 GEMMs support only A RowMajor + B ColMajor (K-contiguous operands)");
  static_assert(Stages >= 2 && Stages <= 8, "Stages must be 2..8");

  static constexpr int kWarpM = TileM / WarpsM;
  static constexpr int kWarpN = TileN / WarpsN;
  static constexpr int kMI = kWarpM / 16;
  static constexpr int kNI = kWarpN / 8;
  static constexpr int kKS = TileK * (int)sizeof(ElementA) / 32;  // mma k-steps per tile
  static_assert(TileM % WarpsM == 0 && kWarpM % 16 == 0, "warp tile M must be a multiple of 16");
  static_assert(TileN % WarpsN == 0 && kWarpN % 16 == 0, "warp tile N must be a multiple of 16");
  static_assert((TileK * (int)sizeof(ElementA)) % 32 == 0 && kKS >= 2, "TileK must cover >= 64 bytes (2 mma k-steps)");
  // The k-steps of a tile the next tile's copies are spread over (docs/perf-notes.md, v3).
  static constexpr int kCopySteps = kKS - 1;
  static_assert(kCopySteps >= 1 && kCopySteps <= kKS, "copy steps must be in [1, kKS]");

  using CopyA = detail::TileCopier<ElementA, kAContigK, TileM, TileK, AlignA, kThreads>;
  using CopyB = detail::TileCopier<ElementB, kBContigK, TileN, TileK, AlignB, kThreads>;
  using SwzA = typename CopyA::Swz;
  using SwzB = typename CopyB::Swz;
  static constexpr int kStageBytesA = CopyA::kBytes;
  static constexpr int kStageBytesB = CopyB::kBytes;
  static constexpr int kMainloopSmem = Stages * (kStageBytesA + kStageBytesB);

  static constexpr int kV = detail::EpilogueVectorWidth<Epilogue>::value;
  static_assert(kV == 1 || kV == 2 || kV == 4 || kV == 8 || kV == 16, "vector width must be a power of two <= 16");
  static constexpr int kStgStride = kWarpN + 8;  // floats per staged row (conflict-free float2 writes)
  static constexpr int kEpiSmem = kWarps * 16 * kStgStride * 4;
  static_assert(kWarpN % kV == 0 && ((16 * kWarpN / kV) % 32) == 0, "warp tile N incompatible with the epilogue vector width");
  // The launch size comes from kdl/gemm_sm80_smem.h, which kdlc uses too (tests/nvcc/smem_agreement.py
  // checks it against kMainloopSmem and kEpiSmem above).
  static constexpr GemmSm80SmemShape kSmemShape{(int)sizeof(ElementA), (int)sizeof(ElementB), kAContigK, kBContigK,
                                                TileM, TileN, TileK, WarpsM, WarpsN, Stages};
  static constexpr int kSmemBytes = gemm_sm80_smem_bytes(kSmemShape);

  struct KernelParams {
    GemmProblem prob;
    typename Epilogue::Params ep;
    void* workspace;
    int tiles_m, tiles_n, ktiles;
    size_t sem_offset;
  };

  // ---------------------------------------------------------------- device ----
  __device__ __forceinline__ static void device_main(const KernelParams& P) {
    extern __shared__ __align__(128) uint8_t kdl_smem[];
    const GemmProblem& pr = P.prob;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int wm = warp % WarpsM;
    const int wn = warp / WarpsM;
    int tm, tn;
    detail::raster_tile<RasterAlongM, kRasterGroup>(blockIdx.x, P.tiles_m, P.tiles_n, tm, tn);
    const int batch = blockIdx.y;
    const int slice = blockIdx.z;
    const int split = pr.split_k;
    const int m0 = tm * TileM, n0 = tn * TileN;

    const int kt_begin = (int)(((int64_t)P.ktiles * slice) / split);
    const int kt_end = (int)(((int64_t)P.ktiles * (slice + 1)) / split);

    const char* baseA = static_cast<const char*>(pr.A) + (int64_t)batch * pr.batch_stride_a * (int64_t)sizeof(ElementA);
    const char* baseB = static_cast<const char*>(pr.B) + (int64_t)batch * pr.batch_stride_b * (int64_t)sizeof(ElementB);
    CopyA ca; ca.init(baseA, pr.lda, m0, pr.m, pr.k, kt_begin * TileK, tid);
    CopyB cb; cb.init(baseB, pr.ldb, n0, pr.n, pr.k, kt_begin * TileK, tid);

    using Acc = ElementAcc;
    Acc acc[kMI][kNI][4];
    mainloop(ca, cb, kt_begin, kt_end, kdl_smem, acc);
    if (split > 1) {
      const int tile_lin = (batch * P.tiles_m + tm) * P.tiles_n + tn;
      if (!split_k_handoff(P.workspace, P.sem_offset, tile_lin, slice, split, acc)) return;
    }

    // ---- epilogue ----
    run_epilogue(P.ep, reinterpret_cast<float*>(kdl_smem), acc, batch, pr.m, pr.n, m0 + wm * kWarpM, n0 + wn * kWarpN, warp,
                 lane);
  }

  // The mainloop of one output tile: the k-tiles [kt_begin, kt_end) that the copiers `ca` and `cb`
  // (positioned at kt_begin) fill into the stages, multiplied into `acc` (zeroed here). Any copier with
  // TileCopier's interface (load, load_part, advance) and shared-memory layout drives it: the dense
  // GEMM's, or the implicit-GEMM gathers of kdl/conv_sm80.cuh.
  template <class CA, class CB>
  __device__ __forceinline__ static void mainloop(CA& ca, CB& cb, int kt_begin, int kt_end, uint8_t* kdl_smem,
                                                  ElementAcc (&acc)[kMI][kNI][4]) {
    using Acc = ElementAcc;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int wm = warp % WarpsM;
    const int wn = warp / WarpsM;
    const uint32_t sA = smem_u32(kdl_smem);
    const uint32_t sB = sA + Stages * kStageBytesA;

#pragma unroll
    for (int i = 0; i < kMI; ++i)
#pragma unroll
      for (int j = 0; j < kNI; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][j][q] = Acc(0);

    // ---- per-thread ldmatrix offsets (see smem_layout.cuh: +16 rows is additive) ----
    // A: ContigK -> offA[ks] (+ mi * 16 rows); else offA[mi] (+ ks * 16 rows)
    // B: ContigK -> offB[ks] (+ nj * 16 rows); else offB[nj] (+ ks * 16 rows)
    constexpr int kOffA = kAContigK ? kKS : kMI;
    constexpr int kOffB = kBContigK ? kKS : kNI / 2;
    uint32_t offA[kOffA], offB[kOffB];
#pragma unroll
    for (int i = 0; i < kOffA; ++i) {
      if constexpr (kAContigK) offA[i] = SwzA::offset(wm * kWarpM + (lane & 15), i * 2 + (lane >> 4));
      else offA[i] = SwzA::offset((lane & 7) + ((lane >> 4) << 3), (wm * kWarpM + i * 16) / 8 + ((lane >> 3) & 1));
    }
#pragma unroll
    for (int i = 0; i < kOffB; ++i) {
      if constexpr (kBContigK) offB[i] = SwzB::offset(wn * kWarpN + (lane & 7) + ((lane >> 4) << 3), i * 2 + ((lane >> 3) & 1));
      else offB[i] = SwzB::offset((lane & 7) + (((lane >> 3) & 1) << 3), (wn * kWarpN + i * 16) / 8 + (lane >> 4));
    }

    uint32_t fa[2][kMI][4];
    uint32_t fb[2][kNI][2];

    auto load_frags = [&](int buf, uint32_t stA, uint32_t stB, int ks) {
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi) {
        if constexpr (kAContigK) ldmatrix_x4(fa[buf][mi], stA + offA[ks] + mi * 16 * CopyA::kRowBytes);
        else ldmatrix_x4_trans(fa[buf][mi], stA + offA[mi] + ks * 16 * CopyA::kRowBytes);
        if constexpr (Mma::kNeedsTf32) {
#pragma unroll
          for (int q = 0; q < 4; ++q) fa[buf][mi][q] = float_to_tf32(fa[buf][mi][q]);
        }
      }
#pragma unroll
      for (int nj = 0; nj < kNI / 2; ++nj) {
        uint32_t r[4];
        if constexpr (kBContigK) ldmatrix_x4(r, stB + offB[ks] + nj * 16 * CopyB::kRowBytes);
        else ldmatrix_x4_trans(r, stB + offB[nj] + ks * 16 * CopyB::kRowBytes);
        if constexpr (Mma::kNeedsTf32) {
#pragma unroll
          for (int q = 0; q < 4; ++q) r[q] = float_to_tf32(r[q]);
        }
        fb[buf][2 * nj][0] = r[0];
        fb[buf][2 * nj][1] = r[1];
        fb[buf][2 * nj + 1][0] = r[2];
        fb[buf][2 * nj + 1][1] = r[3];
      }
    };

    // ---- prologue: Stages-1 tiles in flight ----
#pragma unroll
    for (int s = 0; s < Stages - 1; ++s) {
      // Tiles past kt_end are loaded too (in-bounds or zero-size copies) and never read.
      ca.load(sA + s * kStageBytesA);
      cb.load(sB + s * kStageBytesB);
      cp_async_commit();
    }
    int write_stage = Stages - 1;
    int read_stage = 0;
    cp_async_wait<Stages - 2>();
    __syncthreads();
    load_frags(0, sA, sB, 0);

    // ---- mainloop ----
    // Copies for tile kt+Stages-1 go to the stage read at tile kt-1 (freed by the barrier of
    // the previous iteration). kCopySteps: the k-steps they are spread over (one part each,
    // CUTLASS-style), committed at the last of them.
    // The cp.async wait + barrier sit once per tile, before the fragment loads of the next
    // tile's first k-step (issued during the last k-step of this tile).
#pragma unroll 1
    for (int kt = kt_begin; kt < kt_end; ++kt) {
#pragma unroll
      for (int ks = 0; ks < kKS; ++ks) {
        if (ks < kCopySteps) {
          ca.template load_part<kCopySteps>(ks, sA + write_stage * kStageBytesA);
          cb.template load_part<kCopySteps>(ks, sB + write_stage * kStageBytesB);
        }
        if (ks == kCopySteps - 1) {
          ca.advance();
          cb.advance();
          cp_async_commit();
          write_stage = (write_stage + 1 == Stages) ? 0 : write_stage + 1;
        }
        if (ks == kKS - 1) {
          cp_async_wait<Stages - 2>();
          __syncthreads();
          read_stage = (read_stage + 1 == Stages) ? 0 : read_stage + 1;
        }
        load_frags((ks + 1) & 1, sA + read_stage * kStageBytesA, sB + read_stage * kStageBytesB, (ks + 1) % kKS);
        const int buf = ks & 1;
#pragma unroll
        for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
          for (int nn = 0; nn < kNI; ++nn) {
            const int ni = (mi & 1) ? (kNI - 1 - nn) : nn;  // serpentine
            Mma::mma(acc[mi][ni], fa[buf][mi], fb[buf][ni]);
          }
      }
    }
    cp_async_wait<0>();
    __syncthreads();
  }

  // Serial split-K: slice `slice` of tile `tile_lin` adds the partial sums of the slices before it
  // (through the workspace, in slice order) to `acc`; false when this slice is not the last (it wrote
  // its sums back and runs no epilogue), true when it is (acc holds the whole sum).
  __device__ __forceinline__ static bool split_k_handoff(void* workspace, size_t sem_offset, int tile_lin, int slice,
                                                         int split, ElementAcc (&acc)[kMI][kNI][4]) {
    using Acc = ElementAcc;
    const int tid = threadIdx.x;
    Acc* ws = reinterpret_cast<Acc*>(workspace) + (size_t)tile_lin * (TileM * TileN);
    int* sem = reinterpret_cast<int*>(static_cast<char*>(workspace) + sem_offset) + tile_lin;
    using Acc4 = typename detail::VecOf<16>::type;  // 4 x 32-bit
    Acc4* ws4 = reinterpret_cast<Acc4*>(ws);
    if (slice > 0) {
      if (tid == 0) detail::sem_wait(sem, slice);
      __syncthreads();
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNI; ++ni) {
          Acc4 v = __ldcg(ws4 + (mi * kNI + ni) * kThreads + tid);
          const Acc* pv = reinterpret_cast<const Acc*>(&v);
#pragma unroll
          for (int q = 0; q < 4; ++q) acc[mi][ni][q] += pv[q];
        }
    }
    if (slice < split - 1) {
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi)
#pragma unroll
        for (int ni = 0; ni < kNI; ++ni) {
          Acc4 v;
          Acc* pv = reinterpret_cast<Acc*>(&v);
#pragma unroll
          for (int q = 0; q < 4; ++q) pv[q] = acc[mi][ni][q];
          __stcg(ws4 + (mi * kNI + ni) * kThreads + tid, v);
        }
      __threadfence();
      __syncthreads();
      if (tid == 0) detail::sem_release(sem, slice + 1);
      return false;  // block-uniform: non-final slices run no epilogue (and no finish)
    }
    if (tid == 0) *sem = 0;  // leave the semaphore reset for the next launch
    return true;
  }

  // The epilogue of one output tile, shared with GemmSm80Tma: each warp stages 16 rows x warp-N of
  // its accumulators through shared memory (`smem`, free again after the mainloop) and hands V
  // consecutive in-range columns at a time to Epilogue::apply; every thread then calls finish.
  // (mw, nw) is the warp tile's first output element.
  __device__ __forceinline__ static void run_epilogue(const typename Epilogue::Params& params, float* smem,
                                                      ElementAcc (&acc)[kMI][kNI][4], int batch, int m, int n, int mw,
                                                      int nw, int warp, int lane) {
    run_epilogue(params, smem, acc, detail::SameBatchRows{batch}, m, n, mw, nw, warp, lane);
  }
  // The same with `rows` mapping the tile's row gm (< m) to the output's {batch, row} (an implicit GEMM's
  // output pixel, kdl/conv_sm80.cuh).
  template <class Rows>
  __device__ __forceinline__ static void run_epilogue(const typename Epilogue::Params& params, float* smem,
                                                      ElementAcc (&acc)[kMI][kNI][4], const Rows& rows, int m, int n,
                                                      int mw, int nw, int warp, int lane) {
    Epilogue ep{};
    typename Epilogue::State st{};
    epilogue_prepare(ep, params, st);
    float* stg = smem + warp * 16 * kStgStride;
    const int g = lane >> 2, t = lane & 3;
    constexpr int kVecPerRow = kWarpN / kV;
    constexpr int kItems = 16 * kVecPerRow;
#pragma unroll  // must unroll: acc[mi] is indexed by mi
    for (int mi = 0; mi < kMI; ++mi) {
#pragma unroll
      for (int ni = 0; ni < kNI; ++ni) {
        *reinterpret_cast<float2*>(stg + g * kStgStride + ni * 8 + 2 * t) =
            make_float2((float)acc[mi][ni][0], (float)acc[mi][ni][1]);
        *reinterpret_cast<float2*>(stg + (g + 8) * kStgStride + ni * 8 + 2 * t) =
            make_float2((float)acc[mi][ni][2], (float)acc[mi][ni][3]);
      }
      __syncwarp();
#pragma unroll
      for (int it = 0; it < kItems / 32; ++it) {
        const int idx = it * 32 + lane;
        const int r = idx / kVecPerRow;
        const int cv = idx % kVecPerRow;
        const float* src = stg + r * kStgStride + cv * kV;
        float v[kV];
        load_staged_row<kV>(src, lane, v);
        const int gm = mw + mi * 16 + r;
        const int gn = nw + cv * kV;
        if (gm < m && gn < n) {
          const int rem = n - gn;
          const int2 row = rows(gm);
          const EpilogueCoord co{row.x, row.y, gn, rem < kV ? rem : kV};
          ep.template apply<kV>(params, st, co, v);
        }
      }
      __syncwarp();
    }
    ep.finish(params, st);
  }

  // ------------------------------------------------------------------ host ----
  // Tile counts in int64: (m + TileM - 1) in int overflows near INT_MAX.
  static int64_t tiles_m_of(const GemmProblem& p) { return ((int64_t)p.m + TileM - 1) / TileM; }
  static int64_t tiles_n_of(const GemmProblem& p) { return ((int64_t)p.n + TileN - 1) / TileN; }
  static int ktiles_of(const GemmProblem& p) { return (int)(((int64_t)p.k + TileK - 1) / TileK); }
  // The largest m, n, k the device code's int index arithmetic holds: a tile's first row plus the
  // tile (m, n), and the K position of the copies issued up to Stages tiles past the end (k).
  static constexpr int64_t kMaxM = 0x7fffffffLL - TileM;
  static constexpr int64_t kMaxN = 0x7fffffffLL - TileN;
  static constexpr int64_t kMaxK = 0x7fffffffLL - (int64_t)(Stages + 1) * TileK;

  // The dynamic shared memory a launch needs; the caller checks it against the device's opt-in
  // limit (kdl::check_device_smem), since an sm80 binary also loads on GPUs with less (sm86: 99 KB).
  static constexpr int kMinSmemBytes = kSmemBytes;

  // Pure: reads only `p` (no device query), so it runs and is tested without a GPU.
  static const char* can_implement(const GemmProblem& p) {
    static thread_local char msg[320];
    auto fail = [&](const char* fmt, long long a = 0, long long b = 0, long long c = 0) -> const char* {
      snprintf(msg, sizeof(msg), fmt, a, b, c);
      return msg;
    };
    if (p.m < 0 || p.n < 0 || p.k < 0) return fail("kdl gemm: negative problem size (m=%lld, n=%lld, k=%lld)", p.m, p.n, p.k);
    if (p.m > kMaxM || p.n > kMaxN || p.k > kMaxK)
      return fail("kdl gemm: problem too large for 32-bit tile arithmetic (m=%lld, n=%lld, k=%lld); the limits are "
                  "2^31-1 minus one tile (minus Stages+1 K tiles for k)", p.m, p.n, p.k);
    if (p.batch < 1 || p.batch > 65535) return fail("kdl gemm: batch (%lld) must be in [1, 65535]", p.batch);
    if (p.split_k < 1 || p.split_k > 65535) return fail("kdl gemm: split_k (%lld) must be in [1, 65535]", p.split_k);
    const long long kt = ktiles_of(p);
    if (p.k == 0 && p.split_k > 1) return fail("kdl gemm: split_k (%lld) > 1 requires k > 0", p.split_k);
    if (p.k > 0 && p.split_k > kt)
      return fail("kdl gemm: split_k (%lld) exceeds the number of K tiles (%lld = ceil(k=%lld / TileK))", p.split_k, kt, p.k);
    const long long tiles = tiles_m_of(p) * tiles_n_of(p);
    if (tiles > 0x7fffffffLL) return fail("kdl gemm: too many output tiles (%lld)", tiles);
    if (p.m == 0 || p.n == 0) return nullptr;
    if (p.k > 0) {
      if (p.A == nullptr) return fail("kdl gemm: A is null");
      if (p.B == nullptr) return fail("kdl gemm: B is null");
      const long long va = AlignA * (long long)sizeof(ElementA), vb = AlignB * (long long)sizeof(ElementB);
      if (reinterpret_cast<uintptr_t>(p.A) % va)
        return fail("kdl gemm: A pointer must be %lld-byte aligned (AlignA = %lld elements)", va, AlignA);
      if (reinterpret_cast<uintptr_t>(p.B) % vb)
        return fail("kdl gemm: B pointer must be %lld-byte aligned (AlignB = %lld elements)", vb, AlignB);
      if (p.lda % AlignA) return fail("kdl gemm: lda (%lld) must be a multiple of AlignA (%lld)", p.lda, AlignA);
      if (p.ldb % AlignB) return fail("kdl gemm: ldb (%lld) must be a multiple of AlignB (%lld)", p.ldb, AlignB);
      // A batch stride of 0 broadcasts one matrix to every batch (read-only operands); negative
      // strides are refused.
      if (p.batch > 1 && p.batch_stride_a < 0) return fail("kdl gemm: batch_stride_a (%lld) is negative", p.batch_stride_a);
      if (p.batch > 1 && p.batch_stride_b < 0) return fail("kdl gemm: batch_stride_b (%lld) is negative", p.batch_stride_b);
      if (p.batch > 1 && (p.batch_stride_a % AlignA))
        return fail("kdl gemm: batch_stride_a (%lld) must be a multiple of AlignA (%lld)", p.batch_stride_a, AlignA);
      if (p.batch > 1 && (p.batch_stride_b % AlignB))
        return fail("kdl gemm: batch_stride_b (%lld) must be a multiple of AlignB (%lld)", p.batch_stride_b, AlignB);
      if (kAContigK && (p.k % AlignA))
        return fail("kdl gemm: k (%lld) must be a multiple of AlignA (%lld) for row-major A", p.k, AlignA);
      if (kBContigK && (p.k % AlignB))
        return fail("kdl gemm: k (%lld) must be a multiple of AlignB (%lld) for column-major B", p.k, AlignB);
      if (kAContigK) { if (p.lda < p.k) return fail("kdl gemm: lda (%lld) < k (%lld) for row-major A", p.lda, p.k); }
      else if (p.lda < p.m) return fail("kdl gemm: lda (%lld) < m (%lld) for column-major A", p.lda, p.m);
      if (kBContigK) { if (p.ldb < p.k) return fail("kdl gemm: ldb (%lld) < k (%lld) for column-major B", p.ldb, p.k); }
      else if (p.ldb < p.n) return fail("kdl gemm: ldb (%lld) < n (%lld) for row-major B", p.ldb, p.n);
    }
    return nullptr;
  }

  static size_t tiles_total(const GemmProblem& p) {
    return (size_t)tiles_m_of(p) * (size_t)tiles_n_of(p) * (size_t)p.batch;
  }
  static size_t sem_offset(const GemmProblem& p) {
    return (tiles_total(p) * TileM * TileN * sizeof(ElementAcc) + 255) / 256 * 256;
  }
  static size_t workspace_size(const GemmProblem& p) {
    if (p.split_k <= 1) return 0;
    return sem_offset(p) + tiles_total(p) * sizeof(int);
  }
  // The slices (1..max_split) to run p in on the current device (kdl/split_k.h): grid = tiles x slices.
  // bytes: the problem's unique DRAM bytes for the memory term, when not the GEMM's own (a convolution's).
  static int split_k_for(const GemmProblem& p, int max_split, double bytes = 0) {
    if (p.m <= 0 || p.n <= 0 || p.k <= 0) return 1;
    if (prepare_device() != cudaSuccess) cudaGetLastError();
    static PerDeviceCount resident, ridge;
    if (bytes <= 0)
      bytes = gemm_unique_bytes(p.m, p.n, p.k, p.batch, (int)sizeof(ElementA), (int)sizeof(ElementB),
                                detail::EpilogueD<Epilogue>::kBytes);
    return choose_split_k((long long)tiles_total(p), ktiles_of(p), max_split,
                          resident_ctas_on_device(resident, gemm_sm80_kernel<GemmSm80>, kThreads, kSmemBytes),
                          /*one_wave=*/false,
                          split_k_memory(bytes, (long long)tiles_total(p), TileM, TileN, TileK,
                                         tensor_ridge_on_device(ridge, /*wgmma=*/false, 8 * (int)sizeof(ElementA))));
  }

  // Opts the kernel into kSmemBytes of dynamic shared memory on the current device (the attribute
  // is per device: once for each device the process launches on).
  static cudaError_t prepare_device() {
    static PerDeviceOnce smem_attribute;
    return smem_attribute.run(current_device(), [] {
      return cudaFuncSetAttribute(gemm_sm80_kernel<GemmSm80>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    });
  }

  static cudaError_t run(const GemmProblem& p, const typename Epilogue::Params& ep, void* workspace, cudaStream_t stream) {
    if (can_implement(p) != nullptr) return cudaErrorInvalidValue;
    if (p.m == 0 || p.n == 0) return cudaSuccess;
    if (cudaError_t e = prepare_device(); e != cudaSuccess) return e;
    KernelParams kp;
    kp.prob = p;
    kp.ep = ep;
    kp.workspace = workspace;
    kp.tiles_m = (int)tiles_m_of(p);
    kp.tiles_n = (int)tiles_n_of(p);
    kp.ktiles = ktiles_of(p);
    kp.sem_offset = sem_offset(p);
    if (p.split_k > 1) {
      if (workspace == nullptr) return cudaErrorInvalidValue;
      cudaError_t e = cudaMemsetAsync(static_cast<char*>(workspace) + kp.sem_offset, 0, tiles_total(p) * sizeof(int), stream);
      if (e != cudaSuccess) return e;
    }
    dim3 grid((unsigned)(kp.tiles_m * kp.tiles_n), (unsigned)p.batch, (unsigned)p.split_k);
    gemm_sm80_kernel<GemmSm80><<<grid, kThreads, kSmemBytes, stream>>>(kp);
    return cudaGetLastError();
  }
};

}  // namespace kdl
