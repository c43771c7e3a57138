#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# What launch.sh checks before a job leaves: the GPUs it asks for come from the plugin config
# (gpus.count: auto), a GPU job needs a CUDA build of the plugin it loads (a CPU-only build is
# refused with how to build the CUDA one), an empty account and unknown modules are warned
# about. Stub libraries stand in for CUDA and CPU-only builds; no SLURM, GPU or module system.
# shellcheck disable=SC1091,SC2016  # lib.sh is found at run time; some $ are literal
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mkdir -p probe-bin
printf '#!/bin/bash\necho "probe ran on GPU ${CUDA_VISIBLE_DEVICES:-none}"\n' >probe-bin/finecast-host
chmod +x probe-bin/finecast-host
make_stub_plugin cuda-build/lib cuda
make_stub_plugin cpu-build/lib cpu
write_run() {  # write_run FILE LIBRARY: a run file loading the plugin LIBRARY with plugin.yaml
  printf 'steps: 4\nplugins:\n  - {name: finecast, library: %s, options: plugin.yaml}\n' "$2" >"$1"
}
write_run cuda-run.yaml cuda-build/lib/libfinecast_comin.so
write_run cpu-run.yaml cpu-build/lib/libfinecast_comin.so
printf 'fields: [ts]\ndevice: cuda\n' >plugin.yaml

# launch ARGS...: launch.sh with the output in stdout/stderr files and its exit status in $rc.
launch() {
  rc=0
  "$LAUNCH" "$@" >stdout 2>stderr || rc=$?
}
gpu=(--profile gpu --bin-dir probe-bin --param account=bb1234)

# ---- the GPUs requested: what the plugin config uses ----
launch "${gpu[@]}" --run cuda-run.yaml --dry-run
assert_eq "$rc" 0 "cuda build, device cuda: dry run"
assert_contains "$(cat stdout)" "#SBATCH --gres=gpu:a100:1" "device cuda: gpus.count auto = 1 (the trainer's)"
assert_not_contains "$(cat stdout)" "gpu:a100:4" "device cuda: not the node's 4"
assert_eq "$(cat stderr)" "" "cuda build, account given: no warning"
launch "${gpu[@]}" --run cuda-run.yaml --dry-run --param gpus.count=3
assert_contains "$(cat stdout)" "#SBATCH --gres=gpu:a100:3" "gpus.count=3 is requested as given"
assert_contains "$(cat stderr)" "gpus.count = 3, but finecast trains on 1 GPU(s) of a node (one per trainer rank there, train.ranks); 2 would sit idle" "gpus.count=3: idle warning"
# A trainer group: one GPU per trainer rank on the node (1 node of 4 ranks in the gpu profile).
launch "${gpu[@]}" --run cuda-run.yaml --dry-run --set train.ranks=4
assert_eq "$rc" 0 "train.ranks 4: dry run"
assert_contains "$(cat stdout)" "#SBATCH --gres=gpu:a100:4" "train.ranks 4 on one node: 4 GPUs"
launch "${gpu[@]}" --run cuda-run.yaml --dry-run --set train.ranks=2 --param nodes=2
assert_contains "$(cat stdout)" "#SBATCH --gres=gpu:a100:1" "train.ranks 2 spread over 2 nodes: 1 GPU per node"
launch "${gpu[@]}" --run cuda-run.yaml --dry-run --set train.ranks=2 --set train.placement=packed --param nodes=2
assert_contains "$(cat stdout)" "#SBATCH --gres=gpu:a100:2" "train.ranks 2 packed: both on the first node"
printf 'fields: [ts]\ndevice: cpu\n' >plugin.yaml
launch "${gpu[@]}" --run cuda-run.yaml --dry-run --param 'set={}'  # the profile's set.device: cuda gone
assert_eq "$rc" 2 "device cpu in the plugin config on a gpu profile: refused"
assert_contains "$(cat stderr)" "a gpu profile needs gpus.count >= 1 (e.g. gpus: {type: a100, count: auto}); device = cpu ($WORK/plugin.yaml) uses no GPU: use --profile cpu, or --set device=cuda" "device cpu: message names the config"
launch "${gpu[@]}" --run cuda-run.yaml --dry-run --set device=cuda:1
assert_eq "$rc" 2 "device cuda:1: refused"
assert_contains "$(cat stderr)" "set.device = cuda:1: every rank of a GPU job sees exactly one GPU" "device cuda:1: message"
printf 'fields: [ts]\ndevice: auto\n' >plugin.yaml
launch "${gpu[@]}" --run cuda-run.yaml --dry-run
assert_contains "$(cat stdout)" "#SBATCH --gres=gpu:a100:1" "device auto: one GPU"
launch --profile cpu --bin-dir probe-bin --run cuda-run.yaml --dry-run --set device=cuda
assert_eq "$rc" 2 "device cuda on a cpu profile: refused"
assert_contains "$(cat stderr)" "set.device = cuda on a cpu profile, where no GPU exists" "cpu profile: message"
assert_not_contains "$(cat stdout)" "--gres" "cpu profile: no GPUs"

