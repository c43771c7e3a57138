#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# One prepared try for the GPU speed work on a lent GPU machine without package access: builds
# finecast (scripts/device/build_cuda.sh --full), runs the CUDA tests of the captured step and
# sampler, the trainer benchmark on the GPU beside PyTorch (with the anatomy of the captured
# graphs), the in-situ comparison with the reference Python plugin on the GPU, and the trainer
# benchmark on the machine's CPU; at most 8 files to $OUT (what the device tool brings back).
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

usage() {
  cat <<'USAGE'
Usage: scripts/device/gpu_speed.sh [options]

Run from the repository root on the GPU machine, with .deps/debs and .deps/data carried over
(scripts/device/fetch_debs.sh --full fills both here). Stages, each under `timeout`, in order of
importance; a failing stage does not stop the later ones (except the build):
  1. build       build_cuda.sh --full: plugin, host, trainer module, finecast-bench (with the
                 Python plugin's loader where PY has development files), finecast_trainer_tests
  2. tests       the CUDA tests of the captured paths (test_cuda.cpp), GPU against CPU/eager
  3. bench       finecast-bench trainer --device cuda --threads 1 beside PyTorch on the GPU, then
                 again with --noise-generator philox (bench_cuda.json: one JSON object a line)
  4. insitu      finecast-bench plugin --python-reference --device cuda: finecast and the
                 reference Python plugin in finecast-host (4 ranks, R2B4, 120 steps); without
                 a Python that can embed (headers, libpython, numpy, mpi4py) finecast's cases alone
  5. cpu         finecast-bench trainer --device cpu --threads 16 (reference at 16 threads)
Files in $OUT (default out/gpu_speed): summary.txt, diagnostics.txt, stages.log (build and
progress output), cuda_tests.txt, bench_cuda.json, pyref.json, pyref.log, bench_cpu.json.

Options:
  --python PY       python with a CUDA torch (default: $FINECAST_PYTHON, else python3)
  --jobs N          build jobs (default: nproc)
  --skip-build      use the existing build-cuda (a rerun on a warm machine)
  --only LIST       comma-separated stages to run (default: all; e.g. --only insitu,cpu)
  --steps N         host steps of the in-situ comparison (default 120)
  --deadline S      start no stage after S seconds (default 450), so that the run ends inside
                    the device call's limit with the files of the stages done
  -h, --help        this text
USAGE
}

python="${FINECAST_PYTHON:-python3}"
jobs="$(nproc)"
skip_build=0 only="build,tests,bench,insitu,cpu" steps=120 deadline=450
while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --python) python="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --skip-build) skip_build=1; shift ;;
    --only) only="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --deadline) deadline="$2"; shift 2 ;;
    *) echo "gpu_speed: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
((skip_build)) && only="${only//build/}"
wants() {
  [[ ",$only," == *",$1,"* ]] || return 1
  ((SECONDS - t0 < deadline)) && return 0
  summary "$1: skipped, $((SECONDS - t0)) s past the start (--deadline $deadline)"
  return 1
}

out="${OUT:-$repo/out/gpu_speed}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
build="$repo/build-cuda"
data="$repo/.deps/data"
log="$out/stages.log"
summary() { echo "$*" | tee -a "$out/summary.txt"; }
status=0
t0=$SECONDS
cd "$repo" || exit 1
stage_done() {  # name rc start
  summary "$1: exit $2, $((SECONDS - $3)) s (total $((SECONDS - t0)) s)"
  (($2 == 0 || status != 0)) || status=$2
}

