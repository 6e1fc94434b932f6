/* check_compare.c — `kvscope compare`: counted FLOPs against closed forms written
 * out here, cumulative sums against a second code path (a recompute generator run
 * through every step), KV bytes, max |Δlogit|, the prefill/decode table, bad input,
 * Ctrl-C, and the gnuplot scripts on the CSVs it writes. */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "generate.h"
#include "outdir.h"
#include "testutil.h"

/* ---- a small CSV reader: header names → column index ---------------------- */

#define MAXCOL 48
#define MAXROW 64

typedef struct {
    int ncol, nrow;
    char name[MAXCOL][48];
    char cell[MAXROW][MAXCOL][48];
} Csv;

static void split(char *line, char out[][48], int max, int *n) {
    *n = 0;
    for (char *p = line;; p++) {
        size_t len = strcspn(p, ",\n");
        if (*n < max) {
            snprintf(out[*n], 48, "%.*s", (int)len, p);
            (*n)++;
        }
        p += len;
        if (*p != ',') break;
    }
}

static Csv *csv_load(const char *path) {
    char *text = read_file(path, NULL);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    Csv *c = calloc(1, sizeof *c);
    ck_assert_ptr_nonnull(c);
    char *save = NULL, *line = strtok_r(text, "\n", &save);
    char tmp[MAXCOL][48];
    int n;
    split(line, tmp, MAXCOL, &c->ncol);
    for (int i = 0; i < c->ncol; i++) memcpy(c->name[i], tmp[i], sizeof c->name[i]);
    while ((line = strtok_r(NULL, "\n", &save)) && c->nrow < MAXROW) {
        split(line, c->cell[c->nrow], MAXCOL, &n);
        ck_assert_int_eq(n, c->ncol);
        c->nrow++;
    }
    free(text);
    return c;
}

static const char *cell(const Csv *c, int row, const char *col) {
    for (int i = 0; i < c->ncol; i++)
        if (strcmp(c->name[i], col) == 0) return c->cell[row][i];
    ck_abort_msg("no column %s", col);
    return NULL;
}
static uint64_t u64(const Csv *c, int row, const char *col) { return strtoull(cell(c, row, col), NULL, 10); }
static double dbl(const Csv *c, int row, const char *col) { return strtod(cell(c, row, col), NULL); }

/* ---- the closed forms, written out again ----------------------------------- */
/* A forward pass of n new tokens after p cached ones, in the L blocks:
 * q,k,v 6nC², attention c_proj 2nC², MLP 16nC², attention 4C per causal pair. */
static uint64_t pass(uint64_t L, uint64_t C, uint64_t n, uint64_t p) {
    uint64_t pairs = n * p + n * (n + 1) / 2;
    return L * ((6 + 2 + 16) * n * C * C + 4 * C * pairs);
}

/* the tiny model of these tests */
enum { TL = 2, TNH = 2, TC = 16, TN = 64, TV = 32, TP = 4 /* prompt 1,2,3,4 */ };

