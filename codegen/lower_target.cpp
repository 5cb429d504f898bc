// Lowering step: the target. Which SASS and PTX nvcc builds, and which GPUs run the result.
#include <fmt/format.h>

#include "codegen/lower_steps.h"

namespace kdl::codegen {

namespace {

// sm80, sm86, sm89: SASS for the arch and for Hopper, plus PTX that newer GPUs JIT-compile.
void portableTarget(Lowering& l, int n) {
  KernelPlan& p = l.plan;
  p.minComputeCapability = n;
  p.gencode = {fmt::format("-gencode=arch=compute_{0},code=sm_{0}", n), "-gencode=arch=compute_90,code=sm_90",
               "-gencode=arch=compute_90,code=compute_90"};
  p.cmakeArchitectures = fmt::format("{}-real;90", n);
  l.decide("target", fmt::format("{}", fmt::join(p.gencode, " ")),
           fmt::format("{} SASS for {} (runs on every {}.x GPU from {}.{}), sm_90 SASS for Hopper, and compute_90 PTX "
                       "that newer GPUs JIT-compile",
                       fmt::format("sm_{}", n), p.archName, n / 10, n / 10, n % 10));
}

// sm90a: architecture-specific code, for compute capability 9.0 only.
void hopperOnlyTarget(Lowering& l) {
  KernelPlan& p = l.plan;
  p.minComputeCapability = 90;
  p.exactComputeCapability = true;
  p.gencode = {"-gencode=arch=compute_90a,code=sm_90a"};
  p.cmakeArchitectures = "90a-real";
  l.decide("target", p.gencode[0], "arch = sm90a: architecture-specific code that runs only on compute capability 9.0");
}

}  // namespace

bool lowerTarget(Lowering& l) {
  KernelPlan& p = l.plan;
  p.arch = l.spec.arch.value;
  p.archName = archWord(p.arch);
  switch (p.arch) {
    case Arch::SM80: portableTarget(l, 80); return true;
    case Arch::SM86: portableTarget(l, 86); return true;
    case Arch::SM89: portableTarget(l, 89); return true;
    case Arch::SM90a: hopperOnlyTarget(l); return true;
    default: return false;  // checkSupported reported it
  }
}

}  // namespace kdl::codegen
