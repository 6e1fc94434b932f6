/* check_figure.c — the heatmap figures (matrix_figs.h, figure.h, toklabel.h), read back.
 *
 * Every cell of a figure is a solid rectangle on whole pixels, so a pixel inside a cell
 * has exactly the colour colormap.h gives its value; the figure's Description chunk
 * says where each matrix is. The values come from hand-made inputs or from the CSV
 * files kvscope writes beside the figures (a second path through the code).
 */
#include <check.h>
#include <gif_lib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "colormap.h"
#include "figure.h"
#include "attn_observer.h"
#include "matrix_figs.h"
#include "outdir.h"
#include "testutil.h"
#include "toklabel.h"
#include "version.h"

#define ck_assert_rgb_is(got, want)                                                          \
    ck_assert_msg((got)[0] == (want).r && (got)[1] == (want).g && (got)[2] == (want).b,      \
                  "colour (%d,%d,%d), expected (%d,%d,%d)", (got)[0], (got)[1], (got)[2],   \
                  (want).r, (want).g, (want).b)

static const unsigned char *pix(const Png *p, int x, int y) {
    ck_assert(x >= 0 && y >= 0 && x < p->w && y < p->h);
    return p->px + ((size_t)y * p->w + x) * 3;
}

/* "key=x,y" or "key=x,y,w,h" in a Description. */
static void grid_of(const char *desc, const char *key, int *v, int n) {
    const char *s = strstr(desc, key);
    ck_assert_msg(s != NULL, "no %s in %s", key, desc);
    s += strlen(key);
    for (int i = 0; i < n; i++) {
        char *end;
        v[i] = (int)strtol(s, &end, 10);
        ck_assert_msg(end != s, "bad %s in %s", key, desc);
        s = end + 1;
    }
}

static void set_text(TokenTexts *t, const char *bytes) {
    token_texts_init(t);
    for (int i = 0; bytes[i]; i++)
        ck_assert_int_eq(token_texts_set(t, i, (const unsigned char *)bytes + i, 1), 0);
}

/* ---- labels ---- */

START_TEST(test_labels_bytes) {
    TokenTexts t;
    set_text(&t, "\xE4\xBA\xBA" "a \n\xBA" "b");
    TokLabel l[8];
    const int m = toklabel_axis(&t, NULL, 8, l);
    ck_assert_int_eq(m, 6);
    ck_assert_int_eq(l[0].first, 0);
    ck_assert_int_eq(l[0].span, 3);
    ck_assert_str_eq(l[0].text, "人");
    ck_assert_str_eq(l[1].text, "a");
    ck_assert_str_eq(l[2].text, "\xE2\x90\xA3"); /* ␣ */
    ck_assert_str_eq(l[3].text, "\xC2\xB6");     /* ¶ */
    ck_assert_str_eq(l[4].text, "<0xBA>");       /* a continuation byte alone */
    ck_assert_int_eq(l[5].first, 7);
    /* positions that are not consecutive never share a label */
    const int pos[3] = {0, 2, 3};
    ck_assert_int_eq(toklabel_axis(&t, pos, 3, l), 3);
    ck_assert_str_eq(l[0].text, "<0xE4>");
    ck_assert_str_eq(l[1].text, "<0xBA>");
    /* a character cut by the end of the axis */
    ck_assert_int_eq(toklabel_axis(&t, NULL, 2, l), 2);
    ck_assert_str_eq(l[0].text, "<0xE4>");
    /* a BPE-like token of several bytes is one label */
    ck_assert_int_eq(token_texts_set(&t, 9, (const unsigned char *)" the", 4), 0);
    const int p9[1] = {9};
    ck_assert_int_eq(toklabel_axis(&t, p9, 1, l), 1);
    ck_assert_str_eq(l[0].text, "\xE2\x90\xA3the");
    token_texts_free(&t);
}
END_TEST

/* ---- the square, from hand-made values ---- */

/* --fig-heads and --fig-prompt in the title, and the marks a prefill's weights get from
 * their own numbers: a line at key i − 5 over rows 10..25 and a sink (0.5 on key 0) put a
 * white label box on the masked grey at the line label's place (0.62 across, 0.30 down the
 * square); the same square without them (weights 0.02 everywhere) leaves that cell grey. */
START_TEST(test_square_named_and_marked) {
    enum { T = 30 };
    char dir[64], png[128], err[512], text[T + 1];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    for (int i = 0; i < T; i++) text[i] = (char)('a' + i % 26);
    text[T] = '\0';
    TokenTexts t;
    set_text(&t, text);
    static float v[T * T];
    static unsigned char st[T * T];
    for (int pass = 0; pass < 2; pass++) {
        for (int r = 0; r < T; r++)
            for (int c = 0; c < T; c++) {
                st[r * T + c] = c <= r ? HF_VALUE : HF_MASKED;
                v[r * T + c] = c <= r ? 0.02f : 0.0f;
            }
        if (pass == 0) {
            for (int r = 1; r < T; r++) v[r * T] = 0.5f;
            for (int r = 10; r <= 25; r++) v[r * T + r - 5] = 0.5f;
        }
        HfSquare s = {{&t, 1, 4, 0, T, "induction head", "30 bytes"}, {T, T, v, T, 1, st, 0}, T, 0, 0, 0, 0, 0};
        snprintf(png, sizeof png, "%s/sq%d.png", dir, pass);
        ck_assert_int_eq(heatfig_square(&s, png, NULL, err, sizeof err), 0);
        Png p;
        ck_assert_int_eq(png_load(png, &p), 0);
        ck_assert_str_eq(p.title, "Prefill, induction head (layer 1, head 4) on 30 bytes: attention weights");
        int g[4];
        grid_of(p.desc, "grid=", g, 4);
        const unsigned char *q = pix(&p, g[0] + (int)(T * g[2] * 0.62), g[1] + (int)(T * g[3] * 0.30) - 4);
        if (pass == 0) ck_assert_msg(q[0] == 255 && q[1] == 255 && q[2] == 255, "no label box for the line");
        else ck_assert_rgb_is(q, COLOR_MASKED);
        free(p.px);
    }
    token_texts_free(&t);
    fig_release();
    remove_tree(dir);
}
END_TEST

