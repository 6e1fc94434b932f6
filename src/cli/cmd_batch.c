/* cmd_batch.c — `kvscope batch`: many sequences decoded together.
 * parse → check --out → read the prompts → load → every prompt alone → the batch →
 * prefix reuse → the summary lines. The work is batch_run.h's; this file prints. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_run.h"
#include "cli.h"
#include "commands.h"
#include "generate.h"
#include "infile.h"
#include "numfmt.h"
#include "outdir.h"
#include "roofline.h"
#include "sysinfo.h"

#define BATCH_TOL 1e-5   /* absolute, on logits of order 1 */
#define BATCH_MAX_SEQS 256
#define BATCH_PROMPTS_MAX (16u << 20) /* bytes of a --prompts file */

typedef struct {
    ModelArgs model;
    const char *prompts_file;
    const char *texts[BATCH_MAX_SEQS];
    int n_texts;
    const char *steps_spec;
    int no_mask, paged, block_size, table_step, quiet, force;
    int roofline;               /* --roofline B: the sweep to B sequences instead */
    const char *out;
} BatchArgs;

static int add_prompt(const Option *o, const char *v, void *base) {
    BatchArgs *a = base;
    (void)o;
    if (a->n_texts == BATCH_MAX_SEQS) return cli_fail("too many prompts (at most 256)", v);
    a->texts[a->n_texts++] = v;
    return 0;
}

static int refuse_ids(const Option *o, const char *v, void *base) {
    (void)v, (void)base;
    return cli_fail("batch takes --prompt or --prompts", o->name);
}

static const Option BATCH_OPTIONS[] = {
    OPT_GROUP("batch options"),
    OPT_STRING("--prompts", "FILE", BatchArgs, prompts_file,
               "one prompt per line (blank lines, and lines of only spaces and tabs, are "
               "skipped)"),
    OPT_CALLBACK("--prompt", "TEXT", add_prompt, "a prompt; repeat for more (instead of --prompts)"),
    {.kind = OPT_KIND_CALLBACK, .name = "--prompt-ids", .arg = "LIST", .callback = refuse_ids,
     .flags = OPTF_HIDDEN},
    OPT_STRING("--steps", "N|LIST", BatchArgs, steps_spec,
               "decode steps, for all or one per prompt, e.g. 40,12,28"),
    OPT_FLAG("--no-mask", BatchArgs, no_mask,
             "pad the caches with zeros and stack them WITHOUT an attention mask, as the "
             "article's pad_kv_cache does: the logits change (exit 1 when they do)"),
    OPT_FLAG("--paged", BatchArgs, paged,
             "use the paged cache (blocks, free list, block tables) and compare three ways of "
             "reserving memory"),
    OPT_INT("--block-size", "N", BatchArgs, block_size, 1, 65536,
            "tokens per block of the paged cache (vLLM's default too)"),
    OPT_INT_AUTO("--table-step", "S", BatchArgs, table_step, 0, 65536, "half the longest run",
                 "the decode step whose block table blocks.csv/png show"),
    OPT_INT_AUTO("--roofline", "B", BatchArgs, roofline, 1, BATCH_MAX_SEQS, "no sweep",
            "instead: decode B = 1, 2, 4, ... B copies of the first prompt together and write "
            "roofline.csv (counted FLOPs and bytes per step, measured times)"),
    OPT_STRING("--out", "DIR", BatchArgs, out, "output folder, replaced as a whole"),
    OPT_FLAG("--quiet", BatchArgs, quiet, "print only the summary lines"),
    OPT_FORCE(BatchArgs, force),
    OPT_INCLUDE(BatchArgs, model, MODEL_ONLY_OPTIONS),
    OPT_END,
};

static const Command BATCH = {
    "batch", "[options]",
    "Run several prompts alone, then decode them together one token per sequence per\n"
    "step, and compare every sequence's logits with its run alone. Writes into --out:\n"
    "diff.csv, summary.csv, prefix.csv, timing.csv (measured), and padding.csv (padded\n"
    "cache) or memory.csv, memory.md, waste.csv, blocks.csv, blocks.png (--paged).\n"
    "With --roofline B, only the batch-size sweep: roofline.csv.\n",
    BATCH_OPTIONS, NULL,
};

static int parse_batch(int argc, char **argv, BatchArgs *a) {
    memset(a, 0, sizeof *a);
    model_args_default(&a->model);
    a->steps_spec = "16";
    a->block_size = 16;
    a->table_step = -1;
    a->out = "kvscope_batch";
    int rc = opts_parse(&BATCH, argc, argv, a);
    if (rc) return rc;
    if (a->prompts_file && a->n_texts) return cli_fail("give --prompts or --prompt, not both", a->prompts_file);
    if (a->no_mask && a->paged) return cli_fail("--no-mask is for the padded cache, not with", "--paged");
    if (a->roofline && (a->paged || a->no_mask))
        return cli_fail("--roofline runs the padded cache with its mask, not with", a->paged ? "--paged" : "--no-mask");
    return 0;
}

