#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Checks that every C and C++ file git tracks is formatted as .clang-format says
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

mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
if ((fix)); then
  "$clang_format" -i "${files[@]}"
  echo "check_format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$clang_format" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check_format: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says (fix: scripts/check_format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check_format: all ${#files[@]} C/C++ files formatted ($("$clang_format" --version | head -1))"
