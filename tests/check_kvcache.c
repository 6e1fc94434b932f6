/* check_kvcache.c — the cache itself (kvcache.h), without a model: reservations by
 * doubling under the context and a byte cap, drops and truncations in and out of range
 * (what stays where, which positions stay seen), and rows stored, kept as the storage
 * grows, and read back.
 * Rows are filled with values that name their slot, layer and lane, so every move is
 * checked exactly. */
#include <check.h>
#include <limits.h>
#include <string.h>

#include "kvcache.h"
#include "testutil.h"

enum { L = 2, NH = 2, hs = 4, C = NH * hs, N = 40 };

/* Token `pos`'s K row (V: the negative) of layer l. */
static void row_of(float *k, float *v, int l, int pos) {
    for (int i = 0; i < C; i++) {
        k[i] = (float)(1000 * l + 10 * pos + i);
        v[i] = -k[i];
    }
}

/* Append n tokens at positions n_seen.. as the engine does. */
static void append(KVCache *c, int n) {
    ck_assert_int_eq(kvcache_reserve(c, n), 0);
    for (int j = 0; j < n; j++)
        for (int l = 0; l < L; l++) {
            float k[C], v[C];
            row_of(k, v, l, c->n_seen + j);
            kvcache_store(c, l, c->len + j, k, v, c->n_seen + j);
        }
    c->len += n;
    c->n_seen += n;
}

/* Slot s of every layer holds position pos's rows. */
static void holds(KVCache *c, int s, int pos) {
    ck_assert_int_eq(c->pos[s], pos);
    for (int l = 0; l < L; l++) {
        const float *k, *v;
        float wk[C], wv[C];
        kvcache_layer(c, l, c->len, &k, &v);
        row_of(wk, wv, l, pos);
        ck_assert_mem_eq(k + (size_t)s * C, wk, sizeof wk);
        ck_assert_mem_eq(v + (size_t)s * C, wv, sizeof wv);
    }
}

START_TEST(test_reserve_doubles_within_context) {
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, L, NH, hs, N), 0);
    ck_assert_uint_eq(kvcache_bytes_reserved(&c), 0);
    append(&c, 1);
    ck_assert_int_eq(c.capacity, 16); /* the first reservation */
    append(&c, 16);
    ck_assert_int_eq(c.capacity, 32);
    append(&c, 20);
    ck_assert_int_eq(c.capacity, N); /* doubling stops at the context */
    ck_assert_int_eq(kvcache_reserve(&c, N - c.len), 0);
    ck_assert_int_eq(kvcache_reserve(&c, N - c.len + 1), -1); /* past it */
    ck_assert_int_eq(kvcache_reserve(&c, -1), -1);
    ck_assert_int_eq(c.len, 37);
    ck_assert_uint_eq(kvcache_bytes_used(&c), 37u * 2 * L * C * sizeof(float));
    ck_assert_uint_eq(kvcache_bytes_reserved(&c), (size_t)N * 2 * L * C * sizeof(float));
    for (int s = 0; s < c.len; s++) holds(&c, s, s);
    kvcache_free(&c);
}
END_TEST

/* A cap in bytes: never reserved past, refused (without allocating) once reached. */
START_TEST(test_reserve_under_a_cap) {
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, L, NH, hs, N), 0);
    const size_t per = kvcache_bytes_per_token(&c);
    kvcache_set_max_bytes(&c, 10 * per + per / 2); /* room for 10 tokens */
    ck_assert(kvcache_fits(&c, 10));
    ck_assert(!kvcache_fits(&c, 11));
    append(&c, 3);
    ck_assert_int_eq(c.capacity, 10); /* doubling rounded down to the cap */
    ck_assert_int_eq(kvcache_reserve(&c, 8), KVCACHE_OVER_BUDGET);
    ck_assert_int_eq(c.capacity, 10);
    append(&c, 7);
    ck_assert_int_eq(kvcache_reserve(&c, 1), KVCACHE_OVER_BUDGET);
    ck_assert_uint_le(kvcache_bytes_reserved(&c), 10 * per + per / 2);
    kvcache_free(&c);
}
END_TEST

