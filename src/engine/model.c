/* model.c — built-in weights and the forward pass with its KV cache. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigbuf.h"
#include "kernels.h"
#include "ops.h"
#include "parallel.h"
#include "rng.h"

Config config_default(void) {
    Config c = {.L = 1, .NH = 12, .C = 768, .N = 1024, .V = 256, .eps = 1e-5f, .bos = -1};
    return c;
}

const char *config_check(const Config *cfg) {
    if (cfg->L < 1 || cfg->L > MODEL_MAX_LAYERS) return "layers must be 1..256";
    if (cfg->NH < 1 || cfg->NH > MODEL_MAX_HEADS) return "heads must be 1..256";
    if (cfg->C < 1 || cfg->C > MODEL_MAX_DIM) return "dim must be 1..16384";
    if (cfg->C % cfg->NH != 0) return "dim must be divisible by heads";
    if (cfg->N < 1 || cfg->N > MODEL_MAX_CTX) return "ctx must be 1..65536";
    if (cfg->V < 1 || cfg->V > MODEL_MAX_VOCAB) return "vocab must be 1..1000000";
    if (!(cfg->eps > 0.0f)) return "layer_norm_epsilon must be > 0";
    if (cfg->bos < -1 || cfg->bos >= cfg->V) return "the start token must be in the vocabulary";
    return NULL;
}

/* ---- the tensor table -------------------------------------------------- */

static void spec(TensorSpec *s, int *i, size_t *off, const char *name, size_t r, size_t c) {
    if (s) {
        TensorSpec *t = &s[*i];
        snprintf(t->name, sizeof t->name, "%s", name);
        t->ndim = c ? 2 : 1;
        t->shape[0] = r;
        t->shape[1] = c;
        t->numel = c ? r * c : r;
        t->offset = *off;
    }
    *off += c ? r * c : r;
    (*i)++;
}

static const char *const block_names[12] = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
    "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
    "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias",
};

int model_tensor_specs(const Config *cfg, TensorSpec *specs) {
    size_t C = (size_t)cfg->C, off = 0;
    int i = 0;
    char name[48];
    spec(specs, &i, &off, "wte.weight", (size_t)cfg->V, C);
    spec(specs, &i, &off, "wpe.weight", (size_t)cfg->N, C);
    for (int l = 0; l < cfg->L; l++) {
        const size_t rows[12] = {C, C, C, 3 * C, C, C, C, C, C, 4 * C, 4 * C, C};
        const size_t cols[12] = {0, 0, 3 * C, 0, C, 0, 0, 0, 4 * C, 0, C, 0};
        for (int j = 0; j < 12; j++) {
            snprintf(name, sizeof name, "h.%d.%s", l, block_names[j]);
            spec(specs, &i, &off, name, rows[j], cols[j]);
        }
    }
    spec(specs, &i, &off, "ln_f.weight", C, 0);
    spec(specs, &i, &off, "ln_f.bias", C, 0);
    return i;
}

size_t model_num_params(const Config *cfg) {
    size_t C = (size_t)cfg->C;
    return (size_t)cfg->V * C + (size_t)cfg->N * C + 2 * C +
           (size_t)cfg->L * (12 * C * C + 13 * C);
}

uint64_t model_weight_bytes_read(const Config *cfg, Dtype dt, uint64_t tokens) {
    const uint64_t C = (uint64_t)cfg->C, L = (uint64_t)cfg->L, V = (uint64_t)cfg->V;
    const uint64_t matrices = L * 12 * C * C + V * C, vectors = L * 13 * C + 2 * C;
    return dtype_row_bytes(dt, matrices, 1) + 4 * (vectors + 2 * C * tokens);
}

/* ---- built-in weights ---------------------------------------------------
 * PRNG: splitmix64 (rng.h). Tensor i of the table draws from its own stream,
 * rng_stream(seed, i) = seed ^ (0xD1B54A32D192ED03 · (i+1)), so adding a layer
 * does not change the others. A normal draw is the Irwin-Hall sum of 12 uniforms
 * minus 6 (mean 0, variance 1), in double: no libm call, so the weights are the
 * same bytes on every IEEE-754 machine.
 * Scales (std): wte 0.1, wpe 0.05, c_attn 0.05 (scores of a few units, so the
 * attention patterns have contrast), c_fc 0.02, both c_proj 0.02/√(2L) as in
 * GPT-2, layernorm weights 1 ± 0.05, biases 0.02 or 0.01. */

static void scale_for(const char *name, int L, double *mean, double *std) {
    const char *leaf = strrchr(name, '.'); /* ".weight" or ".bias" */
    int is_bias = leaf && strcmp(leaf, ".bias") == 0;
    double proj = 0.02 / sqrt(2.0 * L);
    *mean = 0.0;
    if (strcmp(name, "wte.weight") == 0) *std = 0.1;
    else if (strcmp(name, "wpe.weight") == 0) *std = 0.05;
    else if (strstr(name, "ln_")) {
        *mean = is_bias ? 0.0 : 1.0;
        *std = is_bias ? 0.02 : 0.05;
    } else if (strstr(name, "c_attn")) *std = is_bias ? 0.02 : 0.05;
    else if (strstr(name, "c_proj")) *std = is_bias ? 0.01 : proj;
    else *std = is_bias ? 0.01 : 0.02; /* c_fc */
}

