/* check_train_ops.c — every backward op (train_ops.h) against central finite differences
 * of a double-precision forward, the fast kernels (train_kernels.h) against the plain
 * ones with memcmp, and one AdamW step against its closed form.
 *
 * Finite differences: the loss is Σ dy·out(x) with fixed random dy, computed in double
 * from the same values the float backward saw; each input is moved by ±h,
 * h = 1e-5·max(1, |x|). Tolerance: the worst |analytic − numeric| over a tensor, divided
 * by the largest |analytic| of that tensor, at most 1e-4 (float32 arithmetic in the
 * backward; the differences in double are good to ~1e-9). */
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
#include "ops.h"
#include "testutil.h"
#include "train_kernels.h"
#include "train_ops.h"

#define FD_TOL 1e-4

/* Values in [-1, 1) from a fixed LCG, times scale. */
static void fill(float *a, size_t n, uint32_t seed, float scale) {
    uint32_t s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        a[i] = scale * (float)((double)(s >> 8) / 8388608.0 - 1.0);
    }
}

static float *falloc(size_t n, uint32_t seed, float scale) {
    float *a = calloc(n ? n : 1, sizeof *a);
    ck_assert_ptr_nonnull(a);
    if (seed) fill(a, n, seed, scale);
    return a;
}

static double *to_double(const float *a, size_t n) {
    double *d = malloc((n ? n : 1) * sizeof *d);
    ck_assert_ptr_nonnull(d);
    for (size_t i = 0; i < n; i++) d[i] = a[i];
    return d;
}

typedef double (*LossFn)(const void *ctx);

/* max_i |g[i] − ∂L/∂x[i]| / max_i |g[i]|, the derivative by central differences on x. */
static double fd_worst(LossFn loss, const void *ctx, double *x, const float *g, size_t n) {
    double scale = 1e-30, worst = 0.0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(g[i]));
    for (size_t i = 0; i < n; i++) {
        const double keep = x[i], h = 1e-5 * fmax(1.0, fabs(keep));
        x[i] = keep + h;
        const double lp = loss(ctx);
        x[i] = keep - h;
        const double lm = loss(ctx);
        x[i] = keep;
        worst = fmax(worst, fabs(g[i] - (lp - lm) / (2 * h)));
    }
    return worst / scale;
}

#define CHECK_FD(what, loss, ctx, x, g, n)                                                        \
    do {                                                                                          \
        const double e_ = fd_worst(loss, ctx, x, g, n);                                           \
        ck_assert_msg(e_ <= FD_TOL, "%s: worst relative difference %.3g > %.0e", what, e_, FD_TOL); \
    } while (0)

/* ---- layernorm ------------------------------------------------------------------------ */

typedef struct { int T, C; double *x, *w, *b, *dy; } LnCtx;

static double ln_loss(const void *p) {
    const LnCtx *c = p;
    double L = 0.0;
    for (int t = 0; t < c->T; t++) {
        const double *x = c->x + (size_t)t * c->C;
        double m = 0, v = 0;
        for (int i = 0; i < c->C; i++) m += x[i];
        m /= c->C;
        for (int i = 0; i < c->C; i++) v += (x[i] - m) * (x[i] - m);
        v /= c->C;
        for (int i = 0; i < c->C; i++)
            L += c->dy[(size_t)t * c->C + i] * ((x[i] - m) / sqrt(v + 1e-5) * c->w[i] + c->b[i]);
    }
    return L;
}

START_TEST(test_layernorm_fd) {
    const int T = 5, C = 24;
    float *x = falloc((size_t)T * C, 1, 2.0f), *w = falloc(C, 2, 1.0f), *b = falloc(C, 3, 0.5f);
    float *dy = falloc((size_t)T * C, 4, 1.0f), *mean = falloc(T, 0, 0), *rstd = falloc(T, 0, 0);
    float *dx = falloc((size_t)T * C, 0, 0), *dw = falloc(C, 0, 0), *db = falloc(C, 0, 0);
    for (int i = 0; i < C; i++) w[i] += 1.0f;
    layernorm_stats(mean, rstd, x, T, C, 1e-5f);
    layernorm_backward(dx, dw, db, dy, x, w, mean, rstd, T, C);
    LnCtx c = {T, C, to_double(x, (size_t)T * C), to_double(w, C), to_double(b, C),
               to_double(dy, (size_t)T * C)};
    CHECK_FD("layernorm dinp", ln_loss, &c, c.x, dx, (size_t)T * C);
    CHECK_FD("layernorm dweight", ln_loss, &c, c.w, dw, C);
    CHECK_FD("layernorm dbias", ln_loss, &c, c.b, db, C);
    free(x), free(w), free(b), free(dy), free(mean), free(rstd), free(dx), free(dw), free(db);
    free(c.x), free(c.w), free(c.b), free(c.dy);
}
END_TEST

