/* safetensors.c — a validating reader (memory-mapped) and an F32 writer.
 * JSON: jansson, because Debian ships it, it validates UTF-8 while it lexes, it
 * rejects duplicate object keys on request, and it bounds nesting depth. */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "halfprec.h"
#include "infile.h"
#include "outdir.h"

static const struct {
    const char *name;
    size_t size;
} DTYPES[] = {
    [ST_BOOL] = {"BOOL", 1}, [ST_U8] = {"U8", 1},   [ST_I8] = {"I8", 1},
    [ST_F8_E5M2] = {"F8_E5M2", 1}, [ST_F8_E4M3] = {"F8_E4M3", 1},
    [ST_I16] = {"I16", 2},   [ST_U16] = {"U16", 2}, [ST_F16] = {"F16", 2},
    [ST_BF16] = {"BF16", 2}, [ST_I32] = {"I32", 4}, [ST_U32] = {"U32", 4},
    [ST_F32] = {"F32", 4},   [ST_F64] = {"F64", 8}, [ST_I64] = {"I64", 8},
    [ST_U64] = {"U64", 8},
};
#define NDTYPES (sizeof DTYPES / sizeof DTYPES[0])

const char *st_dtype_name(StDtype d) { return DTYPES[d].name; }
size_t st_dtype_size(StDtype d) { return DTYPES[d].size; }

