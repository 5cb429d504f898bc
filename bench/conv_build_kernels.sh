#!/usr/bin/env bash
# Builds a spec's kernels (all, or the NAMEs given) with the carried kdlc into LIBDIR/lib<stem>.so and writes
# LIBDIR/<stem>.kernels.json: `kdlc list --json` of the kernels built only (what tests/gpu/conv/conv_abi.py reads).
# The headers are $KDL_INCLUDE_DIR's (kdlc's default otherwise). Used by bench/conv_ab_headers.sh and conv_ncu.sh.
#   bench/conv_build_kernels.sh SPEC LIBDIR [NAME...]        (env: CARRY=.carry/gpu, JOBS=16)
set -euo pipefail
spec=$1 libdir=$2
shift 2
C=${CARRY:-.carry/gpu}
stem=$(basename "$spec" .kdl)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=()
for k in "$@"; do args+=(--kernel "$k"); done
"$C/bin/kdlc" build "$spec" -o "$tmp" -j "${JOBS:-16}" "${args[@]}"
mkdir -p "$libdir"
cp "$tmp/lib$stem.so" "$libdir/"
"$C/bin/kdlc" list --json "$spec" | python3 -c '
import json, sys
keep = set(sys.argv[1:])
d = json.load(sys.stdin)
d["kernels"] = [k for k in d["kernels"] if not keep or k["name"] in keep]
json.dump(d, sys.stdout)' "$@" > "$libdir/$stem.kernels.json"