/* ---- matmul and the lm_head ------------------------------------------------------------- */

typedef struct { int T, C, OC, transposed; double *x, *w, *b, *dy; } MmCtx;

static double mm_loss(const void *p) {
    const MmCtx *c = p;
    double L = 0.0;
    for (int t = 0; t < c->T; t++)
        for (int o = 0; o < c->OC; o++) {
            double y = c->b ? c->b[o] : 0.0;
            for (int i = 0; i < c->C; i++)
                y += c->x[(size_t)t * c->C + i] *
                     (c->transposed ? c->w[(size_t)o * c->C + i] : c->w[(size_t)i * c->OC + o]);
            L += c->dy[(size_t)t * c->OC + o] * y;
        }
    return L;
}

START_TEST(test_matmul_fd) {
    const int T = 6, C = 10, OC = 13;
    float *x = falloc((size_t)T * C, 5, 1.0f), *w = falloc((size_t)C * OC, 6, 0.5f);
    float *b = falloc(OC, 7, 0.5f), *dy = falloc((size_t)T * OC, 8, 1.0f);
    float *dx = falloc((size_t)T * C, 0, 0), *dw = falloc((size_t)C * OC, 0, 0), *db = falloc(OC, 0, 0);
    matmul_backward(dx, dw, db, dy, x, w, T, C, OC);
    MmCtx c = {T, C, OC, 0, to_double(x, (size_t)T * C), to_double(w, (size_t)C * OC),
               to_double(b, OC), to_double(dy, (size_t)T * OC)};
    CHECK_FD("matmul dinp", mm_loss, &c, c.x, dx, (size_t)T * C);
    CHECK_FD("matmul dweight", mm_loss, &c, c.w, dw, (size_t)C * OC);
    CHECK_FD("matmul dbias", mm_loss, &c, c.b, db, OC);
    /* the tied lm_head: out = x·wᵀ, w (OC, C) */
    memset(dx, 0, (size_t)T * C * sizeof *dx);
    memset(dw, 0, (size_t)C * OC * sizeof *dw);
    matmul_transposed_backward(dx, dw, dy, x, w, T, C, OC);
    free(c.b);
    c.b = NULL;
    c.transposed = 1;
    CHECK_FD("lm_head dinp", mm_loss, &c, c.x, dx, (size_t)T * C);
    CHECK_FD("lm_head dweight", mm_loss, &c, c.w, dw, (size_t)C * OC);
    free(x), free(w), free(b), free(dy), free(dx), free(dw), free(db);
    free(c.x), free(c.w), free(c.dy);
}
END_TEST

/* ---- attention ------------------------------------------------------------------------------ */

typedef struct { int B, T, NH, hs; double *q, *k, *v, *dy; } AttCtx;

static double att_loss(const void *p) {
    const AttCtx *c = p;
    const int C = c->NH * c->hs;
    double L = 0.0, w[64];
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->NH; h++)
            for (int i = 0; i < c->T; i++) {
                const size_t qi = ((size_t)b * c->T + i) * C + (size_t)h * c->hs;
                double mx = -INFINITY, sum = 0.0;
                for (int j = 0; j <= i; j++) {
                    const size_t kj = ((size_t)b * c->T + j) * C + (size_t)h * c->hs;
                    double s = 0.0;
                    for (int d = 0; d < c->hs; d++) s += c->q[qi + d] * c->k[kj + d];
                    w[j] = s / sqrt((double)c->hs);
                    mx = fmax(mx, w[j]);
                }
                for (int j = 0; j <= i; j++) sum += w[j] = exp(w[j] - mx);
                for (int d = 0; d < c->hs; d++) {
                    double o = 0.0;
                    for (int j = 0; j <= i; j++)
                        o += w[j] / sum * c->v[((size_t)b * c->T + j) * C + (size_t)h * c->hs + d];
                    L += c->dy[qi + d] * o;
                }
            }
    return L;
}

/* att (B,NH,T,T) by the engine's forward, one sequence at a time. */
static void att_forward(float *att, const float *q, const float *k, const float *v, int B, int T,
                        int NH, int hs) {
    const size_t TC = (size_t)T * NH * hs;
    float *out = falloc(TC, 0, 0), *sc = falloc((size_t)NH * T * T, 0, 0);
    for (int b = 0; b < B; b++)
        attention_forward(out, sc, att + (size_t)b * NH * T * T, q + b * TC, k + b * TC, v + b * TC,
                          T, 0, NH, hs);
    free(out);
    free(sc);
}

