/* check_evict.c — which tokens to keep (evict.h) and the precision levers beside it
 * (q4_0, the Hadamard rotation, K/V heads pooled into groups), each against a second,
 * plain computation:
 *   - q4_0's bytes and nibbles as llama.cpp lays them out, on a block whose answer is
 *     known exactly; its bytes per token counted by the closed form;
 *   - the rotation keeps q·k within 1e-5·|q||k|, applied twice gives x back within 1e-6,
 *     and a cache that rotates (no quantization) gives the model's attention scores
 *     within 1e-5 of the plain cache's;
 *   - pooled heads read back each group's mean (within 1e-6 of a mean in double);
 *   - a budget that holds everything gives the full cache's logits bit for bit;
 *   - the window as a mask equals the window that moves rows (generate.h) within 1e-4;
 *   - each policy's kept positions, step by step, equal a naive replay of its rule
 *     (sorting by repeated argmax) over the weights the run itself produced;
 *   - the oracle loses no more weight than the window or H2O at the same budget;
 *   - `kvscope frontier`'s bad inputs: exit 2 and one line naming the value. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evict.h"
#include "frontier.h"
#include "generate.h"
#include "halfprec.h"
#include "quant.h"
#include "outdir.h"
#include "testutil.h"

enum { EL = 2, ENH = 4, EC = 32, EN = 40, EV = 64, ET = 40, EP = 24, EK = 10 };

static Model model;

static void setup(void) {
    Config cfg = tiny_config(EL, ENH, EC, EN, EV);
    ck_assert_int_eq(model_init_random(&model, &cfg, 5), 0);
}

static void teardown(void) { model_free(&model); }

static void tokens(int *tok, int n) {
    unsigned s = 3;
    for (int i = 0; i < n; i++) tok[i] = (int)((s = s * 1103515245u + 12345u) >> 16) % EV;
}

/* ---- q4_0 ---------------------------------------------------------------------- */

/* x[0] = −8 is the value of largest magnitude: d = −8 / −8 = 1 (fp16 0x3C00), and every
 * integer x in −8..7 is stored as x + 8; byte j holds x[j] low, x[j + 16] high. */
START_TEST(test_q4_0_layout) {
    float x[32], y[32];
    for (int j = 0; j < 32; j++) x[j] = (float)((j * 7) % 16 - 8);
    x[0] = -8.0f;
    unsigned char b[18];
    q4_0_quantize_row(b, x, 32);
    ck_assert_uint_eq(b[0], 0x00);
    ck_assert_uint_eq(b[1], 0x3C);
    for (int j = 0; j < 16; j++)
        ck_assert_uint_eq(b[2 + j], (unsigned)((int)x[j] + 8) | ((unsigned)((int)x[j + 16] + 8) << 4));
    q4_0_dequantize_row(y, b, 32);
    ck_assert_int_eq(memcmp(x, y, sizeof x), 0);
    /* bytes: 18 per 32 values, a partial block padded to a whole one */
    ck_assert_uint_eq(dtype_row_bytes(DT_Q4_0, 192, 6), 6 * 18);
    ck_assert_uint_eq(dtype_row_bytes(DT_Q4_0, 40, 2), 2 * 18);
    ck_assert_str_eq(dtype_name(DT_Q4_0), "q4_0");
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, 3, 6, 32, 16), 0);
    ck_assert_int_eq(kvcache_set_dtype(&c, DT_Q4_0), 0);
    ck_assert_uint_eq(kvcache_bytes_per_token(&c), 2 * 3 * 6 * 18);
    ck_assert_int_eq(kvcache_set_transform(&c, 2, 0), 0); /* 2 groups of 3 heads: 64 values */
    ck_assert_uint_eq(kvcache_bytes_per_token(&c), 2 * 3 * 2 * 18);
    kvcache_free(&c);
}
END_TEST

/* Random blocks: every value read back within one step |d| of itself (half a step but
 * for the top end, which q4_0 clips to 7·|d|), d within fp16's rounding of max/8. */
