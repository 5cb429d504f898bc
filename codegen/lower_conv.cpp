// Lowering step of convolutions (kdl::Conv2dSm80, include/kdl/conv_sm80.cuh): the implicit GEMM an op
// maps to, its A and B (which spec tensor each is, the layout the GEMM reads it in, the iterator that
// gathers it), the residual and the output, the filter and stride the spec fixes, and on sm90a which path
// runs. The tiling, shared memory and arguments are the sm80 (or sm90a) GEMM's steps on this plan.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <string>

#include "codegen/epilogue_expr.h"
#include "codegen/lower_steps.h"
#include "codegen/support.h"
#include "include/kdl/gemm_sm90_smem.h"

namespace kdl::codegen {

namespace {

// What one op is as a GEMM (kdl/conv_problem.h), and how each of its operands is gathered.
struct ConvMapping {
  const char* gemm;  // M, N, K in the problem's words
  const char* why;
  Layout layoutA, layoutB;  // as the GEMM reads them: Row / Col (A row-major = K-contiguous, B col-major = K-contiguous)
  const char* iteratorA;
  const char* iteratorB;
};

ConvMapping convMapping(Op op) {
  switch (op) {
    case Op::Conv2dDgrad:
      return {"M = n*h*w, N = c, K = r*s*k",
              "dgrad: each input pixel (of dX) is a row, each input channel a column; the reduction runs over the "
              "filter taps and the output channels",
              Layout::Row, Layout::Row,
              "dY gather: cp.async 16 B per row (an input pixel), stride_h*stride_w phases (grid.y), each walking only "
              "its taps (no multiply by zero, no scatter), per-tap pixel masks, no divisions in the mainloop",
              "W by taps: each k-tile one tap's k x c block, N-contiguous (c); channels past c zero-filled"};
    case Op::Conv2dWgrad:
      return {"M = k, N = r*s*c, K = n*p*q",
              "wgrad: each filter (output channel) is a row, each (tap, input channel) a column; the reduction runs "
              "over every output pixel of every image",
              Layout::Col, Layout::Row,
              "dY by pixels: each k-tile TileK output pixels x the tile's k channels (M-contiguous); pixel rows found "
              "by multiply-shift division once per k-tile",
              "X gather by pixels: each (tap, channel) column reads the input pixel its output pixel sees; pixel rows "
              "found by multiply-shift division once per row and k-tile, per-tap pixel masks"};
    default:
      return {"M = n*p*q, N = k, K = r*s*c",
              "fprop: each output pixel is a row, each output channel a column; the reduction runs over the filter "
              "taps and the input channels",
              Layout::Row, Layout::Col,
              "activation gather: cp.async 16 B per row (an output pixel), per-tap pixel masks (padding zero-fills), "
              "no divisions in the mainloop",
              "W by filters: each row one filter k, each k-tile one tap's channel block (K-contiguous); channels past "
              "c zero-filled"};
  }
}

// The GEMM operand `gemmName` ("A" or "B") holding the spec's tensor `from`, read in `layout`.
OperandPlan gemmOperand(const std::string& gemmName, const Operand& from, Layout layout) {
  OperandPlan o = operandPlan(gemmName, from.dtype, layout, from.align);
  o.source = from.name;
  return o;
}

void decideConvOperand(Lowering& l, const OperandPlan& o, const char* iterator) {
  const Operand& so = *l.spec.operand(o.source);
  const std::string contig = o.contigK ? "K" : (o.name == "A" ? "M" : "N");
  l.decide(o.name,
           fmt::format("{} ({} {}, align {} = {} B): {}", o.source, dtypeWord(so.dtype), layoutWord(so.layout), o.align,
                       o.align * o.elementBytes, iterator),
           fmt::format("the GEMM's {} is {}, read {}-contiguous ({}); alignment {}", o.name, o.source, contig,
                       o.cppLayout, so.alignOrigin == Origin::Default ? "defaults to 16 bytes, the widest cp.async"
                                                                      : originWord(so.alignOrigin)));
}

// A (R, S) or (h, w) pair the spec may fix: the template parameters, and the decision that says which.
void decideFixed(Lowering& l, const char* what, const Field<std::array<int, 2>>& f, const char* args, int& x, int& y) {
  x = f.value[0];
  y = f.value[1];
  if (x == 0 && y == 0) {
    l.decide(what, fmt::format("run time ({})", args),
             fmt::format("{}: not fixed in the spec, so Arguments gives it", originWord(f.origin)));
    return;
  }
  l.decide(what, fmt::format("{} x {} (fixed; Arguments must keep {} = {}, {})", x, y, args, x, y),
           fmt::format("{}: a compile-time constant, so the tap loop and the pixel offsets fold", originWord(f.origin)));
}

// sm90a: the wgmma path (a wgmma schedule), or the sm80 mainloop compiled for sm_90a, and why.
void decideConvPath(Lowering& l) {
  if (l.plan.path == KernelPath::ConvSm90) {
    const char* needs = "";
    switch (l.spec.op.value) {
      case Op::Conv2dDgrad:
        needs = "dY loaded by TMA in im2col mode with W's taps flipped, W by tiled TMA; needs stride 1 and the flipped "
                "filter's im2col corners in -128 .. 127 at run time";
        break;
      case Op::Conv2dWgrad:
        needs = "dY loaded by tiled TMA, X by TMA in im2col mode; needs c a multiple of 64, dW's taps packed, strides <= "
                "8 at run time";
        break;
      default:
        needs = "batched over images, X loaded by TMA in im2col mode, W by tiled TMA as {c, r*s, k}; needs strides "
                "<= 8 and the im2col corners in -128 .. 127 at run time";
        break;
    }
    l.decide("path", fmt::format("{} (include/kdl/conv_sm90.cuh)", l.plan.deviceTemplate()),
             fmt::format("schedule = {} ({}) on sm90a: kdl::GemmSm90's warp-specialized wgmma mainloop and epilogue, {} "
                         "(can_implement says which fails); `schedule = multistage` takes any problem",
                         name(l.spec.schedule.value), originWord(l.spec.schedule.origin), needs));
    return;
  }
  if (l.plan.arch != Arch::SM90a) {
    l.decide("path", "kdl::Conv2dSm80 (include/kdl/conv_sm80.cuh)",
             "a convolution: the implicit GEMM on kdl::GemmSm80's multistage mainloop (cp.async gathers, ldmatrix, "
             "mma.sync) and epilogue");
    return;
  }
  // (The validator resolves `auto` to multistage for a convolution: only an explicit wgmma schedule on
  // fprop takes the wgmma path.)
  const Field<Schedule>& sched = l.spec.schedule;
  std::string schedule = fmt::format("schedule = {} ({})", name(sched.value), originWord(sched.origin));
  if (l.spec.op.value == Op::Conv2dFprop)
    schedule += "; `schedule = cooperative | pingpong` runs the wgmma conv path (TMA im2col) instead";
  l.decide("path", "kdl::Conv2dSm80 (include/kdl/conv_sm80.cuh), compiled for sm_90a",
           fmt::format("sm80 mainloop (mma.sync) compiled for sm_90a, which takes every problem; {}", schedule));
}

// [channel] inputs: one value per output channel, which is the GEMM's column (n) for fprop and dgrad
// and its row (m = the filter k) for wgrad (kdl/conv_problem.h); the epilogue functor reads them so.
void decideChannelInputs(Lowering& l) {
  std::vector<std::string> names;
  for (const EpiInput& in : l.spec.epilogue.inputs)
    if (in.broadcast == Broadcast::Channel) names.push_back(in.name);
  if (names.empty()) return;
  const bool wgrad = l.spec.op.value == Op::Conv2dWgrad;
  l.decide("[channel]", fmt::format("{}: the GEMM's {} broadcast", fmt::join(names, ", "), wgrad ? "row" : "column"),
           wgrad ? "wgrad's output channel k is the GEMM's row m: one value per row of dW"
                 : "the output channel is the GEMM's column n: one value per column, per image (batch stride)");
}

}  // namespace

bool lowerConvOperands(Lowering& l) {
  const KernelSpec& s = l.spec;
  KernelPlan& p = l.plan;
  // The spec's order: the two inputs, then the output (dsl/check/validate_operands.cpp); `residual`
  // anywhere, by name.
  std::vector<const Operand*> tensors;
  for (const Operand& o : s.operands)
    if (o.name != "residual") tensors.push_back(&o);
  const Operand& in0 = *tensors.at(0);
  const Operand& in1 = *tensors.at(1);
  const Operand& out = *tensors.at(2);
  ConvMapping m = convMapping(s.op.value);
  const bool wgmma = p.path == KernelPath::ConvSm90;
  if (wgmma && s.op.value == Op::Conv2dFprop) {
    m.gemm = "per image (batch = image): M = p*q, N = k, K = r*s*c";
    m.why = "fprop batched over images, so the epilogue sees (image, pixel, channel) like the sm80 path and GemmSm90's "
            "epilogue (TMA store of Y) serves unchanged; K walks (channel block of 64, tap) with the tap fastest";
    m.iteratorA = "X by TMA in im2col mode: one load per k-tile of TileM consecutive output pixels at the tap's "
                  "offset, 64 channels each (the tensor map's bounding box is the padding, its traversal strides the "
                  "conv's), zero-filled outside X, into the 128-byte-swizzled K-major stage";
    m.iteratorB = "W by TMA as {c, r*s, k}: per k-tile one box of 64 channels x 1 tap x TileN filters at the k-tile's "
                  "(channel block, tap), zero-filled past c; the same tile for every image, W's taps may be padded";
  } else if (wgmma && s.op.value == Op::Conv2dDgrad) {
    m.gemm = "per image (batch = image): M = h*w, N = c, K = r*s x k (k rounded up to 64)";
    m.why = "unit-stride dgrad is an fprop over dY with W's taps flipped and its k and c swapped; batched over images "
            "so the epilogue sees (image, pixel, channel) like the sm80 path; K walks (block of 64 output channels, "
            "flipped tap) with the tap fastest";
    m.iteratorA = "dY by TMA in im2col mode: one load per k-tile of TileM consecutive input pixels (dX's) at the "
                  "flipped tap's offset, 64 output channels each (the bounding box's corners dil*(filter-1)-pad and pad), "
                  "zero-filled outside dY, into the 128-byte-swizzled K-major stage";
    m.iteratorB = "W by TMA as {c, r*s, k}: per 64 columns one load of the flipped tap's 64 x 64 (k x c) block, "
                  "N-contiguous (MN-major, wgmma's transposed B); channels past c or k zero-filled";
  } else if (wgmma) {
    m.gemm = "M = k, N = r*s*c, K = n*p*q (per image rounded up to 64 pixels when dY's images are not back to back)";
    m.why = "wgrad: each filter is a row, each (tap, input channel) a column; the reduction runs over the output pixels, "
            "64 per k-tile; its output tiles are few, so split_k = serial(N) spreads K over the SMs";
    m.iteratorA = "dY by TMA: per 64 rows one tiled load of 64 output channels x the k-tile's 64 pixels, M-contiguous "
                  "(MN-major, wgmma's transposed A); pixels past the end zero-filled";
    m.iteratorB = "X by TMA in im2col mode: per 64 columns one load of the column block's tap and 64 channels at the "
                  "k-tile's 64 output pixels, N-contiguous (MN-major); padding zero-filled";
  }
  decideConvPath(l);
  l.decide("implicit gemm", m.gemm, m.why);

  p.argA = operandPlan(in0.name, in0.dtype, in0.layout, in0.align);
  p.argB = operandPlan(in1.name, in1.dtype, in1.layout, in1.align);
  p.a = gemmOperand("A", in0, m.layoutA);
  p.b = gemmOperand("B", in1, m.layoutB);
  p.d = operandPlan(out.name, out.dtype, out.layout, out.align);
  if (const Operand* r = s.operand("residual")) {
    p.hasSource = true;
    p.c = operandPlan(r->name, r->dtype, r->layout, r->align);
  }
  const Epilogue& e = s.epilogue;
  for (size_t i = 1; i < e.outputs.size(); ++i)
    if (e.outputs[i].kind == EpiOutput::Kind::Tensor)
      p.extraOutputs.push_back(operandPlan(e.outputs[i].name, e.outputs[i].dtype, e.outputs[i].layout, 1));
  decideConvOperand(l, p.a, m.iteratorA);
  decideConvOperand(l, p.b, m.iteratorB);

  decideFixed(l, "filter", s.filter, "r, s", p.filterR, p.filterS);
  decideFixed(l, "stride", s.stride, "stride_h, stride_w", p.strideH, p.strideW);
  if (!wgmma) decideSm80Math(l, in0.dtype, in1.dtype);
  decideChannelInputs(l);
  return true;
}

// The patch mainloop (kdl::sm90::ConvFpropPatchLoader): fprop with a fixed filter of 2 taps or more at stride
// (1, 1), no cluster, Y's type a whole number of columns per 128-byte box of the tile (Y goes out by TMA;
// the residual and extra outputs by the functor at each row's output row), and two slots beside 2 stages of W in
// shared memory.
bool lowerConvPatch(Lowering& l) {
  KernelPlan& p = l.plan;
  const KernelSpec& s = l.spec;
  if (s.op.value != Op::Conv2dFprop) return true;
  std::string why;
  const int boxCols = 128 / std::max(1, p.d.elementBytes);
  if (p.clusterM * p.clusterN > 1)
    why = "a cluster (the im2col loads are the ones multicast)";
  else if (p.filterR == 0 || p.filterS == 0 || p.filterR * p.filterS < 2)
    why = p.filterR == 0 ? "a run-time filter (the patch's halo is fixed at compile time)"
                         : "a 1 x 1 filter (no taps share input pixels)";
  else if (p.strideH != 1 || p.strideW != 1)
    why = "a stride that is not fixed at (1, 1)";
  else if (p.tileN % boxCols != 0)
    why = fmt::format("a tile of {} columns for {}-byte outputs (Y goes out by TMA in {}-column boxes)", p.tileN,
                      p.d.elementBytes, boxCols);
  p.patchSlotBytes = kdl::conv_patch_slot_bytes(p.tileM, p.filterR > 0 ? p.filterR : 1, p.filterS > 0 ? p.filterS : 1);
  if (why.empty()) {
    p.patchStages = kdl::conv_patch_stages(p.tileM, p.tileN, p.filterR, p.filterS, p.stages, kdl::kGemmSm90SmemLimit);
    if (p.patchStages < 2)
      why = fmt::format("shared memory: two {} KB patches beside two stages of W exceed the 227 KB", p.patchSlotBytes / 1024);
  }
  if (!why.empty()) {
    l.decide("mainloop", "im2col (X by TMA in im2col mode, per k-tile)",
             fmt::format("no patch mainloop: {}", why));
    return true;
  }
  p.convPatch = true;
  // The launch's shared memory: the larger of the two GEMMs' (Conv2dSm90Fprop::kSmemBytes).
  const kdl::GemmSm90SmemShape patchShape{p.a.elementBytes, p.b.elementBytes, p.tileM, p.tileN, 64, p.patchStages, 0, 0,
                                          p.patchSlotBytes};
  p.smemBytes = std::max(p.smemBytes, size_t(kdl::gemm_sm90_smem_bytes(patchShape)));
  l.decide("mainloop",
           fmt::format("patch at dilation 1 where it pays ({}; X's input pixels once per 64-channel block: two {} KB "
                       "slots beside {} stages of W), im2col otherwise",
                       p.schedule == Schedule::Pingpong ? "every problem: pingpong"
                       : p.tileM >= 4 * p.tileN         ? "every problem: TileM >= 4 x TileN"
                                                        : "problems of c <= 64",
                       p.patchSlotBytes / 1024, p.patchStages),
           "fixed filter at stride (1, 1), no cluster, Y stored by TMA: the tile is (TileM / 64) output rows x 64 / G pixels x G images (G = 8 or 16 per problem), each tap's A a "
           "window of the patch; run() takes it for any problem whose images are packed and whose X and Y TMA can "
           "describe and where it measured faster (pingpong, a tile of TileM >= 4 x TileN, or c <= 64; KDL_CONV_MAINLOOP=patch "
           "| im2col forces either), the im2col mainloop for the rest (include/kdl/conv_sm90.cuh, ConvFpropPatchLoader)");
  // The swapped patch mainloop (kdl::sm90::ConvFpropSwap): the pingpong 128 x 128 patch kernels with 16-bit tensors
  // and a pointwise epilogue (its functor computes D on whole rows of registers, no coordinates: D is transposed
  // there), where its two slots leave 4 stages of W.
  std::string swapWhy;
  const int r = p.filterR, sf = p.filterS;
  if (p.schedule != Schedule::Pingpong || p.tileM != 128 || p.tileN != 128)
    swapWhy = "a pingpong 128 x 128 tile only";
  else if (p.a.elementBytes != 2 || p.b.elementBytes != 2 || p.d.elementBytes != 2)
    swapWhy = "16-bit X, W and Y only";
  else if (!isPointwise(p.epilogue))
    swapWhy = "a pointwise epilogue only (no residual, [channel] input, extra output or amax)";
  else if (kdl::conv_swap_stages(r, sf, kdl::kGemmSm90SmemLimit) < 4)
    swapWhy = fmt::format("shared memory: two {} KB patches leave fewer than 4 stages of W",
                          kdl::conv_swap_slot_bytes(r, sf) / 1024);
  if (swapWhy.empty()) {
    p.convSwap = true;
    p.swapStages = kdl::conv_swap_stages(r, sf, kdl::kGemmSm90SmemLimit);
    p.smemBytes = std::max(p.smemBytes, size_t(kdl::conv_swap_smem_bytes(r, sf, kdl::kGemmSm90SmemLimit)));
    l.decide("mainloop swap",
             fmt::format("swap where it pays (n a multiple of 16, q of 8, p of 2, k of 64, c and k >= 128): units of 64 "
                         "filters x 2 output rows x 8 pixels x 16 images, D transposed; two {} KB slots beside {} stages of "
                         "W's 8 KB",
                         kdl::conv_swap_slot_bytes(r, sf) / 1024, p.swapStages),
             "a pingpong 128 x 128 patch kernel with 16-bit tensors and a pointwise epilogue: W is the wgmma's A (64 "
             "filters), two windows of the patch its B (128 pixels each); it ran 2.7-2.9 % faster than the patch GEMM "
             "on the first 3x3 shape of ANCHORS.md (H200, docs/perf-notes.md v61); run() takes it at dilation 1 where "
             "it pays and TMA can describe X and Y, KDL_CONV_MAINLOOP=swap wherever it can run (include/kdl/"
             "conv_sm90_swap.cuh)");
  } else {
    l.decide("mainloop swap", "none", fmt::format("no swapped mainloop: {}", swapWhy));
  }
  return true;
}

bool lowerConvSm90Math(Lowering& l) {
  KernelPlan& p = l.plan;
  p.accumCpp = "float";
  l.decide("accumulator", "float", fmt::format("accum = f32 ({})", originWord(l.spec.accum.origin)));
  p.mmaShape = fmt::format("wgmma m64n{}k16", l.spec.tile.value[1]);
  l.decide("mma", fmt::format("wgmma.mma_async.m64n{}k16 ({} x {} from shared memory)", l.spec.tile.value[1],
                              dtypeWord(p.a.dtype), dtypeWord(p.b.dtype)),
           "the sm90a warpgroup MMA: A and B (the implicit GEMM's tiles, loaded by TMA) read through matrix "
           "descriptors");
  return true;
}

}  // namespace kdl::codegen
