#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Restart chains (--chain N) and job arrays (--array) of finecast-host: the rendered chunks,
# their run files (model time continued, restart_run), checkpoint.resume: auto, the afterok
# dependencies, one output folder per array task. A probe stands in for finecast-host.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p probe-bin lib
cat >probe-bin/finecast-host <<'PROBE'
#!/bin/bash
rank="${OMPI_COMM_WORLD_RANK:?not started by mpiexec}"
mkdir -p out
tag="${FAKE_SLURM_JOB_ID}${SLURM_ARRAY_TASK_ID:+_$SLURM_ARRAY_TASK_ID}"
{
  echo "args=$*"
  echo "run_file=$(cat "$1")"
} >"out/probe-$tag-rank-$rank.txt"
PROBE
chmod +x probe-bin/finecast-host
cat >plugin.yaml <<'YAML'
fields: [ts]
device: cpu
sample: {output: out/samples/finecast_ts.nc}
checkpoint: {dir: out/ckpt}
YAML
cat >run.yaml <<'YAML'
# a host run file: 48 steps of 30 minutes = one day per chunk
grid: /usr/share/ncarg/data/nug/triangular_grid_ICON.nc
start: 1979-01-01T00:00:00
dt: 1800
steps: 48
plugins:
  - {name: finecast, library: lib/libfinecast_comin.so, options: plugin.yaml}
YAML
cpu=(--profile cpu --run run.yaml --bin-dir probe-bin --param ntasks_per_node=2 --param cpus_per_task=1)

# ---- --chain 3, rendered: three scripts, each with its own run file ----
"$LAUNCH" "${cpu[@]}" --chain 3 --dry-run --output chain.sbatch >chain.stdout 2>chain.err ||
  fail "chain render failed: $(cat chain.err)"
assert_contains "$(cat chain.stdout)" "# ==== chunk 3 of 3 ====" "chain: --dry-run prints every chunk"
starts=(1979-01-01T00:00:00 1979-01-02T00:00:00 1979-01-03T00:00:00)
for k in 1 2 3; do
  file="chain-chunk$k.sbatch"
  [[ -f "$file" ]] || { fail "chain: no $file"; continue; }
  shellcheck -s bash "$file" || fail "chain chunk $k: shellcheck rejects it"
  text="$(cat "$file")"
  assert_contains "$text" "/finecast-host \"\${run_file}\" --set device=cpu --set checkpoint.resume=auto" "chain chunk $k: srun"
  assert_contains "$text" "start: '${starts[k - 1]}'" "chain chunk $k: its start"
  assert_contains "$text" "experiment_start: '1979-01-01T00:00:00'" "chain chunk $k: the experiment's start"
  assert_contains "$text" "experiment_stop: '1979-01-04T00:00:00'" "chain chunk $k: the experiment's end"
  if ((k == 1)); then
    assert_contains "$text" "restart_run: false" "chain chunk 1: not a restart"
  else
    assert_contains "$text" "restart_run: true" "chain chunk $k: a restart"
  fi
  assert_contains "$text" $'plugins:\n- name: finecast\n  library: lib/libfinecast_comin.so\n  options: plugin.yaml' "chain chunk $k: the plugin list is kept"
done
[[ ! -e chain-chunk4.sbatch ]] || fail "chain: a 4th chunk"
# --resume DIR with a chain: the first chunk resumes from DIR, the others from their own.
mkdir -p old-ckpt
"$LAUNCH" "${cpu[@]}" --chain 2 --resume old-ckpt --dry-run --output resumed.sbatch >/dev/null 2>&1 || fail "chain --resume render failed"
assert_contains "$(cat resumed-chunk1.sbatch)" "--set checkpoint.resume=$WORK/old-ckpt" "chain --resume: chunk 1"
assert_contains "$(cat resumed-chunk2.sbatch)" "--set checkpoint.resume=auto" "chain --resume: chunk 2"

