// The epilogue: declared names, typed expression trees, and outputs each assigned exactly once.
// Without an epilogue block the kernel gets the implicit D = alpha * acc (+ beta * C); a convolution's
// alike with its output and `residual`.
#include <cctype>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "dsl/check/cpp_names.h"
#include "dsl/check/validate_rules.h"
#include "dsl/words.h"

namespace kdl::validation {
namespace {

// Expressions compute numbers (f32); comparisons give booleans, which only select's condition takes;
// a dtype is only cast's first argument.
enum class EType { Number, Bool, DType };

struct Typed {
  EpiNode node;
  EType type;
};

// What a name in the epilogue refers to.
struct Symbol {
  enum class Kind { Acc, Source, Param, Input, Let, Output, Operand };
  Kind kind;
  int index = -1;
  SourceLoc loc;
};

// Where an expression stands: output expressions other than the main one may read the main output.
enum class Context { Let, MainOutput, ExtraOutput };

// Expression nesting beyond this is reported rather than recursed into.
constexpr int kMaxDepth = 200;

const char* signatureOf(std::string_view fn) {
  static const std::map<std::string_view, const char*> sigs = {
      {"min", "(a, b)"},     {"max", "(a, b)"},      {"abs", "(x)"},          {"clamp", "(x, lo, hi)"},
      {"exp", "(x)"},        {"log", "(x)"},         {"sqrt", "(x)"},         {"rsqrt", "(x)"},
      {"tanh", "(x)"},       {"sigmoid", "(x)"},     {"relu", "(x)"},         {"gelu", "(x)"},
      {"gelu_tanh", "(x)"},  {"silu", "(x)"},        {"leaky_relu", "(x, slope)"},
      {"select", "(cond, a, b)"}, {"cast", "(dtype, x)"}};
  auto it = sigs.find(fn);
  return it == sigs.end() ? "" : it->second;
}

EpiOp functionOp(std::string_view fn) {
  static const std::map<std::string_view, EpiOp> ops = {
      {"min", EpiOp::Min},         {"max", EpiOp::Max},           {"abs", EpiOp::Abs},
      {"clamp", EpiOp::Clamp},     {"exp", EpiOp::Exp},           {"log", EpiOp::Log},
      {"sqrt", EpiOp::Sqrt},       {"rsqrt", EpiOp::Rsqrt},       {"tanh", EpiOp::Tanh},
      {"sigmoid", EpiOp::Sigmoid}, {"relu", EpiOp::Relu},         {"gelu", EpiOp::Gelu},
      {"gelu_tanh", EpiOp::GeluTanh}, {"silu", EpiOp::Silu},      {"leaky_relu", EpiOp::LeakyRelu},
      {"select", EpiOp::Select},   {"cast", EpiOp::Cast}};
  auto it = ops.find(fn);
  return it == ops.end() ? EpiOp::Const : it->second;
}

EpiOp binaryOp(ast::BinaryOp op) {
  switch (op) {
    case ast::BinaryOp::Add: return EpiOp::Add;
    case ast::BinaryOp::Sub: return EpiOp::Sub;
    case ast::BinaryOp::Mul: return EpiOp::Mul;
    case ast::BinaryOp::Div: return EpiOp::Div;
    case ast::BinaryOp::Lt: return EpiOp::Lt;
    case ast::BinaryOp::Le: return EpiOp::Le;
    case ast::BinaryOp::Gt: return EpiOp::Gt;
    case ast::BinaryOp::Ge: return EpiOp::Ge;
    case ast::BinaryOp::Eq: return EpiOp::Eq;
    case ast::BinaryOp::Ne: return EpiOp::Ne;
    case ast::BinaryOp::And: return EpiOp::And;
    case ast::BinaryOp::Or: return EpiOp::Or;
    case ast::BinaryOp::Mod: break;
  }
  return EpiOp::Const;
}

EpiNode makeNode(EpiOp op, SourceLoc loc, std::vector<EpiNode> args = {}, int index = -1) {
  EpiNode n;
  n.op = op;
  n.loc = loc;
  n.index = index;
  n.args = std::move(args);
  return n;
}

class EpilogueBuilder {
 public:
  EpilogueBuilder(KernelCheck& c, const RawEpilogue& raw) : c_(c), raw_(raw), op_(c.op->value) {}

  Epilogue build() {
    epi_.loc = raw_.loc;
    epi_.sourceName = sourceOperandName(op_);
    declareBuiltins();
    for (const RawEpilogueItem& item : raw_.items) declare(item);
    for (const RawEpilogueItem& item : raw_.items) define(item);
    checkAllAssigned();
    warnUnused();
    return std::move(epi_);
  }

