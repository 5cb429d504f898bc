// kdl/wgmma_sm90.cuh -- warpgroup MMA (wgmma) building blocks for sm_90a, namespace kdl::sm90.
//
// The pieces a Hopper mainloop is written in, each small and named after what it is:
//   sw128_byte_offset        where element (row, byte) of a 128B-swizzled operand tile lives
//   SmemDesc / make_desc_*   the 64-bit shared-memory matrix descriptor wgmma reads A and B through
//   WgmmaOperand<T>, kWgmmaK<T>, wgmma_accum_t<TA, TB>
//                            the operand types wgmma takes, its k per instruction, the accumulator
//   wgmma_fence, wgmma_commit_group, wgmma_wait_group<N>, warpgroup_fence_acc
//   wgmma_ss<N, TA, TB, MajorA, MajorB>
//                            D(64xN) (+)= A(64 x k) * B(k x N), both operands in shared memory, for
//                            every operand type (f16, bf16, tf32, e4m3, e5m2, s8, u8) and every N
//                            the instruction allows
//   setmaxnreg_inc/dec<R>    hand registers between producer and consumer warpgroups
//   acc_coord(thread, r)     which (row, col) of the 64xN tile accumulator register r holds
//   stmatrix_x4[_trans], stmatrix_acc_x4<T, Trans>
//                            accumulators to a shared-memory staging tile (epilogue), 16 columns
//                            of a warp per instruction, row- or column-major
//
// Operand tiles (128-byte swizzle; exactly what TMA's CU_TENSOR_MAP_SWIZZLE_128B writes for a box
// whose inner extent is 128 bytes: 64 16-bit elements, 128 8-bit ones, 32 floats):
//   K-major  (A as 64 x K row-major, B as N x K "col-major"): the tile is cut along K into blocks
//            of 128 bytes; block kb holds rows x 128 B, row r at r*128, the 16-byte chunk c of
//            the row stored at chunk c ^ (r % 8). Eight rows (1024 B) are one swizzle atom.
//            Every operand type can be read K-major.
//   MN-major (A as K x 64 col-major, B as K x N row-major; 16-bit types only): the same picture
//            with the roles swapped: cut along MN into blocks of 64 elements; block b holds K
//            rows x 128 B.
//   Every block starts on a 1024-byte boundary (the descriptor's base offset is then 0).
//
// The instructions exist only for sm_90a. Elsewhere the fences and setmaxnreg compile to nothing
// and wgmma_ss traps, so the header can be included by code built for any architecture; the
// layout functions are __host__ __device__ and work everywhere (tests, host-side planners).
#pragma once
#include <stdint.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <string.h>
#include <type_traits>

// wgmma and setmaxnreg exist only in the arch-specific sm_90a target ("a" features).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KDL_WGMMA_SM90A 1
#else
#define KDL_WGMMA_SM90A 0
#endif

