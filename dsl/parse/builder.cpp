#include "dsl/parse/builder.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "dsl/parse/string_scan.h"

namespace kdl::parser {

using namespace kdl::ast;

// ---- helpers -------------------------------------------------------------------------------------

SourceLoc Builder::loc(antlr4::ParserRuleContext* ctx) const { return ctx ? map_.span(ctx) : SourceLoc{}; }
SourceLoc Builder::loc(antlr4::tree::TerminalNode* node) const { return node ? loc(node->getSymbol()) : SourceLoc{}; }
SourceLoc Builder::loc(antlr4::Token* token) const { return token ? map_.token(token) : SourceLoc{}; }

std::string Builder::text(antlr4::tree::TerminalNode* node) { return node ? node->getText() : std::string(); }

std::string Builder::definedName(P::NameContext* ctx) {
  if (!ctx) return std::string();
  std::string word = ctx->getText();
  if (!ctx->IDENT())
    diags_.error(DiagKind::Syntax, loc(ctx), fmt::format("`{}` is a keyword and cannot be used as a name", word));
  return word;
}

ExprPtr Builder::node(ExprKind kind, SourceLoc loc) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}

StmtPtr Builder::stmtNode(StmtKind kind, antlr4::ParserRuleContext* ctx) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->loc = loc(ctx);
  return s;
}

// ---- statements ----------------------------------------------------------------------------------

std::vector<StmtPtr> Builder::stmts(const std::vector<P::StmtContext*>& ctxs) {
  std::vector<StmtPtr> out;
  for (auto* c : ctxs)
    if (auto s = stmt(c)) out.push_back(std::move(s));
  return out;
}

StmtPtr Builder::stmt(P::StmtContext* ctx) {
  if (!ctx) return nullptr;
  if (ctx->importStmt()) return importStmt(ctx->importStmt());
  if (ctx->letStmt()) return letStmt(ctx->letStmt());
  if (ctx->fnStmt()) return fnStmt(ctx->fnStmt());
  if (ctx->templateStmt()) return templateStmt(ctx->templateStmt());
  if (ctx->kernelStmt()) return kernelStmt(ctx->kernelStmt());
  if (ctx->forStmt()) return forStmt(ctx->forStmt());
  if (ctx->ifStmt()) return ifStmt(ctx->ifStmt());
  if (ctx->assertStmt()) return assertStmt(ctx->assertStmt());
  return nullptr;
}

StmtPtr Builder::importStmt(P::ImportStmtContext* ctx) {
  auto s = stmtNode(StmtKind::Import, ctx);
  if (ExprPtr path = stringLiteral(ctx->STRING())) {
    s->pathLoc = path->loc;
    for (const StringPart& part : path->parts) {
      if (part.expr) {
        diags_.error(DiagKind::Syntax, part.expr->loc, "an import path is a plain string, without `${...}`");
        break;
      }
      s->path += part.text;
    }
  }
  return s;
}

StmtPtr Builder::letStmt(P::LetStmtContext* ctx) {
  auto s = stmtNode(StmtKind::Let, ctx);
  s->name = definedName(ctx->name());
  s->nameLoc = loc(ctx->name());
  s->value = expr(ctx->expr());
  return s;
}

StmtPtr Builder::fnStmt(P::FnStmtContext* ctx) {
  auto s = stmtNode(StmtKind::Fn, ctx);
  s->name = definedName(ctx->name());
  s->nameLoc = loc(ctx->name());
  s->params = params(ctx->paramList(), false);
  s->value = expr(ctx->expr());
  return s;
}

StmtPtr Builder::templateStmt(P::TemplateStmtContext* ctx) {
  auto s = stmtNode(StmtKind::Template, ctx);
  s->name = definedName(ctx->name());
  s->nameLoc = loc(ctx->name());
  s->params = params(ctx->paramList(), true);
  if (ctx->kernelBody()) s->kernelBody = kernelBody(ctx->kernelBody());
  return s;
}

