/* attn_observer.c — the attention observer: hook events in, pixel heatmaps (--raw) and
 * their GIF out. See attn_observer.h for what is drawn and how. */
#include "attn_observer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colormap.h"
#include "figure.h"
#include "outdir.h"
#include "png_out.h"

/* Largest image we agree to build in memory: 64 Mpixel (192 MiB of RGB). */
#define MAX_PIXELS ((size_t)64 << 20)

/* GIF palette: viridis in GIF_LEVELS steps, then the fixed colours. */
#define GIF_LEVELS 248
enum { GIF_BG = GIF_LEVELS, GIF_MASKED, GIF_DECODE, GIF_NEWEST, GIF_GRID, GIF_NCOLORS };
#define GIF_DELAY_PREFILL 100 /* hundredths of a second */
#define GIF_DELAY_STEP 50
#define GIF_DELAY_HOLD 200    /* the last frame stays a little longer before the loop */

/* Evicted cells (see attn_observer.h): white, hatched with black diagonal lines 2 px wide
 * every 8 px. Both colours are already in the GIF palette (background, decode
 * marker), so the palette of a run without eviction is unchanged. */
#define COLOR_EVICTED COLOR_BACKGROUND
#define COLOR_EVICTED_HATCH COLOR_DECODE
#define EVICTED_HATCH_PERIOD 8
#define EVICTED_HATCH_WIDTH 2

int heatmap_auto_cell(int n) {
    if (n < 1) n = 1;
    int c = HEATMAP_TARGET_PX / n;
    if (c < 1) c = 1;
    if (c > HEATMAP_MAX_CELL) c = HEATMAP_MAX_CELL;
    return c;
}

int heatmap_fail(Heatmap *h, const char *fmt, ...) {
    if (!h->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(h->err, sizeof h->err, fmt, ap);
        va_end(ap);
        h->failed = 1;
    }
    return -1;
}

/* ---- drawing into an RGB image ---- */

typedef struct {
    unsigned char *px;
    int w, h;
} Image;

static int image_new(Heatmap *h, Image *im, int w, int hgt) {
    im->px = NULL;
    if (w < 1 || hgt < 1 || (size_t)w * (size_t)hgt > MAX_PIXELS)
        return heatmap_fail(h, "image of %dx%d pixels is too large (try a smaller --cell)", w, hgt);
    im->px = malloc((size_t)w * (size_t)hgt * 3);
    if (!im->px) return heatmap_fail(h, "out of memory for a %dx%d image", w, hgt);
    memset(im->px, 255, (size_t)w * (size_t)hgt * 3); /* COLOR_BACKGROUND */
    im->w = w;
    im->h = hgt;
    return 0;
}

static void fill(Image *im, int x, int y, int w, int hgt, Rgb c) {
    for (int yy = y; yy < y + hgt; yy++) {
        unsigned char *p = im->px + ((size_t)yy * (size_t)im->w + (size_t)x) * 3;
        for (int xx = 0; xx < w; xx++, p += 3) p[0] = c.r, p[1] = c.g, p[2] = c.b;
    }
}

/* Cell (r, c) of a matrix whose top-left pixel is (x0, y0). */
static void put_cell(Image *im, int x0, int y0, int r, int c, int cell, int grid, Rgb col) {
    const int x = x0 + c * cell, y = y0 + r * cell;
    fill(im, x, y, cell, cell, col);
    if (grid && cell >= 4) {
        fill(im, x, y + cell - 1, cell, 1, COLOR_GRID);
        fill(im, x + cell - 1, y, 1, cell, COLOR_GRID);
    }
}

/* A matrix of signed values: entry (r, c) = base[r·sr + c·sc], colour scale ±R. */
static void draw_signed(Image *im, int x0, int y0, int nr, int nc, const float *base,
                        size_t sr, size_t sc, float R, int cell, int grid) {
    for (int r = 0; r < nr; r++)
        for (int c = 0; c < nc; c++)
            put_cell(im, x0, y0, r, c, cell, grid,
                     colormap_diverging(base[(size_t)r * sr + (size_t)c * sc], R));
}

/* Evicted cells: white with a black diagonal hatch, in matrix pixel coordinates so
 * that neighbouring evicted cells join into one hatched band. */
