#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write a cropped CF copy of a lat-lon NetCDF field, for training/scoring splits of the evaluation.

finecast-replay and finecast-downscale take whole files, so the held-out splits of
docs/evaluation.md (longitude bands of etopo5, month ranges of tas) are cut out here into a
git-ignored folder (out/eval/...). The copy holds only the chosen field, its lat/lon
coordinates (CF names and units) and, when the source has one, its time axis; values are copied
bit for bit, missing values stay missing (_FillValue of the source).
"""
import argparse
import sys

import numpy as np
import netCDF4


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--input", required=True, help="source NetCDF file")
    p.add_argument("--var", required=True, help="variable to copy (dims [time,] lat, lon)")
    p.add_argument("--output", required=True, help="output NetCDF file (overwritten)")
    p.add_argument("--lon", nargs=2, type=float, metavar=("LON0", "LON1"),
                   help="keep columns with LON0 <= lon < LON1 (degrees, modulo 360; "
                        "LON0 > LON1 crosses 0). Default: all")
    p.add_argument("--rows", nargs=2, type=int, metavar=("R0", "R1"),
                   help="keep rows R0 <= row < R1 (0-based, file order). Default: all")
    p.add_argument("--time", nargs=2, type=int, metavar=("T0", "T1"),
                   help="keep steps T0 <= step < T1 (0-based). Default: all")
    return p.parse_args(argv)


def fail(msg):
    print("eval_crop.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def main(argv):
    a = parse_args(argv)
    src = netCDF4.Dataset(a.input)
    if a.var not in src.variables:
        fail(f"{a.input} has no variable '{a.var}'")
    v = src.variables[a.var]
    dims = v.dimensions
    if len(dims) not in (2, 3):
        fail(f"{a.input}:{a.var} has dims {dims}; expected [time,] lat, lon")
    ydim, xdim = dims[-2], dims[-1]
    if ydim not in src.variables or xdim not in src.variables:
        fail(f"{a.input}: coordinate variables '{ydim}' / '{xdim}' are missing")
    lat = np.asarray(src.variables[ydim][:], dtype=np.float64)
    lon = np.asarray(src.variables[xdim][:], dtype=np.float64)

    cols = np.arange(lon.size)
    if a.lon:
        l0, l1 = a.lon[0] % 360.0, a.lon[1] % 360.0
        lm = lon % 360.0
        keep = (lm >= l0) & (lm < l1) if l0 < l1 else (lm >= l0) | (lm < l1)
        cols = np.nonzero(keep)[0]
        if l0 > l1:  # crossing 0: the columns from LON0 come first
            cols = np.concatenate([cols[lm[cols] >= l0], cols[lm[cols] < l1]])
    rows = np.arange(lat.size) if not a.rows else np.arange(a.rows[0], a.rows[1])
    if cols.size == 0 or rows.size == 0 or rows[-1] >= lat.size or rows[0] < 0:
        fail(f"empty or out-of-range selection: {rows.size} rows, {cols.size} columns "
             f"(the file has {lat.size} x {lon.size})")

    has_time = len(dims) == 3
    steps = None
    if has_time:
        nt = v.shape[0]
        steps = np.arange(nt) if not a.time else np.arange(a.time[0], a.time[1])
        if steps.size == 0 or steps[0] < 0 or steps[-1] >= nt:
            fail(f"--time {a.time} is outside the {nt} steps of {a.input}")
    elif a.time:
        fail(f"{a.input}:{a.var} has no time dimension; drop --time")

    src.set_auto_mask(False)  # copy raw values; the fill value travels as an attribute
    out = netCDF4.Dataset(a.output, "w", format="NETCDF4")
    out.setncattr("history", "scripts/eval_crop.py " + " ".join(argv))
    out.setncattr("source", a.input)
    if has_time:
        out.createDimension("time", None)
    out.createDimension("lat", rows.size)
    out.createDimension("lon", cols.size)
    la = out.createVariable("lat", "f8", ("lat",))
    la.units, la.standard_name, la.axis = "degrees_north", "latitude", "Y"
    la[:] = lat[rows]
    lo = out.createVariable("lon", "f8", ("lon",))
    lo.units, lo.standard_name, lo.axis = "degrees_east", "longitude", "X"
    lo[:] = lon[cols]
    if has_time:
        tdim = dims[0]
        t = out.createVariable("time", "f8", ("time",))
        if tdim in src.variables:
            st = src.variables[tdim]
            for att in ("units", "calendar", "standard_name"):
                if att in st.ncattrs():
                    t.setncattr(att, st.getncattr(att))
            t[:] = np.asarray(st[:])[steps]
        else:
            t[:] = steps
    fill = v.getncattr("_FillValue") if "_FillValue" in v.ncattrs() else None
    ov = out.createVariable(a.var, v.dtype, (("time",) if has_time else ()) + ("lat", "lon"),
                            fill_value=fill, zlib=True, complevel=1)
    for att in v.ncattrs():
        if att not in ("_FillValue",):
            ov.setncattr(att, v.getncattr(att))
    r0, r1 = rows[0], rows[-1] + 1
    if has_time:
        for i, s in enumerate(steps):
            ov[i] = np.asarray(v[s, r0:r1, :])[:, cols]
    else:
        ov[:] = np.asarray(v[r0:r1, :])[:, cols]
    out.close()
    print(f"eval_crop.py: wrote {a.output}: {a.var} "
          f"{(steps.size,) if has_time else ()}{rows.size} x {cols.size}, "
          f"lon {lon[cols[0]]:.4f}..{lon[cols[-1]]:.4f}, lat {lat[rows[0]]:.4f}..{lat[rows[-1]]:.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
