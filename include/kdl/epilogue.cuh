// kdl/epilogue.cuh -- helpers called by generated epilogue functors.
//
// The GEMM kernel calls, on every thread that runs the epilogue,
//   Epilogue::prepare(params, state)                 (when the functor has it: epilogue_prepare below)
// once before the epilogue of each output tile (the functor loads its device scalars into the state there), then per
// V consecutive output columns coord.n .. coord.n+V-1 of row coord.m (coord.valid of them are < N;
// rows >= M are never passed) either
//   Epilogue::apply<V>(params, state, coord, acc[V])                 (computes and stores D), or
//   Epilogue::compute<V>(params, state, coord, acc[V], out_D[V])     (computes D, stores the rest;
//                                                                     the kernel stores D: GemmSm90)
// where coord is an EpilogueCoord, or (GemmSm90's interior tiles, when the functor declares
// `whole<V>(params, batch)` and it holds for the tile) an EpilogueCoordWhole: a whole, aligned vector
// whose accesses need no checks (below).
// and finally
//   Epilogue::finish(params, state)
// once on every thread of the block.
//
// Coordinates are those of the kernel's output. Tensors laid out like it (load_tile, store_tile) hold
// element (b, m, n) at
//   base + b * batch_stride + m * ld + n        (strides in elements);
// tensors laid out transposed to it (load_tile_transposed, store_tile_transposed: a column-major C or
// extra output beside a row-major D, or a row-major one beside a column-major D, whose kernel computes
// D^T, kdl/gemm_transposed.h) hold it at
//   base + b * batch_stride + n * ld + m
// and are accessed one element at a time (strided: correct, slower than the vector accesses).
#pragma once
#include <stdint.h>

#include <type_traits>

#include "kdl/numeric.cuh"

