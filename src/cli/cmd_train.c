/* cmd_train.c — `kvscope train`: train a byte-level GPT-2 on a text file (train.h does
 * the work). parse → check the options, the corpus's path and the output folder → load
 * the corpus, build the trainer, resume (or make sure no other run's checkpoint is in
 * the way) → train, a progress line every 10 steps (SIGINT, SIGTERM, SIGHUP, SIGPIPE: a
 * checkpoint, then stop), a checkpoint after the last step → evaluate and sample → the
 * folder and its loss chart → commit, the checkpoint removed. With --grads-out: one
 * batch's gradient instead of the training. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "commands.h"
#include "corpus.h"
#include "gnuplot.h"
#include "infile.h"
#include "outdir.h"
#include "train.h"
#include "train_kernels.h"

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
    const char *corpus, *out, *checkpoint, *grads_out, *scripts;
    Config cfg;      /* L, NH, C, N; V = 256 byte tokens */
    TrainOptions o;  /* the whole numbers; its rates come from the doubles below */
    double lr, lr_final, weight_decay, clip, init_std;
    double repeat_share, span_share, short_repeat_share, short_span_share, alpha_share, embed_share;
    int checkpoint_every, resume, threads, sample_bytes, quiet, force;
    int kernels;          /* --kernels: a KernLevel, or -1: kern_detect's */
    char ckpt_path[4200]; /* the default checkpoint, DIR.ckpt */
    OutFile ckpt;         /* the checkpoint as an output file: only over a checkpoint */
    int saved;            /* checkpoints this run wrote */
    int lock_fd;          /* the flock on CHECKPOINT.lock for the run's duration, or -1 */
    char lock_path[4300];
    int lock_slot;        /* its place on the signal cleanup list (cleanup.h), or -1 */
    char scripts_found[4096]; /* --scripts' default, found from the binary */
} TrainArgs;

/* --bos: a byte 0..255, or none (-1). */
static int parse_bos(const Option *o, const char *v, void *base) {
    TrainArgs *a = base;
    long long b;
    if (strcmp(v, "none") == 0) {
        a->o.bos = -1;
        return 0;
    }
    if (opts_whole(v, -1, 255, &b)) return cli_fail("--bos must be a byte 0..255 or none", v);
    (void)o;
    a->o.bos = (int)b;
    return 0;
}

#define TRAIN_INT(nm, a, m, lo, hi, h) OPT_INT(nm, a, TrainArgs, m, lo, hi, h)
#define TRAIN_DOUBLE(nm, a, m, lo, hi, h) OPT_DOUBLE(nm, a, TrainArgs, m, lo, hi, h)