 private:
  KernelCheck& c_;
  const RawEpilogue& raw_;
  Op op_;
  Epilogue epi_;
  std::map<std::string, Symbol> symbols_;
  std::map<std::string, std::string> leadingDimensions_;  // ld<x> of each extra tensor output -> the output
  std::vector<std::optional<SourceLoc>> assignedAt_;  // per output
  Context context_ = Context::Let;
  bool depthReported_ = false;
  bool strayAssignment_ = false;  // an assignment to something that is not an output was reported
  std::map<std::string, bool> used_;  // params and inputs read somewhere

  const std::string mainName() const { return outputOperandName(op_); }

  // ---- declarations --------------------------------------------------------------------------------

  void declareBuiltins() {
    symbols_["acc"] = Symbol{Symbol::Kind::Acc, -1, SourceLoc{}};
    for (const RawOperand& o : c_.raw.operands) {
      if (o.name == sourceOperandName(op_))
        symbols_[o.name] = Symbol{Symbol::Kind::Source, -1, o.nameLoc};
      else if (o.name != mainName())
        symbols_[o.name] = Symbol{Symbol::Kind::Operand, -1, o.nameLoc};
    }
    EpiOutput main;
    main.kind = EpiOutput::Kind::Main;
    main.name = mainName();
    if (const Operand* o = findOperand(mainName())) {
      main.dtype = o->dtype;
      main.layout = o->layout;
      main.loc = o->loc;
    } else {
      main.dtype = DType::F32;
    }
    epi_.outputs.push_back(main);
    assignedAt_.push_back(std::nullopt);
    symbols_[mainName()] = Symbol{Symbol::Kind::Output, 0, main.loc};
  }

  const Operand* findOperand(const std::string& n) const {
    for (const Operand& o : c_.operands)
      if (o.name == n) return &o;
    return nullptr;
  }

  // An extra tensor output X also declares the member ld<x> (lower case) in the generated API: it must
  // not be a name declared before, nor the leading dimension of another output (`Aux` and `aux`).
  bool claimLeadingDimension(const std::string& output, SourceLoc loc) {
    std::string ld = "ld";
    for (char ch : output) ld += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    auto [it, fresh] = leadingDimensions_.emplace(ld, output);
    std::string clash = !fresh ? "output `" + it->second + "`'s leading dimension"
                        : symbols_.count(ld) ? "a name declared before"
                                              : "";
    if (clash.empty()) return true;
    c_.diags.error(DiagKind::EpilogueName, loc,
                   "output `" + output + "` has the leading dimension `" + ld + "` in the generated C++ API, which is " +
                       clash + "; pick another name");
    return false;
  }

  // Reports a name declared twice; true when `name` is free.
  bool claimName(const std::string& name, SourceLoc loc) {
    if (auto ld = leadingDimensions_.find(name); ld != leadingDimensions_.end()) {
      c_.diags.error(DiagKind::EpilogueName, loc,
                     "`" + name + "` is the leading dimension of output `" + ld->second +
                         "` in the generated C++ API; pick another name");
      return false;
    }
    // Epilogue names become C++ names in the generated API (dsl/check/cpp_names.h).
    CppNameUse use = op_ == Op::Gemm ? CppNameUse::Epilogue : CppNameUse::ConvEpilogue;
    if (std::string why = cppNameProblem(name, use); !why.empty()) {
      std::string shown = name.size() > 80 ? name.substr(0, 80) + "..." : name;
      c_.diags.error(DiagKind::EpilogueName, loc, "`" + shown + "` " + why + "; pick another name");
      return false;
    }
    auto it = symbols_.find(name);
    if (it == symbols_.end()) return true;
    const Symbol& s = it->second;
    std::string what;
    switch (s.kind) {
      case Symbol::Kind::Acc: what = "`acc` is the accumulator"; break;
      case Symbol::Kind::Source: what = "`" + name + "` is the source operand"; break;
      case Symbol::Kind::Operand: what = "`" + name + "` is an operand of the kernel"; break;
      case Symbol::Kind::Output:
        what = s.index == 0 ? "`" + name + "` is the op's output" : "`" + name + "` is already declared";
        break;
      default: what = "`" + name + "` is already declared"; break;
    }
    Diagnostic& d = c_.diags.error(DiagKind::EpilogueName, loc, what + "; pick another name");
    if (s.loc.valid()) d.notes.push_back({s.loc, "`" + name + "` declared here"});
    return false;
  }

