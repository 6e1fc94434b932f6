/* compare.h — `kvscope compare` as a library: one decode step with the KV cache and
 * without it, at every length of a sweep.
 *
 * For each length T of the sweep, the decode step that brings the sequence to T tokens
 * is run two ways on the same tokens:
 *   cache      one new row against the T cached keys and values (GEN_CACHE);
 *   recompute  the whole sequence of T tokens from scratch (GEN_RECOMPUTE: a decode
 *              step without a cache is a forward pass over all T tokens).
 * The engine counts the FLOPs of both; they are written next to the closed form
 * flops_layers_formula(), with the cumulative cost of generating up to T, the
 * attention-only count the source articles use, the KV bytes and max |Δlogit|.
 *
 * Files (compare_write, into an output folder):
 *   compare.csv         counts (in all and by operation), KV bytes, max |Δlogit|, the
 *                       weight bytes each step reads (model_weight_bytes_read) and the
 *                       FLOPs per byte read: a pure function of the options
 *   prefill_decode.csv  the prefill and one decode step side by side (from hook events)
 *   flops.md, prefill_decode.md, values.csv   for the lessons to embed
 *   timing.csv, timing.md   measured seconds per step: differ run to run
 * Nothing here prints: the caller hears of each length through CompareProgress.
 */
#ifndef KVSCOPE_COMPARE_H
#define KVSCOPE_COMPARE_H

#include <signal.h>
#include <stdint.h>

#include "model.h"
#include "observers.h"
#include "outdir.h"

/* Median (mean of the middle two for an even count), min and max of n runs. */
typedef struct {
    double med, min, max;
    int n;
} Timing;

/* One length of the sweep. */
typedef struct {
    int T;
    uint64_t f_cache, f_rec;         /* counted FLOPs of the L blocks, one step */
    uint64_t tot_cache, tot_rec;     /* counted FLOPs of everything, one step */
    uint64_t cum_cache;              /* counted, prefill + every decode step up to T */
    uint64_t cum_rec_formula;        /* closed form: Σ over t = P..T of a pass over t tokens */
    FlopCount ops_cache, ops_rec;    /* the same steps by operation */
    size_t kv_bytes, kv_reserved;
    double dlogit;                   /* max |Δlogit| between the two */
    Timing t_cache, t_rec;
} CompareRow;

typedef struct {
    const int *lengths;  /* the sweep: increasing, each in P+1 .. N */
    int n;
    const int *table;    /* the lengths of the articles' table (flops.md) */
    int n_table;
    int decode_at;       /* the decode step shown next to the prefill (P+1 .. N) */
    int repeat;          /* timed runs per step (recompute: fewer past 256 tokens) */
} CompareSpec;

/* Told of each length, and asked whether to stop. */
typedef struct {
    void (*measuring)(int T, int index, void *user);            /* about to time length T */
    void (*measured)(const CompareRow *r, int index, void *user); /* its row */
    volatile sig_atomic_t *stop;   /* when set, the sweep ends after the current length */
    void *user;
} CompareProgress;

typedef struct {
    Config cfg;
    Dtype weights;     /* the type the weights are read in */
    int P;                 /* prompt tokens */
    CompareRow *rows;      /* the lengths measured, in order (fewer when stopped) */
    int n;
    StepShape pre, dec;    /* the prefill, and the decode step at decode_at (q_rows 0: not run) */
    int decode_at;
    char failed[64];       /* a failed step: which ("the decode step at T=9"), */
    const float *failed_logits; /* and its logits (for the caller's message) */
} CompareResult;

/* Run the sweep on m for prompt (P tokens). 0; -1 out of memory; or a failed step's
 * code (GEN_NONFINITE, ...) with res->failed and res->failed_logits set. res is freed by
 * compare_result_free either way. */
int compare_run(Model *m, const int *prompt, int P, const CompareSpec *spec,
                const CompareProgress *progress, CompareResult *res);
void compare_result_free(CompareResult *res);

/* Every file above into o's temporary folder. 0, or -1 with errno of the failure. */
int compare_write(const CompareResult *res, const CompareSpec *spec, const OutDir *o);

#endif
