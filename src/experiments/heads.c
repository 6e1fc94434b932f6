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

/* Sums over the queries of one input, per layer and head (each (L·NH)). */
typedef enum { ACC_TEXT, ACC_NO_START, ACC_REPEAT } AccKind;
typedef struct {
    int NH;
    AccKind kind;
    int split;   /* a text: queries < split are "before" */
    int first, R; /* a repeat: its second copy starts at query first; copy length R */
    double *prev, *before, *after, *sink, *sink0, *ent;
    double *ind; /* a repeat: the row of its copy length */
} Acc;

/* Hook: the attention row of query pos = ev->pos0 (one new token), heads × keys. */
static int on_pattern(const HookEvent *ev, void *user) {
    Acc *a = user;
    const int i = ev->pos0, Tt = ev->shape[2];
    if (i < 1 || ev->shape[1] != 1) return 0;
    for (int h = 0; h < a->NH; h++) {
        const float *w = ev->data + (size_t)h * Tt;
        const size_t k = (size_t)ev->layer * a->NH + h;
        if (a->kind == ACC_TEXT) {
            double e = 0.0;
            for (int j = 0; j <= i; j++)
                if (w[j] > 0.0f) e -= w[j] * log2(w[j]);
            a->prev[k] += w[i - 1];
            (i < a->split ? a->before : a->after)[k] += w[i - 1];
            a->sink[k] += w[0];
            a->ent[k] += e;
        } else if (a->kind == ACC_NO_START) {
            a->sink0[k] += w[0];
        } else if (i >= a->first) {
            a->ind[k] += w[i - a->R + 1];
        }
    }
    return 0;
}

/* Run tokens (n) one step at a time. With bits not NULL, the loss in bits of predicting
 * each token i ≥ from goes to bin 0 (i < split) or bin 1, its count to count[bin]. */
