#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds finecast's trainer (library, tests, benchmark) against the CUDA LibTorch of an installed
# PyTorch on a GPU machine without package access, with HDF5 and GoogleTest from .deps/; with --full
# the whole of finecast (plugin, finecast-host, -replay, -downscale, -eval, ...), with Open MPI,
# NetCDF, yaml-cpp, {fmt}, nlohmann-json, FFTW3 and pkgconf from .deps/ too.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

usage() {
  cat <<'USAGE'
Usage: scripts/device/build_cuda.sh [options] [-- extra cmake arguments]

Builds the trainer alone; with --full the whole of finecast (plugin, finecast-host,
finecast-replay, tools) from the .debs of `scripts/device/fetch_debs.sh --full`. On a GPU node
with packages: scripts/build_cuda.sh (docs/cuda.md).

For GPU machines where nothing can be installed. Needs: a python3 with PyTorch (its CUDA
LibTorch is the build's LibTorch), cmake, a C++ compiler, the CUDA toolkit that PyTorch's
CMake files look for, and .deps/debs/ filled by scripts/device/fetch_debs.sh on a machine
with package access (carry .deps/ over; git ignores it).

Steps:
  1. unpacks .deps/debs/*.deb with `dpkg -x` into .deps/root (never into /)
  2. links into .deps/lib only the shared libraries this machine lacks (ldconfig -p), so the
     machine's own libssl, libcurl, ... keep being used where it has them
  3. builds GoogleTest from the unpacked sources with PyTorch's C++ ABI into .deps/prefix
  4. configures build-cuda with -DFINECAST_TRAINER_ONLY=ON, CMAKE_PREFIX_PATH = PyTorch's
     cmake prefix + .deps/prefix, HDF5 from .deps/root; builds the trainer targets
  5. runs the trainer tests (ctest; the CUDA tests run only where a GPU is visible; their
     measurements go to build-cuda/cuda_tests.txt) and
     `finecast-bench trainer --json` on the GPU and on this machine's CPU, each beside the PyTorch
     reference on the same device (build-cuda/bench_trainer_{cuda,cpu}.json)
Prints the environment (LD_LIBRARY_PATH) to use the build afterwards.

With --full, instead of steps 4-5:
  4'. makes the unpacked Open MPI run from .deps/root (OPAL_PREFIX, mpiexec/mpicc links to
     Debian's *.openmpi), rewrites the unpacked pkg-config files' /usr to .deps/root/usr into
     .deps/pkgconfig (read by the unpacked pkgconf), configures the whole of finecast with
     CMAKE_PREFIX_PATH += .deps/root/usr and MPI from the unpacked mpicc, and builds --targets
     (default: finecast_comin finecast_trainer_module finecast-host finecast-replay
     finecast-downscale finecast-eval finecast-config finecast-trainer, + finecast-bench)
  5'. checks with ldd where the plugin's and finecast-host's MPI/NetCDF/yaml-cpp/HDF5 come from;
     runs ctest only with --targets all; the benchmark as in 5.
  Writes BUILD_DIR/env.sh (LD_LIBRARY_PATH, OPAL_PREFIX, PATH, ...): source it to run the build,
  e.g. `mpiexec -n 2 --mca pml ob1 --mca btl self,vader build-cuda/bin/finecast-host ...`.

Options:
  --python PY       python with torch (default: $FINECAST_PYTHON, else python3)
  --build-dir DIR   build directory (default: build-cuda)
  --jobs N          parallel build jobs (default: nproc)
  --cpu-threads N   threads of the CPU benchmark (default: min(nproc, 16))
  --configure-only  stop after step 4's configure
  --no-tests        skip the trainer tests
  --no-bench        skip the benchmark
  --allow-cpu       accept a PyTorch without CUDA (to check this script on a CPU machine)
  --full            the whole of finecast (above; needs `fetch_debs.sh --full`'s .debs)
  --targets "T..."  with --full: the targets to build (space-separated; `all` for everything)
  --all-libs        link every unpacked library into .deps/lib, even those this machine has
                    (to check on a machine with the packages that the build runs from .deps/)
  -h, --help        this text
USAGE
}

python="${FINECAST_PYTHON:-python3}"
build="$repo/build-cuda"
jobs="$(nproc)"
cpu_threads="$(( $(nproc) < 16 ? $(nproc) : 16 ))"
configure_only=0 run_tests=1 run_bench=1 allow_cpu=0 full=0 all_libs=0 targets_arg=""
extra=()
while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --python) python="$2"; shift 2 ;;
    --build-dir) build="$(mkdir -p "$2" && cd "$2" && pwd)"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --cpu-threads) cpu_threads="$2"; shift 2 ;;
    --configure-only) configure_only=1; shift ;;
    --no-tests) run_tests=0; shift ;;
    --no-bench) run_bench=0; shift ;;
    --allow-cpu) allow_cpu=1; shift ;;
    --full) full=1; shift ;;
    --targets) targets_arg="$2"; shift 2 ;;
    --all-libs) all_libs=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "build_cuda: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

say() { echo "build_cuda: $*"; }
die() { echo "build_cuda: error: $*" >&2; exit 1; }

deps="$repo/.deps"
root="$deps/root"
prefix="$deps/prefix"
libdir="$deps/lib"
multiarch="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"

# ---- PyTorch: where its LibTorch is, whether it has CUDA, which C++ ABI it uses ----
command -v "$python" >/dev/null 2>&1 || die "'$python' not found; give --python PATH"
torch_info="$("$python" - <<'PY'
import torch, torch.utils
print(torch.utils.cmake_prefix_path)
print(torch.__version__)
print(torch.version.cuda or "")
print(int(torch.cuda.is_available()))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
import os
print(os.path.join(os.path.dirname(torch.__file__), "lib"))
PY
)" || die "'$python' cannot import torch"
{ read -r torch_prefix; read -r torch_version; read -r torch_cuda; read -r cuda_ok; read -r cxx11_abi;
  read -r torch_lib; } <<<"$torch_info"
say "PyTorch $torch_version (CUDA ${torch_cuda:-none}, GPU visible: $cuda_ok, C++11 ABI: $cxx11_abi)"
say "LibTorch cmake prefix: $torch_prefix"
if [[ -z "$torch_cuda" ]] && ((!allow_cpu)); then
  die "this PyTorch has no CUDA; use the GPU machine's python (--python), or --allow-cpu to check the script"
fi
((cuda_ok)) || say "warning: torch.cuda.is_available() is false; the CUDA tests will not find a GPU"

# ---- 1. unpack the .debs (never into /) ----
shopt -s nullglob
debs=("$deps"/debs/*.deb)
((${#debs[@]} > 0)) || die "no .debs in $deps/debs: run scripts/device/fetch_debs.sh where packages can be downloaded, and carry .deps/ here"
mkdir -p "$root"
for deb in "${debs[@]}"; do
  stamp="$root/.unpacked-$(basename "$deb")"
  [[ -e "$stamp" ]] && continue
  if command -v dpkg >/dev/null 2>&1; then
    dpkg -x "$deb" "$root"
  else  # a .deb is an ar archive holding data.tar.{xz,zst,gz}; tar detects which from the file
    member="$(ar t "$deb" | grep '^data\.tar')"
    ar p "$deb" "$member" >"$deps/$member"
    tar -xf "$deps/$member" -C "$root"
    rm -f "$deps/$member"
  fi
  touch "$stamp"
done
say "unpacked ${#debs[@]} packages into $root"

# ---- 2. only the libraries this machine lacks go onto the library path ----
rm -rf "$libdir" && mkdir -p "$libdir"
have="$(ldconfig -p 2>/dev/null || true)"
for so in "$root"/usr/lib/"$multiarch"/*.so.* "$root"/lib/"$multiarch"/*.so.*; do
  name="$(basename "$so")"
  [[ "$name" =~ \.so\.[0-9]+(\.[0-9]+)?$ ]] || continue  # sonames (libyaml-cpp.so.0.7 has two numbers)
  # The compiler's runtime always stays the machine's (LibTorch was built against it).
  [[ "$name" =~ ^lib(stdc\+\+|gcc_s|gomp|atomic)\. ]] && continue
  if [[ "$name" == libhdf5* ]] || ((all_libs)) || ! grep -q "^[[:space:]]*$name " <<<"$have"; then
    ln -sf "$(readlink -f "$so")" "$libdir/$name"
  fi
done
say "libraries taken from .deps: $(find "$libdir" -mindepth 1 -printf '%f ')"
export LD_LIBRARY_PATH="$libdir:$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run_env=()  # what BUILD_DIR/env.sh exports (--full)

hdf5_inc="$root/usr/include/hdf5/serial"
hdf5_so="$root/usr/lib/$multiarch/libhdf5_serial.so"
[[ -f "$hdf5_inc/hdf5.h" && -e "$hdf5_so" ]] || die "HDF5 not found in $root (expected $hdf5_inc/hdf5.h and $hdf5_so)"

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)

# ---- 3. GoogleTest with LibTorch's C++ ABI (Debian's libgtest.a may use the other one) ----
if [[ ! -f "$prefix/.gtest-abi-$cxx11_abi" ]]; then
  src="$root/usr/src/googletest"
  [[ -f "$src/CMakeLists.txt" ]] || die "GoogleTest sources missing in $src (the googletest .deb)"
  cmake -S "$src" -B "$deps/build/googletest" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DCMAKE_CXX_FLAGS="-D_GLIBCXX_USE_CXX11_ABI=$cxx11_abi" -DBUILD_GMOCK=ON >/dev/null
  cmake --build "$deps/build/googletest" -j "$jobs" >/dev/null
  cmake --install "$deps/build/googletest" >/dev/null
  rm -f "$prefix"/.gtest-abi-* && touch "$prefix/.gtest-abi-$cxx11_abi"
  say "GoogleTest built into $prefix"
fi

# ---- 4. configure and build the trainer ----
cuda_args=()
if [[ -n "$torch_cuda" ]]; then
  nvcc="$(command -v nvcc || true)"
  [[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
  [[ -n "$nvcc" ]] && cuda_args+=(-DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc")")")
  # pip's cuDNN lives in site-packages/nvidia/cudnn; PyTorch's CMake files may look for it.
  cudnn="$("$python" -c 'import nvidia.cudnn as m, os; print(list(m.__path__)[0])' 2>/dev/null || true)"
  [[ -n "$cudnn" ]] && cuda_args+=(-DCUDNN_INCLUDE_PATH="$cudnn/include" -DCUDNN_LIBRARY_PATH="$cudnn/lib")
fi
# PyTorch >= 2.12 wants C++20 from code that includes its headers.
IFS=. read -r torch_major torch_minor _ <<<"${torch_version%%+*}"
cxx_std=17
((torch_major > 2 || (torch_major == 2 && torch_minor >= 12))) && cxx_std=20
full_args=(-DFINECAST_TRAINER_ONLY=ON)
cmake_prefix="$torch_prefix;$prefix"
if ((full)); then
  # Open MPI, relocated: OPAL_PREFIX moves every path Debian configured under /usr (components in
  # lib/$multiarch/openmpi/lib/openmpi3, help and wrapper files in share/openmpi); /etc/openmpi
  # (Debian's MCA defaults) is not moved, so its settings are passed as OMPI_MCA_* below.
  mpi_bin="$root/usr/bin"
  [[ -x "$mpi_bin/mpiexec.openmpi" && -x "$mpi_bin/mpicc.openmpi" ]] ||
    die "Open MPI missing in $root (no usr/bin/mpiexec.openmpi): run scripts/device/fetch_debs.sh --full and carry .deps/debs again"
  for tool in mpiexec mpirun mpicc mpicxx; do  # Debian reaches these through /etc/alternatives
    [[ -e "$mpi_bin/$tool" ]] || ln -sf "$tool.openmpi" "$mpi_bin/$tool"
  done
  mpi_libdir="$root/usr/lib/$multiarch/openmpi/lib"
  export OPAL_PREFIX="$root/usr"
  export PATH="$mpi_bin:$PATH"
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$mpi_libdir"
  export OMPI_MCA_btl_base_warn_component_unused=0
  run_env=(LD_LIBRARY_PATH OPAL_PREFIX PATH OMPI_MCA_btl_base_warn_component_unused)
  mpi_version="$(mpiexec --version 2>&1 | sed -n 1p)" || die "the unpacked mpiexec does not run: $mpi_version"
  say "Open MPI from $root: $mpi_version ($(command -v mpiexec))"
  "$mpi_bin/mpicc.openmpi" --showme:incdirs | grep -q "$root" ||
    die "the unpacked mpicc does not point into $root (OPAL_PREFIX=$OPAL_PREFIX): $("$mpi_bin/mpicc.openmpi" --showme 2>&1)"

  # pkg-config: the unpacked pkgconf reads copies of the unpacked .pc files with /usr -> $root/usr,
  # and nothing of this machine's (PKG_CONFIG_LIBDIR replaces the default search path).
  pcdir="$deps/pkgconfig"
  rm -rf "$pcdir" && mkdir -p "$pcdir"
  for pc in "$root"/usr/lib/"$multiarch"/pkgconfig/*.pc "$root"/usr/share/pkgconfig/*.pc "$mpi_libdir"/pkgconfig/*.pc; do
    sed -E "s#(^|[=[:space:]]|-I|-L)/usr(/|[[:space:]]|\$)#\1$root/usr\2#g" "$pc" >"$pcdir/$(basename "$pc")"
  done
  export PKG_CONFIG_LIBDIR="$pcdir" PKG_CONFIG_PATH=""
  pkgconf="$root/usr/bin/pkgconf"
  [[ -x "$pkgconf" ]] || die "pkgconf missing in $root (the pkgconf-bin .deb)"
  "$pkgconf" --cflags netcdf-cxx4 fftw3 | grep -q "$root" ||
    die "pkgconf does not find netcdf-cxx4/fftw3 in $pcdir: $("$pkgconf" --cflags netcdf-cxx4 fftw3 2>&1)"
  # PKG_CONFIG_USE_CMAKE_PREFIX_PATH off: else CMake puts the unrewritten .pc files of $root first.
  full_args=(-DFINECAST_TRAINER_ONLY=OFF -DPKG_CONFIG_EXECUTABLE="$pkgconf" -DPKG_CONFIG_USE_CMAKE_PREFIX_PATH=OFF
    -DMPI_C_COMPILER="$mpi_bin/mpicc.openmpi"
    -DMPIEXEC_EXECUTABLE="$mpi_bin/mpiexec.openmpi"
    -DPython3_EXECUTABLE="$(command -v "$python")")  # the reference Python plugin's loader embeds it
  cmake_prefix="$cmake_prefix;$root/usr"
  ((run_tests)) && [[ "$targets_arg" != all ]] && { say "--full: no tests unless --targets all"; run_tests=0; }
fi
cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "${full_args[@]}" \
  -DCMAKE_CXX_STANDARD="$cxx_std" \
  -DCMAKE_PREFIX_PATH="$cmake_prefix" \
  -DHDF5_C_COMPILER_EXECUTABLE= -DHDF5_NO_FIND_PACKAGE_CONFIG_FILE=ON \
  -DHDF5_C_INCLUDE_DIR="$hdf5_inc" -DHDF5_hdf5_LIBRARY_RELEASE="$hdf5_so" \
  "${cuda_args[@]}" "${extra[@]}"
grep -q "^HDF5_C_LIBRARIES:.*$root" "$build/CMakeCache.txt" 2>/dev/null ||
  grep -q "HDF5_hdf5_LIBRARY_RELEASE:FILEPATH=$hdf5_so" "$build/CMakeCache.txt" ||
  die "CMake did not take HDF5 from $root (see $build/CMakeCache.txt)"
if ((full)); then
  for key in NETCDF_CXX4_INCLUDE_DIRS FFTW3_INCLUDE_DIRS yaml-cpp_DIR fmt_DIR nlohmann_json_DIR MPI_C_HEADER_DIR; do
    line="$(grep -m1 "^$key:" "$build/CMakeCache.txt" || true)"
    [[ "$line" == *"$root"* ]] || say "warning: CMake did not take $key from $root: ${line:-unset}"
  done
fi
((configure_only)) && { say "configured $build (--configure-only)"; exit 0; }

targets=(finecast_trainer finecast-bench)
trainer_tests=("$repo"/tests/trainer/*.cpp)  # the test executable exists when its folder has sources
((${#trainer_tests[@]} > 0)) && targets+=(finecast_trainer_tests)
if ((full)); then
  if [[ -n "$targets_arg" ]]; then
    read -r -a targets <<<"$targets_arg"
  else
    targets=(finecast_comin finecast_trainer_module finecast-host finecast-replay finecast-downscale finecast-eval
      finecast-config finecast-trainer)
    ((run_bench)) && targets+=(finecast-bench)
  fi
fi
# Keep going past a failing file, so one run shows every compile error.
keep_going=(-k)
[[ -f "$build/build.ninja" ]] && keep_going=(-k 0)
cmake --build "$build" -j "$jobs" --target "${targets[@]}" -- "${keep_going[@]}"
if [[ -e "$build/lib/libfinecast_trainer.so" ]] || ((!full)); then  # --full --targets may leave it out
  hdf5_used="$(ldd "$build/lib/libfinecast_trainer.so" | awk '$1 ~ /^libhdf5(_serial)?\.so\./ {print $3}')"
  say "libfinecast_trainer.so loads HDF5 from: ${hdf5_used:-?}"
  [[ "$hdf5_used" == "$libdir"/* ]] || say "warning: that is not the HDF5 of $libdir (the headers came from there)"
fi
if ((full)); then
  for bin in "$build/lib/libfinecast_comin.so" "$build/bin/finecast-host" "$build/bin/finecast-replay"; do
    [[ -e "$bin" ]] || continue
    say "$(basename "$bin") loads: $(ldd "$bin" | awk '$1 ~ /^lib(mpi|netcdf|netcdf_c\+\+4|yaml-cpp|fmt|fftw3|hdf5_serial|torch_cuda|torch)\.so/ {printf "%s ", $3}')"
    missing_libs="$(ldd "$bin" | awk '/not found/ {print $1}' | tr '\n' ' ')"
    [[ -z "$missing_libs" ]] || say "warning: $(basename "$bin") cannot find: $missing_libs"
  done
fi

# ---- 5. tests and benchmark ----
status=0
if ((run_tests)); then
  ctest --test-dir "$build" --output-on-failure -j "$(( jobs > 8 ? 8 : jobs ))" --output-log "$build/ctest.log" ||
    status=$?
  if ((cuda_ok)); then  # the CUDA tests print what they measured (CPU/GPU differences): keep it
    "$build/bin/finecast_trainer_tests" --gtest_filter='Cuda*' >"$build/cuda_tests.txt" 2>&1 || status=$?
    grep -E '^(Using device|cuda|cpu|gpu|bf16)' "$build/cuda_tests.txt" || true
  fi
fi
if ((run_bench)); then
  devices=(cpu)
  ((cuda_ok)) && devices=(cuda cpu)
  for dev in "${devices[@]}"; do
    threads=1
    [[ "$dev" == cpu ]] && threads="$cpu_threads"
    say "benchmark on $dev ($threads threads), beside the PyTorch reference ($python)"
    "$build/bin/finecast-bench" trainer --json --device "$dev" --threads "$threads" --python "$(command -v "$python")" \
      --reference "$repo/bench/reference_pytorch.py" | tee "$build/bench_trainer_$dev.json" || status=$?
  done
fi

say "done (status $status). To use this build:"
if ((full)); then
  {
    echo "# written by scripts/device/build_cuda.sh --full: source it to run this build"
    for var in "${run_env[@]}"; do printf 'export %s=%q\n' "$var" "${!var}"; done
  } >"$build/env.sh"
  sed 's/^/  /' "$build/env.sh"
  echo "  (written to $build/env.sh; as root also OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)"
else
  echo "  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
fi
exit "$status"
