/* check_kvmem.c — the KV-cache size formula, its presets, and `kvscope kvmem`. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvcache.h"
#include "kvmem.h"
#include "outdir.h"
#include "quant.h"
#include "testutil.h"

/* The published sizes, written out by hand: 2 · L · heads · hs · T · bytes. */
START_TEST(gpt2_small_1024_fp16) {
    uint64_t b = 0;
    const KvShape *s = kvmem_preset("gpt2");
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(kvmem_bytes(s, 1024, 1, DT_FP16, &b), 0);
    ck_assert_uint_eq(b, 37748736u);
    ck_assert_uint_eq(b, 2ull * 12 * 12 * 64 * 1024 * 2);
}
END_TEST

START_TEST(llama2_7b_2048_fp16_is_one_gib) {
    uint64_t b = 0, wrong = 0;
    const KvShape *s = kvmem_preset("llama-2-7b");
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(kvmem_bytes(s, 2048, 1, DT_FP16, &b), 0);
    ck_assert_uint_eq(b, 1073741824u);
    /* the article's 2·128·32·2048·2 is one head's worth: 32 MiB, 32 times too small */
    KvShape one = *s;
    one.NH = one.kv_heads = 1;
    ck_assert_int_eq(kvmem_bytes(&one, 2048, 1, DT_FP16, &wrong), 0);
    ck_assert_uint_eq(wrong, 2ull * 128 * 32 * 2048 * 2);
    ck_assert_uint_eq(wrong, 32u << 20);
    ck_assert_uint_eq(b / wrong, 32);
}
END_TEST

/* The GPT-2 family as facts.md gives it: L/NH/C with hs 64 and context 1024. */
START_TEST(presets_match_the_configs) {
    /* the config.json of each model: n_layer, n_head, hidden size, KV heads, context */
    static const struct { const char *name; int L, NH, C, kv, N; } want[] = {
        {"gpt2", 12, 12, 768, 12, 1024},       {"gpt2-medium", 24, 16, 1024, 16, 1024},
        {"gpt2-large", 36, 20, 1280, 20, 1024}, {"gpt2-xl", 48, 25, 1600, 25, 1024},
        {"llama-2-7b", 32, 32, 4096, 32, 4096}, {"llama-3-8b", 32, 32, 4096, 8, 8192},
        {"mistral-7b", 32, 32, 4096, 8, 32768}, {"qwen2-7b", 28, 28, 3584, 4, 131072},
    };
    int n;
    kvmem_presets(&n);
    ck_assert_int_eq(n, 8);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const KvShape *s = kvmem_preset(want[i].name);
        ck_assert_ptr_nonnull(s);
        ck_assert_int_eq(s->L, want[i].L);
        ck_assert_int_eq(s->NH, want[i].NH);
        ck_assert_int_eq(s->kv_heads, want[i].kv);
        ck_assert_int_eq(s->NH * s->hs, want[i].C);
        ck_assert_int_eq(s->N, want[i].N);
        ck_assert_ptr_null(kvmem_check(s));
    }
    ck_assert_ptr_null(kvmem_preset("gpt3"));
}
END_TEST

/* GQA: every divisor of NH as kv_heads shrinks the cache by exactly NH / kv_heads. */
START_TEST(gqa_shrinks_by_heads_over_kv_heads) {
    KvShape s = *kvmem_preset("llama-2-7b");
    uint64_t mha, gqa;
    ck_assert_int_eq(kvmem_bytes(&s, 4096, 3, DT_BF16, &mha), 0);
    int tried = 0;
    for (int kv = 1; kv <= s.NH; kv++) {
        if (s.NH % kv) continue;
        s.kv_heads = kv;
        ck_assert_ptr_null(kvmem_check(&s));
        ck_assert_int_eq(kvmem_bytes(&s, 4096, 3, DT_BF16, &gqa), 0);
        ck_assert_uint_eq(gqa * (uint64_t)(s.NH / kv), mha);
        tried++;
    }
    ck_assert_int_eq(tried, 6); /* 1 2 4 8 16 32 */
    s.kv_heads = 8;
    ck_assert_int_eq(kvmem_bytes(&s, 2048, 1, DT_FP16, &gqa), 0);
    ck_assert_uint_eq(gqa, 268435456u); /* 256 MiB */
}
END_TEST

