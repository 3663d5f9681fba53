#!/usr/bin/env python3
"""Draw arlab-kernel-bench's CSV: GB/s (bytes read + written) against the operand size, the
device-to-device copy beside each sum kernel. Usage: plot_kernels.py kernels.csv kernels.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(src, dst):
    series = {}
    for r in csv.DictReader(open(src)):
        series.setdefault(r["what"], []).append((int(r["bytes"]) / 2**20, float(r["GBps"])))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for what, points in series.items():
        points.sort()
        style = "k--" if what.startswith("cudaMemcpy") else "-o"
        ax.plot([p[0] for p in points], [p[1] for p in points], style, label=what)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("operand size (MiB)")
    ax.set_ylabel("GB/s (bytes read + written)")
    ax.set_title("arlab's kernels against a device-to-device copy")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
