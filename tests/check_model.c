/* check_model.c — the engine against a naive double-precision reference, the
 * cache against recompute, hook shapes, KV bytes and FLOP counts against their
 * closed forms, softmax and causality. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "hooks.h"
#include "model.h"
#include "ops.h"
#include "ref_gpt2.h"
#include "testutil.h"

/* ---- the reference: ref_gpt2.h, plain loops in double precision ---- */

/* The reference's logits (V) of the last of T tokens, on m's weights. */
static void ref_logits(const Model *m, const int *tok, int T, double *logits) {
    const int V = m->cfg.V;
    double *w = ref_blob(m->w.blob, m->w.num_params), *all = malloc((size_t)T * V * sizeof *all);
    ck_assert(w && all);
    ck_assert_int_eq(ref_gpt2_logits(&m->cfg, w, tok, T, all), 0);
    memcpy(logits, all + (size_t)(T - 1) * V, (size_t)V * sizeof *logits);
    free(w);
    free(all);
}

/* max |a - ref| / max |ref| */
static double rel_err(const float *a, const double *ref, int n) {
    double d = 0, r = 0;
    for (int i = 0; i < n; i++) {
        d = fmax(d, fabs(a[i] - ref[i]));
        r = fmax(r, fabs(ref[i]));
    }
    return d / fmax(r, 1e-30);
}

static const int ref_cfgs[][5] = { /* L, NH, C, T, V */
    {1, 1, 4, 1, 7}, {1, 2, 8, 5, 16}, {2, 4, 16, 7, 32}, {3, 3, 12, 9, 20}, {1, 12, 768, 4, 256},
};

/* Engine vs reference after the prefill and after each of 4 cached decode steps.
 * Tolerance 1e-4 relative: float32 accumulations of up to 4C terms against double. */
START_TEST(test_reference) {
    const int *k = ref_cfgs[_i];
    Config cfg = tiny_config(k[0], k[1], k[2], 32, k[4]);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 42 + _i), 0);
    Generator g;
    ck_assert_int_eq(generator_init(&g, &m, GEN_CACHE), 0);
    int toks[32];
    for (int i = 0; i < 32; i++) toks[i] = (i * 7 + 3) % cfg.V;
    double *ref = malloc((size_t)cfg.V * sizeof *ref);
    ck_assert_ptr_nonnull(ref);
    int T = k[3];
    ck_assert_int_eq(generator_prefill(&g, toks, T, NULL), 0);
    for (int s = 0; s <= 4; s++) {
        if (s > 0) ck_assert_int_eq(generator_decode(&g, toks[T + s - 1], s, NULL), 0);
        ref_logits(&m, toks, T + s, ref);
        double e = rel_err(g.logits, ref, cfg.V);
        ck_assert_msg(e <= 1e-4, "config %d step %d: relative error %.3g > 1e-4", _i, s, e);
    }
    free(ref);
    generator_free(&g);
    model_free(&m);
}
END_TEST

/* ---- half-size weights ----
 * x rounded to p significant bits, to nearest with ties to even (the default rounding
 * mode of nearbyint), exponents below emin kept at emin's quantum (subnormals), past
 * maxv: infinity. Written from the definition, independent of halfprec.c. */
static float round_naive(float x, int p, int emin, double maxv) {
    if (x == 0.0f || !isfinite(x)) return x;
    int e;
    frexp(x, &e);
    const int lead = e - 1 < emin ? emin : e - 1; /* the exponent of the leading bit */
    const double q = ldexp(1.0, lead - (p - 1));
    const double r = nearbyint((double)x / q) * q;
    return fabs(r) > maxv ? copysignf(INFINITY, x) : (float)r;
}

