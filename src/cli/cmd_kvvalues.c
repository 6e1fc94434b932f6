/* cmd_kvvalues.c — `kvscope kvvalues`: what the cache holds, channel by channel, over a
 * text, and what int8 per token or per channel does to the logits (kvvalues.h does the
 * work). parse → check --out → read --text → load → measure → the CSVs → the lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "infile.h"
#include "kvvalues.h"
#include "outdir.h"

typedef struct {
    ModelArgs model;
    const char *text, *out;
    int quiet, force;
} KVValuesArgs;

static const Option KVVALUES_OPTIONS[] = {
    OPT_GROUP("kvvalues options"),
    OPT_STRING("--text", "FILE", KVValuesArgs, text,
               "the text (required): its tokens, the start token first, cut to the context"),
    OPT_STRING("--out", "DIR", KVValuesArgs, out,
               "output folder, replaced as a whole: channels.csv, groups.csv, summary.csv"),
    OPT_QUIET(KVValuesArgs, quiet),
    OPT_FORCE(KVValuesArgs, force),
    OPT_INCLUDE(KVValuesArgs, model, MODEL_ONLY_OPTIONS),
    OPT_END,
};

static const Command KVVALUES = {
    "kvvalues", "--text FILE [options]",
    "The values in the KV cache and how int8 should group them. --text runs one token\n"
    "per step through the fp32 cache; channels.csv has every channel's spread of K and\n"
    "of V over the positions (min, quartiles, median, max), per layer. Then the same\n"
    "text runs with K and V read back through int8, each grouped per token (one scale\n"
    "per token and head, as --kv-dtype int8) or per channel (one scale per channel over\n"
    "every position held); groups.csv has max |delta logit| and its RMS against fp32\n"
    "for the four combinations.\n",
    KVVALUES_OPTIONS,
    "The int8 runs store fp32 and quantize the whole cache again at every step (run\n"
    "--int8-sim does the same): they measure the rounding of each grouping, not the\n"
    "bytes. A real per-channel cache quantizes blocks of tokens once they are complete.\n",
};

/* --text into *buf, the model's prompt. 0, or 2 after the error line. */
static int read_text(KVValuesArgs *a, char **buf) {
    char err[4600];
    size_t len;
    const int rc = infile_read(a->text, (size_t)64 << 20, buf, &len, err, sizeof err);
    if (rc == INFILE_NOMEM) return cli_fail("out of memory", a->text);
    if (rc) return cli_fail("--text", err);
    if (strlen(*buf) != len) return cli_fail("--text holds a NUL byte", a->text);
    if (len == 0) return cli_fail("--text is empty", a->text);
    a->model.prompt = *buf;
    a->model.fit_prompt = 1; /* a long text is welcome: its first N tokens are read */
    return 0;
}

static void summary(const KVValuesArgs *a, const KVValues *r) {
    static const char *const g[2] = {"per token", "per channel"};
    printf("%d positions, %d layers of %d channels; largest channel max|x| over the median "
           "channel's:\n", r->n, r->L, r->C);
    for (int l = 0; l < r->L; l++)
        printf("  layer %d: K %.2f (channel %d), V %.2f (channel %d)\n", l, r->outlier[l * 2],
               r->top[l * 2], r->outlier[l * 2 + 1], r->top[l * 2 + 1]);
    printf("int8 read-back against fp32: %-12s %-12s %12s %12s\n", "K", "V", "max|dlogit|", "rms");
    for (int kg = 0; kg < 2; kg++)
        for (int vg = 0; vg < 2; vg++)
            printf("%28s %-12s %-12s %12.4g %12.4g\n", "", g[kg], g[vg], r->dlogit_max[kg][vg],
                   r->dlogit_rms[kg][vg]);
    printf("wrote %s/channels.csv, groups.csv, summary.csv\n", a->out);
}

/* Load, measure, write. 0, or 2. */
static int measure(KVValuesArgs *a, OutDir *od) {
    Loaded ld;
    char err[8400];
    int rc = model_args_load(&a->model, 0, &ld);
    if (rc) return rc;
    KVValues r;
    const int m = kvvalues_measure(&ld.model, ld.prompt, ld.T, &r);
    if (m) rc = cli_fail(m == -1 ? "out of memory" : "a forward pass failed (non-finite logits?)",
                         "kvvalues");
    else if ((rc = cli_outdir_begin(od)) == 0) {
        if (kvvalues_write(&r, od, err, sizeof err)) rc = cli_error(err);
        if (rc == 0 && !a->quiet) summary(a, &r); /* before the swap: a failing stdout keeps od */
        rc = cli_outdir_end(od, rc, 0);
    }
    if (!m) kvvalues_free(&r);
    loaded_free(&ld);
    return rc;
}

int cmd_kvvalues(int argc, char **argv) {
    KVValuesArgs a = {.out = "kvscope_kvvalues"};
    model_args_default(&a.model);
    int rc = opts_parse(&KVVALUES, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    if (!a.text) return cli_fail("kvvalues needs a text", "--text FILE");
    OutDir od;
    char *text = NULL;
    if ((rc = cli_outdir_check(&od, a.out, "kvvalues", "--out", a.force ? OUTDIR_FORCE : 0)) ||
        (rc = cli_outdir_spares(&od, "--model", a.model.model_dir)) ||
        (rc = cli_outdir_spares(&od, "--text", a.text)))
        return rc;
    if ((rc = read_text(&a, &text)) == 0) rc = measure(&a, &od);
    free(text);
    return rc;
}
