/* check_kvwaste.c — where a serving cache's memory goes, and the first-fit arena. */
#include <check.h>

#include "kvwaste.h"

/* 5 tokens held, 16 slots reserved: a sequence that ends at 12 tokens leaves 4 slots it
 * never fills; one that ends at 30 will fill all 11 empty ones. */
START_TEST(test_split_of_one_sequence) {
    KvWaste w = {0, 0, 0, 0};
    kvwaste_add_seq(&w, 5, 16, 12);
    ck_assert_double_eq(w.tokens, 5);
    ck_assert_double_eq(w.reservation, 7);
    ck_assert_double_eq(w.internal, 4);
    kvwaste_add_seq(&w, 5, 16, 30);
    ck_assert_double_eq(w.reservation, 7 + 11);
    ck_assert_double_eq(w.internal, 4);
    ck_assert_double_eq(w.external, 0);
    ck_assert_double_eq(kvwaste_total(&w), 32);
}
END_TEST

/* Regions placed first fit; a region that grows moves and leaves a hole, which a later
 * region that fits takes. Offsets worked out by hand. */
START_TEST(test_arena_first_fit) {
    KvArena a;
    ck_assert_int_eq(kvarena_init(&a, 3), 0);
    kvarena_set(&a, 0, 4);
    kvarena_set(&a, 1, 4);
    kvarena_set(&a, 2, 8);
    ck_assert_int_eq(a.off[0], 0);
    ck_assert_int_eq(a.off[1], 4);
    ck_assert_int_eq(a.off[2], 8);
    ck_assert_int_eq(kvarena_extent(&a), 16);
    kvarena_set(&a, 2, 8); /* unchanged: stays */
    ck_assert_int_eq(a.off[2], 8);
    kvarena_set(&a, 0, 8); /* grows: [0, 4) is too small, the end is the first fit */
    ck_assert_int_eq(a.off[0], 16);
    ck_assert_int_eq(kvarena_extent(&a) - kvarena_held(&a), 4);
    kvarena_set(&a, 1, 0); /* freed: the hole is [0, 8) */
    ck_assert_int_eq(kvarena_extent(&a) - kvarena_held(&a), 8);
    kvarena_set(&a, 1, 6); /* fits the hole at 0 */
    ck_assert_int_eq(a.off[1], 0);
    ck_assert_int_eq(kvarena_extent(&a), 24);
    ck_assert_int_eq(kvarena_held(&a), 22);
    kvarena_free(&a);
}
END_TEST

Suite *make_kvwaste_suite(void) {
    Suite *s = suite_create("kvwaste");
    TCase *tc = tcase_create("kvwaste");
    tcase_add_test(tc, test_split_of_one_sequence);
    tcase_add_test(tc, test_arena_first_fit);
    suite_add_tcase(s, tc);
    return s;
}
