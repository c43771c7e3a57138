#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# launch.sh --icon-runscript: finecast put into ICON's own experiment run script
# (tests/slurm/exp.finecast_test.run, built like ICON's exp.NAME.run: namelists in heredocs,
# ${START} ${MODEL}, a restart chain that resubmits the script). The edited script still parses,
# changes nothing of the original but adds marked blocks, is the same after a second call, and
# runs its chain of two chunks under the fake SLURM with finecast in the &comin_nml the model
# reads, resuming (checkpoint.resume=auto), and with no folder of finecast's own libcomin.so.0 on
# LD_LIBRARY_PATH; with external trainers the model's srun also starts finecast-trainer (also
# through ICON's START_MODEL), with the script's QOS, memory, exclusive nodes and srun --mpi.
# Latin-1 bytes, line breaks in --set, namelist heredocs inside if blocks and functions. Probes
# stand in for ICON and finecast-trainer, so nothing needs to be built.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The experiment: ICON's tree with the run script in run/, the "model" in bin/.
mkdir -p icon/run icon/bin probe-bin
sed "s|^basedir=.*|basedir=$WORK/icon|" "$SRC/tests/slurm/exp.finecast_test.run" >icon/run/exp.finecast_test.run
chmod +x icon/run/exp.finecast_test.run
cp -p icon/run/exp.finecast_test.run original.run
# The model: rank 0 records what it was started with and asks for a restart after chunk 1.
cat >icon/bin/icon <<'PROBE'
#!/bin/bash
rank="${OMPI_COMM_WORLD_RANK:?not started by mpiexec}"
if ((rank == 0)); then
  {
    echo "chunk $(grep -o 'lrestart *= *[.a-z]*' icon_master.namelist | tr -s ' ') size=$OMPI_COMM_WORLD_SIZE ld=$LD_LIBRARY_PATH"
    /usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import namelist
f = sys.argv[2]; print("comin", namelist.plugin_entries(open(f).read(), f))' "$SCRIPTS" NAMELIST_finecast_test_atm
  } >>"$PROBE_LOG"
  if grep -q 'lrestart *= *.false.' icon_master.namelist; then echo RESTART >finish.status; else echo OK >finish.status; fi
fi
PROBE
chmod +x icon/bin/icon
printf '#!/bin/bash\necho "trainer rank ${OMPI_COMM_WORLD_RANK} of ${OMPI_COMM_WORLD_SIZE}: $*" >>"$PROBE_LOG"\n' >probe-bin/finecast-trainer
chmod +x probe-bin/finecast-trainer
make_stub_plugin lib cpu
# As in finecast's build folder: finecast's own ComIn host library beside the plugin (ICON must
# never load it: it has none of ComIn's Fortran symbols).
gcc -shared -fPIC -o lib/libcomin.so.0 -Wl,-soname,libcomin.so.0 lib/stub.c
printf 'fields: [ts]\ndevice: cpu\n' >finecast.yaml
export SCRIPTS="$SRC/scripts/slurm" PROBE_LOG="$WORK/probe.log"
LIB="$WORK/lib/libfinecast_comin.so"

launch() {  # launch ARGS...: stdout, stderr in files, the exit status in $rc
  rc=0
  "$LAUNCH" "$@" >stdout 2>stderr || rc=$?
}
script=icon/run/exp.finecast_test.run
runscript=(--icon-runscript "$script" --run finecast.yaml --bin-dir probe-bin --set seed=3)

# ---- in-host trainer (--profile icon, the default) ----
launch "${runscript[@]}"
assert_eq "$rc" 0 "in-host: launch ($(cat stderr))"
assert_eq "$(cat stdout)" "" "in-host: nothing on stdout (edited in place)"
assert_contains "$(cat stderr)" "launch: $WORK/$script: finecast added" "in-host: says what it did"
cmp -s "$script.orig" original.run || fail "in-host: the original is not kept as $script.orig"
[[ -x "$script" ]] || fail "in-host: the run script lost its executable bit"
bash -n "$script" || fail "in-host: bash -n rejects the edited run script"
# Nothing of the original is changed or lost: the diff only adds lines.
assert_eq "$(diff original.run "$script" | grep -c '^<')" 0 "in-host: no line of the original changed"
edited="$(cat "$script")"
for line in "# >>> finecast: ComIn's &comin_nml with the finecast plugin" \
            "cat >> \${atmo_namelist} << 'FINECAST_EOF'
