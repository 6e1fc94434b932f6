/* figcheck.c — the looks of the committed figures, for tests/figcheck/figcheck.sh.
 *
 *   figcheck same PNG RENDERED   the SVG's rendering (RENDERED) against its PNG twin:
 *                                the same size, and a small pixel difference (below)
 *   figcheck info PNG            "W H <Software> | <Title>" of a PNG, for the size and
 *                                title checks
 *
 * The difference forgives what two rasterisers of the same vector drawing disagree on:
 * anti-aliased edges, one pixel either way. For each pixel of PNG, d = the smallest
 * largest-channel difference to the 3×3 pixels around the same place in RENDERED.
 * Passing: the mean of d is at most MEAN_MAX (of 255) and at most OFF_MAX_PCT % of the
 * pixels have d > OFF_LEVEL. A chart drawn with other font sizes, markers or grid
 * lines fails both by far (measured: a 2× font is a mean of 4 and 1.9 % off).
 * Exit 0 pass, 1 fail, 2 unreadable.
 */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEAN_MAX 1.5
#define OFF_LEVEL 48
#define OFF_MAX_PCT 0.5

typedef struct {
    int w, h;
    unsigned char *px;
} Img;

static int load(const char *path, Img *im) {
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&pi, path)) {
        fprintf(stderr, "figcheck: %s: %s\n", path, pi.message);
        return -1;
    }
    pi.format = PNG_FORMAT_RGB;
    im->w = (int)pi.width, im->h = (int)pi.height;
    im->px = malloc(PNG_IMAGE_SIZE(pi));
    if (!im->px || !png_image_finish_read(&pi, NULL, im->px, 0, NULL)) {
        fprintf(stderr, "figcheck: %s: %s\n", path, im->px ? pi.message : "out of memory");
        free(im->px);
        png_image_free(&pi);
        return -1;
    }
    return 0;
}

static int same(const char *a_path, const char *b_path) {
    Img a, b;
    if (load(a_path, &a)) return 2;
    if (load(b_path, &b)) {
        free(a.px);
        return 2;
    }
    int rc = 0;
    if (a.w != b.w || a.h != b.h) {
        printf("size %dx%d, rendered SVG %dx%d\n", a.w, a.h, b.w, b.h);
        rc = 1;
    } else {
        double sum = 0;
        long off = 0;
        for (int y = 0; y < a.h; y++)
            for (int x = 0; x < a.w; x++) {
                const unsigned char *p = a.px + ((size_t)y * a.w + x) * 3;
                int best = 256;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        const int X = x + dx, Y = y + dy;
                        if (X < 0 || Y < 0 || X >= a.w || Y >= a.h) continue;
                        const unsigned char *q = b.px + ((size_t)Y * b.w + X) * 3;
                        int d = 0;
                        for (int k = 0; k < 3; k++) {
                            int e = abs(p[k] - q[k]);
                            if (e > d) d = e;
                        }
                        if (d < best) best = d;
                    }
                sum += best;
                off += best > OFF_LEVEL;
            }
        const double mean = sum / ((double)a.w * a.h), pct = 100.0 * off / ((double)a.w * a.h);
        printf("%dx%d mean %.3f off %.3f%%\n", a.w, a.h, mean, pct);
        rc = mean <= MEAN_MAX && pct <= OFF_MAX_PCT ? 0 : 1;
    }
    free(a.px);
    free(b.px);
    return rc;
}

static int info(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "figcheck: cannot open %s\n", path);
        return 2;
    }
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop in = png ? png_create_info_struct(png) : NULL;
    if (!in || setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &in, NULL);
        fclose(f);
        fprintf(stderr, "figcheck: %s is not a PNG\n", path);
        return 2;
    }
    png_init_io(png, f);
    png_read_info(png, in);
    png_textp t;
    int n = 0;
    const char *sw = "", *title = "";
    png_get_text(png, in, &t, &n);
    for (int i = 0; i < n; i++) {
        if (strcmp(t[i].key, "Software") == 0) sw = t[i].text;
        if (strcmp(t[i].key, "Title") == 0) title = t[i].text;
    }
    printf("%u %u %s | %s\n", png_get_image_width(png, in), png_get_image_height(png, in), sw, title);
    png_destroy_read_struct(&png, &in, NULL);
    fclose(f);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "same") == 0) return same(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "info") == 0) return info(argv[2]);
    fprintf(stderr, "usage: figcheck same PNG RENDERED | figcheck info PNG\n");
    return 2;
}
