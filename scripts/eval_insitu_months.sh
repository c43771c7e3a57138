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

With --climatology K the first K months are a spin-up that the plugin never sees as data: their
mean (tas_clim, as a previous run's climatology would be) is a static covariate of the model's
regression base (patch.residual regression, patch.static [tas_clim], the base of the offline
time split), the replay plays months K+1..12 and month m (m >= K+2) is sampled with the
checkpoint written after month m - 1. The baselines stay those fitted on months 1..m-1.
With --refresh as well, the covariate is the running climatology: at month m the mean of months
1..m-1, a host variable the plugin gathers at every step (patch.static_refresh), and month m is
sampled with that mean, the covariate finecast-eval's regression_cons gets.
With --persistence as well (needs --climatology 2 or more), a second covariate tas_prev, the
month before each month, is gathered at every step beside tas_clim: the model's base becomes the
regression on both (the reference regression_prev below).

References: finecast-eval's baselines, its regression_cons fitted on months 1..m-1 with their mean
as the covariate, and regression_prev (months FIRST+1..12): the regression of month m on two
covariates, the mean of months 1..m-1 and month m-1, with the coefficients fitted on month m-1
(its covariates the mean of months 1..m-2 and month m-2). It is the strongest reference measured:
the months' fine deviations persist from one month to the next.

Prequential inflation: each month m after the first scored is also scored with its members'
spread inflated by F = sqrt(sum RMSE^2 / sum spread^2) over the months scored before it, the
model's own errors on months it had not yet seen when they came: what a run could measure in situ
as each month arrives, before training on it. Nothing of month m enters its F. Each month's terms
are weighted down by the decay D at every later month (the plugin's sample.calibration_decay):
D = 1 pools the months alike, D = 0 takes the month before only.
Writes into the output folder:
  data/all.nc, data/past_<m>.nc, data/clim_<m>.nc   the months, and months 1..m-1 and their mean
  data/spinup_clim.nc                                with --climatology K: the mean of months 1..K
  data/prev_<m>.nc                                   month m-1 as the covariate tas_prev
  month_<m>/eval_prev.json, regression_prev.json     regression_prev's scores and coefficients
  run.yaml, plugin.yaml, replay.log, checkpoints/    the in-situ training
  month_<m>/downscaled.nc, eval.json, eval.txt       the sampling and scores of month m
  month_<m>/prequential.nc, eval_prequential.json    month m's members inflated by the months before
                                                     (see below)
  summary.txt, months.csv                            per month and mean over the months scored

Options:
  --build DIR        build folder holding bin/ and lib/ (default: build)
  --out DIR          output folder (default: out/eval/tas_insitu)
  --seed S           the plugin's seed (default: the config's, 42)
  --members N        ensemble members (default: 16)
  --first M          first month scored, 2..12 (default: 3, or K + 2 with --climatology K: month 2's
                     baselines would fit on one month)
  --climatology K    the first K months (1..9) are a spin-up whose mean is the model's static covariate
                     (default: 0, no covariate: the B-spline base)
  --refresh          with --climatology: the covariate is the mean of every month before the current
                     one (patch.static_refresh), not only of the spin-up
  --persistence      with --refresh and --climatology K >= 2: also the month before the current one
                     as a second refreshed covariate tas_prev
  --set KEY=VALUE    plugin config override for the replay (repeatable)
  --skip-train       reuse the checkpoints already in the output folder
  --rescore          reuse the checkpoints and each month's members (month_<m>/downscaled.nc):
                     only the scores and the prequential inflation are computed again
  --calibration-decay D
                     the prequential inflation's decay, 0..1 (default: 0.5, the plugin's)
  --recentre-sigma S finecast-downscale --recentre-sigma S: each month's members recentred on the
                     denoiser's mean (default: the checkpoint's sample.recentre_sigma)
  --global-blend W   finecast-downscale --global-blend W: each month's members' mean moved toward the
                     global regression of the checkpoint's fit (patch.global_blend; default: the
                     checkpoint's own)
  --threads N        torch threads of finecast-downscale (default: the number of cores)
  -h, --help         this help
EOF
}

die() { echo "eval_insitu_months.sh: error: $*" >&2; exit 2; }

