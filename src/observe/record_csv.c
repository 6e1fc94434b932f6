/* record_csv.c — the CSV observer. */
#include "record_csv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "numfmt.h"
#include "outdir.h"

static const struct { const char *name; unsigned bit; } kinds[] = {
    {"shapes", REC_SHAPES}, {"attention", REC_ATTENTION}, {"kv", REC_KV},
    {"flops", REC_FLOPS},   {"tokens", REC_TOKENS},       {"logits", REC_LOGITS},
    {"timing", REC_TIMING},
};

int record_parse(const char *spec, unsigned *what) {
    if (strcmp(spec, "all") == 0) {
        *what = REC_DEFAULT | REC_LOGITS;
        return 0;
    }
    if (strcmp(spec, "none") == 0) {
        *what = 0;
        return 0;
    }
    unsigned w = 0;
    const char *p = spec;
    while (*p) {
        size_t n = strcspn(p, ",");
        size_t i;
        for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            if (strlen(kinds[i].name) == n && strncmp(p, kinds[i].name, n) == 0) break;
        if (i == sizeof kinds / sizeof kinds[0]) return -1;
        w |= kinds[i].bit;
        p += n;
        if (*p == ',') p++;
    }
    *what = w;
    return 0;
}

void csv_write_field(FILE *f, const char *s) {
    if (strpbrk(s, ",\"\n\r") == NULL) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Rows are built in a chunk of text and written a chunk at a time, their numbers by
 * numfmt.h: the same characters as fprintf's "%d" and "%.9g", several times faster
 * (attention.csv runs to millions of rows). A failed fwrite sets the stream's error,
 * which the event that wrote it reports (csv_recorder_error), and csv_recorder_close. */
enum { CHUNK = 1 << 16, ROW_MAX = 160 }; /* ROW_MAX: the longest row below */
typedef struct {
    char *text; /* CHUNK bytes: the recorder's buffer */
    size_t n;
    FILE *f;
} Chunk;

static FILE *open_csv(const char *dir, const char *name, const char *header) {
    char path[4200];
    if (path_join(path, sizeof path, dir, name) != 0) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    FILE *f = fopen(path, "w");
    if (f) fputs(header, f);
    return f;
}

int csv_recorder_open(CsvRecorder *r, const char *dir, unsigned what,
                      const Selection *layers, const Selection *heads) {
    memset(r, 0, sizeof *r);
    r->what = what;
    r->layers = *layers;
    r->heads = *heads;
    struct { unsigned bit; FILE **f; const char *name, *header; } files[] = {
        {REC_SHAPES, &r->shapes, "shapes.csv", "phase,step,layer,name,shape\n"},
        {REC_ATTENTION, &r->attention, "attention.csv",
         "phase,step,layer,head,query_pos,key_pos,score,weight,key_slot\n"},
        {REC_KV, &r->kv, "kv_memory.csv", "phase,step,tokens,kv_bytes,kv_reserved_bytes,kv_bytes_per_token\n"},
        {REC_FLOPS, &r->flops, "flops.csv",
         "phase,step,tokens_new,tokens_total,flops_layers,flops_lm_head,flops_elementwise,"
         "flops_qkv,flops_attn,flops_attn_proj,flops_mlp\n"},
        {REC_TOKENS, &r->tokens, "tokens.csv", "step,pos,token_id,text\n"},
        {REC_LOGITS, &r->logits, "logits.csv", "phase,step,token_id,logit\n"},
        {REC_TIMING, &r->timing, "timing.csv", "phase,step,seconds,rss_bytes\n"},
    };
    if ((what & (REC_ATTENTION | REC_LOGITS)) && !(r->chunk = malloc(CHUNK))) return -1;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (!(what & files[i].bit)) continue;
        *files[i].f = open_csv(dir, files[i].name, files[i].header);
        if (!*files[i].f) {
            int e = errno;
            csv_recorder_close(r);
            errno = e;
            return -1;
        }
    }
    return 0;
}

static void shape_text(const HookEvent *ev, char *buf, size_t size) {
    int n = snprintf(buf, size, "1"); /* batch of one, as the articles print it */
    for (int d = 0; d < ev->ndim && n > 0 && (size_t)n < size; d++)
        n += snprintf(buf + n, size - (size_t)n, "x%d", ev->shape[d]);
}

static void chunk_flush(Chunk *c) {
    if (c->n) (void)fwrite(c->text, 1, c->n, c->f);
    c->n = 0;
}
static void put_str(Chunk *c, const char *s, size_t len) {
    memcpy(c->text + c->n, s, len);
    c->n += len;
}
static void put_int(Chunk *c, long long v, char end) {
    c->n += (size_t)numfmt_int(c->text + c->n, v);
    c->text[c->n++] = end;
}
static void put_float(Chunk *c, float v, char end) {
    c->n += (size_t)numfmt_float(c->text + c->n, v);
    c->text[c->n++] = end;
}
/* "phase,step,layer," (or "phase,step,") into buf, its length returned. */
static size_t row_prefix(char *buf, const char *ph, int step, int layer, int with_layer) {
    size_t n = strlen(ph);
    memcpy(buf, ph, n);
    buf[n++] = ',';
    n += (size_t)numfmt_int(buf + n, step);
    buf[n++] = ',';
    if (with_layer) {
        n += (size_t)numfmt_int(buf + n, layer);
        buf[n++] = ',';
    }
    return n;
}