  std::optional<DType> readDType(const Value& v, SourceLoc loc, const std::string& what) {
    if (v.isWord(WordCategory::DType))
      if (auto t = fromName(kAllDTypes, v.asString())) {
        if (*t != DType::F64) return t;
        c_.diags.error(DiagKind::OperandDtype, loc, what + " cannot be f64; epilogues compute in f32");
        return std::nullopt;
      }
    std::string msg = what + " must be a dtype such as `f32`, not " +
                      describe(v);
    c_.diags.error(DiagKind::OperandDtype, loc, msg + wordHint(v, wordsOf(WordCategory::DType)));
    return std::nullopt;
  }

  void declareParam(const RawEpilogueItem& item) {
    if (!item.dtype.isNone() && !item.dtype.isWord(WordCategory::DType)) {
      readDType(item.dtype, item.dtypeLoc, "the type of param `" + item.name + "`");
    } else if (!item.dtype.isNone() && item.dtype.asString() != "f32") {
      c_.diags.error(DiagKind::EpilogueType, item.dtypeLoc,
                     "param `" + item.name + "` is an f32 scalar, not " + item.dtype.asString() +
                         "; epilogues compute in f32");
    }
    const Value& v = item.defaultValue;
    double value = 0;
    if (!v.isNumber() || !std::isfinite(v.asFloat())) {
      c_.diags.error(DiagKind::EpilogueType, item.defaultLoc.valid() ? item.defaultLoc : item.loc,
                     "the default of param `" + item.name + "` must be a finite number, not " +
                         describe(v));
    } else {
      value = v.asFloat();
    }
    if (!claimName(item.name, item.nameLoc)) return;
    symbols_[item.name] = Symbol{Symbol::Kind::Param, static_cast<int>(epi_.params.size()), item.nameLoc};
    epi_.params.push_back(EpiParam{item.name, value, item.nameLoc});
  }

  std::optional<Broadcast> readBroadcast(const RawEpilogueItem& item) {
    bool gemm = op_ == Op::Gemm;
    const std::string& b = item.broadcast;
    if (b.empty()) return Broadcast::Scalar;
    if (gemm && b == "row") return Broadcast::Row;
    if (gemm && b == "col") return Broadcast::Col;
    if (!gemm && b == "channel") return Broadcast::Channel;
    std::vector<std::string> legal = gemm ? std::vector<std::string>{"row", "col"} : std::vector<std::string>{"channel"};
    c_.diags.error(DiagKind::EpilogueBroadcast, item.broadcastLoc.valid() ? item.broadcastLoc : item.loc,
                   std::string(name(op_)) + " inputs broadcast as " + quotedList(legal) +
                       (gemm ? " (one value per output row m or column n)" : " (" + channelMeaning() + ")") +
                       " or `[]` (one scalar), not `[" + b + "]`" + suggest(b, legal));
    return std::nullopt;
  }

  // What `[channel]` indexes: the channels of the op's output.
  std::string channelMeaning() const {
    switch (op_) {
      case Op::Conv2dFprop: return "one value per output channel k of `Y`";
      case Op::Conv2dDgrad: return "one value per channel c of `X`";
      case Op::Conv2dWgrad: return "one value per filter k of `W`";
      case Op::Gemm: break;
    }
    return "one value per output channel";
  }

  void declareInput(const RawEpilogueItem& item) {
    std::optional<DType> t = readDType(item.dtype, item.dtypeLoc, "the dtype of input `" + item.name + "`");
    std::optional<Broadcast> b = readBroadcast(item);
    if (!claimName(item.name, item.nameLoc)) return;
    symbols_[item.name] = Symbol{Symbol::Kind::Input, static_cast<int>(epi_.inputs.size()), item.nameLoc};
    epi_.inputs.push_back(EpiInput{item.name, t.value_or(DType::F32), b.value_or(Broadcast::Scalar), item.nameLoc});
  }

