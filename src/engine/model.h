/* model.h — GPT-2 as Hugging Face computes it: config, weights, run state, forward.
 *
 * Dimension letters: L layers, NH heads, C channels, hs = C/NH head size,
 * N context (n_positions), V vocabulary, T tokens, n new tokens, p cached tokens.
 *
 * Per block (pre-LN):  x += c_proj(attn(ln_1(x)));  x += mlp.c_proj(gelu(c_fc(ln_2(x))))
 * then ln_f and logits = x · wteᵀ (lm_head tied to wte).
 */
#ifndef KVSCOPE_MODEL_H
#define KVSCOPE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "hooks.h"
#include "kernels.h"
#include "kvcache.h"

typedef struct {
    int L;      /* n_layer */
    int NH;     /* n_head */
    int C;      /* n_embd */
    int N;      /* n_positions: the context */
    int V;      /* vocab_size */
    float eps;  /* layer_norm_epsilon, 1e-5 */
    int bos;    /* the start token put once in front of every prompt (config.json's
                 * bos_token_id when add_bos_token is true), or -1: none */
} Config;

/* The largest model kvscope accepts, from flags or a config.json. */
enum {
    MODEL_MAX_LAYERS = 256,
    MODEL_MAX_HEADS = 256,
    MODEL_MAX_DIM = 16384,
    MODEL_MAX_CTX = 65536,
    MODEL_MAX_VOCAB = 1000000
};

/* The built-in model: GPT-2 small's widths, one layer, byte-level vocabulary, no start
 * token. */
Config config_default(void);
/* NULL if cfg is usable, else a static message naming the bad field. */
const char *config_check(const Config *cfg);

/* One tensor of the weight blob, under its Hugging Face name. */
typedef struct {
    char name[48];    /* e.g. "h.0.attn.c_attn.weight" */
    int ndim;         /* 1 or 2 */
    size_t shape[2];  /* Conv1D weights are (in, out) */
    size_t numel;
    size_t offset;    /* in floats, from the start of the blob */
} TensorSpec;

/* Number of tensors: 2 + 12·L + 2. Fills specs (if not NULL) in HF order:
 * wte, wpe, h.{l}.{ln_1.weight, ln_1.bias, attn.c_attn.weight, attn.c_attn.bias,
 * attn.c_proj.weight, attn.c_proj.bias, ln_2.weight, ln_2.bias, mlp.c_fc.weight,
 * mlp.c_fc.bias, mlp.c_proj.weight, mlp.c_proj.bias}, ln_f.weight, ln_f.bias. */
int model_tensor_specs(const Config *cfg, TensorSpec *specs);
size_t model_num_params(const Config *cfg);
/* The weight bytes a forward pass over `tokens` new tokens reads, by the closed form:
 * every block matrix and wte (the lm_head) once, at 4 bytes a value (2 when dt is a half
 * type), every bias and layernorm once, and each new token's rows of wte and wpe, at 4
 * bytes: M·w + 4·(L·13C + 2C + 2C·tokens) with M = L·12C² + V·C. (wpe's other rows are
 * not read: that is why a decode step reads fewer bytes than the parameters hold.) */
/* Bytes of one weight of the block matrices and the lm_head as the matmuls read them:
 * 4 (float32) or 2 (fp16, bf16). */
#define MODEL_WEIGHT_SIZE(m) ((uint64_t)((m)->w.dtype == DT_FP32 ? sizeof(float) : sizeof(uint16_t)))
uint64_t model_weight_bytes_read(const Config *cfg, Dtype dt, uint64_t tokens);

typedef struct {
    const float *ln_1_w, *ln_1_b;         /* (C) */
    const float *c_attn_w, *c_attn_b;     /* (C, 3C), (3C): q, k, v side by side */
    const float *attn_proj_w, *attn_proj_b; /* (C, C), (C) */
    const float *ln_2_w, *ln_2_b;         /* (C) */
    const float *c_fc_w, *c_fc_b;         /* (C, 4C), (4C) */
    const float *mlp_proj_w, *mlp_proj_b; /* (4C, C), (C) */
} BlockWeights;

