/* gif_out.c — giflib's streaming encoder. */
#include "gif_out.h"

#include <errno.h>
#include <gif_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(GifOut *g, int code, const char *what, char *err, size_t errsize) {
    const char *why = GifErrorString(code);
    snprintf(err, errsize, "%s: %s: %s", g->path, what, why ? why : "GIF error");
    gif_abort(g);
    return -1;
}

/* giflib's output: the bytes go to the AtomicFile's stream */
static int put(GifFileType *gif, const GifByteType *bytes, int n) {
    return (int)fwrite(bytes, 1, (size_t)n, gif->UserData);
}

int gif_open(GifOut *g, const char *path, int width, int height, const Rgb *palette,
             int ncolors, const char *comment, char *err, size_t errsize) {
    memset(g, 0, sizeof *g);
    if (snprintf(g->path, sizeof g->path, "%s", path) >= (int)sizeof g->path) {
        snprintf(err, errsize, "%s: path too long", path);
        return -1;
    }
    if (width < 1 || height < 1 || width > 65535 || height > 65535 || ncolors < 1 ||
        ncolors > 256) {
        snprintf(err, errsize, "%s: bad GIF size %dx%d or %d colours", path, width, height,
                 ncolors);
        return -1;
    }
    if (!(g->fp = atomic_open(&g->file, path, 0))) {
        snprintf(err, errsize, "%s: %s", path, strerror(errno));
        return -1;
    }
    int code = 0;
    GifFileType *gif = EGifOpen(g->fp, put, &code);
    if (!gif) {
        snprintf(err, errsize, "%s: %s", path, GifErrorString(code));
        atomic_abort(&g->file, g->fp);
        g->fp = NULL;
        return -1;
    }
    g->gif = gif;
    g->width = width;
    g->height = height;

    int bits = 1;
    while ((1 << bits) < ncolors) bits++;
    ColorMapObject *map = GifMakeMapObject(1 << bits, NULL);
    if (!map) return fail(g, E_GIF_ERR_NOT_ENOUGH_MEM, "palette", err, errsize);
    for (int i = 0; i < (1 << bits); i++) {
        Rgb c = i < ncolors ? palette[i] : palette[0];
        map->Colors[i].Red = c.r;
        map->Colors[i].Green = c.g;
        map->Colors[i].Blue = c.b;
    }
    EGifSetGifVersion(gif, true); /* GIF89a: needed for the delay and loop extensions */
    int rc = EGifPutScreenDesc(gif, width, height, bits, 0, map);
    GifFreeMapObject(map);
    if (rc != GIF_OK) return fail(g, gif->Error, "header", err, errsize);

    /* NETSCAPE2.0 application extension: loop forever */
    static const unsigned char app[11] = {'N', 'E', 'T', 'S', 'C', 'A', 'P', 'E', '2', '.', '0'};
    static const unsigned char loop[3] = {1, 0, 0};
    if (EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) != GIF_OK ||
        EGifPutExtensionBlock(gif, sizeof app, app) != GIF_OK ||
        EGifPutExtensionBlock(gif, sizeof loop, loop) != GIF_OK ||
        EGifPutExtensionTrailer(gif) != GIF_OK)
        return fail(g, gif->Error, "loop extension", err, errsize);
    if (comment && EGifPutComment(gif, comment) != GIF_OK)
        return fail(g, gif->Error, "comment", err, errsize);
    return 0;
}

int gif_frame(GifOut *g, int x, int y, int w, int h, const unsigned char *idx, int delay_cs,
              char *err, size_t errsize) {
    GifFileType *gif = g->gif;
    if (!gif) {
        snprintf(err, errsize, "%s: GIF is not open", g->path);
        return -1;
    }
    if (x < 0 || y < 0 || w < 1 || h < 1 || x + w > g->width || y + h > g->height) {
        snprintf(err, errsize, "%s: frame %dx%d+%d+%d outside the %dx%d canvas", g->path, w, h,
                 x, y, g->width, g->height);
        gif_abort(g);
        return -1;
    }
    GraphicsControlBlock gcb = {.DisposalMode = DISPOSE_DO_NOT, .UserInputFlag = false,
                                .DelayTime = delay_cs, .TransparentColor = NO_TRANSPARENT_COLOR};
    GifByteType ext[4];
    size_t n = EGifGCBToExtension(&gcb, ext);
    if (EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, (int)n, ext) != GIF_OK)
        return fail(g, gif->Error, "frame delay", err, errsize);
    if (EGifPutImageDesc(gif, x, y, w, h, false, NULL) != GIF_OK)
        return fail(g, gif->Error, "frame", err, errsize);
    for (int r = 0; r < h; r++)
        if (EGifPutLine(gif, (GifPixelType *)(idx + (size_t)r * (size_t)w), w) != GIF_OK)
            return fail(g, gif->Error, "pixels", err, errsize);
    return 0;
}

int gif_close(GifOut *g, char *err, size_t errsize) {
    GifFileType *gif = g->gif;
    if (!gif) {
        snprintf(err, errsize, "%s: GIF is not open", g->path);
        return -1;
    }
    int code = 0;
    g->gif = NULL;
    FILE *fp = g->fp;
    g->fp = NULL;
    if (EGifCloseFile(gif, &code) != GIF_OK) { /* frees gif; the stream stays ours */
        snprintf(err, errsize, "%s: %s", g->path, GifErrorString(code));
        atomic_abort(&g->file, fp);
        return -1;
    }
    if (atomic_commit(&g->file, fp) != 0) {
        snprintf(err, errsize, "%s: %s", g->path, strerror(errno));
        return -1;
    }
    return 0;
}

void gif_abort(GifOut *g) {
    if (!g->gif) return;
    int code;
    EGifCloseFile(g->gif, &code);
    g->gif = NULL;
    atomic_abort(&g->file, g->fp);
    g->fp = NULL;
}
