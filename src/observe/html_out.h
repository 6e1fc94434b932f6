/* html_out.h — an observer that writes one run as one self-contained HTML page, the
 * explorer: step through prefill and decode, watch the cache grow, hover any cell.
 *
 * Subscribes to hook_q, hook_k, hook_v, hook_attn_scores, hook_pattern and
 * hook_step_end; the engine does not know it exists. The page is the explorer's
 * source (src/observe/explorer/: HTML, CSS, JavaScript, embedded into the binary at build
 * time, see explorer_page.h) with the run's data as one JSON block in
 * <script type="application/json" id="kvscope-data">. No network, no library: it opens
 * from the file system in any current browser. Same run, same bytes.
 *
 * The JSON block (format "kvscope-explorer", version 1). Numbers are JSON numbers
 * except the float arrays, which are float32 little-endian in base64 ("f32"). A
 * position is a token's absolute index in the sequence (0 .. P-1, P = positions run);
 * a slot is a row of the cache, which holds one position (slot = position unless a
 * window or the articles' bug dropped rows).
 *   format, version, kvscope           "kvscope-explorer", 1, the version that wrote it
 *   model     {name, L, NH, hs, C, V, N, tokenizer: "bytes" | "bpe"}
 *   run       {mode: "cache" | "recompute" | "article-bug", kv_dtype, kv_bytes_per_token
 *              (2·L·row bytes), window, sink (0: none), kv_cap_bytes (0: none),
 *              prompt_tokens T, steps_asked, view: the view the page opens on, in the
              syntax of its URL fragment ("layer=1&head=4&step=last"; "": the first)}
 *   tokens    {id: [P ints], bytes: [P hex strings]}: position p's token id and its
 *              raw bytes ("e4"; a BPE token may hold several bytes)
 *   steps     [{step (0 = prefill), phase, pos0 (first new position), n (new rows),
 *               cached (slots held before the step), tokens (slots read = cached + n),
 *               slots: [[first, last], ...] positions held by slots 0 .. tokens-1, as
 *               inclusive ranges, evicted: [first, count] positions dropped since the
 *               previous step, kv_bytes, kv_reserved, flops: {qkv, attn, attn_proj, mlp,
 *               lm_head, elementwise} as counted by the engine, formula: {cache,
 *               recompute} the blocks' FLOPs of this step by the closed form
 *               (flops_layers_formula) with the cache (n new after pos0 cached; a decode
 *               step: 1 after t-1) and without it (all t = pos0 + n positions again)}]
 *   rows      {step: [P ints], len: [P ints]}: attention row p (query position p) was
 *              computed at step[p] (its first computation: without a cache every step
 *              recomputes every row, with the same values); it holds len[p] keys, the
 *              positions of that step's slots 0 .. len[p]-1 (p+1 keys unless evicted)
 *   heads     [{layer, head, range: {scores, q, k, v}, weights, scores, q, k, v}]
 *              range: the symmetric colour scale ±R of each matrix, set at the prefill
 *              as the PNG heatmaps set it (heatmap_range); weights and scores
 *              (f32): rows 0 .. P-1 one after the other, row p len[p] values in slot
 *              order; q, k, v (f32): P × hs, position p's query, key and value of this
 *              head (k and v as the cache stores them, read back: --kv-dtype shows)
 *   colormaps {viridis: 256 × "rrggbb", coolwarm: 255 × "rrggbb", masked, newest,
 *              decode}: colormap.h's tables and marker colours, so the page draws with
 *              the PNGs' colours and index rules
 *
 * Size. The float arrays dominate: per (layer, head) a prefill of T tokens holds
 * T(T+1) + 3·T·hs floats (weights and scores of a causal square, then q, k, v) and a
 * decode step at t tokens adds 2·t + 3·hs (its row of weights and scores, its new q,
 * k, v row), 4 bytes each, times 4/3 in base64. html_page_estimate() bounds the whole
 * page from the run's size before it starts; a page larger than HTML_MAX_BYTES is
 * refused (choose layers and heads).
 */
