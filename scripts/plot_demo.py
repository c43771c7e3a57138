#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Draws one time step of finecast's sampled output on a lon-lat map and scores it.

Panels (one colour scale for the four that show the field itself): the host's own fine field
(the truth, <var>_host), one sampled member, the ensemble mean (<var>_mean), the coarse input
finecast conditioned on (<var>_coarse), the error of the ensemble mean, and the ensemble spread
(standard deviation over the members). ICON cells are drawn as the triangles they are, from their
corners (clon_bnds, clat_bnds); lat-lon fields as their grid boxes. A black line is the coastline:
the 0 m contour of the lon-lat relief the host averages onto its cells (finecast-host's
`orography`, etopo5 by default), which is where its land fraction fr_land changes.

Scores, printed and in the title (area-weighted over the cells where every field has a value;
cell areas from the ICON corners, cos(latitude) on lat-lon grids):
  RMSE of the ensemble mean and of the coarse input (the nearest-neighbour baseline: each fine
  cell takes its coarse cell's value), both against the truth, and the ensemble CRPS (the
  empirical-distribution formula of finecast-eval) against that of the coarse input, which for a
  single value is its absolute error.

With --baselines FILE (finecast-eval --baselines-out of the same output, last scored step) and
--eval JSON (its report), a panel shows the baseline with the lowest RMSE on the same colour
scale as the truth and the members, and the title adds its scores.

Uses Debian's python3-matplotlib and python3-netcdf4:
    /usr/bin/python3 scripts/plot_demo.py --input out/demo/finecast_ts.nc --output out/demo/finecast_ts.png
"""
import argparse
import datetime
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
import netCDF4  # noqa: E402
import numpy as np  # noqa: E402

DEFAULT_OROGRAPHY = "/usr/share/ferret-vis/data/etopo5.cdf:ROSE"  # finecast-host's default


def fail(msg):
    sys.exit(f"plot_demo: error: {msg}")


def pick_time(ds, text, path):
    """The time index that --time names: an index (negative counts from the end) or an ISO date."""
    n = len(ds.dimensions["time"]) if "time" in ds.dimensions else 1
    try:
        i = int(text)
    except ValueError:
        i = None
    if i is not None:
        if not -n <= i < n:
            fail(f"--time {text}: {path} has {n} time step(s) (0..{n - 1}, or -1 for the last)")
        return i % n
    try:
        want = datetime.datetime.fromisoformat(text)
    except ValueError:
        fail(f"--time {text}: expected a step index or an ISO 8601 date (e.g. 1979-01-05T01:00:00)")
    if "time" not in ds.variables:
        fail(f"--time {text}: {path} has no time coordinate; choose the step by index")
    dates = dates_of(ds)
    key = want.timetuple()[:6]
    for j, d in enumerate(dates):
        if (d.year, d.month, d.day, d.hour, d.minute, d.second) == key:
            return j
    fail(f"--time {text}: {path} has no step at {want.isoformat()} (steps {dates[0]} .. {dates[-1]})")


def dates_of(ds):
    t = ds.variables["time"]
    return netCDF4.num2date(t[:], t.units, getattr(t, "calendar", "standard"))


def field(ds, name, t):
    """Step t of a (time, ...) variable as a float array with NaN where there is no value."""
    return np.ma.filled(np.ma.asarray(ds.variables[name][t], dtype=np.float64), np.nan)


def icon_cells(ds):
    """Cell centres and corner polygons (degrees) of an ICON output, ready for a lon-lat map."""
    if "clon_bnds" not in ds.variables or "clat_bnds" not in ds.variables:
        fail("the file has clon/clat but no clon_bnds/clat_bnds corners (docs/output.md); cannot draw cells")
    clon = np.degrees(np.asarray(ds.variables["clon"][:], dtype=np.float64))
    clat = np.degrees(np.asarray(ds.variables["clat"][:], dtype=np.float64))
    lonb = np.degrees(np.asarray(ds.variables["clon_bnds"][:], dtype=np.float64))
    latb = np.degrees(np.asarray(ds.variables["clat_bnds"][:], dtype=np.float64))
    clon = (clon + 180) % 360 - 180
    # A corner at a pole has no longitude of its own: give it the cell's.
    lonb = np.where(np.abs(latb) > 89.999, clon[:, None], lonb)
    # Corners next to their centre, so a cell on the date line is one piece that sticks out.
    lonb = clon[:, None] + (lonb - clon[:, None] + 180) % 360 - 180
    return clon, clat, lonb, latb


def icon_areas(lonb, latb):
    """Spherical areas (unit sphere) of the triangles with these corners (degrees)."""
    lon, lat = np.radians(lonb), np.radians(latb)
    v = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1)
    a, b, c = v[:, 0], v[:, 1], v[:, 2]
    triple = np.abs(np.einsum("ij,ij->i", a, np.cross(b, c)))
    denom = 1 + np.einsum("ij,ij->i", a, b) + np.einsum("ij,ij->i", b, c) + np.einsum("ij,ij->i", c, a)
    return 2 * np.arctan2(triple, denom)


def latlon_coords(ds, var):
    """(lon, lat, columns) of a lat-lon variable: 2-D lon and lat (degrees) and the column order
    that puts a regular grid's longitudes into -180..180; None when the file has no coordinates."""
    ydim, xdim = ds.variables[var].dimensions[-2:]
    nx = ds.variables[var].shape[-1]
    if "lat" in ds.variables and "lon" in ds.variables and ds.variables["lat"].ndim == 2:  # rotated pole
        lon = np.asarray(ds.variables["lon"][:], dtype=np.float64)
        return lon, np.asarray(ds.variables["lat"][:], dtype=np.float64), np.arange(nx)
    if ydim in ds.variables and xdim in ds.variables:
        units = getattr(ds.variables[ydim], "units", "")
        if units.startswith("degree") and getattr(ds.variables[ydim], "standard_name", "") != "grid_latitude":
            x = (np.asarray(ds.variables[xdim][:], dtype=np.float64) + 180) % 360 - 180
            columns = np.argsort(x, kind="stable")
            lon, lat = np.meshgrid(x[columns], np.asarray(ds.variables[ydim][:], dtype=np.float64))
            return lon, lat, columns
    return None