  void declareOutput(const RawEpilogueItem& item) {
    if (item.name == mainName()) {
      c_.diags.error(DiagKind::EpilogueOutput, item.nameLoc,
                     "`" + item.name + "` is the op's output, declared as an operand; assign it with `" + item.name +
                         " = ...;`");
      return;
    }
    EpiOutput out;
    out.name = item.name;
    out.loc = item.nameLoc;
    out.kind = item.layout.isNone() ? EpiOutput::Kind::AmaxReduction : EpiOutput::Kind::Tensor;
    std::optional<DType> t = readDType(item.dtype, item.dtypeLoc, "the dtype of output `" + item.name + "`");
    out.dtype = t.value_or(DType::F32);
    if (t && out.kind == EpiOutput::Kind::AmaxReduction && *t != DType::F32)
      c_.diags.error(DiagKind::EpilogueOutput, item.dtypeLoc,
                     "output `" + item.name + "` has no layout, so it is an amax reduction, which is stored as f32, not " +
                         name(*t));
    if (t && *t == DType::TF32)
      c_.diags.error(DiagKind::OperandDtype, item.dtypeLoc,
                     "output `" + item.name + "` cannot be tf32, which is a math mode, not a storage type; store `f32`");
    if (out.kind == EpiOutput::Kind::Tensor) out.layout = readOutputLayout(item);
    if (!claimName(item.name, item.nameLoc)) return;
    symbols_[item.name] = Symbol{Symbol::Kind::Output, static_cast<int>(epi_.outputs.size()), item.nameLoc};
    epi_.outputs.push_back(out);
    assignedAt_.push_back(std::nullopt);
    if (out.kind == EpiOutput::Kind::Tensor) claimLeadingDimension(item.name, item.nameLoc);
  }

  // Extra tensors are shaped like the main output: row- or column-major matrices (gemm); a convolution's
  // are laid out like its output (Y and dX `nhwc`, dW `krsc`).
  Layout readOutputLayout(const RawEpilogueItem& item) {
    const std::vector<Layout> allowed = op_ == Op::Gemm ? std::vector<Layout>{Layout::Row, Layout::Col}
                                                        : std::vector<Layout>{convTensorLayout(mainName())};
    const Value& v = item.layout;
    if (v.isWord(WordCategory::Layout))
      for (Layout l : allowed)
        if (v.asString() == name(l)) return l;
    std::string msg = "extra output `" + item.name + "` must be `" + name(allowed[0]) + "`" +
                      (allowed.size() > 1 ? std::string(" or `") + name(allowed[1]) + "`" : std::string()) +
                      (op_ == Op::Gemm ? ", a matrix" : ", laid out like the op's output `" + mainName() + "`") +
                      ", not " + describe(v);
    if (!v.isWord(WordCategory::Layout)) msg += wordHint(v, wordsOf(WordCategory::Layout));
    c_.diags.error(DiagKind::OperandLayout, item.layoutLoc.valid() ? item.layoutLoc : item.loc, msg);
    return allowed[0];
  }

  void declare(const RawEpilogueItem& item) {
    switch (item.kind) {
      case ast::EpilogueItemKind::Param: declareParam(item); break;
      case ast::EpilogueItemKind::Input: declareInput(item); break;
      case ast::EpilogueItemKind::Output: declareOutput(item); break;
      case ast::EpilogueItemKind::Let:
      case ast::EpilogueItemKind::Assign: break;  // in order, by define()
    }
  }

  // ---- definitions, in order ---------------------------------------------------------------------

  void define(const RawEpilogueItem& item) {
    switch (item.kind) {
      case ast::EpilogueItemKind::Let: defineLet(item); break;
      case ast::EpilogueItemKind::Assign:
        if (item.expr) assign(item.name, item.nameLoc, *item.expr, item.loc);
        break;
      case ast::EpilogueItemKind::Output:
        if (item.expr && item.name != mainName()) assign(item.name, item.nameLoc, *item.expr, item.loc);
        break;
      case ast::EpilogueItemKind::Param:
      case ast::EpilogueItemKind::Input: break;
    }
  }

  void defineLet(const RawEpilogueItem& item) {
    std::optional<Typed> value;
    if (item.expr) {
      context_ = Context::Let;
      value = lowerNumber(*item.expr, "the value of a `let`");
    }
    if (!claimName(item.name, item.nameLoc)) return;
    // Declared even when its value is broken, so later uses do not report it as unknown.
    symbols_[item.name] = Symbol{Symbol::Kind::Let, static_cast<int>(epi_.lets.size()), item.nameLoc};
    epi_.lets.push_back(EpiLet{item.name, value ? value->node : EpiNode{}, item.nameLoc});
  }

  std::vector<std::string> outputNames() const {
    std::vector<std::string> names;
    for (const EpiOutput& o : epi_.outputs) names.push_back(o.name);
    return names;
  }

