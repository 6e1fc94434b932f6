/* generate.h — prefill, then greedy decode, with the cache or without it.
 *
 * The three cache modes are the three stories the lessons tell:
 *   GEN_CACHE       prefill once, then one token per step against the KV cache;
 *   GEN_RECOMPUTE   no cache: every decode step runs the whole sequence again;
 *   GEN_ARTICLE_BUG the cache of one source article, which in eval mode keeps only
 *                   the newest step's K and V (k[:, -seq_len:]) and so forgets history.
 */
#ifndef KVSCOPE_GENERATE_H
#define KVSCOPE_GENERATE_H

#include "evict.h"
#include "hooks.h"
#include "kvcache.h"
#include "model.h"

typedef enum { GEN_CACHE, GEN_RECOMPUTE, GEN_ARTICLE_BUG } GenMode;

typedef struct {
    Model *m;          /* not owned */
    GenMode mode;
    KVCache cache;
    int *tokens;       /* (N) the sequence so far: prompt, then generated tokens */
    int len;
    float *logits;     /* (V) logits of the last position after the last step */
    FlopCount total;   /* FLOPs of every step so far */
    int window, sink;  /* sliding window (GEN_CACHE): 0 = off; else the cache keeps at most
                        * `window` tokens: the first `sink` positions and the most recent
                        * window − sink. Set them before the prefill (0 ≤ sink < window). */
    int evicted_pos0, evicted_n; /* positions evicted since the last step (the window, the
                        * articles' bug), reported with the next one (StepLabel) */
    Evictor *evict;    /* NULL, or a policy (evict.h) choosing per head which positions
                        * attention reads; not owned (generator_set_evict) */
} Generator;

/* A step whose logits are not all finite (NaN or ±inf: weights that overflow float32)
 * fails with this code: the step ran, but nothing after it can be trusted. */
enum { GEN_NONFINITE = -100 };

/* 0, or -1 when out of memory. */
int generator_init(Generator *g, Model *m, GenMode mode);
void generator_free(Generator *g);
/* Evict by policy e (GEN_CACHE without a window, before the prefill). 0, or -1. */
int generator_set_evict(Generator *g, Evictor *e);
/* Step 0: run the prompt (n ≥ 1 tokens) in one batched pass. 0, GEN_NONFINITE, or an
 * error of model_forward (-1, KVCACHE_OVER_BUDGET, a hook's code). */
int generator_prefill(Generator *g, const int *prompt, int n, Hooks *hooks);
/* The greedy choice: argmax of the current logits (the lowest id on a tie). */
int generator_argmax(const Generator *g);
/* Decode step `step` (1, 2, ...): append token and run it. 0, GEN_NONFINITE or an error. */
int generator_decode(Generator *g, int token, int step, Hooks *hooks);
/* Undo the last decode step of a cached generator (its token, K and V, position:
 * kvcache_truncate), so the same step can run again on the same slot with the same
 * bytes (timing repeats); nothing was evicted, and the step done again says so.
 * 0, or -1 if there is nothing to undo, or no plain cache (recompute, bug, window). */
int generator_rewind(Generator *g);
/* The index of the first logit that is NaN or ±inf, or -1 when all n are finite. */
int logits_first_nonfinite(const float *logits, int n);
/* argmax of n logits (the lowest index on a tie). */
int logits_argmax(const float *logits, int n);
/* max |a[i] − b[i]| over n logits, in double; NaN when either side holds a NaN, so a
 * difference that cannot be measured never passes for none. */
double logits_max_abs_diff(const float *a, const float *b, int n);
/* max |Δ log p| over n logits (log-softmax of each, in double): unlike the logits
 * themselves it ignores a shift of every logit, which changes no probability. */
double logits_max_abs_dlogprob(const float *a, const float *b, int n);
/* The larger of two differences, NaN if either is NaN (fmax would drop it). */
static inline double diff_max(double a, double b) { return (a != a || b != b) ? a + b : (a > b ? a : b); }

/* How far one run's logits drift from a reference run's, step after step. */
typedef struct {
    double max_abs, sum_abs;  /* max and sum of |Δlogit| (in double) */
    long n;                   /* logits compared */
    int agree, steps;         /* greedy choices that agree; steps compared */
} LogitDrift;
/* Add one step of n logits (test against ref) to d; returns that step's max |Δlogit|. */
double logit_drift_add(LogitDrift *d, const float *test, const float *ref, int n);

/* Rows the next decode step would compute (1 with a cache, len+1 without). */
int generator_next_rows(const Generator *g);
/* Cache slots the next decode step evicts before it runs (the window): *first, and
 * the count returned (0 when nothing is evicted). */
int generator_next_eviction(const Generator *g, int *first);
/* Tokens the cache holds while the next decode step runs (after any eviction): what a
 * memory cap must allow before the step allocates. */
int generator_next_kv_tokens(const Generator *g);

#endif
