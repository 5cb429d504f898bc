#!/usr/bin/env python3
"""Compares a benchmark run's csv with a reference run's, kernel by kernel, on the paired ratio to the anchor.

  python3 bench/compare.py NEW.csv [--reference REF.csv | --readme README.md] [--threshold 0.05] [--fail]
  python3 bench/compare.py --self-test

Both benchmarks' csvs are understood: bench/run.sh's bench.csv (GEMMs beside cuBLASLt; a kernel is its shape, dtype,
name and split) and bench/conv_run.sh's conv_bench.csv (convolutions beside cuDNN; a kernel is its case, name and
split). The paired ratio (anchor time / kernel time, measured in alternation in one process) is what compares across
runs: the card's clock moves the times between runs, the ratio much less (docs/perf-notes.md v39, v54: within 2-3 %).

Without --reference the reference is the run the README's table was made from: the csv named in the README's
`<!-- BENCH TABLE: ... -->` or `<!-- CONV TABLE: ... -->` comment, whichever matches NEW's kind. So every run of
bench/run.sh says what moved since the published table (the GEMM benchmark once did not run for two days while a
launch change cost a pingpong kernel 15 %: docs/perf-notes.md v55).

Prints each kernel whose ratio fell by more than the threshold, each shape whose best ratio fell, the kernels found
in only one of the two, and the largest gains. Exit status 0; with --fail, 1 when something fell; 2 on bad input.
"""
import argparse
import csv
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The two kinds of csv: the columns that name a kernel's row, the one that names its shape, and the marker column.
KINDS = {
    "gemm": {"key": ("shape", "dtype", "kernel", "split"), "shape": ("shape", "dtype"), "marker": "anchor_tflops",
             "table": "BENCH TABLE"},
    "conv": {"key": ("case", "kernel", "split"), "shape": ("case",), "marker": "cudnn_ms", "table": "CONV TABLE"},
}


class BadInput(Exception):
    pass


def read_run(path):
    """(kind, {key: ratio}, {key: shape}) of the kernels with a ratio in the csv at path."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            header, rows = reader.fieldnames or [], list(reader)
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}")
    kind = next((k for k, v in KINDS.items() if v["marker"] in header and "ratio" in header), None)
    if kind is None:
        raise BadInput(f"{path}: not a bench.csv or conv_bench.csv (no ratio / anchor columns)")
    spec = KINDS[kind]
    ratios, shapes = {}, {}
    for r in rows:
        try:
            ratio = float(r.get("ratio") or "nan")
        except ValueError:
            continue
        if not ratio > 0:  # the anchors' own rows (0 or empty), failed kernels
            continue
        if kind == "conv" and r.get("impl") != "kdl":
            continue
        key = tuple(r.get(c, "") for c in spec["key"])
        ratios[key] = ratio
        shapes[key] = tuple(r.get(c, "") for c in spec["shape"])
    if not ratios:
        raise BadInput(f"{path}: no kernel row with a ratio")
    return kind, ratios, shapes


def readme_reference(readme, kind):
    """The csv the README's table of this kind was made from (bench/results/NAME.{...csv...} in its comment)."""
    try:
        text = open(readme).read()
    except OSError as e:
        raise BadInput(f"cannot read {readme}: {e.strerror}")
    table = KINDS[kind]["table"]
    m = re.search(r"<!-- " + table + r":(.*?)-->", text, re.S)
    if not m:
        raise BadInput(f"{readme}: no <!-- {table}: ... --> comment")
    for name, exts in re.findall(r"(bench/results/[\w.-]+?)\.\{([\w,]+)\}", m.group(1)):
        if "csv" in exts.split(","):
            return os.path.join(os.path.dirname(os.path.abspath(readme)), name + ".csv")
    raise BadInput(f"{readme}: the {table} comment names no bench/results/NAME.{{...,csv,...}}")


