#!/usr/bin/python3
"""The cost model against measured all-reduce times, from arlab-bench JSON runs (docs/model.md).

usage: scripts/validate_model.py [--markdown] [--model MODEL.json] RUN.json [RUN.json ...]

RUN.json: `arlab-bench ... -a all --json FILE`, one run or several of the same sweep. Each run is
judged against its own `pred` column (the machine its communicators used: self-calibrated,
--calibrate or --topology). Per line (transport, size, algorithm, in place or not):
err% = (measured - predicted) / measured; with several runs a line's err% is the median of its
runs'. Printed per transport:

  * |err%| per named algorithm (ring, tree, recursive doubling, Rabenseifner) and size class:
    the median over the line's sections (out of place, in place) and, last, the worst line;
  * the overall median |err%| over every named algorithm's lines, per transport and over all;
  * Auto's regret per size: auto's measured time / the fastest named algorithm's time on the
    same transport in the same run (>= 1.0; 1.00 when auto is the fastest), out of place and in
    place, and the same for the line of the algorithm auto picked (auto runs the pick's code,
    so the two differ only by noise); with several runs, the median over runs.

  * where the run probed the machine's state (state_probe_us and calibrated_state_probe_us in
    its records; docs/model.md, "The machine's state"): how many lines ran in a state other than
    the one their model was calibrated in (further apart than the header's state_ratio, the
    bench's own threshold), and the median |err%| over the lines that ran in the calibration's state.

--markdown prints the tables as Markdown (for docs/model.md).
--model MODEL.json: take every prediction and Auto's pick from `arlab-model --json` (same
ranks and sizes) instead of the runs' own; auto's line is then judged by the measured line of
the algorithm the model picks.
"""
import json
import signal
import statistics
import sys
from collections import defaultdict

NAMED = ["ring", "tree", "recursive-doubling", "rabenseifner", "hierarchical"]
SHORT = {"ring": "ring", "tree": "tree", "recursive-doubling": "rd", "rabenseifner": "rab", "hierarchical": "hier"}


