/* hf_model.c — load and export Hugging Face GPT-2 folders. */
#include "hf_model.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "infile.h"
#include "outdir.h"
#include "safetensors.h"

/* ---- config.json --------------------------------------------------------- */

static int cfg_int(json_t *root, const char *key, long lo, long hi, int *out, const char *path,
                   char *err, size_t errsize) {
    json_t *v = json_object_get(root, key);
    if (!v) {
        snprintf(err, errsize, "%s: missing \"%s\"", path, key);
        return HF_BAD;
    }
    json_int_t x = json_is_integer(v) ? json_integer_value(v) : lo - 1;
    if (x < lo || x > hi) {
        snprintf(err, errsize, "%s: \"%s\" must be a whole number in %ld..%ld", path, key, lo, hi);
        return HF_BAD;
    }
    *out = (int)x;
    return 0;
}

/* A setting that must have one value (or be absent) for kvscope's math to be GPT-2's. */
static int cfg_require(json_t *root, const char *key, json_t *want, const char *what,
                       const char *path, char *err, size_t errsize) {
    json_t *v = json_object_get(root, key);
    int ok = !v || json_equal(v, want);
    json_decref(want);
    if (!ok) snprintf(err, errsize, "%s: \"%s\" is not supported: kvscope computes %s", path, key, what);
    return ok ? 0 : HF_BAD;
}

int hf_config_load(const char *dir, Config *cfg, char *err, size_t errsize) {
    char path[4200], *text;
    size_t len;
    if (path_join(path, sizeof path, dir, "config.json")) {
        snprintf(err, errsize, "%s: path too long", dir);
        return HF_BAD;
    }
    int rc = infile_read(path, HF_CONFIG_MAX, &text, &len, err, errsize);
    if (rc) return rc == INFILE_NOMEM ? HF_NOMEM : HF_BAD;
    rc = hf_config_parse(text, len, path, cfg, err, errsize);
    free(text);
    return rc;
}

/* The start token: bos_token_id when add_bos_token is true (kvscope's own models), else
 * none (Hugging Face's GPT-2 names 50256 but its tokenizer adds nothing). */
static int cfg_bos(json_t *root, Config *c, const char *path, char *err, size_t errsize) {
    json_t *add = json_object_get(root, "add_bos_token");
    c->bos = -1;
    if (!add || json_is_false(add)) return 0;
    if (!json_is_true(add)) {
        snprintf(err, errsize, "%s: \"add_bos_token\" must be true or false", path);
        return HF_BAD;
    }
    json_t *v = json_object_get(root, "bos_token_id");
    if (!v || !json_is_integer(v)) { /* 1.5, "1", null: not a token id, and not missing */
        snprintf(err, errsize, "%s: \"bos_token_id\" %s (add_bos_token is true)", path,
                 v ? "is not an integer" : "is missing");
        return HF_BAD;
    }
    if (json_integer_value(v) < 0 || json_integer_value(v) >= c->V) {
        snprintf(err, errsize, "%s: \"bos_token_id\" (%lld) is outside the vocabulary 0..%d", path,
                 (long long)json_integer_value(v), c->V - 1);
        return HF_BAD;
    }
    c->bos = (int)json_integer_value(v);
    return 0;
}

