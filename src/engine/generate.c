/* generate.c — the prefill/decode loop around model_forward. */
#include "generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int generator_init(Generator *g, Model *m, GenMode mode) {
    const Config *cfg = &m->cfg;
    memset(g, 0, sizeof *g);
    g->m = m;
    g->mode = mode;
    g->tokens = malloc((size_t)cfg->N * sizeof *g->tokens);
    g->logits = calloc((size_t)cfg->V, sizeof *g->logits);
    if (!g->tokens || !g->logits ||
        kvcache_init(&g->cache, cfg->L, cfg->NH, cfg->C / cfg->NH, cfg->N) != 0) {
        generator_free(g);
        return -1;
    }
    return 0;
}

void generator_free(Generator *g) {
    free(g->tokens);
    free(g->logits);
    kvcache_free(&g->cache);
    memset(g, 0, sizeof *g);
}

/* Evict cache slots first .. first+count-1 and note their positions for the next
 * step's report (contiguous in every use: the oldest after the sinks, or all but the
 * newest step's). 0, or -1. */
static int evict(Generator *g, int first, int count) {
    if (count <= 0) return 0;
    const int p0 = g->cache.pos[first];
    if (kvcache_drop(&g->cache, first, count)) return -1;
    if (g->evicted_n == 0 || p0 < g->evicted_pos0) g->evicted_pos0 = p0;
    g->evicted_n += count;
    return 0;
}

/* The article's eval-mode cache: after a step, keep only that step's own K and V. */
static void forget_history(Generator *g, int n) {
    if (g->cache.len > n) evict(g, 0, g->cache.len - n);
}

int generator_set_evict(Generator *g, Evictor *e) {
    if (e && (g->mode != GEN_CACHE || g->window || e->N != g->m->cfg.N || e->L != g->m->cfg.L ||
              e->NH != g->m->cfg.NH))
        return -1;
    g->evict = e;
    return 0;
}

/* The policy sees every layer's attention weights (HOOK_PATTERN). */
static int evict_hook(const HookEvent *ev, void *user) {
    evict_observe(user, ev->layer, ev->data, ev->shape[1], ev->shape[2], ev->pos0);
    return 0;
}

/* One model_forward of step `step`, reporting the evictions since the last one. */
static int step_forward(Generator *g, const int *tokens, int n, Phase ph, int step, Hooks *hooks) {
    Hooks with; /* the caller's hooks and the policy's */
    if (g->evict && (g->evict->p.policy == EVICT_H2O || g->evict->p.policy == EVICT_SNAPKV)) {
        if (hooks) with = *hooks;
        else hooks_init(&with);
        if (hooks_subscribe(&with, HOOK_BIT(HOOK_PATTERN), evict_hook, g->evict)) return -1;
        hooks = &with;
    }
    g->cache.keep = g->evict ? evict_mask(g->evict) : NULL;
    g->cache.keep_stride = g->m->cfg.N;
    StepLabel lb = {.phase = ph, .step = step, .hooks = hooks, .evicted_pos0 = g->evicted_pos0,
                    .evicted_n = g->evicted_n};
    int rc = model_forward(g->m, &g->cache, tokens, n, g->logits, &lb, &g->total);
    if (rc == 0) g->evicted_n = 0;
    return rc;
}

int generator_prefill(Generator *g, const int *prompt, int n, Hooks *hooks) {
    if (n < 1 || n > g->m->cfg.N) return -1;
    memcpy(g->tokens, prompt, (size_t)n * sizeof *prompt);
    g->len = n;
    kvcache_reset(&g->cache);
    g->evicted_n = 0;
    if (g->evict) evict_reset(g->evict);
    int rc = step_forward(g, g->tokens, n, PHASE_PREFILL, 0, hooks);
    if (rc == 0 && g->mode == GEN_ARTICLE_BUG) forget_history(g, n);
    if (rc == 0 && g->evict) evict_prefill_done(g->evict, n);
    if (rc == 0 && logits_first_nonfinite(g->logits, g->m->cfg.V) >= 0) rc = GEN_NONFINITE;
    return rc;
}