START_TEST(test_attention_fd) {
    const int B = 2, T = 7, NH = 2, hs = 4, C = NH * hs;
    const size_t n = (size_t)B * T * C;
    float *q = falloc(n, 9, 1.5f), *k = falloc(n, 10, 1.5f), *v = falloc(n, 11, 1.0f);
    float *dy = falloc(n, 12, 1.0f), *att = falloc((size_t)B * NH * T * T, 0, 0);
    float *dpre = falloc((size_t)B * NH * T * T, 0, 0);
    float *dq = falloc(n, 0, 0), *dk = falloc(n, 0, 0), *dv = falloc(n, 0, 0);
    att_forward(att, q, k, v, B, T, NH, hs);
    attention_backward(dq, dk, dv, dpre, dy, q, k, v, att, B, T, NH, hs);
    AttCtx c = {B, T, NH, hs, to_double(q, n), to_double(k, n), to_double(v, n), to_double(dy, n)};
    CHECK_FD("attention dq", att_loss, &c, c.q, dq, n);
    CHECK_FD("attention dk", att_loss, &c, c.k, dk, n);
    CHECK_FD("attention dv", att_loss, &c, c.v, dv, n);
    free(q), free(k), free(v), free(dy), free(att), free(dpre), free(dq), free(dk), free(dv);
    free(c.q), free(c.k), free(c.v), free(c.dy);
}
END_TEST

/* ---- GELU, cross-entropy, embeddings ---------------------------------------------------- */

typedef struct { size_t n; double *x, *dy; } GeluCtx;

static double gelu_loss(const void *p) {
    const GeluCtx *c = p;
    const double k = sqrt(2.0 / 3.14159265358979323846);
    double L = 0.0;
    for (size_t i = 0; i < c->n; i++) {
        const double x = c->x[i];
        L += c->dy[i] * 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
    }
    return L;
}

START_TEST(test_gelu_fd) {
    const size_t n = 400;
    float *x = falloc(n, 13, 4.0f), *dy = falloc(n, 14, 1.0f), *out = falloc(n, 0, 0);
    float *dx = falloc(n, 0, 0);
    x[0] = 0.0f, x[1] = 1e-30f, x[2] = -6.0f, x[3] = 6.0f; /* the edges of 2·out/x */
    gelu_forward(out, x, n);
    gelu_backward(dx, x, out, dy, n);
    GeluCtx c = {n, to_double(x, n), to_double(dy, n)};
    CHECK_FD("gelu dinp", gelu_loss, &c, c.x, dx, n);
    gelu_backward(dy, x, out, dy, n); /* in place gives the same */
    ck_assert_int_eq(memcmp(dy, dx, n * sizeof *dx), 0);
    free(x), free(dy), free(out), free(dx), free(c.x), free(c.dy);
}
END_TEST

typedef struct { int T, V; const int *tg; double *l; } CeCtx;

static double ce_loss(const void *p) {
    const CeCtx *c = p;
    double L = 0.0;
    for (int t = 0; t < c->T; t++) {
        const double *l = c->l + (size_t)t * c->V;
        double mx = l[0], s = 0.0;
        for (int v = 1; v < c->V; v++) mx = fmax(mx, l[v]);
        for (int v = 0; v < c->V; v++) s += exp(l[v] - mx);
        L += (log(s) + mx - l[c->tg[t]]) / c->T;
    }
    return L;
}

START_TEST(test_crossentropy_fd) {
    const int T = 5, V = 17;
    const int tg[5] = {0, 16, 3, 3, 9};
    float *l = falloc((size_t)T * V, 15, 3.0f), *p = falloc((size_t)T * V, 0, 0);
    float *loss = falloc(T, 0, 0), *dl = falloc((size_t)T * V, 0, 0);
    crossentropy_forward(loss, p, l, tg, T, V);
    crossentropy_backward(dl, p, tg, 1.0f / T, T, V);
    CeCtx c = {T, V, tg, to_double(l, (size_t)T * V)};
    double sum = 0.0;
    for (int t = 0; t < T; t++) sum += loss[t] / T;
    ck_assert_msg(fabs(sum - ce_loss(&c)) < 1e-6, "loss %.9g vs %.9g", sum, ce_loss(&c));
    CHECK_FD("cross-entropy dlogits", ce_loss, &c, c.l, dl, (size_t)T * V);
    free(l), free(p), free(loss), free(dl), free(c.l);
}
END_TEST

typedef struct { int B, T, C; const int *tok; double *wte, *wpe, *dy; } EncCtx;

