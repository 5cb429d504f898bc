#!/usr/bin/env bash
# The GPU test suite, run ON THE GPU MACHINE from the files tests/gpu/prepare.sh carried in .carry/gpu:
# every kernel of every spec in .carry/gpu/tests.list through kdl_gpu_test. The log goes to
# $OUT/gpu_tests.log (OUT defaults to out/gpu). Extra arguments go to kdl_gpu_test (--seed N,
# --kernel NAME, --quick). Exit status: kdl_gpu_test's (non-zero on any failure).
set -uo pipefail
cd "$(dirname "$0")/../.."
CARRY=.carry/gpu
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
if [ ! -f "$CARRY/tests.list" ]; then echo "no $CARRY/tests.list: run tests/gpu/prepare.sh first (on the build machine)"; exit 2; fi
export LD_LIBRARY_PATH="$PWD/$CARRY/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
args=()
while read -r spec lib; do
  [ -n "$spec" ] && args+=("$CARRY/$spec" "$CARRY/$lib")
done <"$CARRY/tests.list"
[ -f "$CARRY/prepare.log" ] && grep "BUILD FAILED" "$CARRY/prepare.log" | sed 's/^/prepare: /'
"$CARRY/bin/kdl_gpu_test" "$@" "${args[@]}" 2>&1 | tee "$OUT/gpu_tests.log"
exit "${PIPESTATUS[0]}"
