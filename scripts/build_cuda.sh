#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds the whole of finecast (plugin, libcomin.so.0, finecast-host, finecast-replay, tools,
# tests) against a CUDA LibTorch on a GPU node, after checking the LibTorch and the packages.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<'USAGE'
Usage: scripts/build_cuda.sh [options] [-- extra cmake arguments]

Builds all of finecast against a LibTorch with CUDA, on a GPU node (or any node with the CUDA
toolkit): the plugin libfinecast_comin.so, finecast's ComIn host library libcomin.so.0,
finecast-host, finecast-replay, finecast-config, -grid, -eval, -downscale, -bench and the tests.
docs/cuda.md is the recipe. GPU machines without package access: scripts/device/build_cuda.sh
builds the trainer alone.

The LibTorch (first found): --torch DIR, --python PY, $Torch_DIR, a TorchConfig.cmake under
$CMAKE_PREFIX_PATH, the torch of python3. It must have CUDA (lib/libc10_cuda.so) and the
C++11 ABI (_GLIBCXX_USE_CXX11_ABI=1), like the system libraries finecast links.

Steps: 1. check the LibTorch; 2. check the Debian packages (MPI, NetCDF-C++4, HDF5, yaml-cpp,
GoogleTest, CLI11, {fmt}, nlohmann-json, FFTW3, ...) and install the missing ones with apt-get
when run as root on Debian (otherwise: list them and stop); 3. configure BUILD_DIR with that
LibTorch; 4. build everything; 5. check that the plugin loads libtorch_cuda, and write
BUILD_DIR/finecast-build.txt (what scripts/launch.sh reads when it cannot tell by itself);
6. with --test, run the tests (ctest).

Options:
  --torch DIR         a LibTorch: the unpacked zip from pytorch.org (DIR/share/cmake/Torch),
                      or a folder holding TorchConfig.cmake
  --python PY         take the LibTorch of this python's torch (pip's CUDA wheels)
  --build-dir DIR     build directory (default: build-cuda)
  --jobs N            parallel build jobs (default: nproc)
  --comin-root DIR    build the plugin against ICON's ComIn (its install prefix)
  --no-install        never install packages; stop with the list of missing ones
  --check             only steps 1 and 2: say whether this node can build it; build nothing
  --configure-only    stop after step 3
  --test              step 6: run ctest (log: BUILD_DIR/ctest.log)
  --allow-cpu         accept a LibTorch without CUDA (to try this script on a CPU machine)
  -h, --help          this text

Exit status: 0 built (or --check: ready), 1 a step failed, 2 bad arguments.
USAGE
}

say() { echo "build_cuda: $*"; }
die() { echo "build_cuda: error: $*" >&2; exit 1; }
usage_error() { echo "build_cuda: $* (see --help)" >&2; exit 2; }

torch_arg="" python="" build="$repo/build-cuda" jobs="$(nproc)" comin_root=""
no_install=0 check_only=0 configure_only=0 run_tests=0 allow_cpu=0
extra=()
while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --torch | --python | --build-dir | --jobs | --comin-root)
      (($# >= 2)) || usage_error "$1 needs a value"
      case "$1" in
        --torch) torch_arg="$2" ;;
        --python) python="$2" ;;
        --build-dir) build="$(mkdir -p "$2" && cd "$2" && pwd)" ;;
        --jobs) [[ "$2" =~ ^[1-9][0-9]*$ ]] || usage_error "--jobs expects a positive number, got '$2'"; jobs="$2" ;;
        --comin-root) comin_root="$2" ;;
      esac
      shift 2 ;;
    --no-install) no_install=1; shift ;;
    --check) check_only=1; shift ;;
    --configure-only) configure_only=1; shift ;;
    --test) run_tests=1; shift ;;
    --allow-cpu) allow_cpu=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done
[[ -n "$torch_arg" && -n "$python" ]] && usage_error "give --torch or --python, not both"

