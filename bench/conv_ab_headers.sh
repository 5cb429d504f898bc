#!/usr/bin/env bash
# On the GPU machine, after tests/gpu/prepare.sh (KDL_KERNELS_ON_GPU_MACHINE=1) carried .carry/gpu: the conv
# benchmark's kernels built twice from the same spec, A with this tree's include/ and B (kernels renamed cbB_) with
# the headers in $B_INCLUDE (a copy of another revision's include/ folder), timed beside cuDNN in one process by
# bench/conv_ab.py (B / A > 1: A faster). AB_ARGS: more conv_ab.py arguments (e.g. --case C64); KERNELS: the kernels
# to build, their names without the cb_ prefix (default: all); B_SED: a sed expression more for B's spec (e.g.
# 's/^  stride   = (1, 1);$//': no fixed stride, so no kernel of B carries the patch mainloop, as bench/conv_ab_run.sh).
cd "$(dirname "$0")/.."
OUT=${OUT:-out/bench}
B_INCLUDE=${B_INCLUDE:?set B_INCLUDE to the include folder of the other revision}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.carry/gpu/bin:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
C=.carry/gpu
mkdir -p $C/libs/bench $C/libs/benchb $C/specs/benchb
sed -e "s/^kernel cb_/kernel cbB_/" -e "${B_SED:-s/^//}" $C/specs/bench/conv.kdl > $C/specs/benchb/conv.kdl
KA=(); KB=()
for k in ${KERNELS:-}; do KA+=(--kernel cb_$k); KB+=(--kernel cbB_$k); done
rm -rf /tmp/cb /tmp/cbb
KDL_INCLUDE_DIR=$PWD/include $C/bin/kdlc build $C/specs/bench/conv.kdl -o /tmp/cb -j 16 "${KA[@]}" > $OUT/cb_build.txt 2>&1 &
KDL_INCLUDE_DIR=$(cd "$B_INCLUDE" && pwd) $C/bin/kdlc build $C/specs/benchb/conv.kdl -o /tmp/cbb -j 16 "${KB[@]}" > $OUT/cbb_build.txt 2>&1 &
wait
for f in /tmp/cb/libconv.so /tmp/cbb/libconv.so; do [ -f $f ] || { tail -20 $OUT/cb_build.txt $OUT/cbb_build.txt; exit 1; }; done
# The libraries' kernels.json: the kernels built (KERNELS) only.
listed() {
  $C/bin/kdlc list --json "$1" | python3 -c '
import json, sys
keep = set(sys.argv[2:])
d = json.load(sys.stdin)
d["kernels"] = [k for k in d["kernels"] if not keep or k["name"][len(sys.argv[1]):] in keep]
json.dump(d, sys.stdout)' "$2" ${KERNELS:-}
}
cp /tmp/cb/libconv.so $C/libs/bench/; listed $C/specs/bench/conv.kdl cb_ > $C/libs/bench/conv.kernels.json
cp /tmp/cbb/libconv.so $C/libs/benchb/; listed $C/specs/benchb/conv.kdl cbB_ > $C/libs/benchb/conv.kernels.json
echo "specs/bench/conv.kdl libs/bench/libconv.so" > $C/bench.list
echo "specs/benchb/conv.kdl libs/benchb/libconv.so" > $C/bench_b.list
KDL_INCLUDE_DIR=$PWD/include python3 bench/conv_ab.py --carry $C --b-list bench_b.list --b-rename cbB_:cb_ ${AB_ARGS:-} 2>&1 | tee $OUT/ab.log
