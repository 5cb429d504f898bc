#!/usr/bin/env bash
# Builds kdlc and runs every test that needs no GPU: unit tests, golden tests of `kdlc list`,
# diagnostics and emitted code, and nvcc compile checks of emitted kernels.
# Usage: scripts/test.sh [extra ctest args]     (BUILD_DIR overrides the build folder, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j"$jobs"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$jobs" -LE gpu "$@"
