// Lowering steps of the sm90a GEMM (kdl::GemmSm90, include/kdl/gemm_sm90.cuh): the operands and the
// wgmma instruction, the tile with its schedule, cluster and raster, and the pipeline (stages and
// the launch's shared memory from include/kdl/gemm_sm90_smem.h, split-K, fp8 promotion and block
// scales), and the epilogue's vector width from the consumers' register budget. checkSupported
// (codegen/support_sm90.cpp) admitted the spec against the sm90a table first, so these steps decide
// and explain; they refuse nothing the table admits but an epilogue too large for the registers.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/epilogue_expr.h"
#include "codegen/lower_steps.h"
#include "codegen/support.h"
#include "include/kdl/gemm_sm90_smem.h"

namespace kdl::codegen {

namespace {

GemmSm90SmemShape smemShape(const KernelPlan& p) {
  return GemmSm90SmemShape{p.a.elementBytes, p.b.elementBytes, p.tileM,   p.tileN, p.tileK, p.stages,
                           p.schedule == Schedule::Pingpong ? int(Sm90Schedule::Pingpong) : int(Sm90Schedule::Cooperative),
                           p.blockScaling ? p.tileM : 0};
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

// ---- the epilogue's registers ----
//
// A consumer thread runs the epilogue with its whole accumulator still in registers (it hands the
// tile to Epilogue::apply<V> 32 columns at a time, V columns per call), inside the kConsumerRegs that
// setmaxnreg gives it. Past that budget ptxas spills, which `kdlc build`'s gate refuses, so lowering
// picks V from an estimate of the registers the consumer needs at the epilogue's peak:
//   live accumulators  kMmaM x TileN / 2 f32, twice that with fp8 promotion (the temporary wgmma
//                      accumulator stays allocated across the epilogue: the wgmmas read and write it)
//   + the rest         addresses, loop state and the mainloop's (ring, barriers, cluster peers)
//   + V x the values the epilogue holds per column: the staged accumulator, C, each input read per
//                      column of the kernel ([col]; [row] when the kernel computes D^T; [channel] of an
//                      fprop or dgrad -- one read per row or a [] is one value per call), each tensor it
//                      stores (D and the extra outputs), and the amax reductions' operands.
// V = 8 (a 16-byte store of 16-bit outputs per call) where it fits, else 4, else 2; an epilogue that
// fits at none is refused. (V is the staged epilogue's width, the path for a D that TMA cannot
// store; the TMA-store epilogue hands the functor register pairs.) Calibrated against ptxas (CUDA
// 13.0, sm_90a) on tests/nvcc/sm90a_epilogue_registers.kdl and a wider stress matrix: with the
// TMA-store epilogue every epilogue measured up to C, a [row] and a [col] input, two extra outputs
// and an amax compiles without spills at 8 columns on every tile and cluster but one (see below),
// so the rest is set as large as keeps them all at 8 (the heaviest on a 2 x 2 cluster: 230); with
// the staged epilogue alone (before), C, an extra output and an amax spilled at 8 columns on 2 x 1
// clusters and not at 4. Near the budget ptxas is not monotone in V (a heavy epilogue on a 2 x 2
// cluster spilled at 4 columns, not at 8 or 2), so the estimate is a guard, and the CI build of
// that spec through the ptxas gate is the check. Since the TMA-store epilogue's interior chunks run as
// straight-line code (kEpiWhole), an epilogue that ptxas spills with them gets a second compile
// without them (`kdlc build`, -DKDL_SM90_EPILOGUE_CHECKED: codegen/build_ptxas.h); the stress matrix
// has one such kernel (e_pp_64x256_c21).
// kdl::GemmSm90::kConsumerRegs and kProducerRegs (setmaxnreg): 232 and 40 (224 and 56 only with a
// thread-gathered A, which the generated sm90a conv does not use: it loads X by TMA in im2col mode).
constexpr int kConsumerRegisters = 232;
constexpr int kProducerRegisters = 40;
constexpr int kEpilogueRestRegisters = 40;
constexpr int kEpiloguePeerRegisters = 2;  // per cluster peer (its remote barrier arrivals)
constexpr int kEpilogueWidths[] = {8, 4, 2};

struct EpilogueRegisters {
  int wgmma = 0;         // one wgmma accumulator's f32 / s32 registers (promotion's temporary not counted)
  int accumulators = 0;  // f32 / s32 accumulator registers live through the epilogue (with that temporary)
  int rest = 0;          // everything else but the per-column values
  int perColumn = 0;     // values per column of an Epilogue::apply call
  std::string perColumnText;
  int need(int v) const { return accumulators + rest + v * perColumn; }
};

// Whether the epilogue reads input `index` once per column of the kernel: [col] of a kernel that is not transposed,
// [row] of one that is (it computes D^T), [channel] of an fprop or dgrad; an input the fold left unread is not read.
bool readPerKernelColumn(const KernelPlan& p, int index) {
  const EpiInput& in = p.epilogue.inputs[index];
  return in.broadcast != Broadcast::Scalar && usesInput(p.epilogue, index) &&
         std::string_view(broadcastAccess(p, in.broadcast)) == "col";
}

EpilogueRegisters epilogueRegisters(const KernelPlan& p) {
  EpilogueRegisters r;
  const int mmaM = rowsPerConsumer(p) / 64;
  r.wgmma = mmaM * p.tileN / 2;
  r.accumulators = r.wgmma * (p.promoteEvery > 0 || p.blockScaling ? 2 : 1);
  // Each cluster peer adds the registers of its remote empty-barrier arrivals.
  r.rest = kEpilogueRestRegisters + (p.clusterM * p.clusterN - 1) * kEpiloguePeerRegisters;
  const Epilogue& e = p.epilogue;
  std::vector<std::string> what = {"the staged accumulator"};
  if (readsSource(e)) what.push_back("C");
  for (size_t k = 0; k < e.inputs.size(); ++k)
    if (readPerKernelColumn(p, int(k)))
      what.push_back(fmt::format("`{}` [{}]", e.inputs[k].name, name(e.inputs[k].broadcast)));
  for (const EpiOutput& o : e.outputs)
    what.push_back(o.kind == EpiOutput::Kind::AmaxReduction ? fmt::format("`{}`'s max(abs(.))", o.name) : o.name);
  r.perColumn = int(what.size());
  r.perColumnText = fmt::format("{}", fmt::join(what, ", "));
  return r;
}

// The epilogue's transcendental functions whose inlined code ptxas needs the most registers for: gelu (erff), log
// (logf) and gelu_tanh (tanhf of a cubic), counted by codegen/epilogue_expr.h's countOps.
struct HeavyMath {
  int gelu = 0, log = 0, geluTanh = 0;
  int total() const { return gelu + log + geluTanh; }
};
HeavyMath heavyMath(const Epilogue& e) {
  return {countOps(e, EpiOp::Gelu), countOps(e, EpiOp::Log), countOps(e, EpiOp::GeluTanh)};
}

// The first extra tensor output of a GEMM laid out unlike D (stored element by element, strided across the kernel's
// rows); nullptr when there is none, and for a convolution (its outputs share a layout).
const EpiOutput* outputUnlikeD(const KernelPlan& p) {
  const Operand* D = p.spec.operand("D");
  if (!D) return nullptr;
  for (size_t i = 1; i < p.spec.epilogue.outputs.size(); ++i) {
    const EpiOutput& o = p.spec.epilogue.outputs[i];
    if (o.kind == EpiOutput::Kind::Tensor && o.layout != D->layout) return &o;
  }
  return nullptr;
}

// The extra tensor outputs of a GEMM (outputs[1..], reductions aside) and those laid out unlike D whose value is not
// a constant. An output whose value kdlc computed (codegen/epilogue_expr.h's foldConstants) does not count as unlike
// D: a constant row-major output beside a column-major D and a second output with gelu or log builds (tests/
// diagnostics/accepted/sm90a_unlike_output_heavy64_neighbours.kdl).
struct ExtraOutputs {
  int tensors = 0, unlikeVarying = 0;
  const EpiOutput* firstUnlikeVarying = nullptr;  // in spec.epilogue (its source location)
};
ExtraOutputs extraOutputs(const KernelPlan& p) {
  ExtraOutputs e;
  const Operand* D = p.spec.operand("D");
  if (!D) return e;
  for (size_t i = 1; i < p.epilogue.outputs.size(); ++i) {
    const EpiOutput& o = p.epilogue.outputs[i];
    if (o.kind != EpiOutput::Kind::Tensor) continue;
    ++e.tensors;
    const bool constant = o.value.op == EpiOp::Const ||
                          (o.value.op == EpiOp::Neg && o.value.args.size() == 1 && o.value.args[0].op == EpiOp::Const);
    if (o.layout == D->layout || constant) continue;
    ++e.unlikeVarying;
    if (!e.firstUnlikeVarying) e.firstUnlikeVarying = &p.spec.epilogue.outputs[i];
  }
  return e;
}

std::string peerText(const KernelPlan& p) {
  const int peers = p.clusterM * p.clusterN - 1;
  if (peers == 0) return "";
  return fmt::format(" ({} of them for the {} cluster peer{})", peers * kEpiloguePeerRegisters, peers, peers == 1 ? "" : "s");
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
  // GemmSm90::kIssuers: a conv's stage loader issues from four producer warps in turn for tiles up to 128 x 128,
  // at most one per stage (the empty barriers' parity waits; the emitted kernel static_asserts the count).
  p.tmaIssuers = p.path == KernelPath::ConvSm90 && p.tileM <= 128 && p.tileN <= 128 ? std::min(4, s.stages.value) : 1;
  l.decide("schedule",
           fmt::format("{} (kdl::Sm90Schedule::{}): 1 producer warpgroup ({}{}, setmaxnreg {}) + {} consumer warpgroups "
                       "(wgmma, setmaxnreg {}), {} threads; {} rows of the tile per consumer",
                       name(p.schedule), p.schedule == Schedule::Pingpong ? "Pingpong" : "Cooperative",
                       p.path != KernelPath::ConvSm90          ? "TMA"
                       : s.op.value == Op::Conv2dDgrad ? "TMA: dY in im2col mode, W tiled"
                       : s.op.value == Op::Conv2dWgrad ? "TMA: dY tiled, X in im2col mode"
                                                       : "TMA: X in im2col mode, W tiled",
                       p.tmaIssuers > 1 ? fmt::format(", issued by {} warps taking turns by k-tile", p.tmaIssuers) : "",
                       kProducerRegisters,
                       p.consumerWarpgroups, kConsumerRegisters, p.threads, rowsPerConsumer(p)),
           scheduleWhy(s, p) + (p.tmaIssuers > 1 ? "; a tile of at most 128 x 128 computes a k-tile in about the time "
                                                   "one thread takes to work out and issue its loads, so four producer "
                                                   "warps share them, at most one per stage (docs/perf-notes.md v18)"
                                                 : ""));
  l.decide("smem A",
           p.path == KernelPath::ConvSm90 && s.op.value != Op::Conv2dWgrad
               ? fmt::format("{} rows ({} pixels) x 128 B (64 channels, K-contiguous), one TMA im2col load with the "
                             "128-byte swizzle that the wgmma descriptors read; {} B per stage",
                             p.tileM, s.op.value == Op::Conv2dDgrad ? "input" : "output", p.tileM * 128)
               : smemOperandText(p.a, p.tileM, p.tileK),
           smemOperandWhy(p.a));
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
  // fp8: the accumulator's precision, from `promotion = fast | N` and the operands' `scale (BM, BK)` (a
  // block-scaled kernel stages each k-block's scales in shared memory beside its operand tiles). The sm90a
  // table refuses either while the template lacks it (codegen/support_sm90.cpp); a convolution has
  // neither (its operands are X, W).
  const Operand* A = s.operand("A");
  const Operand* B = s.operand("B");
  p.promoteEvery = s.promoteEvery.value;
  p.blockScaling = A && B && A->scaleBlock && B->scaleBlock;
  if (p.blockScaling) {
    p.blockMA = (*A->scaleBlock)[0];
    p.blockK = (*A->scaleBlock)[1];
    p.blockNB = (*B->scaleBlock)[0];
  }
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
  std::string fit = fmt::format("{} B of shared memory per block ({} x {} B stages, {} B of full/empty mbarriers{} and "
                                "alignment, {} B epilogue buffer (TMA store of D), 1 KB to align the base; the {} limit is {} B)",
                                p.smemBytes, p.stages, gemm_sm90_stage_bytes(shape),
                                gemm_sm90_epilogue_offset(shape) - gemm_sm90_barrier_offset(shape),
                                p.blockScaling ? fmt::format(" (with {} x {} B scale slots)", p.stages,
                                                             gemm_sm90_scale_slot_bytes(shape))
                                               : std::string(),
                                p.epilogueSmemBytes,
                                p.archName, limit);
  std::string why;
  if (s.stages.origin == Origin::Auto || s.stages.origin == Origin::Default) {  // no stages: as for `auto`
    const char* what = s.stages.origin == Origin::Default ? "stages = auto (the default)" : "stages = auto";
    GemmSm90SmemShape deeper = shape;
    deeper.stages = p.stages + 1;
    // gemm_sm90_auto_stages kept a block-scaled kernel's full epilogue buffer at the cost of a stage
    const bool keptBuffer = p.stages < deepest && p.stages == gemm_sm90_auto_stages(shape, limit, 8);
    why = p.stages == 8 ? fmt::format("{}: 8, the deepest pipeline the path runs; {}", what, fit)
          : keptBuffer
              ? fmt::format("{}: the deepest pipeline that keeps the epilogue's full {} B buffer ({} stages fit only with "
                            "a {} B one, and a block-scaled kernel's promoting consumers gain more from storing D in "
                            "one pass than from the deeper pipeline); {}",
                            what, p.epilogueSmemBytes, p.stages + 1, gemm_sm90_epilogue_smem_bytes(deeper), fit)
              : fmt::format("{}: the deepest pipeline that fits with the epilogue's shared memory "
                                      "({} stages would need {} B); {}",
                                      what, p.stages + 1, gemm_sm90_smem_bytes(deeper), fit);
  } else {
    why = fmt::format("{} (at most {} fit); {}", originWord(s.stages.origin), deepest, fit);
  }
  l.decide("stages", std::to_string(p.stages), why);

  planSplitK(l,
             "each slice of a tile's K accumulates an f32 partial tile in the workspace, in order (per-tile "
             "semaphores, deterministic); the last runs the epilogue. For few output tiles (small M or N), where the "
             "persistent grid would leave SMs idle",
             p.conv() ? nullptr
                      : "given a workspace (workspace_size is not 0 for such a problem), run() spreads the k-tiles of "
                        "a last wave of tiles 1/4 to 2/3 full over every SM instead (stream-K tail, K of at least 8 "
                        "k-tiles; the partial sums added in a fixed order)");

  // fp8: the decisions for p.promoteEvery and p.blockScaling (set above, before the shared memory).
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

bool lowerSm90Epilogue(Lowering& l) {
  KernelPlan& p = l.plan;
  const EpilogueRegisters r = epilogueRegisters(p);
  // Measured past the estimate: on a 2 x 2 cluster with a full accumulator (128 registers), an
  // epilogue that stores two fp8 tensors (D and an extra output) spilled at 8 columns (128 x 256,
  // 256 x 128, pingpong 128 x 128; not pingpong 64 x 256), where the TMA-store epilogue's pairs
  // decide and no width helps.
  int fp8Tensors = 0;
  for (const OperandPlan* o : {&p.d}) fp8Tensors += isFloat8(o->dtype);
  for (const OperandPlan& z : p.extraOutputs) fp8Tensors += isFloat8(z.dtype);
  if (p.clusterM * p.clusterN == 4 && r.accumulators >= 128 && fp8Tensors >= 2) {
    l.unsupported(p.spec.cluster.loc,
                  fmt::format("cluster (2, 2, 1) with {} accumulator registers per consumer thread leaves too few registers "
                              "for an epilogue that stores {} fp8 tensors (ptxas spills); use cluster (2, 1, 1) or "
                              "(1, 2, 1), or a smaller tile",
                              r.accumulators, fp8Tensors));
    return false;
  }
  // Measured past the estimate too: an extra output laid out unlike D (stored element by element, strided across
  // the kernel's rows) beside 128 accumulator registers spills 64-116 bytes at every width and with the checked
  // epilogue (`kdlc build`'s later tries): cooperative 128 x 256 and 256 x 128 (bf16, e4m3; f32 and bf16 outputs),
  // pingpong 128 x 128; with 64 (cooperative 128 x 128) it builds -- fp8 promotion's temporary accumulator beside
  // them included (e4m3 128 x 128 x 128, promotion = 1) -- and so does C read transposed.
  const EpiOutput* unlike = outputUnlikeD(p);
  const char* dLayout = unlike ? layoutWord(p.spec.operand("D")->layout) : "";
  if (unlike && r.wgmma >= 128) {
    l.unsupported(unlike->loc,
                  fmt::format("output `{}` is {}-major, unlike D: stored element by element, beside {} accumulator "
                              "registers per consumer thread, it needs more registers than setmaxnreg gives (ptxas "
                              "spills at every epilogue width); declare it {} like D, or use a tile with 64 "
                              "accumulators per consumer thread (e.g. cooperative 128 x 128)",
                              unlike->name, layoutWord(unlike->layout), r.wgmma, dLayout));
    return false;
  }
  // And beside 64 (cooperative 128 x 128): an extra output laid out unlike D beside three of the heavy functions, a
  // log among them (two gelu_tanh and a log; tf32 or bf16 inputs, e4m3 or bf16 D, any cluster and stages) spilled 40
  // bytes at every try (found by the gate fuzz's --heavy kernels, seed 41017); with that output laid out like D, without
  // the log, with one gelu_tanh beside the log, gelu beside the log, or three gelu_tanh, it builds.
  const HeavyMath heavy = heavyMath(p.epilogue);
  if (unlike && r.wgmma >= 64 && heavy.log >= 1 && heavy.total() >= 3) {
    l.unsupported(unlike->loc,
                  fmt::format("output `{}` is {}-major, unlike D (stored element by element), and the epilogue "
                              "computes {} heavy functions (gelu, log, gelu_tanh), a log among them, beside {} "
                              "accumulator registers per consumer thread: more registers than setmaxnreg gives (ptxas "
                              "spills at every epilogue width); declare `{}` {} like D, or compute fewer of them",
                              unlike->name, layoutWord(unlike->layout), heavy.total(), r.wgmma, unlike->name, dLayout));
    return false;
  }
  // And beside 64 with more than one extra output (found by the GPU suite's heavy random kernels, seed 42004; measured
  // with nvcc -Xptxas -v on sm_90a, the plain build and the last later try, docs/perf-notes.md v42): an output unlike D
  // beside a second extra output (unlike D or like it) spills 8-100 bytes at every try when the epilogue calls exp,
  // tanh, log, gelu or gelu_tanh anywhere (cooperative 128 x 128, bf16 and f16, clusters (1, 1), (1, 2) and (2, 1), 3
  // and 4 stages, D either layout; pingpong 64 x 128), and so do three outputs unlike D with no math at all (20-32
  // bytes); with sigmoid, silu, sqrt, rsqrt, a division, abs, relu, leaky_relu or clamp instead it builds, and so does
  // one extra output with exp, and 128 x 64 (32 accumulators) with four outputs and exp.
  const ExtraOutputs extra = extraOutputs(p);
  const EpiOutput* varying = extra.firstUnlikeVarying;
  const int libMath = countOps(p.epilogue, EpiOp::Exp) + countOps(p.epilogue, EpiOp::Tanh) + heavy.total();
  if (varying && r.wgmma >= 64 && ((extra.tensors >= 2 && libMath >= 1) || extra.unlikeVarying >= 3)) {
    l.unsupported(varying->loc,
                  extra.unlikeVarying >= 3
                      ? fmt::format("{} outputs are laid out unlike D ({}-major; `{}` the first), each stored element by "
                                    "element, beside {} accumulator registers per consumer thread: more registers than "
                                    "setmaxnreg gives (ptxas spills at every epilogue width); declare them {} like D, "
                                    "or use a tile with 32 accumulators per consumer thread (cooperative 128 x 64, "
                                    "pingpong 64 x 64)",
                                    extra.unlikeVarying, layoutWord(varying->layout), varying->name, r.wgmma, dLayout)
                      : fmt::format("output `{}` is {}-major, unlike D (stored element by element), beside {} more extra "
                                    "output{} and an epilogue that calls exp, tanh, log, gelu or gelu_tanh, with {} "
                                    "accumulator registers per consumer thread: more registers than setmaxnreg gives "
                                    "(ptxas spills at every epilogue width); declare `{}` {} like D, store one extra "
                                    "output, or use a tile with 32 accumulators per consumer thread (cooperative "
                                    "128 x 64, pingpong 64 x 64)",
                                    varying->name, layoutWord(varying->layout), extra.tensors - 1,
                                    extra.tensors - 1 == 1 ? "" : "s", r.wgmma, varying->name, dLayout));
    return false;
  }
  // Measured past the estimate as well (`kdlc build`, every later try; bf16, s8 and e4m3, cooperative 128 x 256 and
  // 128 x 128, pingpong 128 x 128 and 64 x 64; found by the gate fuzz's random epilogues): beside 128 accumulator
  // registers per consumer thread, gelu (erff) with a second gelu, a log or a gelu_tanh anywhere in the epilogue
  // spills 4-20 bytes, at every width -- gelu beside tanh, sigmoid, exp, silu or rsqrt builds, and so do two gelu_tanh,
  // two logs, gelu_tanh with log, three gelu_tanh; beside 64, gelu, log and gelu_tanh together spill (20-52 bytes),
  // where two or three gelu, or gelu with log, build; beside 32 all three build.
  // And (found by the GPU suite's heavy random kernels, seed 44001): beside 128 accumulator registers per consumer
  // thread, gelu (erf) with both tanh and rsqrt -- `gelu(min(acc, 1.5)) + rsqrt(1 + tanh(acc) * tanh(acc))` -- spilled
  // 12-20 bytes at every try (cooperative 256 x 128 and 128 x 256, pingpong 128 x 128). Without the min it built, and
  // so did `gelu(acc) + tanh(acc) + rsqrt(acc * acc + 1)`: the class sits at the edge, so the rule takes it. gelu with
  // tanh, sigmoid and exp and no rsqrt builds (accepted/sm90a_epilogue_light_math.kdl), gelu with rsqrt alone or tanh
  // alone builds, and so does the same epilogue beside 64 accumulators or with gelu_tanh
  // (accepted/sm90a_gelu_tanh_rsqrt_neighbours.kdl).
  const bool heavySpill = (r.accumulators >= 128 && heavy.gelu >= 1 && heavy.total() >= 2) ||
                          (r.accumulators >= 64 && heavy.gelu >= 1 && heavy.log >= 1 && heavy.geluTanh >= 1);
  const bool tanhRsqrtSpill = r.accumulators >= 128 && heavy.gelu >= 1 && countOps(p.epilogue, EpiOp::Tanh) >= 1 &&
                              countOps(p.epilogue, EpiOp::Rsqrt) >= 1;
  if (heavySpill || tanhRsqrtSpill) {
    auto times = [](int n) { return n == 1 ? std::string("once") : n == 2 ? std::string("twice") : fmt::format("{} times", n); };
    std::string what = "gelu (erf), tanh and rsqrt";
    if (heavySpill) {
      what = "gelu (erf) " + times(heavy.gelu);
      if (heavy.log) what += (heavy.geluTanh ? ", log " : " and log ") + times(heavy.log);
      if (heavy.geluTanh) what += " and gelu_tanh " + times(heavy.geluTanh);
    }
    l.unsupported(p.spec.epilogue.loc,
                  fmt::format("the epilogue computes {} per element beside {} accumulator registers per consumer "
                              "thread: their inlined math needs more registers than the consumer has left (ptxas spills "
                              "at every epilogue width); use gelu_tanh in place of gelu, or a tile with {} accumulators "
                              "per consumer thread ({})",
                              what, r.accumulators, r.accumulators >= 128 ? "64" : "32",
                              r.accumulators >= 128 ? "cooperative 128 x 128, pingpong 64 x 128"
                                                    : "cooperative 128 x 64, pingpong 64 x 64"));
    return false;
  }
  // Measured past the estimate too (found by the gate fuzz's --heavy kernels, seed 41020): on a 64 x 256 consumer
  // tile (cooperative 128 x 256; 128 accumulator registers per consumer thread), an fp8 D computed through gelu (erf)
  // beside an f32 input read per column of the kernel (a [col] input; a [row] one when the kernel computes D^T)
  // spilled 44 bytes at every try: `D = gelu(alpha * acc) * scale`, e4m3 or e5m2, D row- or column-major. With a bf16
  // D, a bf16 input, a [row] or [] input, C in its place, gelu_tanh or relu, cooperative 256 x 128 or 128 x 128, or
  // pingpong 128 x 128 or 64 x 256 it builds (tests/diagnostics/accepted/sm90a_fp8_gelu_col_f32_neighbours.kdl). It
  // sits at the edge -- without the param (`gelu(acc) * scale`) it built once -- so the rule takes the class.
  if (p.schedule == Schedule::Cooperative && rowsPerConsumer(p) == 64 && p.tileN == 256 && isFloat8(p.d.dtype) &&
      heavy.gelu >= 1) {
    for (size_t k = 0; k < p.epilogue.inputs.size(); ++k) {
      const EpiInput& in = p.epilogue.inputs[k];
      if (in.dtype != DType::F32 || !readPerKernelColumn(p, int(k))) continue;
      l.unsupported(in.loc,
                    fmt::format("an fp8 D ({}) computed through gelu (erf) beside the f32 input `{}`, read per column of "
                                "the kernel, and {} accumulator registers per consumer thread (cooperative, a 64 x 256 "
                                "consumer tile) needs more registers than setmaxnreg gives (ptxas spills at every try); "
                                "use gelu_tanh, a bf16 `{}`, a 16-bit D, or cooperative 256 x 128 (each measured to build)",
                                dtypeWord(p.d.dtype), in.name, r.accumulators, in.name));
      return false;
    }
  }
  // And on the wgmma conv path (the GEMM with the same epilogue builds through the checked one): beside 128
  // accumulator registers per consumer thread, an epilogue that stores two extra outputs besides Y and reduces an
  // amax spilled 456-484 bytes at every later try (cooperative 128 x 256 and 256 x 128, pingpong 128 x 128 and
  // 64 x 256; f16 / bf16, fixed or run-time filter; found by the gate fuzz's --heavy kernels). Most such epilogues
  // measured sit at the edge (12 bytes at the first try, built with the checked epilogue), so the rule takes the
  // whole class: without the amax, or with one extra output, or beside 64 accumulators (cooperative 128 x 128) the
  // same epilogue builds (tests/diagnostics/accepted/conv_sm90a_outputs_amax_neighbours.kdl).
  if (p.path == KernelPath::ConvSm90 && r.accumulators >= 128) {
    int extra = 0;
    const EpiOutput* amax = nullptr;
    for (const EpiOutput& o : p.spec.epilogue.outputs) {
      extra += o.kind == EpiOutput::Kind::Tensor;
      if (o.kind == EpiOutput::Kind::AmaxReduction) amax = &o;
    }
    if (extra >= 2 && amax) {
      l.unsupported(amax->loc,
                    fmt::format("the epilogue stores {} extra outputs besides {} and reduces an amax beside {} accumulator "
                                "registers per consumer thread: on the wgmma conv path that needs more registers than "
                                "the consumer has (ptxas spills at every epilogue width); use a tile with 64 accumulators "
                                "per consumer thread (cooperative 128 x 128), one extra output, or no amax",
                                extra, p.d.name, r.accumulators));
      return false;
    }
  }
  // And (measured with `kdlc build`, every later try, nvcc 13.0; found while timing the epilogue-width gate's
  // e_fold_u8_256x128_c12, which builds only on its third later try): 8-bit integer A and B (s32 accumulators, a
  // k-tile of 128) on the cooperative 256 x 128 tile without a cluster (128 accumulator registers per consumer thread
  // in two m64 blocks), an fp8 D, two extra outputs and exp, tanh or gelu_tanh spilled 16-52 bytes at every try (u8
  // and s8; `Z1 = tanh(min(0.25, acc))` beside `Z0 = acc`, or exp, or gelu_tanh). The same with one extra output, with
  // sigmoid, on a (2, 1, 1) cluster, on 128 x 256, with e4m3 A and B, or with a bf16 D builds (the last three through a
  // later try). Two members built on a later try too -- tanh in D beside two outputs without math, and e4m3 extra
  // outputs in place of bf16 ones: the class sits at the edge, so the rule takes it whole, math anywhere in the
  // epilogue and outputs of any type (tests/diagnostics/accepted/sm90a_int8_outputs_math_neighbours.kdl).
  // (`extra` and `libMath` as for the rule on outputs unlike D above.)
  if (isInteger(p.a.dtype) && isInteger(p.b.dtype) && p.schedule == Schedule::Cooperative && rowsPerConsumer(p) == 128 &&
      p.tileN == 128 && p.clusterM * p.clusterN == 1 && isFloat8(p.d.dtype) && extra.tensors >= 2 && libMath >= 1) {
    l.unsupported(p.spec.epilogue.loc,
                  fmt::format("8-bit integer inputs (s32 accumulators) on the cooperative 256 x 128 tile without a "
                              "cluster, an fp8 D ({}), {} extra outputs and exp, tanh, gelu_tanh, gelu or log in the "
                              "epilogue need more registers than setmaxnreg gives a consumer (ptxas spills at every "
                              "epilogue width); use cluster (2, 1, 1), the 128 x 256 tile, a 16-bit D, one extra "
                              "output, or sigmoid (each measured to build)",
                              dtypeWord(p.d.dtype), extra.tensors));
    return false;
  }
  const std::string estimate =
      fmt::format("{} accumulator registers per consumer thread{} + about {} for addresses and loop state{} + V x {} "
                  "values per column ({})",
                  r.accumulators, p.promoteEvery > 0 || p.blockScaling ? " (with promotion's temporary accumulator)" : "",
                  r.rest, peerText(p), r.perColumn,
                  r.perColumnText);
  for (int v : kEpilogueWidths) {
    if (r.need(v) > kConsumerRegisters) continue;
    p.epilogueVectorWidth = v;
    const std::string budget = fmt::format("{}: {} of the {} registers setmaxnreg gives a consumer", estimate,
                                           r.need(v), kConsumerRegisters);
    if (v == kEpilogueWidths[0])
      l.decide("epilogue V", fmt::format("{} columns per Epilogue::apply call", v),
               fmt::format("the widest the staged epilogue runs (a 16-byte store of 16-bit outputs per call); {}", budget));
    else
      l.decide("epilogue V", fmt::format("{} columns per Epilogue::apply call (Epilogue::kVectorWidth)", v),
               fmt::format("{} columns would need {} registers, more than ptxas can give without spilling; {}", 2 * v,
                           r.need(2 * v), budget));
    return true;
  }
  const int last = kEpilogueWidths[std::size(kEpilogueWidths) - 1];
  l.unsupported(p.spec.tile.loc,
                fmt::format("the epilogue does not fit in a consumer's registers: {} needs about {} registers even at {} "
                            "columns per call, more than the {} setmaxnreg gives (ptxas would spill); {}",
                            estimate, r.need(last), last, kConsumerRegisters,
                            p.tileN > 64 ? fmt::format("use a smaller tile (tile N {} halves the accumulator) or fewer "
                                                       "epilogue tensors", p.tileN / 2)
                                         : "use fewer epilogue tensors"));
  return false;
}

}  // namespace kdl::codegen
