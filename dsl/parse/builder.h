// ANTLR's parse tree -> kdl::ast. Tolerates the holes that error recovery leaves (missing children):
// the tree it builds then is only for dumping, never evaluated.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "KDLParser.h"
#include "dsl/ast.h"
#include "dsl/diagnostics.h"
#include "dsl/parse/source_map.h"

namespace kdl::parser {

// Parses the expression inside one `${...}` of a string: bytes [begin, end) of the file, nested
// `startDepth` levels deep. Returns null after reporting an error.
ast::ExprPtr parseInterpolation(const FileLines& lines, size_t begin, size_t end, DiagEngine& diags, int maxDepth,
                                int startDepth);

class Builder {
 public:
  using P = grammar::KDLParser;
  // `depthAt` holds the nesting at each token (from scanTokens), which the `${...}` of a string
  // start from.
  Builder(const SegmentMap& map, DiagEngine& diags, int maxDepth, const std::vector<int>& depthAt)
      : map_(map), diags_(diags), maxDepth_(maxDepth), depthAt_(depthAt) {}

  std::vector<ast::StmtPtr> stmts(const std::vector<P::StmtContext*>& ctxs);
  ast::ExprPtr expr(P::ExprContext* ctx);

 private:
  ast::StmtPtr stmt(P::StmtContext* ctx);
  ast::StmtPtr importStmt(P::ImportStmtContext* ctx);
  ast::StmtPtr letStmt(P::LetStmtContext* ctx);
  ast::StmtPtr fnStmt(P::FnStmtContext* ctx);
  ast::StmtPtr templateStmt(P::TemplateStmtContext* ctx);
  ast::StmtPtr kernelStmt(P::KernelStmtContext* ctx);
  ast::StmtPtr forStmt(P::ForStmtContext* ctx);
  ast::StmtPtr ifStmt(P::IfStmtContext* ctx);
  ast::StmtPtr assertStmt(P::AssertStmtContext* ctx);
  std::vector<ast::StmtPtr> block(P::BlockContext* ctx);
  std::vector<ast::Param> params(P::ParamListContext* ctx, bool allowDefaults);
  void args(P::ArgListContext* ctx, ast::Stmt& kernel);

  ast::KernelBody kernelBody(P::KernelBodyContext* ctx);
  std::optional<ast::BodyItem> bodyItem(P::BodyItemContext* ctx);
  ast::OperandDecl operand(P::OperandItemContext* ctx);
  ast::EpilogueBlock epilogue(P::EpilogueBlockContext* ctx);
  std::optional<ast::EpilogueItem> epilogueItem(P::EpilogueItemContext* ctx);
  void inputBroadcast(P::EpInputContext* ctx, ast::EpilogueItem& item);

  // A postfix chain without its last `dropLast` operators (an input's broadcast).
  ast::ExprPtr postfix(P::PostfixExprContext* ctx, size_t dropLast = 0);
  ast::ExprPtr binaryChain(P::BinaryContext* top);
  ast::ExprPtr primary(P::PrimaryContext* ctx);
  ast::ExprPtr sequence(ast::ExprKind kind, const std::vector<P::ExprContext*>& elems, SourceLoc loc);
  ast::ExprPtr intLiteral(antlr4::tree::TerminalNode* node);
  ast::ExprPtr floatLiteral(antlr4::tree::TerminalNode* node);
  ast::ExprPtr stringLiteral(antlr4::tree::TerminalNode* node);

  ast::ExprPtr node(ast::ExprKind kind, SourceLoc loc);
  ast::StmtPtr stmtNode(ast::StmtKind kind, antlr4::ParserRuleContext* ctx);
  SourceLoc loc(antlr4::ParserRuleContext* ctx) const;
  SourceLoc loc(antlr4::tree::TerminalNode* node) const;
  SourceLoc loc(antlr4::Token* token) const;
  static std::string text(antlr4::tree::TerminalNode* node);
  // The name a statement or item defines; a keyword there is reported.
  std::string definedName(P::NameContext* ctx);

  const SegmentMap& map_;
  DiagEngine& diags_;
  int maxDepth_;
  const std::vector<int>& depthAt_;
};

}  // namespace kdl::parser
