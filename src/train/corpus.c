/* corpus.c — the training text, its split, batches and n-gram baselines. */
#include "corpus.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "infile.h"
#include "rng.h"

int corpus_load(Corpus *c, const char *path, char *err, size_t errsize) {
    memset(c, 0, sizeof *c);
    char *buf;
    size_t n;
    int rc = infile_read(path, CORPUS_MAX_BYTES, &buf, &n, err, errsize);
    if (rc) return rc == INFILE_NOMEM ? CORPUS_NOMEM : CORPUS_BAD;
    unsigned char *split = n ? malloc(n) : NULL;
    if (n == 0 || !split) {
        if (n == 0) snprintf(err, errsize, "%s: empty file", path);
        free(buf);
        return n == 0 ? CORPUS_BAD : CORPUS_NOMEM;
    }
    /* training chunks first, validation chunks after them, each in file order */
    size_t nt = 0, nv = 0;
    for (size_t off = 0, i = 0; off < n; off += CORPUS_CHUNK, i++)
        if (i % CORPUS_VAL_EVERY != CORPUS_VAL_EVERY - 1) nt += n - off < CORPUS_CHUNK ? n - off : CORPUS_CHUNK;
    for (size_t off = 0, i = 0; off < n; off += CORPUS_CHUNK, i++) {
        const size_t len = n - off < CORPUS_CHUNK ? n - off : CORPUS_CHUNK;
        if (i % CORPUS_VAL_EVERY == CORPUS_VAL_EVERY - 1) {
            memcpy(split + nt + nv, buf + off, len);
            nv += len;
        } else {
            memcpy(split + (off - (i / CORPUS_VAL_EVERY) * CORPUS_CHUNK), buf + off, len);
        }
    }
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)buf[i]) * 1099511628211ULL;
    free(buf);
    c->hash = h;
    c->train = split;
    c->ntrain = nt;
    c->val = split + nt;
    c->nval = nv;
    c->size = n;
    return 0;
}

void corpus_free(Corpus *c) {
    free(c->train);
    memset(c, 0, sizeof *c);
}

size_t corpus_val_windows(const Corpus *c, int T) {
    return c->nval > 1 ? (c->nval - 1) / (size_t)T : 0;
}

/* Byte i (0 .. T) of a sequence whose content starts at s: seg repeated with period p
 * (p > 0), the text x with its span a .. a+q−1 (content positions) repeated once
 * (p < 0, q = −p), else the text x. */
static int seq_byte(const unsigned char *x, const unsigned char *seg, int p, int a, int s, int i) {
    if (p > 0) return seg[(i - s) % p];
    if (p < 0 && i - s >= a - p) return x[i + p];
    return x[i];
}

/* uniform in [lo, hi] */
static int draw(uint64_t *st, int lo, int hi) {
    return lo + (int)(rng_next(st) % (uint64_t)(hi - lo + 1));
}

static unsigned char printable(uint64_t *st) {
    return (unsigned char)(CORPUS_RANDOM_LO + rng_next(st) % (CORPUS_RANDOM_HI - CORPUS_RANDOM_LO + 1));
}

/* The segment of repeat b (period p, drawn here) into seg. */
static int draw_segment(uint64_t *st, const CorpusMix *mix, int b, const unsigned char *x,
                        unsigned char *seg, int cap) {
    const int B = mix->B, text_span = b >= B - mix->nspan, alpha = b < B - mix->nrep + mix->nalpha;
    int p = draw(st, mix->period_min, mix->period_max);
    if (p > cap) p = cap;
    if (alpha) { /* k symbols, then p draws among them */
        unsigned char sym[CORPUS_RANDOM_HI - CORPUS_RANDOM_LO + 1];
        const int k = draw(st, mix->alpha_min, mix->alpha_max);
        for (int j = 0; j < k; j++) sym[j] = printable(st);
        for (int j = 0; j < p; j++) seg[j] = sym[rng_next(st) % (uint64_t)k];
        return p;
    }
    for (int j = 0; j < p; j++) seg[j] = text_span ? x[j] : printable(st);
    return p;
}

