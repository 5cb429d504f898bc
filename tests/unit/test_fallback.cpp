// `fallback = sm80` (issue 7, item 6): the field as validated, the second (sm80-path) plan lowering
// makes for it, the kernel hash, and what the emitters write for it. Its diagnostics are goldens
// (tests/diagnostics/fallback/, field-range/fallback_sm86, field-type/fallback_string,
// unsupported/fallback_u8); the generated host side runs in tests/nvcc/test_can_implement_fallback.cpp.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/lower_steps.h"
#include "codegen/plan.h"
#include "codegen/sha256.h"
#include "dsl/frontend.h"

using namespace kdl;
using namespace kdl::codegen;

namespace {

std::vector<KernelSpec> specsOf(const std::string& text) {
  SourceManager sm;
  DiagEngine d;
  FrontendResult r = runFrontendOnText(sm, "k.kdl", text, d);
  INFO((d.all().empty() ? std::string() : d.all()[0].message));
  REQUIRE(!d.hasErrors());
  return r.specs;
}

std::vector<KernelPlan> plansOf(const std::string& text) {
  DiagEngine d;
  std::vector<KernelPlan> plans = lower(specsOf(text), d);
  INFO((d.all().empty() ? std::string() : d.all()[0].message));
  REQUIRE(!d.hasErrors());
  return plans;
}

std::map<std::string, std::string> filesOf(const std::string& text) {
  EmitOptions o;
  o.specName = "k.kdl";
  o.specHash = sha256Hex(text);
  std::map<std::string, std::string> files;
  for (EmittedFile& f : emit(plansOf(text), o)) files[f.path] = std::move(f.contents);
  return files;
}

const Decision* decision(const KernelPlan& p, const std::string& what) {
  for (const Decision& d : p.decisions)
    if (d.what == what) return &d;
  return nullptr;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const char* kKernels = R"(
template fb(dt) { op = gemm; arch = sm90a; A : dt row; B : dt col; D : dt row; fallback = sm80; }
kernel narrow { op = gemm; arch = sm90a; A : bf16 row align 2; B : bf16 col align 2; D : bf16 row;
                tile = (128, 128, 64); fallback = sm80; epilogue { input bias : f32 [col]; D = acc + bias; } }
kernel wide = fb(f16) { split_k = serial(3); }
kernel none_set { op = gemm; arch = sm90a; A : bf16 row; B : bf16 col; D : bf16 row; fallback = none; }
kernel absent { op = gemm; arch = sm90a; A : bf16 row; B : bf16 col; D : bf16 row; }
)";

}  // namespace

TEST_CASE("fallback: the field's value and where it came from", "[fallback][validate]") {
  const std::vector<KernelSpec> specs = specsOf(kKernels);
  REQUIRE(specs.size() == 4);
  CHECK(specs[0].fallback.value == Fallback::Sm80);
  CHECK(specs[0].fallback.origin == Origin::Explicit);
  CHECK(specs[1].fallback.value == Fallback::Sm80);
  CHECK(specs[1].fallback.origin == Origin::Template);
  CHECK(specs[2].fallback.value == Fallback::None);
  CHECK(specs[2].fallback.origin == Origin::Explicit);
  CHECK(specs[3].fallback.value == Fallback::None);
  CHECK(specs[3].fallback.origin == Origin::Default);
}

