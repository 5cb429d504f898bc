// Operands: the set each op needs, their dtypes, layouts and alignments, and the accumulator type.
// Whether A and B may differ depends on the schedule, so that rule is in validate_arch.cpp.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "dsl/check/validate_rules.h"
#include "dsl/words.h"

namespace kdl::validation {
namespace {

enum class Role { Input, Source, Output };

struct OperandSet {
  std::vector<std::string> required;  // in the spec's order: inputs, then the output
  std::vector<std::string> optional;  // the source: gemm's C, a convolution's residual
};

OperandSet operandSet(Op op) {
  auto in = inputOperandNames(op);
  return {{in[0], in[1], outputOperandName(op)}, {sourceOperandName(op)}};
}

Role roleOf(Op op, const std::string& n) {
  if (n == outputOperandName(op)) return Role::Output;
  if (n == sourceOperandName(op)) return Role::Source;
  return Role::Input;
}

std::string describeSet(Op op) {
  OperandSet s = operandSet(op);
  std::string out = std::string(name(op)) + " needs operands ";
  for (size_t i = 0; i < s.required.size(); ++i) out += (i ? ", " : "") + s.required[i];
  if (!s.optional.empty()) out += " (and optionally " + s.optional[0] + ")";
  return out;
}

// A hint for an operand name the op does not have: the other op family's source (`C` on a conv,
// `residual` on a gemm), a change of case for single letters (`c` for `C`; any two letters are one edit
// apart, so nothing else is worth suggesting), a near miss for longer names (`residul`).
std::string operandNameHint(Op op, const std::string& n, const std::vector<std::string>& names) {
  std::string source = sourceOperandName(op);
  if (op != Op::Gemm && (n == "C" || n == "c"))
    return ", did you mean `" + source + "`? A convolution's source operand is `" + source +
           "`, laid out like its output `" + outputOperandName(op) + "`";
  if (op == Op::Gemm && n == sourceOperandName(Op::Conv2dFprop))
    return ", did you mean `C`? `residual` is a convolution's source operand; gemm's is `C`";
  if (n.size() > 1) return suggest(n, names);
  for (const std::string& candidate : names)
    if (candidate.size() == 1 && std::toupper(static_cast<unsigned char>(n[0])) == candidate[0])
      return ", did you mean `" + candidate + "`?";
  return "";
}

bool tensorCoreInput(DType t) { return t != DType::F64 && t != DType::S32; }

std::optional<DType> readDType(KernelCheck& c, const RawOperand& o) {
  const Value& v = o.dtype;
  if (v.isWord(WordCategory::DType))
    if (auto t = fromName(kAllDTypes, v.asString())) return t;
  std::string msg = "the dtype of `" + o.name + "` must be one of " + quotedList(wordsOf(WordCategory::DType)) +
                    ", not " + describe(v);
  c.diags.error(DiagKind::OperandDtype, o.dtypeLoc, msg + wordHint(v, wordsOf(WordCategory::DType)));
  return std::nullopt;
}

// The element types each role can take, on every path.
bool checkDTypeForRole(KernelCheck& c, const RawOperand& o, DType t, Role role) {
  std::string tn = name(t);
  if (t == DType::F64) {
    c.diags.error(DiagKind::OperandDtype, o.dtypeLoc,
                  "`" + o.name + "` is f64, which no kdl path supports (there is no f64 tensor-core path)");
    return false;
  }
  if (role == Role::Input && !tensorCoreInput(t)) {
    c.diags.error(DiagKind::OperandDtype, o.dtypeLoc,
                  "input `" + o.name + "` cannot be " + tn +
                      "; tensor cores take f16, bf16, tf32 (or f32), e4m3, e5m2, s8 or u8");
    return false;
  }
  if (role != Role::Input && t == DType::TF32) {
    c.diags.error(DiagKind::OperandDtype, o.dtypeLoc,
                  "`" + o.name + "` cannot be tf32, which is a math mode, not a storage type; store `f32`");
    return false;
  }
  if (isFloat8(t) && c.arch && archNumber(c.arch->value) < 89) {
    Diagnostic& d = c.diags.error(DiagKind::ArchFeature, o.dtypeLoc,
                                  "`" + o.name + "` is " + tn + ", and fp8 needs sm89 or newer, not " +
                                      name(c.arch->value));
    c.noteArch(d);
    return false;
  }
  return true;
}

std::optional<Layout> readLayout(KernelCheck& c, const RawOperand& o) {
  const Value& v = o.layout;
  if (v.isWord(WordCategory::Layout))
    if (auto l = fromName(kAllLayouts, v.asString())) return l;
  std::vector<std::string> words = wordsOf(WordCategory::Layout);
  std::string msg = "the layout of `" + o.name + "` must be one of " + quotedList(words) + ", not " + describe(v);
  c.diags.error(DiagKind::OperandLayout, o.layoutLoc, msg + wordHint(v, words));
  return std::nullopt;
}

// gemm operands are matrices (row/col); convolution tensors are NHWC activations and KRSC filters, and
// the residual is laid out like the op's output.
bool checkLayoutForOp(KernelCheck& c, const RawOperand& o, Layout l, Op op) {
  if (op == Op::Gemm) {
    if (l == Layout::Row || l == Layout::Col) return true;
    c.diags.error(DiagKind::OperandLayout, o.layoutLoc,
                  std::string("gemm operand `") + o.name + "` must be `row` or `col`, not `" + name(l) + "`");
    return false;
  }
  bool isSource = o.name == sourceOperandName(op);
  Layout want = convTensorLayout(isSource ? outputOperandName(op) : o.name);
  if (l == want) return true;
  std::string like = isSource ? std::string(" (laid out like its output `") + outputOperandName(op) + "`)" : "";
  c.diags.error(DiagKind::OperandLayout, o.layoutLoc,
                std::string(name(op)) + " takes `" + o.name + "` as `" + name(want) + "`" + like + ", not `" +
                    name(l) + "`");
  return false;
}

// Alignment in elements: a power of two whose bytes divide 16 (one 128-bit access); the default is
// the widest, 16 bytes.
std::optional<int> readAlign(KernelCheck& c, const RawOperand& o, DType t) {
  int widest = 16 / bytesOf(t);
  if (o.align.isNone()) return widest;
  std::vector<std::string> legal;
  for (int a = 1; a <= widest; a *= 2) legal.push_back(std::to_string(a));
  std::string legalText = quotedList(legal);
  const Value& v = o.align;
  if (!v.isInt()) {
    c.diags.error(DiagKind::Alignment, o.alignLoc,
                  "the alignment of `" + o.name + "` must be an int (elements), not " + describe(v) + "; use " +
                      legalText);
    return std::nullopt;
  }
  int64_t a = v.asInt();
  bool powerOfTwo = a > 0 && (a & (a - 1)) == 0;
  if (!powerOfTwo || a > widest) {
    c.diags.error(DiagKind::Alignment, o.alignLoc,
                  "align " + std::to_string(a) + " is not legal for " + name(t) + " operand `" + o.name +
                      "`: the alignment must be a power of two whose bytes (" + std::to_string(bytesOf(t)) +
                      " per element) divide 16; use " + legalText);
    return std::nullopt;
  }
  return static_cast<int>(a);
}

std::optional<Operand> readOperand(KernelCheck& c, const RawOperand& o, std::optional<Op> op) {
  std::optional<DType> t = readDType(c, o);
  bool ok = t.has_value();
  if (t && op) ok = checkDTypeForRole(c, o, *t, roleOf(*op, o.name));
  std::optional<Layout> l = readLayout(c, o);
  if (l && op) ok &= checkLayoutForOp(c, o, *l, *op);
  std::optional<int> align = t ? readAlign(c, o, *t) : std::nullopt;
  Operand out;
  ok &= readScaleBlock(c, o, out);
  if (!ok || !l || !align) return std::nullopt;
  out.name = o.name;
  out.dtype = *t;
  out.layout = *l;
  out.align = *align;
  out.loc = o.loc;
  out.alignOrigin = o.align.isNone() ? Origin::Default : Origin::Explicit;
  out.alignLoc = o.align.isNone() ? o.loc : o.alignLoc;
  return out;
}

// The accumulator: f32 for float inputs, s32 for integer ones (the default, and the only choice the
// MMA paths have).
void resolveAccum(KernelCheck& c) {
  if (!c.inputA) return;
  DType want = isInteger(*c.inputA) ? DType::S32 : DType::F32;
  if (!c.accum) {
    if (!c.given("accum")) c.accum = c.defaulted(want);
    return;
  }
  if (c.accum->value != want) {
    c.diags.error(DiagKind::OperandDtype, c.accum->loc,
                  std::string("accum must be ") + name(want) + " for " + name(*c.inputA) + " operands, not " +
                      name(c.accum->value));
    c.accum.reset();
  }
}

void checkInputKinds(KernelCheck& c, const RawOperand& a, const RawOperand& b) {
  if (isInteger(*c.inputA) == isInteger(*c.inputB)) return;
  c.diags
      .error(DiagKind::OperandDtype, b.dtypeLoc,
             "`" + b.name + "` is " + name(*c.inputB) + " but `" + a.name + "` is " + name(*c.inputA) +
                 "; an MMA cannot mix integer and floating-point inputs")
      .notes.push_back({a.dtypeLoc, "`" + a.name + "` declared " + name(*c.inputA) + " here"});
  c.inputA.reset();
  c.inputB.reset();
}

}  // namespace

void checkOperands(KernelCheck& c) {
  std::optional<Op> op = c.op ? std::optional<Op>(c.op->value) : std::nullopt;
  std::map<std::string, const RawOperand*> seen;
  std::map<std::string, Operand> usable;
  for (const RawOperand& o : c.raw.operands) {
    if (auto [it, inserted] = seen.emplace(o.name, &o); !inserted) {
      c.diags.error(DiagKind::OperandSet, o.nameLoc, "operand `" + o.name + "` is declared twice")
          .notes.push_back({it->second->nameLoc, "first declared here"});
      c.operandsBroken = true;
      continue;
    }
    if (op) {
      OperandSet s = operandSet(*op);
      std::vector<std::string> all = s.required;
      all.insert(all.end(), s.optional.begin(), s.optional.end());
      if (std::find(all.begin(), all.end(), o.name) == all.end()) {
        c.diags.error(DiagKind::OperandSet, o.nameLoc,
                      describeSet(*op) + "; `" + o.name + "` is not one of them" + operandNameHint(*op, o.name, all));
        c.operandsBroken = true;
        continue;
      }
    }
    if (std::optional<Operand> parsed = readOperand(c, o, op))
      usable.emplace(o.name, *parsed);
    else
      c.operandsBroken = true;
  }
  if (!op) {
    c.operandsBroken = true;
    return;
  }

  OperandSet s = operandSet(*op);
  std::vector<std::string> missing;
  for (const std::string& n : s.required)
    if (!seen.count(n)) missing.push_back(n);
  if (!missing.empty()) {
    c.diags.error(DiagKind::OperandSet, c.raw.nameLoc,
                  describeSet(*op) + "; " + quotedList(missing, " and ") + (missing.size() == 1 ? " is" : " are") +
                      " missing (declare them like `" + missing[0] + " : bf16 " +
                      (*op == Op::Gemm ? "row" : name(convTensorLayout(missing[0]))) + ";`)");
    c.operandsBroken = true;
  }

  auto in = inputOperandNames(*op);
  if (usable.count(in[0]) && usable.count(in[1])) {
    c.inputA = usable.at(in[0]).dtype;
    c.inputB = usable.at(in[1]).dtype;
    checkInputKinds(c, *seen.at(in[0]), *seen.at(in[1]));
  }
  resolveAccum(c);

  // The spec's order: the two inputs, the source if any, the output (gemm A, B, [C], D; conv e.g.
  // X, W, [residual], Y).
  std::vector<std::string> order = {in[0], in[1], sourceOperandName(*op), outputOperandName(*op)};
  for (const std::string& n : order)
    if (auto it = usable.find(n); it != usable.end()) c.operands.push_back(it->second);
}

}  // namespace kdl::validation