# ---- 1. the LibTorch: where, which version, CUDA, C++ ABI ----
torch_dir="" torch_from=""
torch_dir_of() {  # torch_dir_of DIR: the folder with TorchConfig.cmake in or under DIR
  local d
  for d in "$1" "$1/share/cmake/Torch" "$1/Torch" "$1/lib/cmake/Torch"; do
    [[ -f "$d/TorchConfig.cmake" ]] && { (cd "$d" && pwd); return 0; }
  done
  return 1
}
if [[ -n "$torch_arg" ]]; then
  [[ -d "$torch_arg" ]] || die "--torch $torch_arg: no such folder"
  torch_dir="$(torch_dir_of "$torch_arg")" ||
    die "--torch $torch_arg: no TorchConfig.cmake there or in share/cmake/Torch (is it an unpacked LibTorch?)"
  torch_from="--torch $torch_arg"
elif [[ -n "$python" || -z "${Torch_DIR:-}${CMAKE_PREFIX_PATH:-}" ]]; then
  py="${python:-python3}"
  command -v "$py" >/dev/null 2>&1 || die "'$py' not found; give --torch DIR or --python PY"
  prefix="$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)" ||
    die "'$py' cannot import torch; give --torch DIR (a LibTorch) or --python PY (a python with torch)"
  torch_dir="$(torch_dir_of "$prefix")" || die "$py's torch has no TorchConfig.cmake under $prefix"
  torch_from="$py's torch"
elif [[ -n "${Torch_DIR:-}" ]]; then
  torch_dir="$(torch_dir_of "$Torch_DIR")" || die "Torch_DIR=$Torch_DIR holds no TorchConfig.cmake"
  torch_from="Torch_DIR"
else
  IFS=';:' read -r -a prefixes <<<"$CMAKE_PREFIX_PATH"
  for p in "${prefixes[@]}"; do
    [[ -n "$p" ]] && torch_dir="$(torch_dir_of "$p")" && break
  done
  [[ -n "$torch_dir" ]] || die "no TorchConfig.cmake under CMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH"
  torch_from="CMAKE_PREFIX_PATH"
fi
torch_prefix="$(cd "$torch_dir/../../.." && pwd)"
torch_lib=""
for d in "$torch_prefix/lib" "$(cd "$torch_dir/../.." && pwd)"; do
  compgen -G "$d/libc10.so*" >/dev/null && { torch_lib="$d"; break; }
done
[[ -n "$torch_lib" ]] || die "LibTorch at $torch_dir: its libraries (libc10.so) are not in $torch_prefix/lib"
torch_version="$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")/\1/p' "$torch_dir/TorchConfigVersion.cmake" 2>/dev/null | head -1)"
[[ -f "$torch_prefix/build-version" ]] && torch_version="$(cat "$torch_prefix/build-version")"
torch_cuda=""
compgen -G "$torch_lib/libc10_cuda.so*" >/dev/null && torch_cuda="yes"
if [[ -n "$torch_cuda" ]]; then  # the CUDA version, where the LibTorch says it
  version_py="$(dirname "$torch_lib")/version.py"
  [[ -f "$version_py" ]] && torch_cuda="$(sed -n "s/^cuda: .*= '\(.*\)'/\1/p; s/^cuda = '\(.*\)'/\1/p" "$version_py" | head -1)"
  [[ "$torch_version" =~ \+cu([0-9]+)$ ]] && [[ -z "$torch_cuda" || "$torch_cuda" == yes ]] && torch_cuda="cu${BASH_REMATCH[1]}"
  torch_cuda="${torch_cuda:-yes}"
