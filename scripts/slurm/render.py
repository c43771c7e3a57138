#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Renders finecast SLURM job scripts from a profile (configs/slurm/*.yaml) and the template
# scripts/slurm/job.sbatch.in, after validating the profile, the run's plugin config and build.
"""Render and validate finecast SLURM job scripts.

Normally called by scripts/launch.sh; usable on its own:

  render.py --profile gpu --run configs/demo_host.yaml --output -

Exit status: 0 rendered, 2 invalid profile or arguments (every problem is listed).
"""

import argparse
import datetime
import os
import re
import shlex
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:  # a login node's python3 without PyYAML: say what to do instead of a traceback
    sys.stderr.write(
        "launch: error: the Python module 'yaml' (PyYAML) is missing for %s.\n"
        "  Fix: load a Python that has it (e.g. 'module load python3'), install it\n"
        "  ('python3 -m pip install --user pyyaml' or Debian's python3-yaml), or point\n"
        "  FINECAST_PYTHON at such a python.\n" % sys.executable)
    sys.exit(2)

import build_check
import grid_check
import namelist
import plugin_setup
import runscript
import site_check
import slurm_profile as sp
import textfile
from slurm_profile import PROFILE_KEYS, PROGRAM_KEYS, PROGRAMS, REPO_ROOT, SCRIPT_DIR, TASK

ARRAY_RE = re.compile(r"^(\d+(-\d+(:\d+)?)?)(,\d+(-\d+(:\d+)?)?)*(%\d+)?$")
SET_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
# Words of the job script that stand for shell variables of the job.
SHELL_VARS = {TASK: "task", "{run_file}": "run_file"}
SHELL_VAR_RE = re.compile("(" + "|".join(re.escape(k) for k in SHELL_VARS) + ")")


# ---------------------------------------------------------------- shell text

def sh(word):
    """One shell word; {task} and {run_file} become the job's "${task}" and "${run_file}"."""
    out = []
    for part in SHELL_VAR_RE.split(str(word)):
        if part in SHELL_VARS:
            out.append('"${%s}"' % SHELL_VARS[part])
        elif part:
            out.append(shlex.quote(part))
    return "".join(out) or "''"


