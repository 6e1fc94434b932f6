/* figure.c — cairo surfaces for PNG (via png_out.c) and SVG, and the few drawing
 * calls the figures need. See figure.h. */
#include "figure.h"

#include <cairo-svg.h>
#include <cairo.h>
#include <errno.h>
#include <fontconfig/fontconfig.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outdir.h"

struct Fig {
    cairo_t *cr;
};

static void set_rgb(Fig *f, Rgb c) {
    cairo_set_source_rgb(f->cr, c.r / 255.0, c.g / 255.0, c.b / 255.0);
}

/* Grey antialiasing, no hinting: glyph shapes that do not depend on the surface. */
static void setup(cairo_t *cr) {
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
    cairo_select_font_face(cr, FIG_FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
}

static int draw_on(cairo_surface_t *s, FigDraw draw, void *user) {
    cairo_t *cr = cairo_create(s);
    setup(cr);
    Fig f = {cr};
    int rc = draw(&f, user);
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) rc = -1;
    cairo_destroy(cr);
    return rc;
}

int fig_render_rgb(unsigned char *rgb, int w, int h, FigDraw draw, void *user) {
    if (w < 1 || h < 1 || (size_t)w * (size_t)h > FIG_MAX_PIXELS) return -1;
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
        cairo_surface_destroy(s);
        return -1;
    }
    int rc = draw_on(s, draw, user);
    cairo_surface_flush(s);
    if (rc == 0) {
        const unsigned char *d = cairo_image_surface_get_data(s);
        const int stride = cairo_image_surface_get_stride(s);
        for (int y = 0; y < h; y++) {
            const uint32_t *row = (const uint32_t *)(const void *)(d + (size_t)y * stride);
            unsigned char *o = rgb + (size_t)y * w * 3;
            for (int x = 0; x < w; x++, o += 3)
                o[0] = (unsigned char)(row[x] >> 16), o[1] = (unsigned char)(row[x] >> 8),
                o[2] = (unsigned char)row[x];
        }
    }
    cairo_surface_destroy(s);
    return rc;
}

/* ---- SVG, written to a temporary file and renamed ---- */

/* cairo numbers its surfaces ("surface17") with a counter for the whole process; the
 * SVG is kept in memory and its surface ids numbered from 1 in order of appearance,
 * so that a figure's bytes do not depend on what was drawn before it. */
typedef struct {
    char *p;
    size_t n, cap;
    int failed;
} SvgBuf;

static cairo_status_t svg_collect(void *closure, const unsigned char *data, unsigned int n) {
    SvgBuf *b = closure;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->n + n) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->failed = 1;
            return CAIRO_STATUS_NO_MEMORY;
        }
        b->p = q, b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    return CAIRO_STATUS_SUCCESS;
}

static int svg_out(FILE *fp, const SvgBuf *b) {
    enum { MAXID = 64 };
    long seen[MAXID];
    int nseen = 0;
    static const char key[] = "surface";
    size_t i = 0, from = 0;
    while (i + sizeof key - 1 < b->n) {
        if (memcmp(b->p + i, key, sizeof key - 1) != 0 || b->p[i + sizeof key - 1] < '0' ||
            b->p[i + sizeof key - 1] > '9') {
            i++;
            continue;
        }
        size_t j = i + sizeof key - 1;
        long id = 0;
        while (j < b->n && b->p[j] >= '0' && b->p[j] <= '9') id = id * 10 + (b->p[j++] - '0');
        int k = 0;
        while (k < nseen && seen[k] != id) k++;
        if (k == nseen && nseen < MAXID) seen[nseen++] = id;
        if (fwrite(b->p + from, 1, i - from, fp) != i - from || fprintf(fp, "surface%d", k + 1) < 0)
            return -1;
        from = i = j;
    }
    return fwrite(b->p + from, 1, b->n - from, fp) == b->n - from ? 0 : -1;
}

static int write_svg(const char *path, int w, int h, FigDraw draw, void *user, char *err,
                     size_t errsize) {
    SvgBuf b = {NULL, 0, 0, 0};
    cairo_surface_t *s = cairo_svg_surface_create_for_stream(svg_collect, &b, w, h);
    cairo_svg_surface_restrict_to_version(s, CAIRO_SVG_VERSION_1_1);
    cairo_svg_surface_set_document_unit(s, CAIRO_SVG_UNIT_PX);
    int rc = cairo_surface_status(s) == CAIRO_STATUS_SUCCESS ? draw_on(s, draw, user) : -1;
    cairo_surface_finish(s);
    if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS || b.failed) rc = -1;
    cairo_surface_destroy(s);
    if (rc) {
        free(b.p);
        snprintf(err, errsize, "%s: cannot draw SVG (out of memory?)", path);
        return -1;
    }
    AtomicFile af;
    FILE *fp = atomic_open(&af, path, 0);
    rc = fp ? svg_out(fp, &b) : -1;
    int saved = errno;
    free(b.p);
    if (fp && rc != 0) atomic_abort(&af, fp);
    else if (fp && atomic_commit(&af, fp) != 0) rc = -1, saved = errno;
    if (rc != 0) snprintf(err, errsize, "%s: %s", path, saved ? strerror(saved) : "write error");
    return rc;
}

