/* cmd_compare.c — `kvscope compare`: one decode step with the KV cache and without it,
 * at every length of a sweep (compare.h does the work).
 * parse → check --out and --charts → load → the sweep, a line per length (a progress
 * bar on a terminal; Ctrl-C stops after the current length) → the files → the charts →
 * commit. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "compare.h"
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
    char scripts_found[4096]; /* --scripts' default, found from the binary */
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
    OPT_SCRIPTS(CompareArgs, scripts, "where the .gp chart scripts are"),
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
    int rc = opts_parse(&COMPARE, argc, argv, a);
    if (rc) return rc;
    if (a->charts && (rc = cli_scripts(&a->scripts, a->scripts_found, sizeof a->scripts_found)))
        return rc;
    if (a->charts && !gnuplot_quotable(a->charts))
        return cli_fail("--charts cannot hold a quote", a->charts);
    if (a->scripts && !gnuplot_quotable(a->scripts)) return cli_fail("--scripts cannot hold a quote", a->scripts);
    if (a->charts && !gnuplot_quotable(a->out)) return cli_fail("--out cannot hold a quote", a->out);
    return 0;
}

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
        if (gnuplot_check_script(script, err, sizeof err) != 0) return cli_fail("--scripts", err);
        if ((rc = cli_outdir_spares(od, "--scripts", script)) ||
            (rc = cli_outdir_spares(charts, "--scripts", script)))
            return rc;
    }
    return 0;
}

/* 2 after one line when the script ran but left no chart (an empty script does), so
 * that "wrote" is never printed for a file that is not there; else 0. */
static int chart_missing(const OutDir *charts, const char *chart, const char *script) {
    char out[4400], missing[4500], line[9200];
    snprintf(out, sizeof out, "%s/%s", charts->tmp, chart);
    if (gnuplot_wrote(out, missing, sizeof missing)) return 0;
    snprintf(line, sizeof line, "--charts: gnuplot wrote no %s (does the script draw a chart?): %s",
             missing, script);
    cli_outdir_error(charts, line);
    return 2;
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
        if ((rc = chart_missing(charts, CHARTS[i].chart, script))) return rc;
    }
    return 0;
}

/* ---- progress on a terminal ------------------------------------------------- */

/* What the progress bar and the lines need while the sweep runs. */
typedef struct {
    const CompareArgs *a;
    const CompareSpec *spec;
    int tty, T_max;
    double t0;
} Lines;

/* The bar fills with the tokens generated so far (t of T_max); the text names the
 * length being measured (or the next one). */
static void bar(const Lines *ln, int t, int target, int index) {
    if (!ln->tty) return;
    char b[41];
    int w = (int)(40.0 * t / ln->T_max);
    for (int i = 0; i < 40; i++) b[i] = i < w ? '#' : '.';
    b[40] = '\0';
    fprintf(stderr, "\r[%s] T=%-5d length %d/%d  %.1f s ", b, target, index + 1, ln->spec->n,
            now_seconds() - ln->t0);
    fflush(stderr);
}

static void bar_clear(const Lines *ln) {
    if (ln->tty) fprintf(stderr, "\r%70s\r", "");
}

static void on_measuring(int T, int index, void *user) { bar(user, T, T, index); }

static void on_measured(const CompareRow *r, int index, void *user) {
    const Lines *ln = user;
    char d1[40], d2[40], s1[32], s2[32];
    bar_clear(ln);
    if (!ln->a->quiet)
        printf("T=%-5d FLOPs/step  cache %-14s recompute %-16s x%-7.1f  time %9s vs %9s  "
               "max|dlogit| %.3g\n",
               r->T, group_digits(r->f_cache, d1, sizeof d1), group_digits(r->f_rec, d2, sizeof d2),
               (double)r->f_rec / (double)r->f_cache, human_seconds(r->t_cache.med, s1, sizeof s1),
               human_seconds(r->t_rec.med, s2, sizeof s2), r->dlogit);
    fflush(stdout);
    if (index + 1 < ln->spec->n) bar(ln, r->T, ln->spec->lengths[index + 1], index + 1);
}

/* ---- the command ------------------------------------------------------------- */

/* The sweep: --lengths and --table-lengths, sorted, each checked against the prompt
 * and the context (and --decode-at). 0, or 2 after the error line. */
