/* cli.c — the error line, the model options and loading, and the output folders every
 * subcommand shares. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpe.h"
#include "generate.h"
#include "gnuplot.h"
#include "hf_model.h"
#include "outdir.h"

int cli_fail(const char *what, const char *value) {
    fprintf(stderr, "kvscope: %s: %s\n", what, value);
    return 2;
}

int cli_error(const char *msg) {
    fprintf(stderr, "kvscope: %s\n", msg);
    return 2;
}

/* ---- the model options ---------------------------------------------------------------- */

int cli_kernels_check(int lv) {
    if (lv < 0 || kern_supported((KernLevel)lv)) return 0;
    fprintf(stderr, "kvscope: --kernels %s: this CPU lacks it (the best it has: %s)\n",
            kern_name((KernLevel)lv), kern_name(kern_detect()));
    return 2;
}

/* Weights come in fp32, fp16 or bf16 only: int8 and q8_0 are K/V types. */
static int parse_weights(const char *s, void *f) {
    Dtype dt;
    if (dtype_parse(s, &dt) || !dtype_is_weight(dt)) return -1;
    *(Dtype *)f = dt;
    return 0;
}
static const char *show_weights(const void *f) { return dtype_name(*(const Dtype *)f); }

/* --kernels: a level's name, or auto (-1: kern_detect's). Whether this CPU has it is
 * checked before the model loads (load_weights). */
int cli_parse_kernels(const char *s, void *f) {
    if (strcmp(s, "auto") == 0) return *(int *)f = -1, 0;
    for (int lv = 0; lv < KERN_LEVEL_COUNT; lv++)
        if (strcmp(s, kern_name((KernLevel)lv)) == 0) return *(int *)f = lv, 0;
    return -1;
}
const char *cli_show_kernels(const void *f) {
    const int lv = *(const int *)f;
    return lv < 0 ? "auto" : kern_name((KernLevel)lv);
}

/* A shape option: an int of the config, noted as the one given (--model refuses them). */
#define SHAPE(nm, a, m, max, h)                                                               \
    {.kind = OPT_KIND_INT, .name = (nm), .arg = (a), .field = OPT_FIELD(ModelArgs, cfg.m, int), \
     .lo = 1, .hi = (max), .help = (h), .note = offsetof(ModelArgs, cfg_option), .has_note = 1}
/* --prompt and --prompt-ids: the later one given wins (prompt_option notes which). */
#define PROMPT(nm, a, m, h)                                                                   \
    {.kind = OPT_KIND_STRING, .name = (nm), .arg = (a), .field = OPT_FIELD(ModelArgs, m, char *), \
     .help = (h), .note = offsetof(ModelArgs, prompt_option), .has_note = 1}

static const Option MODEL_WEIGHT_OPTIONS[] = {
    SHAPE("--layers", "L", L, MODEL_MAX_LAYERS, "transformer blocks"),
    SHAPE("--heads", "NH", NH, MODEL_MAX_HEADS, "attention heads"),
    SHAPE("--dim", "C", C, MODEL_MAX_DIM, "width; must be divisible by NH"),
    SHAPE("--ctx", "N", N, MODEL_MAX_CTX, "context length"),
    SHAPE("--vocab", "V", V, MODEL_MAX_VOCAB, "vocabulary size"),
    OPT_U64("--seed", "S", ModelArgs, seed, "seed of the built-in weights"),
    OPT_STRING("--model", "DIR", ModelArgs, model_dir,
               "a Hugging Face GPT-2 folder instead of the built-in model: config.json + "
               "model.safetensors, and vocab.json + merges.txt for GPT-2's tokenizer (without "
               "them: byte-level tokens, for a vocabulary of bytes; else only --prompt-ids)"),
    OPT_CHOICE("--weights", "TYPE", ModelArgs, weights, parse_weights, show_weights,
               "fp32, fp16, bf16",
               "fp32, or fp16 or bf16: the matrices rounded once to half size, multiplied in "
               "float32 (the KV cache's type is --kv-dtype)"),
    OPT_CHOICE("--kernels", "LEVEL", ModelArgs, kernels, cli_parse_kernels, cli_show_kernels,
               CLI_KERNELS_CHOICES, CLI_KERNELS_HELP),
    OPT_END,
};

