/* kernels.h — the engine's fast kernels: the same results as ops.h, bit for bit.
 *
 * ops.c holds the plain kernels, written to be read. The engine calls these instead;
 * each one computes every output element with exactly the operations of its plain
 * twin, in the same order (the same fused multiply-adds where ops.c calls fmaf, the
 * same multiplies and adds elsewhere, the same libm calls), so its results are the
 * plain kernel's bytes. What changes is how the work is scheduled:
 *   - vectors run across independent outputs (output columns, keys, heads), never
 *     across a sum, so no summation is reordered;
 *   - register tiles of several rows share each weight load (prefill);
 *   - OpenMP threads take disjoint output columns, heads or rows, so the result does
 *     not depend on the thread count (OMP_NUM_THREADS sets it);
 *   - the matmuls read their weights in column panels (kern_pack_panels), so that the
 *     columns a thread owns are one contiguous run of memory: decode streams them,
 *     prefill finds its L1 tiles ready-made.
 * tests/check_kernels.c checks the equality with memcmp on awkward shapes.
 *
 * The level is picked at run time (kern_detect), so one binary runs everywhere:
 *   KERN_PLAIN   the ops.c kernels as they are (any CPU)
 *   KERN_AVX2    8-wide AVX2 vectors with FMA (x86-64 with AVX2, FMA and F16C)
 *   KERN_AVX512  KERN_AVX2, with 16-wide AVX-512F matmuls (prefill and decode) and
 *                prefill attention (src/engine/kernels_simd.h is written once for both
 *                widths)
 * Layernorm repeats the ops.c code row by row (4 rows side by side); GELU's
 * tanh is ops_tanhf, plain float arithmetic that the AVX2 and AVX-512 code repeat lane by
 * lane.
 * Exactness needs the Makefile's -ffp-contract=off: the compiler then fuses nothing on
 * its own (clang would by default, gcc in its GNU modes), so a multiply-add is fused
 * exactly where the source says fmaf or _mm*_fmadd_ps. -ffast-math breaks it.
 */
#ifndef KVSCOPE_KERNELS_H
#define KVSCOPE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

typedef enum { KERN_PLAIN, KERN_AVX2, KERN_AVX512, KERN_LEVEL_COUNT } KernLevel;

/* The best level this CPU runs. */
KernLevel kern_detect(void);
/* 1 if this CPU runs lv. */
int kern_supported(KernLevel lv);
/* "plain", "avx2", "avx512". */
const char *kern_name(KernLevel lv);
/* Threads a parallel kernel uses (1 without OpenMP). */
int kern_threads(void);

/* Column panels: a (C,OC) weight stored panel after panel, panel j being columns
 * KERN_PANEL·j .. KERN_PANEL·j + pw - 1 of every input row, row after row
 * (pw = KERN_PANEL, or what is left in the last panel). Element (c, o) of w sits at
 * o0·C + c·pw + (o - o0), o0 = o rounded down to a multiple of KERN_PANEL. */
enum { KERN_PANEL = 48 };
/* Copies w (C,OC) into panels (C·OC floats). */
void kern_pack_panels(float *panels, const float *w, int C, int OC);

/* ---- the weights as the vector kernels read them ----------------------------------
 * The model's Weights keep Hugging Face's layout, which the plain kernels read. The
 * vector matmuls read each block matrix and wteᵀ in column panels instead, float32 or
 * halves: a second copy of the matrices, owned here. */
typedef enum { KERN_C_ATTN, KERN_ATTN_PROJ, KERN_C_FC, KERN_MLP_PROJ, KERN_MATS } KernMatrix;
typedef struct {
    Dtype dtype;   /* DT_FP32, or the half type the panels hold */
    void *buf;     /* every panel, one allocation on huge pages (bigbuf); NULL: none */
    const void *wte;                 /* wteᵀ (C,V) in panels, for the lm_head */
    const void *(*h)[KERN_MATS];     /* (L) block l's c_attn (C,3C), attn.c_proj (C,C),
                                      * c_fc (C,4C), mlp.c_proj (4C,C) in panels */
} KernPanels;
/* Pack wte (V,C) transposed and the L blocks' four matrices, mats[4·l + k] with k a
 * KernMatrix, into panels of type dt (DT_FP32, DT_FP16, DT_BF16: the matrices should
 * hold values dt holds, kern_round_weight). Each matrix starts on a 64-byte line.
 * 0, or -1 out of memory or too large (p is then empty). */
int kern_panels_pack(KernPanels *p, int L, int C, int V, const float *wte,
                     const float *const *mats, Dtype dt);
/* Copy the matrices into p's float32 panels again after they changed (training). */
void kern_panels_repack(KernPanels *p, int L, int C, int V, const float *wte,
                        const float *const *mats);
/* Release p's panels; p becomes empty. */
void kern_panels_free(KernPanels *p);

/* As matmul_forward: out (T,OC) = inp (T,C) · w (C,OC) + bias (OC, may be NULL).
 * panels is w packed by kern_pack_panels: the vector levels read it, the plain level
 * reads w. With panels NULL every level runs the plain kernel. */
void kern_matmul_forward(KernLevel lv, float *out, const float *inp, const float *w,
                         const float *panels, const float *bias, int T, int C, int OC);
