#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Submission plumbing without finecast: launch.sh -> (fake) sbatch -> job script -> (fake) srun
# -> mpiexec, with a probe program standing in for finecast-host that records what each rank
# saw. Also the GPU binding wrapper and the end-of-job summary on their own.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

touch run.yaml
mkdir -p probe-bin
# The probe records its rank's view (threads, GPU, arguments) as an output file of the job.
cat >probe-bin/finecast-host <<'PROBE'
#!/bin/bash
mkdir -p out
rank="${OMPI_COMM_WORLD_RANK:?not started by mpiexec}"
{
  echo "size=${OMPI_COMM_WORLD_SIZE}"
  echo "threads=${OMP_NUM_THREADS:-unset}"
  echo "gpu=${CUDA_VISIBLE_DEVICES:-unset}"
  echo "args=$*"
} >"out/probe-rank-${rank}.txt"
echo "probe rank ${rank} ran"
# As finecast-host: progress lines on rank 0 (PROBE_STEPS=N/M: up to step N of M, 0.5 s/step)
# and a checkpoint where the plugin config puts them (PROBE_CKPT_DIR).
if ((rank == 0)) && [[ -n "${PROBE_STEPS:-}" ]]; then
  for ((step = 1; step <= ${PROBE_STEPS%/*}; ++step)); do
    echo "[finecast r0] step $step/${PROBE_STEPS#*/}, model time 1979-01-01T00:30:00, 0.5000 s/step, global mean ts 282.15 K"
  done
fi
if ((rank == 0)) && [[ -n "${PROBE_CKPT_DIR:-}" ]]; then
  mkdir -p "$PROBE_CKPT_DIR" && echo ckpt >"$PROBE_CKPT_DIR/ckpt_00000004.h5"
fi
exit "${PROBE_EXIT:-0}"
PROBE
chmod +x probe-bin/finecast-host

# ---- a CPU job, submitted for real (to the fake sbatch) ----
"$LAUNCH" --profile cpu --run run.yaml --bin-dir probe-bin --param ntasks_per_node=3 \
  --param cpus_per_task=2 --set train.epochs=1 >launch.out 2>launch.err || fail "launch failed: $(cat launch.err)"
reply="$(cat launch.out)"
assert_contains "$reply" "launch: submitted job 1001" "launch output"
assert_contains "$reply" "squeue -j 1001" "launch output"
assert_contains "$reply" "$WORK/out/slurm/finecast-cpu-1001.out" "launch output: the log path with the job id"
calls="$(cat "$FAKE_SLURM_DIR/calls.log")"
assert_contains "$calls" "sbatch --parsable $WORK/out/slurm/finecast-cpu-" "sbatch call"
assert_contains "$calls" "srun --nodes=1 --ntasks-per-node=3 --cpus-per-task=2 --hint=nomultithread --kill-on-bad-exit=1 $WORK/probe-bin/finecast-host $WORK/run.yaml --set device=cpu --set train.epochs=1" "srun call"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1001.rc")" 0 "job exit status"
for rank in 0 1 2; do
  probe="$(cat "out/probe-rank-$rank.txt" 2>/dev/null)" || { fail "rank $rank did not run"; continue; }
  assert_contains "$probe" "size=3" "rank $rank"
  assert_contains "$probe" "threads=2" "rank $rank: OMP_NUM_THREADS from --cpus-per-task"
  assert_contains "$probe" "gpu=unset" "rank $rank: a CPU job binds no GPU"
  assert_contains "$probe" "args=$WORK/run.yaml --set device=cpu --set train.epochs=1" "rank $rank"
done
[[ ! -e out/probe-rank-3.txt ]] || fail "a 4th rank ran in a 3-task job"
log="$(cat out/slurm/finecast-cpu-1001.out)"
assert_contains "$log" "finecast: job 1001 on " "job log header"
assert_contains "$log" "3 ranks" "job log header"
assert_contains "$log" "finecast: job 1001 finished with exit status 0" "job log summary"
assert_contains "$log" "finecast: outputs written (3):"$'\n'"  $WORK/out/probe-rank-0.txt" "job log lists the outputs"
assert_contains "$log" "finecast: checkpoints written (0):" "job log lists no checkpoints"
ls out/slurm/finecast-cpu-*.sbatch >/dev/null 2>&1 || fail "the submitted job script is not kept beside the log"

# ---- a GPU job: each rank sees one of the GPUs SLURM gave the step ----
# launch.sh submits a GPU job only with a CUDA build of the plugin it loads (<bin-dir>/../lib).
make_stub_plugin lib cuda
mkdir -p ckpt && echo x >ckpt/old.h5
sleep 1  # the job lists files newer than its start; old.h5 must be older
rm -f out/probe-rank-*.txt
CUDA_VISIBLE_DEVICES=4,5 "$LAUNCH" --profile gpu --run run.yaml --bin-dir probe-bin \
  --param gpus.count=2 --param cpus_per_task=8 --set checkpoint.dir=ckpt >launch.out 2>launch.err ||
  fail "gpu launch failed: $(cat launch.err)"
assert_contains "$(cat launch.out)" "launch: submitted job 1002" "second job id"
for rank in 0 1 2 3; do
  want=$((rank % 2 == 0 ? 4 : 5))
  assert_contains "$(cat "out/probe-rank-$rank.txt" 2>/dev/null)" "gpu=$want" "rank $rank: bind_gpu.sh"
done
log="$(cat out/slurm/finecast-gpu-1002.out)"
assert_contains "$log" "finecast: local rank 0 on $(hostname) -> GPU 4 (of 2)" "bind_gpu.sh reports the binding"
assert_contains "$log" "finecast: GPUs visible:" "job log GPU line"
assert_not_contains "$log" "ckpt/old.h5" "job log: a checkpoint from before the job is not its output"

# ---- a failing program: the job fails with its status and says so ----
rm -f out/probe-rank-*.txt
PROBE_EXIT=3 "$LAUNCH" --profile cpu --run run.yaml --bin-dir probe-bin --param ntasks_per_node=1 >/dev/null 2>&1 ||
  fail "launch of the failing job failed"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1003.rc")" 3 "failing job: exit status"
assert_contains "$(cat out/slurm/finecast-cpu-1003.out)" "the run failed; its error is in the log above" "failing job log"

# ---- the summary finds the checkpoints where the plugin config (not --set) puts them (#22),
# and says how far the run got against its wall time ----
printf 'checkpoint:\n  dir: mydir/ckpts\nsample:\n  output: samples/t.nc\n' >plugin.yaml
printf 'steps: 4\nplugins:\n  - {name: finecast, library: lib/libfinecast_comin.so, options: plugin.yaml}\n' >run-cfg.yaml
PROBE_CKPT_DIR=mydir/ckpts PROBE_STEPS=2/4 PROBE_EXIT=1 "$LAUNCH" --profile cpu --run run-cfg.yaml --bin-dir probe-bin \
  --param ntasks_per_node=1 --param time=00:20:00 >/dev/null 2>launch.err || fail "launch with a plugin config failed: $(cat launch.err)"
log="$(cat out/slurm/finecast-cpu-1004.out)"
assert_contains "$log" "finecast: checkpoints written (1):"$'\n'"  $WORK/mydir/ckpts/ckpt_00000004.h5" "summary: checkpoint.dir from the plugin config"
assert_contains "$log" "--resume $WORK/mydir/ckpts" "summary: how to resume from the config's checkpoint.dir"
assert_contains "$log" " of the wall time 0:20:00 (" "summary: time against the wall time"
assert_contains "$log" "finecast: progress: the run ended at step 2 of 4; the other 2 steps would need about 0:00:01 more at 0.5000 s/step" "summary: where a failed run stopped"
assert_contains "$log" "fits, 0:19:" "summary: the rest would have fitted"
[[ "$log" =~ finecast:\ started\ [0-9T:-]+Z\ \(([0-9]+)\),\ wall\ time\ 00:20:00 ]] || fail "job log: no start line"
rm -rf mydir
PROBE_STEPS=4/4 "$LAUNCH" --profile cpu --run run-cfg.yaml --bin-dir probe-bin --param ntasks_per_node=1 >/dev/null 2>&1 ||
  fail "launch of the finishing run failed"
assert_contains "$(cat out/slurm/finecast-cpu-1005.out)" "finecast: progress: all 4 steps done (0.5000 s/step at the end)" "summary: a finished run"

# --progress on a running job's log: the ETA against the wall time, from the start line.
now="$(date +%s)"
{
  echo "finecast: started 2026-11-26T10:00:00Z ($((now - 600))), wall time 00:20:00"
  echo "[finecast r0] step 100/1000, model time 1979-01-03T02:00:00, 1.0000 s/step, global mean ts 282.15 K"
} >running.out
progress="$("$SRC/scripts/slurm/job_summary.sh" --progress running.out)"
assert_contains "$progress" "finecast: running for 0:10:0" "progress: time used"
assert_contains "$progress" "of its wall time 0:20:00 (50%)" "progress: against the wall time"
assert_contains "$progress" "step 100 of 1000 at 1.0000 s/step: the last step in about 0:15:00" "progress: ETA"
assert_contains "$progress" "after the wall time 0:20:00: the job will be killed about 0:05:0" "progress: does not fit"
# The log says the job started 600 s before `now`; a second or two may pass before the summary
# reads the clock, so the time to spare is 0:35:00 less those seconds.
fits="$("$SRC/scripts/slurm/job_summary.sh" --progress running.out --time 1:00:00)"
[[ "$fits" =~ "of the wall time 1:00:00: fits, "0:3(5:00|4:5[0-9])" to spare" ]] ||
  fail "progress: --time: expected 'of the wall time 1:00:00: fits, 0:35:00 (less a few seconds) to spare' in: $fits"

# ---- the pieces on their own ----
assert_eq "$(SLURM_LOCALID=5 CUDA_VISIBLE_DEVICES=0,1,2,3 FINECAST_BIND_QUIET=1 \
  "$SRC/scripts/slurm/bind_gpu.sh" bash -c 'echo "$CUDA_VISIBLE_DEVICES"')" 1 "bind_gpu.sh: local rank 5 of 4 GPUs"
assert_eq "$(SLURM_LOCALID=2 CUDA_VISIBLE_DEVICES=NoDevFiles \
  "$SRC/scripts/slurm/bind_gpu.sh" bash -c 'echo "$CUDA_VISIBLE_DEVICES"')" NoDevFiles "bind_gpu.sh: NoDevFiles"
for script in "$LAUNCH" "$SRC/scripts/slurm/bind_gpu.sh" "$SRC/scripts/slurm/job_summary.sh" \
              "$SRC/tests/slurm/fake/sbatch" "$SRC/tests/slurm/fake/srun"; do
  assert_contains "$("$script" --help)" "Usage:" "$script --help"
done
assert_contains "$(/usr/bin/python3 "$SRC/scripts/slurm/render.py" --help)" "ntasks_per_node" "render.py --help lists the keys"

finish
