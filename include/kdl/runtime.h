// kdl/runtime.h -- host-only C++ support for the kernels kdlc emits: argument checks shared by
// every generated can_implement(), and the driver-API adapter.
//
// Needs the CUDA runtime headers and libcudart, never libcuda: driver functions (the Hopper path's
// cuTensorMapEncodeTiled) are looked up at run time through cudaGetDriverEntryPointByVersion, behind
// a provider that a host framework can replace with its own (PyTorch, JAX, a test double):
//
//   void* my_provider(const char* symbol, unsigned int cuda_version, void* user) { ... }
//   kdl::set_driver_entry_point_provider(&my_provider, my_state);
//
// Call it before the first kernel launch; kdl::driver_api() resolves the table once per process
// (per provider change).
#pragma once
#include <cuda.h>  // driver types and prototypes only; nothing here links against libcuda
#include <cuda_runtime_api.h>
#include <kdl/abi.h>

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <type_traits>
#include <utility>

namespace kdl {

// ---- messages ----------------------------------------------------------------------------------------

// printf into a thread-local buffer; the result is valid until the thread's next call.
inline const char* error_message(const char* fmt, ...) {
  static thread_local char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

inline bool is_aligned(const void* p, size_t bytes) { return bytes <= 1 || reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// nullptr when a C-ABI shape fits the generated C++ API (int sizes, batch >= 1), else what is wrong.
inline const char* check_abi_shape(const char* kernel, const kdl_gemm_shape* s) {
  if (s == nullptr) return error_message("%s: shape is null", kernel);
  const int64_t kMax = 0x7fffffff;
  if (s->m < 0 || s->n < 0 || s->k < 0 || s->m > kMax || s->n > kMax || s->k > kMax || s->batch < 1 || s->batch > kMax)
    return error_message("%s: shape out of range (m=%lld, n=%lld, k=%lld, batch=%lld)", kernel, (long long)s->m,
                         (long long)s->n, (long long)s->k, (long long)s->batch);
  return nullptr;
}

// nullptr when the current device can run code built for `arch`: compute capability >= min_cc
// (major*10+minor), or exactly min_cc for architecture-specific targets (sm90a).
inline const char* check_device_arch(const char* kernel, const char* arch, int min_cc, bool exact) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    return error_message("%s: no CUDA device is available", kernel);
  }
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    cudaGetLastError();
    return error_message("%s: cannot query the compute capability of device %d", kernel, dev);
  }
  const int cc = major * 10 + minor;
  if (exact && cc != min_cc)
    return error_message("%s: built for %s, which runs only on compute capability %d.%d; device %d is %d.%d", kernel,
                         arch, min_cc / 10, min_cc % 10, dev, major, minor);
  if (!exact && cc < min_cc)
    return error_message("%s: built for %s, which needs compute capability %d.%d or newer; device %d is %d.%d", kernel,
                         arch, min_cc / 10, min_cc % 10, dev, major, minor);
  return nullptr;
}

// Checks one row-major epilogue tensor (C, D, extra outputs): non-null (unless optional),
// element-aligned, ld >= n, strides non-negative.
template <class T>
inline const char* check_epilogue_tensor(const char* kernel, const char* name, const T* p, int64_t ld,
                                         int64_t batch_stride, int m, int n, int batch, bool optional) {
  if (m == 0 || n == 0) return nullptr;
  if (p == nullptr) return optional ? nullptr : error_message("%s: %s is null", kernel, name);
  if (!is_aligned(p, sizeof(T))) return error_message("%s: %s is not aligned to its element size (%zu bytes)", kernel, name, sizeof(T));
  if (ld < n) return error_message("%s: ld of %s (%lld) < n (%d) for a row-major tensor", kernel, name, (long long)ld, n);
  if (batch > 1 && batch_stride < 0) return error_message("%s: batch_stride_%s (%lld) is negative", kernel, name, (long long)batch_stride);
  return nullptr;
}

// Checks a device vector or scalar argument: non-null and element-aligned.
template <class T>
inline const char* check_device_pointer(const char* kernel, const char* name, const T* p) {
  if (p == nullptr) return error_message("%s: %s is null", kernel, name);
  if (!is_aligned(p, sizeof(T))) return error_message("%s: %s is not aligned to its element size (%zu bytes)", kernel, name, sizeof(T));
  return nullptr;
}

// Checks a matrix operand of the mainloop (A, B): aligned pointer, ld and batch stride.
template <class T>
inline const char* check_mainloop_operand(const char* kernel, const char* name, const T* p, int64_t ld,
                                          int64_t batch_stride, int align, int batch) {
  if (p == nullptr) return error_message("%s: %s is null", kernel, name);
  const size_t bytes = size_t(align) * sizeof(T);
  if (!is_aligned(p, bytes))
    return error_message("%s: %s must be %zu-byte aligned (the kernel was generated with align %d for it)", kernel, name,
                         bytes, align);
  if (ld % align)
    return error_message("%s: the leading dimension of %s (%lld) must be a multiple of its alignment (%d elements)",
                         kernel, name, (long long)ld, align);
  if (batch > 1 && batch_stride % align)
    return error_message("%s: batch_stride_%s (%lld) must be a multiple of its alignment (%d elements)", kernel, name,
                         (long long)batch_stride, align);
  return nullptr;
}

