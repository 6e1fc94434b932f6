/* blocks_png.h — the paged cache's block pool as a picture (blocks.png of kvscope batch
 * --paged): one cell per block in block-id order, 16 to a row; a block a sequence owns
 * is drawn in that sequence's colour (Okabe–Ito, cycled), filled from the bottom in
 * proportion to the tokens it holds (the rest a pale tint of it), a free block white.
 * The PNG's text chunks say how to read it. */
#ifndef KVSCOPE_BLOCKS_PNG_H
#define KVSCOPE_BLOCKS_PNG_H

#include <stddef.h>

#include "paged.h"

/* Write the pool of pc as it is now to path (png_out.h). 0, or -1 with err. */
int blocks_png_write(const char *path, const PagedCache *pc, char *err, size_t errsize);

#endif
