#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs one MPI rank of a GPU job with exactly one GPU visible: local rank modulo the node's GPUs.
set -euo pipefail

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" || $# -eq 0 ]]; then
  cat <<'USAGE'
Usage: bind_gpu.sh COMMAND [ARGS...]

Used by the finecast GPU job scripts as `srun ... bind_gpu.sh finecast-host RUN`.
Sets CUDA_VISIBLE_DEVICES to a single GPU: entry (local rank mod n) of the GPUs SLURM gave
the step (its CUDA_VISIBLE_DEVICES), or of the n GPUs nvidia-smi lists when SLURM set none.
The local rank comes from SLURM_LOCALID (srun), else OMPI_COMM_WORLD_LOCAL_RANK (mpiexec).
finecast's trainer ranks (train.ranks) each use the one GPU they see (as cuda:0); the other
ranks never create a CUDA context. Without any GPU the command runs unchanged.
Set FINECAST_BIND_QUIET=1 to drop the one line per rank it prints to stderr.
USAGE
  [[ $# -eq 0 ]] && exit 2
  exit 0
fi

local_rank="${SLURM_LOCALID:-${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-0}}}"
gpus=()
visible="${CUDA_VISIBLE_DEVICES:-}"
# Some SLURM setups write NoDevFiles when the step has no GPU device files.
if [[ -n "$visible" && "$visible" != "NoDevFiles" ]]; then
  IFS=',' read -r -a gpus <<< "$visible"
elif [[ -z "$visible" ]] && command -v nvidia-smi >/dev/null 2>&1; then
  count="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)"
  for ((i = 0; i < count; i++)); do gpus+=("$i"); done
fi

if ((${#gpus[@]} > 0)); then
  export CUDA_VISIBLE_DEVICES="${gpus[local_rank % ${#gpus[@]}]}"
  if [[ -z "${FINECAST_BIND_QUIET:-}" ]]; then
    echo "finecast: local rank ${local_rank} on $(hostname) -> GPU ${CUDA_VISIBLE_DEVICES} (of ${#gpus[@]})" >&2
  fi
fi
exec "$@"