static const Option TRAIN_OPTIONS[] = {
    OPT_GROUP("input and output"),
    OPT_STRING("--corpus", "FILE", TrainArgs, corpus,
               "the training text (required): its bytes are the tokens"),
    OPT_STRING("--out", "DIR", TrainArgs, out,
               "output folder, made when the training ends and replaced as a whole (required, "
               "but for --grads-out): config.json, model.safetensors, train_log.csv, "
               "train_timing.csv, eval.csv, samples.txt, loss.png and loss.svg"),
    {.kind = OPT_KIND_STRING, .name = "--checkpoint", .arg = "FILE",
     .field = OPT_FIELD(TrainArgs, checkpoint, char *), .dflt = "DIR.ckpt, beside --out",
     .help = "checkpoint file, written whole, only over a checkpoint of this same run (another "
             "run's is refused even with --force; this run's needs --resume, or --force to "
             "start over); removed when the run that wrote or resumed it is complete"},
    TRAIN_INT("--checkpoint-every", "K", checkpoint_every, 0, 10000000,
              "steps between checkpoints; 0: only when stopped (and after the last step, "
              "until the folder is written)"),
    OPT_FLAG("--resume", TrainArgs, resume,
             "continue from the checkpoint (the same options and corpus: others are refused)"),
    OPT_STRING("--grads-out", "DIR", TrainArgs, grads_out,
               "instead of training, run one batch and write into DIR (replaced as a whole) its "
               "token ids, its loss and the gradient of every parameter (grads.safetensors), "
               "with the weights it was taken at"),
    TRAIN_INT("--samples", "N", sample_bytes, 0, 4096, "bytes of each greedy sample"),
    OPT_SCRIPTS(TrainArgs, scripts, "where the chart script train_loss.gp is"),
    OPT_INT_AUTO("--threads", "T", TrainArgs, threads, 1, 256, "OMP_NUM_THREADS",
                 "OpenMP threads (the model's bytes do not depend on them)"),
    OPT_CHOICE("--kernels", "LEVEL", TrainArgs, kernels, cli_parse_kernels, cli_show_kernels,
               CLI_KERNELS_CHOICES, CLI_KERNELS_HELP),
    OPT_QUIET(TrainArgs, quiet),
    OPT_FORCE(TrainArgs, force),
    OPT_GROUP("model shape (V = 256 byte tokens)"),
    TRAIN_INT("--layers", "L", cfg.L, 1, 64, "transformer blocks"),
    TRAIN_INT("--heads", "NH", cfg.NH, 1, 64, "attention heads"),
    TRAIN_INT("--dim", "C", cfg.C, 1, 4096, "width; must be divisible by NH"),
    TRAIN_INT("--ctx", "N", cfg.N, 2, 4096, "context: every training sequence is N bytes"),
    OPT_GROUP("optimisation"),
    TRAIN_INT("--batch", "B", o.B, 1, 4096, "sequences per step"),
    TRAIN_INT("--steps", "S", o.steps, 1, 10000000, "optimizer steps in all"),
    {.kind = OPT_KIND_DOUBLE, .name = "--lr", .arg = "LR", .field = OPT_FIELD(TrainArgs, lr, double),
     .lo = 0, .hi = 1e30, .flags = OPTF_ABOVE_LO, .help = "peak learning rate"},
    TRAIN_INT("--warmup", "W", o.warmup, 0, 10000000,
              "steps of linear warm-up, fewer than --steps"),
    TRAIN_DOUBLE("--lr-final", "F", lr_final, 0, 1,
                 "the rate at the last step, times --lr (cosine decay after the warm-up)"),
    TRAIN_DOUBLE("--weight-decay", "WD", weight_decay, 0, 10,
                 "AdamW's decoupled decay, on the 2-D weights only"),
    TRAIN_DOUBLE("--clip", "G", clip, 0, 1e6, "clip the global gradient norm to G; 0: no clipping"),
    OPT_U64("--seed", "S", TrainArgs, o.seed, "seed of the initial weights and of the batches"),
    {.kind = OPT_KIND_DOUBLE, .name = "--init-std", .arg = "SD",
     .field = OPT_FIELD(TrainArgs, init_std, double), .lo = 0, .hi = 1, .flags = OPTF_ABOVE_LO,
     .help = "initial weights N(0, SD), c_proj N(0, SD/sqrt(2L)); GPT-2 uses 0.02"},
    TRAIN_INT("--eval-every", "E", o.eval_every, 0, 10000000,
              "validation loss every E steps, and after the last; 0: after the last only"),
    OPT_GROUP("training data: text, repeats x[i] = x[i-p] (induction heads), a start byte"),
    {.kind = OPT_KIND_CALLBACK, .name = "--bos", .arg = "B|none", .callback = parse_bos,
     .dflt = "255",
     .help = "start byte at position 0 of every sequence, sample and validation window, "
             "named in config.json (bos_token_id, add_bos_token); refused when the corpus "
             "contains it; none (or -1): no start byte"},
    TRAIN_DOUBLE("--repeat-share", "F", repeat_share, 0, 1,
                 "after the short phase: share of each batch's sequences that repeat a "
                 "segment of p bytes to the end (the rest is plain text)"),
    TRAIN_DOUBLE("--repeat-text", "F", span_share, 0, 1,
                 "share of those repeats whose segment is a span of the training text (the "
                 "others: random printable bytes)"),
    TRAIN_INT("--period-min", "P", o.period_min, 1, 2048, "shortest period p of a repeat"),
    OPT_INT_AUTO("--period-max", "P", TrainArgs, o.period_max, 1, 2048, "--ctx/2",
                 "longest period p, at most --ctx/2; p is drawn per sequence, uniform"),
    TRAIN_INT("--short-steps", "K", o.short_steps, 0, 10000000,
              "the first K steps run at --short-ctx with the short mix (a copying phase)"),
    TRAIN_INT("--short-ctx", "T0", o.short_ctx, 2, 4096,
              "tokens per sequence in the short phase (positions 0..T0-1), at most --ctx; "
              "periods up to T0/2"),
    TRAIN_INT("--short-batch", "B0", o.short_B, 1, 65536,
              "sequences per step in the short phase; B0 x T0 at most --batch x --ctx (the "
              "same buffers): the same tokens per step as the full context at B0 = B x N / T0"),
    TRAIN_DOUBLE("--short-repeat-share", "F", short_repeat_share, 0, 1,
                 "the short phase's share of repeats"),
    TRAIN_DOUBLE("--short-repeat-text", "F", short_span_share, 0, 1,
                 "the short phase's share of repeats that are text spans"),
    OPT_GROUP("training data: the copying curriculum (from --copy-from on)"),
    TRAIN_INT("--copy-from", "K", o.copy_from, 0, 10000000,
              "the first step (0-based) with the two kinds below: after the periodic repeats "
              "have grown an induction head"),
    TRAIN_DOUBLE("--repeat-alphabet", "F", alpha_share, 0, 1,
                 "share of the random-byte repeats whose bytes come from a small alphabet, "
                 "drawn per sequence: one byte then recurs inside the segment, and only "
                 "several bytes before a place say where a copy goes on"),
    TRAIN_INT("--alphabet-min", "K", o.alpha_min, 1, 95, "fewest symbols of a small alphabet"),
    TRAIN_INT("--alphabet-max", "K", o.alpha_max, 1, 95,
              "most symbols of a small alphabet (drawn per sequence, uniform)"),
    TRAIN_DOUBLE("--embed-share", "F", embed_share, 0, 1,
                 "share of each batch's sequences that are text with one span repeated once, "
                 "then the text going on (copying that stops); at most the sequences that do "
                 "not repeat"),
    TRAIN_INT("--embed-min", "Q", o.embed_min, 1, 2048, "shortest span repeated once"),
    TRAIN_INT("--embed-max", "Q", o.embed_max, 1, 2048,
              "longest span repeated once, at most (--ctx - 1)/2; drawn per sequence, uniform"),
    TRAIN_INT("--heads-every", "N", o.heads_every, 0, 10000000,
              "every N steps, the best induction, previous-token and sink scores into "
              "train_log.csv and the progress line; 0: never"),
    OPT_END,
};

