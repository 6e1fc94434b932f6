/* kvwaste.h — where the memory of a serving KV cache goes, per way of reserving it
 * (the question of the vLLM paper's Fig. 2, Kwon et al. 2023), counted step by step.
 *
 * At one step, a sequence holding t tokens, with r token slots reserved for it and f
 * tokens when it finishes, splits its share of the memory into
 *   tokens        t slots holding a token's K and V
 *   reservation   min(r, f) − t slots a later token of this sequence will fill
 *   internal      r − min(r, f) slots it reserved and will never fill (internal
 *                 fragmentation)
 * and the memory between the sequences' regions that no region uses is
 *   external      holes a contiguous allocator leaves when a region grows (moves) or
 *                 is freed (external fragmentation): the arena's extent minus the
 *                 slots its regions hold. A paged pool has none: any free block fits
 *                 any sequence.
 * KvArena is that contiguous allocator: one region per sequence, first fit, no
 * compaction. Everything is in token slots (× bytes per token for bytes); no I/O.
 */
#ifndef KVSCOPE_KVWASTE_H
#define KVSCOPE_KVWASTE_H

typedef struct {
    double tokens, reservation, internal, external; /* token slots, summed over steps */
} KvWaste;

/* Add one sequence at one step: t tokens held, r slots reserved (r ≥ t), f its final
 * length (f ≥ t). */
void kvwaste_add_seq(KvWaste *w, long t, long r, long f);
/* Everything w counts: tokens + reservation + internal + external. */
double kvwaste_total(const KvWaste *w);

typedef struct {
    int n;            /* sequences */
    long *off, *len;  /* (n) region of each sequence in slots; len 0: none */
} KvArena;

/* An empty arena for n sequences. 0, or -1 (out of memory). */
int kvarena_init(KvArena *a, int n);
void kvarena_free(KvArena *a);
/* Sequence b's region becomes len slots (0 frees it). Unchanged when len is its
 * length now; else it is freed and placed at the lowest offset where len slots are
 * free between the other regions (first fit), or after the last one. */
void kvarena_set(KvArena *a, int b, long len);
/* The end of the highest region: the memory the arena spans. */
long kvarena_extent(const KvArena *a);
/* The slots the regions hold: Σ len. */
long kvarena_held(const KvArena *a);

#endif
