#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The evaluation pipeline of docs/evaluation.md: split -> finecast-replay (train) ->
# finecast-downscale (held-out data) -> finecast-eval -> scripts/plot_eval.py.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/evaluate.sh CASE [options]

Runs one evaluation case of docs/evaluation.md end to end and writes everything into
out/eval/<CASE>/ (or out/eval/<CASE>_val/ with --split val):
  data/train.nc, data/test.nc   the split, cut by scripts/eval_crop.py (git-ignored copies)
  run.yaml, plugin.yaml         configs/eval_<CASE>*.yaml with paths pointed at this folder
  replay.log, checkpoints/      training (finecast-replay through the finecast plugin; with
                                --seeds, replay_s<S>.log and checkpoints_s<S>/ per seed)
  downscaled.nc, downscale.log  the ensemble on the held-out data (finecast-downscale)
  eval.txt, eval.json, eval.csv scores of the model and the interpolation baselines
  eval_regression_<I>.json      eur11, icon, tas_months: the regressions (and noise references)
                                on the grid's other interpolants I (bspline; icon: linear,
                                idw_linear), their rows added to eval.json as <row>_<I>
  figures/<CASE>_spectra.png, figures/<CASE>_maps.png
  summary.txt                   machine, load, wall times, commands

CASE:
  etopo5   global 5' relief (ferret-datasets), 16 x 16 blocks. test: train on lon -180..0,
           score on lon 0..180. val: train on lon -180..-60, score on -60..0 (for tuning).
  tas      monthly near-surface temperature 2005 (libncarg-data), 8 x 8 blocks. test: train on
           Jan..Sep, score on Oct..Dec. val: train on Jan..Jun, score on Jul..Sep (for tuning).
  tas_months  the same monthly temperature split in time, 8 x 8 blocks, the training months' mean
           (tas_clim) as the static covariate of a regression base (model and finecast-eval's
           regression_cons, fitted on the training months). --direction forward: train Jan..Aug,
           score Sep..Dec (val: train Jan..Jun, score Jul..Aug); backward: train May..Dec, score
           Jan..Apr (val: train Jul..Dec, score May..Jun).
  eur11    EURO-CORDEX EUR-11 January tas (libncarg-data, rotated pole, cut to 400 x 416), 16 x 16
           blocks, surface height and land fraction as static covariates. test: train on the
           western half (rotated lon < -5.52), score the eastern half. val: the western half
           only, train on its western 8 block columns, score its eastern 5.
  icon     ICON ts of atm_phy_mag0004_1985.nc, R2B4 -> R2B0 (80 patches of 256 cells), the surface
           height and land fraction finecast-host averages onto the cells as covariates. test:
           hold out the 18 R2B0 cells wholly inside lat 0..90, lon -180..0. val: the 13 inside
           lon 30..150 (the training then sees the test box: for tuning only).
  afr22    the orography f2 case: CORDEX AFR-22 surface height (libncarg-data orog_mod3_...), 2 x 2
           blocks, no covariates. test: train on the western half (rlon < 17.8), score rlon
           17.93..38.83 (9,648 blocks). val: --fold I/K only (below).
  hsurf    the orography f4 case: EUR-11 HSURF cut to 432 x 448, 4 x 4 blocks. test: train on the
           western half (rlon < -5.2), score rlon -5.165..7.045 (3,024 blocks). val: --fold I/K.
  Spatial cases (eur11, icon, afr22, hsurf) replay the whole field with --hold-out: the held-out
  patches are never trained on, their coarse values stay in their neighbours' context,
  finecast-downscale samples them only (--hold-out) and finecast-eval scores them only
  (--hold-out), with regression_cons fitted on the rest (eur11, icon: the cases with covariates).
  The replay itself samples nothing (sample.at_end: false).

