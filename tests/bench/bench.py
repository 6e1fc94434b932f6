#!/usr/bin/python3
"""bench.py - the script side of `make bench` (see tests/bench/bench.mk).

Runs, in interleaved rounds, each in its own process with its thread count pinned:
  - bench_kvscope gpt2         kvscope at GPT-2 small shapes (tests/bench/bench.c)
  - bench_kvscope steps L W    the same on kernel level L (avx512, avx2) with weights W
                               (fp32, fp16, bf16), each step split into matmuls, attention
                               and the rest
  - bench_kvscope peak         the FMA peak per vector level (machine limit)
  - this script's `torch`      the same computation in PyTorch on the CPU
  - this script's `sgemm`      OpenBLAS cblas_sgemm on the prefill shapes (machine limit)
  - bench_kvscope triad        STREAM-style triad and read bandwidth (machine limits)
  - bench_kvscope decode-share a decode step against a float sum of as many bytes, side
                               by side: the step's share of the read bandwidth
  - bench_kvscope prefill-share a 128-token prefill against the FMA peak loop on as many
                               FLOPs, side by side: the prefill's share of the peak
  - bench_kvscope record DIR   the recording's own speed (attention.csv MB/s), and
    `kvscope run` at 128 tokens with its default recording against --record timing
  - `kvscope batch --roofline 64` batched decode of B = 1 .. 64 sequences at GPT-2 small's
    shapes (BATCH_PROMPT tokens each, BATCH_STEPS steps): tokens/s and GFLOP/s per B,
    against llama.cpp's llama-batched-bench on the same shapes when it is given
    (LLAMA_BATCHED_BENCH, with LLAMA_MODEL_F32)
  - optional, when given: llama.cpp's llama-bench (LLAMA_BENCH, with LLAMA_MODEL_F32 and
    LLAMA_MODEL_F16, GGUF files of GPT-2 small's shapes) or ggml's GPT-2 example
    (GGML_GPT2, the gpt-2-backend binary, with GGML_MODEL_F32 and GGML_MODEL_F16, and the
    lm_head on the last position only, as kvscope): the same shapes, threads, rounds
then prints medians over the rounds with min-max, as markdown tables.

The PyTorch model is GPT-2 written with torch ops as Hugging Face computes it
(addmm for Conv1D, tanh GELU, causal softmax), random weights, float32, no grad;
its KV cache is preallocated and sliced (faster than HF's torch.cat). Like kvscope,
the lm_head runs on the last position only.

usage: bench.py --bin BENCH_BIN --kvscope KVSCOPE_BIN [--rounds R] [--quick] [--side-by-side]
       (--side-by-side: only kvscope's steps and llama.cpp or ggml, and only that table)
       bench.py torch THREADS | sgemm THREADS      (one round, key,value lines)
       bench.py batched KVSCOPE THREADS | llama-batched THREADS   (likewise)
"""
import csv
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

C, NH, L, V, N = 768, 12, 12, 50257, 1025
PREFILL = (128, 512)
DECODE = (128, 512, 1024)
# Batched decode: B sequences of BATCH_PROMPT tokens, BATCH_STEPS steps each, both sides.
BATCH_SIZES = (1, 4, 16, 32, 64)
BATCH_PROMPT, BATCH_STEPS = 32, 16


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
    out["blas"] = blas_in_use()
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


# ---- kvscope run: default recording against --record timing ---------------

