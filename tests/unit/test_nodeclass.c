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
    nw_nc_ami_t ami[] = {{"ami-1", "img-x86", "amd64", "", 1, 0},
                         {"ami-2", "img-arm", "arm64", "", 1, 0}};
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

/* ValidationSucceeded: only when the cache's hook judged the class; its reason on Ready when
 * the selectors found everything */
START_TEST(validation_status)
{
    nw_nodeclass_resolved_t r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "al2023");
    r.subnets_ready = r.sgs_ready = r.amis_ready = r.ready = 1;
    cJSON *nc = cJSON_Parse("{\"metadata\":{\"name\":\"al2023\",\"generation\":2},\"spec\":{}}");
    cJSON *st = nw_nodeclass_status_json(&r, nc, 0);
    ck_assert_ptr_null(cond(st, "ValidationSucceeded"));
    cJSON_Delete(st);
    r.validated = 1;
    r.valid_ready = 0;
    r.ready = 0;
    snprintf(r.valid_reason, sizeof r.valid_reason, "ClusterCIDRNotFound");
    snprintf(r.valid_message, sizeof r.valid_message, "no service CIDR for AL2023's NodeConfig");
    snprintf(r.reason, sizeof r.reason, "ClusterCIDRNotFound");
    snprintf(r.message, sizeof r.message, "no service CIDR for AL2023's NodeConfig");
    st = nw_nodeclass_status_json(&r, nc, 0);
    ck_assert_str_eq(str(cond(st, "ValidationSucceeded"), "status"), "False");
    ck_assert_str_eq(str(cond(st, "ValidationSucceeded"), "reason"), "ClusterCIDRNotFound");
    ck_assert_str_eq(str(cond(st, "Ready"), "status"), "False");
    ck_assert_str_eq(str(cond(st, "Ready"), "reason"), "ClusterCIDRNotFound");
    ck_assert_str_eq(str(cond(st, "Ready"), "message"), "no service CIDR for AL2023's NodeConfig");
    ck_assert_str_eq(str(cond(st, "SubnetsReady"), "status"), "True");
    cJSON_Delete(st);
    r.valid_ready = r.ready = 1;
    r.reason[0] = r.message[0] = 0;
    st = nw_nodeclass_status_json(&r, nc, 0);
    ck_assert_str_eq(str(cond(st, "ValidationSucceeded"), "status"), "True");
    ck_assert_str_eq(str(cond(st, "Ready"), "status"), "True");
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

