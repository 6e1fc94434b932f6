/* check_safetensors.c — the safetensors reader/writer and Hugging Face folders.
 *
 * Reader: round trip through the writer, F16/BF16 conversion against an
 * independent formula, and one test per kind of corrupt header, each rejected
 * with a message naming the file, the tensor and the problem.
 * Folders: export → load gives exactly the built-in model's logits; names with
 * "transformer.", mask buffers and a tied lm_head load; missing, misshapen,
 * unexpected and truncated tensors exit 2 with one line on stderr. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hf_model.h"
#include "outdir.h"
#include "halfprec.h"
#include "safetensors.h"
#include "testutil.h"

/* ---- in-memory files ---------------------------------------------------- */

/* 8-byte length + header + data bytes, in buf; returns the size. */
static size_t make_file(unsigned char *buf, const char *header, uint64_t hlen, size_t data) {
    size_t n = strlen(header);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + 8, header, n);
    memset(buf + 8 + n, 0, data);
    return 8 + n + data;
}

/* Parse a file whose header is h (with its true length) and data bytes; expect a
 * rejection whose message contains want (and the file name). */
static void expect_bad(const char *h, size_t data, const char *want) {
    static unsigned char buf[4096];
    size_t size = make_file(buf, h, strlen(h), data);
    SafeTensors st;
    char err[512] = "";
    int rc = st_parse(&st, "x.safetensors", buf, size, err, sizeof err);
    ck_assert_msg(rc == ST_BAD, "accepted: %s", h);
    ck_assert_msg(strstr(err, want) != NULL, "message \"%s\" lacks \"%s\"", err, want);
    ck_assert_msg(strncmp(err, "x.safetensors: ", 15) == 0, "message \"%s\" lacks the file", err);
    ck_assert_msg(strchr(err, '\n') == NULL, "message has a newline: %s", err);
}

#define T1(dt, shape, b, e) "\"a\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

START_TEST(test_corrupt_headers) {
    unsigned char buf[64] = {0};
    SafeTensors st;
    char err[512];
    /* shorter than the length field */
    ck_assert_int_eq(st_parse(&st, "x.safetensors", buf, 5, err, sizeof err), ST_BAD);
    ck_assert_ptr_nonnull(strstr(err, "too short"));
    /* header length past the end, and over the 100 MB bound */
    size_t n = make_file(buf, "{}", 3, 0);
    ck_assert_int_eq(st_parse(&st, "x.safetensors", buf, n, err, sizeof err), ST_BAD);
    ck_assert_ptr_nonnull(strstr(err, "runs past the end"));
    n = make_file(buf, "{}", (uint64_t)1 << 40, 0);
    ck_assert_int_eq(st_parse(&st, "x.safetensors", buf, n, err, sizeof err), ST_BAD);
    ck_assert_ptr_nonnull(strstr(err, "over the limit"));
    n = make_file(buf, "{}", UINT64_MAX, 0);
    ck_assert_int_eq(st_parse(&st, "x.safetensors", buf, n, err, sizeof err), ST_BAD);

    expect_bad("{\"a\":", 0, "invalid JSON");
    expect_bad("[1]", 0, "does not start with '{'");
    expect_bad("{\"\xff\":1}", 0, "invalid JSON");             /* not UTF-8 */
    expect_bad("{\"a\":1} x", 0, "invalid JSON");              /* trailing garbage */
    expect_bad("{" T1("F32", "[2]", 0, 8) "," T1("F32", "[2]", 8, 16) "}", 16, "duplicate");
    expect_bad("{" T1("Q4", "[2]", 0, 8) "}", 8, "unknown dtype \"Q4\"");
    expect_bad("{\"a\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "dtype is not a string");
    expect_bad("{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "missing \"dtype\"");
    expect_bad("{" T1("F32", "[3]", 0, 8) "}", 8, "tensor \"a\": shape [3] × F32 needs 12 bytes");
    expect_bad("{" T1("F32", "[-1]", 0, 8) "}", 8, "shape[0] is not a whole number");
    expect_bad("{" T1("F32", "[2.0]", 0, 8) "}", 8, "shape[0] is not a whole number");
    expect_bad("{" T1("F32", "[4611686018427387904,8]", 0, 8) "}", 8, "overflows");
    expect_bad("{" T1("F32", "[1,2,3,4,5,6,7,8,9]", 0, 8) "}", 8, "dimensions");
    expect_bad("{" T1("F32", "[2]", 8, 0) "}", 8, "end before begin");
    expect_bad("{" T1("F32", "[2]", 0, 8) "}", 4, "past the end of the data");
    expect_bad("{" T1("F32", "[2]", 0, 8) "}", 12, "cover 8 bytes but the data section is 12");
    expect_bad("{" T1("F32", "[2]", 4, 12) "}", 12, "gap");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
               "tensor \"b\": data_offsets [4, 12] overlap tensor \"a\"");
    expect_bad("{" T1("F32", "[2]", 0, 8) ",\"__metadata__\":{\"format\":1}}", 8, "__metadata__");
    expect_bad("{\"a\":[1]}", 0, "not a JSON object");
    expect_bad("{\"a\\n\":[1]}", 0, "tensor \"a?\""); /* names are made one-line safe */
}
END_TEST

