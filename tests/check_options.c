/* check_options.c — the option parser and the help writer (src/cli/options.h): every
 * kind of entry, the number syntax every numeric option shares (ranges, overflow, nan
 * and inf, "08", "-0", junk), the error line, the help printed from the table, and the
 * tables every command includes (the model, the budget, the heatmaps). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_budget.h"
#include "cli_heatmap.h"
#include "options.h"
#include "testutil.h"

typedef struct {
    int x;
} Sub;

typedef struct {
    int i, flag, mode, n, calls;
    double d, pos;
    uint64_t u;
    const char *s, *noted;
    unsigned bits;
    int list[4];
    Dtype dt;
    Sub sub;
} Args;

static int parse_dt(const char *s, void *f) { return dtype_parse(s, f); }
static const char *show_dt(const void *f) { return dtype_name(*(const Dtype *)f); }

static int callback(const Option *o, const char *v, void *base) {
    Args *a = base;
    a->calls++;
    return strcmp(v, "bad") == 0 ? cli_fail("a bad value for", o->name) : 0;
}

static const Option SUB_OPTIONS[] = {
    OPT_GROUP("included"),
    OPT_INT("--x", "X", Sub, x, -5, 5, "an int of the included struct"),
    OPT_END,
};

static const Option OPTIONS[] = {
    OPT_GROUP("test options"),
    OPT_INT("--int", "N", Args, i, 0, 100, "a whole number"),
    OPT_DOUBLE("--dbl", "X", Args, d, -1, 1e9, "a number"),
    {.kind = OPT_KIND_DOUBLE, .name = "--pos", .arg = "X", .field = OPT_FIELD(Args, pos, double),
     .lo = 0, .hi = 10, .flags = OPTF_ABOVE_LO, .dflt = "none", .help = "a number above 0"},
    OPT_U64("--u", "S", Args, u, "any whole number >= 0"),
    OPT_STRING("--s", "TEXT", Args, s, "a string"),
    OPT_FLAG("--flag", Args, flag, "a flag"),
    OPT_SET("--two", Args, mode, 2, "mode two"),
    OPT_BIT("--bit", Args, bits, 4, "bit 4"),
    OPT_INTS("--list", "LIST", Args, list, n, 1, 9, "at most four numbers 1..9"),
    OPT_CHOICE("--dt", "T", Args, dt, parse_dt, show_dt, "fp32, fp16, bf16, int8, q8_0", "a type"),
    {.kind = OPT_KIND_INT, .name = "--noted", .arg = "N", .field = OPT_FIELD(Args, i, int), .lo = 0,
     .hi = 100, .help = "the int again, noted", .note = offsetof(Args, noted), .has_note = 1},
    OPT_CALLBACK("--cb", "V", callback, "a value for a callback"),
    {.kind = OPT_KIND_CALLBACK, .name = "--hidden", .arg = "V", .callback = callback,
     .flags = OPTF_HIDDEN},
    OPT_TEXT("a line of text of its own, long enough to be wrapped by the help writer at "
             "eighty columns"),
    OPT_INCLUDE(Args, sub, SUB_OPTIONS),
    OPT_END,
};

static const Command CMD = {"test", "[options]", "A command for the tests.\n", OPTIONS, "Notes.\n"};

static char errf[4096];

static void setup(void) {
    char dir[64];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(errf, sizeof errf, "%s/stderr", dir);
    ck_assert_ptr_nonnull(freopen(errf, "w", stderr)); /* each test runs in a process of its own */
}

static Args fresh(void) {
    Args a;
    memset(&a, 0, sizeof a);
    a.i = 7;
    a.dt = DT_FP32;
    a.s = "default text";
    return a;
}

/* Parse the arguments (NULL-terminated) into a; the status. */
static int parse(Args *a, const char *const *args) {
    int n = 0;
    while (args[n]) n++;
    fflush(stderr);
    ck_assert_int_eq(ftruncate(fileno(stderr), 0), 0);
    rewind(stderr);
    return opts_parse(&CMD, n, (char **)args, a);
}

