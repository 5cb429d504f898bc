// Codegen unit tests: lowering decisions, epilogue expressions, sha256, determinism, and the
// [unsupported] errors of specs this version cannot generate.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "codegen/build_ptxas.h"
#include "codegen/codegen.h"
#include "codegen/compile_cache.h"
#include "codegen/epilogue_expr.h"
#include "codegen/plan.h"
#include "codegen/sha256.h"
#include "codegen/emit_internal.h"
#include "codegen/lower_steps.h"
#define KDLC_TEST_VERSION kdl::codegen::kdlcVersion().c_str()
#include "dsl/frontend.h"
#include "include/kdl/gemm_sm80_smem.h"
#include "include/kdl/gemm_sm90_smem.h"
#include "codegen/support.h"
#include "tests/unit/codegen_fixtures.h"

using namespace kdl;
using namespace kdl::codegen;
using kdl::testing::leaf;
using kdl::testing::makeGemm;
using kdl::testing::node;

namespace {
const Decision* decision(const KernelPlan& p, const std::string& what) {
  for (const Decision& d : p.decisions)
    if (d.what == what) return &d;
  return nullptr;
}
KernelPlan lowerOne(const KernelSpec& s) {
  DiagEngine d;
  std::vector<KernelPlan> plans = lower({s}, d);
  INFO((d.all().empty() ? std::string() : d.all()[0].message));
  REQUIRE(plans.size() == 1);
  return plans[0];
}
std::string firstError(const KernelSpec& s) {
  DiagEngine d;
  std::vector<KernelPlan> plans = lower({s}, d);
  CHECK(plans.empty());
  REQUIRE(d.hasErrors());
  CHECK(d.all()[0].kind == DiagKind::Unsupported);
  return d.all()[0].message;
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("sha256 known vectors", "[codegen][sha256]") {
  CHECK(sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  CHECK(sha256Hex(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // incremental updates across block boundaries give the same digest
  Sha256 h;
  for (int i = 0; i < 1000; ++i) h.update(million.data() + i * 1000, 1000);
  CHECK(h.hexDigest() == sha256Hex(million));
}

TEST_CASE("warp arrangement and mma shape", "[codegen][lower]") {
  KernelPlan p = lowerOne(makeGemm("g", DType::BF16, DType::BF16, false, {128, 256, 32}, 3));
  CHECK(p.warpsM == 2);
  CHECK(p.warpsN == 4);
  CHECK(p.warpTileM == 64);
  CHECK(p.warpTileN == 64);
  CHECK(p.threads == 256);
  CHECK(p.mmaShape == "m16n8k16");
  p = lowerOne(makeGemm("g", DType::F16, DType::F16, false, {128, 128, 32}, 3));
  CHECK((p.warpsM == 2 && p.warpsN == 2 && p.warpTileM == 64 && p.warpTileN == 64));
  p = lowerOne(makeGemm("g", DType::F16, DType::F16, false, {64, 64, 64}, 3));
  CHECK((p.warpsM == 2 && p.warpsN == 2 && p.warpTileM == 32 && p.warpTileN == 32));
  p = lowerOne(makeGemm("g", DType::F16, DType::F16, false, {256, 128, 32}, 3));
  CHECK((p.warpsM == 4 && p.warpsN == 2));
  p = lowerOne(makeGemm("g", DType::TF32, DType::F32, false, {128, 128, 32}, 3));
  CHECK(p.mmaShape == "m16n8k8");
  CHECK(p.a.cppType == "float");
  p = lowerOne(makeGemm("g", DType::S8, DType::S8, false, {128, 128, 64}, 3));
  CHECK(p.mmaShape == "m16n8k32");
  CHECK(p.accumCpp == "int32_t");
  CHECK(p.a.align == 16);
}

TEST_CASE("targets, shared memory and decisions", "[codegen][lower]") {
  KernelSpec s = makeGemm("g", DType::BF16, DType::BF16, true, {128, 128, 32}, 4);
  KernelPlan p = lowerOne(s);
  REQUIRE(p.gencode.size() == 3);
  CHECK(p.gencode[0] == "-gencode=arch=compute_80,code=sm_80");
  CHECK(p.gencode[1] == "-gencode=arch=compute_90,code=sm_90");
  CHECK(p.gencode[2] == "-gencode=arch=compute_90,code=compute_90");
  CHECK(p.minComputeCapability == 80);
  CHECK(!p.exactComputeCapability);
  CHECK(p.smemBytes == 4 * (128 * 32 * 2 + 128 * 32 * 2));
  CHECK(p.path == KernelPath::GemmSm80);  // 64-byte K rows: no TMA variant
  for (const char* what : {"target", "path", "A", "B", "accumulator", "mma", "tile", "warps", "smem A", "smem B",
                           "stages", "raster", "split_k", "epilogue", "arguments"}) {
    INFO(what);
    REQUIRE(decision(p, what) != nullptr);
    CHECK(!decision(p, what)->why.empty());
  }
  CHECK(contains(decision(p, "smem A")->value, "Swizzle<3,4,3>"));
  CHECK(p.templateInstance() ==
        "kdl::GemmSm80<__nv_bfloat16, kdl::RowMajor, 8, __nv_bfloat16, kdl::ColMajor, 8, float, 128, 128, 32, 2, 2, 4, "
        "false, Epilogue>");
  s.arch.value = Arch::SM90a;
  p = lowerOne(s);
  REQUIRE(p.gencode.size() == 1);
  CHECK(p.gencode[0] == "-gencode=arch=compute_90a,code=sm_90a");
  CHECK(p.exactComputeCapability);
  s.arch.value = Arch::SM86;
  CHECK(lowerOne(s).gencode[0] == "-gencode=arch=compute_86,code=sm_86");
  CHECK(contains(renderPlans({p}), "because:"));
}

TEST_CASE("argument order and serial split-K", "[codegen][lower]") {
  KernelSpec s = makeGemm("g", DType::BF16, DType::BF16, true);
  s.splitK.value = SplitKMode::Serial;
  s.splitKSlices.value = 4;
  KernelPlan p = lowerOne(s);
  CHECK(p.serialSplitK);
  CHECK(p.maxSplitK == 4);
  std::vector<std::string> names;
  for (const ArgPlan& a : p.args) names.push_back(a.name);
  CHECK(names == std::vector<std::string>{"A", "B", "C", "D", "alpha", "beta"});
  CHECK(p.args[4].kind == ArgPlan::Kind::Param);
  CHECK(p.args[4].defaultValue == 1.0);
}

TEST_CASE("epilogue expressions in C++", "[codegen][epilogue]") {
  Epilogue e;
  e.params.push_back({"alpha", 2.0, {}});
  e.inputs.push_back({"bias", DType::F32, Broadcast::Col, {}});
  e.inputs.push_back({"scale", DType::F32, Broadcast::Scalar, {}});
  EpiNode v = node(EpiOp::Gelu, {node(EpiOp::Add, {node(EpiOp::Mul, {leaf(EpiOp::Param, 0), leaf(EpiOp::Acc)}),
                                                  leaf(EpiOp::Input, 0)})});
  CHECK(cppExpr(e, v) == "::kdl::gelu(((p.alpha * acc[i]) + in_bias[i]))");
  CHECK(renderExpr(e, v) == "gelu(alpha * acc + bias)");
  EpiNode c = node(EpiOp::Cast, {leaf(EpiOp::Input, 1)});
  c.castTo = DType::BF16;
  CHECK(cppExpr(e, c) == "::kdl::to_float<::__nv_bfloat16>(::kdl::convert_out<::__nv_bfloat16>(in_scale))");
  EpiNode sel = node(EpiOp::Select, {node(EpiOp::Gt, {leaf(EpiOp::Acc), kdl::testing::constant(0)}), leaf(EpiOp::Acc),
                                     node(EpiOp::Neg, {leaf(EpiOp::Acc)})});
  CHECK(cppExpr(e, sel) == "::kdl::select((acc[i] > 0.0f), acc[i], (-acc[i]))");
  CHECK(isBoolExpr(e, sel.args[0]));
  CHECK(cppExpr(e, node(EpiOp::Add, {sel.args[0], leaf(EpiOp::Acc)})) == "(((acc[i] > 0.0f) ? 1.0f : 0.0f) + acc[i])");
  CHECK(floatLiteral(1.0) == "1.0f");
  CHECK(floatLiteral(0.125) == "0.125f");
  CHECK(floatLiteral(1e-5) == "1e-05f");
  CHECK(floatLiteral(1e300) == "__int_as_float(0x7f800000)");
}

TEST_CASE("emitted files: header comment, includes, no absolute paths, deterministic", "[codegen][emit]") {
  KernelSpec s = makeGemm("gemm_x", DType::F16, DType::F16, true);
  EpiOutput amax;
  amax.kind = EpiOutput::Kind::AmaxReduction;
  amax.name = "amax";
  amax.dtype = DType::F32;
  amax.value = leaf(EpiOp::Output, 0);
  s.epilogue.outputs.push_back(amax);
  EmitOptions o;
  o.specName = "x.kdl";
  o.specHash = std::string(64, 'a');
  DiagEngine d;
  std::vector<KernelPlan> plans = lower({s}, d);
  REQUIRE(plans.size() == 1);
  std::vector<EmittedFile> a = emit(plans, o), b = emit(lower({s}, d), o);
  REQUIRE(a.size() == 3);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].path == b[i].path);
    CHECK(a[i].contents == b[i].contents);
  }
  CHECK(a[0].path == "gemm_x.h");
  CHECK(a[1].path == "gemm_x.cu");
  CHECK(a[2].path == "manifest.json");
  for (int i = 0; i < 2; ++i)
    CHECK(a[i].contents.rfind("// Generated by kdlc " + std::string(KDLC_TEST_VERSION) + " from x.kdl (kernel sha256 " +
                                  plans[0].kernelHash + "). Do not edit.\n",
                              0) == 0);
  CHECK(plans[0].kernelHash.size() == 64);
  CHECK(contains(a[2].contents, "\"spec_sha256\": \"" + o.specHash + "\""));
  CHECK(contains(a[2].contents, "\"kernel_sha256\": \"" + plans[0].kernelHash + "\""));
  const std::string& cu = a[1].contents;
  CHECK(contains(cu, "#include <kdl/gemm_sm80.cuh>"));
  CHECK(contains(cu, "#include \"gemm_x.h\""));
  CHECK(contains(cu, "extern \"C\" int kdl_gemm_x_run("));
  CHECK(contains(cu, "::kdl::arg::amax(\"amax\", \"f32\", &Arguments::amax, &Params::amax)"));  // run() zeroes it
  CHECK(contains(cu, "::kdl::amax_finish(p.amax, s.amax_amax);"));
  CHECK(contains(a[0].contents, "float alpha = 1.0f;"));
  CHECK(contains(a[0].contents, "float* amax = nullptr;"));
  CHECK(!contains(a[0].contents, "__device__"));

  // No absolute path of any machine, not one hard-coded prefix: the first absolute path in `text` is
  // a '/' that starts a path (at the start of a line or after a space, quote, '<', '(', '=', ',' or
  // ':') followed by a name and another '/', a "~/", a drive "C:\" or "C:/", or any directory this
  // run really uses (source, working, temporary, home), wherever it appears. Empty when none.
  auto absolutePathIn = [](const std::string& text) -> std::string {
    auto nameChar = [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             std::string("_.-+~@").find(c) != std::string::npos;
    };
    auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    const std::string pathStarts = " \t\n\"'<(=,:";
    for (size_t i = 0; i < text.size(); ++i) {
      if (i > 0 && pathStarts.find(text[i - 1]) == std::string::npos) continue;
      size_t j = i + 1;
      if (text[i] == '/')
        while (j < text.size() && nameChar(text[j])) ++j;
      if (text[i] == '/' && j > i + 1 && j < text.size() && text[j] == '/') return text.substr(i, j + 1 - i);
      if (text.compare(i, 2, "~/") == 0) return "~/";
      if (i + 2 < text.size() && letter(text[i]) && text[i + 1] == ':' && (text[i + 2] == '\\' || text[i + 2] == '/'))
        return text.substr(i, 3);
    }
    std::error_code ec;
    const char* home = std::getenv("HOME");
    for (std::string dir : {std::string(KDL_SOURCE_DIR), std::filesystem::current_path(ec).string(),
                            std::filesystem::temp_directory_path(ec).string(), std::string(home ? home : "")})
      if (dir.size() > 1 && contains(text, dir)) return dir;
    return "";
  };
  // The detector finds what it is for, and nothing in ordinary generated code.
  CHECK(absolutePathIn("// from /home/someone/x.kdl") == "/home/");
  CHECK(absolutePathIn("#include \"/opt/kdl/include/kdl/gemm_sm80.cuh\"") == "/opt/");
  CHECK(absolutePathIn("\"spec\": \"C:\\specs\\x.kdl\"") == "C:\\");
  CHECK(absolutePathIn("// see ~/specs/x.kdl") == "~/");
  CHECK(absolutePathIn("x.kdl (from" + std::string(KDL_SOURCE_DIR) + ")") == std::string(KDL_SOURCE_DIR));
  CHECK(absolutePathIn("// Generated by kdlc from x.kdl\n#include <kdl/gemm_sm80.cuh>\nint t = (m + 63) / 64; // a/b\n")
            .empty());
  for (const EmittedFile& f : a) CHECK(absolutePathIn(f.contents).empty());
  // Through the front end, from a spec named by its absolute path (source locations carry it), as
  // `kdlc emit /abs/path/transformer.kdl` does.
  SourceManager sm;
  DiagEngine fd;
  FrontendResult r = runFrontend(sm, std::string(KDL_SOURCE_DIR) + "/samples/kernels/transformer.kdl", fd);
  REQUIRE(!fd.hasErrors());
  EmitOptions ro;
  ro.specName = "transformer.kdl";
  ro.specHash = std::string(64, 'b');
  std::vector<EmittedFile> fromSpec = emit(lower(r.specs, fd), ro);
  REQUIRE(fromSpec.size() > 1);
  for (const EmittedFile& f : fromSpec) {
    INFO(f.path);
    CHECK(absolutePathIn(f.contents).empty());
  }
}

TEST_CASE("unsupported specs are rejected at the responsible field", "[codegen][unsupported]") {
  KernelSpec s = makeGemm("g", DType::E4M3, DType::BF16);
  s.arch.value = Arch::SM89;
  CHECK(contains(firstError(s), "e4m3 operands"));
  s = makeGemm("g", DType::BF16, DType::BF16);
  s.splitK.value = SplitKMode::StreamK;
  CHECK(contains(firstError(s), "stream_k"));
  s = makeGemm("g", DType::S8, DType::S8, false, {128, 128, 64});
  s.operands[1].layout = Layout::Row;
  CHECK(contains(firstError(s), "A row-major and B column-major"));
  s = makeGemm("g", DType::BF16, DType::BF16, false, {136, 128, 32});
  CHECK(contains(firstError(s), "tile 136 x 128 x 32 cannot be generated"));
  s = makeGemm("g", DType::BF16, DType::BF16, false, {128, 128, 16});
  CHECK(contains(firstError(s), "tile K = 16"));
  s = makeGemm("g", DType::F16, DType::F16);
  s.epilogue.params[0].name = "lda";
  CHECK(contains(firstError(s), "`lda`"));  // lowering's backstop of check's name rules
  s = makeGemm("class", DType::F16, DType::F16);
  CHECK(contains(firstError(s), "kernel name `class` is a C++ keyword"));
}

TEST_CASE("kdlc's front end + lower: the spec examples", "[codegen][frontend]") {
  SourceManager sm;
  DiagEngine d;
  FrontendResult r = runFrontend(sm, std::string(KDL_SHARED_DIR) + "/spec/examples/gemm_epilogues.kdl", d);
  REQUIRE(!d.hasErrors());
  std::vector<KernelPlan> plans = lower(r.specs, d);
  CHECK(!d.hasErrors());
  CHECK(plans.size() == 3);
  DiagEngine d2;
  FrontendResult sweep = runFrontend(sm, std::string(KDL_SHARED_DIR) + "/spec/examples/gemm_sweep.kdl", d2);
  REQUIRE(!d2.hasErrors());
  REQUIRE(sweep.specs.size() == 12);
  std::vector<KernelPlan> sweepPlans = lower(sweep.specs, d2);
  // All twelve lower to kdl::GemmSm90: bf16 and e4m3, cooperative (tile M 128) and pingpong (64),
  // clusters (1, 1, 1) and (2, 1, 1).
  CHECK(!d2.hasErrors());
  REQUIRE(sweepPlans.size() == 12);
  std::set<std::string> instances;
  for (const KernelPlan& p : sweepPlans) {
    CHECK(p.path == KernelPath::GemmSm90);
    CHECK(p.schedule == (p.tileM >= 128 ? Schedule::Cooperative : Schedule::Pingpong));
    instances.insert(p.templateInstance());
  }
  CHECK(instances.size() == 12);
  CHECK(sweepPlans[6].a.cppType == "__nv_fp8_e4m3");
  CHECK(sweepPlans[6].tileK == 128);
}

TEST_CASE("compile cache keys and verification", "[codegen][cache]") {
  std::vector<std::pair<std::string, std::string>> h1 = {{"kdl/a.cuh", "x"}}, h2 = {{"kdl/a.cuh", "y"}};
  std::string k = CompileCache::key("src", h1, "nvcc 13.0", {"-O3"});
  CHECK(k != CompileCache::key("src", h2, "nvcc 13.0", {"-O3"}));  // a header edit misses
  CHECK(k != CompileCache::key("src", h1, "nvcc 12.9", {"-O3"}));
  CHECK(k != CompileCache::key("src", h1, "nvcc 13.0", {"-O2"}));
  CHECK(k != CompileCache::key("src2", h1, "nvcc 13.0", {"-O3"}));
  CHECK(CompileCache("relative/dir").usable() == false);
  char tmpl[] = "/tmp/kdl-cache-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  CompileCache c(std::string(tmpl) + "/cache");
  REQUIRE(c.usable());
  CHECK(!c.lookup(k));
  REQUIRE(c.store(k, {"object bytes", "ptxas info    : Used 10 registers\n"}));
  REQUIRE(c.lookup(k));
  CHECK(c.lookup(k)->object == "object bytes");
  CHECK(c.lookup(k)->output == "ptxas info    : Used 10 registers\n");  // a hit carries ptxas's report
  // a tampered object or output is never used
  std::string err;
  std::string entry = c.dir() + "/" + k.substr(0, 2) + "/" + k + ".o";
  REQUIRE(writeFileAtomic(entry + ".log", "ptxas info    : Used 10 registers (no spills, trust me)\n", err));
  CHECK(!c.lookup(k));
  REQUIRE(c.store(k, {"object bytes", "ptxas info    : Used 10 registers\n"}));
  REQUIRE(c.lookup(k));
  REQUIRE(writeFileAtomic(entry, "planted", err));
  CHECK(!c.lookup(k));
}

// What nvcc 13.0 printed for a small sm_90a kernel built with -G (setmaxnreg ignored, wgmma
// serialized, spills) and its device function (barriers and smem added to the usage line): the gate
// of `kdlc build` reads this.
TEST_CASE("ptxas report: functions, spills and performance-loss notes", "[codegen][ptxas]") {
  const std::string out =
      "probe.cu(5): warning #177-D: variable \"a\" was declared but never referenced\n"
      "ptxas info    : (C7505) Potential Performance Loss: 'setmaxnreg' ignored to allow debugging.\n"
      "ptxas info    : (C7519) warpgroup.arrive is injected in around line 459 by compiler to allow use of registers "
      "in GMMA in function '_Z5probePf'\n"
      "ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program "
      "dependence on compiler-inserted WG.AR in divergent path in the function '_Z5probePf'\n"
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Function properties for _Z8sidewaysPf\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Compile time = 13.665 ms\n"
      "ptxas info    : Compiling entry function '_Z5probePf' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z5probePf\n"
      "    904 bytes stack frame, 630 bytes spill stores, 632 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 2048 bytes smem, 904 bytes cumulative stack size\n"
      "ptxas info    : Compile time = 198.953 ms\n";
  PtxasReport r = parsePtxasReport(out, true);
  REQUIRE(r.functions.size() == 2);
  CHECK(r.functions[0].name == "sideways(float*)");
  CHECK(r.functions[0].arch == "sm_90a");  // named by the entry that follows in the same ptxas run
  CHECK(!r.functions[0].entry);
  const PtxasFunction& e = r.functions[1];
  CHECK(e.name == "probe(float*)");
  CHECK(e.entry);
  CHECK(e.registers == 168);
  CHECK(e.barriers == 1);
  CHECK(e.smemBytes == 2048);
  CHECK(e.stackBytes == 904);
  CHECK(e.spillStoreBytes == 630);
  CHECK(e.spillLoadBytes == 632);
  CHECK(e.compileMs == Approx(198.953));
  REQUIRE(r.problems.size() == 3);  // setmaxnreg, wgmma, the spill; not the C7519 note
  CHECK(r.problems[0].find("'setmaxnreg' ignored") != std::string::npos);
  CHECK(r.problems[1].find("serialized") != std::string::npos);
  CHECK(r.problems[2].find("630 bytes spill stores") != std::string::npos);
  CHECK(r.notes.size() == 3);
  CHECK(r.otherOutput.find("warning #177-D") != std::string::npos);
  CHECK(r.otherOutput.find("ptxas") == std::string::npos);
  // A clean report passes; no report at all passes only when no SASS was built.
  PtxasReport clean = parsePtxasReport(
      "ptxas info    : 0 bytes gmem\nptxas info    : Compiling entry function '_Z1kv' for 'sm_80'\n"
      "ptxas info    : Function properties for _Z1kv\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 400 bytes cmem[0]\n",
      true);
  CHECK(clean.problems.empty());
  CHECK(clean.functions.size() == 1);
  CHECK(parsePtxasReport("", false).problems.empty());
  CHECK(parsePtxasReport("", true).problems.size() == 1);
  CHECK(gencodeProducesSass({"-gencode=arch=compute_90a,code=sm_90a"}));
  CHECK(gencodeProducesSass({"-gencode=arch=compute_80,code=[compute_80,sm_80]"}));
  CHECK(!gencodeProducesSass({"-gencode=arch=compute_90,code=compute_90"}));
}

// ---- shared memory: one function (include/kdl/gemm_sm80_smem.h) for validation, lowering and the templates ----

namespace {
GemmSm80SmemShape shapeOf(const KernelPlan& p) {
  return {p.a.elementBytes, p.b.elementBytes, p.a.contigK, p.b.contigK, p.tileM, p.tileN, p.tileK, p.warpsM, p.warpsN,
          p.stages};
}
// "g_sm80_f16_row_col_128x128x32_a8_s3" -> {"sm80", "f16_row_col_128x128x32_a8", "3"}
struct ConfigName {
  std::string arch, config, stages;
};
ConfigName splitName(const std::string& name) {
  size_t a = name.find('_', 2), s = name.rfind("_s");
  return {name.substr(2, a - 2), name.substr(a + 1, s - a - 1), name.substr(s + 2)};
}
std::string readSource(const std::string& rel) {
  std::ifstream in(std::string(KDL_SOURCE_DIR) + "/" + rel, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("every sm80 configuration: validation, lowering and the templates' shared memory agree", "[codegen][smem]") {
  SourceManager sm;
  DiagEngine d;
  FrontendResult r = runFrontendOnText(sm, "sm80_configs.kdl", readSource("tests/smem/sm80_configs.kdl"), d);
  REQUIRE(r.kernelsProduced == 4 * 11 * 16 * 2 * 3 * 8);
  REQUIRE(r.specs.size() > 1000);
  for (const Diagnostic& x : d.all()) REQUIRE(x.kind == DiagKind::SharedMemory);  // the deliberate misfits only

  std::map<std::string, const KernelSpec*> accepted;  // by name
  std::map<std::string, const KernelSpec*> byConfig;  // one accepted spec of each configuration
  for (const KernelSpec& s : r.specs) {
    accepted[s.name] = &s;
    byConfig[splitName(s.name).config] = &s;
  }
  const Arch archs[] = {Arch::SM80, Arch::SM86, Arch::SM89, Arch::SM90a};
  size_t lowered = 0, withMoreWarps = 0;
  std::set<std::string> registerRefused;  // configurations (all stages) lowering refuses for their registers
  for (const auto& [config, proto] : byConfig) {
    for (Arch arch : archs) {
      std::string stem = fmt::format("g_{}_{}_s", name(arch), config);
      int autoStages = accepted.count(stem + "auto") ? accepted.at(stem + "auto")->stages.value : 0;
      int largestFit = 0;
      for (int stages = 2; stages <= 8; ++stages) {
        KernelSpec s = *proto;
        s.arch.value = arch;
        s.stages.value = stages;
        DiagEngine ld;
        std::vector<KernelPlan> plans = lower({s}, ld);
        bool validationAccepts = accepted.count(stem + std::to_string(stages)) > 0;
        INFO(stem << stages << ": " << (ld.all().empty() ? std::string() : ld.all()[0].message));
        ++lowered;
        // Lowering refuses the tiles whose registers ptxas spills (codegen/lower_tiling.cpp), whatever the stages:
        // no shared memory to compare.
        if (plans.empty() && !ld.all().empty() && contains(ld.all()[0].message, "registers")) {
          CHECK(ld.all()[0].kind == DiagKind::Unsupported);
          registerRefused.insert(stem);
          continue;
        }
        // the validator's limit check and lowering's agree, both ways
        REQUIRE(plans.size() == (validationAccepts ? 1u : 0u));
        if (!validationAccepts) {
          CHECK(contains(ld.all().at(0).message, "bytes of shared memory"));
          continue;
        }
        largestFit = stages;
        const KernelPlan& p = plans[0];
        const GemmSm80SmemShape shape = shapeOf(p);
        CHECK(p.mainloopSmemBytes == size_t(gemm_sm80_mainloop_smem_bytes(shape)));
        CHECK(p.epilogueSmemBytes == size_t(gemm_sm80_epilogue_smem_bytes(shape)));
        CHECK(p.cpAsyncSmemBytes == size_t(gemm_sm80_smem_bytes(shape)));
        // the number of the template the kernel instantiates (GemmSm80Tma::kSmemBytes or GemmSm80::kSmemBytes)
        if (p.path == KernelPath::GemmSm80Tma) {
          CHECK(gemm_sm80_tma_covers(shape));
          CHECK(p.smemBytes == size_t(gemm_sm80_tma_variant_smem_bytes(shape)));
          CHECK(p.smemBytes <= size_t(maxSharedMemoryPerBlock(Arch::SM90a)));
        } else {
          CHECK(p.smemBytes == size_t(gemm_sm80_smem_bytes(shape)));
        }
        CHECK(p.cpAsyncSmemBytes <= size_t(maxSharedMemoryPerBlock(arch)));
        CHECK(contains(decision(p, "stages")->why, fmt::format("{} B of shared memory per block", p.smemBytes)));
        // The 8-warp form (kdlc build's last try): only for 4 warps of 128 accumulators, 8 warps that divide the
        // tile, and the same launch bytes as the plan's (the manifest's smem_bytes stays true).
        if (p.moreWarpsM) {
          ++withMoreWarps;
          CHECK((p.threads == 128 && p.warpTileM * p.warpTileN / 32 == 128));
          CHECK(p.moreWarpsM * p.moreWarpsN == 8);
          CHECK((p.tileM % p.moreWarpsM == 0 && p.tileN % p.moreWarpsN == 0));
          GemmSm80SmemShape eight = shape;
          eight.warps_m = p.moreWarpsM;
          eight.warps_n = p.moreWarpsN;
          CHECK(size_t(gemm_sm80_smem_bytes(eight)) == p.cpAsyncSmemBytes);
          CHECK(decision(p, "more warps") != nullptr);
        } else {
          CHECK(decision(p, "more warps") == nullptr);
        }
      }
      // `stages = auto` is the deepest pipeline that fits, at most 4
      if (registerRefused.count(stem)) continue;
      if (largestFit) CHECK(autoStages == std::min(4, largestFit));
      else CHECK(autoStages == 0);
    }
  }
  CHECK(lowered == byConfig.size() * 4 * 7);
  CHECK(withMoreWarps > 0);
  // 256 x 256 (256 accumulators per thread) is among them, 128 x 128 is not.
  CHECK(std::any_of(registerRefused.begin(), registerRefused.end(),
                    [](const std::string& s) { return contains(s, "_256x256x"); }));
  CHECK(std::none_of(registerRefused.begin(), registerRefused.end(),
                     [](const std::string& s) { return contains(s, "_128x128x"); }));
}

TEST_CASE("the manifest's smem_bytes is what the launch asks for, and path names the template", "[codegen][smem][path]") {
  // 64 x 64 x 64 f16, 3 stages: 49152 B of tiles, plus TMA's barriers and alignment = 50224 B
  KernelSpec s = makeGemm("g", DType::F16, DType::F16, false, {64, 64, 64}, 3);
  KernelPlan p = lowerOne(s);
  CHECK(p.path == KernelPath::GemmSm80Tma);
  CHECK(p.mainloopSmemBytes == 49152);
  CHECK(p.cpAsyncSmemBytes == 49152);
  CHECK(p.smemBytes == 50224);
  CHECK(contains(p.templateInstance(), "kdl::GemmSm80Tma<half, kdl::RowMajor, 8"));
  EmitOptions o;
  o.specName = "x.kdl";
  std::vector<EmittedFile> files = emit({p}, o);
  CHECK(contains(files[1].contents, "#include <kdl/gemm_sm80_tma.cuh>"));
  CHECK(contains(files[1].contents, "using Gemm = ::kdl::GemmSm80Tma<"));
  CHECK(contains(files[2].contents, "\"path\": \"gemm_sm80_tma\","));
  CHECK(contains(files[2].contents, "\"smem_bytes\": 50224,"));
  CHECK(contains(files[2].contents, "\"smem_bytes_without_tma\": 49152,"));
  CHECK(contains(renderPlans({p}), "50224 B of shared memory per block"));
  // no TMA variant for column-major A: the kernel instantiates kdl::GemmSm80 and says so
  s.operands[0].layout = Layout::Col;
  p = lowerOne(s);
  CHECK(p.path == KernelPath::GemmSm80);
  files = emit({p}, o);
  CHECK(contains(files[1].contents, "#include <kdl/gemm_sm80.cuh>"));
  CHECK(!contains(files[1].contents, "gemm_sm80_tma"));
  CHECK(contains(files[2].contents, "\"path\": \"gemm_sm80\","));
  CHECK(contains(files[2].contents, "\"smem_bytes\": 49152,"));
  CHECK(!contains(files[2].contents, "smem_bytes_without_tma"));
}

// ---- the kernel hash: each kernel's files depend on that kernel only ----

namespace {
std::vector<KernelPlan> lowerText(const std::string& text) {
  SourceManager sm;
  DiagEngine d;
  FrontendResult r = runFrontendOnText(sm, "k.kdl", text, d);
  INFO((d.all().empty() ? std::string() : d.all()[0].message));
  REQUIRE(!d.hasErrors());
  std::vector<KernelPlan> plans = lower(r.specs, d);
  REQUIRE(!d.hasErrors());
  return plans;
}
std::map<std::string, std::string> emitText(const std::string& text) {
  EmitOptions o;
  o.specName = "k.kdl";
  o.specHash = sha256Hex(text);
  std::map<std::string, std::string> files;
  for (EmittedFile& f : emit(lowerText(text), o)) files[f.path] = std::move(f.contents);
  return files;
}
const char* kTwoKernels = R"(// two kernels
kernel k1 {
  op = gemm; arch = sm80;
  A : bf16 row; B : bf16 col; D : bf16 row;
  tile = (128, 128, 32); stages = 3;
  epilogue { param alpha = 1.0; input bias : f32 [col]; D = relu(alpha * acc + bias); }
}
kernel k2 {
  op = gemm; arch = sm80;
  A : f16 row; B : f16 col; D : f16 row;
  tile = (128, 128, 32); stages = 3;
}
)";
std::string replaced(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}
struct timespec mtimeOf(const std::string& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mtim;
}
}  // namespace

TEST_CASE("editing a comment or another kernel leaves a kernel's files byte-identical", "[codegen][hash]") {
  std::map<std::string, std::string> before = emitText(kTwoKernels);
  // a comment, a moved kernel (other lines) and an edit of k2 only
  std::string edited = replaced(kTwoKernels, "// two kernels\n", "// two kernels, edited\n\n\n// more\n");
  edited = replaced(edited, "A : f16 row; B : f16 col; D : f16 row;\n  tile = (128, 128, 32)",
                    "A : f16 row; B : f16 col; D : f16 row;\n  tile = (128, 64, 32)");
  std::map<std::string, std::string> after = emitText(edited);
  CHECK(after.at("k1.h") == before.at("k1.h"));
  CHECK(after.at("k1.cu") == before.at("k1.cu"));
  CHECK(after.at("k2.h") != before.at("k2.h"));
  CHECK(after.at("k2.cu") != before.at("k2.cu"));
  CHECK(after.at("manifest.json") != before.at("manifest.json"));  // spec_sha256 is the whole spec's

  // Written through writeFileAtomic, unchanged kernels keep their mtime (nothing downstream rebuilds).
  char tmpl[] = "/tmp/kdl-hash-test-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  std::string err;
  const struct timespec old[2] = {{946684800, 0}, {946684800, 0}};  // 2000-01-01
  for (const auto& [path, text] : before) {
    REQUIRE(writeFileAtomic(dir + "/" + path, text, err));
    REQUIRE(::utimensat(AT_FDCWD, (dir + "/" + path).c_str(), old, 0) == 0);
  }
  for (const auto& [path, text] : after) REQUIRE(writeFileAtomic(dir + "/" + path, text, err));
  CHECK(mtimeOf(dir + "/k1.h").tv_sec == 946684800);
  CHECK(mtimeOf(dir + "/k1.cu").tv_sec == 946684800);
  CHECK(mtimeOf(dir + "/k2.cu").tv_sec != 946684800);
  for (const auto& [path, text] : after) ::unlink((dir + "/" + path).c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("every field that changes a kernel's code changes its hash", "[codegen][hash]") {
  const std::string base = kTwoKernels;
  const std::vector<KernelPlan> plans = lowerText(base);
  REQUIRE(plans.size() == 2);
  std::map<std::string, std::string> baseFiles = emitText(base);
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"tile = (128, 128, 32); stages = 3;\n  epilogue", "tile = (64, 128, 32); stages = 3;\n  epilogue"},
      {"stages = 3;\n  epilogue", "stages = 4;\n  epilogue"},
      {"param alpha = 1.0;", "param alpha = 2.0;"},
      {"param alpha = 1.0;", "param alpha = 1.0000001;"},
      {"D = relu(alpha * acc + bias)", "D = gelu(alpha * acc + bias)"},
      {"D = relu(alpha * acc + bias)", "D = relu(alpha * acc - bias)"},
      {"input bias : f32 [col];", "input bias : f32 [row];"},
      {"input bias : f32 [col];", "input bias : bf16 [col];"},
      {"A : bf16 row; B : bf16 col; D : bf16 row;", "A : bf16 row; B : bf16 col; D : f32 row;"},
      {"A : bf16 row; B : bf16 col; D : bf16 row;", "A : bf16 row align 4; B : bf16 col; D : bf16 row;"},
      {"A : bf16 row; B : bf16 col; D : bf16 row;", "A : bf16 row; B : bf16 row; D : bf16 row;"},
      {"A : bf16 row; B : bf16 col; D : bf16 row;", "A : bf16 row; B : bf16 col; C : bf16 row; D : bf16 row;"},
      {"op = gemm; arch = sm80;\n  A : bf16", "op = gemm; arch = sm86;\n  A : bf16"},
      {"epilogue { param alpha = 1.0; input bias : f32 [col];", "epilogue { input bias : f32 [col]; param alpha = 1.0;"},
      {"stages = 3;\n  epilogue", "stages = 3; raster = along_m;\n  epilogue"},
      {"stages = 3;\n  epilogue", "stages = 3; split_k = serial(2);\n  epilogue"},
  };
  for (const auto& [from, to] : edits) {
    INFO(from << " -> " << to);
    const std::string text = replaced(base, from, to);
    const std::vector<KernelPlan> changed = lowerText(text);
    REQUIRE(changed.size() == 2);
    CHECK(changed[0].kernelHash != plans[0].kernelHash);
    CHECK(changed[1].kernelHash == plans[1].kernelHash);
    std::map<std::string, std::string> files = emitText(text);
    CHECK(files.at("k1.cu") != baseFiles.at("k1.cu"));
    CHECK(files.at("k2.cu") == baseFiles.at("k2.cu"));
  }
}

// The edits above lower on the sm80 path; fp8 scaling needs sm90a, which is not lowered yet, so these
// hash the validated spec with an otherwise empty plan (kernelHash reads the spec and the arguments).
TEST_CASE("block scales and promotion change the kernel hash", "[codegen][hash]") {
  auto hashOf = [](const std::string& text) {
    SourceManager sm;
    DiagEngine d;
    FrontendResult r = runFrontendOnText(sm, "k.kdl", text, d);
    INFO(text << "\n" << (d.all().empty() ? std::string() : d.all()[0].message));
    REQUIRE(!d.hasErrors());
    REQUIRE(r.specs.size() == 1);
    KernelPlan p;
    p.spec = r.specs[0];
    return kernelHash(p);
  };
  const std::string base =
      "kernel k { op = gemm; arch = sm90a; A : e4m3 row; B : e4m3 col; D : bf16 row; tile = (128, 128, 128); }";
  const std::string scaled = replaced(replaced(base, "A : e4m3 row;", "A : e4m3 row scale (1, 128);"),
                                      "B : e4m3 col;", "B : e4m3 col scale (128, 128);");
  const std::string baseHash = hashOf(base);
  std::vector<std::pair<std::string, std::string>> changes = {
      {"block scales", scaled},
      {"promotion = 2", replaced(base, "tile =", "promotion = 2; tile =")},
      {"promotion = 3", replaced(base, "tile =", "promotion = 3; tile =")},
      {"e5m2 B with block scales", replaced(scaled, "B : e4m3", "B : e5m2")},
  };
  std::map<std::string, std::string> seen = {{baseHash, "base"}};
  for (const auto& [what, text] : changes) {
    INFO(what);
    std::string h = hashOf(text);
    CHECK(!seen.count(h));
    seen.emplace(h, what);
  }
  // Spelling out a default changes nothing.
  CHECK(hashOf(replaced(base, "tile =", "promotion = fast; tile =")) == baseHash);
  CHECK(hashOf(replaced(scaled, "tile =", "promotion = 1; tile =")) == hashOf(scaled));
}

TEST_CASE("emitters read names and types from the plan", "[codegen][plan]") {
  KernelSpec s = makeGemm("g", DType::F16, DType::F16);
  EpiOutput z;
  z.kind = EpiOutput::Kind::Tensor;
  z.name = "Zed";
  z.dtype = DType::BF16;
  z.value = leaf(EpiOp::Acc);
  s.epilogue.outputs.push_back(z);
  EpiInput bias{"bias", DType::F32, Broadcast::Row, {}};
  s.epilogue.inputs.push_back(bias);
  KernelPlan p = lowerOne(s);
  const ArgPlan& zArg = p.args.back();
  REQUIRE(zArg.name == "Zed");
  CHECK(zArg.ldName == "ldzed");
  CHECK(zArg.batchStrideName == "batch_stride_Zed");
  CHECK(p.extraOutputs.at(0).ldName == "ldzed");
  CHECK(p.a.ldName == "lda");
  CHECK(p.a.elementBytes == 2);
  CHECK(p.a.contigK);
  CHECK(!p.b.contigK == (p.b.layout == Layout::Row));
  for (const ArgPlan& a : p.args)
    if (a.name == "bias") CHECK((a.ldName.empty() && a.batchStrideName == "batch_stride_bias"));
  for (const ArgPlan& a : p.args)
    if (a.name == "alpha") CHECK((a.ldName.empty() && a.batchStrideName.empty()));
  // Renaming a plan's member renames it in every emitted declaration and use.
  for (ArgPlan& a : p.args)
    if (a.name == "Zed") a.ldName = "ld_custom";
  p.extraOutputs.at(0).ldName = "ld_custom";
  EmitOptions o;
  std::vector<EmittedFile> files = emit({p}, o);
  CHECK(contains(files[0].contents, "int64_t ld_custom = 0;"));
  CHECK(contains(files[1].contents, "&Arguments::ld_custom"));
  CHECK(!contains(files[0].contents + files[1].contents, "ldzed"));
  // one rule for boolean epilogue ops (validation types with it, the emitter converts with it)
  for (EpiOp op : {EpiOp::Lt, EpiOp::Le, EpiOp::Gt, EpiOp::Ge, EpiOp::Eq, EpiOp::Ne, EpiOp::And, EpiOp::Or, EpiOp::Not})
    CHECK(isBooleanOp(op));
  for (EpiOp op : {EpiOp::Add, EpiOp::Select, EpiOp::Cast, EpiOp::Relu, EpiOp::Const}) CHECK(!isBooleanOp(op));
}

// ---- the sm90a path: one table (codegen/support_sm90.cpp), one shared-memory formula (kdl/gemm_sm90_smem.h) ----

namespace {
KernelSpec makeSm90Gemm(const std::string& name, DType ab, std::array<int, 3> tile = {128, 128, 64}, int stages = 4) {
  KernelSpec s = makeGemm(name, ab, DType::BF16, false, tile, stages);
  s.arch.value = Arch::SM90a;
  s.schedule.value = Schedule::Cooperative;
  return s;
}
}  // namespace

TEST_CASE("sm90a: lowering to kdl::GemmSm90", "[codegen][lower][sm90]") {
  KernelSpec s = makeSm90Gemm("g", DType::BF16, {128, 256, 64}, 4);
  s.cluster.value = {2, 1, 1};
  KernelPlan p = lowerOne(s);
  CHECK(p.path == KernelPath::GemmSm90);
  CHECK(std::string(pathWord(p.path)) == "gemm_sm90");
  CHECK(std::string(pathHeader(p.path)) == "kdl/gemm_sm90.cuh");
  REQUIRE(p.gencode.size() == 1);
  CHECK(p.gencode[0] == "-gencode=arch=compute_90a,code=sm_90a");
  CHECK(p.exactComputeCapability);
  CHECK(p.minComputeCapability == 90);
  CHECK(p.threads == 384);
  CHECK(p.clusterM == 2);
  CHECK(p.clusterN == 1);
  CHECK(p.templateInstance() ==
        "kdl::GemmSm90<__nv_bfloat16, kdl::RowMajor, __nv_bfloat16, kdl::ColMajor, float, 128, 256, 64, 4, "
        "kdl::Sm90Schedule::Cooperative, 2, 1, false, 0, kdl::sm90::NoBlockScaling, Epilogue>");
  CHECK(p.templateInstance(&cppQualified).rfind("::kdl::GemmSm90<::__nv_bfloat16, ::kdl::RowMajor", 0) == 0);
  CHECK(contains(p.templateInstance(&cppQualified), "::kdl::Sm90Schedule::Cooperative, 2, 1, false, 0, "
                                                    "::kdl::sm90::NoBlockScaling, Epilogue>"));
  for (const char* what : {"target", "A", "B", "accumulator", "mma", "tile", "schedule", "smem A", "smem B", "cluster",
                           "raster", "stages", "split_k", "epilogue", "arguments"}) {
    INFO(what);
    REQUIRE(decision(p, what) != nullptr);
    CHECK(!decision(p, what)->why.empty());
  }
  CHECK(contains(decision(p, "mma")->value, "m64n256k16"));
  CHECK(contains(decision(p, "cluster")->why, "multicast"));
  // the same files and C ABI as the sm80 path, with the sm90a template
  EmitOptions o;
  o.specName = "x.kdl";
  std::vector<EmittedFile> files = emit({p}, o);
  REQUIRE(files.size() == 3);
  CHECK(contains(files[1].contents, "#include <kdl/gemm_sm90.cuh>"));
  CHECK(contains(files[1].contents, "using Gemm = ::kdl::GemmSm90<"));
  CHECK(contains(files[1].contents, "kTarget = {\"sm90a\", 90, true}"));
  CHECK(contains(files[1].contents, "extern \"C\" int kdl_g_run("));
  CHECK(contains(files[2].contents, "\"path\": \"gemm_sm90\""));
  CHECK(contains(files[2].contents, "\"template\": \"kdl::GemmSm90\""));
  CHECK(contains(files[2].contents, "\"schedule\": \"cooperative\""));
  CHECK(contains(files[2].contents, "\"cluster\": [2, 1, 1]"));
  CHECK(contains(files[2].contents, fmt::format("\"smem_bytes\": {},", p.smemBytes)));
  // the header (host API) is the sm80 path's: nothing in it names the template
  CHECK(!contains(files[0].contents, "GemmSm90"));
}

TEST_CASE("sm90a: block scales are arguments right after their operand", "[codegen][lower][sm90]") {
  KernelSpec s = makeSm90Gemm("g", DType::E4M3, {128, 128, 128}, 4);
  s.operands[0].scaleBlock = std::array<int, 2>{1, 128};
  s.operands[1].scaleBlock = std::array<int, 2>{128, 128};
  KernelPlan p = lowerOne(s);
  REQUIRE(p.blockScaling);
  std::vector<std::string> names;
  for (const ArgPlan& a : p.args) names.push_back(a.name);
  REQUIRE(names == std::vector<std::string>{"A", "scale_A", "B", "scale_B", "D", "alpha"});
  for (int i : {1, 3}) {
    const ArgPlan& a = p.args[(size_t)i];
    INFO(a.name);
    CHECK(a.kind == ArgPlan::Kind::Tensor);  // KDL_ARG_TENSOR: data, ld, batch_stride
    CHECK(a.role == ArgPlan::Role::BlockScale);
    CHECK(a.dtype == DType::F32);
    CHECK(a.ldName == "ld_" + a.name);
    CHECK(a.batchStrideName == "batch_stride_" + a.name);
  }
  EmitOptions o;
  o.specName = "x.kdl";
  std::vector<EmittedFile> files = emit({p}, o);
  REQUIRE(files.size() == 3);
  CHECK(contains(files[0].contents, "const float* scale_A = nullptr; ::int64_t ld_scale_A = 0; ::int64_t "
                                    "batch_stride_scale_A = 0;"));
  CHECK(contains(files[0].contents, "const float* scale_B = nullptr; ::int64_t ld_scale_B = 0; ::int64_t "
                                    "batch_stride_scale_B = 0;"));
  CHECK(contains(files[1].contents, "::kdl::arg::block_scales(\"scale_A\", 'm', 1, &Arguments::scale_A, "
                                    "&Arguments::ld_scale_A, &Arguments::batch_stride_scale_A)"));
  CHECK(contains(files[1].contents, "::kdl::arg::block_scales(\"scale_B\", 'n', 128, &Arguments::scale_B, "
                                    "&Arguments::ld_scale_B, &Arguments::batch_stride_scale_B)"));
  CHECK(contains(files[1].contents, "::kdl::sm90::BlockScaling<1, 128, 128>"));
  CHECK(contains(files[2].contents, "{\"name\": \"scale_A\", \"kind\": \"tensor\", \"role\": \"input\", \"dtype\": \"f32\"}"));
  // Without block scales there are none.
  s.operands[0].scaleBlock.reset();
  s.operands[1].scaleBlock.reset();
  names.clear();
  for (const ArgPlan& a : lowerOne(s).args) names.push_back(a.name);
  CHECK(names == std::vector<std::string>{"A", "B", "D", "alpha"});
}

TEST_CASE("sm90a: schedule = auto is explained", "[codegen][lower][sm90]") {
  KernelSpec s = makeSm90Gemm("g", DType::F16);
  s.schedule.origin = Origin::Auto;
  s.stages.origin = Origin::Auto;
  KernelPlan p = lowerOne(s);
  CHECK(contains(decision(p, "schedule")->why, "schedule = auto: tile M = 128 is a multiple of 128"));
  CHECK(contains(decision(p, "stages")->why, "stages = auto: the deepest pipeline that fits with the epilogue"));
  s.schedule.origin = Origin::Explicit;
  p = lowerOne(s);
  CHECK(contains(decision(p, "schedule")->why, "set in the spec"));
}

TEST_CASE("sm90a: what the table does not generate is refused at its field", "[codegen][unsupported][sm90]") {
  KernelSpec s = makeSm90Gemm("g", DType::E4M3, {128, 128, 128});
  const Sm90Mainloop* fp8 = findSm90Mainloop(DType::E4M3, DType::E4M3, Layout::Row, Layout::Col);
  REQUIRE(fp8 != nullptr);
  if (!fp8->generated) {
    CHECK(contains(firstError(s), "A e4m3 row x B e4m3 col is not generated by the sm90a template yet"));
  } else {
    KernelPlan p = lowerOne(s);
    CHECK(p.path == KernelPath::GemmSm90);
    CHECK(p.promoteEvery == 0);
    CHECK(decision(p, "promotion")->value == "fast (PromoteEvery = 0)");
    CHECK(contains(p.templateInstance(), "kdl::GemmSm90<__nv_fp8_e4m3, kdl::RowMajor, __nv_fp8_e4m3, kdl::ColMajor, "
                                         "float, 128, 128, 128"));
  }
  s.promoteEvery.value = 2;
  if (!sm90Table().promotion) CHECK(contains(firstError(s), "promotion = 2 is not generated by the sm90a template yet"));
  else CHECK(lowerOne(s).promoteEvery == 2);
  s.promoteEvery.value = 0;
  s = makeSm90Gemm("g", DType::TF32, {128, 128, 32});
  const Sm90Mainloop* tf32 = findSm90Mainloop(DType::TF32, DType::TF32, Layout::Row, Layout::Col);
  REQUIRE(tf32 != nullptr);
  if (!tf32->generated) CHECK(contains(firstError(s), "A tf32 row x B tf32 col is not generated by the sm90a template yet"));
  s = makeSm90Gemm("g", DType::BF16, {128, 192, 64});
  CHECK(contains(firstError(s), "tile N = 192"));
  s = makeSm90Gemm("g", DType::BF16, {128, 128, 128});
  CHECK(contains(firstError(s), "tile K = 128 is not generated for bf16"));
  s = makeSm90Gemm("g", DType::F16, {256, 256, 64}, 2);
  CHECK(contains(firstError(s), "256 accumulator registers"));
  s = makeSm90Gemm("g", DType::BF16);
  s.cluster.value = {4, 1, 1};
  CHECK(contains(firstError(s), "cluster (4, 1, 1) is not a configuration of the sm90a path"));
  s = makeSm90Gemm("g", DType::BF16);
  s.operands[0].align = 4;
  CHECK(contains(firstError(s), "align 4 (8 bytes) for `A`"));
  s = makeSm90Gemm("g", DType::BF16);
  s.splitK.value = SplitKMode::StreamK;
  CHECK(contains(firstError(s), "split_k = stream_k"));
  s = makeSm90Gemm("g", DType::E4M3, {128, 128, 128});
  s.operands[0].scaleBlock = std::array<int, 2>{1, 128};
  s.operands[1].scaleBlock = std::array<int, 2>{128, 128};
  s.operands.back().layout = Layout::Col;
  CHECK(contains(firstError(s), "D is column-major, which the kernel computes as D^T = B^T A^T, and block scales"));
  s = makeSm90Gemm("g", DType::BF16);
  s.schedule.value = Schedule::Pingpong;
  s.tile.value = {64, 128, 64};
  const Sm90ScheduleEntry* pp = findSm90Schedule(Schedule::Pingpong);
  REQUIRE(pp != nullptr);
  if (!pp->generated) CHECK(contains(firstError(s), "schedule `pingpong` is not generated by the sm90a template yet"));
  else CHECK(lowerOne(s).schedule == Schedule::Pingpong);
  s.tile.value = {128, 256, 64};
  s.stages.value = 3;
  CHECK(contains(firstError(s), "tile 128 x 256 with schedule `pingpong` needs 256 accumulator registers"));
}

TEST_CASE("sm90a: the table's kernels (kdlc support --specs) pass the front end and lower", "[codegen][sm90]") {
  SourceManager sm;
  DiagEngine d;
  FrontendResult r = runFrontendOnText(sm, "sm90_table.kdl", sm90TableSpecs(), d);
  REQUIRE(!d.hasErrors());
  REQUIRE(!r.specs.empty());
  std::vector<KernelPlan> plans = lower(r.specs, d);
  CHECK(!d.hasErrors());
  CHECK(plans.size() == r.specs.size());
  for (const KernelPlan& p : plans) CHECK(p.path == KernelPath::GemmSm90);
  // one kernel per generated line: at least the mainloops and every tile N that is on
  size_t lines = 0;
  for (const Sm90Mainloop& m : sm90Table().mainloops) lines += m.generated;
  CHECK(plans.size() >= lines);
  CHECK(contains(renderSm90Table(), "generated  A bf16 row x B bf16 col"));
}

TEST_CASE("sm90a block scales: scale slots in shared memory, and stages = auto keeps the full epilogue buffer",
          "[codegen][smem][sm90]") {
  const int limit = 232448;
  // 128 x 128 x 128 e4m3 cooperative: 6 stages fit with the full 32 KB epilogue buffer unscaled; with the
  // scale slots (128 + 4 floats per stage) 6 fit only with the 20 KB one, so auto takes 5.
  GemmSm90SmemShape plain{1, 1, 128, 128, 128, 6, 0};
  GemmSm90SmemShape scaled{1, 1, 128, 128, 128, 6, 0, 128};
  CHECK(gemm_sm90_scale_slot_bytes(plain) == 0);
  CHECK(gemm_sm90_scale_slot_bytes(scaled) == 528);
  CHECK(gemm_sm90_scale_offset(scaled) == 6 * 32768 + 2 * 6 * 8);
  CHECK(gemm_sm90_epilogue_offset(scaled) >= gemm_sm90_scale_offset(scaled) + 6 * 528);
  CHECK(gemm_sm90_epilogue_offset(scaled) % 1024 == 0);
  CHECK(gemm_sm90_epilogue_smem_bytes(plain) == 32768);
  CHECK(gemm_sm90_epilogue_smem_bytes(scaled) == 20480);
  CHECK(gemm_sm90_auto_stages(plain, limit, 8) == 6);
  CHECK(gemm_sm90_max_stages(scaled, limit, 8) == 6);
  CHECK(gemm_sm90_auto_stages(scaled, limit, 8) == 5);
  scaled.stages = 5;
  CHECK(gemm_sm90_epilogue_smem_bytes(scaled) == 32768);
  // 64 x 128 x 128 pingpong: 8 stages with the small buffer, 7 with the full one.
  GemmSm90SmemShape pp{1, 1, 64, 128, 128, 8, 1, 64};
  CHECK(gemm_sm90_max_stages(pp, limit, 8) == 8);
  CHECK(gemm_sm90_auto_stages(pp, limit, 8) == 7);

  // Lowering counts the slots and explains the choice.
  KernelSpec s = makeSm90Gemm("g", DType::E4M3, {128, 128, 128}, 5);
  s.operands[0].scaleBlock = std::array<int, 2>{1, 128};
  s.operands[1].scaleBlock = std::array<int, 2>{128, 128};
  s.promoteEvery.value = 1;
  s.stages.origin = Origin::Auto;
  KernelPlan p = lowerOne(s);
  CHECK(p.smemBytes == size_t(gemm_sm90_smem_bytes(GemmSm90SmemShape{1, 1, 128, 128, 128, 5, 0, 128})));
  CHECK(p.epilogueSmemBytes == 32768);
  CHECK(contains(decision(p, "stages")->why, "the deepest pipeline that keeps the epilogue's full 32768 B buffer"));
  CHECK(contains(decision(p, "stages")->why, "5 x 528 B scale slots"));
}

TEST_CASE("every sm90a configuration: validation, the table, lowering and kdl/gemm_sm90_smem.h agree",
          "[codegen][smem][sm90]") {
  SourceManager sm;
  DiagEngine d(100000);
  FrontendResult r = runFrontendOnText(sm, "sm90a_configs.kdl", readSource("tests/smem/sm90a_configs.kdl"), d);
  REQUIRE(r.kernelsProduced == 6 * 4 * 5 * 3 * 3 * 3 * 4);
  REQUIRE(r.specs.size() > 500);
  const int limit = maxSharedMemoryPerBlock(Arch::SM90a);
  size_t lowered = 0, refused = 0;
  for (const KernelSpec& s : r.specs) {
    INFO(s.name);
    DiagEngine ld;
    std::vector<KernelPlan> plans = lower({s}, ld);
    if (plans.empty()) {
      // refused only as [unsupported] (a line of the table that is off, or none), never another error
      REQUIRE(ld.hasErrors());
      for (const Diagnostic& x : ld.all()) CHECK(x.kind == DiagKind::Unsupported);
      ++refused;
      continue;
    }
    ++lowered;
    const KernelPlan& p = plans[0];
    REQUIRE(p.path == KernelPath::GemmSm90);
    GemmSm90SmemShape shape{p.a.elementBytes, p.b.elementBytes, p.tileM, p.tileN, p.tileK, p.stages,
                            p.schedule == Schedule::Pingpong ? 1 : 0, p.blockScaling ? p.tileM : 0};
    CHECK(p.smemBytes == size_t(gemm_sm90_smem_bytes(shape)));
    CHECK(p.smemBytes <= size_t(limit));
    CHECK(s.sharedMemoryBytes == size_t(p.stages) * size_t(gemm_sm90_stage_bytes(shape)));
    // stages = auto: the deepest pipeline that fits with the epilogue, at most 8
    if (s.stages.origin == Origin::Auto) CHECK(p.stages == gemm_sm90_auto_stages(shape, limit, 8));
    CHECK(contains(decision(p, "stages")->why, fmt::format("{} B of shared memory per block", p.smemBytes)));
  }
  // the table generates bf16 and f16 cooperative kernels at least; the grid asks for more than it has
  CHECK(lowered >= 2 * 2 * 3 * 2 * 3);
  CHECK(refused > 0);
}

// ---- column-major C, D and extra outputs: a column-major D is computed as D^T = B^T A^T ----

TEST_CASE("column-major D: the kernel computes D^T = B^T A^T (sm90a)", "[codegen][lower][colmajor]") {
  const std::string text = R"(
kernel t {
  op = gemm; arch = sm90a;
  A : e4m3 row; B : e5m2 col; C : bf16 row; D : bf16 col;
  tile = (128, 128, 128); schedule = cooperative; split_k = serial(4);
  epilogue {
    input sa : f32 [row]; input sb : f32 [col];
    output Z : f32 col = acc;
    D = acc * sa * sb + C;
  }
}
)";
  std::vector<KernelPlan> plans = lowerText(text);
  REQUIRE(plans.size() == 1);
  const KernelPlan& p = plans[0];
  CHECK(p.transposed);
  // The device template's A is B^T (e5m2, B col = B^T row), its B is A^T (e4m3, A row = A^T col).
  CHECK(p.a.source == "B");
  CHECK(p.a.dtype == DType::E5M2);
  CHECK(p.a.layout == Layout::Row);
  CHECK(p.a.contigK);
  CHECK(p.b.source == "A");
  CHECK(p.b.dtype == DType::E4M3);
  CHECK(p.b.layout == Layout::Col);
  CHECK(p.b.contigK);
  // The arguments keep the spec's meaning.
  CHECK(p.argA.dtype == DType::E4M3);
  CHECK(p.argB.dtype == DType::E5M2);
  REQUIRE(p.args.size() >= 2);
  CHECK(p.args[0].name == "A");
  CHECK(p.args[0].dtype == DType::E4M3);
  CHECK(p.args[1].dtype == DType::E5M2);
  CHECK(p.templateInstance() ==
        "kdl::TransposedGemm<kdl::GemmSm90<__nv_fp8_e5m2, kdl::RowMajor, __nv_fp8_e4m3, kdl::ColMajor, float, 128, "
        "128, 128, " + std::to_string(p.stages) +
            ", kdl::Sm90Schedule::Cooperative, 1, 1, false, 0, kdl::sm90::NoBlockScaling, Epilogue>>");
  const Decision* o = decision(p, "orientation");
  REQUIRE(o != nullptr);
  CHECK(contains(o->value, "D^T = B^T A^T"));
  CHECK(contains(o->why, "D is col in the spec"));
  CHECK(contains(o->why, "C row-major, unlike D: read or written transposed"));
  CHECK(contains(decision(p, "A")->value, "B^T: __nv_fp8_e5m2 kdl::RowMajor"));

  const std::map<std::string, std::string> f = emitText(text);
  const std::string& cu = f.at("t.cu");
  const std::string& h = f.at("t.h");
  CHECK(contains(cu, "#include <kdl/gemm_transposed.h>"));
  CHECK(contains(cu, "using Gemm = ::kdl::TransposedGemm<::kdl::GemmSm90<::__nv_fp8_e5m2, ::kdl::RowMajor, "
                     "::__nv_fp8_e4m3, ::kdl::ColMajor"));
  CHECK(contains(cu, "// orientation: transposed"));
  // [row] of D is a coordinate column of D^T and [col] a coordinate row.
  // The sm90a template holds the coordinate-column vector in registers (slot 0: kdl::ColVector, v45).
  CHECK(contains(cu, "::kdl::load_col_broadcast<float, V, 0>(p.sa, p.batch_stride_sa, c, in_sa);"));
  CHECK(contains(cu, "static constexpr int kColVectors = 1;"));
  CHECK(contains(cu, "if constexpr (S == 0) return ::kdl::ColVector<float>{p.sa, p.batch_stride_sa};"));
  CHECK(contains(cu, "::kdl::load_row_broadcast<float, V>(p.sb, p.batch_stride_sb, c, in_sb);"));
  // D and Z (column-major) are D^T's rows; the row-major C runs across them.
  CHECK(contains(cu, "::kdl::load_tile_transposed<::__nv_bfloat16, V>(p.C, p.ldc, p.batch_stride_C, c, src_C);"));
  CHECK(contains(cu, "::kdl::store_tile<::__nv_bfloat16, V>(p.D, p.ldd, p.batch_stride_D, c, out_D);"));
  CHECK(contains(cu, "::kdl::store_tile<float, V>(p.Z, p.ldz, p.batch_stride_Z, c, out_Z);"));
  // The host checks each tensor in its layout; A and B keep their alignment and names.
  CHECK(contains(cu, "::kdl::arg::tensor(\"D\", \"bf16\", &Arguments::D, &Arguments::ldd, &Arguments::batch_stride_D, "
                     "&Params::D, &Params::ldd, &Params::batch_stride_D, ::kdl::arg::kColMajor)"));
  CHECK(contains(cu, "::kdl::arg::tensor(\"C\", \"bf16\", &Arguments::C, &Arguments::ldc, &Arguments::batch_stride_C, "
                     "&Params::C, &Params::ldc, &Params::batch_stride_C)"));
  CHECK(contains(cu, "::kdl::arg::mainloop(\"A\", \"e4m3\", &Arguments::A, &Arguments::lda, &Arguments::batch_stride_A, 16)"));
  CHECK(contains(h, "::int64_t ldd = 0; ::int64_t batch_stride_D = 0;  // bf16 m x n, column-major"));
  CHECK(contains(h, "::int64_t ldz = 0; ::int64_t batch_stride_Z = 0;  // f32 m x n, column-major"));
  CHECK(contains(h, "::int64_t ldc = 0; ::int64_t batch_stride_C = 0;  // bf16 m x n; may be null (reads as 0)\n"));
  CHECK(contains(f.at("manifest.json"), "{\"name\": \"A\", \"dtype\": \"e4m3\""));
}

TEST_CASE("column-major C, D and extra outputs on the sm80 path", "[codegen][lower][colmajor]") {
  // A col x B col with a column-major D: the kernel multiplies B^T (row) by A^T (row).
  std::vector<KernelPlan> plans = lowerText(R"(
kernel nn { op = gemm; arch = sm80; A : f16 col; B : f16 col; D : f16 col; tile = (128, 128, 32); stages = 3; }
kernel zc {
  op = gemm; arch = sm80;
  A : bf16 row; B : bf16 col; C : bf16 col; D : bf16 row;
  tile = (128, 128, 32); stages = 3;
  epilogue { input bias : f32 [row]; output Z : bf16 col = acc; D = acc + C + bias; }
}
)");
  REQUIRE(plans.size() == 2);
  const KernelPlan& nn = plans[0];
  CHECK(nn.transposed);
  CHECK(nn.a.layout == Layout::Row);
  CHECK(nn.b.layout == Layout::Row);
  CHECK(nn.templateInstance().rfind("kdl::TransposedGemm<kdl::GemmSm80<half, kdl::RowMajor, 8, half, kdl::RowMajor, 8",
                                    0) == 0);
  // A row-major D with a column-major C and Z: not transposed; C and Z addressed across its rows.
  const KernelPlan& zc = plans[1];
  CHECK(!zc.transposed);
  CHECK(zc.templateInstance().rfind("kdl::GemmSm80<", 0) == 0);
  const Decision* o = decision(zc, "orientation");
  REQUIRE(o != nullptr);
  CHECK(contains(o->why, "C, Z column-major, unlike D"));
  CHECK(decision(nn, "orientation") != nullptr);
  CHECK(decision(lowerOne(makeGemm("g", DType::BF16, DType::BF16)), "orientation") == nullptr);
  const std::string functor = emitEpilogueFunctor(zc, 0);
  CHECK(contains(functor, "::kdl::load_tile_transposed<::__nv_bfloat16, V>(p.C"));
  CHECK(contains(functor, "::kdl::store_tile_transposed<::__nv_bfloat16, V>(p.Z"));
  CHECK(contains(functor, "::kdl::store_tile<::__nv_bfloat16, V>(p.D"));
  CHECK(contains(functor, "::kdl::load_row_broadcast<float, V>(p.bias"));
}

TEST_CASE("the mainloop tables are closed under the transposition of a column-major D", "[codegen][colmajor]") {
  // D^T = B^T A^T swaps A and B and flips their layouts: every generated line must have its mirror,
  // or a column-major D with those operands would reach nvcc with a pair the template lacks.
  // (The sm80 table is closed by construction: one type for A and B, and either every layout pair or
  // A row x B col only, which is its own mirror.)
  REQUIRE(transposedLayout(Layout::Row) == Layout::Col);
  REQUIRE(transposedLayout(Layout::Col) == Layout::Row);
  for (const Sm90Mainloop& m : sm90Table().mainloops) {
    if (!m.generated) continue;
    INFO(dtypeWord(m.a) << " " << layoutWord(m.layoutA) << " x " << dtypeWord(m.b) << " " << layoutWord(m.layoutB));
    const Sm90Mainloop* t = findSm90Mainloop(m.b, m.a, transposedLayout(m.layoutB), transposedLayout(m.layoutA));
    REQUIRE(t != nullptr);
    CHECK(t->generated);
    CHECK(t->accum == m.accum);
  }
}

// ---- convolutions: kdl::Conv2dSm80 (codegen/lower_conv.cpp) ----

namespace {
// A conv kernel `name` of `op` with the given lines (fields, epilogue) after X, W, Y.
std::string convSpec(const std::string& name, const std::string& op, const std::string& body,
                     const std::string& arch = "sm80", const std::string& dt = "f16") {
  return fmt::format("kernel {} {{\n  op = {}; arch = {};\n  X : {} nhwc; W : {} krsc; Y : {} nhwc;\n{}\n}}\n", name, op,
                     arch, dt, dt, dt, body);
}
KernelPlan lowerConv(const std::string& text) {
  std::vector<KernelPlan> plans = lowerText(text);
  REQUIRE(plans.size() == 1);
  return plans[0];
}
std::string convError(const std::string& text) {
  SourceManager sm;
  DiagEngine d;
  FrontendResult r = runFrontendOnText(sm, "k.kdl", text, d);
  REQUIRE(!d.hasErrors());
  std::vector<KernelPlan> plans = lower(r.specs, d);
  CHECK(plans.empty());
  REQUIRE(d.hasErrors());
  CHECK(d.all()[0].kind == DiagKind::Unsupported);
  return d.all()[0].message;
}
std::vector<std::string> argNames(const KernelPlan& p) {
  std::vector<std::string> names;
  for (const ArgPlan& a : p.args) names.push_back(a.name);
  return names;
}
}  // namespace

TEST_CASE("conv: fprop lowers to kdl::Conv2dSm80 with its implicit GEMM and gathers", "[codegen][lower][conv]") {
  KernelPlan p = lowerConv(convSpec("cf", "conv2d_fprop",
                                    "  tile = (128, 128, 32); stages = 3;\n  filter = (3, 3);\n  stride = (2, 2);\n"
                                    "  epilogue {\n    input bias : f32 [channel];\n    Y = relu(acc + bias);\n  }"));
  CHECK(p.path == KernelPath::ConvSm80);
  CHECK(p.conv());
  CHECK(std::string(pathWord(p.path)) == "conv_sm80");
  CHECK(std::string(pathTemplate(p.path)) == "kdl::Conv2dSm80");
  CHECK(std::string(pathHeader(p.path)) == "kdl/conv_sm80.cuh");
  CHECK(p.templateInstance() ==
        "kdl::Conv2dSm80<kdl::ConvKind::Fprop, half, 8, 8, float, 128, 128, 32, 2, 4, 3, 3, 3, 2, 2, Epilogue>");
  // The GEMM's A and B are the spec's X and W, read as Conv2dSm80's Core reads them.
  CHECK(p.a.source == "X");
  CHECK(p.a.cppLayout == "kdl::RowMajor");
  CHECK(p.a.contigK);
  CHECK(p.b.source == "W");
  CHECK(p.b.cppLayout == "kdl::ColMajor");
  CHECK(p.b.contigK);
  for (const char* what : {"target", "path", "implicit gemm", "A", "B", "filter", "stride", "accumulator", "mma", "tile",
                           "warps", "smem A", "smem B", "stages", "split_k", "[channel]", "epilogue", "arguments"}) {
    INFO(what);
    REQUIRE(decision(p, what) != nullptr);
    CHECK(!decision(p, what)->why.empty());
  }
  CHECK(decision(p, "raster") == nullptr);  // Conv2dSm80 has no raster parameter
  // 8 warps for a 128 x 128 conv tile (4, i.e. 64 x 64 warp tiles, spill beside the gathers' registers).
  CHECK((p.warpsM == 2 && p.warpsN == 4 && p.threads == 256));
  CHECK(contains(decision(p, "warps")->why, "would spill"));
  CHECK(decision(p, "implicit gemm")->value == "M = n*p*q, N = k, K = r*s*c");
  CHECK(contains(decision(p, "A")->value, "X (f16 nhwc, align 8 = 16 B): activation gather: cp.async 16 B per row"));
  CHECK(contains(decision(p, "A")->value, "per-tap pixel masks"));
  CHECK(contains(decision(p, "A")->value, "no divisions in the mainloop"));
  CHECK(contains(decision(p, "filter")->value, "3 x 3 (fixed"));
  CHECK(contains(decision(p, "stride")->value, "2 x 2 (fixed"));
  CHECK(contains(decision(p, "[channel]")->value, "bias: the GEMM's column broadcast"));
  CHECK((p.filterR == 3 && p.filterS == 3 && p.strideH == 2 && p.strideW == 2));
  // Arguments: the inputs, the output, the epilogue's; the [channel] vector keeps its word.
  CHECK(argNames(p) == std::vector<std::string>{"X", "W", "Y", "bias"});
  CHECK(p.args[0].ldName == "ldx");
  CHECK(p.args[2].role == ArgPlan::Role::OperandOut);
  CHECK(p.args[3].kind == ArgPlan::Kind::Vector);
  CHECK(p.args[3].broadcast == "channel");
}

TEST_CASE("conv: dgrad and wgrad map to their GEMMs; [channel] is wgrad's row broadcast", "[codegen][lower][conv]") {
  KernelPlan d = lowerConv(convSpec("cd", "conv2d_dgrad", "  tile = (128, 128, 32); stages = 3;"));
  CHECK(d.templateInstance() ==
        "kdl::Conv2dSm80<kdl::ConvKind::Dgrad, half, 8, 8, float, 128, 128, 32, 2, 4, 3, 0, 0, 0, 0, Epilogue>");
  CHECK(decision(d, "implicit gemm")->value == "M = n*h*w, N = c, K = r*s*k");
  CHECK(contains(decision(d, "A")->value, "stride_h*stride_w phases"));
  CHECK(contains(decision(d, "A")->value, "each walking only its taps"));
  CHECK(contains(decision(d, "filter")->value, "run time"));
  CHECK((d.a.source == "Y" && d.a.contigK && d.b.source == "W" && !d.b.contigK));
  CHECK(argNames(d) == std::vector<std::string>{"Y", "W", "X", "alpha"});

  KernelPlan w = lowerConv(convSpec("cw", "conv2d_wgrad",
                                    "  tile = (128, 128, 32); stages = 3;\n  split_k = serial(8);\n"
                                    "  epilogue {\n    input decay : f32 [channel];\n    W = acc * decay;\n  }"));
  CHECK(contains(w.templateInstance(), "kdl::ConvKind::Wgrad"));
  CHECK(decision(w, "implicit gemm")->value == "M = k, N = r*s*c, K = n*p*q");
  CHECK(contains(decision(w, "A")->value, "pixel rows found by multiply-shift division once per k-tile"));
  CHECK((w.a.source == "Y" && !w.a.contigK && w.b.source == "X" && !w.b.contigK));
  CHECK(contains(decision(w, "[channel]")->value, "decay: the GEMM's row broadcast"));
  CHECK((w.serialSplitK && w.maxSplitK == 8));
  CHECK(argNames(w) == std::vector<std::string>{"Y", "X", "W", "decay"});
  // The functor reads [channel] per row for wgrad, per column for fprop.
  CHECK(contains(emitEpilogueFunctor(w, 0), "::kdl::load_row_broadcast<float, V>(p.decay"));
  KernelPlan f = lowerConv(convSpec("cf", "conv2d_fprop", "  epilogue {\n    input b : f32 [channel];\n    Y = acc + b;\n  }"));
  CHECK(contains(emitEpilogueFunctor(f, 0), "::kdl::load_col_broadcast<float, V>(p.b"));
  CHECK(contains(emitEpilogueFunctor(f, 0), "::kdl::store_tile<::half, V>(p.Y, p.ldy, p.batch_stride_Y, c, out_Y);"));
}

TEST_CASE("an input no expression reads stays an argument, neither loaded nor asked to be aligned", "[codegen][epilogue]") {
  // (`kdlc check` warns about it.) Loading it cost a kernel at the register edge its build: the gate fuzz's seed 41015
  // (an sm90a tf32 cooperative 256 x 128 with an unused [col] input spilled 68 bytes; without the input it built).
  KernelPlan f = lowerConv(convSpec("cu", "conv2d_fprop",
                                    "  epilogue {\n    input b : f32 [channel];\n    input u : f32 [channel];\n"
                                    "    input g : f32 [];\n    Y = acc + b;\n  }"));
  const std::vector<std::string> args = argNames(f);
  CHECK(std::find(args.begin(), args.end(), "u") != args.end());
  CHECK(std::find(args.begin(), args.end(), "g") != args.end());
  const std::string fn = emitEpilogueFunctor(f, 0);
  CHECK(contains(fn, "::kdl::load_col_broadcast<float, V>(p.b"));
  CHECK(contains(fn, "::kdl::col_vector_aligned<float, V>(p.b"));
  CHECK(!contains(fn, "(p.u"));
  CHECK(!contains(fn, "in_g = s.in_g"));
  KernelPlan g = lowerConv(convSpec("cv", "conv2d_fprop",
                                    "  epilogue {\n    input u : f32 [channel];\n    input g : f32 [];\n"
                                    "    Y = acc * g + u;\n  }"));
  const std::string gn = emitEpilogueFunctor(g, 0);
  CHECK(contains(gn, "::kdl::load_col_broadcast<float, V>(p.u"));
  CHECK(contains(gn, "::kdl::col_vector_aligned<float, V>(p.u"));
  CHECK(contains(gn, "const float in_g = s.in_g;"));
}

TEST_CASE("conv: sm90a runs the sm80 mainloop unless the spec asks for wgmma; strided wgmma dgrad and --torch are refused",
          "[codegen][lower][conv]") {
  KernelPlan p = lowerConv(convSpec("c9", "conv2d_fprop", "", "sm90a", "bf16"));
  CHECK(p.path == KernelPath::ConvSm80);
  REQUIRE(p.gencode.size() == 1);
  CHECK(p.gencode[0] == "-gencode=arch=compute_90a,code=sm_90a");
  CHECK(p.exactComputeCapability);
  CHECK(contains(decision(p, "path")->why, "sm80 mainloop (mma.sync) compiled for sm_90a, which takes every problem"));
  CHECK(contains(decision(p, "path")->why, "schedule = multistage (the default); `schedule = cooperative | pingpong` runs"));
  // An explicit wgmma schedule on fprop: kdl::Conv2dSm90Fprop (TMA im2col + wgmma), the wgmma tile rules.
  KernelPlan w = lowerConv(convSpec("c9w", "conv2d_fprop", "  schedule = pingpong;\n  filter = (3, 3);", "sm90a", "bf16"));
  CHECK(w.path == KernelPath::ConvSm90);
  CHECK((w.conv() && w.sm90()));
  CHECK(std::string(pathWord(w.path)) == "conv_sm90");
  CHECK(std::string(pathHeader(w.path)) == "kdl/conv_sm90.cuh");
  CHECK(w.templateInstance() ==
        "kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 128, 6, kdl::Sm90Schedule::Pingpong, 3, 3, 0, 0, Epilogue>");
  CHECK(contains(decision(w, "A")->value, "X by TMA in im2col mode"));
  CHECK(contains(decision(w, "implicit gemm")->value, "per image (batch = image): M = p*q, N = k, K = r*s*c"));
  CHECK(contains(decision(w, "mma")->value, "wgmma.mma_async.m64n128k16"));
  // dgrad and wgrad with a wgmma schedule: kdl::Conv2dSm90Dgrad (unit stride) and Conv2dSm90Wgrad (split-K).
  KernelPlan dg = lowerConv(convSpec("c9d", "conv2d_dgrad", "  schedule = pingpong;", "sm90a", "f16"));
  CHECK(dg.path == KernelPath::ConvSm90);
  CHECK(std::string(dg.deviceTemplate()) == "kdl::Conv2dSm90Dgrad");
  CHECK(dg.templateInstance() ==
        "kdl::Conv2dSm90Dgrad<half, 128, 128, 6, kdl::Sm90Schedule::Pingpong, 0, 0, 0, 0, Epilogue>");
  CHECK(contains(decision(dg, "A")->value, "dY by TMA in im2col mode"));
  CHECK(contains(decision(dg, "path")->why, "needs stride 1"));
  KernelPlan wg = lowerConv(convSpec("c9g", "conv2d_wgrad", "  schedule = cooperative;\n  split_k = serial(7);", "sm90a"));
  CHECK(wg.path == KernelPath::ConvSm90);
  CHECK(std::string(wg.deviceTemplate()) == "kdl::Conv2dSm90Wgrad");
  CHECK(contains(wg.templateInstance(), "kdl::Conv2dSm90Wgrad<"));
  CHECK(contains(decision(wg, "B")->value, "X by TMA in im2col mode"));
  CHECK(contains(decision(wg, "implicit gemm")->value, "M = k, N = r*s*c, K = n*p*q"));
  CHECK(std::string(w.deviceTemplate()) == "kdl::Conv2dSm90Fprop");
  CHECK(contains(convError(convSpec("c9", "conv2d_dgrad", "  schedule = pingpong;\n  stride = (2, 1);", "sm90a")),
                 "stride = (2, 1): the sm90a dgrad is generated for unit stride"));
  CHECK(contains(convError(convSpec("c9", "conv2d_fprop", "  schedule = cooperative;\n  split_k = serial(2);", "sm90a")),
                 "split_k is generated on the sm90a conv path for conv2d_wgrad only"));
  DiagEngine d;
  CHECK(checkTorchSupported(p.spec, d));  // a convolution has PyTorch ops (docs/torch.md)
  CHECK(!d.hasErrors());
  KernelSpec named = p.spec;
  named.epilogue.params.push_back(EpiParam{});
  named.epilogue.params.back().name = "padding";
  CHECK(!checkTorchSupported(named, d));
  REQUIRE(d.hasErrors());
  CHECK(contains(d.all()[0].message, "the epilogue's param `padding` has the name of an argument of the convolution's "
                                     "PyTorch op"));
  CHECK(contains(convError(convSpec("cf", "conv2d_fprop", "", "sm80", "f32")), "f32 inputs of a convolution"));
  // The validator's backstop: a conv spec without its three tensors is refused, not lowered.
  KernelSpec broken = lowerConv(convSpec("cb", "conv2d_fprop", "")).spec;
  broken.operands.pop_back();
  CHECK(contains(firstError(broken), "a convolution needs its two inputs and its output"));
}

TEST_CASE("conv: sm90a fprop carries the patch mainloop beside im2col where the plan allows it, and says why not",
          "[codegen][lower][conv]") {
  const char* fixed = "  schedule = cooperative;\n  tile = (128, 256, 64); stages = 4;\n  filter = (3, 3);\n  stride = (1, 1);\n";
  const std::string text = convSpec(
      "cp", "conv2d_fprop", std::string(fixed) + "  epilogue {\n    input b : f32 [channel];\n    Y = relu(acc + b);\n  }",
      "sm90a", "bf16");
  KernelPlan p = lowerConv(text);
  REQUIRE(p.path == KernelPath::ConvSm90);
  CHECK(p.convPatch);
  CHECK(p.templateInstance() ==
        "kdl::Conv2dSm90Fprop<__nv_bfloat16, 128, 256, 4, kdl::Sm90Schedule::Cooperative, 3, 3, 1, 1, Epilogue, true, 1, 1, "
        "true>");
  // Two 48 KB slots (the larger of G = 8 and 16 images per pixel) beside 3 stages of W's 32 KB: what fits in 227 KB.
  CHECK(p.patchSlotBytes == conv_patch_slot_bytes(128, 3, 3));
  CHECK(p.patchSlotBytes == 48 * 1024);
  CHECK(p.patchStages == 3);
  CHECK(contains(decision(p, "mainloop")->value, "patch at dilation 1"));
  CHECK(contains(decision(p, "mainloop")->value, "two 48 KB slots beside 3 stages of W"));
  // The launch's shared memory is the larger GEMM's: the patch one here.
  const GemmSm90SmemShape patchShape{2, 2, 128, 256, 64, 3, 0, 0, 48 * 1024};
  CHECK(p.smemBytes == size_t(gemm_sm90_smem_bytes(patchShape)));
  CHECK(gemm_sm90_stage_bytes(patchShape) == 256 * 128);  // W alone in a stage
  CHECK(gemm_sm90_barrier_offset(patchShape) == 3 * 256 * 128 + 2 * 48 * 1024);
  std::map<std::string, std::string> files = emitText(text);
  CHECK(contains(files.at("cp.h"), "const char* path(const Arguments& args);"));
  CHECK(contains(files.at("cp.cu"), "kdl_cp_path(const ::kdl_conv2d_shape* shape"));
  CHECK(contains(files.at("manifest.json"), "\"path\": \"kdl_cp_path\""));

  // Why not, one reason each; the kernel is then the im2col one alone (no path symbol).
  auto whyNot = [&](const std::string& body, const std::string& dtype = "bf16") {
    const std::string t = convSpec("cq", "conv2d_fprop", body, "sm90a", dtype);
    KernelPlan q = lowerConv(t);
    CHECK(!q.convPatch);
    CHECK(!contains(q.templateInstance(), ", true>"));
    CHECK(!contains(emitText(t).at("cq.cu"), "kdl_cq_path"));
    const Decision* d = decision(q, "mainloop");
    REQUIRE(d != nullptr);
    CHECK(contains(d->value, "im2col"));
    return d->why;
  };
  // Pingpong carries it too (each consumer's tile its own patches): 128 x 128, two 48 KB slots beside 6 stages of
  // W's 16 KB, taken on every problem (Conv2dSm90Fprop::patch_pays).
  {
    KernelPlan pp = lowerConv(convSpec("cpp", "conv2d_fprop",
                                       "  schedule = pingpong;\n  tile = (128, 128, 64);\n  stages = 6;\n"
                                       "  filter = (3, 3);\n  stride = (1, 1);",
                                       "sm90a", "bf16"));
    CHECK(pp.convPatch);
    CHECK(pp.patchStages == 6);
    CHECK(contains(pp.templateInstance(), "kdl::Sm90Schedule::Pingpong, 3, 3, 1, 1, Epilogue, true, 1, 1, true>"));
    CHECK(contains(decision(pp, "mainloop")->value, "every problem: pingpong"));
    CHECK(contains(decision(pp, "mainloop")->value, "two 48 KB slots beside 6 stages of W"));
  }
  CHECK(contains(whyNot("  schedule = cooperative;\n  tile = (128, 128, 64);\n  filter = (3, 3);\n  stride = (1, 1);\n"
                        "  cluster = (2, 1, 1);"),
                 "a cluster"));
  CHECK(contains(whyNot("  schedule = cooperative;\n  stride = (1, 1);"), "a run-time filter"));
  CHECK(contains(whyNot("  schedule = cooperative;\n  filter = (1, 1);\n  stride = (1, 1);"), "a 1 x 1 filter"));
  CHECK(contains(whyNot("  schedule = cooperative;\n  filter = (3, 3);"), "a stride that is not fixed at (1, 1)"));
  CHECK(contains(whyNot("  schedule = cooperative;\n  filter = (3, 3);\n  stride = (2, 2);"), "not fixed at (1, 1)"));
  // The whole epilogue runs on it: a residual, extra outputs and an amax are read and written at each row's pixel.
  for (const char* epi : {"  residual : bf16 nhwc;\n  epilogue {\n    Y = acc + residual;\n  }",
                          "  epilogue {\n    output Z : f32 nhwc = acc;\n    Y = acc;\n  }",
                          "  epilogue {\n    output amax_y : f32 = max(abs(acc));\n    Y = acc;\n  }"}) {
    KernelPlan r = lowerConv(convSpec("cr", "conv2d_fprop", std::string(fixed) + epi, "sm90a", "bf16"));
    CHECK(r.convPatch);
  }
  // 7 x 7: two 160 KB patches do not fit beside any W ring.
  CHECK(contains(whyNot("  schedule = cooperative;\n  tile = (128, 128, 64);\n  filter = (7, 7);\n  stride = (1, 1);"),
                 "shared memory: two 160 KB patches"));
  CHECK(conv_patch_stages(128, 128, 7, 7, 4, kGemmSm90SmemLimit) == 0);
  // A 2 x 2 filter: at most r * s + 1 = 5 stages (a slot is reloaded once the stage Stages back is released).
  CHECK(conv_patch_stages(128, 64, 2, 2, 8, kGemmSm90SmemLimit) == 5);
}

TEST_CASE("conv: the pingpong 128 x 128 patch kernels with 16-bit tensors and a pointwise epilogue carry the swapped "
          "mainloop, and the plan says why not elsewhere",
          "[codegen][lower][conv]") {
  const std::string pp = "  schedule = pingpong;\n  tile = (128, 128, 64);\n  stages = 6;\n  filter = (3, 3);\n  stride = (1, 1);\n";
  const std::string text = convSpec("cs", "conv2d_fprop",
                                    pp + "  epilogue {\n    param alpha = 1.0;\n    input scale : f32 [];\n    Y = relu(alpha * acc * scale);\n  }",
                                    "sm90a", "bf16");
  KernelPlan p = lowerConv(text);
  REQUIRE(p.convPatch);
  CHECK(p.convSwap);
  // Two 80 KB patches (4 rows x 10 columns x 16 images x 128 B) beside 6 stages of W's 8 KB and the 16 KB staging tile.
  CHECK(conv_swap_slot_bytes(3, 3) == 80 * 1024);
  CHECK(p.swapStages == 6);
  CHECK(conv_swap_smem_bytes(3, 3, kGemmSm90SmemLimit) <= kGemmSm90SmemLimit);
  CHECK(p.smemBytes >= size_t(conv_swap_smem_bytes(3, 3, kGemmSm90SmemLimit)));
  const Decision* d = decision(p, "mainloop swap");
  REQUIRE(d != nullptr);
  CHECK(contains(d->value, "swap where it pays (n a multiple of 16, q of 8, p of 2, k of 64, c and k >= 128)"));
  CHECK(contains(d->value, "two 80 KB slots beside 6 stages of W's 8 KB"));
  // The template decides it too; the emitted kernel holds the two to each other, and the functor says it is pointwise.
  const std::string cu = emitText(text).at("cs.cu");
  CHECK(contains(cu, "static_assert(Conv::kSwap == true, \"kdlc's plan: the swapped mainloop beside the patch GEMM\");"));
  CHECK(contains(cu, "static constexpr bool kPointwise = true;"));
  CHECK(contains(cu, "static constexpr bool kFinishLocal = true;"));
  // 1 x 3 and 2 x 3 filters fit 6 stages too; 5 x 5 (two 144 KB patches) does not fit 4.
  CHECK(conv_swap_stages(1, 3, kGemmSm90SmemLimit) == 6);
  CHECK(conv_swap_stages(2, 3, kGemmSm90SmemLimit) == 6);
  CHECK(conv_swap_stages(5, 5, kGemmSm90SmemLimit) == 0);

  // Why not, one reason each (the patch mainloop stays).
  auto whyNot = [&](const std::string& body) {  // a body, or a whole kernel named cz
    const std::string t = body.rfind("kernel", 0) == 0 ? body : convSpec("cz", "conv2d_fprop", body, "sm90a", "bf16");
    KernelPlan q = lowerConv(t);
    CHECK(q.convPatch);
    CHECK(!q.convSwap);
    CHECK(contains(emitText(t).at("cz.cu"), "static_assert(Conv::kSwap == false"));
    const Decision* w = decision(q, "mainloop swap");
    REQUIRE(w != nullptr);
    CHECK(w->value == "none");
    return w->why;
  };
  CHECK(contains(whyNot("  schedule = cooperative;\n  tile = (128, 128, 64);\n  filter = (3, 3);\n  stride = (1, 1);"),
                 "a pingpong 128 x 128 tile only"));
  CHECK(contains(whyNot("  schedule = pingpong;\n  tile = (128, 64, 64);\n  filter = (3, 3);\n  stride = (1, 1);"),
                 "a pingpong 128 x 128 tile only"));
  CHECK(contains(whyNot(pp + "  residual : bf16 nhwc;\n  epilogue {\n    Y = acc + residual;\n  }"),
                 "a pointwise epilogue only"));
  CHECK(contains(whyNot(pp + "  epilogue {\n    input b : f32 [channel];\n    Y = acc + b;\n  }"), "a pointwise epilogue only"));
  CHECK(contains(whyNot(pp + "  epilogue {\n    output amax_y : f32 = max(abs(acc));\n    Y = acc;\n  }"),
                 "a pointwise epilogue only"));
  CHECK(contains(whyNot(pp + "  epilogue {\n    output Z : bf16 nhwc = acc;\n    Y = acc;\n  }"), "a pointwise epilogue only"));
  CHECK(contains(whyNot("kernel cz {\n  op = conv2d_fprop; arch = sm90a;\n  X : bf16 nhwc; W : bf16 krsc; Y : f32 nhwc;\n" + pp +
                        "}\n"),
                 "16-bit X, W and Y only"));
  // 3 x 5: the patch GEMM's two 64 KB slots fit, the swapped mainloop's two 96 KB ones leave 2 stages of W.
  CHECK(contains(whyNot("  schedule = pingpong;\n  tile = (128, 128, 64);\n  filter = (3, 5);\n  stride = (1, 1);"),
                 "shared memory: two 96 KB patches leave fewer than 4 stages of W"));
}

TEST_CASE("conv: emitted files use kdl::ConvHost, conv_input entries and kdl_conv2d_shape", "[codegen][emit][conv]") {
  std::map<std::string, std::string> files =
      emitText(convSpec("cw", "conv2d_wgrad", "  filter = (3, 3);\n  stride = (2, 2);\n  split_k = serial(4);"));
  const std::string& h = files.at("cw.h");
  const std::string& cu = files.at("cw.cu");
  CHECK(contains(h, "int r = 3, s = 3;"));
  CHECK(contains(h, "int stride_h = 2, stride_w = 2;"));
  CHECK(contains(h, "int p = 0, q = 0;"));
  CHECK(contains(h, "inline constexpr int kMaxSplitK = 4;"));
  CHECK(contains(h, "int split_k = 0;"));
  CHECK(contains(h, "::half* W = nullptr; ::int64_t ldw = 0; ::int64_t batch_stride_W = 0;"));
  CHECK(!contains(h, "int m = 0"));
  CHECK(contains(cu, "#include <kdl/conv_host.h>"));
  CHECK(contains(cu, "#include <kdl/conv_sm80.cuh>"));
  CHECK(!contains(cu, "gemm_host.h"));
  CHECK(contains(cu, "using Conv = ::kdl::Conv2dSm80<::kdl::ConvKind::Wgrad, ::half, 8, 8, float,"));
  CHECK(contains(cu, "::kdl::arg::conv_input(\"Y\", \"f16\", &Arguments::Y, &Arguments::ldy, &Arguments::batch_stride_Y, 8)"));
  CHECK(contains(cu, "::kdl::arg::conv_input(\"X\", \"f16\", &Arguments::X, &Arguments::ldx, &Arguments::batch_stride_X, 8)"));
  CHECK(contains(cu, "::kdl::arg::tensor(\"W\", \"f16\", &Arguments::W, &Arguments::ldw"));
  CHECK(contains(cu, "static constexpr const char* kOp = \"conv2d_wgrad\";"));
  CHECK(contains(cu, "using Host = ::kdl::ConvHost<Kernel>;"));
  CHECK(contains(cu, "kdl_cw_can_implement(const ::kdl_conv2d_shape* shape"));
  CHECK(contains(cu, "kdl_cw_workspace_size(const ::kdl_conv2d_shape* shape)"));
  CHECK(contains(cu, "kdl_cw_run(const ::kdl_conv2d_shape* shape"));
  CHECK(!contains(cu, "kdl_gemm_shape"));
  const std::string& m = files.at("manifest.json");
  CHECK(contains(m, "\"op\": \"conv2d_wgrad\""));
  CHECK(contains(m, "\"path\": \"conv_sm80\""));
  CHECK(contains(m, "\"template\": \"kdl::Conv2dSm80\""));
  CHECK(contains(m, "\"filter\": [3, 3],"));
  CHECK(contains(m, "\"stride\": [2, 2],"));
  CHECK(contains(m, "{\"name\": \"W\", \"kind\": \"tensor\", \"role\": \"output\", \"dtype\": \"f16\"}"));
}

TEST_CASE("conv: the fixed filter and stride change the kernel hash", "[codegen][hash][conv]") {
  const std::string base = lowerConv(convSpec("c", "conv2d_fprop", "")).kernelHash;
  CHECK(lowerConv(convSpec("c", "conv2d_fprop", "  filter = (3, 3);")).kernelHash != base);
  CHECK(lowerConv(convSpec("c", "conv2d_fprop", "  filter = (1, 1);")).kernelHash !=
        lowerConv(convSpec("c", "conv2d_fprop", "  filter = (3, 3);")).kernelHash);
  CHECK(lowerConv(convSpec("c", "conv2d_fprop", "  stride = (2, 2);")).kernelHash != base);
  CHECK(lowerConv(convSpec("c", "conv2d_dgrad", "")).kernelHash != base);
  CHECK(lowerConv(convSpec("c", "conv2d_fprop", "")).kernelHash == base);
}

TEST_CASE("constant subexpressions fold at generation time; params, casts and literals stay", "[codegen][epilogue]") {
  // The gate fuzz's seed 41018: an sm90a u8 256 x 128 x 128 kernel whose D subtracted
  // select(gelu_tanh(1.5) > 0, relu(gelu_tanh(1.5)), gelu_tanh(gelu_tanh(1.5))) spilled 16 bytes; with that constant
  // computed here it builds. The folded tree is what lowering counts and emits; the spec keeps what was written.
  const std::vector<KernelPlan> plans = lowerText(
      "kernel kf {\n  op = gemm; arch = sm80;\n  A : f16 row; B : f16 col; C : f16 row; D : f16 row;\n"
      "  epilogue {\n    param alpha = 1.0;\n    let g = gelu_tanh(1.5) * 2.0;\n"
      "    D = select(g > 1.0, acc * alpha - gelu(0.5), C) + select(gelu_tanh(1.5) > 9.0, exp(acc), -exp(1.0));\n"
      "    output Z : f32 row = -(log(2.0) - 1.0) * acc + clamp(acc, -2.0, 3.0) * (alpha + 1.0)"
      " + cast(bf16, 1.1) + select(log(-1.0) != 0.0, acc, 2.0);\n  }\n}\n");
  REQUIRE(plans.size() == 1);
  const KernelPlan& p = plans[0];
  const Epilogue& e = p.epilogue;
  // The let: gelu_tanh(1.5) * 2 in float.
  REQUIRE(e.lets.size() == 1);
  REQUIRE(e.lets[0].value.op == EpiOp::Const);
  CHECK(std::abs(e.lets[0].value.constant - 2.7991431539605) < 1e-6);
  // No heavy function is left to count or to compute; the spec still has them.
  CHECK(countOps(e, EpiOp::GeluTanh) == 0);
  CHECK(countOps(e, EpiOp::Gelu) == 0);
  CHECK(countOps(e, EpiOp::Select) == 0);
  CHECK(countOps(e, EpiOp::Log) == 0);
  CHECK(countOps(p.spec.epilogue, EpiOp::GeluTanh) == 2);
  CHECK(countOps(p.spec.epilogue, EpiOp::Select) == 3);
  const std::string fn = emitEpilogueFunctor(p, 0);
  INFO(fn);
  // select(g > 1, ...) took its first branch (g is 2.8): gelu(0.5) = 0.345731 folded, the param read at run time,
  // C no longer read: it stays an argument but is neither loaded nor tested for alignment; the second select took its
  // else branch, -exp(1).
  CHECK(contains(fn, "out_D[i] = (((acc[i] * p.alpha) - 0.34573123f) + (-2.7182817f));"));
  CHECK(contains(fn, "-2.7182817f"));
  CHECK(!contains(fn, "::kdl::gelu"));
  CHECK(!contains(fn, "::kdl::select"));
  CHECK(!contains(fn, "::kdl::exp"));
  CHECK(!contains(fn, "src_C"));
  CHECK(!contains(fn, "tile_vector_aligned<::half, V>(p.C"));
  CHECK(contains(fn, "const ::half* C;"));
  CHECK(!readsSource(e));
  CHECK(e.usesSource);
  // A negative folded constant under a minus is parenthesized (never "--"), a literal keeps its spelling, a param
  // sum stays, a cast stays the device's conversion, a NaN compares unequal to 0 here as on the device.
  CHECK(contains(fn, "(-(-0.30685282f))"));
  CHECK(!contains(fn, "--"));
  CHECK(contains(fn, "::kdl::clamp(acc[i], (-2.0f), 3.0f)"));
  CHECK(contains(fn, "(p.alpha + 1.0f)"));
  CHECK(contains(fn, "::kdl::convert_out<::__nv_bfloat16>(1.1f)"));
  CHECK(!contains(fn, ", 2.0f)"));  // select(log(-1) != 0, acc, 2.0): NaN != 0, so acc
  // The plan's epilogue line is the spec as written; the emitted comment shows what the kernel computes.
  CHECK(contains(decision(p, "epilogue")->value, "gelu_tanh(1.5)"));
  CHECK(contains(emitEpilogueFunctor(p, 0), "// let g = 2.799143;"));
}
