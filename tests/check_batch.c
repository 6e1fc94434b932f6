/* check_batch.c — batched decode on the padded cache (batch.h) against each
 * sequence run alone with model_forward, and `kvscope batch` on bad input.
 *
 * Tolerance: none. A row of the batch is built by the same operations in the same
 * order as the sequence alone, so every logit is equal (TOL 0); the worst difference
 * is reported on failure. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "kvcache.h"
#include "model.h"
#include "ops.h"
#include "outdir.h"
#include "testutil.h"

#define TOL 0.0

static double maxdiff(const float *a, const float *b, int n) {
    double d = 0.0;
    for (int i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - (double)b[i]));
    return d;
}

/* Three sequences of lengths 7, 2, 4; steps 5, 3, 5. */
enum { NSEQ = 3 };
static const int LEN[NSEQ] = {7, 2, 4}, STEPS[NSEQ] = {5, 3, 5};

typedef struct {
    Model m;
    int tok[NSEQ][16];
    float ref[NSEQ][6][32];      /* logits alone after step s (V = 32) */
    FlopCount fref[NSEQ][6];     /* FLOPs of that step alone */
} Fixture;

static void fixture(Fixture *fx) {
    Config cfg = tiny_config(2, 2, 16, 64, 32);
    ck_assert_int_eq(model_init_random(&fx->m, &cfg, 7), 0);
    for (int b = 0; b < NSEQ; b++) {
        for (int t = 0; t < LEN[b]; t++) fx->tok[b][t] = (5 * b + 3 * t + 1) % 32;
        KVCache c;
        ck_assert_int_eq(kvcache_init(&c, 2, 2, 8, 64), 0);
        memset(fx->fref[b], 0, sizeof fx->fref[b]);
        ck_assert_int_eq(model_forward(&fx->m, &c, fx->tok[b], LEN[b], fx->ref[b][0], NULL, &fx->fref[b][0]), 0);
        for (int s = 1; s <= STEPS[b]; s++) {
            int t = fx->tok[b][LEN[b] + s - 1] = (7 * s + b) % 32; /* fixed, not greedy */
            ck_assert_int_eq(model_forward(&fx->m, &c, &t, 1, fx->ref[b][s], NULL, &fx->fref[b][s]), 0);
        }
        kvcache_free(&c);
    }
}

/* Run the batch on the padded cache; returns the worst |Δlogit| per sequence. */
static void run_padded(Fixture *fx, int masked, double worst[NSEQ], FlopCount *fdec,
                       PaddedBatch *pb_out) {
    PaddedBatch pb;
    ck_assert_int_eq(padded_init(&pb, 2, 2, 8, NSEQ, 7 + 5, masked), 0);
    float lg[NSEQ][32];
    for (int b = 0; b < NSEQ; b++) {
        ck_assert_int_eq(padded_prefill(&fx->m, &pb, b, fx->tok[b], LEN[b], lg[b], NULL), 0);
        worst[b] = maxdiff(lg[b], fx->ref[b][0], 32);
    }
    memset(fdec, 0, sizeof *fdec);
    for (int s = 1; s <= 5; s++) {
        int seqs[NSEQ], toks[NSEQ], R = 0;
        float *lp[NSEQ];
        for (int b = 0; b < NSEQ; b++)
            if (STEPS[b] >= s) seqs[R] = b, toks[R] = fx->tok[b][LEN[b] + s - 1], lp[R] = lg[R], R++;
        ck_assert_int_eq(padded_decode(&fx->m, &pb, seqs, toks, R, lp, fdec), 0);
        for (int r = 0; r < R; r++)
            worst[seqs[r]] = fmax(worst[seqs[r]], maxdiff(lg[r], fx->ref[seqs[r]][s], 32));
    }
    *pb_out = pb;
}

START_TEST(test_masked_batch_equals_alone) {
    Fixture fx;
    fixture(&fx);
    double worst[NSEQ];
    FlopCount fdec;
    PaddedBatch pb;
    run_padded(&fx, 1, worst, &fdec, &pb);
    for (int b = 0; b < NSEQ; b++)
        ck_assert_msg(worst[b] <= TOL, "sequence %d: max |dlogit| %g > %g", b, worst[b], TOL);
    /* FLOPs: a batched step does exactly the work of its rows run alone */
    FlopCount sum = {0};
    for (int b = 0; b < NSEQ; b++)
        for (int s = 1; s <= STEPS[b]; s++) flops_add(&sum, &fx.fref[b][s]);
    /* ... but reads the weights once for all its rows: each step's count is the closed
     * form for its R rows (a per-row lm_head would count wte R times) */
    uint64_t once = 0;
    for (int s = 1; s <= 5; s++) {
        int R = 0;
        for (int b = 0; b < NSEQ; b++) R += STEPS[b] >= s;
        once += model_weight_bytes_read(&fx.m.cfg, fx.m.w.dtype, (uint64_t)R);
    }
    ck_assert_uint_eq(fdec.weight_bytes, once);
    ck_assert_uint_lt(fdec.weight_bytes, sum.weight_bytes);
    fdec.weight_bytes = sum.weight_bytes = 0;
    ck_assert_mem_eq(&fdec, &sum, sizeof sum);
    /* bytes: width = longest prompt + 5 steps; tokens = Σ (T_b + steps_b) */
    const size_t bpt = 2 * 2 * 16 * sizeof(float);
    ck_assert_int_eq(pb.width, 7 + 5);
    ck_assert_uint_eq(padded_bytes_per_token(&pb), bpt);
    ck_assert_uint_eq(padded_bytes_stacked(&pb), NSEQ * 12 * bpt);
    ck_assert_uint_eq(padded_bytes_used(&pb), (7 + 5 + 2 + 3 + 4 + 5) * bpt);
    padded_free(&pb);
    model_free(&fx.m);
}
END_TEST