/* The five matrices a model with half weights rounds: wte and the block matrices. */
static void round_matrices(Model *m, int fp16) {
    const size_t C = (size_t)m->cfg.C;
    struct { const float *w; size_t n; } mats[1 + 4 * MODEL_MAX_LAYERS];
    int k = 0;
    mats[k].w = m->w.wte, mats[k++].n = (size_t)m->cfg.V * C;
    for (int l = 0; l < m->cfg.L; l++) {
        const BlockWeights *b = &m->w.h[l];
        mats[k].w = b->c_attn_w, mats[k++].n = 3 * C * C;
        mats[k].w = b->attn_proj_w, mats[k++].n = C * C;
        mats[k].w = b->c_fc_w, mats[k++].n = 4 * C * C;
        mats[k].w = b->mlp_proj_w, mats[k++].n = 4 * C * C;
    }
    for (int i = 0; i < k; i++) {
        float *w = (float *)mats[i].w;
        for (size_t j = 0; j < mats[i].n; j++)
            w[j] = fp16 ? round_naive(w[j], 11, -14, 65504.0) : round_naive(w[j], 8, -126, 3.4e38);
    }
}

/* --weights fp16 / bf16: the logits of prefill and 4 decode steps equal, bit for bit,
 * those of the plain float32 kernels on weights the test rounded itself; they are
 * within 1e-4 of the double-precision reference on those weights, and they differ
 * from the unrounded model's (the rounding did happen). */
START_TEST(test_half_weights) {
    const int fp16 = _i % 2 == 0;
    Config cfg = _i < 2 ? tiny_config(2, 4, 64, 32, 300) : config_default();
    Model a, r, f;
    ck_assert_int_eq(model_init_random(&a, &cfg, 11), 0);
    ck_assert_int_eq(model_init_random(&r, &cfg, 11), 0);
    ck_assert_int_eq(model_init_random(&f, &cfg, 11), 0);
    ck_assert_int_eq(model_set_weights(&a, fp16 ? DT_FP16 : DT_BF16), 0);
    ck_assert_int_eq(model_set_weights(&a, DT_FP32), -1); /* no way back */
    round_matrices(&r, fp16);
    ck_assert_int_eq(model_set_kernels(&r, KERN_PLAIN), 0);
    Generator ga, gr, gf;
    ck_assert_int_eq(generator_init(&ga, &a, GEN_CACHE), 0);
    ck_assert_int_eq(generator_init(&gr, &r, GEN_CACHE), 0);
    ck_assert_int_eq(generator_init(&gf, &f, GEN_CACHE), 0);
    int toks[12];
    for (int i = 0; i < 12; i++) toks[i] = (i * 37 + 5) % cfg.V;
    double *ref = malloc((size_t)cfg.V * sizeof *ref);
    ck_assert_ptr_nonnull(ref);
    const size_t bytes = (size_t)cfg.V * sizeof(float);
    for (int s = 0; s <= 4; s++) {
        if (s == 0) {
            ck_assert_int_eq(generator_prefill(&ga, toks, 8, NULL), 0);
            ck_assert_int_eq(generator_prefill(&gr, toks, 8, NULL), 0);
            ck_assert_int_eq(generator_prefill(&gf, toks, 8, NULL), 0);
        } else {
            ck_assert_int_eq(generator_decode(&ga, toks[7 + s], s, NULL), 0);
            ck_assert_int_eq(generator_decode(&gr, toks[7 + s], s, NULL), 0);
            ck_assert_int_eq(generator_decode(&gf, toks[7 + s], s, NULL), 0);
        }
        ck_assert_msg(memcmp(ga.logits, gr.logits, bytes) == 0, "%s step %d: logits differ",
                      fp16 ? "fp16" : "bf16", s);
        ref_logits(&r, toks, 8 + s, ref);
        const double e = rel_err(ga.logits, ref, cfg.V);
        ck_assert_msg(e <= 1e-4, "step %d: relative error %.3g > 1e-4", s, e);
        ck_assert(memcmp(ga.logits, gf.logits, bytes) != 0);
    }
    free(ref);
    generator_free(&ga); generator_free(&gr); generator_free(&gf);
    model_free(&a); model_free(&r); model_free(&f);
}
END_TEST

