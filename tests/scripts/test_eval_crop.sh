#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/eval_crop.py on a synthetic monthly field with missing values: --time keeps the steps
# bit for bit, --time-mean NAME writes the mean of the kept steps (missing values left out, a
# cell missing in every step stays missing) as NAME without a time axis, the covariate of the
# time-split evaluation; a field without time is refused --time-mean, naming the variable.
set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY=/usr/bin/python3
"$PY" -c "import netCDF4, numpy" 2>/dev/null || { echo "skipped: $PY lacks netCDF4/numpy"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/finecast-crop-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$PY" - "$work" <<'PY'
import sys, numpy as np, netCDF4
rng = np.random.default_rng(3)
with netCDF4.Dataset(f"{sys.argv[1]}/in.nc", "w") as d:
    for name, n in [("time", None), ("lat", 4), ("lon", 6)]: d.createDimension(name, n)
    d.createVariable("lat", "f8", ("lat",))[:] = [-60, -20, 20, 60]
    d.createVariable("lon", "f8", ("lon",))[:] = np.arange(6) * 60.0
    t = d.createVariable("time", "f8", ("time",)); t.units = "days since 2005-01-01"; t[:] = np.arange(12) * 30
    v = d.createVariable("tas", "f4", ("time", "lat", "lon"), fill_value=1e20)
    v.units = "K"
    x = (280 + rng.normal(0, 5, (12, 4, 6))).astype(np.float32)
    x[2, 1, 3] = 1e20             # missing in one month
    x[:, 0, 0] = 1e20             # missing in every month
    v.set_auto_mask(False); v[:] = x
    d.createVariable("orog", "f4", ("lat", "lon"))[:] = rng.normal(0, 1, (4, 6))
PY

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
"$PY" "$SRC/scripts/eval_crop.py" --input "$work/in.nc" --var tas --output "$work/train.nc" --time 1 9 >/dev/null
"$PY" "$SRC/scripts/eval_crop.py" --input "$work/in.nc" --var tas --output "$work/clim.nc" --time 1 9 \
  --time-mean tas_clim >/dev/null
"$PY" - "$work" <<'PY' || fail "--time or --time-mean wrote the wrong values"
import sys, numpy as np, netCDF4
w = sys.argv[1]
src, tr, cl = (netCDF4.Dataset(f"{w}/{f}.nc") for f in ("in", "train", "clim"))
for d in (src, tr, cl): d.set_auto_mask(False)
x = src["tas"][1:9].astype(np.float64)
assert (tr["tas"][:] == src["tas"][1:9]).all(), "--time did not copy steps 1..8 bit for bit"
assert "tas" not in cl.variables and cl["tas_clim"].dimensions == ("lat", "lon"), cl["tas_clim"].dimensions
m = cl["tas_clim"][:].astype(np.float64)
ok = x != np.float32(1e20)
want = np.where(ok.any(0), (x * ok).sum(0) / np.maximum(ok.sum(0), 1), 1e20)
assert abs(m[1, 3] - x[[i for i in range(8) if i != 1], 1, 3].mean()) < 1e-3, "the missing month was averaged in"
assert m[0, 0] == np.float32(1e20), "a cell missing in every month is not missing"
assert np.abs(m - want)[ok.any(0)].max() < 1e-3, "not the mean of the kept steps"
assert cl["tas_clim"].units == "K" and "steps 1..8" in cl.comment
PY

expect_error() {  # expect_error TEXT ARGS...: the script fails and names TEXT
  local text="$1"; shift
  local out
  if out="$("$PY" "$SRC/scripts/eval_crop.py" "$@" 2>&1)"; then fail "accepted: $*"; return; fi
  grep -F -- "$text" >/dev/null <<<"$out" || fail "'$*' did not say '$text': $out"
}
expect_error "orog has no time dimension to average" --input "$work/in.nc" --var orog --output "$work/x.nc" --time-mean o
expect_error "outside the 12 steps" --input "$work/in.nc" --var tas --output "$work/x.nc" --time 5 13 --time-mean c
exit $((failures > 0))
