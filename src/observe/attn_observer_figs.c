/* attn_observer_figs.c — the observer's figures for slides (matrix_figs.h): what `kvscope run
 * --heatmaps` writes unless --raw asks for pixel heatmaps. See attn_observer.h for the files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_observer.h"
#include "matrix_figs.h"
#include "outdir.h"

enum { FB_Q, FB_K, FB_V, FB_S, FB_W };

/* Copy an event's tensor into buffer b (grown as needed). */
static int keep(Heatmap *h, int b, const HookEvent *ev) {
    size_t n = 1;
    for (int i = 0; i < ev->ndim; i++) n *= (size_t)ev->shape[i];
    if (n > h->fcap[b]) {
        float *p = realloc(h->fbuf[b], n * sizeof *p);
        if (!p) return heatmap_fail(h, "out of memory");
        h->fbuf[b] = p;
        h->fcap[b] = n;
    }
    memcpy(h->fbuf[b], ev->data, n * sizeof *h->fbuf[b]);
    return 0;
}

static int keep_slots(Heatmap *h, const HookEvent *ev) {
    const int t = ev->shape[0];
    if (t > h->pos_cap) {
        int *p = realloc(h->slot_pos, (size_t)t * sizeof *p);
        if (!p) return heatmap_fail(h, "out of memory");
        h->slot_pos = p;
        h->pos_cap = t;
    }
    for (int i = 0; i < t; i++) h->slot_pos[i] = ev->slot_pos ? ev->slot_pos[i] : i;
    h->t_cache = t;
    return 0;
}

/* path/NAME.png and path/NAME.svg */
static int paths(Heatmap *h, const char *name, char *png, char *svg, size_t size) {
    char n[160];
    snprintf(n, sizeof n, "%s.png", name);
    if (path_join(png, size, h->cfg.dir, n) != 0) return heatmap_fail(h, "%s/%s: path too long", h->cfg.dir, n);
    snprintf(n, sizeof n, "%s.svg", name);
    if (path_join(svg, size, h->cfg.dir, n) != 0) return heatmap_fail(h, "%s/%s: path too long", h->cfg.dir, n);
    return 0;
}

/* Run one figure writer on NAME; counts the files. */
typedef int (*Writer)(const void *fig, const char *png, const char *svg, char *err, size_t n);
static int emit(Heatmap *h, const char *name, Writer w, const void *fig) {
    char png[4400], svg[4400], err[4600];
    if (paths(h, name, png, svg, sizeof png)) return -1;
    if (w(fig, png, h->cfg.svg ? svg : NULL, err, sizeof err)) return heatmap_fail(h, "%s", err);
    h->files += h->cfg.svg ? 2 : 1;
    return 0;
}
static int w_square(const void *f, const char *p, const char *s, char *e, size_t n) {
    return heatfig_square(f, p, s, e, n);
}
static int w_qkv(const void *f, const char *p, const char *s, char *e, size_t n) {
    return heatfig_qkv(f, p, s, e, n);
}
static int w_step(const void *f, const char *p, const char *s, char *e, size_t n) {
    return heatfig_step(f, p, s, e, n);
}
static int w_heads(const void *f, const char *p, const char *s, char *e, size_t n) {
    return heatfig_heads(f, p, s, e, n);
}

/* The name head_names gives head hd of layer l ("1.4=induction head,..."), copied into
 * b, or NULL. */
static const char *head_name(const char *names, int l, int hd, char *b, size_t n) {
    char key[32];
    const int k = snprintf(key, sizeof key, "%d.%d=", l, hd);
    for (const char *p = names; p && *p; p += strcspn(p, ","), p += *p == ',') {
        if (strncmp(p, key, (size_t)k) != 0) continue;
        const size_t len = strcspn(p + k, ",");
        snprintf(b, n, "%.*s", (int)(len < n ? len : n - 1), p + k);
        return b;
    }
    return NULL;
}

/* The figure's place; the head's name goes into h->fig_head, which lives as long as the
 * figure being drawn (one at a time). */