/* The core truth: 20 decode steps with the cache give the logits of recomputing, bit for
 * bit (README: each number is built by the same operations in the same order). */
START_TEST(test_cache_equals_recompute) {
    Config cfg = tiny_config(2, 4, 32, 64, 50);
    if (_i == 1) cfg = config_default();
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 7), 0);
    Generator a, b;
    ck_assert_int_eq(generator_init(&a, &m, GEN_CACHE), 0);
    Model m2;
    ck_assert_int_eq(model_init_shared(&m2, &m), 0);
    ck_assert_int_eq(generator_init(&b, &m2, GEN_RECOMPUTE), 0);
    int prompt[5] = {1, 2, 3, 4, 5};
    ck_assert_int_eq(generator_prefill(&a, prompt, 5, NULL), 0);
    ck_assert_int_eq(generator_prefill(&b, prompt, 5, NULL), 0);
    double worst = 0;
    for (int s = 1; s <= 20; s++) {
        int t = generator_argmax(&a);
        ck_assert_int_eq(generator_decode(&a, t, s, NULL), 0);
        ck_assert_int_eq(generator_decode(&b, t, s, NULL), 0);
        worst = diff_max(worst, logits_max_abs_diff(a.logits, b.logits, cfg.V));
        ck_assert_msg(memcmp(a.logits, b.logits, (size_t)cfg.V * sizeof *a.logits) == 0,
                      "step %d: the logits differ (max |dlogit| so far %.3g)", s, worst);
        ck_assert_int_eq(a.cache.len, 5 + s);
    }
    generator_free(&a);
    generator_free(&b);
    model_free(&m2);
    model_free(&m);
}
END_TEST

/* The articles' eval-mode cache (newest K/V only) must NOT match: the test that
 * the comparison above can fail. */
START_TEST(test_article_bug_differs) {
    Config cfg = tiny_config(1, 2, 16, 32, 30);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 3), 0);
    Generator a;
    ck_assert_int_eq(generator_init(&a, &m, GEN_ARTICLE_BUG), 0);
    int prompt[4] = {1, 2, 3, 4};
    double *ref = malloc((size_t)cfg.V * sizeof *ref);
    ck_assert_int_eq(generator_prefill(&a, prompt, 4, NULL), 0);
    ck_assert_int_eq(a.cache.len, 4);
    ck_assert_int_eq(generator_decode(&a, 5, 1, NULL), 0);
    ck_assert_int_eq(a.cache.len, 1); /* history forgotten */
    ck_assert_int_eq(a.cache.n_seen, 5);
    ck_assert_int_eq(generator_decode(&a, 6, 2, NULL), 0);
    int seq[6] = {1, 2, 3, 4, 5, 6};
    ref_logits(&m, seq, 6, ref);
    ck_assert_double_gt(rel_err(a.logits, ref, cfg.V), 1e-3);
    free(ref);
    generator_free(&a);
    model_free(&m);
}
END_TEST

/* ---- hook events ---- */

typedef struct {
    int n;
    HookEvent ev[400];
    double rowsum_err;  /* worst |Σ pattern row − 1| */
    int masked_bad;     /* future cells that were not 0 / -inf */
    StepStats st[16];   /* copies: ev->stats is valid during the callback only */
    int nst;
} Seen;

