# SPDX-License-Identifier: BSD-3-Clause
"""Whether finecast can use a run's grid, checked before the job waits in the queue.

The plugin reads its grid from the config's grid.file, relative to the directory the program runs
in. In an ICON run script that is the experiment directory the script changes to before
`${START} ${MODEL}` (`cd ${EXPDIR}`, or exec.iconrun's make_and_change_to_experiment_dir:
${experiments_dir}/${EXPNAME}); the script links the grids there when it runs (exec.iconrun:
`add_link_file ${HGRIDDIR}/${gridfile} ./` with HGRIDDIR=${grids_folder:-${basedir}/grids} for
each of atmo_dyn_grids, or an `ln -s SOURCE ...` of its own), so a grid that is not there yet is
looked for where the script links it from. ICON's own grid is the first dynamics_grid_filename of
&grid_nml in the atmosphere namelist.

The script's variables are evaluated by bash from its top-level plain assignments (`NAME=value`,
`export NAME=value`) in order; a line with a command substitution, a pipe or a second command is
never run, so nothing of the script is executed, and what depends on it stays unresolved (a
warning says so). The grid found is checked with the build's finecast-grid at the config's
grid.coarse_level and grid.boundary_rows: a grid it refuses (no R<n>B<k> hierarchy, no coarse cell
left inside a limited area, a damaged file) is an error naming the file and finecast-grid's reason.
"""

import os
import re
import subprocess

import runscript
from plugin_setup import lookup as config_lookup
from slurm_profile import scalar_text

_ASSIGN_RE = re.compile(r"^\s*(?:export\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.*)$")
_CD_RE = re.compile(r"^\s*cd\s+(?P<arg>\S+)\s*(?:#.*)?$")
_EXPDIR_FN_RE = re.compile(r"^\s*make_and_change_to_experiment_dir\s*(?:#.*)?$")
_LINK_RE = re.compile(r"^\s*(?:ln\s+(?:-[A-Za-z]+\s+)*(?P<src>\S+)\s+\S+|add_link_file\s+(?P<src2>\S+)\s+\S+)\s*$")


def _quoted_value_is_safe(value):
    """A value bash may evaluate in an assignment without running anything: no command or
    process substitution, and outside quotes no blank (a second word would be a command), no
    redirection and no second command."""
    value = re.sub(r"\s+#.*$", "", value.strip())
    singles = re.sub(r"'[^']*'", "''", value)
    if re.search(r"\$\(|`|<\(|>\(", singles):
        return False
    bare = re.sub(r'"(?:\\.|[^"\\])*"', '""', singles)
    return not re.search(r"[\s;&|<>()]", bare)


class ScriptPaths:
    """What a run script says about where the model runs and which grids it reads."""

    def __init__(self):
        self.run_dir = None       # absolute, or None when it cannot be resolved
        self.run_dir_from = ""    # "line N: cd ${EXPDIR}"
        self.icon_grids = []      # dynamics_grid_filename entries, as evaluated
        self.grid_dirs = []       # where the script links grids from (evaluated)
        self.link_sources = []    # evaluated sources of its ln -s / add_link_file lines
        self.unresolved = []      # notes on what could not be evaluated


def _evaluate(assignments, wanted, cwd):
    """bash's values of the expressions `wanted` ({key: expression}) after the assignment lines
    (already checked to be safe), or {} when bash fails. Unset variables expand to ""."""
    program = ["set +u"] + assignments
    for key, expression in wanted.items():
        program.append("__finecast_%s=%s" % (key, expression))
        program.append("printf '%%s\\0%%s\\0' %s \"${__finecast_%s}\"" % (key, key))
    try:
        r = subprocess.run(["bash", "-c", "\n".join(program)], capture_output=True, text=True,
                           timeout=20, cwd=cwd, errors="surrogateescape")
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if r.returncode != 0:
        return {}
    parts = r.stdout.split("\0")
    return {parts[i]: parts[i + 1] for i in range(0, len(parts) - 1, 2)}


