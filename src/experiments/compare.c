/* compare.c — the decode step with and without the cache, at every length; see compare.h. */
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "numfmt.h"
#include "sysinfo.h"

/* ---- the sweep -------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median (mean of the middle two for an even count), min and max of t[0..n-1]. */
static Timing summarize(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    Timing s = {n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), t[0], t[n - 1], n};
    return s;
}

/* Timed runs of a recompute step over T tokens: long ones are timed fewer times. */
static int recompute_repeats(int K, int T) {
    if (T <= 256) return K;
    int r = (int)((long)K * 256 / T);
    return r < 1 ? 1 : r;
}

/* The FLOPs counted in now since `then`, by operation. */
static FlopCount flops_since(const FlopCount *now, const FlopCount *then) {
    FlopCount d = {now->qkv - then->qkv,             now->attn - then->attn,
                   now->attn_proj - then->attn_proj, now->mlp - then->mlp,
                   now->lm_head - then->lm_head,     now->elementwise - then->elementwise,
                   now->weight_bytes - then->weight_bytes};
    return d;
}

/* Both ways of one sweep, and what they share. */
typedef struct {
    Model shared;           /* the recompute run's: the same weights, its own activations */
    Generator gc, gr;       /* with the cache; recomputing */
    double *times;          /* (repeat) */
    Hooks pre_hooks, dec_hooks;
} Sweep;

static void sweep_free(Sweep *w) {
    generator_free(&w->gc);
    generator_free(&w->gr);
    model_free(&w->shared);
    free(w->times);
}

static int sweep_init(Sweep *w, Model *m, const CompareSpec *spec, CompareResult *res) {
    memset(w, 0, sizeof *w);
    hooks_init(&w->pre_hooks);
    hooks_init(&w->dec_hooks);
    if (model_init_shared(&w->shared, m) || generator_init(&w->gc, m, GEN_CACHE) ||
        generator_init(&w->gr, &w->shared, GEN_RECOMPUTE) ||
        !(w->times = malloc((size_t)spec->repeat * sizeof *w->times)) ||
        step_shape_attach(&res->pre, &w->pre_hooks) || step_shape_attach(&res->dec, &w->dec_hooks))
        return -1;
    return 0;
}

/* A failed step: its name and logits for the caller's message. Returns rc. */
static int failed(CompareResult *res, int rc, const char *what, int T, const Generator *g) {
    snprintf(res->failed, sizeof res->failed, "%s T=%d", what, T);
    res->failed_logits = g->logits;
    return rc;
}

/* Length t, whose cached step just ran in `first` seconds: that step again repeat - 1
 * times on the same slot (rewound), then all t tokens recomputed, timed the same way.
 * 0, or the failed step's code (*rec_failed: it was the recompute). */
static int measure(Sweep *w, const CompareSpec *spec, int t, int step, int tok, double first,
                   CompareRow *r, int *rec_failed) {
    const FlopCount after = w->gc.total;
    int rc;
    w->times[0] = first;
    for (int k = 1; k < spec->repeat; k++) {
        generator_rewind(&w->gc); /* time the same step again, on the same slot */
        const double s0 = now_seconds();
        if ((rc = generator_decode(&w->gc, tok, step, NULL))) return rc;
        w->times[k] = now_seconds() - s0;
    }
    w->gc.total = after;
    r->t_cache = summarize(w->times, spec->repeat);
    /* without a cache: a forward pass over all t tokens, the same ones */
    const int reps = recompute_repeats(spec->repeat, t);
    for (int k = 0; k < reps; k++) {
        const FlopCount rb = w->gr.total;
        const double s0 = now_seconds();
        if ((rc = generator_prefill(&w->gr, w->gc.tokens, t, NULL))) {
            *rec_failed = 1;
            return rc;
        }
        w->times[k] = now_seconds() - s0;
        r->ops_rec = flops_since(&w->gr.total, &rb);
        r->f_rec = flops_layers(&r->ops_rec);
        r->tot_rec = flops_total(&r->ops_rec);
    }
    r->t_rec = summarize(w->times, reps);
    r->dlogit = logits_max_abs_diff(w->gc.logits, w->gr.logits, w->gc.m->cfg.V);
    return 0;
}

