/* check_html.c — the explorer page: its JSON read back with jansson and checked against
 * independent computations, and `kvscope run --html` as a user meets it.
 *
 * The data: every attention row's scores are recomputed from the page's own q and k
 * (q·k/√hs in double) and its weights as their softmax, so the row layout, the
 * positions of each row's keys (window, the articles' cache, recompute), the heads'
 * order and the base64 float32 encoding are all checked at once; the keys a row holds
 * are checked against the window rule written out here; FLOPs against the closed form
 * written out here; KV bytes against tokens × bytes per token.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "generate.h"
#include "html_out.h"
#include "outdir.h"
#include "testutil.h"

/* ---- reading a page back ---- */

static json_t *page_json(const char *path) {
    char *page = read_file(path, NULL);
    if (!page) return NULL;
    const char *tag = "<script type=\"application/json\" id=\"kvscope-data\">\n";
    char *a = strstr(page, tag), *b = a ? strstr(a, "\n</script>") : NULL;
    json_t *j = NULL;
    if (a && b) {
        json_error_t e;
        a += strlen(tag);
        j = json_loadb(a, (size_t)(b - a), 0, &e);
        if (!j) fprintf(stderr, "check_html: %s: JSON line %d: %s\n", path, e.line, e.text);
    }
    free(page);
    return j;
}

static int b64_value(char c) {
    const char *A = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = c ? strchr(A, c) : NULL;
    return p ? (int)(p - A) : -1;
}

/* A base64 float32 little-endian array; *n floats. */
static float *f32_array(json_t *s, size_t *n) {
    const char *t = json_string_value(s);
    ck_assert_ptr_nonnull(t);
    size_t len = strlen(t), nb = 0;
    ck_assert_uint_eq(len % 4, 0);
    unsigned char *bytes = malloc(len / 4 * 3 + 4);
    ck_assert_ptr_nonnull(bytes);
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        for (int k = 0; k < 4; k++) v[k] = t[i + k] == '=' ? 0 : b64_value(t[i + k]);
        ck_assert(v[0] >= 0 && v[1] >= 0 && v[2] >= 0 && v[3] >= 0);
        unsigned x = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
        bytes[nb++] = (unsigned char)(x >> 16);
        if (t[i + 2] != '=') bytes[nb++] = (unsigned char)(x >> 8);
        if (t[i + 3] != '=') bytes[nb++] = (unsigned char)x;
    }
    ck_assert_uint_eq(nb % 4, 0);
    *n = nb / 4;
    float *out = malloc((*n ? *n : 1) * sizeof *out);
    ck_assert_ptr_nonnull(out);
    for (size_t i = 0; i < *n; i++) {
        uint32_t u = (uint32_t)bytes[4 * i] | (uint32_t)bytes[4 * i + 1] << 8 |
                     (uint32_t)bytes[4 * i + 2] << 16 | (uint32_t)bytes[4 * i + 3] << 24;
        memcpy(&out[i], &u, sizeof u);
    }
    free(bytes);
    return out;
}

static long jint(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    ck_assert_msg(json_is_integer(v), "no integer %s", key);
    return (long)json_integer_value(v);
}

/* Positions held by slots 0 .. of a step, from its inclusive ranges. */
static int step_positions(json_t *step, int *pos, int cap) {
    json_t *r;
    size_t i;
    int n = 0;
    json_array_foreach(json_object_get(step, "slots"), i, r) {
        for (long p = json_integer_value(json_array_get(r, 0)); p <= json_integer_value(json_array_get(r, 1)); p++) {
            ck_assert_int_lt(n, cap);
            pos[n++] = (int)p;
        }
    }
    return n;
}

/* ---- one run into a page, through the library ---- */

typedef struct {
    GenMode mode;
    int window, sink;
    Dtype dtype;
    const char *name;
} Case;

