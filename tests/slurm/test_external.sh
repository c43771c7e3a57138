#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The trainers as finecast-trainer processes on GPU nodes (train.placement: external): the
# rendered script is a heterogeneous job (#SBATCH hetjob between the host's and the trainers'
# options) started by one srun whose ':' separates the host from finecast-trainer --comm; launch.sh
# puts finecast's comm into the host's plugin entry (a run-file copy, or ICON's &comin_nml) and
# sets coupling.communicator, train.placement and train.ranks; the GPU and CUDA checks apply to
# the trainers; layouts that cannot work are refused naming the keys. Stub builds and probes
# stand in for finecast, so nothing needs to be built.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v shellcheck >/dev/null 2>&1 || { echo "shellcheck is not installed (Debian package shellcheck)"; exit 1; }
check_script() {  # check_script FILE WHAT
  bash -n "$1" || fail "$2: bash -n rejects the rendered script"
  shellcheck -s bash "$1" || fail "$2: shellcheck rejects the rendered script"
}

mkdir -p probe-bin
for p in finecast-host finecast-replay finecast-trainer; do
  printf '#!/bin/bash\necho "%s $*"\n' "$p" >"probe-bin/$p"
  chmod +x "probe-bin/$p"
done
make_stub_plugin cuda-build/lib cuda
make_stub_plugin cpu-build/lib cpu
LIB="$WORK/cuda-build/lib/libfinecast_comin.so"
printf 'fields: [ts]\ndevice: cuda\n' >plugin.yaml
printf 'steps: 4\nplugins:\n  - {name: finecast, library: %s, options: plugin.yaml}\n' "$LIB" >run.yaml
printf 'steps: 4\nplugins:\n  - {name: finecast, library: %s, options: plugin.yaml, comm: ml}\n' "$LIB" >run-ml.yaml
printf 'steps: 4\nplugins:\n  - {name: finecast, library: cpu-build/lib/libfinecast_comin.so, options: plugin.yaml}\n' >cpu-run.yaml

launch() {  # launch ARGS...: launch.sh with stdout, stderr in files and the exit status in $rc
  rc=0
  "$LAUNCH" "$@" >stdout 2>stderr || rc=$?
}
ext=(--profile external --bin-dir probe-bin --param account=bb1234)

# ---- the shipped profile with two trainers: one GPU node, two GPUs ----
launch "${ext[@]}" --run run.yaml --param trainers.count=2 --dry-run --output ext.sbatch
assert_eq "$rc" 0 "external: dry run ($(cat stderr))"
assert_not_contains "$(cat stderr)" "warning" "external, CUDA build, account given: no warning"
script="$(cat ext.sbatch)"
check_script ext.sbatch external
header="$(grep '^#SBATCH' ext.sbatch)"
assert_eq "$header" "#SBATCH --account=bb1234
#SBATCH --partition=compute
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=8
#SBATCH --cpus-per-task=16
#SBATCH --hint=nomultithread
#SBATCH --time=01:00:00
#SBATCH --job-name=finecast-external
#SBATCH --output=$WORK/out/slurm/finecast-external-%j.out
#SBATCH hetjob
#SBATCH --account=bb1234
#SBATCH --partition=gpu
#SBATCH --nodes=1
#SBATCH --ntasks=2
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=16
#SBATCH --hint=nomultithread
#SBATCH --gres=gpu:a100:2
#SBATCH --time=01:00:00" "external: the two components' #SBATCH lines"
first_cmd="$(grep -n -v -E '^(#|$)' ext.sbatch | head -1 | cut -d: -f1)"
last_sbatch="$(grep -n '^#SBATCH' ext.sbatch | tail -1 | cut -d: -f1)"
((last_sbatch < first_cmd)) || fail "external: #SBATCH line $last_sbatch after the first command (line $first_cmd)"
srun_line="$(grep '^srun ' ext.sbatch)"
assert_eq "$srun_line" "srun --nodes=1 --ntasks-per-node=8 --cpus-per-task=16 --hint=nomultithread --kill-on-bad-exit=1 $WORK/probe-bin/finecast-host \"\${run_file}\" --set device=cuda --set coupling.communicator=plugin --set train.placement=external --set train.ranks=2 : --nodes=1 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=16 --hint=nomultithread --kill-on-bad-exit=1 $SRC/scripts/slurm/bind_gpu.sh env OMP_NUM_THREADS=16 $WORK/probe-bin/finecast-trainer --comm finecast --plugin $LIB || status=\$?" \
  "external: one heterogeneous srun, host then trainers"
