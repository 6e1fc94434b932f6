/* check_heatmap.c — the PNG/GIF heatmaps, read back with libpng and giflib.
 *
 * Known colours come from the published maps, not from our tables: viridis 0 is
 * #440154, 1/2 is #21918c, 1 is #FDE725 (matplotlib); Moreland's cool–warm runs from
 * (59,76,192) through (221,221,221) to (180,4,38). Masked cells are (128,128,128).
 */
#include <check.h>
#include <dirent.h>
#include <gif_lib.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "colormap.h"
#include "attn_observer.h"
#include "outdir.h"
#include "png_out.h"
#include "testutil.h"
#include "version.h"

static const unsigned char VIR0[3] = {0x44, 0x01, 0x54}, VIR1[3] = {0xFD, 0xE7, 0x25};
static const unsigned char COOL[3] = {59, 76, 192}, WARM[3] = {180, 4, 38};
static const unsigned char MID[3] = {221, 221, 221}, GREY[3] = {128, 128, 128};
static const unsigned char WHITE[3] = {255, 255, 255}, ORANGE[3] = {230, 159, 0};
static const unsigned char BLACK[3] = {0, 0, 0};

static const unsigned char *px(const Png *p, int x, int y) {
    return p->px + ((size_t)y * p->w + x) * 3;
}

#define ck_assert_rgb(got, want)                                                         \
    ck_assert_msg(memcmp((got), (want), 3) == 0, "colour (%d,%d,%d), expected (%d,%d,%d)", \
                  (got)[0], (got)[1], (got)[2], (want)[0], (want)[1], (want)[2])

static void load_in(const char *dir, const char *name, Png *p) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_msg(png_load(path, p) == 0, "cannot read %s", path);
}

/* ---- the colour maps against the published values ---- */

START_TEST(test_colormap_known_values) {
    Rgb c = colormap_viridis(0.0f);
    ck_assert_rgb(&c.r, VIR0);
    c = colormap_viridis(1.0f);
    ck_assert_rgb(&c.r, VIR1);
    c = colormap_viridis(0.5f);
    const unsigned char half[3] = {0x21, 0x91, 0x8c};
    ck_assert_rgb(&c.r, half);
    c = colormap_viridis(7.0f); /* clipped */
    ck_assert_rgb(&c.r, VIR1);
    c = colormap_diverging(-2.5f, 2.5f);
    ck_assert_rgb(&c.r, COOL);
    c = colormap_diverging(2.5f, 2.5f);
    ck_assert_rgb(&c.r, WARM);
    c = colormap_diverging(0.0f, 2.5f);
    ck_assert_rgb(&c.r, MID);
    c = colormap_diverging(1e9f, 2.5f);
    ck_assert_rgb(&c.r, WARM);
    c = colormap_diverging(-INFINITY, 2.5f);
    ck_assert_rgb(&c.r, COOL);
    c = colormap_viridis(NAN);
    ck_assert_rgb(&c.r, GREY);
    /* symmetric: x and -x sit the same distance from the centre (127), that distance
     * 127·|x|/range rounded half up, computed here in double */
    for (int k = 0; k <= 1000; k++) {
        const float x = (float)k / 1000.0f * 3.0f;
        const int a = colormap_diverging_index(x, 3.0f), b = colormap_diverging_index(-x, 3.0f);
        const int d = (int)floor(127.0 * ((double)x / 3.0f) + 0.5);
        ck_assert_msg(a == 127 + d && b == 127 - d, "x=%g: %d %d, want 127 ± %d", x, a, b, d);
    }
    /* the mask grey is in neither table */
    for (int i = 0; i < COLORMAP_VIRIDIS_N; i++) {
        Rgb v = colormap_viridis_at(i);
        ck_assert(!(v.r == 128 && v.g == 128 && v.b == 128));
    }
    for (int i = 0; i < COLORMAP_DIVERGING_N; i++) {
        Rgb v = colormap_diverging_at(i);
        ck_assert(!(v.r == v.g && v.g == v.b && v.r < 200));
    }
}
END_TEST

/* ---- png_out ---- */

START_TEST(test_png_roundtrip_and_errors) {
    char dir[64], path[160], err[512];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    unsigned char rgb[2 * 3 * 3];
    for (int i = 0; i < (int)sizeof rgb; i++) rgb[i] = (unsigned char)(i * 13);
    snprintf(path, sizeof path, "%s/a.png", dir);
    PngText t = {"a title", "what it shows"};
    ck_assert_int_eq(png_write_rgb(path, rgb, 3, 2, &t, err, sizeof err), 0);
    Png p;
    ck_assert_int_eq(png_load(path, &p), 0);
    ck_assert_int_eq(p.w, 3);
    ck_assert_int_eq(p.h, 2);
    ck_assert_int_eq(memcmp(p.px, rgb, sizeof rgb), 0);
    ck_assert_str_eq(p.title, "a title");
    ck_assert_str_eq(p.software, "kvscope " KVSCOPE_VERSION);
    ck_assert_str_eq(p.desc, "what it shows");
    free(p.px);
    ck_assert_int_eq(count_entries(dir), 1); /* no temporary file left */

    /* a folder that does not exist: an error naming the file, nothing written */
    snprintf(path, sizeof path, "%s/missing/b.png", dir);
    err[0] = '\0';
    ck_assert_int_eq(png_write_rgb(path, rgb, 3, 2, &t, err, sizeof err), -1);
    ck_assert_msg(strstr(err, path) && strstr(err, "No such file"), "err: %s", err);
    /* a "folder" that is a file */
    snprintf(path, sizeof path, "%s/a.png/c.png", dir);
    ck_assert_int_eq(png_write_rgb(path, rgb, 3, 2, &t, err, sizeof err), -1);
    ck_assert_int_eq(count_entries(dir), 1);
    remove_tree(dir);
}
END_TEST

