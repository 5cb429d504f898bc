// kdl/conv_sm90.cuh -- conv2d fprop, dgrad and wgrad on the Hopper path (sm_90a): kdl::GemmSm90's
// warp-specialized wgmma mainloop, its stages loaded by TMA (stage loaders) or A gathered by the producer.
//
// fprop: the implicit GEMM is batched over images: batch = image, M = p*q (the image's output pixels), N = k,
// K = (tap r, s; 64 channels), so the epilogue sees the same coordinates as the sm80 path's
// (kdl/conv_problem.h: batch = image, m = pixel of the image, n = k) and GemmSm90's epilogue (TMA store of
// Y, [col] = [channel] broadcasts, the residual as C) serves unchanged.
//   * By default (sm90::ConvFpropLoader), a stage comes by two TMAs from one producer thread (four by turns
//     for tiles up to 128 x 128: GemmSm90::kIssuers): A (X) in im2col mode --
//     the tensor map describes X as {c, w, h, n} with the padding as its bounding box's corners and the
//     conv's strides as traversal strides; a load takes the tile's first output pixel and the tap's offset
//     (r * dil_h, s * dil_w) and walks TileM output pixels (along W, then H, then the next image), 64
//     channels each, zero-filling what lies outside X, into the 128-byte-swizzled K-major stage -- and B
//     (W) as a 3-D tensor {c, r*s, k}: the tap's 64 channels of the tile's TileN filters. The hardware makes
//     the addresses; channels past c are zero on both sides, so c need only be a multiple of 8, and W's
//     taps may be padded.
//   * Im2col = false: the producer warpgroup's 128 threads gather A (sm90::ConvFpropGather): per k-tile each
//     row (output pixel) finds its source (y, x) for the tap, and eight threads copy its 64 channels
//     (128 bytes, a 16-byte cp.async each) into the 128-byte-swizzled K-major layout wgmma reads,
//     zero-filling padding and rows past p*q; each thread then arrives on the stage's full barrier when
//     its copies land (cp.async.mbarrier.arrive.noinc). B comes by TMA as the GEMM's column-major B: W as
//     one k x (r*s*c) matrix, so c a multiple of 64 and W's taps packed.
//   * Patch = true (beside the im2col loader; sm90::ConvFpropPatchLoader): X's input pixels loaded once per
//     64-channel block into a patch each tap's A is a window of, W alone in the stages; run() takes it at
//     dilation 1 where it measured faster (patch_pays) and TMA can describe X and Y.
// Requirements beyond the sm80 path's (can_implement names the one that fails): n <= 65535, no split-K;
// X, W, Y pointers and strides 16-byte aligned (the kernel's alignment of 8 elements); im2col: strides <= 8,
// padding and the dilated filter within the tensor map's corner range (-128 .. 127).
// dgrad and wgrad: below (ConvDgradLoader, ConvWgradLoader).
// Measured on the H100 (bf16 N32 C256 56x56 K256 3x3, 128x256 cooperative): the thread gather 638 TFLOP/s,
// im2col TMA 692 (docs/perf-notes.md, v13).
#pragma once
#include <stdlib.h>
#include <string.h>

#include "kdl/conv_sm80.cuh"  // Conv2dSm80's argument checks, detail::FastDiv
#include "kdl/gemm_sm90.cuh"

namespace kdl {
namespace sm90 {

// The k-tile order of both fprop loaders (their Params hold c, div_taps = r * s and div_s = s): the
// k-tiles walk (channel block cb, tap r, s) with the tap fastest, so consecutive k-tiles read the same 64
// channels of pixels one tap apart, mostly the same lines (which L1 or L2 keeps). B's k-coordinate of
// k-tile kt (W's column tap * c + cb * 64) follows that order.
// What both fprop loaders know of the problem (their Params derive from it).
struct ConvFpropShape {
  int c, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
  ::kdl::detail::FastDiv div_q, div_taps, div_s;  // Y's width, r * s, the filter's width
  static ConvFpropShape of(const Conv2dProblem& p) {
    return {p.c, p.pad_h, p.pad_w, p.stride_h, p.stride_w, p.dil_h, p.dil_w, ::kdl::detail::FastDiv::make(p.q),
            ::kdl::detail::FastDiv::make(p.r * p.s), ::kdl::detail::FastDiv::make(p.s)};
  }
};

struct ConvFpropKOrder {
  template <class Params>
  // k-tile kt's 64-channel block cb and tap (its filter row r and column s): the tap fastest.
  __device__ __forceinline__ static void tile_of(const Params& g, int kt, int& cb, int& tap, int& r, int& s) {
    g.div_taps.divmod(kt, cb, tap);
    g.div_s.divmod(tap, r, s);
  }
  template <class Params>
  __device__ __forceinline__ static int b_k(const Params& g, int kt) {
    int cb, tap;
    g.div_taps.divmod(kt, cb, tap);
    return tap * g.c + cb * 64;
  }
};

// GemmSm90's AGather for conv fprop: the A tile of (image, tile tm, k-tile kt) from X (NHWC).
struct ConvFpropGather : ConvFpropKOrder {
  static constexpr bool kEnabled = true;
  static constexpr bool kLoadsStage = false;
  static constexpr int kMaxClusterM = 1;
  static constexpr int kMaxClusterN = 1;
  struct Params : ConvFpropShape {
    const char* x;                     // X
    int64_t ld_bytes, image_bytes;     // pixel stride, image stride
    int h, w, pq;                      // X's size, Y's pixels per image
  };
  // The rows one producer thread copies: kThreadsPerRow threads share a pixel's 128 bytes, each copying
  // 8 / kThreadsPerRow 16-byte chunks of it (thread t: chunks c0 + j of rows t / kThreadsPerRow + i * kRowStep);
  // fewer threads per row repeat a row's address and bounds arithmetic fewer times, more spread a warp's
  // copy over more 128-byte lines (the second half of a line then comes from L1: cp.async.ca). The
  // producer's instructions bound this kernel: measured on the H100 (bf16 N32 C256 56x56 K256 3x3,
  // 128x256 cooperative), 8 / 4 / 2 / 1 threads per row: 602 / 638 / 525 / 387 TFLOP/s.
  // init() finds each row's pixel once per tile (its source corner y0, x0; rows past p*q are never
  // inside); load() then costs a few adds and compares per row and k-tile.
  template <int TileM, int kThreadsPerRow = 4>
  struct Rows {
    static constexpr int kChunks = 8 / kThreadsPerRow;
    static constexpr int kRowStep = 128 / kThreadsPerRow;
    static constexpr int kRows = TileM / kRowStep;
    const char* image_base;
    int y0[kRows], x0[kRows];
    int row0, c0;
    __device__ __forceinline__ void init(const Params& g, int image, int tm, int thread) {
      c0 = (thread % kThreadsPerRow) * kChunks;
      row0 = thread / kThreadsPerRow;
      image_base = g.x + image * g.image_bytes + c0 * 16;
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        const int pixel = tm * TileM + row0 + kRowStep * i;
        int p, q;
        g.div_q.divmod(pixel, p, q);
        y0[i] = pixel < g.pq ? p * g.stride_h - g.pad_h : -(1 << 28);
        x0[i] = q * g.stride_w - g.pad_w;
      }
    }
    __device__ __forceinline__ void load(const Params& g, uint32_t stage, int kt) const {
      int cb, tap, r, s;
      tile_of(g, kt, cb, tap, r, s);
      const int dy = r * g.dil_h, dx = s * g.dil_w;
      const char* const base = image_base + cb * 128;
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        const int y = y0[i] + dy, x = x0[i] + dx;
        const bool ok = (unsigned)y < (unsigned)g.h && (unsigned)x < (unsigned)g.w;
        const char* const src = ok ? base + (int64_t)(y * g.w + x) * g.ld_bytes : g.x;
        const int row = row0 + kRowStep * i;
        const uint32_t dst = stage + uint32_t(row * 128);
#pragma unroll
        for (int j = 0; j < kChunks; ++j)  // the 128-byte swizzle: chunk c of row r at c ^ (r % 8)
          asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst + uint32_t(((c0 + j) ^ (row & 7)) << 4)),
                       "l"(src + j * 16), "r"(ok ? 16 : 0));
      }
    }
  };
};

