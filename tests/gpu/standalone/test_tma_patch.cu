// Standalone probe (docs/perf-notes.md v46): the hardware facts of a conv mainloop whose X operand is an
// images-innermost pixel patch -- one TMA load per channel block instead of one im2col load per tap.
//
// The patch holds, for a block of output pixels, their input pixels with the filter's halo, each pixel
// as G images x 64 channels (G = 8 or 16): shared-memory layout [h][w][image][channel], one image's 64
// channels per 128-byte row, 128B-swizzled. A pixel is then G / 8 whole 1024-byte swizzle atoms, so the
// A operand of one tap (r, s) for 64 output rows (64 / G pixels along a row x G images) is an ordinary
// K-major SW128 tile that starts (row * PW + s) * G / 8 atoms into the patch: no descriptor tricks, and
// any padding. A stride u along w puts the 8-row groups u atoms apart (SBO = u * 1024; G = 8 only: with
// G = 16 a pixel's two atoms are adjacent and the next pixel's are not). What the probe checks, on the
// GPU, against a CPU reference in double:
//   1. cuTensorMapEncodeTiled takes the X tensor (N, H, W, C) described in the order (C, N, W, H): global
//      strides not increasing with the dimension (N's stride is the largest), box (64, G, PW, PH);
//      the load lands in the layout above, with zeros where the box leaves the tensor (the halo at the
//      borders, images past N) -- checked byte for byte after un-swizzling;
//   2. wgmma m64n64k16 reads each tap's A at its atom offset: a full 3 x 3 convolution (pad 1,
//      2 channel blocks, 9 taps each) accumulated over both m64 blocks of a 128-row tile, at stride 1
//      (G = 8 and 16) and stride 2 (G = 8: SBO 2048);
//   3. the D tile goes back through a TMA store with the same kind of map (F, N, Q, P): rows in the
//      tile's order [p][q][image], clipped at Q and N -- every output of the block right, and every other
//      element of Y untouched (poisoned with NaN before).
// Blocks at the top-left corner, in the interior and at the bottom-right (images past N, the halo past H
// and W). Exit 0 only when every check of every geometry passes.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I include -I tests/gpu/standalone \
//     tests/gpu/standalone/test_tma_patch.cu -lcuda
#include "kdl/ptx_sm90.cuh"
#include "kdl/runtime.h"
#include "kdl/wgmma_sm90.cuh"

#include <cuda/ptx>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "common.cuh"  // CK

namespace sm90 = kdl::sm90;
using bf16 = __nv_bfloat16;

constexpr int kN = 12, kH = 5, kW = 11, kC = 128, kF = 64;  // X is N x H x W x C, W is F x 3 x 3 x C, pad 1
constexpr int kR = 3, kS = 3, kCB = kC / 64;
constexpr int kTileRows = 2;  // output rows per 128-row tile: one per m64 block

struct Geo {
  int G;       // images per pixel slot
  int U;       // stride (both dimensions)
  int PX;      // output pixels of a block row (64 / G)
  int PW, PH;  // the patch's input pixels: (PX - 1) * U + S wide, (rows - 1) * U + R high
  int P, Q;    // the output
  int patch_bytes;
};
__host__ __device__ constexpr Geo geo(int G, int U) {
  return {G,
          U,
          64 / G,
          (64 / G - 1) * U + kS,
          (kTileRows - 1) * U + kR,
          (kH + 2 - kR) / U + 1,
          (kW + 2 - kS) / U + 1,
          ((64 / G - 1) * U + kS) * ((kTileRows - 1) * U + kR) * G * 128};
}

