#!/usr/bin/env bash
# The main job: build kdlc, then generate and compile every sample spec in samples/kernels/ into
# out/samples/<spec>/ (sources, headers, manifest.json, lib<spec>.a and lib<spec>.so).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
OUT_DIR=${OUT_DIR:-out/samples}
jobs=$(nproc 2>/dev/null || echo 2)
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD_DIR" -j"$jobs" --target kdlc
for spec in samples/kernels/*.kdl; do
  stem=$(basename "$spec" .kdl)
  echo "== $spec"
  "$BUILD_DIR/kdlc" build "$spec" -o "$OUT_DIR/$stem" -j "$jobs"
done
echo "== samples/consumer (find_package(kdl) + kdl_add_kernels)"
scripts/build-consumer.sh "$BUILD_DIR" "$OUT_DIR/consumer"
echo "sample kernels are in $OUT_DIR/; the consumer program is $OUT_DIR/consumer/consumer"
