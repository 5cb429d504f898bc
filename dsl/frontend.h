// The front end in one call: read + parse + evaluate + validate. Used by kdlc, the tests, the fuzzer
// and the benchmark.
#pragma once
#include <string>
#include <vector>

#include "dsl/diagnostics.h"
#include "dsl/eval/evaluator.h"
#include "dsl/source.h"
#include "dsl/spec.h"

namespace kdl {

struct FrontendResult {
  std::vector<KernelSpec> specs;  // the kernels that validated
  size_t kernelsProduced = 0;     // kernels the script produced, valid or not
  EvalResult raw;                 // those kernels as evaluated (codegen::noteAcceptedTiles re-validates one)
};

FrontendResult runFrontend(SourceManager& sm, const std::string& path, DiagEngine& diags,
                           const EvalLimits& limits = {});
FrontendResult runFrontendOnText(SourceManager& sm, const std::string& path, std::string text,
                                 DiagEngine& diags, const EvalLimits& limits = {});

}  // namespace kdl
