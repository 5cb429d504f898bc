#!/usr/bin/env bash
# On the GPU machine, after tests/gpu/prepare.sh (KDL_KERNELS_ON_GPU_MACHINE=1) carried .carry/gpu: builds the conv
# benchmark's KERNELS (names without the cb_ prefix), then reads ncu's counters of one launch of each on CASE (a
# substring of a bench/conv_bench.py case label) with each mainloop of MAINLOOPS (KDL_CONV_MAINLOOP), through
# bench/conv_launch.py. Writes $OUT/ncu_<kernel>_<mainloop>.txt and prints the figures (docs/perf-notes.md v48).
cd "$(dirname "$0")/.."
OUT=${OUT:-out/bench}
KERNELS=${KERNELS:-fprop3x3_sm90a_128x64x64 fprop3x3_sm90a_128x256x64}
CASE=${CASE:-N32 C256}
MAINLOOPS=${MAINLOOPS:-patch im2col}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin LD_LIBRARY_PATH=$PWD/.carry/gpu/bin:/usr/local/cuda/lib64
C=.carry/gpu
NAMES=(); for k in $KERNELS; do NAMES+=(cb_$k); done
# Its own library and list (.carry/gpu/ncu/, ncu.list): the benchmark's library and bench.list stay whole.
KDL_INCLUDE_DIR=$PWD/include bench/conv_build_kernels.sh $C/specs/bench/conv.kdl $C/ncu/lib "${NAMES[@]}" > $OUT/build.txt 2>&1 ||
  { tail $OUT/build.txt; exit 1; }
echo "specs/bench/conv.kdl ncu/lib/libconv.so" > $C/ncu.list
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,lts__t_bytes.sum,dram__bytes.sum,smsp__inst_executed.sum
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,sm__warps_active.avg.pct_of_peak_sustained_active
for k in "${NAMES[@]}"; do for ml in $MAINLOOPS; do
  echo "=== $k $ml"
  KDL_CONV_MAINLOOP=$ml timeout 200 ncu --clock-control none -k regex:gemm_sm90 --launch-skip 3 -c 1 --section WarpStateStats \
    --metrics $M python3 bench/conv_launch.py --list ncu.list --kernel $k --case "$CASE" --times 5 > $OUT/ncu_${k}_$ml.txt 2>&1
  grep -E "gpu__time|cycles_elapsed|lts__t_bytes|dram__bytes|bank_conflicts|inst_executed|warps_active|Warp Cycles" \
    $OUT/ncu_${k}_$ml.txt
done; done
