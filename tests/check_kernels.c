/* check_kernels.c — the fast kernels (kernels.h) against the plain ones (ops.h), and
 * the three attention implementations against each other.
 *
 * Tolerance: none. The fast kernels claim the plain kernels' exact bytes (same
 * operations in the same order per element), so every comparison is memcmp, on
 * shapes chosen to hit every tile, strip and leftover path, with 1 and 2 threads.
 * Each loop test runs once per vector level; a level this CPU lacks is skipped and
 * says so ("skipped: avx512 (CPU lacks it)"), never tested as another level. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels.h"
#include "model.h"
#include "ops.h"
#include "testutil.h"

/* Threads for the next kernel calls. Without OpenMP (the default build) every "2
 * threads" case runs on one; CI also runs the suite built with OMP=1. */
static void set_threads(int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
    ck_assert_int_eq(omp_get_max_threads(), n);
#else
    (void)n;
#endif
}

/* Values in [-1, 1) with a few exact zeros and negative zeros, from a fixed LCG. */
static void fill(float *a, size_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        float v = (float)((double)(s >> 8) / 8388608.0 - 1.0);
        if ((s >> 3) % 37 == 0) v = ((s >> 5) & 1) ? 0.0f : -0.0f;
        a[i] = v;
    }
}

static float *alloc_filled(size_t n, uint32_t seed) {
    float *a = malloc((n ? n : 1) * sizeof *a);
    ck_assert_ptr_nonnull(a);
    fill(a, n, seed);
    return a;
}

/* A loop test (tcase_add_loop_test over KERN_AVX2 .. KERN_LEVEL_COUNT-1) starts with
 * LEVEL_OR_SKIP(lv, _i, 1) (testutil.h): every vector level this CPU has is checked on
 * its own, a level it lacks is skipped and says so; the threads are set case by case. */

