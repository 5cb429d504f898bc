// The benchmark: the kernels of KDL specs (bench/specs/*.kdl) against cuBLASLt, in one process, on the
// GEMM shapes of ANCHORS.md. A row-major, B column-major, D bf16 row-major, random inputs (never
// zeros), in three input modes, each with its anchor measured in the same run:
//   bf16        D = acc (alpha 1, beta 0)                      vs cuBLASLt bf16 (f32 compute)
//   e4m3        D = acc * scale_a * scale_b (per-tensor)       vs cuBLASLt fp8 e4m3 with A/B scale
//                                                                pointers, fast accumulation on and off
//   e4m3_block  1x128 (A) / 128x128 (B) block scales           vs cuBLASLt fp8 with VEC128/BLK128x128
//                                                                block scales (where it has them) and
//                                                                per-tensor fp8; DeepGEMM's figures
// Per (shape, kernel[, split-K slices: each fixed count 1..N of a serial(N) kernel, and 0, the kernel's
// own choice]): 10 warm-up launches, then 7 timed batches of 20-50 launches
// (CUDA events), each followed by a batch of the kernel's anchor, rotating among input sets when they
// fit in L2: the card's clock drifts under its power cap, so a kernel and its anchor are compared in
// the same minutes (ratio = the median of the per-pair ratios), not the anchor measured first while the
// card is cool and the kernels after it. The anchors are also timed alone, first. Each kernel's result
// is checked once against cuBLASLt's (relative error <= 2e-2): a wrong kernel is reported and cannot
// win. Scale inputs of the kernels are 1 (so that the result compares with the anchor's; the kernel
// reads and applies them all the same); other epilogue inputs are 1, params their defaults (alpha 1,
// beta 0).
//
//   kdl_bench [--csv FILE] [--markdown FILE] [--shape MxNxK]... [--mode bf16|e4m3|e4m3_block]...
//             [--batches N] SPEC.kdl LIB.so [SPEC.kdl LIB.so]...
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
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

enum class Mode { Bf16, E4m3, E4m3Block };
const char* modeName(Mode m) {
  switch (m) {
    case Mode::Bf16: return "bf16";
    case Mode::E4m3: return "e4m3";
    case Mode::E4m3Block: return "e4m3_block";
  }
  return "?";
}

struct Shape {
  int64_t m, n, k;
};
std::string shapeName(const Shape& s) {
  char b[64];
  std::snprintf(b, sizeof b, "%lldx%lldx%lld", (long long)s.m, (long long)s.n, (long long)s.k);
  return b;
}

// ANCHORS.md (H100 80GB HBM3 SXM, 2026-11-22; DeepGEMM: its repository, H800 SXM). 0 = none.
struct Published {
  Shape shape;
  double cublasBf16, cutlass90Bf16, cutlass80Bf16, cublasE4m3Fast, cutlass90E4m3, deepgemmBlock;
};
const std::vector<Published> kPublished = {
    {{2048, 2048, 2048}, 539, 561, 404, 868, 1006, 0},
    {{4096, 4096, 4096}, 789, 772, 487, 1395, 1422, 0},
    {{8192, 8192, 8192}, 717, 739, 508, 1201, 1292, 0},
    {{8192, 1024, 8192}, 782, 817, 0, 1379, 1480, 0},
    {{128, 8192, 8192}, 328, 196, 192, 582, 358, 0},
    {{4096, 7168, 16384}, 0, 0, 0, 0, 0, 1426},
    {{4096, 4096, 7168}, 0, 0, 0, 0, 0, 1265},
};
const Published* publishedFor(const Shape& s) {
  for (const Published& p : kPublished)
    if (p.shape.m == s.m && p.shape.n == s.n && p.shape.k == s.k) return &p;
  return nullptr;
}
std::string publishedText(Mode mode, const Shape& s) {
  const Published* p = publishedFor(s);
  if (!p) return "-";
  char b[200];
  auto v = [](double x) { return x > 0 ? fmtDouble(x, 4) : std::string("-"); };
  switch (mode) {
    case Mode::Bf16:
      std::snprintf(b, sizeof b, "cuBLAS %s, CUTLASS sm90 %s, CUTLASS sm80 %s", v(p->cublasBf16).c_str(),
                    v(p->cutlass90Bf16).c_str(), v(p->cutlass80Bf16).c_str());
      break;
    case Mode::E4m3:
      std::snprintf(b, sizeof b, "cuBLAS fast-accum %s, CUTLASS sm90 %s", v(p->cublasE4m3Fast).c_str(),
                    v(p->cutlass90E4m3).c_str());
      break;
    case Mode::E4m3Block:
      if (p->deepgemmBlock > 0) std::snprintf(b, sizeof b, "DeepGEMM %s (H800)", v(p->deepgemmBlock).c_str());
      else std::snprintf(b, sizeof b, "cuBLAS per-tensor fast-accum %s", v(p->cublasE4m3Fast).c_str());
      break;
  }
  return b;
}

