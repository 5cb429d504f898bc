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
};

}  // namespace kdl
