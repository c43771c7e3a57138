#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Renders finecast SLURM jobs from a profile, validates them, and submits them (or prints them).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<'USAGE'
Usage: scripts/launch.sh --profile gpu|cpu|replay|icon|icon_gpu|external|PATH [--run FILE] [options]
       scripts/launch.sh --icon-runscript exp.NAME.run --run finecast.yaml [--profile icon|icon_gpu|PATH]
                         [--set KEY=VALUE ...] [--param KEY=VALUE ...] [--output FILE] [--dry-run]

Renders the job script of a finecast run from a SLURM profile (configs/slurm/NAME.yaml),
checks it (the node's cores and GPUs, the plugin config, a CUDA build for GPU jobs, the
modules, the account), and submits it with sbatch. Prints the job id, how to watch it and
where its log goes. Nothing is submitted with --dry-run, and SLURM need not be installed.

Options:
  --profile NAME|PATH   gpu (production, trains on a GPU), cpu (debugging), replay (offline
                        finecast-replay), icon (ICON or any ComIn host program with finecast
                        in its &comin_nml), icon_gpu (ICON on every GPU, finecast's trainers
                        on GPUs of their own), external (the host on CPU nodes, the trainers as
                        finecast-trainer processes on GPU nodes: a heterogeneous job; give
                        --param trainers.count=N), or the path of your own profile YAML
  --run FILE            the finecast host run file (program: host), replay config
                        (program: replay) or plugin config (ICON); default: the profile's 'run'
  --set KEY=VALUE       plugin config override, e.g. --set device=cpu --set train.epochs=2
                        (repeatable); {task} in VALUE is the array task's id
  --resume DIR          continue from the newest valid checkpoint in DIR
                        (same as --set checkpoint.resume=DIR); works across CPU and GPU
  --param KEY=VALUE     profile override, e.g. --param account=bb1234
                        --param time=04:00:00 --param program.executable=PATH (repeatable)
  --chain N             N jobs in a row (a restart chain): each waits for the one before
                        (--dependency=afterok) and resumes from its checkpoints
                        (checkpoint.resume: auto); finecast-host chunks continue its model
                        time, ICON chunks set the profile's program.restart (lrestart)
  --array SPEC          a job array (0-3, 1,5,7, 0-15%4): one task per id, each with its own
                        output folder; use {task} in --set values (--set seed={task})
  --bin-dir DIR         where finecast-host / finecast-replay live (default: <repo>/build/bin)
  --output FILE         where to write the job script (default: <log_dir>/<job>-<time>.sbatch;
                        with --chain N: FILE-chunk1 ... FILE-chunkN)
  --no-cuda-check       submit a GPU job without checking that its build has CUDA
  --icon-runscript FILE instead of a job: put finecast into ICON's own experiment run script
                        (exp.NAME.run, in place; the original kept as FILE.orig): its &comin_nml
                        entry in the atmosphere namelist's heredoc, its environment before
                        ${START} ${MODEL} or ${START_MODEL}, and with trainers.count > 0
                        (--profile icon_gpu) the finecast-trainer component; the script's
                        chaining is left as it is, and each chunk resumes finecast
                        (checkpoint.resume: auto, unless --set/--resume say otherwise).
                        Idempotent: run it again after changing --set or the config
  --dry-run             print the job script(s) and exit; submit nothing
  -h, --help            this text

Environment: FINECAST_PYTHON (default /usr/bin/python3 if it has PyYAML, else python3)
runs the renderer; SBATCH (default sbatch) is the submit command; FINECAST_MODULE_INIT is a
script that defines the shell function 'module' (default: the site's, where it is found).

Examples:
  scripts/launch.sh --profile gpu --run configs/demo_host.yaml --param account=bb1234
  scripts/launch.sh --profile cpu --run configs/demo_host.yaml --resume out/checkpoints --dry-run
  scripts/launch.sh --profile gpu --run configs/demo_host.yaml --chain 4 --param account=bb1234
  scripts/launch.sh --profile cpu --run configs/demo_host.yaml --array 0-3 --set seed={task}
  scripts/launch.sh --profile my_icon.yaml --chain 10 --param account=bb1234
  scripts/launch.sh --profile external --run configs/demo_host.yaml --param trainers.count=4
  scripts/launch.sh --icon-runscript run/exp.my_amip.run --run finecast_icon.yaml --set device=cuda
The profile keys, chains, arrays and the CPU <-> GPU workflow: docs/slurm.md.
USAGE
}

die() {
  echo "launch: error: $*" >&2
  exit 2
}

render_args=()
dry_run=0
output=""
have_profile=0
chain=1
icon_runscript=""
while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dry-run) dry_run=1; shift ;;
    --no-cuda-check) render_args+=("$1"); shift ;;
    --profile | --run | --set | --resume | --param | --bin-dir | --output | --chain | --array | --icon-runscript)
      (($# >= 2)) || die "$1 needs a value (see --help)"
      case "$1" in
        --output) output="$2" ;;
        --icon-runscript) icon_runscript="$2" ;;
        --profile) have_profile=1; render_args+=("$1" "$2") ;;
        --chain) chain="$2"; render_args+=("$1" "$2") ;;
        *) render_args+=("$1" "$2") ;;
      esac
      shift 2 ;;
    --profile=* | --run=* | --set=* | --resume=* | --param=* | --bin-dir=* | --array=*)
      [[ "$1" == --profile=* ]] && have_profile=1
      render_args+=("${1%%=*}" "${1#*=}"); shift ;;
    --chain=*) chain="${1#*=}"; render_args+=(--chain "$chain"); shift ;;
    --output=*) output="${1#*=}"; shift ;;
    --icon-runscript=*) icon_runscript="${1#*=}"; shift ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
