// `fallback = sm80` of an sm90a wgmma kernel: the sm80-path (multistage, mma.sync) kernel its host side
// runs where the sm90a kernel cannot (kdl::GemmHostWithFallback, include/kdl/gemm_fallback.h). It is
// the spec's own GEMM, operands, epilogue, raster and split-K, lowered by the sm80 path's steps with
// the sm80 path's configuration: arch sm80 (its code runs on every GPU from 8.0), no cluster, the
// default multistage tile (128 x 128, 64 bytes of K; 64 x 64 where A or B is less than 16-byte aligned,
// whose narrower copies need more registers: 128 x 128 spills there) and the stages that fit, up to 4.
// The validator refused what the language rules out (dsl/check/validate_fallback.cpp); what the sm80
// path does not generate yet is an [unsupported] error at the field, with a note at the cause.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "codegen/lower_steps.h"
#include "codegen/support.h"
#include "include/kdl/gemm_sm80_smem.h"

namespace kdl::codegen {

namespace {

constexpr int kFallbackTileMN = 128;
constexpr int kFallbackNarrowTileMN = 64;  // A or B less than 16-byte aligned
constexpr int kFallbackTileKBytes = 64;
constexpr int kFallbackMaxStages = 4;  // the multistage path's `stages = auto` limit (dsl/check/validate_arch.cpp)
// The fallback's code: sm_80 SASS (every 8.x GPU) and compute_80 PTX (newer GPUs JIT-compile it); on
// the H100 both kernels run from the sm_90a SASS of the same file.
const char* const kFallbackGencode[] = {"-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_80,code=compute_80"};

// Tile M and N of the fallback: the default unless A or B loads in copies narrower than 16 bytes.
int fallbackTileMN(const KernelSpec& s) {
  for (const char* n : {"A", "B"})
    if (const Operand* o = s.operand(n); o->align * bytesOf(o->dtype) < 16) return kFallbackNarrowTileMN;
  return kFallbackTileMN;
}

// The sm80-path spec of the fallback: the fields the sm80 path decides differently are set at the
// `fallback` field, chosen for it (Origin::Auto).
KernelSpec fallbackSpec(const KernelSpec& s) {
  KernelSpec f = s;
  const SourceLoc at = s.fallback.loc;
  const DType a = s.operand("A")->dtype, b = s.operand("B")->dtype;
  const int tileMN = fallbackTileMN(s), tileK = kFallbackTileKBytes / bytesOf(a);
  const int perStage = gemm_sm80_stage_bytes(bytesOf(a), bytesOf(b), tileMN, tileMN, tileK);
  const int stages = std::min(kFallbackMaxStages, maxSharedMemoryPerBlock(Arch::SM80) / perStage);
  f.arch = Field<Arch>{Arch::SM80, at, Origin::Auto};
  f.schedule = Field<Schedule>{Schedule::Multistage, at, Origin::Auto};
  f.cluster = Field<std::array<int, 3>>{{1, 1, 1}, at, Origin::Auto};
  f.tile = Field<std::array<int, 3>>{{tileMN, tileMN, tileK}, at, Origin::Auto};
  f.stages = Field<int>{stages, at, Origin::Auto};
  f.sharedMemoryBytes = size_t(stages) * size_t(perStage);
  f.promoteEvery = Field<int>{0, at, Origin::Auto};
  f.fallback = Field<Fallback>{Fallback::None, at, Origin::Auto};
  for (Operand& o : f.operands) o.scaleBlock.reset();
  return f;
}

// The sm80 path's refusals of the fallback spec, at the `fallback` field with a note at their cause.
void reportAtField(const KernelSpec& s, const DiagEngine& scratch, DiagEngine& diags) {
  const std::string prefix = fmt::format("kernel `{}`: ", s.name);
  for (const Diagnostic& d : scratch.all()) {
    if (d.severity != Severity::Error) continue;
    std::string why = d.message.rfind(prefix, 0) == 0 ? d.message.substr(prefix.size()) : d.message;
    Diagnostic& out = diags.error(DiagKind::Unsupported, s.fallback.loc,
                                  fmt::format("{}`fallback = sm80` needs an sm80-path kernel of the same GEMM, and "
                                              "the sm80 path does not generate this one: {}",
                                              prefix, why));
    if (d.loc.valid() && !(d.loc == s.fallback.loc)) out.notes.push_back({d.loc, "the sm80 path refuses this"});
  }
}

std::string instanceText(const KernelPlan& f) {
  const std::string more = f.moreWarpsM ? fmt::format(" ({}x{} if ptxas spills them: kdlc build's last try)", f.moreWarpsM,
                                                       f.moreWarpsN)
                                        : std::string();
  return fmt::format("{} (tile {}x{}x{}, {}x{} warps{}, {} stages, {} B of shared memory)", f.templateInstance(), f.tileM,
                     f.tileN, f.tileK, f.warpsM, f.warpsN, more, f.stages, f.smemBytes);
}

}  // namespace

bool lowerFallback(const KernelSpec& s, KernelPlan& plan, DiagEngine& diags) {
  if (s.fallback.value == Fallback::None) return true;
  const KernelSpec f = fallbackSpec(s);
  DiagEngine scratch(diags.errorCap());
  auto fb = std::make_shared<KernelPlan>();
  if (!checkSupported(f, scratch) || !lowerGemmSm80Plan(f, *fb, scratch)) {
    reportAtField(s, scratch, diags);
    return false;
  }
  plan.fallback = fb;
  plan.gencode.insert(plan.gencode.end(), std::begin(kFallbackGencode), std::end(kFallbackGencode));
  plan.cmakeArchitectures = "80;" + plan.cmakeArchitectures;
  for (Decision& d : plan.decisions)
    if (d.what == "target") {
      d.value = fmt::format("{}", fmt::join(plan.gencode, " "));
      d.why += "; the fallback (fallback = sm80) adds sm_80 SASS and compute_80 PTX (the sm_90a SASS holds both "
               "kernels for compute capability 9.0)";
    }
  plan.decisions.push_back(
      {"fallback", fmt::format("sm80: {}", instanceText(*fb)),
       fmt::format("fallback = sm80 ({}): run() launches it where the sm90a kernel cannot: on a GPU other than "
                   "compute capability 9.0, or when A or B is something TMA cannot describe (a base address not "
                   "16-byte aligned, a leading dimension or batch stride not a multiple of 16 bytes, a zero batch "
                   "stride); the tile: {}, {} bytes of K, with as many stages as fit, up to {}; path() (C ABI: kdl_{}_path) "
                   "says which kernel runs",
                   originWord(s.fallback.origin),
                   fb->tileM == kFallbackTileMN ? "the sm80 path's default 128 x 128"
                                                : "64 x 64, as A or B is less than 16-byte aligned (its narrower copies "
                                                  "need the registers a 128 x 128 tile would spill)",
                   kFallbackTileKBytes, kFallbackMaxStages, s.name)});
  return true;
}

}  // namespace kdl::codegen
