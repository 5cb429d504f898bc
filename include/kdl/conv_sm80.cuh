// kdl/conv_sm80.cuh -- 2-D convolution as implicit GEMM on the sm80 multistage mainloop (cp.async gathers +
// ldmatrix + mma.sync), NHWC activations and KRSC filters (kdl/conv_problem.h says which tensor is which).
//
//   fprop  Y[n,p,q,k]  = sum_{r,s,c} X[n, p*sh-ph+r*dh, q*sw-pw+s*dw, c] W[k,r,s,c]     M = n*p*q  N = k      K = r*s*c
//   dgrad  dX[n,h,w,c] = sum_{r,s,k} dY[n, (h+ph-r*dh)/sh, (w+pw-s*dw)/sw, k] W[k,r,s,c]  M = n*h*w  N = c  K = r*s*k
//   wgrad  dW[k,r,s,c] = sum_{n,p,q} dY[n,p,q,k] X[n, p*sh-ph+r*dh, q*sw-pw+s*dw, c]     M = k      N = r*s*c  K = n*p*q
//
// The mainloop, its shared-memory layout and the epilogue are GemmSm80's (kdl/gemm_sm80.cuh, `Core`); what
// this file adds is the copiers that gather the GEMM's A and B tiles from the conv tensors:
//   - fprop and dgrad walk the GEMM K dimension as (filter tap r, s; block of TileK channels): each
//     k-tile lies inside one tap, the last channel block of a tap is zero-filled past the channels, and
//     each row of A (an output pixel) keeps its source coordinate, so a tile's addresses and masks are
//     one multiply-add and two compares per row: no divisions in the mainloop.
//   - dgrad with stride > 1 is split into stride_h * stride_w phases (grid.y): the input pixels
//     (h % stride_h, w % stride_w) of one phase are reached only by the taps r with
//     (h + pad_h - r * dil_h) % stride_h == 0 (alike for s), so a phase's GEMM walks exactly those taps:
//     no multiply by zero, no scatter. The epilogue maps the phase's rows back to the pixels of dX.
//   - wgrad's K is the output pixels; its copiers find each row's pixel with a precomputed
//     multiply-shift division (FastDiv), once per row and k-tile.
// Masks: a gather outside the image (padding), past the channels or past the GEMM's M / K zero-fills
// its 16 bytes (cp.async's ignore-src predicate); rows past N are clamped like GemmSm80's.
//
// Requirements (can_implement says which one fails): each gathered tensor's contiguous channel count is
// a multiple of its alignment (fprop C for X and W; dgrad K for dY, C for W; wgrad K for dY, C for X),
// its pointer, pixel (tap) stride and image (filter) stride are multiples of it; the GEMM extents and
// n*h*w, n*p*q fit 32-bit indexing.
#pragma once
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <type_traits>

#include "kdl/conv_problem.h"
#include "kdl/gemm_sm80.cuh"

namespace kdl {

namespace detail {

// n / d and n % d for 0 <= n < 2^31 and 1 <= d < 2^31 by a multiply and a shift (Granlund-Montgomery).
struct FastDiv {
  int d = 1;
  uint32_t mul = 1, shift = 0;
  __host__ __device__ static FastDiv make(int d) {
    FastDiv f;
    f.d = d < 1 ? 1 : d;
    uint32_t sh = 0;
    while ((1ull << sh) < (uint64_t)f.d) ++sh;
    f.shift = sh;
    f.mul = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << sh) - (uint64_t)f.d)) / (uint64_t)f.d + 1);
    return f;
  }
  __device__ __forceinline__ int div(int n) const {
    const uint32_t t = __umulhi((uint32_t)n, mul);
    return (int)((t + (uint32_t)n) >> shift);
  }
  __device__ __forceinline__ void divmod(int n, int& q, int& r) const {
    q = div(n);
    r = n - q * d;
  }
};

// The filter taps one GEMM walks, and its position in them: k-tile t is channel block t % cblocks of
// tap t / cblocks, taps in (tr, ts) order; tap (tr, ts) is filter position (r0 + tr*r_step, s0 + ts*s_step)
// and moves the source pixel by (dy0 + tr*dy_step, dx0 + ts*dx_step).
struct ConvTaps {
  int tr_count, ts_count, cblocks;
  int r0, r_step, s0, s_step;
  int dy0, dy_step, dx0, dx_step;
  __device__ __forceinline__ int ktiles() const { return tr_count * ts_count * cblocks; }
};

struct TapWalker {
  int cb, ts, tr;  // channel block, tap
  int r, s;        // filter position
  int dy, dx;      // source pixel offset
  __device__ __forceinline__ void init(const ConvTaps& t, int kt) {
    const int tsn = t.ts_count > 0 ? t.ts_count : 1;
    const int cbn = t.cblocks > 0 ? t.cblocks : 1;
    cb = kt % cbn;
    const int tap = kt / cbn;
    ts = tap % tsn;
    tr = tap / tsn;
    r = t.r0 + tr * t.r_step;
    s = t.s0 + ts * t.s_step;
    dy = t.dy0 + tr * t.dy_step;
    dx = t.dx0 + ts * t.dx_step;
  }
  __device__ __forceinline__ void advance(const ConvTaps& t) {
    if (++cb == t.cblocks) {
      cb = 0;
      if (++ts == t.ts_count) {
        ts = 0;
        ++tr;
        r += t.r_step;
        s = t.s0;
        dy += t.dy_step;
        dx = t.dx0;
      } else {
        s += t.s_step;
        dx += t.dx_step;
      }
    }
  }
};

