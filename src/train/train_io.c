/* train_io.c — what training reads and writes: checkpoints, the output folder, samples,
 * and the gradients of one batch (train.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "generate.h"
#include "hf_model.h"
#include "infile.h"
#include "outdir.h"
#include "safetensors.h"
#include "train.h"

/* ---- checkpoints --------------------------------------------------------------------
 * Layout, host byte order (little-endian on x86-64):
 *   char magic[8]  "KVSCKPT" + version 3
 *   int32 L, NH, C, N, V, B;  uint64 seed;  int32 steps_done, log_rows;  uint64 params
 *   the run: int32 steps, warmup, bos, period_min, period_max, short_steps, short_ctx,
 *                  short_B;
 *            float lr, lr_final, weight_decay, clip, init_std, repeat_share, span_share,
 *                  short_repeat_share, short_span_share;
 *            uint64 corpus_size, corpus_hash;
 *            int32 copy_from, alpha_min, alpha_max, embed_min, embed_max;
 *            float alpha_share, embed_share
 *   float params[params], adam_m[params], adam_v[params]
 *   log_rows × { int32 step; float train_loss, val_loss, lr, grad_norm, tokens_per_s;
 *                double seconds; float induction, prev_token, sink }
 *   uint64 checksum of every byte before it (CkSum)
 * The size is checked against these counts before anything is read, the checksum after
 * the last byte. Version 2 had neither the checksum nor the copying curriculum's options
 * (--copy-from, --repeat-alphabet, --embed-share and their ranges) and version 1 no run
 * block: they are refused with their version named. */

enum { CKPT_VERSION = 3 };
static const char CKPT_MAGIC[8] = {'K', 'V', 'S', 'C', 'K', 'P', 'T', CKPT_VERSION};
enum { CKPT_RUN = 8 * 4 + 9 * 4 + 2 * 8 + 5 * 4 + 2 * 4,
       CKPT_HEAD = 8 + 6 * 4 + 8 + 2 * 4 + 8 + CKPT_RUN,
       CKPT_ROW = 4 + 5 * 4 + 8 + 3 * 4, CKPT_SUM = 8 };

typedef struct {
    int32_t L, NH, C, N, V, B;
    uint64_t seed;
    int32_t steps, rows;
    uint64_t params;
    int32_t total, warmup, bos, period_min, period_max, short_steps, short_ctx, short_B; /* the run */
    float lr, lr_final, weight_decay, clip, init_std, repeat_share, span_share, short_repeat_share,
        short_span_share;
    uint64_t corpus_size, corpus_hash;
    int32_t copy_from, alpha_min, alpha_max, embed_min, embed_max;
    float alpha_share, embed_share;
} CkptHead;

/* The checksum: the bytes as 8-byte words (the last one padded with zeros), each xored
 * in, multiplied by an odd constant and folded, then the byte count. Every step is a
 * bijection of the sum, so changing any one word always changes it. */
typedef struct {
    uint64_t h, n;          /* the sum so far, the bytes summed */
    unsigned char part[8];  /* an unfinished word: its first n % 8 bytes */
} CkSum;

static uint64_t sum_word(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
    return h ^ (h >> 29);
}

static void sum_add(CkSum *s, const void *p, size_t len) {
    const unsigned char *b = p;
    uint64_t w;
    while (len) {
        if (s->n % 8 == 0 && len >= 8) { /* whole words straight from the buffer */
            memcpy(&w, b, 8);
            s->h = sum_word(s->h, w);
            b += 8, len -= 8, s->n += 8;
            continue;
        }
        s->part[s->n++ % 8] = *b++, len--;
        if (s->n % 8 == 0) {
            memcpy(&w, s->part, 8);
            s->h = sum_word(s->h, w);
        }
    }
}

static uint64_t sum_end(const CkSum *s) {
    uint64_t h = s->h, w = 0;
    if (s->n % 8) {
        unsigned char last[8] = {0};
        memcpy(last, s->part, s->n % 8);
        memcpy(&w, last, 8);
        h = sum_word(h, w);
    }
    return sum_word(h, s->n);
}

