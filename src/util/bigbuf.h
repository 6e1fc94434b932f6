/* bigbuf.h — large zeroed buffers on 2 MiB pages, where the kernel offers them.
 *
 * The trainer's activations and gradients are tens of MiB read in rows that lie pages
 * apart (a (T,4C) matrix: one 4 KiB page per row); on 4 KiB pages every such row costs a
 * TLB miss. A decode step streams the engine's weight panels, hundreds of MiB, where a
 * TLB miss every 4 KiB costs a share of the read bandwidth. A prefill's matmuls store
 * their rows (the model's activations) C floats apart: a page or two a row. The
 * embedding reads rows of wte far apart in the weights as loaded (154 MB of them in
 * GPT-2 small; src/engine/NOTES.md has what huge pages saved). bigbuf_calloc aligns the buffer to 2 MiB and asks
 * Linux for transparent huge pages (madvise MADV_HUGEPAGE); elsewhere, or when refused,
 * the buffer is an ordinary one. The contents are the same either way: only the speed
 * differs.
 */
#ifndef KVSCOPE_BIGBUF_H
#define KVSCOPE_BIGBUF_H

#include <stddef.h>

/* n · size zeroed bytes on a 64-byte line at least, to be released with free(); NULL
 * when out of memory or when n · size overflows. */
void *bigbuf_calloc(size_t n, size_t size);
/* The same, not zeroed and not touched: a page is counted in the process's memory
 * (RSS) only once something is written to it, a 2 MiB one at once. */
void *bigbuf_alloc(size_t n, size_t size);

#endif
