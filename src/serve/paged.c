/* paged.c — the block pool, its free list, and attention through a block table. */
#include "paged.h"

#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "ops.h"

int paged_init(PagedCache *pc, int L, int NH, int hs, int block_size, int n_blocks,
               int max_seqs, int max_len) {
    memset(pc, 0, sizeof *pc);
    if (L < 1 || NH < 1 || hs < 1 || block_size < 1 || n_blocks < 1 || max_seqs < 1 ||
        max_len < 1)
        return -1;
    pc->L = L;
    pc->NH = NH;
    pc->hs = hs;
    pc->block_size = block_size;
    pc->n_blocks = n_blocks;
    pc->max_seqs = max_seqs;
    pc->max_len = max_len;
    pc->max_blocks = (max_len + block_size - 1) / block_size;
    size_t n = (size_t)L * n_blocks * block_size * NH * hs;
    size_t slots = (size_t)pc->max_blocks * block_size;
    pc->k = malloc(n * sizeof *pc->k);
    pc->v = malloc(n * sizeof *pc->v);
    pc->free_list = malloc((size_t)n_blocks * sizeof *pc->free_list);
    pc->seq = calloc((size_t)max_seqs, sizeof *pc->seq);
    const size_t C = (size_t)NH * hs;
    pc->workers = kern_threads();
    pc->kc = malloc((size_t)pc->workers * 2 * slots * C * sizeof *pc->kc);
    pc->scores = malloc((size_t)pc->workers * 2 * NH * slots * sizeof *pc->scores);
    if (!pc->k || !pc->v || !pc->free_list || !pc->seq || !pc->kc || !pc->scores) {
        paged_free(pc);
        return -1;
    }
    for (int s = 0; s < max_seqs; s++)
        if (!(pc->seq[s].table = malloc((size_t)pc->max_blocks * sizeof(int)))) {
            paged_free(pc);
            return -1;
        }
    /* block 0 on top: blocks are handed out 0, 1, 2, ... while none was returned */
    for (int i = 0; i < n_blocks; i++) pc->free_list[i] = n_blocks - 1 - i;
    pc->n_free = n_blocks;
    return 0;
}

void paged_free(PagedCache *pc) {
    if (pc->seq)
        for (int s = 0; s < pc->max_seqs; s++) free(pc->seq[s].table);
    free(pc->seq);
    free(pc->k);
    free(pc->v);
    free(pc->free_list);
    free(pc->kc);
    free(pc->scores);
    memset(pc, 0, sizeof *pc);
}

int paged_reserve(PagedCache *pc, int s, int n) {
    if (s < 0 || s >= pc->max_seqs || n < 0) return -1;
    PagedSeq *q = &pc->seq[s];
    const long need_slots = (long)q->len + n;
    if (need_slots > pc->max_len) return -1; /* past the context, even if a block has room */
    const int need = (int)((need_slots + pc->block_size - 1) / pc->block_size);
    if (need - q->n_blocks > pc->n_free) return PAGED_NO_BLOCKS;
    while (q->n_blocks < need) q->table[q->n_blocks++] = pc->free_list[--pc->n_free];
    return 0;
}

void paged_release(PagedCache *pc, int s) {
    if (s < 0 || s >= pc->max_seqs) return;
    PagedSeq *q = &pc->seq[s];
    /* push in reverse so the sequence's first block is the next one handed out */
    while (q->n_blocks > 0) pc->free_list[pc->n_free++] = q->table[--q->n_blocks];
    q->len = 0;
}

static float *row(const PagedCache *pc, float *base, int s, int l, int t) {
    const PagedSeq *q = &pc->seq[s];
    const int block = q->table[t / pc->block_size], off = t % pc->block_size;
    return base + (((size_t)l * pc->n_blocks + block) * pc->block_size + off) * pc->NH * pc->hs;
}

float *paged_k_row(const PagedCache *pc, int s, int l, int t) { return row(pc, pc->k, s, l, t); }
float *paged_v_row(const PagedCache *pc, int s, int l, int t) { return row(pc, pc->v, s, l, t); }

typedef struct {
    PagedCache *pc;
    KernLevel kern;  /* the model's kernels */
    const int *seq;  /* (R) */
    const int *slot; /* (R) token index of row r in its sequence */
} PagedRows;

/* k, v at the row's slot, in the block its table names */
static int paged_store(void *user, int r, int l, const float *k, const float *v) {
    const PagedRows *pr = user;
    PagedCache *pc = pr->pc;
    const size_t row = (size_t)pc->NH * pc->hs * sizeof(float);
    memcpy(paged_k_row(pc, pr->seq[r], l, pr->slot[r]), k, row);
    memcpy(paged_v_row(pc, pr->seq[r], l, pr->slot[r]), v, row);
    return 0;
}

/* gather the sequence's rows 0..slot through its block table into the worker's own
 * contiguous K and V, then attend over them with the model's kernel, as the contiguous
 * cache does (the same bits) */
