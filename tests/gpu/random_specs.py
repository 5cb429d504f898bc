#!/usr/bin/env python3
"""Random kernels for the GPU suite: specs nobody wrote by hand, each one `kdlc check` accepts, so each must build
and give right answers (the promise of `check`, on the GPU).

  random_specs.py --kdlc KDLC --out FILE.kdl [--count 40] [--seed S] [--heavy]

Draws random kernels with the generator of tests/nvcc/check_implies_compile.py (GEMMs on the sm80 and sm90a
paths, convolutions on both: dtypes, layouts, tiles, schedules, clusters, split-K, fixed filters and strides,
residuals, [channel] epilogues, extra outputs, amax), keeps each that `kdlc check` accepts -- and, where check
refuses a kernel's tile and names the nearest tile that passes, the kernel with that tile -- until `count` kernels,
and writes them to one spec file (kernels r<seed>_<n>), which it checks once more as a whole. The suite then
builds it (`kdlc build`) and runs it like any spec (kdl_gpu_test: fresh random inputs, odd sizes, poisoned
outputs, against the fp64 / cuBLASLt reference). The seed is printed and written into the file: a failure
replays with --seed. Exit 0 with the file written, 1 when fewer than `count` kernels were found in the tries
allowed (20 x count) or the whole file is refused, 2 on a bad command line.
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "nvcc"))
import check_implies_compile as gen  # noqa: E402


def check(kdlc, path):
    return subprocess.run([kdlc, "check", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kdlc", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--heavy", action="store_true",
                    help="draw where the register rules are thresholds (check_implies_compile.py --heavy): the largest "
                         "tiles, epilogues with two or more costly functions")
    a = ap.parse_args()
    if a.count < 1:
        ap.error("--count must be at least 1")
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    print("random_specs: seed %d (replay with --seed %d)" % (seed, seed), flush=True)
    rng = random.Random(seed)
    kept, suggested = [], 0
    with tempfile.TemporaryDirectory(prefix="kdl-random-specs-") as tmp:
        path = os.path.join(tmp, "k.kdl")
        for i in range(20 * a.count):
            if len(kept) == a.count:
                break
            src = gen.random_heavy_kernel(rng, i) if a.heavy else gen.random_kernel(rng, i)
            with open(path, "w") as f:
                f.write(src)
            r = check(a.kdlc, path)
            if r.returncode == 1:
                fixes = gen.suggested_specs(src, r.stdout)
                if not fixes:
                    continue
                src = fixes[0][1]
                with open(path, "w") as f:
                    f.write(src)
                r = check(a.kdlc, path)
                suggested += r.returncode == 0
            if r.returncode != 0:
                print("random_specs: kdlc check exited %d on a kernel (or on its suggested tile):\n%s\n%s"
                      % (r.returncode, src, r.stdout))
                return 1
            kept.append(re.sub(r"^kernel k(\d+)", "kernel r%d_%d" % (seed, len(kept)), src, count=1))
    if len(kept) < a.count:
        print("random_specs: only %d of %d kernels passed check in %d tries" % (len(kept), a.count, 20 * a.count))
        return 1
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        f.write("// %d random kernels that `kdlc check` accepts (%d with the tile a refusal suggested), written by\n"
                "// tests/gpu/random_specs.py --seed %d --count %d%s.\n\n"
                % (len(kept), suggested, seed, a.count, " --heavy" if a.heavy else ""))
        f.write("\n".join(kept))
    r = check(a.kdlc, a.out)
    if r.returncode != 0:
        print("random_specs: kdlc check refuses the whole file (exit %d):\n%s" % (r.returncode, r.stdout))
        return 1
    n90 = sum("arch = sm90a" in k for k in kept)
    nconv = sum("op = conv2d" in k for k in kept)
    print("random_specs: wrote %s: %d kernels (%d sm90a, %d convolutions, %d with a suggested tile)"
          % (a.out, len(kept), n90, nconv, suggested))
    return 0


if __name__ == "__main__":
    sys.exit(main())
