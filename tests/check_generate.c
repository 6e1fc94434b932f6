/* check_generate.c — the prefill/decode loop (generate.h): what each step reports to
 * the hooks (positions, slots, evictions) against the rules of its cache mode, the
 * rewind that times a step again, the lookahead helpers, and the logit helpers.
 * Tolerance: none; the engine is deterministic and a step done again is the same step. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "generate.h"
#include "hooks.h"
#include "testutil.h"

enum { V_ = 40, T0 = 4, MAX_STEPS = 16 };

/* What hook_step_end said at each step. */
typedef struct {
    int n;
    Phase phase[MAX_STEPS];
    int step[MAX_STEPS], pos0[MAX_STEPS], slot0[MAX_STEPS], tokens_total[MAX_STEPS];
    int evicted_pos0[MAX_STEPS], evicted_n[MAX_STEPS];
    int slot_pos[MAX_STEPS][32];
} Ends;

static int on_end(const HookEvent *ev, void *user) {
    Ends *e = user;
    const StepStats *st = ev->stats;
    ck_assert_int_lt(e->n, MAX_STEPS);
    int i = e->n++;
    e->phase[i] = ev->phase, e->step[i] = ev->step, e->pos0[i] = ev->pos0, e->slot0[i] = ev->slot0;
    e->tokens_total[i] = st->tokens_total;
    e->evicted_pos0[i] = st->evicted_pos0, e->evicted_n[i] = st->evicted_n;
    for (int s = 0; s < st->tokens_total && s < 32; s++) e->slot_pos[i][s] = st->slot_pos[s];
    return 0;
}

static Model model;

static void setup(void) {
    Config cfg = tiny_config(2, 2, 16, 32, V_);
    ck_assert_int_eq(model_init_random(&model, &cfg, 5), 0);
}

static void teardown(void) { model_free(&model); }

static const int PROMPT[T0] = {3, 1, 4, 1};

/* A re-done decode step is the same step: it reports no eviction (none happened), the
 * same position and slots, and gives the same logits, bit for bit. */
START_TEST(test_rewind_reports_no_eviction) {
    Generator g;
    Hooks h;
    Ends e = {0};
    hooks_init(&h);
    ck_assert_int_eq(hooks_subscribe(&h, HOOK_BIT(HOOK_STEP_END), on_end, &e), 0);
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    ck_assert_int_eq(generator_prefill(&g, PROMPT, T0, &h), 0);
    int tok = generator_argmax(&g);
    ck_assert_int_eq(generator_decode(&g, tok, 1, &h), 0);
    float first[V_];
    memcpy(first, g.logits, sizeof first);
    const size_t used = kvcache_bytes_used(&g.cache);
    ck_assert_int_eq(generator_rewind(&g), 0);
    ck_assert_int_eq(g.len, T0);
    ck_assert_int_eq(g.cache.len, T0);
    ck_assert_int_eq(g.cache.n_seen, T0); /* the next token takes position T0 again */
    ck_assert_int_eq(generator_decode(&g, tok, 1, &h), 0);
    ck_assert_int_eq(e.n, 3);
    for (int i = 1; i < 3; i++) {
        ck_assert_int_eq(e.evicted_n[i], 0);
        ck_assert_int_eq(e.pos0[i], T0);
        ck_assert_int_eq(e.slot0[i], T0);
        ck_assert_int_eq(e.tokens_total[i], T0 + 1);
        for (int s = 0; s <= T0; s++) ck_assert_int_eq(e.slot_pos[i][s], s);
    }
    ck_assert_mem_eq(first, g.logits, sizeof first);
    ck_assert_uint_eq(kvcache_bytes_used(&g.cache), used);
    /* and the step after it is step 2 at position T0 + 1, as without the rewind */
    ck_assert_int_eq(generator_decode(&g, generator_argmax(&g), 2, &h), 0);
    ck_assert_int_eq(e.pos0[3], T0 + 1);
    ck_assert_int_eq(e.evicted_n[3], 0);
    generator_free(&g);
}
END_TEST

/* Only a plain cache can be rewound, and only a step that ran. */
START_TEST(test_rewind_refused) {
    Generator g;
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    ck_assert_int_eq(generator_rewind(&g), -1); /* nothing yet */
    generator_free(&g);
    const GenMode modes[] = {GEN_RECOMPUTE, GEN_ARTICLE_BUG};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(generator_init(&g, &model, modes[i]), 0);
        ck_assert_int_eq(generator_prefill(&g, PROMPT, T0, NULL), 0);
        ck_assert_int_eq(generator_decode(&g, 1, 1, NULL), 0);
        ck_assert_int_eq(generator_rewind(&g), -1);
        generator_free(&g);
    }
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    g.window = 8;
    ck_assert_int_eq(generator_prefill(&g, PROMPT, T0, NULL), 0);
    ck_assert_int_eq(generator_decode(&g, 1, 1, NULL), 0);
    ck_assert_int_eq(generator_rewind(&g), -1);
    generator_free(&g);
}
END_TEST

