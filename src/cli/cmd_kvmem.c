/* cmd_kvmem.c — `kvscope kvmem`: the KV-cache size of real models.
 * Prints bytes per token, at a length and at full context for the presets or a shape
 * given by flags; --out writes a sweep over lengths (for the model-comparison chart),
 * a markdown table and key,value pairs for the lessons. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "kvmem.h"
#include "numfmt.h"
#include "outdir.h"

enum { KVMEM_MAX_LENGTHS = 256 };

typedef struct {
    const KvShape *preset;      /* --preset NAME */
    int L, NH, kv, hs, N;       /* the shape flags; 0: not given */
    int tokens;                 /* -1: the context */
    int batch;
    Dtype dt;
    const char *out;
    int force;
    int lengths[KVMEM_MAX_LENGTHS], n_lengths;
    /* from the options: the shape reported, and whether it is one model or the presets */
    KvShape shape;
    int have_model, have_shape; /* a preset was named; a shape flag was given */
    char label[64];             /* "llama-2-7b, modified" when flags change a preset */
} KvmemArgs;

static int parse_preset(const char *s, void *f) {
    return (*(const KvShape **)f = kvmem_preset(s)) ? 0 : -1;
}
static int parse_kv_dtype(const char *s, void *f) { return dtype_parse(s, f); }
static const char *show_kv_dtype(const void *f) { return dtype_name(*(const Dtype *)f); }

/* A shape flag: 0 means not given, then the preset's value. */
#define SHAPE(nm, a, m, max, h) OPT_INT_AUTO(nm, a, KvmemArgs, m, 1, max, "the preset's", h)

static const Option KVMEM_OPTIONS[] = {
    OPT_GROUP("kvmem options"),
    OPT_CHOICE("--preset", "NAME", KvmemArgs, preset, parse_preset, NULL,
               "gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-2-7b, llama-3-8b, mistral-7b, qwen2-7b",
               "gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-2-7b (MHA); llama-3-8b, "
               "mistral-7b, qwen2-7b (GQA); the shape flags below "
               "override the preset's values"),
    SHAPE("--layers", "L", L, 4096, "layers"),
    SHAPE("--heads", "NH", NH, 4096, "attention (query) heads"),
    OPT_INT_AUTO("--kv-heads", "K", KvmemArgs, kv, 1, 4096, "= heads",
                 "heads that keep K and V (fewer is GQA/MQA)"),
    SHAPE("--head-dim", "hs", hs, 65536, "head size"),
    OPT_INT_AUTO("--ctx", "N", KvmemArgs, N, 1, 1 << 24, "the preset's, or --tokens", "context length"),
    OPT_INT_AUTO("--tokens", "T", KvmemArgs, tokens, 0, 1 << 24, "the context", "length to report"),
    OPT_INT("--batch", "B", KvmemArgs, batch, 1, 1 << 20, "sequences in the batch"),
    OPT_CHOICE("--dtype", "D", KvmemArgs, dt, parse_kv_dtype, show_kv_dtype, "fp32, fp16, bf16, int8, q8_0",
               "fp32, fp16, bf16, int8 (a float32 scale a head) or q8_0 (an fp16 scale a block of 32)"),
    OPT_STRING("--out", "DIR", KvmemArgs, out,
               "write kvmem.csv (bytes per model over --lengths), models.md and values.csv "
               "(key,value) into DIR, replaced as a whole"),
    OPT_INTS("--lengths", "LIST", KvmemArgs, lengths, n_lengths, 0, 1 << 24, "tokens of the sweep"),
    OPT_FORCE(KvmemArgs, force),
    OPT_END,
};

static const Command KVMEM = {
    "kvmem", "[options]",
    "KV-cache size = 2 (K and V) x layers x kv_heads x head_dim x tokens x batch x bytes\n"
    "per element; int8 and q8_0 add their scales, as the cache stores them. Without\n"
    "--preset or a shape, prints every preset.\n",
    KVMEM_OPTIONS, NULL,
};

