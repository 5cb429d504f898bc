// `kdlc list`: every field of every validated kernel, explicit, with where its value came from.
#include "tools/kdlc/list.h"

#include <cmath>
#include <fmt/format.h>

#include "dsl/diagnostics.h"

namespace kdl {
namespace {

// A double as the language spells it: always with a decimal point or exponent (1.0, 0.5, 1e-05).
std::string number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.1f}", v);
  return fmt::format("{}", v);
}

std::string tuple3(const std::array<int, 3>& t) { return fmt::format("({}, {}, {})", t[0], t[1], t[2]); }

std::string pairOrRuntime(const std::array<int, 2>& t) {
  return t[0] == 0 ? "runtime" : fmt::format("({}, {})", t[0], t[1]);
}

std::string splitKText(const KernelSpec& s) {
  switch (s.splitK.value) {
    case SplitKMode::None: return "1";
    case SplitKMode::Serial:
    case SplitKMode::Parallel: return fmt::format("{}({})", name(s.splitK.value), s.splitKSlices.value);
    case SplitKMode::StreamK: return "stream_k";
  }
  return "1";
}

std::string promotionText(const Field<int>& p) { return p.value == 0 ? "fast" : std::to_string(p.value); }

// `promotion` means something for fp8 inputs on the sm90a wgmma path only; other kernels do not show it.
bool showsPromotion(const KernelSpec& s) {
  const Operand* a = s.operand("A");
  return s.op.value == Op::Gemm && s.schedule.value != Schedule::Multistage && a && isFloat8(a->dtype);
}

// `fallback` means something for sm90a kernels on the wgmma path only (sm80-path kernels run everywhere).
bool showsFallback(const KernelSpec& s) {
  return s.op.value == Op::Gemm && s.arch.value == Arch::SM90a && s.schedule.value != Schedule::Multistage;
}

std::string locText(const SourceManager& sm, SourceLoc loc) {
  if (!loc.valid()) return "";
  return fmt::format("{}:{}:{}", sm.path(loc.file), loc.line, loc.col);
}

// ---- epilogue expressions ----------------------------------------------------------------------

int precedence(const EpiNode& n) {
  switch (n.op) {
    case EpiOp::Or: return 1;
    case EpiOp::And: return 2;
    case EpiOp::Eq:
    case EpiOp::Ne: return 3;
    case EpiOp::Lt:
    case EpiOp::Le:
    case EpiOp::Gt:
    case EpiOp::Ge: return 4;
    case EpiOp::Add:
    case EpiOp::Sub: return 5;
    case EpiOp::Mul:
    case EpiOp::Div: return 6;
    case EpiOp::Neg:
    case EpiOp::Not: return 7;
    case EpiOp::Const: return n.constant < 0 ? 7 : 8;
    default: return 8;
  }
}


template <class T>
std::string nameAt(const std::vector<T>& items, int index) {
  return index >= 0 && static_cast<size_t>(index) < items.size() ? items[index].name : "?";
}

std::string render(const Epilogue& epi, const EpiNode& n);

// A child in parentheses where the parent binds tighter (or equally, on the right: operators are
// left-associative).
std::string renderChild(const Epilogue& epi, const EpiNode& child, int parentPrec, bool right) {
  std::string s = render(epi, child);
  int p = precedence(child);
  bool wrap = p < parentPrec || (p == parentPrec && right && p < 7) || (parentPrec == 7 && p == 7);
  return wrap ? "(" + s + ")" : s;
}

