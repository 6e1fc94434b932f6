/* trace_step.c — the functions one plain decode step runs, each once, in the order it is
 * first entered: what `make check-reading` holds src/engine/README.md's tour against.
 *
 * The engine is compiled with -finstrument-functions (Makefile: check-reading), so every
 * function it enters first calls __cyg_profile_func_enter below with its own address;
 * this program records those addresses during one decode step and prints them, one a
 * line; tests/reading.sh names them (addr2line) and compares. The step: the built-in
 * model at a small width, --kernels plain, no observer, an fp32 cache, the second decode
 * step after a prompt of 8 tokens (the cache and the activations already have room, as
 * at almost every step). */
#include <stdio.h>

#include "generate.h"
#include "model.h"

enum { MAX_FN = 1024 };
static void *seen[MAX_FN];
static int nseen, tracing;

__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void *fn, void *site);
__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void *fn, void *site);

void __cyg_profile_func_enter(void *fn, void *site) {
    (void)site;
    if (!tracing) return;
    for (int i = 0; i < nseen; i++)
        if (seen[i] == fn) return;
    if (nseen < MAX_FN) seen[nseen++] = fn;
}

void __cyg_profile_func_exit(void *fn, void *site) {
    (void)fn;
    (void)site;
}

int main(void) {
    Config cfg = config_default();
    cfg.L = 2, cfg.NH = 4, cfg.C = 64, cfg.N = 64;
    Model m;
    Generator g;
    const int prompt[8] = {72, 101, 108, 108, 111, 32, 75, 86};
    if (model_init_random(&m, &cfg, 1) || model_set_kernels(&m, KERN_PLAIN) ||
        generator_init(&g, &m, GEN_CACHE) || generator_prefill(&g, prompt, 8, NULL) ||
        generator_decode(&g, generator_argmax(&g), 1, NULL)) {
        fprintf(stderr, "trace_step: the model did not run\n");
        return 1;
    }
    const int next = generator_argmax(&g);
    tracing = 1;
    const int rc = generator_decode(&g, next, 2, NULL);
    tracing = 0;
    if (rc) {
        fprintf(stderr, "trace_step: the decode step failed\n");
        return 1;
    }
    for (int i = 0; i < nseen; i++) printf("%p\n", seen[i]);
    generator_free(&g);
    model_free(&m);
    return 0;
}
