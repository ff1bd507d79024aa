/* Unit tests for scaler/fit (the minimal first-fit placement): pool choice by
 * weight, taints and selectors; GPU types only for GPU pods; packing onto one
 * claim; existing room used first; limits; reasons per pool; bad input. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/fit.h"

Suite *nw_fit_suite(void);

static const char *ITYPES =
    "[{\"name\":\"c.large\",\"labels\":{\"node.kubernetes.io/instance-type\":\"c.large\","
    "\"kubernetes.io/arch\":\"amd64\",\"karpenter.k8s.aws/instance-category\":\"c\"},"
    "\"capacity\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"29\"},"
    "\"allocatable\":{\"cpu\":\"1930m\",\"memory\":\"3Gi\",\"pods\":\"29\"},\"exotic\":false,"
    "\"offerings\":[{\"zone\":\"z1\",\"capacityType\":\"on-demand\",\"price\":0.1,\"available\":true}]},"
    "{\"name\":\"c.xlarge\",\"labels\":{\"node.kubernetes.io/instance-type\":\"c.xlarge\","
    "\"kubernetes.io/arch\":\"amd64\",\"karpenter.k8s.aws/instance-category\":\"c\"},"
    "\"capacity\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"58\"},"
    "\"allocatable\":{\"cpu\":\"3920m\",\"memory\":\"7Gi\",\"pods\":\"58\"},\"exotic\":false,"
    "\"offerings\":[{\"zone\":\"z1\",\"capacityType\":\"on-demand\",\"price\":0.2,\"available\":true},"
    "{\"zone\":\"z2\",\"capacityType\":\"spot\",\"price\":0.07,\"available\":false}]},"
    "{\"name\":\"g.xlarge\",\"labels\":{\"node.kubernetes.io/instance-type\":\"g.xlarge\","
    "\"kubernetes.io/arch\":\"amd64\",\"karpenter.k8s.aws/instance-category\":\"g\"},"
    "\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"58\",\"nvidia.com/gpu\":\"1\"},"
    "\"allocatable\":{\"cpu\":\"3920m\",\"memory\":\"14Gi\",\"pods\":\"58\",\"nvidia.com/gpu\":\"1\"},"
    "\"exotic\":true,"
    "\"offerings\":[{\"zone\":\"z1\",\"capacityType\":\"on-demand\",\"price\":0.05,\"available\":true}]}]";

#define POOL_CPU \
    "{\"metadata\":{\"name\":\"default\"},\"spec\":{\"template\":{\"metadata\":{\"labels\":" \
    "{\"workload\":\"general\"}},\"spec\":{\"requirements\":[{\"key\":\"kubernetes.io/arch\"," \
    "\"operator\":\"In\",\"values\":[\"amd64\"]}]}}%s}}"
static const char *POOL_GPU =
    "{\"metadata\":{\"name\":\"gpu\"},\"spec\":{\"weight\":10,\"template\":{\"metadata\":"
    "{\"labels\":{\"node.accelerator\":\"nvidia-gpu\"}},\"spec\":{\"taints\":[{\"key\":\"gpu\","
    "\"value\":\"true\",\"effect\":\"NoSchedule\"}],\"requirements\":[{\"key\":"
    "\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\",\"values\":[\"g\"]}]}}}}";

static char *pod(const char *name, const char *cpu, int gpu)
{
    char *b = malloc(1024);
    snprintf(b, 1024,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"d\"},\"spec\":{%s\"containers\":"
             "[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"128Mi\"%s}}}]}}",
             name,
             gpu ? "\"nodeSelector\":{\"node.accelerator\":\"nvidia-gpu\"},\"tolerations\":"
                   "[{\"key\":\"gpu\",\"operator\":\"Exists\"}],"
                 : "",
             cpu, gpu ? ",\"nvidia.com/gpu\":\"1\"" : "");
    return b;
}

static cJSON *parse(const char *s)
{
    cJSON *j = cJSON_ParseWithLengthOpts(s, strlen(s), NULL, 0);
    ck_assert_msg(j != NULL, "bad JSON: %s", s);
    return j;
}

/* input with pools (limits for the cpu pool or ""), pods, bins */
static cJSON *input(const char *limits, char **pods, int npods, const char *bins)
{
    cJSON *in = cJSON_CreateObject();
    cJSON *pools = cJSON_AddArrayToObject(in, "pools");
    char pc[1024];
    snprintf(pc, sizeof pc, POOL_CPU, limits);
    cJSON_AddItemToArray(pools, parse(pc));
    cJSON_AddItemToArray(pools, parse(POOL_GPU));
    cJSON *pend = cJSON_AddArrayToObject(in, "pending");
    for (int i = 0; i < npods; i++) {
        cJSON_AddItemToArray(pend, parse(pods[i]));
        free(pods[i]);
    }
    cJSON_AddItemToObject(in, "itypes", parse(ITYPES));
    cJSON_AddItemToObject(in, "bins", parse(bins ? bins : "[]"));
    return in;
}

