/* check_main.c — runs every suite; exits non-zero if any test failed. */
#include <check.h>
#include <stdlib.h>

#define SUITE(fn) Suite *fn(void);
#include "suites.h"
#undef SUITE

int main(void) {
    SRunner *sr = srunner_create(NULL);
#define SUITE(fn) srunner_add_suite(sr, fn());
#include "suites.h"
#undef SUITE
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
