/* check_train.c — the trainer (train.h) and `kvscope train`:
 *   - the training forward gives the engine's logits, bit for bit;
 *   - the whole model's gradient against central differences of a double reference;
 *   - one batch over-fitted below a loss of 0.05; weight decay on the 2-D tensors only;
 *   - 1 and 2 threads, and a run resumed from a checkpoint, give the same bytes;
 *   - the command: its files, Ctrl-C, --resume, --grads-out, and bad input. */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "corpus.h"
#include "generate.h"
#include "outdir.h"
#include "ref_gpt2.h"
#include "rng.h"
#include "safetensors.h"
#include "testutil.h"
#include "train.h"

static void random_tokens(int *t, size_t n, uint64_t seed, int V) {
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) t[i] = (int)(rng_next(&s) % (uint64_t)V);
}

/* Every weight drawn again at a scale where the model is far from linear. */
static void shake_weights(Trainer *tr, uint64_t seed) {
    uint64_t s = seed;
    for (int i = 0; i < tr->nspecs; i++) {
        const TensorSpec *sp = &tr->specs[i];
        const int is_ln_w = strstr(sp->name, "ln_") && strstr(sp->name, ".weight");
        float *p = tr->model.w.blob + sp->offset;
        for (size_t j = 0; j < sp->numel; j++)
            p[j] = (float)((is_ln_w ? 1.0 : 0.0) + (sp->ndim == 2 ? 0.3 : 0.1) * rng_normal(&s));
    }
    trainer_weights_changed(tr);
}

/* ---- the forward is the engine's ------------------------------------------------------- */

START_TEST(test_forward_equals_engine) {
    Config cfg = tiny_config(2, 4, 32, 24, 256);
    Trainer tr;
    ck_assert_int_eq(trainer_init(&tr, &cfg, 2, 5), 0);
    shake_weights(&tr, 6);
    int in[48];
    random_tokens(in, 48, 7, 256);
    trainer_forward(&tr, in, NULL);
    Generator g;
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 24; t++) {
            ck_assert_int_eq(generator_init(&g, &tr.model, GEN_CACHE), 0);
            ck_assert_int_eq(generator_prefill(&g, in + b * 24, t + 1, NULL), 0);
            const float *row = tr.a.logits + ((size_t)b * 24 + t) * 256;
            ck_assert_msg(memcmp(row, g.logits, 256 * sizeof(float)) == 0,
                          "sequence %d position %d: training logits differ from kvscope run's", b, t);
            generator_free(&g);
        }
    trainer_free(&tr);
}
END_TEST

/* ---- the model's gradient against finite differences -------------------------------------- */

/* The reference model (ref_gpt2.h) on the double blob w and a batch of B sequences of
 * cfg->N tokens with their targets. */
typedef struct { const Config *cfg; double *w; const int *in, *tg; int B; } RefModel;

/* The mean cross-entropy of the batch, in double. */
static double ref_loss(const void *p) {
    const RefModel *r = p;
    const int T = r->cfg->N, V = r->cfg->V;
    double *lg = malloc((size_t)T * V * sizeof *lg), total = 0;
    ck_assert_ptr_nonnull(lg);
    for (int b = 0; b < r->B; b++) {
        ck_assert_int_eq(ref_gpt2_logits(r->cfg, r->w, r->in + b * T, T, lg), 0);
        for (int t = 0; t < T; t++) {
            const double *row = lg + (size_t)t * V;
            double mx = -INFINITY, sum = 0;
            for (int v = 0; v < V; v++) mx = fmax(mx, row[v]);
            for (int v = 0; v < V; v++) sum += exp(row[v] - mx);
            total += log(sum) + mx - row[r->tg[b * T + t]];
        }
    }
    free(lg);
    return total / (r->B * T);
}

START_TEST(test_model_gradient_fd) {
    Config cfg = tiny_config(2, 2, 8, 6, 20);
    Trainer tr;
    ck_assert_int_eq(trainer_init(&tr, &cfg, 2, 11), 0);
    shake_weights(&tr, 12);
    int in[12], tg[12];
    random_tokens(in, 12, 13, 20);
    random_tokens(tg, 12, 14, 20);
    const float loss = trainer_forward(&tr, in, tg);
    trainer_backward(&tr);
    double *w = malloc(tr.model.w.num_params * sizeof *w);
    ck_assert_ptr_nonnull(w);
    for (size_t i = 0; i < tr.model.w.num_params; i++) w[i] = tr.model.w.blob[i];
    RefModel r = {&cfg, w, in, tg, 2};
    ck_assert_msg(fabs(ref_loss(&r) - loss) < 1e-5, "loss %.9g, reference %.9g", (double)loss, ref_loss(&r));
    uint64_t s = 15;
    for (int i = 0; i < tr.nspecs; i++) { /* a few entries of every tensor */
        const TensorSpec *sp = &tr.specs[i];
        const float *g = tr.grads + sp->offset;
        double scale = 1e-30, worst = 0;
        for (size_t j = 0; j < sp->numel; j++) scale = fmax(scale, fabs(g[j]));
        const size_t pick[5] = {0, sp->numel / 3, sp->numel - 1, rng_next(&s) % sp->numel,
                                rng_next(&s) % sp->numel};
        for (int k = 0; k < 5; k++) {
            double *x = w + sp->offset + pick[k], keep = *x, h = 1e-5;
            *x = keep + h;
            const double lp = ref_loss(&r);
            *x = keep - h;
            const double lm = ref_loss(&r);
            *x = keep;
            worst = fmax(worst, fabs(g[pick[k]] - (lp - lm) / (2 * h)));
        }
        ck_assert_msg(worst / scale <= 1e-3, "%s: worst relative difference %.3g", sp->name, worst / scale);
    }
    free(w);
    trainer_free(&tr);
}
END_TEST

/* ---- optimisation --------------------------------------------------------------------------- */

START_TEST(test_overfit_one_batch) {
    Config cfg = tiny_config(2, 2, 32, 16, 256);
    Trainer tr;
    ck_assert_int_eq(trainer_init(&tr, &cfg, 2, 21), 0);
    TrainOptions o = train_options_default();
    o.B = 2, o.steps = 150, o.lr = 1e-2f, o.warmup = 10, o.weight_decay = 0.0f;
    int in[32], tg[32];
    random_tokens(in, 32, 22, 256);
    random_tokens(tg, 32, 23, 256);
    float loss = 0;
    for (int s = 0; s < o.steps; s++) {
        loss = trainer_forward(&tr, in, tg);
        trainer_backward(&tr);
        trainer_update(&tr, &o, train_lr(&o, s), s + 1);
    }
    loss = trainer_forward(&tr, in, tg);
    ck_assert_msg(loss < 0.05f, "loss after %d steps on one batch: %.4f (from ln 256 = 5.545)", o.steps,
                  (double)loss);
    trainer_free(&tr);
}
END_TEST

/* The schedule against its closed form: linear warm-up lr·(s+1)/W, then
 * lr·(f + (1 − f)·½(1 + cos(π·(s − W)/(S − W − 1)))) down to lr·f at the last step, here
 * with S − W − 1 = 100 so that the quarter and half points are whole steps. Float
 * rounding: 1e-6 relative. */
START_TEST(test_lr_schedule) {
    TrainOptions o = train_options_default();
    o.lr = 3e-3f, o.warmup = 10, o.steps = 111, o.lr_final = 0.1f;
    const double lr = o.lr, f = o.lr_final, tol = 1e-6 * lr;
    ck_assert_double_eq_tol(train_lr(&o, 0), lr / 10, tol);
    ck_assert_double_eq_tol(train_lr(&o, 4), lr / 2, tol);
    ck_assert_double_eq_tol(train_lr(&o, 9), lr, tol);   /* the peak, at the warm-up's end */
    ck_assert_double_eq_tol(train_lr(&o, 10), lr, tol);  /* cos 0 */
    ck_assert_double_eq_tol(train_lr(&o, 35), lr * (f + (1 - f) * (0.5 + sqrt(2.0) / 4)), tol); /* π/4 */
    ck_assert_double_eq_tol(train_lr(&o, 60), lr * (f + (1 - f) / 2), tol);  /* π/2: halfway */
    ck_assert_double_eq_tol(train_lr(&o, 110), lr * f, tol);                 /* π: the floor */
    for (int s = 1; s < o.steps; s++) { /* up through the warm-up, then never up again */
        if (s < o.warmup) ck_assert_float_gt(train_lr(&o, s), train_lr(&o, s - 1));
        else ck_assert_float_le(train_lr(&o, s), train_lr(&o, s - 1));
    }
    o.warmup = 0, o.steps = 1; /* no warm-up and no decay: the rate itself */
    ck_assert_float_eq(train_lr(&o, 0), o.lr);
}
END_TEST

/* Clipping against its closed form: the norm, summed here in long double, becomes clip,
 * every gradient keeps its sign and its share (g·clip/norm, 1e-6 relative); at or under
 * the limit, or with clip 0, not one bit changes. */
