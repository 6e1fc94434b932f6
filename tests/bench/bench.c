/* bench.c — the C side of `make bench`: times kvscope's forward pass and the
 * machine's memory bandwidth, and prints "key,value" lines for tests/bench/bench.py.
 *
 *   bench_kvscope gpt2        GPT-2 small shapes (C=768 NH=12 L=12 V=50257, N=1025):
 *                             prefill 128 and 512, decode with the cache at 128/512/1024
 *                             cached tokens (full model and blocks only), recompute at 128,
 *                             and the same decode and prefill with a no-op observer
 *   bench_kvscope small L     the built-in model's widths (C=768 NH=12 V=256, N=1025) with
 *                             L layers: prefill 128, decode with the cache and recompute at
 *                             128/256/512/1024 cached tokens (recompute: once, it is slow)
 *   bench_kvscope triad       STREAM-style triad a = b + s·c over 3 × 128 MiB, GB/s, and
 *                             the read bandwidth: a float sum over 1 GiB on huge pages,
 *                             the best of 1, 4 and 8 streams per thread
 *   bench_kvscope prefill-share a prefill of 128 tokens (GPT-2 small, AVX-512, float32)
 *                             and the FMA peak loop on as many FLOPs, alternated 15 times:
 *                             the prefill's share of the peak round by round
 *   bench_kvscope decode-share  a decode step (GPT-2 small, float32, 128 cached) and a
 *                             float sum of as many bytes, alternated: the step's GB/s as
 *                             a share of the read bandwidth, round by round
 *   bench_kvscope peak        the FMA peak, GFLOP/s: a loop of independent vector FMAs on
 *                             registers only, per vector level the CPU has, on every thread
 *   bench_kvscope steps LEVEL WEIGHTS   GPT-2 small prefill 128/512 and decode at 128/512/1024
 *                             cached on kernel level LEVEL (avx2, avx512) with WEIGHTS (fp32,
 *                             fp16, bf16), each step split into matmuls, attention, rest
 *   bench_kvscope record DIR  GPT-2 small prefill 512 writing the whole attention.csv (every
 *                             layer and head) into DIR, and prefill 128 with run's default
 *                             recording (layers 0 and 11, head 0): MB/s and the hooks' share
 *
 * Threads: OMP_NUM_THREADS (the script sets it). Weights are the built-in seeded ones;
 * the cache is filled with seeded values instead of a long prefill (a decode step's
 * time does not depend on what the cache holds). N is 1025 so that a step can run
 * with 1024 tokens cached. Times are medians of a few runs inside this process; the
 * script takes medians over interleaved processes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "bigbuf.h"
#include "hooks.h"
#include "kernels.h"
#include "kvcache.h"
#include "model.h"
#include "parallel.h"
#include "record_csv.h"
#include "select.h"
#include "step_timer.h"
#include "sysinfo.h"

/* Seconds of CPU time used by this process (all threads): with 1 thread a measure
 * that other jobs on a shared machine disturb less than the wall clock. */
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double last_cpu; /* CPU seconds of the last timed call */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what) {
    fprintf(stderr, "bench_kvscope: %s\n", what);
    exit(1);
}

static int noop_observer(const HookEvent *ev, void *user) {
    (void)ev;
    (void)user;
    return 0;
}

typedef struct {
    Model m;
    KVCache c;
    float *logits;
    int *tokens; /* (N) a fixed token sequence */
    Hooks noop;  /* one observer on every hook point that does nothing */
    StepTimer *timer; /* NULL, or the timer wrapping the hooks of the calls timed */
} Bench;

static void bench_init(Bench *b, const Config *cfg) {
    if (model_init_random(&b->m, cfg, 1) != 0) die("out of memory (model)");
    if (kvcache_init(&b->c, cfg->L, cfg->NH, cfg->C / cfg->NH, cfg->N) != 0) die("out of memory");
    b->logits = malloc((size_t)cfg->V * sizeof(float));
    b->tokens = malloc((size_t)cfg->N * sizeof(int));
    if (!b->logits || !b->tokens) die("out of memory");
    for (int i = 0; i < cfg->N; i++) b->tokens[i] = (int)((i * 2654435761u) % (unsigned)cfg->V);
    hooks_init(&b->noop);
    if (hooks_subscribe(&b->noop, HOOK_ALL, noop_observer, NULL) != 0) die("hooks");
}

