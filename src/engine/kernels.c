/* kernels.c — fast twins of the ops.c kernels; see kernels.h for the contract.
 *
 * Why these give the plain kernels' exact bytes: C forbids the compiler to reorder
 * floating-point arithmetic (we build without -ffast-math), the Makefile's
 * -ffp-contract=off keeps it from fusing a·b + c into an FMA on its own (gcc fuses
 * nothing in -std=c11 mode, but clang does by default), and every vector below holds
 * independent outputs: lane j
 * of an accumulator is one output element, built with the same "y = fmaf(a, w, y)"
 * sequence, in the same order, as in ops.c. Vector and scalar IEEE FMA, mul, add and
 * div round the same way (an FMA once, on the exact a·w + y).
 *
 * The matmul and the prefill attention blocks are written once, width-generic, in
 * kernels_simd.h, included below for AVX2 (8 floats) and AVX-512F (16 floats); the
 * softmax and GELU are written once for both widths too (SOFTMAX, TANH_GELU); the
 * decode attention and layernorm are AVX2 only (the dispatcher at the end picks per
 * level).
 */
#include "kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bigbuf.h"
#include "halfprec.h"
#include "ops.h"
#include "parallel.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define KERN_HAVE_AVX2 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define KERN_HAVE_AVX2 0
#endif

/* Below this many multiply-adds a kernel runs on one thread: waking a team costs
 * a few microseconds. The result is the same either way. */
#define KERN_PAR_MIN 32768.0

enum { LN_R = 8, LN_R16 = 16 }; /* layernorm: rows side by side, their sums in lanes (AVX2,
                                  * AVX-512) */

int kern_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

#if KERN_HAVE_AVX2
/* F16C (the fp16 conversions) from CPUID leaf 1, ECX bit 29: clang's
 * __builtin_cpu_supports does not know the name. */
static int has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

int kern_supported(KernLevel lv) {
    switch (lv) {
    case KERN_PLAIN: return 1;
#if KERN_HAVE_AVX2
    case KERN_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case KERN_AVX512: return kern_supported(KERN_AVX2) && __builtin_cpu_supports("avx512f");
#endif
    default: return 0;
    }
}

KernLevel kern_detect(void) {
    return kern_supported(KERN_AVX512) ? KERN_AVX512
           : kern_supported(KERN_AVX2) ? KERN_AVX2 : KERN_PLAIN;
}

const char *kern_name(KernLevel lv) {
    switch (lv) {
    case KERN_PLAIN: return "plain";
    case KERN_AVX2: return "avx2";
    case KERN_AVX512: return "avx512";
    default: return "?";
    }
}

/* Where output col of row t goes (kernels.h: KernOut). */
static inline float *kout(const KernOut *ko, size_t t, int col) {
    return ko->p[col / ko->cols] + t * ko->ld + col % ko->cols;
}

/* Output col of row t, y = its sum plus bias, stored as ko says: y, gelu(y) (the bits of
 * gelu_forward) or out + y (those of residual_forward). */
static inline void kput(const KernOut *ko, size_t t, int col, float y) {
    float *p = kout(ko, t, col);
    if (ko->how == KERN_GELU) gelu_forward(&y, &y, 1);
    *p = ko->how == KERN_ADD ? *p + y : y;
}

#if KERN_HAVE_AVX2
#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) static inline

/* ---- matmul: out (T,OC) = inp (T,C) · w (C,OC) + bias ----------------------
 * Plain order per element: y = 0; for c: y = fmaf(x[c], w[c][o], y); then y += bias[o].
 * The weights come in column panels of KERN_PANEL = 48 (kernels.h): a thread owns
 * whole panels, so everything it reads is one contiguous run. (Split by columns of
 * the row-major w, each thread would read a short piece of every row, which the
 * hardware prefetchers follow at half the speed of one long stream.) */

/* Panel rows per prefill block: 768·48 floats = 144 KiB, held in L2 while each tile of
 * input rows (8 × 768 floats, 24 KiB: in L1) sums over all of them with its accumulators
 * in registers; the next block's prefetch fits in L2 beside it (NOTES.md: the sizes
 * tried). */
enum { MM_KC = 768 };

/* Panels hold float32, or halves (DT_FP16, DT_BF16) that become float32 as they
 * are read: every half is a float32 value, so the sums are those of the float32
 * matmul on the rounded weights. */
static size_t elem_size(Dtype dt) { return dtype_row_bytes(dt, 1, 1); }

/* Weight i of p as a float. */
static float load1w(const void *p, size_t i, Dtype dt) {
    if (dt == DT_FP32) return ((const float *)p)[i];
    const uint16_t h = ((const uint16_t *)p)[i];
    return dt == DT_FP16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
}

/* A prefill walks the weights one block (MM_KC rows of a panel) at a time; the block
 * that comes next (the panel's next one, or the next panel's first: panels are
 * contiguous) is fetched into L2 while the current block's ntiles tiles run, a share of
 * its lines each, spread evenly over the tile's loop: without it each new block starts
 * with a stall, and fetched all at once at the start of a tile the lines stall the tile
 * instead (NOTES.md).
 * Returns the first line of tile number tile's share and puts their count in *n (0
 * past end). */
AVX2_INLINE const char *prefetch_share(const void *next, const void *end, size_t es, int tile,
                                       int ntiles, int *n) {
    const size_t lines = (size_t)MM_KC * KERN_PANEL * es / 64,
                 per = (lines + (size_t)ntiles - 1) / (size_t)ntiles, first = per * (size_t)tile;
    const char *p = (const char *)next + 64 * first, *e = (const char *)end;
    size_t k = first < lines ? lines - first : 0;
    if (k > per) k = per;
    if (p >= e) k = 0;
    else if ((size_t)(e - p) / 64 < k) k = (size_t)(e - p) / 64;
    *n = (int)k;
    return p;
}

/* One full panel (output columns o..o+47) against all T input rows. end: the end of the
 * weights, for the prefetch. */
typedef void PanelFn(const KernOut *ko, const float *inp, const void *pan, const float *bias,
                     int T, int C, int o, const void *end);
/* Decode rows (T < the tile's rows) against unit u of the panels: a group of neighbour
 * panels (u < ng) or one left over. */
typedef void DecodeFn(const KernOut *ko, const float *inp, const void *wp, const float *bias,
                      int T, int C, int OC, int u, int ng);

/* ---- dot products along a row, 8 outputs at a time -------------------------
 * Attention scores are dot products whose sum runs along a contiguous row
 * (s += q[d]·k[d]). To vectorise without reordering, 8 rows (8
 * outputs) are read 8 floats at a time and transposed, so that lane i of the
 * accumulator walks row i in order. */

/* r0..r7 (8 rows of 8) become the 8 columns, in place. Named variables, not an
 * array, so that GCC keeps them in registers. */
#define TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7) {                                        \
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);           \
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);           \
    const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);           \
    const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);           \
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE); \
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE); \
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE); \
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE); \
    r0 = _mm256_permute2f128_ps(s0, s4, 0x20);                                                \
    r1 = _mm256_permute2f128_ps(s1, s5, 0x20);                                                \
    r2 = _mm256_permute2f128_ps(s2, s6, 0x20);                                                \
    r3 = _mm256_permute2f128_ps(s3, s7, 0x20);                                                \
    r4 = _mm256_permute2f128_ps(s0, s4, 0x31);                                                \
    r5 = _mm256_permute2f128_ps(s1, s5, 0x31);                                                \
    r6 = _mm256_permute2f128_ps(s2, s6, 0x31);                                                \
    r7 = _mm256_permute2f128_ps(s3, s7, 0x31); }

/* acc lane i += x[d..d+7]·(row i)[d..d+7], one product after the other, for the 8
 * rows at p, p + stride, ... */
#define DOT8_STEP(acc, p, stride, x) {                                                      \
    __m256 r0 = _mm256_loadu_ps(p), r1 = _mm256_loadu_ps((p) + (stride)),                   \
           r2 = _mm256_loadu_ps((p) + 2 * (stride)), r3 = _mm256_loadu_ps((p) + 3 * (stride)), \
           r4 = _mm256_loadu_ps((p) + 4 * (stride)), r5 = _mm256_loadu_ps((p) + 5 * (stride)), \
           r6 = _mm256_loadu_ps((p) + 6 * (stride)), r7 = _mm256_loadu_ps((p) + 7 * (stride)); \
    TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7)                                              \
    acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x), r0, acc);                                 \
    acc = _mm256_fmadd_ps(_mm256_broadcast_ss((x) + 1), r1, acc);                           \
    acc = _mm256_fmadd_ps(_mm256_broadcast_ss((x) + 2), r2, acc);                           \
    acc = _mm256_fmadd_ps(_mm256_broadcast_ss((x) + 3), r3, acc);                           \
    acc = _mm256_fmadd_ps(_mm256_broadcast_ss((x) + 4), r4, acc);                           \
    acc = _mm256_fmadd_ps(_mm256_broadcast_ss((x) + 5), r5, acc);                           \
    acc = _mm256_fmadd_ps(_mm256_broadcast_ss((x) + 6), r6, acc);                           \
    acc = _mm256_fmadd_ps(_mm256_broadcast_ss((x) + 7), r7, acc); }

