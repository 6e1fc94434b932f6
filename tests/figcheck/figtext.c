/* figtext.c — the text of a figure's SVG, for tests/figcheck/figcheck.sh: every text at
 * least SLIDE_PX tall when the figure is shown as the lecture deck shows it: DECK_SHARE of
 * a 16:9 slide projected at SLIDE_W×SLIDE_H (so SLIDE_PX · max(W/SLIDE_W, H/SLIDE_H) /
 * DECK_SHARE at its published size W×H: 26.8 px for 1600×900), and no two texts
 * overlapping.
 *
 *   figtext SVG         one line per failure on stdout, naming the figure and the texts;
 *                       exit 0 pass, 1 fail, 2 unreadable
 *   figtext --min-px PX SVG   the same with PX as the smallest size allowed at the
 *                       published size (a figure another issue is redoing, see figcheck.sh)
 *   figtext --list SVG  every text (box, glyphs, size), to see what the check sees
 *
 * Every SVG in plots/ is written by cairo — kvscope's figures by figure.c, the gnuplot
 * charts by poppler's pdftocairo (plots/publish.sh) — with every glyph an outline:
 * <symbol id="glyphF-G"><path d="..."/></symbol> once per glyph G of font subset F,
 * and the text drawn as runs, <g style="fill:..."> <use xlink:href="#glyphF-G" x y/>…
 * </g>, one run per string shown (a superscript or a fallback font's piece is a run of
 * its own). So the extents are exact, not estimated:
 *   - a glyph's box is the box of its outline's points (control points included: at
 *     most a fraction of a pixel larger than the ink), placed at the use's x, y; the
 *     outlines of turned text are turned already, so boxes are in page coordinates;
 *   - a text is a run; its name in a message is its box, its glyph count and its size.
 * Sizes. The outlines do not carry the font size, but every subset F holds the font's
 * .notdef glyph (glyphF-0), a box whose height is a fixed part of the em: 0.666 em in
 * WenQuanYi Zen Hei (every figure's font; box width/height 0.40) and 0.88 em in DejaVu
 * Sans (the fallback for ⟨ ⟩; width/height 0.57), as cairo measures them at 100 px.
 * The subset's font is told by that aspect ratio; a subset without a .notdef, or one
 * with another aspect, is reported as of unknown size (a failure: a new font needs its
 * ratio here). Sizes are em sizes at the published size: the SVG's width over its
 * viewBox width scales user units to the PNG's pixels (2 for the gnuplot charts).
 * Overlap: two glyphs of different runs whose boxes intersect by more than OVERLAP_PX
 * in both directions (touching neighbours, as a superscript beside its base, pass).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The deck (plots/slides.sh) shows a figure at 0.84 to 0.92 of a 1280×720 slide (the rest
 * is its caption); its text must be 18 px there, at the smallest share. */
#define SLIDE_PX 18.0
#define DECK_SHARE 0.84
#define SLIDE_W 1280.0
#define SLIDE_H 720.0
#define OVERLAP_PX 1.0
#define MAX_REPORT 12 /* failures printed per figure; the count says the rest */

typedef struct {
    double x0, y0, x1, y1;
} Box;

typedef struct {
    int font, glyph;
    Box b; /* empty (x0 > x1) for a glyph without ink: a space */
} Sym;

typedef struct {
    Box b;
    int run, font;
} Glyph;

typedef struct {
    Sym *sym;
    size_t nsym, csym;
    Glyph *g;
    size_t ng, cg;
    double scale;
    double min_px; /* SLIDE_PX at the published size */
} Svg;

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 256;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * size);
    if (!q) return -1;
    *p = q, *cap = c;
    return 0;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (grow((void **)&s, &cap, n + 65537, 1)) {
            free(s);
            fclose(f);
            return NULL;
        }
        size_t r = fread(s + n, 1, 65536, f);
        n += r;
        if (r < 65536) break;
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(s);
        return NULL;
    }
    s[n] = '\0';
    return s;
}

/* The number after attr=" in the tag that starts at tag (and ends at the next '>'). */
static int attr_num(const char *tag, const char *attr, double *v) {
    const char *end = strchr(tag, '>');
    char key[32];
    snprintf(key, sizeof key, " %s=\"", attr);
    const char *p = strstr(tag, key);
    if (!p || (end && p > end)) return -1;
    char *e;
    *v = strtod(p + strlen(key), &e);
    return e == p + strlen(key) ? -1 : 0;
}

