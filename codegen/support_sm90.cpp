// What the sm90a path (kdl::GemmSm90, include/kdl/gemm_sm90.cuh) generates: its table, the one place
// that lists the template's features, and the check that refuses everything else at the field
// responsible. Each line is one feature; `generated` says whether the template instantiates it
// today. When the template gains a feature, flip its line (and nothing else): `kdlc check` then
// admits it, lowering instantiates it, and the nvcc test "every generated line of the sm90a table
// compiles" (tests/nvcc/tests.cmake) builds one kernel per line that is on (`kdlc support --specs`), so
// a line the template cannot instantiate fails CI.
#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <string>
#include <vector>

#include "codegen/plan.h"
#include "codegen/support.h"

namespace kdl::codegen {

namespace {

// ---- the sm90a table ------------------------------------------------------------------------------
constexpr bool kOn = true, kNotYet = false;

// The operand pairs of the mainloop: wgmma's types and layouts, the accumulator, and tile K (one
// 128-byte swizzled row of shared memory: 64 16-bit elements, 128 8-bit ones, 32 tf32).
constexpr Sm90Mainloop kSm90Mainloops[] = {
    {DType::BF16, DType::BF16, Layout::Row, Layout::Col, DType::F32, 64, "k16, bf16 x bf16 -> f32", kOn},
    {DType::F16, DType::F16, Layout::Row, Layout::Col, DType::F32, 64, "k16, f16 x f16 -> f32", kOn},
    {DType::E4M3, DType::E4M3, Layout::Row, Layout::Col, DType::F32, 128, "k32, e4m3 x e4m3 -> f32", kOn},
    {DType::E4M3, DType::E5M2, Layout::Row, Layout::Col, DType::F32, 128, "k32, e4m3 x e5m2 -> f32", kOn},
    {DType::E5M2, DType::E4M3, Layout::Row, Layout::Col, DType::F32, 128, "k32, e5m2 x e4m3 -> f32", kOn},
    {DType::E5M2, DType::E5M2, Layout::Row, Layout::Col, DType::F32, 128, "k32, e5m2 x e5m2 -> f32", kOn},
    // 16-bit operands MN-major (A column-major, B row-major): wgmma's transpose bits.
    {DType::BF16, DType::BF16, Layout::Col, Layout::Col, DType::F32, 64, "k16, bf16 (A M-major) -> f32", kOn},
    {DType::BF16, DType::BF16, Layout::Row, Layout::Row, DType::F32, 64, "k16, bf16 (B N-major) -> f32", kOn},
    {DType::BF16, DType::BF16, Layout::Col, Layout::Row, DType::F32, 64, "k16, bf16 (both MN-major) -> f32", kOn},
    {DType::F16, DType::F16, Layout::Col, Layout::Col, DType::F32, 64, "k16, f16 (A M-major) -> f32", kOn},
    {DType::F16, DType::F16, Layout::Row, Layout::Row, DType::F32, 64, "k16, f16 (B N-major) -> f32", kOn},
    {DType::F16, DType::F16, Layout::Col, Layout::Row, DType::F32, 64, "k16, f16 (both MN-major) -> f32", kOn},
    // f32 operands (`f32` or `tf32`) are multiplied in tf32.
    {DType::TF32, DType::TF32, Layout::Row, Layout::Col, DType::F32, 32, "k8, tf32 x tf32 -> f32", kOn},
    // 8-bit integers, s8 and u8 mixed: s32 accumulator (the epilogue sees it as f32).
    {DType::S8, DType::S8, Layout::Row, Layout::Col, DType::S32, 128, "k32, s8 x s8 -> s32", kOn},
    {DType::S8, DType::U8, Layout::Row, Layout::Col, DType::S32, 128, "k32, s8 x u8 -> s32", kOn},
    {DType::U8, DType::S8, Layout::Row, Layout::Col, DType::S32, 128, "k32, u8 x s8 -> s32", kOn},
    {DType::U8, DType::U8, Layout::Row, Layout::Col, DType::S32, 128, "k32, u8 x u8 -> s32", kOn},
};

// The schedules, with the tile M each runs: cooperative splits the tile between two consumer
// warpgroups along M (64 or 128 rows each); pingpong gives each consumer warpgroup a tile of its own.
const Sm90ScheduleEntry kSm90Schedules[] = {
    {Schedule::Cooperative, {128, 256}, 2, kOn},
    {Schedule::Pingpong, {64, 128}, 1, kOn},
};

// Tile N: one wgmma's N.
constexpr Sm90Choice kSm90TileN[] = {{64, kOn}, {128, kOn}, {256, kOn}};

// Clusters (M, N, 1): the shared operand is multicast across the cluster (B along M, A along N).
constexpr Sm90Cluster kSm90Clusters[] = {{1, 1, kOn}, {2, 1, kOn}, {1, 2, kOn}, {2, 2, kOn}};

// The persistent raster: along_n is RasterAlongM = false.
constexpr Sm90RasterEntry kSm90Rasters[] = {{Raster::AlongN, kOn}, {Raster::AlongM, kOn}};

// Split-K: none, or serial slices adding into a workspace.
constexpr Sm90SplitKEntry kSm90SplitK[] = {{SplitKMode::None, kOn}, {SplitKMode::Serial, kOn}};

// fp8 promotion (`promotion = N`, PromoteEvery N >= 1; `fast`, PromoteEvery 0, comes with the fp8
// mainloops) and block scales (`scale (1, 128)` / `scale (128, 128)`: kdl::sm90::BlockScaling<1, 128,
// 128>). Lowering instantiates both (codegen/lower_sm90.cpp); block scales come with their arguments
// (scale_A, scale_B: codegen/lower_arguments.cpp, kdl::arg::block_scales in kdl/gemm_host.h).
constexpr bool kSm90Promotion = kOn;
constexpr bool kSm90BlockScaling = kOn;

// The accumulator of one consumer warpgroup lives in registers: at most 128 f32 per thread (of
// the 232 setmaxnreg gives a consumer).
constexpr int kSm90MaxAccumRegs = 128;
// Promotion (and block scales) keeps a second accumulator beside it: at most 64 registers each.
constexpr int kSm90MaxAccumRegsPromoted = 64;

// ---- words --------------------------------------------------------------------------------------------

std::string ints(const std::vector<int>& v) {
  std::vector<std::string> s;
  for (int x : v) s.push_back(std::to_string(x));
  if (s.size() <= 1) return s.empty() ? "none" : s[0];
  std::string last = s.back();
  s.pop_back();
  return fmt::format("{} or {}", fmt::join(s, ", "), last);
}

std::string mainloopWords(const Sm90Mainloop& m) {
  return fmt::format("A {} {} x B {} {}", dtypeWord(m.a), layoutWord(m.layoutA), dtypeWord(m.b), layoutWord(m.layoutB));
}

// The generated lines, one group per type pair with its layouts: "A bf16 x B bf16 (row x col, col x col)".
std::string generatedMainloops() {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const Sm90Mainloop& m : kSm90Mainloops) {
    if (!m.generated) continue;
    std::string types = fmt::format("A {} x B {}", dtypeWord(m.a), dtypeWord(m.b));
    std::string layouts = fmt::format("{} x {}", layoutWord(m.layoutA), layoutWord(m.layoutB));
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == types; });
    if (g == groups.end()) groups.push_back({types, {layouts}});
    else g->second.push_back(layouts);
  }
  std::vector<std::string> s;
  for (const auto& [types, layouts] : groups) s.push_back(fmt::format("{} ({})", types, fmt::join(layouts, ", ")));
  return fmt::format("{}", fmt::join(s, "; "));
}