std::string render(const Epilogue& epi, const EpiNode& n) {
  if (const char* infix = infixSpelling(n.op); infix && n.args.size() == 2) {
    int p = precedence(n);
    return renderChild(epi, n.args[0], p, false) + " " + infix + " " + renderChild(epi, n.args[1], p, true);
  }
  switch (n.op) {
    case EpiOp::Const: return number(n.constant);
    case EpiOp::Acc: return "acc";
    case EpiOp::Source: return epi.sourceName;
    case EpiOp::Param: return nameAt(epi.params, n.index);
    case EpiOp::Input: return nameAt(epi.inputs, n.index);
    case EpiOp::Let: return nameAt(epi.lets, n.index);
    case EpiOp::Output: return nameAt(epi.outputs, n.index);
    case EpiOp::Neg:
    case EpiOp::Not:
      if (n.args.size() != 1) break;
      return std::string(n.op == EpiOp::Neg ? "-" : "!") + renderChild(epi, n.args[0], 7, true);
    case EpiOp::Cast:
      if (n.args.size() != 1) break;
      return fmt::format("cast({}, {})", name(n.castTo), render(epi, n.args[0]));
    default: break;
  }
  std::string out = std::string(name(n.op)) + "(";
  for (size_t i = 0; i < n.args.size(); ++i) out += (i ? ", " : "") + render(epi, n.args[i]);
  return out + ")";
}

// ---- text ------------------------------------------------------------------------------------------

std::string originText(Origin o, bool chosenAutomatically) {
  return o == Origin::Default && chosenAutomatically ? "default (auto)" : name(o);
}

template <class T>
void fieldLine(std::string& out, const SourceManager& sm, const char* label, const std::string& value,
               const Field<T>& f, bool chosenAutomatically = false) {
  std::string where = locText(sm, f.loc);
  // The comments line up: a label longer than 8 (`promotion`) takes from the value's column.
  int valueWidth = 27 - std::max(8, static_cast<int>(std::string_view(label).size()));
  out += fmt::format("  {:<8} = {:<{}} # {}{}\n", label, value, valueWidth, originText(f.origin, chosenAutomatically),
                     where.empty() ? "" : ", " + where);
}

void operandLine(std::string& out, const SourceManager& sm, const Operand& o) {
  std::string value = fmt::format("{} {} align {}", name(o.dtype), name(o.layout), o.align);
  if (o.scaleBlock) value += fmt::format(" scale ({}, {})", (*o.scaleBlock)[0], (*o.scaleBlock)[1]);
  std::string where = locText(sm, o.loc);
  out += fmt::format("  {:<8} : {:<19} # {}align {}\n", o.name, value, where.empty() ? "" : where + ", ",
                     name(o.alignOrigin));
}

std::string broadcastText(Broadcast b) { return b == Broadcast::Scalar ? "[]" : fmt::format("[{}]", name(b)); }

void epilogueLines(std::string& out, const SourceManager& sm, const Epilogue& epi) {
  std::string where = locText(sm, epi.loc);
  out += fmt::format("  epilogue{}\n", epi.implicit ? "                       # implicit (no epilogue block)"
                                                  : where.empty() ? "" : "                       # " + where);
  for (const EpiParam& p : epi.params) out += fmt::format("    param {} = {};\n", p.name, number(p.defaultValue));
  for (const EpiInput& i : epi.inputs)
    out += fmt::format("    input {} : {} {};\n", i.name, name(i.dtype), broadcastText(i.broadcast));
  for (const EpiLet& l : epi.lets) out += fmt::format("    let {} = {};\n", l.name, render(epi, l.value));
  for (const EpiOutput& o : epi.outputs) {
    std::string value = render(epi, o.value);
    switch (o.kind) {
      case EpiOutput::Kind::Main: out += fmt::format("    {} = {};\n", o.name, value); break;
      case EpiOutput::Kind::Tensor:
        out += fmt::format("    output {} : {} {} = {};\n", o.name, name(o.dtype), name(o.layout), value);
        break;
      case EpiOutput::Kind::AmaxReduction:
        out += fmt::format("    output {} : {} = max(abs({}));\n", o.name, name(o.dtype), value);
        break;
    }
  }
}