static void point_weights(Model *m) {
    const Config *cfg = &m->cfg;
    size_t C = (size_t)cfg->C;
    float *p = m->w.blob;
    m->w.wte = p;
    p += (size_t)cfg->V * C;
    m->w.wpe = p;
    p += (size_t)cfg->N * C;
    for (int l = 0; l < cfg->L; l++) {
        BlockWeights *b = &m->w.h[l];
        b->ln_1_w = p; p += C;
        b->ln_1_b = p; p += C;
        b->c_attn_w = p; p += C * 3 * C;
        b->c_attn_b = p; p += 3 * C;
        b->attn_proj_w = p; p += C * C;
        b->attn_proj_b = p; p += C;
        b->ln_2_w = p; p += C;
        b->ln_2_b = p; p += C;
        b->c_fc_w = p; p += C * 4 * C;
        b->c_fc_b = p; p += 4 * C;
        b->mlp_proj_w = p; p += 4 * C * C;
        b->mlp_proj_b = p; p += C;
    }
    m->w.ln_f_w = p; p += C;
    m->w.ln_f_b = p;
}

/* The four matrices of every block, in the order kern_panels_pack takes them. */
static const float **block_matrices(const Model *m) {
    const float **mats = malloc((size_t)m->cfg.L * KERN_MATS * sizeof *mats);
    for (int l = 0; mats && l < m->cfg.L; l++) {
        const BlockWeights *b = &m->w.h[l];
        mats[KERN_MATS * l + KERN_C_ATTN] = b->c_attn_w;
        mats[KERN_MATS * l + KERN_ATTN_PROJ] = b->attn_proj_w;
        mats[KERN_MATS * l + KERN_C_FC] = b->c_fc_w;
        mats[KERN_MATS * l + KERN_MLP_PROJ] = b->mlp_proj_w;
    }
    return mats;
}

/* The matrices in column panels of the weights' type for the vector kernels, owned by
 * the model: (12·L·C + V)·C more values. 0, or -1 out of memory. */
static int pack_panels(Model *m) {
    const float **mats = block_matrices(m);
    const int rc = mats ? kern_panels_pack(&m->fast, m->cfg.L, m->cfg.C, m->cfg.V, m->w.wte,
                                           mats, m->w.dtype)
                        : -1;
    free(mats);
    m->owns_fast = rc == 0;
    return rc;
}

void model_refresh_panels(Model *m) {
    const float **mats = block_matrices(m);
    if (mats) kern_panels_repack(&m->fast, m->cfg.L, m->cfg.C, m->cfg.V, m->w.wte, mats);
    free(mats);
}

static void round_in_place(float *w, size_t n, Dtype dt) {
    for (size_t i = 0; i < n; i++) w[i] = kern_round_weight(w[i], dt);
}

/* The first finite weight of w (n) that rounds to an infinity: its index, or n. */
static size_t first_overflow(const float *w, size_t n, Dtype dt) {
    for (size_t i = 0; i < n; i++)
        if (isfinite(w[i]) && !isfinite(kern_round_weight(w[i], dt))) return i;
    return n;
}

int model_half_overflow(const Model *m, Dtype dt, char *name, size_t size, size_t *index,
                        float *value) {
    const size_t C = (size_t)m->cfg.C;
    static const char *const names[4] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"};
    for (int l = -1; l < m->cfg.L; l++) {
        const BlockWeights *b = l >= 0 ? &m->w.h[l] : NULL;
        const float *w[4] = {b ? b->c_attn_w : m->w.wte, b ? b->attn_proj_w : NULL,
                             b ? b->c_fc_w : NULL, b ? b->mlp_proj_w : NULL};
        const size_t n[4] = {b ? 3 * C * C : (size_t)m->cfg.V * C, C * C, 4 * C * C, 4 * C * C};
        for (int k = 0; k < 4 && w[k]; k++) {
            const size_t i = first_overflow(w[k], n[k], dt);
            if (i == n[k]) continue;
            if (b) snprintf(name, size, "h.%d.%s.weight", l, names[k]);
            else snprintf(name, size, "wte.weight");
            *index = i, *value = w[k][i];
            return 1;
        }
    }
    return 0;
}

/* Forget the panels, freeing them when they are the model's. */
static void drop_panels(Model *m) {
    if (m->owns_fast) kern_panels_free(&m->fast);
    memset(&m->fast, 0, sizeof m->fast);
    m->owns_fast = 0;
}

