#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Does a spread conditioned on the context transfer to a fold it was not fitted on?

Takes the finecast-eval --json reports of the K folds of a spatial cross-validation
(scripts/evaluate.sh ... --fold I/K --inflation 1: members sampled on each fold's held-out blocks
by a model that never trained on them), on a lat-lon grid (k x k blocks) or an ICON grid (the
coarse cells' patches, read from the report's baselines.nc: coarse_cell, cell_area, scored). On a
lat-lon grid a report may score several steps (each step's blocks count as blocks of their own),
and with --all-blocks it needs no hold-out: the reports of a split in time, whose whole field is
unseen (the time split's). A fold
may pool several runs (seeds): give them as one argument joined by commas. For every held-out block
it reads the members' variance s2 and the ensemble mean's squared error e2 (cell means over the
block, weighted as the report's scores), and context features that need no truth:
  r2    the mean square of what the covariates add to the interpolant in that block (the report's
        noise base row minus its interpolant: bspline_cons on lat-lon grids, the regression's own
        interpolant on ICON, from baselines.nc beside the report)
  cvar  lat-lon grids only: the variance of the coarse block means over the block's 3 x 3 coarse
        neighbourhood
  nov   lat-lon grids, with --static FILE:VAR: how novel the block's covariates are to the model, 1 +
        the mean distance (in units of the training blocks' spread) from the block's (mean, standard
        deviation) of each static field to those of its 8 nearest training blocks (those with no
        cell in the hold-out box; 1 + so that a block like its neighbours, e.g. open sea, has a
        finite log): an out-of-distribution measure an in-situ run could compute
  ext   with --range-pair SUFFIX: 1 + how far the patch's context lies beyond the model's training
        range (the sampler's sample.inflation_range feature e), read as the ratio of each patch's
        member spread in the prediction sampled with --inflation-range 1 (the report's prediction
        file with SUFFIX before .nc, the same seed and inflation) to the report's own; the model
        "ext" fits log(e2 / s2) = a + k log ext, which the sampler applies in situ as
        sample.inflation = exp(a / 2), sample.inflation_range = k / 2 (and "r2" the same on r2: the plugin's
        sample.inflation = exp(a / 2) and patch.spread_regression = k / 2)
  d2    where every argument joins several runs of the same blocks and truth (models of different
        training seeds): the variance of their ensemble means, the models' disagreement (what a
        deep ensemble adds to the spread); every run of the argument gets the same d2
Two scalar inflations: "scalar", 1 / the fitted folds' pooled spread/RMSE (the configs take 1 /
the mean of the runs' ratios instead, as eval_folds.py --leave-one-out: close, not equal), and
"scalar, CRPS", the F that minimises the fitted folds' mean CRPS (minimum-CRPS estimation, as
ensemble post-processing fits its spread). Then, leaving each fold out in turn, it fits on the
other folds' held-out blocks
    log e2 = a + b log s2 [+ c log r2] [+ d log cvar] [+ e log nov] [+ g log d2]
(weighted least squares, rescaled so that the fitted folds' spread/RMSE is 1) and inflates the
left-out fold's members block by block, F_b = sqrt(predicted e2 / s2): the ensemble mean, hence
the RMSE, stays. Printed per model: each fold's spread/RMSE and CRPS (the mean over its runs),
against the raw members (F = 1) and the two scalars fitted on the other folds; the mean CRPS over each report's stronger noise reference
when the reports have noise rows. --apply REPORT,... fits every model on all the folds and scores
it on those reports (a test split the folds never saw). docs/evaluation.md, "Spread that
transfers", reports EUR-11's 4 folds and ICON's quadrants.

    /usr/bin/python3 scripts/eval_spread_model.py out/eval/cv4_slopes_fold?of4/eval.json
    /usr/bin/python3 scripts/eval_spread_model.py $(for I in 1 2 3; do echo out/eval/rv_f${I}_s4{2,3,4}/eval.json | tr ' ' ,; done) \
        --apply out/eval/rt_f1_s4{2,3,4}/eval.json
"""
import argparse
import json
import os
import sys

import netCDF4
import numpy as np

from eval_transfer import minimise

MIN_CRPS = "min CRPS"  # the feature list of the scalar fitted by its CRPS
MODELS = {
    "scalar": [],
    "scalar, CRPS": MIN_CRPS,
    "s2": ["s2"],
    "s2+r2": ["s2", "r2"],
    "s2+cvar": ["s2", "cvar"],
    "s2+r2+cvar": ["s2", "r2", "cvar"],
    "s2+nov": ["s2", "nov"],
    "s2+r2+nov": ["s2", "r2", "nov"],
    "s2+d2": ["s2", "d2"],
    "s2+r2+d2": ["s2", "r2", "d2"],
    "ext": ("in situ", ["ext"]),
    "r2": ("in situ", ["r2"]),
    "s2+ext": ["s2", "ext"],
    "s2+r2+ext": ["s2", "r2", "ext"],
}
TINY = 1e-12
NEIGHBOURS = 8  # training blocks averaged over in nov
IN_SITU = {}  # the latest fit of an in-situ model: sample.inflation and the slopes (sample.inflation_range)


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


def inside_box(box, lat, lon):
    lat0, lat1, lon0, lon1 = (float(x) for x in box.split(","))
    return ((lat >= lat0) & (lat <= lat1))[:, None] & ((lon >= lon0) & (lon <= lon1))[None, :]


def held_out_blocks(box, lat, lon, b):
    """The blocks wholly inside the report's --hold-out box lat0,lat1,lon0,lon1 (finecast-eval's rule)."""
    return blocks(inside_box(box, lat, lon), b).all(-1)


def static_window(spec, lat, lon):
    """The static field FILE:VAR on the truth's grid: the window of the file whose last two
    coordinates are the truth's (the file may cover a larger grid, as finecast-replay allows)."""
    path, _, var = spec.rpartition(":")
    if not path or not var:
        fail(f"--static {spec}: FILE:VAR expected")
    if not os.path.isfile(path):
        fail(f"--static {spec}: no file {path}")
    field, (slat, slon) = read(path, var)
    field = field.reshape(field.shape[-2:])
    if slat is None or slon is None:
        fail(f"--static {spec}: '{var}' has no 1-D coordinate variables")

    def start(axis, want, name):
        tol = 1e-3 * abs(want[1] - want[0]) if len(want) > 1 else 1e-6
        i = int(np.argmin(np.abs(axis - want[0])))
        if i + len(want) > len(axis) or not np.allclose(axis[i:i + len(want)], want, atol=tol, rtol=0):
            fail(f"--static {spec}: its {name} coordinates do not contain the truth's "
                 f"({want[0]:g} .. {want[-1]:g}, {len(want)} values)")
        return i

    i, j = start(slat, lat, "first"), start(slon, lon, "second")
    return field[i:i + len(lat), j:j + len(lon)]


def novelty(statics, lat, lon, b, box, sel):
    """nov of the blocks `sel`: 1 + the mean distance of each block's standardised (mean, sd) of every
    static field to its NEIGHBOURS nearest training blocks (no cell in the hold-out box)."""
    feats = []
    for spec in statics:
        fb = blocks(static_window(spec, lat, lon), b)
        feats += [fb.mean(-1), fb.std(-1)]
    X = np.stack(feats, -1)
    train = ~blocks(inside_box(box, lat, lon), b).any(-1) & np.isfinite(X).all(-1)
    if train.sum() < NEIGHBOURS:
        fail(f"fewer than {NEIGHBOURS} training blocks with finite static fields outside the hold-out box {box}")
    mu, sd = X[train].mean(0), X[train].std(0) + TINY
    Zt, Zs = (X[train] - mu) / sd, (X[sel] - mu) / sd
    dist = np.sqrt(((Zs[:, None, :] - Zt[None]) ** 2).sum(-1))
    return 1.0 + np.sort(dist, 1)[:, :NEIGHBOURS].mean(1)


def read_report(report, all_blocks=False):
    try:
        with open(report) as f:
            doc = json.load(f)
        meta = doc["meta"]
        rows = {r["name"]: r for r in doc["predictions"]}
    except (OSError, ValueError, KeyError) as e:
        fail(f"{report}: not a finecast-eval --json report ({e})")
    icon = meta.get("grid") == "icon"
    need = ("truth", "pred", "var", "truth_var", "noise_base") + (() if all_blocks else ("hold_out",)) + (() if icon else ("block",))
    for key in need:
        if key not in meta:
            fail(f"{report}: meta has no '{key}' (a report of a --hold-out run with covariates is needed"
                 + ("" if key != "hold_out" else "; or --all-blocks, for a split in time whose whole field is unseen") + ")")
    if meta.get("truth_y0", "0") != "0" or meta.get("pred_y0", "0") != "0":
        fail(f"{report}: only whole-field reports are supported")
    if icon and meta.get("truth_steps", "0") != "0":
        fail(f"{report}: only one-step reports are supported on ICON grids")
    if int(rows["model"]["members"]) < 2:
        fail(f"{report}: the model has fewer than 2 members")
    noise = [r["crps"] for name, r in rows.items() if name.startswith("noise_") and "crps" in r]
    return meta, (min(noise) if noise else None)


def run_blocks(report, mb, tb, cw, base, interp, cvar, nov=None, ext=None):
    """One run's held-out blocks (arrays blocks x cells, members first): weights, s2, e2, r2, cvar, deviations."""
    w = cw.sum(-1)
    mean = mb.mean(0)
    return {
        "name": report,
        "cw": cw,
        "w": w,
        "s2": (cw * mb.var(0, ddof=1)).sum(-1) / w,
        "e2": (cw * (mean - tb) ** 2).sum(-1) / w,
        "r2": None if base is None else (cw * (base - interp) ** 2).sum(-1) / w,
        "cvar": cvar,
        "nov": nov,
        "ext": ext,
        "d2": None,
        "mean": mean,
        "dev": mb - mean,
        "truth": tb,
    }


def baseline_steps(path, var, tsteps, shape):
    """{truth step: field} of a --baselines-out variable: (time, y, x) with truth_step, or (y, x), the
    last scored step of a finecast-eval before 12/2026 (then only a one-step report's step)."""
    if not os.path.isfile(path):
        return {}
    with netCDF4.Dataset(path) as ds:
        if var not in ds.variables:
            fail(f"{path} has no variable '{var}'")
        a = np.ma.filled(ds[var][:].astype(np.float64), np.nan)
        if a.ndim == 2:
            return {tsteps[0]: a} if len(tsteps) == 1 else {}
        steps = [int(x) for x in np.asarray(ds["truth_step"][:]).ravel()] if "truth_step" in ds.variables else [tsteps[-1]]
    return {t: a[i].reshape(shape) for i, t in enumerate(steps)}


def latlon_blocks(report, meta, statics, all_blocks=False):
    """The held-out blocks of every scored step (a block of each step counts as one)."""
    b = int(meta["block"])
    tsteps = [int(x) for x in meta.get("truth_steps", "0").split()]
    psteps = [int(x) for x in meta.get("pred_steps", "0").split()]
    members, (lat, lon) = read(meta["pred"], meta["var"])
    truth, _ = read(meta["truth"], meta["truth_var"])
    coarse, _ = read(meta["pred"], meta["var"] + "_coarse")
    if lat is None or lon is None:
        fail(f"{meta['pred']}: '{meta['var']}' has no 1-D coordinate variables")
    shape = truth.shape[-2:]
    members = members.reshape(-1, members.shape[-3], *shape)  # (steps, members, y, x)
    truth, coarse = truth.reshape(-1, *shape), coarse.reshape(-1, *shape)
    here = os.path.dirname(os.path.abspath(report))
    bases = baseline_steps(os.path.join(here, "baselines.nc"), meta["noise_base"], tsteps, shape)
    interps = baseline_steps(os.path.join(here, "baselines.nc"), "bspline_cons", tsteps, shape)
    with_r2 = all(t in bases and t in interps for t in tsteps)
    if not with_r2:
        print(f"({report}: no baselines.nc beside it with the scored steps (finecast-eval --baselines-out): no r2)")
    box = meta.get("hold_out")
    if statics and not box:
        fail(f"{report}: --static needs a report with a hold-out (nov measures against the training blocks)")
    held = held_out_blocks(box, lat, lon, b) if box else np.ones((shape[0] // b, shape[1] // b), dtype=bool)
    cos = np.cos(np.deg2rad(lat))[:, None] * np.ones((1, shape[-1]))
    nov = novelty(statics, lat, lon, b, box, held) if statics else None  # the held-out blocks', in order
    parts = []
    for t, p in zip(tsteps, psteps):
        if p >= members.shape[0] or t >= truth.shape[0]:
            fail(f"{report}: step {t} of the truth or {p} of the prediction is not in the files")
        mb, tb = blocks(members[p], b), blocks(truth[t], b)
        sel = held & np.isfinite(mb).all((0, -1)) & np.isfinite(tb).all(-1)
        cm = blocks(coarse[p], b).mean(-1)
        pad = np.pad(cm, 1, mode="edge")
        cvar = np.stack([pad[i : i + cm.shape[0], j : j + cm.shape[1]] for i in range(3) for j in range(3)]).var(0)
        cw = blocks(cos, b)[sel]  # each cell weighs its cos(lat), as finecast-eval's scores
        parts.append((mb[:, sel], tb[sel], cw, blocks(bases[t], b)[sel] if with_r2 else None,
                      blocks(interps[t], b)[sel] if with_r2 else None, cvar[sel],
                      None if nov is None else nov[sel[held]]))
    if not sum(len(part[1]) for part in parts):
        fail(f"{report}: no held-out block has finite members and truth")
    cat = lambda k, axis=0: None if parts[0][k] is None else np.concatenate([part[k] for part in parts], axis)
    return run_blocks(report, cat(0, 1), cat(1), cat(2), cat(3), cat(4), cat(5), cat(6))


def icon_blocks(report, meta, range_pair=None):
    """ICON: the scored patches (baselines.nc's coarse_cell and scored) whose members and truth are finite."""
    bl = os.path.join(os.path.dirname(os.path.abspath(report)), "baselines.nc")
    interp_name = meta.get("regression_interpolant", "idw") + "_cons"
    if not os.path.isfile(bl):
        fail(f"{report}: no {bl} beside it (finecast-eval --baselines-out)")
    names = ("coarse_cell", "cell_area", "scored", meta["noise_base"], interp_name)
    with netCDF4.Dataset(bl) as ds:
        missing = [name for name in names if name not in ds.variables]
        if missing:
            fail(f"{bl} has no {', '.join(missing)}" + ("" if "coarse_cell" not in missing else
                 ": written by a finecast-eval older than the ICON layout in --baselines-out; score the run "
                 "again (scripts/evaluate.sh ... --only-eval)"))
        fields = {name: np.ma.filled(ds[name][:].astype(np.float64), np.nan).ravel() for name in names}
    members, _ = read(meta["pred"], meta["var"])
    truth, _ = read(meta["truth"], meta["truth_var"])
    members, truth = members.reshape(-1, members.shape[-1]), truth.reshape(-1)
    patch = fields["coarse_cell"].astype(np.int64)
    counts = np.bincount(patch)
    if counts.min() != counts.max():
        fail(f"{bl}: patches of {counts.min()} to {counts.max()} cells (one size expected)")
    order = np.argsort(patch, kind="stable")

    def by_patch(a):  # (..., cells) -> (..., patches, cells of the patch)
        return a[..., order].reshape(*a.shape[:-1], len(counts), counts[0])

    mb, tb = by_patch(members), by_patch(truth)
    sel = (by_patch(fields["scored"]) == 1).all(-1) & np.isfinite(mb).all((0, -1)) & np.isfinite(tb).all(-1)
    if not sel.any():
        fail(f"{report}: no scored patch has finite members and truth")
    ext = None
    if range_pair:
        stem, dot, tail = meta["pred"].rpartition(".")
        pair = f"{stem}{range_pair}.{tail}" if dot else meta["pred"] + range_pair
        if not os.path.isfile(pair):
            fail(f"{report}: --range-pair {range_pair}: no {pair} (the prediction sampled with --inflation-range 1)")
        pm, _ = read(pair, meta["var"])
        pb = by_patch(pm.reshape(-1, pm.shape[-1]))[:, sel]
        if pb.shape[0] != mb.shape[0] or not np.isfinite(pb).all():
            fail(f"{pair}: not the members of {meta['pred']} sampled again (members or patches differ)")
        cw = by_patch(fields["cell_area"])[sel]
        spread = lambda m: (cw * m.var(0, ddof=1)).sum(-1) / cw.sum(-1)
        ext = np.sqrt(spread(pb) / (spread(mb[:, sel]) + TINY))
        if (ext < 1 - 1e-3).any():
            fail(f"{pair}: a patch's spread is smaller than in {meta['pred']} (not the same seed and inflation?)")
    return run_blocks(report, mb[:, sel], tb[sel], by_patch(fields["cell_area"])[sel],
                      by_patch(fields[meta["noise_base"]])[sel], by_patch(fields[interp_name])[sel], None, None,
                      ext)


def fold_blocks(report, statics, all_blocks=False, range_pair=None):
    """One report's (run's) held-out blocks and the CRPS of its stronger noise reference (None without one)."""
    meta, noise = read_report(report, all_blocks)
    if meta.get("grid") == "icon" and (statics or all_blocks):
        fail(f"{report}: --static and --all-blocks are for lat-lon grids")
    if meta.get("grid") != "icon" and range_pair:
        fail(f"{report}: --range-pair is for ICON grids")
    run = (icon_blocks(report, meta, range_pair) if meta.get("grid") == "icon"
           else latlon_blocks(report, meta, statics, all_blocks))
    run["noise_crps"] = noise
    return run


def pair_distance(fold):
    """Each cell's mean distance between two members' deviations, E|d - d'| (computed once per run:
    with the deviations inflated by F, the members' pair distance is F times it)."""
    if "pairs" not in fold:
        fold["pairs"] = np.abs(fold["dev"][:, None] - fold["dev"][None]).mean((0, 1))
    return fold["pairs"]


def crps(fold, F):
    """Mean CRPS of the fold's members inflated by F per block, weighted as the report's scores."""
    t1 = np.abs(fold["mean"][None] - fold["truth"][None] + F[None, :, None] * fold["dev"]).mean(0)
    return float((fold["cw"] * (t1 - 0.5 * F[:, None] * pair_distance(fold))).sum() / fold["cw"].sum())


def min_crps_scalar(runs, lo=0.2, hi=5.0):
    """The scalar F minimising the runs' mean CRPS (convex in F: golden-section search)."""
    return minimise(lambda F: np.mean([crps(run, np.full(len(run["w"]), F)) for run in runs]), lo, hi)[0]


def ratio(fold, F):
    return float(np.sqrt((fold["w"] * F**2 * fold["s2"]).sum() / (fold["w"] * fold["e2"]).sum()))


def design(fold, feats):
    return np.column_stack([np.ones(len(fold["w"]))] + [np.log(fold[f] + TINY) for f in feats])


def fit_predict(train, test, feats):
    """Each test block's inflation from the spread model fitted on the train blocks."""
    if feats == MIN_CRPS:
        return np.full(len(test["w"]), min_crps_scalar(train))
    w = np.concatenate([f["w"] for f in train])
    s2 = np.concatenate([f["s2"] for f in train])
    e2 = np.concatenate([f["e2"] for f in train])
    if not feats:  # one scalar: 1 / the fitted folds' pooled spread/RMSE
        return np.full(len(test["w"]), np.sqrt((w * e2).sum() / (w * s2).sum()))
    if isinstance(feats, tuple):  # ("in situ", features): log(e2 / s2) on them, the spread's own slope 1
        X = np.vstack([design(f, feats[1]) for f in train])
        sw = np.sqrt(w)
        coef, *_ = np.linalg.lstsq(X * sw[:, None], (np.log(e2 + TINY) - np.log(s2 + TINY)) * sw, rcond=None)
        scale = (w * e2).sum() / (w * s2 * np.exp(X @ coef)).sum()
        IN_SITU["inflation"] = float(np.sqrt(scale * np.exp(coef[0])))
        IN_SITU["slopes"] = [float(c / 2) for c in coef[1:]]
        return np.sqrt(scale * np.exp(design(test, feats[1]) @ coef))
    X = np.vstack([design(f, feats) for f in train])
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X * sw[:, None], np.log(e2 + TINY) * sw, rcond=None)
    scale = (w * e2).sum() / (w * np.exp(X @ coef)).sum()  # the fitted folds' spread/RMSE becomes 1
    return np.sqrt(scale * np.exp(design(test, feats) @ coef) / (test["s2"] + TINY))


def runs_of(arg, statics, all_blocks=False, range_pair=None):
    """The runs of one argument. Two or more runs that score the same blocks of the same truth (seeds of
    one fold) each get their disagreement d2; runs of different truths pooled as one fold get none."""
    runs = [fold_blocks(r, statics, all_blocks, range_pair) for r in arg.split(",") if r]
    if len(runs) >= 2 and all(np.array_equal(run["truth"], runs[0]["truth"]) for run in runs):
        means = np.stack([run["mean"] for run in runs])  # runs, blocks, cells
        cw = runs[0]["cw"]
        d2 = (cw * means.var(0, ddof=1)).sum(-1) / cw.sum(-1)
        for run in runs:
            run["d2"] = d2
    return runs


def label(runs):
    lab = os.path.basename(os.path.dirname(os.path.abspath(runs[0]["name"])))
    return lab + (f" +{len(runs) - 1} runs" if len(runs) > 1 else "")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("reports", nargs="+", help="finecast-eval --json reports, one argument per fold "
                   "(several runs of one fold, e.g. seeds, joined by commas)")
    p.add_argument("--apply", nargs="+", default=[], metavar="REPORT",
                   help="reports of a test split: every model fitted on all the folds, scored on each of them")
    p.add_argument("--static", action="append", default=[], metavar="FILE:VAR",
                   help="a static field of the truth's lat-lon grid (or a larger one holding it), for the "
                   "novelty feature nov; repeat for several")
    p.add_argument("--all-blocks", action="store_true",
                   help="lat-lon: score every block of reports without a hold-out (a split in time, whose whole "
                   "field is unseen: the time split's reports)")
    p.add_argument("--apply-inflation", type=float, default=1.0, metavar="F",
                   help="the inflation the --apply reports were sampled with over the folds' (default 1): their "
                   "members' deviations are divided by it before the fitted models apply theirs")
    p.add_argument("--range-pair", metavar="SUFFIX",
                   help="ICON: the feature ext from each report's prediction sampled again with --inflation-range 1, "
                   "its file name the prediction's with SUFFIX before .nc (e.g. _range1)")
    p.add_argument("--bar", default="0.85,1.15", help="the spread/RMSE range counted as met (default 0.85,1.15)")
    a = p.parse_args()
    if len(a.reports) < 2:
        fail("at least two folds are needed to leave one out")
    lo, hi = (float(x) for x in a.bar.split(","))
    folds = [runs_of(arg, a.static, a.all_blocks, a.range_pair) for arg in a.reports]
    tests = [run for arg in a.apply for run in runs_of(arg, a.static, a.all_blocks, a.range_pair)]
    if a.apply_inflation <= 0:
        fail(f"--apply-inflation must be positive, got {a.apply_inflation}")
    for run in tests:
        run["dev"] = run["dev"] / a.apply_inflation
        run["s2"] = run["s2"] / a.apply_inflation**2
        run.pop("pairs", None)  # of the deviations before
    every = [run for fold in folds for run in fold] + tests
    feats_of = lambda f: f[1] if isinstance(f, tuple) else f
    models = [("raw (F = 1)", None)] + [(n, f) for n, f in MODELS.items() if f == MIN_CRPS
                                         or all(run[x] is not None for x in feats_of(f) for run in every)]
    noise = all(run["noise_crps"] for run in every)
    tail = f"{'mean CRPS':>11s}" + (f"{'/ noise':>9s}" if noise else "")
    n_runs = sum(len(fold) for fold in folds)
    print(f"{sum(len(run['w']) for fold in folds for run in fold)} held-out blocks in {len(folds)} folds: "
          + ", ".join(f"{label(fold)} {sum(len(run['w']) for run in fold)}" for fold in folds))
    shown = [x for x in ("e2", "s2", "r2", "nov", "ext", "d2") if all(run[x] is not None for fold in folds for run in fold)]
    print("fold means (weighted as the scores, over its runs): "
          + "; ".join(f"fold {k + 1} " + " ".join(f"{x} {np.mean([np.average(run[x], weights=run['w']) for run in fold]):.4g}"
                                                for x in shown) for k, fold in enumerate(folds)))
    print(f"{'spread model':14s}" + "".join(f"{'fold ' + str(i + 1):>16s}" for i in range(len(folds)))
          + tail + f"  {'runs' if n_runs > len(folds) else 'folds'} in {lo}..{hi}")
    for name, feats in models:
        cells, met, cr, rel = [], 0, [], []
        for k, fold in enumerate(folds):
            train = [run for j, f in enumerate(folds) if j != k for run in f]
            rs, cs = [], []
            for run in fold:
                F = np.ones(len(run["w"])) if feats is None else fit_predict(train, run, feats)
                rs.append(ratio(run, F))
                cs.append(crps(run, F))
                met += lo <= rs[-1] <= hi
                if noise:
                    rel.append(cs[-1] / run["noise_crps"])
            cr.append(np.mean(cs))
            cells.append(f"{np.mean(rs):6.3f} / {np.mean(cs):.4f}")
        print(f"{name:14s}" + "".join(f"{c:>16s}" for c in cells) + f"{np.mean(cr):11.4f}"
              + (f"{np.mean(rel):9.4f}" if noise else "") + f"  {met} of {n_runs}")
    print("(each cell: spread/RMSE / CRPS of that fold, the mean over its runs, the spread model fitted on "
          "the other folds" + ("; / noise: the mean over the runs of CRPS / the stronger noise reference's" if noise else "") + ")")
    if not tests:
        return
    print(f"\nfitted on all {len(folds)} folds, applied to --apply (each cell: spread/RMSE / CRPS"
          + (" / CRPS over the stronger noise reference" if noise else "") + "):")
    for run in tests:
        print(f"  {label([run])}")
    train = [run for fold in folds for run in fold]
    for name, feats in models:
        cells, met = [], 0
        for run in tests:
            F = np.ones(len(run["w"])) if feats is None else fit_predict(train, run, feats)
            r, c = ratio(run, F), crps(run, F)
            met += lo <= r <= hi
            cells.append(f"{r:.3f} / {c:.4f}" + (f" / {c / run['noise_crps']:.3f}" if noise else ""))
        scalar = f" (F = {F[0]:.3f} x the reports' own)" if feats == [] or feats == MIN_CRPS else ""
        if isinstance(feats, tuple):
            slopes = ", ".join(f"exponent of {x} {k:.3f}" for x, k in zip(feats[1], IN_SITU["slopes"]))
            scalar = f" (F = {IN_SITU['inflation']:.3f} x the reports' own x {' x '.join(feats[1])}^exponent: {slopes})"
        print(f"{name:14s} " + ", ".join(cells) + f"  {met} of {len(tests)} in {lo}..{hi}" + scalar)


if __name__ == "__main__":
    main()
