/* cmd_run.c — `kvscope run`: prefill, N greedy decode steps, recorders attached. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_budget.h"
#include "cli.h"
#include "commands.h"
#include "generate.h"
#include "cli_heatmap.h"
#include "cli_html.h"
#include "numfmt.h"
#include "outdir.h"
#include "record_csv.h"
#include "sysinfo.h"

typedef struct {
    ModelArgs model;
    int steps;
    GenMode mode;
    const char *out;
    unsigned record;
    int record_given;  /* 0: the default, 1: a --record list, 2: --record all */
    const char *layers_shown, *heads_shown;
    int quiet, force;
    BudgetOpts budget; /* --kv-dtype, --window/--sink, --max-kv-mb/--max-tokens */
    HeatmapOpts heat;  /* --heatmaps, --plots, --cell, --grid, --no-gif */
    HtmlOpts html;     /* --html FILE */
} RunArgs;

static int set_record(const Option *o, const char *v, void *base) {
    RunArgs *a = base;
    if (record_parse(v, &a->record)) {
        char what[160];
        snprintf(what, sizeof what, "unknown %s list (%s, all or none)", o->name, RECORD_KINDS);
        return cli_fail(what, v);
    }
    a->record_given = strcmp(v, "all") == 0 ? 2 : 1;
    return 0;
}

static const Option RUN_OPTIONS[] = {
    OPT_GROUP("run options"),
    OPT_INT("--steps", "N", RunArgs, steps, 0, 65536, "decode steps after the prefill"),
    OPT_SET("--no-cache", RunArgs, mode, GEN_RECOMPUTE,
            "recompute the whole sequence at every step (the baseline)"),
    OPT_SET("--article-bug", RunArgs, mode, GEN_ARTICLE_BUG,
            "keep only the newest step's K/V, as one source article's layer does in eval mode "
            "(shows what forgetting history does)"),
    OPT_STRING("--out", "DIR", RunArgs, out, "output folder, replaced as a whole"),
    {.kind = OPT_KIND_CALLBACK, .name = "--record", .arg = "LIST", .callback = set_record,
     .dflt = "all but logits, with attention.csv for the shown layers and heads only: a first "
             "run's files",
     .help = "files to write: any of shapes, attention, kv, flops, tokens, timing and logits, "
             "separated by commas (shapes,kv), or all (every file, attention of every layer "
             "and head) or none"},
    OPT_BIT("--logits", RunArgs, record, REC_LOGITS, "also write logits.csv"),
    {.kind = OPT_KIND_STRING, .name = "--layers-shown", .arg = "LIST",
     .field = OPT_FIELD(RunArgs, layers_shown, char *),
     .dflt = "all when L <= 2 or --record all, else the first and the last",
     .help = "layers in attention.csv and --html, e.g. 0,2-3 or all"},
    {.kind = OPT_KIND_STRING, .name = "--heads-shown", .arg = "LIST",
     .field = OPT_FIELD(RunArgs, heads_shown, char *),
     .dflt = "in attention.csv head 0, as the heatmaps, without --record and all with a "
             "--record list; in --html all",
     .help = "heads in attention.csv and --html"},
    OPT_QUIET(RunArgs, quiet),
    OPT_FORCE(RunArgs, force),
    OPT_INCLUDE(RunArgs, budget, BUDGET_OPTIONS),
    OPT_INCLUDE(RunArgs, heat, HEATMAP_OPTIONS),
    OPT_INCLUDE(RunArgs, html, HTML_OPTIONS),
    OPT_INCLUDE(RunArgs, model, MODEL_OPTIONS),
    OPT_END,
};

static const Command RUN = {
    "run", "[options]",
    "Prefill the prompt, then decode --steps tokens greedily, printing the Q/K/V shapes\n"
    "and the KV-cache size of every step and writing CSV files into --out.\n",
    RUN_OPTIONS, NULL,
};

static int parse_run(int argc, char **argv, RunArgs *a) {
    memset(a, 0, sizeof *a);
    model_args_default(&a->model);
    a->steps = 8;
    a->mode = GEN_CACHE;
    a->out = "kvscope_out";
    a->record = REC_DEFAULT;
    budget_opts_default(&a->budget);
    heatmap_opts_default(&a->heat);
    html_opts_default(&a->html);
    return opts_parse(&RUN, argc, argv, a);
}

/* One line per step in the spirit of the articles:
 *   prefill  T=4  q=[1,4,768] k=[1,4,768] v=[1,4,768]  kv 24.0 KiB */
static void print_step(const Generator *g, Phase ph, int step, int rows) {
    char kv[32];
    const int C = g->m->cfg.C, T = g->cache.len;
    human_bytes((double)kvcache_bytes_used(&g->cache), kv, sizeof kv);
    if (ph == PHASE_PREFILL) printf("prefill  T=%-3d", g->len);
    else printf("decode %d T=%-3d", step, g->len);
    printf("  q=[1,%d,%d] k=[1,%d,%d] v=[1,%d,%d]  kv %s\n", rows, C, T, C, T, C, kv);
}

