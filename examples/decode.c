/* decode.c — the engine as a library: load a model kvscope trained, prefill a prompt,
 * decode with the KV cache, print the text. Links with src/engine/ (and util's bigbuf)
 * and libm alone: no figures, no JSON library, no command line of kvscope's.
 *
 *   make examples                                   # builds and runs it
 *   build/release/examples/decode [DIR [PROMPT [STEPS]]]   # data/model "And God said" 40
 *
 * A model folder holds config.json and model.safetensors (src/modelio/ reads any Hugging
 * Face GPT-2 folder, validating both with jansson). This file reads only what it needs of
 * the folders kvscope's trainer writes: a few integers of config.json, and the float32
 * tensors of model.safetensors found by their Hugging Face names (model_tensor_specs).
 * Start your own experiment here: subscribe to a hook point (hooks.h) and pass the hooks
 * to generator_prefill and generator_decode instead of NULL. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "model.h"

/* The whole file path, or NULL (*size its bytes). */
static char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = '\0';
        *size = (size_t)n;
    } else {
        free(buf);
        buf = NULL;
    }
    if (f) fclose(f);
    return buf;
}

/* The number after "key": in a JSON text, or fallback when the key is absent. */
static double json_number(const char *json, const char *key, double fallback) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    return p ? strtod(p + strlen(pat), NULL) : fallback;
}

static int read_config(const char *dir, Config *cfg) {
    char path[4096];
    size_t n;
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *j = slurp(path, &n);
    if (!j) return -1;
    cfg->L = (int)json_number(j, "n_layer", 0);
    cfg->NH = (int)json_number(j, "n_head", 0);
    cfg->C = (int)json_number(j, "n_embd", 0);
    cfg->N = (int)json_number(j, "n_positions", 0);
    cfg->V = (int)json_number(j, "vocab_size", 0);
    cfg->eps = (float)json_number(j, "layer_norm_epsilon", 1e-5);
    cfg->bos = strstr(j, "\"add_bos_token\": true") ? (int)json_number(j, "bos_token_id", -1) : -1;
    free(j);
    return config_check(cfg) ? -1 : 0;
}

/* Every tensor of the table into the blob, from "name":{"dtype":"F32",...,"data_offsets":[a,b]}. */
static int read_weights(const char *dir, const Config *cfg, float *blob) {
    char path[4096], pat[64];
    size_t size;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    char *f = slurp(path, &size);
    uint64_t hlen = 0;
    if (!f || size < 8) return free(f), -1;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | (unsigned char)f[i]; /* little-endian */
    if (hlen > size - 8) return free(f), -1;
    char *header = malloc(hlen + 1);
    if (!header) return free(f), -1;
    memcpy(header, f + 8, hlen);
    header[hlen] = '\0';
    const int n = model_tensor_specs(cfg, NULL);
    TensorSpec *specs = malloc((size_t)n * sizeof *specs);
    int rc = specs ? 0 : -1;
    if (specs) model_tensor_specs(cfg, specs);
    for (int i = 0; rc == 0 && i < n; i++) {
        snprintf(pat, sizeof pat, "\"%s\":", specs[i].name);
        const char *t = strstr(header, pat), *off = t ? strstr(t, "\"data_offsets\":[") : NULL;
        unsigned long long a, b;
        if (!t || !strstr(t, "\"F32\"") || !off || sscanf(off + 16, "%llu,%llu", &a, &b) != 2 ||
            b < a || b - a != specs[i].numel * sizeof(float) || b > size - 8 - hlen)
            rc = -1;
        else memcpy(blob + specs[i].offset, f + 8 + hlen + a, b - a);
    }
    free(specs);
    free(header);
    free(f);
    return rc;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "data/model";
    const char *prompt = argc > 2 ? argv[2] : "And God said";
    char *end = NULL;
    const long steps = argc > 3 ? strtol(argv[3], &end, 10) : 40;
    if (end && (*end || end == argv[3] || steps < 0 || steps > 65536)) {
        fprintf(stderr, "decode: STEPS must be a whole number in 0..65536: %s\n", argv[3]);
        return 2;
    }
    Config cfg;
    Model m;
    Generator g;
    float *blob = NULL;
    if (read_config(dir, &cfg) || !(blob = model_blob_alloc(&cfg)) ||
        read_weights(dir, &cfg, blob) || model_init_from_blob(&m, &cfg, blob, 1)) {
        fprintf(stderr, "decode: cannot load a float32 model of bytes from %s\n", dir);
        free(blob);
        return 2;
    }
    /* byte-level model: a prompt's UTF-8 bytes are its tokens, after the start token */
    int n = 0, *tokens = malloc((strlen(prompt) + 1) * sizeof *tokens);
    if (!tokens || cfg.V != 256 || generator_init(&g, &m, GEN_CACHE)) {
        fprintf(stderr, "decode: out of memory, or not a byte-level model (vocab %d)\n", cfg.V);
        return 2;
    }
    if (cfg.bos >= 0) tokens[n++] = cfg.bos;
    for (const char *c = prompt; *c; c++) tokens[n++] = (unsigned char)*c;
    int rc = n + steps <= (long)cfg.N ? generator_prefill(&g, tokens, n, NULL) : -1;
    fputs(prompt, stdout);
    for (int step = 1; rc == 0 && step <= (int)steps; step++) {
        const int next = generator_argmax(&g); /* greedy */
        putchar(next);
        rc = generator_decode(&g, next, step, NULL); /* K and V of the new token join the cache */
    }
    putchar('\n');
    generator_free(&g);
    model_free(&m);
    free(tokens);
    return rc ? 2 : 0;
}
