// kdl/runtime.h -- host-only C++ support for the kernels kdlc emits: argument and device checks
// shared by every generated can_implement() (kdl/gemm_host.h), and the driver-API adapter.
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
#include <climits>
#include <cstdio>
#include <mutex>

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

// nullptr when a C-ABI convolution shape fits the generated C++ API (int sizes), else what is wrong.
// The int32 fields (padding, strides, dilations, split_k) are the kernel's to check, by name.
inline const char* check_abi_conv_shape(const char* kernel, const kdl_conv2d_shape* s) {
  if (s == nullptr) return error_message("%s: shape is null", kernel);
  const int64_t kMax = 0x7fffffff;
  const int64_t v[] = {s->n, s->h, s->w, s->c, s->k, s->r, s->s, s->p, s->q};
  const char* names[] = {"n", "h", "w", "c", "k", "r", "s", "p", "q"};
  for (int i = 0; i < 9; ++i)
    if (v[i] < 0 || v[i] > kMax)
      return error_message("%s: shape out of range (%s=%lld; sizes are 0..%lld)", kernel, names[i], (long long)v[i],
                           (long long)kMax);
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

// nullptr when `bytes` of dynamic shared memory per block fit `device_limit` (the device's opt-in
// maximum, cudaDevAttrMaxSharedMemoryPerBlockOptin), else what is wrong. Pure: the decision of
// check_device_smem, testable without such a device.
inline const char* smem_limit_message(const char* kernel, long long bytes, long long device_limit, int dev) {
  if (bytes <= device_limit) return nullptr;
  return error_message("%s: needs %lld bytes of shared memory per block; device %d allows at most %lld", kernel, bytes,
                       dev, device_limit);
}

// nullptr when the current device can give a block `bytes` of dynamic shared memory. A kernel
// built for sm80 (up to 163 KB) also loads on sm86/sm89 GPUs (99 KB), where its launch would fail.
inline const char* check_device_smem(const char* kernel, long long bytes) {
  int dev = 0, limit = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
    cudaGetLastError();
    return error_message("%s: cannot query the shared-memory limit of the current device", kernel);
  }
  return smem_limit_message(kernel, bytes, limit, dev);
}

// The extent, in elements, of one batch of a rows x cols row-major matrix with leading dimension
// ld: (rows-1)*ld + cols; 0 when empty, -1 when it does not fit in int64.
inline int64_t row_major_extent(int64_t rows, int64_t cols, int64_t ld) {
  if (rows <= 0 || cols <= 0) return 0;
  const int64_t kMax = INT64_MAX;
  if (rows > 1 && ld > (kMax - cols) / (rows - 1)) return -1;
  return (rows - 1) * ld + cols;
}

// Checks one epilogue tensor (C, D, extra outputs), m x n, row-major (element (m, n) at m * ld + n) or,
// with col_major, column-major (at n * ld + m): non-null (unless optional), element-aligned, ld at least
// the contiguous extent, batch strides non-negative. A written tensor's batches must not overlap
// (batch_stride >= the extent of one batch), or batches overwrite each other; a read-only one may use
// batch_stride 0 (one matrix broadcast to every batch).
template <class T>
inline const char* check_epilogue_tensor(const char* kernel, const char* name, const T* p, int64_t ld,
                                         int64_t batch_stride, int m, int n, int batch, bool optional,
                                         bool written = false, bool col_major = false) {
  if (m == 0 || n == 0) return nullptr;
  if (p == nullptr) return optional ? nullptr : error_message("%s: %s is null", kernel, name);
  if (!is_aligned(p, sizeof(T))) return error_message("%s: %s is not aligned to its element size (%zu bytes)", kernel, name, sizeof(T));
  // Lines of `contig` elements, `lines` of them: rows of a row-major tensor, columns of a column-major one.
  const int contig = col_major ? m : n, lines = col_major ? n : m;
  const char* contigName = col_major ? "m" : "n";
  if (ld < contig)
    return error_message("%s: ld of %s (%lld) < %s (%d) for a %s tensor", kernel, name, (long long)ld, contigName, contig,
                         col_major ? "column-major" : "row-major");
  const int64_t extent = row_major_extent(lines, contig, ld);
  if (extent < 0) return error_message("%s: ld of %s (%lld) is too large: the matrix extent overflows int64", kernel, name, (long long)ld);
  if (batch > 1 && batch_stride < 0) return error_message("%s: batch_stride_%s (%lld) is negative", kernel, name, (long long)batch_stride);
  if (written && batch > 1 && batch_stride < extent)
    return error_message("%s: batch_stride_%s (%lld) < %s = %lld: the %d batches of %s would overwrite each other",
                         kernel, name, (long long)batch_stride, col_major ? "(n-1)*ld + m" : "(m-1)*ld + n",
                         (long long)extent, batch, name);
  if (batch > 1 && batch_stride > (INT64_MAX - extent) / (batch - 1))
    return error_message("%s: batch_stride_%s (%lld) is too large: %d batches overflow int64", kernel, name,
                         (long long)batch_stride, batch);
  return nullptr;
}

// Checks a device vector or scalar argument: non-null and element-aligned.
template <class T>
inline const char* check_device_pointer(const char* kernel, const char* name, const T* p) {
  if (p == nullptr) return error_message("%s: %s is null", kernel, name);
  if (!is_aligned(p, sizeof(T))) return error_message("%s: %s is not aligned to its element size (%zu bytes)", kernel, name, sizeof(T));
  return nullptr;
}

// Checks a broadcast vector input ([row], [col]): a device pointer and a batch stride that is not
// negative (0: one vector for every batch).
template <class T>
inline const char* check_vector_input(const char* kernel, const char* name, const T* p, int64_t batch_stride, int batch) {
  if (const char* e = check_device_pointer(kernel, name, p)) return e;
  if (batch > 1 && batch_stride < 0) return error_message("%s: batch_stride_%s (%lld) is negative", kernel, name, (long long)batch_stride);
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
  if (batch > 1 && batch_stride < 0)
    return error_message("%s: batch_stride_%s (%lld) is negative", kernel, name, (long long)batch_stride);
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

}  // namespace kdl