int compare_run(Model *m, const int *prompt, int P, const CompareSpec *spec,
                const CompareProgress *progress, CompareResult *res) {
    const Config *cfg = &m->cfg;
    Sweep w;
    memset(res, 0, sizeof *res);
    res->cfg = *cfg;
    res->weights = m->w.dtype;
    res->P = P;
    res->decode_at = spec->decode_at;
    int rc = -1;
    if (!(res->rows = calloc((size_t)spec->n + 1, sizeof *res->rows)) || sweep_init(&w, m, spec, res))
        goto done;
    if ((rc = generator_prefill(&w.gc, prompt, P, &w.pre_hooks))) {
        snprintf(res->failed, sizeof res->failed, "the prefill");
        res->failed_logits = w.gc.logits;
        goto done;
    }
    const int T_max = spec->lengths[spec->n - 1] > spec->decode_at ? spec->lengths[spec->n - 1]
                                                                   : spec->decode_at;
    uint64_t cum_cache = flops_layers(&w.gc.total);
    uint64_t cum_rec = flops_layers_formula(cfg, (uint64_t)P, 0);
    for (int t = P + 1; t <= T_max && !(progress->stop && *progress->stop); t++) {
        const int tok = generator_argmax(&w.gc);
        const FlopCount before = w.gc.total;
        const double s0 = now_seconds();
        rc = generator_decode(&w.gc, tok, t - P, t == spec->decode_at ? &w.dec_hooks : NULL);
        if (rc) {
            failed(res, rc, "the decode step at", t, &w.gc);
            goto done;
        }
        const double s1 = now_seconds();
        const FlopCount ops = flops_since(&w.gc.total, &before);
        const uint64_t f_step = flops_layers(&ops);
        cum_cache += f_step;
        cum_rec += flops_layers_formula(cfg, (uint64_t)t, 0);
        if (res->n == spec->n || spec->lengths[res->n] != t) continue;

        CompareRow *r = &res->rows[res->n];
        *r = (CompareRow){.T = t, .f_cache = f_step, .cum_cache = cum_cache, .cum_rec_formula = cum_rec,
                          .tot_cache = flops_total(&ops), .ops_cache = ops,
                          .kv_bytes = kvcache_bytes_used(&w.gc.cache),
                          .kv_reserved = kvcache_bytes_reserved(&w.gc.cache)};
        if (progress->measuring) progress->measuring(t, res->n, progress->user);
        int rec = 0;
        if ((rc = measure(&w, spec, t, t - P, tok, s1 - s0, r, &rec))) {
            failed(res, rc, rec ? "the recompute at" : "the decode step at", t, rec ? &w.gr : &w.gc);
            goto done;
        }
        if (progress->measured) progress->measured(r, res->n, progress->user);
        res->n++;
    }
    rc = 0;
done:
    sweep_free(&w);
    return rc;
}

void compare_result_free(CompareResult *res) {
    free(res->rows);
    res->rows = NULL;
}

/* ---- the files --------------------------------------------------------------------- */

static const char *const CSV_HEADER =
    "T,flops_cache,flops_recompute,formula_cache,formula_recompute,flops_total_cache,"
    "flops_total_recompute,cum_flops_cache,cum_formula_cache,cum_formula_recompute,"
    "attn_pairs_cache,attn_pairs_recompute,article_attn_cache,article_attn_recompute,"
    "ratio,kv_bytes,kv_reserved_bytes,max_abs_dlogit,L,C,prompt_tokens,"
    "flops_qkv_cache,flops_attn_cache,flops_attn_proj_cache,flops_mlp_cache,flops_lm_head_cache,"
    "flops_elementwise_cache,flops_qkv_recompute,flops_attn_recompute,flops_attn_proj_recompute,"
    "flops_mlp_recompute,flops_lm_head_recompute,flops_elementwise_recompute,weight_bytes_cache,"
    "weight_bytes_recompute,flops_per_byte_cache,flops_per_byte_recompute\n";

static const char *const TIMING_HEADER =
    "T,cache_median_s,cache_min_s,cache_max_s,cache_runs,recompute_median_s,recompute_min_s,"
    "recompute_max_s,recompute_runs,speedup\n";

static FILE *open_in(const OutDir *o, const char *name) {
    char err[8400];
    return outdir_fopen(o, name, err, sizeof err);
}

static void write_ops(FILE *f, const FlopCount *o) {
    const uint64_t v[6] = {o->qkv, o->attn, o->attn_proj, o->mlp, o->lm_head, o->elementwise};
    for (int i = 0; i < 6; i++) fprintf(f, ",%llu", (unsigned long long)v[i]);
}