BUILD=build OUT=out/eval/tas_insitu SEED="" MEMBERS=16 FIRST="" CLIM=0 REFRESH=0 PERSIST=0 SKIP_TRAIN=0 RESCORE=0 DECAY=0.5
THREADS=$(nproc) SETS=() RECENTRE=() BLEND=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) BUILD=${2:?--build needs a value}; shift 2 ;;
    --out) OUT=${2:?--out needs a value}; shift 2 ;;
    --seed) SEED=${2:?--seed needs a value}; shift 2 ;;
    --members) MEMBERS=${2:?--members needs a value}; shift 2 ;;
    --first) FIRST=${2:?--first needs a value}; shift 2 ;;
    --climatology) CLIM=${2:?--climatology needs a value}; shift 2 ;;
    --refresh) REFRESH=1; shift ;;
    --persistence) PERSIST=1; shift ;;
    --set) SETS+=(--set "${2:?--set needs KEY=VALUE}"); shift 2 ;;
    --skip-train) SKIP_TRAIN=1; shift ;;
    --rescore) SKIP_TRAIN=1; RESCORE=1; shift ;;
    --calibration-decay) DECAY=${2:?--calibration-decay needs a value}; shift 2 ;;
    --threads) THREADS=${2:?--threads needs a value}; shift 2 ;;
    --recentre-sigma) RECENTRE=(--recentre-sigma "${2:?--recentre-sigma needs a value}"); shift 2 ;;
    --global-blend) BLEND=(--global-blend "${2:?--global-blend needs a value}"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $CLIM =~ ^[0-9]+$ ]] && (( CLIM <= 9 )) || die "--climatology must be 0..9, got '$CLIM'"
(( REFRESH == 0 || CLIM > 0 )) || die "--refresh needs --climatology K (the months before the first buffered one)"
(( PERSIST == 0 || (REFRESH && CLIM >= 2) )) ||
  die "--persistence needs --refresh and --climatology K >= 2 (at the first month played, the month before and the mean of the months before must differ)"
if [[ -z $FIRST ]]; then FIRST=$(( CLIM + 2 > 3 ? CLIM + 2 : 3 )); fi
[[ $FIRST =~ ^[0-9]+$ ]] && (( FIRST >= 2 && FIRST <= 12 )) || die "--first must be 2..12, got '$FIRST'"
(( FIRST >= CLIM + 2 )) || die "--first $FIRST: with --climatology $CLIM the first month a checkpoint exists for is $((CLIM + 2))"
[[ $MEMBERS =~ ^[0-9]+$ ]] && (( MEMBERS >= 2 )) || die "--members must be at least 2, got '$MEMBERS'"
[[ -z $SEED || $SEED =~ ^[0-9]+$ ]] || die "--seed takes an integer, got '$SEED'"
[[ $DECAY =~ ^(0(\.[0-9]+)?|1(\.0*)?)$ ]] || die "--calibration-decay must be a number in [0, 1], got '$DECAY'"

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
  $PY scripts/eval_crop.py --input "$SRC" --var tas --output "$OUT/data/prev_$m.nc" --time $((m - 2)) $((m - 1)) \
    --time-mean tas_prev >/dev/null
  $PY scripts/eval_crop.py --input "$SRC" --var tas --output "$OUT/data/month_$m.nc" --time $((m - 1)) $m >/dev/null
done
STATIC=()
if (( CLIM > 0 )); then
  $PY scripts/eval_crop.py --input "$SRC" --var tas --output "$OUT/data/spinup_clim.nc" --time 0 "$CLIM" \
    --time-mean tas_clim >/dev/null
  STATIC=(--static "$OUT/data/spinup_clim.nc:tas_clim")
  log "spin-up: months 1..$CLIM, their mean is the static covariate tas_clim; the replay plays months $((CLIM + 1))..12"
fi
if (( REFRESH )); then
  # The months with tas_clim beside tas: at month m the mean of months 1..m-1 (month 1: missing,
  # never played), what a running-mean accumulator in the host would hold.
  $PY - "$OUT/data/all.nc" "$OUT/data/all_clim.nc" <<'PYEOF'
