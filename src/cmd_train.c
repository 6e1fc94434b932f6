/* cmd_train.c — `kvscope train`: train a byte-level GPT-2 on a text file.
 * parse → check the corpus and the shape → train (train.h) → evaluate → write the folder. */
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "corpus.h"
#include "gnuplot.h"
#include "outdir.h"
#include "train.h"
#include "train_kernels.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static const char *const TRAIN_HELP =
    "usage: kvscope train --corpus FILE --out DIR [options]\n"
    "Train a GPT-2 with byte tokens (V = 256) on FILE and write it as a Hugging Face\n"
    "folder (config.json, model.safetensors) with its training log, the loss chart,\n"
    "the validation bits per byte next to n-gram baselines, and greedy samples.\n"
    "Ctrl-C (or SIGTERM) writes a checkpoint after the current step and stops; the same\n"
    "command with --resume goes on.\n\n"
    "train options:\n";

typedef enum { OPT_INT, OPT_FLOAT, OPT_U64, OPT_STR, OPT_FLAG } OptKind;

typedef struct {
    const char *corpus, *out, *checkpoint, *grads_out, *scripts;
    Config cfg;
    TrainOptions o;
    int checkpoint_every, resume, threads, sample_bytes, quiet;
} TrainArgs;

typedef struct {
    const char *name, *arg;
    OptKind kind;
    double lo, hi;
    size_t off; /* into TrainArgs */
    const char *help;
} TrainOpt;

#define F(field) offsetof(TrainArgs, field)
static const TrainOpt OPTS[] = {
    {"--corpus", "FILE", OPT_STR, 0, 0, F(corpus), "training text (required); its bytes are the tokens"},
    {"--out", "DIR", OPT_STR, 0, 0, F(out), "output folder, replaced as a whole at the end (required)"},
    {"--layers", "L", OPT_INT, 1, 64, F(cfg.L), "transformer blocks (default 4)"},
    {"--heads", "NH", OPT_INT, 1, 64, F(cfg.NH), "attention heads (default 6)"},
    {"--dim", "C", OPT_INT, 1, 4096, F(cfg.C), "width, divisible by NH (default 192)"},
    {"--ctx", "N", OPT_INT, 2, 4096, F(cfg.N), "context: every sequence is N bytes (default 256)"},
    {"--batch", "B", OPT_INT, 1, 4096, F(o.B), "sequences per step (default 16)"},
    {"--steps", "S", OPT_INT, 1, 10000000, F(o.steps), "optimizer steps (default 2400)"},
    {"--lr", "LR", OPT_FLOAT, 1e-9, 1e30, F(o.lr), "peak learning rate (default 0.003)"},
    {"--warmup", "W", OPT_INT, 0, 10000000, F(o.warmup), "steps of linear warm-up (default 100)"},
    {"--lr-final", "F", OPT_FLOAT, 0, 1, F(o.lr_final), "last rate of the cosine, times --lr (default 0.1)"},
    {"--weight-decay", "WD", OPT_FLOAT, 0, 10, F(o.weight_decay), "AdamW decay of the 2-D weights (default 0.1)"},
    {"--clip", "G", OPT_FLOAT, 0, 1e6, F(o.clip), "clip the gradient norm to G, 0: off (default 1)"},
    {"--repeat-share", "F", OPT_FLOAT, 0, 1, F(o.repeat_share), "share of sequences whose second half repeats the first (default 0)"},
    {"--repeat-text", NULL, OPT_FLAG, 0, 0, F(o.repeat_text), "their first half from the text, not random printable bytes"},
    {"--repeat-first", "K", OPT_INT, 0, 10000000, F(o.repeat_first), "every sequence repeats in the first K steps (default 0)"},
    {"--seed", "S", OPT_U64, 0, 0, F(o.seed), "seed of the initial weights and the batches (default 1)"},
    {"--eval-every", "E", OPT_INT, 0, 10000000, F(o.eval_every), "validation loss every E steps and at the end (default 400)"},
    {"--checkpoint", "FILE", OPT_STR, 0, 0, F(checkpoint), "checkpoint file (default DIR.ckpt); removed after a finished run"},
    {"--checkpoint-every", "K", OPT_INT, 0, 10000000, F(checkpoint_every), "steps between checkpoints (default 200)"},
    {"--resume", NULL, OPT_FLAG, 0, 0, F(resume), "continue from the checkpoint (same options)"},
    {"--threads", "T", OPT_INT, 1, 256, F(threads), "OpenMP threads (default: OMP_NUM_THREADS)"},
    {"--samples", "N", OPT_INT, 0, 4096, F(sample_bytes), "bytes of each greedy sample (default 160)"},
    {"--grads-out", "DIR", OPT_STR, 0, 0, F(grads_out), "run one batch, write its tokens and every gradient, stop"},
    {"--scripts", "DIR", OPT_STR, 0, 0, F(scripts), "where train_loss.gp is (default plots)"},
    {"--quiet", NULL, OPT_FLAG, 0, 0, F(quiet), "print nothing but errors"},
};
#undef F