/* ---- the observer fed with hand-made events ---- */

typedef struct {
    Heatmap hm;
    Hooks hooks;
} Rig;

static int fire(Rig *r, HookPoint pt, Phase ph, int step, int pos0, int slot0, const float *d,
                int d0, int d1, int d2) {
    HookEvent ev = {.point = pt, .phase = ph, .step = step, .layer = 0, .pos0 = pos0,
                    .slot0 = slot0, .data = d, .ndim = 3, .shape = {d0, d1, d2, 0}};
    return hooks_emit(&r->hooks, &ev);
}

/* L=1, NH=1, hs=2; a prompt of 2 tokens and 1 decode step; cell 4 px. */
static void synthetic_run(Rig *r, const char *dir) {
    HeatmapConfig cfg = {.dir = dir, .L = 1, .NH = 1, .hs = 2, .T_max = 3, .cell = 4,
                         .grid = 0, .gif = 1, .raw = 1};
    select_all(&cfg.layers);
    select_all(&cfg.heads);
    hooks_init(&r->hooks);
    ck_assert_int_eq(heatmap_open(&r->hm, &cfg), 0);
    ck_assert_int_eq(heatmap_attach(&r->hm, &r->hooks), 0);
    /* prefill: [n=2, NH=1, hs=2] */
    const float q[4] = {1, -2, 0.5f, 4};       /* R_q = 4 */
    const float k[4] = {1, -1, 0, 0.5f};       /* R_k = 1; Kᵀ(1,0) = k[0][1] = -1 */
    const float v[4] = {0.25f, 0, 0, -0.5f};   /* R_v = 0.5 */
    const float sc[4] = {-3, -INFINITY, 3, 0.5f}; /* R_s = 3 */
    const float pa[4] = {1, 0, 0, 1};
    const Phase P = PHASE_PREFILL, D = PHASE_DECODE;
    ck_assert_int_eq(fire(r, HOOK_Q, P, 0, 0, 0, q, 2, 1, 2), 0);
    ck_assert_int_eq(fire(r, HOOK_K, P, 0, 0, 0, k, 2, 1, 2), 0);
    ck_assert_int_eq(fire(r, HOOK_V, P, 0, 0, 0, v, 2, 1, 2), 0);
    ck_assert_int_eq(fire(r, HOOK_CACHE_K, P, 0, 0, 0, k, 2, 1, 2), 0);
    ck_assert_int_eq(fire(r, HOOK_CACHE_V, P, 0, 0, 0, v, 2, 1, 2), 0);
    ck_assert_int_eq(fire(r, HOOK_ATTN_SCORES, P, 0, 0, 0, sc, 1, 2, 2), 0);
    ck_assert_int_eq(fire(r, HOOK_PATTERN, P, 0, 0, 0, pa, 1, 2, 2), 0);
    /* decode step 1: the cache holds 3 slots; K beyond the range is clipped */
    const float q1[2] = {0, 0};
    const float kc[6] = {1, -1, 0, 0.5f, 9, -9};
    const float vc[6] = {0.25f, 0, 0, -0.5f, 0.5f, 0};
    const float sc1[3] = {0, 0, 0.69314718f};
    const float pa1[3] = {0.25f, 0.25f, 0.5f};
    ck_assert_int_eq(fire(r, HOOK_Q, D, 1, 2, 2, q1, 1, 1, 2), 0);
    ck_assert_int_eq(fire(r, HOOK_K, D, 1, 2, 2, kc + 4, 1, 1, 2), 0);
    ck_assert_int_eq(fire(r, HOOK_V, D, 1, 2, 2, vc + 4, 1, 1, 2), 0);
    ck_assert_int_eq(fire(r, HOOK_CACHE_K, D, 1, 2, 2, kc, 3, 1, 2), 0);
    ck_assert_int_eq(fire(r, HOOK_CACHE_V, D, 1, 2, 2, vc, 3, 1, 2), 0);
    ck_assert_int_eq(fire(r, HOOK_ATTN_SCORES, D, 1, 2, 2, sc1, 1, 1, 3), 0);
    ck_assert_int_eq(fire(r, HOOK_PATTERN, D, 1, 2, 2, pa1, 1, 1, 3), 0);
    ck_assert_int_eq(heatmap_close(&r->hm), 0);
}

/* The colour of cell (r, c) of a matrix at pixel offset (x0, y0), 4 px cells. */
static const unsigned char *cell(const Png *p, int x0, int y0, int r, int c) {
    return px(p, x0 + c * 4 + 1, y0 + r * 4 + 2);
}