static void bench_free(Bench *b) {
    model_free(&b->m);
    kvcache_free(&b->c);
    free(b->logits);
    free(b->tokens);
}

/* Cache holding p tokens of seeded values, as if a prompt of p tokens had run. */
static void fill_cache(Bench *b, int p) {
    const int C = b->m.cfg.C;
    float *k = malloc((size_t)C * sizeof(float)), *v = malloc((size_t)C * sizeof(float));
    if (!k || !v) die("out of memory");
    kvcache_reset(&b->c);
    if (kvcache_reserve(&b->c, p + 1) != 0) die("cache reserve");
    uint32_t s = 12345u;
    for (int l = 0; l < b->m.cfg.L; l++)
        for (int t = 0; t < p; t++) {
            for (int i = 0; i < C; i++) {
                s = s * 1664525u + 1013904223u;
                k[i] = (float)((double)(s >> 8) / 8388608.0 - 1.0);
                v[i] = -k[i] * 0.5f;
            }
            kvcache_store(&b->c, l, t, k, v, t);
        }
    b->c.len = p;
    b->c.n_seen = p;
    free(k);
    free(v);
}

/* Seconds of one prefill of T tokens into an empty cache (logits of the last one);
 * *flops gets the engine's count. */
static double time_prefill(Bench *b, int T, Hooks *hooks, uint64_t *flops) {
    FlopCount f = {0};
    StepLabel lb = {.phase = PHASE_PREFILL, .step = 0, .hooks = hooks};
    kvcache_reset(&b->c);
    double c0 = cpu_seconds(), t0 = now_seconds();
    if (b->timer) step_timer_begin(b->timer);
    if (model_forward(&b->m, &b->c, b->tokens, T, b->logits, &lb, &f) != 0) die("forward");
    double t1 = now_seconds();
    last_cpu = cpu_seconds() - c0;
    if (flops) *flops = flops_total(&f);
    return t1 - t0;
}

/* Seconds of one decode step with p tokens cached (fill_cache(p) first); the cache
 * is put back to p tokens afterwards so the same step can be timed again. */
static double time_decode(Bench *b, int p, int with_logits, Hooks *hooks) {
    StepLabel lb = {.phase = PHASE_DECODE, .step = 1, .hooks = hooks};
    double c0 = cpu_seconds(), t0 = now_seconds();
    if (b->timer) step_timer_begin(b->timer);
    if (model_forward(&b->m, &b->c, &b->tokens[p], 1, with_logits ? b->logits : NULL, &lb, NULL))
        die("forward");
    double t1 = now_seconds();
    last_cpu = cpu_seconds() - c0;
    b->c.len = p;
    b->c.n_seen = p;
    return t1 - t0;
}

/* Median of reps decode steps (after one warm-up) in ms; *cpu_ms the median CPU time. */
static double decode_ms(Bench *b, int p, int with_logits, Hooks *hooks, int reps, double *cpu_ms) {
    double v[16], c[16];
    time_decode(b, p, with_logits, hooks);
    for (int r = 0; r < reps; r++) {
        v[r] = time_decode(b, p, with_logits, hooks);
        c[r] = last_cpu;
    }
    if (cpu_ms) *cpu_ms = 1e3 * median(c, reps);
    return 1e3 * median(v, reps);
}

static double prefill_ms(Bench *b, int T, Hooks *hooks, int reps, uint64_t *flops, double *cpu_ms) {
    double v[16], c[16];
    time_prefill(b, T, hooks, flops);
    for (int r = 0; r < reps; r++) {
        v[r] = time_prefill(b, T, hooks, flops);
        c[r] = last_cpu;
    }
    if (cpu_ms) *cpu_ms = 1e3 * median(c, reps);
    return 1e3 * median(v, reps);
}

/* Bytes a decode step must read: every weight it uses once, plus the K and V of
 * p+1 tokens in every layer. Blocks only: without ln_f and the lm_head (wte). */
