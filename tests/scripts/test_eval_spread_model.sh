#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/eval_spread_model.py on three synthetic folds whose answer is known: each held-out
# block's squared error is 0.36 x the square of what the covariates add there, whatever the
# members' spread, so the spread model on s2 and r2 fitted on two folds calibrates the third
# exactly (spread/RMSE 1.000 on every fold), while one scalar inflation cannot (the folds' error
# scales differ). A report without a hold-out is refused, naming the file.
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
msg="$("$PY" "$SRC/scripts/eval_spread_model.py" "$work/fold2/eval.json" "$work/nohold/eval.json" 2>&1)" && fail "a report without a hold-out was accepted"
grep -F "nohold/eval.json: meta has no 'hold_out'" >/dev/null <<<"$msg" || fail "the refusal does not name the file and key: $msg"
exit $((failures > 0))
