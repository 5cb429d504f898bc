// kdl/wgmma_sm90.cuh -- warpgroup MMA (wgmma) building blocks for sm_90a, namespace kdl::sm90.
//
// The pieces a Hopper mainloop is written in, each small and named after what it is:
//   sw128_byte_offset        where element (row, byte) of a 128B-swizzled operand tile lives
//   SmemDesc / make_desc_*   the 64-bit shared-memory matrix descriptor wgmma reads A and B through
//   wgmma_fence, wgmma_commit_group, wgmma_wait_group<N>, warpgroup_fence_acc
//   wgmma_ss<N, T>           D(64xN, f32) (+)= A(64x16) * B(16xN), both operands in shared memory
//   wgmma_ss_f8<N, TA, TB>   the same for 8-bit floats (e4m3/e5m2, mixed): A(64x32) * B(32xN), K-major
//   setmaxnreg_inc/dec<R>    hand registers between producer and consumer warpgroups
//   acc_coord(thread, r)     which (row, col) of the 64xN tile accumulator register r holds
//
// Operand tiles (16-bit types, 128-byte swizzle; exactly what TMA's CU_TENSOR_MAP_SWIZZLE_128B
// writes for a box whose inner extent is 128 bytes = 64 elements):
//   K-major  (A as 64 x K row-major, B as N x K "col-major"): the tile is cut along K into blocks
//            of 64 elements; block kb holds rows x 128 B, row r at r*128, the 16-byte chunk c of
//            the row stored at chunk c ^ (r % 8). Eight rows (1024 B) are one swizzle atom.
//   MN-major (A as K x 64 col-major, B as K x N row-major): the same picture with the roles
//            swapped: cut along MN into blocks of 64 elements; block b holds K rows x 128 B.
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
// Shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format" for wgmma)
//   bits  0-13  start address >> 4        (shared-window address, 16-byte aligned)
//   bits 16-29  leading-dimension byte offset >> 4   (LBO)
//   bits 32-45  stride-dimension  byte offset >> 4   (SBO)
//   bits 49-51  base offset (0: every swizzle atom starts on a 1024-byte boundary)
//   bits 62-63  swizzle mode: 0 none, 1 128B, 2 64B, 3 32B
// With the 128-byte swizzle:
//   K-major:  SBO = 1024 (from one 8-row group to the next); LBO unused (the ISA assumes 1).
//             One k16 step of a 16-bit type is 32 bytes inside the 128-byte row: the k-th step
//             (k16 = 0..3 within a 64-element block) adds 32*k16 bytes to the start address,
//             and the hardware applies the XOR to the final address, so an unaligned start
//             inside the atom is right. The next 64-element block is rows*128 bytes further.
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

// Descriptor for the k16-th step (16 elements of K) of a K-major tile of `rows` rows, 16-bit T.
template <class T>
__host__ __device__ constexpr SmemDesc make_desc_kmajor_sw128(uint32_t tile_addr, int rows, int k16) {
  static_assert(sizeof(T) == 2, "k16 steps of 16-bit operands");
  return make_smem_desc(tile_addr + sw128_byte_offset(0, k16 * 16 * int(sizeof(T)), rows), 16, kSwizzleAtomBytes);
}

// Descriptor for the k16-th step of an MN-major tile of `k_rows` rows of K (16-bit T only:
// wgmma reads other types K-major only).
template <class T>
__host__ __device__ constexpr SmemDesc make_desc_mnmajor_sw128(uint32_t tile_addr, int k_rows, int k16) {
  static_assert(sizeof(T) == 2, "MN-major operands exist for 16-bit types only");
  return make_smem_desc(tile_addr + uint32_t(k16) * 16 * kSwizzleBytes, uint32_t(k_rows) * kSwizzleBytes,
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

template <int R>
__device__ __forceinline__ void warpgroup_fence_acc(float (&d)[R]) {
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
// Accumulator fragment of wgmma.m64nNk16 with f32 D (PTX ISA, "WGMMA .m64nNk16 register fragment
// layout for accumulator matrix D"): N/2 registers per thread of the 128-thread warpgroup.
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
  static_assert(N % 8 == 0 && N >= 8 && N <= 256, "wgmma m64nNk16: N is a multiple of 8 in [8, 256]");
  static constexpr int kRegs = N / 2;  // f32 registers per thread
};

// ---------------------------------------------------------------------------------------------
// wgmma.mma_async m64nNk16, f32 accumulation, A and B from shared memory (descriptors).
// TransA / TransB: 0 = K-major, 1 = MN-major (16-bit types only).
// ---------------------------------------------------------------------------------------------
// m64n64k16: 32 f32 accumulators per thread (%0..%31); %32 A descriptor, %33 B descriptor,
// %34 scale-d (0: D = A*B, else D += A*B), %35/%36 transpose A/B (0 K-major, 1 MN-major).
#define KDL_WGMMA_M64N64K16_SS(TYPE)                                                                \
  asm volatile(                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                  \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE "\n"                              \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,\n"                    \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31},\n"          \
      "%32, %33, p, 1, 1, %35, %36;\n}\n"                                                           \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),\
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),\
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),\
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])\
    : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB))

