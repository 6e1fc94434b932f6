/* train_ops.h — the backward pass of every GPT-2 operation, as plain loops.
 *
 * Each <op>_backward below sits beside the forward it reverses; the forwards that
 * training needs beyond the engine's (ops.h) are here too: the embeddings of a batch,
 * the layernorm statistics, the loss. Dimension letters as in ops.h, plus
 *   B sequences in a batch (a batch is B·T rows, sequence after sequence).
 * llm.c's train_gpt2.c is the model: same arguments as the forward plus the d-versions
 * (dinp, dweight, dbias, dout).
 *
 * Contract:
 *   - parameter gradients (dweight, dbias, dwte, dwpe) are accumulated: +=, so that a
 *     tensor used twice (wte: the embedding and the lm_head) sums both uses;
 *   - input gradients are written (=) by the ops whose input has no other consumer
 *     (matmul, attention, GELU, the loss) and accumulated (+=) by layernorm and the
 *     embedding, whose input is the residual stream, which also passes its gradient on;
 *   - every sum runs in one fixed order, written out below, and the multiply-adds of
 *     the matmuls and of attention are fused (fmaf): train_kernels.c computes the same
 *     elements with vector FMA in the same order, bit for bit;
 *   - pure: no allocation, no I/O, no global state (attention takes a scratch row).
 * tests/check_train.c checks every backward against central finite differences in
 * double and the fast kernels against these with memcmp.
 */
#ifndef KVSCOPE_TRAIN_OPS_H
#define KVSCOPE_TRAIN_OPS_H

#include <stddef.h>

/* Reductions that are not matmuls (the softmax backward's row dot product) run in
 * TRAIN_LANES interleaved partial sums, element j into sum j % TRAIN_LANES, then the
 * partial sums are added in order 0, 1, ...: the order of one 16-wide vector. */
enum { TRAIN_LANES = 16 };

/* ---- embeddings ---------------------------------------------------------------- */

/* out (B,T,C) = wte[tokens[b,t]] + wpe[t], the engine's order (residual_forward). */
void encoder_forward(float *out, const int *tokens, const float *wte, const float *wpe,
                     int B, int T, int C);
/* dwte[tokens[b,t]] += dout[b,t]; dwpe[t] += dout[b,t], rows in order. */
void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *tokens,
                      int B, int T, int C);

/* ---- layernorm (forward: ops.h layernorm_forward) ------------------------------ */

/* The statistics of each row of inp (T,C) that the backward needs: mean (T) and
 * rstd (T) = 1/√(var + eps), biased variance, in double as ops.c computes them. */
void layernorm_stats(float *mean, float *rstd, const float *inp, int T, int C, float eps);
/* y = (x − mean)·rstd·w + b:  dinp (T,C) += ∂/∂x,  dweight (C) += Σ_t norm·dout,
 * dbias (C) += Σ_t dout. dweight and dbias may be NULL (rows only, see below). */
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean,
                        const float *rstd, int T, int C);
/* The parameter part alone, for channels c0..c1-1: rows t = 0..T-1 in order. */
void layernorm_param_backward(float *dweight, float *dbias, const float *dout, const float *inp,
                              const float *mean, const float *rstd, int T, int C, int c0, int c1);

/* ---- matmul + bias (forward: ops.h matmul_forward, weight (C,OC)) --------------
 *   dinp[t][c]    = Σ_o dout[t][o]·weight[c][o]            o = 0..OC-1 in order, from 0
 *   dweight[c][o] += Σ_t inp[t][c]·dout[t][o]              t = 0..T-1 in order
 *   dbias[o]      += Σ_t dout[t][o]                        t in order; dbias may be NULL */
void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                     const float *inp, const float *weight, int T, int C, int OC);

/* ---- the tied lm_head (forward: ops.h matmul_transposed_forward, weight (OC,C)) -
 *   dinp[t][c]    = Σ_o dout[t][o]·weight[o][c]            o in order, from 0
 *   dweight[o][c] += Σ_t dout[t][o]·inp[t][c]              t in order */
void matmul_transposed_backward(float *dinp, float *dweight, const float *dout,
                                const float *inp, const float *weight, int T, int C, int OC);

/* ---- causal self-attention (forward: ops.h attention_forward, p = 0) -----------
 * Per sequence b and head h, with q, k, v, dout, dq, dk, dv (B,T,C) (head h in columns
 * h·hs..), att (B,NH,T,T) the forward's softmax weights (future cells 0) and
 * s = √hs as the forward divides by it:
 *   datt[i][j] = Σ_d dout[i][d]·v[j][d]                                   (j ≤ i)
 *   dpre[i][j] = att[i][j]·(datt[i][j] − Σ_j' att[i][j']·datt[i][j']) / s (0 for j > i)
 *   dq[i] = Σ_{j≤i} dpre[i][j]·k[j]    dk[j] = Σ_{i≥j} dpre[i][j]·q[i]
 *   dv[j] = Σ_{i≥j} att[i][j]·dout[i]
 * dpre (B,NH,T,T) receives the score gradients; dq, dk, dv are written. */
void attention_backward(float *dq, float *dk, float *dv, float *dpre, const float *dout,
                        const float *q, const float *k, const float *v, const float *att,
                        int B, int T, int NH, int hs);

/* ---- GELU (forward: ops.h gelu_forward) ----------------------------------------
 * dinp = dout·gelu'(inp), with inp the c_fc output and out = gelu(inp) as the forward
 * computed it: 1 + tanh(u) = 2·out/inp, so no tanh is evaluated again.
 * In place (dinp == dout) is fine. */
void gelu_backward(float *dinp, const float *inp, const float *out, const float *dout, size_t n);

/* ---- softmax cross-entropy -------------------------------------------------------- */

/* losses (T) = log Σ_v e^logit[v] − logit[target], in nats; probs (T,V) the softmax
 * (max subtracted, exp, sum in order, in double). */
void crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets,
                          int T, int V);
/* dlogits (T,V) = (probs − onehot(target))·dloss, dloss the weight of each row's loss
 * in the total (1/(B·T) for the mean). Written. */
void crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss,
                           int T, int V);

/* ---- AdamW ------------------------------------------------------------------------
 * One step (Loshchilov & Hutter, decoupled weight decay) on n parameters:
 *   m = β1·m + (1−β1)·g          v = β2·v + (1−β2)·g²
 *   p −= lr·((m/bc1) / (√(v/bc2) + eps) + wd·p)
 * bc1 = 1 − β1^t and bc2 = 1 − β2^t for step t = 1, 2, ...; wd = 0 leaves p undecayed. */
void adamw_update(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                  float beta2, float eps, float wd, float bc1, float bc2);

#endif
