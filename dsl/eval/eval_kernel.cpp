// Kernel statements: kernel bodies, template instantiation with overrides, and epilogues kept
// symbolic for validation (semantics: see evaluator.cpp).
#include <algorithm>

#include <fmt/format.h>

#include "dsl/eval/eval_internal.h"
#include "dsl/words.h"

namespace kdl::eval {

namespace {

template <class T>
T* findNamed(std::vector<T>& items, const std::string& name) {
  auto it = std::find_if(items.begin(), items.end(), [&](const T& x) { return x.name == name; });
  return it == items.end() ? nullptr : &*it;
}

// A later item of the same name replaces the earlier one where it stood; a new name goes last.
template <class T>
void overrideInPlace(std::vector<T>& base, std::vector<T>&& overrides) {
  for (T& item : overrides) {
    if (T* old = findNamed(base, item.name))
      *old = std::move(item);
    else
      base.push_back(std::move(item));
  }
}

}  // namespace

void Evaluator::execKernel(const ast::Stmt& s, const EnvPtr& env) {
  size_t errorsBefore = diags_.errorCount();
  RawKernel k;
  bool ok = kernelName(s, *env, k);
  BodyResult body;
  if (!s.templateName.empty()) ok = instantiate(s, env, k, body) && ok;
  if (s.kernelBody) {
    BodyResult own;
    evalBody(*s.kernelBody, std::make_shared<Env>(env), false, own);
    mergeOverrides(body, std::move(own));
  }
  if (stopped()) return;
  k.fields = std::move(body.fields);
  k.operands = std::move(body.operands);
  if (body.epilogue) k.epilogue = convertEpilogue(*body.epilogue, *body.epilogueEnv, k.operands, body.failed);
  if (!ok) return;
  k.poisoned = body.failed || diags_.errorCount() != errorsBefore;
  if (result_.kernels.size() >= limits_.maxKernels) {
    diags_.error(DiagKind::KernelLimit, k.nameLoc,
                 fmt::format("more than {} kernels; the cap is {} (--max-kernels)", limits_.maxKernels,
                             limits_.maxKernels));
    stop();
    return;
  }
  result_.kernels.push_back(std::move(k));
}

bool Evaluator::kernelName(const ast::Stmt& s, const Env& env, RawKernel& k) {
  if (!s.nameExpr) {
    k.name = s.name;
    k.nameLoc = s.nameLoc;
    return true;
  }
  k.nameLoc = s.nameExpr->loc;
  Value name = eval(*s.nameExpr, env);
  if (name.isNone()) return false;
  if (!name.isString()) {
    reportTypeMismatch(s.nameExpr->loc, fmt::format("a kernel name must be a `string`, not `{}`", name.typeName()));
    return false;
  }
  k.name = name.asString();
  return true;
}

bool Evaluator::instantiate(const ast::Stmt& s, const EnvPtr& env, RawKernel& k, BodyResult& out) {
  const Value* found = lookup(s.templateName, *env);
  if (!found) {
    reportUndefined(s.templateName, s.templateLoc, *env);
    return false;
  }
  Value t = *found;
  if (t.isNone()) return false;
  if (t.kind() != Value::Kind::Template) {
    Diagnostic& d = diags_.error(DiagKind::NotCallable, s.templateLoc,
                                 fmt::format("`{}` is a `{}`, not a template; a kernel can only instantiate "
                                             "a template",
                                             s.templateName, t.typeName()));
    if (t.kind() == Value::Kind::Function) d.notes.push_back({t.decl()->nameLoc, "the function is defined here"});
    return false;
  }
  const ast::Stmt& decl = *t.decl();
  k.templateName = decl.name;
  k.templateLoc = decl.nameLoc;
  EnvPtr closure = closureEnv(t, s.templateLoc);
  if (!closure || !step(s.templateLoc)) return false;
  Depth depth(*this, s.templateLoc, true);
  if (!depth.ok()) return false;
  auto params = std::make_shared<Env>(std::move(closure));
  if (!bindTemplateArgs(s, *env, decl, *params)) return false;
  if (decl.kernelBody) evalBody(*decl.kernelBody, std::make_shared<Env>(params), true, out);
  return true;
}

bool Evaluator::bindTemplateArgs(const ast::Stmt& s, const Env& env, const ast::Stmt& decl, Env& params) {
  size_t n = decl.params.size();
  std::vector<Value> values(n);
  std::vector<bool> given(n, false);
  bool ok = true;
  bool sawNamed = false;
  auto arityError = [&](SourceLoc loc, std::string message) {
    diags_.error(DiagKind::CallArity, loc, std::move(message))
        .notes.push_back({decl.nameLoc, fmt::format("template `{}` is defined here", decl.name)});
    ok = false;
  };
  for (size_t i = 0; i < s.args.size(); ++i) {
    if (!s.args[i]) continue;
    Value v = eval(*s.args[i], env);
    ok = ok && !v.isNone();
    const std::string& argName = i < s.argNames.size() ? s.argNames[i] : std::string();
    size_t slot = i;
    if (argName.empty()) {
      if (sawNamed) {
        arityError(s.args[i]->loc, "a positional argument cannot follow a named one");
        continue;
      }
      if (i >= n) {
        arityError(s.args[i]->loc, fmt::format("template `{}` takes {}, but is given {}", decl.name,
                                               n == 1 ? "1 argument" : fmt::format("{} arguments", n), s.args.size()));
        break;
      }
    } else {
      sawNamed = true;
      auto it = std::find_if(decl.params.begin(), decl.params.end(),
                             [&](const ast::Param& p) { return p.name == argName; });
      if (it == decl.params.end()) {
        std::vector<std::string> names;
        for (const ast::Param& p : decl.params) names.push_back(p.name);
        arityError(s.args[i]->loc, fmt::format("template `{}` has no parameter `{}`{}", decl.name, argName,
                                               didYouMean(argName, names)));
        continue;
      }
      slot = static_cast<size_t>(it - decl.params.begin());
    }
    if (given[slot]) {
      arityError(s.args[i]->loc, fmt::format("`{}` is given twice", decl.params[slot].name));
      continue;
    }
    given[slot] = true;
    values[slot] = std::move(v);
  }
  // Parameters are bound in order, so a default can use the parameters before it.
  for (size_t p = 0; p < n; ++p) {
    const ast::Param& param = decl.params[p];
    if (!given[p] && param.defaultValue) {
      values[p] = eval(*param.defaultValue, params);
      ok = ok && !values[p].isNone();
    } else if (!given[p]) {
      arityError(s.templateLoc, fmt::format("template `{}` needs an argument for `{}`", decl.name, param.name));
    }
    params.bind(param.name, std::move(values[p]), param.loc);
  }
  return ok;
}

void Evaluator::evalBody(const ast::KernelBody& body, const EnvPtr& env, bool fromTemplate, BodyResult& out) {
  for (const ast::BodyItem& item : body.items) {
    if (stopped()) return;
    switch (item.kind) {
      case ast::BodyItemKind::Field: {
        const ast::FieldAssign& f = item.field;
        Value v = f.value ? eval(*f.value, *env) : Value();
        out.failed = out.failed || v.isNone();
        if (RawField* first = findNamed(out.fields, f.name)) {
          diags_.error(DiagKind::DuplicateField, f.nameLoc, fmt::format("`{}` is set twice in this kernel body", f.name))
              .notes.push_back({first->nameLoc, "first set here"});
          break;
        }
        out.fields.push_back(RawField{f.name, f.nameLoc, std::move(v), f.value ? f.value->loc : f.loc, fromTemplate});
        break;
      }
      case ast::BodyItemKind::Operand: evalOperand(item.operand, *env, out); break;
      case ast::BodyItemKind::Epilogue:
        if (out.epilogue) {
          diags_.error(DiagKind::DuplicateField, item.epilogue.loc, "this kernel body has a second epilogue")
              .notes.push_back({out.epilogue->loc, "the first epilogue is here"});
          break;
        }
        out.epilogue = &item.epilogue;
        out.epilogueEnv = env;
        break;
      case ast::BodyItemKind::Let:
        if (item.stmt) execLet(*item.stmt, env);
        break;
      case ast::BodyItemKind::Assert:
        if (item.stmt) execAssert(*item.stmt, *env);
        break;
    }
  }
}

void Evaluator::evalOperand(const ast::OperandDecl& d, const Env& env, BodyResult& out) {
  RawOperand o;
  o.name = d.name;
  o.nameLoc = d.nameLoc;
  o.loc = d.loc;
  auto evalPart = [&](const ast::ExprPtr& e, Value& v, SourceLoc& loc) {
    if (!e) return;
    v = eval(*e, env);
    loc = e->loc;
    out.failed = out.failed || v.isNone();
  };
  evalPart(d.dtype, o.dtype, o.dtypeLoc);
  evalPart(d.layout, o.layout, o.layoutLoc);
  evalPart(d.align, o.align, o.alignLoc);
  evalPart(d.scale, o.scale, o.scaleLoc);
  if (RawOperand* first = findNamed(out.operands, d.name)) {
    diags_.error(DiagKind::DuplicateField, d.nameLoc,
                 fmt::format("operand `{}` is declared twice in this kernel body", d.name))
        .notes.push_back({first->nameLoc, "first declared here"});
    return;
  }
  out.operands.push_back(std::move(o));
}

void Evaluator::mergeOverrides(BodyResult& base, BodyResult&& overrides) {
  overrideInPlace(base.fields, std::move(overrides.fields));
  overrideInPlace(base.operands, std::move(overrides.operands));
  if (overrides.epilogue) {
    base.epilogue = overrides.epilogue;
    base.epilogueEnv = std::move(overrides.epilogueEnv);
  }
  base.failed = base.failed || overrides.failed;
}

// ---- epilogues -----------------------------------------------------------------------------------

std::optional<RawEpilogue> Evaluator::convertEpilogue(const ast::EpilogueBlock& block, const Env& env,
                                                      const std::vector<RawOperand>& operands, bool& failed) {
  EpiScope scope{env, {"acc"}};
  for (const RawOperand& o : operands) scope.symbols.push_back(o.name);
  for (const ast::EpilogueItem& item : block.items)
    if (item.kind != ast::EpilogueItemKind::Assign) scope.symbols.push_back(item.name);

  RawEpilogue epi;
  epi.loc = block.loc;
  for (const ast::EpilogueItem& item : block.items) {
    if (stopped()) break;
    RawEpilogueItem r;
    r.kind = item.kind;
    r.name = item.name;
    r.nameLoc = item.nameLoc;
    r.loc = item.loc;
    r.broadcast = item.broadcast;
    r.broadcastLoc = item.broadcastLoc;
    if (item.dtype) {
      r.dtype = epilogueValue(*item.dtype, scope);
      r.dtypeLoc = item.dtype->loc;
    }
    if (item.layout) {
      r.layout = epilogueValue(*item.layout, scope);
      r.layoutLoc = item.layout->loc;
    }
    if (item.value && item.kind == ast::EpilogueItemKind::Param) {
      r.defaultValue = epilogueValue(*item.value, scope);
      r.defaultLoc = item.value->loc;
    } else if (item.value && item.kind != ast::EpilogueItemKind::Input) {
      r.expr = convertEpiExpr(*item.value, scope);
    }
    epi.items.push_back(std::move(r));
  }
  failed = failed || scope.failed;
  return epi;
}

// Types, layouts and defaults in an epilogue are script values (`input s : dt [];` in a template).
Value Evaluator::epilogueValue(const ast::Expr& e, EpiScope& scope) {
  Value v = eval(e, scope.env);
  scope.failed = scope.failed || v.isNone();
  return v;
}

EpiExpr Evaluator::convertEpiExpr(const ast::Expr& e, EpiScope& scope) {
  EpiExpr out;
  out.loc = e.loc;
  Depth depth(*this, e.loc);
  if (!depth.ok()) {
    scope.failed = true;
    return out;
  }
  auto convertArgs = [&](size_t count) {
    for (size_t i = 0; i < count && i < e.elems.size(); ++i)
      if (e.elems[i]) out.args.push_back(convertEpiExpr(*e.elems[i], scope));
  };
  switch (e.kind) {
    case ast::ExprKind::Name:
      if (const Value* v = scope.isSymbol(e.name) ? nullptr : lookup(e.name, scope.env)) {
        out.constant = *v;
        scope.failed = scope.failed || v->isNone();
      } else {
        out.kind = EpiExpr::Kind::Name;  // declared in the epilogue, or unknown: validation decides
        out.name = e.name;
      }
      return out;
    case ast::ExprKind::Unary:
      out.kind = EpiExpr::Kind::Unary;
      out.unaryOp = e.unaryOp;
      convertArgs(1);
      return out;
    case ast::ExprKind::Binary:
      out.kind = EpiExpr::Kind::Binary;
      out.binaryOp = e.binaryOp;
      convertArgs(2);
      return out;
    case ast::ExprKind::Ternary:
      out.kind = EpiExpr::Kind::Ternary;
      convertArgs(3);
      return out;
    case ast::ExprKind::Call: return convertEpiCall(e, scope);
    default: break;  // literals, strings, tuples, lists, indexing
  }
  if (!isScriptConstant(e, scope)) {
    reportTypeMismatch(e.loc, "an epilogue value cannot be indexed or put in a tuple, list or string; only "
                              "script values can");
    scope.failed = true;
    return out;
  }
  out.constant = epilogueValue(e, scope);
  return out;
}

EpiExpr Evaluator::convertEpiCall(const ast::Expr& e, EpiScope& scope) {
  EpiExpr out;
  out.loc = e.loc;
  const ast::Expr* callee = e.elems.empty() ? nullptr : e.elems[0].get();
  if (!callee || callee->kind != ast::ExprKind::Name) {
    diags_.error(DiagKind::NotCallable, callee ? callee->loc : e.loc,
                 "an epilogue can only call a function by its name");
    scope.failed = true;
    return out;
  }
  // A script function of constants (`sizeof(dt)`) is folded now; epilogue functions run on the GPU.
  if (!lookupEpilogueFunction(callee->name) && isScriptConstant(e, scope)) {
    out.constant = epilogueValue(e, scope);
    return out;
  }
  out.kind = EpiExpr::Kind::Call;
  out.name = callee->name;
  out.nameLoc = callee->loc;
  for (size_t i = 1; i < e.elems.size(); ++i)
    if (e.elems[i]) out.args.push_back(convertEpiExpr(*e.elems[i], scope));
  return out;
}

bool Evaluator::isScriptConstant(const ast::Expr& e, const EpiScope& scope) const {
  auto allConstant = [&](size_t from) {
    for (size_t i = from; i < e.elems.size(); ++i)
      if (e.elems[i] && !isScriptConstant(*e.elems[i], scope)) return false;
    return true;
  };
  switch (e.kind) {
    case ast::ExprKind::Name: return !scope.isSymbol(e.name) && lookup(e.name, scope.env);
    case ast::ExprKind::Call: {
      const ast::Expr* callee = e.elems.empty() ? nullptr : e.elems[0].get();
      return callee && callee->kind == ast::ExprKind::Name && !lookupEpilogueFunction(callee->name) &&
             isScriptConstant(*callee, scope) && allConstant(1);
    }
    case ast::ExprKind::String:
      for (const ast::StringPart& part : e.parts)
        if (part.expr && !isScriptConstant(*part.expr, scope)) return false;
      return true;
    case ast::ExprKind::Binary: {  // a chain, with a loop (ast::binaryChain)
      std::vector<const ast::Expr*> chain = ast::binaryChain(e);
      if (chain.empty()) return allConstant(0);
      if (chain.front()->elems[0] && !isScriptConstant(*chain.front()->elems[0], scope)) return false;
      for (const ast::Expr* link : chain)
        if (link->elems[1] && !isScriptConstant(*link->elems[1], scope)) return false;
      return true;
    }
    default: return allConstant(0);
  }
}

}  // namespace kdl::eval
