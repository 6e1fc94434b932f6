/* cli_html.c — see cli_html.h. */
#include "cli_html.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numfmt.h"

const Option HTML_OPTIONS[] = {
    OPT_GROUP("explorer page (one self-contained HTML file: step through prefill and decode)"),
    OPT_STRING("--html", "FILE", HtmlOpts, path,
               "write it to FILE (its folder must exist; inside --out: directly in it); layers: "
               "--layers-shown, heads: --heads-shown (default all); at most 16 MiB"),
    OPT_STRING("--html-view", "VIEW", HtmlOpts, view,
               "the view the page opens on, e.g. layer=1,head=4,step=last: keys step (a number "
               "or last), layer, head (shown ones), view (weights or scores), zoom (1, 2, 4 "
               "or 8), present (1: larger type); a #fragment in the page's URL wins"),
    OPT_END,
};

void html_opts_default(HtmlOpts *o) { memset(o, 0, sizeof *o); }

/* 0 when name (the page, directly in --out) is none of the files kvscope writes in that
 * folder: the marker, the recorded CSVs, the heatmap frames; else 2 after a line naming
 * both. */
static int name_free(const char *name, const OutDir *out, const char *path) {
    static const char *const taken[] = {OUTDIR_MARKER, "shapes.csv", "attention.csv",
                                        "kv_memory.csv", "flops.csv", "tokens.csv", "logits.csv",
                                        "timing.csv"};
    static const char *const frames[] = {"prefill_", "decode_"};
    int hit = 0;
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) hit |= strcmp(name, taken[i]) == 0;
    const char *ext = strrchr(name, '.');
    const int image = ext && (!strcmp(ext, ".png") || !strcmp(ext, ".gif") || !strcmp(ext, ".svg"));
    for (size_t i = 0; i < sizeof frames / sizeof frames[0]; i++)
        hit |= image && strncmp(name, frames[i], strlen(frames[i])) == 0;
    if (!hit) return 0;
    fprintf(stderr, "kvscope: --html would take the name of a file kvscope writes in %s (%s); "
                    "choose another name: --html %s, --out %s\n", out->option, name, path, out->target);
    return 2;
}

/* A non-negative decimal number of at most 6 digits: its value, else -1. */
static int small_uint(const char *s, size_t n) {
    int v = 0;
    if (n == 0 || n > 6) return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = 10 * v + (s[i] - '0');
    }
    return v;
}

/* --html-view: pairs key=value split by ',' or '&', each key once; written to
 * o->view_norm with '&' between pairs (the page's URL-fragment syntax). Layers and
 * heads are checked against the page's selections in html_opts_begin. 0, or 2 after
 * the error line. */
static int view_check(HtmlOpts *o) {
    static const char *const keys[] = {"step", "layer", "head", "view", "zoom", "present"};
    const char *p = o->view;
    size_t w = 0;
    unsigned seen = 0;
    if (strlen(p) >= sizeof o->view_norm)
        return cli_fail("bad --html-view (too long)", o->view);
    while (*p) {
        const size_t n = strcspn(p, ",&"), k = strcspn(p, "=");
        char part[256];
        snprintf(part, sizeof part, "%.*s", (int)n, p);
        size_t key = sizeof keys / sizeof keys[0];
        for (size_t i = 0; k < n && i < sizeof keys / sizeof keys[0]; i++)
            if (strlen(keys[i]) == k && strncmp(p, keys[i], k) == 0) key = i;
        const char *v = p + k + 1;
        const size_t vn = k < n ? n - k - 1 : 0;
        int ok = key < sizeof keys / sizeof keys[0] && !(seen >> key & 1);
        if (ok && key == 0) ok = (vn == 4 && strncmp(v, "last", 4) == 0) || small_uint(v, vn) >= 0;
        if (ok && (key == 1 || key == 2)) ok = small_uint(v, vn) >= 0;
        if (ok && key == 3) ok = (vn == 7 && !strncmp(v, "weights", 7)) || (vn == 6 && !strncmp(v, "scores", 6));
        if (ok && key == 4) ok = vn == 1 && strchr("1248", v[0]);
        if (ok && key == 5) ok = vn == 1 && strchr("01", v[0]);
        if (!ok)
            return cli_fail("bad --html-view (key=value pairs: step=N|last, layer=N, head=N, "
                            "view=weights|scores, zoom=1|2|4|8, present=0|1, each once)", part);
        seen |= 1u << key;
        w += (size_t)snprintf(o->view_norm + w, sizeof o->view_norm - w, "%s%s", w ? "&" : "", part);
        p += n;
        if (*p) p++;
    }
    return 0;
}