std::vector<Param> Builder::params(P::ParamListContext* ctx, bool allowDefaults) {
  std::vector<Param> out;
  if (!ctx) return out;
  for (auto* p : ctx->param()) {
    Param param;
    param.name = definedName(p->name());
    param.loc = loc(p->name());
    if (p->ASSIGN() && !allowDefaults)
      diags_.error(DiagKind::Syntax, loc(p->ASSIGN()),
                   fmt::format("function parameter `{}` cannot have a default; only template parameters can",
                               param.name));
    else
      param.defaultValue = expr(p->expr());
    out.push_back(std::move(param));
  }
  return out;
}

StmtPtr Builder::kernelStmt(P::KernelStmtContext* ctx) {
  auto s = stmtNode(StmtKind::Kernel, ctx);
  if (auto* name = ctx->kernelName()) {
    if (name->name()) {
      s->name = definedName(name->name());
    } else if (name->STRING()) {
      s->nameExpr = stringLiteral(name->STRING());
    } else {
      s->nameExpr = expr(name->expr());
    }
    s->nameLoc = name->name() || name->STRING() ? loc(name->getStart()) : loc(name);
  }
  if (ctx->ASSIGN()) {
    s->templateName = text(ctx->IDENT());
    s->templateLoc = loc(ctx->IDENT());
    args(ctx->argList(), *s);
  }
  if (ctx->kernelBody()) s->kernelBody = kernelBody(ctx->kernelBody());
  return s;
}

void Builder::args(P::ArgListContext* ctx, Stmt& kernel) {
  if (!ctx) return;
  for (auto* a : ctx->arg()) {
    kernel.argNames.push_back(a->ASSIGN() ? text(a->IDENT()) : std::string());
    kernel.args.push_back(expr(a->expr()));
  }
}

StmtPtr Builder::forStmt(P::ForStmtContext* ctx) {
  auto s = stmtNode(StmtKind::For, ctx);
  s->name = definedName(ctx->name());
  s->nameLoc = loc(ctx->name());
  s->value = expr(ctx->expr());
  s->body = block(ctx->block());
  return s;
}

StmtPtr Builder::ifStmt(P::IfStmtContext* ctx) {
  auto s = stmtNode(StmtKind::If, ctx);
  s->value = expr(ctx->expr());
  std::vector<P::BlockContext*> blocks = ctx->block();
  if (!blocks.empty()) s->body = block(blocks[0]);
  s->hasElse = ctx->ELSE() != nullptr;
  if (ctx->ifStmt()) {
    s->elseBody.push_back(ifStmt(ctx->ifStmt()));
  } else if (blocks.size() > 1) {
    s->elseBody = block(blocks[1]);
  }
  return s;
}

std::vector<StmtPtr> Builder::block(P::BlockContext* ctx) { return ctx ? stmts(ctx->stmt()) : std::vector<StmtPtr>{}; }

StmtPtr Builder::assertStmt(P::AssertStmtContext* ctx) {
  auto s = stmtNode(StmtKind::Assert, ctx);
  s->value = expr(ctx->expr(0));
  s->message = expr(ctx->expr(1));
  return s;
}

// ---- kernel bodies -------------------------------------------------------------------------------

KernelBody Builder::kernelBody(P::KernelBodyContext* ctx) {
  KernelBody body;
  body.loc = loc(ctx);
  for (auto* item : ctx->bodyItem())
    if (auto built = bodyItem(item)) body.items.push_back(std::move(*built));
  return body;
}

