#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Moves an ensemble's mean part of the way to a deterministic field, keeping every deviation.

Each member x_m of --var becomes  base + W (mean - base) + (x_m - mean)  at every cell, where
mean is the ensemble mean there and base the field of --base FILE:VAR (e.g. a regression
baseline of finecast-eval --baselines-out on another interpolant): W = 1 leaves the ensemble as
it is, W = 0 centres it on the base. The deviations from the mean, hence the spread, stay; the
ensemble mean's variable <var>_mean, when there, is rewritten; the other variables stay. Cells
where a member is not finite stay as they are. docs/evaluation.md ("The strongest regression")
measures this for ICON ts: the model's mean and the regression on the linear interpolant err
differently, and W = 0.5 (chosen on the val split) beats both on the test split.

The base must have the variable's cell dimensions and be finite wherever a member is. A base
without a time dimension, or with one step, is applied to every step; one with several steps
(finecast-eval --baselines-out of a run scored at several steps) gives each step of the ensemble
the base of the same step, matched by the file's pred_step (the prediction's step indices), and
every step of the ensemble needs one. The output is written beside itself
under a temporary name and renamed, so it is whole or absent; the input is left as it is.

Usage: scripts/blend_ensemble.py --input downscaled.nc --var ts --base baselines.nc:regression_cons \\
           --weight 0.5 --output blended.nc
"""
import argparse
import os
import sys

import netCDF4
import numpy as np

import ensemble_io


def fail(msg):
    sys.exit(f"blend_ensemble.py: {msg}")


def read_base(spec, cell_shape):
    """{step: base} for a base of several steps (keyed by pred_step), or {None: base} for one."""
    path, sep, var = spec.rpartition(":")
    if not sep or not path or not var:
        fail(f"--base {spec}: expected FILE:VAR")
    if not os.path.isfile(path):
        fail(f"--base {spec}: no such file {path}")
    with netCDF4.Dataset(path) as d:
        if var not in d.variables:
            fail(f"--base {spec}: {path} has no variable '{var}' (it has: {', '.join(d.variables)})")
        base = np.ma.filled(d[var][:].astype(np.float64), np.nan)
        timed = base.ndim == len(cell_shape) + 1 and base.shape[1:] == cell_shape
        if base.shape != cell_shape and not timed:
            fail(f"--base {spec}: shape {base.shape}, expected the ensemble's cells {cell_shape}, "
                 f"with or without a time dimension first")
        if not timed or base.shape[0] == 1:
            return {None: base.reshape(cell_shape)}
        if "pred_step" not in d.variables:
            fail(f"--base {spec}: {base.shape[0]} steps but no pred_step variable in {path} to match them "
                 "to the ensemble's steps (finecast-eval --baselines-out writes one)")
        pred_steps = [int(x) for x in np.asarray(d["pred_step"][:]).ravel()]
    return dict(zip(pred_steps, base))


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--input", required=True, help="ensemble output of finecast (plugin or finecast-downscale)")
    p.add_argument("--var", required=True, help="the ensemble variable (dimensions [time,] realization, cells...)")
    p.add_argument("--base", required=True, help="FILE:VAR, the deterministic field the mean moves toward")
    p.add_argument("--weight", required=True, type=float, help="W in [0, 1]: the share of the ensemble's own mean kept")
    p.add_argument("--output", required=True, help="file to write (not the input)")
    a = p.parse_args(argv)
    if not 0.0 <= a.weight <= 1.0:
        fail(f"--weight must be in [0, 1], got {a.weight}")
    if not os.path.isfile(a.input):
        fail(f"--input {a.input}: no such file")
    if os.path.abspath(a.output) == os.path.abspath(a.input):
        fail("--output must differ from --input (the input is kept)")
    with netCDF4.Dataset(a.input) as d:
        if a.var not in d.variables:
            fail(f"{a.input} has no variable '{a.var}' (it has: {', '.join(d.variables)})")
        dims, shape = d[a.var].dimensions, d[a.var].shape
    if "realization" not in dims:
        fail(f"{a.input}: '{a.var}' has no realization dimension (dimensions {dims}): not an ensemble")
    axis = dims.index("realization")
    if axis not in (0, 1) or (axis == 1 and dims[0] != "time"):
        fail(f"{a.input}: '{a.var}' has dimensions {dims}, expected [time,] realization, cells...")
    bases = read_base(a.base, tuple(shape[axis + 1 :]))
    if None not in bases:  # a base of several steps: one for each of the ensemble's
        if axis == 0:
            fail(f"--base {a.base} has the steps {sorted(bases)} (pred_step), but '{a.var}' of {a.input} has no "
                 "time dimension")
        missing = [i for i in range(shape[0]) if i not in bases]
        if missing:
            fail(f"--base {a.base} has the steps {sorted(bases)} (pred_step) but not the ensemble's step(s) "
                 f"{missing} of {a.input}")
    cell_shape = tuple(shape[axis + 1 :])
    note = f"mean moved to {a.base} + {a.weight:g} (mean - it), deviations kept"

    def blend(d):
        v = d[a.var]
        v.set_auto_mask(False)
        mean_var = d.variables.get(a.var + "_mean")
        if mean_var is not None and mean_var.shape[-len(cell_shape):] != cell_shape:
            mean_var = None  # not the ensemble mean of these cells: left as it is
        if mean_var is not None:
            mean_var.set_auto_mask(False)
        for i in ensemble_io.steps(v):
            base = bases[None] if None in bases else bases[i]
            x = np.asarray(v[i], dtype=np.float64)
            finite = np.isfinite(x)
            if np.any(finite & ~np.isfinite(base)[None]):
                fail(f"--base {a.base} is not finite at {int((finite.any(0) & ~np.isfinite(base)).sum())} "
                     f"cells where members of {a.var} are")
            mean = x.mean(axis=0)
            y = np.where(finite, (base + a.weight * (mean - base))[None] + (x - mean[None]), x)
            v[i] = y.astype(v.dtype)
            if mean_var is not None:
                new_mean = np.where(np.isfinite(mean), base + a.weight * (mean - base), mean)
                mean_var[i if mean_var.dimensions[0] == "time" else Ellipsis] = new_mean.astype(mean_var.dtype)
        d.setncattr("finecast_blend", note)

    ensemble_io.rewrite(a.input, a.output, f"{a.var}: {note} (scripts/blend_ensemble.py, from {a.input})", blend)
    print(f"blend_ensemble.py: {a.output}: {a.var} of {a.input} with its mean moved to {a.base} + "
          f"{a.weight:g} x (mean - it), its deviations kept")


if __name__ == "__main__":
    main(sys.argv[1:])