static const Command TRAIN = {
    "train", "--corpus FILE --out DIR [options]",
    "Train a GPT-2 with byte tokens (V = 256) on FILE: AdamW, warm-up then cosine decay,\n"
    "gradient clipping, float32, deterministic (the same corpus, options and seed give\n"
    "the same model.safetensors at any thread count). Write it as a Hugging Face folder\n"
    "(config.json, model.safetensors: kvscope run --model DIR reads it) with its\n"
    "training log, the loss chart, the validation bits per byte beside n-gram baselines,\n"
    "and greedy samples. The split is fixed: every 20th block of 8 KiB is validation.\n",
    TRAIN_OPTIONS,
    "Ctrl-C, SIGTERM, SIGHUP (a closed terminal) or SIGPIPE (train | head) writes a\n"
    "checkpoint after the current step and stops (exit status 128 + the signal: 130, 143,\n"
    "129, 141; --out not written); the same command with --resume goes on to the same\n"
    "bytes. A loss or gradient that is not finite stops the run with exit status 2 and\n"
    "keeps the checkpoint of the step before.\n",
};

static void train_args_default(TrainArgs *a) {
    memset(a, 0, sizeof *a);
    a->cfg = config_default();
    a->cfg.L = 4, a->cfg.NH = 6, a->cfg.C = 192, a->cfg.N = 256; /* the shipped model's shape */
    a->o = train_options_default();
    a->lr = a->o.lr, a->lr_final = a->o.lr_final, a->weight_decay = a->o.weight_decay;
    a->clip = a->o.clip, a->init_std = a->o.init_std;
    a->o.period_max = 0; /* half the context, once the context is known (check_args) */
    a->repeat_share = a->o.repeat_share, a->span_share = a->o.span_share;
    a->short_repeat_share = a->o.short_repeat_share, a->short_span_share = a->o.short_span_share;
    a->alpha_share = a->o.alpha_share, a->embed_share = a->o.embed_share;
    a->checkpoint_every = 200;
    a->sample_bytes = 160;
    a->kernels = -1;
}

/* Fail with "<what> (<limit>): <value>". */
static int fail_int(const char *what, int limit, int value) {
    char w[160], v[32];
    snprintf(w, sizeof w, "%s (%d)", what, limit);
    snprintf(v, sizeof v, "%d", value);
    return cli_fail(w, v);
}

/* The periods and the short phase must fit the context; auto_max: --period-max was not
 * given (it is --ctx/2: a short --ctx is then what is wrong). 0, or 2 after the error line. */
static int check_mix(const TrainArgs *a, int auto_max) {
    const TrainOptions *o = &a->o;
    const int N = a->cfg.N, repeats = o->repeat_share > 0 || (o->short_steps && o->short_repeat_share > 0);
    if (o->short_steps && o->short_ctx > N) return fail_int("--short-ctx must be at most --ctx", N, o->short_ctx);
    if (o->short_steps && (long long)o->short_B * o->short_ctx > (long long)o->B * N)
        return fail_int("--short-batch x --short-ctx must be at most --batch x --ctx", o->B * N,
                        o->short_B * o->short_ctx);
    if (!repeats) return 0;
    if (auto_max && o->repeat_share > 0 && o->period_min > N / 2) {
        char what[160], v[32];
        snprintf(what, sizeof what, "--ctx must be at least 2 x --period-min (%d) for the repeats "
                 "(or a smaller --period-min, or --repeat-share 0)", 2 * o->period_min);
        snprintf(v, sizeof v, "%d", N);
        return cli_fail(what, v);
    }
    if (o->period_min > o->period_max)
        return fail_int("--period-min must be at most --period-max", o->period_max, o->period_min);
    if (o->repeat_share > 0 && o->period_max > N / 2)
        return fail_int("--period-max must be at most --ctx/2", N / 2, o->period_max);
    if (o->short_steps && o->short_repeat_share > 0 && o->period_min > o->short_ctx / 2)
        return fail_int("--period-min must be at most --short-ctx/2", o->short_ctx / 2, o->period_min);
    return 0;
}

/* A file option's value ending in '/' names a folder: refused, rather than read or written
 * as the file before the slash. 0, or 2 after the error line. */
static int names_file(const char *option, const char *path) {
    const size_t n = path ? strlen(path) : 0;
    if (n == 0 || path[n - 1] != '/') return 0;
    char what[96];
    snprintf(what, sizeof what, "%s names a file, not a folder (drop the trailing /)", option);
    return cli_fail(what, path);
}

/* The copying curriculum's ranges. 0, or 2 after the error line. */
static int check_copying(const TrainArgs *a) {
    const TrainOptions *o = &a->o;
    if (o->copy_from >= o->steps && (o->alpha_share > 0 || o->embed_share > 0))
        return fail_int("--copy-from must be below --steps", o->steps, o->copy_from);
    if (o->alpha_share > 0 && o->alpha_min > o->alpha_max)
        return fail_int("--alphabet-min must be at most --alphabet-max", o->alpha_max, o->alpha_min);
    if (o->embed_share <= 0) return 0;
    if (o->embed_min > o->embed_max)
        return fail_int("--embed-min must be at most --embed-max", o->embed_max, o->embed_min);
    if (2 * o->embed_max > a->cfg.N - 1)
        return fail_int("--embed-max must be at most (--ctx - 1)/2", (a->cfg.N - 1) / 2, o->embed_max);
    if (o->embed_share + o->repeat_share > 1.0f + 1e-6f) {
        char v[32];
        snprintf(v, sizeof v, "%g", (double)o->embed_share);
        return cli_fail("--embed-share plus --repeat-share must be at most 1", v);
    }
    return 0;
}

