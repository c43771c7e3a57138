#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Ends a finecast job's log with its exit status and the files it wrote (outputs, checkpoints).
set -euo pipefail

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" || $# -lt 3 ]]; then
  cat <<'USAGE'
Usage: job_summary.sh STAMP STATUS LOG_PATTERN [DIR...]

Called at the end of the finecast job scripts. Lists the files under each DIR that are newer
than STAMP (a file the job created at its start): *.h5 as checkpoints, the rest as outputs,
except the files beside the log (the log directory holds logs and job scripts).
LOG_PATTERN's %j becomes $SLURM_JOB_ID, %A and %a an array's job and task id.
USAGE
  [[ $# -lt 3 ]] && exit 2
  exit 0
fi

stamp="$1" status="$2" log="$3"
shift 3
log="${log//%j/${SLURM_JOB_ID:-unknown}}"
log="${log//%A/${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-unknown}}}"
log="${log//%a/${SLURM_ARRAY_TASK_ID:-0}}"

checkpoints=()
outputs=()
for dir in "$@"; do
  [[ -d "$dir" ]] || continue
  while IFS= read -r -d '' file; do
    case "$file" in
      "$(dirname "$log")"/*) ;;  # the job's own log and job scripts are not results
      *.h5) checkpoints+=("$file") ;;
      *) outputs+=("$file") ;;
    esac
  done < <(find "$dir" -type f -newer "$stamp" -print0 | sort -z)
done

echo "finecast: job ${SLURM_JOB_ID:-?} finished with exit status ${status}"
echo "finecast: log: ${log}"
if (($# == 0)); then
  echo "finecast: no output directories to list (profile key 'outputs', or --set checkpoint.dir=DIR)"
fi
echo "finecast: checkpoints written (${#checkpoints[@]}):"
for file in "${checkpoints[@]}"; do echo "  ${file}"; done
echo "finecast: outputs written (${#outputs[@]}):"
for file in "${outputs[@]}"; do echo "  ${file}"; done
if ((${#checkpoints[@]} > 0)); then
  echo "finecast: continue from them with: scripts/launch.sh ... --resume $(dirname "${checkpoints[-1]}")"
fi
if [[ "$status" != 0 ]]; then
  echo "finecast: the run failed; its error is in the log above"
fi
