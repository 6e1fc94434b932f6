/* check_budget.c — fp16/bf16 conversion, int8/q8_0 quantization, the KV cache in
 * smaller types, the memory cap and the sliding window. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "halfprec.h"
#include "kvcache.h"
#include "quant.h"
#include "testutil.h"

static float f_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t u_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* ---- fp16: known bit patterns from the IEEE-754 binary16 definition ---- */

static const struct { uint32_t in; uint16_t out; } fp16_cases[] = {
    {0x00000000u, 0x0000}, /* +0 */
    {0x80000000u, 0x8000}, /* -0 keeps its sign */
    {0x3F800000u, 0x3C00}, /* 1 */
    {0xC0000000u, 0xC000}, /* -2 */
    {0x477FE000u, 0x7BFF}, /* 65504, the largest finite */
    {0x477FEFFFu, 0x7BFF}, /* just below the tie 65520: rounds down */
    {0x477FF000u, 0x7C00}, /* 65520: tie between 65504 and 65536 → even → Inf */
    {0x47800000u, 0x7C00}, /* 65536 overflows to +Inf */
    {0xC7800000u, 0xFC00}, /* and -65536 to -Inf */
    {0x7F800000u, 0x7C00}, /* +Inf */
    {0xFF800000u, 0xFC00}, /* -Inf */
    {0x7FC00000u, 0x7E00}, /* quiet NaN */
    {0x7F800001u, 0x7E00}, /* signalling NaN comes out quiet, still NaN */
    {0xFFC00000u, 0xFE00}, /* negative NaN keeps its sign */
    {0x38800000u, 0x0400}, /* 2^-14, the smallest normal */
    {0x387FC000u, 0x03FF}, /* the largest subnormal */
    {0x33800000u, 0x0001}, /* 2^-24, the smallest subnormal */
    {0x33000000u, 0x0000}, /* 2^-25: tie between 0 and 2^-24 → even → 0 */
    {0x33000001u, 0x0001}, /* just above the tie rounds up */
    {0x33C00000u, 0x0002}, /* 1.5·2^-24: tie between 1 and 2 → even 2 */
    {0xB3800000u, 0x8001}, /* -2^-24 */
    {0x00000001u, 0x0000}, /* float32 subnormal → +0 */
    {0x3F801000u, 0x3C00}, /* 1 + 2^-11: tie → even (1) */
    {0x3F803000u, 0x3C02}, /* 1 + 3·2^-11: tie → even (1 + 2·2^-10) */
    {0x3F801001u, 0x3C01}, /* just above the tie → up */
    {0x3FFFF000u, 0x4000}, /* 2 - 2^-11 (tie, odd below) carries into the exponent */
};

START_TEST(test_fp16_known) {
    for (size_t i = 0; i < sizeof fp16_cases / sizeof fp16_cases[0]; i++) {
        uint16_t h = fp32_to_fp16(f_of(fp16_cases[i].in));
        ck_assert_msg(h == fp16_cases[i].out, "0x%08x -> 0x%04x, want 0x%04x", fp16_cases[i].in, h,
                      fp16_cases[i].out);
    }
    ck_assert_uint_eq(u_of(fp16_to_fp32(0x0001)), 0x33800000u);
    ck_assert_uint_eq(u_of(fp16_to_fp32(0x8000)), 0x80000000u);
    ck_assert_uint_eq(u_of(fp16_to_fp32(0x7BFF)), 0x477FE000u);
    ck_assert_uint_eq(u_of(fp16_to_fp32(0x03FF)), 0x387FC000u);
    ck_assert_uint_eq(u_of(fp16_to_fp32(0xFC00)), 0xFF800000u);
    ck_assert(isnan(fp16_to_fp32(0x7E00)));
}
END_TEST

/* Every fp16 value survives half → float → half; the decoded floats are in order. */
START_TEST(test_fp16_all_values) {
    float prev = -INFINITY;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float f = fp16_to_fp32((uint16_t)h);
        if (isnan(f)) {
            ck_assert(isnan(fp16_to_fp32(fp32_to_fp16(f))));
            continue;
        }
        ck_assert_uint_eq(fp32_to_fp16(f), h);
        if (h == 0x8000u) prev = -INFINITY; /* the negative half runs downwards */
        if (h < 0x8000u && h > 0) ck_assert(f > prev);
        if (h < 0x8000u) prev = f;
    }
}
END_TEST