static double enc_loss(const void *p) {
    const EncCtx *c = p;
    double L = 0.0;
    for (int r = 0; r < c->B * c->T; r++)
        for (int i = 0; i < c->C; i++)
            L += c->dy[(size_t)r * c->C + i] *
                 (c->wte[(size_t)c->tok[r] * c->C + i] + c->wpe[(size_t)(r % c->T) * c->C + i]);
    return L;
}

START_TEST(test_encoder_fd) {
    const int B = 2, T = 3, C = 4, V = 5;
    const int tok[6] = {1, 4, 1, 0, 1, 2}; /* token 1 three times, token 3 never */
    float *wte = falloc((size_t)V * C, 16, 1.0f), *wpe = falloc((size_t)T * C, 17, 1.0f);
    float *dy = falloc((size_t)B * T * C, 18, 1.0f), *out = falloc((size_t)B * T * C, 0, 0);
    float *dwte = falloc((size_t)V * C, 0, 0), *dwpe = falloc((size_t)T * C, 0, 0);
    encoder_forward(out, tok, wte, wpe, B, T, C);
    ck_assert_float_eq(out[C + 2], wte[4 * C + 2] + wpe[C + 2]);
    encoder_backward(dwte, dwpe, dy, tok, B, T, C);
    EncCtx c = {B, T, C, tok, to_double(wte, (size_t)V * C), to_double(wpe, (size_t)T * C),
                to_double(dy, (size_t)B * T * C)};
    CHECK_FD("encoder dwte", enc_loss, &c, c.wte, dwte, (size_t)V * C);
    CHECK_FD("encoder dwpe", enc_loss, &c, c.wpe, dwpe, (size_t)T * C);
    free(wte), free(wpe), free(dy), free(out), free(dwte), free(dwpe);
    free(c.wte), free(c.wpe), free(c.dy);
}
END_TEST

/* ---- AdamW ---------------------------------------------------------------------------------
 * Step 1 from m = v = 0: m = (1−β1)·g, v = (1−β2)·g², and with bc1 = 1−β1, bc2 = 1−β2
 * the update is p − lr·(g/(|g| + eps) + wd·p). Tolerance 1e-6 relative (a few float
 * roundings). Then step 2 against the recurrences in double. */
START_TEST(test_adamw_closed_form) {
    const size_t n = 1000;
    const float lr = 1e-2f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f;
    float *p = falloc(n, 19, 1.0f), *g = falloc(n, 20, 0.1f), *m = falloc(n, 0, 0);
    float *v = falloc(n, 0, 0), *p2 = falloc(n, 0, 0), *m2 = falloc(n, 0, 0), *v2 = falloc(n, 0, 0);
    g[0] = 0.0f; /* no gradient: only the decay moves it */
    double *pd = to_double(p, n);
    memcpy(p2, p, n * sizeof *p);
    adamw_update(p, g, m, v, n, lr, b1, b2, eps, wd, 1.0f - b1, 1.0f - b2);
    tk_adamw_update(KERN_PLAIN, p2, g, m2, v2, n, lr, b1, b2, eps, wd, 1.0f - b1, 1.0f - b2);
    ck_assert_int_eq(memcmp(p, p2, n * sizeof *p), 0);
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double want = pd[i] - lr * (g[i] / (fabs(g[i]) + eps) + wd * pd[i]);
        worst = fmax(worst, fabs(p[i] - want) / fmax(fabs(want), 1e-3));
    }
    ck_assert_msg(worst < 1e-6, "AdamW step 1: worst relative error %.3g", worst);
    /* step 2 with a new gradient, against the recurrences in double */
    double md[1000], vd[1000];
    for (size_t i = 0; i < n; i++) {
        pd[i] = p[i];
        md[i] = (1.0 - b1) * g[i];
        vd[i] = (1.0 - b2) * (double)g[i] * g[i];
    }
    fill(g, n, 21, 0.1f);
    const double c1 = 1.0 - (double)b1 * b1, c2 = 1.0 - (double)b2 * b2;
    adamw_update(p, g, m, v, n, lr, b1, b2, eps, wd, (float)c1, (float)c2);
    worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double mm = b1 * md[i] + (1.0 - b1) * g[i], vv = b2 * vd[i] + (1.0 - b2) * (double)g[i] * g[i];
        const double want = pd[i] - lr * ((mm / c1) / (sqrt(vv / c2) + eps) + wd * pd[i]);
        worst = fmax(worst, fabs(p[i] - want) / fmax(fabs(want), 1e-3));
    }
    ck_assert_msg(worst < 1e-5, "AdamW step 2: worst relative error %.3g", worst);
    free(p), free(g), free(m), free(v), free(p2), free(m2), free(v2), free(pd);
}
END_TEST

/* ---- fast = plain ----------------------------------------------------------------------------- */

