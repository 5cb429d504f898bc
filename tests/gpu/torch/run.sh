#!/usr/bin/env bash
# The PyTorch GPU tests (docs/torch.md): kdl.load() of the sample specs, the shared examples,
# tests/gpu/torch/ops.kdl and tests/golden/torch/conv_ops.kdl, each op against PyTorch's own result
# (tests/gpu/torch/test_ops.py; the conv ops: test_conv_ops.py, class ConvOps), then the samples/torch scripts. Needs a CUDA GPU, nvcc and a Python with torch; no pytest, no network.
#   tests/gpu/torch/run.sh [TEST...]     (default: every class of test_ops.py; e.g. Ops.test_split_k)
# Env: KDLC (default: the kdlc that tests/gpu/prepare.sh carried, else build/kdlc), PYTHON (python3),
#      KDL_CACHE_DIR (default: a fresh private directory, so the first loads build), KDL_EXAMPLES
#      (the shared spec/examples folder), OUT
#      (logs: $OUT/torch_tests.log).
set -uo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
PYTHON=${PYTHON:-python3}
CARRY=.carry/gpu
if [ -z "${KDLC:-}" ]; then
  if [ -x "$CARRY/bin/kdlc" ]; then KDLC=$ROOT/$CARRY/bin/kdlc; export LD_LIBRARY_PATH="$ROOT/$CARRY/bin:${LD_LIBRARY_PATH:-}"
  else KDLC=$ROOT/build/kdlc; fi
fi
export KDLC
export KDL_INCLUDE_DIR=$ROOT/include
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$PATH:/usr/local/cuda/bin"
if [ -z "${KDL_CACHE_DIR:-}" ]; then KDL_CACHE_DIR=$(mktemp -d -t kdl-cache.XXXXXX); fi
export KDL_CACHE_DIR
OUT=${OUT:-out/torch}
mkdir -p "$OUT"
LOG=$OUT/torch_tests.log
# The shared examples: ../shared/spec/examples, or the copy tests/gpu/prepare.sh carried.
EXAMPLES=${KDL_EXAMPLES:-${KDL_SHARED:-$ROOT/../shared}/spec/examples}
[ -d "$EXAMPLES" ] || EXAMPLES=$ROOT/$CARRY/specs/examples
export KDL_EXAMPLES=$EXAMPLES

{
  echo "== torch: $($PYTHON -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)'), kdlc $("$KDLC" --version)"
  # Warm the cache: every spec in its own process, in parallel (kdl.load builds each once).
  t0=$(date +%s)
  pids=()
  for spec in samples/kernels/transformer.kdl tests/gpu/torch/ops.kdl "$EXAMPLES/gemm_basic.kdl" \
              "$EXAMPLES/gemm_epilogues.kdl" "$EXAMPLES/gemm_sweep.kdl" "$EXAMPLES/conv_fprop.kdl" \
              tests/golden/torch/conv_ops.kdl samples/torch/conv.kdl; do
    $PYTHON -c 'import sys, kdl; m = kdl.load(sys.argv[1]); print("loaded", sys.argv[1], len(m.kernels), "ops")' "$spec" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || echo "WARM-UP FAILED (pid $p)"; done
  echo "== builds took $(( $(date +%s) - t0 )) s"
  # One process per test class, so that a crash in one (a segfault shows its Python stack through
  # faulthandler) does not hide the others' results.
  rc=0
  if [ $# -gt 0 ]; then classes=("$@"); else classes=(Samples Ops SharedExamples Cache ConvOps); fi
  for cls in "${classes[@]}"; do
    file=test_ops.py
    case "$cls" in ConvOps*) file=test_conv_ops.py ;; esac
    $PYTHON -X faulthandler tests/gpu/torch/$file -v "$cls"
    r=$?
    echo "== $file $cls: rc=$r"
    [ $r -eq 0 ] || rc=1
  done
  for s in samples/torch/*.py; do
    [ -f "$s" ] || continue
    echo "== $s"
    $PYTHON "$s" || { echo "SAMPLE FAILED: $s"; rc=1; }
  done
  echo "== torch tests: rc=$rc"
  exit $rc
} 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
