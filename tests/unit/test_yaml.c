/* Unit tests for common/yaml: typing as kubectl does, errors with positions, limits,
 * emitter round trip. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "common/yaml.h"

Suite *nw_yaml_suite(void);

/* Load text that must hold exactly one document; returns it re-printed as compact JSON. */
static char *one(const char *text)
{
    cJSON **docs = NULL;
    size_t n = 0;
    nw_err_t err = {0};
    nw_rc_t rc = nw_yaml_load_docs(text, strlen(text), &docs, &n, &err);
    ck_assert_msg(rc == NW_OK, "load failed: %s", err.msg);
    ck_assert_uint_eq(n, 1);
    char *s = cJSON_PrintUnformatted(docs[0]);
    nw_yaml_docs_free(docs, n);
    return s;
}

static void expect_json(const char *yaml, const char *json)
{
    char *s = one(yaml);
    ck_assert_msg(strcmp(s, json) == 0, "%s: got %s want %s", yaml, s, json);
    free(s);
}

/* Loading must fail with a message containing want. */
static void expect_err(const char *yaml, const char *want)
{
    cJSON **docs = NULL;
    size_t n = 0;
    nw_err_t err = {0};
    nw_rc_t rc = nw_yaml_load_docs(yaml, strlen(yaml), &docs, &n, &err);
    ck_assert_msg(rc != NW_OK, "expected failure for %s", yaml);
    ck_assert_ptr_null(docs);
    ck_assert_msg(strstr(err.msg, want) != NULL, "error '%s' lacks '%s'", err.msg, want);
}

START_TEST(scalar_typing)
{
    expect_json("a: true\nb: false\nc: null\nd: ~\ne:\n",
                "{\"a\":true,\"b\":false,\"c\":null,\"d\":null,\"e\":null}");
    /* YAML 1.1 booleans, as goyaml.v2 / kubectl read them */
    expect_json("a: on\nb: yes\nc: Off\nd: NO\ne: y\n",
                "{\"a\":true,\"b\":true,\"c\":false,\"d\":false,\"e\":true}");
    expect_json("a: 'on'\nb: \"yes\"\nc: onx\nd: tRue\n",
                "{\"a\":\"on\",\"b\":\"yes\",\"c\":\"onx\",\"d\":\"tRue\"}");
    expect_json("a: 10\nb: -5\nc: 0x1f\nd: 017\ne: 0o17\nf: 0b101\ng: 1_000\n",
                "{\"a\":10,\"b\":-5,\"c\":31,\"d\":15,\"e\":15,\"f\":5,\"g\":1000}");
    expect_json("a: 1.5\nb: .5\nc: 1e3\nd: 08\ne: 10.0\n",
                "{\"a\":1.5,\"b\":0.5,\"c\":1000,\"d\":8,\"e\":10}");
    expect_json("a: 2001-12-14\nb: 1h30m\nc: 10%\nd: 1.2.3\ne: 0x\nf: '10'\n",
                "{\"a\":\"2001-12-14\",\"b\":\"1h30m\",\"c\":\"10%\",\"d\":\"1.2.3\",\"e\":\"0x\","
                "\"f\":\"10\"}");
    expect_json("a: !!str 10\nb: !!int \"7\"\nc: !!float 3\nd: !custom 5\ne: |\n  x\n  y\n",
                "{\"a\":\"10\",\"b\":7,\"c\":3,\"d\":\"5\",\"e\":\"x\\ny\\n\"}");
    expect_json("1: a\ntrue: b\n", "{\"1\":\"a\",\"true\":\"b\"}");
    expect_json("a: 1e400\n", "{\"a\":\"1e400\"}");
}
END_TEST

START_TEST(errors)
{
    expect_err("a: b\n  c: d\n", "line 2, column 4");
    expect_err("a: [1, 2\n", "line 2");
    expect_err("a: 1\na: 2\n", "mapping key \"a\" already defined");
    expect_err("a: 1\nb: 2\n\"a\": 3\n", "line 3, column 1: mapping key \"a\"");
    expect_err("1: a\n\"1\": b\n", "already defined");
    expect_err("a: .inf\n", "cannot be represented in JSON");
    expect_err("a: *nope\n", "unknown anchor 'nope'");
    expect_err("a: !!int abc\n", "cannot decode `abc` as a !!int");
    expect_err("? [1]\n: x\n", "unsupported map key");
    expect_err("~: x\n", "unsupported map key: null");
    expect_err("{\"a\": 1, \"a\": 2}", "duplicate key \"a\"");
}
END_TEST

