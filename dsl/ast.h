// The KDL abstract syntax tree. The parser (dsl/parse/) builds it from ANTLR's parse tree; nothing
// outside dsl/parse/ sees ANTLR types. Every node carries the source range it came from.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dsl/source.h"

namespace kdl::ast {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  Int,        // intValue
  Float,      // floatValue
  Bool,       // boolValue
  Auto,       // the keyword `auto`
  String,     // parts: literal text and ${...} interpolations
  Name,       // name
  Tuple,      // elems (a parenthesised list with a comma; `(x)` is just x)
  List,       // elems
  Index,      // elems[0] indexed by elems[1]
  Call,       // callee = elems[0], arguments = elems[1..]
  Unary,      // op applied to elems[0]
  Binary,     // elems[0] op elems[1]
  Ternary,    // elems[0] ? elems[1] : elems[2]
};

enum class UnaryOp { Neg, Not, Plus };
enum class BinaryOp { Add, Sub, Mul, Div, Mod, Lt, Le, Gt, Ge, Eq, Ne, And, Or };

const char* unaryOpSpelling(UnaryOp);
const char* binaryOpSpelling(BinaryOp);

// One piece of a string literal: literal text (escapes already decoded) or an interpolated expression.
struct StringPart {
  std::string text;
  ExprPtr expr;  // non-null for ${...}
};

struct Expr {
  Expr() = default;
  Expr(const Expr&) = delete;
  Expr& operator=(const Expr&) = delete;
  // Frees the subtree with a loop: a chain of 100000 `+` is a tree that deep (see binaryChain).
  ~Expr();

  ExprKind kind;
  SourceLoc loc;  // the whole expression
  int64_t intValue = 0;
  double floatValue = 0;
  bool boolValue = false;
  std::string name;  // Name
  UnaryOp unaryOp = UnaryOp::Neg;
  BinaryOp binaryOp = BinaryOp::Add;
  std::vector<ExprPtr> elems;
  std::vector<StringPart> parts;  // String
  SourceLoc opLoc;                // the operator token of Unary/Binary/Ternary, the '[' of Index, '(' of Call
};

// Binary operators are left-associative, so `a - b + c` is (+ (- a b) c): a chain of N operators is
// a tree N deep down its left operands. Passes over the tree take the chain with a loop, not
// recursion: this returns its Binary nodes from the innermost (applied first) to `top`; the chain's
// first operand is the front's elems[0]. Right operands bind tighter and are ordinary subtrees.
std::vector<const Expr*> binaryChain(const Expr& top);

// ---- kernel bodies -------------------------------------------------------------------------------

// `NAME = expr;` inside a kernel body.
struct FieldAssign {
  std::string name;
  SourceLoc nameLoc;
  ExprPtr value;
  SourceLoc loc;  // the whole statement
};

// `NAME : dtype layout [align N] [scale (BM, BK)];` — dtype and layout are postfix expressions (names,
// indexing, calls); the suffixes come in either order.
struct OperandDecl {
  std::string name;
  SourceLoc nameLoc;
  ExprPtr dtype;
  ExprPtr layout;
  ExprPtr align;  // may be null
  ExprPtr scale;  // may be null: the block of one f32 scale, e.g. (1, 128)
  SourceLoc loc;
};

// Epilogue items, in source order.
enum class EpilogueItemKind {
  Param,   // param NAME [: dtype] = default;
  Input,   // input NAME : dtype [broadcast];
  Output,  // output NAME : dtype [layout] = expr;   (no layout: a reduction to one device scalar)
  Let,     // let NAME = expr;
  Assign,  // NAME = expr;
};

struct EpilogueItem {
  EpilogueItemKind kind;
  std::string name;
  SourceLoc nameLoc;
  ExprPtr dtype;        // Param (optional), Input, Output
  ExprPtr layout;       // Output (optional)
  ExprPtr value;        // Param default, Output/Let/Assign expression
  std::string broadcast;  // Input: "row", "col", "channel" or "" for `[]`
  SourceLoc broadcastLoc;
  SourceLoc loc;
};

struct EpilogueBlock {
  std::vector<EpilogueItem> items;
  SourceLoc loc;  // the `epilogue` keyword
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

enum class BodyItemKind { Field, Operand, Epilogue, Let, Assert };

struct BodyItem {
  BodyItemKind kind;
  FieldAssign field;      // Field
  OperandDecl operand;    // Operand
  EpilogueBlock epilogue; // Epilogue
  StmtPtr stmt;           // Let, Assert (the same node as at top level)
};

struct KernelBody {
  std::vector<BodyItem> items;
  SourceLoc loc;  // from '{' to '}'
};

// ---- statements ----------------------------------------------------------------------------------

enum class StmtKind { Let, Fn, Template, Kernel, For, If, Assert, Import };

struct Param {
  std::string name;
  SourceLoc loc;
  ExprPtr defaultValue;  // templates only; may be null
};

struct Stmt {
  StmtKind kind;
  SourceLoc loc;  // the keyword .. end of statement (at least the keyword)

  // Let: name = value.   Fn: name(params) = value.   For: name in value { body }.
  // Template: name(params) { kernelBody }.
  // Kernel: kernel <name | nameExpr> [= templateName(args)] [{ kernelBody }].
  // If: if value { body } else { elseBody }  (`else if` is an If inside elseBody).
  // Assert: assert value, message.   Import: import path;
  std::string name;
  SourceLoc nameLoc;
  ExprPtr nameExpr;  // Kernel with a string-expression name
  ExprPtr value;
  ExprPtr message;   // Assert (may be null)
  std::vector<Param> params;
  std::vector<StmtPtr> body;
  std::vector<StmtPtr> elseBody;
  bool hasElse = false;
  std::string templateName;  // Kernel instantiating a template
  SourceLoc templateLoc;
  std::vector<ExprPtr> args;  // template arguments
  std::vector<std::string> argNames;  // named arguments (`tile = t`); "" for positional
  std::optional<KernelBody> kernelBody;  // Kernel (optional with a template), Template
  std::string path;  // Import (decoded string)
  SourceLoc pathLoc;
};

struct File {
  uint32_t fileId = 0;
  std::vector<StmtPtr> stmts;
};

// Renders the tree with locations, one node per line (kdlc --emit=ast).
std::string dump(const File& file);

}  // namespace kdl::ast
