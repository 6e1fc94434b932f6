/* fuzz_cli.c — libFuzzer target: any bytes as a command line (arguments separated by
 * NUL bytes), through the option parsers every command shares: the model and prompt
 * options, --kv-dtype/--window/--sink/--max-*, the heatmap options, and the values
 * they take (numbers, lists, layer and head selections, --record lists), then the
 * checks of --out/--plots paths (no side effects: stat, realpath, opendir).
 * Every argument must be consumed or refused with exit code 2 — never a crash, a
 * hang, a value out of its range or an output path that passes its checks while it
 * is the current folder or one above it. Run with `make fuzz` (tests/fuzz/fuzz.mk). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_budget.h"
#include "cli_heatmap.h"
#include "kvcache.h"
#include "outdir.h"
#include "record_csv.h"
#include "select.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* the parsers print one line per refused option: keep those out of the log (the
     * fuzzer and the sanitizers write to file descriptor 2, not through stderr) */
    FILE *null = fopen("/dev/null", "w");
    if (null) stderr = null;
    return 0;
}

#define MAX_ARGS 32

/* The value after an option, checked by the parser it belongs to. */
static void check_value(const char *opt, const char *v) {
    Selection s;
    unsigned what;
    KVDtype dt;
    int *ids = NULL, n = 0;
    long x;
    if (select_parse(&s, v, 16) == 0)
        for (int i = 0; i < 16; i++)
            if (s.on[i] != 0 && s.on[i] != 1) abort();
    if (record_parse(v, &what) == 0 && (what & ~((unsigned)REC_TIMING * 2 - 1))) abort();
    if (kvcache_dtype_parse(v, &dt) == 0 && (dt < 0 || dt >= KVDT_COUNT)) abort();
    if (cli_int_list(opt, v, -5, 70000, &ids, &n) == 0) {
        if (n < 1) abort();
        for (int i = 0; i < n; i++)
            if (ids[i] < -5 || ids[i] > 70000) abort();
        free(ids);
    }
    if (cli_long(opt, v, -3, 3, &x) == 0 && (x < -3 || x > 3)) abort();
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
    ModelArgs ma;
    BudgetOpts bo;
    HeatmapOpts ho;
    model_args_default(&ma);
    budget_opts_default(&bo);
    heatmap_opts_default(&ho);
    for (int i = 0; i < argc; i++) {
        int at = i, rc = model_args_parse(&ma, argc, argv, &i);
        if (rc == 0) rc = budget_opts_parse(&bo, argc, argv, &i);
        if (rc == 0) rc = heatmap_opts_parse(&ho, argc, argv, &i);
        if (rc != 0 && rc != 1 && rc != 2) abort();
        if (i < at || i > at + 1 || i >= argc) abort(); /* an option takes at most its one value */
        if (rc == 0 && i + 1 < argc) check_value(argv[i], argv[i + 1]);
    }
    const Config *c = &ma.cfg;
    if (c->L < 1 || c->L > MODEL_MAX_LAYERS || c->NH < 1 || c->NH > MODEL_MAX_HEADS || c->C < 1 ||
        c->C > MODEL_MAX_DIM || c->N < 1 || c->N > MODEL_MAX_CTX || c->V < 1 || c->V > MODEL_MAX_VOCAB)
        abort();
    if (ho.cell < 0 || ho.cell > HEATMAP_MAX_CELL || bo.window < 0 || bo.sink < 0 || bo.max_kv_mb < 0.0)
        abort();
    int rc = budget_opts_check(&bo, 4, GEN_CACHE);
    if (rc == 0 && bo.window && (bo.sink >= bo.window || bo.window < 4)) abort();
    free(buf);
    return 0;
}
