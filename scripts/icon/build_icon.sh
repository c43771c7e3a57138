#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the real ICON with ComIn for running finecast inside it (docs/icon.md), in a folder
# outside finecast's checkout, and a shared libcomin.so.0 of the same ICON tree's bundled ComIn
# for the plugin to load (ICON links its ComIn statically).
#
#   scripts/icon/build_icon.sh ICON_SOURCE_TREE BUILD_DIR
#
# ICON_SOURCE_TREE: an ICON release tree with its externals (e.g. ICON 2024.10: GitHub
# spcl/icon-dace at commit a1324166, "Release export ICON 2024.10"; extract it with git archive).
# BUILD_DIR: where ICON is configured and built (BUILD_DIR/bin/icon) and the shared ComIn goes
# (BUILD_DIR/comin-shared/libcomin.so.0). Nothing is written into the source tree.
#
# The option set is a minimal CPU one for gfortran + Open MPI on Debian 12 (as ICON's own
# config/generic/gcc): the non-hydrostatic atmosphere with ComIn, without ocean, JSBACH, coupling,
# AES physics, RTE-RRTMGP, ecRad, ART and OpenMP. Enough for ICON's idealised test cases
# (scripts/icon/run_jabw.sh). JOBS (default: the cores) sets make's parallelism. The configure
# and make output go to BUILD_DIR/configure.log and BUILD_DIR/make.log; a progress line is
# printed every minute. Measured on 2 cores: configure 23 s, make about 25 minutes.
set -euo pipefail

usage() { sed -n '3,19p' "$0" | sed 's/^# \{0,1\}//'; }
die() { printf 'build_icon: error: %s\n' "$*" >&2; exit 1; }
say() { printf '[build_icon %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

case "${1-}" in -h | --help) usage; exit 0 ;; esac
[ $# -eq 2 ] || { usage >&2; exit 2; }
src="$(cd "$1" 2>/dev/null && pwd)" || die "no ICON source tree at $1"
[ -x "$src/configure" ] || die "$src has no configure script: not an ICON source tree"
[ -f "$src/externals/comin/include/comin.h" ] \
  || die "$src/externals/comin is empty: the tree needs its externals (a release export has them)"
mkdir -p "$2"
build="$(cd "$2" && pwd)"
case "$build/" in "$src"/*) die "BUILD_DIR must be outside the source tree ($src)" ;; esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
case "$build/" in "$here"/*) die "BUILD_DIR must be outside finecast's checkout ($here)" ;; esac
jobs="${JOBS:-$(nproc)}"
for tool in mpif90 mpicc mpicxx cmake make; do
  command -v "$tool" >/dev/null || die "$tool not found (Debian: apt-get install gfortran libopenmpi-dev cmake)"
done
[ -f /usr/include/netcdf.mod ] || die "/usr/include/netcdf.mod not found (Debian: apt-get install libnetcdff-dev)"

version="$(sed -n 's/^ *VERSION \([0-9][0-9.]*\).*/\1/p' "$src/externals/comin/CMakeLists.txt" | head -n 1)"
say "ICON sources: $src (bundled ComIn ${version:-of unknown version})"
say "build folder: $build ($jobs make jobs)"

# Open MPI refuses to run as root (configure runs MPI test programs) without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# 1. The shared libcomin.so.0 of the bundled ComIn, for the plugin (small: about a minute).
say "building the shared libcomin.so.0 of $src/externals/comin into $build/comin-shared"
cmake -S "$src/externals/comin" -B "$build/comin-shared" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
  -DCOMIN_ENABLE_REPLAY_TOOL=ON -DCOMIN_ENABLE_EXAMPLES=OFF >"$build/comin-shared.log" 2>&1 \
  || die "configuring ComIn failed (see $build/comin-shared.log)"
cmake --build "$build/comin-shared" -j "$jobs" >>"$build/comin-shared.log" 2>&1 \
  || die "building ComIn failed (see $build/comin-shared.log)"
[ -f "$build/comin-shared/libcomin.so.0" ] || die "no $build/comin-shared/libcomin.so.0 after the build"
say "shared ComIn: $build/comin-shared/libcomin.so.0"

# 2. ICON itself.
if [ -f "$build/bin/icon" ]; then
  say "ICON already built: $build/bin/icon (remove it to build again)"
  exit 0
fi
cd "$build"
if [ ! -f config.status ]; then
  say "configuring ICON (log: $build/configure.log)"
  # -I/usr/include: Debian's netcdf.mod; -lstdc++: the bundled ComIn has C++ objects, which the
  # final link of bin/icon needs (without it only that link fails: DSO missing from command line).
  "$src/configure" CC=mpicc FC=mpif90 CXX=mpicxx \
    --disable-ocean --disable-jsbach --disable-coupling --disable-aes --disable-rte-rrtmgp \
    --disable-art --disable-ecrad --enable-comin --disable-openmp \
    LIBS='-lnetcdff -lnetcdf -llapack -lblas -lstdc++' \
    FCFLAGS='-I/usr/include -O2 -std=legacy -fallow-argument-mismatch -ffree-line-length-none' \
    CFLAGS='-O2' MPI_LAUNCH='mpiexec --oversubscribe' >configure.log 2>&1 \
    || die "configure failed (last lines of $build/configure.log:
$(tail -n 15 configure.log))"
fi
say "compiling ICON with make -j$jobs (log: $build/make.log)"
start=$(date +%s)
make -j "$jobs" >make.log 2>&1 &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
  sleep 60
  kill -0 "$pid" 2>/dev/null || break
  say "$(grep -c '^  FC ' make.log || true) Fortran files compiled, $(( ($(date +%s) - start) / 60 )) min"
done
wait "$pid" || die "make failed (last lines of $build/make.log:
$(grep -m 5 -i 'error' make.log || tail -n 15 make.log))"
[ -x "$build/bin/icon" ] || die "make finished without $build/bin/icon"
say "built $build/bin/icon in $(( ($(date +%s) - start) / 60 )) min"
say "run finecast inside it: scripts/icon/run_jabw.sh $build RUN_DIR"