/* The shape to report, from the preset and the flags. 0, or 2 after the error line. */
static int resolve_shape(KvmemArgs *a) {
    a->have_model = a->preset != NULL;
    a->have_shape = a->L || a->NH || a->kv || a->hs; /* a shape that differs from every preset */
    if (!a->preset && !a->have_shape) {
        if (a->N) return cli_fail("--ctx needs a shape", "--preset or --layers/--heads/--head-dim");
        return 0; /* the table of presets */
    }
    if (a->preset) {
        a->shape = *a->preset;
    } else {
        a->shape.name = "custom";
        if (!a->L) return cli_fail("a custom shape needs", "--layers");
        if (!a->NH) return cli_fail("a custom shape needs", "--heads");
        if (!a->hs) return cli_fail("a custom shape needs", "--head-dim");
        if (!a->N && a->tokens < 1) return cli_fail("a custom shape needs", "--ctx (or --tokens)");
        if (!a->N) a->N = a->tokens;
    }
    if (a->have_shape && a->preset) {
        snprintf(a->label, sizeof a->label, "%s, modified", a->preset->name);
        a->shape.name = a->label;
    }
    if (a->L) a->shape.L = a->L;
    if (a->NH) a->shape.NH = a->NH;
    if (a->hs) a->shape.hs = a->hs;
    if (a->N) a->shape.N = a->N;
    /* a GQA preset keeps its own KV heads unless --kv-heads or --heads changes them */
    if (a->kv) a->shape.kv_heads = a->kv;
    else if (!a->preset || a->NH) a->shape.kv_heads = a->shape.NH;
    char val[64], what[96];
    const char *bad = kvmem_check(&a->shape);
    if (bad) {
        snprintf(val, sizeof val, "heads %d, kv heads %d", a->shape.NH, a->shape.kv_heads);
        return cli_fail(bad, val);
    }
    if (a->tokens <= a->shape.N) return 0;
    snprintf(val, sizeof val, "%d", a->tokens);
    snprintf(what, sizeof what, "--tokens past the context (%d)", a->shape.N);
    return cli_fail(what, val);
}

static int parse_kvmem(int argc, char **argv, KvmemArgs *a) {
    memset(a, 0, sizeof *a);
    a->tokens = -1;
    a->batch = 1;
    a->dt = DT_FP16;
    for (int i = 0; i <= 16; i++) a->lengths[i] = 256 * i;
    a->n_lengths = 17;
    int rc = opts_parse(&KVMEM, argc, argv, a);
    return rc ? rc : resolve_shape(a);
}

/* bytes for s; exits the caller's flow with 2 on overflow (checked by the caller). */
static int bytes_of(const KvShape *s, long tokens, long batch, Dtype dt, uint64_t *out) {
    if (kvmem_bytes(s, (uint64_t)tokens, (uint64_t)batch, dt, out) == 0) return 0;
    char v[96];
    snprintf(v, sizeof v, "%s at %ld tokens, batch %ld", s->name, tokens, batch);
    return cli_fail("KV size does not fit in 64 bits", v);
}

static void print_line(const char *what, uint64_t b) {
    char d[40], h[32];
    printf("  %-22s %22s B  (%s)\n", what, group_digits(b, d, sizeof d), human_bytes((double)b, h, sizeof h));
}

/* The product behind the numbers: bytes a value for the float types, bytes a row (values
 * and scales) for the 8-bit ones. */
static void print_formula(const KvShape *s, int batch, Dtype dt) {
    const size_t C = (size_t)s->kv_heads * (size_t)s->hs, row = dtype_row_bytes(dt, C, (size_t)s->kv_heads);
    if (dtype_is_weight(dt))
        printf("  = 2 x %d x %d x %d x tokens x %d x %zu bytes\n", s->L, s->kv_heads, s->hs, batch, row / C);
    else
        printf("  = 2 x %d x tokens x %d x %zu bytes a row (%d x %d values as %s, with their scales)\n",
               s->L, batch, row, s->kv_heads, s->hs, dtype_name(dt));
}

