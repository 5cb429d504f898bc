// kdl/gemm_fallback.h -- the host side of an sm90a kernel with `fallback = sm80` in its spec.
//
// Its NAME.cu describes two kernels of one Arguments struct (kdl/gemm_host.h): `Kernel`, the sm90a
// one (kdl::GemmSm90), and `fallback::Kernel`, an sm80-path one (kdl::GemmSm80 / GemmSm80Tma) with
// the same operands and epilogue. GemmHostWithFallback<Kernel, fallback::Kernel> is NAME.h's
// can_implement / workspace_size / run / path and the C ABI: for each call it asks the sm90a
// kernel's can_implement first (the arguments, TMA's limits, the device: compute capability 9.0,
// its shared memory) and runs the sm90a kernel when it says yes; else the fallback when its own
// can_implement says yes; else neither, and can_implement says why. Only specs that ask for a
// fallback get one: any other kernel refuses what it cannot run (no silent slow path).
//
// path() says which kernel run() launches for the arguments on the current device: the primary's
// arch word ("sm90a"), the fallback's ("sm80"), or nullptr when can_implement refuses them. The C
// ABI exports it as kdl_NAME_path (kdl/abi.h).
#pragma once
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "kdl/gemm_host.h"

namespace kdl {

template <class K, class KFallback>
struct GemmHostWithFallback {
  using P = GemmHost<K>;
  using F = GemmHost<KFallback>;
  using Arguments = typename K::Arguments;
  static_assert(std::is_same<Arguments, typename KFallback::Arguments>::value,
                "the kernel and its fallback take the same Arguments");

  // Which kernel runs: none, K (the sm90a kernel) or KFallback (its sm80-path fallback).
  enum class Path { None, Primary, Fallback };

  // The kernel that runs `a` on the current device; with Path::None, *why says what is wrong (both
  // refusals when they differ: the primary's first).
  static Path choose(const Arguments& a, const char** why = nullptr) {
    const char* primary = P::can_implement(a);
    if (primary == nullptr) return Path::Primary;
    char first[512];
    std::snprintf(first, sizeof(first), "%s", primary);  // F's checks reuse the same thread-local buffer
    const char* fallback = F::can_implement(a);
    if (fallback == nullptr) return Path::Fallback;
    if (why) {
      if (std::strcmp(first, fallback) == 0) {
        *why = fallback;
      } else {
        // "NAME: x" and "NAME: y" -> "NAME: x; the sm80 fallback cannot run them either: y"
        const size_t skip = std::strlen(K::kName) + 2;
        const char* tail = std::strncmp(fallback, K::kName, skip - 2) == 0 && std::strlen(fallback) >= skip
                               ? fallback + skip
                               : fallback;
        char second[512];
        std::snprintf(second, sizeof(second), "%s", tail);  // error_message writes where `fallback` points
        *why = error_message("%s; the %s fallback cannot run them either: %s", first, KFallback::kTarget.arch, second);
      }
    }
    return Path::None;
  }

  static const char* can_implement(const Arguments& a) {
    const char* why = nullptr;
    return choose(a, &why) == Path::None ? why : nullptr;
  }

  // "sm90a", "sm80", or nullptr where can_implement refuses the arguments.
  static const char* path(const Arguments& a) {
    switch (choose(a)) {
      case Path::Primary: return K::kTarget.arch;
      case Path::Fallback: return KFallback::kTarget.arch;
      case Path::None: break;
    }
    return nullptr;
  }

  // Enough for either kernel: which one runs depends on the arguments and the device.
  static size_t workspace_size(const Arguments& a) {
    const size_t p = P::workspace_size(a), f = F::workspace_size(a);
    return p > f ? p : f;
  }

  static cudaError_t run(const Arguments& a, void* workspace, cudaStream_t stream) {
    switch (choose(a)) {
      case Path::Primary: return P::run(a, workspace, stream);
      case Path::Fallback: return F::run(a, workspace, stream);
      case Path::None: break;
    }
    return cudaErrorInvalidValue;
  }

  // ---- the C ABI (kdl/abi.h): the same arguments, unpacked by the primary ----

  static const char* abi_can_implement(const kdl_gemm_shape* shape, const kdl_arg* args, int32_t nargs) {
    Arguments a;
    if (const char* e = P::unpack(shape, args, nargs, a)) return e;
    return can_implement(a);
  }
  static const char* abi_path(const kdl_gemm_shape* shape, const kdl_arg* args, int32_t nargs) {
    Arguments a;
    if (P::unpack(shape, args, nargs, a) != nullptr) return nullptr;
    return path(a);
  }
  static size_t abi_workspace_size(const kdl_gemm_shape* shape) {
    const size_t p = P::abi_workspace_size(shape), f = F::abi_workspace_size(shape);
    return p > f ? p : f;
  }
  static int abi_run(const kdl_gemm_shape* shape, const kdl_arg* args, int32_t nargs, void* workspace,
                     size_t workspace_bytes, void* stream) {
    Arguments a;
    if (P::unpack(shape, args, nargs, a) != nullptr) return KDL_ERR_INVALID;
    switch (choose(a)) {
      case Path::Primary: return P::abi_run(shape, args, nargs, workspace, workspace_bytes, stream);
      case Path::Fallback: return F::abi_run(shape, args, nargs, workspace, workspace_bytes, stream);
      case Path::None: break;
    }
    return KDL_ERR_INVALID;
  }
  static const kdl_kernel_info* abi_info() { return P::abi_info(); }
};

}  // namespace kdl
