#!/usr/bin/env bash
# Front-end throughput: generates a .kdl of 10 000 kernels, builds bench_frontend (Release) and runs
# runFrontend on it RUNS times (median kernels/s), then times `kdlc check` on the same file, then
# times the parser on hostile inputs of 100000 units (`bench_frontend --deep`).
# Usage: bench/frontend/run.sh [runs=10]        BENCH_BUILD_DIR overrides the build folder (build-bench)
# Target: >= 20 000 kernels/s on a 2-core machine. To profile:
#   perf record -g BUILD/bench_frontend BUILD/bench_10k.kdl 5 && perf report
#   valgrind --tool=callgrind BUILD/bench_frontend BUILD/bench_10k.kdl 1
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-10}
BUILD=${BENCH_BUILD_DIR:-build-bench}
cmake -S bench/frontend -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target bench_frontend kdlc -j"$(nproc 2>/dev/null || echo 2)" >/dev/null
python3 bench/frontend/gen_bench.py "$BUILD/bench_10k.kdl"
"$BUILD/bench_frontend" "$BUILD/bench_10k.kdl" "$RUNS"
KDLC="$BUILD/kdl/kdlc"
best=""
times=()
for i in 1 2 3 4 5; do
  t0=$(date +%s.%N)
  "$KDLC" check "$BUILD/bench_10k.kdl"
  t1=$(date +%s.%N)
  times+=("$(echo "$t1 - $t0" | bc)")
done
med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
echo "kdlc check wall time (5 runs): median ${med} s -> $(echo "10000 / $med" | bc) kernels/s (process start and file read included)"
echo "parser on hostile inputs of 100000 units (median of 3):"
"$BUILD/bench_frontend" --deep 3
