/* Unit tests for scaler/poolstatus: the registration-health window (Karpenter's
 * nodepoolhealth tracker), the computed NodePool status (resources, nodes, conditions,
 * transition times) and the runtime validation. */
#include <check.h>
#include <string.h>

#include "common/json.h"
#include "common/clock.h"
#include "scaler/controllers/poolstatus.h"

Suite *nw_poolstatus_suite(void);

static cJSON *parse(const char *s)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(s, strlen(s) + 1, &end, 1);
    ck_assert_msg(j != NULL, "bad JSON: %s", s);
    return j;
}

START_TEST(window)
{
    nw_reghealth_t t;
    nw_poolstatus_reghealth_reset(&t);
    ck_assert_int_eq(nw_poolstatus_reghealth_status(&t), NW_REGHEALTH_UNKNOWN);
    /* one failure in a window of 4 stays below half */
    ck_assert_int_eq(nw_poolstatus_reghealth_dry_run(&t, 0), NW_REGHEALTH_HEALTHY);
    nw_poolstatus_reghealth_update(&t, 0);
    ck_assert_int_eq(nw_poolstatus_reghealth_status(&t), NW_REGHEALTH_HEALTHY);
    ck_assert_int_eq(nw_poolstatus_reghealth_dry_run(&t, 0), NW_REGHEALTH_UNHEALTHY);
    nw_poolstatus_reghealth_update(&t, 0);
    ck_assert_int_eq(nw_poolstatus_reghealth_status(&t), NW_REGHEALTH_UNHEALTHY);
    /* after two failures one success is not enough ([F F T]: 2/4) */
    ck_assert_int_eq(nw_poolstatus_reghealth_dry_run(&t, 1), NW_REGHEALTH_UNHEALTHY);
    nw_poolstatus_reghealth_update(&t, 1);
    nw_poolstatus_reghealth_update(&t, 1); /* [F F T T] still 2/4 */
    ck_assert_int_eq(nw_poolstatus_reghealth_status(&t), NW_REGHEALTH_UNHEALTHY);
    nw_poolstatus_reghealth_update(&t, 1); /* the oldest failure falls out: [F T T T] */
    ck_assert_int_eq(nw_poolstatus_reghealth_status(&t), NW_REGHEALTH_HEALTHY);
    /* dry runs do not change the window */
    nw_reghealth_t before = t;
    (void)nw_poolstatus_reghealth_dry_run(&t, 0);
    ck_assert_mem_eq(&before, &t, sizeof t);
    nw_poolstatus_reghealth_set(&t, NW_REGHEALTH_UNHEALTHY);
    ck_assert_int_eq(t.len, 2);
    ck_assert_int_eq(nw_poolstatus_reghealth_status(&t), NW_REGHEALTH_UNHEALTHY);
    nw_poolstatus_reghealth_set(&t, NW_REGHEALTH_HEALTHY);
    ck_assert_int_eq(t.len, 1);
    ck_assert_int_eq(nw_poolstatus_reghealth_status(&t), NW_REGHEALTH_HEALTHY);
    nw_poolstatus_reghealth_set(&t, NW_REGHEALTH_UNKNOWN);
    ck_assert_int_eq(nw_poolstatus_reghealth_status(&t), NW_REGHEALTH_UNKNOWN);
}
END_TEST

static const char *POOL = "{\"metadata\":{\"name\":\"default\",\"generation\":1},\"spec\":{"
                          "\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":"
                          "\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},"
                          "\"requirements\":[]}}}}";
static const char *CLASS_READY =
    "{\"metadata\":{\"name\":\"default\",\"generation\":3},\"status\":{\"conditions\":["
    "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Ready\"}]}}";

static const cJSON *cond(const cJSON *st, const char *type)
{
    const cJSON *cd;
    cJSON_ArrayForEach(cd, nw_json_get(st, "conditions"))
    {
        if (strcmp(nw_json_str(cd, "type"), type) == 0)
            return cd;
    }
    return NULL;
}

