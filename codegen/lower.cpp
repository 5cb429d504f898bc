// Lowering: validated KernelSpec -> KernelPlan. The driver of each path runs its steps
// (codegen/lower_steps.h) in order; every template parameter is decided in one step, once, with the
// reason, and emitters write what the plan says.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/codegen.h"
#include "codegen/epilogue_expr.h"
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

const char* pathWord(KernelPath p) {
  switch (p) {
    case KernelPath::GemmSm80: return "gemm_sm80";
    case KernelPath::GemmSm80Tma: return "gemm_sm80_tma";
    case KernelPath::GemmSm90: return "gemm_sm90";
    case KernelPath::ConvSm80: return "conv_sm80";
    case KernelPath::ConvSm90: return "conv_sm90";
  }
  return "";
}
const char* pathTemplate(KernelPath p) {
  switch (p) {
    case KernelPath::GemmSm80: return "kdl::GemmSm80";
    case KernelPath::GemmSm80Tma: return "kdl::GemmSm80Tma";
    case KernelPath::GemmSm90: return "kdl::GemmSm90";
    case KernelPath::ConvSm80: return "kdl::Conv2dSm80";
    case KernelPath::ConvSm90: return "kdl::Conv2dSm90Fprop";
  }
  return "";
}
const char* pathHeader(KernelPath p) {
  switch (p) {
    case KernelPath::GemmSm80: return "kdl/gemm_sm80.cuh";
    case KernelPath::GemmSm80Tma: return "kdl/gemm_sm80_tma.cuh";
    case KernelPath::GemmSm90: return "kdl/gemm_sm90.cuh";
    case KernelPath::ConvSm80: return "kdl/conv_sm80.cuh";
    case KernelPath::ConvSm90: return "kdl/conv_sm90.cuh";
  }
  return "";
}

const char* KernelPlan::convKind() const {
  switch (spec.op.value) {
    case Op::Conv2dFprop: return "Fprop";
    case Op::Conv2dDgrad: return "Dgrad";
    case Op::Conv2dWgrad: return "Wgrad";
    case Op::Gemm: break;
  }
  return "";
}

const char* KernelPlan::deviceTemplate() const {
  if (path == KernelPath::ConvSm90) {
    switch (spec.op.value) {
      case Op::Conv2dDgrad: return "kdl::Conv2dSm90Dgrad";
      case Op::Conv2dWgrad: return "kdl::Conv2dSm90Wgrad";
      default: break;
    }
  }
  return pathTemplate(path);
}

std::string KernelPlan::templateInstance(std::string (*spell)(const std::string&)) const {
  auto s = [&](const std::string& name) { return spell ? spell(name) : name; };
  // The device template's instance; a transposed kernel runs it on D^T = B^T A^T.
  auto device = [&]() -> std::string {
    if (path == KernelPath::ConvSm80) {
      // Conv2dSm80<Kind, Element, AlignA, AlignB, ElementAcc, TileM, TileN, TileK, WarpsM, WarpsN, Stages,
      //            FilterR, FilterS, StrideH, StrideW, Epilogue>
      return fmt::format("{}<{}::{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, Epilogue>", s(pathTemplate(path)),
                         s("kdl::ConvKind"), convKind(), s(a.cppType), a.align, b.align, s(accumCpp), tileM, tileN, tileK,
                         warpsM, warpsN, stages, filterR, filterS, strideH, strideW);
    }
    if (path == KernelPath::ConvSm90) {
      // Conv2dSm90{Fprop,Dgrad,Wgrad}<Element, TileM, TileN, Stages, Schedule, FilterR, FilterS, StrideH, StrideW, Epilogue>
      // (Conv2dSm90Fprop in a cluster: ..., Epilogue, Im2col = true, ClusterM, ClusterN>)
      // (... Epilogue, Im2col = true, ClusterM, ClusterN, Patch = true> with the patch mainloop)
      const std::string cluster = convPatch                  ? std::string(", true, 1, 1, true")
                                  : clusterM * clusterN > 1 ? fmt::format(", true, {}, {}", clusterM, clusterN)
                                                             : std::string();
      return fmt::format("{}<{}, {}, {}, {}, {}::{}, {}, {}, {}, {}, Epilogue{}>", s(deviceTemplate()), s(a.cppType), tileM,
                         tileN, stages, s("kdl::Sm90Schedule"), schedule == Schedule::Pingpong ? "Pingpong" : "Cooperative",
                         filterR, filterS, strideH, strideW, cluster);
    }
    if (path == KernelPath::GemmSm90) {
      // GemmSm90<ElementA, LayoutA, ElementB, LayoutB, ElementAccum, TileM, TileN, TileK, Stages, Schedule,
      //          ClusterM, ClusterN, RasterAlongM, PromoteEvery, BlockScaling, Epilogue>
      std::string scaling = blockScaling ? fmt::format("{}<{}, {}, {}>", s("kdl::sm90::BlockScaling"), blockMA, blockNB, blockK)
                                         : s("kdl::sm90::NoBlockScaling");
      return fmt::format("{}<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}::{}, {}, {}, {}, {}, {}, Epilogue>", s(pathTemplate(path)),
                         s(a.cppType), s(a.cppLayout), s(b.cppType), s(b.cppLayout), s(accumCpp), tileM, tileN, tileK, stages,
                         s("kdl::Sm90Schedule"), schedule == Schedule::Pingpong ? "Pingpong" : "Cooperative", clusterM,
                         clusterN, rasterAlongM ? "true" : "false", promoteEvery, scaling);
    }
    return fmt::format("{}<{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, Epilogue>", s(pathTemplate(path)),
                       s(a.cppType), s(a.cppLayout), a.align, s(b.cppType), s(b.cppLayout), b.align, s(accumCpp), tileM,
                       tileN, tileK, warpsM, warpsN, stages, rasterAlongM ? "true" : "false");
  };
  return transposed ? fmt::format("{}<{}>", s("kdl::TransposedGemm"), device()) : device();
}

