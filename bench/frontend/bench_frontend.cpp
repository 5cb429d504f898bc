// Front-end throughput: runs runFrontend (read + parse + evaluate + validate) on one file N times and
// reports kernels per second (median over the runs, and the best).
// Usage: bench_frontend FILE [runs=10] [--max-kernels=N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dsl/diagnostics.h"
#include "dsl/frontend.h"
#include "dsl/source.h"

int main(int argc, char** argv) {
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
