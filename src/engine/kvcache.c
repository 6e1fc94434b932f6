/* kvcache.c — contiguous KV cache growing by doubling, stored in fp32 or a smaller type. */
#include "kvcache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halfprec.h"
#include "quant.h"

static const char *const group_names[KVQ_COUNT] = {"none", "token", "channel"};

const char *kvcache_quant_group_name(KVQuantGroup g) {
    return (unsigned)g < KVQ_COUNT ? group_names[g] : "?";
}

int kvcache_quant_group_parse(const char *s, KVQuantGroup *g) {
    for (int i = 0; i < KVQ_COUNT; i++)
        if (strcmp(s, group_names[i]) == 0) {
            *g = (KVQuantGroup)i;
            return 0;
        }
    return -1;
}

int kvcache_init(KVCache *c, int L, int NH, int hs, int max_len) {
    memset(c, 0, sizeof *c);
    c->L = L;
    c->NH = NH;
    c->hs = hs;
    c->max_len = max_len;
    c->dtype = DT_FP32;
    c->kv_heads = NH;
    c->row_bytes = c->stored_row_bytes = dtype_row_bytes(DT_FP32, (size_t)NH * hs, (size_t)NH);
    c->k = calloc((size_t)L, sizeof *c->k);
    c->v = calloc((size_t)L, sizeof *c->v);
    c->kq = calloc((size_t)L, sizeof *c->kq);
    c->vq = calloc((size_t)L, sizeof *c->vq);
    if (!c->k || !c->v || !c->kq || !c->vq) {
        kvcache_free(c);
        return -1;
    }
    return 0;
}

/* Free the per-token storage, keep the layer tables. */
static void release_storage(KVCache *c) {
    for (int l = 0; l < c->L; l++) {
        if (c->k) c->k[l] = NULL;
        if (c->v) c->v[l] = NULL;
        if (c->kq) c->kq[l] = NULL;
        if (c->vq) c->vq[l] = NULL;
    }
    free(c->store);
    c->store = NULL;
    free(c->scratch_k);
    free(c->scratch_v);
    free(c->tbuf);
    c->tbuf = NULL;
    free(c->pos);
    c->scratch_k = c->scratch_v = NULL;
    c->pos = NULL;
    c->capacity = 0;
}

void kvcache_free(KVCache *c) {
    release_storage(c);
    free(c->k);
    free(c->v);
    free(c->kq);
    free(c->vq);
    memset(c, 0, sizeof *c);
}

int kvcache_set_dtype(KVCache *c, Dtype dt) {
    if (c->len != 0 || (unsigned)dt >= DT_COUNT) return -1;
    release_storage(c);
    c->dtype = dt;
    c->stored_row_bytes = dtype_row_bytes(dt, (size_t)c->NH * c->hs, (size_t)c->NH);
    c->row_bytes = dtype_row_bytes(dt, (size_t)c->kv_heads * c->hs, (size_t)c->kv_heads);
    c->sim_k = c->sim_v = KVQ_NONE;
    return 0;
}

int kvcache_set_transform(KVCache *c, int kv_heads, int rotate) {
    if (c->len != 0 || kv_heads < 1 || kv_heads > c->NH || c->NH % kv_heads != 0) return -1;
    if (rotate && (c->hs < 1 || (c->hs & (c->hs - 1)) != 0)) return -1;
    release_storage(c);
    c->kv_heads = kv_heads;
    c->rotate = rotate != 0;
    c->row_bytes = dtype_row_bytes(c->dtype, (size_t)kv_heads * c->hs, (size_t)kv_heads);
    return 0;
}

int kvcache_set_int8_sim(KVCache *c, KVQuantGroup k, KVQuantGroup v) {
    if (c->len != 0 || c->dtype != DT_FP32 || (unsigned)k >= KVQ_COUNT || (unsigned)v >= KVQ_COUNT)
        return -1;
    release_storage(c); /* the next reservation adds the scratch buffers */
    c->sim_k = k;
    c->sim_v = v;
    return 0;
}

/* Does kvcache_layer read through the scratch buffers? */
static int reads_scratch(const KVCache *c) {
    return c->dtype != DT_FP32 || c->sim_k != KVQ_NONE || c->sim_v != KVQ_NONE || c->rotate;
}

void kvcache_set_max_bytes(KVCache *c, size_t max_bytes) { c->max_bytes = max_bytes; }

void kvcache_reset(KVCache *c) { c->len = c->n_seen = 0; }

int kvcache_truncate(KVCache *c, int len) {
    if (len < 0 || len > c->len) return -1;
    c->n_seen -= c->len - len;
    c->len = len;
    return 0;
}