Options:
  --split test|val   which split (default: test). Tune on val; test is scored once.
  --direction D      tas_months: forward | backward (default: forward)
  --fold I/K         eur11: spatially blocked cross-validation: fold I (1..K) of K longitude
                     bands of whole block columns is held out and scored, the rest trained on. With
                     --split val the bands split the western half (the test half never enters; fold
                     3/3 is the single val split); with --split test the whole domain (26 block
                     columns; the eastern half is folds 3 and 4 of 4).
                     icon: the sphere's quadrants (lat 0..90 / -90..0 x lon -180..0 / 0..180, 18
                     R2B0 cells each). --split test --fold I/4: quadrant I is held out and scored
                     (1/4 is the test split: north-west, then south-west, south-east, north-east);
                     --split val --fold I/3: quadrant I + 1 is scored, and neither it nor the test
                     quadrant is trained on or fitted (the test quadrant's fine truth never enters).
                     afr22, hsurf: --split val only: fold I of K bands of the western half's
                     block columns (97, 56) is scored, neither it nor the eastern half trained on.
                     scripts/eval_folds.py sums the folds up (docs/evaluation.md, "Model choice by
                     spatial cross-validation")
  --hold-out BOX     eur11, icon, afr22, hsurf (test split, no --fold): a region of your own in
                     place of the test split's, trained around and scored as the test split.
                     BOX is lat0,lat1,lon0,lon1 in degrees in the grid's own coordinates (rotated
                     ones on eur11, afr22 and hsurf; several boxes joined by ';' and quoted): the
                     blocks (icon: R2B0 cells) wholly inside are held out; or FILE:VAR, a mask on
                     the fine grid: the blocks with a non-zero cell are held out (lat-lon: this
                     grid or a larger one containing it; icon: one value per R2B4 cell; an
                     example in docs/evaluation.md, "A region of your own"). Each tool gets the same
                     --hold-out, so the held-out, sampled and scored blocks agree. On eur11 the
                     whole 400 x 416 cut is trained around the region (its test split trains on
                     the western half only), on afr22 and hsurf the whole field
  --build DIR        build folder holding bin/ and lib/ (default: build)
  --ranks N          MPI ranks of the replay (default: 1; N > 1 runs mpiexec --oversubscribe)
  --members N        ensemble members (default: etopo5 4, tas 8)
  --sampler S        ddim | ddpm (default: etopo5 ddpm, tas ddim; docs/evaluation.md says why)
  --steps N          DDIM steps (default: 10)
  --eta X            DDIM noise per step, 0..1 (default: 0)
  --inflation F      post-hoc spread inflation of finecast-downscale. Default: on the test split the
                     plugin config's sample.inflation, which finecast-downscale reads from the
                     checkpoint (the committed configs carry the factor fitted on the val split:
                     1 / its mean spread/RMSE over 3 seeds), on the val split 1
  --inflation-range K  per-patch inflation beyond the training range of finecast-downscale:
                     --inflation times (1 + e)^K, e = how far a patch's context lies beyond the
                     training range (default: the checkpoint's sample.inflation_range, else 0)
  --spread-regression K  each patch's members spread by r2^K, r2 the mean square of what the
                     global regression adds to the interpolant there (finecast-downscale; default:
                     the checkpoint's patch.spread_regression, else 0)
  --global-blend W   the members' mean moved to the global regression + W x (mean - it)
                     (finecast-downscale; default: the checkpoint's patch.global_blend)
  --threads N        torch threads of finecast-downscale (default: the number of cores) and, when
                     given, of the replay's training too (--set train.threads=N; a later --set
                     train.threads wins): runs side by side on one node each need their own cores,
                     OpenMP threads that spin at barriers on a shared core make training up to
                     ~50x slower (docs/performance.md)
  --set KEY=VALUE    plugin config override for the replay (repeatable), e.g. train.epochs=5
  --seeds S1,S2,...  train one model per seed (the plugin's seed, over --set seed=) into
                     checkpoints_s<S>/ and pool their members: finecast-downscale draws
                     members / N from each, the k-th with the sampling seed
                     42 + k (default: one model with the config's seed; "--seeds 42"
                     trains one model with seed 42). The configs' inflation is fitted for
                     one model's members; pooled members need a smaller one
  --geometry G       icon: file | uniform, the cells' coordinates for every tool (finecast-host
                     --write-orography, finecast-replay, finecast-downscale, finecast-eval;
                     docs/grids.md). Default: each tool's own (file)
  --skip-train       reuse the checkpoints already in the output folder
  --only-eval        reuse the checkpoints and the downscaled ensemble: score and plot only
  --out DIR          output folder (default: out/eval/<CASE>[_val])
  -h, --help         this help
EOF
}

die() { echo "evaluate.sh: error: $*" >&2; exit 2; }

[[ $# -ge 1 ]] || { usage >&2; exit 2; }
case "$1" in -h|--help) usage; exit 0 ;; esac
CASE=$1; shift
SPLIT=test BUILD=build RANKS=1 MEMBERS="" SAMPLER="" STEPS=10 ETA=0 INFLATION="" INFLATION_RANGE="" SPREAD_REGRESSION="" GLOBAL_BLEND="" THREADS=$(nproc) SKIP_TRAIN=0 ONLY_EVAL=0 OUT=""
SETS=() TRAIN_THREADS=() GEOMETRY="" SEEDS="" DIRECTION=forward FOLD="" HOLD_BOX=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --split) SPLIT=${2:?--split needs a value}; shift 2 ;;
    --build) BUILD=${2:?--build needs a value}; shift 2 ;;
    --ranks) RANKS=${2:?--ranks needs a value}; shift 2 ;;
    --members) MEMBERS=${2:?--members needs a value}; shift 2 ;;
    --sampler) SAMPLER=${2:?--sampler needs a value}; shift 2 ;;
    --steps) STEPS=${2:?--steps needs a value}; shift 2 ;;
    --eta) ETA=${2:?--eta needs a value}; shift 2 ;;
    --inflation) INFLATION=${2:?--inflation needs a value}; shift 2 ;;
    --inflation-range) INFLATION_RANGE=${2:?--inflation-range needs a value}; shift 2 ;;
    --spread-regression) SPREAD_REGRESSION=${2:?--spread-regression needs a value}; shift 2 ;;
    --global-blend) GLOBAL_BLEND=${2:?--global-blend needs a value}; shift 2 ;;
    --threads) THREADS=${2:?--threads needs a value}; TRAIN_THREADS=(--set "train.threads=$2"); shift 2 ;;
    --set) SETS+=(--set "${2:?--set needs KEY=VALUE}"); shift 2 ;;
    --seeds) SEEDS=${2:?--seeds needs a value}; shift 2 ;;
    --geometry) GEOMETRY=${2:?--geometry needs a value}; shift 2 ;;
    --direction) DIRECTION=${2:?--direction needs a value}; shift 2 ;;
    --fold) FOLD=${2:?--fold needs a value}; shift 2 ;;
    --hold-out) HOLD_BOX=${2:?--hold-out needs a value}; shift 2 ;;
    --skip-train) SKIP_TRAIN=1; shift ;;
    --only-eval) SKIP_TRAIN=1; ONLY_EVAL=1; shift ;;
    --out) OUT=${2:?--out needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $SPLIT == test || $SPLIT == val ]] || die "--split must be test or val, got '$SPLIT'"