// m64n128k16: 64 f32 accumulators per thread (%0..%63); %64 A descriptor, %65 B descriptor,
// %66 scale-d (0: D = A*B, else D += A*B), %67/%68 transpose A/B (0 K-major, 1 MN-major).
#define KDL_WGMMA_M64N128K16_SS(TYPE)                                                               \
  asm volatile(                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                  \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPE "." TYPE "\n"                             \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,\n"                    \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,\n"           \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,\n"           \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63},\n"          \
      "%64, %65, p, 1, 1, %67, %68;\n}\n"                                                           \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),\
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),\
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),\
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),\
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),\
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),\
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),\
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])\
    : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB))

// m64n256k16: 128 f32 accumulators per thread (%0..%127); %128 A descriptor, %129 B descriptor,
// %130 scale-d (0: D = A*B, else D += A*B), %131/%132 transpose A/B (0 K-major, 1 MN-major).
#define KDL_WGMMA_M64N256K16_SS(TYPE)                                                               \
  asm volatile(                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                                 \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPE "." TYPE "\n"                             \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,\n"                    \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,\n"           \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,\n"           \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,\n"           \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,\n"           \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,\n"           \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,\n"\
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127},\n"\
      "%128, %129, p, 1, 1, %131, %132;\n}\n"                                                       \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),\
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),\
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),\
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),\
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),\
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),\
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),\
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),\
      "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),\
      "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),\
      "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),\
      "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),\
      "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),\
      "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),\
      "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),\
      "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])\
    : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(TransA), "n"(TransB))

template <class T> struct WgmmaTypeIs;
template <> struct WgmmaTypeIs<__nv_bfloat16> { static constexpr bool kBf16 = true; };
template <> struct WgmmaTypeIs<half> { static constexpr bool kBf16 = false; };

// d (+)= A * B for one k16 step. accumulate == false zero-initialises (D = A*B): pass false on
// the first k-step of a tile instead of clearing the registers. Issue between wgmma_fence() and
// wgmma_commit_group(); the result is readable after wgmma_wait_group<...>().
template <int N, class T, int TransA = 0, int TransB = 0>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], SmemDesc a, SmemDesc b, bool accumulate) {
  static_assert(N == 64 || N == 128 || N == 256, "wgmma_ss is instantiated for N in {64, 128, 256}");
  constexpr bool kBf16 = WgmmaTypeIs<T>::kBf16;  // f16 or bf16 only
#if KDL_WGMMA_SM90A
  const uint64_t desc_a = a.bits, desc_b = b.bits;
  const uint32_t scale_d = accumulate ? 1u : 0u;
  if constexpr (N == 64) {
    if constexpr (kBf16) KDL_WGMMA_M64N64K16_SS("bf16"); else KDL_WGMMA_M64N64K16_SS("f16");
  } else if constexpr (N == 128) {
    if constexpr (kBf16) KDL_WGMMA_M64N128K16_SS("bf16"); else KDL_WGMMA_M64N128K16_SS("f16");
  } else {
    if constexpr (kBf16) KDL_WGMMA_M64N256K16_SS("bf16"); else KDL_WGMMA_M64N256K16_SS("f16");
  }
#else
  (void)d; (void)a; (void)b; (void)accumulate; (void)kBf16;
#if defined(__CUDA_ARCH__)
  __trap();  // built for a target without wgmma: fail loudly rather than return garbage
#endif
#endif
}

// m64n64k32: 32 f32 accumulators per thread (%0..%31); %32 A descriptor, %33 B descriptor,
// %34 scale-d (0: D = A*B, else D += A*B). No transpose operands: 8-bit types are K-major only.
#define KDL_WGMMA_M64N64K32_SS_F8(TYPES)                                                            \
  asm volatile(                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                 \
      "wgmma.mma_async.sync.aligned.m64n64k32.f32." TYPES "\n"                                     \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,\n"                    \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31},\n"                                   \
      "%32, %33, p, 1, 1;\n}\n"                                                                  \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),\
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),\
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),\
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])\
    : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// m64n128k32: 64 f32 accumulators per thread (%0..%63); %64 A descriptor, %65 B descriptor,
