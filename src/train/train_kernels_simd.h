/* train_kernels_simd.h — the vector code of train_kernels.c, written once for two widths.
 *
 * Not a header to include elsewhere: train_kernels.c includes it twice, once for
 * AVX-512F (TK_W 16) and once for AVX2 + FMA (TK_W 8), after defining
 *   TK_SUFFIX  the name suffix (_512, _avx2)     TK_TARGET  the target attribute string
 *   TK_W       floats per vector                 TK_V       the vector type
 *   TK_MR      rows of a matmul tile             TK_NV      vectors across a tile
 *   TK_ZERO() TK_LOAD(p) TK_STORE(p, x) TK_SET1(x) TK_FMA(a, b, c) = a·b + c, rounded once
 *   TK_ADD(a, b) TK_SUB(a, b) TK_MUL(a, b) TK_DIV(a, b) TK_SQRT(a)
 *   TK_SEL_NZ(x, a, b) = a where x != 0 (or NaN), else b
 * Every element is summed as its plain twin in train_ops.c sums it; columns left over
 * when a width is not a multiple of TK_W go through the same fmaf loop, scalar.
 */

#define TK_CAT2(a, b) a##b
#define TK_CAT(a, b) TK_CAT2(a, b)
#define TKF(name) TK_CAT(name, TK_SUFFIX)
#define TK_FN __attribute__((target(TK_TARGET))) static
#define TK_INLINE __attribute__((target(TK_TARGET), always_inline)) static inline

/* ---- out (T,N) = a (T,K) · W (K,N), W in column panels ------------------------------
 * A panel holds pw ≤ KERN_PANEL columns, K rows of pw floats. Per element, as
 * matmul_backward's dinp: s = 0, then s = fma(a[t][k], W[k][n], s) for k = 0, 1, ...
 * The sums run over K in blocks of TK_KC panel rows (L1-sized); between blocks the
 * partial sums wait in out, as floats: the values a register would hold. */

/* Every accumulator of a tile to 0 (rows a partial tile does not use included, so that
 * none is read uninitialized; with a full tile the compiler drops the stores). */
TK_INLINE void TKF(zero_tile)(TK_V acc[TK_MR][TK_NV]) {
#pragma GCC unroll 8
    for (int r = 0; r < TK_MR; r++)
#pragma GCC unroll 3
        for (int u = 0; u < TK_NV; u++) acc[r][u] = TK_ZERO();
}

/* Rows 0..R-1 of a (row stride K, at column k0 of the block), the nv vectors of panel
 * columns c0.. of blk (the block's kc rows, row stride pw), into out (row stride N, at
 * the panel's column c0). first: the block starts the sums at 0, else at out. */