int fig_write(const char *png_path, const char *svg_path, int w, int h, FigDraw draw, void *user,
              const PngText *text, char *err, size_t errsize) {
    if (w < 1 || h < 1 || (size_t)w * (size_t)h > FIG_MAX_PIXELS) {
        snprintf(err, errsize, "%s: bad figure size %dx%d", png_path, w, h);
        return -1;
    }
    unsigned char *rgb = malloc((size_t)w * (size_t)h * 3);
    if (!rgb) {
        snprintf(err, errsize, "%s: out of memory for a %dx%d figure", png_path, w, h);
        return -1;
    }
    int rc = fig_render_rgb(rgb, w, h, draw, user);
    if (rc) snprintf(err, errsize, "%s: cannot draw the figure", png_path);
    else rc = png_write_rgb(png_path, rgb, w, h, text, err, errsize);
    free(rgb);
    if (rc == 0 && svg_path) rc = write_svg(svg_path, w, h, draw, user, err, errsize);
    return rc;
}

void fig_release(void) {
    cairo_debug_reset_static_data();
    FcFini();
}

/* ---- shapes ---- */

void fig_rect(Fig *f, double x, double y, double w, double h, Rgb c) {
    set_rgb(f, c);
    cairo_rectangle(f->cr, x, y, w, h);
    cairo_fill(f->cr);
}

void fig_frame(Fig *f, double x, double y, double w, double h, Rgb c, double lw) {
    set_rgb(f, c);
    cairo_set_line_width(f->cr, lw);
    cairo_rectangle(f->cr, x, y, w, h);
    cairo_stroke(f->cr);
}

void fig_line(Fig *f, double x0, double y0, double x1, double y1, Rgb c, double lw) {
    set_rgb(f, c);
    cairo_set_line_width(f->cr, lw);
    cairo_move_to(f->cr, x0, y0);
    cairo_line_to(f->cr, x1, y1);
    cairo_stroke(f->cr);
}

void fig_dashed(Fig *f, double x0, double y0, double x1, double y1, Rgb c, double lw,
                double dash) {
    cairo_set_dash(f->cr, &dash, 1, 0);
    fig_line(f, x0, y0, x1, y1, c, lw);
    cairo_set_dash(f->cr, NULL, 0, 0);
}

void fig_arrow(Fig *f, double x0, double y0, double x1, double y1, Rgb c, double lw) {
    double dx = x1 - x0, dy = y1 - y0, n = dx * dx + dy * dy;
    if (n <= 0) return;
    /* unit vector without libm's sqrt: two Newton steps from a good start are plenty */
    double len = n > 1 ? n / 2 : 1;
    for (int i = 0; i < 30; i++) len = 0.5 * (len + n / len);
    const double ux = dx / len, uy = dy / len, head = 4.0 * lw + 6.0;
    fig_line(f, x0, y0, x1 - ux * head * 0.8, y1 - uy * head * 0.8, c, lw);
    set_rgb(f, c);
    cairo_move_to(f->cr, x1, y1);
    cairo_line_to(f->cr, x1 - ux * head - uy * head * 0.45, y1 - uy * head + ux * head * 0.45);
    cairo_line_to(f->cr, x1 - ux * head + uy * head * 0.45, y1 - uy * head - ux * head * 0.45);
    cairo_close_path(f->cr);
    cairo_fill(f->cr);
}

void fig_hatch(Fig *f, double x, double y, double w, double h) {
    static const Rgb WHITE = {255, 255, 255}, BLACK = {0, 0, 0};
    fig_rect(f, x, y, w, h, WHITE);
    cairo_save(f->cr);
    cairo_rectangle(f->cr, x, y, w, h);
    cairo_clip(f->cr);
    set_rgb(f, BLACK);
    cairo_set_line_width(f->cr, 2.0);
    /* lines x + y = 8k, in figure coordinates */
    long k0 = (long)((x + y) / 8) - 1, k1 = (long)((x + w + y + h) / 8) + 1;
    for (long k = k0; k <= k1; k++) {
        double s = 8.0 * (double)k + 1.0;
        cairo_move_to(f->cr, s - y, y);
        cairo_line_to(f->cr, s - (y + h), y + h);
    }
    cairo_stroke(f->cr);
    cairo_restore(f->cr);
}

/* ---- text, with "^x" / "^{xy}" superscripts ---- */

/* Length of the UTF-8 character starting at s (1 for a stray byte). */
static int utf8_len(const char *s) {
    const unsigned char c = (unsigned char)*s;
    int n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    for (int i = 1; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) return 1;
    return n;
}