static const Case cases[] = {
    {GEN_CACHE, 0, 0, DT_FP32, "cache"},
    {GEN_CACHE, 6, 2, DT_Q8_0, "window q8_0"},
    {GEN_ARTICLE_BUG, 0, 0, DT_FP32, "article-bug"},
    {GEN_RECOMPUTE, 0, 0, DT_FP32, "recompute"},
};
enum { L_ = 2, NH_ = 2, C_ = 32, T0 = 5, STEPS = 7 };

static const char *mode_of(GenMode m) {
    return m == GEN_RECOMPUTE ? "recompute" : m == GEN_ARTICLE_BUG ? "article-bug" : "cache";
}

/* Run the tiny model with the observer; write the page to path. Returns its size. */
static size_t write_run(const Case *c, const char *path, int *tokens, HtmlConfig *hc_out) {
    Config cfg = tiny_config(L_, NH_, C_, 64, 64);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 7), 0);
    Generator g;
    ck_assert_int_eq(generator_init(&g, &m, c->mode), 0);
    ck_assert_int_eq(kvcache_set_dtype(&g.cache, c->dtype), 0);
    g.window = c->window, g.sink = c->sink;
    HtmlConfig hc = {.cfg = cfg, .model_name = "tiny <test> & \"co\"", .mode = mode_of(c->mode),
                     .kv_dtype = dtype_name(c->dtype), .window = c->window,
                     .sink = c->sink, .T = T0, .T_max = T0 + STEPS,
                     .kv_bytes_per_token = 2 * L_ * dtype_row_bytes(c->dtype, C_, NH_)};
    select_all(&hc.layers);
    select_all(&hc.heads);
    HtmlOut h;
    ck_assert_int_eq(html_out_open(&h, &hc), 0);
    Hooks hooks;
    hooks_init(&hooks);
    ck_assert_int_eq(html_out_attach(&h, &hooks), 0);
    const int prompt[T0] = {3, 17, 42, 9, 60};
    ck_assert_int_eq(generator_prefill(&g, prompt, T0, &hooks), 0);
    for (int s = 1; s <= STEPS; s++) ck_assert_int_eq(generator_decode(&g, generator_argmax(&g), s, &hooks), 0);
    Tokenizer *tok = tokenizer_bytes();
    size_t bytes = 0;
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(html_out_write(&h, f, g.tokens, g.len, tok, &bytes), 0);
    ck_assert_int_eq(fclose(f), 0);
    if (tokens) memcpy(tokens, g.tokens, (size_t)g.len * sizeof *tokens);
    if (hc_out) *hc_out = hc;
    tokenizer_free(tok);
    html_out_free(&h);
    generator_free(&g);
    model_free(&m);
    return bytes;
}

/* The keys query position p holds in case c, as the cache rules say. */
static int expected_keys(const Case *c, int p, int *keys) {
    int n = 0;
    if (c->mode == GEN_ARTICLE_BUG && p > T0) { /* only the previous step's K/V and its own */
        keys[n++] = p - 1, keys[n++] = p;
    } else if (c->window && p + 1 > c->window) {
        for (int k = 0; k < c->sink; k++) keys[n++] = k;
        for (int k = p - (c->window - c->sink) + 1; k <= p; k++) keys[n++] = k;
    } else {
        for (int k = 0; k <= p; k++) keys[n++] = k;
    }
    return n;
}

static uint64_t closed_form(uint64_t n, uint64_t p) { /* L·(24·n·C² + 4·C·(n·p + n(n+1)/2)) */
    return (uint64_t)L_ * (24 * n * C_ * C_ + 4 * (uint64_t)C_ * (n * p + n * (n + 1) / 2));
}

