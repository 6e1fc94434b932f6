/* cli_budget.c — parsing and applying --kv-dtype, --window/--sink, --max-kv-mb/--max-tokens. */
#include "cli_budget.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

const char *const BUDGET_OPTS_HELP =
    "keeping the cache in budget:\n"
    "  --kv-dtype T         store K and V as fp32 (default), fp16, bf16, int8 (one\n"
    "                       float32 scale per token and head) or q8_0 (blocks of 32\n"
    "                       int8 with one fp16 scale, as llama.cpp)\n"
    "  --window W           keep at most W tokens in the cache (evict the oldest)\n"
    "  --sink S             ...but always keep the first S positions (0 <= S < W)\n"
    "  --max-kv-mb X        stop decoding before the cache would exceed X MiB\n"
    "                       (X * 1048576 bytes)\n"
    "  --max-tokens N       stop decoding before the cache would hold more than N tokens\n";

void budget_opts_default(BudgetOpts *o) {
    memset(o, 0, sizeof *o);
    o->dtype = KVDT_FP32;
}

int budget_opts_parse(BudgetOpts *o, int argc, char **argv, int *i) {
    const char *opt = argv[*i], *v;
    long x;
    if (strcmp(opt, "--kv-dtype") == 0) {
        if (!(v = cli_value(argc, argv, i))) return 2;
        if (kvcache_dtype_parse(v, &o->dtype))
            return cli_fail("unknown --kv-dtype (fp32, fp16, bf16, int8, q8_0)", v);
    } else if (strcmp(opt, "--window") == 0) {
        if (!(v = cli_value(argc, argv, i)) || cli_long(opt, v, 1, 65536, &x)) return 2;
        o->window = (int)x;
    } else if (strcmp(opt, "--sink") == 0) {
        if (!(v = cli_value(argc, argv, i)) || cli_long(opt, v, 0, 65535, &x)) return 2;
        o->sink = (int)x;
        o->sink_given = 1;
    } else if (strcmp(opt, "--max-kv-mb") == 0) {
        if (!(v = cli_value(argc, argv, i)) || cli_double(opt, v, 0.0, 1e9, &o->max_kv_mb)) return 2;
        if (!(o->max_kv_mb > 0.0)) return cli_fail("--max-kv-mb must be > 0", v);
    } else if (strcmp(opt, "--max-tokens") == 0) {
        if (!(v = cli_value(argc, argv, i)) || cli_long(opt, v, 1, 65536, &o->max_tokens)) return 2;
    } else {
        return 0;
    }
    return 1;
}

int budget_opts_check(const BudgetOpts *o, int T, GenMode mode) {
    char buf[32];
    if (o->sink_given && o->window == 0) {
        snprintf(buf, sizeof buf, "--sink %d", o->sink);
        return cli_fail("--sink needs --window W (the window its sinks stay in)", buf);
    }
    if (o->window && o->sink >= o->window) {
        snprintf(buf, sizeof buf, "%d", o->sink);
        return cli_fail("--sink must be less than --window", buf);
    }
    if (o->window && mode != GEN_CACHE)
        return cli_fail("--window needs the cache", mode == GEN_RECOMPUTE ? "--no-cache" : "--article-bug");
    if (o->window && o->window < T) {
        snprintf(buf, sizeof buf, "%d", o->window);
        char what[96];
        snprintf(what, sizeof what, "--window must hold the prompt (%d tokens)", T);
        return cli_fail(what, buf);
    }
    return 0;
}

size_t budget_cap_bytes(const BudgetOpts *o, size_t bytes_per_token) {
    size_t cap = 0;
    if (o->max_kv_mb > 0.0) cap = (size_t)floor(o->max_kv_mb * 1048576.0);
    if (o->max_tokens > 0) {
        size_t t = (size_t)o->max_tokens * bytes_per_token;
        if (cap == 0 || t < cap) cap = t;
    }
    if ((o->max_kv_mb > 0.0 || o->max_tokens > 0) && cap == 0) cap = 1; /* a cap below one byte */
    return cap;
}

int budget_opts_apply(const BudgetOpts *o, Generator *g) {
    if (kvcache_set_dtype(&g->cache, o->dtype)) return -1;
    kvcache_set_max_bytes(&g->cache, budget_cap_bytes(o, kvcache_bytes_per_token(&g->cache)));
    g->window = o->window;
    g->sink = o->sink;
    return 0;
}

int budget_cap_reached(const Generator *g, int step, int T) {
    const KVCache *c = &g->cache;
    if (c->max_bytes == 0) return 0;
    int tokens = step == 0 ? T : generator_next_kv_tokens(g);
    size_t need = (size_t)tokens * kvcache_bytes_per_token(c);
    if (need <= c->max_bytes) return 0;
    fprintf(stderr,
            "kvscope: memory cap: stopped before %s %d: the cache would hold %d tokens = %zu bytes "
            "> cap %zu bytes\n",
            step == 0 ? "the prefill, step" : "decode step", step, tokens, need, c->max_bytes);
    return 1;
}
