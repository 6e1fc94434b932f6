/* paged.h — a paged KV cache: fixed-size blocks, a free list, a block table per
 * sequence (the PagedAttention idea of vLLM, Kwon et al. 2023).
 *
 * The pool holds n_blocks blocks of block_size token slots; a block id names the
 * same block in every layer: k and v are (L, n_blocks, block_size, C). Sequence s
 * owns blocks table[0..n_blocks_s-1] in order, so its token t lives in block
 * table[t / block_size] at offset t % block_size:
 *
 *   seq 0  table [0, 3, 4]   tokens 0..15 in block 0, 16..31 in 3, 32..  in 4
 *   seq 1  table [1, 2]
 *
 * A sequence takes a block from the free list only when its last block is full,
 * and gives all of them back when it finishes. Memory is reserved one block at a
 * time, so at most block_size - 1 slots per sequence are empty.
 *
 *   block bytes    = 2 · L · block_size · C · sizeof(float)
 *   reserved bytes = blocks owned · block bytes
 *   used bytes     = Σ len_s · 2 · L · C · sizeof(float)
 */
#ifndef KVSCOPE_PAGED_H
#define KVSCOPE_PAGED_H

#include <stddef.h>

#include "model.h"

typedef struct {
    int len;       /* tokens held */
    int n_blocks;  /* blocks owned */
    int *table;    /* (max_blocks) block ids, in token order */
} PagedSeq;

typedef struct {
    int L, NH, hs;
    int block_size;  /* token slots per block */
    int n_blocks;    /* blocks in the pool */
    int max_seqs, max_blocks; /* sequences; blocks one sequence may own */
    int max_len;     /* tokens one sequence may hold (the context) */
    float *k, *v;    /* (L, n_blocks, block_size, C) */
    int *free_list;  /* (n_blocks) a stack of free block ids; the top is taken first */
    int n_free;
    PagedSeq *seq;   /* (max_seqs) */
    int workers;     /* threads that may attend rows at once (kern_threads()) */
    float *kc;       /* (workers, 2, max_blocks · block_size, C) scratch: the rows one
                      * query attends, gathered (K, then V) */
    float *scores;   /* (workers, 2, NH, max_blocks · block_size) scratch */
} PagedCache;

#define PAGED_NO_BLOCKS (-2) /* the free list is empty */

/* A pool of n_blocks blocks of block_size tokens for up to max_seqs sequences of up
 * to max_len tokens each. 0, or -1 (bad size or out of memory). */
int paged_init(PagedCache *pc, int L, int NH, int hs, int block_size, int n_blocks,
               int max_seqs, int max_len);
void paged_free(PagedCache *pc);
/* Give sequence s blocks for n more tokens, taking one only when its last block is
 * full. 0; -1 past max_len or a bad s; PAGED_NO_BLOCKS (nothing taken) when the
 * pool is exhausted. */
int paged_reserve(PagedCache *pc, int s, int n);
/* Return every block of sequence s to the free list; its length becomes 0. */
void paged_release(PagedCache *pc, int s);
/* Rows of token t of sequence s in layer l (t < blocks owned · block_size). */
float *paged_k_row(const PagedCache *pc, int s, int l, int t);
float *paged_v_row(const PagedCache *pc, int s, int l, int t);

/* Run R rows through the model against the paged cache: row r is token tokens[r]
 * of sequence seqs[r]. Several rows of one sequence are consecutive tokens (a
 * prefill); each takes that sequence's next position. Blocks are reserved first.
 * logits[r] as in model_forward_rows. 0, -1, or PAGED_NO_BLOCKS. */
int paged_forward(Model *m, PagedCache *pc, const int *seqs, const int *tokens, int R,
                  float *const *logits, FlopCount *flops);

/* Check the books: every block is either free or owned by exactly one sequence,
 * once; every sequence owns exactly the blocks its length needs. 0 if so, -1. */
int paged_check(const PagedCache *pc);

/* Who holds block blk: *seq, the block's place in that sequence's table (*logical) and
 * the tokens it holds (*held, at most block_size). 1 if a sequence owns it; 0 for a free
 * block (then *seq = *logical = -1, *held = 0). */
int paged_block_owner(const PagedCache *pc, int blk, int *seq, int *logical, int *held);

int paged_blocks_owned(const PagedCache *pc);
size_t paged_block_bytes(const PagedCache *pc);
size_t paged_bytes_reserved(const PagedCache *pc); /* blocks owned · block bytes */
size_t paged_bytes_used(const PagedCache *pc);     /* Σ len · bytes per token */

#endif