#ifndef KVSCOPE_HTML_OUT_H
#define KVSCOPE_HTML_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hooks.h"
#include "model.h"
#include "select.h"
#include "tokenizer.h"

/* Every page starts with these bytes: kvscope only replaces a file that does. */
#define HTML_SIGNATURE "<!DOCTYPE html>\n<!-- kvscope explorer page"
#define HTML_MAX_BYTES ((size_t)16 << 20) /* 16 MiB: larger pages are refused */

typedef struct {
    Config cfg;             /* the model's widths (and the FLOP formula's) */
    const char *model_name; /* "built-in GPT-2 (seed 1)" or a folder */
    int bpe;                /* 1: GPT-2's BPE, 0: byte-level tokens */
    const char *mode;       /* "cache", "recompute" or "article-bug" */
    const char *kv_dtype;   /* "fp32", ... */
    size_t kv_bytes_per_token;
    int window, sink;       /* 0: no window */
    size_t kv_cap_bytes;    /* 0: no cap */
    int T;                  /* prompt tokens */
    int T_max;              /* prompt + decode steps asked: sizes the buffers */
    Selection layers, heads;
    const char *view;       /* the view the page opens on ("layer=1&head=4"); NULL or "": none */
} HtmlConfig;

/* What the page keeps of one (layer, head). */
typedef struct {
    int layer, head;
    float *q, *k, *v;       /* (T_max, hs) by position */
    float *w, *s;           /* attention rows one after the other: weights, scores */
    size_t ws_len;          /* floats used in w and s */
} HtmlHead;

/* One step, as hook_step_end reported it. */
typedef struct {
    Phase phase;
    int step, pos0, n, cached, tokens;
    int *slot_pos;          /* (tokens) position held by each slot */
    int evicted_pos0, evicted_n;
    size_t kv_bytes, kv_reserved;
    FlopCount flops;
} HtmlStep;

typedef struct {
    HtmlConfig cfg;
    int hs;
    HtmlHead *heads;        /* the selected (layer, head) pairs, layer-major */
    int n_heads;
    int *row_step, *row_len; /* (T_max) per query position; row_len 0: not computed */
    int rows;               /* query positions computed: 0 .. rows-1 */
    int *have_qkv;          /* (L) positions whose q, k, v are kept, per layer */
    HtmlStep *steps;
    int n_steps, cap_steps;
    int pending_pos0, pending_n; /* the rows the current step computes */
    int failed;
    char err[256];
} HtmlOut;

/* Upper bound of the page's bytes for cfg (all T_max positions computed, no key
 * evicted): the explorer's code, the tokens, the steps and the heads' arrays. */
size_t html_page_estimate(const HtmlConfig *cfg);
/* Bytes of float data (before base64) one (layer, head) holds for T_max positions. */
size_t html_head_bytes(int T_max, int hs);
/* Number of (layer, head) pairs the selections choose. */
int html_heads_selected(const HtmlConfig *cfg);

/* 0; -1 with a message in h->err (bad config, out of memory); HTML_TOO_LARGE when
 * html_page_estimate(cfg) > HTML_MAX_BYTES (nothing allocated). */
#define HTML_TOO_LARGE (-2)
int html_out_open(HtmlOut *h, const HtmlConfig *cfg);
/* Subscribe to the hook points. 0 or -1. */
int html_out_attach(HtmlOut *h, Hooks *hooks);
/* Write the page to f (the caller makes it atomic: an OutFile, or a file of a temporary
 * output folder). ids: the n tokens of the sequence (prompt, then generated), tok their
 * tokenizer. 0, or -1 with a message in h->err. *bytes gets the page size so far (a
 * write error may still show when f is closed). */
int html_out_write(HtmlOut *h, FILE *f, const int *ids, int n, const Tokenizer *tok,
                   size_t *bytes);
void html_out_free(HtmlOut *h);

#endif
