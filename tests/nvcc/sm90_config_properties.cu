// Which configurations take GemmSm90's special paths, held by static_asserts (nvcc compiles this file for
// sm_90a in CI; nothing runs, no kernel is instantiated): the held-stage epilogue (docs/perf-notes.md v21),
// the stage loader's issuers and clusters (v18, v22), the named barriers' ids, D's stores by stmatrix (v54), the
// paced epilogue (v57). A change to a condition that silently moves a kernel off its fast path (or onto a path it
// cannot take) fails here by name.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "kdl/conv_sm90.cuh"

namespace {
// D = alpha * acc, handed to GemmSm90's TMA store (ElementD), as the emitted functors do.
template <class TOut>
struct Epi {
  using ElementD = TOut;
  struct Params { TOut* D; int64_t ldd, batch_stride_D; float alpha; };
  struct State {};
  template <int V>
  __device__ void compute(const Params& p, State&, const kdl::EpilogueCoord&, const float (&acc)[V], float (&d)[V]) const {
    for (int i = 0; i < V; ++i) d[i] = p.alpha * acc[i];
  }
  template <int V>
  __device__ void apply(const Params&, State&, const kdl::EpilogueCoord&, const float (&)[V]) const {}
  __device__ void finish(const Params&, State&) const {}
};
// The same with NV [col] vectors (kColVectors / col_vector<S>, as kdlc emits for `input x : T [col]`).
template <int NV>
struct EpiCols : Epi<__nv_bfloat16> {
  static constexpr int kColVectors = NV;
  template <int S>
  __device__ static kdl::ColVector<float> col_vector(const Params&) { return {nullptr, 0}; }
};
using bf16 = __nv_bfloat16;
using e4m3 = __nv_fp8_e4m3;
constexpr auto Co = kdl::Sm90Schedule::Cooperative, Pp = kdl::Sm90Schedule::Pingpong;
template <class T, int TM, int TN, int TK, int S, kdl::Sm90Schedule Sch, int CM = 1, int CN = 1, int Promote = 0>
using G = kdl::GemmSm90<T, kdl::RowMajor, T, kdl::ColMajor, float, TM, TN, TK, S, Sch, CM, CN, false, Promote,
                        kdl::sm90::NoBlockScaling, Epi<bf16>>;
template <int TM, int TN, int S, kdl::Sm90Schedule Sch, int NV>
using GC = kdl::GemmSm90<bf16, kdl::RowMajor, bf16, kdl::ColMajor, float, TM, TN, 64, S, Sch, 1, 1, false, 0,
                         kdl::sm90::NoBlockScaling, EpiCols<NV>>;
template <int TM, int TN, int S, kdl::Sm90Schedule Sch, int CM = 1, int CN = 1>
using Fprop = typename kdl::Conv2dSm90Fprop<bf16, TM, TN, S, Sch, 3, 3, 1, 1, Epi<bf16>, true, CM, CN>::Gemm;
// The patch mainloop's GEMM of a 3x3 fprop with D of type TOut.
template <int TM, int TN, int S, kdl::Sm90Schedule Sch, class TOut = bf16>
using FpropPatch =
    typename kdl::Conv2dSm90Fprop<bf16, TM, TN, S, Sch, 3, 3, 1, 1, Epi<TOut>, true, 1, 1, true>::PatchGemm;
}  // namespace

// D written with stmatrix: a 16-bit D in every pingpong epilogue that stores D by TMA (docs/perf-notes.md v54, v55).
static_assert(FpropPatch<128, 128, 6, Pp>::kPatch && FpropPatch<128, 128, 6, Pp>::kStmatrixD, "pingpong patch, bf16 D");
static_assert(FpropPatch<128, 64, 8, Pp, __half>::kStmatrixD, "pingpong patch, f16 D");
static_assert(!FpropPatch<128, 128, 6, Pp, float>::kStmatrixD, "a 32-bit D keeps the 8-byte writes");
static_assert(FpropPatch<128, 256, 4, Co>::kPatch && !FpropPatch<128, 256, 4, Co>::kStmatrixD,
              "cooperative patch tiles keep the 4-byte writes (measured level)");
static_assert(Fprop<128, 128, 6, Pp>::kStmatrixD && G<bf16, 128, 128, 64, 6, Pp>::kStmatrixD &&
                  G<bf16, 64, 256, 64, 4, Pp>::kStmatrixD,
              "the pingpong im2col conv and the pingpong GEMMs write D with stmatrix");
static_assert(!G<bf16, 128, 256, 64, 4, Co>::kStmatrixD, "cooperative GEMMs keep the 4-byte writes (measured level)");

