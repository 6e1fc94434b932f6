/* check_kvvalues.c — int8 grouped per channel (quant.h) and the cache's simulated int8
 * read-back (kvcache.h) against computations done here: every per-channel value within
 * half its channel's step, scales taken from the column's own max |x|; the per-token
 * read-back equal, bit for bit, to what the int8 cache stores and reads; the spread and
 * Δlogit of kvvalues.h against runs made here; then `kvscope run --int8-sim` and
 * `kvscope kvvalues` as a user meets them. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "kvcache.h"
#include "kvvalues.h"
#include "outdir.h"
#include "quant.h"
#include "testutil.h"

enum { KT = 37, KNH = 3, KHS = 8, KC = KNH * KHS, LN = 40 };

/* A seeded matrix (KT, KC) with one outlier channel (5), 40× the others. */
static void matrix(float *x) {
    unsigned s = 12345;
    for (int i = 0; i < KT * KC; i++) {
        s = s * 1103515245u + 12345u;
        x[i] = ((float)((s >> 9) & 0xFFFF) / 65535.0f - 0.5f) * ((i % KC) == 5 ? 40.0f : 1.0f);
    }
}

START_TEST(test_channels_within_half_a_step) {
    float x[KT * KC], y[KT * KC];
    matrix(x);
    int8_roundtrip_channels(y, x, KT, KC);
    double worst = 0.0; /* |y − x| / (d / 2): at most 1 */
    for (int c = 0; c < KC; c++) {
        double a = 0.0;
        for (int t = 0; t < KT; t++) a = fmax(a, fabs(x[t * KC + c]));
        const double d = a / 127.0;
        for (int t = 0; t < KT; t++) {
            const double q = y[t * KC + c] / d; /* an integer step count in −127..127 */
            ck_assert_msg(fabs(q - nearbyint(q)) < 1e-3 && fabs(q) <= 127.0 + 1e-3, "c %d t %d q %g", c,
                          t, q);
            worst = fmax(worst, fabs(y[t * KC + c] - x[t * KC + c]) / (d / 2));
        }
    }
    ck_assert_msg(worst <= 1.0 + 1e-4, "worst error %.6g half-steps", worst);
    /* The outlier channel's step is 40× the others': per token, its rows drown the rest
     * of their head; per channel they do not. */
    float z[KT * KC];
    int8_roundtrip_tokens(z, x, KT, KNH, KHS);
    double e_tok = 0.0, e_ch = 0.0;
    for (int i = 0; i < KT * KC; i++)
        if (i % KC < KHS && i % KC != 5) e_tok += fabs(z[i] - x[i]), e_ch += fabs(y[i] - x[i]);
    ck_assert_msg(e_ch * 10 < e_tok, "head 0 without the outlier: per channel %g, per token %g", e_ch,
                  e_tok);
}
END_TEST

START_TEST(test_tokens_equal_the_int8_rows) {
    float x[KT * KC], y[KT * KC], want[KT * KC];
    unsigned char row[KC + 4 * KNH];
    matrix(x);
    ck_assert_uint_eq(sizeof row, dtype_row_bytes(DT_INT8, (size_t)KNH * KHS, KNH));
    for (int t = 0; t < KT; t++) {
        int8_quantize_row(row, x + t * KC, KNH, KHS);
        int8_dequantize_row(want + t * KC, row, KNH, KHS);
    }
    int8_roundtrip_tokens(y, x, KT, KNH, KHS);
    ck_assert_mem_eq(y, want, sizeof y);
}
END_TEST

static Model model;

static void setup(void) {
    Config cfg = tiny_config(2, 2, 16, 48, 256);
    ck_assert_int_eq(model_init_random(&model, &cfg, 11), 0);
}

static void teardown(void) { model_free(&model); }

static void tokens(int *tok, int n) {
    unsigned s = 7;
    for (int i = 0; i < n; i++) tok[i] = 32 + (int)((s = s * 1103515245u + 12345u) >> 16) % 95;
}

/* tok through g one token per step; every position's logits into out (n, 256). */
static void run_steps(Generator *g, const int *tok, int n, float *out) {
    ck_assert_int_eq(generator_prefill(g, tok, 1, NULL), 0);
    memcpy(out, g->logits, 256 * sizeof *out);
    for (int p = 1; p < n; p++) {
        ck_assert_int_eq(generator_decode(g, tok[p], p, NULL), 0);
        memcpy(out + p * 256, g->logits, 256 * sizeof *out);
    }
}

