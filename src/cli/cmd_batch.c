/* cmd_batch.c — `kvscope batch`: many sequences decoded together.
 *
 * Every prompt is first run alone (contiguous KV cache, greedy decode): that run
 * picks the tokens and gives the reference logits. Then the same tokens are run
 * as one batch — a padded cache with its mask, the same without the mask (the
 * article's pad_kv_cache), or the paged cache — and each sequence's logits are
 * compared with its run alone at every step. Prompts that extend an earlier one
 * also show prefix reuse. See batch.h and paged.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "cli.h"
#include "generate.h"
#include "infile.h"
#include "colormap.h"
#include "commands.h"
#include "kvcache.h"
#include "numfmt.h"
#include "outdir.h"
#include "paged.h"
#include "png_out.h"
#include "sysinfo.h"

#define BATCH_TOL 1e-5   /* absolute, on logits of order 1 */
#define BATCH_MAX_SEQS 256
#define PREFIX_REPS 3    /* timed repetitions; the fastest counts */
#define BATCH_PROMPTS_MAX (16u << 20) /* bytes of a --prompts file */

typedef struct {
    ModelArgs model;
    const char *prompts_file;
    const char *texts[BATCH_MAX_SEQS];
    int n_texts;
    const char *steps_spec;
    int no_mask, paged, block_size, table_step, quiet, force;
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
               "one prompt per line (blank lines are skipped)"),
    OPT_CALLBACK("--prompt", "TEXT", add_prompt, "a prompt; repeat for more (instead of --prompts)"),
    {.kind = OPT_KIND_CALLBACK, .name = "--prompt-ids", .arg = "LIST", .callback = refuse_ids,
     .flags = OPTF_HIDDEN},
    OPT_STRING("--steps", "N|LIST", BatchArgs, steps_spec,
               "decode steps, for all or one per prompt, e.g. 40,12,28"),
    OPT_FLAG("--no-mask", BatchArgs, no_mask,
             "pad the caches with zeros and stack them WITHOUT an attention mask, as the "
             "article's pad_kv_cache does: the logits change"),
    OPT_FLAG("--paged", BatchArgs, paged,
             "use the paged cache (blocks, free list, block tables) and compare three ways of "
             "reserving memory"),
    OPT_INT("--block-size", "N", BatchArgs, block_size, 1, 65536,
            "tokens per block of the paged cache (vLLM's default too)"),
    OPT_INT_AUTO("--table-step", "S", BatchArgs, table_step, 0, 65536, "half the longest run",
                 "the decode step whose block table blocks.csv/png show"),
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
    "cache) or memory.csv, memory.md, blocks.csv, blocks.png (--paged).\n",
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
    return 0;
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
        if (len) {
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


/* Everything one run holds: prompts, the reference run alone, the batched logits. */
typedef struct {
    int B, S;          /* sequences; the longest decode */
    int **tok;         /* (B) prompt ids */
    int *T, *steps;    /* (B) prompt length; decode steps */
    int **gen;         /* (B, steps+1) gen[b][s]: token fed at decode step s (s ≥ 1) */
    float **ref;       /* (B, (steps+1)·V) logits alone after step s */
    size_t **ref_res;  /* (B, steps+1) bytes the alone cache (doubling) reserved after step s */
    float *lg;         /* (B·V) batched logits of one step */
    double t_alone, t_batch; /* measured seconds of the decode steps */
} Run;

static void run_free(Run *r) {
    for (int b = 0; b < r->B; b++) {
        if (r->tok) free(r->tok[b]);
        if (r->gen) free(r->gen[b]);
        if (r->ref) free(r->ref[b]);
        if (r->ref_res) free(r->ref_res[b]);
    }
    free(r->tok); free(r->T); free(r->steps); free(r->gen); free(r->ref); free(r->ref_res);
    free(r->lg);
    memset(r, 0, sizeof *r);
}

/* Every prompt alone, greedy, with the contiguous KV cache. 0, -1 (memory) or
 * GEN_NONFINITE (logits that are not finite: nothing to compare with). */
static int run_alone(Model *m, Run *r) {
    const Config *cfg = &m->cfg;
    const int V = cfg->V;
    for (int b = 0; b < r->B; b++) {
        KVCache c;
        if (kvcache_init(&c, cfg->L, cfg->NH, cfg->C / cfg->NH, cfg->N)) return -1;
        int rc = model_forward(m, &c, r->tok[b], r->T[b], r->ref[b], NULL, NULL);
        if (rc == 0) r->ref_res[b][0] = kvcache_bytes_reserved(&c);
        double t0 = now_seconds();
        for (int s = 1; s <= r->steps[b] && rc == 0; s++) {
            int t = r->gen[b][s] = logits_argmax(r->ref[b] + (size_t)(s - 1) * V, V);
            rc = model_forward(m, &c, &t, 1, r->ref[b] + (size_t)s * V, NULL, NULL);
            r->ref_res[b][s] = kvcache_bytes_reserved(&c);
        }
        r->t_alone += now_seconds() - t0;
        kvcache_free(&c);
        if (rc) return -1;
        if (logits_first_nonfinite(r->ref[b], (r->steps[b] + 1) * V) >= 0) return GEN_NONFINITE;
    }
    return 0;
}

static FILE *open_csv(const OutDir *od, const char *name, const char *header) {
    char path[4200];
    if (path_join(path, sizeof path, od->tmp, name)) return NULL;
    FILE *f = fopen(path, "w");
    if (f && header) fprintf(f, "%s\n", header);
    return f;
}

/* fclose and report: 0, or -1 if anything failed (the file is NULL on open failure). */
static int close_csv(FILE *f) { return f ? file_close(f) : -1; }

/* Okabe–Ito, for sequences in the block-table picture (cycled). */
static const Rgb SEQ_COLORS[] = {{230, 159, 0},  {86, 180, 233}, {0, 158, 115}, {240, 228, 66},
                                 {0, 114, 178},  {213, 94, 0},   {204, 121, 167}};

/* The pool as a strip of cells, one per block, in block-id order: a block owned by
 * sequence s is drawn in s's colour, filled from the bottom in proportion to the
 * tokens it holds (the rest a pale tint); a free block is white. One row of cells
 * per 16 blocks. */
static int write_blocks_png(const char *path, const PagedCache *pc, char *err, size_t errsize) {
    const int cell = 40, gap = 4, per_row = 16;
    const int rows = (pc->n_blocks + per_row - 1) / per_row;
    const int cols = pc->n_blocks < per_row ? pc->n_blocks : per_row;
    const int W = cols * (cell + gap) + gap, H = rows * (cell + gap) + gap;
    unsigned char *rgb = malloc((size_t)W * H * 3);
    if (!rgb) {
        snprintf(err, errsize, "%s: out of memory", path);
        return -1;
    }
    memset(rgb, 255, (size_t)W * H * 3);
    int *owner = malloc((size_t)pc->n_blocks * sizeof *owner);
    int *fill = calloc((size_t)pc->n_blocks, sizeof *fill);
    if (!owner || !fill) {
        free(rgb); free(owner); free(fill);
        snprintf(err, errsize, "%s: out of memory", path);
        return -1;
    }
    for (int i = 0; i < pc->n_blocks; i++) owner[i] = -1;
    for (int s = 0; s < pc->max_seqs; s++)
        for (int i = 0; i < pc->seq[s].n_blocks; i++) {
            int blk = pc->seq[s].table[i], held = pc->seq[s].len - i * pc->block_size;
            owner[blk] = s;
            fill[blk] = held < pc->block_size ? (held > 0 ? held : 0) : pc->block_size;
        }
    for (int blk = 0; blk < pc->n_blocks; blk++) {
        int x0 = gap + (blk % per_row) * (cell + gap), y0 = gap + (blk / per_row) * (cell + gap);
        Rgb c = owner[blk] >= 0 ? SEQ_COLORS[owner[blk] % 7] : (Rgb){255, 255, 255};
        Rgb pale = {(unsigned char)(255 - (255 - c.r) / 4), (unsigned char)(255 - (255 - c.g) / 4),
                    (unsigned char)(255 - (255 - c.b) / 4)};
        int filled = owner[blk] >= 0 ? (cell * fill[blk] + pc->block_size - 1) / pc->block_size : 0;
        for (int y = 0; y < cell; y++)
            for (int x = 0; x < cell; x++) {
                int edge = x == 0 || y == 0 || x == cell - 1 || y == cell - 1;
                Rgb px = edge ? (Rgb){110, 110, 110} : (cell - 1 - y < filled ? c : pale);
                unsigned char *p = rgb + ((size_t)(y0 + y) * W + x0 + x) * 3;
                p[0] = px.r; p[1] = px.g; p[2] = px.b;
            }
    }
    PngText txt = {"kvscope paged KV cache: block pool",
                   "one cell per block in id order; colour = owning sequence (Okabe-Ito: "
                   "orange 0, sky blue 1, green 2, yellow 3, blue 4, vermillion 5, pink 6); "
                   "filled part = tokens held; white = free"};
    int rc = png_write_rgb(path, rgb, W, H, &txt, err, errsize);
    free(rgb); free(owner); free(fill);
    return rc;
}

/* Prefix reuse: for the first prompt j that extends an earlier prompt i, compare a
 * fresh prefill of j with i's cache plus j's new tokens. Writes prefix.csv rows
 * and the summary keys; timings go to the measured file. 0, 1 (failure). */
static int prefix_reuse(Model *m, const Run *r, FILE *csv, FILE *sum, FILE *tim, int quiet,
                        double *worst) {
    const Config *cfg = &m->cfg;
    const int V = cfg->V;
    float *lf = malloc((size_t)V * sizeof *lf), *lr = malloc((size_t)V * sizeof *lr);
    KVCache c;
    if (!lf || !lr || kvcache_init(&c, cfg->L, cfg->NH, cfg->C / cfg->NH, cfg->N)) {
        free(lf); free(lr);
        return 1;
    }
    int pairs = 0, status = 0;
    for (int j = 1; j < r->B && status == 0; j++) {
        int i = -1; /* the longest earlier prompt that j starts with */
        for (int k = 0; k < j; k++)
            if (r->T[k] < r->T[j] && memcmp(r->tok[k], r->tok[j], (size_t)r->T[k] * sizeof(int)) == 0 &&
                (i < 0 || r->T[k] > r->T[i]))
                i = k;
        if (i < 0) continue;
        FlopCount ff = {0}, fr = {0};
        double tf = INFINITY, tr = INFINITY;
        for (int rep = 0; rep < PREFIX_REPS && status == 0; rep++) {
            FlopCount a = {0}, b = {0};
            kvcache_reset(&c);
            double t0 = now_seconds();
            if (model_forward(m, &c, r->tok[j], r->T[j], lf, NULL, &a)) status = 1;
            tf = fmin(tf, now_seconds() - t0);
            kvcache_reset(&c);
            /* turn 1 already paid for prompt i: its cache is there to reuse */
            if (status == 0 && model_forward(m, &c, r->tok[i], r->T[i], NULL, NULL, NULL)) status = 1;
            t0 = now_seconds();
            if (status == 0 &&
                model_forward(m, &c, r->tok[j] + r->T[i], r->T[j] - r->T[i], lr, NULL, &b))
                status = 1;
            tr = fmin(tr, now_seconds() - t0);
            ff = a;
            fr = b;
        }
        if (status) break;
        uint64_t F = flops_total(&ff), R = flops_total(&fr);
        double d = logits_max_abs_diff(lf, lr, V), pct = 100.0 * (double)(F - R) / (double)F;
        if (d > *worst) *worst = d;
        fprintf(csv, "%d,%d,%d,%d,%llu,%llu,%llu,%.1f,%.9g\n", i, j, r->T[i], r->T[j] - r->T[i],
                (unsigned long long)F, (unsigned long long)R, (unsigned long long)(F - R), pct, d);
        fprintf(tim, "prefix_fresh_seconds_%d,%.6f\nprefix_reuse_seconds_%d,%.6f\n", j, tf, j, tr);
        if (pairs == 0)
            fprintf(sum,
                    "prefix_first,%d\nprefix_second,%d\nprefix_tokens,%d\nprefix_new_tokens,%d\n"
                    "prefix_flops_fresh,%llu\nprefix_flops_reuse,%llu\nprefix_flops_saved,%llu\n"
                    "prefix_flops_saved_pct,%.1f\nprefix_max_abs_diff,%.3g\n",
                    i, j, r->T[i], r->T[j] - r->T[i], (unsigned long long)F,
                    (unsigned long long)R, (unsigned long long)(F - R), pct, d);
        if (!quiet)
            printf("prefix reuse: prompt %d starts with prompt %d (%d of %d tokens cached): "
                   "FLOPs %.3g -> %.3g (%.1f %% saved), time %.3g ms -> %.3g ms, "
                   "max |dlogit| vs fresh prefill = %.3g\n",
                   j, i, r->T[i], r->T[j], (double)F, (double)R, pct, tf * 1e3, tr * 1e3, d);
        pairs++;
    }
    fprintf(sum, "prefix_pairs,%d\n", pairs);
    kvcache_free(&c);
    free(lf);
    free(lr);
    return status;
}

int cmd_batch(int argc, char **argv) {
    BatchArgs a;
    memset(&a, 0, sizeof a);
    int rc = parse_batch(argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    OutDir od;
    if ((rc = cli_outdir_check(&od, a.out, "batch", "--out", a.force ? OUTDIR_FORCE : 0)) ||
        (rc = cli_outdir_spares(&od, "--model", a.model.model_dir)) ||
        (rc = cli_outdir_spares(&od, "--prompts", a.prompts_file)))
        return rc;
    char *filebuf = NULL;
    if (a.prompts_file && (rc = read_prompts(&a, &filebuf))) return rc;
    if (a.n_texts == 0) a.texts[a.n_texts++] = "The KV cache";

    /* the model and the tokenizer; every prompt is checked below */
    Loaded ld;
    a.model.prompt = a.texts[0];
    a.model.prompt_ids = NULL;
    Run r;
    memset(&r, 0, sizeof r);
    char num[64], what[160];
    int steps[BATCH_MAX_SEQS], nsteps = 0;
    if (opts_int_list("--steps", a.steps_spec, 0, 65536, steps, BATCH_MAX_SEQS, &nsteps)) {
        free(filebuf);
        return 2;
    }
    const int B = a.n_texts;
    if (nsteps != 1 && nsteps != B) {
        snprintf(what, sizeof what, "--steps needs one number or one per prompt (%d)", B);
        free(filebuf);
        return cli_fail(what, a.steps_spec);
    }
    if ((rc = model_args_load(&a.model, 0, &ld))) {
        free(filebuf);
        return rc;
    }
    const Tokenizer *tk = ld.tok;
    r.B = B;
    r.tok = calloc((size_t)B, sizeof *r.tok);
    r.T = calloc((size_t)B, sizeof *r.T);
    r.steps = calloc((size_t)B, sizeof *r.steps);
    r.gen = calloc((size_t)B, sizeof *r.gen);
    r.ref = calloc((size_t)B, sizeof *r.ref);
    r.ref_res = calloc((size_t)B, sizeof *r.ref_res);
    int status = (r.tok && r.T && r.steps && r.gen && r.ref && r.ref_res) ? 0 : 1; /* 1: memory */
    const Config *cfg0 = &ld.model.cfg;
    for (int b = 0; b < B && status == 0; b++) {
        r.steps[b] = steps[nsteps == 1 ? 0 : b];
        if (tokenizer_encode(tk, a.texts[b], &r.tok[b], &r.T[b])) {
            status = 1;
            break;
        }
        if (r.T[b] == 0) {
            snprintf(num, sizeof num, "prompt %d", b + 1);
            status = cli_fail("empty prompt", num);
            break;
        }
        if (r.T[b] > cfg0->N || (long)r.T[b] + r.steps[b] > cfg0->N) {
            snprintf(what, sizeof what, "%s longer than the context (%d tokens)",
                     r.T[b] > cfg0->N ? "prompt" : "prompt + --steps", cfg0->N);
            snprintf(num, sizeof num, "prompt %d: %d + %d tokens", b + 1, r.T[b], r.steps[b]);
            status = cli_fail(what, num);
            break;
        }
        for (int t = 0; t < r.T[b]; t++)
            if (r.tok[b][t] >= cfg0->V) {
                snprintf(what, sizeof what, "token id out of range (vocab %d)", cfg0->V);
                snprintf(num, sizeof num, "prompt %d: %d", b + 1, r.tok[b][t]);
                status = cli_fail(what, num);
                break;
            }
        if (r.steps[b] > r.S) r.S = r.steps[b];
    }
    if (status) {
        if (status == 1) fprintf(stderr, "kvscope: out of memory: prompts\n");
        run_free(&r);
        loaded_free(&ld);
        free(filebuf);
        return 2;
    }
    Model *m = &ld.model;
    const Config *cfg = &m->cfg;
    const int V = cfg->V, NH = cfg->NH, hs = cfg->C / cfg->NH;
    for (int b = 0; b < B && status == 0; b++) {
        r.gen[b] = calloc((size_t)r.steps[b] + 1, sizeof **r.gen);
        r.ref[b] = malloc(((size_t)r.steps[b] + 1) * V * sizeof **r.ref);
        r.ref_res[b] = calloc((size_t)r.steps[b] + 1, sizeof **r.ref_res);
        if (!r.gen[b] || !r.ref[b] || !r.ref_res[b]) status = 1;
    }
    if (status == 0 && !(r.lg = malloc((size_t)B * V * sizeof *r.lg))) status = 1;
    if (status == 0 && (rc = run_alone(m, &r))) status = rc;
    if (status) {
        if (status == GEN_NONFINITE)
            fprintf(stderr, "kvscope: non-finite logits running the prompts alone (the model's numbers "
                            "overflow float32)\n");
        else
            fprintf(stderr, "kvscope: out of memory: %d sequences\n", B);
        run_free(&r);
        loaded_free(&ld);
        free(filebuf);
        return 2;
    }

    char err[4400];
    if ((rc = cli_outdir_begin(&od))) {
        run_free(&r);
        loaded_free(&ld);
        free(filebuf);
        return rc;
    }
    const char *mode = a.paged ? "paged" : a.no_mask ? "nomask" : "mask";
    FILE *fd = open_csv(&od, "diff.csv", "step,seq,pos,max_abs_diff,max_abs_dlogprob,same_argmax");
    FILE *fs = open_csv(&od, "summary.csv", "key,value");
    FILE *fp = open_csv(&od, "prefix.csv",
                        "first,second,prefix_tokens,new_tokens,flops_fresh,flops_reuse,"
                        "flops_saved,flops_saved_pct,max_abs_diff");
    FILE *ft = open_csv(&od, "timing.csv", "key,value");
    FILE *fm = a.paged ? open_csv(&od, "memory.csv",
                                  "step,live,tokens,bytes_used,bytes_prealloc,bytes_doubling,"
                                  "bytes_paged,blocks")
                       : open_csv(&od, "padding.csv",
                                  "step,live,width,tokens,bytes_used,bytes_stacked,bytes_padding,"
                                  "padding_pct");
    FILE *fb = a.paged ? open_csv(&od, "blocks.csv", "block,seq,logical,tokens") : NULL;
    status = (fd && fs && fp && ft && fm && (fb || !a.paged)) ? 0 : 2;
    if (status)
        fprintf(stderr, "kvscope: --out: cannot write CSV files (%s): %s\n", write_error_text(errno), a.out);

    PaddedBatch pb;
    PagedCache pc;
    memset(&pb, 0, sizeof pb);
    memset(&pc, 0, sizeof pc);
    int maxT = 0, maxlen = 0, pool = 0;
    long tokens_prompt = 0, tokens_gen = 0;
    for (int b = 0; b < B; b++) {
        if (r.T[b] > maxT) maxT = r.T[b];
        if (r.T[b] + r.steps[b] > maxlen) maxlen = r.T[b] + r.steps[b];
        pool += (r.T[b] + r.steps[b] + a.block_size - 1) / a.block_size;
        tokens_prompt += r.T[b];
        tokens_gen += r.steps[b];
    }
    const int table_step = a.table_step >= 0 ? (a.table_step > r.S ? r.S : a.table_step) : r.S / 2;
    if (status == 0 &&
        (a.paged ? paged_init(&pc, cfg->L, NH, hs, a.block_size, pool, B, maxlen)
                 : padded_init(&pb, cfg->L, NH, hs, B, maxT + r.S, !a.no_mask))) {
        fprintf(stderr, "kvscope: out of memory: batched cache\n");
        status = 1;
    }
    const size_t bpt = 2u * (size_t)cfg->L * cfg->C * sizeof(float);
    int *seqs = malloc((size_t)B * sizeof *seqs), *toks = malloc((size_t)B * sizeof *toks);
    float **lgp = malloc((size_t)B * sizeof *lgp);
    if (status == 0 && (!seqs || !toks || !lgp)) {
        fprintf(stderr, "kvscope: out of memory: batch rows\n");
        status = 1;
    }
    double worst = 0.0, worst_lp = 0.0, sum_used = 0, sum_pre = 0, sum_dbl = 0, sum_pag = 0, sum_stk = 0, sum_pad = 0;
    int differs = 0, compared = 0, peak_blocks = 0, books_ok = 1;

    for (int s = 0; s <= r.S && status == 0; s++) {
        int R = 0;
        for (int b = 0; b < B; b++)
            if (r.steps[b] >= s) {
                seqs[R] = b;
                toks[R] = s ? r.gen[b][s] : 0;
                lgp[R] = r.lg + (size_t)R * V;
                R++;
            }
        FlopCount fl = {0};
        if (s == 0) { /* prefill every sequence alone into the shared cache */
            for (int q = 0; q < R && status == 0; q++) {
                int b = seqs[q], T = r.T[b];
                if (a.paged) {
                    int *sq = malloc((size_t)T * sizeof *sq);
                    float **lp = calloc((size_t)T, sizeof *lp);
                    if (!sq || !lp) status = 1;
                    for (int i = 0; i < T && status == 0; i++) sq[i] = b;
                    if (status == 0) {
                        lp[T - 1] = lgp[q];
                        status = paged_forward(m, &pc, sq, r.tok[b], T, lp, &fl) ? 1 : 0;
                    }
                    free(sq);
                    free(lp);
                } else {
                    status = padded_prefill(m, &pb, b, r.tok[b], T, lgp[q], &fl) ? 1 : 0;
                }
            }
        } else {
            double t0 = now_seconds();
            status = (a.paged ? paged_forward(m, &pc, seqs, toks, R, lgp, &fl)
                              : padded_decode(m, &pb, seqs, toks, R, lgp, &fl)) ? 1 : 0;
            r.t_batch += now_seconds() - t0;
        }
        if (status) {
            fprintf(stderr, "kvscope: batched step %d failed (out of memory?)\n", s);
            break;
        }
        double step_worst = 0.0;
        long live_tokens = 0;
        size_t dbl = 0;
        for (int q = 0; q < R; q++) {
            int b = seqs[q];
            const float *ref = r.ref[b] + (size_t)s * V;
            double d = logits_max_abs_diff(lgp[q], ref, V);
            int same = logits_argmax(lgp[q], V) == logits_argmax(ref, V);
            differs += !same;
            compared++;
            step_worst = diff_max(step_worst, d);
            live_tokens += r.T[b] + s;
            dbl += r.ref_res[b][s];
            double dl = logits_max_abs_dlogprob(lgp[q], ref, V);
            worst_lp = diff_max(worst_lp, dl);
            fprintf(fd, "%d,%d,%d,%.9g,%.9g,%d\n", s, b, r.T[b] - 1 + s, d, dl, same);
        }
        worst = diff_max(worst, step_worst);
        char h1[32], h2[32];
        if (a.paged) {
            if (paged_check(&pc)) books_ok = 0;
            size_t used = paged_bytes_used(&pc), pre = (size_t)R * cfg->N * bpt,
                   pag = paged_bytes_reserved(&pc);
            int blocks = paged_blocks_owned(&pc);
            if (blocks > peak_blocks) peak_blocks = blocks;
            if (used != (size_t)live_tokens * bpt) books_ok = 0;
            sum_used += (double)used;
            sum_pre += (double)pre;
            sum_dbl += (double)dbl;
            sum_pag += (double)pag;
            fprintf(fm, "%d,%d,%ld,%zu,%zu,%zu,%zu,%d\n", s, R, live_tokens, used, pre, dbl, pag,
                    blocks);
            if (s == table_step) {
                for (int blk = 0; blk < pc.n_blocks; blk++) {
                    int own = -1, logical = -1, held = 0;
                    for (int q = 0; q < B && own < 0; q++)
                        for (int i = 0; i < pc.seq[q].n_blocks; i++)
                            if (pc.seq[q].table[i] == blk) {
                                own = q;
                                logical = i;
                                held = pc.seq[q].len - i * pc.block_size;
                                if (held > pc.block_size) held = pc.block_size;
                            }
                    fprintf(fb, "%d,%d,%d,%d\n", blk, own, logical, held);
                }
                char png[4200];
                if (path_join(png, sizeof png, od.tmp, "blocks.png") ||
                    write_blocks_png(png, &pc, err, sizeof err)) {
                    cli_outdir_error(&od, err);
                    status = 2;
                }
            }
            if (!a.quiet)
                printf("%s %-3d rows %-3d blocks %-4d reserved %s, holding tokens %s  "
                       "max |dlogit| vs alone %.3g\n",
                       s ? "decode " : "prefill", s, R, blocks, human_bytes((double)pag, h1, sizeof h1),
                       human_bytes((double)used, h2, sizeof h2), step_worst);
            /* finished sequences give their blocks back */
            for (int q = 0; q < R; q++)
                if (r.steps[seqs[q]] == s) paged_release(&pc, seqs[q]);
            if (paged_check(&pc)) books_ok = 0;
        } else {
            size_t used = padded_bytes_used(&pb), stk = padded_bytes_stacked(&pb);
            sum_stk += (double)stk;
            sum_pad += (double)(stk - used);
            fprintf(fm, "%d,%d,%d,%zu,%zu,%zu,%zu,%.1f\n", s, R, pb.width, used / bpt, used, stk,
                    stk - used, 100.0 * (double)(stk - used) / (double)stk);
            if (!a.quiet)
                printf("%s %-3d rows %-3d width %-4d padding %s of %s  max |dlogit| vs alone %.3g\n",
                       s ? "decode " : "prefill", s, R, pb.width,
                       human_bytes((double)(stk - used), h1, sizeof h1),
                       human_bytes((double)stk, h2, sizeof h2), step_worst);
        }
    }
    double prefix_worst = 0.0;
    if (status == 0) {
        fprintf(fs, "mode,%s\nsequences,%d\nprompt_tokens,%ld\ngenerated_tokens,%ld\nsteps,%d\n"
                    "bytes_per_token,%zu\ncontext,%d\nmax_abs_diff,%.3g\nmax_abs_dlogprob,%.3g\n"
                    "compared,%d\nargmax_differs,%d\n",
                mode, B, tokens_prompt, tokens_gen, r.S, bpt, cfg->N, worst, worst_lp, compared,
                differs);
        if (a.paged) {
            if (pc.n_free != pc.n_blocks) books_ok = 0; /* every block returned */
            fprintf(fs, "block_size,%d\nblock_bytes,%zu\npool_blocks,%d\npeak_blocks,%d\n"
                        "table_step,%d\nbooks_ok,%d\nused_pct_prealloc,%.1f\n"
                        "used_pct_doubling,%.1f\nused_pct_paged,%.1f\n",
                    a.block_size, paged_block_bytes(&pc), pc.n_blocks, peak_blocks, table_step,
                    books_ok, 100.0 * sum_used / sum_pre, 100.0 * sum_used / sum_dbl,
                    100.0 * sum_used / sum_pag);
            FILE *md = open_csv(&od, "memory.md", NULL);
            if (md) {
                fprintf(md, "| strategy | reserves | bytes holding tokens / bytes reserved |\n"
                            "|---|---|---:|\n"
                            "| preallocate | the context (%d tokens) per sequence | %.1f %% |\n"
                            "| grow by doubling | 16, 32, 64, ... tokens per sequence | %.1f %% |\n"
                            "| paged | one block of %d tokens at a time | %.1f %% |\n",
                        cfg->N, 100.0 * sum_used / sum_pre, 100.0 * sum_used / sum_dbl,
                        a.block_size, 100.0 * sum_used / sum_pag);
            }
            if (close_csv(md)) {
                fprintf(stderr, "kvscope: --out: cannot write memory.md (%s): %s\n",
                        write_error_text(errno), a.out);
                status = 1;
            }
        } else {
            fprintf(fs, "width_final,%d\npadding_pct,%.1f\nbytes_stacked_final,%zu\n"
                        "bytes_padding_final,%zu\n",
                    pb.width, 100.0 * sum_pad / sum_stk, padded_bytes_stacked(&pb),
                    padded_bytes_stacked(&pb) - padded_bytes_used(&pb));
        }
        fprintf(ft, "decode_alone_seconds,%.6f\ndecode_batched_seconds,%.6f\n", r.t_alone, r.t_batch);
        if (prefix_reuse(m, &r, fp, fs, ft, a.quiet, &prefix_worst)) {
            fprintf(stderr, "kvscope: prefix reuse failed (out of memory?)\n");
            status = 1;
        }
    }
    int cl = close_csv(fd) | close_csv(fs) | close_csv(fp) | close_csv(ft) | close_csv(fm);
    if (fb) cl |= close_csv(fb);
    if (status) status = 2; /* each failure above is out of memory or a write error, said */
    status = cli_outdir_end(&od, status, cl);
    if (status == 0) {
        int must_match = !a.no_mask;
        int ok = !must_match || worst <= BATCH_TOL;
        if (!a.no_mask)
            printf("%s batch vs each sequence alone: max |dlogit| = %.3g over %d logit rows "
                   "(tolerance %.0e): %s\n",
                   a.paged ? "paged" : "padded + mask", worst, compared, BATCH_TOL,
                   ok ? "OK" : "MISMATCH");
        else
            printf("padded WITHOUT mask (pad_kv_cache) vs alone: max |dlogit| = %.3g, max |dlog p| "
                   "= %.3g; greedy token differs in %d of %d logit rows (the padding takes part "
                   "in the softmax)\n",
                   worst, worst_lp, differs, compared);
        if (a.paged) {
            printf("bytes holding tokens / bytes reserved, over all steps: preallocate %.1f %%, "
                   "doubling %.1f %%, paged (blocks of %d) %.1f %%\n",
                   100.0 * sum_used / sum_pre, 100.0 * sum_used / sum_dbl, a.block_size,
                   100.0 * sum_used / sum_pag);
            if (!books_ok) {
                fprintf(stderr, "kvscope: paged block accounting is inconsistent\n");
                ok = 0;
            }
        } else {
            printf("padding: %.1f %% of the stacked cache's bytes over all steps\n",
                   100.0 * sum_pad / sum_stk);
        }
        if (prefix_worst > BATCH_TOL) ok = 0;
        if (!a.quiet) printf("wrote %s/\n", a.out);
        status = ok ? 0 : 1;
    }
    padded_free(&pb);
    paged_free(&pc);
    free(seqs);
    free(toks);
    free(lgp);
    run_free(&r);
    loaded_free(&ld);
    free(filebuf);
    return status;
}
