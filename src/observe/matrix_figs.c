/* matrix_figs.c — layouts of the annotated matrix figures. See matrix_figs.h.
 * Sizes are pixels of a 1600 × 900 canvas (the qkv figure adapts its width). */
#include "matrix_figs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colormap.h"
#include "figure.h"

static const Rgb INK = {34, 34, 34}, SOFT = {85, 85, 85}, FRAME = {128, 128, 128};
static const Rgb WHITE = {255, 255, 255}, BLACK = {0, 0, 0};
#define ORANGE COLOR_NEWEST

/* Every text at least TEXT_PX: 18 px when the 1600 × 900 canvas fills a 1280 × 720
 * slide (what `make check-figures` asks of every figure). */
#define TEXT_PX 27
#define TITLE_PX 34
#define SUB_PX TEXT_PX
#define HEAD_PX TEXT_PX
#define CAP_PX TEXT_PX

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }
static int clampi(int x, int lo, int hi) { return x < lo ? lo : x > hi ? hi : x; }

/* ---- cells ---- */

static Rgb value_colour(float x, float R) {
    return R > 0.0f ? colormap_diverging(x, R) : colormap_viridis(x);
}

static void draw_matrix(Fig *f, const HfMatrix *m, int x0, int y0, int cw, int ch) {
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++) {
            const int st = m->state ? m->state[(size_t)r * m->cols + c] : HF_VALUE;
            const int x = x0 + c * cw, y = y0 + r * ch;
            if (st == HF_BLANK) continue;
            if (st == HF_EVICTED) fig_hatch(f, x, y, cw, ch);
            else if (st == HF_MASKED) fig_rect(f, x, y, cw, ch, COLOR_MASKED);
            else fig_rect(f, x, y, cw, ch, value_colour(m->v[(size_t)r * m->sr + (size_t)c * m->sc], m->R));
        }
    fig_frame(f, x0 - 0.5, y0 - 0.5, m->cols * cw + 1, m->rows * ch + 1, FRAME, 1);
}

/* A number printed in a cell, black or white by the cell's lightness. */
static void cell_number(Fig *f, int x, int y, int w, int h, Rgb bg, const char *s, double px) {
    const int light = 299 * bg.r + 587 * bg.g + 114 * bg.b > 128000;
    fig_text_mid(f, x + w / 2.0, y + h / 2.0, px, FIG_CENTER, light ? BLACK : WHITE, s);
}

/* ---- token labels ---- */

/* Labels are at least LABEL_MIN_PX at the published size (18 px on a 1280 × 720 slide). Every row or column is labelled while its cells are tall enough
 * for that; beyond, every k-th position is (axis_stride), with a tick at each label,
 * and the figure says which: stride_note. */
#define LABEL_MIN_PX TEXT_PX
#define TICK_PX 4

static double label_px(int cell) { return clampi(cell * 3 / 4, LABEL_MIN_PX, 30); }

/* The smallest k of 1, 2, 3, 4, 5, 10, 20, 25, 50, 100, … with k cells of cell px
 * holding a label of label_px(cell) and a little air. */
static int axis_stride(int cell) {
    static const int nice[] = {1, 2, 3, 4, 5, 10, 20, 25, 50};
    const double need = label_px(cell) * 1.15 + 2;
    for (int scale = 1;; scale *= 100)
        for (size_t i = 0; i < sizeof nice / sizeof nice[0]; i++) {
            const int k = nice[i] * scale;
            if ((double)k * imax(cell, 1) >= need || k >= 1000000) return k;
        }
}

/* " (every 4th token labelled)", or "" for every token. */
static const char *stride_note(char *b, size_t n, int k) {
    if (k <= 1) return b[0] = '\0', b;
    const int t = k % 100;
    const char *suf = t >= 11 && t <= 13 ? "th" : k % 10 == 1 ? "st" : k % 10 == 2 ? "nd" : k % 10 == 3 ? "rd" : "th";
    snprintf(b, n, " (every %d%s token labelled)", k, suf);
    return b;
}

/* 1 if a label covering positions first .. first+span-1 holds a multiple of k. */
static int on_stride(const TokLabel *l, int k) {
    return k <= 1 || (l->first + l->span - 1) / k * k >= l->first;
}

/* Labels left of rows y0 + i·ch, right-aligned at x, every axis_stride(ch)-th with a
 * tick between it and the matrix (which starts at x + 6); spans get a bracket. Labels
 * that would still overlap the previous one are left out. hi: a row whose label is
 * orange (always labelled). */
static void row_labels(Fig *f, const TokLabel *l, int m, int x, int y0, int ch, int hi) {
    const double px = label_px(ch);
    const int k = axis_stride(ch);
    double last = -1e9, yhi = -1e9; /* the orange label wins over its neighbours */
    for (int i = 0; i < m; i++)
        if (hi >= l[i].first && hi < l[i].first + l[i].span) yhi = y0 + (l[i].first + l[i].span / 2.0) * ch;
    for (int i = 0; i < m; i++) {
        const double yc = y0 + (l[i].first + l[i].span / 2.0) * ch;
        if (l[i].span > 1 && ch >= 3)
            fig_line(f, x + 2, y0 + l[i].first * ch + 1, x + 2, y0 + (l[i].first + l[i].span) * ch - 1,
                     SOFT, 1.5);
        const int h = hi >= l[i].first && hi < l[i].first + l[i].span;
        const double sz = l[i].span > 1 ? label_px(imin(ch * l[i].span, 24)) : px;
        if (!h && (!on_stride(&l[i], k) || yc - last < sz * 1.05 || (yc - yhi < sz * 1.05 && yhi - yc < sz * 1.05)))
            continue;
        fig_line(f, x + 6 - TICK_PX, yc, x + 6, yc, SOFT, 1);
        fig_text_mid(f, x - 3, yc, sz, FIG_RIGHT, h ? ORANGE : INK, l[i].text);
        last = yc;
    }
}

/* Labels under columns x0 + i·cw, from y down, every axis_stride(cw)-th with a tick:
 * upright where a label fits the width it has, else turned to read upwards. Labels
 * that would still overlap the previous one are left out. Returns the height used. */