static int run_tokens(Model *m, const int *tok, int n, Acc *a, int from, int split, double *bits,
                      int *count) {
    Hooks hk;
    hooks_init(&hk);
    if (hooks_subscribe(&hk, HOOK_BIT(HOOK_PATTERN), on_pattern, a)) return -2;
    Generator g;
    if (generator_init(&g, m, GEN_CACHE)) return -1;
    int rc = generator_prefill(&g, tok, 1, &hk);
    for (int i = 1; i < n && !rc; i++) {
        if (bits && i >= from) { /* the logits before token i predict it */
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

/* The random sequences of copy length R (S of them, heads_seq_len tokens each) into x,
 * run one after the other; their induction sums into a->ind, their losses into r's
 * entry li. */
static int run_repeats(Model *m, const HeadsSpec *sp, int li, int *x, Acc *a, HeadsReport *r) {
    const int R = sp->lens[li], off = sp->bos >= 0, len = heads_seq_len(R, sp->bos);
    double bits[2] = {0.0, 0.0};
    int count[2] = {0, 0}, rc = 0;
    a->kind = ACC_REPEAT, a->R = R, a->first = off + R;
    for (int s = 0; s < sp->S && !rc; s++, x += len) {
        uint64_t st = rng_stream(sp->seed, (uint64_t)s);
        if (off) x[0] = sp->bos;
        for (int i = 0; i < R; i++)
            x[off + i] = x[off + i + R] =
                HEADS_BYTE_LO + (int)(rng_next(&st) % (HEADS_BYTE_HI - HEADS_BYTE_LO + 1));
        rc = run_tokens(m, x, len, a, off + 1, off + R, bits, count);
    }
    r->first_bits[li] = count[0] ? bits[0] / count[0] : NAN;
    r->second_bits[li] = count[1] ? bits[1] / count[1] : NAN;
    return rc;
}

/* The report's arrays, zeroed. 0, or -1. */
static int report_alloc(HeadsReport *r, const HeadsSpec *sp, size_t LH) {
    size_t reps = 0;
    for (int i = 0; i < sp->nlens; i++) reps += (size_t)sp->S * heads_seq_len(sp->lens[i], sp->bos);
    r->h = calloc(LH, sizeof *r->h);
    r->ind = calloc(LH * sp->nlens, sizeof *r->ind);
    r->first_bits = calloc((size_t)sp->nlens, sizeof *r->first_bits);
    r->second_bits = calloc((size_t)sp->nlens, sizeof *r->second_bits);
    r->rep = malloc((reps ? reps : 1) * sizeof *r->rep);
    r->nlens = sp->nlens, r->S = sp->S, r->bos = sp->bos, r->split = sp->split, r->lens = sp->lens;
    return r->h && r->ind && r->first_bits && r->second_bits && r->rep ? 0 : -1;
}

/* The sums divided by their counts, into r->h. */
static void report_scores(HeadsReport *r, const HeadsSpec *sp, const Acc *a, size_t LH) {
    const int n = sp->n;
    for (size_t k = 0; k < LH; k++) {
        HeadScores *h = &r->h[k];
        h->prev_token = a->prev[k] / (n - 1);
        h->prev_before = sp->split > 1 ? a->before[k] / (sp->split - 1) : NAN;
        h->prev_after = a->after[k] / (n - sp->split);
        h->sink = a->sink[k] / (n - 1);
        h->sink_no_start = sp->bos >= 0 ? a->sink0[k] / (n - 2) : NAN;
        h->entropy = a->ent[k] / (n - 1);
        h->induction = INFINITY;
        for (int li = 0; li < sp->nlens; li++) {
            double *v = &r->ind[(size_t)li * LH + k];
            *v /= (double)sp->S * sp->lens[li];
            h->induction = fmin(h->induction, *v);
        }
        if (sp->nlens == 0) h->induction = NAN;
    }
}

/* Hook: each step's z (one row, NH·hs) added into its layer's row of the sums. */
typedef struct {
    double *sum; /* (L, C) */
    int C;
} ZSum;
static int on_z(const HookEvent *ev, void *user) {
    ZSum *z = user;
    const size_t nc = (size_t)ev->shape[1] * ev->shape[2];
    for (int i = 0; i < ev->shape[0]; i++)
        for (size_t c = 0; c < nc; c++) z->sum[(size_t)ev->layer * z->C + c] += ev->data[i * nc + c];
    return 0;
}

int heads_mean_z(Model *m, const int *text, int n, float *mean) {
    const size_t LC = (size_t)m->cfg.L * m->cfg.C;
    ZSum z = {calloc(LC, sizeof(double)), m->cfg.C};
    if (!z.sum) return -1;
    Hooks hk;
    hooks_init(&hk);
    Generator g;
    int rc = hooks_subscribe(&hk, HOOK_BIT(HOOK_Z), on_z, &z) ? -2 : 0;
    if (!rc && generator_init(&g, m, GEN_CACHE)) rc = -1;
    if (!rc) {
        int f = generator_prefill(&g, text, 1, &hk);
        for (int i = 1; i < n && !f; i++) f = generator_decode(&g, text[i], i, &hk);
        generator_free(&g);
        if (f) rc = -2;
    }
    for (size_t k = 0; k < LC && !rc; k++) mean[k] = (float)(z.sum[k] / n);
    free(z.sum);
    return rc;
}

int heads_measure(Model *m, const HeadsSpec *sp, HeadsReport *r) {
    const size_t LH = (size_t)m->cfg.L * m->cfg.NH;
    memset(r, 0, sizeof *r);
    double *mem = calloc(6 * LH, sizeof *mem);
    if (!mem || report_alloc(r, sp, LH)) {
        free(mem);
        heads_report_free(r);
        return -1;
    }
    Acc a = {.NH = m->cfg.NH, .kind = ACC_TEXT, .split = sp->split};
    a.prev = mem, a.before = mem + LH, a.after = mem + 2 * LH, a.sink = mem + 3 * LH;
    a.sink0 = mem + 4 * LH, a.ent = mem + 5 * LH;
    int rc = run_tokens(m, sp->text, sp->n, &a, 0, 0, NULL, NULL);
    a.kind = ACC_NO_START;
    if (!rc && sp->bos >= 0) rc = run_tokens(m, sp->text + 1, sp->n - 1, &a, 0, 0, NULL, NULL);
    int *x = r->rep;
    for (int li = 0; li < sp->nlens && !rc; li++) {
        a.ind = r->ind + (size_t)li * LH;
        rc = run_repeats(m, sp, li, x, &a, r);
        x += (size_t)sp->S * heads_seq_len(sp->lens[li], sp->bos);
    }
    if (!rc) report_scores(r, sp, &a, LH);
    free(mem);
    if (rc) heads_report_free(r);
    return rc;
}

void heads_report_free(HeadsReport *r) {
    free(r->h);
    free(r->ind);
    free(r->first_bits);
    free(r->second_bits);
    free(r->rep);
    memset(r, 0, sizeof *r);
}

/* ---- the files ------------------------------------------------------------------------ */

static void write_scores(FILE *f, const HeadsReport *r, const Config *c) {
    const int ns = r->bos >= 0;
    fprintf(f, "layer,head,prev_token,prev_before,prev_after,induction,sink,%sentropy_bits\n",
            ns ? "sink_no_start," : "");
    for (int l = 0; l < c->L; l++)
        for (int h = 0; h < c->NH; h++) {
            const HeadScores *s = &r->h[(size_t)l * c->NH + h];
            fprintf(f, "%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f,", l, h, s->prev_token, s->prev_before,
                    s->prev_after, s->induction, s->sink);
            if (ns) fprintf(f, "%.6f,", s->sink_no_start);
            fprintf(f, "%.6f\n", s->entropy);
        }
}

/* One row per copy length: the best head there and the loss on each copy. */
static void write_lengths(FILE *f, const HeadsReport *r, const Config *c) {
    const size_t LH = (size_t)c->L * c->NH;
    fprintf(f, "copy_len,best_layer,best_head,best_induction,first_bits,second_bits\n");
    for (int li = 0; li < r->nlens; li++) {
        const double *v = r->ind + (size_t)li * LH;
        size_t b = 0;
        for (size_t k = 1; k < LH; k++)
            if (v[k] > v[b]) b = k;
        fprintf(f, "%d,%d,%d,%.6f,%.4f,%.4f\n", r->lens[li], (int)(b / c->NH), (int)(b % c->NH), v[b],
                r->first_bits[li], r->second_bits[li]);
    }
}

static void write_long(FILE *f, const HeadsReport *r, const Config *c) {
    const size_t LH = (size_t)c->L * c->NH;
    fprintf(f, "layer,head,copy_len,induction\n");
    for (size_t k = 0; k < LH; k++)
        for (int li = 0; li < r->nlens; li++)
            fprintf(f, "%d,%d,%d,%.6f\n", (int)(k / c->NH), (int)(k % c->NH), r->lens[li],
                    r->ind[(size_t)li * LH + k]);
}

static void write_tokens(FILE *f, const HeadsReport *r, const HeadsSpec *sp) {
    fprintf(f, "sequence,pos,token_id\n");
    for (int i = 0; i < sp->n; i++) fprintf(f, "text,%d,%d\n", i, sp->text[i]);
    const int *x = r->rep;
    for (int li = 0; li < r->nlens; li++) {
        const int len = heads_seq_len(r->lens[li], r->bos);
        for (int s = 0; s < r->S; s++, x += len)
            for (int i = 0; i < len; i++) fprintf(f, "copy%d_%d,%d,%d\n", r->lens[li], s, i, x[i]);
    }
}

int heads_write(const HeadsReport *r, const Config *cfg, const HeadsSpec *sp, const OutDir *o,
                char *err, size_t errsize) {
    static const char *const names[4] = {"heads.csv", "induction.csv", "induction_heads.csv",
                                         "tokens.csv"};
    for (int k = 0; k < 4; k++) {
        FILE *f = outdir_fopen(o, names[k], err, errsize);
        if (!f) return -1;
        if (k == 0) write_scores(f, r, cfg);
        else if (k == 1) write_lengths(f, r, cfg);
        else if (k == 2) write_long(f, r, cfg);
        else write_tokens(f, r, sp);
        if (file_close(f) != 0) {
            snprintf(err, errsize, "%s: cannot write %s (%s): %s", o->option, names[k],
                     write_error_text(errno), o->target);
            return -1;
        }
    }
    return 0;
}
