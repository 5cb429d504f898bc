// The benchmark: every kernel of a KDL spec (bench/specs/bench.kdl) against cuBLASLt, in one process,
// on the GEMM shapes of ANCHORS.md. bf16, A row-major, B column-major, D row-major, alpha = 1,
// beta = 0, random inputs (never zeros). Per (shape, kernel[, split-K slices]): 10 warm-up launches,
// then the median of 7 timed batches of 20-50 launches (CUDA events), rotating among input sets
// when they fit in L2. Each kernel's result is checked once against cuBLASLt's (relative error):
// a kernel that is wrong is reported and cannot win.
//
//   kdl_bench [--csv FILE] [--shape MxNxK]... [--batches N] SPEC.kdl LIB.so
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dsl/diagnostics.h"
#include "dsl/frontend.h"
#include "tests/gpu/harness.h"
#include "tests/gpu/reference.h"

using namespace kdl;
using namespace kdl::gputest;

namespace {

struct Shape {
  int64_t m, n, k;
  double cublasAnchor;   // ANCHORS.md, cuBLAS bf16 (TFLOP/s)
  double cutlass80Anchor; // ANCHORS.md, CUTLASS 2.x sm80-path bf16; 0 where ANCHORS.md has none
  const char* cutlassNote;
};

// ANCHORS.md (H100 80GB HBM3 SXM, 2026-11-22).
const std::vector<Shape> kAnchorShapes = {
    {2048, 2048, 2048, 539, 404, "128x256x64 s3"},
    {4096, 4096, 4096, 789, 487, "128x256x64 s3"},
    {8192, 8192, 8192, 717, 508, "128x256x64 s3"},
    {8192, 1024, 8192, 782, 0, "-"},
    {128, 8192, 8192, 328, 192, "128x128x32 s5"},
};

struct Options {
  std::string csv;
  std::vector<Shape> shapes;
  int batches = 7;
  std::string spec, lib;
};

// A device buffer of bf16 random values in [-1, 1), never zero.
void* randomBf16(size_t count, uint64_t seed) {
  std::vector<uint16_t> h(count);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < count; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    float v = (float)((double)(s >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
    if (v == 0.f) v = 0.5f;
    h[i] = f32ToBf16Bits(v);
    if (h[i] == 0 || h[i] == 0x8000) h[i] = f32ToBf16Bits(0.25f);
  }
  void* d = nullptr;
  KDL_CUDA_CHECK(cudaMalloc(&d, count * 2));
  KDL_CUDA_CHECK(cudaMemcpy(d, h.data(), count * 2, cudaMemcpyHostToDevice));
  return d;
}

double relError(const void* dOut, const void* dRef, size_t count) {
  std::vector<uint16_t> a(count), b(count);
  KDL_CUDA_CHECK(cudaMemcpy(a.data(), dOut, count * 2, cudaMemcpyDeviceToHost));
  KDL_CUDA_CHECK(cudaMemcpy(b.data(), dRef, count * 2, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (size_t i = 0; i < count; ++i) {
    const double x = bf16BitsToF32(a[i]), y = bf16BitsToF32(b[i]);
    if (std::isnan(x)) return NAN;
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Median time per launch (ms) of `launch(set)`: warm-ups, then `batches` batches of `perBatch` launches.
template <class F>
double timeIt(F&& launch, int sets, int batches, double* perLaunchFirst = nullptr) {
  for (int i = 0; i < 10; ++i) launch(i % sets);
  KDL_CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  KDL_CUDA_CHECK(cudaEventCreate(&e0));
  KDL_CUDA_CHECK(cudaEventCreate(&e1));
  // One probe batch sizes the rest: 20-50 launches, aiming at ~20 ms a batch.
  KDL_CUDA_CHECK(cudaEventRecord(e0));
  for (int i = 0; i < 5; ++i) launch(i % sets);
  KDL_CUDA_CHECK(cudaEventRecord(e1));
  KDL_CUDA_CHECK(cudaEventSynchronize(e1));
  float probe = 0;
  KDL_CUDA_CHECK(cudaEventElapsedTime(&probe, e0, e1));
  const double one = probe / 5;
  if (perLaunchFirst) *perLaunchFirst = one;
  const int perBatch = (int)std::clamp<double>(std::ceil(20.0 / std::max(one, 1e-4)), 20, 50);
  std::vector<double> t;
  for (int b = 0; b < batches; ++b) {
    KDL_CUDA_CHECK(cudaEventRecord(e0));
    for (int i = 0; i < perBatch; ++i) launch((b * perBatch + i) % sets);
    KDL_CUDA_CHECK(cudaEventRecord(e1));
    KDL_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    KDL_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms / perBatch);
  }
  KDL_CUDA_CHECK(cudaGetLastError());
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Row {
  std::string shape, kernel, note;
  int split = 1;
  double ms = 0, tflops = 0, rel = 0;
  bool valid = false;
};

bool parseShape(const std::string& s, Shape& out) {
  long long m, n, k;
  if (std::sscanf(s.c_str(), "%lldx%lldx%lld", &m, &n, &k) != 3) return false;
  out = Shape{m, n, k, 0, 0, "-"};
  for (const Shape& a : kAnchorShapes)
    if (a.m == m && a.n == n && a.k == k) out = a;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--csv" && i + 1 < argc) opt.csv = argv[++i];
    else if (a == "--batches" && i + 1 < argc) opt.batches = std::max(5, std::atoi(argv[++i]));
    else if (a == "--shape" && i + 1 < argc) {
      Shape s;
      if (!parseShape(argv[++i], s)) {
        std::fprintf(stderr, "bad --shape %s (want MxNxK)\n", argv[i]);
        return 2;
      }
      opt.shapes.push_back(s);
    } else if (a[0] == '-') {
      std::fprintf(stderr, "usage: kdl_bench [--csv FILE] [--shape MxNxK]... [--batches N] SPEC.kdl LIB.so\n");
      return 2;
    } else pos.push_back(a);
  }
  if (pos.size() != 2) {
    std::fprintf(stderr, "usage: kdl_bench [--csv FILE] [--shape MxNxK]... [--batches N] SPEC.kdl LIB.so\n");
    return 2;
  }
  opt.spec = pos[0], opt.lib = pos[1];
  if (opt.shapes.empty()) opt.shapes = kAnchorShapes;

  SourceManager sm;
  DiagEngine diags;
  FrontendResult fr = runFrontend(sm, opt.spec, diags);
  if (diags.hasErrors()) {
    std::fputs(renderText(sm, diags).c_str(), stderr);
    return 1;
  }
  KernelLibrary lib;
  std::string err;
  if (!lib.open(opt.lib, err)) {
    std::fprintf(stderr, "cannot open %s: %s\n", opt.lib.c_str(), err.c_str());
    return 1;
  }
  struct Bench {
    const KernelSpec* spec;
    KernelEntry e;
    const kdl_kernel_info* info;
  };
  std::vector<Bench> kernels;
  for (const KernelSpec& s : fr.specs) {
    std::string missing;
    KernelEntry e = lib.lookup(s.name, missing);
    if (!e.complete()) {
      std::printf("skip %s: %s\n", s.name.c_str(), missing.c_str());
      continue;
    }
    const Operand *A = s.operand("A"), *B = s.operand("B"), *D = s.operand("D");
    if (s.op.value != Op::Gemm || !A || !B || !D || A->dtype != DType::BF16 || B->dtype != DType::BF16 ||
        D->dtype != DType::BF16 || A->layout != Layout::Row || B->layout != Layout::Col) {
      std::printf("skip %s: not a bf16 TN GEMM with a bf16 output\n", s.name.c_str());
      continue;
    }
    kernels.push_back({&s, e, e.info()});
  }

  cudaDeviceProp prop{};
  KDL_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, sm_%d%d, %d SMs, L2 %d MB\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);
  CublasLt lt;
  std::vector<Row> rows;
  struct Summary {
    Shape shape;
    Row best;
    double cublas = 0;
    std::string cublasAlgo;
  };
  std::vector<Summary> summary;

  for (const Shape& sh : opt.shapes) {
    char shapeName[64];
    std::snprintf(shapeName, sizeof shapeName, "%lldx%lldx%lld", (long long)sh.m, (long long)sh.n, (long long)sh.k);
    const size_t aCount = (size_t)(sh.m * sh.k), bCount = (size_t)(sh.k * sh.n), dCount = (size_t)(sh.m * sh.n);
    const double inBytes = 2.0 * (aCount + bCount);
    int sets = (int)std::clamp<double>(std::ceil(2.0 * prop.l2CacheSize / inBytes), 1, 8);
    std::vector<void*> As, Bs;
    for (int s = 0; s < sets; ++s) {
      As.push_back(randomBf16(aCount, 1000 + 2 * s));
      Bs.push_back(randomBf16(bCount, 1001 + 2 * s));
    }
    void* D = nullptr;
    void* Dref = nullptr;
    KDL_CUDA_CHECK(cudaMalloc(&D, dCount * 2));
    KDL_CUDA_CHECK(cudaMalloc(&Dref, dCount * 2));
    const double flop = 2.0 * sh.m * sh.n * sh.k;

    // cuBLASLt: reference result on set 0, then timing.
    Summary su;
    su.shape = sh;
    bool haveRef = lt.matmulOut(DType::BF16, DType::BF16, As[0], Layout::Row, sh.k, Bs[0], Layout::Col, sh.k, Dref, sh.m,
                                sh.n, sh.k, 0, &su.cublasAlgo);
    KDL_CUDA_CHECK(cudaDeviceSynchronize());
    if (haveRef) {
      const double ms = timeIt(
          [&](int s) {
            lt.matmulOut(DType::BF16, DType::BF16, As[s], Layout::Row, sh.k, Bs[s], Layout::Col, sh.k, D, sh.m, sh.n,
                         sh.k, 0);
          },
          sets, opt.batches);
      su.cublas = flop / (ms * 1e-3) / 1e12;
      rows.push_back(Row{shapeName, "cuBLASLt", su.cublasAlgo, 1, ms, su.cublas, 0, true});
      std::printf("%-16s %-36s %8.3f ms %7.1f TFLOP/s  (%s, %d input sets)\n", shapeName, "cuBLASLt", ms, su.cublas,
                  su.cublasAlgo.c_str(), sets);
    }

    for (const Bench& b : kernels) {
      const KernelSpec& s = *b.spec;
      std::vector<int> splits = {1};
      if (s.splitK.value == SplitKMode::Serial)
        for (int x = 2; x <= s.splitKSlices.value; ++x) splits.push_back(x);
      for (int split : splits) {
        // Arguments in the info's order: A, B, [C], D, params (alpha 1, beta 0), no other inputs.
        std::vector<kdl_arg> args((size_t)b.info->nargs, kdl_arg{nullptr, 0, 0, 0.0});
        int ia = -1, ib = -1;
        bool unsupported = false;
        for (int i = 0; i < b.info->nargs; ++i) {
          const std::string n = b.info->arg_names[i];
          if (n == "A") args[i] = {As[0], sh.k, 0, 0}, ia = i;
          else if (n == "B") args[i] = {Bs[0], sh.k, 0, 0}, ib = i;
          else if (n == "C") args[i] = {Dref, sh.n, 0, 0};  // read with beta = 0
          else if (n == "D") args[i] = {D, sh.n, 0, 0};
          else if (n == "alpha") args[i].value = 1.0;
          else if (n == "beta") args[i].value = 0.0;
          else unsupported = true;
        }
        Row row{shapeName, s.name, "", split};
        if (unsupported || ia < 0 || ib < 0) {
          std::printf("%-16s %-36s skipped: arguments beyond A, B, C, D, alpha, beta\n", shapeName, s.name.c_str());
          break;
        }
        kdl_gemm_shape shape{sh.m, sh.n, sh.k, 1, split};
        if (const char* msg = b.e.canImplement(&shape, args.data(), (int32_t)args.size())) {
          std::printf("%-16s %-36s split=%d declined: %s\n", shapeName, s.name.c_str(), split, msg);
          continue;
        }
        const size_t wsBytes = b.e.workspaceSize(&shape);
        void* ws = wsBytes ? deviceAllocFilled(wsBytes, 0) : nullptr;
        int rcAll = 0;
        auto launch = [&](int set) {
          args[ia].data = As[set];
          args[ib].data = Bs[set];
          const int rc = b.e.run(&shape, args.data(), (int32_t)args.size(), ws, wsBytes, nullptr);
          if (rc) rcAll = rc;
        };
        // Correctness once, on set 0, against cuBLASLt.
        KDL_CUDA_CHECK(cudaMemset(D, 0xff, dCount * 2));
        launch(0);
        if (!waitIdle(60)) {
          std::printf("%-16s %-36s split=%d HANG: stopping\n", shapeName, s.name.c_str(), split);
          return 1;
        }
        if (rcAll) {
          std::printf("%-16s %-36s split=%d run returned %d\n", shapeName, s.name.c_str(), split, rcAll);
          if (ws) cudaFree(ws);
          continue;
        }
        row.rel = haveRef ? relError(D, Dref, dCount) : NAN;
        row.valid = haveRef && row.rel <= 2e-2;  // bf16 output of both: ~3e-3 expected
        row.ms = timeIt(launch, sets, opt.batches);
        row.tflops = flop / (row.ms * 1e-3) / 1e12;
        if (rcAll) row.valid = false, row.note = "run failed during timing";
        if (!row.valid && row.note.empty()) row.note = "WRONG RESULT";
        std::printf("%-16s %-36s split=%d %8.3f ms %7.1f TFLOP/s  rel.err vs cuBLASLt %.2e%s%s\n", shapeName,
                    s.name.c_str(), split, row.ms, row.tflops, row.rel, row.valid ? "" : "  ", row.note.c_str());
        rows.push_back(row);
        if (row.valid && row.tflops > su.best.tflops) su.best = row;
        if (ws) cudaFree(ws);
      }
    }
    summary.push_back(su);
    for (void* p : As) cudaFree(p);
    for (void* p : Bs) cudaFree(p);
    cudaFree(D);
    cudaFree(Dref);
  }

  std::printf("\n%-16s %-5s %-36s %6s %9s %9s %6s %11s %11s\n", "shape", "dtype", "best KDL kernel", "split",
              "TFLOP/s", "cuBLASLt", "ratio", "CUTLASS80*", "cuBLAS*");
  for (const Summary& s : summary) {
    char shapeName[64];
    std::snprintf(shapeName, sizeof shapeName, "%lldx%lldx%lld", (long long)s.shape.m, (long long)s.shape.n,
                  (long long)s.shape.k);
    char c80[32] = "-", cub[32] = "-";
    if (s.shape.cutlass80Anchor > 0) std::snprintf(c80, sizeof c80, "%.0f", s.shape.cutlass80Anchor);
    if (s.shape.cublasAnchor > 0) std::snprintf(cub, sizeof cub, "%.0f", s.shape.cublasAnchor);
    std::printf("%-16s %-5s %-36s %6d %9.1f %9.1f %6.2f %11s %11s\n", shapeName, "bf16",
                s.best.kernel.empty() ? "(none valid)" : s.best.kernel.c_str(), s.best.split, s.best.tflops, s.cublas,
                s.cublas > 0 ? s.best.tflops / s.cublas : 0.0, c80, cub);
  }
  std::printf("* ANCHORS.md figures (H100 SXM, measured 2026-11-22), for reference; cuBLASLt column measured now.\n");

  if (!opt.csv.empty()) {
    FILE* f = std::fopen(opt.csv.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", opt.csv.c_str());
      return 1;
    }
    std::fprintf(f, "shape,m,n,k,dtype,kernel,split,ms,tflops,rel_err_vs_cublaslt,valid,note,cublaslt_tflops,"
                    "anchor_cublas,anchor_cutlass_sm80\n");
    for (const Row& r : rows) {
      const Summary* su = nullptr;
      for (const Summary& s : summary) {
        char nm[64];
        std::snprintf(nm, sizeof nm, "%lldx%lldx%lld", (long long)s.shape.m, (long long)s.shape.n, (long long)s.shape.k);
        if (r.shape == nm) su = &s;
      }
      std::fprintf(f, "%s,%lld,%lld,%lld,bf16,%s,%d,%.5f,%.2f,%.3e,%d,%s,%.2f,%.0f,%.0f\n", r.shape.c_str(),
                   su ? (long long)su->shape.m : 0LL, su ? (long long)su->shape.n : 0LL,
                   su ? (long long)su->shape.k : 0LL, r.kernel.c_str(), r.split, r.ms, r.tflops, r.rel,
                   r.valid ? 1 : 0, r.note.c_str(), su ? su->cublas : 0.0, su ? su->shape.cublasAnchor : 0.0,
                   su ? su->shape.cutlass80Anchor : 0.0);
    }
    std::fclose(f);
    std::printf("wrote %s\n", opt.csv.c_str());
  }
  return 0;
}