/* w (C,OC) packed in column panels, as the model keeps its block matrices. */
static float *packed(const float *w, int C, int OC) {
    float *p = malloc((C && OC ? (size_t)C * OC : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    kern_pack_panels(p, w, C, OC);
    return p;
}

/* p holds w (C,OC) in panels: element (c, o) at o0·C + c·pw + (o - o0), as kernels.h
 * promises. transposed: w is read as (OC, C) and p holds its transpose. */
static void check_layout(const float *p, const float *w, int C, int OC, int transposed) {
    for (int c = 0; c < C; c++)
        for (int o = 0; o < OC; o++) {
            int o0 = o / 48 * 48, pw = OC - o0 < 48 ? OC - o0 : 48;
            size_t at = (size_t)o0 * C + (size_t)c * pw + (size_t)(o - o0);
            size_t from = transposed ? (size_t)o * C + c : (size_t)c * OC + o;
            ck_assert_msg(memcmp(&p[at], &w[from], sizeof(float)) == 0,
                          "C=%d OC=%d transposed=%d: (%d, %d) not at %zu", C, OC, transposed, c,
                          o, at);
        }
}

START_TEST(test_pack_panels) {
    static const int shapes[][2] = {{1, 1}, {2, 7}, {3, 48}, {5, 131}, {4, 96}, {7, 49}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int C = shapes[s][0], OC = shapes[s][1];
        float *w = alloc_filled((size_t)C * OC, 9 + s), *p = packed(w, C, OC);
        check_layout(p, w, C, OC, 0);
        kern_pack_panels_t(p, w, OC, C);
        check_layout(p, w, C, OC, 1);
        free(w); free(p);
    }
}
END_TEST

START_TEST(test_matmul_exact) {
    LEVEL_OR_SKIP(lv, _i, 1);
    static const int Ts[] = {1, 2, 3, 4, 5, 7, 9, 13};
    /* OC: under one panel, one and several full panels, narrow last panels (70 =
     * 48 + 22, 131 = 2·48 + 35, 200 = 4·48 + 8, 341 = 7·48 + 5: decode walks groups of
     * 2 or 4 panels and then the panels left over); C = 800: a prefill sums over blocks
     * of 768 panel rows, then the 32 left */
    static const int shapes[][2] = {{1, 1},   {3, 7},   {8, 8},    {17, 24},  {33, 70},
                                    {64, 200}, {96, 288}, {5, 131}, {40, 48}, {50, 341},
                                    {800, 100}};
    for (int thr = 1; thr <= 2; thr++) {
        set_threads(thr);
        for (size_t a = 0; a < sizeof Ts / sizeof *Ts; a++)
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
                for (int with_bias = 0; with_bias <= 1; with_bias++) {
                    int T = Ts[a], C = shapes[s][0], OC = shapes[s][1];
                    float *x = alloc_filled((size_t)T * C, 1 + a);
                    float *w = alloc_filled((size_t)C * OC, 2 + s), *wp = packed(w, C, OC);
                    float *b = alloc_filled((size_t)OC, 3);
                    float *y0 = alloc_filled((size_t)T * OC, 4), *y1 = alloc_filled((size_t)T * OC, 5);
                    matmul_forward(y0, x, w, with_bias ? b : NULL, T, C, OC);
                    kern_matmul_forward(lv, y1, x, w, wp, with_bias ? b : NULL, T, C, OC);
                    ck_assert_msg(memcmp(y0, y1, (size_t)T * OC * sizeof(float)) == 0,
                                  "matmul T=%d C=%d OC=%d bias=%d threads=%d differs", T, C, OC,
                                  with_bias, thr);
                    /* without panels: the plain kernel, whatever the level */
                    fill(y1, (size_t)T * OC, 6);
                    kern_matmul_forward(lv, y1, x, w, NULL, with_bias ? b : NULL, T, C, OC);
                    ck_assert_msg(memcmp(y0, y1, (size_t)T * OC * sizeof(float)) == 0,
                                  "matmul without panels T=%d C=%d OC=%d differs", T, C, OC);
                    free(x); free(w); free(wp); free(b); free(y0); free(y1);
                }
    }
}
END_TEST

/* kern_matmul_into against matmul_forward (then gelu_forward for KERN_GELU, or
 * residual_forward onto what out held for KERN_ADD), at every level including plain:
 * outputs in 1 or 3 parts of w columns (128: parts that split a panel; 40 and 8: parts
 * of part vectors, computed into one buffer and copied), rows ld = w + 3 apart, whose
 * gaps must stay untouched; float32 and fp16 panels; C = 800 sums over more than one
 * block of a prefill's panel rows. */
START_TEST(test_matmul_into_exact) {
    const KernLevel lv = (KernLevel)_i;
    if (!kern_supported(lv)) {
        printf("skipped: %s (CPU lacks it)\n", kern_name(lv));
        return;
    }
    static const int Ts[] = {1, 3, 8, 13};
    static const int parts[][2] = {{128, 3}, {48, 3}, {40, 3}, {8, 3}, {70, 1}, {100, 1}};
    static const int Cs[] = {33, 800};
    for (int thr = 1; thr <= 2; thr++) {
        set_threads(thr);
        for (size_t a = 0; a < sizeof Ts / sizeof *Ts; a++)
            for (size_t pi = 0; pi < sizeof parts / sizeof *parts; pi++)
                for (size_t ci = 0; ci < sizeof Cs / sizeof *Cs; ci++)
                    for (int how = KERN_SET; how <= KERN_ADD; how++)
                        for (int half = 0; half <= 1; half++) {
                            const int T = Ts[a], W = parts[pi][0], np = parts[pi][1],
                                      C = Cs[ci], OC = W * np;
                            const size_t ld = (size_t)W + 3, nw = (size_t)C * OC;
                            float *x = alloc_filled((size_t)T * C, 61 + a), *w = alloc_filled(nw, 62);
                            float *b = alloc_filled((size_t)OC, 63);
                            if (half)
                                for (size_t i = 0; i < nw; i++)
                                    w[i] = kern_round_weight(w[i], DT_FP16);
                            float *wp = packed(w, C, OC);
                            uint16_t *hp = malloc(nw * sizeof *hp);
                            ck_assert_ptr_nonnull(hp);
                            kern_pack_panels_half(hp, w, C, OC, DT_FP16);
                            float *y0 = alloc_filled((size_t)T * OC, 64);
                            matmul_forward(y0, x, w, b, T, C, OC);
                            if (how == KERN_GELU) gelu_forward(y0, y0, (size_t)T * OC);
                            const size_t n1 = (size_t)T * ld;
                            float *y1 = alloc_filled(n1 * np, 65), *y2 = malloc(n1 * np * sizeof *y2);
                            ck_assert_ptr_nonnull(y2);
                            memcpy(y2, y1, n1 * np * sizeof *y2);
                            if (how == KERN_ADD) /* what out held, plus y: the residual add */
                                for (int t = 0; t < T; t++)
                                    for (int k = 0; k < np; k++) {
                                        float *yk = y0 + (size_t)t * OC + (size_t)k * W;
                                        residual_forward(yk, y2 + k * n1 + t * ld, yk, (size_t)W);
                                    }
                            KernOut out = {{y1, y1 + n1, y1 + 2 * n1}, W, ld, (KernStore)how};
                            if (np == 1) out.p[1] = out.p[2] = NULL;
                            kern_matmul_into(lv, out, x, w, half ? (const void *)hp : (const void *)wp,
                                             half ? DT_FP16 : DT_FP32, b, T, C, OC);
                            for (int t = 0; t < T; t++)
                                for (int k = 0; k < np; k++) {
                                    const float *got = y1 + k * n1 + t * ld;
                                    ck_assert_msg(memcmp(got, y0 + (size_t)t * OC + (size_t)k * W,
                                                         (size_t)W * sizeof(float)) == 0 &&
                                                      memcmp(got + W, y2 + (got + W - y1),
                                                             3 * sizeof(float)) == 0,
                                                  "%s into T=%d C=%d parts %d×%d how=%d half=%d "
                                                  "threads=%d: row %d part %d differs",
                                                  kern_name(lv), T, C, np, W, how, half, thr, t, k);
                                }
                            free(x); free(w); free(b); free(wp); free(hp); free(y0); free(y1); free(y2);
                        }
    }
}
END_TEST

/* Large enough to run on two threads (above the parallel threshold) and to split C
 * into several L1 blocks with a leftover (600 = 4·128 + 88 inputs; 600 = 12·48 + 24
 * columns, 131 = 16·8 + 3 rows), prefill and decode. */
START_TEST(test_matmul_large_exact) {
    LEVEL_OR_SKIP(lv, _i, 1);
    const int C = 900, OC = 600; /* C: a block of 768 panel rows, then 132 */
    for (int T = 1; T <= 131; T += 130) {
        float *x = alloc_filled((size_t)T * C, 11), *w = alloc_filled((size_t)C * OC, 12);
        float *wp = packed(w, C, OC), *b = alloc_filled((size_t)OC, 13);
        float *y0 = alloc_filled((size_t)T * OC, 0), *y1 = alloc_filled((size_t)T * OC, 0);
        matmul_forward(y0, x, w, b, T, C, OC);
        for (int thr = 1; thr <= 3; thr++) { /* 3: 13 panels split unevenly */
            set_threads(thr);
            fill(y1, (size_t)T * OC, 5 + thr); /* no result left over from the last call */
            kern_matmul_forward(lv, y1, x, w, wp, b, T, C, OC);
            ck_assert_msg(memcmp(y0, y1, (size_t)T * OC * sizeof(float)) == 0,
                          "matmul T=%d threads=%d differs", T, thr);
        }
        free(x); free(w); free(wp); free(b); free(y0); free(y1);
    }
}
END_TEST

START_TEST(test_matmul_transposed_exact) {
    LEVEL_OR_SKIP(lv, _i, 1);
    static const int Cs[] = {1, 7, 8, 9, 64, 70};
    static const int OCs[] = {1, 7, 8, 9, 50, 257, 5003}; /* 5003 = 104·48 + 11 */
    static const int Ts[] = {1, 2, 9};                      /* decode, and prefill tiles */
    for (int thr = 1; thr <= 2; thr++) {
        set_threads(thr);
        for (size_t ti = 0; ti < sizeof Ts / sizeof *Ts; ti++)
            for (size_t a = 0; a < sizeof Cs / sizeof *Cs; a++)
                for (size_t o = 0; o < sizeof OCs / sizeof *OCs; o++) {
                    int T = Ts[ti], C = Cs[a], OC = OCs[o];
                    float *x = alloc_filled((size_t)T * C, 21), *w = alloc_filled((size_t)OC * C, 22);
                    float *wp = malloc((size_t)OC * C * sizeof *wp);
                    ck_assert_ptr_nonnull(wp);
                    kern_pack_panels_t(wp, w, OC, C);
                    float *y0 = alloc_filled((size_t)T * OC, 0), *y1 = alloc_filled((size_t)T * OC, 1);
                    matmul_transposed_forward(y0, x, w, T, C, OC);
                    kern_matmul_transposed_forward(lv, y1, x, w, wp, T, C, OC);
                    ck_assert_msg(memcmp(y0, y1, (size_t)T * OC * sizeof(float)) == 0,
                                  "lm_head T=%d C=%d OC=%d threads=%d differs", T, C, OC, thr);
                    fill(y1, (size_t)T * OC, 2);
                    kern_matmul_transposed_forward(lv, y1, x, w, NULL, T, C, OC);
                    ck_assert_msg(memcmp(y0, y1, (size_t)T * OC * sizeof(float)) == 0,
                                  "lm_head without panels C=%d OC=%d differs", C, OC);
                    free(x); free(w); free(wp); free(y0); free(y1);
                }
    }
}
END_TEST

/* Half-size panels (fp16, bf16): the plain float32 kernel on the rounded weights, bit for
 * bit, for prefill and decode shapes, narrow last panels, several L1 blocks (C = 300 =
 * 2·128 + 44), the lm_head's transposed packing, 1 and 2 threads. Weights of every size
 * (subnormal and overflowing fp16 included) go through the rounding. */
START_TEST(test_matmul_half_exact) {
    LEVEL_OR_SKIP(lv, _i, 1);
    static const int Ts[] = {1, 3, 4, 8, 13};
    static const int shapes[][2] = {{1, 1},    {17, 24}, {33, 70},  {64, 200},
                                    {300, 96}, {5, 131}, {50, 341}, {800, 100}};
    for (int dt = DT_FP16; dt <= DT_BF16; dt++)
        for (int thr = 1; thr <= 2; thr++) {
            set_threads(thr);
            for (size_t a = 0; a < sizeof Ts / sizeof *Ts; a++)
                for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++) {
                    const int T = Ts[a], C = shapes[sh][0], OC = shapes[sh][1];
                    const size_t nw = (size_t)C * OC;
                    float *x = alloc_filled((size_t)T * C, 51 + a), *w = alloc_filled(nw, 52 + sh);
                    float *b = alloc_filled((size_t)OC, 53);
                    for (size_t i = 0; i < nw; i++) { /* magnitudes from 1e-9 to 1e6 */
                        w[i] *= powf(10.0f, (float)(i % 16) - 9.0f);
                        w[i] = kern_round_weight(w[i], (Dtype)dt);
                    }
                    uint16_t *hp = malloc(nw * sizeof *hp);
                    ck_assert_ptr_nonnull(hp);
                    float *y0 = alloc_filled((size_t)T * OC, 4), *y1 = alloc_filled((size_t)T * OC, 5);
                    kern_pack_panels_half(hp, w, C, OC, (Dtype)dt);
                    matmul_forward(y0, x, w, b, T, C, OC);
                    kern_matmul_half_forward(lv, y1, x, w, hp, (Dtype)dt, b, T, C, OC);
                    ck_assert_msg(memcmp(y0, y1, (size_t)T * OC * sizeof(float)) == 0,
                                  "%s matmul T=%d C=%d OC=%d threads=%d differs",
                                  dt == DT_FP16 ? "fp16" : "bf16", T, C, OC, thr);
                    /* the same numbers read as w' (OC, C): the lm_head's layout */
                    kern_pack_panels_t_half(hp, w, OC, C, (Dtype)dt);
                    matmul_transposed_forward(y0, x, w, T, C, OC);
                    kern_matmul_transposed_half_forward(lv, y1, x, w, hp, (Dtype)dt, T,
                                                        C, OC);
                    ck_assert_msg(memcmp(y0, y1, (size_t)T * OC * sizeof(float)) == 0,
                                  "%s lm_head T=%d C=%d OC=%d threads=%d differs",
                                  dt == DT_FP16 ? "fp16" : "bf16", T, C, OC, thr);
                    free(x); free(w); free(b); free(hp); free(y0); free(y1);
                }
        }
}
END_TEST

START_TEST(test_attention_exact) {
    LEVEL_OR_SKIP(lv, _i, 1);
    /* {9, 1020}: more keys than kern_attention_out's blocks hold on the stack */
    static const int np[][2] = {{1, 0}, {1, 5}, {1, 17}, {1, 200}, {3, 0}, {9, 4}, {13, 20}, {40, 0}, {17, 3}, {9, 1020}};
    static const int hss[] = {1, 5, 8, 12, 32, 40, 64, 100}; /* 100: leftover dimensions past the vector passes */
    for (int thr = 1; thr <= 2; thr++) {
        set_threads(thr);
        for (size_t a = 0; a < sizeof np / sizeof *np; a++)
            for (int NH = 1; NH <= 3; NH += 2)
                for (size_t b = 0; b < sizeof hss / sizeof *hss; b++) {
                    int n = np[a][0], p = np[a][1], hs = hss[b], C = NH * hs, Tt = n + p;
                    float *q = alloc_filled((size_t)n * C, 31);
                    float *k = alloc_filled((size_t)Tt * C, 32), *v = alloc_filled((size_t)Tt * C, 33);
                    for (size_t i = 0; i < (size_t)n * C; i++) q[i] *= 4.0f; /* contrast */
                    size_t ns = (size_t)NH * n * Tt;
                    float *o0 = alloc_filled((size_t)n * C, 0), *o1 = alloc_filled((size_t)n * C, 1);
                    float *s0 = alloc_filled(ns, 0), *s1 = alloc_filled(ns, 1);
                    float *p0 = alloc_filled(ns, 0), *p1 = alloc_filled(ns, 1);
                    attention_forward(o0, s0, p0, q, k, v, n, p, NH, hs);
                    kern_attention_forward(lv, o1, s1, p1, q, k, v, n, p, NH, hs);
                    ck_assert_msg(memcmp(o0, o1, (size_t)n * C * sizeof(float)) == 0 &&
                                      memcmp(s0, s1, ns * sizeof(float)) == 0 &&
                                      memcmp(p0, p1, ns * sizeof(float)) == 0,
                                  "attention n=%d p=%d NH=%d hs=%d threads=%d differs", n, p, NH,
                                  hs, thr);
                    /* the output alone, scores and weights left to the kernel */
                    float *o2 = alloc_filled((size_t)n * C, 2);
                    kern_attention_out(lv, o2, s1, p1, q, k, v, n, p, NH, hs);
                    ck_assert_msg(memcmp(o0, o2, (size_t)n * C * sizeof(float)) == 0,
                                  "attention out n=%d p=%d NH=%d hs=%d threads=%d differs", n, p,
                                  NH, hs, thr);
                    free(o2);
                    free(q); free(k); free(v); free(o0); free(o1);
                    free(s0); free(s1); free(p0); free(p1);
                }
    }
}
END_TEST

/* Scores that are not ordinary numbers: a key holding NaN (its score NaN for every query),
 * one whose scores overflow to +inf for some queries and -inf for others, and scores far
 * below the rest (their weights underflow to 0). The softmax's exp and max see them in
 * full vectors and in the masked last few keys of a row (n = 37 queries: blocks of 8 and
 * leftovers, rows of 3 to 39 keys), at every width. */
START_TEST(test_attention_special) {
    LEVEL_OR_SKIP(lv, _i, 1);
    const int n = 37, p = 2, NH = 2, hs = 16, C = NH * hs, Tt = n + p;
    float *q = alloc_filled((size_t)n * C, 61);
    float *k = alloc_filled((size_t)Tt * C, 62), *v = alloc_filled((size_t)Tt * C, 63);
    k[(size_t)5 * C + 3] = NAN;                                 /* key 5, head 0 */
    k[(size_t)20 * C + hs] = 3e38f;                             /* key 20, head 1 */
    for (int i = 0; i < n; i += 2) q[(size_t)i * C + hs] = 1e30f; /* ±inf against it */
    for (int i = 1; i < n; i += 2) q[(size_t)i * C + hs] = -1e30f;
    for (int d = 0; d < hs; d++) k[(size_t)11 * C + d] = -50.0f; /* key 11, head 0: far below */
    const size_t ns = (size_t)NH * n * Tt;
    float *o0 = alloc_filled((size_t)n * C, 0), *o1 = alloc_filled((size_t)n * C, 1);
    float *s0 = alloc_filled(ns, 0), *s1 = alloc_filled(ns, 1);
    float *p0 = alloc_filled(ns, 0), *p1 = alloc_filled(ns, 1);
    attention_forward(o0, s0, p0, q, k, v, n, p, NH, hs);
    long nan_weights = 0;
    for (size_t i = 0; i < ns; i++) nan_weights += isnan(p0[i]);
    ck_assert_int_gt(nan_weights, 0); /* the case is what it says */
    kern_attention_forward(lv, o1, s1, p1, q, k, v, n, p, NH, hs);
    ck_assert_msg(memcmp(s0, s1, ns * sizeof(float)) == 0, "scores differ");
    ck_assert_msg(memcmp(p0, p1, ns * sizeof(float)) == 0, "weights differ");
    ck_assert_msg(memcmp(o0, o1, (size_t)n * C * sizeof(float)) == 0, "outputs differ");
    free(q); free(k); free(v); free(o0); free(o1);
    free(s0); free(s1); free(p0); free(p1);
}
END_TEST

/* Decode steps wider than the value sums one pass holds (C > 2048 columns on one thread),
 * the pass boundary on a head boundary (hs = 64) and inside a head (hs = 24), with key
 * counts that end on a full block of 8 (p = 7, 15, 39) or not, over caches long enough for
 * the rows fetched ahead, on 1, 2 and 3 threads (3: a split inside a head). */
START_TEST(test_attention_decode_wide) {
    LEVEL_OR_SKIP(lv, _i, 1);
    static const int shapes[][2] = {{40, 64}, {100, 24}}; /* NH, hs */
    static const int ps[] = {0, 7, 15, 37, 39};
    for (int thr = 1; thr <= 3; thr++) {
        set_threads(thr);
        for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
            for (size_t pi = 0; pi < sizeof ps / sizeof *ps; pi++) {
                const int NH = shapes[sh][0], hs = shapes[sh][1], C = NH * hs, p = ps[pi], Tt = p + 1;
                const size_t ns = (size_t)NH * Tt;
                float *q = alloc_filled((size_t)C, 41), *k = alloc_filled((size_t)Tt * C, 42);
                float *v = alloc_filled((size_t)Tt * C, 43);
                float *o0 = alloc_filled((size_t)C, 0), *o1 = alloc_filled((size_t)C, 1);
                float *s0 = alloc_filled(ns, 0), *s1 = alloc_filled(ns, 1);
                float *p0 = alloc_filled(ns, 0), *p1 = alloc_filled(ns, 1);
                attention_forward(o0, s0, p0, q, k, v, 1, p, NH, hs);
                kern_attention_forward(lv, o1, s1, p1, q, k, v, 1, p, NH, hs);
                ck_assert_msg(memcmp(o0, o1, (size_t)C * sizeof(float)) == 0 &&
                                  memcmp(s0, s1, ns * sizeof(float)) == 0 &&
                                  memcmp(p0, p1, ns * sizeof(float)) == 0,
                              "decode attention NH=%d hs=%d p=%d threads=%d differs", NH, hs, p,
                              thr);
                free(q); free(k); free(v); free(o0); free(o1);
                free(s0); free(s1); free(p0); free(p1);
            }
    }
}
END_TEST

/* The third implementation, for the batched and paged caches (ops.h): the one-row kernel
 * is attention_forward's arithmetic — equal bytes for the last query of a causal block,
 * and with a mask equal to attention over the kept rows. */
START_TEST(test_row_kernel_matches_attention_forward) {
    enum { NH = 3, hs = 5, C = NH * hs, T = 11 };
    float q[C], k[T * C], v[T * C], out[C], ref[C], sc[T];
    float scores[NH * T], pattern[NH * T];
    const float *kr[T], *vr[T];
    fill(q, C, 1);
    fill(k, T * C, 2);
    fill(v, T * C, 3);
    for (int t = 0; t < T; t++) kr[t] = k + t * C, vr[t] = v + t * C;
    attention_forward(ref, scores, pattern, q, k, v, 1, T - 1, NH, hs);
    ck_assert_int_eq(attention_row_forward(out, sc, q, kr, vr, NULL, T, NH, hs), T);
    ck_assert_mem_eq(out, ref, sizeof out);

    /* mask slots 2, 3, 7: the same as attention over the 8 rows left, packed */
    const unsigned char keep[T] = {1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1};
    float kp[T * C], vp[T * C];
    int n = 0;
    for (int t = 0; t < T; t++)
        if (keep[t]) {
            memcpy(kp + n * C, k + t * C, sizeof(float) * C);
            memcpy(vp + n * C, v + t * C, sizeof(float) * C);
            n++;
        }
    attention_forward(ref, scores, pattern, q, kp, vp, 1, n - 1, NH, hs);
    ck_assert_int_eq(attention_row_forward(out, sc, q, kr, vr, keep, T, NH, hs), n);
    ck_assert_mem_eq(out, ref, sizeof out);
    /* and differs from attending to everything */
    attention_row_forward(ref, sc, q, kr, vr, NULL, T, NH, hs);
    double d = 0.0;
    for (int i = 0; i < C; i++) d = fmax(d, fabs((double)out[i] - (double)ref[i]));
    ck_assert(d > 1e-4);
    const unsigned char none[2] = {0, 0};
    ck_assert_int_eq(attention_row_forward(out, sc, q, kr, vr, none, 2, NH, hs), -1);
}
END_TEST


/* Distance of got from the exact value in units of the exact value's ulp (float). */
static double ulps_from(float got, double exact) {
    int e;
    frexp(exact, &e);
    const double ulp = ldexp(1.0, (e - 24 < -149 ? -149 : e - 24));
    return fabs((double)got - exact) / ulp;
}

/* ops_expf against exp in double: every 31st float of [-104, 0] (about 34 million:
 * every exponent, normal results within 1.5 ulp, subnormal ones within one step of
 * 2^-149), and the special values. */
START_TEST(test_exp_accuracy) {
    const float low = -104.0f;
    uint32_t lo, hi;
    memcpy(&hi, &low, sizeof hi);
    lo = 0x80000000u; /* -0 */
    double worst = 0.0, worst_sub = 0.0;
    float worst_x = 0.0f, worst_sub_x = 0.0f;
    for (uint64_t b = lo; b <= hi; b += 31) {
        const uint32_t bits = (uint32_t)b;
        float x;
        memcpy(&x, &bits, sizeof x);
        const double exact = exp((double)x);
        const float e = ops_expf(x);
        if (exact >= 0x1p-126) {
            const double u = ulps_from(e, exact);
            if (u > worst) worst = u, worst_x = x;
        } else {
            const double d = fabs((double)e - exact) / 0x1p-149;
            if (d > worst_sub) worst_sub = d, worst_sub_x = x;
        }
    }
    ck_assert_msg(worst <= 1.5, "exp is %.3f ulp off at x = %.9g", worst, worst_x);
    ck_assert_msg(worst_sub <= 1.0, "exp is %.3f subnormal steps off at x = %.9g", worst_sub,
                  worst_sub_x);
    ck_assert(ops_expf(0.0f) == 1.0f && ops_expf(-0.0f) == 1.0f);
    ck_assert(ops_expf(-INFINITY) == 0.0f && ops_expf(-1e30f) == 0.0f);
    ck_assert(ops_expf(-200.0f) == 0.0f && ops_expf(-103.0f) > 0.0f);
    ck_assert(isnan(ops_expf(NAN)));
}
END_TEST

/* ops_tanhf against tanh in double: every 31st float in [0, 12] (about 35 million,
 * both branches, the switch at 0.625 and the clamp at 10 included), odd symmetry bit
 * for bit, and the special values. */
START_TEST(test_tanh_accuracy) {
    const float top = 12.0f;
    uint32_t hi;
    memcpy(&hi, &top, sizeof hi);
    double worst = 0.0;
    float worst_x = 0.0f, odd_x = 0.0f;
    long odd = 0; /* asserting once, after the loop: each ck_assert costs a write */
    for (uint64_t b = 0; b <= hi; b += 31) {
        const uint32_t bits = (uint32_t)b;
        float x, nx;
        memcpy(&x, &bits, sizeof x);
        const float t = ops_tanhf(x), nt = ops_tanhf(-x);
        const double u = ulps_from(t, tanh((double)x));
        if (u > worst) worst = u, worst_x = x;
        nx = -t;
        if (memcmp(&nt, &nx, sizeof nt) != 0) odd++, odd_x = x;
    }
    ck_assert_msg(worst <= 2.0, "tanh is %.3f ulp off at x = %.9g", worst, worst_x);
    ck_assert_msg(odd == 0, "tanh(-x) != -tanh(x) at %ld points, e.g. x = %.9g", odd, odd_x);
    /* where each branch is largest, and the two sides of the switch */
    static const float pts[] = {0.6249999f, 0.625f, 0.6250001f, 9.999999f, 10.0f, 10.000001f, 1e-30f, 1e-45f};
    for (size_t i = 0; i < sizeof pts / sizeof *pts; i++)
        ck_assert_msg(ulps_from(ops_tanhf(pts[i]), tanh((double)pts[i])) <= 2.0, "x = %.9g", pts[i]);
    ck_assert(isnan(ops_tanhf(NAN)));
    ck_assert(ops_tanhf(INFINITY) == 1.0f && ops_tanhf(-INFINITY) == -1.0f);
    ck_assert(ops_tanhf(1e30f) == 1.0f && ops_tanhf(-3e38f) == -1.0f);
    ck_assert(ops_tanhf(0.0f) == 0.0f && !signbit(ops_tanhf(0.0f)));
    ck_assert(ops_tanhf(-0.0f) == 0.0f && signbit(ops_tanhf(-0.0f)));
}
END_TEST

START_TEST(test_gelu_layernorm_exact) {
    LEVEL_OR_SKIP(lv, _i, 1);
    const size_t n = 3 * 4096 + 77;
    float *x = alloc_filled(n, 41), *y0 = alloc_filled(n, 0), *y1 = alloc_filled(n, 1);
    for (size_t i = 0; i < n; i++) x[i] *= 6.0f;
    /* a dense run across both tanh branches and the clamp, then the special values */
    for (size_t i = 0; i < 4000; i++) x[i] = -12.0f + 0.006f * (float)i;
    static const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f,
                                    -1e-40f, 3e38f, -3e38f, 1e13f, -1e13f};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) x[4000 + 3 * i] = special[i];
    for (int thr = 1; thr <= 2; thr++) {
        set_threads(thr);
        gelu_forward(y0, x, n);
        kern_gelu_forward(lv, y1, x, n);
        ck_assert(memcmp(y0, y1, n * sizeof(float)) == 0);
        const int T = 77, C = 150; /* T·C < n */
        float *w = alloc_filled((size_t)C, 42), *b = alloc_filled((size_t)C, 43);
        layernorm_forward(y0, x, w, b, T, C, 1e-5f);
        kern_layernorm_forward(lv, y1, x, w, b, T, C, 1e-5f);
        /* bit for bit, except that a NaN may come out with the other sign: the row with
         * +NaN and -NaN sums them, and x86 keeps the NaN of the first operand of an add,
         * whose order a compiler may swap (clang does, in one of the two) */
        long differ = 0, nan_rows = 0;
        for (size_t i = 0; i < (size_t)T * C; i++) {
            if (isnan(y0[i]) && isnan(y1[i])) nan_rows += i % C == 0;
            else differ += memcmp(&y0[i], &y1[i], sizeof(float)) != 0;
        }
        ck_assert_msg(differ == 0, "layernorm: %ld values differ", differ);
        ck_assert_int_eq(nan_rows, 1); /* only the row that holds NaN and ±inf */
        free(w); free(b);
    }
    free(x); free(y0); free(y1);
}
END_TEST