/* The same for element d alone (the leftover d when len is not a multiple of 8). */
AVX2_INLINE __m256 dot1_step(__m256 acc, const float *p, size_t stride, const float *x) {
    const __m256 col = _mm256_set_ps(p[7 * stride], p[6 * stride], p[5 * stride],
                                     p[4 * stride], p[3 * stride], p[2 * stride],
                                     p[stride], p[0]);
    return _mm256_fmadd_ps(_mm256_broadcast_ss(x), col, acc);
}

/* Lane i = Σ_d x[d]·rows[i·stride + d] for d = 0..len-1, in order of d. */
AVX2_INLINE __m256 dot8(const float *x, const float *rows, size_t stride, int len) {
    __m256 acc = _mm256_setzero_ps();
    int d = 0;
    for (; d + 8 <= len; d += 8) DOT8_STEP(acc, rows + d, stride, x + d)
    for (; d < len; d++) acc = dot1_step(acc, rows + d, stride, x + d);
    return acc;
}

/* Two blocks of 8 rows (rows, rows + 8·stride) at once: two independent chains of
 * adds, so one waits less on the other's latency. */
AVX2_INLINE void dot16(__m256 *out0, __m256 *out1, const float *x, const float *rows,
                       size_t stride, int len) {
    __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
    const float *rows1 = rows + 8 * stride;
    int d = 0;
    for (; d + 8 <= len; d += 8) {
        DOT8_STEP(a, rows + d, stride, x + d)
        DOT8_STEP(b, rows1 + d, stride, x + d)
    }
    for (; d < len; d++) {
        a = dot1_step(a, rows + d, stride, x + d);
        b = dot1_step(b, rows1 + d, stride, x + d);
    }
    *out0 = a;
    *out1 = b;
}

/* ops.c's exp_reduced in lanes, the shared core of exp_8 and tanh: n = round(y·log2 e)
 * and e^r for r = y − n·ln 2 (two-part ln 2), by the degree-7 polynomial; the caller
 * scales by 2^n. Written once for both widths: P is the intrinsics' prefix (_mm256,
 * _mm512), V the vector type, ATTR the function's target. */
#define EXP_REDUCED(ATTR, NAME, P, V)                                                      \
    ATTR V NAME(V y, V *n_out) {                                                            \
        const V n = P##_sub_ps(P##_fmadd_ps(y, P##_set1_ps(OPS_EXP_LOG2E),                   \
                                            P##_set1_ps(OPS_EXP_ROUND)),                     \
                               P##_set1_ps(OPS_EXP_ROUND));                                  \
        const V r = P##_fnmadd_ps(n, P##_set1_ps(OPS_EXP_LN2_LO),                            \
                                  P##_fnmadd_ps(n, P##_set1_ps(OPS_EXP_LN2_HI), y));         \
        V q = P##_set1_ps(1.0f / 5040.0f);                                                   \
        q = P##_fmadd_ps(q, r, P##_set1_ps(1.0f / 720.0f));                                  \
        q = P##_fmadd_ps(q, r, P##_set1_ps(1.0f / 120.0f));                                  \
        q = P##_fmadd_ps(q, r, P##_set1_ps(1.0f / 24.0f));                                   \
        q = P##_fmadd_ps(q, r, P##_set1_ps(1.0f / 6.0f));                                    \
        q = P##_fmadd_ps(q, r, P##_set1_ps(0.5f));                                           \
        *n_out = n;                                                                          \
        return P##_add_ps(P##_set1_ps(1.0f), P##_fmadd_ps(P##_mul_ps(r, r), q, r));          \
    }
EXP_REDUCED(AVX2_INLINE, exp_reduced8, _mm256, __m256)

/* ops_expf W lanes at a time: the same operations on the same constants. max(x, LOW)
 * with LOW second turns a NaN lane into LOW; nan_W puts x back there last. Written once
 * for both widths (P, V, ATTR as for EXP_REDUCED; B the vector's bits). */
#define EXPF(ATTR, W, B, P, V)                                                              \
    ATTR V exp_##W(V x) {                                                                    \
        const V xc = P##_max_ps(x, P##_set1_ps(OPS_EXPF_LOW));                               \
        V n;                                                                                 \
        const V er = exp_reduced##W(xc, &n);                                                 \
        const V two = P##_castsi##B##_ps(P##_slli_epi32(                                     \
            P##_add_epi32(P##_cvtps_epi32(n), P##_set1_epi32(64 + 127)), 23)); /* 2^(n+64) */ \
        return nan_##W(P##_mul_ps(P##_mul_ps(er, two), P##_set1_ps(OPS_EXPF_TWO_M64)), x);   \
    }
AVX2_INLINE __m256 nan_8(__m256 t, __m256 x) { /* x where x is NaN, else t */
    return _mm256_blendv_ps(t, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
EXPF(AVX2_INLINE, 8, 256, _mm256, __m256)

/* The mask of lanes 0 .. n-1 (n ≤ 8) for a masked load or store: the last few keys of a
 * row are read and written in place, with no copy through a buffer on the stack (which
 * cost a failed store forwarding each time). Masked lanes load as 0 and store nothing. */
AVX2_INLINE __m256i lanes_below(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The sums of rows r = 0..7 of pa (pa + r·T, keys 0..pos0 + r): 8 chains of adds side
 * by side, each in key order. */
static inline void softmax_sums8(float sum[8], const float *pa, int pos0, int T) {
    for (int r = 0; r < 8; r++) sum[r] = 0.0f;
    for (int t = 0; t <= pos0; t++)
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) sum[r] += pa[(size_t)r * T + t];
    for (int r = 1; r < 8; r++)
        for (int t = pos0 + 1; t <= pos0 + r; t++) sum[r] += pa[(size_t)r * T + t];
}

/* softmax_causal_row, W keys at a time where the order does not matter: the max
 * (row_max: each lane keeps a value only when it is greater, as the scalar loop does, so
 * NaNs are skipped alike, then the lanes against each other; which zero wins a tie of +0
 * and -0 does not change the exponentials; a prefill block's scores pass keeps the same
 * lanes as it stores, so its rows skip this), the exponentials (the last few keys
 * through exp_W too, masked) and the products by 1/sum. The sum itself runs key after
 * key: softmax_row, or softmax_rows8_W for 8 rows whose 8 sums then run side by side
 * (softmax_sums8). Written once for both widths (as EXP_REDUCED); what they do
 * differently sits in helpers per width: exp_W, keep_greater_W (v where v > m, else m),
 * max_lanes_W (the lanes' max as keep_greater finds it), load_first_W and store_first_W
 * (the first n lanes only, 0 < n < W: the last few keys of a row read and written in
 * place). */
#define SOFTMAX(ATTR, W, P, V)                                                              \
    ATTR void softmax_exp_##W(float *sc, float *pa, int pos, int T, float maxv) {           \
        int t, f = pos + 1;                                                                  \
        for (; f + W <= T; f += W) { /* the future: masked */                               \
            P##_storeu_ps(sc + f, P##_set1_ps(-INFINITY));                                   \
            P##_storeu_ps(pa + f, P##_setzero_ps());                                         \
        }                                                                                    \
        for (; f < T; f++) {                                                                \
            sc[f] = -INFINITY;                                                               \
            pa[f] = 0.0f;                                                                    \
        }                                                                                    \
        const V vmax = P##_set1_ps(maxv);                                                    \
        for (t = 0; t + W <= pos + 1; t += W)                                                \
            P##_storeu_ps(pa + t, exp_##W(P##_sub_ps(P##_loadu_ps(sc + t), vmax)));          \
        if (t <= pos) {                                                                      \
            const V x = P##_sub_ps(load_first_##W(sc + t, pos + 1 - t), vmax);               \
            store_first_##W(pa + t, pos + 1 - t, exp_##W(x));                                \
        }                                                                                    \
    }                                                                                        \
    ATTR void softmax_scale_##W(float *pa, int pos, float sum) {                             \
        const float inv = 1.0f / sum;                                                        \
        const V vinv = P##_set1_ps(inv);                                                     \
        int t = 0;                                                                           \
        for (; t + W <= pos + 1; t += W)                                                     \
            P##_storeu_ps(pa + t, P##_mul_ps(P##_loadu_ps(pa + t), vinv));                   \
        for (; t <= pos; t++) pa[t] *= inv;                                                  \
    }                                                                                        \
    /* rows r = 0..7 (sc + r·T, pa + r·T) at positions pos0 + r, as 8 softmax_rows; lane  \
     * by lane, mx[r] holds the max of row r's scores, as row_max would find it */           \
    ATTR void softmax_rows8_##W(float *sc, float *pa, int pos0, int T, const V mx[8]) {     \
        float sum[8];                                                                        \
        for (int r = 0; r < 8; r++)                                                          \
            softmax_exp_##W(sc + (size_t)r * T, pa + (size_t)r * T, pos0 + r, T,          \
                            max_lanes_##W(mx[r]));                                           \
        softmax_sums8(sum, pa, pos0, T);                                                    \
        for (int r = 0; r < 8; r++) softmax_scale_##W(pa + (size_t)r * T, pos0 + r, sum[r]); \
    }
