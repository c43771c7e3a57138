#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# kill -9 and resume, as a batch system's time limit or a node failure does it: runs finecast-host
# with the plugin (asynchronous training, sampling with write-back, a checkpoint every 4 coupling
# steps) --runs times, kills every rank with SIGKILL at a random moment (seeded: the same --seed
# gives the same moments), and restarts as an ICON chain does: the host restarts at the model time
# of the newest valid checkpoint (restart_run, as from a restart file written there; from the
# experiment's start while there is none) and finecast follows it (checkpoint.resume: auto), all
# runs continuing one output. After every kill it checks:
#   1. no checkpoint ckpt_*.h5 or buffer snapshot buffer_*.h5 is corrupt: each is read whole
#      with HDF5, which verifies the Fletcher-32 checksum of every chunk, and a checkpoint must
#      carry the format attributes and groups of trainer::verify_checkpoint; the next run, which
#      resumes through trainer::newest_valid_checkpoint, must skip none;
#   2. the outputs (out.nc, and out_<time>.nc where a run could not continue it) open and hold
#      every record the run reported written ("Sampled ... at T": a record is synced to disk before
#      that line is printed), and together no sampling is missing: from the first record to the
#      last, one every sample.every coupling steps (a checkpoint written before its step's
#      sampling once lost that sampling for good);
#   3. at most one checkpoint interval is lost: the newest valid checkpoint is at least the last
#      one the run reported written, its buffer snapshot is beside it, and the run had completed
#      at most checkpoint.every coupling steps after it (or after its start, when it wrote none
#      yet and had completed fewer steps than needed to write one).
#   scripts/kill_resume.sh [--runs 20] [--seed 12] [--ranks 2] [--dir out/kill_resume] [--build build]
#                          [--max-delay 5000] (ms after the start; longer on a loaded machine, whose
#                          start-up alone can take that long)
# Exit status: 0 when every check passed; 1 otherwise. A table of the runs goes to DIR/result.txt.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs=20 seed=12 ranks=2 dir="$here/out/kill_resume" build="$here/build" max_delay=5000
while (($#)); do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --max-delay) max_delay="$2"; shift 2 ;;
    *) echo "kill_resume.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build="$(cd "$build" 2>/dev/null && pwd || echo "$build")"  # the runs start in $dir
host="$build/bin/finecast-host" plugin="$build/lib/libfinecast_comin.so"
if [ ! -x "$host" ] || [ ! -f "$plugin" ]; then
  echo "kill_resume.sh: build finecast first ($host, $plugin)" >&2
  exit 1
fi
python=/usr/bin/python3  # Debian's, with h5py and netCDF4
"$python" -c 'import h5py, netCDF4' 2>/dev/null || { echo "kill_resume.sh: $python needs h5py and netCDF4 (scripts/setup.sh)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

every=4 steps=32 dt=1800 sample_every=2
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
grid=/usr/share/ncarg/data/nug/triangular_grid_ICON.nc
cat >plugin.yaml <<EOF
fields: [ts]
seed: 3
device: cpu
grid: {type: icon, file: $grid, coarse_level: 0}
buffer: {capacity: 8}
model: {hidden: 32, depth: 1, time_embedding: 8, diffusion_steps: 5}
train: {async: true, every: 4, min_steps: 4, epochs: 2, batch_size: 80, warmup_steps: 1, threads: 1}
sample: {every: $sample_every, members: 2, steps: 2, output: out.nc, write_back: ts_finecast}
checkpoint: {dir: ckpt, every: $every, keep: 2, resume: auto}
EOF
# The host's run file, starting at $1 (a restart when later than the experiment's start).
host_run_file() {
  local restart=false
  [ "$1" = 1979-01-01T00:00:00 ] || restart=true
  cat >host.yaml <<EOF
grid: $grid
orography: /usr/share/ferret-vis/data/etopo20.cdf
orography_variable: ROSE
experiment_start: 1979-01-01T00:00:00
start: $1
restart_run: $restart
dt: $dt
steps: $steps
nproma: 24
nlev: 2
progress_every: 1
step_seconds: 0.1
plugins:
  - {name: finecast, library: $plugin, options: plugin.yaml}
EOF
}

# The checks of one killed run (see above). Prints one line: "ok ..." or "FAIL: ...".
cat >check.py <<'EOF'
import datetime, glob, os, re, sys
import h5py, netCDF4

log_path, every, resumed = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "resumed"
interval = float(sys.argv[4])  # seconds between two samplings
log = open(log_path, errors="replace").read().splitlines()
problems = []

def read_all(f):
    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.size:
            obj[()]  # HDF5 verifies the Fletcher-32 checksum of every chunk read
    f.visititems(visit)

valid, times = [], {}
for path in sorted(glob.glob("ckpt/ckpt_*.h5")):
    if not re.fullmatch(r"ckpt_[0-9]+\.h5", os.path.basename(path)):
        continue
    try:
        with h5py.File(path, "r") as f:
            fmt = f.attrs["format"]
            fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
            assert fmt == "finecast-downscaler-checkpoint", "format %r" % fmt
            assert int(f.attrs["format_version"]) >= 1, "format_version"
            for g in ("options", "model", "ema", "optimizer", "normalisation", "rng"):
                assert g in f, "group /%s missing" % g
            read_all(f)
            when = f["metadata"].attrs["datetime"]
        valid.append(int(os.path.basename(path)[5:-3]))
        times[valid[-1]] = when.decode() if isinstance(when, bytes) else str(when)
    except Exception as e:
        problems.append("corrupt checkpoint %s (%s)" % (path, e))
for path in sorted(glob.glob("ckpt/buffer_*.h5")):
    try:
        with h5py.File(path, "r") as f:
            read_all(f)
    except Exception as e:
        problems.append("corrupt buffer snapshot %s (%s)" % (path, e))

# The run's log: coupling steps completed, checkpoints and samplings reported.
completed, ckpt_step, ckpt_logged, sampled = 0, None, None, []
for line in log:
    m = re.search(r"\] step (\d+)/\d+", line)
    if m:
        completed = int(m.group(1))
    m = re.search(r"Checkpoint written: ckpt/ckpt_(\d+)\.h5", line)
    if m:
        ckpt_logged, ckpt_step = int(m.group(1)), completed + 1
    m = re.search(r"Sampled \d+ member\(s\) at (\S+)", line)
    if m:
        sampled.append(m.group(1))

newest = max(valid) if valid else None
if ckpt_logged is not None:
    if newest is None or newest < ckpt_logged:
        problems.append("checkpoint %d was reported written, the newest valid is %s" % (ckpt_logged, newest))
    elif not os.path.exists("ckpt/buffer_%08d.h5" % newest):
        problems.append("no buffer snapshot beside ckpt_%08d.h5" % newest)
# A resumed model may checkpoint from its first interval on; a fresh one only once its first
# session has trained it (nothing to resume from before that, so nothing is lost).
since = completed - (ckpt_step if ckpt_step is not None else 0)
if since > every and (ckpt_step is not None or resumed):
    problems.append("%d coupling steps completed after the last checkpoint (every %d)" % (since, every))

# Every output of the chain: the records this run reported, and no gap between the first and the
# last record.
have = set()
for out_path in sorted(glob.glob("out*.nc")):
    try:
        with netCDF4.Dataset(out_path) as nc:
            t = nc.variables["time"]
            dates = netCDF4.num2date(t[:], t.units, getattr(t, "calendar", "standard"))
            have |= {d.strftime("%Y-%m-%dT%H:%M:%S") for d in dates}
    except Exception as e:
        problems.append("%s does not open (%s)" % (out_path, e))
records = len(have)
missing = [s for s in sampled if s not in have]
if missing:
    problems.append("the outputs lack records reported written: %s" % ", ".join(missing))
axis = sorted(datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S") for s in have)
gaps = [a.isoformat() for a, b in zip(axis, axis[1:]) if (b - a).total_seconds() != interval]
if gaps:
    problems.append("the outputs' time axis has a gap (or an irregular step) after %s" % ", ".join(gaps))
# Where the next run restarts: the model time of the newest valid checkpoint.
with open("restart_time.txt", "w") as f:
    f.write(times[max(valid)] if valid else "")

tmp = len(glob.glob("ckpt/*.tmp"))
print(("FAIL: " + "; ".join(problems)) if problems else
      "ok completed=%d last_ckpt_step=%s lost_steps=%d newest_valid=%s records=%d (%d reported, no gap) tmp_files=%d"
      % (completed, ckpt_step, max(since, 0), newest, records, len(set(sampled)), tmp))
EOF

RANDOM=$seed
failures=0 killed=0 finished=0
: >result.txt
: >restart_time.txt
for ((i = 1; i <= runs; i++)); do
  delay_ms=$((500 + RANDOM % (max_delay - 500)))
  start=$(cat restart_time.txt)
  how=resumed
  [ -n "$start" ] || { start=1979-01-01T00:00:00; how=fresh; }
  host_run_file "$start"
  mpiexec -n "$ranks" --oversubscribe "$host" host.yaml >"run_$i.log" 2>&1 &
  mpi=$!
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  # Every rank at once, as a node failure or the batch system's SIGKILL does.
  pids=$(ps -o pid= --ppid "$mpi" 2>/dev/null | tr '\n' ' ' || true)
  what="finished before the kill"
  if [ -n "${pids// /}" ]; then
    # shellcheck disable=SC2086  # one argument per pid
    kill -9 $pids 2>/dev/null && what="killed after ${delay_ms} ms"
  fi
  wait "$mpi" || true
  if [ "$what" = "finished before the kill" ]; then finished=$((finished + 1)); else killed=$((killed + 1)); fi
  verdict=$("$python" check.py "run_$i.log" "$every" "$how" "$((sample_every * dt))")
  # The previous run's resume must have skipped no checkpoint as invalid.
  if grep -q "skipping invalid checkpoint" "run_$i.log"; then
    verdict="FAIL: run $i skipped a checkpoint: $(grep "skipping invalid checkpoint" "run_$i.log" | head -1)"
  fi
  line=$(printf 'run %2d (%s at %s, %s): %s' "$i" "$how" "$start" "$what" "$verdict")
  echo "$line" | tee -a result.txt
  [[ "$verdict" == ok* ]] || failures=$((failures + 1))
done
summary="$runs runs (seed $seed, $ranks ranks): $killed killed, $finished finished before the kill, $failures failed checks"
echo "$summary" | tee -a result.txt
((failures == 0))