const Option MODEL_OPTIONS[] = {
    OPT_GROUP("model and prompt"),
    PROMPT("--prompt", "TEXT", prompt,
           "prompt text; the built-in model's tokens are the text's UTF-8 bytes"),
    PROMPT("--prompt-ids", "LIST", prompt_ids, "token ids instead of text, e.g. 1,2,3"),
    OPT_INCLUDE_HERE(MODEL_WEIGHT_OPTIONS),
    OPT_END,
};

const Option MODEL_ONLY_OPTIONS[] = {
    OPT_GROUP("model"),
    OPT_INCLUDE_HERE(MODEL_WEIGHT_OPTIONS),
    OPT_END,
};

void model_args_default(ModelArgs *a) {
    memset(a, 0, sizeof *a);
    a->cfg = config_default();
    a->seed = 1;
    a->prompt = "The KV cache";
    a->weights = DT_FP32;
    a->kernels = -1;
}

/* The tokenizer: GPT-2's BPE when --model has vocab.json + merges.txt, else bytes; a
 * vocab.json with more ids than the model's vocab_size (cfg) is refused: its tokens
 * would index past the embedding. 0, or 2 with the error printed. */
static int open_tokenizer(const ModelArgs *a, const Config *cfg, Tokenizer **tok) {
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
        if (rc) return cli_error(err);
        if (bpe_vocab_size(bpe) > cfg->V) {
            snprintf(err, sizeof err, "--model %s: vocab.json has %d ids, more than config.json's "
                     "vocab_size %d", a->model_dir, bpe_vocab_size(bpe), cfg->V);
            bpe_free(bpe);
            return cli_error(err);
        }
        *tok = tokenizer_from_bpe(bpe);
    } else {
        *tok = tokenizer_bytes();
    }
    return *tok ? 0 : cli_fail("out of memory", "tokenizer");
}

/* The model's shape: the flags', or config.json's with --model. 0, or 2. */
static int load_config(const ModelArgs *a, Config *cfg) {
    char err[4600];
    *cfg = a->cfg;
    if (a->model_dir) {
        if (a->cfg_option)
            return cli_fail("--model takes the model's shape from config.json; drop", a->cfg_option);
        if (hf_config_load(a->model_dir, cfg, err, sizeof err)) return cli_error(err);
    }
    if (cfg->C % cfg->NH != 0) {
        char what[96], c[32];
        snprintf(what, sizeof what, "--dim must be divisible by --heads (%d)", cfg->NH);
        snprintf(c, sizeof c, "%d", cfg->C);
        return cli_fail(what, c);
    }
    const char *bad = config_check(cfg);
    return bad ? cli_fail("bad model config", bad) : 0;
}

/* A model folder whose vocabulary is more than bytes (and a start token after them)
 * cannot read text without its BPE files: byte ids would be the wrong tokens, silently.
 * 0, or 2 with the error printed. */
static int text_needs_bpe(const ModelArgs *a, const Config *cfg, const Tokenizer *tok) {
    if (!a->model_dir || !tokenizer_is_bytes(tok) || cfg->V - (cfg->bos == 256) <= 256) return 0;
    char msg[4400];
    snprintf(msg, sizeof msg,
             "--model %s: vocab_size %d is not bytes, and vocab.json and merges.txt are missing "
             "there to tokenize the text (--prompt-ids works without them)",
             a->model_dir, cfg->V);
    return cli_error(msg);
}