import shutil, sys
import netCDF4, numpy as np
src, dst = sys.argv[1], sys.argv[2]
shutil.copyfile(src, dst)
with netCDF4.Dataset(dst, "a") as d:
    tas = np.asarray(d.variables["tas"][:], dtype=np.float64)
    v = d.createVariable("tas_clim", "f4", d.variables["tas"].dimensions, fill_value=np.float32(1e20))
    v.units = d.variables["tas"].units if "units" in d.variables["tas"].ncattrs() else "K"
    v.long_name = "mean of tas over the steps before this one"
    clim = np.full(tas.shape, 1e20)
    for m in range(1, tas.shape[0]):
        clim[m] = tas[:m].mean(axis=0)
    v[:] = clim.astype(np.float32)
    v = d.createVariable("tas_prev", "f4", d.variables["tas"].dimensions, fill_value=np.float32(1e20))
    v.units = d.variables["tas"].units if "units" in d.variables["tas"].ncattrs() else "K"
    v.long_name = "tas of the step before this one"
    prev = np.full(tas.shape, 1e20)
    prev[1:] = tas[:-1]
    v[:] = prev.astype(np.float32)
PYEOF
  log "refresh: the covariate tas_clim is the mean of the months before each month (data/all_clim.nc)"
  if (( PERSIST )); then log "persistence: the covariate tas_prev is the month before each month (data/all_clim.nc)"; fi
fi

# 2. the in-situ training: one replay of the 12 months, a checkpoint after every session
sed -e "s#out/eval/tas_insitu/#$OUT/#g" -e "s#build/lib/libfinecast_comin.so#$BUILD/lib/libfinecast_comin.so#" \
    -e "s#configs/eval_tas_insitu_plugin.yaml#$OUT/plugin.yaml#" configs/eval_tas_insitu.yaml > "$OUT/run.yaml"
sed -e "s#out/eval/tas_insitu/#$OUT/#g" configs/eval_tas_insitu_plugin.yaml > "$OUT/plugin.yaml"
if (( CLIM > 0 )); then
  # The replay starts after the spin-up and offers its mean as a host variable held constant; the
  # plugin's base becomes the regression on it (fitted on the first month it sees).
  if (( REFRESH )); then
    VARS="tas, tas_clim"; if (( PERSIST )); then VARS="tas, tas_clim, tas_prev"; fi
    sed -i -e "s#^  files: $OUT/data/all.nc#  files: $OUT/data/all_clim.nc#" -e "s#^  variables: \[tas\]#  variables: [$VARS]#" \
      "$OUT/run.yaml"
    SETS+=(--set patch.static_refresh=true)
  else
    sed -i -e "s#^  static: \[\]#  static: [{file: $OUT/data/spinup_clim.nc, var: tas_clim, name: tas_clim}]#" "$OUT/run.yaml"
  fi
  sed -i -e "s#^time: {}#time: {start: $CLIM}#" "$OUT/run.yaml"
  grep -q "start: $CLIM" "$OUT/run.yaml" && grep -q "spinup_clim\|tas, tas_clim" "$OUT/run.yaml" \
    || die "configs/eval_tas_insitu.yaml no longer has the 'files:', 'variables:', 'time: {}' and 'static: []' lines this script edits"
  if (( PERSIST )); then SETS+=(--set "patch.static=[tas_clim, tas_prev]"); else SETS+=(--set "patch.static=[tas_clim]"); fi
  SETS+=(--set patch.residual=regression)
