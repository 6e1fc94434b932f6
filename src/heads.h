/* heads.h — what each attention head does, measured the way interpretability work
 * measures it (TransformerLens's scores), from the engine's own attention weights.
 *
 * On a text of n tokens, per layer and head, over the queries i = 1 .. n−1:
 *   prev_token  mean weight on key i − 1: a previous-token head is near 1
 *   sink        mean weight on key 0: the "attention sink" many heads park weight on
 *   entropy     mean of −Σ_j w_j·log2 w_j over the keys j ≤ i, in bits: 0 when a head
 *               looks at one key, log2(i+1) when it spreads evenly
 * On S sequences of R random bytes repeated twice (2R tokens):
 *   induction   mean weight from each second-copy token i (R ≤ i < 2R) on the token after
 *               its first copy, i − R + 1: an induction head is near 1
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

typedef struct {
    double prev_token, induction, sink, entropy;
} HeadScores;

typedef struct {
    HeadScores *h;       /* (L, NH), layer after layer */
    double first_bits;   /* mean loss on the first copy (bits per byte, predictions of
                          * tokens 1 .. R−1 of it) */
    double second_bits;  /* mean loss on the second copy (its R tokens) */
    int *rep;            /* (S, 2R) the repeated sequences */
    int R, S;
} HeadsReport;

/* Random bytes of the repeated sequences: uniform over printable ASCII 32..126, from
 * rng_stream(seed, s) for sequence s (rng.h). */
enum { HEADS_BYTE_LO = 32, HEADS_BYTE_HI = 126 };

/* Measure every head of m on text (n ≥ 2 tokens) and on S sequences of R random bytes
 * repeated (2R ≤ N). 0, -1 out of memory, -2 a forward pass failed. */
int heads_measure(Model *m, const int *text, int n, int R, int S, uint64_t seed, HeadsReport *r);
void heads_report_free(HeadsReport *r);

/* Into the begun output folder o (outdir.h): heads.csv (layer,head,prev_token,induction,
 * sink,entropy_bits: one row per layer and head), induction.csv (copy,tokens,
 * bits_per_byte: the loss on each copy) and tokens.csv (sequence,pos,token_id: "text",
 * then "repeat0" ... for the random sequences), for r measured on m's shape with text
 * (n tokens). 0, or -1 with a message naming the file. */
int heads_write(const HeadsReport *r, const Config *cfg, const int *text, int n, const OutDir *o,
                char *err, size_t errsize);

#endif