static void print_help(void) {
    printf("%s", TRAIN_HELP);
    for (size_t i = 0; i < sizeof OPTS / sizeof OPTS[0]; i++) {
        char lhs[40];
        snprintf(lhs, sizeof lhs, "%s%s%s", OPTS[i].name, OPTS[i].arg ? " " : "",
                 OPTS[i].arg ? OPTS[i].arg : "");
        printf("  %-22s %s\n", lhs, OPTS[i].help);
    }
}

/* Option parsing: one table, one loop. 0, 1 (--help printed) or 2 (error printed). */
static int parse_train(int argc, char **argv, TrainArgs *a) {
    memset(a, 0, sizeof *a);
    a->cfg = config_default();
    a->cfg.L = 4, a->cfg.NH = 6, a->cfg.C = 192, a->cfg.N = 256;
    a->o = train_options_default();
    a->checkpoint_every = 200;
    a->sample_bytes = 160;
    a->scripts = "plots";
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return print_help(), 1;
        const TrainOpt *t = NULL;
        for (size_t k = 0; k < sizeof OPTS / sizeof OPTS[0] && !t; k++)
            if (strcmp(argv[i], OPTS[k].name) == 0) t = &OPTS[k];
        if (!t) return cli_fail("unknown option", argv[i]);
        char *dst = (char *)a + t->off;
        if (t->kind == OPT_FLAG) {
            *(int *)dst = 1;
            continue;
        }
        const char *v = cli_value(argc, argv, &i);
        long x;
        double d;
        if (!v) return 2;
        if (t->kind == OPT_STR) *(const char **)dst = v;
        else if (t->kind == OPT_INT) {
            if (cli_long(t->name, v, (long)t->lo, (long)t->hi, &x)) return 2;
            *(int *)dst = (int)x;
        } else if (t->kind == OPT_FLOAT) {
            if (cli_double(t->name, v, t->lo, t->hi, &d)) return 2;
            *(float *)dst = (float)d;
        } else {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (end == v || *end || errno == ERANGE || v[0] == '-')
                return cli_fail("--seed expects a whole number >= 0", v);
            *(uint64_t *)dst = s;
        }
    }
    return 0;
}

/* Checks that need no file. 0 or 2. */
static int check_args(TrainArgs *a) {
    char v[64], what[128];
    if (!a->corpus) return cli_fail("missing option", "--corpus FILE");
    if (!a->out && !a->grads_out) return cli_fail("missing option", "--out DIR");
    if (a->cfg.C % a->cfg.NH != 0) {
        snprintf(what, sizeof what, "--dim must be divisible by --heads (%d)", a->cfg.NH);
        snprintf(v, sizeof v, "%d", a->cfg.C);
        return cli_fail(what, v);
    }
    const char *bad = config_check(&a->cfg);
    if (bad) return cli_fail("bad model shape", bad);
    if (a->o.warmup >= a->o.steps && a->o.steps > 1) {
        snprintf(v, sizeof v, "%d", a->o.warmup);
        return cli_fail("--warmup must be below --steps", v);
    }
    if (a->scripts && !gnuplot_quotable(a->scripts)) return cli_fail("--scripts cannot hold a quote", a->scripts);
    if (a->out && !gnuplot_quotable(a->out)) return cli_fail("--out cannot hold a quote", a->out);
    return 0;
}

