// Lowering step: the operands. Element types, layouts, alignment, element sizes and the C++ names of
// A, B, C, D and the epilogue's extra outputs; the accumulator and the MMA instruction they imply.
#include <fmt/format.h>

#include "codegen/lower_steps.h"
#include "codegen/support.h"

namespace kdl::codegen {

const char* cppElementType(DType t) {
  switch (t) {
    case DType::F16: return "half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::F32: return "float";
    case DType::TF32: return "float";
    case DType::F64: return "double";
    case DType::E4M3: return "__nv_fp8_e4m3";
    case DType::E5M2: return "__nv_fp8_e5m2";
    case DType::S8: return "int8_t";
    case DType::U8: return "uint8_t";
    case DType::S32: return "int32_t";
  }
  return "?";
}

OperandPlan operandPlan(const std::string& name, DType dt, Layout layout, int align) {
  OperandPlan o;
  o.name = name;
  o.dtype = dt;
  o.cppType = cppElementType(dt);
  o.layout = layout;
  o.cppLayout = layout == Layout::Row ? "kdl::RowMajor" : "kdl::ColMajor";
  o.align = align;
  o.elementBytes = bytesOf(dt);
  o.contigK = (name == "A" && layout == Layout::Row) || (name == "B" && layout == Layout::Col);
  o.ldName = ldName(name);
  o.batchStrideName = batchStrideName(name);
  return o;
}

void decideMainloopOperand(Lowering& l, const OperandPlan& o, const Operand& so, const char* alignWhy) {
  l.decide(o.name, fmt::format("{} {}, align {} ({} B)", o.cppType, o.cppLayout, o.align, o.align * o.elementBytes),
           fmt::format("{} {} in the spec ({}-contiguous); alignment {}", dtypeWord(o.dtype), layoutWord(o.layout),
                       o.contigK ? "K" : (o.name == "A" ? "M" : "N"),
                       so.alignOrigin == Origin::Default ? alignWhy : originWord(so.alignOrigin)));
}

void planOperands(const KernelSpec& s, KernelPlan& p) {
  const Operand& A = *s.operand("A");
  const Operand& B = *s.operand("B");
  const Operand& D = *s.operand("D");
  const Operand* C = s.operand("C");
  p.a = operandPlan("A", A.dtype, A.layout, A.align);
  p.b = operandPlan("B", B.dtype, B.layout, B.align);
  p.d = operandPlan("D", D.dtype, D.layout, D.align);
  if (C) {
    p.hasSource = true;
    p.c = operandPlan("C", C->dtype, C->layout, C->align);
  }
  const Epilogue& e = s.epilogue;
  for (size_t i = 1; i < e.outputs.size(); ++i)
    if (e.outputs[i].kind == EpiOutput::Kind::Tensor)
      p.extraOutputs.push_back(operandPlan(e.outputs[i].name, e.outputs[i].dtype, Layout::Row, 1));
}

bool lowerOperands(Lowering& l) {
  const KernelSpec& s = l.spec;
  KernelPlan& p = l.plan;
  const Operand& A = *s.operand("A");
  const Operand& B = *s.operand("B");
  planOperands(s, p);
  decideMainloopOperand(l, p.a, A, "defaults to 16 bytes, the widest cp.async");
  decideMainloopOperand(l, p.b, B, "defaults to 16 bytes, the widest cp.async");

  const Sm80Mainloop* ml = findSm80Mainloop(A.dtype);
  if (A.dtype == DType::F32)
    l.decide("precision", "tf32 multiply, f32 accumulate",
             "the sm80 tensor cores have no f32 MMA: f32 operands are rounded to tf32 (cvt.rna) as they are loaded");
  p.accumCpp = s.accum.value == DType::S32 ? "int32_t" : "float";
  l.decide("accumulator", p.accumCpp, fmt::format("accum = {} ({})", dtypeWord(s.accum.value), originWord(s.accum.origin)));
  p.mmaShape = ml->mma;
  l.decide("mma", fmt::format("mma.sync.aligned.{} ({} x {} -> {})", p.mmaShape, dtypeWord(A.dtype), dtypeWord(B.dtype),
                              dtypeWord(ml->accum)),
           "the sm80 tensor-core instruction for this operand type; each covers 32 bytes of K");
  return true;
}

}  // namespace kdl::codegen
