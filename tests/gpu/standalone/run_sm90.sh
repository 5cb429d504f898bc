#!/usr/bin/env bash
# Builds (unless prebuilt binaries are given in $KDL_PREBUILT) and runs the standalone sm90a GEMM
# test and benchmark (kdl/gemm_sm90.cuh). Built with -gencode=arch=compute_90a,code=sm_90a; the
# build fails on ptxas spills and on any "Potential Performance Loss" (setmaxnreg ignored, C7508/C7505;
# wgmma serialized, whatever the reason: C7514 accumulator reads while in flight, C7515, C7518/C7520
# pipeline steps under a branch, C7511 too few registers).
# KDL_BUILD_ONLY=1 builds without running (build here, run on the GPU). Bench args: "$@".
set -u -o pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
NVCC="${NVCC:-nvcc}"
OUTDIR="${OUT:-$HERE/out}"
BIN="${KDL_PREBUILT:-$OUTDIR/bin}"
mkdir -p "$OUTDIR" "$BIN"
if [ -z "${KDL_PREBUILT:-}" ]; then
  for t in test_gemm_sm90 bench_gemm_sm90; do
    log="$OUTDIR/build_$t.log"
    "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -I"$ROOT/include" -I"$HERE" \
      -o "$BIN/$t" "$HERE/$t.cu" -lcublasLt > "$log" 2>&1 || { cat "$log"; echo "FAIL: build of $t"; exit 1; }
    echo "$t:"
    grep -E "ptxas (info|warning)" "$log" | grep -E "Used|spill|warning" | sort | uniq -c | sed 's/^/  /'
    if grep -E "[1-9][0-9]* bytes spill (stores|loads)" "$log" >/dev/null; then echo "FAIL: ptxas spills in $t"; exit 1; fi
    if grep -E "Potential Performance Loss|instructions are serialized|setmaxnreg. ignored" "$log" >/dev/null; then echo "FAIL: ptxas serialized wgmma / ignored setmaxnreg in $t"; exit 1; fi
  done
  echo "build OK: $BIN"
fi
[ -n "${KDL_BUILD_ONLY:-}" ] && exit 0
rc=0
"$BIN/test_gemm_sm90" 2>&1 | tee "$OUTDIR/test_gemm_sm90.log" || rc=1
"$BIN/bench_gemm_sm90" "$@" 2>&1 | tee "$OUTDIR/bench_gemm_sm90.log" || rc=1
exit $rc
