# SPDX-License-Identifier: BSD-3-Clause
"""ICON's own experiment run scripts (exp.NAME.run): finecast put into them in place.

ICON's run scripts write their namelists with heredocs (`cat > ${atmo_namelist} << EOF ... EOF`,
then `cat >> ...` for the output groups), start the model with `${START} ${MODEL}` and chain
themselves (`${submit} $this_script` when finish.status says RESTART). launch.sh
--icon-runscript adds to such a script, and changes nothing else:

- finecast's entry in ComIn's `&comin_nml`, in the heredoc that already writes a &comin_nml to
  the atmosphere namelist, or else in a heredoc of its own (`cat >> <atmosphere namelist>`)
  right after the one that creates that namelist;
- finecast's environment (LD_LIBRARY_PATH, ...), just before the model's start;
- with external trainers: the trainer component of a heterogeneous job after the #SBATCH
  header, and `: "${finecast_trainers[@]}"` after `${START} ${MODEL}` (srun's heterogeneous step).

Every addition is marked (# >>> finecast ... / # <<< finecast <<<) and is taken out and made
again on the next call, so the edit is idempotent and can be redone after a change of config.
The atmosphere namelist is the one the master namelist's heredoc names (master_model_nml:
model_namelist_filename), else the heredoc that holds &run_nml.
"""

import re

import namelist

BEGIN = "# >>> finecast"
END = "# <<< finecast <<<"
NOTE = "(scripts/launch.sh --icon-runscript; rerun it to update, not by hand)"
TRAINERS_VAR = "finecast_trainers"
LAUNCH_SUFFIX = ' : "${%s[@]}"' % TRAINERS_VAR
LAUNCH_MARK = "  # finecast: external trainers"
# `cat > TARGET << TAG`, also `cat >>TARGET <<-'TAG'` and `cat << TAG > TARGET`.
_CAT_RE = re.compile(r"^(?P<indent>\s*)cat\s+(?:(?P<op1>>>?)\s*(?P<t1>\S+)\s+<<(?P<dash1>-?)\s*"
                     r"(?P<q1>['\"]?)(?P<tag1>\w+)(?P=q1)|<<(?P<dash2>-?)\s*(?P<q2>['\"]?)"
                     r"(?P<tag2>\w+)(?P=q2)\s+(?P<op2>>>?)\s*(?P<t2>\S+))\s*$")
_LAUNCH_RE = re.compile(r"^(?P<head>\s*\$\{?START\}?\s+\$\{?MODEL\}?)(?P<tail>(\s.*)?)$")
_SBATCH_RE = re.compile(r"^#SBATCH\s+(?P<opt>\S+)")
DOLLAR = "\ue000"  # $ while the namelist scanner reads a heredoc ($name would start a group)


class RunscriptError(Exception):
    """A run script that cannot be edited; the message names the file and what is missing."""


class Heredoc:
    """One `cat` heredoc: its lines (indices into the script's lines) and what it writes."""

    def __init__(self, start, end, target, append, quoted, indent):
        self.start = start      # the cat line
        self.end = end          # the terminator line
        self.target = target    # the file expression as written, e.g. ${atmo_namelist}
        self.append = append    # cat >> (True) or cat > (False)
        self.quoted = quoted    # <<'EOF': the body is not expanded by the shell
        self.indent = indent


def canonical(target):
    """A file expression without quotes and with $name for ${name}: "${a}"_x and $a_x match."""
    t = target.strip().strip("'\"")
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", r"$\1", t)


def heredocs(lines):
    found = []
    i = 0
    while i < len(lines):
        m = _CAT_RE.match(lines[i])
        if not m:
            i += 1
            continue
        tag = m.group("tag1") or m.group("tag2")
        dash = (m.group("dash1") or m.group("dash2") or "") == "-"
        op = m.group("op1") or m.group("op2")
        target = m.group("t1") or m.group("t2")
        quoted = bool(m.group("q1") or m.group("q2"))
        j = i + 1
        while j < len(lines) and (lines[j].lstrip("\t") if dash else lines[j]) != tag:
            j += 1
        if j == len(lines):
            raise RunscriptError("the heredoc of line %d (%s) has no end line '%s'"
                                 % (i + 1, lines[i].strip(), tag))
        found.append(Heredoc(i, j, target, op == ">>", quoted, m.group("indent")))
        i = j + 1
    return found


def strip_finecast(lines):
    """The script without the marked blocks and the launch line's trainer part of an earlier call."""
    out, skipping = [], False
    for line in lines:
        if line.startswith(BEGIN) or line.lstrip().startswith(BEGIN):
            skipping = True
            continue
        if skipping:
            if line.strip() == END:
                skipping = False
            continue
        if LAUNCH_MARK in line and LAUNCH_SUFFIX in line:
            line = line.replace(LAUNCH_MARK, "").replace(LAUNCH_SUFFIX, "", 1)
        out.append(line)
    return out


def _body(lines, doc):
    return "\n".join(lines[doc.start + 1:doc.end]) + "\n"


def atmosphere_target(lines, docs, source):
    """The canonical file expression of the atmosphere namelist."""
    for doc in docs:
        if "master" in canonical(doc.target).lower():
            body = _body(lines, doc).replace("$", DOLLAR)
            try:
                value = namelist.get_value(body, "master_model_nml", "model_namelist_filename", source)
            except namelist.NamelistError:
                value = None
            if value:
                name = canonical(namelist.unquote(value.replace(DOLLAR, "$")).split(",")[0])
                if any(canonical(d.target) == name for d in docs):
                    return name
    for doc in docs:
        if re.search(r"^\s*&run_nml\b", _body(lines, doc), re.M | re.I):
            return canonical(doc.target)
    raise RunscriptError("%s: no heredoc writes ICON's atmosphere namelist (none is named by the "
                         "master namelist's model_namelist_filename, none holds &run_nml)" % source)


