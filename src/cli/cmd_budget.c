/* cmd_budget.c — `kvscope budget`: what a smaller or shorter KV cache costs in accuracy
 * (budget.h does the work). parse → check --out → load → every storage type, then the
 * window → the files → the lines. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "budget.h"
#include "cli_budget.h"
#include "cli.h"
#include "commands.h"
#include "outdir.h"

typedef struct {
    ModelArgs model;
    BudgetOpts budget; /* --window, --sink */
    int steps;
    const char *out;
    int quiet, force;
} BudgetArgs;

static const Option BUDGET_CMD_OPTIONS[] = {
    OPT_GROUP("budget options"),
    OPT_INT("--steps", "N", BudgetArgs, steps, 0, 65536, "decode steps after the prefill"),
    OPT_INCLUDE(BudgetArgs, budget, WINDOW_OPTIONS),
    OPT_STRING("--out", "DIR", BudgetArgs, out,
               "output folder, replaced as a whole: dtypes.csv, dtypes.md, summary.csv, and "
               "window.csv with --window"),
    OPT_QUIET(BudgetArgs, quiet),
    OPT_FORCE(BudgetArgs, force),
    OPT_INCLUDE(BudgetArgs, model, MODEL_OPTIONS),
    OPT_END,
};

static const Command BUDGET = {
    "budget", "[options]",
    "Compare the KV cache stored as fp32, fp16, bf16, int8 and q8_0 (and, with --window,\n"
    "a sliding window) against the full fp32 cache: bytes per token, max and mean\n"
    "|delta logit|, and whether the greedy tokens stay the same.\n",
    BUDGET_CMD_OPTIONS, NULL,
};

/* Every type against fp32, a line each; then the window. 0; GEN_NONFINITE; -1. */
static int run(const BudgetArgs *a, Loaded *ld, BudgetFiles *f) {
    int rc = 0;
    if (!a->quiet) printf("%-5s %9s %9s %12s %12s %s\n", "dtype", "B/value", "B/token", "max|dlogit|",
                          "mean|dlogit|", "greedy");
    /* the five types lesson 6 compares; q4_0 is measured by `kvscope frontier` */
    for (int dt = 0; dt <= DT_Q8_0 && rc == 0; dt++) {
        DtypeResult r;
        if ((rc = budget_run_dtype(&ld->model, ld->prompt, ld->T, a->steps, (Dtype)dt, &r))) break;
        budget_write_dtype(f, &r);
        const LogitDrift *d = &r.drift;
        if (!a->quiet)
            printf("%-5s %9.4g %9zu %12.3g %12.3g %s (%d/%d)\n", dtype_name(r.dtype),
                   r.bytes_per_value, r.bytes_per_token, d->max_abs, d->sum_abs / (double)d->n,
                   d->agree == d->steps ? "yes" : "no", d->agree, d->steps);
    }
    if (rc || !a->budget.window) return rc;
    WindowResult w;
    if ((rc = budget_run_window(&ld->model, ld->prompt, ld->T, a->steps, a->budget.window,
                                a->budget.sink, f->window, &w)))
        return rc;
    budget_write_window(f, &w);
    if (!a->quiet)
        printf("window %d (sink %d): KV %zu bytes vs %zu full; max |dlogit| %.3g; "
               "greedy %d/%d; evicted %d positions holding %.3g of the attention on average\n",
               w.W, w.S, w.window_bytes, w.full_bytes, w.drift.max_abs, w.drift.agree, w.drift.steps,
               w.evicted, w.evicted ? w.evicted_sum / w.evicted : 0.0);
    return 0;
}

int cmd_budget(int argc, char **argv) {
    BudgetArgs a = {.steps = 32, .out = "kvscope_budget"};
    model_args_default(&a.model);
    budget_opts_default(&a.budget);
    int rc = opts_parse(&BUDGET, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    OutDir od;
    Loaded ld;
    if ((rc = cli_outdir_check(&od, a.out, "budget", "--out", a.force ? OUTDIR_FORCE : 0)) ||
        (rc = cli_outdir_spares(&od, "--model", a.model.model_dir)) ||
        (rc = model_args_load(&a.model, a.steps, &ld)))
        return rc;
    if ((rc = budget_opts_check(&a.budget, GEN_CACHE)) == 0 && (rc = cli_outdir_begin(&od)) == 0) {
        BudgetFiles f;
        char err[8400];
        int status = budget_files_open(&f, &od, a.steps, ld.T, a.budget.window, err, sizeof err);
        if (status) cli_error(err);
        else if ((status = run(&a, &ld, &f)) == GEN_NONFINITE)
            fprintf(stderr, "kvscope: non-finite logits in the budget run (the model's numbers "
                            "overflow float32)\n");
        else if (status)
            fprintf(stderr, "kvscope: --out: budget run failed (out of memory): %s\n", a.out);
        rc = cli_outdir_end(&od, status ? 2 : 0, budget_files_close(&f) != 0);
        if (rc == 0 && !a.quiet) printf("wrote %s/\n", a.out);
    }
    loaded_free(&ld);
    return rc;
}
