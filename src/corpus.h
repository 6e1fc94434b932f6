/* corpus.h — the training text: bytes as tokens, the train/validation split, batches,
 * and the n-gram baselines the trained model is measured against.
 *
 * Tokens are bytes (V = 256), as for the built-in model: any text in any language is a
 * sequence of its UTF-8 bytes.
 *
 * The split is fixed: the file is cut into chunks of CORPUS_CHUNK bytes; chunk i goes
 * to validation when i % CORPUS_VAL_EVERY == CORPUS_VAL_EVERY − 1, to training
 * otherwise (5 %, spread over the whole text). Each split is the concatenation of its
 * chunks, in file order.
 *
 * Validation windows: window w holds validation bytes w·T .. w·T + T; the model reads
 * the first T and predicts bytes w·T+1 .. w·T+T, each with 0..T−1 bytes of context.
 * Every validation measure (the model's loss, the baselines) predicts exactly these
 * bytes.
 */
#ifndef KVSCOPE_CORPUS_H
#define KVSCOPE_CORPUS_H

#include <stddef.h>
#include <stdint.h>

enum { CORPUS_CHUNK = 8192, CORPUS_VAL_EVERY = 20, CORPUS_VOCAB = 256 };

typedef struct {
    unsigned char *train, *val; /* the two splits, one allocation */
    size_t ntrain, nval;
    size_t size;                /* bytes of the file */
    uint64_t hash;              /* FNV-1a (64-bit) of the file's bytes: a checkpoint names its corpus */
} Corpus;

/* Results: 0; CORPUS_BAD (message in err: missing, unreadable, empty); CORPUS_NOMEM. */
enum { CORPUS_BAD = -1, CORPUS_NOMEM = -2 };

/* The largest corpus read: 1 GiB (the file and its split are both held in memory). */
#define CORPUS_MAX_BYTES ((size_t)1 << 30)

/* Read path (a regular file, infile.h) and split it. */
int corpus_load(Corpus *c, const char *path, char *err, size_t errsize);
void corpus_free(Corpus *c);

/* Validation windows of T tokens: (nval − 1) / T. */
size_t corpus_val_windows(const Corpus *c, int T);

/* The batch of optimizer step `step` (0, 1, ...): B sequences of T + 1 bytes x, as
 * inputs (B,T) = x[0..T-1] and targets (B,T) = x[1..T]. Sequence b starts at a byte
 * offset drawn from the stream rng_stream(seed, step) (rng.h), uniform over the training
 * split, so a batch depends on the seed and the step alone (resuming draws the batches an
 * unbroken run draws). The last nrep sequences repeat their first half,
 * x[i] = x[i − T/2] for i ≥ T/2: the pattern an induction head completes. Their first
 * half is random printable bytes (CORPUS_RANDOM_LO..HI, from the same stream), which only
 * copying predicts; with repeat_text, the training text at the drawn offset.
 * Needs ntrain > T. */
enum { CORPUS_RANDOM_LO = 32, CORPUS_RANDOM_HI = 126 };
void corpus_batch(const Corpus *c, uint64_t seed, int step, int B, int T, int nrep, int repeat_text,
                  int *inputs, int *targets);

/* Validation window w as inputs (T) and targets (T). */
void corpus_val_window(const Corpus *c, size_t w, int T, int *inputs, int *targets);

/* An order-k byte model (k = 0: unigram; k bytes of context) counted on the training
 * split, with add-α smoothing: P(x | ctx) = (n(ctx, x) + α) / (n(ctx) + 256·α). Its
 * bits per byte on the validation targets of windows of T (a target with fewer than k
 * bytes before it in the split uses the context it has), for the α of a fixed grid
 * (1e-4 … 1) that does best on those targets: the best model of that order, tuned on
 * the validation split itself, which favours the baseline. 0 or CORPUS_NOMEM. */
int corpus_ngram_bits(const Corpus *c, int order, int T, double *bits, double *alpha);

#endif
