#!/usr/bin/env python3
"""The conv benchmark: the conv kernels of bench/specs/conv.kdl beside cuDNN (through PyTorch), bf16 NHWC,
on the shapes of ANCHORS.md, in one process on one GPU.

  python3 bench/conv_bench.py [--carry .carry/gpu] [--out DIR] [--case SUBSTRING]... [--runs 7] [--rounds 3]
                              [--iters 20] [--warmup 10] [--sustain 2]

Per case and kernel (every kernel whose op, dtype, fixed filter and stride fit the case; serial split-K
kernels at 1, 2, 4 and 8 slices up to their serial(N)): the kernel is launched through its C ABI (ctypes,
tests/gpu/conv/conv_abi.py) on PyTorch's current stream with Y = alpha * acc at alpha's default; its
output is checked once against cuDNN's (relative Frobenius error <= 2e-2, else WRONG: it cannot win);
then, in each of `rounds` rounds over the case's candidates, `warmup` launches and `runs` batches of `iters`
launches timed with CUDA events, each batch followed by a batch of cuDNN's on the same case: the card's clock
drifts under its power cap, so the two are compared in the same minutes, and the rounds spread each
candidate's pairs over the case's minutes (a single turn read up to 7 % apart by its place in the list: v39 in
docs/perf-notes.md). Medians of each over all rounds; ratio = the median of all per-pair ratios cuDNN ms /
kdl ms, >= 1: kdl as fast or faster; the table gives the range of the rounds' own ratios beside it. cuDNN
runs on channels_last bf16 tensors with torch.backends.cudnn.benchmark = True (torch.nn.functional.conv2d,
torch.nn.grad.conv2d_input / conv2d_weight). Which cuDNN algorithm runs is chosen per case, and the faster choice is the anchor: the
autotuner's (cudnn.benchmark = True with benchmark_limit = 0: every algorithm tried; with PyTorch's default
limit of 10 its pick moved between processes, the first 3x3 fprop case timing 0.156 ms in one run and 0.174 ms
in the next) or the heuristics' (benchmark = False); both are timed alone first (their rows in the csv, the
chosen one marked). TFLOP/s count 2 * N*P*Q*K*R*S*C for
all three ops. The table has the best kernel (highest ratio) per case and arch (sm80 path, sm90a: the
same template compiled for sm_90a), with cuDNN's figure from that kernel's pairs.
With --sustain S (default 2; 0: off), the best sm90a kernel per case and cuDNN then each run back to back for
S seconds, twice, alternating: the figure at the card's power cap (time_sustained), reported beside the paired one.
Writes DIR/conv_bench.md (the table, also printed), conv_bench.csv (every measurement) and
conv_bench.json (the table and the device); DIR defaults to $OUT, else out/bench.
"""
import argparse
import csv
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu", "conv"))
import conv_abi as ca  # noqa: E402

import torch  # noqa: E402

P1 = ca.Problem(32, 56, 56, 256, 256, 3, 3, (1, 1), label="N32 C256 56x56 K256 3x3")
CASES = [
    ("conv2d_fprop", P1),
    ("conv2d_fprop", ca.Problem(128, 56, 56, 64, 64, 3, 3, (1, 1), label="N128 C64 56x56 K64 3x3")),
    ("conv2d_fprop", ca.Problem(32, 28, 28, 512, 512, 3, 3, (1, 1), label="N32 C512 28x28 K512 3x3")),
    ("conv2d_fprop", ca.Problem(64, 112, 112, 128, 128, 1, 1, (0, 0), label="N64 C128 112x112 K128 1x1")),
    ("conv2d_dgrad", P1),
    ("conv2d_wgrad", P1),
]
OP_WORD = {"conv2d_fprop": "fprop", "conv2d_dgrad": "dgrad", "conv2d_wgrad": "wgrad"}


