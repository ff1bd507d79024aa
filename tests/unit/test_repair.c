/* tests/unit/test_repair.c — node repair and instance health (scaler/controllers/repair.c)
 * and their inputs: the RepairPolicies (which condition is due when), the 20% rule, the snake
 * case of the condition label, DescribeInstanceStatus records as instance health
 * (scaler/aws/instancestatus.c) and their XML (scaler/aws/ec2xml.c); then the controller's
 * tick on the in-memory API (ctlfix.h) with a fake clock:
 *   due NotReady node   NodeClaim annotated with the termination timestamp, then deleted;
 *                       counted with reason unhealthy and condition ready
 *   not yet due         nothing until the clock passes lastTransitionTime + 30m
 *   gate off            nothing
 *   2 of 3 unhealthy    NodeRepairBlocked on the Node, nothing deleted
 *   instance health     a failed check past 2 minutes: forceful delete; an event: delete;
 *                       a young failure: nothing; counted once per instance and category
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/series.h"
#include "ctlfix.h"
#include "scaler/aws/ec2xml.h"
#include "scaler/aws/instancestatus.h"
#include "scaler/metrics/kmetrics.h"
#include "scaler/controllers/repair.h"

Suite *nw_repair_suite(void);

#define MIN (60 * NW_NS_PER_SEC)

static cJSON *node_with(const char *conds)
{
    char b[1024];
    snprintf(b, sizeof b, "{\"status\":{\"conditions\":[%s]}}", conds);
    cJSON *j = cJSON_Parse(b);
    ck_assert_ptr_nonnull(j);
    return j;
}

/* nw_repair_unhealthy, checked against the record's nw_repair_unhealthy_of (what the
 * controller reads) on the same Node */
static const nw_repair_policy_t *unhealthy(const cJSON *n, int64_t *due)
{
    cJSON *named = cJSON_Duplicate(n, 1);
    cJSON_AddItemToObject(named, "metadata", cJSON_Parse("{\"name\":\"n\"}"));
    nw_node_t *rec = NULL;
    nw_err_t err = {0};
    ck_assert_int_eq(nw_node_decode(named, &rec, &err), NW_OK);
    cJSON_Delete(named);
    int64_t d1 = -1, d2 = -2;
    const nw_repair_policy_t *p = nw_repair_unhealthy(n, &d1);
    ck_assert_ptr_eq(nw_repair_unhealthy_of(rec, &d2), p);
    ck_assert_int_eq(d1, d2);
    ck_assert_ptr_eq(nw_repair_unhealthy_of(rec, NULL), p);
    nw_node_free(rec);
    if (due)
        *due = d1;
    return p;
}

static int64_t t(const char *s)
{
    int64_t ns = 0;
    ck_assert_int_eq(nw_clock_time_parse(s, &ns), NW_OK);
    return ns;
}

