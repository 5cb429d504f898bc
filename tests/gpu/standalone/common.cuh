// Shared helpers for the standalone sm80 GEMM test and benchmark (host side + epilogues).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include "kdl/gemm_sm80.cuh"
#include "kdl/activations.cuh"

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x); \
      exit(2);                                                                                  \
    }                                                                                           \
  } while (0)

// Epilogue shaped exactly like the generator's: D = act(alpha*acc + beta*C + bias[n] + rowb[m]); amax(|D|)
// Benchmark inputs: hashed values in [-1, 1) (random data draws the power real data does; constants read
// faster than they should).
__global__ inline void fill_rand(__nv_bfloat16* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed; h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    p[i] = __float2bfloat16((float)(h & 0xffff) / 32768.f - 1.f);
  }
}

template <class TOut, class TC>
struct TestEpilogue {
  struct Params {
    TOut* D; int64_t ldd, batch_stride_D;
    const TC* C; int64_t ldc, bsC;
    const float* bias; int64_t bsBias;   // per column n
    const float* rowb;                    // per row m (batch stride 0)
    const float* alpha_ptr;               // device scalar multiplies alpha when non-null
    float alpha, beta;
    int act;                              // 0 none, 1 gelu, 2 relu
    float* amax;                          // zeroed by the host before launch
  };
  struct State { float amax = 0.f; };
  // D's values (GemmSm90 stores them through a TMA store); apply<V> below stores them itself.
  using ElementD = TOut;
  template <int V>
  __device__ __forceinline__ void compute(const Params& p, State& s, const kdl::EpilogueCoord& co, const float (&acc)[V],
                                          float (&d)[V]) const {
    float c[V], b[V], r[V];
    if (p.C) kdl::load_tile<TC, V>(p.C, p.ldc, p.bsC, co, c); else for (int i = 0; i < V; ++i) c[i] = 0.f;
    if (p.bias) kdl::load_col_broadcast<float, V>(p.bias, p.bsBias, co, b); else for (int i = 0; i < V; ++i) b[i] = 0.f;
    if (p.rowb) kdl::load_row_broadcast<float, V>(p.rowb, 0, co, r); else for (int i = 0; i < V; ++i) r[i] = 0.f;
    float alpha = p.alpha;
    if (p.alpha_ptr) alpha *= kdl::load_scalar<float>(p.alpha_ptr);
#pragma unroll
    for (int i = 0; i < V; ++i) {
      float x = alpha * acc[i] + p.beta * c[i] + b[i] + r[i];
      if (p.act == 1) x = kdl::gelu(x);
      else if (p.act == 2) x = kdl::relu(x);
      d[i] = x;
      if (i < co.valid) kdl::amax_accumulate(s.amax, x);
    }
  }
  template <int V>
  __device__ __forceinline__ void apply(const Params& p, State& s, const kdl::EpilogueCoord& co, const float (&acc)[V]) const {
    float d[V];
    compute<V>(p, s, co, acc, d);
    kdl::store_tile<TOut, V>(p.D, p.ldd, p.batch_stride_D, co, d);
  }
  __device__ __forceinline__ void finish(const Params& p, State& s) const {
    if (p.amax) kdl::amax_finish(p.amax, s.amax);
  }
};

// Minimal epilogue for benchmarking: D = alpha * acc (bf16/half/float out), stored by apply<V> (the
// staged path of GemmSm90 and the sm80 templates).
template <class TOut>
struct StoreEpilogueApply {
  struct Params { TOut* D; int64_t ldd, batch_stride_D; float alpha; };
  struct State {};
  template <int V>
  __device__ __forceinline__ void compute(const Params& p, State&, const kdl::EpilogueCoord&, const float (&acc)[V],
                                          float (&d)[V]) const {
#pragma unroll
    for (int i = 0; i < V; ++i) d[i] = p.alpha * acc[i];
  }
  template <int V>
  __device__ __forceinline__ void apply(const Params& p, State& s, const kdl::EpilogueCoord& co, const float (&acc)[V]) const {
    float d[V];
    compute<V>(p, s, co, acc, d);
    kdl::store_tile<TOut, V>(p.D, p.ldd, p.batch_stride_D, co, d);
  }
  __device__ __forceinline__ void finish(const Params&, State&) const {}
};
// The same, handing D's values to GemmSm90 (ElementD: its TMA store of D).
template <class TOut>
struct StoreEpilogue : StoreEpilogueApply<TOut> {
  using ElementD = TOut;
};
