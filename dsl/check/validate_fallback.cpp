// The `fallback` field: `none` (the default) or `sm80`, the sm80-path (multistage, mma.sync) kernel an
// sm90a kernel's host side runs where the sm90a kernel cannot: on a GPU other than compute capability
// 9.0, or with arguments TMA cannot describe. Here: the value, and the rules of the language (an sm90a
// wgmma kernel whose inputs the sm80 path can multiply). What the sm80 path does not generate yet
// (an epilogue type, a C layout) is codegen's [unsupported] at this field (codegen/lower_fallback.cpp).
#include <string>

#include "dsl/check/validate_rules.h"
#include "dsl/words.h"

namespace kdl::validation {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The sm80 path loads A and B in cp.async copies of at least 4 bytes (include/kdl/copy_sm80.cuh).
constexpr int kSm80MinCopyBytes = 4;

const Operand* usable(const KernelCheck& c, const char* n) {
  for (const Operand& o : c.operands)
    if (o.name == n) return &o;
  return nullptr;
}

// One [fallback] error at the field, with a note at what it is about.
void refuse(KernelCheck& c, const std::string& message, SourceLoc noteLoc = {}, const std::string& note = "") {
  Diagnostic& d = c.diags.error(DiagKind::Fallback, c.fallback->loc, message);
  if (noteLoc.valid()) d.notes.push_back({noteLoc, note});
}

}  // namespace

void readFallback(KernelCheck& c, const RawField& f) {
  const Value& v = f.value;
  if (v.isWord(WordCategory::Fallback)) {
    c.fallback = Field<Fallback>{Fallback::None, f.valueLoc, c.originOf(f)};
    return;
  }
  if (v.isWord(WordCategory::Arch)) {
    if (v.asString() == name(Fallback::Sm80)) {
      c.fallback = Field<Fallback>{Fallback::Sm80, f.valueLoc, c.originOf(f)};
      return;
    }
    c.diags.error(DiagKind::FieldRange, f.valueLoc,
                  "fallback = " + v.asString() +
                      " is not a fallback kdlc generates; write `sm80` (the multistage mma.sync path, whose code runs "
                      "on every GPU from compute capability 8.0, the H100 included) or `none`");
    return;
  }
  c.diags.error(DiagKind::FieldType, f.valueLoc,
                "`fallback` must be `none` or `sm80`, not " + describe(v) + wordHint(v, {"none", "sm80"}));
}

void checkFallback(KernelCheck& c) {
  if (!c.fallback || c.fallback->value == Fallback::None || !c.arch || !c.schedule) return;
  if (c.arch->value != Arch::SM90a) {
    const int n = archNumber(c.arch->value);
    Diagnostic& d = c.diags.error(
        DiagKind::Fallback, c.fallback->loc,
        std::string("`fallback = sm80` is for sm90a kernels, whose code runs only on compute capability 9.0; an ") +
            name(c.arch->value) + " kernel runs on every GPU from compute capability " + str(n / 10) + "." +
            str(n % 10) + " already");
    c.noteArch(d);
    return;
  }
  if (c.schedule->value == Schedule::Multistage) {
    Diagnostic& d = c.diags.error(DiagKind::Fallback, c.fallback->loc,
                                  "`fallback = sm80` is for the sm90a wgmma schedules (cooperative, pingpong); with "
                                  "schedule `multistage` the kernel is an sm80-path kernel already");
    c.noteSchedule(d);
    return;
  }
  // The inputs: what the sm80 path's mma.sync multiplies (the same type for A and B, no fp8) and loads
  // (copies of at least 4 bytes).
  const Operand* A = usable(c, "A");
  const Operand* B = usable(c, "B");
  if (!A || !B) return;  // not a gemm, or its operands are reported
  for (const Operand* o : {A, B})
    if (isFloat8(o->dtype)) {
      refuse(c,
             std::string("`fallback = sm80` cannot run fp8 inputs (`") + o->name + "` is " + name(o->dtype) +
                 "): sm80 has no fp8 tensor cores and kdlc's sm80 path multiplies f16, bf16, tf32 and s8; drop "
                 "`fallback` for fp8 kernels",
             o->loc, std::string("`") + o->name + "` declared here");
      return;
    }
  auto math = [](DType t) { return t == DType::F32 ? DType::TF32 : t; };
  if (math(A->dtype) != math(B->dtype)) {
    refuse(c,
           std::string("`fallback = sm80` needs A and B of one type, which the sm80 path's mma.sync multiplies; A is ") +
               name(A->dtype) + " and B " + name(B->dtype),
           B->loc, "B declared here");
    return;
  }
  for (const Operand* o : {A, B}) {
    const int bytes = o->align * bytesOf(o->dtype);
    if (bytes >= kSm80MinCopyBytes) continue;
    refuse(c,
           "align " + str(o->align) + " (" + str(bytes) + " bytes) for `" + o->name +
               "` is too small for `fallback = sm80`: the sm80 path loads inputs in copies of at least " +
               str(kSm80MinCopyBytes) + " bytes; use align " + str(kSm80MinCopyBytes / bytesOf(o->dtype)) + " or more",
           o->alignLoc.valid() ? o->alignLoc : o->loc, std::string("`") + o->name + "`'s alignment set here");
  }
}

}  // namespace kdl::validation