&comin_nml
  plugin_list(1)%name           = \"finecast\"
  plugin_list(1)%plugin_library = \"$LIB\"
  plugin_list(1)%options        = \"$WORK/finecast.yaml device=cuda seed=3 checkpoint.resume=auto\"
/
FINECAST_EOF" \
            "  export LD_LIBRARY_PATH=\"\$finecast_path\" ;;
esac
export OMP_STACKSIZE=\"\${OMP_STACKSIZE:-200M}\"  # unless the script sets it
export OMP_PROC_BIND=\"\${OMP_PROC_BIND:-close}\"  # unless the script sets it
# <<< finecast <<<
\${START} \${MODEL}"; do
  assert_contains "$edited" "$line" "in-host: edited script"
done
assert_not_contains "$edited" "hetjob" "in-host: no trainer component"
assert_not_contains "$edited" "export LD_LIBRARY_PATH=$WORK/lib" "in-host: the folder with finecast's libcomin.so.0 is not put on LD_LIBRARY_PATH"
# The comin block comes after the heredoc that creates the namelist and before the model's start.
create="$(grep -n '^cat > ${atmo_namelist} << EOF' "$script" | cut -d: -f1)"
block="$(grep -n "^cat >> \${atmo_namelist} << 'FINECAST_EOF'" "$script" | cut -d: -f1)"
start="$(grep -n '^${START} ${MODEL}$' "$script" | cut -d: -f1)"
((create < block && block < start)) || fail "in-host: order: create ($create) < comin ($block) < start ($start)"

# Idempotent: a second call changes nothing.
cp "$script" first.run
launch "${runscript[@]}"
assert_eq "$rc" 0 "second call ($(cat stderr))"
cmp -s first.run "$script" || fail "second call changed the script: $(diff first.run "$script")"
assert_contains "$(cat stderr)" "unchanged (finecast was already in it as asked)" "second call: says so"
cmp -s "$script.orig" original.run || fail "second call: the kept original was overwritten"
# Another --set replaces the options of the one entry.
launch "${runscript[@]}" --set seed=4
assert_eq "$(grep -c 'plugin_list(1)%options' "$script")" 1 "a changed --set: still one entry"
assert_contains "$(cat "$script")" "device=cuda seed=4 checkpoint.resume=auto\"" "a changed --set: the new options"
launch "${runscript[@]}" --set device=cpu
# --dry-run prints the result and writes nothing.
cp "$script" before-dry.run
launch "${runscript[@]}" --set seed=9 --set device=cpu --dry-run
assert_contains "$(cat stdout)" "device=cpu seed=9 checkpoint.resume=auto\"" "--dry-run prints the edited script"
cmp -s before-dry.run "$script" || fail "--dry-run changed the script"

# ---- the chain runs: chunk 1 asks for a restart, the script resubmits itself, chunk 2 restarts ----
# The submitting shell has finecast's build folder on LD_LIBRARY_PATH (as launch.sh once put it
# there): the job takes it off, so that ICON loads ComIn's libcomin.so.0, not finecast's.
(cd icon/run && LD_LIBRARY_PATH="$WORK/lib:$WORK/other-lib:$WORK/lib/" sbatch exp.finecast_test.run >/dev/null) ||
  fail "the run script failed under the fake sbatch"
