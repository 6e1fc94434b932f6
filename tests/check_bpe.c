/* check_bpe.c — GPT-2's byte-level BPE on a small hand-made vocabulary.
 *
 * The vocabulary is the 256 byte tokens (id = byte value) plus the merges below;
 * every expected id list was worked out by hand from encoder.py's algorithm
 * (merge the lowest-ranked pair everywhere, repeat). The pre-tokenizer answers
 * are those of GPT-2's regex (Python's `regex` module gives the same splits). */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utf8proc.h>

#include "bpe.h"
#include "outdir.h"
#include "testutil.h"
#include "tokenizer.h"

/* rank order; ids 256.. in the same order */
static const char *const MERGES[][2] = {
    {"t", "h"},  {"th", "e"}, {"Ġ", "c"},  {"a", "t"},  {"Ġc", "at"}, {"l", "l"},
    {"e", "ll"}, {"h", "ell"}, {"a", "a"}, {"aa", "aa"}, {"b", "c"},  {"a", "b"},
    {"ä", "º"},  {"äº", "º"},
};
#define NMERGES (int)(sizeof MERGES / sizeof MERGES[0])
enum { THE = 257, GCAT = 260, HELL = 263, AA = 264, AAAA = 265, BC = 266, REN = 269 };

static char dir[64], vocab_path[128], merges_path[128];

/* the byte's symbol in GPT-2's table, as UTF-8 */
static const char *sym(int b, char *buf) {
    utf8proc_ssize_t n = utf8proc_encode_char((utf8proc_int32_t)bpe_byte_to_unicode((unsigned char)b),
                                              (utf8proc_uint8_t *)buf);
    buf[n] = '\0';
    return buf;
}

/* Write vocab.json + merges.txt; skip_byte >= 0 leaves that byte out, extra_line
 * (if not NULL) is appended to merges.txt. */
static void write_files(int skip_byte, const char *extra_line) {
    json_t *v = json_object();
    char s[8], joined[32];
    int id = 0;
    for (int b = 0; b < 256; b++)
        if (b != skip_byte) json_object_set_new(v, sym(b, s), json_integer(id++));
    FILE *f = fopen(merges_path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "#version: 0.2\n");
    for (int i = 0; i < NMERGES; i++, id++) {
        fprintf(f, "%s %s\n", MERGES[i][0], MERGES[i][1]);
        snprintf(joined, sizeof joined, "%s%s", MERGES[i][0], MERGES[i][1]);
        json_object_set_new(v, joined, json_integer(id));
    }
    if (extra_line) fprintf(f, "%s\n", extra_line);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(json_dump_file(v, vocab_path, JSON_COMPACT), 0);
    json_decref(v);
}

static void setup(void) {
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(vocab_path, sizeof vocab_path, "%s/vocab.json", dir);
    snprintf(merges_path, sizeof merges_path, "%s/merges.txt", dir);
    write_files(-1, NULL);
}

static void teardown(void) { remove_tree(dir); }

