// kdl/smem_layout.cuh -- XOR-swizzled shared-memory tile layouts.
//
// A tile is Rows rows of RowBytes bytes (RowBytes = 16 * kChunks, >= 64), addressed in
// 16-byte chunks. The swizzle permutes the chunks so that
//   * 8 consecutive rows read at the same logical chunk (one ldmatrix 8x8 matrix,
//     or 8 lanes of one 128-bit access phase) hit 8 distinct 16-byte bank groups;
//   * 8 consecutive logical chunks of a row (cp.async writes) also do.
// RowBytes >= 128: physical chunk = c ^ (row & 7) (low three bits only).
// RowBytes == 64 : two rows share a 128-byte line; chunk index L = row*4 + c inside
//                  the line is XORed with (line & 7)  (CuTe's Swizzle<3,4,3>).
// The XOR key repeats every 16 rows (64 B) / 8 rows (>= 128 B), so adding a
// multiple of 16 rows to a row index adds a constant to the offset.
#pragma once
#include <stdint.h>

namespace kdl {

template <int RowBytes>
struct SwizzledTile {
  static_assert(RowBytes == 64 || (RowBytes >= 128 && RowBytes % 128 == 0),
                "swizzled rows must be 64 bytes or a multiple of 128 bytes");
  static constexpr int kChunks = RowBytes / 16;
  // offset(r + kRowPeriod, c) == offset(r, c) + kRowPeriod * RowBytes
  static constexpr int kRowPeriod = kChunks >= 8 ? 8 : 16;
  // RowBytes >= 128: where 16-byte chunk `c` of row `r` lies within its row (offset(r, c) - r * RowBytes).
  // Callers that step a pointer by the row themselves add this, so that the row's part folds into their
  // address arithmetic as before (GemmSm90's D staging).
  __device__ __forceinline__ static int chunk_in_row(int r, int c) {
    static_assert(kChunks >= 8, "rows of 64 bytes share a 128-byte line: use offset()");
    return (c ^ (r & 7)) << 4;
  }
  // byte offset of 16-byte chunk `c` of row `r`
  __device__ __forceinline__ static int offset(int r, int c) {
    if constexpr (kChunks >= 8) {
      return r * RowBytes + chunk_in_row(r, c);
    } else {
      const int L = r * kChunks + c;
      return (L ^ ((L >> 3) & 7)) << 4;
    }
  }
};

}  // namespace kdl
