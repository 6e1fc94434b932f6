/* cmd_heads.c — `kvscope heads`: what each attention head of a model does (heads.h does
 * the work). parse → check --out, --plots, gnuplot and the chart script → load the model
 * → measure → the CSVs and the layer × head chart → commit → the line naming the best
 * previous-token and induction heads. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "gnuplot.h"
#include "heads.h"
#include "infile.h"
#include "outdir.h"

/* A text any English byte model can read: Psalm 23:1-3 (King James Version). */
static const char *const HEADS_TEXT =
    "The LORD is my shepherd; I shall not want. He maketh me to lie down in green pastures: "
    "he leadeth me beside the still waters. He restoreth my soul: he leadeth me in the paths "
    "of righteousness for his name's sake.";

typedef struct {
    ModelArgs model;
    const char *out, *plots, *scripts;
    int R, S, quiet, force;
    uint64_t seed;
} HeadsArgs;

static const Option HEADS_OPTIONS[] = {
    OPT_GROUP("heads options"),
    OPT_STRING("--out", "DIR", HeadsArgs, out,
               "output folder, replaced as a whole: heads.csv, induction.csv, tokens.csv"),
    {.kind = OPT_KIND_STRING, .name = "--plots", .arg = "DIR",
     .field = OPT_FIELD(HeadsArgs, plots, char *), .dflt = "the --out folder",
     .help = "folder of the chart heads.png and heads.svg, replaced as a whole"},
    OPT_INT_AUTO("--len", "R", HeadsArgs, R, 2, 32768, "N/2, at most 128",
                 "bytes of each random sequence, repeated once (2R tokens, at most the context)"),
    OPT_INT("--samples", "S", HeadsArgs, S, 1, 32768, "random sequences averaged"),
    OPT_U64("--repeat-seed", "S", HeadsArgs, seed, "seed of the random bytes"),
    OPT_STRING("--scripts", "DIR", HeadsArgs, scripts, "where the chart script heads.gp is"),
    OPT_QUIET(HeadsArgs, quiet),
    OPT_FORCE(HeadsArgs, force),
    OPT_INCLUDE(HeadsArgs, model, MODEL_OPTIONS),
    OPT_END,
};

static const Command HEADS = {
    "heads", "[options]",
    "Measure every attention head: on a text (--prompt), the mean weight on the previous\n"
    "token, on position 0 (the sink) and the attention entropy; on random bytes repeated\n"
    "twice, the induction score (the weight on the token after the first copy) and the\n"
    "loss on each copy. The CSVs go into --out, the layer x head chart into --plots.\n",
    HEADS_OPTIONS,
    "The default text is Psalm 23:1-3 (King James Version): a trained byte model reads it.\n",
};

/* Before any work: both folders may be replaced and lie apart, neither holds the model
 * or the script, and gnuplot is there. 0, or 2 after the error line. */
static int check_outputs(const HeadsArgs *a, OutDir *od, OutDir *op, int sep) {
    char script[4300], err[4600];
    const unsigned fl = a->force ? OUTDIR_FORCE : 0;
    int rc;
    if (!gnuplot_quotable(a->scripts)) return cli_fail("--scripts cannot hold a quote", a->scripts);
    snprintf(script, sizeof script, "%s/heads.gp", a->scripts);
    if ((rc = cli_outdir_check(od, a->out, "heads", "--out", fl)) ||
        (rc = cli_outdir_spares(od, "--model", a->model.model_dir)) ||
        (rc = cli_outdir_spares(od, "--scripts", script)))
        return rc;
    if (sep && ((rc = cli_outdir_check(op, a->plots, "heads", "--plots", fl)) ||
                (rc = cli_outdirs_apart(od, op)) ||
                (rc = cli_outdir_spares(op, "--model", a->model.model_dir)) ||
                (rc = cli_outdir_spares(op, "--scripts", script))))
        return rc;
    if (!gnuplot_found())
        return cli_fail("the heads chart needs gnuplot, which is not on PATH; install it with",
                        GNUPLOT_INSTALL_HINT);
    if (gnuplot_check_script(script, err, sizeof err) != 0) return cli_fail("--scripts", err);
    return 0;
}

/* --len and the text against the model's context. 0, or 2 after the error line. */
static int check_lengths(HeadsArgs *a, const Loaded *ld) {
    const int N = ld->model.cfg.N;
    char what[96], v[32];
    if (!a->R) a->R = N / 2 < 128 ? N / 2 : 128;
    if (2 * a->R <= N && ld->T >= 2) return 0;
    snprintf(what, sizeof what, ld->T < 2 ? "the text needs 2 tokens or more"
                                          : "--len twice is more than the context (%d tokens)", N);
    snprintf(v, sizeof v, "%d", ld->T < 2 ? ld->T : a->R);
    return cli_fail(what, v);
}