static Bpe *load(void) {
    Bpe *b;
    char err[512];
    int rc = bpe_load(&b, vocab_path, merges_path, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    return b;
}

static void expect_ids(const Bpe *b, const char *text, const int *want, int nwant) {
    int *ids, n;
    ck_assert_int_eq(bpe_encode(b, text, strlen(text), &ids, &n), 0);
    ck_assert_msg(n == nwant, "\"%s\": %d tokens, expected %d", text, n, nwant);
    for (int i = 0; i < n; i++) ck_assert_msg(ids[i] == want[i], "\"%s\" token %d: %d, expected %d", text, i, ids[i], want[i]);
    free(ids);
}

START_TEST(test_byte_table) {
    ck_assert_uint_eq(bpe_byte_to_unicode('A'), 'A');
    ck_assert_uint_eq(bpe_byte_to_unicode(' '), 0x120);  /* Ġ */
    ck_assert_uint_eq(bpe_byte_to_unicode('\n'), 0x10A); /* Ċ */
    ck_assert_uint_eq(bpe_byte_to_unicode(0), 0x100);
    ck_assert_uint_eq(bpe_byte_to_unicode(0x7F), 0x121);
    ck_assert_uint_eq(bpe_byte_to_unicode(0xAD), 0x143); /* Ń, the last one */
    ck_assert_uint_eq(bpe_byte_to_unicode(0xE4), 0xE4);
    /* a bijection onto 256 distinct code points */
    int seen[512] = {0};
    for (int b = 0; b < 256; b++) {
        uint32_t u = bpe_byte_to_unicode((unsigned char)b);
        ck_assert(u < 512 && !seen[u]);
        seen[u] = 1;
    }
}
END_TEST

START_TEST(test_known_encodings) {
    Bpe *b = load();
    ck_assert_int_eq(bpe_vocab_size(b), 256 + NMERGES);
    /* "the" → th → the;  " cat" → Ġc, at → Ġcat;  " hello" → ll → ell → hell */
    expect_ids(b, "the cat hello", (int[]){THE, GCAT, ' ', HELL, 'o'}, 5);
    /* every occurrence of the best pair in one pass: aaa → aa a, aaaa → aa aa → aaaa */
    expect_ids(b, "aaa", (int[]){AA, 'a'}, 2);
    expect_ids(b, "aaaa", (int[]){AAAA}, 1);
    /* lowest rank first, not leftmost: "b c" (rank 10) beats "a b" (rank 11) */
    expect_ids(b, "abc", (int[]){'a', BC}, 2);
    /* merges never cross pre-tokenizer pieces: "the" + "the" inside one word only */
    expect_ids(b, "cat", (int[]){'c', 256 + 3}, 2);
    expect_ids(b, " the", (int[]){' ', THE}, 2); /* no "Ġ t" merge in this vocabulary */
    /* 人 = E4 BA BA → äº º → 人 */
    expect_ids(b, "人", (int[]){REN}, 1);
    expect_ids(b, "", NULL, 0);
    bpe_free(b);
}
END_TEST

static void expect_pieces(const char *text, const char *const *want, int nwant) {
    size_t *ends;
    int n;
    ck_assert_int_eq(bpe_pretokenize(text, strlen(text), &ends, &n), 0);
    size_t start = 0;
    for (int i = 0; i < n && i < nwant; i++) {
        size_t len = ends[i] - start;
        ck_assert_msg(len == strlen(want[i]) && memcmp(text + start, want[i], len) == 0,
                      "\"%s\" piece %d: \"%.*s\", expected \"%s\"", text, i, (int)len, text + start, want[i]);
        start = ends[i];
    }
    ck_assert_msg(n == nwant, "\"%s\": %d pieces, expected %d", text, n, nwant);
    free(ends);
}

#define PIECES(text, ...) \
    expect_pieces(text, (const char *const[]){__VA_ARGS__}, \
                  (int)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)))

START_TEST(test_pretokenizer) {
    PIECES("Hello world's  test\n\n 123!!", "Hello", " world", "'s", " ", " test", "\n\n", " 123", "!!");
    PIECES("I'll don't we're they've I'm he'd", "I", "'ll", " don", "'t", " we", "'re", " they", "'ve",
           " I", "'m", " he", "'d");
    PIECES("'S ''s", "'", "S", " ''", "s");               /* contractions are lower case only */
    PIECES("a \t b", "a", " \t", " b");                   /* the run keeps its last space back */
    PIECES("x  ", "x", "  ");                             /* at the end: the whole run */
    PIECES("\tx", "\t", "x");                             /* only ' ' joins the next word */
    PIECES("3.14 ٣٤", "3", ".", "14", " ٣٤");             /* Arabic-Indic digits are \p{N} */
    PIECES("人工智能是KV缓存。", "人工智能是KV缓存", "。"); /* CJK ideographs are \p{L} */
    PIECES("hi 👋!", "hi", " 👋!");                       /* emoji: neither letter nor number */
    PIECES("café½x", "café", "½", "x");                   /* ½ is No */
    PIECES("a\xe3\x80\x80" "b", "a", "\xe3\x80\x80", "b"); /* U+3000 is White_Space */
    PIECES("a\xff\xfe b", "a", "\xff\xfe", " b");         /* invalid UTF-8 counts as "other" */
}
END_TEST