std::optional<BodyItem> Builder::bodyItem(P::BodyItemContext* ctx) {
  BodyItem item;
  if (auto* f = ctx->fieldItem()) {
    item.kind = BodyItemKind::Field;
    item.field.name = text(f->IDENT());
    item.field.nameLoc = loc(f->IDENT());
    item.field.value = expr(f->expr());
    item.field.loc = loc(f);
  } else if (auto* o = ctx->operandItem()) {
    item.kind = BodyItemKind::Operand;
    item.operand = operand(o);
  } else if (auto* e = ctx->epilogueBlock()) {
    item.kind = BodyItemKind::Epilogue;
    item.epilogue = epilogue(e);
  } else if (auto* l = ctx->letStmt()) {
    item.kind = BodyItemKind::Let;
    item.stmt = letStmt(l);
  } else if (auto* a = ctx->assertStmt()) {
    item.kind = BodyItemKind::Assert;
    item.stmt = assertStmt(a);
  } else {
    return std::nullopt;
  }
  return item;
}

OperandDecl Builder::operand(P::OperandItemContext* ctx) {
  OperandDecl op;
  op.name = text(ctx->IDENT());
  op.nameLoc = loc(ctx->IDENT());
  op.dtype = postfix(ctx->postfixExpr(0));
  op.layout = postfix(ctx->postfixExpr(1));
  op.loc = loc(ctx);
  // `align` and `scale` are contextual: the grammar takes any name there, so the words are checked here.
  for (P::OperandSuffixContext* suffix : ctx->operandSuffix()) {
    std::string word = text(suffix->IDENT());
    ExprPtr* slot = word == "align" ? &op.align : word == "scale" ? &op.scale : nullptr;
    if (!slot) {
      diags_.error(DiagKind::Syntax, loc(suffix->IDENT()),
                   fmt::format("expected `align`, `scale` or `;` after the layout of operand `{}`, found `{}`",
                               op.name, word));
      continue;
    }
    if (*slot) {
      diags_.error(DiagKind::Syntax, loc(suffix->IDENT()),
                   fmt::format("operand `{}` has a second `{}`", op.name, word))
          .notes.push_back({(*slot)->loc, "the first is here"});
      continue;
    }
    *slot = expr(suffix->expr());
  }
  return op;
}

EpilogueBlock Builder::epilogue(P::EpilogueBlockContext* ctx) {
  EpilogueBlock block;
  block.loc = loc(ctx->EPILOGUE());
  for (auto* item : ctx->epilogueItem())
    if (auto built = epilogueItem(item)) block.items.push_back(std::move(*built));
  return block;
}

std::optional<EpilogueItem> Builder::epilogueItem(P::EpilogueItemContext* ctx) {
  EpilogueItem item;
  item.loc = loc(ctx);
  auto named = [&](P::NameContext* name) {
    item.name = definedName(name);
    item.nameLoc = loc(name);
  };
  if (auto* c = dynamic_cast<P::EpParamContext*>(ctx)) {
    item.kind = EpilogueItemKind::Param;
    named(c->name());
    item.dtype = postfix(c->postfixExpr());
    item.value = expr(c->expr());
  } else if (auto* c = dynamic_cast<P::EpInputContext*>(ctx)) {
    item.kind = EpilogueItemKind::Input;
    named(c->name());
    inputBroadcast(c, item);
  } else if (auto* c = dynamic_cast<P::EpOutputContext*>(ctx)) {
    item.kind = EpilogueItemKind::Output;
    named(c->name());
    item.dtype = postfix(c->postfixExpr(0));
    item.layout = postfix(c->postfixExpr(1));
    item.value = expr(c->expr());
  } else if (auto* c = dynamic_cast<P::EpLetContext*>(ctx)) {
    item.kind = EpilogueItemKind::Let;
    named(c->name());
    item.value = expr(c->expr());
  } else if (auto* c = dynamic_cast<P::EpAssignContext*>(ctx)) {
    item.kind = EpilogueItemKind::Assign;
    item.name = text(c->IDENT());
    item.nameLoc = loc(c->IDENT());
    item.value = expr(c->expr());
  } else {
    return std::nullopt;
  }
  return item;
}

