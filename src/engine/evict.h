/* evict.h — which cached positions each head keeps: a budget of K positions per layer
 * (per head where the method is per head), chosen by one of four policies.
 *
 *   window  StreamingLLM (Xiao et al. 2023): the first S positions (the sinks) and the
 *           newest K − S; the same for every head.
 *   h2o     H2O (Zhang et al. 2023), per head: the newest R positions, and of the older
 *           ones those with the most attention accumulated so far (the sum of the weights
 *           every query gave them, prefill queries included); an evicted position never
 *           comes back. R = K/2, as the paper's equal heavy and recent shares.
 *   snapkv  SnapKV (Li et al. 2024), per head, once, after the prefill of P tokens: the
 *           last w prompt queries (the observation window) vote, the votes (the sum of
 *           their weights on each older position) are max-pooled over a kernel of
 *           `pool` positions, and the K − w older positions with the most pooled votes are
 *           kept with the window itself. Decode then appends: the cache grows by one.
 *   oracle  per head and per step: the K positions the full cache's query of that step
 *           gives the most weight (rows recorded by a first, full-cache pass over the same
 *           tokens). Maximizes the weight kept at every step, so no policy holding K
 *           positions keeps more: the bound.
 * Every policy leaves the prefill alone (its queries read the whole prompt, as SnapKV and
 * NVIDIA's kvpress compress after it) and counts the step's own new token among the K.
 * Ties go to the earlier position.
 *
 * Eviction is a mask, not a move (kvcache.h's keep): slot s holds position s, and head h
 * of layer l reads it while keep[(l·NH + h)·N + s]. With nothing evicted the mask is not
 * handed to the cache at all, so a budget that holds everything runs exactly the full
 * cache's kernels. The caller (generate.h) calls evict_prefill_done after the prefill and
 * evict_before_step before each decode step, and hands every HOOK_PATTERN event to
 * evict_observe (H2O accumulates, SnapKV reads its window). No I/O, no globals.
 */
#ifndef KVSCOPE_EVICT_H
#define KVSCOPE_EVICT_H

#include <stddef.h>

typedef enum { EVICT_WINDOW, EVICT_H2O, EVICT_SNAPKV, EVICT_ORACLE, EVICT_COUNT } EvictPolicy;

typedef struct {
    EvictPolicy policy;
    int budget;     /* K: positions a head holds (SnapKV: after the prefill) */
    int sinks;      /* window: S first positions kept */
    int recent;     /* h2o: R newest positions kept; 0 means K/2 */
    int obs_window; /* snapkv: w prompt queries that vote */
    int pool;       /* snapkv: max-pool kernel, odd (1: no pooling) */
} EvictParams;

typedef struct {
    EvictParams p;
    int L, NH, N;
    unsigned char *keep;  /* (L, NH, N) */
    double *acc;          /* (L, NH, N) h2o: accumulated weight; snapkv: the window's votes */
    int *order;           /* (N) scratch for a selection */
    double *score;        /* (N) scratch */
    int any_evicted;      /* 1 once some head evicted something */
    int prompt;           /* P: tokens of the prefill */
    const float *oracle;  /* oracle: (L, NH, N, N) the full cache's weights, row by query
                           * position: [((l·NH + h)·N + query)·N + key]; not owned */
} Evictor;

/* Defaults: window S = 4, h2o R = K/2, snapkv w = 16 and pool 5 (the kernel size of
 * SnapKV's code, whose pooling is an average by default or a max: here the max). */
EvictParams evict_params_default(EvictPolicy policy, int budget);
/* "window", "h2o", "snapkv", "oracle"; parse gives -1 for an unknown name. */
const char *evict_policy_name(EvictPolicy p);
int evict_policy_parse(const char *s, EvictPolicy *p);
/* NULL if p fits a model of context N and a prompt of `prompt` tokens, else a static
 * message naming what is wrong: a budget below 1 or past N, sinks or the observation
 * window not below the budget, a window longer than the prompt, an even pool. */
const char *evict_params_check(const EvictParams *p, int N, int prompt);

/* 0, or -1 out of memory. */
int evict_init(Evictor *e, const EvictParams *p, int L, int NH, int N);
void evict_free(Evictor *e);
/* Forget everything: every position kept, nothing accumulated (before a prefill). */
void evict_reset(Evictor *e);
/* A HOOK_PATTERN event: layer l's weights (NH, n, Tt) of n queries at positions
 * pos0 .. pos0+n−1. */
void evict_observe(Evictor *e, int l, const float *pattern, int n, int Tt, int pos0);
/* After a prefill of P tokens: cut each head to its budget (window, h2o, snapkv). */
void evict_prefill_done(Evictor *e, int P);
/* Before the decode step of the token at position t: make its room. 0, or -1 when the
 * oracle policy has no rows. */
int evict_before_step(Evictor *e, int t);
/* Positions 0..t that head h of layer l keeps. */
int evict_kept(const Evictor *e, int l, int h, int t);
/* The mask the cache should read: NULL while nothing was evicted. */
static inline const unsigned char *evict_mask(const Evictor *e) { return e->any_evicted ? e->keep : 0; }

#endif
