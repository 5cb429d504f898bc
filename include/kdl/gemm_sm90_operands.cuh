// kdl/gemm_sm90_operands.cuh -- the operand tiles of kdl::GemmSm90 (kdl/gemm_sm90.cuh): how one
// operand (A or B) is described to TMA, loaded into a stage of shared memory (sliced and multicast
// across a cluster), and read by wgmma through descriptors, for every element type and layout of
// the sm90a path.
//
// sm90::OperandTile<Element, KMajor, Rows, TileK, Slices> is one operand's tile of a stage:
//   Rows x TileK elements (Rows = TileM for A, TileN for B; TileK x sizeof(Element) = 128 bytes, one
//   swizzled row), written by TMA with the 128-byte swizzle in the layouts wgmma reads
//   (kdl/wgmma_sm90.cuh):
//   * K-major (A row-major, B column-major; every element type): Rows rows of 128 bytes of K.
//     Tensor map {K, Rows, batch}, box TileK x Rows / Slices.
//   * MN-major (A column-major, B row-major; f16 and bf16 only): blocks of 64 elements of MN
//     (128 bytes), each TileK rows of K (TileK x 128 bytes), block b at b x TileK x 128.
//     Tensor map {MN, K, batch}, box 64 x TileK (one block) or 64 x TileK / Slices (below).
//   Slices (1 or 2) CTAs of a cluster share the tile: each loads its slice and multicasts it to
//   the others. A K-major slice is Rows / Slices rows. An MN-major slice is a set of whole 64-column
//   blocks when the blocks divide among the CTAs, else (a 64-wide tile) TileK / Slices rows of K of
//   every block. Every slice starts on a 1024-byte boundary (the swizzle atom).
//   Element types on TMA: 16-bit types as themselves, float (tf32) as f32, 8-bit types as bytes.
#pragma once
#include "kdl/gemm_problem.h"
#include "kdl/gemm_sm80_tma.cuh"  // detail::TmaDtype, driver_api
#include "kdl/ptx_sm90.cuh"
#include "kdl/wgmma_sm90.cuh"

namespace kdl {
namespace detail {
// The TMA element type of an operand: 16-bit types as themselves, float as f32 (wgmma reads it as
// tf32), 8-bit ones (fp8, s8, u8) as bytes.
template <class E, bool = sizeof(E) == 1>
struct Sm90TmaDtype : TmaDtype<E> {};
template <>
struct Sm90TmaDtype<float, false> {
  static constexpr CUtensorMapDataType value = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
};
template <class E>
struct Sm90TmaDtype<E, true> {
  static constexpr CUtensorMapDataType value = CU_TENSOR_MAP_DATA_TYPE_UINT8;
};

// The byte stride between batches TMA is given: the caller's for batch > 1, else one that keeps the
// 1-deep batch dimension describable (`rows`: the operand's rows in memory, of ld elements each).
inline uint64_t sm90_batch_stride_bytes(int64_t ld, int64_t batch_stride, int64_t rows, int64_t batch, int elem_bytes) {
  const uint64_t row_stride = (uint64_t)ld * elem_bytes;
  if (batch > 1) return (uint64_t)batch_stride * elem_bytes;
  const uint64_t whole = row_stride * (uint64_t)(rows < 1 ? 1 : rows);
  return whole < (1ull << 40) ? whole : row_stride;
}
}  // namespace detail

namespace sm90 {

template <class Element, bool KMajor, int Rows, int TileK, int Slices>
struct OperandTile {
  static constexpr Major kMajor = KMajor ? Major::K : Major::MN;
  static_assert(KMajor || sizeof(Element) == 2, "GemmSm90: MN-major operands (A column-major, B row-major) exist for "
                                                "f16 and bf16 only; wgmma reads other types K-major");
  static_assert(TileK * int(sizeof(Element)) == kSwizzleBytes, "GemmSm90: TileK must be one 128-byte swizzled row");
  static_assert(Slices == 1 || Slices == 2, "GemmSm90: a tile is shared by 1 or 2 CTAs of a cluster");
  static constexpr int kBytes = Rows * TileK * int(sizeof(Element));
  static constexpr int kSlices = Slices;

  // MN-major: 64-element (128-byte) blocks of MN, each TileK rows of K.
  static constexpr int kBlockMN = kSwizzleBytes / int(sizeof(Element));
  static constexpr int kBlockBytes = TileK * kSwizzleBytes;
  static constexpr int kBlocks = KMajor ? 1 : Rows / kBlockMN;
  static_assert(KMajor || Rows % kBlockMN == 0, "GemmSm90: an MN-major tile is whole 64-element blocks");

  // The slice one of the Slices CTAs loads.
  static constexpr bool kSliceByBlocks = !KMajor && kBlocks % Slices == 0;
  static constexpr int kSliceRows = KMajor ? Rows / Slices : 0;                     // K-major: rows
  static constexpr int kSliceBlocks = KMajor ? 0 : (kSliceByBlocks ? kBlocks / Slices : kBlocks);  // MN-major: blocks
  static constexpr int kSliceKRows = KMajor || kSliceByBlocks ? TileK : TileK / Slices;            // MN-major: K rows
  static_assert(KMajor ? (kSliceRows * kSwizzleBytes) % kSwizzleAtomBytes == 0
                       : (kSliceKRows * kSwizzleBytes) % kSwizzleAtomBytes == 0,
                "GemmSm90: every slice of a tile starts on a swizzle atom (1024 bytes)");
  // The TMA box: K-major TileK x slice rows; MN-major 64 x slice K rows (one block's part).
  static constexpr int kBoxInner = KMajor ? TileK : kBlockMN;
  static constexpr int kBoxOuter = KMajor ? kSliceRows : kSliceKRows;

