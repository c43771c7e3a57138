#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# One prepared try on a lent GPU machine: what reading a GPU host's fields costs the host per
# step, through ComIn's host copies against through the device pointers (coupling.device_fields).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

usage() {
  cat <<'USAGE'
Usage: scripts/device/gpu_device_fields.sh [options]

Run from the repository root on the GPU machine, with .deps/debs and .deps/data carried over
(scripts/device/fetch_debs.sh --full fills both here). Builds the plugin, its trainer module and
finecast-host with CUDA (scripts/device/build_cuda.sh --full), then runs finecast-host on the
R2B4 grid with device copies of its fields (device_fields: true, as ICON built for GPUs):

  coupling   4 ranks, 90 levels, no training: the plugin reads ts (2-D) and then temp at its
             lowest level (3-D), once with coupling.device_fields=off (ComIn copies each whole
             field the plugin reads to the host before every callback) and once with auto (the
             plugin reads the owned cells of the level from the device pointers), twice each,
             interleaved. Reported: the host's time in the plugin's callbacks per step (ComIn's
             copies included) and the bytes moved.
  training   2 ranks, the demo shortened (buffer 8, training every 8 for 2 epochs, sampling every
             12) on the GPU with off and with auto; their buffers must be equal bitwise.

Writes the logs and summary.txt to $OUT (default out/gpu_device_fields). Each stage runs under
`timeout`; the script goes on past a failing run. Exit status: that of the first failure.

Options:
  --python PY       python with a CUDA torch (default: $FINECAST_PYTHON, else python3)
  --jobs N          build jobs (default: nproc)
  --steps N         steps of each coupling run (default: 96)
  --build-dir DIR   build directory (default: build-cuda)
  --skip-build      use an existing build in the build directory
  -h, --help        this text
USAGE
}

python="${FINECAST_PYTHON:-python3}"
jobs="$(nproc)"
steps=96 build="$repo/build-cuda" skip_build=0
while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --python) python="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --build-dir) build="$(mkdir -p "$2" && cd "$2" && pwd)"; shift 2 ;;
    --skip-build) skip_build=1; shift ;;
    *) echo "gpu_device_fields: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

out="${OUT:-$repo/out/gpu_device_fields}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
exec > >(tee -a "$out/gpu_device_fields.log") 2>&1
say() { echo "gpu_device_fields: $*"; }
summary() { echo "$*" | tee -a "$out/summary.txt"; }
status=0
t0=$SECONDS
cd "$repo"
data="$repo/.deps/data"
[[ -f "$data/triangular_grid_ICON.nc" && -f "$data/etopo_quarter.nc" ]] ||
  { say "error: $data lacks the grid or relief: run scripts/device/fetch_debs.sh --full here and carry .deps/data"; exit 1; }
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; } 2>&1 | tee "$out/diagnostics.txt" || true

if ((!skip_build)); then
  tb=$SECONDS
  timeout 300 "$repo/scripts/device/build_cuda.sh" --full --python "$python" --jobs "$jobs" --build-dir "$build" \
    --no-tests --no-bench --targets "finecast_comin finecast_trainer_module finecast-host" >"$out/build.log" 2>&1 ||
    status=$?
  summary "build: exit $status, $((SECONDS - tb)) s"
  ((status == 0)) || { tail -40 "$out/build.log"; exit "$status"; }
fi
# shellcheck disable=SC1091
source "$build/env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=2
mpi=(mpiexec --oversubscribe --bind-to none --mca pml ob1 --mca btl 'self,vader')

run="$out/run"
mkdir -p "$run"
sed -e "s#^grid: .*#grid: $data/triangular_grid_ICON.nc#" \
  -e "s#^orography: .*#orography: $data/etopo_quarter.nc#" \
  -e "s#^step_seconds: .*#step_seconds: 0#" -e "s#^progress_every: .*#progress_every: 0#" \
  -e "s#library: build/lib/#library: $build/lib/#" -e "s#options: configs/demo.yaml#options: $run/demo.yaml#" \
  configs/demo_host.yaml >"$run/host.yaml"
