// The epilogue expression tree as C++ (for the generated functor) and as source-like text (for
// plans and manifests).
#pragma once
#include <string>

#include "dsl/spec.h"

namespace kdl::codegen {

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
// Whether any let or output reads input `index` (e.inputs[index]). An input no expression reads is still an argument
// (the C ABI keeps its place) but the functor neither loads it nor lets its alignment decide the vector path
// (`kdlc check` warns).
bool usesInput(const Epilogue& e, int index);

}  // namespace kdl::codegen