AVX2_INLINE __m256 keep_greater_8(__m256 m, __m256 v) {
    return _mm256_blendv_ps(m, v, _mm256_cmp_ps(v, m, _CMP_GT_OQ));
}
/* halves against halves */
AVX2_INLINE float max_lanes_8(__m256 m) {
    m = keep_greater_8(m, _mm256_permute2f128_ps(m, m, 1));
    m = keep_greater_8(m, _mm256_permute_ps(m, 0x4E));
    return _mm256_cvtss_f32(keep_greater_8(m, _mm256_permute_ps(m, 0xB1)));
}
/* x in the first n lanes, fill in the others (the scores pass's last few keys) */
AVX2_INLINE __m256 first_or_8(__m256 x, int n, __m256 fill) {
    return _mm256_blendv_ps(fill, x, _mm256_castsi256_ps(lanes_below(n)));
}
AVX2_INLINE __m256 load_first_8(const float *p, int n) {
    return _mm256_maskload_ps(p, lanes_below(n));
}
AVX2_INLINE void store_first_8(float *p, int n, __m256 x) {
    _mm256_maskstore_ps(p, lanes_below(n), x);
}
SOFTMAX(AVX2_INLINE, 8, _mm256, __m256)

/* The max of sc[0..pos] (one row: a decode step's, or a query left over from the blocks). */
AVX2_INLINE float row_max(const float *sc, int pos) {
    __m256 mv = _mm256_set1_ps(-INFINITY);
    int t = 0;
    for (; t + 8 <= pos + 1; t += 8) mv = keep_greater_8(mv, _mm256_loadu_ps(sc + t));
    float maxv = max_lanes_8(mv);
    for (; t <= pos; t++)
        if (sc[t] > maxv) maxv = sc[t];
    return maxv;
}

AVX2_INLINE void softmax_row(float *sc, float *pa, int pos, int T) {
    softmax_exp_8(sc, pa, pos, T, row_max(sc, pos));
    float sum = 0.0f;
    for (int t = 0; t <= pos; t++) sum += pa[t];
    softmax_scale_8(pa, pos, sum);
}

/* The same as a function of its own, for the OpenMP region of a decode step. */
AVX2 static void softmax_row_avx2(float *sc, float *pa, int pos, int T) {
    softmax_row(sc, pa, pos, T);
}

/* ---- attention ------------------------------------------------------------
 * Per (query, head) as ops.c: scores, softmax_causal_row's operations (softmax_row:
 * ops_expf 8 keys at a time, 16 in a prefill block on AVX-512; the sum in key order),
 * then the weighted sum of the values. A decode step runs one query at a time; a
 * prefill runs blocks of 8 queries of one head, which share every key and value they
 * load (attention_block). */

/* Lane j = Σ_d x[d]·rows[j·stride + d] for the first m ≤ 8 rows only (other lanes 0):
 * dot8 for a block of keys that runs past the query's position, without loading the
 * keys beyond it (the causal contract: they are neither computed nor read). */
AVX2_INLINE __m256 dot8_partial(const float *x, const float *rows, size_t stride, int len, int m) {
    __m256 acc = _mm256_setzero_ps();
    const __m256 z = _mm256_setzero_ps();
    int d = 0;
    for (; d + 8 <= len; d += 8) {
        const float *p = rows + d;
        __m256 r0 = _mm256_loadu_ps(p), r1 = m > 1 ? _mm256_loadu_ps(p + stride) : z,
               r2 = m > 2 ? _mm256_loadu_ps(p + 2 * stride) : z,
               r3 = m > 3 ? _mm256_loadu_ps(p + 3 * stride) : z,
               r4 = m > 4 ? _mm256_loadu_ps(p + 4 * stride) : z,
               r5 = m > 5 ? _mm256_loadu_ps(p + 5 * stride) : z,
               r6 = m > 6 ? _mm256_loadu_ps(p + 6 * stride) : z, r7 = z;
        TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7)
        const float *xd = x + d;
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(xd), r0, acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(xd + 1), r1, acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(xd + 2), r2, acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(xd + 3), r3, acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(xd + 4), r4, acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(xd + 5), r5, acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(xd + 6), r6, acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(xd + 7), r7, acc);
    }
    for (; d < len; d++) {
        float col[8] = {0};
        for (int j = 0; j < m; j++) col[j] = rows[(size_t)j * stride + d];
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(x + d), _mm256_loadu_ps(col), acc);
    }
    return acc;
}

/* sc[t] = (qi·k_t)/div for keys t0..pos, 16, 8, then fewer at a time. */
AVX2_INLINE void scores_row(float *sc, const float *qi, const float *kc, int t0, int pos, int C,
                            int hs, __m256 vdiv) {
    int t = t0;
    for (; t + 16 <= pos + 1; t += 16) {
        __m256 a, b;
        dot16(&a, &b, qi, kc + (size_t)t * C, (size_t)C, hs);
        _mm256_storeu_ps(sc + t, _mm256_div_ps(a, vdiv));
        _mm256_storeu_ps(sc + t + 8, _mm256_div_ps(b, vdiv));
    }
    for (; t + 8 <= pos + 1; t += 8)
        _mm256_storeu_ps(sc + t, _mm256_div_ps(dot8(qi, kc + (size_t)t * C, (size_t)C, hs), vdiv));
    if (t <= pos)
        _mm256_maskstore_ps(sc + t, lanes_below(pos + 1 - t),
                            _mm256_div_ps(dot8_partial(qi, kc + (size_t)t * C, (size_t)C, hs,
                                                       pos + 1 - t), vdiv));
}

/* oi[d] = Σ_t pa[t]·v_t[d] for t = 0..pos in order, 32 columns of d at once. */
AVX2_INLINE void values_row(float *oi, const float *pa, const float *vc, int pos, int C, int hs) {
    int d = 0, t;
    for (; d + 32 <= hs; d += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (t = 0; t <= pos; t++) {
            const float *vt = vc + (size_t)t * C + d;
            const __m256 wt = _mm256_broadcast_ss(pa + t);
            a0 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(vt), a0);
            a1 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(vt + 8), a1);
            a2 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(vt + 16), a2);
            a3 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(vt + 24), a3);
        }
        _mm256_storeu_ps(oi + d, a0);
        _mm256_storeu_ps(oi + d + 8, a1);
        _mm256_storeu_ps(oi + d + 16, a2);
        _mm256_storeu_ps(oi + d + 24, a3);
    }
    for (; d + 8 <= hs; d += 8) {
        __m256 a0 = _mm256_setzero_ps();
        for (t = 0; t <= pos; t++)
            a0 = _mm256_fmadd_ps(_mm256_broadcast_ss(pa + t),
                                 _mm256_loadu_ps(vc + (size_t)t * C + d), a0);
        _mm256_storeu_ps(oi + d, a0);
    }
    for (; d < hs; d++) {
        float s = 0.0f;
        for (t = 0; t <= pos; t++) s = fmaf(pa[t], vc[(size_t)t * C + d], s);
        oi[d] = s;
    }
}

/* One query at position pos, one head. */
AVX2 static void attention_one(float *oi, float *sc, float *pa, const float *qi,
                               const float *kc, const float *vc, int pos, int T, int C,
                               int hs, float div) {
    scores_row(sc, qi, kc, 0, pos, C, hs, _mm256_set1_ps(div));
    softmax_row(sc, pa, pos, T);
    values_row(oi, pa, vc, pos, C, hs);
}

enum { AT_R = 8 }; /* queries in a prefill attention block */

/* Decode: the one query at position pos, every head, when hs is a multiple of 8. The
 * cache is walked row by row, each key and value row read whole and in order, rather
 * than head by head. Scores: threads split the keys, 8 at a time, each head's dot8 of
 * those 8 rows. Values: threads split the columns; the running sums of up to AD_COLS
 * columns stay in L1 while the value rows are added in AD_R at a time, in the order
 * of t, so each output is still Σ_t pa[t]·v_t[d] added key after key, as in ops.c.
 * Both ask for the rows AD_PF ahead themselves: several rows read side by side are
 * more streams than the hardware prefetchers follow (NOTES.md). */
enum { AD_R = 4,        /* value rows added per pass over the sums */
       AD_PF = 8,       /* rows fetched ahead */
       AD_COLS = 2048 };/* columns of sums held at once: 8 KiB */

/* acc[0..8·(gb-ga)) += pa·v over rows t0..t1-1 for the 8-column groups ga..gb-1. */
AVX2_INLINE void decode_values(float *acc, const float *pattern, const float *vc, int t0,
                               int t1, int ga, int gb, int C, int hs, int T) {
    const int gph = hs / 8; /* groups per head */
    int t = t0;
    for (; t + AD_R <= t1; t += AD_R)
        for (int g = ga; g < gb;) {
            const int h = g / gph, ge = (h + 1) * gph < gb ? (h + 1) * gph : gb;
            const float *pw = pattern + (size_t)h * T + t;
            const __m256 w0 = _mm256_broadcast_ss(pw), w1 = _mm256_broadcast_ss(pw + 1),
                         w2 = _mm256_broadcast_ss(pw + 2), w3 = _mm256_broadcast_ss(pw + 3);
            for (; g < ge; g++) {
                const float *v = vc + (size_t)t * C + 8 * g;
                if ((g - ga) % 2 == 0 && t + AD_PF + AD_R <= t1) /* a 64-byte line: 2 groups */
                    for (int k = 0; k < AD_R; k++)
                        _mm_prefetch((const char *)(v + (size_t)(AD_PF + k) * C), _MM_HINT_T0);
                float *a = acc + 8 * (g - ga);
                __m256 s = _mm256_load_ps(a);
                s = _mm256_fmadd_ps(w0, _mm256_loadu_ps(v), s);
                s = _mm256_fmadd_ps(w1, _mm256_loadu_ps(v + C), s);
                s = _mm256_fmadd_ps(w2, _mm256_loadu_ps(v + 2 * (size_t)C), s);
                s = _mm256_fmadd_ps(w3, _mm256_loadu_ps(v + 3 * (size_t)C), s);
                _mm256_store_ps(a, s);
            }
        }
    for (; t < t1; t++)
        for (int g = ga; g < gb; g++) {
            float *a = acc + 8 * (g - ga);
            const __m256 w = _mm256_broadcast_ss(pattern + (size_t)(g / gph) * T + t),
                         v = _mm256_loadu_ps(vc + (size_t)t * C + 8 * g);
            _mm256_store_ps(a, _mm256_fmadd_ps(w, v, _mm256_load_ps(a)));
        }
}

