#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/downstream, a C++-only project, against the installation in PREFIX: configured with
# find_package(finecast CONFIG COMPONENTS coupling), built, linked and run; then main.cpp once
# more with the flags of pkg-config's finecast-coupling.pc alone.
set -euo pipefail
prefix="${1:?usage: test_downstream.sh PREFIX}"
src="${FINECAST_SOURCE_DIR:?FINECAST_SOURCE_DIR is not set}/tests/downstream"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A fresh configure: no cache of the finecast build, only the installed package (and no
# CMAKE_C_COMPILER: the project enables CXX only).
cmake -S "$src" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 \
  || { cat "$work/configure.log" >&2; echo "FAIL: configuring the downstream project" >&2; exit 1; }
cmake --build "$work/build" >"$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; echo "FAIL: building the downstream project" >&2; exit 1; }
env -u LD_LIBRARY_PATH "$work/build/downstream"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
read -r -a flags <<<"$(pkg-config --cflags --libs finecast-coupling)"
"${CXX:-c++}" -std=c++17 -O1 "$src/main.cpp" "${flags[@]}" -o "$work/downstream_pc"
env -u LD_LIBRARY_PATH "$work/downstream_pc"
echo "downstream: CMake package (COMPONENTS coupling, LANGUAGES CXX) and pkg-config both build and run"
