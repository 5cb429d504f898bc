// The generated can_implement of the sm90a wgmma convolutions on the CPU (no GPU needed): what
// kdl::Conv2dSm90Fprop accepts (any c, padded W taps) and refuses (strides above 8, im2col corners), and the
// argument errors of kdl::Conv2dSm90Dgrad (unit stride, im2col corners) and kdl::Conv2dSm90Wgrad (c a
// multiple of 64, strides <= 8, split-K), each with a message that names the value. Built and run by
// tests/nvcc/run_can_implement.py against the kernels of tests/nvcc/conv_arguments_sm90.kdl.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "can_implement_check.h"
#include "conv90_args_dgrad.h"
#include "conv90_args_fprop.h"
#include "conv90_args_wgrad.h"

namespace {

using namespace kdl_check;

constexpr size_t kMiB = 1 << 20;

// The valid problems below: images 2 x 16 x 16 x c, 64 filters of 3 x 3, padding 1, stride 1.
template <class Arguments>
Arguments conv_3x3(int c) {
  Arguments a;
  a.n = 2, a.h = 16, a.w = 16, a.c = c, a.k = 64, a.r = 3, a.s = 3;
  a.pad_h = a.pad_w = 1;
  return a;
}

// A valid fprop: Y 2 x 16 x 16 x 64 from X 2 x 16 x 16 x 96 (c need not be a multiple of 64).
kdl_kernels::conv90_args_fprop::Arguments valid_fprop() {
  auto a = conv_3x3<kdl_kernels::conv90_args_fprop::Arguments>(96);
  a.X = at<const __nv_bfloat16>(0);
  a.W = at<const __nv_bfloat16>(1 * kMiB);
  a.Y = at<__nv_bfloat16>(64 * kMiB);
  return a;
}

// A valid dgrad: dX 2 x 16 x 16 x 96 (c need not be a multiple of 64 here) from dY 2 x 16 x 16 x 64.
kdl_kernels::conv90_args_dgrad::Arguments valid_dgrad() {
  auto a = conv_3x3<kdl_kernels::conv90_args_dgrad::Arguments>(96);
  a.Y = at<const __nv_bfloat16>(0);
  a.W = at<const __nv_bfloat16>(1 * kMiB);
  a.X = at<__nv_bfloat16>(64 * kMiB);
  return a;
}

// A valid wgrad: dW 64 x 3 x 3 x 128 from dY 2 x 16 x 16 x 64 and X 2 x 16 x 16 x 128.
kdl_kernels::conv90_args_wgrad::Arguments valid_wgrad() {
  auto a = conv_3x3<kdl_kernels::conv90_args_wgrad::Arguments>(128);
  a.Y = at<const __nv_bfloat16>(0);
  a.X = at<const __nv_bfloat16>(1 * kMiB);
  a.W = at<float>(2 * kMiB);
  return a;
}

}  // namespace

int main() {
  find_device();
  namespace F = kdl_kernels::conv90_args_fprop;
  namespace D = kdl_kernels::conv90_args_dgrad;
  namespace G = kdl_kernels::conv90_args_wgrad;
  {
    F::Arguments a = valid_fprop();
    expect_ok("valid sm90a fprop (c = 96)", F::can_implement(a));
    a.c = 8;
    expect_ok("valid sm90a fprop (c = 8)", F::can_implement(a));
    a = valid_fprop();
    a.ldw = 104;  // W's taps padded apart: read as a {c, r*s, k} tensor, allowed
    a.batch_stride_W = 9 * 104;
    expect_ok("valid sm90a fprop, W's taps padded", F::can_implement(a));
    a = valid_fprop();
    a.c = 100;
    expect_message("sm90a fprop c = 100", F::can_implement(a), "must be a multiple of its alignment (8 elements)");
    a = valid_fprop();
    a.stride_h = a.stride_w = 9;
    expect_message("sm90a fprop stride 9", F::can_implement(a), "strides (9, 9) above 8");
  }
  {
    D::Arguments a = valid_dgrad();
    expect_ok("valid sm90a dgrad (c = 96)", D::can_implement(a));
    a.ldw = 104;  // W's taps padded apart: read as a {c, r*s, k} tensor, allowed
    a.batch_stride_W = 9 * 104;
    expect_ok("valid sm90a dgrad, W's taps padded", D::can_implement(a));
    a = valid_dgrad();
    a.stride_h = 2;
    expect_message("sm90a dgrad stride 2", D::can_implement(a), "strides (2, 1) must be 1 (a strided dgrad runs the multistage schedule)");
    a = valid_dgrad();
    a.h = a.w = 256;
    a.dilation_h = 100;  // the flipped filter's corner: 1 - 200 = -199
    expect_message("sm90a dgrad corner out of range", D::can_implement(a), "out of TMA's range (-128 .. 127)");
  }
  {
    G::Arguments a = valid_wgrad();
    expect_ok("valid sm90a wgrad", G::can_implement(a));
    a.split_k = 3;
    expect_ok("sm90a wgrad split_k 3", G::can_implement(a));
    expect(G::workspace_size(a) > 0, "sm90a wgrad split_k 3 needs a workspace (" + std::to_string(G::workspace_size(a)) + " bytes)");
    a.split_k = 5;
    expect_message("sm90a wgrad split_k above serial(4)", G::can_implement(a), "split_k (5) must be in 0..4");
    a = valid_wgrad();
    a.c = 96;
    expect_message("sm90a wgrad c = 96", G::can_implement(a), "c (96) must be a multiple of 64");
    a = valid_wgrad();
    a.stride_h = a.stride_w = 9;
    expect_message("sm90a wgrad stride 9", G::can_implement(a), "strides (9, 9) above 8");
    a = valid_wgrad();
    a.ldw = 136;
    expect_message("sm90a wgrad dW's taps padded", G::can_implement(a), "W's taps must be packed");
  }
  return finish();
}