static int evicted_is_hatch(int x, int y, int cell) {
    return cell >= 4 && (x + y) % EVICTED_HATCH_PERIOD < EVICTED_HATCH_WIDTH;
}

/* Attention rows: row r holds vis[r] visible entries; the rest of its nc cells are
 * masked. A NULL row is not drawn (background). R = 0 means weights (viridis). */
static void draw_rows(Image *im, int x0, int y0, int nr, int nc, const float *const *row,
                      const int *vis, float R, int cell, int grid) {
    for (int r = 0; r < nr; r++) {
        if (!row[r]) continue;
        for (int c = 0; c < nc; c++) {
            Rgb col = c >= vis[r] ? COLOR_MASKED
                      : R > 0.0f  ? colormap_diverging(row[r][c], R)
                                  : colormap_viridis(row[r][c]);
            put_cell(im, x0, y0, r, c, cell, grid, col);
        }
    }
}

/* The staircase in position space: row r (query position r) has len[r] = r + 1
 * cells, one per key position; held[r][c] = 0 marks a position that was not in the
 * cache when the row was computed (evicted), drawn hatched. The rest is masked. */
static void draw_stair_rows(Image *im, int x0, int nr, int nc, const HeadPlot *p, int cell,
                            int grid) {
    for (int r = 0; r < nr; r++) {
        if (!p->rows[r]) continue;
        for (int c = 0; c < nc; c++) {
            if (c < p->len[r] && !p->held[r][c]) {
                for (int y = 0; y < cell; y++)
                    for (int x = 0; x < cell; x++)
                        fill(im, x0 + c * cell + x, r * cell + y, 1, 1,
                             evicted_is_hatch(c * cell + x, r * cell + y, cell)
                                 ? COLOR_EVICTED_HATCH
                                 : COLOR_EVICTED);
                if (grid && cell >= 4) {
                    fill(im, x0 + c * cell, r * cell + cell - 1, cell, 1, COLOR_GRID);
                    fill(im, x0 + c * cell + cell - 1, r * cell, 1, cell, COLOR_GRID);
                }
                continue;
            }
            Rgb col = c >= p->len[r] ? COLOR_MASKED : colormap_viridis(p->rows[r][c]);
            put_cell(im, x0, 0, r, c, cell, grid, col);
        }
    }
}

/* "0-1,5-9": the positions held by slots 0 .. t-1, as ranges (for a Description).
 * Returns 0 when slot i holds position i for every i (nothing to say). */
static int slot_ranges(char *buf, size_t size, const int *slot_pos, int t) {
    int ident = 1;
    for (int i = 0; slot_pos && i < t; i++)
        if (slot_pos[i] != i) ident = 0;
    buf[0] = '\0';
    if (ident) return 0;
    size_t used = 0;
    for (int i = 0; i < t;) {
        int j = i;
        while (j + 1 < t && slot_pos[j + 1] == slot_pos[j] + 1) j++;
        int k = j > i ? snprintf(buf + used, size - used, "%s%d-%d", i ? "," : "", slot_pos[i],
                                 slot_pos[j])
                      : snprintf(buf + used, size - used, "%s%d", i ? "," : "", slot_pos[i]);
        if (k < 0 || (size_t)k >= size - used) break; /* truncated: the start is enough */
        used += (size_t)k;
        i = j + 1;
    }
    return 1;
}

/* The marker strip left of a row at absolute position pos. */
enum { MARK_PROMPT, MARK_DECODE, MARK_NEWEST };
static int strip_mark(const Heatmap *h, const HeadPlot *p, int pos) {
    if (pos < h->T0 || pos >= p->nrows) return MARK_PROMPT; /* later rows: not there yet */
    return pos >= p->new0 && pos < p->new0 + p->new_n ? MARK_NEWEST : MARK_DECODE;
}

static Rgb strip_colour(const Heatmap *h, const HeadPlot *p, int pos) {
    static const Rgb *const c[] = {&COLOR_BACKGROUND, &COLOR_DECODE, &COLOR_NEWEST};
    return *c[strip_mark(h, p, pos)];
}

static void draw_strip(const Heatmap *h, const HeadPlot *p, Image *im, int y0, int nr, int cell) {
    for (int r = 0; r < nr; r++) fill(im, 0, y0 + r * cell, h->strip, cell, strip_colour(h, p, r));
}

