/* kernels_simd.h — the vector matmul and prefill attention of kernels.c, written once
 * for two widths.
 *
 * Not a header to include elsewhere: kernels.c includes it twice, once for AVX2 + FMA
 * (KS_W 8) and once for AVX-512F (KS_W 16), after defining
 *   KS_SUFFIX  the name suffix (_avx2, _512)    KS_TARGET  the target attribute string
 *   KS_W       floats per vector                KS_V       the vector type
 *   KS_TR      rows of a prefill matmul tile    KS_NP      panels a decode walks at once
 *   KS_AV      vectors per query in a pass of prefill attention: keys at once for the
 *              scores, dimensions at once for the sums over the values
 *   KS_ZERO() KS_LOAD(p) KS_STORE(p, x) KS_SET1(x) KS_FMA(a, b, c) = a·b + c, rounded once
 *   KS_STORE_FIRST(p, n, x)  the first n (0 < n < KS_W) lanes of x only
 *   KS_ADD(a, b) KS_DIV(a, b)
 *   KS_FP16(p) KS_BF16(p)  KS_W halves at p (uint16_t *) as floats, exactly
 *   KS_GELU(x)  gelu_forward's bits in every lane
 *   KS_SOFTMAX_ROWS8(sc, pa, pos0, T, mx)  softmax_rows8_W at this width
 *   KS_KEEP_GREATER(m, v)  keep_greater_W     KS_FIRST_OR(x, n, fill)  first_or_W
 * (it undefines them at its end, ready for the next width) and what kernels.c shares
 * between the widths (elem_size, load1w, kout, prefetch_share, PanelFn,
 * DecodeFn, MM_KC, AT_R, KERN_PAR_MIN).
 * Lanes are independent outputs, each summed in the plain order of ops.c: the bytes
 * are those of matmul_forward and attention_forward at every width.
 */

#define KS_CAT2(a, b) a##b
#define KS_CAT(a, b) KS_CAT2(a, b)
#define KSF(name) KS_CAT(name, KS_SUFFIX)
#define KS_FN __attribute__((target(KS_TARGET))) static
#define KS_INLINE __attribute__((target(KS_TARGET), always_inline)) static inline

/* ---- matmul: out (T,OC) = inp (T,C) · w (C,OC) + bias, w in column panels ----------
 * Plain order per element: y = 0; for c: y = fmaf(x[c], w[c][o], y); then y += bias[o].
 * Output o of row t goes where ko says (kout); with KERN_GELU, gelu(y) instead of y,
 * with KERN_ADD out + y (kern_matmul_into keeps the sums of such a matmul to one block). A
 * part of ko holds a multiple of KS_W outputs, so each vector store lands in one part.
 * A prefill tile is KS_TR rows × 3 vectors (AVX2: 4 × 24 columns, half a panel;
 * AVX-512: 8 × 48, the whole panel): the accumulators, 3 weights and the broadcast
 * input fill the 16 or 32 vector registers, and each weight load serves KS_TR rows. */

/* Weights i .. i+KS_W-1 of p as floats. */
KS_INLINE KS_V KSF(loadw)(const void *p, size_t i, Dtype dt) {
    if (dt == DT_FP32) return KS_LOAD((const float *)p + i);
    if (dt == DT_FP16) return KS_FP16((const uint16_t *)p + i);
    return KS_BF16((const uint16_t *)p + i);
}

/* KS_W outputs from col of row t, y their sums plus bias, stored as how says (kput's
 * operations in lanes). */
KS_INLINE void KSF(put)(const KernOut *ko, KernStore how, size_t t, int col, KS_V y) {
    float *p = kout(ko, t, col);
    if (how == KERN_GELU) y = KS_GELU(y);
    if (how == KERN_ADD) y = KS_ADD(KS_LOAD(p), y);
    KS_STORE(p, y);
}