fi
abi="$(grep -o '_GLIBCXX_USE_CXX11_ABI=[01]' "$torch_dir/TorchConfig.cmake" | head -1 | cut -d= -f2 || true)"
abi="${abi:-1}"
say "LibTorch ${torch_version:-?} from $torch_from: $torch_dir"
say "  libraries $torch_lib; CUDA: ${torch_cuda:-none}; C++11 ABI: $abi"
if [[ -z "$torch_cuda" ]]; then
  if ((allow_cpu)); then
    say "warning: this LibTorch has no CUDA (--allow-cpu): the build will train on the CPU only"
  else
    die "the LibTorch at $torch_dir has no CUDA (no libc10_cuda.so in $torch_lib). Use a CUDA one:
  the LibTorch zip for your CUDA version from pytorch.org (the C++11-ABI one; --torch DIR), or a
  python with a CUDA torch from pip (--python PY); --allow-cpu only to try this script"
  fi
fi
if [[ "$abi" == 0 ]]; then
  die "the LibTorch at $torch_dir uses the pre-C++11 ABI (_GLIBCXX_USE_CXX11_ABI=0), but yaml-cpp,
  NetCDF-C++4 and {fmt} of the system use the C++11 ABI, and the plugin links both: the build
  would fail to link (or crash). Use a LibTorch with the C++11 ABI: pip's torch 2.7 or newer, or
  the C++11-ABI LibTorch zip from pytorch.org. Only the trainer builds with the old ABI:
  scripts/device/build_cuda.sh"
fi

