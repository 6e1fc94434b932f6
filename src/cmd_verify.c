/* cmd_verify.c — `kvscope verify`: the cache changes nothing.
 * Runs the same tokens with the KV cache and by recomputing the whole sequence at
 * every step, and compares the logits of every step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "generate.h"
#include "outdir.h"

#define VERIFY_TOL 1e-5 /* absolute, on logits of order 1 */

static const char *const VERIFY_HELP =
    "usage: kvscope verify [options]\n"
    "Decode --steps tokens greedily with the KV cache, run the same tokens again without\n"
    "it (recomputing the whole sequence each step), and print max |Δlogit| per step.\n"
    "Exits 0 only if every step agrees within 1e-5.\n\n"
    "verify options:\n"
    "  --steps N        decode steps (default 20)\n"
    "  --article-bug    check the source article's cache (newest K/V only) instead\n"
    "  --csv FILE       also write step,max_abs_diff,same_token as CSV\n"
    "  --quiet          print only the overall line\n";

int cmd_verify(int argc, char **argv) {
    ModelArgs ma;
    model_args_default(&ma);
    int steps = 20, quiet = 0;
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
        } else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            printf("%s\n%s", VERIFY_HELP, MODEL_ARGS_HELP);
            return 0;
        } else {
            return cli_fail("unknown option", o);
        }
    }
    struct stat st;
    if (csv && stat(csv, &st) == 0 && S_ISDIR(st.st_mode)) return cli_fail("--csv is a directory", csv);
    if (csv && strlen(csv) > 4000) return cli_fail("--csv path too long", csv);
    Loaded ld;
    int rc = model_args_load(&ma, steps, &ld);
    if (rc) return rc;

    Generator a, b;
    if (generator_init(&a, &ld.model, mode)) {
        loaded_free(&ld);
        return cli_fail("out of memory", "generator"), 1;
    }
    /* the second model shares the weights but has its own activations */
    Model m2;
    if (model_init_shared(&m2, &ld.model) ||
        generator_init(&b, &m2, GEN_RECOMPUTE)) {
        generator_free(&a);
        model_free(&m2);
        loaded_free(&ld);
        return cli_fail("out of memory", "generator"), 1;
    }
    FILE *out = NULL;
    char tmp[4200];
    if (csv) {
        /* a fresh temporary name beside the target, renamed over it at the end */
        snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", csv);
        int fd = mkstemp(tmp);
        mode_t mask = umask(0);
        umask(mask);
        if (fd >= 0) fchmod(fd, 0666 & ~mask); /* mkstemp's 0600 is not what the user expects */
        if (fd >= 0 && !(out = fdopen(fd, "w"))) {
            close(fd);
            remove(tmp);
        }
        if (!out) {
            generator_free(&a);
            generator_free(&b);
            model_free(&m2);
            loaded_free(&ld);
            return cli_fail("cannot write --csv", csv);
        }
        fprintf(out, "step,max_abs_diff,same_token\n");
    }

    const int V = ld.model.cfg.V;
    double worst = 0.0;
    int status = 0;
    for (int s = 0; s <= steps && status == 0; s++) {
        int tok = s == 0 ? -1 : generator_argmax(&a); /* both runs get the cached run's token */
        if (s == 0) {
            status = generator_prefill(&a, ld.prompt, ld.T, NULL) || generator_prefill(&b, ld.prompt, ld.T, NULL);
        } else {
            status = generator_decode(&a, tok, s, NULL) || generator_decode(&b, tok, s, NULL);
        }
        if (status) {
            fprintf(stderr, "kvscope: step %d failed (out of memory?)\n", s);
            status = 1;
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
    if (out) {
        if (file_close(out) != 0 || (status == 0 && rename(tmp, csv) != 0)) {
            fprintf(stderr, "kvscope: cannot write %s\n", csv);
            status = 1;
        }
        if (status) remove(tmp);
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
