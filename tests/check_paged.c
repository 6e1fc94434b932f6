/* check_paged.c — the paged KV cache (paged.h): block accounting, logits equal to
 * the contiguous cache, and the memory columns of `kvscope batch --paged`.
 *
 * Tolerance: none on logits, equal to the contiguous cache's (TOL 0; the worst
 * difference is reported). Byte counts are exact, against closed forms computed here. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache.h"
#include "model.h"
#include "outdir.h"
#include "paged.h"
#include "testutil.h"

#define TOL 0.0

static int cdiv(int a, int b) { return (a + b - 1) / b; }

START_TEST(test_blocks_taken_only_when_full) {
    PagedCache pc;
    ck_assert_int_eq(paged_init(&pc, 2, 2, 4, 4, 10, 3, 40), 0);
    const size_t block_bytes = 2 * 2 * 4 * 8 * sizeof(float);
    ck_assert_uint_eq(paged_block_bytes(&pc), block_bytes);
    /* grow sequence 1 one token at a time: ⌈len / 4⌉ blocks after each */
    for (int len = 1; len <= 13; len++) {
        ck_assert_int_eq(paged_reserve(&pc, 1, 1), 0);
        pc.seq[1].len++; /* what paged_forward does after the rows ran */
        ck_assert_int_eq(pc.seq[1].n_blocks, cdiv(len, 4));
        ck_assert_int_eq(paged_check(&pc), 0);
    }
    ck_assert_int_eq(paged_reserve(&pc, 0, 9), 0);
    pc.seq[0].len = 9;
    ck_assert_int_eq(paged_blocks_owned(&pc), 4 + 3);
    ck_assert_uint_eq(paged_bytes_reserved(&pc), 7 * block_bytes);
    ck_assert_uint_eq(paged_bytes_used(&pc), (13 + 9) * 2 * 2 * 8 * sizeof(float));
    /* 3 blocks left: 13 more tokens need 4 → refused, nothing taken */
    ck_assert_int_eq(paged_reserve(&pc, 2, 13), PAGED_NO_BLOCKS);
    ck_assert_int_eq(pc.seq[2].n_blocks, 0);
    ck_assert_int_eq(pc.n_free, 3);
    ck_assert_int_eq(paged_reserve(&pc, 2, 41), -1); /* past max_len */
    /* release: all back, and the freed blocks are the next ones handed out */
    int first = pc.seq[1].table[0];
    paged_release(&pc, 1);
    ck_assert_int_eq(pc.n_free, 7);
    ck_assert_int_eq(paged_check(&pc), 0);
    ck_assert_int_eq(paged_reserve(&pc, 2, 1), 0);
    ck_assert_int_eq(pc.seq[2].table[0], first);
    pc.seq[2].len = 1;
    paged_release(&pc, 0);
    paged_release(&pc, 2);
    ck_assert_int_eq(pc.n_free, pc.n_blocks);
    ck_assert_uint_eq(paged_bytes_reserved(&pc), 0);
    ck_assert_int_eq(paged_check(&pc), 0);
    paged_free(&pc);
}
END_TEST

/* The checker itself must catch a block owned twice and a lost block. */
START_TEST(test_check_catches_bad_books) {
    PagedCache pc;
    ck_assert_int_eq(paged_init(&pc, 1, 1, 2, 2, 6, 2, 12), 0);
    ck_assert_int_eq(paged_reserve(&pc, 0, 3), 0);
    ck_assert_int_eq(paged_reserve(&pc, 1, 2), 0);
    pc.seq[0].len = 3;
    pc.seq[1].len = 2;
    ck_assert_int_eq(paged_check(&pc), 0);
    int saved = pc.seq[1].table[0];
    pc.seq[1].table[0] = pc.seq[0].table[1]; /* owned twice, and one block lost */
    ck_assert_int_eq(paged_check(&pc), -1);
    pc.seq[1].table[0] = saved;
    pc.n_free--; /* a free block lost */
    ck_assert_int_eq(paged_check(&pc), -1);
    pc.n_free++;
    pc.seq[0].len = 5; /* length needs 3 blocks, owns 2 */
    ck_assert_int_eq(paged_check(&pc), -1);
    paged_free(&pc);
}
END_TEST

/* Paged vs contiguous: three sequences, block size 3 (blocks split prompts at odd
 * places), prefill + decode steps; one finishes early and its blocks are reused. */
