// A generated kernel's can_implement on the CPU (no GPU needed): argument errors are reported
// before any device query, with a message that says what is wrong. Built and run by
// tests/nvcc/run_can_implement.py against the kernel of tests/nvcc/arguments.kdl.
//   item 12: overlapping batches of written tensors, negative batch strides, 32-bit overflow
//   item 13: the default split_k (0: the kernel chooses) and its range, and the amax pointer checked when there is nothing to compute
#include <cuda_runtime_api.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "args_all.h"
#include "can_implement_check.h"
#include "kdl/abi.h"

extern "C" const char* kdl_args_all_can_implement(const kdl_gemm_shape*, const kdl_arg*, int32_t);
extern "C" size_t kdl_args_all_workspace_size(const kdl_gemm_shape*);

namespace {

using namespace kdl_check;


// can_implement rejects `a` with a message that contains `needle`.
void expect_rejected(const char* what, const kdl_kernels::args_all::Arguments& a, const char* needle) {
  expect_message(what, kdl_kernels::args_all::can_implement(a), needle);
}

// can_implement finds nothing wrong with the arguments.
void expect_arguments_ok(const char* what, const kdl_kernels::args_all::Arguments& a) {
  expect_ok(what, kdl_kernels::args_all::can_implement(a));
}

// A valid 256 x 256 x 64 problem, batch 1: every pointer set and aligned.
kdl_kernels::args_all::Arguments valid() {
  kdl_kernels::args_all::Arguments a;
  a.m = 256, a.n = 256, a.k = 64;
  a.A = at<const __nv_bfloat16>(0), a.lda = 64;
  a.B = at<const __nv_bfloat16>(256), a.ldb = 64;
  a.C = at<const __nv_bfloat16>(512), a.ldc = 256;
  a.D = at<__nv_bfloat16>(1 << 20), a.ldd = 256;
  a.bias = at<const float>(2048);
  a.scale = at<const float>(4096);
  a.Z = at<__nv_bfloat16>(1 << 22), a.ldz = 256;  // after D's 256 x 256 (and further batches)
  a.amax = at<float>(16384);
  return a;
}

}  // namespace

