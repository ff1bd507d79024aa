/* Unit tests for api/taints: matching rules (tests/data/taints/match.jsonl), list
 * checks (lists.jsonl) and parsing (parse.jsonl). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/taints.h"
#include "tests/unit/testutil.h"

Suite *nw_taints_suite(void);

static cJSON *parse_line(const nw_test_case_t *row)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(row->line, strlen(row->line) + 1, &end, 1);
    ck_assert_msg(j != NULL, "%s: bad JSON", row->name);
    return j;
}

static cJSON *wrap(const cJSON *item)
{
    cJSON *arr = cJSON_CreateArray();
    cJSON_AddItemToArray(arr, cJSON_Duplicate(item, 1));
    return arr;
}

/* one test per line of tests/data/taints/match.jsonl */
static const nw_test_cases_t *match_cases_cases;

START_TEST(match_cases)
{
    const nw_test_case_t *row = nw_test_case(match_cases_cases, _i);
    do {
        cJSON *j = parse_line(row);
        const char *rule = cJSON_GetObjectItemCaseSensitive(j, "rule")->valuestring;
        cJSON *ta = wrap(cJSON_GetObjectItemCaseSensitive(j, "taint"));
        cJSON *to = wrap(cJSON_GetObjectItemCaseSensitive(j, "tol"));
        nw_taints_t taints;
        nw_tolerations_t tols;
        nw_err_t err = {0};
        ck_assert_msg(nw_taints_parse(ta, "t", &taints, &err) == NW_OK, "%s: %s", rule, err.msg);
        ck_assert_msg(nw_tolerations_parse(to, "t", &tols, &err) == NW_OK, "%s: %s", rule, err.msg);
        bool want = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "tolerates"));
        bool got = nw_tolerations_match(&tols.v[0], &taints.v[0]);
        ck_assert_msg(got == want, "%s:%d: %s: got %d want %d", row->path, row->lineno, rule, got,
                      want);
        ck_assert_int_eq(nw_tolerations_tolerate(&tols, &taints.v[0]), want);
        nw_taints_cleanup(&taints);
        nw_tolerations_cleanup(&tols);
        cJSON_Delete(ta);
        cJSON_Delete(to);
        cJSON_Delete(j);
    } while (0);
}
END_TEST

static void check_mode(const nw_taints_t *t, const nw_tolerations_t *tols, nw_taints_mode_t mode,
                       const cJSON *want, const char *ctx)
{
    const nw_taint_t *bad = nw_tolerations_first_untolerated(t, tols, mode);
    if (cJSON_IsNull(want)) {
        char m[256] = "";
        if (bad)
            nw_taints_untolerated_msg(bad, m, sizeof m);
        ck_assert_msg(bad == NULL, "%s: expected all tolerated, got %s", ctx, m);
        ck_assert(nw_tolerations_tolerate_all(t, tols, mode));
    } else {
        ck_assert_msg(bad != NULL, "%s: expected %s", ctx, want->valuestring);
        char m[256];
        nw_taints_untolerated_msg(bad, m, sizeof m);
        ck_assert_msg(strcmp(m, want->valuestring) == 0, "%s: got %s want %s", ctx, m,
                      want->valuestring);
        ck_assert(!nw_tolerations_tolerate_all(t, tols, mode));
    }
}

/* one test per line of tests/data/taints/lists.jsonl */
static const nw_test_cases_t *list_cases_cases;

START_TEST(list_cases)
{
    const nw_test_case_t *row = nw_test_case(list_cases_cases, _i);
    do {
        cJSON *j = parse_line(row);
        char ctx[256];
        snprintf(ctx, sizeof ctx, "%s:%d: %s", row->path, row->lineno,
                 cJSON_GetObjectItemCaseSensitive(j, "name")->valuestring);
        nw_taints_t taints;
        nw_tolerations_t tols;
        nw_err_t err = {0};
        ck_assert_msg(nw_taints_parse(cJSON_GetObjectItemCaseSensitive(j, "taints"), "t", &taints,
                                      &err) == NW_OK,
                      "%s: %s", ctx, err.msg);
        ck_assert_msg(nw_tolerations_parse(cJSON_GetObjectItemCaseSensitive(j, "tolerations"), "t",
                                           &tols, &err) == NW_OK,
                      "%s: %s", ctx, err.msg);
        check_mode(&taints, &tols, NW_TAINTS_SCHEDULING,
                   cJSON_GetObjectItemCaseSensitive(j, "scheduling"), ctx);
        check_mode(&taints, &tols, NW_TAINTS_STRICT, cJSON_GetObjectItemCaseSensitive(j, "strict"),
                   ctx);
        nw_taints_cleanup(&taints);
        nw_tolerations_cleanup(&tols);
        cJSON_Delete(j);
    } while (0);
}
END_TEST

