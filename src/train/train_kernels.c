/* train_kernels.c — the fast backward kernels; see train_kernels.h for the contract.
 *
 * Why these give train_ops.c's bytes: a fused multiply-add rounds once, whether fmaf
 * computes it or a vector instruction, and every lane below is one output element that
 * sees the same fused multiply-adds in the same order as in the plain loop. Threads
 * split outputs (panels of columns, blocks of rows, heads), never a sum.
 */
#include "train_kernels.h"

#include <math.h>
#include <string.h>

#include "parallel.h"
#include "train_ops.h"


#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define TK_HAVE_X86 1
#include <immintrin.h>
#else
#define TK_HAVE_X86 0
#endif

/* Below this many multiply-adds a kernel runs on one thread (the result is the same). */
#define TK_PAR_MIN 65536.0

enum { TK_RB = 256,  /* rows of out per matmul task */
       TK_KB = 128,  /* rows of dweight per task */
       TK_NB = 8 * KERN_PANEL }; /* columns of dweight per task */

#if TK_HAVE_X86
/* ---- the vector code, twice (train_kernels_simd.h) ---- */
#define TK_SUFFIX _512
#define TK_TARGET "avx2,fma,avx512f"
#define TK_W 16
#define TK_V __m512
#define TK_MR 8     /* matmul tile: 8 rows × 3 vectors = 24 accumulators of 32 registers */
#define TK_NV 3
#define TK_MRQ 8    /* attention dq tile: 8 rows × 2 vectors */
#define TK_MRK 12   /* attention dk or dv tile: 12 rows × 2 vectors */
#define TK_DV 4     /* attention datt: 4 queries × 4 vectors of keys */
#define TK_KC 128   /* panel rows per L1 block: 128 × 48 floats = 24 KiB */
#define TK_TB 128   /* rows of T per dweight block, packed: 128 × (128 + 48) floats = 88 KiB */
#define TK_PF 4     /* attention rows fetched ahead */
#define TK_ZERO() _mm512_setzero_ps()
#define TK_LOAD(p) _mm512_loadu_ps(p)
#define TK_STORE(p, x) _mm512_storeu_ps(p, x)
#define TK_SET1(x) _mm512_set1_ps(x)
#define TK_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define TK_ADD(a, b) _mm512_add_ps(a, b)
#define TK_SUB(a, b) _mm512_sub_ps(a, b)
#define TK_MUL(a, b) _mm512_mul_ps(a, b)
#define TK_DIV(a, b) _mm512_div_ps(a, b)
#define TK_SQRT(a) _mm512_sqrt_ps(a)
#define TK_SEL_NZ(x, a, b) \
    _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NEQ_UQ), b, a)
#include "train_kernels_simd.h"
#undef TK_SUFFIX
#undef TK_TARGET
#undef TK_W
#undef TK_V
#undef TK_MR
#undef TK_NV
#undef TK_MRQ
#undef TK_MRK
#undef TK_DV
#undef TK_ZERO
#undef TK_LOAD
#undef TK_STORE
#undef TK_SET1
#undef TK_FMA
#undef TK_ADD
#undef TK_SUB
#undef TK_MUL
#undef TK_DIV
#undef TK_SQRT
#undef TK_SEL_NZ

#define TK_SUFFIX _avx2
#define TK_TARGET "avx2,fma"
#define TK_W 8
#define TK_V __m256
#define TK_MR 4     /* 4 rows × 3 vectors = 12 accumulators of 16 registers */
#define TK_NV 3
#define TK_MRQ 4
#define TK_MRK 6
#define TK_DV 2
#define TK_ZERO() _mm256_setzero_ps()
#define TK_LOAD(p) _mm256_loadu_ps(p)
#define TK_STORE(p, x) _mm256_storeu_ps(p, x)
#define TK_SET1(x) _mm256_set1_ps(x)
#define TK_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define TK_ADD(a, b) _mm256_add_ps(a, b)
#define TK_SUB(a, b) _mm256_sub_ps(a, b)
#define TK_MUL(a, b) _mm256_mul_ps(a, b)
#define TK_DIV(a, b) _mm256_div_ps(a, b)
#define TK_SQRT(a) _mm256_sqrt_ps(a)
#define TK_SEL_NZ(x, a, b) _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NEQ_UQ))
#include "train_kernels_simd.h"
#endif /* TK_HAVE_X86 */

