/* cmd_run.c — `kvscope run`: prefill, N greedy decode steps, recorders attached. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

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
#include "toklabel.h"

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
    "and the KV-cache size of every step and writing CSV files into --out; then the text:\n"
    "the prompt and what the model wrote after it.\n",
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

/* A run from its checks to its commit: the folder, what it shows, the engine and the
 * observers that record it. */
typedef struct {
    OutDir od;
    Selection layers, heads; /* in attention.csv (the figures and the page choose heads too) */
    Generator g;
    CsvRecorder rec;
    int rec_open;
    Hooks hooks;
} Run;

/* 1. Every output, before the model is even loaded. 0, or 2. */
static int check_outputs(RunArgs *a, Run *r) {
    const unsigned fl = a->force ? OUTDIR_FORCE : 0;
    int rc;
    if ((rc = cli_outdir_check(&r->od, a->out, "run", "--out", fl)) ||
        (rc = cli_outdir_spares(&r->od, "--model", a->model.model_dir)) ||
        (rc = heatmap_opts_check(&a->heat, &r->od, fl, a->model.model_dir)))
        return rc;
    if ((rc = cli_outfile_spares_model(a->html.path, "--html", a->model.model_dir))) return rc;
    return html_opts_check(&a->html, &r->od, heatmap_opts_plots(&a->heat), fl);
}

/* 2. The layers and heads shown, now that the model's are known. 0, or 2. */
static int choose_shown(const RunArgs *a, const Config *cfg, Run *r) {
    const char *ls = a->layers_shown;
    char deflayers[32];
    if (!ls) {
        if (cfg->L <= 2 || a->record_given == 2) ls = "all";
        else snprintf(deflayers, sizeof deflayers, "0,%d", cfg->L - 1), ls = deflayers;
    }
    if (select_parse(&r->layers, ls, cfg->L))
        return cli_fail("bad --layers-shown (layers are 0..L-1)", ls);
    /* the default recording keeps attention.csv to what the heatmaps show: head 0 */
    const char *hs = a->heads_shown ? a->heads_shown : a->record_given ? "all" : "0";
    if (select_parse(&r->heads, hs, cfg->NH))
        return cli_fail("bad --heads-shown (heads are 0..NH-1)", hs);
    return 0;
}

/* The free bytes of the file system that holds path or its nearest existing folder
 * above; -1 when it cannot be told. */
static double free_bytes(const char *path) {
    char p[4096];
    struct statvfs fs;
    snprintf(p, sizeof p, "%s", path);
    for (;;) {
        if (statvfs(p, &fs) == 0) return (double)fs.f_bavail * (double)fs.f_frsize;
        char *s = strrchr(p, '/');
        if (!s || s == p) return -1;
        *s = '\0';
    }
}

static int count_selected(const Selection *s, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += select_has(s, i);
    return k;
}

/* 3a. attention.csv and logits.csv have a size known before the run: at least
 * ATTN_ROW_MIN bytes a row of attention ("decode,1,0,0,5,3,0,0,0\n": every number one
 * character) and LOGIT_ROW_MIN of logits, the rows counted from the prompt, the steps
 * and the layers and heads shown. A run whose files cannot fit the free space of
 * --out's disk is refused before it starts (a window, a cap or the article's cache
 * keep fewer rows: then nothing is refused). 0, or 2 after the error line. */
