#!/usr/bin/env bash
# The conv benchmark (bench/conv_bench.py: the kernels of bench/specs/conv.kdl beside cuDNN through PyTorch), ON
# THE GPU MACHINE from the files tests/gpu/prepare.sh carried in .carry/gpu. Writes $OUT/conv_bench.{log,md,csv,json}
# and conv_bench_compare.txt (each kernel's paired ratio against the README's conv table's run: bench/compare.py)
# (OUT defaults to out/bench). Extra arguments go to the script (--case SUBSTRING, --runs N, --iters N).
# Env: PYTHON (python3).
set -uo pipefail
cd "$(dirname "$0")/.."
CARRY=.carry/gpu
OUT=${OUT:-out/bench}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
if [ -f "$CARRY/build-kernels-there" ] && [ ! -s "$CARRY/tests.list" ] && [ ! -s "$CARRY/bench.list" ]; then
  echo "== building the kernel libraries on this machine (tests/gpu/build-kernels.sh)"
  LD_LIBRARY_PATH="$PWD/$CARRY/bin:${LD_LIBRARY_PATH:-}" tests/gpu/build-kernels.sh "$CARRY/bin/kdlc" /tmp/kdl-gpu-kernels \
    >"$OUT/build-kernels.log" 2>&1 || { echo "kernel build failed: $OUT/build-kernels.log"; grep "BUILD FAILED" "$OUT/build-kernels.log"; }
fi
if [ ! -f "$CARRY/bench.list" ]; then echo "no $CARRY/bench.list: run tests/gpu/prepare.sh first (on the build machine)"; exit 2; fi
export LD_LIBRARY_PATH="$PWD/$CARRY/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
OUT="$OUT" $PYTHON -X faulthandler bench/conv_bench.py --carry "$CARRY" --out "$OUT" "$@" 2>&1 | tee "$OUT/conv_bench.log"
rc=${PIPESTATUS[0]}
$PYTHON bench/conv_plot.py "$OUT/conv_bench.csv" "$OUT/conv_bench.png" || echo "conv plot failed (matplotlib?)"
# What moved since the README's conv table, kernel by kernel (bench/compare.py): $OUT/conv_bench_compare.txt.
[ -f "$OUT/conv_bench.csv" ] && $PYTHON bench/compare.py "$OUT/conv_bench.csv" 2>&1 | tee "$OUT/conv_bench_compare.txt"
exit "$rc"
