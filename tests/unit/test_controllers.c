/* tests/unit/test_controllers.c — one tick (or a few) of each controller on a fake clock,
 * the shared fake cloud (fakecloud.h) and an in-memory Kubernetes API (ctlfix.h):
 *   provisioner  a pending pod -> after the batch window a NodeClaim is created and
 *                launched once; an insufficient-capacity launch deletes the NodeClaim; a pod
 *                still pending 0.2 s after its NodeClaim came up is placed again at once;
 *                once a planned pod's Node exists its status.nominatedNodeName names it
 *                (never over the kube-scheduler's own), follows a new plan and is cleared
 *                while the new NodeClaim has no Node; alike pods no larger than the others
 *                planned with them get none, unless spread, and are not placed again
 *                when still pending after the grace
 *   launches     on launch workers: a launch the cloud holds does not hold the provisioner's
 *                tick or termination's, is not queued twice and is written back once it
 *                ends; at most `workers` launches are in the cloud at once; the client token
 *                is the NodeClaim's uid and moves on only after the cloud spent it; a batch's
 *                NodeClaim creates run at the same time
 *   unready      a NodePool whose EC2NodeClass is Ready=False gets no NodeClaim and its pods a
 *                FailedScheduling event naming the class's reason, until the class is ready;
 *                a NodeClaim of a class the cloud resolves not ready is not launched (no
 *                instance lookup, no token Secret), said once; a kubeadm token Secret is
 *                made once however often the launch is retried; lifecycle looks at a class
 *                that is not ready again after 10 s (30 s when ready); a class with no
 *                status yet is not used either (no NodeClaim, no launch) until it says
 *                Ready=True, and then the waiting pod is placed at the next batch
 *   lifecycle    a Node with the claim's providerID -> Registered; no Node past the
 *                registration timeout -> the NodeClaim is deleted; several Nodes are
 *                registered together, each Node written before its NodeClaim, one job per
 *                NodeClaim version; initialization waits for the registration to be seen,
 *                a failed write is tried again on the next tick
 *   expiry       the clock past spec.expireAfter -> the NodeClaim is deleted, counted once;
 *                a staged accelerator class's NodeClaim is left to disruption
 *   poolstatus   a NodePool's status (resources, conditions) is written; one written from
 *                an older snapshot keeps the disruption controller's
 *                AcceleratorRolloutBlocked condition
 *   drift        a NodeClaim whose NodePool hash changed -> Drifted=True
 *   gc           a cluster instance without a NodeClaim, past the launch grace -> terminated
 *   termination  a deleted NodeClaim -> its instance terminated -> finalizer removed, a 403 on
 *                volumeattachments not blocking it
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu.h"
#include "ctlfix.h"
#include "scaler/controllers/gc.h"
#include "scaler/controllers/lifecycle.h"
#include "scaler/controllers/nominate.h"
#include "scaler/controllers/provisioning.h"
#include "scaler/controllers/termination.h"
#include "scaler/controllers/upkeep.h"

Suite *nw_controllers_suite(void);

#define SEC NW_NS_PER_SEC

static const char *PENDING_POD =
    "{\"metadata\":{\"name\":\"web\",\"namespace\":\"default\",\"uid\":\"uid-web\","
    "\"creationTimestamp\":\"2026-11-30T11:59:00Z\"},\"spec\":{\"containers\":[{\"name\":\"c\","
    "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":"
    "\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":"
    "\"Unschedulable\"}]}}";

static nw_provisioning_t *prov_new(ctlfix_t *f)
{
    nw_provisioning_opts_t o = {.batch_idle_ns = SEC, .batch_max_ns = 10 * SEC, .repack = 1};
    nw_provisioning_t *p = nw_provisioning_new(&f->deps, f->claims, &f->mem, &o);
    ck_assert_ptr_nonnull(p);
    return p;
}

static void tick_prov(ctlfix_t *f, nw_provisioning_t *p)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f->deps.cache);
    ck_assert_ptr_nonnull(s);
    nw_provisioning_tick(p, s);
    nw_kube_cache_snap_release(s);
}

static nw_lifecycle_t *life_new(ctlfix_t *f)
{
    nw_lifecycle_opts_t o = {.registration_timeout_ns = 15 * 60 * SEC};
    nw_lifecycle_t *l = nw_lifecycle_new(&f->deps, &o);
    ck_assert_ptr_nonnull(l);
    return l;
}

/* One lifecycle tick, then the wait for the registration and initialization jobs it
 * submitted (their Events and counters follow on the next tick). */
static void tick_life(ctlfix_t *f, nw_lifecycle_t *l)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f->deps.cache);
    ck_assert_ptr_nonnull(s);
    nw_lifecycle_tick(l, s);
    nw_kube_cache_snap_release(s);
    nw_lifecycle_wait(l);
}

/* ---- provisioner ---- */

START_TEST(provisioner_pending_pod_creates_and_launches)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_put(&f, NW_KUBE_PODS, PENDING_POD, 1);
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p); /* opens the batch window */
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/nodeclaims", NULL), 0);
    ck_assert_int_eq(f.cloud->launches, 0);
    nw_clock_fake_advance(&f.clk, 500 * NW_NS_PER_MS);
    tick_prov(&f, p); /* still inside batchIdleDuration */
    ck_assert_int_eq(f.cloud->launches, 0);
    nw_clock_fake_advance(&f.clk, 600 * NW_NS_PER_MS);
    tick_prov(&f, p); /* the window closed: place, create, launch */
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 1);
    ck_assert_int_eq(f.cloud->launches, 1);
    ck_assert_msg(strncmp(f.cloud->last_launch_claim, "default-", 8) == 0, "launched %s",
                  f.cloud->last_launch_claim);
    ck_assert_int_gt(f.cloud->last_launch_ntypes, 0);
    /* the launch is recorded in the NodeClaim's status */
    char path[400];
    snprintf(path, sizeof path, "/apis/karpenter.sh/v1/nodeclaims/%s", f.cloud->last_launch_claim);
    cJSON *nc = ctlfix_get(&f, path);
    ck_assert_ptr_nonnull(nc);
    ck_assert_str_eq(nw_json_str_at(nc, "status.providerID"),
                     "aws:///us-west-2a/i-00000000000000001");
    ck_assert_str_eq(nw_json_condition(nc, "Launched"), "True");
    /* the NodeClaim carries the type's well-known labels, the zone id and the region (what
     * the registered Node gets from it), as the simulation saw them */
    const cJSON *lab = nw_json_get(nw_json_get(nc, "metadata"), "labels");
    const char *type = nw_json_str(lab, "node.kubernetes.io/instance-type");
    ck_assert_ptr_nonnull(type);
    char fam[32];
    snprintf(fam, sizeof fam, "%.*s", (int)strcspn(type, "."), type);
    ck_assert_str_eq(nw_json_str(lab, "karpenter.k8s.aws/instance-family"), fam);
    ck_assert_ptr_nonnull(nw_json_str(lab, "karpenter.k8s.aws/instance-cpu"));
    ck_assert_ptr_nonnull(nw_json_str(lab, "karpenter.k8s.aws/instance-memory"));
    ck_assert_ptr_nonnull(nw_json_str(lab, "karpenter.k8s.aws/instance-generation"));
    ck_assert_str_eq(nw_json_str(lab, "karpenter.k8s.aws/instance-capability-flex"), "false");
    ck_assert_str_eq(nw_json_str(lab, "kubernetes.io/arch"), "amd64");
    ck_assert_str_eq(nw_json_str(lab, "kubernetes.io/os"), "linux");
    ck_assert_str_eq(nw_json_str(lab, "topology.k8s.aws/zone-id"), "usw2-az1");
    ck_assert_str_eq(nw_json_str(lab, "topology.kubernetes.io/region"), "us-west-2");
    cJSON_Delete(nc);
    /* a pod event (Nominated) was posted */
    ck_assert_int_ge(ctlfix_count(&f, mark, "POST", "/events", "Nominated"), 1);
    /* later ticks see the claim (cache) and launch nothing more */
    ctlfix_sync_nodeclaims(&f);
    nw_clock_fake_advance(&f.clk, 11 * SEC);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 2 * SEC);
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 1);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* The claim made for a pod comes up (Initialized, its Node Ready) but the scheduler filled
 * the node with another pod: the pod, still pending and nominated there, is placed again
 * once the grace (0.2 s) has passed, not at the 10 s look; a node with room for it gets no
 * new NodeClaim. */
static void claim_up(ctlfix_t *f, const char *filler_cpu)
{
    char path[400];
    snprintf(path, sizeof path, "/apis/karpenter.sh/v1/nodeclaims/%s", f->cloud->last_launch_claim);
    cJSON *nc = ctlfix_get(f, path);
    ck_assert_ptr_nonnull(nc);
    const char *pid = nw_json_str_at(nc, "status.providerID");
    ck_assert_ptr_nonnull(pid);
    cJSON *st = cJSON_GetObjectItemCaseSensitive(nc, "status");
    cJSON_AddStringToObject(st, "nodeName", "node-up");
    cJSON *c = cJSON_Parse("{\"type\":\"Initialized\",\"status\":\"True\",\"reason\":"
                           "\"Initialized\",\"lastTransitionTime\":\"2026-11-30T12:00:00Z\"}");
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(st, "conditions"), c);
    char *txt = cJSON_PrintUnformatted(nc);
    ctlfix_put(f, NW_KUBE_NODECLAIMS, txt, 1);
    free(txt);
    char b[2048];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-up\",\"uid\":"
             "\"uid-node-up\",\"labels\":{\"karpenter.sh/nodepool\":\"default\","
             "\"karpenter.sh/initialized\":\"true\",\"kubernetes.io/hostname\":\"node-up\","
             "\"topology.kubernetes.io/zone\":\"us-west-2a\",\"kubernetes.io/arch\":\"amd64\","
             "\"karpenter.sh/capacity-type\":\"on-demand\"}},\"spec\":{\"providerID\":\"%s\"},"
             "\"status\":{\"allocatable\":{\"cpu\":\"1930m\",\"memory\":\"7Gi\",\"pods\":\"29\"},"
             "\"capacity\":{\"cpu\":\"2\",\"memory\":\"8Gi\",\"pods\":\"29\"},\"conditions\":[{"
             "\"type\":\"Ready\",\"status\":\"True\"}]}}",
             pid);
    ctlfix_put(f, NW_KUBE_NODES, b, 1);
    cJSON_Delete(nc);
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"filler\",\"namespace\":\"default\",\"uid\":\"uid-filler\"},"
             "\"spec\":{\"nodeName\":\"node-up\",\"containers\":[{\"name\":\"c\",\"resources\":{"
             "\"requests\":{\"cpu\":\"%s\",\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":"
             "\"Running\"}}",
             filler_cpu);
    ctlfix_put(f, NW_KUBE_PODS, b, 1);
}

/* PENDING_POD as the kube-scheduler leaves it after a failed attempt: its PodScheduled
 * condition rewritten, a new resourceVersion. */
static const char *PENDING_POD_TRIED =
    "{\"metadata\":{\"name\":\"web\",\"namespace\":\"default\",\"uid\":\"uid-web\","
    "\"resourceVersion\":\"77\",\"creationTimestamp\":\"2026-11-30T11:59:00Z\"},\"spec\":{"
    "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":"
    "\"1Gi\"}}}]},\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
    "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/1 nodes are available: "
    "1 Insufficient cpu.\"}]}}";

/* A pod nominated to a claim whose node came up, filled (or not) by other pods. tried: the
 * kube-scheduler tried the pod again after the node came up (and failed). */
static void missed_claim_story(const char *filler_cpu, bool tried, int want_new)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_put(&f, NW_KUBE_PODS, PENDING_POD, 1);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 1);
    ctlfix_sync_nodeclaims(&f);
    claim_up(&f, filler_cpu);
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p); /* the claim is seen up: the grace starts */
    if (tried)
        ctlfix_put(&f, NW_KUBE_PODS, PENDING_POD_TRIED, 1);
    nw_clock_fake_advance(&f.clk, 120 * NW_NS_PER_MS);
    tick_prov(&f, p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 0);
    int64_t next = nw_provisioning_next_deadline(p, nw_clock_mono(&f.clk.base));
    if (tried)
        ck_assert_int_le(next, 80 * NW_NS_PER_MS);
    else
        ck_assert_int_gt(next, SEC); /* only the 10 s look: nothing to wait for by time */
    nw_clock_fake_advance(&f.clk, 100 * NW_NS_PER_MS);
    tick_prov(&f, p); /* 0.22 s: placed again at once, no batch window */
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL),
                     want_new);
    ck_assert_int_eq(f.cloud->launches, 1 + want_new);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}

/* The NodeClaim's label write (a PUT of the object, not of /status) refused while
 * *left > 0 (called with the fake API's mutex held). */
static int refuse_claim_labels(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    int *left = ud;
    if (*left <= 0 || strcmp(r->method, "PUT") != 0 || !strstr(r->path, "/nodeclaims/") ||
        strstr(r->path, "/status"))
        return 0;
    (*left)--;
    fake_reply(c, 403, NULL,
               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":"
               "\"Forbidden\",\"code\":403}");
    return 1;
}

/* A launch whose labels cannot be written is not recorded half: its status stays empty (a
 * launched NodeClaim without the launch's labels looks drifted and would be replaced), and
 * a later tick records labels and status together, launching nothing more. */
