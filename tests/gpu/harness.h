// Host helpers shared by the GPU test suite (tests/gpu/kdl_gpu_test.cpp) and the benchmark
// (bench/kdl_bench.cpp): CUDA error checks, a kernel library opened with dlopen and driven only
// through the C ABI of include/kdl/abi.h, and a cuBLASLt matmul on row-major-described operands.
#pragma once
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "dsl/spec.h"
#include "kdl/abi.h"

namespace kdl::gputest {

// Aborts the process with the failing call and location: a CUDA error leaves the context unusable.
#define KDL_CUDA_CHECK(x)                                                                                  \
  do {                                                                                                     \
    cudaError_t e_ = (x);                                                                                  \
    if (e_ != cudaSuccess) {                                                                               \
      std::fprintf(stderr, "FATAL: CUDA error %s (%d) at %s:%d: %s\n", cudaGetErrorString(e_), (int)e_,   \
                   __FILE__, __LINE__, #x);                                                                \
      std::fflush(stdout);                                                                                 \
      std::exit(3);                                                                                        \
    }                                                                                                      \
  } while (0)

#define KDL_CUBLAS_CHECK(x)                                                                                \
  do {                                                                                                     \
    cublasStatus_t s_ = (x);                                                                               \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                     \
      std::fprintf(stderr, "FATAL: cuBLAS status %d at %s:%d: %s\n", (int)s_, __FILE__, __LINE__, #x);    \
      std::fflush(stdout);                                                                                 \
      std::exit(3);                                                                                        \
    }                                                                                                      \
  } while (0)

// One kernel's four exported entry points.
struct KernelEntry {
  std::string name;
  const kdl_kernel_info* (*info)() = nullptr;
  const char* (*canImplement)(const kdl_gemm_shape*, const kdl_arg*, int32_t) = nullptr;
  size_t (*workspaceSize)(const kdl_gemm_shape*) = nullptr;
  int (*run)(const kdl_gemm_shape*, const kdl_arg*, int32_t, void*, size_t, void*) = nullptr;
  // kdl_NAME_path: exported by kernels with `fallback = sm80` only (null for the others).
  const char* (*path)(const kdl_gemm_shape*, const kdl_arg*, int32_t) = nullptr;
  bool complete() const { return info && canImplement && workspaceSize && run; }
};

// A library built by `kdlc build`, opened once.
class KernelLibrary {
 public:
  bool open(const std::string& path, std::string& error);
  // Looks up kdl_NAME_{info,can_implement,workspace_size,run}; `missing` names what is absent. Also
  // kdl_NAME_path, which only kernels with a fallback export (not missing when absent).
  KernelEntry lookup(const std::string& kernel, std::string& missing) const;
  // Any exported symbol (nullptr when absent): conv kernels' entry points take a kdl_conv2d_shape.
  void* symbol(const std::string& name) const;

 private:
  void* handle_ = nullptr;
};

// Blocks until the device is idle, at most `seconds`; false on timeout (a hung kernel). Any CUDA
// error is fatal.
bool waitIdle(double seconds);

// Random device memory of `bytes` filled with the byte `pattern` (poisoning).
void* deviceAllocFilled(size_t bytes, int pattern);

// cuBLASLt reference accumulator: acc = A x B for row-major-described KDL operands (A: M x K, B:
// K x N, each row or col with its ld and batch stride, in elements), written row-major M x N (ld N,
// batch stride M * N) as f32 (float inputs, f32 accumulation, no tf32) or s32 (s8 inputs).
class CublasLt {
 public:
  CublasLt();
  ~CublasLt();
  // out: device buffer of batch * M * N floats (or int32 for s8).
  void matmul(DType in, const void* A, Layout la, int64_t lda, int64_t strideA, const void* B, Layout lb,
              int64_t ldb, int64_t strideB, void* out, int64_t M, int64_t N, int64_t K, int64_t batch,
              bool fastTf32 = false, cudaStream_t stream = 0);
  // The benchmark's anchor: bf16/f16 D (row-major, ld N) = A x B with f32 compute, timed by the
  // caller. Returns false when cuBLASLt has no algorithm for it. The plan is cached per shape.
  bool matmulOut(DType in, DType out, const void* A, Layout la, int64_t lda, const void* B, Layout lb, int64_t ldb,
                 void* D, int64_t M, int64_t N, int64_t K, cudaStream_t stream, std::string* algoText = nullptr);
  // The fp8 anchor: bf16 D (row-major, ld N) = (scaleA * A) x (scaleB * B), A row-major M x K and B
  // column-major K x N of e4m3/e5m2 (the layout cuBLASLt's fp8 path requires), f32 compute.
  // `fastAccum`: CUBLASLT_MATMUL_DESC_FAST_ACCUM (the fp8 tensor-core accumulator for the whole K).
  // `blockScales`: scaleA holds one f32 per 1 x 128 block of A (VEC128_32F), scaleB one per 128 x 128
  // block of B (BLK128x128_32F), cuBLASLt's own scale layouts; else each points to one f32 (per tensor).
  // Returns false when cuBLASLt has no algorithm for it. The plan is cached.
  bool matmulFp8(DType inA, DType inB, const void* A, int64_t lda, const void* B, int64_t ldb, void* D, int64_t M,
                 int64_t N, int64_t K, const float* scaleA, const float* scaleB, bool fastAccum, bool blockScales,
                 cudaStream_t stream, std::string* algoText = nullptr);
  // How many of cuBLASLt's heuristic algorithms a new matmulOut / matmulFp8 plan times (on the call's own
  // buffers, 3 + 10 launches each) to keep the fastest; 1 (the default): the heuristic's first, untimed.
  void setCandidates(int n) { candidates_ = n < 1 ? 1 : n; }

 private:
  int candidates_ = 1;
  struct Plan;
  // Picks plan->algo among the `found` heuristic results (timed when there is more than one); false when none runs.
  bool choose(Plan* plan, const cublasLtMatmulHeuristicResult_t* heur, int found, const void* A, const void* B, void* D,
              cudaStream_t stream);
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspaceBytes_ = 64u << 20;
  std::map<std::string, Plan*> plans_;
};

// Block scales of an fp8 operand (the language's `A : e4m3 row scale (BM, BK);`, `B : ... scale (BN,
// BK);`): one f32 scale per `outer` x `k` block, `outer` along M (A) or N (B). Off: {0, 0}. The scale
// tensor is k-block major: the scale of A's block (mb, kb) is scale_A[b * batch_stride + kb * ld + mb].
struct BlockScale {
  int outer = 0, k = 0;
  bool on() const { return outer > 0 && k > 0; }
};

// The operand's `scale (R, C)` suffix (Operand::scaleBlock), or off.
inline BlockScale blockScaleOf(const Operand* o) {
  if (!o || !o->scaleBlock) return {};
  return BlockScale{(*o->scaleBlock)[0], (*o->scaleBlock)[1]};
}

// fp8: every how many k-tiles the wgmma accumulator is promoted into f32 (0: fast accumulation).
inline int promoteEveryOf(const KernelSpec& s) { return s.promoteEvery.value; }

std::string fmtDouble(double v, int prec = 3);
DType parseDType(const std::string& s, bool* ok = nullptr);

}  // namespace kdl::gputest