def compare(new, ref, threshold):
    """The report's lines and whether anything fell by more than the threshold."""
    kind, rn, sn = new
    kind_ref, rr, sr = ref
    if kind != kind_ref:
        raise BadInput(f"the runs are of two kinds ({kind} against {kind_ref})")
    fmt = lambda key: " ".join(k for k in key if k)
    lines = []
    common = sorted(set(rn) & set(rr))
    # Where a shape's kernels moved together by more than the threshold (the median of 3 or more), the anchor moved
    # (cuDNN's or cuBLASLt's algorithm pick can change between processes): each kernel is then judged against its
    # shape's median move.
    moves = {}
    for k in common:
        moves.setdefault(sn[k], []).append(rn[k] / rr[k])
    anchor = {s: sorted(v)[len(v) // 2] if len(v) >= 3 else 1.0 for s, v in moves.items()}
    anchor = {s: m if abs(m - 1) > threshold else 1.0 for s, m in anchor.items()}  # within the noise: not moved
    for s in sorted(anchor):
        if anchor[s] != 1.0:
            lines.append(f"ANCHOR MOVED {fmt(s)}: its kernels' ratios moved by {anchor[s] - 1:+.1%} (median of "
                         f"{len(moves[s])}): the anchor's time changed; its kernels are judged against that")
    change = {k: rn[k] / rr[k] / anchor[sn[k]] for k in common}
    drops = sorted((change[k], k) for k in common if change[k] < 1 - threshold)
    lines.append(f"{len(common)} kernels in both runs; ratio fell by more than {threshold:.0%} on {len(drops)}")
    for c, k in drops:
        moved = f", {c - 1:+.1%} against the shape's median move" if anchor[sn[k]] != 1.0 else ""
        lines.append(f"  FELL {fmt(k)}: {rr[k]:.3f} -> {rn[k]:.3f} ({rn[k] / rr[k] - 1:+.1%}{moved})")
    fell = bool(drops)
    # The table's figure: each shape's best kernel.
    best = lambda ratios, shapes: {s: max((r, k) for k, r in ratios.items() if shapes[k] == s)
                                   for s in set(shapes.values())}
    bn, br = best(rn, sn), best(rr, sr)
    for s in sorted(set(bn) & set(br)):
        (r1, k1), (r0, k0) = bn[s], br[s]
        if r1 / r0 < 1 - threshold:
            fell = True
            why = " (the anchor moved with it)" if anchor.get(s, 1.0) < 1 - threshold else ""
            lines.append(f"  BEST FELL {fmt(s)}: {r0:.3f} ({k0[-2]}) -> {r1:.3f} ({k1[-2]}) ({r1 / r0 - 1:+.1%}){why}")
    gains = sorted(((change[k], k) for k in common if change[k] > 1 + threshold), reverse=True)
    if gains:
        lines.append(f"rose by more than {threshold:.0%}: {len(gains)}" +
                     "".join(f"\n  ROSE {fmt(k)}: {rr[k]:.3f} -> {rn[k]:.3f} ({rn[k] / rr[k] - 1:+.1%})"
                             for c, k in gains[:10]))
    only_new, only_ref = sorted(set(rn) - set(rr)), sorted(set(rr) - set(rn))
    if only_new:
        lines.append(f"only in this run: {len(only_new)}" + "".join(f"\n  NEW {fmt(k)}" for k in only_new[:20]))
    if only_ref:
        lines.append(f"only in the reference: {len(only_ref)}" + "".join(f"\n  GONE {fmt(k)}" for k in only_ref[:20]))
    return lines, fell


def self_test():
    """Synthetic runs of both kinds, then the committed results: v39 (2026-11-28) against v55's first run, which
    carried the dependent-launch regression of the pingpong 64 x 128 (docs/perf-notes.md v55)."""
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    tmp = tempfile.mkdtemp(prefix="kdl-compare-")
    gemm_header = ("shape,m,n,k,dtype,kernel,split,ms,tflops,rel_err_vs_cublaslt,valid,note,anchor,anchor_tflops,"
                   "published,ratio\n")

    def gemm(name, rows):
        p = os.path.join(tmp, name)
        with open(p, "w") as f:
            f.write(gemm_header)
            f.write("64x64x64,64,64,64,bf16,cuBLASLt bf16,1,0.1,1,0,1,,cuBLASLt bf16,1,,0.0000\n")
            for kernel, split, ratio in rows:
                f.write(f"64x64x64,64,64,64,bf16,{kernel},{split},0.1,1,0,1,,cuBLASLt bf16,1,,{ratio}\n")
        return p

    ref = read_run(gemm("ref.csv", [("a", 1, 1.00), ("b", 1, 0.90), ("c", 1, 0.50), ("gone", 1, 0.3)]))
    new = read_run(gemm("new.csv", [("a", 1, 0.93), ("b", 1, 0.89), ("c", 1, 0.60), ("fresh", 1, 0.4)]))
    lines, fell = compare(new, ref, 0.05)
    text = "\n".join(lines)
    check(fell and "FELL 64x64x64 bf16 a 1: 1.000 -> 0.930" in text, "a kernel 7 % slower is reported")
    check("FELL 64x64x64 bf16 b" not in text, "a kernel 1 % slower is not")
    check("BEST FELL 64x64x64 bf16: 1.000 (a) -> 0.930 (a)" in text, "the shape's best kernel falling is reported")
    check("ROSE 64x64x64 bf16 c 1" in text, "a gain is reported")
    check("NEW 64x64x64 bf16 fresh" in text and "GONE 64x64x64 bf16 gone" in text, "kernels in one run only are listed")
    check("cuBLASLt" not in text, "the anchor's own row is not a kernel")
    lines, fell = compare(ref, ref, 0.05)
    check(not fell, "a run against itself: nothing fell")
    slow = read_run(gemm("anchor.csv", [("a", 1, 0.90), ("b", 1, 0.81), ("c", 1, 0.45), ("gone", 1, 0.27)]))
    lines, fell = compare(slow, ref, 0.05)
    text = "\n".join(lines)
    check("ANCHOR MOVED 64x64x64 bf16: its kernels' ratios moved by -10.0%" in text and "  FELL" not in text,
          "every kernel 10 % lower: the anchor moved, no kernel fell")
    check("BEST FELL 64x64x64 bf16: 1.000 (a) -> 0.900 (a) (-10.0%) (the anchor moved with it)" in text,
          "... but the shape's best figure fell, and says why")
    one = read_run(gemm("one.csv", [("a", 1, 0.90), ("b", 1, 0.81), ("c", 1, 0.30), ("gone", 1, 0.27)]))
    text = "\n".join(compare(one, ref, 0.05)[0])
    check("FELL 64x64x64 bf16 c 1: 0.500 -> 0.300 (-40.0%, -33.3% against the shape's median move)" in text,
          "one kernel falling more than its shape's anchor move is reported against that move")

    conv = os.path.join(tmp, "conv.csv")
    with open(conv, "w") as f:
        f.write("case,op,impl,kernel,arch,split,ms,tflops,cudnn_ms,ratio,rounds,status\n"
                "fprop A,fprop,cuDNN,cudnn (autotuned),,,0.1,1,,,,ok\n"
                "fprop A,fprop,kdl,k1,sm90a,1,0.1,1,0.1,0.99,0.99,ok\n")
    kind, ratios, _ = read_run(conv)
    check(kind == "conv" and list(ratios) == [("fprop A", "k1", "1")], "a conv csv: its kdl rows, not cuDNN's")
    try:
        compare(read_run(conv), ref, 0.05)
        check(False, "two kinds of run are refused")
    except BadInput:
        check(True, "two kinds of run are refused")
    bad = os.path.join(tmp, "bad.csv")
    open(bad, "w").write("a,b\n1,2\n")
    for what, path in (("a csv of another kind", bad), ("a missing file", os.path.join(tmp, "none.csv"))):
        try:
            read_run(path)
            check(False, f"{what} is refused")
        except BadInput:
            check(True, f"{what} is refused")

    # The README's tables name committed results: both must resolve to files in the tree.
    readme = os.path.join(ROOT, "README.md")
    for kind in KINDS:
        try:
            path = readme_reference(readme, kind)
            check(os.path.isfile(path) and read_run(path)[0] == kind,
                  f"the README's {KINDS[kind]['table']} names a {kind} csv in the tree ({os.path.relpath(path, ROOT)})")
        except BadInput as e:
            check(False, f"the README's {KINDS[kind]['table']}: {e}")

    # Real runs: the regression v55 found is flagged; the kernels it did not touch are not.
    res = os.path.join(ROOT, "bench", "results")
    old = os.path.join(res, "2026-11-28-h200-v39.csv")
    cur = os.path.join(res, "2026-11-30-h200-v55-stmatrix-early-pdl.csv")
    lines, fell = compare(read_run(cur), read_run(old), 0.05)
    text = "\n".join(lines)
    check(fell and "FELL 128x8192x8192 bf16 h90_bf16_64x128x64_pp_c1x1 1: 0.996 -> 0.843" in text,
          "v39 against v55's first run: the pingpong 64 x 128 at 128x8192x8192 (-15 %) is reported")
    check("FELL 8192x8192x8192 bf16 h90_bf16_128x256x64_coop_c2x1" not in text,
          "v39 against v55's first run: the cooperative 128 x 256 at 8192^3 is not")
    fixed = os.path.join(res, "2026-11-30-h200-v55.csv")
    text = "\n".join(compare(read_run(fixed), read_run(old), 0.05)[0])
    check(not re.search(r"FELL 128x8192x8192 bf16 h90_bf16_64x128x64_pp_c1x1 1:", text),
          "v39 against v55's final run: the pingpong 64 x 128 at 128x8192x8192 no longer fell")
    print(f"{len(failures)} failed")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("new", nargs="?", help="the run's bench.csv or conv_bench.csv")
    ap.add_argument("--reference", help="the csv to compare with (default: the README's table's)")
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"), help="where the tables' sources are named")
    ap.add_argument("--threshold", type=float, default=0.05, help="a fall of the ratio by more than this is reported")
    ap.add_argument("--fail", action="store_true", help="exit 1 when a kernel's or a shape's best ratio fell")
    ap.add_argument("--self-test", action="store_true", help="check this script on synthetic and committed runs")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.new:
        ap.error("NEW.csv is required (or --self-test)")
    try:
        new = read_run(a.new)
        ref_path = a.reference or readme_reference(a.readme, new[0])
        ref = read_run(ref_path)
        lines, fell = compare(new, ref, a.threshold)
    except BadInput as e:
        print(f"compare: {e}", file=sys.stderr)
        return 2
    shown = os.path.relpath(ref_path, ROOT) if os.path.abspath(ref_path).startswith(ROOT) else ref_path
    print(f"== {os.path.basename(a.new)} against {shown} (paired ratio to the anchor, kernel by kernel)")
    print("\n".join(lines))
    return 1 if fell and a.fail else 0


if __name__ == "__main__":
    sys.exit(main())
