#!/usr/bin/env bash
# The benchmark, run ON THE GPU MACHINE from the files tests/gpu/prepare.sh carried in .carry/gpu:
# every kernel of the bench specs (bench/specs/*.kdl) vs cuBLASLt in one process (kdl_bench): bf16 on
# the shapes of ANCHORS.md, e4m3 with per-tensor scales, e4m3 with block scales. Writes $OUT/bench.log,
# $OUT/bench.md (the table, markdown), $OUT/bench.csv and $OUT/bench.png (OUT defaults to out/bench), and
# $OUT/bench_compare.txt: each kernel's paired ratio against the run the README's table came from (bench/compare.py).
# Extra arguments go to kdl_bench (--shape MxNxK, --mode bf16|e4m3|e4m3_block, --batches N).
# KDL_BENCH_SPECS=PATTERN: only the bench specs whose file name matches (grep -E), e.g. sm90a.
set -uo pipefail
cd "$(dirname "$0")/.."
CARRY=.carry/gpu
OUT=${OUT:-out/bench}
mkdir -p "$OUT"
if [ -f "$CARRY/build-kernels-there" ] && [ ! -s "$CARRY/tests.list" ] && [ ! -s "$CARRY/bench.list" ]; then
  echo "== building the kernel libraries on this machine (tests/gpu/build-kernels.sh)"
  LD_LIBRARY_PATH="$PWD/$CARRY/bin:${LD_LIBRARY_PATH:-}" tests/gpu/build-kernels.sh "$CARRY/bin/kdlc" /tmp/kdl-gpu-kernels \
    >"$OUT/build-kernels.log" 2>&1 || { echo "kernel build failed: $OUT/build-kernels.log"; grep "BUILD FAILED" "$OUT/build-kernels.log"; }
fi
if [ ! -s "$CARRY/bench.list" ]; then echo "no $CARRY/bench.list: run tests/gpu/prepare.sh first (on the build machine)"; exit 2; fi
export LD_LIBRARY_PATH="$PWD/$CARRY/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
args=()
while read -r spec lib; do
  [ -z "$spec" ] && continue
  if [ -n "${KDL_BENCH_SPECS:-}" ] && ! basename "$spec" | grep -Eq "$KDL_BENCH_SPECS"; then continue; fi
  args+=("$CARRY/$spec" "$CARRY/$lib")
done <"$CARRY/bench.list"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>/dev/null | tee "$OUT/bench.log"
# Bench kernels kdlc does not generate yet are listed, not silently missing from the table.
grep -P "^specs/bench/" "$CARRY/not-built.list" 2>/dev/null | sed 's/^/NOT BUILT /' | tee -a "$OUT/bench.log"
if [ ${#args[@]} -eq 0 ]; then echo "no bench library matches" | tee -a "$OUT/bench.log"; exit 2; fi
"$CARRY/bin/kdl_bench" --csv "$OUT/bench.csv" --markdown "$OUT/bench.md" "$@" "${args[@]}" 2>&1 | tee -a "$OUT/bench.log"
rc=${PIPESTATUS[0]}
python3 bench/plot.py "$OUT/bench.csv" "$OUT/bench.png" || echo "plot failed"
# What moved since the README's table, kernel by kernel (bench/compare.py): $OUT/bench_compare.txt.
python3 bench/compare.py "$OUT/bench.csv" 2>&1 | tee "$OUT/bench_compare.txt"
exit "$rc"