/* an alias's variants: the AMI a type launches with, and the status requirements */
START_TEST(variants_pick_and_status)
{
    nw_nodeclass_resolved_t r;
    memset(&r, 0, sizeof r);
    nw_nc_ami_t ami[] = {{"ami-std", "std", "amd64", "standard", 1, 0},
                         {"ami-gpu", "gpu", "amd64", "nvidia", 1, 0},
                         {"ami-neu", "neu", "amd64", "neuron", 1, 0},
                         {"ami-arm", "arm", "arm64", "standard", 1, 0}};
    r.amis = ami;
    r.namis = 4;
    nw_itype_t plain, g6, inf2, graviton, gpu_arm;
    memset(&plain, 0, sizeof plain);
    snprintf(plain.arch, sizeof plain.arch, "amd64");
    g6 = inf2 = plain;
    g6.gpu_count = 1;
    inf2.accel_count = 1;
    graviton = plain;
    snprintf(graviton.arch, sizeof graviton.arch, "arm64");
    gpu_arm = graviton;
    gpu_arm.gpu_count = 1;
    ck_assert_str_eq(nw_nodeclass_ami_for(&r, &plain)->id, "ami-std");
    ck_assert_str_eq(nw_nodeclass_ami_for(&r, &g6)->id, "ami-gpu");
    ck_assert_str_eq(nw_nodeclass_ami_for(&r, &inf2)->id, "ami-neu");
    ck_assert_str_eq(nw_nodeclass_ami_for(&r, &graviton)->id, "ami-arm");
    ck_assert_ptr_null(nw_nodeclass_ami_for(&r, &gpu_arm)); /* no arm64 nvidia image */
    cJSON *nc = cJSON_Parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{}}");
    r.amis_ready = 1;
    cJSON *st = nw_nodeclass_status_json(&r, nc, 0);
    const cJSON *amis = cJSON_GetObjectItemCaseSensitive(st, "amis");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetArrayItem(amis, 0), "requirements")),
                     3); /* arch + no GPU + no accelerator */
    const cJSON *g = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(amis, 1), "requirements"), 1);
    ck_assert_str_eq(str(g, "key"), "karpenter.k8s.aws/instance-gpu-count");
    ck_assert_str_eq(str(g, "operator"), "Exists");
    cJSON_Delete(st);
    cJSON_Delete(nc);
    ck_assert_str_eq(nw_nodeclass_alias_family("al2023@latest"), "AL2023");
    ck_assert_str_eq(nw_nodeclass_alias_family("Bottlerocket@v1.30.0"), "Bottlerocket");
    ck_assert_ptr_null(nw_nodeclass_alias_family("ubuntu@latest"));
    /* SSM's answer */
    char v[64];
    nw_err_t err = {0};
    const char *ok = "{\"Parameter\":{\"Name\":\"/a\",\"Value\":\"ami-0abc\",\"Version\":1}}";
    ck_assert_int_eq(nw_ssm_parse(ok, strlen(ok), v, sizeof v, &err), NW_OK);
    ck_assert_str_eq(v, "ami-0abc");
    ck_assert_int_eq(nw_ssm_parse("{}", 2, v, sizeof v, &err), NW_EPARSE);
    ck_assert_int_eq(nw_ssm_parse("nope", 4, v, sizeof v, &err), NW_EPARSE);
}
END_TEST

/* status.capacityReservations as aws/karpenter-provider-aws capacityreservation_test.go
 * expects it: It("should resolve capacity reservations by ID") (no endTime, default,
 * active), It("should mark capacity blocks as expiring 40 minutes prior to their
 * endDate"); and the parse of DescribeCapacityReservations */
