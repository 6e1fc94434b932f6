/* attn_observer.h — an observer that draws attention and Q/K/V, step by step.
 *
 * Subscribes to hook_q, hook_k, hook_v, cache_k, cache_v, hook_attn_scores,
 * hook_pattern and hook_z; the engine does not know it exists. Two kinds of output:
 *
 * Figures (the default; attn_observer_figs.c, drawn by matrix_figs.h as NAME.png + NAME.svg):
 * for every selected layer l and head h
 *   prefill_attn_L{l}_H{hh}    T×T weights        prefill_scores_L{l}_H{hh}  T×T scores
 *   prefill_qkv_L{l}_H{hh}     Q, Kᵀ, V on one scale
 *   prefill_step_L{l}_H{hh}    the whole prefill of the head, Q, K, V to Z
 *   prefill_heads_L{l}         every head's weights (once per layer, when NH > 1)
 *   decode_s{sss}_step_L{l}_H{hh}   the step: q against the K and V cache, scores,
 *                                    weights, z; a canvas of T_max rows for every step
 *   decode_s{sss}_stair_L{l}_H{hh}  the staircase so far on a T_max × T_max canvas
 *   decode_stair_L{l}_H{hh}.gif     the staircase figures as frames (prefill, one per
 *                                   step, the last held 2 s), in a 256-colour palette:
 *                                   viridis in 192 levels, 52 greys, the orange
 * with the tokens' texts on the axes (heatmap_token). Q, K, V and z share one range per
 * (layer, head), set at the prefill like the scores' (below).
 *
 * Pixel heatmaps (cfg.raw: `--raw`), one block of pixels per entry and no text:
 *
 *   prefill_attn_L{l}_H{hh}.png     T×T weights after softmax (viridis, [0, 1])
 *   prefill_scores_L{l}_H{hh}.png   T×T scaled scores before softmax (cool–warm, ±R_s)
 *   prefill_qkv_L{l}_H{hh}.png      Q (T×hs) | Kᵀ (hs×T) | V (T×hs), side by side
 *   decode_s{sss}_attn_L{l}_H{hh}.png   the step's query row(s) over the cache (n×t)
 *   decode_s{sss}_kv_L{l}_H{hh}.png     the cache the step reads: K (t×hs) | V (t×hs)
 *   decode_s{sss}_stair_L{l}_H{hh}.png  every attention row so far: the prefill square
 *                                       plus one row per decode step (the staircase),
 *                                       row = query position, column = key position
 *   decode_stair_L{l}_H{hh}.gif     the staircase growing, one frame per step: a canvas
 *                                   of T_max × T_max cells; frame 0 is the prefill, each
 *                                   later frame redraws only the rows that changed, the
 *                                   last one is held 2 s; viridis in 248 levels
 * (file names sort in step order; steps have at least 3 digits)
 *
 * Pixels (--raw). Every matrix entry is a block of cell × cell pixels. Masked entries
 * (future slots a query does not see) are COLOR_MASKED grey. Rows of the staircase
 * and of the K/V cache carry a marker strip on their left, `strip` pixels wide:
 * white for prompt rows, black for rows added by decode steps, orange for the
 * row(s) added by this step. With grid on (and cell ≥ 4) the last pixel row and
 * column of every cell are white lines. Matrices side by side are `gap` pixels apart.
 *
 * Positions, not slots. A sliding window (--window/--sink) or the articles' cache
 * (--article-bug) drops cache slots, so slot t no longer holds position t (the
 * events' slot_pos says which it holds). The staircase and its GIF are drawn by
 * position: a key position that was not in the cache when its row was computed is
 * EVICTED: white hatched with black diagonal lines (2 px wide every 8 px, in the
 * matrix's pixel coordinates; plain white when cell < 4) — neither the masked grey
 * nor a colour of the maps. The decode K/V picture keeps one row per slot, its marker
 * strip set by the position the slot holds; the decode attention row keeps one
 * column per slot. When slots and positions differ the Description says which
 * positions the slots hold ("row_positions=0-1,5-9" for K/V, "column_positions=..."
 * for the attention row) and the staircase's says
 * "evicted=white hatched black"; without eviction every file is as before.
 *
 * Colour scales, fixed for the whole run so frames compare:
 *   weights  [0, 1], viridis;
 *   scores, Q, K, V  symmetric [-R, R], cool–warm, one R per (layer, head, matrix),
 *            set at the prefill and kept for every decode step: R is the largest
 *            |x| over the prefill's entries of that matrix (scores: the causal
 *            entries only), rounded up to two significant digits (1 if that is 0),
 *            so every prefill value is inside; a decode step's larger values are
 *            clipped to the end colours.
 * Each PNG states phase, step, layer, head, shape and range in its Description chunk.
 *
 * Pixels per cell (--raw) when cfg.cell is 0: attention images  heatmap_auto_cell(T_max),
 * Q/K/V images  heatmap_auto_cell(max(T_max, hs)), where T_max = prompt + steps.
 */
