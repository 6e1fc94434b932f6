/* kernels.c — fast twins of the ops.c kernels; see kernels.h for the contract.
 *
 * Why these give the plain kernels' exact bytes: C forbids the compiler to reorder
 * floating-point arithmetic (we build without -ffast-math, and -std=c11 turns off
 * contraction into FMA), and every vector below holds independent outputs: lane j
 * of an accumulator is one output element, built with the same "+= a·w" sequence,
 * in the same order, as in ops.c. Vector and scalar IEEE mul, add and div round
 * the same way.
 */
#include "kernels.h"

#include <math.h>
#include <string.h>

#include "ops.h"

#ifdef _OPENMP
#include <omp.h>
#define OMP(directive) _Pragma(#directive)
#else
#define OMP(directive)
#endif

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define KERN_HAVE_AVX2 1
#include <immintrin.h>
#else
#define KERN_HAVE_AVX2 0
#endif

/* Below this many multiply-adds a kernel runs on one thread: waking a team costs
 * a few microseconds. The result is the same either way. */
#define KERN_PAR_MIN 32768.0

int kern_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int kern_supported(KernLevel lv) {
    switch (lv) {
    case KERN_PLAIN: return 1;
#if KERN_HAVE_AVX2
    case KERN_AVX2: return __builtin_cpu_supports("avx2") ? 1 : 0;
#endif
    default: return 0;
    }
}

KernLevel kern_detect(void) {
    return kern_supported(KERN_AVX2) ? KERN_AVX2 : KERN_PLAIN;
}

const char *kern_name(KernLevel lv) {
    switch (lv) {
    case KERN_PLAIN: return "plain";
    case KERN_AVX2: return "avx2";
    default: return "?";
    }
}

/* ---- kernels that only need threads: the plain code on disjoint rows ---- */

void kern_gelu_forward(KernLevel lv, float *out, const float *inp, size_t n) {
    const size_t chunk = 4096; /* elements; each chunk is plain gelu_forward */
    const long nchunks = (long)((n + chunk - 1) / chunk);
    (void)lv;
    OMP(omp parallel for schedule(static) if(nchunks > 1))
    for (long j = 0; j < nchunks; j++) {
        size_t a = (size_t)j * chunk, len = n - a < chunk ? n - a : chunk;
        gelu_forward(out + a, inp + a, len);
    }
}

void kern_layernorm_forward(KernLevel lv, float *out, const float *inp, const float *w,
                            const float *b, int T, int C, float eps) {
    (void)lv;
    OMP(omp parallel for schedule(static) if((double)T * C > KERN_PAR_MIN))
    for (int t = 0; t < T; t++)
        layernorm_forward(out + (size_t)t * C, inp + (size_t)t * C, w, b, 1, C, eps);
}

#if KERN_HAVE_AVX2
#define AVX2 __attribute__((target("avx2")))
#define AVX2_INLINE __attribute__((target("avx2"), always_inline)) static inline

/* ---- matmul: out (T,OC) = inp (T,C) · w (C,OC) + bias ----------------------
 * Plain order per element: y = 0; for c: y += x[c]·w[c][o]; then y += bias[o]. */

enum { MM_TW = 24,   /* columns of a prefill tile: 3 vectors */
       MM_TR = 4,    /* rows of a prefill tile: 4×3 accumulators + 3 weights + 1 */
       MM_DW = 64,   /* columns of a decode strip: 8 accumulators */
       MM_KC = 256 };/* inputs per packed weight panel: 256·24 floats = 24 KiB */

/* Rows 0..3 of inp against columns o..o+23, for the kc inputs c0..c0+kc-1 whose
 * weights sit packed in panel (kc, 24). 4×3 accumulators stay in registers and
 * each weight vector is loaded once for 4 rows. The sums run over C in blocks of
 * kc: between blocks the partial sums wait in out as floats, the same values the
 * plain loop holds in y[o] at that point, so blocking changes no rounding. */
