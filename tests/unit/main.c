/*
 * tests/unit/main.c — runs every Check suite. Suites are discovered by the
 * Makefile from tests/unit/test_<name>.c, each exporting nw_<name>_suite().
 * Run from the project root (data files are read from tests/data/).
 * Arguments select suites by name (several may be given; none: all of them).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonarena.h"

#define NW_SUITE(name) Suite *nw_##name##_suite(void);
#include "suites.h"
#undef NW_SUITE

static int selected(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    SRunner *sr = NULL;
    int found = 0;
    nw_jsonarena_install(); /* as cli/main.c does: the admission path runs on the arena */
#define NW_SUITE(name)                                                                             \
    if (selected(argc, argv, #name)) {                                                             \
        found++;                                                                                   \
        if (!sr)                                                                                   \
            sr = srunner_create(nw_##name##_suite());                                              \
        else                                                                                       \
            srunner_add_suite(sr, nw_##name##_suite());                                            \
    }
#include "suites.h"
#undef NW_SUITE
    if (!sr || (argc > 1 && found != argc - 1)) {
        fprintf(stderr, "no such suite among:");
        for (int i = 1; i < argc; i++)
            fprintf(stderr, " %s", argv[i]);
        fprintf(stderr, "\n");
        if (sr)
            srunner_free(sr);
        return 2;
    }
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
