/* batch_run.c — many sequences alone, then together; see batch_run.h. */
#include "batch_run.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blocks_png.h"
#include "generate.h"
#include "kvcache.h"
#include "sysinfo.h"

#define PREFIX_REPS 3 /* timed repetitions of a prefix reuse; the fastest counts */

int batch_run_init(BatchRun *r, int B) {
    memset(r, 0, sizeof *r);
    r->B = B;
    r->tok = calloc((size_t)B, sizeof *r->tok);
    r->T = calloc((size_t)B, sizeof *r->T);
    r->steps = calloc((size_t)B, sizeof *r->steps);
    r->gen = calloc((size_t)B, sizeof *r->gen);
    r->ref = calloc((size_t)B, sizeof *r->ref);
    r->ref_res = calloc((size_t)B, sizeof *r->ref_res);
    return r->tok && r->T && r->steps && r->gen && r->ref && r->ref_res ? 0 : -1;
}

int batch_run_alloc(BatchRun *r, int V) {
    for (int b = 0; b < r->B; b++) {
        if (r->steps[b] > r->S) r->S = r->steps[b];
        r->gen[b] = calloc((size_t)r->steps[b] + 1, sizeof **r->gen);
        r->ref[b] = malloc(((size_t)r->steps[b] + 1) * V * sizeof **r->ref);
        r->ref_res[b] = calloc((size_t)r->steps[b] + 1, sizeof **r->ref_res);
        if (!r->gen[b] || !r->ref[b] || !r->ref_res[b]) return -1;
    }
    return (r->lg = malloc((size_t)r->B * V * sizeof *r->lg)) ? 0 : -1;
}

void batch_run_free(BatchRun *r) {
    for (int b = 0; b < r->B; b++) {
        if (r->tok) free(r->tok[b]);
        if (r->gen) free(r->gen[b]);
        if (r->ref) free(r->ref[b]);
        if (r->ref_res) free(r->ref_res[b]);
    }
    free(r->tok); free(r->T); free(r->steps); free(r->gen); free(r->ref); free(r->ref_res);
    free(r->lg);
    memset(r, 0, sizeof *r);
}

int batch_run_alone(Model *m, BatchRun *r) {
    const Config *cfg = &m->cfg;
    const int V = cfg->V;
    for (int b = 0; b < r->B; b++) {
        KVCache c;
        if (kvcache_init(&c, cfg->L, cfg->NH, cfg->C / cfg->NH, cfg->N)) return -1;
        int rc = model_forward(m, &c, r->tok[b], r->T[b], r->ref[b], NULL, NULL);
        if (rc == 0) r->ref_res[b][0] = kvcache_bytes_reserved(&c);
        double t0 = now_seconds();
        for (int s = 1; s <= r->steps[b] && rc == 0; s++) {
            int t = r->gen[b][s] = logits_argmax(r->ref[b] + (size_t)(s - 1) * V, V);
            rc = model_forward(m, &c, &t, 1, r->ref[b] + (size_t)s * V, NULL, NULL);
            r->ref_res[b][s] = kvcache_bytes_reserved(&c);
        }
        r->t_alone += now_seconds() - t0;
        kvcache_free(&c);
        if (rc) return -1;
        if (logits_first_nonfinite(r->ref[b], (r->steps[b] + 1) * V) >= 0) return GEN_NONFINITE;
    }
    return 0;
}

/* ---- files ------------------------------------------------------------------------ */

static FILE *open_with(const OutDir *o, const char *name, const char *header, char *err,
                       size_t errsize) {
    FILE *f = outdir_fopen(o, name, err, errsize);
    if (f && header) fprintf(f, "%s\n", header);
    return f;
}