/* Scores of keys 8b .. 8b+7 (fewer at the end: none past pos is read) for every head.
 * (Functions of their own, not code in the OpenMP region: the region is outlined into a
 * function without the AVX2 target, which must not pass vectors around.) */
AVX2 static void decode_scores(float *scores, const float *q, const float *kc, int b, int pos,
                               int T, int NH, int hs, float div) {
    const int C = NH * hs, t = 8 * b, m = pos + 1 - t < 8 ? pos + 1 - t : 8;
    const __m256 vdiv = _mm256_set1_ps(div);
    for (int h = 0; h < NH; h++) {
        const float *qh = q + (size_t)h * hs, *kb = kc + (size_t)t * C + (size_t)h * hs;
        float *sc = scores + (size_t)h * T + t;
        if (t + AD_PF + 8 <= pos + 1) /* this head's slice of rows t+8 .. t+15 */
            for (int k = 0; k < 8; k++)
                for (int o = 0; o < hs; o += 16)
                    _mm_prefetch((const char *)(kb + (size_t)(AD_PF + k) * C + o), _MM_HINT_T0);
        if (m == 8) {
            _mm256_storeu_ps(sc, _mm256_div_ps(dot8(qh, kb, (size_t)C, hs), vdiv));
        } else {
            _mm256_maskstore_ps(sc, lanes_below(m),
                                _mm256_div_ps(dot8_partial(qh, kb, (size_t)C, hs, m), vdiv));
        }
    }
}

/* The outputs of the 8-column groups g0..g1-1, AD_COLS columns per pass over the rows. */
AVX2 static void decode_columns(float *out, const float *pattern, const float *vc, int g0, int g1,
                                int pos, int C, int hs, int T) {
    float acc[AD_COLS] __attribute__((aligned(32)));
    for (int ga = g0; ga < g1; ga += AD_COLS / 8) {
        const int gb = g1 - ga < AD_COLS / 8 ? g1 : ga + AD_COLS / 8;
        memset(acc, 0, sizeof(float) * 8 * (size_t)(gb - ga));
        decode_values(acc, pattern, vc, 0, pos + 1, ga, gb, C, hs, T);
        memcpy(out + 8 * ga, acc, sizeof(float) * 8 * (size_t)(gb - ga));
    }
}

static void attention_decode(float *out, float *scores, float *pattern, const float *q,
                             const float *kc, const float *vc, int pos, int T, int NH, int hs,
                             float div) {
    const int nkb = (pos + 1 + 7) / 8, ng = NH * hs / 8;
    OMP(omp parallel if((double)NH * T * hs > KERN_PAR_MIN))
    {
        OMP(omp for schedule(static))
        for (int b = 0; b < nkb; b++) decode_scores(scores, q, kc, b, pos, T, NH, hs, div);
        OMP(omp for schedule(static))
        for (int h = 0; h < NH; h++)
            softmax_row_avx2(scores + (size_t)h * T, pattern + (size_t)h * T, pos, T);
#ifdef _OPENMP
        const int nt = omp_get_num_threads(), me = omp_get_thread_num();
#else
        const int nt = 1, me = 0;
#endif
        /* this thread's columns: a contiguous range of 8-column groups */
        decode_columns(out, pattern, vc, (int)((long)ng * me / nt), (int)((long)ng * (me + 1) / nt),
                       pos, NH * hs, hs, T);
    }
}

/* kT (C rows of ldk ≥ T) = kc (T, C) transposed: row h·hs + d holds dimension d of
 * head h for every key, then zeros up to ldk (a multiple of 16: whole vectors). In tiles
 * through registers, so that both sides are read and written 32 or 64 bytes at a time:
 * 8 × 8 here (TRANSPOSE8), 16 × 16 at AVX-512 (transpose_tile16); the last rows one
 * float at a time (transpose_keys). */
enum { KT_PAD = 16 };
/* Rows i0 .. i0+7 of kT, keys t0 .. t0+7 (those at or past T: zeros). */
AVX2_INLINE void transpose_tile8(float *kT, const float *kc, int T, int ldk, int C, int i0,
                                 int t0) {
    __m256 r[8];
    for (int j = 0; j < 8; j++)
        r[j] = t0 + j < T ? _mm256_loadu_ps(kc + (size_t)(t0 + j) * C + i0) : _mm256_setzero_ps();
    TRANSPOSE8(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7])
    for (int j = 0; j < 8; j++) _mm256_storeu_ps(kT + (size_t)(i0 + j) * ldk + t0, r[j]);
}
AVX2 static void transpose_rows8(float *kT, const float *kc, int T, int ldk, int C, int i0) {
    for (int t0 = 0; t0 < ldk; t0 += 8) transpose_tile8(kT, kc, T, ldk, C, i0, t0);
}

/* ---- GELU ------------------------------------------------------------------
 * ops_tanhf (ops.c) in lanes: the same operations on the same constants, both branches
 * computed and blended, so every lane gets ops_tanhf's bits; then gelu_forward's line.
 * Written once for both widths (P, V, ATTR as for EXP_REDUCED; W the lanes); what the
 * widths do differently (AVX-512F has no float and/or, and blends by mask registers)
 * sits in five small helpers per width: abs_W, copysign_W (t ≥ +0), less_W (where
 * a < b: then, else otherwise), nan_W (x where x is NaN, else t; nan_8 sits with EXPF)
 * and pow2_W. */
AVX2_INLINE __m256 abs_8(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
AVX2_INLINE __m256 copysign_8(__m256 t, __m256 x) {
    return _mm256_or_ps(t, _mm256_and_ps(x, _mm256_set1_ps(-0.0f)));
}
AVX2_INLINE __m256 less_8(__m256 a, __m256 b, __m256 then, __m256 other) {
    return _mm256_blendv_ps(other, then, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
}
AVX2_INLINE __m256 pow2_8(__m256 n) { /* 2^n for whole n in [-126, 127] */
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
}

#define AVX512 __attribute__((target("avx2,fma,f16c,avx512f")))
#define AVX512_INLINE __attribute__((target("avx2,fma,f16c,avx512f"), always_inline)) static inline
#define SIGN16 _mm512_set1_epi32((int)0x80000000u)
AVX512_INLINE __m512 abs_16(__m512 x) {
    return _mm512_castsi512_ps(_mm512_andnot_epi32(SIGN16, _mm512_castps_si512(x)));
}
AVX512_INLINE __m512 copysign_16(__m512 t, __m512 x) {
    return _mm512_castsi512_ps(_mm512_or_epi32(
        _mm512_castps_si512(t), _mm512_and_epi32(_mm512_castps_si512(x), SIGN16)));
}
AVX512_INLINE __m512 less_16(__m512 a, __m512 b, __m512 then, __m512 other) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), other, then);
}
AVX512_INLINE __m512 nan_16(__m512 t, __m512 x) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), t, x);
}
AVX512_INLINE __m512 pow2_16(__m512 n) {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
}
#undef SIGN16
EXP_REDUCED(AVX512_INLINE, exp_reduced16, _mm512, __m512)

/* exp_8 and the softmax (SOFTMAX) 16 lanes wide: the same operations, so the same
 * bits, on twice the keys per instruction (the prefill attention blocks of the AVX-512
 * level). */
EXPF(AVX512_INLINE, 16, 512, _mm512, __m512)
AVX512_INLINE __m512 keep_greater_16(__m512 m, __m512 v) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, m, _CMP_GT_OQ), m, v);
}
AVX512_INLINE float max_lanes_16(__m512 m) {
    m = keep_greater_16(m, _mm512_shuffle_f32x4(m, m, 0x4E));
    m = keep_greater_16(m, _mm512_shuffle_f32x4(m, m, 0xB1));
    m = keep_greater_16(m, _mm512_permute_ps(m, 0x4E));
    return _mm512_cvtss_f32(keep_greater_16(m, _mm512_permute_ps(m, 0xB1)));
}
/* lanes_below as a mask register: lanes 0..n-1 set */
AVX512_INLINE __mmask16 lanes_below16(int n) { return (__mmask16)((1u << n) - 1); }
AVX512_INLINE __m512 first_or_16(__m512 x, int n, __m512 fill) {
    return _mm512_mask_blend_ps(lanes_below16(n), fill, x);
}
AVX512_INLINE __m512 load_first_16(const float *p, int n) {
    return _mm512_maskz_loadu_ps(lanes_below16(n), p);
}
AVX512_INLINE void store_first_16(float *p, int n, __m512 x) {
    _mm512_mask_storeu_ps(p, lanes_below16(n), x);
}
SOFTMAX(AVX512_INLINE, 16, _mm512, __m512)

