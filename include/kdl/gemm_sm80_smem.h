// kdl/gemm_sm80_smem.h -- the dynamic shared memory of kdl::GemmSm80 and kdl::GemmSm80Tma, in
// plain C++17 (no CUDA types), so that the device templates and the generator (kdlc's validation
// and lowering) compute the launch size with the same function and cannot disagree.
//
// Per block, kdl::GemmSm80 holds `stages` copies of an A tile (TileM x TileK) and a B tile
// (TileN x TileK) for the mainloop; after the mainloop the same bytes are reused to stage the
// accumulators of each warp (16 rows of WarpTileN + 8 floats) for the epilogue, so a block needs the
// larger of the two. kdl::GemmSm80Tma, where its TMA path covers the configuration, adds a full and
// an empty mbarrier per stage after the data (8-byte aligned) and 1024 bytes of slack to align the
// base to 1024 bytes (TMA's 128-byte swizzle); elsewhere it launches kdl::GemmSm80 and needs its bytes.
#pragma once

namespace kdl {

struct GemmSm80SmemShape {
  int element_bytes_a, element_bytes_b;  // sizeof(ElementA), sizeof(ElementB)
  bool a_contig_k, b_contig_k;           // A RowMajor, B ColMajor
  int tile_m, tile_n, tile_k;
  int warps_m, warps_n;
  int stages;
};

// One stage of the mainloop: an A tile and a B tile (the swizzle permutes within rows, adds nothing).
// The number of stages that fit a limit depends on this alone (kdlc's validator picks `stages` with it).
constexpr int gemm_sm80_stage_bytes(int element_bytes_a, int element_bytes_b, int tile_m, int tile_n, int tile_k) {
  return tile_m * tile_k * element_bytes_a + tile_n * tile_k * element_bytes_b;
}
constexpr int gemm_sm80_stage_bytes(const GemmSm80SmemShape& s) {
  return gemm_sm80_stage_bytes(s.element_bytes_a, s.element_bytes_b, s.tile_m, s.tile_n, s.tile_k);
}
constexpr int gemm_sm80_mainloop_smem_bytes(const GemmSm80SmemShape& s) { return s.stages * gemm_sm80_stage_bytes(s); }
// Accumulator staging of the epilogue: per warp, 16 rows of (warp tile N + 8) floats; the 8 floats of
// padding make the float2 writes conflict-free.
constexpr int gemm_sm80_epilogue_smem_bytes(const GemmSm80SmemShape& s) {
  return s.warps_m * s.warps_n * 16 * (s.tile_n / s.warps_n + 8) * 4;
}
// What kdl::GemmSm80 launches with (GemmSm80::kSmemBytes).
constexpr int gemm_sm80_smem_bytes(const GemmSm80SmemShape& s) {
  return gemm_sm80_mainloop_smem_bytes(s) > gemm_sm80_epilogue_smem_bytes(s) ? gemm_sm80_mainloop_smem_bytes(s)
                                                                              : gemm_sm80_epilogue_smem_bytes(s);
}

// The configurations kdl::GemmSm80Tma's TMA path covers: 16-bit elements, both operands K-contiguous,
// 128-byte K rows (TMA's SWIZZLE_128B), TileM and TileN at most 256 (one TMA box).
constexpr bool gemm_sm80_tma_covers(const GemmSm80SmemShape& s) {
  return s.element_bytes_a == 2 && s.element_bytes_b == 2 && s.a_contig_k && s.b_contig_k && s.tile_k * 2 == 128 &&
         s.tile_m <= 256 && s.tile_n <= 256;
}
// Where the mbarriers start (after GemmSm80's bytes, 8-byte aligned), and what the TMA kernel
// launches with: the barriers (full[stages], empty[stages], 8 bytes each) and the alignment slack.
constexpr int gemm_sm80_tma_barrier_offset(const GemmSm80SmemShape& s) { return (gemm_sm80_smem_bytes(s) + 7) / 8 * 8; }
constexpr int gemm_sm80_tma_smem_bytes(const GemmSm80SmemShape& s) {
  return gemm_sm80_tma_barrier_offset(s) + 16 * s.stages + 1024;
}
// What kdl::GemmSm80Tma::kSmemBytes is: the TMA kernel's bytes where the TMA path covers the
// configuration, else kdl::GemmSm80's (the only kernel it launches then).
constexpr int gemm_sm80_tma_variant_smem_bytes(const GemmSm80SmemShape& s) {
  return gemm_sm80_tma_covers(s) ? gemm_sm80_tma_smem_bytes(s) : gemm_sm80_smem_bytes(s);
}

}  // namespace kdl
