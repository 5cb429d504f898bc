// A generated convolution's can_implement on the CPU (no GPU needed): every argument error is reported
// before any device query, with a message that names the argument and its value. Built and run by
// tests/nvcc/run_can_implement.py against the kernels of tests/nvcc/conv_arguments.kdl (kdl::ConvHost,
// include/kdl/conv_host.h, and kdl::Conv2dSm80::can_implement).
#include <cuda_runtime_api.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <string>

#include "conv_args_fprop.h"
#include "conv_args_wgrad.h"
#include "can_implement_check.h"
#include "kdl/abi.h"

extern "C" const char* kdl_conv_args_fprop_can_implement(const kdl_conv2d_shape*, const kdl_arg*, int32_t);
extern "C" size_t kdl_conv_args_fprop_workspace_size(const kdl_conv2d_shape*);
extern "C" const kdl_kernel_info* kdl_conv_args_fprop_info(void);
extern "C" const char* kdl_conv_args_wgrad_can_implement(const kdl_conv2d_shape*, const kdl_arg*, int32_t);

namespace {

using namespace kdl_check;


constexpr size_t kMiB = 1 << 20;

// A valid fprop: 2 images of 16 x 16 x 64, 128 filters of 3 x 3, padding 1 (so Y is 16 x 16 x 128); every
// stride 0 (packed), p and q derived.
kdl_kernels::conv_args_fprop::Arguments valid_fprop() {
  kdl_kernels::conv_args_fprop::Arguments a;
  a.n = 2, a.h = 16, a.w = 16, a.c = 64, a.k = 128;
  a.pad_h = a.pad_w = 1;
  a.X = at<const half>(0);
  a.W = at<const half>(1 * kMiB);
  a.Y = at<half>(2 * kMiB);
  a.bias = at<const float>(8 * kMiB);
  a.Z = at<half>(4 * kMiB);
  a.amax = at<float>(9 * kMiB);
  return a;
}

// A valid wgrad: dY 2 x 8 x 8 x 32 of X 2 x 16 x 16 x 64 through 3 x 3 filters, stride 2, padding 1.
kdl_kernels::conv_args_wgrad::Arguments valid_wgrad() {
  kdl_kernels::conv_args_wgrad::Arguments a;
  a.n = 2, a.h = 16, a.w = 16, a.c = 64, a.k = 32, a.r = 3, a.s = 3;
  a.pad_h = a.pad_w = 1;
  a.stride_h = a.stride_w = 2;
  a.Y = at<const __nv_bfloat16>(0);
  a.X = at<const __nv_bfloat16>(1 * kMiB);
  a.W = at<float>(2 * kMiB);
  return a;
}

}  // namespace