def heredoc(target, content, expand_task):
    """`cat >target <<EOF` writing content; {task} becomes the array task's id when expand_task."""
    if not content.endswith("\n"):
        content += "\n"
    tag = "FINECAST_EOF"
    while tag in content.splitlines():
        tag += "_"
    if expand_task and TASK in content:
        text = content.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`")
        return "cat >%s <<%s\n%s%s" % (target, tag, text.replace(TASK, "${task}"), tag)
    return "cat >%s <<'%s'\n%s%s" % (target, tag, content, tag)


def outermost(dirs):
    """The folders to search for a job's files, each once: none inside another."""
    result = []
    for d in sorted(set(dirs)):
        if not any(d.startswith(r.rstrip("/") + "/") for r in result):
            result.append(d)
    return result


# ---------------------------------------------------------------- arrays and overrides

def array_ids(spec, problems):
    """(the first task id, the largest) of a SLURM --array spec (0-3, 1,5,7, 0-15:4, 0-99%10),
    computed without listing the ids; None with an error naming the bound that is broken."""
    items, _, throttle = spec.partition("%")
    ids = []
    for item in items.split(","):
        m = re.match(r"^(\d+)(?:-(\d+)(?::(\d+))?)?$", item)
        numbers = [g for g in m.groups() if g]
        if any(len(g) > 10 for g in numbers):  # int() of thousands of digits is refused anyway
            problems.error("--array %s: task ids go from 0 to %d (SLURM's largest MaxArraySize "
                           "is %d)" % (spec, sp.MAX_ARRAY_ID, sp.MAX_ARRAY_ID + 1))
            return None
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) else first
        step = int(m.group(3)) if m.group(3) else 1
        if last > sp.MAX_ARRAY_ID:
            problems.error("--array %s: task id %d is too large; task ids go from 0 to %d (SLURM's "
                           "largest MaxArraySize is %d; most sites allow far fewer, see "
                           "scontrol show config | grep MaxArraySize)"
                           % (spec, last, sp.MAX_ARRAY_ID, sp.MAX_ARRAY_ID + 1))
            return None
        if last < first or step < 1:
            problems.error("--array %s: '%s' is empty (a range FIRST-LAST needs FIRST <= LAST and "
                           "a step >= 1)" % (spec, item))
            return None
        ids.append((first, first + (last - first) // step * step))
    if throttle and (len(throttle) > 10 or not 1 <= int(throttle) <= sp.MAX_ARRAY_ID + 1):
        problems.error("--array %s: the limit of tasks at a time (%%%s) must be from 1 to %d"
                       % (spec, throttle, sp.MAX_ARRAY_ID + 1))
        return None
    return ids[0][0], max(last for _, last in ids)


def flatten_set(mapping, prefix, out, problems):
    for key, value in mapping.items():
        full = "%s.%s" % (prefix, key) if prefix else str(key)
        if isinstance(value, dict):
            flatten_set(value, full, out, problems)
        elif isinstance(value, list):
            problems.error("set.%s: lists cannot be passed as --set overrides; put them in the "
                           "plugin config" % full)
        else:
            out.append((full, sp.scalar_text(value)))



def names_a_later_gpu(device):
    """Whether a device string names a GPU other than cuda:0 (cuda:1, ...): under bind_gpu.sh every
    process sees exactly one GPU, which is cuda:0."""
    m = re.match(r"^cuda:(\d+)$", device.strip().lower())
    return bool(m) and int(m.group(1)) > 0

def check_overrides(overrides, problems):
    """Every override is a config key and a one-line value: the options string in &comin_nml
    (and the program's command line) is one line, and a line break in it ends the namelist's
    string there."""
    for key, value in overrides.items.items():
        if not SET_KEY_RE.match(key):
            problems.error("set: %r is not a config key (letters, digits, _ and .)" % key)
        bad = sorted({c for c in value if ord(c) < 32 and c != "\t" or ord(c) == 127})
        if bad:
            problems.error("set.%s: the value %r holds %s; an override is one line of text (ComIn's "
                           "options string in &comin_nml is one line). Fix: put multi-line values "
                           "into the plugin config" % (
                               key, value, "a line break" if set(bad) & {"\n", "\r"}
                               else "the control character(s) " + ", ".join(repr(c) for c in bad)))


class Overrides:
    """Plugin config overrides in order; setting a key again replaces it in place."""

    def __init__(self, pairs=()):
        self.items = {}
        for k, v in pairs:
            self.items[k] = v

    def copy(self):
        return Overrides(self.items.items())

    def set(self, key, value):
        self.items[key] = value

    def words(self):
        return ["%s=%s" % kv for kv in self.items.items()]

    def with_task(self, task_id):
        return [w.replace(TASK, str(task_id)) for w in self.words()]


# ---------------------------------------------------------------- finecast-host chunks

def _datetime(value, what, problems):
    if isinstance(value, datetime.datetime):
        return value.replace(tzinfo=None)
    if isinstance(value, datetime.date):
        return datetime.datetime(value.year, value.month, value.day)
    text = str(value).strip().replace("Z", "")
    try:
        return datetime.datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        problems.error("%s: %r is not an ISO 8601 date-time" % (what, value))
        return None


def _iso(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S")


def _plain(value):
    """YAML-loaded values back to what finecast-host reads (date-times as ISO 8601 text)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime.datetime):
        return _iso(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def host_chunk_run_files(run_path, chunks, problems, transform=None):
    """finecast-host run files for a chain: chunk k starts (k-1) x steps x dt after the run
    file's start, inside one experiment (experiment_start, experiment_stop), and chunks 2.. are
    restarts (restart_run: true), as ICON's chunks are. Returns [(text, start)] or None."""
    try:
        with open(run_path) as f:
            data = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as e:
        problems.error("%s: cannot read it to make the chunks of --chain (%s)"
                       % (run_path, str(e).splitlines()[0]))
        return None
    if not isinstance(data, dict):
        problems.error("%s: a host run file is a mapping of keys" % run_path)
        return None
    start = _datetime(data.get("start", "1979-01-01T00:00:00"), run_path + ": start", problems)
    exp_start = _datetime(data["experiment_start"], run_path + ": experiment_start", problems) \
        if data.get("experiment_start") else start
    dt, steps = data.get("dt", 1800), data.get("steps", 200)
    if isinstance(dt, bool) or not isinstance(dt, (int, float)) or dt <= 0 or \
            isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
        problems.error("%s: dt and steps must be positive numbers to chain it (got dt %r, "
                       "steps %r)" % (run_path, dt, steps))
        return None
    if start is None or exp_start is None:
        return None
    try:
        chunk = datetime.timedelta(seconds=dt * steps)
        exp_stop = _iso(start + chunk * chunks)
    except OverflowError:
        problems.error("%s: %d chunks of steps x dt = %r x %r seconds from %s end after the year "
                       "9999; fewer chunks (--chain) or steps" % (run_path, chunks, steps, dt, _iso(start)))
        return None
    if data.get("experiment_stop"):
        stop = _datetime(data["experiment_stop"], run_path + ": experiment_stop", problems)
        if stop is not None and stop < start + chunk * chunks:
            problems.warning("%s: experiment_stop %s is before the end of the chain's %d chunks "
                             "(%s)" % (run_path, _iso(stop), chunks, exp_stop))
        exp_stop = _iso(stop) if stop else exp_stop
    files = []
    for k in range(1, chunks + 1):
        d = _plain(dict(data) if transform is None else transform(data))
        chunk_start = start + chunk * (k - 1)
        d["experiment_start"] = _iso(exp_start)
        d["experiment_stop"] = exp_stop
        d["start"] = _iso(chunk_start)
        d["restart_run"] = True if k > 1 else bool(data.get("restart_run", False))
        text = ("# Chunk %d of %d of %s, written by scripts/launch.sh --chain %d: %d steps from %s\n"
                % (k, chunks, run_path, chunks, steps, _iso(chunk_start)))
        text += yaml.safe_dump(d, sort_keys=False, default_flow_style=False)
        files.append((text, _iso(chunk_start)))
    return files


# ---------------------------------------------------------------- executable programs

def comin_namelist_name(program, workdir, problems):
    """Which namelist of program.namelists gets finecast's &comin_nml entry (a basename)."""
    namelists = [str(n) for n in program.get("namelists") or []]
    bases = [os.path.basename(n) for n in namelists]
    if program.get("comin_namelist"):
        return os.path.basename(str(program["comin_namelist"]))
    if len(namelists) == 1:
        return bases[0]
    if not namelists:
        problems.error("program.namelists is empty: finecast is put into the &comin_nml of one "
                       "of the program's namelist files (ICON: its atmosphere namelist)")
        return None
    if "icon_master.namelist" in bases:
        master = os.path.join(workdir, namelists[bases.index("icon_master.namelist")])
        try:
            value = namelist.get_value(textfile.read(master), "master_model_nml",
                                       "model_namelist_filename", master)
        except (OSError, namelist.NamelistError) as e:
            problems.error(str(e))
            return None
        if value:
            name = os.path.basename(namelist.unquote(value.split(",")[0]))
            if name in bases:
                return name
            problems.error("%s names the atmosphere namelist '%s' (master_model_nml: "
                           "model_namelist_filename), which is not one of program.namelists (%s)"
                           % (master, name, ", ".join(namelists)))
            return None
    problems.error("program.comin_namelist: say which of program.namelists (%s) gets finecast's "
                   "&comin_nml entry" % ", ".join(namelists))
    return None


def resolve_executable(program, workdir, problems):
    exe = os.path.expanduser(os.path.expandvars(str(program.get("executable") or "")))
    if not exe:
        return ""
    if "$" in exe:
        problems.error("program.executable %r: an environment variable in it is not set here"
                       % program["executable"])
        return exe
    if "/" in exe:
        exe = os.path.normpath(os.path.join(workdir, exe))
        if not os.access(exe, os.X_OK):
            problems.warning("program.executable %s is not an executable file (yet); the job "
                             "will fail until it is" % exe)
    elif shutil.which(exe) is None:
        problems.warning("program.executable '%s' is not on PATH here; it must be in the job "
                         "(after its modules)" % exe)
    return exe


# ---------------------------------------------------------------- the job script

def main():
    parser = argparse.ArgumentParser(
        prog="render.py",
        description="Render and validate finecast SLURM job scripts from a profile.",
        epilog="Profile keys:\n" + "\n".join("  %-16s %s" % kv for kv in PROFILE_KEYS.items())
        + "\n\nprogram: {...} keys (ICON or any ComIn host):\n"
        + "\n".join("  %-16s %s" % kv for kv in PROGRAM_KEYS.items())
        + "\n\ntrainers: {...} keys (finecast-trainer processes, train.placement: external):\n"
        + "\n".join("  %-16s %s" % kv for kv in sp.TRAINER_KEYS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", required=True,
                        help="gpu | cpu | replay | icon | external (configs/slurm/NAME.yaml) or a "
                             "profile path")
    parser.add_argument("--run", help="host run file / replay config / plugin config "
                                      "(overrides the profile's 'run')")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="plugin config override passed to the program (repeatable)")
    parser.add_argument("--resume", metavar="DIR",
                        help="continue from the newest valid checkpoint in DIR "
                             "(= --set checkpoint.resume=DIR)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="profile override, e.g. account=bb1234 or gpus.count=1 (repeatable)")
    parser.add_argument("--bin-dir", help="directory of the finecast programs (default <repo>/build/bin)")
    parser.add_argument("--chain", type=int, default=1, metavar="N",
                        help="N chunks, each a job that resumes from the previous one's checkpoint")
    parser.add_argument("--array", metavar="SPEC", help="a SLURM job array (0-3, 1,5,7, 0-15%%4)")
    parser.add_argument("--submit", action="store_true",
                        help="the scripts will be submitted: a build that cannot serve the job "
                             "is an error, not a warning")
    parser.add_argument("--no-cuda-check", action="store_true",
                        help="do not check that a GPU job's build has CUDA")
    parser.add_argument("--output", default="-",
                        help="where to write the job script (- = stdout); with --chain N, "
                             "chunk k goes to OUTPUT with -chunkK before its extension")
    parser.add_argument("--summary", help="write log_file=, log_dir=, job_name=, script= lines here")
    parser.add_argument("--icon-runscript", metavar="FILE",
                        help="add finecast (&comin_nml, its environment, external trainers) to an "
                             "ICON experiment run script; --output (- = stdout) or in place")
    args = parser.parse_args()

    profile, profile_path = sp.load(args.profile)
    for item in args.param:
        key, raw = sp.parse_assignment(item, "--param")
        sp.apply_param(profile, key, raw)
    if args.run:
        profile["run"] = os.path.abspath(args.run)
    set_items = []
    for item in args.set:
        set_items.append(sp.parse_assignment(item, "--set"))

    workdir = os.path.abspath(str(profile.get("workdir") or os.getcwd()))
    problems = sp.Problems(profile_path)
    if args.icon_runscript:
        return render_runscript(args, profile, profile_path, set_items, workdir, problems)
    sp.validate(profile, problems, workdir)
    if args.resume and not os.path.isdir(args.resume):
        problems.error("--resume %s: no such directory (it must hold the checkpoints of an "
                       "earlier run: its checkpoint.dir)" % args.resume)
    if not 1 <= args.chain <= sp.MAX_CHAIN:
        problems.error("--chain must be from 1 to %d chunks, got %d (each chunk is a job of its "
                       "own; for longer experiments submit a new chain from the last chunk's "
                       "checkpoints)" % (sp.MAX_CHAIN, args.chain))
    if args.array is not None and sp.has_trainers(profile):
        problems.error("--array with trainers.count = %d: SLURM has no arrays of heterogeneous "
                       "jobs. Fix: submit one launch per task (e.g. a loop over --set seed=N), or "
                       "drop the trainer component (--param trainers.count=0)"
                       % profile["trainers"]["count"])
    if args.array is not None and not ARRAY_RE.match(args.array):
        problems.error("--array %r is not a SLURM array: use e.g. 0-3, 1,5,7, 0-15:4 or 0-99%%10"
                       % args.array)
    elif args.array is not None:
        array_ids(args.array, problems)
    if problems.errors:
        problems.report()
        return 2

    job = Job(profile, profile_path, args, set_items, workdir, problems)
    if not job.plan():
        problems.report()
        return 2
    scripts = [job.render_chunk(k) for k in range(1, args.chain + 1)]
    if not problems.report():
        return 2

    paths = []
    if args.output == "-":
        for k, text in enumerate(scripts, 1):
            if args.chain > 1:
                text = "%s# ==== chunk %d of %d ====\n%s" % ("\n" if k > 1 else "", k, args.chain, text)
            textfile.to_stdout(text)
    else:
        base = os.path.abspath(args.output)
        os.makedirs(os.path.dirname(base), exist_ok=True)
        for k, text in enumerate(scripts, 1):
            path = base
            if args.chain > 1:
                stem, ext = os.path.splitext(base)
                path = "%s-chunk%d%s" % (stem, k, ext)
            textfile.write(path, text)
            os.chmod(path, 0o755)
            paths.append(path)
    if args.summary:
        with open(args.summary, "w") as f:
            for key in ("log_file", "log_dir", "job_name", "dependency", "array"):
                f.write("%s=%s\n" % (key, job.meta[key]))
            for path in paths:
                f.write("script=%s\n" % path)
    return 0


class Job:
    """Everything the chunks of one launch share, worked out once (plan), then rendered."""

    def __init__(self, profile, profile_path, args, set_items, workdir, problems):
        self.profile = profile
        self.profile_path = profile_path
        self.args = args
        self.set_items = set_items
        self.workdir = workdir
        self.problems = problems
        self.program = profile["program"]
        self.executable_program = isinstance(self.program, dict)
        self.array = args.array
        # (first task id, largest): the config is resolved for the first, lengths checked for the largest.
        self.task_ids = array_ids(args.array, problems) if args.array else ()
        self.chain = args.chain
        # train.placement: external: finecast-trainer processes in a component of their own.
        self.external = sp.has_trainers(profile)
        self.trainers = profile["trainers"] if self.external else {}
        self.run_copy = None  # the run file with finecast's comm, when the job must write one

    def absolute(self, path):
        return os.path.normpath(os.path.join(self.workdir, os.path.expanduser(str(path))))

    # ---- everything that can be checked, before a line is written
    def plan(self):
        p, problems = self.profile, self.problems
        self.name = os.path.splitext(os.path.basename(self.profile_path))[0]
        self.job_name = str(p.get("job_name") or "finecast-" + self.name)
        self.bin_dir = os.path.abspath(self.args.bin_dir) if self.args.bin_dir else \
            self.absolute(p["bin_dir"]) if p.get("bin_dir") else os.path.join(REPO_ROOT, "build", "bin")
        self.log_dir = self.absolute(p.get("log_dir") or "out/slurm")
        self.log_file = os.path.join(self.log_dir, "%s-%s.out" % (
            self.job_name, "%A_%a" if self.array else "%j"))
        self.run = self.absolute(p["run"])
        self.task_dir = self.absolute(p.get("task_dir") or "out/%s/task_%s" % (self.job_name, TASK)) \
            if self.array else None

        # Overrides: the profile's set:, then --set, then --resume (a later one wins).
        flat = []
        if isinstance(p.get("set"), dict):
            flatten_set(p["set"], "", flat, problems)
        self.overrides = Overrides(flat + self.set_items)
        if self.args.resume:
            self.overrides.set("checkpoint.resume", os.path.abspath(self.args.resume))
        check_overrides(self.overrides, problems)
        if self.external:
            self.set_external_overrides()
        self.check_task_placeholders()

        # The program and its finecast plugin.
        default_library = os.path.join(os.path.dirname(self.bin_dir), "lib", LIBRARY_FILE)
        if self.executable_program:
            prog = self.program
            self.exe = resolve_executable(prog, self.workdir, problems)
            library = self.absolute(prog["plugin_library"]) if prog.get("plugin_library") \
                else default_library
            self.plugin = plugin_setup.Plugin(
                library, self.run, [], "program.plugin_library" if prog.get("plugin_library")
                else "the default program.plugin_library")
            self.comin_nml = comin_namelist_name(prog, self.workdir, problems)
            restart = prog.get("restart") or {}
            bases = [os.path.basename(str(n)) for n in prog.get("namelists") or []]
            if self.chain > 1 and restart and os.path.basename(str(restart["namelist"])) not in bases:
                problems.error("program.restart.namelist '%s' is not one of program.namelists (%s): "
                               "the chunks of --chain %d could not be restarts"
                               % (restart["namelist"], ", ".join(bases), self.chain))
            elif self.chain > 1 and not restart:
                problems.warning("program.restart is not set: every chunk of --chain starts the "
                                 "program from its namelists unchanged; only finecast resumes "
                                 "(checkpoint.resume: auto)")
            rundir = prog.get("rundir") or (self.task_dir if self.array else "out/" + self.job_name)
            self.rundir = self.absolute(rundir)
            if self.array and TASK not in self.rundir:
                problems.error("program.rundir %r must contain {task} with --array, so that the "
                               "tasks do not run in one folder" % rundir)
        else:
            self.exe = os.path.join(self.bin_dir, PROGRAMS[self.program])
            if not os.access(self.exe, os.X_OK):
                problems.warning("%s is not built yet; the job will fail until it is "
                                 "(cmake --build build --target %s)" % (self.exe, PROGRAMS[self.program]))
            self.plugin = plugin_setup.find_in_run_file(self.run, self.workdir, problems) \
                if os.path.isfile(self.run) else None
            self.rundir = None
        if self.external:
            self.plan_trainers()
        if problems.errors:
            return False

        # The plugin config as the job's first chunk will see it (finecast-config checks it).
        first = self.chunk_overrides(1)
        self.config = None
        if self.plugin is not None:
            sample_id = self.task_ids[0] if self.task_ids else 0
            self.config = plugin_setup.read_config(self.plugin, first.with_task(sample_id),
                                                   self.bin_dir, problems)
        if self.array:
            self.add_task_outputs()
        if not self.external:
            placement = sp.scalar_text(plugin_setup.lookup(self.config, "train.placement", "")) \
                if self.config else ""
            if placement == "external":
                problems.error("the plugin config sets train.placement: external, but the profile "
                               "starts no finecast-trainer process. Fix: --param trainers.count=N "
                               "with the trainer component's keys (--profile external, "
                               "configs/slurm/external.yaml), or --set train.placement=spread")
        self.check_gpus()
        if self.external:
            self.check_trainer_gpus()
        if self.config is not None:
            # The plugin reads grid.file relative to where the program runs.
            base = self.rundir if self.executable_program else self.workdir
            grid_check.check_config_grid(self.config, base, self.bin_dir, problems)
        if self.executable_program and not problems.errors:
            self.namelist_texts = self.prepare_namelists()
        if self.program == "host" and self.chain > 1 and not problems.errors:
            self.chunk_run_files = host_chunk_run_files(
                self.run, self.chain, problems, self.comm_transform() if self.run_copy else None)
        for w in site_check.account_warnings(p):
            problems.warning(w)
        _, use, modules = sp.module_spec(p.get("modules"))
        for w in site_check.module_warnings(modules, use):
            problems.warning(w)
        self.meta = {"log_file": self.log_file, "log_dir": self.log_dir, "job_name": self.job_name,
                     "dependency": "aftercorr" if self.array else "afterok",
                     "array": self.array or ""}
        return not problems.errors

    # ---- train.placement: external
    def set_external_overrides(self):
        """The plugin config of the external layout: the trainers join the plugin's
        communicator, as many as trainers.count. A --set or set: that says otherwise is an
        error naming both."""
        count = self.trainers["count"]
        wanted = (("coupling.communicator", "plugin"), ("train.placement", "external"),
                  ("train.ranks", str(count)))
        for key, value in wanted:
            given = self.overrides.items.get(key)
            if given is not None and given.strip() != value:
                self.problems.error(
                    "set.%s = %s, but trainers.count = %d starts finecast-trainer processes, "
                    "which need %s = %s (launch.sh sets it). Fix: drop --set %s=%s%s"
                    % (key, given, count, key, value, key, given,
                       ", or --param trainers.count=%s" % given if key == "train.ranks" else ""))
            self.overrides.set(key, value)

    def plan_trainers(self):
        """finecast-trainer, the plugin library it loads (the host's), and finecast's comm name
        in the host's plugin list (the run file's entry, or the &comin_nml entry launch.sh writes)."""
        t, problems = self.trainers, self.problems
        self.trainer_exe = os.path.join(self.bin_dir, "finecast-trainer")
        if not os.access(self.trainer_exe, os.X_OK):
            problems.warning("%s is not built yet; the job will fail until it is "
                             "(cmake --build build --target finecast-trainer)" % self.trainer_exe)
        self.trainer_nodes = sp.trainer_nodes(t)
        self.trainers_per_node = -(-t["count"] // self.trainer_nodes)
        given = str(t.get("comm") or "")
        if self.executable_program:
            self.comm = given or "finecast"
            return
        if self.plugin is None:
            if os.path.isfile(self.run):
                problems.error("trainers.count = %d, but %s loads no finecast plugin (no "
                               "finecast entry in its plugins list or comin_namelist): the "
                               "finecast-trainer processes would have no one to join"
                               % (t["count"], self.run))
            return
        self.comm = given or self.plugin.comm or "finecast"
        if self.plugin.comm == self.comm:
            return
        if self.plugin.index is None:
            problems.error("%s: finecast's entry has comm = \"%s\", but the finecast-trainer "
                           "processes join \"%s\"; launch.sh changes a run file's plugins list, "
                           "not the namelist it names. Fix: set plugin_list(i)%%comm = \"%s\" "
                           "there, or --param trainers.comm=%s"
                           % (self.plugin.where, self.plugin.comm, self.comm, self.comm,
                              self.plugin.comm or "NAME"))
            return
        try:
            with open(self.run) as f:
                data = yaml.safe_load(f) or {}
        except (OSError, yaml.YAMLError) as e:
            problems.error("%s: cannot read it to set finecast's comm (%s)"
                           % (self.run, str(e).splitlines()[0]))
            return
        self.run_copy = plugin_setup.with_comm(data, self.plugin.index, self.comm)

    def comm_transform(self):
        index, comm = self.plugin.index, self.comm
        return lambda data: plugin_setup.with_comm(data, index, comm)

    def device_and_source(self):
        """The plugin's device (a --set, else its config, else finecast's default "auto") and
        where it comes from, for messages."""
        device_set = "device" in self.overrides.items
        device = self.overrides.items["device"] if device_set else \
            sp.scalar_text(plugin_setup.lookup(self.config, "device", "auto")) if self.config else "auto"
        source = "set.device = %s" % device if device_set else \
            "device = %s (%s)" % (device, self.plugin.config if self.plugin and self.plugin.config
                                  else "finecast's default")
        return device, source

    def check_trainer_gpus(self):
        """The trainer component's GPUs: one per trainer process for a device that uses CUDA,
        checked against its partition and the build the trainers load (the host's plugin)."""
        t, problems = self.trainers, self.problems
        kind = t.get("kind", "gpu")
        device, source = self.device_and_source()
        used = plugin_setup.gpus_used(device, self.trainers_per_node)
        self.trainer_gpus = used if kind == "gpu" else 0
        if kind == "cpu":
            if device.startswith("cuda"):
                problems.error("%s, but trainers.kind is cpu (no GPU on the trainer nodes). Fix: "
                               "--set device=cpu, or a GPU partition for the trainers "
                               "(--param trainers.kind=gpu --param trainers.partition=gpu)" % source)
            return
        if names_a_later_gpu(device):
            problems.error("%s: every finecast-trainer process sees exactly one GPU "
                           "(scripts/slurm/bind_gpu.sh), which is cuda:0. Fix: --set device=cuda"
                           % source)
        if used == 0:
            problems.error("%s uses no GPU, but the trainers are on a GPU partition "
                           "(trainers.kind: gpu). Fix: --set device=cuda, or --param "
                           "trainers.kind=cpu with a CPU partition" % source)
            return
        if not self.args.no_cuda_check:
            self.check_cuda(", which the finecast-trainer processes load,")

    def check_task_placeholders(self):
        uses = [w for w in self.overrides.words() if TASK in w]
        if self.executable_program:
            uses += [a for a in self.program.get("args") or [] if TASK in str(a)]
            if TASK in str(self.program.get("rundir") or ""):
                uses.append("program.rundir")
        if uses and not self.array:
            self.problems.error("{task} (in %s) is the array task's id: it needs --array"
                                % ", ".join(uses))

    def chunk_overrides(self, k):
        """Chunk k's overrides: with --chain every chunk resumes with checkpoint.resume: auto
        (the first from --resume DIR when given, or fresh when checkpoint.dir is empty)."""
        o = self.overrides.copy()
        if self.chain > 1 and (k > 1 or "checkpoint.resume" not in o.items):
            o.set("checkpoint.resume", "auto")
        for key, value in getattr(self, "task_overrides", []):
            o.set(key, value)
        return o

    def add_task_outputs(self):
        """With --array each task writes its own samples and checkpoints: sample.output and
        checkpoint.dir go into the task's folder, unless --set/set already puts {task} in them.
        An executable program runs in a folder per task, where relative paths already differ."""
        self.task_overrides = []
        if self.config is None:
            self.problems.warning("the plugin config could not be read: with --array, give "
                                  "--set sample.output=.../{task}/... and --set "
                                  "checkpoint.dir=.../{task}/... yourself")
            return
        for key in ("sample.output", "checkpoint.dir"):
            given = self.overrides.items.get(key)
            if given is not None:
                if TASK not in given:
                    self.problems.error("--set %s=%s with --array: every task would write there. "
                                        "Put {task} in it (e.g. out/sweep/{task}/...), or leave it "
                                        "out: each task then gets %s" % (key, given, self.task_dir))
                continue
            value = str(plugin_setup.lookup(self.config, key) or "")
            if not value:
                continue
            if self.executable_program and not os.path.isabs(value):
                continue  # relative to the task's own run directory
            self.task_overrides.append(
                (key, os.path.join(self.task_dir, os.path.basename(os.path.normpath(value)))))

    def check_gpus(self):
        """How many GPUs to request (gpus.count, or 'auto': what the plugin config uses), checked
        against the kind of partition, the node and the build."""
        p, problems = self.profile, self.problems
        kind = p["kind"]
        device, source = self.device_and_source()
        trainers = plugin_setup.trainers_on_busiest_node(
            self.config, self.overrides.items, p.get("nodes", 1), p.get("ntasks_per_node", 1))
        used = plugin_setup.gpus_used(device, trainers)
        gpus = p.get("gpus") or {}
        count = gpus.get("count", "auto") if isinstance(gpus, dict) else 0
        if self.external:
            # The trainers are finecast-trainer processes of their own component: the host's
            # ranks use no GPU for finecast (a number is for a host that uses GPUs itself).
            self.gpu_count = 0 if count == "auto" else count
            if kind == "cpu" and self.gpu_count > 0:
                problems.error("gpus.count = %d on a cpu profile: CPU partitions have no GPUs. "
                               "Fix: remove 'gpus' (or --param gpus.count=0); the trainers' GPUs "
                               "are trainers.*" % self.gpu_count)
            per_node = p.get("gpus_per_node")
            if kind == "gpu" and isinstance(per_node, int) and self.gpu_count > per_node:
                problems.error("gpus.count = %d, but a node of partition '%s' has gpus_per_node = "
                               "%d. Fix: --param gpus.count=%d"
                               % (self.gpu_count, p.get("partition"), per_node, per_node))
            return
        if count == "auto":
            count = used if kind == "gpu" else 0
        self.gpu_count = count
        if kind == "cpu":
            if count > 0:
                problems.error("gpus.count = %d on a cpu profile: CPU partitions have no GPUs. Fix: "
                               "remove 'gpus' (or --param gpus.count=0), or use a gpu profile "
                               "(--profile gpu)" % count)
            if device.startswith("cuda"):
                problems.error("%s on a cpu profile, where no GPU exists. Fix: --set device=cpu "
                               "(or device=auto), or use --profile gpu" % source)
            return
        if names_a_later_gpu(device):
            problems.error("%s: every rank of a GPU job sees exactly one GPU (scripts/slurm/"
                           "bind_gpu.sh: local rank modulo the node's GPUs), which is cuda:0. "
                           "Fix: --set device=cuda" % source)
        if device == "cpu":
            problems.warning("%s on a gpu profile: the GPUs will sit idle" % source)
        if count == 0:
            problems.error("a gpu profile needs gpus.count >= 1 (e.g. gpus: {type: a100, count: "
                           "auto}); %s uses no GPU: use --profile cpu, or --set device=cuda"
                           % source if device == "cpu" else
                           "a gpu profile needs gpus.count >= 1 (e.g. gpus: {type: a100, count: auto})")
        per_node = p.get("gpus_per_node")
        if isinstance(per_node, int) and count > per_node:
            problems.error("gpus.count = %d, but a node of partition '%s' has gpus_per_node = %d. "
                           "Fix: --param gpus.count=%d" % (count, p.get("partition"), per_node, per_node))
        elif used and count > used and not self.executable_program:
            problems.warning("gpus.count = %d, but finecast trains on %d GPU(s) of a node (one per "
                             "trainer rank there, train.ranks); %d would sit idle. Fix: --param "
                             "gpus.count=auto" % (count, used, count - used))
        elif used and count > used and self.executable_program:
            # More GPUs than finecast's trainers use: the program runs on them itself (ICON's GPU
            # build, one rank per GPU), and bind_gpu.sh gives host rank 0, the trainer, GPU 0.
            problems.warning(
                "gpus.count = %d for a program that uses the GPUs itself: finecast's in-host trainer "
                "(host rank %s) shares its GPU with the program's rank there, for memory and time. "
                "Fix: trainers on GPUs of their own (--profile icon_gpu, or --param trainers.count=N "
                "with the trainers.* keys of configs/slurm/icon_gpu.yaml); or keep it and cap the "
                "trainer's device memory (--set train.max_device_memory=BYTES)"
                % (count, sp.scalar_text(plugin_setup.lookup(self.config, "coupling.trainer_rank", 0))
                   if self.config else "0"))
        if used and not self.args.no_cuda_check:
            self.check_cuda()

    def check_cuda(self, role=""):
        library = self.plugin.library if self.plugin else \
            os.path.join(os.path.dirname(self.bin_dir), "lib", LIBRARY_FILE)
        flavour, evidence = build_check.torch_flavour(library)
        where = " (%s)" % self.plugin.where if self.plugin else ""
        report = self.problems.error if self.args.submit else self.problems.warning
        later = "" if self.args.submit else " (sbatch would be refused; this is a dry run)"
        if flavour == build_check.CPU:
            report("this is a GPU job, but the finecast plugin it loads%s%s is a CPU-only build: %s. "
                   "It would train on the CPU (device: auto) or stop at start-up (device: cuda)%s. "
                   "%s" % (where, role, evidence, later, build_check.HOW_TO_BUILD))
        elif flavour == build_check.MISSING:
            report("this is a GPU job, but the finecast plugin it loads%s%s is not built: %s%s. %s"
                   % (where, role, evidence, later, build_check.HOW_TO_BUILD))
        elif flavour == build_check.UNKNOWN:
            self.problems.warning("could not tell whether %s has CUDA: %s. The job's log shows "
                                  "the plugin's device line (Using device: CUDA ...)"
                                  % (library, evidence))

    def prepare_namelists(self):
        """[(basename, source, text for chunk 1, text for chunks 2..)]: the program's namelists,
        finecast in &comin_nml, the restart key set from chunk 2 on."""
        prog, problems = self.program, self.problems
        restart = prog.get("restart") or {}
        name = str(prog.get("plugin_name") or "finecast")
        result = []
        for nml in [str(n) for n in prog.get("namelists") or []]:
            src = self.absolute(nml)
            base = os.path.basename(nml)
            text = textfile.read(src)
            try:
                namelist.groups(text, src)
            except namelist.NamelistError as e:
                problems.error(str(e))
                continue
            texts = []
            for k in (1, 2):
                t = text
                if base == self.comin_nml:
                    options = " ".join(plugin_setup.quote_option(w) for w in
                                       [self.run] + self.chunk_overrides(k).words())
                    longest = options.replace(TASK, str(self.task_ids[1])) if self.task_ids else options
                    if len(longest) > namelist.COMIN_MAX_LEN["options"]:
                        problems.error(
                            "%s: finecast's &comin_nml options would be %d characters, but ComIn "
                            "reads at most %d: '%s'. Fix: put the overrides into %s and launch with "
                            "fewer --set" % (src, len(longest), namelist.COMIN_MAX_LEN["options"],
                                             longest, self.run))
                        return []
                    try:
                        t, index = namelist.put_plugin(
                            t, name, self.plugin.library, options, src,
                            comm=self.comm if self.external else None)
                    except namelist.NamelistError as e:
                        problems.error(str(e))
                        return []
                    self.plugin_index = index
                if k == 2 and restart and os.path.basename(str(restart["namelist"])) == base:
                    value = sp.scalar_text(restart.get("value", ".true."))
                    if value in ("true", "false"):
                        value = "." + value + "."
                    try:
                        t = namelist.set_value(t, str(restart["group"]), str(restart["key"]), value, src)
                    except namelist.NamelistError as e:
                        problems.error("program.restart: %s" % e)
                        return []
                texts.append(t)
            result.append((base, src, texts[0], texts[1]))
        return result

    # ---- the script of chunk k
    def render_chunk(self, k):
        p = self.profile
        with open(os.path.join(SCRIPT_DIR, "job.sbatch.in")) as f:
            template = f.read()
        q = shlex.quote
        overrides = self.chunk_overrides(k)
        nodes, per_node, cpus = p["nodes"], p["ntasks_per_node"], p["cpus_per_task"]
        hint = p.get("hint") or ""
        kind = p["kind"]

        sbatch = []
        if p.get("account"):
            sbatch.append("--account=%s" % p["account"])
        sbatch += ["--partition=%s" % p["partition"], "--nodes=%d" % nodes,
                   "--ntasks-per-node=%d" % per_node, "--cpus-per-task=%d" % cpus]
        if hint:
            sbatch.append("--hint=%s" % hint)
        if p.get("mem") not in (None, ""):
            sbatch.append("--mem=%s" % p["mem"])
        if self.gpu_count:
            gtype = str((p.get("gpus") or {}).get("type") or "")
            sbatch.append("--gres=gpu:%s%d" % (gtype + ":" if gtype else "", self.gpu_count))
        sbatch.append("--time=%s" % p["time"])
        if self.array:
            sbatch.append("--array=%s" % self.array)
        sbatch += ["--job-name=%s" % self.job_name, "--output=%s" % self.log_file]
        sbatch += [str(o) for o in p.get("sbatch_extra") or []]
        if self.external:
            sbatch += self.trainer_sbatch(hint)

        srun = ["--nodes=%d" % nodes, "--ntasks-per-node=%d" % per_node, "--cpus-per-task=%d" % cpus]
        extra = [str(o) for o in p.get("srun_extra") or []]
        if hint and not any(o.startswith("--hint") for o in extra):
            srun.append("--hint=%s" % hint)
        srun += self.kill_on_bad_exit(extra) + extra

        purge, use, modules = sp.module_spec(p.get("modules"))
        if purge or use or modules:
            module_block = "\n".join([
                "# 'module' is a shell function that batch shells may not have yet.",
                "if ! command -v module >/dev/null 2>&1 && [[ -f /etc/profile.d/modules.sh ]]; then",
                "  # shellcheck source=/dev/null",
                "  source /etc/profile.d/modules.sh",
                "fi"] +
                (["module purge"] if purge else []) +
                ["module use " + q(path) for path in use] +
                (["module load " + " ".join(q(m) for m in modules)] if modules else []))
        else:
            module_block = "# No modules requested (profile key 'modules')."
        env = p.get("env") or {}
        env_block = "\n".join("export %s=%s" % (name, q(sp.scalar_text(value)))
                              for name, value in env.items()) or "# No extra environment (profile key 'env')."

        # What runs, and what is prepared for it.
        prepare = []
        search = [self.absolute(d) for d in p.get("outputs") or []]
        if self.executable_program:
            argv = [self.exe] + [str(a) for a in self.program.get("args") or []]
            run_note = "%s in %s, finecast config %s" % (os.path.basename(self.exe), self.rundir, self.run)
            prepare += self.prepare_rundir(k)
            search.append(self.rundir)
        else:
            run_arg = self.run
            if self.program == "host" and self.chain > 1:
                text, start = self.chunk_run_files[k - 1]
                run_file = os.path.join(self.log_dir, "%s-chunk%d-" % (self.job_name, k))
                prepare += ["# This chunk's run file: %s from %s%s." % (
                    os.path.relpath(self.run, self.workdir), start,
                    ", a restart (restart_run: true)" if k > 1 else ""),
                    'run_file=%s"${SLURM_JOB_ID:-0}".run.yaml' % shlex.quote(run_file),
                    heredoc('"$run_file"', text, False), ""]
                run_arg = "{run_file}"
            elif self.run_copy is not None:
                run_file = os.path.join(self.log_dir, "%s-run-" % self.job_name)
                prepare += ["# The run file with comm: %s in finecast's plugin entry (the comm the "
                            "finecast-trainer processes join): a copy of %s." % (self.comm, self.run),
                            'run_file=%s"${SLURM_JOB_ID:-0}".yaml' % shlex.quote(run_file),
                            heredoc('"$run_file"', yaml.safe_dump(_plain(self.run_copy), sort_keys=False,
                                                                 default_flow_style=False), False), ""]
                run_arg = "{run_file}"
            argv = [self.exe] + ([run_arg] if self.program == "host" else ["--config", run_arg])
            run_note = "%s %s" % ("run file" if self.program == "host" else "config", self.run)
        for word in overrides.words():
            if not self.executable_program:
                argv += ["--set", word]
        for key in ("checkpoint.dir", "checkpoint.resume", "sample.output", "output.path", "output.dir"):
            value = overrides.items.get(key)
            if value and value != "auto":
                search.append(self.absolute(value) if key != "sample.output"
                              else os.path.dirname(self.absolute(value)))
        # The plugin config's own checkpoint.dir and sample.output (not given with --set; #22): the
        # program writes them relative to where it runs (the run directory of a program mapping).
        for key in ("checkpoint.dir", "sample.output"):
            value = sp.scalar_text(plugin_setup.lookup(self.config, key, "")) if self.config else ""
            if value and key not in overrides.items:
                base = self.rundir if self.executable_program else self.workdir
                path = os.path.normpath(os.path.join(base, os.path.expanduser(value)))
                search.append(path)  # sample.output: the file itself, not its whole folder
        if self.task_dir:
            search.append(self.task_dir)
        for line in [str(x) for x in p.get("prolog") or []]:
            prepare.append(line)
        if p.get("prolog"):
            prepare.append("")

        gpu_report = ["# bind_gpu.sh gives each rank exactly one of the node's GPUs (local rank modulo GPU",
                      "# count), so the trainer rank (rank 0) owns GPU 0 and no two ranks fight over it.",
                      "if command -v nvidia-smi >/dev/null 2>&1; then",
                      '  echo "finecast: GPUs visible:"',
                      '  nvidia-smi -L || echo "finecast: nvidia-smi -L failed"',
                      "else",
                      '  echo "finecast: GPUs visible: nvidia-smi not found (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset})"',
                      "fi"] if kind == "gpu" else \
            ['echo "finecast: GPUs visible: none requested (CPU partition); the device line below says what trains"']
        command = " ".join(sh(a) for a in argv)
        if kind == "gpu" and (not self.external or self.gpu_count):
            command = "%s/scripts/slurm/bind_gpu.sh %s" % (q(REPO_ROOT), command)
        if self.external:
            # One heterogeneous step: the host's ranks, then the trainers (one MPI_COMM_WORLD).
            command += " : " + self.trainer_command(hint)
            if kind != "gpu":
                gpu_report = ['echo "finecast: host ranks: no GPU (CPU partition)"']
            gpu_report.append(self.trainer_report())

        what = {"host": "finecast-host with the plugin", "replay": "offline replay (finecast-replay)"}.get(
            self.program if isinstance(self.program, str) else "", "%s with finecast in &comin_nml" % (
                os.path.basename(self.exe) if self.executable_program else ""))
        what += " on a %s partition" % kind.upper()
        if self.external:
            what += ", %d finecast-trainer process(es) on a %s partition (heterogeneous job)" % (
                self.trainers["count"], self.trainers.get("kind", "gpu").upper())
        if self.chain > 1:
            what += ", chunk %d of %d" % (k, self.chain)
        if self.array:
            what += ", array %s" % self.array
        chain_note = "# Chunk %d of %d: sbatch --dependency=%s:<job id of chunk %d> --kill-on-invalid-dep=yes." \
            % (k, self.chain, self.meta["dependency"], k - 1) if k > 1 else \
            ("# Chunk 1 of %d: the later chunks wait for it (afterok), each resumes from the checkpoints "
             "of the one before (checkpoint.resume: auto)." % self.chain if self.chain > 1 else "")
        task = ('task="${SLURM_ARRAY_TASK_ID:?this is an array job: submit it with sbatch --array}"'
                if self.array else "")
        job_note = ""
        if self.array:
            job_note += ' (array task ${task})'
        if self.chain > 1:
            job_note += ", chunk %d of %d" % (k, self.chain)

        values = {
            "WHAT": what,
            "PROFILE": self.profile_path,
            "DATE": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
            "CHAIN_NOTE": chain_note,
            "SBATCH": "\n".join("#SBATCH %s" % o for o in sbatch),
            "MODULES": module_block,
            "ENV": env_block,
            "CPUS_PER_TASK": str(cpus),
            "WORKDIR": q(self.workdir),
            "TASK": task,
            "JOB_NOTE": job_note,
            "NTASKS": str(nodes * per_node) if not self.external else
            "%d host + %d trainer" % (nodes * per_node, self.trainers["count"]),
            "GPUS_PER_NODE": str(self.gpu_count) if not self.external else
            "%d host + %d trainer" % (self.gpu_count, self.trainer_gpus),
            "RUN_NOTE": run_note.replace('"', "'").replace("$", "\\$").replace("`", "'")
                                .replace(TASK, "${task}"),
            "GPU_REPORT": "\n".join(gpu_report),
            "PREPARE": "\n".join(prepare),
            "SRUN_OPTS": " ".join(q(o) for o in srun),
            "COMMAND": command,
            "REPO": q(REPO_ROOT),
            "LOG_FILE": q(self.log_file),
            "TIME": q(str(p["time"])),
            "SEARCH": " ".join(sh(d) for d in outermost(search)),
        }
        text = re.sub(r"@([A-Z_]+)@", lambda m: values[m.group(1)], template)
        return re.sub(r"\n{3,}", "\n\n", text)

    # ---- the trainer component (train.placement: external)
    def trainer_sbatch(self, hint):
        """#SBATCH lines of the heterogeneous job's second component: the trainers' nodes."""
        t, p = self.trainers, self.profile
        lines = ["hetjob"]
        if p.get("account"):
            lines.append("--account=%s" % p["account"])
        lines += ["--partition=%s" % t["partition"], "--nodes=%d" % self.trainer_nodes,
                  "--ntasks=%d" % t["count"], "--ntasks-per-node=%d" % self.trainers_per_node,
                  "--cpus-per-task=%d" % t["cpus_per_task"]]
        if hint:
            lines.append("--hint=%s" % hint)
        if t.get("mem") not in (None, ""):
            lines.append("--mem=%s" % t["mem"])
        if self.trainer_gpus:
            gtype = str(t.get("gpu_type") or "")
            lines.append("--gres=gpu:%s%d" % (gtype + ":" if gtype else "", self.trainer_gpus))
        lines.append("--time=%s" % p["time"])
        return lines + [str(o) for o in t.get("sbatch_extra") or []]

    def kill_on_bad_exit(self, extra):
        """srun --kill-on-bad-exit=1 unless the profile says kill_on_bad_exit: false or srun_extra
        has its own: a rank that dies ends the step at once, instead of the others waiting in an
        MPI call until the wall time is used up."""
        if self.profile.get("kill_on_bad_exit", True) is False or \
                any(o.startswith(("--kill-on-bad-exit", "-K")) for o in extra):
            return []
        return ["--kill-on-bad-exit=1"]

    def trainer_command(self, hint):
        """srun's second part: the trainer component's options and finecast-trainer, which loads
        the plugin library the host loads and joins finecast's comm."""
        t, q = self.trainers, shlex.quote
        opts = ["--nodes=%d" % self.trainer_nodes, "--ntasks=%d" % t["count"],
                "--ntasks-per-node=%d" % self.trainers_per_node,
                "--cpus-per-task=%d" % t["cpus_per_task"]]
        extra = [str(o) for o in t.get("srun_extra") or []]
        if hint and not any(o.startswith("--hint") for o in extra):
            opts.append("--hint=%s" % hint)
        opts += self.kill_on_bad_exit(extra) + extra
        argv = ["env", "OMP_NUM_THREADS=%d" % t["cpus_per_task"], self.trainer_exe,
                "--comm", self.comm, "--plugin", self.plugin.library]
        command = " ".join(sh(a) for a in argv)
        if self.trainer_gpus:
            command = "%s/scripts/slurm/bind_gpu.sh %s" % (q(REPO_ROOT), command)
        return " ".join(q(o) for o in opts) + " " + command

    def trainer_report(self):
        t = self.trainers
        if self.trainer_gpus:
            return ('echo "finecast: trainers: %d finecast-trainer process(es) on partition %s, one '
                    'GPU each (bind_gpu.sh prints which, below), comm %s"'
                    % (t["count"], t["partition"], self.comm))
        return ('echo "finecast: trainers: %d finecast-trainer process(es) on partition %s, no GPU, '
                'comm %s"' % (t["count"], t["partition"], self.comm))

    def prepare_rundir(self, k):
        """Shell lines: the run directory, the namelists (finecast in &comin_nml), the inputs."""
        expand = bool(self.array)
        lines = ["# The run directory: the program's namelists (finecast in &comin_nml), its inputs.",
                 "rundir=%s" % sh(self.rundir), 'mkdir -p "$rundir"']
        for base, src, first, later in self.namelist_texts:
            text = first if k == 1 else later
            notes = []
            if base == self.comin_nml:
                notes.append("finecast as &comin_nml plugin_list(%d)" % self.plugin_index)
            restart = self.program.get("restart") or {}
            if k > 1 and restart and os.path.basename(str(restart["namelist"])) == base:
                notes.append("%s%%%s = %s (a restart chunk)" % (
                    restart["group"], restart["key"], sp.scalar_text(restart.get("value", ".true."))))
            lines.append("# %s: a copy of %s%s" % (base, src, ", with " + " and ".join(notes) if notes else ""))
            lines.append(heredoc('"$rundir"/%s' % sh(base), text, expand))
        for inp in [str(i) for i in self.program.get("inputs") or []]:
            path = self.absolute(inp)
            lines.append('ln -sfn %s "$rundir"/%s' % (sh(path), sh(os.path.basename(path.rstrip("/")))))
        lines += ['cd "$rundir"', ""]
        return lines