/* one test per line of tests/data/taints/parse.jsonl */
static const nw_test_cases_t *parse_cases_cases;

START_TEST(parse_cases)
{
    const nw_test_case_t *row = nw_test_case(parse_cases_cases, _i);
    do {
        cJSON *j = parse_line(row);
        const char *what = cJSON_GetObjectItemCaseSensitive(j, "what")->valuestring;
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "input");
        int is_taints = strcmp(what, "taints") == 0;
        nw_err_t err = {0};
        nw_taints_t taints;
        nw_tolerations_t tols;
        nw_rc_t rc;
        size_t n;
        if (is_taints) {
            rc = nw_taints_parse(in, "spec.taints", &taints, &err);
            n = taints.n;
        } else {
            rc = nw_tolerations_parse(in, "spec.tolerations", &tols, &err);
            n = tols.n;
        }
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ok"))) {
            ck_assert_msg(rc == NW_OK, "%s:%d: %s: %s", row->path, row->lineno, err.path, err.msg);
            ck_assert_int_eq((int)n, cJSON_GetObjectItemCaseSensitive(j, "n")->valueint);
        } else {
            const char *path = cJSON_GetObjectItemCaseSensitive(j, "path")->valuestring;
            const char *msg = cJSON_GetObjectItemCaseSensitive(j, "msg")->valuestring;
            ck_assert_msg(rc != NW_OK, "%s:%d: expected an error", row->path, row->lineno);
            ck_assert_msg(strcmp(err.path, path) == 0, "%s:%d: path %s want %s", row->path,
                          row->lineno, err.path, path);
            ck_assert_msg(strstr(err.msg, msg) != NULL, "%s:%d: msg '%s' lacks '%s'", row->path,
                          row->lineno, err.msg, msg);
            ck_assert_uint_eq(n, 0);
        }
        if (is_taints)
            nw_taints_cleanup(&taints);
        else
            nw_tolerations_cleanup(&tols);
        cJSON_Delete(j);
    } while (0);
}
END_TEST

START_TEST(parsed_fields)
{
    cJSON *j = cJSON_Parse("[{\"key\":\"a\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
                           "\"tolerationSeconds\":-5},{\"key\":\"b\",\"value\":\"v\"}]");
    nw_tolerations_t t;
    ck_assert_int_eq(nw_tolerations_parse(j, "x", &t, NULL), NW_OK);
    ck_assert_str_eq(t.v[0].key, "a");
    ck_assert_int_eq(t.v[0].op, NW_TOL_EXISTS);
    ck_assert_int_eq(t.v[0].effect, NW_TAINT_NO_EXECUTE);
    ck_assert(t.v[0].has_seconds);
    ck_assert_int_eq(t.v[0].seconds, -5);
    ck_assert_int_eq(t.v[1].op, NW_TOL_EQUAL);
    ck_assert_int_eq(t.v[1].effect, NW_TAINT_EFFECT_ANY);
    ck_assert(!t.v[1].has_seconds);
    ck_assert_str_eq(t.v[1].value, "v");
    nw_tolerations_cleanup(&t);
    cJSON_Delete(j);
}
END_TEST