// The shapes each mode runs by default: the ANCHORS.md GEMM shapes for bf16; the fp8 pair; for
// block scales the fp8 pair and DeepGEMM's two published shapes.
std::vector<Shape> defaultShapes(Mode m) {
  switch (m) {
    case Mode::Bf16: return {{2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}, {8192, 1024, 8192}, {128, 8192, 8192}};
    case Mode::E4m3: return {{4096, 4096, 4096}, {8192, 8192, 8192}};
    case Mode::E4m3Block: return {{4096, 4096, 4096}, {8192, 8192, 8192}, {4096, 7168, 16384}, {4096, 4096, 7168}};
  }
  return {};
}

struct Options {
  std::string csv, markdown;
  std::vector<Shape> shapes;  // overrides every mode's defaults
  std::vector<Mode> modes = {Mode::Bf16, Mode::E4m3, Mode::E4m3Block};
  int batches = 7;
  int ltCandidates = 8;  // cuBLASLt's heuristic algorithms timed per anchor plan (the fastest is the anchor)
  std::vector<std::pair<std::string, std::string>> files;
};

// Device buffer of `count` random elements of `t` (bf16 or fp8) in [-1, 1), never zero.
void* randomDevice(DType t, size_t count, uint64_t seed) {
  const size_t eb = storageBytes(t);
  std::vector<uint8_t> h(count * eb);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < count; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    double v = roundThrough(t, (double)(s >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
    if (v == 0) v = 0.25;
    storeElement(t, h.data() + i * eb, v);
  }
  void* d = nullptr;
  KDL_CUDA_CHECK(cudaMalloc(&d, h.size()));
  KDL_CUDA_CHECK(cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice));
  return d;
}

