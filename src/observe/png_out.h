/* png_out.h — write an 8-bit RGB image as a PNG file, atomically, with text chunks.
 *
 * The file is an AtomicFile (outdir.h): renamed over `path` only when libpng, fwrite
 * and fclose all succeeded; on any failure `path` is untouched and err holds one line
 * ("<path>: <what went wrong>"). No tIME chunk and fixed zlib settings: the same
 * pixels and texts give the same bytes.
 */
#ifndef KVSCOPE_PNG_OUT_H
#define KVSCOPE_PNG_OUT_H

#include <stddef.h>

typedef struct {
    const char *title;       /* tEXt "Title" */
    const char *description; /* tEXt "Description" */
} PngText;                   /* tEXt "Software" is always "kvscope <KVSCOPE_VERSION>" */

/* rgb: height rows of width pixels, 3 bytes each, top row first.
 * 0, or -1 with a message in err. */
int png_write_rgb(const char *path, const unsigned char *rgb, int width, int height,
                  const PngText *text, char *err, size_t errsize);

#endif