START_TEST(test_clip_grads) {
    Config cfg = tiny_config(1, 2, 16, 8, 64);
    Trainer tr;
    ck_assert_int_eq(trainer_init(&tr, &cfg, 1, 3), 0);
    const size_t n = tr.model.w.num_params;
    float *g0 = malloc(n * sizeof *g0);
    ck_assert_ptr_nonnull(g0);
    long double ss = 0;
    for (size_t i = 0; i < n; i++) {
        g0[i] = tr.grads[i] = 1e-3f * (float)((long)(i * 7919 % 201) - 100);
        ss += (long double)g0[i] * g0[i];
    }
    const double norm = (double)sqrtl(ss);
    ck_assert_double_eq_tol(trainer_grad_norm(&tr), norm, 1e-12 * norm);
    const float limits[3] = {0.0f, (float)norm * 1.5f, nextafterf((float)norm, INFINITY)}; /* off; above; just above */
    for (int k = 0; k < 3; k++) {
        trainer_clip_grads(&tr, limits[k], trainer_grad_norm(&tr));
        ck_assert_msg(memcmp(tr.grads, g0, n * sizeof *g0) == 0, "clip %g changed the gradient", limits[k]);
    }
    const float clip = (float)(norm / 4);
    trainer_clip_grads(&tr, clip, trainer_grad_norm(&tr));
    long double after = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        after += (long double)tr.grads[i] * tr.grads[i];
        const double want = (double)g0[i] * clip / norm;
        worst = fmax(worst, fabs(tr.grads[i] - want) / fmax(fabs(want), 1e-30));
    }
    ck_assert_double_eq_tol((double)sqrtl(after), clip, 1e-6 * clip);
    ck_assert_msg(worst <= 1e-6, "worst relative error of a clipped gradient %.3g", worst);
    free(g0);
    trainer_free(&tr);
}
END_TEST

/* With zero gradients AdamW only decays: the 2-D tensors by (1 − lr·wd), nothing else. */
START_TEST(test_decay_2d_only) {
    Config cfg = tiny_config(1, 2, 16, 8, 256);
    Trainer tr;
    ck_assert_int_eq(trainer_init(&tr, &cfg, 1, 31), 0);
    shake_weights(&tr, 32);
    float *before = malloc(tr.model.w.num_params * sizeof *before);
    ck_assert_ptr_nonnull(before);
    memcpy(before, tr.model.w.blob, tr.model.w.num_params * sizeof *before);
    TrainOptions o = train_options_default();
    o.weight_decay = 0.5f;
    trainer_update(&tr, &o, 0.1f, 1);
    for (int i = 0; i < tr.nspecs; i++) {
        const TensorSpec *sp = &tr.specs[i];
        for (size_t j = 0; j < sp->numel; j++) {
            const float b = before[sp->offset + j], a = tr.model.w.blob[sp->offset + j];
            const float want = sp->ndim == 2 ? b - 0.1f * (0.0f + 0.5f * b) : b;
            ck_assert_msg(a == want, "%s[%zu]: %.9g, want %.9g", sp->name, j, (double)a, (double)want);
        }
    }
    free(before);
    trainer_free(&tr);
}
END_TEST

/* The initial spread: every matrix and embedding's sample standard deviation within 5 % of
 * std (c_proj: std/sqrt(2L)), mean near 0; biases 0, layernorm weights 1. */
START_TEST(test_init_std) {
    Config cfg = tiny_config(2, 2, 64, 64, 256);
    const double stds[2] = {0.02, 0.08};
    for (int k = 0; k < 2; k++) {
        Trainer tr;
        ck_assert_int_eq(trainer_init_std(&tr, &cfg, 1, 9, stds[k]), 0);
        for (int i = 0; i < tr.nspecs; i++) {
            const TensorSpec *sp = &tr.specs[i];
            const float *p = tr.model.w.blob + sp->offset;
            double s = 0.0, s2 = 0.0;
            for (size_t j = 0; j < sp->numel; j++) s += p[j], s2 += (double)p[j] * p[j];
            const double mean = s / sp->numel, sd = sqrt(s2 / sp->numel - mean * mean);
            if (sp->ndim == 1) {
                const double want = strstr(sp->name, "ln_") && strstr(sp->name, ".weight") ? 1.0 : 0.0;
                ck_assert_msg(mean == want && sd == 0.0, "%s: mean %g, want %g", sp->name, mean, want);
                continue;
            }
            const double want = strstr(sp->name, "c_proj") ? stds[k] / sqrt(2.0 * cfg.L) : stds[k];
            ck_assert_msg(fabs(sd - want) < 0.05 * want && fabs(mean) < 0.1 * want,
                          "%s: std %g mean %g, want std %g", sp->name, sd, mean, want);
        }
        trainer_free(&tr);
    }
}
END_TEST

/* The mix by step: the short phase (its length, its shares, periods up to half of it),
 * then the full context with the main shares; a share of B is rounded. */
START_TEST(test_mix_by_step) {
    TrainOptions o = train_options_default();
    o.B = 16, o.short_steps = 300, o.short_ctx = 64, o.short_B = 32, o.short_repeat_share = 1.0f;
    o.short_span_share = 0.25f, o.repeat_share = 0.6f, o.span_share = 0.5f;
    o.period_min = 8, o.period_max = 100, o.bos = 255;
    CorpusMix m = train_mix(&o, 0, 256);
    ck_assert_int_eq(m.B, 32);
    ck_assert_int_eq(m.T, 64);
    ck_assert_int_eq(m.nrep, 32);
    ck_assert_int_eq(m.nspan, 8);
    ck_assert_int_eq(m.period_min, 8);
    ck_assert_int_eq(m.period_max, 32); /* min(100, 64/2) */
    ck_assert_int_eq(m.bos, 255);
    ck_assert_int_eq(train_mix(&o, 299, 256).T, 64);
    m = train_mix(&o, 300, 256);
    ck_assert_int_eq(m.B, 16);
    ck_assert_int_eq(m.T, 256);
    ck_assert_int_eq(m.nrep, 10); /* round(0.6 · 16) = round(9.6) */
    ck_assert_int_eq(m.nspan, 5);
    ck_assert_int_eq(m.period_max, 100);
    o.short_steps = 0, o.repeat_share = 0.34f, o.B = 3; /* no short phase: the share alone */
    ck_assert_int_eq(train_mix(&o, 0, 256).nrep, 1);
}
END_TEST

/* ---- the same bytes: threads, resume ------------------------------------------------------- */

/* A small English-like corpus file: 200 KB of sentences from a word list. */
static void write_corpus(const char *path, size_t bytes) {
    static const char *const words[] = {"the", "lord", "said", "unto", "moses", "and", "god",
                                        "saw", "light", "that", "it", "was", "good", "of", "heaven",
                                        "earth", "in", "beginning", "created", "waters"};
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    uint64_t s = 99;
    size_t n = 0;
    while (n < bytes) {
        const char *w = words[rng_next(&s) % 20];
        n += (size_t)fprintf(f, "%s%s", w, rng_next(&s) % 9 == 0 ? ".\n" : " ");
    }
    ck_assert_int_eq(fclose(f), 0);
}

static Corpus load_corpus(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/corpus.txt", dir);
    write_corpus(path, 200000);
    Corpus c;
    char err[512];
    ck_assert_int_eq(corpus_load(&c, path, err, sizeof err), 0);
    return c;
}

static void train_steps(Trainer *tr, const Corpus *c, TrainOptions *o, TrainLog *log, int steps) {
    o->steps = steps;
    const TrainLoopCtl ctl = {0};
    int bad = 0;
    char err[512];
    ck_assert_int_eq(train_loop(tr, c, o, log, &ctl, &bad, err, sizeof err), 0);
}

static TrainOptions small_options(void) {
    TrainOptions o = train_options_default();
    o.B = 3, o.warmup = 2, o.eval_every = 0, o.repeat_share = 0.34f, o.seed = 41;
    o.period_min = 2, o.period_max = 16, o.short_steps = 2, o.short_ctx = 16, o.short_B = 6;
    o.heads_every = 2;
    /* the copying curriculum from step 3 (0-based): resume and threads cover it */
    o.copy_from = 3, o.alpha_share = 1.0f, o.alpha_min = 2, o.alpha_max = 4;
    o.embed_share = 0.34f, o.embed_min = 2, o.embed_max = 12;
    return o;
}

/* 1 if the n bytes at s occur in buf (len). */
static int occurs(const unsigned char *buf, size_t len, const char *s, size_t n) {
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(buf + i, s, n) == 0) return 1;
    return 0;
}

/* 1 if x[0..n-1] (byte values) occur in the training split. */
static int is_text(const Corpus *c, const int *x, int n) {
    char s[512];
    for (int i = 0; i < n; i++) s[i] = (char)x[i];
    return occurs(c->train, c->ntrain, s, (size_t)n);
}

