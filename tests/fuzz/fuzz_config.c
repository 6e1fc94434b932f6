/* fuzz_config.c — libFuzzer target: any bytes as a Hugging Face config.json.
 * The reader must accept or reject without a crash, a leak or undefined behaviour; a
 * rejection is one line naming the file; an accepted config must be one the engine can
 * build (config_check passes, C divisible by NH, every size within model.h's limits).
 * Run with `make fuzz` (tests/fuzz/fuzz.mk). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hf_model.h"
#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Config c;
    char err[1024];
    err[0] = '\0';
    int rc = hf_config_parse((const char *)data, size, "config.json", &c, err, sizeof err);
    if (rc != 0) {
        if (rc != HF_BAD || strncmp(err, "config.json: ", 13) != 0 || strchr(err, '\n')) abort();
        return 0;
    }
    if (config_check(&c) != NULL || c.C % c.NH != 0) abort();
    if (c.L < 1 || c.L > MODEL_MAX_LAYERS || c.NH < 1 || c.NH > MODEL_MAX_HEADS || c.C < 1 ||
        c.C > MODEL_MAX_DIM || c.N < 1 || c.N > MODEL_MAX_CTX || c.V < 1 || c.V > MODEL_MAX_VOCAB)
        abort();
    if (!(c.eps > 0.0f && c.eps < 1.0f)) abort();
    return 0;
}
