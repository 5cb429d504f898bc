// Expressions and built-in functions of the scripting language (semantics: see evaluator.cpp).
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "dsl/eval/eval_internal.h"
#include "dsl/words.h"

namespace kdl::eval {

namespace {

struct BuiltinEntry {
  std::string name;
  Value value;
};

// Built once: looking a word up copies a Value (a reference count), never builds a string.
const std::vector<BuiltinEntry>& builtinTable() {
  static const std::vector<BuiltinEntry> table = [] {
    std::vector<BuiltinEntry> t;
    for (const WordInfo& w : builtinWords()) t.push_back({w.name, Value::word(w.category, w.name)});
    for (const std::string& f : builtinFunctions()) t.push_back({f, Value::builtin(f)});
    return t;
  }();
  return table;
}

// Storage bytes of a dtype word (tf32 is stored in 32 bits).
int dtypeBytes(const std::string& name) {
  static const std::pair<const char*, int> sizes[] = {
      {"f16", 2}, {"bf16", 2}, {"f32", 4}, {"tf32", 4}, {"f64", 8},
      {"e4m3", 1}, {"e5m2", 1}, {"s8", 1}, {"u8", 1}, {"s32", 4},
  };
  for (const auto& [n, bytes] : sizes)
    if (name == n) return bytes;
  return 0;
}

std::string plural(size_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

bool lessThan(const Value& a, const Value& b) {
  if (a.isInt() && b.isInt()) return a.asInt() < b.asInt();
  return a.asFloat() < b.asFloat();
}

SourceLoc operatorLoc(const ast::Expr& e) { return e.opLoc.valid() ? e.opLoc : e.loc; }

}  // namespace

const Value* lookupBuiltin(std::string_view name) {
  for (const BuiltinEntry& b : builtinTable())
    if (b.name == name) return &b.value;
  return nullptr;
}

std::string describeBuiltin(std::string_view, const Value& v) {
  return v.isWord() ? fmt::format("a built-in {}", categoryName(v.wordCategory())) : "a built-in function";
}

const Value* Evaluator::lookup(std::string_view name, const Env& env) const {
  if (const Binding* b = env.find(name)) return &b->value;
  return lookupBuiltin(name);
}

std::shared_ptr<Env> Evaluator::closureEnv(const Value& callable, SourceLoc loc) {
  auto weak = std::static_pointer_cast<const std::weak_ptr<Env>>(callable.closure());
  if (EnvPtr env = weak ? weak->lock() : nullptr) return env;
  // Not reachable by the rules in evaluator.cpp; a message beats a silent drop if that ever changes.
  diags_.error(DiagKind::NotCallable, loc,
               fmt::format("`{}` can no longer be called: the scope that defined it has ended", callable.asString()));
  return nullptr;
}

void Evaluator::reportUndefined(std::string_view name, SourceLoc loc, const Env& env) {
  // A file whose import failed misses that file's names; reporting each use would only repeat it.
  if (filesWithFailedImports_.count(loc.file)) return;
  std::vector<std::string> candidates;
  for (const Env* e = &env; e; e = e->parent())
    for (const Binding& b : e->bindings()) candidates.emplace_back(b.name);
  for (const BuiltinEntry& b : builtinTable()) candidates.push_back(b.name);
  diags_.error(DiagKind::UndefinedName, loc,
               fmt::format("`{}` is not defined{}", name, didYouMean(name, candidates)));
}

void Evaluator::reportTypeMismatch(SourceLoc loc, std::string message) {
  diags_.error(DiagKind::TypeMismatch, loc, std::move(message));
}

// ---- expressions ---------------------------------------------------------------------------------

Value Evaluator::eval(const ast::Expr& e, const Env& env) {
  if (stopped()) return {};
  Depth depth(*this, e.loc);
  if (!depth.ok()) return {};
  switch (e.kind) {
    case ast::ExprKind::Int: return Value::integer(e.intValue);
    case ast::ExprKind::Float: return Value::floating(e.floatValue);
    case ast::ExprKind::Bool: return Value::boolean(e.boolValue);
    case ast::ExprKind::Auto: return Value::autoValue();
    case ast::ExprKind::String: return evalString(e, env);
    case ast::ExprKind::Name: return evalName(e, env);
    case ast::ExprKind::Tuple:
    case ast::ExprKind::List: return evalSequence(e, env);
    case ast::ExprKind::Index: return evalIndex(e, env);
    case ast::ExprKind::Call: return evalCall(e, env);
    case ast::ExprKind::Unary: return evalUnary(e, env);
    case ast::ExprKind::Binary: return evalBinary(e, env);
    case ast::ExprKind::Ternary: return evalTernary(e, env);
  }
  return {};
}

Value Evaluator::evalName(const ast::Expr& e, const Env& env) {
  if (const Value* v = lookup(e.name, env)) return *v;
  reportUndefined(e.name, e.loc, env);
  return {};
}

Value Evaluator::evalString(const ast::Expr& e, const Env& env) {
  std::string out;
  bool poisoned = false;
  for (const ast::StringPart& part : e.parts) {
    if (!part.expr) {
      out += part.text;
    } else {
      Value v = eval(*part.expr, env);
      if (v.isNone()) {
        poisoned = true;
        continue;
      }
      v.interpolateInto(out, limits_.maxString);
    }
    if (out.size() > limits_.maxString) {
      stringFits(out.size(), e.loc);  // reports the cap
      return {};
    }
  }
  if (poisoned || !stringFits(out.size(), e.loc)) return {};
  return Value::string(std::move(out));
}

Value Evaluator::evalSequence(const ast::Expr& e, const Env& env) {
  std::vector<Value> items;
  items.reserve(e.elems.size());
  bool poisoned = false;
  for (const ast::ExprPtr& x : e.elems) {
    items.push_back(x ? eval(*x, env) : Value());
    poisoned = poisoned || items.back().isNone();
  }
  if (poisoned || !sequenceFits(items.size(), e.loc)) return {};
  return e.kind == ast::ExprKind::Tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Value Evaluator::evalIndex(const ast::Expr& e, const Env& env) {
  if (e.elems.size() != 2 || !e.elems[0] || !e.elems[1]) return {};
  Value base = eval(*e.elems[0], env);
  Value index = eval(*e.elems[1], env);
  if (base.isNone() || index.isNone()) return {};
  if (!base.isSequence() && !base.isString()) {
    reportTypeMismatch(e.elems[0]->loc, fmt::format("`{}` values cannot be indexed; only tuples, lists and strings can",
                                                    base.typeName()));
    return {};
  }
  if (!index.isInt()) {
    reportTypeMismatch(e.elems[1]->loc, fmt::format("an index must be an `int`, not `{}`", index.typeName()));
    return {};
  }
  size_t length = base.isString() ? base.asString().size() : base.items().size();
  int64_t i = index.asInt();
  if (i < 0 || static_cast<uint64_t>(i) >= length) {
    diags_.error(DiagKind::IndexRange, e.elems[1]->loc,
                 fmt::format("index {} is out of range for a {} of length {} (indices go from 0 to length - 1)", i,
                             base.typeName(), length));
    return {};
  }
  if (base.isString()) return Value::string(std::string(1, base.asString()[static_cast<size_t>(i)]));
  return base.items()[static_cast<size_t>(i)];
}

Value Evaluator::evalCall(const ast::Expr& e, const Env& env) {
  if (e.elems.empty() || !e.elems[0]) return {};
  const ast::Expr& calleeExpr = *e.elems[0];
  Value callee = eval(calleeExpr, env);
  std::vector<Value> args;
  args.reserve(e.elems.size() - 1);
  bool poisoned = callee.isNone();
  for (size_t i = 1; i < e.elems.size(); ++i) {
    args.push_back(e.elems[i] ? eval(*e.elems[i], env) : Value());
    poisoned = poisoned || args.back().isNone();
  }
  if (poisoned) return {};
  std::string what = calleeExpr.kind == ast::ExprKind::Name ? fmt::format("`{}`", calleeExpr.name) : "this";
  switch (callee.kind()) {
    case Value::Kind::Function: return callFunction(e, callee, args);
    case Value::Kind::Builtin: return callBuiltin(e, callee.asString(), args);
    case Value::Kind::Template:
      diags_.error(DiagKind::NotCallable, calleeExpr.loc,
                   fmt::format("{} is a template, not a function; instantiate it with `kernel NAME = {}(...);`", what,
                               callee.asString()))
          .notes.push_back({callee.decl()->nameLoc, "the template is defined here"});
      return {};
    default:
      diags_.error(DiagKind::NotCallable, calleeExpr.loc,
                   fmt::format("{} is of type `{}`, not a function", what, callee.typeName()));
      return {};
  }
}

Value Evaluator::callFunction(const ast::Expr& call, const Value& fn, std::vector<Value>& args) {
  const ast::Stmt& decl = *fn.decl();
  if (args.size() != decl.params.size()) {
    diags_.error(DiagKind::CallArity, call.loc,
                 fmt::format("`{}` takes {}, not {}", decl.name, plural(decl.params.size(), "argument"),
                             args.size()))
        .notes.push_back({decl.nameLoc, fmt::format("`{}` is defined here", decl.name)});
    return {};
  }
  EnvPtr closure = closureEnv(fn, call.loc);
  if (!closure || !decl.value) return {};
  if (!step(call.loc)) return {};
  Depth depth(*this, call.loc, true);
  if (!depth.ok()) return {};
  // Nothing an expression builds can capture this scope, so it can live on the stack.
  Env scope(std::move(closure));
  for (size_t i = 0; i < args.size(); ++i) scope.bind(decl.params[i].name, std::move(args[i]), decl.params[i].loc);
  return eval(*decl.value, scope);
}

// ---- built-in functions --------------------------------------------------------------------------

Value Evaluator::callBuiltin(const ast::Expr& call, const std::string& name, std::vector<Value>& args) {
  if (!step(call.loc)) return {};
  auto arityOk = [&](size_t lo, size_t hi) {
    if (args.size() >= lo && args.size() <= hi) return true;
    std::string takes = lo == hi ? plural(lo, "argument") : fmt::format("{} to {} arguments", lo, hi);
    diags_.error(DiagKind::CallArity, call.loc, fmt::format("`{}` takes {}, not {}", name, takes, args.size()));
    return false;
  };
  if (name == "range") return arityOk(1, 3) ? builtinRange(call, args) : Value();
  if (name == "min" || name == "max") return builtinMinMax(call, name, args);
  if (!arityOk(1, 1)) return {};
  const Value& arg = args[0];
  SourceLoc argLoc = call.elems[1]->loc;
  if (name == "len") {
    if (arg.isString()) return Value::integer(static_cast<int64_t>(arg.asString().size()));
    if (arg.isSequence()) return Value::integer(static_cast<int64_t>(arg.items().size()));
    reportTypeMismatch(argLoc, fmt::format("`len` needs a list, tuple or string, not `{}`", arg.typeName()));
    return {};
  }
  if (name == "str") {
    std::string out;
    arg.interpolateInto(out, limits_.maxString);  // stops just past the cap, which stringFits reports
    if (!stringFits(out.size(), call.loc)) return {};
    return Value::string(std::move(out));
  }
  if (name == "sizeof" || name == "bits") return builtinDtypeSize(call, name, args);
  if (name == "product") return builtinProduct(call, args);
  if (name == "serial" || name == "parallel") return builtinSplitK(call, name, args);
  return {};
}

Value Evaluator::builtinRange(const ast::Expr& call, const std::vector<Value>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].isInt()) continue;
    reportTypeMismatch(call.elems[i + 1]->loc,
                       fmt::format("`range` needs `int` arguments, not `{}`", args[i].typeName()));
    return {};
  }
  __int128 begin = args.size() == 1 ? 0 : args[0].asInt();
  __int128 end = args.size() == 1 ? args[0].asInt() : args[1].asInt();
  __int128 stride = args.size() == 3 ? args[2].asInt() : 1;
  if (stride == 0) {
    diags_.error(DiagKind::BadArgument, call.elems[3]->loc, "the step of `range` cannot be 0");
    return {};
  }
  __int128 span = end - begin;
  __int128 count = stride > 0 ? (span > 0 ? (span + stride - 1) / stride : 0)
                              : (span < 0 ? (-span - stride - 1) / -stride : 0);
  if (count > static_cast<__int128>(limits_.maxSequence)) {
    diags_.error(DiagKind::EvalLimit, call.loc,
                 fmt::format("this `range` has {} elements; the cap is {}",
                             static_cast<long long>(count > INT64_MAX ? INT64_MAX : count), limits_.maxSequence));
    stop();
    return {};
  }
  if (!sequenceFits(static_cast<size_t>(count), call.loc)) return {};
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (__int128 i = 0; i < count; ++i) items.push_back(Value::integer(static_cast<int64_t>(begin + i * stride)));
  return Value::list(std::move(items));
}

