/* tokenizer.h — text ⇄ token ids.
 *
 * The built-in model uses a byte-level vocabulary: a prompt's UTF-8 bytes are its
 * tokens (V = 256), so "人工智能是" is 15 tokens, three per character.
 */
#ifndef KVSCOPE_TOKENIZER_H
#define KVSCOPE_TOKENIZER_H

#include <stddef.h>

typedef struct Tokenizer Tokenizer;

/* The byte-level tokenizer. NULL when out of memory. */
Tokenizer *tokenizer_bytes(void);
void tokenizer_free(Tokenizer *t);
/* Largest id it can produce + 1. */
int tokenizer_vocab_size(const Tokenizer *t);
/* Encode text into *ids (malloc'ed, caller frees) of *n tokens. 0, or -1 when out of memory. */
int tokenizer_encode(const Tokenizer *t, const char *text, int **ids, int *n);
/* A printable, CSV- and label-safe text for one token: "a", "\n", "<0xE4>".
 * Always NUL-terminated; returns buf. */
const char *tokenizer_token_text(const Tokenizer *t, int id, char *buf, size_t size);

#endif