START_TEST(provisioner_launch_labels_refused_recorded_later)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_put(&f, NW_KUBE_PODS, PENDING_POD, 1);
    int left = 1000;
    pthread_mutex_lock(&f.api.mu);
    f.api.hook = refuse_claim_labels;
    f.api.hook_ud = &left;
    pthread_mutex_unlock(&f.api.mu);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    tick_prov(&f, p); /* create and launch; the labels are refused */
    ck_assert(nw_nodeclaim_wait_idle(f.claims, 10000));
    ck_assert_int_eq(f.cloud->launches, 1);
    char path[400];
    snprintf(path, sizeof path, "/apis/karpenter.sh/v1/nodeclaims/%s", f.cloud->last_launch_claim);
    cJSON *nc = ctlfix_get(&f, path);
    ck_assert_ptr_nonnull(nc);
    ck_assert_ptr_null(nw_json_str_at(nc, "status.providerID"));
    cJSON_Delete(nc);
    pthread_mutex_lock(&f.api.mu);
    left = 0;
    f.api.hook = NULL;
    pthread_mutex_unlock(&f.api.mu);
    ctlfix_sync_nodeclaims(&f); /* the cache sees it without a providerID */
    for (int i = 0; i < 3; i++) {
        nw_clock_fake_advance(&f.clk, 11 * SEC);
        tick_prov(&f, p);
        ck_assert(nw_nodeclaim_wait_idle(f.claims, 10000));
    }
    nc = ctlfix_get(&f, path);
    ck_assert_ptr_nonnull(nc);
    ck_assert_str_eq(nw_json_str_at(nc, "status.providerID"),
                     "aws:///us-west-2a/i-00000000000000001");
    ck_assert_ptr_nonnull(nw_json_str(nw_json_get(nw_json_get(nc, "metadata"), "labels"),
                                      "node.kubernetes.io/instance-type"));
    cJSON_Delete(nc);
    ck_assert_int_eq(f.cloud->launches, 1);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

START_TEST(provisioner_missed_claim_placed_again)
{
    missed_claim_story("1500m", true, 1); /* 1930m - 1500m: no room for the pod's 1 CPU */
}
END_TEST

START_TEST(provisioner_missed_claim_with_room_adds_none)
{
    missed_claim_story("100m", true, 0);
}
END_TEST

/* Not tried by the scheduler since its node came up (a slow scheduler, or none): the pod
 * waits for it; no solve is spent on it before the 10 s look. */
START_TEST(provisioner_untried_pod_not_placed_again)
{
    missed_claim_story("1500m", false, 0);
}
END_TEST

/* A batch's NodeClaim launched for the pending pod "web": its Node appears (still tainted
 * karpenter.sh/unregistered). Returns the Node's name. */
static const char *nominate_setup(ctlfix_t *f, nw_provisioning_t *p, const char *pod_nominated)
{
    ctlfix_put_nodeclass(f);
    ctlfix_put_nodepool(f, NULL);
    ctlfix_put(f, NW_KUBE_PODS, PENDING_POD, 1);
    tick_prov(f, p);
    nw_clock_fake_advance(&f->clk, 1100 * NW_NS_PER_MS);
    tick_prov(f, p);
    ck_assert_int_eq(f->cloud->launches, 1);
    ctlfix_sync_nodeclaims(f);
    if (pod_nominated) {
        /* the kube-scheduler nominated the pod meanwhile (a preemption) */
        char b[1024];
        snprintf(b, sizeof b, "%.*s,\"nominatedNodeName\":\"%s\"}}", (int)(strlen(PENDING_POD) - 2),
                 PENDING_POD, pod_nominated);
        ctlfix_put(f, NW_KUBE_PODS, b, 1);
    }
    char path[400];
    snprintf(path, sizeof path, "/apis/karpenter.sh/v1/nodeclaims/%s", f->cloud->last_launch_claim);
    cJSON *nc = ctlfix_get(f, path);
    ck_assert_ptr_nonnull(nc);
    char b[2048];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-new\","
             "\"uid\":\"uid-node-new\",\"labels\":{\"karpenter.sh/nodepool\":\"default\"}},"
             "\"spec\":{\"providerID\":\"%s\",\"taints\":[{\"key\":\"karpenter.sh/unregistered\","
             "\"effect\":\"NoExecute\"}]},\"status\":{\"allocatable\":{\"cpu\":\"1930m\","
             "\"memory\":\"7Gi\",\"pods\":\"29\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"
             "\"True\"}]}}",
             nw_json_str_at(nc, "status.providerID"));
    cJSON_Delete(nc);
    ctlfix_put(f, NW_KUBE_NODES, b, 1);
    return "node-new";
}

/* Once the Node planned for a pending pod exists, the pod's status.nominatedNodeName is set
 * to it (a JSON patch of pods/status whose tests keep it off a pod that was bound or
 * nominated meanwhile), before the Node is registered; once written it is not written
 * again, whether or not the watch shows it yet. */
START_TEST(provisioner_nominates_pod_to_its_node)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    const char *node = nominate_setup(&f, p, NULL);
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p); /* the write goes to the writer's threads */
    nw_provisioning_nominations_wait(p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/api/v1/namespaces/default/pods/web/status",
                                  "\"op\":\"add\",\"path\":\"/status/nominatedNodeName\","
                                  "\"value\":\"node-new\""),
                     1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH",
                                  "\"op\":\"test\",\"path\":\"/metadata/uid\","
                                  "\"value\":\"uid-web\"",
                                  "\"op\":\"test\",\"path\":\"/spec/nodeName\",\"value\":null"),
                     1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH",
                                  "\"op\":\"test\",\"path\":\"/status/nominatedNodeName\","
                                  "\"value\":null",
                                  NULL),
                     1);
    nw_clock_fake_advance(&f.clk, 50 * NW_NS_PER_MS);
    tick_prov(&f, p); /* the answer is taken; the watch does not show the write yet */
    nw_provisioning_nominations_wait(p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/pods/web/status", NULL), 1);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_provisioning_metrics(p, &b),
                            "nodewarden_scaler_nominations_written_total 1\n"));
    /* the watch shows it: still nothing more to write */
    char pod[1024];
    snprintf(pod, sizeof pod, "%.*s,\"nominatedNodeName\":\"%s\"}}", (int)(strlen(PENDING_POD) - 2),
             PENDING_POD, node);
    ctlfix_put(&f, NW_KUBE_PODS, pod, 1);
    nw_clock_fake_advance(&f.clk, 50 * NW_NS_PER_MS);
    tick_prov(&f, p);
    nw_provisioning_nominations_wait(p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/pods/web/status", NULL), 1);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* A pending pod name with requests cpu / mem and, when spread, a topology spread over
 * zones; the pods of one call's arguments but their name are alike. */
static void put_pending(ctlfix_t *f, const char *name, const char *cpu, const char *mem,
                        bool spread)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"uid-%s\","
             "\"labels\":{\"app\":\"%s\"},\"creationTimestamp\":\"2026-11-30T11:59:00Z\"},"
             "\"spec\":{%s\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{"
             "\"cpu\":\"%s\",\"memory\":\"%s\"}}}]},\"status\":{\"phase\":\"Pending\","
             "\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":"
             "\"Unschedulable\"}]}}",
             name, name, cpu,
             spread ? "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":"
                      "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"ScheduleAnyway\","
                      "\"labelSelector\":{\"matchLabels\":{\"app\":\"x\"}}}],"
                    : "",
             cpu, mem);
    ctlfix_put(f, NW_KUBE_PODS, b, 1);
}

/* Two alike small pods and a larger one, planned onto one NodeClaim whose Node appears:
 * the larger pod is nominated; the alike ones, which ask for no more than it, are not
 * (whichever of them binds where the other was planned leaves its own room), unless they
 * are spread (their plan then depends on each pod's place) */
static void alike_story(bool spread, int want_small)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    put_pending(&f, "small-a", "100m", "128Mi", spread);
    put_pending(&f, "small-b", "100m", "128Mi", spread);
    put_pending(&f, "big", "1", "1Gi", false);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 1);
    ctlfix_sync_nodeclaims(&f);
    char path[400];
    snprintf(path, sizeof path, "/apis/karpenter.sh/v1/nodeclaims/%s", f.cloud->last_launch_claim);
    cJSON *nc = ctlfix_get(&f, path);
    ck_assert_ptr_nonnull(nc);
    char b[2048];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-new\","
             "\"uid\":\"uid-node-new\",\"labels\":{\"karpenter.sh/nodepool\":\"default\"}},"
             "\"spec\":{\"providerID\":\"%s\",\"taints\":[{\"key\":\"karpenter.sh/unregistered\","
             "\"effect\":\"NoExecute\"}]},\"status\":{\"allocatable\":{\"cpu\":\"1930m\","
             "\"memory\":\"7Gi\",\"pods\":\"29\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"
             "\"True\"}]}}",
             nw_json_str_at(nc, "status.providerID"));
    cJSON_Delete(nc);
    ctlfix_put(&f, NW_KUBE_NODES, b, 1);
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p);
    nw_provisioning_nominations_wait(p);
    const char *set = "\"path\":\"/status/nominatedNodeName\",\"value\":\"node-new\"";
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/pods/big/status", set), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/pods/small-a/status", set), want_small);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/pods/small-b/status", set), want_small);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}

START_TEST(provisioner_alike_small_pods_not_nominated)
{
    alike_story(false, 0);
}
END_TEST

START_TEST(provisioner_spread_pods_nominated)
{
    alike_story(true, 1);
}
END_TEST

/* Two pods spread over zones (maxSkew 1, when: DoNotSchedule, or ScheduleAnyway when hard is
 * false): the batch plans them onto NodeClaims in two zones. Under a hard spread those
 * NodeClaims become one cohort, whose Nodes the lifecycle controller registers together;
 * a soft one leaves them alone. */
static void spread_cohort_story(bool hard, size_t want_cohorts)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    for (int i = 0; i < 2; i++) {
        char b[2048];
        snprintf(b, sizeof b,
                 "{\"metadata\":{\"name\":\"sp-%d\",\"namespace\":\"default\",\"uid\":"
                 "\"uid-sp-%d\",\"labels\":{\"app\":\"sp\"}},\"spec\":{"
                 "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":"
                 "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":\"%s\","
                 "\"labelSelector\":{\"matchLabels\":{\"app\":\"sp\"}}}],\"containers\":[{"
                 "\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":"
                 "\"1Gi\"}}}]},\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":"
                 "\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}",
                 i, i, hard ? "DoNotSchedule" : "ScheduleAnyway");
        ctlfix_put(&f, NW_KUBE_PODS, b, 1);
    }
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 2); /* a preference is kept while it can be */
    ck_assert_uint_eq(nw_cohort_count(nw_provisioning_cohorts(p)), want_cohorts);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}

START_TEST(provisioner_hard_spread_claims_one_cohort)
{
    spread_cohort_story(true, 1);
}
END_TEST

START_TEST(provisioner_soft_spread_no_cohort)
{
    spread_cohort_story(false, 0);
}
END_TEST

/* The alike pods' NodeClaim comes up (its Node initialized, with room for them) and the
 * kube-scheduler tries them and leaves them pending (a pass that judged them against
 * older nodes): they take any room of their group, so they are not placed again after the
 * grace (no solve; only the 10 s look is due), where the larger pod would be once its Node
 * has no room left for the pods planned there (filler: the CPU of a pod bound there
 * meanwhile; the Node has 1930m, the three pods ask for 1200m). */
static void alike_tried_story(bool tried_big, const char *filler, bool spread,
                              const char *want_solves)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    put_pending(&f, "small-a", "100m", "128Mi", spread);
    put_pending(&f, "small-b", "100m", "128Mi", spread);
    put_pending(&f, "big", "1", "1Gi", spread);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 1);
    ctlfix_sync_nodeclaims(&f);
    claim_up(&f, filler);
    tick_prov(&f, p); /* the claim is seen up: the grace starts */
    const char *names[] = {"small-a", "small-b", "big"};
    for (int i = tried_big ? 2 : 0; i < (tried_big ? 3 : 2); i++) {
        char b[2048];
        snprintf(b, sizeof b,
                 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"uid-%s\","
                 "\"resourceVersion\":\"90\",\"labels\":{\"app\":\"%s\"},\"creationTimestamp\":"
                 "\"2026-11-30T11:59:00Z\"},\"spec\":{%s\"containers\":[{\"name\":\"c\","
                 "\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"%s\"}}}]},\"status\":"
                 "{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":"
                 "\"False\",\"reason\":\"Unschedulable\",\"message\":\"0/1 nodes are available: "
                 "1 node(s) had untolerated taint.\"}]}}",
                 names[i], names[i], i < 2 ? "100m" : "1",
                 spread ? "\"topologySpreadConstraints\":[{\"maxSkew\":1,\"topologyKey\":"
                          "\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":"
                          "\"ScheduleAnyway\",\"labelSelector\":{\"matchLabels\":{\"app\":"
                          "\"x\"}}}],"
                        : "",
                 i < 2 ? "100m" : "1", i < 2 ? "128Mi" : "1Gi");
        ctlfix_put(&f, NW_KUBE_PODS, b, 1);
    }
    nw_clock_fake_advance(&f.clk, 120 * NW_NS_PER_MS);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 200 * NW_NS_PER_MS);
    tick_prov(&f, p); /* 0.32 s: past the grace */
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_provisioning_metrics(p, &b), want_solves));
    if (!tried_big)
        ck_assert_int_gt(nw_provisioning_next_deadline(p, nw_clock_mono(&f.clk.base)), SEC);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}

