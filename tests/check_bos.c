/* check_bos.c — the start token on the reading side: config.json's add_bos_token and
 * bos_token_id (hf_model.h), the token put once in front of every prompt (tokenizer.h)
 * and shown as ⟨s⟩; then bin/kvscope on a tiny model folder written by the test. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hf_model.h"
#include "outdir.h"
#include "testutil.h"
#include "tokenizer.h"

#define START "\xE2\x9F\xA8s\xE2\x9F\xA9" /* ⟨s⟩ */

static const char *const BASE =
    "{\"model_type\": \"gpt2\", \"n_layer\": 1, \"n_head\": 2, \"n_embd\": 8, \"n_positions\": 32, "
    "\"vocab_size\": 256%s}";

/* hf_config_parse of BASE with extra keys: its result, the config and the message. */
static int parse(const char *extra, Config *c, char *err, size_t size) {
    char text[512];
    snprintf(text, sizeof text, BASE, extra);
    return hf_config_parse(text, strlen(text), "config.json", c, err, size);
}

START_TEST(test_config_start_token) {
    Config c;
    char err[256];
    ck_assert_int_eq(parse(", \"add_bos_token\": true, \"bos_token_id\": 2", &c, err, sizeof err), 0);
    ck_assert_int_eq(c.bos, 2);
    /* Hugging Face's GPT-2 names a bos_token_id but its tokenizer adds none */
    ck_assert_int_eq(parse(", \"bos_token_id\": 255", &c, err, sizeof err), 0);
    ck_assert_int_eq(c.bos, -1);
    ck_assert_int_eq(parse(", \"add_bos_token\": false, \"bos_token_id\": 3", &c, err, sizeof err), 0);
    ck_assert_int_eq(c.bos, -1);
    ck_assert_int_eq(config_default().bos, -1);
    ck_assert_int_eq(parse(", \"add_bos_token\": true, \"bos_token_id\": 256", &c, err, sizeof err), HF_BAD);
    ck_assert_str_eq(err, "config.json: \"bos_token_id\" (256) is outside the vocabulary 0..255");
    ck_assert_int_eq(parse(", \"add_bos_token\": true, \"bos_token_id\": -1", &c, err, sizeof err), HF_BAD);
    ck_assert_int_eq(parse(", \"add_bos_token\": true", &c, err, sizeof err), HF_BAD);
    ck_assert_str_eq(err, "config.json: \"bos_token_id\" is missing (add_bos_token is true)");
    /* a number that is no token id is named as such, not as missing */
    static const char *const not_int[] = {"1.5", "\"1\"", "null"};
    for (int i = 0; i < 3; i++) {
        char extra[96];
        snprintf(extra, sizeof extra, ", \"add_bos_token\": true, \"bos_token_id\": %s", not_int[i]);
        ck_assert_int_eq(parse(extra, &c, err, sizeof err), HF_BAD);
        ck_assert_str_eq(err, "config.json: \"bos_token_id\" is not an integer (add_bos_token is true)");
    }
    ck_assert_int_eq(parse(", \"add_bos_token\": 1, \"bos_token_id\": 2", &c, err, sizeof err), HF_BAD);
}
END_TEST

START_TEST(test_add_start) {
    int *ids = malloc(3 * sizeof *ids), n = 3;
    ck_assert_ptr_nonnull(ids);
    ids[0] = 97, ids[1] = 98, ids[2] = 99;
    ck_assert_int_eq(tokenizer_add_start(-1, &ids, &n), 0);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(tokenizer_add_start(2, &ids, &n), 0);
    ck_assert_int_eq(n, 4);
    const int want[4] = {2, 97, 98, 99};
    ck_assert_mem_eq(ids, want, sizeof want);
    ck_assert_int_eq(tokenizer_add_start(2, &ids, &n), 0); /* already there: no second */
    ck_assert_int_eq(n, 4);
    ck_assert_mem_eq(ids, want, sizeof want);
    /* shown as ⟨s⟩ by decode and by the token texts; the same byte elsewhere is itself */
    Tokenizer *t = tokenizer_bytes();
    ck_assert_ptr_nonnull(t);
    char *text, buf[32];
    size_t len;
    const int seq[5] = {2, 104, 2, 105, 2};
    ck_assert_int_eq(tokenizer_decode(t, seq, 5, &text, &len), 0);
    ck_assert_mem_eq(text, "\x02h\x02i\x02", 6);
    free(text);
    tokenizer_set_start(t, 2);
    ck_assert_int_eq(tokenizer_decode(t, seq, 5, &text, &len), 0);
    ck_assert_str_eq(text, START "h" START "i" START);
    ck_assert_uint_eq(len, strlen(START "h" START "i" START));
    free(text);
    ck_assert_str_eq(tokenizer_token_text(t, 2, buf, sizeof buf), START);
    ck_assert_str_eq(tokenizer_token_text(t, 3, buf, sizeof buf), "<0x03>");
    tokenizer_free(t);
    free(ids);
}
END_TEST

