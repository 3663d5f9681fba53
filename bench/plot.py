#!/usr/bin/python3
"""Draw an arlab-bench sweep: bus bandwidth and time against message size.

    arlab-bench ... --json sweep.json            (or: arlab-bench ... --plot sweep.png)
    /usr/bin/python3 bench/plot.py [options] sweep.json [more.json ...] out.png

Top panel: bus bandwidth (GB/s, nccl-tests' algbw x 2(p-1)/p; algorithm bandwidth for a single
rank, where busbw is zero) against size, log2 axis. Bottom panel: time per call (us), log-log.
One colour per algorithm, one marker per transport ("native" = the mpi/nccl baseline's own
communication); the cost model's prediction as a dashed line in the algorithm's colour (the
model does not depend on the transport, so one per algorithm; none for auto, whose prediction
is its pick's). The output format follows the file name (.png, .svg, .pdf).

options:
  --inplace 0|1   which section to draw (default: out-of-place when the file has it)
  --dtype TYPE    which type to draw when the file has several (default: the first)
  --op OP         which op to draw when the file has several (default: the first)
  --quiet         no "wrote ..." line

Uses Debian's python3-matplotlib, hence /usr/bin/python3.
"""

import json
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

# A fixed colour per algorithm, so every plot reads the same way (tab10 and black).
COLORS = OrderedDict([
    ("ring", "tab:blue"),
    ("tree", "tab:orange"),
    ("recursive-doubling", "tab:green"),
    ("rabenseifner", "tab:red"),
    ("hierarchical", "tab:brown"),
    ("auto", "tab:purple"),
    ("mpi", "black"),
    ("nccl", "tab:olive"),
])
EXTRA_COLORS = ["tab:pink", "tab:cyan", "tab:gray"]
# A marker per transport: (marker, filled).
MARKERS = OrderedDict([
    ("mpi", ("o", True)),
    ("ucx", ("s", False)),
    ("ucx-rma", ("^", True)),
    ("native", ("D", False)),
])
EXTRA_MARKERS = [("v", True), ("P", True), ("X", True)]


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
    """Records from arlab-bench JSON files: {"arlab_bench": ..., "records": [...]} or a bare list."""
    records = []
    for path in paths:
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"plot.py: {path}: {e}")
        if isinstance(data, dict):
            data = data.get("records")
        if not isinstance(data, list):
            sys.exit(f"plot.py: {path}: expected arlab-bench --json output (records)")
        for r in data:
            r.setdefault("inplace", False)
            r.setdefault("transport", "mpi")
        records.extend(data)
    if not records:
        sys.exit("plot.py: no records to plot")
    return records


def distinct(records, key):
    return list(OrderedDict.fromkeys(r.get(key) for r in records))


def pick_from(values, wanted, what):
    if wanted is None:
        return values[0]
    if wanted not in values:
        sys.exit(f"plot.py: no records with {what} {wanted}; the files have {', '.join(map(str, values))}")
    return wanted


def log2_ticks(sizes):
    """The sizes themselves when there are at most 14, else power-of-two ticks over the range,
    thinned to at most about 12 labels."""
    if len(sizes) <= 14:
        return sorted(sizes)
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


def style_maps(records):
    colors, markers = OrderedDict(), OrderedDict()
    for a in distinct(records, "algorithm"):
        colors[a] = COLORS.get(a) or EXTRA_COLORS[len([c for c in colors if c not in COLORS]) % len(EXTRA_COLORS)]
    for t in distinct(records, "transport"):
        markers[t] = MARKERS.get(t) or EXTRA_MARKERS[len([m for m in markers if m not in MARKERS]) % len(EXTRA_MARKERS)]
    return colors, markers


def parse_args(argv):
    opts = {"inplace": None, "dtype": None, "op": None, "quiet": False}
    files = []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__.strip())
            sys.exit(0)
        if a == "--quiet":
            opts["quiet"] = True
        elif a in ("--inplace", "--dtype", "--op"):
            if i + 1 >= len(argv):
                sys.exit(f"plot.py: {a} needs a value")
            i += 1
            v = argv[i]
            if a == "--inplace":
                if v not in ("0", "1"):
                    sys.exit(f"plot.py: bad value '{v}' for --inplace: expected 0 or 1")
                v = v == "1"
            opts[a[2:]] = v
        elif a.startswith("-"):
            sys.exit(f"plot.py: unknown option '{a}' (see --help)")
        else:
            files.append(a)
        i += 1
    if len(files) < 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    return opts, files[:-1], files[-1]


