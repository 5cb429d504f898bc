// Internal to validation (dsl/validate*.cpp): the state of checking one kernel and the passes that
// fill it. Each pass reports its own diagnostics and leaves a field unset when its value is unusable,
// so later rules that need that field are skipped instead of piling up follow-on errors.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/diagnostics.h"
#include "dsl/eval/raw_kernel.h"
#include "dsl/spec.h"

namespace kdl::validation {

inline constexpr std::array kAllDTypes = {DType::F16,  DType::BF16, DType::F32, DType::TF32, DType::F64,
                                          DType::E4M3, DType::E5M2, DType::S8,  DType::U8,   DType::S32};
inline constexpr std::array kAllLayouts = {Layout::Row, Layout::Col, Layout::NHWC, Layout::KRSC};
inline constexpr std::array kAllArchs = {Arch::SM80, Arch::SM86, Arch::SM89, Arch::SM90a, Arch::SM100a};
inline constexpr std::array kAllOps = {Op::Gemm, Op::Conv2dFprop, Op::Conv2dDgrad, Op::Conv2dWgrad};
inline constexpr std::array kAllSchedules = {Schedule::Multistage, Schedule::Cooperative, Schedule::Pingpong};
inline constexpr std::array kAllRasters = {Raster::AlongM, Raster::AlongN};

// The enum value whose name() is `word`.
template <class E, size_t N>
std::optional<E> fromName(const std::array<E, N>& all, std::string_view word) {
  for (E e : all)
    if (word == name(e)) return e;
  return std::nullopt;
}

// ", did you mean `x`?" for a near miss of one of `words`: a word it begins (`sm90` -> `sm90a`) before
// the nearest by edit distance.
std::string suggest(const std::string& text, const std::vector<std::string>& words);
// The hint for a value that should have been one of `words`: "; write `bf16` without quotes" for a
// quoted word, else suggest() for strings and words, else "".
std::string wordHint(const Value& v, const std::vector<std::string>& words);

// What a value is, for "..., not X" in messages: "the dtype `bf16`", "the int `3`", "the string \"sm90\""
// (cut short), "`list`", "nothing".
std::string describe(const Value& v);

// "`a`, `b` or `c`"
std::string quotedList(const std::vector<std::string>& words, const char* lastJoin = " or ");

struct KernelCheck {
  KernelCheck(const RawKernel& r, DiagEngine& d) : raw(r), diags(d) {}
  const RawKernel& raw;
  DiagEngine& diags;

  std::optional<Field<Op>> op;
  std::optional<Field<Arch>> arch;
  std::optional<Field<DType>> accum;
  std::optional<Field<std::array<int, 3>>> tile;
  std::optional<Field<std::array<int, 3>>> cluster;
  // stages: unset with stagesAuto = true means `auto` (or absent), to be decided by shared memory.
  std::optional<Field<int>> stages;
  bool stagesAuto = false;
  SourceLoc stagesAutoLoc;
  Origin stagesAutoOrigin = Origin::Auto;
  std::optional<Field<Schedule>> schedule;
  bool scheduleAuto = false;
  SourceLoc scheduleAutoLoc;
  Origin scheduleAutoOrigin = Origin::Auto;
  std::optional<Field<Raster>> raster;
  std::optional<Field<SplitKMode>> splitK;
  int splitKSlices = 1;
  // promotion: set when given and valid, or (when not given) by checkScaling's default.
  std::optional<Field<int>> promotion;
  // fallback: `none` by default; unset when the value is broken (reported).
  std::optional<Field<Fallback>> fallback;
  std::optional<Field<std::array<int, 2>>> filter;
  std::optional<Field<std::array<int, 2>>> stride;

  std::vector<Operand> operands;  // usable operands, in the spec's order
  // The two MMA inputs (A, B for gemm; the op's two input tensors for conv) once both are usable.
  std::optional<DType> inputA, inputB;
  bool operandsBroken = false;

  Epilogue epilogue;
  size_t sharedMemoryBytes = 0;

  // Whether the kernel sets `field` at all (a field set to a broken value gets no default).
  bool given(std::string_view field) const;
  // The usable operand `name`, or nullptr.
  const Operand* operand(std::string_view name) const;
  // Whether A and B both carry `scale (BM, BK)` (block-scaled fp8; whether the blocks are valid is
  // validate_scaling's to say).
  bool blockScaled() const;
  Origin originOf(const RawField& f) const { return f.fromTemplate ? Origin::Template : Origin::Explicit; }
  template <class T>
  Field<T> defaulted(T value) const {
    return Field<T>{value, raw.nameLoc, Origin::Default};
  }
  // The location to cite in "arch set to ... here" notes (the kernel name when arch is missing).
  SourceLoc archLoc() const { return arch ? arch->loc : raw.nameLoc; }
  void noteArch(Diagnostic& d) const;
  // "schedule set to ... here", where the schedule was written (auto choices have no place to cite).
  void noteSchedule(Diagnostic& d) const;
};

// The name of the op's output tensor: D for gemm, Y/X/W for the convolutions.
const char* outputOperandName(Op op);
// A convolution tensor's layout: the filters W `krsc`, the activations X and Y `nhwc`. The residual and
// extra tensor outputs are laid out like the op's output: convTensorLayout(outputOperandName(op)).
Layout convTensorLayout(std::string_view tensor);
// The op's two MMA input tensors, in (A, B) order.
std::array<const char*, 2> inputOperandNames(Op op);
// The multistage (sm80 mma.sync) path: schedule multistage on any arch, and every convolution but an sm90a
// one with an explicit wgmma schedule (convOnWgmmaPath).
bool onMultistagePath(const KernelCheck& c);
// A convolution on sm90a whose spec asks for a wgmma schedule: the sm90a conv path (kdl::Conv2dSm90Fprop,
// Dgrad, Wgrad).
bool convOnWgmmaPath(const KernelCheck& c);

// validate_fields.cpp: unknown and missing fields, each known field's type and own range.
void readFields(KernelCheck& c);
// validate_operands.cpp: the operand set, dtypes, layouts, alignments, and accum.
void checkOperands(KernelCheck& c);
// validate_arch.cpp: defaults that depend on arch and dtype, tile shapes, clusters, schedules,
// stages and shared memory.
void checkArchRules(KernelCheck& c);
// validate_epilogue.cpp: the typed epilogue (or the implicit one).
void checkEpilogue(KernelCheck& c);
// validate_scaling.cpp: fp8 block scales on operands and the `promotion` field.
// readScaleBlock: an operand's `scale (BM, BK)` suffix, its type and range, into out.scaleBlock (false
// when it is malformed, reported). readPromotion: the field's type and range.
bool readScaleBlock(KernelCheck& c, const RawOperand& o, Operand& out);
void readPromotion(KernelCheck& c, const RawField& f);
// Before checkArchRules: a block-scaled sm90a kernel's default tile is (128, 128, 128), one scale
// block of K per k-tile.
void defaultBlockScaledTile(KernelCheck& c);
// After checkArchRules: where block scales may go (fp8 gemm A and B, both, supported blocks, sm90a
// wgmma, tile K = the blocks' K), and `promotion`'s rules and default.
void checkScaling(KernelCheck& c);
// validate_fallback.cpp: the `fallback` field's value, and where it may go (sm90a wgmma kernels whose
// inputs the sm80 path can run). What the sm80 path does not generate yet (an epilogue's types, ...)
// is codegen's [unsupported], at the field (codegen/lower_fallback.cpp).
void readFallback(KernelCheck& c, const RawField& f);
void checkFallback(KernelCheck& c);

}  // namespace kdl::validation
