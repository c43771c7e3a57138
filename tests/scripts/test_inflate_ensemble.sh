#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/inflate_ensemble.py on a synthetic 3-member output: the ensemble mean and the other
# variables stay, each deviation from the mean is scaled by F, an inflation already recorded in
# finecast_sampling is multiplied, the input is left alone, and bad arguments are named.
# (DownscaleSampling.TheTrainingConfigsSampleOptionsAreTheDefaults checks it against the sampler.)
set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY=/usr/bin/python3
"$PY" -c "import netCDF4, numpy" 2>/dev/null || { echo "skipped: $PY lacks netCDF4/numpy"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/finecast-inflate-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$PY" - "$work" <<'PY'
import sys, numpy as np, netCDF4
rng = np.random.default_rng(5)
with netCDF4.Dataset(f"{sys.argv[1]}/in.nc", "w") as d:
    for name, n in [("time", 2), ("realization", 3), ("lat", 4), ("lon", 6)]: d.createDimension(name, n)
    d.createVariable("tas", "f4", ("time", "realization", "lat", "lon"))[:] = 280 + rng.normal(0, 1, (2, 3, 4, 6))
    d.createVariable("tas_host", "f4", ("time", "lat", "lon"))[:] = 280 + rng.normal(0, 1, (2, 4, 6))
    d.setncattr("finecast_sampling", "ddpm, inflation 1.5")
PY

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
"$PY" "$SRC/scripts/inflate_ensemble.py" --input "$work/in.nc" --var tas --factor 2 --output "$work/out.nc"
"$PY" - "$work" <<'PY' || fail "the inflated file is not mean + 2 (members - mean)"
import sys, numpy as np, netCDF4
a, b = netCDF4.Dataset(f"{sys.argv[1]}/in.nc"), netCDF4.Dataset(f"{sys.argv[1]}/out.nc")
x, y = a["tas"][:].astype(float), b["tas"][:].astype(float)
m = x.mean(1, keepdims=True)
assert np.abs(y - (m + 2 * (x - m))).max() < 1e-4, "deviations not doubled"
assert np.abs(y.mean(1) - x.mean(1)).max() < 1e-4, "ensemble mean moved"
assert (b["tas_host"][:] == a["tas_host"][:]).all(), "another variable changed"
assert b.finecast_sampling == "ddpm, inflation 3", b.finecast_sampling
assert a.finecast_sampling == "ddpm, inflation 1.5", "the input was changed"
assert "inflated by 2" in b.history
PY

expect_error() {  # expect_error TEXT ARGS...: the script fails and names TEXT
  local text="$1"; shift
  local out
  if out="$("$PY" "$SRC/scripts/inflate_ensemble.py" "$@" 2>&1)"; then fail "accepted: $*"; return; fi
  grep -F -- "$text" >/dev/null <<<"$out" || fail "'$*' did not say '$text': $out"
}
expect_error "has no variable 'ts'" --input "$work/in.nc" --var ts --factor 2 --output "$work/x.nc"
expect_error "'tas_host' has no realization dimension" --input "$work/in.nc" --var tas_host --factor 2 --output "$work/x.nc"
expect_error "--factor must be > 0" --input "$work/in.nc" --var tas --factor 0 --output "$work/x.nc"
expect_error "--output must differ from --input" --input "$work/in.nc" --var tas --factor 2 --output "$work/in.nc"
expect_error "no such file" --input "$work/none.nc" --var tas --factor 2 --output "$work/x.nc"
[[ ! -e $work/x.nc ]] || fail "a refused run left $work/x.nc"
exit $((failures > 0))
