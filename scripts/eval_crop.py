#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write a cropped CF copy of a lat-lon NetCDF field, for training/scoring splits of the evaluation.

finecast-replay and finecast-downscale take whole files, so the held-out splits of
docs/evaluation.md (longitude bands of etopo5, month ranges of tas) are cut out here into a
git-ignored folder (out/eval/...). The copy holds only the chosen field, its lat/lon
coordinates (CF names and units) and, when the source has one, its time axis; values are copied
bit for bit, missing values stay missing (_FillValue of the source). A rotated-pole field keeps
its rotated coordinates (names and attributes as in the source) and its grid mapping; a
dimension of length 1 between time and the grid (e.g. height) is dropped. With --time-mean NAME
the copy is instead the mean of the kept steps, a field NAME without a time axis: the static
covariate of the time-split evaluation (the training months' climatology, docs/evaluation.md).
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
    p.add_argument("--cols", nargs=2, type=int, metavar=("C0", "C1"),
                   help="keep columns C0 <= column < C1 (0-based, file order; not with --lon)")
    p.add_argument("--time", nargs=2, type=int, metavar=("T0", "T1"),
                   help="keep steps T0 <= step < T1 (0-based). Default: all")
    p.add_argument("--time-mean", metavar="NAME",
                   help="write the mean over the kept steps (missing values left out) as the "
                        "field NAME without a time axis, instead of the steps")
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
    # Dimensions of length 1 between time and the grid (height) are dropped.
    squeeze = [i for i, d in enumerate(dims[:-2]) if i > 0 and v.shape[i] == 1]
    if len(dims) == 4 and len(squeeze) == 1:
        dims = (dims[0],) + dims[2:]
    elif len(dims) not in (2, 3):
        fail(f"{a.input}:{a.var} has dims {dims}; expected [time,] [1,] lat, lon")
    mapping = v.getncattr("grid_mapping") if "grid_mapping" in v.ncattrs() else ""
    rotated = bool(mapping) and mapping in src.variables and \
        src.variables[mapping].getncattr("grid_mapping_name") == "rotated_latitude_longitude"
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
    if a.cols:
        if a.lon:
            fail("give --lon or --cols, not both")
        cols = np.arange(a.cols[0], a.cols[1])
        if cols.size == 0 or cols[0] < 0 or cols[-1] >= lon.size:
            fail(f"--cols {a.cols} is outside the {lon.size} columns of {a.input}")
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
    elif a.time_mean:
        fail(f"{a.input}:{a.var} has no time dimension to average; drop --time-mean")
    out_var = a.time_mean or a.var

    src.set_auto_mask(False)  # copy raw values; the fill value travels as an attribute
    out = netCDF4.Dataset(a.output, "w", format="NETCDF4")
    out.setncattr("history", "scripts/eval_crop.py " + " ".join(argv))
    out.setncattr("source", a.input)
    if has_time and a.time_mean:
        out.setncattr("comment", f"{out_var}: mean of {a.var} over steps {steps[0]}..{steps[-1]} of {a.input}")
    if has_time and not a.time_mean:
        out.createDimension("time", None)
    yname, xname = (ydim, xdim) if rotated else ("lat", "lon")
    out.createDimension(yname, rows.size)
    out.createDimension(xname, cols.size)
    la = out.createVariable(yname, "f8", (yname,))
    lo = out.createVariable(xname, "f8", (xname,))
    if rotated:  # the source's rotated coordinates and its grid mapping, as they are
        for var_out, name in ((la, ydim), (lo, xdim)):
            for att in src.variables[name].ncattrs():
                if att not in ("_FillValue", "bounds"):
                    var_out.setncattr(att, src.variables[name].getncattr(att))
        gm = out.createVariable(mapping, "c")
        for att in src.variables[mapping].ncattrs():
            gm.setncattr(att, src.variables[mapping].getncattr(att))
    else:
        la.units, la.standard_name, la.axis = "degrees_north", "latitude", "Y"
        lo.units, lo.standard_name, lo.axis = "degrees_east", "longitude", "X"
    la[:] = lat[rows]
    lo[:] = lon[cols]
    if has_time and not a.time_mean:
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
    timed = has_time and not a.time_mean
    ov = out.createVariable(out_var, v.dtype, (("time",) if timed else ()) + (yname, xname),
                            fill_value=fill, zlib=True, complevel=1)
    for att in v.ncattrs():
        if att not in ("_FillValue", "coordinates"):
            ov.setncattr(att, v.getncattr(att))
    r0, r1 = rows[0], rows[-1] + 1

    def step_slice(t):
        x = np.asarray(v[t, 0, r0:r1, :] if len(v.dimensions) == 4 else v[t, r0:r1, :])
        return x[:, cols]

    if timed:
        for i, s in enumerate(steps):
            ov[i] = step_slice(s)
    elif has_time:  # the mean of the kept steps, in double, missing values left out
        total = np.zeros((rows.size, cols.size))
        count = np.zeros((rows.size, cols.size))
        for s in steps:
            x = step_slice(s).astype(np.float64)
            ok = np.isfinite(x) if fill is None else np.isfinite(x) & (x != fill)
            total[ok] += x[ok]
            count[ok] += 1
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan if fill is None else fill)
        ov[:] = mean.astype(v.dtype)
    else:
        ov[:] = np.asarray(v[r0:r1, :])[:, cols]
    out.close()
    what = f"{out_var} (mean of {steps.size} steps)" if has_time and a.time_mean else a.var
    print(f"eval_crop.py: wrote {a.output}: {what} "
          f"{(steps.size,) if timed else ()}{rows.size} x {cols.size}, "
          f"lon {lon[cols[0]]:.4f}..{lon[cols[-1]]:.4f}, lat {lat[rows[0]]:.4f}..{lat[rows[-1]]:.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
