#!/usr/bin/env bash
# Builds (unless prebuilt binaries are given in $KDL_PREBUILT) and runs the standalone sm80
# GEMM correctness test and the cuBLASLt benchmark. Logs go to $OUT when set.
set -u -o pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
NVCC="${NVCC:-nvcc}"
OUTDIR="${OUT:-$HERE/out}"
BIN="${KDL_PREBUILT:-$OUTDIR/bin}"
mkdir -p "$OUTDIR" "$BIN"
FLAGS=(-O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I"$ROOT/include" -Xptxas -v)
rc=0
if [ -z "${KDL_PREBUILT:-}" ]; then
  ( time "$NVCC" "${FLAGS[@]}" -o "$BIN/test_gemm_sm80" "$HERE/test_gemm_sm80.cu" ) > "$OUTDIR/build_test.log" 2>&1 &
  ( time "$NVCC" "${FLAGS[@]}" -o "$BIN/bench_gemm_sm80" "$HERE/bench_gemm_sm80.cu" -lcublasLt ) > "$OUTDIR/build_bench.log" 2>&1 &
  wait
fi
"$BIN/test_gemm_sm80" 2>&1 | tee "$OUTDIR/test.log" || rc=1
"$BIN/bench_gemm_sm80" "$@" 2>&1 | tee "$OUTDIR/bench.log" || rc=1
exit $rc
