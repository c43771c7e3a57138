# SPDX-License-Identifier: BSD-3-Clause
"""Fortran namelist files as ICON and ComIn read them: find a group, set one of its values, and
put a plugin into ComIn's &comin_nml.

Only what the launcher needs, done on the text so that everything else in a file (comments,
other groups, layout) stays as the user wrote it. The scanner knows Fortran's quoting ('..' and
"..", a doubled quote inside), '!' comments, and that a group ends at a '/' (or '&end') outside
quotes and comments.
"""

import os
import re

# ComIn 0.3's field lengths (include/comin_global.inc): a longer value is cut silently by the
# Fortran namelist read, so the launcher refuses it instead.
COMIN_MAX_LEN = {"name": 32, "plugin_library": 256, "options": 256, "comm": 256,
                 "primary_constructor": 256}

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLUGIN_FIELD_RE = re.compile(r"^plugin_list\s*\(\s*(\d+)\s*\)\s*%\s*([A-Za-z_]+)$", re.I)


class NamelistError(Exception):
    """A namelist file the launcher cannot read or edit; the message names the file."""


class Group:
    """One &name ... / group: offsets into the file's text."""

    def __init__(self, name, start, body_start, body_end, end):
        self.name = name              # lower case
        self.start = start            # the '&'
        self.body_start = body_start  # after '&name'
        self.body_end = body_end      # the terminating '/' (or '&end')
        self.end = end                # after the terminator


class Assignment:
    """`lhs = value` inside a group; value_start/value_end delimit the value's text."""

    def __init__(self, lhs, value, start, value_start, value_end):
        self.lhs = lhs
        self.key = re.sub(r"\s+", "", lhs).lower()
        self.value = value
        self.start = start
        self.value_start = value_start
        self.value_end = value_end


def _skip_quoted(text, i):
    """text[i] is a quote; returns the index after the closing one (a doubled quote is kept)."""
    q = text[i]
    i += 1
    while i < len(text):
        if text[i] == q:
            if i + 1 < len(text) and text[i + 1] == q:
                i += 2
                continue
            return i + 1
        i += 1
    return i


def _skip_comment(text, i):
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def groups(text, source):
    """Every group of the file, in order."""
    found = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "!":
            i = _skip_comment(text, i)
            continue
        if c in "&$":
            m = _NAME_RE.match(text, i + 1)
            if m and m.group(0).lower() != "end":
                name = m.group(0).lower()
                start, j = i, m.end()
                body_start = j
                while j < n:
                    d = text[j]
                    if d in "'\"":
                        j = _skip_quoted(text, j)
                    elif d == "!":
                        j = _skip_comment(text, j)
                    elif d == "/":
                        found.append(Group(name, start, body_start, j, j + 1))
                        break
                    elif d in "&$" and text[j + 1:j + 4].lower() == "end":
                        found.append(Group(name, start, body_start, j, j + 4))
                        break
                    else:
                        j += 1
                else:
                    raise NamelistError("%s: group &%s has no end (a '/' line)" % (source, name))
                i = found[-1].end
                continue
        i += 1
    return found


def find_group(text, name, source):
    for g in groups(text, source):
        if g.name == name.lower():
            return g
    return None


def assignments(text, group):
    """The assignments of a group, in order. Pieces are separated by commas and line ends outside
    quotes, parentheses and comments; a piece without '=' continues the value list of the
    assignment before it (`a = 1, 2,` then `3` on the next line)."""
    result = []
    i, end = group.body_start, group.body_end
    state = {"start": None, "eq": None, "last": None}
    depth = 0

    def close():
        start, eq, last = state["start"], state["eq"], state["last"]
        if start is not None:
            if eq is not None:
                vstart = eq + 1
                while vstart < last and text[vstart] in " \t":
                    vstart += 1
                result.append(Assignment(text[start:eq].strip(), text[vstart:last].strip(),
                                         start, vstart, last))
            elif result:
                prev = result[-1]
                prev.value_end = last
                prev.value = text[prev.value_start:last].strip()
        state.update(start=None, eq=None, last=None)

    while i < end:
        c = text[i]
        if c == "!":
            i = _skip_comment(text, i)
            continue
        if c in "'\"":
            if state["start"] is None:
                state["start"] = i
            i = _skip_quoted(text, i)
            state["last"] = i
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth = max(depth - 1, 0)
        if depth == 0 and c in ",\n":
            close()
        elif not c.isspace():
            if state["start"] is None:
                state["start"] = i
            if c == "=" and state["eq"] is None and depth == 0:
                state["eq"] = i
            state["last"] = i + 1
        i += 1
    close()
    return result


def fortran_string(value):
    """A Fortran character literal: double quotes, a quote inside doubled."""
    return '"' + str(value).replace('"', '""') + '"'


