/* ops.h — pure kernels of a GPT-2 block.
 *
 * Contract: output first, inputs after, dimensions last. No allocation, no I/O,
 * no global state. Dimension letters used everywhere in kvscope:
 *   T tokens (rows), C channels, NH heads, hs = C/NH head size, OC output channels.
 * All matrices are row-major. Weights use Hugging Face's Conv1D layout (in, out):
 * y = x·W + b, so W of a C→OC projection has shape (C, OC).
 *
 * Every kernel computes each output row with the same order of operations no
 * matter how many rows are processed together. That is why a decode step with
 * the KV cache gives bit-identical results to recomputing the whole sequence.
 *
 * FLOP conventions (one multiply or add = 1 FLOP; a multiply-add = 2):
 *   matmul       2·T·C·OC            (the bias add is counted as elementwise)
 *   attention    4·hs per (head, causal query/key pair): 2·hs for q·k, 2·hs for p·v
 *   elementwise  KV_FLOPS_* per element, below.
 */
#ifndef KVSCOPE_OPS_H
#define KVSCOPE_OPS_H

#include <stddef.h>
#include <stdint.h>

enum {
    KV_FLOPS_LAYERNORM = 8, /* per element: mean add; var sub,mul,add; sub,mul(rstd),mul(w),add(b) */
    KV_FLOPS_GELU = 9,      /* per element: x·x·x·c (3), +x, ·√(2/π), tanh, +1, 0.5·x, · */
    KV_FLOPS_SOFTMAX = 5,   /* per causal entry: /√hs, −max, exp, sum, ·(1/sum) */
    KV_FLOPS_ADD = 1        /* per element: a bias add, a residual add, wte + wpe */
};

/* out (T,C) = LayerNorm(inp (T,C)) · w (C) + b (C), biased variance, as torch. */
void layernorm_forward(float *out, const float *inp, const float *w, const float *b,
                       int T, int C, float eps);

/* out (T,OC) = inp (T,C) · w (C,OC) + bias (OC); bias may be NULL.
 * Row t of out depends on row t of inp only, in a fixed summation order. */
void matmul_forward(float *out, const float *inp, const float *w, const float *bias,
                    int T, int C, int OC);

/* out (T,OC) = inp (T,C) · wᵀ where w is (OC,C): the tied lm_head, logits = x·wteᵀ. */
void matmul_transposed_forward(float *out, const float *inp, const float *w,
                               int T, int C, int OC);

/* Hugging Face "gelu_new": 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). In place is fine.
 * tanh is ops_tanhf below, not libm's. */
void gelu_forward(float *out, const float *inp, size_t n);

/* tanh(x) in float, within 2 ulp of the exact value (tests/check_kernels.c sweeps
 * ~35 million floats), NaN in → NaN out, tanh(±0) = ±0, tanh(±inf) = ±1.
 * Why not libm's tanhf: it is a scalar call that takes a fifth of a prefill, and its
 * last bit varies between C libraries. This one is plain float arithmetic, which
 * kernels.c repeats 8 lanes at a time for the same bits:
 *   |x| < 0.625   a + a³·P(a²), P of degree 5 (a minimax-style fit, below)
 *   otherwise     1 − 2/(e^(2a) + 1), e^y = 2^n·e^r with e^r by Taylor to r⁷
 * with a = min(|x|, 10) (tanh(10) rounds to 1) and the sign of x put back. */
float ops_tanhf(float x);

/* e^x for x ≤ 0 (what softmax needs, once the row's max is subtracted), within
 * 1.5 ulp of the exact value where that is a normal float (1.02 measured:
 * tests/check_kernels.c sweeps every 31st float of [-104, 0]); subnormal results
 * within one step of 2^-149; 0 below OPS_EXPF_LOW and for -inf, NaN for NaN; not for
 * x > 0 (2^n overflows past x = 43). e^x = 2^n·e^r, n = round(x/ln 2), e^r by Taylor
 * to r⁷: plain float arithmetic with fmaf, so kernels.c computes it lanes at a time
 * for the same bits, where libm's expf is a scalar call whose last bit varies between
 * C libraries. */
float ops_expf(float x);
#define OPS_EXPF_LOW -104.0f        /* e^-104 < 2^-150: rounds to 0 */
#define OPS_EXPF_TWO_M64 0x1p-64f   /* 2^-64 */