static HfWhere where(Heatmap *h, const HookEvent *ev, int hd) {
    HfWhere w = {&h->tok, ev->layer, hd, ev->step, h->T0,
                 head_name(h->cfg.head_names, ev->layer, hd, h->fig_head, sizeof h->fig_head),
                 h->cfg.prompt_name};
    return w;
}

static void name_of(const Heatmap *h, char *b, size_t n, const HookEvent *ev, const char *kind,
                    int hd) {
    if (ev->phase == PHASE_PREFILL) snprintf(b, n, "prefill_%s_L%d_H%02d", kind, ev->layer, hd);
    else snprintf(b, n, "decode_s%0*d_%s_L%d_H%02d", h->step_digits, ev->step, kind, ev->layer, hd);
}

/* ---- prefill: Q, Kᵀ, V on one scale ---- */

static int fig_qkv(Heatmap *h, const HookEvent *ev, int hd) {
    const int n = ev->shape[0], NH = ev->shape[1], hs = ev->shape[2];
    const size_t row = (size_t)NH * hs, off = (size_t)hd * hs;
    HeadPlot *p = &h->hp[(size_t)ev->layer * h->cfg.NH + hd];
    float *v = malloc((size_t)3 * n * hs * sizeof *v);
    if (!v) return heatmap_fail(h, "out of memory");
    const float *src[3] = {h->fbuf[FB_Q], h->fbuf[FB_K], h->fbuf[FB_V]};
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < n; i++)
            memcpy(v + ((size_t)m * n + i) * hs, src[m] + i * row + off, (size_t)hs * sizeof *v);
    p->r_qkv = heatmap_range(v, (size_t)3 * n * hs);
    free(v);
    HfQkv f = {where(h, ev, hd), n, hs, src[0] + off, src[1] + off, src[2] + off, row, p->r_qkv};
    char name[96];
    name_of(h, name, sizeof name, ev, "qkv", hd);
    return emit(h, name, w_qkv, &f);
}

/* ---- prefill: the T×T square of scores or weights ---- */

static int fig_prefill_square(Heatmap *h, const HookEvent *ev, int hd, int scores) {
    const int n = ev->shape[1], Tt = ev->shape[2];
    HeadPlot *p = &h->hp[(size_t)ev->layer * h->cfg.NH + hd];
    const float *d = ev->data + (size_t)hd * n * Tt;
    unsigned char *st = malloc((size_t)n * Tt);
    if (!st) return heatmap_fail(h, "out of memory");
    size_t cnt = 0;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < Tt; c++) {
            st[(size_t)i * Tt + c] = c <= ev->slot0 + i ? HF_VALUE : HF_MASKED;
            cnt += c <= ev->slot0 + i;
        }
    if (scores) { /* the causal entries only */
        float *v = malloc((cnt ? cnt : 1) * sizeof *v);
        if (!v) {
            free(st);
            return heatmap_fail(h, "out of memory");
        }
        size_t k = 0;
        for (int i = 0; i < n; i++)
            for (int c = 0; c <= ev->slot0 + i && c < Tt; c++) v[k++] = d[(size_t)i * Tt + c];
        p->r_scores = heatmap_range(v, k);
        free(v);
    }
    HfSquare f = {where(h, ev, hd), {n, Tt, d, (size_t)Tt, 1, st, scores ? p->r_scores : 0}, n,
                  scores, 0, 0, 0, 0};
    char name[96];
    name_of(h, name, sizeof name, ev, scores ? "scores" : "attn", hd);
    int rc = emit(h, name, w_square, &f);
    free(st);
    return rc;
}

/* ---- the staircase so far, on the T_max × T_max canvas ---- */

