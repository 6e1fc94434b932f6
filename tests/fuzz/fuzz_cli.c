/* fuzz_cli.c — libFuzzer target: any bytes as a command line (arguments separated by
 * NUL bytes), through the option parser (options.h) with the tables every command
 * shares: the model and prompt options, --kv-dtype/--window/--sink/--max-*, the heatmap
 * options; a table of the kinds only single commands use (train's rates above a bound,
 * an automatic default, a callback, lists, bits, --quiet, --force; their names as
 * train and batch spell them); then each option's value through the parsers of its kind
 * (numbers, lists, type words; a string as a layer or head selection and a --record
 * list), and the first string value with '.' or '/' through the checks of --out/--plots
 * paths (no side effects: stat, realpath, opendir). The first MAX_ARGS arguments are
 * read: one parser per value and one path per input keep the pace at tens of thousands
 * of inputs a second.
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

/* Arguments past MAX_ARGS are not read: each run stays quick (CI runs with -max_len=4096). */
#define MAX_ARGS 32
#define MAX_SIZE 4096

/* The option kinds the shared tables lack. */
typedef struct {
    double lr, share;
    int steps, period_max, quiet, force, lens[8], nlens, bos, set;
    unsigned bits;
    const char *out;
} Kinds;

/* --bos as train takes it: a byte, or none. */
static int parse_bos(const Option *o, const char *v, void *base) {
    Kinds *k = base;
    long long b;
    (void)o;
    if (strcmp(v, "none") == 0) return k->bos = -1, 0;
    if (opts_whole(v, -1, 255, &b)) return 2;
    k->bos = (int)b;
    return 0;
}

static const Option KINDS[] = {
    OPT_GROUP("kinds"),
    {.kind = OPT_KIND_DOUBLE, .name = "--lr", .arg = "LR", .field = OPT_FIELD(Kinds, lr, double),
     .lo = 0, .hi = 1e30, .flags = OPTF_ABOVE_LO, .help = "above its bound"},
    OPT_DOUBLE("--repeat-share", "F", Kinds, share, 0, 1, "a share"),
    OPT_INT("--steps", "S", Kinds, steps, 1, 10000000, "steps"),
    OPT_INT_AUTO("--period-max", "P", Kinds, period_max, 1, 2048, "--ctx/2", "automatic"),
    OPT_INTS("--lengths", "LIST", Kinds, lens, nlens, 1, 4096, "a list"),
    {.kind = OPT_KIND_INTS, .name = "--layers-shown", .arg = "LIST|none",
     .field = offsetof(Kinds, lens), .field2 = OPT_FIELD(Kinds, nlens, int), .cap = 8, .lo = 0,
     .hi = 63, .flags = OPTF_NONE, .help = "a list or none"},
    OPT_BIT("--raw", Kinds, bits, 1, "a bit"),
    OPT_BIT("--charts", Kinds, bits, 2, "another bit"),
    OPT_SET("--no-svg", Kinds, set, 4, "a set"),
    {.kind = OPT_KIND_CALLBACK, .name = "--bos", .arg = "B|none", .callback = parse_bos,
     .dflt = "255", .help = "a callback"},
    OPT_STRING("--out", "DIR", Kinds, out, "a path"),
    {.kind = OPT_KIND_STRING, .name = "--checkpoint", .arg = "FILE", .field = OPT_FIELD(Kinds, out, char *),
     .dflt = "DIR.ckpt", .flags = OPTF_HIDDEN, .help = "hidden"},
    OPT_TEXT("a line of help"),
    OPT_QUIET(Kinds, quiet),
    OPT_FORCE(Kinds, force),
    OPT_END,
};

typedef struct {
    ModelArgs model;
    BudgetOpts budget;
    HeatmapOpts heat;
    Kinds kinds;
} Args;

static const Option OPTIONS[] = {
    OPT_INCLUDE(Args, model, MODEL_OPTIONS),
    OPT_INCLUDE(Args, budget, BUDGET_OPTIONS),
    OPT_INCLUDE(Args, heat, HEATMAP_OPTIONS),
    OPT_INCLUDE(Args, kinds, KINDS),
    OPT_END,
};
static const Command CMD = {"fuzz", "[options]", "", OPTIONS, NULL};

/* The options that take a value, by name: a hash table filled once from OPTIONS, so that
 * each value goes only through the parsers of its option's kind (trying every parser on
 * every argument cost more than the option parser itself). */
enum { SLOTS = 256 };
static const Option *slot[SLOTS];
static char cwd[4096]; /* the folder the fuzzer runs in: it does not change */

