// kdl/gemm_transposed.h -- a GEMM with a column-major D, run as its transpose.
//
// D = A B with D column-major is D^T = B^T A^T with D^T row-major (n x m, the same memory, ld = ldd).
// A column-major B (k x n) is a row-major B^T (n x k) with the same pointer, ld and batch stride, and
// a row-major A is a column-major A^T: the transposed problem needs no copy, only m <-> n and
// A <-> B swapped. kdlc instantiates the device template with B^T as its A and A^T as its B
// (layouts flipped) and wraps it in TransposedGemm, which has the templates' static interface
// (kThreads, kSmemBytes, kMinSmemBytes, can_implement, workspace_size, run) for the caller's problem
// and hands the template the transposed one. The generated Epilogue knows it: its coordinates are
// those of D^T (coord.m is a column of D, coord.n .. coord.n + V - 1 are rows of it), so a [row]
// input is read per coordinate column, a [col] one per coordinate row, and a row-major C or extra
// output is addressed transposed (codegen/emit_epilogue.cpp). Plain C++ (host side only).
#pragma once
#include <cstddef>
#include <cstdio>

#include "kdl/gemm_problem.h"

namespace kdl {

// The problem D^T = B^T A^T of the problem D = A B: m and n, A and B, and their block scales swap.
inline GemmProblem transposed_problem(const GemmProblem& p) {
  GemmProblem t = p;
  t.m = p.n;
  t.n = p.m;
  t.A = p.B, t.lda = p.ldb, t.batch_stride_a = p.batch_stride_b;
  t.B = p.A, t.ldb = p.lda, t.batch_stride_b = p.batch_stride_a;
  t.scale_a = p.scale_b, t.ld_scale_a = p.ld_scale_b, t.batch_stride_scale_a = p.batch_stride_scale_b;
  t.scale_b = p.scale_a, t.ld_scale_b = p.ld_scale_a, t.batch_stride_scale_b = p.batch_stride_scale_a;
  return t;
}

template <class Gemm>
struct TransposedGemm : Gemm {
  // The template's refusal of the transposed problem, said so: its A, B, m, n (lda, ...) are the
  // caller's B, A, n, m (ldb, ...).
  static const char* can_implement(const GemmProblem& p) {
    const char* e = Gemm::can_implement(transposed_problem(p));
    if (e == nullptr) return nullptr;
    static thread_local char msg[512];
    std::snprintf(msg, sizeof(msg),
                  "%s (D is column-major: the kernel computes D^T = B^T A^T, so its A, B, m, n, lda, ldb are the "
                  "arguments' B, A, n, m, ldb, lda)",
                  e);
    return msg;
  }
  static size_t workspace_size(const GemmProblem& p) { return Gemm::workspace_size(transposed_problem(p)); }
  template <class Params, class Stream>
  static auto run(const GemmProblem& p, const Params& ep, void* workspace, Stream stream) {
    return Gemm::run(transposed_problem(p), ep, workspace, stream);
  }
};

}  // namespace kdl