START_TEST(test_round_trip) {
    Bpe *b = load();
    const char *texts[] = {
        "The KV cache stores keys and values.",
        "人工智能是什么？KV 缓存让解码更快。",
        "emoji 👋🏽🚀 and flags 🇨🇳 mixed",
        "tabs\tand  spaces   \n\n\r\n  newlines\u3000ideographic\u00a0nbsp  ",
        "aaaa aaa abcabc thethe hello hell",
        "bytes \xff\xfe\x80 not UTF-8, \x01\x02 controls, NUL-free",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int *ids, n;
        char *out;
        size_t len;
        ck_assert_int_eq(bpe_encode(b, texts[i], strlen(texts[i]), &ids, &n), 0);
        ck_assert_int_eq(bpe_decode(b, ids, n, &out, &len), 0);
        ck_assert_uint_eq(len, strlen(texts[i]));
        ck_assert_str_eq(out, texts[i]);
        free(ids);
        free(out);
    }
    int bad = 9999;
    char *out;
    size_t len;
    ck_assert_int_eq(bpe_decode(b, &bad, 1, &out, &len), BPE_BAD);
    bpe_free(b);
}
END_TEST

START_TEST(test_tokenizer_interface) {
    Tokenizer *t = tokenizer_from_bpe(load());
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(tokenizer_vocab_size(t), 256 + NMERGES);
    int *ids, n;
    ck_assert_int_eq(tokenizer_encode(t, "the cat\n人", &ids, &n), 0);
    ck_assert_int_eq(n, 4);
    char buf[64], small[3], *text;
    size_t len;
    ck_assert_str_eq(tokenizer_token_text(t, ids[0], buf, sizeof buf), "the");
    ck_assert_str_eq(tokenizer_token_text(t, ids[1], buf, sizeof buf), " cat");
    ck_assert_str_eq(tokenizer_token_text(t, ids[2], buf, sizeof buf), "\\n");
    ck_assert_str_eq(tokenizer_token_text(t, ids[3], buf, sizeof buf), "人");
    ck_assert_str_eq(tokenizer_token_text(t, 0xE4, buf, sizeof buf), "<0xE4>"); /* a partial character */
    ck_assert_str_eq(tokenizer_token_text(t, 0x01, buf, sizeof buf), "<0x01>");
    ck_assert_str_eq(tokenizer_token_text(t, REN, small, sizeof small), "");   /* never half a character */
    ck_assert_str_eq(tokenizer_token_text(t, GCAT, small, sizeof small), " c");
    ck_assert_int_eq(tokenizer_decode(t, ids, n, &text, &len), 0);
    ck_assert_str_eq(text, "the cat\n人");
    free(text);
    free(ids);
    tokenizer_free(t);
}
END_TEST

static void expect_load_error(const char *want) {
    Bpe *b;
    char err[512] = "";
    ck_assert_int_eq(bpe_load(&b, vocab_path, merges_path, err, sizeof err), BPE_BAD);
    ck_assert_ptr_null(b);
    ck_assert_msg(strstr(err, want) != NULL, "message \"%s\" lacks \"%s\"", err, want);
}

START_TEST(test_load_errors) {
    write_files('A', NULL);
    expect_load_error("vocab.json: no token for byte 0x41");
    write_files(-1, "q z");
    expect_load_error("merges.txt: line 16: \"qz\" is not in vocab.json");
    write_files(-1, "t h");
    expect_load_error("merges.txt: line 16: merge \"t h\" listed twice");
    write_files(-1, "th");
    expect_load_error("merges.txt: line 16: expected two tokens");
    FILE *f = fopen(vocab_path, "w");
    ck_assert(f && fputs("{\"a\": 0, \"a\": 1}", f) >= 0 && fclose(f) == 0);
    expect_load_error("vocab.json: invalid JSON");
    f = fopen(vocab_path, "w");
    ck_assert(f && fputs("{\"a\": 0, \"b\": 0}", f) >= 0 && fclose(f) == 0);
    expect_load_error("is also");
    f = fopen(vocab_path, "w");
    ck_assert(f && fputs("{\"a\": 0, \"\xe4\xba\xba\": 1}", f) >= 0 && fclose(f) == 0);
    expect_load_error("U+4EBA is not one of GPT-2's byte symbols");
    remove(merges_path);
    write_files(-1, NULL);
    remove(merges_path);
    expect_load_error("merges.txt: cannot open");
}
END_TEST

