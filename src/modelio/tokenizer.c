/* tokenizer.c — the byte-level tokenizer of the built-in model, or GPT-2's BPE. */
#include "tokenizer.h"

#include <utf8proc.h>

#include "bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct Tokenizer {
    int vocab;
    Bpe *bpe;  /* NULL: byte-level */
    int start; /* the model's start token, shown as ⟨s⟩; -1: none */
};

#define START_TEXT "\xE2\x9F\xA8s\xE2\x9F\xA9" /* ⟨s⟩ */

Tokenizer *tokenizer_bytes(void) {
    Tokenizer *t = malloc(sizeof *t);
    if (t) t->vocab = 256, t->bpe = NULL, t->start = -1;
    return t;
}

Tokenizer *tokenizer_from_bpe(Bpe *bpe) {
    Tokenizer *t = malloc(sizeof *t);
    if (!t) {
        bpe_free(bpe);
        return NULL;
    }
    t->vocab = bpe_vocab_size(bpe);
    t->bpe = bpe;
    t->start = -1;
    return t;
}

void tokenizer_free(Tokenizer *t) {
    if (t) bpe_free(t->bpe);
    free(t);
}

int tokenizer_vocab_size(const Tokenizer *t) { return t->vocab; }

int tokenizer_is_bytes(const Tokenizer *t) { return t->bpe == NULL; }

int tokenizer_encode(const Tokenizer *t, const char *text, int **ids, int *n) {
    if (t->bpe) return bpe_encode(t->bpe, text, strlen(text), ids, n) ? -1 : 0;
    size_t len = strlen(text);
    *ids = malloc((len ? len : 1) * sizeof **ids);
    if (!*ids) return -1;
    for (size_t i = 0; i < len; i++) (*ids)[i] = (unsigned char)text[i];
    *n = (int)len;
    return 0;
}

void tokenizer_set_start(Tokenizer *t, int id) { t->start = id; }

int tokenizer_add_start(int start, int **ids, int *n) {
    if (start < 0 || (*n > 0 && (*ids)[0] == start)) return 0;
    int *grown = realloc(*ids, ((size_t)*n + 1) * sizeof *grown);
    if (!grown) return -1;
    memmove(grown + 1, grown, (size_t)*n * sizeof *grown);
    grown[0] = start;
    *ids = grown;
    (*n)++;
    return 0;
}

/* ids without the start token, decoded one run at a time, ⟨s⟩ where it stood. */
static int decode_runs(const Tokenizer *t, const int *ids, int n, char **text, size_t *len);

int tokenizer_decode(const Tokenizer *t, const int *ids, int n, char **text, size_t *len) {
    if (t->start >= 0)
        for (int i = 0; i < n; i++)
            if (ids[i] == t->start) return decode_runs(t, ids, n, text, len);
    if (t->bpe) return bpe_decode(t->bpe, ids, n, text, len) ? -1 : 0;
    *text = malloc((size_t)n + 1);
    if (!*text) return -1;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] > 255) {
            free(*text);
            *text = NULL;
            return -1;
        }
        (*text)[i] = (char)ids[i];
    }
    (*text)[n] = '\0';
    *len = (size_t)n;
    return 0;
}

static int decode_runs(const Tokenizer *t, const int *ids, int n, char **text, size_t *len) {
    Tokenizer plain = *t;
    plain.start = -1;
    char *all = malloc(1), *part;
    size_t used = 0, k;
    if (!all) return -1;
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && ids[j] != t->start) j++;
        const int is_start = j == i;
        if (is_start) part = NULL, k = sizeof START_TEXT - 1, j = i + 1;
        else if (tokenizer_decode(&plain, ids + i, j - i, &part, &k)) break;
        char *grown = realloc(all, used + k + 1);
        if (!grown) {
            free(part);
            break;
        }
        all = grown;
        memcpy(all + used, is_start ? START_TEXT : part, k);
        free(part);
        used += k;
        i = j;
        if (i == n) {
            all[used] = '\0';
            *text = all, *len = used;
            return 0;
        }
    }
    free(all);
    *text = NULL;
    return -1;
}

/* A BPE token's bytes, readable: printable UTF-8 as is, \n \t \r \\ escaped,
 * anything else (controls, invisible formats, partial characters) as <0xXX>. */
static const char *bpe_text(const Bpe *b, int id, char *buf, size_t size) {
    size_t len, k = 0;
    const unsigned char *p = bpe_token_bytes(b, id, &len);
    buf[0] = '\0';
    if (!p) {
        snprintf(buf, size, "<id %d>", id);
        return buf;
    }
    for (size_t i = 0; i < len;) {
        char piece[8];
        utf8proc_int32_t c;
        utf8proc_ssize_t used = utf8proc_iterate(p + i, (utf8proc_ssize_t)(len - i), &c);
        int cat = used > 0 ? utf8proc_category(c) : UTF8PROC_CATEGORY_CN;
        if (used > 0 && c == '\n') snprintf(piece, sizeof piece, "\\n");
        else if (used > 0 && c == '\t') snprintf(piece, sizeof piece, "\\t");
        else if (used > 0 && c == '\r') snprintf(piece, sizeof piece, "\\r");
        else if (used > 0 && c == '\\') snprintf(piece, sizeof piece, "\\\\");
        else if (used <= 0 || cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
                 cat == UTF8PROC_CATEGORY_CS || cat == UTF8PROC_CATEGORY_CO ||
                 cat == UTF8PROC_CATEGORY_CN || cat == UTF8PROC_CATEGORY_ZL ||
                 cat == UTF8PROC_CATEGORY_ZP) {
            snprintf(piece, sizeof piece, "<0x%02X>", p[i]);
            used = 1;
        } else {
            memcpy(piece, p + i, (size_t)used);
            piece[used] = '\0';
        }
        size_t pl = strlen(piece);
        if (k + pl + 1 > size) break; /* cut between characters, never inside one */
        memcpy(buf + k, piece, pl + 1);
        k += pl;
        i += (size_t)used;
    }
    return buf;
}

const char *tokenizer_token_text(const Tokenizer *t, int id, char *buf, size_t size) {
    if (id == t->start && id >= 0) {
        snprintf(buf, size, "%s", START_TEXT);
        return buf;
    }
    if (t->bpe) return bpe_text(t->bpe, id, buf, size);
    if (id == '\n') snprintf(buf, size, "\\n");
    else if (id == '\t') snprintf(buf, size, "\\t");
    else if (id == '\\') snprintf(buf, size, "\\\\");
    else if (id >= 0x20 && id < 0x7f) snprintf(buf, size, "%c", id);
    else if (id < 0 || id > 255) snprintf(buf, size, "<id %d>", id); /* no byte: a bigger vocab */
    else snprintf(buf, size, "<0x%02X>", id);
    return buf;
}
