/* check_copying.c — the copying measure (copying.h): sentences cut from a text worked out
 * by hand; the share equal on hand-counted cases; what each cache writes against a
 * second path (a generator without a cache re-run from the whole prompt at every step,
 * and the window that evicts nothing equal to the full cache, bit for bit); then
 * `kvscope copying` as a user meets it: its rows and summary agree, bad input is one line
 * and exit 2. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copying.h"
#include "generate.h"
#include "outdir.h"
#include "testutil.h"

static const char *sent(const Sentences *s, int i) { return s->text + s->off[i]; }

/* Whitespace runs become one space; a sentence ends after . ! ? and a space or the end
 * (not inside "3.14" or "e.g.x"), or after 。; the length bounds are inclusive. */
START_TEST(test_sentences_by_hand) {
    const char *t = "  Hello  world.\nPi is 3.14 today!  Short.\tWhy\n\nnot? 我看见了猫。Last one";
    Sentences s;
    ck_assert_int_eq(copy_sentences(t, strlen(t), 1, 100, 100, &s), 0);
    ck_assert_int_eq(s.n, 5);
    ck_assert_int_eq(s.found, 5);
    ck_assert_str_eq(sent(&s, 0), "Hello world.");
    ck_assert_str_eq(sent(&s, 1), "Pi is 3.14 today!");
    ck_assert_str_eq(sent(&s, 2), "Short.");
    ck_assert_str_eq(sent(&s, 3), "Why not?");
    ck_assert_str_eq(sent(&s, 4), "我看见了猫。");
    ck_assert_int_eq(s.len[4], 18); /* six characters of three bytes */
    copy_sentences_free(&s);
    /* 8..12 bytes: "Hello world." (12) and "Why not?" (8) only */
    ck_assert_int_eq(copy_sentences(t, strlen(t), 8, 12, 100, &s), 0);
    ck_assert_int_eq(s.n, 2);
    ck_assert_str_eq(sent(&s, 0), "Hello world.");
    ck_assert_str_eq(sent(&s, 1), "Why not?");
    copy_sentences_free(&s);
    ck_assert_int_eq(copy_sentences(t, strlen(t), 50, 60, 100, &s), 0);
    ck_assert_int_eq(s.n, 0);
    copy_sentences_free(&s);
}
END_TEST

/* Ten sentences, three kept: numbers 0, 3 and 6 (⌊i·10/3⌋). */
START_TEST(test_sentences_spread) {
    char t[400] = "";
    for (int i = 0; i < 10; i++) {
        char one[40];
        snprintf(one, sizeof one, "Sentence number %d. ", i);
        strcat(t, one);
    }
    Sentences s;
    ck_assert_int_eq(copy_sentences(t, strlen(t), 1, 100, 3, &s), 0);
    ck_assert_int_eq(s.found, 10);
    ck_assert_int_eq(s.n, 3);
    ck_assert_str_eq(sent(&s, 0), "Sentence number 0.");
    ck_assert_str_eq(sent(&s, 1), "Sentence number 3.");
    ck_assert_str_eq(sent(&s, 2), "Sentence number 6.");
    copy_sentences_free(&s);
}
END_TEST

START_TEST(test_share_by_hand) {
    ck_assert_double_eq(copy_share((const unsigned char *)"abcd", (const unsigned char *)"abxd", 4), 0.75);
    ck_assert_double_eq(copy_share((const unsigned char *)"abcd", (const unsigned char *)"bcda", 4), 0.0);
    ck_assert_double_eq(copy_share((const unsigned char *)"aaaaaaaaaa", (const unsigned char *)"aaaaaaaaab", 10), 0.9);
    ck_assert_double_eq(copy_share((const unsigned char *)"", (const unsigned char *)"", 0), 0.0);
}
END_TEST

/* The report against a generator without a cache that runs the whole sequence again at
 * every step: the same greedy bytes (within a tie: none here), the share counted again;
 * a window that never evicts writes what the full cache writes. */
