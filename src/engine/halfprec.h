/* halfprec.h — float32 ⇄ IEEE-754 binary16 (fp16) and bfloat16 (bf16), bit-exact.
 *
 *   fp16: 1 sign, 5 exponent (bias 15), 10 fraction bits; max 65504, smallest
 *         normal 2^-14, smallest subnormal 2^-24.
 *   bf16: the top 16 bits of a float32: 1 sign, 8 exponent, 7 fraction bits; same
 *         range as float32, about 3 significant decimal digits.
 *
 * float → half rounds to nearest, ties to even (IEEE default), like a hardware cast:
 *   values that round past the largest finite become ±Inf; ±0 keep their sign;
 *   results below the smallest normal become subnormals (or ±0); NaN stays NaN,
 *   quiet, with its sign and the top of its payload.
 * half → float is exact (every fp16 and bf16 value is a float32 value).
 * Pure functions: no state, no libm, the same bits on every machine. */
#ifndef KVSCOPE_HALFPREC_H
#define KVSCOPE_HALFPREC_H

#include <stdint.h>

uint16_t fp32_to_fp16(float f);
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);
float bf16_to_fp32(uint16_t h);

#endif
