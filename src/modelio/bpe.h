/* bpe.h — GPT-2's byte-level byte-pair encoding (Radford et al. 2019, encoder.py).
 *
 * Text → UTF-8 bytes → pre-tokenizer pieces → each piece's bytes as byte symbols
 * → merges applied by rank → token ids. Decoding concatenates the tokens' bytes,
 * so decode(encode(s)) == s for every byte string s.
 *
 * The pre-tokenizer is GPT-2's pattern, hand-coded over code points with the
 * Unicode letter (L*) and number (N*) categories from utf8proc:
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * \s is Unicode White_Space. Bytes that are not valid UTF-8 count as "other".
 *
 * vocab.json maps each token, written with GPT-2's byte↔unicode table (printable
 * bytes stand for themselves, the others for U+0100.., so a space is "Ġ"), to its
 * id; merges.txt lists "a b" pairs, best first, after a "#version" line.
 */
#ifndef KVSCOPE_BPE_H
#define KVSCOPE_BPE_H

#include <stddef.h>
#include <stdint.h>

typedef struct Bpe Bpe;

/* Results: 0; BPE_BAD (message "<file>: <problem>" in err); BPE_NOMEM. */
enum { BPE_BAD = -1, BPE_NOMEM = -2 };

/* The largest vocab.json or merges.txt read (GPT-2's are 1.0 MB and 0.5 MB). */
#define BPE_FILE_MAX (64u << 20)

/* Load and check: ids are 0..V-1 each once, every byte has its token, every
 * merge's two parts and its result are tokens, no merge twice. Both files are read
 * as regular files of at most BPE_FILE_MAX bytes (infile.h): a FIFO is refused. */
int bpe_load(Bpe **out, const char *vocab_path, const char *merges_path, char *err, size_t errsize);
/* The same from the two files' texts (the paths only name them in messages). */
int bpe_parse(Bpe **out, const char *vocab_text, size_t vocab_len, const char *vocab_path,
              const char *merges_text, size_t merges_len, const char *merges_path, char *err,
              size_t errsize);
void bpe_free(Bpe *b);
int bpe_vocab_size(const Bpe *b);

/* len bytes of text → *ids (malloc'ed) of *n tokens. 0, or BPE_NOMEM. */
int bpe_encode(const Bpe *b, const char *text, size_t len, int **ids, int *n);
/* The bytes of token id (not NUL-terminated), or NULL when id is out of range. */
const unsigned char *bpe_token_bytes(const Bpe *b, int id, size_t *len);
/* ids → *text (malloc'ed, NUL-terminated; *len bytes without the NUL).
 * 0, BPE_BAD for an id out of range, or BPE_NOMEM. */
int bpe_decode(const Bpe *b, const int *ids, int n, char **text, size_t *len);

/* The pre-tokenizer alone: *ends (malloc'ed) gets the end offset of each of the
 * *n pieces of text. 0, or BPE_NOMEM. */
int bpe_pretokenize(const char *text, size_t len, size_t **ends, int *n);

/* GPT-2's byte → code point table (bytes_to_unicode in encoder.py). */
uint32_t bpe_byte_to_unicode(unsigned char b);

#endif