/* A checkpoint being written or read, and the sum of its bytes so far. */
typedef struct {
    FILE *f;
    CkSum sum;
} CkIo;

static int put(CkIo *io, const void *p, size_t n) {
    sum_add(&io->sum, p, n);
    return fwrite(p, 1, n, io->f) == n ? 0 : -1;
}
static int get(CkIo *io, void *p, size_t n) {
    if (fread(p, 1, n, io->f) != n) return -1;
    sum_add(&io->sum, p, n);
    return 0;
}

/* The header after the magic, field by field (rw: put or get). */
static int head_io(CkIo *f, CkptHead *h, int (*rw)(CkIo *, void *, size_t)) {
    return rw(f, &h->L, 4) || rw(f, &h->NH, 4) || rw(f, &h->C, 4) || rw(f, &h->N, 4) ||
           rw(f, &h->V, 4) || rw(f, &h->B, 4) || rw(f, &h->seed, 8) || rw(f, &h->steps, 4) ||
           rw(f, &h->rows, 4) || rw(f, &h->params, 8) || rw(f, &h->total, 4) ||
           rw(f, &h->warmup, 4) || rw(f, &h->bos, 4) || rw(f, &h->period_min, 4) ||
           rw(f, &h->period_max, 4) || rw(f, &h->short_steps, 4) || rw(f, &h->short_ctx, 4) ||
           rw(f, &h->short_B, 4) || rw(f, &h->lr, 4) || rw(f, &h->lr_final, 4) ||
           rw(f, &h->weight_decay, 4) || rw(f, &h->clip, 4) || rw(f, &h->init_std, 4) ||
           rw(f, &h->repeat_share, 4) || rw(f, &h->span_share, 4) ||
           rw(f, &h->short_repeat_share, 4) || rw(f, &h->short_span_share, 4) ||
           rw(f, &h->corpus_size, 8) || rw(f, &h->corpus_hash, 8) || rw(f, &h->copy_from, 4) ||
           rw(f, &h->alpha_min, 4) || rw(f, &h->alpha_max, 4) || rw(f, &h->embed_min, 4) ||
           rw(f, &h->embed_max, 4) || rw(f, &h->alpha_share, 4) || rw(f, &h->embed_share, 4);
}
static int put_rw(CkIo *f, void *p, size_t n) { return put(f, p, n); }

static CkptHead make_head(const Trainer *tr, const TrainOptions *o, const TrainLog *log) {
    const Config *c = &tr->model.cfg;
    const CkptHead h = {c->L, c->NH, c->C, c->N, c->V, tr->B0, o->seed,
                        log->n ? log->rows[log->n - 1].step : 0, log->n,
                        (uint64_t)tr->model.w.num_params, o->steps, o->warmup, o->bos,
                        o->period_min, o->period_max, o->short_steps, o->short_ctx, o->short_B,
                        o->lr, o->lr_final, o->weight_decay, o->clip, o->init_std,
                        o->repeat_share, o->span_share, o->short_repeat_share, o->short_span_share,
                        o->corpus_size, o->corpus_hash, o->copy_from, o->alpha_min, o->alpha_max,
                        o->embed_min, o->embed_max, o->alpha_share, o->embed_share};
    return h;
}

static int write_ckpt(FILE *f, const Trainer *tr, CkptHead *h, const TrainLog *log) {
    const size_t n = tr->model.w.num_params;
    CkIo io = {f, {0x6B7673636B707433ULL, 0, {0}}};
    int bad = put(&io, CKPT_MAGIC, 8) || head_io(&io, h, put_rw) ||
              put(&io, tr->model.w.blob, n * 4) || put(&io, tr->m, n * 4) || put(&io, tr->v, n * 4);
    for (int i = 0; i < log->n && !bad; i++) {
        const TrainLogRow *r = &log->rows[i];
        const int32_t step = r->step;
        bad = put(&io, &step, 4) || put(&io, &r->train_loss, 4) || put(&io, &r->val_loss, 4) ||
              put(&io, &r->lr, 4) || put(&io, &r->grad_norm, 4) || put(&io, &r->tokens_per_s, 4) ||
              put(&io, &r->seconds, 8) || put(&io, &r->induction, 4) ||
              put(&io, &r->prev_token, 4) || put(&io, &r->sink, 4);
    }
    const uint64_t sum = sum_end(&io.sum);
    return bad || fwrite(&sum, 1, 8, f) != 8;
}