/* 1 if the line holds nothing but spaces and tabs: it looks blank, so it is skipped as
 * blank lines are (a prompt of spaces would run unseen). */
static int looks_blank(const char *line) {
    return line[strspn(line, " \t\v\f")] == '\0';
}

/* Lines of a prompts file (a regular file of at most BATCH_PROMPTS_MAX bytes) into
 * a->texts; *buf keeps the text alive. 0 or 2. */
static int read_prompts(BatchArgs *a, char **buf) {
    char *s, err[4600];
    size_t n;
    int rc = infile_read(a->prompts_file, BATCH_PROMPTS_MAX, &s, &n, err, sizeof err);
    if (rc == INFILE_NOMEM) return cli_fail("out of memory reading", a->prompts_file);
    if (rc) return cli_fail("--prompts", err);
    if (strlen(s) != n) {
        free(s);
        return cli_fail("--prompts holds a NUL byte", a->prompts_file);
    }
    for (char *line = s; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[--len] = '\0';
        if (len && !looks_blank(line)) {
            if (a->n_texts == BATCH_MAX_SEQS) {
                free(s);
                return cli_fail("too many prompts (at most 256) in", a->prompts_file);
            }
            a->texts[a->n_texts++] = line;
        }
        line = nl ? nl + 1 : NULL;
    }
    if (a->n_texts == 0) {
        free(s);
        return cli_fail("no prompts in --prompts (one per line)", a->prompts_file);
    }
    *buf = s;
    return 0;
}

/* The prompts as tokens, checked against the model: each non-empty, within the context
 * with its steps, every id in the vocabulary. 0, or 2 after the error line. */
static int tokenize_prompts(const BatchArgs *a, const Loaded *ld, const int *steps, int nsteps,
                            BatchRun *r) {
    const Config *cfg = &ld->model.cfg;
    char num[64], what[160];
    for (int b = 0; b < r->B; b++) {
        r->steps[b] = steps[nsteps == 1 ? 0 : b];
        if (tokenizer_encode(ld->tok, a->texts[b], &r->tok[b], &r->T[b]) ||
            (r->T[b] && tokenizer_add_start(cfg->bos, &r->tok[b], &r->T[b])))
            return cli_fail("out of memory", "prompts");
        if (r->T[b] == 0) {
            snprintf(num, sizeof num, "prompt %d", b + 1);
            return cli_fail("empty prompt", num);
        }
        if (r->T[b] > cfg->N || (long)r->T[b] + r->steps[b] > cfg->N) {
            snprintf(what, sizeof what, "%s longer than the context (%d tokens)",
                     r->T[b] > cfg->N ? "prompt" : "prompt + --steps", cfg->N);
            snprintf(num, sizeof num, "prompt %d: %d + %d tokens", b + 1, r->T[b], r->steps[b]);
            return cli_fail(what, num);
        }
        for (int t = 0; t < r->T[b]; t++) {
            if (r->tok[b][t] < cfg->V) continue;
            snprintf(what, sizeof what, "token id out of range (vocab %d)", cfg->V);
            snprintf(num, sizeof num, "prompt %d: %d", b + 1, r->tok[b][t]);
            return cli_fail(what, num);
        }
    }
    return 0;
}

/* The prompts, the model, and every prompt's run alone. 0, or 2 after the error line. */
static int load(BatchArgs *a, Loaded *ld, BatchRun *r) {
    int steps[BATCH_MAX_SEQS], nsteps = 0, rc;
    if (opts_int_list("--steps", a->steps_spec, 0, 65536, steps, BATCH_MAX_SEQS, &nsteps)) return 2;
    if (nsteps != 1 && nsteps != a->n_texts) {
        char what[96];
        snprintf(what, sizeof what, "--steps needs one number or one per prompt (%d)", a->n_texts);
        return cli_fail(what, a->steps_spec);
    }
    /* the model and the tokenizer (with the first prompt); every prompt is checked below */
    a->model.prompt = a->texts[0];
    a->model.prompt_ids = NULL;
    if ((rc = model_args_load(&a->model, 0, ld))) return rc;
    if (batch_run_init(r, a->n_texts)) return cli_fail("out of memory", "prompts");
    if ((rc = tokenize_prompts(a, ld, steps, nsteps, r))) return rc;
    if (batch_run_alloc(r, ld->model.cfg.V)) return cli_fail("out of memory", "sequences");
    rc = batch_run_alone(&ld->model, r);
    if (rc == GEN_NONFINITE) {
        fprintf(stderr, "kvscope: non-finite logits running the prompts alone (the model's "
                        "numbers overflow float32)\n");
        return 2;
    }
    if (rc) {
        fprintf(stderr, "kvscope: out of memory: %d sequences\n", r->B);
        return 2;
    }
    return 0;
}

