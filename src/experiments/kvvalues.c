/* kvvalues.c — per-channel spread of K and V over a text, and int8 grouping against the
 * logits (kvvalues.h). */
#include "kvvalues.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of n sorted values, linear between neighbours. */
static float quantile(const float *s, int n, double q) {
    const double at = q * (n - 1);
    const int i = (int)floor(at);
    if (i + 1 >= n) return s[n - 1];
    return (float)(s[i] + (at - i) * ((double)s[i + 1] - s[i]));
}

/* Channel c of x (n rows of C) into *o, through the buffer col (n). */
static void spread_of(ChannelSpread *o, const float *x, int n, int C, int c, float *col) {
    for (int t = 0; t < n; t++) col[t] = x[(size_t)t * C + c];
    qsort(col, (size_t)n, sizeof *col, cmp_float);
    o->min = col[0], o->max = col[n - 1];
    o->q1 = quantile(col, n, 0.25), o->median = quantile(col, n, 0.5), o->q3 = quantile(col, n, 0.75);
    o->absmax = fmaxf(fabsf(o->min), fabsf(o->max));
}

/* The text through g (a fresh generator), the logits of every position into logits
 * (n, V) when not NULL. 0, or -1, -2. */
static int run_text(Generator *g, const int *tok, int n, float *logits) {
    const int V = g->m->cfg.V;
    int rc = generator_prefill(g, tok, 1, NULL);
    for (int p = 0; rc == 0; p++) {
        if (logits) memcpy(logits + (size_t)p * V, g->logits, (size_t)V * sizeof *logits);
        if (p + 1 >= n) break;
        rc = generator_decode(g, tok[p + 1], p + 1, NULL);
    }
    return rc == 0 ? 0 : rc == -1 ? -1 : -2;
}

/* The fp32 run: its logits into ref, every channel's spread from the cache it filled. */
static int measure_spread(Model *m, const int *tok, int n, float *ref, KVValues *r) {
    Generator g;
    float *col = malloc((size_t)n * sizeof *col);
    if (!col || generator_init(&g, m, GEN_CACHE)) {
        free(col);
        return -1;
    }
    int rc = run_text(&g, tok, n, ref);
    for (int l = 0; l < r->L && rc == 0; l++)
        for (int kv = 0; kv < 2; kv++) {
            const float *x = kv == KVV_K ? g.cache.k[l] : g.cache.v[l];
            for (int c = 0; c < r->C; c++)
                spread_of(&r->spread[((size_t)l * 2 + kv) * r->C + c], x, n, r->C, c, col);
        }
    generator_free(&g);
    free(col);
    return rc;
}

/* One grouping of K and of V against the fp32 logits ref: max |Δ| and RMS into r. */
static int measure_group(Model *m, const int *tok, int n, const float *ref, float *test, int kg,
                         int vg, KVValues *r) {
    static const KVQuantGroup groups[2] = {KVQ_TOKEN, KVQ_CHANNEL};
    Generator g;
    if (generator_init(&g, m, GEN_CACHE)) return -1;
    int rc = kvcache_set_int8_sim(&g.cache, groups[kg], groups[vg]) ? -1 : run_text(&g, tok, n, test);
    generator_free(&g);
    if (rc) return rc;
    double mx = 0.0, ss = 0.0;
    const size_t all = (size_t)n * m->cfg.V;
    for (size_t i = 0; i < all; i++) {
        const double d = (double)test[i] - ref[i];
        mx = fmax(mx, fabs(d));
        ss += d * d;
    }
    r->dlogit_max[kg][vg] = mx;
    r->dlogit_rms[kg][vg] = sqrt(ss / (double)all);
    return 0;
}

/* outlier and top of every layer's K and V, through the buffer a (C). */
static void outliers(KVValues *r, float *a) {
    for (int lk = 0; lk < r->L * 2; lk++) {
        const ChannelSpread *s = r->spread + (size_t)lk * r->C;
        int top = 0;
        for (int c = 0; c < r->C; c++) {
            a[c] = s[c].absmax;
            if (s[c].absmax > s[top].absmax) top = c;
        }
        qsort(a, (size_t)r->C, sizeof *a, cmp_float);
        const double med = quantile(a, r->C, 0.5);
        r->top[lk] = top;
        r->outlier[lk] = med > 0.0 ? s[top].absmax / med : 0.0;
    }
}

