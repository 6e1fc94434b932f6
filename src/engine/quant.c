/* quant.c — int8 (per token and head), q8_0 and q4_0 (blocks of 32) quantization, and
 * the Hadamard rotation that may come before them. */
#include "quant.h"

#include <math.h>
#include <string.h>

#include "halfprec.h"


static float absmax(const float *x, int n) {
    float a = 0.0f;
    for (int i = 0; i < n; i++) a = fmaxf(a, fabsf(x[i]));
    return a;
}

/* q = round(x / d) in -127..127; d == 0 means the group is all zeros. */
static signed char quantize_one(float x, float d) {
    float r = d > 0.0f ? roundf(x / d) : 0.0f;
    if (r > 127.0f) r = 127.0f;  /* only reachable through a rounding of x/d */
    if (r < -127.0f) r = -127.0f;
    return (signed char)r;
}

static void quantize_group(signed char *q, const float *x, int n, float d) {
    for (int i = 0; i < n; i++) q[i] = quantize_one(x[i], d);
}

void int8_quantize_row(unsigned char *dst, const float *x, int NH, int hs) {
    signed char *q = (signed char *)(dst + 4u * (size_t)NH);
    for (int h = 0; h < NH; h++) {
        float d = absmax(x + (size_t)h * hs, hs) / 127.0f;
        memcpy(dst + 4u * (size_t)h, &d, sizeof d);
        quantize_group(q + (size_t)h * hs, x + (size_t)h * hs, hs, d);
    }
}

float int8_row_scale(const unsigned char *src, int h) {
    float d;
    memcpy(&d, src + 4u * (size_t)h, sizeof d);
    return d;
}

void int8_dequantize_row(float *y, const unsigned char *src, int NH, int hs) {
    const signed char *q = (const signed char *)(src + 4u * (size_t)NH);
    for (int h = 0; h < NH; h++) {
        float d = int8_row_scale(src, h);
        for (int i = 0; i < hs; i++) y[(size_t)h * hs + i] = (float)q[(size_t)h * hs + i] * d;
    }
}

/* The same float operations as quantize then dequantize: the same bits. */
void int8_roundtrip_tokens(float *y, const float *x, int T, int NH, int hs) {
    for (size_t g = 0; g < (size_t)T * NH; g++) {
        const float *xg = x + g * hs;
        float d = absmax(xg, hs) / 127.0f;
        for (int i = 0; i < hs; i++) y[g * hs + i] = (float)quantize_one(xg[i], d) * d;
    }
}

void int8_roundtrip_channels(float *y, const float *x, int T, int C) {
    for (int c = 0; c < C; c++) {
        float a = 0.0f;
        for (int t = 0; t < T; t++) a = fmaxf(a, fabsf(x[(size_t)t * C + c]));
        float d = a / 127.0f;
        for (int t = 0; t < T; t++) {
            const size_t i = (size_t)t * C + c;
            y[i] = (float)quantize_one(x[i], d) * d;
        }
    }
}

/* The smallest fp16 ≥ a (a ≥ 0, finite), capped at the largest finite fp16. */
static uint16_t fp16_at_least(float a) {
    uint16_t h = fp32_to_fp16(a);
    if (h >= 0x7C00u) return 0x7BFFu;
    if (fp16_to_fp32(h) < a) h++; /* next fp16 up (the encoding is monotonic) */
    return h >= 0x7C00u ? 0x7BFFu : h;
}

void q8_0_quantize_row(unsigned char *dst, const float *x, int C) {
    for (int b = 0; b * Q8_0_BLOCK < C; b++) {
        int n = C - b * Q8_0_BLOCK < Q8_0_BLOCK ? C - b * Q8_0_BLOCK : Q8_0_BLOCK;
        const float *xb = x + (size_t)b * Q8_0_BLOCK;
        unsigned char *blk = dst + (size_t)b * Q8_0_BLOCK_BYTES;
        uint16_t dh = fp16_at_least(absmax(xb, n) / 127.0f);
        blk[0] = (unsigned char)(dh & 0xFFu); /* little-endian, as ggml writes it */
        blk[1] = (unsigned char)(dh >> 8);
        signed char *q = (signed char *)(blk + 2);
        quantize_group(q, xb, n, fp16_to_fp32(dh));
        for (int i = n; i < Q8_0_BLOCK; i++) q[i] = 0;
    }
}