START_TEST(test_measure_against_recompute) {
    Config cfg = tiny_config(2, 2, 16, 96, 256);
    cfg.bos = 1;
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 5), 0);
    const char *t = "The cat sat on the mat and looked at the rain. Alice went to Paris in May.";
    Sentences s;
    ck_assert_int_eq(copy_sentences(t, strlen(t), 10, 60, 10, &s), 0);
    ck_assert_int_eq(s.n, 2);
    for (int big = 0; big < 2; big++) {
        const CopySpec spec = {.cue = 5, .window = 12, .kv_window = big ? 96 : 8, .sinks = 1};
        CopyReport r;
        ck_assert_int_eq(copy_measure(&m, &s, &spec, &r), 0);
        for (int i = 0; i < s.n; i++) {
            int tok[128];
            const int T = copy_prompt(&m, sent(&s, i), s.len[i], spec.cue, tok);
            ck_assert_int_eq(T, 1 + s.len[i] + 1 + spec.cue);
            ck_assert_int_eq(tok[0], 1);
            ck_assert_int_eq(tok[1 + s.len[i]], ' ');
            ck_assert_int_eq(memcmp(&tok[2 + s.len[i]], &tok[1], sizeof(int) * spec.cue), 0);
            unsigned char want[16];
            Generator g;
            ck_assert_int_eq(generator_init(&g, &m, GEN_RECOMPUTE), 0);
            ck_assert_int_eq(generator_prefill(&g, tok, T, NULL), 0);
            for (int j = 0; j < spec.window; j++) {
                want[j] = (unsigned char)generator_argmax(&g);
                if (j + 1 < spec.window) ck_assert_int_eq(generator_decode(&g, want[j], j + 1, NULL), 0);
            }
            generator_free(&g);
            const unsigned char *full = r.written + ((size_t)COPY_FULL * s.n + i) * spec.window;
            ck_assert_int_eq(r.written_n[i], spec.window);
            ck_assert_int_eq(memcmp(full, want, (size_t)spec.window), 0);
            int eq = 0;
            for (int j = 0; j < spec.window; j++) eq += want[j] == (unsigned char)sent(&s, i)[spec.cue + j];
            ck_assert_double_eq_tol(r.share[(size_t)COPY_FULL * s.n + i], eq / 12.0, 1e-12);
            const unsigned char *win = r.written + ((size_t)COPY_WINDOW * s.n + i) * spec.window;
            if (big) ck_assert_int_eq(memcmp(win, full, (size_t)spec.window), 0);
        }
        double mean;
        int c = copy_count(&r, COPY_FULL, &mean);
        ck_assert_int_eq(c, (r.share[0] >= 0.9) + (r.share[1] >= 0.9));
        ck_assert_double_eq_tol(mean, (r.share[0] + r.share[1]) / 2, 1e-12);
        copy_report_free(&r);
    }
    copy_sentences_free(&s);
    model_free(&m);
}
END_TEST

/* A sentence shorter than cue + window: only its own bytes are written and compared. */
START_TEST(test_measure_short_sentence) {
    Config cfg = tiny_config(1, 2, 16, 64, 256);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 2), 0);
    const char *t = "Tiny one here.";
    Sentences s;
    ck_assert_int_eq(copy_sentences(t, strlen(t), 5, 60, 10, &s), 0);
    const CopySpec spec = {.cue = 4, .window = 40, .kv_window = 8, .sinks = 0};
    CopyReport r;
    ck_assert_int_eq(copy_measure(&m, &s, &spec, &r), 0);
    ck_assert_int_eq(r.written_n[0], 10);
    copy_report_free(&r);
    copy_sentences_free(&s);
    model_free(&m);
}
END_TEST

/* ---- kvscope copying ---------------------------------------------------------------------- */

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* Rows, summary and histogram agree: each sentence in one row, the copied count of the
 * summary the rows' copied column summed, the histogram's bins summing to the sentences. */