namespace kdl {

struct EpilogueCoord { int batch; int m; int n; int valid; };

// A coordinate of a whole, aligned vector: c.valid == V and c.n % V == 0, in a tile for which the
// functor's `whole<V>(params, batch)` held (C is not null, and every tensor it loads or stores
// along the row -- C, [col] inputs, extra outputs -- takes V-element vector accesses there). The
// sm90a TMA-store epilogue passes it for interior tiles; the helpers below then access memory
// without the per-call null, range and alignment checks, so the generated code is straight-line
// (addresses as a row base plus immediates, one load per [col] value shared by the rows).
struct EpilogueCoordWhole : EpilogueCoord {};

// Reads V consecutive floats of an accumulator row staged in shared memory (16-byte aligned) into v,
// for the mainloops' epilogues (GemmSm80::run_epilogue, GemmSm90). With V == 8, lanes 4..7 of each
// group of 8 read the two 16-byte halves in the other order, so that a warp's reads of one row
// segment are free of bank conflicts.
template <int V>
__device__ __forceinline__ void load_staged_row(const float* src, int lane, float (&v)[V]) {
  if constexpr (V == 8) {
    const int h = (lane >> 2) & 1;
    const float4 x = *reinterpret_cast<const float4*>(src + 4 * h);
    const float4 y = *reinterpret_cast<const float4*>(src + 4 - 4 * h);
    v[0] = h ? y.x : x.x; v[1] = h ? y.y : x.y; v[2] = h ? y.z : x.z; v[3] = h ? y.w : x.w;
    v[4] = h ? x.x : y.x; v[5] = h ? x.y : y.y; v[6] = h ? x.z : y.z; v[7] = h ? x.w : y.w;
  } else {
#pragma unroll
    for (int q = 0; q < V; ++q) v[q] = src[q];
  }
}

namespace detail {
template <int Bytes> struct VecOf;
template <> struct VecOf<16> { using type = uint4; };
template <> struct VecOf<8>  { using type = uint2; };
template <> struct VecOf<4>  { using type = uint32_t; };
template <> struct VecOf<2>  { using type = uint16_t; };
template <> struct VecOf<1>  { using type = uint8_t; };

// Largest power-of-two access (<= 16 bytes) that evenly divides V elements of T.
template <class T, int V> struct VecAccess {
  static constexpr int kBytes = V * (int)sizeof(T);
  static constexpr int kChunk = kBytes >= 16 ? 16 : (kBytes >= 8 ? 8 : (kBytes >= 4 ? 4 : (kBytes >= 2 ? 2 : 1)));
  static constexpr bool kOk = (kBytes % kChunk) == 0;
  static constexpr int kN = kBytes / kChunk;
  using Vec = typename VecOf<kChunk>::type;
};

// V contiguous elements from p into float (out[i] = 0 for i >= valid).
template <class T, int V>
__device__ __forceinline__ void load_contig(const T* p, int valid, float (&out)[V]) {
  using A = VecAccess<T, V>;
  if (A::kOk && valid == V && (reinterpret_cast<uintptr_t>(p) % A::kChunk) == 0) {
    typename A::Vec tmp[A::kN];
#pragma unroll
    for (int i = 0; i < A::kN; ++i) tmp[i] = reinterpret_cast<const typename A::Vec*>(p)[i];
    const T* e = reinterpret_cast<const T*>(tmp);
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = to_float<T>(e[i]);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = (i < valid) ? to_float<T>(p[i]) : 0.f;
  }
}

// A row's base pointer (global memory), the same for all of the row's calls, kept whole: without
// it the compiler re-associates base + (b * stride + m * ld + n) and rebuilds the 64-bit sum for
// every call, where the row's base plus one wide multiply-add of n would do.
template <class T>
__device__ __forceinline__ T* row_base(T* p) {
  size_t g = __cvta_generic_to_global(p);
  asm("" : "+l"(g));
  return static_cast<T*>(__cvta_global_to_generic(g));
}

// V contiguous elements at p, which the caller knows to be aligned for VecAccess<T, V>: vector
// accesses only, no checks (EpilogueCoordWhole).
template <class T, int V>
__device__ __forceinline__ void load_vector(const T* p, float (&out)[V]) {
  using A = VecAccess<T, V>;
  static_assert(A::kOk, "kdl: a whole vector of V elements of T takes no vector access");
  typename A::Vec tmp[A::kN];
#pragma unroll
  for (int i = 0; i < A::kN; ++i) tmp[i] = reinterpret_cast<const typename A::Vec*>(p)[i];
  const T* e = reinterpret_cast<const T*>(tmp);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = to_float<T>(e[i]);
}
template <class T, int V>
__device__ __forceinline__ void store_vector(T* p, const float (&v)[V]) {
  using A = VecAccess<T, V>;
  static_assert(A::kOk, "kdl: a whole vector of V elements of T takes no vector access");
  typename A::Vec tmp[A::kN];
  T* e = reinterpret_cast<T*>(tmp);
#pragma unroll
  for (int i = 0; i < V; ++i) e[i] = convert_out<T>(v[i]);
#pragma unroll
  for (int i = 0; i < A::kN; ++i) reinterpret_cast<typename A::Vec*>(p)[i] = tmp[i];
}
}  // namespace detail

// For a functor's whole<V>: whether a tensor laid out like the coordinates (load_tile, store_tile)
// takes V-element vector accesses at every row of batch b and every column that is a multiple of V
// (its batch's base aligned, its rows a multiple of the access apart); a [col] vector (load_col_broadcast)
// at every such column of batch b.
template <class T, int V>
__device__ __forceinline__ bool tile_vector_aligned(const T* base, int64_t ld, int64_t batch_stride, int b) {
  using A = detail::VecAccess<T, V>;
  return A::kOk && base != nullptr &&
         ((reinterpret_cast<uintptr_t>(base + (int64_t)b * batch_stride) | uint64_t(ld * (int64_t)sizeof(T))) %
          A::kChunk) == 0;
}
template <class T, int V>
__device__ __forceinline__ bool col_vector_aligned(const T* vec, int64_t batch_stride, int b) {
  using A = detail::VecAccess<T, V>;
  return A::kOk && vec != nullptr && reinterpret_cast<uintptr_t>(vec + (int64_t)b * batch_stride) % A::kChunk == 0;
}

// Whether C (which reads as 0 when null) is read at this coordinate: always at an EpilogueCoordWhole.
__device__ __forceinline__ bool source_present(const void* C, const EpilogueCoord&) { return C != nullptr; }
__device__ __forceinline__ constexpr bool source_present(const void*, const EpilogueCoordWhole&) { return true; }

// Source tile (e.g. C): out[i] = base[b, m, n+i] for i < c.valid, else 0.
template <class T, int V>
__device__ __forceinline__ void load_tile(const T* base, int64_t ld, int64_t batch_stride,
                                          const EpilogueCoord& c, float (&out)[V]) {
  const T* p = base + (int64_t)c.batch * batch_stride + (int64_t)c.m * ld + c.n;
  detail::load_contig<T, V>(p, c.valid, out);
}

template <class T, int V>
__device__ __forceinline__ void load_tile(const T* base, int64_t ld, int64_t batch_stride,
                                          const EpilogueCoordWhole& c, float (&out)[V]) {
  const T* row = detail::row_base(base + ((int64_t)c.batch * batch_stride + (int64_t)c.m * ld));
  detail::load_vector<T, V>(row + c.n, out);
}

// Output tile: base[b, m, n+i] = convert_out<T>(v[i]) for i < c.valid.
// 16-byte (or the widest aligned) stores when the address allows and all V are valid.
template <class T, int V>
__device__ __forceinline__ void store_tile(T* base, int64_t ld, int64_t batch_stride,
                                           const EpilogueCoord& c, const float (&v)[V]) {
  using A = detail::VecAccess<T, V>;
  T* p = base + (int64_t)c.batch * batch_stride + (int64_t)c.m * ld + c.n;
  if (A::kOk && c.valid == V && (reinterpret_cast<uintptr_t>(p) % A::kChunk) == 0) {
    typename A::Vec tmp[A::kN];
    T* e = reinterpret_cast<T*>(tmp);
#pragma unroll
    for (int i = 0; i < V; ++i) e[i] = convert_out<T>(v[i]);
#pragma unroll
    for (int i = 0; i < A::kN; ++i) reinterpret_cast<typename A::Vec*>(p)[i] = tmp[i];
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i)
      if (i < c.valid) p[i] = convert_out<T>(v[i]);
  }
}

