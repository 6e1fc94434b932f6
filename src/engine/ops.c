/* ops.c — the plain kernels. Written to be read (src/engine/README.md, "Read the engine"); what runs on
 * an AVX2 CPU is each one's twin in kernels.c, named above it, tested equal with memcmp.
 *
 * Every multiply-add is fmaf(a, b, c) = a·b + c rounded once, as the CPU's fused
 * multiply-add instruction computes it: half the roundings of a·b then + c, and the
 * operation kernels.c's vector code uses, so both give the same bits. On a CPU without
 * FMA, libm's fmaf computes the same value in software (slowly). */
#include "ops.h"

#include <math.h>
#include <string.h>

/* fast twins: layernorm_avx2, layernorm_512 (kernels.c, via kern_layernorm_forward) */
void layernorm_forward(float *out, const float *inp, const float *w, const float *b,
                       int T, int C, float eps) {
    for (int t = 0; t < T; t++) {
        const float *x = inp + (size_t)t * C;
        float *y = out + (size_t)t * C;
        /* mean and variance in double: torch's float32 reductions are accurate to
         * about an ulp, a naive float sum is not */
        double mean = 0.0, var = 0.0;
        for (int i = 0; i < C; i++) mean += x[i];
        mean /= C;
        for (int i = 0; i < C; i++) {
            double d = x[i] - mean;
            var = fma(d, d, var);
        }
        var /= C;
        float m = (float)mean;
        float rstd = (float)(1.0 / sqrt(var + (double)eps));
        for (int i = 0; i < C; i++) y[i] = fmaf((x[i] - m) * rstd, w[i], b[i]);
    }
}

/* fast twin: matmul_run on panel_avx2 / panel_avx512 (kernels.c, via kern_matmul_forward) */
void matmul_forward(float *out, const float *inp, const float *w, const float *bias,
                    int T, int C, int OC) {
    for (int t = 0; t < T; t++) {
        const float *x = inp + (size_t)t * C;
        float *y = out + (size_t)t * OC;
        memset(y, 0, (size_t)OC * sizeof(float));
        /* walk W row by row: the inner loop runs over contiguous output columns */
        for (int c = 0; c < C; c++) {
            float a = x[c];
            const float *wr = w + (size_t)c * OC;
            for (int o = 0; o < OC; o++) y[o] = fmaf(a, wr[o], y[o]);
        }
        if (bias)
            for (int o = 0; o < OC; o++) y[o] += bias[o];
    }
}

/* fast twin: matmul_run on wte's panels (kernels.c, via kern_matmul_transposed_forward) */
void matmul_transposed_forward(float *out, const float *inp, const float *w,
                               int T, int C, int OC) {
    for (int t = 0; t < T; t++) {
        const float *x = inp + (size_t)t * C;
        for (int o = 0; o < OC; o++) {
            const float *wr = w + (size_t)o * C;
            float s = 0.0f;
            for (int c = 0; c < C; c++) s = fmaf(x[c], wr[c], s);
            out[(size_t)t * OC + o] = s;
        }
    }
}

/* The one exp core, shared by ops_expf and exp_mid (and repeated lane by lane by the
 * vector code in kernels.c): y = n·ln 2 + r with n = round(y·log2 e) an integer and
 * |r| ≤ ln 2 / 2 (two-part ln 2), then e^r = 1 + r + r²·(1/2 + r/6 + … + r⁵/5040).
 * Returns e^r and sets *n; the caller scales by 2^n. */
static float exp_reduced(float y, float *n_out) {
    const float n = fmaf(y, OPS_EXP_LOG2E, OPS_EXP_ROUND) - OPS_EXP_ROUND;
    const float r = fmaf(-n, OPS_EXP_LN2_LO, fmaf(-n, OPS_EXP_LN2_HI, y));
    float q = 1.0f / 5040.0f;
    q = fmaf(q, r, 1.0f / 720.0f);
    q = fmaf(q, r, 1.0f / 120.0f);
    q = fmaf(q, r, 1.0f / 24.0f);
    q = fmaf(q, r, 1.0f / 6.0f);
    q = fmaf(q, r, 0.5f);
    *n_out = n;
    return 1.0f + fmaf(r * r, q, r);
}

