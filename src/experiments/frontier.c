/* frontier.c — every lever against the full cache on the same texts (frontier.h). */
#include "frontier.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "kvcache.h"
#include "quant.h"

static const char *const LEVERS[LEVER_COUNT] = {"full", "precision", "evict", "heads"};

const char *frontier_lever_name(Lever l) { return (unsigned)l < LEVER_COUNT ? LEVERS[l] : "?"; }

void frontier_cfg_label(const FrontierCfg *c, char *buf, size_t size) {
    switch (c->lever) {
    case LEVER_PRECISION: snprintf(buf, size, "%s%s", dtype_name(c->dtype), c->rotate ? "+rot" : ""); break;
    case LEVER_EVICT: snprintf(buf, size, "%s K=%d", evict_policy_name(c->ev.policy), c->ev.budget); break;
    case LEVER_HEADS: snprintf(buf, size, "G=%d", c->kv_heads); break;
    default: snprintf(buf, size, "fp32"); break;
    }
}

double frontier_kl_bits(const float *a, const float *b, int V) {
    double ma = a[0], mb = b[0], sa = 0.0, sb = 0.0, kl = 0.0;
    for (int i = 1; i < V; i++) ma = fmax(ma, a[i]), mb = fmax(mb, b[i]);
    for (int i = 0; i < V; i++) sa += exp(a[i] - ma), sb += exp(b[i] - mb);
    const double la = ma + log(sa), lb = mb + log(sb);
    for (int i = 0; i < V; i++) {
        const double lpa = a[i] - la, lpb = b[i] - lb;
        kl += exp(lpa) * (lpa - lpb);
    }
    return kl / M_LN2;
}

/* −log2 of the probability logits (V) give token t. */
static double bits_of(const float *logits, int V, int t) {
    double mx = logits[0], s = 0.0;
    for (int v = 1; v < V; v++) mx = fmax(mx, logits[v]);
    for (int v = 0; v < V; v++) s += exp(logits[v] - mx);
    return (log(s) + mx - logits[t]) / M_LN2;
}

/* The reference pass's recorder: each query's weights into its row. */
typedef struct {
    float *rows;
    int NH, N;
} RowRec;

static int record_rows(const HookEvent *ev, void *user) {
    const RowRec *r = user;
    const int n = ev->shape[1], Tt = ev->shape[2];
    for (int h = 0; h < r->NH; h++)
        for (int i = 0; i < n; i++) {
            const int q = ev->pos0 + i;
            float *dst = r->rows + (((size_t)ev->layer * r->NH + h) * r->N + q) * r->N;
            memcpy(dst, ev->data + ((size_t)h * n + i) * Tt, (size_t)Tt * sizeof *dst);
            memset(dst + Tt, 0, (size_t)(r->N - Tt) * sizeof *dst);
        }
    return 0;
}

/* Prefill tok[0..P), then decode tok[P..T−2]; after each decode step `each` runs. */
typedef int (*StepFn)(void *user, const Generator *g, int t);

static int teacher_force(Generator *g, const int *tok, int T, int P, Hooks *hooks, StepFn each,
                         void *user) {
    int rc = generator_prefill(g, tok, P, hooks);
    for (int t = P; t < T - 1 && rc == 0; t++)
        if ((rc = generator_decode(g, tok[t], t - P + 1, hooks)) == 0) rc = each(user, g, t);
    return rc;
}

typedef struct {
    float *logits;
    int V, P;
} RefOut;

static int keep_logits(void *user, const Generator *g, int t) {
    RefOut *o = user;
    memcpy(o->logits + (size_t)(t - o->P) * o->V, g->logits, (size_t)o->V * sizeof(float));
    return 0;
}

int frontier_reference(Model *m, const int *tok, int T, int P, float *logits, float *rows) {
    const Config *cfg = &m->cfg;
    if (T > cfg->N || P < 1 || P >= T - 1) return -1;
    Generator g;
    Hooks hooks;
    RowRec rec = {rows, cfg->NH, cfg->N};
    RefOut out = {logits, cfg->V, P};
    hooks_init(&hooks);
    if (rows) hooks_subscribe(&hooks, HOOK_BIT(HOOK_PATTERN), record_rows, &rec);
    if (generator_init(&g, m, GEN_CACHE)) return -1;
    const int rc = teacher_force(&g, tok, T, P, rows ? &hooks : NULL, keep_logits, &out);
    generator_free(&g);
    return rc;
}

