// What evaluating a script yields: kernels with their fields as script values, each with the location
// it came from. Validation (dsl/check/validate.h) turns these into typed KernelSpecs.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "dsl/ast.h"
#include "dsl/source.h"
#include "dsl/eval/value.h"

namespace kdl {

// An epilogue expression after evaluation: names the epilogue declares (acc, operands, params,
// inputs, lets, outputs) stay symbolic; other names bound in the script were replaced by their value
// (Const); names bound nowhere stay Name for validation to report.
struct EpiExpr {
  enum class Kind { Const, Name, Call, Unary, Binary, Ternary };
  Kind kind = Kind::Const;
  SourceLoc loc;
  Value constant;    // Const
  std::string name;  // Name, and the function of a Call
  SourceLoc nameLoc; // Call: the function name
  ast::UnaryOp unaryOp = ast::UnaryOp::Neg;
  ast::BinaryOp binaryOp = ast::BinaryOp::Add;
  std::vector<EpiExpr> args;  // Call arguments, Unary/Binary/Ternary operands
};

struct RawEpilogueItem {
  ast::EpilogueItemKind kind;
  std::string name;
  SourceLoc nameLoc;
  Value dtype;  // Input, Output, Param (None when not given)
  SourceLoc dtypeLoc;
  Value layout;  // Output (None for a reduction)
  SourceLoc layoutLoc;
  Value defaultValue;  // Param
  SourceLoc defaultLoc;
  std::string broadcast;  // Input: "row", "col", "channel", "" (as written; validation checks it)
  SourceLoc broadcastLoc;
  std::optional<EpiExpr> expr;  // Output, Let, Assign
  SourceLoc loc;
};

struct RawEpilogue {
  std::vector<RawEpilogueItem> items;
  SourceLoc loc;
};

struct RawField {
  std::string name;
  SourceLoc nameLoc;
  Value value;
  SourceLoc valueLoc;
  bool fromTemplate = false;  // set by the template's body rather than the kernel's own
};

struct RawOperand {
  std::string name;
  SourceLoc nameLoc;
  Value dtype;
  SourceLoc dtypeLoc;
  Value layout;
  SourceLoc layoutLoc;
  Value align;  // None when not given
  SourceLoc alignLoc;
  Value scale;  // None when not given
  SourceLoc scaleLoc;
  SourceLoc loc;
};

struct RawKernel {
  std::string name;
  SourceLoc nameLoc;        // the name (or name expression) in the kernel statement
  std::string templateName;  // "" unless instantiated from a template
  SourceLoc templateLoc;     // the template's definition
  std::vector<RawField> fields;      // in order of first assignment; overrides replace in place
  std::vector<RawOperand> operands;  // in declaration order
  std::optional<RawEpilogue> epilogue;
  // Evaluating the kernel statement reported errors (its failed values are None). Such a kernel is
  // never emitted; validation reports only what cannot be a consequence of those errors, so that a
  // typo in one field does not hide a broken rule in another.
  bool poisoned = false;
};

struct EvalResult {
  std::vector<RawKernel> kernels;  // in the order the script produced them
};

}  // namespace kdl
