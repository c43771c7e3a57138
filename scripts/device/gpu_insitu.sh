#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# One prepared try on a lent GPU machine without package access: builds the whole of finecast
# (scripts/device/build_cuda.sh --full) and runs the in-situ plugin on the GPU under the
# relocated Open MPI: a short finecast-host demo (2 ranks, device cuda), then a short
# finecast-replay; everything it learns goes to $OUT.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

usage() {
  cat <<'USAGE'
Usage: scripts/device/gpu_insitu.sh [options]

Run from the repository root on the GPU machine, with .deps/debs and .deps/data carried over
(scripts/device/fetch_debs.sh --full fills both here). Writes every log and result to $OUT
(default out/gpu_insitu), among them:
  diagnostics.txt   nvidia-smi, torch, nvcc, compilers, mpiexec --version, ldd of the plugin
  build.log         scripts/device/build_cuda.sh --full (the needed targets only)
  host.log          mpiexec -n 2 finecast-host (R2B4 grid, device cuda, a few coupling steps)
  replay.log        mpiexec -n 2 finecast-replay (the tas file, device cuda), unless --no-replay
  pyref.json/.log   finecast-bench plugin --python-reference: finecast against the reference Python
                    plugin in finecast-host (4 ranks, 120 steps), both on the device, unless --no-pyref
                    (needs numpy and mpi4py in PY and PY's development files for the plugin's loader)
  summary.txt       device lines, timings, exit codes
Each stage runs under `timeout` (build 300 s, host 150 s, replay 90 s, python reference 300 s; the
run stages before the python reference took 29 s on an H200 on 2026-11-26; a build took 79 s);
the script goes on past a failing run stage, so one try shows as much as it can. Exit status:
that of the first failing stage.

Options:
  --python PY       python with a CUDA torch (default: $FINECAST_PYTHON, else python3)
  --jobs N          build jobs (default: nproc)
  --steps N         finecast-host steps (default: 24)
  --device D        the plugin's device (default: cuda)
  --build-dir DIR   build directory (default: build-cuda)
  --skip-build      use an existing build in the build directory
  --all-libs        take every unpacked library from .deps, even those the machine has
                    (build_cuda.sh --all-libs; try it when the loader reports version mismatches)
  --no-replay       skip finecast-replay
  --no-pyref        skip the comparison with the reference Python plugin
  -h, --help        this text
USAGE
}

python="${FINECAST_PYTHON:-python3}"
jobs="$(nproc)"
steps=24 device=cuda build="$repo/build-cuda" skip_build=0 replay=1 pyref=1 libs_arg=()
while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --python) python="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --build-dir) build="$(mkdir -p "$2" && cd "$2" && pwd)"; shift 2 ;;
    --skip-build) skip_build=1; shift ;;
    --no-replay) replay=0; shift ;;
    --no-pyref) pyref=0; shift ;;
    --all-libs) libs_arg=(--all-libs); shift ;;
    *) echo "gpu_insitu: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

out="${OUT:-$repo/out/gpu_insitu}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
exec > >(tee -a "$out/gpu_insitu.log") 2>&1
say() { echo "gpu_insitu: $*"; }
summary() { echo "$*" | tee -a "$out/summary.txt"; }
status=0
t0=$SECONDS
cd "$repo"
data="$repo/.deps/data"