int hf_config_parse(const char *text, size_t len, const char *path, Config *cfg, char *err,
                    size_t errsize) {
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errsize, "%s: invalid JSON at line %d: %s", path, je.line, je.text);
        message_one_line(err);
        return HF_BAD;
    }
    int rc = HF_BAD;
    Config c = config_default();
    if (!json_is_object(root)) {
        snprintf(err, errsize, "%s: not a JSON object", path);
        goto done;
    }
    json_t *mt = json_object_get(root, "model_type");
    if (mt && !(json_is_string(mt) && strcmp(json_string_value(mt), "gpt2") == 0)) {
        snprintf(err, errsize, "%s: \"model_type\" must be \"gpt2\"", path);
        goto done;
    }
    if (cfg_int(root, "n_layer", 1, MODEL_MAX_LAYERS, &c.L, path, err, errsize) ||
        cfg_int(root, "n_head", 1, MODEL_MAX_HEADS, &c.NH, path, err, errsize) ||
        cfg_int(root, "n_embd", 1, MODEL_MAX_DIM, &c.C, path, err, errsize) ||
        cfg_int(root, "n_positions", 1, MODEL_MAX_CTX, &c.N, path, err, errsize) ||
        cfg_int(root, "vocab_size", 1, MODEL_MAX_VOCAB, &c.V, path, err, errsize) ||
        cfg_bos(root, &c, path, err, errsize))
        goto done;
    json_t *eps = json_object_get(root, "layer_norm_epsilon");
    if (eps) {
        double e = json_number_value(eps);
        if (!json_is_number(eps) || !(e > 0.0 && e < 1.0)) {
            snprintf(err, errsize, "%s: \"layer_norm_epsilon\" must be a number in (0, 1)", path);
            goto done;
        }
        c.eps = (float)e;
    }
    json_t *inner = json_object_get(root, "n_inner");
    if (inner && !json_is_null(inner) &&
        !(json_is_integer(inner) && json_integer_value(inner) == 4 * (json_int_t)c.C)) {
        snprintf(err, errsize, "%s: \"n_inner\" must be null or 4·n_embd = %d", path, 4 * c.C);
        goto done;
    }
    if (cfg_require(root, "activation_function", json_string("gelu_new"),
                    "the tanh GELU (\"gelu_new\")", path, err, errsize) ||
        cfg_require(root, "scale_attn_weights", json_true(), "scores / sqrt(hs)", path, err, errsize) ||
        cfg_require(root, "scale_attn_by_inverse_layer_idx", json_false(),
                    "scores / sqrt(hs) in every layer", path, err, errsize))
        goto done;
    if (c.C % c.NH != 0) {
        snprintf(err, errsize, "%s: \"n_embd\" (%d) must be divisible by \"n_head\" (%d)", path, c.C, c.NH);
        goto done;
    }
    const char *bad = config_check(&c);
    if (bad) {
        snprintf(err, errsize, "%s: %s", path, bad);
        goto done;
    }
    *cfg = c;
    rc = 0;
done:
    json_decref(root);
    if (rc) message_one_line(err);
    return rc;
}

int hf_has_tokenizer(const char *dir) {
    char a[4200], b[4200];
    if (path_join(a, sizeof a, dir, "vocab.json") || path_join(b, sizeof b, dir, "merges.txt")) return 0;
    int n = (access(a, F_OK) == 0) + (access(b, F_OK) == 0);
    return n == 2 ? 1 : n == 1 ? -1 : 0;
}

/* ---- model.safetensors -------------------------------------------------- */

static const char *shape_str(const size_t *shape, int ndim, char *buf, size_t size) {
    size_t k = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%zu", i ? "," : "", shape[i]);
    if (k < size) snprintf(buf + k, size - k, "]");
    return buf;
}

/* The name without "transformer.", and whether the tensor is a mask buffer. */
static const char *bare_name(const char *name) {
    return strncmp(name, "transformer.", 12) == 0 ? name + 12 : name;
}

static int is_mask_buffer(const char *bare) {
    int l, k = 0;
    if (sscanf(bare, "h.%d.attn.%n", &l, &k) != 1 || k == 0) return 0;
    return strcmp(bare + k, "bias") == 0 || strcmp(bare + k, "masked_bias") == 0;
}

/* A tensor with a NaN or an infinity would make every logit NaN: refuse it, naming
 * the first bad element by its flat index and by row and column. */
static int check_finite(const float *x, const TensorSpec *sp, const char *path, char *err,
                        size_t errsize) {
    for (size_t i = 0; i < sp->numel; i++) {
        if (isfinite(x[i])) continue;
        char at[64] = "";
        if (sp->ndim == 2) snprintf(at, sizeof at, " ([%zu, %zu])", i / sp->shape[1], i % sp->shape[1]);
        snprintf(err, errsize, "%s: tensor \"%s\": non-finite value %s at index %zu%s", path, sp->name,
                 isnan(x[i]) ? "nan" : x[i] > 0 ? "inf" : "-inf", i, at);
        return HF_BAD;
    }
    return 0;
}

/* Match the file's tensors to the config's (names, one copy each, shapes) and read them into
 * blob; with blob NULL, only match. 0, HF_BAD with err, or HF_NOMEM. */
