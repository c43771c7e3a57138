#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzzes finecast's input parsers with libFuzzer (Debian's clang 14), ASan and UBSan:
#   config        the plugin's YAML config with overrides (plugin/config.hpp parse_config)
#   namelist      the ComIn namelist (host/comin/host.hpp parse_comin_namelist)
#   field_reader  NetCDF fields (coupling/io/field_reader.hpp), every format
#   checkpoint    checkpoint verification and restore (trainer/checkpoint.hpp, Downscaler::restore)
#   host_run_file finecast-host's run file (host/model/run_config.hpp parse_host_run_config)
#   grid          ICON and lat-lon grid files (coupling/grid/icon_grid.hpp, latlon_grid.hpp)
# Builds the targets in build-fuzz/ (finecast's code instrumented; LibTorch, HDF5, NetCDF and
# yaml-cpp are Debian's uninstrumented libraries), then runs each for --seconds (default 600) at
# nice 19, starting from the seed corpus build-fuzz/seeds/<target>/ that fuzz/make_corpus.sh
# writes after the build (read only; what the run adds goes to build-fuzz/corpus/<target>/). Every crash, leak, timeout (10 s per input) or
# out-of-memory (2 GB) leaves its input in build-fuzz/artifacts/<target>/ and the run goes on;
# a summary (seconds, executions, corpus, each finding with what it is) goes to
# build-fuzz/summary.txt. Reproduce one: build-fuzz/bin/fuzz_<target> <artifact>.
#   scripts/fuzz.sh [--seconds N] [--build-only] [TARGET ...]
# Exit status: 0 no finding; 1 a finding; 2 bad arguments.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$here/build-fuzz"
jobs="${JOBS:-$(nproc)}"
seconds=600
build_only=0
all_targets=(config namelist field_reader checkpoint host_run_file grid)
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --build-only) build_only=1; shift ;;
    config|namelist|field_reader|checkpoint|host_run_file|grid) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (targets: ${all_targets[*]})" >&2; exit 2 ;;
  esac
done
((${#targets[@]})) || targets=("${all_targets[@]}")

say() { printf '[fuzz] %s\n' "$*"; }

# The fuzz build needs clang and its runtimes on top of what finecast needs.
"$here/scripts/setup.sh" --install-only
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  [ "$(id -u)" = 0 ] || { echo "fuzz.sh: install ${missing[*]} (needs root)" >&2; exit 1; }
  say "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$build"
say "configuring $build (clang, FINECAST_SANITIZE=fuzzer)"
CC=clang CXX=clang++ cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -DFINECAST_SANITIZE=fuzzer \
  -DFINECAST_BUILD_TESTS=OFF >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 1; }
build_targets=(make_seed_checkpoint)
for t in "${targets[@]}"; do build_targets+=("fuzz_$t"); done
say "building ${build_targets[*]}"
nice cmake --build "$build" -j "$jobs" --target "${build_targets[@]}"
((build_only == 0)) || exit 0
say "writing the seed corpus $build/seeds (fuzz/make_corpus.sh)"
"$here/fuzz/make_corpus.sh" "$build" >"$build/make_corpus.log" 2>&1 || { cat "$build/make_corpus.log" >&2; exit 1; }

# Known leaks of the uninstrumented libraries (each with its reason) are suppressed; any leak of
# finecast's code is a finding.
export LSAN_OPTIONS="suppressions=$here/fuzz/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export OMP_NUM_THREADS=1
status=0
: >"$build/summary.txt"
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t" artifacts="$build/artifacts/$t/"
  rm -rf "$artifacts"
  mkdir -p "$corpus" "$artifacts"
  dict=()
  [ -f "$here/fuzz/$t.dict" ] && dict=(-dict="$here/fuzz/$t.dict")
  say "$t: fuzzing for $seconds s (log: $build/$t.log)"
  # Fork mode goes on after a finding, so one run reports every distinct one it meets.
  nice -n 19 "$build/bin/fuzz_$t" -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts" "${dict[@]}" \
    "$corpus" "$build/seeds/$t" >"$build/$t.log" 2>&1 || true
  last=$(grep -E '^#[0-9]+: cov' "$build/$t.log" | tail -1)
  runs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
  secs=$(grep -oE 'time: [0-9]+s' <<<"$last" | grep -oE '[0-9]+')
  units=$(find "$corpus" -type f | wc -l)
  findings=$(find "$artifacts" -type f | wc -l)
  line="$t: seconds=${secs:-?} executions=${runs:-?} corpus=$units findings=$findings"
  echo "$line" >>"$build/summary.txt"
  say "$line"
  # One line per finding: its file and the first line that says what went wrong.
  for a in "$artifacts"*; do
    [ -f "$a" ] || continue
    status=1
    why=$(nice -n 19 timeout 60 "$build/bin/fuzz_$t" -timeout=10 -rss_limit_mb=2048 "$a" 2>&1 \
      | grep -m1 -E "what\(\)|ERROR: |runtime error|round trip|refused by|returned an infinite|failed restore|without a library|breaks a bound|is inconsistent" || true)
    echo "  $(basename "$a"): ${why:-no longer reproduces}" | tee -a "$build/summary.txt"
  done
done
say "summary in $build/summary.txt"
exit "$status"