template <class T, int V>
__device__ __forceinline__ void store_tile(T* base, int64_t ld, int64_t batch_stride,
                                           const EpilogueCoordWhole& c, const float (&v)[V]) {
  T* row = detail::row_base(base + ((int64_t)c.batch * batch_stride + (int64_t)c.m * ld));
  detail::store_vector<T, V>(row + c.n, v);
}

// A tensor laid out transposed to the coordinates: out[i] = base[b, n+i, m] for i < c.valid, else 0.
template <class T, int V>
__device__ __forceinline__ void load_tile_transposed(const T* base, int64_t ld, int64_t batch_stride,
                                                     const EpilogueCoord& c, float (&out)[V]) {
  const T* p = base + (int64_t)c.batch * batch_stride + (int64_t)c.n * ld + c.m;
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = (i < c.valid) ? to_float<T>(p[(int64_t)i * ld]) : 0.f;
}

// A tensor laid out transposed to the coordinates: base[b, n+i, m] = convert_out<T>(v[i]) for i < c.valid.
template <class T, int V>
__device__ __forceinline__ void store_tile_transposed(T* base, int64_t ld, int64_t batch_stride,
                                                      const EpilogueCoord& c, const float (&v)[V]) {
  T* p = base + (int64_t)c.batch * batch_stride + (int64_t)c.n * ld + c.m;
#pragma unroll
  for (int i = 0; i < V; ++i)
    if (i < c.valid) p[(int64_t)i * ld] = convert_out<T>(v[i]);
}

// Per-column vector (length N per batch): out[i] = vec[b * batch_stride + n + i].
template <class T, int V>
__device__ __forceinline__ void load_col_broadcast(const T* vec, int64_t batch_stride,
                                                   const EpilogueCoord& c, float (&out)[V]) {
  detail::load_contig<T, V>(vec + (int64_t)c.batch * batch_stride + c.n, c.valid, out);
}

template <class T, int V>
__device__ __forceinline__ void load_col_broadcast(const T* vec, int64_t batch_stride,
                                                   const EpilogueCoordWhole& c, float (&out)[V]) {
  detail::load_vector<T, V>(detail::row_base(vec + (int64_t)c.batch * batch_stride) + c.n, out);
}