START_TEST(test_paged_logits_equal_contiguous) {
    enum { B = 3, V = 40 };
    static const int LEN[B] = {8, 2, 5}, STEPS[B] = {6, 2, 7};
    Config cfg = tiny_config(2, 2, 16, 64, V);
    Model m;
    ck_assert_int_eq(model_init_random(&m, &cfg, 11), 0);
    int tok[B][20];
    float ref[B][8][V], lg[B][V];
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < LEN[b] + STEPS[b]; t++) tok[b][t] = (3 * b + 7 * t + 2) % V;
        KVCache c;
        ck_assert_int_eq(kvcache_init(&c, 2, 2, 8, 64), 0);
        ck_assert_int_eq(model_forward(&m, &c, tok[b], LEN[b], ref[b][0], NULL, NULL), 0);
        for (int s = 1; s <= STEPS[b]; s++)
            ck_assert_int_eq(model_forward(&m, &c, &tok[b][LEN[b] + s - 1], 1, ref[b][s], NULL, NULL), 0);
        kvcache_free(&c);
    }
    PagedCache pc;
    ck_assert_int_eq(paged_init(&pc, 2, 2, 8, 3, 9, B, 20), 0);
    double worst = 0.0;
    for (int b = 0; b < B; b++) {
        int seqs[8];
        float *lp[8] = {0};
        for (int i = 0; i < LEN[b]; i++) seqs[i] = b;
        lp[LEN[b] - 1] = lg[b];
        ck_assert_int_eq(paged_forward(&m, &pc, seqs, tok[b], LEN[b], lp, NULL), 0);
        for (int v = 0; v < V; v++) worst = fmax(worst, fabs((double)lg[b][v] - ref[b][0][v]));
    }
    for (int s = 1; s <= 7; s++) {
        int seqs[B], toks[B], R = 0;
        float *lp[B];
        for (int b = 0; b < B; b++)
            if (STEPS[b] >= s) seqs[R] = b, toks[R] = tok[b][LEN[b] + s - 1], lp[R] = lg[R], R++;
        ck_assert_int_eq(paged_forward(&m, &pc, seqs, toks, R, lp, NULL), 0);
        int need = 0;
        for (int r = 0; r < R; r++) {
            int b = seqs[r];
            for (int v = 0; v < V; v++) worst = fmax(worst, fabs((double)lg[r][v] - ref[b][s][v]));
            need += cdiv(LEN[b] + s, 3);
        }
        ck_assert_int_eq(paged_check(&pc), 0);
        ck_assert_int_eq(paged_blocks_owned(&pc), need);
        for (int r = 0; r < R; r++)
            if (STEPS[seqs[r]] == s) paged_release(&pc, seqs[r]);
    }
    ck_assert_msg(worst <= TOL, "paged vs contiguous: max |dlogit| %g > %g", worst, TOL);
    ck_assert_int_eq(pc.n_free, pc.n_blocks); /* all returned */
    /* a full pool refuses and leaves the books as they were */
    paged_free(&pc);
    ck_assert_int_eq(paged_init(&pc, 2, 2, 8, 3, 2, 1, 20), 0);
    ck_assert_int_eq(paged_forward(&m, &pc, (int[]){0, 0, 0, 0, 0, 0, 0}, tok[0], 7, NULL, NULL),
                     PAGED_NO_BLOCKS);
    ck_assert_int_eq(pc.n_free, 2);
    ck_assert_int_eq(pc.seq[0].len, 0);
    ck_assert_int_eq(paged_check(&pc), 0);
    paged_free(&pc);
    model_free(&m);
}
END_TEST

/* `kvscope batch --paged`: every row of memory.csv against closed forms from the
 * prompt lengths and steps alone. */
