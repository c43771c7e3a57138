#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws finecast's in-situ output on a map: coarse input, the host's own fine field, one
sampled member, and the ensemble spread (last time step of the file).

Uses Debian's python3-matplotlib and python3-netcdf4:
    /usr/bin/python3 scripts/plot_demo.py --input out/demo/finecast_ts.nc --output out/demo/finecast_ts.png
"""
import argparse
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.tri as mtri  # noqa: E402
import netCDF4  # noqa: E402
import numpy as np  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True, help="finecast NetCDF output (ICON cells or lat-lon)")
    parser.add_argument("--output", required=True, help="PNG file to write")
    parser.add_argument("--var", default=None, help="variable (default: the one with a member dimension)")
    parser.add_argument("--time", type=int, default=-1, help="time index (default: the last)")
    args = parser.parse_args()

    try:
        ds = netCDF4.Dataset(args.input)
    except OSError as e:
        sys.exit(f"plot_demo: cannot open {args.input}: {e}")
    var = args.var or next((n for n, v in ds.variables.items() if "realization" in v.dimensions and v.ndim >= 3), None)
    if var is None or var not in ds.variables:
        sys.exit(f"plot_demo: {args.input} has no ensemble variable (one with a 'realization' dimension)")
    members = np.ma.filled(ds.variables[var][args.time], np.nan)  # (member, cells...) or (member, y, x)
    coarse = np.ma.filled(ds.variables[var + "_coarse"][args.time], np.nan) if var + "_coarse" in ds.variables else None
    truth = np.ma.filled(ds.variables[var + "_host"][args.time], np.nan) if var + "_host" in ds.variables else None
    when = ""
    if "time" in ds.variables:
        t = ds.variables["time"]
        try:
            when = str(netCDF4.num2date(t[args.time], t.units, getattr(t, "calendar", "standard")))
        except (AttributeError, ValueError):
            when = f"time index {args.time}"

    panels = []
    if coarse is not None:
        panels.append(("coarse input (finecast's condition)", coarse, "viridis"))
    if truth is not None:
        panels.append(("host model, fine (truth)", truth, "viridis"))
    panels.append(("one sampled member", members[0], "viridis"))
    panels.append(("ensemble spread (std over members)", np.nanstd(members, axis=0), "magma"))

    fields = [p[1] for p in panels if p[2] == "viridis"]
    vmin = np.nanmin([np.nanpercentile(f, 1) for f in fields])
    vmax = np.nanmax([np.nanpercentile(f, 99) for f in fields])
    fig, axes = plt.subplots(2, 2, figsize=(13, 7.5), constrained_layout=True)
    unstructured = "clon" in ds.variables
    if unstructured:
        lon = np.degrees(np.asarray(ds.variables["clon"][:]))
        lat = np.degrees(np.asarray(ds.variables["clat"][:]))
        tri = mtri.Triangulation(lon, lat)
        # Drop the triangles that wrap around the date line.
        x = lon[tri.triangles]
        tri.set_mask(x.max(axis=1) - x.min(axis=1) > 180)
    for ax, (title, data, cmap) in zip(axes.flat, panels):
        kw = dict(cmap=cmap) if cmap != "viridis" else dict(cmap=cmap, vmin=vmin, vmax=vmax)
        if unstructured:
            im = ax.tripcolor(tri, np.asarray(data).ravel(), shading="gouraud", **kw)
            ax.set_xlim(-180, 180)
            ax.set_ylim(-90, 90)
        else:
            im = ax.pcolormesh(np.asarray(data), shading="auto", **kw)
        ax.set_title(title)
        ax.set_aspect("auto")
        fig.colorbar(im, ax=ax, shrink=0.85, label=getattr(ds.variables[var], "units", ""))
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(f"finecast: {var} downscaled in situ, {members.shape[0]} members, {when}")
    fig.savefig(args.output, dpi=110)
    print(f"plot_demo: wrote {args.output}")


if __name__ == "__main__":
    main()