static int col_labels(Fig *f, const TokLabel *l, int m, int x0, int cw, int y) {
    const double px = label_px(cw);
    const int k = axis_stride(cw);
    double last_right = -1e9, used = 0;
    for (int i = 0; i < m; i++) {
        const double xc = x0 + (l[i].first + l[i].span / 2.0) * cw;
        if (l[i].span > 1 && cw >= 3)
            fig_line(f, x0 + l[i].first * cw + 1, y + 2, x0 + (l[i].first + l[i].span) * cw - 1, y + 2,
                     SOFT, 1.5);
        if (!on_stride(&l[i], k)) continue;
        const double su = label_px(imin(cw * l[i].span, 24)), wu = fig_text_width(f, su, l[i].text);
        const int upright = wu <= imax(l[i].span, k) * cw - 2;
        const double half = upright ? wu / 2 : px * 0.55, w = upright ? su + 10 : fig_text_width(f, px, l[i].text) + 10;
        if (xc - half < last_right + 2) continue;
        fig_line(f, xc, y, xc, y + TICK_PX, SOFT, 1);
        if (upright) fig_text(f, xc, y + 6 + su, su, FIG_CENTER, INK, l[i].text);
        else fig_text_turned(f, xc, y + 7, px, -90, FIG_RIGHT, INK, l[i].text);
        if (w > used) used = w;
        last_right = xc + half;
    }
    return (int)used;
}

/* 1 if some label covers more than one cell: then the axis caption says why. */
static int spans(const TokLabel *l, int m) {
    for (int i = 0; i < m; i++)
        if (l[i].span > 1) return 1;
    return 0;
}
#define SPAN_NOTE " (a character spans its UTF-8 bytes, one token each)"

/* ---- colour bars ---- */

static void fmt_tick(char *b, size_t n, double v) {
    snprintf(b, n, "%g", v);
    if (strcmp(b, "-0") == 0) snprintf(b, n, "0");
}

/* Vertical bar, bottom = low end; ticks on its right; caption turned beside them. */
static void colorbar_v(Fig *f, int x, int y, int w, int h, float R, const char *cap) {
    for (int i = 0; i < h; i++) {
        const double u = 1.0 - (i + 0.5) / h; /* top = 1 */
        Rgb c = R > 0 ? colormap_diverging((float)((2 * u - 1) * R), R) : colormap_viridis((float)u);
        fig_rect(f, x, y + i, w, 1, c);
    }
    fig_frame(f, x - 0.5, y - 0.5, w + 1, h + 1, FRAME, 1);
    double maxw = 0;
    for (int k = 0; k <= 4; k++) {
        const double u = k / 4.0, v = R > 0 ? (2 * u - 1) * R : u;
        char t[32];
        fmt_tick(t, sizeof t, v);
        const double yy = y + h - u * h;
        fig_line(f, x + w, yy, x + w + 6, yy, INK, 1);
        double tw = fig_text_mid(f, x + w + 10, yy, TEXT_PX, FIG_LEFT, INK, t);
        if (tw > maxw) maxw = tw;
    }
    fig_text_turned(f, x + w + 22 + maxw + 6, y + h / 2.0, CAP_PX, 90, FIG_CENTER, INK, cap);
}

/* Horizontal bar, left = low end; ticks below; caption above. */
static void colorbar_h(Fig *f, int x, int y, int w, int h, float R, const char *cap) {
    for (int i = 0; i < w; i++) {
        const double u = (i + 0.5) / w;
        Rgb c = R > 0 ? colormap_diverging((float)((2 * u - 1) * R), R) : colormap_viridis((float)u);
        fig_rect(f, x + i, y, 1, h, c);
    }
    fig_frame(f, x - 0.5, y - 0.5, w + 1, h + 1, FRAME, 1);
    for (int k = 0; k <= 4; k++) {
        const double u = k / 4.0, v = R > 0 ? (2 * u - 1) * R : u;
        char t[32];
        fmt_tick(t, sizeof t, v);
        fig_line(f, x + u * w, y + h, x + u * w, y + h + 5, INK, 1);
        fig_text(f, x + u * w, y + h + 26, TEXT_PX, FIG_CENTER, INK, t);
    }
    fig_text(f, x + w / 2.0, y - 8, TEXT_PX, FIG_CENTER, INK, cap);
}

static void titles(Fig *f, const char *title, const char *sub) {
    fig_text(f, HEATFIG_W / 2.0, 44, TITLE_PX, FIG_CENTER, BLACK, title);
    if (sub) fig_text(f, HEATFIG_W / 2.0, 84, SUB_PX, FIG_CENTER, SOFT, sub);
}

/* "layer 1, head 4", or with the names the run gave: "induction head (layer 1, head 4)
 * on 100 random bytes ×2" — the title then says what is shown, not only where. */
static const char *where_words(char *b, size_t n, const HfWhere *w) {
    int k;
    if (w->head_name && *w->head_name)
        k = snprintf(b, n, "%s (layer %d, head %d)", w->head_name, w->layer, w->head);
    else k = snprintf(b, n, "layer %d, head %d", w->layer, w->head);
    if (w->prompt_name && *w->prompt_name && k >= 0 && (size_t)k < n)
        snprintf(b + k, n - (size_t)k, "%s%s", " on ", w->prompt_name);
    return b;
}

static const char *what(int scores) {
    return scores ? "attention scores q·k/√hs (before the softmax)" : "attention weights";
}

/* ---- the square ---- */

typedef struct {
    const HfSquare *s;
    int x0, y0, cw, ch;  /* cells are cw × ch: the square fills the canvas' width too */
    char title[256], sub[256];
} SquareDraw;

/* The matrix takes the height between the titles and the key labels; its cells are
 * square (queries and keys are the same tokens, so a diagonal runs at 45°); the colour
 * bar sits right of it. */