static int write_image(Heatmap *h, Image *im, const char *name, const char *title,
                       const char *desc) {
    char path[4400], err[4600];
    if (path_join(path, sizeof path, h->cfg.dir, name) != 0) {
        free(im->px);
        return heatmap_fail(h, "%s/%s: path too long", h->cfg.dir, name);
    }
    PngText t = {title, desc};
    int rc = png_write_rgb(path, im->px, im->w, im->h, &t, err, sizeof err);
    free(im->px);
    im->px = NULL;
    if (rc) return heatmap_fail(h, "%s", err);
    h->files++;
    return 0;
}

/* ---- colour ranges ---- */

/* x rounded up to two significant digits (m · 10^e with 10 ≤ m < 100), computed with
 * exact powers of ten so that the range prints as written; 1 for 0 or non-finite. */
static float nice_ceil(float x) {
    if (!(x > 0.0f) || x > 1e30f) return 1.0f;
    double y = x, scale = 1.0; /* y · scale (e ≥ 0) or y / scale (e < 0) is in [10, 100) */
    int up = 1;
    while (y * scale < 10.0) scale *= 10.0;
    if (scale == 1.0) {
        up = 0;
        while (y / scale >= 100.0) scale *= 10.0;
    }
    double t = up ? y * scale : y / scale;
    double m = (double)(long)t;
    if (m < t) m += 1.0;
    return (float)(up ? m / scale : m * scale);
}

/* The largest |v|, rounded up by nice_ceil: the scale holds every value it was set
 * from, so the one a lesson quotes has its own colour, not the end colour of a clip. */
float heatmap_range(float *v, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) {
        const float a = v[i] < 0.0f ? -v[i] : v[i];
        if (a > m) m = a;
    }
    return nice_ceil(m);
}

/* Range of one head's slice of a [n, NH, hs] tensor. */
static int head_range(Heatmap *h, const float *t, int n, int NH, int hs, int head, float *out) {
    size_t cnt = (size_t)n * hs;
    float *v = malloc(cnt * sizeof *v);
    if (!v) return heatmap_fail(h, "out of memory");
    for (int i = 0; i < n; i++)
        memcpy(v + (size_t)i * hs, t + ((size_t)i * NH + head) * hs, (size_t)hs * sizeof *v);
    *out = heatmap_range(v, cnt);
    free(v);
    return 0;
}

/* ---- GIF frames ---- */

static unsigned char gif_weight_index(float w) {
    if (w != w) return GIF_MASKED;
    if (w < 0.0f) w = 0.0f;
    if (w > 1.0f) w = 1.0f;
    return (unsigned char)(int)(w * (float)(GIF_LEVELS - 1) + 0.5f);
}

/* Rows r0 .. r1-1 of the staircase canvas (full width) as palette indices. */
static int gif_rows(Heatmap *h, HeadPlot *p, int r0, int r1, int delay) {
    const int cell = h->cell_attn, W = p->gif.width, H = (r1 - r0) * cell;
    unsigned char *idx = malloc((size_t)W * (size_t)H);
    if (!idx) return heatmap_fail(h, "out of memory for a GIF frame");
    memset(idx, GIF_BG, (size_t)W * (size_t)H);
    for (int r = r0; r < r1; r++) {
        unsigned char *band = idx + (size_t)(r - r0) * cell * W;
        static const unsigned char mark[] = {GIF_BG, GIF_DECODE, GIF_NEWEST};
        unsigned char s = mark[strip_mark(h, p, r)];
        for (int y = 0; y < cell; y++) memset(band + (size_t)y * W, s, (size_t)h->strip);
        if (r >= p->nrows || !p->rows[r]) continue;
        for (int c = 0; c < h->cfg.T_max; c++) {
            const int gone = c < p->len[r] && !p->held[r][c];
            unsigned char v = c < p->len[r] ? gif_weight_index(p->rows[r][c]) : GIF_MASKED;
            for (int y = 0; y < cell; y++)
                for (int x = 0; x < cell; x++) {
                    int line = h->cfg.grid && cell >= 4 && (y == cell - 1 || x == cell - 1);
                    if (gone && !line)
                        v = evicted_is_hatch(c * cell + x, r * cell + y, cell) ? GIF_DECODE
                                                                               : GIF_BG;
                    band[(size_t)y * W + h->strip + (size_t)c * cell + x] = line ? GIF_GRID : v;
                }
        }
    }
    char err[4600];
    int rc = gif_frame(&p->gif, 0, r0 * cell, W, H, idx, delay, err, sizeof err);
    free(idx);
    return rc ? heatmap_fail(h, "%s", err) : 0;
}