/* Against the compiler's own conversion (a second code path), where it has _Float16. */
START_TEST(test_fp16_vs_compiler) {
#ifdef __FLT16_MAX__
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 2000000; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        /* exponents around fp16's range, where rounding and subnormals happen */
        uint32_t u = (uint32_t)(s & 0x807FFFFFu) | ((uint32_t)(96 + (s >> 40) % 60) << 23);
        float f = f_of(u);
        __extension__ _Float16 c = (_Float16)f;
        uint16_t want;
        memcpy(&want, &c, 2);
        ck_assert_msg(fp32_to_fp16(f) == want, "0x%08x -> 0x%04x, compiler 0x%04x", u, fp32_to_fp16(f), want);
    }
#else
    TEST_SKIPPED("this compiler has no _Float16 to compare with");
#endif
}
END_TEST

START_TEST(test_bf16_known) {
    static const struct { uint32_t in; uint16_t out; } c[] = {
        {0x00000000u, 0x0000}, {0x80000000u, 0x8000}, {0x3F800000u, 0x3F80},
        {0x3F808000u, 0x3F80}, /* 1 + 2^-8: tie → even */
        {0x3F818000u, 0x3F82}, /* 1 + 3·2^-8: tie → even (up) */
        {0x3F808001u, 0x3F81}, /* above the tie */
        {0x7F7FFFFFu, 0x7F80}, /* FLT_MAX rounds past bf16's largest → Inf */
        {0x7F7F7FFFu, 0x7F7F}, /* but just below the tie stays finite */
        {0x7F800000u, 0x7F80}, {0xFF800000u, 0xFF80},
        {0x7FC00000u, 0x7FC0}, {0x7F800001u, 0x7FC0}, /* NaN stays NaN, quiet */
        {0xFF800001u, 0xFFC0},
        {0x00008000u, 0x0000}, /* subnormal tie → even 0 */
        {0x00018000u, 0x0002}, /* subnormal tie → even 2 */
        {0x00010000u, 0x0001}, /* the smallest bf16 subnormal is exact */
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint16_t h = fp32_to_bf16(f_of(c[i].in));
        ck_assert_msg(h == c[i].out, "0x%08x -> 0x%04x, want 0x%04x", c[i].in, h, c[i].out);
    }
    for (uint32_t h = 0; h < 0x10000u; h++) {
        float f = bf16_to_fp32((uint16_t)h);
        ck_assert_uint_eq(u_of(f), h << 16);
        if (!isnan(f)) ck_assert_uint_eq(fp32_to_bf16(f), h);
    }
}
END_TEST

/* ---- int8 and q8_0: the round trip is off by at most half a step ---- */

static void fill(float *x, int n, uint64_t seed, float scale) {
    for (int i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = scale * ((float)(seed >> 40) / 16777216.0f - 0.5f);
    }
    if (n > 3) x[3] = 0.0f;
}