// `input NAME : dtype [bcast];` parses as an index of the dtype; the last index is the broadcast.
void Builder::inputBroadcast(P::EpInputContext* ctx, EpilogueItem& item) {
  P::PostfixExprContext* typed = ctx->postfixExpr();
  if (!typed) return;
  std::vector<P::PostfixOpContext*> ops = typed->postfixOp();
  auto* bracket = ops.empty() ? nullptr : dynamic_cast<P::IndexOpContext*>(ops.back());
  if (!bracket) {
    item.dtype = postfix(typed);
    diags_.error(DiagKind::Syntax, ctx->SEMI() ? loc(ctx->SEMI()) : item.dtype ? item.dtype->loc : item.loc,
                 fmt::format("expected the broadcast of input `{}` after its dtype: `[row]`, `[col]`, "
                             "`[channel]` or `[]`",
                             item.name));
    return;
  }
  item.dtype = postfix(typed, 1);
  item.broadcastLoc = loc(bracket);
  if (P::ExprContext* word = bracket->expr()) {
    auto* post = dynamic_cast<P::PostfixContext*>(word);
    auto* name = post && post->postfixExpr() && post->postfixExpr()->postfixOp().empty()
                     ? dynamic_cast<P::NameRefContext*>(post->postfixExpr()->primary())
                     : nullptr;
    if (name)
      item.broadcast = text(name->IDENT());
    else
      diags_.error(DiagKind::Syntax, loc(word),
                   "the broadcast of an input is one word: `[row]`, `[col]`, `[channel]`, or `[]` for a scalar");
  }
}

// ---- expressions ---------------------------------------------------------------------------------

static BinaryOp binaryOp(size_t token) {
  using P = grammar::KDLParser;
  switch (token) {
    case P::PLUS: return BinaryOp::Add;
    case P::MINUS: return BinaryOp::Sub;
    case P::STAR: return BinaryOp::Mul;
    case P::SLASH: return BinaryOp::Div;
    case P::PERCENT: return BinaryOp::Mod;
    case P::LT: return BinaryOp::Lt;
    case P::LE: return BinaryOp::Le;
    case P::GT: return BinaryOp::Gt;
    case P::GE: return BinaryOp::Ge;
    case P::EQ: return BinaryOp::Eq;
    case P::NE: return BinaryOp::Ne;
    case P::AND: return BinaryOp::And;
    default: return BinaryOp::Or;
  }
}

ExprPtr Builder::expr(P::ExprContext* ctx) {
  if (!ctx) return nullptr;
  if (auto* c = dynamic_cast<P::PostfixContext*>(ctx)) return postfix(c->postfixExpr());
  if (auto* c = dynamic_cast<P::UnaryContext*>(ctx)) {
    auto e = node(ExprKind::Unary, loc(ctx));
    e->opLoc = loc(c->op);
    size_t type = c->op ? c->op->getType() : size_t{P::MINUS};
    e->unaryOp = type == P::NOT ? UnaryOp::Not : type == P::PLUS ? UnaryOp::Plus : UnaryOp::Neg;
    e->elems.push_back(expr(c->expr()));
    return e;
  }
  if (auto* c = dynamic_cast<P::BinaryContext*>(ctx)) return binaryChain(c);
  if (auto* c = dynamic_cast<P::TernaryContext*>(ctx)) {
    auto e = node(ExprKind::Ternary, loc(ctx));
    e->opLoc = loc(c->op);
    for (size_t i = 0; i < 3; ++i) e->elems.push_back(expr(c->expr(i)));
    return e;
  }
  return nullptr;
}

// `a + b - c * d + e` is a chain: the parse tree nests it down its left operands, one level per
// operator, so it is walked with a loop, not recursion (a chain of 100000 terms is not deep nesting).
// Each right operand binds tighter and is built recursively; its depth is what scanTokens counts.
ExprPtr Builder::binaryChain(P::BinaryContext* top) {
  std::vector<P::BinaryContext*> spine;  // top first
  P::ExprContext* leftmost = top;
  while (auto* b = dynamic_cast<P::BinaryContext*>(leftmost)) {
    spine.push_back(b);
    leftmost = b->expr(0);
  }
  ExprPtr acc = expr(leftmost);
  for (auto it = spine.rbegin(); it != spine.rend(); ++it) {
    P::BinaryContext* c = *it;
    auto e = node(ExprKind::Binary, loc(c));
    e->opLoc = loc(c->op);
    e->binaryOp = binaryOp(c->op ? c->op->getType() : size_t{P::PLUS});
    e->elems.push_back(std::move(acc));
    e->elems.push_back(expr(c->expr(1)));
    acc = std::move(e);
  }
  return acc;
}

