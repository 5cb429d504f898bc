#!/usr/bin/env python3
"""Compiles one hand-written .cu file against include/ with nvcc (no kdlc): a file of static_asserts on the
templates' compile-time choices (tests/nvcc/sm90_config_properties.cu) fails the test by its message.
Usage: compile_cu.py --include INCLUDE_DIR FILE.cu [nvcc flags...]
Exit 1 when nvcc fails; prints SKIP and exits 0 only when nvcc is absent."""
import argparse, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_emitted import find_nvcc  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--include", required=True)
    ap.add_argument("file")
    args, flags = ap.parse_known_args()
    nvcc = find_nvcc()
    if nvcc is None:
        print("SKIP: no nvcc")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, "-std=c++17", "-I" + args.include, *flags, "-c", args.file, "-o", os.path.join(tmp, "out.o")]
        r = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(r.stdout + r.stderr)
    print(("PASS: " if r.returncode == 0 else "FAIL: ") + os.path.basename(args.file))
    return 0 if r.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