  // ---- host ----
  // The operand as stored: rows of ld elements; K-major: mn rows of K, MN-major: k rows of MN.
  static int64_t rows_in_memory(int64_t k, int64_t mn) { return KMajor ? mn : k; }
  static int64_t min_ld(int64_t k, int64_t mn) { return KMajor ? k : mn; }

  // The tensor map: {K, MN, batch} (K-major) or {MN, K, batch} (MN-major), the slice's box, 128-byte
  // swizzle, out-of-range elements zero.
  static cudaError_t encode(CUtensorMap* map, const void* ptr, int64_t ld, int64_t batch_stride, int64_t k, int64_t mn,
                            int64_t batch) {
    const DriverApi& api = driver_api();
    if (api.cuTensorMapEncodeTiled == nullptr) return cudaErrorNotSupported;
    constexpr int kElem = int(sizeof(Element));
    cuuint64_t dims[3] = {(cuuint64_t)(KMajor ? k : mn), (cuuint64_t)(KMajor ? mn : k), (cuuint64_t)batch};
    cuuint64_t strides[2] = {(cuuint64_t)((uint64_t)ld * kElem),
                             (cuuint64_t)kdl::detail::sm90_batch_stride_bytes(ld, batch_stride, rows_in_memory(k, mn), batch, kElem)};
    cuuint32_t box[3] = {(cuuint32_t)kBoxInner, (cuuint32_t)kBoxOuter, 1};
    cuuint32_t estr[3] = {1, 1, 1};
    const CUresult r = api.cuTensorMapEncodeTiled(map, kdl::detail::Sm90TmaDtype<Element>::value, 3, const_cast<void*>(ptr),
                                                  dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
  }

  // ---- device ----
  // Issues the TMA loads of slice `slice` of the tile at (k0, mn0) of `batch` into the stage's tile
  // (shared-window address), completing on `full`; with Slices > 1 multicast to the CTAs of `mask`.
  __device__ __forceinline__ static void load(uint32_t tile, const CUtensorMap* map, uint64_t* full, int k0, int mn0,
                                              int batch, int slice, uint16_t mask) {
    if constexpr (KMajor) {
      issue(tile + uint32_t(slice * kSliceRows * kSwizzleBytes), map, full, k0, mn0 + slice * kSliceRows, batch, mask);
    } else {
      const int b0 = kSliceByBlocks ? slice * kSliceBlocks : 0;
      const int kr = kSliceByBlocks ? 0 : slice * kSliceKRows;
#pragma unroll
      for (int i = 0; i < kSliceBlocks; ++i) {
        const int b = b0 + i;
        issue(tile + uint32_t(b * kBlockBytes + kr * kSwizzleBytes), map, full, mn0 + b * kBlockMN, k0 + kr, batch, mask);
      }
    }
  }

  // The descriptor of k-step ks (32 bytes of K) of the 64 x (tile K) part of the tile that starts at
  // MN offset mn_off (a multiple of 64) -- A's rows of one m64 wgmma -- or of the whole tile (B, 0).
  __host__ __device__ static constexpr SmemDesc desc(uint32_t tile, int mn_off, int ks) {
    if constexpr (KMajor)
      return make_desc_kmajor_sw128<Element>(tile + uint32_t(mn_off * kSwizzleBytes), Rows, ks);
    else
      return make_desc_mnmajor_sw128<Element>(tile + uint32_t(mn_off / kBlockMN * kBlockBytes), TileK, ks);
  }
  // desc(tile, mn_off, ks) is desc(tile, 0, 0) plus this constant: the start-address field (address / 16,
  // bits 0-13) is linear in the address below 256 KB, which every shared-memory address is. So a k-tile's
  // descriptors are one value per stage plus compile-time offsets (the consumer's mainloop adds immediates
  // instead of rebuilding each descriptor from the address).
  __host__ __device__ static constexpr uint64_t desc_offset(int mn_off, int ks) {
    return (KMajor ? uint64_t(mn_off) * kSwizzleBytes + sw128_byte_offset(0, ks * kWgmmaKBytes, Rows)
                   : uint64_t(mn_off / kBlockMN) * kBlockBytes + uint64_t(ks * kWgmmaK<Element>) * kSwizzleBytes) >> 4;
  }
  static constexpr bool desc_offsets_hold() {
    for (uint32_t tile : {0u, 0x8000u, 0x36000u})  // stage bases (1024-byte aligned) up to the end of shared memory
      for (int mn = 0; mn < Rows; mn += 64)
        for (int ks = 0; ks * kWgmmaKBytes < kSwizzleBytes; ++ks)
          if (desc(tile, mn, ks).bits != desc(tile, 0, 0).bits + desc_offset(mn, ks)) return false;
    return true;
  }
  static_assert(desc_offsets_hold(), "OperandTile: a descriptor is not its tile's plus a constant offset");

 private:
  __device__ __forceinline__ static void issue(uint32_t dst, const CUtensorMap* map, uint64_t* full, int c0, int c1,
                                               int batch, uint16_t mask) {
    if constexpr (Slices == 1) {
      (void)mask;
      tma_load_3d(__cvta_shared_to_generic(dst), map, full, c0, c1, batch);
    } else {
      tma_load_3d_multicast(__cvta_shared_to_generic(dst), map, full, c0, c1, batch, mask);
    }
  }
};

}  // namespace sm90
}  // namespace kdl