START_TEST(test_quant_half_step) {
    const int NH = 6, hs = 40, C = NH * hs; /* C = 240: q8_0's last block is partial */
    float x[240], y[240];
    unsigned char buf[1024];
    const float scales[] = {1e-6f, 0.01f, 1.0f, 7.5f, 3000.0f};
    for (int t = 0; t < 5; t++) {
        fill(x, C, 100 + t, scales[t]);
        if (t == 2) for (int i = 0; i < hs; i++) x[i] = 0.0f; /* an all-zero head */
        int8_quantize_row(buf, x, NH, hs);
        int8_dequantize_row(y, buf, NH, hs);
        for (int h = 0; h < NH; h++) {
            float d = int8_row_scale(buf, h), amax = 0.0f;
            for (int i = 0; i < hs; i++) amax = fmaxf(amax, fabsf(x[h * hs + i]));
            ck_assert(fabsf(d - amax / 127.0f) <= 1e-6f * amax / 127.0f);
            for (int i = 0; i < hs; i++)
                ck_assert_msg(fabsf(x[h * hs + i] - y[h * hs + i]) <= 0.5f * d * (1.0f + 1e-5f),
                              "int8 error %g > half step %g", fabsf(x[h * hs + i] - y[h * hs + i]), 0.5f * d);
        }
        q8_0_quantize_row(buf, x, C);
        q8_0_dequantize_row(y, buf, C);
        for (int b = 0; b * 32 < C; b++) {
            float d = q8_0_block_scale(buf, b), amax = 0.0f;
            int n = C - b * 32 < 32 ? C - b * 32 : 32;
            for (int i = 0; i < n; i++) amax = fmaxf(amax, fabsf(x[b * 32 + i]));
            ck_assert(d >= amax / 127.0f);                      /* no value is clipped */
            ck_assert(d <= amax / 127.0f * (1.0f + 1.0f / 1024) + 6e-8f); /* one fp16 step up at most */
            for (int i = 0; i < n; i++)
                ck_assert_msg(fabsf(x[b * 32 + i] - y[b * 32 + i]) <= 0.5f * d * (1.0f + 1e-5f),
                              "q8_0 error %g > half step %g", fabsf(x[b * 32 + i] - y[b * 32 + i]), 0.5f * d);
        }
    }
    /* the q8_0 layout: little-endian fp16 scale, then 32 int8 (here: 1.0 → d = 1/127) */
    float ones[32];
    for (int i = 0; i < 32; i++) ones[i] = (i & 1) ? -1.0f : 1.0f;
    q8_0_quantize_row(buf, ones, 32);
    uint16_t dh = (uint16_t)(buf[0] | buf[1] << 8);
    ck_assert_uint_eq(dh, fp32_to_fp16(1.0f / 127.0f) + (fp16_to_fp32(fp32_to_fp16(1.0f / 127.0f)) < 1.0f / 127.0f));
    ck_assert_int_eq((signed char)buf[2], 127);
    ck_assert_int_eq((signed char)buf[3], -127);
}
END_TEST

/* ---- the cache in each type: bytes per token = the formula ---- */

START_TEST(test_bytes_per_token) {
    const int L = 2, NH = 3, hs = 24, C = NH * hs; /* C = 72: 3 q8_0 blocks, the last partial */
    const size_t want[DT_COUNT] = {
        2 * L * 4 * (size_t)C,            /* fp32 */
        2 * L * 2 * (size_t)C,            /* fp16 */
        2 * L * 2 * (size_t)C,            /* bf16 */
        2 * L * ((size_t)C + 4 * NH),     /* int8: values + a float32 scale per head */
        2 * L * 3 * (size_t)34,           /* q8_0: ⌈72/32⌉ = 3 blocks of 34 bytes */
        2 * L * 3 * (size_t)18,           /* q4_0: 3 blocks of 18 bytes */
    };
    Config cfg = tiny_config(L, NH, C, 64, 30);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 5), 0);
    for (int dt = 0; dt < DT_COUNT; dt++) {
        KVCache c;
        ck_assert_int_eq(kvcache_init(&c, L, NH, hs, 64), 0);
        ck_assert_int_eq(kvcache_set_dtype(&c, (Dtype)dt), 0);
        ck_assert_uint_eq(kvcache_bytes_per_token(&c), want[dt]);
        int toks[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
        ck_assert_int_eq(model_forward(&m, &c, toks, 9, NULL, NULL, NULL), 0);
        ck_assert_uint_eq(kvcache_bytes_used(&c), 9 * want[dt]);
        ck_assert_int_eq(kvcache_set_dtype(&c, DT_FP32), -1); /* not while it holds tokens */
        kvcache_free(&c);
    }
    ck_assert_uint_eq(dtype_row_bytes(DT_Q8_0, 768, 12), 24 * 34); /* GPT-2: 34/32 B a value */
    model_free(&m);
}
END_TEST

/* Attention reads back exactly what was stored: a quantized cache's logits equal a
 * run whose K and V were rounded through the same type by hand (fp16 here). */
