#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The CPU <-> GPU hand-off through launch.sh: run 1 trains on the CPU and checkpoints; run 2
# resumes from the same directory with another device setting (cuda where this build and
# machine have a GPU, else cpu) and continues from the saved optimizer step and buffer.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_finecast

# The resumed run's device: cuda when the plugin links a CUDA LibTorch and a GPU is visible.
device="${FINECAST_HANDOFF_DEVICE:-}"
if [[ -z "$device" ]]; then
  device=cpu
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep '^GPU' >/dev/null &&
     ldd "$PLUGIN_LIB" 2>/dev/null | grep libtorch_cuda >/dev/null; then
    device=cuda
  fi
fi
echo "hand-off: run 1 on cpu, run 2 on $device"

write_plugin_config plugin.yaml
# ---- run 1: 8 coupling steps on the CPU; trains at steps 4 and 8, checkpoints at the end ----
write_host_run_file run1.yaml 8 "$WORK/plugin.yaml"
"$LAUNCH" --profile cpu --run run1.yaml --bin-dir "$BIN/bin" --param ntasks_per_node=2 --param cpus_per_task=1 \
  --set device=cpu >launch1.out 2>launch1.err || fail "launch 1 failed: $(cat launch1.err)"
log1="$(cat out/slurm/finecast-cpu-1001.out 2>/dev/null)"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1001.rc" 2>/dev/null)" 0 "run 1 exit status (log: $log1)"
assert_contains "$log1" "Using device: CPU" "run 1 device line"

shopt -s nullglob
ckpts=(ckpt/ckpt_*.h5)
if ((${#ckpts[@]} == 0)); then
  fail "run 1 wrote no checkpoint into ckpt/"
  finish
fi
saved="${ckpts[-1]}"
step1="$(checkpoint_step "$saved")"
if ! [[ "$step1" =~ ^[0-9]+$ ]] || ((step1 == 0)); then
  fail "run 1's checkpoint $saved has no positive 'step' attribute (got '$step1')"
  finish
fi
echo "hand-off: run 1 saved $saved at optimizer step $step1"

# ---- run 2: 2 coupling steps, resumed, training on every step ----
# Fewer steps than train.min_steps (4): only the restored buffer lets it train at all.
write_host_run_file run2.yaml 2 "$WORK/plugin.yaml"
if [[ "$device" == cuda* ]]; then
  profile=(--profile gpu --param gpus.count=1 --param gpus_per_node=1)
else
  profile=(--profile cpu)
fi
"$LAUNCH" "${profile[@]}" --run run2.yaml --bin-dir "$BIN/bin" --param ntasks_per_node=2 --param cpus_per_task=1 \
  --resume ckpt --set device="$device" --set train.every=1 >launch2.out 2>launch2.err ||
  fail "launch 2 failed: $(cat launch2.err)"
assert_contains "$(grep '^srun' "$FAKE_SLURM_DIR/calls.log" | tail -1)" \
  "--set device=$device --set train.every=1 --set checkpoint.resume=$WORK/ckpt" "run 2 srun call"
log2="$(cat out/slurm/finecast-*-1002.out 2>/dev/null)"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1002.rc" 2>/dev/null)" 0 "run 2 exit status (log: $log2)"
if [[ "$device" == cuda* ]]; then
  assert_contains "$log2" "Using device: CUDA" "run 2 device line"
else
  assert_contains "$log2" "Using device: CPU" "run 2 device line"
fi
assert_contains "$log2" "Resumed from $WORK/$saved (optimizer step $step1" "run 2 resumes from run 1's checkpoint"

# Every optimizer step of run 2 is logged as "(N batches, ...)"; the step counter must go on
# from run 1's, not restart at 0.
batches2=0
while read -r n; do batches2=$((batches2 + n)); done < <(grep -o '([0-9]* batches' <<<"$log2" | grep -o '[0-9][0-9]*')
if ((batches2 == 0)); then
  fail "run 2 did not train (no '(N batches' lines): the buffer was not restored from $saved"
fi
ckpts=(ckpt/ckpt_*.h5)
step2="$(checkpoint_step "${ckpts[-1]}")"
assert_eq "$step2" "$((step1 + batches2))" "run 2's final step = run 1's $step1 + its own $batches2 batches"

finish