static int load_tensors(const SafeTensors *st, const Config *cfg, float *blob, const char *path,
                        char *err, size_t errsize) {
    int ns = model_tensor_specs(cfg, NULL);
    TensorSpec *specs = malloc((size_t)ns * sizeof *specs);
    const StTensor **found = calloc((size_t)ns, sizeof *found);
    int rc = 0;
    char s1[64], s2[64];
    if (!specs || !found) {
        rc = HF_NOMEM;
        goto done;
    }
    model_tensor_specs(cfg, specs);
    /* every tensor in the file must be one we expect (under one name) or a mask buffer */
    const StTensor *lm_head = NULL;
    for (size_t i = 0; i < st->n && !rc; i++) {
        const char *bare = bare_name(st->t[i].name);
        if (is_mask_buffer(bare)) continue;
        if (strcmp(st->t[i].name, "lm_head.weight") == 0) {
            lm_head = &st->t[i];
            continue;
        }
        int j = 0;
        while (j < ns && strcmp(specs[j].name, bare) != 0) j++;
        if (j == ns) {
            snprintf(err, errsize, "%s: tensor \"%.100s\": not a GPT-2 weight (config.json: n_layer %d)",
                     path, st->t[i].name, cfg->L);
            rc = HF_BAD;
        } else if (found[j]) {
            snprintf(err, errsize, "%s: tensor \"%s\": present twice (with and without \"transformer.\")",
                     path, specs[j].name);
            rc = HF_BAD;
        } else {
            found[j] = &st->t[i];
        }
    }
    for (int j = 0; j < ns && !rc; j++) {
        const StTensor *t = found[j];
        if (!t) {
            snprintf(err, errsize, "%s: tensor \"%s\": missing (expected shape %s)", path, specs[j].name,
                     shape_str(specs[j].shape, specs[j].ndim, s1, sizeof s1));
            rc = HF_BAD;
            break;
        }
        int same = t->ndim == specs[j].ndim;
        for (int d = 0; same && d < t->ndim; d++) same = t->shape[d] == specs[j].shape[d];
        if (!same) {
            snprintf(err, errsize, "%s: tensor \"%.100s\": shape %s, expected %s", path, t->name,
                     shape_str(t->shape, t->ndim, s1, sizeof s1),
                     shape_str(specs[j].shape, specs[j].ndim, s2, sizeof s2));
            rc = HF_BAD;
            break;
        }
        if (!blob) continue; /* names and shapes only */
        /* Always a copy: the blob's layout (model_tensor_specs) is not the file's,
         * which interleaves mask buffers and may hold F16/BF16. */
        if (st_read_f32(st, t, blob + specs[j].offset, err, errsize)) rc = HF_BAD;
        else rc = check_finite(blob + specs[j].offset, &specs[j], path, err, errsize);
    }
    if (!rc && lm_head && blob) {
        /* a separate lm_head is fine only if it is wte itself: kvscope ties them */
        size_t VC = specs[0].numel;
        int same = lm_head->ndim == 2 && lm_head->shape[0] == specs[0].shape[0] &&
                   lm_head->shape[1] == specs[0].shape[1];
        float *tmp = same ? malloc(VC * sizeof *tmp) : NULL;
        if (same && !tmp) {
            rc = HF_NOMEM;
        } else if (!same || st_read_f32(st, lm_head, tmp, err, errsize) ||
                   memcmp(tmp, blob + specs[0].offset, VC * sizeof *tmp) != 0) {
            snprintf(err, errsize, "%s: tensor \"lm_head.weight\": differs from wte.weight "
                     "(kvscope ties the output head to the embedding)", path);
            rc = HF_BAD;
        }
        free(tmp);
    }
done:
    free(specs);
    free(found);
    return rc;
}

/* A tensor the config names that the file lacks or holds in another shape (err, from
 * the names-and-shapes pass): when the config's tensors need more values than the file
 * holds, say first that the config does not match its file, with both sizes. */
static void name_sizes(const SafeTensors *st, size_t n, const char *dir, char *err, size_t errsize) {
    size_t have = 0;
    for (size_t i = 0; i < st->n; i++) have += st->t[i].numel;
    if (have >= n) return;
    char what[1024];
    snprintf(what, sizeof what, "%s", err);
    snprintf(err, errsize, "%s: config.json does not match model.safetensors: the config's tensors "
             "need %zu values (%.3g GB as float32), the file holds %zu; first difference: %s", dir,
             n, (double)n * 4.0 / 1e9, have, what);
}

