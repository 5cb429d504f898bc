// Lowering: validated KernelSpec -> KernelPlan. The driver of each path runs its steps
// (codegen/lower_steps.h) in order; every template parameter is decided in one step, once, with the
// reason, and emitters write what the plan says.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/codegen.h"
#include "codegen/lower_steps.h"
#include "codegen/plan.h"
#include "codegen/support.h"

namespace kdl::codegen {

void Lowering::decide(std::string what, std::string value, std::string why) const {
  plan.decisions.push_back({std::move(what), std::move(value), std::move(why)});
}

void Lowering::unsupported(SourceLoc loc, const std::string& message) const {
  diags.error(DiagKind::Unsupported, loc, fmt::format("kernel `{}`: {}", spec.name, message));
}

const char* originWord(Origin o) {
  switch (o) {
    case Origin::Explicit: return "set in the spec";
    case Origin::Template: return "set by the template";
    case Origin::Default: return "the default";
    case Origin::Auto: return "chosen by the validator for `auto`";
  }
  return "";
}

std::string toLower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string ldName(const std::string& name) { return "ld" + toLower(name); }
std::string batchStrideName(const std::string& name) { return "batch_stride_" + name; }

const char* pathWord(KernelPath p) { return p == KernelPath::GemmSm80Tma ? "gemm_sm80_tma" : "gemm_sm80"; }
const char* pathTemplate(KernelPath p) { return p == KernelPath::GemmSm80Tma ? "kdl::GemmSm80Tma" : "kdl::GemmSm80"; }
const char* pathHeader(KernelPath p) { return p == KernelPath::GemmSm80Tma ? "kdl/gemm_sm80_tma.cuh" : "kdl/gemm_sm80.cuh"; }

std::string KernelPlan::templateInstance(std::string (*spell)(const std::string&)) const {
  auto s = [&](const std::string& name) { return spell ? spell(name) : name; };
  return fmt::format("{}<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, Epilogue>", s(pathTemplate(path)),
                     s(a.cppType), s(a.cppLayout), a.align, s(b.cppType), s(b.cppLayout), b.align, s(accumCpp), tileM,
                     tileN, tileK, warpsM, warpsN, stages, rasterAlongM ? "true" : "false");
}

namespace {

// The sm80 multistage GEMM (include/kdl/gemm_sm80.cuh, gemm_sm80_tma.cuh), in the order its
// decisions depend on each other: the warps need the operands, the shared memory needs the warps.
constexpr LoweringStep kGemmSm80Steps[] = {lowerTarget, lowerOperands, lowerTiling, lowerPipeline, lowerArguments};

bool runSteps(Lowering& l, const LoweringStep* first, const LoweringStep* last) {
  for (const LoweringStep* step = first; step != last; ++step)
    if (!(*step)(l)) return false;
  return true;
}

bool lowerGemmSm80(const KernelSpec& s, KernelPlan& p, DiagEngine& diags) {
  p.name = s.name;
  p.spec = s;
  p.epilogue = s.epilogue;
  Lowering l{s, p, diags};
  if (!runSteps(l, std::begin(kGemmSm80Steps), std::end(kGemmSm80Steps))) return false;
  p.kernelHash = kernelHash(p);
  return true;
}

}  // namespace

std::vector<KernelPlan> lower(const std::vector<KernelSpec>& specs, DiagEngine& diags) {
  std::vector<KernelPlan> plans;
  for (const KernelSpec& s : specs) {
    // checkSupported admits the sm80 multistage GEMM only, so its driver is the one to run; an sm90a
    // GEMM or a convolution adds a driver of its own (its steps) and picks it here by op and schedule.
    if (!checkSupported(s, diags)) continue;
    KernelPlan p;
    if (lowerGemmSm80(s, p, diags)) plans.push_back(std::move(p));
  }
  return plans;
}

std::string renderPlans(const std::vector<KernelPlan>& plans) {
  std::string out;
  for (const KernelPlan& p : plans) {
    out += fmt::format("kernel {} ({} {}):\n", p.name, opWord(p.spec.op.value), p.archName);
    size_t width = 0;
    for (const Decision& d : p.decisions) width = std::max(width, d.what.size());
    for (const Decision& d : p.decisions) {
      out += fmt::format("  {:<{}}  {}\n", d.what, width, d.value);
      out += fmt::format("  {:<{}}    because: {}\n", "", width, d.why);
    }
    out += fmt::format("  {:<{}}  {}\n", "instance", width, p.templateInstance());
  }
  return out;
}

}  // namespace kdl::codegen
