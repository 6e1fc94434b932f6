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

/* The article's eval-mode cache: after a step, keep only that step's own K and V. */
static void forget_history(Generator *g, int n) {
    if (g->mode == GEN_ARTICLE_BUG && g->cache.len > n) kvcache_drop(&g->cache, 0, g->cache.len - n);
}

int generator_prefill(Generator *g, const int *prompt, int n, Hooks *hooks) {
    if (n < 1 || n > g->m->cfg.N) return -1;
    memcpy(g->tokens, prompt, (size_t)n * sizeof *prompt);
    g->len = n;
    kvcache_reset(&g->cache);
    StepLabel lb = {PHASE_PREFILL, 0, hooks};
    int rc = model_forward(g->m, &g->cache, g->tokens, n, g->logits, &lb, &g->total);
    if (rc == 0) forget_history(g, n);
    if (rc == 0 && logits_first_nonfinite(g->logits, g->m->cfg.V) >= 0) rc = GEN_NONFINITE;
    return rc;
}

int generator_rewind(Generator *g) {
    if (g->mode != GEN_CACHE || g->window || g->len < 1 || g->cache.len < 1) return -1;
    if (kvcache_drop(&g->cache, g->cache.len - 1, 1)) return -1;
    g->cache.n_seen--;
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
    StepLabel lb = {PHASE_DECODE, step, hooks};
    int rc;
    if (g->mode == GEN_RECOMPUTE) {
        /* no cache: run the whole sequence from scratch */
        kvcache_reset(&g->cache);
        rc = model_forward(g->m, &g->cache, g->tokens, g->len, g->logits, &lb, &g->total);
    } else {
        int first, evict = generator_next_eviction(g, &first);
        rc = evict ? kvcache_drop(&g->cache, first, evict) : 0; /* window: make room */
        if (rc == 0)
            rc = model_forward(g->m, &g->cache, &g->tokens[g->len - 1], 1, g->logits, &lb, &g->total);
        if (rc == 0) forget_history(g, 1);
    }
    if (rc) g->len--;
    else if (logits_first_nonfinite(g->logits, g->m->cfg.V) >= 0) rc = GEN_NONFINITE;
    return rc;
}
