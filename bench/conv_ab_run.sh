#!/usr/bin/env bash
# On the GPU machine, after tests/gpu/prepare.sh (KDL_KERNELS_ON_GPU_MACHINE=1) carried .carry/gpu: builds bench/specs/conv.kdl
# (A) and the same spec without its fixed stride, its kernels renamed cbB_ (B: no kernel carries the patch mainloop),
# then bench/conv_ab.py times the two beside cuDNN in one process (docs/perf-notes.md v47). AB_ARGS: more conv_ab.py
# arguments (e.g. --kernel sm90a_256x64 --rounds 3).
# With KDL_CONV_MAINLOOP=patch, A takes the patch mainloop wherever it can (the table of v47); by default where it pays.
cd "$(dirname "$0")/.."
OUT=${OUT:-out/bench}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.carry/gpu/bin:/usr/local/cuda/lib64 KDL_INCLUDE_DIR=$PWD/include PATH=$PATH:/usr/local/cuda/bin
C=.carry/gpu
mkdir -p $C/libs/bench $C/libs/benchb $C/specs/benchb
sed -e "s/^  stride   = (1, 1);$//" -e "s/^kernel cb_/kernel cbB_/" $C/specs/bench/conv.kdl > $C/specs/benchb/conv.kdl
grep -c "stride   = (1, 1)" $C/specs/benchb/conv.kdl
$C/bin/kdlc build $C/specs/bench/conv.kdl -o /tmp/cb -j 16 > $OUT/cb_build.txt 2>&1 || { tail -20 $OUT/cb_build.txt; exit 1; } &
$C/bin/kdlc build $C/specs/benchb/conv.kdl -o /tmp/cbb -j 16 > $OUT/cbb_build.txt 2>&1 || { tail -20 $OUT/cbb_build.txt; exit 1; } &
wait
cp /tmp/cb/libconv.so $C/libs/bench/; $C/bin/kdlc list --json $C/specs/bench/conv.kdl > $C/libs/bench/conv.kernels.json
cp /tmp/cbb/libconv.so $C/libs/benchb/; $C/bin/kdlc list --json $C/specs/benchb/conv.kdl > $C/libs/benchb/conv.kernels.json
echo "specs/bench/conv.kdl libs/bench/libconv.so" > $C/bench.list
echo "specs/benchb/conv.kdl libs/benchb/libconv.so" > $C/bench_b.list
if [ -n "${AB_SWAP:-}" ]; then L="--a-list bench_b.list --b-list bench.list"; else L="--b-list bench_b.list --b-rename cbB_:cb_"; fi
python3 bench/conv_ab.py --carry $C $L --case 3x3 ${AB_ARGS:-} 2>&1 | tee $OUT/ab.log