template <int G, int U>
__global__ void __launch_bounds__(128, 1)
    patch_kernel(const __grid_constant__ CUtensorMap xmap, const __grid_constant__ CUtensorMap ymap, const bf16* Wt,
                 unsigned char* patch_dump, int n0, int p0, int q0) {
  constexpr Geo g = geo(G, U);
  static_assert(U == 1 || G == 8, "a stride keeps the 8-row groups evenly spaced only with one atom per pixel");
  extern __shared__ __align__(1024) unsigned char smem[];
  unsigned char* sX = smem;                                 // kCB patches
  unsigned char* sB = smem + kCB * g.patch_bytes;           // one 64 x 64 B tile (filters x channels)
  float* sD = reinterpret_cast<float*>(sB + kF * 128);      // 128 x 64 f32, rows [p][q][image]
  __shared__ __align__(8) uint64_t bar;
  const int t = threadIdx.x;
  if (t == 0) {
    sm90::mbarrier_init(&bar, 1);
    sm90::fence_mbarrier_init();
  }
  __syncthreads();
  if (t == 0) {
    sm90::mbarrier_arrive_expect_tx(&bar, kCB * g.patch_bytes);
    for (int cb = 0; cb < kCB; ++cb) {
      const int32_t coords[4] = {cb * 64, n0, q0 * U - 1, p0 * U - 1};  // the block's first input pixel (pad 1)
      cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, sX + cb * g.patch_bytes,
                                      &xmap, coords, &bar);
    }
  }
  sm90::mbarrier_wait(&bar, 0);
  for (int i = t; i < kCB * g.patch_bytes; i += 128) patch_dump[i] = sX[i];

  for (int b = 0; b < kTileRows; ++b) {
    float d[kF / 2];
#pragma unroll
    for (int i = 0; i < kF / 2; ++i) d[i] = 0.f;
    for (int cb = 0; cb < kCB; ++cb)
      for (int r = 0; r < kR; ++r)
        for (int s = 0; s < kS; ++s) {
          __syncthreads();  // the previous tap's wgmmas have finished reading sB
          for (int i = t; i < kF * 64; i += 128) {
            const int f = i / 64, c = i % 64;
            *reinterpret_cast<bf16*>(sB + sm90::sw128_byte_offset(f, c * 2, kF)) =
                Wt[((f * kR + r) * kS + s) * kC + cb * 64 + c];
          }
          sm90::fence_proxy_async_shared();
          __syncthreads();
          // The tap's A: output row p0 + b reads patch row b * U + r; pixel x of the block reads patch pixel
          // x * U + s, so its 8-row groups are U * G / 8 atoms apart (one atom: G = 8; G = 16 is only run at U = 1,
          // where a pixel's two atoms follow each other).
          const uint32_t start =
              sm90::smem_addr(sX + cb * g.patch_bytes) + uint32_t(((b * U + r) * g.PW + s) * G * 128);
          const uint32_t b_addr = sm90::smem_addr(sB);
          sm90::warpgroup_fence_acc(d);
          sm90::wgmma_fence();
#pragma unroll
          for (int ks = 0; ks < 4; ++ks) {
            const sm90::SmemDesc da = sm90::make_smem_desc(start + ks * 32, 16, 1024 * U);
            const sm90::SmemDesc db = sm90::make_desc_kmajor_sw128<bf16>(b_addr, kF, ks);
            sm90::wgmma_ss<kF, bf16, 0, 0>(d, da, db, true);
          }
          sm90::wgmma_commit_group();
          sm90::wgmma_wait_group<0>();
          sm90::warpgroup_fence_acc(d);
        }
#pragma unroll
    for (int i = 0; i < kF / 2; ++i) {
      const sm90::AccCoord c = sm90::acc_coord(t, i);
      sD[(b * 64 + c.row) * kF + c.col] = d[i];  // row c.row = (pixel, image) in the patch's order
    }
  }
  sm90::fence_proxy_async_shared();
  __syncthreads();
  if (t == 0) {
    const int32_t coords[4] = {0, n0, q0, p0};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, &ymap, coords, sD);
    sm90::tma_store_commit();
    sm90::tma_store_wait<0>();
  }
}

static const char* cu_err(CUresult r) {
  const char* s = nullptr;
  if (kdl::driver_api().cuGetErrorString) kdl::driver_api().cuGetErrorString(r, &s);
  return s ? s : "?";
}