void kernelText(std::string& out, const SourceManager& sm, const KernelSpec& s) {
  out += fmt::format("kernel {}", s.name);
  if (!s.templateName.empty()) out += fmt::format(" = {}(...)", s.templateName);
  std::string where = locText(sm, s.loc);
  out += where.empty() ? "\n" : fmt::format("  # {}\n", where);
  fieldLine(out, sm, "op", name(s.op.value), s.op);
  fieldLine(out, sm, "arch", name(s.arch.value), s.arch);
  for (const Operand& o : s.operands) operandLine(out, sm, o);
  fieldLine(out, sm, "accum", name(s.accum.value), s.accum);
  fieldLine(out, sm, "tile", tuple3(s.tile.value), s.tile);
  fieldLine(out, sm, "cluster", tuple3(s.cluster.value), s.cluster);
  fieldLine(out, sm, "stages", std::to_string(s.stages.value), s.stages, true);
  fieldLine(out, sm, "schedule", name(s.schedule.value), s.schedule, true);
  fieldLine(out, sm, "raster", name(s.raster.value), s.raster);
  fieldLine(out, sm, "split_k", splitKText(s), s.splitK);
  if (showsPromotion(s)) fieldLine(out, sm, "promotion", promotionText(s.promoteEvery), s.promoteEvery);
  if (showsFallback(s)) fieldLine(out, sm, "fallback", name(s.fallback.value), s.fallback);
  if (s.op.value != Op::Gemm) {
    fieldLine(out, sm, "filter", pairOrRuntime(s.filter.value), s.filter);
    fieldLine(out, sm, "stride", pairOrRuntime(s.stride.value), s.stride);
  }
  out += fmt::format("  mainloop shared memory: {} bytes ({} stages; the launch's total: kdlc list --plan)\n",
                     s.sharedMemoryBytes, s.stages.value);
  epilogueLines(out, sm, s.epilogue);
}

// ---- JSON ------------------------------------------------------------------------------------------

std::string jsonString(std::string_view s) { return "\"" + jsonEscape(s) + "\""; }

std::string jsonLoc(const SourceManager& sm, SourceLoc loc) {
  if (!loc.valid()) return "\"file\":null,\"line\":null,\"column\":null";
  return fmt::format("\"file\":{},\"line\":{},\"column\":{}", jsonString(sm.path(loc.file)), loc.line, loc.col);
}

template <class T>
std::string jsonField(const SourceManager& sm, const std::string& value, const Field<T>& f) {
  return fmt::format("{{\"value\":{},\"origin\":\"{}\",{}}}", value, name(f.origin), jsonLoc(sm, f.loc));
}

std::string jsonInts(const int* v, size_t n) {
  std::string out = "[";
  for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

std::string jsonOperand(const SourceManager& sm, const Operand& o) {
  std::string scale = o.scaleBlock ? ",\"scale\":" + jsonInts(o.scaleBlock->data(), 2) : "";
  return fmt::format("{{\"name\":{},\"dtype\":\"{}\",\"layout\":\"{}\",\"align\":{},\"align_origin\":\"{}\"{},{}}}",
                     jsonString(o.name), name(o.dtype), name(o.layout), o.align, name(o.alignOrigin), scale,
                     jsonLoc(sm, o.loc));
}

const char* outputKind(EpiOutput::Kind k) {
  switch (k) {
    case EpiOutput::Kind::Main: return "main";
    case EpiOutput::Kind::Tensor: return "tensor";
    case EpiOutput::Kind::AmaxReduction: return "amax";
  }
  return "main";
}

template <class T, class F>
std::string jsonArray(const std::vector<T>& items, F one) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + one(items[i]);
  return out + "]";
}

std::string jsonEpilogue(const SourceManager& sm, const Epilogue& epi) {
  std::string params = jsonArray(epi.params, [&](const EpiParam& p) {
    return fmt::format("{{\"name\":{},\"default\":{},{}}}", jsonString(p.name), number(p.defaultValue),
                       jsonLoc(sm, p.loc));
  });
  std::string inputs = jsonArray(epi.inputs, [&](const EpiInput& i) {
    return fmt::format("{{\"name\":{},\"dtype\":\"{}\",\"broadcast\":\"{}\",{}}}", jsonString(i.name), name(i.dtype),
                       name(i.broadcast), jsonLoc(sm, i.loc));
  });
  std::string lets = jsonArray(epi.lets, [&](const EpiLet& l) {
    return fmt::format("{{\"name\":{},\"value\":{},{}}}", jsonString(l.name), jsonString(render(epi, l.value)),
                       jsonLoc(sm, l.loc));
  });
  std::string outputs = jsonArray(epi.outputs, [&](const EpiOutput& o) {
    std::string layout = o.kind == EpiOutput::Kind::AmaxReduction ? "null" : jsonString(name(o.layout));
    return fmt::format("{{\"name\":{},\"kind\":\"{}\",\"dtype\":\"{}\",\"layout\":{},\"value\":{},{}}}",
                       jsonString(o.name), outputKind(o.kind), name(o.dtype), layout,
                       jsonString(render(epi, o.value)), jsonLoc(sm, o.loc));
  });
  return fmt::format(
      "{{\"implicit\":{},\"uses_source\":{},{},\"params\":{},\"inputs\":{},\"lets\":{},\"outputs\":{}}}",
      epi.implicit, epi.usesSource, jsonLoc(sm, epi.loc), params, inputs, lets, outputs);
}