static void set_threads(int n) {
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

static void expect_same(const float *a, const float *b, size_t n, const char *what, KernLevel lv,
                        int threads) {
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(memcmp(&a[i], &b[i], sizeof *a) == 0,
                      "%s (%s, %d threads): element %zu: %.9g vs plain %.9g", what, kern_name(lv),
                      threads, i, (double)a[i], (double)b[i]);
}

static const int mm_shapes[][3] = { /* T, C, OC: tails, narrow panels, K and T blocks */
    {1, 1, 1}, {9, 16, 48}, {37, 40, 53}, {64, 96, 144}, {130, 64, 256}, {300, 24, 40}, {20, 200, 17},
    {140, 136, 403}, /* dW in several tasks both ways (TK_KB 128 rows, TK_NB 384 columns) */
};

START_TEST(test_matmul_fast) {
    const int threads = 1 + _i % 2; /* and level KERN_AVX2 + _i / 2 */
    LEVEL_OR_SKIP(lv, KERN_AVX2 + _i / 2, threads);
    set_threads(threads);
    for (size_t s = 0; s < sizeof mm_shapes / sizeof mm_shapes[0]; s++) {
        const int T = mm_shapes[s][0], C = mm_shapes[s][1], OC = mm_shapes[s][2];
        float *x = falloc((size_t)T * C, 31, 1.0f), *w = falloc((size_t)C * OC, 32, 1.0f);
        float *dy = falloc((size_t)T * OC, 33, 1.0f), *wt = falloc((size_t)C * OC, 0, 0);
        float *dx0 = falloc((size_t)T * C, 0, 0), *dw0 = falloc((size_t)C * OC, 34, 0.1f);
        float *db0 = falloc(OC, 35, 0.1f), *dx1 = falloc((size_t)T * C, 0, 0);
        float *dw1 = falloc((size_t)C * OC, 34, 0.1f), *db1 = falloc(OC, 35, 0.1f);
        kern_pack_panels_t(wt, w, C, OC);
        matmul_backward(dx0, dw0, db0, dy, x, w, T, C, OC);
        tk_matmul_backward(lv, dx1, dw1, db1, dy, x, w, wt, T, C, OC);
        expect_same(dx1, dx0, (size_t)T * C, "matmul dinp", lv, threads);
        expect_same(dw1, dw0, (size_t)C * OC, "matmul dweight", lv, threads);
        expect_same(db1, db0, OC, "matmul dbias", lv, threads);
        /* the lm_head: w read as (OC, C) */
        kern_pack_panels(wt, w, OC, C);
        matmul_transposed_backward(dx0, dw0, dy, x, w, T, C, OC);
        tk_matmul_transposed_backward(lv, dx1, dw1, dy, x, w, wt, T, C, OC);
        expect_same(dx1, dx0, (size_t)T * C, "lm_head dinp", lv, threads);
        expect_same(dw1, dw0, (size_t)C * OC, "lm_head dweight", lv, threads);
        free(x), free(w), free(dy), free(wt), free(dx0), free(dw0), free(db0);
        free(dx1), free(dw1), free(db1);
    }
}
END_TEST

static const int att_shapes[][4] = { /* B, T, NH, hs */
    {1, 1, 1, 32}, {2, 37, 2, 32}, {1, 50, 3, 16}, {2, 16, 1, 64}, {1, 33, 2, 8}, {3, 19, 4, 32},
};

START_TEST(test_attention_fast) {
    const int threads = 1 + _i % 2; /* and level KERN_AVX2 + _i / 2 */
    LEVEL_OR_SKIP(lv, KERN_AVX2 + _i / 2, threads);
    set_threads(threads);
    for (size_t s = 0; s < sizeof att_shapes / sizeof att_shapes[0]; s++) {
        const int B = att_shapes[s][0], T = att_shapes[s][1], NH = att_shapes[s][2],
                  hs = att_shapes[s][3];
        const size_t n = (size_t)B * T * NH * hs, na = (size_t)B * NH * T * T;
        float *q = falloc(n, 41, 2.0f), *k = falloc(n, 42, 2.0f), *v = falloc(n, 43, 1.0f);
        float *dy = falloc(n, 44, 1.0f), *att = falloc(na, 0, 0);
        float *r[8];
        for (int j = 0; j < 8; j++) r[j] = falloc(j % 4 == 3 ? na : n, 0, 0);
        float *scratch = falloc(2 * tk_attention_scratch(T, hs), 45, 1e30f); /* junk: never read */
        att_forward(att, q, k, v, B, T, NH, hs);
        attention_backward(r[0], r[1], r[2], r[3], dy, q, k, v, att, B, T, NH, hs);
        tk_attention_backward(lv, r[4], r[5], r[6], r[7], dy, q, k, v, att, B, T, NH, hs, scratch, 2);
        expect_same(r[4], r[0], n, "attention dq", lv, threads);
        expect_same(r[5], r[1], n, "attention dk", lv, threads);
        expect_same(r[6], r[2], n, "attention dv", lv, threads);
        expect_same(r[7], r[3], na, "attention dpre", lv, threads);
        for (int j = 0; j < 8; j++) free(r[j]);
        free(q), free(k), free(v), free(dy), free(att), free(scratch);
    }
}
END_TEST

/* The row-wise ops, split by the threads into rows or chunks, give one plain call's bytes
 * (memcmp); and both give the formulas computed here in double, so that at one thread,
 * where the split is a loop around the same call, the test still compares with something
 * else. Tolerance: the worst |float − double| over a tensor divided by its largest
 * |double|, at most ROW_TOL (float32 arithmetic, ~1e-7 a step). */
#define ROW_TOL 2e-6

static void expect_close(const float *got, const double *want, size_t n, const char *what) {
    double scale = 1e-30, worst = 0.0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(got[i] - want[i]));
    ck_assert_msg(worst / scale <= ROW_TOL, "%s: worst difference from the double formula %.3g of %.3g",
                  what, worst, scale);
}