template <int G, int U>
static int run_geometry(const std::vector<bf16>& hX, const std::vector<bf16>& hW, const bf16* dX, const bf16* dW) {
  constexpr Geo g = geo(G, U);
  const auto& api = kdl::driver_api();
  int fails = 0;
  // X as (C, N, W, H): element (c, n, w, h) at n * H*W*C + h * W*C + w * C + c -- strides not increasing.
  CUtensorMap xmap, ymap;
  {
    const cuuint64_t dims[4] = {kC, kN, kW, kH};
    const cuuint64_t strides[3] = {uint64_t(kH) * kW * kC * 2, uint64_t(kC) * 2, uint64_t(kW) * kC * 2};
    const cuuint32_t box[4] = {64, cuuint32_t(G), cuuint32_t(g.PW), cuuint32_t(g.PH)};
    const cuuint32_t estr[4] = {1, 1, 1, 1};
    const CUresult r = api.cuTensorMapEncodeTiled(&xmap, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<bf16*>(dX), dims,
                                                  strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                  CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    printf("%s G=%d U=%d: cuTensorMapEncodeTiled(X as (C, N, W, H), box (64, %d, %d, %d)) = %d (%s)\n",
           r == CUDA_SUCCESS ? "PASS" : "FAIL", G, U, G, g.PW, g.PH, int(r), cu_err(r));
    if (r != CUDA_SUCCESS) return 1;
  }
  float* dY;
  const size_t ycount = size_t(kN) * g.P * g.Q * kF;
  CK(cudaMalloc(&dY, ycount * 4));
  {
    const cuuint64_t dims[4] = {kF, kN, cuuint64_t(g.Q), cuuint64_t(g.P)};
    const cuuint64_t strides[3] = {uint64_t(g.P) * g.Q * kF * 4, uint64_t(kF) * 4, uint64_t(g.Q) * kF * 4};
    const cuuint32_t box[4] = {kF, cuuint32_t(G), cuuint32_t(g.PX), kTileRows};
    const cuuint32_t estr[4] = {1, 1, 1, 1};
    const CUresult r = api.cuTensorMapEncodeTiled(&ymap, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, dY, dims, strides, box,
                                                  estr, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                                  CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    printf("%s G=%d U=%d: cuTensorMapEncodeTiled(Y as (F, N, Q, P), box (%d, %d, %d, %d)) = %d (%s)\n",
           r == CUDA_SUCCESS ? "PASS" : "FAIL", G, U, kF, G, g.PX, kTileRows, int(r), cu_err(r));
    if (r != CUDA_SUCCESS) return 1;
  }
  unsigned char* dDump;
  CK(cudaMalloc(&dDump, kCB * g.patch_bytes));
  const int smem = kCB * g.patch_bytes + kF * 128 + 128 * kF * 4;
  CK(cudaFuncSetAttribute(patch_kernel<G, U>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  auto x_at = [&](int n, int h, int w, int c) -> double {
    if (n < 0 || n >= kN || h < 0 || h >= kH || w < 0 || w >= kW) return 0.0;
    return double(__bfloat162float(hX[((size_t(n) * kH + h) * kW + w) * kC + c]));
  };
  // Blocks: top-left (the halo before row and column 0), interior, bottom-right (images past N, the
  // halo and the pixels past H and W).
  const int blocks[3][3] = {{0, 0, 0},
                            {0, 1, g.Q > g.PX ? g.PX : 1},
                            {(kN - 1) / G * G, g.P - 1, g.Q - 3}};
  for (const auto& blk : blocks) {
    const int n0 = blk[0], p0 = blk[1], q0 = blk[2];
    std::vector<uint32_t> poison(ycount, 0x7fc00000u);
    CK(cudaMemcpy(dY, poison.data(), ycount * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(dDump, 0xAB, kCB * g.patch_bytes));
    patch_kernel<G, U><<<1, 128, smem>>>(xmap, ymap, dW, dDump, n0, p0, q0);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    // 1. The patch, byte for byte.
    std::vector<unsigned char> dump(kCB * g.patch_bytes);
    CK(cudaMemcpy(dump.data(), dDump, dump.size(), cudaMemcpyDeviceToHost));
    int bad_patch = 0;
    for (int cb = 0; cb < kCB; ++cb)
      for (int h = 0; h < g.PH; ++h)
        for (int w = 0; w < g.PW; ++w)
          for (int n = 0; n < G; ++n)
            for (int c = 0; c < 64; ++c) {
              const int row = (h * g.PW + w) * G + n;  // the 128-byte row of (h, w, n)
              const size_t at = size_t(cb) * g.patch_bytes + size_t(row) * 128 + (((c * 2) / 16) ^ (row % 8)) * 16 +
                                (c * 2) % 16;
              bf16 got;
              std::memcpy(&got, &dump[at], 2);
              const double want = x_at(n0 + n, p0 * U - 1 + h, q0 * U - 1 + w, cb * 64 + c);
              if (double(__bfloat162float(got)) != want) ++bad_patch;
            }
    // 2 and 3. The convolution, through the TMA store.
    std::vector<float> hY(ycount);
    CK(cudaMemcpy(hY.data(), dY, ycount * 4, cudaMemcpyDeviceToHost));
    int bad_out = 0, written = 0, stray = 0;
    double worst = 0;
    for (int n = 0; n < kN; ++n)
      for (int p = 0; p < g.P; ++p)
        for (int q = 0; q < g.Q; ++q)
          for (int f = 0; f < kF; ++f) {
            const float got = hY[((size_t(n) * g.P + p) * g.Q + q) * kF + f];
            const bool in_block = n >= n0 && n < n0 + G && p >= p0 && p < p0 + kTileRows && q >= q0 && q < q0 + g.PX;
            if (!in_block) {
              stray += !std::isnan(got);
              continue;
            }
            ++written;
            double ref = 0, mag = 0;
            for (int r = 0; r < kR; ++r)
              for (int s = 0; s < kS; ++s)
                for (int c = 0; c < kC; ++c) {
                  const double pr = x_at(n, p * U - 1 + r, q * U - 1 + s, c) *
                                    double(__bfloat162float(hW[((size_t(f) * kR + r) * kS + s) * kC + c]));
                  ref += pr;
                  mag += std::fabs(pr);
                }
            const double e = std::fabs(double(got) - ref);
            if (!std::isfinite(got) || e > 1e-5 * mag + 1e-6) ++bad_out;
            if (mag > 0 && e / mag > worst) worst = e / mag;
          }
    const bool ok = bad_patch == 0 && bad_out == 0 && stray == 0 && written > 0;
    printf("%s G=%d U=%d block (n0 %d, p0 %d, q0 %d): patch %d bad elements; outputs %d written, %d wrong, max |err| / "
           "sum|x*w| %.1e; %d elements outside the block written\n",
           ok ? "PASS" : "FAIL", G, U, n0, p0, q0, bad_patch, written, bad_out, worst, stray);
    fails += !ok;
  }
  CK(cudaFree(dY));
  CK(cudaFree(dDump));
  return fails;
}

int main() {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<bf16> hX(size_t(kN) * kH * kW * kC), hW(size_t(kF) * kR * kS * kC);
  for (auto& v : hX) v = __float2bfloat16(u(rng));
  for (auto& v : hW) v = __float2bfloat16(u(rng));
  bf16 *dX, *dW;
  CK(cudaMalloc(&dX, hX.size() * 2));
  CK(cudaMalloc(&dW, hW.size() * 2));
  CK(cudaMemcpy(dX, hX.data(), hX.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dW, hW.data(), hW.size() * 2, cudaMemcpyHostToDevice));
  if (!kdl::driver_api().cuTensorMapEncodeTiled) {
    printf("FAIL: cuTensorMapEncodeTiled not found\n");
    return 1;
  }
  const int fails =
      run_geometry<8, 1>(hX, hW, dX, dW) + run_geometry<16, 1>(hX, hW, dX, dW) + run_geometry<8, 2>(hX, hW, dX, dW);
  printf("%s: %d failed checks (images-innermost patch: TMA layout, taps by atom offset, D through a permuted map)\n",
         fails ? "FAIL" : "PASS", fails);
  return fails ? 1 : 0;
}
