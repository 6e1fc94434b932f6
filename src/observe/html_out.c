/* html_out.c — the HTML explorer observer. See html_out.h for the page and its JSON. */
#include "html_out.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colormap.h"
#include "explorer_page.h"
#include "attn_observer.h"
#include "version.h"

/* Lines of explorer.html replaced by the other files and by the data. */
#define MARK_CSS "<!--kvscope:css-->"
#define MARK_JS "<!--kvscope:js-->"
#define MARK_DATA "<!--kvscope:data-->"
#define MARK_TITLE "<!--kvscope:title-->"

/* Bounds for the estimate: JSON of one token, one step, one slot range, one head's
 * fixed fields, and the colour maps. Generous, so that the estimate bounds the page. */
enum { EST_TOKEN = 64, EST_STEP = 640, EST_RANGE = 24, EST_HEAD = 256, EST_FIXED = 8192 };

static int fail(HtmlOut *h, const char *fmt, ...) {
    if (!h->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(h->err, sizeof h->err, fmt, ap);
        va_end(ap);
        h->failed = 1;
    }
    return -1;
}

/* ---- sizes ---- */

static size_t b64_len(size_t bytes) { return (bytes + 2) / 3 * 4; }

size_t html_head_bytes(int T_max, int hs) {
    const size_t T = (size_t)T_max;
    return 4 * (T * (T + 1) + 3 * T * (size_t)hs);
}

int html_heads_selected(const HtmlConfig *cfg) {
    int n = 0;
    for (int l = 0; l < cfg->cfg.L; l++)
        for (int hd = 0; hd < cfg->cfg.NH; hd++)
            n += select_has(&cfg->layers, l) && select_has(&cfg->heads, hd);
    return n;
}

static size_t code_bytes(void) {
    size_t n = 0;
    for (const EmbeddedFile *f = explorer_files; f->name; f++)
        for (const char *const *l = f->lines; *l; l++) n += strlen(*l) + 1;
    return n;
}

size_t html_page_estimate(const HtmlConfig *cfg) {
    const size_t T = (size_t)cfg->T_max, hs = (size_t)(cfg->cfg.C / cfg->cfg.NH);
    const size_t steps = T - (size_t)cfg->T + 1, ranges = cfg->window > 0 ? 2 : 1;
    const size_t head = EST_HEAD + 2 * b64_len(2 * T * (T + 1)) + 3 * b64_len(4 * T * hs);
    return code_bytes() + EST_FIXED + T * (EST_TOKEN + 16) + steps * (EST_STEP + ranges * EST_RANGE) +
           (size_t)html_heads_selected(cfg) * head;
}

/* ---- collecting ---- */

int html_out_open(HtmlOut *h, const HtmlConfig *cfg) {
    memset(h, 0, sizeof *h);
    h->cfg = *cfg;
    const Config *c = &cfg->cfg;
    if (c->L < 1 || c->NH < 1 || c->C % c->NH || cfg->T < 1 || cfg->T_max < cfg->T)
        return fail(h, "bad page configuration");
    if (html_page_estimate(cfg) > HTML_MAX_BYTES) return HTML_TOO_LARGE;
    h->hs = c->C / c->NH;
    h->n_heads = html_heads_selected(cfg);
    h->heads = calloc(h->n_heads ? (size_t)h->n_heads : 1, sizeof *h->heads);
    h->row_step = calloc((size_t)cfg->T_max, sizeof *h->row_step);
    h->row_len = calloc((size_t)cfg->T_max, sizeof *h->row_len);
    if (!h->heads || !h->row_step || !h->row_len) return fail(h, "out of memory");
    const size_t T = (size_t)cfg->T_max, qkv = T * (size_t)h->hs, ws = T * (T + 1) / 2;
    int i = 0;
    for (int l = 0; l < c->L; l++)
        for (int hd = 0; hd < c->NH; hd++) {
            if (!select_has(&cfg->layers, l) || !select_has(&cfg->heads, hd)) continue;
            HtmlHead *p = &h->heads[i++];
            p->layer = l, p->head = hd;
            p->q = calloc(qkv, sizeof *p->q), p->k = calloc(qkv, sizeof *p->k);
            p->v = calloc(qkv, sizeof *p->v);
            p->w = calloc(ws, sizeof *p->w), p->s = calloc(ws, sizeof *p->s);
            if (!p->q || !p->k || !p->v || !p->w || !p->s) return fail(h, "out of memory");
        }
    return 0;
}

