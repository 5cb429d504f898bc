#include "codegen/epilogue_expr.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "codegen/emit_internal.h"
#include "codegen/plan.h"

namespace kdl::codegen {

std::string floatLiteral(double v) {
  if (std::isnan(v)) return "__int_as_float(0x7fffffff)";
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  float f = static_cast<float>(v);
  if (std::isinf(f)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  std::string s = fmt::format("{}", f);  // shortest round-trip form of the float
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  else if (s.find('.') == std::string::npos && s.find('e') != std::string::npos) {
    // "1e-05" is a valid float literal with an f suffix; keep it
  }
  return s + "f";
}

bool isBoolExpr(const Epilogue& e, const EpiNode& n) {
  if (isBooleanOp(n.op)) return true;
  if (n.op == EpiOp::Let && n.index >= 0 && size_t(n.index) < e.lets.size()) return isBoolExpr(e, e.lets[n.index].value);
  return false;
}

static std::string asFloat(const Epilogue& e, const EpiNode& n) {
  std::string s = cppExpr(e, n);
  return isBoolExpr(e, n) ? fmt::format("({} ? 1.0f : 0.0f)", s) : s;
}
static std::string asBool(const Epilogue& e, const EpiNode& n) {
  std::string s = cppExpr(e, n);
  return isBoolExpr(e, n) ? s : fmt::format("({} != 0.0f)", s);
}

static std::string castExpr(DType t, const std::string& x) {
  switch (t) {
    case DType::F32: case DType::F64: return x;
    case DType::TF32: return fmt::format("__uint_as_float(::kdl::float_to_tf32(__float_as_uint({})))", x);
    default: {
      const std::string c = cppQualified(cppElementType(t));
      return fmt::format("::kdl::to_float<{0}>(::kdl::convert_out<{0}>({1}))", c, x);
    }
  }
}

std::string cppExpr(const Epilogue& e, const EpiNode& n) {
  auto a = [&](size_t i) { return asFloat(e, n.args.at(i)); };
  auto call = [&](const char* f) {
    std::string s = fmt::format("::kdl::{}(", f);
    for (size_t i = 0; i < n.args.size(); ++i) s += (i ? ", " : "") + a(i);
    return s + ")";
  };
  auto bin = [&](const char* op) { return fmt::format("({} {} {})", a(0), op, a(1)); };
  switch (n.op) {
    case EpiOp::Const: return floatLiteral(n.constant);
    case EpiOp::Acc: return "acc[i]";
    case EpiOp::Source: return "src_C[i]";
    case EpiOp::Param: return "p." + e.params.at(n.index).name;
    case EpiOp::Input: {
      const EpiInput& in = e.inputs.at(n.index);
      return in.broadcast == Broadcast::Scalar ? "in_" + in.name : "in_" + in.name + "[i]";
    }
    case EpiOp::Let: return "let_" + e.lets.at(n.index).name;
    case EpiOp::Output: return "out_" + e.outputs.at(n.index).name + "[i]";
    case EpiOp::Neg: {
      // A negative literal or a folded negative constant must not meet the minus: "(--2.0f)" is a decrement.
      const std::string x = a(0);
      return x.starts_with('-') ? fmt::format("(-({}))", x) : fmt::format("(-{})", x);
    }
    case EpiOp::Add: return bin("+");
    case EpiOp::Sub: return bin("-");
    case EpiOp::Mul: return bin("*");
    case EpiOp::Div: return bin("/");
    case EpiOp::Lt: return bin("<");
    case EpiOp::Le: return bin("<=");
    case EpiOp::Gt: return bin(">");
    case EpiOp::Ge: return bin(">=");
    case EpiOp::Eq: return bin("==");
    case EpiOp::Ne: return bin("!=");
    case EpiOp::And: return fmt::format("({} && {})", asBool(e, n.args.at(0)), asBool(e, n.args.at(1)));
    case EpiOp::Or: return fmt::format("({} || {})", asBool(e, n.args.at(0)), asBool(e, n.args.at(1)));
    case EpiOp::Not: return fmt::format("(!{})", asBool(e, n.args.at(0)));
    case EpiOp::Min: return call("min");
    case EpiOp::Max: return call("max");
    case EpiOp::Abs: return call("abs");
    case EpiOp::Clamp: return call("clamp");
    case EpiOp::Exp: return call("exp");
    case EpiOp::Log: return call("log");
    case EpiOp::Sqrt: return call("sqrt");
    case EpiOp::Rsqrt: return call("rsqrt");
    case EpiOp::Tanh: return call("tanh");
    case EpiOp::Sigmoid: return call("sigmoid");
    case EpiOp::Relu: return call("relu");
    case EpiOp::Gelu: return call("gelu");
    case EpiOp::GeluTanh: return call("gelu_tanh");
    case EpiOp::Silu: return call("silu");
    case EpiOp::LeakyRelu: return call("leaky_relu");
    case EpiOp::Select:
      return fmt::format("::kdl::select({}, {}, {})", asBool(e, n.args.at(0)), a(1), a(2));
    case EpiOp::Cast: return castExpr(n.castTo, a(0));
  }
  return "0.0f";
}

// ---- source-like text ----------------------------------------------------------------------------

static int precedence(EpiOp op) {
  switch (op) {
    case EpiOp::Or: return 1;
    case EpiOp::And: return 2;
    case EpiOp::Eq: case EpiOp::Ne: return 3;
    case EpiOp::Lt: case EpiOp::Le: case EpiOp::Gt: case EpiOp::Ge: return 4;
    case EpiOp::Add: case EpiOp::Sub: return 5;
    case EpiOp::Mul: case EpiOp::Div: return 6;
    case EpiOp::Neg: case EpiOp::Not: return 7;
    default: return 8;
  }
}

// The epilogue functions (min .. select) keep their KDL names in C++ (kdl::relu, ...); cast is not one.
static const char* funcName(EpiOp op) { return op >= EpiOp::Min && op <= EpiOp::Select ? name(op) : nullptr; }

static const char* binOp(EpiOp op) { return infixSpelling(op); }

// The operand a Source node reads: a GEMM's C (whose output is D), a convolution's `residual`.
static const char* sourceName(const Epilogue& e) {
  return e.outputs.empty() || e.outputs[0].name == "D" ? "C" : "residual";
}

std::string renderExpr(const Epilogue& e, const EpiNode& n) {
  auto sub = [&](const EpiNode& c, int minPrec) {
    std::string s = renderExpr(e, c);
    return precedence(c.op) < minPrec ? "(" + s + ")" : s;
  };
  switch (n.op) {
    case EpiOp::Const: {
      // A value that is exactly a float (a folded constant) in the float's shortest form: 1.3995715, not
      // 1.3995715379714966; a literal as written keeps its double form.
      const float f = static_cast<float>(n.constant);
      if (std::isfinite(n.constant) && static_cast<double>(f) == n.constant) return fmt::format("{}", f);
      return fmt::format("{}", n.constant);
    }
    case EpiOp::Acc: return "acc";
    case EpiOp::Source: return sourceName(e);
    case EpiOp::Param: return e.params.at(n.index).name;
    case EpiOp::Input: return e.inputs.at(n.index).name;
    case EpiOp::Let: return e.lets.at(n.index).name;
    case EpiOp::Output: return e.outputs.at(n.index).name;
    case EpiOp::Neg: {
      const std::string x = sub(n.args.at(0), 7);
      return x.starts_with('-') ? "-(" + x + ")" : "-" + x;
    }
    case EpiOp::Not: return "!" + sub(n.args.at(0), 7);
    case EpiOp::Cast: return fmt::format("cast({}, {})", dtypeWord(n.castTo), renderExpr(e, n.args.at(0)));
    default: break;
  }
  if (const char* op = binOp(n.op)) {
    int p = precedence(n.op);
    return fmt::format("{} {} {}", sub(n.args.at(0), p), op, sub(n.args.at(1), p + 1));
  }
  std::string s = std::string(funcName(n.op) ? funcName(n.op) : "?") + "(";
  for (size_t i = 0; i < n.args.size(); ++i) s += (i ? ", " : "") + renderExpr(e, n.args[i]);
  return s + ")";
}

std::string renderEpilogueSummary(const Epilogue& e) {
  std::string s;
  for (const EpiLet& l : e.lets) s += fmt::format("let {} = {}; ", l.name, renderExpr(e, l.value));
  for (size_t i = 0; i < e.outputs.size(); ++i) {
    const EpiOutput& o = e.outputs[i];
    if (i) s += "; ";
    if (o.kind == EpiOutput::Kind::AmaxReduction)
      s += fmt::format("{} = max(abs({}))", o.name, renderExpr(e, o.value));
    else
      s += fmt::format("{} = {}", o.name, renderExpr(e, o.value));
  }
  return s;
}

namespace {
int countOps(const EpiNode& n, EpiOp op) {
  int c = n.op == op;
  for (const EpiNode& a : n.args) c += countOps(a, op);
  return c;
}
}  // namespace

bool hasAmax(const Epilogue& e) {
  for (const EpiOutput& o : e.outputs)
    if (o.kind == EpiOutput::Kind::AmaxReduction) return true;
  return false;
}

bool isPointwise(const Epilogue& e) {
  if (e.usesSource || e.outputs.size() != 1) return false;
  for (const EpiInput& in : e.inputs)
    if (in.broadcast != Broadcast::Scalar) return false;
  return true;
}

bool hasMathOrDivision(const Epilogue& e) {
  for (EpiOp op : {EpiOp::Div, EpiOp::Exp, EpiOp::Log, EpiOp::Sqrt, EpiOp::Rsqrt, EpiOp::Tanh, EpiOp::Sigmoid,
                   EpiOp::Gelu, EpiOp::GeluTanh, EpiOp::Silu})
    if (countOps(e, op) > 0) return true;
  return false;
}

int countOps(const Epilogue& e, EpiOp op) {
  int c = 0;
  for (const EpiLet& l : e.lets) c += countOps(l.value, op);
  for (const EpiOutput& o : e.outputs) c += countOps(o.value, op);
  return c;
}

namespace {
// Whether `n` or any node below it satisfies `pred`.
template <class Pred>
bool anyNode(const EpiNode& n, const Pred& pred) {
  if (pred(n)) return true;
  for (const EpiNode& a : n.args)
    if (anyNode(a, pred)) return true;
  return false;
}
// Whether any let or output of `e` has a node satisfying `pred`.
template <class Pred>
bool anyRead(const Epilogue& e, const Pred& pred) {
  for (const EpiLet& l : e.lets)
    if (anyNode(l.value, pred)) return true;
  for (const EpiOutput& o : e.outputs)
    if (anyNode(o.value, pred)) return true;
  return false;
}
}  // namespace

bool readsSource(const Epilogue& e) {
  return e.usesSource && anyRead(e, [](const EpiNode& n) { return n.op == EpiOp::Source; });
}

bool usesInput(const Epilogue& e, int index) {
  return anyRead(e, [index](const EpiNode& n) { return n.op == EpiOp::Input && n.index == index; });
}

const char* broadcastAccess(const KernelPlan& p, Broadcast b) {
  if (b == Broadcast::Channel) return p.spec.op.value == Op::Conv2dWgrad ? "row" : "col";
  return (b == Broadcast::Row) != p.transposed ? "row" : "col";
}

// ---- constant folding ------------------------------------------------------------------------------

namespace {

// The float a node is known to be at generation time: a literal, a negated literal, or a let that folded to one.
std::optional<float> knownValue(const Epilogue& folded, const EpiNode& n) {
  switch (n.op) {
    case EpiOp::Const: return static_cast<float>(n.constant);
    case EpiOp::Neg:
      if (n.args.size() == 1 && n.args[0].op == EpiOp::Const) return -static_cast<float>(n.args[0].constant);
      return std::nullopt;
    case EpiOp::Let:  // an earlier let, already folded
      if (n.index >= 0 && size_t(n.index) < folded.lets.size()) return knownValue(folded, folded.lets[n.index].value);
      return std::nullopt;
    default: return std::nullopt;
  }
}

// activations.cuh's formulas, in float.
float sigmoidf(float x) { return 1.f / (1.f + std::exp(-x)); }

// The value of `op` on known arguments, as the device computes it; nullopt for an op that is not folded.
std::optional<float> evaluate(EpiOp op, const std::vector<float>& v) {
  auto t = [](bool b) { return b ? 1.f : 0.f; };
  auto b = [](float x) { return x != 0.f; };
  const size_t n = v.size();
  switch (op) {
    case EpiOp::Neg: if (n == 1) return -v[0]; break;
    case EpiOp::Add: if (n == 2) return v[0] + v[1]; break;
    case EpiOp::Sub: if (n == 2) return v[0] - v[1]; break;
    case EpiOp::Mul: if (n == 2) return v[0] * v[1]; break;
    case EpiOp::Div: if (n == 2) return v[0] / v[1]; break;
    case EpiOp::Lt: if (n == 2) return t(v[0] < v[1]); break;
    case EpiOp::Le: if (n == 2) return t(v[0] <= v[1]); break;
    case EpiOp::Gt: if (n == 2) return t(v[0] > v[1]); break;
    case EpiOp::Ge: if (n == 2) return t(v[0] >= v[1]); break;
    case EpiOp::Eq: if (n == 2) return t(v[0] == v[1]); break;
    case EpiOp::Ne: if (n == 2) return t(v[0] != v[1]); break;
    case EpiOp::And: if (n == 2) return t(b(v[0]) && b(v[1])); break;
    case EpiOp::Or: if (n == 2) return t(b(v[0]) || b(v[1])); break;
    case EpiOp::Not: if (n == 1) return t(!b(v[0])); break;
    case EpiOp::Min: if (n == 2) return std::fmin(v[0], v[1]); break;
    case EpiOp::Max: if (n == 2) return std::fmax(v[0], v[1]); break;
    case EpiOp::Abs: if (n == 1) return std::fabs(v[0]); break;
    case EpiOp::Clamp: if (n == 3) return v[0] < v[1] ? v[1] : (v[0] > v[2] ? v[2] : v[0]); break;
    case EpiOp::Exp: if (n == 1) return std::exp(v[0]); break;
    case EpiOp::Log: if (n == 1) return std::log(v[0]); break;
    case EpiOp::Sqrt: if (n == 1) return std::sqrt(v[0]); break;
    case EpiOp::Rsqrt: if (n == 1) return 1.f / std::sqrt(v[0]); break;
    case EpiOp::Tanh: if (n == 1) return std::tanh(v[0]); break;
    case EpiOp::Sigmoid: if (n == 1) return sigmoidf(v[0]); break;
    case EpiOp::Relu: if (n == 1) return v[0] < 0.f ? 0.f : v[0]; break;
    case EpiOp::Gelu: if (n == 1) return 0.5f * v[0] * (1.f + std::erf(v[0] * 0.70710678118654752f)); break;
    case EpiOp::GeluTanh:
      if (n == 1) {
        const float x = v[0], k0 = 0.79788456080286536f, k1 = 0.044715f;
        return 0.5f * x * (1.f + std::tanh(k0 * (x + k1 * x * x * x)));
      }
      break;
    case EpiOp::Silu: if (n == 1) return v[0] * sigmoidf(v[0]); break;
    case EpiOp::LeakyRelu: if (n == 2) return v[0] < 0.f ? v[0] * v[1] : v[0]; break;
    default: break;  // reads of the kernel, Select (below), Cast (the device's conversions)
  }
  return std::nullopt;
}

EpiNode fold(const Epilogue& folded, const EpiNode& n) {
  EpiNode out = n;
  for (EpiNode& a : out.args) a = fold(folded, a);
  if (out.op == EpiOp::Select && out.args.size() == 3) {
    if (std::optional<float> c = knownValue(folded, out.args[0]))
      return out.args[*c != 0.f ? 1 : 2];  // NaN selects the first, as `c != 0.0f` does on the device
    return out;
  }
  if (out.op == EpiOp::Neg && out.args.size() == 1 && out.args[0].op == EpiOp::Const) return out;  // a literal
  std::vector<float> values;
  for (const EpiNode& a : out.args) {
    std::optional<float> v = knownValue(folded, a);
    if (!v) return out;
    values.push_back(*v);
  }
  if (values.empty()) return out;
  std::optional<float> r = evaluate(out.op, values);
  if (!r) return out;
  EpiNode c;
  c.op = EpiOp::Const;
  c.constant = static_cast<double>(*r);
  c.loc = out.loc;
  return c;
}

}  // namespace

Epilogue foldConstants(const Epilogue& e) {
  Epilogue f = e;
  for (EpiLet& l : f.lets) l.value = fold(f, l.value);  // in order: a let reads only earlier ones
  for (EpiOutput& o : f.outputs) o.value = fold(f, o.value);
  return f;
}

}  // namespace kdl::codegen
