#!/usr/bin/env bash
# On the GPU machine, after tests/gpu/prepare.sh (KDL_KERNELS_ON_GPU_MACHINE=1) carried .carry/gpu: the conv
# benchmark's kernels built twice, A from bench/specs/conv.kdl with this tree's include/ and B (kernels renamed cbB_)
# from the same spec edited by B_SED with the headers in B_INCLUDE, timed beside cuDNN in one process by
# bench/conv_ab.py (B / A > 1: A faster). Both builds and their lists stay under .carry/gpu/ab/ (ab_a.list, ab_b.list):
# the benchmark's own library, bench.list and specs/ are left as prepare.sh and build-kernels.sh made them, so a
# tests/gpu/all.sh after it in the same tree still builds, tests and times every kernel. Environment:
#   B_INCLUDE  B's include folder (default: this tree's; e.g. a copy of another revision's include/)
#   B_SED      a sed expression more for B's spec (e.g. 's/^  stride   = (1, 1);$//': no fixed stride, so no kernel of
#              B carries the patch mainloop -- bench/conv_ab_run.sh)
#   KERNELS    the kernels to build, their names without the cb_ prefix (default: all)
#   AB_ARGS    more conv_ab.py arguments (e.g. --case C64); AB_SWAP=1: B is timed as the first build
cd "$(dirname "$0")/.."
OUT=${OUT:-out/bench}
B_INCLUDE=$(cd "${B_INCLUDE:-include}" && pwd)
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.carry/gpu/bin:/usr/local/cuda/lib64 PATH=$PATH:/usr/local/cuda/bin
C=.carry/gpu
rm -rf $C/ab
mkdir -p $C/ab/specb
sed -e "s/^kernel cb_/kernel cbB_/" -e "${B_SED:-s/^//}" $C/specs/bench/conv.kdl > $C/ab/specb/conv.kdl
KA=(); KB=()
for k in ${KERNELS:-}; do KA+=(cb_$k); KB+=(cbB_$k); done
KDL_INCLUDE_DIR=$PWD/include bench/conv_build_kernels.sh $C/specs/bench/conv.kdl $C/ab/liba "${KA[@]}" \
  > $OUT/cb_build.txt 2>&1 &
a=$!
KDL_INCLUDE_DIR=$B_INCLUDE bench/conv_build_kernels.sh $C/ab/specb/conv.kdl $C/ab/libb "${KB[@]}" \
  > $OUT/cbb_build.txt 2>&1 &
b=$!
wait $a || { tail -20 $OUT/cb_build.txt; exit 1; }
wait $b || { tail -20 $OUT/cbb_build.txt; exit 1; }
echo "specs/bench/conv.kdl ab/liba/libconv.so" > $C/ab_a.list
echo "ab/specb/conv.kdl ab/libb/libconv.so" > $C/ab_b.list
if [ -n "${AB_SWAP:-}" ]; then L="--a-list ab_b.list --b-list ab_a.list --b-rename cb_:cbB_"; else L="--a-list ab_a.list --b-list ab_b.list --b-rename cbB_:cb_"; fi
KDL_INCLUDE_DIR=$PWD/include python3 bench/conv_ab.py --carry $C $L ${AB_ARGS:-} 2>&1 | tee $OUT/ab.log