assert_eq "$(grep -c '^sbatch ' "$FAKE_SLURM_DIR/calls.log")" 2 "chain: chunk 1 submitted chunk 2 itself"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1001.rc") $(cat "$FAKE_SLURM_DIR/job-1002.rc")" "0 0" "chain: both chunks ran"
log="$(cat probe.log)"
assert_contains "$log" "chunk lrestart = .false. size=2 ld=$WORK/other-lib"$'\n' "chunk 1: from initial data, without finecast's libcomin folder"
assert_contains "$log" "chunk lrestart = .true. size=2 ld=$WORK/other-lib"$'\n' "chunk 2: a restart, still without it"
while read -r _ _ _ _ ld; do  # no folder on the model's LD_LIBRARY_PATH holds a libcomin.so.0
  IFS=: read -r -a dirs <<<"${ld#ld=}"
  for d in "${dirs[@]}"; do
    [[ ! -e "$d/libcomin.so.0" ]] || fail "the model's LD_LIBRARY_PATH holds $d, with a libcomin.so.0"
  done
done < <(grep '^chunk ' probe.log)
assert_eq "$(grep -c "^comin {1: {'name': 'finecast', 'plugin_library': '$LIB', 'options': '$WORK/finecast.yaml device=cpu seed=3 checkpoint.resume=auto'}}$" probe.log)" 2 \
  "both chunks: the model's namelist has finecast in &comin_nml, resuming from its checkpoints"
[[ ! -e icon/experiments/finecast_test/restart.semaphore ]] || fail "chain: the script's own end (semaphore removed) did not run"

# ---- a script whose namelist heredoc already has a &comin_nml: finecast joins it ----
awk '{ print } /^&parallel_nml$/ && !done { getline; print; getline; print; getline; print
  print "&comin_nml"; print " plugin_list(1)%name = \"simple_c\""
  print " plugin_list(1)%plugin_library = \"${basedir}/build/lib/libsimple_c_plugin.so\""; print "/"; done = 1 }' \
  original.run >icon/run/with_comin.run
launch --icon-runscript icon/run/with_comin.run --run finecast.yaml --bin-dir probe-bin
assert_eq "$rc" 0 "existing &comin_nml ($(cat stderr))"
bash -n icon/run/with_comin.run || fail "existing &comin_nml: bash -n"
assert_eq "$(grep -c '&comin_nml' icon/run/with_comin.run)" 1 "existing &comin_nml: no second group"
assert_contains "$(cat icon/run/with_comin.run)" ' plugin_list(1)%plugin_library = "${basedir}/build/lib/libsimple_c_plugin.so"
  plugin_list(2)%name           = "finecast"' "existing &comin_nml: simple_c kept with its \${basedir}, finecast second"
cp icon/run/with_comin.run first.run
launch --icon-runscript icon/run/with_comin.run --run finecast.yaml --bin-dir probe-bin
cmp -s first.run icon/run/with_comin.run || fail "existing &comin_nml: the second call changed it"

# ---- external trainers (--profile icon_gpu): a heterogeneous job, the trainers started with ICON ----
cp original.run "$script"
rm -rf icon/experiments probe.log "$script.orig"
launch --icon-runscript "$script" --run finecast.yaml --bin-dir probe-bin --profile icon_gpu --set device=cpu \
  --param trainers.kind=cpu --param trainers.partition=compute --param trainers.cores_per_node=128
assert_eq "$rc" 0 "external: launch ($(cat stderr))"
bash -n "$script" || fail "external: bash -n rejects the edited run script"
edited="$(cat "$script")"
assert_contains "$edited" "#SBATCH --time=00:30:00
# >>> finecast: the finecast-trainer processes, a component of their own" "external: after the #SBATCH header"
assert_contains "$edited" "#SBATCH hetjob
#SBATCH --account=bb1234
#SBATCH --partition=compute
#SBATCH --nodes=1
#SBATCH --ntasks=1" "external: the trainer component, with the script's account"
assert_contains "$edited" '${START} ${MODEL} : "${finecast_trainers[@]}"  # finecast: external trainers' "external: the model's start"
assert_contains "$edited" '  plugin_list(1)%comm = "finecast"' "external: finecast's comm"
assert_contains "$edited" "train.placement=external train.ranks=1 checkpoint.resume=auto\"" "external: the options"
assert_eq "$(diff original.run "$script" | grep '^<')" '< ${START} ${MODEL}' "external: only the model's start line changed"
cp "$script" first.run
launch --icon-runscript "$script" --run finecast.yaml --bin-dir probe-bin --profile icon_gpu --set device=cpu \
  --param trainers.kind=cpu --param trainers.partition=compute --param trainers.cores_per_node=128