int batch_files_open(BatchFiles *f, const OutDir *o, BatchMode mode, char *err, size_t errsize) {
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", o->tmp);
    const int paged = mode == BATCH_PAGED;
    if (!(f->diff = open_with(o, "diff.csv", "step,seq,pos,max_abs_diff,max_abs_dlogprob,same_argmax",
                              err, errsize)) ||
        !(f->summary = open_with(o, "summary.csv", "key,value", err, errsize)) ||
        !(f->prefix = open_with(o, "prefix.csv",
                                "first,second,prefix_tokens,new_tokens,flops_fresh,flops_reuse,"
                                "flops_saved,flops_saved_pct,max_abs_diff", err, errsize)) ||
        !(f->timing = open_with(o, "timing.csv", "key,value", err, errsize)))
        return -1;
    f->memory = paged ? open_with(o, "memory.csv", "step,live,tokens,bytes_used,bytes_prealloc,"
                                  "bytes_doubling,bytes_paged,blocks", err, errsize)
                      : open_with(o, "padding.csv", "step,live,width,tokens,bytes_used,"
                                  "bytes_stacked,bytes_padding,padding_pct", err, errsize);
    if (!f->memory) return -1;
    if (paged && (!(f->blocks = open_with(o, "blocks.csv", "block,seq,logical,tokens", err, errsize)) ||
                  !(f->memory_md = open_with(o, "memory.md", NULL, err, errsize)) ||
                  !(f->waste = open_with(o, "waste.csv", "strategy,bytes_tokens,bytes_reservation,"
                                         "bytes_internal,bytes_external,pct_tokens,pct_reservation,"
                                         "pct_internal,pct_external", err, errsize))))
        return -1;
    return 0;
}

int batch_files_close(BatchFiles *f) {
    FILE **all[] = {&f->diff, &f->summary, &f->prefix, &f->timing, &f->memory, &f->blocks,
                    &f->memory_md, &f->waste};
    int bad = 0, e = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (*all[i] && file_close(*all[i]) != 0 && !bad) bad = 1, e = errno;
        *all[i] = NULL;
    }
    if (bad) errno = e;
    return bad ? -1 : 0;
}

/* ---- the batch ---------------------------------------------------------------------- */

/* The caches of a batch: one of the two, by mode. */
typedef struct {
    BatchMode mode;
    PaddedBatch pb;
    PagedCache pc;
    int *seqs, *toks; /* (B) the rows of a step: sequence and token */
    float **lgp;      /* (B) their logits, in r->lg */
    size_t bpt;       /* bytes per token: 2·L·C floats */
    KvArena arena[2]; /* paged runs: where preallocation and doubling would put each
                         sequence in one contiguous arena (kvwaste.h) */
} Batch;

static void batch_free(Batch *k) {
    padded_free(&k->pb);
    paged_free(&k->pc);
    free(k->seqs);
    free(k->toks);
    free(k->lgp);
    kvarena_free(&k->arena[0]);
    kvarena_free(&k->arena[1]);
}

static int batch_init(Batch *k, const Model *m, const BatchRun *r, BatchMode mode, int block_size) {
    const Config *cfg = &m->cfg;
    const int NH = cfg->NH, hs = cfg->C / cfg->NH, B = r->B;
    int maxT = 0, maxlen = 0, pool = 0;
    memset(k, 0, sizeof *k);
    k->mode = mode;
    k->bpt = 2u * (size_t)cfg->L * cfg->C * sizeof(float);
    for (int b = 0; b < B; b++) {
        if (r->T[b] > maxT) maxT = r->T[b];
        if (r->T[b] + r->steps[b] > maxlen) maxlen = r->T[b] + r->steps[b];
        pool += (r->T[b] + r->steps[b] + block_size - 1) / block_size;
    }
    k->seqs = malloc((size_t)B * sizeof *k->seqs);
    k->toks = malloc((size_t)B * sizeof *k->toks);
    k->lgp = malloc((size_t)B * sizeof *k->lgp);
    if (!k->seqs || !k->toks || !k->lgp) return -1;
    if (mode == BATCH_PAGED && (kvarena_init(&k->arena[0], B) || kvarena_init(&k->arena[1], B)))
        return -1;
    return mode == BATCH_PAGED ? paged_init(&k->pc, cfg->L, NH, hs, block_size, pool, B, maxlen)
                               : padded_init(&k->pb, cfg->L, NH, hs, B, maxT + r->S,
                                             mode == BATCH_MASKED);
}

/* The rows of step s: every sequence that still decodes. Returns their number. */
static int gather(Batch *k, const BatchRun *r, int s, int V) {
    int R = 0;
    for (int b = 0; b < r->B; b++)
        if (r->steps[b] >= s) {
            k->seqs[R] = b;
            k->toks[R] = s ? r->gen[b][s] : 0;
            k->lgp[R] = r->lg + (size_t)R * V;
            R++;
        }
    return R;
}

