// Hand-built KernelSpecs for the codegen tests (no front end needed).
#pragma once
#include <string>

#include "dsl/spec.h"

namespace kdl::testing {

inline Operand makeOperand(const std::string& name, DType dt, Layout l) {
  Operand o;
  o.name = name;
  o.dtype = dt;
  o.layout = l;
  o.align = 16 / bytesOf(dt == DType::TF32 ? DType::F32 : dt);
  return o;
}

inline EpiNode leaf(EpiOp op, int index = -1) {
  EpiNode n;
  n.op = op;
  n.index = index;
  return n;
}
inline EpiNode constant(double v) {
  EpiNode n;
  n.op = EpiOp::Const;
  n.constant = v;
  return n;
}
inline EpiNode node(EpiOp op, std::vector<EpiNode> args) {
  EpiNode n;
  n.op = op;
  n.args = std::move(args);
  return n;
}

// An sm80 multistage GEMM: A row, B col, D row, f32 accumulation, the implicit epilogue
// D = alpha * acc (+ beta * C).
inline KernelSpec makeGemm(const std::string& name, DType ab, DType d, bool withC = false,
                           std::array<int, 3> tile = {128, 128, 32}, int stages = 3) {
  KernelSpec s;
  s.name = name;
  s.op.value = Op::Gemm;
  s.arch.value = Arch::SM80;
  s.operands.push_back(makeOperand("A", ab, Layout::Row));
  s.operands.push_back(makeOperand("B", ab, Layout::Col));
  if (withC) s.operands.push_back(makeOperand("C", d, Layout::Row));
  s.operands.push_back(makeOperand("D", d, Layout::Row));
  s.accum.value = (ab == DType::S8 || ab == DType::U8) ? DType::S32 : DType::F32;
  s.tile.value = tile;
  s.cluster.value = {1, 1, 1};
  s.stages.value = stages;
  s.schedule.value = Schedule::Multistage;
  s.raster.value = Raster::AlongN;
  s.splitK.value = SplitKMode::None;
  s.splitKSlices.value = 1;
  Epilogue& e = s.epilogue;
  e.implicit = true;
  e.params.push_back({"alpha", 1.0, {}});
  EpiNode v = node(EpiOp::Mul, {leaf(EpiOp::Param, 0), leaf(EpiOp::Acc)});
  if (withC) {
    e.params.push_back({"beta", 0.0, {}});
    e.usesSource = true;
    v = node(EpiOp::Add, {v, node(EpiOp::Mul, {leaf(EpiOp::Param, 1), leaf(EpiOp::Source)})});
  }
  EpiOutput out;
  out.kind = EpiOutput::Kind::Main;
  out.name = "D";
  out.dtype = d;
  out.value = v;
  e.outputs.push_back(out);
  return s;
}

}  // namespace kdl::testing