/* The residual add: out = a + b as residual_forward gives it, in place (out = a) as the
 * engine calls it, over more than one task and a tail past the last full vector. */
START_TEST(test_residual_exact) {
    LEVEL_OR_SKIP(lv, _i, 1);
    const size_t n = 2 * 16384 + 13;
    float *a = alloc_filled(n, 51), *b = alloc_filled(n, 52), *y0 = alloc_filled(n, 0);
    float *y1 = alloc_filled(n, 1);
    static const float special[] = {NAN, INFINITY, -INFINITY, -0.0f, 3e38f, 1e-40f};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) a[5 * i] = special[i];
    b[5] = INFINITY; /* inf + -inf: a NaN, either way */
    residual_forward(y0, a, b, n);
    for (int thr = 1; thr <= 2; thr++) {
        set_threads(thr);
        fill(y1, n, 7);
        kern_residual_forward(lv, y1, a, b, n);
        ck_assert_msg(memcmp(y0, y1, n * sizeof(float)) == 0, "residual differs, threads=%d", thr);
        memcpy(y1, a, n * sizeof(float));
        kern_residual_forward(lv, y1, y1, b, n); /* in place */
        ck_assert_msg(memcmp(y0, y1, n * sizeof(float)) == 0, "in place differs, threads=%d", thr);
    }
    free(a), free(b), free(y0), free(y1);
}
END_TEST