/* r[0..15] (16 rows of 16) become the 16 columns, in place: lane l of r[j] goes to lane
 * j of r[l]. Pairs, fours, then 128-bit blocks of rows come together, as TRANSPOSE8 at
 * twice the width; 64 shuffles for 256 floats, where two TRANSPOSE8 take 48 for 128. */
AVX512_INLINE void transpose16(__m512 r[16]) {
    __m512 u[16];
#pragma GCC unroll 8
    for (int j = 0; j < 16; j += 2) {
        u[j] = _mm512_unpacklo_ps(r[j], r[j + 1]);
        u[j + 1] = _mm512_unpackhi_ps(r[j], r[j + 1]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < 16; j += 4) {
        r[j] = _mm512_shuffle_ps(u[j], u[j + 2], 0x44);
        r[j + 1] = _mm512_shuffle_ps(u[j], u[j + 2], 0xEE);
        r[j + 2] = _mm512_shuffle_ps(u[j + 1], u[j + 3], 0x44);
        r[j + 3] = _mm512_shuffle_ps(u[j + 1], u[j + 3], 0xEE);
    }
#pragma GCC unroll 2
    for (int q = 0; q < 16; q += 8)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            u[q + k] = _mm512_shuffle_f32x4(r[q + k], r[q + k + 4], 0x88);
            u[q + k + 4] = _mm512_shuffle_f32x4(r[q + k], r[q + k + 4], 0xDD);
        }
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        r[k] = _mm512_shuffle_f32x4(u[k], u[k + 8], 0x88);
        r[k + 8] = _mm512_shuffle_f32x4(u[k], u[k + 8], 0xDD);
    }
}

/* transpose_keys in tiles of 16 × 16 (transpose16): each side read and written a whole
 * 64-byte line at a time, where the tiles of 8 read half lines 3 KiB apart (NOTES.md). */
AVX512_INLINE void transpose_tile16(float *kT, const float *kc, int T, int ldk, int C, int i0,
                                    int t0) {
    __m512 r[16];
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++)
        r[j] = t0 + j < T ? _mm512_loadu_ps(kc + (size_t)(t0 + j) * C + i0) : _mm512_setzero_ps();
    transpose16(r);
#pragma GCC unroll 16
    for (int j = 0; j < 16; j++) _mm512_storeu_ps(kT + (size_t)(i0 + j) * ldk + t0, r[j]);
}
AVX512 static void transpose_rows16(float *kT, const float *kc, int T, int ldk, int C, int i0) {
    for (int t0 = 0; t0 < ldk; t0 += 16) transpose_tile16(kT, kc, T, ldk, C, i0, t0);
}
/* kT as the level's tiles make it (16 or 8 rows of kT at a time), the last C % 16 or
 * C % 8 rows one float at a time. */
static void transpose_keys(KernLevel lv, float *kT, const float *kc, int T, int ldk, int C) {
    const int w = lv == KERN_AVX512 ? 16 : 8, Cw = C - C % w;
    void (*const rows)(float *, const float *, int, int, int, int) =
        lv == KERN_AVX512 ? transpose_rows16 : transpose_rows8;
    OMP(omp parallel for schedule(static) if((double)T * C > KERN_PAR_MIN))
    for (int i0 = 0; i0 < Cw; i0 += w) rows(kT, kc, T, ldk, C, i0);
    for (int i = Cw; i < C; i++)
        for (int t = 0; t < ldk; t++)
            kT[(size_t)i * ldk + t] = t < T ? kc[(size_t)t * C + i] : 0.0f;
}

/* tanh_W: min(|x|, CLAMP) also turns NaN into CLAMP, which keeps the integer conversion
 * in pow2_W defined; NaN lanes are put back at the end, as ops_tanhf returns them early.
 * GELU: 0.5·x·(1 + tanh(k·(x + 0.044715·x·x·x))), left to right, in gelu_W (also the
 * matmul's store when it applies GELU); TAIL the rest of an array. */
#define TANH_GELU(ATTR, FN, GELU, W, P, V, TAIL)                                            \
    ATTR V tanh_##W(V x) {                                                                   \
        const V a = P##_min_ps(abs_##W(x), P##_set1_ps(OPS_TANH_CLAMP));                      \
        const V z = P##_mul_ps(a, a);                                                        \
        V p = P##_set1_ps(OPS_TANH_P5);                                                      \
        p = P##_fmadd_ps(p, z, P##_set1_ps(OPS_TANH_P4));                                    \
        p = P##_fmadd_ps(p, z, P##_set1_ps(OPS_TANH_P3));                                    \
        p = P##_fmadd_ps(p, z, P##_set1_ps(OPS_TANH_P2));                                    \
        p = P##_fmadd_ps(p, z, P##_set1_ps(OPS_TANH_P1));                                    \
        p = P##_fmadd_ps(p, z, P##_set1_ps(OPS_TANH_P0));                                    \
        const V small = P##_fmadd_ps(P##_mul_ps(a, z), p, a);                                \
        V n; /* exp_mid(2a): n is set by the first statement, read by the second */          \
        const V er = exp_reduced##W(P##_mul_ps(P##_set1_ps(2.0f), a), &n);                   \
        const V e = P##_mul_ps(er, pow2_##W(n));                                             \
        const V e1 = P##_add_ps(e, P##_set1_ps(1.0f));                                       \
        const V large = P##_sub_ps(P##_set1_ps(1.0f), P##_div_ps(P##_set1_ps(2.0f), e1));   \
        const V t = less_##W(a, P##_set1_ps(OPS_TANH_SMALL), small, large);                  \
        return nan_##W(copysign_##W(t, x), x);                                               \
    }                                                                                        \
    ATTR V gelu_##W(V x) {                                                                   \
        const double pi = 3.14159265358979323846; /* as ops.c */                             \
        const V k = P##_set1_ps((float)sqrt(2.0 / pi)), c = P##_set1_ps(0.044715f);          \
        const V cx2 = P##_mul_ps(P##_mul_ps(c, x), x);                                       \
        const V t = tanh_##W(P##_mul_ps(k, P##_fmadd_ps(cx2, x, x)));                        \
        return P##_mul_ps(P##_mul_ps(P##_set1_ps(0.5f), x), P##_add_ps(P##_set1_ps(1.0f), t)); \
    }                                                                                        \
    FN void GELU(float *out, const float *inp, size_t n) {                                   \
        size_t i = 0;                                                                        \
        for (; i + W <= n; i += W) P##_storeu_ps(out + i, gelu_##W(P##_loadu_ps(inp + i)));  \
        TAIL(out + i, inp + i, n - i);                                                       \
    }
TANH_GELU(AVX2_INLINE, AVX2 static, gelu_avx2, 8, _mm256, __m256, gelu_forward)
TANH_GELU(AVX512_INLINE, AVX512 static, gelu_512, 16, _mm512, __m512, gelu_avx2)

/* ---- the matmul and prefill attention at each vector width (kernels_simd.h) ---- */
#define KS_SUFFIX _avx2
#define KS_TARGET "avx2,fma,f16c"
#define KS_W 8
#define KS_V __m256
#define KS_TR 4 /* matmul tile: 4 rows × 3 vectors = 12 accumulators of 16 registers */
#define KS_AV 1 /* attention: 8 queries × 1 vector (8 keys, or 8 dimensions of the values) */
#define KS_NP 2 /* decode: 2 panels × 6 vectors = 12 accumulators */
#define KS_ZERO() _mm256_setzero_ps()
#define KS_LOAD(p) _mm256_loadu_ps(p)
#define KS_STORE(p, x) _mm256_storeu_ps(p, x)
#define KS_STORE_FIRST(p, n, x) store_first_8(p, n, x)
#define KS_SET1(x) _mm256_set1_ps(x)
#define KS_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define KS_ADD(a, b) _mm256_add_ps(a, b)
#define KS_DIV(a, b) _mm256_div_ps(a, b)
#define KS_FP16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p)))
#define KS_BF16(p) _mm256_castsi256_ps(_mm256_slli_epi32(                                   \
    _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p))), 16))
#define KS_GELU(x) gelu_8(x)
#define KS_SOFTMAX_ROWS8(sc, pa, pos0, T, mx) softmax_rows8_8(sc, pa, pos0, T, mx)
#define KS_KEEP_GREATER(m, v) keep_greater_8(m, v)
#define KS_FIRST_OR(x, n, fill) first_or_8(x, n, fill)
#include "kernels_simd.h"

#define KS_SUFFIX _512
#define KS_TARGET "avx2,fma,f16c,avx512f"
#define KS_W 16
#define KS_V __m512
#define KS_TR 8 /* matmul tile: 8 rows × 3 vectors = 24 accumulators of 32 registers */
#define KS_AV 2 /* attention: 8 queries × 2 vectors, 32 keys or 32 dimensions per pass */
#define KS_NP 4 /* decode: 4 panels × 3 vectors = 12 accumulators */
#define KS_ZERO() _mm512_setzero_ps()
#define KS_LOAD(p) _mm512_loadu_ps(p)
#define KS_STORE(p, x) _mm512_storeu_ps(p, x)
#define KS_STORE_FIRST(p, n, x) store_first_16(p, n, x)
#define KS_SET1(x) _mm512_set1_ps(x)
#define KS_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define KS_ADD(a, b) _mm512_add_ps(a, b)
#define KS_DIV(a, b) _mm512_div_ps(a, b)
#define KS_FP16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p)))
#define KS_BF16(p) _mm512_castsi512_ps(_mm512_slli_epi32(                                   \
    _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p))), 16))
