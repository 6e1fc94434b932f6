/* cli_html.h — `kvscope run --html FILE`: the option, the checks made with the other
 * output checks before the model loads, and the observer's life cycle, so cmd_run.c
 * needs only a few calls. CLI layer: these functions print the error line themselves
 * (exit codes of cli.h). */
#ifndef KVSCOPE_CLI_HTML_H
#define KVSCOPE_CLI_HTML_H

#include "cli.h"
#include "cli_budget.h"
#include "generate.h"
#include "html_out.h"
#include "options.h"
#include "outdir.h"

typedef struct {
    const char *path;       /* --html FILE; NULL: no page */
    const char *view;       /* --html-view VIEW: the view the page opens on; NULL: none */
    char view_norm[256];    /*   as the page reads it: "key=value&key=value" */
    int in_out;             /* FILE lies directly in --out: it goes into the new folder, */
    char name[4096];        /*   under this name */
    OutFile file;           /* else FILE itself, replaced whole (a page kvscope wrote) */
    char model_name[4200];
    int begun;
    HtmlOut ho;
} HtmlOpts;

/* The option of an HtmlOpts: --html FILE. */
extern const Option HTML_OPTIONS[];

void html_opts_default(HtmlOpts *o);
/* Before any work, with the other output checks: FILE inside --out (however spelled)
 * must be directly in it; inside --plots (may be NULL) it is refused, since --plots is
 * replaced after the page is written; elsewhere its folder must exist and be writable,
 * and an existing FILE must be a page kvscope wrote (or flags has OUTDIR_FORCE).
 * 0, or 2 after the error line. */
int html_opts_check(HtmlOpts *o, const OutDir *out, const OutDir *plots, unsigned flags);
/* Once the model is loaded: refuse a page over HTML_MAX_BYTES for ld->T + steps tokens
 * and the layers and heads shown (--heads-shown, default all), then subscribe the
 * observer. 0, or 2 after the error line. */
int html_opts_begin(HtmlOpts *o, const ModelArgs *ma, const Loaded *ld, GenMode mode,
                    const BudgetOpts *budget, int steps, const Selection *layers,
                    const char *heads_shown, Hooks *hooks);
/* After the run, before --out (out, begun) is committed: when status is 0, write the
 * page (into out's new folder, or FILE replaced whole) and say so unless quiet; free
 * the observer. Returns status, or 2 after the error line of a failed write. */
int html_opts_finish(HtmlOpts *o, int status, const OutDir *out, const Generator *g,
                     const Tokenizer *tok, int quiet);

#endif
