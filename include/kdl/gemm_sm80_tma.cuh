// kdl/gemm_sm80_tma.cuh -- the sm80-path GEMM with its shared memory fed by Hopper's TMA.
//
// kdl::GemmSm80Tma<...> has exactly the template parameters and static interface of
// kdl::GemmSm80 (kThreads, kSmemBytes, can_implement, workspace_size, run), so a generator can
// switch between them with a one-word change. The math is GemmSm80's (ldmatrix + mma.sync, the
// same 128-byte XOR swizzle, the same epilogue); only the global->shared copies differ:
// instead of 256 threads' cp.async (LDGSTS), thread 0 issues one cp.async.bulk.tensor per
// operand per k-tile, completing on a per-stage "full" mbarrier (expect_tx). Each warp
// releases a stage by arriving on its "empty" mbarrier after its last ldmatrix of it; thread 0
// waits for that before it overwrites the stage. The main loop has no __syncthreads.
//
// TMA path (experimental, v5 in docs/perf-notes.md): 16-bit elements (half/bf16), A RowMajor +
// B ColMajor (both K-contiguous), TileK * 2 == 128 bytes (TMA's SWIZZLE_128B is then exactly
// kdl's SwizzledTile<128>: 16-byte chunk ^ (row % 8)), TileM, TileN <= 256. Out-of-range M/N/K
// elements are zero-filled by TMA; the epilogue stores in range only.
// Every other case calls GemmSm80::run: other template configurations (at compile time), and at
// run time split_k > 1, k == 0, a device that is not compute capability 9.x, a binary without
// sm_90 code for this kernel, pointers/strides TMA cannot describe (16-byte aligned base,
// strides multiples of 16 bytes, < 2^40), or a tensor-map encode failure.
// Built for sm_80 only, the TMA kernel's body is __trap() and run() never launches it.
// Whether a device can take the TMA path is asked once per device, thread-safely (tma_runnable);
// uses_tma(p) says which path run(p) takes without running it (for tests and benchmarks).
// The mbarrier and TMA instructions are kdl/ptx_sm90.cuh's, shared with the sm90a templates.
#pragma once
#include "kdl/gemm_sm80.cuh"
#include "kdl/per_device.h"
#include "kdl/ptx_sm90.cuh"
#include "kdl/runtime.h"

namespace kdl {

namespace detail {
template <class E> struct TmaDtype;
template <> struct TmaDtype<half> { static constexpr CUtensorMapDataType value = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; };
template <> struct TmaDtype<__nv_bfloat16> { static constexpr CUtensorMapDataType value = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; };
}  // namespace detail

template <class Gemm>
__global__ void __launch_bounds__(Gemm::kThreads, 1) gemm_sm80_tma_kernel(const __grid_constant__ typename Gemm::TmaParams params) {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 900
  Gemm::device_main_tma(params);
#else
  __trap();  // never launched: run() checks that the loaded image was built for sm_90+
#endif
#endif
}

template <class ElementA, class LayoutA, int AlignA,
          class ElementB, class LayoutB, int AlignB,
          class ElementAcc,
          int TileM, int TileN, int TileK, int WarpsM, int WarpsN, int Stages,
          bool RasterAlongM, class Epilogue>
struct GemmSm80Tma {
  using Base = GemmSm80<ElementA, LayoutA, AlignA, ElementB, LayoutB, AlignB, ElementAcc, TileM, TileN, TileK, WarpsM,
                        WarpsN, Stages, RasterAlongM, Epilogue>;
  static constexpr int kWarps = Base::kWarps;  // consumer (MMA) warps

  // Configurations the TMA path covers (else everything forwards to GemmSm80).
  static constexpr bool kTmaPath = gemm_sm80_tma_covers(Base::kSmemShape);  // kdl/gemm_sm80_smem.h

  static constexpr int kStageBytesA = Base::kStageBytesA;
  static constexpr int kStageBytesB = Base::kStageBytesB;
  // After GemmSm80's bytes: full[Stages], empty[Stages], then slack to align the base to 1024 B.
  static constexpr int kBarOffset = gemm_sm80_tma_barrier_offset(Base::kSmemShape);
  static constexpr int kSmemBytes = gemm_sm80_tma_variant_smem_bytes(Base::kSmemShape);
  static constexpr int kThreads = Base::kThreads;

  struct TmaParams {
    CUtensorMap tmA;  // 64-byte aligned
    CUtensorMap tmB;
    int m, n, batch;
    int tiles_m, tiles_n, ktiles;
    typename Epilogue::Params ep;
  };