# ---- 2. packages (Debian names) ----
# libtorch-dev is not among them: the LibTorch is the CUDA one above.
packages=(
  build-essential cmake pkg-config
  libopenmpi-dev openmpi-bin
  libnetcdf-c++4-dev netcdf-bin
  libhdf5-dev hdf5-tools
  libyaml-cpp-dev googletest libgtest-dev libcli11-dev
  libfmt-dev nlohmann-json3-dev libfftw3-dev
)
if command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    say "all ${#packages[@]} Debian packages installed"
  elif ((no_install || check_only)) || [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "build_cuda: missing Debian packages (${#missing[@]}): ${missing[*]}" >&2
    echo "  install them with:  apt-get install --no-install-recommends ${missing[*]}" >&2
    [[ "$(id -u)" != 0 ]] && echo "  (as root; or ask your admins, or load the equivalent modules)" >&2
    exit 1
  else
    say "installing ${#missing[@]} Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update failed (is a Debian mirror reachable from this node?)"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
      die "apt-get install failed for: ${missing[*]}"
  fi
  if [[ "$torch_dir" != /usr/lib/*/cmake/Torch ]] &&
     dpkg-query -W -f='${Status}' libtorch-dev 2>/dev/null | grep -q "install ok installed"; then
    say "note: Debian's CPU libtorch-dev is installed too; the build is pointed at the CUDA one (checked after configuring)"
  fi
else
  say "not a Debian system: make sure these are found by CMake (modules, spack, ...): cmake >= 3.18,"
  say "  a C++17 compiler, MPI (C), pkg-config, NetCDF-C++4, HDF5 (C), yaml-cpp, GoogleTest, CLI11,"
  say "  {fmt}, nlohmann-json 3, FFTW3. The configure step names the first one it misses."
fi
command -v cmake >/dev/null 2>&1 || die "cmake not found (Debian package cmake)"
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || die "no C++ compiler (Debian package build-essential)"
if ((check_only)); then
  say "ready to build (--check: nothing built)"
  exit 0
fi

# ---- 3. configure ----
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DTorch_DIR:PATH="$torch_dir" -DCMAKE_PREFIX_PATH="$torch_prefix")
if [[ -n "$torch_cuda" ]]; then  # PyTorch's CMake files look for the CUDA toolkit (and pip's cuDNN)
  nvcc="$(command -v nvcc || true)"
  [[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
  if [[ -n "$nvcc" ]]; then
    cmake_args+=(-DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$(dirname "$(dirname "$nvcc")")")
  else
    say "warning: nvcc not found (PATH, /usr/local/cuda): if configuring fails on CUDA, load the CUDA toolkit's module"
  fi
  if [[ -n "$python" ]]; then
    cudnn="$("$python" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null || true)"
    [[ -n "$cudnn" ]] && cmake_args+=(-DCUDNN_INCLUDE_PATH="$cudnn/include" -DCUDNN_LIBRARY_PATH="$cudnn/lib")
  fi
fi
IFS=. read -r torch_major torch_minor _ <<<"${torch_version%%+*}"
if [[ "$torch_major" =~ ^[0-9]+$ && "$torch_minor" =~ ^[0-9]+$ ]] &&
   ((torch_major > 2 || (torch_major == 2 && torch_minor >= 12))); then
  cmake_args+=(-DCMAKE_CXX_STANDARD=20)  # PyTorch 2.12's headers need C++20
fi
[[ -n "$comin_root" ]] && cmake_args+=(-DFINECAST_COMIN_ROOT="$comin_root")
command -v ninja >/dev/null 2>&1 && [[ ! -f "$build/Makefile" ]] && cmake_args+=(-G Ninja)
mkdir -p "$build"
say "configuring $build"
cmake -S "$repo" -B "$build" "${cmake_args[@]}" "${extra[@]}" >"$build/configure.log" 2>&1 ||
  { tail -40 "$build/configure.log" >&2; die "cmake configure failed (whole log: $build/configure.log)"; }
grep -m1 "finecast: LibTorch" "$build/configure.log" | sed 's/^-- /build_cuda: /' || true
used="$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")"
[[ "$(cd "$used" 2>/dev/null && pwd)" == "$torch_dir" ]] ||
  die "CMake took LibTorch from '$used', not $torch_dir (an old cache? remove $build/CMakeCache.txt)"
if [[ -n "$torch_cuda" ]] && ! grep -q '^C10_CUDA_LIBRARY:FILEPATH=/' "$build/CMakeCache.txt"; then
  die "CMake found no c10_cuda in $torch_dir (see $build/configure.log)"
fi
((configure_only)) && { say "configured $build (--configure-only)"; exit 0; }

# ---- 4. build (going on past a failing file, so one run shows every compile error) ----
keep_going=(-k)
[[ -f "$build/build.ninja" ]] && keep_going=(-k 0)
say "building with $jobs jobs"
cmake --build "$build" -j "$jobs" -- "${keep_going[@]}" || die "the build failed (errors above)"

# ---- 5. the plugin must load LibTorch's CUDA libraries; record what was built ----
plugin="$build/lib/libfinecast_comin.so"
[[ -f "$plugin" ]] || die "$plugin was not built"
cuda_libs="$(ldd "$plugin" | awk '$1 ~ /^lib(torch_cuda|c10_cuda)/ {print $1 " => " $3}')"
if [[ -n "$torch_cuda" ]]; then
  [[ -n "$cuda_libs" ]] || die "$plugin does not load libtorch_cuda/libc10_cuda (ldd): CUDA would not be used"
  say "the plugin loads: $(tr '\n' ' ' <<<"$cuda_libs")"
fi
{
  echo "# written by scripts/build_cuda.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(hostname)); read by scripts/launch.sh"
  echo "torch=${torch_version:-unknown}"
  echo "torch_dir=$torch_dir"
  echo "cuda=${torch_cuda:-no}"
  echo "cxx11_abi=$abi"
  echo "gpu=$(nvidia-smi -L 2>/dev/null | head -1 || true)"
} >"$build/finecast-build.txt"
say "wrote $build/finecast-build.txt"

# ---- 6. tests ----
status=0
if ((run_tests)); then
  say "running the tests (ctest; the CUDA tests run where a GPU is visible)"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    ctest --test-dir "$build" --output-on-failure -j "$((jobs > 8 ? 8 : jobs))" --output-log "$build/ctest.log" ||
    status=$?
fi

say "done (status $status). GPU jobs with this build:"
echo "  scripts/launch.sh --profile gpu --bin-dir $build/bin --run RUN.yaml   (RUN.yaml's plugin: library: $plugin)"
echo "  ICON:  scripts/launch.sh --profile icon --param program.plugin_library=$plugin ..."
exit "$status"
