/* Unit tests for scaler/disrupt/drain (the pure drain decisions): pod
 * classification (terminal, terminating, stuck, mirror, DaemonSet, critical,
 * tolerating the disrupted taint, do-not-disrupt "true"/durations/invalid values),
 * which pods are waited for and which are evicted, the four waves, the TGP deadline
 * (force deletes, their grace), the per-pod backoff and the annotation. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "scaler/disrupt/drain.h"
#include "tests/unit/testutil.h"

Suite *nw_drain_suite(void);

/* 2026-11-30T12:00:00Z */
#define NOW (INT64_C(1796040000) * NW_NS_PER_SEC)
#define S(x) ((int64_t)(x)*NW_NS_PER_SEC)

static cJSON *pod(const char *json)
{
    cJSON *p = cJSON_Parse(json);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* A NodeClaim's record (api/node.h), as the cache holds it. */
static nw_node_claim_t *claim(const char *json)
{
    cJSON *j = pod(json);
    nw_node_claim_t *c = NULL;
    nw_err_t err = {0};
    ck_assert_msg(nw_node_claim_decode(j, &c, &err) == NW_OK, "%s: %s", err.path, err.msg);
    cJSON_Delete(j);
    return c;
}

static nw_drain_pod_t classify(const char *json, int64_t now)
{
    cJSON *p = pod(json);
    nw_drain_pod_t d;
    nw_drain_classify(nw_test_pod(p), now, &d);
    cJSON_Delete(p);
    return d;
}

START_TEST(now_is_what_the_tests_say)
{
    char b[40];
    ck_assert_str_eq(nw_clock_time_format(NOW, b, sizeof b), "2026-11-30T12:00:00Z");
}
END_TEST

START_TEST(classify_plain_pod)
{
    nw_drain_pod_t d =
        classify("{\"metadata\":{\"name\":\"a\"},\"spec\":{\"terminationGracePeriodSeconds\":30},"
                 "\"status\":{\"phase\":\"Running\"}}",
                 NOW);
    ck_assert(!d.terminal && !d.terminating && !d.stuck && !d.mirror && !d.daemonset &&
              !d.critical);
    ck_assert(!d.tolerates_disrupted && !d.do_not_disrupt && !d.dnd_invalid);
    ck_assert(d.has_grace && d.grace_s == 30);
    ck_assert(nw_drain_waits_for(&d) && nw_drain_evictable(&d));
    ck_assert_int_eq(nw_drain_wave(&d), NW_WAVE_NONCRITICAL);
}
END_TEST

START_TEST(classify_terminal_and_terminating)
{
    nw_drain_pod_t d = classify("{\"status\":{\"phase\":\"Succeeded\"}}", NOW);
    ck_assert(d.terminal && !nw_drain_waits_for(&d) && !nw_drain_evictable(&d));
    d = classify("{\"status\":{\"phase\":\"Failed\"}}", NOW);
    ck_assert(d.terminal && !nw_drain_waits_for(&d));
    /* terminating 59 s past its deletionTimestamp: still waited for, not evictable */
    d = classify("{\"metadata\":{\"deletionTimestamp\":\"2026-11-30T11:59:01Z\"},"
                 "\"status\":{\"phase\":\"Running\"}}",
                 NOW);
    ck_assert(d.terminating && !d.stuck && d.deletion_ns == NOW - S(59));
    ck_assert(nw_drain_waits_for(&d) && !nw_drain_evictable(&d));
    /* 61 s: stuck, the drain stops waiting */
    d = classify("{\"metadata\":{\"deletionTimestamp\":\"2026-11-30T11:58:59Z\"},"
                 "\"status\":{\"phase\":\"Running\"}}",
                 NOW);
    ck_assert(d.terminating && d.stuck && !nw_drain_waits_for(&d));
    /* a deletionTimestamp in the future (graceful deletion under way) */
    d = classify("{\"metadata\":{\"deletionTimestamp\":\"2026-11-30T12:00:30Z\"}}", NOW);
    ck_assert(d.terminating && !d.stuck && nw_drain_waits_for(&d));
    /* Pending is neither terminal nor skipped */
    d = classify("{\"status\":{\"phase\":\"Pending\"}}", NOW);
    ck_assert(!d.terminal && nw_drain_waits_for(&d) && nw_drain_evictable(&d));
}
END_TEST

START_TEST(classify_owners_and_priority)
{
    nw_drain_pod_t d =
        classify("{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":"
                 "\"Node\",\"name\":\"n1\"}]}}",
                 NOW);
    ck_assert(d.mirror && !nw_drain_waits_for(&d) && !nw_drain_evictable(&d));
    d = classify("{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
                 "\"DaemonSet\",\"name\":\"ds\"}]}}",
                 NOW);
    ck_assert(d.daemonset && nw_drain_waits_for(&d) && nw_drain_evictable(&d));
    ck_assert_int_eq(nw_drain_wave(&d), NW_WAVE_NONCRITICAL_DS);
    /* another group's DaemonSet kind is not a DaemonSet */
    d = classify("{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"example.com/v1\",\"kind\":"
                 "\"DaemonSet\"}]}}",
                 NOW);
    ck_assert(!d.daemonset);
    d = classify("{\"spec\":{\"priorityClassName\":\"system-cluster-critical\"}}", NOW);
    ck_assert(d.critical);
    ck_assert_int_eq(nw_drain_wave(&d), NW_WAVE_CRITICAL);
    d = classify("{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
                 "\"DaemonSet\"}]},\"spec\":{\"priorityClassName\":\"system-node-critical\"}}",
                 NOW);
    ck_assert(d.critical && d.daemonset);
    ck_assert_int_eq(nw_drain_wave(&d), NW_WAVE_CRITICAL_DS);
    d = classify("{\"spec\":{\"priorityClassName\":\"high-priority\"}}", NOW);
    ck_assert(!d.critical);
}
END_TEST

START_TEST(classify_tolerations)
{
    static const struct {
        const char *tols;
        int tolerates;
    } cases[] = {
        {"[{\"key\":\"karpenter.sh/disrupted\",\"operator\":\"Exists\"}]", 1},
        {"[{\"key\":\"karpenter.sh/disrupted\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]",
         1},
        {"[{\"operator\":\"Exists\"}]", 1}, /* tolerates everything */
        {"[{\"key\":\"karpenter.sh/disrupted\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}]",
         0},
        {"[{\"key\":\"karpenter.sh/disrupted\",\"value\":\"x\"}]", 0}, /* Equal "x" vs "" */
        {"[{\"key\":\"karpenter.sh/disrupted\"}]", 1},                 /* Equal "" */
        {"[{\"key\":\"other\",\"operator\":\"Exists\"}]", 0},
        {"[{\"key\":\"karpenter.sh/disrupted\",\"operator\":\"Bogus\"}]", 0}, /* malformed */
        {"[]", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char js[512];
        snprintf(js, sizeof js, "{\"spec\":{\"tolerations\":%s}}", cases[i].tols);
        nw_drain_pod_t d = classify(js, NOW);
        ck_assert_msg(d.tolerates_disrupted == cases[i].tolerates, "case %zu: %s", i,
                      cases[i].tols);
        ck_assert_int_eq(nw_drain_waits_for(&d), !cases[i].tolerates);
        ck_assert_int_eq(nw_drain_evictable(&d), !cases[i].tolerates);
    }
}
END_TEST

START_TEST(do_not_disrupt_values)
{
    static const struct {
        const char *value, *start;
        int active, invalid;
    } cases[] = {
        {"\"true\"", NULL, 1, 0},
        {"\"true\"", "2026-11-30T00:00:00Z", 1, 0},
        {"\"30m\"", "2026-11-30T11:45:00Z", 1, 0}, /* 15 m of 30 */
        {"\"30m\"", "2026-11-30T11:30:00Z", 0, 0}, /* exactly elapsed */
        {"\"30m\"", "2026-11-30T11:00:00Z", 0, 0},
        {"\"1h30m\"", "2026-11-30T11:00:00Z", 1, 0},
        {"\"30m\"", NULL, 1, 0}, /* no start time: fail safe */
        {"\"false\"", NULL, 0, 1},
        {"\"0s\"", NULL, 0, 1},
        {"\"-5m\"", NULL, 0, 1},
        {"\"TRUE\"", NULL, 0, 1},
        {"\"\"", NULL, 0, 1},
        {"true", NULL, 0, 1}, /* not a string */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char js[512];
        if (cases[i].start)
            snprintf(js, sizeof js,
                     "{\"metadata\":{\"annotations\":{\"karpenter.sh/do-not-disrupt\":%s}},"
                     "\"status\":{\"startTime\":\"%s\"}}",
                     cases[i].value, cases[i].start);
        else
            snprintf(js, sizeof js,
                     "{\"metadata\":{\"annotations\":{\"karpenter.sh/do-not-disrupt\":%s}}}",
                     cases[i].value);
        nw_drain_pod_t d = classify(js, NOW);
        ck_assert_msg(d.do_not_disrupt == cases[i].active && d.dnd_invalid == cases[i].invalid,
                      "case %zu: %s start %s: active %d invalid %d", i, cases[i].value,
                      cases[i].start ? cases[i].start : "-", d.do_not_disrupt, d.dnd_invalid);
        /* an active do-not-disrupt pod is waited for but never evicted */
        ck_assert(nw_drain_waits_for(&d));
        ck_assert_int_eq(nw_drain_evictable(&d), !cases[i].active);
    }
    nw_drain_pod_t d = classify("{\"metadata\":{\"annotations\":{\"other\":\"true\"}}}", NOW);
    ck_assert(!d.do_not_disrupt && !d.dnd_invalid);
}
END_TEST

static nw_drain_pod_t P(int wave, int terminating)
{
    nw_drain_pod_t p;
    memset(&p, 0, sizeof p);
    p.critical = wave >= 2;
    p.daemonset = wave == 1 || wave == 3;
    p.terminating = terminating;
    p.has_grace = 1;
    p.grace_s = 30;
    if (terminating)
        p.deletion_ns = NOW + S(10);
    return p;
}

START_TEST(plan_waves_in_order)
{
    nw_drain_pod_t pods[5] = {P(3, 0), P(1, 0), P(0, 0), P(2, 0), P(0, 0)};
    nw_drain_action_t a[5];
    nw_drain_plan_t pl;
    nw_drain_plan(pods, 5, 0, NOW, a, &pl);
    ck_assert_int_eq(pl.wave, NW_WAVE_NONCRITICAL);
    ck_assert_uint_eq(pl.waiting, 5);
    ck_assert_uint_eq(pl.evict, 2);
    ck_assert_int_eq(a[2], NW_DRAIN_EVICT);
    ck_assert_int_eq(a[4], NW_DRAIN_EVICT);
    ck_assert_int_eq(a[0], NW_DRAIN_WAIT);
    ck_assert_int_eq(a[1], NW_DRAIN_WAIT);
    ck_assert_int_eq(a[3], NW_DRAIN_WAIT);

    /* wave 0 evicted (terminating): still wave 0, nothing more to evict, others wait */
    pods[2] = P(0, 1);
    pods[4] = P(0, 1);
    nw_drain_plan(pods, 5, 0, NOW, a, &pl);
    ck_assert_int_eq(pl.wave, NW_WAVE_NONCRITICAL);
    ck_assert_uint_eq(pl.evict, 0);
    ck_assert_uint_eq(pl.waiting, 5);

    /* wave 0 gone (terminal): non-critical DaemonSet pods next, then critical, then critical DS */
    pods[2].terminal = pods[4].terminal = 1;
    nw_drain_plan(pods, 5, 0, NOW, a, &pl);
    ck_assert_int_eq(pl.wave, NW_WAVE_NONCRITICAL_DS);
    ck_assert_int_eq(a[1], NW_DRAIN_EVICT);
    ck_assert_int_eq(a[2], NW_DRAIN_SKIP);
    ck_assert_uint_eq(pl.waiting, 3);
    pods[1].terminal = 1;
    nw_drain_plan(pods, 5, 0, NOW, a, &pl);
    ck_assert_int_eq(pl.wave, NW_WAVE_CRITICAL);
    ck_assert_int_eq(a[3], NW_DRAIN_EVICT);
    ck_assert_int_eq(a[0], NW_DRAIN_WAIT);
    pods[3].terminal = 1;
    nw_drain_plan(pods, 5, 0, NOW, a, &pl);
    ck_assert_int_eq(pl.wave, NW_WAVE_CRITICAL_DS);
    ck_assert_int_eq(a[0], NW_DRAIN_EVICT);
    pods[0].terminal = 1;
    nw_drain_plan(pods, 5, 0, NOW, a, &pl);
    ck_assert_int_eq(pl.wave, -1);
    ck_assert_uint_eq(pl.waiting, 0);
    nw_drain_plan(NULL, 0, 0, NOW, NULL, &pl);
    ck_assert_uint_eq(pl.waiting, 0);
    ck_assert_int_eq(pl.wave, -1);
}
END_TEST

START_TEST(plan_skips_and_do_not_disrupt)
{
    nw_drain_pod_t pods[4] = {P(0, 0), P(0, 0), P(0, 0), P(1, 0)};
    pods[0].do_not_disrupt = 1; /* waited for, not evicted */
    pods[1].mirror = 1;         /* ignored */
    pods[2].tolerates_disrupted = 1;
    nw_drain_action_t a[4];
    nw_drain_plan_t pl;
    nw_drain_plan(pods, 4, 0, NOW, a, &pl);
    ck_assert_int_eq(a[0], NW_DRAIN_WAIT);
    ck_assert_int_eq(a[1], NW_DRAIN_SKIP);
    ck_assert_int_eq(a[2], NW_DRAIN_SKIP);
    ck_assert_int_eq(a[3], NW_DRAIN_WAIT); /* wave 1 waits behind the DND pod of wave 0 */
    ck_assert_uint_eq(pl.waiting, 2);
    ck_assert_uint_eq(pl.blocked_dnd, 1);
    ck_assert_uint_eq(pl.evict, 0);
    ck_assert_int_eq(pl.wave, 0);
}
END_TEST

START_TEST(plan_deadline_force_deletes)
{
    int64_t deadline = NOW + S(20);
    nw_drain_pod_t pods[5] = {P(0, 0), P(0, 0), P(0, 1), P(0, 1), P(2, 0)};
    pods[0].grace_s = 30; /* must start now to get its full grace before the deadline */
    pods[1].grace_s = 10; /* still has time: evicted normally */
    pods[2].deletion_ns = deadline + S(5); /* terminating past the deadline */
    pods[3].deletion_ns = deadline - S(5); /* terminating within it */
    pods[4].grace_s = 60;
    pods[4].do_not_disrupt = 1; /* the deadline overrides do-not-disrupt */
    nw_drain_action_t a[5];
    nw_drain_plan_t pl;
    nw_drain_plan(pods, 5, deadline, NOW, a, &pl);
    ck_assert_int_eq(a[0], NW_DRAIN_DELETE);
    ck_assert_int_eq(a[1], NW_DRAIN_EVICT);
    ck_assert_int_eq(a[2], NW_DRAIN_DELETE);
    ck_assert_int_eq(a[3], NW_DRAIN_WAIT);
    ck_assert_int_eq(a[4], NW_DRAIN_DELETE);
    ck_assert_uint_eq(pl.del, 3);
    ck_assert_uint_eq(pl.evict, 1);
    ck_assert_uint_eq(pl.waiting, 5);
    ck_assert_uint_eq(pl.blocked_dnd, 0);
    /* no deadline: nothing is force-deleted */
    nw_drain_plan(pods, 5, 0, NOW, a, &pl);
    ck_assert_uint_eq(pl.del, 0);
    /* exactly at deadline - grace: not yet (Karpenter: now.After(deleteTime)) */
    ck_assert(!nw_drain_must_delete(&pods[1], NOW + S(10), NOW));
    ck_assert(nw_drain_must_delete(&pods[1], NOW + S(10), NOW + 1));
    /* without a grace period there is nothing to compute */
    nw_drain_pod_t g = P(0, 0);
    g.has_grace = 0;
    ck_assert(!nw_drain_must_delete(&g, deadline, NOW + S(100)));
}
END_TEST

START_TEST(delete_grace_and_backoff)
{
    ck_assert_int_eq(nw_drain_delete_grace(NOW + S(10) + 900 * NW_NS_PER_MS, NOW), 10);
    ck_assert_int_eq(nw_drain_delete_grace(NOW + 500 * NW_NS_PER_MS, NOW), 1);
    ck_assert_int_eq(nw_drain_delete_grace(NOW - S(30), NOW), 1);
    ck_assert_int_eq(nw_drain_delete_grace(NOW + S(3600), NOW), 3600);
    ck_assert_int_eq(nw_drain_backoff(0), 0);
    ck_assert_int_eq(nw_drain_backoff(-3), 0);
    ck_assert_int_eq(nw_drain_backoff(1), 100 * NW_NS_PER_MS);
    ck_assert_int_eq(nw_drain_backoff(2), 200 * NW_NS_PER_MS);
    ck_assert_int_eq(nw_drain_backoff(7), 6400 * NW_NS_PER_MS);
    ck_assert_int_eq(nw_drain_backoff(8), S(10));
    ck_assert_int_eq(nw_drain_backoff(1000), S(10));
    int64_t prev = 0;
    for (int i = 1; i < 40; i++) {
        ck_assert(nw_drain_backoff(i) >= prev);
        prev = nw_drain_backoff(i);
    }
}
END_TEST

START_TEST(tgp_annotation)
{
    char buf[64];
    nw_err_t err = {0};
    nw_node_claim_t *nc =
        claim("{\"metadata\":{\"name\":\"nc\",\"deletionTimestamp\":\"2026-11-30T12:00:00Z\"},"
              "\"spec\":{\"terminationGracePeriod\":\"1h30m\"}}");
    ck_assert_int_eq(nw_drain_tgp_value(nc, buf, sizeof buf, &err), NW_OK);
    ck_assert_str_eq(buf, "2026-11-30T13:30:00Z");
    nw_node_claim_free(nc);
    nc = claim("{\"metadata\":{\"name\":\"nc\",\"deletionTimestamp\":\"2026-11-30T12:00:00Z\"},"
               "\"spec\":{}}");
    ck_assert_int_eq(nw_drain_tgp_value(nc, buf, sizeof buf, &err), NW_ENOTFOUND);
    nw_node_claim_free(nc);
    nc = claim("{\"metadata\":{\"name\":\"nc\"},\"spec\":{\"terminationGracePeriod\":\"30s\"}}");
    ck_assert_int_eq(nw_drain_tgp_value(nc, buf, sizeof buf, &err), NW_ENOTFOUND);
    nw_node_claim_free(nc);
    nc = claim("{\"metadata\":{\"name\":\"nc\",\"deletionTimestamp\":\"2026-11-30T12:00:00Z\"},"
               "\"spec\":{\"terminationGracePeriod\":\"soon\"}}");
    ck_assert_int_eq(nw_drain_tgp_value(nc, buf, sizeof buf, &err), NW_EPARSE);
    ck_assert_str_eq(err.path, "spec.terminationGracePeriod");
    ck_assert_ptr_nonnull(strstr(err.msg, "soon"));
    nw_node_claim_free(nc);
    nw_err_clear(&err);
    nc = claim("{\"metadata\":{\"name\":\"nc\",\"deletionTimestamp\":\"yesterday\"},"
               "\"spec\":{\"terminationGracePeriod\":\"30s\"}}");
    ck_assert_int_eq(nw_drain_tgp_value(nc, buf, sizeof buf, &err), NW_EPARSE);
    ck_assert_str_eq(err.path, "metadata.deletionTimestamp");
    nw_node_claim_free(nc);

    int64_t d = 1;
    nw_err_clear(&err);
    nc = claim("{\"metadata\":{\"name\":\"nc\",\"annotations\":{\"karpenter.sh/"
               "nodeclaim-termination-timestamp\":"
               "\"2026-11-30T13:30:00Z\"}}}");
    ck_assert_int_eq(nw_drain_tgp_deadline(nc, &d, &err), NW_OK);
    ck_assert_int_eq(d, NOW + S(5400));
    nw_node_claim_free(nc);
    nc = claim("{\"metadata\":{\"name\":\"nc\",\"annotations\":{\"karpenter.sh/"
               "nodeclaim-termination-timestamp\":"
               "\"13:30\"}}}");
    ck_assert_int_eq(nw_drain_tgp_deadline(nc, &d, &err), NW_EPARSE);
    ck_assert_int_eq(d, 0);
    ck_assert_ptr_nonnull(strstr(err.path, "karpenter.sh/nodeclaim-termination-timestamp"));
    nw_node_claim_free(nc);
    nc = claim("{\"metadata\":{\"name\":\"nc\"}}");
    ck_assert_int_eq(nw_drain_tgp_deadline(nc, &d, NULL), NW_ENOTFOUND);
    nw_node_claim_free(nc);
}
END_TEST

START_TEST(classify_real_pod_end_to_end)
{
    /* a Deployment pod as the API server returns it, with a 30 s grace and a TGP
     * deadline 20 s away: force-deleted now with 20 s of grace */
    cJSON *p = pod("{\"metadata\":{\"name\":\"web-1\",\"namespace\":\"default\",\"uid\":\"u1\","
                   "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\","
                   "\"name\":\"web-abc\",\"controller\":true}]},"
                   "\"spec\":{\"nodeName\":\"n1\",\"terminationGracePeriodSeconds\":30,"
                   "\"priority\":0,\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\","
                   "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}]},"
                   "\"status\":{\"phase\":\"Running\",\"startTime\":\"2026-11-30T11:00:00Z\"}}");
    nw_drain_pod_t d;
    nw_drain_classify(nw_test_pod(p), NOW, &d);
    nw_drain_action_t a;
    nw_drain_plan_t pl;
    nw_drain_plan(&d, 1, NOW + S(20), NOW, &a, &pl);
    ck_assert_int_eq(a, NW_DRAIN_DELETE);
    ck_assert_int_eq(nw_drain_delete_grace(NOW + S(20), NOW), 20);
    nw_drain_plan(&d, 1, NOW + S(60), NOW, &a, &pl);
    ck_assert_int_eq(a, NW_DRAIN_EVICT);
    cJSON_Delete(p);
}
END_TEST

Suite *nw_drain_suite(void)
{
    Suite *s = suite_create("drain");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, now_is_what_the_tests_say);
    tcase_add_test(tc, classify_plain_pod);
    tcase_add_test(tc, classify_terminal_and_terminating);
    tcase_add_test(tc, classify_owners_and_priority);
    tcase_add_test(tc, classify_tolerations);
    tcase_add_test(tc, do_not_disrupt_values);
    tcase_add_test(tc, plan_waves_in_order);
    tcase_add_test(tc, plan_skips_and_do_not_disrupt);
    tcase_add_test(tc, plan_deadline_force_deletes);
    tcase_add_test(tc, delete_grace_and_backoff);
    tcase_add_test(tc, tgp_annotation);
    tcase_add_test(tc, classify_real_pod_end_to_end);
    suite_add_tcase(s, tc);
    return s;
}