int main() {
  find_device();
  using kdl_kernels::args_all::Arguments;

  // item 13: default arguments need no workspace and run with a K of one or two tiles.
  {
    Arguments a = valid();
    expect(a.split_k == 0, "default split_k is 0, the kernel's choice (got " + std::to_string(a.split_k) + ")");
    // Two K tiles do not pay for partial sums: the kernel runs them whole (kdl/split_k.h).
    expect(kdl_kernels::args_all::workspace_size(a) == 0,
           "default arguments need no workspace (got " + std::to_string(kdl_kernels::args_all::workspace_size(a)) + ")");
    expect_arguments_ok("default split_k with k = 64 (2 K tiles)", a);
    a.split_k = -1;
    expect_rejected("split_k -1", a, "split_k (-1) must be in 0..4 (split_k = serial(4) in the spec; 0: the kernel chooses)");
    a.split_k = 5;
    expect_rejected("split_k above serial(4)", a, "split_k (5) must be in 0..4");
    a.split_k = 4;
    expect(kdl_kernels::args_all::workspace_size(a) > 0, "split_k 4 needs a workspace");
  }
  // item 13: with nothing to compute, run() still zeroes amax: its pointer is checked.
  {
    Arguments a = valid();
    a.m = 0;
    a.amax = nullptr;
    expect_rejected("m = 0 with a null amax", a, "args_all: amax is null");
    a.amax = at<float>(16384);
    expect_arguments_ok("m = 0 with amax set", a);
    a.amax = at<float>(16386);
    expect_rejected("m = 0 with a misaligned amax", a, "amax is not aligned");
  }
  // item 12: batches of a written tensor must not overlap.
  {
    Arguments a = valid();
    a.batch = 2;
    a.batch_stride_D = 0;
    a.batch_stride_Z = 256 * 256;
    expect_rejected("batch 2, batch_stride_D = 0", a, "batch_stride_D (0) < (m-1)*ld + n = 65536");
    a.batch_stride_D = 255 * 256 + 255;
    expect_rejected("batch 2, batch_stride_D one short of a batch", a, "batch_stride_D (65535) < (m-1)*ld + n = 65536");
    a.batch_stride_D = 255 * 256 + 256;
    expect_arguments_ok("batch 2, batch_stride_D = (m-1)*ldd + n", a);
    a.batch_stride_Z = 100;
    expect_rejected("batch 2, batch_stride_Z overlapping", a, "batch_stride_Z (100) < (m-1)*ld + n = 65536");
  }
  // item 12: two outputs must not write the same memory.
  {
    Arguments a = valid();
    a.Z = a.D;
    expect_rejected("Z = D", a, "args_all: D and Z overlap in memory");
    a.Z = a.D + 255 * 256 + 255;  // Z's first element is D's last
    expect_rejected("Z starts at D's last element", a, "D and Z overlap");
    a.Z = a.D + 255 * 256 + 256;
    expect_arguments_ok("Z right after D", a);
    a.batch = 2;
    a.batch_stride_D = a.batch_stride_Z = 256 * 256;
    a.Z = a.D + 256 * 256;
    expect_rejected("batch 2: Z at D's second batch", a, "D and Z overlap");
    a.Z = a.D + 2 * 256 * 256;
    expect_arguments_ok("batch 2: Z after D's second batch", a);
  }
  // item 12: read-only operands may broadcast one matrix to every batch (stride 0), never go backwards.
  {
    Arguments a = valid();
    a.batch = 3;
    a.batch_stride_D = a.batch_stride_Z = 256 * 256;
    expect_arguments_ok("batch 3, A, B, C and bias broadcast (batch stride 0)", a);
    a.batch_stride_A = -64;
    expect_rejected("negative batch_stride_A", a, "batch_stride_A (-64) is negative");
    a.batch_stride_A = 0;
    a.batch_stride_B = -64;
    expect_rejected("negative batch_stride_B", a, "batch_stride_B (-64) is negative");
    a.batch_stride_B = 0;
    a.batch_stride_C = -1;
    expect_rejected("negative batch_stride_C", a, "batch_stride_C (-1) is negative");
    a.batch_stride_C = 0;
    a.batch_stride_bias = -256;
    expect_rejected("negative batch_stride_bias", a, "batch_stride_bias (-256) is negative");
  }
  // item 12: sizes whose tile arithmetic would overflow int are refused, not wrapped.
  {
    Arguments a = valid();
    a.m = INT_MAX - 5;
    expect_rejected("m = INT_MAX - 5", a, "too large for 32-bit tile arithmetic");
    a = valid();
    a.n = INT_MAX;
    a.ldc = a.ldd = a.ldz = INT_MAX;
    expect_rejected("n = INT_MAX", a, "too large for 32-bit tile arithmetic");
    a = valid();
    a.k = INT_MAX - 7;
    a.lda = a.ldb = INT_MAX - 7;
    a.k -= a.k % 8;
    a.lda = a.ldb = a.k;
    expect_rejected("k near INT_MAX", a, "too large for 32-bit tile arithmetic");
    // The C ABI allows m up to INT_MAX (check_abi_shape): the kernel must refuse it itself.
    kdl_arg args[9] = {};
    const Arguments v = valid();
    args[0] = {(void*)v.A, v.lda, 0, 0};
    args[1] = {(void*)v.B, v.ldb, 0, 0};
    args[2] = {(void*)v.C, v.ldc, 0, 0};
    args[3] = {(void*)v.D, v.ldd, 0, 0};
    args[4] = {nullptr, 0, 0, 1.0};
    args[5] = {(void*)v.bias, 0, 0, 0};
    args[6] = {(void*)v.scale, 0, 0, 0};
    args[7] = {(void*)v.Z, v.ldz, 0, 0};
    args[8] = {(void*)v.amax, 0, 0, 0};
    kdl_gemm_shape s{INT_MAX, 256, 64, 1, 1};
    const char* m = kdl_args_all_can_implement(&s, args, 9);
    const std::string got = m ? m : "(accepted)";
    expect(got.find("too large for 32-bit tile arithmetic") != std::string::npos, "C ABI m = INT_MAX: \"" + got + "\"");
    s.m = 256;
    m = kdl_args_all_can_implement(&s, args, 9);
    const std::string ok = m ? m : "(accepted)";
    expect(g_device ? m == nullptr : ok.find("no CUDA device") != std::string::npos, "C ABI valid: \"" + ok + "\"");
  }
  return finish();
}