/* Every row of one head: scores = q·k/√hs of its keys, weights = their softmax. */
static void check_head(json_t *head, json_t *D, const Case *c) {
    json_t *rows = json_object_get(D, "rows"), *steps = json_object_get(D, "steps");
    const int P = (int)json_array_size(json_object_get(rows, "len")), hs = C_ / NH_;
    size_t nw, ns, nq, nk, nv;
    float *w = f32_array(json_object_get(head, "weights"), &nw), *s = f32_array(json_object_get(head, "scores"), &ns);
    float *q = f32_array(json_object_get(head, "q"), &nq), *k = f32_array(json_object_get(head, "k"), &nk);
    float *v = f32_array(json_object_get(head, "v"), &nv);
    ck_assert_uint_eq(nw, ns);
    ck_assert_uint_eq(nq, (size_t)P * hs);
    ck_assert_uint_eq(nk, nq);
    ck_assert_uint_eq(nv, nq);
    size_t off = 0;
    double worst_s = 0, worst_w = 0;
    for (int p = 0; p < P; p++) {
        const int len = (int)json_integer_value(json_array_get(json_object_get(rows, "len"), p));
        const int st = (int)json_integer_value(json_array_get(json_object_get(rows, "step"), p));
        int pos[64], want[64];
        step_positions(json_array_get(steps, (size_t)st), pos, 64);
        const int nwant = expected_keys(c, p, want);
        ck_assert_msg(len == nwant, "%s: row %d holds %d keys, expected %d", c->name, p, len, nwant);
        ck_assert_int_eq(st, p < T0 ? 0 : p - T0 + 1);
        double sc[64], mx = -1e30, sum = 0;
        for (int j = 0; j < len; j++) {
            ck_assert_msg(pos[j] == want[j], "%s: row %d key %d is position %d, expected %d", c->name, p, j, pos[j], want[j]);
            double d = 0;
            for (int i = 0; i < hs; i++) d += (double)q[(size_t)p * hs + i] * k[(size_t)pos[j] * hs + i];
            sc[j] = d / sqrt((double)hs);
            if (sc[j] > mx) mx = sc[j];
        }
        for (int j = 0; j < len; j++) sum += exp(sc[j] - mx);
        for (int j = 0; j < len; j++) {
            const double es = fabs(s[off + j] - sc[j]), ew = fabs(w[off + j] - exp(sc[j] - mx) / sum);
            if (es > worst_s) worst_s = es;
            if (ew > worst_w) worst_w = ew;
        }
        off += (size_t)len;
    }
    ck_assert_uint_eq(off, nw);
    ck_assert_msg(worst_s < 1e-5 && worst_w < 1e-6, "%s: worst |score - q·k/√hs| %g, |weight - softmax| %g",
                  c->name, worst_s, worst_w);
    /* the colour range: two significant digits at or above the prefill's largest |score| */
    size_t pre = 0;
    for (int p = 0; p < T0; p++) pre += (size_t)p + 1;
    float top = 0;
    for (size_t i = 0; i < pre; i++) top = fmaxf(top, fabsf(s[i]));
    const double R = json_real_value(json_object_get(json_object_get(head, "range"), "scores"));
    const double mant = R / pow(10.0, floor(log10(R)) - 1); /* 10 ≤ mant < 100 */
    ck_assert_msg(R >= top && R <= top * 1.1 + 1e-6 && fabs(mant - round(mant)) < 1e-4,
                  "%s: range %g for a largest |score| %g", c->name, R, (double)top);
    free(w), free(s), free(q), free(k), free(v);
}

static void check_steps(json_t *D, const Case *c) {
    json_t *steps = json_object_get(D, "steps"), *st;
    const long bpt = jint(json_object_get(D, "run"), "kv_bytes_per_token");
    ck_assert_int_eq(bpt, 2 * L_ * (c->dtype == DT_Q8_0 ? 34 : 4 * C_));
    ck_assert_uint_eq(json_array_size(steps), STEPS + 1);
    size_t i;
    json_array_foreach(steps, i, st) {
        const long t = jint(st, "pos0") + jint(st, "n"), n = jint(st, "n");
        ck_assert_int_eq(jint(st, "step"), (long)i);
        ck_assert_int_eq(t, T0 + (long)i);
        ck_assert_int_eq(n, c->mode == GEN_RECOMPUTE ? t : i ? 1 : T0);
        ck_assert_int_eq(jint(st, "kv_bytes"), jint(st, "tokens") * bpt);
        ck_assert_int_ge(jint(st, "kv_reserved"), jint(st, "kv_bytes"));
        json_t *f = json_object_get(st, "flops"), *fm = json_object_get(st, "formula");
        const uint64_t counted = (uint64_t)(jint(f, "qkv") + jint(f, "attn") + jint(f, "attn_proj") + jint(f, "mlp"));
        ck_assert_uint_eq((uint64_t)jint(fm, "recompute"), closed_form((uint64_t)t, 0));
        ck_assert_uint_eq((uint64_t)jint(fm, "cache"), i ? closed_form(1, (uint64_t)t - 1) : closed_form((uint64_t)t, 0));
        if (c->mode == GEN_RECOMPUTE || i == 0) ck_assert_uint_eq(counted, closed_form((uint64_t)t, 0));
        else if (c->mode == GEN_CACHE && !c->window) ck_assert_uint_eq(counted, closed_form(1, (uint64_t)t - 1));
        else ck_assert_uint_le(counted, closed_form(1, (uint64_t)t - 1)); /* fewer keys read */
    }
}