def one_wave_split(k, pr, op, sms=132):
    """The most serial split-K slices whose CTAs still fit one wave of an H100's 132 SMs (wgrad's output
    has few tiles: k x r*s*c); 1 for the other ops."""
    if op != "conv2d_wgrad":
        return 1
    tm, tn = k.tile[0], k.tile[1]
    tiles = -(-pr.k // tm) * -(-(pr.r * pr.s * pr.c) // tn)
    return max(1, sms // max(1, tiles))

def fits(kernel, op, pr, cc):
    if kernel.op != op or kernel.dtype(kernel.in0) != "bf16" or kernel.dtype(kernel.in1) != "bf16":
        return False
    if kernel.filter and kernel.filter != (pr.r, pr.s):
        return False
    if kernel.stride and kernel.stride != pr.stride:
        return False
    need = {"sm80": 80, "sm86": 86, "sm89": 89, "sm90a": 90, "sm100a": 100}.get(kernel.arch, 80)
    return cc == need if kernel.arch in ("sm90a", "sm100a") else cc >= need


def batch_ms(f, iters):
    """ms per launch of `iters` launches of f back to back (CUDA events on the current stream)."""
    def run():
        for _ in range(iters):
            f()
    return ca.measure_ms(run) / iters


def time_launches(launch, warmup, runs, iters):
    """Median ms per launch over `runs` batches of `iters` launches."""
    for _ in range(warmup):
        launch()
    ca.synchronize()
    return statistics.median(batch_ms(launch, iters) for _ in range(runs))


def time_sustained(launch, anchor, seconds, iters):
    """Each of `launch` and `anchor` run back to back for `seconds`, twice, alternating (launch, anchor, launch,
    anchor): the card settles at its power cap within a second or two, where a kernel's speed is its speed per
    watt. Per window, the median ms per launch of the batches in its second half; returns (mean ms of launch,
    of anchor, anchor / launch from the two windows' means)."""
    def window(f):
        ms = []
        t0 = time.time()
        while time.time() - t0 < seconds:
            ms.append(batch_ms(f, iters))
        return statistics.median(ms[len(ms) // 2:])

    ours, theirs = [], []
    for _ in range(2):
        ours.append(window(launch))
        theirs.append(window(anchor))
    o, t = statistics.mean(ours), statistics.mean(theirs)
    return o, t, t / max(o, 1e-12)


def time_paired(launch, anchor, warmup, runs, iters):
    """`launch` and `anchor` in `runs` alternating batches: (ms per launch of each of launch's batches, of each
    of anchor's), batch i of one beside batch i of the other."""
    for _ in range(warmup):
        launch()
        anchor()
    ca.synchronize()
    ours, theirs = [], []
    for _ in range(runs):
        ours.append(batch_ms(launch, iters))
        theirs.append(batch_ms(anchor, iters))
    return ours, theirs


def pair_ratio(ours, theirs):
    """The median of the per-pair ratios anchor / launch."""
    return statistics.median(t / max(o, 1e-12) for o, t in zip(ours, theirs))


class KdlLaunch:
    """One kernel on one case: its arguments built once, launched through kdl_NAME_run."""

    def __init__(self, kernel, pr, split, inputs, out_dims):
        self.kernel, self.pr, self.split = kernel, pr, split
        self.out = ca.Tensor4(out_dims, torch.bfloat16 if kernel.dtype(kernel.out) == "bf16" else torch.float32,
                              out_dims[1])
        self.keep = []  # epilogue inputs / amax buffers, alive as long as the launch
        args = []
        for name, kind, default in zip(kernel.arg_names, kernel.arg_kinds, kernel.param_defaults):
            if name in inputs:
                args.append(inputs[name].arg())
            elif name == kernel.out:
                args.append(self.out.arg())
            elif kind == ca.ARG_PARAM:
                args.append(ca.KdlArg(None, 0, 0, default))
            elif kind in (ca.ARG_VECTOR, ca.ARG_DEVICE_SCALAR):  # inputs of ones, amax outputs
                n = max(out_dims[0], out_dims[1])
                t = torch.ones((n,), dtype=torch.float32, device=ca.DEVICE)
                self.keep.append(t)
                args.append(ca.KdlArg(t.data_ptr(), 0, 0, 0.0))
            else:  # an extra output tensor
                t = ca.Tensor4(out_dims, torch.float32, out_dims[1])
                self.keep.append(t)
                args.append(t.arg())
        self.args = (ca.KdlArg * len(args))(*args)
        self.shape = pr.shape(split)
        self.ws_bytes = kernel.workspace_size(self.shape)
        self.ws = torch.empty((max(self.ws_bytes, 1),), dtype=torch.uint8, device=ca.DEVICE)
        self.stream = ca.stream_handle()

    def can_implement(self):
        return self.kernel.can_implement(self.shape, self.args)

    def __call__(self):
        rc = self.kernel.run(self.shape, self.args, self.ws.data_ptr() if self.ws_bytes else None, self.ws_bytes,
                             self.stream)
        if rc != ca.KDL_OK:
            raise RuntimeError(f"{self.kernel.name}: run returned {rc}")


def relative_error(out, ref):
    """A kdl output's relative Frobenius error against cuDNN's `ref` (float); a NaN counts as 1e30."""
    got = torch.nan_to_num(out.float(), nan=1e30)
    return float(torch.linalg.vector_norm((got - ref).flatten()) / max(float(torch.linalg.vector_norm(ref.flatten())), 1e-30))


def case_operands(op, pr):
    """A case's bf16 inputs (random, seed 1) by operand name, its output's dims, and cuDNN's launch of the case on
    channels_last copies of the inputs (the anchor; it returns cuDNN's output)."""
    gen = torch.Generator(device=ca.DEVICE)
    gen.manual_seed(1)
    in_names = ca.OPERANDS[op][:2]
    inputs = {n: ca.Tensor4(pr.tensor_dims(n), torch.bfloat16, pr.tensor_dims(n)[1], gen) for n in in_names}
    out_dims = pr.tensor_dims(ca.OPERANDS[op][2])
    a0, a1 = (inputs[n].view.contiguous(memory_format=torch.channels_last) for n in in_names)
    return inputs, out_dims, lambda: ca.conv_reference(op, a0, a1, pr)


def bench_case(op, pr, kernels, cc, a, rows, table):
    label = f"{OP_WORD[op]} {pr.label}"
    inputs, out_dims, cudnn = case_operands(op, pr)
    flops = pr.flops()
    tf = lambda ms: flops / (ms * 1e-3) / 1e12  # noqa: E731
    # cuDNN's algorithm: the autotuner's pick or the heuristics', whichever runs faster (module docstring).
    timed = []
    for how in ("autotuned", "heuristic"):
        torch.backends.cudnn.benchmark = how == "autotuned"
        timed.append((time_launches(cudnn, a.warmup, a.runs, a.iters), how))
    cudnn_ms, chosen = min(timed)
    torch.backends.cudnn.benchmark = chosen == "autotuned"
    ref = cudnn().float()
    print(f"== {label}: cuDNN {cudnn_ms:.3f} ms ({tf(cudnn_ms):.1f} TFLOP/s, {chosen}; " +
          ", ".join(f"{how} {ms:.3f} ms" for ms, how in timed) + ")", flush=True)
    for ms, how in timed:
        rows.append({"case": label, "op": OP_WORD[op], "impl": "cuDNN", "kernel": f"cudnn ({how})", "arch": "",
                     "split": "", "ms": f"{ms:.4f}", "tflops": f"{tf(ms):.1f}", "cudnn_ms": "", "ratio": "",
                     "status": "ok (the anchor)" if how == chosen else "ok"})
    # Every candidate that can run is checked once, then timed in `rounds` rounds, each round timing every candidate
    # once (runs pairs): a candidate's pairs are spread over the case's minutes, not bunched where the card happened
    # to be cool or warm when its turn came.
    cands = []
    for k in kernels:
        if not fits(k, op, pr, cc):
            continue
        splits = [s for s in sorted({1, 2, 4, 8, one_wave_split(k, pr, op)}) if s <= k.slices]
        if k.slices > 1:
            splits.append(0)  # split_k 0: the kernel's own choice (kdl/split_k.h), timed beside the fixed counts
        for split in splits:
            launch = KdlLaunch(k, pr, split, inputs, out_dims)
            why = launch.can_implement()
            status = "ok"
            if why is not None:
                status = "rejected: " + why
                del launch
                launch = None
            else:
                launch()
                ca.synchronize()
                err = relative_error(launch.out.view, ref)
                if err > 2e-2:
                    status = f"WRONG (rel {err:.2e} vs cuDNN)"
            cands.append({"k": k, "split": split, "launch": launch, "status": status, "ours": [], "theirs": [],
                          "rounds": []})
    for _ in range(a.rounds):
        for c in cands:
            if c["launch"] is not None:
                ours, theirs = time_paired(c["launch"], cudnn, a.warmup, a.runs, a.iters)
                c["ours"] += ours
                c["theirs"] += theirs
                c["rounds"].append(pair_ratio(ours, theirs))
    best = {}
    for c in cands:
        k, split, status = c["k"], c["split"], c["status"]
        ms = pair_ms = ratio = None
        if c["ours"]:
            ms, pair_ms = statistics.median(c["ours"]), statistics.median(c["theirs"])
            ratio = pair_ratio(c["ours"], c["theirs"])
            if status == "ok" and (k.arch not in best or ratio > best[k.arch][4]):
                best[k.arch] = (k, ms, split, pair_ms, ratio, c["rounds"])
        spread = "rounds " + " / ".join(f"{r:.3f}" for r in c["rounds"]) + "; " if c["rounds"] else ""
        print(f"   {k.name:36s} split={split} " +
              (f"{ms:.3f} ms ({tf(ms):.1f} TFLOP/s; cuDNN {tf(pair_ms):.1f}, ratio {ratio:.3f}; {spread.rstrip('; ')}) "
               if ms else "") + status, flush=True)
        rows.append({"case": label, "op": OP_WORD[op], "impl": "kdl", "kernel": k.name, "arch": k.arch,
                     "split": split, "ms": f"{ms:.4f}" if ms else "", "tflops": f"{tf(ms):.1f}" if ms else "",
                     "cudnn_ms": f"{pair_ms:.4f}" if ms else "", "ratio": f"{ratio:.4f}" if ms else "",
                     "rounds": " ".join(f"{r:.4f}" for r in c["rounds"]), "status": status})
        c["launch"] = None
    del cands
    if not best:
        table.append({"case": label, "arch": "-", "kernel": "(no kdl kernel ran)", "kdl_ms": None, "kdl_tflops": None,
                      "cudnn_ms": cudnn_ms, "cudnn_tflops": tf(cudnn_ms), "ratio": None, "cudnn_algo": chosen,
                      "sustained": None})
    for arch in sorted(best):
        k, ms, split, pair_ms, ratio, rounds = best[arch]
        sustained = None
        if a.sustain > 0 and arch == a.sustain_arch:  # the best kernel of that path beside cuDNN at the power cap
            launch = KdlLaunch(k, pr, split, inputs, out_dims)
            s_ms, s_cudnn, s_ratio = time_sustained(launch, cudnn, a.sustain, a.iters)
            sustained = {"kdl_ms": s_ms, "cudnn_ms": s_cudnn, "ratio": s_ratio}
            print(f"   sustained {a.sustain:g} s x 2 each: {k.name} {s_ms:.3f} ms ({tf(s_ms):.1f} TFLOP/s), cuDNN "
                  f"{s_cudnn:.3f} ms ({tf(s_cudnn):.1f}), ratio {s_ratio:.3f}", flush=True)
            rows.append({"case": label, "op": OP_WORD[op], "impl": "kdl sustained", "kernel": k.name, "arch": arch,
                         "split": split, "ms": f"{s_ms:.4f}", "tflops": f"{tf(s_ms):.1f}", "cudnn_ms": f"{s_cudnn:.4f}",
                         "ratio": f"{s_ratio:.4f}", "status": "ok"})
            del launch
        table.append({"case": label, "arch": arch,
                      "kernel": k.name + (f" split {split}" if split > 1 else " split 0 (chosen)" if split == 0 else ""),
                      "kdl_ms": ms, "kdl_tflops": tf(ms), "cudnn_ms": pair_ms, "cudnn_tflops": tf(pair_ms),
                      "ratio": ratio, "rounds": rounds, "cudnn_algo": chosen, "sustained": sustained})


def markdown(table, device):
    lines = [f"conv benchmark, bf16 NHWC, {device}", "",
             "| shape | path | kdl kernel | kdl ms | kdl TFLOP/s | cuDNN ms | cuDNN TFLOP/s | ratio (cuDNN / kdl, paired; "
             "the rounds' range) "
             "| sustained: kdl / cuDNN ms, ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    f = lambda v, fmt: "-" if v is None else format(v, fmt)  # noqa: E731
    for r in table:
        s = r.get("sustained")
        sus = f"{s['kdl_ms']:.3f} / {s['cudnn_ms']:.3f}, {s['ratio']:.2f}" if s else "-"
        rounds = r.get("rounds") or []
        spread = f" ({min(rounds):.2f}-{max(rounds):.2f})" if len(rounds) > 1 else ""
        lines.append(f"| {r['case']} | {r['arch']} | {r['kernel']} | {f(r['kdl_ms'], '.3f')} | {f(r['kdl_tflops'], '.1f')} | "
                     f"{f(r['cudnn_ms'], '.3f')} | {f(r['cudnn_tflops'], '.1f')} | {f(r['ratio'], '.2f')}{spread} | {sus} |")
    algos = {}
    for r in table:
        algos.setdefault(r["cudnn_algo"], []).append(r["case"])
    lines += ["", "cuDNN's algorithm per case, the faster of the autotuner's (every algorithm tried) and the heuristics': " +
              "; ".join(f"{how}: " + ", ".join(dict.fromkeys(cases)) for how, cases in sorted(algos.items())) + "."]
    if any(r.get("sustained") for r in table):
        lines += ["", "Sustained: the path's best kernel and cuDNN each launched back to back for the stated seconds, "
                  "twice, alternating (kdl, cuDNN, kdl, cuDNN), at the card's power cap; per window the median of its "
                  "second half, ratio = cuDNN / kdl of the two windows' means. The paired column is the acceptance "
                  "figure; this one is what a long run of the kernel sees."]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--carry", default=os.path.join(ROOT, ".carry", "gpu"))
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(ROOT, "out", "bench")))
    ap.add_argument("--case", action="append", default=[], help="only cases whose label contains this")
    ap.add_argument("--runs", type=int, default=7, help="pairs of batches per candidate and round")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds over a case's candidates (each round times each candidate once: runs pairs)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--shrink", type=int, default=1, help="divide the cases' sizes (the CPU smoke test)")
    ap.add_argument("--sustain", type=float, default=2.0,
                    help="seconds per window of the sustained comparison of the best sm90a kernel (0: none)")
    ap.add_argument("--sustain-arch", default="sm90a", help="the path whose best kernel the sustained comparison runs")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    if hasattr(torch.backends.cudnn, "benchmark_limit"):
        torch.backends.cudnn.benchmark_limit = 0  # the autotuner tries every algorithm (PyTorch's default: 10)
    torch.backends.cudnn.allow_tf32 = False
    cc = ca.device_capability()
    device = f"{ca.device_name()} (sm_{cc}), torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}"
    print("conv_bench: " + device, flush=True)
    kernels, problems = ca.discover(a.carry, ["bench.list"])
    for p in problems:
        print("PROBLEM " + p)
    nb = os.path.join(a.carry, "not-built.list")
    if os.path.exists(nb):
        for line in open(nb):
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3 and parts[0].startswith("specs/bench/conv"):
                print(f"NOT BUILT {parts[1]}: {parts[2]}")
    print(f"{len(kernels)} conv kernels in the bench libraries", flush=True)
    if not kernels:  # nothing to set beside cuDNN (kdlc refused them all: NOT BUILT above); keep the budget
        print("conv_bench: no conv kernel built, cuDNN not timed")
        return 1 if problems else 0
    rows, table = [], []
    t0 = time.time()
    for op, pr in CASES:
        if a.case and not any(c in f"{OP_WORD[op]} {pr.label}" for c in a.case):
            continue
        bench_case(op, pr.shrunk(a.shrink) if a.shrink > 1 else pr, kernels, cc, a, rows, table)
        if ca.DEVICE == "cuda":
            torch.cuda.empty_cache()
    os.makedirs(a.out, exist_ok=True)
    md = markdown(table, device)
    print("\n" + md)
    open(os.path.join(a.out, "conv_bench.md"), "w").write(md)
    with open(os.path.join(a.out, "conv_bench.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["case", "op", "impl", "kernel", "arch", "split", "ms", "tflops", "cudnn_ms",
                                          "ratio", "rounds", "status"])
        w.writeheader()
        w.writerows(rows)
    json.dump({"device": device, "table": table}, open(os.path.join(a.out, "conv_bench.json"), "w"), indent=1)
    print(f"conv_bench: {time.time() - t0:.1f} s; {a.out}/conv_bench.{{md,csv,json}}")
    wrong = [r for r in rows if r["status"].startswith("WRONG")]
    return 1 if wrong or problems else 0


if __name__ == "__main__":
    sys.exit(main())
