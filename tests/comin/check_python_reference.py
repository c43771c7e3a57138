#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Checks what the reference Python plugin (bench/python_reference_plugin.py) wrote back into its
host, from recorder files: RUN<rank>.nc (descriptive data: finecast's recorder) and VARS<rank>.nc
(ts and ts_pyref at the end of every step: finecast's recorder, RUNvars_, or ComIn's variable
recorder, vars_):
on the sampling steps ts_pyref has, in every R2B0 parent (global index // 256), the area-weighted
mean of ts, and structure inside the parent.
Usage: check_python_reference.py RUN VARS RANKS SAMPLING_STEP [SAMPLING_STEP ...]; exit 1 on failure."""
import sys

import netCDF4
import numpy as np

run, vars_, ranks, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), [int(s) for s in sys.argv[4:]]
glb, area, ts, ref = [], [], [], []
for r in range(ranks):
    with netCDF4.Dataset(f"{run}{r}.nc") as f:
        d = f["domain_1"]
        g = d["cells%glb_index"][:].astype(np.int64) - 1
        owned = d["cells%decomp_domain"][:].reshape(-1)[: g.size] == 0  # (nblks, nproma) in C order
        glb.append(g[owned])
        area.append(d["cells%area"][:].reshape(-1)[: g.size][owned])
    with netCDF4.Dataset(f"{vars_}{r}.nc") as f:
        d = f["domain_1"]
        n = g.size
        ts.append(d["ts"][:].reshape(d["ts"].shape[0], -1)[:, :n][:, owned])
        ref.append(d["ts_pyref"][:].reshape(d["ts_pyref"].shape[0], -1)[:, :n][:, owned])
order = np.concatenate(glb)
place = lambda parts: np.concatenate(parts, axis=-1)[..., np.argsort(order)]
area, ts, ref = place(area), place(ts), place(ref)
w = area.reshape(-1, 256)
w = w / w.sum(1, keepdims=True)
failures = []
for event in range(ts.shape[0]):
    step = event + 1
    coarse = (ts[event].reshape(-1, 256) * w).sum(1)
    got = ref[event].reshape(-1, 256)
    if step not in steps:
        continue
    err = np.abs((got * w).sum(1) - coarse).max()
    inside = got.std(1).min()
    print(f"step {step}: max |patch mean of ts_pyref - coarse ts| = {err:.3g} K; least within-patch std {inside:.3g} K")
    if not err < 1e-6:
        failures.append(f"step {step}: ts_pyref is not conservative ({err:.3g} K)")
    if not inside > 1e-3:
        failures.append(f"step {step}: ts_pyref is flat inside a patch")
for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)