START_TEST(test_q4_0_error_bound) {
    unsigned s = 9;
    for (int trial = 0; trial < 200; trial++) {
        float x[64], y[64], amax = 0.0f;
        unsigned char b[36];
        for (int j = 0; j < 64; j++) {
            x[j] = ((float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f) * 4.0f;
            if (j < 32) amax = fmaxf(amax, fabsf(x[j]));
        }
        q4_0_quantize_row(b, x, 64);
        q4_0_dequantize_row(y, b, 64);
        const float d = fabsf(fp16_to_fp32((uint16_t)(b[0] | (b[1] << 8))));
        ck_assert_float_eq_tol(d, amax / 8.0f, amax / 8.0f * 1e-3f);
        for (int j = 0; j < 32; j++) ck_assert_msg(fabsf(x[j] - y[j]) <= d * 1.001f, "%g vs %g", x[j], y[j]);
    }
}
END_TEST

/* ---- the Hadamard rotation ---------------------------------------------------------- */

START_TEST(test_hadamard_keeps_dots) {
    float q[64], k[64], q2[64], k2[64];
    unsigned s = 1;
    for (int i = 0; i < 64; i++) {
        q[i] = (float)((s = s * 1103515245u + 12345u) >> 16) / 32768.0f - 1.0f;
        k[i] = (float)((s = s * 1103515245u + 12345u) >> 16) / 32768.0f - 1.0f;
    }
    k[5] = 40.0f; /* an outlier channel */
    memcpy(q2, q, sizeof q);
    memcpy(k2, k, sizeof k);
    hadamard_rows(q2, 2, 32);
    hadamard_rows(k2, 2, 32);
    for (int h = 0; h < 2; h++) {
        double d0 = 0, d1 = 0, nq = 0, nk = 0;
        for (int i = h * 32; i < h * 32 + 32; i++)
            d0 += (double)q[i] * k[i], d1 += (double)q2[i] * k2[i], nq += q[i] * q[i], nk += k[i] * k[i];
        ck_assert_double_le(fabs(d0 - d1), 1e-5 * sqrt(nq * nk));
    }
    float amax = 0.0f;
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(k2[i]));
    ck_assert_float_lt(amax, 40.0f / 4.0f); /* the outlier spread: 40/√32 plus the rest */
    hadamard_rows(k2, 2, 32); /* twice: the identity */
    for (int i = 0; i < 64; i++) ck_assert_float_eq_tol(k2[i], k[i], 1e-6f * 40.0f);
}
END_TEST

/* Attention scores of every layer, recorded. */
typedef struct {
    float s[EL][ENH * EN * EN];
} Scores;

static int grab_scores(const HookEvent *ev, void *user) {
    Scores *sc = user;
    memcpy(sc->s[ev->layer], ev->data, (size_t)ev->shape[0] * ev->shape[1] * ev->shape[2] * sizeof(float));
    return 0;
}

START_TEST(test_rotation_keeps_scores) {
    int tok[ET];
    tokens(tok, ET);
    static Scores a, b;
    Hooks ha, hb;
    hooks_init(&ha);
    hooks_init(&hb);
    hooks_subscribe(&ha, HOOK_BIT(HOOK_ATTN_SCORES), grab_scores, &a);
    hooks_subscribe(&hb, HOOK_BIT(HOOK_ATTN_SCORES), grab_scores, &b);
    Generator g0, g1;
    ck_assert_int_eq(generator_init(&g0, &model, GEN_CACHE), 0);
    ck_assert_int_eq(generator_init(&g1, &model, GEN_CACHE), 0);
    ck_assert_int_eq(kvcache_set_transform(&g1.cache, ENH, 1), 0);
    ck_assert_int_eq(generator_prefill(&g0, tok, ET, &ha), 0);
    ck_assert_int_eq(generator_prefill(&g1, tok, ET, &hb), 0);
    double worst = 0.0;
    for (int l = 0; l < EL; l++)
        for (int i = 0; i < ENH * ET * ET; i++)
            if (isfinite(a.s[l][i])) worst = fmax(worst, fabs((double)a.s[l][i] - b.s[l][i]));
    ck_assert_msg(worst <= 1e-5, "rotated scores differ by %g", worst);
    ck_assert_double_gt(worst, 0.0); /* the rotation did run: rounding differs somewhere */
    generator_free(&g0);
    generator_free(&g1);
}
END_TEST