/* A tensor name from an untrusted header, made safe for a one-line message. */
static const char *safe_name(const char *s, char *buf, size_t size) {
    size_t k = 0;
    for (; *s && k + 4 < size; s++) buf[k++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
    if (*s) buf[k++] = '.', buf[k++] = '.', buf[k++] = '.';
    buf[k] = '\0';
    return buf;
}

/* err = "<path>: tensor \"<name>\": <fmt...>" (or "<path>: <fmt...>" without a name). */
static int fail(char *err, size_t errsize, const char *path, const char *name, const char *fmt, ...) {
    char nb[96], msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (name) snprintf(err, errsize, "%s: tensor \"%s\": %s", path, safe_name(name, nb, sizeof nb), msg);
    else snprintf(err, errsize, "%s: %s", path, msg);
    return ST_BAD;
}

static int cmp_offset(const void *a, const void *b) {
    const StTensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A JSON integer ≥ 0 into *out; 0 or -1. */
static int json_size(const json_t *v, size_t *out) {
    if (!json_is_integer(v)) return -1;
    json_int_t x = json_integer_value(v);
    if (x < 0 || (unsigned long long)x > SIZE_MAX) return -1;
    *out = (size_t)x;
    return 0;
}

/* Check one entry of the header and fill t (t->name is set by the caller). */
static int parse_entry(StTensor *t, json_t *v, size_t data_size, const char *path, char *err,
                       size_t errsize) {
    const char *nm = t->name;
    if (!json_is_object(v)) return fail(err, errsize, path, nm, "entry is not a JSON object");
    json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
           *off = json_object_get(v, "data_offsets");
    if (!dt || !sh || !off)
        return fail(err, errsize, path, nm, "missing \"%s\"", !dt ? "dtype" : !sh ? "shape" : "data_offsets");
    if (!json_is_string(dt)) return fail(err, errsize, path, nm, "dtype is not a string");
    size_t d = 0;
    while (d < NDTYPES && strcmp(DTYPES[d].name, json_string_value(dt)) != 0) d++;
    if (d == NDTYPES) {
        char db[40];
        return fail(err, errsize, path, nm, "unknown dtype \"%s\"", safe_name(json_string_value(dt), db, sizeof db));
    }
    t->dtype = (StDtype)d;
    if (!json_is_array(sh)) return fail(err, errsize, path, nm, "shape is not a list");
    if (json_array_size(sh) > ST_MAX_DIMS)
        return fail(err, errsize, path, nm, "shape has %zu dimensions (at most %d)", json_array_size(sh), ST_MAX_DIMS);
    t->ndim = (int)json_array_size(sh);
    t->numel = 1;
    int overflow = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (json_size(json_array_get(sh, (size_t)i), &t->shape[i]))
            return fail(err, errsize, path, nm, "shape[%d] is not a whole number >= 0", i);
        if (t->shape[i] && t->numel > SIZE_MAX / t->shape[i]) overflow = 1;
        else t->numel *= t->shape[i];
    }
    size_t esz = DTYPES[d].size;
    if (overflow || t->numel > SIZE_MAX / esz)
        return fail(err, errsize, path, nm, "shape × dtype size overflows");
    if (!json_is_array(off) || json_array_size(off) != 2 ||
        json_size(json_array_get(off, 0), &t->begin) || json_size(json_array_get(off, 1), &t->end))
        return fail(err, errsize, path, nm, "data_offsets is not [begin, end] of whole numbers >= 0");
    if (t->end < t->begin)
        return fail(err, errsize, path, nm, "data_offsets [%zu, %zu] end before begin", t->begin, t->end);
    if (t->end > data_size)
        return fail(err, errsize, path, nm, "data_offsets [%zu, %zu] past the end of the data (%zu bytes)",
                    t->begin, t->end, data_size);
    if (t->numel * esz != t->end - t->begin) {
        char shp[160];
        size_t k = 0;
        shp[0] = '\0';
        for (int i = 0; i < t->ndim && k < sizeof shp - 24; i++)
            k += (size_t)snprintf(shp + k, sizeof shp - k, "%s%zu", i ? "," : "", t->shape[i]);
        return fail(err, errsize, path, nm, "shape [%s] × %s needs %zu bytes but data_offsets [%zu, %zu] span %zu",
                    shp, DTYPES[d].name, t->numel * esz, t->begin, t->end, t->end - t->begin);
    }
    return 0;
}

/* The 8-byte length and the JSON header after it, as the format says: a length within
 * the limit and the file, a JSON object without duplicate keys. 0 with *root, or the
 * error. */
static int read_header(const char *path, const unsigned char *buf, size_t size, json_t **root,
                       size_t *header, char *err, size_t errsize) {
    if (size < 8)
        return fail(err, errsize, path, NULL, "file is %zu bytes, too short for the 8-byte header length", size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | buf[i];
    if (n > ST_MAX_HEADER)
        return fail(err, errsize, path, NULL, "header length %llu is over the limit of %u bytes",
                    (unsigned long long)n, ST_MAX_HEADER);
    if (n > size - 8)
        return fail(err, errsize, path, NULL, "header length %llu runs past the end of the file (%zu bytes)",
                    (unsigned long long)n, size);
    if (n == 0 || buf[8] != '{') return fail(err, errsize, path, NULL, "header does not start with '{'");
    json_error_t je;
    *root = json_loadb((const char *)buf + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!*root) {
        char tb[200];
        return fail(err, errsize, path, NULL, "header is invalid JSON at byte %d: %s", je.position,
                    safe_name(je.text, tb, sizeof tb));
    }
    if (!json_is_object(*root)) {
        json_decref(*root);
        return fail(err, errsize, path, NULL, "header is not a JSON object");
    }
    *header = (size_t)n;
    return 0;
}

/* __metadata__, if there is one: an object of strings. 0, or the error. */
static int check_metadata(const json_t *v, const char *path, char *err, size_t errsize) {
    const char *mk;
    json_t *mv;
    if (!json_is_object(v)) return fail(err, errsize, path, NULL, "__metadata__ is not an object");
    json_object_foreach((json_t *)v, mk, mv)
        if (!json_is_string(mv))
            return fail(err, errsize, path, NULL, "__metadata__ values must be strings");
    return 0;
}

/* Sorted by offset, each tensor must start where the previous one ended, and the last
 * end where the data does. 0, or the error. */
static int check_contiguous(SafeTensors *st, const char *path, char *err, size_t errsize) {
    qsort(st->t, st->n, sizeof *st->t, cmp_offset);
    size_t expect = 0;
    for (size_t i = 0; i < st->n; i++) {
        const StTensor *t = &st->t[i];
        if (t->begin < expect)
            return fail(err, errsize, path, t->name, "data_offsets [%zu, %zu] overlap tensor \"%s\"",
                        t->begin, t->end, st->t[i - 1].name);
        if (t->begin > expect)
            return fail(err, errsize, path, t->name, "data_offsets [%zu, %zu] leave a gap: bytes %zu..%zu belong to no tensor",
                        t->begin, t->end, expect, t->begin);
        expect = t->end;
    }
    if (expect != st->data_size)
        return fail(err, errsize, path, NULL, "the tensors cover %zu bytes but the data section is %zu bytes",
                    expect, st->data_size);
    return 0;
}

int st_parse(SafeTensors *st, const char *path, const unsigned char *buf, size_t size, char *err,
             size_t errsize) {
    memset(st, 0, sizeof *st);
    st->path = path;
    json_t *root;
    size_t n;
    int rc = read_header(path, buf, size, &root, &n, err, errsize);
    if (rc) return rc;
    st->data = buf + 8 + n;
    st->data_size = size - 8 - n;
    size_t cap = json_object_size(root);
    if (!(st->t = calloc(cap ? cap : 1, sizeof *st->t))) {
        json_decref(root);
        return ST_NOMEM;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            if ((rc = check_metadata(v, path, err, errsize))) break;
            continue;
        }
        StTensor *t = &st->t[st->n];
        if (!(t->name = strdup(key))) {
            rc = ST_NOMEM;
            break;
        }
        st->n++;
        if ((rc = parse_entry(t, v, st->data_size, path, err, errsize))) break;
    }
    json_decref(root);
    if (rc == 0) rc = check_contiguous(st, path, err, errsize);
    if (rc) st_close(st);
    return rc;
}

int st_open(SafeTensors *st, const char *path, char *err, size_t errsize) {
    memset(st, 0, sizeof *st);
    size_t size; /* a FIFO or a device is refused before it can block (infile.h) */
    int fd = infile_open(path, &size, err, errsize);
    if (fd < 0) return ST_IO;
    void *map = NULL;
    if (size >= 8) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            snprintf(err, errsize, "%s: cannot map: %s", path, strerror(errno));
            close(fd);
            return ST_IO;
        }
    }
    close(fd); /* the mapping stays valid */
    static const unsigned char empty[1];
    int rc = st_parse(st, path, map ? map : empty, size, err, errsize);
    if (rc) {
        if (map) munmap(map, size);
        return rc;
    }
    st->map = map;
    st->map_size = size;
    return 0;
}