/* Rows 0..R-1 (R ≤ KS_TR) against 3·KS_W columns of the panel block blk (kc rows of
 * KERN_PANEL), output columns o..o+3·KS_W-1. Input c of row i is x[i·rs + c]: the rows
 * where they are, not copied into tiles input-major first (that cost more than it saved:
 * NOTES.md). The sums run over C in
 * blocks of kc: between blocks the partial sums wait in out as floats, the values the plain
 * loop holds in y[o] at that point, so blocking changes no rounding. first: the block
 * starts the sums at 0; last: it adds the bias (and applies GELU when gelu). pf: npf
 * lines of the next block to fetch into L2 meanwhile (prefetch_share). */
KS_INLINE void KSF(mm_tile)(const KernOut *ko, size_t t, const float *x, size_t rs,
                            const float *blk, const float *bias, int R, int kc, int o,
                            int first, int last, const char *pf, int npf) {
    const KernStore how = last ? ko->how : KERN_SET; /* partial sums wait as they are */
    /* the values a residual add reads at the end, fetched into L1 while the sums run:
     * read only then, they come from L3 (NOTES.md) */
    if (how == KERN_ADD)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++) {
            const float *p = kout(ko, t, o + KS_W * v);
#pragma GCC unroll 8
            for (int i = 0; i < R; i++)
                _mm_prefetch((const char *)(p + (size_t)i * ko->ld), _MM_HINT_T0);
        }
    KS_V acc[KS_TR][3];