// An NHWC tensor of `c` channels, h x w pixels (pixel stride ld, rows packed) and n images as an im2col
// map whose walk's origin runs from the corner `lower` to `upper` ({w, h}) with traversal strides `stride`.
inline bool encode_im2col(CUtensorMap* map, const void* t, int c, int w, int h, int n, int64_t ld, int64_t image_stride,
                          const int (&lower)[2], const int (&upper)[2], const int (&stride)[2], int pixels, int elem_bytes,
                          CUtensorMapDataType dtype) {
  const DriverApi& api = driver_api();
  if (api.cuTensorMapEncodeIm2col == nullptr) return false;
  cuuint64_t dims[4] = {(cuuint64_t)c, (cuuint64_t)w, (cuuint64_t)h, (cuuint64_t)n};
  cuuint64_t strides[3] = {(cuuint64_t)ld * elem_bytes, (cuuint64_t)ld * w * elem_bytes, (cuuint64_t)image_stride * elem_bytes};
  int lo[2] = {lower[0], lower[1]}, up[2] = {upper[0], upper[1]};  // innermost first: {W, H} (measured: {H, W} faults)
  cuuint32_t estr[4] = {1, (cuuint32_t)stride[0], (cuuint32_t)stride[1], 1};
  return api.cuTensorMapEncodeIm2col(map, dtype, 4, const_cast<void*>(t), dims, strides, lo, up, 64, pixels, estr,
                                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
// The corner range of a 4-D im2col map (the tap offsets are 16-bit; measured limits of the corners).
inline bool im2col_corners_ok(const int (&lower)[2], const int (&upper)[2]) {
  for (int i = 0; i < 2; ++i)
    if (lower[i] < -128 || lower[i] > 127 || upper[i] < -128 || upper[i] > 127) return false;
  return true;
}
// X (NHWC, pixel stride ld, image stride image_stride) as fprop and wgrad read it: an im2col tensor map
// {c, w, h, n} whose bounding box is the padding (corners -pad .. pad - dil * (filter - 1)) and whose
// traversal strides are the conv's; a load walks `pixels` output pixels (along W, then H, then the next
// image) of 64 channels each into 128-byte-swizzled rows. False when the driver cannot describe X.
inline bool encode_im2col_x(CUtensorMap* map, const Conv2dProblem& p, const void* x, int64_t ld, int64_t image_stride,
                            int pixels, int elem_bytes, CUtensorMapDataType dtype) {
  const int eh = p.dil_h * (p.r - 1), ew = p.dil_w * (p.s - 1);
  const int lower[2] = {-p.pad_w, -p.pad_h}, upper[2] = {p.pad_w - ew, p.pad_h - eh}, stride[2] = {p.stride_w, p.stride_h};
  return encode_im2col(map, x, p.c, p.w, p.h, p.n, ld, image_stride, lower, upper, stride, pixels, elem_bytes, dtype);
}

// Why encode_im2col_x's map cannot describe the problem's X (nullptr: it can): traversal strides <= 8 and
// corners in -128 .. 127 (4-D im2col). `who` starts the message ("kdl conv sm90a", "kdl conv sm90a wgrad").
inline const char* im2col_x_refusal(const Conv2dProblem& p, const char* who, char* msg, size_t cap) {
  const int eh = p.dil_h * (p.r - 1), ew = p.dil_w * (p.s - 1);
  if (p.stride_h > 8 || p.stride_w > 8)
    return snprintf(msg, cap, "%s: strides (%d, %d) above 8 (TMA im2col traverses at most 8 apart)", who, p.stride_h,
                    p.stride_w),
           msg;
  if (p.pad_h > 128 || p.pad_w > 128 || eh - p.pad_h > 128 || ew - p.pad_w > 128)
    return snprintf(msg, cap, "%s: padding (%d, %d) or dilated filter (%d x %d) out of TMA im2col's corner range (-128 .. 127)",
                    who, p.pad_h, p.pad_w, eh + 1, ew + 1),
           msg;
  return nullptr;
}

// W (KRSC: tap stride ldb, filter stride batch_stride_b) as the 3-D tensor {c, r*s, k} the fprop and dgrad
// loaders read: one box of 64 channels x 1 tap x box_k filters, 128-byte swizzle; past c or k zero. Its own
// tap dimension frees the tap stride (padded taps) and lets a channel block run past c.
inline cudaError_t encode_filter_taps(CUtensorMap* map, const Conv2dProblem& p, int box_k, int elem_bytes,
                                      CUtensorMapDataType dtype) {
  const DriverApi& api = driver_api();
  if (api.cuTensorMapEncodeTiled == nullptr) return cudaErrorNotSupported;
  cuuint64_t dims[3] = {(cuuint64_t)p.c, (cuuint64_t)p.r * p.s, (cuuint64_t)p.k};
  cuuint64_t strides[2] = {(cuuint64_t)p.ldb * elem_bytes, (cuuint64_t)p.batch_stride_b * elem_bytes};
  cuuint32_t box[3] = {64, 1, (cuuint32_t)box_k}, estr[3] = {1, 1, 1};
  return api.cuTensorMapEncodeTiled(map, dtype, 3, const_cast<void*>(p.B), dims, strides, box, estr,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS
             ? cudaSuccess
             : cudaErrorInvalidValue;
}

// One im2col load: the map's `pixels` output pixels from (image, h0, w0) on, channels c0 .. c0 + 63, at the
// tap offset (off_h, off_w), into `dst` (shared window), completing on `full`.
__device__ __forceinline__ void tma_load_im2col(uint32_t dst, const CUtensorMap* map, uint64_t* full, int c0, int w0, int h0,
                                                int image, int off_w, int off_h) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6], {%7, %8};\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(w0), "r"(h0), "r"(image),
      "r"(static_cast<uint32_t>(__cvta_generic_to_shared(full))), "h"(uint16_t(off_w)), "h"(uint16_t(off_h))
      : "memory");
#endif
}

// The same load delivered to the same offset (and completing on the same barrier offset) in every CTA of the
// cluster whose bit is set in `cta_mask` (sm_90a).
__device__ __forceinline__ void tma_load_im2col_multicast(uint32_t dst, const CUtensorMap* map, uint64_t* full, int c0,
                                                          int w0, int h0, int image, int off_w, int off_h,
                                                          uint16_t cta_mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.multicast::cluster [%0], "
      "[%1, {%2, %3, %4, %5}], [%6], {%7, %8}, %9;\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(w0), "r"(h0), "r"(image),
      "r"(static_cast<uint32_t>(__cvta_generic_to_shared(full))), "h"(uint16_t(off_w)), "h"(uint16_t(off_h)),
      "h"(cta_mask)
      : "memory");
#endif
}

