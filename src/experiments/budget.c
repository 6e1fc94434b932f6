/* budget.c — smaller and shorter KV caches against the full fp32 one; see budget.h. */
#include "budget.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "observers.h"

/* Two generators fed the same tokens: test chooses (greedy), ref follows. */
typedef struct {
    Generator test, ref;
} Pair;

static void pair_free(Pair *p) {
    generator_free(&p->test);
    generator_free(&p->ref);
}

static int pair_init(Pair *p, Model *m, Dtype dt, int window, int sink) {
    memset(p, 0, sizeof *p);
    if (generator_init(&p->test, m, GEN_CACHE) || generator_init(&p->ref, m, GEN_CACHE) ||
        kvcache_set_dtype(&p->test.cache, dt))
        return -1;
    p->test.window = window;
    p->test.sink = sink;
    return 0;
}

/* The result of two generators' steps: GEN_NONFINITE if either gave non-finite
 * logits, else -1 if either failed, else 0. */
static int step_rc(int a, int b) {
    return a == GEN_NONFINITE || b == GEN_NONFINITE ? GEN_NONFINITE : (a || b) ? -1 : 0;
}

/* Step s of both (0: the prefill; test's hooks may be NULL). 0, GEN_NONFINITE or -1. */
static int step_pair(Pair *p, const int *prompt, int T, int s, Hooks *hooks) {
    if (s == 0)
        return step_rc(generator_prefill(&p->test, prompt, T, hooks),
                       generator_prefill(&p->ref, prompt, T, NULL));
    const int tok = generator_argmax(&p->test);
    return step_rc(generator_decode(&p->test, tok, s, hooks), generator_decode(&p->ref, tok, s, NULL));
}

static double drift_step(LogitDrift *d, const Pair *p) {
    return logit_drift_add(d, p->test.logits, p->ref.logits, p->test.m->cfg.V);
}

int budget_run_dtype(Model *m, const int *prompt, int T, int steps, Dtype dt, DtypeResult *out) {
    Pair p;
    memset(out, 0, sizeof *out);
    out->dtype = dt;
    int rc = pair_init(&p, m, dt, 0, 0);
    for (int s = 0; s <= steps && rc == 0; s++)
        if ((rc = step_pair(&p, prompt, T, s, NULL)) == 0) drift_step(&out->drift, &p);
    const KVCache *c = &p.test.cache;
    out->bytes_per_token = kvcache_bytes_per_token(c);
    out->bytes_per_value = (double)c->row_bytes / (double)(c->NH * c->hs);
    out->kv_bytes = kvcache_bytes_used(c);
    pair_free(&p);
    return rc;
}

/* The weight the newest query gave, one step ago, to the n slots from `first` on, which
 * the next step evicts: averaged over every layer and head (the return), and the most
 * in one head (*hmax). */
static double evicted_weight(const LastRows *lr, int first, int n, double *hmax) {
    double mean = 0.0;
    *hmax = 0.0;
    for (int l = 0; l < lr->L; l++)
        for (int h = 0; h < lr->NH; h++) {
            const float *row = last_rows_get(lr, l, h);
            double w = 0.0;
            for (int j = first; j < first + n; j++) w += row[j];
            mean += w / (lr->L * lr->NH);
            if (w > *hmax) *hmax = w;
        }
    return mean;
}

int budget_run_window(Model *m, const int *prompt, int T, int steps, int W, int S, FILE *csv,
                      WindowResult *out) {
    const Config *cfg = &m->cfg;
    LastRows lr;
    Hooks hooks;
    Pair p;
    memset(out, 0, sizeof *out);
    out->W = W, out->S = S;
    hooks_init(&hooks);
    int rc = last_rows_init(&lr, cfg->L, cfg->NH, cfg->N) || last_rows_attach(&lr, &hooks) ||
                     pair_init(&p, m, DT_FP32, W, S) ? -1 : 0;
    for (int s = 0; s <= steps && rc == 0; s++) {
        int first, ev = s > 0 ? generator_next_eviction(&p.test, &first) : 0, ev_pos = -1;
        double ev_mean = 0.0, ev_hmax = 0.0;
        if (ev) {
            ev_pos = p.test.cache.pos[first];
            ev_mean = evicted_weight(&lr, first, ev, &ev_hmax);
            out->evicted += ev;
            out->evicted_sum += ev_mean;
            if (ev_hmax > out->evicted_max) out->evicted_max = ev_hmax;
        }
        if ((rc = step_pair(&p, prompt, T, s, &hooks))) break;
        out->last_dlogit = drift_step(&out->drift, &p);
        fprintf(csv, "%d,%d,%d,%zu,%d,%zu,%.9g,%d,%.9g,%.9g\n", s, p.test.len - 1, p.ref.cache.len,
                kvcache_bytes_used(&p.ref.cache), p.test.cache.len, kvcache_bytes_used(&p.test.cache),
                out->last_dlogit, ev_pos, ev_mean, ev_hmax);
    }
    out->window_bytes = kvcache_bytes_used(&p.test.cache);
    out->full_bytes = kvcache_bytes_used(&p.ref.cache);
    pair_free(&p);
    last_rows_free(&lr);
    return rc;
}

