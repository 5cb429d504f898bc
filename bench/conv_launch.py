#!/usr/bin/env python3
"""Launches one kernel of the conv benchmark's libraries on one of its cases, `--times` times, and nothing else: a
target for a profiler (e.g. ncu --clock-control none -k regex:gemm_sm90 --launch-skip 3 -c 1 python3 bench/conv_launch.py
...). KDL_CONV_MAINLOOP=patch | im2col picks an sm90a fprop kernel's mainloop as in the benchmark.

  python3 bench/conv_launch.py --kernel NAME --case SUBSTRING [--times 5] [--carry .carry/gpu] [--list bench.list]
"""
import argparse
import os

import conv_bench as cb  # beside this script; it puts tests/gpu/conv on the path for conv_abi

ca = cb.ca
ROOT = cb.ROOT


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--carry", default=os.path.join(ROOT, ".carry", "gpu"))
    ap.add_argument("--list", default="bench.list")
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--case", required=True, help="a substring of one case's label (bench/conv_bench.py CASES)")
    ap.add_argument("--times", type=int, default=5)
    a = ap.parse_args()
    kernels, problems = ca.discover(a.carry, [a.list], kernel_filter={a.kernel})
    if problems or len(kernels) != 1:
        raise SystemExit(f"conv_launch: kernel {a.kernel} not found in {a.list}: {problems}")
    cases = [(op, pr) for op, pr in cb.CASES if a.case in pr.label and op == kernels[0].op]
    if len(cases) != 1:
        raise SystemExit(f"conv_launch: {len(cases)} cases of {kernels[0].op} match {a.case!r}")
    op, pr = cases[0]
    inputs, out_dims, _ = cb.case_operands(op, pr)
    launch = cb.KdlLaunch(kernels[0], pr, 1, inputs, out_dims)
    why = launch.can_implement()
    if why is not None:
        raise SystemExit(f"conv_launch: {a.kernel} refuses {pr.label}: {why}")
    for _ in range(a.times):
        launch()
    ca.synchronize()
    print(f"conv_launch: {a.kernel} on {pr.label}, {a.times} launches")


if __name__ == "__main__":
    main()