static int gif_start(Heatmap *h, HeadPlot *p, int l, int hd) {
    Rgb pal[GIF_NCOLORS];
    for (int i = 0; i < GIF_LEVELS; i++)
        pal[i] = colormap_viridis_at((i * (COLORMAP_VIRIDIS_N - 1) + (GIF_LEVELS - 1) / 2) /
                                     (GIF_LEVELS - 1));
    pal[GIF_BG] = COLOR_BACKGROUND;
    pal[GIF_MASKED] = COLOR_MASKED;
    pal[GIF_DECODE] = COLOR_DECODE;
    pal[GIF_NEWEST] = COLOR_NEWEST;
    pal[GIF_GRID] = COLOR_GRID;
    char name[96], path[4400], comment[256], err[4600];
    snprintf(name, sizeof name, "decode_stair_L%d_H%02d.gif", l, hd);
    if (path_join(path, sizeof path, h->cfg.dir, name) != 0)
        return heatmap_fail(h, "%s/%s: path too long", h->cfg.dir, name);
    snprintf(comment, sizeof comment,
             "kvscope: attention weights of layer %d head %d, prefill then one row per "
             "decode step; viridis 0..1, grey = masked",
             l, hd);
    const int side = h->cfg.T_max * h->cell_attn;
    if (gif_open(&p->gif, path, h->strip + side, side, pal, GIF_NCOLORS, comment, err,
                 sizeof err))
        return heatmap_fail(h, "%s", err);
    return gif_rows(h, p, 0, h->cfg.T_max, GIF_DELAY_PREFILL);
}

/* ---- one image kind each ---- */

static void names(const Heatmap *h, char *buf, size_t size, const HookEvent *ev,
                  const char *kind, int hd) {
    if (ev->phase == PHASE_PREFILL)
        snprintf(buf, size, "prefill_%s_L%d_H%02d.png", kind, ev->layer, hd);
    else
        snprintf(buf, size, "decode_s%0*d_%s_L%d_H%02d.png", h->step_digits, ev->step, kind,
                 ev->layer, hd);
}

/* Prefill: Q | Kᵀ | V of the prompt, each with its own fixed range. */
static int write_qkv(Heatmap *h, const HookEvent *ev, int hd) {
    const int n = ev->shape[0], NH = ev->shape[1], hs = ev->shape[2];
    const int cell = h->cell_qkv, gap = h->gap, g = h->cfg.grid;
    HeadPlot *p = &h->hp[(size_t)ev->layer * h->cfg.NH + hd];
    if (head_range(h, h->buf_q, n, NH, hs, hd, &p->r_q) ||
        head_range(h, h->buf_k, n, NH, hs, hd, &p->r_k) ||
        head_range(h, ev->data, n, NH, hs, hd, &p->r_v))
        return -1;
    Image im;
    const int W = (hs + n + hs) * cell + 2 * gap, H = (n > hs ? n : hs) * cell;
    if (image_new(h, &im, W, H)) return -1;
    const size_t row = (size_t)NH * hs, off = (size_t)hd * hs;
    draw_signed(&im, 0, 0, n, hs, h->buf_q + off, row, 1, p->r_q, cell, g);
    draw_signed(&im, hs * cell + gap, 0, hs, n, h->buf_k + off, 1, row, p->r_k, cell, g);
    draw_signed(&im, (hs + n) * cell + 2 * gap, 0, n, hs, ev->data + off, row, 1, p->r_v, cell,
                g);
    char name[96], title[160], desc[512];
    names(h, name, sizeof name, ev, "qkv", hd);
    snprintf(title, sizeof title, "prefill Q, K^T, V, layer %d, head %d", ev->layer, hd);
    snprintf(desc, sizeof desc,
             "phase=prefill step=0 layer=%d head=%d matrices=Q|K^T|V shape=%dx%d|%dx%d|%dx%d "
             "colormap=cool-warm range_q=+/-%g range_k=+/-%g range_v=+/-%g (clipped beyond) "
             "cell=%dpx gap=%dpx",
             ev->layer, hd, n, hs, hs, n, n, hs, (double)p->r_q, (double)p->r_k,
             (double)p->r_v, cell, gap);
    return write_image(h, &im, name, title, desc);
}

