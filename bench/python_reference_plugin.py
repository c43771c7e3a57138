#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The reference design as a Python ComIn plugin, for measuring finecast against it in situ.

What a user runs today instead of finecast (docs/performance.md, "Against a Python plugin"):
a Python script in every host rank, loaded by a ComIn plugin that embeds Python
(bench/python_adapter.c; the script calls ComIn through bench/comin_ctypes.py). Each coupling
step the ranks gather one 2-D field to rank 0 (mpi4py Gatherv); rank 0 coarsens it to R2B0 (the
area-weighted mean of each parent's 256 cells, parent = global index // 256 on ICON's
hierarchically numbered grids), keeps the last CAPACITY steps (80 samples each), and every EVERY
steps trains the model of bench/reference_pytorch.py (MLP 256 x 3 over the noisy patch, 7
context values and a step embedding; AdamW, clipping, EMA, 50-step cosine schedule) for EPOCHS
epochs: inside the callback, or with --async on a Python thread while the host steps. Every
SAMPLE_EVERY steps it samples MEMBERS members of every patch with the EMA weights (DDPM-50 or
DDIM) and writes the ensemble mean back into a new host variable, FIELD_pyref (Scatterv). The
context is finecast's default for one ICON variable: the coarse value, the 3 edge-neighbour
parents' values, and sin lat, cos lat cos lon, cos lat sin lon of the coarse centre.

In a finecast-host run file (finecast-bench plugin --python-reference writes one):
    plugins:
      - name: pyref
        library: build/lib/libfinecast_python_adapter.so
        options: bench/python_reference_plugin.py --epochs 30 --report out/pyref.json
"""
import argparse
import copy
import json
import os
import resource
import sys
import threading
import time

import numpy as np

parser = argparse.ArgumentParser(prog="python_reference_plugin.py", description=__doc__.splitlines()[0])
parser.add_argument("--field", default="ts", help="the host's 2-D field to learn (default ts)")
parser.add_argument("--capacity", type=int, default=48, help="steps kept in the rolling buffer (default 48)")
parser.add_argument("--every", type=int, default=48, help="steps between training sessions (default 48)")
parser.add_argument("--epochs", type=int, default=1, help="epochs per session (default 1)")
parser.add_argument("--batch", type=int, default=16, help="batch size (default 16)")
parser.add_argument("--async", dest="asynchronous", action="store_true",
                    help="train on a Python thread while the host steps (a session due while one runs is skipped)")
parser.add_argument("--sample-every", type=int, default=50, help="steps between samplings, 0: never (default 50)")
parser.add_argument("--members", type=int, default=8, help="ensemble members per patch (default 8)")
parser.add_argument("--sampler", choices=["ddpm", "ddim"], default="ddpm", help="default ddpm (50 steps)")
parser.add_argument("--sample-steps", type=int, default=10, help="DDIM steps (default 10)")
parser.add_argument("--device", default="cpu", help="torch device of the trainer rank (default cpu)")
parser.add_argument("--threads", type=int, default=0, help="torch threads on the trainer rank (0: torch's default)")
parser.add_argument("--seed", type=int, default=42)
parser.add_argument("--report", default="", help="JSON file rank 0 writes at the end: sessions, timings, memory")

if __name__ == "__main__":  # run by hand: --help
    parser.parse_args()
    sys.exit("python_reference_plugin.py runs inside a ComIn host, loaded by bench/python_adapter.c")

args = parser.parse_args(sys.argv[1:])
script_dir = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, script_dir)
import comin_ctypes as comin  # noqa: E402  (needs the host's libcomin, loaded by now)
from mpi4py import MPI  # noqa: E402

comm = MPI.Comm.f2py(comin.host_mpi_comm())
rank = comm.Get_rank()
EP = "EP_ATM_WRITE_OUTPUT_BEFORE"
JG = 1
PATCH = 256  # R2B4 cells per R2B0 parent
OUT_NAME = args.field + "_pyref"


def log(msg):
    if rank == 0:
        print(f"[pyref] {msg}", file=sys.stderr, flush=True)


comin.var_request_add(OUT_NAME, JG)
comin.metadata_set_integer(OUT_NAME, JG, "zaxis_id", comin.COMIN_ZAXIS_2D)


def local_cells(blocked, n_local):
    """The first n_local cells of a (nproma, nblks, ...) array, in ICON's order (index + nproma * block)."""
    a = blocked
    while a.ndim > 2:
        a = a[..., 0]
    return a.reshape(-1, order="F")[:n_local]


