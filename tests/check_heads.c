/* check_heads.c — `kvscope heads` against a second code path: the attention weights
 * `kvscope run` writes to attention.csv for the same tokens, from which the test computes
 * every score itself, at two copy lengths, with and without a start token. Tolerance 2e-6 (attention.csv holds %.9g floats; heads.csv %.6f). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heads.h"
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

/* The row of heads.csv for (l, h): prev, before, after, induction, sink, [sink_no_start],
 * entropy; *ns set when the file has sink_no_start. */
static void heads_row(const char *dir, int l, int h, double v[7], int *ns) {
    char path[256], line[256];
    snprintf(path, sizeof path, "%s/heads.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    *ns = strstr(line, "sink_no_start") != NULL;
    ck_assert_str_eq(line, *ns ? "layer,head,prev_token,prev_before,prev_after,induction,sink,"
                                 "sink_no_start,entropy_bits\n"
                               : "layer,head,prev_token,prev_before,prev_after,induction,sink,"
                                 "entropy_bits\n");
    int found = 0, a, b, k;
    while (!found && fgets(line, sizeof line, f)) {
        k = sscanf(line, "%d,%d,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &a, &b, &v[0], &v[1], &v[2], &v[3], &v[4],
                   &v[5], &v[6]);
        found = k == (*ns ? 9 : 8) && a == l && b == h;
    }
    fclose(f);
    if (!*ns) v[6] = v[5], v[5] = NAN;
    ck_assert_msg(found, "heads.csv has no row for layer %d head %d", l, h);
}

/* induction_heads.csv's score of (l, h) at copy length R. */
static double long_row(const char *dir, int l, int h, int R) {
    char path[256], line[128];
    snprintf(path, sizeof path, "%s/induction_heads.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "layer,head,copy_len,induction\n");
    int a, b, r;
    double v = NAN, x;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%d,%d,%d,%lf", &a, &b, &r, &x) == 4 && a == l && b == h && r == R) v = x;
    fclose(f);
    ck_assert_msg(v == v, "induction_heads.csv has no row for %d.%d at %d", l, h, R);
    return v;
}

static void run_ok(const char *const *extra, int nextra, const char *const *tail) {
    const char *args[40];
    int n = 0;
    for (int i = 0; tail[i]; i++) args[n++] = tail[i];
    for (int i = 0; i < nextra; i++) args[n++] = extra[i];
    args[n] = NULL;
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
}

/* The ids of one sequence of heads' tokens.csv, "1,2,3" into ids; returns the count. */
static int sequence_ids(const char *dir, const char *name, char *ids, size_t size) {
    char path[256], line[128], fmt[64];
    snprintf(path, sizeof path, "%s/tokens.csv", dir);
    snprintf(fmt, sizeof fmt, "%s,%%d,%%d", name);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int count = 0, pos, id;
    ids[0] = '\0';
    while (fgets(line, sizeof line, f))
        if (sscanf(line, fmt, &pos, &id) == 2 && line[strlen(name)] == ',') {
            ck_assert_int_eq(pos, count);
            snprintf(ids + strlen(ids), size - strlen(ids), "%s%d", count ? "," : "", id);
            count++;
        }
    fclose(f);
    return count;
}

/* prev, before, after, sink, entropy of every head from W over n queries. */
static void text_scores(int n, int split, double want[HL][HNH][5]) {
    for (int l = 0; l < HL; l++)
        for (int h = 0; h < HNH; h++) {
            double p = 0, pb = 0, s = 0, e = 0;
            for (int i = 1; i < n; i++) {
                p += W[l][h][i][i - 1];
                if (i < split) pb += W[l][h][i][i - 1];
                s += W[l][h][i][0];
                for (int j = 0; j <= i; j++)
                    if (W[l][h][i][j] > 0) e -= W[l][h][i][j] * log2(W[l][h][i][j]);
            }
            want[l][h][0] = p / (n - 1), want[l][h][1] = pb / (split - 1);
            want[l][h][2] = (p - pb) / (n - split), want[l][h][3] = s / (n - 1);
            want[l][h][4] = e / (n - 1);
        }
}

/* The induction score of every head on the sequence in W: second copy from `first`. */
static void induction_scores(int first, int len, int R, double ind[HL][HNH]) {
    for (int l = 0; l < HL; l++)
        for (int h = 0; h < HNH; h++) {
            double v = 0;
            for (int i = first; i < len; i++) v += W[l][h][i][i - R + 1];
            ind[l][h] = v / R;
        }
}

static void assert_close(double got, double want, const char *what, int l, int h) {
    ck_assert_msg(fabs(got - want) < 2e-6, "layer %d head %d %s: %.6f, from attention.csv %.6f", l, h,
                  what, got, want);
}

/* Every score of heads.csv and induction_heads.csv, at two copy lengths, against the
 * attention weights kvscope run writes for the same tokens. */
START_TEST(test_heads_match_attention_csv) {
    char dir[64], hd[96], rd[96], ids[1024];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(hd, sizeof hd, "%s/heads", dir);
    snprintf(rd, sizeof rd, "%s/run", dir);
    const char *heads[] = {"heads", "--prompt", TEXT, "--out", hd, "--len", "20,12", "--samples", "1",
                           "--split", "30", "--quiet", NULL};
    run_ok(SHAPE, 8, heads);
    const char *run[] = {"run", "--prompt", TEXT, "--steps", "0", "--record", "attention", "--out", rd,
                         "--quiet", NULL};
    run_ok(SHAPE, 8, run);
    const int n = load_attention(rd);
    ck_assert_int_eq(n, (int)strlen(TEXT));
    double want[HL][HNH][5], ind[2][HL][HNH];
    text_scores(n, 30, want);
    static const int lens[2] = {20, 12};
    for (int k = 0; k < 2; k++) { /* the repeated random bytes heads used, through kvscope run */
        char name[32];
        snprintf(name, sizeof name, "copy%d_0", lens[k]);
        ck_assert_int_eq(sequence_ids(hd, name, ids, sizeof ids), 2 * lens[k]);
        const char *run2[] = {"run", "--prompt-ids", ids, "--steps", "0", "--record", "attention",
                              "--out", rd, "--quiet", NULL};
        run_ok(SHAPE, 8, run2);
        ck_assert_int_eq(load_attention(rd), 2 * lens[k]);
        induction_scores(lens[k], 2 * lens[k], lens[k], ind[k]);
    }
    for (int l = 0; l < HL; l++)
        for (int h = 0; h < HNH; h++) {
            double v[7];
            int ns;
            heads_row(hd, l, h, v, &ns);
            ck_assert(!ns); /* the built-in model has no start token */
            assert_close(v[0], want[l][h][0], "prev_token", l, h);
            assert_close(v[1], want[l][h][1], "prev_before", l, h);
            assert_close(v[2], want[l][h][2], "prev_after", l, h);
            assert_close(v[4], want[l][h][3], "sink", l, h);
            assert_close(v[6], want[l][h][4], "entropy_bits", l, h);
            assert_close(v[3], fmin(ind[0][l][h], ind[1][l][h]), "induction (the lowest)", l, h);
            for (int k = 0; k < 2; k++)
                assert_close(long_row(hd, l, h, lens[k]), ind[k][l][h], "induction at a length", l, h);
        }
    remove_tree(dir);
}
END_TEST

/* induction.csv's loss on each copy against kvscope loss on the same bytes: the mean of
 * loss.csv's full-cache losses over the first copy (positions 1 .. R−1) and the second
 * (R .. 2R−1). Tolerance 1e-4 bits (induction.csv prints 4 decimals). */
START_TEST(test_heads_bits_match_loss) {
    char dir[64], hd[96], ld[96], txt[96], path[160], line[256], ids[1024];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(hd, sizeof hd, "%s/heads", dir);
    snprintf(ld, sizeof ld, "%s/loss", dir);
    snprintf(txt, sizeof txt, "%s/copy.txt", dir);
    const char *heads[] = {"heads", "--prompt", TEXT, "--out", hd, "--len", "16", "--samples", "1",
                           "--quiet", NULL};
    run_ok(SHAPE, 8, heads);
    ck_assert_int_eq(sequence_ids(hd, "copy16_0", ids, sizeof ids), 32);
    char bytes[40];
    int n = 0;
    for (char *p = ids; *p; n++) {
        bytes[n] = (char)strtol(p, &p, 10);
        if (*p == ',') p++;
    }
    bytes[n] = '\0';
    ck_assert_int_eq(write_text_file(txt, bytes), 0);
    const char *loss[] = {"loss", "--text", txt, "--window", "64", "--sink", "1", "--out", ld, "--quiet",
                          NULL};
    run_ok(SHAPE, 8, loss);
    snprintf(path, sizeof path, "%s/loss.csv", ld);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    double sum[2] = {0, 0}, b, x;
    int cnt[2] = {0, 0}, pos, id;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%d,%d,%lf,%lf", &pos, &id, &b, &x) == 4) sum[pos >= 16] += b, cnt[pos >= 16]++;
    fclose(f);
    ck_assert_int_eq(cnt[0], 15);
    ck_assert_int_eq(cnt[1], 16);
    snprintf(path, sizeof path, "%s/induction.csv", hd);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "copy_len,best_layer,best_head,best_induction,first_bits,second_bits\n");
    int R, bl, bh;
    double bi, first, second;
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_int_eq(sscanf(line, "%d,%d,%d,%lf,%lf,%lf", &R, &bl, &bh, &bi, &first, &second), 6);
    fclose(f);
    ck_assert_int_eq(R, 16);
    ck_assert_double_eq_tol(first, sum[0] / 15, 1e-4);
    ck_assert_double_eq_tol(second, sum[1] / 16, 1e-4);
    ck_assert_double_eq_tol(bi, long_row(hd, bl, bh, 16), 1e-6);
    remove_tree(dir);
}
END_TEST

/* A model with a start token: the text and every random sequence begin with it, and
 * sink_no_start is the sink of the same weights reading the text without it (the same
 * model exported without add_bos_token, through kvscope run). */
START_TEST(test_heads_start_token) {
    char dir[64], ms[96], m0[96], hd[96], rd[96], ids[1024];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(ms, sizeof ms, "%s/ms", dir);
    snprintf(m0, sizeof m0, "%s/m0", dir);
    snprintf(hd, sizeof hd, "%s/heads", dir);
    snprintf(rd, sizeof rd, "%s/run", dir);
    Config cfg = tiny_config(HL, HNH, 24, 64, 256);
    ck_assert_int_eq(make_model_folder(m0, &cfg, 5), 0);
    cfg.bos = 3;
    ck_assert_int_eq(make_model_folder(ms, &cfg, 5), 0);
    const char *heads[] = {"heads", "--model", ms, "--prompt", TEXT, "--out", hd, "--len", "16",
                           "--samples", "1", "--quiet", NULL};
    run_ok(NULL, 0, heads);
    ck_assert_int_eq(sequence_ids(hd, "text", ids, sizeof ids), (int)strlen(TEXT) + 1);
    ck_assert_msg(strncmp(ids, "3,73,", 5) == 0, "text: %s", ids);
    ck_assert_int_eq(sequence_ids(hd, "copy16_0", ids, sizeof ids), 33);
    ck_assert_msg(strncmp(ids, "3,", 2) == 0, "copy16_0: %s", ids);
    const char *run[] = {"run", "--model", ms, "--prompt-ids", ids, "--steps", "0", "--record",
                         "attention", "--out", rd, "--quiet", NULL};
    run_ok(NULL, 0, run);
    ck_assert_int_eq(load_attention(rd), 33);
    double ind[HL][HNH], want[HL][HNH][5];
    induction_scores(17, 33, 16, ind);
    const char *run0[] = {"run", "--model", m0, "--prompt", TEXT, "--steps", "0", "--record",
                          "attention", "--out", rd, "--quiet", NULL};
    run_ok(NULL, 0, run0);
    const int n = load_attention(rd);
    ck_assert_int_eq(n, (int)strlen(TEXT));
    text_scores(n, n / 2, want);
    for (int l = 0; l < HL; l++)
        for (int h = 0; h < HNH; h++) {
            double v[7];
            int ns;
            heads_row(hd, l, h, v, &ns);
            ck_assert(ns);
            assert_close(v[3], ind[l][h], "induction after the start token", l, h);
            assert_close(v[5], want[l][h][3], "sink_no_start", l, h);
        }
    remove_tree(dir);
}
END_TEST

/* A model whose c_attn is all zeros has q = k = 0 in every head: every score is 0 and the
 * query at position i spreads 1/(i + 1) over its keys. Every score then has a closed
 * form: prev_token and sink are means of 1/(i + 1), entropy of log2(i + 1), induction at
 * copy length R the mean of 1/(i + 1) over the second copy. Tolerance 1e-6. */
static double mean_inv(int from, int to) { /* mean of 1/(i + 1) over i = from .. to − 1 */
    double s = 0;
    for (int i = from; i < to; i++) s += 1.0 / (i + 1);
    return s / (to - from);
}

START_TEST(test_heads_uniform_closed_form) {
    Config cfg = tiny_config(2, 2, 8, 64, 256);
    cfg.bos = _i ? 5 : -1;
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 3), 0);
    TensorSpec specs[64];
    const int ns = model_tensor_specs(&cfg, specs);
    for (int k = 0; k < ns; k++)
        if (strstr(specs[k].name, "attn.c_attn"))
            memset(m.w.blob + specs[k].offset, 0, specs[k].numel * sizeof(float));
    model_refresh_panels(&m);
    int text[40];
    const int off = cfg.bos >= 0, n = 40;
    for (int i = 0; i < n; i++) text[i] = 'a' + i % 26;
    if (off) text[0] = cfg.bos;
    const int lens[2] = {8, 12};
    const HeadsSpec sp = {.text = text, .n = n, .split = 25, .lens = lens, .nlens = 2, .S = 2, .seed = 9,
                          .bos = cfg.bos};
    HeadsReport r;
    ck_assert_int_eq(heads_measure(&m, &sp, &r), 0);
    double ent = 0;
    for (int i = 1; i < n; i++) ent += log2(i + 1.0);
    for (int k = 0; k < cfg.L * cfg.NH; k++) {
        const HeadScores *h = &r.h[k];
        ck_assert_double_eq_tol(h->prev_token, mean_inv(1, n), 1e-6);
        ck_assert_double_eq_tol(h->prev_before, mean_inv(1, 25), 1e-6);
        ck_assert_double_eq_tol(h->prev_after, mean_inv(25, n), 1e-6);
        ck_assert_double_eq_tol(h->sink, mean_inv(1, n), 1e-6);
        ck_assert_double_eq_tol(h->entropy, ent / (n - 1), 1e-5);
        if (off) ck_assert_double_eq_tol(h->sink_no_start, mean_inv(1, n - 1), 1e-6);
        else ck_assert(isnan(h->sink_no_start));
        for (int li = 0; li < 2; li++) {
            const int R = lens[li];
            ck_assert_double_eq_tol(r.ind[(size_t)li * cfg.L * cfg.NH + k], mean_inv(off + R, off + 2 * R), 1e-6);
        }
        ck_assert_double_eq_tol(h->induction, mean_inv(off + 12, off + 24), 1e-6); /* the lower */
    }
    const int *x = r.rep; /* length 8's two sequences, then length 12's */
    for (int li = 0; li < 2; li++)
        for (int s = 0; s < 2; s++, x += 2 * lens[li] + off) {
            if (off) ck_assert_int_eq(x[0], 5);
            for (int i = 0; i < lens[li]; i++) ck_assert_int_eq(x[off + i], x[off + lens[li] + i]);
        }
    heads_report_free(&r);
    model_free(&m);
}
END_TEST

