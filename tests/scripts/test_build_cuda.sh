#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/build_cuda.sh on a machine without a GPU: its arguments, the LibTorch checks (CUDA, the
# C++11 ABI) on stand-in LibTorch folders, the package check with a stand-in dpkg-query, and the
# configure step with Debian's CPU LibTorch (--allow-cpu). The CUDA build itself needs a GPU node.
set -euo pipefail
SRC="${FINECAST_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
SCRIPT="$SRC/scripts/build_cuda.sh"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/finecast-build-cuda-test.XXXXXX")"
failures=0
trap 'if ((failures == 0)); then rm -rf "$WORK"; else echo "kept $WORK"; fi' EXIT
cd "$WORK"
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
run() {  # run ARGS...: the script's exit status in $rc, its output in out
  rc=0
  "$SCRIPT" "$@" >out 2>&1 || rc=$?
}
expect() {  # expect RC NEEDLE WHAT
  [[ "$rc" == "$1" ]] || fail "$3: exit status $rc, expected $1: $(cat out)"
  grep -qF -- "$2" out || fail "$3: expected [$2] in: $(cat out)"
}

# A stand-in LibTorch as the pytorch.org zip lays it out: share/cmake/Torch, lib/, build-version.
fake_libtorch() {  # fake_libtorch DIR ABI CUDA(yes|no)
  mkdir -p "$1/share/cmake/Torch" "$1/lib"
  printf 'set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=%s")\n' "$2" >"$1/share/cmake/Torch/TorchConfig.cmake"
  echo 'set(PACKAGE_VERSION "2.7.0")' >"$1/share/cmake/Torch/TorchConfigVersion.cmake"
  touch "$1/lib/libc10.so" "$1/lib/libtorch.so"
  if [[ "$3" == yes ]]; then touch "$1/lib/libc10_cuda.so"; echo "2.7.0+cu126" >"$1/build-version"; fi
}
fake_libtorch cuda-torch 1 yes
fake_libtorch old-abi 0 yes
fake_libtorch cpu-torch 1 no
# A dpkg-query that knows every package but those in FAKE_MISSING.
mkdir -p shim
cat >shim/dpkg-query <<'SH'
#!/bin/bash
for p in $FAKE_MISSING; do [[ "${!#}" == "$p" ]] && exit 1; done
printf 'install ok installed'
SH
chmod +x shim/dpkg-query

run --help
expect 0 "Usage: scripts/build_cuda.sh" "--help"
grep -qF "libfinecast_comin.so" out || fail "--help names what it builds"
run --bogus
expect 2 "unknown argument '--bogus'" "unknown argument"
run --jobs zero
expect 2 "--jobs expects a positive number, got 'zero'" "bad --jobs"
run --torch a --python b
expect 2 "give --torch or --python, not both" "both sources"
run --torch "$WORK/nowhere"
expect 1 "--torch $WORK/nowhere: no such folder" "missing LibTorch"
mkdir -p empty
run --torch empty
expect 1 "no TorchConfig.cmake there or in share/cmake/Torch" "not a LibTorch"

run --torch cpu-torch --check
expect 1 "has no CUDA (no libc10_cuda.so in $WORK/cpu-torch/lib)" "CPU LibTorch refused"
run --torch old-abi --check
expect 1 "uses the pre-C++11 ABI (_GLIBCXX_USE_CXX11_ABI=0)" "old ABI refused"
grep -qF "scripts/device/build_cuda.sh" out || fail "old ABI: points to the trainer-only build"

PATH="$WORK/shim:$PATH" FAKE_MISSING="libfftw3-dev libcli11-dev" run --torch cuda-torch --check
expect 1 "missing Debian packages (2): libcli11-dev libfftw3-dev" "missing packages"
grep -qF "apt-get install --no-install-recommends libcli11-dev libfftw3-dev" out || fail "missing packages: the apt-get line: $(cat out)"
grep -qF "CUDA: cu126; C++11 ABI: 1" out || fail "CUDA LibTorch: version and ABI read: $(cat out)"
PATH="$WORK/shim:$PATH" FAKE_MISSING="" run --torch cuda-torch/share/cmake/Torch --check
expect 0 "ready to build (--check: nothing built)" "CUDA LibTorch, all packages: ready"
grep -qF "LibTorch 2.7.0+cu126 from --torch" out || fail "the LibTorch's version: $(cat out)"
Torch_DIR="$WORK/cuda-torch/share/cmake/Torch" PATH="$WORK/shim:$PATH" FAKE_MISSING="" run --check
expect 0 "from Torch_DIR: $WORK/cuda-torch/share/cmake/Torch" "Torch_DIR from the environment"
CMAKE_PREFIX_PATH="/nonexistent:$WORK/cuda-torch" PATH="$WORK/shim:$PATH" FAKE_MISSING="" run --check
expect 0 "from CMAKE_PREFIX_PATH" "CMAKE_PREFIX_PATH from the environment"

# The configure step, for real, with Debian's CPU LibTorch.
debian_torch="$(dirname "$(find /usr/lib -name TorchConfig.cmake -path '*cmake/Torch/*' 2>/dev/null | head -1)")"
if [[ -f "$debian_torch/TorchConfig.cmake" ]]; then
  run --torch "$debian_torch" --allow-cpu --configure-only --build-dir "$WORK/build"
  expect 0 "configured $WORK/build (--configure-only)" "configure with the CPU LibTorch"
  grep -q "^Torch_DIR:PATH=$debian_torch$" "$WORK/build/CMakeCache.txt" || fail "configure: Torch_DIR in the cache"
  grep -qF "finecast: LibTorch" out || fail "configure: CMake's LibTorch line is shown: $(cat out)"
else
  echo "note: no Debian LibTorch here; the configure step is not exercised"
fi

((failures == 0)) || { echo "$failures check(s) failed" >&2; exit 1; }
echo "all checks passed"