START_TEST(test_square_cells) {
    char dir[64], png[128], svg[128], err[512];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    TokenTexts t;
    set_text(&t, "ab\xE4\xBA\xBA");
    float v[9] = {1, 0, 0, 0.25f, 0.75f, 0, 0.5f, 0.1f, 0.4f};
    unsigned char st[9] = {HF_VALUE,   HF_MASKED, HF_MASKED, HF_VALUE, HF_VALUE,
                           HF_MASKED,  HF_VALUE,  HF_EVICTED, HF_VALUE};
    HfSquare s = {{&t, 0, 2, 0, 3, NULL, NULL}, {3, 3, v, 3, 1, st, 0}, 3, 0, 0, 0, 1, 0};
    snprintf(png, sizeof png, "%s/sq.png", dir);
    snprintf(svg, sizeof svg, "%s/sq.svg", dir);
    ck_assert_int_eq(heatfig_square(&s, png, svg, err, sizeof err), 0);
    Png p;
    ck_assert_int_eq(png_load(png, &p), 0);
    ck_assert_int_eq(p.w, HEATFIG_W);
    ck_assert_int_eq(p.h, HEATFIG_H);
    ck_assert_str_eq(p.title, "Prefill, layer 0, head 2: attention weights");
    ck_assert_str_eq(p.software, "kvscope " KVSCOPE_VERSION);
    int g[4];
    grid_of(p.desc, "grid=", g, 4);
    ck_assert_int_eq(g[2], g[3]);
    ck_assert_int_ge(g[2], 40); /* a 3×3 square fills the canvas: big cells */
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            const unsigned char *q = pix(&p, g[0] + c * g[2] + g[2] / 2, g[1] + r * g[3] + 3);
            if (st[r * 3 + c] == HF_VALUE) ck_assert_rgb_is(q, colormap_viridis(v[r * 3 + c]));
            else if (st[r * 3 + c] == HF_MASKED) ck_assert_rgb_is(q, COLOR_MASKED);
            else { /* the hatch: 8 pixels along a row cross one period, black and white */
                int black = 0, white = 0;
                for (int i = 0; i < 8; i++) {
                    const unsigned char *e = q + 3 * i;
                    ck_assert_msg(e[0] == e[1] && e[1] == e[2], "evicted cell is not grey");
                    black += e[0] == 0, white += e[0] == 255;
                }
                ck_assert_msg(black && white, "evicted cell is not hatched black on white");
            }
        }
    free(p.px);
    /* the SVG: glyphs as outlines (no text element needs a font), and the same bytes
     * when drawn again */
    size_t n = 0;
    char *a = read_file(svg, &n);
    ck_assert_ptr_nonnull(a);
    ck_assert_msg(strstr(a, "<svg") && strstr(a, "<path") && !strstr(a, "<text"), "svg text");
    ck_assert_msg(strstr(a, "width=\"1600\"") || strstr(a, "width=\"1600px\""), "svg size");
    char png2[128], svg2[128];
    snprintf(png2, sizeof png2, "%s/sq2.png", dir);
    snprintf(svg2, sizeof svg2, "%s/sq2.svg", dir);
    ck_assert_int_eq(heatfig_square(&s, png2, svg2, err, sizeof err), 0);
    ck_assert(files_equal(png, png2));
    ck_assert(files_equal(svg, svg2));
    free(a);
    /* a folder that does not exist: the error names the file, nothing is left */
    snprintf(png, sizeof png, "%s/missing/x.png", dir);
    ck_assert_int_eq(heatfig_square(&s, png, NULL, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "missing/x.png"), "%s", err);
    ck_assert_int_eq(count_entries(dir), 4);
    token_texts_free(&t);
    fig_release();
    remove_tree(dir);
}
END_TEST

/* ---- the decode step, from hand-made values ---- */

