// AST -> kernels: runs a KDL script (imports, lets, functions, templates, loops) and collects the
// kernels it produces, with every value's origin. Errors go to the DiagEngine; nothing throws.
#pragma once
#include <cstddef>
#include <string>

#include "dsl/diagnostics.h"
#include "dsl/parse/parser.h"
#include "dsl/eval/raw_kernel.h"
#include "dsl/source.h"

namespace kdl {

// Caps that turn a runaway script into a clear error [kernel-limit], [recursion-limit], [eval-limit].
struct EvalLimits {
  size_t maxKernels = 100000;
  int maxCallDepth = kDefaultMaxDepth;  // calls plus statement/expression nesting; the parser's cap too
  size_t maxSteps = 50'000'000;       // loop iterations and calls, all together
  size_t maxSequence = 1'000'000;     // elements of one list/tuple/range
  size_t maxString = 1u << 20;        // bytes of one string
  size_t maxFileBytes = 16u << 20;    // bytes of one source file
};

// Reads `path` (and every file it imports, relative to the importing file) into `sm`, parses and
// evaluates. A file that cannot be read is an [io] error without a location.
EvalResult evaluateFile(SourceManager& sm, const std::string& path, DiagEngine& diags,
                        const EvalLimits& limits = {});

// The same for text in memory, named `path` (imports resolve relative to it).
EvalResult evaluateSource(SourceManager& sm, const std::string& path, std::string text, DiagEngine& diags,
                          const EvalLimits& limits = {});

}  // namespace kdl
