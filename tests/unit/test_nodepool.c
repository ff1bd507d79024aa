/* NodePool admission: every case file in tests/data/nodepool/ (see admitcase.h). */
#include <check.h>
#include <stdlib.h>
#include <stdio.h>

#include <string.h>

#include "admitcase.h"
#include "admission/handlers.h"
#include "testutil.h"
#include "api/admit.h"
#include "api/kval.h"

/* Shared GPUs declared on the template labels (api/gpushare.h): the scheduler's reading is
 * checked at admission, a bad value refused naming the label; a good one admitted. */
START_TEST(gpushare_labels_checked)
{
    const nw_admit_handler_t *h = nw_handlers_find("karpenter.sh", "NodePool");
    ck_assert_ptr_nonnull(h);
    static const struct {
        const char *labels, *want; /* want NULL: allowed */
    } cases[] = {
        {"\"nvidia.com/gpu.replicas\":\"4\"", NULL},
        {"\"nvidia.com/mig.config\":\"all-1g.10gb\",\"nvidia.com/mig.strategy\":\"single\"", NULL},
        {"\"nvidia.com/gpu.replicas\":\"0\"",
         "NodePool.karpenter.sh \"shared\" is invalid: spec.template.metadata.labels"
         "[nvidia.com/gpu.replicas]: Invalid value: \"0\": time-slicing replicas per GPU must "
         "be an integer from 1 to 256"},
        {"\"nvidia.com/mig.config\":\"all-1g.7gb\"",
         "spec.template.metadata.labels[nvidia.com/mig.config]: Invalid value: \"all-1g.7gb\": "
         "unknown MIG layout"},
        {"\"nvidia.com/mig.config\":\"all-balanced\",\"nvidia.com/mig.strategy\":\"single\"",
         "spec.template.metadata.labels[nvidia.com/mig.strategy]: Invalid value: \"single\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char b[2048];
        snprintf(b, sizeof b,
                 "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{"
                 "\"name\":\"shared\"},\"spec\":{\"template\":{\"metadata\":{\"labels\":{%s}},"
                 "\"spec\":{\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":"
                 "\"EC2NodeClass\",\"name\":\"default\"},\"requirements\":[{\"key\":"
                 "\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\"]}]}}}}",
                 cases[i].labels);
        cJSON *obj = cJSON_Parse(b);
        ck_assert_ptr_nonnull(obj);
        nw_admit_req_t req = {0};
        req.op = NW_OP_CREATE;
        req.object = obj;
        nw_admit_result_t res;
        nw_admit_result_init(&res);
        ck_assert_int_eq(h->validate(NULL, &req, &res), NW_OK);
        if (!cases[i].want)
            ck_assert_msg(res.allowed, "case %zu: %s", i, res.message ? res.message : "");
        else {
            ck_assert(!res.allowed);
            ck_assert_int_eq(res.code, 422);
            ck_assert_msg(strstr(res.message, cases[i].want), "case %zu: %s", i, res.message);
        }
        nw_admit_result_cleanup(&res);
        cJSON_Delete(obj);
    }
}
END_TEST

Suite *nw_nodepool_suite(void);

static const nw_test_cases_t *cases;

START_TEST(nodepool_case)
{
    nw_test_admit_case(nw_test_case(cases, _i)->path, "karpenter.sh", "NodePool");
}
END_TEST

/* The Status kube-apiserver returns: bare single error, [a, b] for several, duplicates
 * removed, causes with reason/message/field, gating line after gating errors. */
START_TEST(status_format)
{
    nw_admit_result_t res;
    nw_admit_result_init(&res);
    nw_kv_t kv;
    nw_kval_init(&kv);
    ck_assert_int_eq(nw_kval_finish(&kv, "NodePool", "karpenter.sh", "a", &res), NW_OK);
    ck_assert(res.allowed); /* no errors: untouched */
    nw_kval_add(&kv, NW_KV_INVALID, false, "spec.weight", "Invalid value: 0: x");
    ck_assert_int_eq(nw_kval_finish(&kv, "NodePool", "karpenter.sh", "gpu", &res), NW_OK);
    ck_assert(!res.allowed);
    ck_assert_int_eq(res.code, 422);
    ck_assert_str_eq(res.reason, "Invalid");
    ck_assert_str_eq(res.message,
                     "NodePool.karpenter.sh \"gpu\" is invalid: spec.weight: Invalid value: 0: x");
    nw_kval_add(&kv, NW_KV_INVALID, false, "spec.weight", "Invalid value: 0: x"); /* duplicate */
    nw_kval_cel(&kv, "spec", "object", "rule");
    ck_assert_int_eq(nw_kval_finish(&kv, "NodePool", "karpenter.sh", "gpu", &res), NW_OK);
    ck_assert_str_eq(res.message,
                     "NodePool.karpenter.sh \"gpu\" is invalid: [spec.weight: Invalid value: 0: x, "
                     "spec: Invalid value: rule]");
    const cJSON *causes = cJSON_GetObjectItemCaseSensitive(res.details, "causes");
    ck_assert_int_eq(cJSON_GetArraySize(causes), 2);
    const cJSON *c0 = cJSON_GetArrayItem(causes, 0);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(c0, "reason")->valuestring,
                     "FieldValueInvalid");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(c0, "field")->valuestring, "spec.weight");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(c0, "message")->valuestring,
                     "Invalid value: 0: x");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(res.details, "kind")->valuestring,
                     "NodePool");
    nw_kval_add(&kv, NW_KV_REQUIRED, false, "spec.template", "Required value"); /* gates CEL */
    ck_assert_int_eq(nw_kval_finish(&kv, "NodePool", "karpenter.sh", "gpu", &res), NW_OK);
    ck_assert_ptr_null(strstr(res.message, "\"object\": rule"));
    ck_assert_ptr_nonnull(strstr(res.message,
                                 "spec.template: Required value, <nil>: Invalid value: null: "
                                 "some validation rules were not checked"));
    nw_kval_cleanup(&kv);
    nw_admit_result_cleanup(&res);
}
END_TEST

