#!/usr/bin/python3
"""Draw an arlab-bench sweep: bus bandwidth and time against message size.

    arlab-bench ... --json sweep.json
    /usr/bin/python3 bench/plot.py sweep.json [more.json ...] out.png

One line per algorithm (and transport, when the files hold several), the cost model's
prediction dashed in the same colour where the bench recorded one. Top panel: bus bandwidth
(GB/s, nccl-tests' algbw * 2(p-1)/p; algorithm bandwidth for a single rank, where busbw is
zero) against size on a log2 axis. Bottom panel: time per call (us), log-log.

Uses Debian's python3-matplotlib, hence /usr/bin/python3.
"""

import json
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402


def size_label(n):
    """8 -> '8B', 1024 -> '1KiB', 3 MiB -> '3MiB'; non-whole units keep the smaller unit."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    n = int(n)
    unit = 0
    while unit < len(units) - 1 and n >= 1024 and n % 1024 == 0:
        n //= 1024
        unit += 1
    return f"{n}{units[unit]}"


def busbw(size, time_us, ranks):
    """nccl-tests' bus bandwidth for all-reduce in GB/s; algbw when there is one rank."""
    if not time_us or time_us <= 0:
        return None
    algbw = size / (time_us * 1e3)
    return algbw * 2.0 * (ranks - 1) / ranks if ranks > 1 else algbw


def load(paths):
    records = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        if not isinstance(data, list):
            sys.exit(f"plot.py: {path}: expected a JSON array of records")
        records.extend(data)
    if not records:
        sys.exit("plot.py: no records to plot")
    return records


def distinct(records, key):
    return list(OrderedDict.fromkeys(r.get(key) for r in records))


def series_label(rec, vary):
    label = rec["algorithm"]
    extra = []
    if "transport" in vary:
        extra.append(rec["transport"])
    if "ranks" in vary:
        extra.append(f"p={rec['ranks']}")
    if "inplace" in vary:
        extra.append("in-place" if rec["inplace"] else "out-of-place")
    if "dtype" in vary:
        extra.append(rec["dtype"])
    if "op" in vary:
        extra.append(rec["op"])
    return f"{label} ({', '.join(extra)})" if extra else label


def log2_ticks(sizes):
    """Power-of-two ticks over the range, thinned to at most about 12 labels."""
    lo, hi = min(sizes), max(sizes)
    e_lo, e_hi = max(lo, 1).bit_length() - 1, max(hi, 1).bit_length() - 1  # floor(log2)
    if (1 << e_lo) < lo:
        if e_lo == e_hi:
            return sorted(set(sizes))  # no power of two inside the range
        e_lo += 1  # ticks inside the data range only
    exps = list(range(e_lo, e_hi + 1))
    # Steps that divide 10, and ticks on multiples of the step, so labels land on round
    # units (1KiB, 1MiB, ...).
    for step in (1, 2, 5, 10, 20):
        ticks = [1 << e for e in exps if e % step == 0]
        if len(ticks) <= 12:
            break
    return ticks or [1 << e_lo]


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2
    records = load(argv[1:-1])
    out = argv[-1]

    keys = ["transport", "ranks", "inplace", "dtype", "op"]
    vary = {k for k in keys if len(distinct(records, k)) > 1}

    series = OrderedDict()
    for r in records:
        series.setdefault(series_label(r, vary), []).append(r)

    fig, (ax_bw, ax_t) = plt.subplots(2, 1, figsize=(12, 10), sharex=True)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    markers = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
    single_rank = all(r["ranks"] == 1 for r in records)
    any_pred = False

    for k, (label, recs) in enumerate(series.items()):
        recs = sorted(recs, key=lambda r: r["size"])
        color = colors[k % len(colors)]
        marker = markers[k % len(markers)]
        sizes = [r["size"] for r in recs]
        bws = [busbw(r["size"], r["time_us"], r["ranks"]) for r in recs]
        times = [r["time_us"] for r in recs]
        ax_bw.plot(sizes, bws, color=color, marker=marker, markersize=4, linewidth=1.6, label=label)
        ax_t.plot(sizes, times, color=color, marker=marker, markersize=4, linewidth=1.6, label=label)

        pred = [(r["size"], r["predicted_us"], r["ranks"]) for r in recs
                if r.get("predicted_us") is not None and r["predicted_us"] > 0]
        if pred:
            any_pred = True
            ps = [p[0] for p in pred]
            ax_bw.plot(ps, [busbw(*p) for p in pred], color=color, linestyle="--", linewidth=1.1, alpha=0.8)
            ax_t.plot(ps, [p[1] for p in pred], color=color, linestyle="--", linewidth=1.1, alpha=0.8)

    # Keep the measurements readable when the model is far above them: clip the panel at
    # twice the best measured bandwidth and say so.
    measured = [busbw(r["size"], r["time_us"], r["ranks"]) or 0 for r in records]
    predicted = [busbw(r["size"], r["predicted_us"], r["ranks"]) or 0 for r in records
                 if r.get("predicted_us") is not None]
    top = max(measured) if measured else 0
    if top > 0 and predicted and max(predicted) > 2 * top:
        ax_bw.set_ylim(0, 2 * top)
        ax_bw.text(0.99, 0.98, f"predictions up to {max(predicted):.3g} GB/s clipped",
                   transform=ax_bw.transAxes, ha="right", va="top", fontsize=8, color="gray")
    else:
        ax_bw.set_ylim(bottom=0)

    all_sizes = sorted({r["size"] for r in records})
    ticks = log2_ticks(all_sizes)
    for ax in (ax_bw, ax_t):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(ticks, [size_label(t) for t in ticks])
        ax.grid(True, which="major", linestyle=":", alpha=0.7)
    ax_bw.set_ylabel("algorithm bandwidth (GB/s)" if single_rank else "bus bandwidth (GB/s)")
    ax_t.set_yscale("log")
    ax_t.grid(True, which="minor", axis="y", linestyle=":", alpha=0.3)
    ax_t.set_ylabel("time per call (us)")
    ax_t.set_xlabel("message size")
    ax_t.tick_params(axis="x", labelrotation=45)
    ax_bw.tick_params(axis="x", labelbottom=True, labelrotation=45)

    handles, labels = ax_bw.get_legend_handles_labels()
    if any_pred:
        from matplotlib.lines import Line2D
        handles.append(Line2D([], [], color="gray", linestyle="--"))
        labels.append("cost model prediction")
    if len(handles) > 6:  # many lines: the legend goes beside the panel
        ax_bw.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9,
                     borderaxespad=0)
    else:
        ax_bw.legend(handles, labels, loc="upper left", fontsize=9, framealpha=0.9)
    ax_bw.set_title("bus bandwidth = algbw x 2(p-1)/p (higher is better)" if not single_rank
                    else "algorithm bandwidth, one rank (higher is better)", fontsize=10)
    ax_t.set_title("time per call, slowest rank (lower is better)", fontsize=10)

    def one_or_mixed(key, fmt=str):
        values = distinct(records, key)
        return fmt(values[0]) if len(values) == 1 else "mixed " + key

    ranks = one_or_mixed("ranks", lambda p: f"{p} rank" + ("s" if p != 1 else ""))
    placement = one_or_mixed("inplace", lambda z: "in-place" if z else "out-of-place")
    transports = ", ".join(str(t) for t in distinct(records, "transport"))
    fig.suptitle(f"arlab all-reduce: {ranks}, {one_or_mixed('dtype')} {one_or_mixed('op')}, "
                 f"{placement}, transport {transports}", fontsize=13)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"plot.py: wrote {out} ({len(records)} records, {len(series)} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
