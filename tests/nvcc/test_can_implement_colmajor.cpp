// A column-major kernel's generated can_implement on the CPU (no GPU needed): each epilogue tensor
// is checked in its layout (a column-major D needs ld >= m and spans (n-1)*ld + m per batch), and a
// refusal of the device template, which runs the transposed problem (kdl::TransposedGemm), names the
// arguments as the caller passed them.
// Built and run by tests/nvcc/run_can_implement.py against the kernel of tests/nvcc/colmajor_args.kdl.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "args_colmajor.h"
#include "can_implement_check.h"

namespace {

using namespace kdl_check;


using kdl_kernels::args_colmajor::Arguments;

void expect_rejected(const char* what, const Arguments& a, const char* needle) {
  expect_message(what, kdl_kernels::args_colmajor::can_implement(a), needle);
}

// Nothing wrong with the arguments (expect_ok).
void expect_arguments_ok(const char* what, const Arguments& a) {
  expect_ok(what, kdl_kernels::args_colmajor::can_implement(a));
}

// A valid 136 x 200 x 64 problem (m < n, so a column-major ld of m is too short for a row-major one).
Arguments valid() {
  Arguments a;
  a.m = 136, a.n = 200, a.k = 64;
  a.A = at<const __nv_bfloat16>(0), a.lda = 64;           // row-major m x k
  a.B = at<const __nv_bfloat16>(1 << 16), a.ldb = 64;     // column-major k x n
  a.C = at<const __nv_bfloat16>(1 << 18), a.ldc = 200;    // row-major m x n
  a.D = at<__nv_bfloat16>(1 << 20), a.ldd = 136;          // column-major m x n
  a.Z = at<__nv_bfloat16>(1 << 22), a.ldz = 136;          // column-major m x n
  return a;
}

}  // namespace

int main() {
  find_device();

  expect_arguments_ok("valid: D and Z column-major with ld = m < n", valid());
  {
    Arguments a = valid();
    a.ldd = 128;
    expect_rejected("column-major D with ld < m", a, "args_colmajor: ld of D (128) < m (136) for a column-major tensor");
    a = valid();
    a.ldc = 136;
    expect_rejected("row-major C with ld < n", a, "ld of C (136) < n (200) for a row-major tensor");
  }
  // Batches of a column-major output span (n-1)*ld + m = 199 * 136 + 136 = 27200 elements.
  {
    Arguments a = valid();
    a.batch = 2;
    a.batch_stride_A = 136 * 64, a.batch_stride_B = 200 * 64;  // TMA cannot describe a stride of 0
    a.batch_stride_Z = 1 << 20;
    a.batch_stride_D = 27199;
    expect_rejected("batch 2, batch_stride_D one short of a column-major batch", a,
                    "batch_stride_D (27199) < (n-1)*ld + m = 27200");
    a.batch_stride_D = 27200;
    a.Z = a.D + 2 * 27200;
    expect_arguments_ok("batch 2, batch_stride_D = (n-1)*ld + m", a);
    a.batch_stride_B = 0;  // the template's A (B^T): refused in the arguments' names
    expect_rejected("batch 2, batch_stride_B = 0", a,
                    "batch_stride_B is 0 (broadcast); TMA cannot describe a zero stride (the kernel computes D^T");
  }
  // Two outputs must not share memory: D's column-major extent is 27200 elements.
  {
    Arguments a = valid();
    a.Z = a.D + 27199;
    expect_rejected("Z starts at D's last element", a, "args_colmajor: D and Z overlap in memory");
    a.Z = a.D + 27200;
    expect_arguments_ok("Z right after D", a);
  }
  // The device template runs D^T = B^T A^T: its A is B^T. A column-major B with ldb < k is refused by
  // it, reworded in the arguments' names.
  {
    Arguments a = valid();
    a.ldb = 56;
    expect_rejected("column-major B with ldb < k", a,
                    "args_colmajor: kdl gemm sm90: ldb (56) < k (64) for column-major B (the kernel computes D^T = "
                    "B^T A^T for the column-major D)");
  }
  // The mainloop operands keep their own names and alignment in the host's checks.
  {
    Arguments a = valid();
    a.B = at<const __nv_bfloat16>((1 << 16) + 2);
    expect_rejected("misaligned B", a, "args_colmajor: B must be 16-byte aligned");
  }
  return finish();
}