#define SQ_TOP 100
#define SQ_BOTTOM 86 /* the key labels and the caption */
static void square_layout(SquareDraw *d) {
    const int n = d->s->m.rows;
    const int aw = HEATFIG_W - 170 - (d->s->steps > 0 ? 380 : 240), ah = HEATFIG_H - SQ_TOP - SQ_BOTTOM;
    d->cw = d->ch = clampi(imin(aw, ah) / n, 1, 64);
    d->x0 = 170 + (aw - n * d->cw) / 2;
    d->y0 = SQ_TOP + (ah - n * d->ch) / 2;
    const HfSquare *s = d->s;
    char wh[160];
    where_words(wh, sizeof wh, &s->at);
    if (s->at.step == 0 && s->steps > 0)
        snprintf(d->title, sizeof d->title, "Prefill (step 0 of %d), %s: %s", s->steps, wh,
                 what(s->scores));
    else if (s->at.step == 0)
        snprintf(d->title, sizeof d->title, "Prefill, %s: %s", wh, what(s->scores));
    else
        snprintf(d->title, sizeof d->title, "Decode step %d of %d, %s: %s, every row so far",
                 s->at.step, s->steps, wh, what(s->scores));
    if (s->at.step == 0 && !s->scores)
        snprintf(d->sub, sizeof d->sub, "row: one query token's softmax over the keys it may see "
                 "(the row sums to 1); grey: future keys, masked");
    else if (s->at.step == 0)
        snprintf(d->sub, sizeof d->sub, "one score per (query, key) pair of the %d prompt tokens; "
                 "grey: future keys, masked (never computed)", n);
    else
        snprintf(d->sub, sizeof d->sub, "the prefill's %d rows, then one row per decode step; "
                 "orange frame: the row of this step (1×%d)%s", s->at.T0, s->new0 + 1,
                 s->evicted ? "; hatched: evicted from the cache" : "");
}

/* ---- marks on the cells a caption talks about ---- */

/* Text on a white box (legible over the grey of the masked cells). */
static void boxed_text(Fig *f, double x, double y, FigAlign a, Rgb c, const char *t) {
    const double w = fig_text_width(f, TEXT_PX, t);
    const double x0 = a == FIG_LEFT ? x : a == FIG_CENTER ? x - w / 2 : x - w;
    fig_rect(f, x0 - 6, y - TEXT_PX, w + 12, TEXT_PX * 1.45, WHITE);
    fig_text(f, x, y, TEXT_PX, a, c, t);
}

static float sq_w(const HfMatrix *m, int r, int c) {
    if (m->state && m->state[(size_t)r * m->cols + c] != HF_VALUE) return 0.0f;
    return m->v[(size_t)r * m->sr + (size_t)c * m->sc];
}

/* A prefill's weights: the brightest line parallel to the diagonal — the rows a..b whose
 * weight on key r − d is at least MARK_W, d ≥ 1, MARK_ROWS rows or more, the largest sum
 * of weight — and the weight on key 0 (the sink), each marked with an arrow and its mean
 * when it is there: what a caption says to look at (the previous token, the copy target,
 * the sink) found in the numbers, not placed by hand. */
#define MARK_W 0.3f
#define MARK_ROWS 5
static void square_marks(Fig *f, const SquareDraw *d) {
    const HfSquare *s = d->s;
    const HfMatrix *m = &s->m;
    const int n = s->nrows, cw = d->cw, SW = m->cols * cw, S = m->rows * d->ch;
    if (s->scores || s->at.step != 0 || n < 2 * MARK_ROWS) return;
    double best = 0, bmean = 0;
    int bd = 0, ba = 0, bb = 0;
    for (int dd = 1; dd < n - MARK_ROWS; dd++)
        for (int r = dd; r < n;) {
            if (sq_w(m, r, r - dd) < MARK_W) { r++; continue; }
            int e = r;
            double sum = 0;
            for (; e < n && sq_w(m, e, e - dd) >= MARK_W; e++) sum += sq_w(m, e, e - dd);
            if (e - r >= MARK_ROWS && sum > best) best = sum, bd = dd, ba = r, bb = e - 1, bmean = sum / (e - r);
            r = e;
        }
    char t[160];
    if (bd) {
        const int rm = (ba + bb) / 2;
        const double tx = d->x0 + SW * 0.62, ty = d->y0 + S * 0.30;
        if (bd == 1) snprintf(t, sizeof t, "key i − 1, the previous token: %.2f", bmean);
        else snprintf(t, sizeof t, "key i − %d, rows %d–%d: %.2f", bd, ba, bb, bmean);
        fig_arrow(f, tx, ty + 10, d->x0 + (rm - bd + 0.5) * cw + 3, d->y0 + (rm + 0.5) * d->ch - 3,
                  BLACK, 2.5);
        boxed_text(f, tx, ty, FIG_CENTER, BLACK, t);
    }
    double sink = 0;
    for (int r = 1; r < n; r++) sink += sq_w(m, r, 0);
    sink /= n - 1;
    if (sink >= MARK_W) {
        const double tx = d->x0 + SW * 0.30, ty = d->y0 + S * 0.10;
        snprintf(t, sizeof t, "key 0, the sink: %.2f on average", sink);
        fig_arrow(f, tx - 40, ty + 10, d->x0 + cw / 2.0 + 2, d->y0 + S * 0.25, BLACK, 2.5);
        boxed_text(f, tx - 60, ty, FIG_LEFT, BLACK, t);
    }
}