/* Every type on gpt2-xl (C = 1600, 25 heads), written out by hand: 8-bit rows carry
 * their scales, a float32 a head (int8) or an fp16 a block of 32 (q8_0). */
START_TEST(dtypes_and_batch) {
    const KvShape *s = kvmem_preset("gpt2-xl");
    const uint64_t row[DT_COUNT] = {[DT_FP32] = 1600 * 4, [DT_FP16] = 1600 * 2, [DT_BF16] = 1600 * 2,
                                    [DT_INT8] = 1600 + 25 * 4, [DT_Q8_0] = 50 * 34,
                                    [DT_Q4_0] = 50 * 18};
    for (int d = 0; d < DT_COUNT; d++) {
        Dtype dt;
        uint64_t b;
        ck_assert_int_eq(dtype_parse(dtype_name((Dtype)d), &dt), 0);
        ck_assert_int_eq(dt, d);
        ck_assert_int_eq(kvmem_bytes(s, 100, 7, (Dtype)d, &b), 0);
        ck_assert_uint_eq(b, 2ull * 48 * 100 * 7 * row[d]);
    }
    Dtype dt = DT_BF16;
    uint64_t b = 5;
    ck_assert_int_eq(dtype_parse("fp8", &dt), -1);
    ck_assert_int_eq(dt, DT_BF16);
    ck_assert_int_eq(kvmem_bytes(s, 1, 1, DT_COUNT, &b), -1);
    ck_assert_uint_eq(b, 5);
}
END_TEST

/* The bytes one row of the cache really takes, measured, not computed: for the 8- and
 * 4-bit types the extent the quantizer writes (into two buffers poisoned differently, a
 * written byte is the same in both), for the others the C-type size of a value. */
static size_t measured_row(Dtype dt, const float *x, int NH, int hs) {
    enum { BIG = 4096 };
    static unsigned char a[BIG], b[BIG];
    const size_t C = (size_t)NH * hs;
    if (dt == DT_FP32) return C * sizeof(float);
    if (dt == DT_FP16 || dt == DT_BF16) return C * sizeof(uint16_t);
    memset(a, 0x00, BIG);
    memset(b, 0xff, BIG);
    if (dt == DT_INT8) {
        int8_quantize_row(a, x, NH, hs);
        int8_quantize_row(b, x, NH, hs);
    } else if (dt == DT_Q4_0) {
        q4_0_quantize_row(a, x, (int)C);
        q4_0_quantize_row(b, x, (int)C);
    } else {
        q8_0_quantize_row(a, x, (int)C);
        q8_0_quantize_row(b, x, (int)C);
    }
    size_t n = 0;
    for (size_t i = 0; i < BIG; i++)
        if (a[i] == b[i]) n = i + 1;
    return n;
}

/* kvmem's count is what a cache of that shape allocates and fills, for every type:
 * against the bytes the rows are measured to take, and against the cache's own count
 * after storing every slot (under SAN=1 a buffer too small for them is an error). */
START_TEST(counts_what_the_cache_allocates) {
    enum { L = 3, NH = 3, hs = 20, C = NH * hs, T = 16 }; /* C = 60: q8_0 pads a block */
    const KvShape s = {"t", L, NH, NH, hs, T};
    float k[C], v[C];
    for (int i = 0; i < C; i++) k[i] = 0.37f * (float)(i - 29), v[i] = -2.0f * k[i];
    for (int d = 0; d < DT_COUNT; d++) {
        const size_t row = measured_row((Dtype)d, k, NH, hs);
        uint64_t want;
        ck_assert_int_eq(kvmem_bytes(&s, T, 1, (Dtype)d, &want), 0);
        ck_assert_msg(want == 2ull * L * T * row, "%s: kvmem %llu, rows measured %zu B",
                      dtype_name((Dtype)d), (unsigned long long)want, row);
        KVCache c;
        ck_assert_int_eq(kvcache_init(&c, L, NH, hs, T), 0);
        ck_assert_int_eq(kvcache_set_dtype(&c, (Dtype)d), 0);
        ck_assert_int_eq(kvcache_reserve(&c, T), 0);
        for (int t = 0; t < T; t++)
            for (int l = 0; l < L; l++) kvcache_store(&c, l, t, k, v, t);
        c.len = c.n_seen = T;
        ck_assert_uint_eq(kvcache_bytes_used(&c), want);
        kvcache_free(&c);
    }
}
END_TEST

