#!/usr/bin/env bash
# Everything the GPU machine does in ONE call (the `run` tool, carry [".carry"], after
# `KDL_KERNELS_ON_GPU_MACHINE=1 tests/gpu/prepare.sh` here): build the kernel libraries there, the GPU
# test suite, compute-sanitizer over the sm90a subset, the benchmark; within a wall-clock budget
# (KDL_BUDGET_S, default 530 s: a 600 s call with room to copy $OUT back). Each step gets what is left
# minus a reserve for the steps after it, under `timeout`; a step cut short says so in the summary.
#   $OUT/summary.txt        what passed, failed, was not built, the sanitizer verdicts, the bench table
#   $OUT/build-kernels.log, gpu_tests.log, random_tests.log + random.kdl, torch_tests.log, conv_tests.log,
#   sanitizer.log, bench.{log,md,csv,png},
#   conv_bench.{log,md,csv,json}, bench_compare.txt and conv_bench_compare.txt (bench/compare.py: what moved since
#   the README's tables)
# Env: KDL_SUITE_ARGS (extra kdl_gpu_test arguments, e.g. --quick), KDL_SUITE_JOBS (parallel suite
# processes, default 6: 190 s on the H100 machine's 16 cores, where 3 ran past the step's budget after the
# kernel build), KDL_CONV_ARGS (extra test_conv_cudnn.py arguments, e.g. --quick), KDL_SANITIZER_SET
# (default sm90a,conv), KDL_BENCH_SPECS (bench spec filter, default all),
# KDL_RANDOM_SEED / KDL_RANDOM_COUNT (the random kernels' step), KDL_SKIP=suite,random,morewarps,torch,conv,
# sanitizer,convbench,bench (steps to leave out).
set -uo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-out/all}
mkdir -p "$OUT"
CARRY=.carry/gpu
BUDGET=${KDL_BUDGET_S:-530}
START=$(date +%s)
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
left() { echo $((BUDGET - ($(date +%s) - START))); }
skipped() { [[ ",${KDL_SKIP:-}," == *",$1,"* ]]; }
# What each step typically takes on the H100 machine (s), in the order they run: a step's reserve for the
# steps after it counts only those not skipped, so that KDL_SKIP with a small budget does not starve the
# kernel build (a 400 s budget with torch and bench skipped used to leave the build 70 s).
STEPS=(build suite torch conv sanitizer random morewarps convbench bench)
declare -A NEED=([build]=110 [suite]=190 [random]=120 [morewarps]=90 [torch]=150 [conv]=15 [sanitizer]=15 [convbench]=150 [bench]=150)
# reserve_after STEP FIXED_S: min(FIXED_S, the typical time of the steps after STEP that will run).
reserve_after() {
  local after=0 seen=0 s
  for s in "${STEPS[@]}"; do
    if [ $seen = 1 ] && ! skipped "$s"; then after=$((after + NEED[$s])); fi
    [ "$s" = "$1" ] && seen=1
  done
  echo $((after < $2 ? after : $2))
}
# run_step NAME RESERVE_S CMD...: runs CMD with the time left minus RESERVE_S (at least 20 s).
run_step() {
  local name=$1 reserve=$2 t0 limit rc
  shift 2
  limit=$(( $(left) - reserve ))
  [ "$limit" -lt 20 ] && limit=20
  t0=$(date +%s)
  timeout --signal=TERM --kill-after=10 "$limit" "$@"
  rc=$?
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then say "$name: CUT SHORT after ${limit} s (budget); rc=$rc"
  else say "$name: rc=$rc in $(( $(date +%s) - t0 )) s"; fi
  return $rc
}

say "== tests/gpu/all.sh on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), budget ${BUDGET} s"
status=0

# 1. Kernel libraries (on this machine's cores when prepare.sh carried kdlc instead of them).
if [ -f "$CARRY/build-kernels-there" ] && [ ! -s "$CARRY/tests.list" ]; then
  LD_LIBRARY_PATH="$PWD/$CARRY/bin:${LD_LIBRARY_PATH:-}" \
    run_step "build kernels" "$(reserve_after build 330)" tests/gpu/build-kernels.sh "$CARRY/bin/kdlc" /tmp/kdl-gpu-kernels "$(nproc)" \
    >"$OUT/build-kernels.log" 2>&1 || status=1
fi
say "built: $(grep -c "^built " "$CARRY/prepare.log" 2>/dev/null) specs; $(wc -l <"$CARRY/not-built.list" 2>/dev/null || echo 0) kernels not built (unsupported); $(wc -l <"$CARRY/build-failed.list" 2>/dev/null || echo 0) build failures"
grep "BUILD FAILED\|^not built: " "$CARRY/prepare.log" 2>/dev/null | tee -a "$SUMMARY"

