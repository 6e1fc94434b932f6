/* bpe.c — GPT-2's byte-level BPE: loader, pre-tokenizer, merges, decode. */
#include "bpe.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "infile.h"

/* Merges live in an open-addressing table keyed by the pair of token ids. */
typedef struct {
    uint64_t key;  /* (a << 32) | b, or EMPTY */
    int rank;      /* line order in merges.txt: lower merges first */
    int result;    /* the id of the merged token */
} Merge;
#define EMPTY UINT64_MAX

struct Bpe {
    int V;
    unsigned char *bytes;  /* every token's bytes, back to back */
    size_t *off;           /* (V+1) token id's bytes are bytes[off[id] .. off[id+1]) */
    int byte_id[256];      /* the token of each single byte */
    Merge *merges;
    size_t cap;            /* power of two */
};

/* ---- byte ↔ unicode --------------------------------------------------------
 * encoder.py: the printable bytes ! .. ~, ¡ .. ¬, ® .. ÿ stand for themselves;
 * the other 68 bytes, in order, become U+0100, U+0101, ... */
static int printable_byte(int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t bpe_byte_to_unicode(unsigned char b) {
    if (printable_byte(b)) return b;
    uint32_t n = 0;
    for (int x = 0; x < b; x++) n += !printable_byte(x);
    return 256 + n;
}

/* code point → byte, or -1 */
static int unicode_to_byte(int32_t cp) {
    if (cp >= 0 && cp < 256) return printable_byte(cp) ? cp : -1;
    if (cp < 256 || cp >= 256 + 68) return -1;
    for (int b = 0, n = 0; b < 256; b++)
        if (!printable_byte(b) && n++ == cp - 256) return b;
    return -1;
}

/* ---- merge table ------------------------------------------------------------ */

static uint64_t hash_key(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static Merge *merge_slot(const Bpe *b, uint64_t key) {
    size_t i = hash_key(key) & (b->cap - 1);
    while (b->merges[i].key != EMPTY && b->merges[i].key != key) i = (i + 1) & (b->cap - 1);
    return &b->merges[i];
}

static const Merge *merge_find(const Bpe *b, int x, int y) {
    if (!b->cap) return NULL;
    const Merge *m = merge_slot(b, (uint64_t)(uint32_t)x << 32 | (uint32_t)y);
    return m->key == EMPTY ? NULL : m;
}

/* ---- loading -------------------------------------------------------------- */

void bpe_free(Bpe *b) {
    if (!b) return;
    free(b->bytes);
    free(b->off);
    free(b->merges);
    free(b);
}

int bpe_vocab_size(const Bpe *b) { return b->V; }

/* vocab.json → b->V, b->bytes, b->off. */
static int load_vocab(Bpe *b, json_t *vocab, const char *path, char *err, size_t errsize) {
    size_t V = json_object_size(vocab), total = 0;
    if (V == 0 || V > 1000000) {
        snprintf(err, errsize, "%s: %zu tokens (expected 1..1000000)", path, V);
        return BPE_BAD;
    }
    const char *key;
    json_t *v;
    json_object_foreach(vocab, key, v) total += strlen(key);
    b->V = (int)V;
    b->bytes = malloc(total ? total : 1);
    b->off = calloc(V + 1, sizeof *b->off);
    const char **name = calloc(V, sizeof *name);
    int rc = 0;
    if (!b->bytes || !b->off || !name) {
        rc = BPE_NOMEM;
        goto done;
    }
    json_object_foreach(vocab, key, v) {
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || id >= (json_int_t)V) {
            snprintf(err, errsize, "%s: token \"%.60s\": id must be a whole number in 0..%zu", path, key, V - 1);
            rc = BPE_BAD;
            goto done;
        }
        if (name[id]) {
            snprintf(err, errsize, "%s: token \"%.60s\": id %lld is also \"%.60s\"", path, key, (long long)id, name[id]);
            rc = BPE_BAD;
            goto done;
        }
        name[id] = key;
    }
    /* ids are 0..V-1, each once (V keys, no repeats): lay the bytes out by id */
    size_t k = 0;
    for (size_t id = 0; id < V; id++) {
        b->off[id] = k;
        const utf8proc_uint8_t *s = (const utf8proc_uint8_t *)name[id];
        utf8proc_ssize_t rest = (utf8proc_ssize_t)strlen(name[id]);
        while (rest > 0) {
            utf8proc_int32_t cp;
            utf8proc_ssize_t used = utf8proc_iterate(s, rest, &cp);
            int byte = used > 0 ? unicode_to_byte(cp) : -1;
            if (byte < 0) {
                snprintf(err, errsize, "%s: token \"%.60s\": U+%04X is not one of GPT-2's byte symbols",
                         path, name[id], used > 0 ? (unsigned)cp : 0xFFFDu);
                rc = BPE_BAD;
                goto done;
            }
            b->bytes[k++] = (unsigned char)byte;
            s += used;
            rest -= used;
        }
    }
    b->off[V] = k;
done:
    free(name);
    return rc;
}

/* The id of vocab key s, or -1. */
static int vocab_id(json_t *vocab, const char *s) {
    json_t *v = json_object_get(vocab, s);
    return v ? (int)json_integer_value(v) : -1;
}

/* merges.txt's text (len bytes; changed in place: lines are cut at their '\n'). */
static int load_merges(Bpe *b, json_t *vocab, char *text, size_t len, const char *path, char *err,
                       size_t errsize) {
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    b->cap = 16;
    while (b->cap < 2 * lines) b->cap *= 2;
    b->merges = malloc(b->cap * sizeof *b->merges);
    char *joined = malloc(len + 1);
    int rc = 0;
    if (!b->merges || !joined) {
        rc = BPE_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < b->cap; i++) b->merges[i].key = EMPTY;
    int rank = 0, lineno = 0;
    for (char *line = text, *next; line < text + len; line = next) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        next = nl ? nl + 1 : text + len;
        if (nl) *nl = '\0';
        else text[len] = '\0';
        lineno++;
        size_t ll = strlen(line);
        if (ll != (size_t)((nl ? nl : text + len) - line)) {
            snprintf(err, errsize, "%s: line %d: contains a NUL byte", path, lineno);
            rc = BPE_BAD;
            goto done;
        }
        if (ll && line[ll - 1] == '\r') line[--ll] = '\0';
        if (ll == 0 || (lineno == 1 && strncmp(line, "#version", 8) == 0)) continue;
        char *sp = strchr(line, ' ');
        if (!sp || sp == line || sp[1] == '\0' || strchr(sp + 1, ' ')) {
            snprintf(err, errsize, "%s: line %d: expected two tokens separated by one space", path, lineno);
            rc = BPE_BAD;
            goto done;
        }
        *sp = '\0';
        const char *x = line, *y = sp + 1;
        snprintf(joined, len + 1, "%s%s", x, y);
        int ix = vocab_id(vocab, x), iy = vocab_id(vocab, y), ir = vocab_id(vocab, joined);
        if (ix < 0 || iy < 0 || ir < 0) {
            snprintf(err, errsize, "%s: line %d: \"%.60s\" is not in vocab.json", path, lineno,
                     ix < 0 ? x : iy < 0 ? y : joined);
            rc = BPE_BAD;
            goto done;
        }
        Merge *m = merge_slot(b, (uint64_t)(uint32_t)ix << 32 | (uint32_t)iy);
        if (m->key != EMPTY) {
            snprintf(err, errsize, "%s: line %d: merge \"%.60s %.60s\" listed twice", path, lineno, x, y);
            rc = BPE_BAD;
            goto done;
        }
        m->key = (uint64_t)(uint32_t)ix << 32 | (uint32_t)iy;
        m->rank = rank++;
        m->result = ir;
    }
done:
    free(joined);
    return rc;
}

