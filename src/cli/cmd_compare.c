/* cmd_compare.c — `kvscope compare`: one decode step with the KV cache and without it.
 *
 * For each length T of the sweep, the decode step that brings the sequence to T tokens
 * is run two ways on the same tokens:
 *   cache      one new row against the T cached keys and values (GEN_CACHE);
 *   recompute  the whole sequence of T tokens from scratch (GEN_RECOMPUTE: a decode
 *              step without a cache is a forward pass over all T tokens).
 * The engine counts the FLOPs of both; they are written next to the closed form
 * flops_layers_formula(), with the cumulative cost of generating up to T, the
 * attention-only count the source articles use, the KV bytes and max |Δlogit|.
 *
 * Files (in --out, replaced as a whole):
 *   compare.csv         counts, KV bytes, max |Δlogit|: a pure function of the options
 *   prefill_decode.csv  the prefill and one decode step side by side (from hook events)
 *   flops.md, prefill_decode.md, values.csv   for the lessons to embed
 *   timing.csv, timing.md   measured seconds per step: differ run to run
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "generate.h"
#include "gnuplot.h"
#include "infile.h"
#include "numfmt.h"
#include "outdir.h"
#include "sysinfo.h"

/* Set by the SIGINT handler: a signal handler can only reach file scope. */
static volatile sig_atomic_t interrupted = 0;

static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

enum { COMPARE_MAX_LENGTHS = 256 };

typedef struct {
    ModelArgs model;
    int lengths[COMPARE_MAX_LENGTHS], n_lengths;
    int table[COMPARE_MAX_LENGTHS], n_table;
    int decode_at;
    int repeat;
    const char *out, *charts, *scripts;
    int quiet, force;
} CompareArgs;

static const Option COMPARE_OPTIONS[] = {
    OPT_GROUP("compare options"),
    OPT_INTS("--lengths", "LIST", CompareArgs, lengths, n_lengths, 1, 65536,
             "sequence lengths T; each must be > the prompt length and <= the context"),
    {.kind = OPT_KIND_INTS, .name = "--table-lengths", .arg = "LIST",
     .field = offsetof(CompareArgs, table), .field2 = OPT_FIELD(CompareArgs, n_table, int),
     .cap = COMPARE_MAX_LENGTHS, .lo = 1, .hi = 65536, .flags = OPTF_NONE,
     .help = "lengths of the articles' FLOP table, added to the sweep"},
    OPT_INT("--decode-at", "T", CompareArgs, decode_at, 1, 65536,
            "the decode step shown next to the prefill"),
    OPT_INT("--repeat", "K", CompareArgs, repeat, 1, 1000,
            "timed runs per step; recompute steps longer than 256 tokens are timed K*256/T "
            "times, at least once"),
    OPT_STRING("--out", "DIR", CompareArgs, out, "output folder, replaced as a whole"),
    OPT_STRING("--charts", "DIR", CompareArgs, charts,
               "also draw the charts into DIR with gnuplot (scripts from --scripts); DIR is "
               "replaced as a whole, like --out, and only when every chart was drawn"),
    OPT_STRING("--scripts", "DIR", CompareArgs, scripts, "where the .gp chart scripts are"),
    OPT_QUIET(CompareArgs, quiet),
    OPT_FORCE(CompareArgs, force),
    OPT_INCLUDE(CompareArgs, model, MODEL_OPTIONS),
    OPT_END,
};

static const Command COMPARE = {
    "compare", "[options]",
    "Run the decode step that brings the sequence to T tokens with the KV cache and\n"
    "without it (recomputing all T tokens), for every T of --lengths, and write the\n"
    "counted FLOPs (next to the closed form), the cumulative FLOPs, the attention count\n"
    "the source articles use, the KV bytes, max |dlogit| and the measured time.\n"
    "Ctrl-C stops after the current length and keeps the lengths already measured.\n",
    COMPARE_OPTIONS,
    "The default prompt, the ids 1,2,3,4, is a 4-token prefill, as in the article.\n"
    "Exit status 130 after Ctrl-C: --out holds the lengths finished (no charts).\n",
};

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Sort and drop duplicates; returns the new count. */
static int sort_unique(int *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_int);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || v[i] != v[k - 1]) v[k++] = v[i];
    return k;
}