static HtmlHead *find_head(HtmlOut *h, int layer, int head) {
    for (int i = 0; i < h->n_heads; i++)
        if (h->heads[i].layer == layer && h->heads[i].head == head) return &h->heads[i];
    return NULL;
}

/* q, k or v of the positions this step computes first ([n, NH, hs] event). */
static void keep_qkv(HtmlOut *h, const HookEvent *ev) {
    const int n = ev->shape[0], NH = ev->shape[1], hs = ev->shape[2];
    for (int hd = 0; hd < NH; hd++) {
        HtmlHead *p = find_head(h, ev->layer, hd);
        if (!p) continue;
        float *dst = ev->point == HOOK_Q ? p->q : ev->point == HOOK_K ? p->k : p->v;
        for (int i = 0; i < n; i++) {
            const int pos = ev->pos0 + i;
            if (pos < h->rows) continue; /* kept when it was first computed */
            memcpy(dst + (size_t)pos * hs, ev->data + ((size_t)i * NH + hd) * hs,
                   (size_t)hs * sizeof *dst);
        }
    }
}

/* Scores or weights ([NH, n, Tt]) of the rows this step computes first: query i sees
 * slots 0 .. slot0 + i. Scores come first and are written in place; the weights
 * that follow advance the head's row end. */
static void keep_rows(HtmlOut *h, const HookEvent *ev) {
    const int NH = ev->shape[0], n = ev->shape[1], Tt = ev->shape[2];
    for (int hd = 0; hd < NH; hd++) {
        HtmlHead *p = find_head(h, ev->layer, hd);
        if (!p) continue;
        size_t end = p->ws_len;
        for (int i = 0; i < n; i++) {
            const int vis = ev->slot0 + i + 1 < Tt ? ev->slot0 + i + 1 : Tt;
            if (ev->pos0 + i < h->rows) continue;
            float *dst = (ev->point == HOOK_PATTERN ? p->w : p->s) + end;
            memcpy(dst, ev->data + ((size_t)hd * n + i) * Tt, (size_t)vis * sizeof *dst);
            end += (size_t)vis;
        }
        if (ev->point == HOOK_PATTERN) p->ws_len = end;
    }
}

static int keep_step(HtmlOut *h, const HookEvent *ev) {
    const StepStats *st = ev->stats;
    if (h->n_steps == h->cap_steps) {
        int cap = h->cap_steps ? 2 * h->cap_steps : 16;
        HtmlStep *s = realloc(h->steps, (size_t)cap * sizeof *s);
        if (!s) return fail(h, "out of memory");
        h->steps = s;
        h->cap_steps = cap;
    }
    HtmlStep *s = &h->steps[h->n_steps];
    memset(s, 0, sizeof *s);
    s->slot_pos = malloc((size_t)st->tokens_total * sizeof *s->slot_pos);
    if (!s->slot_pos) return fail(h, "out of memory");
    for (int i = 0; i < st->tokens_total; i++) s->slot_pos[i] = st->slot_pos ? st->slot_pos[i] : i;
    h->n_steps++;
    s->phase = ev->phase, s->step = ev->step, s->pos0 = ev->pos0, s->n = st->tokens_new;
    s->cached = ev->slot0, s->tokens = st->tokens_total;
    s->evicted_pos0 = st->evicted_pos0, s->evicted_n = st->evicted_n;
    s->kv_bytes = st->kv_bytes, s->kv_reserved = st->kv_reserved, s->flops = st->flops;
    for (int i = 0; i < s->n; i++) {
        const int pos = s->pos0 + i;
        if (pos < h->rows) continue;
        h->row_step[pos] = s->step;
        h->row_len[pos] = s->cached + i + 1 < s->tokens ? s->cached + i + 1 : s->tokens;
    }
    if (s->pos0 + s->n > h->rows) h->rows = s->pos0 + s->n;
    return 0;
}