# ---- a GPU job needs a CUDA build: a CPU-only one is refused at submission ----
printf 'fields: [ts]\ndevice: cuda\n' >plugin.yaml
launch "${gpu[@]}" --run cpu-run.yaml
assert_eq "$rc" 2 "cpu-only build: submission refused"
assert_eq "$(cat stdout)" "" "cpu-only build: nothing submitted"
for needle in "this is a GPU job, but the finecast plugin it loads ($WORK/cpu-run.yaml: plugins[0]) is a CPU-only build" \
              "libfinecast_comin.so loads libc10.so ($WORK/cpu-build/lib/libc10.so)" "and no libtorch_cuda/libc10_cuda" \
              "scripts/build_cuda.sh --torch /path/to/libtorch" "docs/cuda.md"; do
  assert_contains "$(cat stderr)" "$needle" "cpu-only build: message"
done
[[ ! -e "$FAKE_SLURM_DIR/calls.log" ]] || fail "a CPU-only build reached sbatch: $(cat "$FAKE_SLURM_DIR/calls.log")"
launch "${gpu[@]}" --run cpu-run.yaml --dry-run
assert_eq "$rc" 0 "cpu-only build, dry run: shown"
assert_contains "$(cat stderr)" "launch: warning: this is a GPU job, but the finecast plugin it loads" "cpu-only build, dry run: warned"
assert_contains "$(cat stderr)" "(sbatch would be refused; this is a dry run)" "cpu-only build, dry run: says what submission does"
launch "${gpu[@]}" --run cpu-run.yaml --set device=cpu
assert_eq "$rc" 2 "cpu-only build, device cpu on a gpu profile: no GPU to request"
launch "${gpu[@]}" --run cpu-run.yaml --no-cuda-check
assert_eq "$rc" 0 "--no-cuda-check: submitted"
assert_contains "$(cat stdout)" "launch: submitted job 1001" "--no-cuda-check: job id"
launch "${gpu[@]}" --run cuda-run.yaml
assert_eq "$rc" 0 "cuda build: submitted"
assert_contains "$(cat stdout)" "launch: submitted job 1002" "cuda build: job id"
write_run none-run.yaml nobuild/lib/libfinecast_comin.so
launch "${gpu[@]}" --run none-run.yaml
assert_eq "$rc" 2 "no build at all: refused"
assert_contains "$(cat stderr)" "is not built: $WORK/nobuild/lib/libfinecast_comin.so does not exist" "no build: message"