/* Step s of the batch: the prefill puts every sequence alone into the shared cache;
 * a decode step runs all R rows at once (timed). 0, or -1. */
static int step(Model *m, Batch *k, BatchRun *r, int s, int R) {
    FlopCount fl = {0};
    if (s > 0) {
        double t0 = now_seconds();
        int rc = k->mode == BATCH_PAGED ? paged_forward(m, &k->pc, k->seqs, k->toks, R, k->lgp, &fl)
                                        : padded_decode(m, &k->pb, k->seqs, k->toks, R, k->lgp, &fl);
        r->t_batch += now_seconds() - t0;
        return rc ? -1 : 0;
    }
    for (int q = 0; q < R; q++) {
        const int b = k->seqs[q], T = r->T[b];
        if (k->mode != BATCH_PAGED) {
            if (padded_prefill(m, &k->pb, b, r->tok[b], T, k->lgp[q], &fl)) return -1;
            continue;
        }
        int *sq = malloc((size_t)T * sizeof *sq), rc = -1;
        float **lp = calloc((size_t)T, sizeof *lp);
        if (sq && lp) {
            for (int i = 0; i < T; i++) sq[i] = b;
            lp[T - 1] = k->lgp[q];
            rc = paged_forward(m, &k->pc, sq, r->tok[b], T, lp, &fl) ? -1 : 0;
        }
        free(sq);
        free(lp);
        if (rc) return -1;
    }
    return 0;
}

/* Every row of step s against its run alone: diff.csv rows and the totals. Fills st's
 * worst; returns the tokens the rows hold and the doubling cache's bytes in *dbl. */
static long compare_rows(const Batch *k, const BatchRun *r, int s, int R, int V, FILE *diff,
                         BatchTotals *tot, BatchStep *st, size_t *dbl) {
    long live = 0;
    *dbl = 0;
    st->worst = 0.0;
    for (int q = 0; q < R; q++) {
        const int b = k->seqs[q];
        const float *ref = r->ref[b] + (size_t)s * V, *got = k->lgp[q];
        const double d = logits_max_abs_diff(got, ref, V), dl = logits_max_abs_dlogprob(got, ref, V);
        const int same = logits_argmax(got, V) == logits_argmax(ref, V);
        tot->differs += !same;
        tot->compared++;
        st->worst = diff_max(st->worst, d);
        tot->worst_lp = diff_max(tot->worst_lp, dl);
        live += r->T[b] + s;
        *dbl += r->ref_res[b][s];
        fprintf(diff, "%d,%d,%d,%.9g,%.9g,%d\n", s, b, r->T[b] - 1 + s, d, dl, same);
    }
    tot->worst = diff_max(tot->worst, st->worst);
    return live;
}

/* The paged cache's block table now: blocks.csv and blocks.png. 0, or -1 with err. */
static int write_table(const PagedCache *pc, BatchFiles *f, char *err, size_t errsize) {
    for (int blk = 0; blk < pc->n_blocks; blk++) {
        int seq, logical, held;
        paged_block_owner(pc, blk, &seq, &logical, &held);
        fprintf(f->blocks, "%d,%d,%d,%d\n", blk, seq, logical, held);
    }
    char png[4300];
    if (path_join(png, sizeof png, f->dir, "blocks.png")) {
        snprintf(err, errsize, "%s: path too long", f->dir);
        return -1;
    }
    return blocks_png_write(png, pc, err, errsize);
}

/* Step s's memory split three ways (kvwaste.h), in token slots: preallocating the
 * context N, doubling (the reservation of the sequence's run alone), paging (its blocks).
 * Preallocation and doubling place each sequence in a contiguous arena; paging has no
 * external fragmentation. */
static void account_waste(Batch *k, const BatchRun *r, int s, int R, int N, KvWaste *w) {
    for (int q = 0; q < R; q++) {
        const int b = k->seqs[q];
        const long t = r->T[b] + s, fin = r->T[b] + r->steps[b];
        const long dbl = (long)(r->ref_res[b][s] / k->bpt);
        const long pag = (long)k->pc.seq[b].n_blocks * k->pc.block_size;
        kvarena_set(&k->arena[0], b, N);
        kvarena_set(&k->arena[1], b, dbl);
        kvwaste_add_seq(&w[0], t, N, fin);
        kvwaste_add_seq(&w[1], t, dbl, fin);
        kvwaste_add_seq(&w[2], t, pag, fin);
    }
    for (int i = 0; i < 2; i++)
        w[i].external += (double)(kvarena_extent(&k->arena[i]) - kvarena_held(&k->arena[i]));
}

