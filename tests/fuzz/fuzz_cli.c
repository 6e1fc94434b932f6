/* fuzz_cli.c — libFuzzer target: any bytes as a command line (arguments separated by
 * NUL bytes), through the option parser (options.h) with the tables every command
 * shares: the model and prompt options, --kv-dtype/--window/--sink/--max-*, the heatmap
 * options; then the values they take (numbers, lists, layer and head selections,
 * --record lists) through their own parsers, and the checks of --out/--plots paths (no
 * side effects: stat, realpath, opendir).
 * Every command line must be parsed or refused with exit code 2 — never a crash, a
 * hang, a value out of its range or an output path that passes its checks while it is
 * the current folder or one above it. Run with `make fuzz` (tests/fuzz/fuzz.mk). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_budget.h"
#include "cli_heatmap.h"
#include "kvcache.h"
#include "options.h"
#include "outdir.h"
#include "record_csv.h"
#include "select.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* the parser prints one line per refused option, --help its help: keep those out of
     * the log (the fuzzer and the sanitizers write to file descriptor 2, not stdio) */
    FILE *null = fopen("/dev/null", "w");
    if (null) stderr = stdout = null;
    return 0;
}

#define MAX_ARGS 32

typedef struct {
    ModelArgs model;
    BudgetOpts budget;
    HeatmapOpts heat;
} Args;

static const Option OPTIONS[] = {
    OPT_INCLUDE(Args, model, MODEL_OPTIONS),
    OPT_INCLUDE(Args, budget, BUDGET_OPTIONS),
    OPT_INCLUDE(Args, heat, HEATMAP_OPTIONS),
    OPT_END,
};
static const Command CMD = {"fuzz", "[options]", "", OPTIONS, NULL};

/* A value, through every parser it might meet. */
static void check_value(const char *v) {
    Selection s;
    unsigned what;
    Dtype dt;
    int ids[64], n = 0;
    long long x;
    double d;
    if (select_parse(&s, v, 16) == 0)
        for (int i = 0; i < 16; i++)
            if (s.on[i] != 0 && s.on[i] != 1) abort();
    if (record_parse(v, &what) == 0 && (what & ~((unsigned)REC_TIMING * 2 - 1))) abort();
    if (dtype_parse(v, &dt) == 0 && (dt < 0 || dt >= DT_COUNT)) abort();
    if (opts_int_list("--x", v, -5, 70000, ids, 64, &n) == 0) {
        if (n < 1 || n > 64) abort();
        for (int i = 0; i < n; i++)
            if (ids[i] < -5 || ids[i] > 70000) abort();
    }
    if (opts_whole(v, -3, 3, &x) == 0 && (x < -3 || x > 3)) abort();
    if (opts_number(v, &d) == 0 && (d != d || d - d != 0)) abort(); /* NaN or ±inf passed */
    OutDir o;
    char err[8400], cwd[4096];
    if (outdir_check(&o, v, "run", "--out", OUTDIR_FORCE | OUTDIR_PARENTS, err, sizeof err) == 0 &&
        getcwd(cwd, sizeof cwd)) {
        size_t k = strlen(o.real);
        if (strcmp(o.real, "/") == 0 || (strncmp(o.real, cwd, k) == 0 && (cwd[k] == '\0' || cwd[k] == '/')))
            abort(); /* the current folder, or one above it, passed the check */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    for (size_t i = 0; i <= size && argc < MAX_ARGS;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    Args a;
    model_args_default(&a.model);
    budget_opts_default(&a.budget);
    heatmap_opts_default(&a.heat);
    int rc = opts_parse(&CMD, argc, argv, &a);
    if (rc != 0 && rc != 2 && rc != OPTS_HELP) abort();
    for (int i = 0; i < argc; i++) check_value(argv[i]);
    if (rc == 0) { /* everything was taken: every field is in its range */
        const Config *c = &a.model.cfg;
        if (c->L < 1 || c->L > MODEL_MAX_LAYERS || c->NH < 1 || c->NH > MODEL_MAX_HEADS ||
            c->C < 1 || c->C > MODEL_MAX_DIM || c->N < 1 || c->N > MODEL_MAX_CTX || c->V < 1 ||
            c->V > MODEL_MAX_VOCAB)
            abort();
        const BudgetOpts *b = &a.budget;
        if (a.heat.cell < 0 || a.heat.cell > HEATMAP_MAX_CELL || b->window < 0 || b->sink < 0 ||
            b->max_kv_mb < 0.0 || b->max_kv_mb > 1e9 || b->max_tokens < 0)
            abort();
        if (budget_opts_check(b, GEN_CACHE) == 0 && b->window && b->sink >= b->window)
            abort();
    }
    free(buf);
    return 0;
}
