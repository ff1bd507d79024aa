/* Unit tests for common/jsonfreeze: a frozen copy reads, prints and compares like its
 * source, keeps cJSON's list shape (the first child's prev is the last), takes less
 * memory than the tree it copies, and duplicates into an ordinary, editable tree. */
#include <check.h>
#include <cjson/cJSON.h>
#include <malloc.h>
#include <stdbool.h>
#include <string.h>

#include "common/jsonfreeze.h"

Suite *nw_jsonfreeze_suite(void);

static const char *NODE =
    "{\"metadata\":{\"name\":\"ip-10-0-0-1\",\"labels\":{\"a\":\"1\",\"b\":\"2\"},"
    "\"finalizers\":[\"karpenter.sh/termination\"]},"
    "\"spec\":{\"providerID\":\"aws:///us-west-2a/i-1\",\"unschedulable\":false,"
    "\"taints\":[{\"key\":\"k\",\"effect\":\"NoSchedule\"},{\"key\":\"k2\",\"value\":\"v\","
    "\"effect\":\"NoExecute\"}]},"
    "\"status\":{\"capacity\":{\"cpu\":\"16\",\"pods\":110},\"conditions\":["
    "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\"},"
    "{\"type\":\"DiskPressure\",\"status\":\"False\",\"reason\":\"KubeletHasNoDiskPressure\"}],"
    "\"empty\":{},\"none\":[],\"n\":null,\"raw\":-1.5e3}}";

START_TEST(frozen_reads_and_prints_like_its_source)
{
    cJSON *src = cJSON_Parse(NODE);
    ck_assert_ptr_nonnull(src);
    cJSON *f = nw_jsonfreeze(src);
    ck_assert_ptr_nonnull(f);
    ck_assert(cJSON_Compare(src, f, true));
    char *a = cJSON_PrintUnformatted(src), *b = cJSON_PrintUnformatted(f);
    ck_assert_str_eq(a, b);
    cJSON_free(a);
    cJSON_free(b);
    const cJSON *taints =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "spec"), "taints");
    ck_assert_int_eq(cJSON_GetArraySize(taints), 2);
    ck_assert_ptr_eq(taints->child->prev, taints->child->next); /* prev of the first: the last */
    ck_assert_ptr_null(taints->child->next->next);
    ck_assert_str_eq(cJSON_GetArrayItem(taints, 1)->child->next->valuestring, "v");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(f, "status");
    ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(st, "raw")->valuedouble, -1500.0);
    ck_assert_int_eq(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(st, "capacity"), "pods")
            ->valueint,
        110);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(st, "n")));
    /* each key once: the two conditions' "type" keys are one string */
    const cJSON *conds = cJSON_GetObjectItemCaseSensitive(st, "conditions");
    ck_assert_ptr_eq(conds->child->child->string, conds->child->next->child->string);
    /* smaller than the tree it copies, and within the size it reports */
    struct mallinfo2 m0 = mallinfo2();
    cJSON *g = nw_jsonfreeze(src);
    struct mallinfo2 m1 = mallinfo2();
    ck_assert_uint_le(nw_jsonfreeze_size(src), malloc_usable_size(g));
    cJSON *dup = cJSON_Duplicate(src, true);
    struct mallinfo2 m2 = mallinfo2();
    if (m2.uordblks != m0.uordblks) /* glibc's allocator (a sanitizer's reports nothing) */
        ck_assert_uint_lt(m1.uordblks - m0.uordblks, m2.uordblks - m1.uordblks);
    cJSON_Delete(dup);
    nw_jsonfreeze_free(g);
    /* the source is untouched and still its own */
    cJSON_Delete(src);
    a = cJSON_PrintUnformatted(f);
    ck_assert_ptr_nonnull(strstr(a, "KubeletHasNoDiskPressure"));
    cJSON_free(a);
    nw_jsonfreeze_free(f);
}
END_TEST

START_TEST(frozen_duplicates_into_an_editable_tree)
{
    cJSON *src = cJSON_Parse(NODE);
    cJSON *f = nw_jsonfreeze(src);
    cJSON_Delete(src);
    cJSON *d = cJSON_Duplicate(f, true);
    nw_jsonfreeze_free(f); /* the copy owns its strings */
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(d, "spec");
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "taints");
    cJSON_AddStringToObject(spec, "added", "x");
    char *t = cJSON_PrintUnformatted(spec);
    ck_assert_str_eq(t, "{\"providerID\":\"aws:///us-west-2a/i-1\",\"unschedulable\":false,"
                        "\"added\":\"x\"}");
    cJSON_free(t);
    cJSON_Delete(d);
}
END_TEST

START_TEST(frozen_scalars_and_null)
{
    ck_assert_ptr_null(nw_jsonfreeze(NULL));
    nw_jsonfreeze_free(NULL);
    ck_assert_uint_eq(nw_jsonfreeze_size(NULL), 0);
    const char *docs[] = {"\"just a string\"", "42", "[]", "{}", "[[[1]],{\"a\":[{}]}]"};
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        cJSON *src = cJSON_Parse(docs[i]);
        cJSON *f = nw_jsonfreeze(src);
        ck_assert_ptr_nonnull(f);
        char *t = cJSON_PrintUnformatted(f);
        ck_assert_str_eq(t, docs[i]);
        cJSON_free(t);
        nw_jsonfreeze_free(f);
        cJSON_Delete(src);
    }
    /* a member's own key is not part of the copy */
    cJSON *o = cJSON_Parse("{\"outer\":{\"inner\":true}}");
    cJSON *f = nw_jsonfreeze(o->child);
    ck_assert_ptr_null(f->string);
    ck_assert_ptr_null(f->next);
    ck_assert(cJSON_IsTrue(f->child));
    nw_jsonfreeze_free(f);
    cJSON_Delete(o);
}
END_TEST

Suite *nw_jsonfreeze_suite(void)
{
    Suite *s = suite_create("jsonfreeze");
    TCase *tc = tcase_create("freeze");
    tcase_add_test(tc, frozen_reads_and_prints_like_its_source);
    tcase_add_test(tc, frozen_duplicates_into_an_editable_tree);
    tcase_add_test(tc, frozen_scalars_and_null);
    suite_add_tcase(s, tc);
    return s;
}