/* Many errors: exact duplicates still removed (each once, in order), at most
 * NW_KV_MAX_SHOWN in the message and the causes, the rest counted; a core-group kind
 * is named without a group. */
START_TEST(status_many_errors)
{
    nw_admit_result_t res;
    nw_admit_result_init(&res);
    nw_kv_t kv;
    nw_kval_init(&kv);
    for (int rep = 0; rep < 2; rep++)
        for (int i = 0; i < 3000; i++)
            nw_kval_add(&kv, NW_KV_INVALID, false, "spec.x", "Invalid value: %d", i);
    char **lines;
    size_t n = nw_kval_lines(&kv, &lines, NULL);
    ck_assert_uint_eq(n, 3000);
    ck_assert_str_eq(lines[2999], "spec.x: Invalid value: 2999");
    nw_kval_lines_free(lines, NULL, n);
    ck_assert_int_eq(nw_kval_finish(&kv, "Pod", "", "p", &res), NW_OK);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(res.details, "causes")),
                     NW_KV_MAX_SHOWN);
    ck_assert_msg(strncmp(res.message, "Pod \"p\" is invalid: [spec.x: Invalid value: 0, ", 42) ==
                      0,
                  "%.80s", res.message);
    ck_assert_ptr_nonnull(strstr(res.message, "spec.x: Invalid value: 999, and 2000 more errors "
                                              "not shown]"));
    ck_assert_ptr_null(strstr(res.message, "Invalid value: 1000"));
    nw_kval_cleanup(&kv);
    nw_admit_result_cleanup(&res);
}
END_TEST

START_TEST(delete_allowed)
{
    const nw_admit_handler_t *h = nw_handlers_find("karpenter.sh", "NodePool");
    ck_assert_ptr_nonnull(h);
    nw_admit_req_t req = {0};
    req.op = NW_OP_DELETE;
    cJSON *old = cJSON_Parse("{\"spec\":1}");
    req.old_object = old;
    nw_admit_result_t res;
    nw_admit_result_init(&res);
    ck_assert_int_eq(h->validate(NULL, &req, &res), NW_OK);
    ck_assert(res.allowed);
    ck_assert_int_eq(h->mutate(NULL, &req, &res), NW_OK);
    ck_assert_ptr_null(res.patch);
    nw_admit_result_cleanup(&res);
    cJSON_Delete(old);
}
END_TEST

Suite *nw_nodepool_suite(void)
{
    Suite *s = suite_create("nodepool");
    TCase *tc = tcase_create("cases");
    if (!cases)
        cases = nw_test_cases_dir("tests/data/nodepool", ".yaml", 100);
    nw_test_add_cases(tc, nodepool_case, cases);
    tcase_add_test(tc, status_format);
    tcase_add_test(tc, status_many_errors);
    tcase_add_test(tc, delete_allowed);
    tcase_add_test(tc, gpushare_labels_checked);
    suite_add_tcase(s, tc);
    return s;
}
