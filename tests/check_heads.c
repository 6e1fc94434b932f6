/* check_heads.c — `kvscope heads` against a second code path: the attention weights
 * `kvscope run` writes to attention.csv for the same tokens, from which the test computes
 * every score itself. Tolerance 2e-6 (attention.csv holds %.9g floats; heads.csv %.6f). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outdir.h"
#include "testutil.h"

enum { HL = 2, HNH = 3, MAXT = 64 };
static const char *const SHAPE[] = {"--layers", "2", "--heads", "3", "--dim", "24", "--ctx", "64"};
static const char *const TEXT = "In the beginning God created the heaven and the earth.";

/* w[layer][head][query][key] from attention.csv of a prefill. */
static double W[HL][HNH][MAXT][MAXT];

static int load_attention(const char *dir) {
    char path[256], line[512];
    snprintf(path, sizeof path, "%s/attention.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int n = 0;
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f)); /* header */
    while (fgets(line, sizeof line, f)) {
        char phase[16];
        int step, l, h, q, k, slot;
        double score, w;
        ck_assert_int_eq(sscanf(line, "%15[^,],%d,%d,%d,%d,%d,%lf,%lf,%d", phase, &step, &l, &h, &q, &k,
                                &score, &w, &slot), 9);
        ck_assert(l < HL && h < HNH && q < MAXT && k < MAXT);
        W[l][h][q][k] = w;
        if (q + 1 > n) n = q + 1;
    }
    fclose(f);
    return n;
}

/* The row of heads.csv for (l, h): prev, induction, sink, entropy. */
static void heads_row(const char *dir, int l, int h, double v[4]) {
    char path[256], line[256];
    snprintf(path, sizeof path, "%s/heads.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "layer,head,prev_token,induction,sink,entropy_bits\n");
    int found = 0, a, b;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "%d,%d,%lf,%lf,%lf,%lf", &a, &b, &v[0], &v[1], &v[2], &v[3]) == 6 && a == l && b == h;
    fclose(f);
    ck_assert_msg(found, "heads.csv has no row for layer %d head %d", l, h);
}

static void run_ok(const char *const *extra, int nextra, const char *const *tail) {
    const char *args[40];
    int n = 0;
    for (int i = 0; tail[i]; i++) args[n++] = tail[i];
    for (int i = 0; i < nextra; i++) args[n++] = extra[i];
    args[n] = NULL;
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
}

START_TEST(test_heads_match_attention_csv) {
    char dir[64], hd[96], rd[96], rd2[96];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(hd, sizeof hd, "%s/heads", dir);
    snprintf(rd, sizeof rd, "%s/run", dir);
    snprintf(rd2, sizeof rd2, "%s/run2", dir);
    const char *heads[] = {"heads", "--prompt", TEXT, "--out", hd, "--len", "20", "--samples", "1",
                           "--quiet", NULL};
    run_ok(SHAPE, 8, heads);
    const char *run[] = {"run", "--prompt", TEXT, "--steps", "0", "--record", "attention", "--out", rd,
                         "--quiet", NULL};
    run_ok(SHAPE, 8, run);
    const int n = load_attention(rd);
    ck_assert_int_eq(n, (int)strlen(TEXT));
    double want[HL][HNH][3];
    for (int l = 0; l < HL; l++)
        for (int h = 0; h < HNH; h++) {
            double p = 0, s = 0, e = 0;
            for (int i = 1; i < n; i++) {
                p += W[l][h][i][i - 1];
                s += W[l][h][i][0];
                for (int j = 0; j <= i; j++)
                    if (W[l][h][i][j] > 0) e -= W[l][h][i][j] * log2(W[l][h][i][j]);
            }
            want[l][h][0] = p / (n - 1), want[l][h][1] = s / (n - 1), want[l][h][2] = e / (n - 1);
        }
    /* the repeated random bytes heads used, through kvscope run */
    char path[256], line[128], ids[1024] = "";
    snprintf(path, sizeof path, "%s/tokens.csv", hd);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        int pos, id;
        if (sscanf(line, "repeat0,%d,%d", &pos, &id) == 2) {
            ck_assert_int_eq(pos, count);
            ck_assert(id >= 32 && id <= 126);
            snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%d", count ? "," : "", id);
            count++;
        }
    }
    fclose(f);
    ck_assert_int_eq(count, 40);
    const char *run2[] = {"run", "--prompt-ids", ids, "--steps", "0", "--record", "attention", "--out",
                          rd2, "--quiet", NULL};
    run_ok(SHAPE, 8, run2);
    ck_assert_int_eq(load_attention(rd2), 40);
    for (int l = 0; l < HL; l++)
        for (int h = 0; h < HNH; h++) {
            double ind = 0, v[4];
            for (int i = 20; i < 40; i++) ind += W[l][h][i][i - 19];
            heads_row(hd, l, h, v);
            const double got[4] = {v[0], v[2], v[3], v[1]}, exp_[4] = {want[l][h][0], want[l][h][1],
                                                                       want[l][h][2], ind / 20};
            static const char *const what[4] = {"prev_token", "sink", "entropy_bits", "induction"};
            for (int k = 0; k < 4; k++)
                ck_assert_msg(fabs(got[k] - exp_[k]) < 2e-6, "layer %d head %d %s: %.6f, from attention.csv %.6f",
                              l, h, what[k], got[k], exp_[k]);
        }
    remove_tree(dir);
}
END_TEST

START_TEST(test_heads_bad_input) {
    char dir[64], out[96], errp[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/h", dir);
    snprintf(errp, sizeof errp, "%s/err", dir);
    const char *args[] = {"heads", "--layers", "1", "--heads", "2", "--dim", "8", "--ctx", "16",
                          "--len", "9", "--prompt", "abc", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, errp), 2);
    char *e = read_file(errp, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strstr(e, "--len twice is more than the context (16 tokens): 9"), "stderr: %s", e);
    free(e);
    ck_assert_int_eq(count_entries(dir), 1);
    remove_tree(dir);
}
END_TEST

Suite *make_heads_suite(void) {
    Suite *s = suite_create("heads");
    TCase *t = tcase_create("scores");
    tcase_set_tags(t, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_heads_match_attention_csv);
    tcase_add_test(t, test_heads_bad_input);
    suite_add_tcase(s, t);
    return s;
}
