/* step_timer.h — where a forward call's time goes, measured from outside the engine: an
 * observer reads the clock at the hook points that bracket the matmuls and the attention,
 * so the engine itself keeps no clock (what `make bench` prints as a step's split).
 *
 * The interval that ends at an event is the work the engine did since the event before:
 *   hook_q                                    c_attn (matmul)
 *   hook_attn_scores, hook_pattern, hook_z    attention
 *   hook_attn_out, or hook_resid_mid when     attn.c_proj (matmul; its residual add too,
 *     hook_attn_out did not fire                which the fast kernels do as they store)
 *   hook_mlp_pre, or hook_mlp_post when       c_fc (matmul; GELU too when it runs as
 *     hook_mlp_pre did not fire                 c_fc stores)
 *   hook_mlp_out, hook_logits                 mlp.c_proj; ln_f and the lm_head (matmul)
 *   every other point                         the rest: layernorms, residuals, GELU alone,
 *                                             the cache's appends and conversions
 * The timer listens at those points only, which changes no path the engine takes (the
 * points that would — hook_attn_out, hook_mlp_pre, the score matrices — it hears only
 * when another observer asked for them), and it is the first and the last subscriber of
 * every point anyone listens to, so that what other observers cost is counted apart. */
#ifndef KVSCOPE_STEP_TIMER_H
#define KVSCOPE_STEP_TIMER_H

#include "hooks.h"

typedef struct {
    double matmul;    /* seconds: the block matmuls, the lm_head */
    double attention; /* scores, softmax and the weighted values */
    double hooks;     /* inside the other observers: what recording costs */
    double total;     /* from step_timer_begin to hook_step_end */
    double start, mark, entered; /* the call's start; when the last event's observers ended;
                                  * when this event's began */
    HookPoint prev;   /* the last event's point */
} StepTimer;

/* Zero every sum. */
void step_timer_reset(StepTimer *t);
/* Put t around h's subscribers: first and last at each point h listens to and at the
 * timer's own. Call after every other subscription. 0, or -1 (h has no room for two). */
int step_timer_wrap(StepTimer *t, Hooks *h);
/* Just before a forward call on hooks that t wraps: the call's time starts now. */
void step_timer_begin(StepTimer *t);

#endif
