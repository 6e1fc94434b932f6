/* hooks.h — named hook points the engine fires and observers subscribe to.
 *
 * Names follow TransformerLens: blocks.{l}.attn.hook_q etc. The engine calls
 * hooks_wants() before it builds an event, so with no subscriber a hook point
 * costs one bit test. Observers (CSV recorder, heatmaps, ...) never see the
 * engine's internals: only the event, whose data pointer is valid during the
 * callback only.
 */
#ifndef KVSCOPE_HOOKS_H
#define KVSCOPE_HOOKS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    /* in the order the engine fires them, per layer l; shapes with n = T_new */
    HOOK_RESID_PRE,   /* blocks.{l}.hook_resid_pre            [n, C] block input */
    HOOK_LN1,         /* blocks.{l}.ln1.hook_normalized       [n, C] */
    HOOK_Q,           /* blocks.{l}.attn.hook_q               [n, NH, hs] */
    HOOK_K,           /* blocks.{l}.attn.hook_k               [n, NH, hs] the new keys */
    HOOK_V,           /* blocks.{l}.attn.hook_v               [n, NH, hs] the new values */
    HOOK_CACHE_K,     /* blocks.{l}.attn.cache_k              [T_total, NH, hs] after the append */
    HOOK_CACHE_V,     /* blocks.{l}.attn.cache_v              [T_total, NH, hs] after the append */
    HOOK_ATTN_SCORES, /* blocks.{l}.attn.hook_attn_scores     [NH, n, T_total] scaled, pre-softmax, future = -inf */
    HOOK_PATTERN,     /* blocks.{l}.attn.hook_pattern         [NH, n, T_total] post-softmax, future = 0 */
    HOOK_Z,           /* blocks.{l}.attn.hook_z               [n, NH, hs] weighted sum of values */
    HOOK_ATTN_OUT,    /* blocks.{l}.hook_attn_out             [n, C] after c_proj */
    HOOK_RESID_MID,   /* blocks.{l}.hook_resid_mid            [n, C] */
    HOOK_LN2,         /* blocks.{l}.ln2.hook_normalized       [n, C] */
    HOOK_MLP_PRE,     /* blocks.{l}.mlp.hook_pre              [n, 4C] c_fc output */
    HOOK_MLP_POST,    /* blocks.{l}.mlp.hook_post             [n, 4C] after GELU */
    HOOK_MLP_OUT,     /* blocks.{l}.hook_mlp_out              [n, C] after mlp.c_proj */
    HOOK_RESID_POST,  /* blocks.{l}.hook_resid_post           [n, C] block output */
    HOOK_LOGITS,      /* hook_logits                          [V] last new position only */
    HOOK_STEP_END,    /* hook_step_end: no tensor; the step's totals in ev->stats */
    HOOK_COUNT
} HookPoint;

typedef enum { PHASE_PREFILL, PHASE_DECODE } Phase;

/* FLOPs performed, split by op (2 per multiply-add; see ops.h for elementwise). */
typedef struct {
    uint64_t qkv;          /* c_attn matmuls: 6·n·C² per layer */
    uint64_t attn;         /* q·kᵀ and p·v: 4·C·Σ(pos+1) per layer */
    uint64_t attn_proj;    /* attn.c_proj: 2·n·C² per layer */
    uint64_t mlp;          /* c_fc + mlp.c_proj: 16·n·C² per layer */
    uint64_t lm_head;      /* 2·C·V per position whose logits are computed */
    uint64_t elementwise;  /* layernorm, softmax, GELU, bias and residual adds, embeddings */
    uint64_t weight_bytes; /* bytes of weights the step read: each matrix, bias and layernorm
                            * once per call that used it, a row of wte and wpe per token;
                            * not FLOPs (flops_total leaves it out) */
} FlopCount;

uint64_t flops_layers(const FlopCount *f); /* qkv + attn + attn_proj + mlp */
uint64_t flops_total(const FlopCount *f);  /* everything */
void flops_add(FlopCount *acc, const FlopCount *f);

/* What a step did, carried by HOOK_STEP_END. */
typedef struct {
    int tokens_new;       /* rows computed this step (recompute: the whole sequence) */
    int tokens_total;     /* tokens in the cache after the step */
    size_t kv_bytes;      /* bytes of K and V held */
    size_t kv_reserved;   /* bytes of K and V allocated */
    size_t kv_bytes_per_token; /* 2 · L · row bytes (dtype.h): what one token takes */
    FlopCount flops;      /* FLOPs of this step alone */
    const int *slot_pos;  /* (tokens_total) absolute position held by each cache slot */
    int evicted_pos0;     /* positions evicted from the cache since the previous step */
    int evicted_n;        /*   (a sliding window): evicted_pos0 .. evicted_pos0+evicted_n-1 */
} StepStats;

typedef struct {
    HookPoint point;
    Phase phase;
    int step;             /* 0 for prefill, 1.. for decode steps */
    int layer;            /* -1 for model-level points */
    int pos0;             /* absolute position of the first new token */
    int slot0;            /* cache slots held before this step (= pos0 unless tokens were evicted) */
    const int *slot_pos;  /* absolute position held by each of the T_total cache slots
                           * (a sliding window or the articles' bug drop slots); NULL
                           * when unknown, then slot i holds position i */
    const float *data;    /* NULL for HOOK_STEP_END */
    int ndim;
    int shape[4];
    const StepStats *stats; /* HOOK_STEP_END only */
} HookEvent;

/* Returns 0 to go on; non-zero aborts the forward pass with that error. */
typedef int (*HookFn)(const HookEvent *ev, void *user);

#define HOOKS_MAX_SUBSCRIBERS 16

typedef struct {
    struct { HookFn fn; void *user; uint32_t mask; } sub[HOOKS_MAX_SUBSCRIBERS];
    int n;
    uint32_t active; /* union of the masks: bit p set if anyone listens to point p */
} Hooks;

#define HOOK_BIT(p) (1u << (p))
#define HOOK_ALL ((1u << HOOK_COUNT) - 1u)

void hooks_init(Hooks *h);
/* Subscribe fn to the points in mask. 0, or -1 when the table is full. */
int hooks_subscribe(Hooks *h, uint32_t mask, HookFn fn, void *user);
static inline int hooks_wants(const Hooks *h, HookPoint p) {
    return h != NULL && (h->active & HOOK_BIT(p)) != 0;
}
/* Deliver ev to every subscriber of ev->point; the first non-zero return stops and is returned. */
int hooks_emit(const Hooks *h, const HookEvent *ev);

/* "blocks.0.attn.hook_q"; writes into buf and returns it. */
const char *hook_name(HookPoint p, int layer, char *buf, size_t size);
/* Parse a hook name back; 0 on success, -1 if unknown. */
int hook_parse(const char *name, HookPoint *p, int *layer);
const char *phase_name(Phase ph);

#endif
