/* fuzz_config.c — libFuzzer target: any bytes as a Hugging Face config.json, read into a
 * model shape and that shape used as the commands use it.
 *   - The reader accepts or rejects without a crash, a leak or undefined behaviour; a
 *     rejection is one line naming the file.
 *   - An accepted config is one the engine can build: config_check passes, C divisible by
 *     NH, every size within model.h's limits, eps in (0, 1), the start token in the
 *     vocabulary.
 *   - Its tensors (model_tensor_specs) lie end to end from offset 0, each numel the
 *     product of its shape, as many parameters as model_num_params; the closed forms of
 *     `info` and `kvmem` hold (half weights read half the bytes, a KV row of every type
 *     has bytes, the FLOPs grow with the tokens).
 *   - Written back as `export` writes config.json (hf_config_text), it reads as the same
 *     shape, eps and start token.
 *   - A small one (at most TINY_PARAMS parameters) is built with hashed weights and run,
 *     for one input in MODEL_EVERY (by a hash of its bytes: a run costs some 20 parses,
 *     and the fuzzer must keep its pace), in float32 and, one run in HALF_EVERY, with fp16
 *     or bf16 weights: decoding with the KV cache gives the logits of recomputing
 *     without it.
 * Run with `make fuzz` (tests/fuzz/fuzz.mk); tests/fuzz/config.dict holds its words. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "hf_model.h"
#include "kvmem.h"
#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { TINY_PARAMS = 3000, TINY_TOKENS = 3, MODEL_EVERY = 32, HALF_EVERY = 8 };

/* The tensors of the shape, end to end. */
static void check_specs(const Config *c) {
    const int n = model_tensor_specs(c, NULL);
    if (n != 4 + 12 * c->L) abort(); /* wte, wpe, ln_f (2) and 12 per block */
    TensorSpec *s = malloc((size_t)n * sizeof *s);
    if (!s) return;
    model_tensor_specs(c, s);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t numel = 1;
        for (int d = 0; d < s[i].ndim; d++) numel *= s[i].shape[d];
        if (s[i].offset != at || s[i].numel != numel || numel == 0 || !s[i].name[0]) abort();
        at += numel;
    }
    if (at != model_num_params(c)) abort();
    free(s);
}

/* What info and kvmem compute from the shape alone. */
static void check_closed_forms(const Config *c) {
    const uint64_t f32 = model_weight_bytes_read(c, DT_FP32, 1),
                   f16 = model_weight_bytes_read(c, DT_FP16, 1),
                   b16 = model_weight_bytes_read(c, DT_BF16, 1);
    /* a decode step reads every weight but wpe, of which it reads its own row (and wte's) */
    const uint64_t params = model_num_params(c), C = (uint64_t)c->C, N = (uint64_t)c->N;
    if (f16 != b16 || f16 >= f32 || f32 != 4 * (params - N * C + 2 * C)) abort();
    if (flops_layers_formula(c, 2, 0) <= flops_layers_formula(c, 1, 0)) abort();
    const KvShape ks = {"custom", c->L, c->NH, c->NH, c->C / c->NH, c->N};
    if (kvmem_check(&ks)) abort();
    for (int dt = 0; dt < DT_COUNT; dt++) {
        uint64_t one = 0, two = 0;
        if (kvmem_bytes(&ks, 1, 1, (Dtype)dt, &one) || one == 0) abort();
        if (kvmem_bytes(&ks, 2, 1, (Dtype)dt, &two) || two != 2 * one) abort();
    }
}

/* export's config.json reads back as the same config. */
static void check_round_trip(const Config *c) {
    char text[2048], err[1024];
    const int len = hf_config_text(c, text, sizeof text);
    if (len < 0 || (size_t)len >= sizeof text) abort();
    Config back;
    if (hf_config_parse(text, (size_t)len, "config.json", &back, err, sizeof err) != 0) abort();
    if (back.L != c->L || back.NH != c->NH || back.C != c->C || back.N != c->N || back.V != c->V ||
        back.bos != c->bos || memcmp(&back.eps, &c->eps, sizeof c->eps) != 0)
        abort();
}

