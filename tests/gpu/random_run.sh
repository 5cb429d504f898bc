#!/usr/bin/env bash
# Random kernels on the GPU: tests/gpu/random_specs.py writes COUNT kernels that `kdlc check` accepts (seed
# $KDL_RANDOM_SEED, else a fresh one, printed), `kdlc build` builds them (ptxas's gate, every core) and
# kdl_gpu_test runs them against the reference like any spec. A kernel check accepts that then fails to build
# or gives a wrong result is a bug of kdlc (the promise of `check`), found on specs nobody wrote by hand.
#   $OUT/random_tests.log   the seed, the build, the suite's lines and "N passed, M failed"
#   $OUT/random.kdl         the spec, for a replay (kdl_gpu_test --seed N $OUT/random.kdl LIB)
# Usage (GPU machine, .carry/gpu carried with kdlc in it: KDL_KERNELS_ON_GPU_MACHINE=1 tests/gpu/prepare.sh here):
#   tests/gpu/random_run.sh [COUNT]       (COUNT default 40; exit 1 on any failure; KDL_RANDOM_HEAVY=1 draws them
#                                          where the register rules are thresholds: random_specs.py --heavy)
#   tests/gpu/random_run.sh SPEC.kdl      (a replay: build and run that spec, e.g. an earlier run's random.kdl)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-out/random}
mkdir -p "$OUT"
CARRY=.carry/gpu
COUNT=${1:-40}
LOG="$OUT/random_tests.log"
export PATH="$PATH:/usr/local/cuda/bin"
export KDL_INCLUDE_DIR=${KDL_INCLUDE_DIR:-$PWD/include}
export LD_LIBRARY_PATH="$PWD/$CARRY/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
KDLC="$CARRY/bin/kdlc"
WORK=$(mktemp -d /tmp/kdl-random.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
{
  if [ ! -x "$KDLC" ]; then
    echo "random: FAIL: $KDLC is missing (prepare .carry/gpu with KDL_KERNELS_ON_GPU_MACHINE=1)"
    exit 1
  fi
  case "$COUNT" in
    *.kdl)
      [ -f "$COUNT" ] || { echo "random: FAIL: no spec $COUNT"; exit 1; }
      [ "$COUNT" -ef "$OUT/random.kdl" ] || cp "$COUNT" "$OUT/random.kdl"
      echo "random: replaying $COUNT" ;;
    *)
      python3 tests/gpu/random_specs.py --kdlc "$KDLC" --out "$OUT/random.kdl" --count "$COUNT" \
        ${KDL_RANDOM_SEED:+--seed "$KDL_RANDOM_SEED"} ${KDL_RANDOM_HEAVY:+--heavy} ||
        { echo "random: FAIL: random_specs.py"; exit 1; } ;;
  esac
  t0=$(date +%s)
  if ! "$KDLC" build "$OUT/random.kdl" -o "$WORK/lib" -j "$(nproc)" >"$WORK/build.log" 2>&1; then
    tail -n 60 "$WORK/build.log"
    echo "random: FAIL: kdlc build refused or failed on kernels kdlc check accepted"
    exit 1
  fi
  echo "random: built $(ls "$WORK"/lib/*.so) in $(( $(date +%s) - t0 )) s"
  "$CARRY/bin/kdl_gpu_test" "$OUT/random.kdl" "$WORK"/lib/librandom.so
} >"$LOG" 2>&1
rc=$?
tail -n 1 "$LOG"
grep "^FAIL\|^random: FAIL" "$LOG" | head -20
exit $rc
