// `kdlc emit --torch`: <stem>_torch.cpp (one PyTorch op per kernel, torch.ops.NS.KERNEL, calling the
// kernel's NAME.h API through kdl/torch_ops.h) and <stem>_torch_build.py (codegen/torch_build.py with
// the spec's kernels filled in). docs/torch.md describes what the ops take and return.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "codegen/emit_internal.h"
#include "codegen/epilogue_expr.h"
#include "codegen/support.h"
#include "codegen/writer.h"
#include "dsl/diagnostics.h"

namespace kdl::codegen {

namespace {

// codegen/torch_build.py, as a string (generated at configure time).
const char* const kBuildScriptTemplate =
#include "torch_build_py.inc"
    ;

const char* atDtype(DType t) {
  switch (t) {
    case DType::F16: return "::at::kHalf";
    case DType::BF16: return "::at::kBFloat16";
    case DType::F32:
    case DType::TF32: return "::at::kFloat";
    case DType::F64: return "::at::kDouble";
    case DType::E4M3: return "::at::kFloat8_e4m3fn";
    case DType::E5M2: return "::at::kFloat8_e5m2";
    case DType::S8: return "::at::kChar";
    case DType::U8: return "::at::kByte";
    case DType::S32: return "::at::kInt";
  }
  return "::at::kFloat";
}

const char* layoutConstant(Layout l) { return l == Layout::Col ? "ops::Layout::Col" : "ops::Layout::Row"; }

// A param's default as a schema float ("1.0", "0.01", "1e-05"): the value the kernel's f32 holds.
std::string schemaFloat(double v) {
  const float f = static_cast<float>(v);
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", f);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

bool isTensorArgument(const ArgPlan& a) {
  return a.role == ArgPlan::Role::OperandIn || a.role == ArgPlan::Role::BlockScale || a.role == ArgPlan::Role::Input;
}
bool isOutput(const ArgPlan& a) {
  return a.role == ArgPlan::Role::OperandOut || a.role == ArgPlan::Role::TensorOutput ||
         a.role == ArgPlan::Role::AmaxOutput;
}

// A convolution's optional residual (`Tensor? residual`: None reads as 0).
bool isResidual(const KernelPlan& p, const ArgPlan& a) {
  return p.conv() && p.hasSource && a.role == ArgPlan::Role::OperandIn && a.name == p.c.name;
}

// The op of one kernel: its arguments in schema order (tensors in C ABI order, then the params, which
// have defaults and so must follow every argument without one, then split_k) and its outputs.
struct OpShape {
  std::vector<const ArgPlan*> tensors, params, outputs;
  bool splitK = false;
  int maxSplitK = 1;
  // A convolution's geometry arguments after the params (docs/torch.md, "Convolution ops"): stride, padding,
  // dilation, then dgrad's input_size or wgrad's kernel_size ("" for fprop).
  bool conv = false;
  std::string convExtra;
  std::string strideDefault = "[1, 1]";
  // Names the generated body declares besides the user's (`problem`, `args`, `guard`), made unique.
  std::string problem, args, guard;
};

std::string uniqueLocal(std::string name, const std::set<std::string>& taken) {
  while (taken.count(name)) name += "_";
  return name;
}

OpShape opShape(const KernelPlan& p) {
  OpShape s;
  std::set<std::string> taken = {"split_k"};
  for (const ArgPlan& a : p.args) {
    taken.insert(a.name);
    if (isTensorArgument(a)) s.tensors.push_back(&a);
    else if (a.role == ArgPlan::Role::Param) s.params.push_back(&a);
    else if (isOutput(a)) s.outputs.push_back(&a);
  }
  s.splitK = p.serialSplitK;
  s.maxSplitK = p.maxSplitK;
  if (p.conv()) {
    s.conv = true;
    s.convExtra = p.spec.op.value == Op::Conv2dDgrad   ? "input_size"
                  : p.spec.op.value == Op::Conv2dWgrad ? "kernel_size"
                                                       : "";
    if (p.strideH > 0) s.strideDefault = fmt::format("[{}, {}]", p.strideH, p.strideW);
    for (const char* n : kTorchConvArgumentNames) taken.insert(n);  // checkTorchSupported refuses them as epilogue names
  }
  s.problem = uniqueLocal("problem", taken);
  s.args = uniqueLocal("args", taken);
  s.guard = uniqueLocal("guard", taken);
  return s;
}

std::string schemaOf(const KernelPlan& p, const OpShape& s) {
  std::vector<std::string> in, out;
  for (const ArgPlan* a : s.tensors) in.push_back((isResidual(p, *a) ? "Tensor? " : "Tensor ") + a->name);
  for (const ArgPlan* a : s.params) in.push_back(fmt::format("float {}={}", a->name, schemaFloat(a->defaultValue)));
  if (s.conv) {
    in.push_back("int[2] stride=" + s.strideDefault);
    in.push_back("int[2] padding=[0, 0]");
    in.push_back("int[2] dilation=[1, 1]");
    if (!s.convExtra.empty()) in.push_back("int[] " + s.convExtra + "=[]");
  }
  if (s.splitK) in.push_back("int split_k=0");
  for (const ArgPlan* a : s.outputs) out.push_back("Tensor " + a->name);
  const std::string ret = out.size() == 1 ? "Tensor" : fmt::format("({})", fmt::join(out, ", "));
  return fmt::format("{}({}) -> {}", p.name, fmt::join(in, ", "), ret);
}

std::string returnType(const OpShape& s) {
  if (s.outputs.size() == 1) return "::at::Tensor";
  std::vector<std::string> t(s.outputs.size(), "::at::Tensor");
  return fmt::format("::std::tuple<{}>", fmt::join(t, ", "));
}

// A convolution's geometry arguments in schema order: stride, padding, dilation, then input_size or kernel_size.
std::vector<std::string> geometryNames(const OpShape& s) {
  if (!s.conv) return {};
  std::vector<std::string> names = {"stride", "padding", "dilation"};
  if (!s.convExtra.empty()) names.push_back(s.convExtra);
  return names;
}

// "const ::at::Tensor& A, const ::at::Tensor& B, double alpha, int64_t split_k"
std::string cppParameters(const KernelPlan& p, const OpShape& s, bool withParams) {
  std::vector<std::string> ps;
  for (const ArgPlan* a : s.tensors)
    ps.push_back((isResidual(p, *a) ? "const ::std::optional<::at::Tensor>& " : "const ::at::Tensor& ") + a->name);
  if (withParams)
    for (const ArgPlan* a : s.params) ps.push_back("double " + a->name);
  for (const std::string& n : geometryNames(s)) ps.push_back("::c10::IntArrayRef " + n);
  if (s.splitK) ps.push_back("::int64_t split_k");
  return fmt::format("{}", fmt::join(ps, ", "));
}

std::string checkCall(const KernelPlan& p, const OpShape& s) {
  std::vector<std::string> names;
  for (const ArgPlan* a : s.tensors) names.push_back(a->name);
  for (const std::string& n : geometryNames(s)) names.push_back(n);
  if (s.splitK) names.push_back("split_k");
  return fmt::format("::kdl_torch_ops::{}::check({})", p.name, fmt::join(names, ", "));
}

// Which of a convolution's three tensors (kdl::torch_ops::ConvTensor) an input operand is: fprop reads
// X and W, dgrad Y and W, wgrad Y and X (the spec's names are these).
const char* convTensor(const ArgPlan& a) {
  return a.name == "X" ? "ops::ConvTensor::X" : a.name == "W" ? "ops::ConvTensor::W" : "ops::ConvTensor::Y";
}
const char* convOpConstant(Op op) {
  return op == Op::Conv2dDgrad ? "ops::ConvOp::Dgrad" : op == Op::Conv2dWgrad ? "ops::ConvOp::Wgrad" : "ops::ConvOp::Fprop";
}

// What one argument is to the op's checks (kdl::torch_ops::Problem, or ConvProblem for a convolution).
std::string declaration(const KernelPlan& p, const ArgPlan& a) {
  const std::string dt = fmt::format("{}, \"{}\"", atDtype(a.dtype), dtypeWord(a.dtype));
  if (p.conv()) {
    if (isResidual(p, a)) return fmt::format("residual(\"{0}\", {0}, {1})", a.name, dt);
    if (a.role == ArgPlan::Role::OperandIn) return fmt::format("input(\"{0}\", {0}, {1}, {2})", a.name, convTensor(a), dt);
    if (a.kind == ArgPlan::Kind::DeviceScalar) return fmt::format("scalar(\"{0}\", {0}, {1})", a.name, dt);
    return fmt::format("vector(\"{0}\", {0}, {1})", a.name, dt);
  }
  switch (a.role) {
    case ArgPlan::Role::BlockScale:
      return a.name == "scale_A" ? fmt::format("scales_a(\"{0}\", {0}, {1}, {2})", a.name, p.blockMA, p.blockK)
                                 : fmt::format("scales_b(\"{0}\", {0}, {1}, {2})", a.name, p.blockK, p.blockNB);
    case ArgPlan::Role::OperandIn:
      if (a.name == "A") return fmt::format("matrix_a(\"A\", A, {})", dt);
      if (a.name == "B") return fmt::format("matrix_b(\"B\", B, {})", dt);
      return fmt::format("matrix_mn(\"{0}\", {0}, {1})", a.name, dt);
    default:
      if (a.kind == ArgPlan::Kind::DeviceScalar) return fmt::format("scalar(\"{0}\", {0}, {1})", a.name, dt);
      return fmt::format("vector(\"{0}\", {0}, {1}, ops::Broadcast::{2})", a.name, dt,
                         a.broadcast == "row" ? "Row" : "Col");
  }
}

// The layout an argument is bound in: the spec's for A, B, C and the outputs; block scales as the
// kernel reads them (scale_A k-block major: its (m blocks, k blocks) column-major; scale_B row-major).
Layout bindLayout(const ArgPlan& a) {
  if (a.role == ArgPlan::Role::BlockScale) return a.name == "scale_A" ? Layout::Col : Layout::Row;
  return a.layout;
}

std::string outputAllocation(const KernelPlan& p, const ArgPlan& a) {
  if (a.role == ArgPlan::Role::AmaxOutput) return "amax_output()";
  if (p.conv()) return fmt::format("output({})", atDtype(a.dtype));
  return fmt::format("output({}, {})", layoutConstant(a.layout), atDtype(a.dtype));
}

std::string opDoc(const KernelPlan& p) {
  std::vector<std::string> parts;
  auto layoutOf = [&](const ArgPlan& a) { return layoutWord(bindLayout(a)); };
  for (const ArgPlan& a : p.args) {
    switch (a.role) {
      case ArgPlan::Role::OperandIn:
      case ArgPlan::Role::OperandOut:
      case ArgPlan::Role::TensorOutput:
        parts.push_back(fmt::format("{} {} {}", a.name, dtypeWord(a.dtype), layoutOf(a)));
        break;
      case ArgPlan::Role::BlockScale: parts.push_back(fmt::format("{} f32 {}", a.name, layoutOf(a))); break;
      case ArgPlan::Role::Input:
        parts.push_back(fmt::format("{} {} [{}]", a.name, dtypeWord(a.dtype), a.broadcast));
        break;
      case ArgPlan::Role::AmaxOutput: parts.push_back(a.name + " amax"); break;
      case ArgPlan::Role::Param: break;
    }
  }
  return fmt::format("{} on {}{}: {}", opWord(p.spec.op.value), p.archName,
                     p.fallback ? fmt::format(" (fallback {})", p.fallback->archName) : "", fmt::join(parts, ", "));
}

// Every name the body uses is qualified, so that no user name (a param, an input, the kernel's) can hide
// it: from the global namespace, or through the aliases `ops` and `kernel`, which a variable cannot hide
// (a name before `::` is looked up among namespaces and types only).
void emitOp(CodeWriter& w, const KernelPlan& p, const std::string& ns) {
  const OpShape s = opShape(p);
  const std::string ret = returnType(s);
  const std::string& P = s.problem;
  w.line("// ---- torch.ops.{}.{} ----", ns, p.name);
  w.line("// {}", schemaOf(p, s));
  w.line("// {}", opDoc(p));
  w.line("// Epilogue: {}", renderEpilogueSummary(p.epilogue));
  w.line("namespace kdl_torch_ops::{} {{", p.name);
  w.blank();
  w.raw("namespace ops = ::kdl::torch_ops;");
  w.line("namespace kernel = ::kdl_kernels::{};", p.name);
  w.blank();

  const std::string problemType = p.conv() ? "ops::ConvProblem" : "ops::Problem";
  w.raw("// The checks of both implementations, before anything runs: devices, dtypes, ranks and sizes.");
  w.open("{} check({}) {{", problemType, cppParameters(p, s, false));
  if (p.conv())
    w.line("ops::ConvProblem {}(\"{}.{}\", {}, {}, {}, {}, {});", P, ns, p.name, convOpConstant(p.spec.op.value),
           p.filterR, p.filterS, p.strideH, p.strideW);
  else
    w.line("ops::Problem {}(\"{}.{}\");", P, ns, p.name);
  for (const ArgPlan* a : s.tensors) w.line("{}.{};", P, declaration(p, *a));
  if (p.conv())
    w.line("{}.geometry(stride, padding, dilation, {});", P, s.convExtra.empty() ? "{}" : s.convExtra);
  else
    w.line("{}.resolve();", P);
  if (s.splitK) w.line("{}.split_k(split_k, {});", P, s.maxSplitK);
  w.line("return {};", P);
  w.close();
  w.blank();

  w.raw("// CUDA tensors: the kernel, on the current stream. (CPU tensors come here too and are refused.)");
  w.open("{} cuda({}) {{", ret, cppParameters(p, s, true));
  w.line("{} {} = {};", problemType, P, checkCall(p, s));
  w.line("const ::c10::cuda::CUDAGuard {}({}.device());", s.guard, s.tensors.front()->name);
  for (const ArgPlan* a : s.outputs) w.line("const ::at::Tensor {} = {}.{};", a->name, P, outputAllocation(p, *a));
  w.line("kernel::Arguments {};", s.args);
  w.line("{}.sizes({});", P, s.args);
  if (s.splitK) w.line("{}.split_k = static_cast<int>(split_k);", s.args);
  for (const ArgPlan& a : p.args) {
    const std::string member = s.args + "." + a.name;
    switch (a.kind) {
      case ArgPlan::Kind::Tensor:
        if (p.conv())
          w.line("{}.bind({}, {}, {}.{}, {}.{});", P, a.name, member, s.args, a.ldName, s.args, a.batchStrideName);
        else
          w.line("{}.bind_matrix({}, {}, {}, {}.{}, {}.{});", P, a.name, layoutConstant(bindLayout(a)), member, s.args,
                 a.ldName, s.args, a.batchStrideName);
        break;
      case ArgPlan::Kind::Vector:
        w.line("{}.bind_vector({}, {}, {}.{});", P, a.name, member, s.args, a.batchStrideName);
        break;
      case ArgPlan::Kind::DeviceScalar: w.line("{}.bind_scalar({}, {});", P, a.name, member); break;
      case ArgPlan::Kind::Param: w.line("{} = static_cast<float>({});", member, a.name); break;
    }
  }
  w.line("{}.launch({}, &kernel::can_implement, &kernel::workspace_size, &kernel::run);", P, s.args);
  std::vector<std::string> outs;
  for (const ArgPlan* a : s.outputs) outs.push_back(a->name);
  if (outs.size() == 1) w.line("return {};", outs[0]);
  else w.line("return {{{}}};", fmt::join(outs, ", "));
  w.close();
  w.blank();

  w.raw("// Meta tensors (torch.compile's tracing): the same checks, and outputs with the shapes, dtypes and strides");
  w.raw("// the kernel would write.");
  w.open("{} meta({}) {{", ret, cppParameters(p, s, true));
  w.line("const {} {} = {};", problemType, P, checkCall(p, s));
  std::vector<std::string> allocs;
  for (const ArgPlan* a : s.outputs) allocs.push_back(fmt::format("{}.{}", P, outputAllocation(p, *a)));
  if (allocs.size() == 1) {
    w.line("return {};", allocs[0]);
  } else {
    w.raw("return {");
    for (size_t i = 0; i < allocs.size(); ++i) w.line("    {}{}", allocs[i], i + 1 < allocs.size() ? "," : "};");
  }
  w.close();
  w.blank();
  w.line("}}  // namespace kdl_torch_ops::{}", p.name);
}

std::string pyString(std::string_view s) { return "\"" + jsonEscape(s) + "\""; }

}  // namespace

std::string defaultTorchNamespace(const std::string& stem) {
  std::string ns = "kdl_" + stem;
  for (char& c : ns)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) c = '_';
  return ns;
}

std::string torchSchema(const KernelPlan& p) { return schemaOf(p, opShape(p)); }

std::string emitTorchExtension(const std::vector<KernelPlan>& plans, const EmitOptions& o) {
  const std::string& ns = o.torchNamespace;
  CodeWriter w;
  w.line("// Generated by kdlc {} from {}. Do not edit.", kdlcVersion(), o.specName);
  w.line("// The PyTorch extension of {}: one op per kernel, torch.ops.{}.KERNEL, each calling its", o.specName, ns);
  w.raw("// kernel's NAME.h API through kdl/torch_ops.h (docs/torch.md). No Python.h, no pybind11: build it");
  w.line("// with {}_torch_build.py (or `kdlc build --torch`), load it with torch.ops.load_library.", o.torchStem);
  w.raw("#include <c10/cuda/CUDAGuard.h>");
  w.raw("#include <kdl/torch_ops.h>");
  if (std::any_of(plans.begin(), plans.end(), [](const KernelPlan& p) { return p.conv(); }))
    w.raw("#include <kdl/torch_conv_ops.h>");
  w.raw("#include <torch/library.h>");
  w.blank();
  w.raw("#include <cstdint>");
  w.raw("#include <tuple>");
  w.blank();
  for (const KernelPlan& p : plans) w.line("#include \"{}.h\"", p.name);
  for (const KernelPlan& p : plans) {
    w.blank();
    emitOp(w, p, ns);
  }
  w.blank();
  w.raw("// ---- registration ----");
  w.open("TORCH_LIBRARY({}, m) {{", ns);
  for (const KernelPlan& p : plans) w.line("m.def(\"{}\");", torchSchema(p));
  w.close();
  const char* keys[][2] = {{"CUDA", "cuda"}, {"CPU", "cuda"}, {"Meta", "meta"}};
  for (const auto& [key, fn] : keys) {
    w.blank();
    if (std::string(key) == "CPU") w.raw("// CPU tensors get the CUDA implementation's checks, which say that A must be a CUDA tensor.");
    w.open("TORCH_LIBRARY_IMPL({}, {}, m) {{", ns, key);
    for (const KernelPlan& p : plans) w.line("m.impl(\"{0}\", TORCH_FN(::kdl_torch_ops::{0}::{1}));", p.name, fn);
    w.close();
  }
  return w.take();
}

std::string emitTorchBuildScript(const std::vector<KernelPlan>& plans, const EmitOptions& o) {
  CodeWriter data;
  data.line("# Generated by kdlc {} from {}. Do not edit.", kdlcVersion(), o.specName);
  data.line("SPEC = {}", pyString(o.specName));
  data.line("STEM = {}", pyString(o.torchStem));
  data.line("NAMESPACE = {}", pyString(o.torchNamespace));
  data.line("SOURCE = {}", pyString(o.torchStem + "_torch.cpp"));
  data.line("LIBRARY = {}", pyString(o.torchStem + "_torch.so"));
  data.raw("KERNELS = [  # (name, its nvcc -gencode flags)");
  for (const KernelPlan& p : plans) {
    std::vector<std::string> gc;
    for (const std::string& g : p.gencode) gc.push_back(pyString(g));
    data.line("    ({}, [{}]),", pyString(p.name), fmt::join(gc, ", "));
  }
  data.raw("]");
  std::string out = kBuildScriptTemplate;
  const std::string marker = "#@KDL_EMITTED@\n";
  size_t at = out.find(marker);
  if (at != std::string::npos) out.replace(at, marker.size(), data.str());
  return out;
}

}  // namespace kdl::codegen
