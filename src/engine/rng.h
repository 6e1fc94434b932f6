/* rng.h — the PRNG behind every seeded draw: splitmix64 (Steele, Lea, Flood 2014) and
 * normals as the Irwin–Hall sum of 12 uniforms minus 6 (mean 0, variance 1), in double.
 * No libm call, so a seed gives the same bytes on every IEEE-754 machine. */
#ifndef KVSCOPE_RNG_H
#define KVSCOPE_RNG_H

#include <stdint.h>

static inline uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A uniform double in [0, 1). */
static inline double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

static inline double rng_normal(uint64_t *s) {
    double a = 0.0;
    for (int i = 0; i < 12; i++) a += rng_uniform(s);
    return a - 6.0;
}

/* The seed of stream i of seed (tensor i, batch i, ...): independent streams. */
static inline uint64_t rng_stream(uint64_t seed, uint64_t i) {
    return seed ^ (0xD1B54A32D192ED03ull * (i + 1));
}

#endif
