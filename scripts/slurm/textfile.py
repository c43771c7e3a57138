# SPDX-License-Identifier: BSD-3-Clause
"""Text files as they are on disk. ICON's run scripts and namelists may hold bytes that are not
UTF-8 (a Latin-1 comment in an old script): they are read as UTF-8 with every other byte kept as a
surrogate (errors="surrogateescape") and written back the same way, so each byte that finecast
does not change is written back as it was, and finecast's own lines (paths) are UTF-8. Line ends
stay as they are (newline="")."""

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
