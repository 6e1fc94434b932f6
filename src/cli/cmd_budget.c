/* cmd_budget.c — `kvscope budget`: what a smaller or shorter KV cache costs in accuracy.
 *
 * Every storage type (fp32, fp16, bf16, int8, q8_0) decodes --steps tokens greedily
 * next to an fp32 reference fed the same tokens; the logits of both are compared at
 * every step. With --window, a windowed cache does the same against the full cache,
 * step by step, with the attention weight the evicted positions held just before
 * they were evicted (the previous step's pattern of the newest query). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_budget.h"
#include "cli.h"
#include "commands.h"
#include "generate.h"
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

/* Logit differences accumulated over the steps of one comparison. */
typedef struct {
    double max_abs, sum_abs;
    long n;           /* logits compared */
    int agree, steps; /* greedy choices that agree, choices compared */
} Drift;

static double drift_step(Drift *d, const Generator *test, const Generator *ref) {
    int V = test->m->cfg.V;
    double mx = 0.0;
    for (int i = 0; i < V; i++) {
        double e = fabs((double)test->logits[i] - (double)ref->logits[i]);
        mx = diff_max(mx, e);
        d->sum_abs += e;
    }
    d->max_abs = diff_max(d->max_abs, mx);
    d->n += V;
    d->agree += generator_argmax(test) == generator_argmax(ref);
    d->steps++;
    return mx;
}

/* The newest query's attention row of every layer and head from the last step:
 * row[(l·NH + h)·N + slot]. */
typedef struct {
    int NH, N;
    float *row;
} LastPattern;

static int keep_pattern(const HookEvent *ev, void *user) {
    LastPattern *lp = user;
    int NH = ev->shape[0], n = ev->shape[1], Tt = ev->shape[2];
    for (int h = 0; h < NH; h++)
        memcpy(lp->row + ((size_t)ev->layer * lp->NH + h) * lp->N,
               ev->data + ((size_t)h * n + n - 1) * Tt, (size_t)Tt * sizeof(float));
    return 0;
}

/* Two generators fed the same tokens: test chooses (greedy), ref follows. */
typedef struct {
    Generator test, ref;
} Pair;

static int pair_init(Pair *p, Model *m, KVDtype dt, int window, int sink) {
    memset(p, 0, sizeof *p);
    if (generator_init(&p->test, m, GEN_CACHE) || generator_init(&p->ref, m, GEN_CACHE) ||
        kvcache_set_dtype(&p->test.cache, dt))
        return -1;
    p->test.window = window;
    p->test.sink = sink;
    return 0;
}

static void pair_free(Pair *p) {
    generator_free(&p->test);
    generator_free(&p->ref);
}

/* The result of two generators' steps: GEN_NONFINITE if either gave non-finite
 * logits, else 1 if either failed, else 0. */
static int step_rc(int a, int b) {
    return a == GEN_NONFINITE || b == GEN_NONFINITE ? GEN_NONFINITE : (a || b);
}