/* The checks that need no file, and the rates into a->o. 0, or 2 after the error line. */
static int check_args(TrainArgs *a) {
    char v[64], what[128];
    if (!a->corpus) return cli_fail("missing option", "--corpus FILE");
    int rc;
    if ((rc = names_file("--corpus", a->corpus)) || (rc = names_file("--checkpoint", a->checkpoint)))
        return rc;
    if (!a->out && !a->grads_out) return cli_fail("missing option", "--out DIR");
    if (cli_kernels_check(a->kernels)) return 2;
    if (a->out && a->grads_out)
        return cli_fail("--grads-out runs one batch instead of the training; drop --out", a->out);
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
    if (a->scripts && !a->grads_out) { /* given: a folder without the script is bad input, now */
        char script[4300], err[4600], what[4700];
        snprintf(script, sizeof script, "%s/train_loss.gp", a->scripts);
        if (gnuplot_check_script(script, err, sizeof err) != 0) {
            snprintf(what, sizeof what, "--scripts: %s", err);
            return cli_error(what);
        }
    }
    if (!a->scripts) { /* the install's; where there is none, the chart's note says so */
        cli_find_scripts(a->scripts_found, sizeof a->scripts_found);
        a->scripts = a->scripts_found;
    }
    if (!gnuplot_quotable(a->scripts)) return cli_fail("--scripts cannot hold a quote", a->scripts);
    a->o.lr = (float)a->lr, a->o.lr_final = (float)a->lr_final;
    a->o.weight_decay = (float)a->weight_decay, a->o.clip = (float)a->clip;
    a->o.init_std = (float)a->init_std;
    a->cfg.bos = a->o.bos; /* the model's config names its start token (config.json) */
    a->o.repeat_share = (float)a->repeat_share, a->o.span_share = (float)a->span_share;
    a->o.short_repeat_share = (float)a->short_repeat_share;
    a->o.short_span_share = (float)a->short_span_share;
    a->o.alpha_share = (float)a->alpha_share, a->o.embed_share = (float)a->embed_share;
    const int auto_max = !a->o.period_max;
    if (auto_max) a->o.period_max = a->cfg.N / 2 > 0 ? a->cfg.N / 2 : 1;
    const int mix = check_mix(a, auto_max);
    return mix ? mix : check_copying(a);
}

/* The default checkpoint: the output folder's path + ".ckpt", spelled without trailing
 * slashes and "/." ("t/." gives t.ckpt); a path ending in "." or ".." resolved first.
 * 0, or 2 after the error line. */
static int default_checkpoint(TrainArgs *a) {
    if (a->checkpoint) return 0;
    const char *base = a->out ? a->out : a->grads_out;
    char real[4096];
    size_t n = strlen(base);
    for (;;) {
        while (n > 1 && base[n - 1] == '/') n--;
        if (n > 2 && base[n - 1] == '.' && base[n - 2] == '/') n -= 2;
        else break;
    }
    const int dots = (n == 1 && base[0] == '.') || (n >= 2 && strncmp(base + n - 2, "..", 2) == 0 &&
                                                    (n == 2 || base[n - 3] == '/'));
    if (dots) {
        if (path_resolve(base, real, sizeof real) != 0) return cli_fail("cannot resolve", base);
        base = real, n = strlen(real);
    }
    if (n + 6 > sizeof a->ckpt_path) return cli_fail("path too long", base);
    snprintf(a->ckpt_path, sizeof a->ckpt_path, "%.*s.ckpt", (int)n, base);
    a->checkpoint = a->ckpt_path;
    return 0;
}

/* 1 when the loss chart can be drawn: gnuplot is there and so is the script (else a
 * note: the run goes on without the chart). */
static int chart_possible(const TrainArgs *a) {
    char script[4300], err[4600];
    if (!gnuplot_found()) {
        if (!a->quiet)
            fprintf(stderr, "kvscope: note: gnuplot not found: no loss chart (install it with: %s)\n",
                    GNUPLOT_INSTALL_HINT);
        return 0;
    }
    snprintf(script, sizeof script, "%s/train_loss.gp", a->scripts);
    if (gnuplot_check_script(script, err, sizeof err) != 0) { /* style.gp, publish.sh too */
        if (!a->quiet) fprintf(stderr, "kvscope: note: no loss chart: %s\n", err);
        return 0;
    }
    return 1;
}

/* The checkpoint of a training run is an output file too: not an input (it may be the
 * one resumed), and only ever over a checkpoint, even with --force. 0, or 2 after the
 * error line. */
static int check_checkpoint(TrainArgs *a, const char *script) {
    char err[8400];
    int rc;
    if (a->grads_out) return 0; /* read with --resume, never written */
    if ((rc = cli_outfile_spares(a->checkpoint, "--checkpoint", "--corpus", a->corpus)) ||
        (rc = cli_outfile_spares(a->checkpoint, "--checkpoint", "--scripts", script)))
        return rc;
    if (outfile_check(&a->ckpt, a->checkpoint, "--checkpoint", TRAIN_CKPT_HEADER, OUTFILE_OURS_ONLY,
                      err, sizeof err))
        return cli_error(err);
    return 0;
}

/* Before any work: the output folder may be replaced, and holds none of the inputs
 * (a swap would delete them); so may the checkpoint. 0, or 2 after the error line. */
static int check_outputs(TrainArgs *a, OutDir *od) {
    char script[4300];
    int rc;
    snprintf(script, sizeof script, "%s/train_loss.gp", a->scripts);
    if ((rc = cli_outdir_check(od, a->out ? a->out : a->grads_out, "train",
                               a->out ? "--out" : "--grads-out", a->force ? OUTDIR_FORCE : 0)) ||
        (rc = cli_outdir_spares(od, "--corpus", a->corpus)) ||
        (rc = cli_outdir_spares(od, "--checkpoint", a->checkpoint)) ||
        (rc = cli_outdir_spares(od, "--scripts", script)))
        return rc;
    return check_checkpoint(a, script);
}

