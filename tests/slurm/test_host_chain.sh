#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A restart chain run for real: launch.sh --chain 2 -> (fake) sbatch with afterok -> two
# finecast-host jobs of 4 steps with the plugin, the second a restart that resumes from the
# first one's checkpoint (checkpoint.resume: auto) and continues its model time. Its weights
# must equal, bit for bit, those of one 8-step job: the chunks' run files (start,
# experiment_start, restart_run) and the resumed state are then right.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_finecast

cat >plugin.yaml <<YAML
fields: [ts]
seed: 5
device: cpu
grid: {type: icon, file: /usr/share/ncarg/data/nug/triangular_grid_ICON.nc, coarse_level: 0}
buffer: {capacity: 4}
model: {hidden: 16, depth: 1, time_embedding: 8, diffusion_steps: 5}
train: {async: false, every: 4, min_steps: 4, epochs: 1, batch_size: 80, warmup_steps: 1, threads: 1}
sample: {every: 4, members: 2, steps: 2}
checkpoint: {keep: 2}
YAML
host_run() {  # host_run FILE STEPS
  cat >"$1" <<YAML
grid: /usr/share/ncarg/data/nug/triangular_grid_ICON.nc
orography: /usr/share/ferret-vis/data/etopo20.cdf
orography_variable: ROSE
start: 1979-01-01T00:00:00
dt: 1800
steps: $2
nproma: 24
nlev: 2
plugins:
  - {name: finecast, library: $PLUGIN_LIB, options: plugin.yaml}
YAML
}
host_run long.yaml 8
host_run chunk.yaml 4
cpu=(--profile cpu --bin-dir "$BIN/bin" --param ntasks_per_node=2 --param cpus_per_task=1 --param account=bb1234)

"$LAUNCH" "${cpu[@]}" --run long.yaml --set checkpoint.dir=long/ckpt --set sample.output=long/out.nc \
  >long.out 2>long.err || fail "long run: launch failed: $(cat long.err)"
"$LAUNCH" "${cpu[@]}" --run chunk.yaml --chain 2 --set checkpoint.dir=chain/ckpt --set sample.output=chain/out.nc \
  >chain.out 2>chain.err || fail "chain: launch failed: $(cat chain.err)"
assert_contains "$(cat chain.out)" "launch: submitted job 1003 (starts after job 1002 succeeded)" "chain: chunk 2 waits"
assert_contains "$(grep '^sbatch ' "$FAKE_SLURM_DIR/calls.log" | tail -1)" "--dependency=afterok:1002" "chain: afterok"

long_log="$(cat out/slurm/finecast-cpu-1001.out 2>/dev/null)"
log1="$(cat out/slurm/finecast-cpu-1002.out 2>/dev/null)"
log2="$(cat out/slurm/finecast-cpu-1003.out 2>/dev/null)"
for id in 1001 1002 1003; do
  assert_eq "$(cat "$FAKE_SLURM_DIR/job-$id.rc" 2>/dev/null)" 0 "job $id: exit status (log: $(cat out/slurm/finecast-cpu-$id.out 2>/dev/null))"
done
assert_contains "$log1" "checkpoint.resume: auto: no valid checkpoint in chain/ckpt: a fresh start" "chunk 1 starts fresh"
assert_contains "$log1" "4 steps of 1800 s from 1979-01-01T00:00:00" "chunk 1: its model time"
assert_contains "$log2" "4 steps of 1800 s from 1979-01-01T02:00:00" "chunk 2 continues the model time"
assert_contains "$log2" "Resumed from chain/ckpt/ckpt_" "chunk 2 resumes from chunk 1's checkpoint"
for session in "Training session 1 at 1979-01-01T02:00:00" "Training session 2 at 1979-01-01T04:00:00"; do
  assert_contains "$long_log" "$session" "the long run"
  assert_contains "$log1$log2" "$session" "the chain"
done
assert_contains "$log2" "finecast: checkpoints written" "chunk 2's summary"

shopt -s nullglob
long_ckpts=(long/ckpt/ckpt_*.h5)
chain_ckpts=(chain/ckpt/ckpt_*.h5)
if ((${#long_ckpts[@]} == 0 || ${#chain_ckpts[@]} == 0)); then
  fail "no final checkpoints (long: ${long_ckpts[*]}, chain: ${chain_ckpts[*]})"
else
  assert_eq "$(basename "${chain_ckpts[-1]}")" "$(basename "${long_ckpts[-1]}")" "the chain ends on the long run's optimizer step"
  h5diff -d 0 "${long_ckpts[-1]}" "${chain_ckpts[-1]}" /model >h5diff.out 2>&1 ||
    fail "the chain's weights differ from the long run's: $(head -20 h5diff.out)"
fi
assert_contains "$(ncdump -t -v time chain/out.nc 2>/dev/null)" '"1979-01-01 02", "1979-01-01 04"' "one output, continued by chunk 2"

finish