// GemmSm90's stage loader (kLoadsStage) for conv fprop: the implicit GEMM M = output pixels, N = k, K = (tap,
// 64-channel block) walked tap fastest (ConvFpropKOrder), ceil(c / 64) blocks per tap.
//   * A (X, K-major): one TMA in im2col mode per k-tile: TileM consecutive output pixels (the tensor map walks
//     W, then H, then the next image, with the conv's strides), each at the tap's offset, channels
//     cb * 64 .. cb * 64 + 63; padding and channels past c zero-filled by TMA.
//   * B (W, K-major): one tiled TMA per k-tile of W as {c, r*s, k} (the tap its own dimension, so W's taps
//     may be padded): channels cb * 64 .. + 63 of the tap for the tile's TileN output channels; past c or k:
//     zero. A's and B's zero channels meet, so a partial channel block adds nothing.
struct ConvFpropLoader : ConvFpropKOrder {
  static constexpr bool kEnabled = false;
  static constexpr bool kLoadsStage = true;
  static constexpr int kMaxClusterM = 2;  // W's tile shared by 2 CTAs (adjacent pixel tiles): each loads half
  static constexpr int kMaxClusterN = 2;  // X's tile shared by 2 CTAs (adjacent filter tiles): each loads half
  struct Params : ConvFpropShape {
    CUtensorMap tmX;  // X as {c, w, h, n}: corners -pad .. pad - (dil * (filter - 1)), traversal strides; TileM / ClusterN pixels
    CUtensorMap tmW;  // W as {c, r*s, k}, box 64 x 1 x TileN / ClusterM
    int images_as_rows;  // 1: the GEMM runs the images as one (M = n*p*q, batch 1), tiles cross images
    int rows;            // the GEMM's M: n*p*q (images_as_rows) or p*q
    ::kdl::detail::FastDiv div_pq;  // p * q
  };
  __device__ __forceinline__ static void prefetch(const Params& g) {
    tma_prefetch(&g.tmX);
    tma_prefetch(&g.tmW);
  }
  struct Load {
    int c0, w0, h0, image, off_w, off_h;  // X's im2col load
    int tap, n;                           // W's
    uint32_t dst_a, dst_b;                // this CTA's slices' offsets in the stage's tiles
  };
  template <class TileA, class TileB>
  __device__ __forceinline__ static Load prepare(const Params& g, int batch, int m0, int n0, int kt, int slice_b,
                                                 int slice_a) {
    static_assert(TileA::kMajor == Major::K && TileB::kMajor == Major::K && TileA::kBlocks == 1 && TileB::kBlocks == 1,
                  "ConvFpropLoader: K-major A and B tiles of 64-channel k-tiles");
    // X: this CTA's slice of the tile's pixels (tmX's box: TileA::kSliceRows of them). A slice that starts
    // past the last pixel (a cluster's tile past the end, or the second half of the last tile) loads any
    // in-range pixels instead, never stored: TMA refuses an im2col walk that starts outside X.
    m0 += slice_a * TileA::kSliceRows;
    if (m0 >= g.rows) m0 = 0;
    Load l;
    int cb, r, s, p0, q0, pixel = m0;
    l.image = batch;
    tile_of(g, kt, cb, l.tap, r, s);
    if (g.images_as_rows) g.div_pq.divmod(m0, l.image, pixel);  // the slice's first pixel's image
    g.div_q.divmod(pixel, p0, q0);  // its first output pixel (the load walks on into the next image)
    l.c0 = cb * 64;
    l.w0 = q0 * g.stride_w - g.pad_w;
    l.h0 = p0 * g.stride_h - g.pad_h;
    l.off_w = s * g.dil_w;
    l.off_h = r * g.dil_h;
    // W: this CTA's slice of the tile's filters (tmW's box: TileB::kSliceRows of them).
    l.n = n0 + slice_b * TileB::kSliceRows;
    l.dst_a = uint32_t(slice_a * TileA::kSliceRows * 128);
    l.dst_b = uint32_t(slice_b * TileB::kSliceRows * 128);
    return l;
  }
  // Each slice goes to every CTA sharing it (mask_a: the cluster row, mask_b: the column).
  template <class TileA, class TileB>
  __device__ __forceinline__ static void issue(const Params& g, const Load& l, uint32_t stage_a, uint32_t stage_b,
                                               uint64_t* full, uint16_t mask_b, uint16_t mask_a) {
    if constexpr (TileA::kSlices == 1)
      tma_load_im2col(stage_a + l.dst_a, &g.tmX, full, l.c0, l.w0, l.h0, l.image, l.off_w, l.off_h);
    else
      tma_load_im2col_multicast(stage_a + l.dst_a, &g.tmX, full, l.c0, l.w0, l.h0, l.image, l.off_w, l.off_h, mask_a);
    if constexpr (TileB::kSlices == 1)
      tma_load_3d(__cvta_shared_to_generic(stage_b + l.dst_b), &g.tmW, full, l.c0, l.tap, l.n);
    else
      tma_load_3d_multicast(__cvta_shared_to_generic(stage_b + l.dst_b), &g.tmW, full, l.c0, l.tap, l.n, mask_b);
  }
};

// Which mainloop a kernel built with both takes: the environment variable KDL_CONV_MAINLOOP when the process first
// asks -- "patch": the patch mainloop wherever it can run the problem (1), "im2col": never (-1), "swap": the swapped
// one wherever it can, else the patch one wherever it can (2) -- else the measured choice (0,
// Conv2dSm90Fprop::swap_pays and patch_pays). For tests and comparisons in one build (docs/language.md
// section 9).
inline int conv_mainloop_override() {
  static const int choice = [] {
    const char* e = getenv("KDL_CONV_MAINLOOP");
    if (e == nullptr) return 0;
    if (strcmp(e, "patch") == 0) return 1;
    if (strcmp(e, "im2col") == 0) return -1;
    if (strcmp(e, "swap") == 0) return 2;
    return 0;
  }();
  return choice;
}