/* Layernorm in double: the row statistics, and the backward added to dinp, dw, db. */
static void ln_ref(double *mean, double *rstd, double *dinp, double *dw, double *db, const float *dy,
                   const float *x, const float *w, int T, int C, double eps) {
    for (int t = 0; t < T; t++) {
        const float *xr = x + (size_t)t * C, *dr = dy + (size_t)t * C;
        double m = 0, v = 0, dn_mean = 0, dnn_mean = 0;
        for (int i = 0; i < C; i++) m += xr[i];
        m /= C;
        for (int i = 0; i < C; i++) v += (xr[i] - m) * (xr[i] - m);
        const double r = 1.0 / sqrt(v / C + eps);
        mean[t] = m, rstd[t] = r;
        for (int i = 0; i < C; i++) {
            const double nrm = (xr[i] - m) * r, dn = (double)dr[i] * w[i];
            dn_mean += dn / C, dnn_mean += dn * nrm / C;
            dw[i] += nrm * dr[i], db[i] += dr[i];
        }
        for (int i = 0; i < C; i++) {
            const double nrm = (xr[i] - m) * r, dn = (double)dr[i] * w[i];
            dinp[(size_t)t * C + i] += r * (dn - dn_mean - nrm * dnn_mean);
        }
    }
}

/* GELU's derivative (tanh form) in double, times dy. */
static void gelu_ref(double *dx, const float *x, const float *dy, size_t n) {
    const double k = sqrt(2.0 / M_PI);
    for (size_t i = 0; i < n; i++) {
        const double a = x[i], u = k * (a + 0.044715 * a * a * a), th = tanh(u);
        dx[i] = dy[i] * (0.5 * (1 + th) + 0.5 * a * (1 - th * th) * k * (1 + 3 * 0.044715 * a * a));
    }
}

/* Softmax cross-entropy in double: losses, probs, and (probs − onehot)·dloss. */
static void ce_ref(double *loss, double *probs, double *dlogits, const float *logits, const int *tg,
                   double dloss, int T, int V) {
    for (int t = 0; t < T; t++) {
        const float *z = logits + (size_t)t * V;
        double mx = z[0], sum = 0;
        for (int v = 1; v < V; v++) mx = fmax(mx, z[v]);
        for (int v = 0; v < V; v++) sum += exp(z[v] - mx);
        loss[t] = mx + log(sum) - z[tg[t]];
        for (int v = 0; v < V; v++) {
            probs[(size_t)t * V + v] = exp(z[v] - mx) / sum;
            dlogits[(size_t)t * V + v] = (probs[(size_t)t * V + v] - (v == tg[t])) * dloss;
        }
    }
}