static int square_draw(Fig *f, void *user) {
    SquareDraw *d = user;
    const HfSquare *s = d->s;
    const int n = s->m.rows, cw = d->cw, c = d->ch, S = n * c, SW = n * cw;
    titles(f, d->title, d->sub);
    draw_matrix(f, &s->m, d->x0, d->y0, cw, c);
    TokLabel *l = malloc((size_t)n * sizeof *l);
    if (!l) return -1;
    const int m = toklabel_axis(s->at.tok, NULL, imin(n, s->nrows), l);
    row_labels(f, l, m, d->x0 - 6, d->y0, c, s->new_n ? s->new0 : -1);
    const int ml = toklabel_axis(s->at.tok, NULL, imin(n, s->nrows), l);
    int used = col_labels(f, l, ml, d->x0, cw, d->y0 + S);
    char cap[200], note[64];
    snprintf(cap, sizeof cap, "key: a token the query may look at%s%s", spans(l, ml) ? SPAN_NOTE : "",
             stride_note(note, sizeof note, axis_stride(cw)));
    free(l);
    fig_text(f, d->x0 + SW / 2.0, d->y0 + S + used + 26, CAP_PX, FIG_CENTER, INK, cap);
    snprintf(cap, sizeof cap, "query: the token being computed%s", stride_note(note, sizeof note, axis_stride(c)));
    fig_text_turned(f, d->x0 - 110, d->y0 + S / 2.0, CAP_PX, -90, FIG_CENTER, INK, cap);
    if (s->at.step > 0) { /* rows of decode: a bar right of the matrix; the prompt's end */
        for (int r = s->at.T0; r < s->nrows; r++)
            fig_rect(f, d->x0 + SW + 4, d->y0 + r * c, 6, c,
                     r >= s->new0 && r < s->new0 + s->new_n ? ORANGE : BLACK);
        fig_dashed(f, d->x0 - 4, d->y0 + s->at.T0 * c, d->x0 + SW + 12, d->y0 + s->at.T0 * c,
                   ORANGE, 2, 6);
        if (s->new_n)
            fig_frame(f, d->x0 - 1, d->y0 + s->new0 * c - 1, (s->new0 + 1) * cw + 2,
                      s->new_n * c + 2, ORANGE, 3);
        fig_text(f, d->x0 + SW + 16, d->y0 + s->at.T0 * c + 22, TEXT_PX, FIG_LEFT, SOFT,
                 "▌ decode rows");
    }
    square_marks(f, d);
    if (s->scores) snprintf(cap, sizeof cap, "score (±%g: the prefill's largest |score|)", (double)s->m.R);
    else snprintf(cap, sizeof cap, "weight (0 to 1)");
    colorbar_v(f, d->x0 + SW + (s->steps > 0 ? 230 : 60), d->y0, 26, imax(S, 200), s->m.R, cap);
    return 0;
}

static void square_texts(const SquareDraw *d, PngText *t, char *desc, size_t n) {
    const HfSquare *s = d->s;
    snprintf(desc, n,
             "phase=%s step=%d layer=%d head=%d matrix=%s shape=%dx%d rows=query positions "
             "0..%d columns=key positions colormap=%s range=%s%g masked=grey(128)%s "
             "grid=%d,%d,%d,%d",
             s->at.step ? "decode" : "prefill", s->at.step, s->at.layer, s->at.head,
             s->scores ? "scores" : "weights", s->nrows, s->m.cols, s->nrows - 1,
             s->m.R > 0 ? "cool-warm" : "viridis", s->m.R > 0 ? "+/-" : "0..", s->m.R > 0 ? (double)s->m.R : 1.0,
             s->evicted ? " evicted=white hatched black" : "", d->x0, d->y0, d->cw, d->ch);
    t->title = d->title;
    t->description = desc;
}

int heatfig_square(const HfSquare *s, const char *png, const char *svg, char *err, size_t n) {
    SquareDraw d = {.s = s};
    square_layout(&d);
    char desc[1024];
    PngText t;
    square_texts(&d, &t, desc, sizeof desc);
    return fig_write(png, svg, HEATFIG_W, HEATFIG_H, square_draw, &d, &t, err, n);
}

int heatfig_square_rgb(const HfSquare *s, unsigned char *rgb) {
    SquareDraw d = {.s = s};
    square_layout(&d);
    return fig_render_rgb(rgb, HEATFIG_W, HEATFIG_H, square_draw, &d);
}

/* ---- Q, Kᵀ, V ---- */

typedef struct {
    const HfQkv *q;
    int ut, uc, uk, W;    /* px per token, per channel of Q and V, per channel of Kᵀ; width */
    int xq, yq, xk, yk, xv, yv;
    int klab;             /* height of Kᵀ's token labels (measured: it depends on the font) */
    int xbar, ybar;       /* the colour bar, under Kᵀ's token labels */
    int H;                /* height: down to the colour bar's ticks, at least 800 */
    char title[256];
} QkvDraw;

/* Q | Kᵀ | V in a row, drawn to scale: one cell size u for a token and for a channel,
 * so that Q (T×hs) and V are as wide as hs channels and as tall as T tokens and Kᵀ
 * (hs×T) is the same rectangle turned; the channel axis is hs·u long in all three.
 * The colour bar goes under the tallest panel's labels. */
#define QKV_TOP 150
#define QKV_BELOW 150 /* under the panels: token labels, channel ticks, the colour bar */
#define QKV_BAR_ABOVE 40 /* from the lowest labels to the bar: its caption and some air */
#define QKV_BAR_H 18
static void qkv_layout(QkvDraw *d) {
    const int T = d->q->T, hs = d->q->hs, LAB = 100, G = 60, aw = HEATFIG_W - 80 - 2 * LAB - 2 * G;
    const int ah = HEATFIG_H - QKV_TOP - QKV_BELOW;
    const int u = clampi(imin(aw / (2 * hs + T), ah / imax(T, hs)), 1, 48);
    d->ut = d->uc = d->uk = u;
    const int w = 2 * LAB + (2 * hs + T) * u + 2 * G;
    d->W = HEATFIG_W;
    const int x0 = (HEATFIG_W - w) / 2, top = QKV_TOP;
    d->xq = x0 + LAB, d->yq = top;
    d->xk = d->xq + hs * u + G + LAB / 2, d->yk = top;
    d->xv = d->xk + T * u + G + LAB / 2, d->yv = top;
    char wh[160];
    snprintf(d->title, sizeof d->title, "Prefill, %s: Q, K^T and V of the %d prompt tokens",
             where_words(wh, sizeof wh, &d->q->at), T);
}

/* The colour bar under the lowest text of the panels: Kᵀ's token labels (klab high) or
 * Q's and V's channel ticks. */
static void qkv_fit_k(QkvDraw *d) {
    const int hs = d->q->hs, T = d->q->T, u = d->ut;
    const int low = imax(d->yk + hs * u + d->klab, d->yq + T * u + 30);
    d->xbar = HEATFIG_W / 2;
    d->ybar = low + QKV_BAR_ABOVE;
    d->H = clampi(d->ybar + QKV_BAR_H + 56, 800, HEATFIG_H);
}