START_TEST(test_synthetic_cells) {
    char dir[64];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    Rig r;
    synthetic_run(&r, dir);
    /* 3 prefill images, 3 decode images, 1 GIF */
    ck_assert_int_eq(count_entries(dir), 7);
    ck_assert_int_eq(r.hm.files, 7);

    Png p;
    load_in(dir, "prefill_attn_L0_H00.png", &p);
    ck_assert_int_eq(p.w, 8);
    ck_assert_int_eq(p.h, 8);
    ck_assert_rgb(cell(&p, 0, 0, 0, 0), VIR1); /* weight exactly 1 */
    ck_assert_rgb(cell(&p, 0, 0, 0, 1), GREY); /* masked, although its weight is 0 */
    ck_assert_rgb(cell(&p, 0, 0, 1, 0), VIR0); /* weight 0: the scale's minimum */
    ck_assert_rgb(cell(&p, 0, 0, 1, 1), VIR1);
    ck_assert_str_eq(p.software, "kvscope " KVSCOPE_VERSION);
    ck_assert_str_eq(p.title, "prefill attention weights, layer 0, head 0");
    ck_assert_msg(strstr(p.desc, "phase=prefill step=0 layer=0 head=0 matrix=weights shape=2x2") &&
                      strstr(p.desc, "range=0..1"),
                  "%s", p.desc);
    free(p.px);

    load_in(dir, "prefill_scores_L0_H00.png", &p);
    ck_assert_rgb(cell(&p, 0, 0, 0, 0), COOL); /* -3 = -R: the minimum */
    ck_assert_rgb(cell(&p, 0, 0, 0, 1), GREY); /* -inf: masked */
    ck_assert_rgb(cell(&p, 0, 0, 1, 0), WARM); /* +3 = +R: the maximum */
    ck_assert_msg(strstr(p.desc, "range=+/-3 "), "%s", p.desc);
    free(p.px);

    /* Q (2×2) | Kᵀ (2×2) | V (2×2) with 8-px gaps */
    load_in(dir, "prefill_qkv_L0_H00.png", &p);
    ck_assert_int_eq(p.w, 6 * 4 + 2 * 8);
    ck_assert_int_eq(p.h, 8);
    ck_assert_rgb(cell(&p, 0, 0, 1, 1), WARM);  /* q = 4 = R_q */
    ck_assert_rgb(cell(&p, 16, 0, 0, 0), WARM); /* k = 1 = R_k */
    ck_assert_rgb(cell(&p, 16, 0, 1, 0), COOL); /* Kᵀ row 1, column 0 = k[0][1] = -1 */
    ck_assert_rgb(cell(&p, 16, 0, 0, 1), MID);  /* Kᵀ row 0, column 1 = k[1][0] = 0 */
    ck_assert_rgb(cell(&p, 32, 0, 1, 1), COOL); /* v = -0.5 = -R_v */
    ck_assert_rgb(px(&p, 9, 0), WHITE);         /* the gap */
    ck_assert_msg(strstr(p.desc, "range_q=+/-4 range_k=+/-1 range_v=+/-0.5"), "%s", p.desc);
    free(p.px);

    load_in(dir, "decode_s001_attn_L0_H00.png", &p);
    ck_assert_int_eq(p.w, 12);
    ck_assert_int_eq(p.h, 4);
    Rgb half = colormap_viridis(0.5f);
    ck_assert_rgb(cell(&p, 0, 0, 0, 2), &half.r);
    free(p.px);

    /* the cache: strip 2 px, K (3×2), gap, V (3×2); the new slot is marked orange;
     * the prefill's ranges are kept, so k = 9 is clipped to the warm end */
    load_in(dir, "decode_s001_kv_L0_H00.png", &p);
    ck_assert_int_eq(p.w, 2 + 2 * 2 * 4 + 8);
    ck_assert_int_eq(p.h, 12);
    ck_assert_rgb(px(&p, 0, 1), WHITE);
    ck_assert_rgb(px(&p, 1, 9), ORANGE);
    ck_assert_rgb(cell(&p, 2, 0, 2, 0), WARM);
    ck_assert_rgb(cell(&p, 2, 0, 2, 1), COOL);
    free(p.px);

    load_in(dir, "decode_s001_stair_L0_H00.png", &p);
    ck_assert_int_eq(p.w, 2 + 3 * 4);
    ck_assert_int_eq(p.h, 12);
    ck_assert_rgb(cell(&p, 2, 0, 0, 0), VIR1);
    ck_assert_rgb(cell(&p, 2, 0, 0, 2), GREY);
    ck_assert_rgb(cell(&p, 2, 0, 1, 2), GREY);
    ck_assert_rgb(cell(&p, 2, 0, 2, 2), &half.r);
    ck_assert_rgb(px(&p, 0, 9), ORANGE);
    free(p.px);
    remove_tree(dir);
}
END_TEST

/* Composite the first `upto` GIF frames and compare the canvas with a staircase PNG
 * (smaller than the canvas before the last step): the same cells, colours within the
 * GIF palette's rounding, masked grey right of it and white below it. */