#define KS_GELU(x) gelu_16(x)
#define KS_SOFTMAX_ROWS8(sc, pa, pos0, T, mx) softmax_rows8_16(sc, pa, pos0, T, mx)
#define KS_KEEP_GREATER(m, v) keep_greater_16(m, v)
#define KS_FIRST_OR(x, n, fill) first_or_16(x, n, fill)
#include "kernels_simd.h"

typedef void BlockFn(float *out, float *sc, float *pa, const float *q, const float *kT,
                     int ldk, const float *vc, int pos0, int T, int C, int hs, float div);

/* Keys a prefill task's own rows of scores and weights hold (kern_attention_out): 2 ×
 * AT_R rows of them, 64 KiB of stack. */
enum { AT_OWN_MAX = 1024 };

/* keep: the task writes its rows of scores and pattern, or (0, and T ≤ AT_OWN_MAX) rows of
 * its own on the stack, which stay in L1 and L2 between the scores and the sums. */
AVX2 static void attention_avx2(KernLevel lv, float *out, float *scores, float *pattern,
                                const float *q, const float *kc, const float *vc, int n, int p,
                                int NH, int hs, int keep) {
    const int C = NH * hs, T = p + n;
    const float div = (float)sqrt((double)hs); /* as ops.c */
    if (n == 1 && hs % 8 == 0) {
        attention_decode(out, scores, pattern, q, kc, vc, p, T, NH, hs, div);
        return;
    }
    const double work = (double)n * NH * ((double)p + n) * hs;
    (void)work; /* read by OpenMP only */
    /* the blocks read the keys transposed; without memory for that, one query at a time */
    float *kT = NULL;
    const int ldk = (T + KT_PAD - 1) / KT_PAD * KT_PAD;
    if (n >= AT_R && (kT = aligned_alloc(64, (size_t)C * ldk * sizeof(float))))
        transpose_keys(lv, kT, kc, T, ldk, C);
    BlockFn *const block = lv == KERN_AVX512 ? attention_block_512 : attention_block_avx2;
    /* tasks: a block of 8 queries of one head, or one leftover query of one head */
    const int nb = kT ? n / AT_R : 0, left = n - nb * AT_R, ntasks = (nb + left) * NH;
    const int own = !keep && T <= AT_OWN_MAX;
    OMP(omp parallel for schedule(dynamic, 1) if(work > KERN_PAR_MIN))
    for (int it = 0; it < ntasks; it++) {
        float own_sc[AT_R * AT_OWN_MAX], own_pa[AT_R * AT_OWN_MAX];
        const int h = it % NH, u = it / NH;
        const size_t hoff = (size_t)h * hs;
        const int i = u < nb ? u * AT_R : nb * AT_R + (u - nb);
        float *sc = own ? own_sc : scores + ((size_t)h * n + i) * T,
              *pa = own ? own_pa : pattern + ((size_t)h * n + i) * T;
        if (u < nb)
            block(out + (size_t)i * C + hoff, sc, pa, q + (size_t)i * C + hoff, kT + hoff * ldk,
                  ldk, vc + hoff, p + i, T, C, hs, div);
        else
            attention_one(out + (size_t)i * C + hoff, sc, pa, q + (size_t)i * C + hoff,
                          kc + hoff, vc + hoff, p + i, T, C, hs, div);
    }
    free(kT);
}

/* ---- the residual add: one add a value, in lanes --------------------------- */
AVX2 static void residual_avx2(float *out, const float *a, const float *b, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    residual_forward(out + i, a + i, b + i, n - i);
}

/* ---- layernorm -------------------------------------------------------------
 * layernorm_forward's operations, row for row: the mean and the variance in double,
 * summed in order of i, then the output 8 floats at a time. LN_R = 8 rows at once run
 * their sums in lanes (ln_stats8), a row left over alone (ln_stats). */
AVX2_INLINE void ln_stats(double *mean, double *rstd, const float *x, int C, float eps) {
    double s = 0.0, v = 0.0;
    for (int i = 0; i < C; i++) s += x[i];
    s /= C;
    for (int i = 0; i < C; i++) {
        const double d = x[i] - s;
        v = fma(d, d, v);
    }
    *mean = s;
    *rstd = 1.0 / sqrt(v / C + (double)eps);
}

/* Columns i..i+7 of 8 rows x (C apart) as 8 vectors, vector j = column i + j: lane r is
 * row r. Past the row's end (n < 8 columns left) the columns are zeros. */
AVX2_INLINE void ln_columns8(__m256 col[8], const float *x, int C, int i, int n) {
    __m256 r0, r1, r2, r3, r4, r5, r6, r7;
    if (n == 8) {
        r0 = _mm256_loadu_ps(x + i), r1 = _mm256_loadu_ps(x + C + i),
        r2 = _mm256_loadu_ps(x + 2 * C + i), r3 = _mm256_loadu_ps(x + 3 * C + i),
        r4 = _mm256_loadu_ps(x + 4 * C + i), r5 = _mm256_loadu_ps(x + 5 * C + i),
        r6 = _mm256_loadu_ps(x + 6 * C + i), r7 = _mm256_loadu_ps(x + 7 * C + i);
    } else {
        const __m256i m = lanes_below(n);
        r0 = _mm256_maskload_ps(x + i, m), r1 = _mm256_maskload_ps(x + C + i, m),
        r2 = _mm256_maskload_ps(x + 2 * C + i, m), r3 = _mm256_maskload_ps(x + 3 * C + i, m),
        r4 = _mm256_maskload_ps(x + 4 * C + i, m), r5 = _mm256_maskload_ps(x + 5 * C + i, m),
        r6 = _mm256_maskload_ps(x + 6 * C + i, m), r7 = _mm256_maskload_ps(x + 7 * C + i, m);
    }
    TRANSPOSE8(r0, r1, r2, r3, r4, r5, r6, r7)
    col[0] = r0, col[1] = r1, col[2] = r2, col[3] = r3;
    col[4] = r4, col[5] = r5, col[6] = r6, col[7] = r7;
}

/* ln_stats of 8 rows in lanes: rows 0-3 in lo, 4-7 in hi (doubles), each lane summing
 * its row in order of i, as ln_stats does. */
AVX2_INLINE void ln_stats8(double *mean, double *rstd, const float *x, int C, float eps) {
    __m256d slo = _mm256_setzero_pd(), shi = slo, vlo = slo, vhi = slo;
    __m256 col[8];
    for (int i = 0; i < C; i += 8) {
        const int n = C - i < 8 ? C - i : 8;
        ln_columns8(col, x, C, i, n);
        for (int j = 0; j < n; j++) {
            slo = _mm256_add_pd(slo, _mm256_cvtps_pd(_mm256_castps256_ps128(col[j])));
            shi = _mm256_add_pd(shi, _mm256_cvtps_pd(_mm256_extractf128_ps(col[j], 1)));
        }
    }
    const __m256d nC = _mm256_set1_pd((double)C);
    slo = _mm256_div_pd(slo, nC), shi = _mm256_div_pd(shi, nC);
    for (int i = 0; i < C; i += 8) {
        const int n = C - i < 8 ? C - i : 8;
        ln_columns8(col, x, C, i, n);
        for (int j = 0; j < n; j++) {
            const __m256d dlo = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(col[j])), slo),
                          dhi = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(col[j], 1)), shi);
            vlo = _mm256_fmadd_pd(dlo, dlo, vlo), vhi = _mm256_fmadd_pd(dhi, dhi, vhi);
        }
    }
    double v[8];
    _mm256_storeu_pd(mean, slo), _mm256_storeu_pd(mean + 4, shi);
    _mm256_storeu_pd(v, vlo), _mm256_storeu_pd(v + 4, vhi);
    for (int r = 0; r < 8; r++) rstd[r] = 1.0 / sqrt(v[r] / C + (double)eps);
}

/* Row y = layernorm of row x with its mean m and rstd rs: (x - m)·rs, then ·w + b in one
 * rounding, 8 floats at a time (at AVX-512 too: the pass waits on memory; NOTES.md). */
AVX2_INLINE void ln_row(float *y, const float *x, const float *w, const float *b, int C, float m,
                        float rs) {
    const __m256 vm = _mm256_set1_ps(m), vr = _mm256_set1_ps(rs);
    int i = 0;
    for (; i + 8 <= C; i += 8) {
        const __m256 xn = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vr);
        _mm256_storeu_ps(y + i,
                         _mm256_fmadd_ps(xn, _mm256_loadu_ps(w + i), _mm256_loadu_ps(b + i)));
    }
    for (; i < C; i++) y[i] = fmaf((x[i] - m) * rs, w[i], b[i]);
}

AVX2 static void layernorm_avx2(float *out, const float *inp, const float *w, const float *b,
                                int T, int C, float eps) {
    for (int t = 0; t < T; t += LN_R) {
        const int R = T - t < LN_R ? T - t : LN_R;
        double mean[LN_R], rstd[LN_R];
        if (R == LN_R) ln_stats8(mean, rstd, inp + (size_t)t * C, C, eps);
        else
            for (int r = 0; r < R; r++)
                ln_stats(mean + r, rstd + r, inp + (size_t)(t + r) * C, C, eps);
        for (int r = 0; r < R; r++)
            ln_row(out + (size_t)(t + r) * C, inp + (size_t)(t + r) * C, w, b, C, (float)mean[r],
                   (float)rstd[r]);
    }
}