def main(argv):
    opts, inputs, out = parse_args(argv)
    records = load(inputs)

    # One section, type and op per figure; the title says which.
    sections = distinct(records, "inplace")
    inplace = pick_from(sections if opts["inplace"] is not None else sorted(sections), opts["inplace"], "inplace")
    dtype = pick_from(distinct(records, "dtype"), opts["dtype"], "dtype")
    op = pick_from(distinct(records, "op"), opts["op"], "op")
    records = [r for r in records if r["inplace"] == inplace and r["dtype"] == dtype and r["op"] == op]
    if not records:
        sys.exit("plot.py: nothing left to plot after choosing the section, type and op")

    many_ranks = len(distinct(records, "ranks")) > 1
    colors, markers = style_maps(records)
    series = OrderedDict()
    for r in records:
        series.setdefault((r["algorithm"], r["transport"], r["ranks"]), []).append(r)

    # Predictions of different algorithms often coincide (ring, tree and Rabenseifner on 2
    # ranks): their dashes interleave, each algorithm's drawn where the others' gaps are.
    predicted_algos = [a for a in colors if a != "auto" and any(
        r["algorithm"] == a and r.get("predicted_us") for r in records)]
    dash, gap = 4, 4 * max(len(predicted_algos) - 1, 1)

    fig, (ax_bw, ax_t) = plt.subplots(2, 1, figsize=(12, 11), sharex=True)
    single_rank = all(r["ranks"] == 1 for r in records)
    predicted_drawn = set()

    for (algo, transport, ranks), recs in series.items():
        recs = sorted(recs, key=lambda r: r["size"])
        color = colors[algo]
        marker, filled = markers[transport]
        style = dict(color=color, marker=marker, markersize=5, linewidth=1.4,
                     markerfacecolor=color if filled else "white", markeredgecolor=color)
        sizes = [r["size"] for r in recs]
        ax_bw.plot(sizes, [busbw(r["size"], r["time_us"], r["ranks"]) for r in recs], **style)
        ax_t.plot(sizes, [r["time_us"] for r in recs], **style)

        # The model's prediction: the same for every transport, so once per algorithm.
        if algo == "auto" or (algo, ranks) in predicted_drawn:
            continue
        pred = [(r["size"], r["predicted_us"], r["ranks"]) for r in recs
                if r.get("predicted_us") is not None and r["predicted_us"] > 0]
        if pred:
            predicted_drawn.add((algo, ranks))
            ps = [p[0] for p in pred]
            offset = dash * predicted_algos.index(algo)
            dashed = dict(color=color, linestyle=(offset, (dash, gap)), linewidth=2.0)
            ax_bw.plot(ps, [busbw(*p) for p in pred], **dashed)
            ax_t.plot(ps, [p[1] for p in pred], **dashed)

    # Keep the measurements readable when the model is far above them: clip the panel at
    # twice the best measured bandwidth and say so.
    measured = [busbw(r["size"], r["time_us"], r["ranks"]) or 0 for r in records]
    predicted = [busbw(r["size"], r["predicted_us"], r["ranks"]) or 0 for r in records
                 if r.get("predicted_us") is not None]
    top = max(measured) if measured else 0
    if top > 0 and predicted and max(predicted) > 2 * top:
        ax_bw.set_ylim(0, 2 * top)
        ax_bw.text(0.99, 0.98, f"predictions up to {max(predicted):.3g} GB/s clipped",
                   transform=ax_bw.transAxes, ha="right", va="top", fontsize=9, color="gray")
    else:
        ax_bw.set_ylim(bottom=0)

    ticks = log2_ticks(sorted({r["size"] for r in records}))
    for ax in (ax_bw, ax_t):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(ticks, [size_label(t) for t in ticks])
        ax.grid(True, which="major", linestyle=":", alpha=0.7)
        ax.tick_params(labelsize=10)
    ax_bw.tick_params(axis="x", labelbottom=True)
    ax_bw.set_ylabel("algorithm bandwidth (GB/s)" if single_rank else "bus bandwidth (GB/s)", fontsize=11)
    ax_t.set_yscale("log")
    ax_t.grid(True, which="minor", axis="y", linestyle=":", alpha=0.3)
    ax_t.set_ylabel("time per call (us)", fontsize=11)
    ax_t.set_xlabel("message size (bytes, log scale)", fontsize=11)
    ax_bw.set_title("bus bandwidth = size / time x 2(p-1)/p, higher is better" if not single_rank
                    else "algorithm bandwidth = size / time, one rank, higher is better", fontsize=11)
    ax_t.set_title("time per call, averaged over the timed calls (how a call is timed: the run's header); "
                   "lower is better", fontsize=11)

    # Legend below the panels: colours name algorithms, markers name transports.
    handles, labels = [], []
    for algo, color in colors.items():
        handles.append(Line2D([], [], color=color, linewidth=2.5))
        labels.append(algo + (" (MPI_Allreduce)" if algo == "mpi" else ""))
    for transport, (marker, filled) in markers.items():
        handles.append(Line2D([], [], color="dimgray", marker=marker, linestyle="none", markersize=7,
                              markerfacecolor="dimgray" if filled else "white"))
        labels.append(f"over {transport}" + (" (the baseline's own)" if transport == "native" else ""))
    if predicted_drawn:
        handles.append(Line2D([], [], color="dimgray", linestyle=(0, (5, 3)), linewidth=1.8))
        labels.append("cost model prediction")
    ncol = 4 if len(handles) > 8 else len(handles)
    fig.legend(handles, labels, loc="lower center", ncol=max(ncol, 1), fontsize=10, frameon=True,
               title="colour: algorithm    marker: transport    dashed: model", title_fontsize=10)

    def one_or_mixed(key, fmt=str):
        values = distinct(records, key)
        return fmt(values[0]) if len(values) == 1 else "mixed " + key

    ranks = one_or_mixed("ranks", lambda p: f"{p} rank" + ("s" if p != 1 else ""))
    section = "in-place" if inplace else "out-of-place"
    others = len(sections) > 1
    fig.suptitle(f"arlab all-reduce: {ranks}, {dtype} {op}, {section}"
                 + (" (in place: plot.py --inplace 1)" if others and not inplace else "")
                 + (" (many rank counts: see legend)" if many_ranks else ""), fontsize=14)
    rows = (len(handles) + ncol - 1) // max(ncol, 1)
    fig.tight_layout(rect=(0, 0.021 * (rows + 1.6), 1, 0.97))
    fig.savefig(out, dpi=110)
    if not opts["quiet"]:
        print(f"plot.py: wrote {out} ({len(records)} records, {len(series)} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
