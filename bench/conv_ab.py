#!/usr/bin/env python3
"""Two builds of the conv benchmark's kernels, A and B, timed in one process beside cuDNN (docs/perf-notes.md v47).

  python3 bench/conv_ab.py --a-list ab_a.list --b-list ab_b.list [--b-rename FROM:TO] [--carry .carry/gpu]
                           [--case SUBSTRING]... [--kernel SUBSTRING]... [--rounds 3] [--runs 7] [--iters 20] [--out DIR]

A and B are two libraries of the same kernels (e.g. bench/specs/conv.kdl as it is, and the same spec built another
way: without its fixed stride, so that no kernel carries the patch mainloop), B's names renamed (--b-rename). Per fprop case of
bench/conv_bench.py and per kernel name both libraries hold and that takes the case, the two builds and cuDNN run in
alternating batches (A, cuDNN, B, cuDNN, ...) of `iters` launches, `runs` of each per round, the rounds spread over
the case's minutes: the card's clock drifts under its power cap, so what is compared runs in the same seconds.
Reported per kernel: median ms of A and B, each one's paired ratio to cuDNN (median of the per-pair ratios cuDNN /
kdl, as conv_bench), and B / A's median per-pair ratio (> 1: A faster). Each library's output is checked against
cuDNN once (relative Frobenius error <= 2e-2). Writes DIR/conv_ab.txt (DIR: $OUT, else out/bench).
"""
import argparse
import os
import statistics
import sys

import conv_bench as cb  # beside this script; it puts tests/gpu/conv on the path for conv_abi
import torch

ca = cb.ca
ROOT = cb.ROOT


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--carry", default=os.path.join(ROOT, ".carry", "gpu"))
    ap.add_argument("--a-list", default="bench.list")
    ap.add_argument("--b-list", required=True)
    ap.add_argument("--b-rename", default="", metavar="FROM:TO",
                    help="B's kernel names with FROM in place of A's TO (two libraries must not share a kernel name: "
                         "their template instances would share one-time state, docs/perf-notes.md v47)")
    ap.add_argument("--case", action="append", default=[])
    ap.add_argument("--kernel", action="append", default=[], help="only A's kernels whose name has this substring")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(ROOT, "out", "bench")))
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    ka, pa = ca.discover(a.carry, [a.a_list])
    kb, pb = ca.discover(a.carry, [a.b_list])
    for p in pa + pb:
        print("PROBLEM " + p)
    frm, _, to = a.b_rename.partition(":")
    by_b = {(k.name.replace(frm, to, 1) if frm else k.name): k for k in kb}
    cc = ca.device_capability()
    lines = [f"conv_ab: {ca.device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}; "
             f"A = {a.a_list}, B = {a.b_list}; {a.rounds} rounds x {a.runs} batches of {a.iters}"]
    print(lines[0], flush=True)
    status = 0
    compared = 0
    for op, pr in cb.CASES:
        if op != "conv2d_fprop" or (a.case and not any(c in pr.label for c in a.case)):
            continue
        inputs, out_dims, cudnn = cb.case_operands(op, pr)
        ref = cudnn().float()
        pairs = []
        for k in ka:
            if k.name not in by_b or not cb.fits(k, op, pr, cc) or (a.kernel and not any(x in k.name for x in a.kernel)):
                continue
            la = cb.KdlLaunch(k, pr, 1, inputs, out_dims)
            lb = cb.KdlLaunch(by_b[k.name], pr, 1, inputs, out_dims)
            if la.can_implement() is not None or lb.can_implement() is not None:
                continue
            ok = True
            for tag, launch in (("A", la), ("B", lb)):
                try:
                    launch()
                    ca.synchronize()
                except RuntimeError as e:
                    print(f"FAILED {pr.label} {k.name} {tag}: {e} (path {launch.kernel.path(launch.shape, launch.args)}, "
                          f"workspace {launch.ws_bytes} bytes)", flush=True)
                    ok, status = False, 1
                    continue
                err = cb.relative_error(launch.out.view, ref)
                if err > 2e-2:
                    print(f"WRONG {pr.label} {k.name} {tag}: relative error {err:.3g}", flush=True)
                    ok, status = False, 1
            if ok:
                pairs.append((k.name, la, lb, k.path(la.shape, la.args), by_b[k.name].path(lb.shape, lb.args)))
        ta = {n: [] for n, *_ in pairs}
        tb = {n: [] for n, *_ in pairs}
        cudnn_a = {n: [] for n, *_ in pairs}
        cudnn_b = {n: [] for n, *_ in pairs}
        for _ in range(a.rounds):
            for name, la, lb, _pa, _pb in pairs:
                for _ in range(3):
                    la()
                    lb()
                    cudnn()
                ca.synchronize()
                for _ in range(a.runs):
                    ta[name].append(cb.batch_ms(la, a.iters))
                    cudnn_a[name].append(cb.batch_ms(cudnn, a.iters))
                    tb[name].append(cb.batch_ms(lb, a.iters))
                    cudnn_b[name].append(cb.batch_ms(cudnn, a.iters))
        for name, _la, _lb, path_a, path_b in pairs:
            ma, mb = statistics.median(ta[name]), statistics.median(tb[name])
            ra, rb = cb.pair_ratio(ta[name], cudnn_a[name]), cb.pair_ratio(tb[name], cudnn_b[name])
            ab = statistics.median(y / x for x, y in zip(ta[name], tb[name]))
            line = (f"{pr.label:28s} {name:34s} A[{path_a or '-'}] {ma * 1e3:7.1f} us ({ra:.3f}x cuDNN)  "
                    f"B[{path_b or '-'}] {mb * 1e3:7.1f} us ({rb:.3f}x cuDNN)  B/A {ab:.3f}")
            print(line, flush=True)
            lines.append(line)
            compared += 1
        del pairs
        torch.cuda.empty_cache()
    if compared == 0:
        # Nothing timed is a failure, not an empty table: the lists' names did not meet (--b-rename), or the filters or
        # can_implement left no kernel.
        msg = (f"conv_ab: no kernel was compared: none of A's {len(ka)} kernels has a counterpart among B's {len(kb)} "
               f"(after --b-rename '{a.b_rename}') that takes a selected case")
        print(msg, flush=True)
        lines.append(msg)
        status = 1
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "conv_ab.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
