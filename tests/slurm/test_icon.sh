#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The ICON profile (program: {executable, namelists, ...}): the rendered job copies the namelists
# into its run directory with finecast in &comin_nml, loads the modules, asks for the memory,
# hint and GPUs, and starts the program with srun; arrays give one run directory per task and
# chains set ICON's lrestart from the second chunk on. A probe program stands in for ICON and
# records what it was given, so no ICON and no finecast build are needed.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v shellcheck >/dev/null 2>&1 || { echo "shellcheck is not installed (Debian package shellcheck)"; exit 1; }
check_script() {  # check_script FILE WHAT
  bash -n "$1" || fail "$2: bash -n rejects the rendered script"
  shellcheck -s bash "$1" || fail "$2: shellcheck rejects the rendered script"
}

# ---- an ICON experiment: master namelist, atmosphere namelist (ComIn's simple_c already in
# its &comin_nml, a '$' and a quote in comments), a grid to link, the finecast config ----
mkdir -p exp grids
cat >exp/icon_master.namelist <<'NML'
&master_nml
  lrestart = .false.   ! the first chunk starts from initial data
/
&master_time_control_nml
  experimentStartDate = "1979-01-01T00:00:00Z"
  restartTimeIntval   = "P1D"
/
&master_model_nml
  model_type = 1
  model_name = "atm"
  model_namelist_filename = "NAMELIST_atm"
/
NML
cat >exp/NAMELIST_atm <<'NML'
&parallel_nml
  nproma = 32   ! costs $$, don't change
/
&comin_nml
  plugin_list(1)%name           = "simple_c"
  plugin_list(1)%plugin_library = "libsimple_c_plugin.so"
/
NML
echo grid >grids/icon_grid_R02B04.nc
cat >finecast.yaml <<'YAML'
fields: [t_2m]
device: cuda
grid: {type: icon, file: icon_grid_R02B04.nc, coarse_level: 0}
sample: {output: finecast_t2m.nc}
checkpoint: {dir: checkpoints}
YAML
# The probe: records its directory, arguments, namelists and the GPU it was bound to.
cat >probe-icon <<'PROBE'
#!/bin/bash
rank="${OMPI_COMM_WORLD_RANK:?not started by mpiexec}"
{
  echo "cwd=$PWD"
  echo "args=$*"
  echo "gpu=${CUDA_VISIBLE_DEVICES:-unset}"
  echo "grid=$(cat icon_grid_R02B04.nc)"
} >"probe-rank-$rank.txt"
cp NAMELIST_atm icon_master.namelist "probe-rank-$rank.nml" 2>/dev/null || cat NAMELIST_atm icon_master.namelist >"probe-rank-$rank.nml"
# A restart chunk fails when fail-on-restart exists (to test that the chain stops).
if [[ -e "$OLDPWD/fail-on-restart" ]] && grep -q 'lrestart = .true.' icon_master.namelist; then exit 3; fi
exit 0
PROBE
chmod +x probe-icon
make_stub_plugin lib cuda   # a CUDA build of the plugin, as far as launch.sh can tell

icon=(--profile icon --run finecast.yaml --param program.executable=./probe-icon
      --param 'program.namelists=[exp/icon_master.namelist, exp/NAMELIST_atm]'
      --param 'program.inputs=[grids/icon_grid_R02B04.nc]' --param program.plugin_library=lib/libfinecast_comin.so
      --param ntasks_per_node=2 --param cpus_per_task=1 --param account=bb1234)

# ---- the dry run: modules, hint, memory, namelists, &comin_nml, srun ----
"$LAUNCH" "${icon[@]}" --param 'modules=[gcc/11.2.0-gcc-11.2.0, openmpi/4.1.2-gcc-11.2.0]' --set seed=5 \
  --dry-run --output icon.sbatch >icon.stdout 2>icon.stderr || fail "icon render failed: $(cat icon.stderr)"