def runscript_paths(text, source):
    """The run directory and the grids of an ICON run script (see the module's text)."""
    out = ScriptPaths()
    lines = runscript.strip_finecast(text.split("\n"))
    docs = runscript.heredocs(lines)
    inside = runscript.enclosing_blocks(lines)
    in_doc = set()
    for d in docs:
        in_doc.update(range(d.start + 1, d.end + 1))
    plain, hook = runscript.launch_lines(lines, docs)
    launch = min(plain + hook) if plain + hook else len(lines)
    here = os.path.dirname(os.path.abspath(source))

    assignments, wanted = [], {}
    index_at = {}  # a wanted expression -> how many assignments precede it
    for i, line in enumerate(lines):
        if i in in_doc or inside[i]:
            continue
        m = _ASSIGN_RE.match(line)
        if m and _quoted_value_is_safe(m.group("value")):
            assignments.append(line.strip())
            continue
        if i >= launch:
            continue
        cd = _CD_RE.match(line)
        if cd and cd.group("arg") != "-":
            wanted["run_dir"] = cd.group("arg")
            index_at["run_dir"] = len(assignments)
            out.run_dir_from = "line %d: %s" % (i + 1, line.strip())
        elif _EXPDIR_FN_RE.match(line):  # ICON's add_run_routines: cd "${experiments_dir}/${EXPNAME}"
            wanted["run_dir"] = '"${experiments_dir}/${EXPNAME}"'
            index_at["run_dir"] = len(assignments)
            out.run_dir_from = "line %d: %s (cd ${experiments_dir}/${EXPNAME})" % (i + 1, line.strip())
    # The links the script makes (anywhere but in heredocs), evaluated after every assignment.
    links = []
    for i, line in enumerate(lines):
        m = _LINK_RE.match(line) if i not in in_doc else None
        if m:
            src = m.group("src") or m.group("src2")
            if _quoted_value_is_safe(src):
                links.append(src)
    # ICON's grid: &grid_nml dynamics_grid_filename in the atmosphere namelist.
    grids_expression = None
    try:
        atmo = runscript.atmosphere_target(lines, docs, source)
        for d in docs:
            if runscript.canonical(d.target) != atmo:
                continue
            value = runscript.heredoc_value(lines, d, "grid_nml", "dynamics_grid_filename", source)
            if value:
                grids_expression = value if not d.quoted else "'%s'" % value.replace("'", "")
                break
    except runscript.RunscriptError:
        pass

    def evaluate(upto, expressions):
        return _evaluate(assignments[:upto], expressions, here)

    if "run_dir" in wanted:
        got = evaluate(index_at["run_dir"], {"run_dir": wanted["run_dir"]})
        value = got.get("run_dir", "")
        if value and "$" not in value:
            out.run_dir = os.path.normpath(os.path.join(here, os.path.expanduser(value)))
        else:
            out.unresolved.append("the run directory (%s) could not be evaluated" % out.run_dir_from)
    else:
        out.unresolved.append("no `cd` before the model's start: the run directory is where the "
                              "script is submitted from")
        out.run_dir = here
        out.run_dir_from = "the run script's folder (no cd before the model's start)"
    expressions = {"grids": grids_expression} if grids_expression else {}
    expressions["grid_dir"] = '"${grids_folder:-${basedir}/grids}"'
    for k, src in enumerate(links):
        expressions["link%d" % k] = src
    got = evaluate(len(assignments), expressions)
    if grids_expression:
        names = [n.strip().strip("'\"") for n in re.split(r"[,\s]+", got.get("grids", ""))]
        out.icon_grids = [n for n in names if n]
    if got.get("grid_dir") and got["grid_dir"] != "/grids":
        out.grid_dirs.append(got["grid_dir"])
    for k in range(len(links)):
        src = got.get("link%d" % k, "")
        if src and "$" not in src:
            out.link_sources.append(os.path.normpath(os.path.join(here, src)))
    return out


def resolve(name, paths):
    """Where the grid `name` (a path as the program sees it) is: (path or None, how)."""
    name = os.path.expanduser(str(name))
    if os.path.isabs(name):
        return (name if os.path.exists(name) else None), "absolute"
    base = paths.run_dir
    if base:
        here = os.path.normpath(os.path.join(base, name))
        if os.path.exists(here):
            return here, "in the run directory %s (%s)" % (base, paths.run_dir_from)
    leaf = os.path.basename(name)
    for src in paths.link_sources:
        if os.path.basename(src) == leaf and os.path.exists(src):
            return src, "linked into the run directory by the script from %s" % src
    for folder in paths.grid_dirs:
        src = os.path.join(folder, leaf)
        if os.path.exists(src):
            return src, "linked into the run directory from ${HGRIDDIR} = %s (exec.iconrun)" % folder
    return None, "not in the run directory %s (%s) nor where the script links grids from" % (
        base or "(unresolved)", paths.run_dir_from)