static int on_event(const HookEvent *ev, void *user) {
    HtmlOut *h = user;
    if (h->failed) return -1;
    if (ev->point == HOOK_STEP_END) return keep_step(h, ev);
    if (!select_has(&h->cfg.layers, ev->layer)) return 0;
    const int n = ev->point == HOOK_ATTN_SCORES || ev->point == HOOK_PATTERN ? ev->shape[1]
                                                                              : ev->shape[0];
    if (ev->pos0 + n > h->cfg.T_max)
        return fail(h, "step %d reaches position %d, past the %d the page was sized for",
                    ev->step, ev->pos0 + n - 1, h->cfg.T_max);
    if (ev->point == HOOK_Q || ev->point == HOOK_K || ev->point == HOOK_V) keep_qkv(h, ev);
    else keep_rows(h, ev);
    return 0;
}

int html_out_attach(HtmlOut *h, Hooks *hooks) {
    uint32_t mask = HOOK_BIT(HOOK_Q) | HOOK_BIT(HOOK_K) | HOOK_BIT(HOOK_V) |
                    HOOK_BIT(HOOK_ATTN_SCORES) | HOOK_BIT(HOOK_PATTERN) | HOOK_BIT(HOOK_STEP_END);
    return hooks_subscribe(hooks, mask, on_event, h);
}

void html_out_free(HtmlOut *h) {
    for (int i = 0; h->heads && i < h->n_heads; i++) {
        HtmlHead *p = &h->heads[i];
        free(p->q), free(p->k), free(p->v), free(p->w), free(p->s);
    }
    for (int i = 0; i < h->n_steps; i++) free(h->steps[i].slot_pos);
    free(h->heads), free(h->row_step), free(h->row_len), free(h->steps);
    h->heads = NULL, h->row_step = h->row_len = NULL, h->steps = NULL;
    h->n_heads = h->n_steps = 0;
}

/* ---- JSON ---- */

/* Bytes of the UTF-8 character at s (1..4, within avail), or 0 if it is not well formed. */
static int utf8_len(const unsigned char *s, size_t avail) {
    int n = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
                            : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if ((n == 2 && s[0] < 0xc2) || (size_t)n > avail) return 0; /* overlong, cut */
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return n;
}

/* A JSON string; '<', '>' and '&' escaped so that no text closes the script
 * element; bytes that are not UTF-8 become U+FFFD. */
static void json_str(FILE *f, const char *str) {
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        int n = utf8_len(s, strlen((const char *)s));
        if (n == 0) {
            fputs("\\ufffd", f), s++;
        } else if (n > 1) {
            fwrite(s, 1, (size_t)n, f), s += n;
        } else {
            if (*s == '"' || *s == '\\') fprintf(f, "\\%c", *s);
            else if (*s < 0x20 || *s == '<' || *s == '>' || *s == '&') fprintf(f, "\\u%04x", *s);
            else fputc(*s, f);
            s++;
        }
    }
    fputc('"', f);
}

/* Text for HTML: '<', '>', '&' and '"' escaped, controls as spaces, bytes that are not
 * UTF-8 as U+FFFD. */
static void html_text(FILE *f, const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str, *end = s + len;
    while (s < end) {
        int n = utf8_len(s, (size_t)(end - s));
        if (n == 0) fputs("\xef\xbf\xbd", f), s++;
        else if (n > 1) fwrite(s, 1, (size_t)n, f), s += n;
        else {
            const char *e = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;"
                            : *s == '"' ? "&quot;" : NULL;
            if (e) fputs(e, f);
            else fputc(*s < 0x20 || *s == 0x7f ? ' ' : *s, f);
            s++;
        }
    }
}

/* <title>: the prompt, the steps and what the cache does, for the browser's tab and the
 * gallery's caption. */
