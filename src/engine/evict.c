/* evict.c — window, H2O, SnapKV and the oracle as keep masks (evict.h). */
#include "evict.h"

#include <stdlib.h>
#include <string.h>

static const char *const NAMES[EVICT_COUNT] = {"window", "h2o", "snapkv", "oracle"};

const char *evict_policy_name(EvictPolicy p) { return (unsigned)p < EVICT_COUNT ? NAMES[p] : "?"; }

int evict_policy_parse(const char *s, EvictPolicy *p) {
    for (int i = 0; i < EVICT_COUNT; i++)
        if (strcmp(s, NAMES[i]) == 0) {
            *p = (EvictPolicy)i;
            return 0;
        }
    return -1;
}

EvictParams evict_params_default(EvictPolicy policy, int budget) {
    EvictParams p = {.policy = policy, .budget = budget, .sinks = 4, .recent = 0,
                     .obs_window = 16, .pool = 5};
    return p;
}

const char *evict_params_check(const EvictParams *p, int N, int prompt) {
    if ((unsigned)p->policy >= EVICT_COUNT) return "unknown eviction policy";
    if (p->budget < 1) return "the budget must be 1 position or more";
    if (p->budget > N) return "the budget is past the context";
    if (p->policy == EVICT_WINDOW && (p->sinks < 0 || p->sinks >= p->budget))
        return "the sinks must be fewer than the budget";
    if (p->policy == EVICT_H2O && (p->recent < 0 || p->recent >= p->budget))
        return "the recent positions must be fewer than the budget";
    if (p->policy == EVICT_SNAPKV) {
        if (p->obs_window < 1 || p->obs_window > prompt)
            return "the observation window is longer than the prompt";
        if (p->obs_window >= p->budget) return "the observation window must be below the budget";
        if (p->pool < 1 || p->pool % 2 == 0) return "the pooling kernel must be odd";
    }
    return NULL;
}

int evict_init(Evictor *e, const EvictParams *p, int L, int NH, int N) {
    memset(e, 0, sizeof *e);
    e->p = *p;
    if (e->p.recent == 0) e->p.recent = p->budget / 2;
    e->L = L, e->NH = NH, e->N = N;
    const size_t cells = (size_t)L * NH * N;
    e->keep = malloc(cells);
    e->acc = malloc(cells * sizeof *e->acc);
    e->order = malloc(2 * (size_t)N * sizeof *e->order);
    e->score = malloc((size_t)N * sizeof *e->score);
    if (!e->keep || !e->acc || !e->order || !e->score) {
        evict_free(e);
        return -1;
    }
    evict_reset(e);
    return 0;
}

void evict_free(Evictor *e) {
    free(e->keep);
    free(e->acc);
    free(e->order);
    free(e->score);
    memset(e, 0, sizeof *e);
}

void evict_reset(Evictor *e) {
    const size_t cells = (size_t)e->L * e->NH * e->N;
    memset(e->keep, 1, cells);
    for (size_t i = 0; i < cells; i++) e->acc[i] = 0.0;
    e->any_evicted = 0;
    e->prompt = 0;
}

static size_t row_of(const Evictor *e, int l, int h) { return ((size_t)l * e->NH + h) * e->N; }

void evict_observe(Evictor *e, int l, const float *pattern, int n, int Tt, int pos0) {
    if (e->p.policy != EVICT_H2O && e->p.policy != EVICT_SNAPKV) return;
    const int P = e->prompt ? e->prompt : pos0 + n; /* during the prefill: its length */
    for (int h = 0; h < e->NH; h++) {
        double *acc = e->acc + row_of(e, l, h);
        for (int i = 0; i < n; i++) {
            const float *row = pattern + ((size_t)h * n + i) * Tt;
            const int q = pos0 + i;
            if (e->p.policy == EVICT_SNAPKV && (e->prompt || q < P - e->p.obs_window)) continue;
            for (int j = 0; j <= q && j < Tt; j++) acc[j] += row[j];
        }
    }
}

/* idx[0..n) sorted by score descending, the earlier position first on a tie (merge sort
 * on positions given ascending: stable). tmp holds n ints. */
