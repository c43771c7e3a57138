#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Runs finecast inside the real ICON (docs/icon.md): ICON's dry Jablonowski-Williamson baroclinic
# wave (nh_test_name 'jabw', as ICON's run/exp.nh35_tri_jws_validate sets up its steady variant)
# on R2B4 with 2 MPI ranks, which needs no input data but the grid; finecast downscales the
# lowest model level's temperature from R2B0 to R2B4 while ICON runs. Two runs: the first writes
# ICON's restart file and finecast's checkpoints at its end, the second restarts ICON from that
# file and resumes finecast from its checkpoint.
#
#   scripts/icon/run_jabw.sh ICON_BUILD_DIR RUN_DIR [--hours H] [--ranks N] [--grid FILE] [--without-finecast]
#                            [--test-case jabw|jabw_s]
#
# ICON_BUILD_DIR: what scripts/icon/build_icon.sh built (bin/icon, comin-shared/libcomin.so.0).
# RUN_DIR: created; holds the grid, the namelists, finecast's config, ICON's and finecast's
# outputs and the logs (run1.log, run2.log).
# --hours H: model hours of each of the two runs (default 12; the time step is 300 s).
# --ranks N: MPI ranks (default 2).
# --grid FILE: an ICON R2B4 grid file; default: finecast-grid writes one (R2B4 on the uniform
# icosahedral geometry, with every variable ICON's grid reader needs).
# --without-finecast: the same two runs with no plugin (the base for the time per step).
# --test-case: jabw (default: the baroclinic wave, perturbed) or jabw_s (its steady state, which a
# correct grid keeps steady: the script then prints how far surface pressure drifted).
# finecast is taken from this checkout's build/ (scripts/setup.sh builds it).
set -euo pipefail

usage() { sed -n '3,24p' "$0" | sed 's/^# \{0,1\}//'; }
die() { printf 'run_jabw: error: %s\n' "$*" >&2; exit 1; }
say() { printf '[run_jabw %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

hours=12
ranks=2
grid=""
with_finecast=1
test_case=jabw
positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --hours) hours="${2:?--hours needs a number}"; shift 2 ;;
    --ranks) ranks="${2:?--ranks needs a number}"; shift 2 ;;
    --grid) grid="${2:?--grid needs a file}"; shift 2 ;;
    --without-finecast) with_finecast=0; shift ;;
    --test-case) test_case="${2:?--test-case needs jabw or jabw_s}"; shift 2 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) positional+=("$1"); shift ;;
  esac