{
  echo "== date / host"; date -u; hostname; nproc; free -g | head -2
  echo "== git"; git log --oneline -1 2>/dev/null || true
  echo "== nvidia-smi"; nvidia-smi 2>&1 || true
  echo "== torch / python"
  "$python" -c 'import sys, sysconfig, os, importlib.util as u, torch
inc = sysconfig.get_paths()["include"]
print(sys.executable, sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU")
print("Python.h:", os.path.exists(os.path.join(inc, "Python.h")), inc, "libpython:",
      sysconfig.get_config_var("LDLIBRARY"), sysconfig.get_config_var("LIBDIR"))
print("numpy:", u.find_spec("numpy") is not None, "mpi4py:", u.find_spec("mpi4py") is not None)' 2>&1 || true
  echo "== toolchain"; (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>&1 | tail -1
  cmake --version | sed -n 1p; g++ --version | sed -n 1p
} >"$out/diagnostics.txt" 2>&1
sed -n '/== nvidia-smi/,/== toolchain/p' "$out/diagnostics.txt" | grep -E 'H200|H100|Driver|torch|Python.h|numpy' |
  tee -a "$out/summary.txt"

# ---- 1. build ----
targets="finecast_comin finecast_trainer_module finecast-host finecast-bench finecast_trainer_tests"
if wants build; then
  tb=$SECONDS rc=0
  timeout 300 "$repo/scripts/device/build_cuda.sh" --full --python "$python" --jobs "$jobs" --build-dir "$build" \
    --no-tests --no-bench --targets "$targets" >"$log" 2>&1 || rc=$?
  stage_done build "$rc" "$tb"
  grep -E '^build_cuda:|error:' "$log" | grep -v 'libraries taken' | head -30 | tee -a "$out/summary.txt"
  ((rc == 0)) || { tail -30 "$log"; exit "$rc"; }
fi
[[ -f "$build/env.sh" ]] || { summary "error: $build/env.sh missing: the build has not run"; exit 1; }
# shellcheck disable=SC1091
source "$build/env.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=PASSIVE
site="$("$python" -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null || true)"
{
  echo "== mpi4py under the relocated Open MPI"
  PYTHONPATH="$site" timeout 30 "$python" -c 'from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0])' 2>&1 || echo "FAILED: $?"
  echo "== python adapter"; ls -la "$build/lib/libfinecast_python_adapter.so" 2>&1
  grep -E '^Python3_(EXECUTABLE|INCLUDE_DIR|LIBRARY)' "$build/CMakeCache.txt" 2>&1
} >>"$out/diagnostics.txt" 2>&1

# ---- 2. CUDA tests of the captured paths ----
if wants tests; then
  tt=$SECONDS rc=0
  timeout 150 "$build/bin/finecast_trainer_tests" \
    --gtest_filter='Cuda.GraphReplayed*:Cuda.Sampler*:Cuda.Captured*:Cuda.Fused*:Cuda.Philox*:Cuda.TrainingFollows*:Cuda.AutoSelects*:Philox.*:GraphPath.*' \
    >"$out/cuda_tests.txt" 2>&1 || rc=$?
  stage_done tests "$rc" "$tt"
  grep -E '^(cuda|philox|sampler|fused)|FAILED|PASSED|SKIPPED \]' "$out/cuda_tests.txt" | head -30 | tee -a "$out/summary.txt"
fi

# ---- 3. the trainer benchmark on the GPU, beside PyTorch ----
if wants bench; then
  tbe=$SECONDS rc=0
  timeout 180 "$build/bin/finecast-bench" trainer --json --device cuda --threads 1 --python "$(command -v "$python")" \
    --reference "$repo/bench/reference_pytorch.py" >"$out/bench_cuda.json" 2>>"$log" || rc=$?
  # A second line: the training noise drawn in the captured step (train.noise_generator philox).
  timeout 120 "$build/bin/finecast-bench" trainer --json --device cuda --threads 1 --no-reference \
    --noise-generator philox >>"$out/bench_cuda.json" 2>>"$log" || rc=$?
  stage_done bench "$rc" "$tbe"
  cat "$out/bench_cuda.json" >>"$out/summary.txt"
fi

# ---- 4. in situ: finecast and the reference Python plugin in finecast-host, on the GPU ----
if wants insitu; then
  # shellcheck source=scripts/device/run_files.sh
  source "$repo/scripts/device/run_files.sh"
  run="$repo/out/gpu_speed_run"
  write_host_run "$data" "$build" "$run" cuda
  mpi="mpiexec --oversubscribe --mca pml ob1 --mca btl self,vader"
  pyref=(--python-reference)
  [[ -e "$build/lib/libfinecast_python_adapter.so" ]] || {
    pyref=()
    summary "insitu: no libfinecast_python_adapter.so ($python has no development files): finecast's cases alone"
  }
  ti=$SECONDS rc=0
  # The embedded interpreter starts from the venv's base Python: it finds torch through PYTHONPATH.
  PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" timeout 300 "$build/bin/finecast-bench" plugin "${pyref[@]}" \
    --device cuda --run "$run/host.yaml" --steps "$steps" --step-seconds 0.1 --mpiexec "$mpi" --json \
    >"$out/pyref.json" 2>"$out/pyref.log" || rc=$?
  stage_done insitu "$rc" "$ti"
  cat "$out/pyref.json" >>"$out/summary.txt"
  ((rc == 0)) || tail -20 "$out/pyref.log"
fi

# ---- 5. the same machine's CPU ----
if wants cpu; then
  tc=$SECONDS rc=0
  timeout 150 "$build/bin/finecast-bench" trainer --json --device cpu --threads 16 --reference-threads 16 \
    --python "$(command -v "$python")" --reference "$repo/bench/reference_pytorch.py" >"$out/bench_cpu.json" 2>>"$log" ||
    rc=$?
  stage_done cpu "$rc" "$tc"
  cat "$out/bench_cpu.json" >>"$out/summary.txt"
fi
summary "total: $((SECONDS - t0)) s, status $status"
exit "$status"
