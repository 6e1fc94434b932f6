/* cmd_export.c — `kvscope export`: the model as a Hugging Face GPT-2 folder. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "hf_model.h"
#include "outdir.h"

typedef struct {
    ModelArgs model;
    const char *out;
    int quiet, force;
} ExportArgs;

static const Option EXPORT_OPTIONS[] = {
    OPT_GROUP("export options"),
    OPT_STRING("--out", "DIR", ExportArgs, out, "output folder, replaced as a whole (required)"),
    OPT_QUIET(ExportArgs, quiet),
    OPT_FORCE(ExportArgs, force),
    OPT_INCLUDE(ExportArgs, model, MODEL_ONLY_OPTIONS), /* no prompt: nothing is run */
    OPT_END,
};

static const Command EXPORT = {
    "export", "--out DIR [options]",
    "Write the model (the built-in seeded one, or --model's) as config.json +\n"
    "model.safetensors: float32, Hugging Face GPT-2 names, lm_head tied to wte.\n"
    "Hugging Face's GPT2LMHeadModel.from_pretrained(DIR) and kvscope --model DIR read it.\n",
    EXPORT_OPTIONS, NULL,
};

int cmd_export(int argc, char **argv) {
    ExportArgs a = {0};
    model_args_default(&a.model);
    a.model.no_prompt = 1;
    int rc = opts_parse(&EXPORT, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    if (!a.out) return cli_fail("missing option", "--out DIR");

    OutDir od;
    Loaded ld;
    if ((rc = cli_outdir_check(&od, a.out, "export", "--out", a.force ? OUTDIR_FORCE : 0)) ||
        (rc = cli_outdir_spares(&od, "--model", a.model.model_dir)) ||
        (rc = model_args_load(&a.model, 0, &ld)))
        return rc;
    if ((rc = cli_outdir_begin(&od)) == 0) {
        char err[4600];
        int e = hf_export(&ld.model, od.tmp, err, sizeof err);
        if (e == HF_NOMEM) fprintf(stderr, "kvscope: out of memory: export\n");
        else if (e) cli_outdir_error(&od, err);
        /* the text before the swap: a stdout that fails keeps the old folder */
        if (!e && !a.quiet)
            printf("wrote %s/config.json and %s/model.safetensors (%zu parameters, float32)\n", a.out,
                   a.out, ld.model.w.num_params);
        rc = cli_outdir_end(&od, e ? 2 : 0, 0);
    }
    loaded_free(&ld);
    return rc;
}