std::vector<int> generatedTileN() {
  std::vector<int> v;
  for (const Sm90Choice& c : kSm90TileN)
    if (c.generated) v.push_back(c.value);
  return v;
}

std::string generatedClusters() {
  std::vector<std::string> s;
  for (const Sm90Cluster& c : kSm90Clusters)
    if (c.generated) s.push_back(fmt::format("({}, {}, 1)", c.m, c.n));
  return fmt::format("{}", fmt::join(s, ", "));
}

bool findSplitK(SplitKMode m) {
  for (const Sm90SplitKEntry& e : kSm90SplitK)
    if (e.mode == m) return e.generated;
  return false;
}

const char* notYet(bool planned) { return planned ? "is not generated by the sm90a template yet" : "is not a configuration of the sm90a path"; }

}  // namespace

// ---- lookups --------------------------------------------------------------------------------------------

const Sm90Mainloop* findSm90Mainloop(DType a, DType b, Layout la, Layout lb) {
  auto math = [](DType t) { return t == DType::F32 ? DType::TF32 : t; };
  for (const Sm90Mainloop& m : kSm90Mainloops)
    if (m.a == math(a) && m.b == math(b) && m.layoutA == la && m.layoutB == lb) return &m;
  return nullptr;
}

const Sm90ScheduleEntry* findSm90Schedule(Schedule s) {
  for (const Sm90ScheduleEntry& e : kSm90Schedules)
    if (e.schedule == s) return &e;
  return nullptr;
}