[[ $DIRECTION == forward || $DIRECTION == backward ]] || die "--direction must be forward or backward, got '$DIRECTION'"
[[ $DIRECTION == forward || $CASE == tas_months ]] || die "--direction is for the tas_months case"
if [[ -n $FOLD ]]; then
  [[ $FOLD =~ ^([0-9]+)/([0-9]+)$ ]] || die "--fold takes I/K (e.g. 2/3), got '$FOLD'"
  FOLD_I=${BASH_REMATCH[1]} FOLD_K=${BASH_REMATCH[2]}
  (( FOLD_K >= 2 && FOLD_I >= 1 && FOLD_I <= FOLD_K )) || die "--fold $FOLD: need 1 <= I <= K and K >= 2"
  [[ $CASE == eur11 || $CASE == icon || $CASE == afr22 || $CASE == hsurf ]] || die "--fold is for the eur11, icon, afr22 and hsurf cases"
fi
if [[ -n $HOLD_BOX ]]; then
  [[ $CASE == eur11 || $CASE == icon || $CASE == afr22 || $CASE == hsurf ]] ||
    die "--hold-out is for the spatial cases (eur11, icon, afr22, hsurf), not $CASE"
  [[ $SPLIT == test && -z $FOLD ]] || die "--hold-out replaces the test split's region: no --split val, no --fold"
  box='-?[0-9.]+,-?[0-9.]+,-?[0-9.]+,-?[0-9.]+'
  if [[ $HOLD_BOX =~ ^([^,]+):([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
    [[ -r ${BASH_REMATCH[1]} ]] || die "--hold-out $HOLD_BOX: the mask file ${BASH_REMATCH[1]} cannot be read"
    # the tools run from the checkout's root: an absolute path keeps a relative one valid
    HOLD_BOX="$(cd "$(dirname "${BASH_REMATCH[1]}")" && pwd)/$(basename "${BASH_REMATCH[1]}"):${BASH_REMATCH[2]}"
  else
    [[ $HOLD_BOX =~ ^$box(\;$box)*$ ]] ||
      die "--hold-out takes lat0,lat1,lon0,lon1 in degrees (several joined by ';') or FILE:VAR, got '$HOLD_BOX'"
  fi
fi
GEO_ARGS=()
if [[ -n ${GEOMETRY:-} ]]; then
  [[ $GEOMETRY == file || $GEOMETRY == uniform ]] || die "--geometry must be file or uniform, got '$GEOMETRY'"
  [[ $CASE == icon ]] || die "--geometry is for the icon case"
  GEO_ARGS=(--geometry "$GEOMETRY")
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PY=/usr/bin/python3
ETOPO=/usr/share/ferret-vis/data/etopo5.cdf
TAS=/usr/share/ncarg/data/nug/tas_rectilinear_grid_2D.nc
NUG=/usr/share/ncarg/data/nug
HOLD="" STATICS=() TRAIN_HOLD="" CLIM_CUT=() SCORE_REGION="" DATA_CUT=()
# finecast-eval's regression_local (the case's strongest regression; docs/evaluation.md, "The
# strongest regression"): local slopes with the settings each case's val folds choose
LOCAL_REF=()
# fold_band N TOTAL: the box of fold I of K (--fold) over the first N of the data's TOTAL block
# columns: columns floor((I-1) x N / K) .. floor(I x N / K) - 1 ($BLOCK cells each) of $SRC's rlon,
# its edges halfway between cell centres, open (+-90) at the data's own edges
fold_band() {
  $PY - "$SRC" "$FOLD_I" "$FOLD_K" "$1" "$2" "$BLOCK" <<'PYEOF'
import sys, netCDF4
i, k, n, total, b = (int(a) for a in sys.argv[2:7])
x = netCDF4.Dataset(sys.argv[1])["rlon"][:]
half = (x[1] - x[0]) / 2
b0, b1 = (i - 1) * n // k * b, i * n // k * b
lo = x[b0] - half if b0 > 0 else -90.0
hi = x[b1] - half if b1 < total * b else 90.0
print(f"-90,90,{lo:.3f},{hi:.3f}")
PYEOF
}

case "$CASE" in
  etopo5)
    # DDPM: deterministic DDIM gives too smooth relief (std_ratio 0.5); 4 members keep the
    # downscaling of the held-out hemisphere near half an hour on 2 cores.
    VAR=ROSE BLOCK=16 SRC=$ETOPO DEFAULT_SAMPLER=ddpm DEFAULT_MEMBERS=4
    if [[ $SPLIT == test ]]; then TRAIN_CUT=(--lon 180 360 --rows 0 2160); TEST_CUT=(--lon 0 180 --rows 0 2160)
    else TRAIN_CUT=(--lon 180 300 --rows 0 2160); TEST_CUT=(--lon 300 360 --rows 0 2160); fi
    SPLIT_SETS=() ;;
  tas)
    VAR=tas BLOCK=8 SRC=$TAS DEFAULT_SAMPLER=ddim DEFAULT_MEMBERS=8
    if [[ $SPLIT == test ]]; then TRAIN_CUT=(--time 0 9); TEST_CUT=(--time 9 12); SPLIT_SETS=()
    else TRAIN_CUT=(--time 0 6); TEST_CUT=(--time 6 9)
      # six training months instead of nine: buffer them all, train once when they are in
      SPLIT_SETS=(--set buffer.capacity=6 --set train.every=6 --set train.min_steps=6); fi ;;
  tas_months)
    # The training months' mean is the covariate: the fine pattern that recurs every month
    # (coasts, mountains) is the regression base, the model learns the month's departure from it.
    VAR=tas BLOCK=8 SRC=$TAS DEFAULT_SAMPLER=ddpm DEFAULT_MEMBERS=16
    if [[ $DIRECTION == forward ]]; then
      if [[ $SPLIT == test ]]; then TRAIN_CUT=(--time 0 8); TEST_CUT=(--time 8 12)
      else TRAIN_CUT=(--time 0 6); TEST_CUT=(--time 6 8); fi
    else
      if [[ $SPLIT == test ]]; then TRAIN_CUT=(--time 4 12); TEST_CUT=(--time 0 4)
      else TRAIN_CUT=(--time 6 12); TEST_CUT=(--time 4 6); fi
    fi
    CLIM_CUT=("${TRAIN_CUT[@]}" --time-mean tas_clim)
    # each month's own slope on the climatology, over 12 rings of blocks (half the globe)
    LOCAL_REF=(--local-slopes 12)
    SPLIT_SETS=()
    if [[ $SPLIT == val ]]; then  # six training months: buffer them all, train once when they are in
      SPLIT_SETS=(--set buffer.capacity=6 --set train.every=6 --set train.min_steps=6); fi ;;
  eur11)
    # One field: a spatial split of the same file. DDPM over all 50 steps keeps the fine scales.
    VAR=tas BLOCK=16 SRC=$NUG/tas_rotated_grid_EUR11.nc DEFAULT_SAMPLER=ddpm DEFAULT_MEMBERS=16
    STATICS=(--static "$NUG/HSURF_regional_model_0.11deg.nc:HSURF" --static "$NUG/FR-LAND_regional_model_0.11deg.nc:FR_LAND")
    # the coarse field's local slope on the surface height: the lapse rate ("Local slopes")
    LOCAL_REF=(--local-slopes 4 --local-slope-static HSURF)
    if [[ $SPLIT == test ]]; then DATA_CUT=(--rows 0 400 --cols 0 416); HOLD=-90,90,-5.52,20
    else DATA_CUT=(--rows 0 400 --cols 0 208); HOLD=-90,90,-14.30,20; fi
    if [[ -n $FOLD ]]; then
      # Fold I of K: a band of the data cut's block columns (val: the western half's 13, test: all 26)
      [[ $SPLIT == test ]] && NCOLS=26 || NCOLS=13
      HOLD=$(fold_band "$NCOLS" "$NCOLS")
    fi
    if [[ -n $HOLD_BOX ]]; then HOLD=$HOLD_BOX; fi
    TRAIN_HOLD=$HOLD SPLIT_SETS=() ;;
  afr22 | hsurf)
    # The orography cases of docs/evaluation.md ("Seeds"): one field, the surface height itself
    # (no covariates), replayed whole with its eastern half held out, a strip of that scored.
    # afr22: AFR-22 orog in 2 x 2 blocks, the eastern 97 of 194 block columns held out (rlon >=
    # 17.93), rlon 17.93..38.83 scored (48 block columns, 9,648 blocks). hsurf: EUR-11 HSURF cut to
    # 432 x 448, 4 x 4 blocks, the eastern 56 of 112 block columns held out (rlon >= -5.165),
    # rlon -5.165..7.045 scored (28 block columns, 3,024 blocks).
    DEFAULT_SAMPLER=ddpm DEFAULT_MEMBERS=16
    # The scored strip is finecast-downscale's and finecast-eval's --hold-out, not a --region: the
    # output then spans the whole field, and the interpolation baselines, computed on the
    # prediction's window, have no edge inside the data (on the strip alone the B-spline's
    # prefilter would be cut at its edges: 17.05 m against 16.08 on afr22's test strip).
    if [[ $CASE == afr22 ]]; then
      VAR=orog BLOCK=2 SRC=$NUG/orog_mod3_rectilinear_grid_2D.nc NWEST=97 NCOLS=194
      TRAIN_HOLD=-90,90,17.8,61 HOLD=-90,90,17.8,39.0
    else
      VAR=HSURF BLOCK=4 SRC=$NUG/HSURF_regional_model_0.11deg.nc NWEST=56 NCOLS=112
      DATA_CUT=(--rows 0 432 --cols 0 448) TRAIN_HOLD=-90,90,-5.2,20 HOLD=-90,90,-5.2,7.1
    fi
    [[ $SPLIT == val || -z $FOLD ]] || die "$CASE: --fold is for --split val (the test split is one strip)"
    if [[ $SPLIT == val ]]; then
      [[ -n $FOLD ]] || die "$CASE --split val needs --fold I/K: its val folds are bands of the western half"
      # Fold I of K: a band of the western half's block columns is scored; neither it nor the
      # eastern (test) half is trained on or fitted (the test half's fine truth never enters)
      HOLD=$(fold_band "$NWEST" "$NCOLS") TRAIN_HOLD="$HOLD;$TRAIN_HOLD"
    fi
    if [[ -n $HOLD_BOX ]]; then HOLD=$HOLD_BOX TRAIN_HOLD=$HOLD_BOX; fi
    SPLIT_SETS=() ;;
  icon)
    # One model, as issue 43 scores it: its config is chosen by the quadrant folds (--fold), for
    # one model (docs/evaluation.md, "Model choice by spatial cross-validation"); pooled pairs of
    # two training seeds (--seeds 42,43), the default before, score alike at twice the cost.
    VAR=ts BLOCK=0 SRC=$NUG/atm_phy_mag0004_1985.nc DEFAULT_SAMPLER=ddpm DEFAULT_MEMBERS=16
    ICON_GRID=$NUG/triangular_grid_ICON.nc
    # both covariates' slopes over 3 edge steps, ridge 1 ("A local regression on ICON")
    LOCAL_REF=(--local-slopes 3 --local-slope-ridge 1)
    # A val run without --fold trains on the test box: it is for tuning only.
    if [[ $SPLIT == test ]]; then HOLD=0,90,-180,0; else HOLD=-90,90,30,150; fi
    if [[ -n $FOLD ]]; then
      # The sphere's quadrants, 18 R2B0 cells each (8 cells straddle them): 1 the test split's.
      QUADRANTS=(0,90,-180,0 -90,0,-180,0 -90,0,0,180 0,90,0,180)
      if [[ $SPLIT == test ]]; then
        (( FOLD_K == 4 )) || die "icon --split test --fold I/4: the folds are the sphere's 4 quadrants"
        HOLD=${QUADRANTS[FOLD_I - 1]}
      else
        # Quadrant I + 1 is scored; neither it nor the test quadrant is trained on or enters
        # regression_cons (--hold-out of both, --region of the fold: scored where both select).
        (( FOLD_K == 3 )) || die "icon --split val --fold I/3: the folds are the 3 quadrants besides the test split's"
        SCORE_REGION=${QUADRANTS[FOLD_I]} HOLD="${QUADRANTS[FOLD_I]};${QUADRANTS[0]}"
      fi
    fi
    if [[ -n $HOLD_BOX ]]; then HOLD=$HOLD_BOX; fi
    TRAIN_HOLD=$HOLD SPLIT_SETS=() ;;
  *) die "unknown case '$CASE' (etopo5, tas, tas_months, eur11, icon, afr22 or hsurf)" ;;
