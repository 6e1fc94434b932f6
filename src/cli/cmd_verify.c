/* cmd_verify.c — `kvscope verify`: the cache changes nothing.
 * Runs the same tokens with the KV cache and by recomputing the whole sequence at
 * every step, and compares the logits of every step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "generate.h"
#include "outdir.h"

#define VERIFY_TOL 1e-5 /* absolute, on logits of order 1 */
#define VERIFY_CSV_HEADER "step,max_abs_diff,same_token\n"

static const char *const VERIFY_HELP =
    "usage: kvscope verify [options]\n"
    "Decode --steps tokens greedily with the KV cache, run the same tokens again without\n"
    "it (recomputing the whole sequence each step), and print max |Δlogit| per step.\n"
    "Exits 0 only if every step agrees within 1e-5, 1 if one does not, 2 when the logits\n"
    "are not finite (nothing to compare).\n\n"
    "verify options:\n"
    "  --steps N            decode steps (default 20)\n"
    "  --article-bug        check the source article's cache (newest K/V only) instead\n"
    "  --csv FILE           also write step,max_abs_diff,same_token as CSV (replaced\n"
    "                       whole; only a file kvscope wrote, unless --force)\n"
    "  --force              replace --csv even if kvscope did not write it\n"
    "  --quiet              print only the overall line\n";

int cmd_verify(int argc, char **argv) {
    ModelArgs ma;
    model_args_default(&ma);
    int steps = 20, quiet = 0, force = 0;
    GenMode mode = GEN_CACHE;
    const char *csv = NULL;
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v;
        long x;
        int rc = model_args_parse(&ma, argc, argv, &i);
        if (rc == 1) continue;
        if (rc) return rc;
        if (strcmp(o, "--steps") == 0) {
            if (!(v = cli_value(argc, argv, &i)) || cli_long(o, v, 0, 65536, &x)) return 2;
            steps = (int)x;
        } else if (strcmp(o, "--article-bug") == 0) {
            mode = GEN_ARTICLE_BUG;
        } else if (strcmp(o, "--csv") == 0) {
            if (!(csv = cli_value(argc, argv, &i))) return 2;
        } else if (strcmp(o, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(o, "--force") == 0) {
            force = 1;
        } else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            printf("%s\n%s\n%s", VERIFY_HELP, MODEL_ARGS_HELP, EXIT_STATUS_HELP);
            return 0;
        } else {
            return cli_fail("unknown option", o);
        }
    }
    OutFile of;
    char err[8400];
    if (csv &&
        outfile_check(&of, csv, "--csv", VERIFY_CSV_HEADER, force ? OUTDIR_FORCE : 0, err, sizeof err)) {
        fprintf(stderr, "kvscope: %s\n", err);
        return 2;
    }
    Loaded ld;
    int rc = model_args_load(&ma, steps, &ld);
    if (rc) return rc;

    Generator a, b;
    if (generator_init(&a, &ld.model, mode)) {
        loaded_free(&ld);
        return cli_fail("out of memory", "generator");
    }
    /* the second model shares the weights but has its own activations */
    Model m2;
    if (model_init_shared(&m2, &ld.model) ||
        generator_init(&b, &m2, GEN_RECOMPUTE)) {
        generator_free(&a);
        model_free(&m2);
        loaded_free(&ld);
        return cli_fail("out of memory", "generator");
    }
    FILE *out = NULL;
    if (csv && !(out = outfile_begin(&of, err, sizeof err))) {
        generator_free(&a);
        generator_free(&b);
        model_free(&m2);
        loaded_free(&ld);
        fprintf(stderr, "kvscope: %s\n", err);
        return 2;
    }
    if (out) fputs(VERIFY_CSV_HEADER, out);

    const int V = ld.model.cfg.V;
    double worst = 0.0;
    int status = 0;
    for (int s = 0; s <= steps && status == 0; s++) {
        int tok = s == 0 ? -1 : generator_argmax(&a); /* both runs get the cached run's token */
        int ra = s == 0 ? generator_prefill(&a, ld.prompt, ld.T, NULL) : generator_decode(&a, tok, s, NULL);
        int rb = ra ? 0
                    : s == 0 ? generator_prefill(&b, ld.prompt, ld.T, NULL)
                             : generator_decode(&b, tok, s, NULL);
        if (ra || rb) {
            char what[64];
            if (s == 0) snprintf(what, sizeof what, "the prefill (%s run)", ra ? "cached" : "recompute");
            else snprintf(what, sizeof what, "decode step %d (%s run)", s, ra ? "cached" : "recompute");
            status = cli_step_failed(ra ? ra : rb, what, ra ? a.logits : b.logits, V);
            break;
        }
        double d = logits_max_abs_diff(a.logits, b.logits, V);
        int same = generator_argmax(&a) == generator_argmax(&b);
        worst = diff_max(worst, d);
        if (!quiet)
            printf("%s %3d  T=%-4d max |dlogit| = %.3g%s\n", s == 0 ? "prefill" : "decode ", s,
                   a.len, d, same ? "" : "  (greedy token differs)");
        if (out) fprintf(out, "%d,%.9g,%d\n", s, d, same);
    }
    if (out && status) {
        outfile_abort(&of, out);
    } else if (out && outfile_commit(&of, out, err, sizeof err)) {
        fprintf(stderr, "kvscope: %s\n", err);
        status = 2;
    }
    if (status == 0) {
        int ok = worst <= VERIFY_TOL;
        printf("%s: max |dlogit| over %d steps = %.3g (tolerance %.0e): %s\n",
               mode == GEN_ARTICLE_BUG ? "article-bug cache vs recompute" : "cache vs recompute",
               steps, worst, VERIFY_TOL, ok ? "OK" : "MISMATCH");
        status = ok ? 0 : 1;
    }
    generator_free(&a);
    generator_free(&b);
    model_free(&m2);
    loaded_free(&ld);
    return status;
}