START_TEST(policies)
{
    int64_t due = 0;
    cJSON *n = node_with("{\"type\":\"Ready\",\"status\":\"True\","
                         "\"lastTransitionTime\":\"2026-11-30T10:00:00Z\"}");
    ck_assert_ptr_null(unhealthy(n, &due));
    cJSON_Delete(n);
    n = node_with("{\"type\":\"Ready\",\"status\":\"Unknown\","
                  "\"lastTransitionTime\":\"2026-11-30T10:00:00Z\"}");
    const nw_repair_policy_t *p = unhealthy(n, &due);
    ck_assert_ptr_nonnull(p);
    ck_assert_str_eq(p->status, "Unknown");
    ck_assert_int_eq(due, t("2026-11-30T10:30:00Z"));
    cJSON_Delete(n);
    /* the one due first decides: the accelerator's 10m beats Ready's 30m */
    n = node_with("{\"type\":\"Ready\",\"status\":\"False\","
                  "\"lastTransitionTime\":\"2026-11-30T10:00:00Z\"},"
                  "{\"type\":\"AcceleratedHardwareReady\",\"status\":\"False\","
                  "\"lastTransitionTime\":\"2026-11-30T10:05:00Z\"},"
                  "{\"type\":\"KernelReady\",\"status\":\"True\"}");
    p = unhealthy(n, &due);
    ck_assert_str_eq(p->type, "AcceleratedHardwareReady");
    ck_assert_int_eq(due, t("2026-11-30T10:15:00Z"));
    cJSON_Delete(n);
    /* StorageReady Unknown is not a policy; a missing lastTransitionTime is the epoch */
    n = node_with("{\"type\":\"StorageReady\",\"status\":\"Unknown\"}");
    ck_assert_ptr_null(unhealthy(n, NULL));
    cJSON_Delete(n);
    n = node_with("{\"type\":\"ContainerRuntimeReady\",\"status\":\"False\"}");
    ck_assert_ptr_nonnull(unhealthy(n, &due));
    ck_assert_int_eq(due, 30 * MIN);
    cJSON_Delete(n);
    ck_assert_int_eq(nw_repair_npolicies, 7);
    static const int want[][2] = {{0, 0}, {1, 1}, {3, 1}, {5, 1}, {6, 2}, {10, 2}, {11, 3}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_int_eq(nw_repair_allowed_unhealthy(want[i][0]), want[i][1]);
    char s[64];
    nw_repair_snake("AcceleratedHardwareReady", s, sizeof s);
    ck_assert_str_eq(s, "accelerated_hardware_ready");
    nw_repair_snake("Ready", s, sizeof s);
    ck_assert_str_eq(s, "ready");
    nw_repair_snake("KernelReady", s, 5);
    ck_assert_str_eq(s, "ker");
}
END_TEST

START_TEST(instance_status_xml)
{
    static const char xml[] =
        "<DescribeInstanceStatusResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
        "<requestId>r</requestId><instanceStatusSet><item><instanceId>i-1</instanceId>"
        "<availabilityZone>us-west-2a</availabilityZone><instanceState><code>16</code>"
        "<name>running</name></instanceState><systemStatus><status>ok</status><details><item>"
        "<name>reachability</name><status>passed</status></item></details></systemStatus>"
        "<instanceStatus><status>impaired</status><details><item><name>reachability</name>"
        "<status>failed</status><impairedSince>2026-11-30T11:00:00.000Z</impairedSince></item>"
        "</details></instanceStatus><eventsSet><item><code>instance-retirement</code>"
        "<notBefore>2026-12-01T00:00:00.000Z</notBefore></item></eventsSet></item>"
        "<item><instanceId>i-2</instanceId><systemStatus><status>initializing</status>"
        "<details><item><name>reachability</name><status>initializing</status></item>"
        "</details></systemStatus></item></instanceStatusSet><nextToken>tok</nextToken>"
        "</DescribeInstanceStatusResponse>";
    nw_ec2_istatuses_t l = {0};
    char next[64] = "";
    nw_err_t err = {0};
    ck_assert_int_eq(nw_ec2xml_parse_instance_status(xml, strlen(xml), &l, next, sizeof next, &err),
                     NW_OK);
    ck_assert_str_eq(next, "tok");
    ck_assert_int_eq((int)l.n, 2);
    ck_assert_str_eq(l.v[0].instance_status, "impaired");
    ck_assert_int_eq(l.v[0].nchecks, 3);
    nw_cloud_healths_t h = {0};
    ck_assert_int_eq(nw_instancestatus_istatus_health(&l.v[0], &h), NW_OK);
    ck_assert_int_eq(nw_instancestatus_istatus_health(&l.v[1], &h),
                     NW_OK); /* initializing: nothing */
    ck_assert_int_eq((int)h.n, 2);
    ck_assert_int_eq(h.v[0].kind, NW_CLOUD_HEALTH_INSTANCE);
    ck_assert_int_eq(h.v[0].impaired_since_ns, t("2026-11-30T11:00:00Z"));
    ck_assert_int_eq(h.v[1].kind, NW_CLOUD_HEALTH_EVENT);
    ck_assert_str_eq(h.v[1].name, "instance-retirement");
    ck_assert_int_eq(h.v[1].impaired_since_ns, 0);
    nw_cloud_healths_free(&h);
    nw_ec2xml_istatuses_free(&l);
    static const char bad[] = "<DescribeInstancesResponse/>";
    ck_assert_int_eq(nw_ec2xml_parse_instance_status(bad, strlen(bad), &l, next, sizeof next, &err),
                     NW_EPARSE);
    nw_ec2xml_istatuses_free(&l);
}
END_TEST

/* ---- the controller on the in-memory API ---- */

typedef struct {
    ctlfix_t f;
    nw_repair_t *r;
} rfx_t;

static void rfx_init(rfx_t *x, int gate, int64_t poll_ns)
{
    ctlfix_init(&x->f);
    x->f.deps.series = nw_series_new();
    ck_assert_ptr_nonnull(x->f.deps.series);
    nw_repair_opts_t o = {gate, poll_ns, 0};
    x->r = nw_repair_new(&x->f.deps, &o);
    ck_assert_ptr_nonnull(x->r);
    ctlfix_put_nodeclass(&x->f);
    ctlfix_put_nodepool(&x->f, NULL);
}

static void rfx_free(rfx_t *x)
{
    nw_repair_free(x->r);
    nw_series_free(x->f.deps.series);
    ctlfix_free(&x->f);
}

/* Node node-<name>'s condition type set to status since `since`, in the API and the cache. */
static void set_cond(rfx_t *x, const char *name, const char *type, const char *status,
                     const char *since)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/nodes/node-%s", name);
    cJSON *n = ctlfix_get(&x->f, path);
    ck_assert_ptr_nonnull(n);
    cJSON *conds = cJSON_GetObjectItem(cJSON_GetObjectItem(n, "status"), "conditions");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "type", type);
    cJSON_AddStringToObject(c, "status", status);
    cJSON_AddStringToObject(c, "lastTransitionTime", since);
    for (int i = cJSON_GetArraySize(conds) - 1; i >= 0; i--)
        if (strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(conds, i), "type")->valuestring, type) ==
            0)
            cJSON_DeleteItemFromArray(conds, i);
    cJSON_AddItemToArray(conds, c);
    char *s = cJSON_PrintUnformatted(n);
    ctlfix_put(&x->f, NW_KUBE_NODES, s, 1);
    free(s);
    cJSON_Delete(n);
}