AVX2_INLINE void mm_tile4(float *out, const float *inp, const float *panel, const float *bias,
                          int C, int kc, int OC, int o, int first, int last) {
    /* named accumulators, not an array: GCC then keeps all twelve in registers */
#define MM_ROW_ACC(r, i) __m256 r##0, r##1, r##2;                                          \
    if (first) r##0 = r##1 = r##2 = _mm256_setzero_ps();                                    \
    else {                                                                                  \
        const float *y_ = out + (size_t)(i) * OC + o;                                       \
        r##0 = _mm256_loadu_ps(y_), r##1 = _mm256_loadu_ps(y_ + 8), r##2 = _mm256_loadu_ps(y_ + 16); \
    }
    MM_ROW_ACC(a0, 0) MM_ROW_ACC(a1, 1) MM_ROW_ACC(a2, 2) MM_ROW_ACC(a3, 3)
#undef MM_ROW_ACC
    for (int c = 0; c < kc; c++) {
        const float *wr = panel + (size_t)c * MM_TW;
        const __m256 w0 = _mm256_load_ps(wr), w1 = _mm256_load_ps(wr + 8),
                     w2 = _mm256_load_ps(wr + 16);
#define MM_ROW_STEP(r, i) {                                                                 \
        const __m256 x_ = _mm256_broadcast_ss(inp + (size_t)(i) * C + c);                   \
        r##0 = _mm256_add_ps(r##0, _mm256_mul_ps(x_, w0));                                   \
        r##1 = _mm256_add_ps(r##1, _mm256_mul_ps(x_, w1));                                   \
        r##2 = _mm256_add_ps(r##2, _mm256_mul_ps(x_, w2)); }
        MM_ROW_STEP(a0, 0) MM_ROW_STEP(a1, 1) MM_ROW_STEP(a2, 2) MM_ROW_STEP(a3, 3)
#undef MM_ROW_STEP
    }
    const __m256 z = _mm256_setzero_ps();
    const __m256 b0 = last && bias ? _mm256_loadu_ps(bias + o) : z,
                 b1 = last && bias ? _mm256_loadu_ps(bias + o + 8) : z,
                 b2 = last && bias ? _mm256_loadu_ps(bias + o + 16) : z;
    const int add_bias = last && bias;
#define MM_ROW_STORE(r, i) {                                                                \
        float *y_ = out + (size_t)(i) * OC + o;                                             \
        _mm256_storeu_ps(y_, add_bias ? _mm256_add_ps(r##0, b0) : r##0);                     \
        _mm256_storeu_ps(y_ + 8, add_bias ? _mm256_add_ps(r##1, b1) : r##1);                 \
        _mm256_storeu_ps(y_ + 16, add_bias ? _mm256_add_ps(r##2, b2) : r##2); }
    MM_ROW_STORE(a0, 0) MM_ROW_STORE(a1, 1) MM_ROW_STORE(a2, 2) MM_ROW_STORE(a3, 3)
#undef MM_ROW_STORE
}

/* The same for one row: the rows left over when T is not a multiple of 4. */
AVX2_INLINE void mm_tile1(float *out, const float *inp, const float *panel, const float *bias,
                          int kc, int o, int first, int last) {
    __m256 a0, a1, a2;
    if (first) a0 = a1 = a2 = _mm256_setzero_ps();
    else a0 = _mm256_loadu_ps(out + o), a1 = _mm256_loadu_ps(out + o + 8),
         a2 = _mm256_loadu_ps(out + o + 16);
    for (int c = 0; c < kc; c++) {
        const float *wr = panel + (size_t)c * MM_TW;
        const __m256 x = _mm256_broadcast_ss(inp + c);
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(x, _mm256_load_ps(wr)));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(x, _mm256_load_ps(wr + 8)));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(x, _mm256_load_ps(wr + 16)));
    }
    if (last && bias) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(bias + o));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(bias + o + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(bias + o + 16));
    }
    _mm256_storeu_ps(out + o, a0);
    _mm256_storeu_ps(out + o + 8, a1);
    _mm256_storeu_ps(out + o + 16, a2);
}

/* One row against columns o..o+63: the decode strip. Eight accumulators hide the
 * add latency; the weights stream by in 256-byte pieces, four whole cache lines. */
AVX2_INLINE void mm_strip(float *y, const float *x, const float *w, const float *bias,
                          int C, int OC, int o) {
    __m256 acc[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
    for (int c = 0; c < C; c++) {
        const float *wr = w + (size_t)c * OC + o;
        const __m256 a = _mm256_broadcast_ss(x + c);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++)
            acc[j] = _mm256_add_ps(acc[j], _mm256_mul_ps(a, _mm256_loadu_ps(wr + 8 * j)));
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        __m256 v = acc[j];
        if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + o + 8 * j));
        _mm256_storeu_ps(y + o + 8 * j, v);
    }
}

