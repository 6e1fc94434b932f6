/* cmd_frontier.c — `kvscope frontier`: quality against KV bytes per token for every lever
 * (frontier.h does the measuring), on texts of the corpus's validation split.
 * parse → check --out → load the model → check the levers against it → read the corpus →
 * the texts and the copy texts by rule → measure → the CSVs → commit → a table. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "corpus.h"
#include "frontier.h"
#include "outdir.h"

enum { MAX_LIST = 16 };

typedef struct {
    ModelArgs model;
    const char *corpus, *out, *policies;
    int budgets[MAX_LIST], nbudgets, groups[MAX_LIST], ngroups;
    int texts, copies, prompt, sinks, obs_window, pool, quiet, force;
    int npol;
    EvictPolicy pol[EVICT_COUNT];
} FrontierArgs;

static const Option FRONTIER_OPTIONS[] = {
    OPT_GROUP("frontier options"),
    OPT_STRING("--corpus", "FILE", FrontierArgs, corpus,
               "the text whose validation split (every 20th block of 8 KiB) is read"),
    OPT_INT("--texts", "N", FrontierArgs, texts, 1, 4096,
            "texts of N tokens (the context) taken evenly spaced from the split"),
    OPT_INT("--copies", "N", FrontierArgs, copies, 0, 4096,
            "texts that end by repeating a sentence they began with (0: none)"),
    OPT_INT_AUTO("--prompt", "P", FrontierArgs, prompt, 2, 65536, "3N/4",
                 "tokens of each text read in one prefill; the rest is decoded and scored"),
    OPT_INTS("--budgets", "K,K,...", FrontierArgs, budgets, nbudgets, 0, 1 << 20,
             "positions each head keeps under an eviction policy"),
    {.kind = OPT_KIND_INTS, .name = "--groups", .arg = "G,G,...", .field = offsetof(FrontierArgs, groups),
     .field2 = OPT_FIELD(FrontierArgs, ngroups, int), .cap = MAX_LIST, .lo = 0, .hi = 1 << 20,
     .dflt = "the three largest divisors of the heads below it (6 heads: 3,2,1)",
     .help = "K/V head groups the heads are mean-pooled into (each must divide the heads)"},
    OPT_STRING("--policies", "LIST", FrontierArgs, policies,
               "eviction policies, comma-separated: window, h2o, snapkv, oracle"),
    OPT_INT("--sinks", "S", FrontierArgs, sinks, 0, 65536, "first positions the window keeps"),
    OPT_INT("--obs-window", "W", FrontierArgs, obs_window, 0, 65536,
            "SnapKV's observation window: the last W prompt queries vote"),
    OPT_INT("--pool", "K", FrontierArgs, pool, 1, 255,
            "SnapKV's pooling kernel (odd; a max over it, as SnapKV's maxpool option)"),
    OPT_STRING("--out", "DIR", FrontierArgs, out, "output folder, replaced as a whole"),
    OPT_QUIET(FrontierArgs, quiet),
    OPT_FORCE(FrontierArgs, force),
    OPT_INCLUDE(FrontierArgs, model, MODEL_ONLY_OPTIONS),
    OPT_END,
};

static const Command FRONTIER = {
    "frontier", "[options]",
    "What quality each byte of KV cache buys: on texts of the validation split, every\n"
    "lever against the full fp32 cache, teacher-forced: KV storage types with and without\n"
    "a Hadamard rotation, eviction policies (window with sinks, H2O, SnapKV, an oracle) at\n"
    "several budgets, K/V heads mean-pooled into fewer groups. frontier.csv has, per lever,\n"
    "the KV bytes per token, the mean KL from the full cache's next-token distribution,\n"
    "top-1 agreement and bits per byte; mass.csv the attention weight each policy loses per\n"
    "layer and head; heavy.csv and heavy_fit.csv the accumulated attention by rank; copy.csv\n"
    "how well each policy keeps a repeated sentence; kept.csv one text's kept positions.\n",
    FRONTIER_OPTIONS,
    NULL,
};

/* --policies into a->pol. 0, or 2 after the error line naming the unknown name. */
static int parse_policies(FrontierArgs *a) {
    char buf[256];
    if (strlen(a->policies) >= sizeof buf) return cli_fail("--policies is too long", a->policies);
    strcpy(buf, a->policies);
    a->npol = 0;
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ",")) {
        EvictPolicy p;
        if (evict_policy_parse(s, &p))
            return cli_fail("unknown eviction policy (window, h2o, snapkv, oracle)", s);
        if (a->npol < EVICT_COUNT) a->pol[a->npol++] = p;
    }
    return 0;
}