class Geometry:
    """Each rank's owned cells; on rank 0 their global order, coarse centres and neighbours."""

    def __init__(self):
        glb = comin.cells_int("glb_index", JG, 1).astype(np.int64) - 1
        n_local = glb.size
        owned = local_cells(comin.cells_int("decomp_domain", JG, 2), n_local) == 0
        self.local_owned = np.flatnonzero(owned)
        self.n_local = n_local
        lon = local_cells(comin.cells_double("clon", JG, 2), n_local)[owned]
        lat = local_cells(comin.cells_double("clat", JG, 2), n_local)[owned]
        area = local_cells(comin.cells_double("area", JG, 2), n_local)[owned]
        nidx = comin.cells_int("neighbor_idx", JG, 3)  # (nproma, nblks, 3), Fortran indices
        nblk = comin.cells_int("neighbor_blk", JG, 3)
        nproma = nidx.shape[0]
        nb_local = ((nblk.astype(np.int64) - 1) * nproma + (nidx - 1)).reshape(-1, 3, order="F")[:n_local][owned]
        nb_glb = np.where(nb_local >= 0, glb[np.clip(nb_local, 0, n_local - 1)], -1)
        mine = glb[owned]
        self.counts = comm.gather(mine.size, root=0)
        parts = comm.gather((mine, lon, lat, area, nb_glb), root=0)
        if rank != 0:
            return
        order = np.concatenate([p[0] for p in parts])
        n = order.size
        if n % PATCH:
            raise RuntimeError(f"{n} cells is not a whole number of R2B0 parents of {PATCH}")
        self.order, self.n, self.n_coarse = order, n, n // PATCH
        lon_g, lat_g, area_g = np.empty(n), np.empty(n), np.empty(n)
        lon_g[order] = np.concatenate([p[1] for p in parts])
        lat_g[order] = np.concatenate([p[2] for p in parts])
        area_g[order] = np.concatenate([p[3] for p in parts])
        nbr = np.empty((n, 3), np.int64)
        nbr[order] = np.concatenate([p[4] for p in parts])
        w = area_g.reshape(-1, PATCH)
        self.weights = w / w.sum(1, keepdims=True)
        xyz = np.stack([np.cos(lat_g) * np.cos(lon_g), np.cos(lat_g) * np.sin(lon_g), np.sin(lat_g)], 1)
        c = (xyz.reshape(-1, PATCH, 3) * self.weights[..., None]).sum(1)
        c /= np.linalg.norm(c, axis=1, keepdims=True)
        clat, clon = np.arcsin(c[:, 2]), np.arctan2(c[:, 1], c[:, 0])
        self.position = np.stack([np.sin(clat), np.cos(clat) * np.cos(clon), np.cos(clat) * np.sin(clon)], 1)
        parent = np.repeat(np.arange(self.n_coarse), PATCH)[:, None]
        across = (nbr >= 0) & (nbr // PATCH != parent)
        self.neighbours = np.full((self.n_coarse, 3), -1, np.int64)
        for p in range(self.n_coarse):
            nb = np.unique(nbr[p * PATCH:(p + 1) * PATCH][across[p * PATCH:(p + 1) * PATCH]] // PATCH)
            if nb.size != 3:
                raise RuntimeError(f"R2B0 cell {p} has {nb.size} edge neighbours, expected 3")
            self.neighbours[p] = nb

    def gather(self, mine):
        """Every rank's owned values, in global order on rank 0 (None elsewhere)."""
        mine = np.ascontiguousarray(mine, dtype=np.float64)
        if rank != 0:
            comm.Gatherv(mine, None, root=0)
            return None
        recv = np.empty(self.n)
        comm.Gatherv(mine, [recv, self.counts], root=0)
        out = np.empty(self.n)
        out[self.order] = recv
        return out

    def scatter(self, full):
        """The inverse of gather: each rank's owned values."""
        mine = np.empty(self.local_owned.size)
        send = [np.ascontiguousarray(full[self.order], dtype=np.float64), self.counts] if rank == 0 else None
        comm.Scatterv(send, mine, root=0)
        return mine

    def samples(self, fine):
        """One step's 80 samples: context [80, 7], coarse [80], fine [80, 256]."""
        f = fine.reshape(-1, PATCH)
        coarse = (f * self.weights).sum(1)
        ctx = np.concatenate([coarse[:, None], coarse[self.neighbours], self.position], 1)
        return ctx, coarse, f


class Trainer:
    """Rank 0's buffer, training sessions and sampling, with bench/reference_pytorch.py's model."""

    def __init__(self):
        import torch
        import reference_pytorch as ref
        self.torch, self.ref = torch, ref
        ref.DEVICE = torch.device(args.device)
        if args.threads > 0:
            torch.set_num_threads(args.threads)
        torch.manual_seed(args.seed)
        self.trainer = None
        self.buffer = []  # (context, coarse, fine) per step, the last args.capacity steps
        self.published = None  # (EMA model, normalisation) of the last finished session
        self.thread = None
        self.gen = torch.Generator(ref.DEVICE).manual_seed(args.seed + 1)
        self.sessions, self.samplings, self.skipped = [], [], 0
        log(f"trainer on rank 0: torch {torch.__version__}, device {ref.DEVICE}, {torch.get_num_threads()} threads, "
            f"{'asynchronous' if args.asynchronous else 'synchronous'} training")

    def add(self, sample):
        self.buffer.append(sample)
        if len(self.buffer) > args.capacity:
            del self.buffer[0]

    def start_session(self, step):
        if self.thread is not None and self.thread.is_alive():
            self.skipped += 1
            log(f"step {step}: a session is still running; this one is skipped")
            return
        snapshot = list(self.buffer)
        if not args.asynchronous:
            self.session(step, snapshot)
            return
        self.thread = threading.Thread(target=self.session, args=(step, snapshot), daemon=True)
        self.thread.start()

    def session(self, step, snapshot):
        torch, ref = self.torch, self.ref
        t0 = time.perf_counter()
        ctx = np.concatenate([s[0] for s in snapshot])
        res = np.concatenate([s[2] - s[1][:, None] for s in snapshot])
        mean, std = ctx.mean(0), ctx.std(0) + 1e-12
        scale = float(np.sqrt((res ** 2).mean())) + 1e-12
        c = torch.as_tensor((ctx - mean) / std, dtype=torch.float32, device=ref.DEVICE)
        r0 = torch.as_tensor(res / scale, dtype=torch.float32, device=ref.DEVICE)
        if self.trainer is None:
            self.trainer = ref.Trainer(args.batch)
        t1 = time.perf_counter()
        for _ in range(args.epochs):
            self.trainer.epoch(c, r0)
        ema = copy.deepcopy(self.trainer.model)
        with torch.no_grad():
            for p, e in zip(ema.parameters(), self.trainer.ema):
                p.copy_(e)
        if ref.DEVICE.type == "cuda":
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        self.published = (ema, mean, std, scale)
        n = r0.shape[0] * args.epochs
        self.sessions.append({"step": step, "samples": int(r0.shape[0]), "epochs": args.epochs, "seconds": t2 - t0,
                              "train_seconds": t2 - t1, "samples_per_s": n / (t2 - t1)})
        log(f"step {step}: session {len(self.sessions)}, {args.epochs} epoch(s) of {r0.shape[0]} samples in "
            f"{t2 - t0:.2f} s ({n / (t2 - t1):.0f} samples/s)")

    def sample(self, step, ctx, coarse):
        """The ensemble mean of every patch, or None before the first session has finished."""
        if self.published is None:
            return None
        torch, ref = self.torch, self.ref
        t0 = time.perf_counter()
        model, mean, std, scale = self.published
        m = args.members
        c = torch.as_tensor(np.repeat((ctx - mean) / std, m, 0), dtype=torch.float32, device=ref.DEVICE)
        zero = torch.zeros(c.shape[0], device=ref.DEVICE)
        x = ref.sample(model, c, zero, args.sampler, self.gen, args.sample_steps).numpy()
        members = scale * x.astype(np.float64).reshape(-1, m, PATCH)
        # Conservative: each member's area-weighted patch mean is the coarse value.
        w = geometry.weights[:, None, :]
        members += (coarse - (members * w).sum(2).T).T[:, :, None]
        self.samplings.append({"step": step, "seconds": time.perf_counter() - t0})
        return members.mean(1)


geometry = trainer = field = out_var = None
step = 0
callback_seconds = []


@comin.register_callback("EP_SECONDARY_CONSTRUCTOR")
def secondary_constructor():
    global geometry, trainer, field, out_var
    field = comin.var_get([EP], args.field, JG, comin.COMIN_FLAG_READ)
    out_var = comin.var_get([EP], OUT_NAME, JG, comin.COMIN_FLAG_WRITE)
    geometry = Geometry()
    if rank == 0:
        trainer = Trainer()
        log(f"{geometry.n} cells in {geometry.n_coarse} patches on {comm.Get_size()} rank(s); buffer "
            f"{args.capacity} steps, a session every {args.every} steps ({args.epochs} epoch(s), batch {args.batch}), "
            f"{args.sampler} sampling every {args.sample_every} steps ({args.members} members)")


@comin.register_callback(EP)
def coupling_step():
    global step
    t0 = time.perf_counter()
    step += 1
    full = geometry.gather(local_cells(field, geometry.n_local)[geometry.local_owned])
    sampling = args.sample_every > 0 and step % args.sample_every == 0
    mean = None
    if rank == 0:
        ctx, coarse, fine = geometry.samples(full)
        trainer.add((ctx, coarse, fine))
        if len(trainer.buffer) >= args.capacity and step % args.every == 0:
            trainer.start_session(step)
        if sampling:
            mean = trainer.sample(step, ctx, coarse)
    if sampling and comm.bcast(mean is not None, root=0):
        mine = geometry.scatter(mean.reshape(-1) if rank == 0 else None)
        host = out_var[:, :, 0, 0, 0]  # the host's (nproma, nblks) array, written in place
        j = geometry.local_owned
        host[j % host.shape[0], j // host.shape[0]] = mine
    callback_seconds.append(time.perf_counter() - t0)


@comin.register_callback("EP_DESTRUCTOR")
def destructor():
    if rank != 0:
        return
    t0 = time.perf_counter()
    if trainer.thread is not None:
        trainer.thread.join()  # the run's end waits for a session in flight
    wait = time.perf_counter() - t0
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report = {"plugin": "python_reference", "steps": step, "ranks": comm.Get_size(), "args": vars(args),
              "sessions": trainer.sessions, "skipped_sessions": trainer.skipped, "samplings": trainer.samplings,
              "final_wait_seconds": wait, "rank0_callback_seconds": callback_seconds,
              "rank0_peak_resident_mib": peak_mib}
    if trainer.ref.DEVICE.type == "cuda":
        report["gpu_peak_allocated_mib"] = trainer.torch.cuda.max_memory_allocated() / 2**20
        report["gpu_peak_reserved_mib"] = trainer.torch.cuda.max_memory_reserved() / 2**20
    log(f"{step} steps, {len(trainer.sessions)} session(s), {len(trainer.samplings)} sampling(s); "
        f"rank 0 peak resident memory {peak_mib:.0f} MiB")
    if args.report:
        tmp = args.report + ".tmp"
        with open(tmp, "w") as f:
            json.dump(report, f, indent=1)
        os.replace(tmp, args.report)