/* Decode: the K and V caches the new query reads, t × hs each, rows marked. */
static int write_kv(Heatmap *h, const HookEvent *ev, int hd) {
    const int t = ev->shape[0], NH = ev->shape[1], hs = ev->shape[2];
    const int cell = h->cell_qkv, gap = h->gap, g = h->cfg.grid, s = h->strip;
    HeadPlot *p = &h->hp[(size_t)ev->layer * h->cfg.NH + hd];
    /* the strip marks slots; the rows this step adds are slot0 .. t-1 */
    HeadPlot marks = *p;
    marks.new0 = ev->pos0;
    marks.new_n = t - ev->slot0;
    marks.nrows = ev->pos0 + marks.new_n;
    Image im;
    if (image_new(h, &im, s + 2 * hs * cell + gap, t * cell)) return -1;
    for (int r = 0; r < t; r++) { /* the marker of the position slot r holds */
        const int pos = ev->slot_pos ? ev->slot_pos[r] : r;
        fill(&im, 0, r * cell, s, cell, strip_colour(h, &marks, pos));
    }
    const size_t row = (size_t)NH * hs, off = (size_t)hd * hs;
    draw_signed(&im, s, 0, t, hs, h->buf_k + off, row, 1, p->r_k, cell, g);
    draw_signed(&im, s + hs * cell + gap, 0, t, hs, ev->data + off, row, 1, p->r_v, cell, g);
    char name[96], title[160], desc[1024], held[512];
    names(h, name, sizeof name, ev, "kv", hd);
    snprintf(title, sizeof title, "decode step %d, K and V cache, layer %d, head %d", ev->step,
             ev->layer, hd);
    snprintf(desc, sizeof desc,
             "phase=decode step=%d layer=%d head=%d matrices=K|V shape=%dx%d|%dx%d "
             "colormap=cool-warm range_k=+/-%g range_v=+/-%g (fixed at prefill, clipped "
             "beyond) rows: black=added by decode orange=added by this step cell=%dpx",
             ev->step, ev->layer, hd, t, hs, t, hs, (double)p->r_k, (double)p->r_v, cell);
    if (slot_ranges(held, sizeof held, ev->slot_pos, t)) { /* slots no longer = positions */
        size_t u = strlen(desc);
        snprintf(desc + u, sizeof desc - u, " row_positions=%s", held);
    }
    return write_image(h, &im, name, title, desc);
}