namespace {

// The sm80 multistage GEMM (include/kdl/gemm_sm80.cuh, gemm_sm80_tma.cuh), in the order its
// decisions depend on each other: the warps need the operands, the shared memory needs the warps.
constexpr LoweringStep kGemmSm80Steps[] = {lowerTarget,   lowerOrientation, lowerOperands,
                                           lowerTiling,   lowerPipeline,    lowerArguments};
// The sm90a warp-specialized GEMM (include/kdl/gemm_sm90.cuh): the schedule needs the operands (tile
// K), the stages need the schedule (the epilogue's shared memory), the epilogue's vector width needs
// the accumulator (tile, schedule, promotion). On both paths the orientation (a column-major D is
// computed transposed) comes before the operands it swaps.
constexpr LoweringStep kGemmSm90Steps[] = {lowerTarget,       lowerOrientation,  lowerSm90Operands, lowerSm90Tiling,
                                           lowerSm90Pipeline, lowerSm90Epilogue, lowerArguments};

// The implicit-GEMM convolution (include/kdl/conv_sm80.cuh): the GEMM it maps to and its operands first,
// then the sm80 GEMM's tiling (its Core is a kdl::GemmSm80), its pipeline and shared memory, the arguments.
constexpr LoweringStep kConvSm80Steps[] = {lowerTarget, lowerConvOperands, lowerTiling, lowerConvPipeline, lowerArguments};
// Conv fprop on sm90a with a wgmma schedule (include/kdl/conv_sm90.cuh): the conv's operands, then the sm90a
// GEMM's math, tiling, pipeline and epilogue (its Gemm is a kdl::GemmSm90 with a gathered A), the arguments.
constexpr LoweringStep kConvSm90Steps[] = {lowerTarget,       lowerConvOperands, lowerConvSm90Math, lowerSm90Tiling,
                                           lowerSm90Pipeline, lowerSm90Epilogue, lowerConvPatch,    lowerArguments};

bool runSteps(Lowering& l, const LoweringStep* first, const LoweringStep* last) {
  for (const LoweringStep* step = first; step != last; ++step)
    if (!(*step)(l)) return false;
  return true;
}

bool lowerWith(const KernelSpec& s, KernelPlan& p, DiagEngine& diags, const LoweringStep* first,
               const LoweringStep* last) {
  p.name = s.name;
  p.spec = s;
  p.epilogue = foldConstants(s.epilogue);  // what the kernel computes, constants computed here
  Lowering l{s, p, diags};
  if (!runSteps(l, first, last)) return false;
  p.kernelHash = kernelHash(p);
  return true;
}

}  // namespace

bool lowerGemmSm80Plan(const KernelSpec& s, KernelPlan& p, DiagEngine& diags) {
  return lowerWith(s, p, diags, std::begin(kGemmSm80Steps), std::end(kGemmSm80Steps));
}

namespace {

bool lowerGemmSm90(const KernelSpec& s, KernelPlan& p, DiagEngine& diags) {
  p.path = KernelPath::GemmSm90;
  return lowerWith(s, p, diags, std::begin(kGemmSm90Steps), std::end(kGemmSm90Steps));
}

bool lowerConvSm80(const KernelSpec& s, KernelPlan& p, DiagEngine& diags) {
  p.path = KernelPath::ConvSm80;
  return lowerWith(s, p, diags, std::begin(kConvSm80Steps), std::end(kConvSm80Steps));
}

// A convolution runs the sm90a wgmma path when its spec asks for a wgmma schedule (on sm90a: checkSupported
// refuses the other archs); `auto` and `multistage` run the sm80 mainloop, which takes every channel count.
bool lowerConv(const KernelSpec& s, KernelPlan& p, DiagEngine& diags) {
  const bool wgmma = isWgmmaSchedule(s.schedule.value) &&
                     (s.schedule.origin == Origin::Explicit || s.schedule.origin == Origin::Template);
  if (!wgmma) return lowerConvSm80(s, p, diags);
  p.path = KernelPath::ConvSm90;
  return lowerWith(s, p, diags, std::begin(kConvSm90Steps), std::end(kConvSm90Steps));
}

}  // namespace

std::vector<KernelPlan> lower(const std::vector<KernelSpec>& specs, DiagEngine& diags) {
  std::vector<KernelPlan> plans;
  for (const KernelSpec& s : specs) {
    // Convolutions run the conv driver (every arch and schedule checkSupported admits); GEMMs with a
    // wgmma schedule (sm90a) the sm90a driver, the multistage schedule the sm80 one.
    if (!checkSupported(s, diags)) continue;
    KernelPlan p;
    bool ok = s.op.value != Op::Gemm           ? lowerConv(s, p, diags)
              : isWgmmaSchedule(s.schedule.value) ? lowerGemmSm90(s, p, diags) && lowerFallback(s, p, diags)
                                                  : lowerGemmSm80Plan(s, p, diags);
    if (ok) plans.push_back(std::move(p));
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
