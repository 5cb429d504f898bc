#!/usr/bin/env python3
"""Plots the conv benchmark CSV written by bench/conv_bench.py: per case, the best KDL kernel of each path
(sm80: the multistage kdl::Conv2dSm80; sm90a: the wgmma kdl::Conv2dSm90Fprop) beside cuDNN, measured in
the same run, in TFLOP/s.

usage: bench/conv_plot.py conv_bench.csv conv_bench.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    rows = list(csv.DictReader(open(argv[1])))
    cases, best = [], {}  # best[(case, series)] = TFLOP/s
    for r in rows:
        if r["status"] != "ok":
            continue
        case = r["case"]
        if case not in cases:
            cases.append(case)
        series = "cuDNN" if r["impl"] == "cuDNN" else f"KDL {r['arch']}"
        best[(case, series)] = max(best.get((case, series), 0.0), float(r["tflops"]))
    series = [s for s in ("KDL sm80", "KDL sm90a", "cuDNN") if any((c, s) in best for c in cases)]
    fig, ax = plt.subplots(figsize=(max(8, 1.9 * len(cases)), 4.8))
    width = 0.8 / len(series)
    for i, s in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(cases))]
        ys = [best.get((c, s), 0.0) for c in cases]
        bars = ax.bar(xs, ys, width, label=s)
        for b, y in zip(bars, ys):
            if y > 0:
                ax.annotate(f"{y:.0f}", (b.get_x() + b.get_width() / 2, y), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([c.replace(" ", "\n", 1) for c in cases], fontsize=8)
    ax.set_ylabel("TFLOP/s (bf16, NHWC)")
    ax.set_title("KDL convolutions beside cuDNN (same run)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
