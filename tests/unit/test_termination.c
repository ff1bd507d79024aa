/* Unit tests for scaler/controllers/termination.c (the finalizer state machine) on a
 * fake clock, the shared fake cloud and the in-memory Kubernetes API (tests/unit/ctlfix.h)
 * with scripted evictions and errors:
 * the first tick taints and labels the node and evicts only the first wave with UID
 * preconditions; a 429 gives FailedDraining and a per-pod backoff (no retry before
 * 100 ms, then 200 ms); later waves follow; Drained stays Unknown for 5 s after the
 * first attempt, then True; the instance is terminated and re-checked every 5 s;
 * the finalizer goes once EC2 reports it gone. A restarted controller takes the
 * drain's start from the Drained condition, and a do-not-disrupt pod is deleted
 * with the grace left once the TGP deadline is near. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctlfix.h"
#include "scaler/disrupt/drain.h"
#include "scaler/controllers/termination.h"

Suite *nw_termination_suite(void);

#define MS(x) ((int64_t)(x)*NW_NS_PER_MS)

/* ---- the fixture: ctlfix.h, with scripted answers ---- */

typedef struct {
    const char *blocked; /* pod name whose eviction answers 429 */
    int va_code;         /* answer to VolumeAttachment lists (0: 404, not served) */
    int delete_code;     /* answer to pod deletes (0: the fake API's) */
} script_t;

static int hook(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    const script_t *sc = ud;
    if (strstr(r->path, "/eviction")) {
        if (sc->blocked && strstr(r->path, sc->blocked))
            fake_reply(c, 429, "",
                       "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"TooManyRequests\","
                       "\"message\":\"Cannot evict pod as it would violate the pod's disruption "
                       "budget.\",\"code\":429}");
        else
            fake_reply(c, 201, "", "{\"kind\":\"Status\",\"status\":\"Success\"}");
        return 1;
    }
    int pod_delete = strstr(r->path, "/pods/") && strcmp(r->method, "DELETE") == 0;
    if (!strstr(r->path, "volumeattachments") && !(sc->delete_code && pod_delete))
        return 0;
    int code = pod_delete ? sc->delete_code : sc->va_code ? sc->va_code : 404;
    char b[256];
    snprintf(b, sizeof b,
             "{\"kind\":\"Status\",\"status\":\"Failure\",\"code\":%d,\"reason\":\"%s\"}", code,
             code == 403   ? "Forbidden"
             : code == 404 ? "NotFound"
                           : "InternalError");
    fake_reply(c, code, "", b);
    return 1;
}

typedef struct {
    ctlfix_t fx;
    script_t sc;
    nw_termination_t *term;
    fake_cloud_t *cloud; /* fx.cloud */
} fx_t;

static void fx_init(fx_t *f)
{
    memset(&f->sc, 0, sizeof f->sc);
    ctlfix_init(&f->fx);
    f->fx.api.hook = hook;
    f->fx.api.hook_ud = &f->sc;
    f->cloud = f->fx.cloud;
    fake_cloud_add(f->cloud, "i-0123456789abcdef0", "nc1", 0);
    f->term = nw_termination_new(&f->fx.deps);
    ck_assert_ptr_nonnull(f->term);
}

static void fx_free(fx_t *f)
{
    nw_termination_free(f->term);
    ctlfix_free(&f->fx);
}

/* an object in the cache and the fake API */
static void put(fx_t *f, nw_kube_kind_t k, const char *json)
{
    ctlfix_put(&f->fx, k, json, 1);
}

static void del(fx_t *f, nw_kube_kind_t k, const char *ns, const char *name)
{
    ctlfix_del(&f->fx, k, ns, name);
}

/* requests since mark matching all the given substrings */
static int count(fx_t *f, int mark, const char *s1, const char *s2, const char *s3)
{
    return ctlfix_count(&f->fx, mark, s1, s2, s3);
}

static int mark(fx_t *f)
{
    return ctlfix_mark(&f->fx);
}

static void tick(fx_t *f)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f->fx.deps.cache);
    nw_termination_tick(f->term, s);
    nw_kube_cache_snap_release(s);
}

static void advance(fx_t *f, int64_t ns)
{
    nw_clock_fake_advance(&f->fx.clk, ns);
}

#define PID "aws:///us-west-2a/i-0123456789abcdef0"