static void write_row(FILE *f, const Config *cfg, Dtype dt, int P, const CompareRow *r) {
    const uint64_t T = (uint64_t)r->T;
    /* the bytes a step reads: the weights once (and each new token's rows), K and V */
    const uint64_t w_cache = model_weight_bytes_read(cfg, dt, 1), w_rec = model_weight_bytes_read(cfg, dt, T);
    fprintf(f, "%d,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.6f,%zu,%zu,%.9g,%d,%d,%d",
            r->T, (unsigned long long)r->f_cache, (unsigned long long)r->f_rec,
            (unsigned long long)flops_layers_formula(cfg, 1, T - 1),
            (unsigned long long)flops_layers_formula(cfg, T, 0),
            (unsigned long long)r->tot_cache, (unsigned long long)r->tot_rec,
            (unsigned long long)r->cum_cache, (unsigned long long)flops_layers_formula(cfg, T, 0),
            (unsigned long long)r->cum_rec_formula, (unsigned long long)T,
            (unsigned long long)(T * (T + 1) / 2), (unsigned long long)T, (unsigned long long)(T * T),
            (double)r->f_rec / (double)r->f_cache, r->kv_bytes, r->kv_reserved, r->dlogit, cfg->L,
            cfg->C, P);
    write_ops(f, &r->ops_cache);
    write_ops(f, &r->ops_rec);
    fprintf(f, ",%llu,%llu,%.9g,%.9g\n", (unsigned long long)w_cache, (unsigned long long)w_rec,
            (double)r->tot_cache / (double)(w_cache + r->kv_bytes),
            (double)r->tot_rec / (double)(w_rec + r->kv_bytes));
}

static void write_timing(FILE *f, const CompareRow *r) {
    fprintf(f, "%d,%.9g,%.9g,%.9g,%d,%.9g,%.9g,%.9g,%d,%.6g\n", r->T, r->t_cache.med, r->t_cache.min,
            r->t_cache.max, r->t_cache.n, r->t_rec.med, r->t_rec.min, r->t_rec.max, r->t_rec.n,
            r->t_rec.med / r->t_cache.med);
}

/* compare.csv and timing.csv: a row per length. */
static int write_rows(const OutDir *o, const CompareResult *res) {
    FILE *f = open_in(o, "compare.csv"), *t = f ? open_in(o, "timing.csv") : NULL;
    if (!t) {
        if (f) fclose(f);
        return -1;
    }
    fputs(CSV_HEADER, f);
    fputs(TIMING_HEADER, t);
    for (int i = 0; i < res->n; i++) {
        write_row(f, &res->cfg, res->weights, res->P, &res->rows[i]);
        write_timing(t, &res->rows[i]);
    }
    return file_close(f) | file_close(t);
}

static int is_in(const int *v, int n, int x) {
    for (int i = 0; i < n; i++)
        if (v[i] == x) return 1;
    return 0;
}

/* The articles' FLOP table, rebuilt from what was counted. */
static int write_flops_md(const OutDir *o, const CompareResult *res, const CompareSpec *spec) {
    char d1[40], d2[40], c1[40], c2[40], h1[32];
    FILE *f = open_in(o, "flops.md");
    if (!f) return -1;
    fprintf(f, "| T | articles: without cache (T²) | articles: with cache (T) "
               "| counted FLOPs without cache | counted FLOPs with cache | ratio | KV cache (fp32) |\n");
    fprintf(f, "|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < res->n; i++) {
        const CompareRow *r = &res->rows[i];
        if (!is_in(spec->table, spec->n_table, r->T)) continue;
        fprintf(f, "| %d | %s | %s | %s | %s | %.0f× | %s |\n", r->T,
                group_digits((uint64_t)r->T * r->T, d1, sizeof d1), group_digits((uint64_t)r->T, d2, sizeof d2),
                group_digits(r->f_rec, c1, sizeof c1),
                group_digits(r->f_cache, c2, sizeof c2), (double)r->f_rec / (double)r->f_cache,
                human_bytes((double)r->kv_bytes, h1, sizeof h1));
    }
    return file_close(f);
}

