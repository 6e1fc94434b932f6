/* observers.h — two small observers the comparisons subscribe (hooks.h), beside the
 * CSV, figure and page writers: they read a step from its hook events, never from the
 * engine's insides.
 *   StepShape   the shape of one step: Q rows, cached K rows, the causal attention scores
 *               computed (layer 0), the step's FLOPs and KV bytes (kvscope compare's
 *               prefill-vs-decode table)
 *   LastRows    the newest query's attention row of every layer and head, as of the last
 *               step (kvscope budget: the weight a window's evicted positions held just
 *               before they went)
 */
#ifndef KVSCOPE_OBSERVERS_H
#define KVSCOPE_OBSERVERS_H

#include <stddef.h>
#include <stdint.h>

#include "hooks.h"

typedef struct {
    int q_rows, k_rows;   /* rows of Q and of the cached K in layer 0 */
    uint64_t scores;      /* causal attention scores computed in layer 0, all heads */
    uint64_t flops;       /* the whole step, every op */
    size_t kv_bytes;      /* K and V held after the step */
} StepShape;

/* Subscribe s (zeroed) to the points it reads. 0, or -1 when the table is full. */
int step_shape_attach(StepShape *s, Hooks *h);

typedef struct {
    int L, NH, N;
    float *row;           /* row[(l·NH + h)·N + slot]: the newest query's weights */
} LastRows;

/* Room for L layers of NH heads over up to N slots. 0, or -1 (out of memory). */
int last_rows_init(LastRows *r, int L, int NH, int N);
void last_rows_free(LastRows *r);
/* Subscribe to hook_pattern. 0, or -1 when the table is full. */
int last_rows_attach(LastRows *r, Hooks *h);
/* Layer l, head h's row. */
static inline const float *last_rows_get(const LastRows *r, int l, int h) {
    return r->row + ((size_t)l * r->NH + h) * r->N;
}

#endif
