#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs and builds (scripts/setup.sh), then runs every test with ctest: unit tests, the MPI
# tests under mpiexec with 1-4 ranks, the plugin end-to-end runs and the script tests.
# Exits non-zero on any failure.   scripts/test.sh [extra ctest arguments]
#   scripts/test.sh --sanitize [address] [thread]: instead, the sanitizer builds and runs
#   (scripts/sanitize.sh: ASan+UBSan over the coupling, MPI and plugin tests in build-asan/,
#   ThreadSanitizer over the training-session tests in build-tsan/)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1-}" = "--sanitize" ]; then
  shift
  exec "$here/scripts/sanitize.sh" "$@"
fi
build_dir="${BUILD_DIR:-$here/build}"

# The real-ComIn tests (tests/plugin/test_real_comin.cpp) build ComIn 0.3 out of tree from its
# sources: FINECAST_COMIN_SOURCE, or ../shared/third_party/comin-0.3.0 beside the checkout.
comin_source="${FINECAST_COMIN_SOURCE-}"
if [ -z "$comin_source" ] && [ -f "$here/../shared/third_party/comin-0.3.0/include/comin.h" ]; then
  comin_source="$(cd "$here/../shared/third_party/comin-0.3.0" && pwd)"
fi
if [ -n "$comin_source" ]; then
  echo "[test] real-ComIn tests: ComIn sources in $comin_source"
else
  echo "[test] real-ComIn tests skipped: no ComIn sources (set FINECAST_COMIN_SOURCE or put them in ../shared/third_party/comin-0.3.0)"
fi
"$here/scripts/setup.sh" "-DFINECAST_COMIN_SOURCE=$comin_source"

# Open MPI refuses to run as root without these (CI runs as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Each test rank gets one thread; the tests oversubscribe 2 cores with up to 4 ranks.
export OMP_NUM_THREADS=1

# As many tests at a time as cores (FINECAST_TEST_JOBS to change it): most tests are short
# processes that start MPI, LibTorch or Python and leave a core idle while they wait. (GNU nproc
# answers OMP_NUM_THREADS when it is set, as it is just above: the cores are counted without it.)
jobs="${FINECAST_TEST_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"
echo "[test] running ctest in $build_dir ($jobs at a time)"
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "$jobs" "$@"