  // ---------------------------------------------------------------- device ----
  __device__ __forceinline__ static void device_main_tma(const TmaParams& P) {
    extern __shared__ __align__(1024) uint8_t kdl_tma_smem[];
    using Mma = typename Base::Mma;
    using SwzA = typename Base::SwzA;
    using SwzB = typename Base::SwzB;
    constexpr int kWarpM = Base::kWarpM, kWarpN = Base::kWarpN, kMI = Base::kMI, kNI = Base::kNI, kKS = Base::kKS;
    constexpr int kRowBytesA = Base::CopyA::kRowBytes, kRowBytesB = Base::CopyB::kRowBytes;
    static_assert(kKS >= 2, "");

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int wm = warp % WarpsM;
    const int wn = warp / WarpsM;
    int tm, tn;
    detail::raster_tile<RasterAlongM, Base::kRasterGroup>(blockIdx.x, P.tiles_m, P.tiles_n, tm, tn);
    const int batch = blockIdx.y;
    const int m0 = tm * TileM, n0 = tn * TileN;
    const int kt_end = P.ktiles;  // >= 1 (run() sends k == 0 to GemmSm80)

    const uint32_t raw = smem_u32(kdl_tma_smem);
    const uint32_t pad = ((raw + 1023u) & ~1023u) - raw;
    uint8_t* smem = kdl_tma_smem + pad;
    // The ring of A stages, then B's, then the barriers: shared-state-space addresses (ldmatrix),
    // and generic pointers made from them for the TMA/mbarrier helpers (whose conversion back to
    // the shared state space then folds away).
    const uint32_t sA = raw + pad;
    const uint32_t sB = sA + Stages * kStageBytesA;
    uint8_t* const stages_a = static_cast<uint8_t*>(__cvta_shared_to_generic(sA));
    uint8_t* const stages_b = static_cast<uint8_t*>(__cvta_shared_to_generic(sB));
    uint64_t* const bars = static_cast<uint64_t*>(__cvta_shared_to_generic(sA + kBarOffset));
    auto full_bar = [&](int s) { return bars + s; };
    auto empty_bar = [&](int s) { return bars + Stages + s; };

    if (tid == 0) {
      sm90::tma_prefetch(&P.tmA);
      sm90::tma_prefetch(&P.tmB);
#pragma unroll
      for (int s = 0; s < Stages; ++s) {
        sm90::mbarrier_init(full_bar(s), 1);
        sm90::mbarrier_init(empty_bar(s), kWarps);
      }
      sm90::fence_mbarrier_init();
    }
    __syncthreads();

    auto issue = [&](int kt) {  // thread 0 only
      const int s = kt % Stages;
      sm90::mbarrier_arrive_expect_tx(full_bar(s), (uint32_t)(kStageBytesA + kStageBytesB));
      sm90::tma_load_3d(stages_a + s * kStageBytesA, &P.tmA, full_bar(s), kt * TileK, m0, batch);
      sm90::tma_load_3d(stages_b + s * kStageBytesB, &P.tmB, full_bar(s), kt * TileK, n0, batch);
    };

    using Acc = ElementAcc;
    Acc acc[kMI][kNI][4];
#pragma unroll
    for (int i = 0; i < kMI; ++i)
#pragma unroll
      for (int j = 0; j < kNI; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[i][j][q] = Acc(0);

    // ldmatrix offsets: GemmSm80's K-contiguous case.
    uint32_t offA[kKS], offB[kKS];
#pragma unroll
    for (int i = 0; i < kKS; ++i) {
      offA[i] = SwzA::offset(wm * kWarpM + (lane & 15), i * 2 + (lane >> 4));
      offB[i] = SwzB::offset(wn * kWarpN + (lane & 7) + ((lane >> 4) << 3), i * 2 + ((lane >> 3) & 1));
    }
    uint32_t fa[2][kMI][4];
    uint32_t fb[2][kNI][2];
    auto load_frags = [&](int buf, uint32_t stA, uint32_t stB, int ks) {
#pragma unroll
      for (int mi = 0; mi < kMI; ++mi) ldmatrix_x4(fa[buf][mi], stA + offA[ks] + mi * 16 * kRowBytesA);
#pragma unroll
      for (int nj = 0; nj < kNI / 2; ++nj) {
        uint32_t r[4];
        ldmatrix_x4(r, stB + offB[ks] + nj * 16 * kRowBytesB);
        fb[buf][2 * nj][0] = r[0];
        fb[buf][2 * nj][1] = r[1];
        fb[buf][2 * nj + 1][0] = r[2];
        fb[buf][2 * nj + 1][1] = r[3];
      }
    };

    // ---- prologue: tiles 0 .. Stages-2 in flight ----
    if (tid == 0) {
#pragma unroll
      for (int t = 0; t < Stages - 1; ++t)
        if (t < kt_end) issue(t);
    }
    sm90::mbarrier_wait(full_bar(0), 0);
    load_frags(0, sA, sB, 0);

    // ---- mainloop ----
    // Tile kt lives in stage kt % Stages (phase (kt / Stages) & 1 of its full barrier). At k-step 0
    // of tile kt, thread 0 refills the stage of tile kt-1 with tile kt+Stages-1, after every warp
    // released it (empty barrier). Each warp releases the stage of tile kt right after its last
    // ldmatrix of it (k-step kKS-2 loads the fragments of k-step kKS-1).
    int read_stage = 0;
    uint32_t read_phase = 0;
#pragma unroll 1
    for (int kt = 0; kt < kt_end; ++kt) {
#pragma unroll
      for (int ks = 0; ks < kKS; ++ks) {
        if (ks == 0 && tid == 0) {
          const int nt = kt + Stages - 1;
          if (nt < kt_end) {
            if (kt >= 1) sm90::mbarrier_wait(empty_bar((kt - 1) % Stages), (uint32_t)(((kt - 1) / Stages) & 1));
            issue(nt);
          }
        }
        const int cur_stage = read_stage;
        if (ks == kKS - 1) {
          read_stage = (read_stage + 1 == Stages) ? 0 : read_stage + 1;
          if (read_stage == 0) read_phase ^= 1u;
          if (kt + 1 < kt_end) sm90::mbarrier_wait(full_bar(read_stage), read_phase);
        }
        load_frags((ks + 1) & 1, sA + read_stage * kStageBytesA, sB + read_stage * kStageBytesB, (ks + 1) % kKS);
        if (ks == kKS - 2) {
          __syncwarp();
          if (lane == 0) sm90::mbarrier_arrive(empty_bar(cur_stage));
        }
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
    __syncthreads();  // all warps are done reading the stages before the epilogue reuses them

    // ---- epilogue: GemmSm80's ----
    Base::run_epilogue(P.ep, reinterpret_cast<float*>(smem), acc, batch, P.m, P.n, m0 + wm * kWarpM, n0 + wn * kWarpN,
                       warp, lane);
  }

  // ------------------------------------------------------------------ host ----
  // The shared memory every device that can run this kernel must allow: GemmSm80's, since devices
  // without the TMA path (or without room for its barriers) run GemmSm80 (tma_runnable()).
  static constexpr int kMinSmemBytes = Base::kMinSmemBytes;
  static const char* can_implement(const GemmProblem& p) { return Base::can_implement(p); }
  static size_t workspace_size(const GemmProblem& p) { return Base::workspace_size(p); }
  static int split_k_for(const GemmProblem& p, int max_split) { return Base::split_k_for(p, max_split); }  // split runs Base

  // Whether TMA can describe an operand: a 16-byte aligned base, row and batch strides multiples of
  // 16 bytes and below 2^40 (cuTensorMapEncodeTiled's limits). Pure; `bstride` is in bytes.
  static uint64_t tma_batch_stride_bytes(int64_t ld, int64_t batch_stride, int rows, int batch) {
    const uint64_t es = sizeof(ElementA);
    const uint64_t row_stride = (uint64_t)ld * es;
    uint64_t bstride = batch > 1 ? (uint64_t)batch_stride * es : row_stride * (uint64_t)rows;
    if (batch <= 1 && bstride >= (1ull << 40)) bstride = row_stride;
    return bstride;
  }
  static bool tma_describable(const void* ptr, int64_t ld, int64_t batch_stride, int rows, int batch) {
    const uint64_t row_stride = (uint64_t)ld * sizeof(ElementA);
    const uint64_t bstride = tma_batch_stride_bytes(ld, batch_stride, rows, batch);
    return reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && row_stride % 16 == 0 && bstride % 16 == 0 && bstride != 0 &&
           row_stride < (1ull << 40) && bstride < (1ull << 40);
  }

  // Encodes a 3-D map {K, rows, batch} with a TileK x rows_box box and the 128-byte swizzle.
  static bool encode(CUtensorMap* map, const void* ptr, int64_t ld, int64_t batch_stride, int k, int rows, int batch,
                     int rows_box) {
    const DriverApi& api = driver_api();
    if (api.cuTensorMapEncodeTiled == nullptr) return false;
    if (!tma_describable(ptr, ld, batch_stride, rows, batch)) return false;
    cuuint64_t dims[3] = {(cuuint64_t)k, (cuuint64_t)rows, (cuuint64_t)(batch < 1 ? 1 : batch)};
    cuuint64_t strides[2] = {(cuuint64_t)((uint64_t)ld * sizeof(ElementA)),
                             (cuuint64_t)tma_batch_stride_bytes(ld, batch_stride, rows, batch)};
    cuuint32_t box[3] = {(cuuint32_t)TileK, (cuuint32_t)rows_box, 1};
    cuuint32_t estr[3] = {1, 1, 1};
    CUresult r = api.cuTensorMapEncodeTiled(map, detail::TmaDtype<ElementA>::value, 3, const_cast<void*>(ptr), dims, strides,
                                            box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS;
  }

  // Whether the current device and its loaded image can take the TMA path: compute capability 9.x,
  // this kernel's sm_90 code in the image, and its shared memory opted into. Asked once per device
  // (the attribute and the image are per device), thread-safely.
  static bool tma_runnable() {
    static PerDeviceAnswer ready;
    const int dev = current_device();
    if (dev < 0) return false;
    return ready.get(dev, [dev] {
      int major = 0;
      if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
        cudaGetLastError();
        return false;
      }
      if (major != 9) return false;
      cudaFuncAttributes fa;
      if (cudaFuncGetAttributes(&fa, gemm_sm80_tma_kernel<GemmSm80Tma>) != cudaSuccess) {
        cudaGetLastError();
        return false;
      }
      if (fa.ptxVersion < 90 || fa.binaryVersion < 90) return false;
      if (cudaFuncSetAttribute(gemm_sm80_tma_kernel<GemmSm80Tma>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               kSmemBytes) != cudaSuccess) {
        cudaGetLastError();
        return false;
      }
      return true;
    });
  }

  // Whether run(p) on the current device takes the TMA path (true) or GemmSm80's (false), answered
  // without running: for tests and benchmarks that must know which code they measured. (A
  // tensor-map encode failure inside run(), which the checks here do not foresee, also falls back.)
  static bool uses_tma(const GemmProblem& p) {
    if constexpr (!kTmaPath) {
      (void)p;
      return false;
    } else {
      if (can_implement(p) != nullptr || p.m == 0 || p.n == 0 || p.split_k > 1 || p.k == 0) return false;
      if (!tma_describable(p.A, p.lda, p.batch_stride_a, p.m, p.batch) ||
          !tma_describable(p.B, p.ldb, p.batch_stride_b, p.n, p.batch))
        return false;
      return tma_runnable() && driver_api().cuTensorMapEncodeTiled != nullptr;
    }
  }

  static cudaError_t run(const GemmProblem& p, const typename Epilogue::Params& ep, void* workspace, cudaStream_t stream) {
    if (can_implement(p) != nullptr) return cudaErrorInvalidValue;
    if (p.m == 0 || p.n == 0) return cudaSuccess;
    if constexpr (!kTmaPath) {
      return Base::run(p, ep, workspace, stream);
    } else {
      if (p.split_k > 1 || p.k == 0 || !tma_runnable()) return Base::run(p, ep, workspace, stream);
      TmaParams kp;
      if (!encode(&kp.tmA, p.A, p.lda, p.batch_stride_a, p.k, p.m, p.batch, TileM) ||
          !encode(&kp.tmB, p.B, p.ldb, p.batch_stride_b, p.k, p.n, p.batch, TileN))
        return Base::run(p, ep, workspace, stream);
      kp.m = p.m;
      kp.n = p.n;
      kp.batch = p.batch;
      kp.tiles_m = (int)Base::tiles_m_of(p);
      kp.tiles_n = (int)Base::tiles_n_of(p);
      kp.ktiles = Base::ktiles_of(p);
      kp.ep = ep;
      dim3 grid((unsigned)(kp.tiles_m * kp.tiles_n), (unsigned)p.batch, 1);
      gemm_sm80_tma_kernel<GemmSm80Tma><<<grid, kThreads, kSmemBytes, stream>>>(kp);
      return cudaGetLastError();
    }
  }
};

}  // namespace kdl
