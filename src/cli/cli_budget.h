/* cli_budget.h — the options that keep the KV cache in budget, shared by `kvscope run`
 * and `kvscope budget`: storage type, sliding window with sinks, memory cap.
 * CLI layer: the parse and check functions print the error line themselves. */
#ifndef KVSCOPE_CLI_BUDGET_H
#define KVSCOPE_CLI_BUDGET_H

#include <stddef.h>

#include "generate.h"
#include "kvcache.h"
#include "options.h"

typedef struct {
    Dtype dtype;        /* --kv-dtype, default fp32 */
    KVQuantGroup sim[2]; /* --int8-sim K,V: simulated int8 read-back of K and V (none: off) */
    int window;         /* --window W: 0 = keep everything */
    int sink;           /* --sink S: first positions kept by the window (default 0) */
    const char *sink_given; /* "--sink" when it was given */
    double max_kv_mb;   /* --max-kv-mb X: cap in MiB (2^20 bytes); 0 = none */
    int max_tokens;     /* --max-tokens N: cap in cached tokens; 0 = none */
} BudgetOpts;

/* The options of a BudgetOpts: all of them ("keeping the cache in budget"), or only
 * --window and --sink (kvscope budget compares every type itself). */
extern const Option BUDGET_OPTIONS[];
extern const Option WINDOW_OPTIONS[];

void budget_opts_default(BudgetOpts *o);
/* Check the combination against the generation mode:
 * 0, or 2 after the error line (sink ≥ window, window without a cache, --int8-sim with a
 * --kv-dtype other than fp32 or without a cache). A prompt of more
 * than W tokens is allowed: the prefill attends over all of it, and the first decode step
 * cuts the cache to the sinks and the newest W - S - 1 positions before it appends. */
int budget_opts_check(const BudgetOpts *o, GenMode mode);
/* The cap in bytes for a cache of bytes_per_token (the tighter of the two caps; 0 = none). */
size_t budget_cap_bytes(const BudgetOpts *o, size_t bytes_per_token);
/* Set the storage type, the window and the cap on a fresh generator. 0, or -1. */
int budget_opts_apply(const BudgetOpts *o, Generator *g);
/* Would the next step (decode step `step`, or the prefill of T tokens when step is 0)
 * take the cache past its cap? Then print the one line that says so (step and bytes)
 * and return 1; else 0. Called before the step allocates anything. */
int budget_cap_reached(const Generator *g, int step, int T);

#endif