/* Run a prompt and 6 decode steps; every step's logits into out (7·V). */
static void run_model(Model *m, float *out) {
    KVCache c;
    const int V = m->cfg.V;
    ck_assert_int_eq(kvcache_init(&c, m->cfg.L, m->cfg.NH, m->cfg.C / m->cfg.NH, m->cfg.N), 0);
    int prompt[37];
    for (int i = 0; i < 37; i++) prompt[i] = (i * 7 + 3) % V;
    ck_assert_int_eq(model_forward(m, &c, prompt, 37, out, NULL, NULL), 0);
    for (int s = 1; s <= 6; s++) {
        int tok = (s * 13) % V;
        ck_assert_int_eq(model_forward(m, &c, &tok, 1, out + (size_t)s * V, NULL, NULL), 0);
    }
    kvcache_free(&c);
}

/* The whole engine: fast kernels at 1 and 2 threads give the plain kernels' logits. */
START_TEST(test_model_exact) {
    LEVEL_OR_SKIP(lv, _i, 1);
    Config cfg = tiny_config(2, 4, 96, 64, 300);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 17), 0);
    ck_assert_int_eq(m.kern, kern_detect());
    /* a vector level needs the panels, or the run below would be the plain one again */
    for (int l = 0; l < cfg.L && m.kern != KERN_PLAIN; l++)
        for (int k = 0; k < KERN_MATS; k++) ck_assert(m.fast.h[l][k] && m.fast.wte);
    size_t nl = (size_t)7 * cfg.V;
    float *ref = alloc_filled(nl, 0), *got = alloc_filled(nl, 1);
    ck_assert_int_eq(model_set_kernels(&m, KERN_PLAIN), 0);
    set_threads(1);
    run_model(&m, ref);
    for (int thr = 1; thr <= 2; thr++) {
        set_threads(thr);
        ck_assert_int_eq(model_set_kernels(&m, lv), 0);
        run_model(&m, got);
        ck_assert_msg(memcmp(ref, got, nl * sizeof(float)) == 0, "logits differ at %d threads", thr);
    }
    free(ref); free(got);
    model_free(&m);
}
END_TEST