START_TEST(provisioner_alike_pods_not_placed_again)
{
    alike_tried_story(false, "100m", false, "nodewarden_scaler_solves_total 1\n");
}
END_TEST

START_TEST(provisioner_larger_pod_placed_again)
{
    alike_tried_story(true, "1500m", false, "nodewarden_scaler_solves_total 2\n");
}
END_TEST

/* The larger pod tried and left pending while its Node still has room for every pod
 * planned there (bound pods and the other nominations counted): the scheduler has not got
 * to it, so no solve is spent placing it again. */
/* A pod spread over zones is placed again though its Node still has the room: pods bound
 * meanwhile can break its spread, which only a solve can judge. */
START_TEST(provisioner_spread_pod_placed_again)
{
    alike_tried_story(true, "100m", true, "nodewarden_scaler_solves_total 2\n");
}
END_TEST

START_TEST(provisioner_pod_with_room_not_placed_again)
{
    alike_tried_story(true, "100m", false, "nodewarden_scaler_solves_total 1\n");
}
END_TEST

/* A pod the kube-scheduler nominated itself (a preemption in progress) keeps its
 * nomination: no write, however the provisioner planned it. */
START_TEST(provisioner_keeps_scheduler_nomination)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    (void)nominate_setup(&f, p, "victim-node");
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 50 * NW_NS_PER_MS);
    tick_prov(&f, p);
    nw_provisioning_nominations_wait(p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/pods/web/status", NULL), 0);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* Written and shown by the watch, the nomination is the provisioner's: when the pod missed
 * its node (another pod took the room), it still counts as pending and is placed again on
 * a new NodeClaim; its nomination is then cleared (the new claim has no Node yet), and set
 * to the new Node once that exists, the patch testing for the value it replaces. */
START_TEST(provisioner_own_nomination_follows_the_plan)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    (void)nominate_setup(&f, p, NULL);
    tick_prov(&f, p);
    nw_provisioning_nominations_wait(p);
    nw_clock_fake_advance(&f.clk, 50 * NW_NS_PER_MS);
    tick_prov(&f, p); /* the write's answer taken */
    char pod[1024];
    snprintf(pod, sizeof pod, "%.*s,\"nominatedNodeName\":\"node-new\"}}",
             (int)(strlen(PENDING_POD) - 2), PENDING_POD);
    ctlfix_put(&f, NW_KUBE_PODS, pod, 1);
    /* the claim comes up as node-up (claim_up: initialized, a filler pod taking the room)
     * under the same providerID: node-new is replaced by it */
    ctlfix_del(&f, NW_KUBE_NODES, "", "node-new");
    claim_up(&f, "1500m");
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p); /* node-up is the claim's node: the nomination moves there */
    nw_provisioning_nominations_wait(p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/pods/web/status",
                                  "\"path\":\"/status/nominatedNodeName\",\"value\":\"node-new\""),
                     1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/pods/web/status",
                                  "\"op\":\"add\",\"path\":\"/status/nominatedNodeName\","
                                  "\"value\":\"node-up\""),
                     1);
    nw_clock_fake_advance(&f.clk, 50 * NW_NS_PER_MS);
    tick_prov(&f, p); /* answer taken */
    snprintf(pod, sizeof pod, "%.*s,\"nominatedNodeName\":\"node-up\"}}",
             (int)(strlen(PENDING_POD) - 2), PENDING_POD);
    ctlfix_put(&f, NW_KUBE_PODS, pod, 1);
    /* still pending past the grace, tried by the scheduler (it rewrote PodScheduled):
     * placed again, though its status names a node */
    mark = ctlfix_mark(&f);
    tick_prov(&f, p);
    snprintf(pod, sizeof pod, "%.*s,\"nominatedNodeName\":\"node-up\"}}",
             (int)(strlen(PENDING_POD_TRIED) - 2), PENDING_POD_TRIED);
    ctlfix_put(&f, NW_KUBE_PODS, pod, 1);
    nw_clock_fake_advance(&f.clk, 250 * NW_NS_PER_MS);
    tick_prov(&f, p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 1);
    ck_assert_int_eq(f.cloud->launches, 2);
    /* the new claim has no Node: the stale nomination is cleared */
    ctlfix_sync_nodeclaims(&f);
    nw_clock_fake_advance(&f.clk, 50 * NW_NS_PER_MS);
    tick_prov(&f, p);
    nw_provisioning_nominations_wait(p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "/pods/web/status",
                                  "\"op\":\"remove\",\"path\":\"/status/nominatedNodeName\"",
                                  "\"path\":\"/status/nominatedNodeName\",\"value\":\"node-up\""),
                     1);
    nw_clock_fake_advance(&f.clk, 50 * NW_NS_PER_MS);
    tick_prov(&f, p);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_provisioning_metrics(p, &b),
                            "nodewarden_scaler_nominations_cleared_total 1\n"));
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

START_TEST(provisioner_ice_deletes_claim)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_put(&f, NW_KUBE_PODS, PENDING_POD, 1);
    f.cloud->ice_next = 1;
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 1);
    ck_assert_int_eq(
        ctlfix_count(&f, mark, "DELETE", "/apis/karpenter.sh/v1/nodeclaims/default-", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/events", "InsufficientCapacityError"), 1);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_nodeclaim_metrics(f.claims, &b),
                            "nodewarden_nodeclaims_launch_failed_total 1\n"));
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* ---- launches on workers ---- */

/* Replace the fixture's launcher (no workers) with one of n workers. */
static void claims_workers(ctlfix_t *f, int n)
{
    nw_nodeclaim_free(f->claims);
    nw_nodeclaim_opts_t o = {.workers = n};
    f->claims = nw_nodeclaim_new(&f->deps, &f->mem, &o);
    ck_assert_ptr_nonnull(f->claims);
}

static char *claim_path(const char *name)
{
    static char path[400];
    snprintf(path, sizeof path, "/apis/karpenter.sh/v1/nodeclaims/%s", name);
    return path;
}

/* A NodeClaim of pool default without a providerID (created by an earlier process). */
static void unlaunched_claim(ctlfix_t *f, const char *name)
{
    char js[1024];
    snprintf(js, sizeof js,
             "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":"
             "\"%s\",\"uid\":\"uid-%s\",\"creationTimestamp\":\"2026-11-30T11:59:00Z\","
             "\"labels\":{\"karpenter.sh/nodepool\":\"default\"}},\"spec\":{\"nodeClassRef\":{"
             "\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},"
             "\"requirements\":[{\"key\":\"node.kubernetes.io/instance-type\",\"operator\":\"In\","
             "\"values\":[\"m5.large\"]}]}}",
             name, name);
    ctlfix_put(f, NW_KUBE_NODECLAIMS, js, 1);
}

START_TEST(launch_held_by_the_cloud_stalls_no_tick)
{
    ctlfix_t f;
    ctlfix_init(&f);
    claims_workers(&f, 2);
    nw_provisioning_t *p = prov_new(&f);
    nw_termination_t *t = nw_termination_new(&f.deps);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_put(&f, NW_KUBE_PODS, PENDING_POD, 1);
    fake_cloud_hold(f.cloud, 1);
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    tick_prov(&f, p); /* creates the NodeClaim and queues its launch: returns */
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 1);
    ck_assert_msg(fake_cloud_wait_held(f.cloud, 1, 10000), "the launch reached the cloud");
    ck_assert_int_eq(nw_nodeclaim_in_flight(f.claims), 1);
    pthread_mutex_lock(&f.cloud->mu);
    char name[256];
    snprintf(name, sizeof name, "%s", f.cloud->last_launch_claim);
    pthread_mutex_unlock(&f.cloud->mu);
    cJSON *nc = ctlfix_get(&f, claim_path(name));
    ck_assert_ptr_nonnull(nc);
    ck_assert_ptr_null(nw_json_str_at(nc, "status.providerID"));
    cJSON_Delete(nc);
    /* a NodeClaim being deleted: termination runs its whole course while the launch is held */
    pthread_mutex_lock(&f.cloud->mu);
    f.cloud->gone_after = 0;
    fake_cloud_add(f.cloud, "i-1", "c1", 60 * SEC);
    pthread_mutex_unlock(&f.cloud->mu);
    ctlfix_launched_claim(&f, "c1", "aws:///us-west-2a/i-1",
                          ",\"deletionTimestamp\":\"2026-11-30T12:00:00Z\"", NULL, NULL);
    for (int i = 0; i < 20 && !ctlfix_count(&f, mark, "/nodeclaims/c1", "finalizers", NULL); i++) {
        nw_kube_snap_t *s = nw_kube_cache_snapshot(f.deps.cache);
        nw_termination_tick(t, s);
        nw_kube_cache_snap_release(s);
        nw_clock_fake_advance(&f.clk, 6 * SEC);
    }
    ck_assert_int_ge(ctlfix_count(&f, mark, "/nodeclaims/c1", "finalizers", NULL), 1);
    /* the provisioner sees the new NodeClaim without a providerID: not queued again */
    ctlfix_sync_nodeclaims(&f);
    tick_prov(&f, p);
    ck_assert_int_eq(nw_nodeclaim_in_flight(f.claims), 1);
    ck_assert_int_eq(fake_cloud_launches(f.cloud), 1);
    /* released: the next tick writes the launch back */
    fake_cloud_hold(f.cloud, 0);
    ck_assert(nw_nodeclaim_wait_idle(f.claims, 10000));
    tick_prov(&f, p);
    nc = ctlfix_get(&f, claim_path(name));
    ck_assert_ptr_nonnull(nc);
    ck_assert_str_eq(nw_json_str_at(nc, "status.providerID"),
                     "aws:///us-west-2a/i-00000000000000002");
    ck_assert_str_eq(nw_json_condition(nc, "Launched"), "True");
    char tok[300];
    snprintf(tok, sizeof tok, "nw-%s-0", nw_json_str_at(nc, "metadata.uid"));
    ck_assert_str_eq(f.cloud->last_launch_token, tok);
    cJSON_Delete(nc);
    ctlfix_sync_nodeclaims(&f);
    nw_clock_fake_advance(&f.clk, 6 * SEC);
    tick_prov(&f, p);
    ck_assert(nw_nodeclaim_wait_idle(f.claims, 10000));
    ck_assert_int_eq(fake_cloud_launches(f.cloud), 1);
    nw_termination_free(t);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

START_TEST(launches_bounded_by_workers)
{
    ctlfix_t f;
    ctlfix_init(&f);
    claims_workers(&f, 2);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    unlaunched_claim(&f, "p1");
    unlaunched_claim(&f, "p2");
    unlaunched_claim(&f, "p3");
    fake_cloud_hold(f.cloud, 1);
    tick_prov(&f, p); /* three launches queued, two in the cloud */
    ck_assert(fake_cloud_wait_held(f.cloud, 2, 10000));
    ck_assert_int_eq(nw_nodeclaim_in_flight(f.claims), 3);
    fake_cloud_hold(f.cloud, 0);
    ck_assert(nw_nodeclaim_wait_idle(f.claims, 10000));
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 3);
    ck_assert_int_eq(f.cloud->max_in_launch, 2);
    const char *names[] = {"p1", "p2", "p3"};
    for (int i = 0; i < 3; i++) {
        cJSON *nc = ctlfix_get(&f, claim_path(names[i]));
        ck_assert_ptr_nonnull(nw_json_str_at(nc, "status.providerID"));
        cJSON_Delete(nc);
    }
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_nodeclaim_metrics(f.claims, &b),
                            "nodewarden_nodeclaims_launched_total 3\n"));
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

START_TEST(launch_token_moves_on_only_when_spent)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    unlaunched_claim(&f, "p1");
    f.cloud->fail_list = 0;
    f.cloud->spend_next = 1;
    tick_prov(&f, p); /* the cloud answers: nothing launched, token spent */
    ck_assert_int_eq(f.cloud->launches, 1);
    ck_assert_str_eq(f.cloud->last_launch_token, "nw-uid-p1-0");
    nw_clock_fake_advance(&f.clk, 6 * SEC);
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 2);
    ck_assert_str_eq(f.cloud->last_launch_token, "nw-uid-p1-1");
    cJSON *nc = ctlfix_get(&f, claim_path("p1"));
    ck_assert_ptr_nonnull(nw_json_str_at(nc, "status.providerID"));
    cJSON_Delete(nc);
    /* an unanswered launch (a failure that spends nothing) keeps its token */
    unlaunched_claim(&f, "p2");
    f.cloud->fail_list = 1; /* the lookup before the launch fails: no launch at all */
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 2);
    f.cloud->fail_list = 0;
    nw_clock_fake_advance(&f.clk, 6 * SEC);
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 3);
    ck_assert_str_eq(f.cloud->last_launch_token, "nw-uid-p2-0");
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* ---- a class that is not ready ---- */