typedef struct {
    const FrontierCfg *c;
    const Evictor *ev;
    const int *tok;
    const float *ref, *rows;
    FrontierAcc *acc;
    int P, L, NH, N, V;
    double head_bytes; /* bytes of one position of one head, K and V */
} RunCtx;

/* Bytes per token of context and, with rows, the weight each head lost, at step t. */
static double evict_bytes_and_mass(RunCtx *x, int t) {
    double held = 0.0;
    for (int l = 0; l < x->L; l++)
        for (int h = 0; h < x->NH; h++) {
            const unsigned char *keep = x->ev->keep + ((size_t)l * x->NH + h) * x->N;
            const float *row = x->rows ? x->rows + (((size_t)l * x->NH + h) * x->N + t) * x->N : NULL;
            double lost = 0.0;
            int kept = 0;
            for (int j = 0; j <= t; j++) {
                kept += keep[j] != 0;
                if (!keep[j] && row) lost += row[j];
            }
            held += kept * x->head_bytes;
            if (x->acc->mass) x->acc->mass[l * x->NH + h] += lost;
        }
    return held / (t + 1);
}

static int score_step(void *user, const Generator *g, int t) {
    RunCtx *x = user;
    const float *ref = x->ref + (size_t)(t - x->P) * x->V;
    FrontierAcc *a = x->acc;
    a->kl += frontier_kl_bits(ref, g->logits, x->V);
    a->bits += bits_of(g->logits, x->V, x->tok[t + 1]);
    const int top = logits_argmax(g->logits, x->V);
    a->agree += top == logits_argmax(ref, x->V);
    a->copied += top == x->tok[t + 1];
    a->n++;
    a->steps++;
    a->bytes += x->ev ? evict_bytes_and_mass(x, t) : (double)kvcache_bytes_per_token(&g->cache);
    return 0;
}

int frontier_run(Model *m, const FrontierCfg *c, const int *tok, int T, int P,
                 const float *ref_logits, const float *rows, FrontierAcc *acc,
                 unsigned char *keep_out) {
    const Config *cfg = &m->cfg;
    if (T > cfg->N || P < 1 || P >= T - 1) return -1;
    Generator g;
    Evictor ev;
    int rc = 0, have_ev = 0;
    if (generator_init(&g, m, GEN_CACHE)) return -1;
    if (c->lever == LEVER_PRECISION) rc = kvcache_set_dtype(&g.cache, c->dtype) ||
                                          kvcache_set_transform(&g.cache, cfg->NH, c->rotate);
    if (c->lever == LEVER_HEADS) rc = kvcache_set_transform(&g.cache, c->kv_heads, 0);
    if (c->lever == LEVER_EVICT && rc == 0) {
        if (evict_params_check(&c->ev, cfg->N, P) || evict_init(&ev, &c->ev, cfg->L, cfg->NH, cfg->N))
            rc = -1;
        else {
            have_ev = 1;
            ev.oracle = rows;
            if (c->ev.policy == EVICT_ORACLE && !rows) rc = -1;
            else rc = generator_set_evict(&g, &ev);
        }
    }
    RunCtx x = {c, have_ev ? &ev : NULL, tok, ref_logits, rows, acc, P, cfg->L, cfg->NH, cfg->N,
                cfg->V, 2.0 * (double)g.cache.row_bytes / cfg->NH};
    if (rc == 0) rc = teacher_force(&g, tok, T, P, NULL, score_step, &x);
    if (rc == 0 && have_ev && keep_out) memcpy(keep_out, ev.keep, (size_t)cfg->L * cfg->NH * cfg->N);
    if (have_ev) evict_free(&ev);
    generator_free(&g);
    return rc;
}

