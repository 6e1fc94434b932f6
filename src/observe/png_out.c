/* png_out.c — libpng's full write API with setjmp error handling. */
#include "png_out.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outdir.h"
#include "version.h"

/* libpng reports errors through a callback that must not return: keep the
 * message, then jump back to the setjmp in png_write_rgb. */
typedef struct {
    char msg[256];
} PngErr;

static void on_error(png_structp png, png_const_charp msg) {
    PngErr *e = png_get_error_ptr(png);
    if (e) snprintf(e->msg, sizeof e->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg; /* warnings do not change the file: ignore */
}

/* Everything that touches libpng; the caller owns fp. 0 or -1 (message in e). */
static int write_png(FILE *fp, const unsigned char *rgb, int width, int height,
                     const PngText *text, PngErr *e) {
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, e, on_error, on_warning);
    if (!png) {
        snprintf(e->msg, sizeof e->msg, "out of memory (png_create_write_struct)");
        return -1;
    }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        snprintf(e->msg, sizeof e->msg, "out of memory (png_create_info_struct)");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return -1;
    }
    png_init_io(png, fp);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    /* fixed settings: the output depends on the pixels only */
    png_set_compression_level(png, 6);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_ALL_FILTERS);

    char software[64];
    snprintf(software, sizeof software, "kvscope %s", KVSCOPE_VERSION);
    png_text t[3];
    int nt = 0;
    memset(t, 0, sizeof t);
    const char *keys[3] = {"Title", "Software", "Description"};
    const char *vals[3] = {text ? text->title : NULL, software, text ? text->description : NULL};
    for (int i = 0; i < 3; i++) {
        if (!vals[i]) continue;
        t[nt].compression = PNG_TEXT_COMPRESSION_NONE;
        t[nt].key = (png_charp)keys[i];
        t[nt].text = (png_charp)vals[i];
        t[nt].text_length = strlen(vals[i]);
        nt++;
    }
    png_set_text(png, info, t, nt);
    png_write_info(png, info);
    for (int y = 0; y < height; y++)
        png_write_row(png, (png_const_bytep)(rgb + (size_t)y * (size_t)width * 3));
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return 0;
}

int png_write_rgb(const char *path, const unsigned char *rgb, int width, int height,
                  const PngText *text, char *err, size_t errsize) {
    if (width < 1 || height < 1 || width > 1 << 20 || height > 1 << 20) {
        snprintf(err, errsize, "%s: bad image size %dx%d", path, width, height);
        return -1;
    }
    AtomicFile af;
    FILE *fp = atomic_open(&af, path, 0);
    if (!fp) {
        snprintf(err, errsize, "%s: %s", path, strerror(errno));
        return -1;
    }
    PngErr e = {{0}};
    int rc = write_png(fp, rgb, width, height, text, &e), saved = errno;
    if (rc != 0) {
        atomic_abort(&af, fp);
        /* libpng's default writer says only "Write Error": add the reason */
        if (saved != 0 && strcmp(e.msg, "Write Error") == 0)
            snprintf(e.msg, sizeof e.msg, "write error: %s", strerror(saved));
    } else if (atomic_commit(&af, fp) != 0) {
        rc = -1;
        snprintf(e.msg, sizeof e.msg, "%s", strerror(errno));
    }
    if (rc != 0) snprintf(err, errsize, "%s: %s", path, e.msg[0] ? e.msg : "cannot write PNG");
    return rc;
}