/* Fill f from the rows kept in p; *vals and *st are malloc'ed (the caller frees). */
static int stair_square(Heatmap *h, const HeadPlot *p, const HookEvent *ev, int hd, HfSquare *f,
                        float **vals, unsigned char **st) {
    const int Tm = h->cfg.T_max;
    *vals = calloc((size_t)Tm * Tm, sizeof **vals);
    *st = malloc((size_t)Tm * Tm);
    if (!*vals || !*st) return heatmap_fail(h, "out of memory");
    for (int r = 0; r < Tm; r++)
        for (int c = 0; c < Tm; c++) {
            unsigned char s = HF_BLANK;
            if (r < p->nrows && p->rows[r]) {
                s = c >= p->len[r] ? HF_MASKED : p->held[r][c] ? HF_VALUE : HF_EVICTED;
                if (s == HF_VALUE) (*vals)[(size_t)r * Tm + c] = p->rows[r][c];
            }
            (*st)[(size_t)r * Tm + c] = s;
        }
    HfSquare s = {where(h, ev, hd), {Tm, Tm, *vals, (size_t)Tm, 1, *st, 0}, p->nrows, 0,
                  ev->phase == PHASE_PREFILL ? 0 : p->new0, ev->phase == PHASE_PREFILL ? 0 : p->new_n,
                  p->evicted, Tm - h->T0};
    *f = s;
    return 0;
}

/* ---- the GIF: the staircase figures as frames, in a palette of their colours ---- */

#define QCACHE (1u << 16)

static void gif_palette(Rgb *pal) {
    for (int i = 0; i < 192; i++) pal[i] = colormap_viridis_at((i * 255 + 95) / 191);
    for (int i = 0; i < 52; i++) {
        unsigned char g = (unsigned char)((i * 255 + 25) / 51);
        pal[192 + i] = (Rgb){g, g, g};
    }
    pal[244] = COLOR_NEWEST;
    pal[245] = COLOR_MASKED;
    for (int k = 1; k <= 10; k++) {
        const Rgb o = COLOR_NEWEST;
        pal[245 + k] = (Rgb){(unsigned char)(o.r + (255 - o.r) * k / 11),
                             (unsigned char)(o.g + (255 - o.g) * k / 11),
                             (unsigned char)(o.b + (255 - o.b) * k / 11)};
    }
}

static unsigned char nearest(const Rgb *pal, unsigned r, unsigned g, unsigned b) {
    int best = 0;
    long bd = -1;
    for (int i = 0; i < 256; i++) {
        long dr = (long)pal[i].r - r, dg = (long)pal[i].g - g, db = (long)pal[i].b - b;
        long d = dr * dr + dg * dg + db * db;
        if (bd < 0 || d < bd) bd = d, best = i;
    }
    return (unsigned char)best;
}

