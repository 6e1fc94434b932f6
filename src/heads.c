/* heads.c — head scores from the attention rows of decode steps (heads.h). */
#include "heads.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "hooks.h"
#include "rng.h"

/* Sums over the queries of one input, per layer and head. */
typedef struct {
    int NH;
    int R;              /* 0: a text; else the copy length of a repeated sequence */
    double *prev, *sink, *ent, *ind; /* (L·NH) */
    int rows, ind_rows; /* queries summed */
} Acc;

/* Hook: the attention row of query pos = ev->pos0 (one new token), heads × keys. */
static int on_pattern(const HookEvent *ev, void *user) {
    Acc *a = user;
    const int i = ev->pos0, Tt = ev->shape[2];
    if (i < 1 || ev->shape[1] != 1) return 0;
    for (int h = 0; h < a->NH; h++) {
        const float *w = ev->data + (size_t)h * Tt;
        const size_t k = (size_t)ev->layer * a->NH + h;
        if (a->R == 0) {
            double e = 0.0;
            for (int j = 0; j <= i; j++)
                if (w[j] > 0.0f) e -= w[j] * log2(w[j]);
            a->prev[k] += w[i - 1];
            a->sink[k] += w[0];
            a->ent[k] += e;
        } else if (i >= a->R) {
            a->ind[k] += w[i - a->R + 1];
        }
    }
    return 0;
}

/* Run tokens (n) one step at a time. With bits not NULL, the loss in bits of predicting
 * each token i ≥ 1 goes to bin 0 (i < split) or bin 1, its count to count[bin]. */
static int run_tokens(Model *m, const int *tok, int n, Acc *a, int split, double *bits, int *count) {
    Hooks hk;
    hooks_init(&hk);
    if (hooks_subscribe(&hk, HOOK_BIT(HOOK_PATTERN), on_pattern, a)) return -2;
    Generator g;
    if (generator_init(&g, m, GEN_CACHE)) return -1;
    int rc = generator_prefill(&g, tok, 1, &hk);
    for (int i = 1; i < n && !rc; i++) {
        if (bits) { /* the logits before token i predict it */
            const int V = m->cfg.V, bin = i >= split;
            double mx = g.logits[0], s = 0.0;
            for (int v = 1; v < V; v++) mx = fmax(mx, g.logits[v]);
            for (int v = 0; v < V; v++) s += exp(g.logits[v] - mx);
            bits[bin] += (log(s) + mx - g.logits[tok[i]]) / M_LN2;
            count[bin]++;
        }
        rc = generator_decode(&g, tok[i], i, &hk);
    }
    generator_free(&g);
    return rc ? -2 : 0;
}

int heads_measure(Model *m, const int *text, int n, int R, int S, uint64_t seed, HeadsReport *r) {
    const int L = m->cfg.L, NH = m->cfg.NH;
    const size_t LH = (size_t)L * NH;
    memset(r, 0, sizeof *r);
    Acc a = {.NH = NH};
    double *mem = calloc(4 * LH, sizeof *mem);
    r->h = calloc(LH, sizeof *r->h);
    r->rep = malloc((size_t)(S > 0 ? S : 1) * 2 * R * sizeof *r->rep);
    if (!mem || !r->h || !r->rep) {
        free(mem);
        heads_report_free(r);
        return -1;
    }
    a.prev = mem, a.sink = mem + LH, a.ent = mem + 2 * LH, a.ind = mem + 3 * LH;
    r->R = R, r->S = S;
    int rc = run_tokens(m, text, n, &a, 0, NULL, NULL);
    double bits[2] = {0.0, 0.0};
    int count[2] = {0, 0};
    a.R = R;
    for (int s = 0; s < S && !rc; s++) {
        int *x = r->rep + (size_t)s * 2 * R;
        uint64_t st = rng_stream(seed, (uint64_t)s);
        for (int i = 0; i < R; i++)
            x[i] = x[i + R] = HEADS_BYTE_LO + (int)(rng_next(&st) % (HEADS_BYTE_HI - HEADS_BYTE_LO + 1));
        rc = run_tokens(m, x, 2 * R, &a, R, bits, count);
    }
    for (size_t k = 0; k < LH && !rc; k++) {
        r->h[k].prev_token = a.prev[k] / (n - 1);
        r->h[k].sink = a.sink[k] / (n - 1);
        r->h[k].entropy = a.ent[k] / (n - 1);
        r->h[k].induction = S ? a.ind[k] / ((double)S * R) : NAN;
    }
    r->first_bits = count[0] ? bits[0] / count[0] : NAN;
    r->second_bits = count[1] ? bits[1] / count[1] : NAN;
    free(mem);
    if (rc) heads_report_free(r);
    return rc;
}

void heads_report_free(HeadsReport *r) {
    free(r->h);
    free(r->rep);
    memset(r, 0, sizeof *r);
}

/* ---- the files ------------------------------------------------------------------------ */

static void write_scores(FILE *f, const HeadsReport *r, const Config *c) {
    fprintf(f, "layer,head,prev_token,induction,sink,entropy_bits\n");
    for (int l = 0; l < c->L; l++)
        for (int h = 0; h < c->NH; h++) {
            const HeadScores *s = &r->h[(size_t)l * c->NH + h];
            fprintf(f, "%d,%d,%.6f,%.6f,%.6f,%.6f\n", l, h, s->prev_token, s->induction, s->sink,
                    s->entropy);
        }
}

static void write_tokens(FILE *f, const HeadsReport *r, const int *text, int n) {
    fprintf(f, "sequence,pos,token_id\n");
    for (int i = 0; i < n; i++) fprintf(f, "text,%d,%d\n", i, text[i]);
    for (int s = 0; s < r->S; s++)
        for (int i = 0; i < 2 * r->R; i++)
            fprintf(f, "repeat%d,%d,%d\n", s, i, r->rep[(size_t)s * 2 * r->R + i]);
}

int heads_write(const HeadsReport *r, const Config *cfg, const int *text, int n, const OutDir *o,
                char *err, size_t errsize) {
    static const char *const names[3] = {"heads.csv", "induction.csv", "tokens.csv"};
    for (int k = 0; k < 3; k++) {
        FILE *f = outdir_fopen(o, names[k], err, errsize);
        if (!f) return -1;
        if (k == 0) write_scores(f, r, cfg);
        else if (k == 1)
            fprintf(f, "copy,tokens,bits_per_byte\nfirst,%d,%.4f\nsecond,%d,%.4f\n",
                    (r->R - 1) * r->S, r->first_bits, r->R * r->S, r->second_bits);
        else write_tokens(f, r, text, n);
        if (file_close(f) != 0) {
            snprintf(err, errsize, "%s: cannot write %s (%s): %s", o->option, names[k],
                     write_error_text(errno), o->target);
            return -1;
        }
    }
    return 0;
}