/* Every budget, group, window against the model. 0, or 2 naming the bad value. */
static int check_levers(FrontierArgs *a, const Config *c) {
    char what[160], v[32];
    if (!a->prompt) a->prompt = 3 * c->N / 4;
    if (a->prompt >= c->N - 1) {
        snprintf(v, sizeof v, "%d", a->prompt);
        snprintf(what, sizeof what, "--prompt must leave 2 tokens of the context (%d) to decode", c->N);
        return cli_fail(what, v);
    }
    for (int i = 0; i < a->nbudgets; i++) {
        snprintf(v, sizeof v, "%d", a->budgets[i]);
        for (int k = 0; k < a->npol; k++) {
            EvictParams p = evict_params_default(a->pol[k], a->budgets[i]);
            p.sinks = a->sinks, p.obs_window = a->obs_window, p.pool = a->pool;
            const char *bad = evict_params_check(&p, c->N, a->prompt);
            if (!bad) continue;
            if (strstr(bad, "observation")) snprintf(v, sizeof v, "%d", a->obs_window);
            if (strstr(bad, "sinks")) snprintf(v, sizeof v, "%d", a->sinks);
            if (strstr(bad, "pool")) snprintf(v, sizeof v, "%d", a->pool);
            snprintf(what, sizeof what, "%s: %s (context %d, prompt %d)", evict_policy_name(a->pol[k]),
                     bad, c->N, a->prompt);
            return cli_fail(what, v);
        }
    }
    if (a->ngroups == 0) /* by default: the three largest divisors below NH */
        for (int g = c->NH - 1; g >= 1 && a->ngroups < 3; g--)
            if (c->NH % g == 0) a->groups[a->ngroups++] = g;
    for (int i = 0; i < a->ngroups; i++)
        if (a->groups[i] < 1 || c->NH % a->groups[i] != 0) {
            snprintf(v, sizeof v, "%d", a->groups[i]);
            snprintf(what, sizeof what, "--groups: a head grouping must divide the %d heads", c->NH);
            return cli_fail(what, v);
        }
    return 0;
}

/* The levers in order: full, precisions × rotation, policies × budgets, groups. */
static int build_cfgs(const FrontierArgs *a, const Config *c, FrontierCfg *cfg) {
    int n = 0;
    cfg[n++] = (FrontierCfg){.lever = LEVER_FULL, .dtype = DT_FP32, .kv_heads = c->NH};
    const int hs = c->C / c->NH, pow2 = hs > 0 && (hs & (hs - 1)) == 0;
    for (int d = DT_FP16; d < DT_COUNT; d++)
        for (int r = 0; r < 1 + pow2; r++) /* the rotation needs hs a power of two */
            cfg[n++] = (FrontierCfg){.lever = LEVER_PRECISION, .dtype = (Dtype)d, .rotate = r,
                                     .kv_heads = c->NH};
    for (int k = 0; k < a->npol; k++)
        for (int i = 0; i < a->nbudgets; i++) {
            FrontierCfg f = {.lever = LEVER_EVICT, .dtype = DT_FP32, .kv_heads = c->NH};
            f.ev = evict_params_default(a->pol[k], a->budgets[i]);
            f.ev.sinks = a->sinks, f.ev.obs_window = a->obs_window, f.ev.pool = a->pool;
            cfg[n++] = f;
        }
    for (int i = 0; i < a->ngroups; i++)
        cfg[n++] = (FrontierCfg){.lever = LEVER_HEADS, .dtype = DT_FP32, .kv_heads = a->groups[i]};
    return n;
}

/* Text i of n as T tokens: validation window ⌊i·W/n⌋, the start token first. */
static void plain_text(const Corpus *cp, int i, int n, int T, int bos, int *tok, int *tgt) {
    const size_t W = corpus_val_windows(cp, T);
    corpus_val_window(cp, (size_t)i * W / (size_t)n, T, bos, tok, tgt);
}

/* Copy text i of n: from validation window ⌊(i + ½)·W/n⌋, its first whole line of 30 to 90
 * bytes is the sentence; the text is the start token, the sentence, a newline, the
 * window's next bytes, and the sentence again at the end. Its length into *len (0: the
 * window has no such line). */