static unsigned name_hash(const char *s) {
    unsigned h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void index_options(const Option *t) {
    for (; t->kind != OPT_KIND_END; t++) {
        if (t->kind == OPT_KIND_INCLUDE) index_options(t->sub);
        else if (t->kind > OPT_KIND_INCLUDE && t->arg) {
            unsigned h = name_hash(t->name);
            while (slot[h % SLOTS] && strcmp(slot[h % SLOTS]->name, t->name) != 0) h++;
            if (!slot[h % SLOTS]) slot[h % SLOTS] = t; /* the first of a name wins, as in find */
        }
    }
}

/* The option called name that takes a value, or NULL. */
static const Option *lookup(const char *name) {
    if (name[0] != '-' || name[1] != '-' || strlen(name) > 32) return NULL;
    for (unsigned h = name_hash(name);; h++) {
        const Option *o = slot[h % SLOTS];
        if (!o || strcmp(o->name, name) == 0) return o;
    }
}

/* A path given to a folder option must not pass the output-folder checks while it is the
 * current folder or one above it (no side effects: stat, realpath, opendir). */
static void check_path(const char *v) {
    OutDir o;
    char err[8400];
    if (outdir_check(&o, v, "run", "--out", OUTDIR_FORCE | OUTDIR_PARENTS, err, sizeof err) == 0 &&
        cwd[0]) {
        size_t k = strlen(o.real);
        if (strcmp(o.real, "/") == 0 || (strncmp(o.real, cwd, k) == 0 && (cwd[k] == '\0' || cwd[k] == '/')))
            abort(); /* the current folder, or one above it, passed the check */
    }
}

/* Value v of option o through the parsers of o's kind, each result in its range;
 * *paths: how many more may go through the file-system checks. */
static void check_value(const Option *o, const char *v, int *paths) {
    long long x;
    double d;
    switch (o->kind) {
    case OPT_KIND_INT:
        if (opts_whole(v, (long long)o->lo, (long long)o->hi, &x) == 0 && (x < o->lo || x > o->hi))
            abort();
        break;
    case OPT_KIND_U64:
    case OPT_KIND_DOUBLE:
        if (opts_number(v, &d) == 0 && (d != d || d - d != 0)) abort(); /* NaN or ±inf passed */
        if (opts_whole(v, -3, 3, &x) == 0 && (x < -3 || x > 3)) abort();
        break;
    case OPT_KIND_INTS: {
        int ids[64], n = 0;
        const int cap = o->cap < 64 ? (int)o->cap : 64;
        if (opts_int_list(o->name, v, (long long)o->lo, (long long)o->hi, ids, cap, &n) == 0) {
            if (n < 1 || n > cap) abort();
            for (int i = 0; i < n; i++)
                if (ids[i] < o->lo || ids[i] > o->hi) abort();
        }
        break;
    }
    case OPT_KIND_CHOICE: {
        Dtype dt;
        if (dtype_parse(v, &dt) == 0 && (dt < 0 || dt >= DT_COUNT)) abort();
        break;
    }
    default: { /* strings and callbacks: a selection, a --record list, a folder */
        Selection s;
        unsigned what;
        if (select_parse(&s, v, 16) == 0)
            for (int i = 0; i < 16; i++)
                if (s.on[i] != 0 && s.on[i] != 1) abort();
        if (record_parse(v, &what) == 0 && (what & ~((unsigned)REC_TIMING * 2 - 1))) abort();
        /* only a value with '.' or '/' can name the current folder or one above it (a bare
         * name lies inside it), and the file system costs more than all the parsing */
        if (o->kind == OPT_KIND_STRING && *paths > 0 && strpbrk(v, "./")) {
            --*paths;
            check_path(v);
        }
    }
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    /* the parser prints one line per refused option, --help its help: keep those out of
     * the log (the fuzzer and the sanitizers write to file descriptor 2, not stdio) */
    FILE *null = fopen("/dev/null", "w");
    if (null) stderr = stdout = null;
    index_options(OPTIONS);
    if (!getcwd(cwd, sizeof cwd)) cwd[0] = '\0';
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > MAX_SIZE) return 0;
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
    memset(&a.kinds, 0, sizeof a.kinds);
    a.kinds.lr = 1e-3, a.kinds.steps = 1, a.kinds.bos = 255;
    int rc = opts_parse(&CMD, argc, argv, &a);
    if (rc != 0 && rc != 2 && rc != OPTS_HELP) abort();
    int paths = 1;
    for (int i = 0; i + 1 < argc; i++) {
        const Option *o = lookup(argv[i]);
        if (o) check_value(o, argv[++i], &paths);
    }
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
        const Kinds *k = &a.kinds;
        if (!(k->lr > 0 && k->lr <= 1e30) || !(k->share >= 0 && k->share <= 1) || k->steps < 1 ||
            k->period_max < 0 || k->period_max > 2048 || k->nlens < 0 || k->nlens > 8 ||
            k->bos < -1 || k->bos > 255 || k->bits > 3 || (k->set != 0 && k->set != 4))
            abort();
        for (int i = 0; i < k->nlens; i++)
            if (k->lens[i] < 0 || k->lens[i] > 4096) abort();
    }
    free(buf);
    return 0;
}