/* ---- files -------------------------------------------------------------------------- */

int budget_files_open(BudgetFiles *f, const OutDir *o, int steps, int T, int window, char *err,
                      size_t errsize) {
    memset(f, 0, sizeof *f);
    if (!(f->summary = outdir_fopen(o, "summary.csv", err, errsize)) ||
        !(f->dtypes = outdir_fopen(o, "dtypes.csv", err, errsize)) ||
        !(f->dtypes_md = outdir_fopen(o, "dtypes.md", err, errsize)) ||
        (window && !(f->window = outdir_fopen(o, "window.csv", err, errsize))))
        return -1;
    fprintf(f->summary, "key,value\nsteps,%d\nprompt_tokens,%d\ntokens,%d\n", steps, T, T + steps);
    fprintf(f->dtypes, "dtype,bytes_per_value,bytes_per_token,kv_bytes,max_abs_dlogit,"
                       "mean_abs_dlogit,greedy_agree,greedy_steps,greedy_same\n");
    fprintf(f->dtypes_md, "| KV dtype | bytes per value | bytes per token | KV bytes after %d tokens | "
                          "max \\|Δlogit\\| | mean \\|Δlogit\\| | same greedy choice |\n"
                          "|---|---:|---:|---:|---:|---:|---|\n", T + steps);
    if (f->window)
        fprintf(f->window, "step,position,kv_tokens_full,kv_bytes_full,kv_tokens_window,"
                           "kv_bytes_window,max_abs_dlogit,evicted_position,evicted_attention_mean,"
                           "evicted_attention_max\n");
    return 0;
}

void budget_write_dtype(BudgetFiles *f, const DtypeResult *r) {
    const LogitDrift *d = &r->drift;
    const char *name = dtype_name(r->dtype), *same = d->agree == d->steps ? "yes" : "no";
    const double mean = d->sum_abs / (double)d->n;
    fprintf(f->dtypes, "%s,%.6g,%zu,%zu,%.9g,%.9g,%d,%d,%s\n", name, r->bytes_per_value,
            r->bytes_per_token, r->kv_bytes, d->max_abs, mean, d->agree, d->steps, same);
    fprintf(f->dtypes_md, "| %s | %.5g | %zu | %zu | %.3g | %.3g | %s (%d of %d) |\n", name,
            r->bytes_per_value, r->bytes_per_token, r->kv_bytes, d->max_abs, mean, same, d->agree,
            d->steps);
    fprintf(f->summary, "bytes_per_token_%s,%zu\nbytes_per_value_%s,%.6g\nmax_dlogit_%s,%.3g\n"
                        "mean_dlogit_%s,%.3g\ngreedy_same_%s,%s\n",
            name, r->bytes_per_token, name, r->bytes_per_value, name, d->max_abs, name, mean, name,
            same);
}

void budget_write_window(BudgetFiles *f, const WindowResult *r) {
    const LogitDrift *d = &r->drift;
    fprintf(f->summary, "window,%d\nsink,%d\nwindow_bytes_plateau,%zu\nfull_bytes_final,%zu\n"
                        "window_max_dlogit,%.3g\nwindow_final_dlogit,%.3g\nwindow_mean_dlogit,%.3g\n"
                        "window_greedy_agree,%d\nwindow_greedy_steps,%d\nwindow_evicted,%d\n"
                        "evicted_attention_mean,%.3g\nevicted_attention_max,%.3g\n",
            r->W, r->S, r->window_bytes, r->full_bytes, d->max_abs, r->last_dlogit,
            d->sum_abs / (double)d->n, d->agree, d->steps, r->evicted,
            r->evicted ? r->evicted_sum / r->evicted : 0.0, r->evicted_max);
}

int budget_files_close(BudgetFiles *f) {
    FILE **all[] = {&f->summary, &f->dtypes, &f->dtypes_md, &f->window};
    int bad = 0, e = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (*all[i] && file_close(*all[i]) != 0 && !bad) bad = 1, e = errno;
        *all[i] = NULL;
    }
    if (bad) errno = e;
    return bad ? -1 : 0;
}