START_TEST(test_heads_bad_input) {
    char dir[64], out[96], errp[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/h", dir);
    snprintf(errp, sizeof errp, "%s/err", dir);
    static const char *const bad[][2] = {
        {"--len", "9"},      {"--len", "4,9"},     {"--len", "1"},
        {"--split", "3"},    {"--split", "1"},     {"--prompt", "a"},
    };
    static const char *const says[] = {
        "--len twice is more than the context (16 tokens): 9\n",
        "--len twice is more than the context (16 tokens): 9\n",
        "--len", "--split must fall inside the text (3 tokens): 3\n", "--split",
        "the text needs 2 tokens or more: 1\n",
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        const char *args[] = {"heads", "--layers", "1", "--heads", "2", "--dim", "8", "--ctx", "16",
                              "--prompt", "abc", bad[i][0], bad[i][1], "--out", out, NULL};
        ck_assert_int_eq(run_kvscope(args, NULL, errp), 2);
        char *e = read_file(errp, NULL);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(strstr(e, says[i]) && strchr(e, '\n') == e + strlen(e) - 1, "%s %s: %s",
                      bad[i][0], bad[i][1], e);
        free(e);
        ck_assert_int_eq(count_entries(dir), 1);
    }
    remove_tree(dir);
}
END_TEST

Suite *make_heads_suite(void) {
    Suite *s = suite_create("heads");
    TCase *u = tcase_create("closed_form");
    tcase_add_loop_test(u, test_heads_uniform_closed_form, 0, 2); /* without, with a start token */
    suite_add_tcase(s, u);
    TCase *t = tcase_create("scores");
    tcase_set_tags(t, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(t, 60);
    tcase_add_test(t, test_heads_match_attention_csv);
    tcase_add_test(t, test_heads_bits_match_loss);
    tcase_add_test(t, test_heads_start_token);
    tcase_add_test(t, test_heads_bad_input);
    suite_add_tcase(s, t);
    return s;
}