/* The fixture's class with a status whose Ready condition is `ready` ("True"/"False"). */
static void class_with_ready(ctlfix_t *f, const char *ready, const char *annotations)
{
    char js[2048];
    snprintf(js, sizeof js,
             "{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{"
             "\"name\":\"default\",\"uid\":\"nc-uid\",\"generation\":1%s},\"spec\":{\"role\":"
             "\"r\",\"amiFamily\":\"Custom\",\"amiSelectorTerms\":[{\"id\":\"ami-0fake\"}],"
             "\"subnetSelectorTerms\":[{\"tags\":{\"k\":\"v\"}}],\"securityGroupSelectorTerms\":"
             "[{\"tags\":{\"k\":\"v\"}}]},\"status\":{\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"%s\",\"reason\":\"%s\",\"message\":\"%s\",\"observedGeneration\":1,"
             "\"lastTransitionTime\":\"2026-11-30T11:59:00Z\"}]}}",
             annotations ? annotations : "", ready,
             strcmp(ready, "True") == 0 ? "Ready" : "ClusterCIDRNotFound",
             strcmp(ready, "True") == 0 ? "" : "no service CIDR for AL2023's NodeConfig");
    ctlfix_put(f, NW_KUBE_EC2NODECLASSES, js, 1);
}

START_TEST(provisioner_skips_pool_of_unready_class)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    class_with_ready(&f, "False", NULL);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_put(&f, NW_KUBE_PODS, PENDING_POD, 1);
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    tick_prov(&f, p);
    /* no NodeClaim for the pool, and the pod is told why */
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/nodeclaims", NULL), 0);
    ck_assert_int_eq(f.cloud->launches, 0);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/events", "FailedScheduling"), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "FailedScheduling",
                                  "nodepool \\\"default\\\": EC2NodeClass \\\"default\\\" is not "
                                  "ready: ClusterCIDRNotFound",
                                  NULL),
                     1);
    /* the pods are looked at again: still nothing, and the event is not repeated */
    nw_clock_fake_advance(&f.clk, 11 * SEC);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 2 * SEC);
    tick_prov(&f, p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/nodeclaims", NULL), 0);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/events", "FailedScheduling"), 1);
    /* the class becomes ready: the next look makes the NodeClaim and launches it */
    class_with_ready(&f, "True", NULL);
    nw_clock_fake_advance(&f.clk, 11 * SEC);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 2 * SEC);
    tick_prov(&f, p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 1);
    ck_assert_int_eq(f.cloud->launches, 1);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* The fixture's class as just created: no status (its controller has not reconciled it). */
static void class_without_status(ctlfix_t *f)
{
    ctlfix_put(f, NW_KUBE_EC2NODECLASSES,
               "{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{"
               "\"name\":\"default\",\"uid\":\"nc-uid\",\"generation\":1},\"spec\":{\"role\":"
               "\"r\",\"amiFamily\":\"Custom\",\"amiSelectorTerms\":[{\"id\":\"ami-0fake\"}],"
               "\"subnetSelectorTerms\":[{\"tags\":{\"k\":\"v\"}}],\"securityGroupSelectorTerms\":"
               "[{\"tags\":{\"k\":\"v\"}}]}}",
               1);
}

/* A class with no status yet is not used: its pool gets no NodeClaim and the pod is told
 * why; once the class says Ready=True the pod is placed at the next batch, without waiting
 * for the 10-second look again. */
START_TEST(provisioner_waits_for_class_without_status)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    class_without_status(&f);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_put(&f, NW_KUBE_PODS, PENDING_POD, 1);
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    tick_prov(&f, p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/nodeclaims", NULL), 0);
    ck_assert_int_eq(f.cloud->launches, 0);
    ck_assert_int_eq(ctlfix_count(&f, mark, "FailedScheduling",
                                  "nodepool \\\"default\\\": EC2NodeClass \\\"default\\\" is not "
                                  "ready: NodeClassReadinessUnknown: the EC2NodeClass has no "
                                  "status yet",
                                  NULL),
                     1);
    /* reconciled: Ready=True, and the pod is placed at once */
    class_with_ready(&f, "True", NULL);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    tick_prov(&f, p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 1);
    ck_assert_int_eq(f.cloud->launches, 1);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* A NodeClaim of a class with no status yet (made by another controller, or before the
 * class was re-created) is not launched until the class has a verdict; said once. */
START_TEST(claim_of_class_without_status_waits)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    class_without_status(&f);
    ctlfix_put_nodepool(&f, NULL);
    unlaunched_claim(&f, "p1");
    int mark = ctlfix_mark(&f);
    for (int i = 0; i < 3; i++) {
        tick_prov(&f, p);
        nw_clock_fake_advance(&f.clk, 6 * SEC);
    }
    ck_assert_int_eq(f.cloud->launches, 0);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/events", "NodeClassNotReady"), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "NodeClassNotReady", "it has no status yet", NULL), 1);
    class_with_ready(&f, "True", NULL);
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 1);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

#define KUBEADM_ANNOTATION ",\"annotations\":{\"nodewarden.io/bootstrap\":\"kubeadm\"}"

/* Replace the fixture's launcher with one whose kubeadm tokens live 15 minutes. */
static void claims_with_token_ttl(ctlfix_t *f)
{
    nw_nodeclaim_free(f->claims);
    nw_nodeclaim_opts_t o = {.bootstrap_ttl_ns = 15 * 60 * SEC};
    f->claims = nw_nodeclaim_new(&f->deps, &f->mem, &o);
    ck_assert_ptr_nonnull(f->claims);
}

START_TEST(unready_class_claim_not_launched)
{
    ctlfix_t f;
    ctlfix_init(&f);
    claims_with_token_ttl(&f);
    nw_provisioning_t *p = prov_new(&f);
    class_with_ready(&f, "True", KUBEADM_ANNOTATION);
    ctlfix_put_nodepool(&f, NULL);
    unlaunched_claim(&f, "p1");
    f.cloud->resolved.ready = 0;
    snprintf(f.cloud->resolved.reason, sizeof f.cloud->resolved.reason,
             "InstanceProfileCreationFailed");
    snprintf(f.cloud->resolved.message, sizeof f.cloud->resolved.message,
             "the role r does not exist");
    int mark = ctlfix_mark(&f);
    for (int i = 0; i < 4; i++) {
        tick_prov(&f, p);
        nw_clock_fake_advance(&f.clk, 6 * SEC);
    }
    /* no launch, no token Secret, no instance lookup; said once on the NodeClaim */
    ck_assert_int_eq(f.cloud->launches, 0);
    ck_assert_int_eq(f.cloud->lists, 0);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/secrets", NULL), 0);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/events", "NodeClassNotReady"), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "NodeClassNotReady", "the role r does not exist", NULL),
                     1);
    /* ready again: launched, with one token Secret */
    f.cloud->resolved.ready = 1;
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/secrets", NULL), 1);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

START_TEST(token_secret_made_once_across_retries)
{
    ctlfix_t f;
    ctlfix_init(&f);
    claims_with_token_ttl(&f);
    nw_provisioning_t *p = prov_new(&f);
    class_with_ready(&f, "True", KUBEADM_ANNOTATION);
    ctlfix_put_nodepool(&f, NULL);
    unlaunched_claim(&f, "p1");
    f.cloud->spend_next = 2; /* two launches that make nothing, then one that does */
    int mark = ctlfix_mark(&f);
    for (int i = 0; i < 3; i++) {
        tick_prov(&f, p);
        nw_clock_fake_advance(&f.clk, 6 * SEC);
    }
    ck_assert_int_eq(f.cloud->launches, 3);
    cJSON *nc = ctlfix_get(&f, claim_path("p1"));
    ck_assert_ptr_nonnull(nw_json_str_at(nc, "status.providerID"));
    cJSON_Delete(nc);
    /* the Secret was created for the first try only; the retries used it again */
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/secrets", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "DELETE", "/secrets/", NULL), 0);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* The cache keeps a NodeClaim's record only: a NodeClaim seen without a providerID is
 * read from the API server before its launch, and launched as that copy says; one the API
 * does not have (yet) is not launched, and is tried again. */
START_TEST(cached_claim_launched_from_the_api_copy)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    class_with_ready(&f, "True", NULL);
    ctlfix_put_nodepool(&f, NULL);
    char js[1024];
    snprintf(js, sizeof js,
             "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":"
             "\"p1\",\"uid\":\"uid-p1\",\"creationTimestamp\":\"2026-11-30T11:59:00Z\","
             "\"labels\":{\"karpenter.sh/nodepool\":\"default\"}},\"spec\":{\"nodeClassRef\":{"
             "\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},"
             "\"requirements\":[{\"key\":\"node.kubernetes.io/instance-type\",\"operator\":\"In\","
             "\"values\":[\"m5.large\"]}]}}");
    ctlfix_put(&f, NW_KUBE_NODECLAIMS, js, 0); /* in the cache, not (yet) in the API */
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 0);
    ck_assert_int_eq(ctlfix_count(&f, mark, "GET", claim_path("p1"), NULL), 1);
    ctlfix_put(&f, NW_KUBE_NODECLAIMS, js, 1);
    for (int i = 0; i < 3 && f.cloud->launches == 0; i++) {
        nw_clock_fake_advance(&f.clk, 6 * SEC);
        tick_prov(&f, p);
    }
    ck_assert_int_eq(f.cloud->launches, 1);
    cJSON *nc = ctlfix_get(&f, claim_path("p1"));
    ck_assert_ptr_nonnull(nw_json_str_at(nc, "status.providerID"));
    cJSON_Delete(nc);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* ... and one whose API copy shows it launched already (the cache lags) is left alone. */
START_TEST(cached_claim_launched_elsewhere_left_alone)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    class_with_ready(&f, "True", NULL);
    ctlfix_put_nodepool(&f, NULL);
    unlaunched_claim(&f, "p1");
    cJSON *nc = ctlfix_get(&f, claim_path("p1"));
    char *before = cJSON_PrintUnformatted(nc);
    cJSON *st = cJSON_AddObjectToObject(nc, "status");
    cJSON_AddStringToObject(st, "providerID", "aws:///us-west-2a/i-0123456789abcdef0");
    char *after = cJSON_PrintUnformatted(nc);
    cJSON_Delete(nc);
    /* the API holds it launched; the cache still shows it without a providerID */
    ctlfix_put(&f, NW_KUBE_NODECLAIMS, after, 1);
    ctlfix_put(&f, NW_KUBE_NODECLAIMS, before, 0);
    free(before);
    free(after);
    nw_kube_snap_t *s0 = nw_kube_cache_snapshot(f.deps.cache);
    ck_assert_str_eq(nw_kube_cache_snap_get(s0, NW_KUBE_NODECLAIMS, NULL, "p1")->provider_id, "");
    nw_kube_cache_snap_release(s0);
    int mark = ctlfix_mark(&f);
    for (int i = 0; i < 2; i++) {
        tick_prov(&f, p);
        nw_clock_fake_advance(&f.clk, 6 * SEC);
    }
    ck_assert_int_eq(f.cloud->launches, 0);
    ck_assert_int_eq(f.cloud->lists, 0);
    ck_assert_int_ge(ctlfix_count(&f, mark, "GET", claim_path("p1"), NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PUT", claim_path("p1"), NULL), 0);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* Holds each NodeClaim POST until two are inside the fake API at once (or 10 s pass):
 * the hook runs under the API's mutex, which the wait releases. */
typedef struct {
    pthread_mutex_t *mu;
    pthread_cond_t cv;
    int inside, max, open;
} create_gate_t;

static int create_gate(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    (void)c;
    create_gate_t *g = ud;
    if (strcmp(r->method, "POST") != 0 || !strstr(r->path, "/nodeclaims"))
        return 0;
    if (++g->inside > g->max)
        g->max = g->inside;
    if (g->inside >= 2)
        g->open = 1;
    pthread_cond_broadcast(&g->cv);
    struct timespec dl;
    nw_clock_deadline_after(&dl, CLOCK_REALTIME, 10000);
    while (!g->open && pthread_cond_timedwait(&g->cv, g->mu, &dl) == 0) {
    }
    g->inside--;
    return 0; /* answered as usual */
}

/* The batch window is timed from the pods' arrival in the cache (when the watch made them
 * pending), not from the tick that first looks at them: a reconcile pass busy elsewhere
 * delays neither the window's opening nor its close. */
START_TEST(provisioner_window_opens_at_arrival)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    tick_prov(&f, p); /* the provisioner's first tick: nothing pending */
    ctlfix_put(&f, NW_KUBE_PODS, PENDING_POD, 1); /* arrives at 0 */
    int mark = ctlfix_mark(&f);
    nw_clock_fake_advance(&f.clk, 800 * NW_NS_PER_MS);
    tick_prov(&f, p); /* first seen at 0.8 s: the window opened at 0, idles until 1 s */
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 0);
    ck_assert_int_eq(nw_provisioning_next_deadline(p, nw_clock_mono(&f.clk.base)),
                     200 * NW_NS_PER_MS);
    /* a second pod arrives at 0.9 s, first seen at 1.5 s: the idle runs from 0.9 s */
    nw_clock_fake_advance(&f.clk, 100 * NW_NS_PER_MS); /* 0.9 s */
    ctlfix_put(&f, NW_KUBE_PODS,
               "{\"metadata\":{\"name\":\"web2\",\"namespace\":\"default\",\"uid\":"
               "\"uid-web2\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{"
               "\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":"
               "\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
               "\"reason\":\"Unschedulable\"}]}}",
               1);
    nw_clock_fake_advance(&f.clk, 600 * NW_NS_PER_MS); /* 1.5 s */
    tick_prov(&f, p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 0);
    ck_assert_int_eq(nw_provisioning_next_deadline(p, nw_clock_mono(&f.clk.base)),
                     400 * NW_NS_PER_MS);
    /* a close that passed while the reconcile thread was busy is due now (0), not "nothing
     * scheduled" (< 0), which would let the loop sleep up to a second */
    nw_clock_fake_advance(&f.clk, 700 * NW_NS_PER_MS); /* 2.2 s */
    ck_assert_int_eq(nw_provisioning_next_deadline(p, nw_clock_mono(&f.clk.base)), 0);
    tick_prov(&f, p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 1);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* A window is never older than the provisioner: pods pending before its first tick (a new
 * leadership term) open it at that tick, and wait their batchIdleDuration as before. */
START_TEST(provisioner_window_not_before_first_tick)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_put(&f, NW_KUBE_PODS, PENDING_POD, 1);
    nw_clock_fake_advance(&f.clk, 30 * SEC);
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 0);
    nw_clock_fake_advance(&f.clk, SEC);
    tick_prov(&f, p);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 1);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

