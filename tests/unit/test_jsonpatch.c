/* Unit tests for api/jsonpatch: building, escaping, applying (all-or-nothing). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "api/jsonpatch.h"

Suite *nw_jsonpatch_suite(void);

static void apply_ok(const char *doc, const char *patch, const char *want)
{
    cJSON *d = cJSON_Parse(doc);
    nw_err_t err = {0};
    ck_assert_msg(nw_jsonpatch_apply_text(&d, patch, &err) == NW_OK, "%s: %s %s", patch, err.path,
                  err.msg);
    char *got = cJSON_PrintUnformatted(d);
    ck_assert_msg(strcmp(got, want) == 0, "%s on %s: got %s want %s", patch, doc, got, want);
    free(got);
    cJSON_Delete(d);
}

static void apply_fail(const char *doc, const char *patch, const char *want)
{
    cJSON *d = cJSON_Parse(doc);
    nw_err_t err = {0};
    ck_assert_msg(nw_jsonpatch_apply_text(&d, patch, &err) != NW_OK, "%s should fail", patch);
    ck_assert_msg(strstr(err.msg, want) != NULL, "error '%s' lacks '%s'", err.msg, want);
    char *got = cJSON_PrintUnformatted(d); /* unchanged */
    ck_assert_str_eq(got, doc);
    free(got);
    cJSON_Delete(d);
}

START_TEST(build_and_escape)
{
    char buf[64];
    ck_assert_int_eq(nw_jsonpatch_escape("a/b~c", buf, sizeof buf), NW_OK);
    ck_assert_str_eq(buf, "a~1b~0c");
    ck_assert_int_eq(nw_jsonpatch_escape("abcdef", buf, 4), NW_ERANGE);
    nw_jsonpatch_t p;
    nw_jsonpatch_init(&p);
    ck_assert_ptr_null(nw_jsonpatch_take_text(&p)); /* empty patch: no text */
    cJSON *v = cJSON_CreateString("720h");
    ck_assert_int_eq(nw_jsonpatch_add(&p, "add", "/spec/template/spec/expireAfter", v), NW_OK);
    ck_assert_int_eq(nw_jsonpatch_add(&p, "remove", "/metadata/labels/a~1b", NULL), NW_OK);
    cJSON_Delete(v);
    ck_assert_uint_eq(nw_jsonpatch_len(&p), 2);
    char *t = nw_jsonpatch_take_text(&p);
    ck_assert_str_eq(
        t, "[{\"op\":\"add\",\"path\":\"/spec/template/spec/expireAfter\",\"value\":\"720h\"},"
           "{\"op\":\"remove\",\"path\":\"/metadata/labels/a~1b\"}]");
    free(t);
    nw_jsonpatch_cleanup(&p);
}
END_TEST

START_TEST(apply_ops)
{
    apply_ok("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/b\",\"value\":[1]}]",
             "{\"a\":1,\"b\":[1]}");
    apply_ok("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":2}]", "{\"a\":2}");
    apply_ok("{\"l\":[1,3]}", "[{\"op\":\"add\",\"path\":\"/l/1\",\"value\":2}]",
             "{\"l\":[1,2,3]}");
    apply_ok("{\"l\":[1]}", "[{\"op\":\"add\",\"path\":\"/l/-\",\"value\":2}]", "{\"l\":[1,2]}");
    apply_ok("{\"l\":[1]}", "[{\"op\":\"add\",\"path\":\"/l/1\",\"value\":2}]", "{\"l\":[1,2]}");
    apply_ok("{\"a/b\":{\"~\":1}}", "[{\"op\":\"replace\",\"path\":\"/a~1b/~0\",\"value\":5}]",
             "{\"a/b\":{\"~\":5}}");
    apply_ok("{\"a\":1,\"b\":2}", "[{\"op\":\"remove\",\"path\":\"/a\"}]", "{\"b\":2}");
    apply_ok("{\"a\":1}",
             "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1},"
             "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/c\"},"
             "{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/d\"}]",
             "{\"c\":1,\"d\":1}");
    apply_ok("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":[]}]", "[]");
    apply_ok("{\"a\":1}", "[]", "{\"a\":1}");
}
END_TEST

START_TEST(apply_errors)
{
    apply_fail("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]",
               "parent path does not exist");
    apply_fail("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"/x\",\"value\":1}]",
               "path does not exist");
    apply_fail("{\"a\":1}", "[{\"op\":\"remove\",\"path\":\"/x\"}]", "path does not exist");
    apply_fail("{\"l\":[1]}", "[{\"op\":\"add\",\"path\":\"/l/3\",\"value\":1}]", "out of range");
    apply_fail("{\"l\":[1]}", "[{\"op\":\"add\",\"path\":\"/l/01\",\"value\":1}]", "out of range");
    apply_fail("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", "bad JSON pointer");
    apply_fail("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/~2\",\"value\":1}]", "bad JSON pointer");
    apply_fail("{\"a\":1}", "[{\"op\":\"frob\",\"path\":\"/a\"}]", "unknown op");
    apply_fail("{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a\"}]", "needs \"value\"");
    apply_fail("{\"a\":1}",
               "[{\"op\":\"add\",\"path\":\"/b\",\"value\":1},{\"op\":\"test\",\"path\":\"/"
               "a\",\"value\":2}]",
               "test failed");
    apply_fail("{\"a\":{}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b\"}]",
               "into itself");
    apply_fail("{\"a\":1}", "{}", "must be an array");
    apply_fail("{\"a\":1}", "[1]", "not an object");
}
END_TEST

Suite *nw_jsonpatch_suite(void)
{
    Suite *s = suite_create("jsonpatch");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, build_and_escape);
    tcase_add_test(tc, apply_ops);
    tcase_add_test(tc, apply_errors);
    suite_add_tcase(s, tc);
    return s;
}