/* A window of W with S sinks: once full, each step evicts the oldest position after the
 * sinks, and the step reports exactly that position; the slots hold the sinks and the
 * newest W - S positions. */
START_TEST(test_window_reports_evictions) {
    enum { W = 6, S = 2, STEPS = 7 };
    Generator g;
    Hooks h;
    Ends e = {0};
    hooks_init(&h);
    hooks_subscribe(&h, HOOK_BIT(HOOK_STEP_END), on_end, &e);
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    g.window = W;
    g.sink = S;
    ck_assert_int_eq(generator_prefill(&g, PROMPT, T0, &h), 0);
    for (int s = 1; s <= STEPS; s++) {
        int first, n = generator_next_eviction(&g, &first);
        const int total = T0 + s; /* positions seen after step s */
        ck_assert_int_eq(n, total > W ? 1 : 0);
        ck_assert_int_eq(generator_next_kv_tokens(&g), total > W ? W : total);
        ck_assert_int_eq(generator_next_rows(&g), 1);
        ck_assert_int_eq(generator_decode(&g, generator_argmax(&g), s, &h), 0);
        ck_assert_int_eq(e.tokens_total[s], total > W ? W : total);
        /* evicted: position total - 1 - (W - S) when the window was full */
        ck_assert_int_eq(e.evicted_n[s], n);
        if (n) ck_assert_int_eq(e.evicted_pos0[s], total - 1 - (W - S));
        for (int k = 0; k < e.tokens_total[s]; k++) {
            int want = k < S || total <= W ? k : total - W + k;
            ck_assert_int_eq(e.slot_pos[s][k], want);
        }
    }
    generator_free(&g);
}
END_TEST

/* A prompt longer than the window: the prefill keeps every position, and the first decode
 * step evicts all but the sinks and the newest W - S - 1 prompt positions at once, reported
 * as one run starting after the sinks; later steps evict one position each. */
START_TEST(test_window_shorter_than_prompt) {
    enum { W = 3, S = 1, STEPS = 4 };
    Generator g;
    Hooks h;
    Ends e = {0};
    hooks_init(&h);
    hooks_subscribe(&h, HOOK_BIT(HOOK_STEP_END), on_end, &e);
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    g.window = W;
    g.sink = S;
    ck_assert_int_eq(generator_prefill(&g, PROMPT, T0, &h), 0);
    ck_assert_int_eq(g.cache.len, T0);
    for (int s = 1; s <= STEPS; s++) {
        int first, n = generator_next_eviction(&g, &first);
        const int total = T0 + s;
        ck_assert_int_eq(first, S);
        ck_assert_int_eq(n, s == 1 ? T0 + 1 - W : 1);
        ck_assert_int_eq(generator_decode(&g, generator_argmax(&g), s, &h), 0);
        ck_assert_int_eq(e.tokens_total[s], W);
        ck_assert_int_eq(e.evicted_n[s], n);
        ck_assert_int_eq(e.evicted_pos0[s], s == 1 ? S : total - 1 - (W - S));
        for (int k = 0; k < W; k++) ck_assert_int_eq(e.slot_pos[s][k], k < S ? k : total - W + k);
    }
    generator_free(&g);
}
END_TEST

/* The articles' bug keeps only the newest step's K/V: what it dropped after step s is
 * reported with step s + 1. */
START_TEST(test_article_bug_reports_forgetting) {
    Generator g;
    Hooks h;
    Ends e = {0};
    hooks_init(&h);
    hooks_subscribe(&h, HOOK_BIT(HOOK_STEP_END), on_end, &e);
    ck_assert_int_eq(generator_init(&g, &model, GEN_ARTICLE_BUG), 0);
    ck_assert_int_eq(generator_prefill(&g, PROMPT, T0, &h), 0);
    for (int s = 1; s <= 4; s++) ck_assert_int_eq(generator_decode(&g, 2, s, &h), 0);
    ck_assert_int_eq(e.evicted_n[0], 0); /* the prefill keeps all of its own */
    ck_assert_int_eq(e.evicted_n[1], 0);
    ck_assert_int_eq(e.tokens_total[1], T0 + 1);
    ck_assert_int_eq(e.evicted_pos0[2], 0); /* after step 1: the prompt went */
    ck_assert_int_eq(e.evicted_n[2], T0);
    /* then one position a step, the one of two steps before: step s appends position
     * T0 + s - 1 next to the previous step's T0 + s - 2 */
    for (int s = 3; s <= 4; s++) {
        ck_assert_int_eq(e.evicted_pos0[s], T0 + s - 3);
        ck_assert_int_eq(e.evicted_n[s], 1);
        ck_assert_int_eq(e.tokens_total[s], 2);
        ck_assert_int_eq(e.slot_pos[s][0], T0 + s - 2);
        ck_assert_int_eq(e.slot_pos[s][1], T0 + s - 1);
    }
    generator_free(&g);
}
END_TEST