static void node(fx_t *f, int tainted)
{
    char b[2048];
    snprintf(
        b, sizeof b,
        "{\"metadata\":{\"name\":\"n1\",\"uid\":\"node-uid\",\"resourceVersion\":\"5\","
        "\"deletionTimestamp\":\"2026-11-30T12:00:00Z\",\"finalizers\":[\"karpenter.sh/"
        "termination\"],\"labels\":{\"karpenter.sh/nodepool\":\"default\"%s}},"
        "\"spec\":{\"providerID\":\"" PID "\"%s},"
        "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
        tainted ? ",\"node.kubernetes.io/exclude-from-external-load-balancers\":\"karpenter\"" : "",
        tainted ? ",\"taints\":[{\"key\":\"karpenter.sh/disrupted\",\"effect\":\"NoSchedule\"}]"
                : "");
    put(f, NW_KUBE_NODES, b);
}

static void claim(fx_t *f, const char *deadline, const char *drained_since)
{
    char b[2048], ann[256] = "", st[512] = "";
    if (deadline)
        snprintf(ann, sizeof ann,
                 ",\"annotations\":{\"karpenter.sh/nodeclaim-termination-timestamp\":\"%s\"}",
                 deadline);
    if (drained_since)
        snprintf(st, sizeof st,
                 ",\"status\":{\"providerID\":\"" PID "\",\"conditions\":[{\"type\":\"Drained\","
                 "\"status\":\"Unknown\",\"reason\":\"Draining\",\"lastTransitionTime\":\"%s\"}]}",
                 drained_since);
    else
        snprintf(st, sizeof st, ",\"status\":{\"providerID\":\"" PID "\"}");
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":"
             "\"nc1\",\"uid\":\"nc-uid\",\"resourceVersion\":\"7\",\"deletionTimestamp\":"
             "\"2026-11-30T12:00:00Z\",\"finalizers\":[\"karpenter.sh/termination\"]%s},"
             "\"spec\":{}%s}",
             ann, st);
    put(f, NW_KUBE_NODECLAIMS, b);
}

/* owner: "" | "ds" | "mirror"; prio: "" or a priorityClassName; extra metadata JSON */
static void pod(fx_t *f, const char *name, const char *owner, const char *prio, const char *meta,
                int grace)
{
    char b[2048];
    const char *own =
        strcmp(owner, "ds") == 0       ? ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
                                         "\"kind\":\"DaemonSet\",\"name\":\"ds\"}]"
        : strcmp(owner, "mirror") == 0 ? ",\"ownerReferences\":[{\"apiVersion\":\"v1\","
                                         "\"kind\":\"Node\",\"name\":\"n1\"}]"
                                       : "";
    char pc[128] = "";
    if (*prio)
        snprintf(pc, sizeof pc, "\"priorityClassName\":\"%s\",", prio);
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"uid-%s\"%s%s},"
             "\"spec\":{\"nodeName\":\"n1\",%s\"terminationGracePeriodSeconds\":%d,"
             "\"containers\":[{\"name\":\"c\"}]},"
             "\"status\":{\"phase\":\"Running\",\"startTime\":\"2026-11-30T11:00:00Z\"}}",
             name, name, own, meta, pc, grace);
    put(f, NW_KUBE_PODS, b);
}

/* a condition's status in the NodeClaim the fake API holds now ("" if absent) */
static const char *api_cond(fx_t *f, const char *type, char *buf, size_t len)
{
    cJSON *o = ctlfix_get(&f->fx, "/apis/karpenter.sh/v1/nodeclaims/nc1");
    snprintf(buf, len, "%s", "");
    const cJSON *cd;
    cJSON_ArrayForEach(cd, cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(o, "status"), "conditions"))
    {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cd, "type"));
        const char *st = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cd, "status"));
        if (t && st && strcmp(t, type) == 0)
            snprintf(buf, len, "%s", st);
    }
    cJSON_Delete(o);
    return buf;
}

