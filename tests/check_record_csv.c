/* check_record_csv.c — the CSV observer (record_csv.h) on a tiny model: every file it
 * was asked for and no other, the attention rows of the shown layers and heads (causal
 * entries only, each score and weight the exact float the engine computed, read back
 * with strtof), the positions a window's slots hold, the KV bytes and FLOPs by their
 * formulas, tokens quoted as CSV needs; and the --record lists. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "generate.h"
#include "outdir.h"
#include "record_csv.h"
#include "testutil.h"

enum { L_ = 2, NH_ = 3, C_ = 12, V_ = 20, T0 = 4, STEPS = 3, W = 5, S = 1 };

/* Every score and weight of layer 1, head 2, as the engine handed them to the hooks:
 * [step][query][slot]. */
static float scores[STEPS + 1][T0][T0 + STEPS], weights[STEPS + 1][T0][T0 + STEPS];

static int keep(const HookEvent *ev, void *user) {
    (void)user;
    if (ev->layer != 1) return 0;
    const int n = ev->shape[1], Tt = ev->shape[2];
    for (int i = 0; i < n; i++)
        for (int t = 0; t < Tt; t++) {
            float v = ev->data[((size_t)2 * n + i) * Tt + t];
            if (ev->point == HOOK_ATTN_SCORES) scores[ev->step][i][t] = v;
            else weights[ev->step][i][t] = v;
        }
    return 0;
}

/* A run with the recorder: layers 0 and 1, head 2; a window of W with S sinks when
 * window is set. */
static void record_run(const char *dir, unsigned what, int window) {
    Config cfg = tiny_config(L_, NH_, C_, 32, V_);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 8), 0);
    Generator g;
    ck_assert_int_eq(generator_init(&g, &m, GEN_CACHE), 0);
    if (window) g.window = W, g.sink = S;
    Selection layers, heads;
    ck_assert_int_eq(select_parse(&layers, "0,1", L_), 0);
    ck_assert_int_eq(select_parse(&heads, "2", NH_), 0);
    CsvRecorder r;
    Hooks h;
    hooks_init(&h);
    ck_assert_int_eq(csv_recorder_open(&r, dir, what, &layers, &heads), 0);
    ck_assert_int_eq(csv_recorder_attach(&r, &h), 0);
    ck_assert_int_eq(hooks_subscribe(&h, HOOK_BIT(HOOK_ATTN_SCORES) | HOOK_BIT(HOOK_PATTERN), keep, NULL), 0);
    const int prompt[T0] = {1, 2, 3, 4};
    const char *texts[] = {"a", "b,c", "\"q\"", "line\nbreak"};
    for (int i = 0; i < T0; i++) csv_recorder_token(&r, 0, i, prompt[i], texts[i]);
    ck_assert_int_eq(generator_prefill(&g, prompt, T0, &h), 0);
    csv_recorder_timing(&r, PHASE_PREFILL, 0, 0.5, 1234);
    for (int s = 1; s <= STEPS; s++) {
        int tok = generator_argmax(&g);
        csv_recorder_token(&r, s, g.len, tok, "x");
        ck_assert_int_eq(generator_decode(&g, tok, s, &h), 0);
    }
    ck_assert_int_eq(csv_recorder_close(&r), 0);
    generator_free(&g);
    model_free(&m);
}

static char *file_in(const char *dir, const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return read_file(p, NULL);
}

/* The position cache slot t holds at step s (T positions seen after it). */
static int slot_position(int window, int s, int t) {
    const int total = T0 + s;
    if (!window || total <= W || t < S) return t;
    return total - W + t;
}

static void check_attention(const char *dir, int window) {
    char *csv = file_in(dir, "attention.csv");
    ck_assert_ptr_nonnull(csv);
    const char *header = "phase,step,layer,head,query_pos,key_pos,score,weight,key_slot\n";
    ck_assert(strncmp(csv, header, strlen(header)) == 0);
    int rows = 0, layer1 = 0;
    char *line = strchr(csv, '\n') + 1;
    for (char *next; *line; line = next) {
        next = strchr(line, '\n') + 1;
        char ph[16];
        int step, layer, head, qpos, kpos, slot, used;
        float sc, w;
        char scs[32], ws[32];
        ck_assert_int_eq(sscanf(line, "%15[a-z],%d,%d,%d,%d,%d,%31[^,],%31[^,],%d%n", ph, &step, &layer,
                                &head, &qpos, &kpos, scs, ws, &slot, &used), 9);
        ck_assert_int_eq(head, 2); /* only the head shown */
        ck_assert_str_eq(ph, step ? "decode" : "prefill");
        ck_assert_int_eq(kpos, slot_position(window, step, slot));
        ck_assert_int_le(kpos, qpos); /* causal */
        sc = strtof(scs, NULL);
        w = strtof(ws, NULL);
        rows++;
        if (layer != 1) continue;
        layer1++;
        const int i = step ? 0 : qpos;
        ck_assert_mem_eq(&sc, &scores[step][i][slot], sizeof sc); /* the same float, to the bit */
        ck_assert_mem_eq(&w, &weights[step][i][slot], sizeof w);
    }
    /* the prefill's causal square, then one row over every slot per step */
    int want = T0 * (T0 + 1) / 2;
    for (int s = 1; s <= STEPS; s++) want += window && T0 + s > W ? W : T0 + s;
    ck_assert_int_eq(layer1, want);
    ck_assert_int_eq(rows, 2 * want);
    free(csv);
}

