#!/usr/bin/env bash
# The GPU test suite, run ON THE GPU MACHINE from the files tests/gpu/prepare.sh carried in .carry/gpu:
# every kernel of every spec in .carry/gpu/tests.list through kdl_gpu_test. The log goes to
# $OUT/gpu_tests.log (OUT defaults to out/gpu). Extra arguments go to kdl_gpu_test (--seed N,
# --kernel NAME, --quick). Kernels kdlc refused as [unsupported] are listed as "NOT BUILT" (from
# not-built.list, tests/gpu/build-kernels.sh). Then compute-sanitizer over a small set (KDL_NO_SANITIZER=1
# skips it, KDL_SANITIZER_ONLY=1 runs only it; KDL_SANITIZER_SET=sm80|sm90a|conv|all or a comma list
# (sm90a,conv), default all: the conv set under memcheck (--tiny sizes); the sm80
# set under memcheck + racecheck, the sm90a set under memcheck + synccheck, racecheck reported only).
# Exit status: non-zero on any failure.
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
lists=(--not-built "$CARRY/not-built.list" --build-failed "$CARRY/build-failed.list")
if [ -z "${KDL_SANITIZER_ONLY:-}" ]; then
  jobs=${KDL_SUITE_JOBS:-1}
  if [ "$jobs" -le 1 ]; then
    "$CARRY/bin/kdl_gpu_test" "${lists[@]}" "$@" "${args[@]}" 2>&1 | tee "$OUT/gpu_tests.log"
    rc=${PIPESTATUS[0]}
  else
    # KDL_SUITE_JOBS=N: N processes, the specs dealt round-robin (input generation and comparison are
    # single-threaded per process; the GPU and the 16 cores have room). One log each, concatenated
    # into gpu_tests.log with the summed count last. Every process reads the lists (a kernel kdlc
    # refused is NOT BUILT, not a missing symbol, in whichever process gets its spec); the NOT BUILT
    # lines they all print are kept once.
    pids=()
    for ((g = 0; g < jobs; g++)); do
      part=()
      for ((i = 2 * g; i < ${#args[@]}; i += 2 * jobs)); do part+=("${args[i]}" "${args[i + 1]}"); done
      [ ${#part[@]} -eq 0 ] && continue
      "$CARRY/bin/kdl_gpu_test" "${lists[@]}" "$@" "${part[@]}" >"$OUT/gpu_tests.$g.log" 2>&1 &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    awk '!/^NOT BUILT / || !seen[$0]++' "$OUT"/gpu_tests.[0-9]*.log >"$OUT/gpu_tests.log"
    for f in "$OUT"/gpu_tests.[0-9]*.log; do
      grep -Eq "^[0-9]+ passed, [0-9]+ failed$" "$f" || { echo "FAIL $f ended without its count (crashed): $(tail -n 1 "$f")" | tee -a "$OUT/gpu_tests.log"; rc=1; }
    done
    awk '/^[0-9]+ passed, [0-9]+ failed$/ {p += $1; f += $3} END {printf "all %d processes: %d passed, %d failed\n", '"$jobs"', p, f; printf "%d passed, %d failed\n", p, f}' \
      "$OUT"/gpu_tests.[0-9]*.log | tee -a "$OUT/gpu_tests.log"
    grep "^FAIL" "$OUT/gpu_tests.log" | head -60
  fi
fi

# The conv patch mainloop forced on every problem it can run (KDL_CONV_MAINLOOP=patch: by default a kernel takes it
# only where it measured faster than im2col, include/kdl/conv_sm90.cuh): conv_patch.kdl's kernels once more; and the
# swapped mainloop (KDL_CONV_MAINLOOP=swap) on conv_swap.kdl's.
if [ -z "${KDL_SANITIZER_ONLY:-}" ]; then
  while read -r spec lib; do
    case "$spec" in
      */conv_patch.kdl)
        KDL_CONV_MAINLOOP=patch "$CARRY/bin/kdl_gpu_test" "${lists[@]}" "$@" "$CARRY/$spec" "$CARRY/$lib" \
          >"$OUT/gpu_tests_patch.log" 2>&1 || rc=1
        echo "patch mainloop forced ($spec): $(tail -n 1 "$OUT/gpu_tests_patch.log")" | tee -a "$OUT/gpu_tests.log"
        grep "^FAIL" "$OUT/gpu_tests_patch.log" | head -20
        ;;
      */conv_swap.kdl)  # the swapped mainloop forced likewise (KDL_CONV_MAINLOOP=swap; by default only where it pays)
        KDL_CONV_MAINLOOP=swap "$CARRY/bin/kdl_gpu_test" "${lists[@]}" "$@" "$CARRY/$spec" "$CARRY/$lib" \
          >"$OUT/gpu_tests_swap.log" 2>&1 || rc=1
        echo "swapped mainloop forced ($spec): $(tail -n 1 "$OUT/gpu_tests_swap.log")" | tee -a "$OUT/gpu_tests.log"
        grep "^FAIL" "$OUT/gpu_tests_swap.log" | head -20
        ;;
    esac
  done <"$CARRY/tests.list"
fi

# compute-sanitizer over a small set (memcheck: out-of-bounds and misaligned accesses; racecheck:
# shared-memory hazards; synccheck: barrier misuse) of our kernels (hazards inside cuBLASLt's own
# reference kernels, `nvjet_*`, are not counted: racecheck does not follow their TMA/mbarrier
# synchronisation; excluding those kernels with --kernel-name-exclude made the sanitizer itself fail).
# sm80 set (--quick sizes): odd M/N, split-K, amax, every epilogue kind once, a TMA-fed kernel, a
# column-major D with a row-major C (transposed, strided reads).
# sm90a set (--tiny sizes: 127x269, 1x7, a padded batch, split-K): clusters, pingpong, extra outputs,
# fp8 with scales, block scales, split-K, a column-major D with a row-major C, the held-stage epilogue (cooperative
# 128x256 and 256x128 without clusters), and for every cooperative kernel without clusters a DRAM-bound case of over 4
# tiles per SM: its tiles in run-time order (the tickets' ring; kdl_gpu_test checks the ticket counter). racecheck on sm90a kernels is run and its report kept in
# the log, but not counted: it does not follow mbarrier/TMA ordering, which the sm90a mainloop rests on.
SANITIZED=(mx_bf16_bias_relu mx_bf16_amax mx_bf16_splitk4 mx_s8_saturate mx_tf32_bias_gelu mx_f16_scalar_z_amax mx_f16_leaky_clamp
           mx_f16_nn_rowC_colD)
SANITIZED_SM90=(h90_bf16_coop_128x256x64_c2x1 h90_f16_pp_64x256x64_c1x2 h90_bf16_aux_z_amax h90_e4m3_tensor_scales
                h90_e4m3_block_128x128 h90_bf16_splitk4 h90_bf16_rowC_colD_bias
                h90_bf16_coop_128x256x64 h90_bf16_coop_256x128x64)
# conv set (--tiny sizes): an fprop with a [channel] bias, a fixed-stride (phased) dgrad, a serial split-K wgrad;
# the sm90a wgmma path's three (TMA im2col loaders): fprop (with a DRAM-bound 22-image case: the tickets), dgrad,
# split-K wgrad; and a pingpong fprop on the patch mainloop (its default there: the slots by turns over both
# consumers' units, a residual read at each row's output pixel).
SANITIZED_CONV=(cv_bf16_fprop_bias_relu cv_f16_dgrad_3x3_s2 cv_f16_wgrad_splitk8
                cv90_bf16_coop_bias_relu cv90_bf16_dgrad_coop_bias_relu cv90_bf16_wgrad_coop_split
                cvp_bf16_128x128_3x3_pingpong_residual)
SET=${KDL_SANITIZER_SET:-all}
in_set() { [ "$SET" = all ] || [[ ",$SET," == *",$1,"* ]]; }
# sanitize LOG TOOL KERNEL SIZES COUNTED: one compute-sanitizer run of kdl_gpu_test on one kernel,
# appended to LOG; prints its verdict; returns 1 on a counted failure.
sanitize() {
  local log=$1 tool=$2 k=$3 sizes=$4 counted=$5 before src ours
  if grep -q "	$k	" "$CARRY/not-built.list" 2>/dev/null; then
    echo "== compute-sanitizer --tool $tool: $k NOT BUILT (refused by kdlc), not sanitized" | tee -a "$log"
    return 0
  fi
  echo "== compute-sanitizer --tool $tool: $k" | tee -a "$log"
  before=$(grep -c "Race reported" "$log")
  compute-sanitizer --tool "$tool" --error-exitcode 99 "$CARRY/bin/kdl_gpu_test" "$sizes" --kernel "$k" \
    "${args[@]}" >>"$log" 2>&1
  src=$?
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed, " "$log" | tail -2
  if tail -n 3 "$log" | grep -q "^0 passed, 0 failed"; then
    echo "SANITIZER NOT RUN ($tool, $k): no such kernel in the built libraries"
    return 0
  fi
  if [ "$tool" = racecheck ] && [ $src -eq 99 ]; then
    ours=$(grep "Race reported" "$log" | tail -n +$((before + 1)) | grep -vc "nvjet_")
    if [ "$ours" -eq 0 ] && ! grep -q "Internal Sanitizer Error\|FATAL" <(tail -n 200 "$log"); then
      echo "racecheck: hazards only inside cuBLASLt's nvjet kernels (not counted)"; src=0
    fi
  fi
  if [ $src -ne 0 ]; then
    if [ "$counted" = yes ]; then echo "SANITIZER FAIL ($tool, $k): exit $src (99: the tool found errors; 1: a test case failed)"; return 1
    else echo "SANITIZER REPORT ($tool, $k): exit $src (not counted; see the log)"; fi
  fi
  return 0
}
if command -v compute-sanitizer >/dev/null 2>&1 && [ -z "${KDL_NO_SANITIZER:-}" ]; then
  LOG="$OUT/sanitizer.log"
  : >"$LOG"
  if in_set sm80; then
    for k in "${SANITIZED[@]}"; do sanitize "$LOG" memcheck "$k" --quick yes || rc=1; done
    for k in mx_bf16_bias_relu mx_bf16_splitk4 mx_f16_leaky_clamp; do sanitize "$LOG" racecheck "$k" --quick yes || rc=1; done
  fi
  runs=()
  if in_set sm90a; then
    for k in "${SANITIZED_SM90[@]}"; do runs+=("memcheck $k yes" "synccheck $k yes"); done
    for k in h90_bf16_coop_128x256x64_c2x1 h90_f16_pp_64x256x64_c1x2; do runs+=("racecheck $k no"); done
  fi
  if in_set conv; then
    for k in "${SANITIZED_CONV[@]}"; do runs+=("memcheck $k yes"); done
  fi
  if [ ${#runs[@]} -gt 0 ]; then
    # Up to KDL_SANITIZER_JOBS (default 4) runs at once, each into its own log, then appended in order.
    par=${KDL_SANITIZER_JOBS:-4}
    for ((i = 0; i < ${#runs[@]}; i += par)); do
      pids=()
      for ((j = i; j < i + par && j < ${#runs[@]}; j++)); do
        read -r tool k counted <<<"${runs[j]}"
        : >"$OUT/sanitizer.$j.log"
        sanitize "$OUT/sanitizer.$j.log" "$tool" "$k" --tiny "$counted" >"$OUT/sanitizer.$j.out" 2>&1 &
        pids+=($!)
      done
      for p in "${pids[@]}"; do wait "$p" || rc=1; done
      for ((j = i; j < i + par && j < ${#runs[@]}; j++)); do
        cat "$OUT/sanitizer.$j.log" >>"$LOG"
        cat "$OUT/sanitizer.$j.out"
        rm -f "$OUT/sanitizer.$j.log" "$OUT/sanitizer.$j.out"
      done
    done
  fi
else
  echo "compute-sanitizer not found (or KDL_NO_SANITIZER set): sanitizer runs skipped"
fi
exit "$rc"
