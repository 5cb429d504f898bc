// `kdlc list --plan --json`: the kernel plans as JSON, beside renderPlans' text (codegen.h).
#pragma once
#include <string>
#include <vector>

#include "codegen/plan.h"

namespace kdl::codegen {

// A JSON array with one object per plan: the kernel's name, op and target, the key fields the
// emitters instantiate (tile, warps, stages, shared memory, template instance) and every decision of
// lowering as {"what", "value", "why"}, in the order lowering made them. Deterministic; no trailing
// newline, so the caller can place it inside its own document.
std::string renderPlansJson(const std::vector<KernelPlan>& plans);

}  // namespace kdl::codegen