Value Evaluator::builtinMinMax(const ast::Expr& call, const std::string& name, const std::vector<Value>& args) {
  if (args.empty()) {
    diags_.error(DiagKind::CallArity, call.loc,
                 fmt::format("`{}` takes two or more numbers, or one list or tuple of numbers", name));
    return {};
  }
  const std::vector<Value>* items = &args;
  if (args.size() == 1) {
    SourceLoc loc = call.elems[1]->loc;
    if (!args[0].isSequence()) {
      reportTypeMismatch(loc, fmt::format("`{}` of one value needs a list or tuple, not `{}`", name,
                                          args[0].typeName()));
      return {};
    }
    items = &args[0].items();
    if (items->empty()) {
      diags_.error(DiagKind::BadArgument, loc, fmt::format("`{}` of an empty {}", name, args[0].typeName()));
      return {};
    }
  }
  for (size_t i = 0; i < items->size(); ++i) {
    if ((*items)[i].isNumber()) continue;
    SourceLoc loc = call.elems[items == &args ? i + 1 : 1]->loc;
    reportTypeMismatch(loc, fmt::format("`{}` needs numbers, not `{}`", name, (*items)[i].typeName()));
    return {};
  }
  const Value* best = &items->front();
  for (const Value& v : *items)
    if (name == "min" ? lessThan(v, *best) : lessThan(*best, v)) best = &v;
  return *best;
}