static void run_tiny(const char *out, const char *lengths, const char *table, const char *decode_at) {
    const char *args[] = {"compare", "--layers", "2", "--heads", "2", "--dim", "16", "--ctx", "64", "--vocab", "32",
                          "--lengths", lengths, "--table-lengths", table, "--decode-at", decode_at,
                          "--repeat", "2", "--out", out, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
}

START_TEST(counted_flops_equal_the_closed_form) {
    char dir[64], out[128], path[256];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/cmp", dir);
    run_tiny(out, "5,8,12,16,32,48,64", "10", "20");
    snprintf(path, sizeof path, "%s/compare.csv", out);
    Csv *c = csv_load(path);
    ck_assert_int_eq(c->nrow, 8); /* 5,8,10,12,16,32,48,64 */

    /* the second code path: a recompute generator through every step, counting */
    Config cfg = tiny_config(TL, TNH, TC, TN, TV);
    Model m;
    Generator g;
    ck_assert_int_eq(model_init_random(&m, &cfg, 1), 0);
    ck_assert_int_eq(generator_init(&g, &m, GEN_RECOMPUTE), 0);
    const int prompt[TP] = {1, 2, 3, 4};
    ck_assert_int_eq(generator_prefill(&g, prompt, TP, NULL), 0);

    for (int r = 0; r < c->nrow; r++) {
        const uint64_t T = u64(c, r, "T");
        const uint64_t step_cache = pass(TL, TC, 1, T - 1), step_rec = pass(TL, TC, T, 0);
        ck_assert_uint_eq(u64(c, r, "flops_cache"), step_cache);
        ck_assert_uint_eq(u64(c, r, "formula_cache"), step_cache);
        ck_assert_uint_eq(u64(c, r, "flops_recompute"), step_rec);
        ck_assert_uint_eq(u64(c, r, "formula_recompute"), step_rec);
        /* the cache's steps add up to one prefill of T tokens */
        ck_assert_uint_eq(u64(c, r, "cum_flops_cache"), pass(TL, TC, T, 0));
        ck_assert_uint_eq(u64(c, r, "cum_formula_cache"), pass(TL, TC, T, 0));
        uint64_t sum = 0;
        for (uint64_t t = TP; t <= T; t++) sum += pass(TL, TC, t, 0);
        ck_assert_uint_eq(u64(c, r, "cum_formula_recompute"), sum);
        while ((uint64_t)g.len < T) ck_assert_int_eq(generator_decode(&g, 5, g.len - TP + 1, NULL), 0);
        ck_assert_uint_eq(flops_layers(&g.total), sum);
        /* the engine's totals hold more than the blocks: lm_head and elementwise */
        ck_assert_uint_gt(u64(c, r, "flops_total_cache"), step_cache + 2ull * TC * TV - 1);
        ck_assert_uint_gt(u64(c, r, "flops_total_recompute"), step_rec + 2ull * TC * TV - 1);

        ck_assert_uint_eq(u64(c, r, "attn_pairs_cache"), T);
        ck_assert_uint_eq(u64(c, r, "attn_pairs_recompute"), T * (T + 1) / 2);
        ck_assert_uint_eq(u64(c, r, "article_attn_cache"), T);
        ck_assert_uint_eq(u64(c, r, "article_attn_recompute"), T * T);
        ck_assert_uint_eq(u64(c, r, "kv_bytes"), 2ull * TL * T * TC * sizeof(float));
        ck_assert_uint_ge(u64(c, r, "kv_reserved_bytes"), u64(c, r, "kv_bytes"));
        ck_assert_double_eq_tol(dbl(c, r, "ratio"), (double)step_rec / (double)step_cache, 1e-6);
        /* the cache gives the logits of recomputing, bit for bit: not one differs */
        ck_assert_msg(dbl(c, r, "max_abs_dlogit") == 0.0, "T %llu: max |dlogit| %.9g",
                      (unsigned long long)T, dbl(c, r, "max_abs_dlogit"));
        ck_assert_int_eq((int)u64(c, r, "prompt_tokens"), TP);
        /* by operation: the parts add up to the totals, and each is its own closed form */
        static const char *const op[6] = {"qkv", "attn", "attn_proj", "mlp", "lm_head", "elementwise"};
        for (int w = 0; w < 2; w++) {
            const char *way = w ? "recompute" : "cache";
            const uint64_t n = w ? T : 1, p = w ? 0 : T - 1;
            char name[64];
            uint64_t v[6], sum_layers = 0, sum = 0;
            for (int k = 0; k < 6; k++) {
                snprintf(name, sizeof name, "flops_%s_%s", op[k], way);
                v[k] = u64(c, r, name);
                sum += v[k];
                if (k < 4) sum_layers += v[k];
            }
            ck_assert_uint_eq(sum_layers, w ? step_rec : step_cache);
            snprintf(name, sizeof name, "flops_total_%s", way);
            ck_assert_uint_eq(sum, u64(c, r, name));
            ck_assert_uint_eq(v[0], 6ull * n * TC * TC * TL);
            ck_assert_uint_eq(v[1], 4ull * TC * (n * p + n * (n + 1) / 2) * TL);
            ck_assert_uint_eq(v[4], 2ull * TC * TV); /* the last position's logits only */
            /* the weight bytes read: every matrix and vector once, the new tokens' rows */
            const uint64_t wb = 4ull * ((uint64_t)TL * (12 * TC * TC + 13 * TC) + 2 * TC + (uint64_t)TV * TC +
                                        2ull * TC * n);
            snprintf(name, sizeof name, "weight_bytes_%s", way);
            ck_assert_uint_eq(u64(c, r, name), wb);
            snprintf(name, sizeof name, "flops_per_byte_%s", way);
            const double fpb = (double)sum / (double)(wb + u64(c, r, "kv_bytes"));
            ck_assert_double_eq_tol(dbl(c, r, name), fpb, 1e-8 * fpb); /* written with 9 digits */
        }
    }
    generator_free(&g);
    model_free(&m);

    /* cache FLOPs grow linearly in T: equal slope between any two rows;
     * recompute FLOPs super-linearly: FLOPs per token keep growing */
    for (int r = 2; r < c->nrow; r++) {
        uint64_t T0 = u64(c, 0, "T"), T1 = u64(c, r - 1, "T"), T2 = u64(c, r, "T");
        uint64_t f0 = u64(c, 0, "flops_cache"), f1 = u64(c, r - 1, "flops_cache"), f2 = u64(c, r, "flops_cache");
        ck_assert_uint_eq((f2 - f1) * (T1 - T0), (f1 - f0) * (T2 - T1));
        ck_assert_uint_gt(u64(c, r, "flops_recompute") * T1, u64(c, r - 1, "flops_recompute") * T2);
        ck_assert_uint_gt(u64(c, r, "cum_flops_cache"), u64(c, r - 1, "cum_flops_cache"));
    }
    free(c);

    /* timing.csv: one row per length, min ≤ median ≤ max */
    snprintf(path, sizeof path, "%s/timing.csv", out);
    Csv *t = csv_load(path);
    ck_assert_int_eq(t->nrow, 8);
    for (int r = 0; r < t->nrow; r++) {
        ck_assert_double_gt(dbl(t, r, "cache_min_s"), 0);
        ck_assert_double_le(dbl(t, r, "cache_min_s"), dbl(t, r, "cache_median_s"));
        ck_assert_double_le(dbl(t, r, "cache_median_s"), dbl(t, r, "cache_max_s"));
        ck_assert_double_le(dbl(t, r, "recompute_min_s"), dbl(t, r, "recompute_median_s"));
        ck_assert_double_le(dbl(t, r, "recompute_median_s"), dbl(t, r, "recompute_max_s"));
        ck_assert_int_eq((int)u64(t, r, "cache_runs"), 2);
    }
    free(t);
    ck_assert_int_eq(remove_tree(dir), 0);
}
END_TEST

START_TEST(prefill_decode_table_from_hooks) {
    char dir[64], out[128], path[256];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/cmp", dir);
    run_tiny(out, "8", "none", "20");
    snprintf(path, sizeof path, "%s/prefill_decode.csv", out);
    Csv *c = csv_load(path);
    ck_assert_int_eq(c->nrow, 6);
    static const char *const q[] = {"tokens", "q_rows", "k_rows", "attn_scores", "flops", "kv_bytes"};
    for (int r = 0; r < 6; r++) ck_assert_str_eq(cell(c, r, "quantity"), q[r]);
    const uint64_t want_pre[] = {TP, TP, TP, TNH * TP * (TP + 1) / 2, 0, 2ull * TL * TP * TC * 4};
    const uint64_t want_dec[] = {20, 1, 20, TNH * 20, 0, 2ull * TL * 20 * TC * 4};
    for (int r = 0; r < 6; r++) {
        if (r == 4) continue;
        ck_assert_uint_eq(u64(c, r, "prefill"), want_pre[r]);
        ck_assert_uint_eq(u64(c, r, "decode"), want_dec[r]);
    }
    /* whole-model FLOPs: at least the blocks and the lm_head of one position */
    ck_assert_uint_ge(u64(c, 4, "prefill"), pass(TL, TC, TP, 0) + 2ull * TC * TV);
    ck_assert_uint_ge(u64(c, 4, "decode"), pass(TL, TC, 1, 19) + 2ull * TC * TV);
    free(c);
    snprintf(path, sizeof path, "%s/prefill_decode.md", out);
    char *md = read_file(path, NULL);
    ck_assert_ptr_nonnull(md);
    ck_assert_ptr_nonnull(strstr(md, "| Q shape | (4, 16) | (1, 16) |"));
    ck_assert_ptr_nonnull(strstr(md, "| K shape (cached keys) | (4, 16) | (20, 16) |"));
    ck_assert_ptr_nonnull(strstr(md, "| articles' attention count | O(16) | O(20) |"));
    free(md);
    ck_assert_int_eq(remove_tree(dir), 0);
}
END_TEST

/* 129920 → "129,920" */
static const char *grouped(uint64_t v, char buf[32]) {
    char raw[32];
    int n = snprintf(raw, sizeof raw, "%llu", (unsigned long long)v), k = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0) buf[k++] = ',';
        buf[k++] = raw[i];
    }
    buf[k] = '\0';
    return buf;
}

