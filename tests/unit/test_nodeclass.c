/* Unit tests for scaler/aws/nodeclass: the status written back (pure part). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/aws/nodeclass.h"

Suite *nw_nodeclass_suite(void);

static const cJSON *cond(const cJSON *st, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(st, "conditions"))
    {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
        if (cJSON_IsString(t) && strcmp(t->valuestring, type) == 0)
            return c;
    }
    return NULL;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

START_TEST(status_ready)
{
    nw_nodeclass_resolved_t r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "default");
    nw_nc_subnet_t sn[] = {{"subnet-1", "us-west-2a", "usw2-az1", 100}};
    nw_nc_sg_t sg[] = {{"sg-1", "nodes"}};
    nw_nc_ami_t ami[] = {{"ami-1", "img-x86", "amd64", 1, 0}, {"ami-2", "img-arm", "arm64", 1, 0}};
    r.subnets = sn;
    r.nsubnets = 1;
    r.sgs = sg;
    r.nsgs = 1;
    r.amis = ami;
    r.namis = 2;
    r.subnets_ready = r.sgs_ready = r.amis_ready = r.ready = 1;
    const char *j = "{\"metadata\":{\"name\":\"default\",\"generation\":3},"
                    "\"spec\":{\"instanceProfile\":\"KarpenterNodeProfile\"}}";
    cJSON *nc = cJSON_Parse(j);
    cJSON *st = nw_nodeclass_status_json(&r, nc, INT64_C(1764475200) * 1000000000);
    const cJSON *s0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "subnets"), 0);
    ck_assert_str_eq(str(s0, "id"), "subnet-1");
    ck_assert_str_eq(str(s0, "zone"), "us-west-2a");
    ck_assert_str_eq(str(s0, "zoneID"), "usw2-az1");
    const cJSON *g0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "securityGroups"), 0);
    ck_assert_str_eq(str(g0, "name"), "nodes");
    const cJSON *a1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(st, "amis"), 1);
    const cJSON *req = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a1, "requirements"), 0);
    ck_assert_str_eq(str(req, "key"), "kubernetes.io/arch");
    ck_assert_str_eq(str(req, "operator"), "In");
    ck_assert_str_eq(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(req, "values"), 0)->valuestring,
        "arm64");
    ck_assert_str_eq(str(st, "instanceProfile"), "KarpenterNodeProfile");
    const cJSON *ready = cond(st, "Ready");
    ck_assert_str_eq(str(ready, "status"), "True");
    ck_assert_str_eq(str(ready, "lastTransitionTime"), "2025-11-30T04:00:00Z");
    ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(ready, "observedGeneration")->valueint, 3);
    cJSON_Delete(st);

    /* no AMI: AMIsReady and Ready false with the reason */
    r.namis = 0;
    r.amis_ready = r.ready = 0;
    snprintf(r.reason, sizeof r.reason, "AMINotFound");
    snprintf(r.message, sizeof r.message, "AMISelector did not match any AMIs");
    st = nw_nodeclass_status_json(&r, nc, 0);
    ck_assert_str_eq(str(cond(st, "AMIsReady"), "status"), "False");
    ck_assert_str_eq(str(cond(st, "AMIsReady"), "reason"), "AMINotFound");
    ck_assert_str_eq(str(cond(st, "Ready"), "status"), "False");
    ck_assert_str_eq(str(cond(st, "Ready"), "reason"), "AMINotFound");
    ck_assert_str_eq(str(cond(st, "SubnetsReady"), "status"), "True");
    cJSON_Delete(st);
    cJSON_Delete(nc);
}
END_TEST

START_TEST(rejects_bad_objects)
{
    nw_nodeclass_resolved_t r;
    nw_err_t err = {0};
    cJSON *nc = cJSON_Parse("{\"spec\":{}}");
    ck_assert_int_eq(nw_nodeclass_resolve(NULL, nc, &r, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "metadata.name");
    cJSON_Delete(nc);
    nw_err_clear(&err);
    nc = cJSON_Parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"subnetSelectorTerms\":[]}}");
    ck_assert_int_eq(nw_nodeclass_resolve(NULL, nc, &r, &err), NW_EINVAL);
    ck_assert_str_eq(err.path, "spec.subnetSelectorTerms");
    cJSON_Delete(nc);
}
END_TEST

Suite *nw_nodeclass_suite(void)
{
    Suite *s = suite_create("nodeclass");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, status_ready);
    tcase_add_test(tc, rejects_bad_objects);
    suite_add_tcase(s, tc);
    return s;
}