LIBRARY_FILE = plugin_setup.LIBRARY_STEM + ".so"


# ---------------------------------------------------------------- ICON's own run scripts

def library_dirs(library):
    """Where the plugin's libraries are: its folder, and LibTorch's lib folder when the build
    says where LibTorch is (finecast-build.txt of scripts/build_cuda.sh)."""
    dirs = [os.path.dirname(library)]
    marker = os.path.join(os.path.dirname(os.path.dirname(library)), build_check.MARKER)
    try:
        with open(marker) as f:
            torch_dir = next((line.split("=", 1)[1].strip() for line in f
                              if line.startswith("torch_dir=")), "")
    except OSError:
        torch_dir = ""
    # torch_dir is LibTorch's root or its CMake folder (<root>/share/cmake/Torch)
    for lib in (os.path.join(torch_dir, "lib"), os.path.join(torch_dir, "..", "..", "..", "lib")):
        if torch_dir and os.path.isdir(lib):
            dirs.append(os.path.normpath(lib))
            break
    return dirs


def holds_libcomin(folder):
    """Whether a folder holds a ComIn host library (libcomin.so*): finecast's own, ABI-compatible
    one in a build's lib/ (an installation keeps it apart, in lib/finecast/)."""
    try:
        return any(f.startswith("libcomin.so") for f in os.listdir(folder))
    except OSError:
        return False