static int parse_compare(int argc, char **argv, CompareArgs *a) {
    static const int lengths[] = {16, 32, 64, 128, 256, 512, 1024}, table[] = {10, 100, 1000};
    memset(a, 0, sizeof *a);
    model_args_default(&a->model);
    a->model.prompt = NULL;
    a->model.prompt_ids = "1,2,3,4";
    memcpy(a->lengths, lengths, sizeof lengths);
    a->n_lengths = 7;
    memcpy(a->table, table, sizeof table);
    a->n_table = 3;
    a->decode_at = 100;
    a->repeat = 3;
    a->out = "kvscope_compare";
    a->scripts = "plots";
    int rc = opts_parse(&COMPARE, argc, argv, a);
    if (rc) return rc;
    if (a->charts && !gnuplot_quotable(a->charts))
        return cli_fail("--charts cannot hold a quote", a->charts);
    if (!gnuplot_quotable(a->scripts)) return cli_fail("--scripts cannot hold a quote", a->scripts);
    if (a->charts && !gnuplot_quotable(a->out)) return cli_fail("--out cannot hold a quote", a->out);
    return 0;
}

/* ---- an observer: the shape of one step, from its hook events --------------- */

typedef struct {
    int q_rows, k_rows;   /* rows of Q and of the cached K in layer 0 */
    uint64_t scores;      /* causal attention scores computed in layer 0, all heads */
    uint64_t flops;       /* the whole step, every op */
    size_t kv_bytes;
} StepShape;

static int capture_shape(const HookEvent *ev, void *user) {
    StepShape *s = user;
    if (ev->point == HOOK_STEP_END) {
        s->flops = flops_total(&ev->stats->flops);
        s->kv_bytes = ev->stats->kv_bytes;
    } else if (ev->layer == 0 && ev->point == HOOK_Q) {
        s->q_rows = ev->shape[0];
    } else if (ev->layer == 0 && ev->point == HOOK_CACHE_K) {
        s->k_rows = ev->shape[0];
    } else if (ev->layer == 0 && ev->point == HOOK_ATTN_SCORES) {
        /* future cells are -inf: count the ones attention really computed */
        size_t n = (size_t)ev->shape[0] * ev->shape[1] * ev->shape[2];
        s->scores = 0;
        for (size_t i = 0; i < n; i++) s->scores += isfinite(ev->data[i]) != 0;
    }
    return 0;
}

/* ---- timing ----------------------------------------------------------------- */

typedef struct {
    double med, min, max;
    int n;
} Timing;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median (mean of the middle two for an even count), min and max of t[0..n-1]. */
static Timing summarize(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    Timing s = {n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), t[0], t[n - 1], n};
    return s;
}

/* Timed runs of a recompute step over T tokens: long ones are timed fewer times. */
static int recompute_repeats(int K, int T) {
    if (T <= 256) return K;
    int r = (int)((long)K * 256 / T);
    return r < 1 ? 1 : r;
}

/* ---- output ----------------------------------------------------------------- */

typedef struct {
    int T;
    uint64_t f_cache, f_rec;         /* counted FLOPs of the L blocks, one step */
    uint64_t tot_cache, tot_rec;     /* counted FLOPs of everything, one step */
    uint64_t cum_cache;              /* counted, prefill + every decode step up to T */
    uint64_t cum_rec_formula;        /* closed form: Σ over t = P..T of a pass over t tokens */
    size_t kv_bytes, kv_reserved;
    double dlogit;
    Timing t_cache, t_rec;
} Row;

typedef struct {
    FILE *csv, *timing;
    char dir[4200];
} Out;

static FILE *open_in(const char *dir, const char *name) {
    char path[4300];
    if (path_join(path, sizeof path, dir, name)) return NULL;
    return fopen(path, "w");
}

static void write_row(FILE *f, const Config *cfg, int P, const Row *r) {
    const uint64_t T = (uint64_t)r->T;
    fprintf(f, "%d,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.6f,%zu,%zu,%.9g,%d,%d,%d\n",
            r->T, (unsigned long long)r->f_cache, (unsigned long long)r->f_rec,
            (unsigned long long)flops_layers_formula(cfg, 1, T - 1),
            (unsigned long long)flops_layers_formula(cfg, T, 0),
            (unsigned long long)r->tot_cache, (unsigned long long)r->tot_rec,
            (unsigned long long)r->cum_cache, (unsigned long long)flops_layers_formula(cfg, T, 0),
            (unsigned long long)r->cum_rec_formula, (unsigned long long)T,
            (unsigned long long)(T * (T + 1) / 2), (unsigned long long)T, (unsigned long long)(T * T),
            (double)r->f_rec / (double)r->f_cache, r->kv_bytes, r->kv_reserved, r->dlogit, cfg->L,
            cfg->C, P);
}

