/* model.c — built-in weights and the forward pass with its KV cache. */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigbuf.h"
#include "kernels.h"
#include "ops.h"
#include "rng.h"
#include "sysinfo.h"

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

/* Panel sizes, in block order: c_attn, attn.c_proj, c_fc, mlp.c_proj, each padded to
 * start on a 64-byte line; and wteᵀ. -1 when the sums overflow. */
static int panel_sizes(const Config *cfg, size_t pad[4], size_t *lm, size_t *total) {
    const size_t C = (size_t)cfg->C, L = (size_t)cfg->L, V = (size_t)cfg->V;
    const size_t most = SIZE_MAX / sizeof(float) / 64; /* room for the sums and the padding */
    if (V > most / C || 12 * C > most / C || L > most / (12 * C * C)) return -1;
    const size_t n[4] = {3 * C * C, C * C, 4 * C * C, 4 * C * C};
    size_t per = 0;
    for (int i = 0; i < 4; i++) per += pad[i] = (n[i] + 15) / 16 * 16;
    *lm = (V * C + 15) / 16 * 16;
    if (per > (SIZE_MAX / sizeof(float) - *lm) / L) return -1;
    *total = L * per + *lm;
    return 0;
}

/* Copy the blob's block matrices and wteᵀ into the panels at m->w.panels and point the
 * weights at them. */
static void fill_panels(Model *m) {
    const int C = m->cfg.C;
    size_t pad[4], lm, total;
    (void)panel_sizes(&m->cfg, pad, &lm, &total); /* checked when the panels were allocated */
    float *p = m->w.panels;
    kern_pack_panels_t(p, m->w.wte, m->cfg.V, C);
    m->w.wte_p = p;
    p += lm;
    for (int l = 0; l < m->cfg.L; l++) {
        BlockWeights *b = &m->w.h[l];
        kern_pack_panels(p, b->c_attn_w, C, 3 * C);
        b->c_attn_p = p; p += pad[0];
        kern_pack_panels(p, b->attn_proj_w, C, C);
        b->attn_proj_p = p; p += pad[1];
        kern_pack_panels(p, b->c_fc_w, C, 4 * C);
        b->c_fc_p = p; p += pad[2];
        kern_pack_panels(p, b->mlp_proj_w, 4 * C, C);
        b->mlp_proj_p = p; p += pad[3];
    }
}

/* The block matrices and wteᵀ in column panels for the vector kernels (kernels.h):
 * (12·L·C + V)·C floats, each matrix starting on a 64-byte line. 0, or -1 out of memory.
 * With dt a half type, the same layout in halves (pack_half_panels). */
static int pack_half_panels(Model *m, Dtype dt);
static int pack_panels(Model *m) {
    size_t pad[4], lm, total;
    if (panel_sizes(&m->cfg, pad, &lm, &total)) return -1;
    float *p = bigbuf_calloc(total, sizeof(float)); /* decode streams them: huge pages */
    if (!p) return -1;
    m->w.panels = p;
    fill_panels(m);
    return 0;
}

void model_refresh_panels(Model *m) {
    if (m->w.panels) fill_panels(m);
}