def unquote(value):
    """The text of a Fortran character literal ('..' or ".."), or the value itself."""
    v = value.strip()
    if len(v) >= 2 and v[0] in "'\"" and v[-1] == v[0]:
        return v[1:-1].replace(v[0] * 2, v[0])
    return v


def set_value(text, group_name, key, value, source):
    """Sets `key = value` in the first group `group_name`, replacing its value or adding the line
    before the group's end. Returns the new text."""
    group = find_group(text, group_name, source)
    if group is None:
        raise NamelistError("%s: has no &%s group (needed to set %s)" % (source, group_name, key))
    for a in assignments(text, group):
        if a.key == key.lower():
            return text[:a.value_start] + value + text[a.value_end:]
    insert = group.body_end
    line_start = text.rfind("\n", group.body_start, insert)
    # the group's terminator on a line of its own: the new line goes before that line
    if line_start >= 0 and text[line_start + 1:insert].strip() == "":
        return text[:line_start + 1] + "  %s = %s\n" % (key, value) + text[line_start + 1:]
    return text[:insert] + "\n  %s = %s\n" % (key, value) + text[insert:]


def get_value(text, group_name, key, source):
    """The value text of `key` in the first group `group_name`, or None."""
    group = find_group(text, group_name, source)
    if group is None:
        return None
    for a in assignments(text, group):
        if a.key == key.lower():
            return a.value
    return None


def plugin_entries(text, source):
    """ComIn's plugin list in the file's &comin_nml: {index: {field: value text}}, or None
    without a &comin_nml group."""
    group = find_group(text, "comin_nml", source)
    if group is None:
        return None
    entries = {}
    for a in assignments(text, group):
        m = _PLUGIN_FIELD_RE.match(a.lhs)
        if m:
            entries.setdefault(int(m.group(1)), {})[m.group(2).lower()] = unquote(a.value)
    return entries


def is_plugin(entry, name, library_stem):
    """Whether a plugin_list entry is the plugin called `name` or built as `library_stem`*."""
    lib = os.path.basename(entry.get("plugin_library", ""))
    return entry.get("name", "").strip().lower() == name.lower() or lib.startswith(library_stem)


def put_plugin(text, name, library, options, source, library_stem="libfinecast_comin", comm=None):
    """Puts the plugin into &comin_nml: an entry that is already this plugin (same name, or a
    library named library_stem*) gets the new library and options and keeps its other fields
    (comm, primary_constructor, log_*); otherwise the plugin is added after the others. A file
    without &comin_nml gets one at its end. `comm` (not None) sets the entry's comm name.
    Returns (new text, the entry's index)."""
    for field, value in (("name", name), ("plugin_library", library), ("options", options)):
        if len(value) > COMIN_MAX_LEN[field]:
            raise NamelistError(
                "%s: plugin_list(..)%%%s would be %d characters, but ComIn reads at most %d "
                "(COMIN_MAX_LEN_%s) and would cut it: %s"
                % (source, field, len(value), COMIN_MAX_LEN[field],
                   "PLUGIN_LIBRARY" if field == "plugin_library" else field.upper(), value))
    group = find_group(text, "comin_nml", source)
    if group is None:
        sep = "" if text.endswith("\n") or not text else "\n"
        block = "&comin_nml\n%s/\n" % _entry_lines(1, name, library, options,
                                                   {} if comm is None else {"comm": fortran_string(comm)})
        return text + sep + block, 1

    kept = []        # the group's other assignments, as written
    index = None
    entries = plugin_entries(text, source)
    for i in sorted(entries):
        if is_plugin(entries[i], name, library_stem):
            index = i
            break
    extra = {}
    for a in assignments(text, group):
        m = _PLUGIN_FIELD_RE.match(a.lhs)
        if m and index is not None and int(m.group(1)) == index:
            field = m.group(2).lower()
            if field not in ("name", "plugin_library", "options"):
                extra[field] = a.value
            continue
        kept.append("  " + text[a.start:a.value_end])  # as the user wrote it
    if index is None:
        index = max(entries) + 1 if entries else 1
    if comm is not None:
        extra["comm"] = fortran_string(comm)
    body = "\n".join(kept + [_entry_lines(index, name, library, options, extra).rstrip("\n")])
    new_group = "&comin_nml\n%s\n/" % body
    return text[:group.start] + new_group + text[group.end:], index


def _entry_lines(index, name, library, options, extra):
    p = "  plugin_list(%d)%%" % index
    lines = [p + "name           = " + fortran_string(name),
             p + "plugin_library = " + fortran_string(library),
             p + "options        = " + fortran_string(options)]
    for field, value in extra.items():
        lines.append(p + "%s = %s" % (field, value))
    return "\n".join(lines) + "\n"