static const char *const CSV_HEADER =
    "T,flops_cache,flops_recompute,formula_cache,formula_recompute,flops_total_cache,"
    "flops_total_recompute,cum_flops_cache,cum_formula_cache,cum_formula_recompute,"
    "attn_pairs_cache,attn_pairs_recompute,article_attn_cache,article_attn_recompute,"
    "ratio,kv_bytes,kv_reserved_bytes,max_abs_dlogit,L,C,prompt_tokens\n";

static const char *const TIMING_HEADER =
    "T,cache_median_s,cache_min_s,cache_max_s,cache_runs,recompute_median_s,recompute_min_s,"
    "recompute_max_s,recompute_runs,speedup\n";

static void write_timing(FILE *f, const Row *r) {
    fprintf(f, "%d,%.9g,%.9g,%.9g,%d,%.9g,%.9g,%.9g,%d,%.6g\n", r->T, r->t_cache.med, r->t_cache.min,
            r->t_cache.max, r->t_cache.n, r->t_rec.med, r->t_rec.min, r->t_rec.max, r->t_rec.n,
            r->t_rec.med / r->t_cache.med);
}

static int is_in(const int *v, int n, int x) {
    for (int i = 0; i < n; i++)
        if (v[i] == x) return 1;
    return 0;
}

/* The articles' tables, rebuilt from what was counted and measured. */
static int write_tables(const char *dir, const CompareArgs *a, const Config *cfg, int P,
                        const Row *rows, int n, const StepShape *pre, const StepShape *dec, int dec_T) {
    char d1[40], d2[40], h1[32], h2[32];
    FILE *f = open_in(dir, "flops.md");
    if (!f) return -1;
    fprintf(f, "| T | articles: without cache (T²) | articles: with cache (T) "
               "| counted FLOPs without cache | counted FLOPs with cache | ratio | KV cache (fp32) |\n");
    fprintf(f, "|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < n; i++) {
        const Row *r = &rows[i];
        if (!is_in(a->table, a->n_table, r->T)) continue;
        char c1[40], c2[40];
        fprintf(f, "| %d | %s | %s | %s | %s | %.0f× | %s |\n", r->T,
                group_digits((uint64_t)r->T * r->T, d1, sizeof d1), group_digits((uint64_t)r->T, d2, sizeof d2),
                group_digits(r->f_rec, c1, sizeof c1),
                group_digits(r->f_cache, c2, sizeof c2), (double)r->f_rec / (double)r->f_cache,
                human_bytes((double)r->kv_bytes, h1, sizeof h1));
    }
    if (file_close(f)) return -1;

    if (dec->q_rows == 0) goto values; /* interrupted before --decode-at: no table */
    if (!(f = open_in(dir, "prefill_decode.csv"))) return -1;
    fprintf(f, "quantity,label,prefill,decode\n");
    fprintf(f, "tokens,tokens T,%d,%d\n", P, dec_T);
    fprintf(f, "q_rows,Q rows,%d,%d\n", pre->q_rows, dec->q_rows);
    fprintf(f, "k_rows,K rows,%d,%d\n", pre->k_rows, dec->k_rows);
    fprintf(f, "attn_scores,attention scores,%llu,%llu\n", (unsigned long long)pre->scores,
            (unsigned long long)dec->scores);
    fprintf(f, "flops,FLOPs,%llu,%llu\n", (unsigned long long)pre->flops, (unsigned long long)dec->flops);
    fprintf(f, "kv_bytes,KV bytes,%zu,%zu\n", pre->kv_bytes, dec->kv_bytes);
    if (file_close(f)) return -1;

    if (!(f = open_in(dir, "prefill_decode.md"))) return -1;
    fprintf(f, "| | prefill (T=%d) | decode step (T=%d) |\n|---|---:|---:|\n", P, dec_T);
    fprintf(f, "| Q shape | (%d, %d) | (%d, %d) |\n", pre->q_rows, cfg->C, dec->q_rows, cfg->C);
    fprintf(f, "| K shape (cached keys) | (%d, %d) | (%d, %d) |\n", pre->k_rows, cfg->C, dec->k_rows, cfg->C);
    fprintf(f, "| articles' attention count | O(%d) | O(%d) |\n", P * P, dec_T);
    fprintf(f, "| attention scores computed (causal, %d heads, per layer) | %s | %s |\n", cfg->NH,
            group_digits(pre->scores, d1, sizeof d1), group_digits(dec->scores, d2, sizeof d2));
    fprintf(f, "| FLOPs (counted, whole model) | %s | %s |\n", group_digits(pre->flops, d1, sizeof d1),
            group_digits(dec->flops, d2, sizeof d2));
    fprintf(f, "| KV cache after the step (fp32) | %s (%s B) | %s (%s B) |\n",
            human_bytes((double)pre->kv_bytes, h1, sizeof h1), group_digits(pre->kv_bytes, d1, sizeof d1),
            human_bytes((double)dec->kv_bytes, h2, sizeof h2), group_digits(dec->kv_bytes, d2, sizeof d2));
    if (file_close(f)) return -1;

values:
    if (!(f = open_in(dir, "values.csv"))) return -1;
    fprintf(f, "key,value\nL,%d\nC,%d\nNH,%d\nprompt_tokens,%d\nrows,%d\n", cfg->L, cfg->C, cfg->NH, P, n);
    double worst = 0.0;
    for (int i = 0; i < n; i++) worst = diff_max(worst, rows[i].dlogit);
    fprintf(f, "max_abs_dlogit,%.9g\n", worst);
    if (n > 0) {
        const Row *r = &rows[n - 1];
        fprintf(f, "largest_T,%d\nratio_largest,%.1f\n", r->T, (double)r->f_rec / (double)r->f_cache);
    }
    for (int i = 0; i < n; i++) {
        const Row *r = &rows[i];
        fprintf(f, "flops_cache_%d,%llu\nflops_recompute_%d,%llu\nratio_%d,%.1f\nkv_bytes_%d,%zu\nkv_%d,%s\n",
                r->T, (unsigned long long)r->f_cache, r->T, (unsigned long long)r->f_rec, r->T,
                (double)r->f_rec / (double)r->f_cache, r->T, r->kv_bytes, r->T,
                human_bytes((double)r->kv_bytes, h1, sizeof h1));
    }
    return file_close(f);
}

