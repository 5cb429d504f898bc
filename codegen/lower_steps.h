// The steps of lowering a KernelSpec to a KernelPlan, each in the file of its subject, run in order
// by a driver of codegen/lower.cpp (one per path: today the sm80 GEMM; an sm90a GEMM or a
// convolution gets a driver of its own that picks its steps). A step fills its part of the plan,
// records each decision with its reason, and returns false after reporting an [unsupported] error.
#pragma once
#include <string>

#include "codegen/plan.h"
#include "include/kdl/gemm_sm80_smem.h"
#include "dsl/diagnostics.h"
#include "dsl/spec.h"

namespace kdl::codegen {

// What every step reads and writes.
struct Lowering {
  const KernelSpec& spec;
  KernelPlan& plan;
  DiagEngine& diags;

  void decide(std::string what, std::string value, std::string why) const;
  // An [unsupported] error at `loc`, naming the kernel.
  void unsupported(SourceLoc loc, const std::string& message) const;
};

using LoweringStep = bool (*)(Lowering&);

// codegen/lower_target.cpp: arch, the nvcc -gencode flags, the compute capabilities the code runs on.
bool lowerTarget(Lowering& l);
// codegen/lower_operands.cpp: the orientation, before the operands of either path: a column-major D
// makes the kernel compute D^T = B^T A^T (KernelPlan::transposed), with the reason.
bool lowerOrientation(Lowering& l);
// codegen/lower_operands.cpp: A, B, C, D and the extra outputs (types, layouts, alignment, element
// sizes, leading-dimension names), the accumulator and the MMA instruction.
bool lowerOperands(Lowering& l);
// codegen/lower_pipeline.cpp: the multistage templates' shared-memory shape of a plan (operands, tile, warps,
// stages), for include/kdl/gemm_sm80_smem.h's functions, which the templates' kSmemBytes use too.
GemmSm80SmemShape sm80SmemShape(const KernelPlan& p);
// codegen/lower_tiling.cpp: the tile, the warps that run it, the shared-memory layout of A and B.
bool lowerTiling(Lowering& l);
// codegen/lower_pipeline.cpp: the template that feeds the pipeline (cp.async or TMA), stages, the
// shared memory per block, raster order, split-K.
bool lowerPipeline(Lowering& l);
// codegen/lower_pipeline.cpp: serial split-K (plan.serialSplitK, plan.maxSplitK) and its decision, for
// every path; `serialWhy` is how the path's slices meet.
// noneNote: appended to the reason when the kernel splits nothing at compile time (what run() may still do).
void planSplitK(Lowering& l, const char* serialWhy, const char* noneNote = nullptr);
// codegen/lower_arguments.cpp: the epilogue and the kernel's arguments in C ABI order, with the
// C++ names they declare.
bool lowerArguments(Lowering& l);

// The sm90a GEMM (kdl::GemmSm90), codegen/lower_sm90.cpp; lowerTarget and lowerArguments are shared.
// Operands: A, B, C, D as lowerOperands, the accumulator and the wgmma instruction.
bool lowerSm90Operands(Lowering& l);
// Tiling: the tile, the schedule (and why `auto` picked it), the cluster, the raster.
bool lowerSm90Tiling(Lowering& l);
// Pipeline: stages and the launch's shared memory (include/kdl/gemm_sm90_smem.h), split-K, fp8
// promotion and block scaling.
bool lowerSm90Pipeline(Lowering& l);
// Epilogue: the vector width (columns per Epilogue::apply call) that the consumers' registers allow
// beside the accumulator; refuses an epilogue that fits at no width.
bool lowerSm90Epilogue(Lowering& l);

// The implicit-GEMM convolution (kdl::Conv2dSm80), codegen/lower_conv.cpp; lowerTarget, lowerTiling and
// lowerArguments are shared with the sm80 GEMM.
// Operands: the GEMM the op maps to (M, N, K in the problem's words), its A and B (the spec's two inputs,
// their layouts as the GEMM reads them, the iterator that gathers each), residual and output, the
// accumulator and mma; the filter and stride the spec fixes; on sm90a, why the sm80 mainloop runs.
bool lowerConvOperands(Lowering& l);
// Pipeline: stages and the launch's shared memory (the Core's, include/kdl/gemm_sm80_smem.h), split-K.
bool lowerConvPipeline(Lowering& l);
// sm90a conv fprop (kdl::Conv2dSm90Fprop): the accumulator and the wgmma instruction.
bool lowerConvSm90Math(Lowering& l);
// sm90a conv fprop: whether the kernel also carries the patch mainloop (X's input pixels once per channel
// block; kdl::sm90::ConvFpropPatchLoader), which its run() takes at dilation 1, and why (not).
bool lowerConvPatch(Lowering& l);

// codegen/lower_operands.cpp: the accumulator and the mma.sync instruction of the sm80 mainloop for
// operands of types a and b (checkSupported admitted them), with their decisions.
void decideSm80Math(Lowering& l, DType a, DType b);

// codegen/lower_operands.cpp: one operand's plan (type, layout, alignment, C++ names).
OperandPlan operandPlan(const std::string& name, DType dt, Layout layout, int align);
// A, B, C, D and the epilogue's extra outputs of the spec into the plan (no decisions); the device
// template's a and b are B^T and A^T when plan.transposed (lowerOrientation ran first).
void planOperands(const KernelSpec& s, KernelPlan& p);
// The decision that records a mainloop operand of the device template (plan.a or plan.b, and the spec
// operand it holds); `alignWhy` explains a default alignment.
void decideMainloopOperand(Lowering& l, const OperandPlan& o, const char* alignWhy);
// row <-> col.
Layout transposedLayout(Layout l);

// codegen/lower.cpp: a whole sm80-path (multistage) plan of a spec, as lower() makes one.
bool lowerGemmSm80Plan(const KernelSpec& s, KernelPlan& p, DiagEngine& diags);
// codegen/lower_fallback.cpp: `fallback = sm80` of an sm90a plan: the sm80-path plan (plan.fallback),
// the merged nvcc targets and the decision; false after [unsupported] errors at the field for what
// the sm80 path does not generate.
bool lowerFallback(const KernelSpec& s, KernelPlan& plan, DiagEngine& diags);

// codegen/lower_hash.cpp: sha256 of what determines the kernel's emitted files (its resolved spec,
// without source locations, and the kdlc version); the header line of NAME.h and NAME.cu.
std::string kernelHash(const KernelPlan& p);

// Words shared by the steps.
const char* originWord(Origin o);  // "set in the spec", "the default", ...
std::string toLower(std::string s);
// The C++ members a tensor `name` declares besides its pointer: "ldz", "batch_stride_Z".
std::string ldName(const std::string& name);
std::string batchStrideName(const std::string& name);

}  // namespace kdl::codegen