static cJSON *solve(cJSON *in)
{
    cJSON *out = NULL;
    nw_err_t err = {0};
    ck_assert_msg(nw_fit_solve(in, &out, &err) == NW_OK, "solve: %s", err.msg);
    cJSON_Delete(in);
    return out;
}

#define GET(o, k) cJSON_GetObjectItemCaseSensitive((o), (k))

START_TEST(gpu_and_cpu_pools)
{
    char *p[] = {pod("w1", "550m", 0), pod("w2", "550m", 0), pod("w3", "550m", 0),
                 pod("w4", "550m", 0), pod("cuda", "100m", 1)};
    cJSON *out = solve(input("", p, 5, NULL));
    cJSON *claims = GET(out, "claims");
    ck_assert_int_eq(cJSON_GetArraySize(claims), 2);
    int seen_gpu = 0, seen_cpu = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, claims)
    {
        const char *pool = cJSON_GetStringValue(GET(c, "pool"));
        const char *first = cJSON_GetStringValue(cJSON_GetArrayItem(GET(c, "types"), 0));
        if (strcmp(pool, "gpu") == 0) {
            seen_gpu = 1;
            ck_assert_str_eq(first, "g.xlarge");
            ck_assert_int_eq(cJSON_GetArraySize(GET(c, "pods")), 1);
            ck_assert_str_eq(cJSON_GetStringValue(GET(GET(c, "requests"), "nvidia.com/gpu")), "1");
        } else {
            seen_cpu = 1;
            /* 4 x 550m need the xlarge; the GPU type is cheaper but not for CPU pods */
            ck_assert_str_eq(first, "c.xlarge");
            ck_assert_int_eq(cJSON_GetArraySize(GET(c, "types")), 1);
            ck_assert_int_eq(cJSON_GetArraySize(GET(c, "pods")), 4);
            ck_assert_str_eq(cJSON_GetStringValue(GET(c, "zone")), "z1");
            ck_assert_str_eq(cJSON_GetStringValue(GET(c, "capacityType")), "on-demand");
        }
    }
    ck_assert(seen_gpu && seen_cpu);
    ck_assert_int_eq(cJSON_GetArraySize(GET(out, "unschedulable")), 0);
    cJSON_Delete(out);
}
END_TEST

START_TEST(existing_room_first)
{
    char *p[] = {pod("w1", "500m", 0)};
    const char *bins = "[{\"name\":\"n1\",\"labels\":{\"kubernetes.io/arch\":\"amd64\"},"
                       "\"taints\":[],\"allocatable\":{\"cpu\":\"1\",\"memory\":\"1Gi\",\"pods\":\"10\"},"
                       "\"pods\":[]}]";
    cJSON *out = solve(input("", p, 1, bins));
    ck_assert_int_eq(cJSON_GetArraySize(GET(out, "claims")), 0);
    ck_assert_str_eq(cJSON_GetStringValue(GET(cJSON_GetArrayItem(GET(out, "placed"), 0), "bin")), "n1");
    cJSON_Delete(out);
}
END_TEST