Value Evaluator::builtinProduct(const ast::Expr& call, const std::vector<Value>& args) {
  const Value& seq = args[0];
  SourceLoc loc = call.elems[1]->loc;
  if (!seq.isSequence()) {
    reportTypeMismatch(loc, fmt::format("`product` needs a list or tuple of numbers, not `{}`", seq.typeName()));
    return {};
  }
  int64_t intProduct = 1;
  double floatProduct = 1;
  bool anyFloat = false;
  for (const Value& v : seq.items()) {
    if (!v.isNumber()) {
      reportTypeMismatch(loc, fmt::format("`product` needs numbers, but the {} holds `{}`", seq.typeName(),
                                          v.typeName()));
      return {};
    }
    anyFloat = anyFloat || v.isFloat();
    floatProduct *= v.asFloat();
    if (!anyFloat && __builtin_mul_overflow(intProduct, v.asInt(), &intProduct)) {
      diags_.error(DiagKind::NumberRange, call.loc, "this product does not fit a 64-bit integer");
      return {};
    }
  }
  return anyFloat ? Value::floating(floatProduct) : Value::integer(intProduct);
}

Value Evaluator::builtinDtypeSize(const ast::Expr& call, const std::string& name, const std::vector<Value>& args) {
  const Value& dt = args[0];
  if (!dt.isWord(WordCategory::DType)) {
    reportTypeMismatch(call.elems[1]->loc,
                       fmt::format("`{}` needs a dtype such as `bf16`, not `{}`", name, dt.typeName()));
    return {};
  }
  int bytes = dtypeBytes(dt.asString());
  return Value::integer(name == "bits" ? bytes * 8 : bytes);
}