static void copy_text(const Corpus *cp, int i, int n, int T, int bos, int *tok, int *len) {
    const size_t W = corpus_val_windows(cp, T), w = ((size_t)2 * i + 1) * W / (2 * (size_t)n);
    const unsigned char *b = cp->val + w * (size_t)T;
    int s = 0, e;
    *len = 0;
    for (;;) {
        while (s < T && b[s] != '\n') s++;
        s++;
        for (e = s; e < T && b[e] != '\n'; e++) {}
        if (e >= T) return;
        if (e - s >= 30 && e - s <= 90) break;
        s = e;
    }
    const int L = e - s, start = bos >= 0;
    int p = 0;
    if (start) tok[p++] = bos;
    for (int j = 0; j < L; j++) tok[p++] = b[s + j];
    tok[p++] = '\n';
    for (int j = e + 1; p < T - L; j++) tok[p++] = j < T ? b[j] : b[j % T]; /* the filler */
    for (int j = 0; j < L; j++) tok[p++] = b[s + j];
    *len = L;
}

typedef struct {
    int ncfg;
    FrontierCfg cfg[128];
    FrontierAcc acc[128], copy[128];
    double *heavy;    /* (L, NH, T) Σ over texts of the sorted accumulated attention */
    unsigned char *kept; /* (ncfg, L, NH, N) the copy example's masks */
    float *kept_row;  /* (L, NH, N) the example's last query's full weights */
    int example_P, example_T, ncopies, ntexts;
    /* rotation: [layer][K, V][dtype][rotate] sums of frontier_quant_error */
    double qerr[8][3][DT_COUNT][2], qsig[8][3][DT_COUNT][2], qpeak[8][3][DT_COUNT][2];
    long qblocks[8][3][DT_COUNT][2];
    FrontierAcc *per_text, *per_copy; /* (texts, ncfg), (copies, ncfg): each text's own sums */
    int example[256], example_len;    /* the copy example's line */
} Results;

static void results_free(Results *r) {
    for (int i = 0; i < r->ncfg; i++) free(r->acc[i].mass), free(r->copy[i].mass);
    free(r->heavy);
    free(r->kept);
    free(r->kept_row);
    free(r->per_text);
    free(r->per_copy);
}

/* Sort a (n) descending (insertion: n is a context). */
static void sort_desc(double *a, int n) {
    for (int i = 1; i < n; i++) {
        double v = a[i];
        int j = i - 1;
        while (j >= 0 && a[j] < v) a[j + 1] = a[j], j--;
        a[j + 1] = v;
    }
}

/* An outlier channel planted in K (kv: a third tensor, K×): in each head the channel of
 * largest mean |K| times OUTLIER, as the channels large models grow. */
enum { OUTLIER = 16 };
static void plant_outliers(float *x, int T, int NH, int hs) {
    for (int h = 0; h < NH; h++) {
        int best = 0;
        double bs = -1.0;
        for (int i = 0; i < hs; i++) {
            double s = 0.0;
            for (int t = 0; t < T; t++) s += fabs(x[(size_t)t * NH * hs + h * hs + i]);
            if (s > bs) bs = s, best = i;
        }
        for (int t = 0; t < T; t++) x[(size_t)t * NH * hs + h * hs + best] *= OUTLIER;
    }
}

/* Why the rotation helps or not: each layer's K and V of the text through each type, and
 * K with an outlier channel planted. */
static int quant_errors(Model *m, Results *r, const int *tok, int T) {
    const Config *c = &m->cfg;
    const size_t n = (size_t)c->L * T * c->C;
    float *k = malloc(n * sizeof *k), *v = malloc(n * sizeof *v), *ko = malloc(n * sizeof *ko);
    const int hs = c->C / c->NH;
    if (hs < 1 || (hs & (hs - 1)) != 0 || c->L > 8) { /* no rotation to measure, or too deep */
        free(k), free(v), free(ko);
        return 0;
    }
    int rc = k && v && ko ? frontier_kv(m, tok, T, k, v) : -1;
    if (rc == 0) memcpy(ko, k, n * sizeof *k);
    for (int l = 0; l < c->L && rc == 0; l++) plant_outliers(ko + (size_t)l * T * c->C, T, c->NH, c->C / c->NH);
    const float *x[3] = {k, v, ko};
    for (int l = 0; l < c->L && rc == 0; l++)
        for (int kv = 0; kv < 3; kv++)
            for (int d = DT_FP16; d < DT_COUNT && rc == 0; d++)
                for (int rot = 0; rot < 2 && rc == 0; rot++)
                    rc = frontier_quant_error(x[kv] + (size_t)l * T * c->C, T, c->NH, c->C / c->NH,
                                              (Dtype)d, rot, &r->qerr[l][kv][d][rot], &r->qsig[l][kv][d][rot],
                                              &r->qpeak[l][kv][d][rot], &r->qblocks[l][kv][d][rot]);
    free(k);
    free(v);
    free(ko);
    return rc;
}