// %66 scale-d (0: D = A*B, else D += A*B). No transpose operands: 8-bit types are K-major only.
#define KDL_WGMMA_M64N128K32_SS_F8(TYPES)                                                            \
  asm volatile(                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                                 \
      "wgmma.mma_async.sync.aligned.m64n128k32.f32." TYPES "\n"                                     \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,\n"                    \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,\n"                    \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,\n"                    \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63},\n"                                   \
      "%64, %65, p, 1, 1;\n}\n"                                                                  \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),\
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),\
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),\
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),\
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),\
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),\
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),\
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])\
    : "l"(desc_a), "l"(desc_b), "r"(scale_d))

// m64n256k32: 128 f32 accumulators per thread (%0..%127); %128 A descriptor, %129 B descriptor,
// %130 scale-d (0: D = A*B, else D += A*B). No transpose operands: 8-bit types are K-major only.
#define KDL_WGMMA_M64N256K32_SS_F8(TYPES)                                                            \
  asm volatile(                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                                 \
      "wgmma.mma_async.sync.aligned.m64n256k32.f32." TYPES "\n"                                     \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,\n"                    \
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,\n"                    \
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,\n"                    \
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,\n"                    \
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,\n"                    \
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,\n"                    \
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,\n"                    \
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127},\n"                                   \
      "%128, %129, p, 1, 1;\n}\n"                                                                  \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),\
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),\
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),\
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),\
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),\
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),\
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),\
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),\
      "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),\
      "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),\
      "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),\
      "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),\
      "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),\
      "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),\
      "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),\
      "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])\
    : "l"(desc_a), "l"(desc_b), "r"(scale_d))

template <class T> struct WgmmaF8Name;
template <> struct WgmmaF8Name<__nv_fp8_e4m3> { static constexpr bool kE4m3 = true; };
template <> struct WgmmaF8Name<__nv_fp8_e5m2> { static constexpr bool kE4m3 = false; };

// d (+)= A * B for one k32 step of 8-bit floating-point operands (e4m3 / e5m2, mixed allowed), both
// K-major in shared memory: 32 bytes of K, like a k16 step of a 16-bit type. Same contract as
// wgmma_ss (accumulate == false: D = A*B).
template <int N, class TA, class TB>
__device__ __forceinline__ void wgmma_ss_f8(float (&d)[N / 2], SmemDesc a, SmemDesc b, bool accumulate) {
  static_assert(N == 64 || N == 128 || N == 256, "wgmma_ss_f8 is instantiated for N in {64, 128, 256}");
  constexpr bool kA4 = WgmmaF8Name<TA>::kE4m3, kB4 = WgmmaF8Name<TB>::kE4m3;
#if KDL_WGMMA_SM90A
  const uint64_t desc_a = a.bits, desc_b = b.bits;
  const uint32_t scale_d = accumulate ? 1u : 0u;
#define KDL_WGMMA_F8_DISPATCH(M)                          \
  if constexpr (kA4 && kB4) M("e4m3.e4m3");                \
  else if constexpr (kA4 && !kB4) M("e4m3.e5m2");          \
  else if constexpr (!kA4 && kB4) M("e5m2.e4m3");          \
  else M("e5m2.e5m2")
  if constexpr (N == 64) {
    KDL_WGMMA_F8_DISPATCH(KDL_WGMMA_M64N64K32_SS_F8);
  } else if constexpr (N == 128) {
    KDL_WGMMA_F8_DISPATCH(KDL_WGMMA_M64N128K32_SS_F8);
  } else {
    KDL_WGMMA_F8_DISPATCH(KDL_WGMMA_M64N256K32_SS_F8);
  }
#undef KDL_WGMMA_F8_DISPATCH
#else
  (void)d; (void)a; (void)b; (void)accumulate; (void)kA4; (void)kB4;
#if defined(__CUDA_ARCH__)
  __trap();  // built for a target without wgmma: fail loudly rather than return garbage
#endif
#endif
}

#undef KDL_WGMMA_M64N64K32_SS_F8
#undef KDL_WGMMA_M64N128K32_SS_F8
#undef KDL_WGMMA_M64N256K32_SS_F8

#undef KDL_WGMMA_M64N64K16_SS
#undef KDL_WGMMA_M64N128K16_SS
#undef KDL_WGMMA_M64N256K16_SS

}  // namespace sm90
}  // namespace kdl
