// kdl/gemm_problem.h -- the problem a GEMM template runs (shared by the device templates and the
// host side of generated kernels, kdl/gemm_host.h). Plain C++.
#pragma once
#include <stdint.h>

namespace kdl {

struct RowMajor {};
struct ColMajor {};

struct GemmProblem {
  int m, n, k, batch;  // batch >= 1
  const void* A; int64_t lda; int64_t batch_stride_a;  // leading dimension in elements
  const void* B; int64_t ldb; int64_t batch_stride_b;
  int split_k;  // serial split-K slices, >= 1
  // Block scales of fp8 operands (kdl::sm90::BlockScaling<BlockMA, BlockNB, BlockK>; unused otherwise),
  // "k-block major": A's block (row / BlockMA, k / BlockK) has its scale at
  // scale_a[b * batch_stride_scale_a + kb * ld_scale_a + mb], ld_scale_a >= ceil(m / BlockMA); B's block
  // (col / BlockNB, kb) at scale_b[b * batch_stride_scale_b + kb * ld_scale_b + nb], ld_scale_b >= ceil(n / BlockNB).
  const float* scale_a = nullptr; int64_t ld_scale_a = 0; int64_t batch_stride_scale_a = 0;
  const float* scale_b = nullptr; int64_t ld_scale_b = 0; int64_t batch_stride_scale_b = 0;
  // The problem's DRAM bytes when they are not the GEMM's own (an implicit GEMM's: a convolution reads X
  // once, not r x s times), for the host side's memory-bound tests; 0: the GEMM's A, B and D.
  double unique_bytes = 0;
};

}  // namespace kdl