int train_checkpoint_save(const Trainer *tr, const TrainOptions *o, const TrainLog *log,
                          const char *path, char *err, size_t errsize) {
    CkptHead h = make_head(tr, o, log);
    /* the whole file or none, and only over a checkpoint: the last good one survives a
     * full disk or a kill, and a user's file is never written over */
    OutFile of;
    if (outfile_check(&of, path, "--checkpoint", TRAIN_CKPT_HEADER, OUTFILE_OURS_ONLY, err, errsize))
        return TRAIN_IO;
    FILE *f = outfile_begin(&of, err, errsize);
    if (!f) return TRAIN_IO;
    if (write_ckpt(f, tr, &h, log)) {
        const int e = errno; /* a short fwrite's reason */
        outfile_abort(&of, f);
        snprintf(err, errsize, "--checkpoint: cannot write (%s): %s", write_error_text(e), path);
        return TRAIN_IO;
    }
    return outfile_commit(&of, f, err, errsize) ? TRAIN_IO : 0;
}

/* The first field of the header that differs from a run of shape c with batches of B0
 * and options o, or NULL. */
static const char *ckpt_mismatch(const CkptHead *h, const Config *c, int B0, const TrainOptions *o,
                                 char *buf, size_t size) {
    if (h->seed != o->seed) {
        snprintf(buf, size, "--seed %llu, this run has %llu", (unsigned long long)h->seed,
                 (unsigned long long)o->seed);
        return buf;
    }
    const struct { const char *name; long have, want; } f[] = {
        {"layers", h->L, c->L}, {"heads", h->NH, c->NH}, {"dim", h->C, c->C},
        {"ctx", h->N, c->N},    {"vocab", h->V, c->V},   {"batch", h->B, B0},
        {"steps", h->total, o->steps}, {"warmup", h->warmup, o->warmup}, {"bos", h->bos, o->bos},
        {"period-min", h->period_min, o->period_min}, {"period-max", h->period_max, o->period_max},
        {"short-steps", h->short_steps, o->short_steps}, {"short-ctx", h->short_ctx, o->short_ctx},
        {"short-batch", h->short_B, o->short_B}, {"copy-from", h->copy_from, o->copy_from},
        {"alphabet-min", h->alpha_min, o->alpha_min}, {"alphabet-max", h->alpha_max, o->alpha_max},
        {"embed-min", h->embed_min, o->embed_min}, {"embed-max", h->embed_max, o->embed_max},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].have != f[i].want) {
            snprintf(buf, size, "--%s %ld, this run has %ld", f[i].name, f[i].have, f[i].want);
            return buf;
        }
    const struct { const char *name; float have, want; } r[] = {
        {"lr", h->lr, o->lr}, {"lr-final", h->lr_final, o->lr_final},
        {"weight-decay", h->weight_decay, o->weight_decay}, {"clip", h->clip, o->clip},
        {"init-std", h->init_std, o->init_std}, {"repeat-share", h->repeat_share, o->repeat_share},
        {"repeat-text", h->span_share, o->span_share},
        {"short-repeat-share", h->short_repeat_share, o->short_repeat_share},
        {"short-repeat-text", h->short_span_share, o->short_span_share},
        {"repeat-alphabet", h->alpha_share, o->alpha_share},
        {"embed-share", h->embed_share, o->embed_share},
    };
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        if (memcmp(&r[i].have, &r[i].want, sizeof(float)) != 0) { /* the same bits, or another run */
            snprintf(buf, size, "--%s %g, this run has %g", r[i].name, (double)r[i].have,
                     (double)r[i].want);
            return buf;
        }
    if (h->corpus_size != o->corpus_size || h->corpus_hash != o->corpus_hash) {
        snprintf(buf, size, "--corpus of %llu bytes (hash %016llx), this run's has %llu bytes "
                 "(hash %016llx)", (unsigned long long)h->corpus_size,
                 (unsigned long long)h->corpus_hash, (unsigned long long)o->corpus_size,
                 (unsigned long long)o->corpus_hash);
        return buf;
    }
    return NULL;
}