START_TEST(test_groups_read_means) {
    KVCache c;
    const int NH = 4, hs = 8, C = NH * hs;
    ck_assert_int_eq(kvcache_init(&c, 1, NH, hs, 4), 0);
    ck_assert_int_eq(kvcache_set_transform(&c, 3, 0), -1); /* 3 does not divide 4 */
    ck_assert_int_eq(kvcache_set_transform(&c, 2, 0), 0);
    ck_assert_uint_eq(kvcache_bytes_per_token(&c), 2 * 1 * 2 * hs * 4);
    ck_assert_int_eq(kvcache_reserve(&c, 1), 0);
    float k[32], v[32];
    for (int i = 0; i < C; i++) k[i] = (float)(i * i % 13) - 6.0f, v[i] = (float)i / 7.0f;
    kvcache_store(&c, 0, 0, k, v, 0);
    const float *rk, *rv;
    kvcache_layer(&c, 0, 1, &rk, &rv);
    for (int h = 0; h < NH; h++)
        for (int i = 0; i < hs; i++) {
            const int g0 = (h / 2) * 2;
            const double mk = ((double)k[g0 * hs + i] + k[(g0 + 1) * hs + i]) / 2;
            const double mv = ((double)v[g0 * hs + i] + v[(g0 + 1) * hs + i]) / 2;
            ck_assert_double_le(fabs(rk[h * hs + i] - mk), 1e-6);
            ck_assert_double_le(fabs(rv[h * hs + i] - mv), 1e-6);
        }
    kvcache_free(&c);
}
END_TEST

/* ---- eviction --------------------------------------------------------------------- */

static EvictParams small_params(EvictPolicy p, int K) {
    EvictParams e = evict_params_default(p, K);
    e.sinks = 2, e.obs_window = 4, e.pool = 3;
    return e;
}

/* The full cache's weights of every query (L, NH, N, N), for the oracle. */
static float *full_rows(const int *tok) {
    float *rows = calloc((size_t)EL * ENH * EN * EN, sizeof *rows);
    float *logits = malloc((size_t)ET * EV * sizeof *logits);
    ck_assert_int_eq(frontier_reference(&model, tok, ET, EP, logits, rows), 0);
    free(logits);
    return rows;
}

START_TEST(test_full_budget_bitwise) {
    const EvictPolicy p = (EvictPolicy)_i;
    int tok[ET];
    tokens(tok, ET);
    float *rows = full_rows(tok);
    Generator g0, g1;
    Evictor ev;
    EvictParams pr = small_params(p, EN);
    ck_assert_ptr_null(evict_params_check(&pr, EN, EP));
    ck_assert_int_eq(evict_init(&ev, &pr, EL, ENH, EN), 0);
    ev.oracle = rows;
    ck_assert_int_eq(generator_init(&g0, &model, GEN_CACHE), 0);
    ck_assert_int_eq(generator_init(&g1, &model, GEN_CACHE), 0);
    ck_assert_int_eq(generator_set_evict(&g1, &ev), 0);
    ck_assert_int_eq(generator_prefill(&g0, tok, EP, NULL), 0);
    ck_assert_int_eq(generator_prefill(&g1, tok, EP, NULL), 0);
    for (int t = EP; t < ET; t++) {
        ck_assert_int_eq(memcmp(g0.logits, g1.logits, EV * sizeof(float)), 0);
        ck_assert_int_eq(generator_decode(&g0, tok[t], t, NULL), 0);
        ck_assert_int_eq(generator_decode(&g1, tok[t], t, NULL), 0);
    }
    ck_assert_int_eq(memcmp(g0.logits, g1.logits, EV * sizeof(float)), 0);
    ck_assert_int_eq(ev.any_evicted, 0);
    generator_free(&g0);
    generator_free(&g1);
    evict_free(&ev);
    free(rows);
}
END_TEST

