#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/plot_demo.py on the output of a real (tiny) finecast-host run on the R2B4 grid: the PNG
# is written, and the scores it prints equal an independent computation (xarray; cell areas by
# L'Huilier's theorem from the grid file's own vertices instead of the triple product of the
# output's corners; the sorted-member form of the ensemble CRPS instead of the pairwise one).
# --time by date draws the step it names.
set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
BIN="${FINECAST_BINARY_DIR:-$SRC/build}"
PY=/usr/bin/python3
GRID=/usr/share/ncarg/data/nug/triangular_grid_ICON.nc
ORO=/usr/share/ferret-vis/data/etopo20.cdf
for f in "$BIN/bin/finecast-host" "$BIN/lib/libfinecast_comin.so" "$GRID" "$ORO"; do
  [[ -e "$f" ]] || { echo "skipped: $f is missing"; exit 77; }
done
"$PY" -c "import matplotlib, netCDF4, xarray" 2>/dev/null || { echo "skipped: $PY lacks matplotlib/netCDF4/xarray"; exit 77; }

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
work="$(mktemp -d "${TMPDIR:-/tmp}/finecast-plot-test.XXXXXX")"
trap 'if ((failures == 0)); then rm -rf "$work"; else echo "kept $work"; fi' EXIT
cd "$work"

cat >plugin.yaml <<YAML
fields: [ts]
seed: 5
device: cpu
grid: {type: icon, file: $GRID, coarse_level: 0}
patch: {orography: topography_c}
buffer: {capacity: 4}
model: {hidden: 16, depth: 1, time_embedding: 8, diffusion_steps: 5}
train: {async: false, every: 4, min_steps: 4, epochs: 1, batch_size: 128, warmup_steps: 1, threads: 1}
sample: {every: 4, members: 3, steps: 2, output: out.nc}
checkpoint: {dir: ckpt, every: 0}
YAML
cat >host.yaml <<YAML
grid: $GRID
orography: $ORO
orography_variable: ROSE
start: 1979-01-01T00:00:00
dt: 1800
steps: 8
nproma: 24
nlev: 2
plugins:
  - {name: finecast, library: $BIN/lib/libfinecast_comin.so, options: plugin.yaml}
YAML
mpiexec -n 2 --oversubscribe "$BIN/bin/finecast-host" host.yaml >host.log 2>&1 \
  || { cat host.log; fail "finecast-host failed"; exit 1; }

plot() { "$PY" "$SRC/scripts/plot_demo.py" --input out.nc --orography "$ORO:ROSE" "$@"; }
out="$(plot --output last.png)" || { echo "$out"; fail "plot_demo.py failed"; exit 1; }
echo "$out"
[[ "$(head -c 8 last.png | od -An -c | tr -d ' ')" == '211PNG\r\n032\n' ]] || fail "last.png is not a PNG"
size="$(stat -c %s last.png)"
((size > 50000)) || fail "last.png is only $size bytes"

# The printed scores against an independent computation.
cat >independent.py <<'PY'
import re, sys
import numpy as np, xarray as xr
line = sys.argv[1]
grid = xr.open_dataset(sys.argv[2])
t = int(sys.argv[3])
names = ["rmse_mean", "rmse_coarse", "crps", "crps_coarse"]
pattern = (r"ensemble-mean RMSE (\S+) K, coarse input RMSE (\S+) K; "
           r"CRPS (\S+) K, coarse input CRPS (\S+) K")
m = re.search(pattern, line)
if not m:
    sys.exit(f"no scores in: {line}")
printed = dict(zip(names, map(float, m.groups())))
ds = xr.open_dataset("out.nc").isel(time=t)
lon, lat = grid.clon_vertices.values, grid.clat_vertices.values  # radians, (ncells, 3)
def side(i, j):  # great-circle distance between corners i and j (haversine)
    h = np.sin((lat[:, j] - lat[:, i]) / 2) ** 2 + np.cos(lat[:, i]) * np.cos(lat[:, j]) * np.sin((lon[:, j] - lon[:, i]) / 2) ** 2
    return 2 * np.arcsin(np.sqrt(h))