cmp -s first.run "$script" || fail "external: the second call changed the script: $(diff first.run "$script")"
(cd icon/run && sbatch exp.finecast_test.run >/dev/null) || fail "external: the run script failed under the fake sbatch"
log="$(cat probe.log 2>/dev/null)"
assert_contains "$log" "chunk lrestart = .true. size=3" "external: chunk 2 ran, in one MPI job with the trainer"
assert_eq "$(grep -c "^trainer rank 2 of 3: --comm finecast --plugin $LIB$" probe.log)" 2 "external: finecast-trainer ran in both chunks"
assert_contains "$(grep 'sbatch-option\[1\]' "$FAKE_SLURM_DIR/calls.log")" "sbatch-option[1] --partition=compute" "external: sbatch saw the trainer component"

# A run script that asks for GPUs runs ICON on them: an in-host trainer there is warned about.
sed 's/^#SBATCH --partition=compute$/#SBATCH --partition=gpu\n#SBATCH --gpus-per-node=4/' original.run >gpu.run
launch --icon-runscript gpu.run --run finecast.yaml --bin-dir probe-bin --no-cuda-check
assert_eq "$rc" 0 "GPU run script, in-host trainer ($(cat stderr))"
assert_contains "$(cat stderr)" "launch: warning: gpu.run asks for GPUs (4), so ICON runs on them, and finecast's in-host trainer shares GPU 0 with ICON's rank 0" "GPU run script: the shared GPU is warned about"
launch --icon-runscript original.run --run finecast.yaml --bin-dir probe-bin --no-cuda-check --dry-run
assert_not_contains "$(cat stderr)" "asks for GPUs" "CPU run script: no GPU warning"
# The CUDA check: device cuda with a CPU-only build is named (a warning: nothing is submitted here).
launch --icon-runscript original.run --run finecast.yaml --bin-dir probe-bin --dry-run
assert_contains "$(cat stderr)" "is a CPU-only build" "run script: the CUDA check"

# ---- ICON's START_MODEL (make_target_runscript's scripts), with the header's QOS, memory,
# exclusive nodes and START's srun --mpi: the trainers' component takes them too ----
sed -e 's/^${START} ${MODEL}$/START_MODEL="${START_MODEL:=$START $MODEL}"\n${START_MODEL} || exit 1/' \
  -e 's/^#SBATCH --time=00:30:00$/&\n#SBATCH --qos=normal\n#SBATCH --mem=120G\n#SBATCH --exclusive/' \
  -e 's/^export START="srun /&--mpi=pmix /' original.run >start_model.run
cp start_model.run "$script"
rm -rf icon/experiments probe.log "$script.orig" "$FAKE_SLURM_DIR"
external=(--profile icon_gpu --set device=cpu --param trainers.kind=cpu --param trainers.partition=compute
          --param trainers.cores_per_node=128)
launch --icon-runscript "$script" --run finecast.yaml --bin-dir probe-bin "${external[@]}"
assert_eq "$rc" 0 "START_MODEL: launch ($(cat stderr))"
bash -n "$script" || fail "START_MODEL: bash -n rejects the edited run script"
assert_eq "$(diff start_model.run "$script" | grep -c '^<')" 0 "START_MODEL: no line of the original changed (|| exit 1 kept)"
edited="$(cat "$script")"
assert_contains "$edited" ' START_MODEL="${START_MODEL:-$START $MODEL} : ${finecast_trainers[*]}" ;; esac
# <<< finecast <<<
${START_MODEL} || exit 1' "START_MODEL: the trainers appended to it, just before the model's start"
trainer_block="$(sed -n '/^# >>> finecast: the finecast-trainer processes/,/^# <<< finecast <<</p' "$script")"
assert_contains "$trainer_block" "#SBATCH --time=00:30:00
#SBATCH --qos=normal
#SBATCH --mem=120G
#SBATCH --exclusive
# <<< finecast <<<" "the trainers' component: the script's QOS, memory and exclusive nodes"
assert_contains "$edited" "finecast_trainers=(--mpi=pmix --nodes=1 --ntasks=1" "the trainers' srun part: the script's --mpi"
assert_contains "$(cat stderr)" "the trainers' component takes the model's --qos=normal, --mem=120G, --exclusive, srun --mpi=pmix" \
  "the trainers' settings from the script are named"
