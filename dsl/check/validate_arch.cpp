// Rules that tie fields to the target: the default tile, the schedule, the tile shapes each path can
// run, operand pairing, clusters, and the pipeline depth that fits the arch's shared memory.
#include <algorithm>
#include <string>

#include "dsl/check/validate_rules.h"
#include "include/kdl/gemm_sm80_smem.h"
#include "include/kdl/gemm_sm90_smem.h"

namespace kdl::validation {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The tile shapes the multistage (sm80 mma.sync) templates can instantiate, or "" when `tile` is one
// of them. Shared-memory rows are K * element bytes long and must be 64 or 128 bytes for the XOR
// swizzle (include/kdl/smem_layout.cuh); M and N are built from 32-row warp tiles.
std::string multistageTileProblem(const std::array<int, 3>& tile, DType input) {
  static const int kMN[] = {32, 64, 128, 256};
  static const char* const kNames[] = {"M", "N"};
  for (int i = 0; i < 2; ++i)
    if (std::find(std::begin(kMN), std::end(kMN), tile[i]) == std::end(kMN))
      return std::string("tile ") + kNames[i] + " = " + str(tile[i]) +
             " is not one of 32, 64, 128, 256, which the multistage (sm80 mma.sync) path needs";
  int rowBytes = tile[2] * bytesOf(input);
  if (rowBytes != 64 && rowBytes != 128)
    return "tile K = " + str(tile[2]) + " is " + str(rowBytes) + " bytes of " + name(input) +
           "; the multistage (sm80 mma.sync) path needs K to be 64 or 128 bytes (K = " + str(64 / bytesOf(input)) +
           " or " + str(128 / bytesOf(input)) + ")";
  return "";
}

// The tile shapes of the sm90a wgmma schedules, or "" when `tile` is one of them. A consumer warpgroup
// covers 64 rows per wgmma; N is one wgmma instruction's N (at most 256); K rows in shared memory use
// the 64- or 128-byte TMA swizzle, so K is a multiple of 64 bytes, at most 256 bytes.
std::string wgmmaTileProblem(const std::array<int, 3>& tile, DType input) {
  if (tile[0] % 64 != 0) return "tile M = " + str(tile[0]) + " is not a multiple of 64, which the sm90a wgmma path needs";
  if (tile[0] > 256) return "tile M = " + str(tile[0]) + " is larger than 256, which the sm90a wgmma path allows";
  if (tile[1] > 256) return "tile N = " + str(tile[1]) + " is larger than 256, the widest sm90a wgmma instruction";
  int rowBytes = tile[2] * bytesOf(input);
  if (rowBytes % 64 != 0 || rowBytes > 256)
    return "tile K = " + str(tile[2]) + " is " + str(rowBytes) + " bytes of " + name(input) +
           "; the sm90a wgmma path needs K to be a multiple of 64 bytes, at most 256 (a multiple of " +
           str(64 / bytesOf(input)) + " up to " + str(256 / bytesOf(input)) + ")";
  return "";
}

bool isSm90a(const KernelCheck& c) { return c.arch && c.arch->value == Arch::SM90a; }

bool isConv(const KernelCheck& c) { return c.op && c.op->value != Op::Gemm; }

// Whether the kernel will run a wgmma schedule (decided before the tile when the schedule is auto:
// sm90a's auto choices for a gemm are both wgmma schedules; a convolution's is multistage, and only an
// explicit wgmma schedule takes the sm90a conv path).
bool wgmmaPath(const KernelCheck& c) {
  if (isConv(c)) return convOnWgmmaPath(c);
  if (c.schedule) return c.schedule->value != Schedule::Multistage;
  return c.scheduleAuto && isSm90a(c);
}

const RawOperand* rawOperand(const KernelCheck& c, const std::string& n) {
  for (const RawOperand& o : c.raw.operands)
    if (o.name == n) return &o;
  return nullptr;
}

// Tile (M, N, K) when the kernel does not set one: 128 x 128, and K worth 64 bytes on the multistage
// path (32 for 16-bit types), 64 elements on the wgmma path.
void defaultTile(KernelCheck& c) {
  if (c.tile || c.given("tile") || !c.arch || !c.inputA) return;
  int k = wgmmaPath(c) ? 64 : 64 / bytesOf(*c.inputA);
  // The sm90a conv path: the tiles measured fastest on the H100 (docs/perf-notes.md, v13): 128 x 256
  // cooperative; pingpong 128 x 128 (655-692 TFLOP/s on the 3x3 shapes, 64 x 256: 618).
  if (convOnWgmmaPath(c)) {
    const bool pingpong = c.schedule->value == Schedule::Pingpong;
    c.tile = c.defaulted(pingpong ? std::array<int, 3>{128, 128, 64} : std::array<int, 3>{128, 256, 64});
    return;
  }
  c.tile = c.defaulted(std::array<int, 3>{128, 128, k});
}

void resolveSchedule(KernelCheck& c) {
  if (c.schedule) {
    if (c.schedule->value != Schedule::Multistage && c.arch && !isSm90a(c)) {
      Diagnostic& d = c.diags.error(DiagKind::Schedule, c.schedule->loc,
                                    std::string("schedule `") + name(c.schedule->value) + "` needs sm90a; " +
                                        name(c.arch->value) + " has `multistage` only");
      c.noteArch(d);
      c.schedule.reset();
    }
    return;
  }
  if (!c.scheduleAuto || !c.arch) return;
  Schedule s = Schedule::Multistage;
  // `auto` on an sm90a convolution is multistage (the sm80 mainloop compiled for sm_90a, any channel count);
  // the wgmma conv path is asked for explicitly.
  if (isSm90a(c) && !isConv(c)) {
    if (!c.tile) return;
    // Cooperative splits M between two 64-row consumer warpgroups, so it needs M a multiple of 128.
    s = c.tile->value[0] % 128 == 0 ? Schedule::Cooperative : Schedule::Pingpong;
  }
  c.schedule = Field<Schedule>{s, c.scheduleAutoLoc, c.scheduleAutoOrigin};
}

// A tile whose K is not a whole number of MMA instructions (32 bytes of K on every path).
bool checkMmaK(KernelCheck& c) {
  int mmaK = 32 / bytesOf(*c.inputA);
  if (c.tile->value[2] % mmaK == 0) return true;
  c.diags.error(DiagKind::FieldRange, c.tile->loc,
                "tile K = " + str(c.tile->value[2]) + " is not a multiple of " + str(mmaK) + ", the K of one " +
                    name(*c.inputA) + " MMA instruction");
  return false;
}

void checkTileShape(KernelCheck& c) {
  if (!c.tile || !c.inputA || !c.schedule || !c.arch) return;
  if (!checkMmaK(c)) {
    c.tile.reset();
    return;
  }
  bool multistage = onMultistagePath(c);
  std::string problem = multistage ? multistageTileProblem(c.tile->value, *c.inputA)
                                   : wgmmaTileProblem(c.tile->value, *c.inputA);
  // The schedule is worth a note where it, not the arch, picked the path.
  bool scheduleMatters = multistage && isSm90a(c);
  if (problem.empty() && !multistage && c.schedule->value == Schedule::Cooperative && c.tile->value[0] % 128 != 0) {
    problem = "tile M = " + str(c.tile->value[0]) +
              " is not a multiple of 128, which the cooperative schedule needs (two consumer warpgroups of 64 "
              "rows each); use `pingpong` or a larger M";
    scheduleMatters = true;
  }
  if (problem.empty()) return;
  Diagnostic& d = c.diags.error(DiagKind::TileShape, c.tile->loc, problem);
  if (scheduleMatters) c.noteSchedule(d);
  c.noteArch(d);
  if (isConv(c) && isSm90a(c) && multistage)
    d.notes.push_back({c.op->loc, "convolutions run the multistage (sm80) mainloop on sm90a unless conv2d_fprop asks "
                                  "for a wgmma schedule (cooperative or pingpong)"});
  c.tile.reset();
}

// The multistage path loads both inputs with the same ldmatrix/mma.sync shapes, so they share a type
// (f32 inputs are tf32 math); wgmma also pairs e4m3 with e5m2 and s8 with u8.
bool inputsPairable(DType a, DType b, bool multistage) {
  auto math = [](DType t) { return t == DType::F32 ? DType::TF32 : t; };
  if (math(a) == math(b)) return true;
  if (multistage) return false;
  return (isFloat8(a) && isFloat8(b)) || (isInteger(a) && isInteger(b));
}

void checkInputPairing(KernelCheck& c) {
  if (!c.inputA || !c.inputB || !c.schedule || !c.op) return;
  bool multistage = onMultistagePath(c);
  if (inputsPairable(*c.inputA, *c.inputB, multistage)) return;
  auto in = inputOperandNames(c.op->value);
  const RawOperand* a = rawOperand(c, in[0]);
  const RawOperand* b = rawOperand(c, in[1]);
  if (!a || !b) return;
  Diagnostic& d = c.diags.error(
      DiagKind::OperandDtype, b->dtypeLoc,
      "`" + b->name + "` is " + name(*c.inputB) + " but `" + a->name + "` is " + name(*c.inputA) + "; the " +
          (multistage ? "multistage path needs both inputs of the same type"
                      : "sm90a wgmma path mixes only e4m3 with e5m2 and s8 with u8"));
  d.notes.push_back({a->dtypeLoc, "`" + a->name + "` declared " + name(*c.inputA) + " here"});
}

// ldmatrix transposes and wgmma's transposed operands exist for 16-bit types only; other types must
// be K-major: A row-major, B column-major.
void checkKMajor(KernelCheck& c) {
  if (!c.op || c.op->value != Op::Gemm) return;
  for (const Operand& o : c.operands) {
    bool isA = o.name == "A", isB = o.name == "B";
    if ((!isA && !isB) || bytesOf(o.dtype) == 2) continue;
    Layout want = isA ? Layout::Row : Layout::Col;
    if (o.layout == want) continue;
    const RawOperand* r = rawOperand(c, o.name);
    c.diags.error(DiagKind::OperandLayout, r ? r->layoutLoc : o.loc,
                  std::string(name(o.dtype)) + " operand `" + o.name + "` must be K-major (`" + name(want) +
                      "`); only 16-bit types can be transposed while loading");
  }
}

// The multistage path copies A and B with cp.async, whose smallest copy is 4 bytes
// (include/kdl/copy_sm80.cuh).
void checkCpAsyncAlignment(KernelCheck& c) {
  if (!c.op || !c.schedule || !onMultistagePath(c)) return;
  for (const char* n : inputOperandNames(c.op->value))
    for (const Operand& o : c.operands) {
      if (o.name != n || o.align * bytesOf(o.dtype) >= 4) continue;
      int least = 4 / bytesOf(o.dtype);
      const RawOperand* r = rawOperand(c, o.name);
      c.diags.error(DiagKind::Alignment, r ? r->alignLoc : o.loc,
                    "align " + str(o.align) + " is too small for input `" + o.name +
                        "` on the multistage path, which loads inputs in copies of at least 4 bytes; use align " +
                        str(least) + " or more");
    }
}

void checkCluster(KernelCheck& c) {
  if (!c.cluster) return;
  const auto& v = c.cluster->value;
  if (v == std::array<int, 3>{1, 1, 1}) return;
  if (!c.arch || !c.schedule) return;
  if (!isSm90a(c)) {
    Diagnostic& d = c.diags.error(DiagKind::ArchFeature, c.cluster->loc,
                                  std::string("thread block clusters need sm90a (its wgmma schedules); ") +
                                      name(c.arch->value) + " kernels run without them, so the cluster must be (1, 1, 1)");
    c.noteArch(d);
    return;
  }
  // Of the convolutions, the sm90a fprop shares tiles in clusters (its loader multicasts X's pixels along N and
  // W's filters along M); the dgrad and wgrad loaders load alone.
  if (isConv(c) && c.op->value != Op::Conv2dFprop) {
    c.diags.error(DiagKind::Cluster, c.cluster->loc,
                  std::string(name(c.op->value)) + " runs without thread block clusters (only the sm90a conv2d_fprop shares its X and W tiles in "
                      "clusters); use (1, 1, 1)");
    return;
  }
  if (onMultistagePath(c)) {
    Diagnostic& d = c.diags.error(
        DiagKind::Cluster, c.cluster->loc,
        "the multistage schedule does not use clusters; use (1, 1, 1) or a wgmma schedule (cooperative or pingpong)");
    c.noteSchedule(d);
    return;
  }
  int64_t size = int64_t{v[0]} * v[1] * v[2];
  if (size > 8) {
    c.diags.error(DiagKind::Cluster, c.cluster->loc,
                  "a cluster of " + str(v[0]) + "x" + str(v[1]) + "x" + str(v[2]) + " = " + str(size) +
                      " blocks is larger than 8, the portable cluster size");
    return;
  }
  if (v[2] != 1)
    c.diags.error(DiagKind::Cluster, c.cluster->loc,
                  "cluster K = " + str(v[2]) + " must be 1; clusters share A and B tiles along M and N only");
}

std::string tileText(const KernelCheck& c) {
  const auto& t = c.tile->value;
  std::string types = name(*c.inputA);
  if (*c.inputB != *c.inputA) types += std::string(" x ") + name(*c.inputB);
  return str(t[0]) + "x" + str(t[1]) + "x" + str(t[2]) + " " + types + " tile";
}

// Pipeline depth against shared memory: each stage holds an M x K tile of A and an N x K tile of B.
// The bytes are those of the template the kernel instantiates: on the multistage path
// include/kdl/gemm_sm80_smem.h's stages (lowering adds what does not depend on the stages, epilogue
// staging and TMA barriers, and tests/unit/test_codegen.cpp checks on every configuration that it
// then still fits); on the wgmma path include/kdl/gemm_sm90_smem.h's whole launch (stages, barriers
// and the epilogue's staging buffer), the function kdl::GemmSm90::kSmemBytes and lowering use, so
// `stages = auto` is the deepest pipeline that fits with the epilogue.
void resolveStages(KernelCheck& c) {
  if (!c.tile || !c.inputA || !c.inputB || !c.arch || !c.schedule) return;
  const auto& t = c.tile->value;
  const bool multistage = onMultistagePath(c);
  const int64_t perStage = multistage
                               ? kdl::gemm_sm80_stage_bytes(bytesOf(*c.inputA), bytesOf(*c.inputB), t[0], t[1], t[2])
                               : kdl::gemm_sm90_stage_bytes(bytesOf(*c.inputA), bytesOf(*c.inputB), t[0], t[1], t[2]);
  const int64_t limit = maxSharedMemoryPerBlock(c.arch->value);
  // Block-scaled fp8 (A and B with `scale (BM, BK)`) stages each k-block's scales beside its operand tiles.
  const bool blockScaled = c.blockScaled();
  const kdl::GemmSm90SmemShape sm90Shape{bytesOf(*c.inputA), bytesOf(*c.inputB), t[0], t[1], t[2], 1,
                                         c.schedule->value == Schedule::Pingpong ? int(kdl::Sm90Schedule::Pingpong)
                                                                                 : int(kdl::Sm90Schedule::Cooperative),
                                         blockScaled ? t[0] : 0};
  // The launch's bytes for `stages` (the mainloop's alone on the multistage path, see above).
  auto launchBytes = [&](int64_t stages) {
    if (multistage) return stages * perStage;
    kdl::GemmSm90SmemShape s = sm90Shape;
    s.stages = static_cast<int>(stages);
    return int64_t{kdl::gemm_sm90_smem_bytes(s)};
  };
  const int64_t fit = multistage ? limit / perStage : kdl::gemm_sm90_max_stages(sm90Shape, static_cast<int>(limit), 64);
  std::string archText = name(c.arch->value);
  auto need = [&](int64_t stages) {
    return str(stages) + " stages of a " + tileText(c) + " need " + str(launchBytes(stages)) +
           " bytes of shared memory" + (multistage ? "" : " with the epilogue's staging buffer and the barriers") +
           "; " + archText + " allows " + str(limit) + " per block";
  };
  if (c.stages) {
    if (c.stages->value <= fit) {
      c.sharedMemoryBytes = static_cast<size_t>(c.stages->value * perStage);
      return;
    }
    Diagnostic& d = c.diags.error(DiagKind::SharedMemory, c.stages->loc,
                                  need(c.stages->value) + (fit >= 2 ? "; at most " + str(fit) + " stages fit"
                                                                    : "; not even 2 stages fit, so the tile must shrink"));
    if (fit < 2) d.notes.push_back({c.tile->loc, "tile set here"});
    c.noteArch(d);
    c.stages.reset();
    return;
  }
  if (!c.stagesAuto) return;
  // auto: at most 4 stages on the multistage path (deeper gains nothing there), 8 on the wgmma path.
  // (The wgmma path's: kdl::gemm_sm90_auto_stages, which keeps a block-scaled kernel's full epilogue buffer.)
  int64_t n = multistage ? std::min(int64_t{4}, fit)
                         : int64_t{kdl::gemm_sm90_auto_stages(sm90Shape, static_cast<int>(limit), 8)};
  if (n < 2) {
    Diagnostic& d = c.diags.error(DiagKind::SharedMemory, c.tile->loc, need(2) + "; pick a smaller tile");
    c.noteArch(d);
    return;
  }
  c.stages = Field<int>{static_cast<int>(n), c.stagesAutoLoc, c.stagesAutoOrigin};
  c.sharedMemoryBytes = static_cast<size_t>(n * perStage);
}

}  // namespace

void checkArchRules(KernelCheck& c) {
  defaultTile(c);
  resolveSchedule(c);
  checkTileShape(c);
  checkInputPairing(c);
  checkKMajor(c);
  checkCpAsyncAlignment(c);
  checkCluster(c);
  resolveStages(c);
}

}  // namespace kdl::validation
