#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The reference: finecast's default model and training/sampling loop in PyTorch from Python.

Same network (MLP over concat(noisy patch, context, sinusoidal step embedding), 3 SiLU layers of
width 256), same cosine schedule (50 steps), same conservative projection, AdamW with warm-up +
cosine decay, gradient clipping, EMA, NaN check per step; DDPM (50 steps) and DDIM (10 steps)
samplers with the same x0 clipping. finecast-bench trainer runs this script itself and prints
the ratios; run it alone with:
    /usr/bin/python3 bench/reference_pytorch.py [--json] [--threads 2] [--device cpu|cuda]
On CUDA the model, data and schedule live on the GPU and the noise is drawn there, as a PyTorch
user would write it; timings synchronise the device and include copying samples to the host.
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

C, P, HIDDEN, DEPTH, TEMB, T, N = 7, 256, 256, 3, 64, 50, 3840


def sinusoidal_table(steps, dim):
    half = dim // 2
    t = torch.arange(steps, dtype=torch.float64).unsqueeze(1)
    freq = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float64) / half)
    arg = t * freq.unsqueeze(0)
    return torch.cat([torch.sin(arg), torch.cos(arg)], 1).float()


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", sinusoidal_table(T, TEMB), persistent=False)
        dims = [P + C + TEMB] + [HIDDEN] * DEPTH
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.out = nn.Linear(HIDDEN, P)

    def forward(self, x, ctx, t):
        h = torch.cat([x, ctx, self.table.index_select(0, t)], 1)
        for layer in self.layers:
            h = F.silu(layer(h))
        return self.out(h)


def cosine_alpha_bar(steps, s=0.008):
    f = lambda u: math.cos((u / steps + s) / (1 + s) * math.pi / 2) ** 2
    ab, prev = [], 1.0
    for i in range(steps):
        beta = min(1 - f(i + 1) / f(i), 0.999)
        prev *= 1 - beta
        ab.append(prev)
    return ab


AB = cosine_alpha_bar(T)
SQRT_AB = torch.tensor([math.sqrt(a) for a in AB])
SQRT_1MAB = torch.tensor([math.sqrt(1 - a) for a in AB])
DEVICE = torch.device("cpu")


def lr_at(step, lr=1e-3, warmup=100, decay=10000, min_ratio=0.1):
    if step < warmup:
        return lr * (step + 1) / warmup
    d = step - warmup
    if d >= decay:
        return lr * min_ratio
    return lr * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * d / decay)))


def remove_mean(x):
    return x - x.mean(1, keepdim=True)


def make_data(gen):
    ctx = torch.randn(N, C, generator=gen)
    pattern = torch.sin(torch.linspace(0, 6.28, P))
    fine = ctx[:, :1] + ctx[:, 1:2] * pattern + 0.3 * torch.randn(N, P, generator=gen)
    return ctx, fine


class Trainer:
    def __init__(self, batch):
        self.model = Mlp().to(DEVICE)
        self.ema = [p.detach().clone() for p in self.model.parameters()]
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3, weight_decay=1e-4, foreach=True)
        self.gen = torch.Generator(DEVICE).manual_seed(42)
        self.sqrt_ab, self.sqrt_1mab = SQRT_AB.to(DEVICE), SQRT_1MAB.to(DEVICE)
        self.batch, self.step = batch, 0

    def epoch(self, ctx, r0):
        perm = torch.randperm(r0.shape[0], generator=self.gen, device=DEVICE)
        params = list(self.model.parameters())
        for start in range(0, r0.shape[0], self.batch):
            idx = perm[start:start + self.batch]
            b = idx.shape[0]
            t = torch.randint(0, T, (b,), generator=self.gen, device=DEVICE)
            eps = remove_mean(torch.randn(b, P, generator=self.gen, device=DEVICE))
            x0, c = r0.index_select(0, idx), ctx.index_select(0, idx)
            a, s = self.sqrt_ab.index_select(0, t).unsqueeze(1), self.sqrt_1mab.index_select(0, t).unsqueeze(1)
            x_t = torch.addcmul(a * x0, s, eps)
            self.opt.zero_grad(set_to_none=True)
            loss = F.mse_loss(remove_mean(self.model(x_t, c, t)), eps)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(params, 1.0)
            if not (math.isfinite(loss.item()) and math.isfinite(norm.item())):
                continue
            for g in self.opt.param_groups:
                g["lr"] = lr_at(self.step)
            self.opt.step()
            d = min(0.999, (1 + self.step) / (10 + self.step))
            with torch.no_grad():
                torch._foreach_mul_(self.ema, d)
                torch._foreach_add_(self.ema, params, alpha=1 - d)
            self.step += 1


