/*
 * tests/unit/testutil.h — helpers for table-driven tests whose cases live in
 * tests/data/. Paths are relative to the project root (where tests run).
 */
#ifndef NW_TESTS_TESTUTIL_H
#define NW_TESTS_TESTUTIL_H

#include <check.h>
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

/** Load a case file; aborts the test on failure, and when the file keeps no line. */
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
 * returns the count and a malloc'd array of malloc'd "dir/name" paths. Aborts the
 * test when dir is missing or holds no such file. */
int nw_test_list_dir(const char *dir, const char *suffix, char ***out);

/** Free the array nw_test_list_dir returned. */
void nw_test_list_free(char **paths, int n);

/* ---- data cases, one Check test each ------------------------------------------
 * Cases are loaded while the suite is built: every file of a folder whose name ends
 * with a suffix (nw_test_cases_dir), or every kept line of a case file
 * (nw_test_cases_lines). nw_test_add_cases turns the table into a loop test
 * (tcase_add_loop_test): iteration i runs case i, so every failing case is reported
 * on its own and its message names it (case->name, "dir/file" or "file:line").
 * A folder or file that is missing or holds fewer than `min` cases (at least 1) is
 * never a pass with nothing tested: nw_test_add_cases then adds one test that fails
 * naming the source and the reason. Tables live until the program exits. */
typedef struct {
    char *path;   /* the case file */
    char *line;   /* line tables: the kept line (the test may modify it); else NULL */
    int lineno;   /* line tables: its 1-based line number; else 0 */
    char *name;   /* "path" or "path:lineno", for messages */
} nw_test_case_t;

typedef struct {
    char *source; /* the folder or case file */
    nw_test_case_t *v;
    int n;
    char *error;  /* why loading failed (NULL: loaded, n >= min) */
} nw_test_cases_t;

/** Every file of dir ending with suffix, sorted by name; at least min of them. */
const nw_test_cases_t *nw_test_cases_dir(const char *dir, const char *suffix, int min);

/** Every kept line of a case file (as nw_test_lines_load keeps them); at least min. */
const nw_test_cases_t *nw_test_cases_lines(const char *path, int min);

/** Add fn as a loop test over every case of cs (one failing test if cs did not load). */
void nw_test_add_cases(TCase *tc, const TTest *fn, const nw_test_cases_t *cs);

/** Case i of cs (inside fn: nw_test_case(cs, _i)). */
const nw_test_case_t *nw_test_case(const nw_test_cases_t *cs, int i);

#endif