static double decode_bytes(const Config *cfg, int p, int with_logits) {
    double C = cfg->C, L = cfg->L;
    double w = L * (12 * C * C + 13 * C) + (with_logits ? (double)cfg->V * C + 2 * C : 0.0);
    return 4.0 * (w + 2.0 * L * (p + 1) * C);
}

static void header(const Config *cfg) {
    printf("threads,%d\nkernels,%s\nL,%d\nC,%d\nNH,%d\nV,%d\n", kern_threads(),
           kern_name(kern_detect()), cfg->L, cfg->C, cfg->NH, cfg->V);
}

static void run_gpt2(void) {
    Config cfg = {.L = 12, .NH = 12, .C = 768, .N = 1025, .V = 50257, .eps = 1e-5f, .bos = -1};
    Bench b;
    bench_init(&b, &cfg);
    header(&cfg);
    static const int Tp[] = {128, 512};
    for (int i = 0; i < 2; i++) {
        uint64_t fl = 0;
        double cpu, ms = prefill_ms(&b, Tp[i], NULL, Tp[i] > 128 ? 1 : 7, &fl, &cpu);
        printf("prefill_%d_ms,%.4f\nprefill_%d_cpu_ms,%.4f\nprefill_%d_flops,%llu\n"
               "prefill_%d_gflops,%.3f\n", Tp[i], ms, Tp[i], cpu, Tp[i], (unsigned long long)fl,
               Tp[i], fl / (ms * 1e6));
    }
    static const int P[] = {128, 512, 1024};
    for (int i = 0; i < 3; i++) {
        fill_cache(&b, P[i]);
        for (int full = 1; full >= 0; full--) {
            const char *what = full ? "full" : "blocks";
            double cpu, ms = decode_ms(&b, P[i], full, NULL, 5, &cpu);
            double bytes = decode_bytes(&cfg, P[i], full);
            printf("decode_%s_%d_ms,%.4f\ndecode_%s_%d_cpu_ms,%.4f\ndecode_%s_%d_bytes,%.0f\n"
                   "decode_%s_%d_gbs,%.3f\n", what, P[i], ms, what, P[i], cpu, what, P[i], bytes,
                   what, P[i], bytes / (ms * 1e6));
        }
    }
    /* recompute: the whole sequence of 129 tokens from scratch, as `run --no-cache` */
    printf("recompute_128_ms,%.4f\n", prefill_ms(&b, 129, NULL, 1, NULL, NULL));
    /* hooks: no observer vs one that subscribes to every point and does nothing;
     * alternated so that drift hits both alike */
    double off[6], on[6], poff[2], pon[2];
    fill_cache(&b, 512);
    time_decode(&b, 512, 1, NULL);
    for (int r = 0; r < 6; r++) {
        off[r] = time_decode(&b, 512, 1, NULL);
        on[r] = time_decode(&b, 512, 1, &b.noop);
    }
    for (int r = 0; r < 2; r++) {
        poff[r] = time_prefill(&b, 128, NULL, NULL);
        pon[r] = time_prefill(&b, 128, &b.noop, NULL);
    }
    printf("hooks_off_decode_512_ms,%.4f\nhooks_noop_decode_512_ms,%.4f\n", 1e3 * median(off, 6),
           1e3 * median(on, 6));
    printf("hooks_off_prefill_128_ms,%.4f\nhooks_noop_prefill_128_ms,%.4f\n",
           1e3 * median(poff, 2), 1e3 * median(pon, 2));
    bench_free(&b);
}

static void run_small(int L, int recompute) {
    Config cfg = config_default();
    cfg.L = L;
    cfg.N = 1025;
    Bench b;
    bench_init(&b, &cfg);
    header(&cfg);
    printf("prefill_128_ms,%.4f\n", prefill_ms(&b, 128, NULL, 3, NULL, NULL));
    static const int P[] = {128, 256, 512, 1024};
    for (int i = 0; i < 4; i++) {
        fill_cache(&b, P[i]);
        printf("decode_%d_ms,%.4f\n", P[i], decode_ms(&b, P[i], 1, NULL, 5, NULL));
    }
    /* recompute: one step = the whole sequence of p+1 tokens, timed once after a
     * warm-up for L=1 (median of 3), once without one for larger L, where it takes
     * seconds (the script asks for it in one round only) */
    for (int i = 0; i < 4 && recompute; i++)
        printf("recompute_%d_ms,%.4f\n", P[i],
               L == 1 ? prefill_ms(&b, P[i] + 1, NULL, 3, NULL, NULL)
                      : 1e3 * time_prefill(&b, P[i] + 1, NULL, NULL));
    bench_free(&b);
}