/* The line of one batched step. */
static void print_step(const BatchStep *st, void *user) {
    const BatchArgs *a = user;
    char h1[32], h2[32];
    if (a->quiet) return;
    const char *phase = st->step ? "decode " : "prefill";
    if (a->paged)
        printf("%s %-3d rows %-3d blocks %-4d reserved %s, holding tokens %s  "
               "max |dlogit| vs alone %.3g\n",
               phase, st->step, st->rows, st->blocks, human_bytes((double)st->reserved, h1, sizeof h1),
               human_bytes((double)st->used, h2, sizeof h2), st->worst);
    else
        printf("%s %-3d rows %-3d width %-4d padding %s of %s  max |dlogit| vs alone %.3g\n", phase,
               st->step, st->rows, st->width, human_bytes((double)(st->stacked - st->used), h1, sizeof h1),
               human_bytes((double)st->stacked, h2, sizeof h2), st->worst);
}

static void print_prefix(const PrefixPair *p, void *user) {
    const BatchArgs *a = user;
    if (a->quiet) return;
    printf("prefix reuse: prompt %d starts with prompt %d (%d of %d tokens cached): "
           "FLOPs %.3g -> %.3g (%.1f %% saved), time %.3g ms -> %.3g ms, "
           "max |dlogit| vs fresh prefill = %.3g\n",
           p->second, p->first, p->prefix_tokens, p->prefix_tokens + p->new_tokens,
           (double)p->flops_fresh, (double)p->flops_reuse, p->pct_saved, p->seconds_fresh * 1e3,
           p->seconds_reuse * 1e3, p->max_abs_diff);
}

/* The batch and prefix reuse, into the files of od (begun). 0, or 2 after the line. */
static int run(BatchArgs *a, Loaded *ld, BatchRun *r, const OutDir *od, BatchTotals *tot) {
    const BatchMode mode = a->paged ? BATCH_PAGED : a->no_mask ? BATCH_UNMASKED : BATCH_MASKED;
    BatchFiles f;
    char err[8400];
    int rc = batch_files_open(&f, od, mode, err, sizeof err);
    if (rc == 0 && (rc = batch_run_together(&ld->model, r, mode, a->block_size, a->table_step, &f,
                                            tot, print_step, a, err, sizeof err)))
        cli_outdir_error(od, err);
    else if (rc) cli_error(err);
    if (rc == 0 && (rc = batch_run_prefix(&ld->model, r, &f, tot, print_prefix, a)))
        fprintf(stderr, "kvscope: prefix reuse failed (out of memory?)\n");
    const int closed = batch_files_close(&f);
    if (rc == 0 && closed) {
        fprintf(stderr, "kvscope: --out: cannot write (%s): %s\n", write_error_text(errno), a->out);
        rc = 2;
    }
    return rc ? 2 : 0;
}

/* The lines that judge the run: 0 when the batch matched its runs alone, else 1, by
 * the one exit rule (1: logits that differ were found). Without the mask, too: the
 * difference is what it demonstrates, as with verify --article-bug. */
static int report(const BatchArgs *a, const BatchTotals *t) {
    int ok = t->worst <= BATCH_TOL;
    const double pre = 100.0 * t->sum_used / t->sum_pre, dbl = 100.0 * t->sum_used / t->sum_dbl,
                 pag = 100.0 * t->sum_used / t->sum_pag;
    if (!a->no_mask)
        printf("%s batch vs each sequence alone: max |dlogit| = %.3g over %d logit rows "
               "(tolerance %.0e): %s\n",
               a->paged ? "paged" : "padded + mask", t->worst, t->compared, BATCH_TOL,
               ok ? "OK" : "MISMATCH");
    else
        printf("padded WITHOUT mask (pad_kv_cache) vs alone: max |dlogit| = %.3g, max |dlog p| "
               "= %.3g; greedy token differs in %d of %d logit rows (the padding takes part "
               "in the softmax)\n",
               t->worst, t->worst_lp, t->differs, t->compared);
    if (a->paged) {
        printf("bytes holding tokens / bytes reserved, over all steps: preallocate %.1f %%, "
               "doubling %.1f %%, paged (blocks of %d) %.1f %%\n", pre, dbl, a->block_size, pag);
        if (!t->books_ok) {
            fprintf(stderr, "kvscope: paged block accounting is inconsistent\n");
            ok = 0;
        }
    } else {
        printf("padding: %.1f %% of the stacked cache's bytes over all steps\n",
               100.0 * t->sum_pad / t->sum_stk);
    }
    if (t->prefix_worst > BATCH_TOL) ok = 0;
    if (!a->quiet) printf("wrote %s/\n", a->out);
    return ok ? 0 : 1;
}

