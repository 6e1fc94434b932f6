/* cmd_heads.c — `kvscope heads`: what each attention head of a model does (heads.h does
 * the work). parse → check --out, --plots, gnuplot and the chart script → load the model
 * → measure → the CSVs and the layer × head chart → commit → the line naming the best
 * previous-token and induction heads. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "gnuplot.h"
#include "heads.h"
#include "infile.h"
#include "outdir.h"

/* A text any English byte model can read: Psalm 23:1-4 (King James Version), 371
 * bytes, cut to the context: past position 128 on a model of context 256. */
static const char *const HEADS_TEXT =
    "The LORD is my shepherd; I shall not want. He maketh me to lie down in green pastures: "
    "he leadeth me beside the still waters. He restoreth my soul: he leadeth me in the paths "
    "of righteousness for his name's sake. Yea, though I walk through the valley of the "
    "shadow of death, I will fear no evil: for thou art with me; thy rod and thy staff they "
    "comfort me.";

enum { HEADS_MAX_LENS = 16 };
/* The copy lengths measured by default, those of them that fit the context. */
static const int DEFAULT_LENS[] = {16, 32, 64, 100};

typedef struct {
    ModelArgs model;
    const char *out, *plots, *scripts, *ablate;
    int lens[HEADS_MAX_LENS], nlens, split, S, quiet, force, ablate_zero;
    uint64_t seed;
    char scripts_found[4096]; /* --scripts' default, found from the binary */
} HeadsArgs;

static const Option HEADS_OPTIONS[] = {
    OPT_GROUP("heads options"),
    OPT_STRING("--out", "DIR", HeadsArgs, out,
               "output folder, replaced as a whole: heads.csv, induction.csv, tokens.csv"),
    {.kind = OPT_KIND_STRING, .name = "--plots", .arg = "DIR",
     .field = OPT_FIELD(HeadsArgs, plots, char *), .dflt = "the --out folder",
     .help = "folder of the chart heads.png and heads.svg, replaced as a whole"},
    {.kind = OPT_KIND_INTS, .name = "--len", .arg = "LIST", .field = offsetof(HeadsArgs, lens),
     .field2 = OPT_FIELD(HeadsArgs, nlens, int), .cap = HEADS_MAX_LENS, .lo = 2, .hi = 32768,
     .dflt = "those of 16,32,64,100 that fit the context, else half of it",
     .help = "copy lengths R: bytes of each random sequence, repeated once (2R tokens, and "
             "the start token, at most the context)"},
    OPT_INT_AUTO("--split", "P", HeadsArgs, split, 2, 65536, "N/2 (the training repeats' "
                 "distance), or half the text when it is shorter",
                 "previous-token score before and after this position of the text"),
    OPT_INT("--samples", "S", HeadsArgs, S, 1, 32768, "random sequences averaged"),
    OPT_U64("--repeat-seed", "S", HeadsArgs, seed, "seed of the random bytes"),
    OPT_SCRIPTS(HeadsArgs, scripts, "where the chart script heads.gp is"),
    OPT_STRING("--ablate", "L.H,...", HeadsArgs, ablate,
               "measure with these heads ablated (layer.head): each one's output z replaced, "
               "before attn.c_proj, by its mean over the text (--prompt)"),
    OPT_FLAG("--ablate-zero", HeadsArgs, ablate_zero, "with --ablate: zeros instead of the mean"),
    OPT_QUIET(HeadsArgs, quiet),
    OPT_FORCE(HeadsArgs, force),
    OPT_INCLUDE(HeadsArgs, model, MODEL_OPTIONS),
    OPT_END,
};

