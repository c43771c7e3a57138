# SPDX-License-Identifier: BSD-3-Clause
"""Text files as they are on disk. ICON's run scripts and namelists may hold bytes that are not
UTF-8 (a Latin-1 comment in an old script): they are read as UTF-8 with every other byte kept as a
surrogate (errors="surrogateescape") and written back the same way, so each byte that finecast
does not change is written back as it was, and finecast's own lines (paths) are UTF-8. Line ends
stay as they are (newline="")."""

import os
import sys

ENCODING = "utf-8"
ERRORS = "surrogateescape"


def read(path):
    with open(path, encoding=ENCODING, errors=ERRORS, newline="") as f:
        return f.read()


def write(path, text):
    with open(path, "w", encoding=ENCODING, errors=ERRORS, newline="") as f:
        f.write(text)


def to_stdout(text):
    """text on stdout, byte for byte as write() would put it into a file."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode(ENCODING, ERRORS))
    sys.stdout.buffer.flush()


def not_a_file(path):
    """Why `path` cannot be read as a text file ("" when it can): it does not exist, or it is a
    directory, a device, a pipe or a socket (a link to /dev/zero would be read without end)."""
    import stat as _stat
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file" if not os.path.islink(path) else "a link to a missing file"
    except OSError as e:
        return "cannot be read (%s)" % e.strerror
    if _stat.S_ISREG(mode):
        return ""
    kinds = ((_stat.S_ISDIR, "a directory"), (_stat.S_ISCHR, "a character device"),
             (_stat.S_ISBLK, "a block device"), (_stat.S_ISFIFO, "a pipe"), (_stat.S_ISSOCK, "a socket"))
    return "not a regular file (%s)" % next((name for test, name in kinds if test(mode)), "of another kind")
