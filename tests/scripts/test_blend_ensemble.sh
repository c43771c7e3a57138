#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/blend_ensemble.py on a synthetic 3-member output of 2 steps: every member's deviation
# from the ensemble mean stays, the mean becomes base + W (mean - base) (also for members without
# a time dimension), <var>_mean follows, a cell without members stays NaN, the other variables and
# the input stay; a base of several steps (finecast-eval --baselines-out's layout, written in
# another order than the ensemble's) gives each step its own, matched by pred_step; a base of another
# shape, a base with holes where members are, a base of several steps without one of the ensemble's,
# and W outside [0, 1] are refused, naming what is wrong.
set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY=/usr/bin/python3
"$PY" -c "import netCDF4, numpy" 2>/dev/null || { echo "skipped: $PY lacks netCDF4/numpy"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/finecast-blend-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$PY" - "$work" <<'PY'
import sys, numpy as np, netCDF4
w = sys.argv[1]
rng = np.random.default_rng(7)
with netCDF4.Dataset(f"{w}/in.nc", "w") as d:
    for name, n in [("time", 2), ("realization", 3), ("lat", 4), ("lon", 6)]: d.createDimension(name, n)
    x = 280 + rng.normal(0, 1, (2, 3, 4, 6))
    x[:, :, 0, 0] = np.nan                                   # a cell not sampled
    d.createVariable("tas", "f4", ("time", "realization", "lat", "lon"))[:] = x
    d.createVariable("tas_mean", "f4", ("time", "lat", "lon"))[:] = x.mean(1)
    d.createVariable("tas_host", "f4", ("time", "lat", "lon"))[:] = 280 + rng.normal(0, 1, (2, 4, 6))
with netCDF4.Dataset(f"{w}/notime.nc", "w") as d:  # members without a time dimension
    for name, n in [("realization", 3), ("lat", 4), ("lon", 6)]: d.createDimension(name, n)
    d.createVariable("tas", "f4", ("realization", "lat", "lon"))[:] = 280 + rng.normal(0, 1, (3, 4, 6))
for name, shape in [("base", (4, 6)), ("wrong", (4, 5))]:
    with netCDF4.Dataset(f"{w}/{name}.nc", "w") as d:
        d.createDimension("lat", shape[0]); d.createDimension("lon", shape[1])
        b = 281 + rng.normal(0, 1, shape)
        d.createVariable("regression_cons", "f8", ("lat", "lon"))[:] = b
        b[1, 1] = np.nan
        d.createVariable("holed", "f8", ("lat", "lon"))[:] = b
for name, steps in [("steps", [1, 0]), ("steps_short", [0, 5])]:  # the second lacks the ensemble's step 1
    with netCDF4.Dataset(f"{w}/{name}.nc", "w") as d:
        for dim, n in [("time", 2), ("lat", 4), ("lon", 6)]: d.createDimension(dim, n)
        d.createVariable("regression_cons", "f8", ("time", "lat", "lon"))[:] = 281 + 5 * np.arange(2)[:, None, None] + rng.normal(0, 1, (2, 4, 6))
        d.createVariable("pred_step", "i8", ("time",))[:] = steps
PY

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
"$PY" "$SRC/scripts/blend_ensemble.py" --input "$work/in.nc" --var tas --base "$work/base.nc:regression_cons" \
  --weight 0.25 --output "$work/out.nc" || fail "the blend failed"
"$PY" - "$work" <<'PY' || fail "the blended file is not base + 0.25 (mean - base) + deviations"
import sys, numpy as np, netCDF4
w = sys.argv[1]
a, b = netCDF4.Dataset(f"{w}/in.nc"), netCDF4.Dataset(f"{w}/out.nc")
base = netCDF4.Dataset(f"{w}/base.nc")["regression_cons"][:]
x, y = np.ma.filled(a["tas"][:], np.nan).astype(float), np.ma.filled(b["tas"][:], np.nan).astype(float)
m, n = x.mean(1), y.mean(1)
ok = np.isfinite(m)
assert np.isnan(y[:, :, 0, 0]).all(), "the unsampled cell got values"
assert np.allclose((y - n[:, None])[:, :, ok[0]], (x - m[:, None])[:, :, ok[0]], atol=1e-4), "deviations changed"
assert np.allclose(n[ok], (base + 0.25 * (m - base))[ok], atol=1e-4), "the mean is not base + W (mean - base)"
assert np.allclose(np.ma.filled(b["tas_mean"][:], np.nan)[ok], n[ok], atol=1e-4), "tas_mean does not follow"
assert np.array_equal(a["tas_host"][:], b["tas_host"][:]), "another variable changed"
assert "0.25" in b.getncattr("finecast_blend")
PY
"$PY" "$SRC/scripts/blend_ensemble.py" --input "$work/notime.nc" --var tas --base "$work/base.nc:regression_cons" \
  --weight 0 --output "$work/notime_out.nc" > /dev/null || fail "the blend of members without time failed"
"$PY" - "$work" <<'PY' || fail "members without time are not centred on the base at W = 0"
import sys, numpy as np, netCDF4
w = sys.argv[1]
x = netCDF4.Dataset(f"{w}/notime.nc")["tas"][:].astype(float)
y = netCDF4.Dataset(f"{w}/notime_out.nc")["tas"][:].astype(float)
base = netCDF4.Dataset(f"{w}/base.nc")["regression_cons"][:]
assert np.allclose(y.mean(0), base, atol=1e-4), "the mean is not the base"
assert np.allclose(y - y.mean(0), x - x.mean(0), atol=1e-4), "deviations changed"
PY
"$PY" "$SRC/scripts/blend_ensemble.py" --input "$work/in.nc" --var tas --base "$work/steps.nc:regression_cons" \
  --weight 0 --output "$work/steps_out.nc" > /dev/null || fail "the blend toward a base of two steps failed"
"$PY" - "$work" <<'PY' || fail "a base of two steps is not matched to the ensemble's steps by pred_step"
import sys, numpy as np, netCDF4
w = sys.argv[1]
y = np.ma.filled(netCDF4.Dataset(f"{w}/steps_out.nc")["tas"][:], np.nan).astype(float)
base = netCDF4.Dataset(f"{w}/steps.nc")["regression_cons"][:]   # its entry 0 is step 1, entry 1 step 0
ok = np.isfinite(y[0, 0])
assert np.allclose(y[0].mean(0)[ok], base[1][ok], atol=1e-4), "step 0 is not centred on its base"
assert np.allclose(y[1].mean(0)[ok], base[0][ok], atol=1e-4), "step 1 is not centred on its base"
PY
msg="$("$PY" "$SRC/scripts/blend_ensemble.py" --input "$work/in.nc" --var tas --base "$work/steps_short.nc:regression_cons" \
  --weight 0.5 --output "$work/bad.nc" 2>&1)" && fail "a base without one of the ensemble's steps was accepted"
grep -F "steps_short.nc:regression_cons has the steps [0, 5] (pred_step) but not the ensemble's step(s) [1]" >/dev/null <<<"$msg" ||
  fail "the missing step's refusal does not name it: $msg"
msg="$("$PY" "$SRC/scripts/blend_ensemble.py" --input "$work/notime.nc" --var tas --base "$work/steps.nc:regression_cons" \
  --weight 0.5 --output "$work/bad.nc" 2>&1)" && fail "a base of several steps was accepted for members without time"
grep -F "steps.nc:regression_cons has the steps [0, 1] (pred_step), but 'tas' of $work/notime.nc has no time dimension" \
  >/dev/null <<<"$msg" || fail "the refusal of a base of several steps for members without time does not say why: $msg"
msg="$("$PY" "$SRC/scripts/blend_ensemble.py" --input "$work/in.nc" --var tas --base "$work/wrong.nc:regression_cons" \
  --weight 0.5 --output "$work/bad.nc" 2>&1)" && fail "a base of another shape was accepted"
grep -F "wrong.nc:regression_cons: shape (4, 5), expected the ensemble's cells (4, 6)" >/dev/null <<<"$msg" ||
  fail "the shape refusal does not say why: $msg"
msg="$("$PY" "$SRC/scripts/blend_ensemble.py" --input "$work/in.nc" --var tas --base "$work/base.nc:holed" \
  --weight 0.5 --output "$work/bad.nc" 2>&1)" && fail "a base with a hole where members are was accepted"
grep -F "base.nc:holed is not finite at 1 cells" >/dev/null <<<"$msg" || fail "the hole refusal does not say where: $msg"
msg="$("$PY" "$SRC/scripts/blend_ensemble.py" --input "$work/in.nc" --var tas --base "$work/base.nc:regression_cons" \
  --weight 1.5 --output "$work/bad.nc" 2>&1)" && fail "a weight of 1.5 was accepted"
grep -F -- "--weight must be in [0, 1], got 1.5" >/dev/null <<<"$msg" || fail "the weight refusal does not say why: $msg"
[[ -e $work/bad.nc ]] && fail "a refused run left an output"
ls -a "$work" | grep -q '\.tmp' && fail "a temporary file was left behind"
exit $((failures > 0))