static void write_title(FILE *f, const HtmlOut *h, const int *ids, const Tokenizer *tok) {
    const HtmlConfig *c = &h->cfg;
    const int T = h->rows < c->T ? h->rows : c->T, steps = h->n_steps ? h->n_steps - 1 : 0;
    fputs("<title>kvscope explorer: \u201c", f);
    char *all = NULL; /* the prompt's bytes, an id without text left out */
    size_t used = 0;
    for (int i = 0; i < T; i++) {
        char *text = NULL, *grown;
        size_t len = 0;
        if (tokenizer_decode(tok, &ids[i], 1, &text, &len) == 0 && (grown = realloc(all, used + len + 1))) {
            all = grown;
            memcpy(all + used, text, len);
            used += len;
        }
        free(text);
    }
    html_text(f, all ? all : "", used);
    free(all);
    if (steps) fprintf(f, "\u201d, prefill of %d tokens and %d decode step%s (", T, steps, steps == 1 ? "" : "s");
    else fprintf(f, "\u201d, prefill of %d tokens only (", T);
    if (strcmp(c->mode, "recompute") == 0) fputs("no cache", f);
    else if (strcmp(c->mode, "article-bug") == 0) fputs("the article\u2019s cache that forgets", f);
    else if (c->window > 0) fprintf(f, "KV cache, window %d with %d sinks", c->window, c->sink);
    else fputs("KV cache", f);
    if (c->kv_cap_bytes) fprintf(f, ", capped at %.4g MiB", (double)c->kv_cap_bytes / 1048576.0);
    fprintf(f, ", K/V as %s)</title>\n", c->kv_dtype);
}

/* n floats as float32 little-endian in base64. */
static void json_f32(FILE *f, const float *v, size_t n) {
    static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char b[3];
    int k = 0;
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], sizeof u);
        for (int j = 0; j < 4; j++) {
            b[k++] = (unsigned char)(u >> (8 * j));
            if (k == 3) {
                fputc(A[b[0] >> 2], f), fputc(A[(b[0] & 3) << 4 | b[1] >> 4], f);
                fputc(A[(b[1] & 15) << 2 | b[2] >> 6], f), fputc(A[b[2] & 63], f);
                k = 0;
            }
        }
    }
    if (k == 1) fputc(A[b[0] >> 2], f), fputc(A[(b[0] & 3) << 4], f), fputs("==", f);
    if (k == 2)
        fputc(A[b[0] >> 2], f), fputc(A[(b[0] & 3) << 4 | b[1] >> 4], f),
            fputc(A[(b[1] & 15) << 2], f), fputc('=', f);
    fputc('"', f);
}

