/*
 * tests/unit/main.c — runs every Check suite. Suites are discovered by the
 * Makefile from tests/unit/test_<name>.c, each exporting nw_<name>_suite().
 * Run from the project root (data files are read from tests/data/).
 * An optional argument selects one suite by name.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#define NW_SUITE(name) Suite *nw_##name##_suite(void);
#include "suites.h"
#undef NW_SUITE

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    SRunner *sr = NULL;
#define NW_SUITE(name)                                                                             \
    if (!only || strcmp(only, #name) == 0) {                                                       \
        if (!sr)                                                                                   \
            sr = srunner_create(nw_##name##_suite());                                              \
        else                                                                                       \
            srunner_add_suite(sr, nw_##name##_suite());                                            \
    }
#include "suites.h"
#undef NW_SUITE
    if (!sr) {
        fprintf(stderr, "no such suite: %s\n", only ? only : "(none)");
        return 2;
    }
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