/* Through the CLI: a model folder with the vocabulary labels tokens.csv with BPE texts. */
START_TEST(test_cli_token_texts) {
    char m[128], out[160], csv[192];
    snprintf(m, sizeof m, "%s/m", dir);
    const char *ex[] = {"export", "--layers", "1", "--heads", "2", "--dim", "8", "--ctx", "16",
                        "--vocab", "270", "--out", m, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(ex, NULL, NULL), 0);
    char dst[192];
    snprintf(dst, sizeof dst, "%s/vocab.json", m);
    ck_assert_int_eq(rename(vocab_path, dst), 0);
    snprintf(dst, sizeof dst, "%s/merges.txt", m);
    ck_assert_int_eq(rename(merges_path, dst), 0);
    snprintf(out, sizeof out, "%s/o", dir);
    const char *run[] = {"run", "--model", m, "--prompt", "the cat, \"人\"", "--steps", "0",
                         "--record", "tokens", "--quiet", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(run, NULL, NULL), 0);
    snprintf(csv, sizeof csv, "%s/tokens.csv", out);
    char *got = read_file(csv, NULL);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, "step,pos,token_id,text\n"
                          "0,0,257,the\n"
                          "0,1,260, cat\n"
                          "0,2,44,\",\"\n"
                          "0,3,32, \n"
                          "0,4,34,\"\"\"\"\n"
                          "0,5,269,人\n"
                          "0,6,34,\"\"\"\"\n");
    free(got);
    /* a vocab.json with more ids (270) than the model's vocab_size: refused, naming both */
    char m2[128], err[192];
    snprintf(m2, sizeof m2, "%s/m2", dir);
    ex[10] = "265", ex[12] = m2;
    ck_assert_int_eq(run_kvscope(ex, NULL, NULL), 0);
    static const char *const files[] = {"vocab.json", "merges.txt"};
    for (int i = 0; i < 2; i++) {
        char from[192], to[192];
        snprintf(from, sizeof from, "%s/%s", m, files[i]);
        snprintf(to, sizeof to, "%s/%s", m2, files[i]);
        ck_assert_int_eq(link(from, to), 0);
    }
    snprintf(err, sizeof err, "%s/err", dir);
    const char *run2[] = {"run", "--model", m2, "--prompt", "the cat", "--steps", "0", "--quiet",
                          "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(run2, NULL, err), 2);
    char *e = read_file(err, NULL);
    ck_assert_msg(e && strstr(e, "vocab.json has 270 ids, more than config.json's vocab_size 265") &&
                  strchr(e, '\n') == e + strlen(e) - 1, "%s", e);
    free(e);
    remove_tree(out);
    /* half a tokenizer is an error, not a silent fallback to bytes */
    ck_assert_int_eq(remove(dst), 0);
    remove_tree(out);
    ck_assert_int_eq(run_kvscope(run, NULL, NULL), 2);
    ck_assert_int_eq(access(out, F_OK), -1);
}
END_TEST

Suite *make_bpe_suite(void) {
    Suite *s = suite_create("bpe");
    TCase *tc = tcase_create("bpe");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_byte_table);
    tcase_add_test(tc, test_known_encodings);
    tcase_add_test(tc, test_pretokenizer);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_tokenizer_interface);
    tcase_add_test(tc, test_load_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("bpe_cli");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_cli_token_texts);
    suite_add_tcase(s, tc);
    return s;
}
