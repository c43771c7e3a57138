#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The host's step time while an asynchronous session trains, from `finecast-bench plugin` runs.

Each run folder holds the three step-time files `finecast-bench plugin` writes
(/tmp/finecast-bench-plugin/step_times_{0,1,2}.csv: no plugin, train.async false, train.async
true; copied after each run). For the steps after the first session starts (49 to the last) it
prints the median step of each case, the synchronous case's ordinary steps only (no session, no
sampling: the plugin's own work per step), and the ratios docs/performance.md reports.

    /usr/bin/python3 bench/host_step_medians.py bench/results/cpu2_xeon_host_step_2026-11-29/after
"""
import csv
import glob
import os
import statistics
import sys


def step_times(path):
    with open(path) as f:
        return {int(r["step"]): float(r["step_seconds"]) for r in csv.DictReader(f)}


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    runs = sorted(d for d in glob.glob(os.path.join(sys.argv[1], "*_rep*")) if os.path.isdir(d))
    if not runs:
        print(f"no run folders (*_rep*) in {sys.argv[1]}", file=sys.stderr)
        return 1
    print("run               none ms  plugin, no session ms   async ms   async/none  async/plugin-only")
    for d in runs:
        none, sync, asyn = (step_times(os.path.join(d, f"step_times_{i}.csv")) for i in range(3))
        last = max(none)
        window = range(49, last + 1)
        # Sessions every 48 steps, samplings every 50 (configs/demo.yaml).
        busy = set(range(48, last + 1, 48)) | set(range(50, last + 1, 50))
        median = lambda t, steps: statistics.median(t[s] for s in steps if s in t)
        n = median(none, window)
        p = median(sync, [s for s in window if s not in busy])
        a = median(asyn, window)
        print(f"{os.path.basename(d):16s} {n * 1e3:8.2f}  {p * 1e3:8.2f} ({p / n:.3f}x)  {a * 1e3:9.2f}   "
              f"{a / n:9.3f}x  {a / p:9.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
