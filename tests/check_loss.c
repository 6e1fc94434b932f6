/* check_loss.c — the loss at every position (loss.h) against a second path: the full
 * cache's loss of token p against the logits of one forward pass over tokens 0 .. p−1
 * (no cache kept between positions), within 1e-4 bits (a batched prefill and one-row
 * decode steps round differently); the windows equal to the full cache, bit for bit,
 * while they have evicted nothing; then `kvscope loss` as a user meets it. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "loss.h"
#include "outdir.h"
#include "testutil.h"

enum { LN = 40 };

static Model model;

static void setup(void) {
    Config cfg = tiny_config(2, 2, 16, 48, 256);
    ck_assert_int_eq(model_init_random(&model, &cfg, 11), 0);
}

static void teardown(void) { model_free(&model); }

/* Printable bytes from a fixed seed. */
static void tokens(int *tok, int n) {
    unsigned s = 7;
    for (int i = 0; i < n; i++) tok[i] = 32 + (int)((s = s * 1103515245u + 12345u) >> 16) % 95;
}

START_TEST(test_full_equals_recompute) {
    int tok[LN];
    tokens(tok, LN);
    LossReport r;
    ck_assert_int_eq(loss_measure(&model, tok, LN, 12, 2, &r), 0);
    ck_assert(isnan(r.bits[0]));
    double worst = 0.0;
    for (int p = 1; p < LN; p++) {
        Generator g;
        ck_assert_int_eq(generator_init(&g, &model, GEN_RECOMPUTE), 0);
        ck_assert_int_eq(generator_prefill(&g, tok, p, NULL), 0); /* one pass over 0 .. p−1 */
        double mx = g.logits[0], s = 0.0;
        for (int v = 1; v < 256; v++) mx = fmax(mx, g.logits[v]);
        for (int v = 0; v < 256; v++) s += exp(g.logits[v] - mx);
        const double want = (log(s) + mx - g.logits[tok[p]]) / M_LN2;
        worst = fmax(worst, fabs(r.bits[(size_t)LOSS_FULL * LN + p] - want));
        generator_free(&g);
    }
    ck_assert_msg(worst < 1e-4, "full cache vs one forward per position: worst %.3g bits", worst);
    loss_report_free(&r);
}
END_TEST

/* A window evicts first when it decodes position W: until then (the predictions of
 * tokens 1 .. W) both windows hold what the full cache holds, and after it they differ. */
START_TEST(test_windows_until_they_evict) {
    int tok[LN];
    tokens(tok, LN);
    LossReport r;
    const int W = 12;
    ck_assert_int_eq(loss_measure(&model, tok, LN, W, 3, &r), 0);
    const double *full = r.bits, *sinks = r.bits + LN, *evict = r.bits + 2 * LN;
    ck_assert_mem_eq(full + 1, sinks + 1, W * sizeof *full);
    ck_assert_mem_eq(full + 1, evict + 1, W * sizeof *full);
    int differ_s = 0, differ_e = 0, differ_se = 0;
    for (int p = W + 1; p < LN; p++) {
        differ_s += full[p] != sinks[p];
        differ_e += full[p] != evict[p];
        differ_se += sinks[p] != evict[p];
    }
    ck_assert_int_eq(differ_s, LN - W - 1);
    ck_assert_int_eq(differ_e, LN - W - 1);
    ck_assert_int_gt(differ_se, 0);
    double m = 0.0; /* the mean past the window, by hand */
    for (int p = W + 1; p < LN; p++) m += evict[p];
    ck_assert_double_eq_tol(loss_mean(&r, LOSS_EVICT, W + 1), m / (LN - W - 1), 1e-12);
    loss_report_free(&r);
}
END_TEST