static int seen_cb(const HookEvent *ev, void *user) {
    Seen *s = user;
    if (s->n < 400) {
        s->ev[s->n] = *ev;
        if (ev->stats && s->nst < 16) {
            s->st[s->nst] = *ev->stats;
            s->ev[s->n].stats = &s->st[s->nst++];
        }
        s->n++;
    }
    if (ev->point == HOOK_PATTERN || ev->point == HOOK_ATTN_SCORES) {
        const int NH = ev->shape[0], n = ev->shape[1], Tt = ev->shape[2];
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < n; i++) {
                const float *r = ev->data + ((size_t)h * n + i) * Tt;
                double sum = 0;
                for (int t = 0; t < Tt; t++) {
                    int future = t > ev->slot0 + i;
                    if (ev->point == HOOK_PATTERN) {
                        if (future && r[t] != 0.0f) s->masked_bad++;
                        sum += r[t];
                    } else if (future && !(isinf(r[t]) && r[t] < 0)) {
                        s->masked_bad++;
                    }
                }
                if (ev->point == HOOK_PATTERN) s->rowsum_err = fmax(s->rowsum_err, fabs(sum - 1.0));
            }
    }
    return 0;
}

static const HookEvent *find(const Seen *s, HookPoint p, int step, int layer) {
    for (int i = 0; i < s->n; i++)
        if (s->ev[i].point == p && s->ev[i].step == step && s->ev[i].layer == layer) return &s->ev[i];
    return NULL;
}

static void expect_shape(const HookEvent *e, int nd, int a, int b, int c) {
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->ndim, nd);
    ck_assert_int_eq(e->shape[0], a);
    if (nd > 1) ck_assert_int_eq(e->shape[1], b);
    if (nd > 2) ck_assert_int_eq(e->shape[2], c);
}

START_TEST(test_hook_shapes) {
    const int L = 2, NH = 3, C = 12, hs = 4, V = 20, T = 5;
    Config cfg = tiny_config(L, NH, C, 32, V);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 1), 0);
    Generator g;
    ck_assert_int_eq(generator_init(&g, &m, GEN_CACHE), 0);
    static Seen seen;
    memset(&seen, 0, sizeof seen);
    Hooks hk;
    hooks_init(&hk);
    ck_assert_int_eq(hooks_subscribe(&hk, HOOK_ALL, seen_cb, &seen), 0);
    int prompt[5] = {1, 2, 3, 4, 5};
    ck_assert_int_eq(generator_prefill(&g, prompt, T, &hk), 0);
    for (int s = 1; s <= 3; s++) ck_assert_int_eq(generator_decode(&g, s, s, &hk), 0);
    for (int s = 0; s <= 3; s++) {
        int n = s == 0 ? T : 1, Tt = T + s;
        for (int l = 0; l < L; l++) {
            expect_shape(find(&seen, HOOK_RESID_PRE, s, l), 2, n, C, 0);
            expect_shape(find(&seen, HOOK_Q, s, l), 3, n, NH, hs);
            expect_shape(find(&seen, HOOK_K, s, l), 3, n, NH, hs);
            expect_shape(find(&seen, HOOK_V, s, l), 3, n, NH, hs);
            expect_shape(find(&seen, HOOK_CACHE_K, s, l), 3, Tt, NH, hs);
            expect_shape(find(&seen, HOOK_CACHE_V, s, l), 3, Tt, NH, hs);
            expect_shape(find(&seen, HOOK_ATTN_SCORES, s, l), 3, NH, n, Tt);
            expect_shape(find(&seen, HOOK_PATTERN, s, l), 3, NH, n, Tt);
            expect_shape(find(&seen, HOOK_Z, s, l), 3, n, NH, hs);
            expect_shape(find(&seen, HOOK_MLP_PRE, s, l), 2, n, 4 * C, 0);
            expect_shape(find(&seen, HOOK_RESID_POST, s, l), 2, n, C, 0);
            ck_assert_int_eq(find(&seen, HOOK_Q, s, l)->pos0, Tt - n);
            ck_assert_int_eq(find(&seen, HOOK_Q, s, l)->phase, s == 0 ? PHASE_PREFILL : PHASE_DECODE);
        }
        expect_shape(find(&seen, HOOK_LOGITS, s, -1), 1, V, 0, 0);
        const HookEvent *e = find(&seen, HOOK_STEP_END, s, -1);
        ck_assert_ptr_nonnull(e);
        ck_assert_int_eq(e->stats->tokens_new, n);
        ck_assert_int_eq(e->stats->tokens_total, Tt);
    }
    ck_assert_msg(seen.rowsum_err < 1e-6, "softmax row sums off by %.3g", seen.rowsum_err);
    ck_assert_int_eq(seen.masked_bad, 0);
    generator_free(&g);
    model_free(&m);
}
END_TEST

