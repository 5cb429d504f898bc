#!/usr/bin/env bash
# Builds, on the development machine, everything the GPU run needs into .carry/gpu/ (ignored by git),
# so that the GPU machine (which has nvcc and cuBLAS but no antlr4 or fmt) only runs carried files:
#   .carry/gpu/bin/     kdl_gpu_test, kdl_bench (stripped) + the shared libraries they need (libfmt)
#   .carry/gpu/specs/   the spec files (test matrix, samples, shared examples with their imports, bench)
#   .carry/gpu/libs/    one library per spec, built by `kdlc build` (stripped), and beside it the spec's
#                       `kdlc list --json` (STEM.kernels.json: what the Python conv drivers read, tests/gpu/conv/)
#   .carry/gpu/tests.list, bench.list   "SPEC LIB" lines for tests/gpu/run.sh and bench/run.sh
# Usage: tests/gpu/prepare.sh            (env: BUILD_DIR=build-gpu, JOBS=nproc, KDL_SHARED=../shared)
#   KDL_KERNELS_ON_GPU_MACHINE=1: carry kdlc instead of the libraries; tests/gpu/run.sh and bench/run.sh
#   then build them there first (tests/gpu/build-kernels.sh; 16 cores instead of 2).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build-gpu}
CARRY=.carry/gpu
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
SHARED=${KDL_SHARED:-../shared}
export PATH="$PATH:/usr/local/cuda/bin"
if ! compgen -G "$SHARED/spec/examples/*.kdl" >/dev/null; then  # never test less without saying so
  echo "prepare: the shared folder is missing (no $SHARED/spec/examples/*.kdl): put it beside the checkout or set KDL_SHARED" >&2
  exit 1
fi

echo "== building kdlc, kdl_gpu_test, kdl_bench in $BUILD_DIR"
if ! cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKDL_GPU_TESTS=ON >/dev/null; then
  echo "prepare: configuring the build failed (above); on a fresh machine, scripts/setup.sh installs what it needs" >&2
  exit 1
fi
cmake --build "$BUILD_DIR" -j"$JOBS" --target kdlc kdl_gpu_test kdl_bench
"$BUILD_DIR/tests-gpu/kdl_gpu_test" --self-test

rm -rf "$CARRY"
mkdir -p "$CARRY/bin" "$CARRY/specs" "$CARRY/libs"
cp "$BUILD_DIR/tests-gpu/kdl_gpu_test" "$BUILD_DIR/bench/kdl_bench" "$CARRY/bin/"
strip "$CARRY/bin/kdl_gpu_test" "$CARRY/bin/kdl_bench"
# Shared libraries the GPU machine lacks (it has the CUDA toolkit's libcublasLt and the C++ runtime).
for lib in $(ldd "$CARRY/bin/kdl_gpu_test" "$CARRY/bin/kdl_bench" | awk '/=>/ {print $3}' | sort -u); do
  case "$(basename "$lib")" in
    libfmt*|libantlr4*) cp -L "$lib" "$CARRY/bin/" ;;
  esac
done

# Specs, grouped: the test matrix, the sample kernels, the shared examples (sm80 ones are tested;
# others are built when kdlc can and skipped by the harness when their library lacks them), bench.
mkdir -p "$CARRY/specs/matrix" "$CARRY/specs/samples" "$CARRY/specs/examples" "$CARRY/specs/bench"
cp tests/gpu/specs/*.kdl "$CARRY/specs/matrix/"
if compgen -G "samples/kernels/*.kdl" >/dev/null; then cp -r samples/kernels/. "$CARRY/specs/samples/"; fi
cp -r "$SHARED/spec/examples/." "$CARRY/specs/examples/"
cp bench/specs/*.kdl "$CARRY/specs/bench/"

status=0
if [ -n "${KDL_KERNELS_ON_GPU_MACHINE:-}" ]; then
  # kdlc (and the libfmt it needs, copied above) travels; the GPU machine builds the libraries.
  cp "$BUILD_DIR/kdlc" "$CARRY/bin/" && strip "$CARRY/bin/kdlc"
  cp -L "$(ldd "$BUILD_DIR/kdlc" | awk '/libfmt/ {print $3}')" "$CARRY/bin/"
  rm -rf "$CARRY/libs"; : >"$CARRY/tests.list"; : >"$CARRY/bench.list"
  touch "$CARRY/build-kernels-there"
else
  tests/gpu/build-kernels.sh "$BUILD_DIR/kdlc" "$BUILD_DIR/kernels" "$JOBS" || status=1
fi
du -sh .carry
echo "ready: run tests/gpu/run.sh and bench/run.sh on the GPU machine (carry .carry)"
exit $status
