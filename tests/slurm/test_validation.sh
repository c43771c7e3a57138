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
rejects "missing run file" "run file '$WORK/missing.yaml': no such file" \
  --profile cpu --run missing.yaml --dry-run
# A run file that is a link to /dev/zero (read without end) is named for what it is, not as missing.
ln -sf /dev/zero "$WORK/zero.yaml"
rejects "run file linked to a device" "run file '$WORK/zero.yaml': not a regular file (a character device)" \
  --profile cpu --run zero.yaml --dry-run
rejects "bad time" "time '90min' is not a SLURM time; use MM, HH:MM:SS or D-HH:MM:SS" \
  --profile cpu --run run.yaml --dry-run --param time=90min
rejects "zero nodes" "nodes must be from 1 to 200000, got 0" --profile cpu --run run.yaml --dry-run --param nodes=0
rejects "unknown kind" "kind must be 'gpu' or 'cpu', got 'tpu'" --profile cpu --run run.yaml --dry-run --param kind=tpu
rejects "unknown program" "program must be one of host | replay, or a mapping {executable: PATH, args: [...], namelists: [...]} for ICON or another ComIn host (configs/slurm/icon.yaml), got 'icon'" \
  --profile cpu --run run.yaml --dry-run --param program=icon
rejects "unknown profile" "profile 'nosuch' not found" --profile nosuch --run run.yaml --dry-run
assert_contains "$(cat stderr)" "known profiles: cpu, external, gpu, icon, icon_gpu, replay" "unknown profile lists the known ones"
rejects "missing resume directory" "--resume $WORK/nockpt: no such directory" \
  --profile cpu --run run.yaml --dry-run --resume "$WORK/nockpt"
rejects "unknown argument" "unknown argument '--bogus'" --profile cpu --bogus
rejects "no profile" "--profile is required" --run run.yaml --dry-run
rejects "--set without =" "--set expects KEY=VALUE, got 'device'" --profile cpu --run run.yaml --dry-run --set device
rejects "a line break in --set" "set.sample.output: the value 'a\\nb.nc' holds a line break" \
  --profile cpu --run run.yaml --dry-run --set $'sample.output=a\nb.nc'
rejects "a control character in set:" "set.seed: the value '1\\x1b' holds the control character(s) '\\x1b'" \
  --profile cpu --run run.yaml --dry-run --param 'set.seed="1\e"'
rejects "chain of zero" "--chain expects a number of chunks from 1 to 1000, got '0'" --profile cpu --run run.yaml --dry-run --chain 0
rejects "chain not a number" "--chain expects a number of chunks from 1 to 1000, got 'x'" --profile cpu --run run.yaml --dry-run --chain x

# ---- every number has an upper bound: a clear error naming the option and the range, no
# traceback, nothing written (issue #23: --chain 3000000000 ended in an OverflowError) ----
bounded() {  # bounded WHAT NEEDLE ARGS...: like rejects, and no traceback, no file written
  local what="$1"
  rejects "$@"
  assert_not_contains "$(cat stderr)" "Traceback" "$what: no traceback"
  [[ ! -e bounded.sbatch && ! -e bounded-chunk1.sbatch && ! -d out ]] || fail "$what: something was written"
}
bounded "chain overflow" "--chain expects a number of chunks from 1 to 1000, got '3000000000'" \
  --profile cpu --run run.yaml --output bounded.sbatch --chain 3000000000
bounded "chain of 30 digits" "--chain expects a number of chunks from 1 to 1000, got '$(printf '9%.0s' {1..30})'" \
  --profile cpu --run run.yaml --output bounded.sbatch --chain "$(printf '9%.0s' {1..30})"
bounded "chain=1001" "--chain expects a number of chunks from 1 to 1000, got '1001'" \
  --profile cpu --run run.yaml --output bounded.sbatch --chain=1001
bounded "array id too large" "--array 0-3000000000: task id 3000000000 is too large; task ids go from 0 to 4000000" \
  --profile cpu --run run.yaml --output bounded.sbatch --array 0-3000000000
bounded "array id of 30 digits" "task ids go from 0 to 4000000" \
  --profile cpu --run run.yaml --output bounded.sbatch --array "1-$(printf '9%.0s' {1..30})"
bounded "array throttle" "--array 0-3%0: the limit of tasks at a time (%0) must be from 1 to 4000001" \
  --profile cpu --run run.yaml --output bounded.sbatch --array 0-3%0