std::string kernelJson(const SourceManager& sm, const KernelSpec& s) {
  std::string out = fmt::format("{{\"name\":{},{},\"template\":{}", jsonString(s.name), jsonLoc(sm, s.loc),
                                s.templateName.empty() ? "null" : jsonString(s.templateName));
  out += ",\"op\":" + jsonField(sm, jsonString(name(s.op.value)), s.op);
  out += ",\"arch\":" + jsonField(sm, jsonString(name(s.arch.value)), s.arch);
  out += ",\"operands\":" + jsonArray(s.operands, [&](const Operand& o) { return jsonOperand(sm, o); });
  out += ",\"accum\":" + jsonField(sm, jsonString(name(s.accum.value)), s.accum);
  out += ",\"tile\":" + jsonField(sm, jsonInts(s.tile.value.data(), 3), s.tile);
  out += ",\"cluster\":" + jsonField(sm, jsonInts(s.cluster.value.data(), 3), s.cluster);
  out += ",\"stages\":" + jsonField(sm, std::to_string(s.stages.value), s.stages);
  out += ",\"schedule\":" + jsonField(sm, jsonString(name(s.schedule.value)), s.schedule);
  out += ",\"raster\":" + jsonField(sm, jsonString(name(s.raster.value)), s.raster);
  out += ",\"split_k\":" +
         fmt::format("{{\"value\":\"{}\",\"slices\":{},\"origin\":\"{}\",{}}}", name(s.splitK.value),
                     s.splitKSlices.value, name(s.splitK.origin), jsonLoc(sm, s.splitK.loc));
  if (showsPromotion(s)) out += ",\"promotion\":" + jsonField(sm, jsonString(promotionText(s.promoteEvery)), s.promoteEvery);
  if (showsFallback(s)) out += ",\"fallback\":" + jsonField(sm, jsonString(name(s.fallback.value)), s.fallback);
  if (s.op.value != Op::Gemm) {
    auto pair = [](const std::array<int, 2>& v) { return v[0] == 0 ? std::string("null") : jsonInts(v.data(), 2); };
    out += ",\"filter\":" + jsonField(sm, pair(s.filter.value), s.filter);
    out += ",\"stride\":" + jsonField(sm, pair(s.stride.value), s.stride);
  }
  out += ",\"epilogue\":" + jsonEpilogue(sm, s.epilogue);
  out += fmt::format(",\"mainloop_shared_memory_bytes\":{}}}", s.sharedMemoryBytes);
  return out;
}

}  // namespace

std::string renderEpiNode(const Epilogue& epi, const EpiNode& node) { return render(epi, node); }

std::string renderSpecsText(const SourceManager& sm, const std::vector<KernelSpec>& specs) {
  std::string out;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (i) out += '\n';
    kernelText(out, sm, specs[i]);
  }
  return out;
}

std::string renderSpecsJsonArray(const SourceManager& sm, const std::vector<KernelSpec>& specs) {
  std::string out = "[";
  for (size_t i = 0; i < specs.size(); ++i) out += (i ? ",\n" : "\n") + kernelJson(sm, specs[i]);
  out += specs.empty() ? "]" : "\n]";
  return out;
}

std::string renderSpecsJson(const SourceManager& sm, const std::vector<KernelSpec>& specs) {
  return "{\"kernels\":" + renderSpecsJsonArray(sm, specs) + "}\n";
}

}  // namespace kdl
