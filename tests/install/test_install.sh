#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What an installation (in PREFIX, made by the install.prefix test) exposes and how it runs:
# - public headers only, each of which finds every finecast header it includes inside the
#   installed tree, and the plugin's config header;
# - the library every host rank loads (libfinecast_coupling.so) exports nothing of the
#   evaluation code;
# - no libcomin* in lib/ (finecast's ComIn host library, SONAME libcomin.so.0, would shadow
#   ComIn's for ICON), but in lib/finecast/, reached by the host programs' RUNPATH; the plugin
#   keeps its libcomin.so.0 dependency without a RUNPATH to lib/finecast;
# - the installed finecast-host runs the installed plugin (8 steps on R2B4), whose output is
#   NetCDF-4 with deflate on its data variables and time counted from the experiment start.
set -euo pipefail
prefix="${1:?usage: test_install.sh PREFIX}"
build="${FINECAST_BINARY_DIR:?FINECAST_BINARY_DIR is not set}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

inc="$prefix/include/finecast"
[[ -f "$inc/trainer/downscaler.hpp" && -f "$inc/comin.h" && -f "$inc/common/error.hpp" && -f "$inc/plugin/config.hpp" ]] \
  || bad "public headers missing under $inc"

# Internal headers: the host library's registry, the trainer's LibTorch internals, helpers.
for internal in host/comin/host_state.hpp trainer/downscaler_impl.hpp trainer/models.hpp \
                trainer/diffusion.hpp trainer/checkpoint_format.hpp coupling/io/nc_file.hpp \
                coupling/grid/edge_neighbours.hpp host/model host/replay eval/cli plugin/comin_plugin; do
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

# ComIn's SONAME stays out of lib/: only the host programs reach finecast's, in lib/finecast.
shadowing="$(find "$prefix/lib" -maxdepth 1 -name 'libcomin*' | tr '\n' ' ')"
[[ -z "$shadowing" ]] || bad "lib/ holds $shadowing(it would shadow ComIn's libcomin.so.0 on LD_LIBRARY_PATH)"
[[ -f "$prefix/lib/finecast/libcomin.so.0" ]] || bad "lib/finecast/libcomin.so.0 is not installed"
runpath() { readelf -d "$1" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p'; }
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
for program in finecast-host finecast-replay finecast-trainer; do
  # shellcheck disable=SC2016 # $ORIGIN is the loader's, not the shell's
  [[ "$(runpath "$prefix/bin/$program")" == *'$ORIGIN/../lib/finecast'* ]] \
    || bad "$program has no RUNPATH to lib/finecast: $(runpath "$prefix/bin/$program")"
  needed "$prefix/bin/$program" | grep -x 'libcomin.so.0' >/dev/null || bad "$program does not load libcomin.so.0"
done
plugin="$prefix/lib/libfinecast_comin.so"
needed "$plugin" | grep -x 'libcomin.so.0' >/dev/null || bad "the plugin lost its libcomin.so.0 dependency"
[[ "$(runpath "$plugin")" != *finecast* ]] || bad "the plugin has a RUNPATH to lib/finecast: $(runpath "$plugin")"
# As a program without that RUNPATH (ICON) sees it: libcomin.so.0 unresolved from the plugin alone.
(cd "$work" && env -u LD_LIBRARY_PATH ldd "$plugin" | grep 'libcomin.so.0 => not found' >/dev/null) \
  || bad "the plugin resolves libcomin.so.0 on its own: $(ldd "$plugin" | grep libcomin)"
ldd "$prefix/bin/finecast-host" | grep "libcomin.so.0 => $prefix/bin/../lib/finecast/libcomin.so.0" >/dev/null \
  || bad "finecast-host does not find lib/finecast/libcomin.so.0: $(ldd "$prefix/bin/finecast-host" | grep libcomin)"

# The installed finecast-host runs the installed plugin; its output is NetCDF-4 with deflate,
# the config's title and institution, and time counted from the experiment start (the run's
# start, 1979-01-01T00:00: the first sampling, at step 4 of 1800 s, is 7200 s after it).
grid=/usr/share/ncarg/data/nug/triangular_grid_ICON.nc
cat > "$work/plugin.yaml" <<YAML
fields: [ts]
seed: 3
device: cpu
grid: {type: icon, file: $grid, coarse_level: 0}
buffer: {capacity: 4}
model: {hidden: 16, depth: 1, time_embedding: 8, diffusion_steps: 5}
train: {async: false, every: 4, min_steps: 4, epochs: 1, batch_size: 80, warmup_steps: 1, threads: 1}
sample: {every: 4, members: 2, steps: 2, output: out.nc}
output: {title: install test, institution: finecast CI}
checkpoint: {dir: ckpt, every: 4, keep: 2}
YAML
cat > "$work/host.yaml" <<YAML
grid: $grid
orography: /usr/share/ferret-vis/data/etopo20.cdf
orography_variable: ROSE
start: 1979-01-01T00:00:00
dt: 1800
steps: 8
nproma: 24
nlev: 2
progress_every: 0
plugins:
  - {name: finecast, library: $plugin, options: plugin.yaml}
YAML
if ! (cd "$work" && env -u LD_LIBRARY_PATH timeout -k 5 120 mpiexec -n 2 --oversubscribe \
        "$prefix/bin/finecast-host" host.yaml >host.log 2>&1); then
  bad "the installed finecast-host failed with the installed plugin:"
  tail -20 "$work/host.log" >&2
else
  header="$(ncdump -hs "$work/out.nc")"
  for want in 'ts:_DeflateLevel = 1 ;' 'ts_mean:_DeflateLevel = 1 ;' 'ts:_Shuffle = "true" ;' \
              'ts:_ChunkSizes = 1, 1, 20480 ;' ':_Format = "netCDF-4" ;' \
              'time:units = "seconds since 1979-01-01 00:00:00" ;' ':title = "install test" ;' \
              ':institution = "finecast CI" ;'; do
    grep -qF "$want" <<<"$header" || bad "the output's header lacks $want"
  done
  times="$(ncdump -v time "$work/out.nc" | sed -n 's/^ *time = \([0-9, ]*\) ;$/\1/p')"
  [[ "$times" == "7200, 14400" ]] || bad "time holds '$times', expected '7200, 14400' (seconds since the start)"
fi

((fail == 0)) && echo "install: $(find "$inc" -type f | wc -l) public headers, none internal; no eval:: in" \
  "libfinecast_coupling; no libcomin in lib/; the installed finecast-host ran the plugin (NetCDF-4, deflate 1)"
exit "$fail"