/* 0.00291 → "2.91 ms", 2.39 → "2.39 s" */
static const char *seconds(double s, char *buf, size_t size) {
    if (s < 1.0) snprintf(buf, size, "%.3g ms", 1e3 * s);
    else snprintf(buf, size, "%.3g s", s);
    return buf;
}

static int write_timing_md(const char *dir, const Row *rows, int n) {
    FILE *f = open_in(dir, "timing.md");
    if (!f) return -1;
    fprintf(f, "| T | with cache (median) | without cache (median) | speed-up |\n|---:|---:|---:|---:|\n");
    for (int i = 0; i < n; i++) {
        const Row *r = &rows[i];
        char a[32], b[32];
        fprintf(f, "| %d | %s | %s | %.0f× |\n", r->T, seconds(r->t_cache.med, a, sizeof a),
                seconds(r->t_rec.med, b, sizeof b), r->t_rec.med / r->t_cache.med);
    }
    return file_close(f);
}

/* ---- progress on a terminal ------------------------------------------------- */

/* The bar fills with the tokens generated so far (t of t_max); the text names the
 * length being measured (or the next one). */
static void progress(int on, int t, int target, int t_max, int row, int rows, double t0) {
    if (!on) return;
    char bar[41];
    int w = (int)(40.0 * t / t_max);
    for (int i = 0; i < 40; i++) bar[i] = i < w ? '#' : '.';
    bar[40] = '\0';
    fprintf(stderr, "\r[%s] T=%-5d length %d/%d  %.1f s ", bar, target, row, rows, now_seconds() - t0);
    fflush(stderr);
}

static void progress_clear(int on) {
    if (on) fprintf(stderr, "\r%70s\r", "");
}

/* ---- the sweep -------------------------------------------------------------- */

static const struct {
    const char *script, *csv, *chart;
} CHARTS[] = {
    {"flops.gp", "compare.csv", "compare_flops"},
    {"prefill_decode.gp", "prefill_decode.csv", "prefill_decode"},
    {"time.gp", "timing.csv", "compare_time_measured"},
};
#define NCHARTS (sizeof CHARTS / sizeof CHARTS[0])