void st_close(SafeTensors *st) {
    if (st->t)
        for (size_t i = 0; i < st->n; i++) free(st->t[i].name);
    free(st->t);
    if (st->map) munmap(st->map, st->map_size);
    memset(st, 0, sizeof *st);
}

const StTensor *st_find(const SafeTensors *st, const char *name) {
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->t[i].name, name) == 0) return &st->t[i];
    return NULL;
}

/* ---- conversion -------------------------------------------------------- */

int st_read_f32(const SafeTensors *st, const StTensor *t, float *out, char *err, size_t errsize) {
    const unsigned char *p = st->data + t->begin;
    switch (t->dtype) {
    case ST_F32: {
        const uint32_t one = 1;
        if (*(const unsigned char *)&one == 1) { /* a little-endian host: the bytes as they are */
            memcpy(out, p, t->numel * sizeof *out);
            return 0;
        }
        for (size_t i = 0; i < t->numel; i++, p += 4) {
            uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            memcpy(&out[i], &u, sizeof u);
        }
        return 0;
    }
    case ST_F16:
        for (size_t i = 0; i < t->numel; i++, p += 2) out[i] = fp16_to_fp32((uint16_t)(p[0] | p[1] << 8));
        return 0;
    case ST_BF16:
        for (size_t i = 0; i < t->numel; i++, p += 2) out[i] = bf16_to_fp32((uint16_t)(p[0] | p[1] << 8));
        return 0;
    default:
        return fail(err, errsize, st->path, t->name, "dtype %s is not supported (F32, F16 or BF16)",
                    DTYPES[t->dtype].name);
    }
}