Value Evaluator::builtinSplitK(const ast::Expr& call, const std::string& name, const std::vector<Value>& args) {
  const Value& n = args[0];
  SourceLoc loc = call.elems[1]->loc;
  if (!n.isInt()) {
    reportTypeMismatch(loc, fmt::format("`{}` needs an `int` number of slices, not `{}`", name, n.typeName()));
    return {};
  }
  if (n.asInt() < 1) {
    diags_.error(DiagKind::BadArgument, loc,
                 fmt::format("`{}` needs a positive number of slices, not {}", name, n.asInt()));
    return {};
  }
  return Value::word(WordCategory::SplitK, name, {n});
}

// ---- operators -----------------------------------------------------------------------------------

Value Evaluator::evalUnary(const ast::Expr& e, const Env& env) {
  if (e.elems.empty() || !e.elems[0]) return {};
  Value v = eval(*e.elems[0], env);
  if (v.isNone()) return {};
  switch (e.unaryOp) {
    case ast::UnaryOp::Not:
      if (v.isBool()) return Value::boolean(!v.asBool());
      reportTypeMismatch(operatorLoc(e), fmt::format("`!` needs a `bool`, not `{}`", v.typeName()));
      return {};
    case ast::UnaryOp::Neg:
      if (v.isFloat()) return Value::floating(-v.asFloat());
      if (v.isInt() && v.asInt() == std::numeric_limits<int64_t>::min()) {
        diags_.error(DiagKind::NumberRange, e.loc, "negating this does not fit a 64-bit integer");
        return {};
      }
      if (v.isInt()) return Value::integer(-v.asInt());
      reportTypeMismatch(operatorLoc(e), fmt::format("cannot negate a `{}`", v.typeName()));
      return {};
    case ast::UnaryOp::Plus:
      if (v.isNumber()) return v;
      reportTypeMismatch(operatorLoc(e), fmt::format("unary `+` needs a number, not `{}`", v.typeName()));
      return {};
  }
  return {};
}

