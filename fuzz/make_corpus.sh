#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Writes the seed corpus <BUILD_DIR>/seeds/<target>/ from finecast's own configs, small
# namelists written here, tiny NetCDF files (ncgen from CDL text written here: every on-disk
# format the reader meets) and checkpoints written by finecast itself. Nothing is copied from
# Debian's data packages; nothing is committed (scripts/fuzz.sh runs this after its build).
#   fuzz/make_corpus.sh [BUILD_DIR]   (BUILD_DIR: a scripts/fuzz.sh build, default build-fuzz;
#                                      its bin/make_seed_checkpoint writes the checkpoints)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build-fuzz}"
out="$build/seeds"
rm -rf "$out"
mkdir -p "$out"/{config,namelist,field_reader,checkpoint,host_run_file,grid}

# ---- config: the shipped plugin configs, and overrides after "#--set" (fuzz_config.cpp) ----
for f in reference demo replay_tas_plugin replay_etopo_plugin eval_tas_plugin eval_etopo5_plugin; do
  cp "$here/configs/$f.yaml" "$out/config/$f.yaml"
done
{
  cat "$here/configs/demo.yaml"
  printf '#--set\ndevice=cpu\ntrain.epochs=2\nfields=[{name: temp, level: 90}]\ncheckpoint.resume=ckpt\n'
} >"$out/config/demo_with_overrides.yaml"
printf 'fields: [ts]\ngrid: {type: icon, file: grid.nc, coarse_level: 0}\n#--set\nsample.every=0\n' \
  >"$out/config/minimal_with_override.yaml"

# ---- namelist: &comin_nml as ICON and finecast-host read it ----
cat >"$out/namelist/one_plugin.nml" <<'NML'
&comin_nml
  plugin_list(1)%name           = "finecast"
  plugin_list(1)%plugin_library = "/path/to/build/lib/libfinecast_comin.so"
  plugin_list(1)%options        = "finecast.yaml device=cuda checkpoint.resume=ckpt"
/
NML
cat >"$out/namelist/three_plugins.nml" <<'NML'
! ICON's run namelist holds other groups too
&run_nml
  nsteps = 10
/
&comin_nml
  comin_debug = .false.
  plugin_list(1)%name = 'recorder', plugin_list(1)%plugin_library = 'libfinecast_recorder.so'
  plugin_list(2)%name='simple_c'
  plugin_list(2)%plugin_library='libsimple_c_plugin.so'
  plugin_list(2)%primary_constructor='comin_main'
  plugin_list(2)%log_info = T
  plugin_list(3)%NAME = "finecast"   ! keys are case-insensitive
  plugin_list(3)%plugin_library = "libfinecast_comin.so"
  plugin_list(3)%options = 'plugin.yaml fields=''[{name: temp, level: 90}]'''
  plugin_list(3)%comm = "finecast"
  plugin_list(3)%log_debug = .true., plugin_list(3)%log_warning = .f.
/
NML
printf '&comin_nml plugin_list(1)%%plugin_library="a.so" /\n' >"$out/namelist/one_line.nml"

# ---- field_reader: tiny NetCDF files of variable tas (or ts), in every format ncgen writes ----
cdl() {  # NAME CDL-TEXT: writes NAME in the formats given by the remaining arguments
  local name="$1" text="$2"
  shift 2
  printf '%s\n' "$text" >"$out/field_reader/$name.cdl"
  for k in "$@"; do
    ncgen -k "$k" -o "$out/field_reader/${name}_k$k.nc" "$out/field_reader/$name.cdl"
  done
  rm "$out/field_reader/$name.cdl"
}
cdl latlon 'netcdf latlon {
dimensions:
  time = UNLIMITED ; lat = 3 ; lon = 4 ;
variables:
  double time(time) ; time:units = "days since 1850-01-01" ; time:calendar = "noleap" ;
  double lat(lat) ; lat:units = "degrees_north" ;
  double lon(lon) ; lon:units = "degrees_east" ;
  float tas(time, lat, lon) ; tas:units = "K" ; tas:_FillValue = 1.e+20f ;
    tas:standard_name = "air_temperature" ;
data:
  time = 0.5, 31.5 ; lat = -45, 0, 45 ; lon = 0, 90, 180, 270 ;
  tas = 280, 281, 282, 283, 284, 285, 1e20, 287, 288, 289, 290, 291,
        270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 3e38, 281 ;
}' 1 2 5 3
cdl packed 'netcdf packed {
dimensions:
  time = 2 ; lev = 2 ; y = 2 ; x = 3 ;
variables:
  double time(time) ; time:units = "hours since 2001-02-28 12:00:00" ; time:calendar = "360_day" ;
  short tas(time, lev, y, x) ; tas:scale_factor = 0.5 ; tas:add_offset = 100. ;
    tas:_FillValue = -999s ; tas:missing_value = -998s ; tas:valid_range = -100s, 100s ;
data:
  time = 0, 24 ;
  tas = 0, 1, -2, -999, -998, 101, 10, 20, 30, 40, 50, 60,
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 ;
}' 1 4
cdl icon 'netcdf icon {
dimensions:
  time = UNLIMITED ; ncells = 5 ;
variables:
  double time(time) ; time:units = "day as %Y%m%d.%f" ;
  double clon(ncells) ; clon:units = "radian" ;
  double clat(ncells) ; clat:units = "radian" ;
  double ts(time, ncells) ; ts:coordinates = "clon clat" ; ts:valid_min = 200. ; ts:valid_max = 330. ;
