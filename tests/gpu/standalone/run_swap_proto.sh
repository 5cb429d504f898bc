#!/usr/bin/env bash
# Builds and runs conv_swap_proto (the swapped patch mainloop as a whole kernel, beside the library's pingpong
# 128 x 128 patch kernel; docs/perf-notes.md v60): kdlc emits the library kernel's spec (the benchmark's
# cb_fprop3x3_sm90a_128x128x64p), nvcc links it into the prototype, which checks its outputs and times both.
# KDL_BUILD_ONLY=1 builds without running (build here, carry $OUT/bin, run there with KDL_PREBUILT=$OUT/bin).
# Env: KDLC (default build/kdlc), NVCC, OUT (default tests/gpu/standalone/out), PROTO_ARGS (batches, launches),
#   PROTO_VARIANTS ("NAME:FLAGS;NAME:FLAGS...", each NAME beginning conv_swap_proto; default: as committed, without
#   the dependent launch, counted (ITER + NEST), and counted with the shape at run time -- the -D flags are listed in
#   conv_swap_proto.cu).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
OUTDIR="${OUT:-$HERE/out}"
BIN="${KDL_PREBUILT:-$OUTDIR/bin}"
mkdir -p "$OUTDIR" "$BIN"
if [ -z "${KDL_PREBUILT:-}" ]; then
  KDLC="${KDLC:-$ROOT/build/kdlc}"
  mkdir -p "$OUTDIR/swap_proto"
  cat > "$OUTDIR/swap_proto/pp.kdl" <<'KDL'
kernel pp {
  op = conv2d_fprop; arch = sm90a;
  X : bf16 nhwc; W : bf16 krsc; Y : bf16 nhwc; accum = f32;
  tile = (128, 128, 64); stages = 6; stride = (1, 1); filter = (3, 3); schedule = pingpong;
}
KDL
  "$KDLC" emit "$OUTDIR/swap_proto/pp.kdl" -o "$OUTDIR/swap_proto" >/dev/null
  variants=("conv_swap_proto:" "conv_swap_proto_nopdl:-DKDL_PROTO_NO_PDL"
            "conv_swap_proto_counted:-DKDL_PROTO_ITER -DKDL_PROTO_NEST"
            "conv_swap_proto_runtime:-DKDL_PROTO_RUNTIME -DKDL_PROTO_ITER -DKDL_PROTO_NEST")
  if [ -n "${PROTO_VARIANTS:-}" ]; then IFS=';' read -r -a variants <<< "$PROTO_VARIANTS"; fi
  for v in "${variants[@]}"; do
    "${NVCC:-nvcc}" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v ${v#*:} -I"$ROOT/include" -I"$HERE" \
      -I"$OUTDIR/swap_proto" -o "$BIN/${v%%:*}" "$HERE/conv_swap_proto.cu" "$OUTDIR/swap_proto/pp.cu" \
      > "$OUTDIR/build_${v%%:*}.log" 2>&1 || { cat "$OUTDIR/build_${v%%:*}.log"; exit 1; }
    if grep -E "[1-9][0-9]* bytes spill|Potential Performance Loss|instructions are serialized" "$OUTDIR/build_${v%%:*}.log"; then
      echo "FAIL: ptxas spilled or serialized wgmma in ${v%%:*}"; exit 1
    fi
  done
  echo "build OK: $(ls "$BIN" | grep conv_swap_proto | tr '\n' ' ')"
fi
[ -n "${KDL_BUILD_ONLY:-}" ] && exit 0
rc=0
for i in 1 2 3; do
  for b in $(ls "$BIN" | grep '^conv_swap_proto'); do
    echo "== $b, run $i"
    "$BIN/$b" ${PROTO_ARGS:-11 20} || rc=1
  done
done
exit $rc
