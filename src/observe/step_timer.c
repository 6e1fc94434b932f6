/* step_timer.c — a forward call's time split by the hook points around each kernel. */
#include "step_timer.h"

#include <string.h>

#include "sysinfo.h"

/* The points whose intervals the timer needs (step_timer.h). */
#define TIMER_POINTS                                                                        \
    (HOOK_BIT(HOOK_RESID_PRE) | HOOK_BIT(HOOK_LN1) | HOOK_BIT(HOOK_Q) | HOOK_BIT(HOOK_Z) |  \
     HOOK_BIT(HOOK_RESID_MID) | HOOK_BIT(HOOK_LN2) | HOOK_BIT(HOOK_MLP_POST) |              \
     HOOK_BIT(HOOK_MLP_OUT) | HOOK_BIT(HOOK_RESID_POST) | HOOK_BIT(HOOK_LOGITS) |           \
     HOOK_BIT(HOOK_STEP_END))

void step_timer_reset(StepTimer *t) { memset(t, 0, sizeof *t); }

void step_timer_begin(StepTimer *t) {
    t->start = t->mark = now_seconds();
    t->prev = HOOK_STEP_END;
}

/* Where the interval that ends at point p goes, after the point before it. */
static double *bucket(StepTimer *t, HookPoint p) {
    switch (p) {
    case HOOK_Q: case HOOK_ATTN_OUT: case HOOK_MLP_PRE: case HOOK_MLP_OUT: case HOOK_LOGITS:
        return &t->matmul;
    case HOOK_ATTN_SCORES: case HOOK_PATTERN: case HOOK_Z: return &t->attention;
    case HOOK_RESID_MID: return t->prev == HOOK_ATTN_OUT ? NULL : &t->matmul;
    case HOOK_MLP_POST: return t->prev == HOOK_MLP_PRE ? NULL : &t->matmul;
    default: return NULL;
    }
}

static int enter(const HookEvent *ev, void *user) {
    StepTimer *t = user;
    const double now = now_seconds();
    double *b = bucket(t, ev->point);
    if (b) *b += now - t->mark;
    t->entered = now;
    t->prev = ev->point;
    return 0;
}

static int leave(const HookEvent *ev, void *user) {
    StepTimer *t = user;
    const double now = now_seconds();
    t->hooks += now - t->entered;
    t->mark = now;
    if (ev->point == HOOK_STEP_END) t->total += now - t->start;
    return 0;
}

int step_timer_wrap(StepTimer *t, Hooks *h) {
    if (h->n + 2 > HOOKS_MAX_SUBSCRIBERS) return -1;
    const uint32_t mask = TIMER_POINTS | h->active;
    memmove(&h->sub[1], &h->sub[0], (size_t)h->n * sizeof h->sub[0]);
    h->n++;
    h->sub[0].fn = enter, h->sub[0].user = t, h->sub[0].mask = mask;
    h->active |= mask;
    return hooks_subscribe(h, mask, leave, t);
}
