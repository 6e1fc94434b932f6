/* budget.h — `kvscope budget` as a library: what a smaller or shorter KV cache costs in
 * accuracy.
 *
 * Every storage type (fp32, fp16, bf16, int8, q8_0) decodes `steps` tokens greedily next
 * to an fp32 reference fed the same tokens; the logits of both are compared at every
 * step. A sliding window does the same against the full cache, step by step, with the
 * attention weight the evicted positions held just before they were evicted (the
 * previous step's pattern of the newest query: observers.h's LastRows).
 *
 * Files (into an output folder):
 *   dtypes.csv   dtype,bytes_per_value,bytes_per_token,kv_bytes,max_abs_dlogit,
 *                mean_abs_dlogit,greedy_agree,greedy_steps,greedy_same
 *   dtypes.md    the same as a table
 *   window.csv   step,position,kv_tokens_full,kv_bytes_full,kv_tokens_window,
 *                kv_bytes_window,max_abs_dlogit,evicted_position,evicted_attention_mean,
 *                evicted_attention_max
 *   summary.csv  key,value: what the lessons quote
 */
#ifndef KVSCOPE_BUDGET_H
#define KVSCOPE_BUDGET_H

#include <stddef.h>
#include <stdio.h>

#include "generate.h"
#include "kvcache.h"
#include "model.h"
#include "outdir.h"

/* One storage type over the run, against the fp32 cache. */
typedef struct {
    Dtype dtype;
    double bytes_per_value;   /* row bytes / C: scales included */
    size_t bytes_per_token;   /* 2 · L · row bytes */
    size_t kv_bytes;          /* held after the run */
    LogitDrift drift;
} DtypeResult;

/* A window of W tokens with S sinks, against the full cache. */
typedef struct {
    int W, S;
    size_t window_bytes, full_bytes; /* held after the run */
    LogitDrift drift;
    double last_dlogit;       /* the last step's max |Δlogit| */
    int evicted;              /* positions evicted */
    double evicted_sum;       /* Σ over the steps of the weight the evicted positions held,
                               * averaged over the L·NH heads (/ evicted: per position) */
    double evicted_max;       /* the most weight they held in one head */
} WindowResult;

/* The run of `steps` decode steps after prompt (T tokens) with K/V stored as dt.
 * 0; GEN_NONFINITE; or -1 (out of memory, a failed step). */
int budget_run_dtype(Model *m, const int *prompt, int T, int steps, Dtype dt, DtypeResult *out);
/* The same with a window of W (S sinks), a window.csv row per step into csv.
 * 0; GEN_NONFINITE; or -1. */
int budget_run_window(Model *m, const int *prompt, int T, int steps, int W, int S, FILE *csv,
                      WindowResult *out);

typedef struct {
    FILE *summary, *dtypes, *dtypes_md, *window;
} BudgetFiles;

/* Open the files in o's temporary folder (window.csv when window), with their headers;
 * the summary starts with steps, prompt_tokens and tokens. 0, or -1 with err. */
int budget_files_open(BudgetFiles *f, const OutDir *o, int steps, int T, int window, char *err,
                      size_t errsize);
/* One type's row in dtypes.csv and dtypes.md, and its summary keys. */
void budget_write_dtype(BudgetFiles *f, const DtypeResult *r);
/* The window's summary keys. */
void budget_write_window(BudgetFiles *f, const WindowResult *r);
/* Close them all. 0, or -1 if any write failed (errno of the failure). */
int budget_files_close(BudgetFiles *f);

#endif
