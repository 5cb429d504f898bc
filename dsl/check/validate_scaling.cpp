// fp8 scaling inside the mainloop: block scales on the operands (`A : e4m3 row scale (1, 128);`) and
// the `promotion` field. (Per-tensor and per-row/column scales are epilogue inputs: validate_epilogue.cpp.)
//
// Block scales follow DeepGEMM: one f32 scale per 1 x 128 block of A (per row and 128 of K) and per
// 128 x 128 block of B; the sm90a mainloop accumulates each k-tile of 128 in a wgmma accumulator and
// adds it, times its two scales, into an f32 accumulator. So a k-tile is exactly one block of K.
#include <climits>
#include <string>

#include "dsl/check/validate_rules.h"

namespace kdl::validation {
namespace {

std::string str(int64_t v) { return std::to_string(v); }
std::string blockText(const std::array<int, 2>& b) { return "(" + str(b[0]) + ", " + str(b[1]) + ")"; }

// The blocks the sm90a block-scaled mainloop supports, per operand: A (BM, BK), B (BN, BK). (The
// template, kdl::sm90::BlockScaling<BM, BN, BK>, is written for any; this is the set it is built and
// tested for. Another block is one more line here, in kSupportedText and in docs/language.md.)
constexpr std::array<int, 2> kBlockA = {1, 128};
constexpr std::array<int, 2> kBlockB = {128, 128};
constexpr int kBlockK = 128;
const char* kSupportedText =
    "the sm90a path supports A `scale (1, 128)` (one scale per row and 128 of K) with B `scale (128, 128)` "
    "(one per 128 columns and 128 of K)";

bool isSm90a(const KernelCheck& c) { return c.arch && c.arch->value == Arch::SM90a; }

bool scaled(const Operand* o) { return o && o->scaleBlock; }

// Where a block scale may go, and of what type: the gemm inputs, fp8, a supported block.
bool checkScaledOperand(KernelCheck& c, const Operand& o) {
  std::string on = "`" + o.name + "`";
  if (c.op->value != Op::Gemm) {
    c.diags.error(DiagKind::Scaling, o.scaleLoc,
                  std::string("block scales are for the gemm inputs A and B; ") + name(c.op->value) +
                      " operands do not take them");
    return false;
  }
  if (o.name != "A" && o.name != "B") {
    c.diags.error(DiagKind::Scaling, o.scaleLoc,
                  "only the gemm inputs A and B take block scales, not " + on + "; scale the output in the "
                  "epilogue (`input s : f32 [];`)");
    return false;
  }
  if (!isFloat8(o.dtype)) {
    c.diags.error(DiagKind::Scaling, o.scaleLoc,
                  "block scales are for fp8 inputs (e4m3, e5m2), and " + on + " is " + name(o.dtype));
    return false;
  }
  const std::array<int, 2>& want = o.name == "A" ? kBlockA : kBlockB;
  if (*o.scaleBlock != want) {
    c.diags.error(DiagKind::Scaling, o.scaleLoc,
                  "block scales " + blockText(*o.scaleBlock) + " on " + on + " are not supported; " + kSupportedText);
    return false;
  }
  return true;
}

// Returns whether both A and B declare block scales (whatever else is wrong with them): promotion's
// rules and default follow from that.
bool checkBlockScales(KernelCheck& c) {
  if (!c.op) return false;
  bool ok = true;
  const Operand* first = nullptr;
  for (const Operand& o : c.operands) {
    if (!o.scaleBlock) continue;
    if (!first) first = &o;
    ok = checkScaledOperand(c, o) && ok;
  }
  const Operand* A = c.operand("A");
  const Operand* B = c.operand("B");
  const bool both = c.blockScaled();
  if (!first || !ok || c.op->value != Op::Gemm) return both;
  if (!both) {
    const Operand* has = scaled(A) ? A : B;
    const Operand* lacks = has == A ? B : A;
    if (!lacks) return false;  // broken, and reported
    c.diags
        .error(DiagKind::Scaling, has->scaleLoc,
               "`" + has->name + "` has block scales but `" + lacks->name + "` does not; block scaling needs both (" +
                   kSupportedText + ")")
        .notes.push_back({lacks->loc, "`" + lacks->name + "` declared here"});
    return false;
  }
  if (!c.arch) return both;
  if (!isSm90a(c)) {
    Diagnostic& d = c.diags.error(DiagKind::ArchFeature, A->scaleLoc,
                                  std::string("block scales are applied in the sm90a wgmma mainloop, which ") +
                                      name(c.arch->value) + " does not have");
    c.noteArch(d);
    return both;
  }
  if (!c.schedule) return both;
  if (onMultistagePath(c)) {
    Diagnostic& d = c.diags.error(DiagKind::Scaling, A->scaleLoc,
                                  "block scales are applied in the sm90a wgmma mainloop, which schedule `multistage` "
                                  "does not use; use `cooperative`, `pingpong` or `auto`");
    c.noteSchedule(d);
    return both;
  }
  if (c.tile && c.tile->value[2] != kBlockK) {
    c.diags
        .error(DiagKind::Scaling, c.tile->loc,
               "tile K = " + str(c.tile->value[2]) + ", but with block scales tile K must be the blocks' K, " +
                   str(kBlockK) + ": the mainloop promotes once per k-tile, with one scale block of K per k-tile")
        .notes.push_back({A->scaleLoc, "block scales declared here"});
  }
  return both;
}

std::string inputTypesText(const KernelCheck& c) {
  std::string a = name(*c.inputA), b = name(*c.inputB);
  return a == b ? a : a + " and " + b;
}

void resolvePromotion(KernelCheck& c, bool blockScaled) {
  if (!c.promotion) {
    if (!c.given("promotion")) c.promotion = c.defaulted(blockScaled ? 1 : 0);
    return;
  }
  const Field<int>& p = *c.promotion;
  if (c.inputA && c.inputB && !(isFloat8(*c.inputA) && isFloat8(*c.inputB))) {
    c.diags.error(DiagKind::Scaling, p.loc,
                  "`promotion` is for fp8 inputs (e4m3, e5m2), whose wgmma accumulation keeps fewer bits; this "
                  "kernel's inputs are " + inputTypesText(c));
    c.promotion.reset();
    return;
  }
  if (c.arch && !isSm90a(c)) {
    Diagnostic& d = c.diags.error(DiagKind::ArchFeature, p.loc,
                                  std::string("`promotion` sets how the sm90a wgmma path accumulates fp8, and ") +
                                      name(c.arch->value) + " does not have that path");
    c.noteArch(d);
    c.promotion.reset();
    return;
  }
  if (c.schedule && onMultistagePath(c)) {
    Diagnostic& d = c.diags.error(DiagKind::Scaling, p.loc,
                                  "`promotion` sets how the sm90a wgmma path accumulates fp8, which schedule "
                                  "`multistage` does not use");
    c.noteSchedule(d);
    c.promotion.reset();
    return;
  }
  if (blockScaled && p.value != 1) {
    const Operand* A = c.operand("A");
    Diagnostic& d = c.diags.error(DiagKind::Scaling, p.loc,
                                  "with block scales the mainloop promotes every k-tile (each k-block gets its own "
                                  "scales), so `promotion` must be 1 or left out, not " +
                                      (p.value == 0 ? std::string("`fast`") : str(p.value)));
    if (A) d.notes.push_back({A->scaleLoc, "block scales declared here"});
    c.promotion.reset();
  }
}

}  // namespace

bool readScaleBlock(KernelCheck& c, const RawOperand& o, Operand& out) {
  out.scaleLoc = o.scaleLoc;
  if (o.scale.isNone()) return true;  // not given (or its evaluation failed, which was reported)
  const Value& v = o.scale;
  std::string what = "the scale block of `" + o.name + "` must be a tuple of two ints (" +
                     (o.name == "B" ? "BN" : "BM") + ", BK), e.g. `scale " +
                     blockText(o.name == "B" ? kBlockB : kBlockA) + "`";
  if (!v.isTuple() || v.items().size() != 2) {
    c.diags.error(DiagKind::FieldType, o.scaleLoc, what + ", not " + describe(v));
    return false;
  }
  std::array<int, 2> block{};
  for (size_t i = 0; i < 2; ++i) {
    const Value& e = v.items()[i];
    if (!e.isInt()) {
      c.diags.error(DiagKind::FieldType, o.scaleLoc, what + "; its element " + str(i) + " is " + describe(e));
      return false;
    }
    if (e.asInt() < 1 || e.asInt() > INT_MAX) {
      c.diags.error(DiagKind::FieldRange, o.scaleLoc,
                    "scale block " + std::string(i == 0 ? (o.name == "B" ? "BN" : "BM") : "BK") + " = " +
                        str(e.asInt()) + " of `" + o.name + "` is out of range; block sizes are positive");
      return false;
    }
    block[i] = static_cast<int>(e.asInt());
  }
  out.scaleBlock = block;
  return true;
}

void readPromotion(KernelCheck& c, const RawField& f) {
  const Value& v = f.value;
  if (v.isWord(WordCategory::Promotion)) {
    c.promotion = Field<int>{0, f.valueLoc, c.originOf(f)};
    return;
  }
  if (v.isInt()) {
    if (v.asInt() < 1 || v.asInt() > INT_MAX) {
      c.diags.error(DiagKind::FieldRange, f.valueLoc,
                    "promotion = " + str(v.asInt()) +
                        " is out of range; promote every N >= 1 k-tiles, or write `fast` for no promotion");
      return;
    }
    c.promotion = Field<int>{static_cast<int>(v.asInt()), f.valueLoc, c.originOf(f)};
    return;
  }
  c.diags.error(DiagKind::FieldType, f.valueLoc,
                "`promotion` must be `fast` or an int N >= 1 (promote every N k-tiles), not " + describe(v) +
                    wordHint(v, {"fast"}));
}

void defaultBlockScaledTile(KernelCheck& c) {
  const Operand* A = c.operand("A");
  if (c.tile || c.given("tile") || !isSm90a(c) || !scaled(A) || *A->scaleBlock != kBlockA) return;
  c.tile = c.defaulted(std::array<int, 3>{128, 128, kBlockK});
}

void checkScaling(KernelCheck& c) { resolvePromotion(c, checkBlockScales(c)); }

}  // namespace kdl::validation