/* Before any work: --charts is a folder of its own, gnuplot is there, and every
 * script is a regular file outside the output folders. 0, or 2 after the error line. */
static int check_charts(const CompareArgs *a, const OutDir *od, OutDir *charts, unsigned flags) {
    int rc;
    if ((rc = cli_outdir_check(charts, a->charts, "compare", "--charts", flags)) ||
        (rc = cli_outdirs_apart(od, charts)))
        return rc;
    if (!gnuplot_found())
        return cli_fail("--charts needs gnuplot, which is not on PATH; install it with",
                        GNUPLOT_INSTALL_HINT);
    for (size_t i = 0; i < NCHARTS; i++) {
        char script[4300], err[4600];
        snprintf(script, sizeof script, "%s/%s", a->scripts, CHARTS[i].script);
        int fd = infile_open(script, NULL, err, sizeof err);
        if (fd < 0) return cli_fail("--scripts", err);
        close(fd);
        if ((rc = cli_outdir_spares(od, "--scripts", script)) ||
            (rc = cli_outdir_spares(charts, "--scripts", script)))
            return rc;
    }
    return 0;
}

/* Draw every chart from the CSVs in csv_dir into the --charts folder (begun). 0, or 2
 * after one line naming the script and gnuplot's own error. */
static int draw_charts(const CompareArgs *a, const OutDir *charts, const char *csv_dir) {
    if (!gnuplot_quotable(csv_dir) || !gnuplot_quotable(charts->tmp))
        return cli_fail("--out and --charts must resolve to paths without a quote", a->charts);
    for (size_t i = 0; i < NCHARTS; i++) {
        char script[4300], vars[9000], msg[512];
        snprintf(script, sizeof script, "%s/%s", a->scripts, CHARTS[i].script);
        snprintf(vars, sizeof vars, "in='%s/%s'; out='%s/%s'", csv_dir, CHARTS[i].csv, charts->tmp,
                 CHARTS[i].chart);
        int rc = gnuplot_run(script, vars, msg, sizeof msg);
        if (rc != 0) {
            char line[4900];
            snprintf(line, sizeof line, "--charts: gnuplot failed on %s (status %d): %s", script, rc,
                     msg[0] ? msg : "no message");
            cli_outdir_error(charts, line);
            return 2;
        }
    }
    return 0;
}