/* c_fc applies GELU as it stores its outputs unless hook_mlp_pre is observed; then GELU
 * runs apart. Either way the logits are the same bytes, and hook_mlp_post shows
 * gelu_forward of what hook_mlp_pre showed, bit for bit. */
typedef struct {
    float *pre, *post; /* layer 1's prefill event of each */
    size_t n;
} MlpSeen;

static int mlp_cb(const HookEvent *ev, void *user) {
    MlpSeen *s = user;
    if (ev->layer != 1 || ev->phase != PHASE_PREFILL) return 0;
    s->n = (size_t)ev->shape[0] * ev->shape[1];
    memcpy(ev->point == HOOK_MLP_PRE ? s->pre : s->post, ev->data, s->n * sizeof(float));
    return 0;
}

START_TEST(test_fused_gelu_same_bytes) {
    enum { C = 96, T = 11, V = 40 };
    Config cfg = tiny_config(2, 4, C, 32, V);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 8), 0);
    int prompt[T] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
    static float logits[2][3][V], pre[T * 4 * C], post[T * 4 * C];
    MlpSeen seen = {pre, post, 0};
    for (int watch = 0; watch <= 1; watch++) {
        Generator g;
        ck_assert_int_eq(generator_init(&g, &m, GEN_CACHE), 0);
        Hooks hk;
        hooks_init(&hk);
        if (watch)
            ck_assert_int_eq(hooks_subscribe(&hk, HOOK_BIT(HOOK_MLP_PRE) | HOOK_BIT(HOOK_MLP_POST),
                                             mlp_cb, &seen), 0);
        ck_assert_int_eq(generator_prefill(&g, prompt, T, &hk), 0);
        memcpy(logits[watch][0], g.logits, sizeof logits[0][0]);
        for (int s = 1; s <= 2; s++) {
            ck_assert_int_eq(generator_decode(&g, s, s, &hk), 0);
            memcpy(logits[watch][s], g.logits, sizeof logits[0][0]);
        }
        generator_free(&g);
    }
    ck_assert_msg(memcmp(logits[0], logits[1], sizeof logits[0]) == 0,
                  "observing hook_mlp_pre changed the logits");
    ck_assert_uint_eq(seen.n, (size_t)T * 4 * C);
    gelu_forward(pre, pre, seen.n);
    ck_assert_msg(memcmp(pre, post, seen.n * sizeof(float)) == 0,
                  "hook_mlp_post is not gelu_forward of hook_mlp_pre");
    model_free(&m);
}
END_TEST

/* Hook names round-trip and match TransformerLens spelling. */
START_TEST(test_hook_names) {
    char buf[64];
    ck_assert_str_eq(hook_name(HOOK_Q, 0, buf, sizeof buf), "blocks.0.attn.hook_q");
    ck_assert_str_eq(hook_name(HOOK_PATTERN, 11, buf, sizeof buf), "blocks.11.attn.hook_pattern");
    ck_assert_str_eq(hook_name(HOOK_LN1, 2, buf, sizeof buf), "blocks.2.ln1.hook_normalized");
    for (int p = 0; p < HOOK_COUNT; p++) {
        int layer = (p == HOOK_LOGITS || p == HOOK_STEP_END) ? -1 : 3;
        HookPoint q;
        int l;
        ck_assert_int_eq(hook_parse(hook_name((HookPoint)p, layer, buf, sizeof buf), &q, &l), 0);
        ck_assert_int_eq(q, p);
        ck_assert_int_eq(l, layer);
    }
    HookPoint q;
    int l;
    ck_assert_int_eq(hook_parse("blocks.x.attn.hook_q", &q, &l), -1);
    ck_assert_int_eq(hook_parse("attn.hook_q", &q, &l), -1);
}
END_TEST

