#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Ends a finecast job's log with its exit status, its time against the wall time, how far the
# run got, and the files it wrote (outputs, checkpoints). With --progress: the same time and
# progress lines for a job that is still running, read from its log.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: job_summary.sh [--time WALL] STAMP STATUS LOG_PATTERN [DIR...]
       job_summary.sh --progress LOG [--time WALL]

Called at the end of the finecast job scripts. Lists the files under each DIR (or the file DIR) that are newer
than STAMP (a file the job created at its start): *.h5 as checkpoints, the rest as outputs,
except the files beside the log (the log directory holds logs and job scripts).
LOG_PATTERN's %j becomes $SLURM_JOB_ID, %A and %a an array's job and task id.
--time WALL (the job's --time: MM, HH:MM:SS, D-HH:MM:SS) adds the time used against it.

--progress LOG: for a running job (e.g. from the login node while it runs), how long it has
run against its wall time (both from the log's 'finecast: started' line) and, from the last
progress line of finecast-host ('step N/M, ... S s/step'), when its last step is due and
whether that is inside the wall time.
USAGE
}

# wall_seconds TIME: a SLURM time in seconds (empty when it is not one).
wall_seconds() {
  local t="$1" d=0 h=0 m=0 s=0 a b c
  [[ "$t" =~ ^([0-9]+-)?[0-9]+(:[0-9]+){0,2}$ ]] || return 0
  if [[ "$t" == *-* ]]; then
    d="${t%%-*}"
    IFS=: read -r h m s <<<"${t#*-}"
  else
    IFS=: read -r a b c <<<"$t"
    if [[ -n "${c:-}" ]]; then h="$a" m="$b" s="$c"; else m="$a" s="${b:-0}"; fi
  fi
  echo $((((10#$d * 24 + 10#${h:-0}) * 60 + 10#${m:-0}) * 60 + 10#${s:-0}))
}

hms() {  # hms SECONDS: H:MM:SS
  local t="${1%.*}"
  printf '%d:%02d:%02d' $((t / 3600)) $((t % 3600 / 60)) $((t % 60))
}

# progress_lines LOG ELAPSED WALL_SECONDS FINISHED: what the log's last progress line says.
# finecast-host prints "step N/M, model time T, S s/step, ..." on its rank 0.
progress_lines() {
  local log="$1" elapsed="$2" wall="$3" finished="$4" line n total rate left eta
  [[ -f "$log" ]] || return 0
  line="$(grep -E 'step [0-9]+/[0-9]+([^0-9].*)? [0-9.]+ s/step' "$log" | tail -n 1)" || true
  if [[ -z "$line" ]]; then
    echo "finecast: progress: the log has no progress line (finecast-host prints 'step N/M, ... s/step'); no ETA"
    return 0
  fi
  [[ "$line" =~ step\ ([0-9]+)/([0-9]+) ]] && n="${BASH_REMATCH[1]}" total="${BASH_REMATCH[2]}"
  [[ "$line" =~ \ ([0-9.]+)\ s/step ]] && rate="${BASH_REMATCH[1]}"
  left=$(awk -v n="$n" -v m="$total" -v r="$rate" 'BEGIN { printf "%d", (m - n) * r + 0.5 }')
  if ((n >= total)); then
    echo "finecast: progress: all $total steps done ($rate s/step at the end)"
    return 0
  fi
  if ((finished)); then
    echo "finecast: progress: the run ended at step $n of $total; the other $((total - n)) steps would" \
      "need about $(hms "$left") more at $rate s/step"
  else
    echo "finecast: progress: step $n of $total at $rate s/step: the last step in about $(hms "$left")"
  fi
  [[ -n "$wall" ]] || return 0
  eta=$((elapsed + left))
  local when="that is at" killed="the job will be killed"
  ((finished)) && when="had it gone on, its last step would have come at" killed="it would have been killed"
  if ((eta <= wall)); then
    echo "finecast: progress: $when $(hms "$eta") of the wall time $(hms "$wall"):" \
      "fits, $(hms $((wall - eta))) to spare"
  else
    echo "finecast: progress: $when $(hms "$eta"), after the wall time $(hms "$wall"):" \
      "$killed about $(hms $((eta - wall))) before its last step. Fix: more time (--param time=...)," \
      "or fewer steps per job (--chain)"
  fi
}

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  usage
  exit 0
fi

wall_text=""
if [[ "${1:-}" == "--progress" ]]; then
  (($# >= 2)) || { usage >&2; exit 2; }
  log="$2"
  shift 2
  [[ "${1:-}" == "--time" ]] && wall_text="${2:-}"
  [[ -f "$log" ]] || { echo "job_summary.sh: no log $log" >&2; exit 2; }
  # "finecast: started 2026-11-26T10:15:00Z (1795702500), wall time 01:00:00"
  started_line="$(grep -m 1 -E '^finecast: started .*\([0-9]+\)' "$log")" || true
  if ! [[ "$started_line" =~ \(([0-9]+)\)(,\ wall\ time\ ([0-9:-]+))? ]]; then
    echo "finecast: $log has no 'finecast: started' line (not a launch.sh job?): no time used known"
    progress_lines "$log" 0 "" 0
    exit 0
  fi
  start="${BASH_REMATCH[1]}"
  [[ -n "$wall_text" ]] || wall_text="${BASH_REMATCH[3]}"
  wall="$(wall_seconds "$wall_text")"
  elapsed=$(($(date +%s) - start))
  if [[ -n "$wall" ]]; then
    echo "finecast: running for $(hms "$elapsed") of its wall time $(hms "$wall") ($((100 * elapsed / (wall > 0 ? wall : 1)))%)"
  else
    echo "finecast: running for $(hms "$elapsed") (wall time unknown: give --time)"
  fi
  progress_lines "$log" "$elapsed" "$wall" 0
  exit 0
fi

if [[ "${1:-}" == "--time" ]]; then
  wall_text="${2:-}"
  shift 2
fi
if [[ $# -lt 3 ]]; then
  usage >&2
  exit 2
fi

stamp="$1" status="$2" log="$3"
shift 3
log="${log//%j/${SLURM_JOB_ID:-unknown}}"
log="${log//%A/${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-unknown}}}"
log="${log//%a/${SLURM_ARRAY_TASK_ID:-0}}"

checkpoints=()
outputs=()
for dir in "$@"; do
  [[ -e "$dir" ]] || continue  # a folder, or a file (the plugin config's sample.output)
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
wall="$(wall_seconds "$wall_text")"
elapsed=$(($(date +%s) - $(stat -c %Y "$stamp")))
if [[ -n "$wall" ]]; then
  echo "finecast: time: $(hms "$elapsed") of the wall time $(hms "$wall") ($((100 * elapsed / (wall > 0 ? wall : 1)))%)"
else
  echo "finecast: time: $(hms "$elapsed")"
fi
progress_lines "$log" "$elapsed" "$wall" 1
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
