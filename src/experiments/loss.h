/* loss.h — attention sinks measured StreamingLLM's way (Xiao et al. 2023): the
 * teacher-forced loss at every position of a text several windows long, read three ways:
 *   full    the whole KV cache
 *   sinks   a sliding window of W tokens that keeps the first S positions (the sinks:
 *           the start token, for a model trained with one) and the newest W − S
 *   evict   a window of the same W tokens that keeps the newest W only: the sinks go
 * The tokens run one decode step at a time (generate.h), each one the text's own token
 * (teacher forcing); the logits after position p − 1 predict token p, and its loss is
 * −log2 of the probability they give it, in bits (bits per byte for a byte model).
 * Positions are absolute: a model with learned positions reads at most its context N,
 * so the text is at most N tokens and the window a fraction of it.
 */
#ifndef KVSCOPE_LOSS_H
#define KVSCOPE_LOSS_H

#include "model.h"
#include "outdir.h"

typedef enum { LOSS_FULL, LOSS_SINKS, LOSS_EVICT, LOSS_RUNS } LossRun;

typedef struct {
    double *bits;     /* (LOSS_RUNS, n): bits[run·n + p], the loss of token p; p = 0 is NaN
                       * (nothing predicts the first token) */
    int n, window, sinks;
} LossReport;

/* The three runs over tok (2 ≤ n ≤ N tokens) with window W and S sinks (1 ≤ S < W).
 * A window of n tokens or more never evicts: every run equals the full cache.
 * 0, -1 out of memory, -2 a step failed (non-finite logits). */
int loss_measure(Model *m, const int *tok, int n, int window, int sinks, LossReport *r);
void loss_report_free(LossReport *r);

/* The mean loss of run k over positions from .. n−1 (from ≥ 1); NaN when there are none.
 * The predictions a window changes are those from position W + 1 on (the first one made
 * after it evicted): loss_mean(r, k, r->window + 1) is the mean "past the window". */
double loss_mean(const LossReport *r, LossRun k, int from);

/* Into the begun folder o: loss.csv (position,token_id,full_bits,sinks_bits,evict_bits:
 * positions 1 .. n−1) and loss_means.csv (cache,window,sinks,positions,mean_bits,
 * positions_past_window,mean_bits_past_window: one row per run). 0, or -1 with a message
 * naming the file. */
int loss_write(const LossReport *r, const int *tok, const OutDir *o, char *err, size_t errsize);

#endif
