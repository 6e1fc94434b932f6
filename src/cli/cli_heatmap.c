/* cli_heatmap.c — see cli_heatmap.h. */
#include "cli_heatmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const Option HEATMAP_OPTIONS[] = {
    OPT_GROUP("heatmaps (figures of attention and Q/K/V at every step, PNG + SVG, see src/observe/README.md)"),
    OPT_FLAG("--heatmaps", HeatmapOpts, on, "draw them into <out>/heatmaps"),
    OPT_STRING("--plots", "DIR", HeatmapOpts, plots,
               "draw them into DIR instead (implies --heatmaps); DIR is replaced as a whole, "
               "like --out, and must be apart from it"),
    OPT_SET("--no-svg", HeatmapOpts, svg, 0, "PNG only, no SVG twins"),
    OPT_SET("--no-gif", HeatmapOpts, gif, 0, "no animated GIF of the decode steps"),
    OPT_STRING("--fig-heads", "L.H=NAME,...", HeatmapOpts, head_names,
               "name heads in the figures' titles, e.g. 1.4=induction head (no commas in a name)"),
    OPT_STRING("--fig-prompt", "TEXT", HeatmapOpts, prompt_name,
               "say what the prompt is in the figures' titles, e.g. \"100 random bytes ×2\""),
    OPT_FLAG("--raw", HeatmapOpts, raw,
             "pixel heatmaps instead: one block of pixels per matrix entry, no text (for image "
             "tools)"),
    OPT_INT_AUTO("--cell", "PX", HeatmapOpts, cell, 1, HEATMAP_MAX_CELL,
                 "about 768 pixels along prompt+steps tokens", "with --raw: pixels per cell"),
    OPT_FLAG("--grid", HeatmapOpts, grid, "with --raw: thin white lines between the cells"),
    OPT_TEXT("layers: --layers-shown; heads: --heads-shown (default for heatmaps: head 0)"),
    OPT_END,
};

void heatmap_opts_default(HeatmapOpts *o) {
    memset(o, 0, sizeof *o);
    o->gif = 1;
    o->svg = 1;
}

/* --fig-heads: every item layer.head=name with a name. 0, or 2 after the error line. */
static int check_head_names(const char *names) {
    for (const char *p = names; p && *p;) {
        const size_t n = strcspn(p, ",");
        char item[160];
        snprintf(item, sizeof item, "%.*s", (int)(n < 159 ? n : 159), p);
        int l, h, used = 0;
        if (sscanf(item, "%d.%d=%n", &l, &h, &used) != 2 || used == 0 || !item[used] || l < 0 || h < 0)
            return cli_fail("--fig-heads takes layer.head=name items, such as 1.4=induction head", item);
        p += n;
        if (*p == ',') p++;
    }
    return 0;
}

int heatmap_opts_check(HeatmapOpts *o, const OutDir *out, unsigned flags, const char *model_dir) {
    int rc;
    if ((rc = check_head_names(o->head_names))) return rc;
    if (!o->plots) return 0;
    /* the parent may not exist yet (plots/lessonN/heatmaps): begin makes it */
    if ((rc = cli_outdir_check(&o->od, o->plots, "run", "--plots", flags | OUTDIR_PARENTS)) ||
        (rc = cli_outdirs_apart(out, &o->od)) || (rc = cli_outdir_spares(&o->od, "--model", model_dir)))
        return rc;
    o->checked = 1;
    return 0;
}

const OutDir *heatmap_opts_plots(const HeatmapOpts *o) { return o->checked ? &o->od : NULL; }

int heatmap_opts_begin(HeatmapOpts *o, const Config *cfg, int T_max, const Selection *layers,
                       const char *heads_shown, const char *out, const char *out_tmp,
                       Hooks *hooks) {
    if (!o->on && !o->plots) return 0;
    HeatmapConfig hc = {.L = cfg->L, .NH = cfg->NH, .hs = cfg->C / cfg->NH, .T_max = T_max,
                        .layers = *layers, .cell = o->cell, .grid = o->grid, .gif = o->gif,
                        .raw = o->raw, .svg = o->svg, .head_names = o->head_names,
                        .prompt_name = o->prompt_name};
    if (!o->raw && T_max > HEATMAP_FIG_MAX_T) {
        fprintf(stderr, "kvscope: --heatmaps: %d tokens (prompt + steps) are more than the %d a "
                        "figure draws; --raw draws pixel heatmaps of any length\n", T_max,
                HEATMAP_FIG_MAX_T);
        return 2;
    }
    const char *hs = heads_shown ? heads_shown : "0";
    if (select_parse(&hc.heads, hs, cfg->NH))
        return cli_fail("bad --heads-shown (heads are 0..NH-1)", hs);
    int rc;
    if (o->plots) {
        if (!o->checked) return cli_fail("--plots was not checked before the run", o->plots);
        if ((rc = cli_outdir_begin(&o->od))) return rc;
        o->own_dir = 1;
        snprintf(o->dir, sizeof o->dir, "%s", o->od.tmp);
        snprintf(o->shown, sizeof o->shown, "%s", o->plots);
    } else {
        if (path_join(o->dir, sizeof o->dir, out_tmp, "heatmaps") != 0 || make_dirs(o->dir) != 0)
            return cli_fail("--out: cannot create its heatmaps folder", out);
        if (path_join(o->shown, sizeof o->shown, out, "heatmaps") != 0)
            return cli_fail("path too long", out);
    }
    o->begun = 1;
    hc.dir = o->dir;
    if (heatmap_open(&o->hm, &hc) || heatmap_attach(&o->hm, hooks)) {
        fprintf(stderr, "kvscope: heatmaps: %s\n", o->hm.err[0] ? o->hm.err : "too many observers");
        return 2;
    }
    return 0;
}

int heatmap_opts_token(HeatmapOpts *o, const Tokenizer *tok, int pos, int id) {
    if (!o->begun) return 0;
    char *text = NULL;
    size_t n = 0;
    if (tokenizer_decode(tok, &id, 1, &text, &n) != 0) return heatmap_fail(&o->hm, "out of memory");
    int rc = heatmap_token(&o->hm, pos, (const unsigned char *)text, n);
    free(text);
    return rc;
}

int heatmap_opts_failed(const HeatmapOpts *o) { return o->begun && o->hm.failed; }

int heatmap_opts_finish(HeatmapOpts *o, int status) {
    if (!o->begun) return status;
    if (heatmap_close(&o->hm) != 0) {
        /* name the file as it would have been called, not by its temporary folder */
        const char *e = o->hm.err;
        size_t n = strlen(o->dir);
        if (strncmp(e, o->dir, n) == 0) fprintf(stderr, "kvscope: %s%s\n", o->shown, e + n);
        else fprintf(stderr, "kvscope: heatmaps: %s\n", e);
        return 2;
    }
    return status;
}

int heatmap_opts_commit(HeatmapOpts *o, int status) {
    if (!o->begun || !o->own_dir) return status;
    o->own_dir = 0;
    return cli_outdir_end(&o->od, status, 0); /* with its notes: the user's files it kept */
}
