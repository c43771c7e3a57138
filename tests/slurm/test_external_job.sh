#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A heterogeneous job of the external profile runs for real: launch.sh -> fake sbatch -> job
# script -> one srun with a ':' -> fake srun's MPMD line mpiexec -n 2 finecast-host ... : -n 1
# finecast-trainer --comm finecast. The trainer joins through ComIn's handshake (the comm that
# launch.sh put into the run file's copy), trains on the CPU (trainers on a CPU partition here),
# and writes the sample output and a checkpoint.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_finecast
[[ -x "$BIN/bin/finecast-trainer" ]] ||
  { echo "SKIP: not built: $BIN/bin/finecast-trainer (cmake --build $BIN --target finecast-trainer)"; exit 77; }

write_plugin_config plugin.yaml
write_host_run_file run.yaml 8 "$WORK/plugin.yaml"

"$LAUNCH" --profile external --run run.yaml --bin-dir "$BIN/bin" --param account=bb1234 \
  --param ntasks_per_node=2 --param cpus_per_task=1 --param time=00:05:00 --param "outputs=[out, ckpt]" \
  --param trainers.kind=cpu --param trainers.partition=compute --param trainers.cpus_per_task=1 \
  --param trainers.cores_per_node=128 --set device=cpu >launch.out 2>launch.err ||
  fail "launch failed: $(cat launch.err)"
assert_contains "$(cat launch.out)" "launch: submitted job 1001" "launch output"
calls="$(cat "$FAKE_SLURM_DIR/calls.log")"
assert_contains "$calls" "sbatch-option hetjob" "the hetjob header"
assert_contains "$calls" "srun --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --hint=nomultithread --kill-on-bad-exit=1 $HOST_EXE $WORK/out/slurm/finecast-external-run-1001.yaml --set device=cpu --set coupling.communicator=plugin --set train.placement=external --set train.ranks=1 : --nodes=1 --ntasks=1 --ntasks-per-node=1 --cpus-per-task=1 --hint=nomultithread --kill-on-bad-exit=1 env OMP_NUM_THREADS=1 $BIN/bin/finecast-trainer --comm finecast --plugin $PLUGIN_LIB" \
  "the heterogeneous srun"
assert_contains "$(cat out/slurm/finecast-external-run-1001.yaml 2>/dev/null)" "comm: finecast" "the job's run file"

log="$(cat out/slurm/finecast-external-1001.out 2>/dev/null)"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1001.rc" 2>/dev/null)" 0 "job exit status (log: $log)"
assert_contains "$log" "on 2 host rank(s); trainer rank 2 (finecast-trainer processes)" "the trainer joined"
assert_contains "$log" "[finecast r2] Peak resident memory" "the trainer ran"
assert_contains "$log" "LibTorch loaded (trainer rank)" "the trainer trained"
assert_contains "$log" "finecast: job 1001 finished with exit status 0" "job summary"
# The outputs: the sampled ensemble as NetCDF and a checkpoint that h5dump recognises.
assert_job_outputs "$log"

finish
