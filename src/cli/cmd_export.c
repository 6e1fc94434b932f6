/* cmd_export.c — `kvscope export`: the model as a Hugging Face GPT-2 folder. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "hf_model.h"
#include "outdir.h"

static const char *const EXPORT_HELP =
    "usage: kvscope export --out DIR [options]\n"
    "Write the model (the built-in seeded one, or --model's) as config.json +\n"
    "model.safetensors: float32, Hugging Face GPT-2 names, lm_head tied to wte.\n"
    "Hugging Face's GPT2LMHeadModel.from_pretrained(DIR) and kvscope --model DIR read it.\n\n"
    "export options:\n"
    "  --out DIR            output folder, replaced as a whole (required)\n"
    "  --quiet              print nothing but errors\n";

int cmd_export(int argc, char **argv) {
    ModelArgs ma;
    model_args_default(&ma);
    const char *out = NULL;
    int quiet = 0, force = 0;
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i];
        int rc = model_args_parse(&ma, argc, argv, &i);
        if (rc == 1) continue;
        if (rc) return rc;
        if (strcmp(o, "--out") == 0) {
            if (!(out = cli_value(argc, argv, &i))) return 2;
        } else if (strcmp(o, "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(o, "--force") == 0) {
            force = 1;
        } else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            printf("%s%s\n%s\n%s", EXPORT_HELP, FORCE_HELP, MODEL_ARGS_HELP, EXIT_STATUS_HELP);
            return 0;
        } else {
            return cli_fail("unknown option", o);
        }
    }
    if (!out) return cli_fail("missing option", "--out DIR");

    OutDir od;
    int rc;
    if ((rc = cli_outdir_check(&od, out, "export", "--out", force ? OUTDIR_FORCE : 0)) ||
        (rc = cli_outdir_spares(&od, "--model", ma.model_dir)))
        return rc;
    Loaded ld;
    if ((rc = model_args_load(&ma, 0, &ld))) return rc;
    if ((rc = cli_outdir_begin(&od))) {
        loaded_free(&ld);
        return rc;
    }
    char err[4600];
    rc = hf_export(&ld.model, od.tmp, err, sizeof err);
    if (rc) {
        if (rc == HF_NOMEM) fprintf(stderr, "kvscope: out of memory: export\n");
        else cli_outdir_error(&od, err);
    }
    if ((rc = cli_outdir_end(&od, rc ? 2 : 0, 0))) {
        loaded_free(&ld);
        return rc;
    }
    if (!quiet)
        printf("wrote %s/config.json and %s/model.safetensors (%zu parameters, float32)\n", out, out,
               ld.model.w.num_params);
    loaded_free(&ld);
    return 0;
}