/* This thread's number inside a parallel region (0 without OpenMP). */
static int omp_thread(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* ---- the read bandwidth: a float sum, as a decode step reads its weights ----------
 * Each thread sums its contiguous share of the buffer with the widest vectors the CPU
 * has, cut into S pieces read side by side (S streams, as a decode step walks 2 or 4
 * panels at once); the adds never limit the speed, the memory does. The bandwidth is
 * the best over S = 1, 4 and 8: one stream alone leaves part of the memory idle. */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define SUM_STREAMS(name, TGT, V, W, ZERO, LOAD, ADD)                                       \
    __attribute__((target(TGT))) static float name(const float *p, long n, int S) {         \
        V a[8];                                                                              \
        const long m = n / S / W * W; /* floats per stream */                                \
        for (int s = 0; s < 8; s++) a[s] = ZERO();                                           \
        if (S == 1)                                                                          \
            for (long i = 0; i < m; i += 4 * W)                                              \
                for (int s = 0; s < 4; s++) a[s] = ADD(a[s], LOAD(p + i + s * W));          \
        else if (S == 4)                                                                     \
            for (long i = 0; i < m; i += 2 * W)                                              \
                for (int s = 0; s < 8; s++) a[s] = ADD(a[s], LOAD(p + (s / 2) * m + i + (s % 2) * W)); \
        else                                                                                 \
            for (long i = 0; i < m; i += W)                                                  \
                for (int s = 0; s < 8; s++) a[s] = ADD(a[s], LOAD(p + s * m + i));           \
        float f[W], t = 0.0f;                                                                \
        for (int s = 1; s < 8; s++) a[0] = ADD(a[0], a[s]);                                  \
        memcpy(f, &a[0], sizeof f);                                                          \
        for (int k = 0; k < W; k++) t += f[k];                                               \
        return t;                                                                            \
    }
SUM_STREAMS(sum_avx512, "avx512f", __m512, 16, _mm512_setzero_ps, _mm512_load_ps, _mm512_add_ps)
SUM_STREAMS(sum_avx2, "avx2", __m256, 8, _mm256_setzero_ps, _mm256_load_ps, _mm256_add_ps)
#endif
static float sum_plain(const float *p, long n, int S) {
    float a[4] = {0};
    (void)S;
    for (long i = 0; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; j++) a[j] += p[i + j];
    return a[0] + a[1] + a[2] + a[3];
}

/* Seconds to read the n floats at p (n a multiple of 1024 per thread) once, all threads,
 * S streams per thread. */
static double time_read(const float *p, long n, int S) {
    float sink = 0.0f;
    const double t0 = now_seconds();
    OMP(omp parallel reduction(+ : sink)) {
        const long nt = kern_threads(), id = omp_thread();
        const long lo = n / 1024 * id / nt * 1024, hi = n / 1024 * (id + 1) / nt * 1024;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
        if (kern_supported(KERN_AVX512)) sink += sum_avx512(p + lo, hi - lo, S);
        else if (kern_supported(KERN_AVX2)) sink += sum_avx2(p + lo, hi - lo, S);
        else
#endif
            sink += sum_plain(p + lo, hi - lo, S);
    }
    const double t = now_seconds() - t0;
    if (sink == 12345.0f) printf("read_sink,1\n"); /* keeps the sums */
    return t;
}

/* GB/s of the best of the three stream counts, each read once. */
static double best_read_gbs(const float *p, long n) {
    static const int S[] = {1, 4, 8};
    double best = 0.0;
    for (int i = 0; i < 3; i++) {
        const double g = (double)n * sizeof(float) / (time_read(p, n, S[i]) * 1e9);
        best = g > best ? g : best;
    }
    return best;
}

/* A buffer of n floats (ones) on huge pages where offered, as the weight panels are. */
static float *read_buffer(long n) {
    float *p = bigbuf_calloc((size_t)n, sizeof(float));
    if (!p) die("out of memory (read buffer)");
    OMP(omp parallel for schedule(static))
    for (long i = 0; i < n; i++) p[i] = 1.0f;
    return p;
}

/* read_gbs: the median over 7 rounds of the best read of 1 GiB. */
static void read_bandwidth(void) {
    const long n = 1L << 28;
    float *p = read_buffer(n);
    double v[7];
    for (int r = 0; r < 7; r++) v[r] = best_read_gbs(p, n);
    printf("read_gbs,%.3f\n", median(v, 7));
    free(p);
}

static void run_triad(void) {
    const size_t n = (size_t)1 << 25; /* 128 MiB per array: far beyond the caches */
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) die("out of memory");
    const float s = 3.0f;
    long ln = (long)n;
    /* first touch in parallel, so pages sit where the threads run */
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (long i = 0; i < ln; i++) {
        a[i] = 0.0f;
        b[i] = 1.0f;
        c[i] = 2.0f;
    }
    double v[7];
    for (int r = 0; r < 7; r++) {
        double t0 = now_seconds();
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (long i = 0; i < ln; i++) a[i] = b[i] + s * c[i];
        v[r] = now_seconds() - t0;
    }
    /* STREAM counts 3 arrays: 2 read, 1 written */
    printf("threads,%d\ntriad_gbs,%.3f\n", kern_threads(), 3.0 * n * sizeof(float) / (median(v, 7) * 1e9));
    if (a[12345] != 7.0f) die("triad result");
    free(a);
    free(b);
    free(c);
    read_bandwidth();
}

