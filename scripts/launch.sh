#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Renders a finecast SLURM job from a profile, validates it, and submits it (or prints it).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<'USAGE'
Usage: scripts/launch.sh --profile gpu|cpu|replay|PATH [--run FILE] [options]

Renders the job script for a finecast run from a SLURM profile (configs/slurm/NAME.yaml),
checks that it fits the nodes it asks for, and submits it with sbatch. Prints the job id,
how to watch it and where its log goes. Nothing is submitted with --dry-run.

Options:
  --profile NAME|PATH   gpu (production, trains on a GPU), cpu (debugging), replay (offline
                        finecast-replay), or the path of your own profile YAML
  --run FILE            finecast host run file (program: host) or replay config
                        (program: replay); default: the profile's 'run'
  --set KEY=VALUE       plugin config override handed to the program as --set KEY=VALUE,
                        e.g. --set device=cpu --set train.epochs=2 (repeatable)
  --resume DIR          continue from the newest valid checkpoint in DIR
                        (same as --set checkpoint.resume=DIR); works across CPU and GPU
  --param KEY=VALUE     profile override, e.g. --param account=bb1234
                        --param time=04:00:00 --param gpus.count=1 (repeatable)
  --bin-dir DIR         where finecast-host / finecast-replay live (default: <repo>/build/bin)
  --output FILE         where to write the job script (default: <log_dir>/<job>-<time>.sbatch)
  --dry-run             print the job script and exit; submit nothing
  -h, --help            this text

Environment: FINECAST_PYTHON (default /usr/bin/python3 if it has PyYAML, else python3)
runs the renderer; SBATCH (default sbatch) is the submit command.

Examples:
  scripts/launch.sh --profile gpu --run configs/demo_host.yaml --param account=bb1234
  scripts/launch.sh --profile cpu --run configs/demo_host.yaml --resume out/checkpoints --dry-run
The profile keys and the CPU <-> GPU workflow: docs/slurm.md.
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
while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dry-run) dry_run=1; shift ;;
    --profile | --run | --set | --resume | --param | --bin-dir | --output)
      (($# >= 2)) || die "$1 needs a value (see --help)"
      case "$1" in
        --output) output="$2" ;;
        --profile) have_profile=1; render_args+=("$1" "$2") ;;
        *) render_args+=("$1" "$2") ;;
      esac
      shift 2 ;;
    --profile=* | --run=* | --set=* | --resume=* | --param=* | --bin-dir=*)
      [[ "$1" == --profile=* ]] && have_profile=1
      render_args+=("${1%%=*}" "${1#*=}"); shift ;;
    --output=*) output="${1#*=}"; shift ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
((have_profile)) || die "--profile is required: gpu, cpu, replay or a profile path (see --help)"

python="${FINECAST_PYTHON:-}"
if [[ -z "$python" ]]; then
  if /usr/bin/python3 -c 'import yaml' >/dev/null 2>&1; then
    python=/usr/bin/python3
  else
    python=python3
  fi
fi

if ((dry_run)) && [[ -z "$output" ]]; then
  exec "$python" "$repo/scripts/slurm/render.py" "${render_args[@]}" --output -
fi

summary="$(mktemp "${TMPDIR:-/tmp}/finecast-launch.XXXXXX")"
trap 'rm -f "$summary"' EXIT
tmp_script="${output:-$(mktemp "${TMPDIR:-/tmp}/finecast-job.XXXXXX")}"
"$python" "$repo/scripts/slurm/render.py" "${render_args[@]}" --output "$tmp_script" \
  --summary "$summary"

log_file="" log_dir="" job_name=""
while IFS='=' read -r key value; do
  case "$key" in
    log_file) log_file="$value" ;;
    log_dir) log_dir="$value" ;;
    job_name) job_name="$value" ;;
  esac
done <"$summary"
mkdir -p "$log_dir"  # sbatch does not create the --output directory; a missing one loses the log

if [[ -n "$output" ]]; then
  script="$output"
else
  script="$log_dir/$job_name-$(date +%Y%m%d-%H%M%S).sbatch"
  mv "$tmp_script" "$script"
fi
if ((dry_run)); then
  cat "$script"
  echo "launch: job script written to $script (not submitted: --dry-run)" >&2
  exit 0
fi

sbatch="${SBATCH:-sbatch}"
command -v "$sbatch" >/dev/null 2>&1 ||
  die "'$sbatch' not found: submit from a SLURM login node, or use --dry-run to only render"
echo "launch: submitting $script"
reply="$("$sbatch" --parsable "$script")" || die "sbatch refused $script (its message is above)"
job_id="${reply%%;*}"  # --parsable prints ID or ID;CLUSTER
[[ "$job_id" =~ ^[0-9]+$ ]] || die "could not read a job id from sbatch's reply '$reply'"
echo "launch: submitted job $job_id"
echo "launch: watch it with:  squeue -j $job_id"
echo "launch: its log:        ${log_file//%j/$job_id}   (tail -f it once the job runs)"
echo "launch: cancel with:    scancel $job_id"
