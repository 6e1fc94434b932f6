/* copying.h — does a byte model copy a sentence it has just read? Measured over many
 * sentences cut from a text by a rule, with the whole KV cache, the forgetful cache of
 * the source article and a short sliding window.
 *
 * Sentences: the text's runs of whitespace (space, tab, CR, LF, FF, VT) become one space;
 * a sentence ends after '.', '!' or '?' followed by a space or the end of the text (the
 * Chinese '。', '！', '？' too); leading and trailing spaces are dropped. A sentence of
 * min_len .. max_len bytes is kept; of those, nmax spread evenly over the text: kept
 * sentence ⌊i·K/nmax⌋ for i = 0 .. nmax−1 (all K when K <= nmax).
 *
 * One sentence s of L bytes, cue c, window w (c < L): the prompt is the start token (if
 * the model has one), s, a space and s[0 .. c−1]; greedy decoding writes n = min(w, L − c)
 * bytes; the share equal is the count of positions j < n with written[j] = s[c + j],
 * over n. The sentence is copied when that share is >= COPY_THRESHOLD.
 * The three caches (generate.h): the whole cache (GEN_CACHE), the article's forgetful
 * cache (GEN_ARTICLE_BUG: each decode step sees only its own K and V) and a window of W
 * tokens that keeps the first S positions (the sinks), shorter than the distance back to
 * the first copy (L + 1), so the first copy is evicted before the cue is read out.
 */
#ifndef KVSCOPE_COPYING_H
#define KVSCOPE_COPYING_H

#include <stddef.h>

#include "model.h"
#include "outdir.h"

#define COPY_THRESHOLD 0.9

typedef enum { COPY_FULL, COPY_FORGETFUL, COPY_WINDOW, COPY_CACHES } CopyCache;

/* The caches' names in the CSVs: "full", "forgetful", "window". */
const char *copy_cache_name(CopyCache k);

typedef struct {
    char *text;   /* the sentences, one allocation, each NUL-terminated */
    size_t *off;  /* (n) where each begins in text */
    int *len;     /* (n) bytes */
    int n;
    int found;    /* sentences of the asked length in the whole text (before nmax) */
} Sentences;

/* Cut text (n bytes) into sentences, keep those of min_len .. max_len bytes, at most
 * nmax of them spread evenly. 0, or -1 when out of memory (s empty). */
int copy_sentences(const char *text, size_t n, int min_len, int max_len, int nmax, Sentences *s);
void copy_sentences_free(Sentences *s);

/* The count of positions j < n where a[j] == b[j], over n (0 for n = 0). */
double copy_share(const unsigned char *a, const unsigned char *b, int n);

typedef struct {
    int cue, window;   /* 1 <= cue < every sentence's length; window >= 1 */
    int kv_window;     /* the window cache's tokens, 2 .. */
    int sinks;         /* the first positions it keeps, 0 <= sinks < kv_window */
} CopySpec;

/* Per sentence and cache: the bytes written (n of them) and the share equal. */
typedef struct {
    int n;                           /* sentences */
    int *written_n;                  /* (n) bytes each run wrote: min(window, L − cue) */
    unsigned char *written;          /* (COPY_CACHES, n, window) */
    double *share;                   /* (COPY_CACHES, n) */
    int window;
} CopyReport;

/* The prompt of sentence s (L bytes) into tok (room for 2 + L + cue ids): its length. */
int copy_prompt(const Model *m, const char *s, int L, int cue, int *tok);

/* Every sentence with every cache: the prompt must fit with the written bytes
 * (copy_prompt's length + window <= N: the caller checks). 0, -1 out of memory, -2 a
 * step failed (non-finite logits). */
int copy_measure(Model *m, const Sentences *s, const CopySpec *spec, CopyReport *r);
void copy_report_free(CopyReport *r);

/* Sentences copied (share >= COPY_THRESHOLD) with cache k, and the mean share. */
int copy_count(const CopyReport *r, CopyCache k, double *mean_share);

/* Into the begun folder o: copying.csv (index,sentence,bytes,want,then per cache
 * <cache>_written,<cache>_share,<cache>_copied), copying_summary.csv
 * (cache,kv_window,sinks,sentences,copied,share_copied,mean_share_equal) and
 * copying_hist.csv (bin_lo,bin_hi,full,forgetful,window: sentences per tenth of the share
 * equal, the last bin closed) and copying_examples.tsv (the first `examples` sentences:
 * what each cache wrote after the cue, as printable text without tabs for the chart). 0, or -1 with a message naming the file. */
int copy_write(const CopyReport *r, const Sentences *s, const CopySpec *spec, int examples,
               const OutDir *o, char *err, size_t errsize);

#endif