enum { ATTN_ROW_MIN = 24, LOGIT_ROW_MIN = 12 };
static int check_disk(const RunArgs *a, const Loaded *ld, const Run *r) {
    const Config *cfg = &ld->model.cfg;
    const BudgetOpts *b = &a->budget;
    if (b->window || b->max_kv_mb > 0 || b->max_tokens) return 0;
    const double T = ld->T, S = a->mode == GEN_ARTICLE_BUG ? 0 : a->steps;
    double rows = 0, need = 0;
    if (a->record & REC_ATTENTION) {
        rows = (T * (T + 1) / 2 + S * T + S * (S + 1) / 2) * count_selected(&r->layers, cfg->L) *
               count_selected(&r->heads, cfg->NH);
        need += rows * ATTN_ROW_MIN;
    }
    if (a->record & REC_LOGITS) need += (double)cfg->V * (a->steps + 1) * LOGIT_ROW_MIN;
    const double room = free_bytes(r->od.real);
    if (room < 0 || need <= room) return 0;
    char n[32], f[32], d[48];
    fprintf(stderr, "kvscope: --out: the run's files need at least %s (attention.csv: %s rows of "
                    "at least %d bytes), more than the %s free on its disk; show fewer layers or "
                    "heads (--layers-shown, --heads-shown), record less (--record), or choose "
                    "another disk: %s\n", human_bytes(need, n, sizeof n),
            group_digits((uint64_t)rows, d, sizeof d), ATTN_ROW_MIN, human_bytes(room, f, sizeof f),
            a->out);
    return 2;
}

/* 3. The folder, the engine and every observer subscribed. 0, or 2. */
static int begin(RunArgs *a, Loaded *ld, Run *r) {
    int rc;
    hooks_init(&r->hooks);
    if ((rc = cli_outdir_begin(&r->od))) return rc;
    if (generator_init(&r->g, &ld->model, a->mode) || budget_opts_apply(&a->budget, &r->g))
        return cli_fail("out of memory", "generator");
    if (csv_recorder_open(&r->rec, r->od.tmp, a->record, &r->layers, &r->heads) ||
        csv_recorder_attach(&r->rec, &r->hooks)) {
        fprintf(stderr, "kvscope: --out: cannot write CSV files (%s): %s\n", write_error_text(errno),
                a->out);
        return 2;
    }
    r->rec_open = 1;
    const Config *cfg = &ld->model.cfg;
    if ((rc = heatmap_opts_begin(&a->heat, cfg, ld->T + a->steps, &r->layers, a->heads_shown,
                                 a->out, r->od.tmp, &r->hooks)))
        return rc;
    return html_opts_begin(&a->html, &a->model, ld, a->mode, &a->budget, a->steps, &r->layers,
                           a->heads_shown, &r->hooks);
}

/* The token at pos, for the CSV and the figures' labels. */
static void note_token(RunArgs *a, const Loaded *ld, Run *r, int step, int pos, int id) {
    char text[64];
    csv_recorder_token(&r->rec, step, pos, id, tokenizer_token_text(ld->tok, id, text, sizeof text));
    heatmap_opts_token(&a->heat, ld->tok, pos, id);
}

/* A step that failed (rc != 0) or whose rows could not be written: 0, or 2 after the
 * error line — a full disk first, as a write that failed stops the step. */
static int step_status(const RunArgs *a, Run *r, int rc, const char *what) {
    const int e = csv_recorder_error(&r->rec);
    if (e) {
        fprintf(stderr, "kvscope: --out: cannot write (%s): %s\n", write_error_text(e), a->out);
        return 2;
    }
    if (!rc) return 0;
    return heatmap_opts_failed(&a->heat) ? 2 : cli_step_failed(rc, what, r->g.logits, r->g.m->cfg.V);
}

/* 4. The prefill, then the decode steps, a line each; a memory cap ends the run early
 * and cleanly; a failed write ends it at once. 0, or 2 after the error line. */
static int run_steps(RunArgs *a, Loaded *ld, Run *r) {
    Generator *g = &r->g;
    for (int i = 0; i < ld->T; i++) note_token(a, ld, r, 0, i, ld->prompt[i]);
    if (budget_cap_reached(g, 0, ld->T)) return 0; /* keep what we have */
    double t0 = now_seconds();
    int rc = generator_prefill(g, ld->prompt, ld->T, &r->hooks);
    if ((rc = step_status(a, r, rc, "the prefill"))) return rc;
    csv_recorder_timing(&r->rec, PHASE_PREFILL, 0, now_seconds() - t0, rss_bytes());
    if (!a->quiet) print_step(g, PHASE_PREFILL, 0, ld->T);
    for (int s = 1; s <= a->steps; s++) {
        if (budget_cap_reached(g, s, ld->T)) break; /* checked before the step allocates */
        int tok = generator_argmax(g), rows = generator_next_rows(g);
        note_token(a, ld, r, s, g->len, tok);
        t0 = now_seconds();
        char what[32];
        snprintf(what, sizeof what, "decode step %d", s);
        if ((rc = step_status(a, r, generator_decode(g, tok, s, &r->hooks), what))) return rc;
        csv_recorder_timing(&r->rec, PHASE_DECODE, s, now_seconds() - t0, rss_bytes());
        if (!a->quiet) print_step(g, PHASE_DECODE, s, rows);
    }
    return 0;
}