/* Measures Kᵀ's token labels by drawing them on a scratch canvas (see qkv_fit_k). */
static int qkv_measure(Fig *f, void *user) {
    QkvDraw *d = user;
    TokLabel *l = malloc((size_t)d->q->T * sizeof *l);
    if (!l) return -1;
    const int m = toklabel_axis(d->q->at.tok, NULL, d->q->T, l);
    d->klab = col_labels(f, l, m, 0, d->ut, 0);
    free(l);
    return 0;
}

/* "0", "hs-1" and "channel" under a channel axis of hs cells of u px from x0, at y;
 * the end numbers only where they leave the word room. */
static void channel_ticks_x(Fig *f, int x0, int y, int u, int hs) {
    char b[16];
    snprintf(b, sizeof b, "%d", hs - 1);
    const double need = fig_text_width(f, TEXT_PX, "channel") + 2 * fig_text_width(f, TEXT_PX, b) + 16;
    if (hs * u >= need) {
        fig_text(f, x0 + u / 2.0, y + 18, TEXT_PX, FIG_CENTER, SOFT, "0");
        fig_text(f, x0 + (hs - 0.5) * u, y + 18, TEXT_PX, FIG_CENTER, SOFT, b);
    }
    fig_text(f, x0 + hs * u / 2.0, y + 18, TEXT_PX, FIG_CENTER, SOFT, "channel");
}

/* The same left of Kᵀ's channel rows (x: Kᵀ's left edge), "channel" turned. */
static void channel_ticks_y(Fig *f, int x, int y0, int u, int hs) {
    char b[16];
    snprintf(b, sizeof b, "%d", hs - 1);
    const double word = fig_text_width(f, TEXT_PX, "channel");
    if (hs * u >= word + 2 * TEXT_PX + 16) {
        fig_text_mid(f, x - 5, y0 + u / 2.0, TEXT_PX, FIG_RIGHT, SOFT, "0");
        if (hs > 1) fig_text_mid(f, x - 5, y0 + (hs - 0.5) * u, TEXT_PX, FIG_RIGHT, SOFT, b);
    }
    fig_text_turned(f, x - 36, y0 + hs * u / 2.0, TEXT_PX, -90, FIG_CENTER, SOFT, "channel");
}

/* The panels' headings; Q's ends at Q's right edge where Q is too narrow for it (a head
 * of a few channels), and Kᵀ's takes two lines where Kᵀ is (a prompt of a few tokens),
 * so that each stays clear of its neighbour's. */
static void qkv_headings(Fig *f, const QkvDraw *d) {
    const int T = d->q->T, hs = d->q->hs;
    char h[96];
    snprintf(h, sizeof h, "Q (%d×%d): queries", T, hs);
    if (fig_text_width(f, HEAD_PX, h) > hs * d->uc + 40)
        fig_text(f, d->xq + hs * d->uc, d->yq - 10, HEAD_PX, FIG_RIGHT, INK, h);
    else fig_text(f, d->xq, d->yq - 10, HEAD_PX, FIG_LEFT, INK, h);
    snprintf(h, sizeof h, "K^T (%d×%d): keys, transposed", hs, T);
    if (fig_text_width(f, HEAD_PX, h) > d->xv - d->xk - 12) {
        snprintf(h, sizeof h, "K^T (%d×%d):", hs, T);
        fig_text(f, d->xk, d->yk - 33, HEAD_PX, FIG_LEFT, INK, h);
        fig_text(f, d->xk, d->yk - 10, HEAD_PX, FIG_LEFT, INK, "keys, transposed");
    } else fig_text(f, d->xk, d->yk - 10, HEAD_PX, FIG_LEFT, INK, h);
    snprintf(h, sizeof h, "V (%d×%d): values", T, hs);
    fig_text(f, d->xv, d->yv - 10, HEAD_PX, FIG_LEFT, INK, h);
}

static int qkv_draw(Fig *f, void *user) {
    QkvDraw *d = user;
    const HfQkv *q = d->q;
    const int T = q->T, hs = q->hs, ut = d->ut, uc = d->uc;
    char sub[200], note[64];
    TokLabel *l = malloc((size_t)T * sizeof *l);
    if (!l) return -1;
    const int m = toklabel_axis(q->at.tok, NULL, T, l);
    if (spans(l, m))
        snprintf(note, sizeof note, " (a character's label spans its UTF-8 byte-tokens)");
    else stride_note(note, sizeof note, axis_stride(ut));
    snprintf(sub, sizeof sub, "rows of Q and V, columns of K^T: the tokens%s; other axis: channels", note);
    titles(f, d->title, sub);
    HfMatrix mq = {T, hs, q->q, q->row, 1, NULL, q->R}, mk = {hs, T, q->k, 1, q->row, NULL, q->R},
             mv = {T, hs, q->v, q->row, 1, NULL, q->R};
    draw_matrix(f, &mq, d->xq, d->yq, uc, ut);
    draw_matrix(f, &mk, d->xk, d->yk, ut, d->uk);
    draw_matrix(f, &mv, d->xv, d->yv, uc, ut);
    qkv_headings(f, d);
    row_labels(f, l, m, d->xq - 6, d->yq, ut, -1);
    row_labels(f, l, m, d->xv - 6, d->yv, ut, -1);
    col_labels(f, l, m, d->xk, ut, d->yk + hs * d->uk);
    free(l);
    channel_ticks_x(f, d->xq, d->yq + T * ut, uc, hs);
    channel_ticks_x(f, d->xv, d->yv + T * ut, uc, hs);
    channel_ticks_y(f, d->xk, d->yk, d->uk, hs);
    char cap[96];
    snprintf(cap, sizeof cap, "Q, K and V on one scale: ±%g (their largest |value|)", (double)q->R);
    const int wbar = 480;
    colorbar_h(f, d->xbar - wbar / 2, d->ybar, wbar, QKV_BAR_H, q->R, cap);
    return 0;
}

