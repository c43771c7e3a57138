#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/eval_transfer.py on a synthetic evaluate.sh output whose answers are known: on the
# held-out blocks the model's correction is exactly half of what the regression misses (corr +1,
# best scale 2, RMSE of the rescaled correction 0) and its error is Gaussian with twice the
# members' std (best spread factor 2, best Gaussian CRPS sigma / sqrt(pi)); outside them it is the
# opposite (corr -1), so that scoring the wrong blocks shows.
set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY=/usr/bin/python3
"$PY" -c "import netCDF4, numpy" 2>/dev/null || { echo "skipped: $PY lacks netCDF4/numpy"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/finecast-transfer-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$PY" - "$work" <<'PY'
import json, sys, numpy as np, netCDF4
out = sys.argv[1]
rng = np.random.default_rng(3)
ny = nx = 64
lat, lon = np.linspace(-4.9, 4.9, ny), np.linspace(-9.9, 9.9, nx)
reg = 280 + rng.normal(0, 2, (ny, nx))
e = rng.normal(0, 0.6, (ny, nx))                  # what the regression misses
east = np.zeros((ny, nx), bool); east[:, 32:] = True  # blocks 2 and 3 of 4: centres at lon > 0
mean = np.where(east, reg + 0.5 * e, reg - e)      # the model's correction: e / 2 held out, -e elsewhere
s = 0.15 / np.sqrt(2)                              # two members mean +- s: their std (ddof 1) is 0.15
with netCDF4.Dataset(f"{out}/downscaled.nc", "w") as d:
    for name, n in [("time", 1), ("realization", 2), ("lat", ny), ("lon", nx)]: d.createDimension(name, n)
    d.createVariable("lat", "f8", ("lat",))[:] = lat
    d.createVariable("lon", "f8", ("lon",))[:] = lon
    d.createVariable("tas", "f4", ("time", "realization", "lat", "lon"))[:] = np.stack([mean + s, mean - s])[None]
    d.createVariable("tas_host", "f4", ("time", "lat", "lon"))[:] = (reg + e)[None]
with netCDF4.Dataset(f"{out}/baselines.nc", "w") as b:
    b.createDimension("lat", ny); b.createDimension("lon", nx)
    b.createVariable("regression_cons", "f4", ("lat", "lon"))[:] = reg
json.dump({"meta": {"var": "tas", "block": "16", "hold_out": "-90,90,0,20", "pred": f"{out}/downscaled.nc"}},
          open(f"{out}/eval.json", "w"))
PY

line="$("$PY" "$SRC/scripts/eval_transfer.py" "$work")"
echo "$line"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
grep -q ": 2048 cells;" <<<"$line" || fail "not the 2048 cells of the 8 held-out blocks"
grep -q "corr(model - regression, truth - regression) +1.000;" <<<"$line" || fail "corr is not +1"
grep -q "best scale +2.00 -> RMSE 0.0000 (-100.0% vs regression_cons)" <<<"$line" || fail "best scale is not 2"
# The held-out error e / 2 has std 0.3, twice the members' 0.15; its best Gaussian CRPS is 0.3 / sqrt(pi).
read -r crps factor < <(sed -E 's/.*best Gaussian CRPS ([0-9.]+) \(members. std x ([0-9.]+)\).*/\1 \2/' <<<"$line")
"$PY" -c "import sys, math; c, f = $crps, $factor; sys.exit(0 if abs(c / (0.3 / math.sqrt(math.pi)) - 1) < 0.04 and abs(f / 2 - 1) < 0.04 else 1)" ||
  fail "best Gaussian CRPS $crps (x $factor): expected 0.169 (x 2) within 4%"
# Two folders: the mean line.
"$PY" "$SRC/scripts/eval_transfer.py" "$work" "$work" | grep "^mean of 2: corr +1.000, best scale +2.00" >/dev/null ||
  fail "no mean line for two folders"
exit $((failures > 0))
