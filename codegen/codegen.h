// Code generation: validated KernelSpecs -> kernel plans (every template parameter decided and
// explained) -> standalone .cu/.h files per kernel plus manifest.json.
#pragma once
#include <string>
#include <vector>

#include "dsl/diagnostics.h"
#include "dsl/eval/raw_kernel.h"
#include "dsl/source.h"
#include "dsl/spec.h"

namespace kdl::codegen {

struct KernelPlan;  // codegen/plan.h

struct EmittedFile {
  std::string path;      // relative to the output directory, e.g. "gemm_bf16_tn.cu"
  std::string contents;
};

struct EmitOptions {
  std::string specName;   // the spec file as the user named it, for the header comment (no absolute path)
  std::string specHash;   // sha256 of the spec and every file it imports (manifest.json only)
  // `kdlc emit --torch` (when torchNamespace is not empty): also <torchStem>_torch.cpp, the PyTorch extension
  // whose ops are torch.ops.<torchNamespace>.KERNEL, and <torchStem>_torch_build.py, which builds it
  // (codegen/emit_torch.cpp, docs/torch.md); manifest.json describes them under "torch".
  std::string torchNamespace;
  std::string torchStem;  // the spec file's name without .kdl
};

// The default namespace of a spec's PyTorch ops: kdl_<stem>, every character outside [A-Za-z0-9_] made `_`.
std::string defaultTorchNamespace(const std::string& stem);

// Lowers every spec; specs this version cannot generate yet get an [unsupported] error at the field
// that makes them so, and no plan.
std::vector<KernelPlan> lower(const std::vector<KernelSpec>& specs, DiagEngine& diags);

// codegen/suggest_tile.cpp: for every kernel of `raw` with an error (reported from diagnostic `firstDiag` on) at
// its own `tile`, the nearest tile on which the kernel alone passes validation and lowering, as a note on that
// error ("`tile = (M, N, K);` passes `kdlc check` for kernel `k` ..."); none where no tile does.
void noteAcceptedTiles(const EvalResult& raw, DiagEngine& diags, size_t firstDiag = 0);

// Renders plans as text for `kdlc list --plan`: each decision with its reason.
std::string renderPlans(const std::vector<KernelPlan>& plans);

// The files of every plan plus manifest.json, deterministic, in a stable order.
std::vector<EmittedFile> emit(const std::vector<KernelPlan>& plans, const EmitOptions& options);

}  // namespace kdl::codegen
