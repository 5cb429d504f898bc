// The generated Epilogue functor: the spec's expression tree in f32, per V output columns, with
// loads and stores through the helpers of include/kdl/epilogue.cuh. Its coordinates are the kernel's:
// those of D^T when the kernel computes it (KernelPlan::transposed, a column-major D), where a [row]
// input is one per coordinate column and a [col] one per coordinate row, and a tensor laid out unlike
// the kernel's output is addressed transposed.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "codegen/emit_internal.h"
#include "codegen/epilogue_expr.h"
#include "codegen/writer.h"

namespace kdl::codegen {

namespace {

// "" when a tensor of `layout` runs along the coordinates' rows, "_transposed" when across them. A
// convolution's tensors (nhwc, krsc) are all its output's GEMM view (kdl/conv_problem.h): along the rows.
const char* tileAccess(const KernelPlan& p, Layout layout) {
  if (p.conv()) return "";
  const Layout kernelRows = p.transposed ? Layout::Col : Layout::Row;  // the layout of the kernel's output
  return layout == kernelRows ? "" : "_transposed";
}

}  // namespace

std::string emitEpilogueFunctor(const KernelPlan& p, int indent) {
  const Epilogue& e = p.epilogue;
  CodeWriter w;
  for (int i = 0; i < indent; ++i) w.indent();
  w.line("// {}", renderEpilogueSummary(e));
  if (p.transposed)
    w.raw("// D is column-major: the kernel computes D^T, so c.m is a column of D and c.n.. are rows of it.");
  w.open("struct Epilogue {{");
  // The templates' default is 8 columns per apply call; lowering narrows it where registers are short.
  if (p.epilogueVectorWidth != 8) w.line("static constexpr int kVectorWidth = {};", p.epilogueVectorWidth);
  w.open("struct Params {{");
  w.line("{}* {}; ::int64_t {}; ::int64_t {};", cppQualified(p.d.cppType), p.d.name, p.d.ldName, p.d.batchStrideName);
  if (p.hasSource)
    w.line("const {}* {}; ::int64_t {}; ::int64_t {};  // null: {} reads as 0", cppQualified(p.c.cppType), p.c.name,
           p.c.ldName, p.c.batchStrideName, p.c.name);
  for (const ArgPlan& a : p.args) {
    switch (a.role) {
      case ArgPlan::Role::Param: w.line("float {};", a.name); break;
      case ArgPlan::Role::Input:
        if (a.kind == ArgPlan::Kind::Vector)
          w.line("const {}* {}; ::int64_t {};  // [{}]", cppQualified(a.cppType), a.name, a.batchStrideName, a.broadcast);
        else
          w.line("const {}* {};  // []", cppQualified(a.cppType), a.name);
        break;
      case ArgPlan::Role::TensorOutput:
        w.line("{}* {}; ::int64_t {}; ::int64_t {};", cppQualified(a.cppType), a.name, a.ldName, a.batchStrideName);
        break;
      case ArgPlan::Role::AmaxOutput: w.line("float* {};  // max |.|, zeroed by run()", a.name); break;
      default: break;
    }
  }
  w.close("};");
  w.open("struct State {{");
  bool anyAmax = false;
  for (size_t i = 1; i < e.outputs.size(); ++i)
    if (e.outputs[i].kind == EpiOutput::Kind::AmaxReduction) {
      w.line("float amax_{} = 0.0f;", e.outputs[i].name);
      anyAmax = true;
    }
  bool anyScalar = false;
  for (const EpiInput& in : e.inputs)
    if (in.broadcast == Broadcast::Scalar) {
      w.line("float in_{} = 0.0f;  // loaded by prepare", in.name);
      anyScalar = true;
    }
  w.close("};");
  w.blank();
  if (anyScalar) {
    // Device scalars ([] inputs) are read once per tile, not per element.
    w.open("__device__ __forceinline__ void prepare(const Params& p, State& s) const {{");
    for (const EpiInput& in : e.inputs)
      if (in.broadcast == Broadcast::Scalar)
        w.line("s.in_{0} = ::kdl::load_scalar<{1}>(p.{0});", in.name, cppQualified(cppElementType(in.dtype)));
    w.close();
    w.blank();
  }

  const std::string dName = e.outputs.at(0).name;
  const std::string dType = cppQualified(p.d.cppType);
  // compute<V>: everything but D's store (the sm90a template stores D itself, through a TMA store);
  // apply<V>: compute<V>, then D's store. D is row-major in the coordinates (a column-major D is
  // computed as D^T), so both read it as p.D, p.ldd, rows of the kernel's output.
  w.line("using ElementD = {};", dType);
  // The sm90a template's TMA store finds the output as p.D, p.ldd, p.batch_stride_D; an output with another
  // name (a convolution's Y, X or W) says where it is (kdl::detail::output_d, include/kdl/epilogue.cuh).
  if (dName != "D" && p.sm90()) {
    const ArgPlan* out = nullptr;
    for (const ArgPlan& a : p.args)
      if (a.role == ArgPlan::Role::OperandOut) out = &a;
    if (out)
      w.line("static ::kdl::OutputD<{0}> output_d(const Params& p) {{ return {{p.{1}, p.{2}, p.{3}}}; }}", dType, out->name,
             out->ldName, out->batchStrideName);
  }
  // source_c: where the sm90a template finds C to prefetch each tile's rows of it into L2 a k-loop ahead
  // (kdl::SourceTile, include/kdl/epilogue.cuh); for a C read along the rows (load_tile's addressing) only.
  if (p.sm90() && readsSource(e) && *tileAccess(p, p.c.layout) == '\0')
    w.line("__device__ __forceinline__ static ::kdl::SourceTile<{0}> source_c(const Params& p) {{ return {{p.{1}, p.{2}, p.{3}}}; }}",
           cppQualified(p.c.cppType), p.c.name, p.c.ldName, p.c.batchStrideName);
  // kColVectors / col_vector<S>: the [col] vectors (read along the row) the sm90a template loads into registers once
  // per tile and hands to the epilogue in its coordinates (kdl::ColVector, include/kdl/epilogue.cuh); compute reads
  // slot S with load_col_broadcast<T, V, S>.
  // Inputs read along the row: a [col] vector in the kernel's orientation that some expression reads.
  const auto readAlongRow = [&](size_t k) {
    const EpiInput& in = e.inputs[k];
    return in.broadcast != Broadcast::Scalar && usesInput(e, int(k)) &&
           std::string(broadcastAccess(p, in.broadcast)) == "col";
  };
  std::vector<int> colSlot(e.inputs.size(), -1);
  if (p.sm90()) {
    std::vector<std::string> slots;
    for (size_t k = 0; k < e.inputs.size(); ++k)
      if (const EpiInput& in = e.inputs[k]; readAlongRow(k)) {
        colSlot[k] = int(slots.size());
        slots.push_back(fmt::format("if constexpr (S == {}) return ::kdl::ColVector<{}>{{p.{}, p.batch_stride_{}}};",
                                    slots.size(), cppQualified(cppElementType(in.dtype)), in.name, in.name));
      }
    if (!slots.empty()) {
      w.line("static constexpr int kColVectors = {};", slots.size());
      w.line("template <int S>");
      w.open("__device__ __forceinline__ static auto col_vector(const Params& p) {{");
      for (size_t i = 0; i < slots.size(); ++i) w.line("{}{}", i ? "else " : "", slots[i]);
      w.close();
    }
  }
  // whole<V>: whether, in batch b, every tensor the functor accesses along a row takes V-element
  // vector accesses at columns that are multiples of V (and C is there): then the sm90a template
  // hands interior tiles' coordinates as ::kdl::EpilogueCoordWhole, whose loads and stores skip the
  // per-call null, range and alignment checks (include/kdl/epilogue.cuh).
  {
    std::vector<std::string> checks;
    if (readsSource(e)) {  // C declared read but folded away stays an argument, unread
      if (*tileAccess(p, p.c.layout) == '\0')
        checks.push_back(fmt::format("::kdl::tile_vector_aligned<{}, V>(p.{}, p.{}, p.{}, b)", cppQualified(p.c.cppType),
                                     p.c.name, p.c.ldName, p.c.batchStrideName));
      else
        checks.push_back(fmt::format("p.{} != nullptr", p.c.name));
    }
    for (size_t k = 0; k < e.inputs.size(); ++k)
      if (const EpiInput& in = e.inputs[k]; readAlongRow(k))
        checks.push_back(fmt::format("::kdl::col_vector_aligned<{}, V>(p.{}, p.batch_stride_{}, b)",
                                     cppQualified(cppElementType(in.dtype)), in.name, in.name));
    for (const OperandPlan& z : p.extraOutputs)
      if (*tileAccess(p, z.layout) == '\0')
        checks.push_back(fmt::format("::kdl::tile_vector_aligned<{}, V>(p.{}, p.{}, p.{}, b)", cppQualified(z.cppType),
                                     z.name, z.ldName, z.batchStrideName));
    w.line("template <int V>");
    w.open("__device__ __forceinline__ bool whole(const Params& p, int b) const {{");
    if (checks.empty()) w.line("(void)p; (void)b;");
    w.line("return {};", checks.empty() ? std::string("true") : fmt::format("{}", fmt::join(checks, " && ")));
    w.close();
  }
  // kPointwise: compute reads no coordinate (no C, no [row] / [col] / [channel] input, no extra output, no amax), so a
  // kernel may call it on any vector of accumulators without working coordinates out (kdl::detail::EpiloguePointwise).
  if (isPointwise(e)) w.line("static constexpr bool kPointwise = true;");
  // kFinishLocal: finish needs no other thread (no amax reduction), so a kernel's idle threads may leave first
  // (kdl::detail::EpilogueFinishLocal).
  if (!anyAmax) w.line("static constexpr bool kFinishLocal = true;");
  w.line("template <int V, class Coord = ::kdl::EpilogueCoord>");
  w.open("__device__ __forceinline__ void compute(const Params& p, State& s, const Coord& c, const float (&acc)[V], float (&out_{})[V]) const {{", dName);
  bool anyScalarRead = false;  // a [] input some expression reads (s.in_NAME below)
  for (size_t k = 0; k < e.inputs.size(); ++k)
    anyScalarRead |= e.inputs[k].broadcast == Broadcast::Scalar && usesInput(e, int(k));
  if (!anyAmax && !anyScalarRead) w.line("(void)s;");
  if (readsSource(e)) {  // C declared read but folded away stays an argument, unread
    w.line("float src_C[V];");
    w.line("if (::kdl::source_present(p.{1}, c)) ::kdl::load_tile{0}<{2}, V>(p.{1}, p.{3}, p.{4}, c, src_C);",
           tileAccess(p, p.c.layout), p.c.name, cppQualified(p.c.cppType), p.c.ldName, p.c.batchStrideName);
    w.line("else for (int i = 0; i < V; ++i) src_C[i] = 0.0f;");
  }
  for (size_t k = 0; k < e.inputs.size(); ++k) {
    const EpiInput& in = e.inputs[k];
    if (!usesInput(e, int(k))) continue;  // an argument no expression reads: nothing to load (nor to align)
    const std::string t = cppQualified(cppElementType(in.dtype));
    if (in.broadcast == Broadcast::Scalar)
      w.line("const float in_{0} = s.in_{0};", in.name);
    else if (colSlot[k] >= 0)
      w.line("float in_{0}[V]; ::kdl::load_col_broadcast<{1}, V, {2}>(p.{0}, p.batch_stride_{0}, c, in_{0});", in.name, t,
             colSlot[k]);
    else
      w.line("float in_{0}[V]; ::kdl::load_{2}_broadcast<{1}, V>(p.{0}, p.batch_stride_{0}, c, in_{0});", in.name, t,
             broadcastAccess(p, in.broadcast));
  }
  for (size_t i = 1; i < e.outputs.size(); ++i)
    if (e.outputs[i].kind != EpiOutput::Kind::AmaxReduction) w.line("float out_{}[V];", e.outputs[i].name);
  w.line("#pragma unroll");
  w.open("for (int i = 0; i < V; ++i) {{");
  for (const EpiLet& l : e.lets)
    w.line("const {} let_{} = {};", isBoolExpr(e, l.value) ? "bool" : "float", l.name, cppExpr(e, l.value));
  for (const EpiOutput& o : e.outputs) {
    if (o.kind == EpiOutput::Kind::AmaxReduction) continue;
    std::string v = cppExpr(e, o.value);
    if (isBoolExpr(e, o.value)) v = fmt::format("({} ? 1.0f : 0.0f)", v);
    w.line("out_{}[i] = {};", o.name, v);
  }
  for (const EpiOutput& o : e.outputs) {
    if (o.kind != EpiOutput::Kind::AmaxReduction) continue;
    std::string v = cppExpr(e, o.value);
    if (isBoolExpr(e, o.value)) v = fmt::format("({} ? 1.0f : 0.0f)", v);
    w.line("if (i < c.valid) ::kdl::amax_accumulate(s.amax_{}, {});", o.name, v);
  }
  w.close();
  for (const OperandPlan& z : p.extraOutputs)
    w.line("::kdl::store_tile{4}<{0}, V>(p.{1}, p.{2}, p.{3}, c, out_{1});", cppQualified(z.cppType), z.name, z.ldName,
           z.batchStrideName, tileAccess(p, z.layout));
  w.close();
  w.blank();
  w.line("template <int V>");
  w.open("__device__ __forceinline__ void apply(const Params& p, State& s, const ::kdl::EpilogueCoord& c, const float (&acc)[V]) const {{");
  w.line("float out_{}[V];", dName);
  w.line("compute<V>(p, s, c, acc, out_{});", dName);
  w.line("::kdl::store_tile<{}, V>(p.{}, p.{}, p.{}, c, out_{});", dType, p.d.name, p.d.ldName, p.d.batchStrideName, dName);
  w.close();
  w.blank();
  w.open("__device__ __forceinline__ void finish(const Params& p, State& s) const {{");
  if (!anyAmax) w.line("(void)p; (void)s;");
  for (size_t i = 1; i < e.outputs.size(); ++i)
    if (e.outputs[i].kind == EpiOutput::Kind::AmaxReduction)
      w.line("::kdl::amax_finish(p.{0}, s.amax_{0});", e.outputs[i].name);
  w.close();
  w.close("};");
  return w.take();
}

}  // namespace kdl::codegen