  void assign(const std::string& target, SourceLoc targetLoc, const EpiExpr& expr, SourceLoc stmtLoc) {
    auto it = symbols_.find(target);
    if (it == symbols_.end() || it->second.kind != Symbol::Kind::Output) {
      std::string what = it == symbols_.end() ? "not an output of this kernel"
                                              : describeNonOutput(it->second) + ", not an output";
      std::string msg = "`" + target + "` is " + what + "; the op's output is `" + mainName() +
                        "`, and further outputs are declared with `output NAME : dtype layout = ...;`";
      if (it == symbols_.end()) msg += suggest(target, outputNames());
      c_.diags.error(DiagKind::EpilogueOutput, targetLoc, msg);
      strayAssignment_ = true;
      return;
    }
    int index = it->second.index;
    if (assignedAt_[index]) {
      c_.diags.error(DiagKind::EpilogueOutput, targetLoc, "output `" + target + "` is assigned twice")
          .notes.push_back({*assignedAt_[index], "first assigned here"});
      return;
    }
    assignedAt_[index] = stmtLoc.valid() ? stmtLoc : targetLoc;
    EpiOutput& out = epi_.outputs[index];
    context_ = index == 0 ? Context::MainOutput : Context::ExtraOutput;
    if (out.kind == EpiOutput::Kind::AmaxReduction) {
      const EpiExpr* x = reductionOperand(expr);
      if (!x) {
        c_.diags.error(DiagKind::EpilogueOutput, expr.loc,
                       "an output without a layout is a reduction and must be `max(abs(x))`");
        return;
      }
      if (auto v = lowerNumber(*x, "the operand of `max(abs(...))`")) out.value = v->node;
      return;
    }
    if (auto v = lowerNumber(expr, "the value of output `" + target + "`")) out.value = v->node;
  }

  static const EpiExpr* reductionOperand(const EpiExpr& e) {
    if (e.kind != EpiExpr::Kind::Call || e.name != "max" || e.args.size() != 1) return nullptr;
    const EpiExpr& inner = e.args[0];
    if (inner.kind != EpiExpr::Kind::Call || inner.name != "abs" || inner.args.size() != 1) return nullptr;
    return &inner.args[0];
  }

  static std::string describeNonOutput(const Symbol& s) {
    switch (s.kind) {
      case Symbol::Kind::Acc: return "the accumulator";
      case Symbol::Kind::Source: return "the source operand (an input)";
      case Symbol::Kind::Operand: return "an input operand";
      case Symbol::Kind::Param: return "a param";
      case Symbol::Kind::Input: return "an input";
      case Symbol::Kind::Let: return "a let";
      case Symbol::Kind::Output: break;
    }
    return "an output";
  }

  void checkAllAssigned() {
    // After an assignment to a wrong name, "never assigned" would only repeat the same mistake.
    if (!assignedAt_[0] && !strayAssignment_)
      c_.diags.error(DiagKind::EpilogueOutput, raw_.loc.valid() ? raw_.loc : c_.raw.nameLoc,
                     "the epilogue never assigns the op's output `" + mainName() + "`; add `" + mainName() +
                         " = ...;` (e.g. `" + mainName() + " = acc;`)");
    for (size_t i = 1; i < epi_.outputs.size(); ++i)
      if (!assignedAt_[i])
        c_.diags.error(DiagKind::EpilogueOutput, epi_.outputs[i].loc,
                       "output `" + epi_.outputs[i].name + "` is never assigned");
  }

  // A param or input nothing reads is still an argument of the generated kernel; likely a slip.
  void warnUnused() {
    for (const EpiParam& p : epi_.params)
      if (!used_[p.name])
        c_.diags.warning(DiagKind::EpilogueName, p.loc, "param `" + p.name + "` is declared but never used");
    for (const EpiInput& i : epi_.inputs)
      if (!used_[i.name])
        c_.diags.warning(DiagKind::EpilogueName, i.loc, "input `" + i.name + "` is declared but never used");
  }

  // ---- expressions -----------------------------------------------------------------------------

  // Lowers `e` and requires a number (the final value of a let, an output, an argument).
  std::optional<Typed> lowerNumber(const EpiExpr& e, const std::string& what) {
    std::optional<Typed> t = lower(e, 0);
    if (t && !expect(*t, EType::Number, e.loc, what)) return std::nullopt;
    return t;
  }

  bool expect(const Typed& t, EType want, SourceLoc loc, const std::string& what) {
    if (t.type == want) return true;
    std::string msg;
    if (want == EType::Bool)
      msg = what + " must be a condition (a comparison such as `acc > 0`), not a number";
    else if (t.type == EType::Bool)
      msg = what + " must be a number, not a boolean; comparisons are only allowed as the condition of `select` or `?:`";
    else
      msg = what + " must be a number; a dtype is only allowed as the first argument of `cast`";
    c_.diags.error(DiagKind::EpilogueType, loc, msg);
    return false;
  }

