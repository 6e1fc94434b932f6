#!/usr/bin/python3
"""bench_train.py - the training row of `make bench` (see tests/bench/bench_train.mk).

1. Gradients, checked by another framework: `kvscope train --grads-out` writes one batch,
   the weights and every parameter's gradient; PyTorch recomputes the loss and the
   gradients from the same weights and tokens, and the largest differences are printed.
2. Speed, in interleaved rounds, each in its own process with its thread count pinned:
   kvscope's bench_train and this script's `torch` mode train the same GPT-2 (shape
   below, V = 256, float32) on the same batch size: forward + backward + AdamW step.
   Medians over the rounds with min-max, tokens per second. PyTorch runs with
   OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (bench.BLAS_UNSET), and the table names
   the BLAS it loaded.
3. Where kvscope's step goes: bench_train's phases (train.h, TrainProfile), medians.

usage: bench_train.py --bin BENCH_TRAIN_BIN --kvscope KVSCOPE [--rounds R] [--quick]
       bench_train.py torch THREADS | grads DIR     (one measurement, key,value lines)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

# one measurement in its own process, thread count pinned; the BLAS a process loaded
from bench import BLAS_UNSET, TORCH_SET, blas_in_use, run

L, NH, C, T, B, V = 4, 4, 256, 256, 16, 256   # the PyTorch figures: 4 x 256, 16 x 256
STEPS = 5


def torch_model(torch, params):
    """GPT-2 as Hugging Face computes it, on a dict of HF-named tensors; returns loss(x, y)."""
    F = torch.nn.functional
    hs = C // NH

    def loss(x, y):
        b, t = x.shape
        h = params["wte.weight"][x] + params["wpe.weight"][:t]
        mask = torch.full((t, t), float("-inf")).triu(1)
        for l in range(L):
            p = lambda n: params[f"h.{l}.{n}"]
            a = F.layer_norm(h, (C,), p("ln_1.weight"), p("ln_1.bias"), 1e-5)
            qkv = torch.addmm(p("attn.c_attn.bias"), a.view(-1, C), p("attn.c_attn.weight")).view(b, t, 3 * C)
            q, k, v = (z.view(b, t, NH, hs).transpose(1, 2) for z in qkv.split(C, dim=2))
            att = torch.softmax(q @ k.transpose(-1, -2) / (hs ** 0.5) + mask, dim=-1)
            z = (att @ v).transpose(1, 2).reshape(b * t, C)
            h = h + torch.addmm(p("attn.c_proj.bias"), z, p("attn.c_proj.weight")).view(b, t, C)
            a = F.layer_norm(h, (C,), p("ln_2.weight"), p("ln_2.bias"), 1e-5)
            f = F.gelu(torch.addmm(p("mlp.c_fc.bias"), a.view(-1, C), p("mlp.c_fc.weight")), approximate="tanh")
            h = h + torch.addmm(p("mlp.c_proj.bias"), f, p("mlp.c_proj.weight")).view(b, t, C)
        h = F.layer_norm(h, (C,), params["ln_f.weight"], params["ln_f.bias"], 1e-5)
        logits = h.view(-1, C) @ params["wte.weight"].t()
        return F.cross_entropy(logits, y.reshape(-1))
    return loss


def names():
    out = ["wte.weight", "wpe.weight"]
    for l in range(L):
        out += [f"h.{l}.{n}" for n in ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                                        "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                                        "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias")]
    return out + ["ln_f.weight", "ln_f.bias"]


def shapes():
    s = {"wte.weight": (V, C), "wpe.weight": (T, C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
    for l in range(L):
        for n, sh in (("ln_1.weight", (C,)), ("ln_1.bias", (C,)), ("attn.c_attn.weight", (C, 3 * C)),
                      ("attn.c_attn.bias", (3 * C,)), ("attn.c_proj.weight", (C, C)), ("attn.c_proj.bias", (C,)),
                      ("ln_2.weight", (C,)), ("ln_2.bias", (C,)), ("mlp.c_fc.weight", (C, 4 * C)),
                      ("mlp.c_fc.bias", (4 * C,)), ("mlp.c_proj.weight", (4 * C, C)), ("mlp.c_proj.bias", (C,))):
            s[f"h.{l}.{n}"] = sh
    return s


def read_safetensors(path):
    """name -> numpy array (F32 or I32), as the format defines it."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, e in header.items():
        if k == "__metadata__":
            continue
        a, b = e["data_offsets"]
        dt = {"F32": np.float32, "I32": np.int32}[e["dtype"]]
        out[k] = np.frombuffer(data[a:b], dtype=dt).reshape(e["shape"])
    return out


# ---- one measurement per process ------------------------------------------------------

MM_N = 1024  # the square matmul timed in the PyTorch process, by torch.mm and by OpenBLAS


