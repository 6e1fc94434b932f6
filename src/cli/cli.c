/* cli.c — option parsing and model loading shared by the subcommands. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "generate.h"
#include "hf_model.h"
#include "outdir.h"

int cli_fail(const char *what, const char *value) {
    fprintf(stderr, "kvscope: %s: %s\n", what, value);
    return 2;
}

const char *cli_value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) {
        cli_fail("missing value for option", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int cli_long(const char *opt, const char *s, long lo, long hi, long *out) {
    char what[128], *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE) {
        snprintf(what, sizeof what, "%s expects a whole number", opt);
        return cli_fail(what, s);
    }
    if (v < lo || v > hi) {
        snprintf(what, sizeof what, "%s must be in %ld..%ld", opt, lo, hi);
        return cli_fail(what, s);
    }
    *out = v;
    return 0;
}

int cli_double(const char *opt, const char *s, double lo, double hi, double *out) {
    char what[128], *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v)) {
        snprintf(what, sizeof what, "%s expects a number", opt);
        return cli_fail(what, s);
    }
    if (v < lo || v > hi) {
        snprintf(what, sizeof what, "%s must be in %g..%g", opt, lo, hi);
        return cli_fail(what, s);
    }
    *out = v;
    return 0;
}

int cli_int_list(const char *opt, const char *s, long lo, long hi, int **out, int *n) {
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    int *ids = malloc(cap * sizeof *ids);
    if (!ids) return cli_fail("out of memory parsing", opt);
    char item[64];
    int k = 0;
    const char *p = s;
    for (;;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item) {
            free(ids);
            char what[128];
            snprintf(what, sizeof what, "%s expects numbers separated by commas", opt);
            return cli_fail(what, s);
        }
        memcpy(item, p, len);
        item[len] = '\0';
        long v;
        if (cli_long(opt, item, lo, hi, &v)) {
            free(ids);
            return 2;
        }
        ids[k++] = (int)v;
        p += len;
        if (*p == '\0') break;
        p++;
    }
    *out = ids;
    *n = k;
    return 0;
}

const char *const MODEL_ARGS_HELP =
    "model and prompt:\n"
    "  --prompt TEXT        prompt text (default \"The KV cache\"); the built-in model's\n"
    "                       tokens are the text's UTF-8 bytes\n"
    "  --prompt-ids LIST    token ids instead of text, e.g. 1,2,3\n"
    "  --layers L           transformer blocks (default 1)\n"
    "  --heads NH           attention heads (default 12)\n"
    "  --dim C              width; must be divisible by NH (default 768)\n"
    "  --ctx N              context length (default 1024)\n"
    "  --vocab V            vocabulary size (default 256)\n"
    "  --seed S             seed of the built-in weights (default 1)\n"
    "  --model DIR          a Hugging Face GPT-2 folder instead of the built-in model:\n"
    "                       config.json + model.safetensors, and vocab.json + merges.txt\n"
    "                       for GPT-2's tokenizer (without them: byte-level tokens)\n"
    "  --weights TYPE       fp32 (default), fp16 or bf16: the matrices rounded once to\n"
    "                       half size, multiplied in float32 (the KV cache: --kv-dtype)\n";

void model_args_default(ModelArgs *a) {
    memset(a, 0, sizeof *a);
    a->cfg = config_default();
    a->seed = 1;
    a->prompt = NULL;
}

int model_args_parse(ModelArgs *a, int argc, char **argv, int *i) {
    const char *o = argv[*i], *v;
    long x;
    struct { const char *name; int *field; long lo, hi; } ints[] = {
        {"--layers", &a->cfg.L, 1, MODEL_MAX_LAYERS}, {"--heads", &a->cfg.NH, 1, MODEL_MAX_HEADS},
        {"--dim", &a->cfg.C, 1, MODEL_MAX_DIM},       {"--ctx", &a->cfg.N, 1, MODEL_MAX_CTX},
        {"--vocab", &a->cfg.V, 1, MODEL_MAX_VOCAB},
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        if (strcmp(o, ints[k].name) != 0) continue;
        if (!(v = cli_value(argc, argv, i))) return 2;
        if (cli_long(o, v, ints[k].lo, ints[k].hi, &x)) return 2;
        *ints[k].field = (int)x;
        a->cfg_option = ints[k].name;
        return 1;
    }
    if (strcmp(o, "--seed") == 0) {
        char *end;
        if (!(v = cli_value(argc, argv, i))) return 2;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        if (end == v || *end || errno == ERANGE || v[0] == '-')
            return cli_fail("--seed expects a whole number ≥ 0", v);
        a->seed = s;
        return 1;
    }
    if (strcmp(o, "--model") == 0) {
        if (!(a->model_dir = cli_value(argc, argv, i))) return 2;
        return 1;
    }
    if (strcmp(o, "--weights") == 0) {
        if (!(v = cli_value(argc, argv, i))) return 2;
        if (model_dtype_parse(v, &a->weights)) return cli_fail("--weights is fp32, fp16 or bf16", v);
        return 1;
    }
    if (strcmp(o, "--prompt") == 0) {
        if (!(v = cli_value(argc, argv, i))) return 2;
        a->prompt = v;
        a->prompt_ids = NULL;
        return 1;
    }
    if (strcmp(o, "--prompt-ids") == 0) {
        if (!(v = cli_value(argc, argv, i))) return 2;
        a->prompt_ids = v;
        a->prompt = NULL;
        return 1;
    }
    return 0;
}

/* The tokenizer: GPT-2's BPE when --model has vocab.json + merges.txt, else bytes.
 * 0, or 2 with the error printed. */