def run_round(kvscope, threads, work):
    """Seconds in the timed steps (timing.csv) of `kvscope run` at GPT-2 small's shapes,
    a 128-token prompt and 8 decode steps: with the default recording, and with timing only."""
    ids = ",".join(str((i * 2654435761) % V) for i in range(128))
    out = {"threads": threads}
    for tag, rec in (("default", []), ("timing", ["--record", "timing"])):
        d = os.path.join(work, tag)
        cmd = [kvscope, "run", "--layers", str(L), "--vocab", str(V), "--prompt-ids", ids,
               "--steps", "8", "--out", d, "--quiet"] + rec
        r = subprocess.run(cmd, env=env_for(threads), stdout=subprocess.DEVNULL)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:2])} failed ({r.returncode})")
        with open(os.path.join(d, "timing.csv")) as f:
            out[f"run_{tag}_s"] = sum(float(row["seconds"]) for row in csv.DictReader(f))
        if tag == "default":
            out["run_default_bytes"] = float(sum(os.path.getsize(os.path.join(d, x))
                                                 for x in os.listdir(d)))
    return out


# ---- batched decode ----------------------------------------------------------

def batched_round(kvscope, threads):
    """`kvscope batch --roofline 64`: B copies of one BATCH_PROMPT-token prompt decoded
    together; tokens/s (B over the median step) and GFLOP/s (counted FLOPs over it) per B."""
    out = {"threads": threads}
    work = tempfile.mkdtemp(prefix="kvscope-batched.")
    try:
        d = os.path.join(work, "roof")
        cmd = [kvscope, "batch", "--layers", str(L), "--vocab", str(V), "--prompt",
               "a" * BATCH_PROMPT, "--roofline", str(max(BATCH_SIZES)), "--steps",
               str(BATCH_STEPS), "--out", d, "--quiet"]
        r = subprocess.run(cmd, env=env_for(threads), stdout=subprocess.DEVNULL)
        if r.returncode != 0:
            raise RuntimeError(f"kvscope batch --roofline failed ({r.returncode})")
        with open(os.path.join(d, "roofline.csv")) as f:
            for row in csv.DictReader(f):
                B = int(row["B"])
                if B in BATCH_SIZES:
                    out[f"b{B}_tps"] = B / float(row["step_s"])
                    out[f"b{B}_gflops"] = float(row["gflops_s"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def llama_batched_round(threads):
    """llama-batched-bench, F32: the same prompts and steps, not shared; S_TG (generated
    tokens of all sequences per second) per B."""
    out = {"threads": threads}
    exe, model = os.environ["LLAMA_BATCHED_BENCH"], os.environ["LLAMA_MODEL_F32"]
    ctx = max(BATCH_SIZES) * (BATCH_PROMPT + BATCH_STEPS)
    cmd = [exe, "-m", model, "-c", str(ctx), "-b", "2048", "-ub", "512", "-npp",
           str(BATCH_PROMPT), "-ntg", str(BATCH_STEPS), "-npl",
           ",".join(str(b) for b in BATCH_SIZES), "-t", str(threads), "-tb", str(threads),
           "--output-format", "jsonl"]
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        [os.path.dirname(os.path.abspath(exe))] +
        ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       env=env)
    if r.returncode != 0:
        raise RuntimeError(f"llama-batched-bench failed ({r.returncode})")
    import json
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            j = json.loads(line)
            out[f"b{j['pl']}_tps"] = float(j["speed_tg"])
    return out


# ---- llama.cpp / ggml, when given --------------------------------------------

def llama_round(threads):
    """llama-bench: prompt processing 128 and 512 tokens, 16 generated, per model."""
    out = {"threads": threads}
    for wt in ("F32", "F16"):
        model = os.environ.get(f"LLAMA_MODEL_{wt}")
        if not model:
            continue
        cmd = [os.environ["LLAMA_BENCH"], "-m", model, "-p", "128,512", "-n", "16", "-t",
               str(threads), "-r", "3", "-o", "csv"]
        # its shared libraries sit beside it: found even when the build was moved
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            [os.path.dirname(os.path.abspath(cmd[0]))] +
            ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
        r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"llama-bench failed ({r.returncode})")
        for row in csv.DictReader(r.stdout.splitlines()):
            ts = float(row["avg_ts"])  # tokens per second
            if int(row["n_prompt"]) > 0:
                out[f"{wt}_prefill_{row['n_prompt']}_ms"] = 1e3 * int(row["n_prompt"]) / ts
            else:
                out[f"{wt}_decode_ms"] = 1e3 / ts
    return out


