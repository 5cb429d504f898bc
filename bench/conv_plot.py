#!/usr/bin/env python3
"""Plots the conv benchmark CSV written by bench/conv_bench.py: per case, the best KDL kernel of each path
(sm80: the multistage kdl::Conv2dSm80; sm90a: the wgmma kdl::Conv2dSm90Fprop; the highest ratio against
cuDNN in their alternating batch pairs) beside cuDNN's figure from the sm90a kernel's pairs (else the
best path's), in TFLOP/s; cuDNN timed alone (the algorithm the benchmark chose as its anchor) is the hatched
bar. The paired batches only: the sustained reading (rows "kdl sustained") is the table's last column, not a bar.

usage: bench/conv_plot.py conv_bench.csv conv_bench.png
"""
import csv
import sys


def bars(rows):
    """(cases, {(case, series): TFLOP/s}) for the series KDL sm80, KDL sm90a, cuDNN (paired), cuDNN alone."""
    cases, best, ratio, paired = [], {}, {}, {}  # per (case, series): TFLOP/s, ratio, cuDNN in the pairs
    for r in rows:
        if not r["status"].startswith("ok"):  # "ok", or "ok (the anchor)" for cuDNN's chosen algorithm
            continue
        case = r["case"]
        if case not in cases:
            cases.append(case)
        if r["impl"] == "cuDNN":
            if (case, "cuDNN alone") not in best or "anchor" in r["status"]:
                best[(case, "cuDNN alone")] = float(r["tflops"])
            continue
        if r["impl"] != "kdl":  # "kdl sustained": a different reading (at the power cap), not a paired one
            continue
        series = f"KDL {r['arch']}"
        t, q = float(r["tflops"]), float(r.get("ratio") or 0.0)
        if (q, t) > (ratio.get((case, series), 0.0), best.get((case, series), 0.0)):
            best[(case, series)], ratio[(case, series)] = t, q
            cms = float(r.get("cudnn_ms") or 0.0)
            paired[(case, series)] = t * float(r["ms"]) / cms if cms > 0 else 0.0
    for c in cases:  # cuDNN from the pairs of the sm90a kernel where there is one, else of the sm80 one
        for s in ("KDL sm90a", "KDL sm80"):
            if paired.get((c, s), 0.0) > 0:
                best[(c, "cuDNN (paired)")] = paired[(c, s)]
                break
    return cases, best


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases, best = bars(list(csv.DictReader(open(argv[1]))))
    series = [s for s in ("KDL sm80", "KDL sm90a", "cuDNN (paired)", "cuDNN alone") if any((c, s) in best for c in cases)]
    fig, ax = plt.subplots(figsize=(max(8, 1.9 * len(cases)), 4.8))
    width = 0.8 / len(series)
    for i, s in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(cases))]
        ys = [best.get((c, s), 0.0) for c in cases]
        rects = ax.bar(xs, ys, width, label=s, hatch="//" if s == "cuDNN alone" else None,
                      fill=s != "cuDNN alone")
        for b, y in zip(rects, ys):
            if y > 0:
                ax.annotate(f"{y:.0f}", (b.get_x() + b.get_width() / 2, y), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([c.replace(" ", "\n", 1) for c in cases], fontsize=8)
    ax.set_ylabel("TFLOP/s (bf16, NHWC)")
    ax.set_title("KDL convolutions beside cuDNN (same run)")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
