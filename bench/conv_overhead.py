#!/usr/bin/env python3
"""Is the conv benchmark's paired figure moved by the host or by the batch length? (docs/perf-notes.md v46)

  python3 bench/conv_overhead.py [--carry .carry/gpu]        (on the GPU machine, after bench/conv_run.sh's build)

For each fprop shape of bench/conv_bench.py and the sm90a kernel its table picks there (v44): the host time of one
launch -- kdl's through its C ABI by ctypes, as conv_bench launches it, and cuDNN's through F.conv2d -- timed on the
CPU while the GPU's queue is full (so no launch waits for the GPU); then the two paired as conv_bench pairs them
(7 pairs of batches), with batches of 20 launches (the benchmark's) and of 200, twice each. A host cost larger than
the anchor's would show as a ratio that rises with the batch length (the event that opens a batch waits for the first
launch to be issued).
"""
import argparse
import os
import statistics
import sys
import time

import conv_bench as cb  # beside this script; it puts tests/gpu/conv on the path for conv_abi
import torch

ca = cb.ca
ROOT = cb.ROOT

BEST = {  # the sm90a kernel of v44's table per shape (bench/results/2026-11-29-h200-conv-v44.md)
    "N32 C256 56x56 K256 3x3": "cb_fprop3x3_sm90a_128x256x64",
    "N128 C64 56x56 K64 3x3": "cb_fprop3x3_sm90a_128x64x64p",
    "N32 C512 28x28 K512 3x3": "cb_fprop3x3_sm90a_128x256x64",
    "N64 C128 112x112 K128 1x1": "cb_fprop1x1_sm90a_128x128x64",
}


def host_us(f, n=200):
    """CPU microseconds per call of f, with 30 launches queued ahead so that none waits for the GPU."""
    for _ in range(30):
        f()
    t = time.perf_counter()
    for _ in range(n):
        f()
    dt = (time.perf_counter() - t) / n * 1e6
    ca.synchronize()
    return dt


def best_launches(kernels, op, pr):
    """(kdl's launch of the case's BEST kernel, cuDNN's launch of the case, None), or (None, None, why) when that
    kernel is missing from the bench libraries or refuses the case."""
    found = [k for k in kernels if k.name == BEST[pr.label]]
    if not found:
        return None, None, f"{BEST[pr.label]} is not in the bench libraries"
    inputs, out_dims, cudnn = cb.case_operands(op, pr)
    kdl = cb.KdlLaunch(found[0], pr, 1, inputs, out_dims)
    why = kdl.can_implement()
    return (None, None, f"{found[0].name} refuses the case: {why}") if why is not None else (kdl, cudnn, None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--carry", default=os.path.join(ROOT, ".carry", "gpu"))
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    if hasattr(torch.backends.cudnn, "benchmark_limit"):
        torch.backends.cudnn.benchmark_limit = 0
    torch.backends.cudnn.allow_tf32 = False
    kernels, problems = ca.discover(a.carry, ["bench.list"])
    for p in problems:
        print("PROBLEM " + p)
    print(f"conv_overhead: {ca.device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}; "
          f"{len(kernels)} conv kernels", flush=True)
    status = 0
    for op, pr in cb.CASES:
        if op != "conv2d_fprop" or pr.label not in BEST:
            continue
        kdl, cudnn, why = best_launches(kernels, op, pr)
        if why is not None:
            print(f"{pr.label}: {why}")
            status = 1
            continue
        for f in (kdl, cudnn):
            for _ in range(20):
                f()
        ca.synchronize()
        hk = [host_us(kdl) for _ in range(3)]
        hc = [host_us(cudnn) for _ in range(3)]
        print(f"{pr.label} ({kdl.kernel.name}): host us per launch: kdl {' '.join(f'{x:.1f}' for x in hk)}, "
              f"cuDNN {' '.join(f'{x:.1f}' for x in hc)}", flush=True)
        for iters in (20, 200, 20, 200):
            o, t = cb.time_paired(kdl, cudnn, 5, 7, iters)
            print(f"  batches of {iters}: kdl {statistics.median(o) * 1e3:.1f} us, cuDNN {statistics.median(t) * 1e3:.1f} "
                  f"us, paired ratio {cb.pair_ratio(o, t):.3f}", flush=True)
        del kdl
        torch.cuda.empty_cache()
    return status


if __name__ == "__main__":
    sys.exit(main())
