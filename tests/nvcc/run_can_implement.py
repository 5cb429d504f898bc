#!/usr/bin/env python3
"""Emits tests/nvcc/arguments.kdl, compiles the kernel's .cu (host and device, sm_80) with
tests/nvcc/test_can_implement.cpp into one program, and runs it; the same for block_scales.kdl (sm_90a)
with test_can_implement_block_scales.cpp; fallback.kdl (sm_90a with its sm_80 fallback) with
test_can_implement_fallback.cpp; colmajor_args.kdl (column-major D and Z, sm_90a) with
test_can_implement_colmajor.cpp; and conv_arguments.kdl (a conv fprop and a wgrad kernel, sm_80) with
test_can_implement_conv.cpp; and conv_arguments_sm90.kdl (the sm90a wgmma fprop, dgrad and wgrad) with
test_can_implement_conv_sm90.cpp. No GPU is needed: argument errors must come before any
device query. Prints SKIP (exit 0) only when nvcc is absent."""

# (spec, kernels separated by spaces (the first names the program), test program, gencode flags separated by spaces)
PROGRAMS = [
    ("arguments.kdl", "args_all", "test_can_implement.cpp", "-gencode=arch=compute_80,code=sm_80"),
    ("block_scales.kdl", "args_block", "test_can_implement_block_scales.cpp", "-gencode=arch=compute_90a,code=sm_90a"),
    ("fallback.kdl", "args_fallback", "test_can_implement_fallback.cpp",
     "-gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_80,code=sm_80"),
    ("colmajor_args.kdl", "args_colmajor", "test_can_implement_colmajor.cpp", "-gencode=arch=compute_90a,code=sm_90a"),
    ("conv_arguments.kdl", "conv_args_fprop conv_args_wgrad", "test_can_implement_conv.cpp",
     "-gencode=arch=compute_80,code=sm_80"),
    ("conv_arguments_sm90.kdl", "conv90_args_fprop conv90_args_dgrad conv90_args_wgrad", "test_can_implement_conv_sm90.cpp",
     "-gencode=arch=compute_90a,code=sm_90a"),
]
import argparse, os, shutil, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_emitted import find_nvcc  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--include", required=True)
    a = ap.parse_args()
    nvcc = find_nvcc()
    if not nvcc:
        print("SKIP: nvcc not found ($KDL_NVCC, $CUDACXX, PATH, /usr/local/cuda/bin/nvcc); can_implement not tested")
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    tmp = tempfile.mkdtemp(prefix="kdl-can-implement-")
    failed = 0
    try:
        for spec, kernels, program, gencode in PROGRAMS:
            kernel = kernels.split()[0]
            out = os.path.join(tmp, kernel)
            r = subprocess.run([a.kdlc, "emit", os.path.join(here, spec), "-o", out, "--color=never"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print("FAIL: kdlc emit failed:\n" + r.stderr)
                return 1
            exe = os.path.join(tmp, "test_" + kernel)
            cmd = [nvcc, "-std=c++17", *gencode.split(), "-I" + a.include, "-I" + out,
                   *[os.path.join(out, k + ".cu") for k in kernels.split()], os.path.join(here, program), "-o", exe]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print("FAIL: nvcc failed:\n" + " ".join(cmd) + "\n" + r.stdout + r.stderr)
                return 1
            r = subprocess.run([exe], capture_output=True, text=True)
            print(r.stdout + r.stderr, end="")
            failed |= r.returncode != 0
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