/* ---- --roofline ------------------------------------------------------------------- */

/* Refuses a sweep whose largest batch needs more memory than the system has left.
 * 0, or 2 after the line naming the size. */
static int roofline_fits(const BatchArgs *a, const Config *cfg, int T, int steps) {
    uint64_t need;
    char v[160], h1[32], h2[32];
    const size_t avail = mem_available_bytes();
    const int over = roofline_bytes_needed(cfg, a->roofline, T, steps, &need) != 0;
    if (!over && (avail == 0 || need <= avail)) return 0;
    if (over) snprintf(v, sizeof v, "--roofline %d: more than 2^64 bytes", a->roofline);
    else
        snprintf(v, sizeof v, "--roofline %d: %s of KV cache and logits, %s available", a->roofline,
                 human_bytes((double)need, h1, sizeof h1), human_bytes((double)avail, h2, sizeof h2));
    return cli_fail("roofline sweep larger than memory allows", v);
}

/* roofline.csv of the sweep, into the begun od. 0, or -1 (errno). */
static int write_roofline(const OutDir *od, const RoofPoint *p, int n) {
    char err[8400];
    FILE *f = outdir_fopen(od, "roofline.csv", err, sizeof err);
    if (!f) return -1;
    fprintf(f, "B,flops_step,bytes_step,flops_per_byte,ttft_s,step_s,gflops_s\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%d,%.0f,%.0f,%.4f,%.6f,%.6f,%.4f\n", p[i].B, p[i].flops, p[i].bytes,
                p[i].flops / p[i].bytes, p[i].ttft_s, p[i].step_s, p[i].flops / p[i].step_s / 1e9);
    return file_close(f);
}

/* The sweep: the first prompt, --steps decode steps, B = 1, 2, 4, ... --roofline. */
static int run_roofline(BatchArgs *a, OutDir *od) {
    int steps[1], n = 0, rc;
    if (opts_int_list("--steps", a->steps_spec, 1, 65536, steps, 1, &n)) return 2;
    Loaded ld;
    Config cfg;
    memset(&ld, 0, sizeof ld);
    a->model.prompt = a->texts[0];
    a->model.prompt_ids = NULL;
    if ((rc = model_args_prompt(&a->model, steps[0], &cfg, &ld)) == 0) rc = roofline_fits(a, &cfg, ld.T, steps[0]);
    loaded_free(&ld);
    if (rc || (rc = model_args_load(&a->model, steps[0], &ld))) return rc;
    RoofPoint pts[ROOFLINE_MAX_POINTS];
    if (roofline_sweep(&ld.model, ld.prompt, ld.T, steps[0], a->roofline, pts, &n)) {
        loaded_free(&ld);
        return cli_fail("out of memory", "--roofline");
    }
    loaded_free(&ld);
    for (int i = 0; i < n && !a->quiet; i++)
        printf("B %-3d  %.3g FLOPs and %.3g bytes per step (%.2f FLOPs/byte)  step %.3f ms  "
               "prefill of the batch %.3f ms\n", pts[i].B, pts[i].flops, pts[i].bytes,
               pts[i].flops / pts[i].bytes, pts[i].step_s * 1e3, pts[i].ttft_s * 1e3);
    if ((rc = cli_outdir_begin(od))) return rc;
    if ((rc = cli_outdir_end(od, 0, write_roofline(od, pts, n) != 0)) == 0)
        printf("wrote %s/roofline.csv\n", a->out);
    return rc;
}

int cmd_batch(int argc, char **argv) {
    BatchArgs a;
    OutDir od;
    Loaded ld;
    BatchRun r;
    BatchTotals tot;
    char *filebuf = NULL;
    int rc = parse_batch(argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    if ((rc = cli_outdir_check(&od, a.out, "batch", "--out", a.force ? OUTDIR_FORCE : 0)) ||
        (rc = cli_outdir_spares(&od, "--model", a.model.model_dir)) ||
        (rc = cli_outdir_spares(&od, "--prompts", a.prompts_file)) ||
        (a.prompts_file && (rc = read_prompts(&a, &filebuf))))
        return rc;
    if (a.n_texts == 0) a.texts[a.n_texts++] = "The KV cache";
    if (a.roofline) {
        rc = run_roofline(&a, &od);
        free(filebuf);
        return rc;
    }
    memset(&ld, 0, sizeof ld);
    memset(&r, 0, sizeof r);
    if ((rc = load(&a, &ld, &r)) == 0 && (rc = cli_outdir_begin(&od)) == 0) {
        rc = cli_outdir_end(&od, run(&a, &ld, &r, &od, &tot), 0);
        if (rc == 0) rc = report(&a, &tot);
    }
    batch_run_free(&r);
    loaded_free(&ld);
    free(filebuf);
    return rc;
}