/* A batch: position 0 is the start byte; plain sequences are training text; the last
 * nrep repeat a segment with their own period in [min, max], random printable bytes or
 * (the last nspan) a span of the text; the targets are the inputs shifted. */
START_TEST(test_batch_layout) {
    char dir[64];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    Corpus c = load_corpus(dir);
    enum { B = 8, T = 64 };
    int in[B * T], tg[B * T], in2[B * T], tg2[B * T], per[B], per2[B];
    for (int bos = -1; bos <= 255; bos += 256) {
        const CorpusMix mix = {.B = B, .T = T, .bos = bos, .nrep = 5, .nspan = 2, .period_min = 3,
                               .period_max = 20};
        const int s0 = bos >= 0;
        corpus_batch(&c, 7, 3, &mix, in, tg, per);
        corpus_batch(&c, 7, 3, &mix, in2, tg2, per2);
        ck_assert_int_eq(memcmp(in, in2, sizeof in), 0); /* the seed and the step decide it */
        ck_assert_int_eq(memcmp(tg, tg2, sizeof tg), 0);
        int distinct = 0;
        for (int b = 0; b < B; b++) {
            const int *x = in + b * T, *y = tg + b * T, p = per[b];
            if (bos >= 0) ck_assert_int_eq(x[0], bos);
            for (int i = 0; i + 1 < T; i++) ck_assert_int_eq(y[i], x[i + 1]);
            if (b < B - 5) { /* plain text */
                ck_assert_int_eq(p, 0);
                ck_assert_msg(is_text(&c, x + s0, T - s0), "sequence %d is not text", b);
                continue;
            }
            ck_assert_msg(p >= 3 && p <= 20, "sequence %d: period %d outside 3..20", b, p);
            distinct += b > B - 5 && p != per[b - 1];
            for (int i = s0 + p; i < T; i++) ck_assert_int_eq(x[i], x[i - p]);
            ck_assert_int_eq(y[T - 1], x[T - p]); /* the target past the end continues it */
            /* the period is the segment's length, not a shorter one */
            int shorter = 1;
            for (int i = s0 + p - 1; i < T && shorter; i++) shorter = x[i] == x[i - p + 1];
            ck_assert_msg(!shorter, "sequence %d repeats at %d, shorter than its period %d", b, p - 1, p);
            if (b >= B - 2) ck_assert_msg(is_text(&c, x + s0, p), "sequence %d: segment not text", b);
            else
                for (int i = s0; i < s0 + p; i++)
                    ck_assert(x[i] >= CORPUS_RANDOM_LO && x[i] <= CORPUS_RANDOM_HI);
        }
        ck_assert_msg(distinct > 0, "every repeat has the same period %d", per[B - 1]);
    }
    const CorpusMix mix = {.B = B, .T = T, .bos = -1, .nrep = 5, .nspan = 2, .period_min = 3,
                           .period_max = 20};
    corpus_batch(&c, 7, 4, &mix, in2, tg2, NULL);
    ck_assert_int_ne(memcmp(in, in2, sizeof in), 0);
    /* validation windows: the same targets with and without the start byte */
    corpus_val_window(&c, 2, T, -1, in, tg);
    corpus_val_window(&c, 2, T, 255, in2, tg2);
    ck_assert_int_eq(memcmp(tg, tg2, sizeof(int) * T), 0);
    ck_assert_int_eq(in[0], c.val[2 * T]);
    ck_assert_int_eq(in2[0], 255);
    ck_assert_int_eq(memcmp(in + 1, in2 + 1, sizeof(int) * (T - 1)), 0);
    ck_assert_int_eq(tg[T - 1], c.val[3 * T]);
    ck_assert_uint_eq(corpus_count_byte(&c, 255), 0);
    ck_assert_uint_gt(corpus_count_byte(&c, 'e'), 1000);
    corpus_free(&c);
    remove_tree(dir);
}
END_TEST

/* The copying curriculum's kinds: small-alphabet repeats (periodic, printable, at most
 * alpha_max distinct bytes in a segment), and embedded repeats: text whose span of q
 * bytes (q in [min, max]) comes again right after it, the text going on after the second
 * copy (the content without the second copy is training text). */
START_TEST(test_batch_copying_kinds) {
    char dir[64];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    Corpus c = load_corpus(dir);
    enum { B = 10, T = 64 };
    int in[B * T], tg[B * T], per[B];
    const CorpusMix mix = {.B = B, .T = T, .bos = 255, .nrep = 5, .nspan = 1, .period_min = 6,
                           .period_max = 20, .nalpha = 3, .alpha_min = 2, .alpha_max = 3,
                           .nembed = 3, .embed_min = 5, .embed_max = 25};
    for (int step = 0; step < 8; step++) {
        corpus_batch(&c, 9, step, &mix, in, tg, per);
        for (int b = 0; b < B; b++) {
            const int *x = in + b * T, p = per[b];
            ck_assert_int_eq(x[0], 255);
            for (int i = 0; i + 1 < T; i++) ck_assert_int_eq(tg[b * T + i], x[i + 1]);
            if (b < 2) { /* plain text */
                ck_assert_int_eq(p, 0);
                ck_assert(is_text(&c, x + 1, T - 1));
            } else if (b < 5) { /* embedded: find the span */
                const int q = -p, n = T - 1;
                ck_assert_msg(q >= 5 && q <= 25, "sequence %d: span %d", b, q);
                int found = 0;
                for (int a = 0; a + 2 * q <= n && !found; a++) {
                    int same = 1;
                    for (int k = 0; k < q && same; k++) same = x[1 + a + q + k] == x[1 + a + k];
                    if (!same) continue;
                    int y[T];
                    int m = 0;
                    for (int j = 0; j < n; j++)
                        if (j < a + q || j >= a + 2 * q) y[m++] = x[1 + j];
                    found = is_text(&c, y, m);
                }
                ck_assert_msg(found, "step %d sequence %d: no span of %d repeated once in text", step, b, q);
            } else if (b < 8) { /* small alphabet */
                ck_assert(p >= 6 && p <= 20);
                int seen[256] = {0}, distinct = 0;
                for (int i = 1; i < T; i++) {
                    ck_assert(x[i] >= CORPUS_RANDOM_LO && x[i] <= CORPUS_RANDOM_HI);
                    if (i >= 1 + p) ck_assert_int_eq(x[i], x[i - p]);
                    distinct += !seen[x[i]]++;
                }
                ck_assert_msg(distinct <= 3, "sequence %d: %d symbols", b, distinct);
            } else if (b < 9) { /* full printable repeats */
                for (int i = 1 + p; i < T; i++) ck_assert_int_eq(x[i], x[i - p]);
            } else {
                ck_assert(is_text(&c, x + 1, p));
            }
        }
    }
    corpus_free(&c);
    remove_tree(dir);
}
END_TEST

/* The curriculum starts at copy_from, never in the short phase; its embedded repeats take
 * only sequences that do not repeat. */
START_TEST(test_mix_copy_from) {
    TrainOptions o = train_options_default();
    o.B = 16, o.repeat_share = 0.375f, o.span_share = 0.5f, o.alpha_share = 0.67f;
    o.embed_share = 0.3f, o.copy_from = 100;
    CorpusMix m = train_mix(&o, 99, 256);
    ck_assert_int_eq(m.nalpha, 0);
    ck_assert_int_eq(m.nembed, 0);
    m = train_mix(&o, 100, 256);
    ck_assert_int_eq(m.nrep, 6);
    ck_assert_int_eq(m.nspan, 3);
    ck_assert_int_eq(m.nalpha, 2); /* round(0.67 · 3) */
    ck_assert_int_eq(m.nembed, 5); /* round(0.3 · 16) */
    o.embed_share = 0.9f;
    ck_assert_int_eq(train_mix(&o, 100, 256).nembed, 10); /* 16 − 6 */
    o.short_steps = 200, o.short_ctx = 64, o.short_B = 32;
    ck_assert_int_eq(train_mix(&o, 150, 256).nembed, 0);
    ck_assert_int_eq(train_mix(&o, 200, 256).nembed, 10);
}
END_TEST

/* A batch of B2 sequences of T0 < N tokens in a trainer made for B of N gives the loss
 * and gradient of the same weights in a model of context T0 with batch B2 (wpe's first
 * T0 rows; its later rows get none). */
