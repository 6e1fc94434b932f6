/* observers.c — a step's shape, the newest attention rows; see observers.h. */
#include "observers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int on_shape(const HookEvent *ev, void *user) {
    StepShape *s = user;
    if (ev->point == HOOK_STEP_END) {
        s->flops = flops_total(&ev->stats->flops);
        s->kv_bytes = ev->stats->kv_bytes;
    } else if (ev->layer == 0 && ev->point == HOOK_Q) {
        s->q_rows = ev->shape[0];
    } else if (ev->layer == 0 && ev->point == HOOK_CACHE_K) {
        s->k_rows = ev->shape[0];
    } else if (ev->layer == 0 && ev->point == HOOK_ATTN_SCORES) {
        /* future cells are -inf: count the ones attention really computed */
        size_t n = (size_t)ev->shape[0] * ev->shape[1] * ev->shape[2];
        s->scores = 0;
        for (size_t i = 0; i < n; i++) s->scores += isfinite(ev->data[i]) != 0;
    }
    return 0;
}

int step_shape_attach(StepShape *s, Hooks *h) {
    const uint32_t points = HOOK_BIT(HOOK_Q) | HOOK_BIT(HOOK_CACHE_K) | HOOK_BIT(HOOK_ATTN_SCORES) |
                            HOOK_BIT(HOOK_STEP_END);
    return hooks_subscribe(h, points, on_shape, s);
}

int last_rows_init(LastRows *r, int L, int NH, int N) {
    r->L = L, r->NH = NH, r->N = N;
    r->row = calloc((size_t)L * NH * N, sizeof *r->row);
    return r->row ? 0 : -1;
}

void last_rows_free(LastRows *r) {
    free(r->row);
    r->row = NULL;
}

static int on_pattern(const HookEvent *ev, void *user) {
    LastRows *r = user;
    const int NH = ev->shape[0], n = ev->shape[1], Tt = ev->shape[2];
    for (int h = 0; h < NH; h++)
        memcpy(r->row + ((size_t)ev->layer * r->NH + h) * r->N,
               ev->data + ((size_t)h * n + n - 1) * Tt, (size_t)Tt * sizeof(float));
    return 0;
}

int last_rows_attach(LastRows *r, Hooks *h) {
    return hooks_subscribe(h, HOOK_BIT(HOOK_PATTERN), on_pattern, r);
}