fi
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
(( ${#CKPTS[@]} >= 11 - CLIM )) ||
  die "$OUT/checkpoints holds ${#CKPTS[@]} checkpoints; expected one per month played ($((11 - CLIM)) or $((12 - CLIM)))"

# 3. each month with the model of the month before, scored against baselines fitted on the past
for ((m = FIRST; m <= 12; ++m)); do
  D=$OUT/month_$m
  mkdir -p "$D"
  ckpt=$OUT/checkpoints/ckpt_${CKPTS[$((m - 2 - CLIM))]}.h5
  log "month $m: sampled with $ckpt (trained on months $((CLIM + 1))..$((m - 1)))"
  if (( REFRESH )); then STATIC=(--static "$OUT/data/clim_$m.nc:tas_clim"); fi
  if (( PERSIST )); then STATIC+=(--static "$OUT/data/prev_$m.nc:tas_prev"); fi
  if (( RESCORE )); then
    [[ -r $D/downscaled.nc ]] || die "--rescore: $D/downscaled.nc is missing (run without --rescore first)"
  else
    "$BUILD/bin/finecast-downscale" --checkpoint "$ckpt" --input "$OUT/data/all.nc" --var tas --time $((m - 1)) \
      "${STATIC[@]}" "${RECENTRE[@]}" "${BLEND[@]}" --output "$D/downscaled.nc" --members "$MEMBERS" --device cpu \
      --threads "$THREADS" --seed $((42 + m)) > "$D/downscale.log" 2>&1 || { cat "$D/downscale.log" >&2; die "finecast-downscale failed for month $m"; }
  fi
  "$BUILD/bin/finecast-eval" --truth "$OUT/data/all.nc" --time $((m - 1)) --pred "$D/downscaled.nc" --var tas --block 8 \
    --static "$OUT/data/clim_$m.nc:tas_clim" --fit-on "$OUT/data/past_$m.nc" --json "$D/eval.json" > "$D/eval.txt" 2>&1 \
    || { cat "$D/eval.txt" >&2; die "finecast-eval failed for month $m"; }
  # regression_prev: month m from the mean of months 1..m-1 and month m-1, with the coefficients of
  # the same regression of month m-1 (on the mean of months 1..m-2 and month m-2).
  if (( m > FIRST )); then
    "$BUILD/bin/finecast-eval" --truth "$OUT/data/all.nc" --time $((m - 2)) --pred "$OUT/month_$((m - 1))/downscaled.nc" \
      --var tas --block 8 --static "$OUT/data/clim_$((m - 1)).nc:tas_clim" --static "$OUT/data/prev_$((m - 1)).nc:tas_prev" \
      --fit-on "$OUT/data/month_$((m - 1)).nc" --regression-out "$D/regression_prev.json" --noise-members 0 \
      > "$D/fit_prev.txt" 2>&1 || { cat "$D/fit_prev.txt" >&2; die "finecast-eval failed to fit regression_prev for month $m"; }
    "$BUILD/bin/finecast-eval" --truth "$OUT/data/all.nc" --time $((m - 1)) --pred "$D/downscaled.nc" --var tas --block 8 \
      --static "$OUT/data/clim_$m.nc:tas_clim" --static "$OUT/data/prev_$m.nc:tas_prev" \
      --regression-in "$D/regression_prev.json" --json "$D/eval_prev.json" > "$D/eval_prev.txt" 2>&1 \
      || { cat "$D/eval_prev.txt" >&2; die "finecast-eval failed for month $m (regression_prev)"; }
  fi
  # Prequential inflation: what a run could measure as each month arrives, before training on it.
  # Month m's members are inflated by F = sqrt(sum RMSE^2 / sum spread^2) over the months scored
  # before it (raw members, each scored before its model saw it): no held-out region, no scalar.
  if (( m > FIRST )); then
    F=$($PY - "$OUT" "$FIRST" "$m" "$DECAY" <<'PYEOF'
import json, math, sys
out, first, m, decay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
e2 = s2 = 0.0
for k in range(first, m):
    p = {q["name"]: q for q in json.load(open(f"{out}/month_{k}/eval.json"))["predictions"]}["model"]
    e2 = decay * e2 + p["rmse"] ** 2
    s2 = decay * s2 + p["spread"] ** 2
print(f"{math.sqrt(e2 / s2):.6g}")
PYEOF
)
    $PY scripts/inflate_ensemble.py --input "$D/downscaled.nc" --var tas --factor "$F" --output "$D/prequential.nc" \
      > /dev/null || die "inflate_ensemble.py failed for month $m"
    "$BUILD/bin/finecast-eval" --truth "$OUT/data/all.nc" --time $((m - 1)) --pred "$D/prequential.nc" --var tas \
      --block 8 --static "$OUT/data/clim_$m.nc:tas_clim" --fit-on "$OUT/data/past_$m.nc" \
      --json "$D/eval_prequential.json" > "$D/eval_prequential.txt" 2>&1 \
      || { cat "$D/eval_prequential.txt" >&2; die "finecast-eval failed for month $m (prequential)"; }
    log "month $m: prequential inflation F = $F (months $FIRST..$((m - 1)), decay $DECAY)"
  fi
done

# 4. per month and the mean over the months scored
$PY - "$OUT" "$FIRST" "$DECAY" <<'PYEOF' | tee -a "$SUMMARY"
import json, os, sys
out, first, decay = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = ("model", "bspline_cons", "regression_cons", "noise_spectral")
def scores(path):
    return {p["name"]: p for p in json.load(open(path))["predictions"]}
print("month  " + "  ".join(f"{r + ' rmse/crps':>28}" for r in rows) + "  spread/rmse  prequential: crps spread/rmse")
sums = {r: [0.0, 0.0] for r in rows}
spread, preq, prev = [], [], []
months = list(range(first, 13))
with open(f"{out}/months.csv", "w") as csv:
    csv.write("month," + ",".join(f"{r}_rmse,{r}_crps" for r in rows) +
              ",model_spread_ratio,prequential_crps,prequential_spread_ratio"
              ",regression_prev_rmse,regression_prev_noise_crps\n")
    for m in months:
        e = scores(f"{out}/month_{m}/eval.json")
        vals = [(e[r]["rmse"], e[r].get("crps_fair", e[r]["crps"])) for r in rows]
        ratio = e["model"]["spread"] / e["model"]["rmse"]
        spread.append(ratio)
        for r, v in zip(rows, vals):
            sums[r][0] += v[0]; sums[r][1] += v[1]
        pq = ("", "")
        path = f"{out}/month_{m}/eval_prequential.json"
        if m > first and os.path.exists(path):
            p = scores(path)["model"]
            preq.append((p.get("crps_fair", p["crps"]), p["spread"] / p["rmse"], vals[0][1]))
            pq = (f"{preq[-1][0]:.4f}", f"{preq[-1][1]:.3f}")
        rp = ("", "")
        path = f"{out}/month_{m}/eval_prev.json"
        if os.path.exists(path):
            p = scores(path)
            noise = min(p[r].get("crps_fair", p[r]["crps"]) for r in ("noise_white", "noise_spectral") if r in p)
            prev.append((vals[0][0], vals[0][1], p["regression_cons"]["rmse"], noise))
            rp = (f"{p['regression_cons']['rmse']:.4f}", f"{noise:.4f}")
        print(f"{m:5d}  " + "  ".join(f"{v[0]:13.3f} {v[1]:14.3f}" for v in vals) + f"  {ratio:11.2f}" +
              (f"  {pq[0]:>17} {pq[1]:>11}" if pq[0] else "") + (f"  regression_prev {rp[0]} / {rp[1]}" if rp[0] else ""))
        csv.write(f"{m}," + ",".join(f"{v[0]:.4f},{v[1]:.4f}" for v in vals) + f",{ratio:.3f},{pq[0]},{pq[1]},{rp[0]},{rp[1]}\n")
n = len(months)
print("mean   " + "  ".join(f"{sums[r][0] / n:13.3f} {sums[r][1] / n:14.3f}" for r in rows) +
      f"  {sum(spread) / n:11.2f}")
if preq:
    k = len(preq)
    inside = sum(1 for q in preq if 0.85 <= q[1] <= 1.15)
    print(f"prequential inflation (decay {decay}), months {first + 1}..12: fair CRPS {sum(q[0] for q in preq) / k:.4f} "
          f"(raw members {sum(q[2] for q in preq) / k:.4f}), spread/RMSE {sum(q[1] for q in preq) / k:.3f} "
          f"(in 0.85-1.15 in {inside} of {k} months)")
if prev:
    k = len(prev)
    print(f"regression_prev, months {months[-k]}..12: RMSE {sum(q[2] for q in prev) / k:.4f} (model "
          f"{sum(q[0] for q in prev) / k:.4f}), noise reference fair CRPS {sum(q[3] for q in prev) / k:.4f} "
          f"(model {sum(q[1] for q in prev) / k:.4f}); months the model's RMSE is at most regression_prev's: "
          f"{sum(1 for q in prev if q[0] <= q[2])} of {k}")
PYEOF
log "done: $OUT/summary.txt, $OUT/months.csv"
