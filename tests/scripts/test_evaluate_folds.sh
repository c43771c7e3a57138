#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/evaluate.sh end to end on one fold of each spatial case, with a 5-step model and 2
# members (seconds each): every data path of its split step runs (eur11 and hsurf cut their data,
# afr22 copies it, icon copies it and writes the host's surface fields), and each fold trains
# around and scores exactly the blocks the docs name (docs/evaluation.md, "Model choice by spatial
# cross-validation"): the count finecast-eval scores and the count the plugin never trains on (the
# fold, and for the val folds of the orography cases and ICON the test half or quadrant too).
# Then a region of one's own (--hold-out) in place of a test split's: a box of rotated
# coordinates on eur11, and on hsurf a mask file of the cells above 1,500 m, whose held-out,
# sampled and scored blocks must be the 4 x 4 blocks of the data cut with such a cell.
set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
BIN="${FINECAST_BINARY_DIR:-$SRC/build}"
NUG=/usr/share/ncarg/data/nug
for f in "$BIN/bin/finecast-replay" "$BIN/bin/finecast-downscale" "$BIN/bin/finecast-eval" "$BIN/bin/finecast-config" \
  "$BIN/bin/finecast-host" "$BIN/lib/libfinecast_comin.so" "$NUG/tas_rotated_grid_EUR11.nc" \
  "$NUG/orog_mod3_rectilinear_grid_2D.nc" "$NUG/HSURF_regional_model_0.11deg.nc" "$NUG/atm_phy_mag0004_1985.nc" \
  /usr/share/ferret-vis/data/etopo5.cdf; do
  [[ -e "$f" ]] || { echo "skipped: $f is missing"; exit 77; }
done
/usr/bin/python3 -c "import matplotlib, netCDF4" 2>/dev/null || { echo "skipped: /usr/bin/python3 lacks matplotlib/netCDF4"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
work="$(mktemp -d "${TMPDIR:-/tmp}/finecast-evaluate-test.XXXXXX")"
trap 'if ((failures == 0)); then rm -rf "$work"; else echo "kept $work"; fi' EXIT

# fold NAME SCORED NEVER_TRAINED ARGS...: evaluate.sh ARGS succeeds, finecast-eval scores SCORED
# ("N of M blocks" or "N of M patches") and the plugin never trains on NEVER_TRAINED patches
fold() {
  local name=$1 scored=$2 never=$3 out="$work/$1" rc=0
  shift 3
  bash "$SRC/scripts/evaluate.sh" "$@" --build "$BIN" --out "$out" --set train.max_steps=5 --members 2 --threads 1 \
    >"$work/$name.log" 2>&1 || rc=$?
  if [[ $rc != 0 ]]; then
    fail "evaluate.sh $* exited $rc:"
    tail -5 "$work/$name.log" >&2
    return
  fi
  grep -q -- ", $scored scored per step\|: $scored scored per step" "$out/eval.txt" ||
    fail "$name: finecast-eval did not score $scored: $(grep -m1 'scored per step' "$out/eval.txt")"
  grep -q "train.hold_out .*: $never patches are never trained on" "$out/replay.log" ||
    fail "$name: the plugin did not hold out $never patches: $(grep -m1 'never trained on' "$out/replay.log")"
}

# EUR-11, fold 2 of 4 of the whole domain's 26 block columns: columns 6..12 (7 x 25 blocks)
fold eur11 "175 of 650 blocks" "175 of 650" eur11 --fold 2/4
# AFR-22 orography, val fold 2 of 3 of the western half's 97 block columns: columns 32..63 (32 x
# 201); the eastern half's 97 x 201 = 19,497 blocks are never trained on either
fold afr22 "6432 of 38994 blocks" "25929 of 38994" afr22 --split val --fold 2/3
# EUR-11 HSURF orography, val fold 1 of 3 of the western half's 56 block columns: columns 0..17
# (18 x 108), and the eastern half's 56 x 108 = 6,048
fold hsurf "1944 of 12096 blocks" "7992 of 12096" hsurf --split val --fold 1/3
# ICON, val fold 1 of 3: the south-west quadrant scored (18 R2B0 cells in the uniform geometry),
# it and the test quadrant (north-west) never trained on
fold icon "18 of 80 patches" "36 of 80" icon --split val --fold 1/3 --geometry uniform

fold eur11_box "48 of 650 blocks" "48 of 650" eur11 --hold-out -10,5,-20,-8
# the mask, and independently of finecast the blocks of the 432 x 448 cut that hold a cell above it
high=$(/usr/bin/python3 - "$NUG/HSURF_regional_model_0.11deg.nc" "$work/high.nc" <<'PYEOF'
import sys, netCDF4, numpy as np
src = netCDF4.Dataset(sys.argv[1])
h = np.ma.filled(src["HSURF"][0].astype(float), 0.0)
with netCDF4.Dataset(sys.argv[2], "w") as out:
    for dim in ("rlat", "rlon"):
        out.createDimension(dim, len(src.dimensions[dim]))
        v = out.createVariable(dim, "f8", (dim,))
        v[:] = src[dim][:]
        v.setncatts({a: src[dim].getncattr(a) for a in src[dim].ncattrs()})
    out.createVariable("high", "i1", ("rlat", "rlon"))[:] = (h > 1500).astype("i1")
print(int((h[:432, :448] > 1500).reshape(108, 4, 112, 4).any(axis=(1, 3)).sum()))
PYEOF
)
fold hsurf_mask "$high of 12096 blocks" "$high of 12096" hsurf --hold-out "$work/high.nc:high"
grep -q "Sampling $high of 12096 patches, those held out by --hold-out" "$work/hsurf_mask/downscale.log" ||
  fail "hsurf_mask: finecast-downscale did not sample the $high masked patches: $(grep -m1 'Sampling [0-9]' "$work/hsurf_mask/downscale.log")"

exit $((failures > 0))