def ggml_round(threads):
    """ggml's GPT-2 example: one prompt of 128 and of 512 tokens, 16 decode steps."""
    out = {"threads": threads}
    for wt in ("F32", "F16"):
        model = os.environ.get(f"GGML_MODEL_{wt}")
        if not model:
            continue
        for T in PREFILL:
            cmd = [os.environ["GGML_GPT2"], "-m", model, "-t", str(threads), "-b", str(T),
                   "-n", "16", "--ignore-eos", "-p", "a" * T]
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               errors="replace")
            if r.returncode != 0:
                raise RuntimeError(f"gpt-2-backend failed ({r.returncode})")
            for line in r.stdout.splitlines():
                f = line.split(",")
                if f[0] == "bench" and f[1] == "prefill_ms" and int(f[4]) == T:
                    out[f"{wt}_prefill_{T}_ms"] = float(f[2])
                if f[0] == "bench" and f[1] == "decode_ms_per_token" and T == PREFILL[0]:
                    out[f"{wt}_decode_ms"] = float(f[2])
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


# Unset for the OpenBLAS commands only (PyTorch, sgemm): a forced core type or L2 size
# (e.g. OPENBLAS_CORETYPE=Haswell) keeps OpenBLAS from its AVX-512 kernels on this machine.
BLAS_UNSET = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
# Set for PyTorch only: its OpenMP threads otherwise spin while OpenBLAS's own threads
# run the matmul, on the same cores (measured: training at 2 threads 2,921 tokens/s
# spinning, 4,997 passive; no change at 1 thread).
TORCH_SET = {"OMP_WAIT_POLICY": "PASSIVE"}


def env_for(threads, unset=(), extra=None):
    e = dict(os.environ)
    e.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
             MKL_NUM_THREADS=str(threads))
    for k in unset:
        e.pop(k, None)
    e.update(extra or {})
    return e


def blas_in_use():
    """The BLAS this process has loaded (after a matmul): OpenBLAS's own config string and
    core when it is OpenBLAS, and the library's real path (Debian picks libblas.so.3 by
    alternatives: reference BLAS unless an OpenBLAS package is installed)."""
    import ctypes
    libs = []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "blas" in os.path.basename(path) and path not in libs:
                libs.append(path)
    if not libs:
        return "none loaded (statically linked?)"
    found = {}  # what the library says it is -> its files
    for path in libs:
        what = "not OpenBLAS"
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_config.restype = ctypes.c_char_p
            lib.openblas_get_corename.restype = ctypes.c_char_p
            what = f"{lib.openblas_get_config().decode()}, core {lib.openblas_get_corename().decode()}"
        except (OSError, AttributeError):
            pass
        found.setdefault(what, []).append(os.path.realpath(path))
    return "; ".join(f"{w} ({', '.join(p)})" for w, p in found.items())