/* Every configuration over text tok; rows and logits are the reference's buffers. */
static int run_text(Model *m, Results *r, const int *tok, int T, int P, float *logits, float *rows,
                    int copy, int example) {
    const Config *c = &m->cfg;
    int rc = frontier_reference(m, tok, T, P, logits, rows);
    for (int k = 0; k < r->ncfg && rc == 0; k++) {
        if (copy && r->cfg[k].lever != LEVER_EVICT && r->cfg[k].lever != LEVER_FULL) continue;
        unsigned char *keep = example ? r->kept + (size_t)k * c->L * c->NH * c->N : NULL;
        rc = frontier_run(m, &r->cfg[k], tok, T, P, logits, rows, copy ? &r->copy[k] : &r->acc[k], keep);
    }
    if (rc == 0 && !copy) rc = quant_errors(m, r, tok, T);
    if (rc == 0 && !copy) { /* heavy hitters: this text's accumulated attention, sorted */
        double *acc = malloc((size_t)c->L * c->NH * T * sizeof *acc);
        if (!acc) return -1;
        frontier_accumulated(rows, c->L, c->NH, c->N, T, acc);
        for (int lh = 0; lh < c->L * c->NH; lh++) {
            sort_desc(acc + (size_t)lh * T, T);
            for (int j = 0; j < T; j++) r->heavy[(size_t)lh * T + j] += acc[(size_t)lh * T + j];
        }
        free(acc);
    }
    if (rc == 0 && example)
        for (int lh = 0; lh < c->L * c->NH; lh++)
            memcpy(r->kept_row + (size_t)lh * c->N, rows + ((size_t)lh * c->N + T - 2) * c->N,
                   (size_t)c->N * sizeof(float));
    return rc;
}

/* d = acc − d (sign 1) or d = acc (sign −1): a text's own sums, by difference. */
static void snapshot(FrontierAcc *d, const FrontierAcc *acc, int n, int sign) {
    for (int k = 0; k < n; k++) {
        if (sign < 0) {
            d[k] = acc[k];
            d[k].mass = NULL;
            continue;
        }
        d[k].kl = acc[k].kl - d[k].kl, d[k].bits = acc[k].bits - d[k].bits;
        d[k].bytes = acc[k].bytes - d[k].bytes, d[k].copied = acc[k].copied - d[k].copied;
        d[k].agree = acc[k].agree - d[k].agree, d[k].n = acc[k].n - d[k].n;
    }
}

