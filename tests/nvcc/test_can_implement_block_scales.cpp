// The generated can_implement of a block-scaled sm90a kernel on the CPU (no GPU needed): the scale
// arguments (scale_A, scale_B) are checked by name, after their operand, and reach GemmSm90's own
// checks (the leading dimension against the blocks). Built and run by tests/nvcc/run_can_implement.py
// against the kernel of tests/nvcc/block_scales.kdl.
#include <cuda_runtime_api.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>

#include "args_block.h"
#include "can_implement_check.h"
#include "kdl/abi.h"

extern "C" const kdl_kernel_info* kdl_args_block_info(void);
extern "C" const char* kdl_args_block_can_implement(const kdl_gemm_shape*, const kdl_arg*, int32_t);

namespace {

using namespace kdl_check;


// A valid 200 x 300 x 384 problem: 200 row scales and ceil(300 / 128) = 3 column-block scales per
// k-block (3 k-blocks).
kdl_kernels::args_block::Arguments valid() {
  kdl_kernels::args_block::Arguments a;
  a.m = 200, a.n = 300, a.k = 384;
  a.A = at<const __nv_fp8_e4m3>(0), a.lda = 384;
  a.scale_A = at<const float>(1 << 20), a.ld_scale_A = 200;
  a.B = at<const __nv_fp8_e4m3>(1 << 21), a.ldb = 384;
  a.scale_B = at<const float>(1 << 22), a.ld_scale_B = 3;
  a.D = at<__nv_bfloat16>(1 << 24), a.ldd = 304;
  return a;
}

}  // namespace

int main() {
  find_device();
  using kdl_kernels::args_block::Arguments;
  using kdl_kernels::args_block::can_implement;

  // The C ABI's view: A, scale_A, B, scale_B, D; the scales f32 tensors (data, ld, batch stride).
  {
    const kdl_kernel_info* info = kdl_args_block_info();
    const char* names[] = {"A", "scale_A", "B", "scale_B", "D"};
    bool ok = info && info->nargs == 5;
    for (int i = 0; ok && i < 5; ++i) ok = std::string(info->arg_names[i]) == names[i];
    expect(ok, "arguments are A, scale_A, B, scale_B, D");
    ok = info && info->nargs == 5 && info->arg_kinds[1] == KDL_ARG_TENSOR && info->arg_kinds[3] == KDL_ARG_TENSOR &&
         std::string(info->arg_dtypes[1]) == "f32" && std::string(info->arg_dtypes[3]) == "f32";
    expect(ok, "scale_A and scale_B are f32 tensors");
  }
  expect(arguments_ok(can_implement(valid())), "valid: \"" + said(can_implement(valid())) + "\"");
  struct Case {
    const char* what;
    void (*edit)(Arguments&);
    const char* needle;
  };
  const Case cases[] = {
      {"null scale_A", [](Arguments& a) { a.scale_A = nullptr; }, "args_block: scale_A is null"},
      {"null scale_B", [](Arguments& a) { a.scale_B = nullptr; }, "args_block: scale_B is null"},
      {"misaligned scale_B", [](Arguments& a) { a.scale_B = at<const float>((1 << 22) + 2); }, "scale_B is not aligned"},
      {"ld_scale_A < m", [](Arguments& a) { a.ld_scale_A = 199; }, "ld_scale_A (199) < ceil(m / 1) = 200"},
      {"ld_scale_B < ceil(n / 128)", [](Arguments& a) { a.ld_scale_B = 2; }, "ld_scale_B (2) < ceil(n / 128) = 3"},
      {"negative batch_stride_scale_A",
       [](Arguments& a) {
         a.batch = 2, a.batch_stride_A = 200 * 384, a.batch_stride_B = 300 * 384, a.batch_stride_D = 200 * 304;
         a.batch_stride_scale_A = -1;
       },
       "batch_stride_scale_A (-1) is negative"},
      // The problem-size limit comes before the scales' leading dimension (m = INT_MAX needs more scales).
      {"m = INT_MAX", [](Arguments& a) { a.m = INT_MAX; }, "too large"},
  };
  for (const Case& c : cases) {
    Arguments a = valid();
    c.edit(a);
    const std::string got = said(can_implement(a));
    expect(got.find(c.needle) != std::string::npos, std::string(c.what) + ": \"" + got + "\" (want \"" + c.needle + "\")");
  }
  {
    Arguments a = valid();
    a.batch = 2, a.batch_stride_A = 200 * 384, a.batch_stride_B = 300 * 384, a.batch_stride_D = 200 * 304;
    // scale batch strides 0: one set of scales for every batch
    expect(arguments_ok(can_implement(a)), "batch 2 sharing the scales: \"" + said(can_implement(a)) + "\"");
  }
  // Through the C ABI: each kdl_arg's ld and batch stride reach the scale tensors.
  {
    const Arguments v = valid();
    kdl_arg args[5] = {{(void*)v.A, v.lda, 0, 0},
                       {(void*)v.scale_A, v.ld_scale_A, 0, 0},
                       {(void*)v.B, v.ldb, 0, 0},
                       {(void*)v.scale_B, v.ld_scale_B, 0, 0},
                       {(void*)v.D, v.ldd, 0, 0}};
    kdl_gemm_shape s{v.m, v.n, v.k, 1, 1};
    expect(arguments_ok(kdl_args_block_can_implement(&s, args, 5)),
           "C ABI valid: \"" + said(kdl_args_block_can_implement(&s, args, 5)) + "\"");
    args[3].ld = 1;
    const std::string got = said(kdl_args_block_can_implement(&s, args, 5));
    expect(got.find("ld_scale_B (1)") != std::string::npos, "C ABI ld of scale_B = 1: \"" + got + "\"");
  }
  return finish();
}