job="$(cat icon.sbatch)"
check_script icon.sbatch "icon"
for line in "#SBATCH --account=bb1234" "#SBATCH --partition=gpu" "#SBATCH --hint=nomultithread" "#SBATCH --mem=0" \
            "#SBATCH --gres=gpu:a100:1" "#SBATCH --time=08:00:00" "#SBATCH --job-name=finecast-icon" \
            "module load gcc/11.2.0-gcc-11.2.0 openmpi/4.1.2-gcc-11.2.0" "export OMP_STACKSIZE=200M" "ulimit -s unlimited" \
            "rundir=$WORK/out/finecast-icon" \
            "# icon_master.namelist: a copy of $WORK/exp/icon_master.namelist" \
            "# NAMELIST_atm: a copy of $WORK/exp/NAMELIST_atm, with finecast as &comin_nml plugin_list(2)" \
            "  plugin_list(1)%name           = \"simple_c\"" \
            "  plugin_list(2)%name           = \"finecast\"" \
            "  plugin_list(2)%plugin_library = \"$WORK/lib/libfinecast_comin.so\"" \
            "  plugin_list(2)%options        = \"$WORK/finecast.yaml device=cuda seed=5\"" \
            "  nproma = 32   ! costs \$\$, don't change" \
            "ln -sfn $WORK/grids/icon_grid_R02B04.nc \"\$rundir\"/icon_grid_R02B04.nc" \
            'cd "$rundir"' \
            "srun --nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --hint=nomultithread --kill-on-bad-exit=1 $SRC/scripts/slurm/bind_gpu.sh $WORK/probe-icon"; do
  assert_contains "$job" "$line" "icon script"
done
assert_not_contains "$job" "checkpoint.resume" "icon script without --chain"
assert_not_contains "$(cat icon.stderr)" "account is empty" "icon: an account was given"
# The module line comes before the program, the srun line after the namelists are written.
module_line="$(grep -n '^module load' icon.sbatch | cut -d: -f1)"
cat_line="$(grep -n '^cat >"$rundir"/NAMELIST_atm' icon.sbatch | cut -d: -f1)"
srun_line="$(grep -n '^srun ' icon.sbatch | cut -d: -f1)"
((module_line < cat_line && cat_line < srun_line)) || fail "icon: order module ($module_line) < namelist ($cat_line) < srun ($srun_line)"

# An existing finecast entry is replaced (its comm kept), not listed twice; a namelist without
# &comin_nml gets one.
cat >exp/NAMELIST_old <<'NML'
&comin_nml
  plugin_list(1)%name = "finecast", plugin_list(1)%plugin_library = "/old/libfinecast_comin.so"
  plugin_list(1)%options = "old.yaml device=cpu"
  plugin_list(1)%comm = "finecast"
  plugin_list(2)%name = "simple_c"
  plugin_list(2)%plugin_library = "libsimple_c_plugin.so"
/
NML
printf '&run_nml\n  num_lev = 90\n/\n' >exp/NAMELIST_plain
for nml in NAMELIST_old NAMELIST_plain; do
  "$LAUNCH" "${icon[@]}" --param "program.namelists=[exp/$nml]" --dry-run >"$nml.out" 2>"$nml.err" ||
    fail "$nml: render failed: $(cat "$nml.err")"
done
old="$(cat NAMELIST_old.out)"
assert_contains "$old" "  plugin_list(1)%options        = \"$WORK/finecast.yaml device=cuda\"" "replaced entry"
assert_contains "$old" '  plugin_list(1)%comm = "finecast"' "replaced entry keeps its comm"
assert_contains "$old" '  plugin_list(2)%name = "simple_c"' "the other plugin stays"
assert_eq "$(grep -c 'plugin_library' <<<"$old")" 2 "finecast listed once, simple_c once"
assert_not_contains "$old" "/old/libfinecast_comin.so" "the old library is gone"
plain="$(cat NAMELIST_plain.out)"
assert_contains "$plain" $'  num_lev = 90\n/\n&comin_nml\n  plugin_list(1)%name           = "finecast"' "a new &comin_nml"

