/* cmd_info.c — `kvscope info`: what kvscope's closed forms say about a model and a
 * prompt, without running it (the weights are not even built): the widths, the
 * parameters, the weight bytes a decode step reads, the KV bytes a token takes, the share
 * of a token's block FLOPs that makes its K and V, and the prompt's attention. key,value
 * lines on stdout, as the lessons read them (values.csv). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "kvcache.h"

typedef struct {
    ModelArgs model;
} InfoArgs;

static const Option INFO_OPTIONS[] = {
    OPT_INCLUDE(InfoArgs, model, MODEL_OPTIONS),
    OPT_END,
};

static const Command INFO = {
    "info", "[options]",
    "Print what the closed forms say about the model and the prompt, as key,value lines:\n"
    "L NH C hs N V, qkv_width (3C) and mlp_width (4C); params; weight_bytes_decode, the\n"
    "weight bytes a decode step reads (with --weights); kv_bytes_per_token (fp32 cache);\n"
    "kv_flops_share, the share of a token's block FLOPs that computes its K and V;\n"
    "prompt_tokens T with attention_square (T²), attention_causal (T(T+1)/2) and\n"
    "attention_causal_heads (NH of those); without --prompt, the default prompt cut to\n"
    "the context. Nothing is run and no weight is built.\n",
    INFO_OPTIONS, NULL,
};

int cmd_info(int argc, char **argv) {
    InfoArgs a;
    Config cfg;
    Loaded ld;
    model_args_default(&a.model);
    int rc = opts_parse(&INFO, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    a.model.fit_prompt = !a.model.prompt_option; /* the default text, cut to a short context */
    if ((rc = model_args_prompt(&a.model, 0, &cfg, &ld))) return rc;
    const unsigned long long T = (unsigned long long)ld.T, C = (unsigned long long)cfg.C;
    printf("key,value\nL,%d\nNH,%d\nC,%d\nhs,%d\nN,%d\nV,%d\nqkv_width,%llu\nmlp_width,%llu\n",
           cfg.L, cfg.NH, cfg.C, cfg.C / cfg.NH, cfg.N, cfg.V, 3 * C, 4 * C);
    printf("params,%zu\nweights,%s\nweight_bytes_decode,%llu\n", model_num_params(&cfg),
           dtype_name(a.model.weights),
           (unsigned long long)model_weight_bytes_read(&cfg, a.model.weights, 1));
    printf("kv_bytes_per_token,%zu\n",
           2 * (size_t)cfg.L * dtype_row_bytes(DT_FP32, (size_t)cfg.C, (size_t)cfg.NH));
    /* c_attn's K and V columns are 2C of its 3C outputs: 4·C² of the 24·C² FLOPs a
     * token costs in a block's matmuls (flops_layers_formula) */
    printf("kv_flops_share,%.9g\n", (double)(4 * C * C) / (double)(24 * C * C));
    printf("prompt_tokens,%llu\nattention_square,%llu\nattention_causal,%llu\n"
           "attention_causal_heads,%llu\n",
           T, T * T, T * (T + 1) / 2, (unsigned long long)cfg.NH * T * (T + 1) / 2);
    loaded_free(&ld);
    return 0;
}