int bpe_load(Bpe **out, const char *vocab_path, const char *merges_path, char *err, size_t errsize) {
    char *vt = NULL, *mt = NULL;
    size_t vl, ml;
    *out = NULL;
    int rc = infile_read(vocab_path, BPE_FILE_MAX, &vt, &vl, err, errsize);
    if (rc == 0) rc = infile_read(merges_path, BPE_FILE_MAX, &mt, &ml, err, errsize);
    if (rc == 0) rc = bpe_parse(out, vt, vl, vocab_path, mt, ml, merges_path, err, errsize);
    else rc = rc == INFILE_NOMEM ? BPE_NOMEM : BPE_BAD;
    free(vt);
    free(mt);
    return rc;
}

int bpe_parse(Bpe **out, const char *vocab_text, size_t vocab_len, const char *vocab_path,
              const char *merges_text, size_t merges_len, const char *merges_path, char *err,
              size_t errsize) {
    *out = NULL;
    Bpe *b = calloc(1, sizeof *b);
    char *merges = malloc(merges_len + 1);
    if (!b || !merges) {
        free(b);
        free(merges);
        return BPE_NOMEM;
    }
    memcpy(merges, merges_text, merges_len);
    merges[merges_len] = '\0';
    json_error_t je;
    json_t *vocab = json_loadb(vocab_text, vocab_len, JSON_REJECT_DUPLICATES, &je);
    int rc = 0;
    if (!vocab) {
        snprintf(err, errsize, "%s: invalid JSON at line %d: %s", vocab_path, je.line, je.text);
        rc = BPE_BAD;
    } else if (!json_is_object(vocab)) {
        snprintf(err, errsize, "%s: not a JSON object", vocab_path);
        rc = BPE_BAD;
    }
    if (!rc) rc = load_vocab(b, vocab, vocab_path, err, errsize);
    for (int x = 0; x < 256 && !rc; x++) {
        char sym[8];
        utf8proc_ssize_t n = utf8proc_encode_char((utf8proc_int32_t)bpe_byte_to_unicode((unsigned char)x),
                                                  (utf8proc_uint8_t *)sym);
        sym[n] = '\0';
        if ((b->byte_id[x] = vocab_id(vocab, sym)) < 0) {
            snprintf(err, errsize, "%s: no token for byte 0x%02X (\"%s\")", vocab_path, x, sym);
            rc = BPE_BAD;
        }
    }
    if (!rc) rc = load_merges(b, vocab, merges, merges_len, merges_path, err, errsize);
    json_decref(vocab);
    free(merges);
    if (rc == BPE_BAD) message_one_line(err); /* a token or a JSON error may hold a newline */
    if (rc) bpe_free(b);
    else *out = b;
    return rc;
}