/* A tiny model with start token 2 (or bos < 0: none) exported into dir/m. */
static void tiny_folder(const char *dir, int bos, char *m, size_t size) {
    snprintf(m, size, "%s/m", dir);
    Config cfg = tiny_config(2, 2, 16, 64, 256);
    cfg.bos = bos;
    ck_assert_int_eq(make_model_folder(m, &cfg, 7), 0);
    Config back;
    char err[512];
    ck_assert_msg(hf_config_load(m, &back, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(back.bos, bos);
}

/* The ids of tokens.csv (step,pos,token_id,text) in order; returns how many. */
static int token_ids(const char *dir, int *ids, int max, char texts[][16]) {
    char path[256], line[256];
    snprintf(path, sizeof path, "%s/tokens.csv", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int n = 0, step, pos;
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    while (n < max && fgets(line, sizeof line, f)) {
        ck_assert_int_eq(sscanf(line, "%d,%d,%d,%15[^\n]", &step, &pos, &ids[n], texts[n]), 4);
        ck_assert_int_eq(pos, n);
        n++;
    }
    fclose(f);
    return n;
}

START_TEST(test_run_with_start) {
    char dir[64], m[96], o[96], so[96];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    tiny_folder(dir, 2, m, sizeof m);
    snprintf(o, sizeof o, "%s/o", dir);
    snprintf(so, sizeof so, "%s/stdout", dir);
    const char *a1[] = {"run", "--model", m, "--prompt", "abc", "--steps", "2", "--out", o, NULL};
    ck_assert_int_eq(run_kvscope(a1, so, NULL), 0);
    int ids[16];
    char texts[16][16];
    ck_assert_int_eq(token_ids(o, ids, 16, texts), 6);
    const int want[4] = {2, 97, 98, 99};
    ck_assert_mem_eq(ids, want, sizeof want);
    ck_assert_str_eq(texts[0], START);
    char *out = read_file(so, NULL);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(strstr(out, "\nprompt:       " START "abc\n"), "%s", out);
    free(out);
    /* a prompt that begins with the start token gets no second one */
    const char *a2[] = {"run", "--model", m, "--prompt-ids", "2,97,98,99", "--steps", "2", "--out", o,
                        "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(a2, NULL, NULL), 0);
    int again[16];
    ck_assert_int_eq(token_ids(o, again, 16, texts), 6);
    ck_assert_mem_eq(again, ids, 6 * sizeof *ids);
    remove_tree(dir);
}
END_TEST

/* Without add_bos_token nothing is put in front: the model of before. */
START_TEST(test_run_without_start) {
    char dir[64], m[96], o[96];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    tiny_folder(dir, -1, m, sizeof m);
    snprintf(o, sizeof o, "%s/o", dir);
    const char *a[] = {"run", "--model", m, "--prompt", "abc", "--steps", "0", "--out", o, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(a, NULL, NULL), 0);
    int ids[16];
    char texts[16][16];
    ck_assert_int_eq(token_ids(o, ids, 16, texts), 3);
    ck_assert_int_eq(ids[0], 97);
    remove_tree(dir);
}
END_TEST

/* A config whose start token lies outside the vocabulary: one line, exit 2, no output. */
START_TEST(test_bad_start) {
    char dir[64], m[96], o[96], ef[96], cfgp[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    tiny_folder(dir, 2, m, sizeof m);
    snprintf(cfgp, sizeof cfgp, "%s/config.json", m);
    char *text = read_file(cfgp, NULL);
    ck_assert_ptr_nonnull(text);
    char *at = strstr(text, "\"bos_token_id\": 2,");
    ck_assert_ptr_nonnull(at);
    char fixed[2048];
    snprintf(fixed, sizeof fixed, "%.*s\"bos_token_id\": 9999,%s", (int)(at - text), text, at + 18);
    free(text);
    ck_assert_int_eq(write_text_file(cfgp, fixed), 0);
    snprintf(o, sizeof o, "%s/o", dir);
    snprintf(ef, sizeof ef, "%s/err", dir);
    const char *a[] = {"run", "--model", m, "--prompt", "abc", "--out", o, NULL};
    ck_assert_int_eq(run_kvscope(a, NULL, ef), 2);
    char *e = read_file(ef, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strstr(e, "\"bos_token_id\" (9999) is outside the vocabulary 0..255\n"), "%s", e);
    ck_assert_msg(strchr(e, '\n') == e + strlen(e) - 1, "not one line: %s", e);
    free(e);
    ck_assert_int_eq(count_entries(dir), 2); /* m/ and err: no output folder */
    remove_tree(dir);
}
END_TEST

Suite *make_bos_suite(void) {
    Suite *s = suite_create("bos");
    TCase *u = tcase_create("unit");
    tcase_add_test(u, test_config_start_token);
    tcase_add_test(u, test_add_start);
    suite_add_tcase(s, u);
    TCase *b = tcase_create("bin");
    tcase_set_tags(b, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(b, 60);
    tcase_add_test(b, test_run_with_start);
    tcase_add_test(b, test_run_without_start);
    tcase_add_test(b, test_bad_start);
    suite_add_tcase(s, b);
    return s;
}