START_TEST(test_short_ctx_same_as_small_model) {
    enum { N = 40, T0 = 24, B = 3, B2 = 5 }; /* B2·T0 = B·N */
    Config big = tiny_config(2, 2, 32, N, 256), small = tiny_config(2, 2, 32, T0, 256);
    Trainer a, b;
    ck_assert_int_eq(trainer_init(&a, &big, B, 5), 0);
    ck_assert_int_eq(trainer_init(&b, &small, B2, 5), 0);
    shake_weights(&a, 9);
    for (int i = 0; i < a.nspecs; i++) { /* b's weights: a's, wpe cut to T0 rows */
        const size_t n = strcmp(a.specs[i].name, "wpe.weight") == 0 ? (size_t)T0 * 32 : a.specs[i].numel;
        memcpy(b.model.w.blob + b.specs[i].offset, a.model.w.blob + a.specs[i].offset, n * sizeof(float));
    }
    trainer_weights_changed(&b);
    int in[B2 * T0], tg[B2 * T0];
    random_tokens(in, B2 * T0, 3, 256);
    random_tokens(tg, B2 * T0, 4, 256);
    ck_assert_int_eq(trainer_set_batch(&a, B, N + 1), TRAIN_BAD);
    ck_assert_int_eq(trainer_set_batch(&a, B2 + 1, T0), TRAIN_BAD); /* 144 tokens > 120 */
    ck_assert_int_eq(trainer_set_batch(&a, B2, T0), 0);
    const float la = trainer_forward(&a, in, tg), lb = trainer_forward(&b, in, tg);
    trainer_backward(&a);
    trainer_backward(&b);
    ck_assert_msg(fabsf(la - lb) <= 1e-6f * fabsf(lb), "loss %.9g vs %.9g", (double)la, (double)lb);
    double worst = 0.0;
    for (int i = 0; i < a.nspecs; i++) {
        const float *ga = a.grads + a.specs[i].offset, *gb = b.grads + b.specs[i].offset;
        for (size_t j = 0; j < a.specs[i].numel; j++) {
            const float want = j < b.specs[i].numel ? gb[j] : 0.0f; /* wpe rows T0.. : none */
            worst = fmax(worst, fabs((double)ga[j] - want) / (1e-6 + fabs((double)want)));
        }
    }
    ck_assert_msg(worst <= 1e-5, "worst relative gradient difference %g", worst);
    trainer_free(&a), trainer_free(&b);
}
END_TEST

/* With c_attn zero every head attends evenly (1/(i+1) on each of i+1 keys), so each
 * score has a closed form: a check of which weights trainer_head_scores reads. */
START_TEST(test_head_scores_uniform) {
    char dir[64];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    Corpus c = load_corpus(dir);
    enum { N = 40, P = 7 };
    Config cfg = tiny_config(2, 2, 32, N, 256);
    Trainer tr;
    ck_assert_int_eq(trainer_init(&tr, &cfg, 3, 5), 0);
    for (int i = 0; i < tr.nspecs; i++)
        if (strstr(tr.specs[i].name, "attn.c_attn"))
            memset(tr.model.w.blob + tr.specs[i].offset, 0, tr.specs[i].numel * sizeof(float));
    trainer_weights_changed(&tr);
    TrainOptions o = small_options();
    o.bos = 255, o.period_min = o.period_max = P;
    float ind, prev, sink;
    trainer_head_scores(&tr, &c, &o, N, &ind, &prev, &sink);
    double want_ind = 0, lo = 0, hi = 0, want_sink = 0;
    for (int i = 1 + P; i < N; i++) want_ind += 1.0 / (i + 1) / (N - 1 - P);
    for (int i = 2; i < N / 2; i++) lo += 1.0 / (i + 1) / (N / 2 - 2);
    for (int i = N / 2; i < N; i++) hi += 1.0 / (i + 1) / (N - N / 2);
    for (int i = 1; i < N; i++) want_sink += 1.0 / (i + 1) / (N - 1);
    ck_assert_double_eq_tol(ind, want_ind, 1e-5);
    ck_assert_double_eq_tol(prev, fmin(lo, hi), 1e-5);
    ck_assert_double_eq_tol(sink, want_sink, 1e-5);
    ck_assert_int_eq(tr.T, N);
    trainer_free(&tr);
    corpus_free(&c);
    remove_tree(dir);
}
END_TEST

START_TEST(test_threads_same_bytes) {
#ifndef _OPENMP
    TEST_SKIPPED("1 vs 2 threads (built without OpenMP: make OMP=1 test)");
#else
    char dir[64];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    Corpus c = load_corpus(dir);
    Config cfg = tiny_config(2, 2, 32, 40, 256);
    float *blob[2];
    for (int k = 0; k < 2; k++) {
        omp_set_num_threads(k + 1);
        Trainer tr;
        ck_assert_int_eq(trainer_init(&tr, &cfg, 3, 41), 0);
        TrainOptions o = small_options();
        o.steps = 4;
        TrainLog log = {0};
        train_steps(&tr, &c, &o, &log, 4);
        blob[k] = malloc(3 * tr.model.w.num_params * sizeof(float));
        ck_assert_ptr_nonnull(blob[k]);
        memcpy(blob[k], tr.model.w.blob, tr.model.w.num_params * sizeof(float));
        memcpy(blob[k] + tr.model.w.num_params, tr.m, tr.model.w.num_params * sizeof(float));
        memcpy(blob[k] + 2 * tr.model.w.num_params, tr.v, tr.model.w.num_params * sizeof(float));
        if (k) ck_assert_msg(memcmp(blob[0], blob[1], 3 * tr.model.w.num_params * sizeof(float)) == 0,
                             "parameters or AdamW moments differ between 1 and 2 threads");
        train_log_free(&log);
        trainer_free(&tr);
    }
    free(blob[0]), free(blob[1]);
    corpus_free(&c);
    remove_tree(dir);
#endif
}
END_TEST