int cmd_run(int argc, char **argv) {
    RunArgs a;
    int rc = parse_run(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    /* every output is checked before the model is even loaded */
    OutDir od;
    const unsigned fl = a.force ? OUTDIR_FORCE : 0;
    if ((rc = cli_outdir_check(&od, a.out, "run", "--out", fl)) ||
        (rc = cli_outdir_spares(&od, "--model", a.model.model_dir)) ||
        (rc = heatmap_opts_check(&a.heat, &od, fl, a.model.model_dir)))
        return rc;

    Loaded ld;
    if ((rc = model_args_load(&a.model, a.steps, &ld))) return rc;
    const Config *cfg = &ld.model.cfg;
    if ((rc = budget_opts_check(&a.budget, ld.T, a.mode))) {
        loaded_free(&ld);
        return rc;
    }

    Selection layers, heads;
    const char *ls = a.layers_shown;
    char deflayers[32];
    if (!ls) {
        if (cfg->L <= 2 || a.record_given == 2) ls = "all";
        else snprintf(deflayers, sizeof deflayers, "0,%d", cfg->L - 1), ls = deflayers;
    }
    if (select_parse(&layers, ls, cfg->L)) {
        loaded_free(&ld);
        return cli_fail("bad --layers-shown (layers are 0..L-1)", ls);
    }
    /* the default recording keeps attention.csv to what the heatmaps show: head 0 */
    const char *hs = a.heads_shown ? a.heads_shown : a.record_given ? "all" : "0";
    if (select_parse(&heads, hs, cfg->NH)) {
        loaded_free(&ld);
        return cli_fail("bad --heads-shown (heads are 0..NH-1)", hs);
    }

    if ((rc = cli_outdir_begin(&od))) {
        loaded_free(&ld);
        return rc;
    }

    Generator g;
    CsvRecorder rec;
    Hooks hooks;
    hooks_init(&hooks);
    int status = 2;
    if (generator_init(&g, &ld.model, a.mode) || budget_opts_apply(&a.budget, &g)) {
        fprintf(stderr, "kvscope: out of memory: generator\n");
        outdir_abort(&od);
        loaded_free(&ld);
        return 2;
    }
    if (csv_recorder_open(&rec, od.tmp, a.record, &layers, &heads) ||
        csv_recorder_attach(&rec, &hooks)) {
        fprintf(stderr, "kvscope: --out: cannot write CSV files (%s): %s\n", write_error_text(errno),
                a.out);
        goto done;
    }
    if ((rc = heatmap_opts_begin(&a.heat, cfg, ld.T + a.steps, &layers, a.heads_shown, a.out,
                                 od.tmp, &hooks))) {
        status = rc;
        goto done;
    }
    if ((rc = html_opts_begin(&a.html, &a.model, &ld, a.mode, &a.budget, a.steps, &layers,
                              a.heads_shown, a.out, od.tmp, &hooks))) {
        status = rc;
        goto done;
    }

    char text[64];
    for (int i = 0; i < ld.T; i++) {
        csv_recorder_token(&rec, 0, i, ld.prompt[i], tokenizer_token_text(ld.tok, ld.prompt[i], text, sizeof text));
        heatmap_opts_token(&a.heat, ld.tok, i, ld.prompt[i]);
    }
    double t0 = now_seconds();
    if (budget_cap_reached(&g, 0, ld.T)) { /* the cap stops a run cleanly: keep what we have */
        status = 0;
        goto done;
    }
    if ((rc = generator_prefill(&g, ld.prompt, ld.T, &hooks))) {
        if (!heatmap_opts_failed(&a.heat)) cli_step_failed(rc, "the prefill", g.logits, cfg->V);
        goto done;
    }
    csv_recorder_timing(&rec, PHASE_PREFILL, 0, now_seconds() - t0, rss_bytes());
    if (!a.quiet) print_step(&g, PHASE_PREFILL, 0, ld.T);

    for (int s = 1; s <= a.steps; s++) {
        if (budget_cap_reached(&g, s, ld.T)) break; /* checked before the step allocates */
        int tok = generator_argmax(&g), rows = generator_next_rows(&g);
        csv_recorder_token(&rec, s, g.len, tok, tokenizer_token_text(ld.tok, tok, text, sizeof text));
        heatmap_opts_token(&a.heat, ld.tok, g.len, tok);
        t0 = now_seconds();
        if ((rc = generator_decode(&g, tok, s, &hooks))) {
            char what[32];
            snprintf(what, sizeof what, "decode step %d", s);
            if (!heatmap_opts_failed(&a.heat)) cli_step_failed(rc, what, g.logits, cfg->V);
            goto done;
        }
        csv_recorder_timing(&rec, PHASE_DECODE, s, now_seconds() - t0, rss_bytes());
        if (!a.quiet) print_step(&g, PHASE_DECODE, s, rows);
    }
    status = 0;

done:
    status = heatmap_opts_finish(&a.heat, status);
    status = html_opts_finish(&a.html, status, &g, ld.tok, a.quiet);
    status = cli_outdir_end(&od, status, csv_recorder_close(&rec) != 0);
    status = heatmap_opts_commit(&a.heat, status);
    if (status == 0 && !a.quiet) printf("wrote %s/\n", a.out);
    if (status == 0 && !a.quiet && a.heat.plots) printf("wrote %s/\n", a.heat.plots);
    generator_free(&g);
    loaded_free(&ld);
    return status;
}