/* ---- the matmuls ----------------------------------------------------------------- */

typedef void MmPanelFn(float *out, const float *a, const float *pan, int pw, int o0, int t0,
                       int t1, int K, int N);
typedef void TnBlockFn(float *dw, const float *a, const float *b, int k0, int k1, int n0, int n1,
                       int T, int K, int N);
typedef void ColsumFn(float *db, const float *d, int T, int N, int n0, int n1);

typedef struct {
    MmPanelFn *mm;
    TnBlockFn *tn;
    ColsumFn *colsum;
} MatmulFns;

/* The vector functions of lv, or 0 when it has none. */
static int matmul_fns(KernLevel lv, MatmulFns *f) {
#if TK_HAVE_X86
    if (lv == KERN_AVX512 && kern_supported(lv)) {
        *f = (MatmulFns){mm_panel_512, tn_block_512, colsum_512};
        return 1;
    }
    if (lv == KERN_AVX2 && kern_supported(lv)) {
        *f = (MatmulFns){mm_panel_avx2, tn_block_avx2, colsum_avx2};
        return 1;
    }
#endif
    (void)lv, (void)f;
    return 0;
}

/* out (T,N) = a (T,K) · W (K,N) with W in column panels: tasks of one panel and TK_RB rows. */
static void mm_run(const MatmulFns *f, float *out, const float *a, const float *panels, int T,
                   int K, int N) {
    const int npan = (N + KERN_PANEL - 1) / KERN_PANEL, nrb = (T + TK_RB - 1) / TK_RB;
    const double work = (double)T * K * N;
    (void)work; /* read by OpenMP only */
    OMP(omp parallel for schedule(static) if(work > TK_PAR_MIN))
    for (int it = 0; it < npan * nrb; it++) {
        const int j = it % npan, t0 = (it / npan) * TK_RB, t1 = t0 + TK_RB < T ? t0 + TK_RB : T;
        const int o0 = j * KERN_PANEL, pw = N - o0 < KERN_PANEL ? N - o0 : KERN_PANEL;
        f->mm(out, a, panels + (size_t)o0 * K, pw, o0, t0, t1, K, N);
    }
}

/* dw (K,N) += aᵀ · b over T rows: tasks of TK_NB columns and TK_KB rows of dw. */
static void tn_run(const MatmulFns *f, float *dw, const float *a, const float *b, int T, int K,
                   int N) {
    const int ncb = (N + TK_NB - 1) / TK_NB, nkb = (K + TK_KB - 1) / TK_KB;
    const double work = (double)T * K * N;
    (void)work;
    OMP(omp parallel for schedule(static) if(work > TK_PAR_MIN))
    for (int it = 0; it < ncb * nkb; it++) {
        const int n0 = (it % ncb) * TK_NB, k0 = (it / ncb) * TK_KB;
        f->tn(dw, a, b, k0, k0 + TK_KB < K ? k0 + TK_KB : K, n0, n0 + TK_NB < N ? n0 + TK_NB : N,
              T, K, N);
    }
}

static void colsum_run(const MatmulFns *f, float *db, const float *d, int T, int N) {
    const int nb = (N + 63) / 64;
    OMP(omp parallel for schedule(static) if((double)T * N > TK_PAR_MIN))
    for (int j = 0; j < nb; j++) f->colsum(db, d, T, N, 64 * j, 64 * j + 64 < N ? 64 * j + 64 : N);
}

