#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A job rendered from the CPU profile runs for real: launch.sh -> fake sbatch -> job script ->
# fake srun -> mpiexec -n 2 finecast-host with the plugin, and leaves its outputs behind.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_finecast

write_plugin_config plugin.yaml
write_host_run_file run.yaml 8 "$WORK/plugin.yaml"

"$LAUNCH" --profile cpu --run run.yaml --bin-dir "$BIN/bin" --param ntasks_per_node=2 --param cpus_per_task=1 \
  --param time=00:05:00 >launch.out 2>launch.err || fail "launch failed: $(cat launch.err)"
assert_contains "$(cat launch.out)" "launch: submitted job 1001" "launch output"
assert_contains "$(cat "$FAKE_SLURM_DIR/calls.log")" \
  "srun --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --hint=nomultithread --kill-on-bad-exit=1 $HOST_EXE $WORK/run.yaml --set device=cpu" "srun call"

log="$(cat out/slurm/finecast-cpu-1001.out 2>/dev/null)"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1001.rc" 2>/dev/null)" 0 "job exit status (log: $log)"
assert_contains "$log" "Using device: CPU" "the plugin's device line"
assert_contains "$log" "finecast: job 1001 finished with exit status 0" "job summary"

# The outputs: the sampled ensemble as NetCDF and a checkpoint that h5dump recognises. The
# summary finds the checkpoints where the plugin config (not --set, not the profile's outputs)
# puts them, and reads finecast-host's progress lines.
assert_job_outputs "$log"
assert_contains "$log" "finecast: progress: all 8 steps done (" "job summary: the host's progress"
assert_contains "$log" " of the wall time 0:05:00 (" "job summary: time against the wall time"

finish