START_TEST(test_no_mask_changes_padded_rows_only) {
    Fixture fx;
    fixture(&fx);
    double worst[NSEQ];
    FlopCount fdec;
    PaddedBatch pb;
    run_padded(&fx, 0, worst, &fdec, &pb);
    /* sequence 0 is the longest: no padding in its row, nothing changes */
    ck_assert_msg(worst[0] <= TOL, "longest sequence moved by %g", worst[0]);
    ck_assert_msg(worst[1] > 1e-3, "padding without a mask left sequence 1 unchanged (%g)", worst[1]);
    ck_assert_msg(worst[2] > 1e-3, "padding without a mask left sequence 2 unchanged (%g)", worst[2]);
    /* and it attends to the padding: 4·C FLOPs per padding slot per layer, per row */
    FlopCount sum = {0};
    for (int b = 0; b < NSEQ; b++)
        for (int s = 1; s <= STEPS[b]; s++) flops_add(&sum, &fx.fref[b][s]);
    uint64_t pad_pairs = 0;
    for (int b = 0; b < NSEQ; b++) pad_pairs += (uint64_t)(7 - LEN[b]) * STEPS[b];
    ck_assert_uint_eq(fdec.attn, sum.attn + 2 * 4 * 16 * pad_pairs);
    padded_free(&pb);
    model_free(&fx.m);
}
END_TEST

START_TEST(test_padded_rejects_bad_rows) {
    Fixture fx;
    fixture(&fx);
    PaddedBatch pb;
    ck_assert_int_eq(padded_init(&pb, 2, 2, 8, 2, 8, 1), 0);
    float lg[2][32];
    float *lp[2] = {lg[0], lg[1]};
    ck_assert_int_eq(padded_prefill(&fx.m, &pb, 0, fx.tok[0], 7, NULL, NULL), 0);
    ck_assert_int_eq(padded_prefill(&fx.m, &pb, 0, fx.tok[0], 2, NULL, NULL), -1); /* twice */
    ck_assert_int_eq(padded_prefill(&fx.m, &pb, 1, fx.tok[1], 9, NULL, NULL), -1); /* > W */
    int seqs[2] = {0, 0}, toks[2] = {1, 2};
    ck_assert_int_eq(padded_decode(&fx.m, &pb, seqs, toks, 2, lp, NULL), -1);     /* twice */
    ck_assert_int_eq(pb.width, 7);
    ck_assert_int_eq(padded_decode(&fx.m, &pb, seqs, toks, 1, lp, NULL), 0);
    ck_assert_int_eq(padded_decode(&fx.m, &pb, seqs, toks, 1, lp, NULL), -1);     /* full */
    padded_free(&pb);
    model_free(&fx.m);
}
END_TEST

/* ---- the command ------------------------------------------------------- */