void tk_matmul_backward(KernLevel lv, float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *wt_panels, int T,
                        int C, int OC) {
    MatmulFns f;
    if (!wt_panels || !matmul_fns(lv, &f)) {
        matmul_backward(dinp, dweight, dbias, dout, inp, weight, T, C, OC);
        return;
    }
    mm_run(&f, dinp, dout, wt_panels, T, OC, C); /* dinp (T,C) = dout (T,OC) · Wᵀ (OC,C) */
    tn_run(&f, dweight, inp, dout, T, C, OC);    /* dweight (C,OC) += inpᵀ · dout */
    if (dbias) colsum_run(&f, dbias, dout, T, OC);
}

void tk_matmul_transposed_backward(KernLevel lv, float *dinp, float *dweight, const float *dout,
                                   const float *inp, const float *weight, const float *w_panels,
                                   int T, int C, int OC) {
    MatmulFns f;
    if (!w_panels || !matmul_fns(lv, &f)) {
        matmul_transposed_backward(dinp, dweight, dout, inp, weight, T, C, OC);
        return;
    }
    mm_run(&f, dinp, dout, w_panels, T, OC, C); /* dinp (T,C) = dout (T,OC) · W (OC,C) */
    tn_run(&f, dweight, dout, inp, T, OC, C);   /* dweight (OC,C) += doutᵀ · inp */
}

/* ---- attention ----------------------------------------------------------------------- */

size_t tk_attention_scratch(int T, int hs) {
    const size_t Tp = ((size_t)T + TRAIN_LANES - 1) / TRAIN_LANES * TRAIN_LANES;
    return ((size_t)hs + 4) * Tp;
}

typedef void AttHeadFn(float *dq, float *dk, float *dv, float *dpre, const float *dout,
                       const float *q, const float *k, const float *v, const float *att, int T,
                       int C, int hs, float s, float *scratch);

void tk_attention_backward(KernLevel lv, float *dq, float *dk, float *dv, float *dpre,
                           const float *dout, const float *q, const float *k, const float *v,
                           const float *att, int B, int T, int NH, int hs, float *scratch,
                           int nscratch) {
    AttHeadFn *head = NULL;
#if TK_HAVE_X86
    if (lv == KERN_AVX512 && kern_supported(lv) && hs % 32 == 0) head = att_head_512;
    else if (lv >= KERN_AVX2 && kern_supported(KERN_AVX2) && hs % 16 == 0) head = att_head_avx2;
#endif
    if (!head || !scratch || nscratch < 1) {
        attention_backward(dq, dk, dv, dpre, dout, q, k, v, att, B, T, NH, hs);
        return;
    }
    const int C = NH * hs;
    const float s = (float)sqrt((double)hs); /* the forward's divisor */
    const size_t per = tk_attention_scratch(T, hs);
    const double work = (double)B * NH * T * T * hs;
    (void)work, (void)per;
    OMP(omp parallel for schedule(dynamic, 1) num_threads(nscratch) if(work > TK_PAR_MIN))
    for (int it = 0; it < B * NH; it++) {
#ifdef _OPENMP
        float *mine = scratch + per * (size_t)omp_get_thread_num();
#else
        float *mine = scratch;
#endif
        const int b = it / NH, h = it % NH;
        const size_t x0 = (size_t)b * T * C + (size_t)h * hs, a0 = (size_t)it * T * T;
        head(dq + x0, dk + x0, dv + x0, dpre + a0, dout + x0, q + x0, k + x0, v + x0, att + a0, T,
             C, hs, s, mine);
    }
}

/* ---- row-wise ops: disjoint rows, channels or chunks ------------------------------------ */

typedef void LnParamFn(float *dweight, float *dbias, const float *dout, const float *inp,
                       const float *mean, const float *rstd, int T, int C, int c0, int c1);
typedef void GeluBwdFn(float *dinp, const float *inp, const float *out, const float *dout,
                       size_t n);
typedef void AdamwFn(float *p, const float *g, float *m, float *v, size_t n, float lr,
                     float beta1, float beta2, float eps, float wd, float bc1, float bc2);

typedef struct {
    LnParamFn *ln_param;
    GeluBwdFn *gelu;
    AdamwFn *adamw;
} RowFns;