ExprPtr Builder::postfix(P::PostfixExprContext* ctx, size_t dropLast) {
  if (!ctx) return nullptr;
  ExprPtr e = primary(ctx->primary());
  std::vector<P::PostfixOpContext*> ops = ctx->postfixOp();
  for (size_t i = 0; i + dropLast < ops.size(); ++i) {
    SourceLoc whole = map_.span(ctx->getStart(), ops[i]->getStop());
    if (auto* call = dynamic_cast<P::CallOpContext*>(ops[i])) {
      auto c = node(ExprKind::Call, whole);
      c->opLoc = loc(call->LPAREN());
      c->elems.push_back(std::move(e));
      for (auto* arg : call->expr()) c->elems.push_back(expr(arg));
      e = std::move(c);
    } else if (auto* index = dynamic_cast<P::IndexOpContext*>(ops[i])) {
      auto x = node(ExprKind::Index, whole);
      x->opLoc = loc(index->LBRACK());
      if (!index->expr())
        diags_.error(DiagKind::Syntax, loc(index), "expected an index between `[` and `]`");
      x->elems.push_back(std::move(e));
      x->elems.push_back(expr(index->expr()));
      e = std::move(x);
    }
  }
  return e;
}

ExprPtr Builder::sequence(ExprKind kind, const std::vector<P::ExprContext*>& elems, SourceLoc where) {
  auto e = node(kind, where);
  for (auto* x : elems) e->elems.push_back(expr(x));
  return e;
}

ExprPtr Builder::primary(P::PrimaryContext* ctx) {
  if (!ctx) return nullptr;
  if (auto* c = dynamic_cast<P::IntLitContext*>(ctx)) return intLiteral(c->INT());
  if (auto* c = dynamic_cast<P::FloatLitContext*>(ctx)) return floatLiteral(c->FLOAT());
  if (auto* c = dynamic_cast<P::StringLitContext*>(ctx)) return stringLiteral(c->STRING());
  if (auto* c = dynamic_cast<P::BoolLitContext*>(ctx)) {
    auto e = node(ExprKind::Bool, loc(ctx));
    e->boolValue = c->TRUE() != nullptr;
    return e;
  }
  if (dynamic_cast<P::AutoLitContext*>(ctx)) return node(ExprKind::Auto, loc(ctx));
  if (auto* c = dynamic_cast<P::NameRefContext*>(ctx)) {
    auto e = node(ExprKind::Name, loc(ctx));
    e->name = text(c->IDENT());
    return e;
  }
  if (auto* c = dynamic_cast<P::ParensContext*>(ctx)) {
    // `(x)` is x; a comma, or nothing inside, makes a tuple.
    std::vector<P::ExprContext*> elems = c->expr();
    if (elems.size() == 1 && c->COMMA().empty()) return expr(elems[0]);
    return sequence(ExprKind::Tuple, elems, loc(ctx));
  }
  if (auto* c = dynamic_cast<P::ListContext*>(ctx)) return sequence(ExprKind::List, c->expr(), loc(ctx));
  return nullptr;
}

// ---- literals ------------------------------------------------------------------------------------

static std::string withoutUnderscores(std::string_view text) {
  std::string out;
  for (char c : text)
    if (c != '_') out += c;
  return out;
}

