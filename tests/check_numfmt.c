/* check_numfmt.c — numfmt.h against printf, the independent implementation: the same
 * characters for "%.9g" on 4 million floats spread over every exponent, and the text
 * read back with strtof gives the same bits. */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numfmt.h"

/* one float bit pattern in 1021 (prime: every exponent and many mantissa endings),
 * positive and negative, NaN and infinity included */
START_TEST(test_float_as_printf) {
    char got[64], want[64];
    long bad = 0, back = 0;
    uint32_t bad_bits = 0, back_bits = 0;
    for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 1021) {
        const uint32_t bits = (uint32_t)u;
        float x;
        memcpy(&x, &bits, sizeof x);
        const int n = numfmt_float(got, x);
        snprintf(want, sizeof want, "%.9g", (double)x);
        if (strcmp(got, want) != 0 || n != (int)strlen(want) || n >= NUMFMT_FLOAT_MAX)
            bad++, bad_bits = bits;
        if (isnan(x)) continue;
        const float y = strtof(got, NULL);
        if (memcmp(&x, &y, sizeof x) != 0) back++, back_bits = bits;
    }
    ck_assert_msg(bad == 0, "%ld floats differ from printf, e.g. bits 0x%08x", bad, bad_bits);
    ck_assert_msg(back == 0, "%ld floats do not read back, e.g. bits 0x%08x", back, back_bits);
}
END_TEST

/* the edges of the layout: where %g switches notation, rounding up into a new digit,
 * the largest and smallest floats, ties in the ninth digit */
START_TEST(test_float_edges) {
    static const float xs[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.1f, 1e-4f, 9.99999e-5f, 1e-5f,
                               123456789.0f, 999999999.0f, 1e9f, 999999940.0f, 3.4028235e38f,
                               1.17549435e-38f, 1.4e-45f, 0.5f, 1.5f, 2.5f, 1e10f, 16777216.0f,
                               16777217.0f, 0.3f, 100.0f, 1234.5f, 1e-40f, 8388608.5f,
                               INFINITY, -INFINITY, NAN};
    char got[64], want[64];
    for (size_t i = 0; i < sizeof xs / sizeof *xs; i++) {
        numfmt_float(got, xs[i]);
        snprintf(want, sizeof want, "%.9g", (double)xs[i]);
        ck_assert_str_eq(got, want);
    }
}
END_TEST

START_TEST(test_int_as_printf) {
    static const long long vs[] = {0, 1, -1, 9, 10, 99, 100, 123456789, -987654321, INT_MAX,
                                   INT_MIN, LLONG_MAX, LLONG_MIN};
    char got[64], want[64];
    for (size_t i = 0; i < sizeof vs / sizeof *vs; i++) {
        ck_assert_int_eq(numfmt_int(got, vs[i]), snprintf(want, sizeof want, "%lld", vs[i]));
        ck_assert_str_eq(got, want);
    }
}
END_TEST

Suite *make_numfmt_suite(void) {
    Suite *s = suite_create("numfmt");
    TCase *tc = tcase_create("numfmt");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_float_as_printf);
    tcase_add_test(tc, test_float_edges);
    tcase_add_test(tc, test_int_as_printf);
    suite_add_tcase(s, tc);
    return s;
}