/* The layer and head --html-view names must be ones the page shows. */
static int view_shown(const HtmlOpts *o, const HtmlConfig *hc) {
    static const char *const keys[] = {"layer=", "head="};
    for (int i = 0; i < 2; i++) {
        const char *at = strstr(o->view_norm, keys[i]);
        while (at && at != o->view_norm && at[-1] != '&') at = strstr(at + 1, keys[i]);
        if (!at) continue;
        const int v = atoi(at + strlen(keys[i]));
        const Selection *sel = i == 0 ? &hc->layers : &hc->heads;
        if (v >= (i == 0 ? hc->cfg.L : hc->cfg.NH) || !select_has(sel, v))
            return cli_fail(i == 0 ? "--html-view names a layer the page does not show (--layers-shown)"
                                   : "--html-view names a head the page does not show (--heads-shown)",
                            o->view);
    }
    return 0;
}

int html_opts_check(HtmlOpts *o, const OutDir *out, const OutDir *plots, unsigned flags) {
    if (o->view && !o->path) return cli_fail("--html-view needs --html FILE", o->view);
    if (!o->path) return 0;
    if (o->view && view_check(o)) return 2;
    const size_t n = strlen(o->path);
    char real[4096], err[8400];
    if (n == 0 || n >= 4000) return cli_fail("bad --html", o->path);
    if (o->path[n - 1] == '/') return cli_fail("--html names a folder", o->path);
    if (path_resolve(o->path, real, sizeof real) != 0) return cli_fail("--html: cannot resolve", o->path);
    if (outdir_holds(out, o->path)) { /* the folder is replaced: the page goes into the new one */
        const size_t k = strlen(out->real);
        const char *rest = real + k;
        if (strncmp(real, out->real, k) != 0 || rest[0] != '/' || !rest[1] || strchr(rest + 1, '/'))
            return cli_fail("--html inside --out must name a file directly in it", o->path);
        snprintf(o->name, sizeof o->name, "%s", rest + 1);
        o->in_out = 1;
        return name_free(o->name, out, o->path);
    }
    if (plots && outdir_holds(plots, o->path)) {
        char what[8400];
        snprintf(what, sizeof what, "--html inside --plots would be lost (%s is replaced after the "
                 "page is written); put the page in --out or beside %s", plots->target, plots->target);
        return cli_fail(what, o->path);
    }
    if (outfile_check(&o->file, o->path, "--html", HTML_SIGNATURE, flags, err, sizeof err))
        return cli_error(err);
    return 0;
}

static const char *mode_name(GenMode m) {
    return m == GEN_RECOMPUTE ? "recompute" : m == GEN_ARTICLE_BUG ? "article-bug" : "cache";
}

/* The one line for a run too large for a page: how large, and how to choose. */
static int too_large(const HtmlConfig *hc) {
    char total[32], head[32], limit[32];
    const int n = html_heads_selected(hc), hs = hc->cfg.C / hc->cfg.NH;
    human_bytes((double)html_page_estimate(hc), total, sizeof total);
    human_bytes((double)html_head_bytes(hc->T_max, hs) * 4.0 / 3.0, head, sizeof head);
    human_bytes((double)HTML_MAX_BYTES, limit, sizeof limit);
    fprintf(stderr,
            "kvscope: --html: the page would take %s (%d heads × %s for %d tokens), more "
            "than %s: choose fewer with --layers-shown and --heads-shown (e.g. "
            "--heads-shown 0), or fewer --steps\n",
            total, n, head, hc->T_max, limit);
    return 2;
}

