/* bigbuf.c — large zeroed buffers on 2 MiB pages; see bigbuf.h. */
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#include "bigbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

enum { BIGBUF_PAGE = 2 << 20, BIGBUF_MIN = 4 << 20 }; /* huge page; below this, small pages */

void *bigbuf_alloc(size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) return NULL;
    const size_t bytes = n * size;
    void *p = NULL;
    if (bytes < BIGBUF_MIN) /* small: ordinary pages, still on a 64-byte line */
        return posix_memalign(&p, 64, bytes ? bytes : 1) ? NULL : p;
    /* whole huge pages, so that the advice covers the last one too */
    const size_t span = (bytes + BIGBUF_PAGE - 1) / BIGBUF_PAGE * BIGBUF_PAGE;
    if (span < bytes || posix_memalign(&p, BIGBUF_PAGE, span)) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    (void)madvise(p, span, MADV_HUGEPAGE); /* advice only: refused means 4 KiB pages */
#endif
    return p;
}

void *bigbuf_calloc(size_t n, size_t size) {
    void *p = bigbuf_alloc(n, size);
    if (!p) return NULL;
    const size_t bytes = n * size;
    /* zeroed, as calloc; a large one in whole pages, faulted in now rather than mid-step */
    const size_t span = bytes < BIGBUF_MIN
                            ? bytes
                            : (bytes + BIGBUF_PAGE - 1) / BIGBUF_PAGE * BIGBUF_PAGE;
    return memset(p, 0, span);
}