/* The same at AVX-512: LN_R16 rows side by side, their sums in lanes of 8 doubles (rows
 * 0-7 and 8-15), columns read 16 at a time and turned by transpose16. Against ln_stats8
 * on 8 rows, each chain of dependent adds serves twice the rows, and a column costs
 * fewer shuffles (NOTES.md). */

/* Columns i..i+15 of 16 rows x (C apart) as 16 vectors, vector j = column i + j: lane r is
 * row r. Past the row's end (n < 16 columns left) the columns are zeros. */
AVX512_INLINE void ln_columns16(__m512 col[16], const float *x, int C, int i, int n) {
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++)
        col[r] = n == 16 ? _mm512_loadu_ps(x + (size_t)r * C + i)
                         : load_first_16(x + (size_t)r * C + i, n);
    transpose16(col);
}
/* Lanes 0-7 (rows 0-7) and 8-15 of a column as doubles. */
AVX512_INLINE __m512d lo_pd(__m512 c) { return _mm512_cvtps_pd(_mm512_castps512_ps256(c)); }
AVX512_INLINE __m512d hi_pd(__m512 c) {
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(c), 1)));
}

/* The sums of ln_stats16 over the columns col[0..n-1], in order: s += x (pass 0), or
 * v += (x - s)² with s the mean (pass 1). Inlined with n = 16 for the full blocks, so
 * that the columns stay in registers. */
AVX512_INLINE void ln_sums16(__m512d acc[2], const __m512 col[16], int n, int pass,
                             const __m512d s[2]) {
#pragma GCC unroll 16
    for (int j = 0; j < n; j++) {
        const __m512d lo = lo_pd(col[j]), hi = hi_pd(col[j]);
        if (pass == 0) {
            acc[0] = _mm512_add_pd(acc[0], lo);
            acc[1] = _mm512_add_pd(acc[1], hi);
        } else {
            const __m512d dlo = _mm512_sub_pd(lo, s[0]), dhi = _mm512_sub_pd(hi, s[1]);
            acc[0] = _mm512_fmadd_pd(dlo, dlo, acc[0]);
            acc[1] = _mm512_fmadd_pd(dhi, dhi, acc[1]);
        }
    }
}

/* ln_stats of 16 rows in lanes, each lane summing its row in order of i. */
AVX512_INLINE void ln_stats16(double *mean, double *rstd, const float *x, int C, float eps) {
    __m512d s[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()}, v[2] = {s[0], s[0]};
    __m512 col[16];
    const int C16 = C - C % 16;
    for (int pass = 0; pass < 2; pass++) {
        __m512d *acc = pass == 0 ? s : v;
        for (int i = 0; i < C16; i += 16) {
            ln_columns16(col, x, C, i, 16);
            ln_sums16(acc, col, 16, pass, s);
        }
        if (C16 < C) {
            ln_columns16(col, x, C, C16, C - C16);
            ln_sums16(acc, col, C - C16, pass, s);
        }
        if (pass == 0) {
            const __m512d nC = _mm512_set1_pd((double)C);
            s[0] = _mm512_div_pd(s[0], nC), s[1] = _mm512_div_pd(s[1], nC);
        }
    }
    double var[16];
    _mm512_storeu_pd(mean, s[0]), _mm512_storeu_pd(mean + 8, s[1]);
    _mm512_storeu_pd(var, v[0]), _mm512_storeu_pd(var + 8, v[1]);
    for (int r = 0; r < 16; r++) rstd[r] = 1.0 / sqrt(var[r] / C + (double)eps);
}

/* Rows in groups of LN_R16; fewer left over go through layernorm_avx2. */
AVX512 static void layernorm_512(float *out, const float *inp, const float *w, const float *b,
                                 int T, int C, float eps) {
    int t = 0;
    for (; t + LN_R16 <= T; t += LN_R16) {
        double mean[LN_R16], rstd[LN_R16];
        ln_stats16(mean, rstd, inp + (size_t)t * C, C, eps);
        for (int r = 0; r < LN_R16; r++)
            ln_row(out + (size_t)(t + r) * C, inp + (size_t)(t + r) * C, w, b, C, (float)mean[r],
                   (float)rstd[r]);
    }
    if (t < T) layernorm_avx2(out + (size_t)t * C, inp + (size_t)t * C, w, b, T - t, C, eps);
}
#endif /* KERN_HAVE_AVX2 */

/* ---- dispatch ------------------------------------------------------------ */

/* layernorm_512, layernorm_avx2 and layernorm_forward on blocks of their rows (16, LN_R)
 * split over threads. */
void kern_layernorm_forward(KernLevel lv, float *out, const float *inp, const float *w,
                            const float *b, int T, int C, float eps) {
    const int rb = KERN_HAVE_AVX2 && lv == KERN_AVX512 ? LN_R16 : LN_R, nb = (T + rb - 1) / rb;
    OMP(omp parallel for schedule(static) if((double)T * C > KERN_PAR_MIN))
    for (int j = 0; j < nb; j++) {
        const int t = rb * j, R = T - t < rb ? T - t : rb;
#if KERN_HAVE_AVX2
        if (lv >= KERN_AVX2) {
            (lv == KERN_AVX512 ? layernorm_512 : layernorm_avx2)(
                out + (size_t)t * C, inp + (size_t)t * C, w, b, R, C, eps);
            continue;
        }
#endif
        (void)lv;
        layernorm_forward(out + (size_t)t * C, inp + (size_t)t * C, w, b, R, C, eps);
    }
}

void kern_residual_forward(KernLevel lv, float *out, const float *a, const float *b, size_t n) {
    const size_t chunk = 16384; /* elements per task */
    const long nchunks = (long)((n + chunk - 1) / chunk);
    OMP(omp parallel for schedule(static) if(nchunks > 1))
    for (long j = 0; j < nchunks; j++) {
        const size_t i = (size_t)j * chunk, len = n - i < chunk ? n - i : chunk;
#if KERN_HAVE_AVX2
        if (lv >= KERN_AVX2) {
            residual_avx2(out + i, a + i, b + i, len);
            continue;
        }
#endif
        (void)lv;
        residual_forward(out + i, a + i, b + i, len);
    }
}

void kern_gelu_forward(KernLevel lv, float *out, const float *inp, size_t n) {
    const size_t chunk = 4096; /* elements per task */
    const long nchunks = (long)((n + chunk - 1) / chunk);
    OMP(omp parallel for schedule(static) if(nchunks > 1))
    for (long j = 0; j < nchunks; j++) {
        size_t a = (size_t)j * chunk, len = n - a < chunk ? n - a : chunk;
#if KERN_HAVE_AVX2
        if (lv == KERN_AVX512) {
            gelu_512(out + a, inp + a, len);
            continue;
        }
        if (lv >= KERN_AVX2) {
            gelu_avx2(out + a, inp + a, len);
            continue;
        }
#endif
        (void)lv;
        gelu_forward(out + a, inp + a, len);
    }
}

float kern_round_weight(float x, Dtype dt) {
    if (dt == DT_FP16) return fp16_to_fp32(fp32_to_fp16(x));
    if (dt == DT_BF16) return bf16_to_fp32(fp32_to_bf16(x));
    return x;
}

/* The one packing loop: element (c, o) of the (C,OC) matrix is w[c·sc + o·so] (w as it
 * is: sc = OC, so = 1; wᵀ of a (OC,C) w: sc = 1, so = C), stored into panels as dt. */
static void pack(void *panels, const float *w, size_t sc, size_t so, int C, int OC,
                 Dtype dt) {
    for (int o = 0; o < OC; o += KERN_PANEL) {
        const int pw = OC - o < KERN_PANEL ? OC - o : KERN_PANEL;
        for (int c = 0; c < C; c++)
            for (int k = 0; k < pw; k++) {
                const size_t i = (size_t)o * C + (size_t)c * pw + (size_t)k;
                const float x = w[(size_t)c * sc + (size_t)(o + k) * so];
                if (dt == DT_FP32) ((float *)panels)[i] = x;
                else if (dt == DT_FP16) ((uint16_t *)panels)[i] = fp32_to_fp16(x);
                else ((uint16_t *)panels)[i] = fp32_to_bf16(x);
            }
    }
}

void kern_pack_panels(float *panels, const float *w, int C, int OC) {
    pack(panels, w, (size_t)OC, 1, C, OC, DT_FP32);
}

void kern_pack_panels_t(float *panels, const float *w, int OC, int C) {
    pack(panels, w, 1, (size_t)C, C, OC, DT_FP32);
}

void kern_pack_panels_half(uint16_t *panels, const float *w, int C, int OC, Dtype dt) {
    pack(panels, w, (size_t)OC, 1, C, OC, dt);
}

void kern_pack_panels_t_half(uint16_t *panels, const float *w, int OC, int C, Dtype dt) {
    pack(panels, w, 1, (size_t)C, C, OC, dt);
}

/* ---- the panels of a model --------------------------------------------------------- */

/* Elements of each of the four block matrices in block order, padded to 64-byte lines of
 * es-byte elements, and of wteᵀ; their total in *total. -1 when the sums overflow. */