static int write_dtypes(const char *dir, Model *m, const Loaded *ld, int steps, FILE *summary,
                        int quiet) {
    char path[4200];
    FILE *csv = NULL, *md = NULL;
    if (path_join(path, sizeof path, dir, "dtypes.csv") || !(csv = fopen(path, "w"))) return 1;
    if (path_join(path, sizeof path, dir, "dtypes.md") || !(md = fopen(path, "w"))) {
        fclose(csv);
        return 1;
    }
    fprintf(csv, "dtype,bytes_per_value,bytes_per_token,kv_bytes,max_abs_dlogit,mean_abs_dlogit,"
                 "greedy_agree,greedy_steps,greedy_same\n");
    fprintf(md, "| KV dtype | bytes per value | bytes per token | KV bytes after %d tokens | "
                "max \\|Δlogit\\| | mean \\|Δlogit\\| | same greedy choice |\n"
                "|---|---:|---:|---:|---:|---:|---|\n", ld->T + steps);
    if (!quiet) printf("%-5s %9s %9s %12s %12s %s\n", "dtype", "B/value", "B/token", "max|dlogit|",
                       "mean|dlogit|", "greedy");
    int rc = 0;
    for (int dt = 0; dt < KVDT_COUNT && rc == 0; dt++) {
        Pair p = {0};
        Drift d = {0};
        rc = pair_init(&p, m, (KVDtype)dt, 0, 0)
                 ? 1
                 : step_rc(generator_prefill(&p.test, ld->prompt, ld->T, NULL),
                           generator_prefill(&p.ref, ld->prompt, ld->T, NULL));
        if (rc) {
            pair_free(&p);
            break;
        }
        drift_step(&d, &p.test, &p.ref);
        for (int s = 1; s <= steps && rc == 0; s++) {
            int tok = generator_argmax(&p.test);
            rc = step_rc(generator_decode(&p.test, tok, s, NULL),
                         generator_decode(&p.ref, tok, s, NULL));
            if (!rc) drift_step(&d, &p.test, &p.ref);
        }
        const KVCache *c = &p.test.cache;
        size_t bpt = kvcache_bytes_per_token(c);
        double bpv = (double)c->row_bytes / (double)(c->NH * c->hs);
        const char *name = kvcache_dtype_name((KVDtype)dt);
        double mean = d.sum_abs / (double)d.n;
        const char *same = d.agree == d.steps ? "yes" : "no";
        fprintf(csv, "%s,%.6g,%zu,%zu,%.9g,%.9g,%d,%d,%s\n", name, bpv, bpt, kvcache_bytes_used(c),
                d.max_abs, mean, d.agree, d.steps, same);
        fprintf(md, "| %s | %.5g | %zu | %zu | %.3g | %.3g | %s (%d of %d) |\n", name, bpv, bpt,
                kvcache_bytes_used(c), d.max_abs, mean, same, d.agree, d.steps);
        fprintf(summary, "bytes_per_token_%s,%zu\nbytes_per_value_%s,%.6g\nmax_dlogit_%s,%.3g\n"
                         "mean_dlogit_%s,%.3g\ngreedy_same_%s,%s\n",
                name, bpt, name, bpv, name, d.max_abs, name, mean, name, same);
        if (!quiet) printf("%-5s %9.4g %9zu %12.3g %12.3g %s (%d/%d)\n", name, bpv, bpt, d.max_abs,
                           mean, same, d.agree, d.steps);
        pair_free(&p);
    }
    if (file_close(md) != 0 && !rc) rc = 1;
    if (file_close(csv) != 0 && !rc) rc = 1;
    return rc;
}

static int write_window(const char *dir, Model *m, const Loaded *ld, int steps, int W, int S,
                        FILE *summary, int quiet) {
    const Config *cfg = &m->cfg;
    char path[4200];
    FILE *csv;
    if (path_join(path, sizeof path, dir, "window.csv") || !(csv = fopen(path, "w"))) return 1;
    fprintf(csv, "step,position,kv_tokens_full,kv_bytes_full,kv_tokens_window,kv_bytes_window,"
                 "max_abs_dlogit,evicted_position,evicted_attention_mean,evicted_attention_max\n");
    LastPattern lp = {cfg->NH, cfg->N, calloc((size_t)cfg->L * cfg->NH * cfg->N, sizeof(float))};
    Hooks hooks;
    hooks_init(&hooks);
    Pair p = {0};
    Drift d = {0};
    int rc = 0, n_evicted = 0;
    double ev_sum = 0.0, ev_max = 0.0, last_dlogit = 0.0;
    if (!lp.row || hooks_subscribe(&hooks, HOOK_BIT(HOOK_PATTERN), keep_pattern, &lp) ||
        pair_init(&p, m, KVDT_FP32, W, S)) {
        rc = 1;
        goto out;
    }
    if ((rc = step_rc(generator_prefill(&p.test, ld->prompt, ld->T, &hooks),
                      generator_prefill(&p.ref, ld->prompt, ld->T, NULL))))
        goto out;
    for (int s = 0; s <= steps; s++) {
        int ev_pos = -1;
        double ev_mean = 0.0, ev_hmax = 0.0;
        if (s > 0) {
            int first, ev = generator_next_eviction(&p.test, &first);
            if (ev) { /* weight the evicted slots got from the newest query, one step ago */
                ev_pos = p.test.cache.pos[first];
                for (int l = 0; l < cfg->L; l++)
                    for (int h = 0; h < cfg->NH; h++) {
                        const float *row = lp.row + ((size_t)l * cfg->NH + h) * cfg->N;
                        double w = 0.0;
                        for (int j = first; j < first + ev; j++) w += row[j];
                        ev_mean += w / (cfg->L * cfg->NH);
                        if (w > ev_hmax) ev_hmax = w;
                    }
                n_evicted += ev;
                ev_sum += ev_mean;
                if (ev_hmax > ev_max) ev_max = ev_hmax;
            }
            int tok = generator_argmax(&p.test);
            if ((rc = step_rc(generator_decode(&p.test, tok, s, &hooks),
                              generator_decode(&p.ref, tok, s, NULL))))
                break;
        }
        last_dlogit = drift_step(&d, &p.test, &p.ref);
        fprintf(csv, "%d,%d,%d,%zu,%d,%zu,%.9g,%d,%.9g,%.9g\n", s, p.test.len - 1, p.ref.cache.len,
                kvcache_bytes_used(&p.ref.cache), p.test.cache.len, kvcache_bytes_used(&p.test.cache),
                last_dlogit, ev_pos, ev_mean, ev_hmax);
    }
    if (rc == 0) {
        fprintf(summary, "window,%d\nsink,%d\nwindow_bytes_plateau,%zu\nfull_bytes_final,%zu\n"
                         "window_max_dlogit,%.3g\nwindow_final_dlogit,%.3g\nwindow_mean_dlogit,%.3g\n"
                         "window_greedy_agree,%d\nwindow_greedy_steps,%d\nwindow_evicted,%d\n"
                         "evicted_attention_mean,%.3g\nevicted_attention_max,%.3g\n",
                W, S, kvcache_bytes_used(&p.test.cache), kvcache_bytes_used(&p.ref.cache), d.max_abs,
                last_dlogit, d.sum_abs / (double)d.n, d.agree, d.steps, n_evicted,
                n_evicted ? ev_sum / n_evicted : 0.0, ev_max);
        if (!quiet)
            printf("window %d (sink %d): KV %zu bytes vs %zu full; max |dlogit| %.3g; "
                   "greedy %d/%d; evicted %d positions holding %.3g of the attention on average\n",
                   W, S, kvcache_bytes_used(&p.test.cache), kvcache_bytes_used(&p.ref.cache), d.max_abs,
                   d.agree, d.steps, n_evicted, n_evicted ? ev_sum / n_evicted : 0.0);
    }
out:
    pair_free(&p);
    free(lp.row);
    if (file_close(csv) != 0 && !rc) rc = 1;
    return rc;
}

