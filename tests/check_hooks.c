/* check_hooks.c — subscribe and dispatch (hooks.h): a full subscriber table, masks,
 * the order of delivery and the first non-zero answer that stops it; a hook that aborts
 * a forward pass through model_forward (and leaves the cache as it was); the hook
 * names, both ways; the FLOP sums. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "generate.h"
#include "hooks.h"
#include "model.h"
#include "testutil.h"

/* A subscriber that writes its number into a log and answers `answer`. */
typedef struct {
    int id, answer, calls;
    int *log, *n;
} Sub;

static int record(const HookEvent *ev, void *user) {
    (void)ev;
    Sub *s = user;
    s->calls++;
    s->log[(*s->n)++] = s->id;
    return s->answer;
}

START_TEST(test_full_table) {
    Hooks h;
    Sub subs[HOOKS_MAX_SUBSCRIBERS + 1];
    int log[64], n = 0;
    hooks_init(&h);
    for (int i = 0; i < HOOKS_MAX_SUBSCRIBERS; i++) {
        subs[i] = (Sub){.id = i, .log = log, .n = &n};
        ck_assert_int_eq(hooks_subscribe(&h, HOOK_BIT(i % HOOK_COUNT), record, &subs[i]), 0);
    }
    subs[HOOKS_MAX_SUBSCRIBERS] = (Sub){.id = 99, .log = log, .n = &n};
    ck_assert_int_eq(hooks_subscribe(&h, HOOK_ALL, record, &subs[HOOKS_MAX_SUBSCRIBERS]), -1);
    ck_assert_int_eq(h.n, HOOKS_MAX_SUBSCRIBERS);
    ck_assert_int_eq(hooks_subscribe(&h, HOOK_ALL, NULL, NULL), -1); /* no function */
    /* the refused one hears nothing: subscriber i, and only it, hears point i */
    for (int p = 0; p < HOOK_COUNT; p++) {
        const int listeners = p < HOOKS_MAX_SUBSCRIBERS ? 1 : 0;
        n = 0;
        HookEvent ev = {.point = (HookPoint)p};
        ck_assert_int_eq(hooks_emit(&h, &ev), 0);
        ck_assert_int_eq(n, listeners);
        if (n) ck_assert_int_eq(log[0], p);
        ck_assert_int_eq(hooks_wants(&h, (HookPoint)p), listeners);
    }
    ck_assert_int_eq(subs[HOOKS_MAX_SUBSCRIBERS].calls, 0);
    ck_assert(!hooks_wants(NULL, HOOK_Q));
    ck_assert_int_eq(hooks_emit(NULL, &(HookEvent){.point = HOOK_Q}), 0);
}
END_TEST

START_TEST(test_order_and_stop) {
    Hooks h;
    int log[8], n = 0;
    Sub a = {.id = 1, .log = log, .n = &n}, b = {.id = 2, .answer = 5, .log = log, .n = &n},
        c = {.id = 3, .log = log, .n = &n};
    hooks_init(&h);
    hooks_subscribe(&h, HOOK_BIT(HOOK_Q) | HOOK_BIT(HOOK_K), record, &a);
    hooks_subscribe(&h, HOOK_BIT(HOOK_K), record, &b);
    hooks_subscribe(&h, HOOK_BIT(HOOK_Q) | HOOK_BIT(HOOK_K), record, &c);
    ck_assert_int_eq(hooks_emit(&h, &(HookEvent){.point = HOOK_Q}), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(log[0] * 10 + log[1], 13); /* in order of subscription, b not asked */
    n = 0;
    ck_assert_int_eq(hooks_emit(&h, &(HookEvent){.point = HOOK_K}), 5); /* b's answer */
    ck_assert_int_eq(n, 2); /* and c never heard */
    ck_assert_int_eq(c.calls, 1);
    ck_assert(!hooks_wants(&h, HOOK_V));
    /* bits past the last point are not points */
    Hooks g;
    hooks_init(&g);
    hooks_subscribe(&g, ~0u, record, &a);
    ck_assert_uint_eq(g.active, HOOK_ALL);
}
END_TEST

/* Stop at the pattern of layer 1, step 1. */
static int abort_at(const HookEvent *ev, void *user) {
    int *seen = user;
    (*seen)++;
    return ev->point == HOOK_PATTERN && ev->layer == 1 && ev->step == 1 ? 7 : 0;
}

/* A hook's non-zero answer comes back out of model_forward (and generator_decode), the
 * step leaves the cache as it was, and the same step runs again to the same logits. */
START_TEST(test_abort_through_forward) {
    Config cfg = tiny_config(2, 2, 16, 32, 30);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 3), 0);
    Generator g, ref;
    ck_assert_int_eq(generator_init(&g, &m, GEN_CACHE), 0);
    ck_assert_int_eq(generator_init(&ref, &m, GEN_CACHE), 0);
    const int prompt[5] = {1, 2, 3, 4, 5};
    Hooks h;
    int seen = 0;
    hooks_init(&h);
    hooks_subscribe(&h, HOOK_BIT(HOOK_PATTERN) | HOOK_BIT(HOOK_MLP_OUT), abort_at, &seen);
    ck_assert_int_eq(generator_prefill(&g, prompt, 5, &h), 0);
    ck_assert_int_eq(generator_prefill(&ref, prompt, 5, NULL), 0);
    const size_t used = kvcache_bytes_used(&g.cache);
    const int before = seen;
    ck_assert_int_eq(generator_decode(&g, 9, 1, &h), 7);
    ck_assert_int_eq(seen - before, 3); /* pattern 0, mlp_out 0, pattern 1: then nothing */
    ck_assert_int_eq(g.len, 5);
    ck_assert_int_eq(g.cache.len, 5);
    ck_assert_int_eq(g.cache.n_seen, 5);
    ck_assert_uint_eq(kvcache_bytes_used(&g.cache), used);
    ck_assert_int_eq(generator_decode(&g, 9, 2, &h), 0); /* step 2 is not stopped */
    ck_assert_int_eq(generator_decode(&ref, 9, 1, NULL), 0);
    ck_assert_mem_eq(g.logits, ref.logits, 30 * sizeof(float));
    /* model_forward itself passes the code on */
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, cfg.L, cfg.NH, cfg.C / cfg.NH, cfg.N), 0);
    StepLabel lb = {.phase = PHASE_DECODE, .step = 1, .hooks = &h};
    ck_assert_int_eq(model_forward(&m, &c, prompt, 5, NULL, &lb, NULL), 7);
    ck_assert_int_eq(c.len, 0);
    kvcache_free(&c);
    generator_free(&g);
    generator_free(&ref);
    model_free(&m);
}
END_TEST

