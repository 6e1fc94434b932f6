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
#include "outdir.h"

static const char *const KVMEM_HELP =
    "usage: kvscope kvmem [options]\n"
    "KV-cache size = 2 (K and V) x layers x kv_heads x head_dim x tokens x batch x bytes\n"
    "per element. Without --preset or a shape, prints every preset.\n\n"
    "kvmem options:\n"
    "  --preset NAME     gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-2-7b\n"
    "                    (the shape flags below override the preset's values)\n"
    "  --layers L        layers\n"
    "  --heads NH        attention (query) heads\n"
    "  --kv-heads K      heads that keep K and V (default: = heads; fewer is GQA/MQA)\n"
    "  --head-dim hs     head size\n"
    "  --ctx N           context length (default for a custom shape: --tokens)\n"
    "  --tokens T        length to report (default: the context)\n"
    "  --batch B         sequences in the batch (default 1)\n"
    "  --dtype D         fp32, fp16, bf16 or int8 (default fp16)\n"
    "  --out DIR         write kvmem.csv (bytes per model over --lengths), models.md\n"
    "                    and values.csv (key,value) into DIR, replaced as a whole\n"
    "  --lengths LIST    tokens of the sweep (default 0,256,512,...,4096)\n"
    "  --force           replace --out even if kvscope did not write it (never /, your\n"
    "                    home folder, the current folder or one above)\n";

typedef struct {
    KvShape shape;
    int have_model, have_shape; /* a preset was named; a shape flag was given */
    long tokens;                /* -1: the context */
    long batch;
    KvDtype dt;
    const char *out;
    int force;
    int *lengths;
    int n_lengths;
    char label[64]; /* "llama-2-7b, modified" when flags change a preset */
} KvmemArgs;

static int parse_kvmem(int argc, char **argv, KvmemArgs *a) {
    memset(a, 0, sizeof *a);
    a->tokens = -1;
    a->batch = 1;
    a->dt = KV_FP16;
    const KvShape *preset = NULL;
    int L = 0, NH = 0, kv = 0, hs = 0, N = 0; /* 0: not given */
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i], *v;
        long x;
        struct { const char *name; int *field; long hi; } ints[] = {
            {"--layers", &L, 4096}, {"--heads", &NH, 4096}, {"--kv-heads", &kv, 4096},
            {"--head-dim", &hs, 65536}, {"--ctx", &N, 1L << 24},
        };
        int matched = 0;
        for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
            if (strcmp(o, ints[k].name) != 0) continue;
            if (!(v = cli_value(argc, argv, &i)) || cli_long(o, v, 1, ints[k].hi, &x)) return 2;
            *ints[k].field = (int)x;
            matched = 1;
        }
        if (matched) continue;
        if (strcmp(o, "--preset") == 0) {
            if (!(v = cli_value(argc, argv, &i))) return 2;
            if (!(preset = kvmem_preset(v)))
                return cli_fail("unknown --preset (gpt2, gpt2-medium, gpt2-large, gpt2-xl, llama-2-7b)", v);
        } else if (strcmp(o, "--tokens") == 0) {
            if (!(v = cli_value(argc, argv, &i)) || cli_long(o, v, 0, 1L << 24, &a->tokens)) return 2;
        } else if (strcmp(o, "--batch") == 0) {
            if (!(v = cli_value(argc, argv, &i)) || cli_long(o, v, 1, 1L << 20, &a->batch)) return 2;
        } else if (strcmp(o, "--dtype") == 0) {
            if (!(v = cli_value(argc, argv, &i))) return 2;
            if (kvmem_dtype_parse(v, &a->dt)) return cli_fail("unknown --dtype (fp32, fp16, bf16, int8)", v);
        } else if (strcmp(o, "--out") == 0) {
            if (!(a->out = cli_value(argc, argv, &i))) return 2;
        } else if (strcmp(o, "--force") == 0) {
            a->force = 1;
        } else if (strcmp(o, "--lengths") == 0) {
            if (!(v = cli_value(argc, argv, &i))) return 2;
            free(a->lengths);
            a->lengths = NULL;
            if (cli_int_list(o, v, 0, 1L << 24, &a->lengths, &a->n_lengths)) return 2;
        } else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            printf("%s\n%s", KVMEM_HELP, EXIT_STATUS_HELP);
            return -1;
        } else {
            return cli_fail("unknown option", o);
        }
    }
    a->have_model = preset != NULL;
    a->have_shape = L || NH || kv || hs; /* a shape that differs from every preset */
    if (!preset && !a->have_shape) {
        if (N) return cli_fail("--ctx needs a shape", "--preset or --layers/--heads/--head-dim");
        return 0; /* the table of presets */
    }
    if (preset) {
        a->shape = *preset;
    } else {
        a->shape.name = "custom";
        if (!L) return cli_fail("a custom shape needs", "--layers");
        if (!NH) return cli_fail("a custom shape needs", "--heads");
        if (!hs) return cli_fail("a custom shape needs", "--head-dim");
        if (!N) {
            if (a->tokens < 1) return cli_fail("a custom shape needs", "--ctx (or --tokens)");
            N = (int)a->tokens;
        }
    }
    if (a->have_shape && preset) {
        snprintf(a->label, sizeof a->label, "%s, modified", preset->name);
        a->shape.name = a->label;
    }
    if (L) a->shape.L = L;
    if (NH) a->shape.NH = NH;
    if (hs) a->shape.hs = hs;
    if (N) a->shape.N = N;
    a->shape.kv_heads = kv ? kv : a->shape.NH;
    char val[64], what[96];
    const char *bad = kvmem_check(&a->shape);
    if (bad) {
        snprintf(val, sizeof val, "heads %d, kv heads %d", a->shape.NH, a->shape.kv_heads);
        return cli_fail(bad, val);
    }
    if (a->tokens > a->shape.N) {
        snprintf(val, sizeof val, "%ld", a->tokens);
        snprintf(what, sizeof what, "--tokens past the context (%d)", a->shape.N);
        return cli_fail(what, val);
    }
    return 0;
}

