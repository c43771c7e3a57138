#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The default demo: installs and builds (scripts/setup.sh), then runs the main job - an ICON-like
# model on the real R2B4 grid, on 4 MPI ranks, with the finecast plugin training and sampling in
# situ - draws a figure, and prints where the outputs are. About 3-5 minutes on 2 cores after
# the build.   scripts/demo.sh [extra finecast-host arguments]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$here/build}"
cd "$here"

"$here/scripts/setup.sh"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# OpenMP threads that spin at barriers steal the cores of 4 host ranks on a small machine.
export OMP_WAIT_POLICY=PASSIVE
out=out/demo
mkdir -p "$out"
# Every demo run starts fresh, and a fresh run keeps an output it finds (writing
# finecast_ts_<time>.nc beside it; docs/output.md): the last demo's samples go first, so that the
# scores and the figure below are this run's.
rm -f "$out/finecast_ts.nc" "$out"/finecast_ts_*.nc
echo "[demo] running: mpiexec -n 4 --oversubscribe $build_dir/bin/finecast-host configs/demo_host.yaml"
mpiexec -n 4 --oversubscribe "$build_dir/bin/finecast-host" configs/demo_host.yaml "$@" 2>&1 | tee "$out/run.log"

# Scores of the last sampling against the interpolation baselines and regression_cons (the host's
# surface height and land fraction as covariates, fitted on the run's own sampled steps of the
# host's field, so the regression is scored partly on what it was fitted on: a strong baseline).
echo "[demo] scoring the last sampling against the baselines (finecast-eval)"
"$build_dir/bin/finecast-host" configs/demo_host.yaml --write-orography "$out/surface.nc" > "$out/surface.log" 2>&1
last=$(/usr/bin/python3 -c "import netCDF4; print(len(netCDF4.Dataset('$out/finecast_ts.nc').dimensions['time']) - 1)")
"$build_dir/bin/finecast-eval" --pred "$out/finecast_ts.nc" --var ts --time "$last" \
  --static "$out/surface.nc:topography_c" --static "$out/surface.nc:fr_land" --fit-on "$out/finecast_ts.nc" \
  --json "$out/eval.json" --baselines-out "$out/baselines.nc" > "$out/eval.txt"

echo "[demo] drawing the figure"
/usr/bin/python3 scripts/plot_demo.py --input "$out/finecast_ts.nc" --output "$out/finecast_ts.png" \
  --baselines "$out/baselines.nc" --eval "$out/eval.json"

latest="$(ls -1 "$out"/checkpoints/ckpt_*.h5 2>/dev/null | tail -n 1 || true)"
cat <<MSG

[demo] done. Outputs:
  sampled ensembles (NetCDF): $here/$out/finecast_ts.nc
  latest checkpoint (HDF5):   ${latest:+$here/}${latest:-none written}
  figure (PNG):               $here/$out/finecast_ts.png
  log:                        $here/$out/run.log
  scores (finecast-eval):     $here/$out/eval.txt

[demo] the last sampling, area-weighted over the R2B4 cells (regression_cons fitted on the run's sampled steps):
MSG
/usr/bin/python3 scripts/eval_summary.py --json "$out/eval.json" --prefix "[demo]"