/* The cache's logits at every step are those of recomputing, on m's weights. */
static void cache_matches_recompute(Model *m) {
    const Config *c = &m->cfg;
    Generator gc, gr;
    if (generator_init(&gc, m, GEN_CACHE) != 0) return;
    if (generator_init(&gr, m, GEN_RECOMPUTE) != 0) {
        generator_free(&gc);
        return;
    }
    int toks[TINY_TOKENS];
    for (int i = 0; i < TINY_TOKENS; i++) toks[i] = (i * 37 + 5) % c->V;
    const int steps = c->N < TINY_TOKENS ? c->N : TINY_TOKENS;
    for (int s = 0; s < steps; s++) {
        const int a = s ? generator_decode(&gc, toks[s], s, NULL) : generator_prefill(&gc, toks, 1, NULL);
        const int b = s ? generator_decode(&gr, toks[s], s, NULL) : generator_prefill(&gr, toks, 1, NULL);
        if (a != b) abort();
        if (a) break; /* both refused alike (non-finite logits of an extreme eps) */
        for (int v = 0; v < c->V; v++) {
            const float x = gc.logits[v], y = gr.logits[v];
            if (!(fabsf(x - y) <= 1e-4f * (1.0f + fabsf(y)))) abort();
        }
    }
    generator_free(&gc);
    generator_free(&gr);
}

/* A small model, in float32 and then, unless half is DT_FP32, with half weights (DT_FP16
 * or DT_BF16): the cache's logits are those of recomputing. */
static void check_tiny_model(const Config *c, Dtype half) {
    const size_t n = model_num_params(c);
    if (n > TINY_PARAMS) return;
    /* weights from a cheap hash in [-0.05, 0.05) (model_init_random's 12 draws a weight
     * would cost more than the run) */
    float *blob = malloc(n * sizeof *blob);
    if (!blob) return;
    for (size_t i = 0; i < n; i++)
        blob[i] = (float)((uint32_t)(i * 2654435761u) >> 8) / 16777216.0f * 0.1f - 0.05f;
    Model m;
    if (model_init_from_blob(&m, c, blob, 1) != 0) {
        free(blob);
        return;
    }
    cache_matches_recompute(&m);
    if (half != DT_FP32 && model_set_weights(&m, half) == 0) cache_matches_recompute(&m);
    model_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Config c;
    char err[1024];
    err[0] = '\0';
    int rc = hf_config_parse((const char *)data, size, "config.json", &c, err, sizeof err);
    if (rc != 0) {
        if (rc != HF_BAD || strncmp(err, "config.json: ", 13) != 0 || strchr(err, '\n')) abort();
        return 0;
    }
    if (config_check(&c) != NULL || c.C % c.NH != 0) abort();
    if (c.L < 1 || c.L > MODEL_MAX_LAYERS || c.NH < 1 || c.NH > MODEL_MAX_HEADS || c.C < 1 ||
        c.C > MODEL_MAX_DIM || c.N < 1 || c.N > MODEL_MAX_CTX || c.V < 1 || c.V > MODEL_MAX_VOCAB)
        abort();
    if (!(c.eps > 0.0f && c.eps < 1.0f) || c.bos < -1 || c.bos >= c.V) abort();
    check_specs(&c);
    check_closed_forms(&c);
    check_round_trip(&c);
    uint32_t h = 2166136261u; /* FNV-1a of the input */
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
    const uint32_t k = h / MODEL_EVERY; /* the half weights cost as much again: 1 run in 8 */
    if (h % MODEL_EVERY == 0)
        check_tiny_model(&c, k % HALF_EVERY ? DT_FP32 : (k / HALF_EVERY) % 2 ? DT_FP16 : DT_BF16);
    return 0;
}
