/* loss.c — the loss at every position, full cache against two windows (loss.h). */
#include "loss.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"

/* −log2 of the probability logits (V) give token t, in double. */
static double bits_of(const float *logits, int V, int t) {
    double mx = logits[0], s = 0.0;
    for (int v = 1; v < V; v++) mx = fmax(mx, logits[v]);
    for (int v = 0; v < V; v++) s += exp(logits[v] - mx);
    return (log(s) + mx - logits[t]) / M_LN2;
}

/* One run: the text through a generator with window W and S sinks (W 0: the whole
 * cache), each token's loss into bits (n). 0, -1, -2. */
static int run_one(Model *m, const int *tok, int n, int window, int sinks, double *bits) {
    Generator g;
    if (generator_init(&g, m, GEN_CACHE)) return -1;
    g.window = window, g.sink = sinks;
    bits[0] = NAN;
    int rc = generator_prefill(&g, tok, 1, NULL);
    for (int p = 1; p < n && !rc; p++) {
        bits[p] = bits_of(g.logits, m->cfg.V, tok[p]);
        rc = generator_decode(&g, tok[p], p, NULL);
    }
    generator_free(&g);
    return rc == 0 ? 0 : rc == -1 ? -1 : -2;
}

int loss_measure(Model *m, const int *tok, int n, int window, int sinks, LossReport *r) {
    memset(r, 0, sizeof *r);
    if (n < 2 || n > m->cfg.N || sinks < 1 || sinks >= window) return -2;
    r->bits = malloc((size_t)LOSS_RUNS * n * sizeof *r->bits);
    if (!r->bits) return -1;
    r->n = n, r->window = window, r->sinks = sinks;
    int rc = run_one(m, tok, n, 0, 0, r->bits + (size_t)LOSS_FULL * n);
    if (!rc) rc = run_one(m, tok, n, window, sinks, r->bits + (size_t)LOSS_SINKS * n);
    if (!rc) rc = run_one(m, tok, n, window, 0, r->bits + (size_t)LOSS_EVICT * n);
    if (rc) loss_report_free(r);
    return rc;
}

void loss_report_free(LossReport *r) {
    free(r->bits);
    memset(r, 0, sizeof *r);
}

double loss_mean(const LossReport *r, LossRun k, int from) {
    double s = 0.0;
    if (from < 1) from = 1;
    for (int p = from; p < r->n; p++) s += r->bits[(size_t)k * r->n + p];
    return from < r->n ? s / (r->n - from) : NAN;
}

static void write_rows(FILE *f, const LossReport *r, const int *tok) {
    const double *b = r->bits;
    const size_t n = (size_t)r->n;
    fprintf(f, "position,token_id,full_bits,sinks_bits,evict_bits\n");
    for (size_t p = 1; p < n; p++)
        fprintf(f, "%zu,%d,%.6f,%.6f,%.6f\n", p, tok[p], b[LOSS_FULL * n + p], b[LOSS_SINKS * n + p],
                b[LOSS_EVICT * n + p]);
}

static void write_means(FILE *f, const LossReport *r) {
    static const char *const names[LOSS_RUNS] = {"full", "sinks", "evict"};
    const int past = r->n - (r->window + 1) > 0 ? r->n - (r->window + 1) : 0;
    fprintf(f, "cache,window,sinks,positions,mean_bits,positions_past_window,mean_bits_past_window\n");
    for (int k = 0; k < LOSS_RUNS; k++)
        fprintf(f, "%s,%d,%d,%d,%.6f,%d,%.6f\n", names[k], k ? r->window : 0,
                k == LOSS_SINKS ? r->sinks : 0, r->n - 1, loss_mean(r, (LossRun)k, 1), past,
                loss_mean(r, (LossRun)k, r->window + 1));
}

int loss_write(const LossReport *r, const int *tok, const OutDir *o, char *err, size_t errsize) {
    static const char *const names[2] = {"loss.csv", "loss_means.csv"};
    for (int k = 0; k < 2; k++) {
        FILE *f = outdir_fopen(o, names[k], err, errsize);
        if (!f) return -1;
        if (k == 0) write_rows(f, r, tok);
        else write_means(f, r);
        if (file_close(f) != 0) {
            snprintf(err, errsize, "%s: cannot write %s (%s): %s", o->option, names[k],
                     write_error_text(errno), o->target);
            return -1;
        }
    }
    return 0;
}