static int print_one(const KvmemArgs *a) {
    const KvShape *s = &a->shape;
    long T = a->tokens >= 0 ? a->tokens : s->N;
    uint64_t per, at, full;
    if (bytes_of(s, 1, a->batch, a->dt, &per) || bytes_of(s, T, a->batch, a->dt, &at) ||
        bytes_of(s, s->N, a->batch, a->dt, &full))
        return 2;
    printf("%s: layers %d, heads %d, kv heads %d, head dim %d, context %d; %s, batch %d\n",
           s->name, s->L, s->NH, s->kv_heads, s->hs, s->N, dtype_name(a->dt), a->batch);
    print_formula(s, a->batch, a->dt);
    char what[64];
    print_line("per token", per);
    snprintf(what, sizeof what, "at %ld tokens", T);
    print_line(what, at);
    snprintf(what, sizeof what, "at full context (%d)", s->N);
    print_line(what, full);
    if (s->kv_heads < s->NH)
        printf("  grouped-query attention: %d/%d = %dx smaller than with all %d heads\n", s->NH,
               s->kv_heads, s->NH / s->kv_heads, s->NH);
    return 0;
}

static int print_presets(const KvmemArgs *a) {
    int n;
    const KvShape *p = kvmem_presets(&n);
    printf("KV cache, %s, batch %d%s\n", dtype_name(a->dt), a->batch,
           a->tokens >= 0 ? "" : " (at each model's full context)");
    char at[32];
    if (a->tokens >= 0) snprintf(at, sizeof at, "at %d tokens", a->tokens);
    else snprintf(at, sizeof at, "at context");
    printf("%-12s %6s %6s %9s %5s %7s %12s %22s %10s\n", "model", "layers", "heads", "kv_heads",
           "hs", "context", "per token", at, "");
    for (int i = 0; i < n; i++) {
        long T = a->tokens >= 0 ? a->tokens : p[i].N;
        uint64_t per, at;
        if (bytes_of(&p[i], 1, a->batch, a->dt, &per) || bytes_of(&p[i], T, a->batch, a->dt, &at))
            return 2;
        char h1[32], h2[32], d[40];
        printf("%-12s %6d %6d %9d %5d %7d %12s %22s %10s%s\n", p[i].name, p[i].L, p[i].NH,
               p[i].kv_heads, p[i].hs, p[i].N, human_bytes((double)per, h1, sizeof h1),
               group_digits(at, d, sizeof d), human_bytes((double)at, h2, sizeof h2),
               T > p[i].N ? "  (past its context)" : "");
    }
    return 0;
}

/* The models of the files: every preset, and the shape given when it is none of them. */
static int models_of(const KvmemArgs *a, KvShape *models) {
    int n, m = 0;
    const KvShape *p = kvmem_presets(&n);
    for (int i = 0; i < n; i++) models[m++] = p[i];
    if (a->have_shape) models[m++] = a->shape;
    return m;
}

/* kvmem.csv: one column per model over the lengths; a cell past a model's context is
 * left empty (gnuplot skips it). */
static int write_sweep(const KvmemArgs *a, const OutDir *od, const KvShape *models, int m) {
    char err[8400];
    uint64_t b;
    FILE *f = outdir_fopen(od, "kvmem.csv", err, sizeof err);
    if (!f) return -1;
    fprintf(f, "tokens");
    for (int j = 0; j < m; j++) fprintf(f, ",%s", models[j].name);
    fprintf(f, "\n");
    for (int i = 0; i < a->n_lengths; i++) {
        const int T = a->lengths[i];
        fprintf(f, "%d", T);
        for (int j = 0; j < m; j++) {
            if (T <= models[j].N && kvmem_bytes(&models[j], (uint64_t)T, (uint64_t)a->batch, a->dt, &b) == 0)
                fprintf(f, ",%llu", (unsigned long long)b);
            else fputc(',', f);
        }
        fprintf(f, "\n");
    }
    return file_close(f);
}

