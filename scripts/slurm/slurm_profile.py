# SPDX-License-Identifier: BSD-3-Clause
"""A SLURM profile (configs/slurm/*.yaml): its keys, loading with --param overrides, and the
checks that need nothing but the profile (types, the node's cores and GPUs, files that must
exist). The checks that read the run's own files are in plugin_setup.py and build_check.py."""

import difflib
import os
import re
import sys

import yaml

import textfile

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(SCRIPT_DIR))
PROFILE_DIR = os.path.join(REPO_ROOT, "configs", "slurm")

# One place for every key: its meaning doubles as the --help text and docs/slurm.md's table.
PROFILE_KEYS = {
    "kind": "gpu | cpu: what the partition's nodes offer",
    "program": "host (finecast-host RUN) | replay (finecast-replay --config RUN) | a mapping "
               "{executable, args, namelists, ...} for ICON or any ComIn host (see program.*)",
    "run": "the finecast host run file (host), replay config (replay), or the finecast plugin "
           "config that goes into &comin_nml (an executable program)",
    "account": "SLURM account (--account); empty = the cluster's default (warned about)",
    "partition": "SLURM partition (--partition)",
    "nodes": "number of nodes (--nodes)",
    "ntasks_per_node": "MPI ranks per node (--ntasks-per-node)",
    "cpus_per_task": "cores per rank (--cpus-per-task); also OMP_NUM_THREADS and torch's threads",
    "cores_per_node": "physical cores of one node, for validation",
    "gpus_per_node": "GPUs of one node, for validation (gpu profiles)",
    "gpus": "{type, count}: GPUs per node to request (--gres=gpu:TYPE:COUNT); count 'auto' = "
            "what the plugin config uses (when its device is cuda or auto: its trainer ranks on "
            "the busiest node, train.ranks and train.placement; else 0)",
    "time": "wall-clock limit (--time), e.g. 01:00:00 or 1-00:00:00; per chunk with --chain",
    "mem": "memory per node (--mem), e.g. 200G; 0 = all of the node's memory; empty = the "
           "partition's default",
    "hint": "nomultithread (one rank thread per physical core; --hint for sbatch and srun) | "
            "multithread | compute_bound | memory_bound | empty",
    "modules": "environment modules: a list to load, or {purge: true|false, use: [paths], load: "
               "[names]} (module purge, then module use for each path, then module load; the loads "
               "are checked where 'module' exists)",
    "env": "mapping of environment variables exported in the job",
    "prolog": "list of shell lines run before the program, e.g. ['ulimit -s unlimited']",
    "set": "mapping of plugin config overrides passed as --set KEY=VALUE",
    "log_dir": "directory of the job logs and the rendered job scripts",
    "outputs": "directories searched at the end of the job for the files it wrote",
    "task_dir": "with --array: each task's output folder, containing {task}; default "
                "out/<job_name>/task_{task}",
    "job_name": "SLURM job name; default finecast-<profile>",
    "workdir": "working directory of the job; default the directory launch.sh is called from",
    "bin_dir": "directory of finecast-host / finecast-replay; default <repo>/build/bin",
    "sbatch_extra": "list of extra sbatch options, e.g. ['--exclusive']",
    "srun_extra": "list of extra srun options, e.g. ['--cpu-bind=cores']",
    "kill_on_bad_exit": "true (default): srun --kill-on-bad-exit=1, so one rank that fails ends "
                        "the step instead of leaving the others waiting in MPI until the wall time; "
                        "false: srun's default",
    "trainers": "{count, partition, ...}: finecast's trainers as finecast-trainer processes in a "
                "component of their own (train.placement: external), a heterogeneous job: the "
                "keys above are then the host's component (see trainers.*)",
}
# trainers: {...}: the trainer component of a heterogeneous job (train.placement: external).
TRAINER_KEYS = {
    "count": "finecast-trainer processes (train.ranks), one GPU each on a gpu partition; "
             "0 = no trainer component (the trainers are host ranks)",
    "kind": "gpu | cpu: what the trainer partition's nodes offer; default gpu",
    "partition": "SLURM partition of the trainer component",
    "nodes": "its nodes; default 'auto': as few as hold count trainers (one per GPU, or as "
             "many as fit cores_per_node)",
    "cpus_per_task": "cores per trainer process (--cpus-per-task); also its OMP_NUM_THREADS",
    "cores_per_node": "physical cores of one trainer node, for validation",
    "gpus_per_node": "GPUs of one trainer node, for validation (kind gpu)",
    "gpu_type": "GRES type of the GPUs, e.g. a100 (--gres=gpu:a100:N); empty = --gres=gpu:N",
    "mem": "memory per trainer node (--mem); empty = the partition's default",
    "comm": "finecast's comm name (the plugin entry's comm, finecast-trainer --comm); default: "
            "the one the run file gives finecast, else finecast",
    "sbatch_extra": "list of extra sbatch options of the trainer component, e.g. ['--constraint=a100_80']",
    "srun_extra": "list of extra srun options of the trainer processes",
}
# program: {...} for ICON or any other executable that loads ComIn plugins.
PROGRAM_KEYS = {
    "executable": "the host program (path, relative to workdir, or a command name on PATH)",
    "args": "list of its arguments ({task} = the array task id)",
    "namelists": "namelist files copied into the run directory (finecast goes into &comin_nml)",
    "comin_namelist": "which of the namelists gets finecast's &comin_nml entry; default: the only "
                      "one, or the atmosphere namelist that icon_master.namelist names",
    "inputs": "files or folders linked into the run directory (grids, external data, ...)",
    "rundir": "the run directory (the program runs there); default out/<job_name>, with "
              "--array the task_dir",
    "restart": "{namelist, group, key, value}: set in chunks 2.. of a --chain (ICON: "
               "{namelist: icon_master.namelist, group: master_nml, key: lrestart, value: .true.})",
    "plugin_library": "the finecast plugin; default <bin_dir>/../lib/libfinecast_comin.so",
    "plugin_name": "finecast's plugin_list name; default finecast",
}
RESTART_KEYS = ("namelist", "group", "key", "value")
MODULE_KEYS = {"purge": "true: module purge first (a clean environment, the same on every node)",
               "use": "module paths: module use PATH for each, before the loads",
               "load": "modules to load, in order"}
