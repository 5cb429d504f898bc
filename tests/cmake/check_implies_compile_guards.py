#!/usr/bin/env python3
"""tests/nvcc/check_implies_compile.py must never pass without testing its promise:
  * when no random kernel passes `kdlc check` (here: a kdlc whose check rejects everything), it fails;
  * when a refusal's suggested tile is refused in turn (a kdlc that suggests and refuses everything), it fails;
  * when nvcc is missing, it says SKIP and exits 77 (ctest's SKIP_RETURN_CODE), never 0;
  * --heavy draws what it says: tiles of 128 x 128 or larger, and mostly epilogues with two or more costly
    functions.
Usage: check_implies_compile_guards.py --kdlc KDLC --include INCLUDE_DIR"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nvcc", "check_implies_compile.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import check_implies_compile as gen  # noqa: E402


def run(args):
    r = subprocess.run([sys.executable, SCRIPT, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, r.stdout


def expect(cond, what, out):
    if not cond:
        print("FAIL: %s\n--- output ---\n%s" % (what, out[-3000:]))
        sys.exit(1)
    print("ok:", what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--include", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kdl-guards-") as tmp:
        rejecting = os.path.join(tmp, "kdlc-rejects-all")
        with open(rejecting, "w") as f:
            f.write("#!/bin/sh\necho 'error: rejected [test]'\nexit 1\n")
        os.chmod(rejecting, 0o755)
        rc, out = run(["--kdlc", rejecting, "--include", a.include, "--count", "5", "--seed", "1"])
        expect(rc == 1 and "FAIL: none of the 5 random kernels passed" in out,
               "no kernel passing check is a failure (exit %d)" % rc, out)
        # A kdlc that refuses every kernel and suggests a tile it refuses in turn.
        suggesting = os.path.join(tmp, "kdlc-suggests-refused")
        with open(suggesting, "w") as f:
            f.write("#!/bin/sh\necho 'error: rejected [test]'\n"
                    "echo 'x.kdl:1:1: note: `tile = (128, 128, 64);` passes `kdlc check` for kernel `k0000` (the nearest tile "
                    "that does)'\nexit 1\n")
        os.chmod(suggesting, 0o755)
        rc, out = run(["--kdlc", suggesting, "--include", a.include, "--count", "5", "--seed", "1"])
        expect(rc == 1 and "which it refuses in turn" in out,
               "a suggested tile that check refuses is a failure (exit %d)" % rc, out)
        missing = os.path.join(tmp, "no-such-nvcc")
        rc, out = run(["--kdlc", a.kdlc, "--include", a.include, "--count", "80", "--seed", "1", "--nvcc", missing])
        expect(rc == 77 and out.splitlines()[-1].startswith("SKIP: nvcc not found"),
               "a missing nvcc is a SKIP (exit %d), not a pass" % rc, out)
    rng = random.Random(3)
    heavy = [gen.random_heavy_kernel(rng, i) for i in range(200)]
    tiles = [tuple(map(int, gen.TILE_VALUES.search(k).groups()[:2])) for k in heavy]
    expect(all(m * n >= 128 * 128 for m, n in tiles),
           "--heavy: every kernel has a tile of 128 x 128 or larger", "\n".join(heavy[:5]))
    costly = sum(len(gen.HEAVY_MATH.findall(re.search(r"epilogue \{.*\}", k).group(0))) >= 2
                 for k in heavy if "epilogue {" in k)
    expect(costly >= 120, "--heavy: most kernels (%d of 200) have two or more costly functions" % costly,
           "\n".join(heavy[:5]))
    kinds = [("conv2d" in k, "arch = sm90a" in k) for k in heavy]
    expect(len(set(kinds)) == 4, "--heavy: GEMMs and convolutions on both paths", "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
