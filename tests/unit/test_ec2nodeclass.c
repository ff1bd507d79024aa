/* EC2NodeClass admission: every case file in tests/data/ec2nodeclass/ (see admitcase.h). */
#include <check.h>
#include <stdlib.h>

#include <string.h>

#include "admitcase.h"
#include "admission/handlers.h"
#include "testutil.h"
#include "api/admit.h"
#include "api/kval.h"

Suite *nw_ec2nodeclass_suite(void);

static const nw_test_cases_t *cases;

START_TEST(ec2nodeclass_case)
{
    nw_test_admit_case(nw_test_case(cases, _i)->path, "karpenter.k8s.aws", "EC2NodeClass");
}
END_TEST

START_TEST(delete_allowed)
{
    const nw_admit_handler_t *h = nw_handlers_find("karpenter.k8s.aws", "EC2NodeClass");
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

Suite *nw_ec2nodeclass_suite(void)
{
    Suite *s = suite_create("ec2nodeclass");
    TCase *tc = tcase_create("cases");
    if (!cases)
        cases = nw_test_cases_dir("tests/data/ec2nodeclass", ".yaml", 100);
    nw_test_add_cases(tc, ec2nodeclass_case, cases);
    tcase_add_test(tc, delete_allowed);
    suite_add_tcase(s, tc);
    return s;
}