# 2. The GPU test suite (no sanitizer here).
if ! skipped suite; then
  # shellcheck disable=SC2086
  KDL_NO_SANITIZER=1 KDL_SUITE_JOBS=${KDL_SUITE_JOBS:-6} run_step "suite" "$(reserve_after suite 170)" tests/gpu/run.sh ${KDL_SUITE_ARGS:-} \
    >/dev/null 2>&1 || status=1
  tail -n 2 "$OUT/gpu_tests.log" | tee -a "$SUMMARY"
  grep "^FAIL" "$OUT/gpu_tests.log" | head -40 | tee -a "$SUMMARY"
  echo "sm90a kernels tested: $(grep -c "^PASS h90_.* info:" "$OUT/gpu_tests.log") GEMM, $(grep -c "^PASS cv90_.* info:" "$OUT/gpu_tests.log") conv" |
    tee -a "$SUMMARY"
fi

# 2b. The PyTorch tests: kdl.load of the samples and shared examples, every op against PyTorch's result.
if ! skipped torch; then
  OUT="$OUT" run_step "torch" "$(reserve_after torch 150)" tests/gpu/torch/run.sh >/dev/null 2>&1 || status=1
  grep -E "^== |^Ran |^OK|^FAILED|^FAIL:|^ERROR:|SAMPLE FAILED|WARM-UP FAILED" "$OUT/torch_tests.log" | tee -a "$SUMMARY"
fi

# 2c. The conv kernels against cuDNN and an fp64 reference (PyTorch; tests/gpu/conv/test_conv_cudnn.py).
if ! skipped conv; then
  # shellcheck disable=SC2086
  OUT="$OUT" run_step "conv" "$(reserve_after conv 140)" tests/gpu/conv/run.sh ${KDL_CONV_ARGS:-} >/dev/null 2>&1 || status=1
  grep -E "^FAIL|passed, .* failed, .* skipped|^no conv kernel|^conv kernels" "$OUT/conv_tests.log" 2>/dev/null |
    head -60 | tee -a "$SUMMARY"
fi

# 3. compute-sanitizer over the sm90a subset (memcheck + synccheck; racecheck reported) and the conv set (memcheck).
if ! skipped sanitizer; then
  KDL_SANITIZER_ONLY=1 KDL_SANITIZER_SET=${KDL_SANITIZER_SET:-sm90a,conv} OUT="$OUT" \
    run_step "sanitizer" "$(reserve_after sanitizer 110)" tests/gpu/run.sh >"$OUT/sanitizer.summary" 2>&1 || status=1
  grep -E "^== |SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|passed, |not found" "$OUT/sanitizer.summary" | tee -a "$SUMMARY"
fi

# 3a. Random kernels that `kdlc check` accepts, built and run like the suite's (tests/gpu/random_run.sh; a fresh
#     seed each run unless KDL_RANDOM_SEED, KDL_RANDOM_COUNT kernels, default 30; after the
#     suite and the sanitizer, so that it takes what they leave).
if ! skipped random; then
  OUT="$OUT" run_step "random" "$(reserve_after random 150)" tests/gpu/random_run.sh "${KDL_RANDOM_COUNT:-30}" >/dev/null 2>&1 ||
    status=1
  grep -E "^random_specs: (seed|wrote)|^random: |passed, .* failed" "$OUT/random_tests.log" 2>/dev/null | tee -a "$SUMMARY"
  grep "^FAIL" "$OUT/random_tests.log" 2>/dev/null | head -20 | tee -a "$SUMMARY"
fi

# 3a'. The multistage kernels' 8-warp forms (`kdlc build`'s last try where ptxas spills a 4-warp kernel of 128
#      accumulators), built as if every such kernel had spilled and run like the suite (tests/gpu/more_warps_run.sh).
if ! skipped morewarps; then
  OUT="$OUT/more_warps" run_step "more warps" "$(reserve_after morewarps 120)" tests/gpu/more_warps_run.sh >"$OUT/more_warps.log" 2>&1 ||
    status=1
  grep -hE "^more_warps: |passed, .* failed" "$OUT/more_warps.log" "$OUT"/more_warps/*/random_tests.log 2>/dev/null | tee -a "$SUMMARY"
  grep -h "^FAIL\|^random: FAIL" "$OUT"/more_warps/*/random_tests.log 2>/dev/null | head -20 | tee -a "$SUMMARY"
fi

# 3b. The conv benchmark beside cuDNN (bench/conv_bench.py).
if ! skipped convbench; then
  OUT="$OUT" run_step "conv bench" "$(reserve_after convbench 60)" bench/conv_run.sh >/dev/null 2>&1 || status=1
  [ -f "$OUT/conv_bench.md" ] && cat "$OUT/conv_bench.md" >>"$SUMMARY"
  [ -f "$OUT/conv_bench_compare.txt" ] && cat "$OUT/conv_bench_compare.txt" >>"$SUMMARY"
fi

# 4. The benchmark.
if ! skipped bench; then
  KDL_BENCH_SPECS=${KDL_BENCH_SPECS:-} run_step "bench" "$(reserve_after bench 5)" bench/run.sh >/dev/null 2>&1 || status=1
  [ -f "$OUT/bench.md" ] && cat "$OUT/bench.md" >>"$SUMMARY"
  [ -f "$OUT/bench_compare.txt" ] && cat "$OUT/bench_compare.txt" >>"$SUMMARY"
fi
say "all.sh: status $status after $(( $(date +%s) - START )) s"
exit $status