static void sort_by_score(int *idx, int *tmp, int n, const double *score) {
    for (int w = 1; w < n; w *= 2) {
        for (int lo = 0; lo < n; lo += 2 * w) {
            int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int a = lo, b = mid, k = lo;
            while (a < mid && b < hi) tmp[k++] = score[idx[b]] > score[idx[a]] ? idx[b++] : idx[a++];
            while (a < mid) tmp[k++] = idx[a++];
            while (b < hi) tmp[k++] = idx[b++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

/* Of the kept positions among 0..last, keep the `want` with the highest score: the
 * others are evicted. */
static void keep_top(Evictor *e, unsigned char *keep, const double *score, int last, int want) {
    int n = 0, *idx = e->order, *tmp = e->order + e->N;
    for (int j = 0; j <= last; j++)
        if (keep[j]) idx[n++] = j;
    if (n <= want) return;
    sort_by_score(idx, tmp, n, score);
    for (int i = want; i < n; i++) keep[idx[i]] = 0;
    e->any_evicted = 1;
}

/* SnapKV's votes max-pooled over the kernel, for the positions before the window. */
static void snap_pool(const Evictor *e, const double *votes, int upto, double *out) {
    const int r = e->p.pool / 2;
    for (int j = 0; j < upto; j++) {
        double m = votes[j];
        for (int d = -r; d <= r; d++)
            if (j + d >= 0 && j + d < upto && votes[j + d] > m) m = votes[j + d];
        out[j] = m;
    }
}

/* Head (l, h) cut to its budget among positions 0..t (t: the newest one, kept). */
static void cut_head(Evictor *e, int l, int h, int t) {
    unsigned char *keep = e->keep + row_of(e, l, h);
    const double *acc = e->acc + row_of(e, l, h);
    const int K = e->p.budget;
    if (evict_kept(e, l, h, t) <= K) return;
    switch (e->p.policy) {
    case EVICT_WINDOW:
        for (int j = e->p.sinks; j <= t - (K - e->p.sinks); j++) keep[j] = 0;
        e->any_evicted = 1;
        break;
    case EVICT_H2O: { /* the newest R stay; the older kept ones compete by acc */
        const int R = e->p.recent, old = t - R; /* positions 0..old compete */
        int kept_recent = 0;
        for (int j = old + 1; j <= t; j++) kept_recent += keep[j];
        keep_top(e, keep, acc, old, K - kept_recent);
        break;
    }
    case EVICT_SNAPKV: { /* after the prefill only: t = P − 1 */
        const int w = e->p.obs_window, upto = t + 1 - w;
        snap_pool(e, acc, upto, e->score);
        keep_top(e, keep, e->score, upto - 1, K - w);
        break;
    }
    case EVICT_ORACLE: {
        const float *row = e->oracle + (row_of(e, l, h) + (size_t)t) * e->N;
        for (int j = 0; j <= t; j++) e->score[j] = row[j], keep[j] = 1;
        keep_top(e, keep, e->score, t, K);
        break;
    }
    default: break;
    }
}

void evict_prefill_done(Evictor *e, int P) {
    e->prompt = P;
    if (e->p.policy == EVICT_ORACLE) return; /* it chooses per step */
    for (int l = 0; l < e->L; l++)
        for (int h = 0; h < e->NH; h++) cut_head(e, l, h, P - 1);
}

int evict_before_step(Evictor *e, int t) {
    if (e->p.policy == EVICT_ORACLE && !e->oracle) return -1;
    if (t < 0 || t >= e->N) return -1;
    if (e->p.policy == EVICT_SNAPKV) return 0; /* decode appends */
    for (int l = 0; l < e->L; l++)
        for (int h = 0; h < e->NH; h++) {
            e->keep[row_of(e, l, h) + (size_t)t] = 1;
            cut_head(e, l, h, t);
        }
    return 0;
}

int evict_kept(const Evictor *e, int l, int h, int t) {
    const unsigned char *keep = e->keep + row_of(e, l, h);
    int n = 0;
    for (int j = 0; j <= t; j++) n += keep[j] != 0;
    return n;
}