START_TEST(test_window_past_the_text) {
    int tok[LN];
    tokens(tok, LN);
    LossReport r;
    ck_assert_int_eq(loss_measure(&model, tok, LN, LN, 4, &r), 0);
    ck_assert_mem_eq(r.bits + 1, r.bits + LN + 1, (LN - 1) * sizeof *r.bits);
    ck_assert_mem_eq(r.bits + 1, r.bits + 2 * LN + 1, (LN - 1) * sizeof *r.bits);
    ck_assert(isnan(loss_mean(&r, LOSS_FULL, LN + 1)));
    loss_report_free(&r);
    ck_assert_int_eq(loss_measure(&model, tok, LN, 8, 8, &r), -2); /* sinks fill the window */
    ck_assert_int_eq(loss_measure(&model, tok, 49, 8, 2, &r), -2); /* past the context */
}
END_TEST

/* ---- bin/kvscope loss ---------------------------------------------------------- */

static const char *const SHAPE[] = {"--layers", "2", "--heads", "2", "--dim", "16", "--ctx", "48"};

/* Each bad input: exit 2, one line naming the value, and no output folder. */
START_TEST(test_loss_bad_input) {
    char dir[64], out[96], ef[96], txt[96], empty[96], nul[96];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(ef, sizeof ef, "%s/err", dir);
    snprintf(txt, sizeof txt, "%s/t.txt", dir);
    snprintf(empty, sizeof empty, "%s/e.txt", dir);
    snprintf(nul, sizeof nul, "%s/n.txt", dir);
    ck_assert_int_eq(write_text_file(txt, "In the beginning God created the heaven and the earth."), 0);
    ck_assert_int_eq(write_text_file(empty, ""), 0);
    FILE *f = fopen(nul, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fwrite("ab\0cd", 1, 5, f), 5);
    ck_assert_int_eq(fclose(f), 0);
    static const struct {
        const char *opt, *val, *opt2, *val2, *says;
    } bad[] = {
        {"--window", "8", "--sink", "8", "--sink must be fewer than the window (8 tokens): 8\n"},
        /* --sinks, the old name, sets the same number */
        {"--window", "8", "--sinks", "9", "--sink must be fewer than the window (8 tokens): 9\n"},
        {"--window", "1", NULL, NULL, "--window"},
        {"--text", "/nonexistent/t.txt", NULL, NULL, "/nonexistent/t.txt"},
        {"--text", "E", NULL, NULL, "--text is empty: "},
        {"--text", "N", NULL, NULL, "--text holds a NUL byte: "},
        {"--text", NULL, NULL, NULL, "loss needs a text: --text FILE\n"},
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        const char *args[32];
        int n = 0;
        args[n++] = "loss";
        for (int k = 0; k < 8; k++) args[n++] = SHAPE[k];
        args[n++] = "--out", args[n++] = out;
        const char *v = bad[i].val;
        if (v && strcmp(v, "E") == 0) v = empty;
        if (v && strcmp(v, "N") == 0) v = nul;
        if (strcmp(bad[i].opt, "--text") != 0) args[n++] = "--text", args[n++] = txt;
        if (v) args[n++] = bad[i].opt, args[n++] = v;
        if (bad[i].opt2) args[n++] = bad[i].opt2, args[n++] = bad[i].val2;
        args[n] = NULL;
        ck_assert_int_eq(run_kvscope(args, NULL, ef), 2);
        char *e = read_file(ef, NULL);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(strstr(e, bad[i].says) && strchr(e, '\n') == e + strlen(e) - 1, "case %d: %s", i,
                      e);
        free(e);
        ck_assert_int_eq(count_entries(dir), 4); /* the three texts and err: no o/ */
    }
    remove_tree(dir);
}
END_TEST

/* A model with a start token reads the text after it: loss.csv's position 1 is the
 * text's first byte, and the means file has the three rows. */