/* heads.png/.svg into the begun folder dir from the CSV in csv_dir. 0, or 2. */
static int draw(const HeadsArgs *a, const OutDir *dir, const char *csv_dir) {
    char script[4300], vars[13000], msg[512];
    if (!gnuplot_quotable(csv_dir) || !gnuplot_quotable(dir->tmp))
        return cli_fail("--out and --plots must resolve to paths without a quote", a->out);
    const char *label = a->model.model_dir ? a->model.model_dir : "the built-in random model";
    snprintf(script, sizeof script, "%s/heads.gp", a->scripts);
    snprintf(vars, sizeof vars, "in='%s/heads.csv'; out='%s/heads'; model='%s'; copy=%d", csv_dir,
             dir->tmp, gnuplot_quotable(label) ? label : "--model", a->R);
    const int rc = gnuplot_run(script, vars, msg, sizeof msg);
    char line[9200], out[4400], missing[4500];
    snprintf(out, sizeof out, "%s/heads", dir->tmp);
    if (rc == 0 && gnuplot_wrote(out, missing, sizeof missing)) return 0;
    if (rc == 0) /* the script ran but drew nothing (an empty one does) */
        snprintf(line, sizeof line, "%s: gnuplot wrote no %s (does the script draw a chart?): %s",
                 dir->option, missing, script);
    else
        snprintf(line, sizeof line, "%s: gnuplot failed on %s (status %d): %s", dir->option, script,
                 rc, msg[0] ? msg : "no message");
    cli_outdir_error(dir, line);
    return 2;
}

/* The CSVs, the chart, then the commits: a chart that fails leaves both folders as
 * they were. 0, or 2. */
static int write_outputs(const HeadsArgs *a, const Loaded *ld, const HeadsReport *r, OutDir *od,
                         OutDir *op, int sep) {
    char err[8400];
    int rc = cli_outdir_begin(od);
    if (rc) return rc;
    if (sep && (rc = cli_outdir_begin(op))) {
        outdir_abort(od);
        return rc;
    }
    if (heads_write(r, &ld->model.cfg, ld->prompt, ld->T, od, err, sizeof err)) rc = cli_error(err);
    if (rc == 0) rc = draw(a, sep ? op : od, od->tmp);
    if (sep) rc = cli_outdir_end(op, rc, 0);
    return cli_outdir_end(od, rc, 0);
}

/* The best previous-token and induction heads, in one line. */
static void summary(const HeadsArgs *a, const Config *c, const HeadsReport *r) {
    int bp = 0, bi = 0;
    for (int k = 1; k < c->L * c->NH; k++) {
        if (r->h[k].prev_token > r->h[bp].prev_token) bp = k;
        if (r->h[k].induction > r->h[bi].induction) bi = k;
    }
    printf("previous-token head: layer %d head %d (%.2f); induction head: layer %d head %d (%.2f); "
           "loss on the repeat %.2f bits/byte (first copy %.2f)\n", bp / c->NH, bp % c->NH,
           r->h[bp].prev_token, bi / c->NH, bi % c->NH, r->h[bi].induction, r->second_bits,
           r->first_bits);
    printf("wrote %s/heads.csv, induction.csv, tokens.csv and %s/heads.png, .svg\n", a->out,
           a->plots ? a->plots : a->out);
}

int cmd_heads(int argc, char **argv) {
    HeadsArgs a = {.out = "kvscope_heads", .scripts = "plots", .S = 8, .seed = 1};
    model_args_default(&a.model);
    a.model.prompt = HEADS_TEXT;
    int rc = opts_parse(&HEADS, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    const int sep = a.plots && strcmp(a.plots, a.out) != 0;
    OutDir od, op;
    Loaded ld;
    if ((rc = check_outputs(&a, &od, &op, sep)) || (rc = model_args_load(&a.model, 0, &ld))) return rc;
    HeadsReport r;
    if ((rc = check_lengths(&a, &ld)) == 0) {
        const int m = heads_measure(&ld.model, ld.prompt, ld.T, a.R, a.S, a.seed, &r);
        if (m) rc = cli_fail(m == -1 ? "out of memory" : "a forward pass failed (non-finite logits?)",
                             "heads");
        else if ((rc = write_outputs(&a, &ld, &r, &od, &op, sep)) == 0 && !a.quiet)
            summary(&a, &ld.model.cfg, &r);
        if (!m) heads_report_free(&r);
    }
    loaded_free(&ld);
    return rc;
}
