#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Downloads (here, where Debian's archive is reachable) the .debs that build_cuda.sh unpacks on a
# GPU machine without package access: HDF5 with the libraries it loads, and GoogleTest's sources;
# with --full also Open MPI, NetCDF, yaml-cpp, {fmt}, nlohmann-json, FFTW3 and pkgconf (the whole
# of finecast), and the small data files the in-situ demo reads (scripts/device/gpu_insitu.sh).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="$repo/.deps/debs"

usage() {
  cat <<'USAGE'
Usage: scripts/device/fetch_debs.sh [--full] [--dest DIR] [--list]

Run on a Debian machine with package access (the development machine), then carry .deps/
(git-ignored) to the GPU machine and run scripts/device/build_cuda.sh there.

Downloads with `apt-get download` (no root needed, nothing is installed) into .deps/debs:
  libhdf5-dev, libhdf5-103-1   the HDF5 C library and headers (checkpoints)
  googletest, libgtest-dev     GoogleTest sources, rebuilt there with LibTorch's C++ ABI
  the packages of every shared library libhdf5 loads on this machine (libsz2, libaec0,
  libcurl4 and its TLS/Kerberos stack, ...), except glibc, which the GPU machine has.
The HDF5 runtime dependencies are read with ldd from this machine's installed libhdf5
(libhdf5-dev must be installed here: it is part of the project's setup).

With --full, also (for scripts/device/build_cuda.sh --full: plugin, finecast-host, the tools):
  libopenmpi-dev, libopenmpi3, openmpi-bin, openmpi-common, libpmix2   Open MPI 4 (runs relocated,
                               OPAL_PREFIX), with the packages of every library its programs,
                               libmpi and its MCA components (mca_*.so) load: hwloc, libevent, and
                               the optional transports (ucx, libfabric, psm, ibverbs: --no-transports
                               leaves those out; pml ob1 + btl self,vader need none of them)
  libnetcdf-dev, libnetcdf19, libnetcdf-c++4-dev, libnetcdf-c++4-1, libhdf5-hl-100   NetCDF
  libyaml-cpp-dev, libfmt-dev, nlohmann-json3-dev, libfftw3-dev (+ runtimes)
  pkgconf, pkgconf-bin, libpkgconf3   pkg-config for CMake's pkg_check_modules
  and the packages of the libraries these load (ldd), except glibc; build_cuda.sh links only
  those the GPU machine lacks. These packages must be installed here (scripts/setup.sh).
  Also writes .deps/data/ (the in-situ demo's inputs, absent on the GPU machine): the R2B4 ICON
  grid and the tas file of libncarg-data, and etopo5 relief subsampled to 1/4 degree (python3 with
  netCDF4).

Options:
  --full       also the packages of the whole build, and .deps/data (above)
  --no-transports  with --full: leave out Open MPI's optional transports (ucx, libfabric, psm,
               ibverbs, rdmacm)
  --dest DIR   download into DIR instead of .deps/debs
  --list       print the package names and exit
  -h, --help   this text
USAGE
}

list_only=0 full=0 transports=1
while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dest) dest="$2"; shift 2 ;;
    --list) list_only=1; shift ;;
    --full) full=1; shift ;;
    --no-transports) transports=0; shift ;;
    *) echo "fetch_debs: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

arch="$(dpkg --print-architecture)"
hdf5_lib="$(dpkg -L libhdf5-103-1 2>/dev/null | grep -E '/libhdf5_serial\.so\.[0-9]+$' | head -1 || true)"
[[ -n "$hdf5_lib" && -f "$hdf5_lib" ]] ||
  { echo "fetch_debs: libhdf5-103-1 is not installed here; install libhdf5-dev first" >&2; exit 1; }

