#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Invalid profiles and arguments are rejected (exit 2, nothing rendered or submitted) with a
# message that names the key and says how to fix it.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

touch run.yaml

# rejects WHAT NEEDLE ARGS...: launch.sh ARGS must exit 2, print nothing on stdout, and say NEEDLE.
rejects() {
  local what="$1" needle="$2" rc=0
  shift 2
  "$LAUNCH" "$@" >stdout 2>stderr || rc=$?
  assert_eq "$rc" 2 "$what: exit status"
  assert_eq "$(cat stdout)" "" "$what: stdout"
  assert_contains "$(cat stderr)" "$needle" "$what: message"
}

rejects "too many tasks for a GPU node" \
  "ntasks_per_node x cpus_per_task = 8 x 16 = 128 cores, but a node of partition 'gpu' has cores_per_node = 64. Fix: lower ntasks_per_node to 4 (--param ntasks_per_node=4) or cpus_per_task to 8 (--param cpus_per_task=8), or add nodes." \
  --profile gpu --run run.yaml --dry-run --param ntasks_per_node=8
rejects "GPUs on a CPU profile" \
  "gpus.count = 2 on a cpu profile: CPU partitions have no GPUs. Fix: remove 'gpus' (or --param gpus.count=0), or use a gpu profile (--profile gpu)" \
  --profile cpu --run run.yaml --dry-run --param gpus.count=2
rejects "cuda device on a CPU profile" "set.device = cuda:1 on a cpu profile, where no GPU exists" \
  --profile cpu --run run.yaml --dry-run --set device=cuda:1
rejects "more GPUs than the node has" \
  "gpus.count = 8, but a node of partition 'gpu' has gpus_per_node = 4. Fix: --param gpus.count=4" \
  --profile gpu --run run.yaml --dry-run --param gpus.count=8
rejects "GPU profile without GPUs" "a gpu profile needs gpus.count >= 1" \
  --profile gpu --run run.yaml --dry-run --param gpus.count=0
rejects "missing run file" "run file '$WORK/missing.yaml' does not exist" \
  --profile cpu --run missing.yaml --dry-run
rejects "bad time" "time '90min' is not a SLURM time; use MM, HH:MM:SS or D-HH:MM:SS" \
  --profile cpu --run run.yaml --dry-run --param time=90min
rejects "zero nodes" "nodes must be >= 1, got 0" --profile cpu --run run.yaml --dry-run --param nodes=0
rejects "unknown kind" "kind must be 'gpu' or 'cpu', got 'tpu'" --profile cpu --run run.yaml --dry-run --param kind=tpu
rejects "unknown program" "program must be one of host | replay, or a mapping {executable: PATH, args: [...], namelists: [...]} for ICON or another ComIn host (configs/slurm/icon.yaml), got 'icon'" \
  --profile cpu --run run.yaml --dry-run --param program=icon
rejects "unknown profile" "profile 'nosuch' not found" --profile nosuch --run run.yaml --dry-run
assert_contains "$(cat stderr)" "known profiles: cpu, external, gpu, icon, replay" "unknown profile lists the known ones"
rejects "missing resume directory" "--resume $WORK/nockpt: no such directory" \
  --profile cpu --run run.yaml --dry-run --resume "$WORK/nockpt"
rejects "unknown argument" "unknown argument '--bogus'" --profile cpu --bogus
rejects "no profile" "--profile is required" --run run.yaml --dry-run
rejects "--set without =" "--set expects KEY=VALUE, got 'device'" --profile cpu --run run.yaml --dry-run --set device
rejects "chain of zero" "--chain expects a number of chunks >= 1, got '0'" --profile cpu --run run.yaml --dry-run --chain 0
rejects "chain not a number" "--chain expects a number of chunks >= 1, got 'x'" --profile cpu --run run.yaml --dry-run --chain x
rejects "bad mem" "mem '2 GB' is not a SLURM memory size" --profile cpu --run run.yaml --dry-run --param 'mem=2 GB'
rejects "bad hint" "hint must be one of nomultithread, multithread, compute_bound, memory_bound (or empty), got 'fast'" \
  --profile cpu --run run.yaml --dry-run --param hint=fast
rejects "array in sbatch_extra" "sbatch_extra '--array=0-3': use launch.sh --array / --chain instead" \
  --profile cpu --run run.yaml --dry-run --param 'sbatch_extra=[--array=0-3]'

# A typo in a profile of one's own names the key, suggests the right one and lists all.
cat >typo.yaml <<'YAML'
kind: cpu
program: host
run: run.yaml
partition: compute
nodes: 1
ntask_per_node: 4
cpus_per_task: 4
cores_per_node: 128
time: "10"
YAML
rejects "unknown key" "unknown key 'ntask_per_node' (did you mean 'ntasks_per_node'?); allowed keys: account, bin_dir," \
  --profile ./typo.yaml --dry-run
assert_contains "$(cat stderr)" "missing required key 'ntasks_per_node'" "typo: the real key is missing too"
assert_contains "$(cat stderr)" "$WORK/typo.yaml:" "typo: the message names the profile file"

# A profile saved in another encoding (here Latin-1) is named with the byte and where it is,
# never answered with a Python traceback; so is a file with control characters.
printf 'kind: cpu\nprogram: host\npartition: r\xe9gion\n' >latin1.yaml
rejects "non-UTF-8 profile" "latin1.yaml is not UTF-8 text: byte 0xe9 at line 3, column 13. Fix: save the profile as UTF-8" \
  --profile ./latin1.yaml --run run.yaml --dry-run
assert_not_contains "$(cat stderr)" "Traceback" "non-UTF-8 profile: no traceback"
printf 'kind: cpu\n\001program: host\n' >control.yaml
rejects "control character in a profile" "control.yaml is not valid YAML" --profile ./control.yaml --run run.yaml --dry-run
assert_not_contains "$(cat stderr)" "Traceback" "control character: no traceback"

# Several problems are reported together, so one round of fixes is enough.
rejects "two problems" "time 'soon' is not a SLURM time" \
  --profile gpu --run run.yaml --dry-run --param time=soon --param cpus_per_task=32
assert_contains "$(cat stderr)" "4 x 32 = 128 cores" "two problems: the core count too"

# An invalid profile submits nothing.
rejects "no submission" "cores_per_node = 128" --profile cpu --run run.yaml --param cpus_per_task=64
rejects "one task too wide" "cpus_per_task = 256 alone exceeds cores_per_node = 128 of partition 'compute'. Fix: --param cpus_per_task=128" \
  --profile cpu --run run.yaml --dry-run --param cpus_per_task=256
[[ ! -e "$FAKE_SLURM_DIR/calls.log" ]] || fail "an invalid profile reached sbatch: $(cat "$FAKE_SLURM_DIR/calls.log")"

finish
