// The sm90a epilogue's vector width (codegen/lower_sm90.cpp, lowerSm90Epilogue): 8 columns per
// Epilogue::apply call for plain epilogues, fewer where the consumers' registers are short, the
// emitted functor declaring it, and an epilogue that fits at no width refused. (Against ptxas:
// tests/nvcc/epilogue_registers.py builds the same spec through the gate.)
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "codegen/codegen.h"
#include "codegen/emit_internal.h"
#include "codegen/plan.h"
#include "dsl/frontend.h"

using namespace kdl;
using namespace kdl::codegen;

namespace {
std::map<std::string, KernelPlan> lowerFile(const std::string& path, DiagEngine& d) {
  SourceManager sm;
  FrontendResult r = runFrontend(sm, path, d);
  std::map<std::string, KernelPlan> out;
  if (d.hasErrors()) return out;
  for (KernelPlan& p : lower(r.specs, d)) out[p.name] = std::move(p);
  return out;
}
const Decision* vectorDecision(const KernelPlan& p) {
  for (const Decision& x : p.decisions)
    if (x.what == "epilogue V") return &x;
  return nullptr;
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("sm90a epilogue vector width from the register budget", "[codegen][lower][sm90]") {
  DiagEngine d;
  auto plans = lowerFile(std::string(KDL_SOURCE_DIR) + "/tests/nvcc/sm90a_epilogue_registers.kdl", d);
  REQUIRE(!d.hasErrors());
  REQUIRE(plans.count("e_plain_c21"));
  REQUIRE(plans.count("e_zamax_c21"));
  REQUIRE(plans.count("e_heavy_c21"));

  // The plain epilogue keeps 16-byte stores; no kVectorWidth is emitted (the templates' default).
  const KernelPlan& plain = plans["e_plain_c21"];
  CHECK(plain.epilogueVectorWidth == 8);
  REQUIRE(vectorDecision(plain));
  CHECK(contains(vectorDecision(plain)->why, "the widest"));
  CHECK(!contains(emitEpilogueFunctor(plain, 0), "kVectorWidth"));

  // The GPU suite's h90_bf16_aux_z_amax and everything at once on a 2 x 1 cluster: 8 columns.
  CHECK(plans["e_zamax_c21"].epilogueVectorWidth == 8);
  CHECK(plans["e_heavy_c21"].epilogueVectorWidth == 8);
  REQUIRE(plans.count("e_bias_c22"));
  CHECK(plans["e_bias_c22"].epilogueVectorWidth == 8);

  // Six extra outputs, C and an amax: narrowed, and the plan says why.
  REQUIRE(plans.count("e_wide_c21"));
  const KernelPlan& wide = plans["e_wide_c21"];
  CHECK(wide.epilogueVectorWidth == 4);
  REQUIRE(vectorDecision(wide));
  CHECK(contains(vectorDecision(wide)->value, "4 columns per Epilogue::apply call"));
  CHECK(contains(vectorDecision(wide)->why, "8 columns would need"));
  CHECK(contains(vectorDecision(wide)->why, "128 accumulator registers"));
  CHECK(contains(vectorDecision(wide)->why, "(the staged accumulator, C, D, Z1, Z2, Z3, Z4, Z5, Z6, `amax`'s max(abs(.)))"));
  CHECK(contains(emitEpilogueFunctor(wide, 0), "static constexpr int kVectorWidth = 4;"));
  // fp8 promotion keeps its temporary accumulator through the epilogue: counted.
  REQUIRE(plans.count("e_fp8_block_c21"));
  CHECK(contains(vectorDecision(plans["e_fp8_block_c21"])->why, "with promotion's temporary accumulator"));
  // Every plan's epilogue decision names the width it got.
  for (auto& [name, p] : plans) {
    INFO(name);
    CHECK(p.epilogueVectorWidth >= 2);
  }
}

TEST_CASE("sm90a epilogue vector width: the shared examples and plain epilogues keep 8", "[codegen][lower][sm90]") {
  DiagEngine d;
  auto plans = lowerFile(std::string(KDL_SHARED_DIR) + "/spec/examples/gemm_sweep.kdl", d);
  REQUIRE(!d.hasErrors());
  REQUIRE(plans.size() == 12);
  for (auto& [name, p] : plans) {
    INFO(name);
    CHECK(p.epilogueVectorWidth == 8);
  }
}

TEST_CASE("sm90a epilogue that fits at no vector width is refused", "[codegen][unsupported][sm90]") {
  {
    DiagEngine d;
    auto plans =
        lowerFile(std::string(KDL_SOURCE_DIR) + "/tests/diagnostics/unsupported/sm90a_cluster_epilogue_registers.kdl", d);
    REQUIRE(d.hasErrors());
    CHECK(plans.empty());
    CHECK(d.all()[0].kind == DiagKind::Unsupported);
    CHECK(contains(d.all()[0].message, "cluster (2, 2, 1) with 128 accumulator registers"));
    CHECK(contains(d.all()[0].message, "stores 2 fp8 tensors"));
  }
  DiagEngine d;
  auto plans = lowerFile(std::string(KDL_SOURCE_DIR) + "/tests/diagnostics/unsupported/sm90a_epilogue_registers.kdl", d);
  REQUIRE(d.hasErrors());
  CHECK(plans.empty());
  CHECK(d.all()[0].kind == DiagKind::Unsupported);
  CHECK(contains(d.all()[0].message, "does not fit in a consumer's registers"));
  CHECK(contains(d.all()[0].message, "even at 2 columns per call"));
}