START_TEST(test_window_mask_equals_drop) {
    int tok[ET];
    tokens(tok, ET);
    Generator g0, g1;
    Evictor ev;
    EvictParams pr = small_params(EVICT_WINDOW, EK);
    ck_assert_int_eq(evict_init(&ev, &pr, EL, ENH, EN), 0);
    ck_assert_int_eq(generator_init(&g0, &model, GEN_CACHE), 0);
    ck_assert_int_eq(generator_init(&g1, &model, GEN_CACHE), 0);
    g0.window = EK, g0.sink = 2; /* rows moved out of the cache */
    ck_assert_int_eq(generator_set_evict(&g1, &ev), 0);
    ck_assert_int_eq(generator_prefill(&g0, tok, EP, NULL), 0);
    ck_assert_int_eq(generator_prefill(&g1, tok, EP, NULL), 0);
    double worst = 0.0;
    for (int t = EP; t < ET; t++) {
        ck_assert_int_eq(generator_decode(&g0, tok[t], t, NULL), 0);
        ck_assert_int_eq(generator_decode(&g1, tok[t], t, NULL), 0);
        worst = fmax(worst, logits_max_abs_diff(g0.logits, g1.logits, EV));
        ck_assert_int_eq(g0.cache.len, EK);
        for (int h = 0; h < ENH; h++) ck_assert_int_eq(evict_kept(&ev, 0, h, t), EK);
    }
    ck_assert_msg(worst <= 1e-4, "mask vs moved rows: %g", worst);
    generator_free(&g0);
    generator_free(&g1);
    evict_free(&ev);
}
END_TEST

/* Every query's weights as the run produced them (masked), by position. */
static int grab_rows(const HookEvent *ev, void *user) {
    float *rows = user;
    const int n = ev->shape[1], Tt = ev->shape[2];
    for (int h = 0; h < ENH; h++)
        for (int i = 0; i < n; i++)
            memcpy(rows + (((size_t)ev->layer * ENH + h) * EN + ev->pos0 + i) * EN,
                   ev->data + ((size_t)h * n + i) * Tt, (size_t)Tt * sizeof(float));
    return 0;
}

/* Keep the `want` highest of score among positions cand (mark 1), by repeated argmax
 * (the earliest on a tie); the rest of cand get 0. */
static void naive_top(const double *score, const int *cand, int nc, int want, unsigned char *keep) {
    unsigned char taken[EN] = {0};
    for (int i = 0; i < nc; i++) keep[cand[i]] = 0;
    for (int r = 0; r < want && r < nc; r++) {
        int best = -1;
        for (int i = 0; i < nc; i++)
            if (!taken[cand[i]] && (best < 0 || score[cand[i]] > score[best])) best = cand[i];
        taken[best] = 1, keep[best] = 1;
    }
}

/* The naive rule of policy p for head (l, h) at step t (the prefill's end: t = P − 1,
 * after = 1), given the weights recorded so far (queries < t, or ≤ P − 1). */
static void naive_step(EvictPolicy p, const float *rows, const float *full, unsigned char *keep,
                       int l, int h, int t, int prefill_end) {
    const EvictParams e = small_params(p, EK);
    const int K = EK, R = K / 2;
    double score[EN] = {0};
    int cand[EN], nc = 0, kept = 0;
    const float *rw = rows + ((size_t)l * ENH + h) * EN * EN;
    if (!prefill_end) keep[t] = 1;
    for (int j = 0; j <= t; j++) kept += keep[j];
    if (p == EVICT_ORACLE) {
        if (prefill_end || t + 1 <= K) return;
        for (int j = 0; j <= t; j++) score[j] = full[(((size_t)l * ENH + h) * EN + t) * EN + j], cand[nc++] = j;
        naive_top(score, cand, nc, K, keep);
        return;
    }
    if (kept <= K || (p == EVICT_SNAPKV && !prefill_end)) return;
    if (p == EVICT_WINDOW) {
        for (int j = 0; j <= t; j++) keep[j] = j < e.sinks || j > t - (K - e.sinks);
    } else if (p == EVICT_H2O) {
        for (int q = 0; q < (prefill_end ? t + 1 : t); q++)
            for (int j = 0; j <= q; j++) score[j] += rw[(size_t)q * EN + j];
        int kept_recent = 0;
        for (int j = 0; j <= t; j++) {
            if (j > t - R) kept_recent += keep[j];
            else if (keep[j]) cand[nc++] = j;
        }
        naive_top(score, cand, nc, K - kept_recent, keep);
    } else { /* snapkv: votes of the last w prompt queries, max-pooled */
        double votes[EN] = {0};
        const int w = e.obs_window, upto = t + 1 - w;
        for (int q = t + 1 - w; q <= t; q++)
            for (int j = 0; j < upto; j++) votes[j] += rw[(size_t)q * EN + j];
        for (int j = 0; j < upto; j++) {
            score[j] = votes[j];
            for (int d = -e.pool / 2; d <= e.pool / 2; d++)
                if (j + d >= 0 && j + d < upto) score[j] = fmax(score[j], votes[j + d]);
            cand[nc++] = j;
        }
        naive_top(score, cand, nc, K - w, keep);
    }
}