def _unresolved(path, ld_path):
    """The dependencies of library `path` that ldd cannot find with LD_LIBRARY_PATH=ld_path."""
    env = dict(os.environ, LD_LIBRARY_PATH=ld_path)
    try:
        r = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.split("=>")[0].strip() for line in r.stdout.splitlines() if "=> not found" in line]


def library_environment(library, problems):
    """Shell lines that give an ICON run script finecast's libraries. ICON links ComIn's
    libcomin.so.0 and binds to the first one on LD_LIBRARY_PATH: a folder with finecast's own
    libcomin.so.0 there makes ICON die at start-up (undefined symbol of ComIn's Fortran modules),
    so such a folder never goes on it and is taken off an inherited one. The plugin finds its own
    libraries through its RUNPATH (checked here with ldd); LibTorch's folder of a build that names
    it (finecast-build.txt) goes on it, once (a chunk that the script submits inherits the
    environment of the one before)."""
    plugin_dir = os.path.dirname(library)
    shadowing = [plugin_dir] if holds_libcomin(plugin_dir) else []
    keep = [d for d in library_dirs(library) if d not in shadowing]
    if shadowing and os.path.isfile(library):
        inherited = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":")
                     if d and os.path.normpath(d) not in shadowing]
        module = os.path.join(plugin_dir, "libfinecast_trainer_module.so")
        for lib in [library] + ([module] if os.path.isfile(module) else []):
            needs = [n for n in _unresolved(lib, ":".join(keep + inherited))
                     if any(os.path.exists(os.path.join(d, n)) for d in shadowing)]
            if needs:
                problems.error(
                    "%s finds %s only through LD_LIBRARY_PATH=%s (no RUNPATH of its own leads "
                    "there), but that folder also holds finecast's own libcomin.so.0, which ICON "
                    "would load instead of ComIn's and die. Fix: use finecast's build folder as "
                    "built (its libraries carry a RUNPATH), or an installation (cmake --install: "
                    "finecast's libcomin.so.0 is kept apart in lib/finecast)"
                    % (lib, ", ".join(needs), ":".join(shadowing)))
    lines = []
    if shadowing:
        words = " | ".join("%s | %s/" % (shlex.quote(d), shlex.quote(d)) for d in shadowing)
        colon = " | ".join("*:%s:* | *:%s/:*" % (shlex.quote(d), shlex.quote(d)) for d in shadowing)
        lines += ["# finecast's own libcomin.so.0 is in %s: ICON must load ComIn's, so that folder is "
                  "not on LD_LIBRARY_PATH" % ", ".join(shadowing),
                  'case ":${LD_LIBRARY_PATH:-}:" in %s)' % colon,
                  '  finecast_path=""; IFS=: read -r -a finecast_dirs <<<"$LD_LIBRARY_PATH"',
                  '  for finecast_dir in "${finecast_dirs[@]}"; do',
                  '    case "$finecast_dir" in %s) ;; *) finecast_path="${finecast_path:+$finecast_path:}'
                  '$finecast_dir" ;; esac' % words,
                  "  done",
                  '  export LD_LIBRARY_PATH="$finecast_path" ;;',
                  "esac"]
    if keep:
        dirs = shlex.quote(":".join(keep))
        lines.append('case "${LD_LIBRARY_PATH:-}" in %s | %s:*) ;; *) export LD_LIBRARY_PATH=%s'
                     '"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;; esac' % (dirs, dirs, dirs))
    return lines