static const char *cs(const cJSON *st, const char *type)
{
    return nw_json_str(cond(st, type), "status");
}

static const char *cr(const cJSON *st, const char *type)
{
    return nw_json_str(cond(st, type), "reason");
}

static const char *res(const cJSON *st, const char *name)
{
    return nw_json_str(nw_json_get(st, "resources"), name);
}

/* compute, and store the result as the pool's status (what the write would do) */
static cJSON *step(cJSON *pool, const cJSON *class, const cJSON *const *claims,
                   const cJSON *const *nodes, size_t n, nw_reghealth_t *t, const int *ev,
                   size_t nev, int64_t now)
{
    nw_poolstatus_in_t in = {pool, class, claims, nodes, n, NULL, t, ev, nev, now};
    cJSON *st = nw_poolstatus_compute(&in);
    ck_assert_ptr_nonnull(st);
    cJSON_DeleteItemFromObjectCaseSensitive(pool, "status");
    cJSON_AddItemToObject(pool, "status", st);
    return st;
}

START_TEST(resources_and_nodes)
{
    cJSON *pool = parse(POOL), *class = parse(CLASS_READY);
    cJSON *a = parse("{\"metadata\":{\"name\":\"a\"},\"status\":{\"providerID\":\"aws:///z/i-1\","
                     "\"capacity\":{\"cpu\":\"2\",\"memory\":\"8Gi\",\"pods\":\"29\"}}}");
    cJSON *b = parse("{\"metadata\":{\"name\":\"b\"},\"status\":{\"providerID\":\"aws:///z/i-2\","
                     "\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"58\","
                     "\"nvidia.com/gpu\":\"1\"}}}");
    /* b's Node reports its own capacity: that one counts */
    cJSON *bn =
        parse("{\"status\":{\"capacity\":{\"cpu\":\"4\",\"memory\":\"15Gi\",\"pods\":\"58\","
              "\"nvidia.com/gpu\":\"1\",\"ephemeral-storage\":\"20Gi\"}}}");
    cJSON *gone =
        parse("{\"metadata\":{\"name\":\"c\",\"deletionTimestamp\":\"2026-11-30T00:00:00Z\"},"
              "\"status\":{\"providerID\":\"aws:///z/i-3\",\"capacity\":{\"cpu\":\"64\"}}}");
    cJSON *unlaunched = parse("{\"metadata\":{\"name\":\"d\"},\"spec\":{}}");
    const cJSON *claims[] = {a, b, gone, unlaunched};
    const cJSON *nodes[] = {NULL, bn, NULL, NULL};
    nw_reghealth_t t;
    nw_poolstatus_reghealth_reset(&t);
    int64_t now = 0;
    nw_clock_time_parse("2026-11-30T01:00:00Z", &now);
    cJSON *st = step(pool, class, claims, nodes, 4, &t, NULL, 0, now);
    ck_assert_int_eq((int)cJSON_GetNumberValue(nw_json_get(st, "nodes")), 2);
    ck_assert_str_eq(res(st, "nodes"), "2");
    ck_assert_str_eq(res(st, "cpu"), "6");
    ck_assert_str_eq(res(st, "memory"), "23Gi");
    ck_assert_str_eq(res(st, "pods"), "87");
    ck_assert_str_eq(res(st, "nvidia.com/gpu"), "1");
    ck_assert_str_eq(res(st, "ephemeral-storage"), "20Gi");
    /* no NodeClaims: every base resource is 0 */
    st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, now);
    ck_assert_int_eq((int)cJSON_GetNumberValue(nw_json_get(st, "nodes")), 0);
    const char *base[] = {"cpu", "memory", "pods", "ephemeral-storage", "nodes"};
    for (int i = 0; i < 5; i++)
        ck_assert_str_eq(res(st, base[i]), "0");
    ck_assert_ptr_null(res(st, "nvidia.com/gpu"));
    ck_assert_str_eq(cs(st, "Ready"), "True");
    cJSON_Delete(pool);
    cJSON_Delete(class);
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(bn);
    cJSON_Delete(gone);
    cJSON_Delete(unlaunched);
}
END_TEST