START_TEST(test_policy_vs_naive) {
    const EvictPolicy p = (EvictPolicy)_i;
    int tok[ET];
    tokens(tok, ET);
    float *full = full_rows(tok), *rows = calloc((size_t)EL * ENH * EN * EN, sizeof *rows);
    unsigned char *ref = malloc((size_t)EL * ENH * EN);
    memset(ref, 1, (size_t)EL * ENH * EN);
    Hooks hk;
    hooks_init(&hk);
    hooks_subscribe(&hk, HOOK_BIT(HOOK_PATTERN), grab_rows, rows);
    Generator g;
    Evictor ev;
    EvictParams pr = small_params(p, EK);
    ck_assert_ptr_null(evict_params_check(&pr, EN, EP));
    ck_assert_int_eq(evict_init(&ev, &pr, EL, ENH, EN), 0);
    ev.oracle = full;
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    ck_assert_int_eq(generator_set_evict(&g, &ev), 0);
    ck_assert_int_eq(generator_prefill(&g, tok, EP, &hk), 0);
    int evicted = 0;
    for (int t = EP - 1; t < ET; t++) {
        if (t >= EP) ck_assert_int_eq(generator_decode(&g, tok[t], t, &hk), 0);
        for (int l = 0; l < EL; l++)
            for (int h = 0; h < ENH; h++) {
                unsigned char *kr = ref + ((size_t)l * ENH + h) * EN;
                naive_step(p, rows, full, kr, l, h, t, t == EP - 1);
                const unsigned char *km = ev.keep + ((size_t)l * ENH + h) * EN;
                for (int j = 0; j <= t; j++) {
                    ck_assert_msg(!km[j] == !kr[j], "%s step %d layer %d head %d position %d: engine %d, naive %d",
                                  evict_policy_name(p), t, l, h, j, km[j], kr[j]);
                    evicted += !kr[j];
                }
            }
    }
    ck_assert_int_gt(evicted, 0); /* the budget did evict */
    generator_free(&g);
    evict_free(&ev);
    free(full);
    free(rows);
    free(ref);
}
END_TEST

START_TEST(test_oracle_loses_least) {
    int tok[ET];
    tokens(tok, ET);
    float *rows = calloc((size_t)EL * ENH * EN * EN, sizeof *rows);
    float *logits = malloc((size_t)ET * EV * sizeof *logits);
    ck_assert_int_eq(frontier_reference(&model, tok, ET, EP, logits, rows), 0);
    double lost[3][EL * ENH];
    const EvictPolicy pol[3] = {EVICT_ORACLE, EVICT_WINDOW, EVICT_H2O};
    for (int k = 0; k < 3; k++) {
        FrontierCfg c = {.lever = LEVER_EVICT, .dtype = DT_FP32, .kv_heads = ENH, .ev = small_params(pol[k], EK)};
        FrontierAcc a = {.mass = calloc(EL * ENH, sizeof(double))};
        ck_assert_int_eq(frontier_run(&model, &c, tok, ET, EP, logits, rows, &a, NULL), 0);
        ck_assert_int_eq(a.n, ET - EP - 1);
        for (int i = 0; i < EL * ENH; i++) lost[k][i] = a.mass[i];
        free(a.mass);
    }
    for (int i = 0; i < EL * ENH; i++) {
        ck_assert_double_le(lost[0][i], lost[1][i] + 1e-9);
        ck_assert_double_le(lost[0][i], lost[2][i] + 1e-9);
    }
    free(rows);
    free(logits);
}
END_TEST

