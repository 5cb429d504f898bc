// One-config driver for Nsight Compute / quick timing: bf16 A row, B col, D row at M=N=K (default 8192).
// Config by -D: PT_TM PT_TN PT_TK PT_WM PT_WN PT_S PT_R (defaults 128x256x64 w2x4 s3 rN).
// Usage: prof_gemm_sm80 [size] [timed_launches]  -- 2 warm-up launches, then timed_launches (default 0)
//   ncu --clock-control none --launch-skip 2 -c 1 -k regex:gemm_sm80 ./prof_gemm_sm80
#include "common.cuh"
#include <cuda_bf16.h>
#ifndef PT_TM
#define PT_TM 128
#define PT_TN 256
#define PT_TK 64
#define PT_WM 2
#define PT_WN 4
#define PT_S 3
#define PT_R false
#endif
using bf16 = __nv_bfloat16;
__global__ void fill(bf16* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = __float2bfloat16((float)(h & 0xffff) / 32768.f - 1.f);
  }
}
int main(int argc, char** argv) {
  const int S = argc > 1 ? atoi(argv[1]) : 8192;
  const int timed = argc > 2 ? atoi(argv[2]) : 0;
  using Gemm = kdl::GemmSm80<bf16, kdl::RowMajor, 8, bf16, kdl::ColMajor, 8, float, PT_TM, PT_TN, PT_TK, PT_WM, PT_WN, PT_S, PT_R,
                             StoreEpilogue<bf16>>;
  bf16 *A, *B, *D;
  size_t n = (size_t)S * S;
  CK(cudaMalloc(&A, n * 2)); CK(cudaMalloc(&B, n * 2)); CK(cudaMalloc(&D, n * 2));
  fill<<<1024, 256>>>(A, n, 1); fill<<<1024, 256>>>(B, n, 2);
  kdl::GemmProblem p{S, S, S, 1, A, S, 0, B, S, 0, 1};
  StoreEpilogue<bf16>::Params ep{D, S, 0, 1.f};
  for (int i = 0; i < 2; ++i) CK(Gemm::run(p, ep, nullptr, 0));
  CK(cudaDeviceSynchronize());
  if (timed > 0) {
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    cudaEventRecord(e0);
    for (int i = 0; i < timed; ++i) Gemm::run(p, ep, nullptr, 0);
    cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
    float ms; cudaEventElapsedTime(&ms, e0, e1); ms /= timed;
    printf("%dx%dx%d w%dx%d s%d: %.3f ms %.1f TFLOP/s\n", PT_TM, PT_TN, PT_TK, PT_WM, PT_WN, PT_S, ms, 2.0 * S * S * S / (ms * 1e-3) / 1e12);
  }
  CK(cudaGetLastError());
  return 0;
}