def scores(members, mean, truth, coarse, weights):
    """Area-weighted RMSE and CRPS of the ensemble (mean) and of the coarse input against the truth."""
    ok = np.isfinite(truth) & np.isfinite(coarse) & np.isfinite(mean) & np.all(np.isfinite(members), axis=0)
    w = weights[ok] / weights[ok].sum()
    x, y, c, m = members[:, ok], truth[ok], coarse[ok], mean[ok]
    spread_term = np.abs(x[:, None, :] - x[None, :, :]).mean(axis=(0, 1))
    crps = np.abs(x - y).mean(axis=0) - 0.5 * spread_term
    return {
        "cells": int(ok.sum()),
        "rmse_mean": float(np.sqrt(np.sum(w * (m - y) ** 2))),
        "rmse_coarse": float(np.sqrt(np.sum(w * (c - y) ** 2))),
        "crps": float(np.sum(w * crps)),
        "crps_coarse": float(np.sum(w * np.abs(c - y))),
    }


def land_outline(spec):
    """(lon, lat, height) of a lon-lat relief "FILE:VAR", lon in -180..180; None when not there."""
    path, _, var = spec.rpartition(":")
    if not path:
        path, var = spec, "ROSE"
    if not os.path.exists(path):
        print(f"plot_demo: no land outline: {path} not found (--orography FILE:VAR, or none)", file=sys.stderr)
        return None
    with netCDF4.Dataset(path) as ds:
        if var not in ds.variables or ds.variables[var].ndim != 2:
            fail(f"--orography {spec}: {path} has no 2-D variable {var}")
        v = ds.variables[var]
        ydim, xdim = v.dimensions
        z = np.ma.filled(np.ma.asarray(v[:], dtype=np.float32), np.nan)
        lat = np.asarray(ds.variables[ydim][:], dtype=np.float64)
        lon = np.asarray(ds.variables[xdim][:], dtype=np.float64)
    step = max(1, int(round(0.25 / abs(lon[1] - lon[0]))))  # a quarter degree is plenty for a line
    z, lat, lon = z[::step, ::step], lat[::step], lon[::step]
    lon = (lon + 180) % 360 - 180
    order = np.argsort(lon)
    return lon[order], lat, z[:, order]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", required=True, help="finecast NetCDF output (ICON cells or lat-lon)")
    parser.add_argument("--output", required=True, help="PNG file to write")
    parser.add_argument("--var", default=None, help="variable (default: the one with a realization dimension)")
    parser.add_argument("--time", default="-1",
                        help="step to draw: an index (negative from the end; default -1, the last) or an ISO 8601 date")
    parser.add_argument("--member", type=int, default=0, help="member drawn in the 'one member' panel (default 0)")
    parser.add_argument("--baselines", default=None,
                        help="finecast-eval --baselines-out file of this output: draw the best baseline")
    parser.add_argument("--eval", default=None, help="finecast-eval --json report of this output (which baseline is best)")
    parser.add_argument("--orography", default=DEFAULT_OROGRAPHY,
                        help="FILE:VAR, a lon-lat relief (m) whose 0 m contour is drawn as the coastline "
                             f"(default {DEFAULT_OROGRAPHY}, finecast-host's); 'none' for no outline")
    args = parser.parse_args()

    try:
        ds = netCDF4.Dataset(args.input)
    except OSError as e:
        fail(f"cannot open {args.input}: {e}")
    var = args.var or next((n for n, v in ds.variables.items() if "realization" in v.dimensions and v.ndim >= 3), None)
    if var is None or var not in ds.variables:
        fail(f"{args.input} has no ensemble variable (one with a 'realization' dimension; docs/output.md)")
    t = pick_time(ds, args.time, args.input)
    members = field(ds, var, t)  # (member, cells) or (member, y, x)
    if not 0 <= args.member < members.shape[0]:
        fail(f"--member {args.member}: {args.input} has {members.shape[0]} members (0..{members.shape[0] - 1})")
    with np.errstate(all="ignore"):
        mean = field(ds, var + "_mean", t) if var + "_mean" in ds.variables else np.nanmean(members, axis=0)
        spread = np.nanstd(members, axis=0)
    coarse = field(ds, var + "_coarse", t) if var + "_coarse" in ds.variables else None
    truth = field(ds, var + "_host", t) if var + "_host" in ds.variables else None
    units = getattr(ds.variables[var], "units", "")
    # The quantity, not this variable's long_name ("... downscaled by finecast"): the truth and the
    # coarse input share the colour bar.
    name = getattr(ds.variables[var], "standard_name", var).replace("_", " ")
    when = str(dates_of(ds)[t]) if "time" in ds.variables else f"step {t}"

    unstructured = "clon" in ds.variables and members.ndim == 2
    if unstructured:
        clon, clat, lonb, latb = icon_cells(ds)
        weights = icon_areas(lonb, latb)
        verts = np.stack([lonb, latb], axis=-1)
        # Cells on the date line are drawn on both sides of the map.
        east, west = np.where(lonb.max(axis=1) > 180)[0], np.where(lonb.min(axis=1) < -180)[0]
        polys = np.concatenate([verts, verts[east] - [360, 0], verts[west] + [360, 0]])
        index = np.concatenate([np.arange(len(verts)), east, west])
        coords = None
    else:
        coords = latlon_coords(ds, var)
        weights = np.cos(np.radians(coords[1])) if coords is not None else np.ones(members.shape[1:])

    score = None
    if truth is not None and coarse is not None:
        score = scores(members, mean, truth, coarse, weights)
        print(f"plot_demo: scores of {var} at {when} ({members.shape[0]} members, {score['cells']} cells, "
              f"area-weighted): ensemble-mean RMSE {score['rmse_mean']:.6g} {units}, "
              f"coarse input RMSE {score['rmse_coarse']:.6g} {units}; "
              f"CRPS {score['crps']:.6g} {units}, coarse input CRPS {score['crps_coarse']:.6g} {units}")
    else:
        print(f"plot_demo: {args.input} has no {var}_host (truth) or {var}_coarse: no scores")

    best = None  # (name, field, rmse, mae) of the baseline with the lowest RMSE
    if args.baselines and args.eval:
        import json
        with open(args.eval) as f:
            rows = [r for r in json.load(f)["predictions"] if r["name"] != "model"]
        row = min(rows, key=lambda r: r["rmse"])
        with netCDF4.Dataset(args.baselines) as b:
            if row["name"] not in b.variables:
                fail(f"--baselines {args.baselines} has no variable {row['name']} (written by another finecast-eval run?)")
            bvar = b.variables[row["name"]]
            last = bvar[-1] if bvar.dimensions[0] == "time" else bvar[:]  # the last scored step
            best = (row["name"], np.asarray(last, dtype=np.float64).reshape(members.shape[1:]),
                    row["rmse"], row["mae"])

    panels = []  # (title, data, kind)
    if truth is not None:
        panels.append(("host model, fine (truth)", truth, "field"))
    panels.append((f"one sampled member (#{args.member})", members[args.member], "field"))
    panels.append((f"ensemble mean ({members.shape[0]} members)", mean, "field"))
    if best is not None:
        panels.append((f"best baseline: {best[0]} (RMSE {best[2]:.3g} {units})", best[1], "field"))
    if coarse is not None:
        panels.append(("coarse input (finecast's condition)", coarse, "field"))
    if truth is not None:
        panels.append(("ensemble mean - truth", mean - truth, "error"))
    panels.append(("ensemble spread (std over members)", spread, "spread"))

    shown = np.concatenate([np.ravel(p[1]) for p in panels if p[2] == "field"])
    shown = shown[np.isfinite(shown)]
    lo, hi = np.percentile(shown, [1, 99]) if shown.size else (0, 1)
    norms = {"field": Normalize(lo, hi)}
    if truth is not None:
        err = np.abs(mean - truth)
        e = np.nanpercentile(err, 99) if np.isfinite(err).any() else 1.0
        norms["error"] = Normalize(-e, e)
    s = np.nanpercentile(spread, 99) if np.isfinite(spread).any() else 1.0
    norms["spread"] = Normalize(0, s if s > 0 else 1.0)
    cmaps = {"field": "viridis", "error": "RdBu_r", "spread": "magma"}
    labels = {"field": f"{name} ({units})", "error": f"error ({units})", "spread": f"spread ({units})"}

    outline = None if args.orography == "none" else land_outline(args.orography)
    ncols = 4 if len(panels) > 6 else 3
    nrows = (len(panels) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.7 * ncols, 4.6 * nrows + 0.6), constrained_layout=True, squeeze=False)
    for ax, (title, data, kind) in zip(axes.flat, panels):
        kw = dict(cmap=cmaps[kind], norm=norms[kind])
        if unstructured:
            # Edges in the cell's colour close the hairline seams an antialiased fill leaves.
            im = PolyCollection(polys, array=np.ravel(data)[index], edgecolors="face", linewidths=0.3, **kw)
            ax.add_collection(im)
            ax.set_xlim(-180, 180)
            ax.set_ylim(-90, 90)
        elif coords is not None:
            im = ax.pcolormesh(coords[0], coords[1], data[:, coords[2]], shading="auto", **kw)
        else:
            im = ax.pcolormesh(data, shading="auto", **kw)
        if outline is not None and (unstructured or coords is not None):
            xlim, ylim = ax.get_xlim(), ax.get_ylim()
            ax.contour(outline[0], outline[1], outline[2], levels=[0.0], colors="k", linewidths=0.5)
            ax.set_xlim(xlim)
            ax.set_ylim(ylim)
        if unstructured or coords is not None:
            ax.set_xlabel("longitude (degrees east)")
            ax.set_ylabel("latitude (degrees north)")
        else:
            ax.set_xlabel("x (grid index)")
            ax.set_ylabel("y (grid index)")
        ax.set_title(title)
        fig.colorbar(im, ax=ax, shrink=0.9, label=labels[kind])
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    title = f"finecast: {var} downscaled in situ, {members.shape[0]} members, {when}"
    if score is not None:
        title += (f"\nensemble-mean RMSE {score['rmse_mean']:.3g} {units} (coarse input {score['rmse_coarse']:.3g} {units}), "
                  f"CRPS {score['crps']:.3g} {units} (coarse input {score['crps_coarse']:.3g} {units}); area-weighted")
    if best is not None:
        title += f"; best baseline {best[0]}: RMSE {best[2]:.3g} {units}, MAE (its CRPS) {best[3]:.3g} {units}"
    fig.suptitle(title)
    fig.savefig(args.output, dpi=110)
    print(f"plot_demo: wrote {args.output}")


if __name__ == "__main__":
    main()
