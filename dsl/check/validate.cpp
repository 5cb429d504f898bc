// The validation driver: kernel names, then the passes of dsl/check/validate_rules.h on each kernel; a kernel
// with errors is left out of the result, the others go on.
#include "dsl/check/validate.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>

#include "dsl/check/cpp_names.h"
#include "dsl/check/validate_rules.h"
#include "dsl/words.h"

namespace kdl {
namespace validation {

// Two letters swapped side by side (`tiel` for `tile`): a common slip that edit distance counts twice.
static bool swappedNeighbours(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || a == b) return false;
  size_t i = 0;
  while (a[i] == b[i]) ++i;
  return i + 1 < a.size() && a[i] == b[i + 1] && a[i + 1] == b[i] && a.compare(i + 2, std::string::npos, b, i + 2) == 0;
}

std::string suggest(const std::string& text, const std::vector<std::string>& words) {
  if (text.size() >= 3)
    for (const std::string& w : words)
      if (w.size() > text.size() && w.compare(0, text.size(), text) == 0) return ", did you mean `" + w + "`?";
  for (const std::string& w : words)
    if (swappedNeighbours(text, w)) return ", did you mean `" + w + "`?";
  return didYouMean(text, words);
}

std::string wordHint(const Value& v, const std::vector<std::string>& words) {
  if (!v.isString() && !v.isWord()) return "";
  const std::string& text = v.asString();
  if (v.isString() && std::find(words.begin(), words.end(), text) != words.end())
    return "; write `" + text + "` without quotes";
  return suggest(text, words);
}

std::string describe(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None: return "nothing";
    case Value::Kind::Word:
    case Value::Kind::Int:
    case Value::Kind::Float:
    case Value::Kind::Bool: return "the " + v.typeName() + " `" + v.toString() + "`";
    case Value::Kind::String: {
      std::string s = v.toString();
      return "the string " + (s.size() > 40 ? s.substr(0, 40) + "...\"" : s);
    }
    default: return "`" + v.typeName() + "`";
  }
}

std::string quotedList(const std::vector<std::string>& words, const char* lastJoin) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? lastJoin : ", ";
    out += "`" + words[i] + "`";
  }
  return out;
}

const Operand* KernelCheck::operand(std::string_view name) const {
  for (const Operand& o : operands)
    if (o.name == name) return &o;
  return nullptr;
}

bool KernelCheck::blockScaled() const {
  const Operand* a = operand("A");
  const Operand* b = operand("B");
  return a && b && a->scaleBlock && b->scaleBlock;
}

bool KernelCheck::given(std::string_view field) const {
  return std::any_of(raw.fields.begin(), raw.fields.end(), [&](const RawField& f) { return f.name == field; });
}

void KernelCheck::noteArch(Diagnostic& d) const {
  if (arch) d.notes.push_back({arch->loc, std::string("arch set to ") + name(arch->value) + " here"});
}

void KernelCheck::noteSchedule(Diagnostic& d) const {
  if (schedule && (schedule->origin == Origin::Explicit || schedule->origin == Origin::Template))
    d.notes.push_back({schedule->loc, std::string("schedule set to ") + name(schedule->value) + " here"});
}

const char* outputOperandName(Op op) {
  switch (op) {
    case Op::Gemm: return "D";
    case Op::Conv2dFprop: return "Y";
    case Op::Conv2dDgrad: return "X";
    case Op::Conv2dWgrad: return "W";
  }
  return "D";
}

Layout convTensorLayout(std::string_view tensor) { return tensor == "W" ? Layout::KRSC : Layout::NHWC; }

std::array<const char*, 2> inputOperandNames(Op op) {
  switch (op) {
    case Op::Gemm: return {"A", "B"};
    case Op::Conv2dFprop: return {"X", "W"};
    case Op::Conv2dDgrad: return {"Y", "W"};
    case Op::Conv2dWgrad: return {"Y", "X"};
  }
  return {"A", "B"};
}

// A convolution instantiates the sm80 mainloop (kdl::Conv2dSm80 on GemmSm80's) unless it is on sm90a and its
// spec asks for a wgmma schedule (kdl::Conv2dSm90Fprop / Dgrad / Wgrad on GemmSm90's).
bool convOnWgmmaPath(const KernelCheck& c) {
  return c.op && c.op->value != Op::Gemm && c.schedule && !c.scheduleAuto &&
         c.schedule->value != Schedule::Multistage && c.arch && c.arch->value == Arch::SM90a;
}
bool onMultistagePath(const KernelCheck& c) {
  if (c.op && c.op->value != Op::Gemm) return c.schedule.has_value() && !convOnWgmmaPath(c);
  return c.schedule && c.schedule->value == Schedule::Multistage;
}

}  // namespace validation