static const Command HEADS = {
    "heads", "[options]",
    "Measure every attention head: on a text (--prompt), the mean weight on the previous\n"
    "token (over the whole text, before --split and after it), on position 0 (the sink;\n"
    "with a start token, also on the text without it) and the attention entropy; on\n"
    "random bytes repeated twice, at each copy length of --len, the induction score (the\n"
    "weight on the token after the first copy) and the loss on each copy. The CSVs go\n"
    "into --out, the chart into --plots.\n",
    HEADS_OPTIONS,
    "The default text is Psalm 23:1-4 (King James Version, 371 bytes), cut to the\n"
    "context: a trained byte model reads it.\n",
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

/* The copy lengths against the context: the default ones that fit (else half the
 * context), or every one given. 0, or 2 after the error line. */
static int check_lens(HeadsArgs *a, const Config *c) {
    const int room = c->N - (c->bos >= 0); /* the start token takes one position */
    char what[128], v[32];
    if (a->nlens == 0) {
        for (int i = 0; i < (int)(sizeof DEFAULT_LENS / sizeof *DEFAULT_LENS); i++)
            if (2 * DEFAULT_LENS[i] <= room) a->lens[a->nlens++] = DEFAULT_LENS[i];
        if (a->nlens == 0) a->lens[a->nlens++] = room / 2;
    }
    for (int i = 0; i < a->nlens; i++) {
        if (a->lens[i] >= 2 && 2 * a->lens[i] <= room) continue;
        snprintf(what, sizeof what, "--len twice%s is more than the context (%d tokens)",
                 c->bos >= 0 ? ", after the start token," : "", c->N);
        snprintf(v, sizeof v, "%d", a->lens[i]);
        return cli_fail(what, v);
    }
    return 0;
}

/* --ablate's layer.head list into head_off (c->L masks, zeroed first). 0, or 2 after the
 * error line naming the bad item. */
static int parse_ablate(const char *list, const Config *c, uint64_t *head_off) {
    memset(head_off, 0, (size_t)c->L * sizeof *head_off);
    char item[64], what[128];
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        snprintf(item, sizeof item, "%.*s", (int)(n < 63 ? n : 63), p);
        int l, h, used = 0;
        if (sscanf(item, "%d.%d%n", &l, &h, &used) != 2 || used != (int)strlen(item) || l < 0 ||
            h < 0)
            return cli_fail("--ablate takes layer.head items, such as 0.4", item);
        if (l >= c->L || h >= c->NH || h >= 64) {
            snprintf(what, sizeof what, "--ablate names a head the model does not have (%d layers "
                     "of %d heads%s)", c->L, c->NH, c->NH > 64 ? "; heads 0..63 only" : "");
            return cli_fail(what, item);
        }
        head_off[l] |= (uint64_t)1 << h;
        p += n;
        if (*p == ',') p++;
    }
    return 0;
}

/* The text and --split against it. 0, or 2 after the error line. */
static int check_text(HeadsArgs *a, const Loaded *ld) {
    const Config *c = &ld->model.cfg;
    const int words = ld->T - (c->bos >= 0); /* tokens of the text itself */
    char what[128], v[32];
    if (words < 2) {
        snprintf(v, sizeof v, "%d", words);
        return cli_fail("the text needs 2 tokens or more", v);
    }
    if (!a->split) a->split = c->N / 2 < ld->T ? c->N / 2 : ld->T / 2;
    if (a->split < ld->T) return 0;
    snprintf(what, sizeof what, "--split must fall inside the text (%d tokens)", ld->T);
    snprintf(v, sizeof v, "%d", a->split);
    return cli_fail(what, v);
}

/* heads.png/.svg into the begun folder dir from the CSV in csv_dir. 0, or 2. */
static int draw(const HeadsArgs *a, const Loaded *ld, const OutDir *dir, const char *csv_dir) {
    char script[4300], vars[13000];
    if (!gnuplot_quotable(csv_dir) || !gnuplot_quotable(dir->tmp))
        return cli_fail("--out and --plots must resolve to paths without a quote", a->out);
    const char *label = model_args_words(&a->model, ld); /* what it is, not where */
    snprintf(script, sizeof script, "%s/heads.gp", a->scripts);
    if (a->ablate && !gnuplot_quotable(a->ablate))
        return cli_fail("--ablate cannot hold a quote", a->ablate);
    snprintf(vars, sizeof vars, "in='%s/heads.csv'; lens='%s/induction_heads.csv'; out='%s/heads'; "
             "model='%s'; split=%d%s%s%s", csv_dir, csv_dir, dir->tmp,
             label, a->split, a->ablate ? "; ablated='" : "", a->ablate ? a->ablate : "",
             a->ablate ? "'" : "");
    return cli_chart(dir, script, vars, "heads");
}

static void summary(const HeadsArgs *a, const Config *c, const HeadsReport *r);

/* The CSVs, the chart, the summary on stdout, then the commits: a chart that fails leaves both folders as
 * they were. 0, or 2. */
static int write_outputs(const HeadsArgs *a, const Loaded *ld, const HeadsSpec *sp,
                         const HeadsReport *r, OutDir *od, OutDir *op, int sep) {
    char err[8400];
    int rc = cli_outdir_begin(od);
    if (rc) return rc;
    if (sep && (rc = cli_outdir_begin(op))) {
        outdir_abort(od);
        return rc;
    }
    if (heads_write(r, &ld->model.cfg, sp, od, err, sizeof err)) rc = cli_error(err);
    if (rc == 0) rc = draw(a, ld, sep ? op : od, od->tmp);
    if (rc == 0 && !a->quiet) summary(a, &ld->model.cfg, r); /* before the swaps: see cli.h */
    if (sep) rc = cli_outdir_end(op, rc, 0);
    return cli_outdir_end(od, rc, 0);
}