/* The full lever against itself: KL 0, top-1 all, bytes the fp32 cache's. */
START_TEST(test_frontier_full_is_zero) {
    int tok[ET];
    tokens(tok, ET);
    float *logits = malloc((size_t)ET * EV * sizeof *logits);
    ck_assert_int_eq(frontier_reference(&model, tok, ET, EP, logits, NULL), 0);
    FrontierCfg c = {.lever = LEVER_FULL, .dtype = DT_FP32, .kv_heads = ENH};
    FrontierAcc a = {0};
    ck_assert_int_eq(frontier_run(&model, &c, tok, ET, EP, logits, NULL, &a, NULL), 0);
    ck_assert_double_eq(a.kl, 0.0);
    ck_assert_int_eq(a.agree, a.n);
    ck_assert_double_eq(a.bytes / a.n, 2.0 * EL * EC * 4);
    /* KL of two different distributions, closed form: p = (1/2, 1/2), q = (1/4, 3/4) */
    const float pa[2] = {0.0f, 0.0f}, pb[2] = {0.0f, logf(3.0f)};
    ck_assert_double_eq_tol(frontier_kl_bits(pa, pb, 2), 0.5 * log2(0.5 / 0.25) + 0.5 * log2(0.5 / 0.75), 1e-6);
    free(logits);
}
END_TEST

/* ---- bin/kvscope frontier --------------------------------------------------------- */

START_TEST(test_frontier_bad_input) {
    char dir[64], out[96], ef[96], corpus[96];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(ef, sizeof ef, "%s/err", dir);
    snprintf(corpus, sizeof corpus, "%s/c.txt", dir);
    ck_assert_int_eq(write_text_file(corpus, "In the beginning God created the heaven.\n"), 0);
    static const struct {
        const char *opt, *val, *says, *named;
    } bad[] = {
        {"--budgets", "8,0", "1 position or more", ": 0\n"},
        {"--budgets", "999", "past the context", ": 999\n"},
        {"--obs-window", "60", "longer than the prompt", ": 60\n"},
        {"--groups", "3", "divide the 4 heads", ": 3\n"},
        {"--policies", "window,lru", "unknown eviction policy (window, h2o, snapkv, oracle)", ": lru\n"},
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        const char *args[] = {"frontier", "--layers", "2", "--heads", "4", "--dim", "32", "--ctx", "64",
                              "--corpus", corpus, "--out", out, "--budgets", "8", "--obs-window", "4", bad[i].opt, bad[i].val, NULL};
        ck_assert_int_eq(run_kvscope(args, NULL, ef), 2);
        char *e = read_file(ef, NULL);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(strstr(e, bad[i].says) && strchr(e, '\n') == e + strlen(e) - 1, "case %d: %s", i, e);
        ck_assert_msg(strstr(e, bad[i].named), "case %d names no value: %s", i, e);
        free(e);
        ck_assert_int_eq(count_entries(dir), 2); /* the corpus and err: no o/ */
    }
    remove_tree(dir);
}
END_TEST

Suite *make_evict_suite(void) {
    Suite *s = suite_create("evict");
    TCase *u = tcase_create("unit");
    tcase_add_checked_fixture(u, setup, teardown);
    tcase_set_timeout(u, 60);
    tcase_add_test(u, test_q4_0_layout);
    tcase_add_test(u, test_q4_0_error_bound);
    tcase_add_test(u, test_hadamard_keeps_dots);
    tcase_add_test(u, test_rotation_keeps_scores);
    tcase_add_test(u, test_groups_read_means);
    tcase_add_loop_test(u, test_full_budget_bitwise, 0, EVICT_COUNT);
    tcase_add_test(u, test_window_mask_equals_drop);
    tcase_add_loop_test(u, test_policy_vs_naive, 0, EVICT_COUNT);
    tcase_add_test(u, test_oracle_loses_least);
    tcase_add_test(u, test_frontier_full_is_zero);
    suite_add_tcase(s, u);
    TCase *b = tcase_create("bin");
    tcase_set_tags(b, "bin");
    tcase_set_timeout(b, 60);
    tcase_add_test(b, test_frontier_bad_input);
    suite_add_tcase(s, b);
    return s;
}