typedef struct {
    float *blob;          /* every parameter, one allocation (or a loader's buffer) */
    size_t num_params;
    Dtype dtype;          /* DT_FP32, or the half type the matrices were rounded to */
    const float *wte;     /* (V, C), also the lm_head */
    const float *wpe;     /* (N, C) */
    BlockWeights *h;      /* (L) */
    const float *ln_f_w, *ln_f_b; /* (C) */
} Weights;

/* Activations for up to `rows` new tokens attending over up to `cols` tokens. Grows on
 * demand; every buffer lies in block, one allocation. */
typedef struct {
    int rows, cols;
    float *block;
    float *x;       /* (rows, C) the residual stream */
    float *ln;      /* (rows, C) layernorm output */
    float *qkv;     /* (rows, 3C) c_attn output, q, k, v of a row side by side (the plain
                     * path, model_forward_rows); fast: K then V of a forward call whose
                     * cache converts them (not fp32) */
    float *q;       /* (rows, C) = (rows, NH, hs) */
    float *atty;    /* (rows, C) attention output, heads side by side */
    float *proj;    /* (rows, C) c_proj / mlp c_proj output */
    float *fc;      /* (rows, 4C) c_fc output after GELU (before it, then GELU in place,
                     * while an observer wants hook_mlp_pre) */
    float *scores;  /* (NH, rows, cols) pre-softmax */
    float *pattern; /* (NH, rows, cols) post-softmax */
} RunState;

typedef struct {
    Config cfg;
    Weights w;
    RunState s;
    int owns_blob;  /* 1 if w.blob is ours to free */
    KernLevel kern; /* which kernels run (kernels.h); kern_detect() by default; set it
                     * with model_set_kernels */
    const KernOps *ops; /* kern's layernorm, residual add and GELU: ops.c's at KERN_PLAIN */
    KernPanels fast; /* the matrices as the vector kernels read them (kernels.h); empty
                      * with the plain kernels */
    int owns_fast;  /* 1 if fast is ours to free */
    /* NULL, or (cfg.L) masks of ablated heads (not owned): bit h of head_off[l] set,
     * model_forward replaces head h's output z in layer l (hook_z sees the replacement)
     * before attn.c_proj by head_fill's (L, C) row l, channels h·hs .. h·hs+hs−1 (its mean
     * over some text: mean ablation), or by zeros when head_fill is NULL (zero ablation):
     * as if the head no longer read its input. model_forward_rows ignores them. */
    const uint64_t *head_off;
    const float *head_fill;
} Model;

/* Built-in weights from `seed` (see model.c for the PRNG and the scales).
 * 0, or -1 when out of memory. */
int model_init_random(Model *m, const Config *cfg, uint64_t seed);
/* Room for cfg's weights laid out by model_tensor_specs (model_num_params floats), not
 * zeroed, on 2 MiB pages where Linux offers them (bigbuf.h: the embedding reads rows of
 * wte far apart); to be released with free(). NULL when out of memory. */
float *model_blob_alloc(const Config *cfg);
/* Point the weights into an existing blob laid out by model_tensor_specs.
 * The model does not own it unless take_ownership is set. When this CPU has a
 * vector level (kern_detect), the block matrices are also copied into column panels
 * for the fast matmuls, and wteᵀ for the lm_head: (12·L·C + V)·C more floats (494 MB
 * for GPT-2 small, whose blob is 497 MB), read from the blob now, so the blob must
 * hold its final values. Without memory for them, the panels stay empty and the model
 * runs the plain matmuls: the same results, slower. 0, or -1 (out of memory). */
int model_init_from_blob(Model *m, const Config *cfg, float *blob, int take_ownership);
/* Copy the blob into the panels again after the blob changed in place (training
 * updates it every step), so that the fast kernels see the new weights. Nothing to do
 * when the model runs the plain kernels (no panels), nor for half-size weights
 * (model_set_weights): their panels are not packed again, and training runs in float32. */
void model_refresh_panels(Model *m);
/* A second model on src's weights and panels (not copied, not owned: src must
 * outlive it), with its own activations. 0, or -1. */
