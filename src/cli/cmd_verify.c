/* cmd_verify.c — `kvscope verify`: the cache changes nothing.
 * parse → check --csv → load → run the same tokens with the KV cache and by recomputing
 * the whole sequence at every step, comparing the logits of every step → report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "generate.h"
#include "outdir.h"

#define VERIFY_TOL 1e-5 /* absolute, on logits of order 1 */
#define VERIFY_CSV_HEADER "step,max_abs_diff,same_token\n"

typedef struct {
    ModelArgs model;
    int steps;
    GenMode mode;
    const char *csv;
    int quiet, force;
} VerifyArgs;

static const Option VERIFY_OPTIONS[] = {
    OPT_GROUP("verify options"),
    OPT_INT("--steps", "N", VerifyArgs, steps, 0, 65536, "decode steps"),
    OPT_SET("--article-bug", VerifyArgs, mode, GEN_ARTICLE_BUG,
            "check the source article's cache (newest K/V only) instead"),
    OPT_STRING("--csv", "FILE", VerifyArgs, csv,
               "also write step,max_abs_diff,same_token as CSV (replaced whole; only a file "
               "kvscope wrote, unless --force)"),
    OPT_QUIET(VerifyArgs, quiet),
    OPT_FORCE(VerifyArgs, force),
    OPT_INCLUDE(VerifyArgs, model, MODEL_OPTIONS),
    OPT_END,
};

static const Command VERIFY = {
    "verify", "[options]",
    "Decode --steps tokens greedily with the KV cache, run the same tokens again without\n"
    "it (recomputing the whole sequence each step), and print max |dlogit| per step.\n"
    "Exits 0 only if every step agrees within 1e-5, 1 if one does not, 2 when the logits\n"
    "are not finite (nothing to compare). With --quiet nothing is printed: the exit\n"
    "status is the result.\n",
    VERIFY_OPTIONS, NULL,
};

/* The two runs, side by side: `cached` chooses the tokens, `recompute` follows. */
typedef struct {
    Model shared;         /* the recompute run's model: the same weights, its own activations */
    Generator cached, recompute;
} Runs;

static void runs_free(Runs *r) {
    generator_free(&r->cached);
    generator_free(&r->recompute);
    model_free(&r->shared);
}

static int runs_init(Runs *r, Model *m, GenMode mode) {
    memset(r, 0, sizeof *r);
    if (generator_init(&r->cached, m, mode) || model_init_shared(&r->shared, m) ||
        generator_init(&r->recompute, &r->shared, GEN_RECOMPUTE)) {
        runs_free(r);
        return cli_fail("out of memory", "generator");
    }
    return 0;
}

/* Step s of both runs (0: the prefill). 0, or 2 after the line naming the failed run. */
static int step_both(Runs *r, const Loaded *ld, int s) {
    int tok = s == 0 ? -1 : generator_argmax(&r->cached); /* both get the cached run's token */
    int ra = s == 0 ? generator_prefill(&r->cached, ld->prompt, ld->T, NULL)
                    : generator_decode(&r->cached, tok, s, NULL);
    int rb = ra ? 0
                : s == 0 ? generator_prefill(&r->recompute, ld->prompt, ld->T, NULL)
                         : generator_decode(&r->recompute, tok, s, NULL);
    if (!ra && !rb) return 0;
    char what[64];
    const char *run = ra ? "cached" : "recompute";
    if (s == 0) snprintf(what, sizeof what, "the prefill (%s run)", run);
    else snprintf(what, sizeof what, "decode step %d (%s run)", s, run);
    const Generator *g = ra ? &r->cached : &r->recompute;
    return cli_step_failed(ra ? ra : rb, what, g->logits, ld->model.cfg.V);
}

/* Every step, compared: a line each unless quiet, a CSV row each into csv (may be
 * NULL); the largest difference in *worst. 0, or 2. */
static int run_steps(const VerifyArgs *a, const Loaded *ld, Runs *r, FILE *csv, double *worst) {
    const int V = ld->model.cfg.V;
    *worst = 0.0;
    for (int s = 0; s <= a->steps; s++) {
        int rc = step_both(r, ld, s);
        if (rc) return rc;
        double d = logits_max_abs_diff(r->cached.logits, r->recompute.logits, V);
        int same = generator_argmax(&r->cached) == generator_argmax(&r->recompute);
        *worst = diff_max(*worst, d);
        if (!a->quiet)
            printf("%s %3d  T=%-4d max |dlogit| = %.3g%s\n", s == 0 ? "prefill" : "decode ", s,
                   r->cached.len, d, same ? "" : "  (greedy token differs)");
        if (csv && (fprintf(csv, "%d,%.9g,%d\n", s, d, same) < 0 || ferror(csv))) {
            fprintf(stderr, "kvscope: --csv: cannot write (%s): %s\n", write_error_text(errno), a->csv);
            return 2; /* at the first failed write, not after every step */
        }
    }
    return 0;
}

int cmd_verify(int argc, char **argv) {
    VerifyArgs a = {.steps = 20, .mode = GEN_CACHE};
    model_args_default(&a.model);
    int rc = opts_parse(&VERIFY, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;

    OutFile of;
    char err[8400];
    const unsigned flags = a.force ? OUTDIR_FORCE : 0;
    if ((rc = cli_outfile_spares_model(a.csv, "--csv", a.model.model_dir))) return rc;
    if (a.csv && outfile_check(&of, a.csv, "--csv", VERIFY_CSV_HEADER, flags, err, sizeof err))
        return cli_error(err);
    Loaded ld;
    Runs runs;
    if ((rc = model_args_load(&a.model, a.steps, &ld))) return rc;
    if ((rc = runs_init(&runs, &ld.model, a.mode))) {
        loaded_free(&ld);
        return rc;
    }
    FILE *csv = NULL;
    if (a.csv && !(csv = outfile_begin(&of, err, sizeof err))) rc = cli_error(err);
    if (a.csv) cli_note_left(of.left, of.nleft);
    if (csv) fputs(VERIFY_CSV_HEADER, csv);

    double worst = 0.0;
    if (rc == 0) rc = run_steps(&a, &ld, &runs, csv, &worst);
    if (csv && rc) outfile_abort(&of, csv);
    else if (csv && outfile_commit(&of, csv, err, sizeof err)) rc = cli_error(err);
    if (rc == 0) {
        const int ok = worst <= VERIFY_TOL;
        if (!a.quiet) /* --quiet: the exit status says it */
            printf("%s: max |dlogit| over %d steps = %.3g (tolerance %.0e): %s\n",
               a.mode == GEN_ARTICLE_BUG ? "article-bug cache vs recompute" : "cache vs recompute",
                   a.steps, worst, VERIFY_TOL, ok ? "OK" : "MISMATCH");
        rc = ok ? 0 : 1;
    }
    runs_free(&runs);
    loaded_free(&ld);
    return rc;
}