// A chain `a + b - c` is evaluated with a loop over its operators (ast::binaryChain), left to right,
// so its length is not nesting: only the operands recurse.
Value Evaluator::evalBinary(const ast::Expr& top, const Env& env) {
  std::vector<const ast::Expr*> chain = ast::binaryChain(top);
  if (chain.empty() || !chain.front()->elems[0]) return {};
  Value acc = eval(*chain.front()->elems[0], env);
  for (const ast::Expr* link : chain) {
    if (stopped() || !link->elems[1]) return {};
    acc = applyBinary(*link, std::move(acc), env);
  }
  return acc;
}

// `left op right` for one link of a chain, `left` already evaluated (None when it failed).
Value Evaluator::applyBinary(const ast::Expr& e, Value a, const Env& env) {
  if (e.binaryOp == ast::BinaryOp::And || e.binaryOp == ast::BinaryOp::Or) return applyLogic(e, std::move(a), env);
  Value b = eval(*e.elems[1], env);
  if (a.isNone() || b.isNone()) return {};
  switch (e.binaryOp) {
    case ast::BinaryOp::Eq: return Value::boolean(a.equals(b));
    case ast::BinaryOp::Ne: return Value::boolean(!a.equals(b));
    case ast::BinaryOp::Lt:
    case ast::BinaryOp::Le:
    case ast::BinaryOp::Gt:
    case ast::BinaryOp::Ge: return compare(e, a, b);
    case ast::BinaryOp::Add:
      if (a.isNumber() && b.isNumber()) return arithmetic(e, a, b);
      return concat(e, a, b);
    default: return arithmetic(e, a, b);
  }
}

Value Evaluator::applyLogic(const ast::Expr& e, Value a, const Env& env) {
  const char* op = ast::binaryOpSpelling(e.binaryOp);
  auto isBool = [&](const Value& v, const ast::Expr& x) {
    if (v.isNone() || v.isBool()) return true;
    reportTypeMismatch(x.loc, fmt::format("`{}` needs `bool` operands, not `{}`", op, v.typeName()));
    return false;
  };
  if (!isBool(a, *e.elems[0]) || a.isNone()) return {};
  bool isAnd = e.binaryOp == ast::BinaryOp::And;
  if (a.asBool() != isAnd) return a;  // false && ..., true || ...
  Value b = eval(*e.elems[1], env);
  return isBool(b, *e.elems[1]) ? b : Value{};
}

Value Evaluator::evalTernary(const ast::Expr& e, const Env& env) {
  if (e.elems.size() != 3 || !e.elems[0] || !e.elems[1] || !e.elems[2]) return {};
  Value cond = eval(*e.elems[0], env);
  if (cond.isNone()) return {};
  if (!cond.isBool()) {
    reportTypeMismatch(e.elems[0]->loc,
                       fmt::format("the condition of `?:` must be a `bool`, not `{}`", cond.typeName()));
    return {};
  }
  return eval(*e.elems[cond.asBool() ? 1 : 2], env);
}