static void rows_layernorm(int threads, const float *x, const float *w, const float *dy, int T, int C) {
    const size_t n = (size_t)T * C;
    float *mean0 = falloc(T, 0, 0), *rstd0 = falloc(T, 0, 0), *mean1 = falloc(T, 0, 0), *rstd1 = falloc(T, 0, 0);
    float *a[6];
    for (int j = 0; j < 6; j++) a[j] = falloc(j % 3 == 0 ? n : (size_t)C, 54, 0.1f);
    double *rm = to_double(mean0, T), *rr = to_double(rstd0, T), *rdx = to_double(a[0], n), *rdw = to_double(a[1], C),
           *rdb = to_double(a[2], C);
    layernorm_stats(mean0, rstd0, x, T, C, 1e-5f);
    tk_layernorm_stats(mean1, rstd1, x, T, C, 1e-5f);
    expect_same(mean1, mean0, T, "layernorm mean", KERN_PLAIN, threads);
    expect_same(rstd1, rstd0, T, "layernorm rstd", KERN_PLAIN, threads);
    layernorm_backward(a[0], a[1], a[2], dy, x, w, mean0, rstd0, T, C);
    tk_layernorm_backward(KERN_PLAIN, a[3], a[4], a[5], dy, x, w, mean0, rstd0, T, C);
    expect_same(a[3], a[0], n, "layernorm dinp", KERN_PLAIN, threads);
    expect_same(a[4], a[1], C, "layernorm dweight", KERN_PLAIN, threads);
    expect_same(a[5], a[2], C, "layernorm dbias", KERN_PLAIN, threads);
    ln_ref(rm, rr, rdx, rdw, rdb, dy, x, w, T, C, 1e-5);
    expect_close(mean1, rm, T, "layernorm mean");
    expect_close(rstd1, rr, T, "layernorm rstd");
    expect_close(a[3], rdx, n, "layernorm dinp");
    expect_close(a[4], rdw, C, "layernorm dweight");
    expect_close(a[5], rdb, C, "layernorm dbias");
    free(mean0), free(rstd0), free(mean1), free(rstd1), free(rm), free(rr), free(rdx), free(rdw), free(rdb);
    for (int j = 0; j < 6; j++) free(a[j]);
}

static void rows_gelu_ce(int threads, const float *x, const float *dy, int T, int C, int V) {
    const size_t n = (size_t)T * C, nv = (size_t)T * V;
    float *g0 = falloc(n, 0, 0), *g1 = falloc(n, 0, 0), *out = falloc(n, 0, 0);
    double *rg = to_double(g0, n), *rl = to_double(g0, T), *rp = to_double(g0, nv), *rd = to_double(g0, nv);
    gelu_forward(out, x, n);
    gelu_backward(g0, x, out, dy, n);
    tk_gelu_backward(KERN_PLAIN, g1, x, out, dy, n);
    expect_same(g1, g0, n, "gelu dinp", KERN_PLAIN, threads);
    gelu_ref(rg, x, dy, n);
    expect_close(g1, rg, n, "gelu dinp");
    int *tg = malloc((size_t)T * sizeof *tg);
    ck_assert_ptr_nonnull(tg);
    for (int t = 0; t < T; t++) tg[t] = (t * 7) % V;
    float *l0 = falloc(T, 0, 0), *l1 = falloc(T, 0, 0), *p0 = falloc(nv, 0, 0), *p1 = falloc(nv, 0, 0);
    crossentropy_forward(l0, p0, x, tg, T, V); /* x read as (T, V) logits: T·V ≤ T·C */
    tk_crossentropy_forward(l1, p1, x, tg, T, V);
    expect_same(l1, l0, T, "cross-entropy loss", KERN_PLAIN, threads);
    expect_same(p1, p0, nv, "cross-entropy probs", KERN_PLAIN, threads);
    crossentropy_backward(g0, p0, tg, 0.5f, T, V);
    tk_crossentropy_backward(g1, p0, tg, 0.5f, T, V);
    expect_same(g1, g0, nv, "cross-entropy dlogits", KERN_PLAIN, threads);
    ce_ref(rl, rp, rd, x, tg, 0.5, T, V);
    expect_close(l1, rl, T, "cross-entropy loss");
    expect_close(p1, rp, nv, "cross-entropy probs");
    expect_close(g1, rd, nv, "cross-entropy dlogits");
    free(g0), free(g1), free(out), free(tg), free(l0), free(l1), free(p0), free(p1);
    free(rg), free(rl), free(rp), free(rd);
}

START_TEST(test_rowwise_threads) {
    const int threads = 1 + _i;
    char why[96];
    if (kern_case_skip(KERN_PLAIN, threads, why, sizeof why)) {
        TEST_SKIPPED(why);
        return;
    }
    set_threads(threads);
    const int T = 300, C = 72, V = 40;
    float *x = falloc((size_t)T * C, 51, 2.0f), *w = falloc(C, 52, 1.0f), *dy = falloc((size_t)T * C, 53, 1.0f);
    rows_layernorm(threads, x, w, dy, T, C);
    rows_gelu_ce(threads, x, dy, T, C, V);
    free(x), free(w), free(dy);
}
END_TEST

/* The vector GELU backward, AdamW and layernorm backward against the plain loops: lengths
 * and channel counts with tails at both widths, inputs at exactly 0 (GELU's other branch),
 * several AdamW steps so that the moments are not zero. */
