// Codegen unit tests: lowering decisions, epilogue expressions, sha256, determinism, and the
// [unsupported] errors of specs this version cannot generate.
#include <catch2/catch.hpp>

#include <string>

#include "codegen/codegen.h"
#include "codegen/compile_cache.h"
#include "codegen/epilogue_expr.h"
#include "codegen/plan.h"
#include "codegen/sha256.h"
#include "codegen/emit_internal.h"
#define KDLC_TEST_VERSION kdl::codegen::kdlcVersion().c_str()
#include "dsl/frontend.h"
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
  for (const char* what : {"target", "path", "A", "B", "accumulator", "mma", "tile", "warps", "smem A", "smem B",
                           "stages", "raster", "split_k", "epilogue", "arguments"}) {
    INFO(what);
    REQUIRE(decision(p, what) != nullptr);
    CHECK(!decision(p, what)->why.empty());
  }
  CHECK(contains(decision(p, "smem A")->value, "Swizzle<3,4,3>"));
  CHECK(p.templateInstance() ==
        "kdl::GemmSm80Tma<__nv_bfloat16, kdl::RowMajor, 8, __nv_bfloat16, kdl::ColMajor, 8, float, 128, 128, 32, 2, 2, 4, "
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
    CHECK(a[i].contents.rfind("// Generated by kdlc " + std::string(KDLC_TEST_VERSION) + " from x.kdl (spec sha256 " + o.specHash +
                                  "). Do not edit.\n",
                              0) == 0);
  const std::string& cu = a[1].contents;
  CHECK(contains(cu, "#include <kdl/gemm_sm80_tma.cuh>"));
  CHECK(contains(cu, "#include \"gemm_x.h\""));
  CHECK(contains(cu, "extern \"C\" int kdl_gemm_x_run("));
  CHECK(contains(cu, "::kdl::arg::amax(\"amax\", \"f32\", &Arguments::amax, &Params::amax)"));  // run() zeroes it
  CHECK(contains(cu, "::kdl::amax_finish(p.amax, s.amax_amax);"));
  CHECK(contains(a[0].contents, "float alpha = 1.0f;"));
  CHECK(contains(a[0].contents, "float* amax = nullptr;"));
  CHECK(!contains(a[0].contents, "__device__"));
  for (const EmittedFile& f : a) CHECK(!contains(f.contents, "/work/"));
}

TEST_CASE("unsupported specs are rejected at the responsible field", "[codegen][unsupported]") {
  KernelSpec s = makeGemm("g", DType::BF16, DType::BF16);
  s.schedule.value = Schedule::Cooperative;
  s.arch.value = Arch::SM90a;
  CHECK(contains(firstError(s), "the sm90a wgmma path (schedule `cooperative`) is not generated"));
  s = makeGemm("g", DType::E4M3, DType::BF16);
  s.arch.value = Arch::SM89;
  CHECK(contains(firstError(s), "e4m3 operands"));
  s = makeGemm("g", DType::BF16, DType::BF16);
  s.operands.back().layout = Layout::Col;
  CHECK(contains(firstError(s), "only row-major C and D"));
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
  CHECK(contains(firstError(s), "`lda` would be declared twice"));
  s = makeGemm("class", DType::F16, DType::F16);
  CHECK(contains(firstError(s), "reserved in C++"));
  s = makeGemm("g", DType::F16, DType::F16);
  s.op.value = Op::Conv2dFprop;
  CHECK(contains(firstError(s), "conv2d_fprop"));
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
  CHECK(lower(sweep.specs, d2).empty());
  CHECK(d2.hasErrors());
  for (const Diagnostic& x : d2.all()) CHECK(x.kind == DiagKind::Unsupported);
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
  REQUIRE(c.store(k, "object bytes"));
  REQUIRE(c.lookup(k));
  CHECK(*c.lookup(k) == "object bytes");
  // a tampered object is never used
  std::string err;
  REQUIRE(writeFileAtomic(c.dir() + "/" + k.substr(0, 2) + "/" + k + ".o", "planted", err));
  CHECK(!c.lookup(k));
}