static int measure_all(FrontierArgs *a, Model *m, const Corpus *cp, Results *r) {
    const Config *c = &m->cfg;
    const int T = c->N;
    const size_t lhN = (size_t)c->L * c->NH * c->N;
    int *tok = malloc(2 * (size_t)T * sizeof *tok);
    float *logits = malloc((size_t)T * c->V * sizeof *logits);
    float *rows = calloc(lhN * c->N, sizeof *rows);
    r->heavy = calloc((size_t)c->L * c->NH * T, sizeof *r->heavy);
    r->kept = calloc((size_t)r->ncfg * lhN, 1);
    r->kept_row = calloc(lhN, sizeof *r->kept_row);
    int rc = tok && logits && rows && r->heavy && r->kept && r->kept_row ? 0 : -1;
    for (int k = 0; k < r->ncfg && rc == 0; k++)
        if (r->cfg[k].lever == LEVER_EVICT &&
            (!(r->acc[k].mass = calloc((size_t)c->L * c->NH, sizeof(double))) ||
             !(r->copy[k].mass = calloc((size_t)c->L * c->NH, sizeof(double)))))
            rc = -1;
    r->per_text = calloc((size_t)a->texts * r->ncfg, sizeof *r->per_text);
    r->per_copy = calloc((size_t)(a->copies + 1) * r->ncfg, sizeof *r->per_copy);
    if (!r->per_text || !r->per_copy) rc = -1;
    for (int i = 0; i < a->texts && rc == 0; i++) {
        plain_text(cp, i, a->texts, T, c->bos, tok, tok + T);
        snapshot(r->per_text + (size_t)i * r->ncfg, r->acc, r->ncfg, -1);
        rc = run_text(m, r, tok, T, a->prompt, logits, rows, 0, 0);
        snapshot(r->per_text + (size_t)i * r->ncfg, r->acc, r->ncfg, 1);
        r->ntexts++;
    }
    for (int i = 0; i < a->copies && rc == 0; i++) {
        int len;
        copy_text(cp, i, a->copies, T, c->bos, tok, &len);
        if (len == 0) continue;
        const int first = r->ncopies == 0;
        FrontierAcc *mine = r->per_copy + (size_t)r->ncopies * r->ncfg;
        snapshot(mine, r->copy, r->ncfg, -1);
        rc = run_text(m, r, tok, T, T - len, logits, rows, 1, first);
        snapshot(mine, r->copy, r->ncfg, 1);
        if (first) {
            r->example_P = T - len, r->example_T = T, r->example_len = len < 256 ? len : 256;
            memcpy(r->example, tok + T - len, (size_t)r->example_len * sizeof *tok);
        }
        r->ncopies++;
    }
    free(tok);
    free(logits);
    free(rows);
    return rc;
}

/* ---- files ---------------------------------------------------------------------- */

static void write_frontier(FILE *f, const Results *r) {
    fprintf(f, "lever,label,dtype,rotate,policy,budget,kv_heads,bytes_per_token,kl_bits,top1,"
               "bits_per_byte,predictions\n");
    for (int k = 0; k < r->ncfg; k++) {
        const FrontierCfg *c = &r->cfg[k];
        const FrontierAcc *a = &r->acc[k];
        char label[64];
        frontier_cfg_label(c, label, sizeof label);
        fprintf(f, "%s,%s,%s,%d,%s,%d,%d,%.1f,%.6g,%.6f,%.6f,%ld\n", frontier_lever_name(c->lever),
                label, dtype_name(c->dtype), c->rotate,
                c->lever == LEVER_EVICT ? evict_policy_name(c->ev.policy) : "none",
                c->lever == LEVER_EVICT ? c->ev.budget : 0, c->kv_heads, a->bytes / a->n, a->kl / a->n,
                (double)a->agree / a->n, a->bits / a->n, a->n);
    }
}

static void write_mass(FILE *f, const Results *r, const Config *cfg) {
    fprintf(f, "policy,budget,layer,head,mass_lost\n");
    for (int k = 0; k < r->ncfg; k++) {
        const FrontierCfg *c = &r->cfg[k];
        if (c->lever != LEVER_EVICT) continue;
        for (int lh = 0; lh < cfg->L * cfg->NH; lh++)
            fprintf(f, "%s,%d,%d,%d,%.6f\n", evict_policy_name(c->ev.policy), c->ev.budget,
                    lh / cfg->NH, lh % cfg->NH, r->acc[k].mass[lh] / r->acc[k].steps);
    }
}

static void write_heavy(FILE *f, FILE *fit, const Results *r, const Config *c) {
    const int T = c->N;
    double *y = malloc((size_t)T * sizeof *y);
    fprintf(f, "layer,rank,accumulated\n");
    fprintf(fit, "layer,head,slope,r2_power,r2_exp\n");
    for (int l = 0; l < c->L; l++) {
        for (int j = 0; j < T; j++) {
            double s = 0.0;
            for (int h = 0; h < c->NH; h++) s += r->heavy[((size_t)l * c->NH + h) * T + j];
            fprintf(f, "%d,%d,%.6f\n", l, j + 1, s / (c->NH * r->ntexts));
        }
        for (int h = 0; h < c->NH && y; h++) {
            double slope, r2p, r2e;
            for (int j = 0; j < T; j++) y[j] = r->heavy[((size_t)l * c->NH + h) * T + j] / r->ntexts;
            frontier_fit(y, T, &slope, &r2p, &r2e);
            fprintf(fit, "%d,%d,%.4f,%.4f,%.4f\n", l, h, slope, r2p, r2e);
        }
    }
    free(y);
}

