// kdl/gemm_transposed.h -- a GEMM with a column-major D, run as its transpose.
//
// D = A B with D column-major is D^T = B^T A^T with D^T row-major (n x m, the same memory, ld = ldd).
// A column-major B (k x n) is a row-major B^T (n x k) with the same pointer, ld and batch stride, and
// a row-major A is a column-major A^T: the transposed problem needs no copy, only m <-> n and
// A <-> B swapped. kdlc instantiates the device template with B^T as its A and A^T as its B
// (layouts flipped) and wraps it in TransposedGemm, which has the templates' static interface
// (kThreads, kSmemBytes, kMinSmemBytes, can_implement, workspace_size, run) for the caller's problem
// and hands the template the transposed one (its refusals are reworded in the caller's names,
// caller_words). The generated Epilogue knows it: its coordinates are
// those of D^T (coord.m is a column of D, coord.n .. coord.n + V - 1 are rows of it), so a [row]
// input is read per coordinate column, a [col] one per coordinate row, and a row-major C or extra
// output is addressed transposed (codegen/emit_epilogue.cpp). Plain C++ (host side only).
#pragma once
#include <cstddef>
#include <cstring>

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

// A message of the device template about the transposed problem, in the caller's names: each word
// that names one side of it (A, lda, batch_stride_A, scale_A, AlignA, m, row-major, ...) is swapped
// with its twin (B, ldb, ..., n, column-major: the transpose of a row-major A is a column-major A^T).
// Words are runs of letters, digits, '_' and '-'; `out` holds at most cap - 1 characters.
inline void caller_words(const char* in, char* out, size_t cap) {
  static const char* const kTwins[][2] = {
      {"A", "B"},           {"lda", "ldb"},           {"batch_stride_A", "batch_stride_B"},
      {"batch_stride_a", "batch_stride_b"},           {"scale_A", "scale_B"},
      {"ld_scale_A", "ld_scale_B"},                   {"AlignA", "AlignB"},
      {"m", "n"},           {"row-major", "column-major"}};
  auto isWord = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  };
  size_t o = 0;
  for (size_t i = 0; in[i] != '\0' && o + 1 < cap;) {
    if (!isWord(in[i])) {
      out[o++] = in[i++];
      continue;
    }
    size_t end = i;
    while (isWord(in[end])) ++end;
    const char* word = in + i;
    size_t len = end - i;
    for (const auto& twin : kTwins)
      for (int side = 0; side < 2; ++side)
        if (std::strlen(twin[side]) == end - i && std::strncmp(twin[side], in + i, end - i) == 0) {
          word = twin[1 - side];
          len = std::strlen(word);
        }
    for (size_t k = 0; k < len && o + 1 < cap; ++k) out[o++] = word[k];
    i = end;
  }
  out[o] = '\0';
}

template <class Gemm>
struct TransposedGemm : Gemm {
  // The template's refusal of the transposed problem, in the caller's names (caller_words).
  static const char* can_implement(const GemmProblem& p) {
    const char* e = Gemm::can_implement(transposed_problem(p));
    if (e == nullptr) return nullptr;
    static thread_local char msg[512];
    caller_words(e, msg, sizeof(msg) - 64);
    std::strcat(msg, " (the kernel computes D^T = B^T A^T for the column-major D)");
    return msg;
  }
  static size_t workspace_size(const GemmProblem& p) { return Gemm::workspace_size(transposed_problem(p)); }
  static int split_k_for(const GemmProblem& p, int max_split) { return Gemm::split_k_for(transposed_problem(p), max_split); }
  template <class Params, class Stream>
  static auto run(const GemmProblem& p, const Params& ep, void* workspace, Stream stream) {
    return Gemm::run(transposed_problem(p), ep, workspace, stream);
  }
};

}  // namespace kdl
