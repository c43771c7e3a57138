#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Sum up several finecast-eval reports: the folds of a cross-validation, or the seeds of a case.

One row per report (its label: the report's folder name), then the mean and the standard deviation
over the reports of: the model's ensemble-mean RMSE, its CRPS (and fair CRPS), spread/RMSE, the
RMSE over the reference row's (--against; best_regression: the regression_* row with the lowest
RMSE in that report, else the best baseline) and the CRPS over the stronger noise reference's.
The last line is the inflation a config fitted on these reports would carry: 1 / (the mean
spread/RMSE), meaningful when the reports were sampled without an inflation (docs/evaluation.md,
"Model choice by spatial cross-validation"). With --leave-one-out, each report's inflation is
fitted on the reports of the other folds (1 / their mean spread/RMSE) and its spread/RMSE at that
inflation printed: the inflation scales every member's deviation from the mean, so the spread
scales with it and the ensemble mean, hence the RMSE, stays (scripts/inflate_ensemble.py). A
report's fold is where it was scored, its --hold-out and --region (meta keys hold_out, region):
the seeds of one fold are left out together, so no fold's inflation is fitted on itself; reports
without either are a fold each.

    /usr/bin/python3 scripts/eval_folds.py --against best_regression out/eval/eur11_val_fold*of3/eval.json
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eval_summary  # noqa: E402  (the rows a report's bars are measured against)


def fail(msg):
    print("eval_folds.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def scores(path, against):
    """The model's scores in the report at `path`, and its ratios to the reference rows."""
    try:
        with open(path) as f:
            report = json.load(f)
        rows = {r["name"]: r for r in report["predictions"]}
    except (OSError, ValueError, KeyError) as e:
        fail(f"{path}: not a finecast-eval --json report ({e})")
    if "model" not in rows:
        fail(f"{path} has no 'model' row")
    m = rows["model"]
    if m["members"] < 2 or m.get("spread") is None:
        fail(f"{path}: the model has {m['members']} member(s); spread/RMSE needs at least 2")
    if against == "best_regression":
        baselines = [r for n, r in rows.items() if n != "model" and not n.startswith("noise")]
        ref = eval_summary.best_regression(rows) or min(baselines, key=lambda r: r["rmse"])
    elif against in rows:
        ref = rows[against]
    else:
        fail(f"{path} has no row '{against}' (--against)")
    strongest = eval_summary.strongest_noise(rows)
    return {
        "rmse": m["rmse"], "crps": m["crps"], "crps_fair": m["crps_fair"], "spread_ratio": m["spread"] / m["rmse"],
        "rmse_ratio": m["rmse"] / ref["rmse"], "ref": ref["name"],
        "crps_noise_ratio": m["crps"] / strongest["crps"] if strongest else float("nan"),
        "fold": fold_of(report.get("meta", {}), path),
    }


def fold_of(meta, path):
    """Where a report was scored: its hold-out and region, or the report itself without them."""
    where = tuple(meta.get(k, "") for k in ("hold_out", "region")) if isinstance(meta, dict) else ("", "")
    return where if any(where) else ("report", os.path.abspath(path))


def mean_sd(xs):
    n = len(xs)
    mu = sum(xs) / n
    sd = math.sqrt(sum((x - mu) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return mu, sd


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("reports", nargs="+", help="finecast-eval --json reports (one per fold or seed)")
    p.add_argument("--against", default="best_regression",
                   help="the reference row of the RMSE ratio (default best_regression)")
    p.add_argument("--leave-one-out", action="store_true",
                   help="also fit each report's inflation on the reports of the other folds (another "
                        "hold-out or region) and print its spread/RMSE with it")
    a = p.parse_args(argv)
    rows = [(os.path.basename(os.path.dirname(os.path.abspath(r))), scores(r, a.against)) for r in a.reports]
    keys = ("rmse", "crps", "crps_fair", "spread_ratio", "rmse_ratio", "crps_noise_ratio")
    heads = ("RMSE", "CRPS", "fair CRPS", "spread/RMSE", "RMSE/ref", "CRPS/noise")
    width = max(len(n) for n, _ in rows + [("mean ± sd", None)])
    print(f"{'report':<{width}}  " + "  ".join(f"{h:>15}" for h in heads) + "  ref")
    for name, s in rows:
        print(f"{name:<{width}}  " + "  ".join(f"{s[k]:15.4f}" for k in keys) + f"  {s['ref']}")
    stats = {k: mean_sd([s[k] for _, s in rows]) for k in keys}
    print(f"{'mean ± sd':<{width}}  " + "  ".join(f"{stats[k][0]:.4f} ± {stats[k][1]:.4f}".rjust(15) for k in keys))
    print(f"inflation fit over {len(rows)} report(s): 1 / mean spread/RMSE {stats['spread_ratio'][0]:.4f} = "
          f"{1 / stats['spread_ratio'][0]:.3f}")
    if a.leave_one_out:
        folds = {s["fold"] for _, s in rows}
        if len(folds) < 2:
            fail(f"--leave-one-out needs reports of at least 2 folds, got {len(rows)} report(s) of {len(folds)}")
        loo = []
        for name, s in rows:
            others = [o["spread_ratio"] for _, o in rows if o["fold"] != s["fold"]]
            f = len(others) / sum(others)
            loo.append(f * s["spread_ratio"])
            print(f"leave-one-out: {name}: inflation {f:.3f} (fitted on the other folds' {len(others)} "
                  f"report(s)), spread/RMSE with it {loo[-1]:.3f}")
        mu, sd = mean_sd(loo)
        print(f"leave-one-out spread/RMSE: {mu:.3f} ± {sd:.3f} (range {min(loo):.3f}..{max(loo):.3f})")


if __name__ == "__main__":
    main(sys.argv[1:])
