# SPDX-License-Identifier: BSD-3-Clause
"""What the scripts that edit a finecast ensemble file after the fact share (inflate_ensemble.py,
blend_ensemble.py): the edit is made on a copy beside the output under a temporary name, a line
is added to the global history, and the copy is renamed, so the output is whole or absent and
the input is left as it is."""
import datetime
import os
import shutil

import netCDF4


def steps(v):
    """The index of each step of the netCDF variable `v`: its time steps when its first dimension
    is time, else the whole variable (...)."""
    return range(v.shape[0]) if v.dimensions and v.dimensions[0] == "time" else [Ellipsis]


def rewrite(src, out, note, edit):
    """Copies `src` to `out` with `edit(dataset)` applied to the copy (opened r+) and `note` as the
    newest line of its history attribute (after a UTC time stamp)."""
    tmp = os.path.join(os.path.dirname(os.path.abspath(out)), f".{os.path.basename(out)}.tmp{os.getpid()}")
    try:
        shutil.copyfile(src, tmp)
        with netCDF4.Dataset(tmp, "r+") as d:
            edit(d)
            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            history = d.getncattr("history") if "history" in d.ncattrs() else ""
            d.setncattr("history", f"{now}: {note}" + ("\n" + history if history else ""))
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
