#!/usr/bin/env bash
# The multistage kernels' 8-warp forms on the GPU. A GEMM tile on 4 warps of 128 accumulators per thread carries
# an 8-warp form in its NAME.cu that `kdlc build` compiles only where ptxas spills every try of the 4-warp kernel
# (its last try, docs/building.md; `kdlc list --plan`: more warps) -- rarely, so the suite's own builds never run
# them. Here each spec is built with KDL_NVCC_FLAGS=-DKDL_MULTISTAGE_MORE_WARPS (every form compiled as if its
# 4-warp kernel had spilled; the other kernels unchanged) and kdl_gpu_test checks every kernel against the
# reference like any spec (tests/gpu/random_run.sh's replay: fresh random inputs, sizes off the tile).
#   $OUT/<spec>/random_tests.log per spec; exit 1 on any failure.
# Usage (GPU machine, after KDL_KERNELS_ON_GPU_MACHINE=1 tests/gpu/prepare.sh here): tests/gpu/more_warps_run.sh [SPEC...]
# (default: tests/nvcc/more_warps_form.kdl, tests/gpu/specs/matrix.kdl, tests/gpu/specs/sm90a_fallback.kdl)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out/more_warps}
if [ $# -gt 0 ]; then SPECS=("$@")
else SPECS=(tests/nvcc/more_warps_form.kdl tests/gpu/specs/matrix.kdl tests/gpu/specs/sm90a_fallback.kdl); fi
export KDL_NVCC_FLAGS="-DKDL_MULTISTAGE_MORE_WARPS ${KDL_NVCC_FLAGS:-}"
rc=0
for s in "${SPECS[@]}"; do
  echo "more_warps: $s ($(./.carry/gpu/bin/kdlc list --plan "$s" 2>/dev/null | grep -c "more warps\|if ptxas spills") kernels with an 8-warp form)"
  OUT="$OUT/$(basename "$s" .kdl)" tests/gpu/random_run.sh "$s" || rc=1
done
exit $rc
