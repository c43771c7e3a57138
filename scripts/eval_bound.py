#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""How low can an ensemble's mean RMSE go on a split, given only block means? A bound for docs/evaluation.md.

An ensemble whose members are drawn from the right conditional distribution (calibrated) has an
ensemble-mean error made of the error of the conditional mean plus the sampling noise of M
members: RMSE_M = RMSE_mean * sqrt(1 + 1/M) (the conditional variance equals the mean's MSE).
So to tie a baseline of RMSE b, the conditional mean must reach b / sqrt(1 + 1/M).

This script estimates how good a conditional mean can be from the information a model has: the
(2R+1) x (2R+1) neighbourhood of block means around each block. It fits the best linear
predictor of the fine residual (fine minus block mean) from the neighbours' differences to the
block mean, on the training split (and, as an optimistic bound, on the scored split itself), made
conservative like finecast's samples, and reports its area-weighted RMSE on the scored split
with the conventions of finecast-eval (cos(lat) weights, whole k x k blocks from the first row and
column). The `nearest` line must equal finecast-eval's: it checks those conventions.

  scripts/eval_bound.py --train out/eval/etopo5_val/data/train.nc --test out/eval/etopo5_val/data/test.nc \\
      --var ROSE --block 16 --eval out/eval/etopo5_val/eval.json
"""
import argparse
import json
import sys

import numpy as np
import netCDF4


def load(path, var, block):
    """Field (ny, nx) cropped to whole blocks, and cos(lat) weights of the same shape."""
    ds = netCDF4.Dataset(path)
    if var not in ds.variables:
        sys.exit(f"eval_bound.py: error: {path} has no variable '{var}'")
    v = ds.variables[var]
    if len(v.dimensions) != 2:
        sys.exit(f"eval_bound.py: error: {path}:{var} has dims {v.dimensions}; expected (lat, lon)")
    f = np.ma.filled(v[:].astype(np.float64), np.nan)
    lat = np.asarray(ds.variables[v.dimensions[0]][:], dtype=np.float64)
    ny, nx = (f.shape[0] // block) * block, (f.shape[1] // block) * block
    f = f[:ny, :nx]
    if not np.all(np.isfinite(f)):
        sys.exit(f"eval_bound.py: error: {path}:{var} has missing values; this bound handles complete fields only")
    w = np.repeat(np.cos(np.deg2rad(lat[:ny]))[:, None], nx, axis=1)
    return f, w


def blocks(f, w, k):
    """(by, bx, k, k) views of field and weights, and the area-weighted block means (by, bx)."""
    ny, nx = f.shape
    fb = f.reshape(ny // k, k, nx // k, k).transpose(0, 2, 1, 3)
    wb = w.reshape(ny // k, k, nx // k, k).transpose(0, 2, 1, 3)
    return fb, wb, (fb * wb).sum((2, 3)) / wb.sum((2, 3))


def neighbourhood(c, r):
    """Differences of the (2r+1)^2 surrounding block means to each block's own (edge-replicated)."""
    p = np.pad(c, r, mode="edge")
    by, bx = c.shape
    return np.stack([p[r + dy:r + dy + by, r + dx:r + dx + bx] - c
                     for dy in range(-r, r + 1) for dx in range(-r, r + 1)], -1).reshape(by * bx, -1)


def conservative(pred, wb):
    return pred - (pred * wb).sum((2, 3), keepdims=True) / wb.sum((2, 3), keepdims=True)


def rmse(pred, fb, wb):
    return float(np.sqrt(((pred - fb) ** 2 * wb).sum() / wb.sum()))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", required=True, help="training split (NetCDF, lat x lon)")
    p.add_argument("--test", required=True, help="scored split (NetCDF, lat x lon)")
    p.add_argument("--var", required=True)
    p.add_argument("--block", type=int, required=True, help="block edge k in fine cells")
    p.add_argument("--radius", type=int, nargs="+", default=[1, 2, 3], help="neighbourhood radii R")
    p.add_argument("--members", type=int, nargs="+", default=[8, 16, 32])
    p.add_argument("--eval", help="finecast-eval JSON of the scored split: the best baseline's RMSE is the target")
    a = p.parse_args(argv)

    k = a.block
    ft, wt = load(a.train, a.var, k)
    fv, wv = load(a.test, a.var, k)
    bt, wbt, ct = blocks(ft, wt, k)
    bv, wbv, cv = blocks(fv, wv, k)
    yt = (bt - ct[..., None, None]).reshape(-1, k * k)
    yv = (bv - cv[..., None, None]).reshape(-1, k * k)
    mean_v = cv[..., None, None]
    print(f"scored: {bv.shape[0] * bv.shape[1]} blocks of {k} x {k}; trained on {bt.shape[0] * bt.shape[1]}")
    print(f"nearest (must equal finecast-eval's): rmse {rmse(mean_v + 0 * bv, bv, wbv):.2f}")
    spread = np.sqrt(((bv - (bv * wbv).sum((2, 3), keepdims=True) / wbv.sum((2, 3), keepdims=True)) ** 2 * wbv)
                     .sum((2, 3)) / wbv.sum((2, 3)))
    print(f"truth: mean within-block std {spread.mean():.1f}")

    rows = []
    for r in a.radius:
        xt, xv = neighbourhood(ct, r), neighbourhood(cv, r)
        for fit, (x, y) in (("train", (xt, yt)), ("scored split itself (optimistic)", (xv, yv))):
            coef = np.linalg.solve(x.T @ x + 1e-3 * np.eye(x.shape[1]), x.T @ y)
            pred = conservative((xv @ coef).reshape(bv.shape), wbv)
            e = rmse(mean_v + pred, bv, wbv)
            rows.append((r, fit, e))
            print(f"linear conditional mean, {2 * r + 1} x {2 * r + 1} block means, fitted on {fit}: rmse {e:.2f}")

    if a.eval:
        with open(a.eval) as f:
            preds = json.load(f)["predictions"]
        base = min((q for q in preds if q["name"] != "model"), key=lambda q: q["rmse"])
        b = base["rmse"]
        print(f"best baseline ({a.eval}): {base['name']} rmse {b:.2f}")
        for m in a.members:
            print(f"  a calibrated {m}-member ensemble ties it only if its conditional mean reaches "
                  f"rmse {b / np.sqrt(1 + 1 / m):.2f}")
        best = min(e for _, fit, e in rows if fit == "train")
        print(f"  best linear conditional mean fitted on the training split: {best:.2f} "
              f"({100 * (1 - best / b):+.1f}% vs the baseline; an ideal 8-member ensemble around it: "
              f"{best * np.sqrt(1 + 1 / 8):.2f})")


if __name__ == "__main__":
    main(sys.argv[1:])