def shell_text(value, quoted):
    """value inside a heredoc body: as is in a quoted one, else with \\ $ ` escaped."""
    if quoted:
        return value
    return value.replace("\\", "\\\\").replace("$", "\\$").replace("`", "\\`")


def add_finecast(text, source, name, library, options, comm=None, env_lines=(), trainer=None):
    """The run script with finecast added. trainer (external trainers): {"sbatch": [options of
    the trainer component], "launch": [srun words of the trainer part]}. Returns (text, notes)."""
    lines = strip_finecast(text.split("\n"))
    notes = []
    docs = heredocs(lines)
    atmo = atmosphere_target(lines, docs, source)
    mine = [d for d in docs if canonical(d.target) == atmo]
    with_comin = [d for d in mine if re.search(r"^\s*&comin_nml\b", _body(lines, d), re.M | re.I)]
    inserts = {}  # line index -> lines to put before it
    if with_comin:
        doc = with_comin[0]
        body = _body(lines, doc).replace("$", DOLLAR)
        fix = lambda v: shell_text(v, doc.quoted).replace("$", DOLLAR)
        try:
            new, index = namelist.put_plugin(body, name, fix(library), fix(options), source,
                                             comm=None if comm is None else fix(comm))
        except namelist.NamelistError as e:
            raise RunscriptError(str(e))
        lines[doc.start + 1:doc.end] = new.replace(DOLLAR, "$").rstrip("\n").split("\n")
        notes.append("finecast is plugin_list(%d) of the &comin_nml written at line %d (cat %s %s)"
                     % (index, doc.start + 1, ">>" if doc.append else ">", doc.target))
        docs = heredocs(lines)
        mine = [d for d in docs if canonical(d.target) == atmo]
    else:
        try:
            block, _ = namelist.put_plugin("", name, library, options, source, comm=comm)
        except namelist.NamelistError as e:
            raise RunscriptError(str(e))
        first = ([d for d in mine if not d.append] or mine)[0]
        tag = "FINECAST_EOF"
        ind = first.indent
        inserts.setdefault(first.end + 1, []).extend(
            ["%s%s: ComIn's &comin_nml with the finecast plugin %s" % (ind, BEGIN, NOTE),
             "%scat >> %s << '%s'" % (ind, first.target, tag)] + block.rstrip("\n").split("\n") +
            [tag, ind + END])
        notes.append("a &comin_nml with finecast is appended to %s after line %d"
                      % (first.target, first.end + 1))

    launch = [i for i, line in enumerate(lines) if _LAUNCH_RE.match(line)
              and not any(d.start < i <= d.end for d in docs)]
    if trainer is not None:
        if not launch:
            raise RunscriptError(
                "%s: no line '${START} ${MODEL}' starts the model, so the finecast-trainer "
                "processes cannot be added to it. Fix: start the model with ${START} ${MODEL}, "
                "or use in-host trainers (--param trainers.count=0)" % source)
        for i in launch:
            m = _LAUNCH_RE.match(lines[i])
            lines[i] = m.group("head") + LAUNCH_SUFFIX + m.group("tail") + LAUNCH_MARK
        header = [i for i, line in enumerate(lines) if _SBATCH_RE.match(line)]
        first_command = next((i for i, line in enumerate(lines)
                              if line.strip() and not line.lstrip().startswith("#")), len(lines))
        header = [i for i in header if i < first_command]
        if not header:
            raise RunscriptError("%s: has no #SBATCH header; the trainers' component of the "
                                 "heterogeneous job goes after it" % source)
        inserts.setdefault(header[-1] + 1, []).extend(
            ["%s: the finecast-trainer processes, a component of their own %s" % (BEGIN, NOTE),
             "#SBATCH hetjob"] + ["#SBATCH %s" % o for o in trainer["sbatch"]] + [END])
        notes.append("the trainers' component (#SBATCH hetjob ...) follows the #SBATCH header; "
                     "line %s starts them with the model" % ", ".join(str(i + 1) for i in launch))
    env = list(env_lines)
    if trainer is not None:
        env.append("%s=(%s)" % (TRAINERS_VAR, " ".join(trainer["launch"])))
    if env:
        where = launch[0] if launch else mine[0].start
        ind = re.match(r"\s*", lines[where]).group(0)
        inserts.setdefault(where, []).extend(
            ["%s%s: its environment %s" % (ind, BEGIN, NOTE)] + [ind + e for e in env] + [ind + END])
        notes.append("finecast's environment is set before line %d (%s)"
                     % (where + 1, "the model's start" if launch else "the atmosphere namelist"))
    out = []
    for i, line in enumerate(lines + [None]):
        out.extend(inserts.get(i, []))
        if line is not None:
            out.append(line)
    return "\n".join(out), notes


def sbatch_value(text, option):
    """The value of `#SBATCH --option=V` (or `--option V`) in a script's header, or None."""
    for line in text.split("\n"):
        m = re.match(r"^#SBATCH\s+%s(?:=|\s+)(\S+)" % re.escape(option), line)
        if m:
            return m.group(1)
    return None
