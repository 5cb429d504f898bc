// Renders validated specs for `kdlc list`: text (one block per kernel) and JSON.
#pragma once
#include <string>
#include <vector>

#include "dsl/source.h"
#include "dsl/spec.h"

namespace kdl {

std::string renderSpecsText(const SourceManager& sm, const std::vector<KernelSpec>& specs);
// {"kernels":[{"name":..., "op":{"value":"gemm","origin":"explicit","file":..,"line":..,"column":..}, ...}]}
std::string renderSpecsJson(const SourceManager& sm, const std::vector<KernelSpec>& specs);
// Just the array of that document, for a caller that builds the document around it.
std::string renderSpecsJsonArray(const SourceManager& sm, const std::vector<KernelSpec>& specs);
// An epilogue expression in source-like form, e.g. gelu(alpha * acc + bias).
std::string renderEpiNode(const Epilogue& epi, const EpiNode& node);

}  // namespace kdl