/* The box of the points of a path's d: every number pair (the commands are absolute). */
static Box path_box(const char *d, const char *end) {
    Box b = {1e30, 1e30, -1e30, -1e30};
    double xy[2];
    int k = 0;
    while (d < end) {
        if ((*d >= '0' && *d <= '9') || *d == '-' || *d == '.') {
            char *e;
            xy[k] = strtod(d, &e);
            d = e;
            if (++k == 2) {
                if (xy[0] < b.x0) b.x0 = xy[0];
                if (xy[0] > b.x1) b.x1 = xy[0];
                if (xy[1] < b.y0) b.y0 = xy[1];
                if (xy[1] > b.y1) b.y1 = xy[1];
                k = 0;
            }
        } else {
            d++;
        }
    }
    return b;
}

static int parse_symbols(Svg *s, const char *t) {
    for (const char *p = strstr(t, "<symbol"); p; p = strstr(p + 1, "<symbol")) {
        int font, glyph;
        const char *id = strstr(p, "id=\"glyph");
        if (!id || sscanf(id, "id=\"glyph%d-%d\"", &font, &glyph) != 2) continue;
        const char *end = strstr(p, "</symbol>");
        if (!end) return -1;
        Box b = {1e30, 1e30, -1e30, -1e30};
        for (const char *d = strstr(p, " d=\""); d && d < end; d = strstr(d + 1, " d=\"")) {
            const char *q = strchr(d + 4, '"');
            if (!q) return -1;
            Box pb = path_box(d + 4, q);
            if (pb.x0 < b.x0) b.x0 = pb.x0;
            if (pb.y0 < b.y0) b.y0 = pb.y0;
            if (pb.x1 > b.x1) b.x1 = pb.x1;
            if (pb.y1 > b.y1) b.y1 = pb.y1;
        }
        if (grow((void **)&s->sym, &s->csym, s->nsym + 1, sizeof *s->sym)) return -1;
        s->sym[s->nsym++] = (Sym){font, glyph, b};
    }
    return 0;
}

static const Sym *find_sym(const Svg *s, int font, int glyph) {
    for (size_t i = 0; i < s->nsym; i++)
        if (s->sym[i].font == font && s->sym[i].glyph == glyph) return &s->sym[i];
    return NULL;
}

/* Every use of a glyph, its run = the number of the <g> it is in. */
static int parse_uses(Svg *s, const char *t) {
    const char *body = strstr(t, "</defs>");
    int run = 0;
    for (const char *p = body ? body : t; (p = strchr(p, '<')) != NULL; p++) {
        if (p[1] == 'g' && (p[2] == ' ' || p[2] == '>')) run++;
        if (strncmp(p, "<use xlink:href=\"#glyph", 23) != 0) continue;
        int font, glyph;
        double x = 0, y = 0;
        if (sscanf(p + 23, "%d-%d", &font, &glyph) != 2 || attr_num(p, "x", &x) ||
            attr_num(p, "y", &y))
            return -1;
        const Sym *m = find_sym(s, font, glyph);
        if (!m || m->b.x0 > m->b.x1) continue; /* no ink */
        const double k = s->scale;
        if (grow((void **)&s->g, &s->cg, s->ng + 1, sizeof *s->g)) return -1;
        s->g[s->ng++] = (Glyph){{(x + m->b.x0) * k, (y + m->b.y0) * k, (x + m->b.x1) * k,
                                 (y + m->b.y1) * k},
                                run, font};
    }
    return 0;
}

/* The em size in published pixels of font subset f, from its .notdef; 0: unknown. */
static double font_px(const Svg *s, int f) {
    const Sym *nd = find_sym(s, f, 0);
    if (!nd || nd->b.x0 > nd->b.x1) return 0;
    double w = nd->b.x1 - nd->b.x0, h = nd->b.y1 - nd->b.y0;
    if (w > h) { /* turned text: its box is turned too */
        double t = w;
        w = h, h = t;
    }
    const double aspect = w / h;
    const double em = aspect > 0.35 && aspect < 0.45 ? h / 0.666 : aspect > 0.52 && aspect < 0.62 ? h / 0.88 : 0;
    return em * s->scale;
}

static Box run_box(const Svg *s, size_t from, size_t *to) {
    Box b = s->g[from].b;
    size_t i = from + 1;
    for (; i < s->ng && s->g[i].run == s->g[from].run; i++) {
        const Box *c = &s->g[i].b;
        if (c->x0 < b.x0) b.x0 = c->x0;
        if (c->y0 < b.y0) b.y0 = c->y0;
        if (c->x1 > b.x1) b.x1 = c->x1;
        if (c->y1 > b.y1) b.y1 = c->y1;
    }
    *to = i;
    return b;
}

