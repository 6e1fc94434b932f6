/* train_ops.c — the plain backward loops; see train_ops.h for the contract. */
#include "train_ops.h"

#include <math.h>
#include <string.h>

#include "ops.h"

/* ---- embeddings ---------------------------------------------------------------- */

void encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe,
                     int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const size_t row = (size_t)b * T + t;
            residual_forward(out + row * C, wte + (size_t)tokens[row] * C, wpe + (size_t)t * C,
                             (size_t)C);
        }
}

void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *tokens,
                      int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const size_t row = (size_t)b * T + t;
            const float *d = dout + row * C;
            float *dw = dwte + (size_t)tokens[row] * C, *dp = dwpe + (size_t)t * C;
            for (int i = 0; i < C; i++) {
                dw[i] += d[i];
                dp[i] += d[i];
            }
        }
}

/* ---- layernorm ------------------------------------------------------------------- */

void layernorm_stats(float *mean, float *rstd, const float *inp, int T, int C, float eps) {
    for (int t = 0; t < T; t++) {
        const float *x = inp + (size_t)t * C;
        double m = 0.0, var = 0.0;
        for (int i = 0; i < C; i++) m += x[i];
        m /= C;
        for (int i = 0; i < C; i++) {
            double d = x[i] - m;
            var += d * d;
        }
        var /= C;
        mean[t] = (float)m;
        rstd[t] = (float)(1.0 / sqrt(var + (double)eps));
    }
}

/* With n = (x − mean)·rstd and dn = w·dout, the input gradient of one row is
 *   dx = (dn − mean(dn) − n·mean(dn·n))·rstd
 * (llm.c's layernorm_backward); both means are summed in double. */
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean,
                        const float *rstd, int T, int C) {
    for (int t = 0; t < T; t++) {
        const float *x = inp + (size_t)t * C, *dy = dout + (size_t)t * C;
        float *dx = dinp + (size_t)t * C;
        const float m = mean[t], r = rstd[t];
        double sum_dn = 0.0, sum_dn_n = 0.0;
        for (int i = 0; i < C; i++) {
            const float n = (x[i] - m) * r, dn = weight[i] * dy[i];
            sum_dn += dn;
            sum_dn_n += (double)dn * n;
        }
        const float a = (float)(sum_dn / C), b = (float)(sum_dn_n / C);
        for (int i = 0; i < C; i++) {
            const float n = (x[i] - m) * r, dn = weight[i] * dy[i];
            dx[i] += (dn - a - n * b) * r;
        }
    }
    if (dweight && dbias) layernorm_param_backward(dweight, dbias, dout, inp, mean, rstd, T, C, 0, C);
}

void layernorm_param_backward(float *dweight, float *dbias, const float *dout, const float *inp,
                              const float *mean, const float *rstd, int T, int C, int c0, int c1) {
    for (int t = 0; t < T; t++) {
        const float *x = inp + (size_t)t * C, *dy = dout + (size_t)t * C;
        const float m = mean[t], r = rstd[t];
        for (int i = c0; i < c1; i++) {
            dweight[i] += (x[i] - m) * r * dy[i];
            dbias[i] += dy[i];
        }
    }
}

/* ---- matmuls ------------------------------------------------------------------------ */

void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int T, int C, int OC) {
    for (int t = 0; t < T; t++) {
        const float *dy = dout + (size_t)t * OC;
        for (int c = 0; c < C; c++) {
            const float *wr = weight + (size_t)c * OC;
            float s = 0.0f;
            for (int o = 0; o < OC; o++) s = fmaf(dy[o], wr[o], s);
            dinp[(size_t)t * C + c] = s;
        }
    }
    /* row by row: each dweight[c][o] still sees t = 0, 1, ... in order */
    for (int t = 0; t < T; t++) {
        const float *x = inp + (size_t)t * C, *dy = dout + (size_t)t * OC;
        for (int c = 0; c < C; c++) {
            float *dw = dweight + (size_t)c * OC;
            for (int o = 0; o < OC; o++) dw[o] = fmaf(x[c], dy[o], dw[o]);
        }
        if (dbias)
            for (int o = 0; o < OC; o++) dbias[o] += dy[o];
    }
}

void matmul_transposed_backward(float *dinp, float *dweight, const float *dout,
                                const float *inp, const float *weight, int T, int C, int OC) {
    for (int t = 0; t < T; t++) {
        const float *dy = dout + (size_t)t * OC, *x = inp + (size_t)t * C;
        float *dx = dinp + (size_t)t * C;
        memset(dx, 0, (size_t)C * sizeof *dx);
        for (int o = 0; o < OC; o++) {
            const float *wr = weight + (size_t)o * C;
            float *dw = dweight + (size_t)o * C;
            for (int c = 0; c < C; c++) {
                dx[c] = fmaf(dy[o], wr[c], dx[c]);
                dw[c] = fmaf(dy[o], x[c], dw[c]);
            }
        }
    }
}

/* ---- attention ------------------------------------------------------------------------ */

/* Row i of the softmax backward: datt (i+1) holds dout_i·v_j; dpre (T) gets
 * att·(datt − att·datt)/s for j ≤ i and 0 after. */
static void softmax_row_backward(float *dpre, const float *datt, const float *att, int i, int T,
                                 float s) {
    float part[TRAIN_LANES] = {0};
    for (int j = 0; j <= i; j++) part[j % TRAIN_LANES] = fmaf(att[j], datt[j], part[j % TRAIN_LANES]);
    float dot = 0.0f;
    for (int l = 0; l < TRAIN_LANES; l++) dot += part[l];
    for (int j = 0; j <= i; j++) dpre[j] = att[j] * (datt[j] - dot) / s;
    for (int j = i + 1; j < T; j++) dpre[j] = 0.0f;
}