// The thread -> vector mapping and shared-memory offsets of TileCopier (same layout, so GemmSm80's
// fragment loads read what these copiers write), and the load_part dispatch over a Derived::load_range.
template <class Derived, class E, bool ContigK, int TileMN, int TileK, int Align, int kThreads>
struct GatherBase {
  using Geo = TileCopier<E, ContigK, TileMN, TileK, Align, kThreads>;
  using Swz = typename Geo::Swz;
  static constexpr int kIters = Geo::kIters;
  static constexpr int kRowStep = Geo::kRowStep;
  static constexpr int kVecPerRow = Geo::kVecPerRow;
  static constexpr int kRowBytes = Geo::kRowBytes;
  static constexpr int kVecBytes = Geo::kVecBytes;
  uint32_t soff;
  int row0, col0, cbyte;
  __device__ __forceinline__ void init_thread(int tid) {
    row0 = tid / kVecPerRow;
    col0 = (tid % kVecPerRow) * Align;
    cbyte = col0 * (int)sizeof(E);
    soff = (uint32_t)(Swz::offset(row0, cbyte >> 4) + (cbyte & 15));
  }
  __device__ __forceinline__ uint32_t smem_offset(int j) const {
    if constexpr (Geo::kAdditive) return soff + j * kRowStep * kRowBytes;
    else return (uint32_t)(Swz::offset(row0 + j * kRowStep, cbyte >> 4) + (cbyte & 15));
  }
  template <int G, int Q = 0>
  __device__ __forceinline__ void load_part(int g, uint32_t s) const {
    if constexpr (Q < G) {
      if (g == Q) static_cast<const Derived*>(this)->template load_range<(Q * kIters) / G, ((Q + 1) * kIters) / G>(s);
      else load_part<G, Q + 1>(g, s);
    }
  }
  __device__ __forceinline__ void load(uint32_t s) {
    static_cast<const Derived*>(this)->template load_range<0, kIters>(s);
    static_cast<Derived*>(this)->advance();
  }
};

// fprop A (X) and dgrad A (dY): rows = the GEMM's M (output pixels), contiguous = the source's channels.
// Row j's source pixel is (y0[j] + dy, x0[j] + dx) of image img; rows past M get y0 = -2^30 (never inside).
template <class E, int TileM, int TileK, int Align, int kThreads>
struct ActivationGather : GatherBase<ActivationGather<E, TileM, TileK, Align, kThreads>, E, true, TileM, TileK, Align, kThreads> {
  using Base = GatherBase<ActivationGather, E, true, TileM, TileK, Align, kThreads>;
  using Base::kIters;
  using Base::kRowStep;
  using Base::kVecBytes;
  const char* base;        // the tensor (a valid address for masked copies)
  const char* row_ptr[kIters];  // (img, y0, x0, channel col0) of row j, in bytes
  int y0[kIters], x0[kIters];
  int src_h, src_w, channels;
  int64_t ld_bytes;
  ConvTaps taps;
  TapWalker at;
  int64_t tap_bytes;  // (dy * src_w + dx) * ld + cb * TileK, in bytes

  // `pixel(gm, img, y, x)`: the GEMM row gm's image and the source pixel of tap offset 0.
  template <class Pixel>
  __device__ __forceinline__ void init(const void* tensor, int64_t ld, int64_t image_stride, int sh, int sw, int ch,
                                       const ConvTaps& t, int m0, int M, const Pixel& pixel, int kt_begin, int tid) {
    this->init_thread(tid);
    base = static_cast<const char*>(tensor);
    src_h = sh;
    src_w = sw;
    channels = ch;
    ld_bytes = ld * (int64_t)sizeof(E);
    taps = t;
#pragma unroll
    for (int j = 0; j < kIters; ++j) {
      const int gm = m0 + this->row0 + j * kRowStep;
      int img = 0, y = -(1 << 30), x = 0;
      if (gm < M) pixel(gm, img, y, x);
      y0[j] = y;
      x0[j] = x;
      row_ptr[j] = base + (int64_t)img * image_stride * (int64_t)sizeof(E) + ((int64_t)(gm < M ? y : 0) * sw + x) * ld_bytes +
                   (int64_t)this->col0 * (int64_t)sizeof(E);
    }
    at.init(taps, kt_begin);
    tap_bytes = tap_offset();
  }
  // The byte offset of the walker's tap (its source pixel shift) and channel block.
  __device__ __forceinline__ int64_t tap_offset() const {
    return ((int64_t)at.dy * src_w + at.dx) * ld_bytes + (int64_t)at.cb * TileK * (int64_t)sizeof(E);
  }
  template <int J0, int J1>
  __device__ __forceinline__ void load_range(uint32_t s) const {
    const bool tap_ok = at.tr < taps.tr_count && at.cb * TileK + this->col0 < channels;
#pragma unroll
    for (int j = J0; j < J1; ++j) {
      const bool ok = tap_ok && (unsigned)(y0[j] + at.dy) < (unsigned)src_h && (unsigned)(x0[j] + at.dx) < (unsigned)src_w;
      cp_async_pred<kVecBytes>(s + this->smem_offset(j), ok ? row_ptr[j] + tap_bytes : base, ok);
    }
  }
  __device__ __forceinline__ void advance() {
    at.advance(taps);
    tap_bytes = tap_offset();
  }
};

