// Text -> AST. The only entry into dsl/parse/, which holds the ANTLR-generated code's users.
#pragma once
#include <memory>

#include "dsl/ast.h"
#include "dsl/diagnostics.h"
#include "dsl/source.h"

namespace kdl {

// The default cap on nesting (--max-depth): brackets, prefix operators, `?:`, calls, `else if`s and
// statement blocks for the parser; calls plus statement and expression nesting for the evaluator.
// Chains of binary operators (`1 + 1 + ... + 1`) are not nesting: each precedence level counts once.
inline constexpr int kDefaultMaxDepth = 256;

// Parses file `fileId` of `sm`. Syntax errors (and number literals out of range, non-text bytes) are
// reported to `diags`; the returned tree then holds what could be built and must not be evaluated.
// Never throws; nesting deeper than `maxDepth` is a syntax error, not a stack overflow.
std::unique_ptr<ast::File> parseFile(const SourceManager& sm, uint32_t fileId, DiagEngine& diags,
                                     int maxDepth = kDefaultMaxDepth);

}  // namespace kdl
