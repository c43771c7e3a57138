# SPDX-License-Identifier: BSD-3-Clause
"""ICON's own experiment run scripts (exp.NAME.run): finecast put into them in place.

ICON's run scripts write their namelists with heredocs (`cat > ${atmo_namelist} << EOF ... EOF`,
then `cat >> ...` for the output groups), start the model with `${START} ${MODEL}` or, in those
of make_target_runscript, `${START_MODEL} || exit 1` (START_MODEL="${START_MODEL:=$START $MODEL}"),
and chain themselves (`${submit} $this_script` when finish.status says RESTART). launch.sh
--icon-runscript adds to such a script, and changes nothing else:

- finecast's entry in ComIn's `&comin_nml`, in the heredoc that already writes a &comin_nml to
  the atmosphere namelist, or else in a heredoc of its own (`cat >> <atmosphere namelist>`)
  right after the one that creates that namelist, at the script's top level (after the if/case/
  loop that holds it, never inside a conditional branch);
- finecast's environment (LD_LIBRARY_PATH, ...), just before the model's start;
- with external trainers: the trainer component of a heterogeneous job after the #SBATCH
  header, and `: "${finecast_trainers[@]}"` after `${START} ${MODEL}` (srun's heterogeneous step),
  or appended to START_MODEL before `${START_MODEL}`.

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
# ICON's own hook for complex launch lines: `${START_MODEL} || exit 1`.
_START_MODEL_RE = re.compile(r"^\s*\$\{?START_MODEL\}?(\s.*)?$")
_SBATCH_RE = re.compile(r"^#SBATCH\s+(?P<opt>\S+)")
_START_RE = re.compile(r"^\s*(?:export\s+)?START=(?P<value>.*)$")
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


class Block:
    """A compound command of the script (if, case, a loop, a { } group or function body)."""

    def __init__(self, keyword, start, function):
        self.keyword = keyword    # if, case, for, while, until, select or {
        self.start = start        # its first line
        self.end = None           # the line of its fi/esac/done/}
        self.function = function  # the body of a function definition


_OPENERS = {"if", "case", "for", "while", "until", "select", "{"}
_CLOSERS = {"fi", "esac", "done", "}"}
# After these words (and after ; & | ( ) and line ends) the next word starts a command.
_COMMAND_FOLLOWS = {"then", "do", "else", "elif", "if", "while", "until", "{", "!", "time"}
_TOKEN_RE = re.compile(r"(?P<nl>\n)|(?P<blank>[ \t\r]+|\\\n|#[^\n]*)|\\.|'[^']*'|\"(?:\\.|[^\"\\])*\"|"
                       r"(?P<op>&&|\|\||;;|[;&|()])|(?P<word>[^\s;&|()'\"\\#][^\s;&|()'\"\\]*)|.", re.S)
_ANY_HEREDOC_RE = re.compile(r"(?<![<\w])<<(?P<dash>-?)\s*(?P<q>['\"]?)(?P<tag>[A-Za-z_]\w*)(?P=q)")


def _without_heredoc_bodies(lines):
    """The lines with the bodies of every heredoc (cat's and any other command's) blanked."""
    out = list(lines)
    i = 0
    while i < len(out):
        code = out[i].split(" #", 1)[0]
        i += 1
        for m in _ANY_HEREDOC_RE.finditer(code):
            j = i
            while j < len(out) and (out[j].lstrip("\t") if m.group("dash") else out[j]) != m.group("tag"):
                j += 1
            if j == len(out):
                continue  # no end line: not a heredoc after all (e.g. "<<" in a string)
            out[i:j + 1] = [""] * (j + 1 - i)
            i = j + 1
    return out


def enclosing_blocks(lines):
    """For each line, the compound commands it lies in (outermost first), found from the shell
    words that open and close them where a command starts (heredoc bodies, quotes and comments
    skipped)."""
    text = "\n".join(_without_heredoc_bodies(lines))
    inside = [()] * len(lines)
    stack, recent, line, command = [], [], 0, True
    for m in _TOKEN_RE.finditer(text):
        for _ in range(m.group(0).count("\n")):  # a line end, or one in a string or continuation
            line += 1
            inside[line] = tuple(stack)
        if m.group("nl") or m.group("op"):
            command = True
            if m.group("op"):
                recent.append(m.group(0))
            continue
        if m.group("blank"):
            continue
        word = m.group("word")
        if command and word in _OPENERS:
            function = word == "{" and (recent[-2:] == ["(", ")"] or recent[-2:-1] == ["function"])
            stack.append(Block(word, line, function))
        elif command and word in _CLOSERS and stack:
            stack.pop().end = line
        command = word in _COMMAND_FOLLOWS
        recent.append(m.group(0))
    return inside


def launch_lines(lines, docs):
    """(lines of `${START} ${MODEL}`, lines of `${START_MODEL}`), outside heredoc bodies."""
    def outside(i):
        return not any(d.start < i <= d.end for d in docs)
    plain = [i for i, line in enumerate(lines) if _LAUNCH_RE.match(line) and outside(i)]
    hook = [i for i, line in enumerate(lines) if _START_MODEL_RE.match(line) and outside(i)]
    return plain, hook


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


def heredoc_value(lines, doc, group, key, source):
    """The raw value of `key` in namelist group `group` of heredoc `doc` (shell $ as written), or
    None where the heredoc does not set it or does not read as a namelist."""
    try:
        value = namelist.get_value(_body(lines, doc).replace("$", DOLLAR), group, key, source)
    except namelist.NamelistError:
        return None
    return value.replace(DOLLAR, "$") if value else value


def atmosphere_target(lines, docs, source):
    """The canonical file expression of the atmosphere namelist."""
    for doc in docs:
        if "master" in canonical(doc.target).lower():
            value = heredoc_value(lines, doc, "master_model_nml", "model_namelist_filename", source)
            if value:
                name = canonical(namelist.unquote(value).split(",")[0])
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


def _top_level_after(lines, inside, doc):
    """(the line index after heredoc `doc` at the script's top level, a note): right after it,
    or after the if/case/loop that holds it; None inside a function body (when it runs is not
    known)."""
    blocks = inside[doc.start]
    if not blocks:
        return doc.end + 1, "after line %d" % (doc.end + 1)
    outer = blocks[0]
    if any(b.function for b in blocks) or outer.end is None:
        return None
    return outer.end + 1, "after line %d, the end of the '%s' block of lines %d-%d that holds the " \
        "heredoc of line %d (not inside it: that branch may not run)" % (
            outer.end + 1, outer.keyword, outer.start + 1, outer.end + 1, doc.start + 1)


def _comin_block_place(lines, mine, source):
    """Where finecast's own &comin_nml heredoc goes, at the top level: after the first heredoc
    that creates the atmosphere namelist, else after the first that appends to it.
    Returns (line index, the heredoc, note)."""
    inside = enclosing_blocks(lines)
    ordered = [d for d in mine if not d.append] + [d for d in mine if d.append]
    for doc in ordered:  # a heredoc at the top level first
        if not inside[doc.start]:
            return doc.end + 1, doc, "after line %d" % (doc.end + 1)
    for doc in ordered:
        place = _top_level_after(lines, inside, doc)
        if place:
            return place[0], doc, place[1]
    raise RunscriptError(
        "%s: every heredoc that writes the atmosphere namelist %s (line %s) is inside a shell "
        "function, so a &comin_nml appended after it could be written before the namelist is. "
        "Fix: add an empty &comin_nml group (a line '&comin_nml' and a line '/') to the heredoc "
        "that creates the namelist; launch.sh then puts finecast into it"
        % (source, mine[0].target, ", ".join(str(d.start + 1) for d in ordered)))


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
        doc = next(d for d in docs if d.start == doc.start)  # its body changed length
        where_nml = _top_level_after(lines, enclosing_blocks(lines), doc)
        where_nml = where_nml[0] if where_nml else doc.start
    else:
        try:
            block, _ = namelist.put_plugin("", name, library, options, source, comm=comm)
        except namelist.NamelistError as e:
            raise RunscriptError(str(e))
        where_nml, first, note = _comin_block_place(lines, mine, source)
        tag = "FINECAST_EOF"
        # the heredoc's indent, or that of the block end (fi, done, esac) it follows
        ind = first.indent if where_nml == first.end + 1 else re.match(r"\s*", lines[where_nml - 1]).group(0)
        inserts.setdefault(where_nml, []).extend(
            ["%s%s: ComIn's &comin_nml with the finecast plugin %s" % (ind, BEGIN, NOTE),
             "%scat >> %s << '%s'" % (ind, first.target, tag)] + block.rstrip("\n").split("\n") +
            [tag, ind + END])
        notes.append("a &comin_nml with finecast is appended to %s %s" % (first.target, note))

    plain, hook = launch_lines(lines, docs)
    launch = sorted(plain + hook)
    env = list(env_lines)
    if trainer is not None:
        if not launch:
            raise RunscriptError(
                "%s: no line '${START} ${MODEL}' or '${START_MODEL}' starts the model, so the "
                "finecast-trainer processes cannot be added to it. Fix: start the model with "
                "${START} ${MODEL} (or ICON's START_MODEL), or use in-host trainers "
                "(--param trainers.count=0)" % source)
        for i in plain:
            m = _LAUNCH_RE.match(lines[i])
            lines[i] = m.group("head") + LAUNCH_SUFFIX + m.group("tail") + LAUNCH_MARK
        header = header_lines(lines)
        if not header:
            raise RunscriptError("%s: has no #SBATCH header; the trainers' component of the "
                                 "heterogeneous job goes after it" % source)
        inserts.setdefault(header[-1] + 1, []).extend(
            ["%s: the finecast-trainer processes, a component of their own %s" % (BEGIN, NOTE),
             "#SBATCH hetjob"] + ["#SBATCH %s" % o for o in trainer["sbatch"]] + [END])
        notes.append("the trainers' component (#SBATCH hetjob ...) follows the #SBATCH header; "
                     "line %s starts them with the model" % ", ".join(str(i + 1) for i in launch))
        env.append("%s=(%s)" % (TRAINERS_VAR, " ".join(trainer["launch"])))
        if hook:
            # ICON's hook: START_MODEL (set just before from $START $MODEL) gets srun's second
            # part, once (a chunk may inherit an exported START_MODEL); `|| exit 1` stays.
            env.append('case "${START_MODEL:-}" in *" : ${%s[*]}") ;; *) START_MODEL="${START_MODEL:-'
                       '$START $MODEL} : ${%s[*]}" ;; esac' % (TRAINERS_VAR, TRAINERS_VAR))
    if env:
        where = launch[0] if launch else where_nml
        ind = re.match(r"\s*", lines[where] if where < len(lines) else "").group(0)
        inserts.setdefault(where, []).extend(
            ["%s%s: its environment %s" % (ind, BEGIN, NOTE)] + [ind + e for e in env] + [ind + END])
        notes.append("finecast's environment is set before line %d (%s)"
                     % (where + 1, "the model's start" if launch else "after the atmosphere namelist"))
    out = []
    for i, line in enumerate(lines + [None]):
        out.extend(inserts.get(i, []))
        if line is not None:
            out.append(line)
    return "\n".join(out), notes


def header_lines(lines):
    """The #SBATCH lines of the model's component: the script's header before its first command
    (and before a `#SBATCH hetjob` line)."""
    found = []
    for i, line in enumerate(lines):
        if line.strip() and not line.lstrip().startswith("#"):
            break
        m = _SBATCH_RE.match(line)
        if m and m.group("opt") in ("hetjob", "packjob"):
            break
        if m:
            found.append(i)
    return found


def sbatch_options(text):
    """[(option, value or None)] of the model's component's #SBATCH header, finecast's own lines
    left out: `--qos=normal` -> ("--qos", "normal"), `--exclusive` -> ("--exclusive", None)."""
    lines = strip_finecast(text.split("\n"))
    found = []
    for i in header_lines(lines):
        m = re.match(r"^#SBATCH\s+(--[A-Za-z-]+)(?:[=\s]\s*(?!#)(\S+))?", lines[i])
        if m:
            found.append((m.group(1), m.group(2)))
    return found


def sbatch_value(text, option):
    """The value of `#SBATCH --option=V` (or `--option V`) in the model's component, or None."""
    return next((v for o, v in sbatch_options(text) if o == option and v is not None), None)


def start_mpi(text):
    """The value of srun's --mpi in the script's START (e.g. pmix), or None."""
    lines = strip_finecast(text.split("\n"))
    inside_docs = set()
    for d in heredocs(lines):
        inside_docs.update(range(d.start + 1, d.end + 1))
    for i, line in enumerate(lines):
        m = _START_RE.match(line)
        if m and i not in inside_docs:
            mpi = re.search(r"--mpi(?:=|\s+)([^\s\"'\\;]+)", m.group("value"))
            if mpi:
                return mpi.group(1)
    return None