// fprop B (W): rows = the GEMM's N (filters k, clamped to the last), contiguous = channels c; tap (r, s).
template <class E, int TileN, int TileK, int Align, int kThreads>
struct FilterGatherK : GatherBase<FilterGatherK<E, TileN, TileK, Align, kThreads>, E, true, TileN, TileK, Align, kThreads> {
  using Base = GatherBase<FilterGatherK, E, true, TileN, TileK, Align, kThreads>;
  using Base::kIters;
  using Base::kRowStep;
  using Base::kVecBytes;
  const char* base;
  const char* row_ptr[kIters];
  int channels, filter_s;
  int64_t ld_bytes;
  ConvTaps taps;
  TapWalker at;
  int64_t tap_bytes;

  __device__ __forceinline__ void init(const void* tensor, int64_t ld, int64_t filter_stride, int ch, int fs,
                                       const ConvTaps& t, int n0, int N, int kt_begin, int tid) {
    this->init_thread(tid);
    base = static_cast<const char*>(tensor);
    channels = ch;
    filter_s = fs;
    ld_bytes = ld * (int64_t)sizeof(E);
    taps = t;
#pragma unroll
    for (int j = 0; j < kIters; ++j) {
      int kr = n0 + this->row0 + j * kRowStep;
      kr = kr < N ? kr : N - 1;
      row_ptr[j] = base + ((int64_t)kr * filter_stride + this->col0) * (int64_t)sizeof(E);
    }
    at.init(taps, kt_begin);
    tap_bytes = tap_offset();
  }
  // The byte offset of the walker's filter tap (r, s) and channel block.
  __device__ __forceinline__ int64_t tap_offset() const {
    return ((int64_t)at.r * filter_s + at.s) * ld_bytes + (int64_t)at.cb * TileK * (int64_t)sizeof(E);
  }
  template <int J0, int J1>
  __device__ __forceinline__ void load_range(uint32_t s) const {
    const bool ok = at.tr < taps.tr_count && at.cb * TileK + this->col0 < channels;
#pragma unroll
    for (int j = J0; j < J1; ++j) cp_async_pred<kVecBytes>(s + this->smem_offset(j), ok ? row_ptr[j] + tap_bytes : base, ok);
  }
  __device__ __forceinline__ void advance() {
    at.advance(taps);
    tap_bytes = tap_offset();
  }
};

// dgrad B (W): rows = the GEMM's K inside a tap (filters k of channel block cb), contiguous = the
// GEMM's N (channels c, fixed per thread).
template <class E, int TileN, int TileK, int Align, int kThreads>
struct FilterGatherN : GatherBase<FilterGatherN<E, TileN, TileK, Align, kThreads>, E, false, TileN, TileK, Align, kThreads> {
  using Base = GatherBase<FilterGatherN, E, false, TileN, TileK, Align, kThreads>;
  using Base::kIters;
  using Base::kRowStep;
  using Base::kVecBytes;
  const char* base;
  const char* col_ptr;  // channel c of filter 0, tap (0, 0)
  bool col_ok;
  int filters, filter_s;
  int64_t ld_bytes, fstride_bytes;
  ConvTaps taps;
  TapWalker at;

  __device__ __forceinline__ void init(const void* tensor, int64_t ld, int64_t filter_stride, int nfilters, int fs,
                                       const ConvTaps& t, int n0, int N, int kt_begin, int tid) {
    this->init_thread(tid);
    base = static_cast<const char*>(tensor);
    filters = nfilters;
    filter_s = fs;
    ld_bytes = ld * (int64_t)sizeof(E);
    fstride_bytes = filter_stride * (int64_t)sizeof(E);
    taps = t;
    const int c = n0 + this->col0;
    col_ok = c < N;
    col_ptr = base + (int64_t)(col_ok ? c : 0) * (int64_t)sizeof(E);
    at.init(taps, kt_begin);
  }
  template <int J0, int J1>
  __device__ __forceinline__ void load_range(uint32_t s) const {
    const bool tap_ok = col_ok && at.tr < taps.tr_count;
    const char* p = col_ptr + ((int64_t)at.r * filter_s + at.s) * ld_bytes;
    const int k0 = at.cb * TileK + this->row0;
#pragma unroll
    for (int j = J0; j < J1; ++j) {
      const int kk = k0 + j * kRowStep;
      const bool ok = tap_ok && kk < filters;
      cp_async_pred<kVecBytes>(s + this->smem_offset(j), ok ? p + (int64_t)kk * fstride_bytes : base, ok);
    }
  }
  __device__ __forceinline__ void advance() { at.advance(taps); }
};

// wgrad A (dY): rows = the GEMM's K (output pixels g), contiguous = the GEMM's M (filters k, fixed per thread).
template <class E, int TileM, int TileK, int Align, int kThreads>
struct PixelGatherDy : GatherBase<PixelGatherDy<E, TileM, TileK, Align, kThreads>, E, false, TileM, TileK, Align, kThreads> {
  using Base = GatherBase<PixelGatherDy, E, false, TileM, TileK, Align, kThreads>;
  using Base::kIters;
  using Base::kRowStep;
  using Base::kVecBytes;
  const char* base;
  const char* col_ptr;
  bool col_ok;
  int pixels;  // n * p * q
  FastDiv pq;
  int64_t ld_bytes, image_bytes;
  int g0;  // this thread's first pixel of the next tile

