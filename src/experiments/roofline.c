/* roofline.c — batch sizes against a decode step's FLOPs, bytes and time. See roofline.h. */
#include "roofline.h"

#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "sysinfo.h"

int roofline_sizes(int b_max, int *sizes) {
    int n = 0;
    for (int b = 1; b < b_max && n < ROOFLINE_MAX_POINTS - 1; b *= 2) sizes[n++] = b;
    sizes[n++] = b_max;
    return n;
}

/* *acc *= x, or -1 on overflow. */
static int mul(uint64_t *acc, uint64_t x) {
    if (x != 0 && *acc > UINT64_MAX / x) return -1;
    *acc *= x;
    return 0;
}

int roofline_bytes_needed(const Config *cfg, int b_max, int T, int steps, uint64_t *out) {
    uint64_t cache = 2 * sizeof(float), logits = sizeof(float);
    if (mul(&cache, (uint64_t)cfg->L) || mul(&cache, (uint64_t)b_max) ||
        mul(&cache, (uint64_t)T + (uint64_t)steps) || mul(&cache, (uint64_t)cfg->C) ||
        mul(&logits, (uint64_t)b_max) || mul(&logits, (uint64_t)cfg->V) || cache > UINT64_MAX - logits)
        return -1;
    *out = cache + logits;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int argmax(const float *v, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

/* One size: B rows of the same prompt, prefilled, then `steps` decode steps. */
static int one_size(Model *m, const int *tokens, int T, int steps, int B, float *lg, float **lgp,
                    int *seqs, int *toks, double *times, RoofPoint *p) {
    const Config *cfg = &m->cfg;
    PaddedBatch pb;
    if (padded_init(&pb, cfg->L, cfg->NH, cfg->C / cfg->NH, B, T + steps, 1)) return -1;
    int rc = 0;
    double t0 = now_seconds();
    for (int b = 0; b < B && rc == 0; b++) rc = padded_prefill(m, &pb, b, tokens, T, lg + (size_t)b * cfg->V, NULL);
    p->ttft_s = now_seconds() - t0;
    double flops = 0.0, kv = 0.0, weights = 0.0;
    for (int s = 0; s < steps && rc == 0; s++) {
        FlopCount f = {0};
        for (int b = 0; b < B; b++) {
            seqs[b] = b;
            toks[b] = argmax(lg + (size_t)b * cfg->V, cfg->V);
            lgp[b] = lg + (size_t)b * cfg->V;
        }
        t0 = now_seconds();
        rc = padded_decode(m, &pb, seqs, toks, B, lgp, &f);
        times[s] = now_seconds() - t0;
        flops += (double)flops_total(&f);
        weights += (double)f.weight_bytes; /* what the step's matmuls read, counted by it */
        kv += (double)B * (double)(T + s + 1) * (double)padded_bytes_per_token(&pb);
    }
    padded_free(&pb);
    if (rc) return -1;
    p->B = B;
    p->flops = flops / steps;
    p->bytes = weights / steps + kv / steps;
    qsort(times, (size_t)steps, sizeof *times, cmp_double);
    p->step_s = times[steps / 2];
    return 0;
}

int roofline_sweep(Model *m, const int *tokens, int T, int steps, int b_max, RoofPoint *pts, int *n) {
    int sizes[ROOFLINE_MAX_POINTS];
    *n = 0;
    if (steps < 1 || T < 1 || b_max < 1) return -1;
    const int ns = roofline_sizes(b_max, sizes);
    float *lg = malloc((size_t)b_max * (size_t)m->cfg.V * sizeof *lg);
    float **lgp = malloc((size_t)b_max * sizeof *lgp);
    int *seqs = malloc((size_t)b_max * sizeof *seqs), *toks = malloc((size_t)b_max * sizeof *toks);
    double *times = malloc((size_t)steps * sizeof *times);
    int rc = lg && lgp && seqs && toks && times ? 0 : -1;
    RoofPoint warm; /* one untimed B = 1 first: the first run pays for cold caches and pages */
    if (rc == 0) rc = one_size(m, tokens, T, steps, 1, lg, lgp, seqs, toks, times, &warm);
    for (int i = 0; i < ns && rc == 0; i++)
        if ((rc = one_size(m, tokens, T, steps, sizes[i], lg, lgp, seqs, toks, times, &pts[i])) == 0)
            *n = i + 1;
    free(lg);
    free(lgp);
    free(seqs);
    free(toks);
    free(times);
    return rc;
}
