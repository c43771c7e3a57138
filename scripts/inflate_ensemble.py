#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Applies a spread inflation F to an ensemble output of finecast after the fact.

Each member's deviation from the ensemble mean at its cell is multiplied by F, as finecast's
sampler does with sample.inflation / --inflation F: the ensemble mean, every member's patch mean
and the other variables stay. The result equals sampling again with --inflation F (same checkpoint
and seed) up to float32 rounding (docs/evaluation.md, "Calibrated ensembles"), without the cost
of sampling: an inflation fitted on a val split can be applied to test outputs already written.
F multiplies the one the file was sampled with: its global attribute finecast_sampling
("ddpm, inflation 1.5") is updated ("ddpm, inflation 3" for F = 2), and a history line is added.

The output is written beside itself under a temporary name and renamed, so it is whole or absent;
the input is left as it is.

Usage: scripts/inflate_ensemble.py --input downscaled.nc --var orog --factor 1.48 --output inflated.nc
"""
import argparse
import os
import re
import sys

import netCDF4
import numpy as np

import ensemble_io


def inflated_sampling(text, factor):
    """finecast_sampling with its inflation multiplied by `factor` ("ddpm" -> "ddpm, inflation F")."""
    m = re.search(r"inflation ([0-9.eE+-]+)", text)
    if m:
        return text[: m.start(1)] + f"{float(m.group(1)) * factor:.6g}" + text[m.end(1):]
    return (text + ", " if text else "") + f"inflation {factor:.6g}"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", required=True, help="ensemble output of finecast (plugin or finecast-downscale)")
    p.add_argument("--var", required=True, help="the ensemble variable (dimensions time, realization, ...)")
    p.add_argument("--factor", required=True, type=float, help="F > 0: deviations from the ensemble mean times F")
    p.add_argument("--output", required=True, help="file to write (not the input)")
    a = p.parse_args(argv)
    if not a.factor > 0:
        sys.exit(f"inflate_ensemble.py: --factor must be > 0, got {a.factor}")
    if not os.path.isfile(a.input):
        sys.exit(f"inflate_ensemble.py: --input {a.input}: no such file")
    if os.path.abspath(a.output) == os.path.abspath(a.input):
        sys.exit("inflate_ensemble.py: --output must differ from --input (the input is kept)")
    with netCDF4.Dataset(a.input) as d:
        if a.var not in d.variables:
            sys.exit(f"inflate_ensemble.py: {a.input} has no variable '{a.var}' (it has: {', '.join(d.variables)})")
        if "realization" not in d[a.var].dimensions:
            sys.exit(f"inflate_ensemble.py: {a.input}: '{a.var}' has no realization dimension "
                     f"(dimensions {d[a.var].dimensions}): not an ensemble")
        sampling = d.getncattr("finecast_sampling") if "finecast_sampling" in d.ncattrs() else ""

    def inflate(d):
        v = d[a.var]
        v.set_auto_mask(False)
        axis = v.dimensions.index("realization")
        for i in ensemble_io.steps(v):
            x = np.asarray(v[i], dtype=np.float64)
            mean = x.mean(axis=axis if i is Ellipsis else axis - 1, keepdims=True)
            v[i] = (mean + a.factor * (x - mean)).astype(v.dtype)
        d.setncattr("finecast_sampling", inflated_sampling(sampling, a.factor))

    ensemble_io.rewrite(a.input, a.output,
                        f"{a.var} inflated by {a.factor:.6g} (scripts/inflate_ensemble.py, from {a.input})", inflate)
    print(f"inflate_ensemble.py: {a.output}: {a.var} of {a.input} with its deviations from the ensemble mean "
          f"times {a.factor:.6g} (finecast_sampling: {inflated_sampling(sampling, a.factor)})")


if __name__ == "__main__":
    main(sys.argv[1:])