static int run_batch(const char *const *args, char *err, size_t errsize) {
    char dir[64], path[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/err", dir);
    int st = run_kvscope(args, NULL, path);
    char *e = read_file(path, NULL);
    snprintf(err, errsize, "%s", e ? e : "");
    free(e);
    remove(path);
    remove(dir);
    return st;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_cli_bad_input) {
    char dir[64], file[128], out[128], err[512];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(file, sizeof file, "%s/prompts.txt", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    const char *tiny[] = {"--layers", "1", "--heads", "2", "--dim", "8", "--ctx", "16"};
#define ARGS(...) ((const char *const[]){"batch", tiny[0], tiny[1], tiny[2], tiny[3], tiny[4], \
                                          tiny[5], tiny[6], tiny[7], "--out", out, __VA_ARGS__, NULL})
    write_text(file, "\n\n");
    ck_assert_int_eq(run_batch(ARGS("--prompts", file), err, sizeof err), 2);
    ck_assert_msg(strstr(err, "kvscope: no prompts in --prompts") && !strchr(strchr(err, '\n') + 1, '\n'),
                  "got: %s", err);
    write_text(file, "short\nthis line is longer than sixteen bytes\n");
    ck_assert_int_eq(run_batch(ARGS("--prompts", file, "--steps", "2"), err, sizeof err), 2);
    ck_assert_msg(strstr(err, "kvscope: prompt longer than the context (16 tokens): prompt 2"), "got: %s", err);
    write_text(file, "short\nlonger one\n");
    ck_assert_int_eq(run_batch(ARGS("--prompts", file, "--steps", "10"), err, sizeof err), 2);
    ck_assert_msg(strstr(err, "prompt + --steps longer than the context"), "got: %s", err);
    ck_assert_int_eq(run_batch(ARGS("--prompts", file, "--paged", "--block-size", "0"), err, sizeof err), 2);
    ck_assert_msg(strstr(err, "kvscope: --block-size must be in 1..65536: 0"), "got: %s", err);
    ck_assert_int_eq(run_batch(ARGS("--prompts", file, "--steps", "1,2,3"), err, sizeof err), 2);
    ck_assert_msg(strstr(err, "--steps needs one number or one per prompt (2)"), "got: %s", err);
    /* a line of only spaces and tabs is skipped as a blank one: still two prompts */
    write_text(file, "short\n  \t \r\nlonger one\n");
    ck_assert_int_eq(run_batch(ARGS("--prompts", file, "--steps", "1,2,3"), err, sizeof err), 2);
    ck_assert_msg(strstr(err, "--steps needs one number or one per prompt (2)"), "got: %s", err);
    write_text(file, " \n\t\n");
    ck_assert_int_eq(run_batch(ARGS("--prompts", file), err, sizeof err), 2);
    ck_assert_msg(strstr(err, "kvscope: no prompts in --prompts"), "got: %s", err);
    ck_assert_int_eq(run_batch(ARGS("--prompt", "abc", "--prompt", "", "--steps", "1"), err, sizeof err), 2);
    ck_assert_msg(strstr(err, "kvscope: empty prompt: prompt 2"), "got: %s", err);
    ck_assert_int_eq(run_batch(ARGS("--prompts", "/nonexistent/p.txt"), err, sizeof err), 2);
    ck_assert_msg(strstr(err, "kvscope: --prompts: /nonexistent/p.txt: cannot open"), "got: %s", err);
    /* nothing was written */
    ck_assert_int_eq(count_entries(dir), 1);
#undef ARGS
    remove_tree(dir);
}
END_TEST

/* The command end to end: mask → equal, no mask → differs, prefix reuse equal. */
START_TEST(test_cli_mask_nomask_prefix) {
    char dir[64], out[128], path[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    const char *base[] = {"batch", "--layers", "1", "--heads", "2", "--dim", "16", "--ctx", "64",
                          "--prompt", "abc", "--prompt", "a", "--prompt", "abcdefg", "--steps", "6,3,4",
                          "--out", out, "--quiet", NULL, NULL};
    ck_assert_int_eq(run_kvscope(base, NULL, NULL), 0);
    snprintf(path, sizeof path, "%s/summary.csv", out);
    char *s = read_file(path, NULL);
    ck_assert_ptr_nonnull(s);
    ck_assert_msg(strstr(s, "\nmax_abs_diff,0\n"), "%s", s);
    ck_assert_msg(strstr(s, "\nprefix_max_abs_diff,0\n"), "%s", s);
    ck_assert_msg(strstr(s, "\nprefix_first,0\nprefix_second,2\nprefix_tokens,3\nprefix_new_tokens,4\n"), "%s", s);
    /* padding: width 7 + 6 steps, 3 rows, holding Σ (T + steps) = 9 + 4 + 11 tokens */
    ck_assert_msg(strstr(s, "\nwidth_final,13\n"), "%s", s);
    char want[96];
    snprintf(want, sizeof want, "\nbytes_padding_final,%zu\n", (size_t)(3 * 13 - 24) * 2 * 16 * 4);
    ck_assert_msg(strstr(s, want), "want %s in %s", want, s);
    free(s);
    base[20] = "--no-mask";
    ck_assert_int_eq(run_kvscope(base, NULL, NULL), 1); /* the logits differ: exit 1 */
    s = read_file(path, NULL);
    ck_assert_ptr_nonnull(s);
    char *p = strstr(s, "\nmax_abs_diff,");
    ck_assert_ptr_nonnull(p);
    ck_assert_msg(strtod(p + 14, NULL) > 1e-3, "%s", s);
    free(s);
    ck_assert_int_eq(remove_tree(dir), 0);
}
END_TEST

Suite *make_batch_suite(void) {
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("padded");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_masked_batch_equals_alone);
    tcase_add_test(tc, test_no_mask_changes_padded_rows_only);
    tcase_add_test(tc, test_padded_rejects_bad_rows);
    suite_add_tcase(s, tc);
    tc = tcase_create("cli");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cli_bad_input);
    tcase_add_test(tc, test_cli_mask_nomask_prefix);
    suite_add_tcase(s, tc);
    return s;
}