def check_grid(tool, path, config, what, problems):
    """Runs finecast-grid on `path` as the plugin will cut it (grid.coarse_level,
    grid.boundary_rows); an error naming `what` and finecast-grid's reason when it refuses.
    Returns finecast-grid's summary lines, or None (refused, or no finecast-grid in the build)."""
    if not os.access(tool, os.X_OK):
        return None  # no build to check with (the plugin is then not built either: said elsewhere)
    argv = [tool, path]
    lookup = lambda key, default: scalar_text(config_lookup(config, key, default))  # noqa: E731
    if lookup("grid.type", "icon") != "icon":
        argv += ["--block", lookup("grid.block", "16")]
        variable = lookup("grid.variable", "")
        if variable:
            argv += ["--var", variable]
    else:
        argv += ["--coarse-level", lookup("grid.coarse_level", "0"),
                 "--boundary-rows", lookup("grid.boundary_rows", "4")]
        if lookup("grid.geometry", "file") == "uniform":
            argv += ["--geometry", "uniform"]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600, errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        problems.warning("%s could not check %s (%s)" % (tool, path, e))
        return None
    if r.returncode == 0:
        keep = ("fine level:", "limited area:", "ICON grid tables:", "block:")
        return [line for line in r.stdout.splitlines() if line.startswith(keep)]
    reason = [line.replace("finecast-grid: ", "", 1) for line in r.stderr.strip().splitlines()]
    if r.returncode == 2:
        problems.error("finecast cannot use %s (%s): %s.\n  Checked with: %s\n  Fix: a grid with "
                       "an R<n>B<k> hierarchy at grid.coarse_level (a coarser level needs more fine "
                       "cells per coarse cell inside a limited area), or another grid.coarse_level"
                       % (what, path, "; ".join(reason[:3]) or "inconsistent", " ".join(argv)))
    else:
        problems.error("finecast cannot read %s (%s): %s (checked with %s)"
                       % (what, path, "; ".join(reason[:3]) or "exit %d" % r.returncode, " ".join(argv)))
    return None


def check_runscript_grid(text, source, config, bin_dir, problems):
    """launch.sh --icon-runscript: the plugin's grid.file resolved as the model will see it, checked
    with finecast-grid; returns notes for the user."""
    notes = []
    if config is None:
        return notes
    grid_file = scalar_text(config_lookup(config, "grid.file", ""))
    if not grid_file:
        return notes
    paths = runscript_paths(text, source)
    found, how = resolve(grid_file, paths)
    icon_grid = paths.icon_grids[0] if paths.icon_grids else None
    if found is None:
        problems.warning("grid.file %s: %s, so it is not checked; the plugin stops at start-up "
                         "unless the script puts it there before the model starts%s"
                         % (grid_file, how, "" if not paths.unresolved else " (%s)" % "; ".join(paths.unresolved)))
        return notes
    if icon_grid and os.path.basename(icon_grid) != os.path.basename(grid_file):
        icon_found, _ = resolve(icon_grid, paths)
        if icon_found is None or os.path.realpath(icon_found) != os.path.realpath(found):
            problems.warning("grid.file %s is not the grid ICON runs on (&grid_nml dynamics_grid_filename "
                             "%s): finecast's cells are ICON's only on ICON's grid file"
                             % (grid_file, icon_grid))
    tool = os.path.join(bin_dir, "finecast-grid")
    summary = check_grid(tool, found, config, "grid.file %s" % grid_file, problems)
    if summary is None and not os.access(tool, os.X_OK):
        notes.append("grid.file %s (%s) is not checked: %s is not built" % (grid_file, how, tool))
    if summary is not None:
        notes.append("grid.file %s (%s) checked with finecast-grid: %s"
                     % (grid_file, how, "; ".join(summary)))
    return notes


def check_config_grid(config, base_dir, bin_dir, problems):
    """A job of a profile: the plugin's grid.file, relative to where the program runs (`base_dir`),
    checked with finecast-grid when it is there (a program that makes its run directory may link
    the grid in at run time: then a warning)."""
    grid_file = scalar_text(config_lookup(config, "grid.file", ""))
    if not grid_file:
        return
    path = os.path.normpath(os.path.join(base_dir, os.path.expanduser(grid_file)))
    if not os.path.exists(path):
        problems.warning("grid.file %s is not at %s (relative to where the program runs, %s), so it "
                         "is not checked; the plugin stops at start-up unless it is there by then"
                         % (grid_file, path, base_dir))
        return
    check_grid(os.path.join(bin_dir, "finecast-grid"), path, config, "grid.file %s" % grid_file, problems)
