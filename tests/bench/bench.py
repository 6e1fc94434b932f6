#!/usr/bin/python3
"""bench.py - the script side of `make bench` (see tests/bench/bench.mk).

Runs, in interleaved rounds, each in its own process with its thread count pinned:
  - bench_kvscope gpt2         kvscope at GPT-2 small shapes (tests/bench/bench.c)
  - this script's `torch`      the same computation in PyTorch on the CPU
  - this script's `sgemm`      OpenBLAS cblas_sgemm on the prefill shapes (machine limit)
  - bench_kvscope triad        STREAM-style triad and read-only bandwidth (machine limits)
then prints medians over the rounds with min-max, as markdown tables.

The PyTorch model is GPT-2 written with torch ops as Hugging Face computes it
(addmm for Conv1D, tanh GELU, causal softmax), random weights, float32, no grad;
its KV cache is preallocated and sliced (faster than HF's torch.cat). Like kvscope,
the lm_head runs on the last position only.

usage: bench.py --bin BENCH_BIN [--rounds R] [--quick]
       bench.py torch THREADS | sgemm THREADS      (one round, key,value lines)
"""
import os
import platform
import statistics
import subprocess
import sys
import time

C, NH, L, V, N = 768, 12, 12, 50257, 1025
PREFILL = (128, 512)
DECODE = (128, 512, 1024)


# ---- one round of PyTorch -------------------------------------------------

def torch_round(threads):
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    hs = C // NH
    f32 = torch.float32

    def w(*shape, std=0.02):
        return torch.randn(*shape, dtype=f32) * std

    blocks = [dict(ln1w=torch.ones(C), ln1b=torch.zeros(C), attn_w=w(C, 3 * C), attn_b=w(3 * C),
                   proj_w=w(C, C), proj_b=w(C), ln2w=torch.ones(C), ln2b=torch.zeros(C),
                   fc_w=w(C, 4 * C), fc_b=w(4 * C), mproj_w=w(4 * C, C), mproj_b=w(C))
              for _ in range(L)]
    wte, wpe = w(V, C, std=0.1), w(N, C, std=0.05)
    lnfw, lnfb = torch.ones(C), torch.zeros(C)
    F = torch.nn.functional
    kc = torch.zeros(L, NH, N, hs)
    vc = torch.zeros(L, NH, N, hs)

    def forward(tokens, p, with_logits=True):
        """n new tokens at positions p..p+n-1; K and V cached at [:, :, :p+n]."""
        n = len(tokens)
        x = wte[tokens] + wpe[p:p + n]
        tt = p + n
        mask = None
        if n > 1:
            mask = torch.full((n, tt), float("-inf")).triu(p + 1)
        for l, b in enumerate(blocks):
            h = F.layer_norm(x, (C,), b["ln1w"], b["ln1b"], 1e-5)
            qkv = torch.addmm(b["attn_b"], h, b["attn_w"])
            q, k, v = qkv.split(C, dim=1)
            q = q.view(n, NH, hs).transpose(0, 1)
            kc[l, :, p:tt] = k.view(n, NH, hs).transpose(0, 1)
            vc[l, :, p:tt] = v.view(n, NH, hs).transpose(0, 1)
            att = torch.matmul(q, kc[l, :, :tt].transpose(1, 2)) / (hs ** 0.5)
            if mask is not None:
                att = att + mask
            att = torch.softmax(att, dim=-1)
            y = torch.matmul(att, vc[l, :, :tt]).transpose(0, 1).reshape(n, C)
            x = x + torch.addmm(b["proj_b"], y, b["proj_w"])
            h = F.layer_norm(x, (C,), b["ln2w"], b["ln2b"], 1e-5)
            h = F.gelu(torch.addmm(b["fc_b"], h, b["fc_w"]), approximate="tanh")
            x = x + torch.addmm(b["mproj_b"], h, b["mproj_w"])
        if with_logits:
            h = F.layer_norm(x[-1:], (C,), lnfw, lnfb, 1e-5)
            return torch.matmul(h, wte.t())
        return x

    tokens = torch.tensor([(i * 2654435761) % V for i in range(N)])
    out = {"threads": threads}

    def timed(fn, reps, key):
        fn()
        v, c = [], []
        for _ in range(reps):
            c0, t0 = time.process_time(), time.perf_counter()
            fn()
            v.append(time.perf_counter() - t0)
            c.append(time.process_time() - c0)
        out[key] = 1e3 * statistics.median(v)
        out[key.replace("_ms", "_cpu_ms")] = 1e3 * statistics.median(c)

    with torch.inference_mode():
        for T in PREFILL:
            timed(lambda: forward(tokens[:T], 0), 3 if T == 128 else 1, f"prefill_{T}_ms")
        for p in DECODE:
            kc.normal_()
            vc.normal_()
            for full in (True, False):
                what = "full" if full else "blocks"
                timed(lambda: forward(tokens[p:p + 1], p, full), 5, f"decode_{what}_{p}_ms")
        timed(lambda: forward(tokens[:129], 0), 1, "recompute_128_ms")
    return out


