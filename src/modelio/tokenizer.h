/* tokenizer.h — text ⇄ token ids.
 *
 * The built-in model uses a byte-level vocabulary: a prompt's UTF-8 bytes are its
 * tokens (V = 256), so "人工智能是" is 15 tokens, three per character.
 * A Hugging Face GPT-2 folder brings GPT-2's byte-level BPE instead (bpe.h).
 */
#ifndef KVSCOPE_TOKENIZER_H
#define KVSCOPE_TOKENIZER_H

#include <stddef.h>

typedef struct Tokenizer Tokenizer;

/* The byte-level tokenizer. NULL when out of memory. */
Tokenizer *tokenizer_bytes(void);
/* GPT-2's BPE; takes ownership of bpe (freed here on failure too). NULL when out of memory. */
struct Bpe;
Tokenizer *tokenizer_from_bpe(struct Bpe *bpe);
void tokenizer_free(Tokenizer *t);
/* 1 for the byte-level tokenizer, 0 for BPE. */
int tokenizer_is_bytes(const Tokenizer *t);
/* Largest id it can produce + 1. */
int tokenizer_vocab_size(const Tokenizer *t);
/* Encode text into *ids (malloc'ed, caller frees) of *n tokens. 0, or -1 when out of memory. */
int tokenizer_encode(const Tokenizer *t, const char *text, int **ids, int *n);
/* The model's start token (Config.bos; -1: none): decode and the token texts show it
 * as "⟨s⟩" (U+27E8 s U+27E9) rather than as its byte. */
void tokenizer_set_start(Tokenizer *t, int id);
/* Put start in front of ids (*n of them, malloc'ed; realloc'ed here) unless they
 * already begin with it or start < 0. 0, or -1 when out of memory (ids unchanged). */
int tokenizer_add_start(int start, int **ids, int *n);
/* ids → text (malloc'ed, NUL-terminated; *len bytes without the NUL), the start
 * token as "⟨s⟩". 0, or -1 when out of memory or an id is out of range. */
int tokenizer_decode(const Tokenizer *t, const int *ids, int n, char **text, size_t *len);
/* A printable, CSV- and label-safe text for one token: "a", "\n", "<0xE4>".
 * BPE tokens print their UTF-8 ("人", " the"); bytes that are not complete,
 * printable UTF-8 print as "<0xE4>"; the text is cut at a character boundary. An id
 * the byte tokenizer has no byte for (a vocabulary past 256) prints as "<id 300>".
 * Always NUL-terminated; returns buf. */
const char *tokenizer_token_text(const Tokenizer *t, int id, char *buf, size_t size);

#endif