START_TEST(drain_waves_backoff_settle_terminate)
{
    fx_t f;
    fx_init(&f);
    f.sc.blocked = "/pods/blocked/";
    f.cloud->gone_after = 1;
    node(&f, 0);
    claim(&f, NULL, NULL);
    pod(&f, "web", "", "", "", 30);
    pod(&f, "blocked", "", "", "", 30);
    pod(&f, "agent", "ds", "", "", 30);
    pod(&f, "dns", "", "system-cluster-critical", "", 30);
    pod(&f, "static", "mirror", "", "", 30);

    tick(&f); /* t = 0 */
    ck_assert_int_eq(count(&f, 0, "PUT /api/v1/nodes/n1", "karpenter.sh/disrupted", "NoSchedule"),
                     1);
    ck_assert_int_eq(count(&f, 0, "PUT /api/v1/nodes/n1",
                           "exclude-from-external-load-balancers\":\"karpenter", NULL),
                     1);
    ck_assert_int_eq(count(&f, 0, "/pods/web/eviction", "\"uid\":\"uid-web\"", NULL), 1);
    ck_assert_int_eq(count(&f, 0, "/pods/blocked/eviction", "\"uid\":\"uid-blocked\"", NULL), 1);
    ck_assert_int_eq(count(&f, 0, "/eviction", NULL, NULL), 2); /* wave 1 only */
    ck_assert_int_eq(count(&f, 0, "/pods/agent/eviction", NULL, NULL), 0);
    ck_assert_int_eq(count(&f, 0, "/pods/dns/eviction", NULL, NULL), 0);
    ck_assert_int_eq(count(&f, 0, "/pods/static/eviction", NULL, NULL), 0);
    ck_assert_int_eq(count(&f, 0, "/events", "FailedDraining", "default/blocked violates a PDB"),
                     1);
    ck_assert_int_eq(count(&f, 0, "/events", "\"Evicted\"", "uid-web"), 1);
    char cb[32];
    ck_assert_str_eq(api_cond(&f, "Drained", cb, sizeof cb), "Unknown");

    /* the cache catches up: tainted, web gone */
    node(&f, 1);
    del(&f, NW_KUBE_PODS, "default", "web");
    claim(&f, NULL, "2026-11-30T12:00:00Z");
    int m = mark(&f);
    advance(&f, MS(50));
    tick(&f); /* 50 ms: blocked is backing off */
    ck_assert_int_eq(count(&f, m, "/eviction", NULL, NULL), 0);
    ck_assert_int_eq(count(&f, m, "PUT /api/v1/nodes/n1", NULL, NULL), 0);
    advance(&f, MS(60));
    tick(&f); /* 110 ms: retried, 429 again: now 200 ms */
    ck_assert_int_eq(count(&f, m, "/pods/blocked/eviction", NULL, NULL), 1);
    m = mark(&f);
    advance(&f, MS(150));
    tick(&f); /* 260 ms: still backing off */
    ck_assert_int_eq(count(&f, m, "/eviction", NULL, NULL), 0);
    advance(&f, MS(100));
    f.sc.blocked = NULL;
    tick(&f); /* 360 ms: evicted */
    ck_assert_int_eq(count(&f, m, "/pods/blocked/eviction", NULL, NULL), 1);
    del(&f, NW_KUBE_PODS, "default", "blocked");

    /* wave 2: the DaemonSet pod; then 3: the critical pod */
    m = mark(&f);
    advance(&f, MS(100));
    tick(&f);
    ck_assert_int_eq(count(&f, m, "/pods/agent/eviction", NULL, NULL), 1);
    ck_assert_int_eq(count(&f, m, "/pods/dns/eviction", NULL, NULL), 0);
    del(&f, NW_KUBE_PODS, "default", "agent");
    m = mark(&f);
    advance(&f, MS(100));
    tick(&f);
    ck_assert_int_eq(count(&f, m, "/pods/dns/eviction", NULL, NULL), 1);
    del(&f, NW_KUBE_PODS, "default", "dns");

    /* empty (the mirror pod does not count), but within 5 s of the first attempt */
    m = mark(&f);
    advance(&f, MS(100));
    tick(&f);
    ck_assert_str_eq(api_cond(&f, "Drained", cb, sizeof cb), "Unknown");
    ck_assert_int_eq(f.cloud->terminates, 0);
    advance(&f, MS(4600)); /* 5.16 s */
    tick(&f);
    ck_assert_str_eq(api_cond(&f, "Drained", cb, sizeof cb), "True");
    ck_assert_str_eq(api_cond(&f, "VolumesDetached", cb, sizeof cb), "True");
    ck_assert_str_eq(api_cond(&f, "InstanceTerminating", cb, sizeof cb), "True");
    ck_assert_int_eq(f.cloud->terminates, 1);
    ck_assert_int_eq(count(&f, m, "PATCH /api/v1/nodes/n1", NULL, NULL), 0);
    advance(&f, MS(1000));
    int calls = f.cloud->state_checks;
    tick(&f); /* the next instance check is 5 s after the last */
    ck_assert_int_eq(f.cloud->state_checks, calls);
    advance(&f, MS(4100));
    tick(&f); /* shutting-down: terminate is not called again */
    ck_assert_int_eq(f.cloud->terminates, 1);
    ck_assert_int_eq(count(&f, m, "PATCH /api/v1/nodes/n1", NULL, NULL), 0);
    advance(&f, MS(5100));
    m = mark(&f);
    tick(&f); /* gone: the finalizer goes */
    ck_assert_int_eq(count(&f, m, "PATCH /api/v1/nodes/n1", "remove", "/metadata/finalizers/0"), 1);

    nw_buf_t out;
    nw_buf_init(&out, 1 << 20);
    ck_assert_int_eq(nw_termination_metrics(f.term, &out), NW_OK);
    ck_assert_ptr_nonnull(strstr(nw_buf_str(&out), "nodewarden_nodes_drained_total 1\n"));
    ck_assert_ptr_nonnull(strstr(nw_buf_str(&out), "nodewarden_nodes_terminated_total 1\n"));
    ck_assert_ptr_nonnull(strstr(nw_buf_str(&out), "nodewarden_pods_evicted_total 4\n"));
    ck_assert_ptr_nonnull(
        strstr(nw_buf_str(&out), "nodewarden_eviction_requests_total{code=\"429\"} 2\n"));
    ck_assert_ptr_nonnull(
        strstr(nw_buf_str(&out), "nodewarden_node_drain_duration_seconds_count 1\n"));
    nw_buf_cleanup(&out);
    fx_free(&f);
}
END_TEST

