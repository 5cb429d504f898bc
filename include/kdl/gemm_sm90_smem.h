// kdl/gemm_sm90_smem.h -- the dynamic shared memory of kdl::GemmSm90 (kdl/gemm_sm90.cuh), in plain
// C++17 (no CUDA types), so that the device template and the generator (kdlc's validation, which picks
// `stages = auto`, and lowering, which reports the launch size) compute it with one function.
//
// Layout (from a 1024-byte aligned base; 1 KB of slack aligns the dynamic base):
//   Stages x (A tile: TileM x TileK, B tile: TileN x TileK), each tile 1024-byte aligned (the swizzle atom);
//   a patch mainloop (patch_bytes > 0: kdl::sm90::ConvFpropPatchLoader) keeps only B in its stages, and
//   two patch slots of patch_bytes each follow them (A is read out of the patches)
//   full[Stages] and empty[Stages] mbarriers (8 bytes each)
//   block-scaled fp8 only: Stages scale slots, each a k-block's TileM scales of A (one per tile row) and
//   its scale of B, 16-byte aligned (the producer stages them beside the operand tiles)
//   the epilogue's buffer, 1024-byte aligned: per consumer warpgroup 16 KB where it fits, else 10 KB
//   (the TMA store's boxes of D, or the per-warp staging of the functor's vectors: 16 rows x 40 f32 per warp)
#pragma once