int generator_rewind(Generator *g) {
    if (g->mode != GEN_CACHE || g->window || g->evict || g->len < 1 || g->cache.len < 1) return -1;
    if (kvcache_truncate(&g->cache, g->cache.len - 1)) return -1;
    g->len--;
    return 0;
}

int logits_first_nonfinite(const float *logits, int n) {
    for (int i = 0; i < n; i++)
        if (!isfinite(logits[i])) return i;
    return -1;
}

int logits_argmax(const float *logits, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

double logits_max_abs_diff(const float *a, const float *b, int n) {
    double d = 0.0;
    for (int i = 0; i < n; i++) d = diff_max(d, fabs((double)a[i] - (double)b[i]));
    return d;
}

double logits_max_abs_dlogprob(const float *a, const float *b, int n) {
    double ma = a[0], mb = b[0], sa = 0.0, sb = 0.0, d = 0.0;
    for (int i = 1; i < n; i++) {
        ma = fmax(ma, a[i]);
        mb = fmax(mb, b[i]);
    }
    for (int i = 0; i < n; i++) {
        sa += exp(a[i] - ma);
        sb += exp(b[i] - mb);
    }
    const double la = ma + log(sa), lb = mb + log(sb);
    for (int i = 0; i < n; i++) d = diff_max(d, fabs((a[i] - la) - (b[i] - lb)));
    return d;
}

double logit_drift_add(LogitDrift *d, const float *test, const float *ref, int n) {
    double mx = 0.0;
    for (int i = 0; i < n; i++) {
        const double e = fabs((double)test[i] - (double)ref[i]);
        mx = diff_max(mx, e);
        d->sum_abs += e;
    }
    d->max_abs = diff_max(d->max_abs, mx);
    d->n += n;
    d->agree += logits_argmax(test, n) == logits_argmax(ref, n);
    d->steps++;
    return mx;
}

int generator_argmax(const Generator *g) { return logits_argmax(g->logits, g->m->cfg.V); }

int generator_next_rows(const Generator *g) { return g->mode == GEN_RECOMPUTE ? g->len + 1 : 1; }

int generator_next_eviction(const Generator *g, int *first) {
    *first = g->sink;
    if (g->mode != GEN_CACHE || g->window <= 0 || g->cache.len + 1 <= g->window) return 0;
    return g->cache.len + 1 - g->window; /* the oldest tokens after the sinks */
}

int generator_next_kv_tokens(const Generator *g) {
    int first;
    if (g->mode == GEN_RECOMPUTE) return g->len + 1;
    return g->cache.len + 1 - generator_next_eviction(g, &first);
}

int generator_decode(Generator *g, int token, int step, Hooks *hooks) {
    if (g->len >= g->m->cfg.N) return -1;
    g->tokens[g->len++] = token;
    int rc;
    if (g->mode == GEN_RECOMPUTE) {
        /* no cache: run the whole sequence from scratch */
        kvcache_reset(&g->cache);
        rc = step_forward(g, g->tokens, g->len, PHASE_DECODE, step, hooks);
    } else {
        int first, n = g->window > 0 ? generator_next_eviction(g, &first) : 0;
        rc = n > 0 ? evict(g, first, n) : 0; /* the window makes room */
        if (rc == 0 && g->evict) rc = evict_before_step(g->evict, g->len - 1); /* the policy's */
        if (rc == 0) rc = step_forward(g, &g->tokens[g->len - 1], 1, PHASE_DECODE, step, hooks);
        if (rc == 0 && g->mode == GEN_ARTICLE_BUG) forget_history(g, 1);
    }
    if (rc) g->len--;
    else if (logits_first_nonfinite(g->logits, g->m->cfg.V) >= 0) rc = GEN_NONFINITE;
    return rc;
}