# ---- one round of OpenBLAS sgemm -----------------------------------------

def sgemm_round(threads):
    import ctypes
    import numpy as np
    blas = ctypes.CDLL("libopenblas.so.0")
    blas.openblas_set_num_threads(threads)
    out = {"threads": threads}
    RowMajor, NoTrans = 101, 111
    for T in PREFILL:
        total_flops, total_s = 0.0, 0.0
        # the four matmuls of a block, weighted as they occur: c_attn, c_proj, c_fc, mlp.c_proj
        for (m, k, n) in ((T, C, 3 * C), (T, C, C), (T, C, 4 * C), (T, 4 * C, C)):
            a = np.random.rand(m, k).astype(np.float32)
            b = np.random.rand(k, n).astype(np.float32)
            c = np.zeros((m, n), dtype=np.float32)
            ptr = lambda x: x.ctypes.data_as(ctypes.c_void_p)
            fl = ctypes.c_float

            def run():
                blas.cblas_sgemm(RowMajor, NoTrans, NoTrans, m, n, k, fl(1.0), ptr(a), k,
                                 ptr(b), n, fl(0.0), ptr(c), n)
            run()
            v = []
            for _ in range(7):
                t0 = time.perf_counter()
                run()
                v.append(time.perf_counter() - t0)
            total_flops += 2.0 * m * k * n
            total_s += statistics.median(v)
        out[f"sgemm_{T}_gflops"] = total_flops / total_s / 1e9
    return out


# ---- the driver ------------------------------------------------------------

def parse(text):
    d = {}
    for line in text.splitlines():
        if "," in line:
            k, v = line.split(",", 1)
            try:
                d[k] = float(v)
            except ValueError:
                d[k] = v
    return d


def env_for(threads):
    e = dict(os.environ)
    e.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
             MKL_NUM_THREADS=str(threads))
    return e


def run(cmd, threads):
    r = subprocess.run(cmd, env=env_for(threads), stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode})")
    return parse(r.stdout)


def machine():
    model, flags = "?", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "?":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    simd = "/".join(x for x in ("avx2", "fma", "avx512f") if x in flags)
    return f"{model}, {os.cpu_count()} cores, {simd}, {platform.machine()}"


class Stats:
    def __init__(self):
        self.v = {}
        self.kernels = "?"

    def add(self, key, value):
        if isinstance(value, float):
            self.v.setdefault(key, []).append(value)

    def med(self, key):
        return statistics.median(self.v[key]) if key in self.v else None

    def fmt(self, key, digits=1):
        if key not in self.v:
            return "n/a"
        x = self.v[key]
        return f"{statistics.median(x):.{digits}f} ({min(x):.{digits}f}–{max(x):.{digits}f})"