printf 'device_fields: true\nnlev: 90\n' >>"$run/host.yaml"
sed -e "s#^  file: /usr/share/ncarg/data/nug/triangular_grid_ICON.nc#  file: $data/triangular_grid_ICON.nc#" \
  -e "s#^device: .*#device: cuda#" -e "s#out/demo/#$run/#g" configs/demo.yaml >"$run/demo.yaml"
sed -e 's#^fields: \[ts\]#fields: [{name: temp, level: 90}]#' "$run/demo.yaml" >"$run/demo_temp.yaml"
sed -e "s#options: $run/demo.yaml#options: $run/demo_temp.yaml#" "$run/host.yaml" >"$run/host_temp.yaml"

# ---- coupling alone: no session, no sampling within the run ----
quiet=(--set buffer.capacity=200 --set train.min_steps=200 --set sample.every=100000 --set checkpoint.every=100000
  --set sample.write_back= --set checkpoint.at_host_restart=false --set train.async=true --set train.threads=4)
coupling_run() {  # NAME HOSTFILE MODE
  local rc=0 t=$SECONDS
  timeout 120 "${mpi[@]}" -n 4 "$build/bin/finecast-host" "$2" --steps "$steps" "${quiet[@]}" \
    --set "coupling.device_fields=$3" --set "checkpoint.dir=$run/ckpt_$1" --set "sample.output=$run/$1.nc" \
    >"$out/$1.log" 2>&1 || rc=$?
  summary "== $1 (device_fields=$3): exit $rc, $((SECONDS - t)) s"
  ((rc == 0 || status != 0)) || status=$rc
  grep -E 'finished [0-9]+ steps|ComIn device sync|coupling.device_fields|device fields:|ERROR' "$out/$1.log" |
    tee -a "$out/summary.txt" || true
}
for rep in 1 2; do
  coupling_run "ts_off_$rep" "$run/host.yaml" off
  coupling_run "ts_auto_$rep" "$run/host.yaml" auto
  coupling_run "temp_off_$rep" "$run/host_temp.yaml" off
  coupling_run "temp_auto_$rep" "$run/host_temp.yaml" auto
done

# ---- training and sampling on the GPU: the same buffer through either path ----
short=(--set buffer.capacity=8 --set train.min_steps=8 --set train.every=8 --set train.epochs=2
  --set train.async=false --set sample.every=12 --set checkpoint.every=24 --set train.threads=4)
for mode in off auto; do
  rc=0 t=$SECONDS
  timeout 150 "${mpi[@]}" -n 2 "$build/bin/finecast-host" "$run/host.yaml" --steps 24 "${short[@]}" \
    --set "coupling.device_fields=$mode" --set "checkpoint.dir=$run/train_$mode" \
    --set "sample.output=$run/train_$mode.nc" >"$out/train_$mode.log" 2>&1 || rc=$?
  summary "== train_$mode: exit $rc, $((SECONDS - t)) s"
  ((rc == 0 || status != 0)) || status=$rc
  grep -E 'finished [0-9]+ steps|ComIn device sync|coupling.device_fields|Using device|Training session|ERROR' \
    "$out/train_$mode.log" | head -12 | tee -a "$out/summary.txt" || true
done
"$python" - "$run/train_off" "$run/train_auto" <<'PY' 2>&1 | tee -a "$out/summary.txt" || status=1
import glob, sys
import h5py, numpy as np
def newest(d):
    files = sorted(glob.glob(d + "/buffer_*.h5"))
    if not files:
        sys.exit(f"no buffer snapshot in {d}")
    return files[-1]
a, b = newest(sys.argv[1]), newest(sys.argv[2])
diffs, n = [], 0
def visit(name, obj):
    global n
    if isinstance(obj, h5py.Dataset):
        n += 1
        x, y = obj[()], h5py.File(b, "r")[name][()]
        if not np.array_equal(x, y):
            diffs.append(name)
h5py.File(a, "r").visititems(visit)
print(f"buffers {a} vs {b}: {n} datasets, {'bitwise equal' if not diffs else 'DIFFER in ' + ', '.join(diffs)}")
sys.exit(1 if diffs or n == 0 else 0)
PY
summary "total: $((SECONDS - t0)) s, status $status"
exit "$status"