namespace kdl {
namespace sm90 {

// ---------------------------------------------------------------------------------------------
// 128-byte swizzled shared-memory layout
// ---------------------------------------------------------------------------------------------
constexpr int kSwizzleBytes = 128;        // one swizzled row: 8 chunks of 16 bytes
constexpr int kSwizzleAtomBytes = 1024;   // 8 rows; the XOR pattern repeats every atom

// Byte offset, from the tile's start, of byte `inner_byte` of row `row` of a tile whose rows are
// `inner` (contiguous) and of which there are `rows` per 128-byte block:
//   K-major operand:  row = m (or n),  inner_byte = k * sizeof(T),  rows = M (or N) of the tile
//   MN-major operand: row = k,         inner_byte = m * sizeof(T),  rows = K of the tile
__host__ __device__ constexpr uint32_t sw128_byte_offset(int row, int inner_byte, int rows) {
  return uint32_t(inner_byte / kSwizzleBytes) * uint32_t(rows) * kSwizzleBytes  // 128-byte block
       + uint32_t(row) * kSwizzleBytes                                         // row in block
       + uint32_t(((inner_byte % kSwizzleBytes) / 16) ^ (row % 8)) * 16       // swizzled chunk
       + uint32_t(inner_byte % 16);                                            // byte in chunk
}

// ---------------------------------------------------------------------------------------------
// Operand types (PTX ISA "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions",
// wgmma.mma_async): one instruction multiplies 64 x k of A by k x N of B, where k is 32 bytes of
// every type: k16 for f16/bf16, k8 for tf32 (float operands, read as tf32), k32 for e4m3/e5m2
// and s8/u8. f16/bf16 A and B are one type; e4m3 and e5m2 mix freely, so do s8 and u8.
// Accumulators are f32 (s32 for s8/u8).
// ---------------------------------------------------------------------------------------------
enum class Major : int { K = 0, MN = 1 };  // which dimension of an operand tile is contiguous

template <class T>
struct WgmmaOperand {
  static_assert(sizeof(T) == 0, "wgmma operands are half, __nv_bfloat16, float (tf32), __nv_fp8_e4m3, "
                                "__nv_fp8_e5m2, int8_t or uint8_t");
};
// kFamily: operands of one family can be combined in one instruction.
enum class WgmmaFamily { F16, Bf16, Tf32, Fp8, Int8 };
template <> struct WgmmaOperand<half>           { static constexpr WgmmaFamily kFamily = WgmmaFamily::F16; };
template <> struct WgmmaOperand<__nv_bfloat16>  { static constexpr WgmmaFamily kFamily = WgmmaFamily::Bf16; };
template <> struct WgmmaOperand<float>          { static constexpr WgmmaFamily kFamily = WgmmaFamily::Tf32; };
template <> struct WgmmaOperand<__nv_fp8_e4m3>  { static constexpr WgmmaFamily kFamily = WgmmaFamily::Fp8; };
template <> struct WgmmaOperand<__nv_fp8_e5m2>  { static constexpr WgmmaFamily kFamily = WgmmaFamily::Fp8; };
template <> struct WgmmaOperand<int8_t>         { static constexpr WgmmaFamily kFamily = WgmmaFamily::Int8; };
template <> struct WgmmaOperand<uint8_t>        { static constexpr WgmmaFamily kFamily = WgmmaFamily::Int8; };

constexpr int kWgmmaKBytes = 32;  // bytes of K per instruction, for every operand type

// Elements of K per instruction: 16 for 16-bit types, 32 for 8-bit ones, 8 for tf32.
template <class T>
inline constexpr int kWgmmaK = (void(WgmmaOperand<T>::kFamily), kWgmmaKBytes / int(sizeof(T)));

// The accumulator element: s32 for s8/u8 operands, f32 otherwise.
template <class TA, class TB>
using wgmma_accum_t = std::conditional_t<WgmmaOperand<TA>::kFamily == WgmmaFamily::Int8, int32_t, float>;

// Whether m64nNk* exists for these operands: N a multiple of 8 in [8, 256]; for s8/u8 above 32
// only multiples of 16.
template <class TA>
__host__ __device__ constexpr bool wgmma_n_supported(int n) {
  if (n < 8 || n > 256 || n % 8 != 0) return false;
  return WgmmaOperand<TA>::kFamily != WgmmaFamily::Int8 || n <= 32 || n % 16 == 0;
}

// ---------------------------------------------------------------------------------------------
// Shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format" for wgmma)
//   bits  0-13  start address >> 4        (shared-window address, 16-byte aligned)
//   bits 16-29  leading-dimension byte offset >> 4   (LBO)
//   bits 32-45  stride-dimension  byte offset >> 4   (SBO)
//   bits 49-51  base offset (0: every swizzle atom starts on a 1024-byte boundary)
//   bits 62-63  swizzle mode: 0 none, 1 128B, 2 64B, 3 32B
// With the 128-byte swizzle:
//   K-major:  SBO = 1024 (from one 8-row group to the next); LBO unused (the ISA assumes 1).
//             One k-step (one instruction's k) is 32 bytes of K for every type: the k-th step
//             (0..3 within a 128-byte block) adds 32*k bytes to the start address, and the
//             hardware applies the XOR to the final address, so an unaligned start inside the
//             atom is right. The next 128-byte block is rows*128 bytes further.
//   MN-major: LBO = offset between 64-element blocks along MN (K_tile * 128 bytes),
//             SBO = 1024 (from one group of 8 k-rows to the next); a k16 step is 2 atoms = 2048
//             bytes.
// ---------------------------------------------------------------------------------------------
struct SmemDesc {
  uint64_t bits;
};

enum class Swizzle : uint64_t { None = 0, B128 = 1, B64 = 2, B32 = 3 };

__host__ __device__ constexpr uint64_t desc_field(uint32_t bytes) { return uint64_t((bytes & 0x3FFFF) >> 4); }

__host__ __device__ constexpr SmemDesc make_smem_desc(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes,
                                                      Swizzle swizzle = Swizzle::B128) {
  return SmemDesc{desc_field(smem_addr) | (desc_field(lbo_bytes) << 16) | (desc_field(sbo_bytes) << 32) |
                  (uint64_t(swizzle) << 62)};
}

// The shared-window address of a generic pointer to shared memory (what descriptors hold).
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Descriptor for the k_step-th instruction step (kWgmmaK<T> elements = 32 bytes of K, whatever
// T is) of a K-major tile of `rows` rows.
template <class T>
__host__ __device__ constexpr SmemDesc make_desc_kmajor_sw128(uint32_t tile_addr, int rows, int k_step) {
  static_assert(kWgmmaK<T> * sizeof(T) == kWgmmaKBytes, "a k-step is 32 bytes of K");
  return make_smem_desc(tile_addr + sw128_byte_offset(0, k_step * kWgmmaKBytes, rows), 16, kSwizzleAtomBytes);
}

// Descriptor for the k_step-th step (16 rows of K) of an MN-major tile of `k_rows` rows of K
// (16-bit T only: wgmma reads other types K-major only).
template <class T>
__host__ __device__ constexpr SmemDesc make_desc_mnmajor_sw128(uint32_t tile_addr, int k_rows, int k_step) {
  static_assert(sizeof(T) == 2, "MN-major operands exist for 16-bit types only");
  return make_smem_desc(tile_addr + uint32_t(k_step * kWgmmaK<T>) * kSwizzleBytes, uint32_t(k_rows) * kSwizzleBytes,
                        kSwizzleAtomBytes);
}

// ---------------------------------------------------------------------------------------------
// Ordering: wgmma reads its accumulators and shared memory asynchronously.
//   warpgroup_fence_acc(d)   keeps the compiler from moving register accesses of d across the
//                            wgmma that follows (the registers are in flight until wait_group)
//   wgmma_fence()            orders this warpgroup's earlier register/smem writes before wgmma
//   wgmma_commit_group()     closes the batch of wgmmas issued so far into a group
//   wgmma_wait_group<N>()    waits until at most N groups are still pending
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void wgmma_fence() {
#if KDL_WGMMA_SM90A
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit_group() {
#if KDL_WGMMA_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}

template <int N>
__device__ __forceinline__ void wgmma_wait_group() {
  static_assert(N >= 0 && N <= 7, "wgmma.wait_group takes 0..7 pending groups");
#if KDL_WGMMA_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}

__device__ __forceinline__ void warpgroup_fence_acc(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void warpgroup_fence_acc(int32_t& r) { asm volatile("" : "+r"(r)::"memory"); }

template <class Acc, int R>
__device__ __forceinline__ void warpgroup_fence_acc(Acc (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) warpgroup_fence_acc(d[i]);
}

// ---------------------------------------------------------------------------------------------
// Register budget: setmaxnreg (per warp; every warp of the warpgroup must execute it). The
// kernel needs __launch_bounds__(threads, 1) or ptxas ignores it (warning C7508).
// ---------------------------------------------------------------------------------------------
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(R % 8 == 0 && R >= 24 && R <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
#if KDL_WGMMA_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(R));
#endif
}

template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(R % 8 == 0 && R >= 24 && R <= 256, "setmaxnreg takes a multiple of 8 in [24, 256]");
#if KDL_WGMMA_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(R));
#endif
}

// ---------------------------------------------------------------------------------------------
// Accumulator fragment of wgmma.m64nNk* (PTX ISA, "Register Fragments and Shared Memory Matrix
// Layouts", accumulator matrix D; the same for f32 and s32 D and every k): N/2 registers per
// thread of the 128-thread warpgroup.
//   warp w = t / 32 owns rows 16w .. 16w+15; lane l = t % 32;
//   register r:  row = 16w + l/4 + 8 * ((r/2) % 2)
//                col = 8 * (r/4) + 2 * (l%4) + r%2
// i.e. each group of 4 registers covers an 8-column slice: {r, r+1} two adjacent columns of
// row l/4, {r+2, r+3} the same columns 8 rows lower (the mma.sync m16n8 C layout, per warp).
// ---------------------------------------------------------------------------------------------
struct AccCoord {
  int row, col;
};

__host__ __device__ constexpr AccCoord acc_coord(int thread, int r) {
  return AccCoord{16 * (thread / 32) + (thread % 32) / 4 + 8 * ((r / 2) % 2), 8 * (r / 4) + 2 * (thread % 4) + r % 2};
}

template <int N>
struct WgmmaAcc {
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "wgmma m64nNk*: N is a multiple of 8 in [8, 256]");
  static constexpr int kRegs = N / 2;  // f32 (s32) registers per thread
};

// ---------------------------------------------------------------------------------------------
// stmatrix (PTX ISA "stmatrix", sm_90): a warp stores four 8x8 matrices of 16-bit elements to
// shared memory. Register i of every lane holds two adjacent elements of matrix i, lane l at
// (row l/4, cols 2*(l%4), +1), which is the accumulator fragment above, packed to 16 bits: the
// accumulator registers 8j .. 8j+7 of a warp (columns 16j .. 16j+15 of its 16 rows) are exactly
// one x4. Lane l gives the address of one 16-byte row: row l%8 of matrix l/8. With .trans each
// matrix is stored transposed (the addresses are then of its columns), which stages a
// column-major tile. Each 16-byte row must be 16-byte aligned; the rows may lie anywhere (a
// swizzled staging tile included).
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void stmatrix_x4(uint32_t smem_row_addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_row_addr), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
#elif defined(__CUDA_ARCH__)
  (void)smem_row_addr; (void)r0; (void)r1; (void)r2; (void)r3;
  __trap();
#endif
}

__device__ __forceinline__ void stmatrix_x4_trans(uint32_t smem_row_addr, uint32_t r0, uint32_t r1, uint32_t r2,
                                                  uint32_t r3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_row_addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
#elif defined(__CUDA_ARCH__)
  (void)smem_row_addr; (void)r0; (void)r1; (void)r2; (void)r3;
  __trap();
#endif
}

// Where lane `lane` points for an x4 store of a warp's 16 x 16 block (rows 0..15 of the warp,
// columns 16j .. 16j+15, coordinates relative to the block): the first of the 8 elements it
// addresses. Matrix i = lane/8 is rows 8*(i%2) .., columns 8*(i/2) ...
//   plain:  the 8 elements (row, col .. col+7), contiguous in a row-major staging tile
//   trans:  the 8 elements (row .. row+7, col), contiguous in a column-major staging tile
__host__ __device__ constexpr AccCoord stmatrix_x4_lane_coord(int lane, bool trans) {
  return trans ? AccCoord{8 * ((lane / 8) % 2), 8 * (lane / 16) + lane % 8}
               : AccCoord{8 * ((lane / 8) % 2) + lane % 8, 8 * (lane / 16)};
}

// Two floats as one register of two 16-bit T (lo at the lower address), round to nearest.
template <class T>
__device__ __forceinline__ uint32_t pack_b16x2(float lo, float hi) {
  static_assert(std::is_same_v<T, half> || std::is_same_v<T, __nv_bfloat16>, "stmatrix stores f16 or bf16");
  uint32_t r;
  if constexpr (std::is_same_v<T, half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    memcpy(&r, &h, 4);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    memcpy(&r, &h, 4);
  }
  return r;
}

// Stores accumulator registers d[8j .. 8j+7] (columns 16j .. 16j+15 of the warp's 16 rows) as T
// with one stmatrix; lane_addr is where stmatrix_x4_lane_coord(lane, kTrans) lies in the
// staging tile. j must be a compile-time constant after unrolling (registers are not indexable).
template <class T, bool kTrans = false, int R>
__device__ __forceinline__ void stmatrix_acc_x4(const float (&d)[R], int j, uint32_t lane_addr) {
  static_assert(R % 8 == 0, "an x4 store takes 16 accumulator columns (8 registers)");
  const uint32_t r0 = pack_b16x2<T>(d[8 * j + 0], d[8 * j + 1]);  // rows 0-7,  columns 0-7
  const uint32_t r1 = pack_b16x2<T>(d[8 * j + 2], d[8 * j + 3]);  // rows 8-15, columns 0-7
  const uint32_t r2 = pack_b16x2<T>(d[8 * j + 4], d[8 * j + 5]);  // rows 0-7,  columns 8-15
  const uint32_t r3 = pack_b16x2<T>(d[8 * j + 6], d[8 * j + 7]);  // rows 8-15, columns 8-15
  if constexpr (kTrans) stmatrix_x4_trans(lane_addr, r0, r1, r2, r3);
  else stmatrix_x4(lane_addr, r0, r1, r2, r3);
}

// ---------------------------------------------------------------------------------------------
// wgmma.mma_async, A and B from shared memory (PTX ISA "wgmma.mma_async"):
//   wgmma.mma_async.sync.aligned.m64nNkK.f32.{f16,bf16}.{f16,bf16}  d, a-desc, b-desc, scale-d, 1, 1, trans-a, trans-b;
//   wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32              d, a-desc, b-desc, scale-d, 1, 1;
//   wgmma.mma_async.sync.aligned.m64nNk32.f32.{e4m3,e5m2}.{e4m3,e5m2} d, a-desc, b-desc, scale-d, 1, 1;
//   wgmma.mma_async.sync.aligned.m64nNk32.s32.{s8,u8}.{s8,u8}      d, a-desc, b-desc, scale-d;
// d is N/2 registers per thread. The instruction text must be a literal, so each (types, N) is
// one asm statement; the macros below write them all from one template:
//   operands: %0 A descriptor, %1 B descriptor, %2 scale-d (0: D = A*B, else D += A*B), all
//   three "+" so that their numbers do not depend on N, then the accumulators d[0..R-1] as
//   %3..%(R+2). KDL_WGMMA_D<R>(X) applies X to the numbers of d[1..R-1] (%4..%(R+2)).
// ---------------------------------------------------------------------------------------------
#define KDL_WGMMA_D4(X) X(4) X(5) X(6)
#define KDL_WGMMA_D8(X) KDL_WGMMA_D4(X) X(7) X(8) X(9) X(10)
#define KDL_WGMMA_D12(X) KDL_WGMMA_D8(X) X(11) X(12) X(13) X(14)
#define KDL_WGMMA_D16(X) KDL_WGMMA_D12(X) X(15) X(16) X(17) X(18)
#define KDL_WGMMA_D20(X) KDL_WGMMA_D16(X) X(19) X(20) X(21) X(22)
#define KDL_WGMMA_D24(X) KDL_WGMMA_D20(X) X(23) X(24) X(25) X(26)
#define KDL_WGMMA_D28(X) KDL_WGMMA_D24(X) X(27) X(28) X(29) X(30)
#define KDL_WGMMA_D32(X) KDL_WGMMA_D28(X) X(31) X(32) X(33) X(34)
#define KDL_WGMMA_D36(X) KDL_WGMMA_D32(X) X(35) X(36) X(37) X(38)
#define KDL_WGMMA_D40(X) KDL_WGMMA_D36(X) X(39) X(40) X(41) X(42)
#define KDL_WGMMA_D44(X) KDL_WGMMA_D40(X) X(43) X(44) X(45) X(46)
#define KDL_WGMMA_D48(X) KDL_WGMMA_D44(X) X(47) X(48) X(49) X(50)
#define KDL_WGMMA_D52(X) KDL_WGMMA_D48(X) X(51) X(52) X(53) X(54)
#define KDL_WGMMA_D56(X) KDL_WGMMA_D52(X) X(55) X(56) X(57) X(58)
#define KDL_WGMMA_D60(X) KDL_WGMMA_D56(X) X(59) X(60) X(61) X(62)
#define KDL_WGMMA_D64(X) KDL_WGMMA_D60(X) X(63) X(64) X(65) X(66)
#define KDL_WGMMA_D68(X) KDL_WGMMA_D64(X) X(67) X(68) X(69) X(70)
#define KDL_WGMMA_D72(X) KDL_WGMMA_D68(X) X(71) X(72) X(73) X(74)
#define KDL_WGMMA_D76(X) KDL_WGMMA_D72(X) X(75) X(76) X(77) X(78)
#define KDL_WGMMA_D80(X) KDL_WGMMA_D76(X) X(79) X(80) X(81) X(82)
#define KDL_WGMMA_D84(X) KDL_WGMMA_D80(X) X(83) X(84) X(85) X(86)
#define KDL_WGMMA_D88(X) KDL_WGMMA_D84(X) X(87) X(88) X(89) X(90)
#define KDL_WGMMA_D92(X) KDL_WGMMA_D88(X) X(91) X(92) X(93) X(94)
#define KDL_WGMMA_D96(X) KDL_WGMMA_D92(X) X(95) X(96) X(97) X(98)
#define KDL_WGMMA_D100(X) KDL_WGMMA_D96(X) X(99) X(100) X(101) X(102)
#define KDL_WGMMA_D104(X) KDL_WGMMA_D100(X) X(103) X(104) X(105) X(106)
#define KDL_WGMMA_D108(X) KDL_WGMMA_D104(X) X(107) X(108) X(109) X(110)
#define KDL_WGMMA_D112(X) KDL_WGMMA_D108(X) X(111) X(112) X(113) X(114)
#define KDL_WGMMA_D116(X) KDL_WGMMA_D112(X) X(115) X(116) X(117) X(118)
#define KDL_WGMMA_D120(X) KDL_WGMMA_D116(X) X(119) X(120) X(121) X(122)
#define KDL_WGMMA_D124(X) KDL_WGMMA_D120(X) X(123) X(124) X(125) X(126)
#define KDL_WGMMA_D128(X) KDL_WGMMA_D124(X) X(127) X(128) X(129) X(130)

#define KDL_WGMMA_OPERAND_NUMBER(i) ", %" #i
#define KDL_WGMMA_ACC_F32(i) , "+f"(d[i - 3])
#define KDL_WGMMA_ACC_S32(i) , "+r"(d[i - 3])

// One instruction: m64n<N>, R = N/2 accumulator registers, TYPES = "k<k>.<dtype>.<atype>.<btype>",
// TAIL = the operands after scale-d, ACC = F32 or S32.
#define KDL_WGMMA_ASM(N, R, TYPES, TAIL, ACC)                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %2, 0;\n"                                       \
               "wgmma.mma_async.sync.aligned.m64n" #N TYPES "\n"                                  \
               "{%3" KDL_WGMMA_D##R(KDL_WGMMA_OPERAND_NUMBER) "},\n%0, %1, p" TAIL ";\n}\n"     \
               : "+l"(desc_a), "+l"(desc_b), "+r"(scale_d) KDL_WGMMA_ACC_##ACC(3)                 \
                     KDL_WGMMA_D##R(KDL_WGMMA_ACC_##ACC))

#define KDL_WGMMA_IF_N(N, R, TYPES, TAIL, ACC) \
  if constexpr (kN == N) { KDL_WGMMA_ASM(N, R, TYPES, TAIL, ACC); }

// X(N, R, ...) for every N of the floating-point shapes (multiples of 8 up to 256) ...
#define KDL_WGMMA_FOR_EACH_N(X, ...) \
  X(8, 4, __VA_ARGS__) X(16, 8, __VA_ARGS__) X(24, 12, __VA_ARGS__) X(32, 16, __VA_ARGS__) X(40, 20, __VA_ARGS__) X(48, 24, __VA_ARGS__) X(56, 28, __VA_ARGS__) X(64, 32, __VA_ARGS__) \
  X(72, 36, __VA_ARGS__) X(80, 40, __VA_ARGS__) X(88, 44, __VA_ARGS__) X(96, 48, __VA_ARGS__) X(104, 52, __VA_ARGS__) X(112, 56, __VA_ARGS__) X(120, 60, __VA_ARGS__) X(128, 64, __VA_ARGS__) \
  X(136, 68, __VA_ARGS__) X(144, 72, __VA_ARGS__) X(152, 76, __VA_ARGS__) X(160, 80, __VA_ARGS__) X(168, 84, __VA_ARGS__) X(176, 88, __VA_ARGS__) X(184, 92, __VA_ARGS__) X(192, 96, __VA_ARGS__) \
  X(200, 100, __VA_ARGS__) X(208, 104, __VA_ARGS__) X(216, 108, __VA_ARGS__) X(224, 112, __VA_ARGS__) X(232, 116, __VA_ARGS__) X(240, 120, __VA_ARGS__) X(248, 124, __VA_ARGS__) X(256, 128, __VA_ARGS__)
// ... and of the integer ones (8, 16, 24, then multiples of 16 up to 256).
#define KDL_WGMMA_FOR_EACH_N_INT(X, ...) \
  X(8, 4, __VA_ARGS__) X(16, 8, __VA_ARGS__) X(24, 12, __VA_ARGS__) X(32, 16, __VA_ARGS__) X(48, 24, __VA_ARGS__) X(64, 32, __VA_ARGS__) \
  X(80, 40, __VA_ARGS__) X(96, 48, __VA_ARGS__) X(112, 56, __VA_ARGS__) X(128, 64, __VA_ARGS__) X(144, 72, __VA_ARGS__) X(160, 80, __VA_ARGS__) \
  X(176, 88, __VA_ARGS__) X(192, 96, __VA_ARGS__) X(208, 104, __VA_ARGS__) X(224, 112, __VA_ARGS__) X(240, 120, __VA_ARGS__) X(256, 128, __VA_ARGS__)

// f16/bf16: the transpose immediates are part of the instruction text (0 K-major, 1 MN-major).
#define KDL_WGMMA_16BIT(AB)                                                                                 \
  if constexpr (kTransA == 0 && kTransB == 0) {                                                           \
    KDL_WGMMA_FOR_EACH_N(KDL_WGMMA_IF_N, "k16.f32." AB "." AB, ", 1, 1, 0, 0", F32)                       \
  } else if constexpr (kTransA == 0 && kTransB == 1) {                                                    \
    KDL_WGMMA_FOR_EACH_N(KDL_WGMMA_IF_N, "k16.f32." AB "." AB, ", 1, 1, 0, 1", F32)                       \
  } else if constexpr (kTransA == 1 && kTransB == 0) {                                                    \
    KDL_WGMMA_FOR_EACH_N(KDL_WGMMA_IF_N, "k16.f32." AB "." AB, ", 1, 1, 1, 0", F32)                       \
  } else {                                                                                                \
    KDL_WGMMA_FOR_EACH_N(KDL_WGMMA_IF_N, "k16.f32." AB "." AB, ", 1, 1, 1, 1", F32)                       \
  }

namespace detail {
template <class T, class U>
inline constexpr bool kSame = std::is_same_v<T, U>;

// The asm statement of one (N, TA, TB, transposes); only the one matching branch is compiled.
template <int kN, class TA, class TB, int kTransA, int kTransB, class Acc>
__device__ __forceinline__ void wgmma_ss_asm(Acc (&d)[kN / 2], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
#if KDL_WGMMA_SM90A
  using e4m3 = __nv_fp8_e4m3;
  using e5m2 = __nv_fp8_e5m2;
  if constexpr (kSame<TA, half>) {
    KDL_WGMMA_16BIT("f16")
  } else if constexpr (kSame<TA, __nv_bfloat16>) {
    KDL_WGMMA_16BIT("bf16")
  } else if constexpr (kSame<TA, float>) {
    KDL_WGMMA_FOR_EACH_N(KDL_WGMMA_IF_N, "k8.f32.tf32.tf32", ", 1, 1", F32)
  } else if constexpr (kSame<TA, e4m3> && kSame<TB, e4m3>) {
    KDL_WGMMA_FOR_EACH_N(KDL_WGMMA_IF_N, "k32.f32.e4m3.e4m3", ", 1, 1", F32)
  } else if constexpr (kSame<TA, e4m3> && kSame<TB, e5m2>) {
    KDL_WGMMA_FOR_EACH_N(KDL_WGMMA_IF_N, "k32.f32.e4m3.e5m2", ", 1, 1", F32)
  } else if constexpr (kSame<TA, e5m2> && kSame<TB, e4m3>) {
    KDL_WGMMA_FOR_EACH_N(KDL_WGMMA_IF_N, "k32.f32.e5m2.e4m3", ", 1, 1", F32)
  } else if constexpr (kSame<TA, e5m2> && kSame<TB, e5m2>) {
    KDL_WGMMA_FOR_EACH_N(KDL_WGMMA_IF_N, "k32.f32.e5m2.e5m2", ", 1, 1", F32)
  } else if constexpr (kSame<TA, int8_t> && kSame<TB, int8_t>) {
    KDL_WGMMA_FOR_EACH_N_INT(KDL_WGMMA_IF_N, "k32.s32.s8.s8", "", S32)
  } else if constexpr (kSame<TA, int8_t> && kSame<TB, uint8_t>) {
    KDL_WGMMA_FOR_EACH_N_INT(KDL_WGMMA_IF_N, "k32.s32.s8.u8", "", S32)
  } else if constexpr (kSame<TA, uint8_t> && kSame<TB, int8_t>) {
    KDL_WGMMA_FOR_EACH_N_INT(KDL_WGMMA_IF_N, "k32.s32.u8.s8", "", S32)
  } else {
    static_assert(kSame<TA, uint8_t> && kSame<TB, uint8_t>);
    KDL_WGMMA_FOR_EACH_N_INT(KDL_WGMMA_IF_N, "k32.s32.u8.u8", "", S32)
  }
#else
  (void)d; (void)desc_a; (void)desc_b; (void)scale_d;
#if defined(__CUDA_ARCH__)
  __trap();  // built for a target without wgmma: fail loudly rather than return garbage
#endif
#endif
}
}  // namespace detail

// d (+)= A * B for one k-step (kWgmmaK<TA> elements of K): A 64 x k, B k x N, read through the
// descriptors, d the 64 x N accumulator fragment (acc_coord). accumulate == false
// zero-initialises (D = A*B): pass false on the first k-step of a tile instead of clearing the
// registers. Issue between wgmma_fence() and wgmma_commit_group(); the result is readable after
// wgmma_wait_group<...>(). MajorA/MajorB other than K exist for 16-bit types only.
template <int N, class TA, class TB, Major MajorA = Major::K, Major MajorB = Major::K>
__device__ __forceinline__ void wgmma_ss(wgmma_accum_t<TA, TB> (&d)[N / 2], SmemDesc a, SmemDesc b, bool accumulate) {
  constexpr WgmmaFamily kFamilyA = WgmmaOperand<TA>::kFamily, kFamilyB = WgmmaOperand<TB>::kFamily;
  static_assert(kFamilyA == kFamilyB, "wgmma: A and B are both f16, both bf16, both tf32, both fp8 (e4m3/e5m2) "
                                      "or both 8-bit integers (s8/u8)");
  static_assert((MajorA == Major::K && MajorB == Major::K) || sizeof(TA) == 2,
                "wgmma reads MN-major operands for f16 and bf16 only");
  static_assert(wgmma_n_supported<TA>(N), "wgmma m64nNk*: N is a multiple of 8 in [8, 256] (for s8/u8 above 32, "
                                          "a multiple of 16)");
  detail::wgmma_ss_asm<N, TA, TB, int(MajorA), int(MajorB)>(d, a.bits, b.bits, accumulate ? 1u : 0u);
}

// The 16-bit shorthand: A and B of type T, TransA / TransB 0 = K-major, 1 = MN-major.
template <int N, class T, int TransA = 0, int TransB = 0>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], SmemDesc a, SmemDesc b, bool accumulate) {
  static_assert(sizeof(T) == 2, "wgmma_ss<N, T, TransA, TransB> is the f16/bf16 form; use wgmma_ss<N, TA, TB, ...>");
  wgmma_ss<N, T, T, Major(TransA), Major(TransB)>(d, a, b, accumulate);
}

#undef KDL_WGMMA_16BIT
#undef KDL_WGMMA_FOR_EACH_N_INT
#undef KDL_WGMMA_FOR_EACH_N
#undef KDL_WGMMA_IF_N
#undef KDL_WGMMA_ASM
#undef KDL_WGMMA_ACC_S32
#undef KDL_WGMMA_ACC_F32
#undef KDL_WGMMA_OPERAND_NUMBER
#undef KDL_WGMMA_D4
#undef KDL_WGMMA_D8
#undef KDL_WGMMA_D12
#undef KDL_WGMMA_D16
#undef KDL_WGMMA_D20
#undef KDL_WGMMA_D24
#undef KDL_WGMMA_D28
#undef KDL_WGMMA_D32
#undef KDL_WGMMA_D36
#undef KDL_WGMMA_D40
#undef KDL_WGMMA_D44
#undef KDL_WGMMA_D48
#undef KDL_WGMMA_D52
#undef KDL_WGMMA_D56
#undef KDL_WGMMA_D60
#undef KDL_WGMMA_D64
#undef KDL_WGMMA_D68
#undef KDL_WGMMA_D72
#undef KDL_WGMMA_D76
#undef KDL_WGMMA_D80
#undef KDL_WGMMA_D84
#undef KDL_WGMMA_D88
#undef KDL_WGMMA_D92
#undef KDL_WGMMA_D96
#undef KDL_WGMMA_D100
#undef KDL_WGMMA_D104
#undef KDL_WGMMA_D108
#undef KDL_WGMMA_D112
#undef KDL_WGMMA_D116
#undef KDL_WGMMA_D120
#undef KDL_WGMMA_D124
#undef KDL_WGMMA_D128

}  // namespace sm90
}  // namespace kdl
