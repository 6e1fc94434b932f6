/* matrix_figs.h — the heatmap figures of `kvscope run --heatmaps`, for slides: each a
 * title (phase, step, layer, head, what the value is), the token texts on its axes
 * (toklabel.h), a colour bar with its range, ≥ 800 px on its short side; drawn once
 * by figure.h into a PNG and its SVG twin. Every text is at least 23 px, 18 px when the
 * 1600 × 900 canvas fills a 1280 × 720 slide: every row and column is labelled while its
 * cells are tall (wide) enough for that, else every k-th (k = 2, 3, 4, 5, 10, 20, 25,
 * 50, …) with a tick mark, and the axis caption or the subtitle says so ("every 4th
 * token labelled"). The square's cells are square (queries and keys are the same
 * tokens); Q, Kᵀ and V are drawn to scale (one cell size for a token and a channel).
 *
 * Colours are those of colormap.h: weights in [0, 1] viridis, signed values cool–warm
 * over [-R, R] (clipped beyond), masked (future) cells COLOR_MASKED grey, evicted
 * cells white hatched black, rows not computed yet white. Every cell is a solid
 * rectangle on whole pixels, so the pixel at a cell's centre has exactly its colour;
 * each figure's Description chunk says where its main matrix is
 * ("grid=x,y,cw,ch": top-left pixel and cell size) for tests and tools.
 *
 * The figures:
 *   square  T×T attention (prefill weights or scores; the staircase after a decode
 *           step, on a T_max × T_max canvas that every step shares)
 *   qkv     Q (T×hs), Kᵀ (hs×T), V (T×hs) on one scale, each as tall as the canvas
 *           allows (Kᵀ's channel cells have their own height; its token labels and
 *           the colour bar under it); Description: grid (Q), grid_k=x,y,cw,ch, grid_v
 *   step    one attention step of one head from its real values: decode (q 1×hs
 *           against the K cache t×hs, the 1×t scores and weights, the V cache, the
 *           output z) or prefill (Q, K, V T×hs; scores and weights T×T; Z T×hs)
 *   heads   every head's T×T weights as small multiples with one colour bar
 */
#ifndef KVSCOPE_MATRIX_FIGS_H
#define KVSCOPE_MATRIX_FIGS_H

#include <stddef.h>

#include "png_out.h"
#include "toklabel.h"

enum { HF_VALUE, HF_MASKED, HF_EVICTED, HF_BLANK }; /* what a cell shows */

/* A matrix: entry (r, c) = v[r·sr + c·sc]; state NULL (all values) or rows × cols
 * HF_* codes; R = 0: weights (viridis [0, 1]), else cool–warm [-R, R]. */
typedef struct {
    int rows, cols;
    const float *v;
    size_t sr, sc;
    const unsigned char *state;
    float R;
} HfMatrix;

/* What every figure names: its place in the run and the tokens. */
typedef struct {
    const TokenTexts *tok;
    int layer, head;
    int step;   /* 0: prefill */
    int T0;     /* prompt tokens */
    const char *head_name;   /* what the head is ("induction head"), or NULL */
    const char *prompt_name; /* what the prompt is ("100 random bytes ×2"), or NULL */
} HfWhere;

/* The attention square. Row r is query position r, column c key position c (or
 * cache slot c when slots = 1: a prefill or decode without eviction). */
typedef struct {
    HfWhere at;
    HfMatrix m;          /* rows = cols = the canvas' size (T or T_max) */
    int nrows;           /* rows computed so far (the rest are blank) */
    int scores;          /* 1: scaled scores; 0: weights */
    int new0, new_n;     /* rows added by this step (framed orange); new_n 0: none */
    int evicted;         /* some cell is HF_EVICTED: say what the hatch means */
    int steps;           /* decode steps of the run (for "step s of S"); 0: prefill */
} HfSquare;

typedef struct {
    HfWhere at;
    int T, hs;
    const float *q, *k, *v; /* [T, row] with the head's hs numbers at offset 0 */
    size_t row;             /* floats from one token to the next (NH·hs) */
    float R;
} HfQkv;

/* One attention step of one head. n = 1 (decode) or n = t (prefill). */
typedef struct {
    HfWhere at;
    int n, t, hs;
    int t_max;              /* rows of the canvas: the longest cache of the run */
    int pos0;               /* position of the first query row */
    const int *slot_pos;    /* position held by each of the t cache slots; NULL: slot i = i */
    const float *q, *k, *v, *z; /* q, z: [n, row]; k, v: [t, row] */
    size_t row;
    const float *s, *w;     /* scores, weights: [n, t] */
    int vis0;               /* query row i sees slots 0 .. vis0 + i (the rest masked) */
    float R, Rs;            /* ranges of q/k/v/z and of the scores */
} HfStep;

typedef struct {
    HfWhere at;
    int NH, T;
    const float *w;         /* [NH, T, T] weights, future = 0 (masked by position) */
} HfHeads;

/* Each writes png_path and (when not NULL) svg_path; 0, or -1 with err. title and desc
 * (may be NULL) are filled with the texts of the PNG chunks (at least 256 bytes each). */
int heatfig_square(const HfSquare *f, const char *png_path, const char *svg_path, char *err,
                   size_t errsize);
int heatfig_qkv(const HfQkv *f, const char *png_path, const char *svg_path, char *err,
                size_t errsize);
int heatfig_step(const HfStep *f, const char *png_path, const char *svg_path, char *err,
                 size_t errsize);
int heatfig_heads(const HfHeads *f, const char *png_path, const char *svg_path, char *err,
                  size_t errsize);

/* The staircase canvas as RGB pixels (for the GIF's frames): w × h = HEATFIG_W × HEATFIG_H. */
#define HEATFIG_W 1600
#define HEATFIG_H 900
int heatfig_square_rgb(const HfSquare *f, unsigned char *rgb);

#endif