/* The corpus must give one batch and one validation window. 0, or 2. */
static int check_corpus(const TrainArgs *a, const Corpus *c) {
    char what[200], v[4400];
    const size_t T = (size_t)a->cfg.N, need = (size_t)a->o.B * (T + 1);
    if (c->ntrain <= T) {
        snprintf(what, sizeof what, "--ctx longer than the training split of %.60s (%zu bytes)",
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
    const size_t nbos = a->o.bos >= 0 ? corpus_count_byte(c, a->o.bos) : 0;
    if (nbos) {
        snprintf(what, sizeof what, "--bos: the corpus contains byte %d %zu times (a start byte must "
                 "be one it never contains; or --bos none)", a->o.bos, nbos);
        snprintf(v, sizeof v, "%d", a->o.bos);
        return cli_fail(what, v);
    }
    if (corpus_val_windows(c, a->cfg.N) < 1) {
        snprintf(what, sizeof what, "validation split shorter than --ctx + 1 = %zu bytes", T + 1);
        snprintf(v, sizeof v, "%s: %zu validation bytes", a->corpus, c->nval);
        return cli_fail(what, v);
    }
    return 0;
}

/* A fresh run (no --resume) writes its checkpoint over no other run's, --force or not: a
 * checkpoint is hours of a run (its options and corpus in its header). Over this very
 * run's, it goes on only with --force (starting over); else it points at --resume, which
 * is what a user who repeats an interrupted command means. 0, or 2 after the error line. */
static int check_fresh_checkpoint(const TrainArgs *a) {
    struct stat st;
    char msg[4600], what[4800];
    int steps = 0;
    if (a->resume || a->grads_out || lstat(a->checkpoint, &st) != 0) return 0;
    const int rc = train_checkpoint_owner(a->checkpoint, &a->cfg, a->o.B, &a->o, &steps, msg,
                                          sizeof msg);
    if (rc == TRAIN_NOMEM) return cli_fail("out of memory reading", a->checkpoint);
    if (rc == TRAIN_BAD) {
        snprintf(what, sizeof what, "--checkpoint holds a checkpoint whose run cannot be told "
                 "(%s): remove it to start over, or give this run another --checkpoint", msg);
        return cli_error(what);
    }
    if (rc == TRAIN_OTHER_RUN) {
        snprintf(what, sizeof what, "--checkpoint holds another run's checkpoint (step %d; %s), "
                 "kept even with --force: go on with that run's options and --resume, or give "
                 "this run another --checkpoint", steps, msg);
        return cli_fail(what, a->checkpoint);
    }
    if (a->force) {
        if (!a->quiet)
            fprintf(stderr, "kvscope: note: --force: starting over; this run's checkpoint at step "
                    "%d will be replaced: %s\n", steps, a->checkpoint);
        return 0;
    }
    if (rc == TRAIN_OLD_VERSION)
        snprintf(what, sizeof what, "--checkpoint holds this run's checkpoint at step %d (%s): "
                 "--force starts the run over", steps, msg);
    else
        snprintf(what, sizeof what, "--checkpoint holds this run's checkpoint at step %d of %d: "
                 "add --resume to go on from it (or --force to start over)", steps, a->o.steps);
    return cli_fail(what, a->checkpoint);
}

/* ---- progress and stopping ---------------------------------------------------------------- */

/* The signal that asks the run to stop, 0 until then: a signal handler can only reach
 * file scope. */
static volatile sig_atomic_t stop_signal = 0;
static void on_stop(int sig) { stop_signal = sig; }

/* What stops a run after a checkpoint: Ctrl-C, kill, a closed terminal or SSH session,
 * a closed pipe on stdout (train | head). */
static const int STOP_SIGNALS[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
enum { NSTOP = sizeof STOP_SIGNALS / sizeof STOP_SIGNALS[0] };

static const char *stop_words(int sig) {
    return sig == SIGTERM ? "terminated" : sig == SIGHUP ? "hung up (SIGHUP)"
         : sig == SIGPIPE ? "stdout closed (SIGPIPE)" : "interrupted";
}

typedef struct {
    int quiet, first_step;
    double first_seconds;
} Progress;

/* A line every 10 steps, at an evaluation and at the first and last step. */
static void progress(void *user, const TrainLogRow *r, int steps) {
    Progress *p = user;
    if (p->first_step < 0) {
        p->first_step = r->step - 1;
        p->first_seconds = r->seconds;
    }
    const int done = r->step - p->first_step;
    if (p->quiet || !(r->step % 10 == 0 || r->step == steps || !isnan(r->val_loss) ||
                      !isnan(r->induction) || done == 1))
        return;
    const double per = done > 1 ? (r->seconds - p->first_seconds) / (done - 1) : 0.0;
    const long eta = (long)(per * (steps - r->step) + 0.5);
    char val[48] = "";
    if (!isnan(r->val_loss))
        snprintf(val, sizeof val, "  val %.4f (%.3f bits/byte)", (double)r->val_loss,
                 r->val_loss / M_LN2);
    char heads[80] = "";
    if (!isnan(r->induction))
        snprintf(heads, sizeof heads, "  induction %.2f prev %.2f sink %.2f", (double)r->induction,
                 (double)r->prev_token, (double)r->sink);
    printf("step %6d/%d  loss %.4f%s  lr %.2e  |g| %.3f  %.0f tok/s%s  ETA %ld:%02ld\n", r->step,
           steps, (double)r->train_loss, val, (double)r->lr, (double)r->grad_norm,
           (double)r->tokens_per_s, heads, eta / 60, eta % 60);
    fflush(stdout);
}

/* ---- set up -------------------------------------------------------------------------------- */

/* Load the corpus, build the trainer, resume if asked. 0, or 2 after the error line
 * (nothing left to free). */
static int setup(TrainArgs *a, Corpus *c, Trainer *tr, TrainLog *log) {
    char err[4600];
    int rc = corpus_load(c, a->corpus, err, sizeof err);
    if (rc) return rc == CORPUS_NOMEM ? cli_fail("out of memory reading", a->corpus)
                                      : cli_fail("--corpus", err);
    a->o.corpus_size = c->size, a->o.corpus_hash = c->hash; /* kept in the checkpoint */
    if ((rc = check_corpus(a, c)) == 0 && trainer_init_std(tr, &a->cfg, a->o.B, a->o.seed, a->o.init_std)) {
        fprintf(stderr, "kvscope: out of memory: a model of %zu parameters with batch %d\n",
                model_num_params(&a->cfg), a->o.B);
        rc = 2;
    } else if (rc == 0 && a->kernels >= 0 && trainer_set_kernels(tr, (KernLevel)a->kernels)) {
        trainer_free(tr);
        rc = cli_fail("out of memory packing the weights for --kernels",
                      kern_name((KernLevel)a->kernels));
    } else if (rc == 0 && (rc = check_fresh_checkpoint(a))) {
        trainer_free(tr);
    } else if (rc == 0 && a->resume) {
        rc = train_checkpoint_load(tr, &a->o, log, a->checkpoint, err, sizeof err);
        if (rc) rc = rc == TRAIN_NOMEM ? cli_fail("out of memory reading", a->checkpoint)
                                       : cli_fail("--resume", err);
        if (rc) trainer_free(tr);
    }
    if (rc == 0 && log->n && log->rows[log->n - 1].step > a->o.steps) {
        char what[4400], v[32];
        snprintf(what, sizeof what, "--steps below the %d steps of the checkpoint %s",
                 log->rows[log->n - 1].step, a->checkpoint);
        snprintf(v, sizeof v, "%d", a->o.steps);
        train_log_free(log);
        trainer_free(tr);
        rc = cli_fail(what, v);
    }
    if (rc) corpus_free(c);
    return rc;
}

static void set_threads(const TrainArgs *a) {
    if (!a->threads) return;
#ifdef _OPENMP
    omp_set_num_threads(a->threads);
#else
    if (a->threads > 1 && !a->quiet)
        fprintf(stderr, "kvscope: note: built without OpenMP (make OMP=1): --threads %d runs on 1\n",
                a->threads);
#endif
}

/* ---- --grads-out ------------------------------------------------------------------------- */

static int run_grads(const TrainArgs *a, const Corpus *c, Trainer *tr, const TrainLog *log,
                     OutDir *od) {
    char err[8400];
    const int step = log->n ? log->rows[log->n - 1].step : 0;
    const CorpusMix mix = train_mix(&a->o, step, tr->model.cfg.N);
    trainer_set_batch(tr, mix.B, mix.T); /* check_mix: it fits */
    corpus_batch(c, a->o.seed, step, &mix, tr->inputs, tr->targets, NULL);
    const float loss = trainer_forward(tr, tr->inputs, tr->targets);
    trainer_backward(tr);
    int rc = cli_outdir_begin(od);
    if (rc) return rc;
    const int e = train_write_grads(tr, loss, od, err, sizeof err);
    if (e) cli_outdir_error(od, err);
    if ((rc = cli_outdir_end(od, e ? 2 : 0, 0)) == 0 && !a->quiet)
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

/* The loss chart into the begun folder; a failure is a note (the model is written). */
static void draw_chart(const TrainArgs *a, const OutDir *od) {
    char script[4300], vars[13000], msg[512];
    if (!gnuplot_quotable(od->tmp)) {
        fprintf(stderr, "kvscope: note: no loss chart: --out resolves to a path with a quote: %s\n",
                a->out);
        return;
    }
    snprintf(script, sizeof script, "%s/train_loss.gp", a->scripts);
    snprintf(vars, sizeof vars, "log='%s/train_log.csv'; eval='%s/eval.csv'; out='%s/loss'", od->tmp,
             od->tmp, od->tmp);
    const int rc = gnuplot_run(script, vars, msg, sizeof msg);
    char out[4400], missing[4500];
    snprintf(out, sizeof out, "%s/loss", od->tmp);
    char shown[600]; /* gnuplot's words name the temporary folder: the user's name instead */
    outdir_shown(od, msg, shown, sizeof shown);
    if (rc) fprintf(stderr, "kvscope: note: no loss chart: gnuplot failed on %s (status %d): %s\n",
                    script, rc, shown[0] ? shown : "no message");
    else if (!gnuplot_wrote(out, missing, sizeof missing))
        fprintf(stderr, "kvscope: note: no loss chart: gnuplot wrote no %s/%s: %s\n", a->out,
                strrchr(missing, '/') + 1, script);
}

/* The held-out bits per byte, the baselines and the samples, then the folder. 0, or 2. */
static int finish(const TrainArgs *a, const Corpus *c, Trainer *tr, const TrainLog *log, OutDir *od,
                  int chart) {
    char err[8400];
    const size_t windows = corpus_val_windows(c, tr->T);
    float val = log->rows[log->n - 1].val_loss;
    if (isnan(val)) val = trainer_eval(tr, c, windows, a->o.bos); /* resumed at the last step */
    TrainEval ev = {.model = val / M_LN2, .targets = windows * (size_t)tr->T};
    for (int k = 0; k < 3; k++)
        if (corpus_ngram_bits(c, k, tr->T, &ev.ngram[k], &ev.alpha[k]))
            return cli_fail("out of memory", "n-gram baselines");
    TrainSample s[NSAMPLES];
    for (int i = 0; i < NSAMPLES; i++) s[i].prompt = SAMPLE_PROMPTS[i];
    int steps = a->sample_bytes;
    if (steps > tr->T - 17) steps = tr->T - 17 > 0 ? tr->T - 17 : 0;
    int rc = train_samples(tr, s, NSAMPLES, steps, a->o.bos);
    if (rc == TRAIN_NOMEM) {
        train_samples_free(s, NSAMPLES);
        return cli_fail("out of memory", "samples");
    }
    for (int i = 0; i < NSAMPLES && rc; i++) s[i].len = 0; /* prompts that do not fit */
    if ((rc = cli_outdir_begin(od)) == 0) {
        const int e = train_write(tr, log, &ev, s, NSAMPLES, od, err, sizeof err);
        if (e) cli_outdir_error(od, err);
        else if (chart) draw_chart(a, od);
        rc = cli_outdir_end(od, e ? 2 : 0, 0);
    }
    train_samples_free(s, NSAMPLES);
    if (rc) return rc;
    /* the run is complete: the folder holds everything; a checkpoint this run wrote or
     * resumed from goes (none written: whatever is there stays) */
    if ((a->resume || a->saved) && outfile_remove(&a->ckpt) != 0 && !a->quiet)
        fprintf(stderr, "kvscope: note: the checkpoint stays (no longer a checkpoint, or not "
                "removable): %s\n", a->checkpoint);
    if (!a->quiet)
        printf("wrote %s: validation %.3f bits/byte on %zu bytes (unigram %.3f, order-1 %.3f, "
               "order-2 %.3f)\n", a->out, ev.model, ev.targets, ev.ngram[0], ev.ngram[1], ev.ngram[2]);
    return 0;
}

/* train_loop with the stop signals caught: they stop it after a checkpoint. SIGHUP or
 * SIGPIPE that the parent ignores (nohup) stays ignored. The loop saves its last step
 * too, so a stop after it (while the folder is written: the handlers restored, which
 * remove the temporary folder and end the process) keeps the whole run. */
static int train_caught(TrainArgs *a, const Corpus *c, Trainer *tr, TrainLog *log,
                        int *bad, char *err, size_t errsize) {
    struct sigaction sa, old[NSTOP];
    int caught[NSTOP] = {0};
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    cleanup_install(); /* what is restored after the loop */
    stop_signal = 0;
    for (int i = 0; i < NSTOP; i++) {
        const int sig = STOP_SIGNALS[i];
        if (sigaction(sig, NULL, &old[i]) != 0 ||
            ((sig == SIGHUP || sig == SIGPIPE) && old[i].sa_handler == SIG_IGN))
            continue;
        caught[i] = sigaction(sig, &sa, NULL) == 0;
    }
    if (!a->quiet) /* after the handlers: a signal from the moment this line is seen saves */
        printf("training %zu parameters (L=%d NH=%d C=%d N=%d V=%d) on %zu bytes, batch %d x %d, "
               "%d steps, %s kernels\n", tr->model.w.num_params, a->cfg.L, a->cfg.NH, a->cfg.C,
               a->cfg.N, a->cfg.V, c->ntrain, a->o.B, a->cfg.N, a->o.steps, kern_name(tr->lv));
    /* a stdout that fails (train > /dev/full) fails the run now, not after hours, and
     * with the errno of the failed write (a later flush would find nothing to write) */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        snprintf(err, errsize, "cannot write (%s): stdout", write_error_text(errno));
        for (int i = 0; i < NSTOP; i++)
            if (caught[i]) sigaction(STOP_SIGNALS[i], &old[i], NULL);
        return TRAIN_BAD;
    }
    Progress p = {.quiet = a->quiet, .first_step = -1};
    const TrainLoopCtl ctl = {a->checkpoint, a->checkpoint_every, &stop_signal, progress, &p,
                              &a->saved};
    int rc = train_loop(tr, c, &a->o, log, &ctl, bad, err, errsize);
    if (rc == TRAIN_OK && stop_signal) rc = TRAIN_STOPPED; /* after the last step's checkpoint */
    for (int i = 0; i < NSTOP; i++)
        if (caught[i]) sigaction(STOP_SIGNALS[i], &old[i], NULL);
    return rc;
}

static int run_training(TrainArgs *a, const Corpus *c, Trainer *tr, TrainLog *log, OutDir *od) {
    char err[4600];
    const int chart = chart_possible(a);
    int bad = 0;
    const int rc = train_caught(a, c, tr, log, &bad, err, sizeof err);
    const int done = log->n ? log->rows[log->n - 1].step : 0;
    if (rc == TRAIN_OK) {
        const int f = finish(a, c, tr, log, od, chart);
        if (f && a->saved && !a->quiet) /* the folder failed, not the training */
            fprintf(stderr, "kvscope: note: checkpoint %s holds all %d steps: the same command "
                    "with --resume writes the folder again\n", a->checkpoint, done);
        return f;
    }
    if (rc == TRAIN_STOPPED) {
        fprintf(stderr, "kvscope: %s after step %d: checkpoint %s; the same command with "
                "--resume goes on\n", stop_words((int)stop_signal), done, a->checkpoint);
        return 128 + (int)stop_signal;
    }
    if (rc == TRAIN_NONFINITE) {
        fprintf(stderr, "kvscope: loss or gradient not finite at step %d (a lower --lr?): stopped; "
                "checkpoint %s holds step %d\n", bad, a->checkpoint, done);
        return 2;
    }
    return rc == TRAIN_NOMEM ? cli_fail("out of memory", "training") : cli_error(err);
}

/* Two runs at once with one --checkpoint would write over each other's saves (the
 * header check at the start sees nothing yet): the run holds an advisory lock, flock(2)
 * on CHECKPOINT.lock, from before that check to its end; a second run meets it and
 * stops. The lock dies with the process (kill -9 included); the file goes at the end.
 * 0, or 2 after the error line. (A lock file that cannot be made locks nothing: the
 * checks that follow name what is wrong with the path.) */
/* What a lock file of kvscope's holds: a file without it is someone else's, never taken
 * over or removed. */
static const char LOCK_TEXT[] = "kvscope train: this checkpoint is in use; removed when the run ends\n";

/* The run's lock file, CHECKPOINT.lock: made new (O_EXCL) with LOCK_TEXT, or an earlier
 * run's left by a kill (it holds LOCK_TEXT). fd; or -1, after the error line (*rc = 2) when
 * the file there is not kvscope's, with *rc 0 when it cannot be made at all. */
static int open_lock(const char *path, int *rc) {
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
        const ssize_t n = write(fd, LOCK_TEXT, sizeof LOCK_TEXT - 1);
        if (n == (ssize_t)(sizeof LOCK_TEXT - 1)) return fd;
        close(fd);
        unlink(path);
        *rc = cli_fail("cannot write the checkpoint's lock file", path);
        return -1;
    }
    /* no folder to make it in, or no right to: the checks of the outputs that follow name
     * the real problem, and a run that cannot write there writes no checkpoint either */
    if (errno != EEXIST) return -1;
    char have[sizeof LOCK_TEXT] = {0};
    struct stat st;
    fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    /* empty: a run killed between making it and writing it (an empty file holds nothing) */
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 &&
        write(fd, LOCK_TEXT, sizeof LOCK_TEXT - 1) == (ssize_t)(sizeof LOCK_TEXT - 1))
        return fd;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size != (off_t)(sizeof LOCK_TEXT - 1) ||
        read(fd, have, sizeof LOCK_TEXT - 1) != (ssize_t)(sizeof LOCK_TEXT - 1) ||
        memcmp(have, LOCK_TEXT, sizeof LOCK_TEXT - 1) != 0) {
        if (fd >= 0) close(fd);
        *rc = cli_fail("the checkpoint's lock file CHECKPOINT.lock exists and is not kvscope's; "
                       "kvscope never replaces it (give another --checkpoint)", path);
        return -1;
    }
    return fd;
}

