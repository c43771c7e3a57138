#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Adds the regression rows of finecast-eval runs on other interpolants to one report.

finecast-eval fits its regression baselines (regression_cons, regression_local) on one
conservative interpolant, --regression-interpolant (auto: bicubic on lat-lon, idw on ICON), and
builds its noise references (noise_white, noise_spectral) on the best of them. The strongest
regression is not always on that interpolant: on ICON ts regression_cons on linear_cons is 6.7%
better than on idw_cons, on EUR-11 regression_local on bspline_cons 1-7% better than on
bicubic_cons (docs/evaluation.md, "The strongest regression"). This script takes the report of a
finecast-eval run (--json) and the reports of the same scoring with another
--regression-interpolant I (--from, repeatable) and adds each --from report's regression rows
and noise references to the first as <row>_<I> (regression_cons_bspline, noise_spectral_linear,
...), so that eval_summary.py's and eval_folds.py's best_regression (the regression row with the
lowest RMSE) and stronger noise reference (the noise row with the lowest CRPS) are the best over
every interpolant.

A --from report must score the same thing: the same truth, prediction, variable, block,
hold-out, region and fit data, else it is refused, naming the key. Rows of the same name already
in the report are replaced (evaluate.sh --only-eval runs it again). The report is rewritten
beside itself under a temporary name and renamed, so it is whole or as it was.

    /usr/bin/python3 scripts/add_regression_rows.py --json out/eval/icon/eval.json \\
        --from out/eval/icon/eval_regression_linear.json
"""
import argparse
import json
import os
import sys

# what must agree for two reports to score the same prediction on the same cells
SAME = ("truth", "pred", "var", "truth_var", "block", "hold_out", "region", "truth_y0", "truth_x0",
        "pred_y0", "pred_x0", "truth_steps", "pred_steps", "regression_fit_on")


def fail(msg):
    print("add_regression_rows.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: not a finecast-eval --json report ({e})")
    if not (isinstance(doc, dict) and isinstance(doc.get("meta"), dict) and isinstance(doc.get("predictions"), list)):
        fail(f"{path}: not a finecast-eval --json report (it needs 'meta' and 'predictions')")
    return doc


def interpolant(doc, path):
    name = doc["meta"].get("regression_interpolant")
    if not name:
        fail(f"{path}: has no regression rows (meta has no 'regression_interpolant': run finecast-eval with --static)")
    return name


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--json", required=True, help="the finecast-eval report to add the rows to (rewritten)")
    p.add_argument("--from", dest="sources", action="append", required=True,
                   help="a report of the same scoring with another --regression-interpolant (repeatable)")
    a = p.parse_args()
    doc = load(a.json)
    own = interpolant(doc, a.json)
    rows = doc["predictions"]
    for src in a.sources:
        other = load(src)
        interp = interpolant(other, src)
        if interp == own:
            fail(f"{src}: its regressions are on {interp}, as those of {a.json} already are")
        for key in SAME:
            if doc["meta"].get(key) != other["meta"].get(key):
                fail(f"{src}: scores another thing than {a.json}: meta '{key}' is {other['meta'].get(key)!r}, "
                     f"expected {doc['meta'].get(key)!r}")
        regs = [dict(r, name=f"{r['name']}_{interp}") for r in other["predictions"]
                if r["name"].startswith("regression_")]
        noise = [dict(r, name=f"{r['name']}_{interp}") for r in other["predictions"] if r["name"].startswith("noise_")]
        if not regs:
            fail(f"{src}: has no regression_* row")
        names = {r["name"] for r in regs + noise}
        rows = [r for r in rows if r["name"] not in names]
        last = max((i for i, r in enumerate(rows) if r["name"].startswith("regression_")), default=len(rows) - 1)
        rows = rows[: last + 1] + regs + rows[last + 1 :] + noise
        if "noise_base" in other["meta"]:
            doc["meta"][f"noise_base_{interp}"] = f"{other['meta']['noise_base']}_{interp}"
        doc["meta"][f"regression_rows_{interp}"] = (f"{', '.join(sorted(names))}: the rows of {src} "
                                                    f"(--regression-interpolant {interp}; noise base "
                                                    f"{other['meta'].get('noise_base', 'none')})")
        print(f"{a.json}: added " + ", ".join(f"{r['name']} RMSE {r['rmse']:.4g}" for r in regs)
              + "".join(f", {r['name']} CRPS {r['crps']:.4g}" for r in noise))
    doc["predictions"] = rows
    tmp = f"{a.json}.tmp{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2)
        os.replace(tmp, a.json)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        fail(f"{a.json}: cannot rewrite it ({e})")


if __name__ == "__main__":
    main()
