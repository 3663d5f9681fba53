#!/usr/bin/python3
"""Model validation statistics from arlab-bench JSON runs (docs/model.md, "Validation on this machine").

usage: scripts/validate_model.py [--model MODEL.json] RUN1.json [RUN2.json ...]

Each run is `arlab-bench ... -a all --json FILE`. Per (size, algorithm, in-place) line the
median of the runs' measured times is taken; err% = (measured - predicted) / measured with the
line's predicted_us (the model's, identical in every run). Prints per size class the median and
worst |err%| over every algorithm's line (auto included, against the prediction of its pick),
the overall median, and Auto's measured time against the fastest measured algorithm per size.

--model MODEL.json: take the predictions and Auto's pick from `arlab-model --json` (same ranks
and sizes) instead of the runs' own; then `auto`'s line is judged by the measured time of the
algorithm the model picks (its own line), since the runs' auto ran another model's pick.
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


def main(args):
    model = None
    if args and args[0] == "--model":
        with open(args[1]) as f:
            doc = json.load(f)
        model = doc["records"] if isinstance(doc, dict) and "records" in doc else doc
        args = args[2:]
    paths = args
    times = defaultdict(list)
    pred = {}
    pick = {}
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for r in doc["records"]:
            if r.get("time_us") is None or r.get("transport") == "native":
                continue  # MPI's own all-reduce: no prediction, not a choice Auto has
            key = (r["size"], r["algorithm"], r["inplace"])
            times[key].append(r["time_us"])
            if r.get("predicted_us") is not None:
                pred[key] = r["predicted_us"]
            pick[key] = r["pick"]
    med = {k: statistics.median(v) for k, v in times.items()}
    if model is not None:
        mpred = {(r["bytes"], r["algorithm"]): r["predicted_us"] for r in model}
        mpick = {r["bytes"]: r["algorithm"] for r in model if r["pick"]}
        for key in list(med):
            size, algo, inplace = key
            if algo == "auto":
                pick[key] = mpick[size]
                if (size, mpick[size], inplace) in med:
                    med[key] = med[(size, mpick[size], inplace)]
                pred[key] = mpred[(size, mpick[size])]
            elif (size, algo) in mpred:
                pred[key] = mpred[(size, algo)]
    err = {k: 100.0 * (med[k] - pred[k]) / med[k] for k in med if k in pred}
    by_size = defaultdict(list)
    for (size, algo, inplace), e in err.items():
        by_size[size].append((abs(e), e, algo, inplace))
    print(f"# {len(paths)} run(s), {len(err)} lines; err% = (measured - predicted) / measured, median of runs")
    print(f"# {'size':>8} {'median|err|':>12} {'worst|err|':>11}  worst line")
    for size in sorted(by_size):
        errs = by_size[size]
        w = max(errs)
        print(f"  {size_text(size):>8} {statistics.median(e[0] for e in errs):12.1f} {w[0]:11.1f}  "
              f"{w[2]}{' in-place' if w[3] else ''} {w[1]:+.1f}%")
    allerr = [abs(e) for e in err.values()]
    print(f"# overall median |err%| {statistics.median(allerr):.1f}  (mean {statistics.mean(allerr):.1f}); "
          f"worst size class (by median) {max(statistics.median(e[0] for e in v) for v in by_size.values()):.1f}, "
          f"(by worst line) {max(max(v)[0] for v in by_size.values()):.1f}")
    print("# auto against the fastest measured algorithm (out-of-place)")
    print(f"# {'size':>8} {'pick':>22} {'auto us':>10} {'best':>22} {'best us':>10} {'slower%':>8}")
    worst = None
    for size in sorted(by_size):
        auto = [(k, v) for k, v in med.items() if k[0] == size and k[1] == "auto" and not k[2]]
        algos = [(v, k[1]) for k, v in med.items() if k[0] == size and k[1] != "auto" and not k[2]]
        if not auto or not algos:
            continue
        (k, t_auto), = auto
        t_best, best = min(algos)
        picked = pick[k]
        # Auto runs its pick; compare against the pick's own line too (same code, separate samples).
        t_pick_line = med.get((size, picked, False))
        slower = 100.0 * (t_auto - t_best) / t_best
        slower_line = 100.0 * (t_pick_line - t_best) / t_best if t_pick_line else float("nan")
        print(f"  {size_text(size):>8} {picked:>22} {t_auto:10.2f} {best:>22} {t_best:10.2f} {slower:8.1f}"
              f"   (pick's own line {slower_line:+.1f}%)")
        if worst is None or slower > worst[0]:
            worst = (slower, size, picked, best, slower_line)
    if worst:
        print(f"# auto worst: {size_text(worst[1])}: pick {worst[2]} {worst[0]:.1f}% slower than {worst[3]} "
              f"(pick's own line {worst[4]:+.1f}%)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