START_TEST(batch_creates_run_together)
{
    ctlfix_t f;
    ctlfix_init(&f);
    claims_workers(&f, 2);
    nw_provisioning_t *p = prov_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    const char *zones[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        char js[1024];
        snprintf(js, sizeof js,
                 "{\"metadata\":{\"name\":\"web-%s\",\"namespace\":\"default\",\"uid\":"
                 "\"uid-web-%s\",\"creationTimestamp\":\"2026-11-30T11:59:00Z\"},\"spec\":{"
                 "\"nodeSelector\":{\"topology.kubernetes.io/zone\":\"us-west-2%s\"},"
                 "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1\","
                 "\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":\"Pending\",\"conditions\":[{"
                 "\"type\":\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}",
                 zones[i], zones[i], zones[i]);
        ctlfix_put(&f, NW_KUBE_PODS, js, 1);
    }
    create_gate_t g = {.mu = &f.api.mu};
    pthread_cond_init(&g.cv, NULL);
    pthread_mutex_lock(&f.api.mu);
    f.api.hook = create_gate;
    f.api.hook_ud = &g;
    pthread_mutex_unlock(&f.api.mu);
    int mark = ctlfix_mark(&f);
    tick_prov(&f, p);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    tick_prov(&f, p); /* one batch, three NodeClaims (one per zone) */
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/apis/karpenter.sh/v1/nodeclaims", NULL), 3);
    pthread_mutex_lock(&f.api.mu);
    f.api.hook = NULL;
    int max = g.max;
    pthread_mutex_unlock(&f.api.mu);
    ck_assert_int_eq(max, 2);
    ck_assert(nw_nodeclaim_wait_idle(f.claims, 10000));
    tick_prov(&f, p);
    ck_assert_int_eq(f.cloud->launches, 3);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_nodeclaim_metrics(f.claims, &b),
                            "nodewarden_nodeclaims_created_total 3\n"));
    pthread_cond_destroy(&g.cv);
    nw_provisioning_free(p);
    ctlfix_free(&f);
}
END_TEST

/* ---- lifecycle ---- */

/* A class the cloud resolves not ready is looked at again after 10 s (what it waits for, a
 * ServiceCIDR or a role, may appear at any time); a ready one every 30 s. */
START_TEST(lifecycle_unready_class_looked_at_sooner)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_lifecycle_t *l = life_new(&f);
    class_with_ready(&f, "False", NULL);
    f.cloud->resolved.ready = 0;
    snprintf(f.cloud->resolved.reason, sizeof f.cloud->resolved.reason, "ClusterCIDRNotFound");
    tick_life(&f, l);
    int first = f.cloud->resolves;
    ck_assert_int_ge(first, 1);
    nw_clock_fake_advance(&f.clk, 11 * SEC);
    tick_life(&f, l);
    ck_assert_int_gt(f.cloud->resolves, first);
    /* ready: the next look after 30 s, not 10 */
    f.cloud->resolved.ready = 1;
    nw_clock_fake_advance(&f.clk, 11 * SEC);
    tick_life(&f, l);
    int ready = f.cloud->resolves;
    nw_clock_fake_advance(&f.clk, 11 * SEC);
    tick_life(&f, l);
    ck_assert_int_eq(f.cloud->resolves, ready);
    nw_clock_fake_advance(&f.clk, 20 * SEC);
    tick_life(&f, l);
    ck_assert_int_gt(f.cloud->resolves, ready);
    nw_lifecycle_free(l);
    ctlfix_free(&f);
}
END_TEST

START_TEST(lifecycle_registers_node)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_lifecycle_t *l = life_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_launched_claim(&f, "c1", "aws:///us-west-2a/i-1", NULL, NULL, NULL);
    ctlfix_put(
        &f, NW_KUBE_NODES,
        "{\"metadata\":{\"name\":\"n1\",\"uid\":\"n1\",\"labels\":{}},\"spec\":{\"providerID\":"
        "\"aws:///us-west-2a/i-1\",\"taints\":[{\"key\":\"karpenter.sh/unregistered\","
        "\"effect\":\"NoExecute\"}]},\"status\":{}}",
        1);
    int mark = ctlfix_mark(&f);
    tick_life(&f, l);
    /* the node got the claim's labels and lost the unregistered taint; the claim Registered */
    cJSON *n = ctlfix_get(&f, "/api/v1/nodes/n1");
    ck_assert_ptr_nonnull(n);
    const cJSON *labels =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(n, "metadata"), "labels");
    ck_assert_str_eq(
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(labels, "karpenter.sh/nodepool")),
        "default");
    char *txt = cJSON_PrintUnformatted(n);
    ck_assert_ptr_null(strstr(txt, "karpenter.sh/unregistered"));
    free(txt);
    cJSON_Delete(n);
    cJSON *nc = ctlfix_get(&f, "/apis/karpenter.sh/v1/nodeclaims/c1");
    ck_assert_str_eq(nw_json_condition(nc, "Registered"), "True");
    ck_assert_str_eq(nw_json_str_at(nc, "status.nodeName"), "n1");
    cJSON_Delete(nc);
    ck_assert_int_eq(ctlfix_count(&f, mark, "DELETE", NULL, NULL), 0);
    nw_lifecycle_free(l);
    ctlfix_free(&f);
}
END_TEST

/* n launched NodeClaims c<i> with their Nodes n<i> (tainted karpenter.sh/unregistered;
 * ready: with Ready=True). */
static void claims_with_nodes(ctlfix_t *f, int n, bool ready)
{
    for (int i = 0; i < n; i++) {
        char name[16], pid[64], node[1024];
        snprintf(name, sizeof name, "c%d", i);
        snprintf(pid, sizeof pid, "aws:///us-west-2a/i-%d", i);
        ctlfix_launched_claim(f, name, pid, NULL, NULL, NULL);
        snprintf(node, sizeof node,
                 "{\"metadata\":{\"name\":\"n%d\",\"uid\":\"n%d\",\"labels\":{}},\"spec\":{"
                 "\"providerID\":\"%s\",\"taints\":[{\"key\":\"karpenter.sh/unregistered\","
                 "\"effect\":\"NoExecute\"}]},\"status\":{%s}}",
                 i, i, pid,
                 ready ? "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]" : "");
        ctlfix_put(f, NW_KUBE_NODES, node, 1);
    }
}

/* The index of the first request logged since mark that holds s1 and s2; -1: none. */
static int log_index(ctlfix_t *f, int mark, const char *s1, const char *s2)
{
    int at = -1;
    pthread_mutex_lock(&f->api.mu);
    for (int i = mark; at < 0 && i < f->api.nlog; i++)
        if (strstr(f->api.log[i], s1) && strstr(f->api.log[i], s2))
            at = i;
    pthread_mutex_unlock(&f->api.mu);
    return at;
}

/* Holds each PATCH of a Node until `want` are inside the fake API at once (or 10 s pass):
 * the hook runs under the API's mutex, which the wait releases. */
typedef struct {
    pthread_mutex_t *mu;
    pthread_cond_t cv;
    int want, inside, max, open;
} node_gate_t;

static int node_gate(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    (void)c;
    node_gate_t *g = ud;
    if (strcmp(r->method, "PATCH") != 0 || !strstr(r->path, "/api/v1/nodes/"))
        return 0;
    if (++g->inside > g->max)
        g->max = g->inside;
    if (g->inside >= g->want)
        g->open = 1;
    pthread_cond_broadcast(&g->cv);
    struct timespec dl;
    nw_clock_deadline_after(&dl, CLOCK_REALTIME, 10000);
    while (!g->open && pthread_cond_timedwait(&g->cv, g->mu, &dl) == 0) {
    }
    g->inside--;
    return 0; /* answered as usual */
}

/* Four Nodes come up at once: their registrations run together (four Node writes inside the
 * API at the same time), each from the cached Node (no read), each Node written before its
 * NodeClaim's Registered condition; the Events and counters follow on the next tick, once
 * each, and a NodeClaim whose job is done gets no second one while the cache still shows the
 * version it was judged on. */
START_TEST(lifecycle_registers_together)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_lifecycle_t *l = life_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    claims_with_nodes(&f, 4, false);
    node_gate_t g = {.mu = &f.api.mu, .want = 4};
    pthread_cond_init(&g.cv, NULL);
    pthread_mutex_lock(&f.api.mu);
    f.api.hook = node_gate;
    f.api.hook_ud = &g;
    pthread_mutex_unlock(&f.api.mu);
    int mark = ctlfix_mark(&f);
    tick_life(&f, l);
    pthread_mutex_lock(&f.api.mu);
    f.api.hook = NULL;
    int max = g.max;
    pthread_mutex_unlock(&f.api.mu);
    ck_assert_int_eq(max, 4);
    for (int i = 0; i < 4; i++) {
        char node[64], claim[64];
        snprintf(node, sizeof node, "/api/v1/nodes/n%d ", i);
        snprintf(claim, sizeof claim, "/nodeclaims/c%d/status ", i);
        int wn = log_index(&f, mark, "PATCH ", node), wc = log_index(&f, mark, "PATCH ", claim);
        ck_assert_int_ge(wn, 0);
        ck_assert_int_gt(wc, wn);
        snprintf(claim, sizeof claim, "/apis/karpenter.sh/v1/nodeclaims/c%d", i);
        cJSON *nc = ctlfix_get(&f, claim);
        ck_assert_str_eq(nw_json_condition(nc, "Registered"), "True");
        cJSON_Delete(nc);
    }
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/events", "Registered"), 0);
    tick_life(&f, l); /* the cache has not caught up: no second job */
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/events", "\"Registered\""), 4);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/api/v1/nodes/", NULL), 4);
    ck_assert_int_eq(ctlfix_count(&f, mark, "GET", "/api/v1/nodes/", NULL), 0);
    ck_assert_int_eq(ctlfix_count(&f, mark, "GET", "/nodeclaims/", NULL), 0);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_lifecycle_metrics(l, &b),
                            "nodewarden_nodeclaims_registered_total 4\n"));
    pthread_cond_destroy(&g.cv);
    nw_lifecycle_free(l);
    ctlfix_free(&f);
}
END_TEST

/* Initialization waits until the cache shows the NodeClaim Registered (not merely the write
 * made), then labels the Node before it sets Initialized; a write that fails is tried again
 * on the next tick, and counted once when it is made. */
START_TEST(lifecycle_initializes_after_registration_seen)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_lifecycle_t *l = life_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    claims_with_nodes(&f, 1, true);
    int mark = ctlfix_mark(&f);
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/nodeclaims/c0/status", NULL), 1);
    /* the Node is ready, the NodeClaim registered in the API but not yet in the cache */
    ck_assert(ctlfix_sync(&f, NW_KUBE_NODES, "/api/v1/nodes/n0"));
    tick_life(&f, l);
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/nodeclaims/c0/status", NULL), 1);
    cJSON *n = ctlfix_get(&f, "/api/v1/nodes/n0");
    ck_assert_ptr_null(nw_json_str_at(n, "metadata.labels.karpenter\\.sh/initialized"));
    char *txt = cJSON_PrintUnformatted(n);
    ck_assert_ptr_null(strstr(txt, "karpenter.sh/initialized"));
    free(txt);
    cJSON_Delete(n);
    /* seen Registered: initialized, the Node first; the NodeClaim's write fails once */
    ck_assert(ctlfix_sync(&f, NW_KUBE_NODECLAIMS, "/apis/karpenter.sh/v1/nodeclaims/c0"));
    pthread_mutex_lock(&f.api.mu);
    f.api.forbid = "/nodeclaims/c0/status";
    pthread_mutex_unlock(&f.api.mu);
    int m2 = ctlfix_mark(&f);
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, m2, "PATCH", "/api/v1/nodes/n0 ", "karpenter.sh/initialized"),
                     1);
    ck_assert_int_eq(ctlfix_count(&f, m2, "PATCH", "/nodeclaims/c0/status", NULL), 1);
    pthread_mutex_lock(&f.api.mu);
    f.api.forbid = NULL;
    pthread_mutex_unlock(&f.api.mu);
    tick_life(&f, l); /* the failure collected: tried again at once */
    ck_assert_int_eq(ctlfix_count(&f, m2, "PATCH", "/nodeclaims/c0/status", NULL), 2);
    ck_assert_int_gt(log_index(&f, m2, "PATCH ", "/nodeclaims/c0/status "),
                     log_index(&f, m2, "PATCH ", "/api/v1/nodes/n0 "));
    cJSON *nc = ctlfix_get(&f, "/apis/karpenter.sh/v1/nodeclaims/c0");
    ck_assert_str_eq(nw_json_condition(nc, "Initialized"), "True");
    ck_assert_str_eq(nw_json_condition(nc, "Ready"), "True");
    cJSON_Delete(nc);
    tick_life(&f, l);
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, m2, "PATCH", "/nodeclaims/c0/status", NULL), 2);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/events", "\"Initialized\""), 1);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_lifecycle_metrics(l, &b),
                            "nodewarden_nodeclaims_initialized_total 1\n"));
    nw_lifecycle_free(l);
    ctlfix_free(&f);
}
END_TEST

