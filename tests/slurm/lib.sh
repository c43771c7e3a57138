#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Shared helpers of the SLURM launch tests: a scratch folder, the fake SLURM on PATH, assertions.
# shellcheck disable=SC2034  # variables here are used by the scripts that source this file

set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
BIN="${FINECAST_BINARY_DIR:-$SRC/build}"
LAUNCH="$SRC/scripts/launch.sh"
failures=0

# Every test works in its own scratch folder, which is also the job's working directory.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/finecast-slurm-test.XXXXXX")"
cleanup() {
  if ((failures == 0)) && [[ -z "${KEEP_WORK:-}" ]]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT
export FAKE_SLURM_DIR="$WORK/slurm"
export PATH="$SRC/tests/slurm/fake:$PATH"
cd "$WORK"

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# assert_contains TEXT NEEDLE WHAT: NEEDLE must occur verbatim in TEXT.
assert_contains() {
  if [[ "$1" != *"$2"* ]]; then
    fail "$3: expected to find [$2] in:"$'\n'"$1"
  fi
}

assert_not_contains() {
  if [[ "$1" == *"$2"* ]]; then
    fail "$3: did not expect [$2] in:"$'\n'"$1"
  fi
}

assert_eq() {
  if [[ "$1" != "$2" ]]; then
    fail "$3: expected [$2], got [$1]"
  fi
}

finish() {
  if ((failures > 0)); then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  echo "all checks passed"
}

# make_stub_plugin DIR cuda|cpu: DIR/libfinecast_comin.so, an empty library that depends, as the
# real plugin does, on DIR/libfinecast_trainer.so.0, which depends on stub LibTorch libraries of a
# CUDA or a CPU-only build (found through RUNPATH): what launch.sh's CUDA check reads with ldd.
make_stub_plugin() {
  local dir="$1" flavour="$2" libs=(torch c10 torch_cpu) links=() lib
  [[ "$flavour" == cuda ]] && libs+=(torch_cuda c10_cuda)
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  echo 'int finecast_stub(void) { return 0; }' >"$dir/stub.c"
  for lib in "${libs[@]}"; do
    gcc -shared -fPIC -o "$dir/lib$lib.so" -Wl,-soname,"lib$lib.so" "$dir/stub.c"
    links+=("-l$lib")
  done
  gcc -shared -fPIC -o "$dir/libfinecast_trainer.so.0" -Wl,-soname,libfinecast_trainer.so.0 "$dir/stub.c" \
    -L"$dir" -Wl,--no-as-needed "${links[@]}" -Wl,-rpath,"$dir"
  ln -sf libfinecast_trainer.so.0 "$dir/libfinecast_trainer.so"
  gcc -shared -fPIC -o "$dir/libfinecast_comin.so" "$dir/stub.c" -L"$dir" -Wl,--no-as-needed \
    -lfinecast_trainer -Wl,-rpath,"$dir"
}

# ---- for the tests that run the real finecast-host with the plugin ----

HOST_EXE="$BIN/bin/finecast-host"
PLUGIN_LIB="$BIN/lib/libfinecast_comin.so"

# Exits 77 (ctest: skipped) with the reason when the programs are not built.
require_finecast() {
  local missing=()
  [[ -x "$HOST_EXE" ]] || missing+=("$HOST_EXE")
  [[ -f "$PLUGIN_LIB" ]] || missing+=("$PLUGIN_LIB")
  command -v mpiexec >/dev/null 2>&1 || missing+=("mpiexec")
  if ((${#missing[@]} > 0)); then
    echo "SKIP: not built: ${missing[*]} (cmake --build $BIN --target finecast-host finecast_comin)"
    exit 77
  fi
}

# write_plugin_config FILE: a tiny, fast, deterministic plugin config (the coupling steps and
# device come from --set on the command line). 80 patches per step, batch 256, synchronous
# training so the number of optimizer steps is fixed.
write_plugin_config() {
  cat >"$1" <<YAML
fields: [ts]
device: cpu
seed: 7
grid:
  type: icon
  file: /usr/share/ncarg/data/nug/triangular_grid_ICON.nc
  coarse_level: 0
buffer:
  capacity: 4
model:
  hidden: 32
  depth: 1
  time_embedding: 16
  diffusion_steps: 10
train:
  async: false
  every: 4
  min_steps: 4
  epochs: 1
  batch_size: 256
  warmup_steps: 1
  threads: 1
sample:
  every: 0
  members: 2
  steps: 2
  output: $WORK/out/finecast_output.nc
checkpoint:
  dir: $WORK/ckpt
  every: 0
  keep: 2
  buffer: true
YAML
}

# write_host_run_file FILE STEPS PLUGIN_CONFIG: the finecast-host run file. The one place in
# these tests that knows the host's run-file keys (configs/demo_host.yaml is the reference).
write_host_run_file() {
  cat >"$1" <<YAML
grid: /usr/share/ncarg/data/nug/triangular_grid_ICON.nc
steps: $2
plugins:
  - name: finecast
    library: $PLUGIN_LIB
    options: $3
YAML
}

# checkpoint_step FILE: the optimizer step stored in a checkpoint (root attribute "step").
checkpoint_step() {
  h5dump -a /step "$1" | sed -n 's/^ *(0): *\([0-9][0-9]*\).*/\1/p' | head -1
}

# assert_job_outputs LOG: the job in $WORK wrote the sampled ensemble (out/finecast_output.nc, a
# NetCDF file) and a finecast checkpoint in ckpt/, and its summary in LOG lists both.
assert_job_outputs() {
  local log="$1"
  [[ -f out/finecast_output.nc ]] || fail "no sample output out/finecast_output.nc"
  ncdump -h out/finecast_output.nc >/dev/null 2>&1 || fail "out/finecast_output.nc is not NetCDF"
  shopt -s nullglob
  local ckpts=(ckpt/ckpt_*.h5)
  ((${#ckpts[@]} >= 1)) || fail "no checkpoint in ckpt/"
  if ((${#ckpts[@]} >= 1)); then
    assert_contains "$(h5dump -a /format "${ckpts[-1]}")" "finecast-downscaler-checkpoint" "checkpoint format"
    assert_contains "$log" "  $WORK/${ckpts[-1]}" "job summary lists the checkpoint"
  fi
  assert_contains "$log" "  $WORK/out/finecast_output.nc" "job summary lists the output"
}
