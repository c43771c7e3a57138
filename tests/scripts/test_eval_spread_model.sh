#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/eval_spread_model.py on three synthetic folds whose answer is known: each held-out
# block's squared error is 0.36 x the square of what the covariates add there, whatever the
# members' spread, so the spread model on s2 and r2 fitted on two folds calibrates the third
# exactly (spread/RMSE 1.000 on every fold), while one scalar inflation cannot (the folds' error
# scales differ). The same on ICON-like reports: patches given by baselines.nc's coarse_cell (the
# cells shuffled, so that only that grouping finds them), cell_area and scored; two runs pooled
# as one fold; and --apply, the model fitted on every fold, on a fourth report. The runs' (training
# seeds') disagreement d2, on folds of two runs each whose errors it sets. The novelty nov of a
# block's static field (--static, a file on a larger grid than the truth's), on folds whose errors
# it sets. A report without a hold-out, and a static file that does not hold the truth's grid,
# are refused, naming the file.
set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY=/usr/bin/python3
[[ -x $PY ]] || { echo "skipped: no $PY"; exit 77; }
"$PY" -c "import netCDF4, numpy" 2>/dev/null || { echo "skipped: no netCDF4/numpy in $PY"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/finecast-spread-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$PY" - "$work" <<'PY'
import json, os, sys
import netCDF4, numpy as np
w = sys.argv[1]
rng = np.random.default_rng(7)
ny, nx, b, M = 16, 48, 8, 8
lat = np.linspace(-30, 30, ny); lon = np.arange(nx) * 1.0
def write(path, **fields):
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("lat", ny); ds.createDimension("lon", nx); ds.createDimension("member", M)
        ds.createVariable("lat", "f8", ("lat",))[:] = lat
        ds.createVariable("lon", "f8", ("lon",))[:] = lon
        for name, a in fields.items():
            dims = ("member", "lat", "lon") if a.ndim == 3 else ("lat", "lon")
            ds.createVariable(name, "f8", dims)[:] = a
for k in range(3):  # fold k holds out longitudes 16k .. 16k + 15 (2 block columns)
    d = f"{w}/fold{k + 1}"; os.makedirs(d)
    mean = rng.normal(280, 5, (ny, nx))
    r = np.kron(rng.uniform(0.2, 1.0, (ny // b, nx // b)) * (1 + k), np.ones((b, b)))   # covariates' part
    sigma = np.kron(rng.uniform(0.1, 0.6, (ny // b, nx // b)), np.ones((b, b)))       # members' spread
    z = rng.normal(size=(M, ny, nx)); z -= z.mean(0); z /= z.std(0, ddof=1)
    members = mean + sigma * z
    sign = np.where(rng.random((ny, nx)) < 0.5, -1.0, 1.0)
    truth = mean + 0.6 * r * sign                                                      # e2 = 0.36 r2
    held = (lon >= 16 * k) & (lon <= 16 * k + 15)
    members[:, :, ~held] = np.nan
    write(f"{d}/downscaled.nc", tas=members, tas_coarse=mean)
    write(f"{d}/truth.nc", tas=truth)
    write(f"{d}/baselines.nc", bspline_cons=mean, regression_local=mean + r)
    meta = dict(truth=f"{d}/truth.nc", pred=f"{d}/downscaled.nc", var="tas", truth_var="tas", block=str(b),
                hold_out=f"-90,90,{16 * k},{16 * k + 15}", noise_base="regression_local")
    json.dump({"meta": meta, "predictions": [dict(name="model", members=M)]}, open(f"{d}/eval.json", "w"))
    if k == 0:
        os.makedirs(f"{w}/nohold")
        del meta["hold_out"]
        json.dump({"meta": meta, "predictions": [dict(name="model", members=M)]}, open(f"{w}/nohold/eval.json", "w"))

# nov: a static field h, constant on each block, on a grid 2 rows and 3 columns larger than the truth's
# (before it). Block columns 2k and 2k + 1 (fold k + 1's held-out ones) take h away from the others by
# an amount that grows with k; each fold's held-out squared errors are 0.25 x nov^2, nov computed here
# as defined (1 + the mean distance of the block's standardised h to the 8 nearest training blocks', those
# outside the fold; h's standard deviation in a block, 0 everywhere, adds nothing), whatever the
# members' spread and the covariates' part.
nby, nbx = ny // b, nx // b
hb = rng.uniform(0, 1, (nby, nbx))
for k in range(3):
    hb[:, 2 * k:2 * k + 2] += rng.uniform(0.5, 2.0, (nby, 2)) * (1 + 2 * k)
for k in range(3):
    d = f"{w}/nov{k + 1}"; os.makedirs(d)
    cols = [2 * k, 2 * k + 1]                                  # the held-out block columns
    train = [hb[i, j] for i in range(nby) for j in range(nbx) if j not in cols]
    mu, sd = np.mean(train), np.std(train)
    nov = np.zeros((nby, nbx))
    for i in range(nby):
        for j in cols:
            nov[i, j] = 1 + np.mean(sorted(abs((hb[i, j] - mu) / sd - (t - mu) / sd) for t in train)[:8])
    mean = rng.normal(280, 5, (ny, nx))
    members = mean + np.kron(rng.uniform(0.1, 0.6, (nby, nbx)), np.ones((b, b))) * z
    sign = np.where(rng.random((ny, nx)) < 0.5, -1.0, 1.0)
    truth = mean + 0.5 * np.kron(nov, np.ones((b, b))) * sign
    held = (lon >= 16 * k) & (lon <= 16 * k + 15)
    members[:, :, ~held] = np.nan
    write(f"{d}/downscaled.nc", tas=members, tas_coarse=mean)
    write(f"{d}/truth.nc", tas=truth)
    write(f"{d}/baselines.nc", bspline_cons=mean, regression_local=mean + rng.uniform(0.2, 1.0, (ny, nx)))
    meta = dict(truth=f"{d}/truth.nc", pred=f"{d}/downscaled.nc", var="tas", truth_var="tas", block=str(b),
                hold_out=f"-90,90,{16 * k},{16 * k + 15}", noise_base="regression_local")
    json.dump({"meta": meta, "predictions": [dict(name="model", members=M)]}, open(f"{d}/eval.json", "w"))
# Heavy tails: errors of Student's t with 3 degrees of freedom around the mean, Gaussian members. The
# CRPS, a proper score, wants members sharper than the spread that matches the RMSE (the t's
# variance is in its rare large errors), so "scalar, CRPS" fits a smaller F than "scalar".
for k in range(3):
    d = f"{w}/tail{k + 1}"; os.makedirs(d)
    mean = rng.normal(280, 5, (ny, nx))
    members = mean + 0.3 * z
    truth = mean + 0.5 * rng.standard_t(3, (ny, nx))
    held = (lon >= 16 * k) & (lon <= 16 * k + 15)
    members[:, :, ~held] = np.nan
    write(f"{d}/downscaled.nc", tas=members, tas_coarse=mean)
    write(f"{d}/truth.nc", tas=truth)
    write(f"{d}/baselines.nc", bspline_cons=mean, regression_local=mean + 0.5)
    meta = dict(truth=f"{d}/truth.nc", pred=f"{d}/downscaled.nc", var="tas", truth_var="tas", block=str(b),
                hold_out=f"-90,90,{16 * k},{16 * k + 15}", noise_base="regression_local")
    json.dump({"meta": meta, "predictions": [dict(name="model", members=M)]}, open(f"{d}/eval.json", "w"))
# A split in time: reports of 2 scored steps each and no hold-out (every block unseen), the baselines
# along time with truth_step (finecast-eval --baselines-out), written in reverse step order so that
# only truth_step pairs them; each step's errors are 0.36 x its own r2, so s2+r2 calibrates.
for k in range(3):
    d = f"{w}/time{k + 1}"; os.makedirs(d)
    T = 2
    mean = rng.normal(280, 5, (T, ny, nx))
    r = np.stack([np.kron(rng.uniform(0.2, 1.0, (ny // b, nx // b)) * (1 + k + t), np.ones((b, b))) for t in range(T)])
    members = mean[:, None] + np.kron(rng.uniform(0.1, 0.6, (ny // b, nx // b)), np.ones((b, b))) * z[None]
    truth = mean + 0.6 * r * np.where(rng.random((T, ny, nx)) < 0.5, -1.0, 1.0)
    with netCDF4.Dataset(f"{d}/downscaled.nc", "w") as ds:
        for dim, n in [("time", T), ("realization", M), ("lat", ny), ("lon", nx)]: ds.createDimension(dim, n)
        ds.createVariable("lat", "f8", ("lat",))[:] = lat
        ds.createVariable("lon", "f8", ("lon",))[:] = lon
        ds.createVariable("tas", "f8", ("time", "realization", "lat", "lon"))[:] = members
        ds.createVariable("tas_coarse", "f8", ("time", "lat", "lon"))[:] = mean
    with netCDF4.Dataset(f"{d}/truth.nc", "w") as ds:
        for dim, n in [("time", T), ("lat", ny), ("lon", nx)]: ds.createDimension(dim, n)
        ds.createVariable("lat", "f8", ("lat",))[:] = lat
        ds.createVariable("lon", "f8", ("lon",))[:] = lon
        ds.createVariable("tas", "f8", ("time", "lat", "lon"))[:] = truth
    with netCDF4.Dataset(f"{d}/baselines.nc", "w") as ds:
        for dim, n in [("time", T), ("lat", ny), ("lon", nx)]: ds.createDimension(dim, n)
        ds.createVariable("truth_step", "i8", ("time",))[:] = [1, 0]
        ds.createVariable("bspline_cons", "f8", ("time", "lat", "lon"))[:] = mean[::-1]
        ds.createVariable("regression_local", "f8", ("time", "lat", "lon"))[:] = (mean + r)[::-1]
    meta = dict(truth=f"{d}/truth.nc", pred=f"{d}/downscaled.nc", var="tas", truth_var="tas", block=str(b),
                truth_steps="0 1", pred_steps="0 1", noise_base="regression_local")
    json.dump({"meta": meta, "predictions": [dict(name="model", members=M)]}, open(f"{d}/eval.json", "w"))
with netCDF4.Dataset(f"{w}/static.nc", "w") as ds:
    ds.createDimension("lat", ny + 2); ds.createDimension("lon", nx + 3)
    ds.createVariable("lat", "f8", ("lat",))[:] = np.concatenate([lat[0] - (lat[1] - lat[0]) * np.array([2, 1]), lat])
    ds.createVariable("lon", "f8", ("lon",))[:] = np.arange(-3, nx) * 1.0
    h = np.zeros((ny + 2, nx + 3)); h[2:, 3:] = np.kron(hb, np.ones((b, b)))
    ds.createVariable("h", "f8", ("lat", "lon"))[:] = h
PY

"$PY" - "$work" <<'PY'
import json, os, sys
import netCDF4, numpy as np
w = sys.argv[1]
P, n, M = 12, 4, 8                      # patches of n cells, members

def icon_report(d, members, truth, patch, area, held, interp, base, rows):
    """An ICON-like finecast-eval report in d: members, truth, baselines.nc and eval.json."""
    os.makedirs(d)
    with netCDF4.Dataset(f"{d}/downscaled.nc", "w") as ds:
        ds.createDimension("realization", M); ds.createDimension("ncells", P * n)
        ds.createVariable("ts", "f8", ("realization", "ncells"))[:] = members
    with netCDF4.Dataset(f"{d}/truth.nc", "w") as ds:
        ds.createDimension("ncells", P * n)
        ds.createVariable("ts", "f8", ("ncells",))[:] = truth
    with netCDF4.Dataset(f"{d}/baselines.nc", "w") as ds:
        ds.createDimension("ncells", P * n)
        for var, a in dict(coarse_cell=patch, cell_area=area, scored=held * 1.0,
                           idw_cons=interp, regression_cons=base).items():
            ds.createVariable(var, "f8", ("ncells",))[:] = a
    meta = dict(grid="icon", truth=f"{d}/truth.nc", pred=f"{d}/downscaled.nc", var="ts", truth_var="ts",
                hold_out="0,90,0,180", noise_base="regression_cons", regression_interpolant="idw")
    json.dump({"meta": meta, "predictions": rows}, open(f"{d}/eval.json", "w"))

rng = np.random.default_rng(11)
for k, name in enumerate(["icon1", "icon2a", "icon2b", "icon3", "icon4"]):
    scale = {"icon1": 1, "icon2a": 2, "icon2b": 2, "icon3": 3, "icon4": 5}[name]
    perm = rng.permutation(P * n)       # cell i of the file is cell perm[i] of the patch-major order
    patch = (np.arange(P * n) // n)[perm]
    r = (rng.uniform(0.2, 1.0, P) * scale)[patch]
    sigma = rng.uniform(0.1, 0.6, P)[patch]
    mean = rng.normal(280, 5, P * n)
    z = rng.normal(size=(M, P * n)); z -= z.mean(0); z /= z.std(0, ddof=1)
    members = mean + sigma * z
    truth = mean + 0.6 * r * np.where(rng.random(P * n) < 0.5, -1.0, 1.0)
    held = patch >= P // 2              # the scored half
    members[:, ~held] = np.nan
    rows = [dict(name="model", members=M), dict(name="noise_white", crps=2.0 * scale), dict(name="noise_spectral", crps=1.0 * scale)]
    icon_report(f"{w}/{name}", members, truth, patch, rng.uniform(1, 2, P * n), held, mean, mean + r, rows)

# Three folds of two runs each (two "training seeds"): the runs' means are m + d and m - d per patch,
# the truth m, so each run's squared error is d^2 = half the runs' disagreement d2 (the variance of
# their two means), while the members' spread and the covariates' part are unrelated to it.
rng = np.random.default_rng(5)
for k in range(3):
    patch = np.arange(P * n) // n
    held = patch >= P // 2
    mean = rng.normal(280, 5, P * n)
    d = (rng.uniform(0.2, 1.0, P) * (1 + 2 * k))[patch]
    area, r = rng.uniform(1, 2, P * n), rng.uniform(0.2, 1.0, P)[patch]
    for run, sign in (("a", 1.0), ("b", -1.0)) + ((("c", -1.0),) if k == 2 else ()):
        z = rng.normal(size=(M, P * n)); z -= z.mean(0); z /= z.std(0, ddof=1)
        members = mean + sign * d + rng.uniform(0.1, 0.6, P)[patch] * z
        members[:, ~held] = np.nan
        icon_report(f"{w}/seeds{k + 1}{run}", members, mean + (run == "c"),  # c: another truth
                    patch, area, held, mean, mean + r, [dict(name="model", members=M)])
PY

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
out="$("$PY" "$SRC/scripts/eval_spread_model.py" "$work"/fold{1,2,3}/eval.json)"
echo "$out"
row() { grep -E "^$1 " <<<"$out" || fail "no row '$1'"; }
grep -F "12 held-out blocks in 3 folds: fold1 4, fold2 4, fold3 4" >/dev/null <<<"$out" || fail "held-out blocks miscounted"
[[ "$(row 's2\+r2' | grep -o ' 1\.000 /' | wc -l)" = 3 ]] || fail "s2+r2 does not calibrate every fold: $(row 's2\+r2')"
grep -E "3 of 3$" >/dev/null <<<"$(row 's2\+r2')" || fail "s2+r2 not counted as met on 3 folds"
grep -E "3 of 3$" >/dev/null <<<"$(row 'scalar')" && fail "one scalar met every fold, though the folds' error scales differ"
out="$("$PY" "$SRC/scripts/eval_spread_model.py" "$work/icon1/eval.json" "$work/icon2a/eval.json,$work/icon2b/eval.json" \
  "$work/icon3/eval.json" --apply "$work/icon4/eval.json")"
echo "$out"
grep -F "24 held-out blocks in 3 folds: icon1 6, icon2a +1 runs 12, icon3 6" >/dev/null <<<"$out" || fail "ICON patches miscounted"
loo="$(grep -E '^s2\+r2 ' <<<"$out" | head -1)"
[[ "$(grep -o ' 1\.000 /' <<<"$loo" | wc -l)" = 3 ]] || fail "ICON s2+r2 does not calibrate every fold: $loo"
grep -E "4 of 4$" >/dev/null <<<"$loo" || fail "ICON s2+r2 not counted as met on the 4 runs: $loo"
applied="$(grep -E '^s2\+r2 ' <<<"$out" | tail -1)"
grep -E "^s2\+r2 +1\.000 / [0-9.]+ / [0-9.]+  1 of 1 in" >/dev/null <<<"$applied" || fail "--apply: s2+r2 does not calibrate the fourth report: $applied"
grep -q "cvar" <<<"$out" && fail "a cvar model was fitted on ICON patches, which have no cvar"
# icon4's stronger noise reference is noise_spectral's CRPS, 5: the third number is the second / 5
read -r crps rel < <(grep -oE '^s2\+r2 +1\.000 / [0-9.]+ / [0-9.]+' <<<"$applied" | awk '{print $4, $6}')
"$PY" -c "import sys; c, r = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(c / 5 - r) > 6e-4)" "${crps:-0}" "${rel:-1}" \
  || fail "--apply: CRPS / noise $rel is not the CRPS $crps over the stronger noise reference (5)"
grep -q "d2" <<<"$out" && fail "a d2 model was fitted where not every fold pools several runs"
# d2: the runs' disagreement predicts each block's error exactly, so s2+d2 calibrates every fold
out="$("$PY" "$SRC/scripts/eval_spread_model.py" "$work/seeds1a/eval.json,$work/seeds1b/eval.json" \
  "$work/seeds2a/eval.json,$work/seeds2b/eval.json" "$work/seeds3a/eval.json,$work/seeds3b/eval.json")"
echo "$out"
d2="$(grep -E '^s2\+d2 ' <<<"$out")" || fail "no s2+d2 row where every fold pools two runs"
[[ "$(grep -o ' 1\.000 /' <<<"$d2" | wc -l)" = 3 ]] || fail "s2+d2 does not calibrate every fold: $d2"
grep -E "6 of 6$" >/dev/null <<<"$d2" || fail "s2+d2 not counted as met on the 6 runs: $d2"
grep -E "6 of 6$" >/dev/null <<<"$(grep -E '^s2\+r2 ' <<<"$out")" && fail "s2+r2 met every run, though r2 is unrelated to the errors"
# runs of different truths (seeds3c's is another field) have no disagreement: no d2 model
out="$("$PY" "$SRC/scripts/eval_spread_model.py" "$work/seeds1a/eval.json,$work/seeds1b/eval.json" \
  "$work/seeds3a/eval.json,$work/seeds3c/eval.json")"
grep -q "d2" <<<"$out" && fail "a d2 model was fitted on runs of different truths"
# nov sets every fold's errors: s2+nov, fitted on two folds, calibrates the third
out="$("$PY" "$SRC/scripts/eval_spread_model.py" --static "$work/static.nc:h" "$work"/nov{1,2,3}/eval.json)"
echo "$out"
nov="$(grep -E '^s2\+nov ' <<<"$out")" || fail "no s2+nov row with --static"
[[ "$(grep -o ' 1\.000 /' <<<"$nov" | wc -l)" = 3 ]] || fail "s2+nov does not calibrate every fold: $nov"
grep -E "3 of 3$" >/dev/null <<<"$(grep -E '^s2\+r2 ' <<<"$out")" && fail "s2+r2 met every fold, though r2 is unrelated to the errors"
grep -qE "^fold means.*fold 3 e2 [0-9.e-]+ s2 [0-9.e-]+ r2 [0-9.e-]+ nov [0-9.]+" <<<"$out" || fail "no fold means with nov"
grep -q "^s2+nov " <<<"$("$PY" "$SRC/scripts/eval_spread_model.py" "$work"/nov{1,2,3}/eval.json)" \
  && fail "an s2+nov row without --static"
# the scalar by CRPS, fitted on the three tail folds and applied to them: its mean CRPS over the three
# is the least of the rows (it minimises exactly that), with a smaller F than the spread-matching scalar
out="$("$PY" "$SRC/scripts/eval_spread_model.py" "$work"/tail{1,2,3}/eval.json --apply "$work"/tail{1,2,3}/eval.json)"
echo "$out"
OUT="$out" "$PY" - <<'PY' || fail "the scalar by CRPS does not minimise the CRPS of the reports it was fitted on"
import os, re
rows = {}
for line in os.environ["OUT"].split("applied to --apply")[1].splitlines():
    m = re.match(r"^(raw \(F = 1\)|scalar, CRPS|scalar|s2) +(.*?)  \d+ of 3 in", line)
    if m:
        crps = [float(c.split(" / ")[1]) for c in m.group(2).split(", ")]
        f = re.search(r"\(F = ([0-9.]+) x", line)
        rows[m.group(1)] = (sum(crps) / 3, float(f.group(1)) if f else None)
assert set(rows) >= {"raw (F = 1)", "scalar", "scalar, CRPS"}, rows
best = rows["scalar, CRPS"][0]
assert all(best <= c + 1e-6 for c, _ in rows.values()), rows
assert rows["scalar, CRPS"][1] < 0.95 * rows["scalar"][1], rows
PY
# ... and each row's CRPS is the ensemble CRPS computed here from the files (tail1, the first
# applied report: its held-out cells, each weighted by cos(lat)), raw and at the fitted F
OUT="$out" "$PY" - "$work" <<'PY' || fail "the script's CRPS is not the ensemble CRPS of the members"
import os, re, sys
import netCDF4, numpy as np
w = sys.argv[1]
x = np.ma.filled(netCDF4.Dataset(f"{w}/tail1/downscaled.nc")["tas"][:], np.nan)
y = np.ma.filled(netCDF4.Dataset(f"{w}/tail1/truth.nc")["tas"][:], np.nan)
lat = netCDF4.Dataset(f"{w}/tail1/truth.nc")["lat"][:]
cells = np.isfinite(x).all(0)
wt = np.broadcast_to(np.cos(np.deg2rad(lat))[:, None], y.shape)[cells]
def crps(F):
    m = x.mean(0)
    e = (m + F * (x - m))[:, cells]
    t = np.abs(e - y[cells]).mean(0) - 0.5 * np.abs(e[:, None] - e[None]).mean((0, 1))
    return (wt * t).sum() / wt.sum()
tail = os.environ["OUT"].split("applied to --apply")[1]
raw = float(re.search(r"^raw \(F = 1\) +[0-9.]+ / ([0-9.]+),", tail, re.M).group(1))
fit = re.search(r"^scalar, CRPS +[0-9.]+ / ([0-9.]+),.*\(F = ([0-9.]+) x", tail, re.M)
assert abs(raw - crps(1.0)) < 1e-4, (raw, crps(1.0))
assert abs(float(fit.group(1)) - crps(float(fit.group(2)))) < 2e-4, (fit.groups(), crps(float(fit.group(2))))
PY
# --all-blocks: reports of a split in time, 2 steps x 12 blocks each, s2+r2 calibrating every fold
out="$("$PY" "$SRC/scripts/eval_spread_model.py" --all-blocks "$work"/time{1,2,3}/eval.json)"
echo "$out"
grep -F "72 held-out blocks in 3 folds: time1 24, time2 24, time3 24" >/dev/null <<<"$out" || fail "steps x blocks miscounted"
[[ "$(grep -E '^s2\+r2 ' <<<"$out" | grep -o ' 1\.000 /' | wc -l)" = 3 ]] \
  || fail "s2+r2 does not calibrate the steps of every fold: $(grep -E '^s2\+r2 ' <<<"$out")"
msg="$("$PY" "$SRC/scripts/eval_spread_model.py" "$work"/time{1,2}/eval.json 2>&1)" && fail "a report without a hold-out was taken without --all-blocks"
grep -F "time1/eval.json: meta has no 'hold_out'" <<<"$msg" | grep -qF -- "--all-blocks" || fail "the refusal does not name --all-blocks: $msg"
"$PY" - "$work" <<'PY' || fail "a static file without the truth's coordinates was accepted"
import netCDF4, sys
with netCDF4.Dataset(sys.argv[1] + "/shifted.nc", "w") as ds:
    ds.createDimension("lat", 16); ds.createDimension("lon", 48)
    ds.createVariable("lat", "f8", ("lat",))[:] = range(16)
    ds.createVariable("lon", "f8", ("lon",))[:] = [x + 0.5 for x in range(48)]
    ds.createVariable("h", "f8", ("lat", "lon"))[:] = 0
PY
msg="$("$PY" "$SRC/scripts/eval_spread_model.py" --static "$work/shifted.nc:h" "$work"/nov{1,2}/eval.json 2>&1)" \
  && fail "a static file without the truth's coordinates was accepted"
grep -F "shifted.nc:h: its first coordinates do not contain the truth's" >/dev/null <<<"$msg" \
  || fail "the refusal of a static file does not name it and what is missing: $msg"
msg="$("$PY" "$SRC/scripts/eval_spread_model.py" "$work/fold2/eval.json" "$work/nohold/eval.json" 2>&1)" && fail "a report without a hold-out was accepted"
grep -F "nohold/eval.json: meta has no 'hold_out'" >/dev/null <<<"$msg" || fail "the refusal does not name the file and key: $msg"
exit $((failures > 0))
