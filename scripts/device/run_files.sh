# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Sourced by the GPU machine's scripts (gpu_insitu.sh, gpu_speed.sh): the in-situ demo's run
# files with their paths moved to a machine without libncarg-data and etopo5.
#
# write_host_run DATA BUILD RUN DEVICE: writes RUN/host.yaml (configs/demo_host.yaml: the R2B4
# grid and relief from DATA, no wall-time floor per step, the plugin of BUILD/lib) and
# RUN/demo.yaml (configs/demo.yaml on DEVICE, outputs under RUN). Run from the repository root.
write_host_run() {
  local data="$1" build="$2" run="$3" device="$4"
  mkdir -p "$run"
  sed -e "s#^grid: .*#grid: $data/triangular_grid_ICON.nc#" \
    -e "s#^orography: .*#orography: $data/etopo_quarter.nc#" \
    -e "s#^step_seconds: .*#step_seconds: 0#" -e "s#^progress_every: .*#progress_every: 4#" \
    -e "s#library: build/lib/#library: $build/lib/#" -e "s#options: configs/demo.yaml#options: $run/demo.yaml#" \
    configs/demo_host.yaml >"$run/host.yaml"
  sed -e "s#^  file: /usr/share/ncarg/data/nug/triangular_grid_ICON.nc#  file: $data/triangular_grid_ICON.nc#" \
    -e "s#^device: .*#device: $device#" -e "s#out/demo/#$run/#g" configs/demo.yaml >"$run/demo.yaml"
}