static int panel_sizes(int L, int C, int V, size_t es, size_t pad[KERN_MATS], size_t *lm,
                       size_t *total) {
    const size_t c = (size_t)C, l = (size_t)L, v = (size_t)V, line = 64 / es;
    const size_t most = SIZE_MAX / es / 64; /* room for the sums and the padding */
    if (v > most / c || 12 * c > most / c || l > most / (12 * c * c)) return -1;
    const size_t n[KERN_MATS] = {3 * c * c, c * c, 4 * c * c, 4 * c * c};
    size_t per = 0;
    for (int i = 0; i < KERN_MATS; i++) per += pad[i] = (n[i] + line - 1) / line * line;
    *lm = (v * c + line - 1) / line * line;
    if (per > (SIZE_MAX / es - *lm) / l) return -1;
    *total = l * per + *lm;
    return 0;
}

/* Pack into p's buffer (sized by panel_sizes) and point p at each matrix. */
static void fill_panels(KernPanels *p, int L, int C, int V, const float *wte,
                        const float *const *mats) {
    static const int in[KERN_MATS] = {1, 1, 1, 4}, out[KERN_MATS] = {3, 1, 4, 1};
    const size_t es = dtype_row_bytes(p->dtype, 1, 1);
    size_t pad[KERN_MATS], lm, total;
    (void)panel_sizes(L, C, V, es, pad, &lm, &total); /* checked when p was allocated */
    char *q = p->buf;
    pack(q, wte, 1, (size_t)C, C, V, p->dtype);
    p->wte = q;
    q += lm * es;
    for (int l = 0; l < L; l++)
        for (int k = 0; k < KERN_MATS; k++) {
            pack(q, mats[KERN_MATS * l + k], (size_t)(out[k] * C), 1, in[k] * C, out[k] * C,
                 p->dtype);
            p->h[l][k] = q;
            q += pad[k] * es;
        }
}

int kern_panels_pack(KernPanels *p, int L, int C, int V, const float *wte,
                     const float *const *mats, Dtype dt) {
    size_t pad[KERN_MATS], lm, total;
    const size_t es = dtype_row_bytes(dt, 1, 1);
    memset(p, 0, sizeof *p);
    if (!dtype_is_weight(dt) || panel_sizes(L, C, V, es, pad, &lm, &total)) return -1;
    p->dtype = dt;
    p->buf = bigbuf_calloc(total, es); /* decode streams them: huge pages */
    p->h = calloc((size_t)L, sizeof *p->h);
    if (!p->buf || !p->h) {
        kern_panels_free(p);
        return -1;
    }
    fill_panels(p, L, C, V, wte, mats);
    return 0;
}

void kern_panels_repack(KernPanels *p, int L, int C, int V, const float *wte,
                        const float *const *mats) {
    if (p->buf && p->dtype == DT_FP32) fill_panels(p, L, C, V, wte, mats);
}

void kern_panels_free(KernPanels *p) {
    free(p->buf);
    free((void *)p->h);
    memset(p, 0, sizeof *p);
}

/* 1 if the vector kernels can store out directly: panels to read, and every part whole
 * vectors (16 floats) or the only one; a residual add within one block of panel rows
 * (MM_KC), whose partial sums would otherwise wait where out's values are. */
static int stores_direct(KernLevel lv, const void *panels, const KernOut *out, int C, int OC) {
#if KERN_HAVE_AVX2
    return panels && lv >= KERN_AVX2 && !(out->cols % 16 && OC > out->cols) &&
           !(out->how == KERN_ADD && C > MM_KC);
#else
    (void)lv, (void)panels, (void)out, (void)C, (void)OC;
    return 0;
#endif
}

/* out (T,OC) = inp · w + bias as out says: the vector matmul on panels when the level has
 * one, else ops.c's matmul_forward, the one plain matmul. */
static void matmul_any(KernLevel lv, const KernOut *out, const float *inp, const float *w,
                       const void *panels, Dtype dt, const float *bias, int T, int C, int OC) {
#if KERN_HAVE_AVX2
    if (panels && lv >= KERN_AVX2) {
        if (lv == KERN_AVX512) matmul_run_512(dt, out, inp, panels, bias, T, C, OC);
        else matmul_run_avx2(dt, out, inp, panels, bias, T, C, OC);
        return;
    }
#endif
    (void)lv, (void)panels, (void)dt;
    matmul_forward(out->p[0], inp, w, bias, T, C, OC);
}

int kern_matmul_into(KernLevel lv, KernOut out, const float *inp, const float *w,
                     const void *panels, Dtype dt, const float *bias, int T, int C, int OC) {
    if (dt != DT_FP32 && !(panels && lv >= KERN_AVX2)) panels = NULL; /* halves: panels only */
    const int plain_one = !(panels && lv >= KERN_AVX2) && out.how == KERN_SET && OC == out.cols &&
                          out.ld == (size_t)OC;
    if (stores_direct(lv, panels, &out, C, OC) || plain_one) {
        matmul_any(lv, &out, inp, w, panels, dt, bias, T, C, OC);
        return 0;
    }
    /* the outputs into one buffer, then each stored as out says (kput) */
    const KernOut one = {{malloc((size_t)T * OC * sizeof(float))}, OC, (size_t)OC, KERN_SET};
    if (!one.p[0]) return -1;
    matmul_any(lv, &one, inp, w, panels, dt, bias, T, C, OC);
    for (int t = 0; t < T; t++)
        for (int o = 0; o < OC; o++) kput(&out, (size_t)t, o, *kout(&one, (size_t)t, o));
    free(one.p[0]);
    return 0;
}

void kern_matmul_forward(KernLevel lv, float *out, const float *inp, const float *w,
                         const float *panels, const float *bias, int T, int C, int OC) {
    const KernOut o = {{out}, OC, (size_t)OC, KERN_SET};
    matmul_any(lv, &o, inp, w, panels, DT_FP32, bias, T, C, OC);
}

void kern_matmul_transposed_forward(KernLevel lv, float *out, const float *inp,
                                    const float *w, const float *panels, int T, int C, int OC) {
    /* its sums are those of a matmul by wᵀ without bias: with wᵀ in panels, it is one */
    const KernOut o = {{out}, OC, (size_t)OC, KERN_SET};
    if (panels && lv >= KERN_AVX2) matmul_any(lv, &o, inp, NULL, panels, DT_FP32, NULL, T, C, OC);
    else matmul_transposed_forward(out, inp, w, T, C, OC);
}

void kern_matmul_half_forward(KernLevel lv, float *out, const float *inp, const float *w,
                              const uint16_t *panels, Dtype dt, const float *bias, int T,
                              int C, int OC) {
    const KernOut o = {{out}, OC, (size_t)OC, KERN_SET};
    if (dt == DT_FP32) panels = NULL;
    matmul_any(lv, &o, inp, w, panels, dt, bias, T, C, OC);
}

void kern_matmul_transposed_half_forward(KernLevel lv, float *out, const float *inp,
                                         const float *w, const uint16_t *panels, Dtype dt,
                                         int T, int C, int OC) {
    const KernOut o = {{out}, OC, (size_t)OC, KERN_SET};
    if (dt != DT_FP32 && panels && lv >= KERN_AVX2)
        matmul_any(lv, &o, inp, NULL, panels, dt, NULL, T, C, OC);
    else matmul_transposed_forward(out, inp, w, T, C, OC);
}

static void attention_kern(KernLevel lv, float *out, float *scores, float *pattern,
                           const float *q, const float *kc, const float *vc, int n, int p,
                           int NH, int hs, int keep) {
#if KERN_HAVE_AVX2
    if (lv >= KERN_AVX2) {
        attention_avx2(lv, out, scores, pattern, q, kc, vc, n, p, NH, hs, keep);
        return;
    }
#endif
    (void)lv;
    (void)keep;
    attention_forward(out, scores, pattern, q, kc, vc, n, p, NH, hs);
}

void kern_attention_forward(KernLevel lv, float *out, float *scores, float *pattern,
                            const float *q, const float *kc, const float *vc,
                            int n, int p, int NH, int hs) {
    attention_kern(lv, out, scores, pattern, q, kc, vc, n, p, NH, hs, 1);
}

void kern_attention_out(KernLevel lv, float *out, float *scores, float *pattern,
                        const float *q, const float *kc, const float *vc,
                        int n, int p, int NH, int hs) {
    attention_kern(lv, out, scores, pattern, q, kc, vc, n, p, NH, hs, 0);
}

/* ---- one level's elementwise kernels with ops.c's signatures -------------------------- */

#define LEVEL_OPS(suffix, lv)                                                                 \
    static void layernorm_##suffix(float *out, const float *inp, const float *w,              \
                                   const float *b, int T, int C, float eps) {                 \
        kern_layernorm_forward(lv, out, inp, w, b, T, C, eps);                                \
    }                                                                                         \
    static void residual_##suffix(float *out, const float *a, const float *b, size_t n) {     \
        kern_residual_forward(lv, out, a, b, n);                                              \
    }                                                                                         \
    static void gelu_##suffix(float *out, const float *inp, size_t n) {                       \
        kern_gelu_forward(lv, out, inp, n);                                                   \
    }
LEVEL_OPS(lv_avx2, KERN_AVX2)
LEVEL_OPS(lv_avx512, KERN_AVX512)

const KernOps *kern_ops(KernLevel lv) {
    static const KernOps ops[KERN_LEVEL_COUNT] = {
        {layernorm_forward, residual_forward, gelu_forward},
        {layernorm_lv_avx2, residual_lv_avx2, gelu_lv_avx2},
        {layernorm_lv_avx512, residual_lv_avx512, gelu_lv_avx512},
    };
    return &ops[(unsigned)lv < KERN_LEVEL_COUNT ? lv : KERN_PLAIN];
}