/* What the parser printed on stderr: exactly one line, "kvscope: " + want. */
static void said(const char *want) {
    fflush(stderr);
    char *e = read_file(errf, NULL);
    ck_assert_ptr_nonnull(e);
    char line[512];
    snprintf(line, sizeof line, "kvscope: %s\n", want);
    ck_assert_str_eq(e, line);
    free(e);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

START_TEST(test_whole_numbers) {
    static const struct { const char *v; int ok, value; } cases[] = {
        {"0", 1, 0},     {"100", 1, 100}, {"08", 1, 8},   {"-0", 1, 0},    {"007", 1, 7},
        {"101", 0, 0},   {"-1", 0, 0},    {"1e3", 0, 0},  {"5x", 0, 0},    {" 5", 0, 0},
        {"+5", 0, 0},    {"", 0, 0},      {"0x10", 0, 0}, {"5.0", 0, 0},   {"-", 0, 0},
        {"99999999999999999999", 0, 0}, {"-99999999999999999999", 0, 0}, {"nan", 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        Args a = fresh();
        int rc = parse(&a, ARGS("--int", cases[k].v));
        ck_assert_msg(rc == (cases[k].ok ? 0 : 2), "--int '%s': %d", cases[k].v, rc);
        if (cases[k].ok) ck_assert_int_eq(a.i, cases[k].value);
        else ck_assert_int_eq(a.i, 7); /* left as it was */
    }
    Args a = fresh();
    parse(&a, ARGS("--int", "101"));
    said("--int must be in 0..100: 101");
    parse(&a, ARGS("--int", "1e3"));
    said("--int expects a whole number: 1e3");
    parse(&a, ARGS("--int", "99999999999999999999"));
    said("--int must be in 0..100: 99999999999999999999");
    /* the shared parser at the limits of its type */
    long long x;
    ck_assert_int_eq(opts_whole("9223372036854775807", INT64_MIN, INT64_MAX, &x), 0);
    ck_assert(x == INT64_MAX);
    ck_assert_int_eq(opts_whole("-9223372036854775808", INT64_MIN, INT64_MAX, &x), 0);
    ck_assert(x == INT64_MIN);
    ck_assert_int_eq(opts_whole("9223372036854775808", INT64_MIN, INT64_MAX, &x), -2);
    ck_assert_int_eq(opts_whole("12a", 0, 100, &x), -1);
}
END_TEST

START_TEST(test_numbers) {
    static const struct { const char *v; int ok; double value; } cases[] = {
        {"0.5", 1, 0.5},  {"-0", 1, 0.0},   {"1e9", 1, 1e9},  {".5", 1, 0.5},  {"5.", 1, 5.0},
        {"2.5E+3", 1, 2500}, {"1e-999", 1, 0.0}, {"-1", 1, -1},
        {"1e99", 0, 0},   {"1e999", 0, 0},  {"-2", 0, 0},     {"nan", 0, 0},   {"NaN", 0, 0},
        {"inf", 0, 0},    {"-inf", 0, 0},   {"infinity", 0, 0}, {"1e", 0, 0},  {"e5", 0, 0},
        {".", 0, 0},      {"0x1p3", 0, 0},  {"1,5", 0, 0},    {"+1", 0, 0},    {"1 ", 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        Args a = fresh();
        a.d = 42.0;
        int rc = parse(&a, ARGS("--dbl", cases[k].v));
        ck_assert_msg(rc == (cases[k].ok ? 0 : 2), "--dbl '%s': %d", cases[k].v, rc);
        if (cases[k].ok) {
            ck_assert_double_eq(a.d, cases[k].value);
            ck_assert(!signbit(a.d) || a.d != 0.0); /* "-0" is 0, not -0 */
        } else {
            ck_assert_double_eq(a.d, 42.0);
        }
    }
    Args a = fresh();
    parse(&a, ARGS("--dbl", "nan"));
    said("--dbl expects a number: nan");
    parse(&a, ARGS("--dbl", "1e99"));
    said("--dbl must be in -1..1e+09: 1e99");
    parse(&a, ARGS("--dbl", "1e999"));
    said("--dbl must be in -1..1e+09: 1e999");
    /* above a bound: 0 and -0 are not above 0 */
    ck_assert_int_eq(parse(&a, ARGS("--pos", "0")), 2);
    said("--pos must be > 0: 0");
    ck_assert_int_eq(parse(&a, ARGS("--pos", "-0")), 2);
    ck_assert_int_eq(parse(&a, ARGS("--pos", "11")), 2);
    said("--pos must be > 0 and at most 10: 11");
    ck_assert_int_eq(parse(&a, ARGS("--pos", "1e-300")), 0);
    ck_assert_double_eq(a.pos, 1e-300);
}
END_TEST

START_TEST(test_u64) {
    Args a = fresh();
    ck_assert_int_eq(parse(&a, ARGS("--u", "18446744073709551615")), 0);
    ck_assert(a.u == UINT64_MAX);
    ck_assert_int_eq(parse(&a, ARGS("--u", "08")), 0);
    ck_assert(a.u == 8);
    ck_assert_int_eq(parse(&a, ARGS("--u", "18446744073709551616")), 2);
    said("--u must be in 0..18446744073709551615: 18446744073709551616");
    ck_assert_int_eq(parse(&a, ARGS("--u", "-1")), 2);
    said("--u expects a whole number >= 0: -1");
    ck_assert_int_eq(parse(&a, ARGS("--u", "1.5")), 2);
    ck_assert(a.u == 8);
}
END_TEST

START_TEST(test_lists) {
    Args a = fresh();
    ck_assert_int_eq(parse(&a, ARGS("--list", "1,2,9")), 0);
    ck_assert_int_eq(a.n, 3);
    ck_assert_int_eq(a.list[0] * 100 + a.list[1] * 10 + a.list[2], 129);
    ck_assert_int_eq(parse(&a, ARGS("--list", "4")), 0);
    ck_assert_int_eq(a.n, 1);
    static const char *const bad[] = {"1,,2", "1,2,", ",1", "", "1,2,3,4,5", "0", "10", "1,x",
                                      "none", "1;2", "1, 2"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ck_assert_msg(parse(&a, ARGS("--list", bad[k])) == 2, "--list '%s' passed", bad[k]);
        ck_assert_int_eq(a.n, 1); /* the list given before stays */
        ck_assert_int_eq(a.list[0], 4);
    }
    parse(&a, ARGS("--list", "1,2,3,4,5"));
    said("--list takes at most 4 numbers: 1,2,3,4,5");
    parse(&a, ARGS("--list", "3,10"));
    said("--list must be in 1..9: 10");
    parse(&a, ARGS("--list", "1,,2"));
    said("--list expects whole numbers separated by commas: 1,,2");
}
END_TEST

START_TEST(test_kinds) {
    Args a = fresh();
    ck_assert_int_eq(parse(&a, ARGS("--flag", "--two", "--bit", "--s", "x y", "--dt", "q8_0",
                                    "--x", "-5", "--cb", "ok", "--hidden", "ok")),
                     0);
    ck_assert_int_eq(a.flag, 1);
    ck_assert_int_eq(a.mode, 2);
    ck_assert_uint_eq(a.bits, 4);
    ck_assert_str_eq(a.s, "x y");
    ck_assert_int_eq(a.dt, DT_Q8_0);
    ck_assert_int_eq(a.sub.x, -5); /* an included table writes into its own struct */
    ck_assert_int_eq(a.calls, 2);
    ck_assert_ptr_null(a.noted);
    ck_assert_int_eq(parse(&a, ARGS("--noted", "9")), 0);
    ck_assert_str_eq(a.noted, "--noted"); /* which option gave the value */
    ck_assert_int_eq(a.i, 9);
    /* the later of two wins */
    ck_assert_int_eq(parse(&a, ARGS("--int", "1", "--int", "2")), 0);
    ck_assert_int_eq(a.i, 2);
    ck_assert_int_eq(parse(&a, ARGS("--dt", "FP16")), 2);
    said("unknown --dt (fp32, fp16, bf16, int8, q8_0): FP16");
    ck_assert_int_eq(parse(&a, ARGS("--cb", "bad")), 2);
    said("a bad value for: --cb");
    ck_assert_int_eq(parse(&a, ARGS("--x", "6")), 2);
    said("--x must be in -5..5: 6");
}
END_TEST

START_TEST(test_refused) {
    Args a = fresh();
    ck_assert_int_eq(parse(&a, ARGS("--bogus")), 2);
    said("unknown option: --bogus");
    ck_assert_int_eq(parse(&a, ARGS("--flag", "--int")), 2);
    said("missing value for option: --int");
    ck_assert_int_eq(parse(&a, ARGS("int")), 2);
    said("unknown option: int");
    ck_assert_int_eq(parse(&a, ARGS("--int", "--flag")), 2); /* an option's value is its value */
    said("--int expects a whole number: --flag");
    ck_assert_int_eq(parse(&a, ARGS("--flag=1")), 2);
    /* nothing after the first error is taken */
    a = fresh();
    ck_assert_int_eq(parse(&a, ARGS("--int", "x", "--flag")), 2);
    ck_assert_int_eq(a.flag, 0);
}
END_TEST

/* The help comes from the table: every option, its range and the default the struct
 * held, the groups, the text lines, the notes and the exit rule; no line past 80. */
START_TEST(test_help_from_table) {
    char out[4200];
    snprintf(out, sizeof out, "%s.help", errf);
    ck_assert_ptr_nonnull(freopen(out, "w", stdout));
    Args a = fresh();
    a.d = 0.25;
    ck_assert_int_eq(parse(&a, ARGS("--flag", "--help", "--bogus")), OPTS_HELP);
    fflush(stdout);
    char *h = read_file(out, NULL);
    ck_assert_ptr_nonnull(h);
    static const char *const want[] = {
        "usage: kvscope test [options]\nA command for the tests.\n\ntest options:\n",
        "  --int N              a whole number (0..100, default 7)\n",
        "(-1..1e+09, default 0.25)", "(> 0, at most 10, default: none)",
        "  --s TEXT             a string (default \"default text\")\n",
        "  --flag               a flag\n", "(each 1..9)", "a type (default fp32)",
        "\nincluded:\n  --x X                an int of the included struct (-5..5, default 0)\n",
        "  a line of text of its own", "\nNotes.\n", "exit status: 0 success"};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        ck_assert_msg(strstr(h, want[k]), "no \"%s\" in:\n%s", want[k], h);
    ck_assert_ptr_null(strstr(h, "--hidden"));
    for (const char *p = h; *p;) {
        size_t n = strcspn(p, "\n");
        ck_assert_msg(n <= 80, "a help line of %zu columns: %.*s", n, (int)n, p);
        p += n + (p[n] == '\n');
    }
    free(h);
}
END_TEST

/* The tables the commands share, with the defaults they start from. */
START_TEST(test_model_options) {
    typedef struct {
        ModelArgs m;
    } M;
    static const Option T[] = {OPT_INCLUDE(M, m, MODEL_OPTIONS), OPT_END};
    const Command cmd = {"model", "", "", T, NULL};
    M a;
    model_args_default(&a.m);
    ck_assert_int_eq(opts_parse(&cmd, 0, NULL, &a), 0);
    ck_assert_str_eq(a.m.prompt, "The KV cache");
    ck_assert_int_eq(a.m.cfg.C, config_default().C);
    const char *args[] = {"--layers", "2", "--prompt-ids", "1,2", "--prompt", "hi", "--seed",
                          "18446744073709551615", "--weights", "bf16"};
    ck_assert_int_eq(opts_parse(&cmd, 10, (char **)args, &a), 0);
    ck_assert_int_eq(a.m.cfg.L, 2);
    ck_assert_str_eq(a.m.cfg_option, "--layers"); /* --model refuses a shape given */
    ck_assert_str_eq(a.m.prompt_option, "--prompt"); /* the later of the two wins */
    ck_assert(a.m.seed == UINT64_MAX);
    ck_assert_int_eq(a.m.weights, DT_BF16);
    const char *bad[][2] = {{"--layers", "0"}, {"--heads", "257"}, {"--vocab", "1000001"},
                            {"--ctx", "65537"}, {"--weights", "q8_0"}, {"--seed", "-1"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        ck_assert_msg(opts_parse(&cmd, 2, (char **)bad[k], &a) == 2, "%s %s", bad[k][0], bad[k][1]);
}
END_TEST

START_TEST(test_budget_and_heatmap_options) {
    typedef struct {
        BudgetOpts b;
        HeatmapOpts h;
    } BH;
    static const Option T[] = {OPT_INCLUDE(BH, b, BUDGET_OPTIONS), OPT_INCLUDE(BH, h, HEATMAP_OPTIONS),
                               OPT_END};
    const Command cmd = {"bh", "", "", T, NULL};
    BH *a = calloc(1, sizeof *a); /* HeatmapOpts holds folders: too large for the stack */
    ck_assert_ptr_nonnull(a);
    budget_opts_default(&a->b);
    heatmap_opts_default(&a->h);
    const char *args[] = {"--kv-dtype", "q8_0", "--window", "8", "--sink", "0", "--max-kv-mb",
                          "0.25", "--no-svg", "--cell", "64", "--plots", "p"};
    ck_assert_int_eq(opts_parse(&cmd, 13, (char **)args, a), 0);
    ck_assert_int_eq(a->b.dtype, DT_Q8_0);
    ck_assert_int_eq(a->b.window, 8);
    ck_assert_str_eq(a->b.sink_given, "--sink");
    ck_assert_double_eq(a->b.max_kv_mb, 0.25);
    ck_assert_int_eq(a->h.svg, 0);
    ck_assert_int_eq(a->h.gif, 1);
    ck_assert_int_eq(a->h.cell, 64);
    ck_assert_str_eq(a->h.plots, "p");
    const char *bad[][2] = {{"--max-kv-mb", "0"}, {"--max-kv-mb", "nan"}, {"--cell", "65"},
                            {"--window", "0"}, {"--sink", "-1"}, {"--max-tokens", "65537"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        ck_assert_msg(opts_parse(&cmd, 2, (char **)bad[k], a) == 2, "%s %s", bad[k][0], bad[k][1]);
    free(a);
}
END_TEST

Suite *make_options_suite(void) {
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("parser");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_whole_numbers);
    tcase_add_test(tc, test_numbers);
    tcase_add_test(tc, test_u64);
    tcase_add_test(tc, test_lists);
    tcase_add_test(tc, test_kinds);
    tcase_add_test(tc, test_refused);
    tcase_add_test(tc, test_help_from_table);
    tcase_add_test(tc, test_model_options);
    tcase_add_test(tc, test_budget_and_heatmap_options);
    suite_add_tcase(s, tc);
    return s;
}