if [[ -n "$icon_runscript" ]] && ! ((have_profile)); then
  render_args+=(--profile icon)  # in-host trainers; --profile icon_gpu for trainers of their own
  have_profile=1
fi
((have_profile)) || die "--profile is required: gpu, cpu, replay, icon, icon_gpu, external or a profile path (see --help)"
# At most 4 digits before the arithmetic: bash's integers wrap silently past 2^63.
if ! [[ "$chain" =~ ^0*[0-9]{1,4}$ ]] || ((10#$chain < 1 || 10#$chain > 1000)); then
  die "--chain expects a number of chunks from 1 to 1000, got '$chain'"
fi

python="${FINECAST_PYTHON:-}"
if [[ -z "$python" ]]; then
  if /usr/bin/python3 -c 'import yaml' >/dev/null 2>&1; then
    python=/usr/bin/python3
  else
    python=python3
  fi
fi
render="$repo/scripts/slurm/render.py"

if [[ -n "$icon_runscript" ]]; then
  # An ICON run script is edited (or printed), not submitted: it submits and chains itself.
  if ((dry_run)); then
    exec "$python" "$render" "${render_args[@]}" --icon-runscript "$icon_runscript" --output -
  fi
  exec "$python" "$render" "${render_args[@]}" --icon-runscript "$icon_runscript" \
    --output "${output:-$icon_runscript}"
fi

if ((dry_run)) && [[ -z "$output" ]]; then
  "$python" "$render" "${render_args[@]}" --output -
  if ((chain > 1)); then
    echo "launch: not submitted (--dry-run); launch.sh would submit chunk 1, then chunk k with" \
      "sbatch --dependency=afterok:<job id of chunk k-1> --kill-on-invalid-dep=yes" >&2
  fi
  exit 0
fi

summary="$(mktemp "${TMPDIR:-/tmp}/finecast-launch.XXXXXX")"
trap 'rm -f "$summary"' EXIT
if [[ -n "$output" ]]; then
  target="$output"
else
  # Rendered into a scratch folder first: the log folder comes from the profile.
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/finecast-job.XXXXXX")"
  trap 'rm -f "$summary"; rm -rf "$scratch"' EXIT
  target="$scratch/job.sbatch"
fi
submit_flag=()
((dry_run)) || submit_flag=(--submit)
"$python" "$render" "${render_args[@]}" "${submit_flag[@]}" --output "$target" --summary "$summary"

log_file="" log_dir="" job_name="" dependency="afterok" array=""
scripts=()
while IFS='=' read -r key value; do
  case "$key" in
    log_file) log_file="$value" ;;
    log_dir) log_dir="$value" ;;
    job_name) job_name="$value" ;;
    dependency) dependency="$value" ;;
    array) array="$value" ;;
    script) scripts+=("$value") ;;
  esac
done <"$summary"
mkdir -p "$log_dir"  # sbatch does not create the --output directory; a missing one loses the log

if [[ -z "$output" ]]; then  # keep every submitted script beside the logs
  stamp="$(date +%Y%m%d-%H%M%S)"
  for i in "${!scripts[@]}"; do
    name="$job_name-$stamp.sbatch"
    ((${#scripts[@]} > 1)) && name="$job_name-$stamp-chunk$((i + 1)).sbatch"
    mv "${scripts[i]}" "$log_dir/$name"
    scripts[i]="$log_dir/$name"
  done
fi
if ((dry_run)); then
  for i in "${!scripts[@]}"; do
    if ((${#scripts[@]} > 1)); then
      ((i == 0)) || echo
      echo "# ==== chunk $((i + 1)) of ${#scripts[@]} ===="
    fi
    cat "${scripts[i]}"
  done
  echo "launch: job script(s) written: ${scripts[*]} (not submitted: --dry-run)" >&2
  exit 0
fi

sbatch="${SBATCH:-sbatch}"
command -v "$sbatch" >/dev/null 2>&1 ||
  die "'$sbatch' not found: submit from a SLURM login node, or use --dry-run to only render"
ids=()
for i in "${!scripts[@]}"; do
  script="${scripts[i]}"
  dep=()
  if ((i > 0)); then
    # A chunk whose predecessor failed is cancelled instead of waiting for ever.
    dep=("--dependency=$dependency:${ids[i - 1]}" --kill-on-invalid-dep=yes)
  fi
  what="$script"
  ((${#scripts[@]} > 1)) && what="chunk $((i + 1)) of ${#scripts[@]}: $script"
  echo "launch: submitting $what"
  reply="$("$sbatch" --parsable "${dep[@]}" "$script")" ||
    die "sbatch refused $script (its message is above)${ids[*]:+; already submitted: ${ids[*]} (scancel them if needed)}"
  job_id="${reply%%;*}"  # --parsable prints ID or ID;CLUSTER
  [[ "$job_id" =~ ^[0-9]+$ ]] || die "could not read a job id from sbatch's reply '$reply'"
  ids+=("$job_id")
  if ((i > 0)); then
    echo "launch: submitted job $job_id (starts after job ${ids[i - 1]} succeeded)"
  else
    echo "launch: submitted job $job_id"
  fi
done
first="${ids[0]}"
log="${log_file//%j/$first}"
log="${log//%A/$first}"
log="${log//%a/<task>}"
echo "launch: watch it with:  squeue -j $(IFS=,; echo "${ids[*]}")"
echo "launch: its log:        $log   (tail -f it once the job runs)"
if ((${#ids[@]} > 1)); then
  echo "launch: the later chunks log to the same pattern with their own job ids"
fi
[[ -n "$array" ]] && echo "launch: array $array: one log and one output folder per task"
echo "launch: cancel with:    scancel ${ids[*]}"