/* The prompt's ids (given, or the text tokenized) and the tokenizer. 0, or 2. */
static int read_prompt(const ModelArgs *a, const Config *cfg, Loaded *out) {
    int rc;
    if ((rc = open_tokenizer(a, cfg, &out->tok))) return rc;
    if (a->no_prompt) return 0;
    const int ids = a->prompt_option ? strcmp(a->prompt_option, "--prompt-ids") == 0
                                     : a->prompt_ids != NULL;
    if (!ids && (rc = text_needs_bpe(a, cfg, out->tok))) return rc;
    if (ids) {
        int cap = 1;
        for (const char *p = a->prompt_ids; *p; p++) cap += *p == ',';
        if (!(out->prompt = malloc((size_t)cap * sizeof *out->prompt)))
            return cli_fail("out of memory", "--prompt-ids");
        if (opts_int_list("--prompt-ids", a->prompt_ids, 0, INT32_MAX, out->prompt, cap, &out->T))
            return 2;
    } else {
        if (tokenizer_encode(out->tok, a->prompt, &out->prompt, &out->T) != 0)
            return cli_fail("out of memory", "prompt");
        if (out->T == 0) return cli_fail("empty prompt", "\"\"");
    }
    /* a model trained with a start token reads every prompt after it, once */
    tokenizer_set_start(out->tok, cfg->bos);
    if (tokenizer_add_start(cfg->bos, &out->prompt, &out->T)) return cli_fail("out of memory", "prompt");
    for (int i = 0; i < out->T; i++) {
        if (out->prompt[i] < cfg->V) continue;
        char what[96], id[32];
        snprintf(what, sizeof what, "token id out of range (vocab %d)", cfg->V);
        snprintf(id, sizeof id, "%d", out->prompt[i]);
        return cli_fail(what, id);
    }
    return 0;
}

/* The prompt and `steps` more tokens fit the context. 0, or 2. */
static int check_length(const Config *cfg, int T, int steps) {
    char what[128], v[32];
    if (T > cfg->N) {
        snprintf(what, sizeof what, "prompt longer than the context (%d tokens)", cfg->N);
        snprintf(v, sizeof v, "%d tokens", T);
        return cli_fail(what, v);
    }
    if ((long)T + steps <= cfg->N) return 0;
    snprintf(what, sizeof what, "--steps past the context (%d prompt tokens + steps > %d)", T,
             cfg->N);
    snprintf(v, sizeof v, "%d", steps);
    return cli_fail(what, v);
}

/* 1 after the error line when a finite weight lies outside the half type's range (it
 * would round to an infinity), naming the tensor and the value; else 0. */
static int half_overflow(const Model *m, Dtype dt) {
    char name[64];
    size_t i;
    float v;
    if (!model_half_overflow(m, dt, name, sizeof name, &i, &v)) return 0;
    fprintf(stderr, "kvscope: --weights %s: tensor \"%s\" holds %g at index %zu, out of %s's range "
                    "(|x| up to %s; it would round to infinity): use --weights %s\n",
            dtype_name(dt), name, (double)v, i, dtype_name(dt),
            dt == DT_FP16 ? "65504" : "3.39e38", dt == DT_FP16 ? "bf16 or fp32" : "fp32");
    return 1;
}

/* The weights: --model's, or the built-in ones from the seed; then --weights. 0, or 2. */
static int load_weights(const ModelArgs *a, const Config *cfg, Model *m) {
    char err[4600];
    if (cli_kernels_check(a->kernels)) return 2;
    int rc = a->model_dir ? hf_weights_load(a->model_dir, cfg, m, err, sizeof err)
                          : model_init_random(m, cfg, a->seed) ? HF_NOMEM : 0;
    if (rc == HF_NOMEM) {
        fprintf(stderr, "kvscope: out of memory: %zu parameters\n", model_num_params(cfg));
        return 2;
    }
    if (rc) return cli_error(err);
    if (a->weights != DT_FP32 && half_overflow(m, a->weights)) return 2;
    if (model_set_weights(m, a->weights) != 0) /* from fp32 only: then out of memory */
        return cli_fail("out of memory rounding the weights to", dtype_name(a->weights));
    if (a->kernels >= 0 && model_set_kernels(m, (KernLevel)a->kernels))
        return cli_fail("out of memory packing the weights for --kernels",
                        kern_name((KernLevel)a->kernels));
    if (m->kern != KERN_PLAIN && !m->fast.buf)
        fprintf(stderr, "kvscope: note: no memory for the fast weight layout; running the plain "
                        "kernels (same results, slower)\n");
    return 0;
}