int sm90ConsumerWarpgroups(Schedule s) {
  const Sm90ScheduleEntry* e = findSm90Schedule(s);
  return e ? e->consumers : 2;
}

Sm90Table sm90Table() {
  Sm90Table t;
  t.mainloops = {std::begin(kSm90Mainloops), std::end(kSm90Mainloops)};
  t.schedules = {std::begin(kSm90Schedules), std::end(kSm90Schedules)};
  t.tileN = {std::begin(kSm90TileN), std::end(kSm90TileN)};
  t.clusters = {std::begin(kSm90Clusters), std::end(kSm90Clusters)};
  t.rasters = {std::begin(kSm90Rasters), std::end(kSm90Rasters)};
  t.splitK = {std::begin(kSm90SplitK), std::end(kSm90SplitK)};
  t.promotion = kSm90Promotion;
  t.blockScaling = kSm90BlockScaling;
  t.maxAccumRegs = kSm90MaxAccumRegs;
  t.maxAccumRegsPromoted = kSm90MaxAccumRegsPromoted;
  t.operandAlignBytes = kSm90OperandAlignBytes;
  return t;
}

// ---- the check ---------------------------------------------------------------------------------------

void checkSm90Supported(const KernelSpec& s, const Operand& A, const Operand& B,
                        const std::function<void(SourceLoc, const std::string&)>& unsupported) {
  // The mainloop: the operand types and layouts.
  const Sm90Mainloop* ml = findSm90Mainloop(A.dtype, B.dtype, A.layout, B.layout);
  const std::string pair = fmt::format("A {} {} x B {} {}", dtypeWord(A.dtype), layoutWord(A.layout), dtypeWord(B.dtype),
                                       layoutWord(B.layout));
  if (!ml || !ml->generated) {
    unsupported(A.dtype != B.dtype ? B.loc : A.loc,
                fmt::format("{} {}; it generates {}", pair, notYet(ml != nullptr), generatedMainloops()));
  } else {
    if (s.accum.value != ml->accum)
      unsupported(s.accum.loc, fmt::format("accum = {} with {} operands is not generated; the sm90a path accumulates "
                                           "them in {}",
                                           dtypeWord(s.accum.value), dtypeWord(A.dtype), dtypeWord(ml->accum)));
    if (s.tile.value[2] != ml->tileK)
      unsupported(s.tile.loc, fmt::format("tile K = {} is not generated for {} operands on the sm90a path; it needs "
                                          "tile K = {} ({} bytes, one 128-byte swizzled row)",
                                          s.tile.value[2], dtypeWord(A.dtype), ml->tileK, ml->tileK * bytesOf(A.dtype)));
  }
  // With `fallback = sm80` rows TMA cannot load (A or B less aligned) run on the fallback instead.
  for (const Operand* o : {&A, &B}) {
    int bytes = o->align * bytesOf(o->dtype);
    if (bytes % kSm90OperandAlignBytes && s.fallback.value == Fallback::None)
      unsupported(o->alignLoc.valid() ? o->alignLoc : o->loc,
                  fmt::format("align {} ({} bytes) for `{}`: the sm90a path loads A and B with TMA, which needs "
                              "{}-byte aligned rows; use align {}, or `fallback = sm80` to run rows TMA cannot load on "
                              "the sm80 path",
                              o->align, bytes, o->name, kSm90OperandAlignBytes, kSm90OperandAlignBytes / bytesOf(o->dtype)));
  }

  // The schedule and the tile.
  const Sm90ScheduleEntry* sch = findSm90Schedule(s.schedule.value);
  const int tm = s.tile.value[0], tn = s.tile.value[1];
  if (!sch || !sch->generated) {
    std::vector<std::string> on;
    for (const Sm90ScheduleEntry& e : kSm90Schedules)
      if (e.generated) on.push_back(fmt::format("`{}` (tile M {})", name(e.schedule), ints(e.tileM)));
    unsupported(s.schedule.loc, fmt::format("schedule `{}` {}; it generates {}", name(s.schedule.value), notYet(true),
                                            fmt::join(on, ", ")));
  } else {
    const bool tileMOn = std::find(sch->tileM.begin(), sch->tileM.end(), tm) != sch->tileM.end();
    if (!tileMOn)
      unsupported(s.tile.loc, fmt::format("tile M = {} is not generated for schedule `{}` on the sm90a path; it "
                                          "generates tile M {}",
                                          tm, name(sch->schedule), ints(sch->tileM)));
    std::vector<int> ns = generatedTileN();
    if (std::find(ns.begin(), ns.end(), tn) == ns.end())
      unsupported(s.tile.loc, fmt::format("tile N = {} is not generated on the sm90a path; it generates tile N {} (one "
                                          "wgmma's N)",
                                          tn, ints(ns)));
    else if (const bool promoted = s.promoteEvery.value != 0 || A.scaleBlock;
             tileMOn && (tm / sch->consumers / 64) * (tn / 2) > (promoted ? kSm90MaxAccumRegsPromoted : kSm90MaxAccumRegs))
      unsupported(s.tile.loc, fmt::format("tile {} x {} with schedule `{}` needs {} accumulator registers per consumer "
                                          "thread, more than the {} the sm90a path allows{}; use a smaller tile N",
                                          tm, tn, name(sch->schedule), (tm / sch->consumers / 64) * (tn / 2),
                                          promoted ? kSm90MaxAccumRegsPromoted : kSm90MaxAccumRegs,
                                          promoted ? " when it promotes (a second accumulator)" : ""));
    // Block scales promote every k-block with a scale per row of each m64 block: on the cooperative schedule with two
    // m64 blocks per consumer (256 x 64) ptxas spills 40-44 bytes with no epilogue at all (e4m3, any stages and
    // split-K; found by the gate fuzz's --heavy kernels, seed 41011), where cooperative 128 x 128, pingpong 128 x 64
    // (two m64 blocks too) and `promotion = 1` on 256 x 64 build.
    else if (A.scaleBlock && sch->schedule == Schedule::Cooperative && tm / sch->consumers / 64 >= 2)
      unsupported(s.tile.loc, fmt::format("tile {} x {} with schedule `cooperative` gives each consumer {} m64 blocks of "
                                          "rows, and block scales keep a scale per row of each beside the promoted "
                                          "accumulators: more registers than a consumer has (ptxas spills); use tile M "
                                          "128, or schedule `pingpong`",
                                          tm, tn, tm / sch->consumers / 64));
  }

  // Cluster, raster, split-K.
  const auto& cl = s.cluster.value;
  bool clusterOn = false, clusterPlanned = false;
  for (const Sm90Cluster& c : kSm90Clusters)
    if (c.m == cl[0] && c.n == cl[1] && cl[2] == 1) {
      clusterPlanned = true;
      clusterOn = c.generated;
    }
  if (!clusterOn)
    unsupported(s.cluster.loc, fmt::format("cluster ({}, {}, {}) {}; it generates {}", cl[0], cl[1], cl[2],
                                           notYet(clusterPlanned), generatedClusters()));
  for (const Sm90RasterEntry& r : kSm90Rasters)
    if (r.raster == s.raster.value && !r.generated)
      unsupported(s.raster.loc, fmt::format("raster = {} {}", name(s.raster.value), notYet(true)));
  bool splitOn = false;
  for (const Sm90SplitKEntry& e : kSm90SplitK)
    if (e.mode == s.splitK.value) splitOn = e.generated;
  const char* splitKOn = findSplitK(SplitKMode::Serial) ? "split_k = 1 or serial(n)" : "split_k = 1";
  if (!splitOn)
    unsupported(s.splitK.loc, fmt::format("split_k = {1} {2}; use {0}", splitKOn,
                                          s.splitK.value == SplitKMode::StreamK
                                              ? std::string("stream_k")
                                              : fmt::format("{}({})", name(s.splitK.value), s.splitKSlices.value),
                                          notYet(s.splitK.value == SplitKMode::Serial)));
  // Promotion and block scales (the validator admits them on fp8 inputs only): refused while
  // kSm90Promotion / kSm90BlockScaling are off.
  if (A.scaleBlock && !kSm90BlockScaling)
    unsupported(A.scaleLoc, fmt::format("`scale (...)` on A and B (fp8 block scaling) {}", notYet(true)));
  else if (s.promoteEvery.value != 0 && !kSm90Promotion)
    unsupported(s.promoteEvery.loc, fmt::format("promotion = {} {}; use `fast`", s.promoteEvery.value, notYet(true)));
}

}  // namespace kdl::codegen

