/* heads.h — what each attention head does, measured the way interpretability work
 * measures it (TransformerLens's scores), from the engine's own attention weights.
 *
 * On a text of n tokens as the model reads it (its start token first, if it has one),
 * per layer and head, over the queries i = 1 .. n−1:
 *   prev_token  mean weight on key i − 1: a previous-token head is near 1
 *   prev_before, prev_after  the same over the queries i < split and i ≥ split: a head
 *               that learned one fixed distance instead of "the byte before" (the training
 *               repeats' ctx/2) scores high before it and low after
 *   sink        mean weight on key 0: the "attention sink" many heads park weight on
 *   sink_no_start  the same on the text without the start token (models with one)
 *   entropy     mean of −Σ_j w_j·log2 w_j over the keys j ≤ i, in bits: 0 when a head
 *               looks at one key, log2(i+1) when it spreads evenly
 * On S sequences of R random bytes repeated twice, for each copy length R of a list
 * (the start token in front, if the model has one):
 *   induction   mean weight from each second-copy token at i on the token after its
 *               first copy, i − R + 1: an induction head is near 1 at every R; a head
 *               that learned one distance is near 1 at that R only
 * and the model's loss on each copy, in bits per byte: the second copy is predictable
 * only by looking back at the first.
 *
 * The tokens run one decode step at a time through the KV cache (generate.h), each
 * step's attention row read from the hook point blocks.l.attn.hook_pattern.
 */
#ifndef KVSCOPE_HEADS_H
#define KVSCOPE_HEADS_H

#include <stdint.h>

#include "model.h"
#include "outdir.h"

/* What to measure. */
typedef struct {
    const int *text;   /* (n) the text as the model reads it: with the start token first
                        * when bos ≥ 0 */
    int n;             /* ≥ 2 */
    int split;         /* 1 ≤ split < n: prev_before covers queries < split */
    const int *lens;   /* (nlens) copy lengths R, each with 2R (+1 with a start) ≤ N */
    int nlens;
    int S;             /* random sequences per copy length, ≥ 1 */
    uint64_t seed;
    int bos;           /* the model's start token, or -1 */
} HeadsSpec;

typedef struct {
    double prev_token, prev_before, prev_after, induction, sink, sink_no_start, entropy;
} HeadScores;

typedef struct {
    HeadScores *h;       /* (L, NH), layer after layer; induction: the lowest over the
                          * copy lengths (a head copies at every distance at least this
                          * well); sink_no_start NaN without a start token */
    double *ind;         /* (nlens, L, NH) induction at each copy length */
    double *first_bits;  /* (nlens) mean loss on the first copy (bits per byte, the
                          * predictions of its tokens 1 .. R−1) */
    double *second_bits; /* (nlens) mean loss on the second copy (its R tokens) */
    int *rep;            /* the repeated sequences, length after length: S of
                          * heads_seq_len(R, bos) tokens each */
    int nlens, S, bos, split;
    const int *lens;     /* the spec's (not owned) */
} HeadsReport;

/* Random bytes of the repeated sequences: uniform over printable ASCII 32..126, from
 * rng_stream(seed, s) for sequence s (rng.h), the same bytes at every copy length. */
enum { HEADS_BYTE_LO = 32, HEADS_BYTE_HI = 126 };

/* Tokens of one repeated sequence: 2R, and the start token in front when bos ≥ 0. */
static inline int heads_seq_len(int R, int bos) { return 2 * R + (bos >= 0); }

/* Every head's mean output z over the n tokens of text, as the model reads them one
 * decode step at a time: into mean (L, C), row l holding layer l's heads side by side —
 * what a mean ablation puts in a head's place (model.h: Model.head_fill). Run it on the
 * unablated model. 0, -1 out of memory, -2 a forward pass failed. */
int heads_mean_z(Model *m, const int *text, int n, float *mean);

/* Measure every head of m as spec says. 0, -1 out of memory, -2 a forward pass failed. */
int heads_measure(Model *m, const HeadsSpec *spec, HeadsReport *r);
void heads_report_free(HeadsReport *r);

/* Into the begun output folder o (outdir.h):
 *   heads.csv  layer,head,prev_token,prev_before,prev_after,induction,sink[,sink_no_start],
 *              entropy_bits: one row per layer and head (sink_no_start with a start token)
 *   induction.csv  copy_len,best_layer,best_head,best_induction,first_bits,second_bits:
 *              one row per copy length
 *   induction_heads.csv  layer,head,copy_len,induction: every head at every length
 *   tokens.csv  sequence,pos,token_id: "text", then "copy<R>_<s>" for the random ones
 * for r measured on m's shape with spec's text. 0, or -1 with a message naming the file. */
int heads_write(const HeadsReport *r, const Config *cfg, const HeadsSpec *spec, const OutDir *o,
                char *err, size_t errsize);

#endif
