/* cli_html.c — see cli_html.h. */
#include "cli_html.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "numfmt.h"

const Option HTML_OPTIONS[] = {
    OPT_GROUP("explorer page (one self-contained HTML file: step through prefill and decode)"),
    OPT_STRING("--html", "FILE", HtmlOpts, path,
               "write it to FILE (its folder must exist; inside --out: directly in it); layers: "
               "--layers-shown, heads: --heads-shown (default all); at most 16 MiB"),
    OPT_END,
};

void html_opts_default(HtmlOpts *o) { memset(o, 0, sizeof *o); }

/* The rest of path after dir + "/" when path lies inside dir (by spelling), else NULL. */
static const char *inside(const char *path, const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    if (strncmp(path, dir, n) != 0 || (path[n] != '\0' && path[n] != '/')) return NULL;
    return path[n] ? path + n + 1 : path + n;
}

/* An existing FILE must be a page kvscope wrote: it starts with HTML_SIGNATURE. */
static int check_existing(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    if (S_ISDIR(st.st_mode)) return cli_fail("--html is a folder", path);
    char head[sizeof HTML_SIGNATURE] = "";
    FILE *f = S_ISREG(st.st_mode) ? fopen(path, "rb") : NULL;
    size_t n = f ? fread(head, 1, sizeof head - 1, f) : 0;
    if (f) fclose(f);
    if (n != sizeof head - 1 || memcmp(head, HTML_SIGNATURE, n) != 0)
        return cli_fail("--html names a file kvscope did not write (remove it or choose "
                        "another name)", path);
    return 0;
}

/* 0 if dir is not --out or inside it whatever the spelling (./out, a link): 1 if it is
 * --out itself, 2 if a folder inside it (both resolved with realpath). */
static int under_out(const char *dir, const char *out) {
    char rd[PATH_MAX], ro[PATH_MAX];
    if (!realpath(dir, rd) || !realpath(out, ro)) return 0;
    size_t n = strlen(ro);
    if (strcmp(rd, ro) == 0) return 1;
    return strncmp(rd, ro, n) == 0 && (rd[n] == '/' || n == 1) ? 2 : 0;
}

/* Where the page goes: FILE itself (its folder must be there), or into out_tmp when it
 * lies directly in --out, which is replaced as a whole. */
static int choose_path(HtmlOpts *o, const char *out, const char *out_tmp) {
    const size_t n = strlen(o->path);
    if (n == 0 || n >= 4096) return cli_fail("bad --html", o->path);
    if (o->path[n - 1] == '/') return cli_fail("--html names a folder", o->path);
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", o->path);
    char *slash = strrchr(dir, '/');
    const char *name = slash ? o->path + (slash - dir) + 1 : o->path;
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    const char *rest = inside(o->path, out);
    const int under = rest ? 0 : under_out(dir, out);
    if (under == 1) rest = name;
    if (rest || under == 2) {
        if (!rest || !rest[0] || strchr(rest, '/'))
            return cli_fail("--html inside --out must name a file directly in it", o->path);
        if (path_join(o->write_path, sizeof o->write_path, out_tmp, rest))
            return cli_fail("path too long", o->path);
        return 0;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_fail("--html folder does not exist", dir);
    if (access(dir, W_OK | X_OK) != 0) return cli_fail("--html folder is not writable", dir);
    snprintf(o->write_path, sizeof o->write_path, "%s", o->path);
    return check_existing(o->path);
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
                    const char *heads_shown, const char *out, const char *out_tmp, Hooks *hooks) {
    if (!o->path) return 0;
    const Config *cfg = &ld->model.cfg;
    HtmlConfig hc = {.cfg = *cfg, .model_name = o->model_name, .mode = mode_name(mode),
                     .kv_dtype = kvcache_dtype_name(budget->dtype), .window = budget->window,
                     .sink = budget->sink, .T = ld->T, .T_max = ld->T + steps,
                     .layers = *layers, .bpe = !tokenizer_is_bytes(ld->tok)};
    const char *hs = heads_shown ? heads_shown : "all";
    if (select_parse(&hc.heads, hs, cfg->NH))
        return cli_fail("bad --heads-shown (heads are 0..NH-1)", hs);
    if (ma->model_dir) snprintf(o->model_name, sizeof o->model_name, "%s", ma->model_dir);
    else snprintf(o->model_name, sizeof o->model_name, "built-in GPT-2 (seed %llu)",
                  (unsigned long long)ma->seed);
    hc.kv_bytes_per_token = 2 * (size_t)cfg->L *
                            kvcache_row_bytes(budget->dtype, cfg->NH, cfg->C / cfg->NH);
    hc.kv_cap_bytes = budget_cap_bytes(budget, hc.kv_bytes_per_token);
    int rc = choose_path(o, out, out_tmp);
    if (rc) return rc;
    rc = html_out_open(&o->ho, &hc);
    o->begun = 1;
    if (rc == HTML_TOO_LARGE) return too_large(&hc);
    if (rc || html_out_attach(&o->ho, hooks)) {
        fprintf(stderr, "kvscope: --html: %s\n", o->ho.err[0] ? o->ho.err : "too many observers");
        return 1;
    }
    return 0;
}

int html_opts_finish(HtmlOpts *o, int status, const Generator *g, const Tokenizer *tok,
                     int quiet) {
    if (!o->begun) return status;
    o->begun = 0;
    size_t bytes = 0;
    if (status == 0) {
        if (html_out_write(&o->ho, o->write_path, g->tokens, g->len, tok, &bytes)) {
            /* name the file as the user did, not by the temporary folder */
            const char *e = o->ho.err;
            size_t n = strlen(o->write_path);
            if (strncmp(e, o->write_path, n) == 0) fprintf(stderr, "kvscope: %s%s\n", o->path, e + n);
            else fprintf(stderr, "kvscope: --html: %s\n", e);
            status = 2;
        } else if (!quiet) {
            char size[32];
            printf("wrote %s (%s, %d heads, %d steps)\n", o->path,
                   human_bytes((double)bytes, size, sizeof size), o->ho.n_heads, o->ho.n_steps);
        }
    }
    html_out_free(&o->ho);
    return status;
}
