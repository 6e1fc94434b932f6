/* cmd_copying.c — `kvscope copying`: does a byte model copy sentences it has just read,
 * over many sentences cut from a text by a rule, with the whole cache, the article's
 * forgetful cache and a short window (copying.h does the work). parse → check --out,
 * --plots, gnuplot and the chart script → read --text (or its validation split) → load
 * the model → check the lengths against it → cut the sentences → measure → the CSVs and
 * the chart → commit → the share copied per cache, a line each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "copying.h"
#include "corpus.h"
#include "gnuplot.h"
#include "infile.h"
#include "outdir.h"
#include "tokenizer.h"

typedef struct {
    ModelArgs model;
    const char *text, *out, *plots, *scripts;
    int val, min_len, max_len, nmax, cue, window, kv_window, sinks, examples, quiet, force;
} CopyArgs;

static const Option COPY_OPTIONS[] = {
    OPT_GROUP("copying options"),
    OPT_STRING("--text", "FILE", CopyArgs, text, "the text the sentences are cut from (required)"),
    OPT_FLAG("--val", CopyArgs, val,
             "only the validation split of FILE as `kvscope train` cuts it (every 20th block "
             "of 8 KiB): text a model trained on FILE never saw"),
    OPT_INT("--min-len", "L", CopyArgs, min_len, 1, 4096, "shortest sentence kept, in bytes"),
    OPT_INT("--max-len", "L", CopyArgs, max_len, 1, 4096, "longest sentence kept, in bytes"),
    OPT_INT("--sentences", "N", CopyArgs, nmax, 1, 100000,
            "sentences measured, spread evenly over those of the asked length"),
    OPT_INT("--cue", "C", CopyArgs, cue, 1, 4096,
            "bytes of the sentence given again after it, shorter than --min-len"),
    OPT_INT("--window", "W", CopyArgs, window, 1, 4096,
            "bytes written greedily after the cue and compared (fewer when the sentence ends "
            "sooner)"),
    OPT_INT("--kv-window", "K", CopyArgs, kv_window, 2, 65536,
            "tokens the window cache keeps: shorter than the distance back to the first copy"),
    OPT_INT("--sinks", "S", CopyArgs, sinks, 0, 65535,
            "first positions the window cache keeps (1: the start token), fewer than --kv-window"),
    OPT_INT("--examples", "E", CopyArgs, examples, 0, 8, "sentences shown in the chart"),
    OPT_STRING("--out", "DIR", CopyArgs, out,
               "output folder, replaced as a whole: copying.csv, copying_summary.csv, "
               "copying_hist.csv, copying_examples.tsv"),
    {.kind = OPT_KIND_STRING, .name = "--plots", .arg = "DIR",
     .field = OPT_FIELD(CopyArgs, plots, char *), .dflt = "the --out folder",
     .help = "folder of the chart copying.png and copying.svg, replaced as a whole"},
    OPT_STRING("--scripts", "DIR", CopyArgs, scripts, "where the chart script copying.gp is"),
    OPT_QUIET(CopyArgs, quiet),
    OPT_FORCE(CopyArgs, force),
    OPT_INCLUDE(CopyArgs, model, MODEL_ONLY_OPTIONS),
    OPT_END,
};

static const Command COPYING = {
    "copying", "--text FILE [options]",
    "Greedy copying of sentences nobody chose. The text's whitespace runs become one\n"
    "space; a sentence ends after . ! or ? followed by a space or the end (and after the\n"
    "Chinese 。！？); those of --min-len..--max-len bytes are kept, --sentences of them\n"
    "spread evenly. For each: the prompt is the sentence, a space and its first --cue\n"
    "bytes; greedy decoding writes --window bytes; the share equal is the share of them\n"
    "equal, position by position, to the sentence's own continuation; a sentence is\n"
    "copied when it is at least 90 %. Three caches: the whole cache, the article's\n"
    "forgetful cache (each decode step sees only its own K and V) and a window of\n"
    "--kv-window tokens keeping --sinks first positions.\n",
    COPY_OPTIONS,
    "Byte models only (their tokens are bytes). The chart has the distribution of the\n"
    "share equal per cache and the first --examples sentences with what each cache wrote.\n",
};

/* Before any work. 0, or 2 after the error line. */
static int check_outputs(const CopyArgs *a, OutDir *od, OutDir *op, int sep) {
    const TextChartOutputs t = {"copying", a->out, a->plots, a->model.model_dir, a->text,
                                a->scripts, "copying.gp", a->force, sep};
    return cli_text_chart_outputs(&t, od, op);
}