START_TEST(test_cli_memory_columns) {
    char dir[64], out[128], path[160];
    ck_assert_ptr_nonnull(make_temp_dir(dir, sizeof dir));
    snprintf(out, sizeof out, "%s/out", dir);
    static const int T[3] = {9, 3, 5}, S[3] = {7, 2, 4};
    const char *args[] = {"batch", "--layers", "1", "--heads", "2", "--dim", "16", "--ctx", "48",
                          "--prompt", "abcdefghi", "--prompt", "xyz", "--prompt", "hello",
                          "--steps", "7,2,4", "--paged", "--block-size", "4", "--out", out,
                          "--quiet", NULL};
    ck_assert_int_eq(run_kvscope(args, NULL, NULL), 0);
    snprintf(path, sizeof path, "%s/memory.csv", out);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "step,live,tokens,bytes_used,bytes_prealloc,bytes_doubling,bytes_paged,blocks\n");
    const unsigned long bpt = 2 * 1 * 16 * 4, block = 4 * bpt;
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        int step, live, blocks;
        unsigned long tokens, used, pre, dbl, pag;
        ck_assert_int_eq(sscanf(line, "%d,%d,%lu,%lu,%lu,%lu,%lu,%d", &step, &live, &tokens, &used,
                                &pre, &dbl, &pag, &blocks), 8);
        int l = 0, tk = 0, bl = 0;
        unsigned long d = 0;
        for (int b = 0; b < 3; b++)
            if (S[b] >= step) {
                int len = T[b] + step, cap = 16;
                l++;
                tk += len;
                bl += cdiv(len, 4);
                while (cap < len) cap *= 2; /* kvcache.c: 16, doubling */
                d += (unsigned long)cap * bpt;
            }
        ck_assert_int_eq(step, rows);
        ck_assert_int_eq(live, l);
        ck_assert_uint_eq(tokens, (unsigned long)tk);
        ck_assert_uint_eq(used, tk * bpt);
        ck_assert_uint_eq(pre, l * 48 * bpt);
        ck_assert_uint_eq(dbl, d);
        ck_assert_int_eq(blocks, bl);
        ck_assert_uint_eq(pag, bl * block);
        rows++;
    }
    fclose(f);
    ck_assert_int_eq(rows, 8);
    /* waste.csv: the split of each way's memory, worked out from T and S alone. External
     * fragmentation: prompt 2 finishes after step 2 and leaves its region empty below
     * prompt 3's for steps 3 and 4 (48 slots preallocated, 16 with doubling: no one grows
     * past 16 tokens); the paged pool has none. */
    double tok = 0, res[3] = {0, 0, 0}, in[3] = {0, 0, 0};
    for (int step = 0; step < 8; step++)
        for (int b = 0; b < 3; b++)
            if (S[b] >= step) {
                const int t = T[b] + step, fin = T[b] + S[b], r[3] = {48, 16, cdiv(t, 4) * 4};
                tok += t;
                for (int i = 0; i < 3; i++) {
                    const int will = r[i] < fin ? r[i] : fin;
                    res[i] += will - t;
                    in[i] += r[i] - will;
                }
            }
    const double ext[3] = {2 * 48, 2 * 16, 0};
    snprintf(path, sizeof path, "%s/waste.csv", out);
    f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    static const char *const name[3] = {"preallocate", "doubling", "paged"};
    for (int i = 0; i < 3; i++) {
        char nm[32];
        double bt, br, bi, be, pt, pr, pi, pe;
        ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
        ck_assert_int_eq(sscanf(line, "%31[^,],%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", nm, &bt, &br, &bi, &be,
                                &pt, &pr, &pi, &pe), 9);
        ck_assert_str_eq(nm, name[i]);
        ck_assert_double_eq(bt, tok * bpt);
        ck_assert_double_eq(br, res[i] * bpt);
        ck_assert_double_eq(bi, in[i] * bpt);
        ck_assert_double_eq(be, ext[i] * bpt);
        ck_assert_double_eq_tol(pt + pr + pi + pe, 100.0, 0.25); /* four shares rounded to 0.1 */
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/summary.csv", out);
    char *s = read_file(path, NULL);
    ck_assert_ptr_nonnull(s);
    ck_assert_msg(strstr(s, "\nmax_abs_diff,0\n") && strstr(s, "\nbooks_ok,1\n"), "%s", s);
    free(s);
    snprintf(path, sizeof path, "%s/blocks.png", out);
    char *png = read_file(path, NULL);
    ck_assert_ptr_nonnull(png);
    ck_assert(memcmp(png, "\x89PNG", 4) == 0);
    free(png);
    remove_tree(dir);
}
END_TEST

Suite *make_paged_suite(void) {
    Suite *s = suite_create("paged");
    TCase *tc = tcase_create("paged");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_blocks_taken_only_when_full);
    tcase_add_test(tc, test_check_catches_bad_books);
    tcase_add_test(tc, test_paged_logits_equal_contiguous);
    suite_add_tcase(s, tc);
    tc = tcase_create("paged_cli");
    tcase_set_tags(tc, "bin"); /* runs bin/kvscope: not in make test */
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cli_memory_columns);
    suite_add_tcase(s, tc);
    return s;
}
