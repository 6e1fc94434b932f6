/* train.c — the trainer: initialisation, forward, backward, AdamW, evaluation, the loop.
 * Checkpoints and the output folder are in train_io.c. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bigbuf.h"
#include "kernels.h"
#include "ops.h"
#include "parallel.h"
#include "rng.h"
#include "sysinfo.h"
#include "train_kernels.h"
#include "train_ops.h"


/* The gradient of the parameter tensor at p (a pointer into the blob). */
#define GRAD(tr, p) ((tr)->grads + ((p) - (tr)->model.w.blob))

TrainOptions train_options_default(void) {
    TrainOptions o = {.B = 16, .steps = 2400, .lr = 3e-3f, .warmup = 100, .lr_final = 0.1f,
                      .weight_decay = 0.1f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                      .clip = 1.0f, .seed = 1, .init_std = 0.08f, .eval_every = 400, .bos = 255,
                      .repeat_share = 0.25f, .span_share = 0.5f, .period_min = 8, .period_max = 128,
                      .short_steps = 0, .short_ctx = 128, .short_B = 32, .short_repeat_share = 1.0f,
                      .short_span_share = 0.0f, .heads_every = 100,
                      .copy_from = 0, .alpha_share = 0.0f, .alpha_min = 4, .alpha_max = 8,
                      .embed_share = 0.0f, .embed_min = 16, .embed_max = 96};
    return o;
}

static int share_of(float share, int n) { return (int)floor((double)share * n + 0.5); }

CorpusMix train_mix(const TrainOptions *o, int s, int N) {
    CorpusMix m = {.B = o->B, .T = N, .bos = o->bos, .period_min = o->period_min,
                   .period_max = o->period_max};
    const int short_phase = s < o->short_steps;
    if (short_phase) {
        m.B = o->short_B;
        m.T = o->short_ctx;
        if (m.period_max > m.T / 2) m.period_max = m.T / 2;
    }
    m.nrep = share_of(short_phase ? o->short_repeat_share : o->repeat_share, m.B);
    m.nspan = share_of(short_phase ? o->short_span_share : o->span_share, m.nrep);
    m.alpha_min = o->alpha_min, m.alpha_max = o->alpha_max;
    m.embed_min = o->embed_min, m.embed_max = o->embed_max;
    if (!short_phase && s >= o->copy_from) {
        m.nalpha = share_of(o->alpha_share, m.nrep - m.nspan);
        m.nembed = share_of(o->embed_share, m.B);
        if (m.nembed > m.B - m.nrep) m.nembed = m.B - m.nrep;
    }
    return m;
}

float train_lr(const TrainOptions *o, int s) {
    if (s < o->warmup) return o->lr * (float)(s + 1) / (float)o->warmup;
    const int decay = o->steps - o->warmup; /* steps after the warm-up */
    if (decay <= 1) return o->lr;
    const double pi = 3.14159265358979323846;
    const double f = (double)(s - o->warmup) / (double)(decay - 1); /* 0 .. 1 */
    const double c = 0.5 * (1.0 + cos(pi * f));                    /* 1 .. 0 */
    return (float)(o->lr * (o->lr_final + (1.0 - o->lr_final) * c));
}

/* ---- the profile (Trainer.prof) ------------------------------------------------ */

static const char *const phase_names[TP_N] = {
    "fwd_matmul", "fwd_attention", "fwd_other", "bwd_zero_grads", "bwd_crossentropy",
    "bwd_lm_head", "bwd_layernorm", "bwd_mlp_proj", "bwd_gelu", "bwd_c_fc", "bwd_attn_proj",
    "bwd_attention", "bwd_qkv_join", "bwd_c_attn", "bwd_encoder", "upd_adamw", "upd_panels"};

const char *train_phase_name(int phase) {
    return phase >= 0 && phase < TP_N ? phase_names[phase] : "?";
}

typedef struct {
    double wall, cpu;
} ProfMark;

/* Now, when tr is profiled (no clock is read otherwise). */
static ProfMark prof_start(const Trainer *tr) {
    ProfMark m = {0.0, 0.0};
    if (!tr->prof) return m;
    struct timespec w, c;
    clock_gettime(CLOCK_MONOTONIC, &w);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c);
    m.wall = (double)w.tv_sec + 1e-9 * (double)w.tv_nsec;
    m.cpu = (double)c.tv_sec + 1e-9 * (double)c.tv_nsec;
    return m;
}

