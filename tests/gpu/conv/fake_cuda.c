/* The CUDA runtime and cuBLASLt calls of kdl_gpu_test, on host memory, for LD_PRELOAD: with the fake conv
 * library (fake_conv_lib.c, which computes on host memory) kdl_gpu_test's conv path runs end to end without a
 * GPU (tests/gpu/conv/cpu_smoke.py --kdl-gpu-test). "Device" memory is malloc'd, copies are memcpy, events
 * are complete at once, the device is one compute capability 9.0 GPU. cuBLASLt: only the handle (the GEMM
 * path's matmuls are not faked: GEMM kernels have no place here). */
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

cudaError_t cudaMalloc(void** p, size_t n) {
  *p = aligned_alloc(256, (n + 255) / 256 * 256);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* p) {
  free(p);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int v, size_t n) {
  memset(p, v, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, enum cudaMemcpyKind k) {
  (void)k;
  memcpy(d, s, n);
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error (fake)" : "error (fake CUDA)"; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  (void)flags;
  *e = (cudaEvent_t)malloc(16);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  (void)e, (void)s;
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  (void)e;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  free((void*)e);
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* v, enum cudaDeviceAttr a, int dev) {
  (void)dev;
  *v = a == cudaDevAttrComputeCapabilityMajor ? 9 : a == cudaDevAttrComputeCapabilityMinor ? 0 : 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* p, int dev) {
  (void)dev;
  memset(p, 0, sizeof *p);
  strcpy(p->name, "fake CUDA device (host memory)");
  p->major = 9, p->minor = 0, p->multiProcessorCount = 1, p->sharedMemPerBlockOptin = 232448;
  return cudaSuccess;
}
cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  *h = (cublasLtHandle_t)malloc(16);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  free((void*)h);
  return CUBLAS_STATUS_SUCCESS;
}
