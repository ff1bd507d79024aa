/*
 * tests/unit/admitcase.h — table-driven admission cases (tests/data/<kind>/NNN-*.yaml).
 *
 * A case file is a YAML stream:
 *   document 1: a JSON object (so tests/e2e/t_check can read it with python's json):
 *     {"expect": "allowed"}                      the object is admitted
 *     {"expect": ["spec.weight: Invalid value: 0: ...", ...]}   exactly these errors
 *     {"expect": [{"path": "spec", "contains": "static"}]}     at least these
 *     "patch": [...] | null      exact defaulting patch (null: no patch)
 *     "warnings": ["substring", ...]   each must appear in some warning
 *     "nowarnings": true         no warning at all
 *     "op": "UPDATE"             document 3 is the old object
 *   document 2: the object (input)
 *   document 3: the old object (UPDATE only)
 * Every case also checks idempotence: mutate, apply the patch, mutate again -> no
 * patch; and that validating the defaulted object gives the same answer.
 */
#ifndef NW_TESTS_ADMITCASE_H
#define NW_TESTS_ADMITCASE_H

/** Run one case file through nw_handlers_find(group, kind)'s handlers; fails the test
 * (ck_assert) on any mismatch. */
void nw_test_admit_case(const char *path, const char *group, const char *kind);

#endif