/* bytes for s; exits the caller's flow with 2 on overflow (checked by the caller). */
static int bytes_of(const KvShape *s, long tokens, long batch, KvDtype dt, uint64_t *out) {
    if (kvmem_bytes(s, (uint64_t)tokens, (uint64_t)batch, dt, out) == 0) return 0;
    char v[64];
    snprintf(v, sizeof v, "%s at %ld tokens, batch %ld", s->name, tokens, batch);
    return cli_fail("KV size does not fit in 64 bits", v);
}

static void print_line(const char *what, uint64_t b) {
    char d[40], h[32];
    printf("  %-22s %22s B  (%s)\n", what, group_digits(b, d, sizeof d), human_bytes((double)b, h, sizeof h));
}

static int print_one(const KvmemArgs *a) {
    const KvShape *s = &a->shape;
    long T = a->tokens >= 0 ? a->tokens : s->N;
    uint64_t per, at, full;
    if (bytes_of(s, 1, a->batch, a->dt, &per) || bytes_of(s, T, a->batch, a->dt, &at) ||
        bytes_of(s, s->N, a->batch, a->dt, &full))
        return 2;
    printf("%s: layers %d, heads %d, kv heads %d, head dim %d, context %d; %s, batch %ld\n",
           s->name, s->L, s->NH, s->kv_heads, s->hs, s->N, kvmem_dtype_name(a->dt), a->batch);
    printf("  = 2 x %d x %d x %d x tokens x %ld x %d bytes\n", s->L, s->kv_heads, s->hs, a->batch,
           kvmem_dtype_bytes(a->dt));
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
    printf("KV cache, %s, batch %ld%s\n", kvmem_dtype_name(a->dt), a->batch,
           a->tokens >= 0 ? "" : " (at each model's full context)");
    char at[32];
    if (a->tokens >= 0) snprintf(at, sizeof at, "at %ld tokens", a->tokens);
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

/* The files of --out. The sweep has one column per model; a cell past a model's
 * context is left empty (gnuplot skips it). */
static int write_files(const KvmemArgs *a, const char *dir) {
    int n;
    const KvShape *p = kvmem_presets(&n);
    KvShape models[8];
    int m = 0;
    for (int i = 0; i < n; i++) models[m++] = p[i];
    if (a->have_shape) models[m++] = a->shape; /* the presets are there already */

    int def[17], *len = a->lengths, nl = a->n_lengths;
    if (!len) {
        for (int i = 0; i < 17; i++) def[i] = 256 * i;
        len = def;
        nl = 17;
    }
    char path[4200];
    uint64_t b;
    char d[40], h[32];

    FILE *f;
    if (path_join(path, sizeof path, dir, "kvmem.csv") || !(f = fopen(path, "w"))) return -1;
    fprintf(f, "tokens");
    for (int j = 0; j < m; j++) fprintf(f, ",%s", models[j].name);
    fprintf(f, "\n");
    for (int i = 0; i < nl; i++) {
        fprintf(f, "%d", len[i]);
        for (int j = 0; j < m; j++) {
            if (len[i] > models[j].N) fputc(',', f);
            else if (kvmem_bytes(&models[j], (uint64_t)len[i], (uint64_t)a->batch, a->dt, &b) == 0)
                fprintf(f, ",%llu", (unsigned long long)b);
            else fputc(',', f);
        }
        fprintf(f, "\n");
    }
    if (file_close(f)) return -1;

    if (path_join(path, sizeof path, dir, "models.md") || !(f = fopen(path, "w"))) return -1;
    fprintf(f, "| model | layers | heads | KV heads | head dim | context | KV per token (%s) | KV at full context |\n",
            kvmem_dtype_name(a->dt));
    fprintf(f, "|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int j = 0; j < m; j++) {
        const KvShape *s = &models[j];
        uint64_t per, full;
        if (kvmem_bytes(s, 1, (uint64_t)a->batch, a->dt, &per) ||
            kvmem_bytes(s, (uint64_t)s->N, (uint64_t)a->batch, a->dt, &full)) {
            fclose(f);
            return -1;
        }
        char h2[32];
        fprintf(f, "| %s | %d | %d | %d | %d | %d | %s | %s B (%s) |\n", s->name, s->L, s->NH,
                s->kv_heads, s->hs, s->N, human_bytes((double)per, h, sizeof h),
                group_digits(full, d, sizeof d), human_bytes((double)full, h2, sizeof h2));
    }
    if (file_close(f)) return -1;

    /* key,value pairs a lesson quotes: every preset at 1024 tokens and at its
     * context, and the source article's one-head LLaMA figure next to the right one */
    if (path_join(path, sizeof path, dir, "values.csv") || !(f = fopen(path, "w"))) return -1;
    fprintf(f, "key,value\ndtype,%s\nbatch,%ld\n", kvmem_dtype_name(a->dt), a->batch);
    for (int j = 0; j < m; j++) {
        const KvShape *s = &models[j];
        uint64_t per, full, k1;
        if (kvmem_bytes(s, 1, (uint64_t)a->batch, a->dt, &per) ||
            kvmem_bytes(s, (uint64_t)s->N, (uint64_t)a->batch, a->dt, &full) ||
            kvmem_bytes(s, 1024, (uint64_t)a->batch, a->dt, &k1)) {
            fclose(f);
            return -1;
        }
        fprintf(f, "%s_per_token_bytes,%llu\n", s->name, (unsigned long long)per);
        fprintf(f, "%s_per_token,%s\n", s->name, human_bytes((double)per, h, sizeof h));
        fprintf(f, "%s_1024_bytes,%llu\n", s->name, (unsigned long long)k1);
        fprintf(f, "%s_1024,%s\n", s->name, human_bytes((double)k1, h, sizeof h));
        fprintf(f, "%s_context_bytes,%llu\n", s->name, (unsigned long long)full);
        fprintf(f, "%s_context,%s\n", s->name, human_bytes((double)full, h, sizeof h));
    }
    const KvShape *ll = kvmem_preset("llama-2-7b");
    KvShape one_head = *ll;
    one_head.NH = one_head.kv_heads = 1;
    uint64_t wrong, right;
    if (kvmem_bytes(&one_head, 2048, (uint64_t)a->batch, a->dt, &wrong) ||
        kvmem_bytes(ll, 2048, (uint64_t)a->batch, a->dt, &right)) {
        fclose(f);
        return -1;
    }
    fprintf(f, "llama-2-7b_2048_bytes,%llu\n", (unsigned long long)right);
    fprintf(f, "llama-2-7b_2048,%s\n", human_bytes((double)right, h, sizeof h));
    fprintf(f, "article_llama_2048_bytes,%llu\n", (unsigned long long)wrong);
    fprintf(f, "article_llama_2048,%s\n", human_bytes((double)wrong, h, sizeof h));
    fprintf(f, "article_missing_factor,%llu\n", (unsigned long long)(right / wrong));
    if (file_close(f)) return -1;
    return 0;
}

int cmd_kvmem(int argc, char **argv) {
    KvmemArgs a;
    int rc = parse_kvmem(argc, argv, &a);
    if (rc) {
        free(a.lengths);
        return rc < 0 ? 0 : rc;
    }
    OutDir od;
    if (a.out && (rc = cli_outdir_check(&od, a.out, "kvmem", "--out", a.force ? OUTDIR_FORCE : 0))) {
        free(a.lengths);
        return rc;
    }
    rc = (a.have_model || a.have_shape) ? print_one(&a) : print_presets(&a);
    if (rc == 0 && a.out && (rc = cli_outdir_begin(&od)) == 0) {
        if (write_files(&a, od.tmp) != 0) {
            fprintf(stderr, "kvscope: --out: cannot write its files (%s): %s\n", write_error_text(errno),
                    a.out);
            rc = 2;
        }
        if ((rc = cli_outdir_end(&od, rc, 0)) == 0)
            printf("wrote %s/ (kvmem.csv, models.md, values.csv)\n", a.out);
    }
    free(a.lengths);
    return rc;
}
