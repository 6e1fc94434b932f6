/* halfprec.c — float32 ⇄ fp16 / bf16 by integer bit manipulation. */
#include "halfprec.h"

#include <string.h>

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Shift m right by s bits, rounding to nearest, ties to even (s ≥ 1). */
static uint32_t shift_rne(uint32_t m, int s) {
    if (s > 31) return 0; /* below half of the smallest step: rounds to 0 */
    uint32_t q = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return q;
}

uint16_t fp32_to_fp16(float f) {
    uint32_t u = bits_of(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    int32_t e = (int32_t)((u >> 23) & 0xFFu);
    uint32_t m = u & 0x7FFFFFu;
    if (e == 0xFF) {                       /* Inf, or NaN kept quiet with its payload's top */
        if (m == 0) return sign | 0x7C00u;
        return (uint16_t)(sign | 0x7E00u | (m >> 13));
    }
    if (e == 0) return sign;               /* ±0 and float32 subnormals (< 2^-126) → ±0 */
    int32_t he = e - 127 + 15;             /* fp16 biased exponent */
    uint32_t mant = m | 0x800000u;         /* 24 significant bits with the hidden 1 */
    if (he >= 1) {
        /* normal: keep 11 bits; a carry out of the mantissa bumps the exponent,
         * and past exponent 30 that is Inf (0x7C00) — the encoding does it for us. */
        uint32_t r = shift_rne(mant, 13);  /* 11 bits, or 0x800 after a carry */
        uint32_t h = ((uint32_t)he << 10) + (r - 0x400u);
        if (h >= 0x7C00u) return sign | 0x7C00u;
        return (uint16_t)(sign | h);
    }
    /* subnormal: value = mant·2^(e-150); fp16 subnormal step is 2^-24 */
    uint32_t r = shift_rne(mant, 14 - he); /* 1 - he more bits than a normal */
    return (uint16_t)(sign | r);           /* r = 0x400 rounds up into the smallest normal */
}

float fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F) return float_of(sign | 0x7F800000u | (m << 13));
    if (e == 0) {
        if (m == 0) return float_of(sign);
        /* subnormal: normalise into float32's wider exponent range */
        int s = 0;
        while (!(m & 0x400u)) {
            m <<= 1;
            s++;
        }
        return float_of(sign | ((uint32_t)(113 - s) << 23) | ((m & 0x3FFu) << 13));
    }
    return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t fp32_to_bf16(float f) {
    uint32_t u = bits_of(f);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu))
        return (uint16_t)((u >> 16) | 0x0040u); /* NaN: quiet, sign and payload top kept */
    /* round to nearest even on the low 16 bits; a carry can reach Inf, as it should */
    uint32_t r = u + 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(r >> 16);
}

float bf16_to_fp32(uint16_t h) { return float_of((uint32_t)h << 16); }