START_TEST(test_valid_headers) {
    static unsigned char buf[256];
    SafeTensors st;
    char err[512];
    /* zero-size tensors, a scalar, metadata, padding spaces, any order in the header */
    const char *h = "{\"__metadata__\":{\"format\":\"pt\"},"
                    "\"b\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[8,10]},"
                    "\"e\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[8,8]},"
                    "\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}   ";
    size_t n = make_file(buf, h, strlen(h), 10);
    ck_assert_msg(st_parse(&st, "x", buf, n, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(st.n, 3);
    ck_assert_str_eq(st.t[0].name, "a"); /* sorted by offset */
    const StTensor *b = st_find(&st, "b");
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(b->ndim, 0);
    ck_assert_uint_eq(b->numel, 1);
    float f[1];
    ck_assert_int_eq(st_read_f32(&st, st_find(&st, "a"), f, err, sizeof err), ST_BAD);
    ck_assert_ptr_nonnull(strstr(err, "tensor \"a\": dtype I64 is not supported"));
    st_close(&st);
}
END_TEST

/* Independent: value = (-1)^s · 2^(e-15) · (1 + m/1024), subnormals 2^-14 · m/1024. */
static double half_reference(unsigned h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

START_TEST(test_f16_bf16) {
    for (unsigned h = 0; h < 65536; h++) {
        float got = fp16_to_fp32((uint16_t)h);
        double want = half_reference(h);
        if (isnan(want)) ck_assert_msg(isnan(got), "0x%04x", h);
        else ck_assert_msg((double)got == want && !signbit(got) == !signbit(want), "0x%04x: %g vs %g", h,
                           (double)got, want);
    }
    ck_assert_float_eq(fp16_to_fp32(0x3C00), 1.0f);
    ck_assert_float_eq(fp16_to_fp32(0x7BFF), 65504.0f);
    ck_assert_float_eq(bf16_to_fp32(0x3F80), 1.0f);
    ck_assert_float_eq(bf16_to_fp32(0xC040), -3.0f);
    ck_assert_float_eq(bf16_to_fp32(0x0001), ldexpf(1.0f, -133));
    ck_assert(isinf(bf16_to_fp32(0xFF80)) && bf16_to_fp32(0xFF80) < 0);

    /* a file with F16 and BF16 tensors, little-endian */
    static unsigned char buf[256];
    const char *h = "{\"h\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,6]},"
                    "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[6,10]}}";
    size_t n = make_file(buf, h, strlen(h), 10);
    const unsigned char data[10] = {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00, 0x80, 0x3F, 0x40, 0xC0};
    memcpy(buf + 8 + strlen(h), data, 10);
    SafeTensors st;
    char err[256];
    float f[3];
    ck_assert_msg(st_parse(&st, "x", buf, n, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(st_read_f32(&st, st_find(&st, "h"), f, err, sizeof err), 0);
    ck_assert_float_eq(f[0], 1.0f);
    ck_assert_float_eq(f[1], -2.0f);
    ck_assert_float_eq(f[2], ldexpf(1.0f, -24));
    ck_assert_int_eq(st_read_f32(&st, st_find(&st, "b"), f, err, sizeof err), 0);
    ck_assert_float_eq(f[0], 1.0f);
    ck_assert_float_eq(f[1], -3.0f);
    st_close(&st);
}
END_TEST

START_TEST(test_write_read) {
    char dir[64], path[128], err[512];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    float a[6] = {1.5f, -2.25f, 3e-30f, 0.0f, -0.0f, 1e30f}, b[1] = {42.0f};
    StWrite w[2] = {{"mat", 2, {2, 3}, a}, {"vec", 1, {1}, b}};
    ck_assert_int_eq(st_write(path, w, 2, err, sizeof err), 0);
    SafeTensors st;
    ck_assert_msg(st_open(&st, path, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(st.n, 2);
    ck_assert_uint_eq(((const unsigned char *)st.map)[0] % 8, 0); /* header padded to 8 */
    ck_assert_uint_eq((size_t)(st.data - (const unsigned char *)st.map) % 8, 0);
    const StTensor *t = st_find(&st, "mat");
    ck_assert(t && t->dtype == ST_F32 && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3);
    float r[6];
    ck_assert_int_eq(st_read_f32(&st, t, r, err, sizeof err), 0);
    ck_assert_mem_eq(r, a, sizeof a);
    ck_assert_int_eq(st_read_f32(&st, st_find(&st, "vec"), r, err, sizeof err), 0);
    ck_assert_float_eq(r[0], 42.0f);
    /* the exact bytes of one float: 1.5f = 0x3FC00000, little-endian */
    const unsigned char le[4] = {0x00, 0x00, 0xC0, 0x3F};
    ck_assert_mem_eq(st.data, le, 4);
    st_close(&st);
    /* a missing file is an error with the path, not a crash */
    snprintf(path, sizeof path, "%s/none.safetensors", dir);
    ck_assert_int_eq(st_open(&st, path, err, sizeof err), ST_IO);
    ck_assert_ptr_nonnull(strstr(err, "none.safetensors"));
    remove_tree(dir);
}
END_TEST

/* ---- Hugging Face folders through the CLI --------------------------------- */

static const char *const TINY[] = {"--layers", "2", "--heads", "2", "--dim", "8", "--ctx", "16", NULL};

/* kvscope <cmd> <TINY or --model dir> <rest...>; returns the exit status. */
static int kv(const char *cmd, const char *model, const char *const *rest, const char *err_path) {
    const char *args[40];
    int n = 0;
    args[n++] = cmd;
    if (model) args[n++] = "--model", args[n++] = model;
    else
        for (int i = 0; TINY[i]; i++) args[n++] = TINY[i];
    for (int i = 0; rest[i]; i++) args[n++] = rest[i];
    args[n] = NULL;
    return run_kvscope(args, NULL, err_path);
}

/* Export the tiny model into dir/m; returns its path in buf. */
static const char *export_tiny(const char *dir, char *buf, size_t size) {
    snprintf(buf, size, "%s/m", dir);
    const char *rest[] = {"--out", buf, "--quiet", NULL};
    ck_assert_int_eq(kv("export", NULL, rest, NULL), 0);
    return buf;
}

START_TEST(test_export_load_identical) {
    char dir[64], m[128], a[128], b[128], fa[160], fb[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    export_tiny(dir, m, sizeof m);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    const char *ra[] = {"--steps", "4", "--record", "logits,attention", "--quiet", "--out", a, NULL};
    const char *rb[] = {"--steps", "4", "--record", "logits,attention", "--quiet", "--out", b, NULL};
    ck_assert_int_eq(kv("run", NULL, ra, NULL), 0);
    ck_assert_int_eq(kv("run", m, rb, NULL), 0);
    snprintf(fa, sizeof fa, "%s/logits.csv", a);
    snprintf(fb, sizeof fb, "%s/logits.csv", b);
    ck_assert_msg(files_equal(fa, fb), "logits differ after export → load");
    snprintf(fa, sizeof fa, "%s/attention.csv", a);
    snprintf(fb, sizeof fb, "%s/attention.csv", b);
    ck_assert(files_equal(fa, fb));

    /* the weights themselves: every tensor bit-identical to the built-in model's */
    Config cfg;
    char err[512];
    ck_assert_msg(hf_config_load(m, &cfg, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(cfg.L, 2);
    ck_assert_int_eq(cfg.C, 8);
    ck_assert_float_eq(cfg.eps, 1e-5f);
    Model x, y;
    ck_assert_int_eq(model_init_random(&x, &cfg, 1), 0);
    ck_assert_msg(hf_weights_load(m, &cfg, &y, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(x.w.num_params, y.w.num_params);
    ck_assert_mem_eq(x.w.blob, y.w.blob, x.w.num_params * sizeof(float));
    model_free(&x);
    model_free(&y);
    remove_tree(dir);
}
END_TEST

/* Rewrite dir/m/model.safetensors from the exported tensors, changed by `how`. */
enum { RENAME_PREFIX, DROP, RESHAPE, EXTRA, LM_HEAD_SAME, LM_HEAD_OTHER };
static void rewrite(const char *m, int how, const char *target) {
    char path[160], err[512];
    snprintf(path, sizeof path, "%s/model.safetensors", m);
    SafeTensors st;
    ck_assert_msg(st_open(&st, path, err, sizeof err) == 0, "%s", err);
    size_t n = st.n;
    StWrite *w = calloc(n + 8, sizeof *w);
    float **data = calloc(n + 8, sizeof *data);
    char (*names)[64] = calloc(n + 8, sizeof *names);
    ck_assert(w && data && names);
    size_t k = 0;
    float *mask = calloc(16 * 16, sizeof *mask), *wte = NULL;
    for (size_t i = 0; i < n; i++) {
        const StTensor *t = &st.t[i];
        data[k] = malloc(t->numel * sizeof(float) + 4);
        ck_assert_int_eq(st_read_f32(&st, t, data[k], err, sizeof err), 0);
        if (strcmp(t->name, "wte.weight") == 0) wte = data[k];
        snprintf(names[k], sizeof names[k], "%s%s", how == RENAME_PREFIX ? "transformer." : "", t->name);
        w[k] = (StWrite){names[k], t->ndim, {t->shape[0], t->shape[1]}, data[k]};
        if (strcmp(t->name, target) == 0) {
            if (how == DROP) {
                free(data[k]);
                data[k] = NULL;
                continue;
            }
            if (how == RESHAPE) w[k].shape[0] += 1, data[k] = realloc(data[k], (t->numel + t->shape[1] + 4) * 4);
            w[k].data = data[k];
        }
        k++;
    }
    if (how == RENAME_PREFIX) /* mask buffers, as older exports carry them */
        for (int l = 0; l < 2; l++) {
            snprintf(names[k], sizeof names[k], "transformer.h.%d.attn.%s", l, l ? "masked_bias" : "bias");
            w[k] = (StWrite){names[k], 4, {1, 1, 16, 16}, mask};
            k++;
        }
    if (how == EXTRA) w[k++] = (StWrite){"h.7.mlp.c_fc.bias", 1, {32}, mask};
    if (how == LM_HEAD_SAME || how == LM_HEAD_OTHER) {
        if (how == LM_HEAD_OTHER) wte[3] += 1.0f;
        w[k++] = (StWrite){"lm_head.weight", 2, {256, 8}, wte};
    }
    if (how == LM_HEAD_OTHER) {
        /* keep wte itself as exported: lm_head gets the changed copy */
        data[n] = malloc(256 * 8 * sizeof(float));
        memcpy(data[n], wte, 256 * 8 * sizeof(float));
        wte[3] -= 1.0f;
        w[k - 1].data = data[n];
    }
    st_close(&st);
    ck_assert_msg(st_write(path, w, k, err, sizeof err) == 0, "%s", err);
    for (size_t i = 0; i <= n; i++) free(data[i]);
    free(data), free(w), free(names), free(mask);
}

/* run --model m must exit 2 with one line on stderr containing want (and nothing written) */
static void expect_cli_bad(const char *dir, const char *m, const char *want) {
    char ep[160], out[160];
    snprintf(ep, sizeof ep, "%s/err.txt", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    const char *rest[] = {"--steps", "1", "--quiet", "--out", out, NULL};
    int rc = kv("run", m, rest, ep);
    size_t len;
    char *msg = read_file(ep, &len);
    ck_assert_ptr_nonnull(msg);
    ck_assert_msg(rc == 2, "exit %d, stderr: %s", rc, msg);
    ck_assert_msg(strncmp(msg, "kvscope: ", 9) == 0 && strstr(msg, want), "stderr \"%s\" lacks \"%s\"", msg, want);
    ck_assert_msg(strchr(msg, '\n') == msg + len - 1, "not one line: %s", msg);
    ck_assert_int_eq(access(out, F_OK), -1);
    free(msg);
}

START_TEST(test_folder_variants) {
    char dir[64], m[128], a[128], b[128], fa[160], fb[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    export_tiny(dir, m, sizeof m);
    snprintf(a, sizeof a, "%s/a", dir);
    const char *ra[] = {"--steps", "2", "--record", "logits", "--quiet", "--out", a, NULL};
    ck_assert_int_eq(kv("run", NULL, ra, NULL), 0);
    snprintf(fa, sizeof fa, "%s/logits.csv", a);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(fb, sizeof fb, "%s/logits.csv", b);
    const char *rb[] = {"--steps", "2", "--record", "logits", "--quiet", "--out", b, NULL};
    /* "transformer." names plus mask buffers, then a tied lm_head: same logits */
    rewrite(m, RENAME_PREFIX, "");
    ck_assert_int_eq(kv("run", m, rb, NULL), 0);
    ck_assert(files_equal(fa, fb));
    remove_tree(m);
    export_tiny(dir, m, sizeof m);
    rewrite(m, LM_HEAD_SAME, "");
    ck_assert_int_eq(kv("run", m, rb, NULL), 0);
    ck_assert(files_equal(fa, fb));
    remove_tree(m);
    export_tiny(dir, m, sizeof m);
    rewrite(m, LM_HEAD_OTHER, "");
    expect_cli_bad(dir, m, "\"lm_head.weight\": differs from wte.weight");
    remove_tree(m);
    remove_tree(dir);
}
END_TEST

START_TEST(test_folder_rejections) {
    char dir[64], m[128], path[192];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    export_tiny(dir, m, sizeof m);
    snprintf(path, sizeof path, "%s/model.safetensors", m);
    size_t size;
    char *orig = read_file(path, &size);
    ck_assert_ptr_nonnull(orig);

    rewrite(m, DROP, "h.1.attn.c_proj.weight");
    expect_cli_bad(dir, m, "model.safetensors: tensor \"h.1.attn.c_proj.weight\": missing (expected shape [8,8])");
    FILE *f = fopen(path, "wb");
    ck_assert(f && fwrite(orig, 1, size, f) == size && fclose(f) == 0);
    rewrite(m, RESHAPE, "h.0.mlp.c_fc.weight");
    expect_cli_bad(dir, m, "tensor \"h.0.mlp.c_fc.weight\": shape [9,32], expected [8,32]");
    f = fopen(path, "wb");
    ck_assert(f && fwrite(orig, 1, size, f) == size && fclose(f) == 0);
    rewrite(m, EXTRA, "");
    expect_cli_bad(dir, m, "tensor \"h.7.mlp.c_fc.bias\": not a GPT-2 weight");

    /* truncated: the header promises more data than there is */
    f = fopen(path, "wb");
    ck_assert(f && fwrite(orig, 1, size - 100, f) == size - 100 && fclose(f) == 0);
    expect_cli_bad(dir, m, "past the end of the data");
    f = fopen(path, "wb");
    ck_assert(f && fwrite(orig, 1, 5, f) == 5 && fclose(f) == 0);
    expect_cli_bad(dir, m, "too short");
    /* a huge header length */
    unsigned char huge[8] = {0, 0, 0, 0, 0, 1, 0, 0};
    f = fopen(path, "wb");
    ck_assert(f && fwrite(huge, 1, 8, f) == 8 && fwrite(orig + 8, 1, size - 8, f) == size - 8 && fclose(f) == 0);
    expect_cli_bad(dir, m, "over the limit");
    /* no weights at all */
    remove(path);
    expect_cli_bad(dir, m, "model.safetensors: cannot open");

    /* config.json problems */
    snprintf(path, sizeof path, "%s/config.json", m);
    const char *configs[][2] = {
        {"{\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 8, \"n_positions\": 16", "invalid JSON"},
        {"{\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 8, \"vocab_size\": 256}", "missing \"n_positions\""},
        {"{\"n_layer\": 2, \"n_head\": 3, \"n_embd\": 8, \"n_positions\": 16, \"vocab_size\": 256}",
         "divisible"},
        {"{\"n_layer\": 0, \"n_head\": 2, \"n_embd\": 8, \"n_positions\": 16, \"vocab_size\": 256}",
         "\"n_layer\" must be"},
        {"{\"n_layer\": 2, \"n_head\": 2, \"n_embd\": 8, \"n_positions\": 16, \"vocab_size\": 256,"
         " \"activation_function\": \"relu\"}", "\"activation_function\" is not supported"},
        {"{\"n_layer\": 2, \"n_layer\": 2, \"n_head\": 2, \"n_embd\": 8, \"n_positions\": 16, \"vocab_size\": 256}",
         "duplicate"},
        {"\"n\\\n", "invalid JSON"}, /* jansson echoes the newline: still one line */
    };
    for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
        f = fopen(path, "w");
        ck_assert(f && fputs(configs[i][0], f) >= 0 && fclose(f) == 0);
        expect_cli_bad(dir, m, configs[i][1]);
    }
    /* shape options make no sense with --model */
    char out[160];
    snprintf(out, sizeof out, "%s/out", dir);
    const char *args[] = {"run", "--model", m, "--layers", "3", "--out", out, NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 2);
    ck_assert_int_eq(access(out, F_OK), -1);
    free(orig);
    remove_tree(dir);
}
END_TEST

/* Set n floats of tensor name, from element index on, to v, in place in the file. */
static void poke(const char *m, const char *name, size_t index, size_t n, float v) {
    char path[160], err[512];
    snprintf(path, sizeof path, "%s/model.safetensors", m);
    SafeTensors st;
    ck_assert_msg(st_open(&st, path, err, sizeof err) == 0, "%s", err);
    const StTensor *t = st_find(&st, name);
    ck_assert_ptr_nonnull(t);
    ck_assert(t->dtype == ST_F32 && index + n <= t->numel);
    long off = (long)((const unsigned char *)st.data - (const unsigned char *)st.map + t->begin + 4 * index);
    st_close(&st);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < n; i++) {
        unsigned char b[4];
        uint32_t u;
        memcpy(&u, &v, 4);
        for (int k = 0; k < 4; k++) b[k] = (unsigned char)(u >> (8 * k));
        ck_assert_int_eq(fseek(f, off + 4 * (long)i, SEEK_SET), 0);
        ck_assert_int_eq(fwrite(b, 1, 4, f), 4);
    }
    ck_assert_int_eq(fclose(f), 0);
}

/* A NaN or an infinity in the weights is refused at load, with the tensor and the
 * first bad element; the untouched file loads. */
START_TEST(test_nonfinite_weights) {
    char dir[64], m[128];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    static const struct { const char *name; size_t index; float v; const char *want; } cases[] = {
        {"h.1.mlp.c_fc.bias", 5, NAN, "tensor \"h.1.mlp.c_fc.bias\": non-finite value nan at index 5"},
        {"h.0.attn.c_attn.weight", 30, INFINITY,
         "tensor \"h.0.attn.c_attn.weight\": non-finite value inf at index 30 ([1, 6])"},
        {"wte.weight", 8 * 256 - 1, -INFINITY, "\"wte.weight\": non-finite value -inf at index 2047 ([255, 7])"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        export_tiny(dir, m, sizeof m);
        poke(m, cases[i].name, cases[i].index, 1, cases[i].v);
        expect_cli_bad(dir, m, cases[i].want);
        remove_tree(m);
    }
    remove_tree(dir);
}
END_TEST

/* Finite weights whose numbers overflow float32 give non-finite logits: run stops with
 * a line saying so, and verify says "non-finite logits" instead of blaming the cache. */
START_TEST(test_nonfinite_logits) {
    char dir[64], m[128], ep[160], op[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    export_tiny(dir, m, sizeof m);
    poke(m, "ln_f.weight", 0, 8, 3e38f); /* the normalized rows (about ±1) times 3e38 */
    expect_cli_bad(dir, m, "non-finite logits at the prefill");
    snprintf(ep, sizeof ep, "%s/err.txt", dir);
    snprintf(op, sizeof op, "%s/out.txt", dir);
    const char *args[] = {"verify", "--model", m, "--steps", "2", NULL};
    ck_assert_int_eq(run_kvscope(args, op, ep), 2);
    char *e = read_file(ep, NULL), *o = read_file(op, NULL);
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_nonnull(o);
    ck_assert_msg(strstr(e, "kvscope: non-finite logits at the prefill (cached run)") &&
                      strchr(e, '\n') == e + strlen(e) - 1, "%s", e);
    ck_assert_msg(!strstr(o, "MISMATCH"), "%s", o);
    free(e);
    free(o);
    remove_tree(dir);
}
END_TEST

Suite *make_safetensors_suite(void) {
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("reader");
    tcase_add_test(tc, test_corrupt_headers);
    tcase_add_test(tc, test_valid_headers);
    tcase_add_test(tc, test_f16_bf16);
    tcase_add_test(tc, test_write_read);
    suite_add_tcase(s, tc);
    tc = tcase_create("folders_cli");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_nonfinite_weights);
    tcase_add_test(tc, test_export_load_identical);
    tcase_add_test(tc, test_folder_variants);
    tcase_add_test(tc, test_folder_rejections);
    tcase_add_test(tc, test_nonfinite_logits);
    suite_add_tcase(s, tc);
    return s;
}
