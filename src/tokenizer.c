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
};

Tokenizer *tokenizer_bytes(void) {
    Tokenizer *t = malloc(sizeof *t);
    if (t) t->vocab = 256, t->bpe = NULL;
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

int tokenizer_decode(const Tokenizer *t, const int *ids, int n, char **text, size_t *len) {
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
    if (t->bpe) return bpe_text(t->bpe, id, buf, size);
    if (id == '\n') snprintf(buf, size, "\\n");
    else if (id == '\t') snprintf(buf, size, "\\t");
    else if (id == '\\') snprintf(buf, size, "\\\\");
    else if (id >= 0x20 && id < 0x7f) snprintf(buf, size, "%c", id);
    else snprintf(buf, size, "<0x%02X>", id & 0xff);
    return buf;
}
