#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Compares two NetCDF files group by group, order-independently: every attribute and variable
of A must be in B with equal values (bitwise for integers and text, exactly for floats unless
--rtol), and the other way round unless --subset. Attributes named with --ignore are skipped.
Exit 0 when equal, 1 with one line per difference otherwise.

  compare_netcdf.py A.nc B.nc [--subset] [--ignore NAME ...] [--rtol R]
"""
import argparse
import sys

import netCDF4
import numpy as np


def attrs(obj, ignore):
    return {k: obj.getncattr(k) for k in obj.ncattrs() if k not in ignore}


def same(a, b, rtol):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "SUO" or b.dtype.kind in "SUO":
        return np.array_equal(a.astype(str), b.astype(str))
    if a.shape != b.shape:
        return False
    if np.ma.isMaskedArray(a) or np.ma.isMaskedArray(b):
        a, b = np.ma.filled(a, np.nan), np.ma.filled(b, np.nan)
    if rtol > 0:
        return bool(np.allclose(a, b, rtol=rtol, atol=0, equal_nan=True))
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


def compare(ga, gb, path, args, out):
    for name, value in attrs(ga, args.ignore).items():
        other = attrs(gb, args.ignore)
        if name not in other:
            out.append(f"{path}: attribute {name} only in A")
        elif not same(value, other[name], args.rtol):
            out.append(f"{path}: attribute {name}: {value!r} != {other[name]!r}")
    if not args.subset:
        for name in set(attrs(gb, args.ignore)) - set(attrs(ga, args.ignore)):
            out.append(f"{path}: attribute {name} only in B")
    for name, var in ga.variables.items():
        if name not in gb.variables:
            out.append(f"{path}/{name}: variable only in A")
            continue
        other = gb.variables[name]
        var.set_auto_mask(False)
        other.set_auto_mask(False)
        if var.shape != other.shape:
            out.append(f"{path}/{name}: shape {var.shape} != {other.shape}")
        elif not same(var[...], other[...], args.rtol):
            out.append(f"{path}/{name}: values differ")
        compare_var_attrs(var, other, f"{path}/{name}", args, out)
    if not args.subset:
        for name in set(gb.variables) - set(ga.variables):
            out.append(f"{path}/{name}: variable only in B")
    for name, grp in ga.groups.items():
        if name not in gb.groups:
            out.append(f"{path}/{name}: group only in A")
        else:
            compare(grp, gb.groups[name], f"{path}/{name}", args, out)


def compare_var_attrs(va, vb, path, args, out):
    a, b = attrs(va, args.ignore), attrs(vb, args.ignore)
    for name, value in a.items():
        if name not in b:
            out.append(f"{path}: attribute {name} only in A")
        elif not same(value, b[name], args.rtol):
            out.append(f"{path}: attribute {name}: {value!r} != {b[name]!r}")
    if not args.subset:
        for name in set(b) - set(a):
            out.append(f"{path}: attribute {name} only in B")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--subset", action="store_true", help="B may have more than A")
    p.add_argument("--ignore", nargs="*", default=[], help="attribute names to skip")
    p.add_argument("--rtol", type=float, default=0.0)
    args = p.parse_args()
    out = []
    with netCDF4.Dataset(args.a) as a, netCDF4.Dataset(args.b) as b:
        compare(a, b, "", args, out)
    for line in out:
        print(f"{args.a} vs {args.b}: {line}")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
