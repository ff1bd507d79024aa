/* Unit tests for common/json: member, path and string getters (null counts as
 * absent; wrong types give NULL) and the type names used in error messages. */
#include <check.h>
#include <string.h>

#include "common/json.h"

Suite *nw_json_suite(void);

static cJSON *parse(const char *s)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(s, strlen(s) + 1, &end, 1);
    ck_assert_msg(j != NULL, "bad JSON: %s", s);
    return j;
}

START_TEST(get_members)
{
    cJSON *j = parse("{\"a\":{\"b\":{\"c\":\"x\",\"n\":null,\"i\":3}},\"s\":\"top\",\"Case\":1,"
                     "\"arr\":[1,2]}");
    ck_assert_ptr_nonnull(nw_json_get(j, "a"));
    ck_assert_ptr_null(nw_json_get(j, "missing"));
    ck_assert_ptr_null(nw_json_get(j, "case")); /* case-sensitive */
    ck_assert_ptr_nonnull(nw_json_get(j, "Case"));
    ck_assert_ptr_null(nw_json_get(NULL, "a"));
    ck_assert_ptr_null(nw_json_get(j, NULL));
    /* not an object: no members, even where an array would have items */
    ck_assert_ptr_null(nw_json_get(nw_json_get(j, "arr"), "0"));
    ck_assert_ptr_null(nw_json_get(nw_json_get(j, "s"), "s"));

    const char *abc[] = {"a", "b", "c"};
    ck_assert_str_eq(nw_json_path(j, abc, 3)->valuestring, "x");
    ck_assert_ptr_eq(nw_json_path(j, abc, 0), j);
    const char *abn[] = {"a", "b", "n"}, *axc[] = {"a", "x", "c"}, *abcz[] = {"a", "b", "c", "z"};
    ck_assert_ptr_null(nw_json_path(j, abn, 3)); /* null counts as absent */
    ck_assert_ptr_null(nw_json_path(j, axc, 3));
    ck_assert_ptr_null(nw_json_path(j, abcz, 4)); /* through a string */

    const char *ab[] = {"a", "b"};
    const cJSON *b = nw_json_path(j, ab, 2);
    ck_assert_str_eq(nw_json_str(b, "c"), "x");
    ck_assert_ptr_null(nw_json_str(b, "n"));
    ck_assert_ptr_null(nw_json_str(b, "i")); /* a number is not a string */
    ck_assert_ptr_null(nw_json_str(b, "missing"));
    ck_assert_ptr_null(nw_json_str(NULL, "c"));
    ck_assert_str_eq(nw_json_str(j, "s"), "top");
    cJSON_Delete(j);
}
END_TEST

START_TEST(type_names)
{
    cJSON *j = parse("[\"s\",1.5,true,false,[],{},null]");
    const char *want[] = {"string", "number", "boolean", "boolean", "array", "object", "null"};
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, j) ck_assert_str_eq(nw_json_type_name(v), want[i++]);
    ck_assert_int_eq(i, 7);
    ck_assert_str_eq(nw_json_type_name(NULL), "invalid");
    cJSON raw;
    memset(&raw, 0, sizeof raw);
    ck_assert_str_eq(nw_json_type_name(&raw), "invalid");
    cJSON_Delete(j);
}
END_TEST

START_TEST(dotted_and_conditions)
{
    cJSON *j = parse("{\"spec\":{\"ref\":{\"name\":\"a\",\"n\":1}},\"status\":{\"conditions\":["
                     "{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"X\"}]}}");
    ck_assert_str_eq(nw_json_str_at(j, "spec.ref.name"), "a");
    ck_assert_ptr_null(nw_json_str_at(j, "spec.ref.n")); /* not a string */
    ck_assert_ptr_null(nw_json_str_at(j, "spec.missing.name"));
    ck_assert_ptr_null(nw_json_str_at(NULL, "spec"));
    ck_assert_str_eq(nw_json_condition(j, "Ready"), "True");
    ck_assert_ptr_null(nw_json_condition(j, "X")); /* no status */
    ck_assert_ptr_null(nw_json_condition(j, "Other"));
    cJSON_Delete(j);
}
END_TEST

Suite *nw_json_suite(void)
{
    Suite *s = suite_create("json");
    TCase *tc = tcase_create("getters");
    tcase_add_test(tc, get_members);
    tcase_add_test(tc, type_names);
    tcase_add_test(tc, dotted_and_conditions);
    suite_add_tcase(s, tc);
    return s;
}
