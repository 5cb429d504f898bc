#!/usr/bin/env python3
"""Emits tests/nvcc/arguments.kdl, compiles the kernel's .cu (host and device, sm_80) with
tests/nvcc/test_can_implement.cpp into one program, and runs it: no GPU is needed, argument errors
must come before any device query. Prints SKIP (exit 0) only when nvcc is absent."""
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
    try:
        out = os.path.join(tmp, "out")
        r = subprocess.run([a.kdlc, "emit", os.path.join(here, "arguments.kdl"), "-o", out, "--color=never"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL: kdlc emit failed:\n" + r.stderr)
            return 1
        exe = os.path.join(tmp, "test_can_implement")
        cmd = [nvcc, "-std=c++17", "-gencode=arch=compute_80,code=sm_80", "-I" + a.include, "-I" + out,
               os.path.join(out, "args_all.cu"), os.path.join(here, "test_can_implement.cpp"), "-o", exe]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL: nvcc failed:\n" + " ".join(cmd) + "\n" + r.stdout + r.stderr)
            return 1
        r = subprocess.run([exe], capture_output=True, text=True)
        print(r.stdout + r.stderr, end="")
        return r.returncode
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