/* Holds each PATCH of a pod's status until `want` are inside the fake API at once (or 10 s
 * pass). */
static int patch_gate(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    (void)c;
    node_gate_t *g = ud;
    if (strcmp(r->method, "PATCH") != 0 || !strstr(r->path, "/status"))
        return 0;
    if (++g->inside > g->max)
        g->max = g->inside;
    if (g->inside >= g->want)
        g->open = 1;
    pthread_cond_broadcast(&g->cv);
    struct timespec dl;
    nw_clock_deadline_after(&dl, CLOCK_REALTIME, 10000);
    while (!g->open && pthread_cond_timedwait(&g->cv, g->mu, &dl) == 0) {
    }
    g->inside--;
    return 0;
}

/* Nominations submitted back to back (as a tick does, before any thread has taken one) are
 * written by several threads at once, not by the first thread alone. */
START_TEST(nominations_written_together)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_nominate_t *n = nw_nominate_new(&f.deps, 4);
    ck_assert_ptr_nonnull(n);
    node_gate_t g = {.mu = &f.api.mu, .want = 4};
    pthread_cond_init(&g.cv, NULL);
    pthread_mutex_lock(&f.api.mu);
    f.api.hook = patch_gate;
    f.api.hook_ud = &g;
    pthread_mutex_unlock(&f.api.mu);
    for (int i = 0; i < 4; i++) {
        char name[32], uid[32], key[48];
        snprintf(name, sizeof name, "p%d", i);
        snprintf(uid, sizeof uid, "uid-p%d", i);
        snprintf(key, sizeof key, "default/p%d", i);
        nw_pod_t pod = {
            .ns = "default", .name = name, .uid = uid, .rv = "", .key = key, .nominated = ""};
        ck_assert_int_eq(nw_nominate_submit(n, &pod, "node-a"), NW_OK);
    }
    nw_nominate_wait(n);
    pthread_mutex_lock(&f.api.mu);
    f.api.hook = NULL;
    int max = g.max;
    pthread_mutex_unlock(&f.api.mu);
    ck_assert_int_eq(max, 4);
    nw_nominate_result_t *r;
    ck_assert_uint_eq(nw_nominate_collect(n, &r), 4);
    nw_nominate_results_free(r, 4);
    pthread_cond_destroy(&g.cv);
    nw_nominate_free(n);
    ctlfix_free(&f);
}
END_TEST

/* The writes pending per node are counted as they are queued and until each has finished,
 * node by node (a clear names no node). */
START_TEST(nominations_pending_per_node)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_nominate_t *n = nw_nominate_new(&f.deps, 2);
    ck_assert_ptr_nonnull(n);
    node_gate_t g = {.mu = &f.api.mu, .want = 1000}; /* opened by the test */
    pthread_cond_init(&g.cv, NULL);
    pthread_mutex_lock(&f.api.mu);
    f.api.hook = patch_gate;
    f.api.hook_ud = &g;
    pthread_mutex_unlock(&f.api.mu);
    const char *to[] = {"node-a", "node-b", "node-a", NULL, "node-a"};
    for (int i = 0; i < 5; i++) {
        char name[32], uid[32], key[48];
        snprintf(name, sizeof name, "p%d", i);
        snprintf(uid, sizeof uid, "uid-p%d", i);
        snprintf(key, sizeof key, "default/p%d", i);
        nw_pod_t pod = {.ns = "default",
                        .name = name,
                        .uid = uid,
                        .rv = "",
                        .key = key,
                        .nominated = to[i] ? "" : "node-x"};
        ck_assert_int_eq(nw_nominate_submit(n, &pod, to[i]), NW_OK);
    }
    ck_assert_uint_eq(nw_nominate_pending(n, "node-a"), 3);
    ck_assert_uint_eq(nw_nominate_pending(n, "node-b"), 1);
    ck_assert_uint_eq(nw_nominate_pending(n, "node-x"), 0);
    ck_assert_uint_eq(nw_nominate_pending(n, "node-c"), 0);
    ck_assert_uint_eq(nw_nominate_pending(NULL, "node-a"), 0);
    pthread_mutex_lock(&f.api.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    f.api.hook = NULL;
    pthread_mutex_unlock(&f.api.mu);
    nw_nominate_wait(n);
    ck_assert_uint_eq(nw_nominate_pending(n, "node-a"), 0);
    ck_assert_uint_eq(nw_nominate_pending(n, "node-b"), 0);
    nw_nominate_result_t *r;
    size_t nr = nw_nominate_collect(n, &r);
    ck_assert_uint_eq(nr, 5);
    nw_nominate_results_free(r, nr);
    pthread_cond_destroy(&g.cv);
    nw_nominate_free(n);
    ctlfix_free(&f);
}
END_TEST

/* A lifecycle controller gated by a nomination writer (2 threads), with a class and a pool. */
static nw_lifecycle_t *life_with_nominate(ctlfix_t *f, nw_nominate_t **n)
{
    *n = nw_nominate_new(&f->deps, 2);
    ck_assert_ptr_nonnull(*n);
    nw_lifecycle_opts_t o = {.registration_timeout_ns = 15 * 60 * SEC, .nominate = *n};
    nw_lifecycle_t *l = nw_lifecycle_new(&f->deps, &o);
    ck_assert_ptr_nonnull(l);
    ctlfix_put_nodeclass(f);
    ctlfix_put_nodepool(f, NULL);
    return l;
}

/* A Node is registered (its karpenter.sh/unregistered taint lifted: pods may bind there) only
 * once the nominations of pods to it are written, so that those pods hold their room there
 * before any other pod can take it. */
START_TEST(lifecycle_registers_after_nominations)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_nominate_t *n;
    nw_lifecycle_t *l = life_with_nominate(&f, &n);
    claims_with_nodes(&f, 1, false);
    node_gate_t g = {.mu = &f.api.mu, .want = 1000}; /* opened by the test */
    pthread_cond_init(&g.cv, NULL);
    pthread_mutex_lock(&f.api.mu);
    f.api.hook = patch_gate;
    f.api.hook_ud = &g;
    pthread_mutex_unlock(&f.api.mu);
    nw_pod_t pod = {.ns = "default",
                    .name = "web",
                    .uid = "uid-web",
                    .rv = "",
                    .key = "default/web",
                    .nominated = ""};
    ck_assert_int_eq(nw_nominate_submit(n, &pod, "n0"), NW_OK);
    ck_assert_uint_eq(nw_nominate_pending(n, "n0"), 1);
    ck_assert_uint_eq(nw_nominate_pending(n, "n1"), 0);
    int mark = ctlfix_mark(&f);
    tick_life(&f, l);
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, mark, "/api/v1/nodes/n0", NULL, NULL), 0);
    pthread_mutex_lock(&f.api.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    f.api.hook = NULL;
    pthread_mutex_unlock(&f.api.mu);
    nw_nominate_wait(n);
    ck_assert_uint_eq(nw_nominate_pending(n, "n0"), 0);
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/api/v1/nodes/n0", NULL), 1);
    ck_assert_int_lt(log_index(&f, mark, "PATCH ", "/pods/web/status"),
                     log_index(&f, mark, "PATCH ", "/api/v1/nodes/n0 "));
    pthread_cond_destroy(&g.cv);
    nw_lifecycle_free(l);
    nw_nominate_free(n);
    ctlfix_free(&f);
}
END_TEST

/* The registration's patch, built from the records, gives the Node what the read, mutate
 * and write gave it: the unregistered taint lifted (the other taint kept, in place), the
 * NodeClaim's labels, karpenter.sh/registered, the termination finalizer after the one it
 * had, the NodeClaim as owner beside the other owner; no read, no whole write. */
START_TEST(lifecycle_registration_patch_content)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_lifecycle_t *l = life_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_launched_claim(&f, "c0", "aws:///us-west-2a/i-0", NULL, NULL, NULL);
    ctlfix_put(&f, NW_KUBE_NODES,
               "{\"metadata\":{\"name\":\"n0\",\"uid\":\"n0\",\"resourceVersion\":\"7\","
               "\"labels\":{\"a\":\"1\"},\"finalizers\":[\"other/fin\"],\"ownerReferences\":[{"
               "\"apiVersion\":\"v1\",\"kind\":\"X\",\"name\":\"x\",\"uid\":\"x-uid\"}]},"
               "\"spec\":{\"providerID\":\"aws:///us-west-2a/i-0\",\"taints\":[{\"key\":\"keep\","
               "\"effect\":\"NoSchedule\",\"timeAdded\":\"2026-11-30T12:00:00Z\"},{\"key\":"
               "\"karpenter.sh/unregistered\",\"effect\":\"NoExecute\"}]},\"status\":{}}",
               1);
    int mark = ctlfix_mark(&f);
    tick_life(&f, l);
    nw_lifecycle_free(l); /* its jobs finished */
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/api/v1/nodes/n0", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "GET", "/api/v1/nodes/n0", NULL), 0);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PUT", "/api/v1/nodes/n0", NULL), 0);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/api/v1/nodes/n0",
                                  "\"op\":\"test\",\"path\":\"/metadata/resourceVersion\""),
                     1);
    cJSON *n = ctlfix_get(&f, "/api/v1/nodes/n0");
    cJSON *c = ctlfix_get(&f, "/apis/karpenter.sh/v1/nodeclaims/c0");
    ck_assert_str_eq(nw_json_str_at(n, "metadata.labels.a"), "1");
    ck_assert_str_eq(
        nw_json_str(nw_json_get(nw_json_get(n, "metadata"), "labels"), "karpenter.sh/registered"),
        "true");
    const cJSON *l0;
    cJSON_ArrayForEach(l0, nw_json_get(nw_json_get(c, "metadata"), "labels"))
    {
        ck_assert_str_eq(nw_json_str(nw_json_get(nw_json_get(n, "metadata"), "labels"), l0->string),
                         l0->valuestring);
    }
    const cJSON *taints = nw_json_get(nw_json_get(n, "spec"), "taints");
    ck_assert_int_ge(cJSON_GetArraySize(taints), 1);
    ck_assert_str_eq(nw_json_str(cJSON_GetArrayItem(taints, 0), "key"), "keep");
    ck_assert_str_eq(nw_json_str(cJSON_GetArrayItem(taints, 0), "timeAdded"),
                     "2026-11-30T12:00:00Z");
    const cJSON *t;
    cJSON_ArrayForEach(t, taints)
    {
        ck_assert_str_ne(nw_json_str(t, "key"), "karpenter.sh/unregistered");
    }
    const cJSON *fins = nw_json_get(nw_json_get(n, "metadata"), "finalizers");
    ck_assert_int_eq(cJSON_GetArraySize(fins), 2);
    ck_assert_str_eq(cJSON_GetArrayItem(fins, 0)->valuestring, "other/fin");
    ck_assert_str_eq(cJSON_GetArrayItem(fins, 1)->valuestring, NW_FINALIZER);
    const cJSON *owners = nw_json_get(nw_json_get(n, "metadata"), "ownerReferences");
    ck_assert_int_eq(cJSON_GetArraySize(owners), 2);
    ck_assert_str_eq(nw_json_str(cJSON_GetArrayItem(owners, 1), "uid"),
                     nw_json_str_at(c, "metadata.uid"));
    ck_assert_str_eq(nw_json_str(cJSON_GetArrayItem(owners, 1), "kind"), "NodeClaim");
    ck_assert_str_eq(nw_json_condition(c, "Registered"), "True");
    cJSON_Delete(n);
    cJSON_Delete(c);
    ctlfix_free(&f);
}
END_TEST

/* A Node that appears after the provisioner's last scan (between its snapshot and the
 * lifecycle controller's, or while nothing else changes) is not registered before a scan of
 * a snapshot holding it is reported: its pods' nominations were not submitted yet, so none
 * is pending, and registering it would let the kube-scheduler fill it with other pods. */
START_TEST(lifecycle_registers_after_a_scan_saw_the_node)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_nominate_t *n;
    nw_lifecycle_t *l = life_with_nominate(&f, &n);
    /* the provisioner scanned a snapshot from before the Node */
    nw_nominate_scanned(n, nw_kube_cache_generation(f.deps.cache));
    claims_with_nodes(&f, 1, false);
    int mark = ctlfix_mark(&f);
    tick_life(&f, l);
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, mark, "/api/v1/nodes/n0", NULL, NULL), 0);
    ck_assert(!nw_nominate_may_register(n, "n0", nw_kube_cache_generation(f.deps.cache)));
    /* a scan of a snapshot holding it: registered on the next tick */
    nw_nominate_scanned(n, nw_kube_cache_generation(f.deps.cache));
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/api/v1/nodes/n0", NULL), 1);
    /* without a provisioner reporting scans, only the pending writes gate */
    ck_assert(nw_nominate_may_register(NULL, "n1", 1));
    nw_lifecycle_free(l);
    nw_nominate_free(n);
    ctlfix_free(&f);
}
END_TEST