/* Without a cache every decode step runs the whole sequence: rows = len + 1. */
START_TEST(test_recompute_rows) {
    Generator g;
    ck_assert_int_eq(generator_init(&g, &model, GEN_RECOMPUTE), 0);
    ck_assert_int_eq(generator_prefill(&g, PROMPT, T0, NULL), 0);
    for (int s = 1; s <= 3; s++) {
        ck_assert_int_eq(generator_next_rows(&g), T0 + s);
        ck_assert_int_eq(generator_next_kv_tokens(&g), T0 + s);
        ck_assert_int_eq(generator_decode(&g, 1, s, NULL), 0);
        ck_assert_int_eq(g.cache.len, T0 + s);
    }
    generator_free(&g);
}
END_TEST

/* Bad steps are refused and change nothing. */
START_TEST(test_bad_steps) {
    Generator g;
    ck_assert_int_eq(generator_init(&g, &model, GEN_CACHE), 0);
    ck_assert_int_eq(generator_prefill(&g, PROMPT, 0, NULL), -1);
    ck_assert_int_eq(generator_prefill(&g, PROMPT, model.cfg.N + 1, NULL), -1);
    ck_assert_int_eq(generator_prefill(&g, PROMPT, T0, NULL), 0);
    ck_assert_int_eq(generator_decode(&g, V_, 1, NULL), -1); /* not a token */
    ck_assert_int_eq(g.len, T0);
    ck_assert_int_eq(g.cache.len, T0);
    for (int s = 1; g.len < model.cfg.N; s++) ck_assert_int_eq(generator_decode(&g, 0, s, NULL), 0);
    ck_assert_int_eq(generator_decode(&g, 0, 99, NULL), -1); /* past the context */
    ck_assert_int_eq(g.len, model.cfg.N);
    generator_free(&g);
}
END_TEST

START_TEST(test_logit_helpers) {
    const float a[5] = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f}, b[5] = {1.0f, 2.5f, -2.0f, 3.0f, 0.75f};
    ck_assert_int_eq(logits_argmax(a, 5), 1); /* a tie goes to the lower index */
    ck_assert_double_eq(logits_max_abs_diff(a, b, 5), 0.5);
    ck_assert_int_eq(logits_first_nonfinite(a, 5), -1);
    float c[5];
    memcpy(c, b, sizeof c);
    c[3] = NAN;
    ck_assert_int_eq(logits_first_nonfinite(c, 5), 3);
    ck_assert(isnan(logits_max_abs_diff(a, c, 5))); /* not measurable: never "no difference" */
    ck_assert(isnan(diff_max(0.5, NAN)));
    ck_assert(isnan(diff_max(NAN, 0.5)));
    ck_assert_double_eq(diff_max(0.5, 0.25), 0.5);
    c[3] = INFINITY;
    ck_assert_int_eq(logits_first_nonfinite(c, 5), 3);
    /* Δlog p ignores a shift of every logit, which changes no probability */
    float d[5];
    for (int i = 0; i < 5; i++) d[i] = a[i] + 7.0f;
    ck_assert_double_le(logits_max_abs_dlogprob(a, d, 5), 1e-6);
    ck_assert_double_ge(logits_max_abs_dlogprob(a, b, 5), 0.1);
}
END_TEST

Suite *make_generate_suite(void) {
    Suite *s = suite_create("generate");
    TCase *t = tcase_create("steps");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_rewind_reports_no_eviction);
    tcase_add_test(t, test_rewind_refused);
    tcase_add_test(t, test_window_reports_evictions);
    tcase_add_test(t, test_window_shorter_than_prompt);
    tcase_add_test(t, test_article_bug_reports_forgetting);
    tcase_add_test(t, test_recompute_rows);
    tcase_add_test(t, test_bad_steps);
    tcase_add_test(t, test_logit_helpers);
    suite_add_tcase(s, t);
    return s;
}