/* 5. The observers' files, then the folders: the page and --out, then --plots. */
static int finish(RunArgs *a, Loaded *ld, Run *r, int status) {
    status = heatmap_opts_finish(&a->heat, status);
    status = html_opts_finish(&a->html, status, &r->od, &r->g, ld->tok, a->quiet);
    int closed = r->rec_open ? csv_recorder_close(&r->rec) : 0;
    status = cli_outdir_end(&r->od, status, closed != 0);
    status = heatmap_opts_commit(&a->heat, status);
    if (status == 0 && !a->quiet) printf("wrote %s/\n", a->out);
    if (status == 0 && !a->quiet && a->heat.plots) printf("wrote %s/\n", a->heat.plots);
    return status;
}

/* With byte tokens, ids past 255 have no byte (a model folder without its BPE files,
 * read by --prompt-ids): the line is the tokens' labels, "<id 300>" for those. */
static int print_labels(const char *label, const Tokenizer *tok, const int *ids, int n) {
    char buf[64];
    printf("%-13s ", label);
    for (int i = 0; i < n; i++) fputs(tokenizer_token_text(tok, ids[i], buf, sizeof buf), stdout);
    putchar('\n');
    return 0;
}

/* One labelled line of the text: ids decoded (the start token as ⟨s⟩), bytes shown as
 * the token labels show them. 0, or 2 after the error line. */
static int print_text(const char *label, const Tokenizer *tok, const int *ids, int n) {
    char *bytes = NULL, *shown = NULL;
    size_t len = 0;
    for (int i = 0; tokenizer_is_bytes(tok) && i < n; i++)
        if (ids[i] > 255) return print_labels(label, tok, ids, n);
    if (n > 0 && tokenizer_decode(tok, ids, n, &bytes, &len) != 0) return cli_fail("out of memory", label);
    if (n > 0 && !(shown = toklabel_text((const unsigned char *)bytes, len))) {
        free(bytes);
        return cli_fail("out of memory", label);
    }
    printf("%-13s %s\n", label, shown ? shown : "");
    free(bytes);
    free(shown);
    return 0;
}

/* 6. What the model wrote: the prompt, then the continuation. 0, or 2. */
static int print_written(const Loaded *ld, const Generator *g) {
    const int T = g->len < ld->T ? g->len : ld->T;
    int rc = print_text("prompt:", ld->tok, g->tokens, T);
    return rc ? rc : print_text("continuation:", ld->tok, g->tokens + T, g->len - T);
}

int cmd_run(int argc, char **argv) {
    RunArgs a;
    Run r;
    Loaded ld;
    memset(&r, 0, sizeof r);
    int rc = parse_run(argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    if ((rc = check_outputs(&a, &r)) || (rc = model_args_load(&a.model, a.steps, &ld))) return rc;
    if ((rc = budget_opts_check(&a.budget, a.mode)) == 0 &&
        (rc = choose_shown(&a, &ld.model.cfg, &r)) == 0) {
        if ((rc = check_disk(&a, &ld, &r)) == 0 && (rc = begin(&a, &ld, &r)) == 0)
            rc = run_steps(&a, &ld, &r);
        /* the text before the swap: a stdout that fails keeps the old folder */
        if (rc == 0 && !a.quiet) rc = print_written(&ld, &r.g);
        rc = finish(&a, &ld, &r, rc);
    }
    generator_free(&r.g);
    loaded_free(&ld);
    return rc;
}