START_TEST(test_step_cells) {
    char dir[64], png[128], err[512];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    TokenTexts t;
    set_text(&t, "abc");
    /* hs = 2, t = 3 cached rows, row stride 2 */
    const float q[2] = {1, -1}, k[6] = {0.5f, -0.5f, 2, 0, -2, 1}, v[6] = {1, 0, 0, -1, 0.25f, 2};
    const float z[2] = {0.3f, -0.7f}, s[3] = {1, 2, -3}, w[3] = {0.2f, 0.7f, 0.1f};
    HfStep f = {{&t, 0, 0, 1, 2, NULL, NULL}, 1, 3, 2, 3, 2, NULL, q, k, v, z, 2, s, w, 2, 2.0f, 3.0f};
    snprintf(png, sizeof png, "%s/st.png", dir);
    ck_assert_int_eq(heatfig_step(&f, png, NULL, err, sizeof err), 0);
    Png p;
    ck_assert_int_eq(png_load(png, &p), 0);
    ck_assert_int_ge(p.h, 800);
    ck_assert_msg(strstr(p.title, "Decode step 1") != NULL, "%s", p.title);
    int gq[2], gk[2], gv[2], gs[2], gw[2], gz[2], ch[1], cw[1], sw[1];
    grid_of(p.desc, "grid_q=", gq, 2);
    grid_of(p.desc, "grid_k=", gk, 2);
    grid_of(p.desc, "grid_v=", gv, 2);
    grid_of(p.desc, "grid_s=", gs, 2);
    grid_of(p.desc, "grid_w=", gw, 2);
    grid_of(p.desc, "grid_z=", gz, 2);
    grid_of(p.desc, "cell_token=", ch, 1);
    grid_of(p.desc, "cell_channel=", cw, 1);
    grid_of(p.desc, "cell_score=", sw, 1);
    for (int c = 0; c < 2; c++) {
        ck_assert_rgb_is(pix(&p, gq[0] + c * cw[0] + 1, gq[1] + 2), colormap_diverging(q[c], 2));
        ck_assert_rgb_is(pix(&p, gz[0] + c * cw[0] + 1, gz[1] + 2), colormap_diverging(z[c], 2));
        for (int r = 0; r < 3; r++) {
            ck_assert_rgb_is(pix(&p, gk[0] + c * cw[0] + 1, gk[1] + r * ch[0] + 3),
                             colormap_diverging(k[r * 2 + c], 2));
            ck_assert_rgb_is(pix(&p, gv[0] + c * cw[0] + 1, gv[1] + r * ch[0] + 3),
                             colormap_diverging(v[r * 2 + c], 2));
        }
    }
    for (int r = 0; r < 3; r++) { /* a corner of the cell: the number is in its middle */
        ck_assert_rgb_is(pix(&p, gs[0] + 3, gs[1] + r * ch[0] + 3), colormap_diverging(s[r], 3));
        ck_assert_rgb_is(pix(&p, gw[0] + 3, gw[1] + r * ch[0] + 3), colormap_viridis(w[r]));
    }
    ck_assert_int_ge(sw[0], ch[0]);
    free(p.px);
    token_texts_free(&t);
    fig_release();
    remove_tree(dir);
}
END_TEST

/* ---- kvscope run --heatmaps: the figures of a real run ---- */

static int run_fig(const char *out, int steps, const char *x1, const char *x2) {
    char st[16];
    snprintf(st, sizeof st, "%d", steps);
    const char *args[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--ctx", "64",
                          "--vocab", "256", "--prompt", "a \xE4\xBA\xBA", "--steps", st, "--out",
                          out, "--heatmaps", "--record", "attention,tokens", "--quiet", x1, x2,
                          NULL};
    return run_kvscope(args, NULL, NULL);
}

/* The weight attention.csv holds for (step, layer 0, head 0, query, key). */
static float csv_weight(const char *out, int step, int query, int key) {
    char path[200], want[64];
    snprintf(path, sizeof path, "%s/attention.csv", out);
    char *csv = read_file(path, NULL);
    ck_assert_ptr_nonnull(csv);
    snprintf(want, sizeof want, "\n%s,%d,0,0,%d,%d,", step ? "decode" : "prefill", step, query, key);
    const char *hit = strstr(csv, want);
    ck_assert_msg(hit != NULL, "no row %s", want + 1);
    float score = 0.0f, w = -1.0f;
    ck_assert_int_eq(sscanf(hit + strlen(want), "%f,%f", &score, &w), 2);
    free(csv);
    return w;
}