def estimates(x, out, t):
    a, b = math.sqrt(AB[t]), math.sqrt(1 - AB[t])
    x0 = remove_mean(((x - b * out) / a).clamp(-20, 20))
    return x0, (x - a * x0) / b


@torch.inference_mode()
def sample(model, ctx, coarse, sampler, gen, steps=10):
    x = remove_mean(torch.randn(ctx.shape[0], P, generator=gen, device=DEVICE))
    tcache = {}
    net = lambda x, t: remove_mean(
        model(x, ctx, tcache.setdefault(t, torch.full((x.shape[0],), t, dtype=torch.long, device=DEVICE))))
    if sampler == "ddpm":
        for t in range(T - 1, -1, -1):
            x0, _ = estimates(x, net(x, t), t)
            ab, ab_prev, beta = AB[t], AB[t - 1] if t > 0 else 1.0, 1 - AB[t] / (AB[t - 1] if t > 0 else 1.0)
            mean = beta * math.sqrt(ab_prev) / (1 - ab) * x0 + (1 - ab_prev) * math.sqrt(1 - beta) / (1 - ab) * x
            if t > 0:
                mean.add_(remove_mean(torch.randn(x.shape, generator=gen, device=DEVICE)),
                          alpha=math.sqrt(beta * (1 - ab_prev) / (1 - ab)))
            x = mean
    else:
        ts = [i * T // steps for i in range(steps - 1, -1, -1)]
        for i, t in enumerate(ts):
            x0, eps = estimates(x, net(x, t), t)
            if i + 1 == len(ts):
                x = x0
                break
            ab_prev = AB[ts[i + 1]]
            x = math.sqrt(ab_prev) * x0 + math.sqrt(1 - ab_prev) * eps
    fine = coarse.unsqueeze(1) + x
    return (fine - fine.mean(1, keepdim=True) + coarse.unsqueeze(1)).cpu()  # the caller gets host memory


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        if DEVICE.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if DEVICE.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    args = ap.parse_args()
    global DEVICE
    DEVICE = torch.device(args.device)
    if DEVICE.type == "cuda" and not torch.cuda.is_available():
        ap.error(f"--device {args.device}: this PyTorch sees no CUDA device")
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(1)
    ctx, fine = make_data(gen)
    ctx, fine = ctx.to(DEVICE), fine.to(DEVICE)
    coarse = fine.mean(1)
    res = fine - coarse.unsqueeze(1)
    r0 = res / res.pow(2).mean().sqrt()
    ctxn = (ctx - ctx.mean(0)) / ctx.std(0)
    out = {"device": str(DEVICE), "threads": torch.get_num_threads(), "torch": torch.__version__}
    for batch in (16, 256):
        tr = Trainer(batch)
        tr.epoch(ctxn, r0)  # warm-up: allocator, optimizer state
        sec = best_of(lambda: tr.epoch(ctxn, r0), args.repeats)
        out[f"train_epoch_s_b{batch}"] = sec
        out[f"train_samples_per_s_b{batch}"] = N / sec
    model = tr.model
    sgen = torch.Generator(DEVICE).manual_seed(7)
    c80, coarse80 = ctxn[:80].contiguous(), coarse[:80].contiguous()
    sample(model, c80, coarse80, "ddpm", sgen)
    out["sample_ddpm50_80_s"] = best_of(lambda: sample(model, c80, coarse80, "ddpm", sgen), args.repeats * 3)
    out["sample_ddim10_80_s"] = best_of(lambda: sample(model, c80, coarse80, "ddim", sgen, 10), args.repeats * 3)
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:28s} {v}")


if __name__ == "__main__":
    main()