/* NodeClaim cN (launched as instance i-N) labelled zone z, and, when node, its Node nN in that
 * zone, still tainted karpenter.sh/unregistered. */
static void zoned_claim(ctlfix_t *f, int i, const char *z, bool node)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"c%d\",\"uid\":\"uid-c%d\",\"finalizers\":["
             "\"karpenter.sh/termination\"],\"labels\":{\"karpenter.sh/nodepool\":\"default\","
             "\"topology.kubernetes.io/zone\":\"%s\"}},\"spec\":{\"nodeClassRef\":{\"group\":"
             "\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},"
             "\"requirements\":[]},\"status\":{\"providerID\":\"aws:///%s/i-%d\","
             "\"conditions\":[{\"type\":\"Launched\",\"status\":\"True\",\"reason\":"
             "\"Launched\",\"lastTransitionTime\":\"2026-11-30T12:00:00Z\"}]}}",
             i, i, z, z, i);
    ctlfix_put(f, NW_KUBE_NODECLAIMS, b, 1);
    if (!node)
        return;
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"n%d\",\"uid\":\"n%d\",\"labels\":{"
             "\"topology.kubernetes.io/zone\":\"%s\"}},\"spec\":{\"providerID\":"
             "\"aws:///%s/i-%d\",\"taints\":[{\"key\":\"karpenter.sh/unregistered\","
             "\"effect\":\"NoExecute\"}]},\"status\":{}}",
             i, i, z, z, i);
    ctlfix_put(f, NW_KUBE_NODES, b, 1);
}

/* NodeClaims c0 (zone a) and c1 (zone b, or a when how is "same-zone") of one cohort (a
 * batch whose pods spread over zones), only c0's Node n0 there: n0 is not registered while
 * no Node of zone b exists, as the kube-scheduler would see one domain of the spread; then
 * (how: "node") both are registered in one pass once n1 appears, ("deleted") n0 is once c1
 * is gone, or ("late") n0 is once it has waited NW_COHORT_WAIT_NS. With both NodeClaims in
 * zone a ("same-zone"), n0 is registered at once: its Node makes the domain exist. */
static void cohort_story(const char *how)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_cohorts_t *co = nw_cohort_new();
    ck_assert_ptr_nonnull(co);
    nw_lifecycle_opts_t o = {.registration_timeout_ns = 15 * 60 * SEC, .cohorts = co};
    nw_lifecycle_t *l = nw_lifecycle_new(&f.deps, &o);
    ck_assert_ptr_nonnull(l);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    bool same = strcmp(how, "same-zone") == 0;
    zoned_claim(&f, 0, "us-west-2a", true);
    zoned_claim(&f, 1, same ? "us-west-2a" : "us-west-2b", false);
    ck_assert(nw_cohort_add(co, (const char *[]){"c0", "c1"}, 2,
                            (const char *[]){"topology.kubernetes.io/zone"}, 1) == NW_OK);
    int mark = ctlfix_mark(&f);
    tick_life(&f, l);
    if (same) {
        ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/api/v1/nodes/n0", NULL), 1);
        ck_assert_uint_eq(nw_cohort_count(co), 0);
        goto done;
    }
    nw_clock_fake_advance(&f.clk, NW_COHORT_WAIT_NS - SEC);
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/api/v1/nodes/n0", NULL), 0);
    ck_assert_uint_eq(nw_cohort_count(co), 1);
    if (strcmp(how, "node") == 0)
        zoned_claim(&f, 1, "us-west-2b", true);
    else if (strcmp(how, "deleted") == 0)
        ctlfix_del(&f, NW_KUBE_NODECLAIMS, NULL, "c1");
    else
        nw_clock_fake_advance(&f.clk, SEC);
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/api/v1/nodes/n0", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/api/v1/nodes/n1", NULL),
                     strcmp(how, "node") == 0);
    ck_assert_uint_eq(nw_cohort_count(co), 0);
done:
    nw_lifecycle_free(l);
    nw_cohort_free(co);
    ctlfix_free(&f);
}

START_TEST(lifecycle_cohort_registers_together)
{
    cohort_story("node");
}
END_TEST

START_TEST(lifecycle_cohort_member_gone)
{
    cohort_story("deleted");
}
END_TEST

START_TEST(lifecycle_cohort_wait_ends)
{
    cohort_story("late");
}
END_TEST

START_TEST(lifecycle_cohort_domain_has_a_node)
{
    cohort_story("same-zone");
}
END_TEST

/* Answers the first write of Node n0 (the registration's patch) 409 (the Node changed since the
 * cache saw it). */
static int conflict_once(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    int *n = ud;
    if (strcmp(r->method, "PATCH") != 0 || !strstr(r->path, "/api/v1/nodes/n0") || (*n)++)
        return 0;
    fake_reply(c, 409, "",
               "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Conflict\",\"code\":409}");
    return 1;
}

/* A write from the cached Node that conflicts (the Node changed since) reads the Node and
 * writes again: the registration still happens, in one job. */
START_TEST(lifecycle_conflict_reads_again)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_lifecycle_t *l = life_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    claims_with_nodes(&f, 1, false);
    int n = 0;
    pthread_mutex_lock(&f.api.mu);
    f.api.hook = conflict_once;
    f.api.hook_ud = &n;
    pthread_mutex_unlock(&f.api.mu);
    int mark = ctlfix_mark(&f);
    tick_life(&f, l);
    pthread_mutex_lock(&f.api.mu);
    f.api.hook = NULL;
    pthread_mutex_unlock(&f.api.mu);
    /* the patch refused, then the read and a whole write */
    ck_assert_int_eq(ctlfix_count(&f, mark, "PATCH", "/api/v1/nodes/n0", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "PUT", "/api/v1/nodes/n0", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "GET", "/api/v1/nodes/n0", NULL), 1);
    ck_assert_int_lt(log_index(&f, mark, "GET ", "/api/v1/nodes/n0"),
                     log_index(&f, mark, "PATCH ", "/nodeclaims/c0/status"));
    cJSON *nc = ctlfix_get(&f, "/apis/karpenter.sh/v1/nodeclaims/c0");
    ck_assert_str_eq(nw_json_condition(nc, "Registered"), "True");
    cJSON_Delete(nc);
    nw_lifecycle_free(l);
    ctlfix_free(&f);
}
END_TEST

START_TEST(lifecycle_registration_timeout_deletes)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_lifecycle_t *l = life_new(&f);
    ctlfix_put_nodeclass(&f);
    ctlfix_launched_claim(&f, "c1", "aws:///us-west-2a/i-1", NULL, NULL, NULL);
    int mark = ctlfix_mark(&f);
    nw_clock_fake_advance(&f.clk, 14 * 60 * SEC);
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, mark, "DELETE", "/nodeclaims/c1", NULL), 0);
    nw_clock_fake_advance(&f.clk, 61 * SEC + 1);
    tick_life(&f, l);
    ck_assert_int_eq(ctlfix_count(&f, mark, "DELETE", "/nodeclaims/c1", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/events", "RegistrationTimeout"), 1);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_lifecycle_metrics(l, &b),
                            "nodewarden_nodeclaims_registration_timeouts_total 1\n"));
    nw_lifecycle_free(l);
    ctlfix_free(&f);
}
END_TEST

/* ---- upkeep: expiry, pool status, drift ---- */

static void tick_upkeep(ctlfix_t *f, nw_upkeep_t *u)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f->deps.cache);
    ck_assert_ptr_nonnull(s);
    nw_upkeep_tick(u, s);
    nw_kube_cache_snap_release(s);
}

START_TEST(expiry_deletes_past_expire_after)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_upkeep_t *u = nw_upkeep_new(&f.deps, 15 * 60 * SEC);
    ck_assert_ptr_nonnull(u);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_launched_claim(&f, "c1", "aws:///us-west-2a/i-1", NULL, ",\"expireAfter\":\"1h\"", NULL);
    int mark = ctlfix_mark(&f);
    nw_clock_fake_advance(&f.clk, 59 * 60 * SEC);
    tick_upkeep(&f, u);
    ck_assert_int_eq(ctlfix_count(&f, mark, "DELETE", "/nodeclaims/c1", NULL), 0);
    nw_clock_fake_advance(&f.clk, 61 * SEC);
    tick_upkeep(&f, u);
    tick_upkeep(&f, u); /* the lagging cache still shows it: not deleted twice */
    ck_assert_int_eq(ctlfix_count(&f, mark, "DELETE", "/nodeclaims/c1", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "POST", "/events", "Expired"), 1);
    ck_assert_uint_eq(nw_prom_counters_get(&u->counters, "expired", "default", NULL), 1);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert_int_eq(nw_upkeep_metrics(u, &b), NW_OK);
    ck_assert_ptr_nonnull(
        strstr(b.data, "nodewarden_nodeclaims_expired_total{nodepool=\"default\"} 1\n"));
    nw_buf_cleanup(&b);
    nw_upkeep_free(u);
    ctlfix_free(&f);
}
END_TEST

/* Staged replacement (issue 33): an expired NodeClaim of an accelerator class that stages
 * its rollouts is left to disruption; one of a class that does not (maxReplacing 0), or with
 * no class, is deleted as before. */
START_TEST(expiry_leaves_staged_accelerator_nodes)
{
    nw_gpu_policy_t gpu;
    ck_assert_int_eq(nw_gpu_policy_init(&gpu, ""), NW_OK);
    ctlfix_t f;
    ctlfix_init(&f);
    nw_upkeep_t *u = nw_upkeep_new(&f.deps, 15 * 60 * SEC);
    ck_assert_ptr_nonnull(u);
    u->expiry.gpu = &gpu;
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    const char *names[] = {"plain", "gpu", "amd"}, *labels[] = {NULL, "nvidia-gpu", "amd-gpu"};
    for (int i = 0; i < 3; i++) {
        char pid[64], path[128];
        snprintf(pid, sizeof pid, "aws:///us-west-2a/i-%d", i);
        ctlfix_launched_claim(&f, names[i], pid, NULL, ",\"expireAfter\":\"1h\"", NULL);
        if (!labels[i])
            continue;
        snprintf(path, sizeof path, "/apis/karpenter.sh/v1/nodeclaims/%s", names[i]);
        cJSON *o = ctlfix_get(&f, path);
        ck_assert_ptr_nonnull(o);
        cJSON_AddStringToObject(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "labels"),
                                "node.accelerator", labels[i]);
        char *t = cJSON_PrintUnformatted(o);
        ctlfix_put(&f, NW_KUBE_NODECLAIMS, t, 1);
        free(t);
        cJSON_Delete(o);
    }
    /* amd does not stage */
    for (size_t i = 0; i < gpu.nclasses; i++)
        if (strcmp(gpu.classes[i].name, "amd") == 0)
            gpu.classes[i].rollout_max = 0;
    int mark = ctlfix_mark(&f);
    nw_clock_fake_advance(&f.clk, 61 * 60 * SEC);
    tick_upkeep(&f, u);
    ck_assert_int_eq(ctlfix_count(&f, mark, "DELETE", "/nodeclaims/plain", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "DELETE", "/nodeclaims/amd", NULL), 1);
    ck_assert_int_eq(ctlfix_count(&f, mark, "DELETE", "/nodeclaims/gpu", NULL), 0);
    nw_upkeep_free(u);
    ctlfix_free(&f);
    nw_gpu_policy_cleanup(&gpu);
}
END_TEST

START_TEST(poolstatus_writes_status)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_upkeep_t *u = nw_upkeep_new(&f.deps, 15 * 60 * SEC);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    ctlfix_launched_claim(&f, "c1", "aws:///us-west-2a/i-1", NULL, NULL, NULL);
    tick_upkeep(&f, u);
    cJSON *p = ctlfix_get(&f, "/apis/karpenter.sh/v1/nodepools/default");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(nw_json_condition(p, "ValidationSucceeded"));
    ck_assert_str_eq(nw_json_condition(p, "ValidationSucceeded"), "True");
    ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(p, "status"), "resources"));
    cJSON_Delete(p);
    /* a new leadership term: the controllers keep what they were built with */
    nw_upkeep_reset(u);
    cJSON *other = ctlfix_get(&f, "/apis/karpenter.sh/v1/nodepools/default");
    cJSON *md = cJSON_GetObjectItemCaseSensitive(other, "metadata");
    cJSON_ReplaceItemInObjectCaseSensitive(md, "name", cJSON_CreateString("other"));
    cJSON_ReplaceItemInObjectCaseSensitive(md, "uid", cJSON_CreateString("p2"));
    cJSON_DeleteItemFromObjectCaseSensitive(other, "status");
    char *txt = cJSON_PrintUnformatted(other);
    cJSON_Delete(other);
    ctlfix_put(&f, NW_KUBE_NODEPOOLS, txt, 1);
    free(txt);
    tick_upkeep(&f, u);
    p = ctlfix_get(&f, "/apis/karpenter.sh/v1/nodepools/other");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(nw_json_condition(p, "ValidationSucceeded"));
    cJSON_Delete(p);
    nw_upkeep_free(u);
    ctlfix_free(&f);
}
END_TEST