def size_text(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def other_state(r, ratio):
    """Whether a record ran in a state of the machine other than its model's calibration's
    (more than `ratio` apart: calib::other_state); None when either is unknown."""
    probe, ref = r.get("state_probe_us"), r.get("calibrated_state_probe_us")
    if not probe or not ref or not ratio:
        return None
    return not (1 / ratio <= probe / ref <= ratio)


def load_run(path, model):
    """{(transport, size, algorithm, inplace): [time, predicted or None, pick, other state]} of one
    run (other state: other_state(record), by the header's state_ratio)."""
    with open(path) as f:
        doc = json.load(f)
    ratio = doc.get("arlab_bench", {}).get("state_ratio")  # absent before 2026-12-07: not judged
    lines = {}
    for r in doc["records"]:
        if r.get("time_us") is None or r.get("transport") == "native":
            continue  # MPI's own all-reduce: no prediction, not a choice Auto has
        key = (r["transport"], r["size"], r["algorithm"], r["inplace"])
        lines[key] = [r["time_us"], r.get("predicted_us"), r["pick"], other_state(r, ratio)]
    if model is not None:
        mpred = {(r["bytes"], r["algorithm"]): r["predicted_us"] for r in model}
        mpick = {r["bytes"]: r["algorithm"] for r in model if r["pick"]}
        for (transport, size, algo, inplace), line in lines.items():
            if algo == "auto":
                picked = (transport, size, mpick[size], inplace)
                line[2] = mpick[size]
                if picked in lines:
                    line[0] = lines[picked][0]
                line[1] = mpred[(size, mpick[size])]
            elif (size, algo) in mpred:
                line[1] = mpred[(size, algo)]
    return doc.get("arlab_bench", {}), lines


def regret(lines, transport, size, inplace):
    """(pick, auto / fastest named, pick's line / fastest named, fastest) or None."""
    auto = lines.get((transport, size, "auto", inplace))
    named = [(lines[k][0], k[2]) for k in lines
             if k[0] == transport and k[1] == size and k[3] == inplace and k[2] in NAMED]
    if not auto or not named:
        return None
    t_best, best = min(named)
    pick_line = lines.get((transport, size, auto[2], inplace))
    return auto[2], auto[0] / t_best, (pick_line[0] / t_best if pick_line else float("nan")), best


def table(markdown, header, rows):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
        print("  " + "  ".join(h.rjust(w) for h, w in zip(header, widths)))
        for r in rows:
            print("  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)))
    print()


def main(args):
    markdown = False
    model = None
    while args and args[0].startswith("--"):
        if args[0] == "--markdown":
            markdown, args = True, args[1:]
        elif args[0] == "--model":
            with open(args[1]) as f:
                doc = json.load(f)
            model = doc["records"] if isinstance(doc, dict) and "records" in doc else doc
            args = args[2:]
        else:
            sys.exit(f"validate_model.py: unknown flag {args[0]}\n\n{__doc__}")
    if not args:
        sys.exit(__doc__)
    runs = [load_run(p, model) for p in args]
    meta = runs[0][0]
    h = "## " if markdown else "# "

    errs = defaultdict(list)  # line -> its err% in every run
    by_state = defaultdict(lambda: ([], []))  # transport -> (|err%| in the calibration's state, in another)
    for _, lines in runs:
        for k, (t, p, _, other) in lines.items():
            if p is not None and k[2] in NAMED:
                errs[k].append(100.0 * (t - p) / t)
                if other is not None:
                    by_state[k[0]][other].append(abs(100.0 * (t - p) / t))
    err = {k: statistics.median(v) for k, v in errs.items()}
    transports = sorted({k[0] for k in err}, key=lambda t: (meta.get("transports", []) + [t]).index(t))
    sizes = sorted({k[1] for k in err})
    print(f"{h}{len(runs)} run(s) of {meta.get('ranks', '?')} ranks: {meta.get('command', '')}")
    print(f"{'' if markdown else '# '}machine: {meta.get('topology', '?')} ({meta.get('topology_source', '?')})")
    print()

    overall = []
    summary = []
    for tr in transports:
        # The named algorithms this run has lines of (hierarchical only in multi-node runs).
        shown = [a for a in NAMED if any(k[0] == tr and k[2] == a for k in err)]
        print(f"{h}transport {tr}: |err%| per algorithm and size (median of out of place and in place; worst line)")
        rows = []
        for size in sizes:
            row = [size_text(size)]
            for algo in shown:
                e = [abs(err[k]) for k in err if k[0] == tr and k[1] == size and k[2] == algo]
                row.append(f"{statistics.median(e):.1f}" if e else "-")
            e = [(abs(v), v, k[2], k[3]) for k, v in err.items() if k[0] == tr and k[1] == size]
            w = max(e)
            row.append(f"{statistics.median(x[0] for x in e):.1f}")
            row.append(f"{SHORT[w[2]]}{' in place' if w[3] else ''} {w[1]:+.1f}")
            rows.append(row)
        mine = [abs(v) for k, v in err.items() if k[0] == tr]
        overall += mine
        rows.append(["all"] + [f"{statistics.median(abs(v) for k, v in err.items() if k[0] == tr and k[2] == a):.1f}"
                               if any(k[0] == tr and k[2] == a for k in err) else "-" for a in shown]
                    + [f"{statistics.median(mine):.1f}", ""])
        table(markdown, ["size"] + [SHORT[a] for a in shown] + ["median", "worst line (err%)"], rows)

        print(f"{h}transport {tr}: auto's time / the fastest named algorithm's (same run); "
              "the picked algorithm's own line in brackets")
        rows = []
        worst = (0.0, None)
        for size in sizes:
            row = [size_text(size)]
            for inplace in (False, True):
                cells = [regret(lines, tr, size, inplace) for _, lines in runs]
                cells = [c for c in cells if c]
                if not cells:
                    row += ["-", "-"]
                    continue
                r_auto = statistics.median(c[1] for c in cells)
                r_line = statistics.median(c[2] for c in cells)
                picks = "/".join(sorted({SHORT.get(c[0], c[0]) for c in cells}))
                bests = "/".join(sorted({SHORT[c[3]] for c in cells}))
                row += [f"{picks}", f"{r_auto:.2f} ({r_line:.2f}) {bests}"]
                worst = max(worst, (r_auto, (size, inplace, picks)))
            rows.append(row)
        table(markdown, ["size", "pick", "out of place (fastest)", "pick", "in place (fastest)"], rows)
        summary.append((tr, statistics.median(mine), worst))

    print(f"{h}summary")
    for tr, med, (r, where) in summary:
        at = f" at {size_text(where[0])} {'in place' if where[1] else 'out of place'} ({where[2]})" if where else ""
        print(f"{'' if markdown else '# '}{tr}: median |err%| {med:.1f}; auto's worst regret {r:.2f}x{at}"
              + ("  " if markdown else ""))
    print(f"{'' if markdown else '# '}all transports: median |err%| {statistics.median(overall):.1f} over "
          f"{len(overall)} lines" + ("  " if markdown and by_state else ""))
    for tr in transports:
        same, other = by_state.get(tr, ([], []))
        if not same and not other:
            continue
        parts = ([f"over those in the calibration's state {statistics.median(same):.1f}"] if same else []) + \
                ([f"over the others {statistics.median(other):.1f}"] if other else [])
        med = "; median |err%| " + ", ".join(parts)
        print(f"{'' if markdown else '# '}{tr}: {len(other)} of {len(same) + len(other)} lines ran in another state "
              f"of the machine than their model's calibration (over {meta.get('state_ratio')}x apart){med}" + ("  " if markdown else ""))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly
    main(sys.argv[1:])