START_TEST(restart_and_deadline)
{
    fx_t f;
    fx_init(&f);
    f.cloud->gone_after = 0;
    /* a drain that began 10 s ago (Drained=Unknown since then), deadline in 20 s */
    node(&f, 1);
    claim(&f, "2026-11-30T12:00:20Z", "2026-11-30T11:59:50Z");
    pod(&f, "keep", "", "", ",\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\"}", 15);
    tick(&f);
    /* the do-not-disrupt pod is waited for, not evicted; its deletion time is 12:00:05 */
    ck_assert_int_eq(count(&f, 0, "/eviction", NULL, NULL), 0);
    ck_assert_int_eq(count(&f, 0, "DELETE", "/pods/keep", NULL), 0);
    ck_assert_int_eq(count(&f, 0, "/events", "TerminationGracePeriodExpiring",
                           "All pods will be deleted by 2026-11-30T12:00:20Z"),
                     1);
    advance(&f, MS(5500)); /* now > deadline - 15 s */
    int m = mark(&f);
    tick(&f);
    ck_assert_int_eq(count(&f, m, "DELETE /api/v1/namespaces/default/pods/keep",
                           "\"gracePeriodSeconds\":14", "uid-keep"),
                     1);
    ck_assert_int_eq(count(&f, m, "/events", "\"Disrupted\"", "granted 14 seconds"), 1);
    m = mark(&f);
    advance(&f, MS(100));
    tick(&f); /* deleted once, not again */
    ck_assert_int_eq(count(&f, m, "DELETE", "/pods/keep", NULL), 0);
    /* gone: the drain began > 5 s ago (from the condition), so Drained=True at once */
    del(&f, NW_KUBE_PODS, "default", "keep");
    m = mark(&f);
    advance(&f, MS(100));
    tick(&f);
    char cb[32];
    ck_assert_str_eq(api_cond(&f, "Drained", cb, sizeof cb), "True");
    ck_assert_int_eq(f.cloud->terminates, 1);
    fx_free(&f);
}
END_TEST

