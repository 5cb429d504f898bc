#!/usr/bin/env bash
# Builds (unless prebuilt binaries are given in $KDL_PREBUILT) and runs the standalone wgmma test
# (kdl/wgmma_sm90.cuh on one warpgroup) and test_wgmma_patch (a conv tap's A read out of a halo'd
# pixel patch through a shifted descriptor, docs/perf-notes.md v42) and test_tma_patch (an images-innermost patch
# loaded by one TMA per channel block, its taps read at atom offsets, D stored through a permuted map: v46). The build fails on ptxas spills and on "wgmma
# serialized" (C7515); the header is also compiled for sm_80 to show that it stays includable
# there. It also builds and runs wgmma_rate (the consumer loops' cycles per k-tile in isolation, docs/perf-notes.md v53 and
# v52: a probe with no pass / fail on its figures; its build fails on serialized wgmma like the test's).
# KDL_BUILD_ONLY=1 builds without running (for building here and running on the GPU).
set -u -o pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
NVCC="${NVCC:-nvcc}"
OUTDIR="${OUT:-$HERE/out}"
BIN="${KDL_PREBUILT:-$OUTDIR/bin}"
mkdir -p "$OUTDIR" "$BIN"
if [ -z "${KDL_PREBUILT:-}" ]; then
  "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -I"$ROOT/include" \
    -o "$BIN/test_wgmma_sm90" "$HERE/test_wgmma_sm90.cu" > "$OUTDIR/build_wgmma.log" 2>&1 || { cat "$OUTDIR/build_wgmma.log"; exit 1; }
  grep -E "ptxas (info|warning)" "$OUTDIR/build_wgmma.log" | grep -E "Used|spill|warning" | sed 's/^/  /'
  if grep -E "[1-9][0-9]* bytes spill (stores|loads)" "$OUTDIR/build_wgmma.log" >/dev/null; then echo "FAIL: ptxas spills"; exit 1; fi
  if grep -E "Potential Performance Loss|instructions are serialized|setmaxnreg. ignored" "$OUTDIR/build_wgmma.log" >/dev/null; then echo "FAIL: ptxas serialized wgmma / ignored setmaxnreg"; exit 1; fi
  "$NVCC" -std=c++17 -c -gencode=arch=compute_80,code=sm_80 -I"$ROOT/include" -o /dev/null "$HERE/test_wgmma_sm90.cu" \
    || { echo "FAIL: header does not compile for sm_80"; exit 1; }
  "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -I"$ROOT/include" \
    -I"$HERE" -o "$BIN/wgmma_rate" "$HERE/wgmma_rate.cu" > "$OUTDIR/build_rate.log" 2>&1 || { cat "$OUTDIR/build_rate.log"; exit 1; }
  if grep -E "Potential Performance Loss|instructions are serialized" "$OUTDIR/build_rate.log" >/dev/null; then
    echo "FAIL: ptxas serialized wgmma in wgmma_rate (its figures would be the serialization's)"; exit 1
  fi
  for t in test_wgmma_patch test_tma_patch; do  # the probes: built plain, their log build_<name>.log
    log="$OUTDIR/build_${t#test_}.log"
    "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I"$ROOT/include" -I"$HERE" \
      -o "$BIN/$t" "$HERE/$t.cu" > "$log" 2>&1 || { cat "$log"; exit 1; }
  done
  echo "build OK: $BIN/test_wgmma_sm90 $BIN/test_wgmma_patch $BIN/test_tma_patch $BIN/wgmma_rate"
fi
[ -n "${KDL_BUILD_ONLY:-}" ] && exit 0
rc=0
"$BIN/test_wgmma_sm90" 2>&1 | tee "$OUTDIR/test_wgmma.log" || rc=1
for t in test_wgmma_patch test_tma_patch wgmma_rate; do "$BIN/$t" 2>&1 | tee "$OUTDIR/$t.log" || rc=1; done
exit $rc
