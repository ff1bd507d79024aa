/* Unit tests for api/resources: cases in tests/data/resources/ops.tsv plus
 * storage tests (inline -> heap growth, copy, remove, owned names). */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/resources.h"
#include "tests/unit/testutil.h"

Suite *nw_resources_suite(void);

static cJSON *parse_json(const char *s, const char *where)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(s, strlen(s) + 1, &end, 1); /* length includes the NUL */
    ck_assert_msg(j != NULL, "%s: bad JSON in case file: %s", where, s);
    return j;
}

static void load(nw_resources_t *r, const char *json, const char *where)
{
    cJSON *j = parse_json(json, where);
    nw_err_t err = {0};
    ck_assert_msg(nw_resources_from_json(r, j, "x", &err) == NW_OK, "%s: %s: %s", where, err.path,
                  err.msg);
    cJSON_Delete(j);
}

/* Does r print as the JSON object `want`? On mismatch, the printed form goes to *got. */
static bool same_json(const nw_resources_t *r, const char *want, const char *where, char **got)
{
    cJSON *w = parse_json(want, where), *g = nw_resources_to_json(r);
    ck_assert_ptr_nonnull(g);
    bool eq = cJSON_Compare(w, g, 1);
    *got = cJSON_PrintUnformatted(g);
    cJSON_Delete(w);
    cJSON_Delete(g);
    return eq;
}

/* one test per line of tests/data/resources/ops.tsv */
static const nw_test_cases_t *ops_table_cases;

START_TEST(ops_table)
{
    const nw_test_case_t *row = nw_test_case(ops_table_cases, _i);
    do {
        char *f[5];
        char where[64];
        snprintf(where, sizeof where, "ops.tsv:%d", row->lineno);
        ck_assert_msg(nw_test_split_tabs(row->line, f, 5) == 4, "%s: want 4 fields", where);
        const char *op = f[0];
        char *want = f[3];
        nw_resources_t a, b;
        nw_resources_init(&a);
        nw_resources_init(&b);
        nw_err_t err = {0};
        char *got = NULL;
        bool ok = true;
        if (strcmp(op, "parse") == 0) {
            cJSON *j = parse_json(f[1], where);
            nw_rc_t rc = nw_resources_from_json(&a, j, "resources.requests", &err);
            cJSON_Delete(j);
            if (strncmp(want, "error:", 6) == 0) {
                char *path = want + 6, *colon = strchr(path, ':');
                ck_assert_ptr_nonnull(colon);
                *colon = '\0';
                ok = rc != NW_OK && err.rc == rc && strcmp(err.path, path) == 0 &&
                     strstr(err.msg, colon + 1) && nw_resources_len(&a) == 0;
                *colon = ':';
                if (!ok)
                    got = strdup(err.path);
            } else {
                ok = rc == NW_OK && same_json(&a, want, where, &got);
            }
        } else if (strcmp(op, "fits") == 0) {
            load(&a, f[1], where);
            load(&b, f[2], where);
            const char *over = "unset";
            bool fits = nw_resources_fits(&a, &b, &over);
            char buf[300];
            if (fits)
                snprintf(buf, sizeof buf, "true%s", over ? "(first_over set)" : "");
            else
                snprintf(buf, sizeof buf, "false:%s", over ? over : "(null)");
            ok = strcmp(buf, want) == 0;
            got = strdup(buf);
        } else if (strcmp(op, "zero") == 0) {
            load(&a, f[1], where);
            ok = strcmp(nw_resources_is_zero(&a) ? "true" : "false", want) == 0;
        } else {
            load(&a, f[1], where);
            load(&b, f[2], where);
            nw_resources_t before;
            nw_resources_init(&before);
            ck_assert_int_eq(nw_resources_copy(&before, &a, NULL), NW_OK);
            nw_rc_t rc;
            if (strcmp(op, "add") == 0)
                rc = nw_resources_add(&a, &b, &err);
            else if (strcmp(op, "sub") == 0)
                rc = nw_resources_sub(&a, &b, &err);
            else if (strcmp(op, "max") == 0)
                rc = nw_resources_max(&a, &b, &err);
            else
                ck_abort_msg("%s: unknown op %s", where, op);
            if (strcmp(want, "erange") == 0) {
                /* unchanged on overflow */
                char *ga = NULL, *gb = NULL;
                cJSON *ja = nw_resources_to_json(&a), *jb = nw_resources_to_json(&before);
                ga = cJSON_PrintUnformatted(ja);
                gb = cJSON_PrintUnformatted(jb);
                ok = rc == NW_ERANGE && strcmp(ga, gb) == 0 && strstr(err.msg, "overflows");
                got = strdup(err.msg);
                free(ga);
                free(gb);
                cJSON_Delete(ja);
                cJSON_Delete(jb);
            } else {
                ok = rc == NW_OK && same_json(&a, want, where, &got);
            }
            nw_resources_cleanup(&before);
        }
        if (!ok) {
            ck_abort_msg("%s: %s %s %s: want %s, got %s (%s)", where, op, f[1], f[2], want,
                         got ? got : "?", err.msg);
        }
        free(got);
        nw_resources_cleanup(&a);
        nw_resources_cleanup(&b);
    } while (0);
}
END_TEST