// [col] vectors gathered by the sm90a template. A functor declares `static constexpr int kColVectors` and
// `template <int S> static ColVector<T> col_vector(const Params&)` for the [col] vectors it reads as
// load_col_broadcast<T, V, S>: GemmSm90 loads each tile's columns of them into registers at the start of the
// tile's k-loop (their loads' latency under the mainloop, not in the epilogue: docs/perf-notes.md v45), and its
// TMA-store epilogue hands every pair the first N vectors' values at its columns in the coordinate (WithCols:
// cols[S * V + i] is vector S at column n + i). Slots from N on, and any other coordinate, load as above.
template <class T>
struct ColVector {
  using Element = T;
  const T* base;  // null: reads as 0
  int64_t batch_stride;
};
template <class Base, int N>
struct WithCols : Base {
  const float* cols;
};
template <class T, int V, int S>
__device__ __forceinline__ void load_col_broadcast(const T* vec, int64_t batch_stride, const EpilogueCoord& c,
                                                   float (&out)[V]) {
  load_col_broadcast<T, V>(vec, batch_stride, c, out);
}
template <class T, int V, int S>
__device__ __forceinline__ void load_col_broadcast(const T* vec, int64_t batch_stride, const EpilogueCoordWhole& c,
                                                   float (&out)[V]) {
  load_col_broadcast<T, V>(vec, batch_stride, c, out);
}
template <class T, int V, int S, class Base, int N>
__device__ __forceinline__ void load_col_broadcast(const T* vec, int64_t batch_stride, const WithCols<Base, N>& c,
                                                   float (&out)[V]) {
  if constexpr (S < N) {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = c.cols[S * V + i];
  } else {
    load_col_broadcast<T, V>(vec, batch_stride, static_cast<const Base&>(c), out);
  }
}
template <class E, class = void>
struct ColVectorCount {
  static constexpr int value = 0;
};
template <class E>
struct ColVectorCount<E, decltype((void)E::kColVectors)> {
  static constexpr int value = E::kColVectors;
};

// Per-row vector (length M per batch): out[i] = vec[b * batch_stride + m] for all i.
template <class T, int V>
__device__ __forceinline__ void load_row_broadcast(const T* vec, int64_t batch_stride,
                                                   const EpilogueCoord& c, float (&out)[V]) {
  float x = to_float<T>(vec[(int64_t)c.batch * batch_stride + c.m]);
#pragma unroll
  for (int i = 0; i < V; ++i) out[i] = x;
}

// A device scalar.
template <class T>
__device__ __forceinline__ float load_scalar(const T* p) { return to_float<T>(*p); }

namespace detail {
// The epilogue's D when the functor hands D's values back instead of storing them (it declares
// `using ElementD` and `compute<V>(params, state, coord, acc, out_D)`, and its Params name D, ldd and
// batch_stride_D): the template then stores D itself, through shared memory and a TMA store.
// Otherwise `apply<V>` stores everything. kBytes: D's element size (2 where the functor does not name
// D's type: the split-K memory term's estimate, kdl/split_k.h).
template <class E, class = void>
struct EpilogueD {
  static constexpr bool kComputes = false;
  using Element = uint8_t;
  static constexpr int kBytes = 2;
};
template <class E>
struct EpilogueD<E, decltype((void)sizeof(typename E::ElementD))> {
  static constexpr bool kComputes = true;
  using Element = typename E::ElementD;
  static constexpr int kBytes = (int)sizeof(Element);
};
// Whether the functor declares `static constexpr bool kPointwise = true` (kdlc does where compute reads no
// coordinate: no C, no [row] / [col] inputs, no extra outputs, no amax): a kernel may then call compute on any
// vector of accumulators, in or past the output, with a coordinate it does not fill.
template <class E, class = void>
struct EpiloguePointwise : std::false_type {};
template <class E>
struct EpiloguePointwise<E, decltype((void)E::kPointwise)> : std::bool_constant<E::kPointwise> {};
// Whether the functor declares `static constexpr bool kFinishLocal = true` (kdlc does where it has no amax): its
// finish needs no other thread of the block (no block-wide reduction), so threads that have nothing more to do may
// leave the kernel without calling it.
template <class E, class = void>
struct EpilogueFinishLocal : std::false_type {};
template <class E>
struct EpilogueFinishLocal<E, decltype((void)E::kFinishLocal)> : std::bool_constant<E::kFinishLocal> {};
}  // namespace detail