  __device__ __forceinline__ void init(const void* tensor, int64_t ld, int64_t image_stride, int npq, FastDiv div_pq,
                                       int m0, int M, int kt_begin, int tid) {
    this->init_thread(tid);
    base = static_cast<const char*>(tensor);
    pixels = npq;
    pq = div_pq;
    ld_bytes = ld * (int64_t)sizeof(E);
    image_bytes = image_stride * (int64_t)sizeof(E);
    const int k = m0 + this->col0;
    col_ok = k < M;
    col_ptr = base + (int64_t)(col_ok ? k : 0) * (int64_t)sizeof(E);
    g0 = kt_begin * TileK + this->row0;
  }
  template <int J0, int J1>
  __device__ __forceinline__ void load_range(uint32_t s) const {
#pragma unroll
    for (int j = J0; j < J1; ++j) {
      const int g = g0 + j * kRowStep;
      const bool ok = col_ok && g < pixels;
      int img = 0, rem = 0;
      pq.divmod(ok ? g : 0, img, rem);
      cp_async_pred<kVecBytes>(s + this->smem_offset(j), ok ? col_ptr + img * image_bytes + rem * ld_bytes : base, ok);
    }
  }
  __device__ __forceinline__ void advance() { g0 += TileK; }
};

// wgrad B (X): rows = the GEMM's K (output pixels g), contiguous = the GEMM's N ((r, s, c), fixed per thread).
template <class E, int TileN, int TileK, int Align, int kThreads>
struct PixelGatherX : GatherBase<PixelGatherX<E, TileN, TileK, Align, kThreads>, E, false, TileN, TileK, Align, kThreads> {
  using Base = GatherBase<PixelGatherX, E, false, TileN, TileK, Align, kThreads>;
  using Base::kIters;
  using Base::kRowStep;
  using Base::kVecBytes;
  const char* base;
  const char* col_ptr;  // channel c of image 0, pixel (0, 0)
  bool col_ok;
  int pixels, src_h, src_w, stride_h, stride_w;
  int dyr, dxs;  // r * dil_h - pad_h, s * dil_w - pad_w
  FastDiv pq, q;
  int64_t ld_bytes, image_bytes;
  int g0;

  __device__ __forceinline__ void init(const void* tensor, int64_t ld, int64_t image_stride, const Conv2dProblem& pr,
                                       int S, int sh, int sw, FastDiv div_pq, FastDiv div_q, int n0, int N, int kt_begin,
                                       int tid) {
    this->init_thread(tid);
    base = static_cast<const char*>(tensor);
    pixels = pr.n * pr.p * pr.q;
    src_h = pr.h;
    src_w = pr.w;
    stride_h = sh;
    stride_w = sw;
    pq = div_pq;
    q = div_q;
    ld_bytes = ld * (int64_t)sizeof(E);
    image_bytes = image_stride * (int64_t)sizeof(E);
    const int jj = n0 + this->col0;
    col_ok = jj < N;
    const int j = col_ok ? jj : 0;
    const int c = j % pr.c, rs = j / pr.c;
    const int s = rs % S, r = rs / S;
    dyr = r * pr.dil_h - pr.pad_h;
    dxs = s * pr.dil_w - pr.pad_w;
    col_ptr = base + (int64_t)c * (int64_t)sizeof(E);
    g0 = kt_begin * TileK + this->row0;
  }
  template <int J0, int J1>
  __device__ __forceinline__ void load_range(uint32_t s) const {
#pragma unroll
    for (int j = J0; j < J1; ++j) {
      const int g = g0 + j * kRowStep;
      int img = 0, rem = 0, p = 0, qq = 0;
      pq.divmod(g < pixels ? g : 0, img, rem);
      q.divmod(rem, p, qq);
      const int y = p * stride_h + dyr, x = qq * stride_w + dxs;
      const bool ok = col_ok && g < pixels && (unsigned)y < (unsigned)src_h && (unsigned)x < (unsigned)src_w;
      cp_async_pred<kVecBytes>(s + this->smem_offset(j), ok ? col_ptr + img * image_bytes + ((int64_t)y * src_w + x) * ld_bytes : base,
                               ok);
    }
  }
  __device__ __forceinline__ void advance() { g0 += TileK; }
};

// The epilogue's row maps of conv outputs (GemmSm80::run_epilogue's `rows`).
struct ImageRows {  // fprop: GEMM row gm = img * (p*q) + pixel
  FastDiv pixels;
  __device__ __forceinline__ int2 operator()(int gm) const {
    int img, pix;
    pixels.divmod(gm, img, pix);
    return make_int2(img, pix);
  }
};
struct PhaseRows {  // dgrad: GEMM row gm of phase (a, b) = img * (hp*wp) + i * wp + j  ->  pixel (a + i*sh, b + j*sw)
  FastDiv phase_pixels, wp;
  int a, b, sh, sw, w;
  __device__ __forceinline__ int2 operator()(int gm) const {
    int img, rem, i, j;
    phase_pixels.divmod(gm, img, rem);
    wp.divmod(rem, i, j);
    return make_int2(img, (a + i * sh) * w + (b + j * sw));
  }
};