/* Per token, the simulation is the int8 cache: the same logits, bit for bit. */
START_TEST(test_sim_token_is_the_int8_cache) {
    int tok[LN];
    tokens(tok, LN);
    static float a[LN * 256], b[LN * 256];
    Generator g;
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    ck_assert_int_eq(kvcache_set_dtype(&g.cache, DT_INT8), 0);
    run_steps(&g, tok, LN, a);
    ck_assert_int_eq(kvcache_set_int8_sim(&g.cache, KVQ_TOKEN, KVQ_TOKEN), -1); /* not fp32 */
    generator_free(&g);
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    ck_assert_int_eq(kvcache_set_int8_sim(&g.cache, KVQ_TOKEN, KVQ_TOKEN), 0);
    run_steps(&g, tok, LN, b);
    ck_assert_uint_eq(kvcache_bytes_per_token(&g.cache), 2u * 2 * 16 * 4); /* stores fp32 */
    ck_assert_int_eq(kvcache_set_int8_sim(&g.cache, KVQ_CHANNEL, KVQ_NONE), -1); /* holds tokens */
    generator_free(&g);
    ck_assert_mem_eq(a, b, sizeof a);
}
END_TEST

/* Per channel, what a layer reads is the stored fp32 rows rounded with each channel's
 * scale over the rows held; V left exact is the storage itself. */
START_TEST(test_sim_channel_reads_back) {
    int tok[LN];
    tokens(tok, LN);
    static float logits[LN * 256];
    Generator g;
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    ck_assert_int_eq(kvcache_set_int8_sim(&g.cache, KVQ_CHANNEL, KVQ_NONE), 0);
    run_steps(&g, tok, 20, logits);
    const float *k, *v;
    kvcache_layer(&g.cache, 1, 20, &k, &v);
    ck_assert_ptr_eq(v, g.cache.v[1]);
    const float *x = g.cache.k[1];
    double worst = 0.0;
    for (int c = 0; c < 16; c++) {
        double a = 0.0;
        for (int t = 0; t < 20; t++) a = fmax(a, fabs(x[t * 16 + c]));
        const double d = a / 127.0;
        for (int t = 0; t < 20; t++) worst = fmax(worst, fabs(k[t * 16 + c] - x[t * 16 + c]) / (d / 2));
    }
    ck_assert_msg(worst <= 1.0 + 1e-4 && worst > 0.05, "worst error %.6g half-steps", worst);
    generator_free(&g);
}
END_TEST

/* kvvalues: a channel's spread from an fp32 run made here, and Δlogit per token against
 * the int8 cache's logits. */
START_TEST(test_kvvalues_measure) {
    int tok[LN];
    tokens(tok, LN);
    static float ref[LN * 256], q[LN * 256];
    KVValues r;
    ck_assert_int_eq(kvvalues_measure(&model, tok, LN, &r), 0);
    Generator g;
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    run_steps(&g, tok, LN, ref);
    float col[LN];
    for (int t = 0; t < LN; t++) col[t] = g.cache.v[1][t * 16 + 9];
    float mn = col[0], mx = col[0], below = 0;
    for (int t = 0; t < LN; t++) mn = fminf(mn, col[t]), mx = fmaxf(mx, col[t]);
    const ChannelSpread *s = &r.spread[(1 * 2 + KVV_V) * 16 + 9];
    for (int t = 0; t < LN; t++) below += col[t] < s->median;
    ck_assert_float_eq(s->min, mn);
    ck_assert_float_eq(s->max, mx);
    ck_assert_float_eq(below, LN / 2); /* the median splits 40 values 20 : 20 */
    ck_assert(s->q1 <= s->median && s->median <= s->q3);
    generator_free(&g);
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    ck_assert_int_eq(kvcache_set_dtype(&g.cache, DT_INT8), 0);
    run_steps(&g, tok, LN, q);
    generator_free(&g);
    double dmax = 0.0, ss = 0.0;
    for (int i = 0; i < LN * 256; i++) {
        const double d = (double)q[i] - ref[i];
        dmax = fmax(dmax, fabs(d));
        ss += d * d;
    }
    ck_assert_double_eq_tol(r.dlogit_max[KVV_TOKEN][KVV_TOKEN], dmax, 1e-12);
    ck_assert_double_eq_tol(r.dlogit_rms[KVV_TOKEN][KVV_TOKEN], sqrt(ss / (LN * 256)), 1e-12);
    ck_assert(dmax > 0.0 && r.dlogit_max[KVV_CHANNEL][KVV_TOKEN] > 0.0);
    kvvalues_free(&r);
}
END_TEST