/* Dropping slots: later ones move down with their positions; positions stay seen. */
START_TEST(test_drop) {
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, L, NH, hs, N), 0);
    append(&c, 8);
    ck_assert_int_eq(kvcache_drop(&c, 2, 3), 0); /* positions 2, 3, 4 go */
    ck_assert_int_eq(c.len, 5);
    ck_assert_int_eq(c.n_seen, 8);
    const int want[5] = {0, 1, 5, 6, 7};
    for (int s = 0; s < 5; s++) holds(&c, s, want[s]);
    append(&c, 1); /* the next token is position 8, in slot 5 */
    holds(&c, 5, 8);
    ck_assert_int_eq(kvcache_drop(&c, 0, 0), 0); /* nothing: fine */
    ck_assert_int_eq(kvcache_drop(&c, 6, 0), 0);
    ck_assert_int_eq(kvcache_drop(&c, 5, 1), 0); /* the newest */
    ck_assert_int_eq(c.len, 5);
    /* out of range: refused, nothing moved */
    const int bad[][2] = {{-1, 1}, {0, -1}, {0, 6}, {5, 1}, {6, 0}, {INT_MAX, 1}, {1, INT_MAX},
                          {INT_MIN, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(kvcache_drop(&c, bad[i][0], bad[i][1]) == -1, "drop(%d, %d) passed", bad[i][0],
                      bad[i][1]);
    ck_assert_int_eq(c.len, 5);
    for (int s = 0; s < 5; s++) holds(&c, s, want[s]);
    kvcache_free(&c);
}
END_TEST

/* Truncating: the newest tokens are taken back as if never appended. */
START_TEST(test_truncate) {
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, L, NH, hs, N), 0);
    append(&c, 6);
    ck_assert_int_eq(kvcache_truncate(&c, 4), 0);
    ck_assert_int_eq(c.len, 4);
    ck_assert_int_eq(c.n_seen, 4);
    append(&c, 1); /* position 4 again, in slot 4 */
    holds(&c, 4, 4);
    ck_assert_int_eq(kvcache_truncate(&c, 6), -1); /* more than it holds */
    ck_assert_int_eq(kvcache_truncate(&c, -1), -1);
    ck_assert_int_eq(kvcache_truncate(&c, 5), 0); /* all of it: a no-op */
    ck_assert_int_eq(c.len, 5);
    /* after a drop, positions seen stay seen: truncating takes the newest back */
    ck_assert_int_eq(kvcache_drop(&c, 0, 2), 0);
    ck_assert_int_eq(kvcache_truncate(&c, 2), 0);
    ck_assert_int_eq(c.n_seen, 4);
    holds(&c, 0, 2);
    holds(&c, 1, 3);
    ck_assert_int_eq(kvcache_truncate(&c, 0), 0);
    ck_assert_int_eq(c.n_seen, 2);
    kvcache_reset(&c);
    ck_assert_int_eq(c.len + c.n_seen, 0);
    ck_assert_int_eq(c.capacity, 16); /* the reservation stays */
    kvcache_free(&c);
}
END_TEST

/* Growing moves every layer's rows to the new storage: a cache that doubled twice
 * reads back, in every type, the bytes of one that held room for all from the start. */
START_TEST(test_growth_keeps_rows) {
    for (int dt = 0; dt < DT_COUNT; dt++) {
        KVCache grown, whole;
        ck_assert_int_eq(kvcache_init(&grown, L, NH, hs, N), 0);
        ck_assert_int_eq(kvcache_init(&whole, L, NH, hs, N), 0);
        ck_assert_int_eq(kvcache_set_dtype(&grown, (Dtype)dt), 0);
        ck_assert_int_eq(kvcache_set_dtype(&whole, (Dtype)dt), 0);
        ck_assert_int_eq(kvcache_reserve(&whole, N), 0);
        const int steps[] = {5, 12, 1, 17}; /* capacity 16, then 32, then 40 */
        for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
            append(&grown, steps[i]);
            append(&whole, steps[i]);
        }
        ck_assert_int_eq(grown.capacity, N);
        for (int l = 0; l < L; l++) {
            const float *gk, *gv, *wk, *wv;
            /* read back into the scratch of each, before the next layer reuses it */
            kvcache_layer(&grown, l, grown.len, &gk, &gv);
            kvcache_layer(&whole, l, whole.len, &wk, &wv);
            ck_assert_mem_eq(gk, wk, (size_t)grown.len * C * sizeof(float));
            ck_assert_mem_eq(gv, wv, (size_t)grown.len * C * sizeof(float));
        }
        if (dt == DT_FP32)
            for (int s = 0; s < grown.len; s++) holds(&grown, s, s);
        kvcache_free(&grown);
        kvcache_free(&whole);
    }
}
END_TEST

/* Every storage type: bytes by its formula, and a type changes only while empty. */
START_TEST(test_types) {
    const size_t row[DT_COUNT] = {4 * C, 2 * C, 2 * C, C + 4 * NH, (C + 31) / 32 * 34,
                                  (C + 31) / 32 * 18};
    for (int dt = 0; dt < DT_COUNT; dt++) {
        Dtype back;
        ck_assert_int_eq(dtype_parse(dtype_name((Dtype)dt), &back), 0);
        ck_assert_int_eq(back, dt);
        ck_assert_uint_eq(dtype_row_bytes((Dtype)dt, C, NH), row[dt]);
        KVCache c;
        ck_assert_int_eq(kvcache_init(&c, L, NH, hs, N), 0);
        ck_assert_int_eq(kvcache_set_dtype(&c, (Dtype)dt), 0);
        ck_assert_uint_eq(kvcache_bytes_per_token(&c), 2 * L * row[dt]);
        append(&c, 3);
        ck_assert_uint_eq(kvcache_bytes_used(&c), 3 * 2 * L * row[dt]);
        ck_assert_int_eq(kvcache_set_dtype(&c, DT_FP32), -1);
        kvcache_free(&c);
    }
    Dtype d;
    ck_assert_int_eq(dtype_parse("fp8", &d), -1);
    KVCache c;
    ck_assert_int_eq(kvcache_init(&c, L, NH, hs, N), 0);
    ck_assert_int_eq(kvcache_set_dtype(&c, DT_COUNT), -1);
    kvcache_free(&c);
}
END_TEST

Suite *make_kvcache_suite(void) {
    Suite *s = suite_create("kvcache");
    TCase *tc = tcase_create("cache");
    tcase_add_test(tc, test_reserve_doubles_within_context);
    tcase_add_test(tc, test_reserve_under_a_cap);
    tcase_add_test(tc, test_growth_keeps_rows);
    tcase_add_test(tc, test_drop);
    tcase_add_test(tc, test_truncate);
    tcase_add_test(tc, test_types);
    suite_add_tcase(s, tc);
    return s;
}