START_TEST(deterministic_files_repeat_byte_for_byte) {
    char dir[64], a[128], b[128], pa[256], pb[256];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    run_tiny(a, "8,16,32", "10", "12");
    run_tiny(b, "8,16,32", "10", "12");
    static const char *const same[] = {"compare.csv", "prefill_decode.csv", "flops.md", "prefill_decode.md", "values.csv"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        snprintf(pa, sizeof pa, "%s/%s", a, same[i]);
        snprintf(pb, sizeof pb, "%s/%s", b, same[i]);
        ck_assert_msg(files_equal(pa, pb), "%s differs between two runs", same[i]);
    }
    snprintf(pa, sizeof pa, "%s/flops.md", a);
    char *md = read_file(pa, NULL);
    ck_assert_ptr_nonnull(md);
    /* the articles' table row: T = 10, T² = 100, and the counted FLOPs */
    char want[160], g1[32], g2[32];
    snprintf(want, sizeof want, "| 10 | 100 | 10 | %s | %s |", grouped(pass(TL, TC, 10, 0), g1),
             grouped(pass(TL, TC, 1, 9), g2));
    ck_assert_msg(strstr(md, want) != NULL, "flops.md lacks %s:\n%s", want, md);
    free(md);
    ck_assert_int_eq(remove_tree(dir), 0);
}
END_TEST

