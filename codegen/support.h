// What this version of kdlc can generate: the one place that lists the supported combinations of
// op, arch, schedule, element types, layouts and features. lower() consults it before deciding
// anything; everything it rejects is a valid spec that gets an [unsupported] error at the field
// responsible. Extend the tables here when the device templates grow.
#pragma once
#include <string>

#include "dsl/diagnostics.h"
#include "dsl/spec.h"

namespace kdl::codegen {

// One operand element type of the sm80 multistage GEMM (include/kdl/gemm_sm80.cuh).
struct Sm80Mainloop {
  DType operand;      // A and B (the same)
  DType accum;
  bool anyLayout;     // all four A/B layouts; else A row + B col only
  const char* mma;    // mma.sync shape
};

// The mainloop entry for an operand type, or nullptr when the sm80 path has none.
const Sm80Mainloop* findSm80Mainloop(DType operand);
// Element types the epilogue can read (C, inputs) and write (D, extra outputs).
bool isEpilogueElementType(DType t);

// Reports [unsupported] errors for everything in `spec` this version cannot generate; returns
// true when the spec is supported.
bool checkSupported(const KernelSpec& spec, DiagEngine& diags);

}  // namespace kdl::codegen