# The model's component's settings that the trainers' component takes too, when the profile's
# trainers.* do not set them: the QOS, the memory (one of --mem, --mem-per-cpu), exclusive nodes.
MODEL_OPTIONS_FOR_TRAINERS = ("--qos", "--mem", "--mem-per-cpu", "--exclusive")
MEMORY_OPTIONS = ("--mem", "--mem-per-cpu", "--mem-per-gpu")


def trainer_component(job, text, hint):
    """The trainers' component of an ICON run script's heterogeneous job: the profile's trainers.*
    with the script's own account, wall time, QOS, memory, exclusive nodes and srun --mpi.
    Returns ({"sbatch": [...], "launch": [...]}, a note or None)."""
    header = runscript.sbatch_options(text)
    for option, key in (("--account", "account"), ("--time", "time")):
        value = runscript.sbatch_value(text, option)
        if value:
            job.profile[key] = value
    sbatch = job.trainer_sbatch(hint)[1:]
    given = {o.split("=", 1)[0] for o in sbatch}
    taken = []
    for option, value in header:
        if option not in MODEL_OPTIONS_FOR_TRAINERS or option in given or \
                option in MEMORY_OPTIONS and given & set(MEMORY_OPTIONS):
            continue
        taken.append(option if value is None else "%s=%s" % (option, value))
        given.add(option)
    sbatch += taken
    launch = job.trainer_command(hint)
    mpi = runscript.start_mpi(text)
    if mpi and not any(str(o).startswith("--mpi") for o in job.trainers.get("srun_extra") or []):
        launch = "--mpi=%s %s" % (shlex.quote(mpi), launch)
        taken.append("srun --mpi=%s" % mpi)
    note = "the trainers' component takes the model's %s" % ", ".join(taken) if taken else None
    return {"sbatch": sbatch, "launch": [launch]}, note