int model_init_shared(Model *m, const Model *src);
/* Half-size weights: the five matrices (c_attn, attn.c_proj, c_fc, mlp.c_proj of every
 * block, and wte, which is also the lm_head and the token embedding) are rounded in
 * the blob, in place, to dt (DT_FP16 or DT_BF16: nearest, ties to even) and their
 * float32 panels are replaced by panels of halves, which the vector matmuls read: a
 * decode step reads half the bytes. Biases, layernorms and wpe stay float32. Every
 * product is still computed in float32, so the logits are those of the float32 model
 * whose weights were rounded. Call before model_init_shared; from DT_FP32 only.
 * 0; -1 out of memory (the model is unchanged) or a second call. */
int model_set_weights(Model *m, Dtype dt);
/* Run the kernels of level lv: KERN_PLAIN, ops.c's loops on the weights as loaded (the
 * panels are released), or a vector level (kernels.h), which packs the panels if the
 * model has none. The logits are the same bytes at every level. 0; -1 when this CPU
 * lacks lv (kern_supported) or out of memory (the model keeps its level). */
int model_set_kernels(Model *m, KernLevel lv);
/* Before model_set_weights: the first finite weight of the five matrices that dt would
 * round to an infinity (|x| past fp16's 65504): 1 with its tensor's Hugging Face name
 * (name, size bytes), flat index and value; 0 when every weight fits dt. */
int model_half_overflow(const Model *m, Dtype dt, char *name, size_t size, size_t *index,
                        float *value);
void model_free(Model *m);

/* What a forward call is, for the hooks. */
typedef struct {
    Phase phase;
    int step;
    Hooks *hooks;      /* may be NULL: then no event is built */
    int evicted_pos0, evicted_n; /* positions the caller evicted from the cache since its
                        * last step (first, count), for HOOK_STEP_END; 0: none */
} StepLabel;

/* Run n new tokens at positions cache->n_seen .. n_seen+n-1, in cache slots
 * cache->len .. len+n-1: append their K and V to the cache and attend over every
 * cached token. Writes the logits of the last new token to logits (V) when logits is
 * not NULL. Adds this call's FLOPs to *flops when not NULL. Returns 0; -1 out of
 * memory or past the context; KVCACHE_OVER_BUDGET when the cache would pass its cap
 * (kvcache_set_max_bytes; nothing was run); a hook's non-zero return is passed on. */
int model_forward(Model *m, KVCache *cache, const int *tokens, int n, float *logits,
                  const StepLabel *label, FlopCount *flops);

/* Where the rows of model_forward_rows keep their K and V (batch.h, paged.h). In each
 * layer, store(user, r, l, k, v) is called for every row r, in order 0..R-1, with the
 * row's new key and value (C each); then attend(user, worker, r, l, q, out) for every
 * row, in any order and — built with OpenMP — on several threads at once (worker:
 * 0 .. workers - 1, which scratch to use): row r attends over its own sequence's
 * slots up to its own, all stored by then, and writes out (C). attend returns the
 * number of slots it attended (for the FLOP count); either returns < 0 on error. */
typedef struct {
    int (*store)(void *user, int row, int layer, const float *k, const float *v);
    int (*attend)(void *user, int worker, int row, int layer, const float *q, float *out);
    void *user;
    int workers; /* workers the cache has scratch for (≥ 1): at most this many attend at once */
} RowCache;

/* Rows of many sequences in one pass (batched decode, see batch.h and paged.h).
 * Row r is token tokens[r] at absolute position pos[r] of its own sequence. The
 * projections, the MLP and the lm_head run on all R rows as one (R×C)·W matmul each,
 * so a step reads every weight once whatever R is (FlopCount.weight_bytes counts it);
 * attention goes through cache, row by row. A row's result is bit-identical to
 * running its sequence alone with model_forward. logits[r] (V) is written when
 * logits and logits[r] are not NULL; rows whose logits follow one another in one
 * (R, V) array share one lm_head matmul. No hooks fire. Returns 0, or -1 (bad token
 * or position, out of memory, the cache's error). */
int model_forward_rows(Model *m, const int *tokens, const int *pos, int R,
                       const RowCache *cache, float *const *logits, FlopCount *flops);

/* Closed forms, for tests and charts: FLOPs of the L blocks' matmuls and attention
 * for n new tokens after p cached ones: L·(24·n·C² + 4·C·(n·p + n(n+1)/2)). */
uint64_t flops_layers_formula(const Config *cfg, uint64_t n, uint64_t p);

#endif