bounded "empty array range" "--array 7-3: '7-3' is empty" --profile cpu --run run.yaml --output bounded.sbatch --array 7-3
# Every profile number beyond its bound, all reported by one launch (one round of fixes).
bounded "nodes" "nodes must be from 1 to 200000, got 3000000000" --profile gpu --run run.yaml --output bounded.sbatch \
  --param nodes=3000000000 --param ntasks_per_node=100000 --param cpus_per_task=5000 --param cores_per_node=99999 \
  --param gpus_per_node=128 --param gpus.count=3000000000 --param time=3000000000-00:00:00 --param mem=3000000000G
for needle in "ntasks_per_node must be from 1 to 4096, got 100000" "cpus_per_task must be from 1 to 4096, got 5000" \
              "cores_per_node must be from 1 to 4096, got 99999" "gpus_per_node must be from 1 to 64, got 128" \
              "gpus.count must be from 0 to 64, got 3000000000" \
              "time '3000000000-00:00:00' is more than the largest allowed, 365-00:00:00 (one year)" \
              "mem '3000000000G' is more than the largest allowed, 64T per node"; do
  assert_contains "$(cat stderr)" "$needle" "profile numbers beyond their bounds"
done
bounded "trainers" "trainers.count must be from 0 to 100000, got 3000000000" --profile external --run run.yaml --output bounded.sbatch \
  --param trainers.count=3000000000 --param time=600000
assert_contains "$(cat stderr)" "time 600000 is more than the largest allowed" "wall time in minutes"
bounded "trainers.nodes" "trainers.nodes must be from 1 to 200000, got 9999999" --profile external --run run.yaml --output bounded.sbatch --param trainers.nodes=9999999
bounded "a number of 5000 digits" "--param nodes: the value has 5000 characters; no profile key takes a number that large" \
  --profile cpu --run run.yaml --output bounded.sbatch --param "nodes=$(printf '9%.0s' {1..5000})"
# The largest allowed values still render.
"$LAUNCH" --profile cpu --run run.yaml --dry-run --param time=365-00:00:00 --param mem=64T --array 0-4000000%4000001 >/dev/null 2>stderr ||
  fail "the largest allowed time, mem and array were refused: $(cat stderr)"
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

# The plugin's grid.file, relative to the job's working directory, is checked with the build's
# finecast-grid at its grid.coarse_level: a limited area without an R2B0 cell inside is refused.
if [[ -x "$BIN/bin/finecast-grid" ]]; then
  mkdir -p grid-bin
  ln -sf "$BIN/bin/finecast-grid" grid-bin/finecast-grid
  "$BIN/bin/finecast-grid" --write-icon-grid lam.nc --level 4 --region 25,60,-20,35 --coarse-level 2 >/dev/null ||
    fail "finecast-grid could not write lam.nc"
  printf 'fields: [ts]\ndevice: cpu\ngrid: {file: lam.nc, coarse_level: 0}\n' >lam.yaml
  printf 'plugins:\n  - {name: finecast, library: lib/libfinecast_comin.so, options: lam.yaml}\n' >lam-run.yaml
  rejects "a grid finecast cannot use" "finecast cannot use grid.file lam.nc ($WORK/lam.nc): ICON grid '$WORK/lam.nc' (limited area): none of its 10 R2B0 cells lies wholly in the domain" \
    --profile cpu --run lam-run.yaml --bin-dir grid-bin --dry-run
  rc=0
  "$LAUNCH" --profile cpu --run lam-run.yaml --bin-dir grid-bin --dry-run --set grid.coarse_level=2 >stdout 2>stderr || rc=$?
  assert_eq "$rc" 0 "the same grid at R2B2: accepted ($(cat stderr))"
fi

# An invalid profile submits nothing.
rejects "no submission" "cores_per_node = 128" --profile cpu --run run.yaml --param cpus_per_task=64
rejects "one task too wide" "cpus_per_task = 256 alone exceeds cores_per_node = 128 of partition 'compute'. Fix: --param cpus_per_task=128" \
  --profile cpu --run run.yaml --dry-run --param cpus_per_task=256
[[ ! -e "$FAKE_SLURM_DIR/calls.log" ]] || fail "an invalid profile reached sbatch: $(cat "$FAKE_SLURM_DIR/calls.log")"

finish