START_TEST(test_copying_command) {
    char dir[64], m[96], out[96], txt[96], path[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(m, sizeof m, "%s/m", dir);
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(txt, sizeof txt, "%s/t.txt", dir);
    Config cfg = tiny_config(2, 2, 16, 128, 256);
    cfg.bos = 1;
    ck_assert_int_eq(make_model_folder(m, &cfg, 3), 0);
    ck_assert_int_eq(write_text_file(txt, "In the beginning God created the heaven and the earth. "
                                          "And the earth was without form, and void. And darkness "
                                          "was upon the face of the deep, said he, \"quoted\"."), 0);
    const char *args[] = {"copying", "--model", m, "--text", txt, "--min-len", "20", "--max-len", "80",
                          "--cue", "8", "--window", "20", "--kv-window", "12", "--out", out, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    snprintf(path, sizeof path, "%s/copying.csv", out);
    char *csv = read_file(path, NULL);
    ck_assert_ptr_nonnull(csv);
    ck_assert_msg(strncmp(csv, "index,sentence,bytes,want,full_written,full_share,full_copied,", 62) == 0,
                  "%s", csv);
    ck_assert_msg(strstr(csv, "\n0,In the beginning God created the heaven and the earth.,54,eginning God created,"),
                  "%s", csv);
    ck_assert_msg(strstr(csv, "\"And darkness was upon the face of the deep, said he, \"\"quoted\"\".\""), "%s", csv);
    free(csv);
    snprintf(path, sizeof path, "%s/copying_summary.csv", out);
    csv = read_file(path, NULL);
    ck_assert_ptr_nonnull(csv);
    ck_assert_msg(strstr(csv, "\nfull,0,0,3,") && strstr(csv, "\nforgetful,0,0,3,") &&
                  strstr(csv, "\nwindow,12,1,3,"), "%s", csv);
    free(csv);
    snprintf(path, sizeof path, "%s/copying_hist.csv", out);
    csv = read_file(path, NULL);
    ck_assert_ptr_nonnull(csv);
    ck_assert_int_eq(count_lines(csv), 11);
    int sum[3] = {0, 0, 0};
    for (const char *l = strchr(csv, '\n') + 1; *l; l = strchr(l, '\n') + 1) {
        int lo, hi, a, b, c;
        ck_assert_int_eq(sscanf(l, "%d,%d,%d,%d,%d", &lo, &hi, &a, &b, &c), 5);
        sum[0] += a, sum[1] += b, sum[2] += c;
    }
    ck_assert_int_eq(sum[0], 3);
    ck_assert_int_eq(sum[1], 3);
    ck_assert_int_eq(sum[2], 3);
    free(csv);
    snprintf(path, sizeof path, "%s/copying.png", out);
    Png png;
    ck_assert_int_eq(png_load(path, &png), 0);
    ck_assert_int_eq(png.w, 1600);
    free(png.px);
    remove_tree(dir);
}
END_TEST

/* Each bad value: exit 2, one line naming it, no output folder. */
START_TEST(test_copying_bad_input) {
    char dir[64], m[96], out[96], txt[96], none[96], se[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(m, sizeof m, "%s/m", dir);
    snprintf(out, sizeof out, "%s/o", dir);
    snprintf(txt, sizeof txt, "%s/t.txt", dir);
    snprintf(none, sizeof none, "%s/none.txt", dir);
    snprintf(se, sizeof se, "%s/stderr", dir);
    Config cfg = tiny_config(1, 2, 16, 128, 256);
    cfg.bos = 1;
    ck_assert_int_eq(make_model_folder(m, &cfg, 3), 0);
    ck_assert_int_eq(write_text_file(txt, "In the beginning God created the heaven and the earth. "
                                          "And the earth was without form, and void."), 0);
    ck_assert_int_eq(write_text_file(none, "no sentence here at all"), 0);
    static const struct {
        const char *a[6], *says;
    } bad[] = {
        {{"--cue", "0"}, "0"},
        {{"--window", "0"}, "0"},
        {{"--cue", "30"}, "--cue must be shorter than every sentence (--min-len 20): 30"},
        {{"--window", "100"}, "--window past the context"},
        {{"--max-len", "200"}, "--window past the context"},
        {{"--min-len", "90"}, "--min-len must be at most --max-len (80): 90"},
        {{"--kv-window", "500"}, "--kv-window past the context (128 tokens): 500"},
        {{"--sinks", "12"}, "--sinks must be fewer than --kv-window (12): 12"},
        {{"--text", "NONE"}, "no sentence of 20..80 bytes"},
        {{"--min-len", "5", "--max-len", "9"}, "--cue must be shorter than every sentence (--min-len 5): 8"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const char *args[24] = {"copying", "--model", m, "--text", txt, "--min-len", "20", "--max-len",
                                "80", "--cue", "8", "--window", "20", "--kv-window", "12", "--out", out,
                                "--quiet"};
        int n = 18;
        for (int j = 0; j < 6 && bad[k].a[j]; j++) args[n++] = strcmp(bad[k].a[j], "NONE") ? bad[k].a[j] : none;
        args[n] = NULL;
        ck_assert_int_eq(run_kvscope(args, NULL, se), 2);
        char *e = read_file(se, NULL);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(strstr(e, bad[k].says) != NULL, "case %zu: %s", k, e);
        ck_assert_msg(count_lines(e) == 1, "case %zu: more than one line: %s", k, e);
        free(e);
        ck_assert_msg(access(out, F_OK) != 0, "case %zu left %s", k, out);
    }
    remove_tree(dir);
}
END_TEST

Suite *make_copying_suite(void) {
    Suite *s = suite_create("copying");
    TCase *u = tcase_create("unit");
    tcase_set_timeout(u, 30);
    tcase_add_test(u, test_sentences_by_hand);
    tcase_add_test(u, test_sentences_spread);
    tcase_add_test(u, test_share_by_hand);
    tcase_add_test(u, test_measure_against_recompute);
    tcase_add_test(u, test_measure_short_sentence);
    suite_add_tcase(s, u);
    TCase *b = tcase_create("bin");
    tcase_set_tags(b, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(b, 60);
    tcase_add_test(b, test_copying_command);
    tcase_add_test(b, test_copying_bad_input);
    suite_add_tcase(s, b);
    return s;
}