/* The head k with the highest score(k). */
static int best(const HeadsReport *r, int LH, double (*score)(const HeadScores *)) {
    int b = 0;
    for (int k = 1; k < LH; k++)
        if (score(&r->h[k]) > score(&r->h[b])) b = k;
    return b;
}
static double prev_both(const HeadScores *h) { return fmin(h->prev_before, h->prev_after); }
static double ind_all(const HeadScores *h) { return h->induction; }
static double sink_of(const HeadScores *h) { return h->sink; }

/* The best previous-token, induction and sink heads, a line each, and the files. */
static void summary(const HeadsArgs *a, const Config *c, const HeadsReport *r) {
    const int LH = c->L * c->NH, bp = best(r, LH, prev_both), bi = best(r, LH, ind_all),
              bs = best(r, LH, sink_of);
    printf("previous-token head: layer %d head %d (%.2f before position %d, %.2f after)\n",
           bp / c->NH, bp % c->NH, r->h[bp].prev_before, a->split, r->h[bp].prev_after);
    if (a->ablate)
        printf("measured with heads %s ablated (%s)\n", a->ablate,
               a->ablate_zero ? "their output zeroed" : "their output replaced by its mean over the text");
    printf("induction head: layer %d head %d (%.2f at its worst copy length)\n", bi / c->NH,
           bi % c->NH, r->h[bi].induction);
    for (int li = 0; li < r->nlens; li++)
        printf("  copy length %d: that head %.2f; loss on the repeat %.2f bits/byte (first copy "
               "%.2f)\n", a->lens[li], r->ind[(size_t)li * LH + bi], r->second_bits[li],
               r->first_bits[li]);
    if (c->bos >= 0)
        printf("sink head: layer %d head %d (%.2f on the start token; %.2f on position 0 without "
               "it)\n", bs / c->NH, bs % c->NH, r->h[bs].sink, r->h[bs].sink_no_start);
    else
        printf("sink head: layer %d head %d (%.2f on position 0; the model has no start token)\n",
               bs / c->NH, bs % c->NH, r->h[bs].sink);
    printf("wrote %s/heads.csv, induction.csv, induction_heads.csv, tokens.csv and %s/heads.png, "
           ".svg\n", a->out, a->plots ? a->plots : a->out);
}

/* Load, check the lengths and the text, measure, write. 0, or 2. */
static int measure(HeadsArgs *a, OutDir *od, OutDir *op, int sep) {
    Loaded ld;
    int rc = model_args_load(&a->model, 0, &ld);
    if (rc) return rc;
    const Config *c = &ld.model.cfg;
    uint64_t *off = NULL;
    float *fill = NULL;
    if (a->ablate && (!(off = calloc((size_t)c->L, sizeof *off)) ||
                      !(fill = malloc((size_t)c->L * c->C * sizeof *fill))))
        rc = cli_fail("out of memory", "--ablate");
    if (rc == 0 && off && (rc = parse_ablate(a->ablate, c, off)) == 0) {
        /* the mean over the text of the unablated model: what each ablated head outputs */
        if (!a->ablate_zero && heads_mean_z(&ld.model, ld.prompt, ld.T, fill))
            rc = cli_fail("a forward pass failed measuring the heads' mean output", "--ablate");
        ld.model.head_off = off;
        ld.model.head_fill = a->ablate_zero ? NULL : fill;
    }
    if (rc == 0 && (rc = check_lens(a, c)) == 0 && (rc = check_text(a, &ld)) == 0) {
        const HeadsSpec sp = {.text = ld.prompt, .n = ld.T, .split = a->split, .lens = a->lens,
                              .nlens = a->nlens, .S = a->S, .seed = a->seed, .bos = c->bos};
        HeadsReport r;
        const int m = heads_measure(&ld.model, &sp, &r);
        if (m) rc = cli_fail(m == -1 ? "out of memory" : "a forward pass failed (non-finite logits?)",
                             "heads");
        else
            rc = write_outputs(a, &ld, &sp, &r, od, op, sep);
        if (!m) heads_report_free(&r);
    }
    ld.model.head_off = NULL;
    ld.model.head_fill = NULL;
    free(off);
    free(fill);
    loaded_free(&ld);
    return rc;
}

int cmd_heads(int argc, char **argv) {
    HeadsArgs a = {.out = "kvscope_heads", .S = 8, .seed = 1};
    model_args_default(&a.model);
    a.model.prompt = HEADS_TEXT;
    int rc = opts_parse(&HEADS, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    if ((rc = cli_scripts(&a.scripts, a.scripts_found, sizeof a.scripts_found))) return rc;
    a.model.fit_prompt = a.model.prompt_option == NULL; /* the default text, cut to the context */
    const int sep = a.plots && strcmp(a.plots, a.out) != 0;
    OutDir od, op;
    if ((rc = check_outputs(&a, &od, &op, sep))) return rc;
    return measure(&a, &od, &op, sep);
}