  std::optional<Typed> lower(const EpiExpr& e, int depth) {
    if (depth > kMaxDepth) {
      if (!depthReported_)
        c_.diags.error(DiagKind::RecursionLimit, e.loc,
                       "epilogue expression nested deeper than " + std::to_string(kMaxDepth) + " levels");
      depthReported_ = true;
      return std::nullopt;
    }
    switch (e.kind) {
      case EpiExpr::Kind::Const: return lowerConst(e);
      case EpiExpr::Kind::Name: return lowerName(e);
      case EpiExpr::Kind::Call: return lowerCall(e, depth);
      case EpiExpr::Kind::Unary: return lowerUnary(e, depth);
      case EpiExpr::Kind::Binary: return lowerBinary(e, depth);
      case EpiExpr::Kind::Ternary: return lowerTernary(e, depth);
    }
    return std::nullopt;
  }

  // The evaluator builds operator nodes with their operand count; anything else is a kdlc bug, reported
  // rather than silently dropped.
  std::optional<Typed> malformed(const EpiExpr& e) {
    c_.diags.error(DiagKind::EpilogueType, e.loc,
                   "internal error: a malformed epilogue expression; please report this as a kdlc bug");
    return std::nullopt;
  }

  std::optional<Typed> lowerConst(const EpiExpr& e) {
    const Value& v = e.constant;
    if (v.isNumber() && std::isfinite(v.asFloat())) {
      EpiNode n = makeNode(EpiOp::Const, e.loc);
      n.constant = v.asFloat();
      return Typed{n, EType::Number};
    }
    if (v.isWord(WordCategory::DType))
      if (auto t = fromName(kAllDTypes, v.asString())) {
        EpiNode n = makeNode(EpiOp::Const, e.loc);
        n.castTo = *t;
        return Typed{n, EType::DType};
      }
    std::string what = v.isNumber() ? "the non-finite number `" + v.toString() + "`" : describe(v);
    c_.diags.error(DiagKind::EpilogueType, e.loc, "epilogue values are numbers; " + what + " cannot be used here");
    return std::nullopt;
  }

  std::vector<std::string> readableNames() const {
    std::vector<std::string> names;
    for (const auto& [n, s] : symbols_) {
      bool readable = s.kind != Symbol::Kind::Operand && s.kind != Symbol::Kind::Output;
      if (s.kind == Symbol::Kind::Output && s.index == 0 && context_ == Context::ExtraOutput) readable = true;
      if (readable) names.push_back(n);
    }
    return names;
  }

  // A read of the other op family's source (`C` in a convolution, `residual` in a gemm) points at this
  // op's; a source that is not declared says how to declare it; anything else gets a near miss.
  std::string undeclaredNameHint(const std::string& n) const {
    const std::string source = sourceOperandName(op_);
    const bool otherSource = n == sourceOperandName(op_ == Op::Gemm ? Op::Conv2dFprop : Op::Gemm);
    if (!otherSource && n != source) return suggest(n, readableNames());
    const Operand* out = findOperand(mainName());
    std::string layout = op_ == Op::Gemm ? (out ? name(out->layout) : "row") : name(convTensorLayout(mainName()));
    std::string declare = "`" + source + " : " + (out ? name(out->dtype) : "f16") + " " + layout + ";`";
    if (otherSource)
      return ", did you mean `" + source + "`? " + (op_ == Op::Gemm ? "A gemm" : "A convolution") +
             "'s source operand is `" + source + "`, declared among the kernel's operands like " + declare;
    return "; the source operand `" + source + "` is declared among the kernel's operands: add " + declare;
  }