TEST_CASE("fallback: lowering makes an sm80-path plan of the same GEMM", "[fallback][lower]") {
  const std::vector<KernelPlan> plans = plansOf(kKernels);
  REQUIRE(plans.size() == 4);
  const KernelPlan& narrow = plans[0];
  REQUIRE(narrow.sm90());
  REQUIRE(narrow.fallback);
  const KernelPlan& f = *narrow.fallback;
  CHECK(!f.sm90());
  CHECK(f.arch == Arch::SM80);
  CHECK(f.name == narrow.name);
  // Less than 16-byte aligned operands: the narrow tile (128 x 128 spills with 4-byte copies).
  CHECK((f.tileM == 64 && f.tileN == 64 && f.tileK == 32));
  CHECK(f.a.align == 2);
  CHECK(f.b.align == 2);
  CHECK(f.accumCpp == "float");
  CHECK(f.stages == 4);
  // The same arguments in the same order: one Arguments struct serves both kernels.
  REQUIRE(f.args.size() == narrow.args.size());
  for (size_t i = 0; i < f.args.size(); ++i) CHECK(f.args[i].name == narrow.args[i].name);
  // Both kernels' targets in one file: sm_90a SASS, sm_80 SASS and compute_80 PTX.
  CHECK(narrow.gencode == std::vector<std::string>{"-gencode=arch=compute_90a,code=sm_90a",
                                                   "-gencode=arch=compute_80,code=sm_80",
                                                   "-gencode=arch=compute_80,code=compute_80"});
  CHECK(narrow.cmakeArchitectures == "80;90a-real");
  const Decision* d = decision(narrow, "fallback");
  REQUIRE(d);
  CHECK(contains(d->value, "sm80: kdl::GemmSm80<"));
  CHECK(contains(d->why, "a leading dimension or batch stride not a multiple of 16 bytes"));
  CHECK(contains(d->why, "64 x 64, as A or B is less than 16-byte aligned"));

  // 16-byte aligned operands: the sm80 path's default 128 x 128 tile; split-K carries over.
  REQUIRE(plans[1].fallback);
  CHECK((plans[1].fallback->tileM == 128 && plans[1].fallback->tileN == 128 && plans[1].fallback->tileK == 32));
  CHECK(plans[1].fallback->maxSplitK == 3);
  CHECK(plans[1].maxSplitK == 3);
  CHECK(contains(decision(plans[1], "fallback")->why, "set by the template"));

  // No fallback: one plan, sm_90a only.
  for (size_t i : {2, 3}) {
    CHECK(!plans[i].fallback);
    CHECK(plans[i].gencode == std::vector<std::string>{"-gencode=arch=compute_90a,code=sm_90a"});
    CHECK(!decision(plans[i], "fallback"));
  }
}

TEST_CASE("fallback: part of the kernel hash; `none` is the default's", "[fallback][hash]") {
  const std::vector<KernelPlan> plans = plansOf(
      "kernel k { op = gemm; arch = sm90a; A : bf16 row; B : bf16 col; D : bf16 row; fallback = sm80; }\n");
  const std::vector<KernelPlan> none = plansOf(
      "kernel k { op = gemm; arch = sm90a; A : bf16 row; B : bf16 col; D : bf16 row; fallback = none; }\n");
  const std::vector<KernelPlan> absent = plansOf("kernel k { op = gemm; arch = sm90a; A : bf16 row; B : bf16 col; D : bf16 row; }\n");
  CHECK(plans[0].kernelHash != absent[0].kernelHash);
  CHECK(none[0].kernelHash == absent[0].kernelHash);
}

TEST_CASE("fallback: NAME.cu dispatches, NAME.h and the C ABI say which kernel runs", "[fallback][emit]") {
  const std::map<std::string, std::string> files = filesOf(kKernels);
  const std::string& cu = files.at("narrow.cu");
  CHECK(contains(cu, "#include <kdl/gemm_fallback.h>"));
  CHECK(contains(cu, "#include <kdl/gemm_sm80.cuh>"));
  CHECK(contains(cu, "#include <kdl/gemm_sm90.cuh>"));
  CHECK(contains(cu, "namespace fallback {"));
  CHECK(contains(cu, "using Gemm = ::kdl::GemmSm80<::__nv_bfloat16, ::kdl::RowMajor, 2,"));
  CHECK(contains(cu, "static constexpr ::kdl::KernelTarget kTarget = {\"sm80\", 80, false};"));
  CHECK(contains(cu, "using Host = ::kdl::GemmHostWithFallback<Kernel, fallback::Kernel>;"));
  CHECK(contains(cu, "extern \"C\" const char* kdl_narrow_path(const ::kdl_gemm_shape* shape"));
  CHECK(contains(cu, "-gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=sm_80"));
  CHECK(contains(files.at("narrow.h"), "const char* path(const Arguments& args);"));
  const std::string& manifest = files.at("manifest.json");
  CHECK(contains(manifest, "\"path\": \"kdl_narrow_path\""));
  CHECK(contains(manifest, "\"fallback\": {\"arch\": \"sm80\", \"path\": \"gemm_sm80\", \"template\": \"kdl::GemmSm80\""));
  // Kernels without a fallback: one kernel, no path query.
  for (const char* k : {"none_set", "absent"}) {
    const std::string& other = files.at(std::string(k) + ".cu");
    CHECK(!contains(other, "fallback"));
    CHECK(!contains(other, "_path("));
    CHECK(contains(other, "using Host = ::kdl::GemmHost<Kernel>;"));
    CHECK(!contains(files.at(std::string(k) + ".h"), "path("));
  }
}
