#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Rendered GPU, CPU and replay job scripts pass shellcheck and ask for exactly the resources given.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v shellcheck >/dev/null 2>&1 || { echo "shellcheck is not installed (Debian package shellcheck)"; exit 1; }

touch run.yaml replay.yaml
mkdir -p ckpt

check_script() {  # check_script FILE WHAT
  bash -n "$1" || fail "$2: bash -n rejects the rendered script"
  shellcheck -s bash "$1" || fail "$2: shellcheck rejects the rendered script"
}

# ---- GPU: every resource overridden on the command line ----
"$LAUNCH" --profile gpu --run run.yaml --dry-run --output gpu.sbatch \
  --param account=bb1234 --param partition=gpu-a100 --param gpus.type=a100_80 --param gpus.count=2 \
  --param time=02:30:00 --param 'modules=[gcc/11.2.0, openmpi/4.1.2]' --param env.MY_FLAG=fast \
  --set train.epochs=3 --resume ckpt >gpu.stdout 2>gpu.stderr || fail "gpu render failed: $(cat gpu.stderr)"
gpu="$(cat gpu.sbatch)"
[[ -x gpu.sbatch ]] || fail "gpu: --output file is not executable"
assert_eq "$(cat gpu.stdout)" "$gpu" "gpu: --dry-run prints the script it wrote"
check_script gpu.sbatch gpu
for line in "#SBATCH --account=bb1234" "#SBATCH --partition=gpu-a100" "#SBATCH --nodes=1" \
            "#SBATCH --ntasks-per-node=4" "#SBATCH --cpus-per-task=16" "#SBATCH --gres=gpu:a100_80:2" \
            "#SBATCH --time=02:30:00" "#SBATCH --job-name=finecast-gpu" \
            "#SBATCH --output=$WORK/out/slurm/finecast-gpu-%j.out" \
            "module load gcc/11.2.0 openmpi/4.1.2" "export MY_FLAG=fast" "nvidia-smi -L" \
            "#SBATCH --hint=nomultithread" \
            "srun --nodes=1 --ntasks-per-node=4 --cpus-per-task=16 --hint=nomultithread --kill-on-bad-exit=1 $SRC/scripts/slurm/bind_gpu.sh" \
            "/finecast-host $WORK/run.yaml --set device=cuda --set train.epochs=3 --set checkpoint.resume=$WORK/ckpt" \
            "job_summary.sh"; do
  assert_contains "$gpu" "$line" "gpu script"
done
# The #SBATCH header must come before the first command, or sbatch ignores it.
first_cmd="$(grep -n -v -E '^(#|$)' gpu.sbatch | head -1 | cut -d: -f1)"
last_sbatch="$(grep -n '^#SBATCH' gpu.sbatch | tail -1 | cut -d: -f1)"
((last_sbatch < first_cmd)) || fail "gpu: #SBATCH line $last_sbatch after the first command (line $first_cmd)"

# ---- CPU: defaults of the profile ----
"$LAUNCH" --profile cpu --run run.yaml --dry-run --output cpu.sbatch >/dev/null 2>cpu.stderr ||
  fail "cpu render failed: $(cat cpu.stderr)"
cpu="$(cat cpu.sbatch)"
check_script cpu.sbatch cpu
for line in "#SBATCH --partition=compute" "#SBATCH --ntasks-per-node=8" "#SBATCH --cpus-per-task=16" \
            "#SBATCH --time=00:30:00" "srun --nodes=1 --ntasks-per-node=8 --cpus-per-task=16 " \
            "/finecast-host $WORK/run.yaml --set device=cpu" \
            'export OMP_NUM_THREADS="${SLURM_CPUS_PER_TASK:-16}"'; do
  assert_contains "$cpu" "$line" "cpu script"
done
for absent in "--gres" "bind_gpu.sh" "--account" "module load" "module purge"; do
  assert_not_contains "$cpu" "$absent" "cpu script"
done

# ---- modules as a mapping: module purge, then module use for each path, then the loads ----
"$LAUNCH" --profile cpu --run run.yaml --dry-run --output modules.sbatch \
  --param 'modules={purge: true, use: [/sw/spack-levante/modules, "/home/b/my modules"], load: [gcc/11.2.0, openmpi/4.1.2]}' \
  >/dev/null 2>modules.stderr || fail "modules render failed: $(cat modules.stderr)"
check_script modules.sbatch "modules mapping"
assert_contains "$(cat modules.sbatch)" "fi
module purge
module use /sw/spack-levante/modules
module use '/home/b/my modules'
module load gcc/11.2.0 openmpi/4.1.2
# -u only from here" "modules mapping: purge, use, load in this order, before set -u"
# kill_on_bad_exit: false leaves srun's default; an own --kill-on-bad-exit in srun_extra is not doubled.
out="$("$LAUNCH" --profile cpu --run run.yaml --dry-run --param kill_on_bad_exit=false 2>/dev/null)"
assert_not_contains "$out" "--kill-on-bad-exit" "kill_on_bad_exit: false"
out="$("$LAUNCH" --profile cpu --run run.yaml --dry-run --param 'srun_extra=[--kill-on-bad-exit=0]' 2>/dev/null)"
assert_eq "$(grep -o -- '--kill-on-bad-exit=[0-9]' <<<"$out" | tr '\n' ' ')" "--kill-on-bad-exit=0 " "srun_extra's own kill-on-bad-exit"

# A command-line --set replaces the profile's value instead of adding a second one.
out="$("$LAUNCH" --profile cpu --run run.yaml --dry-run --set device=auto 2>/dev/null)"
assert_eq "$(grep -o -- '--set device=[a-z]*' <<<"$out" | tr '\n' ' ')" "--set device=auto " "cpu --set device=auto"

# ---- replay: finecast-replay --config, one GPU ----
"$LAUNCH" --profile replay --run replay.yaml --dry-run --output replay.sbatch >/dev/null 2>replay.stderr ||
  fail "replay render failed: $(cat replay.stderr)"
replay="$(cat replay.sbatch)"
check_script replay.sbatch replay
assert_contains "$replay" "#SBATCH --gres=gpu:a100:1" "replay script"
assert_contains "$replay" "/finecast-replay --config $WORK/replay.yaml --set device=cuda" "replay script"

# ---- a profile of one's own, by path, with extra sbatch/srun options and no GPU type ----
cat >mine.yaml <<'YAML'
kind: gpu
program: host
run: run.yaml
partition: accel
nodes: 2
ntasks_per_node: 2
cpus_per_task: 8
cores_per_node: 32
gpus_per_node: 2
gpus: {count: 2}
time: "1-00:00:00"
set: {device: "cuda", checkpoint: {every: 5}}
sbatch_extra: ["--exclusive", "--mem=0"]
srun_extra: ["--hint=nomultithread"]
job_name: downscale
YAML
"$LAUNCH" --profile ./mine.yaml --dry-run --output mine.sbatch >/dev/null 2>mine.stderr ||
  fail "own profile render failed: $(cat mine.stderr)"
mine="$(cat mine.sbatch)"
check_script mine.sbatch "own profile"
for line in "#SBATCH --gres=gpu:2" "#SBATCH --nodes=2" "#SBATCH --time=1-00:00:00" "#SBATCH --exclusive" \
            "#SBATCH --mem=0" "#SBATCH --job-name=downscale" "--hint=nomultithread" \
            "--set device=cuda --set checkpoint.every=5"; do
  assert_contains "$mine" "$line" "own profile"
done

finish