#ifndef KVSCOPE_ATTN_OBSERVER_H
#define KVSCOPE_ATTN_OBSERVER_H

#include <stddef.h>

#include <stdint.h>

#include "gif_out.h"
#include "hooks.h"
#include "select.h"
#include "toklabel.h"

#define HEATMAP_TARGET_PX 768 /* auto cell: about this many pixels along the long side */
#define HEATMAP_MAX_CELL 64
#define HEATMAP_FIG_MAX_T 640 /* figures: tokens a square can show (cells of at least 1 px) */

typedef struct {
    const char *dir;        /* existing folder the files go into */
    int L, NH, hs;          /* the model's layers, heads, head size */
    int T_max;              /* prompt + decode steps: sizes the GIF canvas and the cells */
    Selection layers, heads;
    int cell;               /* pixels per matrix entry; 0: automatic */
    int grid;               /* thin white lines between cells */
    int gif;                /* write the decode_stair GIFs */
    int raw;                /* 1: the pixel heatmaps; 0: the figures (matrix_figs.h) */
    int svg;                /* figures: an SVG twin beside every PNG */
    const char *head_names; /* figures: "L.H=name,..." naming heads in the titles, or NULL */
    const char *prompt_name; /* figures: what the prompt is, in the titles, or NULL */
} HeatmapConfig;

/* The figures' GIF: the staircase figures as frames (attn_observer_figs.c). */
typedef struct {
    GifOut out;
    Rgb pal[256];
    unsigned char *prev;   /* the last frame, as palette indices */
    uint32_t *qkey;        /* colour → index cache */
    unsigned char *qval;
} GifFig;

/* The staircase and the fixed ranges of one (layer, head). */
typedef struct {
    float r_scores, r_q, r_k, r_v; /* symmetric ranges set at the prefill; 0 until then */
    float r_qkv;                   /* figures: one range for Q, K and V (and z) */
    float **rows;                  /* rows[pos]: weights of query pos over key positions
                                    * 0 .. len[pos]-1 (len = pos + 1) */
    unsigned char **held;          /* held[pos][c]: 1 if position c was in the cache when
                                    * row pos was computed, 0 if evicted (its weight 0) */
    int evicted;                   /* some row missed a position */
    int *len;
    int nrows;                     /* rows held: 0 .. nrows-1 */
    int new0, new_n;               /* rows added by the last step */
    GifOut gif;
    GifFig gfig;
} HeadPlot;

typedef struct {
    HeatmapConfig cfg;
    int cell_attn, cell_qkv, strip, gap;
    int T0;              /* prompt length, from the prefill */
    int step_digits;     /* width of the step number in file names */
    HeadPlot *hp;        /* (L, NH); only selected entries are used */
    float *buf_q, *buf_k; /* copies of hook_q/hook_k or cache_k until V arrives */
    size_t buf_cap;
    float *fbuf[5];      /* figures: q, k, v, scores, weights of the current event */
    size_t fcap[5];
    int *slot_pos;       /* figures: the position each cache slot holds (decode) */
    int pos_cap, t_cache;
    TokenTexts tok;      /* the bytes of the token at each position */
    char fig_head[96];   /* figures: the name --fig-heads gives the head being drawn */
    int files;           /* files written so far */
    int failed;          /* set once; every later event is ignored */
    char err[512];       /* the first error: "<file>: <reason>" */
} Heatmap;

/* Pixels per cell that put about HEATMAP_TARGET_PX pixels along n cells:
 * HEATMAP_TARGET_PX / n, clamped to [1, HEATMAP_MAX_CELL]. */
int heatmap_auto_cell(int n);

/* The symmetric colour range ±R of n values (scores, Q, K, V): the largest |x|,
 * rounded up to two significant digits; 1 for none (or all zero). v is not changed.
 * The explorer page uses it to draw on the same scale. */
float heatmap_range(float *v, size_t n);

/* 0, or -1 with a message in h->err (out of memory, bad config). */
int heatmap_open(Heatmap *h, const HeatmapConfig *cfg);
/* Subscribe to the hook points. 0 or -1. */
int heatmap_attach(Heatmap *h, Hooks *hooks);
/* The bytes of the token at position pos (for the figures' labels): call for the
 * prompt before the prefill and for each decode step's token before the step.
 * 0, or -1 when out of memory. */
int heatmap_token(Heatmap *h, int pos, const unsigned char *bytes, size_t n);
/* Finish the GIFs and free everything. 0 if every file was written, else -1 and
 * h->err says why (then the caller must not commit the folder). */
int heatmap_close(Heatmap *h);

/* Shared by attn_observer.c and attn_observer_figs.c only. */
int heatmap_fail(Heatmap *h, const char *fmt, ...);
int heatmap_keep_rows(Heatmap *h, HeadPlot *p, const HookEvent *ev, int hd);
int heatmap_fig_event(Heatmap *h, const HookEvent *ev);
int heatmap_fig_gif_close(Heatmap *h, HeadPlot *p);

#endif