/* One sequence, one head: every pointer at the head's first column (rows C apart),
 * att and dpre at the head's (T,T) block. */
static void attention_head_backward(float *dq, float *dk, float *dv, float *dpre,
                                    const float *dout, const float *q, const float *k,
                                    const float *v, const float *att, int T, int C, int hs,
                                    float s) {
    for (int i = 0; i < T; i++) {
        float *dp = dpre + (size_t)i * T;
        const float *dy = dout + (size_t)i * C;
        for (int j = 0; j <= i; j++) { /* datt, kept in dpre's row until the softmax */
            const float *vj = v + (size_t)j * C;
            float a = 0.0f;
            for (int d = 0; d < hs; d++) a = fmaf(dy[d], vj[d], a);
            dp[j] = a;
        }
        softmax_row_backward(dp, dp, att + (size_t)i * T, i, T, s);
    }
    for (int i = 0; i < T; i++) {
        float *dqi = dq + (size_t)i * C;
        memset(dqi, 0, (size_t)hs * sizeof *dqi);
        for (int j = 0; j <= i; j++) {
            const float a = dpre[(size_t)i * T + j], *kj = k + (size_t)j * C;
            for (int d = 0; d < hs; d++) dqi[d] = fmaf(a, kj[d], dqi[d]);
        }
    }
    for (int j = 0; j < T; j++) {
        float *dkj = dk + (size_t)j * C, *dvj = dv + (size_t)j * C;
        memset(dkj, 0, (size_t)hs * sizeof *dkj);
        memset(dvj, 0, (size_t)hs * sizeof *dvj);
        for (int i = j; i < T; i++) {
            const float a = dpre[(size_t)i * T + j], w = att[(size_t)i * T + j];
            const float *qi = q + (size_t)i * C, *dy = dout + (size_t)i * C;
            for (int d = 0; d < hs; d++) {
                dkj[d] = fmaf(a, qi[d], dkj[d]);
                dvj[d] = fmaf(w, dy[d], dvj[d]);
            }
        }
    }
}

void attention_backward(float *dq, float *dk, float *dv, float *dpre, const float *dout,
                        const float *q, const float *k, const float *v, const float *att,
                        int B, int T, int NH, int hs) {
    const int C = NH * hs;
    const float s = (float)sqrt((double)hs); /* the forward's divisor */
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const size_t x0 = (size_t)b * T * C + (size_t)h * hs;
            const size_t a0 = ((size_t)b * NH + h) * T * T;
            attention_head_backward(dq + x0, dk + x0, dv + x0, dpre + a0, dout + x0, q + x0,
                                    k + x0, v + x0, att + a0, T, C, hs, s);
        }
}

/* ---- GELU -------------------------------------------------------------------------------
 * gelu(x) = 0.5·x·(1 + t), t = tanh(u), u = k·(x + 0.044715·x³), k = √(2/π):
 *   gelu'(x) = 0.5·(1 + t) + 0.5·x·(1 − t²)·k·(1 + 3·0.044715·x²)
 * with 1 + t = S read back from the forward's output and 1 − t² = S·(2 − S). */
void gelu_backward(float *dinp, const float *inp, const float *out, const float *dout, size_t n) {
    const double pi = 3.14159265358979323846;
    const float k = (float)sqrt(2.0 / pi), c3 = 3.0f * 0.044715f;
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float S = x != 0.0f ? 2.0f * out[i] / x : 1.0f;
        const float du = k * (1.0f + c3 * x * x);
        dinp[i] = dout[i] * (0.5f * S + 0.5f * x * S * (2.0f - S) * du);
    }
}

/* ---- softmax cross-entropy ------------------------------------------------------------ */

void crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets,
                          int T, int V) {
    for (int t = 0; t < T; t++) {
        const float *l = logits + (size_t)t * V;
        float *p = probs + (size_t)t * V;
        float maxv = l[0];
        for (int v = 1; v < V; v++)
            if (l[v] > maxv) maxv = l[v];
        double sum = 0.0;
        for (int v = 0; v < V; v++) {
            p[v] = expf(l[v] - maxv);
            sum += p[v];
        }
        const float inv = (float)(1.0 / sum);
        for (int v = 0; v < V; v++) p[v] *= inv;
        losses[t] = (float)(log(sum) - (double)(l[targets[t]] - maxv));
    }
}

void crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss,
                           int T, int V) {
    for (int t = 0; t < T; t++) {
        const float *p = probs + (size_t)t * V;
        float *d = dlogits + (size_t)t * V;
        for (int v = 0; v < V; v++) d[v] = (p[v] - (v == targets[t] ? 1.0f : 0.0f)) * dloss;
    }
}

/* ---- AdamW -------------------------------------------------------------------------------- */

void adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                  float beta2, float eps, float wd, float bc1, float bc2) {
    const float omb1 = 1.0f - beta1, omb2 = 1.0f - beta2;
    for (size_t i = 0; i < n; i++) {
        const float gi = g[i];
        m[i] = beta1 * m[i] + omb1 * gi;
        v[i] = beta2 * v[i] + omb2 * gi * gi;
        const float mh = m[i] / bc1, vh = v[i] / bc2;
        p[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * p[i]);
    }
}