START_TEST(test_page_data) {
    const Case *c = &cases[_i];
    char dir[64], path[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/page.html", dir);
    int tokens[T0 + STEPS];
    write_run(c, path, tokens, NULL);
    json_t *D = page_json(path);
    ck_assert_ptr_nonnull(D);
    ck_assert_str_eq(json_string_value(json_object_get(D, "format")), "kvscope-explorer");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(D, "model"), "name")), "tiny <test> & \"co\"");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(D, "run"), "mode")), mode_of(c->mode));
    json_t *ids = json_object_get(json_object_get(D, "tokens"), "id");
    json_t *hex = json_object_get(json_object_get(D, "tokens"), "bytes");
    ck_assert_uint_eq(json_array_size(ids), T0 + STEPS);
    for (int p = 0; p < T0 + STEPS; p++) {
        char want[8];
        snprintf(want, sizeof want, "%02x", tokens[p]);
        ck_assert_int_eq(json_integer_value(json_array_get(ids, (size_t)p)), tokens[p]);
        ck_assert_str_eq(json_string_value(json_array_get(hex, (size_t)p)), want);
    }
    check_steps(D, c);
    json_t *heads = json_object_get(D, "heads"), *h;
    ck_assert_uint_eq(json_array_size(heads), L_ * NH_);
    size_t i;
    json_array_foreach(heads, i, h) {
        ck_assert_int_eq(jint(h, "layer"), (long)i / NH_);
        ck_assert_int_eq(jint(h, "head"), (long)i % NH_);
        check_head(h, D, c);
    }
    /* published colours: matplotlib's viridis ends, Moreland's cool-warm centre */
    json_t *cm = json_object_get(D, "colormaps");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(cm, "viridis"), 0)), "440154");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(cm, "viridis"), 255)), "fde725");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(cm, "coolwarm"), 127)), "dddddd");
    json_decref(D);
    remove_tree(dir);
}
END_TEST

/* Same run, same bytes; the estimate bounds the page; it starts with the signature. */
START_TEST(test_page_size_and_bytes) {
    char dir[64], a[128], b[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(a, sizeof a, "%s/a.html", dir);
    snprintf(b, sizeof b, "%s/b.html", dir);
    HtmlConfig hc;
    const size_t na = write_run(&cases[1], a, NULL, &hc), nb = write_run(&cases[1], b, NULL, NULL);
    ck_assert_uint_eq(na, nb);
    ck_assert(files_equal(a, b));
    struct stat st;
    ck_assert_int_eq(stat(a, &st), 0);
    ck_assert_uint_eq((size_t)st.st_size, na);
    const size_t est = html_page_estimate(&hc);
    ck_assert_msg(na <= est && est < na + na / 2, "page %zu bytes, estimate %zu", na, est);
    char *page = read_file(a, NULL);
    ck_assert_int_eq(strncmp(page, HTML_SIGNATURE, strlen(HTML_SIGNATURE)), 0);
    ck_assert_ptr_nonnull(strstr(page, "<title>kvscope explorer: \u201c"));
    ck_assert_ptr_null(strstr(page, "<!--kvscope:")); /* every marker replaced */
    free(page);
    ck_assert_int_eq(count_entries(dir), 2);          /* no temporary file left */
    /* too large: refused before anything is allocated */
    hc.T_max = 1200;
    hc.cfg.N = 2048;
    HtmlOut h;
    ck_assert_int_eq(html_out_open(&h, &hc), HTML_TOO_LARGE);
    ck_assert_uint_gt(html_page_estimate(&hc), HTML_MAX_BYTES);
    ck_assert_uint_eq(html_head_bytes(1200, 16), 4 * (1200 * 1201 + 3 * 1200 * 16));
    remove_tree(dir);
}
END_TEST

/* ---- the command ---- */

static int run_page(const char *out, const char *html, const char *errf, const char *more) {
    const char *args[24] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "64",
                            "--prompt-ids", "1,2,3", "--steps", "3", "--out", out, "--html", html,
                            "--quiet"};
    int n = 18;
    if (more) args[n++] = more;
    args[n] = NULL;
    return run_kvscope(args, NULL, errf);
}

