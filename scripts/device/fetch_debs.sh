#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Downloads (here, where Debian's archive is reachable) the .debs that build_cuda.sh unpacks on a
# GPU machine without package access: HDF5 with the libraries it loads, and GoogleTest's sources.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="$repo/.deps/debs"

usage() {
  cat <<'USAGE'
Usage: scripts/device/fetch_debs.sh [--dest DIR] [--list]

Run on a Debian machine with package access (the development machine), then carry .deps/
(git-ignored) to the GPU machine and run scripts/device/build_cuda.sh there.

Downloads with `apt-get download` (no root needed, nothing is installed) into .deps/debs:
  libhdf5-dev, libhdf5-103-1   the HDF5 C library and headers (checkpoints)
  googletest, libgtest-dev     GoogleTest sources, rebuilt there with LibTorch's C++ ABI
  the packages of every shared library libhdf5 loads on this machine (libsz2, libaec0,
  libcurl4 and its TLS/Kerberos stack, ...), except glibc, which the GPU machine has.
The HDF5 runtime dependencies are read with ldd from this machine's installed libhdf5
(libhdf5-dev must be installed here: it is part of the project's setup).

Options:
  --dest DIR   download into DIR instead of .deps/debs
  --list       print the package names and exit
  -h, --help   this text
USAGE
}

list_only=0
while (($# > 0)); do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --dest) dest="$2"; shift 2 ;;
    --list) list_only=1; shift ;;
    *) echo "fetch_debs: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

arch="$(dpkg --print-architecture)"
hdf5_lib="$(dpkg -L libhdf5-103-1 2>/dev/null | grep -E '/libhdf5_serial\.so\.[0-9]+$' | head -1 || true)"
[[ -n "$hdf5_lib" && -f "$hdf5_lib" ]] ||
  { echo "fetch_debs: libhdf5-103-1 is not installed here; install libhdf5-dev first" >&2; exit 1; }

packages=(libhdf5-dev libhdf5-103-1 googletest libgtest-dev)
# The packages of the libraries libhdf5 really loads; glibc's own stay with the GPU machine's.
while read -r lib path; do
  [[ "$path" == /* ]] || continue
  owner="$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1 || true)"
  [[ -z "$owner" ]] && owner="$(dpkg -S "$path" 2>/dev/null | head -1 | cut -d: -f1 || true)"
  case "$owner" in
    "" | libc6 | libc6-* | libhdf5-103-1) ;;
    *) packages+=("$owner") ;;
  esac
  : "$lib"
done < <(ldd "$hdf5_lib" | awk '$2 == "=>" {print $1, $3}')
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
echo "fetch_debs: done. On the GPU machine: scripts/device/build_cuda.sh (carry .deps/ along)"
