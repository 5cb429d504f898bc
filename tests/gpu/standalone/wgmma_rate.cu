// wgmma_rate: SM cycles per k-tile of the sm90a consumer loops, in isolation (docs/perf-notes.md v52). Every CTA
// (one per SM) runs one consumer loop as GemmSm90 does -- per k-tile one wgmma.fence, the 4 k-steps of its wgmmas,
// one commit, wgmma.wait_group 1 -- and reports clock64 cycles per k-tile against the tensor pipe's ideal (2048
// bf16 multiply-adds per SM and cycle: a pingpong 128 x 128 k-tile of 8 m64n128k16 is 512 cycles).
//   Part 1, operands resident in shared memory (no loads): the four consumer shapes, with the operands the same
//           every k-tile or cycling through stages, and A's start moved by a conv tap's offset every k-tile.
//   Part 2, the pingpong 128 x 128 patch mainloop's loads as the conv kernel issues them (tensor TMA with the
//           128-byte swizzle, a 6-stage ring, a producer thread, full / empty mbarriers): per k-tile W's box
//           {64 channels, 1 tap, 128 filters} of a {c, r*s, k} map (N32 C256 56x56 K256's W), per channel block X's
//           patch {64 channels, 8 images, 10 pixels, 4 rows} of an {c, n, w, h} map (its X, 51 MB) into one of two
//           slots; the wgmmas read B from the stage and A from one of several places (the variants).
//   Part 3 (KDL_RATE_C32=1), the half-block patch (docs/perf-notes.md v58): 32-channel patch blocks, 64-byte swizzled,
//           read as two half-taps per k-tile, against the kernel's 64-channel patch, at several ring depths and slot
//           counts (c32_kernel).
//   Part 4 (KDL_RATE_SWAP=1), the operands' roles swapped on 64-filter x 256-pixel units (docs/perf-notes.md v59): A
//           W's 64 filters, B two n128 (or n112) windows of a pixel-major patch, the same A for both (swap_kernel).
//   Part 5 (KDL_RATE_SWAP16=1), part 4's unit with the kernel's patch order at G = 16 images per pixel (v60): each
//           window 16 contiguous atoms, 56-wide images tiled exactly (swap_kernel<..., G16 = true>;
//           conv_swap_proto.cu builds it into a whole kernel).
// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I include -I tests/gpu/standalone \
//        tests/gpu/standalone/wgmma_rate.cu -o wgmma_rate (tests/gpu/standalone/run_wgmma.sh builds and runs it).
// KDL_RATE_WIDE16=1: part 2's kernel figure and the 1 x 16 x 8 tile's patch variants only (kWide16, kSwapN128: the
// operands' roles swapped with one n128 B window; docs/perf-notes.md v55), three times.
// No reference results: a probe.
// Two traps it was written around: a 64-bit modulo in the producer's loop made the producer the limit (~600 cycles
// per k-tile), and a run-time loop count let ptxas serialize the wgmmas (C7514): the loop counts are constants.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <vector>

#include "kdl/ptx_sm90.cuh"
#include "kdl/runtime.h"
#include "kdl/wgmma_sm90.cuh"

#include "common.cuh"  // CK
#include "tma_map.cuh"  // encode_map

using namespace kdl::sm90;
using bf16 = __nv_bfloat16;

namespace {

constexpr int kTiles = 4096;  // k-tiles per consumer in part 1

__device__ __forceinline__ uint8_t* aligned_smem(uint8_t* raw) {
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
}
__device__ __forceinline__ bf16 small_value(uint32_t i) {  // 6-bit values: no infinities, no NaN
  const uint32_t h = i * 2654435761u;
  return __float2bfloat16(float(int(h >> 20 & 63) - 32) / 64.f);
}

// A k-tile's wgmmas are issued between these two: ktile_begin fences the accumulators and orders the operands'
// shared-memory writes before the wgmmas; ktile_wait commits the k-tile's group and waits for the one before it
// (wgmma.wait_group 1), as GemmSm90's consumer does.
__device__ __forceinline__ void ktile_begin(float (&acc)[2][64]) {
  warpgroup_fence_acc(acc[0]);
  warpgroup_fence_acc(acc[1]);
  wgmma_fence();
}
__device__ __forceinline__ void ktile_wait(float (&acc)[2][64]) {
  wgmma_commit_group();
  warpgroup_fence_acc(acc[0]);
  warpgroup_fence_acc(acc[1]);
  wgmma_wait_group<1>();
}

// One k-tile of a consumer: two m64n128k16 per k-step (a 128 x 128 tile: Wide false) or one m64n256k16 (a 64 x 256
// tile: Wide true), A K-major at a_base (a second m64 block a_block bytes further), B K-major at b_base.
// a_sbo: the bytes from one 8-row atom of A to the next (1024: the rows contiguous); BSbo the same for B (not Wide).
template <bool Wide, uint32_t BSbo = 1024>
__device__ __forceinline__ void ktile(float (&acc)[2][64], uint32_t a_base, uint32_t a_block, uint32_t b_base,
                                      uint32_t a_sbo = 1024) {
  ktile_begin(acc);
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    if constexpr (Wide) {
      wgmma_ss<256, bf16>(*reinterpret_cast<float(*)[128]>(&acc[0][0]), make_desc_kmajor_sw128<bf16>(a_base, 64, ks),
                          make_desc_kmajor_sw128<bf16>(b_base, 256, ks), true);
    } else {
#pragma unroll
      for (int i = 0; i < 2; ++i)
        if constexpr (BSbo == 1024)
          wgmma_ss<128, bf16>(acc[i], make_smem_desc(a_base + i * a_block + ks * kWgmmaKBytes, 16, a_sbo),
                              make_desc_kmajor_sw128<bf16>(b_base, 128, ks), true);
        else  // B's atoms BSbo bytes apart (kSwapN128: the tap's window of the 1 x 16 x 8 patch)
          wgmma_ss<128, bf16>(acc[i], make_smem_desc(a_base + i * a_block + ks * kWgmmaKBytes, 16, a_sbo),
                              make_smem_desc(b_base + ks * kWgmmaKBytes, 16, BSbo), true);
    }
  }
  ktile_wait(acc);
}

// (kdl/wgmma_sm90.cuh has the shared-memory form only: A from registers measured slower here, so its one instruction
// stays in the probe. The ldmatrix and the swizzle below are kdl::ldmatrix_x4 and sw128_byte_offset written out:
// calling those moved the RS figures by 0.3-1 % -- this loop's rate depends on its instruction schedule; perf-notes v53.)
// wgmma m64n128k16 bf16 with A from registers (the mma.sync A fragment of the warp's 16 rows: a[0] rows 0-7 k 0-7,
// a[1] rows 8-15 k 0-7, a[2] rows 0-7 k 8-15, a[3] rows 8-15 k 8-15), B K-major from shared memory.
__device__ __forceinline__ void wgmma_rs128(float (&d)[64], const uint32_t (&a)[4], uint64_t desc_b) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// A k-tile of the pingpong 128 x 128 consumer with A from registers: each warp ldmatrix's its 16 rows of both m64
// blocks (a_base, a_base + a_block; K-major, 128-byte swizzle, starting on an atom) for the 4 k-steps, then the 8
// wgmmas read them.
__device__ __forceinline__ void ktile_rs(float (&acc)[2][64], uint32_t a_base, uint32_t a_block, uint32_t b_base) {
  const int lane = threadIdx.x % 32, row = (threadIdx.x / 32) % 4 * 16 + lane % 16;
  uint32_t a[2][4][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      ldmatrix_x4(a[i][ks], a_base + i * a_block + row * 128 + (((ks * 2 + lane / 16) ^ (row % 8)) * 16));
  ktile_begin(acc);
#pragma unroll
  for (int ks = 0; ks < 4; ++ks)
#pragma unroll
    for (int i = 0; i < 2; ++i) wgmma_rs128(acc[i], a[i][ks], make_desc_kmajor_sw128<bf16>(b_base, 128, ks).bits);
  ktile_wait(acc);
}

// A k-tile of the 128 x 128 tile as four m64n64k16 per k-step: D[i][j] += A block i (64 rows at a_base + i * a_block)
// x B block j (64 rows at b_base + j * b_block). With A the W stage and B the tap's windows this is the conv with its
// operands' roles swapped (D transposed: filters x pixels), the patch read as B.
__device__ __forceinline__ void ktile_n64(float (&acc)[2][64], uint32_t a_base, uint32_t a_block, uint32_t b_base,
                                          uint32_t b_block) {
  float(&d)[4][32] = *reinterpret_cast<float(*)[4][32]>(&acc[0][0]);
  ktile_begin(acc);
#pragma unroll
  for (int ks = 0; ks < 4; ++ks)
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j)
        wgmma_ss<64, bf16>(d[i * 2 + j], make_desc_kmajor_sw128<bf16>(a_base + i * a_block, 64, ks),
                           make_desc_kmajor_sw128<bf16>(b_base + j * b_block, 64, ks), true);
  ktile_wait(acc);
}