static void write_copy(FILE *f, const Results *r) {
    fprintf(f, "label,policy,budget,bits_per_byte,top1,copied,predictions\n");
    for (int k = 0; k < r->ncfg; k++) {
        const FrontierCfg *c = &r->cfg[k];
        const FrontierAcc *a = &r->copy[k];
        if (a->n == 0) continue;
        char label[64];
        frontier_cfg_label(c, label, sizeof label);
        fprintf(f, "%s,%s,%d,%.6f,%.6f,%.6f,%ld\n", c->lever == LEVER_FULL ? "full" : label,
                c->lever == LEVER_EVICT ? evict_policy_name(c->ev.policy) : "full",
                c->lever == LEVER_EVICT ? c->ev.budget : 0, a->bits / a->n, (double)a->agree / a->n,
                a->copied / a->n, a->n);
    }
}

static void write_kept(FILE *f, const Results *r, const Config *cfg) {
    fprintf(f, "policy,budget,layer,head,position,kept,weight\n");
    const int t = r->example_T - 2; /* the last decode step's query */
    for (int k = 0; k < r->ncfg && r->ncopies; k++) {
        const FrontierCfg *c = &r->cfg[k];
        if (c->lever != LEVER_EVICT) continue;
        const unsigned char *keep = r->kept + (size_t)k * cfg->L * cfg->NH * cfg->N;
        for (int lh = 0; lh < cfg->L * cfg->NH; lh++)
            for (int j = 0; j <= t; j++)
                fprintf(f, "%s,%d,%d,%d,%d,%d,%.6f\n", evict_policy_name(c->ev.policy), c->ev.budget,
                        lh / cfg->NH, lh % cfg->NH, j, keep[(size_t)lh * cfg->N + j] != 0,
                        r->kept_row[(size_t)lh * cfg->N + j]);
    }
}

static void write_per_text(FILE *f, const Results *r, const FrontierAcc *per, int n, int copy) {
    fprintf(f, copy ? "text,label,bits_per_byte,top1,copied\n" : "text,label,kl_bits,top1,bits_per_byte\n");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < r->ncfg; k++) {
            const FrontierAcc *a = per + (size_t)i * r->ncfg + k;
            char label[64];
            if (a->n == 0) continue;
            frontier_cfg_label(&r->cfg[k], label, sizeof label);
            if (copy) fprintf(f, "%d,%s,%.6f,%.6f,%.6f\n", i, k ? label : "full", a->bits / a->n,
                              (double)a->agree / a->n, a->copied / a->n);
            else fprintf(f, "%d,%s,%.6g,%.6f,%.6f\n", i, label, a->kl / a->n, (double)a->agree / a->n,
                         a->bits / a->n);
        }
}

static void write_rotation(FILE *f, const Results *r, const Config *c) {
    fprintf(f, "layer,tensor,dtype,rotate,rel_error,block_peak\n");
    for (int l = 0; l < c->L; l++)
        for (int kv = 0; kv < 3; kv++)
            for (int d = DT_FP16; d < DT_COUNT; d++)
                for (int rot = 0; rot < 2; rot++)
                    fprintf(f, "%d,%s,%s,%d,%.6g,%.4f\n", l, kv == 2 ? "K_outlier" : kv ? "V" : "K", dtype_name((Dtype)d), rot,
                            sqrt(r->qerr[l][kv][d][rot] / r->qsig[l][kv][d][rot]),
                            r->qpeak[l][kv][d][rot] / (double)r->qblocks[l][kv][d][rot]);
}

