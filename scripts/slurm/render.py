#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# Renders a finecast SLURM job script from a profile (configs/slurm/*.yaml) and a template
# (scripts/slurm/*.sbatch.in), after validating the profile against the node it asks for.
"""Render and validate a finecast SLURM job script.

Normally called by scripts/launch.sh; usable on its own:

  render.py --profile gpu --run configs/demo_host.yaml --output -

Exit status: 0 rendered, 2 invalid profile or arguments (every problem is listed).
"""

import argparse
import datetime
import difflib
import os
import re
import shlex
import sys

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(SCRIPT_DIR))
PROFILE_DIR = os.path.join(REPO_ROOT, "configs", "slurm")

try:
    import yaml
except ImportError:  # a login node's python3 without PyYAML: say what to do instead of a traceback
    sys.stderr.write(
        "launch: error: the Python module 'yaml' (PyYAML) is missing for %s.\n"
        "  Fix: load a Python that has it (e.g. 'module load python3'), install it\n"
        "  ('python3 -m pip install --user pyyaml' or Debian's python3-yaml), or point\n"
        "  FINECAST_PYTHON at such a python.\n" % sys.executable)
    sys.exit(2)

# One place for every key: its meaning doubles as the --help text and docs/slurm.md's table.
PROFILE_KEYS = {
    "kind": "gpu | cpu: what the partition's nodes offer",
    "program": "host (finecast-host RUN) | replay (finecast-replay --config RUN)",
    "run": "the finecast host run file or replay config",
    "account": "SLURM account (--account); empty = the cluster's default",
    "partition": "SLURM partition (--partition)",
    "nodes": "number of nodes (--nodes)",
    "ntasks_per_node": "MPI ranks per node (--ntasks-per-node)",
    "cpus_per_task": "cores per rank (--cpus-per-task); also OMP_NUM_THREADS and torch's threads",
    "cores_per_node": "physical cores of one node, for validation",
    "gpus_per_node": "GPUs of one node, for validation (gpu profiles)",
    "gpus": "{type, count}: GPUs per node to request (--gres=gpu:TYPE:COUNT)",
    "time": "wall-clock limit (--time), e.g. 01:00:00 or 1-00:00:00",
    "modules": "list of environment modules to load before the run",
    "env": "mapping of environment variables exported in the job",
    "set": "mapping of plugin config overrides passed as --set KEY=VALUE",
    "log_dir": "directory of the job logs and the rendered job scripts",
    "outputs": "directories searched at the end of the job for the files it wrote",
    "job_name": "SLURM job name; default finecast-<profile>",
    "workdir": "working directory of the job; default the directory launch.sh is called from",
    "bin_dir": "directory of finecast-host / finecast-replay; default <repo>/build/bin",
    "sbatch_extra": "list of extra sbatch options, e.g. ['--mem=0', '--exclusive']",
    "srun_extra": "list of extra srun options, e.g. ['--hint=nomultithread']",
}
GPU_KEYS = {"type", "count"}
PROGRAMS = {"host": "finecast-host", "replay": "finecast-replay"}
TIME_RE = re.compile(r"^(\d+-\d{1,2}(:\d{2}){0,2}|\d+(:\d{2}){0,2})$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SET_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


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
        return not self.errors


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


def load_profile(path):
    """(profile, None), or (None, message) for a file that cannot be read, is not UTF-8 text or
    is not YAML: the message names the file and where, never a traceback."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return None, "%s: cannot read the profile (%s)" % (path, e.strerror or e)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        return None, ("%s is not UTF-8 text: byte 0x%02x at line %d, column %d. Fix: save the "
                      "profile as UTF-8 (e.g. iconv -f latin1 -t utf-8)"
                      % (path, data[e.start], line, column))
    try:
        return yaml.safe_load(text), None
    except yaml.YAMLError as e:
        return None, "%s is not valid YAML: %s" % (path, e)


def parse_assignment(text, option):
    key, sep, value = text.partition("=")
    if not sep or not key:
        sys.stderr.write("launch: error: %s expects KEY=VALUE, got '%s'\n" % (option, text))
        sys.exit(2)
    return key, value


def apply_param(profile, key, raw):
    """--param a.b=V sets profile[a][b]; V is read as YAML so numbers stay numbers."""
    try:
        value = yaml.safe_load(raw) if raw != "" else ""
    except yaml.YAMLError as e:
        sys.stderr.write("launch: error: --param %s=%s: the value is not valid YAML (%s)\n"
                         % (key, raw, str(e).splitlines()[0]))
        sys.exit(2)
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


def flatten_set(mapping, prefix, out, problems):
    for key, value in mapping.items():
        full = "%s.%s" % (prefix, key) if prefix else str(key)
        if isinstance(value, dict):
            flatten_set(value, full, out, problems)
        elif isinstance(value, list):
            problems.error("set.%s: lists cannot be passed as --set overrides; put them in the "
                           "plugin config" % full)
        else:
            out.append((full, scalar_text(value)))


def positive_int(profile, key, problems, allow_zero=False):
    value = profile.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        problems.error("%s must be an integer, got %r" % (key, value))
        return None
    if value < 0 or (value == 0 and not allow_zero):
        problems.error("%s must be %s, got %d" % (key, ">= 0" if allow_zero else ">= 1", value))
        return None
    return value


def validate(profile, problems, workdir):
    """Checks keys, types and that the request fits the node; returns the normalised profile."""
    for key in profile:
        if key not in PROFILE_KEYS:
            close = difflib.get_close_matches(str(key), PROFILE_KEYS, n=1)
            hint = " (did you mean '%s'?)" % close[0] if close else ""
            problems.error("unknown key '%s'%s; allowed keys: %s"
                           % (key, hint, ", ".join(sorted(PROFILE_KEYS))))

    for key in ("kind", "program", "run", "partition", "nodes", "ntasks_per_node",
                "cpus_per_task", "cores_per_node", "time"):
        if profile.get(key) in (None, ""):
            problems.error("missing required key '%s' (%s)" % (key, PROFILE_KEYS[key]))

    kind = profile.get("kind")
    if kind not in (None, "", "gpu", "cpu"):
        problems.error("kind must be 'gpu' or 'cpu', got %r" % (kind,))
    program = profile.get("program")
    if program not in (None, "") and program not in PROGRAMS:
        problems.error("program must be one of %s, got %r" % (" | ".join(PROGRAMS), program))

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

    time = profile.get("time")
    if time not in (None, "") and not TIME_RE.match(str(time)):
        problems.error("time %r is not a SLURM time; use MM, HH:MM:SS or D-HH:MM:SS "
                       "(quote it in YAML: time: \"01:00:00\")" % (time,))

    gpus = profile.get("gpus")
    count = 0
    if gpus is not None:
        if not isinstance(gpus, dict):
            problems.error("gpus must be a mapping {type, count}, got %r" % (gpus,))
        else:
            for key in gpus:
                if key not in GPU_KEYS:
                    problems.error("unknown key 'gpus.%s'; allowed keys: count, type" % key)
            count = gpus.get("count", 0)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                problems.error("gpus.count must be an integer >= 0, got %r" % (count,))
                count = 0
            gtype = gpus.get("type", "")
            if gtype is None:
                gtype = ""
            if not re.match(r"^[A-Za-z0-9_\-.]*$", str(gtype)):
                problems.error("gpus.type %r is not a GRES type name (e.g. a100)" % (gtype,))
    device = scalar_text((profile.get("set") or {}).get("device", "")) \
        if isinstance(profile.get("set"), dict) else ""
    if kind == "cpu":
        if count > 0:
            problems.error("gpus.count = %d on a cpu profile: CPU partitions have no GPUs. Fix: "
                           "remove 'gpus' (or --param gpus.count=0), or use a gpu profile "
                           "(--profile gpu)" % count)
        if device.startswith("cuda"):
            problems.error("set.device = %s on a cpu profile, where no GPU exists. Fix: "
                           "--set device=cpu (or device=auto), or use --profile gpu" % device)
    if kind == "gpu":
        if count == 0:
            problems.error("a gpu profile needs gpus.count >= 1 (e.g. gpus: {type: a100, count: 4})")
        per_node = profile.get("gpus_per_node")
        if per_node is None:
            problems.error("missing required key 'gpus_per_node' (%s)" % PROFILE_KEYS["gpus_per_node"])
        elif isinstance(per_node, bool) or not isinstance(per_node, int) or per_node < 1:
            problems.error("gpus_per_node must be an integer >= 1, got %r" % (per_node,))
        elif count > per_node:
            problems.error("gpus.count = %d, but a node of partition '%s' has gpus_per_node = %d. "
                           "Fix: --param gpus.count=%d" % (count, profile.get("partition"),
                                                           per_node, per_node))
        if device == "cpu":
            problems.warning("set.device = cpu on a gpu profile: the GPUs will sit idle")

    for key in ("modules", "outputs", "sbatch_extra", "srun_extra"):
        value = profile.get(key)
        if value is not None and (not isinstance(value, list)
                                  or not all(isinstance(v, (str, int, float)) for v in value)):
            problems.error("%s must be a list of strings, got %r" % (key, value))
    for opt in profile.get("sbatch_extra") or []:
        if not str(opt).startswith("-"):
            problems.error("sbatch_extra entry %r is not an option (it must start with -)" % opt)
    for opt in profile.get("srun_extra") or []:
        if not str(opt).startswith("-"):
            problems.error("srun_extra entry %r is not an option (it must start with -)" % opt)

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

    run = profile.get("run")
    if run not in (None, ""):
        path = os.path.join(workdir, str(run))
        if not os.path.isfile(path):
            problems.error("run file '%s' does not exist (looked in %s). Fix: --run PATH to "
                           "your finecast %s" % (run, os.path.dirname(path) or ".",
                                                 "replay config" if program == "replay"
                                                 else "host run file"))


def render(profile, args, problems, workdir, profile_name, profile_path):
    kind = profile["kind"]
    program = profile["program"]
    template_name = "replay" if program == "replay" else kind
    template_path = os.path.join(SCRIPT_DIR, template_name + ".sbatch.in")
    with open(template_path) as f:
        template = f.read()

    def absolute(path):
        return os.path.normpath(os.path.join(workdir, str(path)))

    q = shlex.quote
    bin_dir = os.path.abspath(args.bin_dir) if args.bin_dir else \
        absolute(profile["bin_dir"]) if profile.get("bin_dir") else os.path.join(REPO_ROOT, "build", "bin")
    exe = os.path.join(bin_dir, PROGRAMS[program])
    if not os.access(exe, os.X_OK):
        problems.warning("%s is not built yet; the job will fail until it is "
                         "(cmake --build build --target %s)" % (exe, PROGRAMS[program]))
    run = absolute(profile["run"])
    log_dir = absolute(profile.get("log_dir") or "out/slurm")
    job_name = str(profile.get("job_name") or "finecast-" + profile_name)
    log_file = os.path.join(log_dir, "%s-%%j.out" % job_name)

    flat = []
    flatten_set(profile.get("set") or {}, "", flat, problems)
    # A later setting of the same key (command line over profile) replaces the earlier one.
    overrides = list(dict(flat).items())
    for key, value in overrides:
        if not SET_KEY_RE.match(key):
            problems.error("set: %r is not a config key (letters, digits, _ and .)" % key)

    argv = [exe] + ([run] if program == "host" else ["--config", run])
    for key, value in overrides:
        argv += ["--set", "%s=%s" % (key, value)]

    search = [absolute(d) for d in (profile.get("outputs") or [])]
    for key, value in overrides:
        if key in ("checkpoint.dir", "checkpoint.resume", "output.path", "output.dir") and value:
            search.append(absolute(value))
    search = sorted(set(search))

    gpus = profile.get("gpus") or {}
    count = gpus.get("count", 0) or 0
    gres = ""
    if count:
        gtype = str(gpus.get("type") or "")
        gres = "gpu:%s:%d" % (gtype, count) if gtype else "gpu:%d" % count

    def sbatch_lines():
        lines = []
        if profile.get("account"):
            lines.append("#SBATCH --account=%s" % profile["account"])
        lines.append("#SBATCH --partition=%s" % profile["partition"])
        lines.append("#SBATCH --nodes=%d" % profile["nodes"])
        lines.append("#SBATCH --ntasks-per-node=%d" % profile["ntasks_per_node"])
        lines.append("#SBATCH --cpus-per-task=%d" % profile["cpus_per_task"])
        if gres:
            lines.append("#SBATCH --gres=%s" % gres)
        lines.append("#SBATCH --time=%s" % profile["time"])
        lines.append("#SBATCH --job-name=%s" % job_name)
        lines.append("#SBATCH --output=%s" % log_file)
        for opt in profile.get("sbatch_extra") or []:
            lines.append("#SBATCH %s" % opt)
        return "\n".join(lines)

    modules = [str(m) for m in profile.get("modules") or []]
    if modules:
        module_block = "\n".join([
            "# 'module' is a shell function that batch shells may not have yet.",
            "if ! command -v module >/dev/null 2>&1 && [[ -f /etc/profile.d/modules.sh ]]; then",
            "  # shellcheck source=/dev/null",
            "  source /etc/profile.d/modules.sh",
            "fi",
            "module load " + " ".join(q(m) for m in modules)])
    else:
        module_block = "# No modules requested (profile key 'modules')."
    env = profile.get("env") or {}
    env_block = "\n".join("export %s=%s" % (name, q(scalar_text(value)))
                          for name, value in env.items()) or "# No extra environment (profile key 'env')."

    srun_opts = ["--nodes=%d" % profile["nodes"],
                 "--ntasks-per-node=%d" % profile["ntasks_per_node"],
                 "--cpus-per-task=%d" % profile["cpus_per_task"]]
    srun_opts += [str(o) for o in profile.get("srun_extra") or []]

    values = {
        "PROFILE": profile_path,
        "DATE": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        "SBATCH": sbatch_lines(),
        "MODULES": module_block,
        "ENV": env_block,
        "CPUS_PER_TASK": str(profile["cpus_per_task"]),
        "WORKDIR": q(workdir),
        "REPO": q(REPO_ROOT),
        "NTASKS": str(profile["nodes"] * profile["ntasks_per_node"]),
        "SRUN_OPTS": " ".join(q(o) for o in srun_opts),
        "COMMAND": " ".join(q(a) for a in argv),
        "RUN": q(run),
        "SEARCH": " ".join(q(d) for d in search),
        "LOG_FILE": q(log_file),
        "GPUS_PER_NODE": str(count),
    }

    def substitute(match):
        return values[match.group(1)]

    text = re.sub(r"@([A-Z_]+)@", substitute, template)
    return text, {"log_file": log_file, "log_dir": log_dir, "job_name": job_name}


def main():
    parser = argparse.ArgumentParser(
        prog="render.py",
        description="Render and validate a finecast SLURM job script from a profile.",
        epilog="Profile keys:\n" + "\n".join("  %-16s %s" % kv for kv in PROFILE_KEYS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", required=True,
                        help="gpu | cpu | replay (configs/slurm/NAME.yaml) or a profile path")
    parser.add_argument("--run", help="host run file / replay config (overrides the profile's 'run')")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="plugin config override passed to the program (repeatable)")
    parser.add_argument("--resume", metavar="DIR",
                        help="continue from the newest valid checkpoint in DIR "
                             "(= --set checkpoint.resume=DIR)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="profile override, e.g. account=bb1234 or gpus.count=1 (repeatable)")
    parser.add_argument("--bin-dir", help="directory of the finecast programs (default <repo>/build/bin)")
    parser.add_argument("--output", default="-", help="where to write the job script (- = stdout)")
    parser.add_argument("--summary", help="write log_file=, log_dir=, job_name= lines here")
    args = parser.parse_args()

    profile_path = resolve_profile(args.profile)
    if not os.path.isfile(profile_path):
        sys.stderr.write("launch: error: profile '%s' not found (%s); known profiles: %s, "
                         "or give a path to a profile YAML\n"
                         % (args.profile, profile_path, ", ".join(known_profiles()) or "none"))
        return 2
    profile, error = load_profile(profile_path)
    if error:
        sys.stderr.write("launch: error: %s\n" % error)
        return 2
    if profile is None:
        profile = {}
    if not isinstance(profile, dict):
        sys.stderr.write("launch: error: %s: a profile is a mapping of keys, got %s\n"
                         % (profile_path, type(profile).__name__))
        return 2

    for item in args.param:
        key, raw = parse_assignment(item, "--param")
        apply_param(profile, key, raw)
    if args.run:
        profile["run"] = os.path.abspath(args.run)
    overrides = profile.get("set")
    if args.set or args.resume:
        if overrides is None:
            overrides = profile["set"] = {}
        if isinstance(overrides, dict):
            for item in args.set:
                key, value = parse_assignment(item, "--set")
                overrides[key] = value
            if args.resume:
                overrides["checkpoint.resume"] = os.path.abspath(args.resume)

    workdir = os.path.abspath(str(profile.get("workdir") or os.getcwd()))
    problems = Problems(profile_path)
    validate(profile, problems, workdir)
    if args.resume and not os.path.isdir(args.resume):
        problems.error("--resume %s: no such directory (it must hold the checkpoints of an "
                       "earlier run: its checkpoint.dir)" % args.resume)
    if problems.errors:
        problems.report()
        return 2

    name = os.path.splitext(os.path.basename(profile_path))[0]
    text, meta = render(profile, args, problems, workdir, name, profile_path)
    if not problems.report():
        return 2
    if args.output == "-":
        sys.stdout.write(text)
    else:
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        with open(args.output, "w") as f:
            f.write(text)
        os.chmod(args.output, 0o755)
    if args.summary:
        with open(args.summary, "w") as f:
            for key, value in meta.items():
                f.write("%s=%s\n" % (key, value))
    return 0


if __name__ == "__main__":
    sys.exit(main())