static int read_ckpt_body(CkIo *f, Trainer *tr, const CkptHead *h, TrainLog *log) {
    const size_t n = tr->model.w.num_params;
    if (get(f, tr->model.w.blob, n * 4) || get(f, tr->m, n * 4) || get(f, tr->v, n * 4)) return -1;
    log->n = 0;
    for (int i = 0; i < h->rows; i++) {
        TrainLogRow r;
        int32_t step;
        if (get(f, &step, 4) || get(f, &r.train_loss, 4) || get(f, &r.val_loss, 4) ||
            get(f, &r.lr, 4) || get(f, &r.grad_norm, 4) || get(f, &r.tokens_per_s, 4) ||
            get(f, &r.seconds, 8) || get(f, &r.induction, 4) || get(f, &r.prev_token, 4) ||
            get(f, &r.sink, 4))
            return -1;
        r.step = step;
        if (log->n == log->cap) {
            const int cap = log->cap ? 2 * log->cap : 256;
            TrainLogRow *p = realloc(log->rows, (size_t)cap * sizeof *p);
            if (!p) return -2;
            log->rows = p;
            log->cap = cap;
        }
        log->rows[log->n++] = r;
    }
    return 0;
}

/* Open path and read its magic and header into *h, the sum so far in io. 0; else
 * TRAIN_BAD with err (the file closed), or TRAIN_NOMEM. Any version from 2 on is read:
 * the caller checks *version. */
static int open_ckpt(const char *path, CkIo *io, CkptHead *h, int *version, char *err,
                     size_t errsize) {
    const int fd = infile_open(path, NULL, err, errsize);
    if (fd < 0) return TRAIN_BAD;
    memset(io, 0, sizeof *io);
    io->sum.h = 0x6B7673636B707433ULL;
    if (!(io->f = fdopen(fd, "rb"))) {
        close(fd);
        return TRAIN_NOMEM;
    }
    char magic[8];
    if (get(io, magic, 8) || memcmp(magic, CKPT_MAGIC, 7) != 0) {
        snprintf(err, errsize, "%s: not a kvscope checkpoint", path);
    } else if (magic[7] < 2 || magic[7] > CKPT_VERSION) { /* no run block to tell whose it is */
        snprintf(err, errsize, "%s: checkpoint version %d, this kvscope reads version %d (remove it "
                 "to start the run over)", path, magic[7], CKPT_VERSION);
    } else if (head_io(io, h, get)) {
        snprintf(err, errsize, "%s: truncated checkpoint", path);
    } else if (h->rows < 0 || h->steps < 0 || (h->rows > 0) != (h->steps > 0) ||
               h->params > ((uint64_t)1 << 40)) {
        snprintf(err, errsize, "%s: damaged checkpoint header", path);
    } else {
        *version = magic[7];
        return 0;
    }
    fclose(io->f);
    return TRAIN_BAD;
}

/* After open_ckpt: 1 if the file is as long as its header says and its last 8 bytes are
 * the checksum of every byte before them (io's position is then unspecified). A damaged
 * file must be called damaged before its header's options are believed: a flipped bit
 * in --clip is no other run. */
static int sum_holds(CkIo *io, const CkptHead *h) {
    const long size = (long)(CKPT_HEAD + 12 * h->params + (uint64_t)h->rows * CKPT_ROW + CKPT_SUM);
    unsigned char buf[1 << 16];
    uint64_t stored = 0;
    if (fseek(io->f, 0, SEEK_END) != 0 || ftell(io->f) != size || fseek(io->f, 0, SEEK_SET) != 0)
        return 0;
    CkSum sum = {.h = 0x6B7673636B707433ULL};
    for (long left = size - CKPT_SUM; left > 0;) {
        const size_t n = left < (long)sizeof buf ? (size_t)left : sizeof buf;
        if (fread(buf, 1, n, io->f) != n) return 0;
        sum_add(&sum, buf, n);
        left -= (long)n;
    }
    return fread(&stored, 1, 8, io->f) == 8 && stored == sum_end(&sum);
}

