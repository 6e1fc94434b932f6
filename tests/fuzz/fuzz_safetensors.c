/* fuzz_safetensors.c — libFuzzer target: any bytes as a .safetensors file.
 * The reader must accept or reject without a crash, a leak or undefined
 * behaviour; a rejection is one line naming the file; an accepted file's
 * tensors lie inside the data and convert (when F32/F16/BF16) without reading
 * past it. Run with `make fuzz` (tests/fuzz/fuzz.mk). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    SafeTensors st;
    char err[1024];
    err[0] = '\0';
    int rc = st_parse(&st, "fuzz.safetensors", data, size, err, sizeof err);
    if (rc != 0) {
        if (rc != ST_BAD || strncmp(err, "fuzz.safetensors: ", 18) != 0 || strchr(err, '\n')) abort();
        return 0;
    }
    size_t covered = 0;
    for (size_t i = 0; i < st.n; i++) {
        const StTensor *t = &st.t[i];
        if (t->begin != covered || t->end > st.data_size) abort();
        covered = t->end;
        if (st_find(&st, t->name) == NULL) abort();
        float *out = malloc(t->numel ? t->numel * sizeof *out : 1);
        if (!out) continue;
        int r = st_read_f32(&st, t, out, err, sizeof err);
        int convertible = t->dtype == ST_F32 || t->dtype == ST_F16 || t->dtype == ST_BF16;
        if ((r == 0) != convertible) abort();
        free(out);
    }
    if (covered != st.data_size) abort();
    st_close(&st);
    return 0;
}
