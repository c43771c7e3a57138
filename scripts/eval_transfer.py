#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""How much of a finecast model's correction to the regression baseline carries to the scored blocks.

For each output folder of scripts/evaluate.sh (a lat-lon case with --hold-out and regression_cons:
eval.json, baselines.nc, downscaled.nc with the truth as <var>_host), on the held-out blocks that
finecast-eval scored (block centre inside its hold_out box), weighted by cos(lat) as finecast-eval:

  d = ensemble mean - regression_cons   (what the model adds to the regression)
  e = truth - regression_cons           (what the regression misses)

and prints the RMSE of both, corr(d, e), the scale a* = <d, e> / <d, d> and the RMSE of
regression_cons + a* d: the best any rescaling of the model's correction could do, fitted on the
scored data itself (an oracle, a bound, not a method). Then the best CRPS of a Gaussian ensemble
(closed form) around the model's mean whose standard deviation is the members' own, times the one
factor that minimises it on the scored data: the bound for any spread calibration of this mean.

Usage: scripts/eval_transfer.py OUT [OUT ...]   (e.g. out/eval/eur11_s42 out/eval/eur11_s43)
"""
import argparse
import json
import math
import sys

import netCDF4
import numpy as np

_erf = np.frompyfunc(math.erf, 1, 1)


def held_out_blocks(meta, lat, lon, block):
    """The mask of the cells of the blocks whose centre lies in eval.json's hold_out box."""
    box = meta.get("hold_out")
    if not box:
        sys.exit(f"eval.json of {meta['pred']} has no hold_out: scripts/eval_transfer.py needs a held-out region")
    lat0, lat1, lon0, lon1 = (float(v) for v in box.split(","))
    ny, nx = len(lat) // block * block, len(lon) // block * block
    clat = np.asarray(lat[:ny]).reshape(-1, block).mean(1)
    clon = np.asarray(lon[:nx]).reshape(-1, block).mean(1)
    inside = np.outer((clat >= lat0) & (clat <= lat1), (clon >= lon0) & (clon <= lon1))
    mask = np.zeros((len(lat), len(lon)), bool)
    mask[:ny, :nx] = np.kron(inside, np.ones((block, block), bool))
    return mask


def crps_gauss(mu, sigma, y, w):
    """The weighted mean CRPS of N(mu, sigma^2) forecasts of y."""
    z = (y - mu) / sigma
    cdf = 0.5 * (1 + _erf(z / math.sqrt(2)).astype(float))
    pdf = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
    return float(np.sum(w * sigma * (z * (2 * cdf - 1) + 2 * pdf - 1 / math.sqrt(math.pi))) / np.sum(w))


def minimise(f, lo, hi, tol=1e-4):
    """The minimum of a unimodal f on [lo, hi] by golden-section search: (x, f(x))."""
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol * (abs(a) + abs(b)):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return (c, fc) if fc < fd else (d, fd)


def analyse(out):
    with open(f"{out}/eval.json") as f:
        meta = json.load(f)["meta"]
    var, block = meta["var"], int(meta["block"])
    with netCDF4.Dataset(f"{out}/downscaled.nc") as d, netCDF4.Dataset(f"{out}/baselines.nc") as b:
        members = d[var]
        if members.ndim != 4:
            sys.exit(f"{out}/downscaled.nc: {var} is not (time, realization, y, x): lat-lon cases only")
        if f"{var}_host" not in d.variables:
            sys.exit(f"{out}/downscaled.nc has no {var}_host (the truth): downscale a fine input")
        if "regression_cons" not in b.variables:
            sys.exit(f"{out}/baselines.nc has no regression_cons: evaluate a case with static covariates")
        ydim, xdim = members.dimensions[2:]
        lat, lon = d[ydim][:], d[xdim][:]
        ens = np.asarray(members[0], dtype=float)
        truth = np.asarray(d[f"{var}_host"][0], dtype=float)
        reg = np.asarray(b["regression_cons"][:], dtype=float)
        reg = reg[0] if reg.ndim == 3 else reg  # (time, y, x): the first scored step, that of members[0]
    mask = held_out_blocks(meta, lat, lon, block)
    w = np.broadcast_to(np.cos(np.deg2rad(np.asarray(lat, dtype=float)))[:, None], truth.shape)[mask]
    t, r = truth[mask], reg[mask]
    m, s = ens.mean(0)[mask], ens.std(0, ddof=1)[mask]

    def rms(x):
        return float(np.sqrt(np.sum(w * x * x) / np.sum(w)))

    d_, e_ = m - r, t - r
    scale = float(np.sum(w * d_ * e_) / np.sum(w * d_ * d_))
    corr = float(np.sum(w * d_ * e_) / math.sqrt(np.sum(w * d_ * d_) * np.sum(w * e_ * e_)))
    factor, crps = minimise(lambda k: crps_gauss(m, k * s, t, w), 0.01, 20)
    return dict(cells=int(mask.sum()), rmse_regression=rms(e_), rmse_model=rms(t - m), corr=corr, scale=scale,
                rmse_scaled=rms(e_ - scale * d_), crps_bound=crps, spread_factor=factor)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outs", nargs="+", metavar="OUT", help="output folder of scripts/evaluate.sh")
    args = parser.parse_args()
    rows = []
    for out in args.outs:
        r = analyse(out)
        rows.append(r)
        print(f"{out}: {r['cells']} cells; RMSE regression_cons {r['rmse_regression']:.4f}, model {r['rmse_model']:.4f}; "
              f"corr(model - regression, truth - regression) {r['corr']:+.3f}; best scale {r['scale']:+.2f} -> RMSE "
              f"{r['rmse_scaled']:.4f} ({r['rmse_scaled'] / r['rmse_regression'] - 1:+.1%} vs regression_cons); "
              f"best Gaussian CRPS {r['crps_bound']:.4f} (members' std x {r['spread_factor']:.2f})")
    if len(rows) > 1:
        mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
        print(f"mean of {len(rows)}: corr {mean['corr']:+.3f}, best scale {mean['scale']:+.2f}, RMSE scaled / "
              f"regression_cons {np.mean([r['rmse_scaled'] / r['rmse_regression'] for r in rows]):.4f}, "
              f"best Gaussian CRPS {mean['crps_bound']:.4f}")


if __name__ == "__main__":
    main()