// Launches `launch` twice (the first warms up) and prints the second's mean cycles per k-tile over the CTAs (CTA b's
// count at cycles[b * stride]) against `ideal`.
template <class Launch>
void report(const char* name, int sms, int stride, int ktiles, double ideal, long long* dc, Launch launch) {
  double per = 0;
  for (int rep = 0; rep < 2; ++rep) {
    launch();
    CK(cudaDeviceSynchronize());
    std::vector<long long> c(size_t(sms) * stride);
    CK(cudaMemcpy(c.data(), dc, c.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    double sum = 0;
    for (int b = 0; b < sms; ++b) sum += double(c[size_t(b) * stride]);
    per = sum / sms / ktiles;
  }
  printf("  %-46s %7.1f cycles per k-tile (ideal %6.1f): %5.1f %%\n", name, per, ideal, 100.0 * ideal / per);
}

__device__ __forceinline__ void finish(float (&acc)[2][64], float* sink) {
  wgmma_wait_group<0>();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int r = 0; r < 64; ++r) s += acc[i][r];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// A consumer loop's end: finish, then thread 0 stores the CTA's cycles since t0.
__device__ __forceinline__ void finish(float (&acc)[2][64], float* sink, long long* cycles, long long t0) {
  finish(acc, sink);
  const long long t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

// A loaded k-tile's end (parts 3-4, whose k-tiles issue their own wgmmas): commit, wait for the k-tile before, and
// release that k-tile's stage (one arrival per warp).
__device__ __forceinline__ void ktile_end(float (&acc)[2][64], uint64_t* empty, int& prev, int s) {
  ktile_wait(acc);
  if (prev >= 0 && threadIdx.x % 32 == 0) mbarrier_arrive(&empty[prev]);
  prev = s;
}

// The ring's full barriers (one producer arrival plus the bytes) and empty barriers (`arrivals`: one per consumer
// warp), initialized by thread 0 before the block's threads split into producer and consumers.
__device__ __forceinline__ void init_ring(uint64_t* full, uint64_t* empty, int stages, int arrivals) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], arrivals);
    }
    fence_mbarrier_init();
  }
  __syncthreads();
}

// Parts 2-4's launcher: one CTA per SM of `threads` threads with `smem` bytes, kernel(maps..., cycles, sink), reported
// per k-tile against `ideal`.
template <class Kernel, class... Maps>
void run_loaded(const char* name, int sms, int ktiles, double ideal, int threads, int smem, Kernel kernel,
                const Maps&... maps) {
  long long* dc;
  float* ds;
  CK(cudaMalloc(&dc, sms * sizeof(long long)));
  CK(cudaMalloc(&ds, sms * 384 * sizeof(float)));
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  report(name, sms, 1, ktiles, ideal, dc, [&] { kernel<<<sms, threads, smem>>>(maps..., dc, ds); });
  CK(cudaFree(dc));
  CK(cudaFree(ds));
}

// ---- part 1 ----
// Shape 0: pingpong 128 x 128 (one warpgroup; a stage: A 16 KB, B 16 KB); 1: cooperative 128 x 256 (two warpgroups,
// m64n256 each; A 16 KB, B 32 KB); 2: cooperative 256 x 128, cuDNN's tile (two warpgroups, two m64n128 each; A 32 KB,
// B 16 KB); 3: pingpong 64 x 256 (one warpgroup, m64n256; A 8 KB, B 32 KB). Stages > 1: A and B cycle through them.
// TapA: A's start moves by a 3 x 3 patch tap's offset, (10 r + s) KB, from k-tile to k-tile.
template <int Shape, int Stages, bool TapA>
__global__ void __launch_bounds__(256, 1) resident_kernel(long long* cycles, float* sink) {
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = aligned_smem(smem_raw);
  constexpr int kA = Shape == 2 ? 32768 : Shape == 3 ? 8192 : 16384;
  constexpr int kB = Shape == 0 || Shape == 2 ? 16384 : 32768;
  constexpr int kStage = kA + kB + (TapA ? 24576 : 0);
  constexpr bool kTwo = Shape == 1 || Shape == 2, kWide = Shape == 1 || Shape == 3;
  for (int i = threadIdx.x; i < Stages * kStage / 2; i += blockDim.x) reinterpret_cast<bf16*>(smem)[i] = small_value(i);
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (!kTwo && wg > 0) return;
  float acc[2][64] = {};
  const uint32_t base = smem_addr(smem);
  const long long t0 = clock64();
  int st = 0;
  for (int t = 0; t < kTiles; ++t) {
    const int tap = t % 9;
    const uint32_t a_off = TapA ? uint32_t((tap / 3) * 10 + tap % 3) * 1024u : 0u;
    ktile<kWide>(acc, base + st * kStage + (kTwo ? wg * (kA / 2) : 0) + a_off, 8192,
                 base + st * kStage + kA + (TapA ? 24576 : 0));
    st = st + 1 == Stages ? 0 : st + 1;
  }
  finish(acc, sink);
  const long long t1 = clock64();
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * 2 + wg] = t1 - t0;
}