def run(cmd, threads, unset=(), extra=None):
    r = subprocess.run(cmd, env=env_for(threads, unset, extra), stdout=subprocess.PIPE, text=True)
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
        self.blas = "n/a"

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
    if args and args[0] == "batched":
        for k, v in batched_round(args[1], int(args[2])).items():
            print(f"{k},{v}")
        return 0
    if args and args[0] in ("torch", "sgemm", "llama", "ggml", "llama-batched"):
        d = {"torch": torch_round, "sgemm": sgemm_round, "llama": llama_round,
             "ggml": ggml_round, "llama-batched": llama_batched_round}[args[0]](int(args[1]))
        for k, v in d.items():
            print(f"{k},{v}")
        return 0
    binp = args[args.index("--bin") + 1]
    kvscope = args[args.index("--kvscope") + 1] if "--kvscope" in args else None
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 3
    quick = "--quick" in args
    if quick:
        rounds = 1
    other = ("llama" if os.environ.get("LLAMA_BENCH") else
             "ggml" if os.environ.get("GGML_GPT2") else None)
    if "--side-by-side" in args:
        return side_by_side(binp, other, rounds)
    if "--batched" in args:
        return batched_only(binp, kvscope, rounds)
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
        print("bench: PyTorch is not importable: its columns say n/a", file=sys.stderr)
    me = [sys.executable, os.path.abspath(__file__)]
    load0 = os.getloadavg()
    S = Stats()
    S.other = other
    t_start = time.time()
    work = tempfile.mkdtemp(prefix="kvscope-bench.")
    try:
        for r in range(rounds):
            for t in (1, 2):
                jobs = [("kv", [binp, "gpt2"]), ("peak", [binp, "peak"]),
                        ("s512", [binp, "steps", "avx512", "fp32"]),
                        ("s2", [binp, "steps", "avx2", "fp32"]),
                        ("h16", [binp, "steps", "avx512", "fp16"]),
                        ("hbf", [binp, "steps", "avx512", "bf16"]),
                        ("blas", me + ["sgemm", str(t)]), ("mem", [binp, "triad"]),
                        ("share", [binp, "decode-share"]),
                        ("pshare", [binp, "prefill-share"])]
                blas_jobs = ("pt", "blas")  # OpenBLAS: BLAS_UNSET unset
                if have_torch:
                    jobs.insert(1 if r % 2 == 0 else 0, ("pt", me + ["torch", str(t)]))
                if other:  # llama.cpp or ggml next to kvscope's own steps, alternating sides
                    jobs.insert(2 if r % 2 == 0 else 4, ("ll", me + [other, str(t)]))
                jobs += batched_jobs(me, kvscope, t, r)
                for tag, cmd in jobs:
                    print(f"bench: round {r + 1}/{rounds}, {t} thread(s): {tag}", file=sys.stderr)
                    for k, v in run(cmd, t, BLAS_UNSET if tag in blas_jobs else (),
                                    TORCH_SET if tag == "pt" else None).items():
                        S.add(f"{tag}:{t}:{k}", v)
                        if k == "kernels":
                            S.kernels = v
                        if k == "blas":
                            S.blas = v
            print(f"bench: round {r + 1}/{rounds}: recording", file=sys.stderr)
            rec = os.path.join(work, "rec")
            os.makedirs(rec, exist_ok=True)
            for k, v in run([binp, "record", rec], 1).items():
                S.add(f"rec:1:{k}", v)
            if kvscope:
                for k, v in run_round(kvscope, 1, work).items():
                    S.add(f"run:1:{k}", float(v))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # issue 2's bench: the built-in model's widths, L=1 and L=12, all threads
    for r in range(rounds):
        for Lr in (1, 12):
            print(f"bench: round {r + 1}/{rounds}, built-in model L={Lr}", file=sys.stderr)
            cmd = [binp, "small", str(Lr)] + (["--no-recompute"] if Lr > 1 and r > 0 else [])
            for k, v in run(cmd, os.cpu_count()).items():
                S.add(f"small:{Lr}:{k}", v)
    report(S, have_torch, rounds, time.time() - t_start, load0, os.getloadavg())
    report_fma(S)
    report_targets(S)
    report_batched(S)
    return 0


def batched_jobs(me, kvscope, t, r):
    """kvscope's batched decode and llama-batched-bench's, alternating which runs first."""
    jobs = [("bat", me + ["batched", kvscope, str(t)])] if kvscope else []
    if jobs and os.environ.get("LLAMA_BATCHED_BENCH") and os.environ.get("LLAMA_MODEL_F32"):
        jobs.insert(r % 2, ("llb", me + ["llama-batched", str(t)]))
    return jobs