/* The functions of lv: vectors where the CPU has them, else train_ops.c's loops. */
static RowFns row_fns(KernLevel lv) {
#if TK_HAVE_X86
    if (lv == KERN_AVX512 && kern_supported(lv))
        return (RowFns){ln_param_bwd_512, gelu_bwd_512, adamw_512};
    if (lv == KERN_AVX2 && kern_supported(lv))
        return (RowFns){ln_param_bwd_avx2, gelu_bwd_avx2, adamw_avx2};
#endif
    (void)lv;
    return (RowFns){layernorm_param_backward, gelu_backward, adamw_update};
}

void tk_layernorm_backward(KernLevel lv, float *dinp, float *dweight, float *dbias,
                           const float *dout, const float *inp, const float *weight,
                           const float *mean, const float *rstd, int T, int C) {
    LnParamFn *param = row_fns(lv).ln_param;
    const int par = (double)T * C > TK_PAR_MIN;
    (void)par;
    OMP(omp parallel for schedule(static) if(par))
    for (int t = 0; t < T; t++)
        layernorm_backward(dinp + (size_t)t * C, NULL, NULL, dout + (size_t)t * C,
                           inp + (size_t)t * C, weight, mean + t, rstd + t, 1, C);
    const int nb = (C + 63) / 64;
    OMP(omp parallel for schedule(static) if(par))
    for (int j = 0; j < nb; j++)
        param(dweight, dbias, dout, inp, mean, rstd, T, C, 64 * j, 64 * j + 64 < C ? 64 * j + 64 : C);
}

void tk_layernorm_stats(float *mean, float *rstd, const float *inp, int T, int C, float eps) {
    OMP(omp parallel for schedule(static) if((double)T * C > TK_PAR_MIN))
    for (int t = 0; t < T; t++) layernorm_stats(mean + t, rstd + t, inp + (size_t)t * C, 1, C, eps);
}

enum { TK_CHUNK = 16384 }; /* elements per task of the elementwise ops */

void tk_gelu_backward(KernLevel lv, float *dinp, const float *inp, const float *out,
                      const float *dout, size_t n) {
    GeluBwdFn *gelu = row_fns(lv).gelu;
    const long nc = (long)((n + TK_CHUNK - 1) / TK_CHUNK);
    OMP(omp parallel for schedule(static) if(nc > 1))
    for (long j = 0; j < nc; j++) {
        const size_t a = (size_t)j * TK_CHUNK, len = n - a < TK_CHUNK ? n - a : TK_CHUNK;
        gelu(dinp + a, inp + a, out + a, dout + a, len);
    }
}

void tk_crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets,
                             int T, int V) {
    OMP(omp parallel for schedule(static) if((double)T * V > TK_PAR_MIN))
    for (int t = 0; t < T; t++)
        crossentropy_forward(losses + t, probs + (size_t)t * V, logits + (size_t)t * V, targets + t,
                             1, V);
}

void tk_crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss,
                              int T, int V) {
    OMP(omp parallel for schedule(static) if((double)T * V > TK_PAR_MIN))
    for (int t = 0; t < T; t++)
        crossentropy_backward(dlogits + (size_t)t * V, probs + (size_t)t * V, targets + t, dloss, 1, V);
}

void tk_adamw_update(KernLevel lv, float *p, const float *g, float *m, float *v, size_t n,
                     float lr, float beta1, float beta2, float eps, float wd, float bc1, float bc2) {
    AdamwFn *adamw = row_fns(lv).adamw;
    const long nc = (long)((n + TK_CHUNK - 1) / TK_CHUNK);
    OMP(omp parallel for schedule(static) if(nc > 1))
    for (long j = 0; j < nc; j++) {
        const size_t a = (size_t)j * TK_CHUNK, len = n - a < TK_CHUNK ? n - a : TK_CHUNK;
        adamw(p + a, g + a, m + a, v + a, len, lr, beta1, beta2, eps, wd, bc1, bc2);
    }
}