START_TEST(storage)
{
    nw_resources_t r, c;
    nw_resources_init(&r);
    nw_resources_init(&c);
    nw_quantity_t q;
    /* well-known names stay inline without allocating */
    const char *known[] = {"cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu"};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(nw_resources_set(&r, known[i], nw_quantity_from_milli(i * 1000, 0), NULL),
                         NW_OK);
    ck_assert_ptr_null(r.heap);
    for (uint32_t i = 0; i < r.n; i++)
        ck_assert_int_eq(r.inl[i].owned, 0);
    /* grow past the inline capacity with owned names */
    char name[64];
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "example.com/res-%02d", 39 - i);
        ck_assert_int_eq(nw_resources_set(&r, name, nw_quantity_from_milli(i, 0), NULL), NW_OK);
    }
    ck_assert_ptr_nonnull(r.heap);
    ck_assert_uint_eq(nw_resources_len(&r), 45);
    for (size_t i = 1; i < nw_resources_len(&r); i++)
        ck_assert_int_lt(strcmp(nw_resources_name_at(&r, i - 1), nw_resources_name_at(&r, i)), 0);
    ck_assert(nw_resources_get(&r, "example.com/res-00", &q));
    ck_assert(q.milli == 39);
    ck_assert(!nw_resources_get(&r, "example.com/missing", &q));
    ck_assert(q.milli == 0);
    ck_assert(nw_resources_get_or_zero(&r, "memory").milli == 1000);
    /* replace keeps the count */
    ck_assert_int_eq(nw_resources_set(&r, "memory", nw_quantity_from_milli(5, 0), NULL), NW_OK);
    ck_assert_uint_eq(nw_resources_len(&r), 45);
    ck_assert(nw_resources_get_or_zero(&r, "memory").milli == 5);
    /* copy is deep */
    ck_assert_int_eq(nw_resources_copy(&c, &r, NULL), NW_OK);
    ck_assert(nw_resources_remove(&r, "example.com/res-07"));
    ck_assert(!nw_resources_remove(&r, "example.com/res-07"));
    ck_assert(nw_resources_remove(&r, "cpu"));
    ck_assert_uint_eq(nw_resources_len(&r), 43);
    ck_assert_uint_eq(nw_resources_len(&c), 45);
    ck_assert(nw_resources_get(&c, "example.com/res-07", NULL));
    /* a += a doubles, a -= a zeroes */
    ck_assert_int_eq(nw_resources_add(&c, &c, NULL), NW_OK);
    ck_assert(nw_resources_get_or_zero(&c, "example.com/res-00").milli == 78);
    ck_assert_int_eq(nw_resources_sub(&c, &c, NULL), NW_OK);
    ck_assert(nw_resources_is_zero(&c));
    /* empty names are refused */
    nw_err_t err = {0};
    ck_assert_int_eq(nw_resources_set(&r, "", nw_quantity_from_milli(1, 0), &err), NW_EINVAL);
    ck_assert_str_eq(err.msg, "resource name must not be empty");
    /* fits against itself, and the sub-milli rounding shows in fits */
    ck_assert(nw_resources_fits(&r, &r, NULL));
    nw_resources_cleanup(&r);
    nw_resources_cleanup(&c);
    nw_resources_cleanup(&c); /* idempotent */
    ck_assert_uint_eq(nw_resources_len(&c), 0);
}
END_TEST

START_TEST(json_roundtrip)
{
    const char *in = "{\"cpu\":\"1.5\",\"memory\":\"1.5Gi\",\"pods\":110,"
                     "\"vendor.example/widget\":\"2k\",\"ephemeral-storage\":\"20e9\"}";
    nw_resources_t r, back;
    nw_resources_init(&r);
    nw_resources_init(&back);
    load(&r, in, "json_roundtrip");
    cJSON *j = nw_resources_to_json(&r);
    char *s = cJSON_PrintUnformatted(j);
    ck_assert_str_eq(s, "{\"cpu\":\"1500m\",\"ephemeral-storage\":\"20e9\",\"memory\":\"1536Mi\","
                        "\"pods\":\"110\",\"vendor.example/widget\":\"2k\"}");
    ck_assert_int_eq(nw_resources_from_json(&back, j, "x", NULL), NW_OK);
    ck_assert_uint_eq(nw_resources_len(&back), nw_resources_len(&r));
    for (size_t i = 0; i < nw_resources_len(&r); i++)
        ck_assert_int_eq(nw_quantity_cmp(nw_resources_at(&r, i), nw_resources_at(&back, i)), 0);
    /* a failed parse leaves the list empty, even one that had content */
    cJSON *bad = parse_json("{\"cpu\":\"1\",\"memory\":\"x\"}", "json_roundtrip");
    ck_assert_int_eq(nw_resources_from_json(&back, bad, "spec.limits", NULL), NW_EINVAL);
    ck_assert_uint_eq(nw_resources_len(&back), 0);
    cJSON_Delete(bad);
    free(s);
    cJSON_Delete(j);
    nw_resources_cleanup(&r);
    nw_resources_cleanup(&back);
}
END_TEST

Suite *nw_resources_suite(void)
{
    Suite *s = suite_create("resources");
    TCase *tc = tcase_create("resources");
    ops_table_cases = nw_test_cases_lines("tests/data/resources/ops.tsv", 30);
    nw_test_add_cases(tc, ops_table, ops_table_cases);
    tcase_add_test(tc, storage);
    tcase_add_test(tc, json_roundtrip);
    suite_add_tcase(s, tc);
    return s;
}