int cmd_compare(int argc, char **argv) {
    CompareArgs a;
    memset(&a, 0, sizeof a);
    int rc = parse_compare(argc, argv, &a);
    /* every output is checked before the model is even loaded */
    OutDir od, charts;
    const unsigned fl = a.force ? OUTDIR_FORCE : 0;
    if (rc == 0) rc = cli_outdir_check(&od, a.out, "compare", "--out", fl);
    if (rc == 0) rc = cli_outdir_spares(&od, "--model", a.model.model_dir);
    if (rc == 0 && a.charts) rc = check_charts(&a, &od, &charts, fl);
    if (rc) return rc == OPTS_HELP ? 0 : rc;

    /* the sweep: --lengths and --table-lengths, sorted */
    int n_sweep = a.n_lengths + a.n_table;
    int *sweep = malloc((size_t)(n_sweep + 1) * sizeof *sweep);
    Row *rows = calloc((size_t)n_sweep + 1, sizeof *rows);
    if (!sweep || !rows) {
        free(sweep);
        free(rows);
        return cli_fail("out of memory", "sweep");
    }
    memcpy(sweep, a.lengths, (size_t)a.n_lengths * sizeof *sweep);
    if (a.n_table) memcpy(sweep + a.n_lengths, a.table, (size_t)a.n_table * sizeof *sweep);
    n_sweep = sort_unique(sweep, n_sweep);
    int T_max = sweep[n_sweep - 1] > a.decode_at ? sweep[n_sweep - 1] : a.decode_at;

    Loaded ld;
    memset(&ld, 0, sizeof ld);
    Model m2;
    memset(&m2, 0, sizeof m2);
    Generator gc, gr;
    memset(&gc, 0, sizeof gc);
    memset(&gr, 0, sizeof gr);
    int od_open = 0, charts_open = 0, status = 2;
    FILE *csv = NULL, *tcsv = NULL;
    char err[4400], buf[64], d1[40], d2[40], s1buf[32], s2buf[32];
    struct sigaction sa, old_sa;
    int sig_set = 0;

    if ((rc = model_args_load(&a.model, 0, &ld))) {
        status = rc;
        goto out;
    }
    const Config *cfg = &ld.model.cfg;
    const int P = ld.T;
    for (int i = 0; i < n_sweep; i++) {
        if (sweep[i] <= P || sweep[i] > cfg->N) {
            char what[128];
            snprintf(what, sizeof what, "lengths must be in %d..%d (prompt %d tokens, context %d)", P + 1,
                     cfg->N, P, cfg->N);
            snprintf(buf, sizeof buf, "%d", sweep[i]);
            status = cli_fail(what, buf);
            goto out;
        }
    }
    if (a.decode_at <= P || a.decode_at > cfg->N) {
        snprintf(buf, sizeof buf, "%d", a.decode_at);
        status = cli_fail("--decode-at must be past the prompt and within the context", buf);
        goto out;
    }
    if (cli_outdir_begin(&od)) goto out;
    od_open = 1;
    if (a.charts) {
        if (cli_outdir_begin(&charts)) goto out;
        charts_open = 1;
    }
    /* the recompute runs get their own activations; the weights are shared */
    if (model_init_shared(&m2, &ld.model) || generator_init(&gc, &ld.model, GEN_CACHE) ||
        generator_init(&gr, &m2, GEN_RECOMPUTE)) {
        fprintf(stderr, "kvscope: out of memory: generators\n");
        goto out;
    }
    if (!(csv = open_in(od.tmp, "compare.csv")) || !(tcsv = open_in(od.tmp, "timing.csv"))) {
        fprintf(stderr, "kvscope: --out: cannot write its files (%s): %s\n", write_error_text(errno),
                a.out);
        goto out;
    }
    fputs(CSV_HEADER, csv);
    fputs(TIMING_HEADER, tcsv);

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sig_set = sigaction(SIGINT, &sa, &old_sa) == 0;

    StepShape pre = {0}, dec = {0};
    Hooks hooks;
    const uint32_t shape_points =
        HOOK_BIT(HOOK_Q) | HOOK_BIT(HOOK_CACHE_K) | HOOK_BIT(HOOK_ATTN_SCORES) | HOOK_BIT(HOOK_STEP_END);
    hooks_init(&hooks);
    hooks_subscribe(&hooks, shape_points, capture_shape, &pre);
    if ((rc = generator_prefill(&gc, ld.prompt, P, &hooks))) {
        cli_step_failed(rc, "the prefill", gc.logits, cfg->V);
        goto out;
    }
    Hooks dec_hooks;
    hooks_init(&dec_hooks);
    hooks_subscribe(&dec_hooks, shape_points, capture_shape, &dec);

    const int tty = isatty(STDERR_FILENO);
    const double t0 = now_seconds();
    double *times = malloc((size_t)a.repeat * sizeof *times);
    if (!times) {
        fprintf(stderr, "kvscope: out of memory: timing\n");
        goto out;
    }
    uint64_t cum_cache = flops_layers(&gc.total);
    uint64_t cum_rec = flops_layers_formula(cfg, (uint64_t)P, 0);
    int row = 0;
    for (int t = P + 1; t <= T_max && !interrupted; t++) {
        int tok = generator_argmax(&gc);
        int in_sweep = row < n_sweep && sweep[row] == t;
        FlopCount before = gc.total;
        double s0 = now_seconds();
        if ((rc = generator_decode(&gc, tok, t - P, t == a.decode_at ? &dec_hooks : NULL))) {
            snprintf(buf, sizeof buf, "the decode step at T=%d", t);
            cli_step_failed(rc, buf, gc.logits, cfg->V);
            goto out_times;
        }
        double s1 = now_seconds();
        uint64_t f_step = flops_layers(&gc.total) - flops_layers(&before);
        uint64_t tot_step = flops_total(&gc.total) - flops_total(&before);
        cum_cache += f_step;
        cum_rec += flops_layers_formula(cfg, (uint64_t)t, 0);
        if (!in_sweep) continue;

        Row *r = &rows[row];
        r->T = t;
        r->f_cache = f_step;
        r->tot_cache = tot_step;
        r->cum_cache = cum_cache;
        r->cum_rec_formula = cum_rec;
        r->kv_bytes = kvcache_bytes_used(&gc.cache);
        r->kv_reserved = kvcache_bytes_reserved(&gc.cache);
        progress(tty, t, t, T_max, row + 1, n_sweep, t0);

        /* time the cached step again: undo it and redo it */
        FlopCount after = gc.total;
        times[0] = s1 - s0;
        for (int k = 1; k < a.repeat; k++) {
            generator_rewind(&gc); /* time the same step again, on the same slot */
            s0 = now_seconds();
            if ((rc = generator_decode(&gc, tok, t - P, NULL))) {
                snprintf(buf, sizeof buf, "the decode step at T=%d", t);
                cli_step_failed(rc, buf, gc.logits, cfg->V);
                goto out_times;
            }
            times[k] = now_seconds() - s0;
        }
        gc.total = after;
        r->t_cache = summarize(times, a.repeat);

        /* without a cache: a forward pass over all t tokens, the same ones */
        int reps = recompute_repeats(a.repeat, t);
        for (int k = 0; k < reps; k++) {
            FlopCount rb = gr.total;
            s0 = now_seconds();
            if ((rc = generator_prefill(&gr, gc.tokens, t, NULL))) {
                snprintf(buf, sizeof buf, "the recompute at T=%d", t);
                cli_step_failed(rc, buf, gr.logits, cfg->V);
                goto out_times;
            }
            times[k] = now_seconds() - s0;
            r->f_rec = flops_layers(&gr.total) - flops_layers(&rb);
            r->tot_rec = flops_total(&gr.total) - flops_total(&rb);
        }
        r->t_rec = summarize(times, reps);
        r->dlogit = logits_max_abs_diff(gc.logits, gr.logits, cfg->V);

        write_row(csv, cfg, P, r);
        write_timing(tcsv, r);
        progress_clear(tty);
        if (!a.quiet)
            printf("T=%-5d FLOPs/step  cache %-14s recompute %-16s x%-7.1f  time %9s vs %9s  "
                   "max|dlogit| %.3g\n",
                   t, group_digits(r->f_cache, d1, sizeof d1), group_digits(r->f_rec, d2, sizeof d2),
                   (double)r->f_rec / (double)r->f_cache, seconds(r->t_cache.med, s1buf, sizeof s1buf),
                   seconds(r->t_rec.med, s2buf, sizeof s2buf), r->dlogit);
        fflush(stdout);
        row++;
        if (row < n_sweep) progress(tty, t, sweep[row], T_max, row + 1, n_sweep, t0);
    }
    progress_clear(tty);
    if (interrupted)
        fprintf(stderr, "kvscope: interrupted: keeping the %d length%s finished\n", row, row == 1 ? "" : "s");
    {
        int bad = write_tables(od.tmp, &a, cfg, P, rows, row, &pre, &dec, a.decode_at) ||
                  write_timing_md(od.tmp, rows, row);
        bad |= file_close(csv) | file_close(tcsv);
        csv = tcsv = NULL;
        if (bad) {
            fprintf(stderr, "kvscope: --out: cannot write its files (%s): %s\n", write_error_text(errno),
                    a.out);
            goto out_times;
        }
    }
    /* the charts before any commit: a chart that fails leaves both folders as they were */
    if (charts_open && !interrupted && draw_charts(&a, &charts, od.tmp)) goto out_times;
    if (outdir_commit(&od, err, sizeof err)) {
        fprintf(stderr, "kvscope: %s\n", err);
        goto out_times;
    }
    od_open = 0;
    status = interrupted ? 130 : 0;
    if (!a.quiet) printf("wrote %s/ in %.1f s\n", a.out, now_seconds() - t0);
    if (charts_open && !interrupted) {
        charts_open = 0;
        if (outdir_commit(&charts, err, sizeof err)) {
            fprintf(stderr, "kvscope: %s\n", err);
            status = 2;
        } else if (!a.quiet) {
            for (size_t i = 0; i < NCHARTS; i++)
                printf("wrote %s/%s.png and .svg\n", a.charts, CHARTS[i].chart);
        }
    }

out_times:
    free(times);
out:
    if (sig_set) sigaction(SIGINT, &old_sa, NULL);
    if (csv) fclose(csv);
    if (tcsv) fclose(tcsv);
    if (od_open) outdir_abort(&od);
    if (charts_open) outdir_abort(&charts);
    generator_free(&gc);
    generator_free(&gr);
    model_free(&m2);
    loaded_free(&ld);
    free(sweep);
    free(rows);
    return status;
}
