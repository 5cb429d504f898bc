// libFuzzer target over the whole front end: parse + evaluate + validate (runFrontendOnText), with
// small limits so that one input cannot run long or use much memory. A finding is a crash, a
// sanitizer report, an uncaught exception, or a timeout/out-of-memory that the limits should have
// prevented. scripts/fuzz.sh builds and runs it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dsl/diagnostics.h"
#include "dsl/frontend.h"
#include "tools/kdlc/list.h"
#include "dsl/source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kdl::EvalLimits limits;
  limits.maxKernels = 64;
  limits.maxCallDepth = 64;
  limits.maxSteps = 100'000;
  limits.maxSequence = 10'000;
  limits.maxString = 64 << 10;
  limits.maxFileBytes = 1 << 20;

  kdl::SourceManager sm;
  kdl::DiagEngine diags(20);
  // Imports resolve relative to this name; the fuzzer's working directory holds no .kdl files, so an
  // import is an [import-not-found] (or an [import-cycle] for "fuzz.kdl" itself).
  kdl::FrontendResult r = kdl::runFrontendOnText(sm, "fuzz.kdl", std::string(reinterpret_cast<const char*>(data), size),
                                                 diags, limits);
  // The printers are part of what users see: exercise them too.
  std::string text = kdl::renderText(sm, diags, false);
  std::string json = kdl::renderJson(sm, diags);
  if (!r.specs.empty()) {
    std::string list = kdl::renderSpecsText(sm, r.specs);
    std::string listJson = kdl::renderSpecsJson(sm, r.specs);
  }
  return 0;
}