template <int Shape, int Stages, bool TapA>
void run_resident(const char* name, int sms) {
  constexpr int kA = Shape == 2 ? 32768 : Shape == 3 ? 8192 : 16384;
  constexpr int kB = Shape == 0 || Shape == 2 ? 16384 : 32768;
  const int smem = 1024 + Stages * (kA + kB + (TapA ? 24576 : 0));
  long long* dc;
  float* ds;
  CK(cudaMalloc(&dc, sms * 2 * sizeof(long long)));
  CK(cudaMalloc(&ds, sms * 256 * sizeof(float)));
  CK(cudaFuncSetAttribute(resident_kernel<Shape, Stages, TapA>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  report(name, sms, 2, kTiles, Shape == 1 || Shape == 2 ? 1024.0 : 512.0, dc,
         [&] { resident_kernel<Shape, Stages, TapA><<<sms, 256, smem>>>(dc, ds); });
  CK(cudaFree(dc));
  CK(cudaFree(ds));
}

// ---- part 2 ----
// A: 0 a fixed region (the same addresses every k-tile); 1 the fixed region moved by the tap's s KB (0, 1, 2);
// 2 the patch slot at its start (the same for a channel block's 9 k-tiles); 3 the tap's window of the patch, as the
// conv kernel reads it ((10 r + s) KB into the slot, the second m64 block a patch row, 10 KB, further); 4 the stage:
// 128 rows x 64 channels of X loaded with W every k-tile by a 2-D box (the im2col mainloop's kind of A); 5 the tap's
// window as 3, read by each warp with ldmatrix into registers and fed to wgmma with A from registers (RS; three
// warpgroups and setmaxnreg, as the conv kernel, for the in-flight fragments' registers). Patch false:
// no patch loads (A then reads the slots' region as it is). KT: k-tiles per CTA (a constant, see the top).
// Coop: the cooperative 128 x 256 tile instead (two consumer warpgroups, one m64n256k16 each per k-step, W's box of
// 256 filters: 32 KB stages, 4 of them, no fixed region; ideal 1024 cycles per k-tile).
// The variants of part 2 beyond A's source (one at a time).
enum Variant : int {
  kPlain = 0,
  kXLikeFixed = 1,      // the fixed region holds full-mantissa values in [-1, 1) (X's kind) instead of 6-bit ones
  kSlotsFirst = 2,      // the slots first in shared memory, then the fixed region, then the ring
  kSlotsByThreads = 3,  // the slots written by the threads (6-bit values) before the loop, as the fixed region is
  kSplitN = 5,          // Coop: the tile split along N (each warpgroup both m64 blocks, its 128 filters)
  kTapsSMajor = 6,      // the taps in s-major order (0, 10, 20, 1, 11, ... KB)
  kTapsSnake = 7,       // the taps in snake order (0, 1, 2, 12, 11, 10, 20, 21, 22 KB)
  kROnly = 8,           // A moves by the tap's row only (10 r KB)
  kSOnly = 9,           // A moves by the tap's column only (s KB)
  kOneSlot = 10,        // one patch slot for every channel block (A's footprint one slot's 40 KB)
  kRowRing = 11,        // the patch as a ring of 5 rows of 10 KB (50 KB): channel block b's row j in ring row
                        // (4 b + j) % 5, rows 0-1 loaded with the block's k-tile 0, row 2 with 3, row 3 with 6
                        // (mxa: X's map with a one-row box)
  kSwapAB = 12,         // the roles swapped: A the W stage (two m64 filter blocks), B the tap's window (two n64
                        // pixel blocks), four m64n64k16 per k-step (ktile_n64)
  kN64 = 13,            // the kernel's roles (A the tap's window, B the stage) in the same four m64n64k16
  kPxMajor = 14,        // the patch laid out pixel-major ({c, n, h, w}: a pixel column of 4 rows x 8 images is
                        // 4 KB): tap (r, s)'s window at (4 s + r) KB, its 8 atoms 4 KB apart (the descriptor's
                        // stride), the second m64 block 1 KB further (mxa: X's map in that order)
  kPxMajorS = 15,       // kPxMajor with the taps in s-major order (consecutive taps 1 KB apart)
  kOneSlotStart = 16,   // A at slot 0's start for every k-tile (a fixed A inside the slots' region)
  kOneSlotS = 17,       // A at slot 0's start + s KB (as the fixed region + s KB, inside the slots' region)
  kWide16 = 18,         // a tile of 1 row x 16 columns x 8 images, its patch (3 rows x 18 columns x 8 images, 54 KB)
                        // pixel-major ({c, n, h, w}: atom (h, w) of 8 images at (3 w + h) KB): tap (r, s)'s window
                        // 16 atoms 3 KB apart from (3 s + r) KB, the kernel's roles (A the window: two m64 blocks
                        // 24 KB apart, B the stage); no fixed region (mxa: X's map with that box)
  kSwapN128 = 19,       // kWide16's patch with the roles swapped: A the W stage's two m64 filter blocks, B the tap's
                        // window as one n128 operand (its 16 atoms 3 KB apart): D transposed (filters x pixels)
  kOneSlotRows = 20,    // one patch slot, race-free: row j of a channel block's patch (10 KB, at j x 10 KB) reloaded
                        // for the next block once the k-tile that last read it has released its stage (row 1 at tap
                        // 5, rows 2-3 at tap 8), with the full barrier of the k-tile that first reads it (rows 0-1
                        // at tap 0, row 2 at tap 3, row 3 at tap 6; mxa: X's map with a one-row box)
  kOneSlotRows0 = 21,   // kOneSlotRows with row 0 of the next block loaded on tap 8's barrier (its last reader, tap 2,
                        // proven released by that k-tile's stage wait): only row 1 waits at tap 0
  kOneSlotRowsRacy = 22,  // kOneSlotRows' loads without its waits (racy data, timing only): what the waits cost
  kPairRing = 23,       // three row pairs of 20 KB (60 KB): channel block g's rows 0-1 in pair (-g) % 3, rows 2-3 in the
                        // pair after it, so that every reload lands where the patch two back (rows 0-1) or one back
                        // (rows 0-1, last read at its tap 5) has finished: rows 0-1 with tap 0, row 2 with tap 3, row 3
                        // with tap 6, each at the producer's own lead, no waits of its own; 27 places for A
  kSlotGap64 = 24,      // the kernel's two slots, slot 1 64 KB after slot 0 instead of 40 KB (no fixed region)
  kSlotGap48 = 25,      // the same, 48 KB apart
  kSlotGap32 = 26,      // the same, 32 KB apart: the slots overlap by 8 KB (racy data, timing only)
  kSlotGap40 = 27,      // the kernel's two slots 40 KB apart, no fixed region (the kSlotGap variants' control)
  kSlotGap80 = 28,      // the same, 80 KB apart
  kSlotGap56 = 29,      // the same, 56 KB apart
  kStages4 = 30,        // the kernel's mainloop with 4 stages instead of 6
  kStages5 = 31,        // the same, 5 stages
};
// The kSlotGap variants' distance from slot 0 to slot 1 (no fixed region in their layout); 0 for every other variant
__host__ __device__ constexpr int slot_gap_of(int var) {
  return var == kSlotGap64 ? 65536 : var == kSlotGap48 ? 49152 : var == kSlotGap32 ? 32768
         : var == kSlotGap40 ? 40960 : var == kSlotGap80 ? 81920 : var == kSlotGap56 ? 57344 : 0;
}
// The distance from slot 0 to slot 1: the slot size but for the kSlotGap variants
__host__ __device__ constexpr int slot_gap(int var, int slot) { return slot_gap_of(var) ? slot_gap_of(var) : slot; }
// kPairRing: the byte offset of channel block g's patch row j (this CTA's g-th block)
__host__ __device__ constexpr uint32_t pair_row(int g, int j) {
  return uint32_t(((3 - g % 3) % 3 + (j >= 2 ? 1 : 0)) % 3) * 20480u + uint32_t(j & 1) * 10240u;
}
__host__ __device__ constexpr bool one_slot_rows(int var) {
  return var == kOneSlotRows || var == kOneSlotRows0 || var == kOneSlotRowsRacy;
}
__host__ __device__ constexpr bool wide16(int var) { return var == kWide16 || var == kSwapN128; }

// The shared memory of mainloop_kernel<A, ..., Coop>: a fixed region of 32 KB (not in the cooperative form), the ring,
// two patch slots (not with A from the stage), the full and empty barriers; kBytes with the 1 KB of alignment.
template <int A, bool Coop, int Var = kPlain>
struct MainloopLayout {
  static constexpr int kStages = Coop || Var == kStages4 ? 4 : Var == kStages5 ? 5 : 6, kStage = Coop || A == 4 ? 32768 : 16384;
  static constexpr int kSlot = A == 4 ? 0 : wide16(Var) ? 55296 : 40960;
  static constexpr int kFixed = Coop || wide16(Var) || slot_gap_of(Var) ? 0 : 32768;
  static constexpr int kBarriers = kFixed + kStages * kStage + slot_gap(Var, kSlot) + kSlot;  // offset of the barriers
  static constexpr int kBytes = 1024 + kBarriers + 2 * kStages * 8;
};

template <int A, bool Patch, int KT, bool Coop = false, int Var = kPlain, int Step = 0>
__global__ void __launch_bounds__(A == 5 ? 384 : 288, 1) mainloop_kernel(const __grid_constant__ CUtensorMap mw,
                                                          const __grid_constant__ CUtensorMap mx,
                                                          const __grid_constant__ CUtensorMap mxa, long long* cycles,
                                                          float* sink) {
  using L = MainloopLayout<A, Coop, Var>;
  constexpr int kStages = L::kStages, kStage = L::kStage, kSlot = L::kSlot;
  static_assert(!Coop || A == 3, "the cooperative form reads A from the patch");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = aligned_smem(smem_raw);
  // By default the fixed region (32 KB), the ring, the slots; kSlotsFirst: the slots, the fixed region, the ring
  uint8_t* fixed_a = Var == kSlotsFirst ? smem + 2 * kSlot : smem;
  uint8_t* ring = Var == kSlotsFirst ? smem + 2 * kSlot + 32768 : smem + L::kFixed;
  uint8_t* slots = Var == kSlotsFirst ? smem : ring + kStages * kStage;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + L::kBarriers);
  uint64_t* empty = full + kStages;
  if (!Coop)
    for (int i = threadIdx.x; i < 16384; i += blockDim.x) {
      uint32_t h = uint32_t(i) * 2654435761u;
      h ^= h >> 15;
      h *= 0x2c1b3c6du;
      h ^= h >> 12;
      reinterpret_cast<bf16*>(fixed_a)[i] =
          Var == kXLikeFixed ? __float2bfloat16(float(int(h & 0xffff) - 32768) / 32768.f) : small_value(i);
    }
  if (Var == kSlotsByThreads)
    for (int i = threadIdx.x; i < 2 * kSlot / 2; i += blockDim.x) reinterpret_cast<bf16*>(slots)[i] = small_value(i);
  init_ring(full, empty, kStages, Coop ? 8 : 4);
  // A == 5 (RS): 3 warpgroups, the consumer's in-flight A fragments need registers past 168
  if (threadIdx.x >= (Coop ? 256 : 128)) {  // the producer thread (the 9th warp's first); the rest leave
    if constexpr (A == 5) setmaxnreg_dec<64>();
    if (threadIdx.x != 256) return;
    tma_prefetch(&mw);
    tma_prefetch(&mx);
    if (A == 4) tma_prefetch(&mxa);
    int tap = 0, cb = 0, unit = blockIdx.x, slot = 0;  // units of 36 k-tiles (4 channel blocks x 9 taps) in the walk
    for (int t = 0; t < KT; ++t) {
      const int s = t % kStages;
      mbarrier_wait(&empty[s], ((t / kStages) & 1) ^ 1);
      const bool patch = Patch && tap == 0 && Var != kRowRing && Var != kPairRing && !one_slot_rows(Var);
      // kOneSlotRows0: row 0 of the next block rides on tap 8 (row0 -1 below: the next block's row 0), row 1 on tap 0
      const int rows = !Patch                        ? 0
                       : Var == kOneSlotRows0        ? (tap == 0 || tap == 3 || tap == 6 || tap == 8 ? 1 : 0)
                       : Var == kRowRing || Var == kPairRing || one_slot_rows(Var) ? (tap == 0 ? 2 : tap == 3 || tap == 6 ? 1 : 0)
                                                       : 0;
      if ((Var == kOneSlotRows || Var == kOneSlotRows0) && rows > 0 && tap != 8) {
        // The previous block's last reader of these rows (row 1's tap 5 covers row 0's tap 2; rows 2-3: tap 8); the
        // stage wait above proved the releases up to k-tile t - kStages (the consumers release in order).
        const int last = t - tap - 9 + (tap == 0 ? 5 : 8);
        if (last >= 0 && last > t - kStages) mbarrier_wait(&empty[last % kStages], (last / kStages) & 1);
      }
      mbarrier_arrive_expect_tx(&full[s], kStage + (patch ? kSlot : 0) + rows * 10240);
      if (one_slot_rows(Var) && rows > 0) {
        // tap 8 (kOneSlotRows0): the next block's row 0 (the next channel block, or the next unit's first)
        const int nu = tap == 8 && cb == 3 ? unit + int(gridDim.x) : unit, ncb = tap == 8 ? (cb + 1) % 4 : cb;
        const int u = nu >> 1, row0 = tap == 8 ? 0 : tap == 0 ? (Var == kOneSlotRows0 ? 1 : 0) : tap / 3 + 1;
        for (int j = 0; j < rows; ++j)
          tma_load_4d(slots + (row0 + j) * 10240, &mxa, &full[s], ncb * 64, (u % 4) * 8, (u / 112) % 7 * 8 - 1,
                      (u / 4) % 28 * 2 - 1 + row0 + j);
      }
      if (Var == kPairRing) {
        const int u = unit >> 1, cbg = (unit / gridDim.x) * 4 + cb;  // this CTA's channel block count
        for (int j = 0; j < rows; ++j) {
          const int row = tap == 0 ? j : tap / 3 + 1;
          tma_load_4d(slots + pair_row(cbg, row), &mxa, &full[s], cb * 64, (u % 4) * 8, (u / 112) % 7 * 8 - 1,
                      (u / 4) % 28 * 2 - 1 + row);
        }
      }
      if (Var == kRowRing) {
        const int u = unit >> 1, cbg = (unit / gridDim.x) * 4 + cb;  // this CTA's channel block count
        for (int j = 0; j < rows; ++j) {
          const int row = tap == 0 ? j : tap / 3 + 1;
          tma_load_4d(slots + ((4 * cbg + row) % 5) * 10240, &mxa, &full[s], cb * 64, (u % 4) * 8,
                      (u / 112) % 7 * 8 - 1, (u / 4) % 28 * 2 - 1 + row);
        }
      }
      tma_load_3d(ring + s * kStage, &mw, &full[s], cb * 64, tap, Coop ? 0 : (unit & 1) * 128);
      if (A == 4)  // X as {c, n*h*w}: the tile's 128 pixels shifted by the tap (row-major pixel index)
        tma_load_2d(ring + s * kStage + 16384, &mxa, &full[s], cb * 64,
                    ((unit >> 1) * 128 + (tap / 3) * 56 + tap % 3) % 100000);
      if (patch) {
        const int u = Coop ? unit : unit >> 1;  // (image block, row block, pixel block) of 4 x 28 x 7
        if (wide16(Var))  // {c, n, h, w}: images block, row, 16-column block
          tma_load_4d(slots + slot * kSlot, &mxa, &full[s], cb * 64, (u % 4) * 8, (u / 4) % 56 - 1,
                      (u / 224) % 4 * 16 - 1);
        else if (Var == kPxMajor || Var == kPxMajorS)  // {c, n, h, w}
          tma_load_4d(slots + slot * kSlot, &mxa, &full[s], cb * 64, (u % 4) * 8, (u / 4) % 28 * 2 - 1,
                      (u / 112) % 7 * 8 - 1);
        else
          tma_load_4d(slots + slot * slot_gap(Var, kSlot), &mx, &full[s], cb * 64, (u % 4) * 8, (u / 112) % 7 * 8 - 1,
                      (u / 4) % 28 * 2 - 1);
        slot ^= 1;
      }
      if (++tap == 9) {
        tap = 0;
        if (++cb == 4) {
          cb = 0;
          unit += gridDim.x;
        }
      }
    }
    return;
  }
  if constexpr (A == 5) setmaxnreg_inc<232>();
  float acc[2][64] = {};
  const long long t0 = clock64();
  int prev = -1;
  for (int t = 0; t < KT; ++t) {
    const int s = t % kStages, tap = t % 9;
    mbarrier_wait(&full[s], (t / kStages) & 1);
    const int tp = Var == kTapsSMajor                     ? (tap % 3) * 3 + tap / 3
                   : Var == kTapsSnake && (tap / 3) == 1 ? 3 + (2 - tap % 3)
                                                         : tap;
    const uint32_t tap_off = Var == kOneSlotStart ? 0u
                             : Var == kOneSlotS  ? uint32_t(tp % 3) * 1024u
                                                 : uint32_t((Var == kSOnly ? 0 : (tp / 3) * 10) + (Var == kROnly ? 0 : tp % 3)) * 1024u;
    const uint32_t slot =
        smem_addr(slots + (Var == kOneSlot || Var == kOneSlotStart || Var == kOneSlotS || one_slot_rows(Var)
                               ? 0
                               : ((t / 9) & 1) * slot_gap(Var, kSlot)));
    const uint32_t a_base = A == 0 ? smem_addr(fixed_a)
                            : A == 1 ? smem_addr(fixed_a) + uint32_t(tap % 3) * 1024u
                            : A == 2 ? slot
                            : A == 3 || A == 5 ? slot + tap_off + (Coop ? uint32_t(threadIdx.x / 128) * 10240u : 0u)
                                     : smem_addr(ring + s * kStage) + 16384u;
    // Step > 0: the second m64 block Step bytes after the first instead
    if constexpr (Coop && Var == kSplitN) {
      // The cooperative 128 x 256 tile split along N instead: each warpgroup both m64 blocks of the tile's rows (the
      // same A windows in both) against its own 128 filters of the stage.
      const uint32_t a_tile = slot + tap_off;
      ktile<false>(acc, a_tile, 10240, smem_addr(ring + s * kStage) + uint32_t(threadIdx.x / 128) * 16384u);
    } else if constexpr (Var == kPxMajor || Var == kPxMajorS) {  // kPxMajorS: tap = 3 s + r
      const int r = Var == kPxMajor ? tap / 3 : tap % 3, sx = Var == kPxMajor ? tap % 3 : tap / 3;
      ktile<false>(acc, slot + uint32_t(4 * sx + r) * 1024u, 1024, smem_addr(ring + s * kStage), 4096);
    } else if constexpr (Var == kWide16) {
      ktile<false>(acc, slot + uint32_t(3 * (tap % 3) + tap / 3) * 1024u, 24576, smem_addr(ring + s * kStage), 3072);
    } else if constexpr (Var == kSwapN128) {
      ktile<false, 3072>(acc, smem_addr(ring + s * kStage), 8192, slot + uint32_t(3 * (tap % 3) + tap / 3) * 1024u);
    } else if constexpr (Var == kSwapAB) {
      ktile_n64(acc, smem_addr(ring + s * kStage), 8192, a_base, 10240);
    } else if constexpr (Var == kN64) {
      ktile_n64(acc, a_base, 10240, smem_addr(ring + s * kStage), 8192);
    } else if constexpr (Var == kPairRing) {
      const int cbg = t / 9, r = tap / 3;
      const uint32_t row0 = smem_addr(slots) + pair_row(cbg, r) + uint32_t(tap % 3) * 1024u;
      const uint32_t row1 = smem_addr(slots) + pair_row(cbg, r + 1) + uint32_t(tap % 3) * 1024u;
      ktile<false>(acc, row0, row1 - row0, smem_addr(ring + s * kStage));
    } else if constexpr (Var == kRowRing) {
      const int cbg = t / 9, r = tap / 3;
      const uint32_t row0 = smem_addr(slots) + uint32_t((4 * cbg + r) % 5) * 10240u + uint32_t(tap % 3) * 1024u;
      const uint32_t row1 = smem_addr(slots) + uint32_t((4 * cbg + r + 1) % 5) * 10240u + uint32_t(tap % 3) * 1024u;
      ktile<false>(acc, row0, row1 - row0, smem_addr(ring + s * kStage));
    } else if constexpr (A == 5) {
      ktile_rs(acc, a_base, 10240, smem_addr(ring + s * kStage));
    } else {
      ktile<Coop>(acc, a_base, Step > 0 ? Step : A == 2 || A == 3 ? 10240 : 8192, smem_addr(ring + s * kStage));
    }
    if (prev >= 0 && threadIdx.x % 32 == 0) mbarrier_arrive(&empty[prev]);
    prev = s;
  }
  finish(acc, sink, cycles, t0);
}

template <int A, bool Patch, int KT, bool Coop = false, int Var = kPlain, int Step = 0>
void run_mainloop(const char* name, int sms, const CUtensorMap& mw, const CUtensorMap& mx, const CUtensorMap& mxa) {
  run_loaded(name, sms, KT, Coop ? 1024.0 : 512.0, A == 5 ? 384 : 288, MainloopLayout<A, Coop, Var>::kBytes,
             mainloop_kernel<A, Patch, KT, Coop, Var, Step>, mw, mx, mxa);
}


// ---- part 3: a patch of 32 channels (64-byte swizzle), docs/perf-notes.md v58 ----
// The pingpong 128 x 128 patch mainloop with channel blocks of 32 instead of 64: X's patch {32 channels, 8 images,
// 10 pixels, 4 rows} is 20 KB (a 64-byte row per pixel: tap (r, s)'s window at r * 5 KB + s * 512 B, the second m64
// block 5 KB further), W's box {32 channels, 1 tap, 128 filters} 8 KB, both with the 64-byte swizzle (SBO 512). The
// question: does the patch's smaller footprint (20 KB per slot against 40) take away the loss that appears when A
// ranges over more than ~24 KB (v53)? Modes:
//   kC32Fixed:  a fixed 8 KB A region, W loads only (the loop's own cost at 32-channel k-tiles: 2 k-steps)
//   kC32Taps:   a k-tile is one tap of one 32-channel block (2 k-steps, ideal 256 cycles), 9 stages of 8 KB, two slots
//   kC32OneSlot: the same with one slot (racy data, timing only)
//   kC32Pairs:  a k-tile is two such half-taps (4 k-steps, ideal 512 cycles: the kernel's commit granularity), 4
//               stages of 16 KB (two W boxes each), two slots
//   kC32Halves: the kernel's k-tiles (one tap of a 64-channel block, W's 128-byte-swizzled {64, 1, 128} box, 6
//               stages) with the block's patch as two 32-channel halves of 20 KB (k-steps 0-1 read half 0, 2-3 half
//               1): the footprint per channel block is 40 KB again, only the layout changes
//   kC32Pairs6: kC32Pairs with 6 stages (a slot may be rewritten while read: racy data, timing only)
//   kC32Ordered: kC32Halves' patches, slots and 6 stages, but each k-tile two taps of one half (k-tiles 0-3: half 0's
//               taps (0, 1) .. (6, 7); 4-7: half 1's; 8: tap 8 of both), W as two 64-byte-swizzled {32, 1, 128} boxes
//               of those (half, tap)s: the 64-channel block's schedule, the pairs' footprint
enum C32Mode : int { kC32Fixed = 0, kC32Taps = 1, kC32OneSlot = 2, kC32Pairs = 3, kC32Halves = 4, kC32Pairs6 = 5,
                     kC32Ordered = 6 };
// kC32Ordered: the (half, tap) of k-step pair e (0, 1) of k-tile j (0 .. 8) of a 3 x 3 block
__host__ __device__ constexpr int ordered_half(int j, int e) { return j < 4 ? 0 : j < 8 ? 1 : e; }
__host__ __device__ constexpr int ordered_tap(int j, int e) { return j < 8 ? (j % 4) * 2 + e : 8; }

// Lay: 0 the fixed region, the slots, the ring; 1 the fixed region, the ring, the slots (GemmSm90's order); 2 the
// ring, the slots, the fixed region
// NS: the slots (2; 3 lets a slot wait a whole block longer before it is rewritten)
template <int Mode, int St = 0, int Lay = 0, int NS = 2>
struct C32Layout {
  static constexpr bool kPairs = Mode == kC32Pairs || Mode == kC32Pairs6;
  static constexpr bool kHalves = Mode == kC32Halves || Mode == kC32Ordered;
  static constexpr int kStages = St ? St : Mode == kC32Pairs ? 4 : Mode == kC32Pairs6 || kHalves ? 6 : 9;
  static constexpr int kStage = kPairs || kHalves ? 16384 : 8192;
  static constexpr int kSlot = kHalves ? 40960 : 20480, kFixed = 8192;
  // Byte offsets of the three regions (kFixedAt, kSlotsAt, kRingAt) and of the barriers after all three.
  static constexpr int kFixedAt = Lay == 2 ? kStages * kStage + NS * kSlot : 0;
  static constexpr int kSlotsAt = Lay == 0 ? kFixed : Lay == 1 ? kFixed + kStages * kStage : kStages * kStage;
  static constexpr int kRingAt = Lay == 0 ? kFixed + NS * kSlot : Lay == 1 ? kFixed : 0;
  static constexpr int kBarriers = kStages * kStage + NS * kSlot + kFixed;
  static constexpr int kBytes = 1024 + kBarriers + 2 * kStages * 8;
};

__device__ __forceinline__ SmemDesc desc_sw64(uint32_t addr) { return make_smem_desc(addr, 16, 512, Swizzle::B64); }

// One k-step (k16) of the 128 x 128 consumer with 64-byte-swizzled operands: A's two m64 blocks at a0 and a0 + 5 KB.
__device__ __forceinline__ void kstep_sw64(float (&acc)[2][64], uint32_t a0, uint32_t a_block, uint32_t b0) {
#pragma unroll
  for (int i = 0; i < 2; ++i) wgmma_ss<128, bf16>(acc[i], desc_sw64(a0 + i * a_block), desc_sw64(b0), true);
}

// The producer's walk: the next tap, and past the last tap the next of `blocks` channel blocks, past the last block
// the CTA's next unit.
__device__ __forceinline__ void advance_walk(int& tap, int& cb, int& unit, int blocks) {
  if (++tap == 9) {
    tap = 0;
    if (++cb == blocks) {
      cb = 0;
      unit += gridDim.x;
    }
  }
}

// Part 3's kernel: one consumer warpgroup, one producer thread (as mainloop_kernel). The half-tap modes walk
// (32-channel block, tap) pairs, kHalf per k-tile; the halves modes (kC32Halves, kC32Ordered) walk the kernel's
// 64-channel k-tiles (a tap of a block whose patch is two 32-channel halves).
template <int Mode, int KT, int St = 0, int Lay = 0, int NS = 2>
__global__ void __launch_bounds__(288, 1) c32_kernel(const __grid_constant__ CUtensorMap mw,
                                                     const __grid_constant__ CUtensorMap mx,
                                                     const __grid_constant__ CUtensorMap mw64, long long* cycles,
                                                     float* sink) {
  using L = C32Layout<Mode, St, Lay, NS>;
  constexpr int kStages = L::kStages, kStage = L::kStage, kSlot = L::kSlot;
  constexpr int kHalf = L::kPairs ? 2 : 1;       // half-taps per k-tile (the half-tap modes)
  constexpr int kBlocks = L::kHalves ? 4 : 8;   // channel blocks of a unit (C = 256)
  static_assert(!L::kHalves || NS == 2, "the halves modes take two slots");
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = aligned_smem(smem_raw);
  uint8_t* slots = smem + L::kSlotsAt;
  uint8_t* ring = smem + L::kRingAt;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + L::kBarriers);
  uint64_t* empty = full + kStages;
  for (int i = threadIdx.x; i < L::kFixed / 2; i += blockDim.x)
    reinterpret_cast<bf16*>(smem + L::kFixedAt)[i] = small_value(i);
  init_ring(full, empty, kStages, 4);
  if (threadIdx.x >= 128) {
    if (threadIdx.x != 256) return;
    tma_prefetch(&mw);
    tma_prefetch(&mx);
    int tap = 0, cb = 0, unit = blockIdx.x, slot = 0;
    for (int t = 0; t < KT; ++t) {
      const int s = t % kStages;
      mbarrier_wait(&empty[s], ((t / kStages) & 1) ^ 1);
      if constexpr (L::kHalves) {
        mbarrier_arrive_expect_tx(&full[s], kStage + (tap == 0 ? kSlot : 0));
        if (Mode == kC32Ordered) {
          for (int e = 0; e < 2; ++e)
            tma_load_3d(ring + s * kStage + e * 8192, &mw, &full[s], cb * 64 + ordered_half(tap, e) * 32,
                        ordered_tap(tap, e), (unit & 1) * 128);
        } else {
          tma_load_3d(ring + s * kStage, &mw64, &full[s], cb * 64, tap, (unit & 1) * 128);
        }
        if (tap == 0) {
          const int u = unit >> 1;  // (image block, row block, pixel block) of 4 x 28 x 7
          for (int h = 0; h < 2; ++h)
            tma_load_4d(slots + slot * kSlot + h * 20480, &mx, &full[s], cb * 64 + h * 32, (u % 4) * 8,
                        (u / 112) % 7 * 8 - 1, (u / 4) % 28 * 2 - 1);
          slot ^= 1;
        }
        advance_walk(tap, cb, unit, kBlocks);
      } else {
        int patches = 0;
        for (int h = 0; h < kHalf; ++h) patches += (Mode != kC32Fixed && (tap + h) % 9 == 0) ? 1 : 0;
        mbarrier_arrive_expect_tx(&full[s], kStage + patches * kSlot);
#pragma unroll
        for (int h = 0; h < kHalf; ++h) {
          tma_load_3d(ring + s * kStage + h * 8192, &mw, &full[s], cb * 32, tap, (unit & 1) * 128);
          if (Mode != kC32Fixed && tap == 0) {
            const int u = unit >> 1;
            tma_load_4d(slots + (Mode == kC32OneSlot ? 0 : slot) * kSlot, &mx, &full[s], cb * 32, (u % 4) * 8,
                        (u / 112) % 7 * 8 - 1, (u / 4) % 28 * 2 - 1);
            slot = slot + 1 == NS ? 0 : slot + 1;
          }
          advance_walk(tap, cb, unit, kBlocks);
        }
      }
    }
    return;
  }
  float acc[2][64] = {};
  const long long t0 = clock64();
  int prev = -1, tap = 0, blk = 0;  // the half-tap modes: the next half-tap's tap and channel block count
  for (int t = 0; t < KT; ++t) {
    const int s = t % kStages;
    mbarrier_wait(&full[s], (t / kStages) & 1);
    ktile_begin(acc);
    const uint32_t b0 = smem_addr(ring + s * kStage);
    if constexpr (Mode == kC32Ordered) {  // two taps of one half per k-tile (a block's 9 k-tiles)
      const int j = t % 9;
      const uint32_t slot0 = smem_addr(slots) + uint32_t((t / 9) & 1) * kSlot;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int tp = ordered_tap(j, e);
        const uint32_t ae = slot0 + uint32_t(ordered_half(j, e)) * 20480u + uint32_t(tp / 3) * 5120u + uint32_t(tp % 3) * 512u;
#pragma unroll
        for (int ks = 0; ks < 2; ++ks) kstep_sw64(acc, ae + ks * 32, 5120u, b0 + e * 8192 + ks * 32);
      }
    } else if constexpr (Mode == kC32Halves) {  // tap j of both halves, W's 128-byte-swizzled box
      const int j = t % 9;
      const uint32_t a0 = smem_addr(slots) + uint32_t((t / 9) & 1) * kSlot + uint32_t(j / 3) * 5120u + uint32_t(j % 3) * 512u;
#pragma unroll
      for (int ks = 0; ks < 4; ++ks)
#pragma unroll
        for (int i = 0; i < 2; ++i)
          wgmma_ss<128, bf16>(acc[i], desc_sw64(a0 + (ks / 2) * 20480u + (ks % 2) * 32u + i * 5120u),
                              make_desc_kmajor_sw128<bf16>(b0, 128, ks), true);
    } else {
#pragma unroll
      for (int h = 0; h < kHalf; ++h) {
        const uint32_t a0 = Mode == kC32Fixed ? smem_addr(smem + L::kFixedAt)
                            : smem_addr(slots) + (Mode == kC32OneSlot ? 0u : uint32_t(blk % NS) * kSlot) +
                                  uint32_t(tap / 3) * 5120u + uint32_t(tap % 3) * 512u;
#pragma unroll
        for (int ks = 0; ks < 2; ++ks)
          kstep_sw64(acc, a0 + ks * 32, Mode == kC32Fixed ? 4096u : 5120u, b0 + h * 8192 + ks * 32);
        if (++tap == 9) {
          tap = 0;
          ++blk;
        }
      }
    }
    ktile_end(acc, empty, prev, s);
  }
  finish(acc, sink, cycles, t0);
}

