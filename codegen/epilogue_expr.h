// The epilogue expression tree as C++ (for the generated functor) and as source-like text (for
// plans and manifests).
#pragma once
#include <string>

#include "dsl/spec.h"

namespace kdl::codegen {

struct KernelPlan;

// C++ float (or bool, for comparisons) expression of `node`, evaluated at column i of the apply loop.
// Names: acc[i]; C -> src_C[i]; params -> p.NAME; [row]/[col] inputs -> in_NAME[i];
// [] inputs -> in_NAME; lets -> let_NAME; outputs -> out_NAME[i].
std::string cppExpr(const Epilogue& e, const EpiNode& node);
// True when cppExpr(node) has type bool.
bool isBoolExpr(const Epilogue& e, const EpiNode& node);
// A float literal for a constant ("1.0f", "0.5f", "INFINITY").
std::string floatLiteral(double v);
// Source-like rendering: gelu(alpha * acc + bias).
std::string renderExpr(const Epilogue& e, const EpiNode& node);
// "D = relu(acc + bias); Z = acc" — every let and output.
std::string renderEpilogueSummary(const Epilogue& e);
// How many nodes of the epilogue compute `op`: each let counted once (it is computed once), each output's expression
// once (for the register rules of lowering, which count the functions whose inlined code is large).
int countOps(const Epilogue& e, EpiOp op);
// Whether the epilogue reduces an amax (`output amax : f32 = max(abs(...))`).
bool hasAmax(const Epilogue& e);
// Whether the epilogue computes D from the accumulator, params and [] inputs alone: no C (a conv's residual), no
// [row] / [col] / [channel] input (declared, read or not), no extra output, no amax. Its functor's compute then reads
// no coordinate (the generated `kPointwise`), which the swapped conv mainloop needs (kdl/conv_sm90_swap.cuh).
bool isPointwise(const Epilogue& e);
// Whether any let or output divides or calls a math function (exp, log, sqrt, rsqrt, tanh, sigmoid, gelu, gelu_tanh,
// silu): the ops whose inlined code, or IEEE division's called slow path, costs registers of its own (lowering's
// register rules).
bool hasMathOrDivision(const Epilogue& e);
// Whether any let or output reads input `index` (e.inputs[index]). An input no expression reads is still an argument
// (the C ABI keeps its place) but the functor neither loads it nor lets its alignment decide the vector path
// (`kdlc check` warns).
bool usesInput(const Epilogue& e, int index);
// Whether any let or output reads the source operand (C, a convolution's residual). False for an epilogue that
// declares C read (`usesSource`) but whose folded expressions no longer read it: C stays an argument, not loaded.
bool readsSource(const Epilogue& e);
// "row" when a broadcast input holds one value per coordinate row of the kernel (kdl::load_row_broadcast), "col" per
// coordinate column. [row] is one per row of D, a coordinate column when the kernel computes D^T; [channel] is one per
// output channel: the GEMM's column for fprop and dgrad, its row (k) for wgrad.
const char* broadcastAccess(const KernelPlan& p, Broadcast b);
// The epilogue with every subexpression that reads nothing of the kernel (constants only, or lets that folded to one)
// computed at generation time, in float as the device computes it (activations.cuh's formulas, the host's libm in
// place of CUDA's: within an ulp or two of what the kernel would compute), and every select whose condition folds
// replaced by its chosen branch. Params stay run-time values, casts and the output reads (amax of D) stay, and so does
// a negative literal (`-2.0`). The result computes what the original computes: lowering counts and emits it, so a
// constant `gelu_tanh(1.5)` costs neither registers nor a register rule's count. Inputs and C stay arguments even when
// folding leaves no read of them (usesInput then reports them unread).
Epilogue foldConstants(const Epilogue& e);

}  // namespace kdl::codegen