/* Decode against the read bandwidth, side by side: rounds of one float sum over as
 * many bytes as a decode step reads (GPT-2 small, float32 weights, 128 cached, logits
 * included) and one decode step, alternated so that whatever else the machine does hits
 * both alike. The share is each round's decode GB/s over the same round's read GB/s. */
static void run_decode_share(void) {
    Config cfg = {.L = 12, .NH = 12, .C = 768, .N = 1025, .V = 50257, .eps = 1e-5f, .bos = -1};
    Bench b;
    bench_init(&b, &cfg);
    header(&cfg);
    const int p = 128, R = 15;
    const double bytes = decode_bytes(&cfg, p, 1);
    const long n = (long)(bytes / sizeof(float)) / 1024 * 1024;
    float *buf = read_buffer(n);
    fill_cache(&b, p);
    time_decode(&b, p, 1, NULL);
    (void)best_read_gbs(buf, n);
    double rd[16], dc[16], sh[16];
    for (int r = 0; r < R; r++) {
        rd[r] = best_read_gbs(buf, n);
        dc[r] = time_decode(&b, p, 1, NULL);
        sh[r] = bytes / (dc[r] * 1e9) / rd[r];
    }
    double mn = sh[0], mx = sh[0];
    for (int r = 1; r < R; r++) mn = sh[r] < mn ? sh[r] : mn, mx = sh[r] > mx ? sh[r] : mx;
    printf("share_read_gbs,%.3f\nshare_decode_ms,%.4f\nshare_decode_bytes,%.0f\n"
           "share_median,%.4f\nshare_min,%.4f\nshare_max,%.4f\n", median(rd, R),
           1e3 * median(dc, R), bytes, median(sh, R), mn, mx);
    free(buf);
    bench_free(&b);
}

/* ---- where the time goes ---------------------------------------------------- */

/* Prints key_{matmul,attention,hooks,rest}_ms of the times t over reps calls. */
static void print_split(const char *key, const StepTimer *t, int reps) {
    const double k = 1e3 / reps;
    printf("%s_matmul_ms,%.4f\n%s_attention_ms,%.4f\n%s_hooks_ms,%.4f\n%s_rest_ms,%.4f\n", key,
           k * t->matmul, key, k * t->attention, key, k * t->hooks, key,
           k * (t->total - t->matmul - t->attention - t->hooks));
}