static int open_tokenizer(const ModelArgs *a, Tokenizer **tok) {
    char err[4600], vp[4200], mp[4200];
    *tok = NULL;
    int has = a->model_dir ? hf_has_tokenizer(a->model_dir) : 0;
    if (has < 0) return cli_fail("--model needs both vocab.json and merges.txt (or neither) in", a->model_dir);
    if (has) {
        Bpe *bpe;
        path_join(vp, sizeof vp, a->model_dir, "vocab.json");
        path_join(mp, sizeof mp, a->model_dir, "merges.txt");
        int rc = bpe_load(&bpe, vp, mp, err, sizeof err);
        if (rc == BPE_NOMEM) return cli_fail("out of memory", "tokenizer");
        if (rc) return fprintf(stderr, "kvscope: %s\n", err), 2;
        *tok = tokenizer_from_bpe(bpe);
    } else {
        *tok = tokenizer_bytes();
    }
    return *tok ? 0 : cli_fail("out of memory", "tokenizer");
}

int model_args_load(const ModelArgs *a, int steps, Loaded *out) {
    char buf[64], err[4600];
    int rc;
    memset(out, 0, sizeof *out);
    const Config *cfg = &a->cfg;
    Config hf_cfg;
    if (a->model_dir) {
        if (a->cfg_option) return cli_fail("--model takes the model's shape from config.json; drop", a->cfg_option);
        if (hf_config_load(a->model_dir, &hf_cfg, err, sizeof err)) return fprintf(stderr, "kvscope: %s\n", err), 2;
        cfg = &hf_cfg;
    }
    if (cfg->C % cfg->NH != 0) {
        snprintf(buf, sizeof buf, "%d", cfg->C);
        char what[96];
        snprintf(what, sizeof what, "--dim must be divisible by --heads (%d)", cfg->NH);
        return cli_fail(what, buf);
    }
    const char *bad = config_check(cfg);
    if (bad) return cli_fail("bad model config", bad);

    if (a->prompt_ids) {
        if (cli_int_list("--prompt-ids", a->prompt_ids, 0, 2147483647L, &out->prompt, &out->T))
            return 2;
    } else {
        if ((rc = open_tokenizer(a, &out->tok))) return rc;
        const char *text = a->prompt ? a->prompt : "The KV cache";
        if (tokenizer_encode(out->tok, text, &out->prompt, &out->T) != 0) {
            loaded_free(out);
            return cli_fail("out of memory", "prompt");
        }
        if (out->T == 0) {
            loaded_free(out);
            return cli_fail("empty prompt", "\"\"");
        }
    }
    if (!out->tok && (rc = open_tokenizer(a, &out->tok))) {
        loaded_free(out);
        return rc;
    }
    for (int i = 0; i < out->T; i++) {
        if (out->prompt[i] >= cfg->V) {
            char what[96];
            snprintf(what, sizeof what, "token id out of range (vocab %d)", cfg->V);
            snprintf(buf, sizeof buf, "%d", out->prompt[i]);
            loaded_free(out);
            return cli_fail(what, buf);
        }
    }
    if (out->T > cfg->N) {
        char what[96];
        snprintf(what, sizeof what, "prompt longer than the context (%d tokens)", cfg->N);
        snprintf(buf, sizeof buf, "%d tokens", out->T);
        loaded_free(out);
        return cli_fail(what, buf);
    }
    if ((long)out->T + steps > cfg->N) {
        char what[128];
        snprintf(what, sizeof what, "--steps past the context (%d prompt tokens + steps > %d)",
                 out->T, cfg->N);
        snprintf(buf, sizeof buf, "%d", steps);
        loaded_free(out);
        return cli_fail(what, buf);
    }
    if (a->model_dir) {
        rc = hf_weights_load(a->model_dir, cfg, &out->model, err, sizeof err);
        if (rc) {
            loaded_free(out);
            if (rc == HF_NOMEM)
                fprintf(stderr, "kvscope: out of memory: %zu parameters\n", model_num_params(cfg));
            else
                fprintf(stderr, "kvscope: %s\n", err);
            return 2;
        }
    } else if (model_init_random(&out->model, cfg, a->seed) != 0) {
        loaded_free(out);
        fprintf(stderr, "kvscope: out of memory: %zu parameters\n", model_num_params(cfg));
        return 2;
    }
    if (model_set_weights(&out->model, a->weights) != 0) { /* only from fp32: cannot fail else */
        loaded_free(out);
        return cli_fail("cannot round the weights to", model_dtype_name(a->weights)), 1;
    }
    if (out->model.kern != KERN_PLAIN && !out->model.w.panels && !out->model.w.half_panels)
        fprintf(stderr, "kvscope: note: no memory for the fast weight layout; running the plain "
                        "kernels (same results, slower)\n");
    return 0;
}

