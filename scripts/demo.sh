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
echo "[demo] running: mpiexec -n 4 --oversubscribe $build_dir/bin/finecast-host configs/demo_host.yaml"
mpiexec -n 4 --oversubscribe "$build_dir/bin/finecast-host" configs/demo_host.yaml "$@" 2>&1 | tee "$out/run.log"

echo "[demo] drawing the figure"
/usr/bin/python3 scripts/plot_demo.py --input "$out/finecast_ts.nc" --output "$out/finecast_ts.png"

latest="$(ls -1 "$out"/checkpoints/ckpt_*.h5 2>/dev/null | tail -n 1 || true)"
cat <<MSG

[demo] done. Outputs:
  sampled ensembles (NetCDF): $here/$out/finecast_ts.nc
  latest checkpoint (HDF5):   ${latest:+$here/}${latest:-none written}
  figure (PNG):               $here/$out/finecast_ts.png
  log:                        $here/$out/run.log
MSG