/* The time since *m goes to phase; *m restarts. */
static void prof_lap(Trainer *tr, int phase, ProfMark *m) {
    if (!tr->prof) return;
    const ProfMark n = prof_start(tr);
    tr->prof->wall[phase] += n.wall - m->wall;
    tr->prof->cpu[phase] += n.cpu - m->cpu;
    *m = n;
}

/* ---- initialisation ------------------------------------------------------------- */

/* GPT-2's scheme (see train.h); tensor i draws from rng_stream(seed, i). */
static int init_weights(float *blob, const Config *cfg, uint64_t seed, double base) {
    const int ns = model_tensor_specs(cfg, NULL);
    TensorSpec *specs = malloc((size_t)ns * sizeof *specs);
    if (!specs) return TRAIN_NOMEM;
    model_tensor_specs(cfg, specs);
    const double proj = base / sqrt(2.0 * cfg->L);
    for (int i = 0; i < ns; i++) {
        const TensorSpec *t = &specs[i];
        float *p = blob + t->offset;
        const char *leaf = strrchr(t->name, '.');
        if (t->ndim == 1) { /* biases 0, layernorm weights 1 */
            const float fill = strstr(t->name, "ln_") && strcmp(leaf, ".weight") == 0 ? 1.0f : 0.0f;
            for (size_t j = 0; j < t->numel; j++) p[j] = fill;
            continue;
        }
        const double std = strstr(t->name, "c_proj") ? proj : base;
        uint64_t s = rng_stream(seed, (uint64_t)i);
        for (size_t j = 0; j < t->numel; j++) p[j] = (float)(std * rng_normal(&s));
    }
    free(specs);
    return 0;
}

/* Floats of TrainActs; with base not NULL, a's fields point into base. */
static size_t acts_layout(TrainActs *a, float *base, const Config *cfg, int B, int nscratch) {
    const size_t L = (size_t)cfg->L, C = (size_t)cfg->C, NH = (size_t)cfg->NH, T = (size_t)cfg->N;
    const size_t BT = (size_t)B * T, BTC = BT * C, V = (size_t)cfg->V, att = (size_t)B * NH * T * T;
    const struct { float **field; size_t n; } parts[] = {
        {&a->encoded, BTC},
        {&a->ln1, L * BTC}, {&a->ln1_mean, L * BT}, {&a->ln1_rstd, L * BT},
        {&a->q, L * BTC}, {&a->k, L * BTC}, {&a->v, L * BTC},
        {&a->att, L * att}, {&a->atty, L * BTC}, {&a->resid2, L * BTC},
        {&a->ln2, L * BTC}, {&a->ln2_mean, L * BT}, {&a->ln2_rstd, L * BT},
        {&a->fch, L * BTC * 4}, {&a->fch_gelu, L * BTC * 4}, {&a->resid3, L * BTC},
        {&a->lnf, BTC}, {&a->lnf_mean, BT}, {&a->lnf_rstd, BT},
        {&a->logits, BT * V}, {&a->probs, BT * V}, {&a->losses, BT},
        {&a->qkv, BTC * 3}, {&a->proj, BTC}, {&a->scores, (size_t)nscratch * NH * T * T},
        {&a->dresid, BTC}, {&a->dln, BTC}, {&a->datty, BTC},
        {&a->dq, BTC}, {&a->dk, BTC}, {&a->dv, BTC}, {&a->dqkv, BTC * 3},
        {&a->dfch, BTC * 4}, {&a->dpre, att}, {&a->dlogits, BT * V},
        {&a->scratch, (size_t)nscratch * tk_attention_scratch(cfg->N, cfg->C / cfg->NH)},
    };
    size_t total = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (base) *parts[i].field = base + total;
        total += parts[i].n;
    }
    return total;
}

/* Carve n floats off *p. */
static float *carve(float **p, size_t n) {
    float *r = *p;
    *p += n;
    return r;
}