START_TEST(full_bin_not_used)
{
    char *p[] = {pod("w1", "600m", 0)};
    char used[512];
    snprintf(used, sizeof used, "[{\"name\":\"n1\",\"labels\":{},\"taints\":[],\"allocatable\":"
                                "{\"cpu\":\"1\",\"memory\":\"1Gi\",\"pods\":\"10\"},\"pods\":[%s]}]",
             "{\"spec\":{\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"500m\"}}}]}}");
    cJSON *out = solve(input("", p, 1, used));
    ck_assert_int_eq(cJSON_GetArraySize(GET(out, "claims")), 1);
    ck_assert_int_eq(cJSON_GetArraySize(GET(out, "placed")), 0);
    cJSON_Delete(out);
}
END_TEST

START_TEST(limits_stop_new_claims)
{
    char *p[] = {pod("w1", "550m", 0), pod("w2", "550m", 0), pod("w3", "550m", 0),
                 pod("w4", "550m", 0)};
    cJSON *out = solve(input(",\"limits\":{\"cpu\":\"2\"}", p, 4, NULL));
    cJSON *claims = GET(out, "claims");
    ck_assert_int_eq(cJSON_GetArraySize(claims), 1);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(GET(cJSON_GetArrayItem(claims, 0), "types"), 0)),
                     "c.large");
    ck_assert_int_eq(cJSON_GetArraySize(GET(cJSON_GetArrayItem(claims, 0), "pods")), 3);
    cJSON *u = cJSON_GetArrayItem(GET(out, "unschedulable"), 0);
    ck_assert_ptr_nonnull(u);
    const char *r = cJSON_GetStringValue(GET(GET(u, "reasons"), "default"));
    ck_assert_ptr_nonnull(strstr(r, "exceed limits"));
    const char *g = cJSON_GetStringValue(GET(GET(u, "reasons"), "gpu"));
    ck_assert_ptr_nonnull(strstr(g, "did not tolerate gpu=true:NoSchedule"));
    cJSON_Delete(out);
}
END_TEST

START_TEST(too_big_and_incompatible)
{
    char *p[] = {pod("huge", "64", 0)};
    cJSON *out = solve(input("", p, 1, NULL));
    ck_assert_int_eq(cJSON_GetArraySize(GET(out, "claims")), 0);
    const char *r = cJSON_GetStringValue(
        GET(GET(cJSON_GetArrayItem(GET(out, "unschedulable"), 0), "reasons"), "default"));
    ck_assert_ptr_nonnull(strstr(r, "no instance type"));
    cJSON_Delete(out);
}
END_TEST

START_TEST(bad_input_named)
{
    cJSON *in = parse("{\"pools\":[{\"spec\":{}}]}");
    cJSON *out = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_fit_solve(in, &out, &err), NW_EINVAL);
    ck_assert_ptr_null(out);
    ck_assert_ptr_nonnull(strstr(err.msg, "metadata.name"));
    cJSON_Delete(in);
    char *bad = pod("x", "lots", 0);
    cJSON *pj = parse(bad);
    free(bad);
    ck_assert_ptr_null(nw_fit_pod_requests(pj, NULL));
    cJSON_Delete(pj);
}
END_TEST

Suite *nw_fit_suite(void)
{
    Suite *s = suite_create("fit");
    TCase *tc = tcase_create("fit");
    tcase_add_test(tc, gpu_and_cpu_pools);
    tcase_add_test(tc, existing_room_first);
    tcase_add_test(tc, full_bin_not_used);
    tcase_add_test(tc, limits_stop_new_claims);
    tcase_add_test(tc, too_big_and_incompatible);
    tcase_add_test(tc, bad_input_named);
    suite_add_tcase(s, tc);
    return s;
}