/* ---- bin/kvscope ----------------------------------------------------------------- */

static const char *const SHAPE[] = {"--layers", "2", "--heads", "2", "--dim", "16", "--ctx", "48"};

/* Exit status of `kvscope run SHAPE args`, stderr into ef. */
static int run_with(const char *ef, const char *out, const char *const *extra) {
    const char *args[32];
    int n = 0;
    args[n++] = "run";
    for (int k = 0; k < 8; k++) args[n++] = SHAPE[k];
    args[n++] = "--steps", args[n++] = "4", args[n++] = "--record", args[n++] = "none";
    args[n++] = "--out", args[n++] = out, args[n++] = "--quiet";
    while (*extra) args[n++] = *extra++;
    args[n] = NULL;
    return run_kvscope(args, NULL, ef);
}

START_TEST(test_int8_sim_option) {
    char dir[64], out[96], ef[96];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(ef, sizeof ef, "%s/err", dir);
    static const struct {
        const char *a, *b, *c, *d, *says;
    } bad[] = {
        {"--int8-sim", "rows,token", NULL, NULL,
         "unknown --int8-sim (none, token or channel, for K then V): rows,token\n"},
        {"--int8-sim", "channel,cols", NULL, NULL, "channel,cols\n"},
        {"--int8-sim", "channel", "--kv-dtype", "int8", "needs --kv-dtype fp32, not: int8\n"},
    };
    for (int i = 0; i < 3; i++) {
        const char *extra[] = {bad[i].a, bad[i].b, bad[i].c, bad[i].d, NULL};
        ck_assert_int_eq(run_with(ef, out, extra), 2);
        char *e = read_file(ef, NULL);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(strstr(e, bad[i].says) && strchr(e, '\n') == e + strlen(e) - 1, "case %d: %s", i, e);
        free(e);
        ck_assert_int_eq(count_entries(dir), 1); /* err only: no o/ */
    }
    const char *good[] = {"--int8-sim", "channel,token", NULL};
    ck_assert_int_eq(run_with(ef, out, good), 0);
    remove_tree(dir);
}
END_TEST

START_TEST(test_kvvalues_command) {
    char dir[64], out[96], txt[96], path[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(txt, sizeof txt, "%s/t.txt", dir);
    ck_assert_int_eq(write_text_file(txt, "In the beginning God created the heaven and the earth. "
                                          "And the earth was without form, and void."), 0);
    const char *args[] = {"kvvalues", "--layers", "2", "--heads", "2", "--dim", "16", "--ctx", "48",
                          "--text", txt, "--out", out, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    snprintf(path, sizeof path, "%s/channels.csv", out);
    char *csv = read_file(path, NULL);
    ck_assert_ptr_nonnull(csv);
    int rows = 0;
    for (const char *c = csv; *c; c++) rows += *c == '\n';
    ck_assert_int_eq(rows, 1 + 2 * 2 * 16); /* header, layers × {K, V} × channels */
    ck_assert(strncmp(csv, "layer,kv,channel,head,min,q1,median,q3,max,absmax\n0,K,0,0,", 58) == 0);
    free(csv);
    snprintf(path, sizeof path, "%s/groups.csv", out);
    csv = read_file(path, NULL);
    ck_assert_ptr_nonnull(csv);
    ck_assert_msg(strstr(csv, "\ntoken,token,48,") && strstr(csv, "\nchannel,token,48,"), "%s", csv);
    free(csv);
    const char *none[] = {"kvvalues", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(none, NULL, NULL), 2);
    remove_tree(dir);
}
END_TEST

Suite *make_kvvalues_suite(void) {
    Suite *s = suite_create("kvvalues");
    TCase *q = tcase_create("quant");
    tcase_add_test(q, test_channels_within_half_a_step);
    tcase_add_test(q, test_tokens_equal_the_int8_rows);
    suite_add_tcase(s, q);
    TCase *u = tcase_create("unit");
    tcase_add_checked_fixture(u, setup, teardown);
    tcase_set_timeout(u, 30);
    tcase_add_test(u, test_sim_token_is_the_int8_cache);
    tcase_add_test(u, test_sim_channel_reads_back);
    tcase_add_test(u, test_kvvalues_measure);
    suite_add_tcase(s, u);
    TCase *b = tcase_create("bin");
    tcase_set_tags(b, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(b, 60);
    tcase_add_test(b, test_int8_sim_option);
    tcase_add_test(b, test_kvvalues_command);
    suite_add_tcase(s, b);
    return s;
}