/* The backward's panels: Wᵀ of each block matrix, and wte. */
static int pack_backward_panels(Trainer *tr, int alloc) {
    const Config *cfg = &tr->model.cfg;
    const size_t C = (size_t)cfg->C, L = (size_t)cfg->L, V = (size_t)cfg->V;
    if (alloc) {
        tr->panels = bigbuf_calloc(L * 12 * C * C + V * C, sizeof(float));
        tr->bp = calloc(L, sizeof *tr->bp);
        if (!tr->panels || !tr->bp) return TRAIN_NOMEM;
        float *p = tr->panels;
        tr->wte_p = carve(&p, V * C);
        for (size_t l = 0; l < L; l++) {
            tr->bp[l].c_attn_t = carve(&p, 3 * C * C);
            tr->bp[l].attn_proj_t = carve(&p, C * C);
            tr->bp[l].c_fc_t = carve(&p, 4 * C * C);
            tr->bp[l].mlp_proj_t = carve(&p, 4 * C * C);
        }
    }
    const int c = cfg->C, n = 4 * cfg->L + 1;
    /* one matrix per task: copies only, so any thread count gives the same panels */
    OMP(omp parallel for schedule(dynamic, 1))
    for (int j = 0; j < n; j++) {
        if (j == n - 1) {
            kern_pack_panels(tr->wte_p, tr->model.w.wte, cfg->V, c);
            continue;
        }
        const BlockWeights *w = &tr->model.w.h[j / 4];
        const BlockPanels *p = &tr->bp[j / 4];
        switch (j % 4) {
        case 0: kern_pack_panels_t(p->c_attn_t, w->c_attn_w, c, 3 * c); break;
        case 1: kern_pack_panels_t(p->attn_proj_t, w->attn_proj_w, c, c); break;
        case 2: kern_pack_panels_t(p->c_fc_t, w->c_fc_w, c, 4 * c); break;
        default: kern_pack_panels_t(p->mlp_proj_t, w->mlp_proj_w, 4 * c, c); break;
        }
    }
    return 0;
}

int trainer_init(Trainer *tr, const Config *cfg, int B, uint64_t seed) {
    return trainer_init_std(tr, cfg, B, seed, 0.02);
}

int trainer_init_std(Trainer *tr, const Config *cfg, int B, uint64_t seed, double std) {
    memset(tr, 0, sizeof *tr);
    const size_t n = model_num_params(cfg);
    float *blob = model_blob_alloc(cfg);
    if (!blob) return TRAIN_NOMEM;
    if (init_weights(blob, cfg, seed, std) || model_init_from_blob(&tr->model, cfg, blob, 1)) {
        free(blob);
        return TRAIN_NOMEM;
    }
    tr->B = tr->B0 = B;
    tr->T = cfg->N;
    tr->lv = kern_detect();
#ifdef _OPENMP
    tr->nscratch = omp_get_max_threads();
#else
    tr->nscratch = 1;
#endif
    const size_t na = acts_layout(&tr->a, NULL, cfg, B, tr->nscratch);
    /* on huge pages where offered (bigbuf.h): the kernels read them in rows pages apart */
    tr->grads = bigbuf_calloc(n, sizeof(float));
    tr->m = bigbuf_calloc(n, sizeof(float));
    tr->v = bigbuf_calloc(n, sizeof(float));
    tr->acts = bigbuf_calloc(na, sizeof(float));
    tr->inputs = calloc((size_t)B * tr->T, sizeof(int));
    tr->targets = calloc((size_t)B * tr->T, sizeof(int));
    tr->nspecs = model_tensor_specs(cfg, NULL);
    tr->specs = malloc((size_t)tr->nspecs * sizeof *tr->specs);
    if (!tr->grads || !tr->m || !tr->v || !tr->acts || !tr->inputs || !tr->targets || !tr->specs) {
        trainer_free(tr);
        return TRAIN_NOMEM;
    }
    model_tensor_specs(cfg, tr->specs);
    acts_layout(&tr->a, tr->acts, cfg, B, tr->nscratch);
    /* the backward panels serve the vector kernels only */
    if (tr->lv != KERN_PLAIN && pack_backward_panels(tr, 1)) {
        free(tr->panels);
        free(tr->bp);
        tr->panels = NULL;
        tr->bp = NULL; /* the plain loops then: same results, slower */
    }
    return 0;
}

int trainer_set_kernels(Trainer *tr, KernLevel lv) {
    if (model_set_kernels(&tr->model, lv)) return -1;
    tr->lv = lv;
    if (lv != KERN_PLAIN && !tr->panels && pack_backward_panels(tr, 1) == 0) return 0;
    free(tr->panels); /* the plain loops: no backward panels */
    free(tr->bp);
    tr->panels = NULL;
    tr->bp = NULL;
    return 0;
}

void trainer_free(Trainer *tr) {
    model_free(&tr->model);
    free(tr->grads);
    free(tr->m);
    free(tr->v);
    free(tr->acts);
    free(tr->panels);
    free(tr->bp);
    free(tr->inputs);
    free(tr->targets);
    free(tr->specs);
    memset(tr, 0, sizeof *tr);
}

/* ---- forward -------------------------------------------------------------------------
 * The engine's block (model.c) on B·T rows: the same kernels, at the model's level, so
 * each row's numbers are those model_forward computes for that row. */