/* 1 if the current font has a glyph for the character at s (n bytes): ASCII always. */
static int has_glyph(Fig *f, const char *s, int n) {
    if ((unsigned char)s[0] < 0x80) return 1;
    cairo_glyph_t *g = NULL;
    int ng = 0;
    const cairo_status_t st = cairo_scaled_font_text_to_glyphs(cairo_get_scaled_font(f->cr), 0, 0, s, n,
                                                               &g, &ng, NULL, NULL, NULL);
    const int ok = st == CAIRO_STATUS_SUCCESS && ng > 0 && g[0].index != 0;
    cairo_glyph_free(g);
    return ok;
}

/* Measure (and draw, when draw is set) s at the current size: the characters FIG_FONT
 * lacks (⟨ ⟩ of the start token ⟨s⟩) in FIG_FONT_FALLBACK, the rest in FIG_FONT.
 * Returns the advance. */
static double show_fallback(Fig *f, const char *s, double rise, int draw) {
    char piece[512];
    double w = 0.0;
    while (*s) {
        const int have = has_glyph(f, s, utf8_len(s));
        size_t n = 0;
        while (s[n] && has_glyph(f, s + n, utf8_len(s + n)) == have && n + 4 < sizeof piece)
            n += (size_t)utf8_len(s + n);
        memcpy(piece, s, n);
        piece[n] = '\0';
        s += n;
        if (!have)
            cairo_select_font_face(f->cr, FIG_FONT_FALLBACK, CAIRO_FONT_SLANT_NORMAL,
                                   CAIRO_FONT_WEIGHT_NORMAL);
        cairo_text_extents_t e;
        cairo_text_extents(f->cr, piece, &e);
        if (draw) {
            double cx, cy;
            cairo_get_current_point(f->cr, &cx, &cy);
            cairo_move_to(f->cr, cx, cy + rise);
            cairo_show_text(f->cr, piece);
            cairo_move_to(f->cr, cx + e.x_advance, cy);
        }
        if (!have)
            cairo_select_font_face(f->cr, FIG_FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
        w += e.x_advance;
    }
    return w;
}

/* Walk the runs of s: normal text and superscripts. Draws when draw is set (the
 * current point is the start of the baseline); returns the width. */
static double runs(Fig *f, const char *s, double size, int draw) {
    char buf[512];
    double w = 0.0;
    while (*s) {
        int sup = 0;
        size_t n = 0;
        if (s[0] == '^' && s[1]) {
            sup = 1;
            s++;
            if (*s == '{') {
                s++;
                while (s[n] && s[n] != '}') n++;
            } else {
                n = (size_t)utf8_len(s);
            }
        } else {
            while (s[n] && !(s[n] == '^' && s[n + 1])) n++;
        }
        if (n >= sizeof buf) n = sizeof buf - 1;
        memcpy(buf, s, n);
        buf[n] = '\0';
        s += n;
        if (sup && *s == '}') s++;
        double sz = sup ? size * 0.62 : size;
        if (sup && sz < FIG_MIN_TEXT_PX) sz = size < FIG_MIN_TEXT_PX ? size : FIG_MIN_TEXT_PX;
        const double rise = sup ? -size * 0.42 : 0.0;
        cairo_set_font_size(f->cr, sz);
        w += show_fallback(f, buf, rise, draw);
    }
    cairo_set_font_size(f->cr, size);
    return w;
}

double fig_text_width(Fig *f, double size, const char *s) { return runs(f, s, size, 0); }

double fig_text(Fig *f, double x, double y, double size, FigAlign a, Rgb c, const char *s) {
    const double w = runs(f, s, size, 0);
    const double x0 = a == FIG_LEFT ? x : a == FIG_CENTER ? x - w / 2 : x - w;
    set_rgb(f, c);
    cairo_move_to(f->cr, x0, y);
    runs(f, s, size, 1);
    cairo_new_path(f->cr);
    return w;
}

static double mid_shift(Fig *f, double size) {
    cairo_set_font_size(f->cr, size);
    cairo_font_extents_t fe;
    cairo_font_extents(f->cr, &fe);
    return (fe.ascent - fe.descent) / 2;
}

double fig_text_mid(Fig *f, double x, double y, double size, FigAlign a, Rgb c, const char *s) {
    return fig_text(f, x, y + mid_shift(f, size), size, a, c, s);
}

void fig_text_turned(Fig *f, double x, double y, double size, double deg, FigAlign a, Rgb c,
                     const char *s) {
    cairo_save(f->cr);
    cairo_translate(f->cr, x, y);
    cairo_rotate(f->cr, deg * 3.14159265358979323846 / 180.0);
    fig_text_mid(f, 0, 0, size, a, c, s);
    cairo_restore(f->cr);
}