/* models.md: the table of the models' shapes and bytes. */
static int write_models(const KvmemArgs *a, const OutDir *od, const KvShape *models, int m) {
    char err[8400], d[40], h[32], h2[32];
    FILE *f = outdir_fopen(od, "models.md", err, sizeof err);
    if (!f) return -1;
    fprintf(f, "| model | layers | heads | KV heads | head dim | context | KV per token (%s) | KV at full context |\n",
            dtype_name(a->dt));
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int j = 0; j < m; j++) {
        const KvShape *s = &models[j];
        uint64_t per, full;
        if (kvmem_bytes(s, 1, (uint64_t)a->batch, a->dt, &per) ||
            kvmem_bytes(s, (uint64_t)s->N, (uint64_t)a->batch, a->dt, &full)) {
            fclose(f);
            return -1;
        }
        fprintf(f, "| %s | %d | %d | %d | %d | %d | %s | %s B (%s) |\n", s->name, s->L, s->NH,
                s->kv_heads, s->hs, s->N, human_bytes((double)per, h, sizeof h),
                group_digits(full, d, sizeof d), human_bytes((double)full, h2, sizeof h2));
    }
    return file_close(f);
}

/* Bytes as two keys: "<key>_bytes,N" and "<key>,N in KiB/MiB/GiB". */
static void bytes_pair(FILE *f, const char *model, const char *key, uint64_t b) {
    char h[32];
    fprintf(f, "%s%s_bytes,%llu\n", model, key, (unsigned long long)b);
    fprintf(f, "%s%s,%s\n", model, key, human_bytes((double)b, h, sizeof h));
}

/* values.csv: key,value pairs a lesson quotes — every model per token, at 1024 tokens
 * and at its context, and the source article's one-head LLaMA figure next to the right
 * one. */
static int write_values(const KvmemArgs *a, const OutDir *od, const KvShape *models, int m) {
    char err[8400];
    const uint64_t B = (uint64_t)a->batch;
    FILE *f = outdir_fopen(od, "values.csv", err, sizeof err);
    if (!f) return -1;
    fprintf(f, "key,value\ndtype,%s\nbatch,%d\n", dtype_name(a->dt), a->batch);
    int bad = 0;
    for (int j = 0; j < m && !bad; j++) {
        const KvShape *s = &models[j];
        uint64_t per, full, k1;
        bad = kvmem_bytes(s, 1, B, a->dt, &per) || kvmem_bytes(s, (uint64_t)s->N, B, a->dt, &full) ||
              kvmem_bytes(s, 1024, B, a->dt, &k1);
        if (bad) break;
        bytes_pair(f, s->name, "_per_token", per);
        bytes_pair(f, s->name, "_1024", k1);
        bytes_pair(f, s->name, "_context", full);
    }
    const KvShape *ll = kvmem_preset("llama-2-7b");
    KvShape one_head = *ll;
    one_head.NH = one_head.kv_heads = 1;
    uint64_t wrong, right;
    if (bad || kvmem_bytes(&one_head, 2048, B, a->dt, &wrong) || kvmem_bytes(ll, 2048, B, a->dt, &right)) {
        fclose(f);
        return -1;
    }
    bytes_pair(f, "llama-2-7b", "_2048", right);
    bytes_pair(f, "article_llama", "_2048", wrong);
    fprintf(f, "article_missing_factor,%llu\n", (unsigned long long)(right / wrong));
    return file_close(f);
}

/* The three files of --out. 0, or -1 (errno of a failed write). */
static int write_files(const KvmemArgs *a, const OutDir *od) {
    KvShape models[8];
    const int m = models_of(a, models);
    return write_sweep(a, od, models, m) || write_models(a, od, models, m) ||
                   write_values(a, od, models, m)
               ? -1
               : 0;
}

int cmd_kvmem(int argc, char **argv) {
    KvmemArgs a;
    int rc = parse_kvmem(argc, argv, &a);
    if (rc) return rc == OPTS_HELP ? 0 : rc;
    OutDir od;
    if (a.out && (rc = cli_outdir_check(&od, a.out, "kvmem", "--out", a.force ? OUTDIR_FORCE : 0)))
        return rc;
    rc = (a.have_model || a.have_shape) ? print_one(&a) : print_presets(&a);
    if (rc == 0 && a.out && (rc = cli_outdir_begin(&od)) == 0) {
        if (write_files(&a, &od) != 0) {
            fprintf(stderr, "kvscope: --out: cannot write its files (%s): %s\n", write_error_text(errno),
                    a.out);
            rc = 2;
        }
        if ((rc = cli_outdir_end(&od, rc, 0)) == 0)
            printf("wrote %s/ (kvmem.csv, models.md, values.csv)\n", a.out);
    }
    return rc;
}