START_TEST(format_and_names)
{
    nw_taints_t t;
    nw_taints_init(&t);
    ck_assert_int_eq(nw_taints_add(&t, "gpu", "true", NW_TAINT_NO_SCHEDULE), NW_OK);
    ck_assert_int_eq(nw_taints_add(&t, "x", "", NW_TAINT_PREFER_NO_SCHEDULE), NW_OK);
    char b[64];
    ck_assert_uint_eq(nw_taints_format(&t.v[0], b, sizeof b), 19);
    ck_assert_str_eq(b, "gpu=true:NoSchedule");
    nw_taints_format(&t.v[1], b, sizeof b);
    ck_assert_str_eq(b, "x:PreferNoSchedule");
    char small[8];
    ck_assert_uint_eq(nw_taints_untolerated_msg(&t.v[0], small, sizeof small), 36);
    ck_assert_str_eq(small, "did not");
    nw_taints_cleanup(&t);
    nw_taint_effect_t e;
    ck_assert(nw_taints_effect_parse("NoExecute", &e) && e == NW_TAINT_NO_EXECUTE);
    ck_assert(!nw_taints_effect_parse("noexecute", &e));
    ck_assert_str_eq(nw_tolerations_op_str(NW_TOL_GT), "Gt");
    int64_t v;
    ck_assert(nw_tolerations_parse_decimal("-9223372036854775808", &v) && v == INT64_MIN);
    ck_assert(nw_tolerations_parse_decimal("9223372036854775807", &v) && v == INT64_MAX);
    ck_assert(!nw_tolerations_parse_decimal("9223372036854775808", &v));
    ck_assert(!nw_tolerations_parse_decimal("-", &v));
    ck_assert(!nw_tolerations_parse_decimal("", &v));
    ck_assert(!nw_tolerations_parse_decimal("1 ", &v));
}
END_TEST

START_TEST(known_ephemeral)
{
    nw_taints_t t;
    nw_taints_init(&t);
    nw_taints_add(&t, "node.kubernetes.io/not-ready", "", NW_TAINT_NO_SCHEDULE);
    nw_taints_add(&t, "node.kubernetes.io/not-ready", "", NW_TAINT_NO_EXECUTE);
    nw_taints_add(&t, "node.kubernetes.io/unreachable", "", NW_TAINT_NO_SCHEDULE);
    nw_taints_add(&t, "node.cloudprovider.kubernetes.io/uninitialized", "true",
                  NW_TAINT_NO_SCHEDULE);
    nw_taints_add(&t, "karpenter.sh/unregistered", "", NW_TAINT_NO_EXECUTE);
    nw_taints_add(&t, "readiness.k8s.io/network", "x", NW_TAINT_NO_SCHEDULE);
    size_t nknown = t.n;
    nw_taints_add(&t, "node.kubernetes.io/unreachable", "", NW_TAINT_NO_EXECUTE);
    nw_taints_add(&t, "node.cloudprovider.kubernetes.io/uninitialized", "", NW_TAINT_NO_SCHEDULE);
    nw_taints_add(&t, "karpenter.sh/unregistered", "", NW_TAINT_NO_SCHEDULE);
    nw_taints_add(&t, "node.kubernetes.io/not-ready", "x", NW_TAINT_NO_SCHEDULE);
    nw_taints_add(&t, "readiness.k8s.io", "", NW_TAINT_NO_SCHEDULE);
    nw_taints_add(&t, "gpu", "true", NW_TAINT_NO_SCHEDULE);
    ck_assert_uint_eq(t.n, nknown + 6);
    for (size_t i = 0; i < t.n; i++)
        ck_assert_msg(nw_taints_is_known_ephemeral(&t.v[i]) == (i < nknown), "%s:%s", t.v[i].key,
                      nw_taints_effect_str(t.v[i].effect));
    nw_taints_cleanup(&t);
}
END_TEST

Suite *nw_taints_suite(void)
{
    Suite *s = suite_create("taints");
    TCase *tc = tcase_create("core");
    match_cases_cases = nw_test_cases_lines("tests/data/taints/match.jsonl", 25);
    nw_test_add_cases(tc, match_cases, match_cases_cases);
    list_cases_cases = nw_test_cases_lines("tests/data/taints/lists.jsonl", 8);
    nw_test_add_cases(tc, list_cases, list_cases_cases);
    parse_cases_cases = nw_test_cases_lines("tests/data/taints/parse.jsonl", 15);
    nw_test_add_cases(tc, parse_cases, parse_cases_cases);
    tcase_add_test(tc, parsed_fields);
    tcase_add_test(tc, format_and_names);
    tcase_add_test(tc, known_ephemeral);
    suite_add_tcase(s, tc);
    return s;
}