(cd icon/run && sbatch exp.finecast_test.run >/dev/null) || fail "START_MODEL: the run script failed under the fake sbatch"
assert_eq "$(cat "$FAKE_SLURM_DIR/job-1001.rc" 2>/dev/null) $(cat "$FAKE_SLURM_DIR/job-1002.rc" 2>/dev/null)" "0 0" "START_MODEL: both chunks ran"
assert_eq "$(grep -c "^trainer rank 2 of 3: --comm finecast --plugin $LIB$" probe.log)" 2 "START_MODEL: finecast-trainer ran with ICON in both chunks"
calls="$(cat "$FAKE_SLURM_DIR/calls.log")"
assert_contains "$calls" "sbatch-option[1] --qos=normal" "START_MODEL: sbatch saw the trainers' QOS"
assert_contains "$calls" "sbatch-option[1] --mem=120G" "START_MODEL: sbatch saw the trainers' memory"
assert_contains "$calls" "--mpi=pmix --kill-on-bad-exit=1 --nodes=1 --ntasks-per-node=2 $WORK/icon/bin/icon : --mpi=pmix --nodes=1 --ntasks=1" \
  "START_MODEL: one srun, the model's part and the trainers', each with --mpi"
# The profile's own trainers.mem wins over the script's; --mem-per-cpu is taken as --mem is.
launch --icon-runscript start_model.run --run finecast.yaml --bin-dir probe-bin "${external[@]}" --param trainers.mem=64G --dry-run
trainer_block="$(sed -n '/^# >>> finecast: the finecast-trainer processes/,/^# <<< finecast <<</p' stdout)"
assert_contains "$trainer_block" "#SBATCH --mem=64G" "trainers.mem: the trainers' own memory"
assert_not_contains "$trainer_block" "--mem=120G" "trainers.mem: not the model's as well"
sed 's/^#SBATCH --mem=120G$/#SBATCH --mem-per-cpu=1920M/' start_model.run >mem_per_cpu.run
launch --icon-runscript mem_per_cpu.run --run finecast.yaml --bin-dir probe-bin "${external[@]}" --dry-run
assert_contains "$(sed -n '/^# >>> finecast: the finecast-trainer/,/^# <<< finecast/p' stdout)" "#SBATCH --mem-per-cpu=1920M" \
  "the trainers' component: the script's --mem-per-cpu"
# In-host trainer: finecast's environment goes before ${START_MODEL}.
launch --icon-runscript start_model.run --run finecast.yaml --bin-dir probe-bin --set device=cpu --dry-run
assert_contains "$(cat stdout)" "# <<< finecast <<<
\${START_MODEL} || exit 1" "START_MODEL, in-host: the environment before the model's start"

# ---- checkpoint.resume: auto unless the launch or the config says otherwise ----
launch --icon-runscript original.run --run finecast.yaml --bin-dir probe-bin --set device=cpu --set checkpoint.resume= --dry-run
assert_contains "$(cat stdout)" "device=cpu checkpoint.resume=\"" "--set checkpoint.resume= (empty): a fresh start, as asked"
launch --icon-runscript original.run --run finecast.yaml --bin-dir probe-bin --set device=cpu --resume ckpt-before --dry-run
assert_contains "$(cat stdout)" "device=cpu checkpoint.resume=$WORK/ckpt-before\"" "--resume DIR: from DIR"
printf 'fields: [ts]\ndevice: cpu\ncheckpoint: {resume: %s/ckpt-old}\n' "$WORK" >resume_config.yaml
launch --icon-runscript original.run --run resume_config.yaml --bin-dir probe-bin --set device=cpu --dry-run
assert_contains "$(cat stdout)" "resume_config.yaml device=cpu\"" "the config's own checkpoint.resume is kept"