# When ldd cannot follow LibTorch here, the build folder tells: finecast-build.txt, CMakeCache.txt.
make_stub_plugin lost/lib cuda
rm lost/lib/libc10_cuda.so   # "not found" for ldd, but named: a CUDA build whose CUDA libs are elsewhere
write_run lost-run.yaml lost/lib/libfinecast_comin.so
launch "${gpu[@]}" --run lost-run.yaml
assert_eq "$rc" 0 "CUDA libraries not found on this node: still a CUDA build"
assert_not_contains "$(cat stderr)" "CPU-only" "CUDA libraries not found on this node"
make_stub_plugin lost2/lib cpu
rm lost2/lib/libfinecast_trainer.so.0   # ldd cannot follow the plugin to LibTorch
write_run lost2-run.yaml lost2/lib/libfinecast_comin.so
launch "${gpu[@]}" --run lost2-run.yaml --dry-run
assert_contains "$(cat stderr)" "could not tell whether $WORK/lost2/lib/libfinecast_comin.so has CUDA" "unresolved, no build info: unknown"
echo "C10_CUDA_LIBRARY:FILEPATH=/opt/libtorch/lib/libc10_cuda.so" >lost2/CMakeCache.txt
launch "${gpu[@]}" --run lost2-run.yaml
assert_eq "$rc" 0 "CMakeCache with C10_CUDA_LIBRARY: a CUDA build"
echo "Torch_DIR:PATH=/usr/lib/x86_64-linux-gnu/cmake/Torch" >lost2/CMakeCache.txt
launch "${gpu[@]}" --run lost2-run.yaml
assert_eq "$rc" 2 "CMakeCache with a CPU LibTorch: refused"
assert_contains "$(cat stderr)" "has no c10_cuda (C10_CUDA_LIBRARY unset)" "CMakeCache CPU: evidence"
printf 'torch=2.7.0+cu126\ncuda=12.6\n' >lost2/finecast-build.txt
launch "${gpu[@]}" --run lost2-run.yaml
assert_eq "$rc" 0 "finecast-build.txt (scripts/build_cuda.sh) says cuda: submitted"

# ---- warnings: an empty account, modules ----
launch --profile cpu --bin-dir probe-bin --run cuda-run.yaml --set device=cpu --dry-run
assert_contains "$(cat stderr)" "launch: warning: account is empty: sbatch charges the job to your default account" "empty account warned"
assert_contains "$(cat stderr)" "Fix: --param account=PROJECT" "empty account: the fix"
# A site's 'module' that knows two modules.
cat >modules-init.sh <<'SH'
module() {
  [[ "$1" == is-avail ]] || return 1
  [[ "$2" == gcc/11.2.0 || "$2" == openmpi/4.1.2 ]]
}
SH
FINECAST_MODULE_INIT="$WORK/modules-init.sh" launch --profile cpu --bin-dir probe-bin --run cuda-run.yaml \
  --set device=cpu --param account=bb1234 --param 'modules=[gcc/11.2.0, openmpi/4.1.2, nvhpc/99.9]' --dry-run
assert_eq "$rc" 0 "modules: a warning, not an error"
assert_contains "$(cat stderr)" "module 'nvhpc/99.9' not found ('module is-avail nvhpc/99.9' fails here)" "unknown module warned"
assert_not_contains "$(cat stderr)" "'gcc/11.2.0' not found" "a known module is not warned about"
assert_contains "$(cat stdout)" "module load gcc/11.2.0 openmpi/4.1.2 nvhpc/99.9" "the modules are still loaded in the job"
: >no-module.sh  # a machine without the module command
FINECAST_MODULE_INIT="$WORK/no-module.sh" launch --profile cpu --bin-dir probe-bin --run cuda-run.yaml \
  --set device=cpu --param account=bb1234 --param 'modules=[gcc/11.2.0]' --dry-run
assert_contains "$(cat stderr)" "the 'module' command is not available here, so the modules the job loads (gcc/11.2.0) cannot be checked" "no module command warned"
FINECAST_MODULE_INIT="$WORK/no-module.sh" launch --profile cpu --bin-dir probe-bin --run cuda-run.yaml \
  --set device=cpu --param account=bb1234 --dry-run
assert_eq "$(cat stderr)" "" "no modules, an account: no warnings"

# ---- the build's finecast-config checks the plugin config before the job waits in the queue ----
if [[ -x "$BIN/bin/finecast-config" ]]; then
  printf 'fields: [ts]\ndevice: cuda\ntrain: {epochs: many}\n' >plugin.yaml
  launch "${gpu[@]}" --bin-dir "$BIN/bin" --run cuda-run.yaml --dry-run
  assert_eq "$rc" 2 "invalid plugin config: refused"
  assert_contains "$(cat stderr)" "the plugin config is invalid (checked with" "invalid plugin config: says so"
  assert_contains "$(cat stderr)" "plugin.yaml:3" "invalid plugin config: finecast-config's file:line"
else
  echo "note: $BIN/bin/finecast-config not built; the plugin-config check is not exercised"
fi

finish