int kvvalues_measure(Model *m, const int *tok, int n, KVValues *r) {
    const Config *cfg = &m->cfg;
    memset(r, 0, sizeof *r);
    if (n < 1 || n > cfg->N) return -2;
    r->L = cfg->L, r->C = cfg->C, r->hs = cfg->C / cfg->NH, r->n = n;
    r->spread = malloc((size_t)r->L * 2 * r->C * sizeof *r->spread);
    r->outlier = malloc((size_t)r->L * 2 * sizeof *r->outlier);
    r->top = malloc((size_t)r->L * 2 * sizeof *r->top);
    float *ref = malloc((size_t)n * cfg->V * sizeof *ref);
    float *test = malloc((size_t)n * cfg->V * sizeof *test);
    float *a = malloc((size_t)r->C * sizeof *a);
    int rc = r->spread && r->outlier && r->top && ref && test && a ? measure_spread(m, tok, n, ref, r) : -1;
    if (rc == 0) outliers(r, a);
    free(a);
    for (int kg = 0; kg < 2 && rc == 0; kg++)
        for (int vg = 0; vg < 2 && rc == 0; vg++) rc = measure_group(m, tok, n, ref, test, kg, vg, r);
    free(ref);
    free(test);
    if (rc) kvvalues_free(r);
    return rc;
}

void kvvalues_free(KVValues *r) {
    free(r->spread);
    free(r->outlier);
    free(r->top);
    memset(r, 0, sizeof *r);
}

static const char *const GROUP_NAMES[2] = {"token", "channel"};

static void write_channels(FILE *f, const KVValues *r) {
    fprintf(f, "layer,kv,channel,head,min,q1,median,q3,max,absmax\n");
    for (int l = 0; l < r->L; l++)
        for (int kv = 0; kv < 2; kv++)
            for (int c = 0; c < r->C; c++) {
                const ChannelSpread *s = &r->spread[((size_t)l * 2 + kv) * r->C + c];
                fprintf(f, "%d,%s,%d,%d,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", l, kv ? "V" : "K", c,
                        c / r->hs, s->min, s->q1, s->median, s->q3, s->max, s->absmax);
            }
}

static void write_groups(FILE *f, const KVValues *r) {
    fprintf(f, "k_group,v_group,positions,max_abs_dlogit,rms_dlogit\n");
    for (int kg = 0; kg < 2; kg++)
        for (int vg = 0; vg < 2; vg++)
            fprintf(f, "%s,%s,%d,%.4g,%.4g\n", GROUP_NAMES[kg], GROUP_NAMES[vg], r->n,
                    r->dlogit_max[kg][vg], r->dlogit_rms[kg][vg]);
}

static void write_summary(FILE *f, const KVValues *r) {
    fprintf(f, "key,value\npositions,%d\nlayers,%d\nchannels,%d\n", r->n, r->L, r->C);
    for (int l = 0; l < r->L; l++)
        for (int kv = 0; kv < 2; kv++) {
            const char *name = kv ? "v" : "k";
            fprintf(f, "outlier_%s_l%d,%.2f\ntop_%s_l%d,%d\n", name, l, r->outlier[l * 2 + kv], name, l,
                    r->top[l * 2 + kv]);
        }
    for (int kg = 0; kg < 2; kg++)
        for (int vg = 0; vg < 2; vg++)
            fprintf(f, "dlogit_max_k%s_v%s,%.4g\ndlogit_rms_k%s_v%s,%.4g\n", GROUP_NAMES[kg],
                    GROUP_NAMES[vg], r->dlogit_max[kg][vg], GROUP_NAMES[kg], GROUP_NAMES[vg],
                    r->dlogit_rms[kg][vg]);
}

int kvvalues_write(const KVValues *r, const OutDir *o, char *err, size_t errsize) {
    static const char *const names[3] = {"channels.csv", "groups.csv", "summary.csv"};
    for (int k = 0; k < 3; k++) {
        FILE *f = outdir_fopen(o, names[k], err, errsize);
        if (!f) return -1;
        if (k == 0) write_channels(f, r);
        else if (k == 1) write_groups(f, r);
        else write_summary(f, r);
        if (file_close(f) != 0) {
            snprintf(err, errsize, "%s: cannot write %s (%s): %s", o->option, names[k],
                     write_error_text(errno), o->target);
            return -1;
        }
    }
    return 0;
}