START_TEST(readiness)
{
    cJSON *pool = parse(POOL);
    nw_reghealth_t t;
    nw_poolstatus_reghealth_reset(&t);
    int64_t t0 = 0, t1 = 0;
    nw_clock_time_parse("2026-11-30T01:00:00Z", &t0);
    nw_clock_time_parse("2026-11-30T02:00:00Z", &t1);
    /* class missing */
    cJSON *st = step(pool, NULL, NULL, NULL, 0, &t, NULL, 0, t0);
    ck_assert_str_eq(cs(st, "ValidationSucceeded"), "True");
    ck_assert_str_eq(cs(st, "NodeClassReady"), "False");
    ck_assert_str_eq(cr(st, "NodeClassReady"), "NodeClassNotFound");
    ck_assert_str_eq(cs(st, "Ready"), "False");
    ck_assert_str_eq(cr(st, "Ready"), "UnhealthyDependents");
    ck_assert_str_eq(nw_json_str(cond(st, "Ready"), "message"), "NodeClassReady=False");
    ck_assert_ptr_null(cond(st, "NodeRegistrationHealthy"));
    /* class present but its readiness unknown */
    cJSON *class = parse("{\"metadata\":{\"name\":\"default\",\"generation\":1}}");
    st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, t1);
    ck_assert_str_eq(cr(st, "NodeClassReady"), "NodeClassReadinessUnknown");
    /* the status stayed False: the transition time is the first one */
    ck_assert_str_eq(nw_json_str(cond(st, "Ready"), "lastTransitionTime"), "2026-11-30T01:00:00Z");
    cJSON_Delete(class);
    /* class not ready: its reason and message are passed on */
    class =
        parse("{\"metadata\":{\"name\":\"default\",\"generation\":1},\"status\":{\"conditions\":"
              "[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"SubnetsNotFound\","
              "\"message\":\"SubnetSelector did not match any Subnets\"}]}}");
    st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, t1);
    ck_assert_str_eq(cr(st, "NodeClassReady"), "SubnetsNotFound");
    ck_assert_str_eq(nw_json_str(cond(st, "NodeClassReady"), "message"),
                     "SubnetSelector did not match any Subnets");
    cJSON_Delete(class);
    /* class terminating */
    class = parse("{\"metadata\":{\"name\":\"default\",\"generation\":1,\"deletionTimestamp\":"
                  "\"2026-11-30T00:00:00Z\"},\"status\":{\"conditions\":[{\"type\":\"Ready\","
                  "\"status\":\"True\"}]}}");
    st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, t1);
    ck_assert_str_eq(cr(st, "NodeClassReady"), "NodeClassTerminating");
    cJSON_Delete(class);
    /* ready class: Ready True, transition now */
    class = parse(CLASS_READY);
    st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, t1);
    ck_assert_str_eq(cs(st, "NodeClassReady"), "True");
    ck_assert_str_eq(cs(st, "Ready"), "True");
    ck_assert_str_eq(nw_json_str(cond(st, "Ready"), "lastTransitionTime"), "2026-11-30T02:00:00Z");
    ck_assert_int_eq(
        (int)cJSON_GetNumberValue(nw_json_get(cond(st, "Ready"), "observedGeneration")), 1);
    /* invalid at runtime: ValidationSucceeded False, Ready False */
    nw_poolstatus_in_t in = {pool, class, NULL, NULL, 0, "bad requirement", &t, NULL, 0, t1};
    cJSON *st2 = nw_poolstatus_compute(&in);
    ck_assert_str_eq(cs(st2, "ValidationSucceeded"), "False");
    ck_assert_str_eq(cr(st2, "ValidationSucceeded"), "NodePoolValidationFailed");
    ck_assert_str_eq(nw_json_str(cond(st2, "ValidationSucceeded"), "message"), "bad requirement");
    ck_assert_str_eq(cs(st2, "Ready"), "False");
    ck_assert_str_eq(nw_json_str(cond(st2, "Ready"), "message"), "ValidationSucceeded=False");
    cJSON_Delete(st2);
    cJSON_Delete(class);
    cJSON_Delete(pool);
}
END_TEST

