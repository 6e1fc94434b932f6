/* frontier.h — what quality each byte of KV cache buys, for every lever on one model.
 *
 * One protocol for every lever: a text of T tokens (the start token first), its first P
 * the prompt (one prefill), then the rest teacher-forced one decode step at a time; the
 * predictions scored are those the decode steps make (of tokens P+1 .. T−1), each against
 * the same prediction of the full fp32 cache:
 *   KL      KL(full ‖ lever) of the next-token distributions, in bits
 *   top-1   1 when both rank the same token first
 *   bits    −log2 of the probability given to the text's own token (bits per byte for a
 *           byte-level model)
 *   bytes   the bytes of K and V the cache holds per token of context while it predicts:
 *           for a storage type or a head grouping its bytes per token (kvcache.h); for an
 *           eviction policy Σ over layers and heads of the positions kept, at that head's
 *           share of a row, divided by the positions seen, averaged over the steps.
 * The levers: a storage type (fp16, bf16, int8, q8_0, q4_0), each with or without the
 * Hadamard rotation; an eviction policy at a budget (evict.h, fp32 storage); K/V heads
 * mean-pooled into G groups (fp32 storage).
 *
 * The reference pass (frontier_reference) also records every query's weights over the
 * full cache (L, NH, N, N): the oracle's rows, the mass a policy loses (the weight that
 * query gave the positions the policy evicted, per layer and head) and the accumulated
 * attention H2O ranks (frontier_heavy).
 */
#ifndef KVSCOPE_FRONTIER_H
#define KVSCOPE_FRONTIER_H

#include <stddef.h>

#include "dtype.h"
#include "evict.h"
#include "model.h"

typedef enum { LEVER_FULL, LEVER_PRECISION, LEVER_EVICT, LEVER_HEADS, LEVER_COUNT } Lever;

typedef struct {
    Lever lever;
    Dtype dtype;      /* LEVER_PRECISION; DT_FP32 otherwise */
    int rotate;       /* LEVER_PRECISION: Hadamard rotation before the type */
    int kv_heads;     /* LEVER_HEADS: G; NH otherwise */
    EvictParams ev;   /* LEVER_EVICT */
} FrontierCfg;

/* Sums over the scored predictions of every text run with one configuration. */
typedef struct {
    double kl, bits, bytes; /* Σ KL (bits), Σ bits of the text's token, Σ bytes per token */
    long agree, n;          /* top-1 agreements, predictions */
    double *mass;           /* (L·NH) Σ over decode steps of the weight lost, or NULL */
    long steps;             /* decode steps summed into mass */
    double copied;          /* Σ predictions whose first choice is the text's token */
} FrontierAcc;

/* "full", "precision", "evict", "heads". */
const char *frontier_lever_name(Lever l);
/* A short name of c: "fp32", "q4_0+rot", "h2o K=64", "G=2". */
void frontier_cfg_label(const FrontierCfg *c, char *buf, size_t size);

/* The full fp32 cache over tok (T ≤ N tokens), prompt P (1 ≤ P < T − 1): the scored
 * predictions' logits (T − P − 1, V) and, when rows is not NULL, every query's weights
 * (L, NH, N, N) (rows of positions ≥ T left as they were). 0, -1, or GEN_NONFINITE. */
int frontier_reference(Model *m, const int *tok, int T, int P, float *logits, float *rows);

/* One configuration over the same text, added into acc (mass when acc->mass). keep_out,
 * when not NULL, gets the policy's mask (L, NH, N) after the last step. 0, -1 (out of
 * memory, bad configuration), or GEN_NONFINITE. */
int frontier_run(Model *m, const FrontierCfg *c, const int *tok, int T, int P,
                 const float *ref_logits, const float *rows, FrontierAcc *acc,
                 unsigned char *keep_out);

/* The full cache's K and V after a prefill of tok (T tokens): k and v (L, T, C). 0 or -1. */
int frontier_kv(Model *m, const int *tok, int T, float *k, float *v);
/* Rows x (T, NH·hs) stored as dt (rotated first when rotate) and read back: Σ (x − x̃)² into
 * *err2 and Σ x² into *sig2 (added to), and Σ over blocks of 32 of max|x| / rms of what
 * the quantizer sees (rotated or not) into *peak, the blocks into *blocks. 0 or -1. */
int frontier_quant_error(const float *x, int T, int NH, int hs, Dtype dt, int rotate,
                         double *err2, double *sig2, double *peak, long *blocks);

/* KL(p ‖ q) in bits of the softmaxes of logits a (p) and b (q), V each, in double. */
double frontier_kl_bits(const float *a, const float *b, int V);

/* The accumulated attention of every position of a text of T tokens, per head: column
 * sums of the recorded rows, acc (L, NH, T). */
void frontier_accumulated(const float *rows, int L, int NH, int N, int T, double *acc);
/* Least squares of log y against log x (power law, slope into *slope) and of log y
 * against x (exponential); the R² of each. Points with y ≤ 0 are skipped. */
void frontier_fit(const double *y, int n, double *slope, double *r2_power, double *r2_exp);

#endif
