#!/usr/bin/env bash
# Builds the libFuzzer target over the front end (clang, ASan + UBSan) in its own build folder, runs
# it for a bounded time, then re-runs every input in tests/fuzz/regressions/.
# Usage: scripts/fuzz.sh [seconds]      (default 60)
#   FUZZ_BUILD_DIR  build folder (default build-fuzz)     FUZZ_JOBS  parallel fuzzing jobs (default 1)
#   KDL_SHARED_DIR  the shared folder (default ../shared), whose spec/examples seed the corpus
# A crash leaves its input in tests/fuzz/corpus-work/crashes/ (crash-<sha1>); give it a descriptive name, move it
# to tests/fuzz/regressions/ and report it with the stack that this script prints.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_TO_RUN=${1:-60}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
SHARED=${KDL_SHARED_DIR:-$ROOT/../shared}
JOBS=${FUZZ_JOBS:-1}

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKDL_FUZZ=ON -DKDL_BUILD_TESTS=OFF \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang >/dev/null
cmake --build "$BUILD" --target fuzz_frontend -j"$(nproc 2>/dev/null || echo 2)"
FUZZER=$ROOT/$BUILD/tests/fuzz/fuzz_frontend
[[ "$BUILD" = /* ]] && FUZZER=$BUILD/tests/fuzz/fuzz_frontend

# The working corpus (ignored by git) grows across runs; it is seeded from the committed seeds, the
# shared examples, the diagnostics and list inputs (expectation blocks stripped) and the regressions.
WORK=tests/fuzz/corpus-work
SEEDS=$WORK/seeds
mkdir -p "$WORK/corpus" "$SEEDS" "$WORK/crashes"
python3 - "$SEEDS" "$SHARED" <<'PY'
import hashlib, os, sys
seeds, shared = sys.argv[1], sys.argv[2]
def add(data):
    lines = data.split(b"\n")
    while lines and (lines[-1] == b"" or lines[-1].startswith(b"// CHECK:")):
        lines.pop()
    data = b"\n".join(lines) + b"\n"
    if len(data) > 4096:
        return
    with open(os.path.join(seeds, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)
roots = ["tests/fuzz/corpus", "tests/diagnostics", "tests/list", "tests/fuzz/regressions", os.path.join(shared, "spec", "examples")]
for r in roots:
    for d, _, files in os.walk(r):
        for f in files:
            if f.endswith(".kdl"):
                add(open(os.path.join(d, f), "rb").read())
PY

echo "fuzz: running $FUZZER for ${SECONDS_TO_RUN}s"
# The fuzzer runs in an empty folder: imports resolve there and find nothing.
RUN_DIR=$(mktemp -d)
trap 'rm -rf "$RUN_DIR"' EXIT
status=0
(cd "$RUN_DIR" && ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$FUZZER" "$ROOT/$WORK/corpus" "$ROOT/$SEEDS" -dict="$ROOT/tests/fuzz/kdl.dict" \
    -max_total_time="$SECONDS_TO_RUN" -max_len=4096 -timeout=5 -rss_limit_mb=2048 \
    $([ "$JOBS" != 1 ] && echo "-jobs=$JOBS -workers=$JOBS") -print_final_stats=1 \
    -artifact_prefix="$ROOT/tests/fuzz/corpus-work/crashes/") || status=$?
if [ "$JOBS" != 1 ]; then cat "$RUN_DIR"/fuzz-*.log 2>/dev/null | tail -50 || true; fi

echo "fuzz: re-running tests/fuzz/regressions/"
regress_status=0
for f in tests/fuzz/regressions/*; do
  [ -f "$f" ] || continue
  if ! (cd "$RUN_DIR" && UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$FUZZER" -timeout=30 -rss_limit_mb=4096 "$ROOT/$f" >"$RUN_DIR/regress.log" 2>&1); then
    echo "fuzz: FAIL $f"; tail -40 "$RUN_DIR/regress.log"; regress_status=1
  fi
done
crashes=$(ls $WORK/crashes 2>/dev/null | wc -l)
echo "fuzz: fuzzer exit $status, ${crashes} file(s) in tests/fuzz/corpus-work/crashes/, regressions $([ $regress_status = 0 ] && echo pass || echo FAIL)"
[ "$status" = 0 ] && [ "$regress_status" = 0 ]
