/* kvcache.h — the KV cache: per layer, the keys and values of every past token.
 *
 * Layout: per layer l, one row per slot; a row is one token's C = NH·hs keys (or
 * values), heads side by side. Slots 0..len-1 are in use; pos[slot] is the absolute
 * position of the token a slot holds (slot == position unless slots were dropped).
 * Two ways to remove tokens: kvcache_drop evicts slots (a window, the articles' bug:
 * their positions stay seen, the next token comes after them), kvcache_truncate takes
 * the newest tokens back as if they were never appended (a step done again). The cache
 * does not report either: whoever drops slots says so with the next step (StepLabel).
 * Storage grows by doubling (bounded by the context N and by max_bytes), so
 * "reserved" can be larger than "used".
 *
 * The storage type (dtype) decides the bytes of a row, row_bytes = dtype_row_bytes
 * (dtype.h: fp32 4·C, fp16 and bf16 2·C, int8 C + 4·NH, q8_0 ⌈C/32⌉·34):
 *   bytes per token = 2 · L · row_bytes      used = len · that      reserved = capacity · that
 *
 * fp32 is stored as floats in k[l]/v[l], written and read in place: no copy (the model's
 * c_attn writes its K and V straight into them, kvcache_rows). Other types are
 * stored in kq[l]/vq[l]; kvcache_store converts a new row, and kvcache_layer dequantizes
 * a layer's rows into a float scratch buffer for attention (a working buffer of one
 * layer, not counted as cache bytes).
 *
 * A simulated int8 read-back (kvcache_set_int8_sim), for measuring how int8 groups
 * matter: the cache stores fp32 (and counts fp32 bytes), and kvcache_layer returns K and
 * V quantized to int8 and read back, each by its own grouping:
 *   token    one scale per token and head: exactly what the int8 type stores and reads;
 *   channel  one scale per channel over the slots the read covers (every position held
 *            at that step, the newest one included) — the grouping KIVI uses for keys.
 * A real per-channel cache cannot know a channel's scale before the positions it covers
 * have arrived (KIVI quantizes blocks of tokens and keeps the newest in fp16); this
 * measures the rounding alone, with the whole cache re-quantized at every step.
 *
 * Two transforms before the storage type (kvcache_set_transform), measured by the
 * frontier (frontier.h):
 *   kv_heads G  K and V of the NH heads mean-pooled into G groups of NH/G heads (GQA made
 *               from a multi-head checkpoint, as Ainslie et al. 2023 convert one): every
 *               head of a group reads its group's mean. The rows still hold NH heads (the
 *               kernels read them so), but the bytes counted are those of G heads:
 *               row_bytes = dtype_row_bytes(dtype, G·hs, G).
 *   rotate      each head's hs values turned by the orthonormal Hadamard transform
 *               (quant.h) before they are stored and turned back when read: the same
 *               numbers up to float rounding, but a block quantizer sees no outlier channel.
 *
 * Eviction without moving rows (evict.h): keep, when not NULL, marks for every layer l,
 * head h and slot s whether head h of layer l still reads slot s,
 * keep[(l·NH + h)·keep_stride + s]; attention gives a slot it does not keep no weight.
 */
#ifndef KVSCOPE_KVCACHE_H
#define KVSCOPE_KVCACHE_H

#include <stddef.h>

#include "dtype.h"

/* How the simulated int8 read-back groups the values of K (or V). */
typedef enum { KVQ_NONE, KVQ_TOKEN, KVQ_CHANNEL, KVQ_COUNT } KVQuantGroup;

typedef struct {
    int L, NH, hs;   /* layers, heads, head size */
    int max_len;     /* never grows past this many tokens: the context N */
    int capacity;    /* tokens reserved per layer */
    int len;         /* tokens stored (slots in use) */
    int n_seen;      /* tokens ever appended: the absolute position of the next one.
                      * Equals len unless tokens were dropped (kvcache_drop). */
    Dtype dtype;   /* storage type, DT_FP32 unless kvcache_set_dtype changed it */
    size_t row_bytes;  /* bytes of one token's K (or V) row in one layer */
    size_t max_bytes;  /* 0, or a cap on reserved bytes (kvcache_set_max_bytes) */
    KVQuantGroup sim_k, sim_v; /* simulated int8 read-back of K, of V (KVQ_NONE: off) */
    unsigned char *store; /* the one block the rows below lie in (2·L·capacity rows) */
    float **k;       /* (L) pointers, each (capacity, NH*hs); fp32 only, else NULL rows */
    float **v;       /* (L) pointers, each (capacity, NH*hs); fp32 only */
    unsigned char **kq, **vq; /* (L) pointers, each (capacity, row_bytes); other types */
    float *scratch_k, *scratch_v; /* (capacity, NH*hs) one layer read back; other types
                                   * and the simulated int8 read-back */
    int *pos;        /* (capacity) absolute position held by each slot */
    int kv_heads;    /* G: K/V heads stored (NH unless mean-pooled into groups) */
    int rotate;      /* 1: Hadamard-rotated per head before the storage type */
    size_t stored_row_bytes; /* bytes of a row as laid out here (NH heads) */
    float *tbuf;     /* (2, C) a K and a V row being transformed, when kv_heads or rotate */
    const unsigned char *keep; /* NULL, or (L, NH, keep_stride): slots each head reads */
    int keep_stride;
} KVCache;

