/* colormap.h — a number → an RGB colour, by table lookup only.
 *
 * Two maps, both perceptually ordered and readable with the common colour-vision
 * deficiencies:
 *   viridis    for attention weights in [0, 1]: dark purple (0) → teal → yellow (1);
 *              matplotlib's 256-entry table (CC0), rounded to 8 bits.
 *   cool–warm  for signed values (scores, Q, K, V) in [-R, R]: blue (-R) → light grey
 *              (0) → red (+R); Kenneth Moreland's diverging map (2009), built in his
 *              Msh space, 255 entries so that 0 falls on the exact centre.
 * Masked cells (future positions a query does not attend to) take COLOR_MASKED, a
 * mid grey that is in neither map (viridis has no grey; cool–warm's only grey is its
 * much lighter centre, 221).
 *
 * Index rule (pure float arithmetic, no libm, so the same bytes on every machine):
 *   viridis    i = (int)(w · 255 + 0.5) with w clipped to [0, 1]
 *   cool–warm  i = (int)((x / R + 1) · 127 + 0.5) with x / R clipped to [-1, 1]
 * NaN maps to COLOR_MASKED.
 */
#ifndef KVSCOPE_COLORMAP_H
#define KVSCOPE_COLORMAP_H

typedef struct {
    unsigned char r, g, b;
} Rgb;

#define COLORMAP_VIRIDIS_N 256
#define COLORMAP_DIVERGING_N 255

extern const Rgb COLOR_MASKED;     /* (128, 128, 128) */
extern const Rgb COLOR_BACKGROUND; /* white: gaps between matrices, rows not yet computed */
extern const Rgb COLOR_GRID;       /* thin grid lines (--grid) */
extern const Rgb COLOR_DECODE;     /* row marker: a row added by a decode step */
extern const Rgb COLOR_NEWEST;     /* row marker: the row added by this step */

/* Table index of a weight (0..255) or of a signed value (0..254: 127 ± the distance
 * 127·|x|/range rounded half up, so x and -x mirror); -1 for NaN. */
int colormap_viridis_index(float w);
int colormap_diverging_index(float x, float range);
/* Entry i of a table (clamped to the table). */
Rgb colormap_viridis_at(int i);
Rgb colormap_diverging_at(int i);
/* The colour of a value. */
Rgb colormap_viridis(float w);
Rgb colormap_diverging(float x, float range);

#endif