/* Hooks with nothing but the timer t, reset, attached to b's calls. */
static Hooks *timed(Bench *b, StepTimer *t, Hooks *h) {
    hooks_init(h);
    step_timer_reset(t);
    if (step_timer_wrap(t, h)) die("hooks");
    b->timer = t;
    return h;
}

/* Bytes a decode step reads when its matrices are halves (wte included: the lm_head). */
static double decode_bytes_half(const Config *cfg, int p) {
    double C = cfg->C, L = cfg->L;
    return 2.0 * (L * 12 * C * C + (double)cfg->V * C) + 4.0 * (L * 13 * C + 2 * C) +
           4.0 * 2.0 * L * (p + 1) * C;
}

static void run_steps(const char *level, const char *weights) {
    Config cfg = {.L = 12, .NH = 12, .C = 768, .N = 1025, .V = 50257, .eps = 1e-5f, .bos = -1};
    Dtype dt;
    if (dtype_parse(weights, &dt) || !dtype_is_weight(dt)) die("weights: fp32, fp16 or bf16");
    KernLevel lv = strcmp(level, "avx512") == 0 ? KERN_AVX512 : KERN_AVX2;
    if (strcmp(level, "avx2") != 0 && strcmp(level, "avx512") != 0) die("level: avx2 or avx512");
    if (!kern_supported(lv)) { /* said, not measured: the script prints n/a */
        printf("unsupported,%s\n", level);
        return;
    }
    Bench b;
    bench_init(&b, &cfg);
    if (model_set_weights(&b.m, dt) != 0) die("out of memory (half weights)");
    if (model_set_kernels(&b.m, lv)) die("kernels");
    header(&cfg);
    static const int Tp[] = {128, 512};
    for (int i = 0; i < 2; i++) {
        const int reps = Tp[i] > 128 ? 1 : 7; /* 7: rides out a burst */
        uint64_t fl = 0;
        StepTimer t;
        Hooks th;
        time_prefill(&b, Tp[i], NULL, NULL); /* warm-up */
        double cpu, ms = prefill_ms(&b, Tp[i], timed(&b, &t, &th), reps, &fl, &cpu);
        b.timer = NULL;
        char key[32];
        snprintf(key, sizeof key, "prefill_%d", Tp[i]);
        printf("%s_ms,%.4f\n%s_cpu_ms,%.4f\n%s_flops,%llu\n", key, ms, key, cpu, key,
               (unsigned long long)fl);
        print_split(key, &t, reps + 1); /* prefill_ms runs one more, as its own warm-up */
    }
    static const int P[] = {128, 512, 1024};
    for (int i = 0; i < 3; i++) {
        fill_cache(&b, P[i]);
        time_decode(&b, P[i], 1, NULL); /* grows the buffers to this length outside the split */
        StepTimer t;
        Hooks th;
        double cpu, ms = decode_ms(&b, P[i], 1, timed(&b, &t, &th), 5, &cpu);
        b.timer = NULL;
        char key[32];
        snprintf(key, sizeof key, "decode_%d", P[i]);
        printf("%s_ms,%.4f\n%s_cpu_ms,%.4f\n%s_bytes,%.0f\n", key, ms, key, cpu, key,
               dt == DT_FP32 ? decode_bytes(&cfg, P[i], 1) : decode_bytes_half(&cfg, P[i]));
        print_split(key, &t, 6);
    }
    bench_free(&b);
}

/* Prefill of T tokens with a CSV recorder on hooks h: writes into dir. *bytes gets the
 * size of attention.csv. */
static void recorded_prefill(Bench *b, int T, const char *dir, const char *layers,
                             const char *heads, StepTimer *t, long *bytes) {
    Selection ls, hs;
    if (select_parse(&ls, layers, b->m.cfg.L) || select_parse(&hs, heads, b->m.cfg.NH))
        die("selection");
    CsvRecorder rec;
    Hooks h;
    hooks_init(&h);
    if (csv_recorder_open(&rec, dir, REC_DEFAULT & ~(unsigned)REC_TIMING, &ls, &hs) ||
        csv_recorder_attach(&rec, &h))
        die("recorder (is DIR a folder?)");
    step_timer_reset(t);
    if (step_timer_wrap(t, &h)) die("hooks");
    b->timer = t;
    time_prefill(b, T, &h, NULL);
    b->timer = NULL;
    if (csv_recorder_close(&rec) != 0) die("recorder: write failed");
    char path[4200];
    snprintf(path, sizeof path, "%s/attention.csv", dir);
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0) die("attention.csv");
    *bytes = ftell(f);
    fclose(f);
}

