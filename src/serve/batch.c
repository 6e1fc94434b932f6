/* batch.c — the padded batch: prefill alone, decode together, with or without the mask. */
#include "batch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "ops.h"

int padded_init(PaddedBatch *pb, int L, int NH, int hs, int B, int W, int masked) {
    memset(pb, 0, sizeof *pb);
    if (L < 1 || NH < 1 || hs < 1 || B < 1 || W < 1) return -1;
    pb->L = L;
    pb->NH = NH;
    pb->hs = hs;
    pb->B = B;
    pb->W = W;
    pb->masked = masked;
    size_t n = (size_t)L * B * W * NH * hs;
    pb->k = calloc(n, sizeof *pb->k); /* zeros: the padding */
    pb->v = calloc(n, sizeof *pb->v);
    pb->keep = calloc((size_t)B * W, 1);
    pb->len = calloc((size_t)B, sizeof *pb->len);
    pb->workers = kern_threads();
    const size_t wk = (size_t)pb->workers;
    pb->kr = malloc(wk * W * sizeof *pb->kr);
    pb->vr = malloc(wk * W * sizeof *pb->vr);
    pb->scores = malloc(wk * 2 * NH * W * sizeof *pb->scores);
    if (!pb->k || !pb->v || !pb->keep || !pb->len || !pb->kr || !pb->vr || !pb->scores) {
        padded_free(pb);
        return -1;
    }
    return 0;
}

void padded_free(PaddedBatch *pb) {
    free(pb->k);
    free(pb->v);
    free(pb->keep);
    free(pb->len);
    free(pb->kr);
    free(pb->vr);
    free(pb->scores);
    memset(pb, 0, sizeof *pb);
}

/* Where each row of a forward call goes. */
typedef struct {
    PaddedBatch *pb;
    KernLevel kern;  /* the model's kernels, for the rows without padding */
    const int *seq;  /* (R) sequence of row r */
    const int *slot; /* (R) slot of row r */
} PaddedRows;

static float *slot_row(float *base, const PaddedBatch *pb, int l, int b, int slot) {
    return base + (((size_t)l * pb->B + b) * pb->W + slot) * pb->NH * pb->hs;
}

/* k, v of the row at its slot */
static int padded_store(void *user, int r, int l, const float *k, const float *v) {
    const PaddedRows *pr = user;
    PaddedBatch *pb = pr->pb;
    const size_t row = (size_t)pb->NH * pb->hs * sizeof(float);
    memcpy(slot_row(pb->k, pb, l, pr->seq[r], pr->slot[r]), k, row);
    memcpy(slot_row(pb->v, pb, l, pr->seq[r], pr->slot[r]), v, row);
    return 0;
}

/* attend over slots 0..slot of the row's sequence: where none of them is padding, they are
 * one contiguous (slot + 1, C) block and the model's own kernel reads it (as decoding the
 * sequence alone does: the same bits); otherwise row by row with the mask */
static int padded_attend(void *user, int worker, int r, int l, const float *q, float *out) {
    const PaddedRows *pr = user;
    PaddedBatch *pb = pr->pb;
    const int b = pr->seq[r], slot = pr->slot[r], NH = pb->NH;
    const unsigned char *keep = pb->keep + (size_t)b * pb->W;
    float *sc = pb->scores + (size_t)worker * 2 * NH * pb->W;
    const float **kr = pb->kr + (size_t)worker * pb->W, **vr = pb->vr + (size_t)worker * pb->W;
    int padded = 0;
    for (int t = 0; t <= slot && !padded; t++) padded = !keep[t];
    if (!padded) {
        kern_attention_out(pr->kern, out, sc, sc + (size_t)NH * (slot + 1), q,
                           slot_row(pb->k, pb, l, b, 0), slot_row(pb->v, pb, l, b, 0), 1, slot,
                           NH, pb->hs);
        return slot + 1;
    }
    for (int t = 0; t <= slot; t++) {
        kr[t] = slot_row(pb->k, pb, l, b, t);
        vr[t] = slot_row(pb->v, pb, l, b, t);
    }
    return attention_row_forward(out, sc, q, kr, vr, pb->masked ? keep : NULL, slot + 1, NH,
                                 pb->hs);
}

int padded_prefill(Model *m, PaddedBatch *pb, int b, const int *tokens, int T, float *logits,
                   FlopCount *flops) {
    if (b < 0 || b >= pb->B || T < 1 || T > pb->W || pb->len[b] != 0) return -1;
    int *idx = malloc((size_t)T * sizeof *idx);
    int *seq = malloc((size_t)T * sizeof *seq);
    float **lg = calloc((size_t)T, sizeof *lg);
    int rc = -1;
    if (idx && seq && lg) {
        for (int i = 0; i < T; i++) {
            idx[i] = i; /* position = slot = i */
            seq[i] = b;
            pb->keep[(size_t)b * pb->W + i] = 1;
        }
        lg[T - 1] = logits;
        PaddedRows pr = {pb, m->kern, seq, idx};
        const RowCache cache = {padded_store, padded_attend, &pr, pb->workers};
        rc = model_forward_rows(m, tokens, idx, T, &cache, lg, flops);
        if (rc == 0) {
            pb->len[b] = T;
            if (T > pb->width) pb->width = T; /* pad_kv_cache: every row padded to the longest */
        } else {
            memset(pb->keep + (size_t)b * pb->W, 0, (size_t)T);
        }
    }
    free(idx);
    free(seq);
    free(lg);
    return rc;
}

int padded_decode(Model *m, PaddedBatch *pb, const int *seqs, const int *tokens, int R,
                  float *const *logits, FlopCount *flops) {
    if (R < 1 || R > pb->B || pb->width >= pb->W) return -1;
    int *pos = malloc((size_t)R * sizeof *pos);
    int *slot = malloc((size_t)R * sizeof *slot);
    int rc = -1;
    if (pos && slot) {
        rc = 0;
        for (int r = 0; r < R && rc == 0; r++) {
            if (seqs[r] < 0 || seqs[r] >= pb->B) rc = -1;
            for (int q = 0; q < r && rc == 0; q++)
                if (seqs[q] == seqs[r]) rc = -1;
        }
        for (int r = 0; r < R && rc == 0; r++) {
            pos[r] = pb->len[seqs[r]];  /* its own next position: padding is not a token */
            slot[r] = pb->width;        /* the stacked tensor's next slot, the same for all */
            pb->keep[(size_t)seqs[r] * pb->W + pb->width] = 1;
        }
        if (rc == 0) {
            PaddedRows pr = {pb, m->kern, seqs, slot};
            const RowCache cache = {padded_store, padded_attend, &pr, pb->workers};
            rc = model_forward_rows(m, tokens, pos, R, &cache, logits, flops);
        }
        if (rc == 0) {
            for (int r = 0; r < R; r++) pb->len[seqs[r]]++;
            pb->width++;
        } else {
            for (int b = 0; b < pb->B; b++) pb->keep[(size_t)b * pb->W + pb->width] = 0;
        }
    }
    free(pos);
    free(slot);
    return rc;
}

size_t padded_bytes_per_token(const PaddedBatch *pb) {
    return 2u * (size_t)pb->L * pb->NH * pb->hs * sizeof(float);
}

size_t padded_bytes_stacked(const PaddedBatch *pb) {
    return padded_bytes_per_token(pb) * (size_t)pb->B * pb->width;
}

size_t padded_bytes_used(const PaddedBatch *pb) {
    size_t n = 0;
    for (int b = 0; b < pb->B; b++) n += (size_t)pb->len[b];
    return padded_bytes_per_token(pb) * n;
}
