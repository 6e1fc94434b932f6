/* kvmem.h — how much memory the KV cache of a real model takes.
 *
 *   bytes = 2 (K and V) × L × tokens × batch × row bytes
 *
 * where a row holds the n_kv_head × hs values of one token in one layer, stored as
 * dtype.h says (fp32 4 bytes a value; int8 1 byte a value plus a scale a head).
 *
 * With multi-head attention n_kv_head = NH; grouped-query attention (GQA) and
 * multi-query attention (MQA) keep fewer K/V heads, and the cache shrinks by
 * NH / n_kv_head. Pure arithmetic: no allocation, no I/O.
 *
 * The presets are the published configs (see the Hugging Face config.json of each
 * model): GPT-2 small/medium/large/xl (context 1024, hs 64) and LLaMA-2-7B
 * (32 layers, 32 heads, hs 128, context 4096, MHA), then three models with grouped-query
 * attention, each with hs 128 (hidden size / heads):
 *   llama-3-8b  32 layers, 32 heads, 8 KV heads, context 8192
 *               (huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json)
 *   mistral-7b  32 layers, 32 heads, 8 KV heads, context 32768 (Mistral-7B-v0.1; its
 *               4096-token sliding window is not modelled: the full cache is counted)
 *               (huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json)
 *   qwen2-7b    28 layers, 28 heads, 4 KV heads, context 131072
 *               (huggingface.co/Qwen/Qwen2-7B/blob/main/config.json)
 */
#ifndef KVSCOPE_KVMEM_H
#define KVSCOPE_KVMEM_H

#include <stdint.h>

#include "dtype.h"

typedef struct {
    const char *name;  /* "gpt2", "llama-2-7b", or "custom" */
    int L;             /* n_layer */
    int NH;            /* n_head: query heads */
    int kv_heads;      /* heads that keep K and V (= NH for MHA) */
    int hs;            /* head size (head_dim) */
    int N;             /* context: the most tokens the model takes */
} KvShape;

/* The presets, in order of size. *n receives their number. */
const KvShape *kvmem_presets(int *n);
/* The preset called name ("gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl",
 * "llama-2-7b", "llama-3-8b", "mistral-7b", "qwen2-7b"), or NULL. */
const KvShape *kvmem_preset(const char *name);

/* NULL if s is usable (every field ≥ 1, kv_heads ≤ NH and divides it), else a
 * static message naming the bad field. */
const char *kvmem_check(const KvShape *s);

/* bytes = 2 · L · row · tokens · batch into *out, row = dtype_row_bytes(dt, kv_heads·hs,
 * kv_heads): the bytes the cache allocates for one token's K (or V) in one layer, so
 * int8 counts its per-head scales. 0, or -1 when the product does not fit in 64 bits
 * or dt is not a type. */
int kvmem_bytes(const KvShape *s, uint64_t tokens, uint64_t batch, Dtype dt, uint64_t *out);

#endif