static int fail_int(const char *what, int value) {
    char v[32];
    snprintf(v, sizeof v, "%d", value);
    return cli_fail(what, v);
}

/* The lengths among themselves. 0, or 2 after the error line. */
static int check_lengths(const CopyArgs *a) {
    char what[160];
    if (a->min_len > a->max_len) {
        snprintf(what, sizeof what, "--min-len must be at most --max-len (%d)", a->max_len);
        return fail_int(what, a->min_len);
    }
    if (a->cue >= a->min_len) {
        snprintf(what, sizeof what, "--cue must be shorter than every sentence (--min-len %d)", a->min_len);
        return fail_int(what, a->cue);
    }
    if (a->sinks >= a->kv_window) {
        snprintf(what, sizeof what, "--sinks must be fewer than --kv-window (%d)", a->kv_window);
        return fail_int(what, a->sinks);
    }
    return 0;
}

/* The longest prompt and its window against the model's context. 0, or 2. */
static int check_context(const CopyArgs *a, const Loaded *ld) {
    const Config *c = &ld->model.cfg;
    const int start = c->bos >= 0;
    char what[400];
    if (!tokenizer_is_bytes(ld->tok))
        return cli_fail("copying measures byte models (tokens that are bytes); this one has BPE",
                        a->model.model_dir ? a->model.model_dir : "the model");
    if (start + a->cue + 1 > c->N) {
        snprintf(what, sizeof what, "--cue past the context (%d tokens)", c->N);
        return fail_int(what, a->cue);
    }
    if (start + a->max_len + 1 + a->cue + a->window > c->N) {
        snprintf(what, sizeof what, "--window past the context: %sa sentence of --max-len %d bytes, "
                 "a space, the cue of %d and the window must fit in %d tokens",
                 start ? "the start token, " : "", a->max_len, a->cue, c->N);
        return fail_int(what, a->window);
    }
    if (a->kv_window > c->N) {
        snprintf(what, sizeof what, "--kv-window past the context (%d tokens)", c->N);
        return fail_int(what, a->kv_window);
    }
    return 0;
}

/* The text (its validation split with --val) into *buf, *n. 0, or 2. */
static int read_text(const CopyArgs *a, char **buf, size_t *n) {
    char err[4600];
    if (a->val) {
        Corpus c;
        const int rc = corpus_load(&c, a->text, err, sizeof err);
        if (rc) return rc == CORPUS_NOMEM ? cli_fail("out of memory", a->text) : cli_fail("--text", err);
        *buf = malloc(c.nval + 1);
        if (*buf) memcpy(*buf, c.val, c.nval), (*buf)[c.nval] = '\0', *n = c.nval;
        corpus_free(&c);
        return *buf ? 0 : cli_fail("out of memory", a->text);
    }
    const int rc = infile_read(a->text, (size_t)256 << 20, buf, n, err, sizeof err);
    if (rc == INFILE_NOMEM) return cli_fail("out of memory", a->text);
    return rc ? cli_fail("--text", err) : 0;
}

/* copying.png/.svg into the begun folder dir from the files in csv_dir. 0, or 2. */
static int draw(const CopyArgs *a, const Loaded *ld, const OutDir *dir, const char *csv_dir) {
    char script[4300], vars[13000];
    if (!gnuplot_quotable(csv_dir) || !gnuplot_quotable(dir->tmp))
        return cli_fail("--out and --plots must resolve to paths without a quote", a->out);
    snprintf(script, sizeof script, "%s/copying.gp", a->scripts);
    snprintf(vars, sizeof vars, "dir='%s'; out='%s/copying'; model='%s'; cue=%d", csv_dir, dir->tmp,
             model_args_words(&a->model, ld), a->cue);
    return cli_chart(dir, script, vars, "copying");
}

