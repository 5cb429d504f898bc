#!/usr/bin/env bash
# Builds one library per carried spec (.carry/gpu/specs/*/*.kdl) with `kdlc build` into .carry/gpu/libs/
# and writes tests.list / bench.list ("SPEC LIB" lines). Runs on the development machine (called by
# tests/gpu/prepare.sh) or on the GPU machine, whose 16 cores build much faster (tests/gpu/run.sh
# and bench/run.sh call it there when prepare.sh ran with KDL_KERNELS_ON_GPU_MACHINE=1).
#
# Only what the current kdlc generates is built: tests/gpu/triage.py asks kdlc which kernels of a spec
# it refuses as [unsupported] (`kdlc check`, `kdlc list --plan`); those go to not-built.list
# ("SPEC<TAB>KERNEL<TAB>REASON"), which kdl_gpu_test and kdl_bench print as "NOT BUILT" lines, so one
# spec serves while the templates grow. A kernel kdlc accepts and then fails to compile is a bug: it
# goes to build-failed.list (kdl_gpu_test reports it as a FAIL), found by building the spec's kernels
# one by one after the spec's build failed (the compile cache keeps that cheap), and the library is
# rebuilt from the others. A library with sm90a kernels must hold sm_90a machine code (cuobjdump).
# Usage: tests/gpu/build-kernels.sh KDLC WORK_DIR [JOBS]      Exit 1 if a matrix or bench kernel fails.
set -uo pipefail
cd "$(dirname "$0")/../.."
KDLC=$1
WORK=$2
JOBS=${3:-$(nproc 2>/dev/null || echo 2)}
CARRY=.carry/gpu
export PATH="$PATH:/usr/local/cuda/bin"
# kdlc finds the device templates through KDL_INCLUDE_DIR when it does not run from a build tree.
export KDL_INCLUDE_DIR=${KDL_INCLUDE_DIR:-$PWD/include}
rm -rf "$CARRY/libs"
mkdir -p "$CARRY/libs" "$WORK"
for f in tests.list bench.list prepare.log not-built.list build-failed.list; do : >"$CARRY/$f"; done
status=0

# build SPEC OUT KERNEL... : kdlc build of those kernels of SPEC into OUT (log OUT.log).
build() {
  local spec=$1 out=$2
  shift 2
  local sel=()
  for k in "$@"; do sel+=(--kernel "$k"); done
  "$KDLC" build "$spec" -o "$out" -j "$JOBS" "${sel[@]}" >"$out.log" 2>&1
}