float q8_0_block_scale(const unsigned char *src, int block) {
    const unsigned char *blk = src + (size_t)block * Q8_0_BLOCK_BYTES;
    return fp16_to_fp32((uint16_t)(blk[0] | (blk[1] << 8)));
}

void q8_0_dequantize_row(float *y, const unsigned char *src, int C) {
    for (int b = 0; b * Q8_0_BLOCK < C; b++) {
        int n = C - b * Q8_0_BLOCK < Q8_0_BLOCK ? C - b * Q8_0_BLOCK : Q8_0_BLOCK;
        float d = q8_0_block_scale(src, b);
        const signed char *q = (const signed char *)(src + (size_t)b * Q8_0_BLOCK_BYTES + 2);
        for (int i = 0; i < n; i++) y[(size_t)b * Q8_0_BLOCK + i] = (float)q[i] * d;
    }
}

void q4_0_quantize_row(unsigned char *dst, const float *x, int C) {
    for (int b = 0; b * Q4_0_BLOCK < C; b++) {
        float xb[Q4_0_BLOCK] = {0};
        int n = C - b * Q4_0_BLOCK < Q4_0_BLOCK ? C - b * Q4_0_BLOCK : Q4_0_BLOCK;
        memcpy(xb, x + (size_t)b * Q4_0_BLOCK, (size_t)n * sizeof(float));
        float amax = 0.0f, m = 0.0f; /* the value of largest magnitude, with its sign */
        for (int i = 0; i < Q4_0_BLOCK; i++)
            if (amax < fabsf(xb[i])) amax = fabsf(xb[i]), m = xb[i];
        const float d = m / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t dh = fp32_to_fp16(d);
        unsigned char *blk = dst + (size_t)b * Q4_0_BLOCK_BYTES;
        blk[0] = (unsigned char)(dh & 0xFFu);
        blk[1] = (unsigned char)(dh >> 8);
        for (int j = 0; j < Q4_0_BLOCK / 2; j++) {
            /* llama.cpp truncates x/d + 8.5 toward zero through an int8: q in 0..15 */
            int q0 = (signed char)(xb[j] * id + 8.5f), q1 = (signed char)(xb[j + 16] * id + 8.5f);
            q0 = q0 > 15 ? 15 : q0;
            q1 = q1 > 15 ? 15 : q1;
            blk[2 + j] = (unsigned char)(q0 | (q1 << 4));
        }
    }
}

void q4_0_dequantize_row(float *y, const unsigned char *src, int C) {
    for (int b = 0; b * Q4_0_BLOCK < C; b++) {
        const unsigned char *blk = src + (size_t)b * Q4_0_BLOCK_BYTES;
        const float d = fp16_to_fp32((uint16_t)(blk[0] | (blk[1] << 8)));
        for (int j = 0; j < Q4_0_BLOCK / 2; j++) {
            const int i0 = b * Q4_0_BLOCK + j, i1 = i0 + Q4_0_BLOCK / 2;
            if (i0 < C) y[i0] = (float)((blk[2 + j] & 0x0F) - 8) * d;
            if (i1 < C) y[i1] = (float)((blk[2 + j] >> 4) - 8) * d;
        }
    }
}

void hadamard_rows(float *x, int NH, int hs) {
    const float s = 1.0f / sqrtf((float)hs);
    for (int h = 0; h < NH; h++) {
        float *v = x + (size_t)h * hs;
        for (int len = 1; len < hs; len *= 2) /* butterflies: (a, b) -> (a + b, a - b) */
            for (int i = 0; i < hs; i += 2 * len)
                for (int j = i; j < i + len; j++) {
                    const float a = v[j], b = v[j + len];
                    v[j] = a + b;
                    v[j + len] = a - b;
                }
        for (int i = 0; i < hs; i++) v[i] *= s;
    }
}