START_TEST(test_fp16_cache_reads_stored_values) {
    Config cfg = tiny_config(1, 2, 16, 32, 20);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 3), 0);
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, 1, 2, 8, 32), 0);
    ck_assert_int_eq(kvcache_set_dtype(&c, DT_FP16), 0);
    int toks[5] = {3, 1, 4, 1, 5};
    ck_assert_int_eq(model_forward(&m, &c, toks, 5, NULL, NULL, NULL), 0);
    const float *k, *v;
    kvcache_layer(&c, 0, 5, &k, &v);
    for (int i = 0; i < 5 * 16; i++) {
        ck_assert(fp16_to_fp32(fp32_to_fp16(k[i])) == k[i]); /* every value is an fp16 */
        ck_assert(fp16_to_fp32(fp32_to_fp16(v[i])) == v[i]);
    }
    ck_assert_int_eq(c.pos[4], 4);
    kvcache_free(&c);
    model_free(&m);
}
END_TEST

/* ---- the window: W ≥ the sequence ⇒ the same logits, bit for bit ---- */

START_TEST(test_window_covering_all_is_exact) {
    Config cfg = tiny_config(2, 2, 16, 64, 20);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 8), 0);
    Generator a, b, w;
    ck_assert_int_eq(generator_init(&a, &m, GEN_CACHE), 0);
    ck_assert_int_eq(generator_init(&b, &m, GEN_CACHE), 0);
    ck_assert_int_eq(generator_init(&w, &m, GEN_CACHE), 0);
    const int T = 5, steps = 20;
    b.window = T + steps, b.sink = 2; /* holds every token: nothing is evicted */
    w.window = 10, w.sink = 2;        /* evicts */
    int prompt[5] = {1, 2, 3, 4, 5};
    ck_assert_int_eq(generator_prefill(&a, prompt, T, NULL), 0);
    ck_assert_int_eq(generator_prefill(&b, prompt, T, NULL), 0);
    ck_assert_int_eq(generator_prefill(&w, prompt, T, NULL), 0);
    int differs = 0;
    for (int s = 1; s <= steps; s++) {
        int tok = generator_argmax(&a);
        ck_assert_int_eq(generator_decode(&a, tok, s, NULL), 0);
        ck_assert_int_eq(generator_decode(&b, tok, s, NULL), 0);
        ck_assert_int_eq(generator_decode(&w, tok, s, NULL), 0);
        ck_assert_mem_eq(a.logits, b.logits, (size_t)cfg.V * sizeof(float));
        differs |= memcmp(a.logits, w.logits, (size_t)cfg.V * sizeof(float)) != 0;
        int want = T + s < 10 ? T + s : 10; /* plateau at W */
        ck_assert_int_eq(w.cache.len, want);
        /* the sinks stay, then the most recent W − S positions */
        ck_assert_int_eq(w.cache.pos[0], 0);
        ck_assert_int_eq(w.cache.pos[1], 1);
        ck_assert_int_eq(w.cache.pos[w.cache.len - 1], T + s - 1);
        if (T + s > 10) ck_assert_int_eq(w.cache.pos[2], T + s - 8);
    }
    ck_assert(differs); /* evicting does change the logits: the test can tell */
    generator_free(&a);
    generator_free(&b);
    generator_free(&w);
    model_free(&m);
}
END_TEST

/* ---- the CLI: the cap stops exactly where the formula says; bad values exit 2 ---- */

static const char *const TINY[] = {"--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "20",
                                   "--ctx", "64", "--prompt-ids", "1,2,3,4"};

