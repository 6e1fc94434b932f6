/* cmd_loss.c — `kvscope loss`: the loss at every position of a text with the full cache,
 * a window that keeps the sinks and one that evicts them (loss.h does the work).
 * parse → check --out, --plots, gnuplot and the chart script → read --text → load the
 * model → check --window and --sink → measure → the CSVs and the chart → commit → the
 * means, a line each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "gnuplot.h"
#include "infile.h"
#include "loss.h"
#include "outdir.h"

typedef struct {
    ModelArgs model;
    const char *text, *out, *plots, *scripts;
    int window, sinks, quiet, force;
    char scripts_found[4096]; /* --scripts' default, found from the binary */
} LossArgs;

static const Option LOSS_OPTIONS[] = {
    OPT_GROUP("loss options"),
    OPT_STRING("--text", "FILE", LossArgs, text,
               "the text (required): its tokens, the start token first, cut to the context"),
    OPT_INT_AUTO("--window", "W", LossArgs, window, 2, 65536, "N/4: a text that fills the "
                 "context is four windows long", "tokens each window keeps in the cache"),
    OPT_INT_AUTO("--sink", "S", LossArgs, sinks, 1, 65535, "1 (the start token) for a model "
                 "with a start token, else 4", "first positions the first window keeps (the "
                 "sinks), as run's and budget's --sink"),
    /* the old name, kept so that existing commands still run */
    OPT_INT_AUTO("--sinks", "S", LossArgs, sinks, 1, 65535, "as --sink", "the same as --sink (its old name)"),
    OPT_STRING("--out", "DIR", LossArgs, out,
               "output folder, replaced as a whole: loss.csv, loss_means.csv"),
    {.kind = OPT_KIND_STRING, .name = "--plots", .arg = "DIR",
     .field = OPT_FIELD(LossArgs, plots, char *), .dflt = "the --out folder",
     .help = "folder of the chart loss.png and loss.svg, replaced as a whole"},
    OPT_SCRIPTS(LossArgs, scripts, "where the chart script loss.gp is"),
    OPT_QUIET(LossArgs, quiet),
    OPT_FORCE(LossArgs, force),
    OPT_INCLUDE(LossArgs, model, MODEL_ONLY_OPTIONS),
    OPT_END,
};

static const Command LOSS = {
    "loss", "--text FILE [options]",
    "Attention sinks measured StreamingLLM's way: the teacher-forced loss of every token\n"
    "of --text (bits per token; per byte for a byte model) with the full KV cache, with\n"
    "a window of W tokens that keeps the first S positions (the sinks) and with a window\n"
    "of the same W that evicts them. loss.csv has every position, loss_means.csv the\n"
    "means over the text and past the window (the predictions made after it first\n"
    "evicted); the chart of loss against position goes into --plots.\n",
    LOSS_OPTIONS,
    "Positions are absolute (GPT-2's learned positions): the text is at most the context\n"
    "N, so a text several windows long needs W well under N.\n",
};

/* Before any work: both folders may be replaced and lie apart, neither holds an input,
 * and gnuplot and the script are there. 0, or 2 after the error line. */
static int check_outputs(const LossArgs *a, OutDir *od, OutDir *op, int sep) {
    const TextChartOutputs t = {"loss", a->out, a->plots, a->model.model_dir, a->text,
                                a->scripts, "loss.gp", a->force, sep};
    return cli_text_chart_outputs(&t, od, op);
}

/* --text into *buf, the model's prompt. 0, or 2 after the error line. */
static int read_text(LossArgs *a, char **buf) {
    char err[4600];
    size_t len;
    const int rc = infile_read(a->text, (size_t)64 << 20, buf, &len, err, sizeof err);
    if (rc == INFILE_NOMEM) return cli_fail("out of memory", a->text);
    if (rc) return cli_fail("--text", err);
    if (strlen(*buf) != len) return cli_fail("--text holds a NUL byte", a->text);
    if (len == 0) return cli_fail("--text is empty", a->text);
    a->model.prompt = *buf;
    a->model.fit_prompt = 1; /* a book is welcome: its first N tokens are read */
    return 0;
}

/* --window and --sink against the model and the text. 0, or 2 after the error line. */
static int check_window(LossArgs *a, const Loaded *ld) {
    const Config *c = &ld->model.cfg;
    char what[128], v[32];
    if (ld->T < 2) return cli_fail("--text needs 2 tokens or more", a->text);
    if (!a->window) a->window = c->N / 4 > 2 ? c->N / 4 : 2;
    if (!a->sinks) a->sinks = c->bos >= 0 ? 1 : 4;
    if (a->sinks < a->window) return 0;
    snprintf(what, sizeof what, "--sink must be fewer than the window (%d tokens)", a->window);
    snprintf(v, sizeof v, "%d", a->sinks);
    return cli_fail(what, v);
}