START_TEST(test_loss_start_token) {
    char dir[64], m[96], out[96], txt[96], path[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(m, sizeof m, "%s/m", dir);
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(txt, sizeof txt, "%s/t.txt", dir);
    Config cfg = tiny_config(2, 2, 16, 48, 256);
    cfg.bos = 1;
    ck_assert_int_eq(make_model_folder(m, &cfg, 3), 0);
    ck_assert_int_eq(write_text_file(txt, "In the beginning God created the heaven and the earth. "
                                          "And the earth was without form, and void."), 0);
    const char *args[] = {"loss", "--model", m, "--text", txt, "--window", "12", "--out", out,
                          "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    snprintf(path, sizeof path, "%s/loss.csv", out);
    char *csv = read_file(path, NULL);
    ck_assert_ptr_nonnull(csv);
    ck_assert_msg(strncmp(csv, "position,token_id,full_bits,sinks_bits,evict_bits\n1,73,", 55) == 0, "%s",
                  csv);
    int rows = 0;
    for (const char *c = csv; *c; c++) rows += *c == '\n';
    ck_assert_int_eq(rows, 48); /* the header and positions 1 .. 47: cut to the context */
    free(csv);
    snprintf(path, sizeof path, "%s/loss_means.csv", out);
    csv = read_file(path, NULL);
    ck_assert_ptr_nonnull(csv);
    ck_assert_msg(strstr(csv, "\nsinks,12,1,47,") && strstr(csv, "\nevict,12,0,47,"), "%s", csv);
    free(csv);
    snprintf(path, sizeof path, "%s/loss.png", out);
    Png png;
    ck_assert_int_eq(png_load(path, &png), 0);
    ck_assert_int_eq(png.w, 1600);
    free(png.px);
    remove_tree(dir);
}
END_TEST

/* The chart's title says what the model is, never the folder it came from. */
START_TEST(test_loss_title_names_no_path) {
    char dir[64], m[96], out[96], txt[96], cmd[512];
    if (system("command -v pdftotext > /dev/null 2>&1") != 0) {
        TEST_SKIPPED("pdftotext missing (poppler-utils): the title cannot be read back");
        return;
    }
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(m, sizeof m, "%s/mymodel", dir);
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(txt, sizeof txt, "%s/t.txt", dir);
    Config cfg = tiny_config(2, 2, 16, 48, 256);
    cfg.bos = 1;
    ck_assert_int_eq(make_model_folder(m, &cfg, 3), 0);
    ck_assert_int_eq(write_text_file(txt, "In the beginning God created the heaven and the earth."), 0);
    const char *args[] = {"loss", "--model", m, "--text", txt, "--window", "12", "--out", out,
                          "--quiet", NULL};
    ck_assert_int_eq(setenv("KVSCOPE_KEEP_PDF", "1", 1), 0);
    const int rc = run_kvscope(args, NULL, NULL);
    unsetenv("KVSCOPE_KEEP_PDF");
    ck_assert_int_eq(rc, 0);
    snprintf(cmd, sizeof cmd, "pdftotext '%s/loss.pdf' '%s/loss.txt'", out, dir);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "%s/loss.txt", dir);
    char *t = read_file(cmd, NULL);
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(strstr(t, "the byte-level model") && !strstr(t, "mymodel"), "%s", t);
    free(t);
    remove_tree(dir);
}
END_TEST

Suite *make_loss_suite(void) {
    Suite *s = suite_create("loss");
    TCase *u = tcase_create("unit");
    tcase_add_checked_fixture(u, setup, teardown);
    tcase_set_timeout(u, 30);
    tcase_add_test(u, test_full_equals_recompute);
    tcase_add_test(u, test_windows_until_they_evict);
    tcase_add_test(u, test_window_past_the_text);
    suite_add_tcase(s, u);
    TCase *b = tcase_create("bin");
    tcase_set_tags(b, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(b, 60);
    tcase_add_test(b, test_loss_bad_input);
    tcase_add_test(b, test_loss_start_token);
    tcase_add_test(b, test_loss_title_names_no_path);
    suite_add_tcase(s, b);
    return s;
}
