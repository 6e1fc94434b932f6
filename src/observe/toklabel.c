/* toklabel.c — see toklabel.h. */
#include "toklabel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void token_texts_init(TokenTexts *t) { memset(t, 0, sizeof *t); }

void token_texts_free(TokenTexts *t) {
    free(t->bytes);
    free(t->len);
    memset(t, 0, sizeof *t);
}

int token_texts_set(TokenTexts *t, int pos, const unsigned char *b, size_t n) {
    if (pos < 0) return -1;
    if (pos >= t->n) {
        int cap = t->n ? t->n : 64;
        while (cap <= pos) cap *= 2;
        void *nb = realloc(t->bytes, (size_t)cap * sizeof *t->bytes);
        if (!nb) return -1;
        t->bytes = nb;
        unsigned char *nl = realloc(t->len, (size_t)cap);
        if (!nl) return -1;
        t->len = nl;
        memset(t->len + t->n, 0, (size_t)(cap - t->n));
        t->n = cap;
    }
    if (n > TOKLABEL_MAX_BYTES) n = TOKLABEL_MAX_BYTES;
    memcpy(t->bytes[pos], b, n);
    t->len[pos] = (unsigned char)n;
    return 0;
}

/* Bytes a character needs from its lead byte; 0 for a byte that cannot start one. */
static int utf8_need(unsigned char c) {
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c < 0xE0) return 2;
    if (c >= 0xE0 && c < 0xF0) return 3;
    if (c >= 0xF0 && c < 0xF5) return 4;
    return 0;
}

/* 1 if b[0..n) ends inside a character that more bytes could complete. */
static int incomplete(const unsigned char *b, size_t n) {
    size_t i = 0;
    while (i < n) {
        int need = utf8_need(b[i]);
        if (need == 0) return 0; /* invalid here: more bytes will not help */
        size_t j = 1;
        while (j < (size_t)need && i + j < n && (b[i + j] & 0xC0) == 0x80) j++;
        if (i + j == n && j < (size_t)need) return 1;
        if (j < (size_t)need) return 0;
        i += (size_t)need;
    }
    return 0;
}

static size_t put(char *buf, size_t size, size_t used, const char *s, size_t n) {
    if (used + n + 1 > size) return used;
    memcpy(buf + used, s, n);
    buf[used + n] = '\0';
    return used + n;
}

const char *toklabel_visible(const unsigned char *b, size_t n, char *buf, size_t size) {
    size_t used = 0, i = 0;
    buf[0] = '\0';
    while (i < n) {
        const unsigned char c = b[i];
        int need = utf8_need(c);
        size_t j = 1;
        while (need > 1 && j < (size_t)need && i + j < n && (b[i + j] & 0xC0) == 0x80) j++;
        char hex[8];
        if (c == ' ') used = put(buf, size, used, "\xE2\x90\xA3", 3);         /* ␣ */
        else if (c == '\n') used = put(buf, size, used, "\xC2\xB6", 2);       /* ¶ */
        else if (c == '\t') used = put(buf, size, used, "\xE2\x86\x92", 3);   /* → */
        else if (need == 1 && c >= 0x20 && c < 0x7F) used = put(buf, size, used, (char *)&b[i], 1);
        else if (need > 1 && j == (size_t)need) used = put(buf, size, used, (char *)&b[i], j);
        else {
            snprintf(hex, sizeof hex, "<0x%02X>", c);
            used = put(buf, size, used, hex, strlen(hex));
            j = 1;
        }
        i += need > 1 && j == (size_t)need ? j : 1;
    }
    return buf;
}

char *toklabel_text(const unsigned char *b, size_t n) {
    char *out = malloc(6 * n + 1); /* "<0xE4>" is the longest a byte becomes */
    if (!out) return NULL;
    size_t used = 0, i = 0;
    out[0] = '\0';
    while (i < n) {
        const unsigned char c = b[i];
        const int need = utf8_need(c);
        size_t j = 1;
        while (need > 1 && j < (size_t)need && i + j < n && (b[i + j] & 0xC0) == 0x80) j++;
        if (c == ' ' || c == '\n' || c == '\t' || (need == 1 && c >= 0x20 && c < 0x7F))
            used = put(out, 6 * n + 1, used, (const char *)&b[i], 1);
        else if (need > 1 && j == (size_t)need)
            used = put(out, 6 * n + 1, used, (const char *)&b[i], j);
        else {
            char hex[8];
            snprintf(hex, sizeof hex, "<0x%02X>", c);
            used = put(out, 6 * n + 1, used, hex, 6);
            j = 1;
        }
        i += j;
    }
    return out;
}

int toklabel_axis(const TokenTexts *t, const int *pos, int n, TokLabel *out) {
    int m = 0;
    for (int i = 0; i < n;) {
        const int p = pos ? pos[i] : i;
        TokLabel *l = &out[m++];
        l->first = i;
        l->span = 1;
        if (p < 0 || p >= t->n || t->len[p] == 0) {
            snprintf(l->text, sizeof l->text, "%d", p);
            i++;
            continue;
        }
        unsigned char b[TOKLABEL_MAX_BYTES * TOKLABEL_MAX_SPAN];
        size_t nb = t->len[p];
        memcpy(b, t->bytes[p], nb);
        /* take the next positions while they complete a character */
        while (l->span < TOKLABEL_MAX_SPAN && i + l->span < n && incomplete(b, nb)) {
            const int q = pos ? pos[i + l->span] : i + l->span;
            if (q != p + l->span || q >= t->n || t->len[q] == 0) break;
            if ((t->bytes[q][0] & 0xC0) != 0x80) break; /* not a continuation */
            memcpy(b + nb, t->bytes[q], t->len[q]);
            nb += t->len[q];
            l->span++;
        }
        if (incomplete(b, nb)) l->span = 1, nb = t->len[p]; /* cut short: its first byte alone */
        toklabel_visible(b, nb, l->text, sizeof l->text);
        i += l->span;
    }
    return m;
}
