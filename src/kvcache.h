/* kvcache.h — the KV cache: per layer, the keys and values of every past token.
 *
 * Layout: k[l] and v[l] are (capacity, NH, hs) = (capacity, C) row-major float32;
 * rows 0..len-1 hold tokens 0..len-1 (unless some were dropped). Storage grows by doubling (bounded by the
 * context N), so "reserved" can be larger than "used".
 *
 *   used bytes     = 2 · L · len      · C · sizeof(float)
 *   reserved bytes = 2 · L · capacity · C · sizeof(float)
 */
#ifndef KVSCOPE_KVCACHE_H
#define KVSCOPE_KVCACHE_H

#include <stddef.h>

typedef struct {
    int L, NH, hs;   /* layers, heads, head size */
    int max_len;     /* never grows past this many tokens: the context N */
    int capacity;    /* tokens reserved per layer */
    int len;         /* tokens stored (slots in use) */
    int n_seen;      /* tokens ever appended: the absolute position of the next one.
                      * Equals len unless tokens were dropped (kvcache_drop). */
    float **k;       /* (L) pointers, each (capacity, NH*hs) */
    float **v;       /* (L) pointers, each (capacity, NH*hs) */
} KVCache;

/* Set up an empty cache (nothing reserved yet). Returns 0, or -1 when out of memory. */
int kvcache_init(KVCache *c, int L, int NH, int hs, int max_len);
/* Release everything; c may be zeroed or half-initialised. */
void kvcache_free(KVCache *c);
/* Forget every token but keep the reservation. */
void kvcache_reset(KVCache *c);
/* Make room for len + n tokens (doubling). 0, or -1 when out of memory or past max_len. */
int kvcache_reserve(KVCache *c, int n);
/* Remove slots first .. first+count-1 of every layer, shifting later ones down.
 * Positions already seen stay seen (n_seen is kept). 0, or -1 on a bad range. */
int kvcache_drop(KVCache *c, int first, int count);
/* Rows where token len + i of layer l goes (after kvcache_reserve). */
float *kvcache_k_row(const KVCache *c, int l, int pos);
float *kvcache_v_row(const KVCache *c, int l, int pos);

size_t kvcache_bytes_per_token(const KVCache *c); /* 2 · L · C · sizeof(float) */
size_t kvcache_bytes_used(const KVCache *c);
size_t kvcache_bytes_reserved(const KVCache *c);

#endif
