/*
 * tests/unit/testutil.h — helpers for table-driven tests whose cases live in
 * tests/data/. Paths are relative to the project root (where tests run).
 */
#ifndef NW_TESTS_TESTUTIL_H
#define NW_TESTS_TESTUTIL_H

#include <stddef.h>

/** Read a whole file; returns a malloc'd NUL-terminated buffer (free with free())
 * and its length in *len (may be NULL). Aborts the test on failure. */
char *nw_test_read_file(const char *path, size_t *len);

/* Lines of a case file: blank lines and lines starting with '#' are skipped;
 * each kept line has its trailing newline removed. */
typedef struct {
    char **line;   /* owned */
    int *lineno;   /* 1-based line number of each kept line */
    int n;
    char *path;
} nw_test_lines_t;

/** Load a case file; aborts the test on failure. */
nw_test_lines_t *nw_test_lines_load(const char *path);

/** Free what nw_test_lines_load returned. */
void nw_test_lines_free(nw_test_lines_t *l);

/** Split s in place on tab characters into at most max fields; returns the count.
 * Fields keep their text exactly (no trimming); "\t" separates. */
int nw_test_split_tabs(char *s, char **fields, int max);

/** Split s in place on runs of whitespace (outside double quotes; quotes removed,
 * "" gives an empty field). Returns the count. */
int nw_test_split_ws(char *s, char **fields, int max);

/** Names of the regular files in dir whose names end with suffix, sorted;
 * returns the count and a malloc'd array of malloc'd "dir/name" paths. */
int nw_test_list_dir(const char *dir, const char *suffix, char ***out);

/** Free the array nw_test_list_dir returned. */
void nw_test_list_free(char **paths, int n);

#endif
