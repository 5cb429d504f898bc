#include "tools/kdlc/options.h"

#include <charconv>
#include <iostream>

#include "tools/kdlc/commands.h"

namespace kdlc {

int usageError(const std::string& message) {
  std::cerr << "kdlc: error: " << message << "\n(run `kdlc --help` for usage)\n";
  return kUsage;
}

static bool parseCount(const std::string& text, const char* option, size_t lo, size_t hi, size_t& out, bool& bad) {
  size_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || v < lo || v > hi) {
    usageError(std::string(option) + " takes a whole number from " + std::to_string(lo) + " to " +
               std::to_string(hi) + ", not `" + text + "`");
    bad = true;
    return false;
  }
  out = v;
  return true;
}

// Accepts both `--opt=value` and `--opt value`.
static bool optionValue(const std::string& a, const std::string& name, Args& args, std::string& value, bool& bad) {
  if (a == name) {
    if (args.done()) {
      usageError(name + " needs a value");
      bad = true;
      value.clear();
      return true;
    }
    value = args.next();
    return true;
  }
  if (a.rfind(name + "=", 0) == 0) {
    value = a.substr(name.size() + 1);
    return true;
  }
  return false;
}

bool parseCommon(const std::string& a, Args& args, CommonOptions& o) {
  std::string v;
  if (optionValue(a, "--diagnostics", args, v, o.bad)) {
    if (v == "json") o.jsonDiagnostics = true;
    else if (v == "text") o.jsonDiagnostics = false;
    else if (!o.bad) { usageError("--diagnostics takes `text` or `json`, not `" + v + "`"); o.bad = true; }
    return true;
  }
  if (a == "--color") { o.color = ColorMode::Always; return true; }
  if (optionValue(a, "--color", args, v, o.bad)) {
    if (v == "auto") o.color = ColorMode::Auto;
    else if (v == "always") o.color = ColorMode::Always;
    else if (v == "never") o.color = ColorMode::Never;
    else if (!o.bad) { usageError("--color takes `auto`, `always` or `never`, not `" + v + "`"); o.bad = true; }
    return true;
  }
  size_t n = 0;
  if (optionValue(a, "--max-errors", args, v, o.bad)) {
    if (!o.bad && parseCount(v, "--max-errors", 1, 100000, n, o.bad)) o.maxErrors = n;
    return true;
  }
  if (optionValue(a, "--max-kernels", args, v, o.bad)) {
    if (!o.bad && parseCount(v, "--max-kernels", 1, 10000000, n, o.bad)) o.limits.maxKernels = n;
    return true;
  }
  if (optionValue(a, "--max-depth", args, v, o.bad)) {
    if (!o.bad && parseCount(v, "--max-depth", 8, 10000, n, o.bad)) o.limits.maxCallDepth = static_cast<int>(n);
    return true;
  }
  return false;
}


}  // namespace kdlc