# The run file the host gets: the user's, with comm: finecast in finecast's entry.
for line in "run_file=$WORK/out/slurm/finecast-external-run-\"\${SLURM_JOB_ID:-0}\".yaml" \
            "  library: $LIB" "  options: plugin.yaml" "  comm: finecast" \
            "8 host + 2 trainer ranks" "finecast: trainers: 2 finecast-trainer process(es) on partition gpu, one GPU each" \
            "finecast: host ranks: no GPU (CPU partition)"; do
  assert_contains "$script" "$line" "external script"
done

# Six trainers need two 4-GPU nodes (nodes: auto), three on each.
launch "${ext[@]}" --run run.yaml --param trainers.count=6 --dry-run
assert_eq "$rc" 0 "six trainers: dry run ($(cat stderr))"
for line in "#SBATCH --nodes=2" "#SBATCH --ntasks=6" "#SBATCH --ntasks-per-node=3" "#SBATCH --gres=gpu:a100:3" \
            " : --nodes=2 --ntasks=6 --ntasks-per-node=3 " "--set train.ranks=6"; do
  assert_contains "$(cat stdout)" "$line" "six trainers"
done

# A run file that already names a comm keeps it: no copy, finecast-trainer joins that comm.
launch "${ext[@]}" --run run-ml.yaml --dry-run
assert_eq "$rc" 0 "run file with comm: ml ($(cat stderr))"
assert_contains "$(cat stdout)" "/finecast-host $WORK/run-ml.yaml --set device=cuda" "comm ml: the run file itself"
assert_contains "$(cat stdout)" "/finecast-trainer --comm ml --plugin $LIB" "comm ml: finecast-trainer --comm ml"
assert_not_contains "$(cat stdout)" "run_file=" "comm ml: no run-file copy"
# trainers.comm wins over the run file's.
launch "${ext[@]}" --run run-ml.yaml --dry-run --param trainers.comm=finecast_ml
assert_contains "$(cat stdout)" "  comm: finecast_ml" "trainers.comm: the copy's comm"
assert_contains "$(cat stdout)" "--comm finecast_ml" "trainers.comm: finecast-trainer's"

# Trainers on a CPU partition (the layout on any cluster, e.g. to debug it): no GPU anywhere.
launch "${ext[@]}" --run run.yaml --dry-run --set device=cpu --param trainers.kind=cpu \
  --param trainers.partition=compute --param trainers.cores_per_node=128
assert_eq "$rc" 0 "cpu trainers: dry run ($(cat stderr))"
assert_not_contains "$(cat stdout)" "--gres" "cpu trainers: no GPUs"
assert_not_contains "$(cat stdout)" "bind_gpu.sh" "cpu trainers: no GPU binding"
assert_contains "$(cat stdout)" " : --nodes=1 --ntasks=1 --ntasks-per-node=1 --cpus-per-task=16 --hint=nomultithread --kill-on-bad-exit=1 env OMP_NUM_THREADS=16 $WORK/probe-bin/finecast-trainer" "cpu trainers: srun"

# finecast-replay as the host: its config gets the comm the same way.
printf 'input: {files: [x.nc], variables: [ts]}\nplugins:\n  - {name: finecast, library: %s, options: plugin.yaml}\n' "$LIB" >replay.yaml
launch "${ext[@]}" --run replay.yaml --param program=replay --dry-run
assert_eq "$rc" 0 "replay host: dry run ($(cat stderr))"
assert_contains "$(cat stdout)" "/finecast-replay --config \"\${run_file}\" --set device=cuda" "replay host: the copy"
assert_contains "$(cat stdout)" "  comm: finecast" "replay host: comm"