START_TEST(registration_health)
{
    cJSON *pool = parse(POOL), *class = parse(CLASS_READY);
    nw_reghealth_t t;
    nw_poolstatus_reghealth_reset(&t);
    int64_t now = 0;
    nw_clock_time_parse("2026-11-30T01:00:00Z", &now);
    cJSON *st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, now);
    ck_assert_str_eq(cs(st, "NodeRegistrationHealthy"), "Unknown");
    ck_assert_str_eq(cr(st, "NodeRegistrationHealthy"), "AwaitingReconciliation");
    ck_assert_int_eq((int)cJSON_GetNumberValue(nw_json_get(st, "nodeClassObservedGeneration")), 3);
    /* one failure: not yet */
    int fail = 0, ok = 1;
    st = step(pool, class, NULL, NULL, 0, &t, &fail, 1, now);
    ck_assert_str_eq(cs(st, "NodeRegistrationHealthy"), "Unknown");
    /* a second failure: False */
    st = step(pool, class, NULL, NULL, 0, &t, &fail, 1, now);
    ck_assert_str_eq(cs(st, "NodeRegistrationHealthy"), "False");
    ck_assert_str_eq(cr(st, "NodeRegistrationHealthy"), "RegistrationFailed");
    ck_assert_str_eq(nw_json_str(cond(st, "NodeRegistrationHealthy"), "message"),
                     "Failed to register node");
    /* Ready does not depend on it */
    ck_assert_str_eq(cs(st, "Ready"), "True");
    /* one registration after two failures is not enough */
    st = step(pool, class, NULL, NULL, 0, &t, &ok, 1, now);
    ck_assert_str_eq(cs(st, "NodeRegistrationHealthy"), "False");
    /* restart: the window is refilled from the condition (False = two failures) */
    nw_poolstatus_reghealth_reset(&t);
    int two_ok[] = {1, 1};
    st = step(pool, class, NULL, NULL, 0, &t, two_ok, 2, now);
    ck_assert_str_eq(cs(st, "NodeRegistrationHealthy"), "False");
    st = step(pool, class, NULL, NULL, 0, &t, &ok, 1, now);
    ck_assert_str_eq(cs(st, "NodeRegistrationHealthy"), "True");
    ck_assert_str_eq(cr(st, "NodeRegistrationHealthy"), "NodeRegistrationHealthy");
    /* the NodePool changed (generation): back to Unknown, window emptied */
    cJSON_ReplaceItemInObjectCaseSensitive(nw_json_get_mut(pool, "metadata"), "generation",
                                           cJSON_CreateNumber(2));
    st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, now);
    ck_assert_str_eq(cs(st, "NodeRegistrationHealthy"), "Unknown");
    ck_assert_int_eq(nw_poolstatus_reghealth_status(&t), NW_REGHEALTH_UNKNOWN);
    /* a registration: True at once */
    st = step(pool, class, NULL, NULL, 0, &t, &ok, 1, now);
    ck_assert_str_eq(cs(st, "NodeRegistrationHealthy"), "True");
    /* the EC2NodeClass changed (generation): Unknown again */
    cJSON_ReplaceItemInObjectCaseSensitive(nw_json_get_mut(class, "metadata"), "generation",
                                           cJSON_CreateNumber(4));
    st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, now);
    ck_assert_str_eq(cs(st, "NodeRegistrationHealthy"), "Unknown");
    ck_assert_int_eq((int)cJSON_GetNumberValue(nw_json_get(st, "nodeClassObservedGeneration")), 4);
    /* stable: computing again changes nothing */
    cJSON *again = cJSON_Duplicate(st, 1);
    st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, now + NW_NS_PER_SEC);
    ck_assert(cJSON_Compare(again, st, 1));
    cJSON_Delete(again);
    cJSON_Delete(pool);
    cJSON_Delete(class);
}
END_TEST

