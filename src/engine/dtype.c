/* dtype.c — names and row sizes of the storage types. */
#include "dtype.h"

#include <string.h>

static const char *const NAMES[DT_COUNT] = {"fp32", "fp16", "bf16", "int8", "q8_0", "q4_0"};

const char *dtype_name(Dtype dt) { return (unsigned)dt < DT_COUNT ? NAMES[dt] : "?"; }

int dtype_parse(const char *s, Dtype *dt) {
    for (int i = 0; i < DT_COUNT; i++)
        if (strcmp(s, NAMES[i]) == 0) {
            *dt = (Dtype)i;
            return 0;
        }
    return -1;
}

size_t dtype_row_bytes(Dtype dt, size_t C, size_t NH) {
    switch (dt) {
    case DT_FP32: return 4 * C;
    case DT_FP16:
    case DT_BF16: return 2 * C;
    case DT_INT8: return C + 4 * NH;           /* int8 values, then a float32 scale a head */
    case DT_Q8_0: return (C + 31) / 32 * 34;   /* 32 int8 + an fp16 scale a block */
    case DT_Q4_0: return (C + 31) / 32 * 18;   /* 16 bytes of nibbles + an fp16 scale */
    default: return 0;
    }
}

int dtype_is_weight(Dtype dt) { return dt == DT_FP32 || dt == DT_FP16 || dt == DT_BF16; }