int train_checkpoint_owner(const char *path, const Config *cfg, int B, const TrainOptions *o,
                           int *steps, char *msg, size_t msgsize) {
    CkIo io;
    CkptHead h;
    int version = 0;
    const int rc = open_ckpt(path, &io, &h, &version, msg, msgsize);
    if (rc) return rc;
    const int damaged = version == CKPT_VERSION && !sum_holds(&io, &h);
    fclose(io.f);
    *steps = h.steps;
    char why[160];
    if (ckpt_mismatch(&h, cfg, B, o, why, sizeof why)) {
        if (damaged) { /* its options cannot be believed: a flipped byte is no other run */
            snprintf(msg, msgsize, "%s: checksum mismatch or wrong size: the checkpoint was "
                     "altered or damaged after it was written", path);
            return TRAIN_BAD;
        }
        snprintf(msg, msgsize, "%s", why);
        return TRAIN_OTHER_RUN;
    }
    if (version != CKPT_VERSION) {
        snprintf(msg, msgsize, "checkpoint version %d, this kvscope resumes version %d", version,
                 CKPT_VERSION);
        return TRAIN_OLD_VERSION;
    }
    return 0;
}

int train_checkpoint_load(Trainer *tr, const TrainOptions *o, TrainLog *log, const char *path,
                          char *err, size_t errsize) {
    CkIo io;
    CkptHead h;
    int version = 0, rc = open_ckpt(path, &io, &h, &version, err, errsize);
    if (rc) {
        train_log_free(log);
        return rc;
    }
    char why[160];
    uint64_t stored = 0;
    const long size = (long)(CKPT_HEAD + 12 * h.params + (uint64_t)h.rows * CKPT_ROW + CKPT_SUM);
    rc = TRAIN_BAD;
    if (version != CKPT_VERSION) {
        snprintf(err, errsize, "%s: checkpoint version %d, this kvscope reads version %d (start the "
                 "run over: --force instead of --resume)", path, version, CKPT_VERSION);
    } else if (fseek(io.f, 0, SEEK_END) != 0 || ftell(io.f) != size) {
        snprintf(err, errsize, "%s: checkpoint size does not match its header (truncated?)", path);
    } else if (!sum_holds(&io, &h)) { /* before the options: a flipped byte is no other run */
        snprintf(err, errsize, "%s: checksum mismatch: the checkpoint was altered or damaged after "
                 "it was written (start the run over: --force instead of --resume)", path);
    } else if (ckpt_mismatch(&h, &tr->model.cfg, tr->B0, o, why, sizeof why)) {
        snprintf(err, errsize, "%s: checkpoint from another run (%s)", path, why);
    } else if (h.params != tr->model.w.num_params) {
        snprintf(err, errsize, "%s: damaged checkpoint header", path);
    } else if (fseek(io.f, CKPT_HEAD, SEEK_SET) != 0 || (rc = read_ckpt_body(&io, tr, &h, log)) != 0 ||
               fread(&stored, 1, 8, io.f) != 8) {
        if (rc == -2) rc = TRAIN_NOMEM;
        else snprintf(err, errsize, "%s: read error", path), rc = TRAIN_BAD;
    } else if (stored != sum_end(&io.sum)) {
        snprintf(err, errsize, "%s: checksum mismatch: the checkpoint was altered or damaged after "
                 "it was written (start the run over: --force instead of --resume)", path);
        rc = TRAIN_BAD;
    } else if (log->n && log->rows[log->n - 1].step != h.steps) {
        snprintf(err, errsize, "%s: damaged checkpoint log", path);
        rc = TRAIN_BAD;
    }
    fclose(io.f);
    if (rc == 0) trainer_weights_changed(tr);
    else train_log_free(log); /* rows read before the checksum failed */
    return rc;
}

/* ---- samples --------------------------------------------------------------------------- */