/* The float 2^k, for k in [-126, 127]. */
static float two_to(int32_t k) {
    const uint32_t bits = (uint32_t)(k + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* e^y for y in [1.25, 20], the only range ops_tanhf needs. */
static float exp_mid(float y) {
    float n;
    const float er = exp_reduced(y, &n);
    return er * two_to((int32_t)n);
}

float ops_expf(float x) {
    if (x != x) return x; /* NaN */
    if (x < OPS_EXPF_LOW) x = OPS_EXPF_LOW; /* e^x rounds to 0 below: so does this */
    float n;
    const float er = exp_reduced(x, &n);
    /* · 2^n in two exact steps, 2^(n+64) then 2^-64, so that results below 2^-126
     * come out as subnormals (rounded once, by the second multiply) */
    return er * two_to((int32_t)n + 64) * OPS_EXPF_TWO_M64;
}

float ops_tanhf(float x) {
    if (x != x) return x; /* NaN */
    float a = fabsf(x);
    if (a > OPS_TANH_CLAMP) a = OPS_TANH_CLAMP;
    const float z = a * a;
    float p = OPS_TANH_P5;
    p = fmaf(p, z, OPS_TANH_P4);
    p = fmaf(p, z, OPS_TANH_P3);
    p = fmaf(p, z, OPS_TANH_P2);
    p = fmaf(p, z, OPS_TANH_P1);
    p = fmaf(p, z, OPS_TANH_P0);
    /* both branches are computed and one is kept, as the vector code must do */
    const float small = fmaf(a * z, p, a);
    const float large = 1.0f - 2.0f / (exp_mid(2.0f * a) + 1.0f);
    return copysignf(a < OPS_TANH_SMALL ? small : large, x);
}

/* fast twin: gelu_avx2 (kernels.c, via kern_gelu_forward) */
void gelu_forward(float *out, const float *inp, size_t n) {
    const double pi = 3.14159265358979323846; /* math.pi */
    const float k = (float)sqrt(2.0 / pi);
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + ops_tanhf(k * fmaf(0.044715f * x * x, x, x)));
    }
}

