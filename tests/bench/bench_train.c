/* bench_train.c — kvscope's side of the training row of `make bench` (bench_train.py).
 *
 *   bench_train L NH C T B STEPS
 * builds a GPT-2 of that shape (V = 256, random init as `kvscope train`), runs one step
 * to warm up, then STEPS optimizer steps (forward + backward + clip + AdamW) on random
 * byte tokens, and prints key,value lines: the median seconds per step and its split
 * into forward, backward and update, tokens per second, and the CPU seconds of the
 * process per step (all threads: less disturbed than the wall clock on a shared machine).
 * Then where a step's time goes (Trainer.prof, train.h): phase_<name>_s and
 * phase_<name>_cpu_s per step, the forward by kind of kernel, each backward op summed
 * over the layers, the gradient norm and the update.
 * Threads: OMP_NUM_THREADS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels.h"
#include "rng.h"
#include "train.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: bench_train L NH C T B STEPS\n");
        return 2;
    }
    Config cfg = config_default();
    cfg.L = atoi(argv[1]), cfg.NH = atoi(argv[2]), cfg.C = atoi(argv[3]), cfg.N = atoi(argv[4]);
    const int B = atoi(argv[5]), steps = atoi(argv[6]);
    if (config_check(&cfg) || B < 1 || steps < 1) {
        fprintf(stderr, "bench_train: bad shape\n");
        return 2;
    }
    Trainer tr;
    if (trainer_init(&tr, &cfg, B, 1)) {
        fprintf(stderr, "bench_train: out of memory\n");
        return 1;
    }
    TrainOptions o = train_options_default();
    o.B = B;
    const size_t BT = (size_t)B * cfg.N;
    int *in = malloc(BT * sizeof *in), *tg = malloc(BT * sizeof *tg);
    double *tf = malloc((size_t)steps * sizeof *tf), *tb = malloc((size_t)steps * sizeof *tb),
           *tu = malloc((size_t)steps * sizeof *tu), *ts = malloc((size_t)steps * sizeof *ts);
    double cpu0 = 0.0, norm_s = 0.0;
    TrainProfile prof;
    if (!in || !tg || !tf || !tb || !tu || !ts) return 1;
    uint64_t s = 7;
    float loss = 0.0f;
    for (int k = -1; k < steps; k++) {
        if (k == 0) { /* the warm-up step is not counted */
            cpu0 = cpu_now();
            memset(&prof, 0, sizeof prof);
            tr.prof = &prof;
        }
        for (size_t i = 0; i < BT; i++) in[i] = (int)(rng_next(&s) % 256), tg[i] = (int)(rng_next(&s) % 256);
        const double t0 = now();
        loss = trainer_forward(&tr, in, tg);
        const double t1 = now();
        trainer_backward(&tr);
        const double t2 = now();
        trainer_grad_norm(&tr);
        const double tn = now();
        trainer_update(&tr, &o, 1e-4f, k + 2);
        const double t3 = now();
        if (k >= 0) tf[k] = t1 - t0, tb[k] = t2 - t1, tu[k] = t3 - t2, ts[k] = t3 - t0;
        if (k >= 0) norm_s += tn - t2;
    }
    const double cpu = (cpu_now() - cpu0) / steps, step = median(ts, steps);
    printf("kernels,%s\nthreads,%d\nloss,%g\n", kern_name(tr.lv), kern_threads(), (double)loss);
    printf("cpu_s_per_step,%.6f\n", cpu);
    printf("step_s,%.6f\nforward_s,%.6f\nbackward_s,%.6f\nupdate_s,%.6f\ntokens_per_s,%.1f\n", step,
           median(tf, steps), median(tb, steps), median(tu, steps), (double)BT / step);
    for (int p = 0; p < TP_N; p++)
        printf("phase_%s_s,%.6f\nphase_%s_cpu_s,%.6f\n", train_phase_name(p), prof.wall[p] / steps,
               train_phase_name(p), prof.cpu[p] / steps);
    printf("phase_upd_grad_norm_s,%.6f\n", norm_s / steps);
    trainer_free(&tr);
    free(in), free(tg), free(tf), free(tb), free(tu), free(ts);
    return 0;
}