def main():
    args = sys.argv[1:]
    if args and args[0] in ("torch", "sgemm"):
        d = (torch_round if args[0] == "torch" else sgemm_round)(int(args[1]))
        for k, v in d.items():
            print(f"{k},{v}")
        return 0
    binp = args[args.index("--bin") + 1]
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 5
    quick = "--quick" in args
    if quick:
        rounds = 1
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
        print("bench: PyTorch is not importable: its columns say n/a", file=sys.stderr)
    me = [sys.executable, os.path.abspath(__file__)]
    load0 = os.getloadavg()
    S = Stats()
    t_start = time.time()
    for r in range(rounds):
        for t in (1, 2):
            jobs = [("kv", [binp, "gpt2"]), ("blas", me + ["sgemm", str(t)]),
                    ("mem", [binp, "triad"])]
            if have_torch:
                jobs.insert(1 if r % 2 == 0 else 0, ("pt", me + ["torch", str(t)]))
            for tag, cmd in jobs:
                print(f"bench: round {r + 1}/{rounds}, {t} thread(s): {tag}", file=sys.stderr)
                for k, v in run(cmd, t).items():
                    S.add(f"{tag}:{t}:{k}", v)
                    if k == "kernels":
                        S.kernels = v
    # issue 2's bench: the built-in model's widths, L=1 and L=12, all threads
    for r in range(rounds):
        for Lr in (1, 12):
            print(f"bench: round {r + 1}/{rounds}, built-in model L={Lr}", file=sys.stderr)
            cmd = [binp, "small", str(Lr)] + (["--no-recompute"] if Lr > 1 and r > 0 else [])
            for k, v in run(cmd, os.cpu_count()).items():
                S.add(f"small:{Lr}:{k}", v)
    report(S, have_torch, rounds, time.time() - t_start, load0, os.getloadavg())
    return 0