// The paced epilogue (v57): the pingpong 128 x 128 patch kernels only, where it measured faster.
static_assert(FpropPatch<128, 128, 6, Pp>::kPaceEpilogue && FpropPatch<128, 128, 6, Pp, __half>::kPaceEpilogue,
              "the pingpong 128 x 128 patch kernels pace their epilogue");
static_assert(!FpropPatch<128, 64, 8, Pp>::kPaceEpilogue && !FpropPatch<128, 256, 4, Co>::kPaceEpilogue &&
                  !FpropPatch<128, 128, 6, Pp, float>::kPaceEpilogue,
              "128 x 64 patch tiles (measured slower), cooperative tiles and a 32-bit D do not");
static_assert(!Fprop<128, 128, 6, Pp>::kPaceEpilogue && !G<bf16, 128, 128, 64, 6, Pp>::kPaceEpilogue &&
                  !G<bf16, 64, 128, 64, 8, Pp>::kPaceEpilogue,
              "the im2col conv and the pingpong GEMMs do not (level at long K, slower at K = 1024 and on 64 x 128)");

// The held stage: cooperative, one m64 block per consumer, two passes, no cluster, no promotion.
static_assert(G<bf16, 128, 256, 64, 4, Co>::kHoldStage, "cooperative 128x256 bf16 holds its last stage");
static_assert(G<e4m3, 128, 256, 128, 4, Co>::kHoldStage, "cooperative 128x256 e4m3 (fast accumulation) holds");
static_assert(Fprop<128, 256, 4, Co>::kHoldStage, "the conv fprop's cooperative 128x256 holds");
static_assert(!G<bf16, 128, 256, 64, 4, Co, 2, 1>::kHoldStage, "clusters keep the plain wait (remote releases)");
static_assert(G<bf16, 256, 128, 64, 4, Co>::kHoldStage, "cooperative 256x128 (two m64 blocks of one pass each) holds");
static_assert(!G<bf16, 128, 128, 64, 5, Co>::kHoldStage, "one pass per tile keeps the plain wait");
static_assert(!G<bf16, 128, 128, 64, 6, Pp>::kHoldStage, "pingpong keeps the plain wait");
static_assert(!G<e4m3, 128, 128, 128, 5, Co, 1, 1, 1>::kHoldStage, "fp8 promotion keeps the plain wait");
// The stage loader: four TMA issuers for tiles up to 128 x 128, one above; clusters along M and N share W and X.
static_assert(Fprop<128, 128, 6, Pp>::kIssuers == 4 && Fprop<128, 256, 4, Co>::kIssuers == 1, "stage loader issuers");
static_assert(G<bf16, 128, 128, 64, 6, Pp>::kIssuers == 1, "GemmSm90's own maps keep one issuer");
static_assert(Fprop<128, 128, 6, Pp, 1, 2>::TileA::kSlices == 2 && Fprop<128, 128, 6, Pp, 1, 2>::TileB::kSlices == 1,
              "clusters (1, 2): X's tile in two slices, W's whole");
static_assert(Fprop<128, 64, 4, Pp, 2, 2>::TileA::kSlices == 2 && Fprop<128, 64, 4, Pp, 2, 2>::TileB::kSlices == 2,
              "clusters (2, 2): both tiles in two slices");
// Named barriers: 0 is __syncthreads; pingpong's turns 1, 2; split-K 3 (4); the epilogue buffers 5, 6; the
// held stage 7; all below the 16 the hardware has.
using C = G<bf16, 128, 256, 64, 4, Co>;
static_assert(C::kTurnBarrier == 1 && C::kEpiBarrier == 5 && C::kHoldBarrier == 7 && C::kHoldBarrier < 16,
              "GemmSm90's named barrier ids");

// [col] vectors held in registers from each unit's start (docs/perf-notes.md v45): the first ones that fit in 8
// registers per lane (TileN / 32 each), the rest loaded by the functor; none without [col] vectors.
static_assert(GC<128, 256, 4, Co, 1>::kColVecs == 1 && GC<128, 256, 4, Co, 2>::kColVecs == 1,
              "128x256: one [col] vector in registers (8 per lane)");
static_assert(GC<128, 128, 6, Pp, 3>::kColVecs == 2 && GC<256, 128, 4, Co, 1>::kColVecs == 1,
              "TileN 128: up to two [col] vectors in registers");
static_assert(GC<128, 64, 8, Co, 4>::kColVecs == 4 && GC<128, 64, 8, Co, 5>::kColVecs == 4, "TileN 64: up to four");
static_assert(!G<bf16, 128, 256, 64, 4, Co>::kStageCols && GC<128, 256, 4, Co, 1>::kStageCols,
              "only functors with [col] vectors hold them");