a, b, cc = side(1, 2), side(2, 0), side(0, 1)
s = (a + b + cc) / 2
area = 4 * np.arctan(np.sqrt(np.tan(s / 2) * np.tan((s - a) / 2) * np.tan((s - b) / 2) * np.tan((s - cc) / 2)))
w = area / area.sum()
x = ds.ts.values.astype(np.float64)            # (realization, ncells)
y = ds.ts_host.values.astype(np.float64)
c = ds.ts_coarse.values.astype(np.float64)
mean = ds.ts_mean.values.astype(np.float64)
n = x.shape[0]
xs = np.sort(x, axis=0)
i = np.arange(1, n + 1)[:, None]
# CRPS of the empirical distribution, sorted-member form: 2/n^2 sum_i (x_(i) - y) (n 1{y < x_(i)} - i + 1/2)
crps = 2.0 / n**2 * np.sum((xs - y) * (n * (y < xs) - i + 0.5), axis=0)
mine = {
    "rmse_mean": np.sqrt(np.sum(w * (mean - y) ** 2)),
    "rmse_coarse": np.sqrt(np.sum(w * (c - y) ** 2)),
    "crps": np.sum(w * crps),
    "crps_coarse": np.sum(w * np.abs(c - y)),
}
bad = [f"{k}: printed {printed[k]:.6g}, independent {mine[k]:.6g}" for k in names
       if not abs(printed[k] - mine[k]) <= 2e-4 * abs(mine[k])]
# The scores must say something: the coarse input is worse than nothing only if they are broken.
if not mine["rmse_coarse"] > 0.01:
    bad.append(f"coarse RMSE {mine['rmse_coarse']} K: the truth and the coarse field are the same?")
print("independent: " + ", ".join(f"{k} {mine[k]:.6g}" for k in names))
if bad:
    sys.exit("\n".join(bad))
PY
score_line="$(grep 'plot_demo: scores of ts at' <<<"$out" || true)"
[[ -n "$score_line" ]] || fail "plot_demo.py printed no scores"
"$PY" independent.py "$score_line" "$GRID" -1 || fail "the printed scores differ from the independent ones"

# --time by date: the first record (model time of the sampling at step 4).
date="$("$PY" -c "import netCDF4 as n; f = n.Dataset('out.nc'); t = f['time']; print(n.num2date(t[0], t.units, getattr(t, 'calendar', 'standard')).isoformat())")"
out0="$(plot --output first.png --time "$date")" || fail "plot_demo.py --time $date failed"
[[ -s first.png ]] || fail "first.png not written"
line0="$(grep 'plot_demo: scores of ts at' <<<"$out0" || true)"
[[ "$line0" != "$score_line" ]] || fail "--time $date drew the last step again"
"$PY" independent.py "$line0" "$GRID" 0 || fail "scores of --time $date differ from those of step 0"
[[ "$(plot --output x.png --time 0 | grep 'scores of')" == "$line0" ]] || fail "--time 0 and --time $date differ"

# The demo's scoring path (scripts/demo.sh): finecast-eval with the host's surface fields as
# covariates writes every baseline's field (--baselines-out), plot_demo.py draws the best one,
# and eval_summary.py prints the model beside the baselines. Each baseline's written field must
# give the RMSE the report lists for it.
"$BIN/bin/finecast-host" host.yaml --write-orography surface.nc >surface.log 2>&1 \
  || { cat surface.log; fail "finecast-host --write-orography failed"; }
last="$("$PY" -c "import netCDF4; print(len(netCDF4.Dataset('out.nc').dimensions['time']) - 1)")"
"$BIN/bin/finecast-eval" --pred out.nc --var ts --time "$last" --static surface.nc:topography_c \
  --static surface.nc:fr_land --fit-on out.nc --json eval.json --baselines-out baselines.nc >eval.txt 2>&1 \
  || { cat eval.txt; fail "finecast-eval --baselines-out failed"; }