int main() {
  find_device();
  namespace F = kdl_kernels::conv_args_fprop;
  namespace G = kdl_kernels::conv_args_wgrad;

  // Good arguments pass the pure checks (defaults: packed strides, derived p and q, no workspace).
  {
    F::Arguments a = valid_fprop();
    expect(a.r == 3 && a.s == 3, "the fixed filter is Arguments' default (r = s = 3)");
    expect_ok("valid fprop, packed strides", F::can_implement(a));
    expect(F::workspace_size(a) == 0, "fprop without split-K needs no workspace");
    a.p = 16, a.q = 16;
    expect_ok("valid fprop, p and q given and right", F::can_implement(a));
    a.ldx = 72, a.batch_stride_X = 16 * 16 * 72;  // padded channels
    expect_ok("valid fprop, X's pixel stride 72 (padded channels)", F::can_implement(a));
    expect_ok("valid wgrad, dW packed", G::can_implement(valid_wgrad()));
  }
  // Sizes, strides, dilations, padding, p / q: by name, with the value.
  {
    F::Arguments a = valid_fprop();
    a.n = -1;
    expect_message("negative n", F::can_implement(a), "conv_args_fprop: n (-1) must be at least 1");
    a = valid_fprop();
    a.c = 0;
    expect_message("c = 0", F::can_implement(a), "c (0) must be at least 1");
    a = valid_fprop();
    a.stride_w = 0;
    expect_message("stride_w = 0 (C++ API)", F::can_implement(a), "stride_w (0) must be at least 1");
    a = valid_fprop();
    a.dilation_h = -2;
    expect_message("negative dilation", F::can_implement(a), "dilation_h (-2) must be at least 1");
    a = valid_fprop();
    a.pad_w = -1;
    expect_message("negative pad_w", F::can_implement(a), "pad_w (-1) must not be negative");
    a = valid_fprop();
    a.p = 15;
    expect_message("wrong p", F::can_implement(a), "p (15) must be 16");
    a = valid_fprop();
    a.q = 17;
    expect_message("wrong q", F::can_implement(a), "q (17) must be 16");
  }
  // The template's checks (Conv2dSm80::can_implement), under the kernel's name.
  {
    F::Arguments a = valid_fprop();
    a.X = nullptr;
    expect_message("null X", F::can_implement(a), "conv_args_fprop: X is null");
    a = valid_fprop();
    a.W = at<const half>(1 * kMiB + 2);
    expect_message("misaligned W", F::can_implement(a), "W must be 16-byte aligned");
    a = valid_fprop();
    a.c = 60;
    expect_message("c not a multiple of the alignment", F::can_implement(a),
                   "the channels of X (60) must be a multiple of its alignment (8 elements)");
    a = valid_fprop();
    a.ldx = 60;
    expect_message("X's pixel stride < c", F::can_implement(a), "the pixel stride of X (60) must be >= 64");
    a = valid_fprop();
    a.pad_h = 3;
    expect_message("padding as large as the filter", F::can_implement(a),
                   "padding (pad_h=3, pad_w=1) must be smaller than the dilated filter (3 x 3)");
    a = valid_fprop();
    a.h = 2, a.dilation_h = 2;
    expect_message("dilated filter larger than the padded input", F::can_implement(a),
                   "the dilated filter (5 x 3) is larger than the padded input (4 x 18)");
    a = valid_fprop();
    a.r = 5;
    expect_message("fixed filter mismatch", F::can_implement(a), "r (5) must be 3 (filter fixed by the spec)");
    a = valid_fprop();
    a.n = 40000, a.h = a.w = 256;
    expect_message("n*h*w over 32 bits", F::can_implement(a), "problem too large for 32-bit indexing");
  }
  // The epilogue's tensors and vectors (the output's GEMM view) and amax.
  {
    F::Arguments a = valid_fprop();
    a.bias = nullptr;
    expect_message("null [channel] bias", F::can_implement(a), "conv_args_fprop: bias is null");
    a = valid_fprop();
    a.Y = nullptr;
    expect_message("null Y", F::can_implement(a), "conv_args_fprop: Y is null");
    a = valid_fprop();
    a.amax = nullptr;
    expect_message("null amax", F::can_implement(a), "conv_args_fprop: amax is null");
    a = valid_fprop();
    a.ldz = 100;
    expect_message("Z's pixel stride < k", F::can_implement(a), "the pixel stride of Z (100) must be at least its channels (128)");
    a = valid_fprop();
    a.batch_stride_Y = 128;
    expect_message("Y's images overlap", F::can_implement(a), "the image stride of Y (128) must be at least 32768 (256 pixels x 128): its images would overwrite each other");
    a = valid_fprop();
    a.Z = a.Y;
    expect_message("Z = Y", F::can_implement(a), "conv_args_fprop: Y and Z overlap in memory");
    a = valid_fprop();
    a.Z = a.Y + 2 * 16 * 16 * 128 - 1;  // Z's first element is Y's last
    expect_message("Z starts at Y's last element", F::can_implement(a), "Y and Z overlap");
    a.Z = a.Y + 2 * 16 * 16 * 128;
    expect_ok("Z right after Y", F::can_implement(a));
  }
  // wgrad: dW is a filter (its taps packed), split-K in range.
  {
    G::Arguments a = valid_wgrad();
    a.ldw = 72;
    expect_message("dW's tap stride != c", G::can_implement(a), "conv_args_wgrad: W's taps must be packed: its tap stride (72) must be c (64)");
    a = valid_wgrad();
    a.batch_stride_W = 9 * 64 - 1;
    expect_message("dW's filter stride < r*s*c", G::can_implement(a), "the filter stride of W (575) must be at least 576 (9 taps x 64): its filters would overwrite each other");
    a = valid_wgrad();
    a.split_k = 5;
    expect_message("split_k above serial(4)", G::can_implement(a), "split_k (5) must be in 0..4");
    a.split_k = -1;
    expect_message("split_k -1", G::can_implement(a), "split_k (-1) must be in 0..4 (split_k = serial(4) in the spec; 0: the kernel chooses)");
    a.split_k = 0;
    expect_ok("split_k 0 (the kernel chooses)", G::can_implement(a));
    a.split_k = 3;
    expect_ok("split_k 3", G::can_implement(a));
    expect(G::workspace_size(a) > 0, "split_k 3 needs a workspace (" + std::to_string(G::workspace_size(a)) + " bytes)");
    a.batch_stride_W = 9 * 64 + 8;  // dW's filters padded apart
    expect_ok("dW with a padded filter stride", G::can_implement(a));
  }
  // The C ABI: kdl_conv2d_shape (stride / dilation 0 read as 1, int range), kdl_arg strides, kernel info.
  {
    const F::Arguments v = valid_fprop();
    kdl_arg args[6] = {};
    args[0] = {(void*)v.X, 0, 0, 0};
    args[1] = {(void*)v.W, 0, 0, 0};
    args[2] = {(void*)v.Y, 0, 0, 0};
    args[3] = {(void*)v.bias, 0, 0, 0};
    args[4] = {(void*)v.Z, 0, 0, 0};
    args[5] = {(void*)v.amax, 0, 0, 0};
    kdl_conv2d_shape s{2, 16, 16, 64, 128, 3, 3, 0, 0, 1, 1, 0, 0, 0, 0, 1};
    expect_ok("C ABI valid (stride and dilation 0 read as 1)", kdl_conv_args_fprop_can_implement(&s, args, 6));
    expect(kdl_conv_args_fprop_workspace_size(&s) == 0, "C ABI workspace 0");
    expect_message("C ABI null shape", kdl_conv_args_fprop_can_implement(nullptr, args, 6), "shape is null");
    expect_message("C ABI wrong nargs", kdl_conv_args_fprop_can_implement(&s, args, 5), "5 arguments given, the kernel takes 6");
    s.h = (int64_t)INT_MAX + 1;
    expect_message("C ABI h over INT_MAX", kdl_conv_args_fprop_can_implement(&s, args, 6), "shape out of range (h=2147483648");
    s.h = -3;
    expect_message("C ABI negative h", kdl_conv_args_fprop_can_implement(&s, args, 6), "shape out of range (h=-3");
    s.h = 16;
    s.split_k = 2;
    expect_message("C ABI split_k without split-K", kdl_conv_args_fprop_can_implement(&s, args, 6),
                   "split_k (2) must be 1 (or 0); the kernel has no split-K");
    s.split_k = 0;
    expect_ok("C ABI split_k 0 without split-K", kdl_conv_args_fprop_can_implement(&s, args, 6));
    s.split_k = 1;
    s.p = 15;
    expect_message("C ABI wrong p", kdl_conv_args_fprop_can_implement(&s, args, 6), "p (15) must be 16");
    const kdl_kernel_info* info = kdl_conv_args_fprop_info();
    expect(std::string(info->op) == "conv2d_fprop", std::string("info op: ") + info->op);
    expect(info->nargs == 6 && std::string(info->arg_names[0]) == "X" && std::string(info->arg_names[2]) == "Y" &&
               std::string(info->arg_broadcasts[3]) == "channel" && info->arg_kinds[3] == KDL_ARG_VECTOR,
           "info args: X, W, Y, bias [channel], Z, amax");
  }
  return finish();
}
