#!/usr/bin/env bash
# Builds one library per carried spec (.carry/gpu/specs/*/*.kdl) with `kdlc build` into .carry/gpu/libs/
# and writes tests.list / bench.list ("SPEC LIB" lines). Runs on the development machine (called by
# tests/gpu/prepare.sh) or on the GPU machine, whose 16 cores build much faster (tests/gpu/run.sh
# and bench/run.sh call it there when prepare.sh ran with KDL_KERNELS_ON_GPU_MACHINE=1).
# Usage: tests/gpu/build-kernels.sh KDLC WORK_DIR [JOBS]      Exit 1 if a matrix or bench spec fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
KDLC=$1
WORK=$2
JOBS=${3:-$(nproc 2>/dev/null || echo 2)}
CARRY=.carry/gpu
export PATH="$PATH:/usr/local/cuda/bin"
# kdlc finds the device templates through KDL_INCLUDE_DIR when it does not run from a build tree.
export KDL_INCLUDE_DIR=${KDL_INCLUDE_DIR:-$PWD/include}
rm -rf "$CARRY/libs"
mkdir -p "$CARRY/libs" "$WORK"
: >"$CARRY/tests.list"
: >"$CARRY/bench.list"
: >"$CARRY/prepare.log"
status=0
for spec in "$CARRY"/specs/*/*.kdl; do
  group=$(basename "$(dirname "$spec")")
  stem=$(basename "$spec" .kdl)
  out="$WORK/$group/$stem"
  echo "== kdlc build $spec"
  start=$(date +%s)
  mkdir -p "$(dirname "$out")"
  if "$KDLC" build "$spec" -o "$out" -j "$JOBS" >"$out.log" 2>&1; then
    mkdir -p "$CARRY/libs/$group"
    cp "$out/lib$stem.so" "$CARRY/libs/$group/"
    strip --strip-unneeded "$CARRY/libs/$group/lib$stem.so" 2>/dev/null || true
    rel_spec=${spec#"$CARRY/"}
    rel_lib="libs/$group/lib$stem.so"
    if [ "$group" = bench ]; then echo "$rel_spec $rel_lib" >>"$CARRY/bench.list"; else echo "$rel_spec $rel_lib" >>"$CARRY/tests.list"; fi
    echo "built $spec in $(( $(date +%s) - start )) s" | tee -a "$CARRY/prepare.log"
  else
    echo "BUILD FAILED: $spec (log: $out.log)" | tee -a "$CARRY/prepare.log"
    tail -n 20 "$out.log" || true
    case "$group" in matrix|bench) status=1 ;; esac
  fi
done
exit $status