static int make_sweep(const CompareArgs *a, const Loaded *ld, int *sweep, CompareSpec *spec) {
    const int P = ld->T, N = ld->model.cfg.N;
    char v[32];
    memcpy(sweep, a->lengths, (size_t)a->n_lengths * sizeof *sweep);
    memcpy(sweep + a->n_lengths, a->table, (size_t)a->n_table * sizeof *sweep);
    *spec = (CompareSpec){.lengths = sweep, .n = sort_unique(sweep, a->n_lengths + a->n_table),
                          .table = a->table, .n_table = a->n_table, .decode_at = a->decode_at,
                          .repeat = a->repeat};
    for (int i = 0; i < spec->n; i++) {
        if (sweep[i] > P && sweep[i] <= N) continue;
        char what[128];
        snprintf(what, sizeof what, "lengths must be in %d..%d (prompt %d tokens, context %d)", P + 1,
                 N, P, N);
        snprintf(v, sizeof v, "%d", sweep[i]);
        return cli_fail(what, v);
    }
    if (a->decode_at > P && a->decode_at <= N) return 0;
    snprintf(v, sizeof v, "%d", a->decode_at);
    return cli_fail("--decode-at must be past the prompt and within the context", v);
}

/* The sweep, with Ctrl-C caught so that it stops after the current length. 0 (also
 * when stopped), or 2 after the line of the failed step. */
static int run_sweep(const CompareArgs *a, Loaded *ld, const CompareSpec *spec, CompareResult *res) {
    const int last = spec->lengths[spec->n - 1];
    Lines ln = {a, spec, isatty(STDERR_FILENO), last > spec->decode_at ? last : spec->decode_at,
                now_seconds()};
    CompareProgress pr = {on_measuring, on_measured, &interrupted, &ln};
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    const int caught = sigaction(SIGINT, &sa, &old) == 0;
    int rc = compare_run(&ld->model, ld->prompt, ld->T, spec, &pr, res);
    bar_clear(&ln);
    if (caught) sigaction(SIGINT, &old, NULL);
    if (rc == -1) return cli_fail("out of memory", "compare");
    if (rc) return cli_step_failed(rc, res->failed, res->failed_logits, ld->model.cfg.V);
    if (interrupted)
        fprintf(stderr, "kvscope: interrupted: keeping the %d length%s finished\n", res->n,
                res->n == 1 ? "" : "s");
    return 0;
}

/* The files, the charts (before any commit: a chart that fails leaves both folders as
 * they were), then both commits. 0, 130 when interrupted (--out keeps the lengths
 * finished, no charts), or 2 (the caller removes what was not committed). */
static int finish(const CompareArgs *a, const CompareResult *res, const CompareSpec *spec,
                  OutDir *od, OutDir *charts, double t0) {
    int rc = compare_write(res, spec, od) ? 2 : 0;
    if (rc) fprintf(stderr, "kvscope: --out: cannot write its files (%s): %s\n",
                    write_error_text(errno), a->out);
    if (rc == 0 && a->charts && !interrupted) rc = draw_charts(a, charts, od->tmp);
    if (rc) return rc;
    /* the text before the swaps: a stdout that fails keeps both old folders (cli.h) */
    if (!a->quiet) printf("wrote %s/ in %.1f s\n", a->out, now_seconds() - t0);
    for (size_t i = 0; a->charts && !interrupted && i < NCHARTS && !a->quiet; i++)
        printf("wrote %s/%s.png and .svg\n", a->charts, CHARTS[i].chart);
    if ((rc = cli_outdir_end(od, 0, 0))) return rc;
    if (interrupted) {
        if (a->charts) outdir_abort(charts);
        return 130;
    }
    return a->charts ? cli_outdir_end(charts, 0, 0) : 0;
}

int cmd_compare(int argc, char **argv) {
    CompareArgs a;
    OutDir od, charts;
    Loaded ld;
    CompareSpec spec;
    CompareResult res;
    int sweep[2 * COMPARE_MAX_LENGTHS];
    const double t0 = now_seconds();
    int rc = parse_compare(argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    /* every output is checked before the model is even loaded */
    const unsigned fl = a.force ? OUTDIR_FORCE : 0;
    if ((rc = cli_outdir_check(&od, a.out, "compare", "--out", fl)) ||
        (rc = cli_outdir_spares(&od, "--model", a.model.model_dir)) ||
        (rc = cli_outdir_spares(&od, "--scripts", a.scripts)) || /* with or without --charts */
        (a.charts && (rc = check_charts(&a, &od, &charts, fl))) ||
        (rc = model_args_load(&a.model, 0, &ld)))
        return rc;
    memset(&res, 0, sizeof res);
    if ((rc = make_sweep(&a, &ld, sweep, &spec)) == 0 && (rc = cli_outdir_begin(&od)) == 0) {
        if (a.charts && (rc = cli_outdir_begin(&charts))) outdir_abort(&od);
        else if ((rc = run_sweep(&a, &ld, &spec, &res)) == 0) rc = finish(&a, &res, &spec, &od, &charts, t0);
        outdir_abort(&od); /* nothing when committed */
        if (a.charts) outdir_abort(&charts);
    }
    compare_result_free(&res);
    loaded_free(&ld);
    return rc;
}