START_TEST(bad_input_exits_2_and_writes_nothing) {
    static const char *const bad[][6] = {
        {"--lengths", "4", NULL},       /* not past the 4-token prompt */
        {"--lengths", "65", NULL},      /* past the context 64 */
        {"--lengths", "8,x", NULL},
        {"--repeat", "0", NULL},
        {"--decode-at", "100", NULL},
        {"--table-lengths", "", NULL},
        {"--bogus", NULL},
        {"--dim", "15", NULL},          /* not divisible by 2 heads */
    };
    char dir[64], out[128], err[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/cmp", dir);
    snprintf(err, sizeof err, "%s/err.txt", dir);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *args[24] = {"compare", "--layers", "2", "--heads", "2", "--dim", "16", "--ctx", "64",
                                "--vocab", "32", "--lengths", "8", "--out", out};
        int n = 15;
        for (int k = 0; bad[i][k]; k++) args[n++] = bad[i][k];
        args[n] = NULL;
        ck_assert_msg(run_kvscope(args, NULL, err) == 2, "case %zu", i);
        char *e = read_file(err, NULL);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(strncmp(e, "kvscope: ", 9) == 0 && strchr(e, '\n') == e + strlen(e) - 1,
                      "case %zu: not one kvscope: line: %s", i, e);
        free(e);
        struct stat sb;
        ck_assert_msg(stat(out, &sb) != 0, "case %zu: --out written", i);
    }
    remove(err);
    ck_assert_int_eq(count_entries(dir), 0);
    rmdir(dir);
}
END_TEST

/* Start kvscope with argv (NULL-terminated) and PATH=path (NULL: unchanged);
 * stdout to out. Returns the pid. */