int heatfig_qkv(const HfQkv *q, const char *png, const char *svg, char *err, size_t n) {
    QkvDraw d = {.q = q};
    qkv_layout(&d);
    unsigned char scratch[3];
    if (fig_render_rgb(scratch, 1, 1, qkv_measure, &d)) {
        snprintf(err, n, "%s: out of memory measuring the token labels", png);
        return -1;
    }
    qkv_fit_k(&d);
    char desc[640];
    snprintf(desc, sizeof desc,
             "phase=prefill step=0 layer=%d head=%d matrices=Q|K^T|V shape=%dx%d|%dx%d|%dx%d "
             "colormap=cool-warm range=+/-%g (one scale, clipped beyond) grid=%d,%d,%d,%d "
             "grid_k=%d,%d,%d,%d grid_v=%d,%d",
             q->at.layer, q->at.head, q->T, q->hs, q->hs, q->T, q->T, q->hs, (double)q->R, d.xq,
             d.yq, d.uc, d.ut, d.xk, d.yk, d.ut, d.uk, d.xv, d.yv);
    PngText t = {d.title, desc};
    return fig_write(png, svg, d.W, d.H, qkv_draw, &d, &t, err, n);
}

/* ---- one attention step ---- */

typedef struct {
    const HfStep *s;
    int ch, cw, sw;                  /* token rows, channel columns, score/weight columns */
    int xq, yq, xk, yk, xs, xw, xv, xz, yz, ys; /* ys: top of scores/weights (prefill) */
    unsigned char *mask;             /* n × t: HF_MASKED beyond what a query row sees */
    char title[256], sub[256];
} StepDraw;

#define STEP_LAB 120
#define STEP_G 30

static void step_layout_decode(StepDraw *d) {
    const HfStep *s = d->s;
    d->ch = clampi(548 / (s->t_max + 2), 2, 40);
    d->sw = imax(d->ch, 80); /* room for the numbers and for the headers ("q·k/√hs") */
    d->cw = clampi((HEATFIG_W - 80 - STEP_LAB - 2 * STEP_G - 24 - 2 * d->sw) / (2 * s->hs), 1, 16);
    const int w = STEP_LAB + 2 * s->hs * d->cw + 2 * STEP_G + 24 + 2 * d->sw;
    d->xk = (HEATFIG_W - w) / 2 + STEP_LAB;
    d->xq = d->xk;
    d->yq = 134;
    d->yk = d->yq + d->ch + 48;
    d->xs = d->xk + s->hs * d->cw + STEP_G;
    d->xw = d->xs + d->sw + 24;
    d->xv = d->xw + d->sw + STEP_G;
    d->ys = d->yk;
    d->xz = d->xv;
    d->yz = d->yk + s->t_max * d->ch + 44;
}

static void step_layout_prefill(StepDraw *d) {
    const HfStep *s = d->s;
    const int T = s->t, aw = HEATFIG_W - 80 - STEP_LAB - 2 * STEP_G;
    d->ch = clampi(530 / (2 * T), 2, 36);
    d->cw = clampi(aw / (3 * s->hs), 1, 16);
    while (d->cw > 1 && 2 * T * d->ch + s->hs * d->cw > aw) d->cw--;
    while (d->ch > 2 && 2 * T * d->ch + s->hs * d->cw > aw) d->ch--;
    d->sw = d->ch;
    const int wt = 3 * s->hs * d->cw + 2 * STEP_G, wb = 2 * T * d->ch + s->hs * d->cw + 2 * STEP_G;
    const int x0 = (HEATFIG_W - STEP_LAB - imax(wt, wb)) / 2 + STEP_LAB;
    d->xq = x0, d->yq = 134;
    d->xk = x0 + s->hs * d->cw + STEP_G, d->yk = d->yq;
    d->xv = d->xk + s->hs * d->cw + STEP_G;
    d->ys = d->yq + T * d->ch + 92; /* room for two-line headers */
    d->xs = x0, d->xw = x0 + T * d->ch + STEP_G;
    d->xz = d->xw + T * d->ch + STEP_G, d->yz = d->ys;
}

static int step_setup(StepDraw *d) {
    const HfStep *s = d->s;
    d->mask = malloc((size_t)s->n * (size_t)s->t);
    if (!d->mask) return -1;
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < s->t; j++)
            d->mask[(size_t)i * s->t + j] = j <= s->vis0 + i ? HF_VALUE : HF_MASKED;
    char tok[TOKLABEL_TEXT] = "?";
    const int p = s->pos0 + s->n - 1;
    if (s->at.tok && p < s->at.tok->n && s->at.tok->len[p])
        toklabel_visible(s->at.tok->bytes[p], s->at.tok->len[p], tok, sizeof tok);
    if (s->n == 1) {
        step_layout_decode(d);
        char wh[160];
        snprintf(d->title, sizeof d->title, "Decode step %d, %s: one query against the cache",
                 s->at.step, where_words(wh, sizeof wh, &s->at));
        snprintf(d->sub, sizeof d->sub, "the new token %s (position %d) reads all %d cached keys and "
                 "values; its own k and v were appended as the last row", tok, p, s->t);
    } else {
        step_layout_prefill(d);
        char wh[160];
        snprintf(d->title, sizeof d->title, "Prefill, %s: all %d prompt tokens at once",
                 where_words(wh, sizeof wh, &s->at), s->n);
        char note[64];
        snprintf(d->sub, sizeof d->sub, "all queries against all keys, the causal mask, the softmax, "
                 "the weighted sum of the values%s",
                 stride_note(note, sizeof note, axis_stride(d->ch)));
    }
    return 0;
}

static void step_numbers(Fig *f, const StepDraw *d, const float *v, int rows, int x, float R,
                         const char *fmt) {
    if (d->ch < TEXT_PX + 2 || d->sw < 40) return;
    for (int r = 0; r < rows; r++) {
        char b[32];
        snprintf(b, sizeof b, fmt, (double)v[r]);
        cell_number(f, x, d->ys + r * d->ch, d->sw, d->ch, value_colour(v[r], R), b,
                    TEXT_PX);
    }
}

static void step_head(Fig *f, int x, int y, const char *fmt, int a, int b, const char *what_) {
    char h[160];
    snprintf(h, sizeof h, fmt, a, b, what_);
    fig_text(f, x, y, HEAD_PX, FIG_LEFT, INK, h);
}

static void step_bars(Fig *f, const HfStep *s) {
    char c[96];
    snprintf(c, sizeof c, "q, K, V, z: ±%g", (double)s->R);
    colorbar_h(f, 130, HEATFIG_H - 66, 380, 16, s->R, c);
    snprintf(c, sizeof c, "score: ±%g (clipped beyond)", (double)s->Rs);
    colorbar_h(f, 610, HEATFIG_H - 66, 380, 16, s->Rs, c);
    colorbar_h(f, 1090, HEATFIG_H - 66, 380, 16, 0, "weight: 0 to 1");
}

