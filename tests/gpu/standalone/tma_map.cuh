// A bf16 tensor map for the standalone probes (wgmma_rate, conv_swap_proto): dims and box innermost first, the byte
// strides of dimensions 1 .. rank - 1, the 128-byte swizzle by default (the conv kernels' kind). Exits on failure.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>

#include <cstdio>
#include <cstdlib>

#include "kdl/runtime.h"

inline CUtensorMap encode_map(const char* what, __nv_bfloat16* base, int rank, const cuuint64_t* dims,
                              const cuuint64_t* strides, const cuuint32_t* box,
                              CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B) {
  const cuuint32_t es[4] = {1, 1, 1, 1};
  CUtensorMap m;
  const auto& api = kdl::driver_api();
  if (api.cuTensorMapEncodeTiled == nullptr ||
      api.cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, base, dims, strides, box, es,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    fprintf(stderr, "encoding %s's tensor map failed\n", what);
    exit(1);
  }
  return m;
}