packages=(libhdf5-dev libhdf5-103-1 googletest libgtest-dev)
seeds=("$hdf5_lib")
if ((full)); then
  full_packages=(libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libpmix2 libhwloc15
    libevent-core-2.1-7 libevent-pthreads-2.1-7
    libnetcdf-dev libnetcdf19 libnetcdf-c++4-dev libnetcdf-c++4-1 libhdf5-hl-100
    libyaml-cpp-dev libyaml-cpp0.7 libfmt-dev libfmt9 nlohmann-json3-dev libfftw3-dev libfftw3-double3
    pkgconf pkgconf-bin libpkgconf3)
  missing=()
  for p in "${full_packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  ((${#missing[@]} == 0)) ||
    { echo "fetch_debs: --full needs these packages installed here (ldd reads them): ${missing[*]}" >&2; exit 1; }
  packages+=("${full_packages[@]}")
  # Every ELF file of the runtime packages: libraries, mpiexec/orted, Open MPI's and PMIx's components.
  while read -r f; do
    [[ -f "$f" && ! -L "$f" ]] || continue
    [[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" == '177ELF' ]] && seeds+=("$f")
  done < <(dpkg -L libopenmpi3 openmpi-bin libpmix2 libhwloc15 libnetcdf19 libnetcdf-c++4-1 libhdf5-hl-100 \
             libyaml-cpp0.7 libfmt9 libfftw3-double3 pkgconf-bin libpkgconf3)
fi
# Open MPI's optional transports (and libnuma, which only they load): pml ob1 + btl self,vader
# need none. (libmunge2 is no transport: libpmix.so.2 itself loads it.)
is_transport() {
  case "$1" in
    libucx0 | libfabric1 | libpsm-infinipath1 | libpsm2-2 | libibverbs1 | ibverbs-providers | librdmacm1 | \
      libnl-3-200 | libnl-route-3-200 | libefa1 | libmlx4-1 | libmlx5-1 | libnuma1) return 0 ;;
  esac
  return 1
}
# The packages of the libraries the seeds really load; glibc's own stay with the GPU machine's.
while read -r path; do
  owner="$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1 || true)"
  [[ -z "$owner" ]] && owner="$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1 || true)"
  case "$owner" in
    "" | libc6 | libc6-* | libhdf5-103-1) ;;
    *) if ((transports)) || ! is_transport "$owner"; then packages+=("$owner"); fi ;;
  esac
done < <(for f in "${seeds[@]}"; do ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}'; done | sort -u)
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)

if ((list_only)); then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

mkdir -p "$dest"
cd "$dest"
echo "fetch_debs: downloading ${#packages[@]} packages ($arch) into $dest"
apt-get download "${packages[@]}"
{
  echo "# fetched $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(grep -m1 "^PRETTY_NAME=" /etc/os-release | cut -d= -f2 | tr -d "\"")"
  printf '%s\n' "${packages[@]}"
} >PACKAGES
du -sh "$dest"

if ((full)); then
  # The in-situ demo's inputs (configs/demo_host.yaml reads them from libncarg-data and
  # ferret-vis, which the GPU machine lacks); etopo5 itself (37 MB) would not fit the carry.
  data="$(dirname "$dest")/data"
  grid=/usr/share/ncarg/data/nug/triangular_grid_ICON.nc
  relief=/usr/share/ferret-vis/data/etopo5.cdf
  [[ -f "$grid" && -f "$relief" ]] ||
    { echo "fetch_debs: $grid or $relief missing here (scripts/setup.sh installs them)" >&2; exit 1; }
  mkdir -p "$data"
  cp "$grid" "$data/triangular_grid_ICON.nc"
  cp "$(dirname "$grid")/tas_rectilinear_grid_2D.nc" "$data/"  # finecast-replay's (configs/replay_tas.yaml)
  /usr/bin/python3 - "$relief" "$data/etopo_quarter.nc" <<'PY' ||
import sys, netCDF4
src, dst = netCDF4.Dataset(sys.argv[1]), netCDF4.Dataset(sys.argv[2], "w", format="NETCDF3_CLASSIC")
rose = src.variables["ROSE"]
lat_name, lon_name = rose.dimensions
step = 3  # 5' -> 1/4 degree
for name in (lat_name, lon_name):
    values = src.variables[name][::step]
    dst.createDimension(name, len(values))
    var = dst.createVariable(name, "f8", (name,))
    var.units = getattr(src.variables[name], "units", "")
    var[:] = values
out = dst.createVariable("ROSE", "i2", (lat_name, lon_name))
out.units = "m"
out[:] = rose[::step, ::step]
dst.close()
PY
    { echo "fetch_debs: could not subsample $relief (needs python3 with netCDF4)" >&2; exit 1; }
  du -sh "$data"
fi
echo "fetch_debs: done. On the GPU machine: scripts/device/build_cuda.sh$( ((full)) && echo ' --full') (carry .deps/debs$( ((full)) && echo ' and .deps/data') along)"
