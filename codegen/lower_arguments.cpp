// Lowering step: the epilogue and the kernel's arguments. Their order in the C ABI (operands, then
// the epilogue's params, inputs and extra outputs as declared) and the C++ member names each
// declares in Arguments and Epilogue::Params, which must be legal and unique.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "codegen/epilogue_expr.h"
#include "codegen/lower_steps.h"
#include "dsl/check/cpp_names.h"

namespace kdl::codegen {

namespace {

ArgPlan& addArg(KernelPlan& p, std::string name, ArgPlan::Kind kind, ArgPlan::Role role, DType dt, int index) {
  ArgPlan a;
  a.kind = kind;
  a.role = role;
  a.dtype = dt;
  a.cppType = cppElementType(dt);
  a.index = index;
  if (kind == ArgPlan::Kind::Tensor) a.ldName = ldName(name);
  if (kind == ArgPlan::Kind::Tensor || kind == ArgPlan::Kind::Vector) a.batchStrideName = batchStrideName(name);
  a.name = std::move(name);
  p.args.push_back(std::move(a));
  return p.args.back();
}

// Block scales (sm90a fp8, KernelPlan::blockScaling) come right after their operand: `scale_A`
// (with `ld_scale_A`, `batch_stride_scale_A`) after A, `scale_B` after B: f32 matrices, "k-block
// major" (GemmProblem's scale_a/scale_b).
void addOperandArgs(const KernelSpec& s, KernelPlan& p) {
  auto addScales = [&](const std::string& operand, int index) {
    if (!p.blockScaling) return;
    const std::string name = "scale_" + operand;
    ArgPlan& a = addArg(p, name, ArgPlan::Kind::Tensor, ArgPlan::Role::BlockScale, DType::F32, index);
    a.ldName = "ld_" + name;
  };
  // The spec's A and B (argA, argB), also when the kernel computes the transpose (plan.transposed).
  addArg(p, "A", ArgPlan::Kind::Tensor, ArgPlan::Role::OperandIn, p.argA.dtype, 0).layout = p.argA.layout;
  addScales("A", 0);
  addArg(p, "B", ArgPlan::Kind::Tensor, ArgPlan::Role::OperandIn, p.argB.dtype, 1).layout = p.argB.layout;
  addScales("B", 1);
  if (s.operand("C")) addArg(p, "C", ArgPlan::Kind::Tensor, ArgPlan::Role::OperandIn, p.c.dtype, 2).layout = p.c.layout;
  addArg(p, "D", ArgPlan::Kind::Tensor, ArgPlan::Role::OperandOut, p.d.dtype, 3).layout = p.d.layout;
}

// A convolution's: its two inputs (the GEMM's A and B), [residual], the output; each a tensor laid out
// as declared (nhwc, krsc), with the C++ names of the spec's tensor ("ldx", "batch_stride_X").
void addConvOperandArgs(KernelPlan& p) {
  addArg(p, p.argA.name, ArgPlan::Kind::Tensor, ArgPlan::Role::OperandIn, p.argA.dtype, 0).layout = p.argA.layout;
  addArg(p, p.argB.name, ArgPlan::Kind::Tensor, ArgPlan::Role::OperandIn, p.argB.dtype, 1).layout = p.argB.layout;
  if (p.hasSource) addArg(p, p.c.name, ArgPlan::Kind::Tensor, ArgPlan::Role::OperandIn, p.c.dtype, 2).layout = p.c.layout;
  addArg(p, p.d.name, ArgPlan::Kind::Tensor, ArgPlan::Role::OperandOut, p.d.dtype, 3).layout = p.d.layout;
}

const char* broadcastWord(Broadcast b) {
  switch (b) {
    case Broadcast::Row: return "row";
    case Broadcast::Col: return "col";
    case Broadcast::Channel: return "channel";
    case Broadcast::Scalar: break;
  }
  return "";
}

// The members Arguments declares besides the arguments' own: the problem's sizes.
std::set<std::string> sizeMembers(const KernelPlan& p) {
  if (!p.conv()) return {"m", "n", "k", "batch", "split_k"};
  return {"n", "h", "w", "c", "k", "r", "s", "pad_h", "pad_w", "stride_h", "stride_w", "dilation_h", "dilation_w",
          "p", "q", "split_k"};
}

// The epilogue's params, inputs and extra outputs in declaration order (declarations without a
// location, as built by the implicit epilogue, first).
void addEpilogueArgs(const Epilogue& e, KernelPlan& p) {
  enum class DeclKind { Param, Input, Output };
  struct Decl { SourceLoc loc; DeclKind kind; int index; };
  std::vector<Decl> decls;
  for (size_t i = 0; i < e.params.size(); ++i) decls.push_back({e.params[i].loc, DeclKind::Param, int(i)});
  for (size_t i = 0; i < e.inputs.size(); ++i) decls.push_back({e.inputs[i].loc, DeclKind::Input, int(i)});
  for (size_t i = 1; i < e.outputs.size(); ++i) decls.push_back({e.outputs[i].loc, DeclKind::Output, int(i)});
  std::stable_sort(decls.begin(), decls.end(), [](const Decl& x, const Decl& y) {
    if (x.loc.valid() != y.loc.valid()) return !x.loc.valid();
    return x.loc.valid() && locBefore(x.loc, y.loc);
  });
  for (const Decl& d : decls) {
    if (d.kind == DeclKind::Param) {
      addArg(p, e.params[d.index].name, ArgPlan::Kind::Param, ArgPlan::Role::Param, DType::F32, d.index).defaultValue =
          e.params[d.index].defaultValue;
    } else if (d.kind == DeclKind::Input) {
      const EpiInput& in = e.inputs[d.index];
      bool scalar = in.broadcast == Broadcast::Scalar;
      ArgPlan& a = addArg(p, in.name, scalar ? ArgPlan::Kind::DeviceScalar : ArgPlan::Kind::Vector, ArgPlan::Role::Input,
                          in.dtype, d.index);
      if (!scalar) a.broadcast = broadcastWord(in.broadcast);
    } else {
      const EpiOutput& o = e.outputs[d.index];
      if (o.kind == EpiOutput::Kind::AmaxReduction)
        addArg(p, o.name, ArgPlan::Kind::DeviceScalar, ArgPlan::Role::AmaxOutput, DType::F32, d.index);
      else
        addArg(p, o.name, ArgPlan::Kind::Tensor, ArgPlan::Role::TensorOutput, o.dtype, d.index).layout = o.layout;
    }
  }
}

// The C++ names the kernel declares must be legal and unique; false after an error. `check` already
// refuses every such name (dsl/check/cpp_names.h, the one place the rules live): this is the
// backstop that keeps a spec which skipped validation from reaching nvcc.
bool checkNames(Lowering& l) {
  const KernelSpec& s = l.spec;
  const Epilogue& e = s.epilogue;
  if (std::string why = cppNameProblem(s.name, CppNameUse::Kernel); !why.empty()) {
    l.unsupported(s.loc, fmt::format("the kernel name `{}` {}; rename the kernel", s.name, why));
    return false;
  }
  std::set<std::string> members = sizeMembers(l.plan);
  for (const ArgPlan& a : l.plan.args) {
    SourceLoc loc = s.loc;
    for (const EpiParam& x : e.params) if (x.name == a.name) loc = x.loc;
    for (const EpiInput& x : e.inputs) if (x.name == a.name) loc = x.loc;
    bool userName = a.role != ArgPlan::Role::OperandIn && a.role != ArgPlan::Role::OperandOut &&
                    a.role != ArgPlan::Role::BlockScale;
    if (userName) {
      if (std::string why = cppNameProblem(a.name, CppNameUse::Epilogue); !why.empty()) {
        l.unsupported(loc, fmt::format("`{}` {}; rename it", a.name, why));
        return false;
      }
    }
    for (const std::string* m : {&a.name, &a.ldName, &a.batchStrideName}) {
      if (m->empty()) continue;
      if (!members.insert(*m).second) {
        l.unsupported(loc, fmt::format("`{}` would be declared twice in the generated Arguments struct (it also names a "
                                       "size, leading dimension or batch stride); rename it",
                                       *m));
        return false;
      }
    }
  }
  return true;
}

}  // namespace

bool lowerArguments(Lowering& l) {
  KernelPlan& p = l.plan;
  l.decide("epilogue", renderEpilogueSummary(l.spec.epilogue),
           fmt::format("f32 math, {} columns per call; one rounding at each store (saturating for integer and fp8 "
                       "outputs)",
                       p.epilogueVectorWidth));
  if (p.conv()) addConvOperandArgs(p);
  else addOperandArgs(l.spec, p);
  addEpilogueArgs(l.spec.epilogue, p);
  if (!checkNames(l)) return false;
  std::vector<std::string> argNames;
  for (const ArgPlan& a : p.args) argNames.push_back(a.name);
  l.decide("arguments", fmt::format("{}", fmt::join(argNames, ", ")),
           p.blockScaling ? "the C ABI order: operands (each block-scaled one followed by its scales), then the epilogue's "
                           "params, inputs and extra outputs as declared"
           : p.conv()     ? "the C ABI order: the two inputs, [residual], the output, then the epilogue's params, inputs "
                            "and extra outputs as declared"
                          : "the C ABI order: operands, then the epilogue's params, inputs and extra outputs as declared");
  return true;
}

}  // namespace kdl::codegen
