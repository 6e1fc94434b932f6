/* batch.h — many sequences decoded together, with a padded KV cache and a mask.
 *
 * B sequences of different lengths share one stacked tensor per layer, (B, W, C)
 * for K and for V, as a framework's batched cache does. Each sequence is
 * prefilled alone into slots 0..T_b-1 of its row; the shorter ones are then
 * padded with zeros up to the longest, W_0 = max T_b (one source article's
 * pad_kv_cache does exactly this: torch.cat zeros at the end, torch.stack). Each
 * decode step appends one token per live sequence at the same slot, `width`, so
 * the padding stays between a short prompt and its generated tokens:
 *
 *   seq 0  p p p p p p g g        p prompt token, g generated token,
 *   seq 1  p p p . . . g g        . padding (zeros)
 *
 * keep (B, W) marks the slots that hold a token. With the mask on, attention
 * gives a padding slot the score -inf, so its weight is exactly 0 and each
 * sequence's logits equal running it alone, bit for bit. With the mask off (the
 * article's code), every padding slot scores q·0 = 0 and takes a share of the
 * softmax: the answers change.
 *
 * Bytes: the stacked tensor holds B · width slots; Σ T_b + tokens generated hold
 * tokens; the rest is padding.
 */
#ifndef KVSCOPE_BATCH_H
#define KVSCOPE_BATCH_H

#include <stddef.h>

#include "model.h"

typedef struct {
    int L, NH, hs, B;
    int W;               /* slots reserved per sequence */
    int width;           /* slots of the stacked tensor in use: W_0 + decode steps */
    int masked;          /* 1: padding masked out; 0: the article's pad_kv_cache, no mask */
    float *k, *v;        /* (L, B, W, C), zeros where nothing was written */
    unsigned char *keep; /* (B, W) 1 where a slot holds a token */
    int *len;            /* (B) tokens held by each sequence */
    int workers;         /* threads that may attend rows at once (kern_threads()) */
    const float **kr, **vr; /* (workers, W) scratch: the rows one query attends */
    float *scores;       /* (workers, 2, NH, W) scratch: its scores and weights */
} PaddedBatch;

/* B sequences of up to W slots each. 0, or -1 when out of memory. */
int padded_init(PaddedBatch *pb, int L, int NH, int hs, int B, int W, int masked);
void padded_free(PaddedBatch *pb);
/* Prefill sequence b (before any decode step): its T tokens at positions and
 * slots 0..T-1. Logits of the last token into logits (V) if not NULL. 0, or -1. */
int padded_prefill(Model *m, PaddedBatch *pb, int b, const int *tokens, int T, float *logits,
                   FlopCount *flops);
/* One decode step: row r is token tokens[r] of sequence seqs[r] (each at most
 * once), at its own next position and at slot `width` of the stacked tensor.
 * logits[r] (V) as in model_forward_rows. 0, or -1 (past W, bad input, memory). */
int padded_decode(Model *m, PaddedBatch *pb, const int *seqs, const int *tokens, int R,
                  float *const *logits, FlopCount *flops);

size_t padded_bytes_per_token(const PaddedBatch *pb);  /* 2 · L · C · sizeof(float) */
size_t padded_bytes_stacked(const PaddedBatch *pb);    /* B · width slots */
size_t padded_bytes_used(const PaddedBatch *pb);       /* Σ len_b slots */

#endif