void loaded_free(Loaded *l) {
    model_free(&l->model);
    tokenizer_free(l->tok);
    free(l->prompt);
    memset(l, 0, sizeof *l);
}

const char *const EXIT_STATUS_HELP =
    "exit status: 0 success; 1 the check failed (verify, batch: the logits differ);\n"
    "  2 bad input or an environment error (a bad option or file, an output folder\n"
    "  kvscope may not replace, a full disk, out of memory, non-finite logits), with\n"
    "  one line \"kvscope: <problem>: <path or value>\" on stderr; 130/143 after\n"
    "  Ctrl-C/SIGTERM (output folders left as they were)\n";

const char *const FORCE_HELP =
    "  --force              replace the output folder even if kvscope did not write it\n"
    "                       (never /, your home folder, the current folder or one above)\n";

int cli_outdir_check(OutDir *od, const char *path, const char *command, const char *option,
                     unsigned flags) {
    char err[8400];
    if (outdir_check(od, path, command, option, flags, err, sizeof err) == 0) return 0;
    fprintf(stderr, "kvscope: %s\n", err);
    return 2;
}

int cli_outdirs_apart(const OutDir *a, const OutDir *b) {
    if (!outdir_overlap(a, b)) return 0;
    fprintf(stderr, "kvscope: %s and %s must be separate folders (one would replace the other): "
                    "%s %s, %s %s\n", b->option, a->option, a->option, a->target, b->option, b->target);
    return 2;
}

int cli_outdir_spares(const OutDir *od, const char *option, const char *path) {
    if (!path || !outdir_holds(od, path)) return 0;
    fprintf(stderr, "kvscope: %s would replace %s's %s: %s\n", od->option, option, path, od->target);
    return 2;
}

int cli_outdir_begin(OutDir *od) {
    char err[8400];
    if (outdir_begin(od, err, sizeof err) == 0) return 0;
    fprintf(stderr, "kvscope: %s\n", err);
    return 2;
}

void cli_outdir_error(const OutDir *od, const char *msg) {
    char shown[8400];
    outdir_shown(od, msg, shown, sizeof shown);
    fprintf(stderr, "kvscope: %s\n", shown);
}

int cli_outdir_end(OutDir *od, int status, int close_failed) {
    char err[8400];
    if (close_failed && status == 0) {
        fprintf(stderr, "kvscope: %s: cannot write (%s): %s\n", od->option, write_error_text(errno),
                od->target);
        status = 2;
    }
    if (status == 0 && outdir_commit(od, err, sizeof err) != 0) {
        fprintf(stderr, "kvscope: %s\n", err);
        status = 2;
    }
    if (status != 0) outdir_abort(od);
    return status;
}

int cli_step_failed(int rc, const char *what, const float *logits, int V) {
    if (rc != GEN_NONFINITE) {
        fprintf(stderr, "kvscope: %s failed (out of memory?)\n", what);
        return 2;
    }
    int i = logits_first_nonfinite(logits, V);
    fprintf(stderr, "kvscope: non-finite logits at %s: logit %d is %s (the model's numbers "
                    "overflow float32)\n", what, i, i >= 0 && isnan(logits[i]) ? "nan" : "inf");
    return 2;
}

const char *group_digits(uint64_t v, char *buf, size_t size) {
    char raw[32];
    int n = snprintf(raw, sizeof raw, "%llu", (unsigned long long)v), k = 0;
    for (int i = 0; i < n && (size_t)k + 2 < size; i++) {
        if (i > 0 && (n - i) % 3 == 0) buf[k++] = ',';
        buf[k++] = raw[i];
    }
    buf[k] = '\0';
    return buf;
}

const char *human_bytes(double bytes, char *buf, size_t size) {
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        u++;
    }
    if (u == 0) snprintf(buf, size, "%.0f B", bytes);
    else snprintf(buf, size, bytes < 10 ? "%.2f %s" : bytes < 100 ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}
