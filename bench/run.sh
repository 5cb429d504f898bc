#!/usr/bin/env bash
# The benchmark, run ON THE GPU MACHINE from the files tests/gpu/prepare.sh carried in .carry/gpu:
# every kernel of bench/specs/bench.kdl vs cuBLASLt on the shapes of ANCHORS.md. Writes
# $OUT/bench.log, $OUT/bench.csv and $OUT/bench.png (OUT defaults to out/bench). Extra arguments go
# to kdl_bench (--shape MxNxK, --batches N).
set -uo pipefail
cd "$(dirname "$0")/.."
CARRY=.carry/gpu
OUT=${OUT:-out/bench}
mkdir -p "$OUT"
if [ -f "$CARRY/build-kernels-there" ] && [ ! -s "$CARRY/tests.list" ]; then
  echo "== building the kernel libraries on this machine (tests/gpu/build-kernels.sh)"
  LD_LIBRARY_PATH="$PWD/$CARRY/bin:${LD_LIBRARY_PATH:-}" tests/gpu/build-kernels.sh "$CARRY/bin/kdlc" /tmp/kdl-gpu-kernels \
    >"$OUT/build-kernels.log" 2>&1 || { echo "kernel build failed: $OUT/build-kernels.log"; grep "BUILD FAILED" "$OUT/build-kernels.log"; }
fi
if [ ! -s "$CARRY/bench.list" ]; then echo "no $CARRY/bench.list: run tests/gpu/prepare.sh first (on the build machine)"; exit 2; fi
export LD_LIBRARY_PATH="$PWD/$CARRY/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
read -r spec lib <"$CARRY/bench.list"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>/dev/null | tee "$OUT/bench.log"
"$CARRY/bin/kdl_bench" --csv "$OUT/bench.csv" "$@" "$CARRY/$spec" "$CARRY/$lib" 2>&1 | tee -a "$OUT/bench.log"
rc=${PIPESTATUS[0]}
python3 bench/plot.py "$OUT/bench.csv" "$OUT/bench.png" || echo "plot failed"
exit "$rc"
