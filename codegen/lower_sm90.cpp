// Lowering steps of the sm90a GEMM (kdl::GemmSm90, include/kdl/gemm_sm90.cuh): the operands and the
// wgmma instruction, the tile with its schedule, cluster and raster, and the pipeline (stages and
// the launch's shared memory from include/kdl/gemm_sm90_smem.h, split-K, fp8 promotion and block
// scales). checkSupported (codegen/support_sm90.cpp) admitted the spec against the sm90a table
// first, so these steps decide and explain; they refuse nothing the table admits.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "codegen/lower_steps.h"
#include "codegen/support.h"
#include "include/kdl/gemm_sm90_smem.h"

namespace kdl::codegen {

namespace {

GemmSm90SmemShape smemShape(const KernelPlan& p) {
  return GemmSm90SmemShape{p.a.elementBytes, p.b.elementBytes, p.tileM,   p.tileN, p.tileK, p.stages,
                           p.schedule == Schedule::Pingpong ? int(Sm90Schedule::Pingpong) : int(Sm90Schedule::Cooperative)};
}

// Rows of the tile one consumer warpgroup computes.
int rowsPerConsumer(const KernelPlan& p) {
  return p.schedule == Schedule::Pingpong ? p.tileM : p.tileM / p.consumerWarpgroups;
}

std::string scheduleWhy(const KernelSpec& s, const KernelPlan& p) {
  const bool coop = p.schedule == Schedule::Cooperative;
  std::string what = coop ? fmt::format("the two consumer warpgroups split each tile along M ({} rows each) and run "
                                        "its mainloop and epilogue together: the largest MMA per k-step",
                                        rowsPerConsumer(p))
                          : "each consumer warpgroup owns a tile of its own; their mainloops and epilogues alternate, "
                            "so one's epilogue hides under the other's MMAs";
  // Without a schedule the validator decides as for `auto`.
  if (s.schedule.origin == Origin::Auto || s.schedule.origin == Origin::Default)
    return fmt::format("schedule = auto{}: tile M = {} {}; {}", s.schedule.origin == Origin::Default ? " (the default)" : "",
                       p.tileM,
                       coop ? "is a multiple of 128, enough rows for two 64-row consumer warpgroups (cooperative)"
                            : "is less than two 64-row warpgroups, so cooperative cannot split it (pingpong)",
                       what);
  return fmt::format("{}; {}", originWord(s.schedule.origin), what);
}

// One operand's tile in a stage (kdl::sm90::OperandTile, include/kdl/gemm_sm90_operands.cuh).
std::string smemOperandText(const OperandPlan& o, int rows, int tileK) {
  if (o.contigK)
    return fmt::format("{} rows x {} B (K-contiguous), TMA with the 128-byte swizzle that the wgmma descriptors read; "
                       "{} B per stage",
                       rows, 128, rows * 128);
  const char* mn = o.name == "A" ? "M" : "N";
  return fmt::format("{} block{} of 64 {} x {} rows of K ({}-contiguous, 128 B per row), one TMA box each, with the "
                     "128-byte swizzle; {} B per stage",
                     rows / 64, rows / 64 == 1 ? "" : "s", mn, tileK, mn, rows * tileK * o.elementBytes);
}

std::string smemOperandWhy(const OperandPlan& o) {
  if (o.contigK) return fmt::format("wgmma reads {} from shared memory (K-major, 128-byte swizzle atoms)", o.name);
  return fmt::format("wgmma reads {} {}-major (its transpose bit, f16/bf16 only): the {} layout needs no transposing copy",
                     o.name, o.name == "A" ? "M" : "N", layoutWord(o.layout));
}

}  // namespace

bool lowerSm90Operands(Lowering& l) {
  const KernelSpec& s = l.spec;
  KernelPlan& p = l.plan;
  planOperands(s, p);
  const char* alignWhy = "defaults to 16 bytes, what TMA needs";
  decideMainloopOperand(l, p.a, alignWhy);
  decideMainloopOperand(l, p.b, alignWhy);
  const Sm90Mainloop* ml = findSm90Mainloop(p.a.dtype, p.b.dtype, p.a.layout, p.b.layout);
  if (p.a.dtype == DType::F32 || p.a.dtype == DType::TF32)
    l.decide("precision", "tf32 multiply, f32 accumulate",
             "wgmma has no f32 multiply: it reads the f32 operands TMA loads as tf32 (their low 13 mantissa bits "
             "ignored)");
  p.accumCpp = s.accum.value == DType::S32 ? "int32_t" : "float";
  l.decide("accumulator", p.accumCpp,
           fmt::format("accum = {} ({}){}", dtypeWord(s.accum.value), originWord(s.accum.origin),
                       s.accum.value == DType::S32 ? "; the epilogue receives it converted to f32" : ""));
  const int k = 32 / p.a.elementBytes;  // every wgmma covers 32 bytes of K
  p.mmaShape = fmt::format("wgmma m64n{}k{}", s.tile.value[1], k);
  l.decide("mma", fmt::format("wgmma.mma_async.m64n{}k{} ({})", s.tile.value[1], k, ml ? ml->wgmma : "?"),
           "the sm90a warpgroup MMA: 128 threads, A and B read from shared memory through matrix descriptors, the "
           "accumulator in registers; N is the tile's N, K is 32 bytes of the operand type");
  return true;
}

bool lowerSm90Tiling(Lowering& l) {
  const KernelSpec& s = l.spec;
  KernelPlan& p = l.plan;
  p.tileM = s.tile.value[0];
  p.tileN = s.tile.value[1];
  p.tileK = s.tile.value[2];
  l.decide("tile", fmt::format("{} x {} x {}", p.tileM, p.tileN, p.tileK),
           fmt::format("{}; K is {} bytes, one 128-byte swizzled row of shared memory", originWord(s.tile.origin),
                       p.tileK * p.a.elementBytes));

  p.schedule = s.schedule.value;
  p.consumerWarpgroups = 2;
  p.threads = 128 * (1 + p.consumerWarpgroups);
  // The sm80 fields, for the manifest: the consumer warps along M and N of one tile.
  p.warpsM = p.schedule == Schedule::Pingpong ? 4 : 4 * p.consumerWarpgroups;
  p.warpsN = 1;
  p.warpTileM = rowsPerConsumer(p) / 4;
  p.warpTileN = p.tileN;
  l.decide("schedule",
           fmt::format("{} (kdl::Sm90Schedule::{}): 1 producer warpgroup (TMA, setmaxnreg 40) + {} consumer warpgroups "
                       "(wgmma, setmaxnreg 232), {} threads; {} rows of the tile per consumer",
                       name(p.schedule), p.schedule == Schedule::Pingpong ? "Pingpong" : "Cooperative",
                       p.consumerWarpgroups, p.threads, rowsPerConsumer(p)),
           scheduleWhy(s, p));
  l.decide("smem A", smemOperandText(p.a, p.tileM, p.tileK), smemOperandWhy(p.a));
  l.decide("smem B", smemOperandText(p.b, p.tileN, p.tileK), p.a.contigK == p.b.contigK ? "as for A" : smemOperandWhy(p.b));

  p.clusterM = s.cluster.value[0];
  p.clusterN = s.cluster.value[1];
  if (p.clusterM * p.clusterN == 1) {
    l.decide("cluster", "(1, 1, 1)", fmt::format("{}; every CTA loads its own A and B tiles", originWord(s.cluster.origin)));
  } else {
    std::vector<std::string> shared;
    if (p.clusterM > 1)
      shared.push_back(fmt::format("the {} CTAs along M share one B tile, each loading 1/{} of its rows", p.clusterM,
                                   p.clusterM));
    if (p.clusterN > 1)
      shared.push_back(fmt::format("the {} CTAs along N share one A tile, each loading 1/{} of its rows", p.clusterN,
                                   p.clusterN));
    l.decide("cluster", fmt::format("({}, {}, 1)", p.clusterM, p.clusterN),
             fmt::format("{}; {}, which TMA multicasts to every CTA that shares it (fewer L2 reads); a stage is "
                         "refilled once the consumers of every CTA it feeds released it",
                         originWord(s.cluster.origin), fmt::join(shared, "; ")));
  }

  p.rasterAlongM = s.raster.value == Raster::AlongM;
  l.decide("raster", p.rasterAlongM ? "along_m (RasterAlongM = true)" : "along_n (RasterAlongM = false)",
           fmt::format("{}; persistent: the grid is the number of SMs (asked at run time), each CTA walks tiles in "
                       "bands of 8 {} for L2 reuse",
                       originWord(s.raster.origin), p.rasterAlongM ? "N-tiles" : "M-tiles"));
  return true;
}

bool lowerSm90Pipeline(Lowering& l) {
  const KernelSpec& s = l.spec;
  KernelPlan& p = l.plan;
  p.stages = s.stages.value;
  const GemmSm90SmemShape shape = smemShape(p);
  p.mainloopSmemBytes = size_t(p.stages) * size_t(gemm_sm90_stage_bytes(shape));
  p.epilogueSmemBytes = size_t(gemm_sm90_epilogue_smem_bytes(shape));
  p.smemBytes = size_t(gemm_sm90_smem_bytes(shape));
  p.cpAsyncSmemBytes = p.smemBytes;  // no cp.async fallback on this path
  const int limit = maxSharedMemoryPerBlock(p.arch);
  if (p.smemBytes > size_t(limit)) {  // the validator's formula is the same: a backstop
    l.unsupported(s.stages.loc, fmt::format("{} stages need {} bytes of shared memory with the epilogue, more than the "
                                            "{} bytes a block can have on {}",
                                            p.stages, p.smemBytes, limit, p.archName));
    return false;
  }
  const int deepest = gemm_sm90_max_stages(shape, limit, 8);
  std::string fit = fmt::format("{} B of shared memory per block ({} x {} B stages, {} B of full/empty mbarriers and "
                                "alignment, {} B epilogue buffer (TMA store of D), 1 KB to align the base; the {} limit is {} B)",
                                p.smemBytes, p.stages, gemm_sm90_stage_bytes(shape),
                                gemm_sm90_epilogue_offset(shape) - gemm_sm90_barrier_offset(shape), p.epilogueSmemBytes,
                                p.archName, limit);
  std::string why;
  if (s.stages.origin == Origin::Auto || s.stages.origin == Origin::Default) {  // no stages: as for `auto`
    const char* what = s.stages.origin == Origin::Default ? "stages = auto (the default)" : "stages = auto";
    why = p.stages == 8 ? fmt::format("{}: 8, the deepest pipeline the path runs; {}", what, fit)
                        : fmt::format("{}: the deepest pipeline that fits with the epilogue's shared memory "
                                      "({} stages would need {} B); {}",
                                      what, p.stages + 1,
                                      gemm_sm90_smem_bytes(GemmSm90SmemShape{shape.element_bytes_a, shape.element_bytes_b,
                                                                             shape.tile_m, shape.tile_n, shape.tile_k,
                                                                             p.stages + 1, shape.schedule}),
                                      fit);
  } else {
    why = fmt::format("{} (at most {} fit); {}", originWord(s.stages.origin), deepest, fit);
  }
  l.decide("stages", std::to_string(p.stages), why);

  planSplitK(l,
             "each slice of a tile's K accumulates an f32 partial tile in the workspace, in order (per-tile "
             "semaphores, deterministic); the last runs the epilogue. For few output tiles (small M or N), where the "
             "persistent grid would leave SMs idle");

  // fp8: the accumulator's precision, from `promotion = fast | N` and the operands' `scale (BM, BK)`.
  // (The sm90a table refuses either while the template lacks it: codegen/support_sm90.cpp.)
  const Operand& A = *s.operand("A");
  const Operand& B = *s.operand("B");
  p.promoteEvery = s.promoteEvery.value;
  p.blockScaling = A.scaleBlock && B.scaleBlock;
  if (p.blockScaling) {
    p.blockMA = (*A.scaleBlock)[0];
    p.blockK = (*A.scaleBlock)[1];
    p.blockNB = (*B.scaleBlock)[0];
  }
  if (isFloat8(p.a.dtype)) {
    if (p.blockScaling)
      l.decide("block scaling",
               fmt::format("kdl::sm90::BlockScaling<{}, {}, {}>", p.blockMA, p.blockNB, p.blockK),
               fmt::format("A scale ({}, {}) and B scale ({}, {}) in the spec: one f32 scale per {} x {} block of A "
                           "and per {} x {} block of B, applied when each k-block is promoted into the f32 accumulator",
                           p.blockMA, p.blockK, p.blockNB, p.blockK, p.blockMA, p.blockK, p.blockNB, p.blockK));
    else
      l.decide("block scaling", "none (kdl::sm90::NoBlockScaling)", "the operands declare no `scale (BM, BK)`");
    if (p.promoteEvery == 0)
      l.decide("promotion", "fast (PromoteEvery = 0)",
               fmt::format("{}: the wgmma accumulator adds every k-tile itself (fastest; fp8 wgmma's accumulator has "
                           "limited precision, which `promotion = N` trades speed for)",
                           s.promoteEvery.origin == Origin::Default ? "the default without block scales"
                                                                    : originWord(s.promoteEvery.origin)));
    else
      l.decide("promotion", fmt::format("every {} k-tile{} (PromoteEvery = {})", p.promoteEvery,
                                        p.promoteEvery == 1 ? "" : "s", p.promoteEvery),
               fmt::format("{}: N k-tiles accumulate in a temporary wgmma accumulator, then add into an f32 one (more "
                           "accurate over long K, slower){}",
                           originWord(s.promoteEvery.origin), p.blockScaling ? "; block scales promote every k-block" : ""));
  }
  return true;
}

}  // namespace kdl::codegen
