/* copying.c — greedy copying of sentences, three caches (copying.h). */
#include "copying.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "record_csv.h"

static const char *const CACHE_NAMES[COPY_CACHES] = {"full", "forgetful", "window"};

const char *copy_cache_name(CopyCache k) {
    return k >= 0 && k < COPY_CACHES ? CACHE_NAMES[k] : "?";
}

/* ---- sentences ------------------------------------------------------------------------- */

static int is_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* Bytes of a Chinese full stop, exclamation or question mark at t (0: none). */
static int cjk_end(const unsigned char *t, size_t left) {
    if (left < 3) return 0;
    if (t[0] == 0xE3 && t[1] == 0x80 && t[2] == 0x82) return 3;                   /* 。 */
    if (t[0] == 0xEF && t[1] == 0xBC && (t[2] == 0x81 || t[2] == 0x9F)) return 3; /* ！？ */
    return 0;
}

/* The text with whitespace runs as one space into out (n + 1 bytes): its length. */
static size_t collapse(const unsigned char *t, size_t n, unsigned char *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_space(t[i])) out[k++] = t[i];
        else if (k && out[k - 1] != ' ') out[k++] = ' ';
    }
    return k;
}

int copy_sentences(const char *text, size_t n, int min_len, int max_len, int nmax, Sentences *s) {
    memset(s, 0, sizeof *s);
    unsigned char *c = malloc(n + 1);
    size_t *off = malloc((n / 2 + 1) * sizeof *off);
    int *len = malloc((n / 2 + 1) * sizeof *len);
    if (!c || !off || !len) {
        free(c), free(off), free(len);
        return -1;
    }
    const size_t m = collapse((const unsigned char *)text, n, c);
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; i < m; i++) {
        const int cj = cjk_end(c + i, m - i);
        const int end = cj ? 1 : (c[i] == '.' || c[i] == '!' || c[i] == '?') && (i + 1 == m || c[i + 1] == ' ');
        if (!end) continue;
        const size_t stop = i + (cj ? (size_t)cj : 1); /* one past the sentence */
        size_t a = start;
        while (a < stop && c[a] == ' ') a++;
        const size_t L = stop - a;
        if (L >= (size_t)min_len && L <= (size_t)max_len) off[k] = a, len[k++] = (int)L;
        start = stop;
        i = stop - 1;
    }
    s->found = k;
    const int keep = k < nmax ? k : nmax;
    /* the kept sentences, spread evenly, each NUL-terminated in c (after the text) */
    size_t bytes = 0;
    for (int i = 0; i < keep; i++) bytes += (size_t)len[(long long)i * k / keep] + 1;
    s->text = malloc(bytes ? bytes : 1);
    s->off = malloc((keep ? keep : 1) * sizeof *s->off);
    s->len = malloc((keep ? keep : 1) * sizeof *s->len);
    if (!s->text || !s->off || !s->len) {
        free(c), free(off), free(len);
        copy_sentences_free(s);
        return -1;
    }
    size_t at = 0;
    for (int i = 0; i < keep; i++) {
        const int j = (int)((long long)i * k / keep);
        memcpy(s->text + at, c + off[j], (size_t)len[j]);
        s->text[at + (size_t)len[j]] = '\0';
        s->off[i] = at, s->len[i] = len[j];
        at += (size_t)len[j] + 1;
    }
    s->n = keep;
    free(c), free(off), free(len);
    return 0;
}

void copy_sentences_free(Sentences *s) {
    free(s->text), free(s->off), free(s->len);
    memset(s, 0, sizeof *s);
}

double copy_share(const unsigned char *a, const unsigned char *b, int n) {
    int eq = 0;
    for (int j = 0; j < n; j++) eq += a[j] == b[j];
    return n > 0 ? (double)eq / n : 0.0;
}

/* ---- the measure ------------------------------------------------------------------------ */

int copy_prompt(const Model *m, const char *s, int L, int cue, int *tok) {
    int n = 0;
    if (m->cfg.bos >= 0) tok[n++] = m->cfg.bos;
    for (int i = 0; i < L; i++) tok[n++] = (unsigned char)s[i];
    tok[n++] = ' ';
    for (int i = 0; i < cue; i++) tok[n++] = (unsigned char)s[i];
    return n;
}