/* The corpus must give one batch and one validation window. 0 or 2. */
static int check_corpus(const TrainArgs *a, const Corpus *c) {
    char what[160], v[64];
    const size_t T = (size_t)a->cfg.N, need = (size_t)a->o.B * (T + 1);
    if (c->ntrain <= T) {
        snprintf(what, sizeof what, "--ctx longer than the training split of %s (%zu bytes)",
                 a->corpus, c->ntrain);
        snprintf(v, sizeof v, "%zu", T);
        return cli_fail(what, v);
    }
    if (c->ntrain < need) {
        snprintf(what, sizeof what, "corpus shorter than one batch (--batch %d × (--ctx + 1) = %zu "
                 "bytes)", a->o.B, need);
        snprintf(v, sizeof v, "%s: %zu training bytes", a->corpus, c->ntrain);
        return cli_fail(what, v);
    }
    if (corpus_val_windows(c, a->cfg.N) < 1) {
        snprintf(what, sizeof what, "validation split shorter than --ctx + 1 = %zu bytes", T + 1);
        snprintf(v, sizeof v, "%s: %zu validation bytes", a->corpus, c->nval);
        return cli_fail(what, v);
    }
    return 0;
}

/* ---- progress and Ctrl-C ------------------------------------------------------------------ */

/* Set by Ctrl-C (SIGINT) or SIGTERM; a signal handler can only reach file scope. */
static volatile sig_atomic_t interrupted = 0;
static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

typedef struct {
    int quiet, first_step;
    double first_seconds;
} Progress;

static void progress(void *user, const TrainLogRow *r, int steps) {
    Progress *p = user;
    if (p->first_step < 0) {
        p->first_step = r->step - 1;
        p->first_seconds = r->seconds;
    }
    const int done = r->step - p->first_step;
    if (p->quiet || !(r->step % 10 == 0 || r->step == steps || !isnan(r->val_loss) || done == 1))
        return;
    const double per = done > 1 ? (r->seconds - p->first_seconds) / (done - 1) : 0.0;
    const long eta = (long)(per * (steps - r->step) + 0.5);
    char val[48] = "";
    if (!isnan(r->val_loss))
        snprintf(val, sizeof val, "  val %.4f (%.3f bits/byte)", (double)r->val_loss,
                 r->val_loss / M_LN2);
    printf("step %6d/%d  loss %.4f%s  lr %.2e  |g| %.3f  %.0f tok/s  ETA %ld:%02ld\n", r->step, steps,
           (double)r->train_loss, val, (double)r->lr, (double)r->grad_norm, (double)r->tokens_per_s,
           eta / 60, eta % 60);
    fflush(stdout);
}

/* ---- set up -------------------------------------------------------------------------------- */

static char ckpt_default[4200];

/* Load the corpus, build the trainer, resume if asked. 0, 1 or 2 (printed). */
static int setup(TrainArgs *a, Corpus *c, Trainer *tr, TrainLog *log) {
    char err[4600];
    int rc = corpus_load(c, a->corpus, err, sizeof err);
    if (rc == CORPUS_NOMEM) return cli_fail("out of memory reading", a->corpus), 1;
    if (rc) return cli_fail("--corpus", err);
    if ((rc = check_corpus(a, c))) {
        corpus_free(c);
        return rc;
    }
    if (!a->checkpoint) {
        const char *base = a->out ? a->out : a->grads_out;
        size_t n = strlen(base);
        while (n > 1 && base[n - 1] == '/') n--;
        if (n + 6 >= sizeof ckpt_default) {
            corpus_free(c);
            return cli_fail("path too long", base);
        }
        snprintf(ckpt_default, sizeof ckpt_default, "%.*s.ckpt", (int)n, base);
        a->checkpoint = ckpt_default;
    }
    if (trainer_init(tr, &a->cfg, a->o.B, a->o.seed)) {
        corpus_free(c);
        fprintf(stderr, "kvscope: out of memory: a model of %zu parameters with batch %d\n",
                model_num_params(&a->cfg), a->o.B);
        return 1;
    }
    if (a->resume && (rc = train_checkpoint_load(tr, &a->o, log, a->checkpoint, err, sizeof err))) {
        trainer_free(tr);
        corpus_free(c);
        if (rc == TRAIN_NOMEM) return cli_fail("out of memory reading", a->checkpoint), 1;
        return cli_fail("--resume", err);
    }
    if (log->n && log->rows[log->n - 1].step > a->o.steps) {
        char what[160], v[32];
        snprintf(what, sizeof what, "--steps below the %d steps of the checkpoint %s",
                 log->rows[log->n - 1].step, a->checkpoint);
        snprintf(v, sizeof v, "%d", a->o.steps);
        train_log_free(log);
        trainer_free(tr);
        corpus_free(c);
        return cli_fail(what, v);
    }
    return 0;
}

