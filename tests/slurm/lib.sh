#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Shared helpers of the SLURM launch tests: a scratch folder, the fake SLURM on PATH, assertions.
# shellcheck disable=SC2034  # variables here are used by the scripts that source this file

set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
BIN="${FINECAST_BINARY_DIR:-$SRC/build}"
LAUNCH="$SRC/scripts/launch.sh"
failures=0

# Every test works in its own scratch folder, which is also the job's working directory.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/finecast-slurm-test.XXXXXX")"
cleanup() {
  if ((failures == 0)) && [[ -z "${KEEP_WORK:-}" ]]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT
export FAKE_SLURM_DIR="$WORK/slurm"
export PATH="$SRC/tests/slurm/fake:$PATH"
cd "$WORK"

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# assert_contains TEXT NEEDLE WHAT: NEEDLE must occur verbatim in TEXT.
assert_contains() {
  if [[ "$1" != *"$2"* ]]; then
    fail "$3: expected to find [$2] in:"$'\n'"$1"
  fi
}

assert_not_contains() {
  if [[ "$1" == *"$2"* ]]; then
    fail "$3: did not expect [$2] in:"$'\n'"$1"
  fi
}

assert_eq() {
  if [[ "$1" != "$2" ]]; then
    fail "$3: expected [$2], got [$1]"
  fi
}

finish() {
  if ((failures > 0)); then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  echo "all checks passed"
}