def report(S, have_torch, rounds, secs, load0, load1):
    print(f"\nkvscope speed — {machine()}")
    print(f"kernels: {S.kernels}; medians of {rounds} interleaved rounds "
          f"(min–max); {secs:.0f} s in all; load average {load0[0]:.1f} before, "
          f"{load1[0]:.1f} after" + (" (above the core count: other jobs shared the machine)"
                                     if max(load0[0], load1[0]) > os.cpu_count() else "") + "\n")
    print("| measure | threads | kvscope | PyTorch | PyTorch/kvscope | share of machine limit |")
    print("|---|---|---|---|---|---|")
    for t in (1, 2):
        for T in PREFILL:
            k = f"prefill_{T}_ms"
            kv, pt = S.med(f"kv:{t}:{k}"), S.med(f"pt:{t}:{k}")
            fl = S.med(f"kv:{t}:prefill_{T}_flops")
            sg = S.med(f"blas:{t}:sgemm_{T}_gflops")
            gf = fl / (kv * 1e6)
            share = f"{gf:.1f} GFLOP/s = {100 * gf / sg:.0f} % of sgemm {sg:.1f}" if sg else "n/a"
            ratio = f"{pt / kv:.2f}×" if pt else "n/a"
            pts = S.fmt(f"pt:{t}:{k}") + (f" = {fl / (pt * 1e6):.1f} GFLOP/s" if pt else "")
            print(f"| prefill {T} tokens, ms | {t} | {S.fmt(f'kv:{t}:{k}')} | {pts} | {ratio} | {share} |")
        for what in ("full", "blocks"):
            for p in DECODE:
                k = f"decode_{what}_{p}_ms"
                kv, pt = S.med(f"kv:{t}:{k}"), S.med(f"pt:{t}:{k}")
                by = S.med(f"kv:{t}:decode_{what}_{p}_bytes")
                bw = S.med(f"mem:{t}:triad_gbs")
                gbs = by / (kv * 1e6)
                ratio = f"{pt / kv:.2f}×" if pt else "n/a"
                share = f"{gbs:.1f} GB/s = {100 * gbs / bw:.0f} % of triad {bw:.1f}"
                label = "full model" if what == "full" else "blocks only"
                print(f"| decode, cache {p}, {label}, ms/step | {t} | {S.fmt(f'kv:{t}:{k}', 2)} | "
                      f"{S.fmt(f'pt:{t}:{k}', 2)} | {ratio} | {share} |")
        k = "recompute_128_ms"
        kv, pt = S.med(f"kv:{t}:{k}"), S.med(f"pt:{t}:{k}")
        ratio = f"{pt / kv:.2f}×" if pt else "n/a"
        print(f"| recompute, 128 cached, ms/step | {t} | {S.fmt(f'kv:{t}:{k}')} | "
              f"{S.fmt(f'pt:{t}:{k}')} | {ratio} | |")
    print("\nMachine limits: " + "; ".join(
        f"{t} thread(s): sgemm {S.fmt(f'blas:{t}:sgemm_128_gflops')} GFLOP/s at T=128, "
        f"{S.fmt(f'blas:{t}:sgemm_512_gflops')} at T=512, triad {S.fmt(f'mem:{t}:triad_gbs')} GB/s, "
        f"read {S.fmt(f'mem:{t}:read_gbs')} GB/s"
        for t in (1, 2)))

    def speedup(key):
        a, b = S.med(f"kv:1:{key}"), S.med(f"kv:2:{key}")
        return f"{a / b:.2f}×" if a and b else "n/a"
    def own(tag, key):  # a machine rate: 2 threads over 1
        a, b = S.med(f"{tag}:1:{key}"), S.med(f"{tag}:2:{key}")
        return f"{b / a:.2f}×" if a and b else "n/a"
    print("\n2 threads over 1 (kvscope): prefill 128 " + speedup("prefill_128_ms") +
          ", prefill 512 " + speedup("prefill_512_ms") +
          ", decode full 128 " + speedup("decode_full_128_ms") +
          ", decode full 1024 " + speedup("decode_full_1024_ms") +
          ", decode blocks 128 " + speedup("decode_blocks_128_ms") +
          "; the machine's own: sgemm " + own("blas", "sgemm_128_gflops") +
          ", triad " + own("mem", "triad_gbs") + ", read " + own("mem", "read_gbs"))
    for t in (1, 2):
        off, on = S.med(f"kv:{t}:hooks_off_decode_512_ms"), S.med(f"kv:{t}:hooks_noop_decode_512_ms")
        poff, pon = S.med(f"kv:{t}:hooks_off_prefill_128_ms"), S.med(f"kv:{t}:hooks_noop_prefill_128_ms")
        print(f"Hooks, {t} thread(s): decode 512 {off:.2f} ms without observer, {on:.2f} ms with a "
              f"no-op observer on every point ({100 * (on - off) / off:+.1f} %); prefill 128 "
              f"{poff:.1f} vs {pon:.1f} ms ({100 * (pon - poff) / poff:+.1f} %)")

    print("\nOne thread, CPU time of the process (ms; less disturbed than the wall clock "
          "when other jobs share the machine):\n")
    print("| measure | kvscope | PyTorch | PyTorch/kvscope |")
    print("|---|---|---|---|")
    keys = [f"prefill_{T}_cpu_ms" for T in PREFILL] + [
        f"decode_{w}_{p}_cpu_ms" for w in ("full", "blocks") for p in DECODE]
    for k in keys:
        kv, pt = S.med(f"kv:1:{k}"), S.med(f"pt:1:{k}")
        ratio = f"{pt / kv:.2f}×" if kv and pt else "n/a"
        print(f"| {k.replace('_cpu_ms', '').replace('_', ' ')} | {S.fmt(f'kv:1:{k}')} | "
              f"{S.fmt(f'pt:1:{k}')} | {ratio} |")

    print(f"\nBuilt-in model widths (C=768 NH=12 V=256), {os.cpu_count()} threads, ms:\n")
    print("| L | prefill 128 | step | cache 128 | cache 256 | cache 512 | cache 1024 |")
    print("|---|---|---|---|---|---|---|")
    for Lr in (1, 12):
        pre = S.fmt(f"small:{Lr}:prefill_128_ms")
        print(f"| {Lr} | {pre} | with cache | " +
              " | ".join(S.fmt(f"small:{Lr}:decode_{p}_ms", 2) for p in (128, 256, 512, 1024)) + " |")
        print(f"| {Lr} | | recompute | " +
              " | ".join(S.fmt(f"small:{Lr}:recompute_{p}_ms") for p in (128, 256, 512, 1024)) + " |")
    print("\nrecompute: one step runs the whole sequence of p+1 tokens. For L=12 it is timed once, "
          "in the first round only (at 1024 tokens one step takes seconds); for L=1 every round.")


if __name__ == "__main__":
    sys.exit(main())
