/* kvcache.c — contiguous KV cache growing by doubling. */
#include "kvcache.h"

#include <stdlib.h>
#include <string.h>

int kvcache_init(KVCache *c, int L, int NH, int hs, int max_len) {
    memset(c, 0, sizeof *c);
    c->L = L;
    c->NH = NH;
    c->hs = hs;
    c->max_len = max_len;
    c->k = calloc((size_t)L, sizeof *c->k);
    c->v = calloc((size_t)L, sizeof *c->v);
    if (!c->k || !c->v) {
        kvcache_free(c);
        return -1;
    }
    return 0;
}

void kvcache_free(KVCache *c) {
    for (int l = 0; l < c->L; l++) {
        if (c->k) free(c->k[l]);
        if (c->v) free(c->v[l]);
    }
    free(c->k);
    free(c->v);
    memset(c, 0, sizeof *c);
}

void kvcache_reset(KVCache *c) { c->len = c->n_seen = 0; }

int kvcache_drop(KVCache *c, int first, int count) {
    if (first < 0 || count < 0 || first + count > c->len) return -1;
    size_t row = (size_t)c->NH * c->hs;
    size_t tail = (size_t)(c->len - first - count) * row * sizeof(float);
    for (int l = 0; l < c->L; l++) {
        memmove(c->k[l] + first * row, c->k[l] + (first + count) * row, tail);
        memmove(c->v[l] + first * row, c->v[l] + (first + count) * row, tail);
    }
    c->len -= count;
    return 0;
}

int kvcache_reserve(KVCache *c, int n) {
    if (n < 0 || c->len + n > c->max_len) return -1;
    int need = c->len + n;
    if (need <= c->capacity) return 0;
    int cap = c->capacity ? c->capacity : 16;
    while (cap < need) cap *= 2;
    if (cap > c->max_len) cap = c->max_len;
    size_t row = (size_t)c->NH * c->hs * sizeof(float);
    for (int l = 0; l < c->L; l++) {
        float *k = realloc(c->k[l], (size_t)cap * row);
        if (!k) return -1;
        c->k[l] = k;
        float *v = realloc(c->v[l], (size_t)cap * row);
        if (!v) return -1;
        c->v[l] = v;
    }
    c->capacity = cap;
    return 0;
}

float *kvcache_k_row(const KVCache *c, int l, int pos) {
    return c->k[l] + (size_t)pos * c->NH * c->hs;
}

float *kvcache_v_row(const KVCache *c, int l, int pos) {
    return c->v[l] + (size_t)pos * c->NH * c->hs;
}

size_t kvcache_bytes_per_token(const KVCache *c) {
    return 2u * (size_t)c->L * c->NH * c->hs * sizeof(float);
}

size_t kvcache_bytes_used(const KVCache *c) {
    return kvcache_bytes_per_token(c) * (size_t)c->len;
}

size_t kvcache_bytes_reserved(const KVCache *c) {
    return kvcache_bytes_per_token(c) * (size_t)c->capacity;
}