# ---- an old script with a Latin-1 byte: edited, every original byte kept ----
{ head -3 original.run; printf '# Gr\xfc\xdfe aus M\xfcnchen: a Latin-1 comment\n'; tail -n +4 original.run; } >latin1.run
cp latin1.run latin1-original.run
launch --icon-runscript latin1.run --run finecast.yaml --bin-dir probe-bin --set device=cpu
assert_eq "$rc" 0 "Latin-1: launch ($(cat stderr))"
assert_not_contains "$(cat stderr)" "Traceback" "Latin-1: no traceback"
cmp -s latin1.run.orig latin1-original.run || fail "Latin-1: the kept original differs from the script"
assert_eq "$(diff latin1-original.run latin1.run | grep -c '^<')" 0 "Latin-1: no line (byte) of the original changed"
assert_eq "$(LC_ALL=C grep -c $'M\xfcnchen' latin1.run)" 1 "Latin-1: the comment's bytes are as they were"
launch --icon-runscript latin1.run --run finecast.yaml --bin-dir probe-bin --set device=cpu --dry-run
cmp -s stdout latin1.run || fail "Latin-1: --dry-run does not print the script byte for byte"

# ---- every failure is a launch: error line, never a traceback ----
launch --icon-runscript original.run --run finecast.yaml --bin-dir probe-bin --set device=cpu --output "$WORK/no/such/dir/x.run"
assert_eq "$rc" 2 "unwritable --output: exit status"
assert_not_contains "$(cat stderr)" "Traceback" "unwritable --output: no traceback"
assert_eq "$(grep -c '^launch: error: ' stderr)" 1 "unwritable --output: one error line ($(cat stderr))"
assert_contains "$(cat stderr)" "launch: error: No such file or directory: $WORK/no/such/dir/x.run" "unwritable --output: names the path"

# ---- where finecast's &comin_nml goes when the namelist's heredocs are inside blocks ----
# The namelist is a copy of a base file; the only heredoc that writes it is the conditional output
# group, off here: finecast's heredoc goes after that if block, so the model reads it all the same.
sed -e 's/^cat > ${atmo_namelist} << EOF$/cat > ${atmo_namelist}.base << EOF/' \
  -e 's/^# (3) the output, one group per file kind$/cp ${atmo_namelist}.base ${atmo_namelist}\n&/' \
  -e 's/^output_atm_2d=yes$/output_atm_2d=no/' original.run >"$script"