template <int Mode, int KT, int St = 0, int Lay = 0, int NS = 2>
void run_c32(const char* name, int sms, const CUtensorMap& mw, const CUtensorMap& mx, const CUtensorMap& mw64) {
  run_loaded(name, sms, KT, C32Layout<Mode>::kPairs || C32Layout<Mode>::kHalves ? 512.0 : 256.0, 288,
             C32Layout<Mode, St, Lay, NS>::kBytes, c32_kernel<Mode, KT, St, Lay, NS>, mw, mx, mw64);
}

// ---- part 4: the roles swapped on a 64-filter x 256-pixel unit (docs/perf-notes.md v59) ----
// D transposed: A is W's 64 filters of the k-tile's (channel block, tap) -- a {64 channels, 1 tap, 64 filters} box, 8 KB
// a stage -- and B two n128 windows of the tap in a pixel-major patch of 2 output rows x 16 columns x 8 images
// ({c, n, h, w}: 4 rows x 18 columns x 8 images, 72 KB; atom (h, w) at (4 w + h) KB, so output row i's window for tap
// (r, s) is 16 atoms 4 KB apart from (4 s + r + i) KB). Per k-step two m64n128k16 with the same A: A's bytes per
// multiply-add are half the pingpong 128 x 128's, W's load a quarter of its stage. The question: does the loss the
// patch kernels show (A changing from k-tile to k-tile while TMA writes; v52-v55) shrink with A's bytes?
//   SwMode 0: the patch windows (the design);  1: no patch loads (W only);  2: a fixed B (slot 0's start), W loads;
//   3: a fixed A (slot 1's start) and the patch windows as B, with the loads.
// SwN: the pixels of a window (SwN / 8 columns of 8 images; 112: 14 columns, which tile 56- and 28-wide images
// exactly, in m64n112k16 instructions; the patch then 4 rows x 16 columns, 64 KB).
// G16 (part 5, docs/perf-notes.md v60: 94.4 %, as the pixel-major form): the kernel's own patch order instead, X as
// {c, n, w, h} at 16 images per pixel; a unit is 2 output rows x 8 columns x 16 images, its patch 4 rows x 10 columns
// x 16 images (80 KB), and output row i's window for tap (r, s) 16 contiguous 1 KB atoms from ((r + i) * 10 + s) * 2 KB:
// 56-wide images tile exactly (tests/gpu/standalone/conv_swap_proto.cu builds it into a whole kernel).
template <int St = 6, int SwN = 128, bool G16 = false>
struct SwapLayout {
  static_assert(!G16 || SwN == 128, "part 5's windows are 8 columns of 16 images");
  static constexpr int kCols = SwN / 8;  // a window's columns (pixel-major form)
  static constexpr int kStages = St, kStage = 8192, kSlot = G16 ? 4 * 10 * 16 * 128 : 4 * (kCols + 2) * 1024;
  static constexpr int kBarriers = kStages * kStage + 2 * kSlot;
  static constexpr int kBytes = 1024 + kBarriers + 2 * kStages * 8;
};
template <int SwMode, int KT, int St = 6, int SwN = 128, bool G16 = false>
__global__ void __launch_bounds__(288, 1) swap_kernel(const __grid_constant__ CUtensorMap mw64,
                                                      const __grid_constant__ CUtensorMap mxw, long long* cycles,
                                                      float* sink) {
  using L = SwapLayout<St, SwN, G16>;
  constexpr int kStages = L::kStages, kStage = L::kStage, kSlot = L::kSlot, kColBlocks = (56 + L::kCols - 1) / L::kCols;  // X is 56 columns wide
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = aligned_smem(smem_raw);
  uint8_t* ring = smem;
  uint8_t* slots = smem + kStages * kStage;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + L::kBarriers);
  uint64_t* empty = full + kStages;
  for (int i = threadIdx.x; i < kSlot; i += blockDim.x) reinterpret_cast<bf16*>(slots)[i] = small_value(i);
  init_ring(full, empty, kStages, 4);
  if (threadIdx.x >= 128) {
    if (threadIdx.x != 256) return;
    tma_prefetch(&mw64);
    tma_prefetch(&mxw);
    int tap = 0, cb = 0, unit = blockIdx.x, slot = 0;  // units: (filter block of 4, image block of 4, row pair of 28,
                                                        // column block of 3 or 4) -- 36 k-tiles each
    for (int t = 0; t < KT; ++t) {
      const int s = t % kStages;
      mbarrier_wait(&empty[s], ((t / kStages) & 1) ^ 1);
      const bool patch = SwMode != 1 && SwMode != 2 && tap == 0;
      mbarrier_arrive_expect_tx(&full[s], kStage + (patch ? kSlot : 0));
      tma_load_3d(ring + s * kStage, &mw64, &full[s], cb * 64, tap, (unit % 4) * 64);
      if (patch) {
        const int u = unit / 4;
        if constexpr (G16)  // (image block of 2, column block of 7, row pair of 28)
          tma_load_4d(slots + slot * kSlot, &mxw, &full[s], cb * 64, (u % 2) * 16, (u / 2) % 7 * 8 - 1,
                      (u / 14) % 28 * 2 - 1);
        else
          tma_load_4d(slots + slot * kSlot, &mxw, &full[s], cb * 64, (u % 4) * 8, (u / 4) % 28 * 2 - 1,
                      (u / 112) % kColBlocks * L::kCols - 1);
        slot ^= 1;
      }
      advance_walk(tap, cb, unit, 4);
    }
    return;
  }
  float acc[2][64] = {};
  const long long t0 = clock64();
  int prev = -1;
  for (int t = 0; t < KT; ++t) {
    const int s = t % kStages, tap = t % 9, r = tap / 3, sx = tap % 3;
    mbarrier_wait(&full[s], (t / kStages) & 1);
    const uint32_t slot = smem_addr(slots) + uint32_t((t / 9) & 1) * kSlot;
    const uint32_t a = SwMode == 3 ? smem_addr(slots) + kSlot : smem_addr(ring + s * kStage);
    constexpr uint32_t kRowStep = G16 ? 20480u : 1024u, kSbo = G16 ? 1024u : 4096u;  // output row i's window, atoms
    const uint32_t tap_at = G16 ? uint32_t(10 * r + sx) * 2048u : uint32_t(4 * sx + r) * 1024u;
    const uint32_t b = SwMode == 2 ? smem_addr(slots) : slot + tap_at;
    ktile_begin(acc);
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        wgmma_ss<SwN, bf16>(*reinterpret_cast<float(*)[SwN / 2]>(&acc[i][0]), make_desc_kmajor_sw128<bf16>(a, 64, ks),
                            make_smem_desc(b + uint32_t(i) * kRowStep + uint32_t(ks) * kWgmmaKBytes, 16, kSbo), true);
    ktile_end(acc, empty, prev, s);
  }
  finish(acc, sink, cycles, t0);
}

