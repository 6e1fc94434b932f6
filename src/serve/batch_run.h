/* batch_run.h — `kvscope batch` as a library: many sequences served at once.
 *
 * Every prompt is first run alone (contiguous KV cache, greedy decode): that run picks
 * the tokens and gives the reference logits, and the bytes a cache growing by doubling
 * reserved. Then the same tokens are run as one batch — a padded cache with its mask,
 * the same without the mask (one source article's pad_kv_cache), or the paged cache —
 * and each sequence's logits are compared with its run alone at every step. A prompt
 * that extends an earlier one also shows prefix reuse. See batch.h and paged.h.
 *
 * Files, in the output folder (columns as the headers below):
 *   diff.csv      every sequence at every step: max |Δlogit| and |Δ log p| against alone
 *   padding.csv   (padded) the stacked tensor's bytes and its padding per step
 *   memory.csv    (paged) bytes holding tokens and reserved by preallocation, doubling
 *                 and paging per step; memory.md the three shares over the run;
 *                 waste.csv where each way's memory goes over the run (kvwaste.h)
 *   blocks.csv    (paged) the block table at one step, and blocks.png (blocks_png.h)
 *   prefix.csv    prefix reuse: FLOPs of a fresh prefill and of the reused one
 *   summary.csv   key,value: what the lessons quote
 *   timing.csv    key,value: measured seconds (differs run to run)
 * Nothing here prints: a step's numbers go to the caller's callback.
 */
#ifndef KVSCOPE_BATCH_RUN_H
#define KVSCOPE_BATCH_RUN_H

#include <stddef.h>
#include <stdio.h>

#include "batch.h"
#include "model.h"
#include "outdir.h"
#include "kvwaste.h"
#include "paged.h"

typedef enum { BATCH_MASKED, BATCH_UNMASKED, BATCH_PAGED } BatchMode;

/* The sequences, their runs alone, and the batched logits of one step. */
typedef struct {
    int B, S;          /* sequences; the longest decode */
    int **tok;         /* (B) prompt ids, malloc'ed */
    int *T, *steps;    /* (B) prompt length; decode steps */
    int **gen;         /* (B, steps+1) gen[b][s]: token fed at decode step s (s ≥ 1) */
    float **ref;       /* (B, (steps+1)·V) logits alone after step s */
    size_t **ref_res;  /* (B, steps+1) bytes the alone cache (doubling) reserved after step s */
    float *lg;         /* (B·V) batched logits of one step */
    double t_alone, t_batch; /* measured seconds of the decode steps */
} BatchRun;

/* Room for B sequences (tok, T, steps zeroed: the caller fills them). 0, or -1. */
int batch_run_init(BatchRun *r, int B);
/* After tok, T and steps: the rest, for a vocabulary of V. 0, or -1 (out of memory). */
int batch_run_alloc(BatchRun *r, int V);
void batch_run_free(BatchRun *r);

/* Every prompt alone, greedy, with the contiguous KV cache. 0, -1 (memory) or
 * GEN_NONFINITE (logits that are not finite: nothing to compare with). */
int batch_run_alone(Model *m, BatchRun *r);

/* The batch's files, open in an output folder. */
typedef struct {
    FILE *diff, *summary, *prefix, *timing, *memory, *blocks, *memory_md, *waste;
    char dir[4200]; /* the folder, for blocks.png */
} BatchFiles;

/* Open the files of mode in o's temporary folder, with their headers. 0, or -1 with
 * the message in err. */
int batch_files_open(BatchFiles *f, const OutDir *o, BatchMode mode, char *err, size_t errsize);
/* Close them all. 0, or -1 if any write failed (errno of the failure). */
int batch_files_close(BatchFiles *f);

/* One step of the batch, for the caller's line of progress. */
typedef struct {
    int step, rows;      /* step (0: the prefill), sequences it ran */
    double worst;        /* max |Δlogit| against alone over its rows */
    int width;           /* padded: slots of the stacked tensor in use */
    size_t used;         /* bytes holding tokens */
    size_t stacked;      /* padded: bytes of the stacked tensor */
    int blocks;          /* paged: blocks owned */
    size_t reserved;     /* paged: bytes of those blocks */
} BatchStep;

/* The whole run, summed over its steps. */
typedef struct {
    double worst, worst_lp;   /* max |Δlogit|, |Δ log p| against alone */
    int differs, compared;    /* rows whose greedy token differs; rows compared */
    int peak_blocks, books_ok, table_step, pool_blocks;
    double sum_used, sum_pre, sum_dbl, sum_pag, sum_stk, sum_pad; /* bytes, over the steps */
    double prefix_worst;      /* max |Δlogit| of reused prefixes against fresh prefills */
    KvWaste waste[3];         /* paged runs: preallocate, doubling, paged (kvwaste.h) */
} BatchTotals;

typedef void BatchStepFn(const BatchStep *st, void *user);

/* The batch in mode (blocks of block_size tokens when paged; the block table written at
 * table_step, -1: half the longest run), every step compared with r's runs alone and
 * written to f; on_step (may be NULL) after each step; then summary.csv's keys of the
 * run and timing.csv's decode times. 0, or -1 (out of memory; blocks.png's message in
 * err when it could not be written). */
int batch_run_together(Model *m, BatchRun *r, BatchMode mode, int block_size, int table_step,
                       BatchFiles *f, BatchTotals *tot, BatchStepFn *on_step, void *user,
                       char *err, size_t errsize);

/* One prefix reuse: prompt `second` starts with prompt `first`. */
typedef struct {
    int first, second, prefix_tokens, new_tokens;
    uint64_t flops_fresh, flops_reuse;
    double pct_saved, seconds_fresh, seconds_reuse, max_abs_diff;
} PrefixPair;

typedef void PrefixFn(const PrefixPair *p, void *user);

/* Prefix reuse, after batch_run_together: for each prompt that extends an earlier one
 * (the longest such), a fresh prefill against the earlier one's cache plus the new
 * tokens; prefix.csv rows, the summary's keys and the measured times, on_pair (may be
 * NULL) for each. The worst difference goes to tot->prefix_worst. 0, or -1 (memory). */
int batch_run_prefix(Model *m, const BatchRun *r, BatchFiles *f, BatchTotals *tot,
                     PrefixFn *on_pair, void *user);

#endif