START_TEST(limits)
{
    /* billion laughs */
    const char *bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
                       "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                       "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                       "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                       "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                       "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                       "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n";
    expect_err(bomb, "alias expansion limit");
    /* depth */
    char deep[2000];
    size_t k = 0;
    for (int i = 0; i < 300; i++)
        deep[k++] = '[';
    for (int i = 0; i < 300; i++)
        deep[k++] = ']';
    deep[k] = 0;
    expect_err(deep, "nesting deeper");
    char deepy[2000];
    k = 0;
    memcpy(deepy, "x: ", 3);
    k = 3;
    for (int i = 0; i < 300; i++)
        deepy[k++] = '[';
    for (int i = 0; i < 300; i++)
        deepy[k++] = ']';
    deepy[k] = 0;
    expect_err(deepy, "nesting deeper");
}
END_TEST

START_TEST(anchors_merge)
{
    expect_json("base: &b {x: 1, z: 2}\nc:\n  <<: *b\n  z: 3\n",
                "{\"base\":{\"x\":1,\"z\":2},\"c\":{\"z\":3,\"x\":1}}");
    /* goyaml.v2 reads the plain key `y` as the boolean true, so its JSON key is "true" */
    expect_json("y: 1\n", "{\"true\":1}");
    expect_json("l: &l [a, b]\nm: *l\n", "{\"l\":[\"a\",\"b\"],\"m\":[\"a\",\"b\"]}");
    expect_json("a: &s str\nb: *s\n", "{\"a\":\"str\",\"b\":\"str\"}");
    expect_json("? &k kk\n: 1\nb: *k\n", "{\"kk\":1,\"b\":\"kk\"}");
    expect_json("c:\n  <<: [{a: 1}, {a: 2, b: 2}]\n", "{\"c\":{\"a\":1,\"b\":2}}");
}
END_TEST

START_TEST(multi_docs_lines)
{
    const char *t = "# comment\na: 1\n---\nb: 2\n---\n---\n\n---\nc: [1]\n...\n";
    cJSON **docs = NULL;
    size_t *lines = NULL, n = 0;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_yaml_load_docs_lines(t, strlen(t), &docs, &lines, &n, &err), NW_OK);
    ck_assert_uint_eq(n, 5);
    ck_assert_uint_eq(lines[0], 2);
    ck_assert_uint_eq(lines[1], 3);
    ck_assert_uint_eq(lines[2], 5);
    ck_assert_uint_eq(lines[4], 8);
    ck_assert(cJSON_IsObject(docs[0]));
    ck_assert(cJSON_IsNull(docs[2]));
    ck_assert(cJSON_IsNull(docs[3]));
    nw_yaml_docs_free(docs, n);
    free(lines);
    /* empty stream, comments only */
    ck_assert_int_eq(nw_yaml_load_docs("# x\n", 4, &docs, &n, &err), NW_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(docs);
    /* JSON stream, with lines */
    const char *j = "\n{\"a\": 1}\n\n[2]\n";
    ck_assert_int_eq(nw_yaml_load_docs_lines(j, strlen(j), &docs, &lines, &n, &err), NW_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(lines[0], 2);
    ck_assert_uint_eq(lines[1], 4);
    nw_yaml_docs_free(docs, n);
    free(lines);
    /* flow YAML that is not JSON falls back to the YAML reader */
    expect_json("{a: on, \"b\": [x]}", "{\"a\":true,\"b\":[\"x\"]}");
}
END_TEST

START_TEST(emit_roundtrip)
{
    const char *src = "{\"s\":\"on\",\"t\":\"true\",\"n\":\"10\",\"e\":\"\",\"nul\":\"null\","
                      "\"num\":10,\"f\":1.5,\"b\":false,\"z\":null,\"l\":[],\"m\":{},"
                      "\"nest\":{\"k/x\":[\"a: b\",\"- c\",\"multi\\nline\"]},\"10\":\"x\","
                      "\"big\":123456789012,\"neg\":-0.25,\"ts\":\"2001-12-14\"}";
    cJSON *in = cJSON_Parse(src);
    ck_assert_ptr_nonnull(in);
    char *y = NULL;
    size_t ylen = 0;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_yaml_emit(in, &y, &ylen, &err), NW_OK);
    ck_assert_uint_eq(ylen, strlen(y));
    ck_assert_msg(strstr(y, "s: \"on\"") != NULL, "%s", y);
    ck_assert_msg(strstr(y, "num: 10\n") != NULL, "%s", y);
    ck_assert_msg(strstr(y, "l: []") != NULL, "%s", y);
    cJSON **docs = NULL;
    size_t n = 0;
    ck_assert_int_eq(nw_yaml_load_docs(y, ylen, &docs, &n, &err), NW_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(cJSON_Compare(in, docs[0], 1), "round trip differs:\n%s", y);
    nw_yaml_docs_free(docs, n);
    free(y);
    cJSON_Delete(in);
}
END_TEST

Suite *nw_yaml_suite(void)
{
    Suite *s = suite_create("yaml");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, scalar_typing);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, limits);
    tcase_add_test(tc, anchors_merge);
    tcase_add_test(tc, multi_docs_lines);
    tcase_add_test(tc, emit_roundtrip);
    suite_add_tcase(s, tc);
    return s;
}
