// Runs two generated kernels on random data and checks every output element against a CPU
// reference. Prints PASS or FAIL (exit 1).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "consumer_bf16_bias_relu.h"
#include "consumer_f16_nn.h"

#define CHECK_CUDA(x)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      std::printf("FAIL: %s: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
      return false;                                                                          \
    }                                                                                        \
  } while (0)

template <class T>
static T* upload(const std::vector<T>& h) {
  T* d = nullptr;
  if (cudaMalloc(&d, h.size() * sizeof(T)) != cudaSuccess) return nullptr;
  cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}

static bool close_enough(float got, float want, const char* what, int m, int n) {
  float tol = 2e-2f * std::fabs(want) + 2e-2f;
  if (std::fabs(got - want) <= tol) return true;
  std::printf("FAIL: %s D[%d, %d] = %g, expected %g\n", what, m, n, got, want);
  return false;
}

// D = relu(alpha * A x B + bias), A m x k row-major, B k x n column-major (n x k row-major).
static bool test_bf16_bias_relu(std::mt19937& rng) {
  namespace K = kdl_kernels::consumer_bf16_bias_relu;
  const int M = 300, N = 264, Kd = 136;  // ragged in M and N on purpose
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<__nv_bfloat16> A(size_t(M) * Kd), B(size_t(N) * Kd);
  std::vector<float> bias(N);
  for (auto& x : A) x = __float2bfloat16(u(rng));
  for (auto& x : B) x = __float2bfloat16(u(rng));
  for (auto& x : bias) x = u(rng);
  K::Arguments args;
  args.m = M; args.n = N; args.k = Kd;
  args.A = upload(A); args.lda = Kd;
  args.B = upload(B); args.ldb = Kd;
  __nv_bfloat16* D = nullptr;
  CHECK_CUDA(cudaMalloc(&D, size_t(M) * N * sizeof(__nv_bfloat16)));
  args.D = D; args.ldd = N;
  args.alpha = 0.5f;
  args.bias = upload(bias);
  if (const char* why = K::can_implement(args)) {
    std::printf("FAIL: can_implement: %s\n", why);
    return false;
  }
  CHECK_CUDA(K::run(args));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<__nv_bfloat16> out(size_t(M) * N);
  CHECK_CUDA(cudaMemcpy(out.data(), D, out.size() * sizeof(out[0]), cudaMemcpyDeviceToHost));
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float acc = 0;
      for (int k = 0; k < Kd; ++k) acc += __bfloat162float(A[size_t(m) * Kd + k]) * __bfloat162float(B[size_t(n) * Kd + k]);
      float want = std::fmax(0.f, 0.5f * acc + bias[n]);
      if (!close_enough(__bfloat162float(out[size_t(m) * N + n]), want, "bf16_bias_relu", m, n)) return false;
    }
  cudaFree((void*)args.A); cudaFree((void*)args.B); cudaFree(D); cudaFree((void*)args.bias);
  return true;
}

// D = alpha * A x B + beta * C, A m x k row-major, B k x n row-major, batched.
static bool test_f16_nn(std::mt19937& rng) {
  namespace K = kdl_kernels::consumer_f16_nn;
  const int M = 128, N = 192, Kd = 96, Bt = 3;
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<half> A(size_t(Bt) * M * Kd), B(size_t(Bt) * Kd * N), C(size_t(Bt) * M * N);
  for (auto& x : A) x = __float2half(u(rng));
  for (auto& x : B) x = __float2half(u(rng));
  for (auto& x : C) x = __float2half(u(rng));
  K::Arguments args;
  args.m = M; args.n = N; args.k = Kd; args.batch = Bt;
  args.A = upload(A); args.lda = Kd; args.batch_stride_A = int64_t(M) * Kd;
  args.B = upload(B); args.ldb = N; args.batch_stride_B = int64_t(Kd) * N;
  args.C = upload(C); args.ldc = N; args.batch_stride_C = int64_t(M) * N;
  half* D = nullptr;
  CHECK_CUDA(cudaMalloc(&D, C.size() * sizeof(half)));
  args.D = D; args.ldd = N; args.batch_stride_D = int64_t(M) * N;
  args.alpha = 1.0f; args.beta = -0.5f;
  if (const char* why = K::can_implement(args)) {
    std::printf("FAIL: can_implement: %s\n", why);
    return false;
  }
  CHECK_CUDA(K::run(args));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<half> out(C.size());
  CHECK_CUDA(cudaMemcpy(out.data(), D, out.size() * sizeof(half), cudaMemcpyDeviceToHost));
  for (int b = 0; b < Bt; ++b)
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        float acc = 0;
        for (int k = 0; k < Kd; ++k)
          acc += __half2float(A[(size_t(b) * M + m) * Kd + k]) * __half2float(B[(size_t(b) * Kd + k) * N + n]);
        size_t i = (size_t(b) * M + m) * N + n;
        float want = acc - 0.5f * __half2float(C[i]);
        if (!close_enough(__half2float(out[i]), want, "f16_nn", m, n)) return false;
      }
  cudaFree((void*)args.A); cudaFree((void*)args.B); cudaFree((void*)args.C); cudaFree(D);
  return true;
}

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("SKIP: no CUDA device\n");
    return 0;
  }
  std::mt19937 rng(1234);
  bool ok = test_bf16_bias_relu(rng);
  ok = test_f16_nn(rng) && ok;
  std::printf("%s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