START_TEST(capacity_reservations_status)
{
    nw_nodeclass_resolved_t r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "default");
    nw_nc_cr_t crs[2];
    memset(crs, 0, sizeof crs);
    snprintf(crs[0].id, sizeof crs[0].id, "cr-m5large1a1");
    snprintf(crs[0].type, sizeof crs[0].type, "m5.large");
    snprintf(crs[0].zone, sizeof crs[0].zone, "test-zone-1a");
    snprintf(crs[0].owner, sizeof crs[0].owner, "012345678901");
    snprintf(crs[0].match, sizeof crs[0].match, "targeted");
    snprintf(crs[0].reservation_type, sizeof crs[0].reservation_type, "default");
    crs[1] = crs[0];
    snprintf(crs[1].id, sizeof crs[1].id, "cr-p548xlarge1a");
    snprintf(crs[1].type, sizeof crs[1].type, "p5.48xlarge");
    snprintf(crs[1].reservation_type, sizeof crs[1].reservation_type, "capacity-block");
    crs[1].expiring = 1;
    crs[1].end_ns = INT64_C(1764477600) * 1000000000;
    r.crs = crs;
    r.ncrs = 2;
    r.crs_selected = r.crs_ready = 1;
    cJSON *nc = cJSON_Parse("{\"metadata\":{\"name\":\"default\"},\"spec\":{}}");
    cJSON *st = nw_nodeclass_status_json(&r, nc, INT64_C(1764475200) * 1000000000);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(st, "capacityReservations");
    ck_assert_int_eq(cJSON_GetArraySize(a), 2);
    const cJSON *c0 = cJSON_GetArrayItem(a, 0), *c1 = cJSON_GetArrayItem(a, 1);
    ck_assert_str_eq(str(c0, "id"), "cr-m5large1a1");
    ck_assert_str_eq(str(c0, "instanceType"), "m5.large");
    ck_assert_str_eq(str(c0, "availabilityZone"), "test-zone-1a");
    ck_assert_str_eq(str(c0, "ownerID"), "012345678901");
    ck_assert_str_eq(str(c0, "instanceMatchCriteria"), "targeted");
    ck_assert_str_eq(str(c0, "reservationType"), "default");
    ck_assert_str_eq(str(c0, "state"), "active");
    ck_assert_ptr_null(str(c0, "endTime"));
    ck_assert_str_eq(str(c1, "reservationType"), "capacity-block");
    ck_assert_str_eq(str(c1, "state"), "expiring");
    ck_assert_str_eq(str(c1, "endTime"), "2025-11-30T04:40:00Z");
    ck_assert_str_eq(str(cond(st, "CapacityReservationsReady"), "status"), "True");
    cJSON_Delete(st);
    /* a failed query: the condition says so */
    r.crs_ready = 0;
    r.ncrs = 0;
    snprintf(r.crs_message, sizeof r.crs_message, "Failed to list capacity reservations: denied");
    st = nw_nodeclass_status_json(&r, nc, 0);
    const cJSON *cc = cond(st, "CapacityReservationsReady");
    ck_assert_str_eq(str(cc, "status"), "False");
    ck_assert_str_eq(str(cc, "reason"), "CapacityReservationsResolutionFailed");
    ck_assert_int_eq(
        cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(st, "capacityReservations")), 0);
    cJSON_Delete(st);
    cJSON_Delete(nc);

    const char *xml =
        "<DescribeCapacityReservationsResponse><requestId>1</requestId>"
        "<capacityReservationSet><item><capacityReservationId>cr-1</capacityReservationId>"
        "<ownerId>012345678901</ownerId><instanceType>p5.48xlarge</instanceType>"
        "<availabilityZone>us-west-2a</availabilityZone><availabilityZoneId>usw2-az1"
        "</availabilityZoneId><totalInstanceCount>2</totalInstanceCount>"
        "<availableInstanceCount>1</availableInstanceCount><state>active</state>"
        "<instanceMatchCriteria>targeted</instanceMatchCriteria><reservationType>capacity-block"
        "</reservationType><endDate>2025-11-30T04:40:00.000Z</endDate><interruptible>true"
        "</interruptible></item></capacityReservationSet><nextToken>n2</nextToken>"
        "</DescribeCapacityReservationsResponse>";
    nw_ec2_crs_t l = {0};
    char next[16];
    nw_err_t err = {0};
    ck_assert_int_eq(
        nw_ec2xml_parse_capacity_reservations(xml, strlen(xml), &l, next, sizeof next, &err),
        NW_OK);
    ck_assert_uint_eq(l.n, 1);
    ck_assert_str_eq(l.v[0].id, "cr-1");
    ck_assert_str_eq(l.v[0].reservation_type, "capacity-block");
    ck_assert_int_eq(l.v[0].available, 1);
    ck_assert_int_eq(l.v[0].total, 2);
    ck_assert_int_eq(l.v[0].interruptible, 1);
    ck_assert(l.v[0].end_ns == INT64_C(1764477600) * 1000000000);
    ck_assert_str_eq(next, "n2");
    nw_ec2xml_crs_free(&l);
    /* an item without its id is an error naming the set */
    const char *bad = "<DescribeCapacityReservationsResponse><capacityReservationSet><item>"
                      "<instanceType>m5.large</instanceType></item></capacityReservationSet>"
                      "</DescribeCapacityReservationsResponse>";
    ck_assert_int_eq(nw_ec2xml_parse_capacity_reservations(bad, strlen(bad), &l, NULL, 0, &err),
                     NW_EPARSE);
    nw_ec2xml_crs_free(&l);
}
END_TEST

Suite *nw_nodeclass_suite(void)
{
    Suite *s = suite_create("nodeclass");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, status_ready);
    tcase_add_test(tc, validation_status);
    tcase_add_test(tc, rejects_bad_objects);
    tcase_add_test(tc, variants_pick_and_status);
    tcase_add_test(tc, capacity_reservations_status);
    suite_add_tcase(s, tc);
    return s;
}