START_TEST(test_names) {
    char buf[64];
    for (int p = 0; p < HOOK_COUNT; p++) {
        const int layers[] = {0, 7, 123};
        for (int k = 0; k < 3; k++) {
            int layer = p == HOOK_LOGITS || p == HOOK_STEP_END ? -1 : layers[k];
            HookPoint back;
            int l;
            hook_name((HookPoint)p, layer, buf, sizeof buf);
            ck_assert_msg(hook_parse(buf, &back, &l) == 0, "%s does not parse", buf);
            ck_assert_int_eq(back, p);
            ck_assert_int_eq(l, layer);
        }
    }
    ck_assert_str_eq(hook_name(HOOK_Q, 3, buf, sizeof buf), "blocks.3.attn.hook_q");
    ck_assert_str_eq(hook_name(HOOK_LOGITS, -1, buf, sizeof buf), "hook_logits");
    static const char *const bad[] = {"hook_q", "attn.hook_q", "blocks.x.attn.hook_q",
                                      "blocks.-1.attn.hook_q", "blocks.0.hook_logits",
                                      "blocks.0attn.hook_q", "blocks..attn.hook_q",
                                      "blocks.1.attn.hook_nothing", "", "blocks.9999999.hook_resid_pre"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        HookPoint p;
        int l;
        ck_assert_msg(hook_parse(bad[i], &p, &l) == -1, "\"%s\" parsed", bad[i]);
    }
    ck_assert_str_eq(phase_name(PHASE_PREFILL), "prefill");
    ck_assert_str_eq(phase_name(PHASE_DECODE), "decode");
}
END_TEST

START_TEST(test_flop_sums) {
    FlopCount a = {1, 2, 3, 4, 50, 600, 7000}, b = {10, 20, 30, 40, 500, 6000, 70000};
    ck_assert_uint_eq(flops_layers(&a), 10);
    ck_assert_uint_eq(flops_total(&a), 660); /* bytes are not FLOPs */
    flops_add(&a, &b);
    ck_assert_uint_eq(flops_layers(&a), 110);
    ck_assert_uint_eq(flops_total(&a), 7260);
    ck_assert_uint_eq(a.weight_bytes, 77000);
    ck_assert_uint_eq(a.lm_head, 550);
}
END_TEST

/* Head 1 of layer 0's z, seen by hook_z: 1 if all zero. */
static int z_head1_zero(const HookEvent *ev, void *user) {
    int *zero = user;
    if (ev->layer != 0) return 0;
    const int NH = ev->shape[1], hs = ev->shape[2];
    for (int i = 0; i < ev->shape[0]; i++)
        for (int c = 0; c < hs; c++)
            if (ev->data[((size_t)i * NH + 1) * hs + c] != 0.0f) *zero = 0;
    return 0;
}

/* Model.head_off, the zero ablation of a head: hook_z shows its z as zeros, and the
 * logits are those of a second code path, the clean forward pass of the same model with
 * the rows of layer 0's attn.c_proj that read head 1 zeroed (z·W is the same with z = 0
 * or with those rows 0); and they differ from the unablated logits. */