int model_set_kernels(Model *m, KernLevel lv) {
    if ((unsigned)lv >= KERN_LEVEL_COUNT || !kern_supported(lv)) return -1;
    if (lv == KERN_PLAIN) drop_panels(m); /* the plain kernels read the weights as loaded */
    else if (!m->fast.buf && pack_panels(m))
        return -1;
    m->kern = lv;
    m->ops = kern_ops(lv);
    return 0;
}

int model_set_weights(Model *m, Dtype dt) {
    if (dt == m->w.dtype) return 0;
    if (m->w.dtype != DT_FP32 || dt == DT_FP32) return -1;
    const size_t C = (size_t)m->cfg.C;
    /* the blob's pointers are const for the forward pass; the model may change them */
    round_in_place((float *)m->w.wte, (size_t)m->cfg.V * C, dt);
    for (int l = 0; l < m->cfg.L; l++) {
        BlockWeights *b = &m->w.h[l];
        round_in_place((float *)b->c_attn_w, 3 * C * C, dt);
        round_in_place((float *)b->attn_proj_w, C * C, dt);
        round_in_place((float *)b->c_fc_w, 4 * C * C, dt);
        round_in_place((float *)b->mlp_proj_w, 4 * C * C, dt);
    }
    m->w.dtype = dt;
    drop_panels(m);
    /* without room for the half panels the model still runs, on the plain matmuls over
     * the rounded weights: the same results */
    if (m->kern != KERN_PLAIN) (void)pack_panels(m);
    return 0;
}

int model_init_from_blob(Model *m, const Config *cfg, float *blob, int take_ownership) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->w.blob = blob;
    m->w.num_params = model_num_params(cfg);
    m->kern = kern_detect();
    m->ops = kern_ops(m->kern);
    m->w.h = calloc((size_t)cfg->L, sizeof *m->w.h);
    if (!m->w.h) {
        m->w.blob = NULL; /* the caller keeps its blob on failure */
        return -1;
    }
    point_weights(m);
    /* without room for the panels the model still runs, on the plain matmuls */
    if (m->kern != KERN_PLAIN) (void)pack_panels(m);
    m->owns_blob = take_ownership;
    return 0;
}

int model_init_shared(Model *m, const Model *src) {
    memset(m, 0, sizeof *m);
    m->cfg = src->cfg;
    m->w = src->w;
    m->kern = src->kern;
    m->ops = src->ops;
    m->fast = src->fast; /* not owned */
    m->w.h = malloc((size_t)src->cfg.L * sizeof *m->w.h);
    if (!m->w.h) {
        memset(m, 0, sizeof *m);
        return -1;
    }
    memcpy(m->w.h, src->w.h, (size_t)src->cfg.L * sizeof *m->w.h);
    return 0;
}

float *model_blob_alloc(const Config *cfg) {
    return bigbuf_alloc(model_num_params(cfg), sizeof(float));
}

int model_init_random(Model *m, const Config *cfg, uint64_t seed) {
    float *blob = model_blob_alloc(cfg);
    if (!blob) return -1;
    int ns = model_tensor_specs(cfg, NULL);
    TensorSpec *specs = malloc((size_t)ns * sizeof *specs);
    if (!specs) {
        free(blob);
        return -1;
    }
    model_tensor_specs(cfg, specs);
    for (int i = 0; i < ns; i++) {
        uint64_t s = rng_stream(seed, (uint64_t)i);
        double mean, std;
        scale_for(specs[i].name, cfg->L, &mean, &std);
        float *t = blob + specs[i].offset;
        for (size_t j = 0; j < specs[i].numel; j++) t[j] = (float)(mean + std * rng_normal(&s));
    }
    free(specs);
    if (model_init_from_blob(m, cfg, blob, 1) != 0) {
        free(blob);
        return -1;
    }
    return 0;
}

static void runstate_free(RunState *s) {
    free(s->block);
    memset(s, 0, sizeof *s);
}

void model_free(Model *m) {
    if (m->owns_blob) free(m->w.blob);
    if (m->owns_fast) kern_panels_free(&m->fast);
    free(m->w.h);
    runstate_free(&m->s);
    memset(m, 0, sizeof *m);
}

/* Floats from one buffer of the run state to the next: n, rounded up to whole 64-byte
 * lines. */
static size_t lines_of(size_t n) { return (n + 15) / 16 * 16; }

/* Room for n rows attending over T columns; capacities double so decode steps
 * do not reallocate every time. Every buffer lies in one block (bigbuf: on 2 MiB
 * pages once it is large), because a prefill's matmuls store rows C floats apart,
 * where 4 KiB pages cost a TLB miss every row or two. A new block keeps nothing of the
 * old one: every forward call writes its buffers before it reads them. */
