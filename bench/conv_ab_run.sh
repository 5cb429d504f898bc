#!/usr/bin/env bash
# On the GPU machine, after tests/gpu/prepare.sh (KDL_KERNELS_ON_GPU_MACHINE=1) carried .carry/gpu: builds bench/specs/conv.kdl
# (A) and the same spec without its fixed stride, its kernels renamed cbB_ (B: no kernel carries the patch mainloop),
# then bench/conv_ab.py times the two beside cuDNN in one process, on the 3x3 cases (docs/perf-notes.md v47): that is
# bench/conv_ab_headers.sh with B's spec edited so. AB_ARGS: more conv_ab.py arguments (e.g. --kernel sm90a_256x64
# --rounds 3); KERNELS and AB_SWAP as there.
# With KDL_CONV_MAINLOOP=patch, A takes the patch mainloop wherever it can (the table of v47); by default where it pays.
B_SED='s/^  stride   = (1, 1);$//' AB_ARGS="--case 3x3 ${AB_ARGS:-}" exec "$(dirname "$0")/conv_ab_headers.sh"