/* One sentence with cache k: the greedy bytes into out (nw). 0, -1, -2. */
static int run_one(Model *m, const int *tok, int T, CopyCache k, const CopySpec *spec,
                   unsigned char *out, int nw) {
    Generator g;
    if (generator_init(&g, m, k == COPY_FORGETFUL ? GEN_ARTICLE_BUG : GEN_CACHE)) return -1;
    if (k == COPY_WINDOW) g.window = spec->kv_window, g.sink = spec->sinks;
    int rc = generator_prefill(&g, tok, T, NULL);
    for (int j = 0; j < nw && !rc; j++) {
        const int t = generator_argmax(&g);
        out[j] = (unsigned char)t; /* a byte model: ids 0..255 are bytes (a start id past them never wins in practice) */
        if (j + 1 < nw) rc = generator_decode(&g, t, j + 1, NULL);
    }
    generator_free(&g);
    return rc == 0 ? 0 : rc == -1 ? -1 : -2;
}

int copy_measure(Model *m, const Sentences *s, const CopySpec *spec, CopyReport *r) {
    memset(r, 0, sizeof *r);
    const size_t n = (size_t)s->n, w = (size_t)spec->window;
    r->n = s->n, r->window = spec->window;
    r->written_n = calloc(n ? n : 1, sizeof *r->written_n);
    r->written = calloc(COPY_CACHES * n * w + 1, 1);
    r->share = calloc(COPY_CACHES * n + 1, sizeof *r->share);
    int *tok = malloc((size_t)(m->cfg.N + 2) * sizeof *tok);
    int rc = r->written_n && r->written && r->share && tok ? 0 : -1;
    for (size_t i = 0; i < n && !rc; i++) {
        const char *sent = s->text + s->off[i];
        const int L = s->len[i], nw = L - spec->cue < spec->window ? L - spec->cue : spec->window;
        const int T = copy_prompt(m, sent, L, spec->cue, tok);
        r->written_n[i] = nw;
        for (int k = 0; k < COPY_CACHES && !rc; k++) {
            unsigned char *out = r->written + ((size_t)k * n + i) * w;
            rc = run_one(m, tok, T, (CopyCache)k, spec, out, nw);
            r->share[(size_t)k * n + i] = copy_share(out, (const unsigned char *)sent + spec->cue, nw);
        }
    }
    free(tok);
    if (rc) copy_report_free(r);
    return rc;
}

void copy_report_free(CopyReport *r) {
    free(r->written_n), free(r->written), free(r->share);
    memset(r, 0, sizeof *r);
}

int copy_count(const CopyReport *r, CopyCache k, double *mean_share) {
    int c = 0;
    double sum = 0.0;
    for (int i = 0; i < r->n; i++) {
        const double sh = r->share[(size_t)k * r->n + i];
        c += sh >= COPY_THRESHOLD;
        sum += sh;
    }
    if (mean_share) *mean_share = r->n ? sum / r->n : 0.0;
    return c;
}

/* ---- the files --------------------------------------------------------------------------- */

/* n bytes as a NUL-terminated string (a CSV field quotes what it must). */
static void field_bytes(FILE *f, const unsigned char *b, int n) {
    char buf[4200];
    int k = 0;
    for (int j = 0; j < n && k < (int)sizeof buf - 1; j++) buf[k++] = b[j] ? (char)b[j] : ' ';
    buf[k] = '\0';
    csv_write_field(f, buf);
}

static void write_rows(FILE *f, const CopyReport *r, const Sentences *s, const CopySpec *spec) {
    fprintf(f, "index,sentence,bytes,want");
    for (int k = 0; k < COPY_CACHES; k++)
        fprintf(f, ",%s_written,%s_share,%s_copied", CACHE_NAMES[k], CACHE_NAMES[k], CACHE_NAMES[k]);
    fputc('\n', f);
    const size_t n = (size_t)r->n;
    for (size_t i = 0; i < n; i++) {
        const char *sent = s->text + s->off[i];
        fprintf(f, "%zu,", i);
        csv_write_field(f, sent);
        fprintf(f, ",%d,", s->len[i]);
        field_bytes(f, (const unsigned char *)sent + spec->cue, r->written_n[i]);
        for (int k = 0; k < COPY_CACHES; k++) {
            const double sh = r->share[(size_t)k * n + i];
            fputc(',', f);
            field_bytes(f, r->written + ((size_t)k * n + i) * (size_t)r->window, r->written_n[i]);
            fprintf(f, ",%.4f,%d", sh, sh >= COPY_THRESHOLD);
        }
        fputc('\n', f);
    }
}