def batched_only(binp, kvscope, rounds):
    """The batched-decode table alone: kvscope against llama-batched-bench, interleaved,
    with the FMA peak measured in the same rounds."""
    if not kvscope:
        print("bench: --batched needs --kvscope KVSCOPE_BIN", file=sys.stderr)
        return 2
    me = [sys.executable, os.path.abspath(__file__)]
    S = Stats()
    load0, t_start = os.getloadavg(), time.time()
    for r in range(rounds):
        for t in (1, 2):
            for tag, cmd in [("peak", [binp, "peak"])] + batched_jobs(me, kvscope, t, r):
                print(f"bench: round {r + 1}/{rounds}, {t} thread(s): {tag}", file=sys.stderr)
                for k, v in run(cmd, t).items():
                    S.add(f"{tag}:{t}:{k}", v)
    load1 = os.getloadavg()
    print(f"\nkvscope batched decode — {machine()}; medians of {rounds} interleaved round(s) "
          f"(min–max); {time.time() - t_start:.0f} s; load average {load0[0]:.1f} before, "
          f"{load1[0]:.1f} after")
    report_batched(S)
    return 0


def report_batched(S):
    """Batched decode: tokens/s per B on both sides, the step's share of the FMA peak, and
    the targets (B = 32 ≥ 7× B = 1; ≥ 50 % of the peak at B = 32, ≥ 60 % at 64; ≥ 1.0×
    llama.cpp at every B)."""
    med = S.med
    if not any(k.startswith("bat:") for k in S.v):
        return
    print(f"\nBatched decode, GPT-2 small's shapes, F32, B sequences of {BATCH_PROMPT} tokens, "
          f"{BATCH_STEPS} steps (kvscope: B over the median step; llama.cpp: "
          "llama-batched-bench's S_TG):\n")
    print("| threads | B | kvscope tokens/s | llama.cpp tokens/s | kvscope/llama.cpp | "
          "kvscope GFLOP/s | share of the FMA peak |")
    print("|---|---|---|---|---|---|---|")
    for t in (1, 2):
        pk = med(f"peak:{t}:peak_avx512_gflops")
        for B in BATCH_SIZES:
            a, b, g = f"bat:{t}:b{B}_tps", f"llb:{t}:b{B}_tps", med(f"bat:{t}:b{B}_gflops")
            x, y = med(a), med(b)
            ratio = f"{x / y:.2f}×" if x and y else "n/a"
            share = f"{100 * g / pk:.0f} %" if g and pk else "n/a"
            print(f"| {t} | {B} | {S.fmt(a, 0)} | {S.fmt(b, 0)} | {ratio} | "
                  f"{S.fmt(f'bat:{t}:b{B}_gflops', 1)} | {share} |")
    x1, x32 = med("bat:1:b1_tps"), med("bat:1:b32_tps")
    if x1 and x32:
        print(f"\nTarget, 1 thread: tokens/s at B = 32 over B = 1: {x32 / x1:.1f}× (≥ 7×); "
              "the shares of the peak at B = 32 and 64 are in the table (≥ 50 %, ≥ 60 %).")


def side_by_side(binp, other, rounds):
    """kvscope's steps (AVX-512, float32 and fp16 weights) and llama.cpp or ggml, interleaved,
    alternating which side runs first; then the side-by-side table alone."""
    if not other:
        print("bench: --side-by-side needs llama.cpp (LLAMA_BENCH=…, or built into "
              "build/llamacpp: see src/engine/README.md) or ggml (GGML_GPT2=…)", file=sys.stderr)
        return 2
    me = [sys.executable, os.path.abspath(__file__)]
    S = Stats()
    S.other = other
    load0, t_start = os.getloadavg(), time.time()
    for r in range(rounds):
        for t in (1, 2):
            jobs = [("s512", [binp, "steps", "avx512", "fp32"]),
                    ("h16", [binp, "steps", "avx512", "fp16"]), ("peak", [binp, "peak"]),
                    ("share", [binp, "decode-share"]), ("pshare", [binp, "prefill-share"])]
            jobs.insert(0 if r % 2 else 2, ("ll", me + [other, str(t)]))
            for tag, cmd in jobs:
                print(f"bench: round {r + 1}/{rounds}, {t} thread(s): {tag}", file=sys.stderr)
                for k, v in run(cmd, t).items():
                    S.add(f"{tag}:{t}:{k}", v)
    load1 = os.getloadavg()
    print(f"\nkvscope speed — {machine()}; medians of {rounds} interleaved round(s) (min–max); "
          f"{time.time() - t_start:.0f} s; load average {load0[0]:.1f} before, {load1[0]:.1f} after")
    report_side(S)
    report_targets(S)
    return 0


