// ast::dump (kdlc --emit=ast) and the operator spellings.
#include "dsl/ast.h"

#include <fmt/format.h>

#include "dsl/diagnostics.h"

namespace kdl::ast {

const char* unaryOpSpelling(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return "-";
    case UnaryOp::Not: return "!";
    case UnaryOp::Plus: return "+";
  }
  return "?";
}

const char* binaryOpSpelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
  }
  return "?";
}

Expr::~Expr() {
  std::vector<ExprPtr> pending;
  for (ExprPtr& e : elems) pending.push_back(std::move(e));
  for (StringPart& p : parts) pending.push_back(std::move(p.expr));
  while (!pending.empty()) {
    ExprPtr e = std::move(pending.back());
    pending.pop_back();
    if (!e) continue;
    for (ExprPtr& child : e->elems) pending.push_back(std::move(child));
    for (StringPart& p : e->parts) pending.push_back(std::move(p.expr));
  }  // each node dies here with no children left to recurse into
}

std::vector<const Expr*> binaryChain(const Expr& top) {
  std::vector<const Expr*> chain;
  for (const Expr* e = &top; e && e->kind == ExprKind::Binary && e->elems.size() == 2; e = e->elems[0].get())
    chain.push_back(e);
  return {chain.rbegin(), chain.rend()};
}

namespace {

// `line:col+length`; the file is the dumped file's, so it is left out.
std::string at(const SourceLoc& loc) { return fmt::format("{}:{}+{}", loc.line, loc.col, loc.length); }

std::string quoted(std::string_view s) { return "\"" + jsonEscape(s) + "\""; }

// Writes one node per line, each indented two spaces deeper than its parent. `role` names the
// child's place in its parent ("value", "dtype") where the kind alone would not say.
class Dumper {
 public:
  std::string take() { return std::move(out_); }

  void line(int depth, std::string_view role, const std::string& text) {
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    if (!role.empty()) out_ += fmt::format("{}: ", role);
    out_ += text;
    out_ += '\n';
  }

  void expr(int depth, std::string_view role, const Expr* e) {
    if (!e) return line(depth, role, "<missing>");
    line(depth, role, exprHead(*e));
    for (const StringPart& part : e->parts) {
      if (part.expr)
        expr(depth + 1, "interp", part.expr.get());
      else
        line(depth + 1, "", "text " + quoted(part.text));
    }
    if (e->kind == ExprKind::Binary && e->elems.size() == 2) return chain(depth + 1, *e);
    for (const ExprPtr& child : e->elems) expr(depth + 1, "", child.get());
  }

  // A chain `a + b - c` as written, at one depth: the first operand, then each operator (with the
  // range of the chain it closes) and its right operand. Flat, so a long chain dumps in linear size.
  void chain(int depth, const Expr& top) {
    std::vector<const Expr*> links = binaryChain(top);
    expr(depth, "", links.front()->elems[0].get());
    for (const Expr* link : links) {
      line(depth, "", fmt::format("{} @{} op@{}", binaryOpSpelling(link->binaryOp), at(link->loc), at(link->opLoc)));
      expr(depth, "", link->elems[1].get());
    }
  }

  void stmt(int depth, const Stmt& s);
  void body(int depth, const KernelBody& b);
  void epilogueItem(int depth, const EpilogueItem& item);

 private:
  static std::string exprHead(const Expr& e) {
    std::string loc = at(e.loc);
    switch (e.kind) {
      case ExprKind::Int: return fmt::format("int {} @{}", e.intValue, loc);
      case ExprKind::Float: return fmt::format("float {} @{}", e.floatValue, loc);
      case ExprKind::Bool: return fmt::format("bool {} @{}", e.boolValue ? "true" : "false", loc);
      case ExprKind::Auto: return fmt::format("auto @{}", loc);
      case ExprKind::String: return fmt::format("string @{}", loc);
      case ExprKind::Name: return fmt::format("name {} @{}", e.name, loc);
      case ExprKind::Tuple: return fmt::format("tuple @{}", loc);
      case ExprKind::List: return fmt::format("list @{}", loc);
      case ExprKind::Index: return fmt::format("index @{} [@{}", loc, at(e.opLoc));
      case ExprKind::Call: return fmt::format("call @{} (@{}", loc, at(e.opLoc));
      case ExprKind::Unary: return fmt::format("unary {} @{} op@{}", unaryOpSpelling(e.unaryOp), loc, at(e.opLoc));
      case ExprKind::Binary: return fmt::format("binary @{}", loc);
      case ExprKind::Ternary: return fmt::format("ternary @{} ?@{}", loc, at(e.opLoc));
    }
    return "?";
  }