template <int SwMode, int KT, int St = 6, int SwN = 128, bool G16 = false>
void run_swap(const char* name, int sms, const CUtensorMap& mw64, const CUtensorMap& mxw) {
  run_loaded(name, sms, KT, 512.0 * SwN / 128, 288, SwapLayout<St, SwN, G16>::kBytes,
             swap_kernel<SwMode, KT, St, SwN, G16>, mw64, mxw);
}

}  // namespace

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("wgmma_rate: %s, %d SMs; cycles per k-tile, mean over the CTAs (one per SM)\n", prop.name, sms);

  printf("part 1: operands resident in shared memory, no loads\n");
  run_resident<0, 1, false>("pingpong 128x128, operands fixed", sms);
  run_resident<0, 6, false>("pingpong 128x128, A and B through 6 stages", sms);
  run_resident<0, 3, true>("pingpong 128x128, A at the taps' offsets", sms);
  run_resident<1, 1, false>("cooperative 128x256, operands fixed", sms);
  run_resident<1, 4, false>("cooperative 128x256, through 4 stages", sms);
  run_resident<2, 4, false>("cooperative 256x128, through 4 stages", sms);
  run_resident<3, 5, false>("pingpong 64x256, through 5 stages", sms);

  const size_t wn = 256ull * 9 * 256, xn = 32ull * 56 * 56 * 256;
  bf16 *w, *x;
  CK(cudaMalloc(&w, wn * sizeof(bf16)));
  CK(cudaMalloc(&x, xn * sizeof(bf16)));
  {
    std::vector<bf16> h(xn);
    uint32_t s = 7;
    for (auto& v : h) {
      s = s * 1664525u + 1013904223u;
      v = __float2bfloat16(float(int(s >> 8) % 2048 - 1024) / 1024.f);
    }
    CK(cudaMemcpy(x, h.data(), xn * sizeof(bf16), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(w, h.data(), wn * sizeof(bf16), cudaMemcpyHostToDevice));
  }
  // W as {c, r*s, k} with a box of 128 or 256 filters; X as {c, n, w, h} (the patch's box) and as {c, n*h*w}
  const cuuint64_t w_dims[3] = {256, 9, 256}, w_strides[2] = {256 * 2, 9 * 256 * 2};
  const cuuint32_t w_box[3] = {64, 1, 128}, w256_box[3] = {64, 1, 256};
  const CUtensorMap mw = encode_map("W", w, 3, w_dims, w_strides, w_box);
  const CUtensorMap mw256 = encode_map("W", w, 3, w_dims, w_strides, w256_box);
  const cuuint64_t x_dims[4] = {256, 32, 56, 56}, x_strides[3] = {56ull * 56 * 256 * 2, 256 * 2, 56ull * 256 * 2};
  const cuuint32_t x_box[4] = {64, 8, 10, 4};
  const CUtensorMap mx = encode_map("X", x, 4, x_dims, x_strides, x_box);
  const cuuint64_t xp_dims[4] = {256, 32, 56, 56}, xp_strides[3] = {56ull * 56 * 256 * 2, 56ull * 256 * 2, 256 * 2};
  const cuuint32_t xp_box[4] = {64, 8, 4, 10};
  const CUtensorMap mxp = encode_map("X (pixel-major)", x, 4, xp_dims, xp_strides, xp_box);
  const cuuint32_t xr_box[4] = {64, 8, 10, 1};
  const CUtensorMap mxr = encode_map("X (a row)", x, 4, x_dims, x_strides, xr_box);
  const cuuint64_t xa_dims[2] = {256, 32ull * 56 * 56}, xa_strides[1] = {256 * 2};
  const cuuint32_t xa_box[2] = {64, 128};
  const CUtensorMap mxa = encode_map("X (2-D)", x, 2, xa_dims, xa_strides, xa_box);
  const cuuint32_t x16_box[4] = {64, 8, 3, 18};
  const CUtensorMap mx16 = encode_map("X (1 x 16 x 8 tile's patch)", x, 4, xp_dims, xp_strides, x16_box);
  constexpr int kKt = 36 * 12 * 8;  // 96 units of 36 k-tiles per CTA
  printf("part 2: the pingpong 128x128 patch mainloop's loads (tensor TMA, 6 stages), A read from:\n");
  if (getenv("KDL_RATE_ROWS") != nullptr) {  // the kernel's figure, one slot reloaded row by row (docs/perf-notes.md v56)
    for (int rep = 0; rep < 3; ++rep) {
      run_mainloop<3, true, kKt>("the tap's window of the patch (the kernel's)", sms, mw, mx, mxa);
      run_mainloop<3, true, kKt, false, kOneSlot>("the taps' windows of one slot (racy data)", sms, mw, mx, mxa);
      run_mainloop<3, true, kKt, false, kOneSlotRows>("one slot, its rows reloaded as they free (race-free)", sms, mw,
                                                      mx, mxr);
      run_mainloop<3, true, kKt, false, kOneSlotRows0>("one slot, rows as they free, row 0 a block early", sms, mw,
                                                       mx, mxr);
      run_mainloop<3, true, kKt, false, kOneSlotRowsRacy>("one slot, its rows' loads without the waits (racy)", sms,
                                                          mw, mx, mxr);
      run_mainloop<3, false, kKt, false, kOneSlot>("the taps' windows of one slot, no patch loads", sms, mw, mx, mxa);
      run_mainloop<3, true, kKt, false, kSlotGap64>("two slots 64 KB apart", sms, mw, mx, mxa);
      run_mainloop<3, true, kKt, false, kSlotGap48>("two slots 48 KB apart", sms, mw, mx, mxa);
      run_mainloop<3, true, kKt, false, kSlotGap32>("two slots 32 KB apart (overlapping, racy)", sms, mw, mx, mxa);
      run_mainloop<3, false, kKt, false, kSlotGap64>("two slots 64 KB apart, no patch loads", sms, mw, mx, mxa);
      run_mainloop<3, true, kKt, false, kSlotGap40>("two slots 40 KB apart, no fixed region", sms, mw, mx, mxa);
      run_mainloop<3, true, kKt, false, kSlotGap56>("two slots 56 KB apart", sms, mw, mx, mxa);
      run_mainloop<3, true, kKt, false, kSlotGap80>("two slots 80 KB apart", sms, mw, mx, mxa);
      run_mainloop<3, false, kKt, false, kSlotGap40>("two slots 40 KB apart, no patch loads", sms, mw, mx, mxa);
      run_mainloop<3, true, kKt, false, kPairRing>("a ring of 3 row pairs (60 KB, 27 places)", sms, mw, mx, mxr);
      run_mainloop<3, false, kKt, false, kPairRing>("a ring of 3 row pairs, no patch loads", sms, mw, mx, mxr);
      run_mainloop<4, false, kKt>("the stage (X's rows loaded with W each k-tile)", sms, mw, mx, mxa);
    }
    return 0;
  }
  if (getenv("KDL_RATE_SWAP") != nullptr || getenv("KDL_RATE_SWAP16") != nullptr) {
    // part 4 (KDL_RATE_SWAP): the roles swapped on 64 x 256 units; part 5 (KDL_RATE_SWAP16): the same unit with images
    // innermost at G = 16. Three times each.
    const bool g16 = getenv("KDL_RATE_SWAP16") != nullptr;
    const cuuint32_t w64_box[3] = {64, 1, 64}, xw_box[4] = {64, 8, 4, 18}, xw14_box[4] = {64, 8, 4, 16},
                     x16g_box[4] = {64, 16, 10, 4};
    const CUtensorMap mw64 = encode_map("W (64 filters)", w, 3, w_dims, w_strides, w64_box);
    const CUtensorMap mxw = encode_map("X (2 x 16 x 8 tile's patch)", x, 4, xp_dims, xp_strides, xw_box);
    const CUtensorMap mxw14 = encode_map("X (2 x 14 x 8 tile's patch)", x, 4, xp_dims, xp_strides, xw14_box);
    const CUtensorMap mx16g = encode_map("X (2 x 8 x 16 tile's patch)", x, 4, x_dims, x_strides, x16g_box);
    for (int rep = 0; rep < 3; ++rep) {
      run_mainloop<3, true, kKt>("the tap's window of the patch (the kernel's)", sms, mw, mx, mxa);
      if (g16) {
        run_swap<0, kKt>("part 4: swapped 64 x 256, pixel-major 2 x 16 x 8 windows", sms, mw64, mxw);
        run_swap<0, kKt, 6, 128, true>("swapped 64 x 256, G 16: B the 2 x 8 x 16 windows", sms, mw64, mx16g);
        run_swap<1, kKt, 6, 128, true>("swapped 64 x 256, G 16: no patch loads", sms, mw64, mx16g);
        run_swap<2, kKt, 6, 128, true>("swapped 64 x 256, G 16: a fixed B, W loads", sms, mw64, mx16g);
        run_swap<3, kKt, 6, 128, true>("swapped 64 x 256, G 16: a fixed A, the windows", sms, mw64, mx16g);
        run_swap<0, kKt, 5, 128, true>("swapped 64 x 256, G 16: the windows, 5 stages", sms, mw64, mx16g);
      } else {
        run_swap<0, kKt>("swapped 64 x 256: B the patch windows", sms, mw64, mxw);
        run_swap<1, kKt>("swapped 64 x 256: no patch loads", sms, mw64, mxw);
        run_swap<2, kKt>("swapped 64 x 256: a fixed B, W loads", sms, mw64, mxw);
        run_swap<3, kKt>("swapped 64 x 256: a fixed A, patch windows", sms, mw64, mxw);
        run_swap<0, kKt, 4>("swapped 64 x 256: B the patch windows, 4 stages", sms, mw64, mxw);
        run_swap<0, kKt, 6, 112>("swapped 64 x 224 (n112): B the patch windows", sms, mw64, mxw14);
        run_swap<1, kKt, 6, 112>("swapped 64 x 224 (n112): no patch loads", sms, mw64, mxw14);
        run_swap<2, kKt, 6, 112>("swapped 64 x 224 (n112): a fixed B, W loads", sms, mw64, mxw14);
      }
    }
    return 0;
  }
  if (getenv("KDL_RATE_C32") != nullptr) {  // part 3 only: 32-channel patches (64-byte swizzle), three times
    const cuuint32_t w32_box[3] = {32, 1, 128}, x32_box[4] = {32, 8, 10, 4};
    const CUtensorMap mw32 = encode_map("W (32 channels)", w, 3, w_dims, w_strides, w32_box, CU_TENSOR_MAP_SWIZZLE_64B);
    const CUtensorMap mx32 = encode_map("X (32 channels)", x, 4, x_dims, x_strides, x32_box, CU_TENSOR_MAP_SWIZZLE_64B);
    for (int rep = 0; rep < 3; ++rep) {
      run_mainloop<3, true, kKt>("the tap's window of the patch (the kernel's)", sms, mw, mx, mxa);
      run_mainloop<0, true, kKt>("a fixed region, W and patch loads", sms, mw, mx, mxa);
      if (rep == 0) {
        run_c32<kC32Fixed, 2 * kKt>("32 ch: a fixed A, W loads (2 k-steps a k-tile)", sms, mw32, mx32, mw);
        run_c32<kC32Taps, 2 * kKt>("32 ch: the taps' windows, two 20 KB slots", sms, mw32, mx32, mw);
      }
      run_c32<kC32Pairs, kKt>("32 ch: two half-taps a k-tile, two slots", sms, mw32, mx32, mw);
      run_c32<kC32Pairs6, kKt>("32 ch: two half-taps, 6 stages (racy)", sms, mw32, mx32, mw);
      run_c32<kC32Halves, kKt>("32 ch halves: the kernel's k-tiles, 2 x 20 KB", sms, mw32, mx32, mw);
      run_c32<kC32Pairs, kKt, 4, 1>("32 ch pairs, 4 stages, ring before the slots", sms, mw32, mx32, mw);
      run_c32<kC32Pairs, kKt, 4, 2>("32 ch pairs, 4 stages, ring first, no gap", sms, mw32, mx32, mw);
      run_c32<kC32Pairs, kKt, 5, 1>("32 ch pairs, 5 stages, ring before the slots", sms, mw32, mx32, mw);
      run_c32<kC32Pairs, kKt, 5, 2>("32 ch pairs, 5 stages, ring first, no gap", sms, mw32, mx32, mw);
      run_c32<kC32Pairs, kKt, 5>("32 ch: two half-taps a k-tile, 5 stages", sms, mw32, mx32, mw);
      run_c32<kC32Pairs, kKt, 3>("32 ch: two half-taps a k-tile, 3 stages", sms, mw32, mx32, mw);
      run_c32<kC32Pairs, kKt, 6, 0, 3>("32 ch pairs, three slots, 6 stages (the kernel's)", sms, mw32, mx32, mw);
      run_c32<kC32Pairs, kKt, 7, 0, 3>("32 ch pairs, three slots, 7 stages", sms, mw32, mx32, mw);
      run_c32<kC32Pairs, kKt, 4, 0, 3>("32 ch pairs, three slots, 4 stages", sms, mw32, mx32, mw);
      run_c32<kC32Ordered, kKt>("32 ch halves, k-tiles in half order (6 stages)", sms, mw32, mx32, mw);
      run_c32<kC32Ordered, kKt, 4>("32 ch halves, k-tiles in half order, 4 stages", sms, mw32, mx32, mw);
      run_mainloop<3, true, kKt, false, kStages4>("the kernel's, 4 stages", sms, mw, mx, mxa);
      run_mainloop<3, true, kKt, false, kStages5>("the kernel's, 5 stages", sms, mw, mx, mxa);
    }
    return 0;
  }
  if (getenv("KDL_RATE_WIDE16") != nullptr) {  // only the kernel's figure and the 1 x 16 x 8 patch variants
    for (int rep = 0; rep < 3; ++rep) {
      run_mainloop<3, true, kKt>("the tap's window of the patch (the kernel's)", sms, mw, mx, mxa);
      run_mainloop<3, true, kKt, false, kWide16>("1x16x8 tile's patch, the kernel's roles", sms, mw, mx, mx16);
      run_mainloop<3, false, kKt, false, kWide16>("1x16x8 tile's patch, no patch loads", sms, mw, mx, mx16);
      run_mainloop<3, true, kKt, false, kSwapN128>("1x16x8, roles swapped, n128 B windows", sms, mw, mx, mx16);
      run_mainloop<3, false, kKt, false, kSwapN128>("1x16x8, roles swapped, no patch loads", sms, mw, mx, mx16);
      run_mainloop<4, false, kKt>("the stage (X's rows loaded with W each k-tile)", sms, mw, mx, mxa);
    }
    return 0;
  }
  run_mainloop<0, false, kKt>("a fixed region, W loads only", sms, mw, mx, mxa);
  run_mainloop<0, true, kKt>("a fixed region, W and patch loads", sms, mw, mx, mxa);
  run_mainloop<1, true, kKt>("the fixed region + s KB", sms, mw, mx, mxa);
  run_mainloop<2, true, kKt>("the patch slot's start", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt>("the tap's window of the patch (the kernel's)", sms, mw, mx, mxa);
  run_mainloop<3, false, kKt>("the taps' windows, no patch loads", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kTapsSMajor>("the taps' windows in s-major order", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kTapsSnake>("the taps' windows in snake order", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kPxMajor>("the taps' windows of a pixel-major patch", sms, mw, mx, mxp);
  run_mainloop<3, false, kKt, false, kPxMajor>("a pixel-major patch, no patch loads", sms, mw, mx, mxp);
  run_mainloop<3, true, kKt, false, kPxMajorS>("a pixel-major patch, taps s-major", sms, mw, mx, mxp);
  run_mainloop<3, true, kKt, false, kSwapAB>("roles swapped: B the tap's window, A the W stage", sms, mw, mx, mxa);
  run_mainloop<3, false, kKt, false, kSwapAB>("roles swapped, no patch loads", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kN64>("the kernel's roles in m64n64 instructions", sms, mw, mx, mxa);
  run_mainloop<0, true, kKt, false, kN64>("a fixed A in m64n64 instructions", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kRowRing>("the taps' windows of a ring of 5 patch rows", sms, mw, mx, mxr);
  run_mainloop<3, false, kKt, false, kRowRing>("a ring of 5 patch rows, no patch loads", sms, mw, mx, mxr);
  run_mainloop<5, true, kKt>("RS: the tap's window by ldmatrix", sms, mw, mx, mxa);
  run_mainloop<5, false, kKt>("RS: the taps' windows, no patch loads", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kROnly>("the taps' windows by r only (10 r KB)", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kSOnly>("the taps' windows by s only (s KB)", sms, mw, mx, mxa);
  run_mainloop<3, false, kKt, false, kROnly>("by r only, no patch loads", sms, mw, mx, mxa);
  run_mainloop<3, false, kKt, false, kSOnly>("by s only, no patch loads", sms, mw, mx, mxa);
  run_mainloop<3, false, kKt, false, kOneSlot>("the taps' windows of one slot, no patch loads", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kOneSlot>("the taps' windows of one slot (racy data)", sms, mw, mx, mxa);
  run_mainloop<3, false, kKt, false, kOneSlotStart>("slot 0's start always, no patch loads", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kOneSlotStart>("slot 0's start always (racy data)", sms, mw, mx, mxa);
  run_mainloop<3, false, kKt, false, kOneSlotS>("slot 0's start + s KB, no patch loads", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kOneSlotS>("slot 0's start + s KB (racy data)", sms, mw, mx, mxa);
  run_mainloop<0, true, kKt, false, kXLikeFixed>("a fixed region of X-like data", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kSlotsFirst>("the tap's window, slots at the start of smem", sms, mw, mx, mxa);
  run_mainloop<0, true, kKt, false, kSlotsFirst>("a fixed region, slots at the start of smem", sms, mw, mx, mxa);
  run_mainloop<3, false, kKt, false, kSlotsByThreads>("the taps' windows of slots written by threads", sms, mw, mx,
                                                      mxa);
  run_mainloop<2, false, kKt, false, kSlotsByThreads>("the slot's start, written by threads", sms, mw, mx, mxa);
  run_mainloop<4, false, kKt>("the stage (X's rows loaded with W each k-tile)", sms, mw, mx, mxa);
  run_mainloop<0, true, kKt, false, kPlain, 9216>("a fixed region, blocks 9 KB apart", sms, mw, mx, mxa);
  run_mainloop<0, true, kKt, false, kPlain, 10240>("a fixed region, blocks 10 KB apart", sms, mw, mx, mxa);
  run_mainloop<0, true, kKt, false, kPlain, 12288>("a fixed region, blocks 12 KB apart", sms, mw, mx, mxa);
  run_mainloop<0, true, kKt, false, kPlain, 16384>("a fixed region, blocks 16 KB apart", sms, mw, mx, mxa);
  run_mainloop<2, true, kKt, false, kPlain, 8192>("the patch slot's start, blocks 8 KB apart", sms, mw, mx, mxa);
  run_mainloop<3, true, kKt, false, kPlain, 8192>("the taps' windows, blocks 8 KB apart", sms, mw, mx, mxa);
  printf("part 2, the cooperative 128x256 patch mainloop (4 stages of W's 32 KB), A from the taps' windows:\n");
  run_mainloop<3, true, kKt / 2, true>("the tap's windows of the patch", sms, mw256, mx, mxa);
  run_mainloop<3, true, kKt / 2, true, kSplitN>("split along N: both read the same A windows", sms, mw256, mx, mxa);
  {  // part 2 again with every element of X (then W) 1.0: operands that move but whose values do not change
    std::vector<bf16> h(xn, __float2bfloat16(1.f));
    CK(cudaMemcpy(x, h.data(), xn * sizeof(bf16), cudaMemcpyHostToDevice));
    run_mainloop<3, true, kKt>("the tap's window, X all ones", sms, mw, mx, mxa);
    run_mainloop<4, false, kKt>("the stage, X all ones", sms, mw, mx, mxa);
    CK(cudaMemcpy(w, h.data(), wn * sizeof(bf16), cudaMemcpyHostToDevice));
    run_mainloop<3, true, kKt>("the tap's window, X and W all ones", sms, mw, mx, mxa);
  }
  CK(cudaFree(w));
  CK(cudaFree(x));
  return 0;
}