int hf_weights_load(const char *dir, const Config *cfg, Model *m, char *err, size_t errsize) {
    char path[4200];
    memset(m, 0, sizeof *m);
    if (path_join(path, sizeof path, dir, "model.safetensors")) {
        snprintf(err, errsize, "%s: path too long", dir);
        return HF_BAD;
    }
    SafeTensors st;
    int rc = st_open(&st, path, err, errsize);
    if (rc) return rc == ST_NOMEM ? HF_NOMEM : HF_BAD;
    size_t n = model_num_params(cfg);
    /* names and shapes before the memory: a config that does not match its file is named
     * as that, not as "out of memory" for a size the file never had */
    if ((rc = load_tensors(&st, cfg, NULL, path, err, errsize))) {
        if (rc == HF_BAD) name_sizes(&st, n, dir, err, errsize);
        st_close(&st);
        return rc;
    }
    float *blob = model_blob_alloc(cfg);
    if (!blob) rc = HF_NOMEM;
    else rc = load_tensors(&st, cfg, blob, path, err, errsize);
    st_close(&st);
    if (!rc && model_init_from_blob(m, cfg, blob, 1) != 0) rc = HF_NOMEM;
    if (rc) free(blob);
    if (rc == HF_BAD) message_one_line(err); /* a tensor's name may hold a newline */
    return rc;
}

/* ---- export ------------------------------------------------------------- */

/* The shortest %g that reads back as the same float: 1e-05, not 9.99999975e-06. */
static void float_text(float x, char *buf, size_t size) {
    for (int p = 1; p <= 9; p++) {
        snprintf(buf, size, "%.*g", p, (double)x);
        if (strtof(buf, NULL) == x) return;
    }
}

int hf_config_text(const Config *c, char *buf, size_t size) {
    char eps[32];
    float_text(c->eps, eps, sizeof eps);
    return snprintf(buf, size,
            "{\n"
            "  \"activation_function\": \"gelu_new\",\n"
            "%s"
            "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
            "  \"attn_pdrop\": 0.1,\n"
            "  \"bos_token_id\": %d,\n"
            "  \"embd_pdrop\": 0.1,\n"
            "  \"eos_token_id\": %d,\n"
            "  \"initializer_range\": 0.02,\n"
            "  \"layer_norm_epsilon\": %s,\n"
            "  \"model_type\": \"gpt2\",\n"
            "  \"n_ctx\": %d,\n"
            "  \"n_embd\": %d,\n"
            "  \"n_head\": %d,\n"
            "  \"n_inner\": null,\n"
            "  \"n_layer\": %d,\n"
            "  \"n_positions\": %d,\n"
            "  \"resid_pdrop\": 0.1,\n"
            "  \"scale_attn_weights\": true,\n"
            "  \"tie_word_embeddings\": true,\n"
            "  \"use_cache\": true,\n"
            "  \"vocab_size\": %d\n"
            "}\n",
            c->bos >= 0 ? "  \"add_bos_token\": true,\n" : "", c->bos >= 0 ? c->bos : c->V - 1,
            c->bos >= 0 ? c->bos : c->V - 1, eps, c->N, c->C, c->NH, c->L, c->N, c->V);
}

int hf_export(const Model *m, const char *dir, char *err, size_t errsize) {
    const Config *c = &m->cfg;
    char path[4200], text[2048];
    if (path_join(path, sizeof path, dir, "config.json")) {
        snprintf(err, errsize, "%s: path too long", dir);
        return HF_IO;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errsize, "%s: cannot write: %s", path, strerror(errno));
        return HF_IO;
    }
    const int len = hf_config_text(c, text, sizeof text); /* < 1 KB: it fits */
    fwrite(text, 1, (size_t)len, f);
    if (file_close(f) != 0) {
        snprintf(err, errsize, "%s: cannot write (%s)", path, write_error_text(errno));
        return HF_IO;
    }
    int ns = model_tensor_specs(c, NULL);
    TensorSpec *specs = malloc((size_t)ns * sizeof *specs);
    StWrite *w = calloc((size_t)ns, sizeof *w);
    if (!specs || !w) {
        free(specs);
        free(w);
        return HF_NOMEM;
    }
    model_tensor_specs(c, specs);
    for (int i = 0; i < ns; i++) {
        w[i].name = specs[i].name;
        w[i].ndim = specs[i].ndim;
        w[i].shape[0] = specs[i].shape[0];
        w[i].shape[1] = specs[i].shape[1];
        w[i].data = m->w.blob + specs[i].offset;
    }
    path_join(path, sizeof path, dir, "model.safetensors");
    int rc = st_write(path, w, (size_t)ns, err, errsize);
    free(specs);
    free(w);
    return rc == 0 ? 0 : rc == ST_NOMEM ? HF_NOMEM : HF_IO;
}
