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

/* What the sequences of one batch are (train_mix in train.h picks it per step).
 * Sequence b is T + 1 bytes x (inputs x[0..T-1], targets x[1..T]); with a start byte
 * (bos >= 0) x[0] = bos and the content begins at s = 1, else at s = 0:
 *   plain text (b < B − nrep):  x[i] = text[o + i] for i >= s
 *   repeats (the last nrep):    x[i] = seg[(i − s) mod p] for i >= s, so x[i] = x[i − p]
 *     for i >= s + p: the pattern an induction head completes. The period p is drawn per
 *     sequence, uniform in [period_min, period_max]. seg is p random printable bytes
 *     (CORPUS_RANDOM_LO..HI), or for the last nspan repeats the text span text[o .. o+p−1]
 *     (which only copying predicts once the text itself is learnt). The first nalpha
 *     random repeats draw their p bytes from a small alphabet instead: k symbols (k uniform
 *     in [alpha_min, alpha_max]) drawn per sequence from the printable bytes, so a byte
 *     recurs many times inside the segment and only several bytes before a place name it.
 *   embedded repeats (the nembed sequences before the repeats): text in which one span
 *     of q bytes (q uniform in [embed_min, embed_max]) is repeated once, then the text
 *     goes on: with content y[j] = x[s + j], a span start a uniform in [0, T − s − 2q],
 *     x'[s + j] = y[j] for j < a + q, y[j − q] after: the second copy ends where the text
 *     after the first copy begins, so copying must stop (the repeats above never do).
 * The sequences in order: plain text, embedded, random repeats (small alphabet first),
 * text-span repeats. */
typedef struct {
    int B;                      /* sequences */
    int T;                      /* tokens per sequence, <= the model's context */
    int bos;                    /* the start byte (0..255) at position 0, or -1: none */
    int nrep, nspan;            /* repeats, of them text spans (nspan <= nrep <= B) */
    int period_min, period_max; /* 1 <= period_min <= period_max */
    int nalpha;                 /* random repeats from a small alphabet (<= nrep − nspan) */
    int alpha_min, alpha_max;   /* 1 <= alpha_min <= alpha_max <= 95 */
    int nembed;                 /* embedded repeats (<= B − nrep) */
    int embed_min, embed_max;   /* 1 <= embed_min <= embed_max, 2·embed_max <= T − 1 */
} CorpusMix;

/* The batch of optimizer step `step` (0, 1, ...) as mix says, into inputs and targets
 * (B,T) of the mix. Everything is drawn from the stream rng_stream(seed, step) (rng.h): the offset
 * o of each sequence, uniform over the training split, then its period and random bytes,
 * so a batch depends on the seed, the step and the mix alone (resuming draws the batches
 * an unbroken run draws). periods (B) gets each sequence's period (0: plain text; an
 * embedded repeat: minus its span's length), or is NULL. Needs ntrain > T. A mix without
 * small-alphabet or embedded repeats draws what it drew before they existed. */
enum { CORPUS_RANDOM_LO = 32, CORPUS_RANDOM_HI = 126 };
void corpus_batch(const Corpus *c, uint64_t seed, int step, const CorpusMix *mix, int *inputs,
                  int *targets, int *periods);

/* Validation window w as inputs (T) and targets (T): targets are validation bytes
 * w·T+1 .. w·T+T whatever bos is; with a start byte (bos >= 0) inputs[0] is bos in place
 * of byte w·T. */
void corpus_val_window(const Corpus *c, size_t w, int T, int bos, int *inputs, int *targets);

/* How many times byte b occurs in the file (both splits). */
size_t corpus_count_byte(const Corpus *c, int b);

/* An order-k byte model (k = 0: unigram; k bytes of context) counted on the training
 * split, with add-α smoothing: P(x | ctx) = (n(ctx, x) + α) / (n(ctx) + 256·α). Its
 * bits per byte on the validation targets of windows of T (a target with fewer than k
 * bytes before it in the split uses the context it has), for the α of a fixed grid
 * (1e-4 … 1) that does best on those targets: the best model of that order, tuned on
 * the validation split itself, which favours the baseline. 0 or CORPUS_NOMEM. */
int corpus_ngram_bits(const Corpus *c, int order, int T, double *bits, double *alpha);

#endif