def matmul_rates(torch):
    """GFLOP/s of an MM_N² float32 matmul in this process: torch.mm, and OpenBLAS's
    cblas_sgemm on the same arrays (what PyTorch's own matmul path costs on top)."""
    import ctypes
    a, b = np.random.rand(MM_N, MM_N).astype(np.float32), np.random.rand(MM_N, MM_N).astype(np.float32)
    c = np.zeros((MM_N, MM_N), dtype=np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    blas = ctypes.CDLL("libopenblas.so.0")
    blas.openblas_set_num_threads(torch.get_num_threads())
    P = lambda x: x.ctypes.data_as(ctypes.c_void_p)

    def sgemm():
        blas.cblas_sgemm(101, 111, 111, MM_N, MM_N, MM_N, ctypes.c_float(1.0), P(a), MM_N, P(b),
                         MM_N, ctypes.c_float(0.0), P(c), MM_N)
    out = {}
    for key, f in (("mm_gflops", lambda: torch.mm(ta, tb)), ("sgemm_gflops", sgemm)):
        f()
        v = []
        for _ in range(5):
            t0 = time.perf_counter()
            f()
            v.append(time.perf_counter() - t0)
        out[key] = 2.0 * MM_N ** 3 / statistics.median(v) / 1e9
    return out


def torch_round(threads):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    params = {}
    for n, sh in shapes().items():
        if len(sh) == 1:
            params[n] = torch.ones(sh) if "ln_" in n and n.endswith("weight") else torch.zeros(sh)
        else:
            params[n] = torch.randn(sh) * 0.02
        params[n].requires_grad_(True)
    decay = [p for p in params.values() if p.dim() == 2]
    rest = [p for p in params.values() if p.dim() == 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.95), eps=1e-8)
    loss_fn = torch_model(torch, params)
    times, cpu0 = [], 0.0
    for k in range(STEPS + 1):
        if k == 1:
            cpu0 = time.process_time()
        x = torch.randint(0, V, (B, T))
        y = torch.randint(0, V, (B, T))
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params.values(), 1.0)
        opt.step()
        if k:
            times.append(time.perf_counter() - t0)
    cpu = (time.process_time() - cpu0) / STEPS  # all threads, the first step left out
    s = statistics.median(times)
    return {"threads": threads, "step_s": s, "tokens_per_s": B * T / s, "cpu_s_per_step": cpu,
            **matmul_rates(torch), "blas": blas_in_use()}


def grads_check(d):
    """PyTorch's gradient of the batch kvscope wrote into d, against kvscope's."""
    import torch
    torch.set_num_threads(2)
    w = read_safetensors(os.path.join(d, "model.safetensors"))
    g = read_safetensors(os.path.join(d, "grads.safetensors"))
    params = {n: torch.tensor(w[n].astype(np.float64), requires_grad=True) for n in names()}
    x = torch.tensor(g["inputs"].astype(np.int64))
    y = torch.tensor(g["targets"].astype(np.int64))
    # in double, so that the difference is kvscope's float32 error alone
    loss = torch_model(torch, params)(x, y)
    loss.backward()
    worst, where = 0.0, ""
    for n in names():
        ref = params[n].grad.numpy()
        err = float(np.abs(g[n] - ref).max() / max(np.abs(ref).max(), 1e-30))
        if err > worst:
            worst, where = err, n
    return {"loss_kvscope": float(g["loss"][0]), "loss_torch": float(loss), "worst_rel": worst,
            "worst_tensor": where}


# ---- the driver ---------------------------------------------------------------------------

def fmt(v, digits=0):
    return f"{statistics.median(v):,.{digits}f} ({min(v):,.{digits}f}–{max(v):,.{digits}f})" if v else "n/a"