START_TEST(test_resume_same_bytes) {
    char dir[64], ckpt[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(ckpt, sizeof ckpt, "%s/run.ckpt", dir);
    Corpus c = load_corpus(dir);
    Config cfg = tiny_config(2, 2, 32, 40, 256);
    TrainOptions o = small_options();
    Trainer a, b;
    TrainLog la = {0}, lb = {0};
    char err[512];
    ck_assert_int_eq(trainer_init(&a, &cfg, 3, o.seed), 0);
    train_steps(&a, &c, &o, &la, 5); /* straight through */
    ck_assert_int_eq(trainer_init(&b, &cfg, 3, o.seed), 0);
    train_steps(&b, &c, &o, &lb, 2);
    ck_assert_int_eq(train_checkpoint_save(&b, &o, &lb, ckpt, err, sizeof err), 0);
    trainer_free(&b);
    train_log_free(&lb);
    ck_assert_int_eq(trainer_init(&b, &cfg, 3, o.seed), 0);
    ck_assert_int_eq(train_checkpoint_load(&b, &o, &lb, ckpt, err, sizeof err), 0);
    ck_assert_int_eq(lb.n, 2);
    train_steps(&b, &c, &o, &lb, 5);
    ck_assert_msg(memcmp(a.model.w.blob, b.model.w.blob, a.model.w.num_params * sizeof(float)) == 0,
                  "2 steps + checkpoint + 3 steps differ from 5 steps");
    for (int i = 0; i < 5; i++)
        ck_assert_msg(memcmp(&la.rows[i].train_loss, &lb.rows[i].train_loss, sizeof(float)) == 0,
                      "step %d: loss %.9g vs %.9g", i + 1, (double)la.rows[i].train_loss,
                      (double)lb.rows[i].train_loss);
    /* a checkpoint of another shape, batch or seed is refused, naming the field */
    Trainer d;
    Config other = cfg;
    other.L = 1;
    ck_assert_int_eq(trainer_init(&d, &other, 3, o.seed), 0);
    ck_assert_int_eq(train_checkpoint_load(&d, &o, &lb, ckpt, err, sizeof err), TRAIN_BAD);
    ck_assert_msg(strstr(err, "--layers 2, this run has 1") != NULL, "message: %s", err);
    trainer_free(&d);
    TrainOptions o2 = o;
    o2.seed = 5;
    ck_assert_int_eq(trainer_init(&d, &cfg, 3, o.seed), 0);
    ck_assert_int_eq(train_checkpoint_load(&d, &o2, &lb, ckpt, err, sizeof err), TRAIN_BAD);
    ck_assert_msg(strstr(err, "--seed 41") != NULL, "message: %s", err);
    trainer_free(&d);
    /* a byte changed anywhere (a weight, a moment, the log): the checksum refuses it */
    o.steps = 2; /* the options the checkpoint was saved with */
    size_t len = 0;
    char *bytes = read_file(ckpt, &len);
    ck_assert_ptr_nonnull(bytes);
    const size_t at[] = {200, len / 3, len - 20};
    for (size_t i = 0; i < 3; i++) {
        bytes[at[i]] ^= 0x10;
        FILE *f = fopen(ckpt, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
        ck_assert_int_eq(fclose(f), 0);
        bytes[at[i]] ^= 0x10;
        ck_assert_int_eq(trainer_init(&d, &cfg, 3, o.seed), 0);
        ck_assert_int_eq(train_checkpoint_load(&d, &o, &lb, ckpt, err, sizeof err), TRAIN_BAD);
        ck_assert_msg(strstr(err, "checksum mismatch") != NULL, "byte %zu: %s", at[i], err);
        trainer_free(&d);
    }
    FILE *f = fopen(ckpt, "wb"); /* as written: read again */
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    free(bytes);
    ck_assert_int_eq(trainer_init(&d, &cfg, 3, o.seed), 0);
    ck_assert_int_eq(train_checkpoint_load(&d, &o, &lb, ckpt, err, sizeof err), 0);
    /* whose run: this one's, or the first option that differs */
    int steps = 0;
    ck_assert_int_eq(train_checkpoint_owner(ckpt, &cfg, 3, &o, &steps, err, sizeof err), 0);
    ck_assert_int_eq(steps, 2);
    ck_assert_int_eq(train_checkpoint_owner(ckpt, &cfg, 3, &o2, &steps, err, sizeof err),
                     TRAIN_OTHER_RUN);
    ck_assert_msg(strstr(err, "--seed 41, this run has 5") != NULL, "message: %s", err);
    /* a flipped byte in the header's options (--lr, at 56 + 8 int32s: magic, shape, rows,
     * steps, params, then the run block) is damage, not another run: checked by the sum first */
    bytes = read_file(ckpt, &len);
    ck_assert_ptr_nonnull(bytes);
    bytes[56 + 32 + 1] ^= 0x01;
    f = fopen(ckpt, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(train_checkpoint_owner(ckpt, &cfg, 3, &o, &steps, err, sizeof err), TRAIN_BAD);
    ck_assert_msg(strstr(err, "checksum mismatch") && !strstr(err, "--lr"), "message: %s", err);
    trainer_free(&d);
    ck_assert_int_eq(trainer_init(&d, &cfg, 3, o.seed), 0);
    ck_assert_int_eq(train_checkpoint_load(&d, &o, &lb, ckpt, err, sizeof err), TRAIN_BAD);
    ck_assert_msg(strstr(err, "checksum mismatch") && !strstr(err, "another run"), "message: %s", err);
    bytes[56 + 32 + 1] ^= 0x01;
    f = fopen(ckpt, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    free(bytes);
    /* a truncated file is refused before anything is read */
    ck_assert_int_eq(truncate(ckpt, 200), 0);
    ck_assert_int_eq(train_checkpoint_load(&d, &o, &lb, ckpt, err, sizeof err), TRAIN_BAD);
    ck_assert_msg(strstr(err, "does not match its header") != NULL, "message: %s", err);
    trainer_free(&d);
    trainer_free(&a), trainer_free(&b);
    train_log_free(&la), train_log_free(&lb);
    corpus_free(&c);
    remove_tree(dir);
}
END_TEST

/* ---- the command ----------------------------------------------------------------------------- */

/* A tiny run's arguments, into args (NULL-terminated), with corpus and out. */
static void tiny_args(const char **args, const char *corpus, const char *out, const char *steps) {
    const char *a[] = {"train", "--corpus", corpus, "--out", out, "--layers", "2", "--heads", "2",
                       "--dim", "32", "--ctx", "32", "--batch", "4", "--steps", steps, "--warmup",
                       "2", "--eval-every", "3", "--samples", "8", "--seed", "3", "--repeat-share",
                       "0.25", "--period-min", "2", "--period-max", "16", "--short-steps", "3",
                       "--short-ctx", "16", "--short-batch", "8", "--heads-every", "2", "--quiet",
                       NULL};
    memcpy(args, a, sizeof a);
}

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

START_TEST(test_cli_outputs) {
    char dir[64], corpus[128], out[2][128], f[2][160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    write_corpus(corpus, 200000);
    for (int k = 0; k < 2; k++) {
        snprintf(out[k], sizeof out[k], "%s/m%d", dir, k);
        const char *args[64];
        tiny_args(args, corpus, out[k], "6");
        int n = 0;
        while (args[n]) n++;
        args[n++] = "--threads", args[n++] = k ? "2" : "1", args[n] = NULL;
        ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
        snprintf(f[k], sizeof f[k], "%s/model.safetensors", out[k]);
    }
    ck_assert_msg(files_equal(f[0], f[1]), "model.safetensors differs between 1 and 2 threads");
    static const char *const names[] = {"config.json", "train_log.csv", "train_timing.csv",
                                        "eval.csv", "samples.txt"};
    char p[256];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", out[0], names[i]);
        ck_assert_msg(exists(p), "missing %s", p);
    }
    snprintf(p, sizeof p, "%s/train_log.csv", out[0]);
    char *log = read_file(p, NULL);
    ck_assert_ptr_nonnull(log);
    static const char head[] = "step,train_loss,val_loss,lr,grad_norm,induction,prev_token,sink\n1,";
    ck_assert_msg(strncmp(log, head, strlen(head)) == 0, "log: %.80s", log);
    int rows = 0;
    for (char *c = log; *c; c++) rows += *c == '\n';
    ck_assert_int_eq(rows, 7);
    free(log);
    /* the start byte, as Hugging Face names it */
    snprintf(p, sizeof p, "%s/config.json", out[0]);
    char *cj = read_file(p, NULL);
    ck_assert_ptr_nonnull(cj);
    ck_assert_msg(strstr(cj, "\"add_bos_token\": true") && strstr(cj, "\"bos_token_id\": 255") &&
                  strstr(cj, "\"eos_token_id\": 255"), "config.json: %s", cj);
    free(cj);
    snprintf(p, sizeof p, "%s/m0.ckpt", dir);
    ck_assert_msg(!exists(p), "a finished run leaves its checkpoint behind");
    /* the folder is a model kvscope runs */
    const char *run[] = {"verify", "--model", out[0], "--prompt", "the lord", "--steps", "4", "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(run, NULL, NULL), 0);
    remove_tree(dir);
}
END_TEST

/* Start kvscope with args, wait for its first line of output that starts with prefix
 * (NULL: any), wait delay_ms more, then send sig (SIGPIPE: close the pipe, so that its
 * next line raises it, as `train | head -1` does): its status as a shell sees it (128 +
 * the signal when the signal ended it). The child starts with every stop signal at its
 * default. */
static int interrupt_after_line(const char *const *args, int sig, const char *prefix, int delay_ms) {
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        const char *argv[64];
        int n = 0;
        argv[n++] = KVSCOPE_BIN;
        while (args[n - 1] && n < 63) argv[n] = args[n - 1], n++;
        argv[n] = NULL;
        dup2(fd[1], 1);
        int e = open("/dev/null", O_WRONLY);
        if (e >= 0) dup2(e, 2);
        close(fd[0]);
        signal(SIGPIPE, SIG_DFL), signal(SIGHUP, SIG_DFL);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(fd[1]);
    char line[512], c;
    size_t n = 0;
    while (read(fd[0], &c, 1) == 1) {
        if (c != '\n') {
            if (n + 1 < sizeof line) line[n++] = c;
            continue;
        }
        line[n] = '\0', n = 0;
        if (!prefix || strncmp(line, prefix, strlen(prefix)) == 0) break;
    }
    if (delay_ms) nanosleep(&(struct timespec){delay_ms / 1000, (delay_ms % 1000) * 1000000L}, NULL);
    if (sig == SIGPIPE) {
        close(fd[0]);
    } else {
        kill(pid, sig);
        while (read(fd[0], &c, 1) == 1) {}
        close(fd[0]);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

static int interrupt_after_first_line(const char *const *args, int sig) {
    return interrupt_after_line(args, sig, NULL, 0);
}

/* A 30-step run that evaluates at every step (slow enough to stop, a progress line per
 * step: no --quiet), checkpoints only when stopped, with extra args (NULL-ended). */
static void stoppable_args(const char **args, const char *corpus, const char *out,
                           const char *const *extra) {
    tiny_args(args, corpus, out, "30");
    int n = 0;
    while (args[n]) n++;
    args[n - 1] = "--eval-every", args[n++] = "1"; /* in place of --quiet */
    args[n++] = "--checkpoint-every", args[n++] = "0";
    while (extra && *extra) args[n++] = *extra++;
    args[n] = NULL;
}

/* Every signal that stops a run (Ctrl-C, kill, a closed terminal, a closed pipe on
 * stdout) leaves the latest step's checkpoint, whole, with --checkpoint-every 0, no
 * output folder and nothing temporary; its exit status is 128 + the signal; --resume
 * goes on to the bytes of a run never stopped. */
START_TEST(test_cli_signals_resume) {
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    char dir[64], corpus[128], a[128], b[128], ckpt[160], fa[160], fb[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    write_corpus(corpus, 200000);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(ckpt, sizeof ckpt, "%s/b.ckpt", dir);
    const char *args[64];
    static const char *const quiet[] = {"--quiet", NULL};
    stoppable_args(args, corpus, a, quiet);
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0); /* never stopped */
    for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
        const int sig = sigs[k];
        stoppable_args(args, corpus, b, NULL);
        ck_assert_int_eq(interrupt_after_first_line(args, sig), 128 + sig);
        ck_assert_msg(exists(ckpt), "signal %d left no checkpoint", sig);
        ck_assert_msg(!exists(b), "signal %d left an output folder", sig);
        ck_assert_int_eq(count_entries(dir), 3); /* corpus, a, the checkpoint: nothing temporary */
        /* whole and this run's: --resume checks its size, header and checksum */
        static const char *const resume[] = {"--resume", "--quiet", NULL};
        stoppable_args(args, corpus, b, resume);
        ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
        snprintf(fa, sizeof fa, "%s/model.safetensors", a);
        snprintf(fb, sizeof fb, "%s/model.safetensors", b);
        ck_assert_msg(files_equal(fa, fb), "signal %d: stopped and resumed run differs from one run", sig);
        snprintf(fa, sizeof fa, "%s/train_log.csv", a);
        snprintf(fb, sizeof fb, "%s/train_log.csv", b);
        ck_assert_msg(files_equal(fa, fb), "signal %d: train_log.csv differs after resuming", sig);
        ck_assert_msg(!exists(ckpt), "signal %d: the resumed run left its checkpoint", sig);
        remove_tree(b);
    }
    remove_tree(dir);
}
END_TEST

/* A stop after the last step, while the folder is written (here: while gnuplot draws
 * the chart, its script slowed down), keeps the whole run: the last step's checkpoint,
 * with --checkpoint-every 0; --resume writes the folder of the uninterrupted run. */
START_TEST(test_cli_stop_while_writing) {
    char dir[64], corpus[128], a[128], b[128], ckpt[160], slow[128], gp[160], fa[160], fb[160];
    if (system("command -v gnuplot > /dev/null 2>&1") != 0) {
        fprintf(stderr, "check_train.c: test_cli_stop_while_writing: skipped: no gnuplot to slow down\n");
        return;
    }
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    write_corpus(corpus, 200000);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(ckpt, sizeof ckpt, "%s/b.ckpt", dir);
    snprintf(slow, sizeof slow, "%s/slow", dir);
    snprintf(gp, sizeof gp, "%s/train_loss.gp", slow);
    ck_assert_int_eq(mkdir(slow, 0755), 0);
    FILE *f = fopen(gp, "w");
    ck_assert_ptr_nonnull(f);
    fputs("pause 5\n", f);
    ck_assert_int_eq(fclose(f), 0);
    const char *args[64];
    static const char *const quiet[] = {"--quiet", NULL};
    stoppable_args(args, corpus, a, quiet);
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    const char *scripts[] = {"--scripts", slow, NULL};
    stoppable_args(args, corpus, b, scripts);
    ck_assert_int_eq(interrupt_after_line(args, SIGTERM, "step     30/30", 700), 128 + SIGTERM);
    ck_assert_msg(exists(ckpt), "a stop while the folder was written lost the run");
    ck_assert_msg(!exists(b), "a stop while the folder was written left it");
    ck_assert_int_eq(count_entries(dir), 4); /* corpus, a, slow, the checkpoint */
    static const char *const resume[] = {"--resume", "--quiet", NULL};
    stoppable_args(args, corpus, b, resume);
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    snprintf(fa, sizeof fa, "%s/model.safetensors", a);
    snprintf(fb, sizeof fb, "%s/model.safetensors", b);
    ck_assert_msg(files_equal(fa, fb), "the resumed folder's model differs from one run's");
    snprintf(fa, sizeof fa, "%s/train_log.csv", a);
    snprintf(fb, sizeof fb, "%s/train_log.csv", b);
    ck_assert_msg(files_equal(fa, fb), "the resumed folder's train_log.csv differs");
    ck_assert(!exists(ckpt));
    remove_tree(dir);
}
END_TEST

/* 1 if the file's bytes are those of buf (n). */
static int holds(const char *path, const char *buf, size_t n) {
    size_t m = 0;
    char *now = read_file(path, &m);
    const int same = now && m == n && memcmp(now, buf, n) == 0;
    free(now);
    return same;
}

/* One line on stderr (errp) that holds each of the NULL-ended words. */
static void one_line_with(const char *errp, const char *const *words) {
    char *e = read_file(errp, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strchr(e, '\n') == e + strlen(e) - 1 && strncmp(e, "kvscope: ", 9) == 0,
                  "stderr: %s", e);
    for (; *words; words++) ck_assert_msg(strstr(e, *words) != NULL, "no \"%s\" in: %s", *words, e);
    free(e);
}

/* A checkpoint belongs to its run. A fresh run (no --resume) refuses another run's,
 * --force or not, and this run's without --force (pointing at --resume); --resume refuses
 * a checkpoint whose bytes changed (its checksum). The checkpoints stay as they were. */
START_TEST(test_cli_checkpoint_owner) {
    char dir[64], corpus[128], b[128], ckpt[160], other[128], ockpt[160], errp[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    write_corpus(corpus, 200000);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(ckpt, sizeof ckpt, "%s/b.ckpt", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    snprintf(ockpt, sizeof ockpt, "%s/other.ckpt", dir);
    snprintf(errp, sizeof errp, "%s/stderr", dir);
    const char *args[64];
    stoppable_args(args, corpus, b, NULL);
    ck_assert_int_eq(interrupt_after_first_line(args, SIGINT), 130);
    size_t n = 0;
    char *saved = read_file(ckpt, &n);
    ck_assert_ptr_nonnull(saved);
    /* the case: another run's checkpoint copied to where a fresh run writes */
    FILE *f = fopen(ockpt, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(saved, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
    static const char *const seed4[] = {"--seed", "4", "--quiet", NULL};
    static const char *const seed4f[] = {"--seed", "4", "--quiet", "--force", NULL};
    static const char *const other_words[] = {"another run's checkpoint", "--seed 3, this run has 4",
                                              "--resume", "other.ckpt", NULL};
    for (int force = 0; force < 2; force++) {
        stoppable_args(args, corpus, other, force ? seed4f : seed4);
        ck_assert_int_eq(run_kvscope(args, NULL, errp), 2);
        one_line_with(errp, other_words);
        ck_assert_msg(holds(ockpt, saved, n), "another run's checkpoint changed (--force %d)", force);
        ck_assert(!exists(other));
    }
    /* this run's, again without --resume: refused, pointing at --resume */
    static const char *const quiet[] = {"--quiet", NULL};
    static const char *const same_words[] = {"this run's checkpoint at step", "add --resume",
                                             "b.ckpt", NULL};
    stoppable_args(args, corpus, b, quiet);
    ck_assert_int_eq(run_kvscope(args, NULL, errp), 2);
    one_line_with(errp, same_words);
    ck_assert_msg(holds(ckpt, saved, n), "this run's checkpoint changed");
    /* a byte of the weights changed: --resume refuses it */
    saved[4000] ^= 1;
    f = fopen(ckpt, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(saved, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
    static const char *const resume[] = {"--resume", "--quiet", NULL};
    static const char *const sum_words[] = {"checksum mismatch", "b.ckpt", NULL};
    stoppable_args(args, corpus, b, resume);
    ck_assert_int_eq(run_kvscope(args, NULL, errp), 2);
    one_line_with(errp, sum_words);
    ck_assert(!exists(b));
    /* --force starts this run over, over its own checkpoint */
    static const char *const force[] = {"--quiet", "--force", NULL};
    stoppable_args(args, corpus, b, force);
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    ck_assert(exists(b) && !exists(ckpt));
    free(saved);
    remove_tree(dir);
}
END_TEST

/* --ctx too short for the default periods blames --ctx, not --period-min. */
START_TEST(test_cli_short_ctx) {
    char dir[64], corpus[128], out[128], errp[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    write_corpus(corpus, 20000);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(errp, sizeof errp, "%s/stderr", dir);
    const char *args[] = {"train", "--corpus", corpus, "--out", out, "--ctx", "2", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, errp), 2);
    static const char *const words[] = {"--ctx must be at least 2 x --period-min (16)", ": 2\n", NULL};
    one_line_with(errp, words);
    remove_tree(dir);
}
END_TEST

START_TEST(test_cli_grads_out) {
    char dir[64], corpus[128], g[128], path[200], err[512];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    write_corpus(corpus, 200000);
    snprintf(g, sizeof g, "%s/grads", dir);
    const char *args[] = {"train", "--corpus", corpus, "--grads-out", g, "--layers", "2", "--heads",
                          "2", "--dim", "32", "--ctx", "32", "--batch", "4", "--seed", "3",
                          "--short-steps", "0", "--repeat-share", "0", "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    /* the same batch (no repeated sequences: the defaults' curriculum is off) and backward
     * in this process */
    Corpus c;
    ck_assert_int_eq(corpus_load(&c, corpus, err, sizeof err), 0);
    Config cfg = tiny_config(2, 2, 32, 32, 256);
    Trainer tr;
    /* the command's initial spread (its default, float as it stores it) */
    ck_assert_int_eq(trainer_init_std(&tr, &cfg, 4, 3, train_options_default().init_std), 0);
    const CorpusMix mix = {.B = 4, .T = 32, .bos = 255, .period_min = 1, .period_max = 1};
    corpus_batch(&c, 3, 0, &mix, tr.inputs, tr.targets, NULL);
    const float loss = trainer_forward(&tr, tr.inputs, tr.targets);
    trainer_backward(&tr);
    SafeTensors st;
    snprintf(path, sizeof path, "%s/grads.safetensors", g);
    ck_assert_int_eq(st_open(&st, path, err, sizeof err), 0);
    ck_assert_int_eq((int)st.n, tr.nspecs + 3);
    const StTensor *t = st_find(&st, "inputs");
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t->dtype, ST_I32);
    ck_assert_int_eq(memcmp(st.data + t->begin, tr.inputs, 4 * 32 * sizeof(int)), 0);
    t = st_find(&st, "loss");
    float f;
    ck_assert_int_eq(st_read_f32(&st, t, &f, err, sizeof err), 0);
    ck_assert_int_eq(memcmp(&f, &loss, sizeof f), 0);
    float *buf = malloc(tr.model.w.num_params * sizeof *buf);
    ck_assert_ptr_nonnull(buf);
    for (int i = 0; i < tr.nspecs; i++) {
        t = st_find(&st, tr.specs[i].name);
        ck_assert_msg(t != NULL, "grads.safetensors lacks %s", tr.specs[i].name);
        ck_assert_int_eq(st_read_f32(&st, t, buf, err, sizeof err), 0);
        ck_assert_msg(memcmp(buf, tr.grads + tr.specs[i].offset, t->numel * sizeof *buf) == 0,
                      "%s: the written gradient differs", tr.specs[i].name);
    }
    free(buf);
    st_close(&st);
    snprintf(path, sizeof path, "%s/model.safetensors", g);
    ck_assert(exists(path));
    trainer_free(&tr);
    corpus_free(&c);
    remove_tree(dir);
}
END_TEST

/* Bad input: one line on stderr naming the problem, exit 2, no folder written. */
static const struct { const char *corpus, *opt, *val, *expect; } bad_cases[] = {
    {"missing", NULL, NULL, "No such file"},
    {"empty", NULL, NULL, "empty file"},
    {"short", NULL, NULL, "shorter than one batch"},
    {"ok", "--dim", "31", "--dim must be divisible by --heads (2): 31"},
    {"small", "--ctx", "4096", "--ctx longer than the training split"},
    {"ok", "--batch", "x", "--batch expects a whole number: x"},
    {"ok", "--resume", NULL, "--resume"},
    {"ok", "--lr", "1e30", "not finite at step"},
    {"ok", "--checkpoint", "OUT/c.ckpt", "--out would replace --checkpoint's"},
    {"ok", "--warmup", "12", "--warmup must be below --steps: 12"},
    {"ok", "--period-max", "17", "--period-max must be at most --ctx/2 (16): 17"},
    {"ok", "--short-ctx", "33", "--short-ctx must be at most --ctx (32): 33"},
    {"ok", "--short-batch", "9", "--short-batch x --short-ctx must be at most --batch x --ctx (128): 144"},
    {"ok", "--period-min", "9", "--period-min must be at most --short-ctx/2 (8): 9"},
    {"ok", "--period-min", "17", "--period-min must be at most --period-max (16): 17"},
    {"ok", "--bos", "256", "--bos must be a byte 0..255 or none: 256"},
    {"ok", "--bos", "101", "--bos: the corpus contains byte 101 "},
    {"ok", "--checkpoint", "DIR/newf/", "--checkpoint names a file, not a folder (drop the trailing /): "},
    {"ok", "--corpus", "DIR/ok.txt/", "--corpus names a file, not a folder (drop the trailing /): "},
};

START_TEST(test_cli_bad_input) {
    char dir[64], corpus[128], out[128], errp[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/%s.txt", dir, bad_cases[_i].corpus);
    if (strcmp(bad_cases[_i].corpus, "empty") == 0) fclose(fopen(corpus, "w"));
    if (strcmp(bad_cases[_i].corpus, "short") == 0) write_corpus(corpus, 100);
    if (strcmp(bad_cases[_i].corpus, "small") == 0) write_corpus(corpus, 3000);
    if (strcmp(bad_cases[_i].corpus, "ok") == 0) write_corpus(corpus, 200000);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(errp, sizeof errp, "%s/stderr", dir);
    const char *args[64];
    tiny_args(args, corpus, out, "12");
    int n = 0;
    while (args[n]) n++;
    if (bad_cases[_i].opt) args[n++] = bad_cases[_i].opt;
    char val[200];
    if (bad_cases[_i].val) { /* OUT: the output folder */
        const char *v = bad_cases[_i].val;
        if (strncmp(v, "OUT/", 4) == 0) snprintf(val, sizeof val, "%s/%s", out, v + 4);
        else if (strncmp(v, "DIR/", 4) == 0) snprintf(val, sizeof val, "%s/%s", dir, v + 4);
        else snprintf(val, sizeof val, "%s", v);
        args[n++] = val;
    }
    if (strcmp(bad_cases[_i].opt ? bad_cases[_i].opt : "", "--lr") == 0)
        args[n++] = "--clip", args[n++] = "0", args[n++] = "--checkpoint-every", args[n++] = "2";
    args[n] = NULL;
    ck_assert_int_eq(run_kvscope(args, NULL, errp), 2);
    char *e = read_file(errp, NULL);
    ck_assert_ptr_nonnull(e);
    int lines = 0;
    for (char *c = e; *c; c++) lines += *c == '\n';
    ck_assert_msg(lines == 1 && strstr(e, bad_cases[_i].expect), "case %d: stderr: %s", _i, e);
    ck_assert_msg(strncmp(e, "kvscope: ", 9) == 0, "case %d: stderr: %s", _i, e);
    free(e);
    ck_assert_msg(!exists(out), "case %d: an output folder was written", _i);
    /* the corpus, stderr and, after a non-finite loss, the last good checkpoint */
    ck_assert_int_eq(count_entries(dir), 1 + (strcmp(bad_cases[_i].corpus, "missing") != 0) +
                                             (strcmp(bad_cases[_i].val ? bad_cases[_i].val : "", "1e30") == 0));
    remove_tree(dir);
}
END_TEST

/* A checkpoint of another shape: one line, exit 2, the checkpoint left as it was. */
START_TEST(test_cli_resume_other_shape) {
    char dir[64], corpus[128], out[128], ckpt[160], errp[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    write_corpus(corpus, 200000);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(ckpt, sizeof ckpt, "%s/out.ckpt", dir);
    snprintf(errp, sizeof errp, "%s/stderr", dir);
    const char *args[64];
    tiny_args(args, corpus, out, "12");
    int n = 0;
    while (args[n]) n++;
    args[n] = "--lr", args[n + 1] = "1e30", args[n + 2] = "--clip", args[n + 3] = "0", args[n + 4] = NULL;
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 2); /* the non-finite loss leaves a checkpoint */
    ck_assert(exists(ckpt));
    size_t n0 = 0, n1 = 0;
    char *before = read_file(ckpt, &n0);
    ck_assert_ptr_nonnull(before);
    tiny_args(args, corpus, out, "12");
    args[n] = "--resume", args[n + 1] = "--layers", args[n + 2] = "1", args[n + 3] = NULL;
    ck_assert_int_eq(run_kvscope(args, NULL, errp), 2);
    char *e = read_file(errp, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strstr(e, "checkpoint from another run (--layers 2, this run has 1)") &&
                  strchr(e, '\n') == e + strlen(e) - 1, "stderr: %s", e);
    char *after = read_file(ckpt, &n1);
    ck_assert_ptr_nonnull(after);
    ck_assert_msg(n0 == n1 && memcmp(before, after, n0) == 0, "the checkpoint changed");
    ck_assert(!exists(out));
    free(e);
    free(before);
    free(after);
    remove_tree(dir);
}
END_TEST

/* Two trainings with one --checkpoint at once: the second meets the first's flock on
 * CHECKPOINT.lock and stops (exit 2, one line) before writing anything; alone, the run
 * trains and leaves no lock file behind. (The lock is held here as a run would hold it.) */
START_TEST(test_cli_checkpoint_locked) {
    char dir[64], corpus[128], out[128], lock[160], err[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    write_corpus(corpus, 200000);
    snprintf(out, sizeof out, "%s/m", dir);
    snprintf(lock, sizeof lock, "%s/m.ckpt.lock", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    /* another run's lock: kvscope's text in it, held */
    static const char text[] = "kvscope train: this checkpoint is in use; removed when the run ends\n";
    int fd = open(lock, O_RDWR | O_CREAT, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
    const char *args[64];
    tiny_args(args, corpus, out, "3");
    ck_assert_int_eq(run_kvscope(args, NULL, err), 2);
    char *e = read_file(err, NULL);
    ck_assert_msg(e && strstr(e, "in use by another training run") && strstr(e, "m.ckpt") &&
                  strchr(e, '\n') == e + strlen(e) - 1, "%s", e ? e : "");
    free(e);
    ck_assert(!exists(out));
    close(fd);
    ck_assert_int_eq(run_kvscope(args, NULL, err), 0);
    ck_assert(exists(out));
    ck_assert(!exists(lock));
    remove_tree(dir);
}
END_TEST

/* A file at CHECKPOINT.lock that kvscope did not write (a user's, or the corpus itself) is
 * never taken over or removed: exit 2 before any work, the file as it was. */
START_TEST(test_cli_lock_not_ours) {
    char dir[64], corpus[128], out[128], lock[160], err[160], ck[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/data.lock", dir);
    write_corpus(corpus, 200000);
    size_t before = 0, after = 0;
    char *c0 = read_file(corpus, &before);
    snprintf(out, sizeof out, "%s/m", dir);
    snprintf(lock, sizeof lock, "%s/m.ckpt.lock", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    ck_assert_int_eq(write_text_file(lock, "mine\n"), 0);
    const char *args[64];
    tiny_args(args, corpus, out, "3");
    ck_assert_int_eq(run_kvscope(args, NULL, err), 2);
    char *e = read_file(err, NULL);
    ck_assert_msg(e && strstr(e, "not kvscope's") && strchr(e, '\n') == e + strlen(e) - 1, "%s",
                  e ? e : "");
    free(e);
    char *l = read_file(lock, NULL);
    ck_assert_msg(l && strcmp(l, "mine\n") == 0, "the user's lock file changed");
    free(l);
    ck_assert(!exists(out));
    /* the corpus itself at the lock's path (--checkpoint DIR/data) */
    snprintf(ck, sizeof ck, "%s/data", dir);
    int n = 0;
    while (args[n]) n++;
    args[n] = "--checkpoint", args[n + 1] = ck, args[n + 2] = NULL;
    ck_assert_int_eq(run_kvscope(args, NULL, err), 2);
    char *c1 = read_file(corpus, &after);
    ck_assert(c0 && c1 && before == after && memcmp(c0, c1, before) == 0);
    free(c0);
    free(c1);
    remove_tree(dir);
}
END_TEST

/* --grads-out never replaces a model folder, --force or not: exit 2, the weights kept. */
START_TEST(test_cli_grads_out_spares_model) {
    char dir[64], corpus[128], m[128], w[160], copy[160], err[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    write_corpus(corpus, 200000);
    snprintf(m, sizeof m, "%s/m", dir);
    snprintf(w, sizeof w, "%s/model.safetensors", m);
    snprintf(copy, sizeof copy, "%s/w.copy", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    const char *ex[] = {"export", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "256",
                        "--quiet", "--out", m, NULL};
    ck_assert_int_eq(run_kvscope(ex, NULL, NULL), 0);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", w, copy);
    ck_assert_int_eq(system(cmd), 0);
    for (int force = 0; force < 2; force++) {
        const char *g[] = {"train", "--corpus", corpus, "--grads-out", m, "--layers", "1", "--heads",
                           "2", "--dim", "16", "--ctx", "32", force ? "--force" : NULL, NULL};
        ck_assert_int_eq(run_kvscope(g, NULL, err), 2);
        char *e = read_file(err, NULL);
        ck_assert_msg(e && strstr(e, "--grads-out holds a model"), "%s", e ? e : "");
        free(e);
        ck_assert(files_equal(w, copy));
    }
    remove_tree(dir);
}
END_TEST

/* train > /dev/full: the run stops before training, with the full disk's own words
 * ("No space left on device"), exit 2, nothing written. */
START_TEST(test_cli_stdout_full) {
    char dir[64], corpus[128], out[128], ckpt[160], err[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    write_corpus(corpus, 200000);
    snprintf(out, sizeof out, "%s/m", dir);
    snprintf(ckpt, sizeof ckpt, "%s/m.ckpt", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    const char *args[64];
    tiny_args(args, corpus, out, "3");
    int n = 0;
    while (args[n]) n++;
    ck_assert_str_eq(args[n - 1], "--quiet");
    args[n - 1] = NULL; /* it prints */
    ck_assert_int_eq(run_kvscope(args, "/dev/full", err), 2);
    char *e = read_file(err, NULL);
    ck_assert_msg(e && strcmp(e, "kvscope: cannot write (No space left on device): stdout\n") == 0,
                  "%s", e ? e : "");
    free(e);
    ck_assert(!exists(out) && !exists(ckpt));
    /* --scripts naming a folder without the chart script: refused before training */
    args[n - 1] = "--scripts", args[n] = "/nonexistent-kvscope", args[n + 1] = NULL;
    ck_assert_int_eq(run_kvscope(args, NULL, err), 2);
    e = read_file(err, NULL);
    ck_assert_msg(e && strncmp(e, "kvscope: --scripts: /nonexistent-kvscope/train_loss.gp",
                          strlen("kvscope: --scripts: /nonexistent-kvscope/train_loss.gp")) == 0 &&
                  strchr(e, '\n') == e + strlen(e) - 1, "%s", e ? e : "");
    free(e);
    ck_assert(!exists(out) && !exists(ckpt));
    remove_tree(dir);
}
END_TEST

/* A chart that gnuplot fails to draw: the note names the output folder as the user
 * named it, never its temporary folder (dir/m.tmp.<pid>.*). */
START_TEST(test_cli_chart_note_names_out) {
    char dir[64], corpus[128], out[128], sc[128], gp[160], err[160];
    if (system("command -v gnuplot > /dev/null 2>&1") != 0) {
        fprintf(stderr, "check_train.c: test_cli_chart_note_names_out: skipped: no gnuplot\n");
        return;
    }
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    write_corpus(corpus, 200000);
    snprintf(out, sizeof out, "%s/m", dir);
    snprintf(sc, sizeof sc, "%s/sc", dir);
    snprintf(gp, sizeof gp, "%s/train_loss.gp", sc);
    snprintf(err, sizeof err, "%s/err", dir);
    ck_assert_int_eq(mkdir(sc, 0755), 0);
    ck_assert_int_eq(write_text_file(gp, "print \"cannot write \".out.\".png\"\nexit status 3\n"), 0);
    const char *args[64];
    tiny_args(args, corpus, out, "3");
    int n = 0;
    while (args[n]) n++;
    args[n++] = "--scripts", args[n++] = sc, args[n] = NULL;
    ck_assert_int_eq(run_kvscope(args, NULL, err), 0);
    char *e = read_file(err, NULL), want[200];
    snprintf(want, sizeof want, "cannot write %s/loss.png\n", out);
    ck_assert_msg(e && strstr(e, "no loss chart") && strstr(e, want) && !strstr(e, ".tmp."), "%s",
                  e ? e : "");
    free(e);
    remove_tree(dir);
}
END_TEST

Suite *make_train_suite(void) {
    Suite *s = suite_create("train");
    TCase *t = tcase_create("model");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_forward_equals_engine);
    tcase_add_test(t, test_model_gradient_fd);
    tcase_add_test(t, test_overfit_one_batch);
    tcase_add_test(t, test_decay_2d_only);
    tcase_add_test(t, test_lr_schedule);
    tcase_add_test(t, test_clip_grads);
    tcase_add_test(t, test_init_std);
    tcase_add_test(t, test_mix_by_step);
    tcase_add_test(t, test_batch_layout);
    tcase_add_test(t, test_batch_copying_kinds);
    tcase_add_test(t, test_mix_copy_from);
    tcase_add_test(t, test_short_ctx_same_as_small_model);
    tcase_add_test(t, test_head_scores_uniform);
    tcase_add_test(t, test_threads_same_bytes);
    tcase_add_test(t, test_resume_same_bytes);
    suite_add_tcase(s, t);
    t = tcase_create("command");
    tcase_set_tags(t, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(t, 300);
    tcase_add_test(t, test_cli_outputs);
    tcase_add_test(t, test_cli_signals_resume);
    tcase_add_test(t, test_cli_checkpoint_owner);
    tcase_add_test(t, test_cli_stop_while_writing);
    tcase_add_test(t, test_cli_short_ctx);
    tcase_add_test(t, test_cli_grads_out);
    tcase_add_test(t, test_cli_resume_other_shape);
    tcase_add_test(t, test_cli_checkpoint_locked);
    tcase_add_test(t, test_cli_lock_not_ours);
    tcase_add_test(t, test_cli_grads_out_spares_model);
    tcase_add_test(t, test_cli_stdout_full);
    tcase_add_test(t, test_cli_chart_note_names_out);
    tcase_add_loop_test(t, test_cli_bad_input, 0, (int)(sizeof bad_cases / sizeof bad_cases[0]));
    suite_add_tcase(s, t);
    return s;
}