static void set_threads(const TrainArgs *a) {
    if (!a->threads) return;
#ifdef _OPENMP
    omp_set_num_threads(a->threads);
#else
    if (a->threads > 1)
        fprintf(stderr, "kvscope: note: built without OpenMP (make OMP=1): --threads %d runs on 1\n",
                a->threads);
#endif
}

/* ---- --grads-out ------------------------------------------------------------------------- */

static int run_grads(const TrainArgs *a, const Corpus *c, Trainer *tr, const TrainLog *log) {
    char err[4600];
    OutDir od;
    if (outdir_begin(&od, a->grads_out, err, sizeof err)) return cli_fail("--grads-out", err);
    const int step = log->n ? log->rows[log->n - 1].step : 0;
    corpus_batch(c, a->o.seed, step, tr->B, tr->T, train_repeats(&a->o, step), a->o.repeat_text,
                 tr->inputs, tr->targets);
    const float loss = trainer_forward(tr, tr->inputs, tr->targets);
    trainer_backward(tr);
    int rc = train_write_grads(tr, loss, od.tmp, err, sizeof err);
    if (rc) fprintf(stderr, "kvscope: %s\n", rc == TRAIN_NOMEM ? "out of memory: --grads-out" : err);
    rc = cli_outdir_end(&od, rc ? 1 : 0, 0);
    if (!rc && !a->quiet)
        printf("wrote %s: the batch of step %d (loss %.6f), the gradient of every parameter "
               "(grads.safetensors) and the weights it was taken at\n", a->grads_out, step + 1,
               (double)loss);
    return rc;
}

/* ---- the end of a run ----------------------------------------------------------------------- */

static const char *const SAMPLE_PROMPTS[] = {
    "In the beginning", "And God said", "The LORD is my", "Blessed are the", "The KV cache is",
};
enum { NSAMPLES = sizeof SAMPLE_PROMPTS / sizeof SAMPLE_PROMPTS[0] };

/* The loss chart into dir, when gnuplot and the script are there (a note otherwise). */
static void draw_chart(const TrainArgs *a, const char *dir) {
    char script[4300], vars[13000];
    snprintf(script, sizeof script, "%s/train_loss.gp", a->scripts);
    if (!gnuplot_found() || access(script, R_OK) != 0) {
        fprintf(stderr, "kvscope: note: no loss chart (%s); the log is %s/train_log.csv\n",
                gnuplot_found() ? "no train_loss.gp in --scripts" : "gnuplot not found: "
                GNUPLOT_INSTALL_HINT, a->out);
        return;
    }
    snprintf(vars, sizeof vars, "log='%s/train_log.csv'; eval='%s/eval.csv'; out='%s/loss'", dir, dir,
             dir);
    int rc = gnuplot_run(script, vars);
    if (rc) fprintf(stderr, "kvscope: note: gnuplot failed on %s (status %d): no loss chart\n", script, rc);
}