# ---- ICON on GPUs (icon_gpu): ICON on every GPU of its node, the trainer on a GPU of its own in
# a second component of a heterogeneous job; an in-host trainer there is warned about ----
icon_gpu=(--profile icon_gpu "${icon[@]:2}" --param ntasks_per_node=4 --param cpus_per_task=16)
"$LAUNCH" "${icon_gpu[@]}" --dry-run --output icon_gpu.sbatch >/dev/null 2>icon_gpu.err || fail "icon_gpu render failed: $(cat icon_gpu.err)"
check_script icon_gpu.sbatch "icon_gpu"
assert_not_contains "$(cat icon_gpu.err)" "shares its GPU" "icon_gpu: the trainer has a GPU of its own"
assert_eq "$(grep -E '^#SBATCH (--partition|--ntasks|--gres|hetjob)' icon_gpu.sbatch)" "#SBATCH --partition=gpu
#SBATCH --ntasks-per-node=4
#SBATCH --gres=gpu:a100:4
#SBATCH hetjob
#SBATCH --partition=gpu
#SBATCH --ntasks=1
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:a100:1" "icon_gpu: ICON's 4 GPUs, then the trainer's own GPU"
for line in "srun --nodes=1 --ntasks-per-node=4 --cpus-per-task=16 --hint=nomultithread --kill-on-bad-exit=1 $SRC/scripts/slurm/bind_gpu.sh $WORK/probe-icon : --nodes=1 --ntasks=1 " \
            "$SRC/scripts/slurm/bind_gpu.sh env OMP_NUM_THREADS=16 $SRC/build/bin/finecast-trainer --comm finecast --plugin $WORK/lib/libfinecast_comin.so" \
            '  plugin_list(2)%comm = "finecast"' \
            "  plugin_list(2)%options        = \"$WORK/finecast.yaml device=cuda coupling.communicator=plugin train.placement=external train.ranks=1\""; do
  assert_contains "$(cat icon_gpu.sbatch)" "$line" "icon_gpu script"
done
"$LAUNCH" "${icon_gpu[@]}" --param trainers.count=0 --dry-run >icon_inhost.out 2>icon_inhost.err || fail "icon_gpu in-host render failed: $(cat icon_inhost.err)"
assert_contains "$(cat icon_inhost.err)" "launch: warning: gpus.count = 4 for a program that uses the GPUs itself: finecast's in-host trainer (host rank 0) shares its GPU with the program's rank there" "icon_gpu in-host: the shared GPU is warned about"
assert_contains "$(cat icon_inhost.err)" "--set train.max_device_memory=BYTES" "icon_gpu in-host: the memory cap is named"
assert_not_contains "$(cat icon_inhost.out)" "hetjob" "icon_gpu in-host: no trainer component"
assert_not_contains "$(cat icon.stderr)" "shares its GPU" "icon (ICON on CPUs, finecast on GPU 0): no sharing warning"

# ---- refusals: ComIn's 256-character options, which namelist, missing files ----
rejects() {  # rejects WHAT NEEDLE ARGS...
  local what="$1" needle="$2" rc=0
  shift 2
  "$LAUNCH" "$@" >stdout 2>stderr || rc=$?
  assert_eq "$rc" 2 "$what: exit status"
  assert_contains "$(cat stderr)" "$needle" "$what: message"
}
long="$(printf 'x%.0s' {1..240})"
rejects "options too long" "finecast's &comin_nml options would be " "${icon[@]}" --dry-run --set "sample.output=$long.nc"
assert_contains "$(cat stderr)" "but ComIn reads at most 256" "options too long: the limit"
printf '&a_nml\n/\n' >exp/A
printf '&b_nml\n/\n' >exp/B
rejects "which namelist" "program.comin_namelist: say which of program.namelists (exp/A, exp/B)" \
  "${icon[@]}" --dry-run --param 'program.namelists=[exp/A, exp/B]'
rejects "missing namelist" "program.namelists: 'exp/nosuch' does not exist" \
  "${icon[@]}" --dry-run --param 'program.namelists=[exp/nosuch]'
rejects "no executable" "program.executable is empty" --profile icon --run finecast.yaml --dry-run \
  --param 'program.namelists=[exp/NAMELIST_atm]'
rejects "no run" "missing required key 'run': the finecast plugin config" --profile icon --dry-run \
  --param program.executable=./probe-icon --param 'program.namelists=[exp/NAMELIST_atm]'
rejects "unknown program key" "unknown key 'program.namelist' (did you mean 'program.namelists'?)" \
  "${icon[@]}" --dry-run --param 'program.namelist=[exp/A]'
rejects "chain without the restart namelist" "program.restart.namelist 'icon_master.namelist' is not one of program.namelists (NAMELIST_atm): the chunks of --chain 2 could not be restarts" \
  "${icon[@]}" --dry-run --chain 2 --param 'program.namelists=[exp/NAMELIST_atm]'
rejects "task without array" "{task} (in seed={task}) is the array task's id: it needs --array" \
  "${icon[@]}" --dry-run --set 'seed={task}'