static void assert_one_line(const char *errf, const char *needle) {
    char *err = read_file(errf, NULL);
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strncmp(err, "kvscope: ", 9) == 0 && strstr(err, needle), "stderr: %s", err);
    ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "not one line: %s", err);
    free(err);
}

START_TEST(test_cli_page) {
    char dir[64], out[128], html[160], errf[128], in_out[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(html, sizeof html, "%s/page.html", dir);
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    ck_assert_int_eq(run_page(out, html, errf, NULL), 0);
    json_t *D = page_json(html);
    ck_assert_ptr_nonnull(D);
    ck_assert_uint_eq(json_array_size(json_object_get(D, "steps")), 4);
    ck_assert_uint_eq(json_array_size(json_object_get(D, "heads")), 2); /* default: every head */
    json_decref(D);
    ck_assert_int_eq(run_page(out, html, errf, "--article-bug"), 0); /* a page kvscope wrote: replaced */
    D = page_json(html);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(D, "run"), "mode")), "article-bug");
    json_decref(D);
    snprintf(in_out, sizeof in_out, "%s/explorer.html", out); /* inside --out: committed with it */
    ck_assert_int_eq(run_page(out, in_out, errf, NULL), 0);
    D = page_json(in_out);
    ck_assert_ptr_nonnull(D);
    json_decref(D);
    ck_assert_int_eq(count_entries(dir), 3); /* out/, page.html, err.txt: no temporary */
    /* --out by another spelling: still written into the new folder, not the old one */
    char other[200], gone[220];
    snprintf(other, sizeof other, "%s/./out/other.html", dir);
    ck_assert_int_eq(run_page(out, other, errf, NULL), 0);
    snprintf(gone, sizeof gone, "%s/explorer.html", out);
    struct stat sb;
    ck_assert_int_ne(stat(gone, &sb), 0); /* the old folder's page went with it */
    snprintf(gone, sizeof gone, "%s/other.html", out);
    ck_assert_int_eq(stat(gone, &sb), 0);
    /* an id the byte tokenizer has no text for (V > 256): no bytes, the page still written */
    const char *ids[] = {"run", "--vocab", "1000", "--layers", "1", "--heads", "2", "--dim", "16",
                         "--prompt-ids", "300,2,3", "--steps", "1", "--out", out, "--html", html,
                         "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(ids, NULL, errf), 0);
    D = page_json(html);
    ck_assert_ptr_nonnull(D);
    json_t *tk = json_object_get(D, "tokens");
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(tk, "id"), 0)), 300);
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(tk, "bytes"), 0)), "");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(tk, "bytes"), 1)), "02");
    json_decref(D);
    /* the title holds the prompt's characters whole, though each byte is a token */
    const char *cjk[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--prompt", "人工 <x>",
                         "--steps", "1", "--out", out, "--html", html, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(cjk, NULL, errf), 0);
    char *page = read_file(html, NULL);
    ck_assert_ptr_nonnull(page);
    ck_assert_msg(strstr(page, "<title>kvscope explorer: \u201c人工 &lt;x&gt;\u201d, prefill of 10 tokens and 1 "
                               "decode step (KV cache, K/V as fp32)</title>"), "title: %.300s", strstr(page, "<title>"));
    free(page);
    remove_tree(dir);
}
END_TEST