static int finish(const TrainArgs *a, const Corpus *c, Trainer *tr, const TrainLog *log, OutDir *od) {
    char err[4600];
    const size_t windows = corpus_val_windows(c, tr->T);
    float val = log->rows[log->n - 1].val_loss;
    if (isnan(val)) val = trainer_eval(tr, c, windows); /* resumed at the last step */
    TrainEval ev = {.model = val / M_LN2, .targets = windows * (size_t)tr->T};
    for (int k = 0; k < 3; k++)
        if (corpus_ngram_bits(c, k, tr->T, &ev.ngram[k], &ev.alpha[k]))
            return cli_fail("out of memory", "n-gram baselines"), 1;
    TrainSample s[NSAMPLES];
    for (int i = 0; i < NSAMPLES; i++) s[i].prompt = SAMPLE_PROMPTS[i];
    int steps = a->sample_bytes;
    if (steps > tr->T - 16) steps = tr->T - 16 > 0 ? tr->T - 16 : 0;
    int rc = train_samples(tr, s, NSAMPLES, steps);
    if (rc) {
        train_samples_free(s, NSAMPLES);
        if (rc == TRAIN_NOMEM) return cli_fail("out of memory", "samples"), 1;
        for (int i = 0; i < NSAMPLES; i++) s[i].len = 0;
    }
    rc = train_write(tr, log, &ev, s, NSAMPLES, od->tmp, err, sizeof err);
    train_samples_free(s, NSAMPLES);
    if (rc) fprintf(stderr, "kvscope: %s\n", err);
    else draw_chart(a, od->tmp);
    rc = cli_outdir_end(od, rc ? 1 : 0, 0);
    if (rc) return rc;
    remove(a->checkpoint); /* the run is complete: the folder holds everything */
    if (!a->quiet)
        printf("wrote %s: validation %.3f bits/byte on %zu bytes (unigram %.3f, order-1 %.3f, "
               "order-2 %.3f)\n", a->out, ev.model, ev.targets, ev.ngram[0], ev.ngram[1], ev.ngram[2]);
    return 0;
}

static int run_training(const TrainArgs *a, const Corpus *c, Trainer *tr, TrainLog *log) {
    char err[4600];
    OutDir od;
    /* --out is tried now, so that a bad folder is refused before the training, and made
     * again at the end: a run killed on the way leaves no half-written folder behind */
    if (outdir_begin(&od, a->out, err, sizeof err)) return cli_fail("--out", err);
    outdir_abort(&od);
    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    const int sig_set = sigaction(SIGINT, &sa, &old_int) == 0 && sigaction(SIGTERM, &sa, &old_term) == 0;
    Progress p = {.quiet = a->quiet, .first_step = -1};
    const TrainLoopCtl ctl = {a->checkpoint, a->checkpoint_every, &interrupted, progress, &p};
    if (!a->quiet)
        printf("training %zu parameters (L=%d NH=%d C=%d N=%d V=%d) on %zu bytes, batch %d x %d, "
               "%d steps, %s kernels\n", tr->model.w.num_params, a->cfg.L, a->cfg.NH, a->cfg.C,
               a->cfg.N, a->cfg.V, c->ntrain, a->o.B, a->cfg.N, a->o.steps, kern_name(tr->lv));
    int bad = 0, rc = train_loop(tr, c, &a->o, log, &ctl, &bad, err, sizeof err);
    if (sig_set) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    if (rc == TRAIN_OK) {
        if (outdir_begin(&od, a->out, err, sizeof err)) return cli_fail("--out", err), 1;
        return finish(a, c, tr, log, &od);
    }
    const int done = log->n ? log->rows[log->n - 1].step : 0;
    if (rc == TRAIN_STOPPED) {
        fprintf(stderr, "kvscope: interrupted after step %d: checkpoint %s; the same command with "
                "--resume goes on\n", done, a->checkpoint);
        return 130;
    }
    if (rc == TRAIN_NONFINITE) {
        fprintf(stderr, "kvscope: loss or gradient not finite at step %d (a lower --lr?): stopped; "
                "checkpoint %s holds step %d\n", bad, a->checkpoint, done);
        return 2;
    }
    fprintf(stderr, "kvscope: %s\n", rc == TRAIN_NOMEM ? "out of memory" : err);
    return 1;
}

int cmd_train(int argc, char **argv) {
    TrainArgs a;
    int rc = parse_train(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    if ((rc = check_args(&a))) return rc;
    set_threads(&a);
    Corpus c;
    Trainer tr;
    TrainLog log = {0};
    if ((rc = setup(&a, &c, &tr, &log))) return rc;
    rc = a.grads_out ? run_grads(&a, &c, &tr, &log) : run_training(&a, &c, &tr, &log);
    train_log_free(&log);
    trainer_free(&tr);
    corpus_free(&c);
    return rc;
}
