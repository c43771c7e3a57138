#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What an installation exposes: public headers only, each of which finds every finecast header
# it includes inside the installed tree; and the library every host rank loads
# (libfinecast_coupling.so) exports nothing of the evaluation code.
set -euo pipefail
build="${FINECAST_BINARY_DIR:?FINECAST_BINARY_DIR is not set}"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
inc="$prefix/include/finecast"
[[ -f "$inc/trainer/downscaler.hpp" && -f "$inc/comin.h" && -f "$inc/common/error.hpp" ]] \
  || bad "public headers missing under $inc"

# Internal headers: the host library's registry, the trainer's LibTorch internals, helpers.
for internal in host/comin/host_state.hpp trainer/downscaler_impl.hpp trainer/models.hpp \
                trainer/diffusion.hpp trainer/checkpoint_format.hpp coupling/io/nc_file.hpp \
                coupling/grid/edge_neighbours.hpp host/model host/replay eval/cli; do
  [[ -e "$inc/$internal" ]] && bad "internal $internal is installed"
done

# Every quoted include of an installed header resolves inside the installation.
while IFS= read -r header; do
  while IFS= read -r included; do
    [[ -f "$inc/$included" ]] || bad "${header#"$inc"/} includes $included, which is not installed"
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$header")
done < <(find "$inc" -type f)

lib="$build/lib/libfinecast_coupling.so"
n_eval="$(nm -DC "$lib" | grep -c 'eval::' || true)"
[[ "$n_eval" == 0 ]] || bad "$lib exports $n_eval eval:: symbols (evaluation belongs in libfinecast_eval)"
n_eval_lib="$(nm -DC "$build/lib/libfinecast_eval.so" | grep -c 'eval::' || true)"
[[ "$n_eval_lib" -gt 0 ]] || bad "libfinecast_eval.so exports no eval:: symbols (is this check looking at the right names?)"

((fail == 0)) && echo "install: $(find "$inc" -type f | wc -l) public headers, none internal; no eval:: in libfinecast_coupling"
exit "$fail"