/* --html-view: the page's JSON carries the view (',' read as '&', the fragment's syntax);
 * a malformed view, a head or layer the page does not show, or a view without a page:
 * exit 2, one line naming it, no page written. */
START_TEST(test_cli_page_view) {
    char dir[64], out[128], html[160], errf[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(html, sizeof html, "%s/page.html", dir);
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    const char *ok[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "64",
                        "--prompt-ids", "1,2,3", "--steps", "3", "--out", out, "--html", html,
                        "--html-view", "head=1,step=last&view=scores,zoom=2", "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(ok, NULL, errf), 0);
    json_t *D = page_json(html);
    ck_assert_ptr_nonnull(D);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(D, "run"), "view")),
                     "head=1&step=last&view=scores&zoom=2");
    json_decref(D);
    ck_assert_int_eq(run_page(out, html, errf, NULL), 0); /* no view: "" */
    D = page_json(html);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(D, "run"), "view")), "");
    json_decref(D);
    ck_assert_int_eq(unlink(html), 0);
    const char *bad[][2] = {{"head=2", "does not show (--heads-shown)"}, {"layer=1", "does not show (--layers-shown)"},
                            {"hed=1", "hed=1"}, {"step=-1", "step=-1"}, {"view=keys", "view=keys"},
                            {"zoom=3", "zoom=3"}, {"head=0,head=1", "head=1"}, {"layer", "layer"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *a[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "64",
                           "--prompt-ids", "1,2,3", "--steps", "3", "--out", out, "--html", html,
                           "--html-view", bad[i][0], "--quiet", NULL};
        ck_assert_int_eq(run_kvscope(a, NULL, errf), 2);
        assert_one_line(errf, bad[i][1]);
        struct stat sb;
        ck_assert_msg(stat(html, &sb) != 0, "--html-view %s: a page was written", bad[i][0]);
    }
    const char *nopage[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "64",
                            "--prompt-ids", "1,2,3", "--steps", "3", "--out", out,
                            "--html-view", "head=1", "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(nopage, NULL, errf), 2);
    assert_one_line(errf, "--html-view needs --html FILE");
    remove_tree(dir);
}
END_TEST

/* Bad places and a run too large: exit 2, one line, nothing written, files kept. */
START_TEST(test_cli_page_errors) {
    char dir[64], out[128], errf[128], foreign[128], missing[160], nested[200], big[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    snprintf(foreign, sizeof foreign, "%s/notes.html", dir);
    FILE *f = fopen(foreign, "w");
    ck_assert_ptr_nonnull(f);
    fputs("<!DOCTYPE html>\n<p>my notes</p>\n", f);
    fclose(f);
    snprintf(missing, sizeof missing, "%s/no/such/page.html", dir);
    snprintf(nested, sizeof nested, "%s/sub/page.html", out);
    char slashed[80], sub[160], nested2[200];
    snprintf(slashed, sizeof slashed, "%s/", dir);
    snprintf(sub, sizeof sub, "%s/sub", out);           /* an old --out with a folder inside, */
    snprintf(nested2, sizeof nested2, "%s/./out/sub/page.html", dir); /* named another way */
    const char *first[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "64",
                           "--prompt-ids", "1,2,3", "--steps", "1", "--out", out, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(first, NULL, errf), 0); /* an --out kvscope wrote */
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    const int in_out = count_entries(out);
    const char *cases[][2] = {{missing, "folder it goes in does not exist"}, {foreign, "did not write"},
                              {dir, "not a file kvscope can replace"}, {slashed, "names a folder"},
                              {nested, "directly in it"}, {nested2, "directly in it"}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ck_assert_int_eq(run_page(out, cases[c][0], errf, NULL), 2);
        assert_one_line(errf, cases[c][1]);
        ck_assert_int_eq(count_entries(dir), 3); /* notes.html, err.txt and the old out/ */
        ck_assert_int_eq(count_entries(out), in_out); /* the old out/ as it was */
    }
    char *notes = read_file(foreign, NULL);
    ck_assert_str_eq(notes, "<!DOCTYPE html>\n<p>my notes</p>\n");
    free(notes);
    /* checked with the other outputs, before the model loads: a bad --model is not what
     * is said */
    const char *early[] = {"run", "--model", "/nonexistent/gpt2", "--out", out, "--html", foreign,
                           "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(early, NULL, errf), 2);
    assert_one_line(errf, "--html is a file kvscope did not write");
    /* a page inside --plots would go when the figures' folder is swapped in after it */
    char plots[160], in_plots[200];
    snprintf(plots, sizeof plots, "%s/figs", dir);
    snprintf(in_plots, sizeof in_plots, "%s/./figs/page.html", dir);
    const char *pl[] = {"run", "--layers", "1", "--heads", "2", "--dim", "16", "--vocab", "64",
                        "--prompt-ids", "1,2,3", "--steps", "1", "--out", out, "--plots", plots,
                        "--html", in_plots, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(pl, NULL, errf), 2);
    assert_one_line(errf, "--html inside --plots would be lost");
    ck_assert_int_eq(count_entries(dir), 3);
    snprintf(big, sizeof big, "%s/big.html", dir); /* refused before the run starts */
    const char *args[] = {"run", "--ctx", "4096", "--prompt-ids", "1", "--steps", "3000",
                          "--out", out, "--html", big, "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, errf), 2);
    assert_one_line(errf, "--heads-shown");
    assert_one_line(errf, "12 heads");
    ck_assert_int_eq(count_entries(dir), 3);
    remove_tree(dir);
}
END_TEST

/* A full disk while the page is written: exit 2, one line, the old page intact and no
 * temporary file. Needs a small tmpfs (root with mount rights), else says why not. */
START_TEST(test_cli_page_disk_full) {
    char dir[64], small[128], cmd[512], out[160], html[200], errf[128], copy[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(small, sizeof small, "%s/small", dir);
    ck_assert_int_eq(mkdir(small, 0755), 0);
    snprintf(cmd, sizeof cmd, "mount -t tmpfs -o size=160k tmpfs '%s' 2>/dev/null", small);
    if (system(cmd) != 0) {
        TEST_SKIPPED("cannot mount a small tmpfs here (needs root): the disk-full case");
        remove_tree(dir);
        return;
    }
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(html, sizeof html, "%s/page.html", small);
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    snprintf(copy, sizeof copy, "%s/copy.html", dir);
    int rc0 = run_page(out, html, errf, NULL);                   /* a small page fits */
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", html, copy);
    int cp = system(cmd);
    const char *args[] = {"run", "--prompt-ids", "1,2,3,4,5,6", "--steps", "12", "--out", out,
                          "--html", html, "--quiet", NULL};    /* the full model's: 12 heads */
    int rc = run_kvscope(args, NULL, errf);
    int left = count_entries(small), same = files_equal(html, copy);
    snprintf(cmd, sizeof cmd, "umount '%s'", small);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_int_eq(rc0, 0);
    ck_assert_int_eq(cp, 0);
    ck_assert_int_eq(rc, 2);
    assert_one_line(errf, "No space left");
    ck_assert_int_eq(left, 1); /* the old page, no temporary file */
    ck_assert_msg(same, "the old page was changed");
    remove_tree(dir);
}
END_TEST

Suite *make_html_suite(void) {
    Suite *s = suite_create("html");
    TCase *tc = tcase_create("page");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_page_data, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, test_page_size_and_bytes);
    suite_add_tcase(s, tc);
    tc = tcase_create("page_cli");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cli_page);
    tcase_add_test(tc, test_cli_page_errors);
    tcase_add_test(tc, test_cli_page_view);
    tcase_add_test(tc, test_cli_page_disk_full);
    suite_add_tcase(s, tc);
    return s;
}
