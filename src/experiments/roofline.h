/* roofline.h — a decode step against the roofline: B copies of one prompt decoded
 * together, for B = 1, 2, 4, … up to b_max (and b_max itself).
 *
 * The batch is the padded cache with its mask (batch.h); every row has the same length,
 * so nothing is padding. Per B: the FLOPs a decode step does and the bytes it reads
 * (counted: the weights as the step itself counts what its matmuls read,
 * FlopCount.weight_bytes — once for the whole batch —, and the K and V of every row's
 * cached tokens), averaged over the steps; and two measured times —
 * the prefill of all B prompts (time to first token of the batch) and the median decode
 * step (time per output token). FLOPs per byte grows with B because the weights are read
 * once per step whatever B is: decode leaves the memory roof when that ratio passes the
 * machine's FLOP/s over its bytes/s.
 */
#ifndef KVSCOPE_ROOFLINE_H
#define KVSCOPE_ROOFLINE_H

#include <stdint.h>

#include "model.h"

#define ROOFLINE_MAX_POINTS 16

typedef struct {
    int B;              /* sequences decoded together */
    double flops;       /* one decode step, counted (mean over the steps) */
    double bytes;       /* one decode step reads: weights + K and V of every row (mean) */
    double ttft_s;      /* measured: prefill of the B prompts, until each has a first token */
    double step_s;      /* measured: the median decode step */
} RoofPoint;

/* The batch sizes of a sweep to b_max: 1, 2, 4, … and b_max. Returns their number
 * (at most ROOFLINE_MAX_POINTS for b_max ≤ 2^14). */
int roofline_sizes(int b_max, int *sizes);

/* Bytes the sweep's largest batch takes beyond the model's own: its padded cache of
 * b_max rows of T + steps slots, and b_max rows of logits. 0, or -1 if it does not fit
 * in 64 bits. */
int roofline_bytes_needed(const Config *cfg, int b_max, int T, int steps, uint64_t *out);

/* The sweep: tokens (T of them) prefilled into every row, then `steps` greedy decode
 * steps (each row feeds back its own argmax). pts receives one point per size; *n their
 * number. 0, or -1 (out of memory). */
int roofline_sweep(Model *m, const int *tokens, int T, int steps, int b_max, RoofPoint *pts, int *n);

#endif