static void load(const char *dir, const char *name, Png *p) {
    char path[300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ck_assert_msg(png_load(path, p) == 0, "cannot read %s", path);
}

START_TEST(test_cli_figures) {
    char dir[64], out[128], hm[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(hm, sizeof hm, "%s/heatmaps", out);
    ck_assert_int_eq(run_fig(out, 3, NULL, NULL), 0); /* prompt: 5 byte tokens */
    /* attn, scores, qkv, step of the prefill; heads; 3 × (step, stair); all ×2 (SVG); GIF */
    ck_assert_int_eq(count_entries(hm), 2 * (4 + 1 + 3 * 2) + 1);
    const char *names[] = {"prefill_attn_L0_H00.png", "prefill_scores_L0_H00.png",
                           "prefill_qkv_L0_H00.png",  "prefill_step_L0_H00.png",
                           "prefill_heads_L0.png",    "decode_s002_step_L0_H00.png",
                           "decode_s003_stair_L0_H00.png"};
    Png p;
    for (int i = 0; i < 7; i++) {
        load(hm, names[i], &p);
        ck_assert_int_ge(p.w < p.h ? p.w : p.h, 800);
        ck_assert_msg(strlen(p.title) > 20 && strstr(p.title, "layer 0"), "%s: %s", names[i], p.title);
        free(p.px);
    }
    /* the weights column of decode step 2 (query position 6, 7 keys) and the last row
     * of the staircase after step 3 are the weights attention.csv records */
    load(hm, "decode_s002_step_L0_H00.png", &p);
    int gw[2], ch[1];
    grid_of(p.desc, "grid_w=", gw, 2);
    grid_of(p.desc, "cell_token=", ch, 1);
    for (int r = 0; r < 7; r++)
        ck_assert_rgb_is(pix(&p, gw[0] + 3, gw[1] + r * ch[0] + 3),
                         colormap_viridis(csv_weight(out, 2, 6, r)));
    free(p.px);
    load(hm, "decode_s003_stair_L0_H00.png", &p);
    int g[4];
    grid_of(p.desc, "grid=", g, 4);
    for (int c = 0; c < 8; c++)
        ck_assert_rgb_is(pix(&p, g[0] + c * g[2] + g[2] / 2, g[1] + 7 * g[3] + g[3] / 2),
                         colormap_viridis(csv_weight(out, 3, 7, c)));
    ck_assert_rgb_is(pix(&p, g[0] + 7 * g[2] + g[2] / 2, g[1] + 6 * g[3] + g[3] / 2), COLOR_MASKED);
    free(p.px);
    /* the same run again: the same bytes, SVGs included */
    char out2[128], hm2[160];
    snprintf(out2, sizeof out2, "%s/out2", dir);
    snprintf(hm2, sizeof hm2, "%s/heatmaps", out2);
    ck_assert_int_eq(run_fig(out2, 3, NULL, NULL), 0);
    const char *more[] = {"prefill_step_L0_H00.svg", "decode_s003_stair_L0_H00.svg",
                          "decode_stair_L0_H00.gif", "decode_s001_step_L0_H00.png"};
    for (int i = 0; i < 4; i++) {
        char a[300], b[300];
        snprintf(a, sizeof a, "%s/%s", hm, more[i]);
        snprintf(b, sizeof b, "%s/%s", hm2, more[i]);
        ck_assert_msg(files_equal(a, b), "%s differs between two runs", more[i]);
    }
    remove_tree(dir);
}
END_TEST

/* The GIF's frames are the staircase figures: after frame k + 1 the canvas is the
 * figure of step k, up to the palette (viridis in 192 levels, 52 greys). */
START_TEST(test_cli_gif_frames) {
    char dir[64], out[128], hm[160], path[300];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(hm, sizeof hm, "%s/heatmaps", out);
    ck_assert_int_eq(run_fig(out, 3, "--no-svg", NULL), 0);
    snprintf(path, sizeof path, "%s/decode_stair_L0_H00.gif", hm);
    int e = 0;
    GifFileType *g = DGifOpenFileName(path, &e);
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(DGifSlurp(g), GIF_OK);
    ck_assert_int_eq(g->ImageCount, 1 + 3 + 1); /* prefill, 3 steps, the held last frame */
    ck_assert_int_eq(g->SWidth, HEATFIG_W);
    ck_assert_int_eq(g->SHeight, HEATFIG_H);
    unsigned char *canvas = calloc((size_t)HEATFIG_W * HEATFIG_H, 1);
    ck_assert_ptr_nonnull(canvas);
    for (int k = 0; k <= 3; k++) {
        const SavedImage *im = &g->SavedImages[k];
        const GifImageDesc *d = &im->ImageDesc;
        for (int y = 0; y < d->Height; y++)
            memcpy(canvas + (size_t)(d->Top + y) * HEATFIG_W + d->Left,
                   im->RasterBits + (size_t)y * d->Width, (size_t)d->Width);
        if (k == 0) continue;
        char name[64];
        snprintf(name, sizeof name, "decode_s%03d_stair_L0_H00.png", k);
        Png p;
        load(hm, name, &p);
        long off = 0;
        int worst = 0;
        for (size_t i = 0; i < (size_t)HEATFIG_W * HEATFIG_H; i++) {
            const GifColorType *c = &g->SColorMap->Colors[canvas[i]];
            int dmax = abs(c->Red - p.px[3 * i]);
            if (abs(c->Green - p.px[3 * i + 1]) > dmax) dmax = abs(c->Green - p.px[3 * i + 1]);
            if (abs(c->Blue - p.px[3 * i + 2]) > dmax) dmax = abs(c->Blue - p.px[3 * i + 2]);
            if (dmax > worst) worst = dmax;
            off += dmax > 8;
        }
        /* cells and plain text: within the palette's steps; only edge pixels that mix two
         * colours (text and frames over cells) may miss, fewer than 1 in 200 */
        ck_assert_msg(off * 200 < (long)HEATFIG_W * HEATFIG_H, "frame %d: %ld pixels off by > 8", k, off);
        free(p.px);
    }
    free(canvas);
    DGifCloseFile(g, &e);
    remove_tree(dir);
}
END_TEST

START_TEST(test_cli_too_long) {
    char dir[64], out[128], errf[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    const char *args[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--ctx", "1024",
                          "--vocab", "64", "--prompt-ids", "1,2", "--steps", "700", "--out", out,
                          "--heatmaps", "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, errf), 2);
    char *err = read_file(errf, NULL);
    ck_assert_msg(err && strstr(err, "702 tokens") && strstr(err, "--raw"), "%s", err ? err : "");
    free(err);
    ck_assert_int_eq(count_entries(dir), 1);
    remove_tree(dir);
}
END_TEST

/* ---- glyphs FIG_FONT lacks ---- */

static int draw_char(Fig *f, void *user) {
    fig_text(f, 4, 40, 40, FIG_LEFT, (Rgb){0, 0, 0}, user);
    return 0;
}

/* The start token's label ⟨s⟩: its angle brackets are not in FIG_FONT, and drawn in it
 * they would be the same empty box as a character no font has (U+E000, private use).
 * With the fallback font they are drawn as themselves: other pixels than that box. */
START_TEST(test_start_label_glyphs) {
    enum { W = 60, H = 60 };
    unsigned char *a = malloc(W * H * 3), *b = malloc(W * H * 3), *c = malloc(W * H * 3);
    ck_assert(a && b && c);
    ck_assert_int_eq(fig_render_rgb(a, W, H, draw_char, (void *)"\xE2\x9F\xA8"), 0);  /* ⟨ */
    ck_assert_int_eq(fig_render_rgb(b, W, H, draw_char, (void *)"\xEE\x80\x80"), 0); /* U+E000 */
    ck_assert_int_eq(fig_render_rgb(c, W, H, draw_char, (void *)"\xE2\x9F\xA9"), 0);  /* ⟩ */
    ck_assert_msg(memcmp(a, b, W * H * 3) != 0, "⟨ drawn as the missing-glyph box");
    ck_assert_msg(memcmp(a, c, W * H * 3) != 0, "⟨ and ⟩ drawn alike");
    int ink = 0;
    for (int i = 0; i < W * H * 3; i++) ink += a[i] < 128;
    ck_assert_int_gt(ink, 20);
    free(a);
    free(b);
    free(c);
    fig_release();
}
END_TEST

/* ---- Q, Kᵀ and V: drawn to scale, filling the canvas ---- */

/* Lesson 1's figure once drew Q (15×32) tall and narrow and Kᵀ (32×15) wider than tall:
 * the channel axis had three lengths. One cell size for a token and a channel: Q and V
 * are hs cells wide and T tall, Kᵀ hs tall and T wide; the panels take the canvas in
 * the direction that limits them, and every panel stays on it. */
START_TEST(test_qkv_fills) {
    char dir[64], png[128], err[512];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    enum { T = 15, HS = 32 };
    TokenTexts t;
    set_text(&t, "abcdefghijklmno");
    static float q[T * HS], k[T * HS], v[T * HS];
    for (int i = 0; i < T * HS; i++) q[i] = k[i] = v[i] = (float)(i % 7) - 3.0f;
    HfQkv f = {{&t, 0, 0, 0, T, NULL, NULL}, T, HS, q, k, v, HS, 3.0f};
    snprintf(png, sizeof png, "%s/qkv.png", dir);
    ck_assert_int_eq(heatfig_qkv(&f, png, NULL, err, sizeof err), 0);
    Png p;
    ck_assert_int_eq(png_load(png, &p), 0);
    int g[4], gk[4], gv[2];
    grid_of(p.desc, "grid=", g, 4); /* Q's x, y, channel width, token height */
    grid_of(p.desc, "grid_k=", gk, 4);
    grid_of(p.desc, "grid_v=", gv, 2);
    ck_assert_int_eq(g[2], g[3]);  /* a channel as wide as a token is tall */
    ck_assert_int_eq(gk[2], g[3]); /* Kᵀ's tokens as wide as Q's are tall */
    ck_assert_int_eq(gk[3], g[2]); /* Kᵀ's channels as tall as Q's are wide */
    const int u = g[2];
    ck_assert_msg((2 * HS + T) * u >= 6 * p.w / 10 || HS * u >= 55 * p.h / 100,
                  "panels of %d px across and %d px tall on a %d×%d canvas", (2 * HS + T) * u,
                  HS * u, p.w, p.h);
    ck_assert_int_le(gv[0] + HS * u, p.w - 20);
    ck_assert_int_le(gk[1] + HS * u, p.h - 90); /* Kᵀ's token labels and the colour bar */
    ck_assert_int_le(gv[0] + HS * g[2], p.w - 20);
    ck_assert_int_le(g[1] + T * g[3], p.h - 40); /* room for the channel ticks */
    for (int r = 0; r < T; r += 7) /* cells where the grid says */
        ck_assert_rgb_is(pix(&p, g[0] + 5 * g[2] + 1, g[1] + r * g[3] + 1),
                         colormap_diverging(q[r * HS + 5], 3.0f));
    free(p.px);
    token_texts_free(&t);
    fig_release();
    remove_tree(dir);
}
END_TEST

/* The same to scale for long and short prompts and narrow and wide heads: the pixel
 * 3/4 down the middle of Kᵀ is the cell the grid says, coloured by its own value, and
 * nothing leaves the canvas. */
static const int qkv_shapes[][2] = {{15, 32}, {60, 32}, {3, 32}, {16, 4}, {16, 64}, {12, 1}};

START_TEST(test_qkv_k_fills) {
    const int T = qkv_shapes[_i][0], HS = qkv_shapes[_i][1];
    char dir[64], png[128], err[512], text[64];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    for (int i = 0; i < T; i++) text[i] = (char)('a' + i % 26);
    text[T] = '\0';
    TokenTexts t;
    set_text(&t, text);
    float *q = malloc(sizeof(float) * T * HS), *k = malloc(sizeof(float) * T * HS);
    ck_assert(q && k);
    for (int i = 0; i < T * HS; i++) q[i] = (float)(i % 7) - 3.0f, k[i] = (float)((i * 5) % 11) * 0.5f - 2.5f;
    HfQkv f = {{&t, 0, 0, 0, T, NULL, NULL}, T, HS, q, k, q, HS, 3.0f};
    snprintf(png, sizeof png, "%s/qkv.png", dir);
    ck_assert_int_eq(heatfig_qkv(&f, png, NULL, err, sizeof err), 0);
    Png p;
    ck_assert_int_eq(png_load(png, &p), 0);
    ck_assert_int_eq(p.w, 1600);
    ck_assert(p.h >= 800 && p.h <= 900); /* cropped under the colour bar, never under 800 */
    int g[4], gk[4], gv[2];
    grid_of(p.desc, "grid=", g, 4); /* Q's x, y, channel width, token height */
    grid_of(p.desc, "grid_k=", gk, 4); /* Kᵀ's x, y, token width, channel height */
    grid_of(p.desc, "grid_v=", gv, 2);
    ck_assert_msg(g[2] == g[3] && gk[2] == g[3] && gk[3] == g[2],
                  "T=%d hs=%d: cells %d×%d in Q, %d×%d in K^T", T, HS, g[2], g[3], gk[2], gk[3]);
    const int kh = HS * gk[3];
    ck_assert_int_le(gk[1] + kh, p.h - 90); /* its token labels and the colour bar */
    ck_assert_int_lt(g[0] + HS * g[2], gk[0]);
    ck_assert_int_lt(gk[0] + T * gk[2], gv[0]);
    ck_assert_int_le(gv[0] + HS * g[2], p.w - 20);
    const int x = gk[0] + T * gk[2] / 2, y = gk[1] + 3 * kh / 4;
    const int c = (y - gk[1]) / gk[3], tok = T / 2;
    ck_assert_int_eq((x - gk[0]) / gk[2], tok);
    ck_assert_rgb_is(pix(&p, x, y), colormap_diverging(k[tok * HS + c], 3.0f));
    free(p.px);
    free(q);
    free(k);
    token_texts_free(&t);
    fig_release();
    remove_tree(dir);
}
END_TEST

/* ---- the slide deck (plots/slides.sh) ---- */

/* Runs cmd in a shell; its output (stdout and stderr) into out. The exit status. */
static int shell_out(const char *cmd, char *out, size_t n) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t got = fread(out, 1, n - 1, p);
    out[got] = '\0';
    return pclose(p);
}

/* Two lessons link three figures (one twice) and lessons/deck.md gives the lecture's
 * words: the deck is a title page, an outline, per lesson a divider, its figures in
 * order (each once) with their captions whole, its take-aways, questions and answers, and
 * a references page that names the page of the figure it goes with; 16:9 pages and one
 * note per page. A link to a missing figure is refused, naming it, and leaves no deck. */
START_TEST(test_slides_deck) {
    char dir[64], cwd[512], cmd[2048], out[16384], path[256];
    if (system("command -v rsvg-convert > /dev/null 2>&1 && command -v pdfinfo > /dev/null 2>&1 && "
               "command -v pdftotext > /dev/null 2>&1") != 0) {
        TEST_SKIPPED("rsvg-convert or poppler-utils not installed");
        return;
    }
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(cmd, sizeof cmd, "mkdir -p %s/lessons %s/plots/lesson1 %s/plots/lesson2", dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    static const char *const svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1600\" height=\"900\">"
                                   "<rect width=\"1600\" height=\"900\" fill=\"#0072B2\"/></svg>\n";
    static const char *const fig[3] = {"plots/lesson1/a", "plots/lesson1/b", "plots/lesson2/c"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s.svg", dir, fig[i]);
        ck_assert_int_eq(write_text_file(path, svg), 0);
        snprintf(path, sizeof path, "%s/%s.png", dir, fig[i]);
        /* a PNG's signature and IHDR size, 1600 × 900: the page shows the SVG */
        static const unsigned char png[24] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H',
                                              'D', 'R', 0, 0, 0x06, 0x40, 0, 0, 0x03, 0x84};
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(png, 1, sizeof png, f), sizeof png);
        ck_assert_int_eq(fclose(f), 0);
    }
    snprintf(path, sizeof path, "%s/lessons/lesson1.md", dir);
    ck_assert_int_eq(write_text_file(path, "# Lesson 1 — One\n\n![Alpha (first)](../plots/lesson1/a.png)\n\n"
                                           "*Look at alpha. Then this.*\n\ntext\n\n"
                                           "![Beta](../plots/lesson1/b.png)\n\n*Beta & <co>.*\n\n"
                                           "![Alpha again](../plots/lesson1/a.png)\n"), 0);
    snprintf(path, sizeof path, "%s/lessons/lesson2.md", dir);
    ck_assert_int_eq(write_text_file(path, "# Lesson 2 — Two\n\n![Gamma](../plots/lesson2/c.png)\n\n*Gamma, last. "
                                           "A second sentence long enough to fill more than one caption line on the page by itself alone, "
                                           "with a clause added to make sure of it and then some more words. "
                                           "A third sentence long enough to fill more than one caption line on the page by itself alone, "
                                           "with a clause added to make sure of it and then some more words. "
                                           "A fourth sentence, the one a page of three caption lines has no room for: the notes.*\n"), 0);
    snprintf(path, sizeof path, "%s/lessons/deck.md", dir);
    ck_assert_int_eq(write_text_file(path, "# Deck title\n\n## title\nnotes: hello\n\n## lesson 1\n"
                                           "take-away: First point.\nquestion: Why?\nanswer: Because.\n\n"
                                           "## references\nref: Someone et al. | 2020 | A paper | its point | lesson2/c.png\n"), 0);
    snprintf(cmd, sizeof cmd, "cd %s && sh %s/plots/slides.sh deck.pdf 2>&1 && pdfinfo deck.pdf && "
                              "pdftotext -layout deck.pdf - && cat deck.notes.md", dir, cwd);
    ck_assert_msg(shell_out(cmd, out, sizeof out) == 0, "%s", out);
    /* title, outline, divider, a, b, take-aways, questions, answers, divider, c, references */
    ck_assert_msg(strstr(out, "Pages:           11\n"), "%s", out);
    ck_assert_msg(strstr(out, "Page size:       960 x 540 pts"), "%s", out); /* 16:9, 1280 × 720 px */
    const char *t = strstr(out, "Deck title"), *a = strstr(out, "Look at alpha. Then this."),
               *b = strstr(out, "Beta & <co>."), *w = strstr(out, "First point."), *q = strstr(out, "Why?"),
               *c = strstr(out, "Gamma, last."), *r = strstr(out, "Someone et al. (2020). A paper.");
    ck_assert_msg(t && a && b && w && q && c && r && t < a && a < b && b < w && w < q && q < c && c < r,
                  "pages out of order or a caption cut: %s", out);
    ck_assert_msg(strstr(out, "Because."), "no answer page: %s", out);
    ck_assert_msg(strstr(out, "Gamma (p. 10)"), "the reference does not name Gamma and its page 10: %s", out);
    /* a caption over 3 lines: the page shows whole sentences and says the rest is in the
     * notes; the note of page 10 has the whole caption */
    const char *notes = strstr(out, "# Speaker notes"), *fourth = strstr(out, "A fourth sentence");
    ck_assert_msg(notes && fourth && fourth > notes, "the fourth sentence is on a page: %s", out);
    ck_assert_msg(strstr(out, "(continued in the notes)") && strstr(out, "(continued in the notes)") < notes,
                  "a cut caption's page does not say so: %s", out);
    ck_assert_msg(strstr(notes, "The whole caption: Gamma, last. A second sentence") &&
                      strstr(notes, "has no room for: the notes.\n"),
                  "the notes do not hold the whole caption: %s", out);
    ck_assert_msg(strstr(out, "## 11 (references)") && !strstr(out, "## 12 "), "a note per page: %s", out);
    ck_assert_msg(strstr(out, "## 4 (figure, lesson 1) Alpha (first) · plots/lesson1/a.png"), "%s", out);
    /* a link to a figure that is not there */
    snprintf(path, sizeof path, "%s/lessons/lesson3.md", dir);
    ck_assert_int_eq(write_text_file(path, "![Gone](../plots/lesson3/gone.png)\n"), 0);
    snprintf(cmd, sizeof cmd, "cd %s && rm -f deck.pdf && sh %s/plots/slides.sh deck.pdf 2>&1", dir, cwd);
    ck_assert_int_eq(shell_out(cmd, out, sizeof out), 2 << 8);
    ck_assert_msg(strstr(out, "plots/lesson3/gone.png") && strchr(out, '\n') == out + strlen(out) - 1, "%s", out);
    snprintf(path, sizeof path, "%s/deck.pdf", dir);
    ck_assert_ptr_null(read_file(path, NULL));
    remove_tree(dir);
}
END_TEST

/* lessons/render.sh: {{optional PATH}} is the file when it exists and nothing when it
 * does not, where {{include PATH}} stops the render. */
START_TEST(test_render_optional) {
    char dir[64], cwd[512], cmd[1024], out[4096], path[256];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(path, sizeof path, "%s/part.md", dir);
    ck_assert_int_eq(write_text_file(path, "| a | b |\n|---|---|\n"), 0);
    snprintf(path, sizeof path, "%s/l.md.in", dir);
    ck_assert_int_eq(write_text_file(path, "top\n{{optional part.md}}\nmid\n{{optional gone.md}}\nend\n"), 0);
    snprintf(cmd, sizeof cmd, "cd %s && sh %s/lessons/render.sh l.md.in l.md 2>&1 && cat l.md", dir, cwd);
    ck_assert_msg(shell_out(cmd, out, sizeof out) == 0, "%s", out);
    ck_assert_str_eq(out, "top\n| a | b |\n|---|---|\nmid\n\nend\n");
    ck_assert_int_eq(write_text_file(path, "{{include gone.md}}\n"), 0);
    snprintf(cmd, sizeof cmd, "cd %s && sh %s/lessons/render.sh l.md.in l2.md 2>&1", dir, cwd);
    ck_assert_int_ne(shell_out(cmd, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "cannot read gone.md"), "%s", out);
    remove_tree(dir);
}
END_TEST

/* ---- a long prompt: labels readable, the matrix filling the canvas ---- */

/* The smallest em size in px of the SVG's fonts, measured independently of figure.c:
 * every cairo font subset holds its .notdef glyph (glyphF-0), whose box is 0.666 em
 * tall in WenQuanYi Zen Hei (width/height 0.40) and 0.88 em in DejaVu Sans (0.57).
 * The 1 px SVG unit is the PNG's pixel. */
static double smallest_font_px(const char *svg) {
    double least = 1e9;
    for (const char *p = strstr(svg, "-0\">"); p; p = strstr(p + 1, "-0\">")) {
        const char *d = strstr(p, " d=\""), *end = strstr(p, "</symbol>");
        ck_assert_msg(d && end && d < end, "a .notdef symbol without its path");
        double x0 = 1e9, y0 = 1e9, x1 = -1e9, y1 = -1e9, xy[2];
        int k = 0;
        for (const char *q = d + 4; *q != '"';) {
            if ((*q >= '0' && *q <= '9') || *q == '-' || *q == '.') {
                char *e;
                xy[k] = strtod(q, &e);
                q = e;
                if (++k == 2) {
                    x0 = fmin(x0, xy[0]), x1 = fmax(x1, xy[0]), y0 = fmin(y0, xy[1]), y1 = fmax(y1, xy[1]);
                    k = 0;
                }
            } else {
                q++;
            }
        }
        const double w = fmin(x1 - x0, y1 - y0), h = fmax(x1 - x0, y1 - y0), a = w / h;
        ck_assert_msg((a > 0.35 && a < 0.45) || (a > 0.52 && a < 0.62), "a font of unknown aspect %g", a);
        least = fmin(least, a < 0.5 ? h / 0.666 : h / 0.88);
    }
    return least;
}

START_TEST(test_square_long_prompt) {
    char dir[64], png[128], svg[128], err[512];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    enum { T = 60 };
    TokenTexts t;
    set_text(&t, "And Jacob set up a pillar of stone in Bethel. And Jacob set up");
    float v[T * T];
    unsigned char st[T * T];
    float smax = 0;
    for (int r = 0; r < T; r++)
        for (int c = 0; c < T; c++) {
            v[r * T + c] = c <= r ? (float)((r * 7 + c * 3) % 23) * 0.3f - 0.3f : 0.0f;
            st[r * T + c] = c <= r ? HF_VALUE : HF_MASKED;
            if (c <= r) smax = fmaxf(smax, fabsf(v[r * T + c]));
        }
    /* one score far above the rest, as lesson 2's 6.45 was */
    v[40 * T + 3] = 6.45f;
    smax = 6.45f;
    float *tmp = malloc(sizeof v);
    ck_assert_ptr_nonnull(tmp);
    size_t k = 0;
    for (int r = 0; r < T; r++)
        for (int c = 0; c <= r; c++) tmp[k++] = v[r * T + c];
    const float R = heatmap_range(tmp, k);
    free(tmp);
    ck_assert_msg(R >= smax && R <= smax * 1.02f, "scale ±%g for a largest score %g", (double)R, (double)smax);
    HfSquare s = {{&t, 0, 0, 0, T, NULL, NULL}, {T, T, v, T, 1, st, R}, T, 1, 0, 0, 0, 0};
    snprintf(png, sizeof png, "%s/sq.png", dir);
    snprintf(svg, sizeof svg, "%s/sq.svg", dir);
    ck_assert_int_eq(heatfig_square(&s, png, svg, err, sizeof err), 0);
    Png p;
    ck_assert_int_eq(png_load(png, &p), 0);
    int g[4];
    grid_of(p.desc, "grid=", g, 4);
    /* square cells (queries and keys are the same tokens), the matrix at least 70 % of
     * the height */
    ck_assert_int_eq(g[2], g[3]);
    ck_assert_msg(T * g[3] >= HEATFIG_H * 7 / 10, "matrix %d×%d px on a %d×%d canvas", T * g[2],
                  T * g[3], HEATFIG_W, HEATFIG_H);
    /* the outlier has the scale's top colour, not a clipped one beyond it */
    ck_assert_rgb_is(pix(&p, g[0] + 3 * g[2] + g[2] / 2, g[1] + 40 * g[3] + g[3] / 2),
                     colormap_diverging(6.45f, R));
    free(p.px);
    size_t n = 0;
    char *a = read_file(svg, &n);
    ck_assert_ptr_nonnull(a);
    const double least = smallest_font_px(a);
    ck_assert_msg(least >= FIG_MIN_TEXT_PX - 0.05, "a text of %.2f px, under %g", least, FIG_MIN_TEXT_PX);
    free(a);
    token_texts_free(&t);
    remove_tree(dir);
    fig_release();
}
END_TEST

Suite *make_figure_suite(void) {
    Suite *s = suite_create("figure");
    TCase *tc = tcase_create("figure");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_labels_bytes);
    tcase_add_test(tc, test_square_cells);
    tcase_add_test(tc, test_square_long_prompt);
    tcase_add_test(tc, test_square_named_and_marked);
    tcase_add_test(tc, test_step_cells);
    tcase_add_test(tc, test_start_label_glyphs);
    tcase_add_test(tc, test_qkv_fills);
    tcase_add_loop_test(tc, test_qkv_k_fills, 0, (int)(sizeof qkv_shapes / sizeof qkv_shapes[0]));
    tcase_add_test(tc, test_slides_deck);
    tcase_add_test(tc, test_render_optional);
    suite_add_tcase(s, tc);
    tc = tcase_create("figure_cli");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cli_figures);
    tcase_add_test(tc, test_cli_gif_frames);
    tcase_add_test(tc, test_cli_too_long);
    suite_add_tcase(s, tc);
    return s;
}