static double counted(rfx_t *x, const nw_series_desc_t *d, const char *const *v)
{
    return nw_series_get(x->f.deps.series, d, v);
}

static void tick(rfx_t *x)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(x->f.deps.cache);
    nw_repair_tick(x->r, s);
    nw_kube_cache_snap_release(s);
}

START_TEST(repairs_a_due_node)
{
    rfx_t x;
    rfx_init(&x, 1, 0);
    ctlfix_node_pair(&x.f, "a", NULL);
    ctlfix_node_pair(&x.f, "b", NULL);
    /* CTLFIX_T0 is 12:00: Ready False since 11:30:30 is due at 12:00:30 */
    set_cond(&x, "a", "Ready", "False", "2026-11-30T11:30:30Z");
    int m = ctlfix_mark(&x.f);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "DELETE", "nodeclaims/a", NULL), 0);
    nw_clock_fake_advance(&x.f.clk, 31 * NW_NS_PER_SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "PUT", "nodeclaims/a",
                                  "karpenter.sh/nodeclaim-termination-timestamp"),
                     1);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "DELETE", "nodeclaims/a", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "DELETE", "nodeclaims/b", NULL), 0);
    const char *v[] = {"unhealthy", "default", "on-demand"};
    ck_assert(counted(&x, &NW_KMETRICS_NODECLAIMS_DISRUPTED, v) == 1);
    const char *u[] = {"ready", "default", "on-demand", ""};
    ck_assert(counted(&x, &NW_KMETRICS_NODECLAIMS_UNHEALTHY_DISRUPTED, u) == 1);
    rfx_free(&x);
}
END_TEST

START_TEST(gate_off_does_nothing)
{
    rfx_t x;
    rfx_init(&x, 0, 0);
    ctlfix_node_pair(&x.f, "a", NULL);
    set_cond(&x, "a", "Ready", "Unknown", "2026-11-30T10:00:00Z");
    int m = ctlfix_mark(&x.f);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "nodeclaims/a", NULL, NULL), 0);
    rfx_free(&x);
}
END_TEST

START_TEST(over_the_threshold_is_blocked)
{
    rfx_t x;
    rfx_init(&x, 1, 0);
    ctlfix_node_pair(&x.f, "a", NULL);
    ctlfix_node_pair(&x.f, "b", NULL);
    ctlfix_node_pair(&x.f, "c", NULL);
    set_cond(&x, "a", "NetworkingReady", "False", "2026-11-30T10:00:00Z");
    set_cond(&x, "b", "Ready", "False", "2026-11-30T11:59:00Z"); /* not due, but unhealthy */
    int m = ctlfix_mark(&x.f);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "DELETE", "nodeclaims/", NULL), 0);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "POST", "events", "NodeRepairBlocked"), 1);
    /* b mends: 1 of 3 is allowed, but a blocked node waits 5 minutes */
    set_cond(&x, "b", "Ready", "True", "2026-11-30T12:00:00Z");
    tick(&x);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "DELETE", "nodeclaims/a", NULL), 0);
    nw_clock_fake_advance(&x.f.clk, 5 * MIN);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "DELETE", "nodeclaims/a", NULL), 1);
    rfx_free(&x);
}
END_TEST

static void health(rfx_t *x, const char *id, nw_cloud_health_kind_t k, int64_t since)
{
    fake_cloud_t *c = x->f.cloud;
    pthread_mutex_lock(&c->mu);
    nw_cloud_health_t *h = &c->health[c->nhealth++];
    memset(h, 0, sizeof *h);
    snprintf(h->instance_id, sizeof h->instance_id, "%s", id);
    snprintf(h->name, sizeof h->name, "reachability");
    h->kind = k;
    h->impaired_since_ns = since;
    pthread_mutex_unlock(&c->mu);
}

