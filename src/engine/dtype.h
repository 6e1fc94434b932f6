/* dtype.h — the number formats kvscope stores numbers in: one enum, one name table and
 * one size rule, shared by the KV cache, the memory calculator (kvmem) and the kernels.
 *
 * A row is C = NH·hs values (one token's K or V in one layer, heads side by side):
 *   fp32  4·C            fp16, bf16  2·C
 *   int8  C + 4·NH       (one float32 scale per head, see quant.h)
 *   q8_0  ⌈C/32⌉·34      (blocks of 32 int8 + one fp16 scale, as llama.cpp)
 *   q4_0  ⌈C/32⌉·18      (blocks of 32 4-bit values + one fp16 scale, as llama.cpp)
 * Weights come in the first three only (dtype_is_weight). Pure: no state, no I/O. */
#ifndef KVSCOPE_DTYPE_H
#define KVSCOPE_DTYPE_H

#include <stddef.h>

typedef enum { DT_FP32, DT_FP16, DT_BF16, DT_INT8, DT_Q8_0, DT_Q4_0, DT_COUNT } Dtype;

/* "fp32", "fp16", "bf16", "int8", "q8_0", "q4_0"; "?" for a value out of range. */
const char *dtype_name(Dtype dt);
/* Parse one of those names into *dt. 0, or -1 if unknown (*dt untouched). */
int dtype_parse(const char *s, Dtype *dt);
/* Bytes of a row of C values in NH heads (C a multiple of NH for int8); 0 for a bad dt. */
size_t dtype_row_bytes(Dtype dt, size_t C, size_t NH);
/* 1 for the types a weight matrix may be held in: fp32, fp16, bf16. */
int dtype_is_weight(Dtype dt);

#endif
