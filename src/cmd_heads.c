/* cmd_heads.c — `kvscope heads`: what each attention head of a model does.
 * parse → load the model → measure (heads.h) → write the CSVs → draw the chart. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "gnuplot.h"
#include "heads.h"
#include "outdir.h"

static const char *const HEADS_HELP =
    "usage: kvscope heads [--model DIR] [options]\n"
    "Measure every attention head: on a text, the mean weight on the previous token,\n"
    "on position 0 (the sink) and the attention entropy; on random bytes repeated twice,\n"
    "the induction score (weight on the token after the first copy) and the loss on each\n"
    "copy. Writes heads.csv, induction.csv and tokens.csv into --out, and the layer x head\n"
    "chart heads.png/.svg into --plots.\n\n"
    "heads options:\n"
    "  --out DIR          CSV folder, replaced as a whole (default kvscope_heads)\n"
    "  --plots DIR        chart folder, replaced as a whole (default: the --out folder)\n"
    "  --len R            bytes of each random sequence, repeated once (default ctx/2, at\n"
    "                     most 128)\n"
    "  --samples S        random sequences averaged (default 8)\n"
    "  --repeat-seed S    seed of the random bytes (default 1)\n"
    "  --scripts DIR      where heads.gp is (default plots)\n"
    "  --quiet            print nothing but errors\n"
    "The text is --prompt (or --prompt-ids); without it, the first verses of Psalm 23.\n\n";

/* A text any English byte model can read: Psalm 23:1-4 (King James Version). */
static const char *const HEADS_TEXT =
    "The LORD is my shepherd; I shall not want. He maketh me to lie down in green pastures: "
    "he leadeth me beside the still waters. He restoreth my soul: he leadeth me in the paths "
    "of righteousness for his name's sake.";

typedef struct {
    ModelArgs model;
    const char *out, *plots, *scripts;
    int R, S, quiet;
    uint64_t seed;
} HeadsArgs;

static int parse_heads(int argc, char **argv, HeadsArgs *a) {
    model_args_default(&a->model);
    a->out = "kvscope_heads", a->plots = NULL, a->scripts = "plots";
    a->R = 0, a->S = 8, a->quiet = 0, a->seed = 1;
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v;
        long x;
        int rc = model_args_parse(&a->model, argc, argv, &i);
        if (rc == 1) continue;
        if (rc) return rc;
        if (strcmp(o, "--out") == 0 || strcmp(o, "--plots") == 0 || strcmp(o, "--scripts") == 0) {
            if (!(v = cli_value(argc, argv, &i))) return 2;
            if (!gnuplot_quotable(v)) return cli_fail("a folder for gnuplot cannot hold a quote", v);
            *(o[2] == 'o' ? &a->out : o[2] == 'p' ? &a->plots : &a->scripts) = v;
        } else if (strcmp(o, "--len") == 0 || strcmp(o, "--samples") == 0 ||
                   strcmp(o, "--repeat-seed") == 0) {
            if (!(v = cli_value(argc, argv, &i)) || cli_long(o, v, o[2] == 'l' ? 2 : 1, 32768, &x))
                return 2;
            if (o[2] == 'l') a->R = (int)x;
            else if (o[2] == 's') a->S = (int)x;
            else a->seed = (uint64_t)x;
        } else if (strcmp(o, "--quiet") == 0) {
            a->quiet = 1;
        } else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            printf("%s%s", HEADS_HELP, MODEL_ARGS_HELP);
            return 1;
        } else {
            return cli_fail("unknown option", o);
        }
    }
    if (!a->model.prompt && !a->model.prompt_ids) a->model.prompt = HEADS_TEXT;
    return 0;
}

static int write_csvs(const HeadsReport *r, const Loaded *ld, const char *dir) {
    const Config *c = &ld->model.cfg;
    char path[4200];
    FILE *f[3] = {NULL, NULL, NULL};
    static const char *const names[3] = {"heads.csv", "induction.csv", "tokens.csv"};
    for (int k = 0; k < 3; k++)
        if (path_join(path, sizeof path, dir, names[k]) || !(f[k] = fopen(path, "w"))) {
            for (int j = 0; j < k; j++) fclose(f[j]);
            fprintf(stderr, "kvscope: cannot write %s\n", path);
            return 1;
        }
    fprintf(f[0], "layer,head,prev_token,induction,sink,entropy_bits\n");
    for (int l = 0; l < c->L; l++)
        for (int h = 0; h < c->NH; h++) {
            const HeadScores *s = &r->h[(size_t)l * c->NH + h];
            fprintf(f[0], "%d,%d,%.6f,%.6f,%.6f,%.6f\n", l, h, s->prev_token, s->induction, s->sink,
                    s->entropy);
        }
    fprintf(f[1], "copy,tokens,bits_per_byte\nfirst,%d,%.4f\nsecond,%d,%.4f\n", (r->R - 1) * r->S,
            r->first_bits, r->R * r->S, r->second_bits);
    fprintf(f[2], "sequence,pos,token_id\n");
    for (int i = 0; i < ld->T; i++) fprintf(f[2], "text,%d,%d\n", i, ld->prompt[i]);
    for (int s = 0; s < r->S; s++)
        for (int i = 0; i < 2 * r->R; i++)
            fprintf(f[2], "repeat%d,%d,%d\n", s, i, r->rep[(size_t)s * 2 * r->R + i]);
    int bad = 0;
    for (int k = 0; k < 3; k++) bad |= file_close(f[k]);
    if (bad) fprintf(stderr, "kvscope: write error in %s (disk full?)\n", dir);
    return bad ? 1 : 0;
}

