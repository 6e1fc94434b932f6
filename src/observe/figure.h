/* figure.h — one drawing, two files: a figure drawn with cairo into a PNG and an SVG.
 *
 * A figure is a function that draws on a Fig; fig_write runs it twice, once on an
 * image surface (written as a PNG by png_out.c, with its Title and Description
 * chunks) and once on an SVG surface, so the two files are the same figure: same
 * layout, same font sizes, same colours. Text is drawn in one font, FIG_FONT, which
 * covers Latin and CJK (a character it lacks, in FIG_FONT_FALLBACK); in the SVG every glyph is an outline, so it looks the same
 * on a machine without that font. Coordinates are pixels of the PNG (the SVG's user
 * units are pixels too). Both files are written atomically (a temporary name beside
 * the target, renamed on success); the same drawing gives the same bytes.
 *
 * Text markup in fig_text: "^x" or "^{xy}" draws x (xy) as a superscript: "K^T", at
 * 0.62 of the text's size but not under FIG_MIN_TEXT_PX (the smallest text `make
 * check-figures` accepts at the published size).
 */
#ifndef KVSCOPE_FIGURE_H
#define KVSCOPE_FIGURE_H

#include <stddef.h>

#include "colormap.h"
#include "png_out.h"

#define FIG_FONT "WenQuanYi Zen Hei" /* Debian fonts-wqy-zenhei: Latin and CJK */
/* for the characters FIG_FONT lacks, such as ⟨ ⟩ of the start token's label ⟨s⟩ */
#define FIG_FONT_FALLBACK "DejaVu Sans" /* Debian fonts-dejavu-core */
#define FIG_MAX_PIXELS ((size_t)64 << 20)
#define FIG_MIN_TEXT_PX 27.0 /* 18 px when a 1600 × 900 figure fills 0.84 of a 1280 × 720 slide (the deck) */

typedef struct Fig Fig;
typedef enum { FIG_LEFT, FIG_CENTER, FIG_RIGHT } FigAlign;

/* Draws the figure; 0, or -1 (then nothing is written). */
typedef int (*FigDraw)(Fig *f, void *user);

/* Draw w × h pixels into png_path (text chunks from text) and, when svg_path is not
 * NULL, into svg_path. 0, or -1 with err = "<path>: <reason>". */
int fig_write(const char *png_path, const char *svg_path, int w, int h, FigDraw draw, void *user,
              const PngText *text, char *err, size_t errsize);

/* Draw into an RGB buffer of w × h × 3 bytes (top row first): for the GIF frames,
 * which are the PNG's pixels. 0, or -1 (out of memory, or draw failed). */
int fig_render_rgb(unsigned char *rgb, int w, int h, FigDraw draw, void *user);

/* Free the font caches cairo and fontconfig keep for the whole process (so that leak
 * checkers see nothing left). Call only when no figure is being drawn: at the end. */
void fig_release(void);

/* ---- drawing ---- */
void fig_rect(Fig *f, double x, double y, double w, double h, Rgb c);
void fig_frame(Fig *f, double x, double y, double w, double h, Rgb c, double lw);
void fig_line(Fig *f, double x0, double y0, double x1, double y1, Rgb c, double lw);
void fig_dashed(Fig *f, double x0, double y0, double x1, double y1, Rgb c, double lw,
                double dash);
/* An arrow from (x0, y0) to (x1, y1) with its head at the end. */
void fig_arrow(Fig *f, double x0, double y0, double x1, double y1, Rgb c, double lw);
/* White, with black diagonal lines 2 px wide every 8 px (an evicted cache cell),
 * clipped to the rectangle; the lines run in figure coordinates so that neighbouring
 * cells join into one hatched band. */
void fig_hatch(Fig *f, double x, double y, double w, double h);

/* Text of the given pixel size, its baseline at y; returns its width. */
double fig_text(Fig *f, double x, double y, double size, FigAlign a, Rgb c, const char *s);
/* The same, vertically centred on y (by the font's ascent and descent). */
double fig_text_mid(Fig *f, double x, double y, double size, FigAlign a, Rgb c, const char *s);
/* Centred on y, turned by deg degrees (-90: reading upwards), anchored by a along
 * the turned baseline. */
void fig_text_turned(Fig *f, double x, double y, double size, double deg, FigAlign a, Rgb c,
                     const char *s);
double fig_text_width(Fig *f, double size, const char *s);

#endif
