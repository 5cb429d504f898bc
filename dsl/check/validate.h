// Raw kernels -> validated KernelSpecs. Every broken rule is a located diagnostic; a kernel with
// errors is left out of the result.
#pragma once
#include <vector>

#include "dsl/diagnostics.h"
#include "dsl/eval/raw_kernel.h"
#include "dsl/source.h"
#include "dsl/spec.h"

namespace kdl {

std::vector<KernelSpec> validate(const EvalResult& raw, DiagEngine& diags);

}  // namespace kdl