static void run_record(const char *dir) {
    Config cfg = {.L = 12, .NH = 12, .C = 768, .N = 1025, .V = 50257, .eps = 1e-5f, .bos = -1};
    Bench b;
    bench_init(&b, &cfg);
    header(&cfg);
    StepTimer t, t0;
    Hooks th;
    double hooks0 = 0, total0 = 0;
    long bytes = 0;
    recorded_prefill(&b, 512, dir, "all", "all", &t, &bytes);
    printf("record_all_512_bytes,%ld\nrecord_all_512_hooks_ms,%.4f\nrecord_all_512_ms,%.4f\n"
           "record_all_512_mbs,%.3f\n", bytes, 1e3 * t.hooks, 1e3 * t.total,
           bytes / (t.hooks * 1e6));
    /* run's default: layers 0 and L-1, head 0; against the same prefill unrecorded */
    for (int r = 0; r < 3; r++) {
        recorded_prefill(&b, 128, dir, "0,11", "0", &t0, &bytes);
        hooks0 += t0.hooks, total0 += t0.total;
        time_prefill(&b, 128, timed(&b, &t, &th), NULL);
        b.timer = NULL;
    }
    printf("record_default_128_bytes,%ld\nrecord_default_128_hooks_ms,%.4f\n"
           "record_default_128_ms,%.4f\n", bytes, 1e3 * hooks0 / 3, 1e3 * total0 / 3);
    bench_free(&b);
}

/* ---- the FMA peak: independent FMAs on registers, no memory ------------------ */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define PEAK_ACC(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
/* 12 chains of 2 FMAs per iteration: enough in flight for 2 FMA units of latency 4..6.
 * Returns the FLOPs done (+ 1 if a lane came out as 12345, which keeps the sums). */
#define PEAK_LOOP(vec, set1, fmadd, lanes)                                                  \
    PEAK_ACC(PEAK_DECL)                                                                     \
    const vec m = set1(0.999f), c = set1(1e-3f);                                            \
    for (long k = 0; k < iters; k++) { PEAK_ACC(PEAK_STEP) PEAK_ACC(PEAK_STEP) }            \
    vec s = a0;                                                                             \
    PEAK_ACC(PEAK_SUM)                                                                      \
    float f[lanes];                                                                         \
    memcpy(f, &s, sizeof f);                                                                \
    return 24.0 * lanes * 2 * (double)iters + (f[0] == 12345.0f);
__attribute__((target("avx2,fma"))) static double peak_avx2(long iters) {
#define PEAK_DECL(i) __m256 a##i = _mm256_set1_ps((float)(i) * 1e-3f);
#define PEAK_STEP(i) a##i = _mm256_fmadd_ps(a##i, m, c);
#define PEAK_SUM(i) s = _mm256_fmadd_ps(s, m, a##i);
    PEAK_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, 8)
#undef PEAK_DECL
#undef PEAK_STEP
#undef PEAK_SUM
}
__attribute__((target("avx512f"))) static double peak_avx512(long iters) {
#define PEAK_DECL(i) __m512 a##i = _mm512_set1_ps((float)(i) * 1e-3f);
#define PEAK_STEP(i) a##i = _mm512_fmadd_ps(a##i, m, c);
#define PEAK_SUM(i) s = _mm512_fmadd_ps(s, m, a##i);
    PEAK_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, 16)
#undef PEAK_DECL
#undef PEAK_STEP
#undef PEAK_SUM
}
#define HAVE_PEAK 1
#else
#define HAVE_PEAK 0
#endif

/* ---- prefill against the FMA peak, side by side ------------------------------ */
/* Alternates a 128-token prefill (AVX-512, float32) with the FMA peak loop on as many
 * FLOPs (every thread), 15 rounds, so that each prefill is divided by the peak the
 * machine gave in its own round: what a shared machine gives a thread drifts by a tenth
 * and more within minutes. */