/* RGB → palette indices, remembering the colours seen (most pixels repeat). */
static void quantize(GifFig *g, const unsigned char *rgb, unsigned char *idx, size_t npx) {
    for (size_t i = 0; i < npx; i++) {
        const uint32_t key = ((uint32_t)rgb[3 * i] << 16 | (uint32_t)rgb[3 * i + 1] << 8 | rgb[3 * i + 2]) + 1;
        uint32_t slot = (key * 2654435761u) >> 16;
        int found = 0;
        for (int probe = 0; probe < 8; probe++, slot = (slot + 1) & (QCACHE - 1)) {
            if (g->qkey[slot] == key) { idx[i] = g->qval[slot]; found = 1; break; }
            if (g->qkey[slot] == 0) {
                idx[i] = nearest(g->pal, rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
                g->qkey[slot] = key, g->qval[slot] = idx[i];
                found = 1;
                break;
            }
        }
        if (!found) idx[i] = nearest(g->pal, rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
    }
}

/* Draw the staircase, and add what changed since the last frame. */
static int gif_add(Heatmap *h, GifFig *g, const HfSquare *f, int delay) {
    const size_t npx = (size_t)HEATFIG_W * HEATFIG_H;
    unsigned char *rgb = malloc(npx * 3), *idx = malloc(npx), *sub = NULL;
    if (!rgb || !idx || heatfig_square_rgb(f, rgb)) {
        free(rgb), free(idx);
        return heatmap_fail(h, "out of memory for a GIF frame");
    }
    quantize(g, rgb, idx, npx);
    free(rgb);
    int x0 = 0, y0 = 0, x1 = HEATFIG_W - 1, y1 = HEATFIG_H - 1;
    if (g->prev) { /* the bounding box of the changed pixels */
        x0 = HEATFIG_W, y0 = HEATFIG_H, x1 = -1, y1 = -1;
        for (int y = 0; y < HEATFIG_H; y++)
            for (int x = 0; x < HEATFIG_W; x++)
                if (idx[(size_t)y * HEATFIG_W + x] != g->prev[(size_t)y * HEATFIG_W + x]) {
                    if (x < x0) x0 = x;
                    if (x > x1) x1 = x;
                    if (y < y0) y0 = y;
                    if (y > y1) y1 = y;
                }
        if (x1 < 0) x0 = y0 = x1 = y1 = 0;
    }
    const int w = x1 - x0 + 1, hh = y1 - y0 + 1;
    sub = malloc((size_t)w * hh);
    if (!sub) {
        free(idx);
        return heatmap_fail(h, "out of memory for a GIF frame");
    }
    for (int y = 0; y < hh; y++) memcpy(sub + (size_t)y * w, idx + (size_t)(y0 + y) * HEATFIG_W + x0, (size_t)w);
    char err[4600];
    int rc = gif_frame(&g->out, x0, y0, w, hh, sub, delay, err, sizeof err);
    free(sub);
    free(g->prev);
    g->prev = idx;
    return rc ? heatmap_fail(h, "%s", err) : 0;
}

static int stair_frame(Heatmap *h, HeadPlot *p, const HookEvent *ev, int hd, int png) {
    HfSquare f;
    float *vals = NULL;
    unsigned char *st = NULL;
    int rc = stair_square(h, p, ev, hd, &f, &vals, &st);
    if (!rc && png) {
        char name[96];
        name_of(h, name, sizeof name, ev, "stair", hd);
        rc = emit(h, name, w_square, &f);
    }
    if (!rc && h->cfg.gif) {
        GifFig *g = &p->gfig;
        if (!g->out.gif && ev->phase == PHASE_PREFILL) {
            char name[96], path[4400], err[4600], comment[256];
            snprintf(name, sizeof name, "decode_stair_L%d_H%02d.gif", ev->layer, hd);
            snprintf(comment, sizeof comment, "kvscope: attention weights of layer %d head %d, "
                     "prefill then one row per decode step (the decode_s*_stair figures)", ev->layer, hd);
            gif_palette(g->pal);
            g->qkey = calloc(QCACHE, sizeof *g->qkey);
            g->qval = malloc(QCACHE);
            if (!g->qkey || !g->qval) rc = heatmap_fail(h, "out of memory");
            else if (path_join(path, sizeof path, h->cfg.dir, name) != 0)
                rc = heatmap_fail(h, "%s/%s: path too long", h->cfg.dir, name);
            else if (gif_open(&g->out, path, HEATFIG_W, HEATFIG_H, g->pal, 256, comment, err, sizeof err))
                rc = heatmap_fail(h, "%s", err);
        }
        if (!rc && g->out.gif) rc = gif_add(h, g, &f, ev->phase == PHASE_PREFILL ? 100 : 60);
    }
    free(vals);
    free(st);
    return rc;
}

int heatmap_fig_gif_close(Heatmap *h, HeadPlot *p) {
    GifFig *g = &p->gfig;
    int rc = 0;
    if (g->out.gif && !h->failed) {
        char err[4600];
        unsigned char px = g->prev ? g->prev[0] : 0; /* hold the last frame 2 s */
        if (gif_frame(&g->out, 0, 0, 1, 1, &px, 200, err, sizeof err) ||
            gif_close(&g->out, err, sizeof err))
            rc = heatmap_fail(h, "%s", err);
        else h->files++;
    }
    gif_abort(&g->out);
    free(g->prev), free(g->qkey), free(g->qval);
    g->prev = NULL, g->qkey = NULL, g->qval = NULL;
    return rc;
}

/* ---- one attention step ---- */

static int fig_step(Heatmap *h, const HookEvent *ev, int hd) {
    const int n = ev->shape[0], NH = ev->shape[1], hs = ev->shape[2];
    const int prefill = ev->phase == PHASE_PREFILL, t = prefill ? n : h->t_cache;
    const size_t row = (size_t)NH * hs, off = (size_t)hd * hs;
    HeadPlot *p = &h->hp[(size_t)ev->layer * h->cfg.NH + hd];
    HfStep f = {where(h, ev, hd), n, t, hs, prefill ? n : h->cfg.T_max, ev->pos0,
                prefill ? NULL : h->slot_pos, h->fbuf[FB_Q] + off, h->fbuf[FB_K] + off,
                h->fbuf[FB_V] + off, ev->data + off, row, h->fbuf[FB_S] + (size_t)hd * n * t,
                h->fbuf[FB_W] + (size_t)hd * n * t, ev->slot0, p->r_qkv, p->r_scores};
    char name[96];
    name_of(h, name, sizeof name, ev, "step", hd);
    return emit(h, name, w_step, &f);
}

static int fig_heads(Heatmap *h, const HookEvent *ev) {
    HfHeads f = {where(h, ev, 0), h->cfg.NH, ev->shape[2], ev->data};
    char name[96];
    snprintf(name, sizeof name, "prefill_heads_L%d", ev->layer);
    return emit(h, name, w_heads, &f);
}

static int on_pattern(Heatmap *h, const HookEvent *ev) {
    const int prefill = ev->phase == PHASE_PREFILL;
    if (keep(h, FB_W, ev)) return -1;
    if (prefill) {
        h->T0 = ev->pos0 + ev->shape[1];
        int most = h->cfg.T_max - h->T0, d = 3;
        for (int x = 1000; most >= x && d < 9; x *= 10) d++;
        h->step_digits = d;
        if (h->cfg.NH > 1 && ev->shape[1] == ev->shape[2] && fig_heads(h, ev)) return -1;
    }
    for (int hd = 0; hd < h->cfg.NH; hd++) {
        if (!select_has(&h->cfg.heads, hd)) continue;
        HeadPlot *p = &h->hp[(size_t)ev->layer * h->cfg.NH + hd];
        if (prefill && fig_prefill_square(h, ev, hd, 0)) return -1;
        if (heatmap_keep_rows(h, p, ev, hd)) return -1;
        if ((!prefill || h->cfg.gif) && stair_frame(h, p, ev, hd, !prefill)) return -1;
    }
    return 0;
}

int heatmap_fig_event(Heatmap *h, const HookEvent *ev) {
    const int prefill = ev->phase == PHASE_PREFILL;
    switch (ev->point) {
    case HOOK_Q:
        return keep(h, FB_Q, ev);
    case HOOK_K:
        return prefill ? keep(h, FB_K, ev) : 0;
    case HOOK_CACHE_K:
        return prefill ? 0 : keep(h, FB_K, ev) || keep_slots(h, ev);
    case HOOK_CACHE_V:
        return prefill ? 0 : keep(h, FB_V, ev);
    case HOOK_PATTERN:
        return on_pattern(h, ev);
    default:
        break;
    }
    if (ev->point == HOOK_V && prefill && keep(h, FB_V, ev)) return -1;
    if (ev->point == HOOK_ATTN_SCORES && keep(h, FB_S, ev)) return -1;
    for (int hd = 0; hd < h->cfg.NH; hd++) {
        if (!select_has(&h->cfg.heads, hd)) continue;
        int rc = 0;
        if (ev->point == HOOK_V && prefill) rc = fig_qkv(h, ev, hd);
        else if (ev->point == HOOK_ATTN_SCORES && prefill) rc = fig_prefill_square(h, ev, hd, 1);
        else if (ev->point == HOOK_Z) rc = fig_step(h, ev, hd);
        if (rc) return -1;
    }
    return 0;
}