static void check_gif_against(const char *gif_path, const char *png_path, int frames, int upto) {
    int e = 0;
    GifFileType *g = DGifOpenFileName(gif_path, &e);
    ck_assert_msg(g != NULL, "cannot open %s", gif_path);
    ck_assert_int_eq(DGifSlurp(g), GIF_OK);
    ck_assert_int_eq(g->ImageCount, frames);
    Png p;
    ck_assert_int_eq(png_load(png_path, &p), 0);
    const int W = g->SWidth, H = g->SHeight;
    ck_assert(p.w <= W && p.h <= H);
    if (upto == frames) ck_assert(p.w == W && p.h == H);
    unsigned char *canvas = calloc((size_t)W * H, 1);
    ck_assert_ptr_nonnull(canvas);
    for (int i = 0; i < upto; i++) {
        const SavedImage *im = &g->SavedImages[i];
        const GifImageDesc *d = &im->ImageDesc;
        ck_assert(d->Left + d->Width <= W && d->Top + d->Height <= H);
        for (int y = 0; y < d->Height; y++)
            memcpy(canvas + (size_t)(d->Top + y) * W + d->Left,
                   im->RasterBits + (size_t)y * d->Width, (size_t)d->Width);
    }
    const ColorMapObject *map = g->SColorMap;
    ck_assert_ptr_nonnull(map);
    int worst = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const GifColorType *c = &map->Colors[canvas[(size_t)y * W + x]];
            /* beyond the PNG: keys not yet cached are masked, rows not yet computed blank */
            const unsigned char *q = y >= p.h ? WHITE : x >= p.w ? GREY : px(&p, x, y);
            int d = abs(c->Red - q[0]);
            if (abs(c->Green - q[1]) > d) d = abs(c->Green - q[1]);
            if (abs(c->Blue - q[2]) > d) d = abs(c->Blue - q[2]);
            if (d > worst) worst = d;
        }
    ck_assert_msg(worst <= 4, "GIF and PNG differ by %d in a channel", worst);
    free(canvas);
    free(p.px);
    DGifCloseFile(g, &e);
}