static void run_prefill_share(void) {
#if HAVE_PEAK
    Config cfg = {.L = 12, .NH = 12, .C = 768, .N = 1025, .V = 50257, .eps = 1e-5f, .bos = -1};
    if (!kern_supported(KERN_AVX512)) {
        printf("unsupported,avx512\n");
        return;
    }
    Bench b;
    bench_init(&b, &cfg);
    if (model_set_kernels(&b.m, KERN_AVX512)) die("kernels");
    header(&cfg);
    enum { R = 15 };
    uint64_t fl = 0;
    time_prefill(&b, 128, NULL, &fl); /* warm-up */
    const long iters = (long)((double)fl / (24.0 * 16 * 2) / kern_threads());
    double pf[R], pk[R], sh[R];
    for (int r = 0; r < R; r++) {
        pf[r] = time_prefill(&b, 128, NULL, NULL);
        double f = 0.0;
        const double t0 = now_seconds();
#ifdef _OPENMP
#pragma omp parallel reduction(+ : f)
#endif
        f += peak_avx512(iters);
        pk[r] = f / ((now_seconds() - t0) * 1e9);
        sh[r] = (double)fl / (pf[r] * 1e9) / pk[r];
    }
    double mn = sh[0], mx = sh[0];
    for (int r = 1; r < R; r++) mn = sh[r] < mn ? sh[r] : mn, mx = sh[r] > mx ? sh[r] : mx;
    printf("pshare_prefill_ms,%.4f\npshare_peak_gflops,%.3f\npshare_flops,%llu\n"
           "pshare_median,%.4f\npshare_min,%.4f\npshare_max,%.4f\n", 1e3 * median(pf, R),
           median(pk, R), (unsigned long long)fl, median(sh, R), mn, mx);
    bench_free(&b);
#endif
}

static void run_peak(void) {
    printf("threads,%d\n", kern_threads());
#if HAVE_PEAK
    static const char *names[] = {"avx2", "avx512"};
    for (int lv = 0; lv < 2; lv++) {
        if (!kern_supported(lv ? KERN_AVX512 : KERN_AVX2)) continue;
        double best = 0.0, best_cpu = 0.0;
        for (int r = 0; r < 5; r++) {
            double flops = 0.0, t0 = now_seconds(), c0 = cpu_seconds();
#ifdef _OPENMP
#pragma omp parallel reduction(+ : flops)
#endif
            flops += lv ? peak_avx512(20000000) : peak_avx2(20000000);
            const double g = flops / ((now_seconds() - t0) * 1e9),
                         gc = flops / ((cpu_seconds() - c0) * 1e9) * kern_threads();
            if (g > best) best = g;
            if (gc > best_cpu) best_cpu = gc;
        }
        /* cpu: per CPU second of each thread, what the machine gives a thread it runs */
        printf("peak_%s_gflops,%.3f\npeak_%s_cpu_gflops,%.3f\n", names[lv], best, names[lv],
               best_cpu);
    }
#endif
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "gpt2") == 0) run_gpt2();
    else if (argc >= 3 && strcmp(argv[1], "small") == 0)
        run_small(atoi(argv[2]), argc < 4 || strcmp(argv[3], "--no-recompute") != 0);
    else if (argc >= 2 && strcmp(argv[1], "triad") == 0) run_triad();
    else if (argc >= 2 && strcmp(argv[1], "peak") == 0) run_peak();
    else if (argc >= 2 && strcmp(argv[1], "decode-share") == 0) run_decode_share();
    else if (argc >= 2 && strcmp(argv[1], "prefill-share") == 0) run_prefill_share();
    else if (argc >= 4 && strcmp(argv[1], "steps") == 0) run_steps(argv[2], argv[3]);
    else if (argc >= 3 && strcmp(argv[1], "record") == 0) run_record(argv[2]);
    else {
        fprintf(stderr, "usage: bench_kvscope gpt2 | small L [--no-recompute] | triad | peak | decode-share | prefill-share | "
                        "steps avx2|avx512 fp32|fp16|bf16 | record DIR\n");
        return 2;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