/* ---- writer ------------------------------------------------------------ */

int st_write(const char *path, const StWrite *t, size_t n, char *err, size_t errsize) {
    return st_write_typed(path, t, NULL, n, err, errsize);
}

int st_write_typed(const char *path, const StWrite *t, const StDtype *dtype, size_t n, char *err,
                   size_t errsize) {
    json_t *root = json_object(), *meta = json_object();
    int oom = !root || !meta;
    if (oom) json_decref(meta);
    else oom = json_object_set_new(meta, "format", json_string("pt")) |
               json_object_set_new(root, "__metadata__", meta);
    size_t off = 0;
    for (size_t i = 0; i < n && !oom; i++) {
        size_t numel = 1;
        json_t *e = json_object(), *sh = json_array();
        for (int d = 0; d < t[i].ndim; d++) {
            numel *= t[i].shape[d];
            if (sh && json_array_append_new(sh, json_integer((json_int_t)t[i].shape[d]))) oom = 1;
        }
        json_t *of = json_pack("[II]", (json_int_t)off, (json_int_t)(off + 4 * numel));
        off += 4 * numel;
        if (!e || !sh || !of || oom) {
            json_decref(e), json_decref(sh), json_decref(of);
            oom = 1;
            break;
        }
        /* the _new setters take the reference even when they fail */
        const char *dt = dtype && dtype[i] == ST_I32 ? "I32" : "F32";
        oom = json_object_set_new(e, "dtype", json_string(dt)) |
              json_object_set_new(e, "shape", sh) | json_object_set_new(e, "data_offsets", of) |
              json_object_set_new(root, t[i].name, e);
    }
    char *hdr = oom ? NULL : json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!hdr) return ST_NOMEM;
    size_t hl = strlen(hdr), pad = (8 - hl % 8) % 8;
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, errsize, "%s: cannot write: %s", path, strerror(errno));
        free(hdr);
        return ST_IO;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)(hl + pad) >> (8 * i));
    int bad = fwrite(len8, 1, 8, f) != 8 || fwrite(hdr, 1, hl, f) != hl;
    for (size_t i = 0; i < pad && !bad; i++) bad = fputc(' ', f) == EOF;
    free(hdr);
    unsigned char chunk[4096];
    for (size_t i = 0; i < n && !bad; i++) {
        size_t numel = 1;
        for (int d = 0; d < t[i].ndim; d++) numel *= t[i].shape[d];
        for (size_t j = 0; j < numel && !bad;) {
            size_t k = 0;
            for (; k < sizeof chunk && j < numel; k += 4, j++) {
                uint32_t u;
                memcpy(&u, (const unsigned char *)t[i].data + 4 * j, 4); /* F32 or I32 bytes */
                chunk[k] = (unsigned char)u, chunk[k + 1] = (unsigned char)(u >> 8);
                chunk[k + 2] = (unsigned char)(u >> 16), chunk[k + 3] = (unsigned char)(u >> 24);
            }
            bad = fwrite(chunk, 1, k, f) != k;
        }
    }
    int e = bad ? errno : 0; /* the failed fwrite's reason (a full disk: ENOSPC) */
    if (file_close(f) != 0 || bad) {
        snprintf(err, errsize, "%s: cannot write (%s)", path, write_error_text(e ? e : errno));
        return ST_IO;
    }
    return 0;
}