/* Scores or weights of the step's query rows (n × Tt), as the hook gave them. */
static int write_attn(Heatmap *h, const HookEvent *ev, int hd, int scores) {
    const int n = ev->shape[1], Tt = ev->shape[2], cell = h->cell_attn;
    HeadPlot *p = &h->hp[(size_t)ev->layer * h->cfg.NH + hd];
    const float **rows = malloc((size_t)n * sizeof *rows);
    int *vis = malloc((size_t)n * sizeof *vis);
    Image im = {NULL, 0, 0};
    if (!rows || !vis || image_new(h, &im, Tt * cell, n * cell)) {
        free(rows);
        free(vis);
        return heatmap_fail(h, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        rows[i] = ev->data + ((size_t)hd * n + i) * Tt;
        vis[i] = ev->slot0 + i + 1 < Tt ? ev->slot0 + i + 1 : Tt;
    }
    float R = 0.0f;
    if (scores) {
        if (ev->phase == PHASE_PREFILL) {
            /* the causal entries only: -inf marks the rest */
            size_t cnt = 0;
            float *v = malloc((size_t)n * Tt * sizeof *v);
            if (!v) {
                free(rows), free(vis), free(im.px);
                return heatmap_fail(h, "out of memory");
            }
            for (int i = 0; i < n; i++)
                for (int c = 0; c < vis[i]; c++) v[cnt++] = rows[i][c];
            p->r_scores = heatmap_range(v, cnt);
            free(v);
        }
        R = p->r_scores;
    }
    draw_rows(&im, 0, 0, n, Tt, rows, vis, R, cell, h->cfg.grid);
    free(rows);
    free(vis);
    const char *ph = phase_name(ev->phase), *what = scores ? "scores" : "attn";
    char name[96], title[160], desc[1024], range[64], held[512];
    names(h, name, sizeof name, ev, what, hd);
    if (ev->phase == PHASE_PREFILL)
        snprintf(title, sizeof title, "prefill attention %s, layer %d, head %d",
                 scores ? "scores (scaled, before softmax)" : "weights", ev->layer, hd);
    else
        snprintf(title, sizeof title, "decode step %d attention %s, layer %d, head %d",
                 ev->step, scores ? "scores" : "weights", ev->layer, hd);
    if (scores) snprintf(range, sizeof range, "colormap=cool-warm range=+/-%g", (double)R);
    else snprintf(range, sizeof range, "colormap=viridis range=0..1");
    snprintf(desc, sizeof desc,
             "phase=%s step=%d layer=%d head=%d matrix=%s shape=%dx%d rows=positions %d..%d "
             "columns=cache slots 0..%d %s masked=grey(128) cell=%dpx",
             ph, ev->step, ev->layer, hd, scores ? "scores" : "weights", n, Tt, ev->pos0,
             ev->pos0 + n - 1, Tt - 1, range, cell);
    if (slot_ranges(held, sizeof held, ev->slot_pos, Tt)) { /* slots no longer = positions */
        size_t u = strlen(desc);
        snprintf(desc + u, sizeof desc - u, " column_positions=%s", held);
    }
    return write_image(h, &im, name, title, desc);
}

/* Keep the step's rows of weights for the staircase. */
int heatmap_keep_rows(Heatmap *h, HeadPlot *p, const HookEvent *ev, int hd) {
    const int n = ev->shape[1], Tt = ev->shape[2];
    const int need = ev->pos0 + n;
    if (need > p->nrows) {
        float **r = realloc(p->rows, (size_t)need * sizeof *r);
        if (r) p->rows = r;
        int *l = r ? realloc(p->len, (size_t)need * sizeof *l) : NULL;
        if (l) p->len = l;
        unsigned char **k = l ? realloc(p->held, (size_t)need * sizeof *k) : NULL;
        if (!r || !l || !k) return heatmap_fail(h, "out of memory");
        p->held = k;
        for (int i = p->nrows; i < need; i++) p->rows[i] = NULL, p->len[i] = 0, p->held[i] = NULL;
        p->nrows = need;
    }
    for (int i = 0; i < n; i++) {
        /* query pos sees slots 0 .. vis-1; slot j holds position slot_pos[j] ≤ pos */
        const int pos = ev->pos0 + i, vis = ev->slot0 + i + 1 < Tt ? ev->slot0 + i + 1 : Tt;
        float *row = calloc((size_t)pos + 1, sizeof *row);
        unsigned char *held = calloc((size_t)pos + 1, 1);
        if (!row || !held) {
            free(row), free(held);
            return heatmap_fail(h, "out of memory");
        }
        const float *src = ev->data + ((size_t)hd * n + i) * Tt;
        for (int j = 0; j < vis; j++) {
            const int kp = ev->slot_pos ? ev->slot_pos[j] : j;
            if (kp < 0 || kp > pos) {
                free(row), free(held);
                return heatmap_fail(h, "cache slot %d holds position %d, not a key of position %d", j,
                            kp, pos);
            }
            row[kp] = src[j];
            held[kp] = 1;
        }
        for (int c = 0; c <= pos; c++)
            if (!held[c]) p->evicted = 1;
        free(p->rows[pos]);
        free(p->held[pos]);
        p->rows[pos] = row;
        p->held[pos] = held;
        p->len[pos] = pos + 1;
    }
    p->new0 = ev->pos0;
    p->new_n = n;
    return 0;
}

static int write_stair(Heatmap *h, const HookEvent *ev, int hd) {
    HeadPlot *p = &h->hp[(size_t)ev->layer * h->cfg.NH + hd];
    const int cell = h->cell_attn, s = h->strip;
    int cols = 1;
    for (int r = 0; r < p->nrows; r++)
        if (p->len[r] > cols) cols = p->len[r];
    Image im;
    if (image_new(h, &im, s + cols * cell, p->nrows * cell)) return -1;
    draw_strip(h, p, &im, 0, p->nrows, cell);
    draw_stair_rows(&im, s, p->nrows, cols, p, cell, h->cfg.grid);
    char name[96], title[160], desc[640];
    names(h, name, sizeof name, ev, "stair", hd);
    snprintf(title, sizeof title, "attention weights after decode step %d, layer %d, head %d",
             ev->step, ev->layer, hd);
    snprintf(desc, sizeof desc,
             "phase=decode step=%d layer=%d head=%d matrix=weights, prefill rows 0..%d plus "
             "one row per decode step shape=%dx%d columns=%s colormap=viridis "
             "range=0..1 masked=grey(128)%s "
             "rows: black=added by decode orange=added by this step cell=%dpx",
             ev->step, ev->layer, hd, h->T0 - 1, p->nrows, cols,
             p->evicted ? "key positions" : "cache slots",
             p->evicted ? " evicted=white hatched black (position not in the cache when the "
                          "row was computed)"
                        : "",
             cell);
    return write_image(h, &im, name, title, desc);
}

/* ---- the hook callback ---- */

static int keep_copy(Heatmap *h, float **dst, const HookEvent *ev) {
    size_t n = (size_t)ev->shape[0] * ev->shape[1] * ev->shape[2];
    if (n > h->buf_cap) {
        float *q = realloc(h->buf_q, n * sizeof *q);
        if (q) h->buf_q = q;
        float *k = q ? realloc(h->buf_k, n * sizeof *k) : NULL;
        if (k) h->buf_k = k;
        if (!q || !k) return heatmap_fail(h, "out of memory");
        h->buf_cap = n;
    }
    memcpy(*dst, ev->data, n * sizeof **dst);
    return 0;
}

static int on_event(const HookEvent *ev, void *user) {
    Heatmap *h = user;
    if (h->failed) return -1;
    if (!select_has(&h->cfg.layers, ev->layer) || ev->layer >= h->cfg.L) return 0;
    if (!h->cfg.raw) return heatmap_fig_event(h, ev);
    const int prefill = ev->phase == PHASE_PREFILL;
    switch (ev->point) {
    case HOOK_Q:
        return prefill ? keep_copy(h, &h->buf_q, ev) : 0;
    case HOOK_K:
        return prefill ? keep_copy(h, &h->buf_k, ev) : 0;
    case HOOK_CACHE_K:
        return prefill ? 0 : keep_copy(h, &h->buf_k, ev);
    default:
        break;
    }
    for (int hd = 0; hd < h->cfg.NH; hd++) {
        if (!select_has(&h->cfg.heads, hd)) continue;
        HeadPlot *p = &h->hp[(size_t)ev->layer * h->cfg.NH + hd];
        int rc = 0;
        if (ev->point == HOOK_V && prefill) {
            rc = write_qkv(h, ev, hd);
        } else if (ev->point == HOOK_CACHE_V && !prefill) {
            rc = write_kv(h, ev, hd);
        } else if (ev->point == HOOK_ATTN_SCORES && prefill) {
            rc = write_attn(h, ev, hd, 1);
        } else if (ev->point == HOOK_PATTERN) {
            if (prefill) {
                h->T0 = ev->pos0 + ev->shape[1];
                int most = h->cfg.T_max - h->T0, d = 3;
                for (int x = 1000; most >= x && d < 9; x *= 10) d++;
                h->step_digits = d;
            }
            int r0 = p->new0;
            rc = write_attn(h, ev, hd, 0) || heatmap_keep_rows(h, p, ev, hd);
            if (!rc && !prefill) rc = write_stair(h, ev, hd);
            if (!rc && h->cfg.gif) {
                if (prefill) rc = gif_start(h, p, ev->layer, hd);
                else if (p->gif.gif) {
                    if (ev->pos0 < r0) r0 = ev->pos0;
                    if (r0 < h->T0 && ev->pos0 >= h->T0) r0 = ev->pos0; /* prompt rows stay */
                    int r1 = ev->pos0 + ev->shape[1];
                    rc = r1 > h->cfg.T_max ? heatmap_fail(h, "step %d is past the --steps the GIF was "
                                                     "sized for", ev->step)
                                           : gif_rows(h, p, r0, r1, GIF_DELAY_STEP);
                }
            }
        }
        if (rc) return -1;
    }
    return 0;
}

int heatmap_open(Heatmap *h, const HeatmapConfig *cfg) {
    memset(h, 0, sizeof *h);
    h->cfg = *cfg;
    if (cfg->L < 1 || cfg->NH < 1 || cfg->hs < 1 || cfg->T_max < 1 || cfg->cell < 0 ||
        cfg->L > SELECT_MAX || cfg->NH > SELECT_MAX)
        return heatmap_fail(h, "bad heatmap configuration");
    if (!cfg->raw && cfg->T_max > HEATMAP_FIG_MAX_T)
        return heatmap_fail(h, "%d tokens (prompt + steps) are more than the %d a figure draws; "
                            "--raw draws pixel heatmaps of any length", cfg->T_max, HEATMAP_FIG_MAX_T);
    token_texts_init(&h->tok);
    int longest = cfg->T_max > cfg->hs ? cfg->T_max : cfg->hs;
    h->cell_attn = cfg->cell ? cfg->cell : heatmap_auto_cell(cfg->T_max);
    h->cell_qkv = cfg->cell ? cfg->cell : heatmap_auto_cell(longest);
    h->strip = h->cell_attn / 2 > 2 ? h->cell_attn / 2 : 2;
    h->gap = h->cell_qkv > 8 ? h->cell_qkv : 8;
    h->step_digits = 3;
    h->hp = calloc((size_t)cfg->L * cfg->NH, sizeof *h->hp);
    if (!h->hp) return heatmap_fail(h, "out of memory");
    return 0;
}

int heatmap_token(Heatmap *h, int pos, const unsigned char *bytes, size_t n) {
    return token_texts_set(&h->tok, pos, bytes, n) ? heatmap_fail(h, "out of memory") : 0;
}

int heatmap_attach(Heatmap *h, Hooks *hooks) {
    uint32_t mask = HOOK_BIT(HOOK_Q) | HOOK_BIT(HOOK_K) | HOOK_BIT(HOOK_V) |
                    HOOK_BIT(HOOK_CACHE_K) | HOOK_BIT(HOOK_CACHE_V) |
                    HOOK_BIT(HOOK_ATTN_SCORES) | HOOK_BIT(HOOK_PATTERN) | HOOK_BIT(HOOK_Z);
    return hooks_subscribe(hooks, mask, on_event, h);
}

int heatmap_close(Heatmap *h) {
    if (!h->hp) return h->failed ? -1 : 0;
    for (size_t i = 0; i < (size_t)h->cfg.L * h->cfg.NH; i++) {
        HeadPlot *p = &h->hp[i];
        heatmap_fig_gif_close(h, p);
        if (p->gif.gif) {
            char err[4600];
            if (!h->failed) {
                /* redraw the last step's rows so it stays on screen before the loop */
                int r0 = p->new0 > 0 && p->new0 >= h->T0 ? p->new0 : 0;
                int r1 = r0 == 0 ? h->cfg.T_max : p->new0 + p->new_n;
                if (gif_rows(h, p, r0, r1, GIF_DELAY_HOLD) == 0) {
                    if (gif_close(&p->gif, err, sizeof err)) heatmap_fail(h, "%s", err);
                    else h->files++;
                }
            }
            gif_abort(&p->gif);
        }
        for (int r = 0; r < p->nrows; r++) free(p->rows[r]), free(p->held[r]);
        free(p->rows);
        free(p->len);
        free(p->held);
    }
    free(h->hp);
    free(h->buf_q);
    free(h->buf_k);
    for (int b = 0; b < 5; b++) free(h->fbuf[b]), h->fbuf[b] = NULL;
    free(h->slot_pos);
    h->slot_pos = NULL;
    token_texts_free(&h->tok);
    if (!h->cfg.raw) fig_release();
    h->hp = NULL;
    h->buf_q = h->buf_k = NULL;
    return h->failed ? -1 : 0;
}
