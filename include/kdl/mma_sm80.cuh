// kdl/mma_sm80.cuh -- warp-level mma.sync wrappers (sm_80+), one per operand type.
//   MmaOp<half>          : m16n8k16 f16 x f16 -> f32
//   MmaOp<__nv_bfloat16> : m16n8k16 bf16 x bf16 -> f32
//   MmaOp<float>         : m16n8k8 tf32 x tf32 -> f32 (operands converted with cvt.rna)
//   MmaOp<int8_t>        : m16n8k32 s8 x s8 -> s32
// Every op covers 32 bytes of K per row, so A fragments are 16 rows x 2 16-byte
// chunks and B fragments 8 rows x 2 chunks for all types (ldmatrix friendly).
#pragma once
#include <stdint.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "kdl/numeric.cuh"

namespace kdl {

template <class Element> struct MmaOp;

template <> struct MmaOp<half> {
  using Acc = float;
  static constexpr int kK = 16;
  static constexpr bool kNeedsTf32 = false;
  __device__ __forceinline__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

template <> struct MmaOp<__nv_bfloat16> {
  using Acc = float;
  static constexpr int kK = 16;
  static constexpr bool kNeedsTf32 = false;
  __device__ __forceinline__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

template <> struct MmaOp<float> {
  using Acc = float;
  static constexpr int kK = 8;
  static constexpr bool kNeedsTf32 = true;
  __device__ __forceinline__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

template <> struct MmaOp<int8_t> {
  using Acc = int32_t;
  static constexpr int kK = 32;
  static constexpr bool kNeedsTf32 = false;
  __device__ __forceinline__ static void mma(int32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

}  // namespace kdl