void corpus_batch(const Corpus *c, uint64_t seed, int step, const CorpusMix *mix, int *inputs,
                  int *targets, int *periods) {
    uint64_t st = rng_stream(seed, (uint64_t)step);
    const int B = mix->B, T = mix->T, s = mix->bos >= 0 ? 1 : 0;
    const size_t span = c->ntrain - (size_t)T; /* starts 0 .. ntrain − T − 1: T + 1 bytes each */
    unsigned char seg[4096];
    for (int b = 0; b < B; b++) {
        const unsigned char *x = c->train + rng_next(&st) % span;
        int *in = inputs + (size_t)b * T, *tg = targets + (size_t)b * T;
        const int rep = b >= B - mix->nrep, embed = !rep && b >= B - mix->nrep - mix->nembed;
        int p = 0, a = 0;
        if (rep) p = draw_segment(&st, mix, b, x, seg, (int)sizeof seg);
        if (embed) { /* a span of q bytes at content position a, q bytes again after it */
            const int q = draw(&st, mix->embed_min, mix->embed_max);
            a = draw(&st, 0, T - s - 2 * q);
            p = -q;
        }
        if (periods) periods[b] = p;
        for (int i = 0; i < T; i++) {
            in[i] = i < s ? mix->bos : seq_byte(x, seg, p, a, s, i);
            tg[i] = seq_byte(x, seg, p, a, s, i + 1);
        }
    }
}

void corpus_val_window(const Corpus *c, size_t w, int T, int bos, int *inputs, int *targets) {
    const unsigned char *x = c->val + w * (size_t)T;
    for (int i = 0; i < T; i++) {
        inputs[i] = x[i];
        targets[i] = x[i + 1];
    }
    if (bos >= 0) inputs[0] = bos;
}

size_t corpus_count_byte(const Corpus *c, int b) {
    size_t n = 0;
    const size_t all = c->ntrain + c->nval; /* val follows train in one allocation */
    for (size_t i = 0; i < all; i++) n += c->train[i] == (unsigned char)b;
    return n;
}

/* ---- n-gram baselines ------------------------------------------------------------- */

/* The context of the k bytes before p as an integer (earliest byte highest). */
static size_t context_of(const unsigned char *p, int k) {
    size_t ctx = 0;
    for (int j = k; j >= 1; j--) ctx = ctx << 8 | p[-j];
    return ctx;
}

int corpus_ngram_bits(const Corpus *c, int order, int T, double *bits, double *alpha) {
    /* counts of every order up to `order`, for the targets that have less context */
    uint32_t *count[3] = {NULL, NULL, NULL}, *total[3] = {NULL, NULL, NULL};
    int rc = 0;
    if (order < 0 || order > 2) return CORPUS_NOMEM;
    for (int o = 0; o <= order && !rc; o++) {
        const size_t nctx = (size_t)1 << (8 * o);
        count[o] = calloc(nctx * CORPUS_VOCAB, sizeof(uint32_t));
        total[o] = calloc(nctx, sizeof(uint32_t));
        if (!count[o] || !total[o]) rc = CORPUS_NOMEM;
        for (size_t i = (size_t)o; !rc && i < c->ntrain; i++) {
            const size_t ctx = context_of(c->train + i, o);
            count[o][ctx * CORPUS_VOCAB + c->train[i]]++;
            total[o][ctx]++;
        }
    }
    const size_t last = corpus_val_windows(c, T) * (size_t)T; /* targets 1 .. last */
    static const double grid[] = {1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0};
    *bits = INFINITY;
    *alpha = 0.0;
    for (size_t g = 0; !rc && g < sizeof grid / sizeof grid[0]; g++) {
        const double a = grid[g];
        double sum = 0.0;
        for (size_t i = 1; i <= last; i++) {
            const int o = i < (size_t)order ? (int)i : order;
            const size_t ctx = context_of(c->val + i, o);
            const double p = (count[o][ctx * CORPUS_VOCAB + c->val[i]] + a) /
                             (total[o][ctx] + CORPUS_VOCAB * a);
            sum -= log2(p);
        }
        const double b = last ? sum / (double)last : INFINITY;
        if (b < *bits) {
            *bits = b;
            *alpha = a;
        }
    }
    for (int o = 0; o < 3; o++) {
        free(count[o]);
        free(total[o]);
    }
    return rc;
}