static pid_t spawn(const char *const *args, const char *path, const char *out, const char *err) {
    const char *argv[40];
    int n = 0;
    argv[n++] = KVSCOPE_BIN;
    for (; args[n - 1]; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o >= 0) dup2(o, 1);
        if (e >= 0) dup2(e, 2);
        if (path) setenv("PATH", path, 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

START_TEST(ctrl_c_keeps_the_rows_measured) {
    char dir[64], out[128], so[128], se[128], path[256];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/cmp", dir);
    snprintf(so, sizeof so, "%s/stdout", dir);
    snprintf(se, sizeof se, "%s/stderr", dir);
    /* the default model: the long lengths take seconds, the first one milliseconds */
    const char *args[] = {"compare", "--lengths", "8,16,1000,1024", "--table-lengths", "none", "--decode-at", "8",
                          "--repeat", "1", "--out", out, NULL};
    pid_t pid = spawn(args, NULL, so, se);
    /* wait for the first row on stdout, then press Ctrl-C */
    int seen = 0;
    for (int i = 0; i < 3000 && !seen; i++) {
        char *o = read_file(so, NULL);
        seen = o && strstr(o, "T=16") != NULL;
        free(o);
        if (!seen) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    ck_assert_msg(seen, "no row printed");
    ck_assert_int_eq(kill(pid, SIGINT), 0);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 130);
    snprintf(path, sizeof path, "%s/compare.csv", out);
    Csv *c = csv_load(path);
    /* rows 8 and 16 were done; at most the one running when Ctrl-C came was added */
    ck_assert_int_ge(c->nrow, 2);
    ck_assert_int_le(c->nrow, 3);
    ck_assert_str_eq(cell(c, 0, "T"), "8");
    ck_assert_str_eq(cell(c, 1, "T"), "16");
    free(c);
    char *e = read_file(se, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_nonnull(strstr(e, "interrupted"));
    free(e);
    ck_assert_int_eq(remove_tree(dir), 0);
}
END_TEST

/* ---- the gnuplot scripts --------------------------------------------------- */

static int gnuplot(const char *vars, const char *script, const char *err) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "gnuplot -e \"%s\" %s 2> %s", vars, script, err);
    fflush(NULL);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void assert_chart(const char *prefix) {
    char p[300];
    struct stat sb;
    static const char *const ext[] = {".png", ".svg"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s%s", prefix, ext[i]);
        ck_assert_msg(stat(p, &sb) == 0 && sb.st_size > 1000, "%s missing or nearly empty", p);
    }
    snprintf(p, sizeof p, "%s.png", prefix);
    char *png = read_file(p, NULL);
    ck_assert_ptr_nonnull(png);
    ck_assert_int_eq(memcmp(png, "\x89PNG", 4), 0);
    free(png);
}

START_TEST(every_script_draws_png_and_svg) {
    char dir[64], cmp[128], kv[128], run[128], vars[1024], err[160], pre[200];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(cmp, sizeof cmp, "%s/cmp", dir);
    snprintf(kv, sizeof kv, "%s/kv", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(err, sizeof err, "%s/gnuplot.err", dir);
    run_tiny(cmp, "8,16,32", "10", "12");
    const char *ka[] = {"kvmem", "--out", kv, NULL};
    ck_assert_int_eq(run_kvscope(ka, NULL, NULL), 0);
    const char *ra[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--ctx", "64", "--steps", "20",
                        "--record", "kv,timing", "--out", run, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(ra, NULL, NULL), 0);

    static const struct { const char *script, *csv, *extra; } charts[] = {
        {"plots/flops.gp", "cmp/compare.csv", ""},
        {"plots/time.gp", "cmp/timing.csv", ""},
        {"plots/prefill_decode.gp", "cmp/prefill_decode.csv", ""},
        {"plots/kvmem.gp", "kv/kvmem.csv", ""},
        {"plots/kv_memory.gp", "run/kv_memory.csv", ""},
        {"plots/kv_memory.gp", "run/kv_memory.csv", "rss='%s/run/timing.csv'; "},
        {"plots/lesson5_gqa.gp", "kv/kvmem.csv", ""},
        {"plots/lesson5_cache_tensor.gp", "run/kv_memory.csv", "L=2; NH=2; hs=8; T=20; cap=32; eb=4; "},
    };
    for (size_t i = 0; i < sizeof charts / sizeof charts[0]; i++) {
        char extra[300];
        snprintf(extra, sizeof extra, charts[i].extra, dir);
        snprintf(pre, sizeof pre, "%s/chart%zu", dir, i);
        snprintf(vars, sizeof vars, "%sin='%s/%s'; out='%s'", extra, dir, charts[i].csv, pre);
        ck_assert_msg(gnuplot(vars, charts[i].script, err) == 0, "%s failed", charts[i].script);
        assert_chart(pre);
    }
    ck_assert_int_eq(remove_tree(dir), 0);
}
END_TEST

START_TEST(scripts_name_the_missing_column) {
    char dir[64], csv[128], vars[512], err[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(csv, sizeof csv, "%s/bad.csv", dir);
    snprintf(err, sizeof err, "%s/gnuplot.err", dir);
    FILE *f = fopen(csv, "w");
    ck_assert_ptr_nonnull(f);
    fputs("T,flops_cache,cache_median_s,quantity,label,prefill,step\n16,1,1,q,Q,1,0\n", f);
    ck_assert_int_eq(fclose(f), 0);
    static const struct { const char *script, *missing; } cases[] = {
        {"plots/flops.gp", "'flops_recompute'"},       {"plots/time.gp", "'cache_min_s'"},
        {"plots/prefill_decode.gp", "'decode'"},       {"plots/kvmem.gp", "'tokens'"},
        {"plots/kv_memory.gp", "'tokens'"},             {"plots/lesson5_gqa.gp", "'tokens'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(vars, sizeof vars, "in='%s'; out='%s/x'", csv, dir);
        ck_assert_msg(gnuplot(vars, cases[i].script, err) != 0, "%s accepted a bad CSV", cases[i].script);
        char *e = read_file(err, NULL);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(strstr(e, cases[i].missing) != NULL, "%s: message does not name %s: %s",
                      cases[i].script, cases[i].missing, e);
        free(e);
    }
    ck_assert_int_eq(remove_tree(dir), 0);
}
END_TEST

START_TEST(charts_option_and_missing_gnuplot) {
    char dir[64], out[128], charts[128], so[128], se[128], p[300];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/cmp", dir);
    snprintf(charts, sizeof charts, "%s/charts", dir);
    snprintf(so, sizeof so, "%s/stdout", dir);
    snprintf(se, sizeof se, "%s/stderr", dir);
    const char *args[] = {"compare", "--layers", "1", "--heads", "2", "--dim", "16", "--ctx", "64", "--vocab", "32",
                          "--lengths", "8,16", "--table-lengths", "none", "--decode-at", "10", "--repeat", "1",
                          "--out", out, "--charts", charts, "--quiet", NULL};
    /* no gnuplot on PATH: refused before measuring (nothing written, exit 2), with the
     * line that says how to install it */
    int st;
    pid_t pid = spawn(args, dir, so, se);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 2);
    char *e = read_file(se, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_msg(strstr(e, "apt-get install gnuplot-nox") && strchr(e, '\n') == e + strlen(e) - 1, "%s", e);
    free(e);
    ck_assert_int_eq(access(out, F_OK), -1);
    ck_assert_int_eq(access(charts, F_OK), -1);
    /* with gnuplot: the three charts */
    pid = spawn(args, NULL, so, se);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    static const char *const names[] = {"compare_flops", "prefill_decode", "compare_time_measured"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", charts, names[i]);
        assert_chart(p);
    }
    ck_assert_int_eq(remove_tree(dir), 0);
}
END_TEST

/* --charts and --scripts are checked before anything is measured; a chart that fails
 * leaves neither --out nor --charts behind and says so in one line of its own. */
START_TEST(charts_checked_and_failing) {
    char dir[64], out[128], charts[160], scripts[128], se[128], p[300];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/cmp", dir);
    snprintf(se, sizeof se, "%s/stderr", dir);
    snprintf(scripts, sizeof scripts, "%s/gp", dir);
    const struct { const char *charts, *scripts, *why; } bad[] = {
        {"/nonexistent/c", "plots", "--charts: the folder it goes in does not exist: /nonexistent/c"},
        {"CHARTS", "/nonexistent", "--scripts: /nonexistent/flops.gp: cannot open"},
        {"MINE", "plots", "--charts is a folder kvscope did not write"},
    };
    snprintf(charts, sizeof charts, "%s/charts", dir);
    char mine[128], notes[160];
    snprintf(mine, sizeof mine, "%s/mine", dir);
    snprintf(notes, sizeof notes, "%s/notes.txt", mine);
    ck_assert_int_eq(mkdir(mine, 0755), 0);
    ck_assert_int_eq(write_text_file(notes, "mine"), 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *c = strcmp(bad[i].charts, "CHARTS") == 0 ? charts
                        : strcmp(bad[i].charts, "MINE") == 0 ? mine : bad[i].charts;
        const char *args[] = {"compare", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "32",
                              "--lengths", "8", "--table-lengths", "none", "--decode-at", "8", "--repeat", "1",
                              "--out", out, "--charts", c, "--scripts", bad[i].scripts, "--quiet", NULL};
        ck_assert_int_eq(run_kvscope(args, NULL, se), 2);
        char *e = read_file(se, NULL);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(strstr(e, bad[i].why) && strchr(e, '\n') == e + strlen(e) - 1, "case %zu: %s", i, e);
        free(e);
        ck_assert_int_eq(count_entries(dir), 2); /* stderr and mine/ */
        ck_assert_int_eq(count_entries(mine), 1);
    }
    remove_tree(mine);
    /* scripts that gnuplot rejects: the first chart fails */
    ck_assert_int_eq(mkdir(scripts, 0755), 0);
    static const char *const gp[] = {"flops.gp", "prefill_decode.gp", "time.gp"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", scripts, gp[i]);
        ck_assert_int_eq(write_text_file(p, "reset\nset terminal no_such_terminal\n"), 0);
    }
    const char *args[] = {"compare", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "32",
                          "--lengths", "8", "--table-lengths", "none", "--decode-at", "8", "--repeat", "1",
                          "--out", out, "--charts", charts, "--scripts", scripts, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, se), 2);
    char *e = read_file(se, NULL);
    ck_assert_ptr_nonnull(e);
    snprintf(p, sizeof p, "kvscope: --charts: gnuplot failed on %s/flops.gp (status 1): ", scripts);
    ck_assert_msg(strncmp(e, p, strlen(p)) == 0 && strstr(e, "terminal") &&
                      strchr(e, '\n') == e + strlen(e) - 1 && !strstr(e, ".tmp."),
                  "%s", e);
    free(e);
    ck_assert_int_eq(access(out, F_OK), -1);
    ck_assert_int_eq(access(charts, F_OK), -1);
    ck_assert_int_eq(count_entries(dir), 2); /* stderr and gp/: no temporary folder */
    ck_assert_int_eq(remove_tree(dir), 0);
}
END_TEST

Suite *make_compare_suite(void) {
    Suite *s = suite_create("compare");
    TCase *tc = tcase_create("sweep");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, counted_flops_equal_the_closed_form);
    tcase_add_test(tc, prefill_decode_table_from_hooks);
    tcase_add_test(tc, deterministic_files_repeat_byte_for_byte);
    tcase_add_test(tc, bad_input_exits_2_and_writes_nothing);
    tcase_add_test(tc, ctrl_c_keeps_the_rows_measured);
    suite_add_tcase(s, tc);
    tc = tcase_create("charts");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, scripts_name_the_missing_column);
    suite_add_tcase(s, tc);
    tc = tcase_create("charts_cli");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_script_draws_png_and_svg);
    tcase_add_test(tc, charts_option_and_missing_gnuplot);
    tcase_add_test(tc, charts_checked_and_failing);
    suite_add_tcase(s, tc);
    return s;
}
