#!/usr/bin/env python3
"""Plots the benchmark CSV written by kdl_bench: per input mode (bf16, e4m3 per-tensor, e4m3 block
scales) and shape, the best valid KDL kernel (the highest ratio against its anchor in their alternating
batch pairs) beside that anchor's figure from the same pairs, and the cuBLASLt anchors timed alone.

usage: bench/plot.py bench.csv bench.png
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
    groups = []  # (mode, shape) in the order of the run
    best, best_name, anchors, paired, best_ratio = {}, {}, {}, {}, {}
    for r in rows:
        g = (r["dtype"], r["shape"])
        if g not in groups:
            groups.append(g)
        t = float(r["tflops"])
        if r["kernel"].startswith("cuBLASLt"):
            anchors.setdefault(g, {})[r["kernel"] + " alone"] = t
            continue
        at = float(r.get("anchor_tflops") or 0.0)
        ratio = float(r.get("ratio") or 0.0) or (t / at if at > 0 else 0.0)
        if r["valid"] == "1" and (ratio, t) > (best_ratio.get(g, 0.0), best.get(g, 0.0)):
            best[g], best_ratio[g], paired[g] = t, ratio, at
            split = int(r["split"])
            name = r["kernel"].replace("h90_", "").replace("bench_", "")
            best_name[g] = name.replace("_", " ", 2).replace(" ", "\n", 1) + (f" sk{split}" if split > 1 else "")

    anchor_names = []
    for g in groups:
        for a in anchors.get(g, {}):
            if a not in anchor_names:
                anchor_names.append(a)
    series = [("KDL best", [best.get(g, 0.0) for g in groups], "#1f77b4"),
              ("its anchor, in the same batch pairs", [paired.get(g, 0.0) for g in groups], "#d62728")]
    colors = ["#2ca02c", "#98df8a", "#ff7f0e", "#ffbb78", "#9467bd"]
    for i, a in enumerate(anchor_names):
        series.append((a + " (same run)", [anchors.get(g, {}).get(a, 0.0) for g in groups], colors[i % len(colors)]))

    fig, ax = plt.subplots(figsize=(max(11, 1.6 * len(groups)), 6))
    width = 0.8 / len(series)
    for i, (label, vals, color) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(groups))]
        bars = ax.bar(xs, vals, width, label=label, color=color)
        for b, v in zip(bars, vals):
            if v > 0:
                ax.text(b.get_x() + b.get_width() / 2, v + 8, f"{v:.0f}", ha="center", va="bottom", fontsize=6,
                        rotation=90)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{m}\n{s}\n{best_name.get((m, s), '-')}" for (m, s) in groups], fontsize=6)
    ax.set_ylabel("TFLOP/s (2MNK / time)")
    ax.set_title("GEMM, A row / B col / D bf16 row: best KDL kernel vs cuBLASLt in the same process (H100)")
    ax.legend(fontsize=7)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=120)
    print(f"wrote {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