static void write_summary(FILE *f, const CopyReport *r, const CopySpec *spec) {
    fprintf(f, "cache,kv_window,sinks,sentences,copied,share_copied,mean_share_equal\n");
    for (int k = 0; k < COPY_CACHES; k++) {
        double mean;
        const int c = copy_count(r, (CopyCache)k, &mean);
        fprintf(f, "%s,%d,%d,%d,%d,%.4f,%.4f\n", CACHE_NAMES[k], k == COPY_WINDOW ? spec->kv_window : 0,
                k == COPY_WINDOW ? spec->sinks : 0, r->n, c, r->n ? (double)c / r->n : 0.0, mean);
    }
}

/* The tenth of [0, 1] a share falls in (1 in the last). */
static int bin_of(double sh) {
    const int b = (int)(sh * 10.0 + 1e-9);
    return b > 9 ? 9 : b < 0 ? 0 : b;
}

static void write_hist(FILE *f, const CopyReport *r) {
    int h[COPY_CACHES][10] = {{0}};
    for (int k = 0; k < COPY_CACHES; k++)
        for (int i = 0; i < r->n; i++) h[k][bin_of(r->share[(size_t)k * r->n + i])]++;
    fprintf(f, "bin_lo,bin_hi,full,forgetful,window\n");
    for (int b = 0; b < 10; b++)
        fprintf(f, "%d,%d,%d,%d,%d\n", 10 * b, 10 * b + 10, h[0][b], h[1][b], h[2][b]);
}

/* Bytes as chart text: printable ASCII and whole UTF-8 characters; a control byte (a
 * tab, a newline) or a broken character as '~'. */
static void chart_text(FILE *f, const unsigned char *b, int n) {
    for (int j = 0; j < n;) {
        const unsigned char c = b[j];
        int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = len > 0 && j + len <= n;
        for (int t = 1; ok && t < len; t++) ok = (b[j + t] & 0xC0) == 0x80;
        if (ok && len == 1) ok = c >= 32 && c < 127;
        if (ok) fwrite(b + j, 1, (size_t)len, f), j += len;
        else fputc('~', f), j++;
    }
}

static void write_examples(FILE *f, const CopyReport *r, const Sentences *s, const CopySpec *spec,
                           int examples) {
    fprintf(f, "index\tcue\twant\tfull\tforgetful\twindow\tfull_share\tforgetful_share\twindow_share\n");
    const size_t n = (size_t)r->n;
    for (size_t i = 0; i < n && (int)i < examples; i++) {
        const unsigned char *sent = (const unsigned char *)s->text + s->off[i];
        fprintf(f, "%zu\t", i);
        chart_text(f, sent, spec->cue);
        fputc('\t', f);
        chart_text(f, sent + spec->cue, r->written_n[i]);
        for (int k = 0; k < COPY_CACHES; k++) {
            fputc('\t', f);
            chart_text(f, r->written + ((size_t)k * n + i) * (size_t)r->window, r->written_n[i]);
        }
        for (int k = 0; k < COPY_CACHES; k++) fprintf(f, "\t%.4f", r->share[(size_t)k * n + i]);
        fputc('\n', f);
    }
}

int copy_write(const CopyReport *r, const Sentences *s, const CopySpec *spec, int examples,
               const OutDir *o, char *err, size_t errsize) {
    static const char *const names[4] = {"copying.csv", "copying_summary.csv", "copying_hist.csv",
                                         "copying_examples.tsv"};
    for (int k = 0; k < 4; k++) {
        FILE *f = outdir_fopen(o, names[k], err, errsize);
        if (!f) return -1;
        if (k == 0) write_rows(f, r, s, spec);
        else if (k == 1) write_summary(f, r, spec);
        else if (k == 2) write_hist(f, r);
        else write_examples(f, r, s, spec, examples);
        if (file_close(f) != 0) {
            snprintf(err, errsize, "%s: cannot write %s (%s): %s", o->option, names[k],
                     write_error_text(errno), o->target);
            return -1;
        }
    }
    return 0;
}