/* set the AcceleratorRolloutBlocked condition on an object (the disruption controller's) */
static int add_rollout_cond(cJSON *obj, void *ud)
{
    (void)ud;
    return nw_ctl_set_condition(obj, "AcceleratorRolloutBlocked", "True", "ReplacementNotReady",
                                "late", CTLFIX_T0) == NW_OK
               ? 0
               : 1;
}

/* The NodePool status written from a snapshot that predates the disruption controller's
 * AcceleratorRolloutBlocked condition keeps that condition (the stored one wins). */
START_TEST(poolstatus_keeps_rollout_condition)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_upkeep_t *u = nw_upkeep_new(&f.deps, 15 * 60 * SEC);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    tick_upkeep(&f, u);
    nw_err_t err = {0};
    ck_assert_int_eq(nw_kube_write_update_retry(f.deps.kube, &nw_kube_client_res_nodepools, NULL,
                                                "default", 1, add_rollout_cond, NULL, 3, NULL,
                                                &err),
                     NW_OK);
    /* a new NodeClaim changes status.resources: the status is written again */
    int mark = ctlfix_mark(&f);
    ctlfix_launched_claim(&f, "c1", "aws:///us-west-2a/i-1", NULL, NULL, NULL);
    tick_upkeep(&f, u);
    ck_assert_int_ge(ctlfix_count(&f, mark, "PUT", "/nodepools/default/status", NULL), 1);
    cJSON *p = ctlfix_get(&f, "/apis/karpenter.sh/v1/nodepools/default");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(nw_json_condition(p, "AcceleratorRolloutBlocked"));
    ck_assert_str_eq(nw_json_condition(p, "AcceleratorRolloutBlocked"), "True");
    ck_assert_ptr_nonnull(nw_json_condition(p, "ValidationSucceeded"));
    cJSON_Delete(p);
    nw_upkeep_free(u);
    ctlfix_free(&f);
}
END_TEST

START_TEST(drift_marks_changed_pool)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_upkeep_t *u = nw_upkeep_new(&f.deps, 15 * 60 * SEC);
    ctlfix_put_nodeclass(&f);
    ctlfix_put_nodepool(&f, NULL);
    fake_cloud_add(f.cloud, "i-1", "c1", 60 * SEC);
    /* the claim carries a NodePool hash the pool no longer has */
    ctlfix_launched_claim(
        &f, "c1", "aws:///us-west-2a/i-1",
        ",\"annotations\":{\"karpenter.sh/nodepool-hash\":\"1234\","
        "\"karpenter.sh/nodepool-hash-version\":\"v3\"}",
        NULL,
        ",{\"type\":\"Registered\",\"status\":\"True\",\"reason\":\"Registered\"},"
        "{\"type\":\"Initialized\",\"status\":\"True\",\"reason\":\"Initialized\"}");
    /* first pass annotates the pool with its hash; the cache then shows it */
    tick_upkeep(&f, u);
    cJSON *p = ctlfix_get(&f, "/apis/karpenter.sh/v1/nodepools/default");
    ck_assert_ptr_nonnull(p);
    char *txt = cJSON_PrintUnformatted(p);
    cJSON_Delete(p);
    ck_assert_ptr_nonnull(strstr(txt, "karpenter.sh/nodepool-hash"));
    ctlfix_put(&f, NW_KUBE_NODEPOOLS, txt, 0);
    free(txt);
    tick_upkeep(&f, u);
    cJSON *nc = ctlfix_get(&f, "/apis/karpenter.sh/v1/nodeclaims/c1");
    ck_assert_ptr_nonnull(nw_json_condition(nc, "Drifted"));
    ck_assert_str_eq(nw_json_condition(nc, "Drifted"), "True");
    cJSON_Delete(nc);
    ck_assert_uint_eq(nw_prom_counters_get(&u->counters, "drifted", "default", "NodePoolDrifted"),
                      1);
    nw_upkeep_free(u);
    ctlfix_free(&f);
}
END_TEST

/* ---- garbage collection ---- */

START_TEST(gc_terminates_leaked_instance)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_gc_opts_t go = {SEC, 2 * SEC, 0, 30 * SEC};
    nw_gc_t *g = nw_gc_new(&f.deps, &f.mem.inflight, &go);
    ck_assert_ptr_nonnull(g);
    fake_cloud_add(f.cloud, "i-leak", "gone-claim", 10 * 60 * SEC); /* old, no NodeClaim */
    fake_cloud_add(f.cloud, "i-young", "new-claim", 5 * SEC);       /* inside the grace */
    fake_cloud_add(f.cloud, "i-kept", "c1", 10 * 60 * SEC);
    ctlfix_launched_claim(&f, "c1", "aws:///us-west-2a/i-kept", NULL, NULL, NULL);
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f.deps.cache);
    nw_gc_tick(g, s); /* first tick of a term only schedules the pass */
    ck_assert_int_eq(f.cloud->lists, 0);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    nw_gc_tick(g, s); /* hands the pass to the worker */
    nw_gc_wait(g);
    nw_gc_tick(g, s); /* applies its plan */
    nw_kube_cache_snap_release(s);
    ck_assert_int_eq(f.cloud->lists, 1);
    ck_assert_int_eq(f.cloud->terminates, 1);
    ck_assert_str_eq(fake_cloud_find(f.cloud, "i-leak")->state, "shutting-down");
    ck_assert_str_eq(fake_cloud_find(f.cloud, "i-young")->state, "running");
    ck_assert_str_eq(fake_cloud_find(f.cloud, "i-kept")->state, "running");
    nw_gc_free(g);
    ctlfix_free(&f);
}
END_TEST

/* The worker lists and plans from the snapshot handed over; the tick that applies the
 * plan skips an instance that a NodeClaim claims since, and a failed list schedules a
 * retry without counting a pass. */
START_TEST(gc_applies_plan_against_current_state)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_gc_opts_t go = {SEC, 2 * SEC, 0, 30 * SEC};
    nw_gc_t *g = nw_gc_new(&f.deps, &f.mem.inflight, &go);
    ck_assert_ptr_nonnull(g);
    fake_cloud_add(f.cloud, "i-late", "late-claim", 10 * 60 * SEC);
    fake_cloud_add(f.cloud, "i-leak", "gone-claim", 10 * 60 * SEC);
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f.deps.cache);
    nw_gc_tick(g, s);
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    nw_gc_tick(g, s); /* hands over; the plan will name both instances */
    nw_gc_wait(g);
    ck_assert_int_eq(f.cloud->lists, 1);
    ck_assert_int_eq(f.cloud->terminates, 0); /* nothing written before the next tick */
    ctlfix_launched_claim(&f, "late-claim", "aws:///us-west-2a/i-late", NULL, NULL, NULL);
    nw_kube_snap_t *s2 = nw_kube_cache_snapshot(f.deps.cache);
    nw_gc_tick(g, s2);
    ck_assert_int_eq(f.cloud->terminates, 1);
    ck_assert_str_eq(fake_cloud_find(f.cloud, "i-leak")->state, "shutting-down");
    ck_assert_str_eq(fake_cloud_find(f.cloud, "i-late")->state, "running");
    nw_buf_t b;
    nw_buf_init(&b, 1 << 16);
    ck_assert_int_eq(nw_gc_metrics(g, &b), NW_OK);
    ck_assert_ptr_nonnull(strstr(nw_buf_str(&b), "nodewarden_gc_passes_total 1\n"));
    /* the next pass's list fails: not a pass, retried after the short interval */
    f.cloud->fail_list = 1;
    nw_clock_fake_advance(&f.clk, 1100 * NW_NS_PER_MS);
    nw_gc_tick(g, s2);
    nw_gc_wait(g);
    nw_gc_tick(g, s2);
    ck_assert_int_eq(f.cloud->lists, 2);
    nw_buf_reset(&b);
    ck_assert_int_eq(nw_gc_metrics(g, &b), NW_OK);
    ck_assert_ptr_nonnull(strstr(nw_buf_str(&b), "nodewarden_gc_passes_total 1\n"));
    ck_assert_ptr_nonnull(strstr(nw_buf_str(&b), "nodewarden_gc_failed_passes_total 1\n"));
    f.cloud->fail_list = 0;
    nw_gc_tick(g, s2); /* not due yet */
    nw_gc_wait(g);
    ck_assert_int_eq(f.cloud->lists, 2);
    nw_buf_cleanup(&b);
    nw_kube_cache_snap_release(s2);
    nw_kube_cache_snap_release(s);
    nw_gc_free(g);
    ctlfix_free(&f);
}
END_TEST

/* ---- termination ---- */

START_TEST(termination_terminates_and_finalizes_despite_403)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_termination_t *t = nw_termination_new(&f.deps);
    f.api.forbid = "volumeattachments";
    f.cloud->gone_after = 0;
    fake_cloud_add(f.cloud, "i-1", "c1", 60 * SEC);
    ctlfix_launched_claim(&f, "c1", "aws:///us-west-2a/i-1",
                          ",\"deletionTimestamp\":\"2026-11-30T12:00:00Z\"", NULL, NULL);
    int mark = 0;
    for (int i = 0; i < 20 && !ctlfix_count(&f, mark, "/nodeclaims/c1", "finalizers", NULL); i++) {
        nw_kube_snap_t *s = nw_kube_cache_snapshot(f.deps.cache);
        nw_termination_tick(t, s);
        nw_kube_cache_snap_release(s);
        nw_clock_fake_advance(&f.clk, 6 * SEC);
    }
    ck_assert_int_ge(f.cloud->terminates, 1);
    ck_assert_int_ge(ctlfix_count(&f, mark, "/nodeclaims/c1", "finalizers", NULL), 1);
    nw_termination_free(t);
    ctlfix_free(&f);
}
END_TEST

Suite *nw_controllers_suite(void)
{
    Suite *s = suite_create("controllers");
    TCase *t = tcase_create("ticks");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, provisioner_pending_pod_creates_and_launches);
    tcase_add_test(t, provisioner_launch_labels_refused_recorded_later);
    tcase_add_test(t, provisioner_ice_deletes_claim);
    tcase_add_test(t, provisioner_missed_claim_placed_again);
    tcase_add_test(t, provisioner_alike_small_pods_not_nominated);
    tcase_add_test(t, provisioner_spread_pods_nominated);
    tcase_add_test(t, provisioner_hard_spread_claims_one_cohort);
    tcase_add_test(t, provisioner_soft_spread_no_cohort);
    tcase_add_test(t, provisioner_alike_pods_not_placed_again);
    tcase_add_test(t, provisioner_larger_pod_placed_again);
    tcase_add_test(t, provisioner_pod_with_room_not_placed_again);
    tcase_add_test(t, provisioner_spread_pod_placed_again);
    tcase_add_test(t, provisioner_missed_claim_with_room_adds_none);
    tcase_add_test(t, provisioner_untried_pod_not_placed_again);
    tcase_add_test(t, provisioner_nominates_pod_to_its_node);
    tcase_add_test(t, provisioner_keeps_scheduler_nomination);
    tcase_add_test(t, provisioner_own_nomination_follows_the_plan);
    tcase_add_test(t, launch_held_by_the_cloud_stalls_no_tick);
    tcase_add_test(t, launches_bounded_by_workers);
    tcase_add_test(t, launch_token_moves_on_only_when_spent);
    tcase_add_test(t, provisioner_skips_pool_of_unready_class);
    tcase_add_test(t, provisioner_waits_for_class_without_status);
    tcase_add_test(t, claim_of_class_without_status_waits);
    tcase_add_test(t, unready_class_claim_not_launched);
    tcase_add_test(t, token_secret_made_once_across_retries);
    tcase_add_test(t, cached_claim_launched_from_the_api_copy);
    tcase_add_test(t, cached_claim_launched_elsewhere_left_alone);
    tcase_add_test(t, lifecycle_unready_class_looked_at_sooner);
    tcase_add_test(t, batch_creates_run_together);
    tcase_add_test(t, provisioner_window_opens_at_arrival);
    tcase_add_test(t, provisioner_window_not_before_first_tick);
    tcase_add_test(t, lifecycle_registers_node);
    tcase_add_test(t, lifecycle_registration_timeout_deletes);
    tcase_add_test(t, lifecycle_registers_together);
    tcase_add_test(t, nominations_written_together);
    tcase_add_test(t, lifecycle_registers_after_nominations);
    tcase_add_test(t, nominations_pending_per_node);
    tcase_add_test(t, lifecycle_registers_after_a_scan_saw_the_node);
    tcase_add_test(t, lifecycle_cohort_registers_together);
    tcase_add_test(t, lifecycle_cohort_member_gone);
    tcase_add_test(t, lifecycle_cohort_wait_ends);
    tcase_add_test(t, lifecycle_cohort_domain_has_a_node);
    tcase_add_test(t, lifecycle_conflict_reads_again);
    tcase_add_test(t, lifecycle_registration_patch_content);
    tcase_add_test(t, lifecycle_initializes_after_registration_seen);
    tcase_add_test(t, expiry_deletes_past_expire_after);
    tcase_add_test(t, expiry_leaves_staged_accelerator_nodes);
    tcase_add_test(t, poolstatus_writes_status);
    tcase_add_test(t, poolstatus_keeps_rollout_condition);
    tcase_add_test(t, drift_marks_changed_pool);
    tcase_add_test(t, gc_terminates_leaked_instance);
    tcase_add_test(t, gc_applies_plan_against_current_state);
    tcase_add_test(t, termination_terminates_and_finalizes_despite_403);
    suite_add_tcase(s, t);
    return s;
}