/* ---- KV bytes and FLOPs against their closed forms ---- */

START_TEST(test_kv_bytes) {
    const int L = 3, C = 24;
    Config cfg = tiny_config(L, 4, C, 100, 30);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 5), 0);
    Generator g;
    ck_assert_int_eq(generator_init(&g, &m, GEN_CACHE), 0);
    int p[7] = {1, 2, 3, 4, 5, 6, 7};
    ck_assert_int_eq(generator_prefill(&g, p, 7, NULL), 0);
    for (int s = 0; s <= 40; s++) {
        if (s) ck_assert_int_eq(generator_decode(&g, s % 30, s, NULL), 0);
        size_t T = 7 + (size_t)s, per = 2 * (size_t)L * C * sizeof(float);
        ck_assert_uint_eq(kvcache_bytes_used(&g.cache), 2 * (size_t)L * T * C * 4);
        ck_assert_uint_ge(kvcache_bytes_reserved(&g.cache), kvcache_bytes_used(&g.cache));
        ck_assert_uint_eq(kvcache_bytes_reserved(&g.cache) % per, 0);
        ck_assert_uint_le(kvcache_bytes_reserved(&g.cache), 2 * per * (T < 16 ? 16 : T));
    }
    generator_free(&g);
    model_free(&m);
}
END_TEST

static const int flop_cfgs[][5] = { /* L, NH, C, n, p */
    {1, 12, 768, 4, 0}, {1, 12, 768, 1, 4}, {2, 2, 16, 1, 30}, {3, 4, 32, 7, 9}, {12, 12, 96, 16, 16},
};

START_TEST(test_flops_formula) {
    const int *k = flop_cfgs[_i];
    const int L = k[0], NH = k[1], C = k[2], n = k[3], p = k[4], V = 50;
    Config cfg = tiny_config(L, NH, C, 64, V);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 9), 0);
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, L, NH, C / NH, 64), 0);
    int toks[64];
    for (int i = 0; i < 64; i++) toks[i] = i % V;
    float *logits = malloc(V * sizeof *logits);
    if (p) ck_assert_int_eq(model_forward(&m, &c, toks, p, NULL, NULL, NULL), 0);
    FlopCount f = {0};
    ck_assert_int_eq(model_forward(&m, &c, toks + p, n, logits, NULL, &f), 0);
    uint64_t N = (uint64_t)n, P = (uint64_t)p, CC = (uint64_t)C;
    uint64_t want = (uint64_t)L * (24 * N * CC * CC + 4 * CC * (N * P + N * (N + 1) / 2));
    ck_assert_uint_eq(flops_layers(&f), want);
    ck_assert_uint_eq(flops_layers_formula(&cfg, N, P), want);
    ck_assert_uint_eq(f.qkv, (uint64_t)L * 6 * N * CC * CC);
    ck_assert_uint_eq(f.mlp, (uint64_t)L * 16 * N * CC * CC);
    ck_assert_uint_eq(f.lm_head, 2 * CC * V);
    /* elementwise: embeddings nC; per layer 63·n·C (see ops.h) + 5 per (head, pair); ln_f 8C */
    uint64_t pairs = N * P + N * (N + 1) / 2;
    ck_assert_uint_eq(f.elementwise, N * CC + (uint64_t)L * (63 * N * CC + 5 * (uint64_t)NH * pairs) + 8 * CC);
    free(logits);
    kvcache_free(&c);
    model_free(&m);
}
END_TEST

/* ---- attention: masked entries are never read, the future never leaks ---- */