// GemmSm90's patch loader for conv fprop at unit stride and dilation with a fixed R x S filter: X's input pixels
// are loaded once per 64-channel block, not once per tap (docs/perf-notes.md v42, v46).
//   * The tile's rows are a block of output pixels, images innermost: TileM / 64 output rows x 64 / G pixels x
//     G images (G = 8 or 16, chosen per problem: Params::g), row (b, x, i) = b * 64 + x * G + i. Tiles walk
//     (image block, output-row block, pixel block), the pixel block fastest; tiles_m x TileM rows, each tile whole
//     (TMA clips the parts past n, p or q).
//   * The patch: the tile's input pixels with the filter's halo, (TileM / 64 + R - 1) rows x (64 / G + S - 1)
//     pixels x G images x 64 channels, laid out [h][w][image][channel] (one 128-byte row per image and pixel, so
//     every pixel is G / 8 whole 1024-byte swizzle atoms): one tiled TMA of X described as {c, n, w, h} (its
//     strides need not grow with the dimension), zero past X's borders, past n and past c. It goes into one of
//     GemmSm90's two patch slots at each channel block's first tap, on that k-tile's full barrier.
//   * Tap (r, s)'s A of m64 block b (output row b of the tile, its 64 / G pixels x G images) is then an
//     ordinary K-major 128-byte-swizzled tile starting ((b + r) * PW + s) * G / 8 atoms into the patch.
//   * B (W) as the im2col loader's: one tiled TMA per k-tile of W as {c, r*s, k}.
//   * D: a box of 64 rows (one output row of the tile) through Y described as {k, n, q, p}.
// The k-tiles walk (channel block, tap) with the tap fastest, as the im2col loader's.
template <int R, int S, int TileM>
struct ConvFpropPatchLoader {
  static constexpr bool kEnabled = false;
  static constexpr bool kLoadsStage = true;
  static constexpr int kMaxClusterM = 1;
  static constexpr int kMaxClusterN = 1;
  static constexpr int kPatchTaps = R * S;
  static constexpr int kRows = TileM / 64;  // output rows of a tile (one per m64 block)
  static constexpr int kPatchSlotBytes = conv_patch_slot_bytes(TileM, R, S);  // kdl/gemm_sm90_smem.h
  struct Params {
    CUtensorMap tmX;  // X as {c, n, w, h}, box 64 x G x PW x PH, 128-byte swizzle
    CUtensorMap tmW;  // W as {c, r*s, k}, box 64 x 1 x TileN
    CUtensorMap tmY;  // Y as {k, n, q, p}, box (128 bytes) x G x 64 / G x 1, 128-byte swizzle
    int pad_h, pad_w;
    int g, tq;                  // images per pixel, output pixels per row of a tile (64 / g)
    uint32_t patch_bytes;       // PH * PW * g * 128
    uint32_t tap_step, row_step;  // 16-byte units: the next pixel (g * 8), the next row (PW * g * 8)
    ::kdl::detail::FastDiv div_qb, div_pb;  // tiles: pixel blocks per row block, row blocks per image block
    int n, p, q;                // the output's images, rows and pixels
    int g_shift;                // log2(g)
  };
  __device__ __forceinline__ static void prefetch(const Params& g) {
    tma_prefetch(&g.tmX);
    tma_prefetch(&g.tmW);
    tma_prefetch(&g.tmY);
  }
  // Tile tm's first image, output row and pixel.
  __device__ __forceinline__ static void origin(const Params& g, int tm, int& n0, int& p0, int& q0) {
    int rest, qb, nb, pb;
    g.div_qb.divmod(tm, rest, qb);
    g.div_pb.divmod(rest, nb, pb);
    n0 = nb * g.g;
    p0 = pb * kRows;
    q0 = qb * g.tq;
  }
  struct Load {
    int c0, tap, n;  // W's box
  };
  template <class TileA, class TileB>
  __device__ __forceinline__ static Load prepare(const Params&, int, int, int n0, int kt, int, int) {
    Load l;
    const int cb = kt / kPatchTaps;
    l.tap = kt - cb * kPatchTaps;
    l.c0 = cb * 64;
    l.n = n0;
    return l;
  }
  template <class TileA, class TileB>
  __device__ __forceinline__ static void issue(const Params& g, const Load& l, uint32_t stage_b, uint64_t* full) {
    tma_load_3d(__cvta_shared_to_generic(stage_b), &g.tmW, full, l.c0, l.tap, l.n);
  }
  // The patch of channel block cb of the tile at rows m0 into `slot`.
  __device__ __forceinline__ static void issue_patch(const Params& g, int m0, int cb, uint32_t slot, uint64_t* full) {
    int n0, p0, q0;
    origin(g, m0 / TileM, n0, p0, q0);
    tma_load_4d(__cvta_shared_to_generic(slot), &g.tmX, full, cb * 64, n0, q0 - g.pad_w, p0 - g.pad_h);
  }
  __device__ __forceinline__ static uint32_t patch_bytes(const Params& g) { return g.patch_bytes; }
  __device__ __forceinline__ static uint32_t block_step(const Params& g) { return g.row_step; }
  // Tap t's A (16-byte units from the patch's start, m64 block 0).
  __device__ __forceinline__ static uint32_t tap_offset(const Params& g, int t) {
    const int r = t / S, s = t - r * S;
    return uint32_t(r) * g.row_step + uint32_t(s) * g.tap_step;
  }
  // The output's row of tile row `row` (the GEMM's M: (image * p + output row) * q + pixel, the row the epilogue
  // reads C and writes extra outputs at), or -1 past n, p or q.
  __device__ __forceinline__ static int output_row(const Params& g, int row) {
    int n0, p0, q0;
    origin(g, row / TileM, n0, p0, q0);
    const int r = row % 64;
    const int n = n0 + (r & (g.g - 1)), q = q0 + (r >> g.g_shift), p = p0 + (row % TileM) / 64;
    return n < g.n && p < g.p && q < g.q ? (n * g.p + p) * g.q + q : -1;
  }
  // The 64-row box of D at tile row `row` (its tile's output row (row % TileM) / 64), columns col ..
  __device__ __forceinline__ static void store_d(const Params& g, const void* src, int col, int row) {
    int n0, p0, q0;
    origin(g, row / TileM, n0, p0, q0);
    tma_store_4d(&g.tmY, src, col, n0, q0, p0 + (row % TileM) / 64);
  }
  // The images per pixel for a problem: the one that leaves fewer empty rows (8 on a tie: its patch has
  // the smaller halo per output pixel).
  static int images_per_pixel(const Conv2dProblem& p) {
    auto rows = [&](int gi) { return (int64_t)((p.n + gi - 1) / gi) * gi * (((p.q + 64 / gi - 1) / (64 / gi)) * (64 / gi)); };
    return rows(16) < rows(8) ? 16 : 8;
  }
  // The tiles of a problem at G images per pixel.
  static int64_t tiles(const Conv2dProblem& p, int gi) {
    return (int64_t)((p.n + gi - 1) / gi) * ((p.p + kRows - 1) / kRows) * ((p.q + 64 / gi - 1) / (64 / gi));
  }
  // The GEMM's rows: its tiles (at images_per_pixel), every one whole.
  static int64_t rows(const Conv2dProblem& p) { return tiles(p, images_per_pixel(p)) * TileM; }
  // Fills the parameters but the W map (the caller's, with the tile's box); false when TMA cannot describe X
  // or Y (the caller then runs the im2col loader). y: Y's data, pixel stride and image stride (elements).
  static bool encode(Params& g, const Conv2dProblem& p, int elem_bytes, CUtensorMapDataType dtype, const void* y,
                     int64_t ldy, int64_t image_stride_y, int y_elem_bytes, CUtensorMapDataType y_dtype) {
    const DriverApi& api = driver_api();
    if (api.cuTensorMapEncodeTiled == nullptr) return false;
    const int gi = images_per_pixel(p), tq = 64 / gi;
    const int ph = kRows + R - 1, pw = tq + S - 1;
    g.pad_h = p.pad_h;
    g.pad_w = p.pad_w;
    g.g = gi;
    g.g_shift = gi == 16 ? 4 : 3;
    g.tq = tq;
    g.n = p.n;
    g.p = p.p;
    g.q = p.q;
    g.patch_bytes = uint32_t(ph * pw * gi * 128);
    g.tap_step = uint32_t(gi * 8);
    g.row_step = uint32_t(pw * gi * 8);
    g.div_qb = ::kdl::detail::FastDiv::make((p.q + tq - 1) / tq);
    g.div_pb = ::kdl::detail::FastDiv::make((p.p + kRows - 1) / kRows);
    const int64_t eb = elem_bytes, yb = y_elem_bytes;
    // One image: its stride may be anything (0 included); TMA takes the packed one.
    const int64_t image_x = p.n > 1 ? p.batch_stride_a : p.lda * p.w * p.h;
    const int64_t image_y = p.n > 1 ? image_stride_y : ldy * p.q * p.p;
    auto aligned = [](const void* ptr, int64_t bytes) { return (reinterpret_cast<uintptr_t>(ptr) % 16) == 0 && bytes % 16 == 0; };
    // (The TMA store clips at k in 16-byte granules: Y's rows must end on one.)
    if (y == nullptr || !aligned(p.A, p.lda * eb) || (image_x * eb) % 16 || image_x <= 0 || !aligned(y, ldy * yb) ||
        (image_y * yb) % 16 || image_y <= 0 || ((int64_t)p.k * yb) % 16 || ldy < p.k)
      return false;
    {
      cuuint64_t dims[4] = {(cuuint64_t)p.c, (cuuint64_t)p.n, (cuuint64_t)p.w, (cuuint64_t)p.h};
      cuuint64_t strides[3] = {(cuuint64_t)(image_x * eb), (cuuint64_t)(p.lda * eb), (cuuint64_t)(p.lda * p.w * eb)};
      cuuint32_t box[4] = {64, (cuuint32_t)gi, (cuuint32_t)pw, (cuuint32_t)ph}, estr[4] = {1, 1, 1, 1};
      if (api.cuTensorMapEncodeTiled(&g.tmX, dtype, 4, const_cast<void*>(p.A), dims, strides, box, estr,
                                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return false;
    }
    {
      cuuint64_t dims[4] = {(cuuint64_t)p.k, (cuuint64_t)p.n, (cuuint64_t)p.q, (cuuint64_t)p.p};
      cuuint64_t strides[3] = {(cuuint64_t)(image_y * yb), (cuuint64_t)(ldy * yb), (cuuint64_t)(ldy * p.q * yb)};
      cuuint32_t box[4] = {(cuuint32_t)(128 / yb), (cuuint32_t)gi, (cuuint32_t)tq, 1}, estr[4] = {1, 1, 1, 1};
      if (api.cuTensorMapEncodeTiled(&g.tmY, y_dtype, 4, const_cast<void*>(y), dims, strides, box, estr,
                                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                     CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
        return false;
    }
    return true;
  }
};

// GemmSm90's stage loader for conv dgrad at unit stride: dX = the convolution of dY with W's taps flipped
// and its k and c swapped, i.e. an fprop over dY: M = the input pixels (h x w per image; images_as_rows:
// n*h*w, tiles crossing images), N = c, K = (64 output channels k, flipped tap) walked tap fastest.
//   * A (dY, K-major): one TMA in im2col mode per k-tile: dY as {k, q, p, n}, its walk over the h x w grid of
//     dX (bounding box corners -(dil*(filter-1) - pad) .. -pad, traversal stride 1), at the flipped tap's
//     offset (r' * dil_h, s' * dil_w), 64 output channels (past k: zero).
//   * B (W, MN-major): per 64-column block one tiled TMA of W as {c, r*s, k}: channels c0 .. c0 + 63 of tap
//     r*s - 1 - tap' for the k-tile's 64 output channels (past c or k: zero).
struct ConvDgradLoader {
  static constexpr bool kEnabled = false;
  static constexpr bool kLoadsStage = true;
  static constexpr int kMaxClusterM = 1;
  static constexpr int kMaxClusterN = 1;
  struct Params {
    CUtensorMap tmY;     // dY in im2col mode, TileM pixels x 64 channels per load
    CUtensorMap tmW;     // W: {c, r*s, k}, box 64 x 1 x 64
    int images_as_rows;  // 1: M runs over n*h*w pixels (a tile may cross images); 0: batch = image
    int lower_h, lower_w;  // the walk's corner: -(dil * (filter - 1) - pad)
    int dil_h, dil_w;
    ::kdl::detail::FastDiv div_taps, div_s, div_w, div_hw;
  };
  __device__ __forceinline__ static void prefetch(const Params& g) {
    tma_prefetch(&g.tmY);
    tma_prefetch(&g.tmW);
  }
  struct Load {
    int c0, x0, y0, image, off_w, off_h;  // dY's im2col load
    int w_tap, n0;                        // W's
  };
  template <class TileA, class TileB>
  __device__ __forceinline__ static Load prepare(const Params& g, int batch, int m0, int n0, int kt, int, int) {
    static_assert(TileA::kMajor == Major::K && TileB::kMajor == Major::MN && TileB::kBlockMN == 64 &&
                      TileB::kBlockBytes == 64 * 128,
                  "ConvDgradLoader: a 16-bit K-major A and an MN-major B of 64-channel k-tiles");
    Load l;
    int cb, tap, r, s, pixel = m0;
    l.image = batch;
    g.div_taps.divmod(kt, cb, tap);
    g.div_s.divmod(tap, r, s);
    if (g.images_as_rows) g.div_hw.divmod(m0, l.image, pixel);  // the image the tile starts in
    g.div_w.divmod(pixel, l.y0, l.x0);
    l.c0 = cb * 64;
    l.x0 += g.lower_w;
    l.y0 += g.lower_h;
    l.off_w = s * g.dil_w;
    l.off_h = r * g.dil_h;
    l.w_tap = g.div_taps.d - 1 - tap;  // the flipped tap of W (div_taps.d = r * s)
    l.n0 = n0;
    return l;
  }
  template <class TileA, class TileB>
  __device__ __forceinline__ static void issue(const Params& g, const Load& l, uint32_t stage_a, uint32_t stage_b,
                                               uint64_t* full, uint16_t, uint16_t) {
    tma_load_im2col(stage_a, &g.tmY, full, l.c0, l.x0, l.y0, l.image, l.off_w, l.off_h);
#pragma unroll
    for (int b = 0; b < TileB::kBlocks; ++b)
      tma_load_3d(__cvta_shared_to_generic(stage_b + uint32_t(b * TileB::kBlockBytes)), &g.tmW, full, l.n0 + b * 64,
                  l.w_tap, l.c0);
  }
};

// GemmSm90's stage loader (kLoadsStage) for conv wgrad: the implicit GEMM M = k (dY's channels), N = r*s*c
// (tap-major, W's taps packed), K = the output pixels, 64 per k-tile. Both tiles are MN-major (wgmma's
// transposed operands): blocks of 64 channels, each the k-tile's 64 pixels as 128-byte rows.
//   * A (dY): one tiled TMA per 64 rows of the tile, dY as {k, pixels, images}: pixels past an image's p*q
//     are zero. When dY's images lie back to back (images_as_rows) the pixels run on across images
//     ({k, n*p*q, 1}) and no k-tile is cut short at an image's end; else each image starts a k-tile.
//   * B (X): per 64-column block one TMA in im2col mode: the block's tap (r, s) and channels c0 .. c0 + 63
//     (c a multiple of 64, so a block lies in one tap), at the k-tile's 64 output pixels, padding zero-filled;
//     the walk runs on into the next image where the k-tile does (A's pixels there are its own or zero).
//   Columns past r*s*c load the last tap again: their results are never stored.
struct ConvWgradLoader {
  static constexpr bool kEnabled = false;
  static constexpr bool kLoadsStage = true;
  static constexpr int kMaxClusterM = 1;
  static constexpr int kMaxClusterN = 1;
  // No run-time tile order (GemmSm90::kDyn): the wgrad runs split-K, never whole units, and the tickets' code in
  // its walk cost its split-K kernels 3-8 % (docs/perf-notes.md v30).
  static constexpr bool kDynamicOrder = false;
  struct Params : ConvFpropShape {  // X as fprop reads it: pads, strides, dilations, div_q, div_taps, div_s
    CUtensorMap tmY;     // dY: {k, p*q, n} (images_as_rows: {k, n*p*q, 1}), box 64 x 64
    CUtensorMap tmX;     // X in im2col mode, 64 pixels x 64 channels per load (encode_im2col_x)
    int images_as_rows;  // 1: K runs over n*p*q pixels; 0: over each image's p*q, rounded up to 64
    ::kdl::detail::FastDiv div_c, div_pq, div_ktiles_per_image;
  };
  __device__ __forceinline__ static void prefetch(const Params& g) {
    tma_prefetch(&g.tmY);
    tma_prefetch(&g.tmX);
  }
  template <class TileA, class TileB>
  struct LoadOf {
    int a_k, a_mn, a_batch;               // dY's tiled load
    int w0, h0, image;                    // X's im2col loads, one per 64-column block of B
    int c0[TileB::kBlocks], off_w[TileB::kBlocks], off_h[TileB::kBlocks];
  };
  template <class TileA, class TileB>
  __device__ __forceinline__ static LoadOf<TileA, TileB> prepare(const Params& g, int /*batch*/, int m0, int n0, int kt,
                                                                 int, int) {
    static_assert(TileA::kBlockMN == 64 && TileB::kBlockMN == 64 && TileA::kBlockBytes == 64 * 128 &&
                      TileB::kBlockBytes == 64 * 128 && TileA::kMajor == Major::MN && TileB::kMajor == Major::MN,
                  "ConvWgradLoader: 16-bit MN-major tiles of 64-pixel k-tiles");
    LoadOf<TileA, TileB> l;
    int pixel;  // the k-tile's first output pixel
    if (g.images_as_rows) {
      g.div_pq.divmod(kt * 64, l.image, pixel);
      l.a_k = kt * 64;
      l.a_batch = 0;
    } else {
      int t;
      g.div_ktiles_per_image.divmod(kt, l.image, t);
      pixel = t * 64;
      l.a_k = pixel;
      l.a_batch = l.image;
    }
    l.a_mn = m0;
    int p0, q0;
    g.div_q.divmod(pixel, p0, q0);
    l.w0 = q0 * g.stride_w - g.pad_w;
    l.h0 = p0 * g.stride_h - g.pad_h;
#pragma unroll
    for (int b = 0; b < TileB::kBlocks; ++b) {
      int tap, r, s;
      g.div_c.divmod(n0 + b * 64, tap, l.c0[b]);
      if (tap >= g.div_taps.d) tap = g.div_taps.d - 1;
      g.div_s.divmod(tap, r, s);
      l.off_w[b] = s * g.dil_w;
      l.off_h[b] = r * g.dil_h;
    }
    return l;
  }
  template <class TileA, class TileB>
  __device__ __forceinline__ static void issue(const Params& g, const LoadOf<TileA, TileB>& l, uint32_t stage_a,
                                               uint32_t stage_b, uint64_t* full, uint16_t, uint16_t) {
    TileA::load(stage_a, &g.tmY, full, l.a_k, l.a_mn, l.a_batch, 0, 0);
#pragma unroll
    for (int b = 0; b < TileB::kBlocks; ++b)
      tma_load_im2col(stage_b + uint32_t(b * TileB::kBlockBytes), &g.tmX, full, l.c0[b], l.w0, l.h0, l.image, l.off_w[b],
                      l.off_h[b]);
  }
};

}  // namespace sm90
}  // namespace kdl

#include "kdl/conv_sm90_swap.cuh"  // the swapped patch mainloop (sm90::ConvFpropSwap)

namespace kdl {

// Patch = true (kdlc's plan: a fixed filter of at least 2 taps, stride (1, 1), no cluster, Y stored by
// TMA; the epilogue's residual, [channel] inputs, extra outputs and amax at each tile row's output row): a second GEMM on sm90::ConvFpropPatchLoader, which run() takes
// for every problem it can describe (dilation 1, the epilogue's images packed, X and Y describable by tiled TMA);
// the im2col GEMM runs the others.
template <class Element, int TileM, int TileN, int Stages, Sm90Schedule Schedule, int FilterR, int FilterS, int StrideH,
          int StrideW, class Epilogue, bool Im2col = true, int ClusterM = 1, int ClusterN = 1, bool Patch = false>
struct Conv2dSm90Fprop {
  static constexpr ConvKind kKind = ConvKind::Fprop;
  // ClusterM = 2: clusters of 2 CTAs on adjacent pixel tiles share W's tile (each loads half, multicast).
  // ClusterN = 2: clusters of 2 CTAs on adjacent filter tiles share X's tile (each loads half the pixels).
  static_assert((ClusterM == 1 && ClusterN == 1) || Im2col, "Conv2dSm90Fprop: clusters need the TMA loader");
  static constexpr bool kPackedFilterTaps = !Im2col;  // the thread gather reads W as one k x (r*s*c) matrix
  // Im2col: the stage loader (X by im2col TMA, W by tiled TMA); else the producer threads gather X.
  using Loader = typename std::conditional<Im2col, sm90::ConvFpropLoader, sm90::ConvFpropGather>::type;
  using Gemm = GemmSm90<Element, RowMajor, Element, ColMajor, float, TileM, TileN, 64, Stages, Schedule, ClusterM, ClusterN,
                        false, 0, sm90::NoBlockScaling, Epilogue, Loader>;
  static_assert(!Patch || (Im2col && ClusterM == 1 && ClusterN == 1 && FilterR > 0 && FilterS > 0 &&
                           FilterR * FilterS >= 2 && StrideH == 1 && StrideW == 1),
                "Conv2dSm90Fprop: the patch mainloop needs a fixed filter of 2 taps or more, stride (1, 1) and no cluster");
  using PatchLoader = sm90::ConvFpropPatchLoader<(FilterR > 0 ? FilterR : 1), (FilterS > 0 ? FilterS : 1), TileM>;
  // The patch GEMM's stages (kdl/gemm_sm90_smem.h; kdlc's plan asks for Patch only where 2 or more fit).
  static constexpr int kPatchStages =
      Patch ? conv_patch_stages(TileM, TileN, FilterR, FilterS, Stages, kGemmSm90SmemLimit) : Stages;
  static_assert(kPatchStages >= 2, "Conv2dSm90Fprop: the patch mainloop's two slots and two stages exceed shared memory");
  using PatchGemm = typename std::conditional<
      Patch,
      GemmSm90<Element, RowMajor, Element, ColMajor, float, TileM, TileN, 64, kPatchStages, Schedule, 1, 1, false, 0,
               sm90::NoBlockScaling, Epilogue, PatchLoader>,
      Gemm>::type;
  // The convolution's own argument checks (sizes, padding, strides, alignment of 8 elements: also what TMA
  // needs of every pointer and stride), shared with the sm80 path (only its host-side can_implement is
  // instantiated).
  using Checks = Conv2dSm80<ConvKind::Fprop, Element, 8, 8, float, 128, 128, 32, 2, 2, 3, FilterR, FilterS, StrideH, StrideW,
                            Epilogue>;
  static_assert(sizeof(Element) == 2, "Conv2dSm90Fprop: f16 or bf16 tensors");
  static constexpr int kThreads = Gemm::kThreads;
  static constexpr int kSmemBytes = Gemm::kSmemBytes > PatchGemm::kSmemBytes ? Gemm::kSmemBytes : PatchGemm::kSmemBytes;
  static constexpr int kMinSmemBytes = kSmemBytes;

  // Whether run() takes the patch GEMM for p (its can_implement has passed): dilation 1, the epilogue's images
  // packed (tiles cross images; [channel] vectors shared), and the tiles' rows within 32-bit indexing; TMA's
  // description of X and Y is the last check (run).
  // Where the patch mainloop pays (measured on the H200 against im2col in one process, bf16, docs/perf-notes.md v47,
  // v49): every pingpong tile (128 x 128: +2.7 % on the first 3x3 shape of the benchmark, +3.8 % on K512, +31 % at
  // c = 64; 128 x 64: +0.4-13 %), X's share of the im2col loads is large -- a cooperative tile of TileM >= 4 x TileN
  // (256 x 64: +12-14 % on the three 3x3 shapes) -- or the channels are few (c <= 64: +2-25 % on every tile);
  // elsewhere it measured level or slower (cooperative 128 x 256: within 0.6 %; 256 x 128 -2-3 %, 128 x 64 -11 % at
  // c >= 256).
  static bool patch_pays(const Conv2dProblem& p) {
    return Schedule == Sm90Schedule::Pingpong || TileM >= 4 * TileN || p.c <= 64;
  }
  static bool patch_applies(const Conv2dProblem& p) {
    if constexpr (!Patch) {
      return false;
    } else {
      const int choice = sm90::conv_mainloop_override();
      return choice >= 0 && (choice > 0 || patch_pays(p)) && p.dil_h == 1 && p.dil_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.images_packed &&
             PatchLoader::rows(p) < 0x7fffffffLL;
    }
  }
  // The swapped patch mainloop (kdl/conv_sm90_swap.cuh): a third mainloop of the pingpong 128 x 128 patch kernels
  // with 16-bit X, W and Y and a pointwise functor, for filters whose patch leaves 4 stages (3 x 3, 1 x 3, 2 x 3, ...;
  // kdlc's plan says the same: the emitted kernel asserts it).
  using Swap = sm90::ConvFpropSwap<Element, (FilterR > 0 ? FilterR : 1), (FilterS > 0 ? FilterS : 1), Epilogue>;
  static constexpr bool kSwap = Patch && Schedule == Sm90Schedule::Pingpong && TileM == 128 && TileN == 128 &&
                                Swap::kFits && detail::EpilogueD<Epilogue>::kComputes &&
                                detail::EpilogueD<Epilogue>::kBytes == 2 && Swap::kPointwise;
  // Where it measured faster than the patch GEMM (H200, docs/perf-notes.md v61: 2.7-2.9 % on the first 3x3 shape of
  // the benchmark):
  // units of 16 images x 8 columns x 2 rows x 64 filters with nothing to pad (n a multiple of 16, q of 8, p of 2, k of
  // 64), and units of at least two channel blocks and two filter blocks (c and k of 128 or more; shorter units were not
  // measured).
  static bool swap_pays(const Conv2dProblem& p) {
    return p.n % 16 == 0 && p.q % 8 == 0 && p.p % 2 == 0 && p.k % 64 == 0 && p.k >= 128 && p.c >= 128;
  }
  static bool swap_applies(const Conv2dProblem& p) {
    if constexpr (!kSwap) {
      return false;
    } else {
      const int choice = sm90::conv_mainloop_override();
      return (choice == 2 || (choice == 0 && swap_pays(p))) && p.dil_h == 1 && p.dil_w == 1 && p.stride_h == 1 &&
             p.stride_w == 1 && p.images_packed;
    }
  }
  static bool swap_params(const Conv2dProblem& p, const typename Epilogue::Params& ep, typename Swap::Params& g) {
    if constexpr (!kSwap) {
      return false;
    } else {
      return swap_applies(p) && p.n > 0 && p.p > 0 && p.q > 0 && p.k > 0 && p.c > 0 && Swap::encode(g, p, ep);
    }
  }
  static GemmProblem gemm_of_patch(const Conv2dProblem& p) {
    GemmProblem g = gemm_of(p);
    g.m = PatchLoader::rows(p);
    g.batch = 1;
    return g;
  }

  // The batched GEMM: per image, M = p*q, N = k, K = r*s taps x c channels (the loader: rounded up to
  // 64 per tap; the gather: c a multiple of 64, B = W as the column-major k x (r*s*c) matrix).
  // With the epilogue's images packed (Conv2dProblem::images_packed) and the TMA loader, one GEMM of
  // M = n*p*q: its tiles cross images, none is cut short at an image's last pixel (28x28: 12 % of the rows).
  static bool images_as_rows(const Conv2dProblem& p) { return Im2col && p.images_packed; }
  static int channel_blocks(const Conv2dProblem& p) { return (p.c + 63) / 64; }
  static GemmProblem gemm_of(const Conv2dProblem& p) {
    GemmProblem g{};
    g.m = images_as_rows(p) ? (int64_t)p.n * p.p * p.q : (int64_t)p.p * p.q;
    g.n = p.k;
    g.k = Im2col ? (int64_t)p.r * p.s * channel_blocks(p) * 64 : (int64_t)p.r * p.s * p.c;
    g.batch = images_as_rows(p) ? 1 : p.n;
    g.A = p.A;
    g.lda = g.k;
    g.batch_stride_a = 0;
    g.B = p.B;
    g.ldb = p.batch_stride_b;
    g.batch_stride_b = 0;
    g.split_k = 1;
    g.unique_bytes = conv_unique_bytes(p, int(sizeof(Element)));  // X, W, Y once (dynamic_order)
    return g;
  }

  static const char* can_implement(const Conv2dProblem& p) {
    static thread_local char msg[320];
    if (const char* e = Checks::can_implement(p)) return e;
    if constexpr (!Im2col) {
      if (p.c % 64)
        return snprintf(msg, sizeof(msg),
                        "kdl conv sm90a: c (%d) must be a multiple of 64 (the thread gather's k-tile is one tap's 64 channels)",
                        p.c),
               msg;
      if (p.ldb != p.c)
        return snprintf(msg, sizeof(msg),
                        "kdl conv sm90a: the tap stride of W (%lld) must be c (%d): the thread gather reads W as one k x "
                        "(r*s*c) matrix by TMA",
                        (long long)p.ldb, p.c),
               msg;
    }
    if (p.n > 65535) return snprintf(msg, sizeof(msg), "kdl conv sm90a: n (%d) must be at most 65535", p.n), msg;
    if (p.split_k != 1) return snprintf(msg, sizeof(msg), "kdl conv sm90a: split_k (%d) must be 1", p.split_k), msg;
    if constexpr (Im2col)
      if (const char* e = sm90::im2col_x_refusal(p, "kdl conv sm90a", msg, sizeof(msg))) return e;
    return Gemm::can_implement(gemm_of(p));
  }
  // Optional: with it, GemmSm90 spreads a part-filled last wave of tiles over every SM (stream-K tail).
  static size_t workspace_size(const Conv2dProblem& p) {
    const size_t a = Gemm::workspace_size(gemm_of(p));
    if (!patch_applies(p)) return a;
    const size_t b = PatchGemm::workspace_size(gemm_of_patch(p));
    return a > b ? a : b;
  }

  // The patch GEMM's parameters for p (its can_implement has passed); false: run() takes the im2col mainloop.
  static bool patch_params(const Conv2dProblem& p, const typename Epilogue::Params& ep, typename PatchLoader::Params& g) {
    if constexpr (!Patch) {
      return false;
    } else {
      const GemmProblem gp = gemm_of(p);
      if (!patch_applies(p) || gp.m <= 0 || gp.n <= 0 || gp.k <= 0) return false;
      using ElementD = typename detail::EpilogueD<Epilogue>::Element;
      const OutputD<ElementD> d = detail::output_d<Epilogue>(ep);
      return PatchLoader::encode(g, p, int(sizeof(Element)), detail::Sm90TmaDtype<Element>::value, d.data, d.ld,
                                 d.batch_stride, int(sizeof(ElementD)), detail::Sm90StoreDtype<ElementD>::value) &&
             sm90::encode_filter_taps(&g.tmW, p, TileN, int(sizeof(Element)), detail::Sm90TmaDtype<Element>::value) ==
                 cudaSuccess;
    }
  }
  // The mainloop run() takes for p (its can_implement has passed): "swap", "patch" or "im2col" (kdl_NAME_path).
  static const char* mainloop(const Conv2dProblem& p, const typename Epilogue::Params& ep) {
    if constexpr (kSwap) {
      typename Swap::Params sg{};
      if (swap_params(p, ep, sg)) return "swap";
    }
    typename PatchLoader::Params g{};
    return patch_params(p, ep, g) ? "patch" : "im2col";
  }

  static cudaError_t run(const Conv2dProblem& p, const typename Epilogue::Params& ep, void* workspace, cudaStream_t stream) {
    if (can_implement(p) != nullptr) return cudaErrorInvalidValue;
    if constexpr (kSwap) {
      typename Swap::Params sg{};
      if (swap_params(p, ep, sg)) return Swap::run(sg, stream);
    }
    if constexpr (Patch) {
      typename PatchLoader::Params g{};
      if (patch_params(p, ep, g)) return PatchGemm::run(gemm_of_patch(p), ep, workspace, stream, g);
    }
    typename Loader::Params g{};
    static_cast<sm90::ConvFpropShape&>(g) = sm90::ConvFpropShape::of(p);
    const GemmProblem gp = gemm_of(p);
    if constexpr (Im2col) {
      g.images_as_rows = images_as_rows(p) ? 1 : 0;
      g.rows = (int)gp.m;
      g.div_pq = detail::FastDiv::make(p.p * p.q);
      if (gp.m > 0 && gp.n > 0 && gp.k > 0) {
        constexpr CUtensorMapDataType dtype = detail::Sm90TmaDtype<Element>::value;
        if (!sm90::encode_im2col_x(&g.tmX, p, p.A, p.lda, p.batch_stride_a, TileM / ClusterN, int(sizeof(Element)),
                                     dtype))
          return cudaErrorInvalidValue;
        if (cudaError_t e = sm90::encode_filter_taps(&g.tmW, p, TileN / ClusterM, int(sizeof(Element)), dtype);
            e != cudaSuccess)
          return e;
      }
    } else {
      g.x = static_cast<const char*>(p.A);
      g.ld_bytes = p.lda * (int64_t)sizeof(Element);
      g.image_bytes = p.batch_stride_a * (int64_t)sizeof(Element);
      g.h = p.h;
      g.w = p.w;
      g.pq = p.p * p.q;
    }
    return Gemm::run(gp, ep, workspace, stream, g);
  }
};

// conv2d dgrad at unit stride on the Hopper path: GemmSm90 with the stage loader above (M = n*h*w or h*w per
// image, N = c, K = r*s x k rounded up to 64 channels), the epilogue's coordinates those of the sm80 dgrad
// (batch = image, m = h * w_ + w, n = c). Strides above 1 take the sm80 path (kdl::Conv2dSm80's dgrad).
// Requirements beyond the sm80 path's (can_implement names the one that fails): stride 1, the flipped
// filter's corners (dil * (filter - 1) - pad and pad) in -128 .. 127.
template <class Element, int TileM, int TileN, int Stages, Sm90Schedule Schedule, int FilterR, int FilterS, int StrideH,
          int StrideW, class Epilogue>
struct Conv2dSm90Dgrad {
  static constexpr ConvKind kKind = ConvKind::Dgrad;
  static constexpr bool kPackedFilterTaps = false;
  static_assert((StrideH == 0 || StrideH == 1) && (StrideW == 0 || StrideW == 1),
                "Conv2dSm90Dgrad: unit stride only (a strided dgrad runs Conv2dSm80)");
  using Loader = sm90::ConvDgradLoader;
  using Gemm = GemmSm90<Element, RowMajor, Element, RowMajor, float, TileM, TileN, 64, Stages, Schedule, 1, 1, false, 0,
                        sm90::NoBlockScaling, Epilogue, Loader>;
  // The sm80 path's checks; their alignment of 8 elements (16 bytes) is also what TMA needs of every
  // pointer and stride.
  using Checks = Conv2dSm80<ConvKind::Dgrad, Element, 8, 8, float, 128, 128, 32, 2, 2, 3, FilterR, FilterS, StrideH, StrideW,
                            Epilogue>;
  static_assert(sizeof(Element) == 2, "Conv2dSm90Dgrad: f16 or bf16 tensors");
  static constexpr int kThreads = Gemm::kThreads;
  static constexpr int kSmemBytes = Gemm::kSmemBytes;
  static constexpr int kMinSmemBytes = Gemm::kMinSmemBytes;

  static bool images_as_rows(const Conv2dProblem& p) { return p.images_packed != 0; }
  static int channel_blocks(const Conv2dProblem& p) { return (p.k + 63) / 64; }
  static GemmProblem gemm_of(const Conv2dProblem& p) {
    GemmProblem g{};
    g.m = images_as_rows(p) ? (int64_t)p.n * p.h * p.w : (int64_t)p.h * p.w;
    g.n = p.c;
    g.k = (int64_t)p.r * p.s * channel_blocks(p) * 64;
    g.batch = images_as_rows(p) ? 1 : p.n;
    g.A = p.A;
    g.lda = p.lda;
    g.B = p.B;
    g.ldb = p.ldb;
    g.split_k = 1;
    g.unique_bytes = conv_unique_bytes(p, int(sizeof(Element)));  // X, W, Y once (dynamic_order)
    return g;
  }
  static void corners(const Conv2dProblem& p, int (&lower)[2], int (&upper)[2]) {
    lower[0] = p.pad_w - p.dil_w * (p.s - 1);
    lower[1] = p.pad_h - p.dil_h * (p.r - 1);
    upper[0] = -p.pad_w;
    upper[1] = -p.pad_h;
  }

  static const char* can_implement(const Conv2dProblem& p) {
    static thread_local char msg[320];
    if (const char* e = Checks::can_implement(p)) return e;
    if (p.stride_h != 1 || p.stride_w != 1)
      return snprintf(msg, sizeof(msg),
                      "kdl conv sm90a dgrad: strides (%d, %d) must be 1 (a strided dgrad runs the multistage schedule)",
                      p.stride_h, p.stride_w),
             msg;
    int lower[2], upper[2];
    corners(p, lower, upper);
    if (!sm90::im2col_corners_ok(lower, upper))
      return snprintf(msg, sizeof(msg),
                      "kdl conv sm90a dgrad: padding (%d, %d) with the dilated filter (%d x %d) puts dY's im2col corners "
                      "out of TMA's range (-128 .. 127)",
                      p.pad_h, p.pad_w, p.dil_h * (p.r - 1) + 1, p.dil_w * (p.s - 1) + 1),
             msg;
    if (p.split_k != 1) return snprintf(msg, sizeof(msg), "kdl conv sm90a dgrad: split_k (%d) must be 1", p.split_k), msg;
    return Gemm::can_implement(gemm_of(p));
  }
  static size_t workspace_size(const Conv2dProblem& p) { return Gemm::workspace_size(gemm_of(p)); }

  static cudaError_t run(const Conv2dProblem& p, const typename Epilogue::Params& ep, void* workspace, cudaStream_t stream) {
    if (can_implement(p) != nullptr) return cudaErrorInvalidValue;
    typename Loader::Params g{};
    const GemmProblem gp = gemm_of(p);
    int lower[2], upper[2];
    corners(p, lower, upper);
    if (gp.m > 0 && gp.n > 0 && gp.k > 0) {
      const int unit[2] = {1, 1};
      constexpr CUtensorMapDataType dtype = detail::Sm90TmaDtype<Element>::value;
      if (!sm90::encode_im2col(&g.tmY, p.A, p.k, p.q, p.p, p.n, p.lda, p.batch_stride_a, lower, upper, unit, TileM,
                               int(sizeof(Element)), dtype))
        return cudaErrorInvalidValue;
      // 64 channels x 1 tap x 64 filters per MN-major block of the B tile.
      if (cudaError_t e = sm90::encode_filter_taps(&g.tmW, p, 64, int(sizeof(Element)), dtype); e != cudaSuccess) return e;
    }
    g.images_as_rows = images_as_rows(p) ? 1 : 0;
    g.lower_h = lower[1];
    g.lower_w = lower[0];
    g.dil_h = p.dil_h;
    g.dil_w = p.dil_w;
    g.div_taps = detail::FastDiv::make(p.r * p.s);
    g.div_s = detail::FastDiv::make(p.s);
    g.div_w = detail::FastDiv::make(p.w);
    g.div_hw = detail::FastDiv::make(p.h * p.w);
    return Gemm::run(gp, ep, workspace, stream, g);
  }
};

// conv2d wgrad on the Hopper path: dW = sum over pixels dY (x) X as GemmSm90 with the stage loader above
// (M = k, N = r*s*c, K = n*p*q; both operands MN-major), serial split-K over the pixels (the problem's
// split_k: a wgrad has few output tiles and a long K), the epilogue's coordinates those of the sm80 wgrad
// (batch 0, m = k, n = (r*s_ + s)*c + c).
// Requirements beyond the sm80 path's (can_implement names the one that fails): c a multiple of 64, dW's
// taps packed (the sm80 wgrad's too), im2col's limits (strides <= 8, corners in -128 .. 127).
template <class Element, int TileM, int TileN, int Stages, Sm90Schedule Schedule, int FilterR, int FilterS, int StrideH,
          int StrideW, class Epilogue>
struct Conv2dSm90Wgrad {
  static constexpr ConvKind kKind = ConvKind::Wgrad;
  static constexpr bool kPackedFilterTaps = true;
  using Loader = sm90::ConvWgradLoader;
  using Gemm = GemmSm90<Element, ColMajor, Element, RowMajor, float, TileM, TileN, 64, Stages, Schedule, 1, 1, false, 0,
                        sm90::NoBlockScaling, Epilogue, Loader>;
  // The sm80 path's checks; their alignment of 8 elements (16 bytes) is also what TMA needs of every
  // pointer and stride.
  using Checks = Conv2dSm80<ConvKind::Wgrad, Element, 8, 8, float, 128, 128, 32, 2, 2, 3, FilterR, FilterS, StrideH, StrideW,
                            Epilogue>;
  static_assert(sizeof(Element) == 2, "Conv2dSm90Wgrad: f16 or bf16 tensors");
  static constexpr int kThreads = Gemm::kThreads;
  static constexpr int kSmemBytes = Gemm::kSmemBytes;
  static constexpr int kMinSmemBytes = Gemm::kMinSmemBytes;

  // dY's images back to back (or one image): K runs over all n*p*q pixels without a cut at each image.
  static bool images_as_rows(const Conv2dProblem& p) {
    return p.n == 1 || p.batch_stride_a == (int64_t)p.p * p.q * p.lda;
  }
  static int64_t ktiles_per_image(const Conv2dProblem& p) { return ((int64_t)p.p * p.q + 63) / 64; }
  static GemmProblem gemm_of(const Conv2dProblem& p) {
    GemmProblem g{};
    g.m = p.k;
    g.n = (int64_t)p.r * p.s * p.c;
    g.k = images_as_rows(p) ? (int64_t)p.n * p.p * p.q : (int64_t)p.n * ktiles_per_image(p) * 64;
    g.batch = 1;
    g.A = p.A;
    g.lda = p.lda;
    g.B = p.B;
    g.ldb = p.ldb;
    g.split_k = p.split_k;
    g.unique_bytes = conv_unique_bytes(p, int(sizeof(Element)));  // X, W, Y once (split_k_for's memory term)
    return g;
  }

  static const char* can_implement(const Conv2dProblem& p) {
    static thread_local char msg[320];
    if (const char* e = Checks::can_implement(p)) return e;
    if (p.c % 64)
      return snprintf(msg, sizeof(msg),
                      "kdl conv sm90a wgrad: c (%d) must be a multiple of 64 (a tile's 64 columns are one tap's channels)", p.c),
             msg;
    if (const char* e = sm90::im2col_x_refusal(p, "kdl conv sm90a wgrad", msg, sizeof(msg))) return e;
    const GemmProblem g = gemm_of(p);
    if (g.k > 0x7fffffffLL - 64)
      return snprintf(msg, sizeof(msg), "kdl conv sm90a wgrad: n*p*q (%lld) too large for 32-bit pixel indexing",
                      (long long)g.k),
             msg;
    return Gemm::can_implement(g);
  }
  static size_t workspace_size(const Conv2dProblem& p) { return Gemm::workspace_size(gemm_of(p)); }
  // The slices (1..max_split) to run p in on the current device: the wgrad GEMM's (kdl/split_k.h).
  static int split_k_for(const Conv2dProblem& p, int max_split) {
    return Gemm::split_k_for(gemm_of(p), max_split);  // gemm_of: the convolution's bytes (unique_bytes)
  }

  static cudaError_t run(const Conv2dProblem& p, const typename Epilogue::Params& ep, void* workspace, cudaStream_t stream) {
    if (can_implement(p) != nullptr) return cudaErrorInvalidValue;
    typename Loader::Params g{};
    static_cast<sm90::ConvFpropShape&>(g) = sm90::ConvFpropShape::of(p);
    const GemmProblem gp = gemm_of(p);
    if (gp.m > 0 && gp.n > 0 && gp.k > 0) {
      const bool rows = images_as_rows(p);
      if (cudaError_t e = rows ? Gemm::TileA::encode(&g.tmY, p.A, p.lda, 0, (int64_t)p.n * p.p * p.q, p.k, 1)
                               : Gemm::TileA::encode(&g.tmY, p.A, p.lda, p.batch_stride_a, (int64_t)p.p * p.q, p.k, p.n);
          e != cudaSuccess)
        return e;
      if (!sm90::encode_im2col_x(&g.tmX, p, p.B, p.ldb, p.batch_stride_b, 64, int(sizeof(Element)),
                                 detail::Sm90TmaDtype<Element>::value))
        return cudaErrorInvalidValue;
      g.images_as_rows = rows ? 1 : 0;
    }
    g.div_c = detail::FastDiv::make(p.c);
    g.div_pq = detail::FastDiv::make(p.p * p.q);
    g.div_ktiles_per_image = detail::FastDiv::make((int)ktiles_per_image(p));
    return Gemm::run(gp, ep, workspace, stream, g);
  }
};

}  // namespace kdl
