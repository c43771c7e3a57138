#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/setup.sh with a build directory whose CMakeCache.txt was made for another source
# directory (a moved or copied checkout): CMake alone stops with a raw error. Inside the
# checkout, setup removes that build and configures afresh; outside it (BUILD_DIR), setup stops
# with a message naming both directories and the commands to run, and touches nothing.
set -euo pipefail

SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
assert_contains() { [[ "$1" == *"$2"* ]] || fail "$3: expected [$2] in:"$'\n'"$1"; }

work="$(mktemp -d "${TMPDIR:-/tmp}/finecast-setup-test.XXXXXX")"
inside="$SRC/build-moved-test.$$"
trap 'rm -rf "$work" "$inside"' EXIT

# A cache as CMake leaves it in a build directory of a checkout that lived elsewhere.
stale_cache() {
  mkdir -p "$1/CMakeFiles"
  cat >"$1/CMakeCache.txt" <<CACHE
# This is the CMakeCache file.
CMAKE_HOME_DIRECTORY:INTERNAL=/nonexistent/old-place/finecast
CMAKE_CACHEFILE_DIR:INTERNAL=/nonexistent/old-place/finecast/build
CACHE
  touch "$1/CMakeFiles/stale-marker"
}

# 1. Outside the checkout: stop, say what to do, leave the directory as it was.
stale_cache "$work/build"
set +e
out="$(BUILD_DIR="$work/build" CONFIGURE_ONLY=1 "$SRC/scripts/setup.sh" 2>&1)"
rc=$?
set -e
[[ $rc -ne 0 ]] || fail "outside: setup.sh succeeded on another checkout's build directory"
assert_contains "$out" "$work/build was configured for the sources in /nonexistent/old-place/finecast, not for this checkout ($SRC)" "outside"
assert_contains "$out" "BUILD_DIR=$SRC/build" "outside: the command for a build of its own"
assert_contains "$out" "rm -rf '$work/build/CMakeCache.txt' '$work/build/CMakeFiles'" "outside: the command to clear it"
[[ "$out" != *"CMake Error"* ]] || fail "outside: the raw CMake error reached the user:"$'\n'"$out"
[[ -f "$work/build/CMakeCache.txt" && -f "$work/build/CMakeFiles/stale-marker" ]] \
  || fail "outside: setup.sh changed a build directory that is not this checkout's"

# 2. Inside the checkout (as build/ after a move): configured afresh, for this checkout.
stale_cache "$inside"
set +e
out="$(BUILD_DIR="$inside" CONFIGURE_ONLY=1 "$SRC/scripts/setup.sh" 2>&1)"
rc=$?
set -e
[[ $rc -eq 0 ]] || fail "inside: setup.sh failed (exit $rc):"$'\n'"$out"
assert_contains "$out" "the checkout was moved or copied" "inside"
[[ ! -e "$inside/CMakeFiles/stale-marker" ]] || fail "inside: the stale build was not removed"
home="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$inside/CMakeCache.txt" 2>/dev/null || true)"
[[ "$(cd "$home" 2>/dev/null && pwd -P)" == "$(cd "$SRC" && pwd -P)" ]] \
  || fail "inside: the new cache names '$home', not this checkout ($SRC)"

# 3. A second run finds its own cache and configures again without removing anything.
touch "$inside/CMakeFiles/own-marker"
out="$(BUILD_DIR="$inside" CONFIGURE_ONLY=1 "$SRC/scripts/setup.sh" 2>&1)" || fail "second run failed:"$'\n'"$out"
[[ "$out" != *"moved or copied"* ]] || fail "second run: its own build was taken for a moved one"
[[ -f "$inside/CMakeFiles/own-marker" ]] || fail "second run: the build directory was cleared"

if ((failures)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "setup.sh on a moved checkout: all checks passed"