START_TEST(test_mask_never_read) {
    const int NH = 2, hs = 4, C = 8, n = 3, p = 2, Tt = 5;
    float q[3 * 8], kc[5 * 8], vc[5 * 8], out[3 * 8], out1[8], sc[2 * 3 * 5], pa[2 * 3 * 5];
    float sc1[2 * 1 * 3], pa1[2 * 1 * 3];
    for (int i = 0; i < n * C; i++) q[i] = (float)((i * 37 % 11) - 5) / 7.0f;
    for (int i = 0; i < Tt * C; i++) {
        kc[i] = (float)((i * 13 % 9) - 4) / 5.0f;
        vc[i] = (float)((i * 29 % 7) - 3) / 3.0f;
    }
    /* query 0 (position p) must not read slots p+1.. : poison them */
    float kpoison[5 * 8], vpoison[5 * 8];
    memcpy(kpoison, kc, sizeof kc);
    memcpy(vpoison, vc, sizeof vc);
    for (int i = (p + 1) * C; i < Tt * C; i++) kpoison[i] = vpoison[i] = NAN;
    attention_forward(out, sc, pa, q, kpoison, vpoison, n, p, NH, hs);
    attention_forward(out1, sc1, pa1, q, kc, vc, 1, p, NH, hs);
    for (int d = 0; d < C; d++) {
        ck_assert(isfinite(out[d]));
        ck_assert_float_eq(out[d], out1[d]); /* bit-identical, 1 row or 3 */
    }
}
END_TEST

START_TEST(test_causal) {
    Config cfg = tiny_config(2, 2, 16, 32, 20);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 11), 0);
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, 2, 2, 8, 32), 0);
    int a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 2, 3, 4, 19, 0};
    float xa[6 * 16], xb[6 * 16];
    ck_assert_int_eq(model_forward(&m, &c, a, 6, NULL, NULL, NULL), 0);
    memcpy(xa, m.s.x, sizeof xa);
    kvcache_reset(&c);
    ck_assert_int_eq(model_forward(&m, &c, b, 6, NULL, NULL, NULL), 0);
    memcpy(xb, m.s.x, sizeof xb);
    /* rows 0..3 saw the same tokens: identical; rows 4, 5 saw different ones */
    ck_assert_int_eq(memcmp(xa, xb, 4 * 16 * sizeof(float)), 0);
    ck_assert_int_ne(memcmp(xa + 4 * 16, xb + 4 * 16, 16 * sizeof(float)), 0);
    kvcache_free(&c);
    model_free(&m);
}
END_TEST

/* ---- seeded weights ---- */

START_TEST(test_seeded_weights) {
    Config cfg = tiny_config(2, 2, 16, 32, 40);
    Model a, b, c;
    ck_assert_int_eq(model_init_random(&a, &cfg, 1), 0);
    ck_assert_int_eq(model_init_random(&b, &cfg, 1), 0);
    ck_assert_int_eq(model_init_random(&c, &cfg, 2), 0);
    size_t bytes = model_num_params(&cfg) * sizeof(float);
    ck_assert_int_eq(memcmp(a.w.blob, b.w.blob, bytes), 0);
    ck_assert_int_ne(memcmp(a.w.blob, c.w.blob, bytes), 0);
    /* the table covers the blob exactly, in order */
    int ns = model_tensor_specs(&cfg, NULL);
    ck_assert_int_eq(ns, 2 + 12 * cfg.L + 2);
    TensorSpec *sp = malloc((size_t)ns * sizeof *sp);
    model_tensor_specs(&cfg, sp);
    size_t off = 0;
    for (int i = 0; i < ns; i++) {
        ck_assert_uint_eq(sp[i].offset, off);
        off += sp[i].numel;
    }
    ck_assert_uint_eq(off, model_num_params(&cfg));
    ck_assert_str_eq(sp[4].name, "h.0.attn.c_attn.weight");
    ck_assert_uint_eq(sp[4].shape[0], 16);
    ck_assert_uint_eq(sp[4].shape[1], 48);
    ck_assert_ptr_eq(a.w.h[0].c_attn_w, a.w.blob + sp[4].offset);
    /* the weights have the documented scale: std of c_attn ≈ 0.05 */
    double s2 = 0;
    for (size_t i = 0; i < sp[4].numel; i++) s2 += (double)a.w.h[0].c_attn_w[i] * a.w.h[0].c_attn_w[i];
    ck_assert_double_eq_tol(sqrt(s2 / sp[4].numel), 0.05, 0.005);
    free(sp);
    model_free(&a);
    model_free(&b);
    model_free(&c);
}
END_TEST