/* Columns o0..OC-1 of one row: 8 at a time, then one at a time. */
AVX2_INLINE void mm_cols(float *y, const float *x, const float *w, const float *bias,
                         int C, int OC, int o0) {
    int o = o0;
    for (; o + 8 <= OC; o += 8) {
        __m256 acc = _mm256_setzero_ps();
        for (int c = 0; c < C; c++)
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_broadcast_ss(x + c),
                                                   _mm256_loadu_ps(w + (size_t)c * OC + o)));
        if (bias) acc = _mm256_add_ps(acc, _mm256_loadu_ps(bias + o));
        _mm256_storeu_ps(y + o, acc);
    }
    for (; o < OC; o++) {
        float s = 0.0f;
        for (int c = 0; c < C; c++) s += x[c] * w[(size_t)c * OC + o];
        if (bias) s += bias[o];
        y[o] = s;
    }
}

AVX2 static void matmul_avx2(float *out, const float *inp, const float *w, const float *bias,
                             int T, int C, int OC) {
    const int par = (double)T * C * OC > KERN_PAR_MIN;
    if (T < MM_TR) {
        /* decode: each thread streams its own strips of W, whole cache lines */
        const int nstrips = OC / MM_DW;
        OMP(omp parallel for schedule(static) if(par))
        for (int j = 0; j <= nstrips; j++)
            for (int t = 0; t < T; t++) {
                float *y = out + (size_t)t * OC;
                const float *x = inp + (size_t)t * C;
                if (j < nstrips) mm_strip(y, x, w, bias, C, OC, j * MM_DW);
                else mm_cols(y, x, w, bias, C, OC, nstrips * MM_DW);
            }
        return;
    }
    /* prefill: a thread owns a column tile; a block of MM_KC rows of its weights is
     * copied into a contiguous panel that stays in L1 while every block of 4 input
     * rows passes by. The last "tile" is the leftover columns. */
    const int ntiles = OC / MM_TW, Tfull = T - T % MM_TR;
    OMP(omp parallel for schedule(static) if(par))
    for (int j = 0; j <= ntiles; j++) {
        if (j == ntiles) {
            for (int t = 0; t < T; t++)
                mm_cols(out + (size_t)t * OC, inp + (size_t)t * C, w, bias, C, OC, ntiles * MM_TW);
            continue;
        }
        const int o = j * MM_TW;
        float panel[MM_KC * MM_TW] __attribute__((aligned(32)));
        for (int c0 = 0; c0 < C; c0 += MM_KC) {
            const int kc = C - c0 < MM_KC ? C - c0 : MM_KC, first = c0 == 0, last = c0 + kc == C;
            for (int c = 0; c < kc; c++)
                memcpy(panel + (size_t)c * MM_TW, w + (size_t)(c0 + c) * OC + o, sizeof(float) * MM_TW);
            for (int t = 0; t < Tfull; t += MM_TR)
                mm_tile4(out + (size_t)t * OC, inp + (size_t)t * C + c0, panel, bias, C, kc, OC,
                         o, first, last);
            for (int t = Tfull; t < T; t++)
                mm_tile1(out + (size_t)t * OC, inp + (size_t)t * C + c0, panel, bias, kc, o, first, last);
        }
    }
}