START_TEST(test_synthetic_gif) {
    char dir[64], gif[128], png[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    Rig r;
    synthetic_run(&r, dir);
    snprintf(gif, sizeof gif, "%s/decode_stair_L0_H00.gif", dir);
    snprintf(png, sizeof png, "%s/decode_s001_stair_L0_H00.png", dir);
    /* prefill, step 1, and the held last frame */
    check_gif_against(gif, png, 3, 3);
    check_gif_against(gif, png, 3, 2);
    remove_tree(dir);
}
END_TEST

START_TEST(test_synthetic_write_error) {
    char dir[64], gone[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(gone, sizeof gone, "%s/gone", dir);
    HeatmapConfig cfg = {.dir = gone, .L = 1, .NH = 1, .hs = 2, .T_max = 2, .cell = 4, .raw = 1};
    select_all(&cfg.layers);
    select_all(&cfg.heads);
    Rig r;
    hooks_init(&r.hooks);
    ck_assert_int_eq(heatmap_open(&r.hm, &cfg), 0);
    ck_assert_int_eq(heatmap_attach(&r.hm, &r.hooks), 0);
    const float sc[1] = {0.5f};
    /* the callback's error stops the forward pass */
    ck_assert_int_ne(fire(&r, HOOK_ATTN_SCORES, PHASE_PREFILL, 0, 0, 0, sc, 1, 1, 1), 0);
    ck_assert_msg(strstr(r.hm.err, gone) && strstr(r.hm.err, "prefill_scores_L0_H00.png"),
                  "err: %s", r.hm.err);
    ck_assert_int_eq(heatmap_close(&r.hm), -1);
    ck_assert_int_eq(count_entries(dir), 0);
    remove_tree(dir);
}
END_TEST

/* ---- bin/kvscope run --heatmaps --raw ---- */

/* A tiny model: 1 layer, 2 heads of size 8. */
static int run_tiny(const char *out, int T, int steps, const char *extra1, const char *extra2) {
    char ids[512] = "", st[16];
    for (int i = 0; i < T; i++) {
        char b[16];
        snprintf(b, sizeof b, "%s%d", i ? "," : "", (i * 7 + 3) % 64);
        strcat(ids, b);
    }
    snprintf(st, sizeof st, "%d", steps);
    const char *args[32] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--ctx", "64",
                            "--vocab", "64", "--prompt-ids", ids, "--steps", st, "--out", out,
                            "--heatmaps", "--raw", "--quiet", extra1, extra2, NULL};
    return run_kvscope(args, NULL, NULL);
}

/* T = 1, 4, 37 with one decode step: the automatic cell is 768 / (T+1), at most 64. */
static const int dims_T[] = {1, 4, 37};

START_TEST(test_cli_dimensions) {
    const int T = dims_T[_i], c = 768 / (T + 1) > 64 ? 64 : 768 / (T + 1);
    char dir[64], out[128], hm[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(hm, sizeof hm, "%s/heatmaps", out);
    ck_assert_int_eq(run_tiny(out, T, 1, NULL, NULL), 0);
    /* head 0 only by default: 3 prefill + 3 decode images + 1 GIF */
    ck_assert_int_eq(count_entries(hm), 7);
    Png p;
    load_in(hm, "prefill_attn_L0_H00.png", &p);
    ck_assert_int_eq(p.w, T * c);
    ck_assert_int_eq(p.h, T * c);
    if (T == 1) {
        /* softmax over one key is exactly 1 */
        for (int y = 0; y < p.h; y++)
            for (int x = 0; x < p.w; x++) ck_assert_rgb(px(&p, x, y), VIR1);
    } else {
        ck_assert_rgb(px(&p, (T - 1) * c + c / 2, c / 2), GREY); /* row 0 cannot see the last key */
    }
    free(p.px);
    load_in(hm, "decode_s001_attn_L0_H00.png", &p);
    ck_assert_int_eq(p.w, (T + 1) * c);
    ck_assert_int_eq(p.h, c);
    free(p.px);
    load_in(hm, "decode_s001_stair_L0_H00.png", &p);
    const int strip = c / 2 > 2 ? c / 2 : 2;
    ck_assert_int_eq(p.w, strip + (T + 1) * c);
    ck_assert_int_eq(p.h, (T + 1) * c);
    free(p.px);
    /* Q | Kᵀ | V: hs = 8, cell from max(T+1, 8) */
    const int n = T + 1 > 8 ? T + 1 : 8, cq = 768 / n > 64 ? 64 : 768 / n;
    const int gap = cq > 8 ? cq : 8;
    load_in(hm, "prefill_qkv_L0_H00.png", &p);
    ck_assert_int_eq(p.w, (8 + T + 8) * cq + 2 * gap);
    ck_assert_int_eq(p.h, (T > 8 ? T : 8) * cq);
    free(p.px);
    remove_tree(dir);
}
END_TEST

/* The staircase is the prefill square plus the decode rows: the same pixels. */
START_TEST(test_cli_staircase_matches) {
    char dir[64], out[128], hm[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(hm, sizeof hm, "%s/heatmaps", out);
    ck_assert_int_eq(run_tiny(out, 4, 3, "--cell", "6"), 0);
    Png sq, row, st;
    load_in(hm, "prefill_attn_L0_H00.png", &sq);
    load_in(hm, "decode_s003_attn_L0_H00.png", &row);
    load_in(hm, "decode_s003_stair_L0_H00.png", &st);
    const int s = 3; /* strip: max(2, 6/2) */
    ck_assert_int_eq(st.w, s + 7 * 6);
    ck_assert_int_eq(st.h, 7 * 6);
    for (int y = 0; y < sq.h; y++)
        ck_assert_int_eq(memcmp(px(&st, s, y), px(&sq, 0, y), (size_t)sq.w * 3), 0);
    for (int y = 0; y < row.h; y++)
        ck_assert_int_eq(memcmp(px(&st, s, 6 * 6 + y), px(&row, 0, y), (size_t)row.w * 3), 0);
    ck_assert_rgb(px(&st, 0, 0), WHITE);      /* prompt row */
    ck_assert_rgb(px(&st, 0, 4 * 6), BLACK);  /* row of decode step 1 */
    ck_assert_rgb(px(&st, 0, 6 * 6), ORANGE); /* row of this step */
    free(sq.px);
    free(row.px);
    free(st.px);
    char gif[200], png[200];
    snprintf(gif, sizeof gif, "%s/decode_stair_L0_H00.gif", hm);
    snprintf(png, sizeof png, "%s/decode_s003_stair_L0_H00.png", hm);
    check_gif_against(gif, png, 5, 5); /* prefill, 3 steps, held last frame */
    for (int k = 1; k <= 3; k++) { /* after frame k: the staircase of step k */
        snprintf(png, sizeof png, "%s/decode_s%03d_stair_L0_H00.png", hm, k);
        check_gif_against(gif, png, 5, k + 1);
    }
    remove_tree(dir);
}
END_TEST

static int same_folders(const char *a, const char *b) {
    DIR *d = opendir(a);
    if (!d) return 0;
    struct dirent *e;
    int ok = 1, n = 0;
    while (ok && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char x[512], y[512];
        snprintf(x, sizeof x, "%s/%s", a, e->d_name);
        snprintf(y, sizeof y, "%s/%s", b, e->d_name);
        ok = files_equal(x, y);
        if (!ok) fprintf(stderr, "differs: %s\n", e->d_name);
        n++;
    }
    closedir(d);
    return ok && n == count_entries(b) && n > 0;
}

START_TEST(test_cli_deterministic) {
    char dir[64], a[128], b[128], pa[160], pb[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    ck_assert_int_eq(run_tiny(a, 5, 4, "--grid", NULL), 0);
    ck_assert_int_eq(run_tiny(b, 5, 4, "--grid", NULL), 0);
    snprintf(pa, sizeof pa, "%s/heatmaps", a);
    snprintf(pb, sizeof pb, "%s/heatmaps", b);
    ck_assert_int_eq(count_entries(pa), 3 + 3 * 4 + 1);
    ck_assert(same_folders(pa, pb));
    remove_tree(dir);
}
END_TEST

/* --plots DIR: a folder of its own, replaced as a whole but for the user's files (issue
 * 42); heads from --heads-shown. */
START_TEST(test_cli_plots_folder) {
    char dir[64], out[128], plots[160], keep[200];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(plots, sizeof plots, "%s/new/parent/heat", dir);
    ck_assert_int_eq(run_tiny(out, 3, 1, "--plots", plots), 0);
    ck_assert_int_eq(count_entries(plots), 7 + 1); /* and the marker */
    snprintf(keep, sizeof keep, "%s/heatmaps", out);
    struct stat sb;
    ck_assert_int_ne(stat(keep, &sb), 0); /* not also in <out>/heatmaps */
    snprintf(keep, sizeof keep, "%s/old.txt", plots);
    FILE *f = fopen(keep, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    const char *args[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "64",
                          "--prompt-ids", "1,2,3", "--steps", "2", "--out", out, "--plots", plots,
                          "--heads-shown", "all", "--no-gif", "--raw", "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    /* the new figures and the marker, and old.txt: a file kvscope did not write stays */
    ck_assert_int_eq(count_entries(plots), 2 * (3 + 3 * 2) + 2);
    ck_assert_int_eq(stat(keep, &sb), 0);
    remove_tree(dir);
}
END_TEST

/* Unwritable places and bad values: exit 2, one line, nothing written. */
START_TEST(test_cli_errors) {
    char dir[64], out[128], errf[128], file[128], plots[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    snprintf(file, sizeof file, "%s/a_file", dir);
    FILE *f = fopen(file, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(plots, sizeof plots, "%s/heat", file); /* a folder inside a file */
    char inside[160];
    snprintf(inside, sizeof inside, "%s/heat", out);
    const char *cases[][3] = {
        {"--plots", plots, NULL},      {"--plots", "/proc/kvscope-heat", NULL},
        {"--plots", inside, NULL},     {"--cell", "0", NULL},
        {"--cell", "65", NULL},        {"--heads-shown", "7", NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *args[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "64",
                              "--prompt-ids", "1,2,3", "--steps", "1", "--out", out, "--heatmaps",
                              cases[c][0], cases[c][1], NULL};
        ck_assert_int_eq(run_kvscope(args, NULL, errf), 2);
        char *err = read_file(errf, NULL);
        ck_assert_ptr_nonnull(err);
        ck_assert_msg(strncmp(err, "kvscope: ", 9) == 0, "%s %s: %s", cases[c][0], cases[c][1], err);
        ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "not one line: %s", err);
        free(err);
        ck_assert_int_eq(count_entries(dir), 2); /* err.txt and a_file: no out/, no temp */
    }
    remove_tree(dir);
}
END_TEST

/* A full disk halfway through: one line naming the file, exit 2, nothing left. Needs a
 * small tmpfs (root with mount rights); where it cannot be mounted the test says so. */
START_TEST(test_cli_disk_full) {
    char dir[64], small[128], cmd[256], out[160], errf[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(small, sizeof small, "%s/small", dir);
    ck_assert_int_eq(mkdir(small, 0755), 0);
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=200k tmpfs '%s' 2>/dev/null", small);
    if (system(cmd) != 0) {
        TEST_SKIPPED("cannot mount a small tmpfs here (needs root): the disk-full case");
        remove_tree(dir);
        return;
    }
    snprintf(out, sizeof out, "%s/run", small);
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    const char *args[] = {"run", "--steps", "20", "--out", out, "--heatmaps", "--quiet", NULL};
    int rc = run_kvscope(args, NULL, errf);
    int left = count_entries(small);
    snprintf(cmd, sizeof cmd, "umount '%s'", small);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(rc, 2);
    ck_assert_int_eq(left, 0);
    char *err = read_file(errf, NULL);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strncmp(err, "kvscope: ", 9) == 0 && strstr(err, "/run/heatmaps/") &&
                      strstr(err, "No space left"),
                  "%s", err);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "not one line: %s", err);
    free(err);
    remove_tree(dir);
}
END_TEST

/* ---- eviction: the staircase drawn by position ---- */

/* run_tiny with up to 6 more arguments (NULL-terminated). */
static int run_tiny_more(const char *out, int T, int steps, const char *const *more) {
    char ids[512] = "", st[16];
    for (int i = 0; i < T; i++) {
        char b[16];
        snprintf(b, sizeof b, "%s%d", i ? "," : "", (i * 7 + 3) % 64);
        strcat(ids, b);
    }
    snprintf(st, sizeof st, "%d", steps);
    const char *args[32] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--ctx", "64",
                            "--vocab", "64", "--prompt-ids", ids, "--steps", st, "--out", out,
                            "--heatmaps", "--raw", "--quiet"};
    int n = 20;
    for (int i = 0; more[i] && n < 31; i++) args[n++] = more[i];
    args[n] = NULL;
    return run_kvscope(args, NULL, NULL);
}

/* Pixels of cell (r, c) of a staircase with 8 px cells after a strip of 4 px:
 * 1 if every pixel is the evicted white or its black hatch and exactly the hatch
 * pixels ((x + y) mod 8 < 2 in matrix coordinates: 16 of 64) are black. */
static int cell_is_evicted(const Png *p, int r, int c) {
    int black = 0;
    for (int y = r * 8; y < r * 8 + 8; y++)
        for (int x = c * 8; x < c * 8 + 8; x++) {
            const unsigned char *q = px(p, 4 + x, y);
            const int hatch = (x + y) % 8 < 2;
            if (memcmp(q, hatch ? BLACK : WHITE, 3) != 0) return 0;
            black += hatch;
        }
    return black == 16;
}

/* The weight attention.csv records for (step, layer 0, head 0, query, key position). */
static float csv_weight(const char *out, int step, int query, int key) {
    char path[200], want[64];
    snprintf(path, sizeof path, "%s/attention.csv", out);
    char *csv = read_file(path, NULL);
    ck_assert_ptr_nonnull(csv);
    snprintf(want, sizeof want, "\n%s,%d,0,0,%d,%d,", step ? "decode" : "prefill", step, query,
             key);
    const char *hit = strstr(csv, want);
    ck_assert_msg(hit != NULL, "no row %s in %s", want + 1, path);
    float score = 0.0f, w = -1.0f;
    ck_assert_int_eq(sscanf(hit + strlen(want), "%f,%f", &score, &w), 2);
    free(csv);
    return w;
}

/* --window 8 --sink 2, 6-token prompt, 6 steps: step k (query position 5 + k) runs
 * with positions 0, 1 and the last 6 up to itself; from step 3 on, positions
 * 2 .. k-1 are gone. */
START_TEST(test_cli_window_evicted_cells) {
    char dir[64], out[128], hm[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(hm, sizeof hm, "%s/heatmaps", out);
    const char *more[] = {"--window", "8", "--sink", "2", "--cell", "8", NULL};
    ck_assert_int_eq(run_tiny_more(out, 6, 6, more), 0);
    Png p;
    load_in(hm, "decode_s006_stair_L0_H00.png", &p);
    ck_assert_int_eq(p.w, 4 + 12 * 8); /* positions 0..11 as columns, not the 8 slots */
    ck_assert_int_eq(p.h, 12 * 8);
    ck_assert_msg(strstr(p.desc, "columns=key positions") && strstr(p.desc, "evicted=white"),
                  "%s", p.desc);
    for (int r = 0; r < 12; r++) /* row 5 + k misses positions 2 .. k-1 */
        for (int c = 0; c <= r; c++) {
            const int k = r - 5, gone = k >= 3 && c >= 2 && c <= k - 1;
            ck_assert_msg(cell_is_evicted(&p, r, c) == gone, "row %d column %d", r, c);
        }
    /* kept cells: the colour of the weight attention.csv gives that position (a sink,
     * and position 8, which sits in cache slot 4 at step 6) */
    const int keys[] = {0, 1, 8, 11};
    for (int i = 0; i < 4; i++) {
        Rgb c = colormap_viridis(csv_weight(out, 6, 11, keys[i]));
        ck_assert_rgb(px(&p, 4 + keys[i] * 8 + 3, 11 * 8 + 3), &c.r);
    }
    ck_assert_rgb(px(&p, 4 + 9 * 8 + 3, 5 * 8 + 3), GREY); /* future of a prompt row */
    ck_assert_rgb(px(&p, 4 + 11 * 8 + 3, 10 * 8 + 3), GREY);
    free(p.px);
    /* the K/V picture: 8 slots, the strip by position: sinks white, 6..10 black, 11 orange */
    load_in(hm, "decode_s006_kv_L0_H00.png", &p);
    ck_assert_int_eq(p.h, 8 * 8);
    ck_assert_msg(strstr(p.desc, "row_positions=0-1,6-11"), "%s", p.desc);
    ck_assert_rgb(px(&p, 0, 1 * 8 + 3), WHITE);
    ck_assert_rgb(px(&p, 0, 2 * 8 + 3), BLACK);
    ck_assert_rgb(px(&p, 0, 7 * 8 + 3), ORANGE);
    free(p.px);
    load_in(hm, "decode_s006_attn_L0_H00.png", &p);
    ck_assert_msg(strstr(p.desc, "column_positions=0-1,6-11"), "%s", p.desc);
    free(p.px);
    /* the GIF shows the same evicted cells, frame by frame */
    char gif[200], png[200];
    snprintf(gif, sizeof gif, "%s/decode_stair_L0_H00.gif", hm);
    for (int k = 1; k <= 6; k++) {
        snprintf(png, sizeof png, "%s/decode_s%03d_stair_L0_H00.png", hm, k);
        check_gif_against(gif, png, 8, k + 1);
    }
    /* the slide version names the hatched cells */
    char cmd[1024], path[200];
    snprintf(cmd, sizeof cmd,
             "KVSCOPE_KEEP_PDF=1 gnuplot -e \"dir='%s'; step=6; layer=0; head=0; out='%s/hm'\" "
             "plots/heatmap.gp 2>%s/gp.err",
             out, dir, dir);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/gp.err", dir);
    char *err = read_file(path, NULL);
    ck_assert_msg(err && err[0] == '\0', "gnuplot said: %s", err ? err : "?");
    free(err);
    /* the SVG's glyphs are outlines: read the words from the PDF they were drawn from */
    snprintf(cmd, sizeof cmd, "pdftotext '%s/hm.pdf' '%s/hm.txt'", dir, dir);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
    snprintf(path, sizeof path, "%s/hm.txt", dir);
    char *txt = read_file(path, NULL);
    ck_assert_msg(txt && strstr(txt, "evicted: not in the cache") && strstr(txt, "hatched: key"),
                  "no evicted key in %s", path);
    free(txt);
    remove_tree(dir);
}
END_TEST

/* --article-bug: the cache keeps only the newest step's K/V, so decode step 2
 * (position 7) sees itself and position 6, nothing else. */
START_TEST(test_cli_article_bug_row) {
    char dir[64], out[128], hm[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(hm, sizeof hm, "%s/heatmaps", out);
    const char *more[] = {"--article-bug", "--cell", "8", NULL};
    ck_assert_int_eq(run_tiny_more(out, 6, 6, more), 0);
    Png p;
    load_in(hm, "decode_s006_stair_L0_H00.png", &p);
    ck_assert_int_eq(p.w, 4 + 12 * 8);
    int kept = 0;
    for (int c = 0; c <= 7; c++) kept += !cell_is_evicted(&p, 7, c);
    ck_assert_int_eq(kept, 2);
    ck_assert(!cell_is_evicted(&p, 7, 6) && !cell_is_evicted(&p, 7, 7));
    for (int c = 8; c < 12; c++) ck_assert_rgb(px(&p, 4 + c * 8 + 3, 7 * 8 + 3), GREY);
    for (int c = 0; c <= 6; c++) ck_assert(!cell_is_evicted(&p, 6, c)); /* step 1: all */
    free(p.px);
    remove_tree(dir);
}
END_TEST

/* A window no smaller than the sequence evicts nothing: the same bytes as no window. */
START_TEST(test_cli_window_unused_same_bytes) {
    char dir[64], a[128], b[128], pa[160], pb[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    const char *none[] = {"--grid", NULL}, *wide[] = {"--grid", "--window", "10", "--sink", "2",
                                                      NULL};
    ck_assert_int_eq(run_tiny_more(a, 6, 4, none), 0);
    ck_assert_int_eq(run_tiny_more(b, 6, 4, wide), 0);
    snprintf(pa, sizeof pa, "%s/heatmaps", a);
    snprintf(pb, sizeof pb, "%s/heatmaps", b);
    ck_assert(same_folders(pa, pb));
    remove_tree(dir);
}
END_TEST

/* ---- plots/heatmap.gp ---- */

START_TEST(test_gnuplot_heatmap) {
    char dir[64], out[128], cmd[1024], path[200];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    const char *args[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "256",
                          "--prompt", "a, b", "--steps", "2", "--heads-shown", "0-1", "--out", out,
                          "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    const char *values[] = {"weight", "score"};
    for (int v = 0; v < 2; v++) {
        snprintf(cmd, sizeof cmd,
                 "gnuplot -e \"dir='%s'; step=%d; layer=0; head=1; value='%s'; out='%s/hm%d'\" "
                 "plots/heatmap.gp 2>%s/gp.err",
                 out, v ? 0 : 2, values[v], dir, v, dir);
        ck_assert_msg(system(cmd) == 0, "%s", cmd);
        snprintf(path, sizeof path, "%s/gp.err", dir);
        char *err = read_file(path, NULL);
        ck_assert_msg(err && err[0] == '\0', "gnuplot said: %s", err ? err : "?");
        free(err);
        Png p;
        snprintf(path, sizeof path, "%s/hm%d.png", dir, v);
        ck_assert_int_eq(png_load(path, &p), 0);
        ck_assert_int_eq(p.w, 1600);
        ck_assert_int_eq(p.h, 900);
        free(p.px);
        snprintf(path, sizeof path, "%s/hm%d.svg", dir, v);
        size_t len = 0;
        char *svg = read_file(path, &len);
        ck_assert_msg(svg && len > 1000 && strstr(svg, "</svg>"), "svg of %zu bytes", len);
        free(svg);
    }
    remove_tree(dir);
}
END_TEST

Suite *make_heatmap_suite(void) {
    Suite *s = suite_create("heatmap");
    TCase *tc = tcase_create("heatmap");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_colormap_known_values);
    tcase_add_test(tc, test_png_roundtrip_and_errors);
    tcase_add_test(tc, test_synthetic_cells);
    tcase_add_test(tc, test_synthetic_gif);
    tcase_add_test(tc, test_synthetic_write_error);
    suite_add_tcase(s, tc);
    tc = tcase_create("heatmap_cli");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_cli_dimensions, 0, 3);
    tcase_add_test(tc, test_cli_staircase_matches);
    tcase_add_test(tc, test_cli_deterministic);
    tcase_add_test(tc, test_cli_plots_folder);
    tcase_add_test(tc, test_cli_errors);
    tcase_add_test(tc, test_cli_disk_full);
    tcase_add_test(tc, test_gnuplot_heatmap);
    tcase_add_test(tc, test_cli_window_evicted_cells);
    tcase_add_test(tc, test_cli_article_bug_row);
    tcase_add_test(tc, test_cli_window_unused_same_bytes);
    suite_add_tcase(s, tc);
    return s;
}
