/* test_ref_gpt2.c — the double-precision reference GPT-2; see ref_gpt2.h. */
#include "ref_gpt2.h"

#include <math.h>
#include <stdlib.h>

double *ref_blob(const float *blob, size_t n) {
    double *w = malloc((n ? n : 1) * sizeof *w);
    if (!w) return NULL;
    for (size_t i = 0; i < n; i++) w[i] = blob[i];
    return w;
}

static void layernorm(double *y, const double *x, const double *w, const double *b, int C,
                      double eps) {
    double mean = 0, var = 0;
    for (int i = 0; i < C; i++) mean += x[i];
    mean /= C;
    for (int i = 0; i < C; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= C;
    for (int i = 0; i < C; i++) y[i] = (x[i] - mean) / sqrt(var + eps) * w[i] + b[i];
}

/* y (OC) = x (IN) · W (IN, OC) + b */
static void linear(double *y, const double *x, const double *W, const double *b, int IN, int OC) {
    for (int o = 0; o < OC; o++) {
        double s = b[o];
        for (int i = 0; i < IN; i++) s += x[i] * W[(size_t)i * OC + o];
        y[o] = s;
    }
}

/* y (T, C) = causal self-attention of qkv (T, 3C: q, k, v side by side); att: T scratch. */
static void attention(double *y, const double *qkv, double *att, int T, int C, int NH) {
    const int hs = C / NH;
    for (int hd = 0; hd < NH; hd++)
        for (int t = 0; t < T; t++) {
            double mx = -INFINITY, sum = 0;
            for (int u = 0; u < T; u++) {
                double s = 0;
                for (int d = 0; d < hs; d++)
                    s += qkv[(size_t)t * 3 * C + hd * hs + d] * qkv[(size_t)u * 3 * C + C + hd * hs + d];
                s /= sqrt((double)hs);
                if (u > t) s = -1e300; /* the causal mask, as a huge negative score */
                att[u] = s;
                if (s > mx) mx = s;
            }
            for (int u = 0; u < T; u++) sum += att[u] = exp(att[u] - mx);
            for (int d = 0; d < hs; d++) {
                double acc = 0;
                for (int u = 0; u < T; u++)
                    acc += att[u] / sum * qkv[(size_t)u * 3 * C + 2 * C + hd * hs + d];
                y[(size_t)t * C + hd * hs + d] = acc;
            }
        }
}

static void gelu(double *h, int n) {
    const double k = sqrt(2 / 3.14159265358979323846);
    for (int i = 0; i < n; i++) h[i] = 0.5 * h[i] * (1 + tanh(k * (h[i] + 0.044715 * h[i] * h[i] * h[i])));
}

/* Block l on the residual stream x (T, C), with scratch of the sizes ref_gpt2_logits gives. */
static void block(const Config *c, const double *const *p, double *x, double *ln, double *qkv,
                  double *y, double *h, double *o, double *att, int T) {
    const int C = c->C;
    /* p: ln_1 w b, c_attn w b, attn c_proj w b, ln_2 w b, c_fc w b, mlp c_proj w b */
    for (int t = 0; t < T; t++) {
        layernorm(ln + (size_t)t * C, x + (size_t)t * C, p[0], p[1], C, c->eps);
        linear(qkv + (size_t)t * 3 * C, ln + (size_t)t * C, p[2], p[3], C, 3 * C);
    }
    attention(y, qkv, att, T, C, c->NH);
    for (int t = 0; t < T; t++) {
        double *xt = x + (size_t)t * C;
        linear(o, y + (size_t)t * C, p[4], p[5], C, C);
        for (int i = 0; i < C; i++) xt[i] += o[i];
        layernorm(ln, xt, p[6], p[7], C, c->eps);
        linear(h, ln, p[8], p[9], C, 4 * C);
        gelu(h, 4 * C);
        linear(o, h, p[10], p[11], 4 * C, C);
        for (int i = 0; i < C; i++) xt[i] += o[i];
    }
}

int ref_gpt2_logits(const Config *c, const double *w, const int *tok, int T, double *logits) {
    const int C = c->C, L = c->L, n = model_tensor_specs(c, NULL);
    TensorSpec *sp = malloc((size_t)n * sizeof *sp);
    double *x = calloc((size_t)T * C, sizeof *x), *ln = calloc((size_t)T * C, sizeof *ln);
    double *qkv = calloc((size_t)T * 3 * C, sizeof *qkv), *y = calloc((size_t)T * C, sizeof *y);
    double *h = calloc((size_t)4 * C, sizeof *h), *o = calloc((size_t)C, sizeof *o);
    double *att = calloc((size_t)T, sizeof *att);
    int rc = -1;
    if (!sp || !x || !ln || !qkv || !y || !h || !o || !att) goto done;
    model_tensor_specs(c, sp);
    const double *wte = w + sp[0].offset, *wpe = w + sp[1].offset;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < C; i++)
            x[(size_t)t * C + i] = wte[(size_t)tok[t] * C + i] + wpe[(size_t)t * C + i];
    for (int l = 0; l < L; l++) {
        const double *p[12];
        for (int j = 0; j < 12; j++) p[j] = w + sp[2 + 12 * l + j].offset;
        block(c, p, x, ln, qkv, y, h, o, att, T);
    }
    for (int t = 0; t < T; t++) {
        layernorm(ln, x + (size_t)t * C, w + sp[2 + 12 * L].offset, w + sp[3 + 12 * L].offset, C,
                  c->eps);
        for (int v = 0; v < c->V; v++) { /* the lm_head is wte */
            double s = 0;
            for (int i = 0; i < C; i++) s += ln[i] * wte[(size_t)v * C + i];
            logits[(size_t)t * c->V + v] = s;
        }
    }
    rc = 0;
done:
    free(sp); free(x); free(ln); free(qkv); free(y); free(h); free(o); free(att);
    return rc;
}