// Device buffer of `count` f32 ones (scales, epilogue inputs).
float* onesDevice(size_t count) {
  std::vector<float> h(std::max<size_t>(count, 1), 1.0f);
  float* d = nullptr;
  KDL_CUDA_CHECK(cudaMalloc(&d, h.size() * 4));
  KDL_CUDA_CHECK(cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
  return d;
}

double relErrorBf16(const void* dOut, const void* dRef, size_t count) {
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Batches of one launch function, timed with CUDA events: warm-ups, then one probe batch that sizes the
// rest (20-50 launches, aiming at ~20 ms a batch); batch() returns the time per launch (ms).
struct Batches {
  std::function<void(int)> launch;
  int sets;
  int perBatch = 20;
  cudaEvent_t e0{}, e1{};
  Batches(std::function<void(int)> f, int s) : launch(std::move(f)), sets(s) {
    KDL_CUDA_CHECK(cudaEventCreate(&e0));
    KDL_CUDA_CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < 10; ++i) launch(i % sets);
    KDL_CUDA_CHECK(cudaDeviceSynchronize());
    const double probe = run(5);
    perBatch = (int)std::clamp<double>(std::ceil(20.0 / std::max(probe, 1e-4)), 20, 50);
  }
  ~Batches() {
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }
  double run(int n) {
    KDL_CUDA_CHECK(cudaEventRecord(e0));
    for (int i = 0; i < n; ++i) launch(i % sets);
    KDL_CUDA_CHECK(cudaEventRecord(e1));
    KDL_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    KDL_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    KDL_CUDA_CHECK(cudaGetLastError());
    return ms / n;
  }
  double batch() { return run(perBatch); }
};

// Median time per launch (ms) of `launch(set)` over `batches` batches.
template <class F>
double timeIt(F&& launch, int sets, int batches) {
  Batches b(std::forward<F>(launch), sets);
  std::vector<double> t;
  for (int i = 0; i < batches; ++i) t.push_back(b.batch());
  return median(t);
}

// A kernel and its anchor in alternating batches: their median times per launch and the median of the
// per-pair ratios (anchor time / kernel time: above 1, the kernel is faster).
// How far (relative) a kernel's paired anchor figure may lie from the anchor timed alone before it is taken
// for a measurement fault rather than clock drift (which moves it by up to ~15 % under the power cap).
constexpr double kAnchorDrift = 0.25;

struct Paired {
  double ms = 0, anchorMs = 0, ratio = 0;
};
template <class F, class G>
Paired timePaired(F&& launch, G&& anchor, int sets, int batches) {
  Batches ours(std::forward<F>(launch), sets);
  Batches theirs(std::forward<G>(anchor), sets);
  std::vector<double> t, ta, r;
  for (int i = 0; i < batches; ++i) {
    t.push_back(ours.batch());
    ta.push_back(theirs.batch());
    r.push_back(ta.back() / t.back());
  }
  return Paired{median(t), median(ta), median(r)};
}

struct Row {
  std::string shape, mode, kernel, note;
  int split = 1;
  double ms = 0, tflops = 0, rel = 0;
  bool valid = false;
  double anchorTflops = 0, ratio = 0;  // a KDL kernel's: its anchor's in the same batch pairs, and their ratio
};

// One anchor measurement (cuBLASLt in some configuration).
struct Anchor {
  std::string name, algo;
  double tflops = 0;  // 0: not available
};

struct Summary {
  Mode mode;
  Shape shape;
  Row best;
  std::vector<Anchor> anchors;
  std::string ratioAgainst;  // the anchor of the mode's kernels
  std::string bestAgainst;   // the anchor of the best kernel (a promoted fp8 kernel: no fast accumulation)
};

// An anchor's figure timed alone before the kernels (0: not run, or not available).
double anchorAlone(const Summary& su, const std::string& name) {
  for (const Anchor& a : su.anchors)
    if (a.name == name) return a.tflops;
  return 0;
}

struct Bench {
  const KernelSpec* spec;
  KernelEntry e;
  const kdl_kernel_info* info;
  Mode mode;
  BlockScale scaleA, scaleB;
};

bool parseShape(const std::string& s, Shape& out) {
  long long m, n, k;
  if (std::sscanf(s.c_str(), "%lldx%lldx%lld", &m, &n, &k) != 3 || m <= 0 || n <= 0 || k <= 0) return false;
  out = Shape{m, n, k};
  return true;
}

// The kernel's input mode, or nothing when the benchmark has no anchor for it.
bool modeOf(const KernelSpec& s, const kdl_kernel_info* info, Mode& mode, std::string& why) {
  const Operand *A = s.operand("A"), *B = s.operand("B"), *D = s.operand("D");
  if (s.op.value != Op::Gemm || !A || !B || !D || A->layout != Layout::Row || B->layout != Layout::Col ||
      D->dtype != DType::BF16 || D->layout != Layout::Row) {
    why = "not a GEMM with A row, B col and a bf16 row-major D";
    return false;
  }
  bool scaleArgs = false;  // block scales: the scale tensors follow their operands
  for (int i = 0; i < info->nargs; ++i)
    scaleArgs |= std::string(info->arg_names[i]) == "scale_A" || std::string(info->arg_names[i]) == "scale_B";
  if (A->dtype == DType::BF16 && B->dtype == DType::BF16) mode = Mode::Bf16;
  else if (A->dtype == DType::E4M3 && B->dtype == DType::E4M3) mode = scaleArgs ? Mode::E4m3Block : Mode::E4m3;
  else {
    why = std::string("inputs ") + name(A->dtype) + " x " + name(B->dtype) + " (the benchmark has bf16 and e4m3 anchors)";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::vector<std::string> pos;
  bool modesGiven = false;
  const char* usage =
      "usage: kdl_bench [--csv FILE] [--markdown FILE] [--shape MxNxK]... [--mode bf16|e4m3|e4m3_block]...\n"
      "                 [--batches N] [--lt-candidates N] SPEC.kdl LIB.so [SPEC.kdl LIB.so]...\n"
      "  --lt-candidates N: time cuBLASLt's first N heuristic algorithms per shape and keep the fastest as the\n"
      "                     anchor (default 8; 1: the heuristic's first, untimed)\n";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--csv" && i + 1 < argc) opt.csv = argv[++i];
    else if (a == "--markdown" && i + 1 < argc) opt.markdown = argv[++i];
    else if (a == "--batches" && i + 1 < argc) opt.batches = std::max(5, std::atoi(argv[++i]));
    else if (a == "--lt-candidates" && i + 1 < argc) opt.ltCandidates = std::max(1, std::atoi(argv[++i]));
    else if (a == "--shape" && i + 1 < argc) {
      Shape s;
      if (!parseShape(argv[++i], s)) {
        std::fprintf(stderr, "bad --shape %s (want MxNxK)\n", argv[i]);
        return 2;
      }
      opt.shapes.push_back(s);
    } else if (a == "--mode" && i + 1 < argc) {
      const std::string m = argv[++i];
      if (!modesGiven) opt.modes.clear(), modesGiven = true;
      if (m == "bf16") opt.modes.push_back(Mode::Bf16);
      else if (m == "e4m3") opt.modes.push_back(Mode::E4m3);
      else if (m == "e4m3_block") opt.modes.push_back(Mode::E4m3Block);
      else {
        std::fprintf(stderr, "bad --mode %s\n%s", m.c_str(), usage);
        return 2;
      }
    } else if (a[0] == '-') {
      std::fprintf(stderr, "%s", usage);
      return 2;
    } else pos.push_back(a);
  }
  if (pos.empty() || pos.size() % 2 != 0) {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  for (size_t i = 0; i < pos.size(); i += 2) opt.files.emplace_back(pos[i], pos[i + 1]);

  cudaDeviceProp prop{};
  KDL_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int deviceCC = prop.major * 10 + prop.minor;
  std::printf("device: %s, sm_%d%d, %d SMs, L2 %d MB\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              prop.l2CacheSize >> 20);

  // Every spec's kernels, by mode. The front-end results and libraries live to the end.
  std::vector<std::unique_ptr<SourceManager>> sms;
  std::vector<std::unique_ptr<FrontendResult>> results;
  std::vector<std::unique_ptr<KernelLibrary>> libs;
  std::vector<Bench> kernels;
  for (const auto& [specPath, libPath] : opt.files) {
    sms.push_back(std::make_unique<SourceManager>());
    DiagEngine diags;
    results.push_back(std::make_unique<FrontendResult>(runFrontend(*sms.back(), specPath, diags)));
    if (diags.hasErrors()) {
      std::fputs(renderText(*sms.back(), diags).c_str(), stderr);
      return 1;
    }
    libs.push_back(std::make_unique<KernelLibrary>());
    std::string err;
    if (!libs.back()->open(libPath, err)) {
      std::fprintf(stderr, "cannot open %s: %s\n", libPath.c_str(), err.c_str());
      return 1;
    }
    for (const KernelSpec& s : results.back()->specs) {
      std::string missing, why;
      KernelEntry e = libs.back()->lookup(s.name, missing);
      if (!e.complete()) {
        std::printf("skip %s: not in the library (%s)\n", s.name.c_str(), missing.c_str());
        continue;
      }
      const bool exactArch = s.arch.value == Arch::SM90a || s.arch.value == Arch::SM100a;
      if (exactArch ? archNumber(s.arch.value) != deviceCC : archNumber(s.arch.value) > deviceCC) {
        std::printf("skip %s: arch %s does not run on this device (sm_%d)\n", s.name.c_str(), name(s.arch.value), deviceCC);
        continue;
      }
      Bench b{&s, e, e.info(), Mode::Bf16, blockScaleOf(s.operand("A")), blockScaleOf(s.operand("B"))};
      if (!modeOf(s, b.info, b.mode, why)) {
        std::printf("skip %s: %s\n", s.name.c_str(), why.c_str());
        continue;
      }
      if (b.mode == Mode::E4m3Block && !(b.scaleA.on() && b.scaleB.on())) {
        std::printf("skip %s: scale_A / scale_B arguments without `scale (...)` on both operands\n", s.name.c_str());
        continue;
      }
      kernels.push_back(b);
    }
  }

  CublasLt lt;
  lt.setCandidates(opt.ltCandidates);
  std::vector<Row> rows;
  std::vector<Summary> summary;

  for (Mode mode : opt.modes) {
    const std::vector<Shape> shapes = opt.shapes.empty() ? defaultShapes(mode) : opt.shapes;
    const DType in = mode == Mode::Bf16 ? DType::BF16 : DType::E4M3;
    for (const Shape& sh : shapes) {
      const std::string sname = shapeName(sh);
      const size_t aCount = (size_t)(sh.m * sh.k), bCount = (size_t)(sh.k * sh.n), dCount = (size_t)(sh.m * sh.n);
      const double inBytes = (double)storageBytes(in) * (double)(aCount + bCount);
      const int sets = (int)std::clamp<double>(std::ceil(2.0 * prop.l2CacheSize / inBytes), 1, 8);
      std::vector<void*> As, Bs;
      for (int s = 0; s < sets; ++s) {
        As.push_back(randomDevice(in, aCount, 1000 + 2 * s));
        Bs.push_back(randomDevice(in, bCount, 1001 + 2 * s));
      }
      void* D = nullptr;
      void* Dref = nullptr;
      KDL_CUDA_CHECK(cudaMalloc(&D, dCount * 2));
      KDL_CUDA_CHECK(cudaMalloc(&Dref, dCount * 2));
      // Ones for every scale and epilogue input: enough for per-element-of-K-block scales of either operand.
      const int64_t kBlocksMax = (sh.k + 31) / 32;
      float* ones = onesDevice((size_t)(std::max(sh.m, sh.n) * kBlocksMax + 64));
      void* scratch = nullptr;  // extra outputs (tensors, amax)
      KDL_CUDA_CHECK(cudaMalloc(&scratch, dCount * 4 + 256));
      const double flop = 2.0 * sh.m * sh.n * sh.k;

      Summary su;
      su.mode = mode;
      su.shape = sh;
      // Anchors: the reference result (Dref) from the first, then each one timed (alone); their launch
      // functions are kept for the kernels' paired timing.
      std::map<std::string, std::function<void(int)>> anchorLaunch;
      auto timeAnchor = [&](const std::string& nm, auto&& call) {
        Anchor an;
        an.name = nm;
        if (!call(0, &an.algo)) {
          std::printf("%-16s %-10s %-40s not available: %s\n", sname.c_str(), modeName(mode), nm.c_str(), an.algo.c_str());
          su.anchors.push_back(an);
          return;
        }
        anchorLaunch[nm] = [call](int s) { call(s, nullptr); };
        const double ms = timeIt([&](int s) { call(s, nullptr); }, sets, opt.batches);
        an.tflops = flop / (ms * 1e-3) / 1e12;
        rows.push_back(Row{sname, modeName(mode), nm, an.algo, 1, ms, an.tflops, 0, true});
        std::printf("%-16s %-10s %-40s %8.3f ms %7.1f TFLOP/s  (%s, %d input sets)\n", sname.c_str(), modeName(mode),
                    nm.c_str(), ms, an.tflops, an.algo.c_str(), sets);
        su.anchors.push_back(an);
      };
      bool haveRef = false;
      if (mode == Mode::Bf16) {
        haveRef = lt.matmulOut(DType::BF16, DType::BF16, As[0], Layout::Row, sh.k, Bs[0], Layout::Col, sh.k, Dref, sh.m,
                               sh.n, sh.k, 0);
        timeAnchor("cuBLASLt bf16", [&](int s, std::string* algo) {
          return lt.matmulOut(DType::BF16, DType::BF16, As[s], Layout::Row, sh.k, Bs[s], Layout::Col, sh.k, D, sh.m,
                              sh.n, sh.k, 0, algo);
        });
        su.ratioAgainst = "cuBLASLt bf16";
      } else {
        haveRef = lt.matmulFp8(DType::E4M3, DType::E4M3, As[0], sh.k, Bs[0], sh.k, Dref, sh.m, sh.n, sh.k, ones, ones,
                               false, false, 0);
        auto fp8 = [&](bool fast, bool block) {
          return [&, fast, block](int s, std::string* algo) {
            return lt.matmulFp8(DType::E4M3, DType::E4M3, As[s], sh.k, Bs[s], sh.k, D, sh.m, sh.n, sh.k, ones, ones,
                                fast, block, 0, algo);
          };
        };
        if (mode == Mode::E4m3Block) {
          timeAnchor("cuBLASLt e4m3 block scales", fp8(false, true));
          timeAnchor("cuBLASLt e4m3 per-tensor fast-accum", fp8(true, false));
          // The block-scaled anchor where cuBLASLt has one, else per-tensor fp8.
          su.ratioAgainst = su.anchors[0].tflops > 0 ? su.anchors[0].name : su.anchors[1].name;
        } else {
          timeAnchor("cuBLASLt e4m3 fast-accum", fp8(true, false));
          timeAnchor("cuBLASLt e4m3 no-fast-accum", fp8(false, false));
          su.ratioAgainst = su.anchors[0].name;  // our plain fp8 kernels without `promotion` accumulate fast
        }
      }
      KDL_CUDA_CHECK(cudaDeviceSynchronize());

      for (const Bench& b : kernels) {
        if (b.mode != mode) continue;
        const KernelSpec& s = *b.spec;
        std::vector<int> splits = {1};
        if (s.splitK.value == SplitKMode::Serial) {
          for (int x = 2; x <= s.splitKSlices.value; ++x) splits.push_back(x);
          splits.push_back(0);  // the kernel's own choice (kdl/split_k.h), beside the fixed counts
        }
        // A promoted fp8 kernel is matched with cuBLASLt without fast accumulation, when both ran.
        std::string against = su.ratioAgainst;
        if (mode == Mode::E4m3 && promoteEveryOf(s) > 0) against = "cuBLASLt e4m3 no-fast-accum";
        for (int split : splits) {
          // Arguments in the info's order: operands, scale tensors, params (defaults; alpha 1, beta 0),
          // inputs (ones), extra outputs (scratch).
          std::vector<kdl_arg> args((size_t)b.info->nargs, kdl_arg{nullptr, 0, 0, 0.0});
          int ia = -1, ib = -1;
          for (int i = 0; i < b.info->nargs; ++i) {
            const std::string n = b.info->arg_names[i];
            const int kind = b.info->arg_kinds[i];
            if (n == "A") args[i] = {As[0], sh.k, 0, 0}, ia = i;
            else if (n == "B") args[i] = {Bs[0], sh.k, 0, 0}, ib = i;
            else if (n == "C") args[i] = {Dref, sh.n, 0, 0};  // read with beta = 0
            else if (n == "D") args[i] = {D, sh.n, 0, 0};
            else if (n == "scale_A") args[i] = {ones, (sh.m + b.scaleA.outer - 1) / b.scaleA.outer, 0, 0};
            else if (n == "scale_B") args[i] = {ones, (sh.n + b.scaleB.outer - 1) / b.scaleB.outer, 0, 0};
            else if (kind == KDL_ARG_PARAM) args[i].value = n == "beta" ? 0.0 : n == "alpha" ? 1.0 : b.info->param_defaults[i];
            else if (kind == KDL_ARG_TENSOR) args[i] = {scratch, sh.n, 0, 0};  // an extra output
            else {  // a vector or device-scalar input (ones), or an amax output (written, never read)
              const bool output = [&] {
                for (const EpiOutput& o : s.epilogue.outputs)
                  if (o.name == n) return true;
                return false;
              }();
              args[i] = {output ? scratch : (void*)ones, 0, 0, 0};
            }
          }
          Row row{sname, modeName(mode), s.name, "", split};
          if (ia < 0 || ib < 0) {
            std::printf("%-16s %-10s %-40s skipped: no A or B argument\n", sname.c_str(), modeName(mode), s.name.c_str());
            break;
          }
          kdl_gemm_shape shape{sh.m, sh.n, sh.k, 1, split};
          if (const char* msg = b.e.canImplement(&shape, args.data(), (int32_t)args.size())) {
            std::printf("%-16s %-10s %-40s split=%d declined: %s\n", sname.c_str(), modeName(mode), s.name.c_str(),
                        split, msg);
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
            std::printf("%-16s %-10s %-40s split=%d HANG: stopping\n", sname.c_str(), modeName(mode), s.name.c_str(), split);
            return 1;
          }
          if (rcAll) {
            std::printf("%-16s %-10s %-40s split=%d run returned %d\n", sname.c_str(), modeName(mode), s.name.c_str(),
                        split, rcAll);
            if (ws) cudaFree(ws);
            continue;
          }
          row.rel = haveRef ? relErrorBf16(D, Dref, dCount) : NAN;
          row.valid = haveRef && row.rel <= 2e-2;  // bf16 output of both: ~3e-3 expected
          if (auto it = anchorLaunch.find(against); it != anchorLaunch.end()) {
            const Paired pr = timePaired(launch, it->second, sets, opt.batches);
            row.ms = pr.ms;
            row.anchorTflops = flop / (pr.anchorMs * 1e-3) / 1e12;
            row.ratio = pr.ratio;
          } else {
            row.ms = timeIt(launch, sets, opt.batches);
          }
          row.tflops = flop / (row.ms * 1e-3) / 1e12;
          if (rcAll) row.valid = false, row.note = "run failed during timing";
          if (!row.valid && row.note.empty()) row.note = haveRef ? "WRONG RESULT" : "no reference";
          std::printf("%-16s %-10s %-40s split=%d %8.3f ms %7.1f TFLOP/s  (%s %7.1f, ratio %.3f)  rel.err vs cuBLASLt "
                      "%.2e%s%s\n",
                      sname.c_str(), modeName(mode), s.name.c_str(), split, row.ms, row.tflops, against.c_str(),
                      row.anchorTflops, row.ratio, row.rel, row.valid ? "" : "  ", row.note.c_str());
          // A kernel whose paired anchor batches ran far from the anchor's own figure (timed alone before the
          // kernels) was measured against a clock dip or a stall of the anchor, not against the anchor: it stays in
          // the CSV with a note, and is not named the best of its shape (one such pair set once read 351 against
          // cuBLASLt's 685 TFLOP/s and made a 0.66x kernel "1.26x").
          const double alone = anchorAlone(su, against);
          const bool anchorOk = !(row.anchorTflops > 0 && alone > 0 && std::fabs(row.anchorTflops / alone - 1.0) > kAnchorDrift);
          if (!anchorOk) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "anchor outlier: %.0f TFLOP/s in its pairs against %.0f alone (not ranked)",
                          row.anchorTflops, alone);
            row.note = buf;
            std::printf("%-16s %-10s %-40s split=%d %s\n", sname.c_str(), modeName(mode), s.name.c_str(), split, buf);
          }
          rows.push_back(row);
          // The best kernel: the highest ratio against its anchor (paired), else the highest TFLOP/s.
          const bool better = su.best.kernel.empty() || (row.ratio > 0 ? row.ratio > su.best.ratio : row.tflops > su.best.tflops);
          if (row.valid && anchorOk && better) su.best = row, su.bestAgainst = against;
          if (ws) cudaFree(ws);
        }
      }
      summary.push_back(su);
      for (void* p : As) cudaFree(p);
      for (void* p : Bs) cudaFree(p);
      cudaFree(D);
      cudaFree(Dref);
      cudaFree(ones);
      cudaFree(scratch);
    }
  }

  // The table (markdown): per mode and shape the best valid KDL kernel, the anchor the ratio is
  // taken against, the other anchors of this run, and the published figures.
  std::string md;
  md += "| shape (MxNxK) | inputs | best KDL kernel (split) | KDL TFLOP/s | anchor (same run) | anchor TFLOP/s | ratio | "
        "other anchors (same run) | published (ANCHORS.md) |\n";
  md += "|---|---|---|---|---|---|---|---|---|\n";
  for (const Summary& s : summary) {
    const Anchor* main = nullptr;
    const std::string against = s.bestAgainst.empty() ? s.ratioAgainst : s.bestAgainst;
    std::string others;
    for (const Anchor& a : s.anchors) {
      if (a.name == against) main = &a;
      else others += (others.empty() ? "" : "; ") + a.name + " " + (a.tflops > 0 ? fmtDouble(a.tflops, 4) : "n/a");
    }
    char line[1024];
    // The best kernel's own pairs with its anchor (the anchor's figure alone, if it was not paired).
    const double anchorT = s.best.anchorTflops > 0 ? s.best.anchorTflops : main ? main->tflops : 0;
    const double ratio = s.best.ratio > 0 ? s.best.ratio : anchorT > 0 && s.best.tflops > 0 ? s.best.tflops / anchorT : 0;
    std::snprintf(line, sizeof line, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", shapeName(s.shape).c_str(),
                  modeName(s.mode),
                  s.best.kernel.empty() ? "(none valid)"
                                        : (s.best.kernel + (s.best.split > 1   ? " (" + std::to_string(s.best.split) + ")"
                                                           : s.best.split == 0 ? " (split 0: its choice)"
                                                                               : ""))
                                              .c_str(),
                  s.best.tflops > 0 ? fmtDouble(s.best.tflops, 4).c_str() : "-", against.c_str(),
                  anchorT > 0 ? fmtDouble(anchorT, 4).c_str() : "n/a",
                  ratio > 0 ? (fmtDouble(ratio, 3) + "x").c_str() : "-", others.empty() ? "-" : others.c_str(),
                  publishedText(s.mode, s.shape).c_str());
    md += line;
  }
  md += "\nMedians of " + std::to_string(opt.batches) +
        " timed batches of 20-50 launches after 10 warm-ups, each KDL batch followed by one of its anchor (anchor "
        "TFLOP/s: in the best kernel's pairs; ratio: the median of the per-pair ratios; other anchors: timed alone "
        "before the kernels), CUDA events, inputs rotated past L2, TFLOP/s = 2MNK / time. Published figures: "
        "ANCHORS.md (H100 SXM; DeepGEMM's on an H800 SXM).\n";
  std::printf("\n%s", md.c_str());
  if (!opt.markdown.empty()) {
    FILE* f = std::fopen(opt.markdown.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", opt.markdown.c_str());
      return 1;
    }
    std::fputs(md.c_str(), f);
    std::fclose(f);
    std::printf("wrote %s\n", opt.markdown.c_str());
  }

  if (!opt.csv.empty()) {
    FILE* f = std::fopen(opt.csv.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", opt.csv.c_str());
      return 1;
    }
    std::fprintf(f, "shape,m,n,k,dtype,kernel,split,ms,tflops,rel_err_vs_cublaslt,valid,note,anchor,anchor_tflops,"
                    "published,ratio\n");
    for (const Row& r : rows) {
      const Summary* su = nullptr;
      for (const Summary& s : summary)
        if (shapeName(s.shape) == r.shape && modeName(s.mode) == r.mode) su = &s;
      double anchorT = r.anchorTflops;  // paired with this row's kernel; an anchor's own row: its figure alone
      if (su && anchorT == 0) anchorT = anchorAlone(*su, su->bestAgainst.empty() ? su->ratioAgainst : su->bestAgainst);
      std::string note = r.note, pub = su ? publishedText(su->mode, su->shape) : "-";
      std::replace(note.begin(), note.end(), ',', ';');
      std::replace(pub.begin(), pub.end(), ',', ';');
      std::fprintf(f, "%s,%lld,%lld,%lld,%s,%s,%d,%.5f,%.2f,%.3e,%d,%s,%s,%.2f,%s,%.4f\n", r.shape.c_str(),
                   su ? (long long)su->shape.m : 0LL, su ? (long long)su->shape.n : 0LL,
                   su ? (long long)su->shape.k : 0LL, r.mode.c_str(), r.kernel.c_str(), r.split, r.ms, r.tflops, r.rel,
                   r.valid ? 1 : 0, note.c_str(),
                   su ? (su->bestAgainst.empty() ? su->ratioAgainst : su->bestAgainst).c_str() : "", anchorT, pub.c_str(),
                   r.ratio);
    }
    std::fclose(f);
    std::printf("wrote %s\n", opt.csv.c_str());
  }
  return 0;
}