void frontier_accumulated(const float *rows, int L, int NH, int N, int T, double *acc) {
    for (int lh = 0; lh < L * NH; lh++) {
        double *a = acc + (size_t)lh * T;
        for (int j = 0; j < T; j++) a[j] = 0.0;
        for (int q = 0; q < T; q++) {
            const float *row = rows + ((size_t)lh * N + q) * N;
            for (int j = 0; j <= q; j++) a[j] += row[j];
        }
    }
}

/* R² of the least-squares line through (x, y), its slope into *slope. */
static double line_r2(const double *x, const double *y, int n, double *slope) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    for (int i = 0; i < n; i++) {
        sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i], syy += y[i] * y[i];
    }
    const double vx = sxx - sx * sx / n, vy = syy - sy * sy / n, cxy = sxy - sx * sy / n;
    *slope = vx > 0 ? cxy / vx : NAN;
    return vx > 0 && vy > 0 ? cxy * cxy / (vx * vy) : NAN;
}

void frontier_fit(const double *y, int n, double *slope, double *r2_power, double *r2_exp) {
    double *lx = malloc((size_t)n * 3 * sizeof *lx), dummy;
    if (!lx) {
        *slope = *r2_power = *r2_exp = NAN;
        return;
    }
    double *lin = lx + n, *ly = lx + 2 * n;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (y[i] > 0) lx[k] = log(i + 1.0), lin[k] = i + 1.0, ly[k] = log(y[i]), k++;
    *r2_power = line_r2(lx, ly, k, slope);
    *r2_exp = line_r2(lin, ly, k, &dummy);
    free(lx);
}

typedef struct {
    float *k, *v;
    int T, C;
} KvRec;

static int record_kv(const HookEvent *ev, void *user) {
    const KvRec *r = user;
    float *dst = (ev->point == HOOK_CACHE_K ? r->k : r->v) + (size_t)ev->layer * r->T * r->C;
    memcpy(dst, ev->data, (size_t)ev->shape[0] * r->C * sizeof(float));
    return 0;
}

int frontier_kv(Model *m, const int *tok, int T, float *k, float *v) {
    Generator g;
    Hooks hooks;
    KvRec rec = {k, v, T, m->cfg.C};
    hooks_init(&hooks);
    hooks_subscribe(&hooks, HOOK_BIT(HOOK_CACHE_K) | HOOK_BIT(HOOK_CACHE_V), record_kv, &rec);
    if (generator_init(&g, m, GEN_CACHE)) return -1;
    const int rc = generator_prefill(&g, tok, T, &hooks);
    generator_free(&g);
    return rc ? -1 : 0;
}

int frontier_quant_error(const float *x, int T, int NH, int hs, Dtype dt, int rotate,
                         double *err2, double *sig2, double *peak, long *blocks) {
    KVCache c;
    const int C = NH * hs;
    float *seen = malloc((size_t)C * sizeof *seen);
    if (!seen || kvcache_init(&c, 1, NH, hs, T) || kvcache_set_dtype(&c, dt) ||
        kvcache_set_transform(&c, NH, rotate) || kvcache_reserve(&c, T)) {
        free(seen);
        kvcache_free(&c);
        return -1;
    }
    for (int t = 0; t < T; t++) {
        const float *row = x + (size_t)t * C;
        kvcache_store(&c, 0, t, row, row, t);
        memcpy(seen, row, (size_t)C * sizeof *seen);
        if (rotate) hadamard_rows(seen, NH, hs);
        for (int b = 0; b + 32 <= C; b += 32) {
            double mx = 0.0, ss = 0.0;
            for (int i = b; i < b + 32; i++) mx = fmax(mx, fabs(seen[i])), ss += (double)seen[i] * seen[i];
            if (ss > 0) *peak += mx / sqrt(ss / 32), ++*blocks;
        }
    }
    c.len = T;
    const float *rk, *rv;
    kvcache_layer(&c, 0, T, &rk, &rv);
    for (size_t i = 0; i < (size_t)T * C; i++) {
        const double d = (double)x[i] - rk[i];
        *err2 += d * d;
        *sig2 += (double)x[i] * x[i];
    }
    free(seen);
    kvcache_free(&c);
    return 0;
}
