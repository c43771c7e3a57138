#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Checks that every C, C++ and CUDA file git tracks is formatted as .clang-format says
# (clang-format --dry-run -Werror); lists the files that are not. CI runs it through ctest
# (format.clang_format). scripts/check_format.sh --fix formats them in place.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '3,5p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
fix=0
[[ "${1:-}" == "--fix" ]] && fix=1
clang_format="${CLANG_FORMAT:-$(command -v clang-format || true)}"
[[ -n "$clang_format" ]] || { echo "check_format: clang-format not found (Debian: apt-get install clang-format)" >&2; exit 1; }
git rev-parse --git-dir >/dev/null 2>&1 || { echo "check_format: not a git checkout: nothing to list the files with" >&2; exit 1; }

mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh')
if ((fix)); then
  "$clang_format" -i "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi
# Batches of files per clang-format process, as many processes as cores: one process per file
# spent most of its time starting up. Each unformatted file is named in a "FILE:LINE:COL: error:"
# line of the dry run's diagnostics.
report="$(printf '%s\0' "${files[@]}" \
  | xargs -0 -n 40 -P "$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)" "$clang_format" --dry-run -Werror 2>&1 >/dev/null || true)"
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: .*/\1/p' <<<"$report" | sort -u)
# A failure that names no file (clang-format itself broken, a bad .clang-format) is not a pass.
if ((${#bad[@]} == 0)) && [[ -n "$report" ]]; then
  echo "check_format: clang-format failed:" >&2
  echo "$report" >&2
  exit 1
fi
if ((${#bad[@]})); then
  echo "check_format: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says (fix: scripts/check_format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check_format: all ${#files[@]} C/C++ files formatted ($("$clang_format" --version | head -1))"