/* Step s's memory, paged: bytes holding tokens, reserved by each way, the blocks;
 * the block table at the table step; finished sequences give their blocks back. */
static int account_paged(Batch *k, const BatchRun *r, int s, int R, long live, size_t dbl,
                         const Config *cfg, BatchFiles *f, BatchTotals *tot, BatchStep *st,
                         char *err, size_t errsize) {
    PagedCache *pc = &k->pc;
    if (paged_check(pc)) tot->books_ok = 0;
    const size_t used = paged_bytes_used(pc), pre = (size_t)R * cfg->N * k->bpt;
    st->reserved = paged_bytes_reserved(pc);
    st->blocks = paged_blocks_owned(pc);
    st->used = used;
    if (st->blocks > tot->peak_blocks) tot->peak_blocks = st->blocks;
    if (used != (size_t)live * k->bpt) tot->books_ok = 0;
    tot->sum_used += (double)used;
    tot->sum_pre += (double)pre;
    tot->sum_dbl += (double)dbl;
    tot->sum_pag += (double)st->reserved;
    fprintf(f->memory, "%d,%d,%ld,%zu,%zu,%zu,%zu,%d\n", s, R, live, used, pre, dbl, st->reserved,
            st->blocks);
    if (s == tot->table_step && write_table(pc, f, err, errsize)) return -1;
    account_waste(k, r, s, R, cfg->N, tot->waste);
    for (int q = 0; q < R; q++)
        if (r->steps[k->seqs[q]] == s) {
            paged_release(pc, k->seqs[q]);
            kvarena_set(&k->arena[0], k->seqs[q], 0);
            kvarena_set(&k->arena[1], k->seqs[q], 0);
        }
    if (paged_check(pc)) tot->books_ok = 0;
    return 0;
}

/* Step s's memory, padded: the stacked tensor against the bytes holding tokens. */
static void account_padded(const Batch *k, int s, int R, FILE *memory, BatchTotals *tot,
                           BatchStep *st) {
    const PaddedBatch *pb = &k->pb;
    const size_t used = padded_bytes_used(pb), stk = padded_bytes_stacked(pb);
    tot->sum_stk += (double)stk;
    tot->sum_pad += (double)(stk - used);
    st->width = pb->width;
    st->used = used;
    st->stacked = stk;
    fprintf(memory, "%d,%d,%d,%zu,%zu,%zu,%zu,%.1f\n", s, R, pb->width, used / k->bpt, used, stk,
            stk - used, 100.0 * (double)(stk - used) / (double)stk);
}

static const char *mode_name(BatchMode m) {
    return m == BATCH_PAGED ? "paged" : m == BATCH_UNMASKED ? "nomask" : "mask";
}

/* waste.csv: each way's memory over the run, in bytes and in shares of it. */
static void write_waste(const KvWaste *w, size_t bpt, FILE *f) {
    static const char *const name[3] = {"preallocate", "doubling", "paged"};
    for (int i = 0; i < 3; i++) {
        const double b = (double)bpt, all = kvwaste_total(&w[i]);
        fprintf(f, "%s,%.0f,%.0f,%.0f,%.0f,%.1f,%.1f,%.1f,%.1f\n", name[i], w[i].tokens * b,
                w[i].reservation * b, w[i].internal * b, w[i].external * b, 100.0 * w[i].tokens / all,
                100.0 * w[i].reservation / all, 100.0 * w[i].internal / all, 100.0 * w[i].external / all);
    }
}