__host__ __device__ inline int gcd_int(int a, int b) {
  while (b) {
    const int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

}  // namespace detail

template <class Conv>
__global__ void __launch_bounds__(Conv::kThreads, 1) conv2d_sm80_kernel(const typename Conv::KernelParams params) {
  Conv::device_main(params);
}

// FilterR/FilterS, StrideH/StrideW: fixed by the spec (filter = (R, S), stride = (h, w)), 0 = run-time.
template <ConvKind Kind, class Element, int AlignA, int AlignB, class ElementAcc, int TileM, int TileN, int TileK,
          int WarpsM, int WarpsN, int Stages, int FilterR, int FilterS, int StrideH, int StrideW, class Epilogue>
struct Conv2dSm80 {
  static constexpr ConvKind kKind = Kind;
  static constexpr bool kPackedFilterTaps = false;  // W's tap stride may exceed c
  // The GEMM's operand layouts: A is K-contiguous (channels) for fprop and dgrad, M-contiguous (filters)
  // for wgrad; B is K-contiguous for fprop (W's channels), N-contiguous otherwise.
  static constexpr bool kAContigK = Kind != ConvKind::Wgrad;
  static constexpr bool kBContigK = Kind == ConvKind::Fprop;
  using LayoutA = typename std::conditional<kAContigK, RowMajor, ColMajor>::type;
  using LayoutB = typename std::conditional<kBContigK, ColMajor, RowMajor>::type;
  using Core = GemmSm80<Element, LayoutA, AlignA, Element, LayoutB, AlignB, ElementAcc, TileM, TileN, TileK, WarpsM,
                        WarpsN, Stages, false, Epilogue>;
  static_assert(sizeof(Element) == 2, "conv kernels take f16 or bf16 tensors");
  static constexpr int kThreads = Core::kThreads;
  static constexpr int kSmemBytes = Core::kSmemBytes;
  static constexpr int kMinSmemBytes = Core::kMinSmemBytes;
  static constexpr int kMI = Core::kMI, kNI = Core::kNI;

  using CopyA = typename std::conditional<
      Kind == ConvKind::Wgrad, detail::PixelGatherDy<Element, TileM, TileK, AlignA, kThreads>,
      detail::ActivationGather<Element, TileM, TileK, AlignA, kThreads>>::type;
  using CopyB = typename std::conditional<
      Kind == ConvKind::Fprop, detail::FilterGatherK<Element, TileN, TileK, AlignB, kThreads>,
      typename std::conditional<Kind == ConvKind::Dgrad, detail::FilterGatherN<Element, TileN, TileK, AlignB, kThreads>,
                                detail::PixelGatherX<Element, TileN, TileK, AlignB, kThreads>>::type>::type;

  struct KernelParams {
    Conv2dProblem prob;
    typename Epilogue::Params ep;
    void* workspace;
    size_t sem_offset;
    int tiles_m, tiles_n;
    detail::FastDiv div_pq, div_q;
  };

  // The GEMM's extents (dgrad: of phase (0, 0), the largest).
  static int64_t gemm_m(const Conv2dProblem& p) {
    if (Kind == ConvKind::Fprop) return (int64_t)p.n * p.p * p.q;
    if (Kind == ConvKind::Dgrad) return (int64_t)p.n * ((p.h + p.stride_h - 1) / p.stride_h) * ((p.w + p.stride_w - 1) / p.stride_w);
    return p.k;
  }
  static int64_t gemm_n(const Conv2dProblem& p) {
    if (Kind == ConvKind::Fprop) return p.k;
    if (Kind == ConvKind::Dgrad) return p.c;
    return (int64_t)p.r * p.s * p.c;
  }
  // The GEMM's k-tiles (dgrad: the most of any phase, which bounds split_k).
  static int64_t gemm_ktiles(const Conv2dProblem& p) {
    if (Kind == ConvKind::Fprop) return (int64_t)p.r * p.s * ((p.c + TileK - 1) / TileK);
    if (Kind == ConvKind::Dgrad) {  // a phase walks every step-th tap, step = stride / gcd(stride, dilation)
      const int64_t step_r = p.stride_h / detail::gcd_int(p.stride_h, p.dil_h);
      const int64_t step_s = p.stride_w / detail::gcd_int(p.stride_w, p.dil_w);
      return ((p.r + step_r - 1) / step_r) * ((p.s + step_s - 1) / step_s) * ((p.k + TileK - 1) / TileK);
    }
    return ((int64_t)p.n * p.p * p.q + TileK - 1) / TileK;
  }
  static int phases_of(const Conv2dProblem& p) { return Kind == ConvKind::Dgrad ? p.stride_h * p.stride_w : 1; }

  // ---------------------------------------------------------------- device ----
  __device__ __forceinline__ static void device_main(const KernelParams& P) {
    extern __shared__ __align__(128) uint8_t kdl_smem[];
    const Conv2dProblem& pr = P.prob;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int wm = warp % WarpsM;
    const int wn = warp / WarpsM;
    int tm, tn;
    detail::raster_tile<false, Core::kRasterGroup>(blockIdx.x, P.tiles_m, P.tiles_n, tm, tn);
    const int phase = blockIdx.y;
    const int slice = blockIdx.z;
    const int split = pr.split_k;
    const int m0 = tm * TileM, n0 = tn * TileN;
    const int R = FilterR > 0 ? FilterR : pr.r;
    const int S = FilterS > 0 ? FilterS : pr.s;
    const int sh = StrideH > 0 ? StrideH : pr.stride_h;
    const int sw = StrideW > 0 ? StrideW : pr.stride_w;

    ElementAcc acc[kMI][kNI][4];
    if constexpr (Kind == ConvKind::Fprop) {
      const int M = pr.n * pr.p * pr.q, N = pr.k;
      const detail::ConvTaps taps{R, S, (pr.c + TileK - 1) / TileK, 0, 1, 0, 1, 0, pr.dil_h, 0, pr.dil_w};
      const int ktiles = taps.ktiles();
      const int kt_begin = (int)(((int64_t)ktiles * slice) / split), kt_end = (int)(((int64_t)ktiles * (slice + 1)) / split);
      const detail::FastDiv div_pq = P.div_pq, div_q = P.div_q;
      const int pad_h = pr.pad_h, pad_w = pr.pad_w;
      CopyA ca;
      ca.init(pr.A, pr.lda, pr.batch_stride_a, pr.h, pr.w, pr.c, taps, m0, M,
              [&](int gm, int& img, int& y, int& x) {
                int rem, p, q;
                div_pq.divmod(gm, img, rem);
                div_q.divmod(rem, p, q);
                y = p * sh - pad_h;
                x = q * sw - pad_w;
              },
              kt_begin, tid);
      CopyB cb;
      cb.init(pr.B, pr.ldb, pr.batch_stride_b, pr.c, S, taps, n0, N, kt_begin, tid);
      Core::mainloop(ca, cb, kt_begin, kt_end, kdl_smem, acc);
      if (split > 1 && !Core::split_k_handoff(P.workspace, P.sem_offset, tm * P.tiles_n + tn, slice, split, acc)) return;
      Core::run_epilogue(P.ep, reinterpret_cast<float*>(kdl_smem), acc, detail::ImageRows{div_pq}, M, N, m0 + wm * Core::kWarpM,
                         n0 + wn * Core::kWarpN, warp, lane);
    } else if constexpr (Kind == ConvKind::Dgrad) {
      // Phase (a, b): the input pixels h = a + i*sh, w = b + j*sw.
      const int a = phase / sw, b = phase % sw;
      const int hp = a < pr.h ? (pr.h - a + sh - 1) / sh : 0;
      const int wp = b < pr.w ? (pr.w - b + sw - 1) / sw : 0;
      const int M = pr.n * hp * wp, N = pr.c;
      if (m0 >= M) return;  // block-uniform: this phase has fewer pixels than phase (0, 0)
      // The taps of the phase: r = r0, r0 + r_step, ... with (a + pad_h - r * dil_h) % sh == 0; the dY row is
      // i + (a + pad_h - r * dil_h) / sh.
      auto phase_taps = [](int a_, int pad, int dil, int st, int F, int& first, int& step, int& count, int& d0, int& dstep) {
        first = -1;
        for (int r = 0; r < F && r < st; ++r)
          if ((((a_ + pad - r * dil) % st) + st) % st == 0) {
            first = r;
            break;
          }
        step = st / detail::gcd_int(st, dil);
        count = first < 0 ? 0 : (F - 1 - first) / step + 1;
        if (first < 0) first = 0;
        d0 = (a_ + pad - first * dil) / st;
        dstep = -(step * dil) / st;
      };
      detail::ConvTaps taps;
      taps.cblocks = (pr.k + TileK - 1) / TileK;
      phase_taps(a, pr.pad_h, pr.dil_h, sh, R, taps.r0, taps.r_step, taps.tr_count, taps.dy0, taps.dy_step);
      phase_taps(b, pr.pad_w, pr.dil_w, sw, S, taps.s0, taps.s_step, taps.ts_count, taps.dx0, taps.dx_step);
      const int ktiles = taps.ktiles();
      const int kt_begin = (int)(((int64_t)ktiles * slice) / split), kt_end = (int)(((int64_t)ktiles * (slice + 1)) / split);
      const detail::FastDiv div_hw = detail::FastDiv::make(hp * wp), div_w = detail::FastDiv::make(wp);
      CopyA ca;
      ca.init(pr.A, pr.lda, pr.batch_stride_a, pr.p, pr.q, pr.k, taps, m0, M,
              [&](int gm, int& img, int& y, int& x) {
                int rem;
                div_hw.divmod(gm, img, rem);
                div_w.divmod(rem, y, x);
              },
              kt_begin, tid);
      CopyB cb;
      cb.init(pr.B, pr.ldb, pr.batch_stride_b, pr.k, S, taps, n0, N, kt_begin, tid);
      Core::mainloop(ca, cb, kt_begin, kt_end, kdl_smem, acc);
      if (split > 1 && !Core::split_k_handoff(P.workspace, P.sem_offset, (phase * P.tiles_m + tm) * P.tiles_n + tn, slice, split,
                                              acc))
        return;
      Core::run_epilogue(P.ep, reinterpret_cast<float*>(kdl_smem), acc, detail::PhaseRows{div_hw, div_w, a, b, sh, sw, pr.w}, M,
                         N, m0 + wm * Core::kWarpM, n0 + wn * Core::kWarpN, warp, lane);
    } else {
      const int M = pr.k, N = R * S * pr.c;
      const int npq = pr.n * pr.p * pr.q;
      const int ktiles = (npq + TileK - 1) / TileK;
      const int kt_begin = (int)(((int64_t)ktiles * slice) / split), kt_end = (int)(((int64_t)ktiles * (slice + 1)) / split);
      CopyA ca;
      ca.init(pr.A, pr.lda, pr.batch_stride_a, npq, P.div_pq, m0, M, kt_begin, tid);
      CopyB cb;
      cb.init(pr.B, pr.ldb, pr.batch_stride_b, pr, S, sh, sw, P.div_pq, P.div_q, n0, N, kt_begin, tid);
      Core::mainloop(ca, cb, kt_begin, kt_end, kdl_smem, acc);
      if (split > 1 && !Core::split_k_handoff(P.workspace, P.sem_offset, tm * P.tiles_n + tn, slice, split, acc)) return;
      Core::run_epilogue(P.ep, reinterpret_cast<float*>(kdl_smem), acc, 0, M, N, m0 + wm * Core::kWarpM,
                         n0 + wn * Core::kWarpN, warp, lane);
    }
  }

  // ------------------------------------------------------------------ host ----
  static int64_t tiles_m_of(const Conv2dProblem& p) { return (gemm_m(p) + TileM - 1) / TileM; }
  static int64_t tiles_n_of(const Conv2dProblem& p) { return (gemm_n(p) + TileN - 1) / TileN; }

  // One gathered tensor: its pointer, its contiguous channels and its strides against the alignment.
  static const char* check_tensor(char* msg, size_t size, const char* name, const void* ptr, int64_t ld, int64_t bs, int align,
                                  int64_t channels, int64_t pixels, const char* ld_word, const char* bs_word) {
    const long long bytes = align * (long long)sizeof(Element);
    if (ptr == nullptr) snprintf(msg, size, "kdl conv: %s is null", name);
    else if (reinterpret_cast<uintptr_t>(ptr) % bytes)
      snprintf(msg, size, "kdl conv: %s must be %lld-byte aligned (align %d elements)", name, bytes, align);
    else if (channels % align)
      snprintf(msg, size, "kdl conv: the channels of %s (%lld) must be a multiple of its alignment (%d elements)", name,
               (long long)channels, align);
    else if (ld < channels || ld % align)
      snprintf(msg, size, "kdl conv: the %s of %s (%lld) must be >= %lld and a multiple of %d", ld_word, name, (long long)ld,
               (long long)channels, align);
    else if (bs < pixels * ld || bs % align)
      snprintf(msg, size, "kdl conv: the %s of %s (%lld) must be >= %lld and a multiple of %d", bs_word, name, (long long)bs,
               (long long)(pixels * ld), align);
    else return nullptr;
    return msg;
  }

  // Pure: reads only `p` (no device query). The host side (kdl/conv_host.h) has already derived p.p, p.q
  // and filled default strides.
  static const char* can_implement(const Conv2dProblem& p) {
    static thread_local char msg[400];
    auto fail = [&](const char* fmt, long long a = 0, long long b = 0, long long c = 0, long long d = 0) -> const char* {
      snprintf(msg, sizeof(msg), fmt, a, b, c, d);
      return msg;
    };
    if (p.n < 1 || p.h < 1 || p.w < 1 || p.c < 1 || p.k < 1)
      return snprintf(msg, sizeof(msg), "kdl conv: sizes must be positive (n=%d, h=%d, w=%d, c=%d, k=%d)", p.n, p.h, p.w, p.c,
                      p.k),
             msg;
    if (p.r < 1 || p.s < 1) return fail("kdl conv: the filter must be at least 1 x 1 (r=%lld, s=%lld)", p.r, p.s);
    if (FilterR > 0 && p.r != FilterR) return fail("kdl conv: r (%lld) must be %lld (filter fixed by the spec)", p.r, FilterR);
    if (FilterS > 0 && p.s != FilterS) return fail("kdl conv: s (%lld) must be %lld (filter fixed by the spec)", p.s, FilterS);
    if (p.stride_h < 1 || p.stride_w < 1)
      return fail("kdl conv: strides must be at least 1 (stride_h=%lld, stride_w=%lld)", p.stride_h, p.stride_w);
    if (StrideH > 0 && p.stride_h != StrideH)
      return fail("kdl conv: stride_h (%lld) must be %lld (stride fixed by the spec)", p.stride_h, StrideH);
    if (StrideW > 0 && p.stride_w != StrideW)
      return fail("kdl conv: stride_w (%lld) must be %lld (stride fixed by the spec)", p.stride_w, StrideW);
    if (p.dil_h < 1 || p.dil_w < 1)
      return fail("kdl conv: dilations must be at least 1 (dilation_h=%lld, dilation_w=%lld)", p.dil_h, p.dil_w);
    if (p.pad_h < 0 || p.pad_w < 0) return fail("kdl conv: padding must not be negative (pad_h=%lld, pad_w=%lld)", p.pad_h, p.pad_w);
    const int64_t eh = (int64_t)p.dil_h * (p.r - 1) + 1, ew = (int64_t)p.dil_w * (p.s - 1) + 1;
    if (p.pad_h >= eh || p.pad_w >= ew)
      return fail("kdl conv: padding (pad_h=%lld, pad_w=%lld) must be smaller than the dilated filter (%lld x %lld)", p.pad_h,
                  p.pad_w, eh, ew);
    const int64_t P = ((int64_t)p.h + 2 * p.pad_h - eh) / p.stride_h + 1, Q = ((int64_t)p.w + 2 * p.pad_w - ew) / p.stride_w + 1;
    if ((int64_t)p.h + 2 * p.pad_h < eh || (int64_t)p.w + 2 * p.pad_w < ew || P < 1 || Q < 1)
      return fail("kdl conv: the dilated filter (%lld x %lld) is larger than the padded input (%lld x %lld)", eh, ew,
                  (long long)p.h + 2 * p.pad_h, (long long)p.w + 2 * p.pad_w);
    if (p.p != P || p.q != Q)
      return fail("kdl conv: the output is %lld x %lld for these sizes, not p=%lld x q=%lld", P, Q, p.p, p.q);
    const int64_t kLim = 0x7fffffffLL - 2 * (TileM > TileN ? TileM : TileN) - (int64_t)(Stages + 1) * TileK;
    const int64_t nhw = (int64_t)p.n * p.h * p.w, npq = (int64_t)p.n * P * Q, rsc = (int64_t)p.r * p.s * p.c,
                  rsk = (int64_t)p.r * p.s * p.k;
    if (nhw > kLim || npq > kLim || rsc > kLim || rsk > kLim)
      return fail("kdl conv: problem too large for 32-bit indexing (n*h*w=%lld, n*p*q=%lld, r*s*c=%lld, r*s*k=%lld)", nhw, npq, rsc,
                  rsk);
    if ((int64_t)p.stride_h * p.stride_w > 65535)
      return fail("kdl conv: stride_h * stride_w (%lld) must be at most 65535", (long long)p.stride_h * p.stride_w);
    const int64_t kt = gemm_ktiles(p);
    if (p.split_k < 1 || p.split_k > 65535 || (kt > 0 && p.split_k > kt))
      return fail("kdl conv: split_k (%lld) must be in 1..%lld (the GEMM's k-tiles)", p.split_k, kt < 65535 ? kt : 65535);
    if (tiles_m_of(p) * tiles_n_of(p) > 0x7fffffffLL) return fail("kdl conv: too many output tiles");
    // The mainloop tensors: A then B.
    const bool f = Kind == ConvKind::Fprop, w = Kind == ConvKind::Wgrad;
    if (const char* e = check_tensor(msg, sizeof(msg), f ? "X" : "Y", p.A, p.lda, p.batch_stride_a, AlignA, f ? p.c : p.k,
                                     f ? (int64_t)p.h * p.w : P * Q, "pixel stride", "image stride"))
      return e;
    if (const char* e = check_tensor(msg, sizeof(msg), w ? "X" : "W", p.B, p.ldb, p.batch_stride_b, AlignB, p.c,
                                     w ? (int64_t)p.h * p.w : (int64_t)p.r * p.s, w ? "pixel stride" : "tap stride",
                                     w ? "image stride" : "filter stride"))
      return e;
    return nullptr;
  }

  static size_t tiles_total(const Conv2dProblem& p) {
    return (size_t)tiles_m_of(p) * (size_t)tiles_n_of(p) * (size_t)phases_of(p);
  }
  static size_t sem_offset(const Conv2dProblem& p) {
    return (tiles_total(p) * TileM * TileN * sizeof(ElementAcc) + 255) / 256 * 256;
  }
  static size_t workspace_size(const Conv2dProblem& p) {
    if (p.split_k <= 1) return 0;
    return sem_offset(p) + tiles_total(p) * sizeof(int);
  }
  // The slices (1..max_split) to run p in on the current device (kdl/split_k.h): grid = tiles x phases x slices.
  static int split_k_for(const Conv2dProblem& p, int max_split) {
    if (tiles_total(p) == 0 || gemm_ktiles(p) <= 0) return 1;
    if (prepare_device() != cudaSuccess) cudaGetLastError();
    static PerDeviceCount resident, ridge;
    return choose_split_k((long long)tiles_total(p), gemm_ktiles(p), max_split,
                          resident_ctas_on_device(resident, conv2d_sm80_kernel<Conv2dSm80>, kThreads, kSmemBytes),
                          /*one_wave=*/false,
                          split_k_memory(conv_unique_bytes(p, (int)sizeof(Element)), (long long)tiles_total(p), TileM,
                                         TileN, TileK, tensor_ridge_on_device(ridge, /*wgmma=*/false, 8 * (int)sizeof(Element))));
  }

  static cudaError_t prepare_device() {
    static PerDeviceOnce smem_attribute;
    return smem_attribute.run(current_device(), [] {
      return cudaFuncSetAttribute(conv2d_sm80_kernel<Conv2dSm80>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
    });
  }

  static cudaError_t run(const Conv2dProblem& p, const typename Epilogue::Params& ep, void* workspace, cudaStream_t stream) {
    if (can_implement(p) != nullptr) return cudaErrorInvalidValue;
    if (cudaError_t e = prepare_device(); e != cudaSuccess) return e;
    KernelParams kp;
    kp.prob = p;
    kp.ep = ep;
    kp.workspace = workspace;
    kp.tiles_m = (int)tiles_m_of(p);
    kp.tiles_n = (int)tiles_n_of(p);
    kp.sem_offset = sem_offset(p);
    kp.div_pq = detail::FastDiv::make(p.p * p.q);
    kp.div_q = detail::FastDiv::make(p.q);
    if (p.split_k > 1) {
      if (workspace == nullptr) return cudaErrorInvalidValue;
      cudaError_t e = cudaMemsetAsync(static_cast<char*>(workspace) + kp.sem_offset, 0, tiles_total(p) * sizeof(int), stream);
      if (e != cudaSuccess) return e;
    }
    dim3 grid((unsigned)(kp.tiles_m * kp.tiles_n), (unsigned)phases_of(p), (unsigned)p.split_k);
    conv2d_sm80_kernel<Conv2dSm80><<<grid, kThreads, kSmemBytes, stream>>>(kp);
    return cudaGetLastError();
  }
};

}  // namespace kdl
