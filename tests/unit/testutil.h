/*
 * tests/unit/testutil.h — helpers for table-driven tests whose cases live in
 * tests/data/. Paths are relative to the project root (where tests run).
 */
#ifndef NW_TESTS_TESTUTIL_H
#define NW_TESTS_TESTUTIL_H

#include <check.h>
#include <cjson/cJSON.h>
#include <stddef.h>

#include "api/node.h"
#include "api/pod.h"

/** Read a whole file; returns a malloc'd NUL-terminated buffer (free with free())
 * and its length in *len (may be NULL). Aborts the test on failure. */
char *nw_test_read_file(const char *path, size_t *len);

/** A pod's record (api/pod.h) from its JSON (borrowed), for tests of code that reads
 * records; a pod without metadata.name is decoded as if it were named "pod". The record
 * stays valid until the test program exits (kept in a process-wide list, so sanitizers
 * see no leak). Aborts the test if the pod cannot be decoded. */
const nw_pod_t *nw_test_pod(const cJSON *json);

/** The same for a Node's and a NodeClaim's record (api/node.h), kept as nw_test_pod keeps
 * pods; one without metadata.name is decoded as if named "node" ("nodeclaim"). */
const nw_node_t *nw_test_node(const cJSON *json);
const nw_node_claim_t *nw_test_node_claim(const cJSON *json);

/** Split s in place on tab characters into at most max fields; returns the count.
 * Fields keep their text exactly (no trimming); "\t" separates. */
int nw_test_split_tabs(char *s, char **fields, int max);

/** Split s in place on runs of whitespace (outside double quotes; quotes removed,
 * "" gives an empty field). Returns the count. */
int nw_test_split_ws(char *s, char **fields, int max);

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
    char *path; /* the case file */
    char *text; /* line tables: the kept line (blank lines and lines starting with '#'
                 * are skipped, the newline removed); JSON tables: the element as JSON
                 * text; file cases: NULL. Never modified. */
    char *line; /* a fresh copy of text for the test, made by nw_test_case (split it
                 * in place at will); NULL for file cases */
    int lineno; /* line tables: its 1-based line number; else 0 */
    char *name; /* "path" or "path:lineno", for messages */
} nw_test_case_t;

typedef struct {
    char *source; /* the folder or case file */
    nw_test_case_t *v;
    int n;
    char *error; /* why loading failed (NULL: loaded, n >= min) */
} nw_test_cases_t;

/** Every file of dir ending with suffix, sorted by name; at least min of them. */
const nw_test_cases_t *nw_test_cases_dir(const char *dir, const char *suffix, int min);

/** Every kept line of a case file; at least min. */
const nw_test_cases_t *nw_test_cases_lines(const char *path, int min);

/** Every element of the top-level JSON array in path; case->line is its compact JSON
 * text and case->name "path[i]" (and the element's "name" when it has one); at least min. */
const nw_test_cases_t *nw_test_cases_json(const char *path, int min);

/** Add fn as a loop test over every case of cs (one failing test if cs did not load). */
void nw_test_add_cases(TCase *tc, const TTest *fn, const nw_test_cases_t *cs);

/** Case i of cs (inside fn: nw_test_case(cs, _i)), with case->line a fresh copy of
 * case->text. */
const nw_test_case_t *nw_test_case(const nw_test_cases_t *cs, int i);

#endif
