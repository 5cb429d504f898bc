#!/usr/bin/env python3
"""Plots the benchmark CSV written by kdl_bench: per shape, the best valid KDL kernel, cuBLASLt
(measured in the same run), and the ANCHORS.md figures for cuBLAS and the CUTLASS 2.x sm80 path.

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
    shapes = []
    best, best_name, cublas, anchor_cublas, anchor_c80 = {}, {}, {}, {}, {}
    for r in rows:
        s = r["shape"]
        if s not in shapes:
            shapes.append(s)
        anchor_cublas[s] = float(r["anchor_cublas"])
        anchor_c80[s] = float(r["anchor_cutlass_sm80"])
        if r["kernel"] == "cuBLASLt":
            cublas[s] = float(r["tflops"])
        elif r["valid"] == "1" and float(r["tflops"]) > best.get(s, 0.0):
            best[s] = float(r["tflops"])
            split = int(r["split"])
            best_name[s] = r["kernel"].replace("bench_bf16_", "") + (f" sk{split}" if split > 1 else "")

    series = [
        ("KDL best (sm80 path)", [best.get(s, 0.0) for s in shapes], "#1f77b4"),
        ("cuBLASLt (this run)", [cublas.get(s, 0.0) for s in shapes], "#2ca02c"),
        ("cuBLAS (ANCHORS.md)", [anchor_cublas.get(s, 0.0) for s in shapes], "#98df8a"),
        ("CUTLASS 2.x sm80 (ANCHORS.md)", [anchor_c80.get(s, 0.0) for s in shapes], "#ff7f0e"),
    ]
    fig, ax = plt.subplots(figsize=(11, 5.5))
    width = 0.2
    for i, (label, vals, color) in enumerate(series):
        xs = [j + (i - 1.5) * width for j in range(len(shapes))]
        bars = ax.bar(xs, vals, width, label=label, color=color)
        for b, v in zip(bars, vals):
            if v > 0:
                ax.text(b.get_x() + b.get_width() / 2, v + 5, f"{v:.0f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels([f"{s}\n{best_name.get(s, '-')}" for s in shapes], fontsize=8)
    ax.set_ylabel("TFLOP/s (2MNK / time)")
    ax.set_title("bf16 GEMM, A row / B col / D row, alpha=1 beta=0 — KDL vs cuBLASLt (H100)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=120)
    print(f"wrote {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