/* The weight bytes a pass reads, by a second path: every tensor of the table, the five
 * big matrices at the weights' width, everything else at 4 bytes, and of wpe (and of wte
 * as an embedding) only the rows of the tokens the pass runs. */
START_TEST(test_weight_bytes_read) {
    static const int cfgs[][5] = {{1, 12, 768, 1024, 256}, {3, 2, 16, 64, 30}, {12, 12, 768, 1024, 50257}};
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        Config cfg = tiny_config(cfgs[i][0], cfgs[i][1], cfgs[i][2], cfgs[i][3], cfgs[i][4]);
        int n = model_tensor_specs(&cfg, NULL);
        TensorSpec *sp = malloc((size_t)n * sizeof *sp);
        ck_assert_ptr_nonnull(sp);
        model_tensor_specs(&cfg, sp);
        for (int half = 0; half <= 1; half++)
            for (uint64_t tokens = 1; tokens <= 7; tokens += 6) {
                uint64_t want = 0, w = half ? 2 : 4;
                for (int k = 0; k < n; k++) {
                    const char *nm = sp[k].name;
                    int big = strstr(nm, "c_attn.weight") || strstr(nm, "attn.c_proj.weight") ||
                              strstr(nm, "c_fc.weight") || strstr(nm, "mlp.c_proj.weight");
                    if (strcmp(nm, "wte.weight") == 0) want += sp[k].numel * w + 4 * tokens * (uint64_t)cfg.C;
                    else if (strcmp(nm, "wpe.weight") == 0) want += 4 * tokens * (uint64_t)cfg.C;
                    else want += sp[k].numel * (big ? w : 4);
                }
                ck_assert_uint_eq(model_weight_bytes_read(&cfg, half ? DT_BF16 : DT_FP32, tokens), want);
            }
        free(sp);
    }
}
END_TEST

Suite *make_model_suite(void) {
    Suite *s = suite_create("model");
    TCase *t = tcase_create("reference");
    tcase_set_timeout(t, 60);
    tcase_add_loop_test(t, test_reference, 0, (int)(sizeof ref_cfgs / sizeof ref_cfgs[0]));
    tcase_add_loop_test(t, test_cache_equals_recompute, 0, 2);
    tcase_add_loop_test(t, test_half_weights, 0, 4);
    tcase_add_test(t, test_article_bug_differs);
    suite_add_tcase(s, t);
    t = tcase_create("hooks");
    tcase_add_test(t, test_hook_shapes);
    tcase_add_test(t, test_fused_gelu_same_bytes);
    tcase_add_test(t, test_hook_names);
    suite_add_tcase(s, t);
    t = tcase_create("counts");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, test_kv_bytes);
    tcase_add_loop_test(t, test_flops_formula, 0, (int)(sizeof flop_cfgs / sizeof flop_cfgs[0]));
    tcase_add_test(t, test_weight_bytes_read);
    suite_add_tcase(s, t);
    t = tcase_create("attention");
    tcase_add_test(t, test_mask_never_read);
    tcase_add_test(t, test_causal);
    tcase_add_test(t, test_seeded_weights);
    suite_add_tcase(s, t);
    return s;
}
