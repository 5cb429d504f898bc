// Front-end throughput: runs runFrontend (read + parse + evaluate + validate) on one file N times and
// reports kernels per second (median over the runs, and the best).
// Usage: bench_frontend FILE [runs=10] [--max-kernels=N]
//        bench_frontend --deep [runs=3]
// --deep times the parser on hostile inputs of 100000 units each (nesting that must be refused
// quickly, and operator chains that must be accepted), the timing test_parser.cpp used to assert.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dsl/diagnostics.h"
#include "dsl/frontend.h"
#include "dsl/parse/parser.h"
#include "dsl/source.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string repeated(const std::string& head, const std::string& unit, size_t n, const std::string& tail) {
  std::string out = head;
  out.reserve(head.size() + unit.size() * n + tail.size());
  for (size_t i = 0; i < n; ++i) out += unit;
  return out + tail;
}

int benchDeep(int runs) {
  const size_t n = 100000;
  struct Case {
    std::string name, text;
    bool accepted;
  };
  std::vector<Case> cases;
  for (const char* unit : {"(", "-", "[", "!", "a ? b : ", "f()", "t[0]"})
    cases.push_back({std::string("nesting `") + unit + "`", repeated("let x = ", unit, n, "1;"), false});
  cases.push_back({"else if chain", repeated("if a {} ", "else if a {} ", n, ""), false});
  cases.push_back({"braces", std::string(n, '{'), false});
  cases.push_back({"chain `1 + 1 + ...`", repeated("let x = 1", " + 1", n - 1, ";"), true});
  cases.push_back({"chain `a && a && ...`", repeated("let x = a", " && a", n - 1, ";"), true});
  cases.push_back({"chain `-a[0] * -a[0] * ...`", repeated("let x = -a[0]", " * -a[0]", n - 1, ";"), true});
  int bad = 0;
  for (const Case& c : cases) {
    std::vector<double> seconds;
    size_t errors = 0;
    for (int r = 0; r < runs; ++r) {
      kdl::SourceManager sm;
      kdl::DiagEngine diags;
      uint32_t id = sm.add("deep.kdl", c.text);
      auto t0 = std::chrono::steady_clock::now();
      auto tree = kdl::parseFile(sm, id, diags);
      tree.reset();  // freeing the tree is part of the cost
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      errors = diags.errorCount();
    }
    bool asExpected = c.accepted == (errors == 0);
    bad += asExpected ? 0 : 1;
    std::printf("%-32s %8.1f ms  %s%s\n", c.name.c_str(), median(seconds) * 1e3, c.accepted ? "accepted" : "refused",
                asExpected ? "" : "  <-- UNEXPECTED");
  }
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--deep") == 0) return benchDeep(argc >= 3 ? std::max(1, std::atoi(argv[2])) : 3);
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_frontend FILE [runs=10] [--max-kernels=N]\n");
    return 2;
  }
  std::string path = argv[1];
  int runs = 10;
  kdl::EvalLimits limits;
  for (int i = 2; i < argc; ++i) {
    if (std::strncmp(argv[i], "--max-kernels=", 14) == 0) limits.maxKernels = std::strtoull(argv[i] + 14, nullptr, 10);
    else runs = std::max(1, std::atoi(argv[i]));
  }
  std::vector<double> seconds;
  size_t kernels = 0, produced = 0;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    kdl::SourceManager sm;
    kdl::DiagEngine diags;
    kdl::FrontendResult res = kdl::runFrontend(sm, path, diags, limits);
    auto t1 = std::chrono::steady_clock::now();
    if (diags.hasErrors()) {
      std::fputs(kdl::renderText(sm, diags).c_str(), stderr);
      std::fprintf(stderr, "bench_frontend: %s has %zu errors\n", path.c_str(), diags.errorCount());
      return 1;
    }
    kernels = res.specs.size();
    produced = res.kernelsProduced;
    seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[sorted.size() / 2];
  if (sorted.size() % 2 == 0) median = (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  std::printf("file: %s\nkernels: %zu valid of %zu produced\nruns: %d\n", path.c_str(), kernels, produced, runs);
  std::printf("time per run: median %.1f ms, best %.1f ms, worst %.1f ms\n", median * 1e3, sorted.front() * 1e3,
              sorted.back() * 1e3);
  std::printf("throughput: median %.0f kernels/s, best %.0f kernels/s\n", kernels / median, kernels / sorted.front());
  return 0;
}