def main():
    args = sys.argv[1:]
    if args and args[0] == "torch":
        for k, v in torch_round(int(args[1])).items():
            print(f"{k},{v}")
        return 0
    if args and args[0] == "grads":
        for k, v in grads_check(args[1]).items():
            print(f"{k},{v}")
        return 0
    binp = args[args.index("--bin") + 1]
    kvs = args[args.index("--kvscope") + 1]
    rounds = 1 if "--quick" in args else int(args[args.index("--rounds") + 1]) if "--rounds" in args else 3
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
        print("bench_train: PyTorch is not importable: its columns say n/a", file=sys.stderr)
    me = [sys.executable, os.path.abspath(__file__)]
    if have_torch:
        with tempfile.TemporaryDirectory() as tmp:
            corpus = os.path.join(tmp, "corpus.txt")
            rng = np.random.default_rng(1)
            words = "in the beginning god created the heaven and the earth and it was good".split()
            with open(corpus, "w") as f:
                f.write(" ".join(rng.choice(words, 60000)))
            gd = os.path.join(tmp, "grads")
            subprocess.run([kvs, "train", "--corpus", corpus, "--grads-out", gd, "--layers", str(L), "--heads",
                            str(NH), "--dim", str(C), "--ctx", str(T), "--batch", "4", "--quiet"], check=True)
            gr = run(me + ["grads", gd], 2)
        print(f"\nGradient check: `kvscope train --grads-out` (L={L} NH={NH} C={C} T={T}, batch 4) against "
              f"PyTorch autograd in float64 on the same weights and tokens: loss {gr['loss_kvscope']:.7f} vs "
              f"{gr['loss_torch']:.7f}; largest gradient difference {gr['worst_rel']:.2e} of the tensor's "
              f"largest entry ({gr['worst_tensor']})")
    S, blas = {}, "n/a"
    for r in range(rounds):
        for t in (1, 2):
            jobs = [("kv", [binp, str(L), str(NH), str(C), str(T), str(B), str(STEPS)])]
            if have_torch:
                jobs.insert(r % 2, ("pt", me + ["torch", str(t)]))
            for tag, cmd in jobs:
                print(f"bench_train: round {r + 1}/{rounds}, {t} thread(s): {tag}", file=sys.stderr)
                d = run(cmd, t, *((BLAS_UNSET, TORCH_SET) if tag == "pt" else ()))
                blas = d.get("blas", blas)
                for k, v in d.items():
                    if k in ("tokens_per_s", "cpu_s_per_step", "mm_gflops", "sgemm_gflops") or \
                            k.startswith("phase_"):
                        S.setdefault((tag, t, k), []).append(v)
    print(f"\nTraining, GPT-2 L={L} NH={NH} C={C} V={V}, batch {B} × {T} tokens, float32, forward + backward "
          f"+ AdamW (+ clipping), median of {rounds} rounds × {STEPS} steps (min–max); PyTorch's BLAS "
          f"({' and '.join(BLAS_UNSET)} unset, {', '.join(f'{k}={v}' for k, v in TORCH_SET.items())}): "
          f"{blas}")
    for t in (1, 2):
        mm, sg = S.get(("pt", t, "mm_gflops"), []), S.get(("pt", t, "sgemm_gflops"), [])
        if mm and sg:
            print(f"In the PyTorch process, {t} thread(s), a {MM_N}² float32 matmul: torch.mm "
                  f"{fmt(mm, 1)} GFLOP/s, OpenBLAS's cblas_sgemm called directly {fmt(sg, 1)}")
    print()
    print("| threads | kvscope tokens/s | PyTorch tokens/s | kvscope/PyTorch |")
    print("|---|---|---|---|")
    for t in (1, 2):
        kv, pt = S.get(("kv", t, "tokens_per_s"), []), S.get(("pt", t, "tokens_per_s"), [])
        ratio = f"{statistics.median(kv) / statistics.median(pt):.2f}×" if kv and pt else "n/a"
        print(f"| {t} | {fmt(kv)} | {fmt(pt)} | {ratio} |")
    print("\nCPU seconds of the process per step, all threads (less disturbed than the wall clock "
          "when other jobs share the machine; at 2 threads it counts waiting threads too):\n")
    print("| threads | kvscope CPU s/step | PyTorch CPU s/step | PyTorch/kvscope |")
    print("|---|---|---|---|")
    for t in (1, 2):
        kv, pt = S.get(("kv", t, "cpu_s_per_step"), []), S.get(("pt", t, "cpu_s_per_step"), [])
        ratio = f"{statistics.median(pt) / statistics.median(kv):.2f}×" if kv and pt else "n/a"
        print(f"| {t} | {fmt(kv, 3)} | {fmt(pt, 3)} | {ratio} |")
    report_phases(S)
    return 0


def report_phases(S):
    """kvscope's step by phase: wall ms per step (median, min-max) and share of the sum."""
    names = [k[2][len("phase_"):-len("_s")] for k in S if k[0] == "kv" and k[1] == 1 and
             k[2].startswith("phase_") and not k[2].endswith("_cpu_s")]
    if not names:
        return
    print("\nWhere kvscope's training step goes (ms per step, wall clock; fwd: the forward by kind "
          "of kernel, bwd: each backward op over all layers, upd: the update):\n")
    print("| phase | 1 thread | share | 2 threads | share |")
    print("|---|---|---|---|---|")
    total = {t: sum(statistics.median(S[("kv", t, f"phase_{n}_s")]) for n in names) for t in (1, 2)}
    for n in names:
        cells = []
        for t in (1, 2):
            v = [1e3 * x for x in S[("kv", t, f"phase_{n}_s")]]
            cells += [fmt(v, 1), f"{100 * statistics.median(v) / 1e3 / total[t]:.0f} %"]
        print(f"| {n} | " + " | ".join(cells) + " |")
    print(f"| sum | {1e3 * total[1]:,.1f} | | {1e3 * total[2]:,.1f} | |")


if __name__ == "__main__":
    sys.exit(main())
