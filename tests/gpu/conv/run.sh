#!/usr/bin/env bash
# The conv kernels against cuDNN and an fp64 reference (tests/gpu/conv/test_conv_cudnn.py), ON THE GPU MACHINE
# from the files tests/gpu/prepare.sh carried in .carry/gpu: every conv kernel of the libraries of tests.list
# and bench.list (found from the `kdlc list --json` beside each library). Needs python3 with torch (cuDNN).
# Log: $OUT/conv_tests.log (OUT defaults to out/gpu). Extra arguments go to the script (--quick, --seed N,
# --kernel NAME). Env: PYTHON (python3). Exit status: non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/../../.."
CARRY=.carry/gpu
OUT=${OUT:-out/gpu}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
if [ -f "$CARRY/build-kernels-there" ] && [ ! -s "$CARRY/tests.list" ]; then
  echo "== building the kernel libraries on this machine (tests/gpu/build-kernels.sh)"
  LD_LIBRARY_PATH="$PWD/$CARRY/bin:${LD_LIBRARY_PATH:-}" tests/gpu/build-kernels.sh "$CARRY/bin/kdlc" /tmp/kdl-gpu-kernels \
    >"$OUT/build-kernels.log" 2>&1 || { echo "kernel build failed: $OUT/build-kernels.log"; grep "BUILD FAILED" "$OUT/build-kernels.log"; }
fi
if [ ! -f "$CARRY/tests.list" ]; then echo "no $CARRY/tests.list: run tests/gpu/prepare.sh first (on the build machine)"; exit 2; fi
export LD_LIBRARY_PATH="$PWD/$CARRY/bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
$PYTHON -X faulthandler tests/gpu/conv/test_conv_cudnn.py --carry "$CARRY" "$@" 2>&1 | tee "$OUT/conv_tests.log"
rc=${PIPESTATUS[0]}
# Once more, the kernels with the swapped mainloop forced onto it wherever it can run (KDL_CONV_MAINLOOP=swap: by default
# it runs only where it pays, include/kdl/conv_sm90.cuh); its summary line joins conv_tests.log.
KDL_CONV_MAINLOOP=swap $PYTHON -X faulthandler tests/gpu/conv/test_conv_cudnn.py --carry "$CARRY" --swap-only "$@" \
  >"$OUT/conv_tests_swap.log" 2>&1 || rc=1
grep -E "^--swap-only|^  FAIL" "$OUT/conv_tests_swap.log" | head -40 | tee -a "$OUT/conv_tests.log"
echo "swapped mainloop forced (KDL_CONV_MAINLOOP=swap): $(tail -n 1 "$OUT/conv_tests_swap.log")" | tee -a "$OUT/conv_tests.log"
exit "$rc"
