#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Summarise a finecast-eval report: the model beside the best interpolation baseline and the
regression baselines (regression_cons, regression_local), and the quality bars of issues 15 and 26
(docs/evaluation.md).

Criteria checked (M = the model's members):
  - ensemble-mean RMSE <= sqrt(1 + 1/M) x the best baseline's RMSE (a calibrated M-member ensemble
    whose conditional mean is no worse than that baseline), and with --factor F against --against
    NAME also RMSE <= F x NAME's RMSE (EUR-11: 0.9 x regression_cons; NAME best_regression: the
    regression_* row with the lowest RMSE);
  - CRPS below every baseline's (a deterministic baseline's CRPS is its MAE);
  - CRPS below the stronger (lower-CRPS) of the noise references (issue 26: the best
    deterministic baseline plus noise of its residual's RMS with zero block mean, scored as an
    ensemble; noise_white: white noise, noise_spectral: noise with the training residual's
    spectrum), where the report has them; with --noise-factor F below F x that CRPS (issue 26:
    0.85 on EUR-11, 0.9 on ICON);
  - std_ratio in 0.8..1.2, upper-half spectral ratio (hf_ratio) in 0.5..2;
  - spread/RMSE in 0.85..1.15 (issue 26's calibrated ensemble; M > 1), and the sqrt(1 + 1/M)
    thresholds for M = 16 and 32;
  - with --inflation-fit (a val split's report), the spread/RMSE that sample.inflation is fitted
    from: F = 1 / (its mean over the seeds).

    /usr/bin/python3 scripts/eval_summary.py --json out/eval/eur11/eval.json --factor 0.97 --against regression_cons \
        --noise-factor 0.85
"""
import argparse
import json
import math
import sys


def best_regression(rows):
    """The regression_* row with the lowest RMSE of a report's rows (name -> row), or None."""
    regressions = [r for n, r in rows.items() if n.startswith("regression_")]
    return min(regressions, key=lambda r: r["rmse"]) if regressions else None


def strongest_noise(rows):
    """The noise reference with the lowest CRPS of a report's rows (name -> row), or None."""
    noise = [r for n, r in rows.items() if n.startswith("noise")]
    return min(noise, key=lambda r: r["crps"]) if noise else None


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", required=True, help="finecast-eval --json report")
    p.add_argument("--factor", type=float, default=None, help="also require RMSE <= FACTOR x the --against row's")
    p.add_argument("--against", default="regression_cons",
                   help="row of --factor (default regression_cons); best_regression: the regression_* row with the "
                        "lowest RMSE")
    p.add_argument("--noise-factor", type=float, default=1.0,
                   help="require CRPS < NOISE_FACTOR x the stronger noise reference's (default 1)")
    p.add_argument("--inflation-fit", action="store_true",
                   help="also print the spread/RMSE that sample.inflation is fitted from (val splits)")
    p.add_argument("--prefix", default="", help="text put before every line (e.g. '[demo] ')")
    a = p.parse_args(argv)
    with open(a.json) as f:
        rep = json.load(f)
    rows = {r["name"]: r for r in rep["predictions"]}
    if "model" not in rows:
        sys.exit(f"eval_summary.py: {a.json} has no 'model' row")
    model = rows["model"]
    noise = [r for n, r in rows.items() if n.startswith("noise")]
    baselines = [r for n, r in rows.items() if n != "model" and not n.startswith("noise")]
    regressions = [r for r in baselines if r["name"].startswith("regression_")]
    interp = [r for r in baselines if not r["name"].startswith("regression_")]
    best = min(baselines, key=lambda r: r["rmse"])
    best_interp = min(interp, key=lambda r: r["rmse"])
    units = ""
    M = model["members"]
    out = []

    def num(x, spec):  # JSON null (an undefined score) prints as n/a
        return "n/a" if x is None else format(x, spec)

    def line(name, r):
        spread = (f", spread/RMSE {r['spread'] / r['rmse']:.2f}"
                  if r["members"] > 1 and r.get("spread") is not None and r["rmse"] else "")
        crps = f"CRPS {r['crps']:.4g}" if r["members"] > 1 else f"CRPS = MAE {r['crps']:.4g}"
        return (f"{a.prefix}  {name:<34} RMSE {r['rmse']:.4g}{units}, {crps}, std ratio {num(r['std_ratio'], '.3f')}, "
                f"hf ratio {num(r['upper_energy_ratio'], '.3f')}{spread}")

    out.append(line(f"finecast ({M} members)", model))
    out.append(line(f"best interpolation: {best_interp['name']}", best_interp))
    for r in regressions:
        out.append(line(r["name"], r))
    for r in noise:
        # a row added by add_regression_rows.py (noise_spectral_bspline) is on that interpolant's regression
        suffix = r["name"].split("_", 2)[2] if r["name"].count("_") >= 2 else ""
        meta = rep.get("meta", {})
        base = meta.get(f"noise_base_{suffix}" if suffix else "noise_base", "the best baseline")
        out.append(line(f"{r['name']} ({base} + noise)", r))
    bar = math.sqrt(1 + 1 / M) * best["rmse"]
    checks = [(f"RMSE {model['rmse']:.4g} <= sqrt(1+1/{M}) x best baseline {best['name']} {best['rmse']:.4g} = {bar:.4g}",
               model["rmse"] <= bar)]
    if a.factor is not None:
        against = a.against
        if against == "best_regression":
            if not regressions:
                sys.exit(f"eval_summary.py: {a.json} has no regression_* row for --against best_regression")
            against = best_regression(rows)["name"]
            out.append(f"{a.prefix}  --against best_regression: {against} (the regression row with the lowest RMSE)")
        if against not in rows:
            sys.exit(f"eval_summary.py: {a.json} has no row '{against}' for --factor")
        lim = a.factor * rows[against]["rmse"]
        checks.append((f"RMSE {model['rmse']:.4g} <= {a.factor} x {against} {rows[against]['rmse']:.4g} = {lim:.4g}",
                       model["rmse"] <= lim))
    worst = min(baselines, key=lambda r: r["crps"])
    checks.append((f"CRPS {model['crps']:.4g} < every baseline's (lowest: {worst['name']} {worst['crps']:.4g})",
                   model["crps"] < worst["crps"]))
    if noise:
        strongest = strongest_noise(rows)
        scale = "" if a.noise_factor == 1.0 else f"{a.noise_factor} x "
        lim = a.noise_factor * strongest["crps"]
        checks.append((f"CRPS {model['crps']:.4g} < {scale}the stronger noise reference's ({strongest['name']} "
                       f"{strongest['crps']:.4g}, {strongest['members']} members)", model["crps"] < lim))
    sr = model["std_ratio"]
    checks.append((f"std ratio {num(sr, '.3f')} in 0.8..1.2", sr is not None and 0.8 <= sr <= 1.2))
    hf = model["upper_energy_ratio"]
    checks.append((f"hf ratio {num(hf, '.3f')} in 0.5..2", hf is not None and 0.5 <= hf <= 2))
    ratio = model["spread"] / model["rmse"] if M > 1 and model.get("spread") is not None and model["rmse"] else None
    if ratio is not None:
        checks.append((f"spread/RMSE {ratio:.3f} in 0.85..1.15", 0.85 <= ratio <= 1.15))
    for text, ok in checks:
        out.append(f"{a.prefix}  {'met   ' if ok else 'MISSED'} {text}")
    for m in (16, 32):
        out.append(f"{a.prefix}  (with {m} members the RMSE bar would be sqrt(1+1/{m}) x {best['rmse']:.4g} = "
                   f"{math.sqrt(1 + 1 / m) * best['rmse']:.4g})")
    if a.inflation_fit and ratio is not None:
        out.append(f"inflation fit: spread/RMSE {ratio:.4f} on the val split; sample.inflation = 1 / (mean of this "
                   f"over the seeds) ({1 / ratio:.3f} for this seed alone)")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