/* Set up an empty fp32 cache (nothing reserved yet). Returns 0, or -1 when out of memory. */
int kvcache_init(KVCache *c, int L, int NH, int hs, int max_len);
/* Release everything; c may be zeroed or half-initialised. */
void kvcache_free(KVCache *c);
/* Change the storage type of an empty cache (len == 0); releases the reservation.
 * 0, or -1 if the cache holds tokens or dt is not a type. */
int kvcache_set_dtype(KVCache *c, Dtype dt);
/* Simulate an int8 cache on an empty fp32 cache: K read back grouped by k, V by v
 * (KVQ_NONE leaves that side exact). Releases the reservation. 0, or -1 if the cache
 * holds tokens, is not fp32, or a group is not one. kvcache_set_dtype turns it off. */
int kvcache_set_int8_sim(KVCache *c, KVQuantGroup k, KVQuantGroup v);
/* Mean-pool K/V into kv_heads groups and/or rotate each head (see above) on an empty cache;
 * releases the reservation. 0, or -1 if the cache holds tokens, kv_heads does not divide
 * NH, or rotate is asked with hs not a power of two. */
int kvcache_set_transform(KVCache *c, int kv_heads, int rotate);
/* Cap the reserved bytes (0 = no cap). Reservations never exceed it. */
void kvcache_set_max_bytes(KVCache *c, size_t max_bytes);
/* Forget every token but keep the reservation. */
void kvcache_reset(KVCache *c);
/* Make room for len + n tokens (doubling). 0; -1 when out of memory or past max_len;
 * KVCACHE_OVER_BUDGET when len + n tokens would take more than max_bytes. */
#define KVCACHE_OVER_BUDGET (-2)
int kvcache_reserve(KVCache *c, int n);
/* 1 if len + n tokens fit under max_bytes (always 1 without a cap). Allocates nothing. */
int kvcache_fits(const KVCache *c, int n);
/* Evict slots first .. first+count-1 of every layer, shifting later ones down.
 * Positions already seen stay seen (n_seen is kept). 0, or -1 on a bad range
 * (first < 0, count < 0, or past len). */
int kvcache_drop(KVCache *c, int first, int count);
/* Keep the first len tokens and forget the newer ones as if they were never appended:
 * the next token takes the position of the first one forgotten (n_seen goes back with
 * len). The reservation stays. 0, or -1 when len < 0 or len > the tokens held. */
int kvcache_truncate(KVCache *c, int len);
/* Store one token's K and V rows (C floats each) of layer l into slot `slot`
 * (< capacity, after kvcache_reserve), converted to the storage type, and record
 * its absolute position. */
void kvcache_store(KVCache *c, int l, int slot, const float *k, const float *v, int pos);
/* The rows of slots slot..slot+n-1 of layer l (< capacity, after kvcache_reserve) for K
 * and V to be written in place, C floats each, one after the other; records their
 * positions pos0, pos0+1, ... 0, or -1 when the storage is not fp32 (then
 * kvcache_store converts each row). */
int kvcache_rows(KVCache *c, int l, int slot, int n, int pos0, float **k, float **v);
/* Slots 0..T-1 of layer l as floats, (T, C) each: for fp32 the storage itself, for
 * other types the values read back (dequantized) into the scratch buffers. */
void kvcache_layer(KVCache *c, int l, int T, const float **k, const float **v);

size_t kvcache_bytes_per_token(const KVCache *c); /* 2 · L · row_bytes */
size_t kvcache_bytes_used(const KVCache *c);
size_t kvcache_bytes_reserved(const KVCache *c);

/* "none", "token", "channel"; kvcache_quant_group_parse returns -1 if unknown. */
const char *kvcache_quant_group_name(KVQuantGroup g);
int kvcache_quant_group_parse(const char *s, KVQuantGroup *g);

#endif