START_TEST(claim_finalizer)
{
    fx_t f;
    fx_init(&f);
    f.cloud->gone_after = 0;
    /* a deleted NodeClaim with a TGP and its node: annotation once, node deleted, wait */
    char b[2048];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":"
             "\"nc1\",\"uid\":\"nc-uid\",\"resourceVersion\":\"7\",\"deletionTimestamp\":"
             "\"2026-11-30T12:00:00Z\",\"finalizers\":[\"karpenter.sh/termination\"]},"
             "\"spec\":{\"terminationGracePeriod\":\"90s\"},\"status\":{\"providerID\":\"" PID
             "\"}}");
    put(&f, NW_KUBE_NODECLAIMS, b);
    put(&f, NW_KUBE_NODES,
        "{\"metadata\":{\"name\":\"n1\",\"uid\":\"node-uid\"},\"spec\":{\"providerID\":\"" PID
        "\"}}");
    tick(&f);
    ck_assert_int_eq(
        count(&f, 0, "PUT /apis/karpenter.sh/v1/nodeclaims/nc1 ",
              "\"karpenter.sh/nodeclaim-termination-timestamp\":\"2026-11-30T12:01:30Z\"", NULL),
        1);
    ck_assert_int_eq(count(&f, 0, "DELETE /api/v1/nodes/n1", NULL, NULL), 1);
    ck_assert_int_eq(f.cloud->terminates, 0);
    ck_assert_int_eq(count(&f, 0, "PATCH /apis/karpenter.sh/v1/nodeclaims/nc1", NULL, NULL), 0);
    /* the node is gone: the instance is terminated, then found gone, then the finalizer goes */
    del(&f, NW_KUBE_NODES, "", "n1");
    int m = mark(&f);
    tick(&f);
    ck_assert_int_eq(f.cloud->terminates, 1);
    char cb[32];
    ck_assert_str_eq(api_cond(&f, "InstanceTerminating", cb, sizeof cb), "True");
    ck_assert_int_eq(count(&f, m, "PATCH /apis/karpenter.sh/v1/nodeclaims/nc1", NULL, NULL), 0);
    advance(&f, MS(5000));
    tick(&f);
    ck_assert_int_eq(count(&f, m, "PATCH /apis/karpenter.sh/v1/nodeclaims/nc1", "remove", NULL), 1);
    fx_free(&f);
}
END_TEST

/* A permission the chart forgot (403) does not hold termination: VolumeAttachments that
 * cannot be read are not waited for (said once), and an unreadable list past the TGP
 * deadline does not wait either; a 403 on the deadline's pod delete is told once. */
START_TEST(forbidden_does_not_hold_termination)
{
    fx_t f;
    fx_init(&f);
    f.cloud->gone_after = 0;
    f.sc.va_code = 403;
    node(&f, 1);
    claim(&f, NULL, "2026-11-30T11:59:50Z"); /* drained for 10 s, no deadline */
    tick(&f);
    char cb[32];
    ck_assert_str_eq(api_cond(&f, "Drained", cb, sizeof cb), "True");
    ck_assert_str_eq(api_cond(&f, "VolumesDetached", cb, sizeof cb), "False");
    ck_assert_int_eq(count(&f, 0, "/events", "FailedVolumeDetachmentCheck", "HTTP 403"), 1);
    ck_assert_int_eq(f.cloud->terminates, 1);
    fx_free(&f);

    /* a list that fails otherwise is retried until the deadline, then not waited for */
    fx_init(&f);
    f.cloud->gone_after = 0;
    f.sc.va_code = 500;
    node(&f, 1);
    claim(&f, "2026-11-30T12:00:03Z", "2026-11-30T11:59:50Z");
    tick(&f);
    ck_assert_int_eq(f.cloud->terminates, 0);
    ck_assert_str_eq(api_cond(&f, "VolumesDetached", cb, sizeof cb), "");
    advance(&f, MS(3500));
    tick(&f);
    ck_assert_str_eq(api_cond(&f, "VolumesDetached", cb, sizeof cb), "False");
    ck_assert_int_eq(f.cloud->terminates, 1);
    fx_free(&f);

    /* the deadline's delete refused: one FailedDraining event, retried, the pod waited for */
    fx_init(&f);
    f.sc.delete_code = 403;
    node(&f, 1);
    claim(&f, "2026-11-30T12:00:05Z", "2026-11-30T11:59:50Z");
    pod(&f, "keep", "", "", ",\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\"}", 15);
    tick(&f);
    advance(&f, MS(100));
    tick(&f);
    ck_assert_int_eq(
        count(&f, 0, "DELETE /api/v1/namespaces/default/pods/keep", "DeleteOptions", NULL), 2);
    ck_assert_int_eq(count(&f, 0, "/events", "FailedDraining", "deleting pod default/keep"), 1);
    ck_assert_int_eq(f.cloud->terminates, 0);
    fx_free(&f);
}
END_TEST

Suite *nw_termination_suite(void)
{
    Suite *s = suite_create("termination");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, drain_waves_backoff_settle_terminate);
    tcase_add_test(tc, restart_and_deadline);
    tcase_add_test(tc, claim_finalizer);
    tcase_add_test(tc, forbidden_does_not_hold_termination);
    suite_add_tcase(s, tc);
    return s;
}