static int runstate_reserve(RunState *s, const Config *cfg, int n, int T) {
    if (n <= s->rows && T <= s->cols) return 0;
    int r = s->rows ? s->rows : 1, c = s->cols ? s->cols : 16;
    while (r < n) r *= 2;
    while (c < T) c *= 2;
    const size_t C = (size_t)cfg->C, rc = lines_of((size_t)r * C),
                 att = lines_of((size_t)cfg->NH * (size_t)r * (size_t)c);
    /* x, ln, q, atty, proj: rc each; qkv 3, fc 4 rows' worth; scores, pattern */
    const size_t sizes[] = {rc, rc, lines_of(3 * (size_t)r * C), rc, rc, rc,
                            lines_of(4 * (size_t)r * C), att, att};
    float **bufs[] = {&s->x, &s->ln, &s->qkv, &s->q, &s->atty, &s->proj, &s->fc,
                      &s->scores, &s->pattern};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) total += sizes[i];
    float *b = bigbuf_alloc(total, sizeof(float));
    if (!b) return -1;
    free(s->block);
    s->block = b;
    for (size_t i = 0, off = 0; i < sizeof sizes / sizeof *sizes; off += sizes[i++])
        *bufs[i] = b + off;
    s->rows = r;
    s->cols = c;
    return 0;
}

uint64_t flops_layers_formula(const Config *cfg, uint64_t n, uint64_t p) {
    uint64_t C = (uint64_t)cfg->C;
    return (uint64_t)cfg->L * (24 * n * C * C + 4 * C * (n * p + n * (n + 1) / 2));
}

/* Where a forward call is, for the events of its hook points. */
typedef struct {
    Model *m;
    const StepLabel *lb;
    int pos0;            /* absolute position of the first new token */
    int slot0;           /* cache slots held before the call */
    const int *slot_pos; /* the position each cache slot holds; NULL without a cache */
} ForwardCall;

/* Hook point pt of layer l (-1: the model's) with its tensor, when anyone listens.
 * 0, or the observer's non-zero answer, which ends the forward call. */
static int fire(const ForwardCall *call, HookPoint pt, int layer, const float *data, int ndim, int d0,
                int d1, int d2) {
    const Hooks *hk = call->lb->hooks;
    if (!hooks_wants(hk, pt)) return 0;
    HookEvent ev = {.point = pt, .phase = call->lb->phase, .step = call->lb->step, .layer = layer,
                    .pos0 = call->pos0, .slot0 = call->slot0, .slot_pos = call->slot_pos, .data = data,
                    .ndim = ndim, .shape = {d0, d1, d2, 0}};
    return hooks_emit(hk, &ev);
}

/* ---- which kernels: ops.c's plain loops, or their fast twins --------------------------
 * With KERN_PLAIN the forward pass calls ops.c's functions and nothing between (the
 * elementwise ones through m->ops, kernels.h: KernOps); the other levels call the kernel
 * layer, whose results are the same bytes. */

/* in (n,C) · w (C,OC) + bias into out, w being matrix k of block l. Plain: matmul_forward
 * into out.p[0], which must be one part stored as is (KERN_SET); fast: on the matrix's
 * panels (m->fast), each output stored as out says (kernels.h: KernOut). 0, or -1 out of
 * memory. */
static int block_matmul_into(const Model *m, KernOut out, const float *in, const float *w,
                             int l, KernMatrix k, const float *bias, int n, int C, int OC) {
    if (m->kern == KERN_PLAIN) {
        matmul_forward(out.p[0], in, w, bias, n, C, OC);
        return 0;
    }
    const void *pan = m->fast.h ? m->fast.h[l][k] : NULL;
    return kern_matmul_into(m->kern, out, in, w, pan, m->w.dtype, bias, n, C, OC);
}

/* out (n,OC) = in (n,C) · w + bias, or out += that (how: KERN_SET; KERN_ADD, KERN_GELU
 * fast only). */
static int block_matmul(const Model *m, float *out, KernStore how, const float *in,
                        const float *w, int l, KernMatrix k, const float *bias, int n, int C,
                        int OC) {
    const KernOut o = {{out}, OC, (size_t)OC, how};
    return block_matmul_into(m, o, in, w, l, k, bias, n, C, OC);
}

/* ---- the parts of a block that do not know the cache ----------------------
 * Shared by model_forward (the rows of one sequence) and model_forward_rows (rows
 * of many sequences): each row goes through the same kernels in the same order,
 * so its result does not depend on which other rows share the call. (block_qkv writes
 * where its caller says: model_forward points K and V at the cache's slots.) */