START_TEST(test_files_and_attention) {
    char dir[64];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    record_run(dir, REC_DEFAULT, 0);
    ck_assert_int_eq(count_entries(dir), 6); /* the default: no logits.csv */
    check_attention(dir, 0);
    char *kv = file_in(dir, "kv_memory.csv"), *fl = file_in(dir, "flops.csv");
    ck_assert_ptr_nonnull(kv);
    ck_assert_ptr_nonnull(fl);
    const Config cfg = tiny_config(L_, NH_, C_, 32, V_);
    char *line = strchr(kv, '\n') + 1, *fline = strchr(fl, '\n') + 1;
    for (int s = 0; s <= STEPS; s++) {
        int step, tokens, n, total;
        size_t bytes, reserved, per;
        unsigned long long layers;
        ck_assert_int_eq(sscanf(line, "%*[a-z],%d,%d,%zu,%zu,%zu", &step, &tokens, &bytes, &reserved, &per), 5);
        ck_assert_uint_eq(per, 2u * L_ * C_ * sizeof(float)); /* K and V, L rows of C floats */
        ck_assert_int_eq(step, s);
        ck_assert_int_eq(tokens, T0 + s);
        ck_assert_uint_eq(bytes, 2u * L_ * (T0 + s) * C_ * sizeof(float));
        ck_assert_uint_ge(reserved, bytes);
        ck_assert_int_eq(sscanf(fline, "%*[a-z],%*d,%d,%d,%llu", &n, &total, &layers), 3);
        ck_assert_int_eq(n, s ? 1 : T0);
        ck_assert(layers == flops_layers_formula(&cfg, (uint64_t)n, (uint64_t)(total - n)));
        line = strchr(line, '\n') + 1;
        fline = strchr(fline, '\n') + 1;
    }
    ck_assert_int_eq(*line, '\0');
    free(kv);
    free(fl);
    char *tok = file_in(dir, "tokens.csv"), *shapes = file_in(dir, "shapes.csv"), *tim = file_in(dir, "timing.csv");
    ck_assert_ptr_nonnull(tok);
    ck_assert_msg(strstr(tok, "step,pos,token_id,text\n0,0,1,a\n0,1,2,\"b,c\"\n0,2,3,\"\"\"q\"\"\"\n"
                              "0,3,4,\"line\nbreak\"\n1,4,"), "%s", tok);
    ck_assert_msg(strstr(shapes, "prefill,0,1,blocks.1.attn.hook_q,1x4x3x4\n"), "%s", shapes);
    ck_assert_msg(strstr(shapes, "decode,3,0,blocks.0.attn.cache_k,1x7x3x4\n"), "%s", shapes);
    ck_assert_msg(strstr(shapes, "decode,1,-1,hook_logits,1x20\n"), "%s", shapes);
    ck_assert_str_eq(tim, "phase,step,seconds,rss_bytes\nprefill,0,0.5,1234\n");
    free(tok);
    free(shapes);
    free(tim);
    remove_tree(dir);
}
END_TEST

/* With a window, key_pos is the position a slot holds, key_slot the slot. */
START_TEST(test_window_positions) {
    char dir[64];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    record_run(dir, REC_ATTENTION | REC_LOGITS, 1);
    ck_assert_int_eq(count_entries(dir), 2);
    check_attention(dir, 1);
    char *lg = file_in(dir, "logits.csv");
    ck_assert_ptr_nonnull(lg);
    int lines = 0;
    for (char *p = lg; *p; p++) lines += *p == '\n';
    ck_assert_int_eq(lines, 1 + (STEPS + 1) * V_);
    free(lg);
    remove_tree(dir);
}
END_TEST

START_TEST(test_record_lists) {
    unsigned w;
    ck_assert_int_eq(record_parse("shapes,kv", &w), 0);
    ck_assert_uint_eq(w, REC_SHAPES | REC_KV);
    ck_assert_int_eq(record_parse("all", &w), 0);
    ck_assert_uint_eq(w, REC_DEFAULT | REC_LOGITS);
    ck_assert_int_eq(record_parse("none", &w), 0);
    ck_assert_uint_eq(w, 0);
    ck_assert_int_eq(record_parse("timing,logits,tokens,flops,attention", &w), 0);
    ck_assert_uint_eq(w, REC_TIMING | REC_LOGITS | REC_TOKENS | REC_FLOPS | REC_ATTENTION);
    static const char *const bad[] = {"shape", "kv,,flops", ",kv", "KV", "all,kv", "kv none", "x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(record_parse(bad[i], &w) == -1, "\"%s\" parsed", bad[i]);
    /* an unwritable folder: the open fails and leaves nothing open */
    CsvRecorder r;
    Selection all;
    select_all(&all);
    ck_assert_int_eq(csv_recorder_open(&r, "/nonexistent/kvscope", REC_DEFAULT, &all, &all), -1);
}
END_TEST

Suite *make_record_csv_suite(void) {
    Suite *s = suite_create("record_csv");
    TCase *tc = tcase_create("files");
    tcase_add_test(tc, test_files_and_attention);
    tcase_add_test(tc, test_window_positions);
    tcase_add_test(tc, test_record_lists);
    suite_add_tcase(s, tc);
    return s;
}
