/* kvwaste.c — where a serving cache's memory goes; a first-fit arena. See kvwaste.h. */
#include "kvwaste.h"

#include <stdlib.h>

void kvwaste_add_seq(KvWaste *w, long t, long r, long f) {
    const long will = r < f ? r : f; /* the slots of r this sequence will ever fill */
    w->tokens += (double)t;
    w->reservation += (double)(will - t);
    w->internal += (double)(r - will);
}

double kvwaste_total(const KvWaste *w) {
    return w->tokens + w->reservation + w->internal + w->external;
}

int kvarena_init(KvArena *a, int n) {
    a->n = n;
    a->off = calloc((size_t)n, sizeof *a->off);
    a->len = calloc((size_t)n, sizeof *a->len);
    if (a->off && a->len) return 0;
    kvarena_free(a);
    return -1;
}

void kvarena_free(KvArena *a) {
    free(a->off);
    free(a->len);
    a->off = a->len = NULL;
    a->n = 0;
}

/* Does [at, at + len) overlap a region other than skip's? */
static int overlaps(const KvArena *a, int skip, long at, long len) {
    for (int i = 0; i < a->n; i++)
        if (i != skip && a->len[i] && at < a->off[i] + a->len[i] && a->off[i] < at + len) return 1;
    return 0;
}

void kvarena_set(KvArena *a, int b, long len) {
    if (len == a->len[b]) return;
    a->len[b] = 0;
    if (len == 0) return;
    /* first fit: the candidates are 0 and the end of every region */
    long best = kvarena_extent(a);
    if (!overlaps(a, b, 0, len)) best = 0;
    for (int i = 0; i < a->n; i++) {
        const long at = a->off[i] + a->len[i];
        if (a->len[i] && at < best && !overlaps(a, b, at, len)) best = at;
    }
    a->off[b] = best;
    a->len[b] = len;
}

long kvarena_extent(const KvArena *a) {
    long top = 0;
    for (int i = 0; i < a->n; i++)
        if (a->len[i] && a->off[i] + a->len[i] > top) top = a->off[i] + a->len[i];
    return top;
}

long kvarena_held(const KvArena *a) {
    long s = 0;
    for (int i = 0; i < a->n; i++) s += a->len[i];
    return s;
}