/* ln_1 → c_attn over rows 0..n-1 of s->x, into qkv: parts q, k and v of C each. */
static int block_qkv(const ForwardCall *call, int l, int n, KernOut qkv, FlopCount *f) {
    Model *m = call->m;
    const BlockWeights *b = &m->w.h[l];
    const int C = m->cfg.C;
    RunState *s = &m->s;
    int rc;
    m->ops->layernorm(s->ln, s->x, b->ln_1_w, b->ln_1_b, n, C, m->cfg.eps);
    if ((rc = fire(call, HOOK_LN1, l, s->ln, 2, n, C, 0))) return rc;
    if (block_matmul_into(m, qkv, s->ln, b->c_attn_w, l, KERN_C_ATTN, b->c_attn_b, n,
                          C, 3 * C))
        return -1;
    f->qkv += 6ull * n * C * C;
    /* what the matmul read: c_attn's 3C² weights (float32 or halves), its bias and ln_1's */
    f->weight_bytes += 3ull * C * C * MODEL_WEIGHT_SIZE(m) + (3 + 2) * sizeof(float) * (uint64_t)C;
    f->elementwise += (KV_FLOPS_LAYERNORM + KV_FLOPS_ADD * 3) * (uint64_t)n * C; /* ln_1, bias */
    return 0;
}

/* attn.c_proj → residual → ln_2 → c_fc → GELU → mlp.c_proj → residual over n rows,
 * from the attention output in s->atty (n, C). */
static int block_rest(const ForwardCall *call, int l, int n, FlopCount *f) {
    Model *m = call->m;
    const BlockWeights *b = &m->w.h[l];
    const int C = m->cfg.C;
    const size_t nC = (size_t)n * C;
    RunState *s = &m->s;
    int rc;
    /* fast, with nobody to see attn.c_proj's output: the residual add as it stores (add) */
    const int add = m->kern != KERN_PLAIN && !hooks_wants(call->lb->hooks, HOOK_ATTN_OUT);
    if (block_matmul(m, add ? s->x : s->proj, add ? KERN_ADD : KERN_SET, s->atty,
                     b->attn_proj_w, l, KERN_ATTN_PROJ, b->attn_proj_b, n, C, C))
        return -1;
    if (!add && (rc = fire(call, HOOK_ATTN_OUT, l, s->proj, 2, n, C, 0))) return rc;
    if (!add) m->ops->residual(s->x, s->x, s->proj, nC);
    f->attn_proj += 2ull * n * C * C;
    f->elementwise += KV_FLOPS_ADD * 2 * nC; /* c_proj bias, residual */
    if ((rc = fire(call, HOOK_RESID_MID, l, s->x, 2, n, C, 0))) return rc;

    /* MLP: ln_2 → c_fc → GELU → mlp.c_proj → residual */
    m->ops->layernorm(s->ln, s->x, b->ln_2_w, b->ln_2_b, n, C, m->cfg.eps);
    if ((rc = fire(call, HOOK_LN2, l, s->ln, 2, n, C, 0))) return rc;
    /* fast: GELU as c_fc stores its outputs, unless an observer wants them before it */
    const int pre = m->kern == KERN_PLAIN || hooks_wants(call->lb->hooks, HOOK_MLP_PRE);
    if (block_matmul(m, s->fc, pre ? KERN_SET : KERN_GELU, s->ln, b->c_fc_w, l, KERN_C_FC,
                     b->c_fc_b, n, C, 4 * C))
        return -1;
    if (pre && (rc = fire(call, HOOK_MLP_PRE, l, s->fc, 2, n, 4 * C, 0))) return rc;
    if (pre) m->ops->gelu(s->fc, s->fc, 4 * nC);
    if ((rc = fire(call, HOOK_MLP_POST, l, s->fc, 2, n, 4 * C, 0))) return rc;
    if (block_matmul(m, s->proj, KERN_SET, s->fc, b->mlp_proj_w, l, KERN_MLP_PROJ,
                     b->mlp_proj_b, n, 4 * C, C))
        return -1;
    if ((rc = fire(call, HOOK_MLP_OUT, l, s->proj, 2, n, C, 0))) return rc;
    /* a separate add: mlp.c_proj's sums run over more than one block of panel rows, where
     * KERN_ADD would go through a buffer (kernels.c) */
    m->ops->residual(s->x, s->x, s->proj, nC);
    f->mlp += 16ull * n * C * C;
    /* attn.c_proj, c_fc and mlp.c_proj (9C² weights), their biases (6C) and ln_2 (2C) */
    f->weight_bytes += 9ull * C * C * MODEL_WEIGHT_SIZE(m) + (6 + 2) * sizeof(float) * (uint64_t)C;
    /* ln_2, c_fc bias (4nC), GELU (4nC), mlp.c_proj bias and residual (nC each) */
    f->elementwise += (KV_FLOPS_LAYERNORM + KV_FLOPS_ADD * 6 + KV_FLOPS_GELU * 4) * nC;
    return fire(call, HOOK_RESID_POST, l, s->x, 2, n, C, 0);
}

/* ln_f and the tied lm_head for n consecutive rows x (n, C), into logits (n, V): one
 * (n×C)·wteᵀ matmul, so the 154 MB of GPT-2's wte are read once for all n rows. */
