// Lowering step: the tile, the warps that run it and the shared-memory layout of A and B, within the
// sm80 multistage GEMM's own constraints (the static_asserts of include/kdl/gemm_sm80.cuh's
// TileCopier and GemmSm80, checked here first so that a bad tile is an error at its line, not a
// compile error in the template).
#include <fmt/format.h>

#include <cmath>
#include <tuple>

#include "codegen/epilogue_expr.h"
#include "codegen/lower_steps.h"

namespace kdl::codegen {

namespace {

// One operand's tile in shared memory: `rows` rows of `rowElems` contiguous elements.
struct CopierShape {
  int rows, rowElems, rowBytes, bytes;
  bool contigK;
};
CopierShape copierShape(const OperandPlan& o, int tileMN, int tileK) {
  CopierShape c;
  c.contigK = o.contigK;
  c.rows = o.contigK ? tileMN : tileK;
  c.rowElems = o.contigK ? tileK : tileMN;
  c.rowBytes = c.rowElems * o.elementBytes;
  c.bytes = c.rows * c.rowBytes;
  return c;
}
// One cp.async of the operand: its alignment's bytes, at most 16.
int copyBytesOf(const OperandPlan& o) { return std::min(16, o.align * o.elementBytes); }
// The copies per thread and stage that fill the operand's tile of `rows` rows (M or N) by `threads` threads.
int copiesPerThread(const OperandPlan& o, int rows, int tileK, int threads) {
  return copierShape(o, rows, tileK).bytes / copyBytesOf(o) / threads;
}

// Why an operand's copier cannot be instantiated with `threads`, or "".
std::string copierProblem(const OperandPlan& o, const CopierShape& c, int threads) {
  int vecBytes = o.align * o.elementBytes;
  const char* opName = o.name.c_str();
  if (vecBytes != 4 && vecBytes != 8 && vecBytes != 16)
    return fmt::format("{} copies {}-byte vectors; the sm80 path needs 4, 8 or 16", opName, vecBytes);
  if (!(c.rowBytes == 64 || (c.rowBytes >= 128 && c.rowBytes % 128 == 0)))
    return fmt::format("{}'s shared-memory rows would be {} bytes ({} elements along its contiguous dimension); the "
                       "swizzled layout needs 64 bytes or a multiple of 128",
                       opName, c.rowBytes, c.rowElems);
  if (c.rowElems % o.align)
    return fmt::format("{}'s tile extent {} is not a multiple of its alignment {}", opName, c.rowElems, o.align);
  int vecPerRow = c.rowElems / o.align;
  int vecs = c.rows * vecPerRow;
  if (threads % vecPerRow || vecs % threads)
    return fmt::format("{}'s tile ({} vectors of {} B) does not divide evenly among {} threads", opName, vecs, vecBytes,
                       threads);
  if (vecs / threads > 32) return fmt::format("{}'s tile needs more than 32 copies per thread", opName);
  return "";
}

struct WarpChoice {
  int wm = 0, wn = 0;
  std::string problem;
  bool registers = false;  // every arrangement the copiers allow needs more registers than a thread has
  std::string preferredProblem;  // chosen past the preferred count: why that count's warp tile would spill
};

// Why (wm, wn) warps cannot run the tile, or "".
std::string warpProblem(const KernelPlan& p, int wm, int wn) {
  int threads = wm * wn * 32;
  if (p.tileM % wm || (p.tileM / wm) % 16) return fmt::format("warp tile M = {} / {} is not a multiple of 16", p.tileM, wm);
  if (p.tileN % wn || (p.tileN / wn) % 16) return fmt::format("warp tile N = {} / {} is not a multiple of 16", p.tileN, wn);
  int warpN = p.tileN / wn;
  if (warpN % p.epilogueVectorWidth || ((16 * warpN / p.epilogueVectorWidth) % 32))
    return fmt::format("warp tile N = {} does not fit the epilogue's {}-column vectors", warpN, p.epilogueVectorWidth);
  std::string problem = copierProblem(p.a, copierShape(p.a, p.tileM, p.tileK), threads);
  if (problem.empty()) problem = copierProblem(p.b, copierShape(p.b, p.tileN, p.tileK), threads);
  return problem;
}

// 8 warps for the big tiles (128x256 and up), 4 otherwise. A convolution's gathers keep each row's pixel
// coordinates and pointers in registers beside the accumulators: its 128 x 128 tiles take 8 warps too
// (with 4, i.e. 64 x 64 warp tiles, ptxas spills: 255 registers on sm_90).
bool wantsEightWarps(const KernelPlan& p) { return p.tileM * p.tileN >= (p.conv() ? 128 * 128 : 128 * 256); }

WarpChoice chooseWarps(const KernelPlan& p);

// ", or tile K = N" where half the tile's K is a valid tile K on which some arrangement of warps fits the
// registers (a refusal's suggestion must not be refused in turn), else "".
std::string halfTileKSuggestion(const KernelPlan& p) {
  KernelPlan q = p;
  q.tileK = p.tileK / 2;
  const int kBytes = q.tileK * q.a.elementBytes;
  if (p.tileK % 2 || kBytes % 32 || kBytes < 64 || chooseWarps(q).wm == 0) return "";
  return fmt::format(" or tile K = {}", q.tileK);
}

// A multistage fprop or dgrad keeps its gathers' per-row pixel coordinates and pointers in registers beside
// the accumulators; with a 64 x 64 warp tile (8 warps on 128 x 256 or 256 x 128: 128 f32 accumulators per
// thread) that exceeds the 255 registers of a thread, and ptxas spills, except on the fprop with at most 2 of
// A's (X's) 16-byte rows per thread. Measured with `kdlc build` (ptxas's gate, its narrower-epilogue tries
// included) on sm_80 and sm_90, no epilogue: fprop 128 x 256 x 32 clean; fprop 256 x 128 x 32 (4 rows of X
// per thread), 128 x 256 x 64 and 256 x 128 x 64 spill, so does every dgrad with such a warp tile (8-380
// bytes); the wgrad (no per-row pixel state) builds, but for the cases of its own branch below. "" when the tile
// is fine.
std::string convRegisterProblem(const KernelPlan& p) {
  if (p.path != KernelPath::ConvSm80) return "";
  const std::string kind = p.convKind();
  // The loads' copies: each of a gather keeps its pixel's offsets and masks. Measured (f16, aligned to 2, 4 and 8
  // elements, 64 x 64 to 128 x 128, tile K 32 and 64, no epilogue): the fprop and the dgrad spill (100-1200
  // bytes) where an operand takes 16 or more copies per thread and stage, and the dgrad with 4-byte copies also
  // where A and B take 16 together beside 64 accumulators (12 bytes); everything else builds. The wgrad too
  // (256 x 128 x 64 aligned to 2 elements: 32 and 16 copies beside 128 accumulators, 248-644 bytes).
  const int accumulators = p.warpTileM * p.warpTileN / 32;
  const int copies[2] = {copiesPerThread(p.a, p.tileM, p.tileK, p.threads),
                         copiesPerThread(p.b, p.tileN, p.tileK, p.threads)};
  const int copyBytes = std::min(copyBytesOf(p.a), copyBytesOf(p.b));
  if (std::max(copies[0], copies[1]) >= 16 ||
      (kind == "Dgrad" && copyBytes <= 4 && accumulators >= 64 && copies[0] + copies[1] >= 16))
    return fmt::format("tile {} x {} x {} of a {} on the multistage path runs {} warps whose loads take {} and {} "
                       "{}-byte copies per thread and stage (A and B), a gather's each keeping its pixel's offsets and "
                       "masks: more than the 255 registers of a thread hold (ptxas spills); use a wider alignment "
                       "(16 bytes){}",
                       p.tileM, p.tileN, p.tileK, opWord(p.spec.op.value), p.warpsM * p.warpsN, copies[0], copies[1], copyBytes, halfTileKSuggestion(p));
  if (kind == "Wgrad") {
    // The wgrad with 128 accumulators per thread (128 x 256 or 256 x 128 on 8 warps of 64 x 64). Measured with
    // `kdlc build` (ptxas's gate, its narrower-epilogue tries included) on sm_80 and sm_90a, bf16, tile K 32 and
    // 64, epilogues from none to a residual, [] and [channel] inputs, two extra outputs and an amax, split-K, fixed
    // strides and 3 x 3 filters: both build (128 x 256 at the 4-column epilogue) but where the filter is fixed at
    // 1 x 1 (the tap loop folded away: 4-8 bytes of spills on 128 x 256 x 64, 256 x 128 x 64 and, on sm_80,
    // 128 x 256 x 32) and where an operand takes 8 copies narrower than 16 bytes per thread and stage (256 x 128 x
    // 32 aligned to 4 elements: 32-36 bytes).
    if (accumulators < 128) return "";
    const std::string head = fmt::format("tile {} x {} x {} of a conv2d_wgrad on the multistage path runs {} warps of "
                                         "{} x {} ({} f32 accumulators per thread)",
                                         p.tileM, p.tileN, p.tileK, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN,
                                         accumulators);
    if (p.filterR == 1 && p.filterS == 1)
      return head + " with the filter fixed at 1 x 1: more than the 255 registers of a thread hold (ptxas spills); use "
                    "128 x 128, or leave the filter a run-time argument";
    for (int i = 0; i < 2; ++i) {
      const OperandPlan& o = i == 0 ? p.a : p.b;
      if (copyBytesOf(o) < 16 && copies[i] >= 8)
        return head + fmt::format(" and {}'s ({}'s) loads take {} {}-byte copies per thread and stage: more than the "
                                  "255 registers of a thread hold (ptxas spills); use a wider alignment (16 bytes) or "
                                  "128 x 128",
                                  o.name, (i == 0 ? p.argA : p.argB).name, copies[i], copyBytesOf(o));
    }
    return "";
  }
  if (p.warpTileM * p.warpTileN < 64 * 64) return "";
  const int rowsA = p.tileM * p.tileK * p.a.elementBytes / 16 / p.threads;  // A's 16-byte rows per thread
  if (kind == "Fprop" && rowsA <= 2 && copyBytes < 16)
    // ... but only with 16-byte copies: X or W aligned below 16 bytes (8-byte copies: 4 and 8 per thread and stage)
    // spills 8-76 bytes on sm_80 and sm_90 with any filter, fixed or not, and any stride (measured through `kdlc
    // build`, no epilogue; found by the GPU suite's random kernels).
    return fmt::format("tile {} x {} x {} of a conv2d_fprop on the multistage path runs {} warps of {} x {} ({} f32 "
                       "accumulators per thread) and its loads take {} {}-byte copies of X and {} {}-byte copies of W per "
                       "thread and stage, a gather's each keeping its pixel's offsets and masks: more than the 255 registers of "
                       "a thread hold (ptxas spills); use a wider alignment (16 bytes), or 128 x 128, 256 x 64 or "
                       "64 x 256{}",
                       p.tileM, p.tileN, p.tileK, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN,
                       p.warpTileM * p.warpTileN / 32, copies[0], copyBytesOf(p.a), copies[1], copyBytesOf(p.b),
                       p.arch == Arch::SM90a ? ", or the wgmma path (`schedule = cooperative`)" : "");
  if (kind == "Fprop" && rowsA <= 2 && p.filterR != 0 && p.spec.stages.value < 4)
    // ... and with a fixed filter only through 4 stages: 2 or 3 spill 4 bytes in the sm_90 SASS (f16 and bf16; 2 x 2,
    // 3 x 3, 5 x 5 fixed, any epilogue, arch sm80 / sm86; found by the GPU suite's random kernels), where 4 stages and
    // a run-time filter at 2 build.
    return fmt::format("tile {} x {} x {} of a conv2d_fprop on the multistage path runs {} warps of {} x {} ({} f32 "
                       "accumulators per thread) with the filter fixed ({} x {}) through {} stages: one register more "
                       "than a thread holds in the sm_90 code (ptxas spills 4 bytes); use stages = 4 (or auto), leave "
                       "the filter a run-time argument, or use 128 x 128, 256 x 64 or 64 x 256",
                       p.tileM, p.tileN, p.tileK, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN,
                       p.warpTileM * p.warpTileN / 32, p.filterR, p.filterS, p.spec.stages.value);
  if (kind == "Fprop" && rowsA <= 2 && p.filterR == 0 && p.spec.stages.value > 4)
    // ... and with a run-time filter only up to 4 stages: 5 and 6 spill 4 bytes in the sm_90 SASS (f16 and bf16, with
    // and without an epilogue, fixed or run-time strides; found by the GPU suite's heavy random kernels, seed 42003),
    // where 4 stages (what auto picks) and every filter fixed at 2 x 2, 3 x 3, 3 x 5, 5 x 5 or 7 x 7 through 4, 5
    // and 6 build (docs/perf-notes.md v42).
    return fmt::format("tile {} x {} x {} of a conv2d_fprop on the multistage path runs {} warps of {} x {} ({} f32 "
                       "accumulators per thread) with a run-time filter through {} stages: one register more than a "
                       "thread holds in the sm_90 code (ptxas spills 4 bytes); use stages = 4 (or auto), fix the filter "
                       "in the spec (`filter = (3, 3);`, at least 2 wide), or use 128 x 128, 256 x 64 or 64 x 256",
                       p.tileM, p.tileN, p.tileK, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN,
                       p.warpTileM * p.warpTileN / 32, p.spec.stages.value);
  if (kind == "Fprop" && rowsA <= 2) {
    // ... unless the filter is fixed 1 wide in either dimension (1 x 1, 3 x 1, 5 x 1: 4 bytes of spills on sm_80
    // and sm_90a at every epilogue width; 1 x 3 with a residual and an extra output, on sm_90; measured through
    // `kdlc build`, where 2 x 2, 3 x 3, 5 x 5, 7 x 7 and a run-time filter build with the same epilogues).
    if (p.filterR == 0 || (p.filterR != 1 && p.filterS != 1)) return "";
    return fmt::format("tile {} x {} x {} of a conv2d_fprop on the multistage path runs {} warps of {} x {} ({} f32 "
                       "accumulators per thread) with the filter fixed 1 wide ({} x {}): more than the 255 "
                       "registers of a thread hold (ptxas spills); use 128 x 128, 256 x 64 or 64 x 256, or leave the "
                       "filter a run-time argument{}",
                       p.tileM, p.tileN, p.tileK, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN,
                       p.warpTileM * p.warpTileN / 32, p.filterR, p.filterS,
                       p.arch == Arch::SM90a ? ", or the wgmma path (`schedule = cooperative`)" : "");
  }
  return fmt::format("tile {} x {} x {} of a {} on the multistage path runs 8 warps of {} x {} ({} f32 accumulators "
                     "per thread) beside the gathers' per-row pixel coordinates and pointers{}: more than the 255 "
                     "registers of a thread (ptxas spills); use 128 x 128, 256 x 64 or 64 x 256{}",
                     p.tileM, p.tileN, p.tileK, opWord(p.spec.op.value), p.warpTileM,
                     p.warpTileN, p.warpTileM * p.warpTileN / 32,
                     kind == "Fprop" ? fmt::format(" ({} rows of X per thread; 2 fit: 128 x 256 x 32)", rowsA) : "",
                     kind == "Fprop" && p.arch == Arch::SM90a
                         ? ", or the wgmma path (`schedule = cooperative`)"
                         : "");
}

// What spills at any accumulator count (found by the GPU suite's random kernels, docs/perf-notes.md v34; measured
// with `kdlc build` on sm_80, sm_86 and sm_90), on 4 warps: a K-contiguous operand of 32 copies per thread and
// stage (8-76 bytes: s8 128 x 32 x 128 and 128 x 64 x 128 aligned to 4 bytes, 256 x 32 x 128 aligned to 8, B of
// 32 x 128 x 128; f16 128 x 32 x 64 and 128 x 64 x 64 aligned to 2 elements), and 16 copies of both A and B at 4
// bytes on 16-bit operands (f16 64 x 64 x 64 aligned to 2: 8-16 bytes; s8 64 x 64 x 128 alike builds). 16 of one
// operand beside a few of the other build, and so do MN-contiguous operands of 32 4-byte copies. On 8 warps the same
// counts build (s8 256 x 64 x 128 and 256 x 32 x 128 aligned to 4 bytes, f16 256 x 64 x 64 aligned to 2: 32 copies;
// f16 128 x 128 x 64 aligned to 2 and tf32 128 x 128 x 32 aligned to 1: 16 and 16), so chooseWarps takes 8 where
// these refuse 4 (each of the above builds there). "" when none applies.
std::string copyRegisterProblem(const KernelPlan& p, const std::string& tile, int na, int nb) {
  if (p.threads != 128) return "";
  for (const auto& [o, rows, copies] :
       {std::tuple<const OperandPlan&, int, int>{p.a, p.tileM, na}, {p.b, p.tileN, nb}})
    if (o.contigK && copies >= 32)
      return fmt::format("{} runs {} warps and the mainloop's {} tile ({} x {}, K-contiguous) takes {} {}-byte copies "
                         "per thread and stage: more than the registers of a thread hold beside its addresses (ptxas "
                         "spills; 16 fit); use {}a smaller tile",
                         tile, p.warpsM * p.warpsN, o.name, rows, p.tileK, copies, copyBytesOf(o),
                         copyBytesOf(o) < 16 ? "a wider alignment (16 bytes) or " : "");
  if (p.a.elementBytes == 2 && p.a.contigK && p.b.contigK && na + nb >= 32 &&
      std::max(copyBytesOf(p.a), copyBytesOf(p.b)) <= 4)
    return fmt::format("{} runs {} warps and its K-contiguous A and B tiles take {} and {} 4-byte copies per thread and "
                       "stage: more than the registers of a thread hold beside its addresses (ptxas spills; 32 in all "
                       "fit); use a wider alignment (16 bytes) or a smaller tile",
                       tile, p.warpsM * p.warpsN, na, nb);
  return "";
}

// The multistage mainloop's registers (255 per thread): each thread keeps its warp tile's accumulators
// (warp tile M x N / 32 f32 or s32), two k-steps of fragments and its copies' addresses. Measured with
// `kdlc build` (ptxas's gate) on sm_80 and sm_90, f16 / tf32 / s8, no epilogue: every tile of 256
// accumulators per thread (256 x 256 on 8 warps) spills 1.3-3.6 KB; with 128 (64 x 64 warp tiles) what
// spills (44-850 bytes) is a K-contiguous operand of more than 8 copies per thread and stage (16 bytes each,
// or the operand's alignment when smaller) -- B of 64 x 256 or A of 256 x 64 on 4 warps with 128-byte rows
// (16 each), in any layout of the other operand; s8 256 x 64 x 64 with A aligned to 8 bytes (16 copies of 8);
// 128 x 128 on 4 warps aligned to 2 or 4 f16 elements or 1 tf32 (16-32 copies) -- while 128 x 128 on 4 warps
// (8 and 8), 128 x 256 and 256 x 128 on 8 warps (4 and 8), the same tiles with 64-byte rows, and
// MN-contiguous operands of 16 build clean. chooseWarps takes 8 warps where 4 would spill (64 x 32 warp
// tiles, 64 accumulators: all of the above build clean there). The convolutions' gathers keep more per row
// (convRegisterProblem). "" when the tile fits.
std::string multistageRegisterProblem(const KernelPlan& p) {
  const int accumulators = p.warpTileM * p.warpTileN / 32;
  const std::string tile = fmt::format("tile {} x {} x {}", p.tileM, p.tileN, p.tileK);
  if (accumulators > 128)
    return fmt::format("{} runs {} warps of {} x {}: {} accumulator registers per thread, more than the 128 the "
                       "multistage path keeps beside its fragments and copies (255 per thread: ptxas spills); use a "
                       "tile of at most 128 x 256 or 256 x 128",
                       tile, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN, accumulators);
  if (p.path == KernelPath::ConvSm80) return convRegisterProblem(p);
  const int na = copiesPerThread(p.a, p.tileM, p.tileK, p.threads);
  const int nb = copiesPerThread(p.b, p.tileN, p.tileK, p.threads);
  if (accumulators < 128) return copyRegisterProblem(p, tile, na, nb);
  // Both operands MN-contiguous with 16 or more copies per thread and stage in all (128 x 128 x 64 f16 on 4 warps,
  // A column-major and B row-major: 8 and 8; 128 x 256 x 64 and 256 x 128 x 64 on 8 warps with the row-major
  // operand aligned to 4 elements: 4 and 16, found by the GPU suite's random kernels): 4-8 bytes of spills on sm_80
  // and sm_86 (sm_90 clean), with or without an epilogue; 4 and 8 (the same tiles aligned to 16 bytes) build.
  if (!p.a.contigK && !p.b.contigK && na + nb >= 16)
    return fmt::format("{} runs {} warps of {} x {} (128 accumulator registers per thread) and both mainloop tiles "
                       "are MN-contiguous with {} and {} copies per thread and stage: more than the 255 registers of "
                       "a thread hold on sm_80 (ptxas spills; 12 in all fit); use {}a smaller tile (128 x 128 runs 8 "
                       "warps of 64 x 32)",
                       tile, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN, na, nb,
                       std::min(copyBytesOf(p.a), copyBytesOf(p.b)) < 16 ? "a wider alignment (16 bytes) or " : "");
  // Both operands MN-contiguous on 8 warps, A's 256 rows in 8 copies and B's in 4 (256 x 128 x 64 16-bit, A
  // column-major and B row-major, both aligned to 16 bytes), rastered along M, beside an epilogue with a division or
  // any math function: 4 bytes of spills in the sm_80 / sm_86 / sm_89 code (sm_90 clean), with or without split-K,
  // at every epilogue width the build's later tries take (found by the GPU suite's heavy random kernels, seed 39041:
  // r39041_26). Measured with `kdlc build` (bf16 and f16, 2 stages on sm_89, 3 on sm_80): a lone silu or division
  // spills, as do heavier epilogues; the default epilogue, relu, a scale, a [col] bias, C, and a lone tanh, exp or
  // gelu build; rastered along N (some at the narrower epilogue width of the build's later tries), 128 x 256 x 64 (4
  // and 8), 256 x 128 x 32 (4 and 2), and A or B K-contiguous all build beside the heaviest epilogues measured. The
  // rule takes every math function, not only those that spilled.
  if (p.threads == 256 && !p.a.contigK && !p.b.contigK && na >= 8 && na + nb >= 12 &&
      p.spec.raster.value == Raster::AlongM && hasMathOrDivision(p.epilogue))
    return fmt::format("{} runs {} warps of {} x {} (128 accumulator registers per thread), both mainloop tiles are "
                       "MN-contiguous ({} and {} copies per thread and stage), it is rastered along M and its epilogue "
                       "divides or calls a math function: one register more than a thread holds on sm_80-sm_89 "
                       "(ptxas spills 4 bytes); use raster = along_n, tile 128 x 256 x 64, or a smaller tile",
                       tile, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN, na, nb);
  // Both operands MN-contiguous with fewer copies, one of them 8, on 4 warps through 4 or more stages (64 x 256 x 32
  // f16, A column-major and B row-major: 2 and 8): 4-8 bytes of spills in the sm_90 code through 5 stages with any
  // epilogue, and through 4 beside a [row] input, two extra outputs and an rsqrt (found by the gate fuzz, seed 41027;
  // 3 stages and the lighter epilogues through 4 build; 128 x 128 x 32, 4 and 4, builds). It runs on 8 warps.
  if (p.threads == 128 && !p.a.contigK && !p.b.contigK && std::max(na, nb) >= 8 && p.spec.stages.value >= 4)
    return fmt::format("{} runs {} warps of {} x {} (128 accumulator registers per thread) and both mainloop tiles "
                       "are MN-contiguous ({} and {} copies per thread and stage): one register more than a thread "
                       "holds in the sm_90 code through {} stages (ptxas spills 4-8 bytes); use 8 warps, 3 stages, "
                       "or a smaller tile",
                       tile, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN, na, nb, p.spec.stages.value);
  // One K-contiguous and one MN-contiguous operand of 8 copies each beside 128 accumulators on 4 warps (128 x 128 x
  // 64 16-bit): one register more than a thread holds on sm_80 (sm_90 clean) in much of the class, so it runs on 8
  // warps (64 x 32 warp tiles), where all of it builds. Measured with `kdlc build` (f16, no epilogue, C, an epilogue
  // division -- IEEE f32, whose called slow path needs registers of its own -- with or without an extra output,
  // split-K, stages 2-5, both rasters): A row-major and B row-major spill 4-8 bytes rastered along M through 3 stages
  // (found by the GPU suite's random kernels), through 5 beside C (the default epilogue), and beside a division through 3 or
  // more stages either way (8-20 bytes; found by the gate fuzz, seed 41025); A column-major and B column-major spill
  // 4 bytes beside a division through 3-5 stages; both without the division through 2-4 stages build. The rule
  // takes the whole class rather than chase the edge (docs/perf-notes.md v39).
  if (p.threads == 128 && p.a.contigK != p.b.contigK && na >= 8 && nb >= 8)
    return fmt::format("{} runs {} warps of {} x {} (128 accumulator registers per thread) with {} A and {} B ({} and "
                       "{} copies per thread and stage): one register more than a thread holds on sm_80 with an "
                       "epilogue division, or through 5 stages beside C (ptxas spills 4-20 bytes); use 8 warps (64 x "
                       "32 warp tiles), operands both K-contiguous (A row-major, B column-major), or a smaller tile",
                       tile, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN,
                       p.a.contigK ? "a K-contiguous" : "an MN-contiguous",
                       p.b.contigK ? "a K-contiguous" : "an MN-contiguous", na, nb);
  // An amax beside a division or a math function in the epilogue, on 4 warps of 64 x 64 whose tiles take 10 or more
  // copies per thread and stage (256 x 64 x 64 s8 and 256 x 64 x 32 f16, A and B K-contiguous: 8 and 2): 8-16 bytes
  // of spills in the sm_90 code at every epilogue width of the build's later tries, with or without split-K or an
  // extra output, along M or N, 2-4 stages, D transposed or not (found by the GPU suite's heavy random kernels, seeds
  // 39045: r39045_9, a division; and 39046: r39046_28, gelu and sqrt beside two extra outputs). Without the amax, or
  // with the amax beside math but no extra output, it builds at 4 columns per call; an amax beside no math builds;
  // so does 128 x 128 x 64 (4 and 4 copies) with everything. It runs on 8 warps.
  if (p.threads == 128 && na + nb >= 10 && hasAmax(p.epilogue) && hasMathOrDivision(p.epilogue))
    return fmt::format("{} runs {} warps of {} x {} (128 accumulator registers per thread) with {} and {} copies per "
                       "thread and stage, and its epilogue reduces an amax beside a division or a math function: more "
                       "than a thread holds in the sm_90 code (ptxas spills 8-16 bytes); use 8 warps (64 x 32 warp "
                       "tiles), no amax, or a smaller tile",
                       tile, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN, na, nb);
  // An epilogue division (IEEE f32: an inline fast path beside a called slow path, whose call needs registers of its
  // own) beside 128 accumulators on 8 warps, A MN-contiguous in 4-byte copies (8 per thread and stage) and B
  // K-contiguous, rastered along N through 3 or more stages: 4 bytes of spills in the sm_90 code at every epilogue
  // width (bf16 128 x 256 x 32, A column-major aligned to 2, with or without split-K; found by the gate fuzz's
  // --heavy kernels, seed 41009); without the division (gelu_tanh, tanh, a [col] bias, a scale), with A aligned to 4
  // or K-contiguous, on 256 x 128 (16 copies of A), along M or through 2 stages it builds, and sm_80's code is clean.
  if (p.threads == 256 && !p.a.contigK && copyBytesOf(p.a) <= 4 && na <= 8 && p.b.contigK &&
      p.spec.raster.value == Raster::AlongN && p.spec.stages.value >= 3 && countOps(p.epilogue, EpiOp::Div) > 0)
    return fmt::format("{} runs {} warps of {} x {} (128 accumulator registers per thread) with an MN-contiguous A in "
                       "{} {}-byte copies per thread and stage, rastered along N through {} stages, and its epilogue "
                       "divides: the division's slow path needs a register more than a thread has left in the sm_90 "
                       "code (ptxas spills 4 bytes); use a wider alignment of A (8 bytes), raster along_m, 2 stages, "
                       "or an epilogue that multiplies instead",
                       tile, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN, na, copyBytesOf(p.a), p.spec.stages.value);
  for (const auto& [o, rows, copies] :
       {std::tuple<const OperandPlan&, int, int>{p.a, p.tileM, na}, {p.b, p.tileN, nb}}) {
    const int copyBytes = copyBytesOf(o);
    // On 8 warps the same: an MN-contiguous operand in 4-byte copies, 16 or more per thread and stage, spills with or
    // without an epilogue, in either operand (found by the gate fuzz's --heavy kernels, seed 41015): 32 (256 x 128 x
    // 64 with A column-major aligned to 2, 128 x 256 x 64 with B row-major aligned to 2) 12-44 bytes on sm_80 and
    // sm_90 at 2 and 3 stages; 16 (tile K 32 over 256 rows of the operand, or B row-major over 128 rows of 256 x 128 x
    // 64) 4-16 bytes through 2 or 3 stages. 16 sits at the edge -- two measured kernels build (128 x 256 x 64 with A
    // aligned to 2 through 2 stages; 256 x 128 x 32 so, through 4 stages rastered along N) -- and the rule takes the
    // class; 8-byte copies (A aligned to 4) build. No count of warps is left to take.
    if (!o.contigK && p.threads == 256 && copyBytes <= 4 && copies >= 16)
      return fmt::format("{} runs {} warps of {} x {} (128 accumulator registers per thread) and the mainloop's {} "
                         "tile ({} x {}, MN-contiguous) takes {} {}-byte copies per thread and stage: more than the "
                         "255 registers of a thread hold (ptxas spills); use a wider alignment of {} (8 bytes or more) "
                         "or a smaller tile",
                         tile, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN, o.name, rows, p.tileK, copies, copyBytes,
                         o.name);
    // On 4 warps a K-contiguous operand in 4-byte copies, 8 of them per thread and stage, beside 8 of the other
    // operand (16 in all) spills 8-36 bytes on sm_80 and sm_89 (sm_90 clean) with any epilogue, the default one
    // included, at 2 or 3 stages, either raster, with or without split-K (tf32 64 x 256 x 16 with A aligned to 1,
    // and 256 x 64 x 16 with B so; found by the gate fuzz's --heavy kernels, seed 41028); aligned to 4 (16-byte
    // copies: 2 and 8) it builds. (More than 8 K-contiguous copies: the rule below.) Such tiles run on 8 warps, where
    // they build.
    if (o.contigK && p.threads == 128 && copyBytes <= 4 && copies == 8 && na + nb >= 16)
      return fmt::format("{} runs {} warps of {} x {} (128 accumulator registers per thread) and the mainloop's {} "
                         "tile ({} x {}, K-contiguous) takes {} {}-byte copies per thread and stage beside {} of {}: more "
                         "than the 255 registers of a thread hold on sm_80-sm_89 (ptxas spills); use a wider alignment "
                         "of {} (16 bytes), 8 warps, or a smaller tile",
                         tile, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN, o.name, rows, p.tileK, copies, copyBytes,
                         na + nb - copies, o.name == "A" ? "B" : "A", o.name);
    // On 4 warps an MN-contiguous operand in narrow copies spills too: 32 of them (4 bytes each) 4-16 bytes on sm_80
    // and sm_89 (sm_90 clean) with or without an epilogue (bf16 256 x 64 x 32, A column-major aligned to 2), 16 beside
    // the epilogue's source C 4 bytes on sm_80 (bf16 128 x 128 x 32 alike; without C it builds); found by the gate
    // fuzz's --heavy kernels, seed 41011. Such tiles run on 8 warps, where they build.
    if (!o.contigK && p.threads == 128 && copyBytes < 16 && (copies >= 32 || (copies >= 16 && readsSource(p.epilogue))))
      return fmt::format("{} runs {} warps of {} x {} (128 accumulator registers per thread) and the mainloop's {} "
                         "tile ({} x {}, MN-contiguous) takes {} {}-byte copies per thread and stage{}: more than the "
                         "255 registers of a thread hold on sm_80 (ptxas spills); use a wider alignment (16 bytes) or a "
                         "smaller tile",
                         tile, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN, o.name, rows, p.tileK, copies, copyBytes,
                         copies >= 32 ? "" : " beside the epilogue's source C");
    if (o.contigK && copies > 8)
      return fmt::format("{} runs {} warps of {} x {} (128 accumulator registers per thread) and the mainloop's {} "
                         "tile ({} x {}, K-contiguous) takes {} {}-byte copies per thread and stage: more than the "
                         "255 registers of a thread hold (ptxas spills; 8 fit); use {}a smaller tile (128 x 128 runs "
                         "8 warps of 64 x 32)",
                         tile, p.warpsM * p.warpsN, p.warpTileM, p.warpTileN, o.name, rows, p.tileK, copies, copyBytes,
                         copyBytes < 16 ? "a wider alignment (16 bytes) or " : "");
  }
  return copyRegisterProblem(p, tile, na, nb);
}

// p run by wm x wn warps.
KernelPlan withWarps(const KernelPlan& p, int wm, int wn) {
  KernelPlan q = p;
  q.warpsM = wm;
  q.warpsN = wn;
  q.warpTileM = p.tileM / wm;
  q.warpTileN = p.tileN / wn;
  q.threads = wm * wn * 32;
  return q;
}
// The squarest warp tile reuses fragments best (lower is better).
double warpTileScore(const KernelPlan& p, int wm, int wn) {
  return std::fabs(std::log2(double(p.tileM / wm) / double(p.tileN / wn)));
}

// The 8-warp form of a GEMM tile that runs 4 warps of 128 accumulators per thread (KernelPlan::moreWarpsM): the
// squarest arrangement the copiers, the epilogue and the register rules allow, or 0 x 0. The rules above are
// measured thresholds, not a model of ptxas, and heavy random kernels still find a 4-warp tile of 128 accumulators
// that spills at every epilogue width now and then (docs/perf-notes.md v40-v41); on 8 warps (64 accumulators) every
// such kernel measured built clean at 146-158 registers. `kdlc build` compiles this form only where every try of
// the 4-warp one spills. Only where the launch's shared memory stays what the plan says (the epilogue's per-warp
// staging grows with the warps; the mainloop's stages almost always hold more).
std::pair<int, int> moreWarpsForm(const KernelPlan& p, int stages) {
  if (p.conv() || p.threads != 128 || p.warpTileM * p.warpTileN / 32 != 128) return {0, 0};
  auto smem = [&](int wm, int wn) {
    KernelPlan q = withWarps(p, wm, wn);
    q.stages = stages;  // not planned yet (lowerPipeline)
    return gemm_sm80_smem_bytes(sm80SmemShape(q));
  };
  std::pair<int, int> best{0, 0};
  double bestScore = 1e9;
  for (int wm = 1; wm <= 8; wm *= 2) {
    const int wn = 8 / wm;
    if (!warpProblem(p, wm, wn).empty() || !multistageRegisterProblem(withWarps(p, wm, wn)).empty() ||
        smem(wm, wn) != smem(p.warpsM, p.warpsN))
      continue;
    if (const double score = warpTileScore(p, wm, wn); score < bestScore - 1e-9) {
      bestScore = score;
      best = {wm, wn};
    }
  }
  return best;
}

WarpChoice chooseWarps(const KernelPlan& p) {
  // Fewer warps when the tile is too small for the preferred count; more when the preferred count's warp tiles
  // would need more registers than a thread has (multistageRegisterProblem: e.g. 128 x 128 with operands aligned
  // below 16 bytes, whose copies on 4 warps spill, runs on 8).
  std::vector<int> counts = wantsEightWarps(p) ? std::vector<int>{8, 4, 2, 1} : std::vector<int>{4, 8, 2, 1};
  WarpChoice best;
  std::string firstProblem, registerProblem;
  double registerScore = 1e9;
  for (int warps : counts) {
    double bestScore = 1e9;
    for (int wm = 1; wm <= warps; wm *= 2) {
      int wn = warps / wm;
      std::string problem = warpProblem(p, wm, wn);
      if (!problem.empty()) {
        if (firstProblem.empty()) firstProblem = problem;
        continue;
      }
      // the squarest warp tile reuses fragments best; ties go to more warps along M
      const double score = warpTileScore(p, wm, wn);
      if (std::string r = multistageRegisterProblem(withWarps(p, wm, wn)); !r.empty()) {
        if (warps == counts[0] && score < registerScore - 1e-9) {  // the preferred count's squarest: the message
          registerScore = score;
          registerProblem = r;
        }
        if (registerProblem.empty()) registerProblem = r;
        continue;
      }
      if (score < bestScore - 1e-9) {
        bestScore = score;
        best.wm = wm;
        best.wn = wn;
      }
    }
    if (best.wm) {
      best.preferredProblem = registerProblem;
      return best;
    }
  }
  best.registers = !registerProblem.empty();
  best.problem = best.registers ? registerProblem : firstProblem;
  return best;
}

std::string swizzleText(const OperandPlan& o, const CopierShape& c) {
  std::string dim = c.contigK ? "K" : (o.name == "A" ? "M" : "N");
  std::string key = c.rowBytes == 64 ? "Swizzle<3,4,3>: two rows per 128-byte line, chunk ^= line % 8"
                                     : "16-byte chunk ^= row % 8";
  return fmt::format("{} rows x {} B ({}-contiguous), {}; {} B per stage", c.rows, c.rowBytes, dim, key, c.bytes);
}

std::string rangeText(const std::array<int, 3>& t) { return fmt::format("{} x {} x {}", t[0], t[1], t[2]); }

// The tile's K must be whole mma k-steps, at least two of them.
bool checkTileK(Lowering& l) {
  const KernelPlan& p = l.plan;
  int kBytes = p.tileK * p.a.elementBytes;
  if (kBytes % 32 == 0 && kBytes >= 64) return true;
  l.unsupported(l.spec.tile.loc, fmt::format("tile K = {} covers {} bytes of {}; the sm80 path needs a multiple of 32 "
                                             "bytes and at least 64 (tile K >= {})",
                                             p.tileK, kBytes, dtypeWord(p.a.dtype), 64 / p.a.elementBytes));
  return false;
}

}  // namespace

bool lowerTiling(Lowering& l) {
  const KernelSpec& s = l.spec;
  KernelPlan& p = l.plan;
  p.tileM = s.tile.value[0];
  p.tileN = s.tile.value[1];
  p.tileK = s.tile.value[2];
  l.decide("tile", rangeText(s.tile.value), originWord(s.tile.origin));
  if (!checkTileK(l)) return false;

  WarpChoice wc = chooseWarps(p);
  if (!wc.wm) {
    l.unsupported(s.tile.loc, wc.registers ? wc.problem
                                           : fmt::format("tile {} cannot be generated on the sm80 path: {}",
                                                         rangeText(s.tile.value), wc.problem));
    return false;
  }
  p.warpsM = wc.wm;
  p.warpsN = wc.wn;
  p.warpTileM = p.tileM / p.warpsM;
  p.warpTileN = p.tileN / p.warpsN;
  p.threads = p.warpsM * p.warpsN * 32;
  l.decide("warps",
           fmt::format("{} x {} = {} warps, {} threads; warp tile {} x {} ({} x {} mma tiles of {}x{})", p.warpsM,
                       p.warpsN, p.warpsM * p.warpsN, p.threads, p.warpTileM, p.warpTileN, p.warpTileM / 16,
                       p.warpTileN / 8, 16, 8),
           !wantsEightWarps(p) && p.warpsM * p.warpsN == 8
               ? fmt::format("8 warps: on 4, {}; the squarest warp tile that the copiers and the epilogue divide evenly",
                             wc.preferredProblem.empty()
                                 ? std::string("128 accumulators per thread beside this tile's copies would need more "
                                               "registers than a thread has")
                                 : wc.preferredProblem.substr(0, wc.preferredProblem.rfind("; use ")))
           : !wantsEightWarps(p) ? "4 warps; the squarest warp tile that the copiers and the epilogue divide evenly"
           : p.conv() && p.tileM * p.tileN < 128 * 256
               ? "8 warps: a convolution's gathers hold each row's pixel in registers beside the accumulators, and "
                 "64 x 64 warp tiles would spill; the squarest warp tile that the copiers and the epilogue divide evenly"
               : "8 warps for a large tile; the squarest warp tile that the copiers and the epilogue divide evenly");

  std::tie(p.moreWarpsM, p.moreWarpsN) = moreWarpsForm(p, s.stages.value);
  if (p.moreWarpsM)
    l.decide("more warps",
             fmt::format("{} x {} = 8 warps, 256 threads; warp tile {} x {}", p.moreWarpsM, p.moreWarpsN,
                         p.tileM / p.moreWarpsM, p.tileN / p.moreWarpsN),
             "kdlc build's last try, compiled only where ptxas spills the 4-warp kernel at every epilogue width "
             "(128 accumulators per thread sit near a thread's 255 registers, where ptxas is not monotone); "
             "64 accumulators per thread on 8");

  l.decide("smem A", swizzleText(p.a, copierShape(p.a, p.tileM, p.tileK)),
           "ldmatrix reads 8 rows of one chunk and cp.async writes 8 chunks of a row; the XOR swizzle makes both "
           "conflict-free");
  l.decide("smem B", swizzleText(p.b, copierShape(p.b, p.tileN, p.tileK)), "as for A");
  return true;
}

}  // namespace kdl::codegen
