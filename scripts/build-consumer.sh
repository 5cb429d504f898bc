#!/usr/bin/env bash
# Configures and builds samples/consumer against a KDL build tree, as another project would:
# find_package(kdl) + kdl_add_kernels(). Usage: scripts/build-consumer.sh KDL_BUILD_DIR OUT_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kdl_build=$(cd "$1" && pwd)
out=$2
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S "$root/samples/consumer" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release -Dkdl_DIR="$kdl_build"
cmake --build "$out" -j"$(nproc 2>/dev/null || echo 2)"
test -x "$out/consumer"
echo "consumer sample built: $out/consumer (run it on a machine with a GPU)"
