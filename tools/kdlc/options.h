// Command-line plumbing shared by kdlc's commands.
#pragma once
#include <cstddef>
#include <string>

#include "dsl/eval/evaluator.h"

namespace kdl {
class SourceManager;
class DiagEngine;
}  // namespace kdl

namespace kdlc {

class Args {
 public:
  Args(int argc, char** argv) : argc_(argc), argv_(argv) {}
  bool done() const { return i_ >= argc_; }
  std::string next() { return argv_[i_++]; }

 private:
  int argc_;
  char** argv_;
  int i_ = 1;
};

enum class ColorMode { Auto, Always, Never };

struct CommonOptions {
  bool jsonDiagnostics = false;
  ColorMode color = ColorMode::Auto;
  size_t maxErrors = 50;
  kdl::EvalLimits limits;
  bool bad = false;  // an option was malformed (already reported)
};

// Consumes one option common to every command; returns false when `a` is not one of them.
bool parseCommon(const std::string& a, Args& args, CommonOptions& o);
// Prints "kdlc: error: ..." plus a hint and returns the usage exit code.
int usageError(const std::string& message);
// Prints diagnostics as the options ask (JSON on stdout, or text on stderr with the error count);
// returns the input-error exit code when there are errors, else 0. Every command reports through it.
int reportDiagnostics(const kdl::SourceManager& sm, const kdl::DiagEngine& diags, const CommonOptions& o);

}  // namespace kdlc