static int step_draw_decode(Fig *f, const StepDraw *d) {
    const HfStep *s = d->s;
    const int t = s->t, hs = s->hs, ch = d->ch, cw = d->cw;
    HfMatrix q = {1, hs, s->q, s->row, 1, NULL, s->R}, k = {t, hs, s->k, s->row, 1, NULL, s->R};
    HfMatrix v = {t, hs, s->v, s->row, 1, NULL, s->R}, z = {1, hs, s->z, s->row, 1, NULL, s->R};
    HfMatrix sc = {t, 1, s->s, 1, 0, NULL, s->Rs}, w = {t, 1, s->w, 1, 0, NULL, 0};
    draw_matrix(f, &q, d->xq, d->yq, cw, ch);
    draw_matrix(f, &k, d->xk, d->yk, cw, ch);
    draw_matrix(f, &sc, d->xs, d->yk, d->sw, ch);
    draw_matrix(f, &w, d->xw, d->yk, d->sw, ch);
    draw_matrix(f, &v, d->xv, d->yk, cw, ch);
    draw_matrix(f, &z, d->xz, d->yz, cw, ch);
    step_numbers(f, d, s->s, t, d->xs, s->Rs, "%.2f");
    step_numbers(f, d, s->w, t, d->xw, 0, "%.3f");
    step_head(f, d->xq, d->yq - 10, "q (%d×%d): the new token's query%s", 1, hs, "");
    step_head(f, d->xk, d->yk - 12, "K cache (%d×%d): one key per token%s", t, hs, "");
    step_head(f, d->xv, d->yk - 12, "V cache (%d×%d): one value per token%s", t, hs, "");
    step_head(f, d->xz, d->yz + ch + 24, "z (%d×%d) = Σ weight × value: the head's output%s", 1, hs, "");
    fig_text(f, d->xs + d->sw / 2.0, d->yk - 34, TEXT_PX, FIG_CENTER, INK, "score");
    fig_text(f, d->xs + d->sw / 2.0, d->yk - 12, TEXT_PX, FIG_CENTER, SOFT, "q·k/√hs");
    fig_text(f, d->xw + d->sw / 2.0, d->yk - 34, TEXT_PX, FIG_CENTER, INK, "weight");
    fig_text(f, d->xw + d->sw / 2.0, d->yk - 12, TEXT_PX, FIG_CENTER, SOFT, "softmax");
    fig_arrow(f, d->xq + hs * cw + 12, d->yq + ch / 2.0, d->xs - 6, d->yk - 40, SOFT, 2);
    fig_arrow(f, d->xv + hs * cw / 2.0, d->yk + t * ch + 6, d->xv + hs * cw / 2.0, d->yz - 4, SOFT, 2);
    const int y = d->yk + (t - 1) * ch; /* the new token's row */
    fig_frame(f, d->xk - 1.5, y - 1.5, hs * cw + 3, ch + 3, ORANGE, 3);
    fig_frame(f, d->xv - 1.5, y - 1.5, hs * cw + 3, ch + 3, ORANGE, 3);
    TokLabel *l = malloc((size_t)t * sizeof *l);
    if (!l) return -1;
    const int m = toklabel_axis(s->at.tok, s->slot_pos, t, l);
    row_labels(f, l, m, d->xk - 6, d->yk, ch, t - 1);
    free(l);
    char cap[96], note[64];
    snprintf(cap, sizeof cap, "cached tokens (oldest on top)%s", stride_note(note, sizeof note, axis_stride(ch)));
    fig_text_turned(f, d->xk - STEP_LAB + 4, d->yk + s->t_max * ch / 2.0, CAP_PX, -90, FIG_CENTER,
                    INK, cap);
    return 0;
}

static int step_draw_prefill(Fig *f, const StepDraw *d) {
    const HfStep *s = d->s;
    const int T = s->t, hs = s->hs, u = d->ch, cw = d->cw;
    HfMatrix q = {T, hs, s->q, s->row, 1, NULL, s->R}, k = {T, hs, s->k, s->row, 1, NULL, s->R};
    HfMatrix v = {T, hs, s->v, s->row, 1, NULL, s->R}, z = {T, hs, s->z, s->row, 1, NULL, s->R};
    HfMatrix sc = {T, T, s->s, (size_t)T, 1, d->mask, s->Rs}, w = {T, T, s->w, (size_t)T, 1, d->mask, 0};
    draw_matrix(f, &q, d->xq, d->yq, cw, u);
    draw_matrix(f, &k, d->xk, d->yk, cw, u);
    draw_matrix(f, &v, d->xv, d->yk, cw, u);
    draw_matrix(f, &sc, d->xs, d->ys, u, u);
    draw_matrix(f, &w, d->xw, d->ys, u, u);
    draw_matrix(f, &z, d->xz, d->yz, cw, u);
    step_head(f, d->xq, d->yq - 10, "Q (%d×%d): queries%s", T, hs, "");
    step_head(f, d->xk, d->yk - 10, "K (%d×%d): keys, all cached%s", T, hs, "");
    step_head(f, d->xv, d->yk - 10, "V (%d×%d): values, all cached%s", T, hs, "");
    step_head(f, d->xs, d->ys - 44, "scores (%d×%d)%s", T, T, "");
    fig_text(f, d->xs, d->ys - 10, HEAD_PX, FIG_LEFT, SOFT, "Q·K^T/√hs");
    step_head(f, d->xw, d->ys - 44, "weights (%d×%d)%s", T, T, "");
    fig_text(f, d->xw, d->ys - 10, HEAD_PX, FIG_LEFT, SOFT, "softmax");
    step_head(f, d->xz, d->yz - 44, "Z (%d×%d)%s", T, hs, "");
    fig_text(f, d->xz, d->yz - 10, HEAD_PX, FIG_LEFT, SOFT, "= weights·V");
    TokLabel *l = malloc((size_t)T * sizeof *l);
    if (!l) return -1;
    const int m = toklabel_axis(s->at.tok, NULL, T, l);
    row_labels(f, l, m, d->xq - 6, d->yq, u, -1);
    row_labels(f, l, m, d->xs - 6, d->ys, u, -1);
    col_labels(f, l, m, d->xs, u, d->ys + T * u);
    col_labels(f, l, m, d->xw, u, d->ys + T * u);
    free(l);
    return 0;
}