START_TEST(test_cap_stops_at_formula_step) {
    /* cap 1024 bytes = 0.0009765625 MiB; T = 4 prompt tokens */
    const char *dts[] = {"fp32", "fp16", "int8", "q8_0"};
    const size_t bpt[] = {2 * 16 * 4, 2 * 16 * 2, 2 * (16 + 4 * 2), 2 * 34};
    for (int d = 0; d < 4; d++) {
        char dir[256], out[300], err[300], tokpath[320];
        make_temp_dir(dir, sizeof dir);
        snprintf(out, sizeof out, "%s/o", dir);
        snprintf(err, sizeof err, "%s/err", dir);
        const char *args[40];
        int n = 0;
        args[n++] = "run";
        for (size_t i = 0; i < sizeof TINY / sizeof TINY[0]; i++) args[n++] = TINY[i];
        const char *more[] = {"--steps", "40", "--kv-dtype", dts[d], "--max-kv-mb", "0.0009765625",
                              "--record", "tokens", "--quiet", "--out", out};
        for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) args[n++] = more[i];
        args[n] = NULL;
        ck_assert_int_eq(run_kvscope(args, NULL, err), 0);
        int stop = 1; /* the first decode step whose cache of 4 + s tokens passes the cap */
        while ((4 + (size_t)stop) * bpt[d] <= 1024) stop++;
        char want[160];
        snprintf(want, sizeof want, "stopped before decode step %d: the cache would hold %d tokens = %zu bytes > cap 1024 bytes",
                 stop, 4 + stop, (4 + (size_t)stop) * bpt[d]);
        char *e = read_file(err, NULL);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(strstr(e, want) != NULL, "%s: got \"%s\", want \"%s\"", dts[d], e, want);
        free(e);
        /* what was recorded up to then is kept: the prompt and steps 1..stop-1 */
        snprintf(tokpath, sizeof tokpath, "%s/tokens.csv", out);
        char *t = read_file(tokpath, NULL);
        ck_assert_ptr_nonnull(t);
        int lines = 0;
        for (char *p = t; *p; p++) lines += *p == '\n';
        ck_assert_int_eq(lines, 1 + 4 + (stop - 1));
        free(t);
    }
}
END_TEST

static int run_bad(const char *const *extra, const char *needle) {
    char dir[256], err[300], out[300];
    make_temp_dir(dir, sizeof dir);
    snprintf(err, sizeof err, "%s/err", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    const char *args[40];
    int n = 0;
    args[n++] = "run";
    for (size_t i = 0; i < sizeof TINY / sizeof TINY[0]; i++) args[n++] = TINY[i];
    args[n++] = "--out";
    args[n++] = out;
    while (*extra) args[n++] = *extra++;
    args[n] = NULL;
    int rc = run_kvscope(args, NULL, err);
    char *e = read_file(err, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strncmp(e, "kvscope: ", 9) == 0 && strstr(e, needle) && strchr(e, '\n') == e + strlen(e) - 1,
                  "want one line naming %s, got \"%s\"", needle, e);
    free(e);
    return rc;
}

START_TEST(test_bad_values_exit_2) {
    const char *a1[] = {"--kv-dtype", "fp8", NULL};
    const char *a2[] = {"--window", "0", NULL};
    const char *a3[] = {"--window", "4", "--sink", "4", NULL};
    const char *a4[] = {"--max-kv-mb", "-1", NULL};
    const char *a5[] = {"--sink", "1", NULL};
    const char *a7[] = {"--window", "8", "--no-cache", NULL};
    const char *a8[] = {"--max-tokens", "-5", NULL};
    ck_assert_int_eq(run_bad(a1, "fp8"), 2);
    ck_assert_int_eq(run_bad(a2, "--window"), 2);
    ck_assert_int_eq(run_bad(a3, "--sink must be less than --window"), 2);
    ck_assert_int_eq(run_bad(a4, "--max-kv-mb"), 2);
    ck_assert_int_eq(run_bad(a5, "--sink needs --window W (the window its sinks stay in): --sink 1"), 2);
    ck_assert_int_eq(run_bad(a7, "--window needs the cache"), 2);
    ck_assert_int_eq(run_bad(a8, "--max-tokens"), 2);
}
END_TEST

Suite *make_budget_suite(void) {
    Suite *s = suite_create("budget");
    TCase *tc = tcase_create("halfprec");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_fp16_known);
    tcase_add_test(tc, test_fp16_all_values);
    tcase_add_test(tc, test_fp16_vs_compiler);
    tcase_add_test(tc, test_bf16_known);
    suite_add_tcase(s, tc);
    tc = tcase_create("quant");
    tcase_add_test(tc, test_quant_half_step);
    tcase_add_test(tc, test_bytes_per_token);
    tcase_add_test(tc, test_fp16_cache_reads_stored_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("window_cap");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_window_covering_all_is_exact);
    suite_add_tcase(s, tc);
    tc = tcase_create("window_cap_cli");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cap_stops_at_formula_step);
    tcase_add_test(tc, test_bad_values_exit_2);
    suite_add_tcase(s, tc);
    return s;
}
