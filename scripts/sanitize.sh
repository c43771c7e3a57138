#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The sanitizer runs of `scripts/test.sh --sanitize`, each in its own build folder:
#   address  build-asan/: ASan + UBSan; the coupling, MPI, plugin (host, replay, downscale) and
#            training-session tests (ctest labels coupling, mpi, plugin, session; less three
#            groups whose time is Python's or a benchmark's, named below)
#   thread   build-tsan/: ThreadSanitizer; the training-session tests (tests/session/)
# finecast's code is instrumented; LibTorch, Open MPI, HDF5, NetCDF and yaml-cpp are Debian's
# uninstrumented libraries. Every process the tests start (finecast-host under mpiexec, ...)
# writes its sanitizer reports to <build>/sanitizer-logs/; a run fails when a test fails or any
# report was written, and the reports are printed. Known reports from third-party libraries are
# suppressed in tests/sanitizers/*.supp, each entry with its reason.
#   scripts/sanitize.sh [address] [thread]     (default: both)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"
supp="$here/tests/sanitizers"
kinds=("$@")
((${#kinds[@]})) || kinds=(address thread)

say() { printf '[sanitize] %s\n' "$*"; }
# shellcheck source=scripts/generator.sh
. "$here/scripts/generator.sh"

"$here/scripts/setup.sh" --install-only

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

# Configures and builds `targets` in `dir` with FINECAST_SANITIZE=`kind`; -O1 with line tables
# (-g1) keeps the build short and the reports readable (the test executables' own files at -O0:
# tests/CMakeLists.txt). Without finecast-bench: its tests
# (Cli.Bench*) time repetitions rather than exercise finecast's code, and its three largest files
# took 300 of the ASan build's 2,750 s of compiler time (docs/reliability.md#ci).
build() {
  local kind="$1" dir="$2"
  shift 2
  say "$kind: configuring $dir"
  finecast_generator "$dir"
  mkdir -p "$dir"
  cmake -S "$here" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -DFINECAST_SANITIZE="$kind" -DFINECAST_BENCH=OFF >"$dir/configure.log" 2>&1 \
    || { cat "$dir/configure.log" >&2; exit 1; }
  say "$kind: building $* with $jobs jobs"
  cmake --build "$dir" -j "$jobs" --target "$@"
}

# Fails (returns 1) and prints them when `logs` holds reports.
check_logs() {
  local logs="$1" found=0
  for f in "$logs"/*; do
    [ -e "$f" ] || continue
    found=1
    say "report in $f:"
    cat "$f"
  done
  return "$found"
}

status=0
for kind in "${kinds[@]}"; do
  case "$kind" in
    address)
      dir="$here/build-asan"
      logs="$dir/sanitizer-logs"
      rm -rf "$logs" && mkdir -p "$logs"
      # detect_leaks: finecast's leaks (the suppressions name only third-party libraries);
      # verify_asan_link_order=0: the full-disk tests preload their shim before the runtime;
      # intercept_tls_get_addr=0: GCC 12's dynamic-TLS tracking crashes LSan's exit check when a
      # TLS block lands 16 bytes past a page boundary, at random (docs/reliability.md, findings).
      export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=1:verify_asan_link_order=0:check_initialization_order=1:detect_stack_use_after_return=1:strict_init_order=1:intercept_tls_get_addr=0"
      export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
      export UBSAN_OPTIONS="log_path=$logs/ubsan:print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
      build address "$dir" finecast_coupling_tests finecast_mpi_tests finecast_plugin_tests finecast_session_tests
      # Left out: suites whose time goes to Python rather than to finecast's code (ExportIcon:
      # torch in Python; PythonReference: the Python plugin in finecast-host, whose host the other
      # tests cover): about 2 of CI's minutes. (Cli.Bench*, timed runs, skip: no finecast-bench.)
      say "address: running the coupling, MPI, plugin and session tests"
      ctest --test-dir "$dir" --output-on-failure --timeout 1800 -j "$jobs" -L '^(coupling|mpi|plugin|session)$' \
        -E '^(ExportIcon|PythonReference)$' || status=1
      check_logs "$logs" || status=1
      unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
      ;;
    thread)
      dir="$here/build-tsan"
      logs="$dir/sanitizer-logs"
      rm -rf "$logs" && mkdir -p "$logs"
      # One LibTorch thread per finecast thread (OMP_NUM_THREADS=1 above): TSan cannot see the
      # barriers of the uninstrumented libgomp (tests/sanitizers/tsan.supp says more).
      export TSAN_OPTIONS="log_path=$logs/tsan:halt_on_error=0:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
      build thread "$dir" finecast_session_tests
      say "thread: running the training-session tests"
      ctest --test-dir "$dir" --output-on-failure --timeout 1800 -j "$jobs" -L '^session$' || status=1
      check_logs "$logs" || status=1
      unset TSAN_OPTIONS
      ;;
    *)
      echo "sanitize.sh: unknown kind '$kind' (address, thread)" >&2
      exit 2
      ;;
  esac
done
if ((status == 0)); then
  say "no sanitizer reports, every test passed"
else
  say "FAILED (reports or test failures above)"
fi
exit "$status"
