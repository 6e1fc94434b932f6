/* blocks_png.c — the block pool of a paged cache as a PNG; see blocks_png.h. */
#include "blocks_png.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colormap.h"
#include "png_out.h"

/* Okabe–Ito, for the sequences (cycled). */
static const Rgb SEQ_COLORS[] = {{230, 159, 0},  {86, 180, 233}, {0, 158, 115}, {240, 228, 66},
                                 {0, 114, 178},  {213, 94, 0},   {204, 121, 167}};

enum { CELL = 40, GAP = 4, PER_ROW = 16 };

/* One block's cell at (x0, y0): its owner's colour filled to `filled` pixels from the
 * bottom, a pale tint above, a grey edge; white when free (owner -1). */
static void draw_cell(unsigned char *rgb, int W, int x0, int y0, int owner, int filled) {
    Rgb c = owner >= 0 ? SEQ_COLORS[owner % 7] : (Rgb){255, 255, 255};
    Rgb pale = {(unsigned char)(255 - (255 - c.r) / 4), (unsigned char)(255 - (255 - c.g) / 4),
                (unsigned char)(255 - (255 - c.b) / 4)};
    for (int y = 0; y < CELL; y++)
        for (int x = 0; x < CELL; x++) {
            int edge = x == 0 || y == 0 || x == CELL - 1 || y == CELL - 1;
            Rgb px = edge ? (Rgb){110, 110, 110} : (CELL - 1 - y < filled ? c : pale);
            unsigned char *p = rgb + ((size_t)(y0 + y) * W + x0 + x) * 3;
            p[0] = px.r;
            p[1] = px.g;
            p[2] = px.b;
        }
}

int blocks_png_write(const char *path, const PagedCache *pc, char *err, size_t errsize) {
    const int rows = (pc->n_blocks + PER_ROW - 1) / PER_ROW;
    const int cols = pc->n_blocks < PER_ROW ? pc->n_blocks : PER_ROW;
    const int W = cols * (CELL + GAP) + GAP, H = rows * (CELL + GAP) + GAP;
    unsigned char *rgb = malloc((size_t)W * H * 3);
    if (!rgb) {
        snprintf(err, errsize, "%s: out of memory", path);
        return -1;
    }
    memset(rgb, 255, (size_t)W * H * 3);
    for (int blk = 0; blk < pc->n_blocks; blk++) {
        int seq, logical, held;
        paged_block_owner(pc, blk, &seq, &logical, &held);
        int filled = seq >= 0 ? (CELL * held + pc->block_size - 1) / pc->block_size : 0;
        draw_cell(rgb, W, GAP + (blk % PER_ROW) * (CELL + GAP), GAP + (blk / PER_ROW) * (CELL + GAP),
                  seq, filled);
    }
    PngText txt = {"kvscope paged KV cache: block pool",
                   "one cell per block in id order; colour = owning sequence (Okabe-Ito: "
                   "orange 0, sky blue 1, green 2, yellow 3, blue 4, vermillion 5, pink 6); "
                   "filled part = tokens held; white = free"};
    int rc = png_write_rgb(path, rgb, W, H, &txt, err, errsize);
    free(rgb);
    return rc;
}