  std::string out_;
};

const char* stmtKindName(StmtKind k) {
  switch (k) {
    case StmtKind::Let: return "let";
    case StmtKind::Fn: return "fn";
    case StmtKind::Template: return "template";
    case StmtKind::Kernel: return "kernel";
    case StmtKind::For: return "for";
    case StmtKind::If: return "if";
    case StmtKind::Assert: return "assert";
    case StmtKind::Import: return "import";
  }
  return "?";
}

const char* epilogueKindName(EpilogueItemKind k) {
  switch (k) {
    case EpilogueItemKind::Param: return "param";
    case EpilogueItemKind::Input: return "input";
    case EpilogueItemKind::Output: return "output";
    case EpilogueItemKind::Let: return "let";
    case EpilogueItemKind::Assign: return "assign";
  }
  return "?";
}

void Dumper::stmt(int depth, const Stmt& s) {
  std::string head = fmt::format("{} @{}", stmtKindName(s.kind), at(s.loc));
  if (!s.name.empty()) head += fmt::format(" {} @{}", s.name, at(s.nameLoc));
  if (s.kind == StmtKind::Import) head += fmt::format(" {} @{}", quoted(s.path), at(s.pathLoc));
  if (s.kind == StmtKind::Kernel && !s.templateName.empty())
    head += fmt::format(" = {} @{}", s.templateName, at(s.templateLoc));
  line(depth, "", head);
  if (s.nameExpr) expr(depth + 1, "name", s.nameExpr.get());
  for (const Param& p : s.params) {
    line(depth + 1, "param", fmt::format("{} @{}", p.name, at(p.loc)));
    if (p.defaultValue) expr(depth + 2, "default", p.defaultValue.get());
  }
  for (size_t i = 0; i < s.args.size(); ++i) {
    bool named = i < s.argNames.size() && !s.argNames[i].empty();
    expr(depth + 1, named ? "arg " + s.argNames[i] : "arg", s.args[i].get());
  }
  if (s.value || s.kind == StmtKind::Let || s.kind == StmtKind::Fn || s.kind == StmtKind::For ||
      s.kind == StmtKind::If || s.kind == StmtKind::Assert)
    expr(depth + 1, "value", s.value.get());
  if (s.message) expr(depth + 1, "message", s.message.get());
  if (s.kernelBody) body(depth + 1, *s.kernelBody);
  for (const StmtPtr& b : s.body)
    if (b) stmt(depth + 1, *b);
  if (s.hasElse) {
    line(depth + 1, "", "else");
    for (const StmtPtr& b : s.elseBody)
      if (b) stmt(depth + 2, *b);
  }
}

void Dumper::body(int depth, const KernelBody& b) {
  line(depth, "", fmt::format("body @{}", at(b.loc)));
  for (const BodyItem& item : b.items) {
    switch (item.kind) {
      case BodyItemKind::Field:
        line(depth + 1, "", fmt::format("field {} @{} name@{}", item.field.name, at(item.field.loc),
                                        at(item.field.nameLoc)));
        expr(depth + 2, "value", item.field.value.get());
        break;
      case BodyItemKind::Operand:
        line(depth + 1, "", fmt::format("operand {} @{} name@{}", item.operand.name, at(item.operand.loc),
                                        at(item.operand.nameLoc)));
        expr(depth + 2, "dtype", item.operand.dtype.get());
        expr(depth + 2, "layout", item.operand.layout.get());
        if (item.operand.align) expr(depth + 2, "align", item.operand.align.get());
        if (item.operand.scale) expr(depth + 2, "scale", item.operand.scale.get());
        break;
      case BodyItemKind::Epilogue:
        line(depth + 1, "", fmt::format("epilogue @{}", at(item.epilogue.loc)));
        for (const EpilogueItem& e : item.epilogue.items) epilogueItem(depth + 2, e);
        break;
      case BodyItemKind::Let:
      case BodyItemKind::Assert:
        if (item.stmt) stmt(depth + 1, *item.stmt);
        break;
    }
  }
}

void Dumper::epilogueItem(int depth, const EpilogueItem& item) {
  std::string head = fmt::format("{} {} @{} name@{}", epilogueKindName(item.kind), item.name, at(item.loc),
                                 at(item.nameLoc));
  if (item.kind == EpilogueItemKind::Input) head += fmt::format(" [{}] @{}", item.broadcast, at(item.broadcastLoc));
  line(depth, "", head);
  if (item.dtype) expr(depth + 1, "dtype", item.dtype.get());
  if (item.layout) expr(depth + 1, "layout", item.layout.get());
  if (item.value) expr(depth + 1, "value", item.value.get());
}

}  // namespace

std::string dump(const File& file) {
  Dumper d;
  d.line(0, "", fmt::format("file {}", file.fileId));
  for (const StmtPtr& s : file.stmts)
    if (s) d.stmt(1, *s);
  return d.take();
}

}  // namespace kdl::ast