/* summary.csv's keys of the run, memory.md (paged), the decode times. */
static void write_summary(const Batch *k, const BatchRun *r, const Config *cfg, int block_size,
                          BatchTotals *tot, BatchFiles *f) {
    long prompt = 0, gen = 0;
    for (int b = 0; b < r->B; b++) prompt += r->T[b], gen += r->steps[b];
    fprintf(f->summary, "mode,%s\nsequences,%d\nprompt_tokens,%ld\ngenerated_tokens,%ld\nsteps,%d\n"
                        "bytes_per_token,%zu\ncontext,%d\nmax_abs_diff,%.3g\nmax_abs_dlogprob,%.3g\n"
                        "compared,%d\nargmax_differs,%d\n",
            mode_name(k->mode), r->B, prompt, gen, r->S, k->bpt, cfg->N, tot->worst, tot->worst_lp,
            tot->compared, tot->differs);
    const double pre = 100.0 * tot->sum_used / tot->sum_pre, dbl = 100.0 * tot->sum_used / tot->sum_dbl,
                 pag = 100.0 * tot->sum_used / tot->sum_pag;
    if (k->mode == BATCH_PAGED) {
        if (k->pc.n_free != k->pc.n_blocks) tot->books_ok = 0; /* every block returned */
        fprintf(f->summary, "block_size,%d\nblock_bytes,%zu\npool_blocks,%d\npeak_blocks,%d\n"
                            "table_step,%d\nbooks_ok,%d\nused_pct_prealloc,%.1f\n"
                            "used_pct_doubling,%.1f\nused_pct_paged,%.1f\n",
                block_size, paged_block_bytes(&k->pc), k->pc.n_blocks, tot->peak_blocks,
                tot->table_step, tot->books_ok, pre, dbl, pag);
        fprintf(f->memory_md, "| strategy | reserves | bytes holding tokens / bytes reserved |\n"
                              "|---|---|---:|\n"
                              "| preallocate | the context (%d tokens) per sequence | %.1f %% |\n"
                              "| grow by doubling | 16, 32, 64, ... tokens per sequence | %.1f %% |\n"
                              "| paged | one block of %d tokens at a time | %.1f %% |\n",
                cfg->N, pre, dbl, block_size, pag);
        write_waste(tot->waste, k->bpt, f->waste);
    } else {
        const size_t stk = padded_bytes_stacked(&k->pb);
        fprintf(f->summary, "width_final,%d\npadding_pct,%.1f\nbytes_stacked_final,%zu\n"
                            "bytes_padding_final,%zu\n",
                k->pb.width, 100.0 * tot->sum_pad / tot->sum_stk, stk, stk - padded_bytes_used(&k->pb));
    }
    fprintf(f->timing, "decode_alone_seconds,%.6f\ndecode_batched_seconds,%.6f\n", r->t_alone,
            r->t_batch);
}

int batch_run_together(Model *m, BatchRun *r, BatchMode mode, int block_size, int table_step,
                       BatchFiles *f, BatchTotals *tot, BatchStepFn *on_step, void *user,
                       char *err, size_t errsize) {
    const Config *cfg = &m->cfg;
    Batch k;
    memset(tot, 0, sizeof *tot);
    tot->books_ok = 1;
    tot->table_step = table_step >= 0 ? (table_step > r->S ? r->S : table_step) : r->S / 2;
    int rc = batch_init(&k, m, r, mode, block_size);
    if (rc) snprintf(err, errsize, "out of memory: batched cache");
    if (rc == 0 && mode == BATCH_PAGED) tot->pool_blocks = k.pc.n_blocks;
    for (int s = 0; s <= r->S && rc == 0; s++) {
        BatchStep st = {.step = s};
        size_t dbl;
        st.rows = gather(&k, r, s, cfg->V);
        if ((rc = step(m, &k, r, s, st.rows))) {
            snprintf(err, errsize, "batched step %d failed (out of memory?)", s);
            break;
        }
        long live = compare_rows(&k, r, s, st.rows, cfg->V, f->diff, tot, &st, &dbl);
        if (mode == BATCH_PAGED)
            rc = account_paged(&k, r, s, st.rows, live, dbl, cfg, f, tot, &st, err, errsize);
        else
            account_padded(&k, s, st.rows, f->memory, tot, &st);
        if (rc == 0 && on_step) on_step(&st, user);
    }
    if (rc == 0) write_summary(&k, r, cfg, block_size, tot, f);
    batch_free(&k);
    return rc;
}

/* ---- prefix reuse ------------------------------------------------------------------ */

/* The longest earlier prompt that prompt j starts with, or -1. */
static int prefix_of(const BatchRun *r, int j) {
    int i = -1;
    for (int k = 0; k < j; k++)
        if (r->T[k] < r->T[j] && memcmp(r->tok[k], r->tok[j], (size_t)r->T[k] * sizeof(int)) == 0 &&
            (i < 0 || r->T[k] > r->T[i]))
            i = k;
    return i;
}

