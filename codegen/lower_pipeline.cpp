// Lowering step: the pipeline. The template that fills the stages (cp.async, or TMA on Hopper), the
// number of stages, the shared memory per block (include/kdl/gemm_sm80_smem.h, the function the
// templates' kSmemBytes use), the raster order and split-K.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/lower_steps.h"

namespace kdl::codegen {

GemmSm80SmemShape sm80SmemShape(const KernelPlan& p) {
  return GemmSm80SmemShape{p.a.elementBytes, p.b.elementBytes, p.a.contigK, p.b.contigK, p.tileM,
                           p.tileN,          p.tileK,          p.warpsM,    p.warpsN,    p.stages};
}

namespace {

// kdl::GemmSm80Tma where its TMA path covers the configuration and its launch fits a Hopper block
// (the only GPUs it runs on); kdl::GemmSm80 elsewhere, which is all GemmSm80Tma would run.
void decidePath(Lowering& l) {
  KernelPlan& p = l.plan;
  const GemmSm80SmemShape shape = sm80SmemShape(p);
  const size_t hopperLimit = size_t(maxSharedMemoryPerBlock(Arch::SM90a));
  if (gemm_sm80_tma_covers(shape) && size_t(gemm_sm80_tma_smem_bytes(shape)) <= hopperLimit) {
    p.path = KernelPath::GemmSm80Tma;
    l.decide("path", "kdl::GemmSm80Tma (include/kdl/gemm_sm80_tma.cuh)",
             "schedule = multistage: a multistage pipeline, ldmatrix and mma.sync tensor-core instructions; 16-bit A "
             "row + B col with 64-element K tiles: on Hopper (sm_90 code) with TMA-describable pointers the stages "
             "are filled by TMA (one thread, mbarriers), otherwise it runs kdl::GemmSm80 (every thread's cp.async)");
    return;
  }
  p.path = KernelPath::GemmSm80;
  l.decide("path", "kdl::GemmSm80 (include/kdl/gemm_sm80.cuh)",
           "schedule = multistage: a multistage pipeline filled by every thread's cp.async, ldmatrix and mma.sync "
           "tensor-core instructions; the TMA variant needs 16-bit A row + B col with 64-element K tiles");
}

// The bytes of each launch against the limit of the GPUs that run it; false after an error. The
// validator picked `stages` against the same function's mainloop bytes (dsl/validate_arch.cpp), and
// tests/unit/test_codegen.cpp checks on every configuration that this never fails after it.
bool checkSmemLimit(Lowering& l) {
  const KernelPlan& p = l.plan;
  size_t limit = size_t(maxSharedMemoryPerBlock(p.arch));
  if (p.cpAsyncSmemBytes <= limit) return true;
  size_t perStage = size_t(gemm_sm80_stage_bytes(sm80SmemShape(p)));
  l.unsupported(l.spec.stages.loc, fmt::format("{} stages need {} bytes of shared memory, more than the {} bytes a block "
                                               "can have on {}; at most {} stages fit",
                                               p.stages, p.cpAsyncSmemBytes, limit, p.archName, limit / perStage));
  return false;
}

std::string smemText(const KernelPlan& p) {
  std::string text = fmt::format("{} B of shared memory per block ({} B mainloop, {} B epilogue staging", p.smemBytes,
                                 p.mainloopSmemBytes, p.epilogueSmemBytes);
  if (p.path == KernelPath::GemmSm80Tma)
    text += fmt::format(", {} B of mbarriers and 1024-byte alignment for TMA; {} B when it runs kdl::GemmSm80",
                        p.smemBytes - p.cpAsyncSmemBytes, p.cpAsyncSmemBytes);
  return text + fmt::format("; the {} limit is {} B)", p.archName, maxSharedMemoryPerBlock(p.arch));
}

// The stages of the spec, within what the multistage mainloop pipelines; false after an error.
bool planStages(Lowering& l) {
  l.plan.stages = l.spec.stages.value;
  if (l.plan.stages >= 2 && l.plan.stages <= 8) return true;
  l.unsupported(l.spec.stages.loc, fmt::format("stages = {}: the sm80 path pipelines 2 to 8 stages", l.plan.stages));
  return false;
}

// The shared memory of the multistage mainloop (plan.path decided) against the arch's limit, and the
// stages decision that reports it; false after an error.
bool planSharedMemory(Lowering& l) {
  KernelPlan& p = l.plan;
  const GemmSm80SmemShape shape = sm80SmemShape(p);
  p.mainloopSmemBytes = size_t(gemm_sm80_mainloop_smem_bytes(shape));
  p.epilogueSmemBytes = size_t(gemm_sm80_epilogue_smem_bytes(shape));
  p.cpAsyncSmemBytes = size_t(gemm_sm80_smem_bytes(shape));
  p.smemBytes = p.path == KernelPath::GemmSm80Tma ? size_t(gemm_sm80_tma_smem_bytes(shape)) : p.cpAsyncSmemBytes;
  if (!checkSmemLimit(l)) return false;
  l.decide("stages", std::to_string(p.stages), fmt::format("{}; {}", originWord(l.spec.stages.origin), smemText(p)));
  return true;
}

}  // namespace

bool lowerPipeline(Lowering& l) {
  const KernelSpec& s = l.spec;
  KernelPlan& p = l.plan;
  if (!planStages(l)) return false;
  decidePath(l);
  if (!planSharedMemory(l)) return false;

  p.rasterAlongM = s.raster.value == Raster::AlongM;
  l.decide("raster", p.rasterAlongM ? "along_m (RasterAlongM = true)" : "along_n (RasterAlongM = false)",
           fmt::format("{}; tiles visited in bands of 8 for L2 reuse", originWord(s.raster.origin)));
  planSplitK(l, "slices of a tile add into a workspace in order (per-tile semaphores); the last runs the epilogue");
  return true;
}

// kdl::Conv2dSm80's launch is its Core's (a kdl::GemmSm80: cp.async stages, the same shared memory);
// its tiles are visited in launch order (the template has no raster parameter).
bool lowerConvPipeline(Lowering& l) {
  if (!planStages(l) || !planSharedMemory(l)) return false;
  planSplitK(l, "slices of a tile add into a workspace in order (per-tile semaphores); the last runs the epilogue");
  return true;
}

void planSplitK(Lowering& l, const char* serialWhy, const char* noneNote) {
  const KernelSpec& s = l.spec;
  KernelPlan& p = l.plan;
  p.serialSplitK = s.splitK.value == SplitKMode::Serial;
  p.maxSplitK = p.serialSplitK ? std::max(1, s.splitKSlices.value) : 1;
  std::string noneWhy = originWord(s.splitK.origin);
  if (noneNote) noneWhy += std::string("; ") + noneNote;
  l.decide("split_k",
           p.serialSplitK ? fmt::format("serial, 1..{} slices at run time (Arguments::split_k; default 0: chosen per problem and device by the "
                                   "wave count, bounded below by DRAM's time)", p.maxSplitK) : "none",
           p.serialSplitK ? serialWhy : noneWhy);
}

}  // namespace kdl::codegen