/* ---- dot products along a row, 8 outputs at a time -------------------------
 * lm_head logits and attention scores are dot products whose sum runs along a
 * contiguous row (s += x[c]·w[c]). To vectorise without reordering, 8 rows (8
 * outputs) are read 8 floats at a time and transposed, so that lane i of the
 * accumulator walks row i in order. */

AVX2_INLINE void transpose8(__m256 r[8]) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* Lane i = Σ_d x[d]·rows[i·stride + d] for d = 0..len-1, in order of d. */
AVX2_INLINE __m256 dot8(const float *x, const float *rows, size_t stride, int len) {
    __m256 acc = _mm256_setzero_ps();
    int d = 0;
    for (; d + 8 <= len; d += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(rows + i * stride + d);
        transpose8(r);
        for (int j = 0; j < 8; j++)
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_broadcast_ss(x + d + j), r[j]));
    }
    for (; d < len; d++) {
        const float *p = rows + d;
        const __m256 col = _mm256_set_ps(p[7 * stride], p[6 * stride], p[5 * stride],
                                         p[4 * stride], p[3 * stride], p[2 * stride],
                                         p[stride], p[0]);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_broadcast_ss(x + d), col));
    }
    return acc;
}

AVX2 static void matmul_transposed_avx2(float *out, const float *inp, const float *w,
                                        int T, int C, int OC) {
    const int nblk = OC / 8;
    for (int t = 0; t < T; t++) {
        const float *x = inp + (size_t)t * C;
        float *y = out + (size_t)t * OC;
        OMP(omp parallel for schedule(static) if((double)C * OC > KERN_PAR_MIN))
        for (int j = 0; j <= nblk; j++) {
            if (j < nblk) {
                _mm256_storeu_ps(y + 8 * j, dot8(x, w + (size_t)8 * j * C, (size_t)C, C));
                continue;
            }
            for (int o = 8 * nblk; o < OC; o++) { /* leftover outputs, as ops.c */
                const float *wr = w + (size_t)o * C;
                float s = 0.0f;
                for (int c = 0; c < C; c++) s += x[c] * wr[c];
                y[o] = s;
            }
        }
    }
}

/* ---- attention ------------------------------------------------------------
 * One (query, head) pair at a time, as ops.c: scores by dot8 over 8 keys at once,
 * the softmax in plain scalar code (expf and the running sum in key order), and
 * the weighted sum of values with lanes along the head dimension. */