namespace kdl {

// The two warp-specialized schedules of the sm90a path (spec field `schedule`).
enum class Sm90Schedule : int { Cooperative = 0, Pingpong = 1 };

struct GemmSm90SmemShape {
  int element_bytes_a, element_bytes_b;  // sizeof(ElementA), sizeof(ElementB)
  int tile_m, tile_n, tile_k;
  int stages;
  int schedule;  // int(Sm90Schedule)
  int scale_rows = 0;  // block-scaled fp8: tile_m (a stage's scales of A; one of B follows); 0: none
  int patch_bytes = 0;  // a patch mainloop: one patch slot's bytes (a multiple of 1024; two slots); 0: none
};

constexpr int gemm_sm90_consumer_warpgroups(const GemmSm90SmemShape&) { return 2; }
// One stage of the mainloop: an A tile and a B tile. The number of stages that fit depends on this
// and on the fixed bytes below.
constexpr int gemm_sm90_stage_bytes(int element_bytes_a, int element_bytes_b, int tile_m, int tile_n, int tile_k) {
  return tile_m * tile_k * element_bytes_a + tile_n * tile_k * element_bytes_b;
}
constexpr int gemm_sm90_stage_bytes(const GemmSm90SmemShape& s) {
  return s.patch_bytes > 0 ? s.tile_n * s.tile_k * s.element_bytes_b
                           : gemm_sm90_stage_bytes(s.element_bytes_a, s.element_bytes_b, s.tile_m, s.tile_n, s.tile_k);
}
// The patch slots (a patch mainloop) follow the stages.
constexpr int gemm_sm90_patch_offset(const GemmSm90SmemShape& s) { return s.stages * gemm_sm90_stage_bytes(s); }
constexpr int gemm_sm90_barrier_offset(const GemmSm90SmemShape& s) {
  return gemm_sm90_patch_offset(s) + 2 * s.patch_bytes;
}
// A stage's scale slot (block-scaled fp8): scale_rows f32 scales of A, then B's scale, padded to 16 bytes.
constexpr int gemm_sm90_scale_slot_bytes(const GemmSm90SmemShape& s) {
  return s.scale_rows > 0 ? (s.scale_rows + 4) * 4 : 0;
}
// The scale slots follow the barriers (16-byte aligned: 2 x Stages x 8 bytes of them).
constexpr int gemm_sm90_scale_offset(const GemmSm90SmemShape& s) { return gemm_sm90_barrier_offset(s) + 2 * s.stages * 8; }
constexpr int gemm_sm90_epilogue_offset(const GemmSm90SmemShape& s) {
  return (gemm_sm90_scale_offset(s) + s.stages * gemm_sm90_scale_slot_bytes(s) + 1023) & ~1023;
}
// The shared memory an sm_90 block may have (227 KB).
constexpr int kGemmSm90SmemLimit = 232448;
// The epilogue's buffer: 16 KB per consumer warpgroup (two 64 x 128-byte boxes of D for the TMA
// store) where that fits beside the stages, else 10 KB (one box; also what the per-warp staging of
// 16 rows x (32 + 8) floats needs: 4 warps x 2560 bytes).
constexpr int gemm_sm90_full_epilogue_smem_bytes(const GemmSm90SmemShape& s) {
  return gemm_sm90_consumer_warpgroups(s) * 16384;
}
constexpr int gemm_sm90_epilogue_smem_bytes(const GemmSm90SmemShape& s) {
  return 1024 + gemm_sm90_epilogue_offset(s) + gemm_sm90_full_epilogue_smem_bytes(s) <= kGemmSm90SmemLimit
             ? gemm_sm90_full_epilogue_smem_bytes(s)
             : gemm_sm90_consumer_warpgroups(s) * 4 * 16 * 40 * 4;
}
// What kdl::GemmSm90 launches with (GemmSm90::kSmemBytes).
constexpr int gemm_sm90_smem_bytes(const GemmSm90SmemShape& s) {
  return 1024 + gemm_sm90_epilogue_offset(s) + gemm_sm90_epilogue_smem_bytes(s);
}
// The deepest pipeline (at most max_stages) whose launch fits `limit` bytes; 0 when not even 1 fits.
constexpr int gemm_sm90_max_stages(GemmSm90SmemShape s, int limit, int max_stages) {
  int best = 0;
  for (int st = 1; st <= max_stages; ++st) {
    s.stages = st;
    if (gemm_sm90_smem_bytes(s) <= limit) best = st;
  }
  return best;
}

// One patch slot of kdl::sm90::ConvFpropPatchLoader (conv fprop's patch mainloop, kdl/conv_sm90.cuh): the input
// pixels of tile_m / 64 output rows x 64 / g pixels x g images with an r x s filter's halo, 64 channels of 2
// bytes each, for the larger of g = 8 and g = 16 (chosen per problem).
constexpr int conv_patch_bytes(int tile_m, int r, int s, int g) {
  return (tile_m / 64 + r - 1) * (64 / g + s - 1) * g * 128;
}
constexpr int conv_patch_slot_bytes(int tile_m, int r, int s) {
  return conv_patch_bytes(tile_m, r, s, 8) > conv_patch_bytes(tile_m, r, s, 16) ? conv_patch_bytes(tile_m, r, s, 8)
                                                                                : conv_patch_bytes(tile_m, r, s, 16);
}
// The patch GEMM's stages (W alone in each): the most of `stages` (at most r * s + 1: a slot is reloaded once
// the stage of the k-tile `stages` back is released) that fit beside its two slots; 0 when not even 2 fit.
constexpr int conv_patch_stages(int tile_m, int tile_n, int r, int s, int stages, int limit) {
  const GemmSm90SmemShape shape{2, 2, tile_m, tile_n, 64, stages, 0, 0, conv_patch_slot_bytes(tile_m, r, s)};
  int most = stages < r * s + 1 ? stages : r * s + 1;
  if (most > 8) most = 8;
  const int fit = gemm_sm90_max_stages(shape, limit, most);
  return fit >= 2 ? fit : 0;
}

// The swapped patch mainloop (kdl::sm90::ConvFpropSwap, kdl/conv_sm90_swap.cuh) of the pingpong 128 x 128 patch
// kernels: one patch slot -- (r + 1) rows x (s + 7) columns x 16 images x 64 channels of 2 bytes --, its stages of W
// (8 KB each: as many as fit beside two slots and the 16 KB staging tile, at most 6; 0 below 4) and the launch's
// shared memory (stages, slots, staging tile, 2 x stages + 5 mbarriers, 1 KB to align the base).
constexpr int conv_swap_slot_bytes(int r, int s) { return (r + 1) * (s + 7) * 16 * 128; }
constexpr int conv_swap_stages(int r, int s, int limit) {
  const int fit = (limit - 1024 - 2 * conv_swap_slot_bytes(r, s) - 16384 - 256) / 8192;
  return fit >= 6 ? 6 : (fit >= 4 ? fit : 0);
}
constexpr int conv_swap_smem_bytes(int r, int s, int limit) {
  return 1024 + conv_swap_stages(r, s, limit) * 8192 + 2 * conv_swap_slot_bytes(r, s) + 16384 +
         (2 * conv_swap_stages(r, s, limit) + 5) * 8;
}

// `stages = auto`: the deepest pipeline that fits (at most max_stages), except that a block-scaled kernel
// (scale slots) keeps the full epilogue buffer where that leaves at least 4 stages: its promoting
// consumers gain more from storing D in one pass than from a sixth stage (128 x 128 x 128 e4m3 on the
// H100: 5 stages with the full buffer 1134-1188 TFLOP/s, 6 with the smaller one 1080-1133;
// docs/perf-notes.md v27). 0 when not even one stage fits.
constexpr int gemm_sm90_auto_stages(GemmSm90SmemShape s, int limit, int max_stages) {
  const int deepest = gemm_sm90_max_stages(s, limit, max_stages);
  if (s.scale_rows <= 0) return deepest;
  for (int st = deepest; st >= 4; --st) {
    s.stages = st;
    if (gemm_sm90_epilogue_smem_bytes(s) == gemm_sm90_full_epilogue_smem_bytes(s)) return st;
  }
  return deepest;
}

}  // namespace kdl
