#!/usr/bin/python3
"""Model validation statistics from arlab-bench JSON runs (docs/model.md, "Validation on this machine").

usage: scripts/validate_model.py [--model MODEL.json] RUN1.json [RUN2.json ...]

Each run is `arlab-bench ... -a all --json FILE`, best with --calibrate, so that each run's
predictions come from a calibration made in the same launch. Per run and per (size, algorithm,
in-place) line: err% = (measured - predicted) / measured, with that run's own prediction
(`auto` against the prediction of the algorithm it picked). Across runs, each line's err% is
the median of its runs' err%. Prints per size class the median and worst |err%| over its
lines, the overall median, and Auto against the fastest measured algorithm per size: per run,
and the median over runs of how much slower the pick was.

--model MODEL.json: take the predictions and Auto's pick from `arlab-model --json` (same ranks
and sizes) for every run instead of the runs' own; then `auto`'s line is judged by the measured
time of the algorithm the model picks (its own line), since the runs' auto ran another pick.
"""
import json
import statistics
import sys
from collections import defaultdict


def size_text(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def load_run(path, model):
    """(times, predictions, picks) of one run, keyed by (size, algorithm, inplace)."""
    with open(path) as f:
        doc = json.load(f)
    times, pred, pick = {}, {}, {}
    for r in doc["records"]:
        if r.get("time_us") is None or r.get("transport") == "native":
            continue  # MPI's own all-reduce: no prediction, not a choice Auto has
        key = (r["size"], r["algorithm"], r["inplace"])
        times[key] = r["time_us"]
        if r.get("predicted_us") is not None:
            pred[key] = r["predicted_us"]
        pick[key] = r["pick"]
    if model is not None:
        mpred = {(r["bytes"], r["algorithm"]): r["predicted_us"] for r in model}
        mpick = {r["bytes"]: r["algorithm"] for r in model if r["pick"]}
        for key in list(times):
            size, algo, inplace = key
            if algo == "auto":
                pick[key] = mpick[size]
                if (size, mpick[size], inplace) in times:
                    times[key] = times[(size, mpick[size], inplace)]
                pred[key] = mpred[(size, mpick[size])]
            elif (size, algo) in mpred:
                pred[key] = mpred[(size, algo)]
    return times, pred, pick


def auto_rows(times, pick):
    """Per size: (pick, auto's time, best algorithm, best time, % slower, pick's own line % slower)."""
    rows = {}
    for (size, algo, inplace), t_auto in times.items():
        if algo != "auto" or inplace:
            continue
        algos = [(t, k[1]) for k, t in times.items() if k[0] == size and k[1] != "auto" and not k[2]]
        if not algos:
            continue
        t_best, best = min(algos)
        picked = pick[(size, algo, inplace)]
        t_line = times.get((size, picked, False))
        slower_line = 100.0 * (t_line - t_best) / t_best if t_line else float("nan")
        rows[size] = (picked, t_auto, best, t_best, 100.0 * (t_auto - t_best) / t_best, slower_line)
    return rows


def main(args):
    model = None
    if args and args[0] == "--model":
        with open(args[1]) as f:
            doc = json.load(f)
        model = doc["records"] if isinstance(doc, dict) and "records" in doc else doc
        args = args[2:]
    runs = [load_run(p, model) for p in args]

    errs = defaultdict(list)  # line -> its err% in every run
    for times, pred, _ in runs:
        for k, t in times.items():
            if k in pred:
                errs[k].append(100.0 * (t - pred[k]) / t)
    err = {k: statistics.median(v) for k, v in errs.items()}
    by_size = defaultdict(list)
    for (size, algo, inplace), e in err.items():
        by_size[size].append((abs(e), e, algo, inplace))
    print(f"# {len(runs)} run(s), {len(err)} lines; err% = (measured - predicted) / measured, each run against "
          f"its own predictions, median over the runs")
    print(f"# {'size':>8} {'median|err|':>12} {'worst|err|':>11}  worst line")
    for size in sorted(by_size):
        e = by_size[size]
        w = max(e)
        print(f"  {size_text(size):>8} {statistics.median(x[0] for x in e):12.1f} {w[0]:11.1f}  "
              f"{w[2]}{' in-place' if w[3] else ''} {w[1]:+.1f}%")
    allerr = [abs(e) for e in err.values()]
    print(f"# overall median |err%| {statistics.median(allerr):.1f}  (mean {statistics.mean(allerr):.1f}); "
          f"worst size class (by median) {max(statistics.median(x[0] for x in v) for v in by_size.values()):.1f}, "
          f"(by worst line) {max(max(v)[0] for v in by_size.values()):.1f}")
    for i, (times, pred, _) in enumerate(runs):
        mine = [abs(100.0 * (t - pred[k]) / t) for k, t in times.items() if k in pred]
        if mine:
            print(f"#   run {i + 1}: median |err%| {statistics.median(mine):.1f} over {len(mine)} lines")

    per_run = [auto_rows(times, pick) for times, _, pick in runs]
    print("# auto against the fastest measured algorithm (out-of-place), per run: pick, % slower than the best "
          "line (the pick's own line in brackets)")
    worst = None
    for size in sorted(by_size):
        cells = [r[size] for r in per_run if size in r]
        if not cells:
            continue
        text = "  ".join(f"{c[0][:4]} {c[4]:+6.1f} ({c[5]:+5.1f}) best {c[2][:4]}" for c in cells)
        med = statistics.median(c[4] for c in cells)
        med_line = statistics.median(c[5] for c in cells)
        print(f"  {size_text(size):>8}  median {med:+6.1f} (own line {med_line:+6.1f})   {text}")
        if worst is None or med > worst[0]:
            worst = (med, size, med_line, cells)
    if worst:
        picks = sorted({c[0] for c in worst[3]})
        print(f"# auto worst (median over runs): {size_text(worst[1])}: {worst[0]:+.1f}% "
              f"(the pick's own line {worst[2]:+.1f}%), picks {', '.join(picks)}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
