#!/usr/bin/env bash
# The GPU test suite, run ON THE GPU MACHINE from the files tests/gpu/prepare.sh carried in .carry/gpu:
# every kernel of every spec in .carry/gpu/tests.list through kdl_gpu_test. The log goes to
# $OUT/gpu_tests.log (OUT defaults to out/gpu). Extra arguments go to kdl_gpu_test (--seed N,
# --kernel NAME, --quick). Then compute-sanitizer over a small set (KDL_NO_SANITIZER=1 skips it,
# KDL_SANITIZER_ONLY=1 runs only it). Exit status: non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
CARRY=.carry/gpu
OUT=${OUT:-out/gpu}
mkdir -p "$OUT"
if [ -f "$CARRY/build-kernels-there" ] && [ ! -s "$CARRY/tests.list" ]; then
  echo "== building the kernel libraries on this machine (tests/gpu/build-kernels.sh)"
  LD_LIBRARY_PATH="$PWD/$CARRY/bin:${LD_LIBRARY_PATH:-}" tests/gpu/build-kernels.sh "$CARRY/bin/kdlc" /tmp/kdl-gpu-kernels \
    >"$OUT/build-kernels.log" 2>&1 || { echo "kernel build failed: $OUT/build-kernels.log"; grep "BUILD FAILED" "$OUT/build-kernels.log"; }
fi
if [ ! -f "$CARRY/tests.list" ]; then
  # On a machine that can build (antlr4, fmt, nvcc): build everything first.
  if command -v antlr4 >/dev/null 2>&1; then tests/gpu/prepare.sh || exit 2
  else echo "no $CARRY/tests.list: run tests/gpu/prepare.sh first (on the build machine)"; exit 2; fi
fi
export LD_LIBRARY_PATH="$PWD/$CARRY/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
args=()
while read -r spec lib; do
  [ -n "$spec" ] && args+=("$CARRY/$spec" "$CARRY/$lib")
done <"$CARRY/tests.list"
[ -f "$CARRY/prepare.log" ] && grep "BUILD FAILED" "$CARRY/prepare.log" | sed 's/^/prepare: /'
rc=0
if [ -z "${KDL_SANITIZER_ONLY:-}" ]; then
  "$CARRY/bin/kdl_gpu_test" "$@" "${args[@]}" 2>&1 | tee "$OUT/gpu_tests.log"
  rc=${PIPESTATUS[0]}
fi

# compute-sanitizer over a small set (memcheck: out-of-bounds and misaligned accesses; racecheck:
# shared-memory hazards) of our kernels (hazards inside cuBLASLt's own reference kernels, `nvjet_*`, are
# not counted: racecheck does not follow their TMA/mbarrier synchronisation; excluding those kernels
# with --kernel-name-exclude made the sanitizer itself fail), quick sizes only: odd M/N,
# split-K, amax, every epilogue kind once, and a TMA-fed kernel (mx_f16_leaky_clamp).
SANITIZED=(mx_bf16_bias_relu mx_bf16_amax mx_bf16_splitk4 mx_s8_saturate mx_tf32_bias_gelu mx_f16_scalar_z_amax mx_f16_leaky_clamp)
if command -v compute-sanitizer >/dev/null 2>&1 && [ -z "${KDL_NO_SANITIZER:-}" ]; then
  : >"$OUT/sanitizer.log"
  for tool in memcheck racecheck; do
    for k in "${SANITIZED[@]}"; do
      [ "$tool" = racecheck ] && [ "$k" != mx_bf16_bias_relu ] && [ "$k" != mx_bf16_splitk4 ] && [ "$k" != mx_f16_leaky_clamp ] && continue
      echo "== compute-sanitizer --tool $tool: $k" | tee -a "$OUT/sanitizer.log"
      before=$(grep -c "Race reported" "$OUT/sanitizer.log")
      compute-sanitizer --tool "$tool" --error-exitcode 99 "$CARRY/bin/kdl_gpu_test" --quick --kernel "$k" \
        "${args[@]}" >>"$OUT/sanitizer.log" 2>&1
      src=$?
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$OUT/sanitizer.log" | tail -2
      if [ "$tool" = racecheck ] && [ $src -eq 99 ]; then
        ours=$(grep "Race reported" "$OUT/sanitizer.log" | tail -n +$((before + 1)) | grep -vc "nvjet_")
        if [ "$ours" -eq 0 ] && ! grep -q "Internal Sanitizer Error\|FATAL" <(tail -n 200 "$OUT/sanitizer.log"); then
          echo "racecheck: hazards only inside cuBLASLt's nvjet kernels (not counted)"; src=0
        fi
      fi
      if [ $src -ne 0 ]; then echo "SANITIZER FAIL ($tool, $k): exit $src"; rc=1; fi
    done
  done
else
  echo "compute-sanitizer not found (or KDL_NO_SANITIZER set): sanitizer runs skipped"
fi
exit "$rc"