/* The constants of ops_tanhf, shared with its vector twin in kernels.c. */
#define OPS_TANH_SMALL 0.625f                                  /* polynomial below this */
#define OPS_TANH_CLAMP 10.0f
#define OPS_TANH_P0 -3.333333317e-01f                          /* P(z) = P0 + P1·z + … */
#define OPS_TANH_P1 1.333330356e-01f
#define OPS_TANH_P2 -5.395925957e-02f
#define OPS_TANH_P3 2.176891863e-02f
#define OPS_TANH_P4 -8.343945457e-03f
#define OPS_TANH_P5 2.292744760e-03f
#define OPS_EXP_LOG2E 1.44269504f                              /* 1/ln 2 */
#define OPS_EXP_ROUND 12582912.0f   /* 1.5·2^23: x + it − it rounds x to an integer */
#define OPS_EXP_LN2_HI 0.693359375f /* ln 2 = HI + LO; n·HI is exact for |n| < 2^15 */
#define OPS_EXP_LN2_LO -2.12194440e-04f

/* out = a + b elementwise; out may alias a. fast twin: residual_avx2 (kernels.c) */
void residual_forward(float *out, const float *a, const float *b, size_t n);

/* One row of attention weights: sc (T) holds the scaled scores of keys 0..pos;
 * pa (T) gets softmax over them (max subtracted, ops_expf, sum in key order, times
 * 1/sum), and the future cells pos+1..T-1 become -INFINITY in sc and 0 in pa. */
void softmax_causal_row(float *sc, float *pa, int pos, int T);

/* ---- attention, three ways ---------------------------------------------------------
 * One computation, three implementations, every one tested to give the others' bytes:
 *   attention_forward      below: the plain loop to read (src/engine/README.md: "Read the engine"): n
 *                          new queries at positions p..p+n-1 against the contiguous K and
 *                          V cache;
 *   kern_attention_forward kernels.h: its fast twin (vectors across keys and heads,
 *                          blocks of queries), what the engine runs; tests/check_kernels.c
 *                          compares the two with memcmp on every vector level;
 *   attention_row_forward  below: one query over cached rows anywhere in memory (a padded
 *                          batch, the blocks of a paged cache) with an optional mask, for
 *                          batch.h and paged.h; compared with attention_forward in the same
 *                          test file. */

/* Causal multi-head attention of n new queries at absolute positions p .. p+n-1.
 *   q       (n, NH, hs)    the new tokens' queries
 *   kc, vc  (p+n, NH, hs)  every cached key and value, the new ones already appended
 *   out     (n, NH, hs)    softmax(q·kᵀ/√hs)·v, heads side by side (= (n, C))
 *   scores  (NH, n, p+n)   scaled scores before softmax; future cells set to -INFINITY
 *   pattern (NH, n, p+n)   softmax weights; future cells set to 0
 * Only causal entries (key position ≤ query position) are computed or read. */
void attention_forward(float *out, float *scores, float *pattern,
                       const float *q, const float *kc, const float *vc,
                       int n, int p, int NH, int hs);

/* One query row q (C = NH·hs, heads side by side) attending over T cached rows
 * kr[t], vr[t] (C floats each, anywhere in memory: a padded tensor, blocks of a
 * pool). keep[t] == 0 masks slot t out (score -inf, weight 0); keep NULL keeps
 * all. Writes out (C); scores (T) is scratch. For the kept slots the arithmetic
 * is attention_forward's, in the same order, so the result is bit-identical to
 * it. Returns the number of slots kept (≥ 1), or -1 if none is. Pure. */
int attention_row_forward(float *out, float *scores, const float *q,
                          const float *const *kr, const float *const *vr,
                          const unsigned char *keep, int T, int NH, int hs);

/* attention_forward with eviction per head (evict.h): head h reads slot t only when
 * keep[h·stride + t] is non-zero; a slot it does not keep has score -INFINITY and weight
 * 0, as a future one. The query's own slot must be kept. Same arithmetic in the same
 * order as attention_forward for the kept slots. Pure. */
void attention_masked_forward(float *out, float *scores, float *pattern, const float *q,
                              const float *kc, const float *vc, const unsigned char *keep,
                              int stride, int n, int p, int NH, int hs);

#endif
