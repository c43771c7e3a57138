# SPDX-License-Identifier: BSD-3-Clause
"""Does a finecast build have CUDA? A GPU job with a CPU-only LibTorch would train on the CPU
(device: auto) or stop at start-up (device: cuda), after its wait in the queue.

Asked of the plugin library the job loads: its dynamic dependencies (ldd, which follows the
build's RUNPATH to libfinecast_trainer and LibTorch) name libtorch_cuda / libc10_cuda in a CUDA
build. When ldd cannot follow them here (a library the login node lacks), the build folder
answers: scripts/build_cuda.sh writes finecast-build.txt, and CMake's cache has C10_CUDA_LIBRARY
only when LibTorch has CUDA.
"""

import os
import re
import subprocess

CUDA_LIBS = re.compile(r"^lib(torch_cuda|c10_cuda)[.-]")
TORCH_LIBS = re.compile(r"^lib(torch|torch_cpu|c10)\.so")
MARKER = "finecast-build.txt"

CUDA = "cuda"
CPU = "cpu"
UNKNOWN = "unknown"
MISSING = "missing"


def torch_flavour(library):
    """(CUDA | CPU | UNKNOWN | MISSING, the evidence in words)."""
    if not os.path.isfile(library):
        return MISSING, "%s does not exist" % library
    # The plugin does not link LibTorch: its trainer ranks load the trainer module beside it.
    module = os.path.join(os.path.dirname(library), "libfinecast_trainer_module.so")
    if os.path.basename(library).startswith("libfinecast_comin") and os.path.isfile(module):
        library = module
    deps = {}
    try:
        r = subprocess.run(["ldd", library], capture_output=True, text=True, timeout=60)
        for line in r.stdout.splitlines():
            parts = line.split("=>")
            if len(parts) == 2:
                deps[parts[0].strip()] = parts[1].split("(")[0].strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    cuda = sorted(n for n in deps if CUDA_LIBS.match(n))
    if cuda:
        where = deps[cuda[0]]
        return CUDA, "%s loads %s (%s)" % (os.path.basename(library), cuda[0],
                                           "not found on this node" if where == "not found" else where)
    torch = sorted(n for n in deps if TORCH_LIBS.match(n) and deps[n] != "not found")
    unresolved = sorted(n for n in deps if deps[n] == "not found")
    if torch and not unresolved:
        return CPU, "%s loads %s and no libtorch_cuda/libc10_cuda" % (
            os.path.basename(library), ", ".join("%s (%s)" % (n, deps[n]) for n in torch))
    build = os.path.dirname(os.path.dirname(os.path.abspath(library)))
    verdict = _from_build_dir(build)
    if verdict:
        return verdict
    if unresolved:
        return UNKNOWN, "ldd cannot resolve %s here, and %s has neither %s nor a CMakeCache.txt" \
            % (", ".join(unresolved), build, MARKER)
    return UNKNOWN, "ldd lists no LibTorch for %s" % library


def _from_build_dir(build):
    marker = os.path.join(build, MARKER)
    if os.path.isfile(marker):
        with open(marker) as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                if key == "cuda":
                    return (CUDA if value not in ("", "no", "none") else CPU), \
                        "%s says cuda=%s" % (marker, value)
    cache = os.path.join(build, "CMakeCache.txt")
    if os.path.isfile(cache):
        torch_dir = None
        with open(cache) as f:
            for line in f:
                if line.startswith("C10_CUDA_LIBRARY:") and "NOTFOUND" not in line:
                    return CUDA, "%s: %s" % (cache, line.strip())
                if line.startswith("Torch_DIR:"):
                    torch_dir = line.strip().partition("=")[2]
        if torch_dir:
            return CPU, "%s: LibTorch from %s has no c10_cuda (C10_CUDA_LIBRARY unset)" \
                % (cache, torch_dir)
    return None


HOW_TO_BUILD = (
    "Fix: build finecast against a CUDA LibTorch on a GPU node (docs/cuda.md):\n"
    "    scripts/build_cuda.sh --torch /path/to/libtorch   (or --python PY, a python with CUDA PyTorch)\n"
    "  then point the job at that build: --bin-dir build-cuda/bin and, in the run file, "
    "library: build-cuda/lib/libfinecast_comin.so (finecast-host, finecast-replay), or "
    "--param program.plugin_library=build-cuda/lib/libfinecast_comin.so (ICON). "
    "To train on the CPU instead: --profile cpu, or --set device=cpu")