  std::optional<Typed> lowerName(const EpiExpr& e) {
    auto it = symbols_.find(e.name);
    if (it == symbols_.end()) {
      if (auto t = fromName(kAllDTypes, e.name)) {
        EpiNode n = makeNode(EpiOp::Const, e.loc);
        n.castTo = *t;
        return Typed{n, EType::DType};
      }
      c_.diags.error(DiagKind::EpilogueName, e.loc,
                     "`" + e.name + "` is not declared in this epilogue" + undeclaredNameHint(e.name));
      return std::nullopt;
    }
    const Symbol& s = it->second;
    switch (s.kind) {
      case Symbol::Kind::Acc: return Typed{makeNode(EpiOp::Acc, e.loc), EType::Number};
      case Symbol::Kind::Source:
        epi_.usesSource = true;
        return Typed{makeNode(EpiOp::Source, e.loc), EType::Number};
      case Symbol::Kind::Param:
        used_[e.name] = true;
        return Typed{makeNode(EpiOp::Param, e.loc, {}, s.index), EType::Number};
      case Symbol::Kind::Input:
        used_[e.name] = true;
        return Typed{makeNode(EpiOp::Input, e.loc, {}, s.index), EType::Number};
      case Symbol::Kind::Let: return Typed{makeNode(EpiOp::Let, e.loc, {}, s.index), EType::Number};
      case Symbol::Kind::Output:
        if (s.index == 0 && context_ == Context::ExtraOutput)
          return Typed{makeNode(EpiOp::Output, e.loc, {}, 0), EType::Number};
        c_.diags.error(DiagKind::EpilogueName, e.loc,
                       s.index == 0 ? "`" + e.name +
                                          "` is the output being computed; only further outputs can read it "
                                          "(e.g. `output amax : f32 = max(abs(" + e.name + "));`)"
                                    : "output `" + e.name + "` cannot be read; only the op's output `" + mainName() +
                                          "` can, by further outputs");
        return std::nullopt;
      case Symbol::Kind::Operand: break;
    }
    std::string readable = "`acc` and the source operand `" + std::string(sourceOperandName(op_)) + "`";
    c_.diags.error(DiagKind::EpilogueName, e.loc,
                   "operand `" + e.name + "` cannot be read in the epilogue; it reads " + readable +
                       ", params, inputs and lets");
    return std::nullopt;
  }

  std::optional<Typed> lowerCall(const EpiExpr& e, int depth) {
    const EpilogueFunction* fn = lookupEpilogueFunction(e.name);
    SourceLoc nameLoc = e.nameLoc.valid() ? e.nameLoc : e.loc;
    if (!fn) {
      std::vector<std::string> names;
      for (const EpilogueFunction& f : epilogueFunctions()) names.emplace_back(f.name);
      c_.diags.error(DiagKind::EpilogueName, nameLoc,
                     "`" + e.name + "` is not an epilogue function" + suggest(e.name, names));
      return std::nullopt;
    }
    if (static_cast<int>(e.args.size()) != fn->arity) {
      std::string msg = "`" + e.name + "` takes " + std::to_string(fn->arity) +
                        (fn->arity == 1 ? " argument " : " arguments ") + signatureOf(e.name) + ", not " +
                        std::to_string(e.args.size());
      if (e.name == "max" && e.args.size() == 1)
        msg += "; `max(abs(x))` is a reduction only as the value of `output NAME : f32 = max(abs(x));`";
      c_.diags.error(DiagKind::EpilogueArity, e.loc, msg);
      return std::nullopt;
    }
    std::vector<std::optional<Typed>> args;
    for (const EpiExpr& a : e.args) args.push_back(lower(a, depth + 1));
    bool ok = true;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i]) {
        ok = false;
        continue;
      }
      EType want = EType::Number;
      if (e.name == "select" && i == 0) want = EType::Bool;
      if (e.name == "cast" && i == 0) want = EType::DType;
      std::string what = "argument " + std::to_string(i + 1) + " of `" + e.name + "`";
      if (want == EType::DType && args[i]->type != EType::DType) {
        c_.diags.error(DiagKind::EpilogueType, e.args[i].loc,
                       "the first argument of `cast` must be a dtype such as `bf16`");
        ok = false;
        continue;
      }
      ok &= expect(*args[i], want, e.args[i].loc, what);
    }
    if (!ok) return std::nullopt;
    EpiNode n = makeNode(functionOp(e.name), e.loc);
    if (e.name == "cast") {
      n.castTo = args[0]->node.castTo;
      if (n.castTo == DType::F64) {
        c_.diags.error(DiagKind::EpilogueType, e.args[0].loc, "`cast` to f64 is not available; epilogues compute in f32");
        return std::nullopt;
      }
      n.args.push_back(std::move(args[1]->node));
    } else {
      for (auto& a : args) n.args.push_back(std::move(a->node));
    }
    return Typed{std::move(n), EType::Number};
  }

  std::optional<Typed> lowerUnary(const EpiExpr& e, int depth) {
    if (e.args.size() != 1) return malformed(e);
    std::optional<Typed> x = lower(e.args[0], depth + 1);
    if (!x) return std::nullopt;
    switch (e.unaryOp) {
      case ast::UnaryOp::Plus:
        if (!expect(*x, EType::Number, e.args[0].loc, "the operand of unary `+`")) return std::nullopt;
        return x;
      case ast::UnaryOp::Neg:
        if (!expect(*x, EType::Number, e.args[0].loc, "the operand of `-`")) return std::nullopt;
        return Typed{makeNode(EpiOp::Neg, e.loc, {std::move(x->node)}), EType::Number};
      case ast::UnaryOp::Not:
        if (!expect(*x, EType::Bool, e.args[0].loc, "the operand of `!`")) return std::nullopt;
        return Typed{makeNode(EpiOp::Not, e.loc, {std::move(x->node)}), EType::Bool};
    }
    return std::nullopt;
  }

  std::optional<Typed> lowerBinary(const EpiExpr& e, int depth) {
    if (e.args.size() != 2) return malformed(e);
    std::optional<Typed> l = lower(e.args[0], depth + 1);
    std::optional<Typed> r = lower(e.args[1], depth + 1);
    if (e.binaryOp == ast::BinaryOp::Mod) {
      c_.diags.error(DiagKind::EpilogueType, e.loc, "`%` is not an epilogue operation; epilogues compute in f32");
      return std::nullopt;
    }
    if (!l || !r) return std::nullopt;
    EpiOp op = binaryOp(e.binaryOp);
    bool logical = op == EpiOp::And || op == EpiOp::Or;
    EType operand = logical ? EType::Bool : EType::Number;
    std::string what = std::string("an operand of `") + ast::binaryOpSpelling(e.binaryOp) + "`";
    bool ok = expect(*l, operand, e.args[0].loc, what);
    ok &= expect(*r, operand, e.args[1].loc, what);
    if (!ok) return std::nullopt;
    EType result = isBooleanOp(op) ? EType::Bool : EType::Number;
    return Typed{makeNode(op, e.loc, {std::move(l->node), std::move(r->node)}), result};
  }

  std::optional<Typed> lowerTernary(const EpiExpr& e, int depth) {
    if (e.args.size() != 3) return malformed(e);
    std::optional<Typed> parts[3];
    for (int i = 0; i < 3; ++i) parts[i] = lower(e.args[i], depth + 1);
    if (!parts[0] || !parts[1] || !parts[2]) return std::nullopt;
    bool ok = expect(*parts[0], EType::Bool, e.args[0].loc, "the condition of `?:`");
    ok &= expect(*parts[1], EType::Number, e.args[1].loc, "a branch of `?:`");
    ok &= expect(*parts[2], EType::Number, e.args[2].loc, "a branch of `?:`");
    if (!ok) return std::nullopt;
    return Typed{makeNode(EpiOp::Select, e.loc,
                          {std::move(parts[0]->node), std::move(parts[1]->node), std::move(parts[2]->node)}),
                 EType::Number};
  }
};

