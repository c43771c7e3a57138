#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# A real ComIn host under launch.sh's executable program: ComIn 0.3's own comin_replay (Fortran,
# built from ComIn's sources by scripts/test.sh) replays a finecast-host recording, with the
# &comin_nml that launch.sh wrote: ComIn's var_replay plugin from the user's namelist, finecast
# added by launch.sh. As an array of two tasks with --set seed={task}: each task runs in its own
# folder, reads its own seed from the namelist, and trains its own model. As a chain of two: the
# second job resumes from the first one's checkpoint. And an ICON-style run script edited by
# launch.sh --icon-runscript (the model started with ${START_MODEL} || exit 1) runs under the fake
# SLURM with comin_replay as its model: comin_replay links ComIn's libcomin.so.0, so it must not
# find the build's lib/ (finecast's own libcomin.so.0) on LD_LIBRARY_PATH. Skipped without the builds.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_finecast
REPLAY="$BIN/comin/replay_tool/comin_replay"
VAR_REPLAY="$BIN/comin/replay_tool/libcomin_var_replay_plugin.so"
RECORDER="$BIN/lib/libfinecast_recorder.so"
for f in "$REPLAY" "$VAR_REPLAY" "$RECORDER"; do
  [[ -e "$f" ]] || { echo "SKIP: $f not built (ComIn's sources: ../shared/third_party/comin-0.3.0 or FINECAST_COMIN_SOURCE)"; exit 77; }
done

# ---- a recording of 8 steps of finecast-host on 2 ranks, for comin_replay ----
mkdir -p rec
cat >record.yaml <<YAML
grid: /usr/share/ncarg/data/nug/triangular_grid_ICON.nc
orography: /usr/share/ferret-vis/data/etopo20.cdf
orography_variable: ROSE
start: 1979-01-01T00:00:00
dt: 1800
steps: 8
nproma: 24
nlev: 2
plugins:
  - {name: recorder, library: $RECORDER, options: "rec/run_ vars=ts"}
YAML
OMP_NUM_THREADS=1 mpiexec -n 2 --oversubscribe "$BIN/bin/finecast-host" record.yaml >record.log 2>&1 ||
  { fail "recording failed: $(tail -20 record.log)"; finish; }

# ---- the user's experiment: ComIn's replay namelist with its own plugin, finecast's config ----
cat >replay.nml <<NML
&replay_tool_nml
  replay_data_path = "$WORK/rec/run_"
  msg_level = 0
/
&comin_nml
  plugin_list(1)%name           = "comin_var_replay_plugin"
  plugin_list(1)%plugin_library = "$VAR_REPLAY"
  plugin_list(1)%options        = "$WORK/rec/run_vars_"
/
NML
cat >plugin.yaml <<'YAML'
fields: [ts]
device: cpu
grid: {type: icon, file: /usr/share/ncarg/data/nug/triangular_grid_ICON.nc, coarse_level: 0}
buffer: {capacity: 4}
model: {hidden: 16, depth: 1, time_embedding: 8, diffusion_steps: 5}
train: {async: false, every: 4, min_steps: 4, epochs: 1, batch_size: 80, warmup_steps: 1, threads: 1}
sample: {every: 0, members: 2, steps: 2, output: out.nc}
checkpoint: {dir: ckpt, keep: 2}
YAML
cat >replay-profile.yaml <<YAML
kind: cpu
program:
  executable: $REPLAY
  args: [replay.nml]
  namelists: [replay.nml]
  plugin_library: $PLUGIN_LIB
run: plugin.yaml
account: bb1234
partition: compute
nodes: 1
ntasks_per_node: 2
cpus_per_task: 1
cores_per_node: 128
time: "00:10:00"
hint: nomultithread
log_dir: out/slurm
job_name: replay
YAML

# ---- an array of two seeds ----
"$LAUNCH" --profile ./replay-profile.yaml --array 0-1 --set 'seed={task}' >array.out 2>array.err ||
  fail "array launch failed: $(cat array.err)"
for t in 0 1; do
  dir="out/replay/task_$t"
  log="$(cat "out/slurm/replay-1001_$t.out" 2>/dev/null || true)"
  assert_eq "$(cat "$FAKE_SLURM_DIR/job-1001_$t.rc" 2>/dev/null)" 0 "task $t: exit status (log: $log)"
  assert_contains "$(cat "$dir/replay.nml" 2>/dev/null)" \
    "  plugin_list(2)%options        = \"$WORK/plugin.yaml seed=$t\"" "task $t: finecast in &comin_nml"
  assert_contains "$log" "Using device: CPU" "task $t: finecast ran under comin_replay"
  assert_contains "$log" "Training session 2 at 1979-01-01T04:00:00" "task $t: it trained on the replayed steps"
  assert_contains "$log" "Checkpoint written: ckpt/ckpt_00000008.h5" "task $t: its checkpoint, in its folder"
  [[ -f "$dir/ckpt/ckpt_00000008.h5" ]] || fail "task $t: no $dir/ckpt/ckpt_00000008.h5"