data:
  time = 19790101.25 ; clon = 0, 1, 2, 3, 4 ; clat = -1, -0.5, 0, 0.5, 1 ;
  ts = 250, 260, 199, 331, 300 ;
}' 2
cdl rotated 'netcdf rotated {
dimensions:
  rlat = 2 ; rlon = 2 ; height = 1 ;
variables:
  char rotated_pole ; rotated_pole:grid_mapping_name = "rotated_latitude_longitude" ;
    rotated_pole:grid_north_pole_latitude = 39.25 ; rotated_pole:grid_north_pole_longitude = -162. ;
  double rlat(rlat) ; rlat:units = "degrees" ;
  double rlon(rlon) ; rlon:units = "degrees" ;
  double height(height) ;
  float tas(height, rlat, rlon) ; tas:grid_mapping = "rotated_pole" ; tas:missing_value = 1.e+20f ;
data:
  rlat = -1, 1 ; rlon = -1, 1 ; height = 2 ; tas = 1, 2, 3, 4 ;
}' 1 3

# ---- host_run_file: finecast-host's run files (every key: configs/demo_host.yaml) ----
cp "$here/configs/demo_host.yaml" "$out/host_run_file/demo_host.yaml"
printf 'start: 2000-02-29T12:00\nsteps: 4\nnproma: 8\nnlev: 3\ndt: 600\nplugins: []\n' \
  >"$out/host_run_file/leap_day.yaml"
printf 'experiment_start: 1979-01-01\nstart: "1979-03-01"\nrestart_run: true\ncomin_namelist: comin.nml\n' \
  >"$out/host_run_file/chunk.yaml"

# ---- grid: a tiny ICON grid (the octahedron: 8 cells, 6 vertices) in both vertex layouts, and
# the lat-lon files above ----
cdl_grid() {  # NAME CDL-TEXT KIND
  printf '%s\n' "$2" >"$out/grid/$1.cdl"
  ncgen -k "$3" -o "$out/grid/$1_k$3.nc" "$out/grid/$1.cdl"
  rm "$out/grid/$1.cdl"
}
cdl_grid octahedron 'netcdf octahedron {
dimensions:
  cell = 8 ; vertex = 6 ; nv = 3 ;
variables:
  double clon(cell) ; clon:units = "radian" ;
  double clat(cell) ; clat:units = "radian" ;
  double vlon(vertex) ; vlon:units = "radian" ;
  double vlat(vertex) ; vlat:units = "radian" ;
  int vertex_of_cell(nv, cell) ;
  int neighbor_cell_index(nv, cell) ;
  double cell_area(cell) ;
  int parent_cell_index(cell) ;
data:
  clon = 0.785, 2.356, 3.927, 5.498, 0.785, 2.356, 3.927, 5.498 ;
  clat = 0.615, 0.615, 0.615, 0.615, -0.615, -0.615, -0.615, -0.615 ;
  vlon = 0, 0, 1.5708, 3.1416, 4.7124, 0 ;
  vlat = 1.5708, 0, 0, 0, 0, -1.5708 ;
  vertex_of_cell = 1, 1, 1, 1, 6, 6, 6, 6,
                   2, 3, 4, 5, 2, 3, 4, 5,
                   3, 4, 5, 2, 3, 4, 5, 2 ;
  neighbor_cell_index = 2, 3, 4, 1, 6, 7, 8, 5,
                        4, 1, 2, 3, 8, 5, 6, 7,
                        5, 6, 7, 8, 1, 2, 3, 4 ;
  cell_area = 6.4e13, 6.4e13, 6.4e13, 6.4e13, 6.4e13, 6.4e13, 6.4e13, 6.4e13 ;
  parent_cell_index = 1, 1, 1, 1, 1, 1, 1, 1 ;
}' 1
cdl_grid octahedron_corners 'netcdf octahedron_corners {
dimensions:
  ncells = 8 ; vertices = 3 ;
variables:
  double clon(ncells) ; clon:units = "degrees" ;
  double clat(ncells) ; clat:units = "degrees" ;
  double clon_vertices(ncells, vertices) ; clon_vertices:units = "degrees" ;
  double clat_vertices(ncells, vertices) ; clat_vertices:units = "degrees" ;
data:
  clon = 45, 135, 225, 315, 45, 135, 225, 315 ;
  clat = 35, 35, 35, 35, -35, -35, -35, -35 ;
  clon_vertices = 0, 0, 90,  0, 90, 180,  0, 180, 270,  0, 270, 0,
                  0, 0, 90,  0, 90, 180,  0, 180, 270,  0, 270, 0 ;
  clat_vertices = 90, 0, 0,  90, 0, 0,  90, 0, 0,  90, 0, 0,
                  -90, 0, 0,  -90, 0, 0,  -90, 0, 0,  -90, 0, 0 ;
}' 3
cp "$out"/field_reader/latlon_k1.nc "$out"/field_reader/rotated_k3.nc "$out/grid/"

# ---- checkpoint: written by finecast (the small model after one epoch; 64 kB, mostly HDF5's
# object headers and chunk indices of its 40 datasets) ----
seed="$build/bin/make_seed_checkpoint"
[ -x "$seed" ] || { echo "make_corpus: $seed is missing (build it: scripts/fuzz.sh --build-only)" >&2; exit 1; }
"$seed" "$out/checkpoint"
du -sh "$out"/* | sed 's|^|[corpus] |'