# ICON (a program mapping): finecast's &comin_nml entry gets comm = "finecast" and the overrides.
printf '&comin_nml\n  plugin_list(1)%%name = "simple_c"\n  plugin_list(1)%%plugin_library = "libsimple_c.so"\n/\n' >NAMELIST_atm
printf '#!/bin/bash\n' >probe-icon
chmod +x probe-icon
launch "${ext[@]}" --run plugin.yaml --param program.executable=./probe-icon --param 'program.namelists=[NAMELIST_atm]' \
  --param program.plugin_library="$LIB" --dry-run --output icon.sbatch
assert_eq "$rc" 0 "ICON host: dry run ($(cat stderr))"
check_script icon.sbatch "ICON host"
for line in '  plugin_list(2)%name           = "finecast"' "  plugin_list(2)%plugin_library = \"$LIB\"" \
            "  plugin_list(2)%options        = \"$WORK/plugin.yaml device=cuda coupling.communicator=plugin train.placement=external train.ranks=1\"" \
            '  plugin_list(2)%comm = "finecast"' "$WORK/probe-icon : --nodes=1 --ntasks=1 " \
            "/finecast-trainer --comm finecast --plugin $LIB"; do
  assert_contains "$(cat icon.sbatch)" "$line" "ICON host"
done

# A chain: every chunk is a heterogeneous job whose own run file has the comm.
launch "${ext[@]}" --run run.yaml --chain 2 --dry-run
assert_eq "$rc" 0 "chain of two: dry run ($(cat stderr))"
assert_eq "$(grep -c '^  comm: finecast$' stdout)" 2 "chain: each chunk's run file has comm: finecast"
assert_eq "$(grep -c '^#SBATCH hetjob$' stdout)" 2 "chain: each chunk is a heterogeneous job"
assert_eq "$(grep -c ' : --nodes=1 --ntasks=1 .*finecast-trainer --comm finecast' stdout)" 2 "chain: each chunk starts the trainer"

# ---- submission: the fake sbatch sees both components ----
FAKE_SBATCH_NO_RUN=1 launch "${ext[@]}" --run run.yaml --param trainers.count=2
assert_eq "$rc" 0 "external: submitted ($(cat stderr))"
calls="$(cat "$FAKE_SLURM_DIR/calls.log")"
assert_contains "$calls" "sbatch-option hetjob" "submission: the hetjob separator"
assert_contains "$calls" "sbatch-option[1] --gres=gpu:a100:2" "submission: the trainers' GPUs"
assert_contains "$calls" "sbatch-option --partition=compute" "submission: the host's partition"

# ---- the CUDA check is the trainers' (they load the host's plugin) ----
launch "${ext[@]}" --run cpu-run.yaml
assert_eq "$rc" 2 "CPU-only build, GPU trainers: refused"
assert_contains "$(cat stderr)" "the finecast plugin it loads ($WORK/cpu-run.yaml: plugins[0]), which the finecast-trainer processes load, is a CPU-only build" "CPU-only build: message"
launch "${ext[@]}" --run cpu-run.yaml --set device=cpu --param trainers.kind=cpu --param trainers.partition=compute --dry-run
assert_eq "$rc" 0 "CPU-only build, CPU trainers: fine ($(cat stderr))"

# ---- layouts that cannot work: exit 2, the key and the fix named ----
rejects() {  # rejects WHAT NEEDLE ARGS...
  local what="$1" needle="$2"
  shift 2
  launch "$@"
  assert_eq "$rc" 2 "$what: exit status"
  assert_eq "$(cat stdout)" "" "$what: stdout"
  assert_contains "$(cat stderr)" "$needle" "$what: message"
}
rejects "array of a heterogeneous job" "--array with trainers.count = 1: SLURM has no arrays of heterogeneous jobs" \
  "${ext[@]}" --run run.yaml --dry-run --array 0-1