/* What a matmul does with each of its outputs y = Σ_c inp·w + bias as it stores it. */
typedef enum {
    KERN_SET,  /* out = y */
    KERN_GELU, /* out = gelu(y), the bits of gelu_forward on the stored y */
    KERN_ADD,  /* out = out + y, the bits of residual_forward(out, out, y): the residual
                * add as the matmul stores, so y is never written and read back */
} KernStore;
/* Where a matmul's outputs go: one array, or up to 3 side by side (c_attn's q, k and v,
 * each where it is used). Output o of row t: p[o / cols][t·ld + o % cols]. */
enum { KERN_OUT_PARTS = 3 };
typedef struct {
    float *p[KERN_OUT_PARTS]; /* part k: outputs k·cols .. k·cols + cols - 1 */
    int cols;                 /* outputs per part (OC with one part) */
    size_t ld;                /* floats from one row to the next, in every part */
    KernStore how;
} KernOut;
/* kern_matmul_forward (dt DT_FP32) or kern_matmul_half_forward (panels of halves of
 * type dt) into out, each output with the bits kern_matmul_forward gives it: so c_fc
 * can apply GELU as it stores (KERN_GELU) and c_attn write K and V into the cache.
 * Where the vector stores cannot write out directly (parts of part vectors, a residual
 * add over more than one block of panel rows, the plain level), the outputs go through
 * one buffer. 0, or -1 when that buffer is out of memory (nothing was written). */
int kern_matmul_into(KernLevel lv, KernOut out, const float *inp, const float *w,
                     const void *panels, Dtype dt, const float *bias, int T, int C, int OC);
/* Copies wᵀ (C,OC) of w (OC,C) into panels (C·OC floats), for the lm_head. */
void kern_pack_panels_t(float *panels, const float *w, int OC, int C);
/* As matmul_transposed_forward: out (T,OC) = inp (T,C) · wᵀ, w (OC,C); panels is
 * wᵀ packed by kern_pack_panels_t, read by the vector levels; NULL: plain kernel. */
void kern_matmul_transposed_forward(KernLevel lv, float *out, const float *inp,
                                    const float *w, const float *panels, int T, int C, int OC);
/* ---- half-size weights -------------------------------------------------------
 * A matrix may also be held in panels of halves: fp16 (IEEE binary16) or bf16 (the top
 * half of a float32), half the bytes of float32, which is what a decode step's time
 * is made of. The weights are rounded to the half type once (kern_round_weight); the
 * kernels turn each half back into its float32 value, exactly, and multiply-add in
 * float32 as above. So with w holding the rounded weights, the half panels give the
 * plain kernel's bytes on w. */

/* x rounded to dt (to nearest, ties to even) and back: a float32 value that dt holds
 * exactly. DT_FP32: x. */
float kern_round_weight(float x, Dtype dt);
/* As kern_pack_panels / kern_pack_panels_t, into halves of type dt (FP16 or BF16); w
 * should already be rounded (kern_round_weight), or each element is rounded now. */
void kern_pack_panels_half(uint16_t *panels, const float *w, int C, int OC, Dtype dt);
void kern_pack_panels_t_half(uint16_t *panels, const float *w, int OC, int C, Dtype dt);
/* As kern_matmul_forward / kern_matmul_transposed_forward with panels of halves of
 * type dt; the plain level (or panels NULL, or dt DT_FP32) runs the plain kernel on w. */
void kern_matmul_half_forward(KernLevel lv, float *out, const float *inp, const float *w,
                              const uint16_t *panels, Dtype dt, const float *bias, int T,
                              int C, int OC);
void kern_matmul_transposed_half_forward(KernLevel lv, float *out, const float *inp,
                                         const float *w, const uint16_t *panels, Dtype dt,
                                         int T, int C, int OC);

/* As attention_forward (same shapes and outputs). */
void kern_attention_forward(KernLevel lv, float *out, float *scores, float *pattern,
                            const float *q, const float *kc, const float *vc,
                            int n, int p, int NH, int hs);
/* out as kern_attention_forward gives it, bit for bit, for a caller that does not read
 * the scores and the weights: scores and pattern are then room the call may use or not
 * (their contents afterwards are unspecified). A prefill's blocks of queries keep their
 * own rows on the stack instead (up to 1,024 keys): the whole matrices, NH·n·(p+n)
 * floats each, are cold memory by the time the next layer writes them again. */
void kern_attention_out(KernLevel lv, float *out, float *scores, float *pattern,
                        const float *q, const float *kc, const float *vc,
                        int n, int p, int NH, int hs);
/* As gelu_forward; in place is fine. */
void kern_gelu_forward(KernLevel lv, float *out, const float *inp, size_t n);
/* residual_forward (out = a + b, n floats; out may be a), 8 lanes at a time. */
void kern_residual_forward(KernLevel lv, float *out, const float *a, const float *b, size_t n);
/* As layernorm_forward. */
void kern_layernorm_forward(KernLevel lv, float *out, const float *inp, const float *w,
                            const float *b, int T, int C, float eps);

/* The elementwise kernels of one level with ops.c's signatures, so that the forward pass
 * calls one function per operation: at KERN_PLAIN they are ops.c's own functions. */
typedef struct {
    void (*layernorm)(float *out, const float *inp, const float *w, const float *b, int T,
                      int C, float eps);
    void (*residual)(float *out, const float *a, const float *b, size_t n);
    void (*gelu)(float *out, const float *inp, size_t n);
} KernOps;
/* Level lv's table (a level out of range: the plain one). */
const KernOps *kern_ops(KernLevel lv);

#endif
