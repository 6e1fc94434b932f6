/* check_roofline.c — the batch-size sweep of a decode step (roofline.h) against one
 * sequence run alone, and `kvscope batch --roofline` refusing a sweep memory cannot hold. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache.h"
#include "model.h"
#include "outdir.h"
#include "roofline.h"
#include "testutil.h"

START_TEST(test_sizes) {
    int s[ROOFLINE_MAX_POINTS];
    ck_assert_int_eq(roofline_sizes(64, s), 7);
    for (int i = 0; i < 7; i++) ck_assert_int_eq(s[i], 1 << i);
    ck_assert_int_eq(roofline_sizes(5, s), 4);
    ck_assert_int_eq(s[3], 5);
    ck_assert_int_eq(roofline_sizes(1, s), 1);
    ck_assert_int_eq(s[0], 1);
}
END_TEST

/* B identical rows do B times the FLOPs of one row run alone (counted by model_forward
 * on the contiguous cache), and read the weights once plus every row's K and V. */
START_TEST(test_sweep_counts) {
    enum { T = 5, S = 4, V = 32, L = 2, C = 16 };
    Config cfg = tiny_config(L, 2, C, 64, V);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 3), 0);
    const int tok[T] = {1, 7, 3, 9, 2};
    /* alone: prefill, then S greedy steps, the FLOPs of each */
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, L, 2, C / 2, 64), 0);
    float lg[V];
    ck_assert_int_eq(model_forward(&m, &c, tok, T, lg, NULL, NULL), 0);
    double flops1 = 0.0, kv1 = 0.0;
    for (int s = 0; s < S; s++) {
        int next = 0;
        for (int v = 1; v < V; v++)
            if (lg[v] > lg[next]) next = v;
        FlopCount f = {0};
        ck_assert_int_eq(model_forward(&m, &c, &next, 1, lg, NULL, &f), 0);
        flops1 += (double)flops_total(&f) / S;
        kv1 += (double)(T + s + 1) * 2 * L * C * sizeof(float) / S; /* its K and V rows read */
    }
    kvcache_free(&c);
    RoofPoint p[ROOFLINE_MAX_POINTS];
    int n = 0;
    ck_assert_int_eq(roofline_sweep(&m, tok, T, S, 6, p, &n), 0);
    ck_assert_int_eq(n, 4); /* 1, 2, 4, 6 */
    for (int i = 0; i < n; i++) {
        const int B = p[i].B;
        ck_assert_int_eq(B, i < 3 ? 1 << i : 6);
        ck_assert_double_eq_tol(p[i].flops, B * flops1, 1e-6 * B * flops1);
        const double bytes = (double)model_weight_bytes_read(&cfg, DT_FP32, (uint64_t)B) + B * kv1;
        ck_assert_double_eq_tol(p[i].bytes, bytes, 1e-9 * bytes);
        ck_assert(p[i].step_s > 0.0 && p[i].ttft_s > 0.0);
    }
    ck_assert(p[3].flops / p[3].bytes > 3.0 * p[0].flops / p[0].bytes); /* the weights are shared */
    uint64_t need;
    ck_assert_int_eq(roofline_bytes_needed(&cfg, 6, T, S, &need), 0);
    ck_assert_uint_eq(need, (uint64_t)2 * L * 6 * (T + S) * C * 4 + (uint64_t)6 * V * 4);
    ck_assert_int_eq(roofline_bytes_needed(&cfg, 1 << 30, 1 << 30, 1 << 30, &need), -1);
    model_free(&m);
}
END_TEST

/* A sweep whose largest batch cannot fit: refused before the first step with the size,
 * nothing written. (2 · 64 layers · 256 rows · 65,001 slots · 64 floats: 508 GiB.) */
START_TEST(test_cli_refuses_too_large) {
    char dir[64], out[128], err[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    const char *args[] = {"batch", "--roofline", "256", "--layers", "64", "--dim", "64", "--heads", "1",
                          "--ctx", "65536", "--steps", "65000", "--prompt", "a", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, err), 2);
    char *e = read_file(err, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strstr(e, "larger than memory allows") && strstr(e, "--roofline 256: 508 GiB"), "%s", e);
    free(e);
    remove(err);
    ck_assert_int_eq(count_entries(dir), 0);
    remove_tree(dir);
}
END_TEST

Suite *make_roofline_suite(void) {
    Suite *s = suite_create("roofline");
    TCase *tc = tcase_create("roofline");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_sweep_counts);
    suite_add_tcase(s, tc);
    tc = tcase_create("roofline_cli");
    tcase_set_tags(tc, "bin");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_cli_refuses_too_large);
    suite_add_tcase(s, tc);
    return s;
}