namespace kdl::codegen {

namespace {

std::string onWord(bool on) { return on ? "generated" : "not yet"; }

}  // namespace

std::string renderSm90Table() {
  const Sm90Table t = sm90Table();
  std::string out = "The sm90a path (kdl::GemmSm90, schedule cooperative | pingpong), line by line:\n";
  out += "mainloop (A x B -> accum, tile K):\n";
  for (const Sm90Mainloop& m : t.mainloops)
    out += fmt::format("  {:<9}  {} -> {}, tile K {} (wgmma {})\n", onWord(m.generated), mainloopWords(m),
                       dtypeWord(m.accum), m.tileK, m.wgmma);
  out += "schedule (tile M):\n";
  for (const Sm90ScheduleEntry& s : t.schedules)
    out += fmt::format("  {:<9}  {} (tile M {})\n", onWord(s.generated), name(s.schedule), ints(s.tileM));
  out += "tile N:\n";
  for (const Sm90Choice& c : t.tileN) out += fmt::format("  {:<9}  {}\n", onWord(c.generated), c.value);
  out += "cluster:\n";
  for (const Sm90Cluster& c : t.clusters) out += fmt::format("  {:<9}  ({}, {}, 1)\n", onWord(c.generated), c.m, c.n);
  out += "raster:\n";
  for (const Sm90RasterEntry& r : t.rasters) out += fmt::format("  {:<9}  {}\n", onWord(r.generated), name(r.raster));
  out += "split_k:\n";
  for (const Sm90SplitKEntry& e : t.splitK)
    out += fmt::format("  {:<9}  {}\n", onWord(e.generated), e.mode == SplitKMode::None ? "1" : "serial(n)");
  out += fmt::format("fp8 promotion = N:\n  {}\nblock scales (scale (BM, BK)):\n  {}\n", onWord(t.promotion),
                     onWord(t.blockScaling));
  // codegen/lower_fallback.cpp: the sm80-path kernel of the same GEMM where the sm90a one cannot run.
  out += "fallback = sm80 (inputs the sm80 path multiplies: f16, bf16, tf32, s8):\n  generated\n";
  out += fmt::format("limits: at most {} f32 accumulator registers per consumer thread ({} when promoting); A and B "
                     "rows {}-byte aligned (TMA); C, D and extra outputs row- or column-major (a column-major D "
                     "is computed as D^T = B^T A^T; not with block scales)\n",
                     t.maxAccumRegs, t.maxAccumRegsPromoted, t.operandAlignBytes);
  return out;
}

std::string sm90TableSpecs() {
  const Sm90Table t = sm90Table();
  const Sm90Mainloop* ml0 = nullptr;
  for (const Sm90Mainloop& m : t.mainloops)
    if (m.generated && !ml0) ml0 = &m;
  const Sm90ScheduleEntry* sch0 = nullptr;
  for (const Sm90ScheduleEntry& s : t.schedules)
    if (s.generated && !sch0) sch0 = &s;
  if (!ml0 || !sch0) return "// the sm90a table generates nothing\n";

  struct Kernel {
    std::string name;
    const Sm90Mainloop* ml;
    Schedule schedule;
    int consumers, tm, tn;
    std::array<int, 2> cluster{1, 1};
    const char* raster = "along_n";
    const char* splitK = "1";
    const char* promotion = nullptr;  // fp8 only
    bool blockScales = false;         // fp8 only: A scale (1, 128), B scale (128, 128)
  };
  auto base = [&](std::string name) {
    return Kernel{std::move(name), ml0, sch0->schedule, sch0->consumers, sch0->tileM.front(), 128};
  };
  std::vector<Kernel> ks;
  for (const Sm90Mainloop& m : t.mainloops)
    if (m.generated) {
      Kernel k = base(fmt::format("sm90_{}_{}_{}_{}", dtypeWord(m.a), layoutWord(m.layoutA), dtypeWord(m.b),
                                  layoutWord(m.layoutB)));
      k.ml = &m;
      ks.push_back(k);
    }
  for (const Sm90ScheduleEntry& s : t.schedules)
    if (s.generated)
      for (int tm : s.tileM) {
        Kernel k = base(fmt::format("sm90_{}_m{}", name(s.schedule), tm));
        k.schedule = s.schedule;
        k.consumers = s.consumers;
        k.tm = tm;
        ks.push_back(k);
      }
  for (const Sm90Choice& c : t.tileN)
    if (c.generated) {
      Kernel k = base(fmt::format("sm90_n{}", c.value));
      k.tn = c.value;
      ks.push_back(k);
    }
  for (const Sm90Cluster& c : t.clusters)
    if (c.generated) {
      Kernel k = base(fmt::format("sm90_cluster_{}x{}", c.m, c.n));
      k.cluster = {c.m, c.n};
      ks.push_back(k);
    }
  for (const Sm90RasterEntry& r : t.rasters)
    if (r.generated && r.raster == Raster::AlongM) {
      Kernel k = base("sm90_raster_along_m");
      k.raster = "along_m";
      ks.push_back(k);
    }
  for (const Sm90SplitKEntry& e : t.splitK)
    if (e.generated && e.mode == SplitKMode::Serial) {
      Kernel k = base("sm90_split_k_serial");
      k.splitK = "serial(4)";
      ks.push_back(k);
    }
  // Promotion: the first fp8 mainloop that is on, promoting every 2 k-tiles.
  const Sm90Mainloop* fp8 = nullptr;
  for (const Sm90Mainloop& m : t.mainloops)
    if (m.generated && isFloat8(m.a) && !fp8) fp8 = &m;
  if (t.promotion && fp8) {
    Kernel k = base("sm90_promotion_2");
    k.ml = fp8;
    k.promotion = "2";
    ks.push_back(k);
  }
  // Block scales: the same fp8 mainloop with DeepGEMM's blocks (they promote every k-block).
  if (t.blockScaling && fp8) {
    Kernel k = base("sm90_block_scales");
    k.ml = fp8;
    k.blockScales = true;
    ks.push_back(k);
  }

  std::string out = "// One kernel per line of the sm90a table that is on (kdlc support --specs; codegen/support_sm90.cpp).\n";
  std::vector<std::string> seen;
  for (const Kernel& k : ks) {
    const int regs = (k.tm / k.consumers / 64) * (k.tn / 2);
    if (regs > (k.promotion || k.blockScales ? t.maxAccumRegsPromoted : t.maxAccumRegs)) continue;  // not a configuration
    std::string body = fmt::format(
        "  op = gemm; arch = sm90a;\n  A : {} {}{}; B : {} {}{}; D : bf16 row;\n  accum = {};\n  tile = ({}, {}, {}); "
        "stages = auto; schedule = {};\n  cluster = ({}, {}, 1); raster = {}; split_k = {};\n",
        dtypeWord(k.ml->a), layoutWord(k.ml->layoutA), k.blockScales ? " scale (1, 128)" : "", dtypeWord(k.ml->b),
        layoutWord(k.ml->layoutB), k.blockScales ? " scale (128, 128)" : "",
        dtypeWord(k.ml->accum), k.tm, k.tn, k.ml->tileK, name(k.schedule), k.cluster[0], k.cluster[1], k.raster, k.splitK);
    if (k.promotion) body += fmt::format("  promotion = {};\n", k.promotion);
    if (std::find(seen.begin(), seen.end(), body) != seen.end()) continue;
    seen.push_back(body);
    out += fmt::format("kernel {} {{\n{}}}\n", k.name, body);
  }
  return out;
}

}  // namespace kdl::codegen
