#!/usr/bin/env bash
# The counters of docs/perf-notes.md v21 / v22: Nsight Compute on one launch (the fourth) of each prof_gemm_sm90
# configuration at boost clock (--clock-control none), as a table: time, SM cycles, tensor-pipe activity, L2
# reads by the SMs and between the L2's halves, the L2's output port, multicast bytes, DRAM reads, warp
# instructions, shared-memory bank reads and writes. Builds prof_gemm_sm90 unless $KDL_PREBUILT holds it (build
# here with KDL_BUILD_ONLY=1, run on the GPU machine). Usage: ncu_sm90.sh [modes (default "l c d g p q") [size
# (default 4096)]]
# KDL_PROF=conv: the conv fprop instead (prof_conv_sm90, modes c p n m; size = the shape, 0 or 2; modes w x with
# size 3, the 1x1), mode u = cuDNN's kernel through PyTorch (cudnn_fprop.py, the launch inside its NVTX range).
# Besides the table's columns, the raw reports ($OUT/ncu_*.txt) hold DRAM writes and DRAM throughput.
set -u -o pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
NVCC="${NVCC:-nvcc}"
NCU="${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}"
OUTDIR="${OUT:-$HERE/out}"
BIN="${KDL_PREBUILT:-$OUTDIR/bin}"
PROF="${KDL_PROF:-gemm}"
case "$PROF" in
  gemm) DRIVER=prof_gemm_sm90; DEF_MODES="l c d g p q"; DEF_SIZE=4096; FLAGS="-lcublasLt" ;;
  conv) DRIVER=prof_conv_sm90; DEF_MODES="u c p n"; DEF_SIZE=0; FLAGS="-DKDL_TEST_SM90" ;;
  *) echo "ncu_sm90.sh: KDL_PROF must be gemm or conv"; exit 2 ;;
esac
MODES="${1:-$DEF_MODES}"
SIZE="${2:-$DEF_SIZE}"
mkdir -p "$OUTDIR" "$BIN"
if [ -z "${KDL_PREBUILT:-}" ]; then
  "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -lineinfo -I"$ROOT/include" -I"$HERE" \
    -o "$BIN/$DRIVER" "$HERE/$DRIVER.cu" $FLAGS > "$OUTDIR/build_$DRIVER.log" 2>&1 ||
    { cat "$OUTDIR/build_$DRIVER.log"; echo "FAIL: build of $DRIVER"; exit 1; }
  echo "build OK: $BIN/$DRIVER"
fi
[ -n "${KDL_BUILD_ONLY:-}" ] && exit 0
[ -x "$NCU" ] || { echo "ncu_sm90.sh: no ncu (set NCU)"; exit 77; }
MET=gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed
MET+=,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum
MET+=,lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed
MET+=,l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld_dest_multicast.sum,dram__bytes_read.sum,smsp__inst_executed.sum
MET+=,l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed
MET+=,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
printf "%-5s %10s %10s %8s %12s %12s %9s %12s %10s %12s %7s %7s\n" mode time_us sm_cycles tensor% l2_sectors fabric_sect \
  l2_out% mcast_bytes dram_MB warp_instr smem_r% smem_w%
rc=0
for m in $MODES; do
  raw="$OUTDIR/ncu_${PROF}_$m.txt"
  if [ "$PROF" = conv ] && [ "$m" = u ]; then
    "$NCU" --clock-control none --metrics "$MET" --nvtx --nvtx-include "prof/" --launch-count 1 \
      -k "regex:xmma|fprop|implicit|nvjet|conv" python3 "$HERE/cudnn_fprop.py" "$SIZE" > "$raw" 2>&1 ||
      { echo "$m: ncu failed (see $raw)"; rc=1; continue; }
  else
    k="regex:gemm_sm90"; [ "$m" = l ] && k="regex:nvjet|xmma|gemm"
    "$NCU" --clock-control none --metrics "$MET" --launch-skip 3 --launch-count 1 -k "$k" "$BIN/$DRIVER" "$m" "$SIZE" \
      > "$raw" 2>&1 || { echo "$m: ncu failed (see $raw)"; rc=1; continue; }
  fi
  val() { awk -v n="$1" '$1 == n { v = $NF; gsub(",", "", v); u = $(NF-1) } END {
      if (u == "Gbyte") v *= 1000; else if (u == "Kbyte") v /= 1000; else if (u == "byte") v /= 1e6; print v }' "$raw"; }
  printf "%-5s %10s %10s %8s %12s %12s %9s %12s %10s %12s %7s %7s\n" "$m" "$(val gpu__time_duration.sum)" "$(val sm__cycles_elapsed.avg)" \
    "$(val sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed)" "$(val lts__t_sectors_srcunit_tex_op_read.sum)" \
    "$(val lts__t_sectors_srcunit_ltcfabric.sum)" "$(val lts__lts2xbar_cycles_active.avg.pct_of_peak_sustained_elapsed)" \
    "$(val l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld_dest_multicast.sum)MB" "$(val dram__bytes_read.sum)" \
    "$(val smsp__inst_executed.sum)" "$(val l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed)" \
    "$(val l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed)"
done
exit $rc