cat >baselines.py <<'PY'
import json, sys
import numpy as np, netCDF4
rep = json.load(open("eval.json"))
t = int(sys.argv[1])
with netCDF4.Dataset("out.nc") as f:
    y = np.asarray(f["ts_host"][t], dtype=np.float64)
with netCDF4.Dataset(sys.argv[2]) as g:  # cell areas by L'Huilier's theorem, as independent.py
    lon, lat = np.asarray(g["clon_vertices"][:]), np.asarray(g["clat_vertices"][:])
def side(i, j):
    h = np.sin((lat[:, j] - lat[:, i]) / 2) ** 2 + np.cos(lat[:, i]) * np.cos(lat[:, j]) * np.sin((lon[:, j] - lon[:, i]) / 2) ** 2
    return 2 * np.arcsin(np.sqrt(h))
a, b_, c = side(1, 2), side(2, 0), side(0, 1)
s = (a + b_ + c) / 2
w = 4 * np.arctan(np.sqrt(np.tan(s / 2) * np.tan((s - a) / 2) * np.tan((s - b_) / 2) * np.tan((s - c) / 2)))
names = [r["name"] for r in rep["predictions"] if r["name"] != "model"]
assert "regression_cons" in names, names
bad = []
with netCDF4.Dataset("baselines.nc") as b:
    if list(b["truth_step"][:]) != [t]:  # one scored step, the baselines along time
        bad.append(f"truth_step {list(b['truth_step'][:])}, expected [{t}]")
    for r in rep["predictions"]:
        # The model and the noise reference (an ensemble around the best baseline) are no
        # deterministic baseline fields.
        if r["name"] == "model" or r["name"].startswith("noise_"):
            continue
        if r["name"] not in b.variables:
            bad.append(f"baselines.nc lacks {r['name']}")
            continue
        x = np.asarray(b[r["name"]][0], dtype=np.float64)
        rmse = np.sqrt(np.sum(w * (x - y) ** 2) / np.sum(w))
        if not abs(rmse - r["rmse"]) <= 1e-3 * r["rmse"]:
            bad.append(f"{r['name']}: RMSE of the written field {rmse:.6g}, report {r['rmse']:.6g}")
# ICON: each cell's patch and weight, as the scores grouped and weighted them: every patch holds
# as many cells, the nearest baseline (its patch's coarse value) is constant in each patch and
# differs between patches, and cell_area is proportional to the cell areas above.
with netCDF4.Dataset("baselines.nc") as b:
    patch = np.asarray(b["coarse_cell"][:], dtype=np.float64)
    area = np.asarray(b["cell_area"][:], dtype=np.float64)
    near = np.asarray(b["nearest"][0], dtype=np.float64)
    scored = np.asarray(b["scored"][:], dtype=np.float64)
if not np.all(scored == 1):  # no --region: every patch is scored
    bad.append(f"scored is 0 in {np.sum(scored != 1)} cells without --region")
if not np.array_equal(patch, np.round(patch)) or patch.min() != 0:
    bad.append("coarse_cell holds no 0-based patch indices")
else:
    patch = patch.astype(int)
    counts = np.bincount(patch)
    if counts.min() != counts.max():
        bad.append(f"coarse_cell: patches of {counts.min()} to {counts.max()} cells")
    spread = max(np.ptp(near[patch == k]) for k in range(len(counts)))
    if spread != 0 or len(np.unique(near)) != len(counts):
        bad.append(f"coarse_cell does not group the cells by patch (nearest varies by {spread} inside one)")
ratio = area / w
if not np.ptp(ratio) <= 1e-6 * ratio.mean():
    bad.append(f"cell_area is not proportional to the cell areas ({ratio.min()} to {ratio.max()} x)")
print("baselines.nc: " + ", ".join(names))
if bad:
    sys.exit("\n".join(bad))
