/* cli_html.h — `kvscope run --html FILE`: the option, the checks made before the run
 * starts, and the observer's life cycle, so cmd_run.c needs only a few calls.
 * CLI layer: these functions print the error line themselves (exit codes of cli.h). */
#ifndef KVSCOPE_CLI_HTML_H
#define KVSCOPE_CLI_HTML_H

#include "cli.h"
#include "cli_budget.h"
#include "generate.h"
#include "html_out.h"

typedef struct {
    const char *path;       /* --html FILE; NULL: no page */
    char write_path[4400];  /* where it is written: FILE, or inside the temporary --out */
    char model_name[4200];
    int begun;
    HtmlOut ho;
} HtmlOpts;

/* The option of an HtmlOpts: --html FILE. */
extern const Option HTML_OPTIONS[];

void html_opts_default(HtmlOpts *o);
/* When --html was given, before the run: check FILE (its folder exists and is
 * writable; an existing FILE is a page kvscope wrote; inside --out only directly in
 * it, then written into out_tmp to be committed with the folder) and the page's size
 * (at most HTML_MAX_BYTES for ld->T + steps tokens and the layers and heads shown:
 * --heads-shown, default all), then subscribe the observer. 0, or 1/2 after the
 * error line. */
int html_opts_begin(HtmlOpts *o, const ModelArgs *ma, const Loaded *ld, GenMode mode,
                    const BudgetOpts *budget, int steps, const Selection *layers,
                    const char *heads_shown, const char *out, const char *out_tmp, Hooks *hooks);
/* After the run, before --out is committed: when status is 0, write the page (a
 * temporary file renamed over FILE, so FILE is never half written) and say so unless
 * quiet; free the observer. Returns status, or 2 after the error line of a failed
 * write. */
int html_opts_finish(HtmlOpts *o, int status, const Generator *g, const Tokenizer *tok,
                     int quiet);

#endif