START_TEST(test_levels) {
    ck_assert(kern_supported(KERN_PLAIN));
    ck_assert(kern_supported(kern_detect()));
    ck_assert_str_eq(kern_name(KERN_PLAIN), "plain");
    ck_assert_str_eq(kern_name(KERN_AVX2), "avx2");
    ck_assert_str_eq(kern_name(KERN_AVX512), "avx512");
    /* each level needs the one below it */
    for (int lv = KERN_AVX2; lv < KERN_LEVEL_COUNT; lv++)
        ck_assert(!kern_supported((KernLevel)lv) || kern_supported((KernLevel)(lv - 1)));
    ck_assert_int_ge(kern_threads(), 1);
}
END_TEST

Suite *make_kernels_suite(void) {
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("exact");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_levels);
    tcase_add_test(tc, test_pack_panels);
    tcase_add_loop_test(tc, test_matmul_exact, KERN_AVX2, KERN_LEVEL_COUNT);
    tcase_add_loop_test(tc, test_matmul_large_exact, KERN_AVX2, KERN_LEVEL_COUNT);
    tcase_add_loop_test(tc, test_matmul_into_exact, KERN_PLAIN, KERN_LEVEL_COUNT);
    tcase_add_loop_test(tc, test_matmul_transposed_exact, KERN_AVX2, KERN_LEVEL_COUNT);
    tcase_add_loop_test(tc, test_matmul_half_exact, KERN_AVX2, KERN_LEVEL_COUNT);
    tcase_add_loop_test(tc, test_attention_exact, KERN_AVX2, KERN_LEVEL_COUNT);
    tcase_add_loop_test(tc, test_attention_special, KERN_AVX2, KERN_LEVEL_COUNT);
    tcase_add_loop_test(tc, test_attention_decode_wide, KERN_AVX2, KERN_LEVEL_COUNT);
    tcase_add_test(tc, test_row_kernel_matches_attention_forward);
    tcase_add_test(tc, test_tanh_accuracy);
    tcase_add_test(tc, test_exp_accuracy);
    tcase_add_loop_test(tc, test_gelu_layernorm_exact, KERN_AVX2, KERN_LEVEL_COUNT);
    tcase_add_loop_test(tc, test_residual_exact, KERN_AVX2, KERN_LEVEL_COUNT);
    tcase_add_loop_test(tc, test_model_exact, KERN_AVX2, KERN_LEVEL_COUNT);
    suite_add_tcase(s, tc);
    return s;
}