static int pack_half_panels(Model *m, Dtype dt) {
    const size_t C = (size_t)m->cfg.C, L = (size_t)m->cfg.L, V = (size_t)m->cfg.V;
    const size_t most = SIZE_MAX / sizeof(uint16_t) / 64;
    if (V > most / C || 12 * C > most / C || L > most / (12 * C * C)) return -1;
    const size_t n[4] = {3 * C * C, C * C, 4 * C * C, 4 * C * C}; /* in block order */
    size_t pad[4], per = 0;
    for (int i = 0; i < 4; i++) per += pad[i] = (n[i] + 31) / 32 * 32; /* 64-byte lines */
    const size_t lm = (V * C + 31) / 32 * 32;
    if (per > (SIZE_MAX / sizeof(uint16_t) - lm) / L) return -1;
    uint16_t *p = bigbuf_calloc(L * per + lm, sizeof(uint16_t));
    if (!p) return -1;
    m->w.half_panels = p;
    kern_pack_panels_t_half(p, m->w.wte, (int)V, (int)C, dt);
    m->w.wte_h = p;
    p += lm;
    for (size_t l = 0; l < L; l++) {
        BlockWeights *b = &m->w.h[l];
        kern_pack_panels_half(p, b->c_attn_w, (int)C, 3 * (int)C, dt);
        b->c_attn_h = p; p += pad[0];
        kern_pack_panels_half(p, b->attn_proj_w, (int)C, (int)C, dt);
        b->attn_proj_h = p; p += pad[1];
        kern_pack_panels_half(p, b->c_fc_w, (int)C, 4 * (int)C, dt);
        b->c_fc_h = p; p += pad[2];
        kern_pack_panels_half(p, b->mlp_proj_w, 4 * (int)C, (int)C, dt);
        b->mlp_proj_h = p; p += pad[3];
    }
    return 0;
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
    if (m->owns_panels) free(m->w.panels);
    m->w.panels = NULL;
    m->w.wte_p = NULL;
    for (int l = 0; l < m->cfg.L; l++) {
        BlockWeights *b = &m->w.h[l];
        b->c_attn_p = b->attn_proj_p = b->c_fc_p = b->mlp_proj_p = NULL;
    }
    /* without room for the half panels the model still runs, on the plain matmuls over
     * the rounded weights: the same results */
    if (m->kern != KERN_PLAIN) (void)pack_half_panels(m, dt);
    m->owns_panels = m->w.half_panels != NULL;
    return 0;
}

int model_init_from_blob(Model *m, const Config *cfg, float *blob, int take_ownership) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->w.blob = blob;
    m->w.num_params = model_num_params(cfg);
    m->kern = kern_detect();
    m->w.h = calloc((size_t)cfg->L, sizeof *m->w.h);
    if (!m->w.h) {
        m->w.blob = NULL; /* the caller keeps its blob on failure */
        return -1;
    }
    point_weights(m);
    /* without room for the panels the model still runs, on the plain matmuls */
    if (m->kern != KERN_PLAIN) (void)pack_panels(m);
    m->owns_blob = take_ownership;
    m->owns_panels = m->w.panels != NULL;
    return 0;
}

int model_init_shared(Model *m, const Model *src) {
    memset(m, 0, sizeof *m);
    m->cfg = src->cfg;
    m->w = src->w;
    m->kern = src->kern;
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
    if (m->owns_panels) {
        free(m->w.panels);
        free(m->w.half_panels);
    }
    free(m->w.h);
    runstate_free(&m->s);
    memset(m, 0, sizeof *m);
}

/* Floats from one buffer of the run state to the next: n, rounded up to whole 64-byte
 * lines. */
static size_t lines_of(size_t n) { return (n + 15) / 16 * 16; }

/* Room for n rows attending over Tt columns; capacities double so decode steps
 * do not reallocate every time. Every buffer lies in one block (bigbuf: on 2 MiB
 * pages once it is large), because a prefill's matmuls store rows C floats apart,
 * where 4 KiB pages cost a TLB miss every row or two. A new block keeps nothing of the
 * old one: every forward call writes its buffers before it reads them. */