START_TEST(bad_shapes_and_overflow) {
    KvShape s = {"x", 2, 12, 5, 64, 100}; /* 5 does not divide 12 */
    ck_assert_ptr_nonnull(kvmem_check(&s));
    s.kv_heads = 24;
    ck_assert_ptr_nonnull(kvmem_check(&s));
    s.kv_heads = 0;
    ck_assert_ptr_nonnull(kvmem_check(&s));
    s.kv_heads = 4;
    s.hs = 0;
    ck_assert_ptr_nonnull(kvmem_check(&s));
    KvShape big = {"big", 4096, 4096, 4096, 65536, 1 << 24};
    uint64_t b = 7;
    ck_assert_int_eq(kvmem_bytes(&big, 1u << 24, 1u << 20, DT_FP32, &b), -1);
    ck_assert_uint_eq(b, 7); /* untouched */
}
END_TEST

/* ---- the command ---------------------------------------------------------- */

static char *run_out(const char *const *args, int *status, char *err_out, size_t err_size) {
    char dir[64], out[128], err[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    *status = run_kvscope(args, out, err);
    char *o = read_file(out, NULL), *e = read_file(err, NULL);
    if (err_out) snprintf(err_out, err_size, "%s", e ? e : "");
    free(e);
    remove(out);
    remove(err);
    rmdir(dir);
    return o;
}

START_TEST(cli_prints_exact_bytes) {
    int st;
    const char *a1[] = {"kvmem", "--preset", "gpt2", "--tokens", "1024", NULL};
    char *o = run_out(a1, &st, NULL, 0);
    ck_assert_int_eq(st, 0);
    ck_assert_ptr_nonnull(strstr(o, "at 1024 tokens"));
    ck_assert_ptr_nonnull(strstr(o, "37,748,736 B  (36.0 MiB)"));
    free(o);
    const char *a2[] = {"kvmem", "--preset", "llama-2-7b", "--tokens", "2048", NULL};
    o = run_out(a2, &st, NULL, 0);
    ck_assert_int_eq(st, 0);
    ck_assert_ptr_nonnull(strstr(o, "1,073,741,824 B  (1.00 GiB)"));
    free(o);
    const char *a3[] = {"kvmem", "--preset", "llama-2-7b", "--kv-heads", "8", "--tokens", "2048", NULL};
    o = run_out(a3, &st, NULL, 0);
    ck_assert_int_eq(st, 0);
    ck_assert_ptr_nonnull(strstr(o, "268,435,456 B  (256 MiB)"));
    ck_assert_ptr_nonnull(strstr(o, "4x smaller"));
    free(o);
    /* a GQA preset keeps its own KV heads: 2 · 32 · 8 · 128 · 2048 · 2 bytes */
    const char *a5[] = {"kvmem", "--preset", "llama-3-8b", "--tokens", "2048", NULL};
    o = run_out(a5, &st, NULL, 0);
    ck_assert_int_eq(st, 0);
    ck_assert_ptr_nonnull(strstr(o, "kv heads 8,"));
    ck_assert_ptr_nonnull(strstr(o, "268,435,456 B  (256 MiB)"));
    free(o);
    /* a custom shape in int8: 2 · 3 · 10 tokens · batch 4 · (2 · 16 values + 2 · 4 scale bytes) */
    const char *a4[] = {"kvmem", "--layers", "3", "--heads", "4", "--kv-heads", "2", "--head-dim", "16",
                        "--tokens", "10", "--batch", "4", "--dtype", "int8", NULL};
    o = run_out(a4, &st, NULL, 0);
    ck_assert_int_eq(st, 0);
    ck_assert_ptr_nonnull(strstr(o, "9,600 B  (9.38 KiB)"));
    free(o);
}
END_TEST

START_TEST(cli_bad_flags_exit_2) {
    static const char *const bad[][12] = {
        {"kvmem", "--dtype", "fp8", NULL},
        {"kvmem", "--preset", "gpt5", NULL},
        {"kvmem", "--preset", "gpt2", "--kv-heads", "5", NULL},
        {"kvmem", "--preset", "gpt2", "--kv-heads", "24", NULL},
        {"kvmem", "--preset", "gpt2", "--tokens", "1025", NULL},
        {"kvmem", "--layers", "0", "--heads", "2", "--head-dim", "4", "--ctx", "8", NULL},
        {"kvmem", "--layers", "2", "--heads", "2", "--ctx", "8", NULL},
        {"kvmem", "--layers", "2x", NULL},
        {"kvmem", "--batch", NULL},
        {"kvmem", "--frobnicate", NULL},
        {"kvmem", "--lengths", "1,,2", NULL},
    };
    char dir[64], out[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/kv", dir);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[16];
        int n = 0;
        for (; bad[i][n]; n++) args[n] = bad[i][n];
        args[n++] = "--out";
        args[n++] = out;
        args[n] = NULL;
        char err[512];
        int st;
        free(run_out(args, &st, err, sizeof err));
        ck_assert_msg(st == 2, "case %zu: status %d", i, st);
        ck_assert_msg(strncmp(err, "kvscope: ", 9) == 0 && strchr(err, '\n') == err + strlen(err) - 1,
                      "case %zu: stderr is not one kvscope: line: %s", i, err);
        struct stat sb;
        ck_assert_msg(stat(out, &sb) != 0, "case %zu: --out written on bad input", i);
    }
    ck_assert_int_eq(count_entries(dir), 0);
    rmdir(dir);
}
END_TEST

START_TEST(cli_out_sweep) {
    char dir[64], out[128], path[256];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/kv", dir);
    const char *args[] = {"kvmem", "--out", out, "--lengths", "0,1024,2048", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    snprintf(path, sizeof path, "%s/kvmem.csv", out);
    char *csv = read_file(path, NULL);
    ck_assert_ptr_nonnull(csv);
    ck_assert_str_eq(csv, "tokens,gpt2,gpt2-medium,gpt2-large,gpt2-xl,llama-2-7b,llama-3-8b,mistral-7b,qwen2-7b\n"
                          "0,0,0,0,0,0,0,0,0\n"
                          "1024,37748736,100663296,188743680,314572800,536870912,134217728,134217728,58720256\n"
                          "2048,,,,,1073741824,268435456,268435456,117440512\n");
    free(csv);
    snprintf(path, sizeof path, "%s/values.csv", out);
    char *v = read_file(path, NULL);
    ck_assert_ptr_nonnull(v);
    ck_assert_ptr_nonnull(strstr(v, "\ngpt2_1024_bytes,37748736\n"));
    ck_assert_ptr_nonnull(strstr(v, "\nllama-2-7b_2048_bytes,1073741824\n"));
    ck_assert_ptr_nonnull(strstr(v, "\narticle_llama_2048_bytes,33554432\n"));
    ck_assert_ptr_nonnull(strstr(v, "\narticle_missing_factor,32\n"));
    free(v);
    snprintf(path, sizeof path, "%s/models.md", out);
    char *md = read_file(path, NULL);
    ck_assert_ptr_nonnull(md);
    ck_assert_ptr_nonnull(strstr(md, "| gpt2 | 12 | 12 | 12 | 64 | 1024 | 36.0 KiB | 37,748,736 B (36.0 MiB) |"));
    free(md);
    ck_assert_int_eq(remove_tree(dir), 0);
}
END_TEST

Suite *make_kvmem_suite(void) {
    Suite *s = suite_create("kvmem");
    TCase *tc = tcase_create("formula");
    tcase_add_test(tc, gpt2_small_1024_fp16);
    tcase_add_test(tc, llama2_7b_2048_fp16_is_one_gib);
    tcase_add_test(tc, presets_match_the_configs);
    tcase_add_test(tc, gqa_shrinks_by_heads_over_kv_heads);
    tcase_add_test(tc, dtypes_and_batch);
    tcase_add_test(tc, counts_what_the_cache_allocates);
    tcase_add_test(tc, bad_shapes_and_overflow);
    suite_add_tcase(s, tc);
    tc = tcase_create("cli");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, cli_prints_exact_bytes);
    tcase_add_test(tc, cli_bad_flags_exit_2);
    tcase_add_test(tc, cli_out_sweep);
    suite_add_tcase(s, tc);
    return s;
}