/* ---- pre-tokenizer ---------------------------------------------------------- */

enum { CL_LETTER, CL_NUMBER, CL_SPACE, CL_OTHER };

/* Unicode White_Space (PropList.txt), what \s means for GPT-2's regex. */
static int is_white_space(int32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

static int char_class(int32_t c) {
    if (c < 0) return CL_OTHER; /* a byte that is not valid UTF-8 */
    if (is_white_space(c)) return CL_SPACE;
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
        return CL_LETTER;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
        return CL_NUMBER;
    default:
        return CL_OTHER;
    }
}

int bpe_pretokenize(const char *text, size_t len, size_t **ends, int *n) {
    /* decode once: code point, class and end offset of every character */
    int32_t *cp = malloc((len ? len : 1) * sizeof *cp);
    unsigned char *cl = malloc(len ? len : 1);
    size_t *end = malloc((len ? len : 1) * sizeof *end);
    *ends = malloc((len ? len : 1) * sizeof **ends);
    if (!cp || !cl || !end || !*ends) {
        free(cp), free(cl), free(end), free(*ends);
        *ends = NULL;
        return BPE_NOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < len; m++) {
        utf8proc_int32_t c;
        utf8proc_ssize_t used = utf8proc_iterate((const utf8proc_uint8_t *)text + i,
                                                 (utf8proc_ssize_t)(len - i), &c);
        if (used <= 0) c = -1, used = 1;
        cp[m] = c;
        cl[m] = (unsigned char)char_class(c);
        i += (size_t)used;
        end[m] = i;
    }
    int k = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i;
        int cls1 = i + 1 < m ? cl[i + 1] : -1;
        /* 's|'t|'re|'ve|'m|'ll|'d */
        if (cp[i] == '\'' && i + 1 < m) {
            int32_t a = cp[i + 1], b = i + 2 < m ? cp[i + 2] : 0;
            if (a == 's' || a == 't' || a == 'm' || a == 'd') j = i + 2;
            else if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) j = i + 3;
        }
        if (j == i) {
            /*  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+ : one class, after an optional space */
            int want = -1;
            size_t s = i;
            if (cl[i] != CL_SPACE) want = cl[i];
            else if (cp[i] == ' ' && cls1 >= 0 && cls1 != CL_SPACE) want = cls1, s = i + 1;
            if (want >= 0) {
                j = s;
                while (j < m && cl[j] == want) j++;
            } else {
                /* \s+(?!\S) | \s+ : a whitespace run, less its last character when
                 * a non-space follows (that character goes with the next piece) */
                while (j < m && cl[j] == CL_SPACE) j++;
                if (j < m && j - i > 1) j--;
            }
        }
        (*ends)[k++] = end[j - 1];
        i = j;
    }
    free(cp), free(cl), free(end);
    *n = k;
    return 0;
}