PY
"$PY" baselines.py "$last" "$GRID" || fail "the fields of --baselines-out do not give the reported scores"
# With --region, scored marks exactly the cells the report scored: whole patches, as many cells
# as the model row's n_points, some but not all of them.
"$BIN/bin/finecast-eval" --pred out.nc --var ts --time "$last" --region 0,90,-180,0 --json region.json \
  --baselines-out region.nc >region.txt 2>&1 || { cat region.txt; fail "finecast-eval --region --baselines-out failed"; }
"$PY" - <<'PY' || fail "--baselines-out's scored does not mark the patches --region scored"
import json, sys
import numpy as np, netCDF4
model = [r for r in json.load(open("region.json"))["predictions"] if r["name"] == "model"][0]
with netCDF4.Dataset("region.nc") as b:
    patch = np.asarray(b["coarse_cell"][:]).astype(int)
    scored = np.asarray(b["scored"][:])
per_patch = np.bincount(patch, scored) / np.bincount(patch)
if not np.all((per_patch == 0) | (per_patch == 1)):
    sys.exit("scored splits a patch")
if not 0 < scored.sum() < scored.size or scored.sum() != model["n_points"]:
    sys.exit(f"scored marks {scored.sum():.0f} of {scored.size} cells, the report scored {model['n_points']}")
print(f"region.nc: {int(per_patch.sum())} of {len(per_patch)} patches scored")
PY
out_b="$(plot --output best.png --baselines baselines.nc --eval eval.json)" || { echo "$out_b"; fail "plot_demo.py --baselines failed"; }
[[ -s best.png ]] || fail "best.png not written"
summary="$("$PY" "$SRC/scripts/eval_summary.py" --json eval.json --prefix "[demo] ")" || fail "eval_summary.py failed"
echo "$summary"
grep -q "^\[demo\]   regression_cons " <<<"$summary" || fail "eval_summary.py lists no regression_cons"
grep -q "sqrt(1+1/3) x best baseline" <<<"$summary" || fail "eval_summary.py checks no RMSE bar for 3 members"
# issue 26's verdicts: spread/RMSE in 0.85..1.15 of the model row, CRPS against F x the noise reference
sr="$("$PY" -c "import json; m=[r for r in json.load(open('eval.json'))['predictions'] if r['name']=='model'][0]; \
r=m['spread']/m['rmse']; print(('met   ' if 0.85<=r<=1.15 else 'MISSED')+f' spread/RMSE {r:.3f} in 0.85..1.15')")"
grep -qF "[demo]   $sr" <<<"$summary" || fail "eval_summary.py: no verdict '$sr'"
fit="$("$PY" -c "import json; m=[r for r in json.load(open('eval.json'))['predictions'] if r['name']=='model'][0]; \
print(f\"({m['rmse']/m['spread']:.3f} for this seed alone)\")")"
"$PY" "$SRC/scripts/eval_summary.py" --json eval.json --inflation-fit | grep "^inflation fit: " | grep -F "$fit" >/dev/null ||
  fail "eval_summary.py --inflation-fit: no line with $fit"
for f in 0.001 1000; do
  want=$([[ $f == 0.001 ]] && echo MISSED || echo "met   ")
  verdict="$("$PY" "$SRC/scripts/eval_summary.py" --json eval.json --noise-factor $f | grep "x the stronger noise reference" || true)"
  [[ $verdict == *"$want CRPS"* ]] || fail "--noise-factor $f: want a '$want' CRPS verdict, got '$verdict'"
done

# Clear errors for a step that is not there.
set +e
err="$(plot --output x.png --time 1999-01-01 2>&1)"
rc=$?
set -e
((rc != 0)) || fail "--time 1999-01-01 succeeded"
[[ "$err" == *"--time 1999-01-01: out.nc has no step at 1999-01-01T00:00:00"* ]] || fail "unclear error: $err"

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "plot_demo.py: all checks passed"