def render_runscript(args, profile, profile_path, set_items, workdir, problems):
    """launch.sh --icon-runscript FILE: finecast into an ICON experiment run script (runscript.py)."""
    path = os.path.abspath(args.icon_runscript)
    for given, option in ((args.chain != 1, "--chain"), (args.array, "--array")):
        if given:
            problems.error("%s with --icon-runscript: the run script chains itself (its "
                           "finish.status and ${submit} lines, left as they are)" % option)
    why = textfile.not_a_file(path)
    if why:
        problems.error("--icon-runscript %s: %s" % (args.icon_runscript, why))
    if not profile.get("run"):
        problems.error("missing --run: the finecast plugin config that goes into &comin_nml")
    elif textfile.not_a_file(os.path.join(workdir, str(profile["run"]))):
        problems.error("run file '%s': %s" % (profile["run"],
                                                textfile.not_a_file(os.path.join(workdir, str(profile["run"])))))
    sp.validate_trainers(profile, problems)
    if problems.errors:
        problems.report()
        return 2
    program = profile.get("program") if isinstance(profile.get("program"), dict) else {}
    profile["program"] = program
    job = Job(profile, profile_path, args, set_items, workdir, problems)
    job.bin_dir = os.path.abspath(args.bin_dir) if args.bin_dir else \
        job.absolute(profile["bin_dir"]) if profile.get("bin_dir") else os.path.join(REPO_ROOT, "build", "bin")
    job.run = job.absolute(profile["run"])
    flat = []
    if isinstance(profile.get("set"), dict):
        flatten_set(profile["set"], "", flat, problems)
    job.overrides = Overrides(flat + set_items)
    if args.resume:
        job.overrides.set("checkpoint.resume", os.path.abspath(args.resume))
    check_overrides(job.overrides, problems)
    if job.external:
        job.set_external_overrides()
    if problems.errors:
        problems.report()
        return 2
    library = job.absolute(program["plugin_library"]) if program.get("plugin_library") else \
        os.path.join(os.path.dirname(job.bin_dir), "lib", LIBRARY_FILE)
    if not os.path.isfile(library):
        problems.warning("the finecast plugin %s is not built yet; the run will fail until it is "
                         "(or give --param program.plugin_library=PATH)" % library)
    job.plugin = plugin_setup.Plugin(library, job.run, [], "--run")
    job.config = plugin_setup.read_config(job.plugin, job.overrides.words(), job.bin_dir, problems)
    # The script chains itself (finish.status RESTART): as the chunks of --chain, each chunk
    # resumes from the newest checkpoint at the host's restart time, unless told otherwise
    # (--set checkpoint.resume=..., empty for a fresh start in every chunk).
    configured = plugin_setup.lookup(job.config, "checkpoint.resume", "") if job.config else ""
    if "checkpoint.resume" not in job.overrides.items and not sp.scalar_text(configured):
        job.overrides.set("checkpoint.resume", "auto")
    trainer = None
    if job.external:
        t = job.trainers
        job.trainer_exe = os.path.join(job.bin_dir, "finecast-trainer")
        job.trainer_nodes = sp.trainer_nodes(t)
        job.trainers_per_node = -(-t["count"] // job.trainer_nodes)
        job.comm = str(t.get("comm") or "finecast")
        job.check_trainer_gpus()
    env = library_environment(library, problems)
    if problems.errors:
        problems.report()
        return 2
    text = textfile.read(path)
    # The grid the plugin will read, resolved as the model will see it from its run directory.
    grid_notes = grid_check.check_runscript_grid(text, path, job.config, job.bin_dir, problems)
    device, _ = job.device_and_source()
    if not job.external and plugin_setup.gpus_used(device):
        if not args.no_cuda_check:
            job.check_cuda()
        gres = (runscript.sbatch_value(text, "--gres") or "") + (runscript.sbatch_value(text, "--gpus") or "") + \
            (runscript.sbatch_value(text, "--gpus-per-node") or "")
        if "gpu" in gres or re.search(r"[1-9]", gres):
            # ICON on GPUs runs one rank per GPU: rank 0's GPU is the in-host trainer's too.
            problems.warning("%s asks for GPUs (%s), so ICON runs on them, and finecast's in-host "
                             "trainer shares GPU 0 with ICON's rank 0, for memory and time. Fix: "
                             "trainers on GPUs of their own (--profile icon_gpu), or cap the "
                             "trainer's device memory (--set train.max_device_memory=BYTES)"
                             % (os.path.basename(path), gres))
    trainer_note = None
    if job.external:
        trainer, trainer_note = trainer_component(job, text, profile.get("hint") or "")
    words = [job.run] + job.overrides.words()
    options = " ".join(plugin_setup.quote_option(w) for w in words)
    for name, value in (profile.get("env") or {}).items():
        value = sp.scalar_text(value).replace("\\", "\\\\").replace('"', '\\"') \
            .replace("$", "\\$").replace("`", "\\`")
        env.append('export %s="${%s:-%s}"  # unless the script sets it' % (name, name, value))
    try:
        new, notes = runscript.add_finecast(
            text, path, str(program.get("plugin_name") or "finecast"), library, options,
            comm=job.comm if job.external else None, env_lines=env, trainer=trainer)
    except runscript.RunscriptError as e:
        problems.error(str(e))
    if not problems.report():
        return 2
    if trainer_note:
        notes.append(trainer_note)
    notes.extend(grid_notes)
    if args.output == "-":
        textfile.to_stdout(new)
        return 0
    target = os.path.abspath(args.output)
    if target == path and not os.path.exists(path + ".orig") and new != text:
        shutil.copy2(path, path + ".orig")
        notes.append("the original is kept as %s.orig" % os.path.basename(path))
    tmp = target + ".finecast-tmp"
    textfile.write(tmp, new)
    shutil.copymode(path, tmp)
    os.replace(tmp, target)
    sys.stderr.write("launch: %s: %s\n" % (target, "unchanged (finecast was already in it as "
                                            "asked)" if new == text else "finecast added"))
    for note in notes:
        sys.stderr.write("launch:   %s\n" % note)
    return 0


def run_main():
    """main(), with every unexpected failure as one `launch: error:` line and a hint instead of a
    traceback (FINECAST_LAUNCH_TRACEBACK=1 shows it); the exit status stays non-zero."""
    try:
        return main()
    except KeyboardInterrupt:
        sys.stderr.write("launch: error: interrupted\n")
        return 130
    except Exception as e:  # noqa: BLE001 -- the entry point: nothing may escape as a traceback
        if os.environ.get("FINECAST_LAUNCH_TRACEBACK"):
            raise
        if isinstance(e, OSError):
            what = "%s%s" % (e.strerror or e, ": %s" % e.filename if e.filename else "")
            sys.stderr.write("launch: error: %s\n  Fix: check that path (its folder exists, it is "
                             "readable, and writable where launch.sh writes)\n" % what)
        else:
            sys.stderr.write("launch: error: unexpected %s: %s\n  This is a bug of scripts/slurm: "
                             "rerun with FINECAST_LAUNCH_TRACEBACK=1 and report the traceback\n"
                             % (type(e).__name__, e))
        return 2


if __name__ == "__main__":
    sys.exit(run_main())