/* Prompt j fresh (logits lf) and as prompt i's cache plus j's new tokens (logits lr),
 * PREFIX_REPS times, the fastest of each timed. 0, or -1. */
static int time_reuse(Model *m, const BatchRun *r, int i, int j, KVCache *c, float *lf,
                      float *lr, PrefixPair *p) {
    FlopCount ff = {0}, fr = {0};
    double tf = INFINITY, tr = INFINITY;
    for (int rep = 0; rep < PREFIX_REPS; rep++) {
        FlopCount a = {0}, b = {0};
        kvcache_reset(c);
        double t0 = now_seconds();
        if (model_forward(m, c, r->tok[j], r->T[j], lf, NULL, &a)) return -1;
        tf = fmin(tf, now_seconds() - t0);
        kvcache_reset(c);
        /* turn 1 already paid for prompt i: its cache is there to reuse */
        if (model_forward(m, c, r->tok[i], r->T[i], NULL, NULL, NULL)) return -1;
        t0 = now_seconds();
        if (model_forward(m, c, r->tok[j] + r->T[i], r->T[j] - r->T[i], lr, NULL, &b)) return -1;
        tr = fmin(tr, now_seconds() - t0);
        ff = a;
        fr = b;
    }
    p->flops_fresh = flops_total(&ff);
    p->flops_reuse = flops_total(&fr);
    p->seconds_fresh = tf;
    p->seconds_reuse = tr;
    return 0;
}

int batch_run_prefix(Model *m, const BatchRun *r, BatchFiles *f, BatchTotals *tot,
                     PrefixFn *on_pair, void *user) {
    const Config *cfg = &m->cfg;
    const int V = cfg->V;
    float *lf = malloc((size_t)V * sizeof *lf), *lr = malloc((size_t)V * sizeof *lr);
    KVCache c;
    if (!lf || !lr || kvcache_init(&c, cfg->L, cfg->NH, cfg->C / cfg->NH, cfg->N)) {
        free(lf); free(lr);
        return -1;
    }
    int pairs = 0, rc = 0;
    for (int j = 1; j < r->B && rc == 0; j++) {
        const int i = prefix_of(r, j);
        if (i < 0) continue;
        PrefixPair p = {.first = i, .second = j, .prefix_tokens = r->T[i],
                        .new_tokens = r->T[j] - r->T[i]};
        if ((rc = time_reuse(m, r, i, j, &c, lf, lr, &p))) break;
        const uint64_t F = p.flops_fresh, R = p.flops_reuse;
        p.max_abs_diff = logits_max_abs_diff(lf, lr, V);
        p.pct_saved = 100.0 * (double)(F - R) / (double)F;
        if (p.max_abs_diff > tot->prefix_worst) tot->prefix_worst = p.max_abs_diff;
        fprintf(f->prefix, "%d,%d,%d,%d,%llu,%llu,%llu,%.1f,%.9g\n", i, j, p.prefix_tokens,
                p.new_tokens, (unsigned long long)F, (unsigned long long)R,
                (unsigned long long)(F - R), p.pct_saved, p.max_abs_diff);
        fprintf(f->timing, "prefix_fresh_seconds_%d,%.6f\nprefix_reuse_seconds_%d,%.6f\n", j,
                p.seconds_fresh, j, p.seconds_reuse);
        if (pairs == 0)
            fprintf(f->summary,
                    "prefix_first,%d\nprefix_second,%d\nprefix_tokens,%d\nprefix_new_tokens,%d\n"
                    "prefix_flops_fresh,%llu\nprefix_flops_reuse,%llu\nprefix_flops_saved,%llu\n"
                    "prefix_flops_saved_pct,%.1f\nprefix_max_abs_diff,%.3g\n",
                    i, j, p.prefix_tokens, p.new_tokens, (unsigned long long)F,
                    (unsigned long long)R, (unsigned long long)(F - R), p.pct_saved, p.max_abs_diff);
        if (on_pair) on_pair(&p, user);
        pairs++;
    }
    fprintf(f->summary, "prefix_pairs,%d\n", pairs);
    kvcache_free(&c);
    free(lf);
    free(lr);
    return rc;
}