# ---- diagnostics first: one try should teach the most even if the build fails ----
# (no pipefail here: `cmake --version | head -1` ends cmake with SIGPIPE)
set +o pipefail
{
  echo "== date / host"; date -u; hostname; nproc; free -g | head -2
  echo "== nvidia-smi"; nvidia-smi 2>&1 || true
  echo "== torch"
  "$python" -c 'import torch, sys; print(sys.executable, torch.__version__, "cuda", torch.version.cuda,
"available", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")' 2>&1 || true
  echo "== python for the reference Python plugin (headers, libpython, numpy, mpi4py)"
  "$python" -c 'import sys, sysconfig, os, importlib.util as u
inc = sysconfig.get_paths()["include"]; lib = sysconfig.get_config_var("LIBDIR")
print(sys.version.split()[0], sys.base_prefix, "Python.h:", os.path.exists(os.path.join(inc, "Python.h")), inc)
print("libpython:", sysconfig.get_config_var("LDLIBRARY"), lib, "shared:", sysconfig.get_config_var("Py_ENABLE_SHARED"))
print("numpy:", u.find_spec("numpy") is not None, "mpi4py:", u.find_spec("mpi4py") is not None)' 2>&1 || true
  echo "== toolchain"; (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>&1 | tail -2
  cmake --version | head -1; g++ --version | head -1; ldd --version | head -1
  command -v ninja pkg-config pkgconf 2>&1 || true
  echo "== .deps"; du -sh .deps/debs .deps/data 2>&1 || true; ls .deps/data 2>&1 || true
} >"$out/diagnostics.txt" 2>&1
set -o pipefail
cat "$out/diagnostics.txt"
[[ -f "$data/triangular_grid_ICON.nc" && -f "$data/etopo_quarter.nc" ]] ||
  { say "error: $data lacks the grid or relief: run scripts/device/fetch_debs.sh --full here and carry .deps/data"; exit 1; }

# ---- build: the needed targets only ----
if ((!skip_build)); then
  targets="finecast_comin finecast_trainer_module finecast-host finecast-trainer"
  ((replay)) && targets+=" finecast-replay"
  ((pyref)) && targets+=" finecast-bench"  # with the Python plugin's loader where PY has its headers
  say "building ($targets) with $jobs jobs"
  tb=$SECONDS
  timeout 300 "$repo/scripts/device/build_cuda.sh" --full --python "$python" --jobs "$jobs" --build-dir "$build" \
    --no-tests --no-bench --targets "$targets" "${libs_arg[@]}" >"$out/build.log" 2>&1 || status=$?
  summary "build: exit $status, $((SECONDS - tb)) s"
  grep -E '^build_cuda:|error|Error' "$out/build.log" | grep -v 'libraries taken from' | head -40 || true
  cp "$build/CMakeCache.txt" "$out/CMakeCache.txt" 2>/dev/null || true
  ((status == 0)) || { say "the build failed; see build.log"; tail -40 "$out/build.log"; exit "$status"; }
fi
[[ -f "$build/env.sh" ]] || { say "error: $build/env.sh missing (build_cuda.sh --full writes it)"; exit 1; }
# shellcheck disable=SC1091
source "$build/env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE
mpi=(mpiexec --oversubscribe --mca pml ob1 --mca btl 'self,vader')
{
  echo "== env.sh"; cat "$build/env.sh"
  echo "== mpiexec"; command -v mpiexec; mpiexec --version 2>&1 | sed -n 1,2p
  echo "== mpiexec -n 2 hostname"; timeout 60 "${mpi[@]}" -n 2 hostname 2>&1 || echo "FAILED: $?"
  for f in lib/libfinecast_comin.so lib/libfinecast_trainer_module.so bin/finecast-host; do
    echo "== ldd $f"; ldd "$build/$f" 2>&1 | grep -E 'not found|mpi|netcdf|hdf5|yaml|fmt|fftw|torch|c10|cuda' || true
  done
} >>"$out/diagnostics.txt" 2>&1
sed -n '/== env.sh/,$p' "$out/diagnostics.txt"

# ---- finecast-host: the demo on the R2B4 grid, shortened, the plugin on the GPU ----
run="$out/run"
# shellcheck source=scripts/device/run_files.sh
source "$repo/scripts/device/run_files.sh"
write_host_run "$data" "$build" "$run" "$device"
# A few coupling steps: buffer 8 steps, train after 8 and every 8 (2 epochs), sample every 12.
overrides=(--set buffer.capacity=8 --set train.min_steps=8 --set train.every=8 --set train.epochs=2
  --set train.async=false --set sample.every=12 --set checkpoint.every=24 --set train.threads=4)
say "finecast-host: ${mpi[*]} -n 2 $build/bin/finecast-host $run/host.yaml --steps $steps ${overrides[*]}"
th=$SECONDS rc=0
timeout 150 "${mpi[@]}" -n 2 "$build/bin/finecast-host" "$run/host.yaml" --steps "$steps" "${overrides[@]}" \
  >"$out/host.log" 2>&1 || rc=$?
summary "finecast-host ($device, 2 ranks, $steps steps): exit $rc, $((SECONDS - th)) s"
((rc == 0 || status != 0)) || status=$rc
grep -i -E 'device|cuda|gpu|error|warning|s/step|per step|train|sampl|start-up' "$out/host.log" | head -60 |
  tee -a "$out/summary.txt" || true
tail -15 "$out/host.log"
ls -la "$run" "$run/checkpoints" >>"$out/summary.txt" 2>&1 || true

# ---- the GPU checkpoint continued on the CPU: 8 more steps, device cpu ----
tc=$SECONDS rc=0
timeout 90 "${mpi[@]}" -n 2 "$build/bin/finecast-host" "$run/host.yaml" --steps 8 "${overrides[@]}" \
  --set device=cpu --set "checkpoint.resume=$run/checkpoints" --set "checkpoint.dir=$run/checkpoints_cpu" \
  --set "sample.output=$run/finecast_ts_cpu.nc" >"$out/resume_cpu.log" 2>&1 || rc=$?
summary "finecast-host resumed on the CPU from the GPU checkpoint (2 ranks, 8 steps): exit $rc, $((SECONDS - tc)) s"
((rc == 0 || status != 0)) || status=$rc
grep -E 'device|Resumed|Training session|ERROR' "$out/resume_cpu.log" | head -10 | tee -a "$out/summary.txt" || true

# ---- external trainer: 2 host ranks + 1 finecast-trainer process on the GPU (train.placement external) ----
if [[ -x "$build/bin/finecast-trainer" ]]; then
  sed -e 's#^    comm: ""#    comm: finecast#' "$run/host.yaml" >"$run/host_external.yaml"
  te=$SECONDS rc=0
  timeout 120 "${mpi[@]}" -n 2 "$build/bin/finecast-host" "$run/host_external.yaml" --steps "$steps" "${overrides[@]}" \
    --set train.placement=external --set coupling.communicator=plugin --set "checkpoint.dir=$run/checkpoints_ext" \
    --set "sample.output=$run/finecast_ts_ext.nc" : -n 1 "$build/bin/finecast-trainer" --comm finecast \
    >"$out/external.log" 2>&1 || rc=$?
  summary "finecast-host (2 ranks) + finecast-trainer (1 process, $device): exit $rc, $((SECONDS - te)) s"
  ((rc == 0 || status != 0)) || status=$rc
  grep -E 'device|external|trainer|Training session|finished|ERROR' "$out/external.log" | head -14 |
    tee -a "$out/summary.txt" || true
fi

# ---- finecast-replay: the tas file replayed, the plugin on the GPU ----
if ((replay)) && [[ -x "$build/bin/finecast-replay" && -f "$data/tas_rectilinear_grid_2D.nc" ]]; then
  sed -e "s#/usr/share/ncarg/data/nug/#$data/#g" \
    -e "s#library: build/lib/#library: $build/lib/#" -e "s#options: configs/replay_tas_plugin.yaml#options: $run/replay_plugin.yaml#" \
    configs/replay_tas.yaml >"$run/replay.yaml"
  sed -e "s#^device: .*#device: $device#" -e "s#out/#$run/replay_out/#g" -e "s#/usr/share/ncarg/data/nug/#$data/#g" configs/replay_tas_plugin.yaml >"$run/replay_plugin.yaml"
  say "finecast-replay: ${mpi[*]} -n 2 $build/bin/finecast-replay $run/replay.yaml --epochs 2"
  tr=$SECONDS rc=0
  timeout 90 "${mpi[@]}" -n 2 "$build/bin/finecast-replay" "$run/replay.yaml" --epochs 2 >"$out/replay.log" 2>&1 || rc=$?
  summary "finecast-replay ($device, 2 ranks, 2 epochs): exit $rc, $((SECONDS - tr)) s"
  ((rc == 0 || status != 0)) || status=$rc
  grep -i -E 'device|cuda|error|s/step|per step|train' "$out/replay.log" | head -30 | tee -a "$out/summary.txt" || true
  tail -8 "$out/replay.log"
fi

# ---- against the reference Python plugin: same host, same steps, both trainers on the device ----
if ((pyref)); then
  site="$("$python" -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null || true)"
  pycheck="$("$python" -c 'import numpy, mpi4py, torch; print("numpy", numpy.__version__, "mpi4py", mpi4py.__version__)' 2>&1 | tail -1)"
  if [[ ! -e "$build/lib/libfinecast_python_adapter.so" ]]; then
    summary "python reference: skipped, no $build/lib/libfinecast_python_adapter.so (no development files for $python)"
  elif [[ "$pycheck" != numpy* ]]; then
    summary "python reference: skipped, $python cannot import numpy, mpi4py and torch: $pycheck"
  else
    # The embedded interpreter starts from the venv's base Python: it finds torch through PYTHONPATH.
    tp=$SECONDS rc=0
    PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" timeout 300 "$build/bin/finecast-bench" plugin --python-reference \
      --device "$device" --run "$run/host.yaml" --steps 120 --step-seconds 0.1 --mpiexec "${mpi[*]}" --json \
      >"$out/pyref.json" 2>"$out/pyref.log" || rc=$?
    summary "python reference ($device, 4 ranks, 120 steps, $pycheck): exit $rc, $((SECONDS - tp)) s"
    ((rc == 0 || status != 0)) || status=$rc
    tee -a "$out/summary.txt" <"$out/pyref.json"
    tail -20 "$out/pyref.log"
  fi
fi

# Small results come back with $OUT; the NetCDF/HDF5 outputs stay listed only.
find "$run" -name '*.json' -size -200k -exec cp {} "$out/" \; 2>/dev/null || true
summary "total: $((SECONDS - t0)) s, status $status"
exit "$status"