int cmd_budget(int argc, char **argv) {
    BudgetArgs a = {.steps = 32, .out = "kvscope_budget"};
    model_args_default(&a.model);
    budget_opts_default(&a.budget);
    int rc = opts_parse(&BUDGET, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    const ModelArgs ma = a.model;
    const BudgetOpts bo = a.budget;
    const int steps = a.steps, quiet = a.quiet, force = a.force;
    const char *out = a.out;
    OutDir od;
    if ((rc = cli_outdir_check(&od, out, "budget", "--out", force ? OUTDIR_FORCE : 0)) ||
        (rc = cli_outdir_spares(&od, "--model", ma.model_dir)))
        return rc;
    Loaded ld;
    if ((rc = model_args_load(&ma, steps, &ld))) return rc;
    if ((rc = budget_opts_check(&bo, ld.T, GEN_CACHE))) {
        loaded_free(&ld);
        return rc;
    }
    char path[4200];
    if ((rc = cli_outdir_begin(&od))) {
        loaded_free(&ld);
        return rc;
    }
    FILE *summary = NULL;
    int status = 2;
    if (path_join(path, sizeof path, od.tmp, "summary.csv") || !(summary = fopen(path, "w"))) {
        fprintf(stderr, "kvscope: --out: cannot write CSV files (%s): %s\n", write_error_text(errno),
                out);
        goto done;
    }
    fprintf(summary, "key,value\nsteps,%d\nprompt_tokens,%d\ntokens,%d\n", steps, ld.T, ld.T + steps);
    errno = 0;
    rc = write_dtypes(od.tmp, &ld.model, &ld, steps, summary, quiet);
    if (rc == 0 && bo.window)
        rc = write_window(od.tmp, &ld.model, &ld, steps, bo.window, bo.sink, summary, quiet);
    if (rc == GEN_NONFINITE) {
        fprintf(stderr, "kvscope: non-finite logits in the budget run (the model's numbers overflow "
                        "float32)\n");
        goto done;
    } else if (rc) {
        fprintf(stderr, "kvscope: --out: budget run failed (%s): %s\n",
                errno ? write_error_text(errno) : "out of memory", out);
        goto done;
    }
    status = 0;
done:
    status = cli_outdir_end(&od, status, summary && file_close(summary) != 0);
    if (status == 0 && !quiet) printf("wrote %s/\n", out);
    loaded_free(&ld);
    return status;
}