COMM_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
PROGRAMS = {"host": "finecast-host", "replay": "finecast-replay"}
GPU_KEYS = {"type", "count"}
HINTS = ("", "nomultithread", "multithread", "compute_bound", "memory_bound")
TIME_RE = re.compile(r"^(\d+-\d{1,2}(:\d{2}){0,2}|\d+(:\d{2}){0,2})$")
MEM_RE = re.compile(r"^\d+[KMGT]?$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TASK = "{task}"

# Upper bounds of every number a launch takes. A typo (10000000 nodes) or a number too large for
# SLURM's or Python's integers (--chain 3000000000 overflowed the chain's date arithmetic) is an
# error naming the key and the range, before anything is written. Generous: the largest machines
# (Fugaku: 158,976 nodes; nodes of 4 x 128 cores, 8 GPUs) fit well inside.
LIMITS = {
    "nodes": (1, 200000),
    "ntasks_per_node": (1, 4096),
    "cpus_per_task": (1, 4096),
    "cores_per_node": (1, 4096),
    "gpus_per_node": (1, 64),
    "gpus.count": (0, 64),
    "trainers.count": (0, 100000),
    "trainers.nodes": (1, 200000),
    "trainers.cpus_per_task": (1, 4096),
    "trainers.cores_per_node": (1, 4096),
    "trainers.gpus_per_node": (1, 64),
}
MAX_CHAIN = 1000             # --chain: each chunk is a job script and a submission of its own
MAX_ARRAY_ID = 4000000       # --array: SLURM's MaxArraySize is at most 4000001 (ids 0..4000000)
MAX_TIME_SECONDS = 365 * 86400   # time: one year per job (chunk)
MAX_MEM_MB = 64 * 1024 * 1024    # mem: 64T per node


class Problems:
    """Collects every validation error so the user fixes them in one round."""

    def __init__(self, source):
        self.source = source
        self.errors = []
        self.warnings = []

    def error(self, text):
        self.errors.append(text)

    def warning(self, text):
        self.warnings.append(text)

    def report(self):
        for w in self.warnings:
            sys.stderr.write("launch: warning: %s\n" % w)
        for e in self.errors:
            sys.stderr.write("launch: error: %s: %s\n" % (self.source, e))
        self.warnings = []
        return not self.errors


def fail(text):
    sys.stderr.write("launch: error: %s\n" % text)
    sys.exit(2)


def resolve_profile(name):
    """A profile name (gpu) maps to configs/slurm/gpu.yaml; anything with a / or .yaml is a path."""
    if "/" in name or name.endswith((".yaml", ".yml")):
        return os.path.abspath(name)
    return os.path.join(PROFILE_DIR, name + ".yaml")


def known_profiles():
    try:
        return sorted(f[:-5] for f in os.listdir(PROFILE_DIR) if f.endswith(".yaml"))
    except OSError:
        return []


def load(name):
    path = resolve_profile(name)
    if not os.path.isfile(path):
        fail("profile '%s' not found (%s); known profiles: %s, or give a path to a profile YAML"
             % (name, path, ", ".join(known_profiles()) or "none"))
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail("%s: cannot read the profile (%s)" % (path, e.strerror or e))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        # A clear error instead of a traceback: where the first byte that is no UTF-8 sits.
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        fail("%s is not UTF-8 text: byte 0x%02x at line %d, column %d. Fix: save the profile "
             "as UTF-8 (e.g. iconv -f latin1 -t utf-8)" % (path, data[e.start], line, column))
    try:
        profile = yaml.safe_load(text)
    except yaml.YAMLError as e:
        fail("%s is not valid YAML: %s" % (path, e))
    except ValueError as e:  # an integer of thousands of digits
        fail("%s: a value is too large (%s)" % (path, e))
    if profile is None:
        profile = {}
    if not isinstance(profile, dict):
        fail("%s: a profile is a mapping of keys, got %s" % (path, type(profile).__name__))
    return profile, path


def parse_assignment(text, option):
    key, sep, value = text.partition("=")
    if not sep or not key:
        fail("%s expects KEY=VALUE, got '%s'" % (option, text))
    return key, value


def apply_param(profile, key, raw):
    """--param a.b=V sets profile[a][b]; V is read as YAML so numbers stay numbers."""
    try:
        value = yaml.safe_load(raw) if raw != "" else ""
    except yaml.YAMLError as e:
        fail("--param %s=%s: the value is not valid YAML (%s)" % (key, raw, str(e).splitlines()[0]))
    except ValueError:  # an integer of thousands of digits
        fail("--param %s: the value has %d characters; no profile key takes a number that large"
             % (key, len(raw)))
    parts = key.split(".")
    node = profile
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value


def scalar_text(value):
    """YAML scalars as the plugin's --set parser reads them (true, not True)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def _unknown_keys(mapping, allowed, prefix, problems):
    for key in mapping:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = " (did you mean '%s%s'?)" % (prefix, close[0]) if close else ""
            problems.error("unknown key '%s%s'%s; allowed keys: %s"
                           % (prefix, key, hint, ", ".join(sorted(allowed))))


def bounded_int(value, key, problems):
    """value as an integer within LIMITS[key], else None with an error naming the range."""
    low, high = LIMITS[key]
    if isinstance(value, bool) or not isinstance(value, int):
        problems.error("%s must be an integer from %d to %d, got %r" % (key, low, high, value))
        return None
    if value < low or value > high:
        problems.error("%s must be from %d to %d, got %d" % (key, low, high, value))
        return None
    return value


def positive_int(profile, key, problems):
    return bounded_int(profile.get(key), key, problems)


def time_seconds(text):
    """A SLURM time (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) in seconds, or None."""
    text = str(text)
    if not TIME_RE.match(text):
        return None
    if len(text) > 24:  # more digits than any real limit (and than int() takes at once)
        return MAX_TIME_SECONDS + 1
    days, _, rest = text.rpartition("-")
    parts = [int(x) for x in rest.split(":")]
    if days:
        parts += [0] * (3 - len(parts))      # D-HH, D-HH:MM
        h, m, s = parts
    elif len(parts) == 3:
        h, m, s = parts
    else:
        h, m, s = 0, parts[0], parts[1] if len(parts) > 1 else 0
    return ((int(days or 0) * 24 + h) * 60 + m) * 60 + s


def mem_megabytes(text):
    """A SLURM memory size (a number with K, M (default), G or T) in megabytes."""
    number, unit = re.match(r"^(\d+)([KMGT]?)$", str(text)).groups()
    if len(number) > 24:
        return MAX_MEM_MB + 1
    return int(number) * {"K": 1.0 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[unit]


def check_time(value, key, problems):
    if value in (None, ""):
        return
    seconds = time_seconds(value)
    if seconds is None:
        problems.error("%s %r is not a SLURM time; use MM, HH:MM:SS or D-HH:MM:SS "
                       "(quote it in YAML: time: \"01:00:00\")" % (key, value))
    elif seconds > MAX_TIME_SECONDS:
        problems.error("%s %r is more than the largest allowed, 365-00:00:00 (one year)" % (key, value))


def check_mem(value, key, problems):
    if value in (None, ""):
        return
    if not MEM_RE.match(str(value)):
        problems.error("%s %r is not a SLURM memory size; use e.g. 0 (all of the node's), "
                       "240G or 512000M" % (key, value))
    elif mem_megabytes(value) > MAX_MEM_MB:
        problems.error("%s %r is more than the largest allowed, 64T per node" % (key, value))


def module_spec(value, problems=None):
    """The profile's modules as (purge, [use paths], [loads]); a list is the loads alone."""
    if value in (None, "", []):
        return False, [], []
    if isinstance(value, dict):
        if problems is not None:
            _unknown_keys(value, MODULE_KEYS, "modules.", problems)
            if not isinstance(value.get("purge", False), bool):
                problems.error("modules.purge must be true or false, got %r" % (value.get("purge"),))
        sink = problems if problems is not None else Problems("")
        return (value.get("purge") is True, _string_list(value.get("use"), "modules.use", sink),
                _string_list(value.get("load"), "modules.load", sink))
    sink = problems if problems is not None else Problems("")
    return False, [], _string_list(value, "modules", sink)


def is_executable_program(profile):
    return isinstance(profile.get("program"), dict)


def _string_list(value, key, problems):
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        problems.error("%s must be a list of strings, got %r" % (key, value))
        return []
    return [str(v) for v in value]


def validate_program(program, problems, workdir):
    """program: {executable, ...}: the keys, the files that must exist."""
    _unknown_keys(program, PROGRAM_KEYS, "program.", problems)
    exe = program.get("executable")
    if exe in (None, ""):
        problems.error("program.executable is empty: give the host program, e.g. "
                       "--param program.executable=$HOME/icon/build/bin/icon")
    elif not isinstance(exe, str):
        problems.error("program.executable must be a path, got %r" % (exe,))
    _string_list(program.get("args"), "program.args", problems)
    namelists = _string_list(program.get("namelists"), "program.namelists", problems)
    _string_list(program.get("inputs"), "program.inputs", problems)
    names = {}
    for nml in namelists:
        path = os.path.join(workdir, nml)
        if not os.path.isfile(path):
            problems.error("program.namelists: '%s' does not exist (looked in %s)"
                           % (nml, os.path.dirname(path) or "."))
        base = os.path.basename(nml)
        if base in names:
            problems.error("program.namelists: '%s' and '%s' would both be %s in the run "
                           "directory" % (names[base], nml, base))
        names[base] = nml
    for inp in _string_list(program.get("inputs"), "program.inputs", problems):
        if not os.path.exists(os.path.join(workdir, os.path.expanduser(inp))):
            problems.error("program.inputs: '%s' does not exist" % inp)
    cn = program.get("comin_namelist")
    if cn not in (None, "") and os.path.basename(str(cn)) not in names:
        problems.error("program.comin_namelist '%s' is not one of program.namelists (%s)"
                       % (cn, ", ".join(namelists) or "none"))
    restart = program.get("restart")
    if restart not in (None, "", {}):
        if not isinstance(restart, dict):
            problems.error("program.restart must be a mapping {namelist, group, key, value}, "
                           "got %r" % (restart,))
        else:
            _unknown_keys(restart, RESTART_KEYS, "program.restart.", problems)
            for k in ("namelist", "group", "key"):
                if restart.get(k) in (None, ""):
                    problems.error("program.restart.%s is missing (e.g. {namelist: "
                                   "icon_master.namelist, group: master_nml, key: lrestart, "
                                   "value: .true.})" % k)
    for key in ("rundir", "plugin_library", "plugin_name"):
        if program.get(key) is not None and not isinstance(program.get(key), str):
            problems.error("program.%s must be a string, got %r" % (key, program.get(key)))


def has_trainers(profile):
    """Does the profile ask for a trainer component (trainers.count >= 1)?"""
    t = profile.get("trainers")
    return isinstance(t, dict) and isinstance(t.get("count"), int) and \
        not isinstance(t.get("count"), bool) and t["count"] > 0


def trainer_nodes(trainers):
    """The trainer component's nodes: trainers.nodes, or 'auto' as few as hold every trainer."""
    count = trainers["count"]
    nodes = trainers.get("nodes", "auto")
    if nodes not in (None, "", "auto"):
        return nodes
    if trainers.get("kind", "gpu") == "gpu":
        per_node = trainers.get("gpus_per_node") or 1
    else:
        per_node = max(1, (trainers.get("cores_per_node") or 1) // (trainers.get("cpus_per_task") or 1))
    return -(-count // per_node)


def validate_trainers(profile, problems):
    """trainers: {...}: the trainer component of a heterogeneous job; every key, and that the
    trainers fit its nodes (one GPU each on a gpu partition)."""
    t = profile.get("trainers")
    if t is None:
        return
    if not isinstance(t, dict):
        problems.error("trainers must be a mapping {count, partition, cpus_per_task, ...} "
                       "(configs/slurm/external.yaml), got %r" % (t,))
        return
    _unknown_keys(t, TRAINER_KEYS, "trainers.", problems)
    count = t.get("count", 0)
    if bounded_int(count, "trainers.count", problems) is None:
        return
    if count == 0:
        return
    kind = t.get("kind", "gpu")
    if kind not in ("gpu", "cpu"):
        problems.error("trainers.kind must be 'gpu' or 'cpu', got %r" % (kind,))
    required = ["partition", "cpus_per_task", "cores_per_node"] + \
        (["gpus_per_node"] if kind == "gpu" else [])
    for key in required:
        if t.get(key) in (None, ""):
            problems.error("missing required key 'trainers.%s' (%s). Fix: --param trainers.%s=..."
                           % (key, TRAINER_KEYS[key], key))
    ok = True
    for key in ("cpus_per_task", "cores_per_node", "gpus_per_node"):
        value = t.get(key)
        if value in (None, ""):
            ok = False
        elif bounded_int(value, "trainers." + key, problems) is None:
            ok = False
    nodes = t.get("nodes", "auto")
    if nodes not in (None, "", "auto"):
        if isinstance(nodes, bool) or not isinstance(nodes, int):
            problems.error("trainers.nodes must be 'auto' or an integer from 1 to %d, got %r"
                           % (LIMITS["trainers.nodes"][1], nodes))
            return
        if bounded_int(nodes, "trainers.nodes", problems) is None:
            return
    gtype = t.get("gpu_type") or ""
    if not re.match(r"^[A-Za-z0-9_\-.]*$", str(gtype)):
        problems.error("trainers.gpu_type %r is not a GRES type name (e.g. a100)" % (gtype,))
    comm = t.get("comm")
    if comm not in (None, "") and not COMM_RE.match(str(comm)):
        problems.error("trainers.comm %r is not a comm name (letters, digits, _ . -)" % (comm,))
    check_mem(t.get("mem"), "trainers.mem", problems)
    for key in ("sbatch_extra", "srun_extra"):
        for opt in _string_list(t.get(key), "trainers." + key, problems):
            if not opt.startswith("-"):
                problems.error("trainers.%s entry %r is not an option (it must start with -)"
                               % (key, opt))
    if not ok or kind not in ("gpu", "cpu"):
        return
    cpus, cores = t["cpus_per_task"], t["cores_per_node"]
    if cpus > cores:
        problems.error("trainers.cpus_per_task = %d alone exceeds trainers.cores_per_node = %d of "
                       "partition '%s'. Fix: --param trainers.cpus_per_task=%d"
                       % (cpus, cores, t.get("partition"), cores))
        return
    n = trainer_nodes(t)
    if n > count:
        problems.error("trainers.nodes = %d for trainers.count = %d: a node would hold no trainer. "
                       "Fix: --param trainers.nodes=%d (or auto)" % (n, count, count))
        return
    per_node = -(-count // n)
    if kind == "gpu" and per_node > t["gpus_per_node"]:
        need = -(-count // t["gpus_per_node"])
        problems.error("trainers.count = %d on %d node(s) puts %d trainers on a node of partition "
                       "'%s', but each needs a GPU of its own and a node has trainers.gpus_per_node "
                       "= %d. Fix: --param trainers.nodes=%d (or auto)"
                       % (count, n, per_node, t.get("partition"), t["gpus_per_node"], need))
    if per_node * cpus > cores:
        fit = max(1, cores // cpus)
        problems.error("trainers: %d trainers x trainers.cpus_per_task = %d x %d = %d cores on a "
                       "node, but trainers.cores_per_node = %d. Fix: --param trainers.cpus_per_task=%d "
                       "or --param trainers.nodes=%d"
                       % (per_node, per_node, cpus, per_node * cpus, cores, max(1, cores // per_node),
                          -(-count // fit)))


def validate(profile, problems, workdir):
    """Checks keys, types and that the request fits the node."""
    _unknown_keys(profile, PROFILE_KEYS, "", problems)
    for key in ("kind", "program", "run", "partition", "nodes", "ntasks_per_node",
                "cpus_per_task", "cores_per_node", "time"):
        if profile.get(key) in (None, ""):
            if key == "run" and is_executable_program(profile):
                problems.error("missing required key 'run': the finecast plugin config that goes "
                               "into &comin_nml (--run finecast.yaml)")
            else:
                problems.error("missing required key '%s' (%s)" % (key, PROFILE_KEYS[key]))

    kind = profile.get("kind")
    if kind not in (None, "", "gpu", "cpu"):
        problems.error("kind must be 'gpu' or 'cpu', got %r" % (kind,))
    program = profile.get("program")
    if isinstance(program, dict):
        validate_program(program, problems, workdir)
    elif program not in (None, "") and program not in PROGRAMS:
        problems.error("program must be one of %s, or a mapping {executable: PATH, args: [...], "
                       "namelists: [...]} for ICON or another ComIn host "
                       "(configs/slurm/icon.yaml), got %r" % (" | ".join(PROGRAMS), program))

    if "nodes" in profile:
        positive_int(profile, "nodes", problems)
    ntasks = positive_int(profile, "ntasks_per_node", problems) if "ntasks_per_node" in profile else None
    cpus = positive_int(profile, "cpus_per_task", problems) if "cpus_per_task" in profile else None
    cores = positive_int(profile, "cores_per_node", problems) if "cores_per_node" in profile else None
    if cpus and cores and cpus > cores:
        problems.error("cpus_per_task = %d alone exceeds cores_per_node = %d of partition '%s'. "
                       "Fix: --param cpus_per_task=%d" % (cpus, cores, profile.get("partition"), cores))
    elif ntasks and cpus and cores and ntasks * cpus > cores:
        problems.error(
            "ntasks_per_node x cpus_per_task = %d x %d = %d cores, but a node of partition '%s' "
            "has cores_per_node = %d. Fix: lower ntasks_per_node to %d (--param ntasks_per_node=%d) "
            "or cpus_per_task to %d (--param cpus_per_task=%d), or add nodes."
            % (ntasks, cpus, ntasks * cpus, profile.get("partition"), cores,
               cores // cpus, cores // cpus, max(cores // ntasks, 1), max(cores // ntasks, 1)))

    check_time(profile.get("time"), "time", problems)
    check_mem(profile.get("mem"), "mem", problems)
    hint = profile.get("hint")
    if hint is not None and hint not in HINTS:
        problems.error("hint must be one of %s (or empty), got %r" % (", ".join(HINTS[1:]), hint))

    gpus = profile.get("gpus")
    if gpus is not None:
        if not isinstance(gpus, dict):
            problems.error("gpus must be a mapping {type, count}, got %r" % (gpus,))
        else:
            _unknown_keys(gpus, GPU_KEYS, "gpus.", problems)
            count = gpus.get("count", "auto")
            if count != "auto":
                if isinstance(count, bool) or not isinstance(count, int):
                    problems.error("gpus.count must be 'auto' or an integer from 0 to %d, got %r"
                                   % (LIMITS["gpus.count"][1], count))
                else:
                    bounded_int(count, "gpus.count", problems)
            gtype = gpus.get("type", "")
            if gtype is None:
                gtype = ""
            if not re.match(r"^[A-Za-z0-9_\-.]*$", str(gtype)):
                problems.error("gpus.type %r is not a GRES type name (e.g. a100)" % (gtype,))
    if kind == "gpu":
        per_node = profile.get("gpus_per_node")
        if per_node is None:
            problems.error("missing required key 'gpus_per_node' (%s)" % PROFILE_KEYS["gpus_per_node"])
        else:
            bounded_int(per_node, "gpus_per_node", problems)

    for key in ("outputs", "sbatch_extra", "srun_extra", "prolog"):
        _string_list(profile.get(key), key, problems)
    modules = profile.get("modules")
    if modules is not None and not isinstance(modules, (list, dict)):
        problems.error("modules must be a list of modules to load, or a mapping {purge: true, "
                       "use: [paths], load: [modules]}, got %r" % (modules,))
    elif modules is not None:
        module_spec(modules, problems)
    kill = profile.get("kill_on_bad_exit", True)
    if not isinstance(kill, bool):
        problems.error("kill_on_bad_exit must be true or false, got %r" % (kill,))
    for key in ("sbatch_extra", "srun_extra"):
        for opt in profile.get(key) or []:
            if isinstance(opt, str) and not opt.startswith("-"):
                problems.error("%s entry %r is not an option (it must start with -)" % (key, opt))
    for opt in profile.get("sbatch_extra") or []:
        if isinstance(opt, str) and opt.split("=")[0] in ("--array", "--dependency", "-a", "-d"):
            problems.error("sbatch_extra %r: use launch.sh --array / --chain instead" % opt)

    env = profile.get("env")
    if env is not None:
        if not isinstance(env, dict):
            problems.error("env must be a mapping NAME: value, got %r" % (env,))
        else:
            for name, value in env.items():
                if not ENV_NAME_RE.match(str(name)):
                    problems.error("env: %r is not a valid environment variable name" % (name,))
                if isinstance(value, (dict, list)):
                    problems.error("env.%s must be a scalar, got %r" % (name, value))
    overrides = profile.get("set")
    if overrides is not None and not isinstance(overrides, dict):
        problems.error("set must be a mapping KEY: value, got %r" % (overrides,))
    task_dir = profile.get("task_dir")
    if task_dir not in (None, "") and TASK not in str(task_dir):
        problems.error("task_dir %r must contain {task}, so that array tasks do not share a "
                       "folder" % (task_dir,))

    validate_trainers(profile, problems)

    run = profile.get("run")
    if run not in (None, ""):
        path = os.path.join(workdir, str(run))
        why = textfile.not_a_file(path)
        if why:
            what = {"replay": "replay config", "host": "host run file"}.get(
                program if isinstance(program, str) else "", "plugin config")
            problems.error("run file '%s': %s (looked in %s). Fix: --run PATH to "
                           "your finecast %s" % (run, why, os.path.dirname(path) or ".", what))