static int write_outputs(const CopyArgs *a, const Loaded *ld, const Sentences *s,
                         const CopySpec *spec, const CopyReport *r, OutDir *od, OutDir *op, int sep) {
    char err[8400];
    int rc = cli_outdir_begin(od);
    if (rc) return rc;
    if (sep && (rc = cli_outdir_begin(op))) {
        outdir_abort(od);
        return rc;
    }
    if (copy_write(r, s, spec, a->examples, od, err, sizeof err)) rc = cli_error(err);
    if (rc == 0) rc = draw(a, ld, sep ? op : od, od->tmp);
    if (sep) rc = cli_outdir_end(op, rc, 0);
    return cli_outdir_end(od, rc, 0);
}

static void summary(const CopyArgs *a, const Sentences *s, const CopySpec *spec, const CopyReport *r) {
    printf("%d sentences of %d..%d bytes (%d in the text), cue %d, window %d: copied (>= 90 %% of "
           "the bytes equal)\n", r->n, a->min_len, a->max_len, s->found, spec->cue, spec->window);
    for (int k = 0; k < COPY_CACHES; k++) {
        double mean;
        const int c = copy_count(r, (CopyCache)k, &mean);
        char name[64];
        if (k == COPY_WINDOW) snprintf(name, sizeof name, "window %d, %d sink%s", spec->kv_window,
                                       spec->sinks, spec->sinks == 1 ? "" : "s");
        else snprintf(name, sizeof name, "%s", k == COPY_FULL ? "full cache" : "forgetful cache");
        printf("  %-22s %4d of %d (%.0f %%), mean share equal %.0f %%\n", name, c, r->n,
               r->n ? 100.0 * c / r->n : 0.0, 100.0 * mean);
    }
    printf("wrote %s/copying.csv, copying_summary.csv and %s/copying.png, .svg\n", a->out,
           a->plots ? a->plots : a->out);
}

/* Load, check, cut, measure, write. 0, or 2. */
static int measure(CopyArgs *a, const char *text, size_t n, OutDir *od, OutDir *op, int sep) {
    Loaded ld;
    int rc = model_args_load(&a->model, 0, &ld);
    if (rc) return rc;
    Sentences s = {0};
    if ((rc = check_context(a, &ld)) == 0 &&
        copy_sentences(text, n, a->min_len, a->max_len, a->nmax, &s))
        rc = cli_fail("out of memory", a->text);
    if (rc == 0 && s.n == 0) {
        char what[200];
        snprintf(what, sizeof what, "--text has no sentence of %d..%d bytes (--min-len, --max-len)",
                 a->min_len, a->max_len);
        rc = cli_fail(what, a->text);
    }
    if (rc == 0) {
        const CopySpec spec = {a->cue, a->window, a->kv_window, a->sinks};
        CopyReport r;
        const int m = copy_measure(&ld.model, &s, &spec, &r);
        if (m) rc = cli_fail(m == -1 ? "out of memory" : "a forward pass failed (non-finite logits?)",
                             "copying");
        else if ((rc = write_outputs(a, &ld, &s, &spec, &r, od, op, sep)) == 0 && !a->quiet)
            summary(a, &s, &spec, &r);
        if (!m) copy_report_free(&r);
    }
    copy_sentences_free(&s);
    loaded_free(&ld);
    return rc;
}

int cmd_copying(int argc, char **argv) {
    CopyArgs a = {.out = "kvscope_copying", .scripts = "plots", .min_len = 60, .max_len = 140,
                  .nmax = 40, .cue = 16, .window = 40, .kv_window = 32, .sinks = 1, .examples = 2};
    model_args_default(&a.model);
    int rc = opts_parse(&COPYING, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    if ((rc = check_lengths(&a))) return rc;
    const int sep = a.plots && strcmp(a.plots, a.out) != 0;
    OutDir od, op;
    char *text = NULL;
    size_t n = 0;
    if ((rc = check_outputs(&a, &od, &op, sep)) == 0 && (rc = read_text(&a, &text, &n)) == 0)
        rc = measure(&a, text, n, &od, &op, sep);
    free(text);
    return rc;
}