done
[ ${#positional[@]} -eq 2 ] || { usage >&2; exit 2; }
[[ "$hours" =~ ^[1-9][0-9]*$ ]] || die "--hours must be a positive whole number, got $hours"
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || die "--ranks must be a positive whole number, got $ranks"
[[ "$test_case" =~ ^(jabw|jabw_s)$ ]] || die "--test-case must be jabw or jabw_s, got $test_case"
icon_build="$(cd "${positional[0]}" 2>/dev/null && pwd)" || die "no ICON build folder at ${positional[0]}"
icon="$icon_build/bin/icon"
comin_dir="$icon_build/comin-shared"
[ -x "$icon" ] || die "no $icon: build ICON first (scripts/icon/build_icon.sh)"
[ -f "$comin_dir/libcomin.so.0" ] || die "no $comin_dir/libcomin.so.0: scripts/icon/build_icon.sh builds it"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
plugin="$here/build/lib/libfinecast_comin.so"
[ -f "$plugin" ] || die "no $plugin: build finecast first (scripts/setup.sh)"
mkdir -p "${positional[1]}"
run="$(cd "${positional[1]}" && pwd)"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$run"
if [ -z "$grid" ]; then
  grid="$run/icon_grid_R02B04.nc"
  if [ ! -f "$grid" ]; then
    say "writing the R2B4 grid file with finecast-grid: $grid"
    "$here/build/bin/finecast-grid" --write-icon-grid "$grid" --level 4 >grid.log 2>&1 \
      || die "finecast-grid could not write the grid (see $run/grid.log)"
  fi
fi
[ -f "$grid" ] || die "no grid file $grid"
grid="$(cd "$(dirname "$grid")" && pwd)/$(basename "$grid")"

# finecast: temperature at ICON's lowest full level (35), R2B4 -> R2B0 patches of 256 cells,
# a training session and a sampling every 2 model hours (24 steps), checkpoints at ICON's
# restart (EP_ATM_CHECKPOINT_AFTER) and at the end; the second run resumes from them.
cat >finecast.yaml <<EOF
fields: [{name: temp, level: 35}]
seed: 1
device: cpu
grid: {type: icon, file: $grid, coarse_level: 0}
buffer: {capacity: 24}
model: {hidden: 128, depth: 3, time_embedding: 32, diffusion_steps: 50}
train: {every: 24, min_steps: 12, epochs: 2, batch_size: 64, threads: 1}
sample: {every: 24, members: 4, sampler: ddim, steps: 10, output: finecast_temp.nc, write_back: temp_finecast}
checkpoint: {dir: checkpoints, keep: 3, at_host_restart: true}
EOF

steps=$((hours * 12))
start="2008-09-01T00:00:00Z"
end1="$(date -u -d "2008-09-01 00:00:00 UTC + $hours hours" +%Y-%m-%dT%H:%M:%SZ)"
end2="$(date -u -d "2008-09-01 00:00:00 UTC + $((2 * hours)) hours" +%Y-%m-%dT%H:%M:%SZ)"

# $1: restart (.true./.false.), $2: the stop date, $3: finecast's extra options.
write_namelists() {
  cat >icon_master.namelist <<EOF
&master_nml
 lrestart = $1
/
&master_time_control_nml
 calendar             = 'proleptic gregorian'
 experimentStartDate  = '$start'
 experimentStopDate   = '$2'
 checkpointTimeIntval = 'PT${hours}H'
 restartTimeIntval    = 'P10D'
/
&time_nml
 is_relative_time = .false.
/
&master_model_nml
 model_type = 1
 model_name = "atm"
 model_namelist_filename = "NAMELIST_jabw"
 model_min_rank = 0
 model_max_rank = 65535
 model_inc_rank = 1
/
EOF
  cat >NAMELIST_jabw <<EOF
&parallel_nml
 nproma           = 32
 p_test_run       = .false.
 l_test_openmp    = .false.
 l_log_checks     = .false.
 num_io_procs     = 0
 num_restart_procs = 0
/
&grid_nml
 dynamics_grid_filename = "$grid"
/
&run_nml
 num_lev          = 35
 dtime            = 300.
 ltestcase        = .true.
 ldynamics        = .true.
 ltransport       = .false.
 iforcing         = 0
 ntracer          = 0
 msg_level        = 5
 output           = "nml"
 ltimer           = .true.
 timers_level     = 1
/
&dynamics_nml
 divavg_cntrwgt   = 0.50
/
&nh_testcase_nml
 nh_test_name     = '$test_case'
/
&nonhydrostatic_nml
 iadv_rhotheta    = 2
 igradp_method    = 2
/
&diffusion_nml
 hdiff_order      = 5
 hdiff_efdt_ratio = 10.0
 lhdiff_vn        = .true.
 lhdiff_temp      = .false.
 hdiff_multfac    = 1.0
 hdiff_tv_ratio   = 1.0
/
&output_nml
 output_filename  = "jabw_icon"
 output_start     = "$start"
 output_end       = "$end2"
 output_interval  = "PT02H"
 file_interval    = "P10D"
 include_last     = .true.
 mode             = 1
 ml_varlist       = 'pres_sfc', 'temp'
/
EOF
  [ "$with_finecast" = 1 ] || return 0
  cat >>NAMELIST_jabw <<EOF
&comin_nml
 plugin_list(1)%name           = "finecast"
 plugin_list(1)%plugin_library = "$plugin"
 plugin_list(1)%options        = "finecast.yaml$3"
/
EOF
}

# ICON's ComIn is linked into bin/icon; the plugin's libcomin.so.0 must be a shared build of the
# same ComIn version (comin-shared), first on the library path. No folder with finecast's own
# libcomin.so.0 (build/lib) may be on it.
export LD_LIBRARY_PATH="$comin_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
say "ICON: $icon, plugin: $plugin, libcomin: $comin_dir/libcomin.so.0"
say "run 1: $start to $end1 ($steps steps of 300 s on $ranks ranks), log: $run/run1.log"
write_namelists .false. "$end1" ""
t0=$(date +%s)
mpiexec -n "$ranks" --oversubscribe "$icon" >run1.log 2>&1 || die "ICON run 1 failed (see $run/run1.log:
$(tail -n 20 run1.log))"
t1=$(date +%s)
say "run 1 finished in $((t1 - t0)) s"
ls ./*restart* >/dev/null 2>&1 || die "run 1 wrote no restart file (see $run/run1.log)"
say "run 2: restart at $end1 to $end2, finecast resumes from checkpoints/, log: $run/run2.log"
write_namelists .true. "$end2" " checkpoint.resume=auto"
mpiexec -n "$ranks" --oversubscribe "$icon" >run2.log 2>&1 || die "ICON run 2 failed (see $run/run2.log:
$(tail -n 20 run2.log))"
t2=$(date +%s)
say "run 2 finished in $((t2 - t1)) s"
for log in run1.log run2.log; do
  say "$log: $(grep -c '^ Time step:' "$log" || true) time steps; ICON's timer 'total' $(grep -m 1 '^ total ' "$log" | awk '{print $6}') (slowest rank)"
done
grep -h "finecast" run1.log run2.log | grep -E "Host: ComIn|Training session|Sampled|Checkpoint written|Resumed" || true
if [ "$test_case" = jabw_s ]; then
  # The steady state stays steady on a correct grid: surface pressure at the end against the start.
  /usr/bin/python3 - "$run"/jabw_icon_DOM01_ML_0001.nc <<'EOF' || true
import sys
import netCDF4
import numpy as np
ps = netCDF4.Dataset(sys.argv[1])["pres_sfc"][:]
d = np.abs(ps[-1] - ps[0])
print("[run_jabw] jabw_s: surface pressure after %d outputs: max |change| %.3f hPa, rms %.3f hPa (start: %.1f-%.1f hPa)"
      % (ps.shape[0] - 1, d.max() / 100, np.sqrt((d ** 2).mean()) / 100, ps[0].min() / 100, ps[0].max() / 100))
EOF
fi
say "finecast's output: $run/finecast_temp.nc; ICON's: $run/jabw_icon_*.nc; logs: run1.log run2.log"