/* loss.png/.svg into the begun folder dir from the CSV in csv_dir. 0, or 2. */
static int draw(const LossArgs *a, const Loaded *ld, const OutDir *dir, const char *csv_dir) {
    char script[4300], vars[13000];
    if (!gnuplot_quotable(csv_dir) || !gnuplot_quotable(dir->tmp))
        return cli_fail("--out and --plots must resolve to paths without a quote", a->out);
    const char *label = model_args_words(&a->model, ld); /* what it is, not where */
    snprintf(script, sizeof script, "%s/loss.gp", a->scripts);
    snprintf(vars, sizeof vars, "in='%s/loss.csv'; means='%s/loss_means.csv'; out='%s/loss'; "
             "model='%s'", csv_dir, csv_dir, dir->tmp, label);
    return cli_chart(dir, script, vars, "loss");
}

static void summary(const LossArgs *a, const Config *c, const LossReport *r);

/* The CSVs, the chart, the summary on stdout, then the commits: a chart that fails leaves both folders as
 * they were. 0, or 2. */
static int write_outputs(const LossArgs *a, const Loaded *ld, const LossReport *r, OutDir *od,
                         OutDir *op, int sep) {
    char err[8400];
    int rc = cli_outdir_begin(od);
    if (rc) return rc;
    if (sep && (rc = cli_outdir_begin(op))) {
        outdir_abort(od);
        return rc;
    }
    if (loss_write(r, ld->prompt, od, err, sizeof err)) rc = cli_error(err);
    if (rc == 0) rc = draw(a, ld, sep ? op : od, od->tmp);
    if (rc == 0 && !a->quiet) summary(a, &ld->model.cfg, r); /* before the swaps: see cli.h */
    if (sep) rc = cli_outdir_end(op, rc, 0);
    return cli_outdir_end(od, rc, 0);
}

static void summary(const LossArgs *a, const Config *c, const LossReport *r) {
    const int W = r->window;
    printf("%d tokens%s, window %d, %d sink%s%s; mean loss, bits per token:\n", r->n,
           c->bos >= 0 ? " (the start token first)" : "", W, r->sinks, r->sinks == 1 ? "" : "s",
           c->bos >= 0 && r->sinks >= 1 ? " (the start token among them)" : "");
    printf("  %-32s %8s %15s\n", "", "all", W + 1 < r->n ? "past the window" : "(none past W)");
    static const char *const what[LOSS_RUNS] = {"full cache", "window keeping the sinks",
                                                "window evicting them"};
    for (int k = 0; k < LOSS_RUNS; k++)
        printf("  %-32s %8.3f %15.3f\n", what[k], loss_mean(r, (LossRun)k, 1),
               loss_mean(r, (LossRun)k, W + 1));
    printf("wrote %s/loss.csv, loss_means.csv and %s/loss.png, .svg\n", a->out,
           a->plots ? a->plots : a->out);
}

/* Load, check, measure, write. 0, or 2. */
static int measure(LossArgs *a, OutDir *od, OutDir *op, int sep) {
    Loaded ld;
    int rc = model_args_load(&a->model, 0, &ld);
    if (rc) return rc;
    if ((rc = check_window(a, &ld)) == 0) {
        LossReport r;
        const int m = loss_measure(&ld.model, ld.prompt, ld.T, a->window, a->sinks, &r);
        if (m) rc = cli_fail(m == -1 ? "out of memory" : "a forward pass failed (non-finite logits?)",
                             "loss");
        else
            rc = write_outputs(a, &ld, &r, od, op, sep);
        if (!m) loss_report_free(&r);
    }
    loaded_free(&ld);
    return rc;
}

int cmd_loss(int argc, char **argv) {
    LossArgs a = {.out = "kvscope_loss"};
    model_args_default(&a.model);
    int rc = opts_parse(&LOSS, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    if ((rc = cli_scripts(&a.scripts, a.scripts_found, sizeof a.scripts_found))) return rc;
    const int sep = a.plots && strcmp(a.plots, a.out) != 0;
    OutDir od, op;
    char *text = NULL;
    if ((rc = check_outputs(&a, &od, &op, sep)) == 0 && (rc = read_text(&a, &text)) == 0)
        rc = measure(&a, &od, &op, sep);
    free(text);
    return rc;
}