#pragma GCC unroll 8
    for (int i = 0; i < R; i++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++)
            acc[i][v] = first ? KS_ZERO() : KS_LOAD(kout(ko, t + i, o + KS_W * v));
    /* one line every kc / npf steps: fetches in flight crowd out the tile's own loads. At
     * most one a step: where a share outnumbers the steps (few tiles a block: T < 24 on
     * AVX-512 with float32 panels) the rest is read when the next block's tiles need it. */
    const int every = npf && kc > npf ? kc / npf : 1;
    int k = 0, next = 0;
    for (int c = 0; c < kc; c++) {
        if (c == next && k < npf) {
            _mm_prefetch(pf + 64 * k++, _MM_HINT_T1);
            next += every;
        }
        const float *wr = blk + (size_t)c * KERN_PANEL;
        const KS_V w0 = KS_LOAD(wr), w1 = KS_LOAD(wr + KS_W), w2 = KS_LOAD(wr + 2 * KS_W);
#pragma GCC unroll 8
        for (int i = 0; i < R; i++) {
            const KS_V xb = KS_SET1(x[(size_t)i * rs + (size_t)c]);
            acc[i][0] = KS_FMA(xb, w0, acc[i][0]);
            acc[i][1] = KS_FMA(xb, w1, acc[i][1]);
            acc[i][2] = KS_FMA(xb, w2, acc[i][2]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; i++)
#pragma GCC unroll 3
        for (int v = 0; v < 3; v++) {
            KS_V y = acc[i][v];
            if (last && bias) y = KS_ADD(y, KS_LOAD(bias + o + KS_W * v));
            KSF(put)(ko, how, t + i, o + KS_W * v, y);
        }
}

/* Full tiles with R a constant, so that the compiler unrolls the row loop and keeps the
 * accumulators in registers; leftover rows one at a time. */
KS_FN void KSF(tile_rows)(const KernOut *ko, size_t t, const float *inp, const float *blk,
                          const float *bias, int C, int kc, int o, int first, int last,
                          const char *pf, int npf) {
    KSF(mm_tile)(ko, t, inp, (size_t)C, blk, bias, KS_TR, kc, o, first, last, pf, npf);
}
KS_FN void KSF(tile_one)(const KernOut *ko, size_t t, const float *inp, const float *blk,
                         const float *bias, int kc, int o, int first, int last) {
    KSF(mm_tile)(ko, t, inp, 0, blk, bias, 1, kc, o, first, last, NULL, 0);
}

/* Decode: one row x (C) against KS_NP neighbouring full panels from pan (C rows of 48
 * each, KS_NP·C·48 contiguous weights), into outputs o..o+48·KS_NP-1 of row t plus bias
 * (may be NULL). One walk down all of them at once: KS_NP streams in flight keep more of the
 * memory busy than one (NOTES.md), and the hardware prefetchers follow each stream
 * without help. np: KS_NP,
 * or 1 for a panel left over. */
KS_INLINE void KSF(mv_group)(const KernOut *ko, size_t t, int o, const float *x,
                             const void *pan, Dtype dt, const float *bias, int C,
                             const int np) {
    enum { NA = KERN_PANEL / KS_W };
    KS_V a[KS_NP][NA];
#pragma GCC unroll 4
    for (int j = 0; j < np; j++)
#pragma GCC unroll 6
        for (int v = 0; v < NA; v++) a[j][v] = KS_ZERO();
    const size_t stride = (size_t)C * KERN_PANEL; /* from one panel to the next */
    for (int c = 0; c < C; c++) {
        const size_t i = (size_t)c * KERN_PANEL;
        const KS_V b = KS_SET1(x[c]);
#pragma GCC unroll 4
        for (int j = 0; j < np; j++)
#pragma GCC unroll 6
            for (int v = 0; v < NA; v++)
                a[j][v] = KS_FMA(b, KSF(loadw)(pan, j * stride + i + KS_W * v, dt), a[j][v]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < np; j++)
#pragma GCC unroll 6
        for (int v = 0; v < NA; v++) {
            const int k = KERN_PANEL * j + KS_W * v;
            KSF(put)(ko, ko->how, t, o + k, bias ? KS_ADD(a[j][v], KS_LOAD(bias + k)) : a[j][v]);
        }
}

/* The last panel when it is narrower than 48 (pw columns, output columns o..o+pw-1),
 * all T rows: KS_W columns at a time, then one at a time. */
KS_FN void KSF(narrow)(const KernOut *ko, const float *inp, const void *pan, Dtype dt,
                       const float *bias, int T, int C, int o, int pw) {
    for (int t = 0; t < T; t++) {
        const float *x = inp + (size_t)t * C;
        int k = 0;
        for (; k + KS_W <= pw; k += KS_W) {
            KS_V acc = KS_ZERO();
            for (int c = 0; c < C; c++)
                acc = KS_FMA(KS_SET1(x[c]), KSF(loadw)(pan, (size_t)c * pw + k, dt), acc);
            if (bias) acc = KS_ADD(acc, KS_LOAD(bias + o + k));
            KSF(put)(ko, ko->how, (size_t)t, o + k, acc);
        }
        for (; k < pw; k++) {
            float s = 0.0f;
            for (int c = 0; c < C; c++) s = fmaf(x[c], load1w(pan, (size_t)c * pw + k, dt), s);
            if (bias) s += bias[o + k];
            kput(ko, (size_t)t, o + k, s);
        }
    }
}

/* The block of a prefill: panel rows c0 .. c0+kc-1 as floats. Float32 panels are
 * read where they are; halves are converted once into buf (MM_KC·48 floats, aligned),
 * which every tile of the block then reads. */
KS_INLINE const float *KSF(block_floats)(float *buf, const void *pan, Dtype dt, int c0,
                                         int kc) {
    const size_t i0 = (size_t)c0 * KERN_PANEL;
    if (dt == DT_FP32) return (const float *)pan + i0;
    for (size_t i = 0; i < (size_t)kc * KERN_PANEL; i += KS_W)
        KS_STORE(buf + i, KSF(loadw)(pan, i0 + i, dt));
    return buf;
}

/* One full panel pan (output columns o..o+47) against all T ≥ KS_TR input rows.
 * Prefill keeps MM_KC rows of the panel (144 KiB) in L2 while every tile of KS_TR input
 * rows passes by, for each 3·KS_W columns of the panel. */
KS_INLINE void KSF(panel)(const KernOut *ko, const float *inp, const void *pan, Dtype dt,
                          const float *bias, int T, int C, int o, const void *end) {
    float buf[MM_KC * KERN_PANEL] __attribute__((aligned(64))); /* 144 KiB of stack */
    const size_t es = elem_size(dt);
    const int Tfull = T - T % KS_TR, span = 3 * KS_W;
    for (int c0 = 0; c0 < C; c0 += MM_KC) {
        const int kc = C - c0 < MM_KC ? C - c0 : MM_KC, first = c0 == 0, last = c0 + kc == C;
        const float *blk = KSF(block_floats)(buf, pan, dt, c0, kc);
        const char *next = (const char *)pan + (size_t)(c0 + kc) * KERN_PANEL * es;
        const int ntiles = KERN_PANEL / span * (Tfull / KS_TR);
        int tile = 0;
        for (int h = 0; h < KERN_PANEL; h += span) {
            for (int t = 0; t < Tfull; t += KS_TR, tile++) {
                int npf;
                const char *pf = prefetch_share(next, end, es, tile, ntiles, &npf);
                KSF(tile_rows)(ko, (size_t)t, inp + (size_t)t * C + c0, blk + h, bias, C, kc,
                               o + h, first, last, pf, npf);
            }
            for (int t = Tfull; t < T; t++)
                KSF(tile_one)(ko, (size_t)t, inp + (size_t)t * C + c0, blk + h, bias, kc, o + h,
                              first, last);
        }
    }
}

/* Decode (T < KS_TR) over panel unit u of npan: units below ng are groups of KS_NP
 * full panels, then the panels left over one by one, the last maybe narrow; each row
 * of the input walks the unit's weights in turn. */
KS_INLINE void KSF(decode_unit)(const KernOut *ko, const float *inp, const void *wp, Dtype dt,
                                const float *bias, int T, int C, int OC, int u, int ng) {
    const int np = u < ng ? KS_NP : 1, o = u < ng ? u * KS_NP * KERN_PANEL
                                                  : (ng * KS_NP + u - ng) * KERN_PANEL;
    const int pw = OC - o < KERN_PANEL ? OC - o : KERN_PANEL;
    const void *pan = (const char *)wp + (size_t)o * C * elem_size(dt);
    if (pw < KERN_PANEL) {
        KSF(narrow)(ko, inp, pan, dt, bias, T, C, o, pw);
        return;
    }
    for (int t = 0; t < T; t++) { /* np a constant in each call, for the unrolling */
        const float *x = inp + (size_t)t * C, *b = bias ? bias + o : NULL;
        if (np == KS_NP) KSF(mv_group)(ko, (size_t)t, o, x, pan, dt, b, C, KS_NP);
        else KSF(mv_group)(ko, (size_t)t, o, x, pan, dt, b, C, 1);
    }
}

/* panel and decode_unit for each weight type, the type a constant so that its tests
 * fold away. */
#define KS_BY_TYPE(name, DT)                                                                \
    KS_FN void KSF(panel_##name)(const KernOut *ko, const float *inp, const void *pan,      \
                                 const float *bias, int T, int C, int o, const void *end) {  \
        KSF(panel)(ko, inp, pan, DT, bias, T, C, o, end);                                    \
    }                                                                                        \
    KS_FN void KSF(decode_##name)(const KernOut *ko, const float *inp, const void *wp,      \
                                  const float *bias, int T, int C, int OC, int u, int ng) {  \
        KSF(decode_unit)(ko, inp, wp, DT, bias, T, C, OC, u, ng);                            \
    }
KS_BY_TYPE(fp32, DT_FP32)
KS_BY_TYPE(fp16, DT_FP16)
KS_BY_TYPE(bf16, DT_BF16)
#undef KS_BY_TYPE

/* Threads take whole panels (decode: whole groups), so each reads one contiguous run of
 * the weights; the last panel, when narrower than 48, goes through narrow. */
KS_FN void KSF(matmul_run)(Dtype dt, const KernOut *ko, const float *inp, const void *wp,
                           const float *bias, int T, int C, int OC) {
    const int npan = (OC + KERN_PANEL - 1) / KERN_PANEL;
    if (T < KS_TR) {
        DecodeFn *const unit = dt == DT_FP32   ? KSF(decode_fp32)
                               : dt == DT_FP16 ? KSF(decode_fp16) : KSF(decode_bf16);
        const int ng = OC / KERN_PANEL / KS_NP, nu = npan - ng * (KS_NP - 1);
        OMP(omp parallel for schedule(static) if((double)T * C * OC > KERN_PAR_MIN))
        for (int u = 0; u < nu; u++) unit(ko, inp, wp, bias, T, C, OC, u, ng);
        return;
    }
    PanelFn *const panel = dt == DT_FP32   ? KSF(panel_fp32)
                           : dt == DT_FP16 ? KSF(panel_fp16) : KSF(panel_bf16);
    const size_t es = elem_size(dt);
    const void *end = (const char *)wp + (size_t)C * OC * es;
    OMP(omp parallel for schedule(static) if((double)T * C * OC > KERN_PAR_MIN))
    for (int j = 0; j < npan; j++) {
        const int o = j * KERN_PANEL, pw = OC - o < KERN_PANEL ? OC - o : KERN_PANEL;
        const void *pan = (const char *)wp + (size_t)o * C * es;
        if (pw < KERN_PANEL) KSF(narrow)(ko, inp, pan, dt, bias, T, C, o, pw);
        else panel(ko, inp, pan, bias, T, C, o, end);
    }
}

/* ---- prefill attention: 8 queries of one head ---------------------------------------
 * Queries pos0..pos0+7 (AT_R) of one head: q, sc, pa, out point at the first one's row
 * and step by C (q and out) and T (sc and pa). Scores: the keys any query of the block
 * sees (below pos0+8) KS_AV·KS_W at a time (each q[r][d] broadcast once for KS_AV
 * vectors of keys), read from the head's keys transposed once per call (kT: hs rows of
 * ldk, kT[d·ldk + t] = dimension d of key t, so the KS_W keys of one d are one load),
 * lane j summing over d in order; each query stores the lanes of the keys
 * it sees (the staircase: a query's later lanes are computed, never stored). Values:
 * every query sums over t = 0..pos0 together (lanes along d, each v_t loaded once for 8
 * queries), then adds its own last few keys, in order. */

/* The 8 queries' sums, n ≤ KS_AV vectors each: zeroed (zero8), then one step (step8):
 * acc[r][j] += a[r·as] · b[j], each a[r·as] broadcast once for the n vectors of b. */
KS_INLINE void KSF(zero8)(KS_V acc[AT_R][KS_AV], int n) {
#pragma GCC unroll 8
    for (int r = 0; r < AT_R; r++)
#pragma GCC unroll 2
        for (int j = 0; j < n; j++) acc[r][j] = KS_ZERO();
}
KS_INLINE void KSF(step8)(KS_V acc[AT_R][KS_AV], const float *a, size_t as, const KS_V *b,
                          int n) {
#pragma GCC unroll 8
    for (int r = 0; r < AT_R; r++) {
        const KS_V x = KS_SET1(a[(size_t)r * as]);
#pragma GCC unroll 2
        for (int j = 0; j < n; j++) acc[r][j] = KS_FMA(x, b[j], acc[r][j]);
    }
}

/* out[r][d .. d + nv·KS_W) for the 8 queries, nv ≤ KS_AV vectors of sums per query. */
KS_INLINE void KSF(block_values)(float *out, const float *pa, const float *vc, int pos0,
                                 int T, int C, int d, int nv) {
    KS_V acc[AT_R][KS_AV];
    KSF(zero8)(acc, nv);
    for (int t = 0; t <= pos0; t++) {
        const float *vt = vc + (size_t)t * C + d;
        KS_V vv[KS_AV];
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) vv[v] = KS_LOAD(vt + KS_W * v);
        KSF(step8)(acc, pa + t, (size_t)T, vv, nv);
    }
    /* query r also sees keys pos0+1 .. pos0+r */
#pragma GCC unroll 8
    for (int r = 1; r < AT_R; r++)
        for (int t = pos0 + 1; t <= pos0 + r; t++) {
            const KS_V w = KS_SET1(pa[(size_t)r * T + t]);
#pragma GCC unroll 2
            for (int v = 0; v < nv; v++)
                acc[r][v] = KS_FMA(w, KS_LOAD(vc + (size_t)t * C + d + KS_W * v), acc[r][v]);
        }
#pragma GCC unroll 8
    for (int r = 0; r < AT_R; r++)
#pragma GCC unroll 2
        for (int v = 0; v < nv; v++) KS_STORE(out + (size_t)r * C + d + KS_W * v, acc[r][v]);
}

/* Scores of the 8 queries against keys t .. t + nk·KS_W - 1 (nk ≤ KS_AV vectors of
 * keys), divided by div and stored as far as each query sees; query r's stored scores
 * kept in mx[r] where they are greater (keys it does not see as -inf). */
KS_INLINE void KSF(block_scores)(float *sc, KS_V mx[AT_R], const float *q, const float *kT,
                                 int ldk, int pos0, int T, int C, int hs, KS_V vdiv, int t,
                                 const int nk) {
    KS_V acc[AT_R][KS_AV];
    KSF(zero8)(acc, nk);
    for (int d = 0; d < hs; d++) {
        KS_V kd[KS_AV];
#pragma GCC unroll 2
        for (int j = 0; j < nk; j++) kd[j] = KS_LOAD(kT + (size_t)d * ldk + t + KS_W * j);
        KSF(step8)(acc, q + d, (size_t)C, kd, nk);
    }
#pragma GCC unroll 8
    for (int r = 0; r < AT_R; r++)
#pragma GCC unroll 2
        for (int j = 0; j < nk; j++) {
            const int t0 = t + KS_W * j, seen = pos0 + r + 1 - t0; /* keys t0.. that r sees */
            const KS_V y = KS_DIV(acc[r][j], vdiv);
            if (seen >= KS_W) {
                KS_STORE(sc + (size_t)r * T + t0, y);
                mx[r] = KS_KEEP_GREATER(mx[r], y);
            } else if (seen > 0) {
                KS_STORE_FIRST(sc + (size_t)r * T + t0, seen, y);
                mx[r] = KS_KEEP_GREATER(mx[r], KS_FIRST_OR(y, seen, KS_SET1(-INFINITY)));
            }
        }
}

KS_FN void KSF(attention_block)(float *out, float *sc, float *pa, const float *q,
                                const float *kT, int ldk, const float *vc, int pos0, int T,
                                int C, int hs, float div) {
    const size_t qs = (size_t)C;
    const KS_V vdiv = KS_SET1(div);
    KS_V mx[AT_R]; /* each query's max score so far, in lanes */
    for (int r = 0; r < AT_R; r++) mx[r] = KS_SET1(-INFINITY);
    /* the keys any query of the block sees: below pos0 + AT_R; t + KS_W·nk ≤ ldk, as
     * kT's rows are padded to whole vectors */
    int t = 0;
    for (; t + KS_W * (KS_AV - 1) < pos0 + AT_R; t += KS_W * KS_AV)
        KSF(block_scores)(sc, mx, q, kT, ldk, pos0, T, C, hs, vdiv, t, KS_AV);
    for (; t < pos0 + AT_R; t += KS_W)
        KSF(block_scores)(sc, mx, q, kT, ldk, pos0, T, C, hs, vdiv, t, 1);
    KS_SOFTMAX_ROWS8(sc, pa, pos0, T, mx);
    int d = 0;
    for (; d + KS_AV * KS_W <= hs; d += KS_AV * KS_W)
        KSF(block_values)(out, pa, vc, pos0, T, (int)qs, d, KS_AV);
    for (; d + KS_W <= hs; d += KS_W) KSF(block_values)(out, pa, vc, pos0, T, (int)qs, d, 1);
    for (; d < hs; d++)
        for (int r = 0; r < AT_R; r++) {
            const float *pr = pa + (size_t)r * T;
            float s = 0.0f;
            for (int t = 0; t <= pos0 + r; t++) s = fmaf(pr[t], vc[(size_t)t * C + d], s);
            out[r * qs + d] = s;
        }
}

/* the parameters of this width: the next inclusion defines its own */
#undef KS_SUFFIX
#undef KS_TARGET
#undef KS_W
#undef KS_V
#undef KS_TR
#undef KS_AV
#undef KS_NP
#undef KS_ZERO
#undef KS_LOAD
#undef KS_STORE
#undef KS_STORE_FIRST
#undef KS_SET1
#undef KS_FMA
#undef KS_ADD
#undef KS_DIV
#undef KS_FP16
#undef KS_BF16
#undef KS_GELU
#undef KS_SOFTMAX_ROWS8
#undef KS_KEEP_GREATER
#undef KS_FIRST_OR
