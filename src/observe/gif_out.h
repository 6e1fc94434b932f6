/* gif_out.h — an animated GIF written frame by frame (giflib), atomically.
 *
 * gif_open writes the header, the global palette and a loop-forever extension to an
 * AtomicFile (outdir.h) for `path`; each gif_frame adds one rectangle of palette
 * indices that is drawn over the previous frames (disposal "leave in place"), so a
 * frame need only hold what changed. gif_close renames the file into place;
 * gif_abort (or any failure) removes it. Same frames ⇒ same bytes.
 */
#ifndef KVSCOPE_GIF_OUT_H
#define KVSCOPE_GIF_OUT_H

#include <stddef.h>

#include <stdio.h>

#include "colormap.h"
#include "outdir.h"

typedef struct {
    void *gif;          /* GifFileType*, NULL when closed */
    char path[4096];
    AtomicFile file;    /* the file being written, */
    FILE *fp;           /*   its stream */
    int width, height;
} GifOut;

/* Canvas width × height, palette of ncolors ≤ 256 entries (padded to a power of
 * two), comment (may be NULL) stored in a comment extension. 0, or -1 with err. */
int gif_open(GifOut *g, const char *path, int width, int height, const Rgb *palette,
             int ncolors, const char *comment, char *err, size_t errsize);
/* Draw w × h indices (row-major) at (x, y), then wait delay_cs hundredths of a second. */
int gif_frame(GifOut *g, int x, int y, int w, int h, const unsigned char *idx, int delay_cs,
              char *err, size_t errsize);
/* Finish the file and move it to path. 0, or -1 with err (and nothing left behind). */
int gif_close(GifOut *g, char *err, size_t errsize);
/* Drop the file being written. Safe on a closed GifOut. */
void gif_abort(GifOut *g);

#endif