static int write_all(const FrontierArgs *a, const Results *r, const Config *c, OutDir *od) {
    static const char *const names[] = {"frontier.csv", "mass.csv", "heavy.csv", "heavy_fit.csv",
                                        "copy.csv", "kept.csv", "summary.csv", "rotation.csv",
                                        "texts.csv", "copy_texts.csv", "copy_example.txt"};
    enum { NF = 11 };
    FILE *f[NF] = {0};
    char err[8400];
    int rc = cli_outdir_begin(od), bad = 0;
    if (rc) return rc;
    for (int i = 0; i < NF && rc == 0; i++)
        if (!(f[i] = outdir_fopen(od, names[i], err, sizeof err))) rc = cli_error(err);
    if (rc == 0) {
        write_frontier(f[0], r);
        write_mass(f[1], r, c);
        write_heavy(f[2], f[3], r, c);
        write_copy(f[4], r);
        write_kept(f[5], r, c);
        fprintf(f[6], "key,value\ntexts,%d\ntokens,%d\nprompt,%d\npredictions_per_text,%d\n"
                      "copies,%d\ncopy_example_prompt,%d\nheads,%d\nlayers,%d\nhead_size,%d\n"
                      "sinks,%d\nobs_window,%d\npool,%d\nstart_token,%d\n",
                r->ntexts, c->N, a->prompt, c->N - 1 - a->prompt, r->ncopies, r->example_P, c->NH,
                c->L, c->C / c->NH, a->sinks, a->obs_window, a->pool, c->bos >= 0);
    }
    if (rc == 0) {
        write_rotation(f[7], r, c);
        write_per_text(f[8], r, r->per_text, r->ntexts, 0);
        write_per_text(f[9], r, r->per_copy, r->ncopies, 1);
        for (int i = 0; i < r->example_len; i++) fputc(r->example[i], f[10]);
        fputc('\n', f[10]);
    }
    for (int i = 0; i < NF; i++)
        if (f[i] && file_close(f[i]) != 0) bad = 1;
    return cli_outdir_end(od, rc, bad);
}

static void print_table(const Results *r) {
    printf("%-16s %10s %9s %7s %9s\n", "lever", "B/token", "KL bits", "top-1", "bits/B");
    for (int k = 0; k < r->ncfg; k++) {
        char label[64];
        const FrontierAcc *a = &r->acc[k];
        frontier_cfg_label(&r->cfg[k], label, sizeof label);
        printf("%-16s %10.1f %9.4f %7.3f %9.4f\n", label, a->bytes / a->n, a->kl / a->n,
               (double)a->agree / a->n, a->bits / a->n);
    }
}

static int measure(FrontierArgs *a, OutDir *od) {
    Loaded ld;
    Corpus cp;
    char err[4600];
    int rc = model_args_load(&a->model, 0, &ld);
    if (rc) return rc;
    Results *r = calloc(1, sizeof *r);
    if (!r) rc = cli_fail("out of memory", "frontier");
    if (rc == 0 && (rc = check_levers(a, &ld.model.cfg)) == 0) {
        if (corpus_load(&cp, a->corpus, err, sizeof err)) rc = cli_fail("--corpus", err);
        else if (corpus_val_windows(&cp, ld.model.cfg.N) < 1) {
            rc = cli_fail("--corpus has no validation window of the context", a->corpus);
            corpus_free(&cp);
        } else {
            r->ncfg = build_cfgs(a, &ld.model.cfg, r->cfg);
            const int m = measure_all(a, &ld.model, &cp, r);
            if (m) rc = cli_fail(m == -1 ? "out of memory or a failed step" : "non-finite logits", "frontier");
            else if ((rc = write_all(a, r, &ld.model.cfg, od)) == 0 && !a->quiet) {
                print_table(r);
                printf("%d texts of %d tokens (prompt %d), %d copy texts; wrote %s/\n", r->ntexts,
                       ld.model.cfg.N, a->prompt, r->ncopies, a->out);
            }
            corpus_free(&cp);
        }
    }
    if (r) results_free(r);
    free(r);
    loaded_free(&ld);
    return rc;
}

int cmd_frontier(int argc, char **argv) {
    FrontierArgs a = {.corpus = "build/corpus/kjv.txt", .out = "kvscope_frontier",
                      .policies = "window,h2o,snapkv,oracle", .texts = 16, .copies = 16,
                      .budgets = {32, 64, 128}, .nbudgets = 3,
                      .sinks = 4, .obs_window = 16, .pool = 5};
    model_args_default(&a.model);
    int rc = opts_parse(&FRONTIER, argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    if ((rc = parse_policies(&a))) return rc;
    if (a.nbudgets * a.npol + a.ngroups > 100) return cli_fail("too many levers", "--budgets");
    OutDir od;
    if ((rc = cli_outdir_check(&od, a.out, "frontier", "--out", a.force ? OUTDIR_FORCE : 0)) ||
        (rc = cli_outdir_spares(&od, "--model", a.model.model_dir)) ||
        (rc = cli_outdir_spares(&od, "--corpus", a.corpus)))
        return rc;
    return measure(&a, &od);
}
