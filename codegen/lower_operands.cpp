// Lowering steps: the orientation (a column-major D is computed as D^T = B^T A^T, so the device
// template's A and B are B^T and A^T) and the operands: element types, layouts, alignment, element
// sizes and the C++ names of A, B, C, D and the epilogue's extra outputs; the accumulator and the MMA
// instruction they imply.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

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
  o.source = name;
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

Layout transposedLayout(Layout l) { return l == Layout::Row ? Layout::Col : Layout::Row; }

namespace {

// The device template's operand `name` ("A" or "B") holding the transpose of the spec's operand `from`:
// a column-major B (k x n) is the row-major B^T (n x k), the same memory.
OperandPlan transposedOperand(const std::string& name, const Operand& from) {
  OperandPlan o = operandPlan(name, from.dtype, transposedLayout(from.layout), from.align);
  o.source = from.name;
  return o;
}

}  // namespace

void decideMainloopOperand(Lowering& l, const OperandPlan& o, const char* alignWhy) {
  const Operand& so = *l.spec.operand(o.source);
  const std::string contig = o.contigK ? "K" : (o.name == "A" ? "M" : "N");
  const std::string align =
      fmt::format("alignment {}", so.alignOrigin == Origin::Default ? alignWhy : originWord(so.alignOrigin));
  if (o.source == o.name)
    l.decide(o.name, fmt::format("{} {}, align {} ({} B)", o.cppType, o.cppLayout, o.align, o.align * o.elementBytes),
             fmt::format("{} {} in the spec ({}-contiguous); {}", dtypeWord(o.dtype), layoutWord(o.layout), contig, align));
  else
    l.decide(o.name, fmt::format("{}^T: {} {}, align {} ({} B)", o.source, o.cppType, o.cppLayout, o.align,
                                 o.align * o.elementBytes),
             fmt::format("the kernel's {} is {}^T ({} {} in the spec is {}^T {}, the same memory; {}-contiguous); {}",
                         o.name, o.source, dtypeWord(o.dtype), layoutWord(so.layout), o.source, layoutWord(o.layout),
                         contig, align));
}

void planOperands(const KernelSpec& s, KernelPlan& p) {
  const Operand& A = *s.operand("A");
  const Operand& B = *s.operand("B");
  const Operand& D = *s.operand("D");
  const Operand* C = s.operand("C");
  p.argA = operandPlan("A", A.dtype, A.layout, A.align);
  p.argB = operandPlan("B", B.dtype, B.layout, B.align);
  p.a = p.transposed ? transposedOperand("A", B) : p.argA;
  p.b = p.transposed ? transposedOperand("B", A) : p.argB;
  p.d = operandPlan("D", D.dtype, D.layout, D.align);
  if (C) {
    p.hasSource = true;
    p.c = operandPlan("C", C->dtype, C->layout, C->align);
  }
  const Epilogue& e = s.epilogue;
  for (size_t i = 1; i < e.outputs.size(); ++i)
    if (e.outputs[i].kind == EpiOutput::Kind::Tensor)
      p.extraOutputs.push_back(operandPlan(e.outputs[i].name, e.outputs[i].dtype, e.outputs[i].layout, 1));
}

bool lowerOrientation(Lowering& l) {
  const KernelSpec& s = l.spec;
  KernelPlan& p = l.plan;
  const Operand& D = *s.operand("D");
  p.transposed = D.layout == Layout::Col;
  // C and extra outputs laid out unlike D run across the kernel's rows: addressed element by element.
  std::vector<std::string> strided;
  if (const Operand* C = s.operand("C"); C && C->layout != D.layout) strided.push_back("C");
  for (size_t i = 1; i < s.epilogue.outputs.size(); ++i)
    if (s.epilogue.outputs[i].kind == EpiOutput::Kind::Tensor && s.epilogue.outputs[i].layout != D.layout)
      strided.push_back(s.epilogue.outputs[i].name);
  const std::string stridedText =
      strided.empty() ? ""
                      : fmt::format("{} {}-major, unlike D: read or written transposed (element by element, strided "
                                    "across the kernel's rows; correct, slower than D's vector stores)",
                                    fmt::join(strided, ", "), p.transposed ? "row" : "column");
  if (!p.transposed) {
    if (!strided.empty()) l.decide("orientation", "as declared (D row-major)", stridedText);
    return true;  // the common case needs no word
  }
  l.decide("orientation", "transposed: the kernel computes D^T = B^T A^T (n x m, row-major; kdl::TransposedGemm)",
           fmt::format("D is col in the spec, and its transpose is row-major: the epilogue's V consecutive elements "
                       "of a kernel row are consecutive rows of one column of D (contiguous, vector stores). The "
                       "kernel's A is B^T and its B is A^T (no copy: each layout read flipped); its M is D's n, so "
                       "the tile, cluster and raster below run along D^T (tile M along D's columns); [row] inputs "
                       "are read per kernel column, [col] per kernel row{}",
                       strided.empty() ? "" : "; " + stridedText));
  return true;
}

bool lowerOperands(Lowering& l) {
  const KernelSpec& s = l.spec;
  KernelPlan& p = l.plan;
  const Operand& A = *s.operand("A");
  const Operand& B = *s.operand("B");
  planOperands(s, p);
  decideMainloopOperand(l, p.a, "defaults to 16 bytes, the widest cp.async");
  decideMainloopOperand(l, p.b, "defaults to 16 bytes, the widest cp.async");

  decideSm80Math(l, A.dtype, B.dtype);
  return true;
}

void decideSm80Math(Lowering& l, DType a, DType b) {
  const KernelSpec& s = l.spec;
  KernelPlan& p = l.plan;
  const Sm80Mainloop* ml = findSm80Mainloop(a);
  if (a == DType::F32)
    l.decide("precision", "tf32 multiply, f32 accumulate",
             "the sm80 tensor cores have no f32 MMA: f32 operands are rounded to tf32 (cvt.rna) as they are loaded");
  p.accumCpp = s.accum.value == DType::S32 ? "int32_t" : "float";
  l.decide("accumulator", p.accumCpp, fmt::format("accum = {} ({})", dtypeWord(s.accum.value), originWord(s.accum.origin)));
  p.mmaShape = ml->mma;
  l.decide("mma", fmt::format("mma.sync.aligned.{} ({} x {} -> {})", p.mmaShape, dtypeWord(a), dtypeWord(b),
                              dtypeWord(ml->accum)),
           "the sm80 tensor-core instruction for this operand type; each covers 32 bytes of K");
}

}  // namespace kdl::codegen