/* attention.csv rows of one pattern event: causal entries of the selected heads. */
static void write_attention(CsvRecorder *r, const HookEvent *ev, const char *ph) {
    Chunk c = {r->chunk, 0, r->attention};
    const float *scores = r->scores;
    const Selection *heads = &r->heads;
    const int NH = ev->shape[0], n = ev->shape[1], Tt = ev->shape[2];
    char pre[64];
    size_t np = row_prefix(pre, ph, ev->step, ev->layer, 1);
    for (int h = 0; h < NH; h++) {
        if (!select_has(heads, h)) continue;
        for (int i = 0; i < n; i++) {
            /* query i sees cache slots 0 .. slot0 + i */
            const size_t row = ((size_t)h * n + i) * Tt;
            for (int t = 0; t <= ev->slot0 + i; t++) {
                if (c.n > CHUNK - ROW_MAX) chunk_flush(&c);
                put_str(&c, pre, np);
                put_int(&c, h, ',');
                put_int(&c, ev->pos0 + i, ',');
                put_int(&c, ev->slot_pos ? ev->slot_pos[t] : t, ',');
                put_float(&c, scores[row + t], ',');
                put_float(&c, ev->data[row + t], ',');
                put_int(&c, t, '\n');
            }
        }
    }
    chunk_flush(&c);
}

/* logits.csv rows: the V logits of the last position. */
static void write_logits(CsvRecorder *r, const HookEvent *ev, const char *ph) {
    Chunk c = {r->chunk, 0, r->logits};
    char pre[64];
    size_t np = row_prefix(pre, ph, ev->step, 0, 0);
    for (int v = 0; v < ev->shape[0]; v++) {
        if (c.n > CHUNK - ROW_MAX) chunk_flush(&c);
        put_str(&c, pre, np);
        put_int(&c, v, ',');
        put_float(&c, ev->data[v], '\n');
    }
    chunk_flush(&c);
}

int csv_recorder_error(CsvRecorder *r) {
    FILE *fs[] = {r->shapes, r->attention, r->kv, r->flops, r->tokens, r->logits, r->timing};
    for (size_t i = 0; !r->err && i < sizeof fs / sizeof fs[0]; i++)
        if (fs[i] && ferror(fs[i])) r->err = errno ? errno : EIO;
    return r->err;
}

static int on_event(const HookEvent *ev, void *user) {
    CsvRecorder *r = user;
    errno = 0;
    const char *ph = phase_name(ev->phase);
    if (r->shapes && ev->data) {
        char name[96], shape[96];
        shape_text(ev, shape, sizeof shape);
        fprintf(r->shapes, "%s,%d,%d,%s,%s\n", ph, ev->step, ev->layer,
                hook_name(ev->point, ev->layer, name, sizeof name), shape);
    }
    if (r->attention && select_has(&r->layers, ev->layer)) {
        const int NH = ev->shape[0], n = ev->shape[1], Tt = ev->shape[2];
        size_t sz = (size_t)NH * n * Tt;
        if (ev->point == HOOK_ATTN_SCORES) {
            if (sz > r->scores_cap) {
                float *p = realloc(r->scores, sz * sizeof *p);
                if (!p) return -1;
                r->scores = p;
                r->scores_cap = sz;
            }
            memcpy(r->scores, ev->data, sz * sizeof *r->scores);
        } else if (ev->point == HOOK_PATTERN && r->scores && sz <= r->scores_cap) {
            write_attention(r, ev, ph);
        }
    }
    if (r->logits && ev->point == HOOK_LOGITS) write_logits(r, ev, ph);
    if (ev->point == HOOK_STEP_END) {
        const StepStats *s = ev->stats;
        const FlopCount *f = &s->flops;
        if (r->kv)
            fprintf(r->kv, "%s,%d,%d,%zu,%zu,%zu\n", ph, ev->step, s->tokens_total, s->kv_bytes,
                    s->kv_reserved, s->kv_bytes_per_token);
        if (r->flops)
            fprintf(r->flops,
                    "%s,%d,%d,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                    ",%" PRIu64 ",%" PRIu64 "\n",
                    ph, ev->step, s->tokens_new, s->tokens_total, flops_layers(f), f->lm_head,
                    f->elementwise, f->qkv, f->attn, f->attn_proj, f->mlp);
    }
    return csv_recorder_error(r) ? -1 : 0;
}

int csv_recorder_attach(CsvRecorder *r, Hooks *h) {
    uint32_t mask = HOOK_BIT(HOOK_STEP_END);
    if (r->shapes) mask |= HOOK_ALL;
    if (r->attention) mask |= HOOK_BIT(HOOK_ATTN_SCORES) | HOOK_BIT(HOOK_PATTERN);
    if (r->logits) mask |= HOOK_BIT(HOOK_LOGITS);
    return hooks_subscribe(h, mask, on_event, r);
}

void csv_recorder_token(CsvRecorder *r, int step, int pos, int token_id, const char *text) {
    if (!r->tokens) return;
    errno = 0;
    fprintf(r->tokens, "%d,%d,%d,", step, pos, token_id);
    csv_write_field(r->tokens, text);
    fputc('\n', r->tokens);
    csv_recorder_error(r);
}

void csv_recorder_timing(CsvRecorder *r, Phase ph, int step, double seconds, size_t rss) {
    if (!r->timing) return;
    errno = 0;
    fprintf(r->timing, "%s,%d,%.9g,%zu\n", phase_name(ph), step, seconds, rss);
    csv_recorder_error(r);
}

int csv_recorder_close(CsvRecorder *r) {
    FILE **fs[] = {&r->shapes, &r->attention, &r->kv, &r->flops, &r->tokens, &r->logits, &r->timing};
    int rc = 0;
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
        if (!*fs[i]) continue;
        if (ferror(*fs[i])) rc = -1;
        if (fclose(*fs[i]) != 0) rc = -1;
        *fs[i] = NULL;
    }
    free(r->scores);
    r->scores = NULL;
    free(r->chunk);
    r->chunk = NULL;
    r->scores_cap = 0;
    return rc;
}
