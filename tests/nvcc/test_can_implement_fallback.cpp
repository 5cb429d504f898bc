// The generated host side of an sm90a kernel with `fallback = sm80` (kdl::GemmHostWithFallback,
// include/kdl/gemm_fallback.h), on the CPU: which refusals are the sm90a kernel's alone (TMA's limits:
// a leading dimension not a multiple of 16 bytes, a zero batch stride), so that the fallback is asked
// and both refusals are said, and which are both kernels' (said once). Built and run by
// tests/nvcc/run_can_implement.py against the kernel of tests/nvcc/fallback.kdl. Without a GPU every
// valid problem ends at "no CUDA device"; with one, path() names the kernel that runs it.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "args_fallback.h"
#include "can_implement_check.h"
#include "kdl/abi.h"

extern "C" const kdl_kernel_info* kdl_args_fallback_info(void);
extern "C" const char* kdl_args_fallback_can_implement(const kdl_gemm_shape*, const kdl_arg*, int32_t);
extern "C" const char* kdl_args_fallback_path(const kdl_gemm_shape*, const kdl_arg*, int32_t);

namespace {

using namespace kdl_check;

int g_cc = 0;


bool has(const std::string& s, const char* needle) { return s.find(needle) != std::string::npos; }
// How a refusal of both kernels that differ goes on after the sm90a kernel's reason.
const char* kBoth = "; the sm80 fallback cannot run them either: ";

// A valid 200 x 300 x 384 problem whose leading dimensions are multiples of 16 bytes (TMA's).
kdl_kernels::args_fallback::Arguments valid() {
  kdl_kernels::args_fallback::Arguments a;
  a.m = 200, a.n = 300, a.k = 384;
  a.A = at<const __nv_bfloat16>(0), a.lda = 384;
  a.B = at<const __nv_bfloat16>(1 << 20), a.ldb = 384;
  a.D = at<__nv_bfloat16>(1 << 22), a.ldd = 304;
  return a;
}

}  // namespace

int main() {
  find_device();
  if (g_device) {
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
    g_cc = major * 10 + minor;
  }
  std::printf("compute capability %d\n", g_cc);
  using kdl_kernels::args_fallback::Arguments;
  using kdl_kernels::args_fallback::can_implement;
  using kdl_kernels::args_fallback::path;
  const char* own = g_cc == 90 ? "sm90a" : "sm80";  // the sm90a kernel runs on compute capability 9.0 only

  {
    const kdl_kernel_info* info = kdl_args_fallback_info();
    expect(info && std::string(info->arch) == "sm90a" && info->nargs == 3, "info: the sm90a kernel's (A, B, D)");
  }
  // TMA can describe it: the sm90a kernel runs it (on 9.0); both say "no CUDA device" without a GPU, once.
  {
    const std::string got = said(can_implement(valid()));
    expect(g_device ? got == "(accepted)" : has(got, "no CUDA device") && !has(got, kBoth),
           "valid: \"" + got + "\"");
    expect(said(path(valid())) == (g_device ? own : "(accepted)"), "valid: path " + said(path(valid())));
  }
  // What only the sm90a kernel refuses (TMA's limits): the fallback is asked, and without a GPU both
  // refusals are said, the sm90a kernel's first.
  struct TmaCase {
    const char* what;
    void (*edit)(Arguments&);
    const char* needle;  // the sm90a kernel's reason
  };
  const TmaCase tma[] = {
      {"lda 390 (780 bytes)", [](Arguments& a) { a.lda = 390; }, "ldA (390) must be a multiple of 8 elements (16 bytes) for TMA"},
      {"ldb 386 (772 bytes)", [](Arguments& a) { a.ldb = 386; }, "ldB (386) must be a multiple of 8 elements (16 bytes) for TMA"},
      {"A 4 bytes past a 16-byte boundary", [](Arguments& a) { a.A = at<const __nv_bfloat16>(4); }, "A must be 16-byte aligned for TMA"},
      {"batch 2 sharing A (batch_stride_A 0)",
       [](Arguments& a) { a.batch = 2, a.batch_stride_B = 300 * 384, a.batch_stride_D = 200 * 304; },
       "batch_stride_A is 0 (broadcast); TMA cannot describe a zero stride"},
  };
  for (const TmaCase& c : tma) {
    Arguments a = valid();
    c.edit(a);
    const std::string got = said(can_implement(a));
    if (g_device) {
      expect(got == "(accepted)" && said(path(a)) == "sm80",
             std::string(c.what) + ": runs on the fallback (\"" + got + "\", path " + said(path(a)) + ")");
    } else {
      expect(has(got, c.needle) && has(got, (std::string(kBoth) + "no CUDA device").c_str()) &&
                 path(a) == nullptr,
             std::string(c.what) + ": \"" + got + "\"");
    }
  }
  // What both kernels refuse: said once, without the fallback's words.
  struct BothCase {
    const char* what;
    void (*edit)(Arguments&);
    const char* needle;
  };
  const BothCase both[] = {
      {"null A", [](Arguments& a) { a.A = nullptr; }, "args_fallback: A is null"},
      {"lda 331 (not a multiple of align 2)", [](Arguments& a) { a.lda = 331; },
       "the leading dimension of A (331) must be a multiple of its alignment (2 elements)"},
      {"A 2 bytes past a 4-byte boundary", [](Arguments& a) { a.A = at<const __nv_bfloat16>(2); }, "A must be 4-byte aligned"},
  };
  for (const BothCase& c : both) {
    Arguments a = valid();
    c.edit(a);
    const std::string got = said(can_implement(a));
    expect(has(got, c.needle) && !has(got, kBoth) && path(a) == nullptr,
           std::string(c.what) + ": \"" + got + "\"");
  }
  // The C ABI: kdl_args_fallback_path and can_implement see the same.
  {
    const Arguments v = valid();
    kdl_arg args[3] = {{(void*)v.A, 390, 0, 0}, {(void*)v.B, v.ldb, 0, 0}, {(void*)v.D, v.ldd, 0, 0}};
    kdl_gemm_shape s{v.m, v.n, v.k, 1, 1};
    const std::string got = said(kdl_args_fallback_can_implement(&s, args, 3));
    const std::string p = said(kdl_args_fallback_path(&s, args, 3));
    expect(g_device ? got == "(accepted)" && p == "sm80" : has(got, "ldA (390)") && has(got, kBoth) && p == "(accepted)",
           "C ABI lda 390: \"" + got + "\", path " + p);
    args[0].ld = 384;
    expect(said(kdl_args_fallback_path(&s, args, 3)) == (g_device ? own : "(accepted)"),
           "C ABI lda 384: path " + said(kdl_args_fallback_path(&s, args, 3)));
  }
  return finish();
}