AVX2 static void attention_one(float *oi, float *sc, float *pa, const float *qi,
                               const float *kc, const float *vc, int pos, int Tt, int C,
                               int hs, float div) {
    const __m256 vdiv = _mm256_set1_ps(div);
    int t = 0;
    for (; t + 8 <= pos + 1; t += 8)
        _mm256_storeu_ps(sc + t, _mm256_div_ps(dot8(qi, kc + (size_t)t * C, (size_t)C, hs), vdiv));
    for (; t <= pos; t++) {
        const float *kt = kc + (size_t)t * C;
        float dot = 0.0f;
        for (int d = 0; d < hs; d++) dot += qi[d] * kt[d];
        sc[t] = dot / div;
    }
    float maxv = -INFINITY;
    for (t = 0; t <= pos; t++)
        if (sc[t] > maxv) maxv = sc[t];
    for (t = pos + 1; t < Tt; t++) {
        sc[t] = -INFINITY;
        pa[t] = 0.0f;
    }
    float sum = 0.0f;
    for (t = 0; t <= pos; t++) {
        pa[t] = expf(sc[t] - maxv);
        sum += pa[t];
    }
    const float inv = 1.0f / sum;
    for (t = 0; t <= pos; t++) pa[t] *= inv;
    /* out[d] = Σ_t pa[t]·v[t][d], t in order: 32 columns of d in 4 registers at once */
    int d = 0;
    for (; d + 32 <= hs; d += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (t = 0; t <= pos; t++) {
            const float *vt = vc + (size_t)t * C + d;
            const __m256 wt = _mm256_broadcast_ss(pa + t);
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(wt, _mm256_loadu_ps(vt)));
            a1 = _mm256_add_ps(a1, _mm256_mul_ps(wt, _mm256_loadu_ps(vt + 8)));
            a2 = _mm256_add_ps(a2, _mm256_mul_ps(wt, _mm256_loadu_ps(vt + 16)));
            a3 = _mm256_add_ps(a3, _mm256_mul_ps(wt, _mm256_loadu_ps(vt + 24)));
        }
        _mm256_storeu_ps(oi + d, a0);
        _mm256_storeu_ps(oi + d + 8, a1);
        _mm256_storeu_ps(oi + d + 16, a2);
        _mm256_storeu_ps(oi + d + 24, a3);
    }
    for (; d + 8 <= hs; d += 8) {
        __m256 a0 = _mm256_setzero_ps();
        for (t = 0; t <= pos; t++)
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_broadcast_ss(pa + t),
                                                 _mm256_loadu_ps(vc + (size_t)t * C + d)));
        _mm256_storeu_ps(oi + d, a0);
    }
    for (; d < hs; d++) {
        float s = 0.0f;
        for (t = 0; t <= pos; t++) s += pa[t] * vc[(size_t)t * C + d];
        oi[d] = s;
    }
}

AVX2 static void attention_avx2(float *out, float *scores, float *pattern, const float *q,
                                const float *kc, const float *vc, int n, int p, int NH, int hs) {
    const int C = NH * hs, Tt = p + n;
    const float div = (float)sqrt((double)hs); /* as ops.c */
    const double work = (double)n * NH * ((double)p + n) * hs;
    OMP(omp parallel for schedule(dynamic, 1) if(work > KERN_PAR_MIN))
    for (int it = 0; it < n * NH; it++) {
        const int i = it / NH, h = it % NH;
        attention_one(out + (size_t)i * C + (size_t)h * hs,
                      scores + ((size_t)h * n + i) * Tt, pattern + ((size_t)h * n + i) * Tt,
                      q + (size_t)i * C + (size_t)h * hs, kc + (size_t)h * hs,
                      vc + (size_t)h * hs, p + i, Tt, C, hs, div);
    }
}
#endif /* KERN_HAVE_AVX2 */

/* ---- dispatch ------------------------------------------------------------ */

void kern_matmul_forward(KernLevel lv, float *out, const float *inp, const float *w,
                         const float *bias, int T, int C, int OC) {
#if KERN_HAVE_AVX2
    if (lv == KERN_AVX2) {
        matmul_avx2(out, inp, w, bias, T, C, OC);
        return;
    }
#endif
    (void)lv;
    matmul_forward(out, inp, w, bias, T, C, OC);
}

void kern_matmul_transposed_forward(KernLevel lv, float *out, const float *inp,
                                    const float *w, int T, int C, int OC) {
#if KERN_HAVE_AVX2
    if (lv == KERN_AVX2) {
        matmul_transposed_avx2(out, inp, w, T, C, OC);
        return;
    }
#endif
    (void)lv;
    matmul_transposed_forward(out, inp, w, T, C, OC);
}

void kern_attention_forward(KernLevel lv, float *out, float *scores, float *pattern,
                            const float *q, const float *kc, const float *vc,
                            int n, int p, int NH, int hs) {
#if KERN_HAVE_AVX2
    if (lv == KERN_AVX2) {
        attention_avx2(out, scores, pattern, q, kc, vc, n, p, NH, hs);
        return;
    }
#endif
    (void)lv;
    attention_forward(out, scores, pattern, q, kc, vc, n, p, NH, hs);
}