rm -rf icon/experiments probe.log "$script.orig" "$FAKE_SLURM_DIR"
launch --icon-runscript "$script" --run finecast.yaml --bin-dir probe-bin --set device=cpu
assert_eq "$rc" 0 "conditional heredoc: launch ($(cat stderr))"
fi_line="$(grep -n '^fi$' "$script" | head -1 | cut -d: -f1)"
block="$(grep -n "^cat >> \${atmo_namelist} << 'FINECAST_EOF'" "$script" | cut -d: -f1)"
((block == fi_line + 2)) || fail "conditional heredoc: finecast's heredoc (line $block) does not follow the if block (fi at $fi_line)"
assert_contains "$(cat stderr)" "after line $fi_line, the end of the 'if' block of lines" "conditional heredoc: says where and why"
(cd icon/run && sbatch exp.finecast_test.run >/dev/null) || fail "conditional heredoc: the run script failed under the fake sbatch"
assert_eq "$(grep -c "^comin {1: {'name': 'finecast'" probe.log 2>/dev/null)" 2 "conditional heredoc: the model reads finecast's entry in both chunks"
# The namelist written only by a shell function: when it runs is unknown, so launch.sh refuses.
sed -e '/^if \[\[ "$output_atm_2d" == "yes" \]\]; then$/,/^fi$/d' \
  -e 's/^cat > ${atmo_namelist} << EOF$/write_atmosphere_namelist() {\n&/' original.run |
  awk '{ print } /^write_atmosphere_namelist\(\) \{$/ { inside = 1 } inside && /^EOF$/ { print "}"; print "write_atmosphere_namelist"; inside = 0 }' >function.run
bash -n function.run || fail "the test's function.run does not parse"
cp function.run function-original.run
launch --icon-runscript function.run --run finecast.yaml --bin-dir probe-bin --set device=cpu
assert_eq "$rc" 2 "namelist in a function: refused"
assert_contains "$(cat stderr)" "is inside a shell function" "namelist in a function: says why"
assert_contains "$(cat stderr)" "add an empty &comin_nml group" "namelist in a function: says how to fix it"
cmp -s function.run function-original.run || fail "namelist in a function: the script was changed"
# With the fix the message gives, finecast joins that group.
sed 's/^&parallel_nml$/\&comin_nml\n\/\n&/' function-original.run >function.run
launch --icon-runscript function.run --run finecast.yaml --bin-dir probe-bin --set device=cpu
assert_eq "$rc" 0 "namelist in a function with an empty &comin_nml: launch ($(cat stderr))"
assert_contains "$(cat function.run)" '&comin_nml
  plugin_list(1)%name           = "finecast"' "namelist in a function with an empty &comin_nml: finecast in it"

# ---- a plugin that finds its libraries only through the folder with finecast's libcomin.so.0 ----
mkdir -p norunpath
cp lib/libfinecast_trainer.so.0 lib/libcomin.so.0 norunpath/
gcc -shared -fPIC -o norunpath/libfinecast_comin.so lib/stub.c -Lnorunpath -Wl,--no-as-needed -l:libfinecast_trainer.so.0
launch --icon-runscript original.run --run finecast.yaml --bin-dir probe-bin --set device=cpu --dry-run \
  --param program.plugin_library=norunpath/libfinecast_comin.so
assert_eq "$rc" 2 "no RUNPATH: refused"
assert_contains "$(cat stderr)" "libfinecast_comin.so finds libfinecast_trainer.so.0 only through LD_LIBRARY_PATH=$WORK/norunpath" \
  "no RUNPATH: names the library and the folder"

# ---- the grid: grid.file resolved as the model sees it (from the run directory the script
# changes to), checked with the build's finecast-grid ----
if [[ -x "$BIN/bin/finecast-grid" ]]; then
  mkdir -p grid-bin icon/grids
  ln -sf "$BIN/bin/finecast-grid" grid-bin/finecast-grid
  # ICON's grid, a limited area cut from R2B4, where exec.iconrun links grids from: ${basedir}/grids.
  "$BIN/bin/finecast-grid" --write-icon-grid icon/grids/icon_grid_0013_R02B04_G.nc --level 4 \
    --region 25,60,-20,35 --boundary-depth 6 --coarse-level 2 >/dev/null || fail "grid: finecast-grid could not write the grid"
  printf 'fields: [ts]\ndevice: cpu\ngrid: {file: icon_grid_0013_R02B04_G.nc, coarse_level: 2}\n' >lam.yaml
  cp original.run grid.run
  launch --icon-runscript grid.run --run lam.yaml --bin-dir grid-bin  # (edits in place: its notes on stderr)
  assert_eq "$rc" 0 "grid: a usable limited area ($(cat stderr))"
  assert_contains "$(cat stderr)" "grid.file icon_grid_0013_R02B04_G.nc (linked into the run directory from \${HGRIDDIR} = $WORK/icon/grids (exec.iconrun)) checked with finecast-grid: fine level: R2B4, coarse level: R2B2 (limited area)" \
    "grid: found where the script links grids from, and checked"
  assert_contains "$(cat stderr)" "limited area: " "grid: the check's summary names what is left out"
  # R2B0 cells are larger than the domain: none is left inside it, so finecast cannot use it.
  launch --icon-runscript grid.run --run lam.yaml --bin-dir grid-bin --set grid.coarse_level=0 --dry-run
  assert_eq "$rc" 2 "grid: no coarse cell inside the domain: refused"
  assert_contains "$(cat stderr)" "finecast cannot use grid.file icon_grid_0013_R02B04_G.nc ($WORK/icon/grids/icon_grid_0013_R02B04_G.nc)" \
    "grid: the refusal names the file"
  assert_contains "$(cat stderr)" "choose a finer coarse level" "grid: and finecast-grid's reason"
  # A file of that name already in the experiment directory (${basedir}/experiments/${EXPNAME},
  # where the script cd's) is the one the model reads: a damaged one is refused.
  mkdir -p icon/experiments/finecast_test
  echo "not a grid" >icon/experiments/finecast_test/icon_grid_0013_R02B04_G.nc
  launch --icon-runscript grid.run --run lam.yaml --bin-dir grid-bin --dry-run
  assert_eq "$rc" 2 "grid: a damaged file in the run directory: refused"
  assert_contains "$(cat stderr)" "finecast cannot read grid.file icon_grid_0013_R02B04_G.nc ($WORK/icon/experiments/finecast_test/icon_grid_0013_R02B04_G.nc)" \
    "grid: resolved in the run directory the script changes to"
  rm -r icon/experiments
  # A grid.file that is not ICON's grid is warned about; one that is nowhere is not checked.
  "$BIN/bin/finecast-grid" --write-icon-grid icon/grids/other.nc --level 2 >/dev/null
  launch --icon-runscript grid.run --run lam.yaml --bin-dir grid-bin --set grid.file=other.nc --set grid.coarse_level=0
  assert_eq "$rc" 0 "grid: another grid ($(cat stderr))"
  assert_contains "$(cat stderr)" "grid.file other.nc is not the grid ICON runs on (&grid_nml dynamics_grid_filename icon_grid_0013_R02B04_G.nc)" \
    "grid: not ICON's grid"
  launch --icon-runscript grid.run --run lam.yaml --bin-dir grid-bin --set grid.file=missing.nc --dry-run
  assert_eq "$rc" 0 "grid: a grid that is nowhere yet: a warning"
  assert_contains "$(cat stderr)" "grid.file missing.nc: not in the run directory $WORK/icon/experiments/finecast_test (line " \
    "grid: says where it looked"
  rm -rf icon/grids grid.run
else
  echo "skipping the grid checks: $BIN/bin/finecast-grid is not built"
fi

# ---- refusals ----
rejects() {  # rejects WHAT NEEDLE ARGS...
  local what="$1" needle="$2"
  shift 2
  launch "$@"
  assert_eq "$rc" 2 "$what: exit status"
  assert_contains "$(cat stderr)" "$needle" "$what: message"
}
grep -v '&run_nml' original.run | sed 's/model_namelist_filename=.*/model_namelist_filename="other"/' >no_atm.run
rejects "no atmosphere namelist" "no_atm.run: no heredoc writes ICON's atmosphere namelist" \
  --icon-runscript no_atm.run --run finecast.yaml --bin-dir probe-bin
sed 's/^${START} ${MODEL}$/srun ${MODEL}/' original.run >no_start.run
rejects "external without \${START} \${MODEL}" "no_start.run: no line '\${START} \${MODEL}' or '\${START_MODEL}' starts the model" \
  --icon-runscript no_start.run --run finecast.yaml --bin-dir probe-bin --profile icon_gpu --set device=cpu \
  --param trainers.kind=cpu --param trainers.partition=compute --param trainers.cores_per_node=128
rejects "a line break in --set" "set.seed: the value '3\\nx' holds a line break" \
  --icon-runscript original.run --run finecast.yaml --bin-dir probe-bin --set $'seed=3\nx'
rejects "--chain" "--chain with --icon-runscript: the run script chains itself" \
  --icon-runscript original.run --run finecast.yaml --chain 2
rejects "no --run" "missing --run: the finecast plugin config" --icon-runscript original.run
ln -sf /dev/zero zero.run
rejects "a run script linked to /dev/zero" "--icon-runscript zero.run: not a regular file (a character device)" \
  --icon-runscript zero.run --run finecast.yaml --bin-dir probe-bin
cmp -s original.run "$SRC/tests/slurm/exp.finecast_test.run" || true  # (the copy has the test's basedir)
[[ ! -e original.run.orig && ! -e no_start.run.orig ]] || fail "a refused call wrote a backup"

finish