START_TEST(test_rowwise_fast) {
    const int threads = 1 + _i % 2; /* and level KERN_AVX2 + _i / 2 */
    LEVEL_OR_SKIP(lv, KERN_AVX2 + _i / 2, threads);
    set_threads(threads);
    const size_t ns[] = {1, 15, 17, 40000 + 13}; /* the last spans several chunks */
    for (size_t s = 0; s < sizeof ns / sizeof ns[0]; s++) {
        const size_t n = ns[s];
        float *x = falloc(n, 61, 4.0f), *dy = falloc(n, 62, 1.0f), *out = falloc(n, 0, 0);
        float *g0 = falloc(n, 0, 0), *g1 = falloc(n, 0, 0);
        for (size_t i = 0; i < n; i += 7) x[i] = 0.0f;
        gelu_forward(out, x, n);
        gelu_backward(g0, x, out, dy, n);
        tk_gelu_backward(lv, g1, x, out, dy, n);
        expect_same(g1, g0, n, "gelu dinp", lv, threads);
        float *p0 = falloc(n, 63, 1.0f), *p1 = falloc(n, 63, 1.0f), *m0 = falloc(n, 0, 0);
        float *m1 = falloc(n, 0, 0), *v0 = falloc(n, 0, 0), *v1 = falloc(n, 0, 0);
        for (int step = 1; step <= 3; step++) {
            fill(dy, n, 64 + (uint32_t)step, 0.1f);
            dy[0] = 0.0f;
            const float c1 = 1.0f - powf(0.9f, (float)step), c2 = 1.0f - powf(0.95f, (float)step);
            adamw_update(p0, dy, m0, v0, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, c1, c2);
            tk_adamw_update(lv, p1, dy, m1, v1, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, c1, c2);
        }
        expect_same(p1, p0, n, "adamw p", lv, threads);
        expect_same(m1, m0, n, "adamw m", lv, threads);
        expect_same(v1, v0, n, "adamw v", lv, threads);
        free(x), free(dy), free(out), free(g0), free(g1);
        free(p0), free(p1), free(m0), free(m1), free(v0), free(v1);
    }
    const int T = 130, C = 77; /* 77 = 4·16 + 13 = 9·8 + 5: a tail at both widths */
    const size_t n = (size_t)T * C;
    float *x = falloc(n, 71, 2.0f), *w = falloc(C, 72, 1.0f), *dy = falloc(n, 73, 1.0f);
    float *mean = falloc(T, 0, 0), *rstd = falloc(T, 0, 0), *a[6];
    for (int j = 0; j < 6; j++) a[j] = falloc(j % 3 == 0 ? n : (size_t)C, 74, 0.1f);
    layernorm_stats(mean, rstd, x, T, C, 1e-5f);
    layernorm_backward(a[0], a[1], a[2], dy, x, w, mean, rstd, T, C);
    tk_layernorm_backward(lv, a[3], a[4], a[5], dy, x, w, mean, rstd, T, C);
    expect_same(a[3], a[0], n, "layernorm dinp", lv, threads);
    expect_same(a[4], a[1], C, "layernorm dweight", lv, threads);
    expect_same(a[5], a[2], C, "layernorm dbias", lv, threads);
    free(x), free(w), free(dy), free(mean), free(rstd);
    for (int j = 0; j < 6; j++) free(a[j]);
}
END_TEST

Suite *make_train_ops_suite(void) {
    Suite *s = suite_create("train_ops");
    TCase *t = tcase_create("finite differences");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_layernorm_fd);
    tcase_add_test(t, test_matmul_fd);
    tcase_add_test(t, test_attention_fd);
    tcase_add_test(t, test_gelu_fd);
    tcase_add_test(t, test_crossentropy_fd);
    tcase_add_test(t, test_encoder_fd);
    tcase_add_test(t, test_adamw_closed_form);
    suite_add_tcase(s, t);
    t = tcase_create("fast = plain");
    tcase_set_timeout(t, 60);
    /* _i: level KERN_AVX2 + _i/2, threads 1 + _i%2 (LEVEL_OR_SKIP) */
    tcase_add_loop_test(t, test_matmul_fast, 0, 2 * (KERN_LEVEL_COUNT - 1));
    tcase_add_loop_test(t, test_attention_fast, 0, 2 * (KERN_LEVEL_COUNT - 1));
    tcase_add_loop_test(t, test_rowwise_threads, 0, 2);
    tcase_add_loop_test(t, test_rowwise_fast, 0, 2 * (KERN_LEVEL_COUNT - 1));
    suite_add_tcase(s, t);
    return s;
}