static void final_logits(Model *m, const float *x, int n, float *logits, FlopCount *f) {
    const Config *cfg = &m->cfg;
    layernorm_forward(m->s.ln, x, m->w.ln_f_w, m->w.ln_f_b, n, cfg->C, cfg->eps);
    if (m->kern == KERN_PLAIN)
        matmul_transposed_forward(logits, m->s.ln, m->w.wte, n, cfg->C, cfg->V);
    else if (m->w.dtype == DT_FP32)
        kern_matmul_transposed_forward(m->kern, logits, m->s.ln, m->w.wte, m->fast.wte, n,
                                       cfg->C, cfg->V);
    else kern_matmul_transposed_half_forward(m->kern, logits, m->s.ln, m->w.wte, m->fast.wte,
                                             m->w.dtype, n, cfg->C, cfg->V);
    f->elementwise += KV_FLOPS_LAYERNORM * (uint64_t)n * cfg->C;
    f->lm_head += 2ull * n * cfg->C * cfg->V;
    f->weight_bytes += (uint64_t)cfg->V * cfg->C * MODEL_WEIGHT_SIZE(m) +
                       2 * sizeof(float) * (uint64_t)cfg->C; /* wte once for the n rows, ln_f */
}

/* Fast: ln_1 and c_attn, which writes q into s->q and the new K and V into the cache's
 * slots p..p+n-1 (an fp32 cache lends them; other types convert them from s->qkv). */
static int qkv_fast(const ForwardCall *call, KVCache *cache, int l, int n, FlopCount *f) {
    RunState *s = &call->m->s;
    const int C = call->m->cfg.C, p = call->slot0;
    float *kw, *vw;
    const int in_place = kvcache_rows(cache, l, p, n, call->pos0, &kw, &vw) == 0;
    const KernOut qkv = {{s->q, in_place ? kw : s->qkv, in_place ? vw : s->qkv + (size_t)n * C},
                         C, (size_t)C, KERN_SET};
    const int rc = block_qkv(call, l, n, qkv, f);
    for (int i = 0; rc == 0 && !in_place && i < n; i++) /* the cache stores them in its type */
        kvcache_store(cache, l, p + i, qkv.p[1] + (size_t)i * C, qkv.p[2] + (size_t)i * C,
                      call->pos0 + i);
    return rc;
}

/* s.atty (n, NH·hs), the heads' outputs z, once layer l's ablated heads (Model.head_off)
 * are replaced in each of the n rows by their part of head_fill's row l, or zeroed without
 * head_fill: what attn.c_proj then mixes no longer depends on those heads' inputs. */
static float *ablated_z(Model *m, int l, int n) {
    const int NH = m->cfg.NH, hs = m->cfg.C / NH;
    const uint64_t off = m->head_off ? m->head_off[l] : 0;
    const float *fill = m->head_fill ? m->head_fill + (size_t)l * m->cfg.C : NULL;
    float *atty = m->s.atty;
    for (int h = 0; h < NH && h < 64; h++)
        if (off >> h & 1u)
            for (int i = 0; i < n; i++) {
                float *z = atty + ((size_t)i * NH + h) * hs;
                if (fill) memcpy(z, fill + (size_t)h * hs, (size_t)hs * sizeof *z);
                else memset(z, 0, (size_t)hs * sizeof *z);
            }
    return atty;
}

/* Attention when a policy evicts per head (evict.h, cache->keep): the plain loop with
 * each head's mask over the slots, writing the scores and weights as the others do. */
static void attention_evicting(Model *m, const KVCache *cache, int l, const float *kc,
                               const float *vc, int n, int p) {
    RunState *s = &m->s;
    const int NH = m->cfg.NH, hs = m->cfg.C / NH;
    attention_masked_forward(s->atty, s->scores, s->pattern, s->q, kc, vc,
                             cache->keep + (size_t)l * NH * cache->keep_stride, cache->keep_stride,
                             n, p, NH, hs);
}

/* ---- where the KV cache lives ------------------------------------------------
 * Layer l of n new tokens after p cached ones: c_attn writes the new K and V into slots
 * p..p+n-1 (an fp32 cache takes them in place; other types convert them from s->qkv),
 * then the n queries attend over all p + n slots. */