static int lock_checkpoint(TrainArgs *a) {
    a->lock_fd = -1;
    if (!a->out || snprintf(a->lock_path, sizeof a->lock_path, "%s.lock", a->checkpoint) >=
                       (int)sizeof a->lock_path)
        return 0;
    int rc = 0;
    const int fd = open_lock(a->lock_path, &rc);
    if (fd < 0) return rc;
    struct stat held, now; /* still the file at the path: not one another run just removed */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, &held) != 0 ||
        stat(a->lock_path, &now) != 0 || held.st_ino != now.st_ino || held.st_dev != now.st_dev) {
        close(fd);
        return cli_fail("--checkpoint is in use by another training run right now (it holds "
                        "CHECKPOINT.lock); wait for it to end, or give this run another --checkpoint",
                        a->checkpoint);
    }
    a->lock_fd = fd;
    char real[4096]; /* a stop while the folder is written ends the process there: listed */
    a->lock_slot = path_resolve(a->lock_path, real, sizeof real) == 0 ? cleanup_add(real) : -1;
    return 0;
}

static void unlock_checkpoint(TrainArgs *a) {
    if (a->lock_fd < 0) return;
    unlink(a->lock_path); /* while still held: no other run holds this file */
    cleanup_drop(a->lock_slot);
    close(a->lock_fd);
    a->lock_fd = -1;
}

static int train_locked(TrainArgs *a);

int cmd_train(int argc, char **argv) {
    TrainArgs a;
    train_args_default(&a);
    int rc = opts_parse(&TRAIN, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    if ((rc = check_args(&a)) || (rc = default_checkpoint(&a)) || (rc = lock_checkpoint(&a)))
        return rc;
    rc = train_locked(&a);
    unlock_checkpoint(&a);
    return rc;
}

static int train_locked(TrainArgs *a) {
    OutDir od;
    int rc = check_outputs(a, &od);
    if (rc) return rc;
    set_threads(a);
    if (a->out) outfile_clean_stale(&a->ckpt); /* what killed saves left, saving or not */
    if (a->out) cli_note_left(a->ckpt.left, a->ckpt.nleft);
    Corpus c;
    Trainer tr;
    TrainLog log = {0};
    if ((rc = setup(a, &c, &tr, &log))) return rc;
    rc = a->grads_out ? run_grads(a, &c, &tr, &log, &od) : run_training(a, &c, &tr, &log, &od);
    train_log_free(&log);
    trainer_free(&tr);
    corpus_free(&c);
    return rc;
}