/* Let the poll thread answer twice more (so the latest answer holds what was set). */
static void polls(rfx_t *x)
{
    pthread_mutex_lock(&x->f.cloud->mu);
    int want = x->f.cloud->health_calls + 2;
    pthread_mutex_unlock(&x->f.cloud->mu);
    for (int i = 0; i < 2000; i++) {
        pthread_mutex_lock(&x->f.cloud->mu);
        int n = x->f.cloud->health_calls;
        pthread_mutex_unlock(&x->f.cloud->mu);
        if (n >= want)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    ck_abort_msg("the instance status thread did not poll");
}

START_TEST(instance_health_acts)
{
    rfx_t x;
    rfx_init(&x, 0, 2 * NW_NS_PER_MS); /* gate off: instance health runs without it */
    ctlfix_node_pair(&x.f, "a", NULL);
    ctlfix_node_pair(&x.f, "b", NULL);
    ctlfix_node_pair(&x.f, "c", NULL);
    int64_t now = nw_clock_now(&x.f.clk.base);
    health(&x, "i-a", NW_CLOUD_HEALTH_SYSTEM, now - 3 * MIN);
    health(&x, "i-a", NW_CLOUD_HEALTH_SYSTEM, now - 4 * MIN); /* a second failed check */
    health(&x, "i-b", NW_CLOUD_HEALTH_EVENT, 0);
    health(&x, "i-c", NW_CLOUD_HEALTH_INSTANCE, now - 30 * NW_NS_PER_SEC); /* too young */
    health(&x, "i-unknown", NW_CLOUD_HEALTH_INSTANCE, now - 10 * MIN);     /* not ours */
    ck_assert_int_eq(nw_repair_start(x.r, NULL), NW_OK);
    polls(&x);
    int m = ctlfix_mark(&x.f);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "PUT", "nodeclaims/a",
                                  "karpenter.sh/nodeclaim-termination-timestamp"),
                     1);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "DELETE", "nodeclaims/a", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "PUT", "nodeclaims/b", NULL), 0);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "DELETE", "nodeclaims/b", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&x.f, m, "nodeclaims/c", NULL, NULL), 0);
    ck_assert_int_ge(ctlfix_count(&x.f, m, "POST", "events", "InstanceUnhealthy"), 2);
    const char *sys[] = {"system_status", "default", "on-demand"};
    const char *ev[] = {"event_status", "default", "on-demand"};
    ck_assert(counted(&x, &NW_KMETRICS_NODECLAIMS_DISRUPTED, sys) == 1);
    ck_assert(counted(&x, &NW_KMETRICS_NODECLAIMS_DISRUPTED, ev) == 1);
    const char *cs[] = {"SystemStatus"}, *ce[] = {"EventStatus"}, *ci[] = {"InstanceStatus"};
    ck_assert(counted(&x, &NW_KMETRICS_INSTANCE_STATUS_UNHEALTHY, cs) == 1);
    ck_assert(counted(&x, &NW_KMETRICS_INSTANCE_STATUS_UNHEALTHY, ce) == 1);
    ck_assert(counted(&x, &NW_KMETRICS_INSTANCE_STATUS_UNHEALTHY, ci) == 0);
    /* the same answer again: counted once per instance and category */
    polls(&x);
    tick(&x);
    ck_assert(counted(&x, &NW_KMETRICS_INSTANCE_STATUS_UNHEALTHY, cs) == 1);
    rfx_free(&x);
}
END_TEST