static void json_ints(FILE *f, const int *v, int n) {
    fputc('[', f);
    for (int i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", v[i]);
    fputc(']', f);
}

static void json_rgb(FILE *f, Rgb c) { fprintf(f, "\"%02x%02x%02x\"", c.r, c.g, c.b); }

static void write_model_run(FILE *f, const HtmlOut *h) {
    const HtmlConfig *c = &h->cfg;
    fputs("\"format\":\"kvscope-explorer\",\"version\":1,\"kvscope\":", f);
    json_str(f, KVSCOPE_VERSION);
    fputs(",\n\"model\":{\"name\":", f);
    json_str(f, c->model_name);
    fprintf(f, ",\"L\":%d,\"NH\":%d,\"hs\":%d,\"C\":%d,\"V\":%d,\"N\":%d,\"tokenizer\":\"%s\"},\n",
            c->cfg.L, c->cfg.NH, h->hs, c->cfg.C, c->cfg.V, c->cfg.N, c->bpe ? "bpe" : "bytes");
    fputs("\"run\":{\"mode\":", f);
    json_str(f, c->mode);
    fputs(",\"kv_dtype\":", f);
    json_str(f, c->kv_dtype);
    fprintf(f, ",\"kv_bytes_per_token\":%zu,\"window\":%d,\"sink\":%d,\"kv_cap_bytes\":%zu,"
               "\"prompt_tokens\":%d,\"steps_asked\":%d,\"view\":",
            c->kv_bytes_per_token, c->window, c->sink, c->kv_cap_bytes, c->T, c->T_max - c->T);
    json_str(f, c->view ? c->view : "");
    fputs("},\n", f);
}

/* The token of every computed position: its id and raw bytes in hex; no bytes ("") for
 * an id the tokenizer has no text for (a built-in model with V > 256), shown by its id. */
static void write_tokens(FILE *f, HtmlOut *h, const int *ids, int n, const Tokenizer *tok) {
    const int P = h->rows < n ? h->rows : n;
    fputs("\"tokens\":{\"id\":", f);
    json_ints(f, ids, P);
    fputs(",\"bytes\":[", f);
    for (int i = 0; i < P; i++) {
        char *text = NULL;
        size_t len = 0;
        fputs(i ? ",\"" : "\"", f);
        if (tokenizer_decode(tok, &ids[i], 1, &text, &len) == 0)
            for (size_t j = 0; j < len; j++) fprintf(f, "%02x", (unsigned char)text[j]);
        fputc('"', f);
        free(text);
    }
    fputs("]},\n", f);
}

static void write_step(FILE *f, const HtmlOut *h, const HtmlStep *s) {
    const FlopCount *fl = &s->flops;
    const uint64_t t = (uint64_t)s->pos0 + (uint64_t)s->n;
    const uint64_t cache = s->phase == PHASE_PREFILL ? flops_layers_formula(&h->cfg.cfg, t, 0)
                                                     : flops_layers_formula(&h->cfg.cfg, 1, t - 1);
    fprintf(f, "{\"step\":%d,\"phase\":\"%s\",\"pos0\":%d,\"n\":%d,\"cached\":%d,\"tokens\":%d,"
               "\"slots\":[",
            s->step, phase_name(s->phase), s->pos0, s->n, s->cached, s->tokens);
    for (int i = 0; i < s->tokens;) {
        int j = i;
        while (j + 1 < s->tokens && s->slot_pos[j + 1] == s->slot_pos[j] + 1) j++;
        fprintf(f, "%s[%d,%d]", i ? "," : "", s->slot_pos[i], s->slot_pos[j]);
        i = j + 1;
    }
    fprintf(f, "],\"evicted\":[%d,%d],\"kv_bytes\":%zu,\"kv_reserved\":%zu,", s->evicted_pos0,
            s->evicted_n, s->kv_bytes, s->kv_reserved);
    fprintf(f, "\"flops\":{\"qkv\":%" PRIu64 ",\"attn\":%" PRIu64 ",\"attn_proj\":%" PRIu64
               ",\"mlp\":%" PRIu64 ",\"lm_head\":%" PRIu64 ",\"elementwise\":%" PRIu64 "},",
            fl->qkv, fl->attn, fl->attn_proj, fl->mlp, fl->lm_head, fl->elementwise);
    fprintf(f, "\"formula\":{\"cache\":%" PRIu64 ",\"recompute\":%" PRIu64 "}}", cache,
            flops_layers_formula(&h->cfg.cfg, t, 0));
}

/* The colour range of one matrix from its prefill entries, as the PNGs take it. */
static float prefill_range(HtmlOut *h, const float *v, size_t n) {
    float *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp) {
        fail(h, "out of memory");
        return 1.0f;
    }
    memcpy(tmp, v, n * sizeof *tmp);
    float r = heatmap_range(tmp, n);
    free(tmp);
    return r;
}

static void write_head(FILE *f, HtmlOut *h, const HtmlHead *p) {
    const int T = h->rows < h->cfg.T ? h->rows : h->cfg.T; /* the prefill's positions */
    size_t prefill_ws = 0;
    for (int r = 0; r < T; r++) prefill_ws += (size_t)h->row_len[r];
    const size_t tq = (size_t)T * h->hs, pq = (size_t)h->rows * h->hs;
    fprintf(f, "{\"layer\":%d,\"head\":%d,\"range\":{\"scores\":%.9g,\"q\":%.9g,\"k\":%.9g,"
               "\"v\":%.9g},\n\"weights\":",
            p->layer, p->head, (double)prefill_range(h, p->s, prefill_ws),
            (double)prefill_range(h, p->q, tq), (double)prefill_range(h, p->k, tq),
            (double)prefill_range(h, p->v, tq));
    json_f32(f, p->w, p->ws_len);
    fputs(",\n\"scores\":", f);
    json_f32(f, p->s, p->ws_len);
    fputs(",\n\"q\":", f);
    json_f32(f, p->q, pq);
    fputs(",\n\"k\":", f);
    json_f32(f, p->k, pq);
    fputs(",\n\"v\":", f);
    json_f32(f, p->v, pq);
    fputc('}', f);
}