static int paged_attend(void *user, int worker, int r, int l, const float *q, float *out) {
    const PagedRows *pr = user;
    PagedCache *pc = pr->pc;
    const int s = pr->seq[r], slot = pr->slot[r], NH = pc->NH;
    const size_t C = (size_t)NH * pc->hs, slots = (size_t)pc->max_blocks * pc->block_size;
    float *kc = pc->kc + (size_t)worker * 2 * slots * C, *vc = kc + slots * C;
    float *sc = pc->scores + (size_t)worker * 2 * NH * slots;
    for (int t = 0; t <= slot; t++) {
        memcpy(kc + (size_t)t * C, paged_k_row(pc, s, l, t), C * sizeof(float));
        memcpy(vc + (size_t)t * C, paged_v_row(pc, s, l, t), C * sizeof(float));
    }
    kern_attention_out(pr->kern, out, sc, sc + (size_t)NH * (slot + 1), q, kc, vc, 1, slot, NH,
                       pc->hs);
    return slot + 1;
}

int paged_forward(Model *m, PagedCache *pc, const int *seqs, const int *tokens, int R,
                  float *const *logits, FlopCount *flops) {
    if (R < 1) return -1;
    int *slot = malloc((size_t)R * sizeof *slot);
    int *add = calloc((size_t)pc->max_seqs, sizeof *add);
    int rc = slot && add ? 0 : -1;
    for (int r = 0; r < R && rc == 0; r++) {
        if (seqs[r] < 0 || seqs[r] >= pc->max_seqs) rc = -1;
        else slot[r] = pc->seq[seqs[r]].len + add[seqs[r]]++;
    }
    /* blocks first; on failure give back what this call took */
    int *had = rc == 0 ? malloc((size_t)pc->max_seqs * sizeof *had) : NULL;
    if (rc == 0 && !had) rc = -1;
    if (rc == 0) {
        for (int s = 0; s < pc->max_seqs; s++) had[s] = pc->seq[s].n_blocks;
        for (int s = 0; s < pc->max_seqs && rc == 0; s++)
            if (add[s]) rc = paged_reserve(pc, s, add[s]);
        if (rc == 0) {
            PagedRows pr = {pc, m->kern, seqs, slot};
            const RowCache cache = {paged_store, paged_attend, &pr, pc->workers};
            int *pos = slot; /* position = slot: a paged sequence has no padding */
            rc = model_forward_rows(m, tokens, pos, R, &cache, logits, flops);
        }
        if (rc == 0) {
            for (int s = 0; s < pc->max_seqs; s++) pc->seq[s].len += add[s];
        } else {
            for (int s = 0; s < pc->max_seqs; s++) {
                PagedSeq *q = &pc->seq[s];
                while (q->n_blocks > had[s]) pc->free_list[pc->n_free++] = q->table[--q->n_blocks];
            }
        }
    }
    free(had);
    free(slot);
    free(add);
    return rc;
}

int paged_check(const PagedCache *pc) {
    int *seen = calloc((size_t)pc->n_blocks, sizeof *seen);
    if (!seen) return -1;
    int ok = 1, count = 0;
    for (int i = 0; i < pc->n_free && ok; i++) {
        int b = pc->free_list[i];
        if (b < 0 || b >= pc->n_blocks || seen[b]++) ok = 0;
        count++;
    }
    for (int s = 0; s < pc->max_seqs && ok; s++) {
        const PagedSeq *q = &pc->seq[s];
        if (q->n_blocks != (q->len + pc->block_size - 1) / pc->block_size) ok = 0;
        for (int i = 0; i < q->n_blocks && ok; i++) {
            int b = q->table[i];
            if (b < 0 || b >= pc->n_blocks || seen[b]++) ok = 0;
            count++;
        }
    }
    free(seen);
    return ok && count == pc->n_blocks ? 0 : -1;
}

int paged_block_owner(const PagedCache *pc, int blk, int *seq, int *logical, int *held) {
    *seq = *logical = -1;
    *held = 0;
    for (int s = 0; s < pc->max_seqs; s++)
        for (int i = 0; i < pc->seq[s].n_blocks; i++) {
            if (pc->seq[s].table[i] != blk) continue;
            int h = pc->seq[s].len - i * pc->block_size;
            *seq = s;
            *logical = i;
            *held = h < 0 ? 0 : h > pc->block_size ? pc->block_size : h;
            return 1;
        }
    return 0;
}

int paged_blocks_owned(const PagedCache *pc) { return pc->n_blocks - pc->n_free; }

size_t paged_block_bytes(const PagedCache *pc) {
    return 2u * (size_t)pc->L * pc->block_size * pc->NH * pc->hs * sizeof(float);
}

size_t paged_bytes_reserved(const PagedCache *pc) {
    return paged_block_bytes(pc) * (size_t)paged_blocks_owned(pc);
}

size_t paged_bytes_used(const PagedCache *pc) {
    size_t n = 0;
    for (int s = 0; s < pc->max_seqs; s++) n += (size_t)pc->seq[s].len;
    return 2u * (size_t)pc->L * pc->NH * pc->hs * sizeof(float) * n;
}