/* heads.png/.svg into dir from csv; 0, or 1 with a message. */
static int draw(const HeadsArgs *a, const char *csv, const char *dir, const char *label) {
    char script[4300], vars[9000];
    snprintf(script, sizeof script, "%s/heads.gp", a->scripts);
    if (!gnuplot_found()) {
        fprintf(stderr, "kvscope: gnuplot not found: the CSVs are in %s/; install it with: %s\n", a->out,
                GNUPLOT_INSTALL_HINT);
        return 1;
    }
    if (access(script, R_OK) != 0) {
        fprintf(stderr, "kvscope: no chart script %s (--scripts DIR)\n", script);
        return 1;
    }
    snprintf(vars, sizeof vars, "in='%s'; out='%s/heads'; model='%s'", csv, dir, label);
    int rc = gnuplot_run(script, vars);
    if (rc) fprintf(stderr, "kvscope: gnuplot failed on %s (status %d)\n", script, rc);
    return rc ? 1 : 0;
}

int cmd_heads(int argc, char **argv) {
    HeadsArgs a;
    int rc = parse_heads(argc, argv, &a);
    if (rc) return rc == 1 ? 0 : rc;
    Loaded ld;
    if ((rc = model_args_load(&a.model, 0, &ld))) return rc;
    const int N = ld.model.cfg.N;
    if (!a.R) a.R = N / 2 < 128 ? N / 2 : 128;
    char what[96], v[32];
    if (2 * a.R > N || ld.T < 2) {
        snprintf(what, sizeof what, ld.T < 2 ? "the text needs 2 tokens or more" :
                 "--len twice is more than the context (%d tokens)", N);
        snprintf(v, sizeof v, "%d", ld.T < 2 ? ld.T : a.R);
        loaded_free(&ld);
        return cli_fail(what, v);
    }
    HeadsReport r;
    if ((rc = heads_measure(&ld.model, ld.prompt, ld.T, a.R, a.S, a.seed, &r))) {
        loaded_free(&ld);
        return cli_fail(rc == -1 ? "out of memory" : "forward pass failed", "heads"), 1;
    }
    char err[4600], csv[4200];
    OutDir od, op;
    const int sep = a.plots && strcmp(a.plots, a.out) != 0;
    if (outdir_begin(&od, a.out, err, sizeof err)) {
        heads_report_free(&r);
        loaded_free(&ld);
        return cli_fail("--out", err);
    }
    if (sep && outdir_begin(&op, a.plots, err, sizeof err)) {
        outdir_abort(&od);
        heads_report_free(&r);
        loaded_free(&ld);
        return cli_fail("--plots", err);
    }
    rc = write_csvs(&r, &ld, od.tmp);
    path_join(csv, sizeof csv, od.tmp, "heads.csv");
    const char *label = a.model.model_dir ? a.model.model_dir : "the built-in random model";
    /* without a chart the CSVs are still written; the status says the chart is missing */
    const int chart = rc ? 0 : draw(&a, csv, sep ? op.tmp : od.tmp, gnuplot_quotable(label) ? label : "--model");
    rc = cli_outdir_end(&od, rc, 0);
    if (sep) cli_outdir_end(&op, rc || chart, 0);
    if (!rc && !chart && !a.quiet) {
        const Config *c = &ld.model.cfg;
        int bp = 0, bi = 0;
        for (int k = 1; k < c->L * c->NH; k++) {
            if (r.h[k].prev_token > r.h[bp].prev_token) bp = k;
            if (r.h[k].induction > r.h[bi].induction) bi = k;
        }
        printf("previous-token head: layer %d head %d (%.2f); induction head: layer %d head %d (%.2f); "
               "loss on the repeat %.2f bits/byte (first copy %.2f)\n", bp / c->NH, bp % c->NH,
               r.h[bp].prev_token, bi / c->NH, bi % c->NH, r.h[bi].induction, r.second_bits,
               r.first_bits);
        printf("wrote %s/heads.csv, induction.csv, tokens.csv and %s/heads.png, .svg\n", a.out,
               sep ? a.plots : a.out);
    }
    heads_report_free(&r);
    loaded_free(&ld);
    return rc ? rc : chart;
}
