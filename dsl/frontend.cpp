#include "dsl/frontend.h"

#include "dsl/check/validate.h"

namespace kdl {

static FrontendResult finish(EvalResult raw, DiagEngine& diags) {
  FrontendResult r;
  r.kernelsProduced = raw.kernels.size();
  r.specs = validate(raw, diags);
  r.raw = std::move(raw);
  return r;
}

FrontendResult runFrontend(SourceManager& sm, const std::string& path, DiagEngine& diags,
                           const EvalLimits& limits) {
  return finish(evaluateFile(sm, path, diags, limits), diags);
}

FrontendResult runFrontendOnText(SourceManager& sm, const std::string& path, std::string text,
                                 DiagEngine& diags, const EvalLimits& limits) {
  return finish(evaluateSource(sm, path, std::move(text), diags, limits), diags);
}

}  // namespace kdl