esac
SEEDS=${SEEDS:-${DEFAULT_SEEDS:-}}
IFS=, read -r -a SEED_LIST <<<"$SEEDS"
for S in "${SEED_LIST[@]}"; do [[ $S =~ ^[0-9]+$ ]] || die "--seeds takes integers separated by commas, got '$SEEDS'"; done
if (( ${#SEED_LIST[@]} > 0 && ${MEMBERS:-$DEFAULT_MEMBERS} % ${#SEED_LIST[@]} != 0 )); then
  die "--members ${MEMBERS:-$DEFAULT_MEMBERS} is not a multiple of the ${#SEED_LIST[@]} seeds of --seeds $SEEDS"
fi
# The output and build folders are written into the YAML configs as plain text: a comma, '#',
# bracket, brace, quote or white space there would change what the YAML says.
bad_yaml="[][{},#\"'[:space:]]"
for d in "${OUT:-}" "$BUILD"; do
  [[ ! $d =~ $bad_yaml ]] ||
    die "the folder '$d' (--out or --build) goes into the YAML configs: it may not hold a comma, '#', bracket, brace, quote or space"
done
[[ -r $SRC ]] || die "input $SRC is missing (install the Debian package named in docs/evaluation.md)"
for exe in "$BUILD/bin/finecast-replay" "$BUILD/bin/finecast-downscale" "$BUILD/bin/finecast-eval" "$BUILD/bin/finecast-config"; do
  [[ -x $exe ]] || die "$exe not built (cmake --build $BUILD --target finecast_comin finecast-replay finecast-downscale finecast-eval finecast-config)"
done
[[ -r $BUILD/lib/libfinecast_comin.so ]] || die "$BUILD/lib/libfinecast_comin.so not built"

if [[ -z $OUT ]]; then
  OUT=out/eval/$CASE
  if [[ $DIRECTION == backward ]]; then OUT=${OUT}_backward; fi
  if [[ $SPLIT == val ]]; then OUT=${OUT}_val; fi
  if [[ -n $FOLD ]]; then OUT=${OUT}_fold${FOLD_I}of${FOLD_K}; fi
fi
if (( ${#CLIM_CUT[@]} )); then STATICS=(--static "$OUT/data/clim.nc:tas_clim"); fi
mkdir -p "$OUT/data" "$OUT/figures"
SUMMARY=$OUT/summary.txt
log() { echo "$*" | tee -a "$SUMMARY"; }
: > "$SUMMARY"
log "case $CASE, split $SPLIT, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
if [[ -n $HOLD ]]; then log "held out and scored: $HOLD${SCORE_REGION:+ (scored: $SCORE_REGION)}; not trained on: $TRAIN_HOLD"; fi
log "machine: $(nproc --all) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')), $(free -g | awk '/Mem:/{print $2}') GiB"
log "load before: $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min; other jobs share these cores)"

# 1. the split (spatial cases: one data file, and the covariates)
if [[ -n $HOLD ]]; then
  if (( ${#DATA_CUT[@]} )); then
    $PY scripts/eval_crop.py --input "$SRC" --var "$VAR" --output "$OUT/data/data.nc" "${DATA_CUT[@]}" | tee -a "$SUMMARY"
  else
    cp "$SRC" "$OUT/data/data.nc"
  fi
  if [[ $CASE == icon ]]; then
    # the surface fields finecast-host would hand a plugin: etopo5 averaged onto the R2B4 cells
    sed -e "s#^steps:.*#steps: 1#" configs/demo_host.yaml > "$OUT/host.yaml"
    "$BUILD/bin/finecast-host" "$OUT/host.yaml" --write-orography "$OUT/data/surface.nc" "${GEO_ARGS[@]}" | tee -a "$SUMMARY"
    STATICS=(--static "$OUT/data/surface.nc:topography_c" --static "$OUT/data/surface.nc:fr_land")
  fi
else
  $PY scripts/eval_crop.py --input "$SRC" --var "$VAR" --output "$OUT/data/train.nc" "${TRAIN_CUT[@]}" | tee -a "$SUMMARY"
  $PY scripts/eval_crop.py --input "$SRC" --var "$VAR" --output "$OUT/data/test.nc" "${TEST_CUT[@]}" | tee -a "$SUMMARY"
  if (( ${#CLIM_CUT[@]} )); then
    $PY scripts/eval_crop.py --input "$SRC" --var "$VAR" --output "$OUT/data/clim.nc" "${CLIM_CUT[@]}" | tee -a "$SUMMARY"
  fi
fi

# 2. the committed configs, with their paths pointed at this output folder and build
sed -e "s#out/eval/$CASE/#$OUT/#g" -e "s#build/lib/libfinecast_comin.so#$BUILD/lib/libfinecast_comin.so#" \
    -e "s#configs/eval_${CASE}_plugin.yaml#$OUT/plugin.yaml#" "configs/eval_$CASE.yaml" > "$OUT/run.yaml"
sed -e "s#out/eval/$CASE/#$OUT/#g" "configs/eval_${CASE}_plugin.yaml" > "$OUT/plugin.yaml"
# the spread inflation of the sampling: fitted on the val split, so none there; on the test split
# finecast-downscale takes sample.inflation from the config the checkpoint was trained with (see --help)
INFLATION_ARGS=()
if [[ -z $INFLATION && $SPLIT == val ]]; then INFLATION=1; fi
if [[ -n $INFLATION ]]; then INFLATION_ARGS=(--inflation "$INFLATION"); fi
if [[ -n $INFLATION_RANGE ]]; then INFLATION_ARGS+=(--inflation-range "$INFLATION_RANGE"); fi
if [[ -n $SPREAD_REGRESSION ]]; then INFLATION_ARGS+=(--spread-regression "$SPREAD_REGRESSION"); fi
if [[ -n $GLOBAL_BLEND ]]; then INFLATION_ARGS+=(--global-blend "$GLOBAL_BLEND"); fi

# 3. training: replay the training split through the plugin, once per seed of --seeds
train() {  # train CHECKPOINT_DIR LOG [--set ...]
  local dir=$1 replay_log=$2; shift 2
  rm -rf "$dir"
  REPLAY=("$BUILD/bin/finecast-replay" --config "$OUT/run.yaml" --progress lines "${SPLIT_SETS[@]}" "${TRAIN_THREADS[@]}"
          "${SETS[@]}" "$@"
          "${GEO_ARGS[@]}")
  if [[ -n $TRAIN_HOLD ]]; then REPLAY+=(--hold-out "$TRAIN_HOLD"); fi
  if [[ $RANKS -gt 1 ]]; then
    REPLAY=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpiexec -n "$RANKS" --oversubscribe "${REPLAY[@]}")
  fi
  log "train: ${REPLAY[*]}"
  t0=$(date +%s.%N)
  "${REPLAY[@]}" 2>&1 | tee "$replay_log"
  t1=$(date +%s.%N)
  log "train wall time: $(echo "$t1 - $t0" | bc) s (load after: $(cut -d' ' -f1-3 /proc/loadavg))"
  # An epoch line: "Epoch 3/300: avg loss = 0.41 (11 batches, 0.52 s, 680 samples/s)[; session ends in ~...]".
  epoch_seconds="$(grep -o 'batches, [0-9.]* s,' "$replay_log" | tr -dc '0-9.\n' | paste -sd+ | bc)"
  log "training epochs: $(grep -c 'Epoch [0-9]*/' "$replay_log" || true), sum of epoch times: ${epoch_seconds:-0} s"
}
CHECKPOINTS=()
if (( ${#SEED_LIST[@]} == 0 )); then
  CHECKPOINTS=(--checkpoint "$OUT/checkpoints")
  if [[ $SKIP_TRAIN == 0 ]]; then train "$OUT/checkpoints" "$OUT/replay.log"; fi
else
  for S in "${SEED_LIST[@]}"; do
    CHECKPOINTS+=(--checkpoint "$OUT/checkpoints_s$S")
    if [[ $SKIP_TRAIN == 0 ]]; then
      train "$OUT/checkpoints_s$S" "$OUT/replay_s$S.log" --set seed="$S" --set checkpoint.dir="$OUT/checkpoints_s$S" \
        --set sample.output="$OUT/replay_sample_s$S.nc"
    fi
  done
fi

# 4. the ensemble on the held-out data (finecast-downscale coarsens the fine field first); the
#    spatial cases sample only the held-out patches finecast-eval scores (--hold-out), with their
#    contexts from the whole field (the held-out patches see their true neighbours; issue 43)
TEST=$OUT/data/test.nc
HOLD_ARGS=()
if [[ -n $HOLD ]]; then TEST=$OUT/data/data.nc HOLD_ARGS=(--hold-out "$HOLD"); fi
if [[ -n $SCORE_REGION ]]; then HOLD_ARGS+=(--region "$SCORE_REGION"); fi
GRID_ARGS=()
if [[ $CASE == icon ]]; then GRID_ARGS=(--grid "$ICON_GRID" "${GEO_ARGS[@]}"); fi
DOWN=("$BUILD/bin/finecast-downscale" "${CHECKPOINTS[@]}" --input "$TEST" --var "$VAR" "${GRID_ARGS[@]}"
      "${STATICS[@]}" "${HOLD_ARGS[@]}" --output "$OUT/downscaled.nc" --members "${MEMBERS:-$DEFAULT_MEMBERS}" --device cpu
      --sampler "${SAMPLER:-$DEFAULT_SAMPLER}" --steps "$STEPS" --eta "$ETA" "${INFLATION_ARGS[@]}" --threads "$THREADS" --seed 42)
if [[ $ONLY_EVAL == 0 ]]; then
  log "downscale: ${DOWN[*]}"
  t0=$(date +%s.%N)
  "${DOWN[@]}" 2>&1 | tee "$OUT/downscale.log"
  t1=$(date +%s.%N)
  log "downscale wall time: $(echo "$t1 - $t0" | bc) s"
fi

# 5. scores (spatial cases: the held-out patches, regression_cons fitted on the others)
EVAL=("$BUILD/bin/finecast-eval" --truth "$TEST" --pred "$OUT/downscaled.nc" --var "$VAR"
      --json "$OUT/eval.json" --csv "$OUT/eval.csv")
if [[ $BLOCK -gt 0 ]]; then EVAL+=(--block "$BLOCK"); else EVAL+=("${GRID_ARGS[@]}" --coarse-level 0); fi
if [[ -n $HOLD ]]; then
  EVAL+=("${HOLD_ARGS[@]}" --baselines-out "$OUT/baselines.nc")
  # the regressions need covariates (afr22, the surface height itself, has none)
  if (( ${#STATICS[@]} )); then EVAL+=("${STATICS[@]}" --regression-out "$OUT/regression.json"); fi
fi
# the time split: regression_cons on the training months' mean, fitted on the training months
if [[ $CASE == tas_months ]]; then
  EVAL+=("${STATICS[@]}" --fit-on "$OUT/data/train.nc" --regression-out "$OUT/regression.json")
fi
EVAL+=("${LOCAL_REF[@]}")
log "eval: ${EVAL[*]}"
"${EVAL[@]}" 2>&1 | tee "$OUT/eval.txt"
# the regressions on the grid's other conservative interpolants too (finecast-eval fits them on one,
# bicubic or idw): the strongest regression is not always on it (docs/evaluation.md, "The strongest
# regression"); their rows and the noise references on them join eval.json as regression_cons_<I>,
# (regression_local_<I>), noise_white_<I>, noise_spectral_<I>
if [[ $CASE == eur11 || $CASE == icon || $CASE == tas_months ]]; then
  if [[ $CASE == icon ]]; then OTHERS=(linear idw_linear); else OTHERS=(bspline); fi
  FROM=()
  for OTHER in "${OTHERS[@]}"; do
    REG=()  # the same scoring with its own report and coefficients, no CSV or baselines file
    for ((i = 0; i < ${#EVAL[@]}; i++)); do
      case ${EVAL[i]} in
        --json) REG+=(--json "$OUT/eval_regression_$OTHER.json") && i=$((i + 1)) ;;
        --regression-out) REG+=(--regression-out "$OUT/regression_$OTHER.json") && i=$((i + 1)) ;;
        --csv | --baselines-out) i=$((i + 1)) ;;
        *) REG+=("${EVAL[i]}") ;;
      esac
    done
    REG+=(--regression-interpolant "$OTHER")
    log "eval on $OTHER: ${REG[*]}"
    "${REG[@]}" > "$OUT/eval_regression_$OTHER.txt" 2>&1 || die "finecast-eval on $OTHER failed: $OUT/eval_regression_$OTHER.txt"
    FROM+=(--from "$OUT/eval_regression_$OTHER.json")
  done
  "$PY" scripts/add_regression_rows.py --json "$OUT/eval.json" "${FROM[@]}" 2>&1 | tee -a "$SUMMARY"
fi

# the quality bars of issues 15 and 26 (docs/evaluation.md): EUR-11 RMSE <= 0.97 x the best regression
# baseline and CRPS < 0.85 x the noise reference's; ICON RMSE <= the best regression's and CRPS < 0.9 x the noise reference's
BARS=("$PY" scripts/eval_summary.py --json "$OUT/eval.json")
if [[ $CASE == eur11 ]]; then BARS+=(--factor 0.97 --against best_regression --noise-factor 0.85); fi
if [[ $CASE == icon ]]; then BARS+=(--factor 1 --against best_regression --noise-factor 0.9); fi
# issue 43's time split: RMSE at most the best baseline's, CRPS below the noise reference's
if [[ $CASE == tas_months ]]; then BARS+=(--factor 1 --against best_regression --noise-factor 1); fi
# a val split also prints what sample.inflation is fitted from (docs/evaluation.md, "Calibrated ensembles")
if [[ $SPLIT == val ]]; then BARS+=(--inflation-fit); fi
log "bars: ${BARS[*]}"
"${BARS[@]}" 2>&1 | tee -a "$SUMMARY"

# 6. figures
PLOT=("$PY" scripts/plot_eval.py --json "$OUT/eval.json" --out "$OUT/figures/$CASE")
log "plot: ${PLOT[*]}"
"${PLOT[@]}" 2>&1 | tee -a "$SUMMARY"
log "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
