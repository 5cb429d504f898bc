// Lowering step: the tile, the warps that run it and the shared-memory layout of A and B, within the
// sm80 multistage GEMM's own constraints (the static_asserts of include/kdl/gemm_sm80.cuh's
// TileCopier and GemmSm80, checked here first so that a bad tile is an error at its line, not a
// compile error in the template).
#include <fmt/format.h>

#include <cmath>

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

WarpChoice chooseWarps(const KernelPlan& p) {
  // Fewer warps when the tile is too small for the preferred count.
  std::vector<int> counts = wantsEightWarps(p) ? std::vector<int>{8, 4, 2, 1} : std::vector<int>{4, 2, 1, 8};
  WarpChoice best;
  std::string firstProblem;
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
      double score = std::fabs(std::log2(double(p.tileM / wm) / double(p.tileN / wn)));
      if (score < bestScore - 1e-9) {
        bestScore = score;
        best.wm = wm;
        best.wn = wn;
      }
    }
    if (best.wm) return best;
  }
  best.problem = firstProblem;
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
    l.unsupported(s.tile.loc, fmt::format("tile {} cannot be generated on the sm80 path: {}", rangeText(s.tile.value),
                                          wc.problem));
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
           !wantsEightWarps(p) ? "4 warps; the squarest warp tile that the copiers and the epilogue divide evenly"
           : p.conv() && p.tileM * p.tileN < 128 * 256
               ? "8 warps: a convolution's gathers hold each row's pixel in registers beside the accumulators, and "
                 "64 x 64 warp tiles would spill; the squarest warp tile that the copiers and the epilogue divide evenly"
               : "8 warps for a large tile; the squarest warp tile that the copiers and the epilogue divide evenly");

  l.decide("smem A", swizzleText(p.a, copierShape(p.a, p.tileM, p.tileK)),
           "ldmatrix reads 8 rows of one chunk and cp.async writes 8 chunks of a row; the XOR swizzle makes both "
           "conflict-free");
  l.decide("smem B", swizzleText(p.b, copierShape(p.b, p.tileN, p.tileK)), "as for A");
  return true;
}

}  // namespace kdl::codegen
