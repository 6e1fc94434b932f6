/* quant.h — 8-bit quantization of K/V rows: int8 per head, and llama.cpp's q8_0.
 *
 * Both are symmetric: a group of values x shares one scale d, stores
 * q = round(x / d) in -127..127, and reads back q·d. With d ≥ max|x| / 127 no value
 * is clipped, so the round-trip error of every value is at most d / 2 — half a step.
 *
 *   int8  one group per token and head: hs int8 values + one float32 scale d.
 *         A row of C = NH·hs values takes C + 4·NH bytes.
 *   q8_0  blocks of 32 values, each { fp16 d; int8 qs[32] } = 34 bytes, the layout of
 *         llama.cpp's block_q8_0. A row of C values takes ⌈C/32⌉·34 bytes (a last,
 *         partial block is padded with zeros). The scale is the smallest fp16 ≥ max|x|/127,
 *         and q is computed with that stored scale, so the half-step bound holds for
 *         what is actually read back.
 *   q4_0  blocks of 32 values, each { fp16 d; uint8 qs[16] } = 18 bytes, the layout and
 *         rounding of llama.cpp's quantize_row_q4_0_ref: m is the value of largest |x|,
 *         d = m / −8, q = min(15, (int)(x/d + 8.5)) in 0..15, read back (q − 8)·d; byte j
 *         holds value j in its low nibble and value j + 16 in its high one. Not
 *         symmetric: −8·d = m is exact, the other end reaches 7·|d| only.
 *   per channel (simulated, below) one scale per channel over a matrix's rows: what
 *         KIVI (2024) uses for keys, measured here without storing it.
 * Non-finite inputs are not supported (K and V of a finite model are finite).
 * Pure functions: no allocation, no state. */
#ifndef KVSCOPE_QUANT_H
#define KVSCOPE_QUANT_H

#include <stddef.h>
#include <stdint.h>

#define Q8_0_BLOCK 32                      /* values per q8_0 block */
#define Q8_0_BLOCK_BYTES (2 + Q8_0_BLOCK)  /* fp16 scale + 32 int8 */

/* Quantize C = NH·hs floats x into dst (dtype_row_bytes: NH·hs + 4·NH); layout: NH float32 scales,
 * then NH·hs int8 values, head by head. */
void int8_quantize_row(unsigned char *dst, const float *x, int NH, int hs);
void int8_dequantize_row(float *y, const unsigned char *src, int NH, int hs);
/* The scale head h of a quantized row uses (for tests and lessons). */
float int8_row_scale(const unsigned char *src, int h);

/* Quantize and read back at once, for a matrix x (T rows of C = NH·hs) into y (same shape):
 *   per token    one scale per row and head, the int8 cache's groups: y is what
 *                int8_quantize_row then int8_dequantize_row give, bit for bit;
 *   per channel  one scale per column c, max over the T rows of |x[t][c]| / 127.
 * The half-step bound holds per group. y may not alias x. */
void int8_roundtrip_tokens(float *y, const float *x, int T, int NH, int hs);
void int8_roundtrip_channels(float *y, const float *x, int T, int C);

/* Quantize C floats x into dst (dtype_row_bytes: ⌈C/32⌉·34) block by block. */
void q8_0_quantize_row(unsigned char *dst, const float *x, int C);
void q8_0_dequantize_row(float *y, const unsigned char *src, int C);
float q8_0_block_scale(const unsigned char *src, int block);

#define Q4_0_BLOCK 32                          /* values per q4_0 block */
#define Q4_0_BLOCK_BYTES (2 + Q4_0_BLOCK / 2)  /* fp16 scale + 16 bytes of nibbles */
/* Quantize C floats x into dst (dtype_row_bytes: ⌈C/32⌉·18); a partial last block is
 * padded with zeros. */
void q4_0_quantize_row(unsigned char *dst, const float *x, int C);
void q4_0_dequantize_row(float *y, const unsigned char *src, int C);

/* The orthonormal Walsh–Hadamard transform of each of the NH groups of hs values of x, in
 * place (hs a power of two): x ← H x / √hs. H is symmetric and H·H = hs·I, so applying it
 * twice gives x back, and it keeps every dot product (q·k = (Hq)·(Hk)/hs). Spreading one
 * large channel over all hs of them is why it helps a block quantizer (llama.cpp rotates
 * its quantized KV cache this way). */
void hadamard_rows(float *x, int NH, int hs);

#endif
