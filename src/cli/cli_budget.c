/* cli_budget.c — parsing and applying --kv-dtype, --window/--sink, --max-kv-mb/--max-tokens. */
#include "cli_budget.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int parse_dtype(const char *s, void *f) { return dtype_parse(s, f); }
static const char *show_dtype(const void *f) { return dtype_name(*(const Dtype *)f); }

/* "K,V": a grouping each (none, token, channel); one alone sets both. */
static int parse_sim(const char *s, void *f) {
    KVQuantGroup *g = f;
    char k[16];
    const char *comma = strchr(s, ',');
    const char *v = comma ? comma + 1 : s;
    if (comma && (size_t)(comma - s) >= sizeof k) return -1;
    snprintf(k, sizeof k, "%.*s", comma ? (int)(comma - s) : (int)sizeof k - 1, s);
    return kvcache_quant_group_parse(k, &g[0]) || kvcache_quant_group_parse(v, &g[1]) ? -1 : 0;
}

static const char *show_sim(const void *f) {
    static const char *const pairs[KVQ_COUNT][KVQ_COUNT] = {
        {"none,none", "none,token", "none,channel"},
        {"token,none", "token,token", "token,channel"},
        {"channel,none", "channel,token", "channel,channel"},
    };
    const KVQuantGroup *g = f;
    return (unsigned)g[0] < KVQ_COUNT && (unsigned)g[1] < KVQ_COUNT ? pairs[g[0]][g[1]] : "?";
}

const Option WINDOW_OPTIONS[] = {
    OPT_INT_AUTO("--window", "W", BudgetOpts, window, 1, 65536, "keep all",
                 "keep at most W tokens in the cache, evicting the oldest"),
    {.kind = OPT_KIND_INT, .name = "--sink", .arg = "S", .field = OPT_FIELD(BudgetOpts, sink, int),
     .lo = 0, .hi = 65535, .help = "...but always keep the first S positions (S < W)",
     .note = offsetof(BudgetOpts, sink_given), .has_note = 1},
    OPT_END,
};

const Option BUDGET_OPTIONS[] = {
    OPT_GROUP("keeping the cache in budget"),
    OPT_CHOICE("--kv-dtype", "T", BudgetOpts, dtype, parse_dtype, show_dtype,
               "fp32, fp16, bf16, int8, q8_0",
               "store K and V as fp32, fp16, bf16, int8 (one float32 scale per token and head) "
               "or q8_0 (blocks of 32 int8 with one fp16 scale, as llama.cpp)"),
    OPT_CHOICE("--int8-sim", "K,V", BudgetOpts, sim, parse_sim, show_sim,
               "none, token or channel, for K then V",
               "store fp32 but read K and V back through int8, one scale per token and head "
               "(token: what --kv-dtype int8 stores) or per channel over every position "
               "held, re-quantized at each step (channel): the rounding, not the bytes"),
    OPT_INCLUDE_HERE(WINDOW_OPTIONS),
    {.kind = OPT_KIND_DOUBLE, .name = "--max-kv-mb", .arg = "X",
     .field = OPT_FIELD(BudgetOpts, max_kv_mb, double), .lo = 0, .hi = 1e9,
     .flags = OPTF_ABOVE_LO, .dflt = "no cap",
     .help = "stop decoding before the cache would exceed X MiB (X * 1048576 bytes)"},
    OPT_INT_AUTO("--max-tokens", "N", BudgetOpts, max_tokens, 1, 65536, "no cap",
                 "stop decoding before the cache would hold more than N tokens"),
    OPT_END,
};

void budget_opts_default(BudgetOpts *o) {
    memset(o, 0, sizeof *o);
    o->dtype = DT_FP32;
}

int budget_opts_check(const BudgetOpts *o, GenMode mode) {
    char buf[32];
    if (o->sink_given && o->window == 0) {
        snprintf(buf, sizeof buf, "--sink %d", o->sink);
        return cli_fail("--sink needs --window W (the window its sinks stay in)", buf);
    }
    if (o->window && o->sink >= o->window) {
        snprintf(buf, sizeof buf, "%d", o->sink);
        return cli_fail("--sink must be less than --window", buf);
    }
    const int sim = o->sim[0] != KVQ_NONE || o->sim[1] != KVQ_NONE;
    if (sim && o->dtype != DT_FP32)
        return cli_fail("--int8-sim reads an fp32 cache back: it needs --kv-dtype fp32, not",
                        dtype_name(o->dtype));
    if (sim && mode != GEN_CACHE)
        return cli_fail("--int8-sim needs the cache",
                        mode == GEN_RECOMPUTE ? "--no-cache" : "--article-bug");
    if (o->window && mode != GEN_CACHE)
        return cli_fail("--window needs the cache", mode == GEN_RECOMPUTE ? "--no-cache" : "--article-bug");
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
    if ((o->sim[0] != KVQ_NONE || o->sim[1] != KVQ_NONE) &&
        kvcache_set_int8_sim(&g->cache, o->sim[0], o->sim[1]))
        return -1;
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
