// kdl/copy_sm80.cuh -- cp.async (global -> shared) and ldmatrix wrappers (sm_80+).
#pragma once
#include <stdint.h>

namespace kdl {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Copies Bytes (4, 8 or 16) from gmem to smem; only src_bytes (0..Bytes) are read,
// the rest of the destination is zero-filled. gmem must be Bytes-aligned and valid
// even when src_bytes == 0.
template <int Bytes>
__device__ __forceinline__ void cp_async(uint32_t smem, const void* gmem, int src_bytes) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async size must be 4, 8 or 16 bytes");
  if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(src_bytes));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem), "l"(gmem), "n"(Bytes), "r"(src_bytes));
  }
}

// All-or-nothing variant: copies Bytes when `valid`, else zero-fills (ignore-src predicate;
// no src-size register, cheaper in the main loop). gmem must be a valid-looking address.
template <int Bytes>
__device__ __forceinline__ void cp_async_pred(uint32_t smem, const void* gmem, bool valid) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async size must be 4, 8 or 16 bytes");
  const int ignore = valid ? 0 : 1;
  if constexpr (Bytes == 16) {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n cp.async.cg.shared.global [%0], [%1], 16, p;\n}\n"
                 ::"r"(smem), "l"(gmem), "r"(ignore));
  } else {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %3, 0;\n cp.async.ca.shared.global [%0], [%1], %2, p;\n}\n"
                 ::"r"(smem), "l"(gmem), "n"(Bytes), "r"(ignore));
  }
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem));
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], uint32_t smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(smem));
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], uint32_t smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(smem));
}

}  // namespace kdl