int kvcache_drop(KVCache *c, int first, int count) {
    if (first < 0 || count < 0 || first > c->len || count > c->len - first) return -1;
    if (count == 0) return 0;
    size_t row = c->stored_row_bytes, tail = (size_t)(c->len - first - count);
    for (int l = 0; l < c->L; l++) {
        unsigned char *k = c->dtype == DT_FP32 ? (unsigned char *)c->k[l] : c->kq[l];
        unsigned char *v = c->dtype == DT_FP32 ? (unsigned char *)c->v[l] : c->vq[l];
        memmove(k + first * row, k + (first + count) * row, tail * row);
        memmove(v + first * row, v + (first + count) * row, tail * row);
    }
    if (c->pos) memmove(c->pos + first, c->pos + first + count, tail * sizeof *c->pos);
    c->len -= count;
    return 0;
}

int kvcache_fits(const KVCache *c, int n) {
    return c->max_bytes == 0 || (size_t)(c->len + n) * kvcache_bytes_per_token(c) <= c->max_bytes;
}

static int grow(void **p, size_t bytes) {
    void *q = realloc(*p, bytes);
    if (!q) return -1;
    *p = q;
    return 0;
}

/* Every layer's K and V rows in one block of 2·L·rows rows, K of layer l then its V,
 * the block on a 64-byte line. Not zeroed and on ordinary pages: a page counts
 * in the process's memory once a slot on it is written, which is what lesson 5
 * measures (on 2 MiB pages a small model's cache would count its whole reservation).
 * The slots in use move over; the old block goes. */
static int grow_store(KVCache *c, size_t rows) {
    const size_t layer = rows * c->stored_row_bytes, used = (size_t)c->len * c->stored_row_bytes;
    if (c->L > 0 && layer > SIZE_MAX / 2 / (size_t)c->L) return -1;
    void *p = NULL;
    if (posix_memalign(&p, 64, 2 * (size_t)c->L * layer)) return -1;
    unsigned char *b = p;
    for (int l = 0; l < c->L; l++) {
        unsigned char *k = b + 2 * (size_t)l * layer, *v = k + layer;
        if (c->dtype == DT_FP32) {
            if (c->store) memcpy(k, c->k[l], used), memcpy(v, c->v[l], used);
            c->k[l] = (float *)k;
            c->v[l] = (float *)v;
        } else {
            if (c->store) memcpy(k, c->kq[l], used), memcpy(v, c->vq[l], used);
            c->kq[l] = k;
            c->vq[l] = v;
        }
    }
    free(c->store);
    c->store = b;
    return 0;
}

int kvcache_reserve(KVCache *c, int n) {
    if (n < 0 || c->len + n > c->max_len) return -1;
    if (c->max_bytes && !kvcache_fits(c, n)) return KVCACHE_OVER_BUDGET; /* before allocating */
    int need = c->len + n;
    if (need <= c->capacity) return 0;
    int cap = c->capacity ? c->capacity : 16;
    while (cap < need) cap *= 2;
    if (cap > c->max_len) cap = c->max_len;
    if (c->max_bytes) { /* never reserve past the cap: round the doubling down to it */
        size_t most = c->max_bytes / kvcache_bytes_per_token(c);
        if ((size_t)cap > most) cap = (int)most; /* ≥ need, since the cap fits need */
    }
    size_t rows = (size_t)cap, C = (size_t)c->NH * c->hs;
    if (grow_store(c, rows)) return -1;
    if (reads_scratch(c) && (grow((void **)&c->scratch_k, rows * C * sizeof(float)) ||
                                grow((void **)&c->scratch_v, rows * C * sizeof(float))))
        return -1;
    if (grow((void **)&c->pos, rows * sizeof *c->pos)) return -1;
    if ((c->kv_heads != c->NH || c->rotate) && !c->tbuf && !(c->tbuf = malloc(2 * C * sizeof(float))))
        return -1;
    c->capacity = cap;
    return 0;
}

static void encode_row(const KVCache *c, unsigned char *dst, const float *x) {
    int C = c->NH * c->hs;
    switch (c->dtype) {
    case DT_FP16:
    case DT_BF16:
        for (int i = 0; i < C; i++) {
            uint16_t h = c->dtype == DT_FP16 ? fp32_to_fp16(x[i]) : fp32_to_bf16(x[i]);
            memcpy(dst + 2 * (size_t)i, &h, 2);
        }
        break;
    case DT_INT8: int8_quantize_row(dst, x, c->NH, c->hs); break;
    case DT_Q8_0: q8_0_quantize_row(dst, x, C); break;
    case DT_Q4_0: q4_0_quantize_row(dst, x, C); break;
    default: memcpy(dst, x, (size_t)C * sizeof(float)); break;
    }
}