int train_samples(Trainer *tr, TrainSample *s, int n, int steps, int bos) {
    Generator g;
    const int s0 = bos >= 0 ? 1 : 0; /* the start byte, then the prompt */
    for (int i = 0; i < n; i++) s[i].text = NULL;
    for (int i = 0; i < n; i++) {
        const int len = (int)strlen(s[i].prompt), T = s0 + len;
        int *ids = malloc((size_t)(T > 0 ? T : 1) * sizeof *ids);
        char *text = malloc((size_t)steps + 1);
        if (!ids || !text || generator_init(&g, &tr->model, GEN_CACHE)) {
            free(ids);
            free(text);
            return TRAIN_NOMEM;
        }
        if (s0) ids[0] = bos;
        for (int t = 0; t < len; t++) ids[s0 + t] = (unsigned char)s[i].prompt[t];
        int rc = len < 1 || T + steps > tr->model.cfg.N || generator_prefill(&g, ids, T, NULL);
        int k = 0;
        for (; !rc && k < steps; k++) {
            const int tok = generator_argmax(&g);
            text[k] = (char)tok;
            if (k + 1 < steps) rc = generator_decode(&g, tok, k + 1, NULL);
        }
        text[k] = '\0';
        generator_free(&g);
        free(ids);
        if (rc) {
            free(text);
            return TRAIN_BAD;
        }
        s[i].text = text;
        s[i].len = k;
    }
    return 0;
}

void train_samples_free(TrainSample *s, int n) {
    for (int i = 0; i < n; i++) {
        free(s[i].text);
        s[i].text = NULL;
    }
}

/* ---- the output folder -------------------------------------------------------------------
 * Every file goes into the folder's temporary twin (outdir_fopen), which the command
 * swaps in whole; a file that fails leaves the message outdir_fopen and close_in give. */

/* Close f (a file of o named name), reporting an earlier write error. 0 or TRAIN_IO. */
static int close_in(FILE *f, const OutDir *o, const char *name, char *err, size_t errsize) {
    if (file_close(f) == 0) return 0;
    snprintf(err, errsize, "%s: cannot write %s (%s): %s", o->option, name, write_error_text(errno),
             o->target);
    return TRAIN_IO;
}

/* A log value as written: empty when it was not measured (NaN). */
static const char *cell(float x, char *buf, size_t size) {
    if (isnan(x)) buf[0] = '\0';
    else snprintf(buf, size, "%.9g", (double)x);
    return buf;
}

static int write_log(const TrainLog *log, const OutDir *o, char *err, size_t errsize) {
    FILE *f = outdir_fopen(o, "train_log.csv", err, errsize);
    if (!f) return TRAIN_IO;
    fprintf(f, "step,train_loss,val_loss,lr,grad_norm,induction,prev_token,sink\n");
    for (int i = 0; i < log->n; i++) {
        const TrainLogRow *r = &log->rows[i];
        char val[32], ind[32], prev[32], sink[32];
        fprintf(f, "%d,%.9g,%s,%.9g,%.9g,%s,%s,%s\n", r->step, (double)r->train_loss,
                cell(r->val_loss, val, sizeof val), (double)r->lr, (double)r->grad_norm,
                cell(r->induction, ind, sizeof ind), cell(r->prev_token, prev, sizeof prev),
                cell(r->sink, sink, sizeof sink));
    }
    return close_in(f, o, "train_log.csv", err, errsize);
}

static int write_timing(const TrainLog *log, const OutDir *o, char *err, size_t errsize) {
    FILE *f = outdir_fopen(o, "train_timing.csv", err, errsize);
    if (!f) return TRAIN_IO;
    fprintf(f, "step,seconds,tokens_per_s\n");
    for (int i = 0; i < log->n; i++)
        fprintf(f, "%d,%.3f,%.0f\n", log->rows[i].step, log->rows[i].seconds,
                (double)log->rows[i].tokens_per_s);
    return close_in(f, o, "train_timing.csv", err, errsize);
}