def report(S, have_torch, rounds, secs, load0, load1):
    print(f"\nkvscope speed — {machine()}")
    print(f"kernels: {S.kernels}; medians of {rounds} interleaved rounds "
          f"(min–max); {secs:.0f} s in all; load average {load0[0]:.1f} before, "
          f"{load1[0]:.1f} after" + (" (above the core count: other jobs shared the machine)"
                                     if max(load0[0], load1[0]) > os.cpu_count() else ""))
    print(f"PyTorch's BLAS (run with {' and '.join(BLAS_UNSET)} unset, "
          f"{', '.join(f'{k}={v}' for k, v in TORCH_SET.items())}): {S.blas}\n")
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
                bw = S.med(f"mem:{t}:read_gbs")
                gbs = by / (kv * 1e6)
                ratio = f"{pt / kv:.2f}×" if pt else "n/a"
                share = f"{gbs:.1f} GB/s = {100 * gbs / bw:.0f} % of read {bw:.1f}"
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


def report_fma(S):
    """Issue 19's tables: FMA peak shares, where the time goes, half weights, recording,
    llama.cpp or ggml side by side."""
    def med(key):
        return S.med(key)

    print("\nFMA peak (register-only loop of independent FMAs, GFLOP/s): " + "; ".join(
        f"{t} thread(s): AVX-512 {S.fmt(f'peak:{t}:peak_avx512_gflops')}, "
        f"AVX2 {S.fmt(f'peak:{t}:peak_avx2_gflops')}" for t in (1, 2)) +
        "; per CPU second, 1 thread: AVX-512 " + S.fmt("peak:1:peak_avx512_cpu_gflops") +
        ", AVX2 " + S.fmt("peak:1:peak_avx2_cpu_gflops"))
    print("\nPrefill on each vector level, as a share of that level's FMA peak (wall clock "
          "against the peak loop's wall clock; 1 thread also in CPU time, against the peak "
          "loop's CPU time: what a shared machine gives the thread while it runs):\n")
    print("| level | threads | clock | prefill 128, ms | GFLOP/s | of FMA peak | prefill 512, ms | GFLOP/s | of FMA peak |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tag, lv, pk in (("s512", "AVX-512", "avx512"), ("s2", "AVX2", "avx2")):
        for t in (1, 2):
            for clock, sfx in (("wall", ""), ("CPU", "cpu_")):
                if clock == "CPU" and t > 1:
                    continue
                cells = []
                peak = med(f"peak:{t}:peak_{pk}_{sfx}gflops")
                for T in PREFILL:
                    ms = med(f"{tag}:{t}:prefill_{T}_{sfx}ms")
                    fl = med(f"{tag}:{t}:prefill_{T}_flops")
                    if not ms:
                        cells += ["n/a"] * 3
                        continue
                    g = fl / (ms * 1e6)
                    cells += [S.fmt(f"{tag}:{t}:prefill_{T}_{sfx}ms"), f"{g:.1f}",
                              f"{100 * g / peak:.0f} %" if peak else "n/a"]
                print(f"| {lv} | {t} | {clock} | " + " | ".join(cells) + " |")

    print("\nWhere the time goes (AVX-512, float32 weights; ms per step, mean of the timed "
          "calls; matmuls as a share of the FMA peak for prefill, of the read bandwidth for "
          "decode):\n")
    print("| step | threads | total | matmuls | attention | recording (run's default) | rest |")
    print("|---|---|---|---|---|---|---|")
    C_, L_ = C, L
    for t in (1, 2):
        peak, rd = med(f"peak:{t}:peak_avx512_gflops"), med(f"mem:{t}:read_gbs")
        for key, label in [(f"prefill_{T}", f"prefill {T}") for T in PREFILL] + \
                          [(f"decode_{p}", f"decode, {p} cached") for p in DECODE]:
            parts = [med(f"s512:{t}:{key}_{x}_ms") for x in ("matmul", "attention", "rest")]
            if None in parts:
                continue
            mm, at, rest = parts
            if key.startswith("prefill"):
                T = int(key.split("_")[1])
                g = (24 * T * C_ * C_ * L_ + 2 * C_ * V) / (mm * 1e6)
                mms = f"{mm:.1f} ({g:.0f} GFLOP/s = {100 * g / peak:.0f} % of peak)"
            else:
                by = 4.0 * (12 * C_ * C_ * L_ + V * C_)
                gbs = by / (mm * 1e6)
                mms = f"{mm:.2f} ({gbs:.1f} GB/s = {100 * gbs / rd:.0f} % of read)"
            rec = med("rec:1:record_default_128_hooks_ms") if key == "prefill_128" and t == 1 else None
            recs = f"{rec:.2f}" if rec is not None else "–"
            tot = mm + at + rest
            print(f"| {label} | {t} | {tot:.1f} | {mms} | {at:.2f} | {recs} | {rest:.2f} |")

    print("\nHalf-size weights, decode ms/step (full model; bytes read as a share of the "
          "read bandwidth):\n")
    print("| cache | threads | fp32 | fp16 | bf16 | fp16 speed-up |")
    print("|---|---|---|---|---|---|")
    for t in (1, 2):
        rd = med(f"mem:{t}:read_gbs")
        for p in DECODE:
            cells = []
            for tag in ("s512", "h16", "hbf"):
                ms, by = med(f"{tag}:{t}:decode_{p}_ms"), med(f"{tag}:{t}:decode_{p}_bytes")
                cells.append(f"{S.fmt(f'{tag}:{t}:decode_{p}_ms', 2)} = {by / (ms * 1e6):.1f} "
                             f"GB/s, {100 * by / (ms * 1e6) / rd:.0f} %" if ms else "n/a")
            a, b = med(f"s512:{t}:decode_{p}_ms"), med(f"h16:{t}:decode_{p}_ms")
            up = f"{a / b:.2f}×" if a and b else "n/a"
            print(f"| {p} | {t} | " + " | ".join(cells) + f" | {up} |")

    by, hk = med("rec:1:record_all_512_bytes"), med("rec:1:record_all_512_hooks_ms")
    if by:
        print(f"\nRecording: the whole attention.csv of a 512-token prefill (every layer and "
              f"head, {by / 1e6:.0f} MB) written at {S.fmt('rec:1:record_all_512_mbs', 0)} MB/s; "
              f"run's default recording costs {S.fmt('rec:1:record_default_128_hooks_ms', 2)} ms "
              f"in a 128-token prefill of {S.fmt('rec:1:record_default_128_ms', 0)} ms.")
    d, tm = med("run:1:run_default_s"), med("run:1:run_timing_s")
    if d and tm:
        print(f"`kvscope run`, 128 prompt tokens + 8 decode steps, 1 thread, timed steps: "
              f"default recording {S.fmt('run:1:run_default_s', 3)} s "
              f"({med('run:1:run_default_bytes') / 1e6:.1f} MB written), --record timing "
              f"{S.fmt('run:1:run_timing_s', 3)} s: {100 * (d - tm) / tm:+.1f} %.")

    report_side(S)


def report_side(S):
    """kvscope/llama.cpp (or ggml) speed ratios: prefill 128 and 512, decode F32 and F16,
    1 and 2 threads."""
    med = S.med
    if S.other:
        name = "llama.cpp (llama-bench)" if S.other == "llama" else "ggml (examples/gpt-2)"
        print(f"\nSide by side with {name}, the same shapes and threads, interleaved; "
              "kvscope/other is the speed ratio (above 1: kvscope faster):\n")
        print("| measure | threads | kvscope | other | kvscope/other |")
        print("|---|---|---|---|---|")
        for t in (1, 2):
            rows = [(f"prefill {T}, F32, ms", f"s512:{t}:prefill_{T}_ms", f"ll:{t}:F32_prefill_{T}_ms")
                    for T in PREFILL]
            rows += [("decode, F32 weights, ms/step", f"s512:{t}:decode_128_ms", f"ll:{t}:F32_decode_ms"),
                     ("decode, F16 weights, ms/step", f"h16:{t}:decode_128_ms", f"ll:{t}:F16_decode_ms")]
            for label, a, b in rows:
                x, y = med(a), med(b)
                r = f"{y / x:.2f}×" if x and y else "n/a"
                print(f"| {label} | {t} | {S.fmt(a, 2)} | {S.fmt(b, 2)} | {r} |")
        print("\n(decode: kvscope with 128 cached tokens, the other over 16 steps after a "
              "128-token prompt)")



def report_targets(S):
    """The speed targets, each against its measure: decode's share of the read bandwidth
    and prefill 128's share of the FMA peak (side by side, round by round; also prefill's
    median against the peak job's best), the ratios to llama.cpp. Training's are in
    bench_train.py's table."""
    med = S.med

    def pct(key):
        v = S.v.get(key)
        return f"{100 * med(key):.0f} % ({100 * min(v):.0f}–{100 * max(v):.0f})" if v else "n/a"

    print("\nTargets (medians over the rounds, min–max):\n")
    print("| measure | threads | measured | target |")
    print("|---|---|---|---|")
    for t in (1, 2):
        print(f"| decode F32 (128 cached), bytes read per second as a share of the read "
              f"bandwidth, side by side ({S.fmt(f'share:{t}:share_decode_ms', 2)} ms against "
              f"{S.fmt(f'share:{t}:share_read_gbs')} GB/s) | {t} | "
              f"{pct(f'share:{t}:share_median')} | {'≥ 97 %' if t == 1 else '–'} |")
    for t in (1, 2):
        print(f"| prefill 128, AVX-512, share of the FMA peak, side by side "
              f"({S.fmt(f'pshare:{t}:pshare_prefill_ms', 1)} ms against "
              f"{S.fmt(f'pshare:{t}:pshare_peak_gflops')} GFLOP/s) | {t} | "
              f"{pct(f'pshare:{t}:pshare_median')} | {'≥ 80 %' if t == 1 else '–'} |")
    for t in (1, 2):
        ms, fl, pk = (med(f"s512:{t}:prefill_128_ms"), med(f"s512:{t}:prefill_128_flops"),
                      med(f"peak:{t}:peak_avx512_gflops"))
        got = f"{fl / (ms * 1e6):.1f} GFLOP/s = {100 * fl / (ms * 1e6) / pk:.0f} % of {pk:.1f}" \
            if ms and fl and pk else "n/a"
        print(f"| prefill 128, AVX-512, median against the peak job's best (apart) | {t} | "
              f"{got} | – |")
    if S.other:
        for t in (1, 2):
            for label, a, b, goal in (
                    ("prefill 128 F32, kvscope/llama.cpp", f"s512:{t}:prefill_128_ms",
                     f"ll:{t}:F32_prefill_128_ms", "≥ 1.5×" if t == 1 else "–"),
                    ("decode F32, kvscope/llama.cpp", f"s512:{t}:decode_128_ms",
                     f"ll:{t}:F32_decode_ms", "≥ 1.0×")):
                x, y = med(a), med(b)
                print(f"| {label} | {t} | {f'{y / x:.2f}×' if x and y else 'n/a'} | {goal} |")


if __name__ == "__main__":
    sys.exit(main())