static void decode_row(const KVCache *c, float *y, const unsigned char *src) {
    int C = c->NH * c->hs;
    switch (c->dtype) {
    case DT_FP16:
    case DT_BF16:
        for (int i = 0; i < C; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * (size_t)i, 2);
            y[i] = c->dtype == DT_FP16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
        }
        break;
    case DT_INT8: int8_dequantize_row(y, src, c->NH, c->hs); break;
    case DT_Q8_0: q8_0_dequantize_row(y, src, C); break;
    case DT_Q4_0: q4_0_dequantize_row(y, src, C); break;
    default: memcpy(y, src, (size_t)C * sizeof(float)); break;
    }
    if (c->rotate) hadamard_rows(y, c->NH, c->hs); /* H/√hs is its own inverse */
}

/* Row x as the cache keeps it, into y (C): its group's mean in every head, then turned. */
static const float *transform_row(const KVCache *c, const float *x, float *y) {
    if (c->kv_heads == c->NH && !c->rotate) return x;
    const int hs = c->hs, per = c->NH / c->kv_heads;
    for (int g = 0; g < c->kv_heads; g++)
        for (int i = 0; i < hs; i++) {
            float sum = 0.0f;
            for (int j = 0; j < per; j++) sum += x[(size_t)(g * per + j) * hs + i];
            for (int j = 0; j < per; j++) y[(size_t)(g * per + j) * hs + i] = per == 1 ? sum : sum / (float)per;
        }
    if (c->rotate) hadamard_rows(y, c->NH, hs);
    return y;
}

void kvcache_store(KVCache *c, int l, int slot, const float *k, const float *v, int pos) {
    size_t C = (size_t)c->NH * c->hs;
    if (c->tbuf) {
        k = transform_row(c, k, c->tbuf);
        v = transform_row(c, v, c->tbuf + C);
    }
    if (c->dtype == DT_FP32) {
        memcpy(c->k[l] + (size_t)slot * C, k, C * sizeof(float));
        memcpy(c->v[l] + (size_t)slot * C, v, C * sizeof(float));
    } else {
        encode_row(c, c->kq[l] + (size_t)slot * c->stored_row_bytes, k);
        encode_row(c, c->vq[l] + (size_t)slot * c->stored_row_bytes, v);
    }
    c->pos[slot] = pos;
}

int kvcache_rows(KVCache *c, int l, int slot, int n, int pos0, float **k, float **v) {
    if (c->dtype != DT_FP32 || c->kv_heads != c->NH || c->rotate) return -1; /* kvcache_store */
    *k = c->k[l] + (size_t)slot * c->NH * c->hs;
    *v = c->v[l] + (size_t)slot * c->NH * c->hs;
    for (int i = 0; i < n; i++) c->pos[slot + i] = pos0 + i;
    return 0;
}

/* T rows of fp32 storage x read back through group g: x itself when g is none. */
static const float *simulate(const KVCache *c, KVQuantGroup g, const float *x, float *y, int T) {
    if (g == KVQ_TOKEN) int8_roundtrip_tokens(y, x, T, c->NH, c->hs);
    else if (g == KVQ_CHANNEL) int8_roundtrip_channels(y, x, T, c->NH * c->hs);
    return g == KVQ_NONE ? x : y;
}

void kvcache_layer(KVCache *c, int l, int T, const float **k, const float **v) {
    if (c->dtype == DT_FP32 && !c->rotate && c->sim_k == KVQ_NONE && c->sim_v == KVQ_NONE) {
        *k = c->k[l]; /* zero-copy: attention reads the storage */
        *v = c->v[l];
        return;
    }
    if (c->dtype == DT_FP32 && !c->rotate) { /* read back through int8 (kvcache_set_int8_sim) */
        *k = simulate(c, c->sim_k, c->k[l], c->scratch_k, T);
        *v = simulate(c, c->sim_v, c->v[l], c->scratch_v, T);
        return;
    }
    size_t C = (size_t)c->NH * c->hs;
    const unsigned char *ks = c->dtype == DT_FP32 ? (const unsigned char *)c->k[l] : c->kq[l];
    const unsigned char *vs = c->dtype == DT_FP32 ? (const unsigned char *)c->v[l] : c->vq[l];
    for (int t = 0; t < T; t++) {
        decode_row(c, c->scratch_k + (size_t)t * C, ks + (size_t)t * c->stored_row_bytes);
        decode_row(c, c->scratch_v + (size_t)t * C, vs + (size_t)t * c->stored_row_bytes);
    }
    *k = c->scratch_k;
    *v = c->scratch_v;
}

size_t kvcache_bytes_per_token(const KVCache *c) { return 2u * (size_t)c->L * c->row_bytes; }

size_t kvcache_bytes_used(const KVCache *c) {
    return kvcache_bytes_per_token(c) * (size_t)c->len;
}

size_t kvcache_bytes_reserved(const KVCache *c) {
    return kvcache_bytes_per_token(c) * (size_t)c->capacity;
}