done
if [[ -f out/replay/task_0/ckpt/ckpt_00000008.h5 && -f out/replay/task_1/ckpt/ckpt_00000008.h5 ]]; then
  h5diff -q out/replay/task_0/ckpt/ckpt_00000008.h5 out/replay/task_1/ckpt/ckpt_00000008.h5 /model \
    >/dev/null 2>&1 && fail "tasks 0 and 1 trained the same weights: the seed from the namelist did not reach finecast"
fi

# ---- a chain of two: the second job resumes (checkpoint.resume: auto), ComIn's replay again ----
"$LAUNCH" --profile ./replay-profile.yaml --chain 2 >chain.out 2>chain.err || fail "chain launch failed: $(cat chain.err)"
assert_contains "$(cat chain.err)" "program.restart is not set: every chunk of --chain starts the program from its namelists unchanged" \
  "chain without program.restart: warned"
log2="$(cat out/slurm/replay-1003.out 2>/dev/null || true)"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1003.rc" 2>/dev/null)" 0 "chain chunk 2: exit status (log: $log2)"
assert_contains "$log2" "Resumed from ckpt/ckpt_00000008.h5 (optimizer step 8" "chain chunk 2 resumes from chunk 1"
assert_contains "$(cat out/replay/replay.nml)" "plugin.yaml checkpoint.resume=auto\"" "chain: resume auto in &comin_nml"

# ---- ICON's own run script, edited by --icon-runscript, with comin_replay as its model ----
# launch.sh's default plugin is the build's lib/libfinecast_comin.so, beside finecast's own
# libcomin.so.0; the submitting shell even has that folder on LD_LIBRARY_PATH. comin_replay must
# load ComIn's libcomin.so.0 all the same (else: undefined symbol of ComIn's Fortran modules, 127).
[[ -e "$BIN/lib/libcomin.so.0" ]] || fail "the build's lib/ has no finecast libcomin.so.0: this test would test nothing"
mkdir -p icon/run icon/exp
cat >icon/run/exp.replay.run <<RUN
#! /bin/bash
#SBATCH --account=bb1234
#SBATCH --job-name=exp.replay.run
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=2
#SBATCH --output=$WORK/icon/LOG.exp.replay.run.%j.o
#SBATCH --time=00:10:00
set -e
export START="srun --kill-on-bad-exit=1 --nodes=1 --ntasks-per-node=2"
export MODEL="$REPLAY replay.nml"
cd $WORK/icon/exp
cat > replay.nml << EOF
&replay_tool_nml
  replay_data_path = "$WORK/rec/run_"
  msg_level = 0
/
&comin_nml
  plugin_list(1)%name           = "comin_var_replay_plugin"
  plugin_list(1)%plugin_library = "$VAR_REPLAY"
  plugin_list(1)%options        = "$WORK/rec/run_vars_"
/
EOF
cat > icon_master.namelist << EOF
&master_model_nml
  model_namelist_filename = "replay.nml"
/
EOF
START_MODEL="\${START_MODEL:=\$START \$MODEL}"
\${START_MODEL} || exit 1
echo "the model ran"
RUN
LD_LIBRARY_PATH="$BIN/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$LAUNCH" --icon-runscript icon/run/exp.replay.run \
  --run plugin.yaml --set device=cpu --bin-dir "$BIN/bin" >runscript.out 2>runscript.err || fail "--icon-runscript failed: $(cat runscript.err)"
assert_not_contains "$(cat icon/run/exp.replay.run)" "export LD_LIBRARY_PATH=$BIN/lib" "run script: the build's lib/ is not put on LD_LIBRARY_PATH"
job="$(cd icon/run && LD_LIBRARY_PATH="$BIN/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" sbatch --parsable exp.replay.run)"
log="$(cat "icon/LOG.exp.replay.run.$job.o" 2>/dev/null || true)"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-$job.rc" 2>/dev/null)" 0 "run script: exit status (log: $log)"
assert_not_contains "$log" "undefined symbol" "run script: comin_replay loaded ComIn's libcomin.so.0"
assert_contains "$(cat icon/exp/replay.nml 2>/dev/null)" \
  "  plugin_list(2)%options        = \"$WORK/plugin.yaml device=cpu checkpoint.resume=auto\"" "run script: finecast in &comin_nml"
assert_contains "$log" "Training session 2 at 1979-01-01T04:00:00" "run script: finecast trained under comin_replay"
assert_contains "$log" "the model ran" "run script: past \${START_MODEL} || exit 1"
[[ -f icon/exp/ckpt/ckpt_00000008.h5 ]] || fail "run script: no checkpoint icon/exp/ckpt/ckpt_00000008.h5"

finish