void residual_forward(float *out, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

/* fast twin: softmax_row_avx2 (kernels.c) */
void softmax_causal_row(float *sc, float *pa, int pos, int T) {
    float maxv = -INFINITY;
    for (int t = 0; t <= pos; t++)
        if (sc[t] > maxv) maxv = sc[t];
    for (int t = pos + 1; t < T; t++) { /* the future: masked */
        sc[t] = -INFINITY;
        pa[t] = 0.0f;
    }
    float sum = 0.0f;
    for (int t = 0; t <= pos; t++) {
        pa[t] = ops_expf(sc[t] - maxv); /* minus the max: ≤ 0, so e^x ≤ 1 */
        sum += pa[t];
    }
    const float inv = 1.0f / sum;
    for (int t = 0; t <= pos; t++) pa[t] *= inv;
}

/* fast twin: attention_avx2 (kernels.c, via kern_attention_forward): attention_decode for
 * one query (a decode step), attention_block / attention_block5 for blocks of 8 (prefill) */
void attention_forward(float *out, float *scores, float *pattern,
                       const float *q, const float *kc, const float *vc,
                       int n, int p, int NH, int hs) {
    const int C = NH * hs, T = p + n;
    /* Hugging Face divides by a float32 tensor holding hs ** 0.5 (a double) */
    const float div = (float)sqrt((double)hs);
    for (int i = 0; i < n; i++) {
        const int pos = p + i; /* absolute position of this query */
        for (int h = 0; h < NH; h++) {
            const float *qi = q + (size_t)i * C + (size_t)h * hs;
            float *sc = scores + ((size_t)h * n + i) * T;
            float *pa = pattern + ((size_t)h * n + i) * T;
            /* scores over keys 0..pos only: the causal mask is the loop bound */
            for (int t = 0; t <= pos; t++) {
                const float *kt = kc + (size_t)t * C + (size_t)h * hs;
                float dot = 0.0f;
                for (int d = 0; d < hs; d++) dot = fmaf(qi[d], kt[d], dot);
                sc[t] = dot / div;
            }
            softmax_causal_row(sc, pa, pos, T);
            /* weighted sum of the values */
            float *oi = out + (size_t)i * C + (size_t)h * hs;
            for (int d = 0; d < hs; d++) oi[d] = 0.0f;
            for (int t = 0; t <= pos; t++) {
                const float *vt = vc + (size_t)t * C + (size_t)h * hs;
                const float w = pa[t];
                for (int d = 0; d < hs; d++) oi[d] = fmaf(w, vt[d], oi[d]);
            }
        }
    }
}

void attention_masked_forward(float *out, float *scores, float *pattern, const float *q,
                              const float *kc, const float *vc, const unsigned char *keep,
                              int stride, int n, int p, int NH, int hs) {
    const int C = NH * hs, Tt = p + n;
    const float div = (float)sqrt((double)hs); /* as attention_forward */
    for (int i = 0; i < n; i++) {
        const int pos = p + i;
        for (int h = 0; h < NH; h++) {
            const float *qi = q + (size_t)i * C + (size_t)h * hs;
            const unsigned char *kp = keep + (size_t)h * stride;
            float *sc = scores + ((size_t)h * n + i) * Tt;
            float *pa = pattern + ((size_t)h * n + i) * Tt;
            for (int t = 0; t <= pos; t++) {
                const float *kt = kc + (size_t)t * C + (size_t)h * hs;
                float dot = 0.0f;
                for (int d = 0; d < hs && kp[t]; d++) dot = fmaf(qi[d], kt[d], dot);
                sc[t] = kp[t] ? dot / div : -INFINITY; /* evicted: as if in the future */
            }
            softmax_causal_row(sc, pa, pos, Tt);
            float *oi = out + (size_t)i * C + (size_t)h * hs;
            for (int d = 0; d < hs; d++) oi[d] = 0.0f;
            for (int t = 0; t <= pos; t++) {
                if (!kp[t]) continue;
                const float *vt = vc + (size_t)t * C + (size_t)h * hs;
                for (int d = 0; d < hs; d++) oi[d] = fmaf(pa[t], vt[d], oi[d]);
            }
        }
    }
}

int attention_row_forward(float *out, float *scores, const float *q,
                          const float *const *kr, const float *const *vr,
                          const unsigned char *keep, int T, int NH, int hs) {
    const float div = (float)sqrt((double)hs); /* as attention_forward */
    int kept = 0;
    for (int t = 0; t < T; t++) kept += !keep || keep[t];
    if (kept == 0) return -1;
    for (int h = 0; h < NH; h++) {
        const size_t o = (size_t)h * hs;
        const float *qh = q + o;
        float maxv = -INFINITY;
        for (int t = 0; t < T; t++) {
            if (keep && !keep[t]) {
                scores[t] = -INFINITY; /* the mask */
                continue;
            }
            float dot = 0.0f;
            for (int d = 0; d < hs; d++) dot = fmaf(qh[d], kr[t][o + d], dot);
            scores[t] = dot / div;
            if (scores[t] > maxv) maxv = scores[t];
        }
        /* softmax in place; a masked slot's weight is exp(-inf) = 0: it is skipped */
        float sum = 0.0f;
        for (int t = 0; t < T; t++) {
            if (keep && !keep[t]) {
                scores[t] = 0.0f;
                continue;
            }
            scores[t] = ops_expf(scores[t] - maxv);
            sum += scores[t];
        }
        const float inv = 1.0f / sum;
        float *oh = out + o;
        for (int d = 0; d < hs; d++) oh[d] = 0.0f;
        for (int t = 0; t < T; t++) {
            if (keep && !keep[t]) continue;
            const float w = scores[t] * inv;
            for (int d = 0; d < hs; d++) oh[d] = fmaf(w, vr[t][o + d], oh[d]);
        }
    }
    return kept;
}