int model_args_prompt(const ModelArgs *a, int steps, Config *cfg, Loaded *out) {
    memset(out, 0, sizeof *out);
    int rc = load_config(a, cfg);
    if (rc == 0) rc = read_prompt(a, cfg, out);
    if (rc == 0 && a->fit_prompt && out->T + steps > cfg->N) out->T = cfg->N - steps > 1 ? cfg->N - steps : 1;
    if (rc == 0 && !a->no_prompt) rc = check_length(cfg, out->T, steps);
    if (rc) loaded_free(out);
    return rc;
}

int model_args_load(const ModelArgs *a, int steps, Loaded *out) {
    Config cfg;
    int rc = model_args_prompt(a, steps, &cfg, out);
    if (rc == 0 && (rc = load_weights(a, &cfg, &out->model))) loaded_free(out);
    return rc;
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

/* One output folder of a text-and-chart command: see cli_text_chart_outputs. */
static int text_chart_folder(const TextChartOutputs *t, OutDir *od, const char *path,
                             const char *option, const char *script) {
    int rc;
    if ((rc = cli_outdir_check(od, path, t->command, option, t->force ? OUTDIR_FORCE : 0)) ||
        (rc = cli_outdir_spares(od, "--model", t->model_dir)) ||
        (rc = cli_outdir_spares(od, "--text", t->text)) ||
        (rc = cli_outdir_spares(od, "--scripts", script)))
        return rc;
    return 0;
}

int cli_text_chart_outputs(const TextChartOutputs *t, OutDir *od, OutDir *op) {
    char script[4300], err[4600], what[96];
    int rc;
    snprintf(what, sizeof what, "%s needs a text", t->command);
    if (!t->text) return cli_fail(what, "--text FILE");
    if (!gnuplot_quotable(t->scripts)) return cli_fail("--scripts cannot hold a quote", t->scripts);
    snprintf(script, sizeof script, "%s/%s", t->scripts, t->gp);
    if ((rc = text_chart_folder(t, od, t->out, "--out", script)) ||
        (t->sep && ((rc = text_chart_folder(t, op, t->plots, "--plots", script)) ||
                    (rc = cli_outdirs_apart(od, op)))))
        return rc;
    snprintf(what, sizeof what, "the %s chart needs gnuplot, which is not on PATH; install it with",
             t->command);
    if (!gnuplot_found()) return cli_fail(what, GNUPLOT_INSTALL_HINT);
    if (gnuplot_check_script(script, err, sizeof err) != 0) return cli_fail("--scripts", err);
    return 0;
}

void cli_note_left(const char *left, int n) {
    if (n > 0)
        fprintf(stderr, "kvscope: note: cannot remove what a killed run left%s: %s\n",
                n > 1 ? " (the first of several)" : "", left);
}

int cli_outdir_begin(OutDir *od) {
    char err[8400];
    int rc = outdir_begin(od, err, sizeof err);
    cli_note_left(od->left, od->nleft);
    if (rc == 0) return 0;
    fprintf(stderr, "kvscope: %s\n", err);
    return 2;
}

void cli_outdir_error(const OutDir *od, const char *msg) {
    char shown[8400];
    outdir_shown(od, msg, shown, sizeof shown);
    fprintf(stderr, "kvscope: %s\n", shown);
}

/* What the command printed so far reached stdout: 0, or 2 after the error line. */
static int stdout_written(void) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    int e = fcntl(STDOUT_FILENO, F_GETFL) < 0 ? EBADF : errno;
    fprintf(stderr, "kvscope: cannot write (%s): stdout\n", write_error_text(e));
    return 2;
}

int cli_outdir_end(OutDir *od, int status, int close_failed) {
    char err[8400];
    if (close_failed && status == 0) {
        fprintf(stderr, "kvscope: %s: cannot write (%s): %s\n", od->option, write_error_text(errno),
                od->target);
        status = 2;
    }
    if (status == 0) status = stdout_written(); /* the old folder stays until it has */
    if (status == 0 && outdir_commit(od, err, sizeof err) != 0) {
        fprintf(stderr, "kvscope: %s\n", err);
        status = 2;
    }
    if (status != 0) outdir_abort(od);
    if (status == 0) cli_note_left(od->left, od->nleft); /* the old folder, if it stayed */
    if (status == 0 && od->nkept)
        fprintf(stderr, "kvscope: note: %s: kept %s, which kvscope did not write, in the new "
                        "folder: %s\n", od->option, od->kept, od->target);
    return status;
}