START_TEST(test_head_ablation) {
    Config cfg = tiny_config(2, 4, 32, 32, 30);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 5), 0);
    const int hs = cfg.C / cfg.NH, prompt[6] = {3, 1, 4, 1, 5, 9};
    float clean[30], ablated[30], rows0[30];
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, cfg.L, cfg.NH, hs, cfg.N), 0);
    ck_assert_int_eq(model_forward(&m, &c, prompt, 6, clean, NULL, NULL), 0);
    kvcache_free(&c);
    const uint64_t off[2] = {1u << 1, 0};
    m.head_off = off;
    Hooks h;
    int zero = 1;
    hooks_init(&h);
    hooks_subscribe(&h, HOOK_BIT(HOOK_Z), z_head1_zero, &zero);
    StepLabel lb = {.phase = PHASE_PREFILL, .hooks = &h};
    ck_assert_int_eq(kvcache_init(&c, cfg.L, cfg.NH, hs, cfg.N), 0);
    ck_assert_int_eq(model_forward(&m, &c, prompt, 6, ablated, &lb, NULL), 0);
    kvcache_free(&c);
    ck_assert_msg(zero, "hook_z shows a non-zero z for the ablated head");
    m.head_off = NULL;
    float *w = (float *)m.w.h[0].attn_proj_w; /* (C in, C out): rows of head 1's channels */
    memset(w + (size_t)hs * cfg.C, 0, (size_t)hs * cfg.C * sizeof *w);
    model_refresh_panels(&m);
    ck_assert_int_eq(kvcache_init(&c, cfg.L, cfg.NH, hs, cfg.N), 0);
    ck_assert_int_eq(model_forward(&m, &c, prompt, 6, rows0, NULL, NULL), 0);
    kvcache_free(&c);
    double diff = 0;
    for (int i = 0; i < 30; i++) {
        ck_assert_msg(fabsf(ablated[i] - rows0[i]) <= 1e-5f * (1 + fabsf(rows0[i])),
                      "logit %d: %g ablated, %g with the rows zeroed", i, (double)ablated[i],
                      (double)rows0[i]);
        diff = fmax(diff, fabs((double)ablated[i] - clean[i]));
    }
    ck_assert_msg(diff > 1e-4, "ablating a head changed no logit (largest change %g)", diff);
    model_free(&m);
}
END_TEST

/* Mean ablation (Model.head_fill): head 1 of layer 0 outputs a fixed z, whatever it reads.
 * Second code path: the clean model with that head's rows of attn.c_proj zeroed and its
 * bias raised by fill·W (the rows' contribution for that z), to a tolerance for the
 * changed order of the sums. */
START_TEST(test_head_mean_ablation) {
    Config cfg = tiny_config(2, 4, 32, 32, 30);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 6), 0);
    const int C = cfg.C, hs = C / cfg.NH, prompt[6] = {2, 7, 1, 8, 2, 8};
    float fill[2 * 32], ablated[30], folded[30];
    for (int i = 0; i < 2 * C; i++) fill[i] = 0.1f * (float)((i * 7) % 11) - 0.5f;
    const uint64_t off[2] = {1u << 1, 0};
    m.head_off = off;
    m.head_fill = fill;
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, cfg.L, cfg.NH, hs, cfg.N), 0);
    ck_assert_int_eq(model_forward(&m, &c, prompt, 6, ablated, NULL, NULL), 0);
    kvcache_free(&c);
    m.head_off = NULL;
    m.head_fill = NULL;
    float *w = (float *)m.w.h[0].attn_proj_w, *b = (float *)m.w.h[0].attn_proj_b;
    for (int o = 0; o < C; o++)
        for (int r = hs; r < 2 * hs; r++) b[o] += fill[r] * w[(size_t)r * C + o];
    memset(w + (size_t)hs * C, 0, (size_t)hs * C * sizeof *w);
    model_refresh_panels(&m);
    ck_assert_int_eq(kvcache_init(&c, cfg.L, cfg.NH, hs, cfg.N), 0);
    ck_assert_int_eq(model_forward(&m, &c, prompt, 6, folded, NULL, NULL), 0);
    kvcache_free(&c);
    for (int i = 0; i < 30; i++)
        ck_assert_msg(fabsf(ablated[i] - folded[i]) <= 1e-4f * (1 + fabsf(folded[i])),
                      "logit %d: %g mean-ablated, %g folded into the bias", i, (double)ablated[i],
                      (double)folded[i]);
    model_free(&m);
}
END_TEST

Suite *make_hooks_suite(void) {
    Suite *s = suite_create("hooks");
    TCase *tc = tcase_create("hooks");
    tcase_add_test(tc, test_full_table);
    tcase_add_test(tc, test_order_and_stop);
    tcase_add_test(tc, test_abort_through_forward);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_flop_sums);
    tcase_add_test(tc, test_head_ablation);
    tcase_add_test(tc, test_head_mean_ablation);
    suite_add_tcase(s, tc);
    return s;
}