TK_INLINE void TKF(mm_tile)(float *out, const float *a, const float *blk, int pw, int R, int nv,
                            int K, int N, int kc, int first) {
    TK_V acc[TK_MR][TK_NV];
    TKF(zero_tile)(acc);
    if (!first)
#pragma GCC unroll 8
        for (int r = 0; r < R; r++)
#pragma GCC unroll 3
            for (int u = 0; u < nv; u++) acc[r][u] = TK_LOAD(out + (size_t)r * N + u * TK_W);
    for (int k = 0; k < kc; k++) {
        const float *wr = blk + (size_t)k * pw;
        TK_V w[TK_NV];
#pragma GCC unroll 3
        for (int u = 0; u < nv; u++) w[u] = TK_LOAD(wr + u * TK_W);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const TK_V x = TK_SET1(a[(size_t)r * K + k]);
#pragma GCC unroll 3
            for (int u = 0; u < nv; u++) acc[r][u] = TK_FMA(x, w[u], acc[r][u]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 3
        for (int u = 0; u < nv; u++) TK_STORE(out + (size_t)r * N + u * TK_W, acc[r][u]);
}

/* The full tile with constant sizes, so that the accumulators stay in registers. */
TK_FN void TKF(mm_tile_full)(float *out, const float *a, const float *blk, int pw, int K, int N,
                             int kc, int first) {
    TKF(mm_tile)(out, a, blk, pw, TK_MR, TK_NV, K, N, kc, first);
}
TK_FN void TKF(mm_tile_any)(float *out, const float *a, const float *blk, int pw, int R, int nv,
                            int K, int N, int kc, int first) {
    TKF(mm_tile)(out, a, blk, pw, R, nv, K, N, kc, first);
}

/* Rows t0..t1-1 against one panel pan (pw columns, output columns o0..o0+pw-1). */
TK_FN void TKF(mm_panel)(float *out, const float *a, const float *pan, int pw, int o0, int t0,
                         int t1, int K, int N) {
    const int span = TK_NV * TK_W;
    for (int k0 = 0; k0 < K; k0 += TK_KC) {
        const int kc = K - k0 < TK_KC ? K - k0 : TK_KC, first = k0 == 0;
        const float *blk = pan + (size_t)k0 * pw;
        for (int c0 = 0; c0 < pw - pw % TK_W; c0 += span) {
            const int nv = (pw - c0) / TK_W < TK_NV ? (pw - c0) / TK_W : TK_NV;
            int t = t0;
            if (nv == TK_NV)
                for (; t + TK_MR <= t1; t += TK_MR)
                    TKF(mm_tile_full)(out + (size_t)t * N + o0 + c0, a + (size_t)t * K + k0,
                                      blk + c0, pw, K, N, kc, first);
            for (; t < t1; t += TK_MR)
                TKF(mm_tile_any)(out + (size_t)t * N + o0 + c0, a + (size_t)t * K + k0, blk + c0,
                                 pw, t1 - t < TK_MR ? t1 - t : TK_MR, nv, K, N, kc, first);
        }
        for (int c = pw - pw % TK_W; c < pw; c++) /* columns past the last full vector */
            for (int t = t0; t < t1; t++) {
                float *y = out + (size_t)t * N + o0 + c;
                const float *x = a + (size_t)t * K + k0;
                float s = first ? 0.0f : *y;
                for (int k = 0; k < kc; k++) s = fmaf(x[k], blk[(size_t)k * pw + c], s);
                *y = s;
            }
    }
}

/* ---- dw (K,N) += aᵀ (K,T) · b (T,N) -----------------------------------------------------
 * Per element, as matmul_backward's dweight: dw = fma(a[t][k], b[t][n], dw) for
 * t = 0, 1, ... The rows of T come in blocks of TK_TB; a block's piece of a and of b is
 * first packed with vector moves into contiguous buffers (rows of a and b are up to
 * 4 KiB apart: a new page per row, and a library memcpy per row cost more than the
 * multiply-adds), which stay in L1/L2 while every tile of the task passes by. a's piece
 * is packed in micro-panels of TK_MR columns, so that a tile reads TK_MR adjacent floats
 * per row of T. */

/* dw rows 0..R-1 (row stride ldw), nv vectors of columns, over the tb rows of a (row
 * stride lda, at the tile's first k) and b (row stride ldb, at the tile's first n). */
TK_INLINE void TKF(tn_tile)(float *dw, const float *a, const float *b, int R, int nv, int lda,
                            int ldb, int ldw, int tb) {
    TK_V acc[TK_MR][TK_NV];
    TKF(zero_tile)(acc);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 3
        for (int u = 0; u < nv; u++) acc[r][u] = TK_LOAD(dw + (size_t)r * ldw + u * TK_W);
    for (int t = 0; t < tb; t++) {
        const float *br = b + (size_t)t * ldb, *ar = a + (size_t)t * lda;
        TK_V y[TK_NV];
#pragma GCC unroll 3
        for (int u = 0; u < nv; u++) y[u] = TK_LOAD(br + u * TK_W);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const TK_V x = TK_SET1(ar[r]);
#pragma GCC unroll 3
            for (int u = 0; u < nv; u++) acc[r][u] = TK_FMA(x, y[u], acc[r][u]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 3
        for (int u = 0; u < nv; u++) TK_STORE(dw + (size_t)r * ldw + u * TK_W, acc[r][u]);
}

TK_FN void TKF(tn_tile_full)(float *dw, const float *a, const float *b, int lda, int ldb, int ldw,
                             int tb) {
    TKF(tn_tile)(dw, a, b, TK_MR, TK_NV, lda, ldb, ldw, tb);
}
TK_FN void TKF(tn_tile_any)(float *dw, const float *a, const float *b, int R, int nv, int lda,
                            int ldb, int ldw, int tb) {
    TKF(tn_tile)(dw, a, b, R, nv, lda, ldb, ldw, tb);
}

/* The n floats at p (rows ld apart) into L2, as the next block of T will read them: the
 * rows of a block are pages apart, which the hardware prefetchers do not follow. */
TK_INLINE void TKF(prefetch_rows)(const float *p, int rows, int n, size_t ld) {
    for (int t = 0; t < rows; t++)
        for (int c = 0; c < n; c += 16) _mm_prefetch((const char *)(p + (size_t)t * ld + c), _MM_HINT_T1);
}

/* tb rows of n floats (row stride ld) into dst (row stride n), whole vectors as vectors.
 * The empty asm keeps GCC from turning the loop back into a memcpy call per row. */
TK_INLINE void TKF(pack_rows)(float *dst, const float *src, int tb, int n, size_t ld) {
    const int nv = n - n % TK_W;
    for (int t = 0; t < tb; t++) {
        const float *s = src + (size_t)t * ld;
        float *d = dst + (size_t)t * n;
        int c = 0;
        for (; c < nv; c += TK_W) {
            TK_V x = TK_LOAD(s + c);
            __asm__("" : "+v"(x));
            TK_STORE(d + c, x);
        }
        for (; c < n; c++) d[c] = s[c];
    }
}

/* tb rows of kw floats (row stride ld) into micro-panels of TK_MR columns: column k of
 * row t at ((k / TK_MR)·tb + t)·TK_MR + k % TK_MR. */
TK_INLINE void TKF(pack_micro)(float *dst, const float *src, int tb, int kw, size_t ld) {
    const int full = kw - kw % TK_MR;
    for (int t = 0; t < tb; t++) {
        const float *s = src + (size_t)t * ld;
        for (int k = 0; k < full; k += TK_MR) /* a constant size: one vector move */
            memcpy(dst + ((size_t)(k / TK_MR) * tb + t) * TK_MR, s + k, TK_MR * sizeof(float));
        for (int k = full; k < kw; k++)
            dst[((size_t)(k / TK_MR) * tb + t) * TK_MR + k % TK_MR] = s[k];
    }
}

/* dw rows k0..k1-1 (at most TK_KB), columns n0..n1-1 (at most TK_NB), all T rows: per block
 * of T, a's piece is packed once for the task and b's piece once per KERN_PANEL columns. */
TK_FN void TKF(tn_block)(float *dw, const float *a, const float *b, int k0, int k1, int n0, int n1,
                         int T, int K, int N) {
    float ap[TK_TB * (TK_KB + TK_MR)], bp[TK_TB * KERN_PANEL];
    const int span = TK_NV * TK_W, kw = k1 - k0;
    for (int t0 = 0; t0 < T; t0 += TK_TB) {
        const int tb = T - t0 < TK_TB ? T - t0 : TK_TB;
        const int tn = T - t0 - tb < TK_TB ? T - t0 - tb : TK_TB; /* rows of the next block */
        TKF(pack_micro)(ap, a + (size_t)t0 * K + k0, tb, kw, (size_t)K);
        TKF(prefetch_rows)(a + (size_t)(t0 + tb) * K + k0, tn, kw, (size_t)K);
        for (int p0 = n0; p0 < n1; p0 += KERN_PANEL) {
            const int w = n1 - p0 < KERN_PANEL ? n1 - p0 : KERN_PANEL, wv = w - w % TK_W;
            TKF(pack_rows)(bp, b + (size_t)t0 * N + p0, tb, w, (size_t)N);
            TKF(prefetch_rows)(b + (size_t)(t0 + tb) * N + p0, tn, w, (size_t)N);
            for (int c0 = 0; c0 < wv; c0 += span) {
                const int nv = (wv - c0) / TK_W < TK_NV ? (wv - c0) / TK_W : TK_NV;
                float *d = dw + (size_t)k0 * N + p0 + c0;
                int k = 0;
                if (nv == TK_NV)
                    for (; k + TK_MR <= kw; k += TK_MR)
                        TKF(tn_tile_full)(d + (size_t)k * N, ap + (size_t)k * tb, bp + c0, TK_MR,
                                          w, N, tb);
                for (; k < kw; k += TK_MR)
                    TKF(tn_tile_any)(d + (size_t)k * N, ap + (size_t)k * tb, bp + c0,
                                     kw - k < TK_MR ? kw - k : TK_MR, nv, TK_MR, w, N, tb);
            }
            for (int n = wv; n < w; n++) /* columns past the last full vector */
                for (int k = 0; k < kw; k++) {
                    float *d = dw + (size_t)(k0 + k) * N + p0 + n, s = *d;
                    const float *ak = ap + (size_t)(k / TK_MR) * tb * TK_MR + k % TK_MR;
                    for (int t = 0; t < tb; t++) s = fmaf(ak[(size_t)t * TK_MR], bp[(size_t)t * w + n], s);
                    *d = s;
                }
        }
    }
}

/* db[n] += Σ_t d[t][n] for columns n0..n1-1, t in order. */
TK_FN void TKF(colsum)(float *db, const float *d, int T, int N, int n0, int n1) {
    int n = n0;
    for (; n + TK_W <= n1; n += TK_W) {
        TK_V acc = TK_LOAD(db + n);
        for (int t = 0; t < T; t++) acc = TK_ADD(acc, TK_LOAD(d + (size_t)t * N + n));
        TK_STORE(db + n, acc);
    }
    for (; n < n1; n++) {
        float s = db[n];
        for (int t = 0; t < T; t++) s += d[(size_t)t * N + n];
        db[n] = s;
    }
}

/* ---- elementwise and per-channel ops ---------------------------------------------------
 * train_ops.c computes these without fused multiply-adds (ISO C mode keeps a·b + c two
 * roundings), so the vectors below do each product and sum on its own, in the same
 * order; division and square root are correctly rounded in both. Lanes run across
 * elements or channels; the tail is the plain function. */

/* As gelu_backward on n elements. */
TK_FN void TKF(gelu_bwd)(float *dinp, const float *inp, const float *out, const float *dout,
                         size_t n) {
    const double pi = 3.14159265358979323846;
    const float kf = (float)sqrt(2.0 / pi), c3f = 3.0f * 0.044715f;
    const TK_V k = TK_SET1(kf), c3 = TK_SET1(c3f), half = TK_SET1(0.5f), one = TK_SET1(1.0f),
               two = TK_SET1(2.0f);
    size_t i = 0;
    for (; i + TK_W <= n; i += TK_W) {
        const TK_V x = TK_LOAD(inp + i);
        const TK_V S = TK_SEL_NZ(x, TK_DIV(TK_MUL(two, TK_LOAD(out + i)), x), one);
        const TK_V du = TK_MUL(k, TK_ADD(one, TK_MUL(TK_MUL(c3, x), x)));
        const TK_V b = TK_MUL(TK_MUL(TK_MUL(TK_MUL(half, x), S), TK_SUB(two, S)), du);
        TK_STORE(dinp + i, TK_MUL(TK_LOAD(dout + i), TK_ADD(TK_MUL(half, S), b)));
    }
    gelu_backward(dinp + i, inp + i, out + i, dout + i, n - i);
}

/* As adamw_update on n elements. */
TK_FN void TKF(adamw)(float *p, const float *g, float *m, float *v, size_t n, float lr,
                      float beta1, float beta2, float eps, float wd, float bc1, float bc2) {
    const TK_V b1 = TK_SET1(beta1), b2 = TK_SET1(beta2), o1 = TK_SET1(1.0f - beta1),
               o2 = TK_SET1(1.0f - beta2), vlr = TK_SET1(lr), veps = TK_SET1(eps),
               vwd = TK_SET1(wd), c1 = TK_SET1(bc1), c2 = TK_SET1(bc2);
    size_t i = 0;
    for (; i + TK_W <= n; i += TK_W) {
        const TK_V gi = TK_LOAD(g + i), pi = TK_LOAD(p + i);
        const TK_V mi = TK_ADD(TK_MUL(b1, TK_LOAD(m + i)), TK_MUL(o1, gi));
        const TK_V vi = TK_ADD(TK_MUL(b2, TK_LOAD(v + i)), TK_MUL(TK_MUL(o2, gi), gi));
        TK_STORE(m + i, mi);
        TK_STORE(v + i, vi);
        const TK_V mh = TK_DIV(mi, c1), vh = TK_DIV(vi, c2);
        const TK_V step = TK_ADD(TK_DIV(mh, TK_ADD(TK_SQRT(vh), veps)), TK_MUL(vwd, pi));
        TK_STORE(p + i, TK_SUB(pi, TK_MUL(vlr, step)));
    }
    adamw_update(p + i, g + i, m + i, v + i, n - i, lr, beta1, beta2, eps, wd, bc1, bc2);
}

/* As layernorm_param_backward on channels c0..c1-1. */
TK_FN void TKF(ln_param_bwd)(float *dweight, float *dbias, const float *dout, const float *inp,
                             const float *mean, const float *rstd, int T, int C, int c0, int c1) {
    int i = c0;
    for (; i + TK_W <= c1; i += TK_W) {
        TK_V dw = TK_LOAD(dweight + i), db = TK_LOAD(dbias + i);
        for (int t = 0; t < T; t++) {
            const TK_V dy = TK_LOAD(dout + (size_t)t * C + i);
            const TK_V nx = TK_MUL(TK_SUB(TK_LOAD(inp + (size_t)t * C + i), TK_SET1(mean[t])),
                                   TK_SET1(rstd[t]));
            dw = TK_ADD(dw, TK_MUL(nx, dy));
            db = TK_ADD(db, dy);
        }
        TK_STORE(dweight + i, dw);
        TK_STORE(dbias + i, db);
    }
    if (i < c1) layernorm_param_backward(dweight, dbias, dout, inp, mean, rstd, T, C, i, c1);
}

/* ---- attention backward, one sequence and one head -------------------------------------
 * As attention_head_backward in train_ops.c. Tiles may add terms whose weight is an
 * exact zero (a future cell of att or dpre): acc + 0·x = acc, so the bits do not change.
 * Needs hs a multiple of 2·TK_W. scratch: hs·Tp + 4·Tp floats, Tp = T rounded up to
 * TRAIN_LANES. */

/* rows (4 rows of Tp) = the datt of queries i0..i0+3 (fewer at the end: n rows):
 * dout_i · v_j for j = 0 .. (i0+3 rounded up to TRAIN_LANES), lanes across keys; vt holds
 * vᵀ (hs rows of Tp, zeros past T). A row's keys past its own i are computed too, so
 * that every lane the softmax reads holds a finite number; the four queries share each
 * load of vt. */
TK_INLINE void TKF(att_datt_rows)(float *rows, const float *dout, const float *vt, int i0, int n,
                                  int C, int hs, int Tp) {
    const int nb = ((i0 + n - 1) / TRAIN_LANES + 1) * (TRAIN_LANES / TK_W);
    const float *y[4];
    for (int r = 0; r < 4; r++) y[r] = dout + (size_t)(i0 + (r < n ? r : 0)) * C;
    for (int b0 = 0; b0 < nb; b0 += TK_DV) {
        const int nv = nb - b0 < TK_DV ? nb - b0 : TK_DV;
        TK_V acc[4][TK_DV];
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
            for (int u = 0; u < TK_DV; u++) acc[r][u] = TK_ZERO();
        for (int d = 0; d < hs; d++) {
            const float *c = vt + (size_t)d * Tp + (size_t)b0 * TK_W;
            TK_V x[TK_DV];
#pragma GCC unroll 4
            for (int u = 0; u < TK_DV; u++) x[u] = u < nv ? TK_LOAD(c + u * TK_W) : TK_ZERO();
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                const TK_V a = TK_SET1(y[r][d]);
#pragma GCC unroll 4
                for (int u = 0; u < TK_DV; u++) acc[r][u] = TK_FMA(a, x[u], acc[r][u]);
            }
        }
        for (int r = 0; r < n; r++)
            for (int u = 0; u < nv; u++)
                TK_STORE(rows + (size_t)r * Tp + (size_t)(b0 + u) * TK_W, acc[r][u]);
    }
}

/* dpre (T) of query i from its datt row and att row (T), as softmax_row_backward. */
TK_INLINE void TKF(att_softmax_row)(float *dpre, const float *row, const float *att, int i, int T,
                                    float s) {
    enum { NP = TRAIN_LANES / TK_W };
    TK_V part[NP];
    for (int u = 0; u < NP; u++) part[u] = TK_ZERO();
    const int ng = i / TRAIN_LANES + 1;
    for (int g = 0; g < ng; g++) {
        const int j = g * TRAIN_LANES;
        float pad[TRAIN_LANES] = {0};
        const float *a = att + j;
        if (j + TRAIN_LANES > T) { /* the row ends inside this group: zeros after it */
            memcpy(pad, a, sizeof(float) * (size_t)(T - j));
            a = pad;
        }
        for (int u = 0; u < NP; u++)
            part[u] = TK_FMA(TK_LOAD(a + u * TK_W), TK_LOAD(row + j + u * TK_W), part[u]);
    }
    float lanes[TRAIN_LANES];
    for (int u = 0; u < NP; u++) TK_STORE(lanes + u * TK_W, part[u]);
    float dot = 0.0f;
    for (int l = 0; l < TRAIN_LANES; l++) dot += lanes[l];
    const TK_V vdot = TK_SET1(dot), vs = TK_SET1(s);
    int j = 0;
    for (; j + TK_W <= i + 1; j += TK_W)
        TK_STORE(dpre + j, TK_DIV(TK_MUL(TK_LOAD(att + j), TK_SUB(TK_LOAD(row + j), vdot)), vs));
    for (; j <= i; j++) dpre[j] = att[j] * (row[j] - dot) / s;
    for (; j < T; j++) dpre[j] = 0.0f;
}

/* dq rows i0..i0+R-1, columns d0..d0+2·TK_W-1: Σ_j dpre[i][j]·k_j for j ≤ i0+R-1. */
TK_INLINE void TKF(att_dq_tile)(float *dq, const float *dpre, const float *k, int i0, int R, int T,
                                int C) {
    TK_V acc[TK_MRQ][2];
#pragma GCC unroll 8
    for (int r = 0; r < TK_MRQ; r++) acc[r][0] = acc[r][1] = TK_ZERO();
    const int jend = i0 + R;
    for (int j = 0; j < jend; j++) {
        const TK_V k0 = TK_LOAD(k + (size_t)j * C), k1 = TK_LOAD(k + (size_t)j * C + TK_W);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            const TK_V x = TK_SET1(dpre[(size_t)(i0 + r) * T + j]);
            acc[r][0] = TK_FMA(x, k0, acc[r][0]);
            acc[r][1] = TK_FMA(x, k1, acc[r][1]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        TK_STORE(dq + (size_t)(i0 + r) * C, acc[r][0]);
        TK_STORE(dq + (size_t)(i0 + r) * C + TK_W, acc[r][1]);
    }
}

/* Rows j0..j0+R-1 of dx (dk or dv), columns d0..d0+2·TK_W-1: dx[j] = Σ_{i ≥ j} w[i][j]·x[i]
 * over i = j0 .. T-1, with w = dpre and x = q (dk) or w = att and x = dout (dv). One matrix
 * at a time, so that the T rows of x this pass streams (T·2·TK_W floats) stay in L1. */
TK_INLINE void TKF(att_dkv_tile)(float *dx, const float *w, const float *x, int j0, int R, int T,
                                 int C) {
    TK_V acc[TK_MRK][2];
#pragma GCC unroll 12
    for (int r = 0; r < TK_MRK; r++) acc[r][0] = acc[r][1] = TK_ZERO();
    for (int i = j0; i < T; i++) {
        const float *xi = x + (size_t)i * C, *wi = w + (size_t)i * T + j0;
        const TK_V x0 = TK_LOAD(xi), x1 = TK_LOAD(xi + TK_W);
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            const TK_V a = TK_SET1(wi[r]);
            acc[r][0] = TK_FMA(a, x0, acc[r][0]);
            acc[r][1] = TK_FMA(a, x1, acc[r][1]);
        }
    }
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        TK_STORE(dx + (size_t)(j0 + r) * C, acc[r][0]);
        TK_STORE(dx + (size_t)(j0 + r) * C + TK_W, acc[r][1]);
    }
}

TK_FN void TKF(att_dq_full)(float *dq, const float *dpre, const float *k, int i0, int T, int C) {
    TKF(att_dq_tile)(dq, dpre, k, i0, TK_MRQ, T, C);
}
TK_FN void TKF(att_dkv_full)(float *dx, const float *w, const float *x, int j0, int T, int C) {
    TKF(att_dkv_tile)(dx, w, x, j0, TK_MRK, T, C);
}
TK_FN void TKF(att_dkv_any)(float *dx, const float *w, const float *x, int j0, int R, int T, int C) {
    TKF(att_dkv_tile)(dx, w, x, j0, R, T, C);
}

/* One sequence, one head: pointers at the head's first column (rows C apart), att and
 * dpre at the head's (T,T) block. */
TK_FN void TKF(att_head)(float *dq, float *dk, float *dv, float *dpre, const float *dout,
                         const float *q, const float *k, const float *v, const float *att, int T,
                         int C, int hs, float s, float *scratch) {
    const int Tp = (T + TRAIN_LANES - 1) / TRAIN_LANES * TRAIN_LANES;
    float *vt = scratch, *rows = scratch + (size_t)hs * Tp;
    for (int d = 0; d < hs; d++) {
        float *vd = vt + (size_t)d * Tp;
        for (int j = 0; j < T; j++) vd[j] = v[(size_t)j * C + d];
        for (int j = T; j < Tp; j++) vd[j] = 0.0f;
    }
    for (int i0 = 0; i0 < T; i0 += 4) {
        const int n = T - i0 < 4 ? T - i0 : 4;
        TKF(att_datt_rows)(rows, dout, vt, i0, n, C, hs, Tp);
        for (int r = 0; r < n; r++) {
            const int i = i0 + r;
            if (i + TK_PF < T) /* att has not been read since the forward: ask for it early */
                for (int j = 0; j <= i + TK_PF; j += 16)
                    _mm_prefetch((const char *)(att + (size_t)(i + TK_PF) * T + j), _MM_HINT_T0);
            TKF(att_softmax_row)(dpre + (size_t)i * T, rows + (size_t)r * Tp, att + (size_t)i * T, i, T, s);
        }
    }
    for (int d0 = 0; d0 < hs; d0 += 2 * TK_W) {
        int i0 = 0;
        for (; i0 + TK_MRQ <= T; i0 += TK_MRQ) TKF(att_dq_full)(dq + d0, dpre, k + d0, i0, T, C);
        if (i0 < T) TKF(att_dq_tile)(dq + d0, dpre, k + d0, i0, T - i0, T, C);
        for (int m = 0; m < 2; m++) { /* dk from dpre and q, then dv from att and dout */
            float *dx = (m ? dv : dk) + d0;
            const float *w = m ? att : dpre, *x = (m ? dout : q) + d0;
            int j0 = 0;
            for (; j0 + TK_MRK <= T; j0 += TK_MRK) TKF(att_dkv_full)(dx, w, x, j0, T, C);
            if (j0 < T) TKF(att_dkv_any)(dx, w, x, j0, T - j0, T, C);
        }
    }
}

#undef TK_FN
#undef TK_INLINE
#undef TKF