START_TEST(series_registry)
{
    static const double b[] = {0.5, 1, 2.5};
    static const nw_series_desc_t h = {.name = "x_seconds",
                                       .help = "X.",
                                       .kind = NW_SERIES_HISTOGRAM,
                                       .labels = {"a"},
                                       .buckets = b,
                                       .nbuckets = 3};
    static const nw_series_desc_t g = {
        .name = "y", .help = "Y.", .kind = NW_SERIES_GAUGE, .labels = {"p", "q"}};
    nw_series_t *r = nw_series_new();
    const char *v1[] = {"one"}, *v2[] = {"x\"y", NULL};
    nw_series_observe(r, &h, v1, 0.7);
    nw_series_observe(r, &h, v1, 3);
    nw_series_set(r, &g, v2, 0.1);
    for (int i = 0; i < 500; i++) { /* past the first index sizes */
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        const char *v[] = {k, "z"};
        nw_series_add(r, &g, v, i);
    }
    const char *k7[] = {"k7", "z"};
    ck_assert(nw_series_get(r, &g, k7) == 7);
    ck_assert(nw_series_get(r, &h, v1) == 2);
    const nw_series_desc_t *all[] = {&h, &g};
    nw_buf_t out;
    nw_buf_init(&out, 1 << 20);
    ck_assert_int_eq(nw_series_write(r, all, 2, &out), NW_OK);
    const char *s = nw_buf_str(&out);
    ck_assert_ptr_nonnull(strstr(s, "# TYPE x_seconds histogram\n"));
    ck_assert_ptr_nonnull(strstr(s, "x_seconds_bucket{a=\"one\",le=\"0.5\"} 0\n"));
    ck_assert_ptr_nonnull(strstr(s, "x_seconds_bucket{a=\"one\",le=\"1\"} 1\n"));
    ck_assert_ptr_nonnull(strstr(s, "x_seconds_bucket{a=\"one\",le=\"+Inf\"} 2\n"));
    ck_assert_ptr_nonnull(strstr(s, "x_seconds_sum{a=\"one\"} 3.7\n"));
    ck_assert_ptr_nonnull(strstr(s, "y{p=\"x\\\"y\",q=\"\"} 0.1\n"));
    ck_assert_ptr_nonnull(strstr(s, "y{p=\"k499\",q=\"z\"} 499\n"));
    static const nw_series_desc_t sm = {
        .name = "z_seconds", .help = "Z.", .kind = NW_SERIES_SUMMARY};
    for (int i = 1; i <= 600; i++) /* the window keeps the last 512: 89 .. 600 */
        nw_series_observe(r, &sm, NULL, i);
    const nw_series_desc_t *zs[] = {&sm};
    nw_buf_reset(&out);
    ck_assert_int_eq(nw_series_write(r, zs, 1, &out), NW_OK);
    s = nw_buf_str(&out);
    ck_assert_ptr_nonnull(strstr(s, "# TYPE z_seconds summary\n"));
    ck_assert_ptr_nonnull(strstr(s, "z_seconds{quantile=\"0\"} 89\n"));
    ck_assert_ptr_nonnull(strstr(s, "z_seconds{quantile=\"1\"} 600\n"));
    ck_assert_ptr_nonnull(strstr(s, "z_seconds_count 600\n"));
    ck_assert_ptr_nonnull(strstr(s, "z_seconds_sum 180300\n"));
    /* one series removed: gone from reads and the text, the others keep their order; set
     * again, it comes back (last); many removals compact the registry */
    nw_series_remove(r, &g, k7);
    nw_series_remove(r, &g, k7);
    ck_assert(nw_series_get(r, &g, k7) == 0);
    nw_buf_reset(&out);
    ck_assert_int_eq(nw_series_write(r, all, 2, &out), NW_OK);
    s = nw_buf_str(&out);
    ck_assert_ptr_null(strstr(s, "y{p=\"k7\","));
    ck_assert(strstr(s, "y{p=\"k6\",") < strstr(s, "y{p=\"k8\","));
    nw_series_set(r, &g, k7, 70);
    ck_assert(nw_series_get(r, &g, k7) == 70);
    for (int i = 0; i < 400; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        const char *v[] = {k, "z"};
        nw_series_remove(r, &g, v);
    }
    const char *k450[] = {"k450", "z"};
    ck_assert(nw_series_get(r, &g, k450) == 450);
    ck_assert(nw_series_get(r, &g, k7) == 0);
    nw_buf_reset(&out);
    ck_assert_int_eq(nw_series_write(r, all, 2, &out), NW_OK);
    s = nw_buf_str(&out);
    ck_assert_ptr_null(strstr(s, "y{p=\"k399\","));
    ck_assert(strstr(s, "y{p=\"k400\",") < strstr(s, "y{p=\"k499\","));
    nw_series_clear(r, &g);
    ck_assert(nw_series_get(r, &g, k7) == 0);
    ck_assert(nw_series_get(r, &h, v1) == 2);
    nw_buf_cleanup(&out);
    nw_series_free(r);
}
END_TEST

Suite *nw_repair_suite(void)
{
    Suite *s = suite_create("repair");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, policies);
    tcase_add_test(tc, instance_status_xml);
    tcase_add_test(tc, repairs_a_due_node);
    tcase_add_test(tc, gate_off_does_nothing);
    tcase_add_test(tc, over_the_threshold_is_blocked);
    tcase_add_test(tc, instance_health_acts);
    tcase_add_test(tc, series_registry);
    suite_add_tcase(s, tc);
    return s;
}