rejects "train.ranks against trainers.count" \
  "set.train.ranks = 3, but trainers.count = 2 starts finecast-trainer processes, which need train.ranks = 2 (launch.sh sets it). Fix: drop --set train.ranks=3, or --param trainers.count=3" \
  "${ext[@]}" --run run.yaml --dry-run --param trainers.count=2 --set train.ranks=3
rejects "another placement" "set.train.placement = packed, but trainers.count = 1 starts finecast-trainer processes, which need train.placement = external" \
  "${ext[@]}" --run run.yaml --dry-run --set train.placement=packed
rejects "too many trainers for the nodes' GPUs" \
  "trainers.count = 9 on 2 node(s) puts 5 trainers on a node of partition 'gpu', but each needs a GPU of its own and a node has trainers.gpus_per_node = 4. Fix: --param trainers.nodes=3 (or auto)" \
  "${ext[@]}" --run run.yaml --dry-run --param trainers.count=9 --param trainers.nodes=2
rejects "trainer cores" "trainers: 4 trainers x trainers.cpus_per_task = 4 x 32 = 128 cores on a node, but trainers.cores_per_node = 64" \
  "${ext[@]}" --run run.yaml --dry-run --param trainers.count=4 --param trainers.cpus_per_task=32
rejects "a node without a trainer" "trainers.nodes = 3 for trainers.count = 2: a node would hold no trainer" \
  "${ext[@]}" --run run.yaml --dry-run --param trainers.count=2 --param trainers.nodes=3
rejects "typo in trainers" "unknown key 'trainers.cuont' (did you mean 'trainers.count'?)" \
  "${ext[@]}" --run run.yaml --dry-run --param trainers.cuont=2
assert_contains "$(cat stderr)" "$SRC/configs/slurm/external.yaml:" "typo in trainers: names the profile"
rejects "cuda on CPU trainers" "set.device = cuda, but trainers.kind is cpu (no GPU on the trainer nodes)" \
  "${ext[@]}" --run run.yaml --dry-run --param trainers.kind=cpu
rejects "GPU trainers without a GPU device" "set.device = cpu uses no GPU, but the trainers are on a GPU partition (trainers.kind: gpu)" \
  "${ext[@]}" --run run.yaml --dry-run --set device=cpu
rejects "cuda:1 on a trainer" "set.device = cuda:1: every finecast-trainer process sees exactly one GPU" \
  "${ext[@]}" --run run.yaml --dry-run --set device=cuda:1
rejects "external placement without trainers" \
  "the plugin config sets train.placement: external, but the profile starts no finecast-trainer process. Fix: --param trainers.count=N" \
  --profile cpu --bin-dir probe-bin --run run.yaml --dry-run --set device=cpu --set train.placement=external
printf 'steps: 4\nplugins:\n  - {name: recorder, library: librec.so}\n' >nofinecast.yaml
rejects "no finecast in the run file" "trainers.count = 1, but $WORK/nofinecast.yaml loads no finecast plugin" \
  "${ext[@]}" --run nofinecast.yaml --dry-run
cat >mine.yaml <<'YAML'
kind: cpu
program: host
run: run.yaml
partition: compute
nodes: 1
ntasks_per_node: 2
cpus_per_task: 1
cores_per_node: 8
time: "10"
trainers: {count: 1}
YAML
rejects "trainers without their partition" "missing required key 'trainers.partition' (SLURM partition of the trainer component). Fix: --param trainers.partition=..." \
  --profile ./mine.yaml --bin-dir probe-bin --dry-run
assert_contains "$(cat stderr)" "$WORK/mine.yaml: missing required key 'trainers.gpus_per_node'" "own profile: names the file"
[[ ! -e "$FAKE_SLURM_DIR/calls.log" ]] || grep -c '^sbatch ' "$FAKE_SLURM_DIR/calls.log" | grep -qx 1 ||
  fail "a refused layout reached sbatch: $(cat "$FAKE_SLURM_DIR/calls.log")"

finish