static int overlap(const Box *a, const Box *b) {
    const double w = (a->x1 < b->x1 ? a->x1 : b->x1) - (a->x0 > b->x0 ? a->x0 : b->x0);
    const double h = (a->y1 < b->y1 ? a->y1 : b->y1) - (a->y0 > b->y0 ? a->y0 : b->y0);
    return w > OVERLAP_PX && h > OVERLAP_PX;
}

typedef struct {
    size_t first, end; /* its glyphs */
    Box b;
    double px;
} Run;

static void name(char *buf, size_t n, const Run *r) {
    snprintf(buf, n, "the text at x %.0f-%.0f, y %.0f-%.0f (%zu glyph%s, %.1f px)", r->b.x0,
             r->b.x1, r->b.y0, r->b.y1, r->end - r->first, r->end - r->first == 1 ? "" : "s",
             r->px);
}

static int runs_overlap(const Svg *s, const Run *a, const Run *b) {
    if (!overlap(&a->b, &b->b)) return 0;
    for (size_t i = a->first; i < a->end; i++)
        for (size_t j = b->first; j < b->end; j++)
            if (overlap(&s->g[i].b, &s->g[j].b)) return 1;
    return 0;
}

/* Print the failures; returns their number. */
static int check(const char *path, const Svg *s, Run *r, size_t nr) {
    int fails = 0;
    char a[160], b[160];
    for (size_t i = 0; i < nr; i++) {
        name(a, sizeof a, &r[i]);
        if (r[i].px < s->min_px && ++fails <= MAX_REPORT) {
            if (r[i].px > 0)
                printf("%s: %s is below %.1f px (%.0f px at %.2f of a %.0fx%.0f slide)\n", path, a,
                       s->min_px, SLIDE_PX, DECK_SHARE, SLIDE_W, SLIDE_H);
            else printf("%s: %s is in a font of unknown size\n", path, a);
        }
        for (size_t j = i + 1; j < nr; j++)
            if (runs_overlap(s, &r[i], &r[j]) && ++fails <= MAX_REPORT) {
                name(b, sizeof b, &r[j]);
                printf("%s: %s overlaps %s\n", path, a, b);
            }
    }
    if (fails > MAX_REPORT) printf("%s: %d more text failures\n", path, fails - MAX_REPORT);
    return fails;
}

/* The scale from user units to published pixels, and the smallest text allowed there. */
static int scale_of(const char *t, double *k, double *min_px) {
    const char *svg = strstr(t, "<svg");
    double w, h, vw;
    const char *vb = svg ? strstr(svg, "viewBox=\"") : NULL;
    if (!svg || attr_num(svg, "width", &w) || attr_num(svg, "height", &h) || !vb ||
        sscanf(vb, "viewBox=\"%*f %*f %lf", &vw) != 1 || vw <= 0 || w <= 0 || h <= 0)
        return -1;
    *k = w / vw;
    const double fit = w / SLIDE_W > h / SLIDE_H ? w / SLIDE_W : h / SLIDE_H;
    *min_px = SLIDE_PX * fit / DECK_SHARE;
    return 0;
}

int main(int argc, char **argv) {
    const int list = argc == 3 && strcmp(argv[1], "--list") == 0;
    const int given = argc == 4 && strcmp(argv[1], "--min-px") == 0;
    double min_px = 0;
    if ((argc != 2 && !list && !given) || (given && (sscanf(argv[2], "%lf", &min_px) != 1 || min_px <= 0))) {
        fprintf(stderr, "usage: figtext [--list | --min-px PX] SVG\n");
        return 2;
    }
    const char *path = argv[argc - 1];
    char *t = slurp(path);
    Svg s = {0};
    Run *r = NULL;
    size_t nr = 0, cr = 0;
    int rc = 2;
    if (!t || scale_of(t, &s.scale, &s.min_px) || parse_symbols(&s, t) || parse_uses(&s, t)) {
        fprintf(stderr, "figtext: %s: %s\n", path, t ? "not an SVG with cairo's glyphs" : "cannot read");
        goto out;
    }
    if (given) s.min_px = min_px;
    for (size_t i = 0, j; i < s.ng; i = j) {
        Box b = run_box(&s, i, &j);
        if (grow((void **)&r, &cr, nr + 1, sizeof *r)) goto out;
        r[nr++] = (Run){i, j, b, font_px(&s, s.g[i].font)};
    }
    char buf[160];
    for (size_t i = 0; list && i < nr; i++) {
        name(buf, sizeof buf, &r[i]);
        printf("%s\n", buf);
    }
    rc = check(path, &s, r, nr) ? 1 : 0;
out:
    free(t);
    free(s.sym);
    free(s.g);
    free(r);
    return rc;
}