static int attention_layer(const ForwardCall *call, KVCache *cache, int l, int n, FlopCount *f) {
    Model *m = call->m;
    RunState *s = &m->s;
    const int C = m->cfg.C, NH = m->cfg.NH, hs = C / NH, p = call->slot0, T = p + n;
    const uint64_t pairs = (uint64_t)n * p + (uint64_t)n * (n + 1) / 2; /* Σ (slots seen) */
    const float *kc, *vc; /* this layer's cached keys and values, (T, C) */
    int rc;
    if (m->kern == KERN_PLAIN) { /* c_attn into rows of q, k, v; K and V into the cache */
        const KernOut qkv = {{s->qkv}, 3 * C, 3 * (size_t)C, KERN_SET};
        if ((rc = block_qkv(call, l, n, qkv, f))) return rc;
        for (int i = 0; i < n; i++) {
            const float *row = s->qkv + (size_t)i * 3 * C;
            memcpy(s->q + (size_t)i * C, row, (size_t)C * sizeof(float));
            kvcache_store(cache, l, p + i, row + C, row + 2 * C, call->pos0 + i);
        }
    } else if ((rc = qkv_fast(call, cache, l, n, f))) return rc;
    /* read them back as floats: fp32 in place, other types dequantized, so the new
     * tokens attend to their own K and V exactly as stored */
    kvcache_layer(cache, l, T, &kc, &vc);
    if ((rc = fire(call, HOOK_Q, l, s->q, 3, n, NH, hs)) ||
        (rc = fire(call, HOOK_K, l, kc + (size_t)p * C, 3, n, NH, hs)) ||
        (rc = fire(call, HOOK_V, l, vc + (size_t)p * C, 3, n, NH, hs)) ||
        (rc = fire(call, HOOK_CACHE_K, l, kc, 3, T, NH, hs)) ||
        (rc = fire(call, HOOK_CACHE_V, l, vc, 3, T, NH, hs)))
        return rc;
    /* the heart of it: n new queries against all T cached keys and values. Plain:
     * attention_forward (ops.c); fast: attention_avx2 (kernels.c), attention_decode when n = 1;
     * with nobody to read the score and weight matrices, the output alone (kernels.h) */
    if (cache->keep) attention_evicting(m, cache, l, kc, vc, n, p); /* a mask per head */
    else if (m->kern == KERN_PLAIN)
        attention_forward(s->atty, s->scores, s->pattern, s->q, kc, vc, n, p, NH, hs);
    else if (hooks_wants(call->lb->hooks, HOOK_ATTN_SCORES) ||
             hooks_wants(call->lb->hooks, HOOK_PATTERN))
        kern_attention_forward(m->kern, s->atty, s->scores, s->pattern, s->q, kc, vc, n, p, NH, hs);
    else kern_attention_out(m->kern, s->atty, s->scores, s->pattern, s->q, kc, vc, n, p, NH, hs);
    f->attn += 4ull * C * pairs;
    f->elementwise += (uint64_t)KV_FLOPS_SOFTMAX * NH * pairs;
    if ((rc = fire(call, HOOK_ATTN_SCORES, l, s->scores, 3, NH, n, T)) ||
        (rc = fire(call, HOOK_PATTERN, l, s->pattern, 3, NH, n, T)))
        return rc;
    /* z, as --ablate leaves it (ablated_z only when a head is off) */
    return fire(call, HOOK_Z, l, m->head_off ? ablated_z(m, l, n) : s->atty, 3, n, NH, hs);
}

/* hook_step_end: what the step did, with the evictions the caller reported. */
static int step_end(const ForwardCall *call, const KVCache *cache, int n, const FlopCount *f) {
    if (!hooks_wants(call->lb->hooks, HOOK_STEP_END)) return 0;
    StepStats st = {.tokens_new = n, .tokens_total = cache->len,
                    .kv_bytes = kvcache_bytes_used(cache),
                    .kv_reserved = kvcache_bytes_reserved(cache),
                    .kv_bytes_per_token = kvcache_bytes_per_token(cache), .flops = *f,
                    .slot_pos = cache->pos, .evicted_pos0 = call->lb->evicted_pos0,
                    .evicted_n = call->lb->evicted_n};
    HookEvent ev = {.point = HOOK_STEP_END, .phase = call->lb->phase, .step = call->lb->step,
                    .layer = -1, .pos0 = call->pos0, .slot0 = call->slot0, .stats = &st};
    return hooks_emit(call->lb->hooks, &ev);
}

/* One forward call of n new tokens (n = 1: a decode step): embeddings, every block
 * (attention_layer with its block_qkv, then block_rest), then ln_f and the lm_head for
 * the last token. */
int model_forward(Model *m, KVCache *cache, const int *tokens, int n, float *logits,
                  const StepLabel *label, FlopCount *flops) {
    const Config *cfg = &m->cfg;
    const int C = cfg->C;
    const StepLabel none = {.phase = PHASE_PREFILL};
    ForwardCall call = {.m = m, .lb = label ? label : &none, .pos0 = cache->n_seen, .slot0 = cache->len};
    RunState *s = &m->s;
    int rc;

    if (n < 1 || call.pos0 + n > cfg->N) return -1;
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= cfg->V) return -1;
    if (runstate_reserve(s, cfg, n, call.slot0 + n)) return -1;
    if ((rc = kvcache_reserve(cache, n))) return rc; /* -1, or KVCACHE_OVER_BUDGET */
    call.slot_pos = cache->pos; /* after the reservation, which may move it */
    FlopCount f = {0};

    for (int i = 0; i < n; i++) /* token + position embeddings */
        m->ops->residual(s->x + (size_t)i * C, m->w.wte + (size_t)tokens[i] * C,
                         m->w.wpe + (size_t)(call.pos0 + i) * C, (size_t)C);
    f.elementwise += KV_FLOPS_ADD * (uint64_t)n * C; /* wte + wpe */
    f.weight_bytes += 2 * sizeof(float) * (uint64_t)n * C; /* a row of each per token */

    for (int l = 0; l < cfg->L; l++)
        if ((rc = fire(&call, HOOK_RESID_PRE, l, s->x, 2, n, C, 0)) ||
            (rc = attention_layer(&call, cache, l, n, &f)) ||
            (rc = block_rest(&call, l, n, &f)))
            return rc;
    cache->len = call.slot0 + n; /* the new tokens are the cache's only once every layer holds them */
    cache->n_seen = call.pos0 + n;

    if (logits) { /* ln_f and the tied lm_head, for the last new token only */
        final_logits(m, s->x + (size_t)(n - 1) * C, 1, logits, &f);
        if ((rc = fire(&call, HOOK_LOGITS, -1, logits, 1, cfg->V, 0, 0))) return rc;
    }
    if (flops) flops_add(flops, &f);
    return step_end(&call, cache, n, &f);
}

