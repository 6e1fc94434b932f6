/* train_heads.c — the best induction, previous-token and sink heads of a model in
 * training, read from the trainer's own attention weights (train.h). Cheaper than
 * heads.h's decode-step measurement, and with the run's start byte in front, so a
 * progress line can tell whether the copying circuit has formed. */
#include <math.h>

#include "train.h"

/* Weight of layer l, sequence b, head h, query i on key j, in the last forward. */
static float att_at(const Trainer *tr, int l, int b, int h, int i, int j) {
    const size_t T = (size_t)tr->T, NH = (size_t)tr->model.cfg.NH;
    const size_t base = (size_t)l * tr->B * NH * T * T;
    return tr->a.att[base + (((size_t)b * NH + (size_t)h) * T + (size_t)i) * T + (size_t)j];
}

/* Mean weight of head (l, h) from each token i >= s + p on i − p + 1, over the batch. */
static double induction_of(const Trainer *tr, int l, int h, const int *periods, int s) {
    double sum = 0.0;
    long n = 0;
    for (int b = 0; b < tr->B; b++)
        for (int i = s + periods[b]; i < tr->T; i++, n++)
            sum += att_at(tr, l, b, h, i, i - periods[b] + 1);
    return n ? sum / (double)n : 0.0;
}

/* Mean weight of head (l, h) on key i − off over queries lo <= i < hi (key 0 when
 * off is -1), over the batch. */
static double weight_on(const Trainer *tr, int l, int h, int off, int lo, int hi) {
    double sum = 0.0;
    long n = 0;
    for (int b = 0; b < tr->B; b++)
        for (int i = lo; i < hi; i++, n++) sum += att_at(tr, l, b, h, i, off < 0 ? 0 : i - off);
    return n ? sum / (double)n : 0.0;
}

void trainer_head_scores(Trainer *tr, const Corpus *c, const TrainOptions *o, int T,
                         float *induction, float *prev_token, float *sink) {
    const Config *cfg = &tr->model.cfg;
    const int s = o->bos >= 0 ? 1 : 0, half = T / 2;
    int periods[4096];
    const int nb = tr->B0 < 4096 ? tr->B0 : 4096; /* sequences: periods[] holds 4096 */
    if (trainer_set_batch(tr, nb, T)) {
        *induction = *prev_token = *sink = NAN;
        return;
    }
    /* periodic random bytes; a stream of its own, apart from the training batches */
    CorpusMix mix = {.B = nb, .T = T, .bos = o->bos, .nrep = nb, .period_min = o->period_min,
                     .period_max = o->period_max < T / 2 ? o->period_max : T / 2};
    corpus_batch(c, o->seed ^ 0x6865616473ull, 0, &mix, tr->inputs, tr->targets, periods);
    trainer_forward(tr, tr->inputs, NULL);
    double best = 0.0;
    for (int l = cfg->L > 1 ? 1 : 0; l < cfg->L; l++)
        for (int h = 0; h < cfg->NH; h++) best = fmax(best, induction_of(tr, l, h, periods, s));
    *induction = (float)best;
    /* validation text, windows 0 .. B−1 (repeated when there are fewer) */
    const size_t nw = corpus_val_windows(c, T);
    for (int b = 0; b < tr->B && nw; b++)
        corpus_val_window(c, (size_t)b % nw, T, o->bos, tr->inputs + (size_t)b * T,
                          tr->targets + (size_t)b * T);
    trainer_forward(tr, tr->inputs, NULL);
    double prev = 0.0, sk = 0.0;
    for (int l = 0; l < cfg->L; l++)
        for (int h = 0; h < cfg->NH; h++) {
            const double lo = weight_on(tr, l, h, 1, s + 1, half), hi = weight_on(tr, l, h, 1, half, T);
            prev = fmax(prev, fmin(lo, hi));
            sk = fmax(sk, weight_on(tr, l, h, -1, 1, T));
        }
    *prev_token = (float)prev;
    *sink = (float)sk;
    trainer_set_batch(tr, tr->B0, cfg->N);
}