static void write_colormaps(FILE *f) {
    fputs("\"colormaps\":{\"viridis\":[", f);
    for (int i = 0; i < COLORMAP_VIRIDIS_N; i++) {
        if (i) fputc(',', f);
        json_rgb(f, colormap_viridis_at(i));
    }
    fputs("],\n\"coolwarm\":[", f);
    for (int i = 0; i < COLORMAP_DIVERGING_N; i++) {
        if (i) fputc(',', f);
        json_rgb(f, colormap_diverging_at(i));
    }
    fputs("],\n\"masked\":", f);
    json_rgb(f, COLOR_MASKED);
    fputs(",\"newest\":", f);
    json_rgb(f, COLOR_NEWEST);
    fputs(",\"decode\":", f);
    json_rgb(f, COLOR_DECODE);
    fputs("}", f);
}

static int write_data(FILE *f, HtmlOut *h, const int *ids, int n, const Tokenizer *tok) {
    fputc('{', f);
    write_model_run(f, h);
    write_tokens(f, h, ids, n, tok);
    fputs("\"steps\":[\n", f);
    for (int i = 0; i < h->n_steps; i++) {
        if (i) fputs(",\n", f);
        write_step(f, h, &h->steps[i]);
    }
    fputs("],\n\"rows\":{\"step\":", f);
    json_ints(f, h->row_step, h->rows);
    fputs(",\"len\":", f);
    json_ints(f, h->row_len, h->rows);
    fputs("},\n\"heads\":[\n", f);
    for (int i = 0; i < h->n_heads; i++) {
        if (i) fputs(",\n", f);
        write_head(f, h, &h->heads[i]);
    }
    fputs("],\n", f);
    write_colormaps(f);
    fputs("}\n", f);
    return h->failed ? -1 : 0;
}

/* ---- the page ---- */

static const EmbeddedFile *page_file(const char *name) {
    for (const EmbeddedFile *f = explorer_files; f->name; f++)
        if (strcmp(f->name, name) == 0) return f;
    return NULL;
}

static void write_lines(FILE *f, const EmbeddedFile *e) {
    for (const char *const *l = e->lines; *l; l++) fprintf(f, "%s\n", *l);
}

static int write_page(FILE *f, HtmlOut *h, const int *ids, int n, const Tokenizer *tok) {
    const EmbeddedFile *html = page_file("explorer.html"), *css = page_file("explorer.css"),
                       *js = page_file("explorer.js");
    if (!html || !css || !js) return fail(h, "the explorer's files are not in this binary");
    for (const char *const *l = html->lines; *l; l++) {
        if (strcmp(*l, MARK_CSS) == 0) write_lines(f, css);
        else if (strcmp(*l, MARK_JS) == 0) write_lines(f, js);
        else if (strcmp(*l, MARK_TITLE) == 0) write_title(f, h, ids, tok);
        else if (strcmp(*l, MARK_DATA) == 0) {
            if (write_data(f, h, ids, n, tok)) return -1;
        } else fprintf(f, "%s\n", *l);
    }
    return 0;
}

int html_out_write(HtmlOut *h, FILE *f, const int *ids, int n, const Tokenizer *tok,
                   size_t *bytes) {
    if (h->failed) return -1;
    if (write_page(f, h, ids, n, tok)) return -1;
    long size = ftell(f);
    if (ferror(f)) return fail(h, "write error: %s", strerror(errno ? errno : EIO));
    if (bytes) *bytes = size > 0 ? (size_t)size : 0;
    return 0;
}
