#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Does a spread conditioned on the context transfer to a fold it was not fitted on?

Takes the finecast-eval --json reports of the K folds of a cross-validation on a lat-lon grid
(scripts/evaluate.sh ... --fold I/K --inflation 1: members sampled on each fold's held-out blocks
by a model that never trained on them). For every held-out block it reads the members' variance
s2 and the ensemble mean's squared error e2 (cell means over the block, weighted by the report's
cos(lat) weights), and context features that need no truth:
  r2    the mean square of what the covariates add to the interpolant in that block
        (the report's noise base row minus bspline_cons, from baselines.nc beside the report)
  cvar  the variance of the coarse block means over the block's 3 x 3 coarse neighbourhood
Then, leaving each fold out in turn, it fits on the other folds' held-out blocks
    log e2 = a + b log s2 [+ c log r2] [+ d log cvar]
(weighted least squares, rescaled so that the fitted folds' spread/RMSE is 1) and inflates the
left-out fold's members block by block, F_b = sqrt(predicted e2 / s2): the ensemble mean, hence
the RMSE, stays. Printed per model: each fold's spread/RMSE and CRPS, against the raw members
(F = 1) and one scalar inflation fitted on the other folds (what eval_folds.py --leave-one-out
gives). docs/evaluation.md, "Spread that transfers", reports EUR-11's 4 folds.

    /usr/bin/python3 scripts/eval_spread_model.py out/eval/cv4_slopes_fold?of4/eval.json
"""
import argparse
import json
import os
import sys

import netCDF4
import numpy as np

MODELS = {
    "scalar": [],
    "s2": ["s2"],
    "s2+r2": ["s2", "r2"],
    "s2+cvar": ["s2", "cvar"],
    "s2+r2+cvar": ["s2", "r2", "cvar"],
}
TINY = 1e-12


def fail(msg):
    print("eval_spread_model.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def read(path, var):
    with netCDF4.Dataset(path) as ds:
        if var not in ds.variables:
            fail(f"{path} has no variable '{var}'")
        v = ds[var]
        coords = [np.asarray(ds[d][:], dtype=np.float64) if d in ds.variables else None for d in v.dimensions[-2:]]
        return np.ma.filled(v[:].astype(np.float64), np.nan), coords


def blocks(a, b):
    """(..., ny, nx) -> (..., ny/b, nx/b, b*b)."""
    lead, ny, nx = a.shape[:-2], a.shape[-2] // b, a.shape[-1] // b
    a = a[..., : ny * b, : nx * b].reshape(*lead, ny, b, nx, b)
    return a.swapaxes(-3, -2).reshape(*lead, ny, nx, b * b)


def held_out_blocks(box, lat, lon, b):
    """The blocks wholly inside the report's --hold-out box lat0,lat1,lon0,lon1 (finecast-eval's rule)."""
    lat0, lat1, lon0, lon1 = (float(x) for x in box.split(","))
    inside = ((lat >= lat0) & (lat <= lat1))[:, None] & ((lon >= lon0) & (lon <= lon1))[None, :]
    return blocks(inside, b).all(-1)


def fold_blocks(report):
    """The held-out blocks of one report: their weights, s2, e2, r2, cvar, and the members' deviations."""
    try:
        with open(report) as f:
            doc = json.load(f)
        meta = doc["meta"]
        rows = {r["name"]: r for r in doc["predictions"]}
    except (OSError, ValueError, KeyError) as e:
        fail(f"{report}: not a finecast-eval --json report ({e})")
    for key in ("truth", "pred", "var", "truth_var", "block", "hold_out", "noise_base"):
        if key not in meta:
            fail(f"{report}: meta has no '{key}' (a report of a --hold-out run with covariates is needed)")
    if meta.get("truth_y0", "0") != "0" or meta.get("pred_y0", "0") != "0" or meta.get("truth_steps", "0") != "0":
        fail(f"{report}: only whole-field, one-step reports are supported")
    if int(rows["model"]["members"]) < 2:
        fail(f"{report}: the model has fewer than 2 members")
    b = int(meta["block"])
    members, (lat, lon) = read(meta["pred"], meta["var"])
    truth, _ = read(meta["truth"], meta["truth_var"])
    coarse, _ = read(meta["pred"], meta["var"] + "_coarse")
    members, truth, coarse = members.reshape(-1, *members.shape[-2:]), truth.reshape(truth.shape[-2:]), coarse.reshape(coarse.shape[-2:])
    if lat is None or lon is None:
        fail(f"{meta['pred']}: '{meta['var']}' has no 1-D coordinate variables (lat-lon grids only)")
    here = os.path.dirname(os.path.abspath(report))
    base, _ = read(os.path.join(here, "baselines.nc"), meta["noise_base"])
    interp, _ = read(os.path.join(here, "baselines.nc"), "bspline_cons")
    cos = np.cos(np.deg2rad(lat))[:, None] * np.ones((1, truth.shape[-1]))
    sel = held_out_blocks(meta["hold_out"], lat, lon, b)
    mb, tb = blocks(members, b), blocks(truth, b)
    sel &= np.isfinite(mb).all((0, -1)) & np.isfinite(tb).all(-1)
    if not sel.any():
        fail(f"{report}: no held-out block has finite members and truth")
    cm = blocks(coarse, b).mean(-1)
    pad = np.pad(cm, 1, mode="edge")
    cvar = np.stack([pad[i : i + cm.shape[0], j : j + cm.shape[1]] for i in range(3) for j in range(3)]).var(0)
    mean = mb.mean(0)
    return {
        "w": blocks(cos, b).mean(-1)[sel],
        "s2": mb.var(0, ddof=1).mean(-1)[sel],
        "e2": ((mean - tb) ** 2).mean(-1)[sel],
        "r2": ((blocks(base, b) - blocks(interp, b)) ** 2).mean(-1)[sel],
        "cvar": cvar[sel],
        "mean": mean[sel],
        "dev": (mb - mean)[:, sel],
        "truth": tb[sel],
    }


def crps(fold, F):
    """Mean CRPS (weighted by block) of the fold's members inflated by F per block."""
    x = fold["mean"][None] + F[None, :, None] * fold["dev"]  # members, blocks, cells
    t1 = np.abs(x - fold["truth"][None]).mean(0)
    t2 = np.abs(x[:, None] - x[None, :]).mean((0, 1))
    per_block = (t1 - 0.5 * t2).mean(-1)
    return float((fold["w"] * per_block).sum() / fold["w"].sum())


def ratio(fold, F):
    return float(np.sqrt((fold["w"] * F**2 * fold["s2"]).sum() / (fold["w"] * fold["e2"]).sum()))


def design(fold, feats):
    return np.column_stack([np.ones(len(fold["w"]))] + [np.log(fold[f] + TINY) for f in feats])


def fit_predict(train, test, feats):
    """Each test block's inflation from the spread model fitted on the train blocks."""
    w = np.concatenate([f["w"] for f in train])
    s2 = np.concatenate([f["s2"] for f in train])
    e2 = np.concatenate([f["e2"] for f in train])
    if not feats:  # one scalar: 1 / the fitted folds' pooled spread/RMSE
        return np.full(len(test["w"]), np.sqrt((w * e2).sum() / (w * s2).sum()))
    X = np.vstack([design(f, feats) for f in train])
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], np.log(e2 + TINY) * sw, rcond=None)
    scale = (w * e2).sum() / (w * np.exp(X @ coef)).sum()  # the fitted folds' spread/RMSE becomes 1
    return np.sqrt(scale * np.exp(design(test, feats) @ coef) / (test["s2"] + TINY))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("reports", nargs="+", help="finecast-eval --json reports, one per fold")
    p.add_argument("--bar", default="0.85,1.15", help="the spread/RMSE range counted as met (default 0.85,1.15)")
    a = p.parse_args()
    if len(a.reports) < 2:
        fail("at least two folds are needed to leave one out")
    lo, hi = (float(x) for x in a.bar.split(","))
    folds = [fold_blocks(r) for r in a.reports]
    labels = [os.path.basename(os.path.dirname(os.path.abspath(r))) for r in a.reports]
    print(f"{sum(len(f['w']) for f in folds)} held-out blocks in {len(folds)} folds: "
          + ", ".join(f"{lab} {len(f['w'])}" for lab, f in zip(labels, folds)))
    print(f"{'spread model':14s}" + "".join(f"{'fold ' + str(i + 1):>16s}" for i in range(len(folds)))
          + f"{'mean CRPS':>11s}  folds in {lo}..{hi}")
    candidates = [("raw (F = 1)", None)] + list(MODELS.items())
    for name, feats in candidates:
        cells, met, cr = [], 0, []
        for k, test in enumerate(folds):
            F = np.ones(len(test["w"])) if feats is None else fit_predict(folds[:k] + folds[k + 1 :], test, feats)
            r, c = ratio(test, F), crps(test, F)
            met += lo <= r <= hi
            cr.append(c)
            cells.append(f"{r:6.3f} / {c:.4f}")
        print(f"{name:14s}" + "".join(f"{c:>16s}" for c in cells) + f"{np.mean(cr):11.4f}  {met} of {len(folds)}")
    print("(each cell: spread/RMSE / CRPS of that fold, the spread model fitted on the other folds)")


if __name__ == "__main__":
    main()
