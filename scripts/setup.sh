#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs what finecast needs from Debian packages (when missing), then configures and builds
# Release into build/. Idempotent: a second run installs nothing and rebuilds only what changed.
#   scripts/setup.sh            # install + build
#   BUILD_DIR=out scripts/setup.sh
#   CONFIGURE_ONLY=1 scripts/setup.sh   # install + configure, no build
#   scripts/setup.sh --install-only   # install, build nothing (sanitizer and fuzz builds)
# A build directory configured for another source directory (a moved or copied checkout) is
# removed and configured afresh when it lies inside this checkout (e.g. build/); one elsewhere
# (BUILD_DIR) may belong to another checkout, so setup stops and says what to run.
set -euo pipefail
install_only=0
if [ "${1-}" = "--install-only" ]; then
  install_only=1
  shift
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${BUILD_DIR:-$here/build}"
jobs="${JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

# Build and test dependencies (gfortran and NetCDF-Fortran build the real ComIn for the tests),
# the optimised BLAS (libtorch is 7-20x slower without it), the
# NetCDF/HDF5 command-line tools used by tests, the real data sets, and Debian's Python stack
# for the reference benchmark, the reference Python plugin (bench/python_adapter.c) and the plots.
packages=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libopenblas0-openmp
  libopenmpi-dev openmpi-bin
  libnetcdf-c++4-dev netcdf-bin
  libhdf5-dev hdf5-tools
  libyaml-cpp-dev googletest libgtest-dev libcli11-dev
  libfmt-dev nlohmann-json3-dev libfftw3-dev
  libncarg-data ferret-datasets
  shellcheck cdo clang-format
  gfortran libnetcdff-dev
  python3 python3-dev python3-mpi4py python3-torch python3-numpy python3-matplotlib python3-netcdf4 python3-yaml python3-xarray python3-h5py
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing ${#missing[@]} Debian packages: ${missing[*]}"
  [ "$(id -u)" = 0 ] || die "installing packages needs root (or install these yourself): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed (is the Debian mirror reachable?)"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install failed for: ${missing[*]}"
else
  say "all ${#packages[@]} Debian packages already installed"
fi

[ "$install_only" = 0 ] || exit 0

# CMake refuses a cache made for other sources with a raw error; say what happened instead.
cache="$build_dir/CMakeCache.txt"
if [ -f "$cache" ]; then
  cached_src="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache" | head -n 1)"
  real_cached=""
  if [ -d "$cached_src" ]; then real_cached="$(cd "$cached_src" && pwd -P)"; fi
  real_here="$(cd "$here" && pwd -P)"
  if [ -n "$cached_src" ] && [ "$real_cached" != "$real_here" ]; then
    real_build="$(cd "$build_dir" && pwd -P)"
    case "$real_build/" in
      "$real_here"/?*)
        # This checkout's own build outputs, made where the checkout was before: paths inside
        # them (caches, dependency files) point there, so start from an empty directory.
        say "$build_dir was configured for the sources in $cached_src, not for this checkout ($here):"
        say "the checkout was moved or copied. Removing that build and configuring afresh (a full build follows)."
        rm -rf "$real_build"
        ;;
      *)
        die "$build_dir was configured for the sources in $cached_src, not for this checkout ($here),
  and it is outside this checkout, so it may be another checkout's build. Either build this
  checkout in its own directory:
    BUILD_DIR=$here/build $0
  or, if that build is no longer needed, clear its configuration and run setup again:
    rm -rf '$build_dir/CMakeCache.txt' '$build_dir/CMakeFiles' && BUILD_DIR='$build_dir' $0"
        ;;
    esac
  fi
fi

say "configuring Release build in $build_dir"
# shellcheck source=scripts/generator.sh
. "$here/scripts/generator.sh"
finecast_generator "$build_dir"
mkdir -p "$build_dir"
cmake -S "$here" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@" >"$build_dir/configure.log" 2>&1 \
  || { cat "$build_dir/configure.log" >&2; die "cmake configure failed (log above: $build_dir/configure.log)"; }
if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then
  say "configured (CONFIGURE_ONLY=1: not building); build with: cmake --build $build_dir -j $jobs"
  exit 0
fi
say "building with $jobs jobs (the first build takes a while: LibTorch headers are heavy)"
cmake --build "$build_dir" -j "$jobs" || die "build failed (see the compiler output above)"
say "done: programs in $build_dir/bin, libraries in $build_dir/lib"