int html_opts_begin(HtmlOpts *o, const ModelArgs *ma, const Loaded *ld, GenMode mode,
                    const BudgetOpts *budget, int steps, const Selection *layers,
                    const char *heads_shown, Hooks *hooks) {
    if (!o->path) return 0;
    const Config *cfg = &ld->model.cfg;
    HtmlConfig hc = {.cfg = *cfg, .model_name = o->model_name, .mode = mode_name(mode),
                     .kv_dtype = dtype_name(budget->dtype), .window = budget->window,
                     .sink = budget->sink, .T = ld->T, .T_max = ld->T + steps,
                     .layers = *layers, .bpe = !tokenizer_is_bytes(ld->tok)};
    const char *hs = heads_shown ? heads_shown : "all";
    if (select_parse(&hc.heads, hs, cfg->NH))
        return cli_fail("bad --heads-shown (heads are 0..NH-1)", hs);
    if (o->view && view_shown(o, &hc)) return 2;
    hc.view = o->view ? o->view_norm : "";
    if (ma->model_dir) snprintf(o->model_name, sizeof o->model_name, "%s", ma->model_dir);
    else snprintf(o->model_name, sizeof o->model_name, "built-in GPT-2 (seed %llu)",
                  (unsigned long long)ma->seed);
    hc.kv_bytes_per_token = 2 * (size_t)cfg->L *
                            dtype_row_bytes(budget->dtype, (size_t)cfg->C, (size_t)cfg->NH);
    hc.kv_cap_bytes = budget_cap_bytes(budget, hc.kv_bytes_per_token);
    int rc = html_out_open(&o->ho, &hc);
    o->begun = 1;
    if (rc == HTML_TOO_LARGE) return too_large(&hc);
    if (rc || html_out_attach(&o->ho, hooks)) {
        fprintf(stderr, "kvscope: --html: %s\n", o->ho.err[0] ? o->ho.err : "too many observers");
        return 2;
    }
    return 0;
}

/* The page into FILE (or its place in out's new folder). 0, or 2 after the error line. */
static int write_page(HtmlOpts *o, const OutDir *out, const Generator *g, const Tokenizer *tok,
                      size_t *bytes) {
    char err[8400];
    FILE *f = o->in_out ? outdir_fopen(out, o->name, err, sizeof err)
                        : outfile_begin(&o->file, err, sizeof err);
    if (!o->in_out) cli_note_left(o->file.left, o->file.nleft);
    if (!f) return cli_error(err);
    if (html_out_write(&o->ho, f, g->tokens, g->len, tok, bytes)) {
        fprintf(stderr, "kvscope: --html: %s: %s\n", o->ho.err, o->path);
        if (o->in_out) fclose(f);
        else outfile_abort(&o->file, f);
        return 2;
    }
    if (!o->in_out) return outfile_commit(&o->file, f, err, sizeof err) ? cli_error(err) : 0;
    if (file_close(f) == 0) return 0;
    fprintf(stderr, "kvscope: --html: cannot write (%s): %s\n", write_error_text(errno), o->path);
    return 2;
}

int html_opts_finish(HtmlOpts *o, int status, const OutDir *out, const Generator *g,
                     const Tokenizer *tok, int quiet) {
    if (!o->begun) return status;
    o->begun = 0;
    size_t bytes = 0;
    if (status == 0 && (status = write_page(o, out, g, tok, &bytes)) == 0 && !quiet) {
        char size[32];
        printf("wrote %s (%s, %d heads, %d steps)\n", o->path,
               human_bytes((double)bytes, size, sizeof size), o->ho.n_heads, o->ho.n_steps);
    }
    html_out_free(&o->ho);
    return status;
}