/* A budget schedule that is not cron: DisruptionBudgetsValid False naming it; True once
 * fixed; absent for a pool that never had one; Ready not affected. */
START_TEST(budget_schedule_condition)
{
    cJSON *pool = parse(POOL);
    cJSON *class = parse(CLASS_READY);
    nw_reghealth_t t;
    nw_poolstatus_reghealth_reset(&t);
    int64_t t0 = 0;
    nw_clock_time_parse("2026-11-30T01:00:00Z", &t0);
    cJSON *st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, t0);
    ck_assert_ptr_null(cond(st, "DisruptionBudgetsValid"));
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(pool, "spec");
    cJSON_AddItemToObject(spec, "disruption",
                          parse("{\"budgets\":[{\"nodes\":\"1\",\"schedule\":\"@daily\","
                                "\"duration\":\"1h\"},{\"nodes\":\"0\",\"schedule\":"
                                "\"99 99 99 99 99\",\"duration\":\"1h\"}]}"));
    st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, t0);
    ck_assert_str_eq(cs(st, "DisruptionBudgetsValid"), "False");
    ck_assert_str_eq(cr(st, "DisruptionBudgetsValid"), "InvalidSchedule");
    ck_assert_str_eq(nw_json_str(cond(st, "DisruptionBudgetsValid"), "message"),
                     "spec.disruption.budgets[1].schedule 99 99 99 99 99 is not a cron schedule "
                     "(minute field \"99\" out of range 0-59); it is never active and allows 0 "
                     "disruptions");
    ck_assert_str_eq(cs(st, "Ready"), "True");
    cJSON *b1 =
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(spec, "disruption"), "budgets"),
                           1);
    cJSON_ReplaceItemInObjectCaseSensitive(b1, "schedule", cJSON_CreateString("*/5 * * * *"));
    st = step(pool, class, NULL, NULL, 0, &t, NULL, 0, t0);
    ck_assert_str_eq(cs(st, "DisruptionBudgetsValid"), "True");
    cJSON_Delete(class);
    cJSON_Delete(pool);
}
END_TEST

START_TEST(validate)
{
    char msg[512];
    cJSON *p = parse(POOL);
    ck_assert_int_eq(nw_poolstatus_validate(p, msg, sizeof msg), 1);
    ck_assert_str_eq(msg, "");
    cJSON_Delete(p);
    /* passes admission, fails Karpenter's runtime check (not a well-known label) */
    p = parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":"
              "{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"d\"},"
              "\"requirements\":[{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\","
              "\"values\":[\"cheap\"]}]}}}}");
    ck_assert_int_eq(nw_poolstatus_validate(p, msg, sizeof msg), 0);
    ck_assert_msg(strstr(msg, "capacity-type") != NULL, "%s", msg);
    cJSON_Delete(p);
}
END_TEST

Suite *nw_poolstatus_suite(void)
{
    Suite *s = suite_create("poolstatus");
    TCase *tc = tcase_create("poolstatus");
    tcase_add_test(tc, window);
    tcase_add_test(tc, resources_and_nodes);
    tcase_add_test(tc, readiness);
    tcase_add_test(tc, registration_health);
    tcase_add_test(tc, validate);
    tcase_add_test(tc, budget_schedule_condition);
    suite_add_tcase(s, tc);
    return s;
}
