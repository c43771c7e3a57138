#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What loading finecast costs a host rank: the time of dlopen (RTLD_NOW, as ComIn loads a
plugin) and the resident memory it adds, for

  plugin:         libfinecast_comin.so alone - a non-trainer rank since the trainer module split;
  plugin+trainer: the plugin and libfinecast_trainer_module.so (LibTorch) - a trainer rank, and
                  what every rank loaded when the plugin linked LibTorch directly.

Each case runs in a fresh process (cold for the process, warm for the page cache: the first run
of each case is discarded), `--repeat` times; the median is reported. Usage:
  bench/plugin_load.py [--lib build/lib] [--repeat 7] [--json]
"""
import argparse, ctypes, json, os, statistics, subprocess, sys, time

CHILD = r"""
import ctypes, os, sys, time
def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
before = rss_kib()
t0 = time.perf_counter()
for path in sys.argv[1:]:
    ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
seconds = time.perf_counter() - t0
print(seconds, rss_kib() - before)
"""


def measure(paths, repeat):
    times, rss = [], []
    for i in range(repeat + 1):
        out = subprocess.run([sys.executable, "-c", CHILD, *paths], check=True, capture_output=True, text=True).stdout
        t, r = out.split()
        if i > 0:  # the first run warms the page cache
            times.append(float(t))
            rss.append(int(r) / 1024)
    return {"dlopen_seconds": statistics.median(times), "added_resident_mib": statistics.median(rss),
            "runs": repeat}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(os.path.dirname(__file__), "..", "build", "lib"),
                    help="directory holding libfinecast_comin.so and libfinecast_trainer_module.so")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    a = ap.parse_args()
    plugin = os.path.abspath(os.path.join(a.lib, "libfinecast_comin.so"))
    module = os.path.abspath(os.path.join(a.lib, "libfinecast_trainer_module.so"))
    for p in (plugin, module):
        if not os.path.exists(p):
            sys.exit(f"plugin_load.py: {p} does not exist (build first, or pass --lib)")
    print(f"Loading {plugin} ...", file=sys.stderr)
    result = {"plugin": measure([plugin], a.repeat), "plugin+trainer": measure([plugin, module], a.repeat),
              "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?"),
              "cores": os.cpu_count()}
    if a.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'case':16} {'dlopen s':>9} {'+RSS MiB':>9}")
    for case in ("plugin", "plugin+trainer"):
        r = result[case]
        print(f"{case:16} {r['dlopen_seconds']:9.3f} {r['added_resident_mib']:9.1f}")
    p, t = result["plugin"], result["plugin+trainer"]
    print(f"a non-trainer rank loads {t['dlopen_seconds'] / p['dlopen_seconds']:.1f}x faster and maps "
          f"{t['added_resident_mib'] - p['added_resident_mib']:.0f} MiB less than when every rank loaded LibTorch")


if __name__ == "__main__":
    main()
