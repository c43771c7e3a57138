#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The in-situ version of the time-split evaluation (docs/evaluation.md, "A time-split case").
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/eval_insitu_months.sh [options]

Plays the 12 monthly near-surface temperatures of libncarg-data (MPI-ESM-LR 2005, 192 x 96) in
order through the finecast plugin (finecast-replay, configs/eval_tas_insitu*.yaml): the plugin
buffers every month, trains a session of a fixed step budget after each on all months so far,
and checkpoints after each session. Then month m (m = FIRST..12) is sampled with the checkpoint
written after month m - 1, so each month is scored before the model has seen it, against the
baselines of finecast-eval, its regression_cons fitted on months 1..m-1 with their mean as the
covariate (the strongest reference a user without the model would have at that point).
Writes into the output folder:
  data/all.nc, data/past_<m>.nc, data/clim_<m>.nc   the months, and months 1..m-1 and their mean
  run.yaml, plugin.yaml, replay.log, checkpoints/    the in-situ training
  month_<m>/downscaled.nc, eval.json, eval.txt       the sampling and scores of month m
  summary.txt, months.csv                            per month and mean over the months scored

Options:
  --build DIR        build folder holding bin/ and lib/ (default: build)
  --out DIR          output folder (default: out/eval/tas_insitu)
  --seed S           the plugin's seed (default: the config's, 42)
  --members N        ensemble members (default: 16)
  --first M          first month scored, 2..12 (default: 3: month 2's baselines would fit on one month)
  --set KEY=VALUE    plugin config override for the replay (repeatable)
  --skip-train       reuse the checkpoints already in the output folder
  --threads N        torch threads of finecast-downscale (default: the number of cores)
  -h, --help         this help
EOF
}

die() { echo "eval_insitu_months.sh: error: $*" >&2; exit 2; }

BUILD=build OUT=out/eval/tas_insitu SEED="" MEMBERS=16 FIRST=3 SKIP_TRAIN=0 THREADS=$(nproc) SETS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=${2:?--build needs a value}; shift 2 ;;
    --out) OUT=${2:?--out needs a value}; shift 2 ;;
    --seed) SEED=${2:?--seed needs a value}; shift 2 ;;
    --members) MEMBERS=${2:?--members needs a value}; shift 2 ;;
    --first) FIRST=${2:?--first needs a value}; shift 2 ;;
    --set) SETS+=(--set "${2:?--set needs KEY=VALUE}"); shift 2 ;;
    --skip-train) SKIP_TRAIN=1; shift ;;
    --threads) THREADS=${2:?--threads needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $FIRST =~ ^[0-9]+$ ]] && (( FIRST >= 2 && FIRST <= 12 )) || die "--first must be 2..12, got '$FIRST'"
[[ $MEMBERS =~ ^[0-9]+$ ]] && (( MEMBERS >= 2 )) || die "--members must be at least 2, got '$MEMBERS'"
[[ -z $SEED || $SEED =~ ^[0-9]+$ ]] || die "--seed takes an integer, got '$SEED'"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY=/usr/bin/python3
SRC=/usr/share/ncarg/data/nug/tas_rectilinear_grid_2D.nc
[[ -r $SRC ]] || die "input $SRC is missing (Debian package libncarg-data)"
for exe in finecast-replay finecast-downscale finecast-eval; do
  [[ -x $BUILD/bin/$exe ]] || die "$BUILD/bin/$exe not built"
done
[[ -r $BUILD/lib/libfinecast_comin.so ]] || die "$BUILD/lib/libfinecast_comin.so not built"

mkdir -p "$OUT/data"
SUMMARY=$OUT/summary.txt
log() { echo "$*" | tee -a "$SUMMARY"; }
: > "$SUMMARY"
log "in-situ time split, $(date -u +%Y-%m-%dT%H:%M:%SZ); machine: $(nproc --all) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# 1. the months, and for each month scored the months before it and their mean
$PY scripts/eval_crop.py --input "$SRC" --var tas --output "$OUT/data/all.nc" --time 0 12 | tee -a "$SUMMARY"
for ((m = FIRST; m <= 12; ++m)); do
  $PY scripts/eval_crop.py --input "$SRC" --var tas --output "$OUT/data/past_$m.nc" --time 0 $((m - 1)) >/dev/null
  $PY scripts/eval_crop.py --input "$SRC" --var tas --output "$OUT/data/clim_$m.nc" --time 0 $((m - 1)) \
    --time-mean tas_clim >/dev/null
done

