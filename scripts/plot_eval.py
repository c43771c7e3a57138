#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot a finecast-eval result: residual power spectra and sample maps, as PNG files.

Reads the JSON written by `finecast-eval --json` (spectra are inside it) and, for the maps,
the truth and prediction NetCDF files named in the JSON (or given with --truth / --pred).
Lat-lon: the coarse field and the bilinear baseline are recomputed here with the same
conventions as finecast-eval (cos(lat)-weighted k x k block means; bilinear between block
centres, held constant beyond the outer centres, wrapping in longitude on a global grid).
ICON: the "spectra" are finecast-eval's variance by refinement level, and the maps show the
cell centres (clon/clat of the prediction file) with the coarse field the prediction holds
(<var>_coarse).
"""
import argparse
import json
import os
import sys

import numpy as np

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Draw spectra (log-log, model vs baselines vs truth) and sample maps "
        "(truth / coarse / bilinear / one member / ensemble std) from a finecast-eval JSON.")
    p.add_argument("--json", required=True, help="JSON written by finecast-eval --json")
    p.add_argument("--out", default="eval",
                   help="output prefix: writes PREFIX_spectra.png and PREFIX_maps.png "
                        "(default: eval)")
    p.add_argument("--truth", help="truth NetCDF (default: the path recorded in the JSON)")
    p.add_argument("--pred", help="prediction NetCDF (default: the path recorded in the JSON)")
    p.add_argument("--step", type=int, default=0,
                   help="which evaluated time step to map, 0-based among those scored (default 0)")
    p.add_argument("--member", type=int, default=0, help="ensemble member to map (default 0)")
    p.add_argument("--no-maps", action="store_true", help="draw only the spectra")
    return p.parse_args(argv)


def fail(msg):
    print("plot_eval.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def plot_spectra(rep, path):
    fig, ax = plt.subplots(figsize=(7, 5))
    ts = rep["truth_spectrum"]
    k = np.asarray(ts["wavenumber"], dtype=float)
    sel = k > 0  # the residual has no mean, and log axes cannot show k = 0

    te = np.asarray([0.0 if v is None else v for v in ts["energy"]], dtype=float)
    # Piecewise-constant baselines have no residual at all; their round-off (1e-27) would only
    # stretch the axis, so energies far below the truth's are treated as zero and not drawn.
    floor = 1e-12 * max(te.max(), 1e-300)

    def draw(spec, label, **kw):
        e = np.asarray([np.nan if v is None else v for v in spec["energy"]], dtype=float)
        ok = sel & (e > floor)
        if not ok.any():
            ax.plot([], [], label=label + " (no residual)", **kw)
            return
        ax.loglog(k[ok], e[ok], label=label, **kw)

    draw(ts, "truth", color="black", lw=2.5)
    styles = {"nearest": "tab:gray", "bilinear": "tab:blue", "bicubic": "tab:green",
              "bspline": "tab:olive", "idw": "tab:blue", "linear": "tab:green",
              "regression": "tab:brown", "noise_white": "tab:pink", "noise_spectral": "tab:orange"}
    for row in rep["predictions"]:
        name = row["name"]
        if name == "model":
            draw(row["spectrum"], "model (%d members)" % row["members"], color="tab:red", lw=2)
            continue
        base = name.replace("_cons", "")
        draw(row["spectrum"], name, color=styles.get(base, "tab:purple"),
             ls="--" if name.endswith("_cons") else "-", lw=1.2)
    ax.set_xscale("log")
    ax.set_yscale("log")
    g = rep["grid"]
    if g.get("kind") != "unstructured":
        ax.axvline(0.25, color="0.6", lw=0.8, ls=":")
        ax.text(0.25, ax.get_ylim()[0], " upper half", color="0.4", va="bottom", fontsize=8)
        ax.axvline(0.5, color="0.6", lw=0.8, ls="-.")
        ax.text(0.5, ax.get_ylim()[0], " Nyquist", color="0.4", va="bottom", fontsize=8)
    else:
        # hf_ratio compares the finest level's variance (its band is labelled 0.5).
        ax.axvline(0.5, color="0.6", lw=0.8, ls=":")
        ax.text(0.5, ax.get_ylim()[0], "hf_ratio ", color="0.4", va="bottom", ha="right",
                fontsize=8)
    if g.get("kind") == "unstructured":
        # Band b is the R2B<coarse + b> level, labelled 0.5 / 2^(B - b) cycles per fine cell.
        ax.set_xticks(k[sel])
        ax.set_xticklabels(["R2B%d" % v for v in g["spectrum_levels"]])
        ax.minorticks_off()
        ax.set_xlabel("refinement level (band of scales between it and the level above)")
        ax.set_ylabel("residual variance per level")
        ax.set_title("fine-scale variance by level (R2B%d in R2B%d patches, %d steps)"
                     % (g["fine_level"], g["coarse_level"], g["n_times"]))
    else:
        ax.set_xlabel("wavenumber (cycles per grid spacing)")
        ax.set_ylabel("residual energy per radial bin")
        ax.set_title("fine-scale residual spectrum (%d x %d, block %d, %d steps)"
                     % (g["ny"], g["nx"], g["block"], g["n_times"]))
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


MEMBER_DIMS = ("member", "members", "ens", "ensemble", "realization", "number")


def read_var(path, name):
    import netCDF4
    if not os.path.exists(path):
        fail("file '%s' does not exist" % path)
    ds = netCDF4.Dataset(path)
    if name not in ds.variables:
        fail("file '%s' has no variable '%s'" % (path, name))
    v = ds.variables[name]
    v.set_auto_maskandscale(True)
    return ds, v


def block_means(f, w, k):
    ny, nx = f.shape
    fw = (f * w).reshape(ny // k, k, nx // k, k).sum(axis=(1, 3))
    sw = np.broadcast_to(w, f.shape).reshape(ny // k, k, nx // k, k).sum(axis=(1, 3))
    return fw / sw


def bilinear(coarse, k, periodic_x):
    nby, nbx = coarse.shape

    def axis(n, nb, periodic):
        u = (np.arange(n * k) - 0.5 * (k - 1)) / k
        b0 = np.floor(u).astype(int)
        t = u - b0
        b1 = b0 + 1
        if periodic:
            b0, b1 = b0 % nb, b1 % nb
        else:
            b0, b1 = np.clip(b0, 0, nb - 1), np.clip(b1, 0, nb - 1)
        return b0, b1, t

    y0, y1, ty = axis(nby, nby, False)
    x0, x1, tx = axis(nbx, nbx, periodic_x)
    rows = coarse[y0, :] * (1 - ty)[:, None] + coarse[y1, :] * ty[:, None]
    return rows[:, x0] * (1 - tx)[None, :] + rows[:, x1] * tx[None, :]


def plot_icon_maps(rep, args, path):
    m = rep["meta"]
    truth_path = args.truth or m["truth"]
    pred_path = args.pred or m["pred"]
    steps = [int(s) for s in m["truth_steps"].split()]
    psteps = [int(s) for s in m["pred_steps"].split()]
    if not 0 <= args.step < len(steps):
        fail("--step %d: the JSON holds %d evaluated steps" % (args.step, len(steps)))
    tds, tv = read_var(truth_path, m["truth_var"])
    truth = np.ma.filled(np.ma.asarray(tv[steps[args.step]] if tv.ndim == 2 else tv[:],
                                       dtype=float), np.nan)
    pds, pv = read_var(pred_path, m["var"])
    if "clon" not in pds.variables:
        fail("prediction '%s' has no clon/clat to draw the cells at" % pred_path)
    lon = np.rad2deg(np.asarray(pds.variables["clon"][:], dtype=float))
    lat = np.rad2deg(np.asarray(pds.variables["clat"][:], dtype=float))
    p = pv[psteps[args.step]] if pv.ndim == 3 else pv[:]
    pred = np.ma.filled(np.ma.asarray(p, dtype=float), np.nan)
    if pred.ndim == 1:
        pred = pred[None]
    if not 0 <= args.member < pred.shape[0]:
        fail("--member %d: the prediction has %d members" % (args.member, pred.shape[0]))
    panels = [("truth", truth)]
    cname = m["var"] + "_coarse"
    if cname in pds.variables:
        c = pds.variables[cname]
        panels.append(("coarse (R2B%s means)" % m.get("coarse_level", "?"),
                       np.ma.filled(np.ma.asarray(c[psteps[args.step]] if c.ndim == 2 else c[:],
                                                  dtype=float), np.nan)))
    panels.append(("member %d" % args.member, pred[args.member]))
    panels.append(("ensemble std (%d members)" % pred.shape[0],
                   pred.std(axis=0, ddof=1) if pred.shape[0] > 1 else np.zeros_like(truth)))
    # The cells as triangles when the file has their corners (the plugin's outputs do), each
    # corner's longitude taken next to its centre so that no cell spans the map.
    polys = None
    if "clon_bnds" in pds.variables and "clat_bnds" in pds.variables:
        blon = np.rad2deg(np.asarray(pds.variables["clon_bnds"][:], dtype=float))
        blat = np.rad2deg(np.asarray(pds.variables["clat_bnds"][:], dtype=float))
        blon = lon[:, None] + (blon - lon[:, None] + 180.0) % 360.0 - 180.0
        polys = np.stack([blon, blat], axis=-1)
    from matplotlib.collections import PolyCollection
    vmin, vmax = np.nanpercentile(truth, [1, 99])
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.4),
                             constrained_layout=True)
    for i, (title, f) in enumerate(panels):
        last = i == len(panels) - 1
        cmap = "magma" if last else "viridis"
        lim = (None, None) if last else (vmin, vmax)
        if polys is not None:
            im = PolyCollection(polys, array=f, cmap=cmap, edgecolors="face", linewidths=0.1)
            im.set_clim(*lim)
            axes[i].add_collection(im)
        else:
            im = axes[i].scatter(lon, lat, c=f, s=4, marker=".", linewidths=0, cmap=cmap,
                                 vmin=lim[0], vmax=lim[1])
        axes[i].set_title(title)
        axes[i].set_xlim(-180, 180)
        axes[i].set_ylim(-90, 90)
        axes[i].set_aspect("equal")
        if i >= len(panels) - 2:
            fig.colorbar(im, ax=axes[i], shrink=0.8)
    fig.suptitle("%s, evaluated step %d (ICON cells)" % (m["var"], args.step))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    tds.close()
    pds.close()


def plot_maps(rep, args, path):
    if rep["grid"].get("kind") == "unstructured":
        return plot_icon_maps(rep, args, path)
    m = rep["meta"]
    k = rep["grid"]["block"]
    ny, nx = rep["grid"]["ny"], rep["grid"]["nx"]
    truth_path = args.truth or m["truth"]
    pred_path = args.pred or m["pred"]
    steps = [int(s) for s in m["truth_steps"].split()] if m.get("truth_steps") else [0]
    psteps = [int(s) for s in m["pred_steps"].split()] if m.get("pred_steps") else [0]
    if not 0 <= args.step < len(steps):
        fail("--step %d: the JSON holds %d evaluated steps" % (args.step, len(steps)))
    ty0, tx0 = int(m["truth_y0"]), int(m["truth_x0"])
    py0, px0 = int(m["pred_y0"]), int(m["pred_x0"])

    tds, tv = read_var(truth_path, m["truth_var"])
    t = tv[steps[args.step]] if tv.ndim == 3 else tv[:]
    truth = np.ma.filled(np.ma.asarray(t, dtype=float), np.nan)[ty0:ty0 + ny, tx0:tx0 + nx]
    lat_name = tv.dimensions[-2]
    lat = np.asarray(tds.variables[lat_name][ty0:ty0 + ny], dtype=float) \
        if lat_name in tds.variables else np.zeros(ny)
    pds, pv = read_var(pred_path, m["var"])
    has_member = pv.ndim >= 3 and pv.dimensions[-3] in MEMBER_DIMS
    if pv.ndim == 4:
        p = pv[psteps[args.step]]
    elif pv.ndim == 3 and has_member:
        p = pv[:]
    elif pv.ndim == 3:
        p = pv[psteps[args.step]][None]  # (time, lat, lon): one member
    else:
        fail("prediction '%s' in '%s' has %d dimensions, expected (time, member, lat, lon) "
             "or (member, lat, lon)" % (m["var"], pred_path, pv.ndim))
    pred = np.ma.filled(np.ma.asarray(p, dtype=float), np.nan)[:, py0:py0 + ny, px0:px0 + nx]
    if not 0 <= args.member < pred.shape[0]:
        fail("--member %d: the prediction has %d members" % (args.member, pred.shape[0]))

    w = np.cos(np.deg2rad(lat))[:, None] * np.ones((1, nx))
    coarse = block_means(truth, w, k)
    periodic = m.get("periodic_x", "false") == "true"
    panels = [
        ("truth", truth),
        ("coarse (%dx%d block means)" % (k, k), np.kron(coarse, np.ones((k, k)))),
        ("bilinear", bilinear(coarse, k, periodic)),
        ("member %d" % args.member, pred[args.member]),
        ("ensemble std (%d members)" % pred.shape[0],
         pred.std(axis=0, ddof=1) if pred.shape[0] > 1 else np.zeros_like(truth)),
    ]
    vmin, vmax = np.nanpercentile(truth, [1, 99])
    fig, axes = plt.subplots(1, 5, figsize=(20, 4.2), constrained_layout=True)
    for i, (title, f) in enumerate(panels):
        if i < 4:
            im = axes[i].imshow(f, origin="lower", vmin=vmin, vmax=vmax, cmap="viridis")
        else:
            im = axes[i].imshow(f, origin="lower", cmap="magma")
        axes[i].set_title(title)
        axes[i].set_xticks([])
        axes[i].set_yticks([])
        if i >= 3:
            fig.colorbar(im, ax=axes[i], shrink=0.8)
    fig.suptitle("%s, evaluated step %d (rows as stored, first row at the bottom)"
                 % (m["var"], args.step))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    tds.close()
    pds.close()


def main(argv):
    args = parse_args(argv)
    try:
        with open(args.json) as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        fail("cannot read '%s': %s" % (args.json, e))
    for key in ("meta", "grid", "truth_spectrum", "predictions"):
        if key not in rep:
            fail("'%s' is not a finecast-eval JSON (no '%s')" % (args.json, key))
    out_dir = os.path.dirname(args.out)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    plot_spectra(rep, args.out + "_spectra.png")
    print("wrote " + args.out + "_spectra.png")
    if not args.no_maps:
        plot_maps(rep, args, args.out + "_maps.png")
        print("wrote " + args.out + "_maps.png")


if __name__ == "__main__":
    main(sys.argv[1:])