# ---- --chain 3, submitted: afterok dependencies, each chunk runs its own run file ----
"$LAUNCH" "${cpu[@]}" --chain 3 >chain.out 2>chain.err || fail "chain launch failed: $(cat chain.err)"
calls="$(grep '^sbatch ' "$FAKE_SLURM_DIR/calls.log")"
assert_contains "$calls" "--dependency=afterok:1001 --kill-on-invalid-dep=yes" "chunk 2 waits for chunk 1"
assert_contains "$calls" "--dependency=afterok:1002 --kill-on-invalid-dep=yes" "chunk 3 waits for chunk 2"
assert_eq "$(grep -c -- '--dependency' <<<"$calls")" 2 "two dependencies"
for k in 1 2 3; do
  id=$((1000 + k))
  assert_eq "$(cat "$FAKE_SLURM_DIR/job-$id.rc" 2>/dev/null)" 0 "chunk $k: exit status"
  probe="$(cat "out/probe-$id-rank-0.txt" 2>/dev/null)" || { fail "chunk $k did not run"; continue; }
  assert_contains "$probe" "args=$WORK/out/slurm/finecast-cpu-chunk$k-$id.run.yaml --set device=cpu --set checkpoint.resume=auto" "chunk $k: arguments"
  assert_contains "$probe" "start: '${starts[k - 1]}'" "chunk $k: the run file it read"
done

# ---- --array 0-3: one output folder per task ----
"$LAUNCH" "${cpu[@]}" --array 0-3 --set 'seed={task}' --dry-run --output array.sbatch >/dev/null 2>array.err ||
  fail "array render failed: $(cat array.err)"
shellcheck -s bash array.sbatch || fail "array: shellcheck rejects it"
text="$(cat array.sbatch)"
for line in "#SBATCH --array=0-3" "#SBATCH --output=$WORK/out/slurm/finecast-cpu-%A_%a.out" \
            'task="${SLURM_ARRAY_TASK_ID:?' \
            "--set seed=\"\${task}\" --set sample.output=$WORK/out/finecast-cpu/task_\"\${task}\"/finecast_ts.nc --set checkpoint.dir=$WORK/out/finecast-cpu/task_\"\${task}\"/ckpt"; do
  assert_contains "$text" "$line" "array script"
done
rm -f out/probe-*
"$LAUNCH" "${cpu[@]}" --array 0-3 --set 'seed={task}' >array.out 2>array.err || fail "array launch failed: $(cat array.err)"
for t in 0 1 2 3; do
  probe="$(cat "out/probe-1004_$t-rank-0.txt" 2>/dev/null)" || { fail "array task $t did not run"; continue; }
  assert_contains "$probe" "--set seed=$t --set sample.output=$WORK/out/finecast-cpu/task_$t/finecast_ts.nc --set checkpoint.dir=$WORK/out/finecast-cpu/task_$t/ckpt" "array task $t: its own folder and seed"
  assert_contains "$(cat "out/slurm/finecast-cpu-1004_$t.out" 2>/dev/null)" "finecast: job 1004 (array task $t) on" "array task $t: its own log"
done
# Folders given by hand must tell the tasks apart.
rc=0
"$LAUNCH" "${cpu[@]}" --array 0-3 --set checkpoint.dir=shared --dry-run >/dev/null 2>stderr || rc=$?
assert_eq "$rc" 2 "array with one checkpoint.dir: refused"
assert_contains "$(cat stderr)" "--set checkpoint.dir=shared with --array: every task would write there. Put {task} in it" "array with one checkpoint.dir: message"
"$LAUNCH" "${cpu[@]}" --array 0-1 --set 'checkpoint.dir=ck/{task}' --dry-run >given.sbatch 2>/dev/null || fail "array with {task} in checkpoint.dir refused"
assert_contains "$(cat given.sbatch)" "--set checkpoint.dir=ck/\"\${task}\" --set sample.output=" "array: a folder with {task} is kept as given"
rc=0
"$LAUNCH" "${cpu[@]}" --array 3-x --dry-run >/dev/null 2>stderr || rc=$?
assert_eq "$rc" 2 "bad array: refused"
assert_contains "$(cat stderr)" "--array '3-x' is not a SLURM array" "bad array: message"

# ---- chain and array together: task i of chunk k waits for task i of chunk k-1 ----
"$LAUNCH" "${cpu[@]}" --array 0-1 --chain 2 >both.out 2>both.err || fail "array chain launch failed: $(cat both.err)"
assert_contains "$(grep '^sbatch ' "$FAKE_SLURM_DIR/calls.log" | tail -1)" "--dependency=aftercorr:1005 --kill-on-invalid-dep=yes" "array chain: aftercorr"
for t in 0 1; do
  assert_eq "$(cat "$FAKE_SLURM_DIR/job-1006_$t.rc" 2>/dev/null)" 0 "array chain: task $t of chunk 2 ran"
  assert_contains "$(cat "out/probe-1006_$t-rank-0.txt" 2>/dev/null)" "checkpoint.dir=$WORK/out/finecast-cpu/task_$t/ckpt" "array chain: task $t keeps its folder in chunk 2"
done

finish