/* The prefill and the decode step at decode_at side by side, as CSV and markdown. */
static int write_prefill_decode(const OutDir *o, const CompareResult *res) {
    const StepShape *pre = &res->pre, *dec = &res->dec;
    const Config *cfg = &res->cfg;
    const int P = res->P, dec_T = res->decode_at;
    char d1[40], d2[40], h1[32], h2[32];
    FILE *f = open_in(o, "prefill_decode.csv");
    if (!f) return -1;
    fprintf(f, "quantity,label,prefill,decode\n");
    fprintf(f, "tokens,tokens T,%d,%d\n", P, dec_T);
    fprintf(f, "q_rows,Q rows,%d,%d\n", pre->q_rows, dec->q_rows);
    fprintf(f, "k_rows,K rows,%d,%d\n", pre->k_rows, dec->k_rows);
    fprintf(f, "attn_scores,attention scores,%llu,%llu\n", (unsigned long long)pre->scores,
            (unsigned long long)dec->scores);
    fprintf(f, "flops,FLOPs,%llu,%llu\n", (unsigned long long)pre->flops, (unsigned long long)dec->flops);
    fprintf(f, "kv_bytes,KV bytes,%zu,%zu\n", pre->kv_bytes, dec->kv_bytes);
    if (file_close(f) || !(f = open_in(o, "prefill_decode.md"))) return -1;
    fprintf(f, "| | prefill (T=%d) | decode step (T=%d) |\n|---|---:|---:|\n", P, dec_T);
    fprintf(f, "| Q shape | (%d, %d) | (%d, %d) |\n", pre->q_rows, cfg->C, dec->q_rows, cfg->C);
    fprintf(f, "| K shape (cached keys) | (%d, %d) | (%d, %d) |\n", pre->k_rows, cfg->C, dec->k_rows, cfg->C);
    fprintf(f, "| articles' attention count | O(%d) | O(%d) |\n", P * P, dec_T);
    fprintf(f, "| attention scores computed (causal, %d heads, per layer) | %s | %s |\n", cfg->NH,
            group_digits(pre->scores, d1, sizeof d1), group_digits(dec->scores, d2, sizeof d2));
    fprintf(f, "| FLOPs (counted, whole model) | %s | %s |\n", group_digits(pre->flops, d1, sizeof d1),
            group_digits(dec->flops, d2, sizeof d2));
    fprintf(f, "| KV cache after the step (fp32) | %s (%s B) | %s (%s B) |\n",
            human_bytes((double)pre->kv_bytes, h1, sizeof h1), group_digits(pre->kv_bytes, d1, sizeof d1),
            human_bytes((double)dec->kv_bytes, h2, sizeof h2), group_digits(dec->kv_bytes, d2, sizeof d2));
    return file_close(f);
}

/* key,value pairs a lesson quotes. */
static int write_values(const OutDir *o, const CompareResult *res) {
    const Config *cfg = &res->cfg;
    const int n = res->n;
    char h1[32];
    FILE *f = open_in(o, "values.csv");
    if (!f) return -1;
    fprintf(f, "key,value\nL,%d\nC,%d\nNH,%d\nprompt_tokens,%d\nrows,%d\n", cfg->L, cfg->C, cfg->NH,
            res->P, n);
    double worst = 0.0;
    for (int i = 0; i < n; i++) worst = diff_max(worst, res->rows[i].dlogit);
    fprintf(f, "max_abs_dlogit,%.9g\n", worst);
    if (n > 0) {
        const CompareRow *r = &res->rows[n - 1];
        fprintf(f, "largest_T,%d\nratio_largest,%.1f\n", r->T, (double)r->f_rec / (double)r->f_cache);
    }
    for (int i = 0; i < n; i++) {
        const CompareRow *r = &res->rows[i];
        fprintf(f, "flops_cache_%d,%llu\nflops_recompute_%d,%llu\nratio_%d,%.1f\nkv_bytes_%d,%zu\nkv_%d,%s\n",
                r->T, (unsigned long long)r->f_cache, r->T, (unsigned long long)r->f_rec, r->T,
                (double)r->f_rec / (double)r->f_cache, r->T, r->kv_bytes, r->T,
                human_bytes((double)r->kv_bytes, h1, sizeof h1));
    }
    return file_close(f);
}

static int write_timing_md(const OutDir *o, const CompareResult *res) {
    FILE *f = open_in(o, "timing.md");
    if (!f) return -1;
    fprintf(f, "| T | with cache (median) | without cache (median) | speed-up |\n|---:|---:|---:|---:|\n");
    for (int i = 0; i < res->n; i++) {
        const CompareRow *r = &res->rows[i];
        char a[32], b[32];
        fprintf(f, "| %d | %s | %s | %.0f× |\n", r->T, human_seconds(r->t_cache.med, a, sizeof a),
                human_seconds(r->t_rec.med, b, sizeof b), r->t_rec.med / r->t_cache.med);
    }
    return file_close(f);
}

int compare_write(const CompareResult *res, const CompareSpec *spec, const OutDir *o) {
    if (write_rows(o, res) || write_flops_md(o, res, spec)) return -1;
    /* stopped before decode_at: no prefill-vs-decode table */
    if (res->dec.q_rows && write_prefill_decode(o, res)) return -1;
    return write_values(o, res) || write_timing_md(o, res) ? -1 : 0;
}
