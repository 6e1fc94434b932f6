/* kvmem.c — the KV-cache size formula and the model presets. */
#include "kvmem.h"

#include <string.h>

static const KvShape PRESETS[] = {
    /* name          L   NH  kv  hs   N */
    {"gpt2",        12, 12, 12, 64, 1024},
    {"gpt2-medium", 24, 16, 16, 64, 1024},
    {"gpt2-large",  36, 20, 20, 64, 1024},
    {"gpt2-xl",     48, 25, 25, 64, 1024},
    {"llama-2-7b",  32, 32, 32, 128, 4096},
    /* grouped-query attention: fewer K/V heads than query heads */
    {"llama-3-8b",  32, 32,  8, 128, 8192},
    {"mistral-7b",  32, 32,  8, 128, 32768},
    {"qwen2-7b",    28, 28,  4, 128, 131072},
};

const KvShape *kvmem_presets(int *n) {
    *n = (int)(sizeof PRESETS / sizeof PRESETS[0]);
    return PRESETS;
}

const KvShape *kvmem_preset(const char *name) {
    for (size_t i = 0; i < sizeof PRESETS / sizeof PRESETS[0]; i++)
        if (strcmp(PRESETS[i].name, name) == 0) return &PRESETS[i];
    return NULL;
}

const char *kvmem_check(const KvShape *s) {
    if (s->L < 1) return "layers must be at least 1";
    if (s->NH < 1) return "heads must be at least 1";
    if (s->kv_heads < 1) return "kv heads must be at least 1";
    if (s->kv_heads > s->NH) return "kv heads cannot exceed heads";
    if (s->NH % s->kv_heads != 0) return "heads must be a multiple of kv heads";
    if (s->hs < 1) return "head dim must be at least 1";
    if (s->N < 1) return "context must be at least 1";
    return NULL;
}

/* *acc *= x, or -1 on overflow. */
static int mul_checked(uint64_t *acc, uint64_t x) {
    if (x != 0 && *acc > UINT64_MAX / x) return -1;
    *acc *= x;
    return 0;
}

int kvmem_bytes(const KvShape *s, uint64_t tokens, uint64_t batch, Dtype dt, uint64_t *out) {
    uint64_t b = 2, C = (uint64_t)s->kv_heads; /* K and V; the values of a row */
    if (mul_checked(&C, (uint64_t)s->hs)) return -1;
    /* the cache's own rule, so the count is what kvcache allocates */
    const size_t row = dtype_row_bytes(dt, (size_t)C, (size_t)s->kv_heads);
    if (row == 0 || mul_checked(&b, (uint64_t)s->L) || mul_checked(&b, row) ||
        mul_checked(&b, tokens) || mul_checked(&b, batch))
        return -1;
    *out = b;
    return 0;
}