namespace {

using validation::KernelCheck;


// Kernel names become C++ symbols and file names in the generated code: dsl/check/cpp_names.h says which
// names that rules out.
bool checkKernelName(const RawKernel& k, DiagEngine& diags) {
  const std::string& n = k.name;
  if (n.empty()) {
    diags.error(DiagKind::KernelName, k.nameLoc, "a kernel name must not be empty");
    return false;
  }
  std::string why = cppNameProblem(n, CppNameUse::Kernel);
  if (why.empty()) return true;
  std::string shown = n.size() > 80 ? n.substr(0, 80) + "..." : n;
  diags.error(DiagKind::KernelName, k.nameLoc, "kernel name `" + shown + "` " + why + "; pick another name");
  return false;
}

KernelSpec assemble(const KernelCheck& c) {
  KernelSpec s;
  s.name = c.raw.name;
  s.loc = c.raw.nameLoc;
  s.templateName = c.raw.templateName;
  s.op = *c.op;
  s.arch = *c.arch;
  s.operands = c.operands;
  s.accum = *c.accum;
  s.tile = *c.tile;
  s.cluster = *c.cluster;
  s.stages = *c.stages;
  s.schedule = *c.schedule;
  s.raster = *c.raster;
  s.splitK = *c.splitK;
  s.splitKSlices = Field<int>{c.splitKSlices, c.splitK->loc, c.splitK->origin};
  s.promoteEvery = *c.promotion;
  s.fallback = *c.fallback;
  s.filter = c.filter ? *c.filter : c.defaulted(std::array<int, 2>{0, 0});
  s.stride = c.stride ? *c.stride : c.defaulted(std::array<int, 2>{0, 0});
  s.epilogue = c.epilogue;
  s.sharedMemoryBytes = c.sharedMemoryBytes;
  return s;
}

// Every field a finished check must have resolved; a pass that left one unset reported why.
bool complete(const KernelCheck& c) {
  return c.op && c.arch && c.accum && c.tile && c.cluster && c.stages && c.schedule && c.raster && c.splitK &&
         c.promotion && c.fallback && !c.operandsBroken;
}

std::optional<KernelSpec> validateKernel(const RawKernel& k, DiagEngine& diags) {
  size_t errorsBefore = diags.errorCount();
  KernelCheck c{k, diags};
  validation::readFields(c);
  validation::checkOperands(c);
  validation::defaultBlockScaledTile(c);
  validation::checkArchRules(c);
  validation::checkScaling(c);
  validation::checkFallback(c);
  validation::checkEpilogue(c);
  if (diags.errorCount() != errorsBefore) return std::nullopt;
  if (!complete(c)) {
    // Every pass that leaves a field unresolved reports why; reaching here is a bug in kdlc.
    diags.error(DiagKind::Unsupported, k.nameLoc,
                "internal error: kernel `" + k.name + "` could not be resolved; please report this as a kdlc bug");
    return std::nullopt;
  }
  return assemble(c);
}

}  // namespace

// A kernel whose evaluation failed: validate it on the side and keep only the errors that cannot be
// consequences of the failed values (a None field, an operand without a dtype): those of one field's
// own name or type, epilogue calls and broadcasts. The kernel itself is never emitted.
static void reportIndependentErrors(const RawKernel& k, DiagEngine& diags) {
  DiagEngine scratch(diags.errorCap());
  validateKernel(k, scratch);
  std::vector<SourceLoc> poisonedAt;
  for (const RawField& f : k.fields)
    if (f.value.isNone()) poisonedAt.push_back(f.valueLoc);
  for (const RawOperand& o : k.operands) {
    if (o.dtype.isNone()) poisonedAt.push_back(o.dtypeLoc);
    if (o.layout.isNone()) poisonedAt.push_back(o.layoutLoc);
  }
  for (const Diagnostic& d : scratch.all()) {
    bool independent = d.kind == DiagKind::UnknownField || d.kind == DiagKind::FieldType ||
                       d.kind == DiagKind::EpilogueArity || d.kind == DiagKind::EpilogueBroadcast;
    bool atPoison = std::find(poisonedAt.begin(), poisonedAt.end(), d.loc) != poisonedAt.end();
    if (!independent || atPoison || d.severity != Severity::Error) continue;
    Diagnostic& out = diags.error(d.kind, d.loc, d.message);
    out.notes = d.notes;
  }
}

std::vector<KernelSpec> validate(const EvalResult& raw, DiagEngine& diags) {
  std::vector<KernelSpec> specs;
  std::map<std::string, SourceLoc> firstDefinition;
  for (const RawKernel& k : raw.kernels) {
    bool nameOk = checkKernelName(k, diags);
    if (nameOk) {
      auto [it, inserted] = firstDefinition.emplace(k.name, k.nameLoc);
      if (!inserted) {
        diags.error(DiagKind::DuplicateKernel, k.nameLoc, "a kernel named `" + k.name + "` is already defined")
            .notes.push_back({it->second, "first defined here"});
        nameOk = false;
      }
    }
    if (k.poisoned) {
      reportIndependentErrors(k, diags);
      continue;
    }
    std::optional<KernelSpec> spec = validateKernel(k, diags);
    if (spec && nameOk) specs.push_back(std::move(*spec));
  }
  return specs;
}

}  // namespace kdl