# ---- an array, run for real by the fake SLURM: one run directory per task ----
CUDA_VISIBLE_DEVICES=4,5 "$LAUNCH" "${icon[@]}" --array 0-2 --set 'seed={task}' >array.out 2>array.err || fail "array launch failed: $(cat array.err)"
assert_contains "$(cat array.out)" "launch: array 0-2: one log and one output folder per task" "array launch output"
assert_contains "$(cat "$FAKE_SLURM_DIR/calls.log")" "sbatch-option --array=0-2" "array: #SBATCH --array"
for t in 0 1 2; do
  dir="out/finecast-icon/task_$t"
  assert_eq "$(cat "$FAKE_SLURM_DIR/job-1001_$t.rc" 2>/dev/null)" 0 "array task $t: exit status"
  probe="$(cat "$dir/probe-rank-0.txt" 2>/dev/null)" || { fail "array task $t: the program did not run in $dir"; continue; }
  assert_contains "$probe" "cwd=$WORK/$dir" "array task $t: runs in its own folder"
  assert_contains "$probe" "grid=grid" "array task $t: the input is linked"
  assert_contains "$probe" "gpu=4" "array task $t: rank 0 (the trainer) bound to the first GPU"
  assert_contains "$(cat "$dir/probe-rank-1.txt" 2>/dev/null)" "gpu=5" "array task $t: rank 1 bound to the second GPU"
  nml="$(cat "$dir/NAMELIST_atm")"
  assert_contains "$nml" "  plugin_list(2)%options        = \"$WORK/finecast.yaml device=cuda seed=$t\"" "array task $t: its seed"
  assert_contains "$nml" "  nproma = 32   ! costs \$\$, don't change" "array task $t: the namelist is copied verbatim"
  [[ -f "out/slurm/finecast-icon-1001_$t.out" ]] || fail "array task $t: no log out/slurm/finecast-icon-1001_$t.out"
  assert_contains "$(cat "out/slurm/finecast-icon-1001_$t.out" 2>/dev/null)" "finecast: job 1001 (array task $t)" "array task $t: log header"
done
[[ ! -e out/finecast-icon/task_3 ]] || fail "a 4th task ran in a 0-2 array"
# The original namelists are untouched.
assert_not_contains "$(cat exp/NAMELIST_atm)" "finecast" "exp/NAMELIST_atm is not edited in place"

# ---- a chain of 3: afterok dependencies, checkpoint.resume: auto, lrestart from chunk 2 ----
"$LAUNCH" "${icon[@]}" --chain 3 --dry-run --output chain.sbatch >chain.stdout 2>chain.err || fail "chain render failed: $(cat chain.err)"
for k in 1 2 3; do
  [[ -f "chain-chunk$k.sbatch" ]] || { fail "chain: no chain-chunk$k.sbatch"; continue; }
  check_script "chain-chunk$k.sbatch" "chain chunk $k"
  text="$(cat "chain-chunk$k.sbatch")"
  assert_contains "$text" "device=cuda checkpoint.resume=auto\"" "chain chunk $k: resumes automatically"
  if ((k == 1)); then
    assert_contains "$text" "lrestart = .false." "chain chunk 1: starts from initial data"
  else
    assert_contains "$text" "lrestart = .true." "chain chunk $k: an ICON restart"
    assert_not_contains "$text" "lrestart = .false." "chain chunk $k"
    assert_contains "$text" "# Chunk $k of 3: sbatch --dependency=afterok:<job id of chunk $((k - 1))>" "chain chunk $k: its dependency"
  fi
done

# Submitted: each chunk depends on the one before; a failing chunk cancels the rest.
rm -rf out/finecast-icon
touch fail-on-restart
"$LAUNCH" "${icon[@]}" --chain 3 >chain.out 2>chain.err || fail "chain launch failed: $(cat chain.err)"
calls="$(grep '^sbatch ' "$FAKE_SLURM_DIR/calls.log" | tail -3)"
assert_contains "$calls" "sbatch --parsable $WORK/out/slurm/finecast-icon-" "chain: chunk 1 submitted"
assert_contains "$calls" "sbatch --parsable --dependency=afterok:1002 --kill-on-invalid-dep=yes" "chain: chunk 2 after chunk 1"
assert_contains "$calls" "sbatch --parsable --dependency=afterok:1003 --kill-on-invalid-dep=yes" "chain: chunk 3 after chunk 2"
assert_contains "$(cat chain.out)" "launch: submitted job 1004 (starts after job 1003 succeeded)" "chain launch output"
assert_contains "$(cat chain.out)" "scancel 1002 1003 1004" "chain: how to cancel all"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1002.rc")" 0 "chain chunk 1 ran"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1003.rc")" 3 "chain chunk 2 failed (the probe refuses restarts here)"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1004.rc")" cancelled "chain chunk 3 is cancelled after chunk 2 failed"

finish