/* Layer l's attention of R rows through cache: every row's K and V stored, then the
 * rows attended, spread over the threads (each row's arithmetic is its own, so the
 * result does not depend on how many). The attended slots' sum into *pairs. */
static int rows_attention(Model *m, const RowCache *cache, int l, int R, uint64_t *pairs) {
    RunState *s = &m->s;
    const int C = m->cfg.C;
    for (int r = 0; r < R; r++) {
        const float *qkv = s->qkv + (size_t)r * 3 * C;
        if (cache->store(cache->user, r, l, qkv + C, qkv + 2 * C) < 0) return -1;
    }
    int bad = 0;
    uint64_t sum = 0;
    const int workers = cache->workers > 1 ? cache->workers : 1;
    (void)workers; /* read by OpenMP only */
    OMP(omp parallel for schedule(dynamic, 1) reduction(+ : sum) reduction(| : bad) \
        num_threads(workers) if(R > 1 && workers > 1))
    for (int r = 0; r < R; r++) {
#ifdef _OPENMP
        const int worker = omp_get_thread_num();
#else
        const int worker = 0;
#endif
        const int slots = cache->attend(cache->user, worker, r, l, s->qkv + (size_t)r * 3 * C,
                                        s->atty + (size_t)r * C);
        if (slots < 0) bad = 1;
        else sum += (uint64_t)slots;
    }
    *pairs = sum;
    return bad ? -1 : 0;
}

/* Rows of many sequences in one pass: see model.h. */
int model_forward_rows(Model *m, const int *tokens, const int *pos, int R,
                       const RowCache *cache, float *const *logits, FlopCount *flops) {
    const Config *cfg = &m->cfg;
    const int C = cfg->C, NH = cfg->NH;
    const StepLabel none = {.phase = PHASE_DECODE}; /* rows of many sequences: no hooks */
    const ForwardCall call = {.m = m, .lb = &none};
    RunState *s = &m->s;
    int rc;

    if (R < 1 || !cache || !cache->store || !cache->attend) return -1;
    for (int r = 0; r < R; r++)
        if (tokens[r] < 0 || tokens[r] >= cfg->V || pos[r] < 0 || pos[r] >= cfg->N) return -1;
    if (runstate_reserve(s, cfg, R, 1)) return -1;
    FlopCount f = {0};

    for (int r = 0; r < R; r++) /* each row at its own sequence's position */
        residual_forward(s->x + (size_t)r * C, m->w.wte + (size_t)tokens[r] * C,
                         m->w.wpe + (size_t)pos[r] * C, (size_t)C);
    f.elementwise += (uint64_t)R * C;
    f.weight_bytes += 2 * sizeof(float) * (uint64_t)R * C; /* a row of wte and wpe per row */

    for (int l = 0; l < cfg->L; l++) {
        /* the projections see all R rows at once: one (R×C)·W matmul */
        const KernOut qkv = {{s->qkv}, 3 * C, 3 * (size_t)C, KERN_SET};
        if ((rc = block_qkv(&call, l, R, qkv, &f))) return rc;
        /* attention is per row: each one reads its own sequence's cache */
        uint64_t pairs = 0;
        if (rows_attention(m, cache, l, R, &pairs)) return -1;
        f.attn += 4ull * C * pairs;
        f.elementwise += (uint64_t)KV_FLOPS_SOFTMAX * NH * pairs;
        if ((rc = block_rest(&call, l, R, &f))) return rc;
    }
    /* the lm_head once per run of rows whose logits lie one after the other in one array
     * (a batch's usual (R, V) buffer: one run, one read of wte) */
    for (int r = 0, e; logits && r < R; r = e) {
        for (e = r + 1; logits[r] && e < R && logits[e] == logits[r] + (size_t)(e - r) * cfg->V;)
            e++;
        if (logits[r]) final_logits(m, s->x + (size_t)r * C, e - r, logits[r], &f);
    }
    if (flops) flops_add(flops, &f);
    return 0;
}