// ---- driver entry points ---------------------------------------------------------------------------------

// Returns the address of driver function `symbol` (e.g. "cuTensorMapEncodeTiled") with the ABI of
// CUDA version `cuda_version` (e.g. 12000), or nullptr.
using DriverEntryPointProvider = void* (*)(const char* symbol, unsigned int cuda_version, void* user);

// The default: the CUDA runtime's cudaGetDriverEntryPointByVersion (no link-time libcuda).
inline void* default_driver_entry_point(const char* symbol, unsigned int cuda_version, void*) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, cuda_version, cudaEnableDefault, &status) != cudaSuccess ||
      status != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return fn;
}

struct DriverApi {
  decltype(&::cuTensorMapEncodeTiled) cuTensorMapEncodeTiled = nullptr;
  decltype(&::cuGetErrorString) cuGetErrorString = nullptr;
};

namespace detail {
struct DriverState {
  std::mutex mu;
  DriverEntryPointProvider provider = &default_driver_entry_point;
  void* user = nullptr;
  std::atomic<unsigned> generation{1};
};
inline DriverState& driver_state() {
  static DriverState s;
  return s;
}
}  // namespace detail

// Replaces the provider (nullptr restores the default). Tables resolved before are re-resolved.
inline void set_driver_entry_point_provider(DriverEntryPointProvider provider, void* user = nullptr) {
  detail::DriverState& s = detail::driver_state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.provider = provider ? provider : &default_driver_entry_point;
  s.user = provider ? user : nullptr;
  s.generation.fetch_add(1);
}

// Looks one symbol up through the current provider.
inline void* driver_entry_point(const char* symbol, unsigned int cuda_version) {
  detail::DriverState& s = detail::driver_state();
  DriverEntryPointProvider provider;
  void* user;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    provider = s.provider;
    user = s.user;
  }
  return provider(symbol, cuda_version, user);
}

// The driver functions KDL kernels use, resolved through the provider (12.0 ABI).
inline const DriverApi& driver_api() {
  static thread_local DriverApi api;
  static thread_local unsigned resolved = 0;
  const unsigned gen = detail::driver_state().generation.load();
  if (resolved != gen) {
    api.cuTensorMapEncodeTiled =
        reinterpret_cast<decltype(api.cuTensorMapEncodeTiled)>(driver_entry_point("cuTensorMapEncodeTiled", 12000));
    api.cuGetErrorString = reinterpret_cast<decltype(api.cuGetErrorString)>(driver_entry_point("cuGetErrorString", 12000));
    resolved = gen;
  }
  return api;
}

// ---- the C ABI entry points -----------------------------------------------------------------------

namespace detail {
template <class A, class = void>
struct has_split_k : std::false_type {};
template <class A>
struct has_split_k<A, std::void_t<decltype(std::declval<A&>().split_k)>> : std::true_type {};
}  // namespace detail

// The bodies of a generated kernel's extern "C" can_implement / workspace_size / run (include/kdl/abi.h),
// written once over its C++ API: Unpack turns a shape plus kdl_arg[] into Arguments (nullptr or what
// is wrong), the rest are the kernel's own can_implement, workspace_size and run.
template <class Arguments, const char* (*Unpack)(const kdl_gemm_shape*, const kdl_arg*, int32_t, Arguments&),
          const char* (*CanImplement)(const Arguments&), size_t (*WorkspaceSize)(const Arguments&),
          cudaError_t (*Run)(const Arguments&, void*, cudaStream_t)>
struct AbiEntry {
  static const char* can_implement(const kdl_gemm_shape* shape, const kdl_arg* args, int32_t nargs) {
    Arguments a;
    if (const char* e = Unpack(shape, args, nargs, a)) return e;
    return CanImplement(a);
  }
  static size_t workspace_size(const kdl_gemm_shape* shape) {
    if (check_abi_shape("", shape) != nullptr) return 0;
    Arguments a;
    a.m = (int)shape->m; a.n = (int)shape->n; a.k = (int)shape->k; a.batch = (int)shape->batch;
    if constexpr (detail::has_split_k<Arguments>::value) a.split_k = shape->split_k;
    return WorkspaceSize(a);
  }
  static int run(const kdl_gemm_shape* shape, const kdl_arg* args, int32_t nargs, void* workspace,
                 size_t workspace_bytes, void* stream) {
    Arguments a;
    if (Unpack(shape, args, nargs, a) != nullptr || CanImplement(a) != nullptr) return KDL_ERR_INVALID;
    if (workspace_bytes < WorkspaceSize(a)) return KDL_ERR_INVALID;
    const cudaError_t e = Run(a, workspace, static_cast<cudaStream_t>(stream));
    return e == cudaSuccess ? KDL_OK : KDL_ERR_CUDA + (int)e;
  }
};

}  // namespace kdl