static int write_eval(const TrainEval *ev, int N, const OutDir *o, char *err, size_t errsize) {
    FILE *f = outdir_fopen(o, "eval.csv", err, errsize);
    if (!f) return TRAIN_IO;
    fprintf(f, "model,context_bytes,bits_per_byte,smoothing\n");
    static const char *const names[3] = {"unigram", "order1", "order2"};
    for (int k = 0; k < 3; k++)
        fprintf(f, "%s,%d,%.4f,add-%g\n", names[k], k, ev->ngram[k], ev->alpha[k]);
    fprintf(f, "gpt2,0-%d,%.4f,none\n", N - 1, ev->model);
    return close_in(f, o, "eval.csv", err, errsize);
}

static int write_samples(const TrainSample *s, int ns, const OutDir *o, char *err, size_t errsize) {
    FILE *f = outdir_fopen(o, "samples.txt", err, errsize);
    if (!f) return TRAIN_IO;
    fprintf(f, "# Greedy continuations by this model (kvscope train): the prompt, then what the\n"
               "# model adds, byte after byte, taking the most likely byte every time.\n");
    for (int i = 0; i < ns; i++) {
        fprintf(f, "\n## prompt: %s\n%s", s[i].prompt, s[i].prompt);
        fwrite(s[i].text, 1, (size_t)s[i].len, f);
        fputc('\n', f);
    }
    return close_in(f, o, "samples.txt", err, errsize);
}

/* config.json and model.safetensors (hf_export) into o's folder. 0, TRAIN_NOMEM or
 * TRAIN_IO with a message. */
static int write_model(const Model *m, const OutDir *o, char *err, size_t errsize) {
    const int rc = hf_export(m, o->tmp, err, errsize);
    if (rc == HF_NOMEM) snprintf(err, errsize, "out of memory writing %s", o->target);
    return rc == 0 ? 0 : rc == HF_NOMEM ? TRAIN_NOMEM : TRAIN_IO;
}

int train_write(const Trainer *tr, const TrainLog *log, const TrainEval *ev, const TrainSample *s,
                int ns, const OutDir *o, char *err, size_t errsize) {
    int rc = write_model(&tr->model, o, err, errsize);
    if (rc) return rc;
    if (write_log(log, o, err, errsize) || write_timing(log, o, err, errsize) ||
        write_eval(ev, tr->T, o, err, errsize) || write_samples(s, ns, o, err, errsize))
        return TRAIN_IO;
    return 0;
}

int train_write_grads(const Trainer *tr, float loss, const OutDir *o, char *err, size_t errsize) {
    char path[4400];
    int rc = write_model(&tr->model, o, err, errsize);
    if (rc) return rc;
    const size_t n = (size_t)tr->nspecs + 3;
    StWrite *w = calloc(n, sizeof *w);
    StDtype *dt = calloc(n, sizeof *dt);
    if (!w || !dt) {
        free(w);
        free(dt);
        snprintf(err, errsize, "out of memory writing %s", o->target);
        return TRAIN_NOMEM;
    }
    const size_t B = (size_t)tr->B, T = (size_t)tr->T;
    /* the token ids go in as int32 bytes (st_write_typed reads them as bytes) */
    w[0] = (StWrite){"inputs", 2, {B, T}, (const float *)(const void *)tr->inputs};
    w[1] = (StWrite){"targets", 2, {B, T}, (const float *)(const void *)tr->targets};
    w[2] = (StWrite){"loss", 1, {1}, &loss};
    dt[0] = dt[1] = ST_I32;
    dt[2] = ST_F32;
    for (int i = 0; i < tr->nspecs; i++) {
        const TensorSpec *sp = &tr->specs[i];
        w[3 + i] = (StWrite){sp->name, sp->ndim, {sp->shape[0], sp->shape[1]}, tr->grads + sp->offset};
        dt[3 + i] = ST_F32;
    }
    if (path_join(path, sizeof path, o->tmp, "grads.safetensors")) {
        snprintf(err, errsize, "%s: path too long: %s", o->option, o->target);
        rc = ST_IO;
    } else {
        rc = st_write_typed(path, w, dt, n, err, errsize);
        if (rc == ST_NOMEM) snprintf(err, errsize, "out of memory writing %s", o->target);
    }
    free(w);
    free(dt);
    return rc == 0 ? 0 : rc == ST_NOMEM ? TRAIN_NOMEM : TRAIN_IO;
}