static int runstate_reserve(RunState *s, const Config *cfg, int n, int Tt) {
    if (n <= s->rows && Tt <= s->cols) return 0;
    int r = s->rows ? s->rows : 1, c = s->cols ? s->cols : 16;
    while (r < n) r *= 2;
    while (c < Tt) c *= 2;
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

/* Seconds since t0 added to *acc, when the model keeps times (Model.times). */
static double clock_start(const Model *m) { return m->times ? now_seconds() : 0.0; }
static void clock_add(const Model *m, double *acc, double t0) {
    if (m->times) *acc += now_seconds() - t0;
}

/* Where a forward call is, for the events of its hook points. */
typedef struct {
    Model *m;
    const StepLabel *lb;
    int pos0;            /* absolute position of the first new token */
    int slot0;           /* cache slots held before the call */
    const int *slot_pos; /* the position each cache slot holds; NULL without a cache */
} At;

/* Hook point pt of layer l (-1: the model's) with its tensor, when anyone listens.
 * 0, or the observer's non-zero answer, which ends the forward call. */
static int fire(const At *at, HookPoint pt, int layer, const float *data, int ndim, int d0,
                int d1, int d2) {
    const Hooks *hk = at->lb->hooks;
    if (!hooks_wants(hk, pt)) return 0;
    HookEvent ev = {.point = pt, .phase = at->lb->phase, .step = at->lb->step, .layer = layer,
                    .pos0 = at->pos0, .slot0 = at->slot0, .slot_pos = at->slot_pos, .data = data,
                    .ndim = ndim, .shape = {d0, d1, d2, 0}};
    const double t0 = clock_start(at->m);
    const int rc = hooks_emit(hk, &ev);
    clock_add(at->m, at->m->times ? &at->m->times->hooks : NULL, t0);
    return rc;
}

/* in (n,C) · w (C,OC) + bias on the model's panels (float32 or halves), into out as it
 * says (kernels.h: KernOut). Plain: matmul_forward's operations (ops.c); fast:
 * matmul_run on panel_avx2 / panel_avx512 (kernels.c). */
static void block_matmul_into(Model *m, KernOut out, const float *in, const float *w,
                              const float *p32, const uint16_t *p16, const float *bias, int n,
                              int C, int OC) {
    const double t0 = clock_start(m);
    const void *pan = m->w.dtype == DT_FP32 ? (const void *)p32 : (const void *)p16;
    kern_matmul_into(m->kern, out, in, w, pan, m->w.dtype, bias, n, C, OC);
    clock_add(m, m->times ? &m->times->matmul : NULL, t0);
}

/* out (n,OC) = in (n,C) · w + bias, or out += that (how: KERN_SET, KERN_ADD). */
static void block_matmul(Model *m, float *out, KernStore how, const float *in, const float *w,
                         const float *p32, const uint16_t *p16, const float *bias, int n, int C,
                         int OC) {
    const KernOut o = {{out}, OC, (size_t)OC, how};
    block_matmul_into(m, o, in, w, p32, p16, bias, n, C, OC);
}

/* ---- the parts of a block that do not know the cache ----------------------
 * Shared by model_forward (the rows of one sequence) and model_forward_rows (rows
 * of many sequences): each row goes through the same kernels in the same order,
 * so its result does not depend on which other rows share the call. (block_qkv writes
 * where its caller says: model_forward points K and V at the cache's slots.) */

/* ln_1 → c_attn over rows 0..n-1 of s->x, into qkv: parts q, k and v of C each. */
static int block_qkv(const At *at, int l, int n, KernOut qkv, FlopCount *f) {
    Model *m = at->m;
    const BlockWeights *b = &m->w.h[l];
    const int C = m->cfg.C;
    RunState *s = &m->s;
    int rc;
    /* plain: layernorm_forward (ops.c); fast: layernorm_avx2 / layernorm_512 (kernels.c) */
    kern_layernorm_forward(m->kern, s->ln, s->x, b->ln_1_w, b->ln_1_b, n, C, m->cfg.eps);
    if ((rc = fire(at, HOOK_LN1, l, s->ln, 2, n, C, 0))) return rc;
    block_matmul_into(m, qkv, s->ln, b->c_attn_w, b->c_attn_p, b->c_attn_h, b->c_attn_b, n, C,
                      3 * C);
    f->qkv += 6ull * n * C * C;
    f->elementwise += (KV_FLOPS_LAYERNORM + KV_FLOPS_ADD * 3) * (uint64_t)n * C; /* ln_1, bias */
    return 0;
}

/* attn.c_proj → residual → ln_2 → c_fc → GELU → mlp.c_proj → residual over n rows,
 * from the attention output in s->atty (n, C). */
static int block_rest(const At *at, int l, int n, FlopCount *f) {
    Model *m = at->m;
    const BlockWeights *b = &m->w.h[l];
    const int C = m->cfg.C;
    const size_t nC = (size_t)n * C;
    RunState *s = &m->s;
    int rc;
    /* with nobody to see attn.c_proj's output: the residual add as it stores (add) */
    const int add = !hooks_wants(at->lb->hooks, HOOK_ATTN_OUT);
    block_matmul(m, add ? s->x : s->proj, add ? KERN_ADD : KERN_SET, s->atty, b->attn_proj_w,
                 b->attn_proj_p, b->attn_proj_h, b->attn_proj_b, n, C, C);
    if (!add && (rc = fire(at, HOOK_ATTN_OUT, l, s->proj, 2, n, C, 0))) return rc;
    /* plain: residual_forward (ops.c); fast: residual_avx2 (kernels.c) */
    if (!add) kern_residual_forward(m->kern, s->x, s->x, s->proj, nC);
    f->attn_proj += 2ull * n * C * C;
    f->elementwise += KV_FLOPS_ADD * 2 * nC; /* c_proj bias, residual */
    if ((rc = fire(at, HOOK_RESID_MID, l, s->x, 2, n, C, 0))) return rc;

    /* MLP: ln_2 → c_fc → GELU → mlp.c_proj → residual; ln_2 runs as ln_1 does */
    kern_layernorm_forward(m->kern, s->ln, s->x, b->ln_2_w, b->ln_2_b, n, C, m->cfg.eps);
    if ((rc = fire(at, HOOK_LN2, l, s->ln, 2, n, C, 0))) return rc;
    /* GELU as c_fc stores its outputs, unless an observer wants them before it */
    const int pre = hooks_wants(at->lb->hooks, HOOK_MLP_PRE);
    block_matmul_into(m, (KernOut){{s->fc}, 4 * C, 4 * (size_t)C, pre ? KERN_SET : KERN_GELU},
                      s->ln, b->c_fc_w, b->c_fc_p, b->c_fc_h, b->c_fc_b, n, C, 4 * C);
    if (pre && (rc = fire(at, HOOK_MLP_PRE, l, s->fc, 2, n, 4 * C, 0))) return rc;
    if (pre) kern_gelu_forward(m->kern, s->fc, s->fc, 4 * nC); /* fast: gelu_avx2 */
    if ((rc = fire(at, HOOK_MLP_POST, l, s->fc, 2, n, 4 * C, 0))) return rc;
    block_matmul(m, s->proj, KERN_SET, s->fc, b->mlp_proj_w, b->mlp_proj_p, b->mlp_proj_h,
                 b->mlp_proj_b, n, 4 * C, C);
    if ((rc = fire(at, HOOK_MLP_OUT, l, s->proj, 2, n, C, 0))) return rc;
    /* a separate add: mlp.c_proj's sums run over more than one block of panel rows, where
     * KERN_ADD would go through a buffer (kernels.c) */
    kern_residual_forward(m->kern, s->x, s->x, s->proj, nC);
    f->mlp += 16ull * n * C * C;
    /* ln_2, c_fc bias (4nC), GELU (4nC), mlp.c_proj bias and residual (nC each) */
    f->elementwise += (KV_FLOPS_LAYERNORM + KV_FLOPS_ADD * 6 + KV_FLOPS_GELU * 4) * nC;
    return fire(at, HOOK_RESID_POST, l, s->x, 2, n, C, 0);
}

/* ln_f and the tied lm_head for one row x (C), into logits (V). */
static void final_logits(Model *m, const float *x, float *logits, FlopCount *f) {
    const Config *cfg = &m->cfg;
    /* ln_f on one row: the plain layernorm_forward (ops.c) */
    layernorm_forward(m->s.ln, x, m->w.ln_f_w, m->w.ln_f_b, 1, cfg->C, cfg->eps);
    const double t0 = clock_start(m);
    /* plain: matmul_transposed_forward (ops.c); fast: matmul_run on wte's panels (kernels.c) */
    if (m->w.dtype == DT_FP32)
        kern_matmul_transposed_forward(m->kern, logits, m->s.ln, m->w.wte, m->w.wte_p, 1, cfg->C,
                                       cfg->V);
    else kern_matmul_transposed_half_forward(m->kern, logits, m->s.ln, m->w.wte, m->w.wte_h,
                                             m->w.dtype, 1, cfg->C, cfg->V);
    clock_add(m, m->times ? &m->times->matmul : NULL, t0);
    f->elementwise += KV_FLOPS_LAYERNORM * (uint64_t)cfg->C;
    f->lm_head += 2ull * cfg->C * cfg->V;
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
static int attention_layer(const At *at, KVCache *cache, int l, int n, FlopCount *f) {
    Model *m = at->m;
    RunState *s = &m->s;
    const int C = m->cfg.C, NH = m->cfg.NH, hs = C / NH, p = at->slot0, Tt = p + n;
    const uint64_t pairs = (uint64_t)n * p + (uint64_t)n * (n + 1) / 2; /* Σ (slots seen) */
    const float *kc, *vc; /* this layer's cached keys and values, (Tt, C) */
    float *kw, *vw;       /* where c_attn writes them */
    const int in_place = kvcache_rows(cache, l, p, n, at->pos0, &kw, &vw) == 0;
    const KernOut qkv = {{s->q, in_place ? kw : s->qkv, in_place ? vw : s->qkv + (size_t)n * C},
                         C, (size_t)C, KERN_SET};
    int rc;
    if ((rc = block_qkv(at, l, n, qkv, f))) return rc;
    for (int i = 0; !in_place && i < n; i++) /* the cache stores K and V in its type */
        kvcache_store(cache, l, p + i, qkv.p[1] + (size_t)i * C, qkv.p[2] + (size_t)i * C,
                      at->pos0 + i);
    /* read them back as floats: fp32 in place, other types dequantized, so the new
     * tokens attend to their own K and V exactly as stored */
    kvcache_layer(cache, l, Tt, &kc, &vc);
    if ((rc = fire(at, HOOK_Q, l, s->q, 3, n, NH, hs)) ||
        (rc = fire(at, HOOK_K, l, kc + (size_t)p * C, 3, n, NH, hs)) ||
        (rc = fire(at, HOOK_V, l, vc + (size_t)p * C, 3, n, NH, hs)) ||
        (rc = fire(at, HOOK_CACHE_K, l, kc, 3, Tt, NH, hs)) ||
        (rc = fire(at, HOOK_CACHE_V, l, vc, 3, Tt, NH, hs)))
        return rc;
    /* the heart of it: n new queries against all Tt cached keys and values. Plain:
     * attention_forward (ops.c); fast: attention_avx2 (kernels.c), attention_decode when n = 1;
     * with nobody to read the score and weight matrices, the output alone (kernels.h) */
    const double t0 = clock_start(m);
    if (cache->keep) attention_evicting(m, cache, l, kc, vc, n, p); /* a mask per head */
    else if (hooks_wants(at->lb->hooks, HOOK_ATTN_SCORES) || hooks_wants(at->lb->hooks, HOOK_PATTERN))
        kern_attention_forward(m->kern, s->atty, s->scores, s->pattern, s->q, kc, vc, n, p, NH, hs);
    else kern_attention_out(m->kern, s->atty, s->scores, s->pattern, s->q, kc, vc, n, p, NH, hs);
    clock_add(m, m->times ? &m->times->attention : NULL, t0);
    f->attn += 4ull * C * pairs;
    f->elementwise += (uint64_t)KV_FLOPS_SOFTMAX * NH * pairs;
    if ((rc = fire(at, HOOK_ATTN_SCORES, l, s->scores, 3, NH, n, Tt)) ||
        (rc = fire(at, HOOK_PATTERN, l, s->pattern, 3, NH, n, Tt)))
        return rc;
    return fire(at, HOOK_Z, l, s->atty, 3, n, NH, hs);
}

/* hook_step_end: what the step did, with the evictions the caller reported. */
static int step_end(const At *at, const KVCache *cache, int n, const FlopCount *f) {
    if (!hooks_wants(at->lb->hooks, HOOK_STEP_END)) return 0;
    StepStats st = {.tokens_new = n, .tokens_total = cache->len,
                    .kv_bytes = kvcache_bytes_used(cache),
                    .kv_reserved = kvcache_bytes_reserved(cache),
                    .kv_bytes_per_token = kvcache_bytes_per_token(cache), .flops = *f,
                    .slot_pos = cache->pos, .evicted_pos0 = at->lb->evicted_pos0,
                    .evicted_n = at->lb->evicted_n};
    HookEvent ev = {.point = HOOK_STEP_END, .phase = at->lb->phase, .step = at->lb->step,
                    .layer = -1, .pos0 = at->pos0, .slot0 = at->slot0, .stats = &st};
    const double t0 = clock_start(at->m);
    const int rc = hooks_emit(at->lb->hooks, &ev);
    clock_add(at->m, at->m->times ? &at->m->times->hooks : NULL, t0);
    return rc;
}

/* One forward call of n new tokens (n = 1: a decode step): embeddings, every block
 * (attention_layer with its block_qkv, then block_rest), then ln_f and the lm_head for
 * the last token. */
static int forward(Model *m, KVCache *cache, const int *tokens, int n, float *logits,
                   const StepLabel *label, FlopCount *flops) {
    const Config *cfg = &m->cfg;
    const int C = cfg->C;
    const StepLabel none = {.phase = PHASE_PREFILL};
    At at = {.m = m, .lb = label ? label : &none, .pos0 = cache->n_seen, .slot0 = cache->len};
    RunState *s = &m->s;
    int rc;

    if (n < 1 || at.pos0 + n > cfg->N) return -1;
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= cfg->V) return -1;
    if (runstate_reserve(s, cfg, n, at.slot0 + n)) return -1;
    if ((rc = kvcache_reserve(cache, n))) return rc; /* -1, or KVCACHE_OVER_BUDGET */
    at.slot_pos = cache->pos; /* after the reservation, which may move it */
    FlopCount f = {0};

    /* token + position embeddings (plain: residual_forward; fast: residual_avx2) */
    for (int i = 0; i < n; i++)
        kern_residual_forward(m->kern, s->x + (size_t)i * C, m->w.wte + (size_t)tokens[i] * C,
                              m->w.wpe + (size_t)(at.pos0 + i) * C, (size_t)C);
    f.elementwise += KV_FLOPS_ADD * (uint64_t)n * C; /* wte + wpe */

    for (int l = 0; l < cfg->L; l++)
        if ((rc = fire(&at, HOOK_RESID_PRE, l, s->x, 2, n, C, 0)) ||
            (rc = attention_layer(&at, cache, l, n, &f)) ||
            (rc = block_rest(&at, l, n, &f)))
            return rc;
    cache->len = at.slot0 + n; /* the new tokens are the cache's only once every layer holds them */
    cache->n_seen = at.pos0 + n;

    if (logits) { /* ln_f and the tied lm_head, for the last new token only */
        final_logits(m, s->x + (size_t)(n - 1) * C, logits, &f);
        if ((rc = fire(&at, HOOK_LOGITS, -1, logits, 1, cfg->V, 0, 0))) return rc;
    }
    if (flops) flops_add(flops, &f);
    return step_end(&at, cache, n, &f);
}

int model_forward(Model *m, KVCache *cache, const int *tokens, int n, float *logits,
                  const StepLabel *label, FlopCount *flops) {
    const double t0 = clock_start(m);
    const int rc = forward(m, cache, tokens, n, logits, label, flops);
    clock_add(m, m->times ? &m->times->total : NULL, t0);
    return rc;
}

/* Rows of many sequences in one pass: see model.h. */
int model_forward_rows(Model *m, const int *tokens, const int *pos, int R, RowAttendFn attend,
                       void *user, float *const *logits, FlopCount *flops) {
    const Config *cfg = &m->cfg;
    const int C = cfg->C, NH = cfg->NH;
    const StepLabel none = {.phase = PHASE_DECODE}; /* rows of many sequences: no hooks */
    const At at = {.m = m, .lb = &none};
    RunState *s = &m->s;
    int rc;

    if (R < 1 || !attend) return -1;
    for (int r = 0; r < R; r++)
        if (tokens[r] < 0 || tokens[r] >= cfg->V || pos[r] < 0 || pos[r] >= cfg->N) return -1;
    if (runstate_reserve(s, cfg, R, 1)) return -1;
    FlopCount f = {0};

    for (int r = 0; r < R; r++) /* each row at its own sequence's position */
        residual_forward(s->x + (size_t)r * C, m->w.wte + (size_t)tokens[r] * C,
                         m->w.wpe + (size_t)pos[r] * C, (size_t)C);
    f.elementwise += (uint64_t)R * C;

    for (int l = 0; l < cfg->L; l++) {
        /* the projections see all R rows at once: one (R×C)·W matmul */
        const KernOut qkv = {{s->qkv}, 3 * C, 3 * (size_t)C, KERN_SET};
        if ((rc = block_qkv(&at, l, R, qkv, &f))) return rc;
        /* attention is per row: each one reads its own sequence's cache */
        uint64_t pairs = 0;
        for (int r = 0; r < R; r++) {
            int slots = attend(user, r, l, s->qkv + (size_t)r * 3 * C, s->atty + (size_t)r * C);
            if (slots < 0) return -1;
            pairs += (uint64_t)slots;
        }
        f.attn += 4ull * C * pairs;
        f.elementwise += (uint64_t)KV_FLOPS_SOFTMAX * NH * pairs;
        if ((rc = block_rest(&at, l, R, &f))) return rc;
    }
    if (logits)
        for (int r = 0; r < R; r++)
            if (logits[r]) final_logits(m, s->x + (size_t)r * C, logits[r], &f);
    if (flops) flops_add(flops, &f);
    return 0;
}