// Where the output D of a functor with ElementD lies: Params' D, ldd and batch_stride_D, or what the
// functor's `static OutputD<ElementD> output_d(const Params&)` says (an output named otherwise: a
// convolution's Y).
template <class T>
struct OutputD {
  T* data;
  int64_t ld, batch_stride;
};
namespace detail {
template <class E, class = void>
struct HasOutputD : std::false_type {};
template <class E>
struct HasOutputD<E, decltype((void)&E::output_d)> : std::true_type {};
template <class E>
OutputD<typename E::ElementD> output_d(const typename E::Params& p) {
  if constexpr (HasOutputD<E>::value) return E::output_d(p);
  else return {p.D, p.ldd, p.batch_stride_D};
}
}  // namespace detail

// Calls e.prepare(p, s) when the functor declares it (loads its device scalars once per tile).
template <class E, class = void>
struct HasEpiloguePrepare {
  static constexpr bool value = false;
};
template <class E>
struct HasEpiloguePrepare<E, decltype((void)&E::prepare)> {
  static constexpr bool value = true;
};
template <class E>
__device__ __forceinline__ void epilogue_prepare(const E& e, const typename E::Params& p, typename E::State& s) {
  if constexpr (HasEpiloguePrepare<E>::value) e.prepare(p, s);
}

// Where the functor reads its source tile C (laid out like the kernel's output, load_tile's addressing), when it
// declares `static SourceTile<T> source_c(const Params&)`: GemmSm90 asks for the lines of each tile's C rows into L2
// at the start of the tile's k-loop, so that the epilogue's loads of C, a window at a time between its stores, do not
// each wait on DRAM (docs/perf-notes.md v44).
template <class T>
struct SourceTile {
  using Element = T;
  const T* base;  // null: C reads as 0 (nothing to prefetch)
  int64_t ld, batch_stride;
};
template <class E, class = void>
struct HasSourceTile : std::false_type {};
template <class E>
struct HasSourceTile<E, decltype((void)&E::source_c)> : std::true_type {};

// Whether the functor declares `template <int V> bool whole(params, batch)` (then it takes
// EpilogueCoordWhole coordinates where that holds: its compute is a template on the coordinate type).
template <class E, int V, class = void>
struct HasEpilogueWhole {
  static constexpr bool value = false;
};
template <class E, int V>
struct HasEpilogueWhole<E, V, decltype((void)static_cast<bool (E::*)(const typename E::Params&, int) const>(&E::template whole<V>))> {
  static constexpr bool value = true;
};

// ---- amax -------------------------------------------------------------------
// Per-thread running max of |v|. NaNs are ignored (fmaxf semantics).
__device__ __forceinline__ void amax_accumulate(float& state, float v) { state = fmaxf(state, fabsf(v)); }

// Block-wide reduction of `state`, then one atomicMax per block into *dst.
// Must be called by EVERY thread of the block (it uses __syncthreads); blockDim.x
// must be a multiple of 32. The HOST MUST ZERO *dst BEFORE THE LAUNCH (the
// float bit pattern of non-negative values orders like int32, so the atomic is
// an integer atomicMax). dst == nullptr: no-op (still synchronises).
__device__ __forceinline__ void amax_finish(float* dst, float state) {
  __shared__ float kdl_amax_red[32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) state = fmaxf(state, __shfl_xor_sync(0xffffffffu, state, o));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int nwarps = (blockDim.x * blockDim.y * blockDim.z) >> 5;
  if (lane == 0) kdl_amax_red[warp] = state;
  __syncthreads();
  if (warp == 0) {
    float v = lane < nwarps ? kdl_amax_red[lane] : 0.f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0 && dst != nullptr) atomicMax(reinterpret_cast<int*>(dst), __float_as_int(v));
  }
  __syncthreads();  // kdl_amax_red may be reused by a following amax_finish
}

}  // namespace kdl