/* The calling thread's number in its team (0 without OpenMP). */
static int thread_num(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* c_attn's output (BT, 3C) split into q, k, v (BT, C). */
static void split_qkv(float *q, float *k, float *v, const float *qkv, size_t BT, int C) {
    OMP(omp parallel for schedule(static) if(BT * C > 65536))
    for (size_t r = 0; r < BT; r++) {
        const float *row = qkv + r * 3 * C;
        memcpy(q + r * C, row, (size_t)C * sizeof(float));
        memcpy(k + r * C, row + C, (size_t)C * sizeof(float));
        memcpy(v + r * C, row + 2 * C, (size_t)C * sizeof(float));
    }
}

static void block_forward(Trainer *tr, int l, const float *x) {
    const Model *m = &tr->model;
    const Config *cfg = &m->cfg;
    const BlockWeights *w = &m->w.h[l];
    const KernLevel lv = m->kern;
    const float *pan[KERN_MATS] = {0}; /* the model's panels of the block (float32), if any */
    for (int k = 0; m->fast.h && k < KERN_MATS; k++) pan[k] = m->fast.h[l][k];
    const int B = tr->B, T = tr->T, C = cfg->C, NH = cfg->NH, hs = C / NH;
    const size_t BT = (size_t)B * T, BTC = BT * C, TC = (size_t)T * C, l4 = (size_t)l;
    TrainActs *a = &tr->a;
    float *ln1 = a->ln1 + l4 * BTC, *q = a->q + l4 * BTC, *k = a->k + l4 * BTC, *v = a->v + l4 * BTC;
    float *att = a->att + l4 * B * NH * T * T, *atty = a->atty + l4 * BTC;
    float *resid2 = a->resid2 + l4 * BTC, *ln2 = a->ln2 + l4 * BTC, *resid3 = a->resid3 + l4 * BTC;
    float *fch = a->fch + l4 * BTC * 4, *fch_gelu = a->fch_gelu + l4 * BTC * 4;

    ProfMark pm = prof_start(tr);

    /* attention: ln_1 → c_attn → causal self-attention per sequence → c_proj → residual */
    kern_layernorm_forward(lv, ln1, x, w->ln_1_w, w->ln_1_b, (int)BT, C, cfg->eps);
    tk_layernorm_stats(a->ln1_mean + l4 * BT, a->ln1_rstd + l4 * BT, x, (int)BT, C, cfg->eps);
    prof_lap(tr, TP_FWD_OTHER, &pm);
    kern_matmul_forward(lv, a->qkv, ln1, w->c_attn_w, pan[KERN_C_ATTN], w->c_attn_b, (int)BT, C, 3 * C);
    prof_lap(tr, TP_FWD_MATMUL, &pm);
    split_qkv(q, k, v, a->qkv, BT, C);
    prof_lap(tr, TP_FWD_OTHER, &pm);
    /* one sequence per task, its kernel call on that thread (a nested region runs on one):
     * B large tasks rather than B rounds of small ones, each ending at a barrier that a
     * busy machine makes long. Sequences are independent: the same bytes either way. */
    const size_t per = (size_t)NH * T * T;
    OMP(omp parallel for schedule(dynamic, 1) num_threads(tr->nscratch) if(B > 1))
    for (int b = 0; b < B; b++)
        kern_attention_forward(lv, atty + b * TC, a->scores + per * (size_t)thread_num(),
                               att + (size_t)b * per, q + b * TC, k + b * TC, v + b * TC, T, 0,
                               NH, hs);
    prof_lap(tr, TP_FWD_ATTENTION, &pm);
    kern_matmul_forward(lv, a->proj, atty, w->attn_proj_w, pan[KERN_ATTN_PROJ], w->attn_proj_b, (int)BT,
                        C, C);
    prof_lap(tr, TP_FWD_MATMUL, &pm);
    kern_residual_forward(lv, resid2, x, a->proj, BTC);

    /* MLP: ln_2 → c_fc → GELU → mlp.c_proj → residual */
    kern_layernorm_forward(lv, ln2, resid2, w->ln_2_w, w->ln_2_b, (int)BT, C, cfg->eps);
    tk_layernorm_stats(a->ln2_mean + l4 * BT, a->ln2_rstd + l4 * BT, resid2, (int)BT, C, cfg->eps);
    prof_lap(tr, TP_FWD_OTHER, &pm);
    kern_matmul_forward(lv, fch, ln2, w->c_fc_w, pan[KERN_C_FC], w->c_fc_b, (int)BT, C, 4 * C);
    prof_lap(tr, TP_FWD_MATMUL, &pm);
    kern_gelu_forward(lv, fch_gelu, fch, BTC * 4);
    prof_lap(tr, TP_FWD_OTHER, &pm);
    kern_matmul_forward(lv, a->proj, fch_gelu, w->mlp_proj_w, pan[KERN_MLP_PROJ], w->mlp_proj_b,
                        (int)BT, 4 * C, C);
    prof_lap(tr, TP_FWD_MATMUL, &pm);
    kern_residual_forward(lv, resid3, resid2, a->proj, BTC);
    prof_lap(tr, TP_FWD_OTHER, &pm);
}

float trainer_forward(Trainer *tr, const int *inputs, const int *targets) {
    Model *m = &tr->model;
    const Config *cfg = &m->cfg;
    const int B = tr->B, T = tr->T, C = cfg->C, V = cfg->V;
    const size_t BT = (size_t)B * T, BTC = BT * C;
    TrainActs *a = &tr->a;
    if (inputs != tr->inputs) memcpy(tr->inputs, inputs, BT * sizeof *inputs);

    ProfMark pm = prof_start(tr);
    encoder_forward(a->encoded, inputs, m->w.wte, m->w.wpe, B, T, C);
    prof_lap(tr, TP_FWD_OTHER, &pm);
    for (int l = 0; l < cfg->L; l++)
        block_forward(tr, l, l == 0 ? a->encoded : a->resid3 + (size_t)(l - 1) * BTC);
    /* ln_f and the tied lm_head, on every position */
    pm = prof_start(tr);
    const float *x = a->resid3 + (size_t)(cfg->L - 1) * BTC;
    kern_layernorm_forward(m->kern, a->lnf, x, m->w.ln_f_w, m->w.ln_f_b, (int)BT, C, cfg->eps);
    tk_layernorm_stats(a->lnf_mean, a->lnf_rstd, x, (int)BT, C, cfg->eps);
    prof_lap(tr, TP_FWD_OTHER, &pm);
    kern_matmul_transposed_forward(m->kern, a->logits, a->lnf, m->w.wte, m->fast.wte, (int)BT, C, V);
    prof_lap(tr, TP_FWD_MATMUL, &pm);
    if (!targets) return 0.0f;
    if (targets != tr->targets) memcpy(tr->targets, targets, BT * sizeof *targets);
    tk_crossentropy_forward(a->losses, a->probs, a->logits, targets, (int)BT, V);
    double sum = 0.0;
    for (size_t r = 0; r < BT; r++) sum += a->losses[r];
    prof_lap(tr, TP_FWD_OTHER, &pm);
    return (float)(sum / (double)BT);
}

/* ---- backward: the forward read bottom-up ------------------------------------------ */

static void block_backward(Trainer *tr, int l, const float *x) {
    const Model *m = &tr->model;
    const Config *cfg = &m->cfg;
    const BlockWeights *w = &m->w.h[l];
    const BlockPanels *bp = tr->bp ? &tr->bp[l] : NULL;
    const KernLevel lv = tr->lv;
    const int B = tr->B, T = tr->T, C = cfg->C, NH = cfg->NH, hs = C / NH;
    const size_t BT = (size_t)B * T, BTC = BT * C, l4 = (size_t)l;
    TrainActs *a = &tr->a;

    ProfMark pm = prof_start(tr);

    /* MLP, from the block output's gradient in dresid */
    tk_matmul_backward(lv, a->dfch, GRAD(tr, w->mlp_proj_w), GRAD(tr, w->mlp_proj_b), a->dresid,
                       a->fch_gelu + l4 * BTC * 4, w->mlp_proj_w, bp ? bp->mlp_proj_t : NULL,
                       (int)BT, 4 * C, C);
    prof_lap(tr, TP_MLP_PROJ, &pm);
    tk_gelu_backward(lv, a->dfch, a->fch + l4 * BTC * 4, a->fch_gelu + l4 * BTC * 4, a->dfch, BTC * 4);
    prof_lap(tr, TP_GELU, &pm);
    tk_matmul_backward(lv, a->dln, GRAD(tr, w->c_fc_w), GRAD(tr, w->c_fc_b), a->dfch,
                       a->ln2 + l4 * BTC, w->c_fc_w, bp ? bp->c_fc_t : NULL, (int)BT, C, 4 * C);
    prof_lap(tr, TP_C_FC, &pm);
    /* the residual passes dresid on unchanged; ln_2 adds its part */
    tk_layernorm_backward(lv, a->dresid, GRAD(tr, w->ln_2_w), GRAD(tr, w->ln_2_b), a->dln,
                          a->resid2 + l4 * BTC, w->ln_2_w, a->ln2_mean + l4 * BT,
                          a->ln2_rstd + l4 * BT, (int)BT, C);
    prof_lap(tr, TP_LAYERNORM, &pm);

    /* attention */
    tk_matmul_backward(lv, a->datty, GRAD(tr, w->attn_proj_w), GRAD(tr, w->attn_proj_b), a->dresid,
                       a->atty + l4 * BTC, w->attn_proj_w, bp ? bp->attn_proj_t : NULL, (int)BT, C,
                       C);
    prof_lap(tr, TP_ATTN_PROJ, &pm);
    tk_attention_backward(lv, a->dq, a->dk, a->dv, a->dpre, a->datty, a->q + l4 * BTC,
                          a->k + l4 * BTC, a->v + l4 * BTC, a->att + l4 * B * NH * T * T, B, T, NH,
                          hs, a->scratch, tr->nscratch);
    prof_lap(tr, TP_ATTENTION, &pm);
    OMP(omp parallel for schedule(static) if(BTC > 65536))
    for (size_t r = 0; r < BT; r++) { /* dq, dk, dv side by side, as c_attn wrote q, k, v */
        float *row = a->dqkv + r * 3 * C;
        memcpy(row, a->dq + r * C, (size_t)C * sizeof(float));
        memcpy(row + C, a->dk + r * C, (size_t)C * sizeof(float));
        memcpy(row + 2 * C, a->dv + r * C, (size_t)C * sizeof(float));
    }
    prof_lap(tr, TP_QKV_JOIN, &pm);
    tk_matmul_backward(lv, a->dln, GRAD(tr, w->c_attn_w), GRAD(tr, w->c_attn_b), a->dqkv,
                       a->ln1 + l4 * BTC, w->c_attn_w, bp ? bp->c_attn_t : NULL, (int)BT, C, 3 * C);
    prof_lap(tr, TP_C_ATTN, &pm);
    tk_layernorm_backward(lv, a->dresid, GRAD(tr, w->ln_1_w), GRAD(tr, w->ln_1_b), a->dln, x,
                          w->ln_1_w, a->ln1_mean + l4 * BT, a->ln1_rstd + l4 * BT, (int)BT, C);
    prof_lap(tr, TP_LAYERNORM, &pm);
}

void trainer_backward(Trainer *tr) {
    const Model *m = &tr->model;
    const Config *cfg = &m->cfg;
    const int B = tr->B, T = tr->T, C = cfg->C, V = cfg->V;
    const size_t BT = (size_t)B * T, BTC = BT * C;
    TrainActs *a = &tr->a;
    ProfMark pm = prof_start(tr);
    memset(tr->grads, 0, m->w.num_params * sizeof(float));
    prof_lap(tr, TP_ZERO_GRADS, &pm);

    /* the mean loss: each row weighs 1/(B·T) */
    tk_crossentropy_backward(a->dlogits, a->probs, tr->targets, 1.0f / (float)BT, (int)BT, V);
    prof_lap(tr, TP_XENT, &pm);
    /* lm_head, tied to wte */
    tk_matmul_transposed_backward(tr->lv, a->dln, GRAD(tr, m->w.wte), a->dlogits, a->lnf, m->w.wte,
                                  tr->panels ? tr->wte_p : NULL, (int)BT, C, V);
    prof_lap(tr, TP_LM_HEAD, &pm);
    /* ln_f: the first gradient of the residual stream */
    memset(a->dresid, 0, BTC * sizeof(float));
    tk_layernorm_backward(tr->lv, a->dresid, GRAD(tr, m->w.ln_f_w), GRAD(tr, m->w.ln_f_b), a->dln,
                          a->resid3 + (size_t)(cfg->L - 1) * BTC, m->w.ln_f_w, a->lnf_mean,
                          a->lnf_rstd, (int)BT, C);
    prof_lap(tr, TP_LAYERNORM, &pm);
    for (int l = cfg->L - 1; l >= 0; l--)
        block_backward(tr, l, l == 0 ? a->encoded : a->resid3 + (size_t)(l - 1) * BTC);
    /* token and position embeddings */
    pm = prof_start(tr);
    encoder_backward(GRAD(tr, m->w.wte), GRAD(tr, m->w.wpe), a->dresid, tr->inputs, B, T, C);
    prof_lap(tr, TP_ENCODER, &pm);
}

/* ---- the update ------------------------------------------------------------------------ */

enum { NORM_CHUNK = 16384 }; /* floats per partial sum of the gradient norm */

double trainer_grad_norm(const Trainer *tr) {
    const size_t n = tr->model.w.num_params, nc = (n + NORM_CHUNK - 1) / NORM_CHUNK;
    double *part = malloc(nc * sizeof *part), total = 0.0;
    if (!part) { /* one chunk after the other: the same sums, in the same order */
        for (size_t j = 0; j < nc; j++) {
            double s = 0.0;
            for (size_t i = j * NORM_CHUNK; i < n && i < (j + 1) * NORM_CHUNK; i++)
                s += (double)tr->grads[i] * tr->grads[i];
            total += s;
        }
        return sqrt(total);
    }
    OMP(omp parallel for schedule(static) if(nc > 1))
    for (long j = 0; j < (long)nc; j++) {
        double s = 0.0;
        for (size_t i = (size_t)j * NORM_CHUNK; i < n && i < ((size_t)j + 1) * NORM_CHUNK; i++)
            s += (double)tr->grads[i] * tr->grads[i];
        part[j] = s;
    }
    for (size_t j = 0; j < nc; j++) total += part[j];
    free(part);
    return sqrt(total);
}

/* Multiply every gradient by f. */
void trainer_clip_grads(Trainer *tr, float clip, double norm) {
    if (!(clip > 0.0f && norm > clip)) return;
    const float f = (float)(clip / norm);
    const long n = (long)tr->model.w.num_params;
    OMP(omp parallel for schedule(static) if(n > 65536))
    for (long i = 0; i < n; i++) tr->grads[i] *= f;
}

void trainer_update(Trainer *tr, const TrainOptions *o, float lr, int t) {
    const float bc1 = (float)(1.0 - pow(o->beta1, t)), bc2 = (float)(1.0 - pow(o->beta2, t));
    ProfMark pm = prof_start(tr);
    /* tensor by tensor: the 2-D ones decay, biases and layernorm weights do not */
    for (int i = 0; i < tr->nspecs; i++) {
        const TensorSpec *sp = &tr->specs[i];
        const size_t off = sp->offset;
        tk_adamw_update(tr->lv, tr->model.w.blob + off, tr->grads + off, tr->m + off, tr->v + off,
                        sp->numel, lr, o->beta1, o->beta2, o->eps,
                        sp->ndim == 2 ? o->weight_decay : 0.0f, bc1, bc2);
    }
    prof_lap(tr, TP_ADAMW, &pm);
    trainer_weights_changed(tr);
    prof_lap(tr, TP_PANELS, &pm);
}

int trainer_set_batch(Trainer *tr, int B, int T) {
    const long long N = tr->model.cfg.N, cap = (long long)tr->B0 * N;
    if (T < 2 || T > N || B < 1 || (long long)B * T > cap || (long long)B * T * T > cap * N)
        return TRAIN_BAD;
    tr->B = B; /* every stride of the forward and backward follows tr->B and tr->T */
    tr->T = T;
    return 0;
}

void trainer_weights_changed(Trainer *tr) {
    model_refresh_panels(&tr->model);
    if (tr->panels) pack_backward_panels(tr, 0);
}

/* ---- evaluation ---------------------------------------------------------------------- */

float trainer_eval(Trainer *tr, const Corpus *c, size_t windows, int bos) {
    const int B = tr->B, T = tr->T;
    const size_t all = corpus_val_windows(c, T), nw = windows < all ? windows : all;
    double sum = 0.0;
    for (size_t w0 = 0; w0 < nw; w0 += (size_t)B) {
        const int nb = nw - w0 < (size_t)B ? (int)(nw - w0) : B;
        for (int b = 0; b < B; b++) /* a short last batch repeats its first window */
            corpus_val_window(c, w0 + (size_t)(b < nb ? b : 0), T, bos, tr->inputs + (size_t)b * T,
                              tr->targets + (size_t)b * T);
        trainer_forward(tr, tr->inputs, tr->targets);
        for (size_t r = 0; r < (size_t)nb * T; r++) sum += tr->a.losses[r];
    }
    return nw ? (float)(sum / ((double)nw * T)) : NAN;
}

/* ---- the loop ---------------------------------------------------------------------------- */

static int log_append(TrainLog *log, const TrainLogRow *row) {
    if (log->n == log->cap) {
        const int cap = log->cap ? 2 * log->cap : 256;
        TrainLogRow *r = realloc(log->rows, (size_t)cap * sizeof *r);
        if (!r) return TRAIN_NOMEM;
        log->rows = r;
        log->cap = cap;
    }
    log->rows[log->n++] = *row;
    return 0;
}

void train_log_free(TrainLog *log) {
    free(log->rows);
    memset(log, 0, sizeof *log);
}

/* Forward, backward and clip on the batch of step s (at its phase's length, then the
 * full context again); the update only when the loss and the gradient are finite. */
static int train_step(Trainer *tr, const Corpus *c, const TrainOptions *o, int s, TrainLogRow *row) {
    const CorpusMix mix = train_mix(o, s, tr->model.cfg.N);
    if (trainer_set_batch(tr, mix.B, mix.T)) return TRAIN_BAD;
    corpus_batch(c, o->seed, s, &mix, tr->inputs, tr->targets, NULL);
    row->step = s + 1;
    row->train_loss = trainer_forward(tr, tr->inputs, tr->targets);
    row->val_loss = row->grad_norm = row->induction = row->prev_token = row->sink = NAN;
    int rc = isfinite(row->train_loss) ? 0 : TRAIN_NONFINITE;
    double norm = 0.0;
    if (!rc) {
        trainer_backward(tr);
        norm = trainer_grad_norm(tr);
        row->grad_norm = (float)norm;
        if (!isfinite(norm)) rc = TRAIN_NONFINITE;
    }
    trainer_set_batch(tr, tr->B0, tr->model.cfg.N);
    if (rc) return rc;
    trainer_clip_grads(tr, o->clip, norm);
    row->lr = train_lr(o, s);
    trainer_update(tr, o, row->lr, s + 1);
    return 0;
}

/* A checkpoint, counted in ctl->saved. 0 or TRAIN_IO. */
static int save(const Trainer *tr, const TrainOptions *o, const TrainLog *log,
                const TrainLoopCtl *ctl, char *err, size_t errsize) {
    const int rc = train_checkpoint_save(tr, o, log, ctl->checkpoint, err, errsize);
    if (rc == 0 && ctl->saved) (*ctl->saved)++;
    return rc;
}

int train_loop(Trainer *tr, const Corpus *c, const TrainOptions *o, TrainLog *log,
               const TrainLoopCtl *ctl, int *bad_step, char *err, size_t errsize) {
    const int start = log->n ? log->rows[log->n - 1].step : 0;
    const double t0 = now_seconds(), before = log->n ? log->rows[log->n - 1].seconds : 0.0;
    const size_t all = corpus_val_windows(c, tr->T);
    for (int s = start; s < o->steps; s++) {
        TrainLogRow row;
        const double ts = now_seconds();
        int rc = train_step(tr, c, o, s, &row);
        if (rc == TRAIN_BAD) {
            const CorpusMix m = train_mix(o, s, tr->model.cfg.N);
            snprintf(err, errsize, "step %d: %d sequences of %d tokens do not fit the buffers for %d of %d",
                     s + 1, m.B, m.T, tr->B0, tr->model.cfg.N);
            return TRAIN_BAD;
        }
        if (rc == TRAIN_NONFINITE) {
            *bad_step = s + 1;
            /* the parameters are still those of step s: a good checkpoint */
            if (ctl->checkpoint && save(tr, o, log, ctl, err, errsize)) return TRAIN_IO;
            return TRAIN_NONFINITE;
        }
        const CorpusMix mix = train_mix(o, s, tr->model.cfg.N);
        row.tokens_per_s = (float)((double)mix.B * mix.T / (now_seconds() - ts));
        if ((o->eval_every > 0 && (s + 1) % o->eval_every == 0) || s + 1 == o->steps)
            row.val_loss = trainer_eval(tr, c, all, o->bos);
        if (o->heads_every > 0 && ((s + 1) % o->heads_every == 0 || s + 1 == o->steps))
            trainer_head_scores(tr, c, o, train_mix(o, s, tr->model.cfg.N).T, &row.induction,
                                &row.prev_token, &row.sink);
        row.seconds = before + (now_seconds() - t0);
        if (log_append(log, &row)) return TRAIN_NOMEM;
        if (ctl->progress) ctl->progress(ctl->user, &row, o->steps);
        const int stop = ctl->stop && *ctl->stop;
        /* the last step is saved too: a stop while the folder is written loses nothing */
        const int due = (ctl->checkpoint_every > 0 && (s + 1) % ctl->checkpoint_every == 0) ||
                        s + 1 == o->steps;
        if (ctl->checkpoint && (stop || due) &&
            save(tr, o, log, ctl, err, errsize))
            return TRAIN_IO;
        if (stop) return TRAIN_STOPPED;
    }
    return TRAIN_OK;
}