Value Evaluator::arithmetic(const ast::Expr& e, const Value& a, const Value& b) {
  static const char* const verbs[] = {"add", "subtract", "multiply", "divide", "take the remainder of"};
  auto op = e.binaryOp;
  if (!a.isNumber() || !b.isNumber()) {
    reportTypeMismatch(operatorLoc(e), fmt::format("cannot {} `{}` and `{}`", verbs[static_cast<int>(op)],
                                                   a.typeName(), b.typeName()));
    return {};
  }
  bool divides = op == ast::BinaryOp::Div || op == ast::BinaryOp::Mod;
  if (divides && b.asFloat() == 0) {
    diags_.error(DiagKind::DivByZero, operatorLoc(e),
                 op == ast::BinaryOp::Div ? "division by zero" : "remainder of a division by zero");
    return {};
  }
  if (a.isInt() && b.isInt()) {
    int64_t x = a.asInt(), y = b.asInt(), r = 0;
    bool overflow = false;
    switch (op) {
      case ast::BinaryOp::Add: overflow = __builtin_add_overflow(x, y, &r); break;
      case ast::BinaryOp::Sub: overflow = __builtin_sub_overflow(x, y, &r); break;
      case ast::BinaryOp::Mul: overflow = __builtin_mul_overflow(x, y, &r); break;
      case ast::BinaryOp::Div:
        overflow = x == std::numeric_limits<int64_t>::min() && y == -1;
        r = overflow ? 0 : x / y;
        break;
      case ast::BinaryOp::Mod: r = y == -1 ? 0 : x % y; break;
      default: break;
    }
    if (!overflow) return Value::integer(r);
    diags_.error(DiagKind::NumberRange, e.loc,
                 fmt::format("{} {} {} does not fit a 64-bit integer", x, ast::binaryOpSpelling(op), y));
    return {};
  }
  double x = a.asFloat(), y = b.asFloat(), r = 0;
  switch (op) {
    case ast::BinaryOp::Add: r = x + y; break;
    case ast::BinaryOp::Sub: r = x - y; break;
    case ast::BinaryOp::Mul: r = x * y; break;
    case ast::BinaryOp::Div: r = x / y; break;
    case ast::BinaryOp::Mod: r = std::fmod(x, y); break;
    default: break;
  }
  if (std::isfinite(r)) return Value::floating(r);
  diags_.error(DiagKind::NumberRange, e.loc, "the result does not fit a double");
  return {};
}

Value Evaluator::concat(const ast::Expr& e, const Value& a, const Value& b) {
  if (a.isString() && b.isString()) {
    if (!stringFits(a.asString().size() + b.asString().size(), e.loc)) return {};
    return Value::string(a.asString() + b.asString());
  }
  if (a.kind() == b.kind() && a.isSequence()) {
    if (!sequenceFits(a.items().size() + b.items().size(), e.loc)) return {};
    std::vector<Value> items = a.items();
    items.insert(items.end(), b.items().begin(), b.items().end());
    return a.isList() ? Value::list(std::move(items)) : Value::tuple(std::move(items));
  }
  reportTypeMismatch(operatorLoc(e), fmt::format("cannot add `{}` and `{}`", a.typeName(), b.typeName()));
  return {};
}

Value Evaluator::compare(const ast::Expr& e, const Value& a, const Value& b) {
  int order = 0;  // <0, 0, >0
  if (a.isNumber() && b.isNumber()) {
    order = lessThan(a, b) ? -1 : lessThan(b, a) ? 1 : 0;
  } else if (a.isString() && b.isString()) {
    order = a.asString().compare(b.asString());
  } else {
    reportTypeMismatch(operatorLoc(e), fmt::format("cannot compare `{}` and `{}` with `{}`", a.typeName(),
                                                   b.typeName(), ast::binaryOpSpelling(e.binaryOp)));
    return {};
  }
  switch (e.binaryOp) {
    case ast::BinaryOp::Lt: return Value::boolean(order < 0);
    case ast::BinaryOp::Le: return Value::boolean(order <= 0);
    case ast::BinaryOp::Gt: return Value::boolean(order > 0);
    default: return Value::boolean(order >= 0);
  }
}

}  // namespace kdl::eval
