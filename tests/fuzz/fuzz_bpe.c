/* fuzz_bpe.c — libFuzzer target: any bytes as vocab.json + merges.txt (split at the
 * first NUL byte: the vocabulary before it, the merges after it).
 * The loader must accept or reject without a crash, a leak or undefined behaviour; a
 * rejection is BPE_BAD with one line naming one of the two files. An accepted
 * tokenizer must round-trip text: decode(encode(s)) == s for a few fixed strings and
 * for the input itself. Run with `make fuzz` (tests/fuzz/fuzz.mk). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const Bpe *b, const char *s, size_t len) {
    int *ids, n;
    char *back;
    size_t blen;
    if (bpe_encode(b, s, len, &ids, &n) != 0) return; /* out of memory */
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= bpe_vocab_size(b)) abort();
    if (bpe_decode(b, ids, n, &back, &blen) != 0) abort();
    if (blen != len || memcmp(back, s, len) != 0) abort();
    free(back);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t vlen = nul ? (size_t)(nul - data) : size;
    const char *merges = nul ? (const char *)nul + 1 : "";
    size_t mlen = nul ? size - vlen - 1 : 0;
    Bpe *b;
    char err[1024];
    err[0] = '\0';
    int rc = bpe_parse(&b, (const char *)data, vlen, "vocab.json", merges, mlen, "merges.txt", err, sizeof err);
    if (rc != 0) {
        if (b != NULL || rc == BPE_NOMEM) return 0;
        if (rc != BPE_BAD || strchr(err, '\n') ||
            (strncmp(err, "vocab.json: ", 12) != 0 && strncmp(err, "merges.txt: ", 12) != 0))
            abort();
        return 0;
    }
    static const char *const texts[] = {"", "the cat", " hello  world\n\n", "人工智能是", "it's 2024!"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) round_trip(b, texts[i], strlen(texts[i]));
    round_trip(b, (const char *)data, size);
    bpe_free(b);
    return 0;
}