// D = alpha * acc (+ beta * C when C is declared), located at the kernel's name; a convolution's alike:
// Y = alpha * acc (+ beta * residual), the GEMM's scaling, so that `beta` blends a residual in (beta = 1:
// Y = acc + residual) and the same arguments mean the same on both ops.
Epilogue implicitEpilogue(const KernelCheck& c) {
  Epilogue epi;
  epi.implicit = true;
  epi.loc = c.raw.nameLoc;
  epi.sourceName = sourceOperandName(c.op->value);
  SourceLoc at = c.raw.nameLoc;
  bool hasSource = false;
  for (const RawOperand& o : c.raw.operands) hasSource |= o.name == epi.sourceName;
  epi.params.push_back(EpiParam{"alpha", 1.0, at});
  EpiNode value = makeNode(EpiOp::Mul, at, {makeNode(EpiOp::Param, at, {}, 0), makeNode(EpiOp::Acc, at)});
  if (hasSource) {
    epi.params.push_back(EpiParam{"beta", 0.0, at});
    EpiNode scaled = makeNode(EpiOp::Mul, at, {makeNode(EpiOp::Param, at, {}, 1), makeNode(EpiOp::Source, at)});
    value = makeNode(EpiOp::Add, at, {std::move(value), std::move(scaled)});
    epi.usesSource = true;
  }
  EpiOutput main;
  main.kind = EpiOutput::Kind::Main;
  main.name = outputOperandName(c.op->value);
  main.dtype = DType::F32;
  for (const Operand& o : c.operands)
    if (o.name == main.name) {
      main.dtype = o.dtype;
      main.layout = o.layout;
      main.loc = o.loc;
    }
  main.value = std::move(value);
  epi.outputs.push_back(std::move(main));
  return epi;
}

}  // namespace

void checkEpilogue(KernelCheck& c) {
  if (!c.op) return;
  if (!c.raw.epilogue) {
    c.epilogue = implicitEpilogue(c);
    return;
  }
  c.epilogue = EpilogueBuilder(c, *c.raw.epilogue).build();
}

}  // namespace kdl::validation
