/* train_kernels.h — the fast backward kernels: train_ops.h's results, bit for bit.
 *
 * As kernels.h does for the forward: every output element is built with the fused
 * multiply-adds of its plain twin (fmaf in train_ops.c, vector FMA here), in the same
 * order; vector lanes run across independent outputs (columns, keys), never across a
 * sum; OpenMP threads take disjoint outputs, so the result does not depend on the
 * thread count. The levels are the engine's (kernels.h: kern_supported, kern_detect):
 *   KERN_PLAIN   train_ops.c as it is
 *   KERN_AVX2    8-wide AVX2 + FMA vectors (x86-64 CPUs with AVX2 and FMA)
 *   KERN_AVX512  16-wide AVX-512F vectors
 * tests/check_train_ops.c checks fast = plain with memcmp on every level the CPU runs
 * (and says which it skips).
 *
 * The matmuls read their weights in column panels (kernels.h, kern_pack_panels):
 *   matmul_backward             dinp = dout·Wᵀ reads Wᵀ packed by
 *                               kern_pack_panels_t(wt_panels, W, C, OC)
 *   matmul_transposed_backward  dinp = dout·W reads W (OC,C) packed by
 *                               kern_pack_panels(w_panels, W, OC, C)
 * With panels NULL, or a shape the vector code does not take, the plain loops run.
 */
#ifndef KVSCOPE_TRAIN_KERNELS_H
#define KVSCOPE_TRAIN_KERNELS_H

#include <stddef.h>

#include "kernels.h"

/* As matmul_backward (train_ops.h). */
void tk_matmul_backward(KernLevel lv, float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *wt_panels, int T,
                        int C, int OC);
/* As matmul_transposed_backward. */
void tk_matmul_transposed_backward(KernLevel lv, float *dinp, float *dweight, const float *dout,
                                   const float *inp, const float *weight, const float *w_panels,
                                   int T, int C, int OC);

/* Floats of scratch one thread of tk_attention_backward needs. */
size_t tk_attention_scratch(int T, int hs);
/* As attention_backward; scratch holds nscratch · tk_attention_scratch(T, hs) floats
 * and the kernel runs at most nscratch threads. */
void tk_attention_backward(KernLevel lv, float *dq, float *dk, float *dv, float *dpre,
                           const float *dout, const float *q, const float *k, const float *v,
                           const float *att, int B, int T, int NH, int hs, float *scratch,
                           int nscratch);

/* The row-wise ops, threads over rows, channels or chunks. At a vector level, the
 * layernorm's weight and bias gradients (lanes across channels), the GELU backward and
 * AdamW (lanes across elements) run as vectors; the rest is the plain code. */
void tk_layernorm_backward(KernLevel lv, float *dinp, float *dweight, float *dbias,
                           const float *dout, const float *inp, const float *weight,
                           const float *mean, const float *rstd, int T, int C);
void tk_layernorm_stats(float *mean, float *rstd, const float *inp, int T, int C, float eps);
void tk_gelu_backward(KernLevel lv, float *dinp, const float *inp, const float *out,
                      const float *dout, size_t n);
void tk_crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets,
                             int T, int V);
void tk_crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss,
                              int T, int V);
void tk_adamw_update(KernLevel lv, float *p, const float *g, float *m, float *v, size_t n,
                     float lr, float beta1, float beta2, float eps, float wd, float bc1, float bc2);

#endif
