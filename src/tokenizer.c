/* tokenizer.c — the byte-level tokenizer of the built-in model. */
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct Tokenizer {
    int vocab;
};

Tokenizer *tokenizer_bytes(void) {
    Tokenizer *t = malloc(sizeof *t);
    if (t) t->vocab = 256;
    return t;
}

void tokenizer_free(Tokenizer *t) { free(t); }

int tokenizer_vocab_size(const Tokenizer *t) { return t->vocab; }

int tokenizer_encode(const Tokenizer *t, const char *text, int **ids, int *n) {
    (void)t;
    size_t len = strlen(text);
    *ids = malloc((len ? len : 1) * sizeof **ids);
    if (!*ids) return -1;
    for (size_t i = 0; i < len; i++) (*ids)[i] = (unsigned char)text[i];
    *n = (int)len;
    return 0;
}

const char *tokenizer_token_text(const Tokenizer *t, int id, char *buf, size_t size) {
    (void)t;
    if (id == '\n') snprintf(buf, size, "\\n");
    else if (id == '\t') snprintf(buf, size, "\\t");
    else if (id == '\\') snprintf(buf, size, "\\\\");
    else if (id >= 0x20 && id < 0x7f) snprintf(buf, size, "%c", id);
    else snprintf(buf, size, "<0x%02X>", id & 0xff);
    return buf;
}