# Pass 1: triage every spec and start its build in the background (all specs at once: one spec has
# too few kernels to keep 16 cores busy; the compile cache is safe for concurrent builds).
declare -A pid
for spec in "$CARRY"/specs/*/*.kdl; do
  group=$(basename "$(dirname "$spec")")
  stem=$(basename "$spec" .kdl)
  out="$WORK/$group/$stem"
  rel_spec=${spec#"$CARRY/"}
  mkdir -p "$(dirname "$out")"
  if ! python3 tests/gpu/triage.py "$KDLC" "$spec" >"$out.triage" 2>"$out.triage.err"; then
    echo "BUILD FAILED: $spec: triage failed: $(head -c 400 "$out.triage.err")" | tee -a "$CARRY/prepare.log"
    printf '%s\t*\ttriage failed: %s\n' "$rel_spec" "$(head -c 300 "$out.triage.err" | tr '\n\t' '  ')" >>"$CARRY/build-failed.list"
    case "$group" in matrix|bench) status=1 ;; esac
    continue
  fi
  awk -F'\t' -v s="$rel_spec" '$1 == "NOTBUILT" {print s "\t" $2 "\t" $3}' "$out.triage" >>"$CARRY/not-built.list"
  if grep -q "^SPECERROR" "$out.triage"; then
    reason=$(awk -F'\t' '$1 == "SPECERROR" {print $3}' "$out.triage")
    grep -q "^NOTBUILT" "$out.triage" || printf '%s\t*\t%s\n' "$rel_spec" "the spec does not pass kdlc's front end: $reason" >>"$CARRY/not-built.list"
    echo "not built: $spec: $reason" | tee -a "$CARRY/prepare.log"
  fi
  mapfile -t kernels < <(awk -F'\t' '$1 == "BUILD" {print $2}' "$out.triage")
  if [ "${#kernels[@]}" -eq 0 ]; then
    echo "not built: $spec: kdlc generates none of its kernels" | tee -a "$CARRY/prepare.log"
    continue
  fi
  echo "== kdlc build $spec (${#kernels[@]} kernels)"
  build "$spec" "$out" "${kernels[@]}" &
  pid[$spec]=$!
done
start=$(date +%s)

# Pass 2: collect each build in turn; isolate failures kernel by kernel.
for spec in "$CARRY"/specs/*/*.kdl; do
  [ -n "${pid[$spec]:-}" ] || continue
  group=$(basename "$(dirname "$spec")")
  stem=$(basename "$spec" .kdl)
  out="$WORK/$group/$stem"
  rel_spec=${spec#"$CARRY/"}
  mapfile -t kernels < <(awk -F'\t' '$1 == "BUILD" {print $2}' "$out.triage")
  refused=$(grep -c "^NOTBUILT" "$out.triage")
  if ! wait "${pid[$spec]}"; then
    echo "build of $spec failed; building its ${#kernels[@]} kernels one by one (log: $out.log)"
    tail -n 5 "$out.log"
    good=()
    mkdir -p "$out.one"
    for k in "${kernels[@]}"; do
      if build "$spec" "$out.one/$k" "$k"; then good+=("$k")
      else
        # kdlc's error line and the two after it (for the ptxas gate: the kernel and what ptxas said)
        why=$(grep -m1 -A2 -E "error" "$out.one/$k.log" | sed 's/  */ /g' | tr '\t\n' '  ' | head -c 600)
        printf '%s\t%s\t%s\n' "$rel_spec" "$k" "kdlc build failed: ${why:-see $out.one/$k.log}" >>"$CARRY/build-failed.list"
        echo "BUILD FAILED: $spec kernel $k: $why" | tee -a "$CARRY/prepare.log"
        case "$group" in matrix|bench) status=1 ;; esac
      fi
    done
    kernels=("${good[@]}")
    if [ "${#kernels[@]}" -eq 0 ] || ! build "$spec" "$out" "${kernels[@]}"; then
      echo "BUILD FAILED: $spec (log: $out.log)" | tee -a "$CARRY/prepare.log"
      continue
    fi
  fi
  # sm90a kernels only run from sm_90a machine code (-gencode=arch=compute_90a,code=sm_90a).
  if command -v cuobjdump >/dev/null 2>&1 && "$KDLC" list --json "$spec" 2>/dev/null | python3 -c '
import json, sys
built = set(sys.argv[1:])
sys.exit(0 if any(k["name"] in built and k["arch"]["value"] == "sm90a" for k in json.load(sys.stdin)["kernels"]) else 1)
' "${kernels[@]}"; then
    elfs=$(cuobjdump --list-elf "$out/lib$stem.so" 2>/dev/null)  # whole output first: grep -q under pipefail SIGPIPEs it
    if ! grep -q "sm_90a" <<<"$elfs"; then
      echo "BUILD FAILED: $spec: its library has no sm_90a machine code (cuobjdump --list-elf)" | tee -a "$CARRY/prepare.log"
      printf '%s\t*\tthe library has no sm_90a machine code (built without -gencode=arch=compute_90a,code=sm_90a?)\n' \
        "$rel_spec" >>"$CARRY/build-failed.list"
      case "$group" in matrix|bench) status=1 ;; esac
    fi
  fi
  mkdir -p "$CARRY/libs/$group"
  cp "$out/lib$stem.so" "$CARRY/libs/$group/"
  strip --strip-unneeded "$CARRY/libs/$group/lib$stem.so" 2>/dev/null || true
  # The resolved kernels beside the library (names, ops, fixed filter / stride, split-K, epilogue), for the
  # Python drivers that have no spec parser: tests/gpu/conv/conv_abi.py (cuDNN comparison, conv benchmark).
  "$KDLC" list --json "$spec" >"$CARRY/libs/$group/$stem.kernels.json" 2>/dev/null ||
    echo "kdlc list --json $spec failed: no $stem.kernels.json" | tee -a "$CARRY/prepare.log"
  rel_lib="libs/$group/lib$stem.so"
  if [ "$group" = bench ]; then echo "$rel_spec $rel_lib" >>"$CARRY/bench.list"; else echo "$rel_spec $rel_lib" >>"$CARRY/tests.list"; fi
  echo "built $spec: ${#kernels[@]} kernels, $refused not built (unsupported), $(( $(date +%s) - start )) s after the builds started" | tee -a "$CARRY/prepare.log"
done
exit $status