# 2. the in-situ training: one replay of the 12 months, a checkpoint after every session
sed -e "s#out/eval/tas_insitu/#$OUT/#g" -e "s#build/lib/libfinecast_comin.so#$BUILD/lib/libfinecast_comin.so#" \
    -e "s#configs/eval_tas_insitu_plugin.yaml#$OUT/plugin.yaml#" configs/eval_tas_insitu.yaml > "$OUT/run.yaml"
sed -e "s#out/eval/tas_insitu/#$OUT/#g" configs/eval_tas_insitu_plugin.yaml > "$OUT/plugin.yaml"
if [[ -n $SEED ]]; then SETS+=(--set "seed=$SEED"); fi
if [[ $SKIP_TRAIN == 0 ]]; then
  rm -rf "$OUT/checkpoints"
  REPLAY=("$BUILD/bin/finecast-replay" --config "$OUT/run.yaml" --progress lines "${SETS[@]}")
  log "train: ${REPLAY[*]}"
  t0=$(date +%s)
  "${REPLAY[@]}" 2>&1 | tee "$OUT/replay.log"
  log "train wall time: $(( $(date +%s) - t0 )) s"
fi

# The checkpoint written after month m - 1: the (m - 1)-th in optimizer-step order. Checkpoint
# names carry the optimizer step (ckpt_<step>.h5), so sort them numerically.
mapfile -t CKPTS < <(ls "$OUT/checkpoints"/ckpt_*.h5 2>/dev/null | sed 's#.*/ckpt_\([0-9]*\)\.h5#\1#' | sort -n)
(( ${#CKPTS[@]} >= 11 )) || die "$OUT/checkpoints holds ${#CKPTS[@]} checkpoints; expected one per month (11 or 12)"

# 3. each month with the model of the month before, scored against baselines fitted on the past
for ((m = FIRST; m <= 12; ++m)); do
  D=$OUT/month_$m
  mkdir -p "$D"
  ckpt=$OUT/checkpoints/ckpt_${CKPTS[$((m - 2))]}.h5
  log "month $m: sampled with $ckpt (trained on months 1..$((m - 1)))"
  "$BUILD/bin/finecast-downscale" --checkpoint "$ckpt" --input "$OUT/data/all.nc" --var tas --time $((m - 1)) \
    --output "$D/downscaled.nc" --members "$MEMBERS" --device cpu --threads "$THREADS" --seed $((42 + m)) \
    > "$D/downscale.log" 2>&1 || { cat "$D/downscale.log" >&2; die "finecast-downscale failed for month $m"; }
  "$BUILD/bin/finecast-eval" --truth "$OUT/data/all.nc" --time $((m - 1)) --pred "$D/downscaled.nc" --var tas --block 8 \
    --static "$OUT/data/clim_$m.nc:tas_clim" --fit-on "$OUT/data/past_$m.nc" --json "$D/eval.json" > "$D/eval.txt" 2>&1 \
    || { cat "$D/eval.txt" >&2; die "finecast-eval failed for month $m"; }
done

# 4. per month and the mean over the months scored
$PY - "$OUT" "$FIRST" <<'PYEOF' | tee -a "$SUMMARY"
import json, sys
out, first = sys.argv[1], int(sys.argv[2])
rows = ("model", "bspline_cons", "regression_cons", "noise_spectral")
print("month  " + "  ".join(f"{r + ' rmse/crps':>28}" for r in rows) + "  spread/rmse")
sums = {r: [0.0, 0.0] for r in rows}
spread = []
months = list(range(first, 13))
with open(f"{out}/months.csv", "w") as csv:
    csv.write("month," + ",".join(f"{r}_rmse,{r}_crps" for r in rows) + ",model_spread_ratio\n")
    for m in months:
        e = {p["name"]: p for p in json.load(open(f"{out}/month_{m}/eval.json"))["predictions"]}
        vals = [(e[r]["rmse"], e[r].get("crps_fair", e[r]["crps"])) for r in rows]
        ratio = e["model"]["spread"] / e["model"]["rmse"]
        spread.append(ratio)
        for r, v in zip(rows, vals):
            sums[r][0] += v[0]; sums[r][1] += v[1]
        print(f"{m:5d}  " + "  ".join(f"{v[0]:13.3f} {v[1]:14.3f}" for v in vals) + f"  {ratio:11.2f}")
        csv.write(f"{m}," + ",".join(f"{v[0]:.4f},{v[1]:.4f}" for v in vals) + f",{ratio:.3f}\n")
n = len(months)
print("mean   " + "  ".join(f"{sums[r][0] / n:13.3f} {sums[r][1] / n:14.3f}" for r in rows) +
      f"  {sum(spread) / n:11.2f}")
PYEOF
log "done: $OUT/summary.txt, $OUT/months.csv"