/* ---- encode / decode ---------------------------------------------------- */

/* Merge the symbols of one piece in place, as encoder.py's bpe(): repeatedly take
 * the pair of lowest rank and merge every occurrence of it, left to right. */
static int merge_piece(const Bpe *b, int *sym, int n) {
    for (;;) {
        const Merge *best = NULL;
        for (int i = 0; i + 1 < n; i++) {
            const Merge *m = merge_find(b, sym[i], sym[i + 1]);
            if (m && (!best || m->rank < best->rank)) best = m;
        }
        if (!best) return n;
        int x = (int)(best->key >> 32), y = (int)(uint32_t)best->key, k = 0;
        for (int i = 0; i < n;) {
            if (i + 1 < n && sym[i] == x && sym[i + 1] == y) {
                sym[k++] = best->result;
                i += 2;
            } else {
                sym[k++] = sym[i++];
            }
        }
        n = k;
    }
}

int bpe_encode(const Bpe *b, const char *text, size_t len, int **ids, int *n) {
    size_t *ends;
    int np;
    *ids = NULL;
    if (bpe_pretokenize(text, len, &ends, &np)) return BPE_NOMEM;
    int *out = malloc((len ? len : 1) * sizeof *out); /* never more tokens than bytes */
    if (!out) {
        free(ends);
        return BPE_NOMEM;
    }
    int k = 0;
    size_t start = 0;
    for (int p = 0; p < np; p++) {
        int *sym = out + k, ns = 0;
        for (size_t i = start; i < ends[p]; i++) sym[ns++] = b->byte_id[(unsigned char)text[i]];
        k += merge_piece(b, sym, ns);
        start = ends[p];
    }
    free(ends);
    *ids = out;
    *n = k;
    return 0;
}

const unsigned char *bpe_token_bytes(const Bpe *b, int id, size_t *len) {
    if (id < 0 || id >= b->V) return NULL;
    *len = b->off[id + 1] - b->off[id];
    return b->bytes + b->off[id];
}

int bpe_decode(const Bpe *b, const int *ids, int n, char **text, size_t *len) {
    size_t total = 0, l;
    *text = NULL;
    for (int i = 0; i < n; i++) {
        if (!bpe_token_bytes(b, ids[i], &l)) return BPE_BAD;
        total += l;
    }
    char *s = malloc(total + 1);
    if (!s) return BPE_NOMEM;
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        const unsigned char *p = bpe_token_bytes(b, ids[i], &l);
        memcpy(s + k, p, l);
        k += l;
    }
    s[k] = '\0';
    *text = s;
    *len = k;
    return 0;
}
