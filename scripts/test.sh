#!/usr/bin/env bash
# Builds kdlc and runs every test that needs no GPU: unit tests, golden tests of `kdlc list`,
# diagnostics and emitted code, and nvcc compile checks of emitted kernels.
# Usage: scripts/test.sh [extra ctest args]     (BUILD_DIR overrides the build folder, default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
jobs=$(nproc 2>/dev/null || echo 2)
# With the CUDA toolkit the GPU suite's programs are built too: their CPU-only checks (kdl_gpu_test --self-test,
# its conv path on a fake library) run here; the GPU runs happen on a GPU machine (tests/gpu/README.md).
gpu_tests=OFF
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then gpu_tests=ON; fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKDL_GPU_TESTS=$gpu_tests >/dev/null
cmake --build "$BUILD_DIR" -j"$jobs"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$jobs" -LE gpu "$@"