static int step_draw(Fig *f, void *user) {
    StepDraw *d = user;
    titles(f, d->title, d->sub);
    step_bars(f, d->s);
    return d->s->n == 1 ? step_draw_decode(f, d) : step_draw_prefill(f, d);
}

int heatfig_step(const HfStep *s, const char *png, const char *svg, char *err, size_t n) {
    StepDraw d = {.s = s};
    if (s->n < 1 || s->t < 1 || s->hs < 1 || step_setup(&d)) {
        free(d.mask);
        snprintf(err, n, "%s: out of memory (or bad shape)", png);
        return -1;
    }
    char desc[1024];
    snprintf(desc, sizeof desc,
             "phase=%s step=%d layer=%d head=%d queries=%d keys=%d hs=%d range=+/-%g "
             "range_scores=+/-%g grid_q=%d,%d grid_k=%d,%d grid_v=%d,%d grid_s=%d,%d "
             "grid_w=%d,%d grid_z=%d,%d cell_token=%d cell_channel=%d cell_score=%d",
             s->at.step ? "decode" : "prefill", s->at.step, s->at.layer, s->at.head, s->n, s->t,
             s->hs, (double)s->R, (double)s->Rs, d.xq, d.yq, d.xk, d.yk, d.xv,
             s->n == 1 ? d.yk : d.yk, d.xs, d.ys, d.xw, d.ys, d.xz, d.yz, d.ch, d.cw, d.sw);
    PngText t = {d.title, desc};
    int rc = fig_write(png, svg, HEATFIG_W, HEATFIG_H, step_draw, &d, &t, err, n);
    free(d.mask);
    return rc;
}

/* ---- every head ---- */

typedef struct {
    const HfHeads *h;
    int cols, u, P, x0, y0, gx, gy;
    unsigned char *mask;
    char title[256];
} HeadsDraw;

static void heads_layout(HeadsDraw *d) {
    const int NH = d->h->NH, T = d->h->T, aw = HEATFIG_W - 160 - 190, ah = HEATFIG_H - 110 - 50;
    d->gx = 26, d->gy = 44;
    int best = 1, bp = 0;
    for (int c = 1; c <= NH; c++) {
        const int r = (NH + c - 1) / c;
        const int p = imin((aw - (c - 1) * d->gx) / c, (ah - r * d->gy) / r);
        if (p > bp) bp = p, best = c;
    }
    d->cols = best;
    d->u = clampi(bp / T, 1, 64);
    d->P = d->u * T;
    const int rows = (NH + best - 1) / best;
    d->x0 = 160 + (aw - (best * d->P + (best - 1) * d->gx)) / 2;
    d->y0 = 110 + d->gy + (ah - rows * (d->P + d->gy)) / 2;
    const char *pn = d->h->at.prompt_name;
    snprintf(d->title, sizeof d->title, "Prefill, layer %d: the attention weights of all %d heads%s%s",
             d->h->at.layer, NH, pn && *pn ? " on " : "", pn && *pn ? pn : "");
}

static int heads_draw(Fig *f, void *user) {
    HeadsDraw *d = user;
    const HfHeads *h = d->h;
    const int T = h->T;
    titles(f, d->title, "each head has its own queries and keys, so its own T×T square; "
                        "one colour scale for all");
    TokLabel *l = malloc((size_t)T * sizeof *l);
    if (!l) return -1;
    const int m = toklabel_axis(h->at.tok, NULL, T, l), rows = (h->NH + d->cols - 1) / d->cols;
    for (int i = 0; i < h->NH; i++) {
        const int r = i / d->cols, c = i % d->cols;
        const int x = d->x0 + c * (d->P + d->gx), y = d->y0 + r * (d->P + d->gy);
        HfMatrix w = {T, T, h->w + (size_t)i * T * T, (size_t)T, 1, d->mask, 0};
        draw_matrix(f, &w, x, y, d->u, d->u);
        char b[32];
        snprintf(b, sizeof b, "head %d", i);
        fig_text(f, x + d->P / 2.0, y - 9, TEXT_PX, FIG_CENTER, INK, b);
        if (c == 0 && d->u >= 8) row_labels(f, l, m, x - 5, y, d->u, -1);
        if ((r == rows - 1 || i + d->cols >= h->NH) && d->u >= 8 && d->P >= 60)
            col_labels(f, l, m, x, d->u, y + d->P);
    }
    free(l);
    const int right = d->x0 + d->cols * d->P + (d->cols - 1) * d->gx;
    colorbar_v(f, right + 50, d->y0, 24, imax(rows * d->P + (rows - 1) * d->gy, 200), 0,
               "weight (0 to 1)");
    return 0;
}

int heatfig_heads(const HfHeads *h, const char *png, const char *svg, char *err, size_t n) {
    HeadsDraw d = {.h = h};
    heads_layout(&d);
    d.mask = malloc((size_t)h->T * (size_t)h->T);
    if (!d.mask) {
        snprintf(err, n, "%s: out of memory", png);
        return -1;
    }
    for (int i = 0; i < h->T; i++)
        for (int j = 0; j < h->T; j++) d.mask[(size_t)i * h->T + j] = j <= i ? HF_VALUE : HF_MASKED;
    char desc[512];
    snprintf(desc, sizeof desc,
             "phase=prefill step=0 layer=%d heads=%d matrix=weights shape=%dx%d colormap=viridis "
             "range=0..1 masked=grey(128) grid=%d,%d,%d,%d panels=%d per row, %d px apart",
             h->at.layer, h->NH, h->T, h->T, d.x0, d.y0, d.u, d.u, d.cols, d.P + d.gx);
    PngText t = {d.title, desc};
    int rc = fig_write(png, svg, HEATFIG_W, HEATFIG_H, heads_draw, &d, &t, err, n);
    free(d.mask);
    return rc;
}