ExprPtr Builder::intLiteral(antlr4::tree::TerminalNode* n) {
  if (!n) return nullptr;
  auto e = node(ExprKind::Int, loc(n));
  std::string digits = withoutUnderscores(text(n));
  bool hex = digits.size() > 2 && (digits[1] == 'x' || digits[1] == 'X');
  uint64_t base = hex ? 16 : 10;
  uint64_t value = 0;
  const uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  for (size_t i = hex ? 2 : 0; i < digits.size(); ++i) {
    char c = digits[i];
    uint64_t d = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    if (value > (limit - d) / base) {
      diags_.error(DiagKind::NumberRange, e->loc,
                   fmt::format("integer `{}` does not fit a 64-bit signed integer (the largest is {})", text(n),
                               limit));
      return e;
    }
    value = value * base + d;
  }
  e->intValue = static_cast<int64_t>(value);
  return e;
}

ExprPtr Builder::floatLiteral(antlr4::tree::TerminalNode* n) {
  if (!n) return nullptr;
  auto e = node(ExprKind::Float, loc(n));
  std::string digits = withoutUnderscores(text(n));
  // The lexer only makes [0-9.eE+-] floats, which strtod reads the same in every locale we run in.
  double value = std::strtod(digits.c_str(), nullptr);
  if (std::isinf(value)) {
    diags_.error(DiagKind::NumberRange, e->loc, fmt::format("number `{}` is too large for a double", text(n)));
    return e;
  }
  e->floatValue = value;
  return e;
}

// Decodes the escapes of a string token and parses each `${...}` on its own.
ExprPtr Builder::stringLiteral(antlr4::tree::TerminalNode* n) {
  if (!n) return nullptr;
  auto e = node(ExprKind::String, loc(n));
  const size_t start = map_.begin(n->getSymbol());
  const std::string_view raw = map_.lines().text().substr(start, map_.end(n->getSymbol()) - start);
  const FileLines& lines = map_.lines();
  size_t index = n->getSymbol()->getTokenIndex();
  const int depth = index < depthAt_.size() ? depthAt_[index] : 0;
  std::string literal;
  auto flush = [&] {
    if (!literal.empty()) e->parts.push_back(StringPart{std::move(literal), nullptr});
    literal.clear();
  };
  for (size_t i = 1; i < raw.size() && raw[i] != '"';) {
    char c = raw[i];
    if (c == '\\' && i + 1 < raw.size()) {
      char esc = raw[i + 1];
      switch (esc) {
        case 'n': literal += '\n'; break;
        case 't': literal += '\t'; break;
        case '"': case '\\': case '$': literal += esc; break;
        default: {
          size_t len = 2;
          while (i + len < raw.size() && (static_cast<unsigned char>(raw[i + len]) & 0xC0) == 0x80) ++len;
          diags_.error(DiagKind::Syntax, lines.at(start + i, start + i + len),
                       fmt::format("unknown escape `{}` in a string; the escapes are `\\n`, `\\t`, `\\\"`, `\\\\` "
                                   "and `\\$`",
                                   raw.substr(i, len)));
          i += len;
          continue;
        }
      }
      i += 2;
    } else if (c == '$' && i + 1 < raw.size() && raw[i + 1] == '{') {
      // Past the closing `}`; npos only in a string that scanTokens reported as unterminated.
      size_t after = scanToClose(raw, i + 2, i, false, nullptr);
      if (after == std::string_view::npos) break;
      size_t close = after - 1;
      if (raw.substr(i + 2, close - i - 2).find_first_not_of(" \t") == std::string_view::npos) {
        diags_.error(DiagKind::Syntax, lines.at(start + i, start + after),
                     "empty `${}` in a string: expected an expression inside");
      } else if (ExprPtr piece = parseInterpolation(lines, start + i + 2, start + close, diags_, maxDepth_,
                                                    depth + 1)) {
        flush();
        e->parts.push_back(StringPart{std::string(), std::move(piece)});
      }
      i = after;
    } else {
      literal += c;
      ++i;
    }
  }
  flush();
  return e;
}

}  // namespace kdl::parser