int cli_step_failed(int rc, const char *what, const float *logits, int V) {
    if (rc == KVCACHE_OVER_BUDGET) {
        fprintf(stderr, "kvscope: %s failed: the KV cache would pass its cap (--max-kv-mb, "
                        "--max-tokens)\n", what);
        return 2;
    }
    if (rc != GEN_NONFINITE) {
        fprintf(stderr, "kvscope: %s failed (out of memory?)\n", what);
        return 2;
    }
    int i = logits_first_nonfinite(logits, V);
    fprintf(stderr, "kvscope: non-finite logits at %s: logit %d is %s (the model's numbers "
                    "overflow float32)\n", what, i, i >= 0 && isnan(logits[i]) ? "nan" : "inf");
    return 2;
}

int cli_outfile_spares(const char *out, const char *out_option, const char *in_option,
                       const char *in) {
    if (!out || !in || !path_same(out, in)) return 0;
    fprintf(stderr, "kvscope: %s would replace %s's file (an output may not be an input, even with "
                    "--force): %s %s, %s %s\n", out_option, in_option, out_option, out, in_option, in);
    return 2;
}

int cli_outfile_spares_model(const char *out, const char *out_option, const char *model_dir) {
    static const char *const files[] = {"config.json", "model.safetensors", "vocab.json",
                                        "merges.txt"};
    char p[4200];
    for (size_t i = 0; model_dir && i < sizeof files / sizeof files[0]; i++) {
        int rc;
        if (path_join(p, sizeof p, model_dir, files[i]) == 0 &&
            (rc = cli_outfile_spares(out, out_option, "--model", p)))
            return rc;
    }
    return 0;
}

const char *model_args_words(const ModelArgs *a, const Loaded *ld) {
    if (!a->model_dir) return "the built-in random model";
    return tokenizer_is_bytes(ld->tok) ? "the byte-level model" : "the GPT-2 model (BPE tokens)";
}

int cli_find_scripts(char *buf, size_t size) {
    static const char *const up[] = {"../plots", "../../plots"};
    char exe[PATH_MAX], at[PATH_MAX + 32], style[PATH_MAX + 48];
    struct stat st;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || size < 2) return snprintf(buf, size, "plots"), -1;
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    for (size_t i = 0; i < sizeof up / sizeof up[0]; i++) {
        snprintf(at, sizeof at, "%s/%s", exe, up[i]);
        snprintf(style, sizeof style, "%s/style.gp", at);
        if (stat(style, &st) == 0 && S_ISREG(st.st_mode) && realpath(at, buf) && strlen(buf) < size)
            return 0;
    }
    snprintf(buf, size, "%s/../plots", exe);
    return -1;
}

int cli_scripts(const char **scripts, char *buf, size_t size) {
    if (*scripts) return 0;
    int rc = cli_find_scripts(buf, size);
    *scripts = buf;
    if (rc == 0) return 0;
    return cli_fail("kvscope's chart scripts are not beside its binary (no style.gp in ../plots "
                    "or ../../plots); give --scripts DIR. Looked in", buf);
}

int cli_chart(const OutDir *dir, const char *script, const char *vars, const char *name) {
    char msg[512], line[9200], out[4400], missing[4500];
    const int rc = gnuplot_run(script, vars, msg, sizeof msg);
    snprintf(out, sizeof out, "%s/%s", dir->tmp, name);
    if (rc == 0 && gnuplot_wrote(out, missing, sizeof missing)) return 0;
    if (rc == 0)
        snprintf(line, sizeof line, "%s: gnuplot wrote no %s (does the script draw a chart?): %s",
                 dir->option, missing, script);
    else if (rc == GNUPLOT_LATE)
        snprintf(line, sizeof line, "%s: gnuplot on %s was %s: %s", dir->option, script, msg,
                 dir->target);
    else
        snprintf(line, sizeof line, "%s: gnuplot failed on %s (status %d): %s", dir->option, script,
                 rc, msg[0] ? msg : "no message");
    cli_outdir_error(dir, line);
    return 2;
}
