/* tests/unit/test_disruption_ctl.c — the disruption controller's tick
 * (scaler/controllers/disruption.c) on a fake clock, the shared fake cloud and the
 * in-memory API (ctlfix.h); the decisions themselves are test_disruption.c's:
 *   emptiness   empty nodes are deleted within the NodePool's budget (one per "1"), the
 *               deleted one is not counted twice while the cache still shows it, and a
 *               command that must be validated waits for the validation delay
 *   PDB         a drifted node whose pod a PDB protects (0 disruptions allowed) is left alone
 *   drift       a drifted node with a pod: the node is tainted, a replacement NodeClaim is
 *               created and launched, the candidate is deleted only once the replacement is
 *               Initialized (the command stays in flight across ticks)
 *   new term    after a reset (leadership), a command of the previous term is forgotten and
 *               its leftovers (the taint, the DisruptionReason condition) are removed
 *   GPU-aware   an accelerator node is reclaimed once no pod of its class has run there for
 *               consolidateAfter by what the controller saw, although other pods keep moving
 *               its lastPodEventTime (issue 33)
 *   staged      drifted GPU nodes are replaced one at a time: the replacement carries the
 *               rollout annotation, the next waits for a Ready GPU pod on it, a late one
 *               sets the NodePool's AcceleratorRolloutBlocked (and an event), and a Ready
 *               pod ends the step and the block
 *   view duty   under a stream of changes, full ticks (here: a node's lastPodEventTime) come
 *               a second apart by default, and no sooner than view_duty times the last
 *               one's cost (at most 30 s) when it is set
 *   at rest     with every budget at 0 no pass runs (no candidate is built), and a change
 *               to a budget, its schedule window closing, or a deletion freeing it, brings
 *               the pass back; a pass that
 * found nothing is not run again while nothing changes, but after a change and every 5 minutes; a
 *               consolidateAfter that runs out with no change in the cluster still acts;
 *               a pod change after a look that saw none still moves lastPodEventTime
 *   fingerprints  kept per NodeClaim: NodeClaims gone and new ones do not shift a node's
 *               pods onto another's fingerprint
 *   kept match  a light look's state kept for the next one is not used once a Node changed
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu.h"
#include "ctlfix.h"
#include "scaler/controllers/disruption.h"
#include "scaler/disrupt/disrupt.h"
#include "scaler/metrics/kmetrics.h"

Suite *nw_disruption_ctl_suite(void);

#define SEC NW_NS_PER_SEC
#define CLAIMS "/apis/karpenter.sh/v1/nodeclaims/"
#define CREATE_CLAIM "POST /apis/karpenter.sh/v1/nodeclaims "

static const char *DRIFTED = ",{\"type\":\"Drifted\",\"status\":\"True\",\"reason\":"
                             "\"NodePoolDrifted\",\"lastTransitionTime\":\"2026-11-30T11:00:00Z\"}";

typedef struct {
    ctlfix_t f;
    nw_disruption_t *d;
} dfx_t;

static void dfx_init(dfx_t *x, const char *disruption, int64_t validation_ns)
{
    ctlfix_init(&x->f);
    nw_disruption_opts_t o = {.poll_ns = 10 * SEC, .validation_ns = validation_ns};
    x->d = nw_disruption_ctl_new(&x->f.deps, x->f.claims, &x->f.mem, &o, NULL);
    ck_assert_ptr_nonnull(x->d);
    ctlfix_put_nodeclass(&x->f);
    ctlfix_put_nodepool(&x->f, disruption);
}

static void dfx_free(dfx_t *x)
{
    nw_disruption_ctl_free(x->d);
    ctlfix_free(&x->f);
}

static void tick(dfx_t *x)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(x->f.deps.cache);
    ck_assert_ptr_nonnull(s);
    nw_disruption_tick(x->d, s);
    nw_kube_cache_snap_release(s);
}

/* a running pod of a ReplicaSet on node-<node> */
static void pod_on(ctlfix_t *f, const char *name, const char *node, const char *labels)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
             "\"default\",\"uid\":\"uid-%s\",\"labels\":{%s},\"ownerReferences\":[{\"apiVersion\":"
             "\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs\",\"uid\":\"rs-uid\","
             "\"controller\":true}],\"creationTimestamp\":\"2026-11-30T10:05:00Z\"},\"spec\":{"
             "\"nodeName\":\"node-%s\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
             "{\"cpu\":\"500m\",\"memory\":\"512Mi\"}}}]},\"status\":{\"phase\":\"Running\","
             "\"startTime\":\"2026-11-30T10:05:00Z\",\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"True\"}]}}",
             name, name, labels ? labels : "", node);
    ctlfix_put(f, NW_KUBE_PODS, b, 1);
}

/* the name of the one NodeClaim deleted since mark among names (NULL: none or several) */
static const char *deleted_one(ctlfix_t *f, int mark, const char *const *names, size_t n)
{
    const char *hit = NULL;
    for (size_t i = 0; i < n; i++) {
        char p[300];
        snprintf(p, sizeof p, "DELETE " CLAIMS "%s", names[i]);
        if (ctlfix_count(f, mark, p, NULL, NULL)) {
            if (hit)
                return NULL;
            hit = names[i];
        }
    }
    return hit;
}

/* is the disrupted taint on the API's copy of the Node */
static int api_node_tainted(ctlfix_t *f, const char *node)
{
    char p[300];
    snprintf(p, sizeof p, "/api/v1/nodes/%s", node);
    cJSON *n = ctlfix_get(f, p);
    ck_assert_ptr_nonnull(n);
    int t = ctlfix_disrupted_taint(n);
    cJSON_Delete(n);
    return t;
}

static const char *api_condition(ctlfix_t *f, const char *claim, const char *type, char *buf,
                                 size_t n)
{
    char p[300];
    snprintf(p, sizeof p, CLAIMS "%s", claim);
    cJSON *o = ctlfix_get(f, p);
    ck_assert_ptr_nonnull(o);
    const char *st = nw_json_condition(o, type);
    if (st)
        snprintf(buf, n, "%s", st);
    cJSON_Delete(o);
    return st ? buf : NULL;
}

/* ---- emptiness ---- */

START_TEST(empty_nodes_within_budget)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"0s\",\"budgets\":[{\"nodes\":\"1\"}]}", 0);
    ctlfix_t *f = &x.f;
    const char *names[] = {"a", "b", "c"};
    for (size_t i = 0; i < 3; i++)
        ctlfix_node_pair(f, names[i], NULL);
    int mark = ctlfix_mark(f);
    tick(&x);
    /* the budget allows one: exactly one empty NodeClaim deleted, the others noted */
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 1);
    const char *first = deleted_one(f, mark, names, 3);
    ck_assert_ptr_nonnull(first);
    ck_assert_int_ge(ctlfix_count(f, mark, "POST", "/events", "DisruptionBlocked"), 1);
    ck_assert_int_ge(ctlfix_count(f, mark, "POST", "/events", "DisruptionTerminating"), 1);
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 0); /* no replacement */
    /* the cache still shows it alive: it counts as disrupting, nothing else goes */
    mark = ctlfix_mark(f);
    nw_clock_fake_advance(&f->clk, 11 * SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 0);
    /* gone: the budget has room again, the next one goes */
    ctlfix_del(f, NW_KUBE_NODECLAIMS, "", first);
    char node[64];
    snprintf(node, sizeof node, "node-%s", first);
    ctlfix_del(f, NW_KUBE_NODES, "", node);
    nw_clock_fake_advance(&f->clk, 31 * SEC);
    mark = ctlfix_mark(f);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 1);
    const char *second = deleted_one(f, mark, names, 3);
    ck_assert_ptr_nonnull(second);
    ck_assert_str_ne(second, first);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert_int_eq(nw_disruption_metrics(x.d, &b), NW_OK);
    ck_assert_msg(strstr(b.data, "nodewarden_disruption_nodes_disrupted_total{method=\"emptiness\","
                                 "reason=\"Empty\"} 2\n"),
                  "%s", b.data);
    nw_buf_cleanup(&b);
    dfx_free(&x);
}
END_TEST

START_TEST(empty_node_waits_for_validation)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"0s\",\"budgets\":[{\"nodes\":\"100%\"}]}", 15 * SEC);
    ctlfix_t *f = &x.f;
    ctlfix_node_pair(f, "a", NULL);
    int mark = ctlfix_mark(f);
    tick(&x); /* decided; waits for the validation delay */
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 0);
    nw_clock_fake_advance(&f->clk, 10 * SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 0);
    nw_clock_fake_advance(&f->clk, 6 * SEC);
    tick(&x); /* validated on the current state: still empty, deleted */
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS "a", NULL, NULL), 1);
    dfx_free(&x);
}
END_TEST

START_TEST(validation_rejects_a_node_that_got_a_pod)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"0s\",\"budgets\":[{\"nodes\":\"100%\"}]}", 15 * SEC);
    ctlfix_t *f = &x.f;
    ctlfix_node_pair(f, "a", NULL);
    int mark = ctlfix_mark(f);
    tick(&x);
    pod_on(f, "late", "a", NULL); /* a pod lands during the validation delay */
    nw_clock_fake_advance(&f->clk, 16 * SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 0);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert_int_eq(nw_disruption_metrics(x.d, &b), NW_OK);
    ck_assert_msg(strstr(b.data, "nodewarden_disruption_commands_rejected_total 1\n"), "%s",
                  b.data);
    nw_buf_cleanup(&b);
    dfx_free(&x);
}
END_TEST

/* ---- drift ---- */

static const char *DRIFT_POOL =
    "{\"consolidateAfter\":\"Never\",\"budgets\":[{\"nodes\":\"100%\"}]}";

START_TEST(pdb_blocks_drift)
{
    dfx_t x;
    dfx_init(&x, DRIFT_POOL, 0);
    ctlfix_t *f = &x.f;
    ctlfix_node_pair(f, "d", DRIFTED);
    pod_on(f, "web", "d", "\"app\":\"web\"");
    ctlfix_put(f, NW_KUBE_PDBS,
               "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\",\"metadata\":{"
               "\"name\":\"web\",\"namespace\":\"default\",\"uid\":\"pdb-web\"},\"spec\":{"
               "\"selector\":{\"matchLabels\":{\"app\":\"web\"}}},\"status\":{"
               "\"disruptionsAllowed\":0}}",
               0);
    int mark = ctlfix_mark(f);
    for (int i = 0; i < 3; i++) {
        tick(&x);
        nw_clock_fake_advance(&f->clk, 11 * SEC);
    }
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 0);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 0);
    ck_assert_int_eq(f->cloud->launches, 0);
    ck_assert(!api_node_tainted(f, "node-d"));
    dfx_free(&x);
}
END_TEST

/* tick once on a drifted node d with a pod: the command starts; returns the replacement */
static void start_drift(dfx_t *x, char *repl, size_t n)
{
    ctlfix_t *f = &x->f;
    ctlfix_node_pair(f, "d", DRIFTED);
    pod_on(f, "web", "d", "\"app\":\"web\"");
    int mark = ctlfix_mark(f);
    tick(x);
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 1);
    ck_assert_int_eq(f->cloud->launches, 1);
    snprintf(repl, n, "%s", f->cloud->last_launch_claim);
    ck_assert_msg(strncmp(repl, "default-", 8) == 0, "replacement %s", repl);
    ck_assert(api_node_tainted(f, "node-d"));
    char buf[32];
    ck_assert_ptr_nonnull(api_condition(f, "d", "DisruptionReason", buf, sizeof buf));
    ck_assert_str_eq(buf, "True");
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 0);
    ck_assert_int_ge(ctlfix_count(f, mark, "POST", "/events", "DisruptionLaunching"), 1);
    /* the watch delivers the replacement (launched: it has a providerID) and the taint */
    char p[400];
    snprintf(p, sizeof p, CLAIMS "%s", repl);
    ck_assert(ctlfix_sync(f, NW_KUBE_NODECLAIMS, p));
    ck_assert(ctlfix_sync(f, NW_KUBE_NODES, "/api/v1/nodes/node-d"));
    ck_assert(ctlfix_sync(f, NW_KUBE_NODECLAIMS, CLAIMS "d"));
}

/* the cache's replacement becomes Initialized */
static void initialize(ctlfix_t *f, const char *repl)
{
    char p[400];
    snprintf(p, sizeof p, CLAIMS "%s", repl);
    cJSON *o = ctlfix_get(f, p);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(nw_ctl_set_condition(o, "Initialized", "True", "Initialized", "",
                                          nw_clock_now(f->deps.clock)),
                     NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(f->deps.cache, NW_KUBE_NODECLAIMS, o), NW_OK);
}

/* ---- GPU-aware disruption ---- */

/* NodeClaim `name` and its Node as ctlfix_node_pair makes them, labelled
 * node.accelerator=nvidia-gpu, with status.lastPodEventTime at `last_pod_event` (epoch ns) */
static void gpu_pair(ctlfix_t *f, const char *name, int64_t last_pod_event)
{
    const char *labels =
        "\"karpenter.sh/nodepool\":\"default\",\"node.kubernetes.io/instance-type\":"
        "\"m5.large\",\"karpenter.sh/capacity-type\":\"on-demand\","
        "\"topology.kubernetes.io/zone\":\"us-west-2a\",\"kubernetes.io/arch\":\"amd64\","
        "\"karpenter.k8s.aws/instance-category\":\"m\",\"node.accelerator\":\"nvidia-gpu\"";
    char ts[40], b[4096];
    nw_clock_time_format(last_pod_event, ts, sizeof ts);
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodeClaim\",\"metadata\":{\"name\":"
             "\"%s\",\"uid\":\"uid-%s\",\"creationTimestamp\":\"2026-11-30T10:00:00Z\","
             "\"finalizers\":[\"karpenter.sh/termination\"],\"labels\":{%s}},\"spec\":{"
             "\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":"
             "\"default\"},\"requirements\":[]},\"status\":{\"providerID\":"
             "\"aws:///us-west-2a/i-%s\",\"nodeName\":\"node-%s\",\"lastPodEventTime\":\"%s\","
             "\"conditions\":[{\"type\":\"Launched\",\"status\":\"True\",\"reason\":\"Launched\","
             "\"lastTransitionTime\":\"2026-11-30T10:00:00Z\"},"
             "{\"type\":\"Registered\",\"status\":\"True\",\"reason\":\"Registered\","
             "\"lastTransitionTime\":\"2026-11-30T10:01:00Z\"},"
             "{\"type\":\"Initialized\",\"status\":\"True\",\"reason\":\"Initialized\","
             "\"lastTransitionTime\":\"2026-11-30T10:02:00Z\"}]}}",
             name, name, labels, name, name, ts);
    ctlfix_put(f, NW_KUBE_NODECLAIMS, b, 1);
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%s\","
             "\"uid\":\"uid-node-%s\",\"creationTimestamp\":\"2026-11-30T10:01:00Z\",\"labels\":{"
             "%s,\"kubernetes.io/hostname\":\"node-%s\"}},\"spec\":{\"providerID\":"
             "\"aws:///us-west-2a/i-%s\"},\"status\":{\"allocatable\":{\"cpu\":\"1930m\","
             "\"memory\":\"7Gi\",\"pods\":\"29\",\"nvidia.com/gpu\":\"1\"},\"capacity\":{\"cpu\":"
             "\"2\",\"memory\":\"8Gi\",\"pods\":\"29\",\"nvidia.com/gpu\":\"1\"},\"conditions\":["
             "{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":"
             "\"2026-11-30T10:01:30Z\"}]}}",
             name, name, labels, name, name);
    ctlfix_put(f, NW_KUBE_NODES, b, 1);
}

/* a running pod with one NVIDIA GPU on node-<node> */
static void gpu_pod_on(ctlfix_t *f, const char *name, const char *node)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
             "\"default\",\"uid\":\"uid-%s\",\"ownerReferences\":[{\"apiVersion\":\"batch/v1\","
             "\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"j-uid\",\"controller\":true}],"
             "\"creationTimestamp\":\"2026-11-30T10:05:00Z\"},\"spec\":{\"nodeName\":\"node-%s\","
             "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}],\"containers\":[{"
             "\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"500m\","
             "\"nvidia.com/gpu\":\"1\"},"
             "\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Running\","
             "\"startTime\":\"2026-11-30T10:05:00Z\",\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"True\"}]}}",
             name, name, node);
    ctlfix_put(f, NW_KUBE_PODS, b, 1);
}

/* The controller remembers when it last saw a pod of the node's class: other pods coming
 * and going (lastPodEventTime moving on) do not hold the node; consolidateAfter after the
 * GPU pod was last seen, the node is reclaimed, its helper's replacement created first.
 * Judged by lastPodEventTime alone, it would still wait. */
START_TEST(accel_idle_reclaimed_despite_pod_churn)
{
    nw_gpu_policy_t gpu;
    ck_assert_int_eq(nw_gpu_policy_init(&gpu, ""), NW_OK);
    dfx_t x;
    ctlfix_init(&x.f);
    ctlfix_t *f = &x.f;
    f->mem.gpu = &gpu;
    nw_disruption_opts_t o = {.poll_ns = 10 * SEC, .validation_ns = 0};
    x.d = nw_disruption_ctl_new(&f->deps, f->claims, &f->mem, &o, NULL);
    ck_assert_ptr_nonnull(x.d);
    ctlfix_put_nodeclass(f);
    ctlfix_put_nodepool(f, "{\"consolidateAfter\":\"60s\",\"budgets\":[{\"nodes\":\"100%\"}]}");
    int64_t t0 = nw_clock_now(f->deps.clock);
    gpu_pair(f, "g", t0);
    gpu_pod_on(f, "train", "g");
    pod_on(f, "helper", "g", "\"app\":\"helper\"");
    int mark = ctlfix_mark(f);
    tick(&x); /* the GPU pod runs: remembered now */
    ctlfix_del(f, NW_KUBE_PODS, "default", "train");
    /* other pods keep moving the last pod event: at +30 s and +55 s */
    for (int at = 30; at <= 55; at += 25) {
        nw_clock_fake_advance(&f->clk, (at == 30 ? 30 : 25) * SEC);
        gpu_pair(f, "g", nw_clock_now(f->deps.clock));
        tick(&x);
    }
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 0);
    /* +65 s: consolidateAfter since the GPU pod was last seen (lastPodEventTime: 10 s ago) */
    nw_clock_fake_advance(&f->clk, 10 * SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 1);
    ck_assert_int_ge(ctlfix_count(f, mark, "POST", "/events", "DisruptionLaunching"), 1);
    ck_assert(api_node_tainted(f, "node-g"));
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert_int_eq(nw_disruption_metrics(x.d, &b), NW_OK);
    ck_assert_msg(strstr(b.data,
                         "nodewarden_disruption_decisions_total{method=\"accelerator-idle\","
                         "action=\"replace\",reason=\"Underutilized\"} 1\n"),
                  "%s", b.data);
    nw_buf_cleanup(&b);
    dfx_free(&x);
    nw_gpu_policy_cleanup(&gpu);
}
END_TEST

/* ---- staged replacement of accelerator nodes ---- */

/* NodePool "default" of GPU types (g6, on-demand) labelled node.accelerator=nvidia-gpu */
static void gpu_pool(ctlfix_t *f)
{
    ctlfix_put(
        f, NW_KUBE_NODEPOOLS,
        "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":"
        "\"default\",\"uid\":\"p1\",\"generation\":1},\"spec\":{\"disruption\":{"
        "\"consolidateAfter\":\"Never\",\"budgets\":[{\"nodes\":\"100%\"}]},\"template\":{"
        "\"metadata\":{\"labels\":{\"node.accelerator\":\"nvidia-gpu\"}},\"spec\":{"
        "\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\","
        "\"name\":\"default\"},\"requirements\":[{\"key\":\"karpenter.k8s.aws/"
        "instance-family\",\"operator\":\"In\",\"values\":[\"g6\"]},{\"key\":"
        "\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\"]},{\"key\":"
        "\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"on-demand\"]}]}}}}",
        1);
}

/* gpu_pair, drifted */
static void drifted_gpu_pair(ctlfix_t *f, const char *name)
{
    gpu_pair(f, name, nw_clock_now(f->deps.clock));
    char p[300];
    snprintf(p, sizeof p, CLAIMS "%s", name);
    cJSON *o = ctlfix_get(f, p);
    ck_assert_ptr_nonnull(o);
    ck_assert_int_eq(nw_ctl_set_condition(o, "Drifted", "True", "NodePoolDrifted", "",
                                          nw_clock_now(f->deps.clock)),
                     NW_OK);
    char *t = cJSON_PrintUnformatted(o);
    ctlfix_put(f, NW_KUBE_NODECLAIMS, t, 1);
    free(t);
    cJSON_Delete(o);
}

/* the API's copy of the NodePool's condition of this type (NULL: none) */
static const char *pool_condition(ctlfix_t *f, const char *type, char *buf, size_t n)
{
    cJSON *o = ctlfix_get(f, "/apis/karpenter.sh/v1/nodepools/default");
    ck_assert_ptr_nonnull(o);
    const char *st = nw_json_condition(o, type);
    if (st)
        snprintf(buf, n, "%s", st);
    cJSON_Delete(o);
    return st ? buf : NULL;
}

/* The cache gets the API's NodePool (a condition written) or NodeClaim back. */
static void sync_path(ctlfix_t *f, nw_kube_kind_t k, const char *path)
{
    ck_assert(ctlfix_sync(f, k, path));
}

/* the training pod, moved to the replacement's node node-r, Running; Ready as said */
static void train1b(ctlfix_t *f, const char *ready)
{
    char pod[2048];
    snprintf(pod, sizeof pod,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train1b\","
             "\"namespace\":\"default\",\"uid\":\"uid-train1b\",\"ownerReferences\":[{"
             "\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"j\",\"uid\":\"j-uid\","
             "\"controller\":true}]},\"spec\":{\"nodeName\":\"node-r\",\"tolerations\":[{\"key\":"
             "\"gpu\","
             "\"operator\":\"Exists\"}],\"containers\":[{\"name\":"
             "\"c\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\"},\"limits\":{"
             "\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{"
             "\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
             ready);
    ctlfix_put(f, NW_KUBE_PODS, pod, 1);
}

/* Two drifted GPU nodes of a pool whose class stages rollouts (the default: 1 at a time):
 * the first is replaced by a NodeClaim carrying the rollout annotation; the second waits
 * while that replacement has no Ready GPU pod; 30 minutes on, the rollout stops (the
 * NodePool's AcceleratorRolloutBlocked condition, a Warning event); once a GPU pod is Ready
 * on the replacement, the annotation goes, the condition turns False and the second node is
 * replaced. */
START_TEST(staged_rollout_one_at_a_time)
{
    nw_gpu_policy_t gpu;
    ck_assert_int_eq(nw_gpu_policy_init(&gpu, ""), NW_OK);
    ck_assert_int_eq(gpu.classes[0].rollout_max, 1);
    dfx_t x;
    ctlfix_init(&x.f);
    ctlfix_t *f = &x.f;
    f->mem.gpu = &gpu;
    nw_disruption_opts_t o = {.poll_ns = 10 * SEC, .validation_ns = 0};
    x.d = nw_disruption_ctl_new(&f->deps, f->claims, &f->mem, &o, NULL);
    ck_assert_ptr_nonnull(x.d);
    ctlfix_put_nodeclass(f);
    gpu_pool(f);
    drifted_gpu_pair(f, "g1");
    drifted_gpu_pair(f, "g2");
    gpu_pod_on(f, "train1", "g1");
    gpu_pod_on(f, "train2", "g2");
    int mark = ctlfix_mark(f);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 1);
    char repl[256], p[400];
    snprintf(repl, sizeof repl, "%s", f->cloud->last_launch_claim);
    snprintf(p, sizeof p, CLAIMS "%s", repl);
    cJSON *rc = ctlfix_get(f, p);
    ck_assert_ptr_nonnull(rc);
    const char *replaces = nw_json_str(nw_json_get(nw_json_get(rc, "metadata"), "annotations"),
                                       NW_DIS_ROLLOUT_ANNOTATION);
    ck_assert_ptr_nonnull(replaces);
    ck_assert_str_eq(replaces, "g1");
    cJSON_Delete(rc);
    sync_path(f, NW_KUBE_NODECLAIMS, p);
    initialize(f, repl);
    tick(&x); /* the replacement is Initialized: g1 goes */
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS "g1", NULL, NULL), 1);
    ctlfix_del(f, NW_KUBE_NODECLAIMS, NULL, "g1");
    ctlfix_del(f, NW_KUBE_NODES, NULL, "node-g1");
    ctlfix_del(f, NW_KUBE_PODS, "default", "train1");
    /* the replacement's Node, the training pod on it, not Ready yet */
    rc = ctlfix_get(f, p);
    char node[4096];
    snprintf(node, sizeof node,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-r\","
             "\"uid\":\"uid-node-r\",\"labels\":{\"karpenter.sh/nodepool\":\"default\","
             "\"node.accelerator\":\"nvidia-gpu\",\"node.kubernetes.io/instance-type\":"
             "\"g6.xlarge\"}},\"spec\":{\"providerID\":\"%s\"},\"status\":{\"allocatable\":{"
             "\"cpu\":\"3\",\"memory\":\"14Gi\",\"pods\":\"58\",\"nvidia.com/gpu\":\"1\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             nw_json_str_at(rc, "status.providerID"));
    cJSON_Delete(rc);
    ctlfix_put(f, NW_KUBE_NODES, node, 1);
    train1b(f, "False");
    mark = ctlfix_mark(f);
    for (int i = 0; i < 3; i++) {
        nw_clock_fake_advance(&f->clk, 11 * SEC);
        tick(&x);
    }
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 0); /* g2 waits */
    ck_assert_int_ge(ctlfix_count(f, 0, "POST", "/events", "Staged replacement: 1 of at most 1"),
                     1);
    char buf[32];
    ck_assert_ptr_null(pool_condition(f, NW_DIS_ROLLOUT_CONDITION, buf, sizeof buf));
    /* 30 minutes after the replacement's creation: the rollout stops */
    nw_clock_fake_advance(&f->clk, 30 * 60 * SEC);
    mark = ctlfix_mark(f);
    tick(&x);
    ck_assert_ptr_nonnull(pool_condition(f, NW_DIS_ROLLOUT_CONDITION, buf, sizeof buf));
    ck_assert_str_eq(buf, "True");
    ck_assert_int_eq(ctlfix_count(f, mark, "POST", "/events", "\"AcceleratorRolloutBlocked\""),
                     2); /* the NodePool's, and the held-back g2's note */
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 0);
    sync_path(f, NW_KUBE_NODEPOOLS, "/apis/karpenter.sh/v1/nodepools/default");
    /* the pod gets Ready: the step is done */
    train1b(f, "True");
    nw_clock_fake_advance(&f->clk, 11 * SEC);
    mark = ctlfix_mark(f);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS, repl, NULL), 1);
    ck_assert_ptr_nonnull(pool_condition(f, NW_DIS_ROLLOUT_CONDITION, buf, sizeof buf));
    ck_assert_str_eq(buf, "False");
    ck_assert_int_ge(ctlfix_count(f, mark, "POST", "/events", "AcceleratorRolloutResumed"), 1);
    ck_assert_int_ge(ctlfix_count(f, mark, "POST", "/events", "AcceleratorRolloutStepDone"), 1);
    /* g2's turn, in the same pass: its GPU pod needs a new node */
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 1);
    ck_assert(api_node_tainted(f, "node-g2"));
    dfx_free(&x);
    nw_gpu_policy_cleanup(&gpu);
}
END_TEST

START_TEST(drift_replaces_then_deletes)
{
    dfx_t x;
    dfx_init(&x, DRIFT_POOL, 0);
    ctlfix_t *f = &x.f;
    char repl[256];
    start_drift(&x, repl, sizeof repl);
    /* the replacement is not Initialized yet: the candidate stays, across ticks */
    int mark = ctlfix_mark(f);
    for (int i = 0; i < 3; i++) {
        nw_clock_fake_advance(&f->clk, 5 * SEC);
        tick(&x);
    }
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 0);
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 0); /* no second one */
    /* said once, on the NodeClaim and on its Node */
    ck_assert_int_eq(ctlfix_count(f, 0, "POST", "/events", "DisruptionWaitingReadiness"), 2);
    initialize(f, repl);
    mark = ctlfix_mark(f);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 1);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS "d", NULL, NULL), 1);
    ck_assert_int_ge(ctlfix_count(f, mark, "POST", "/events", "DisruptionTerminating"), 1);
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert_int_eq(nw_disruption_metrics(x.d, &b), NW_OK);
    ck_assert_msg(strstr(b.data, "nodewarden_disruption_decisions_total{method=\"drift\","
                                 "action=\"replace\",reason=\"Drifted\"} 1\n"),
                  "%s", b.data);
    ck_assert_msg(strstr(b.data, "nodewarden_disruption_nodes_disrupted_total{method=\"drift\","
                                 "reason=\"Drifted\"} 1\n"),
                  "%s", b.data);
    nw_buf_cleanup(&b);
    dfx_free(&x);
}
END_TEST

/* A provisioning batch waits (nw_ctl_deps_t.batch_waiting): the pass stops before its
 * simulation and decides nothing; the next tick after the batch makes the pass again. */
static bool batch_waits;
static bool batch_waiting_fn(void *ud)
{
    (void)ud;
    return batch_waits;
}

START_TEST(pass_steps_aside_for_a_batch)
{
    dfx_t x;
    dfx_init(&x, DRIFT_POOL, 0);
    ctlfix_t *f = &x.f;
    f->deps.batch_waiting = batch_waiting_fn;
    batch_waits = true;
    ctlfix_node_pair(f, "d", DRIFTED);
    pod_on(f, "web", "d", "\"app\":\"web\"");
    int mark = ctlfix_mark(f);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 0);
    ck_assert_int_eq(f->cloud->launches, 0);
    ck_assert(!api_node_tainted(f, "node-d"));
    /* the batch is done: the next tick, nothing else changed, replaces the drifted node */
    batch_waits = false;
    nw_clock_fake_advance(&f->clk, SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, CREATE_CLAIM, NULL, NULL), 1);
    ck_assert_int_eq(f->cloud->launches, 1);
    ck_assert(api_node_tainted(f, "node-d"));
    dfx_free(&x);
}
END_TEST

START_TEST(new_term_forgets_command_and_cleans_up)
{
    dfx_t x;
    dfx_init(&x, DRIFT_POOL, 0);
    ctlfix_t *f = &x.f;
    char repl[256];
    start_drift(&x, repl, sizeof repl);
    /* a new leadership term; meanwhile the drift was resolved (no Drifted condition) */
    nw_disruption_ctl_reset(x.d);
    cJSON *d = ctlfix_get(f, CLAIMS "d");
    ck_assert_ptr_nonnull(d);
    cJSON *conds = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "status"),
                                                    "conditions");
    for (int i = cJSON_GetArraySize(conds) - 1; i >= 0; i--)
        if (strcmp(nw_json_str(cJSON_GetArrayItem(conds, i), "type"), "Drifted") == 0)
            cJSON_DeleteItemFromArray(conds, i);
    char *txt = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    ctlfix_put(f, NW_KUBE_NODECLAIMS, txt, 1);
    free(txt);
    int mark = ctlfix_mark(f);
    tick(&x);
    /* leftovers of the forgotten command are removed */
    ck_assert(!api_node_tainted(f, "node-d"));
    char buf[32];
    ck_assert_ptr_null(api_condition(f, "d", "DisruptionReason", buf, sizeof buf));
    /* and the replacement's readiness no longer deletes the candidate */
    ck_assert(ctlfix_sync(f, NW_KUBE_NODES, "/api/v1/nodes/node-d"));
    ck_assert(ctlfix_sync(f, NW_KUBE_NODECLAIMS, CLAIMS "d"));
    initialize(f, repl);
    nw_clock_fake_advance(&f->clk, 11 * SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS "d", NULL, NULL), 0);
    ck_assert(!api_node_tainted(f, "node-d"));
    dfx_free(&x);
}
END_TEST

/* ---- how often full ticks run under a stream of changes ---- */

/* A pod arrives on node-a every `step` after a first full tick; how many
 * lastPodEventTime writes the ticks make over `steps` of them. */
static int pod_event_writes(int view_duty, int64_t step, int steps)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"Never\",\"budgets\":[{\"nodes\":\"0\"}]}", 0);
    ctlfix_t *f = &x.f;
    nw_disruption_ctl_free(x.d);
    nw_disruption_opts_t o = {.poll_ns = 10 * SEC, .view_duty = view_duty};
    x.d = nw_disruption_ctl_new(&f->deps, f->claims, &f->mem, &o, NULL);
    ck_assert_ptr_nonnull(x.d);
    ctlfix_node_pair(f, "a", NULL);
    pod_on(f, "p0", "a", NULL);
    tick(&x); /* the first full tick learns node-a's pods */
    int mark = ctlfix_mark(f);
    for (int i = 1; i <= steps; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        nw_clock_fake_advance(&f->clk, step);
        pod_on(f, name, "a", NULL);
        tick(&x);
    }
    int n = ctlfix_count(f, mark, "PATCH " CLAIMS "a/status", "lastPodEventTime", NULL);
    dfx_free(&x);
    return n;
}

START_TEST(full_ticks_follow_the_view_duty)
{
    /* a second apart: every 11 s step is seen (the writes are deduplicated by 10 s) */
    ck_assert_int_eq(pod_event_writes(0, 11 * SEC, 3), 3);
    /* a duty of 10^9 times the tick's cost: the longest gap, 30 s; of three steps of
     * 11 s, only the third (33 s after the first tick) is seen */
    ck_assert_int_eq(pod_event_writes(1000000000, 11 * SEC, 3), 1);
}
END_TEST

/* ---- at rest: what a tick skips, and what still wakes it ---- */

/* nodewarden_disruption_passes_total */
static int passes(dfx_t *x)
{
    nw_buf_t b;
    nw_buf_init(&b, 1 << 16);
    ck_assert_int_eq(nw_disruption_metrics(x->d, &b), NW_OK);
    const char *l = strstr(nw_buf_str(&b), "\nnodewarden_disruption_passes_total ");
    int n = l ? atoi(l + strlen("\nnodewarden_disruption_passes_total ")) : -1;
    nw_buf_cleanup(&b);
    return n;
}

START_TEST(zero_budgets_skip_the_pass)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"0s\",\"budgets\":[{\"nodes\":\"0\"}]}", 0);
    ctlfix_t *f = &x.f;
    ctlfix_node_pair(f, "a", NULL); /* empty: emptiness would take it */
    int mark = ctlfix_mark(f);
    tick(&x);
    /* every budget allows 0: the pass is not run (no candidates, no blocked notes) */
    ck_assert_int_eq(passes(&x), 0);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 0);
    ck_assert_int_eq(ctlfix_count(f, mark, "POST", "/events", "DisruptionBlocked"), 0);
    nw_clock_fake_advance(&f->clk, 60 * SEC);
    tick(&x);
    ck_assert_int_eq(passes(&x), 0);
    /* the budget opens (a change): the next pass runs and takes the empty node */
    ctlfix_put_nodepool(f, "{\"consolidateAfter\":\"0s\",\"budgets\":[{\"nodes\":\"1\"}]}");
    nw_clock_fake_advance(&f->clk, 11 * SEC);
    tick(&x);
    ck_assert_int_eq(passes(&x), 1);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS "a", NULL, NULL), 1);
    dfx_free(&x);
}
END_TEST

START_TEST(budget_window_opens_without_a_change)
{
    dfx_t x;
    /* no disruption from 12:00 for 10 minutes; the clock starts at 12:00 */
    dfx_init(&x,
             "{\"consolidateAfter\":\"0s\",\"budgets\":[{\"nodes\":\"0\",\"schedule\":\"0 12 * * "
             "*\",\"duration\":\"10m\"}]}",
             0);
    ctlfix_t *f = &x.f;
    ctlfix_node_pair(f, "a", NULL);
    int mark = ctlfix_mark(f);
    for (int i = 0; i < 10; i++) { /* 0 to 9 minutes: the window holds, nothing changes */
        tick(&x);
        nw_clock_fake_advance(&f->clk, 60 * SEC);
    }
    ck_assert_int_eq(passes(&x), 0);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 0);
    /* the window closed with no change in the cluster: a re-check sees it */
    nw_clock_fake_advance(&f->clk, 60 * SEC);
    tick(&x);
    ck_assert_int_eq(passes(&x), 1);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS "a", NULL, NULL), 1);
    dfx_free(&x);
}
END_TEST

START_TEST(budget_freed_by_a_deletion_between_passes)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"0s\",\"budgets\":[{\"nodes\":\"1\"}]}", 0);
    ctlfix_t *f = &x.f;
    ctlfix_node_pair(f, "a", NULL);
    ctlfix_node_pair(f, "b", NULL); /* empty */
    /* a is being deleted: it takes the budget of 1 */
    cJSON *nc = ctlfix_get(f, CLAIMS "a");
    ck_assert_ptr_nonnull(nc);
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(nc, "metadata"), "deletionTimestamp",
                            "2026-11-30T11:59:00Z");
    char *txt = cJSON_PrintUnformatted(nc);
    ctlfix_put(f, NW_KUBE_NODECLAIMS, txt, 1);
    free(txt);
    cJSON_Delete(nc);
    int mark = ctlfix_mark(f);
    tick(&x);
    ck_assert_int_eq(passes(&x), 0); /* every budget allows 0 */
    /* a is gone; the next look comes before the next pass is due */
    ctlfix_del(f, NW_KUBE_NODECLAIMS, "", "a");
    ctlfix_del(f, NW_KUBE_NODES, "", "node-a");
    nw_clock_fake_advance(&f->clk, 2 * SEC);
    tick(&x);
    /* nothing changes until the pass is due: the freed budget lets it take b */
    nw_clock_fake_advance(&f->clk, 9 * SEC);
    tick(&x);
    ck_assert_int_eq(passes(&x), 1);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS "b", NULL, NULL), 1);
    dfx_free(&x);
}
END_TEST

START_TEST(no_pass_while_unchanged)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"Never\",\"budgets\":[{\"nodes\":\"1\"}]}", 0);
    ctlfix_t *f = &x.f;
    ctlfix_node_pair(f, "a", NULL);
    ctlfix_node_pair(f, "b", NULL);
    tick(&x);
    ck_assert_int_eq(passes(&x), 1); /* finds nothing: consolidateAfter Never */
    /* nothing changes for 4.5 minutes: no tick has anything to do */
    for (int i = 0; i < 9; i++) {
        nw_clock_fake_advance(&f->clk, 30 * SEC);
        nw_kube_snap_t *s = nw_kube_cache_snapshot(f->deps.cache);
        ck_assert(!nw_disruption_due(x.d, s));
        nw_kube_cache_snap_release(s);
        tick(&x);
    }
    ck_assert_int_eq(passes(&x), 1);
    /* Karpenter's re-check: 5 minutes after the pass, one more */
    nw_clock_fake_advance(&f->clk, 31 * SEC);
    tick(&x);
    ck_assert_int_eq(passes(&x), 2);
    /* a change after a pass that found nothing: the next pass comes at its period */
    pod_on(f, "p", "a", NULL);
    nw_clock_fake_advance(&f->clk, 11 * SEC);
    tick(&x);
    ck_assert_int_eq(passes(&x), 3);
    dfx_free(&x);
}
END_TEST

START_TEST(consolidate_after_elapses_without_a_change)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"30s\",\"budgets\":[{\"nodes\":\"1\"}]}", 0);
    ctlfix_t *f = &x.f;
    ctlfix_node_pair(f, "a", NULL);
    /* its last pod left now: consolidatable (and empty) 30 s from now */
    cJSON *nc = ctlfix_get(f, CLAIMS "a");
    ck_assert_ptr_nonnull(nc);
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(nc, "status"), "lastPodEventTime",
                            "2026-11-30T12:00:00Z");
    char *txt = cJSON_PrintUnformatted(nc);
    ctlfix_put(f, NW_KUBE_NODECLAIMS, txt, 1);
    free(txt);
    cJSON_Delete(nc);
    int mark = ctlfix_mark(f);
    tick(&x);
    for (int i = 0; i < 2; i++) {
        nw_clock_fake_advance(&f->clk, 10 * SEC);
        tick(&x);
    }
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS, NULL, NULL), 0);
    ck_assert_int_eq(ctlfix_count(f, mark, CLAIMS "a/status", "\"Consolidatable\"", NULL), 0);
    /* 31 s, and nothing in the cluster changed: the marker flips and the node goes */
    nw_clock_fake_advance(&f->clk, 11 * SEC);
    tick(&x);
    ck_assert_int_ge(ctlfix_count(f, mark, CLAIMS "a/status", "\"Consolidatable\"", NULL), 1);
    ck_assert_int_eq(ctlfix_count(f, mark, "DELETE " CLAIMS "a", NULL, NULL), 1);
    dfx_free(&x);
}
END_TEST

START_TEST(pod_change_after_a_look_without_one)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"Never\",\"budgets\":[{\"nodes\":\"0\"}]}", 0);
    ctlfix_t *f = &x.f;
    ctlfix_node_pair(f, "a", NULL);
    ctlfix_node_pair(f, "b", NULL);
    pod_on(f, "p0", "a", NULL);
    tick(&x); /* learns the nodes' pods */
    int mark = ctlfix_mark(f);
    /* a NodeClaim changes, no pod does: a look that takes no fingerprint */
    cJSON *nc = ctlfix_get(f, CLAIMS "b");
    ck_assert_ptr_nonnull(nc);
    cJSON_AddObjectToObject(cJSON_GetObjectItemCaseSensitive(nc, "metadata"), "annotations");
    char *txt = cJSON_PrintUnformatted(nc);
    ctlfix_put(f, NW_KUBE_NODECLAIMS, txt, 1);
    free(txt);
    cJSON_Delete(nc);
    nw_clock_fake_advance(&f->clk, 2 * SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS, "lastPodEventTime", NULL), 0);
    /* then a pod arrives on node-a: its NodeClaim's lastPodEventTime moves */
    pod_on(f, "p1", "a", NULL);
    nw_clock_fake_advance(&f->clk, 2 * SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS "a/status", "lastPodEventTime", NULL),
                     1);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS "b", "lastPodEventTime", NULL), 0);
    dfx_free(&x);
}
END_TEST

/* The fingerprints are kept in NodeClaim order and paired with the state's nodes in one
 * walk: NodeClaims gone and new ones before, between and after the known ones do not
 * shift a node onto another's fingerprint (a pod change is written for its own NodeClaim
 * only, a node seen for the first time is written for no pod). */
START_TEST(pod_fingerprints_follow_their_nodeclaims)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"Never\",\"budgets\":[{\"nodes\":\"0\"}]}", 0);
    ctlfix_t *f = &x.f;
    ctlfix_node_pair(f, "b", NULL);
    ctlfix_node_pair(f, "d", NULL);
    ctlfix_node_pair(f, "f", NULL);
    pod_on(f, "pb", "b", NULL);
    pod_on(f, "pd", "d", NULL);
    pod_on(f, "pf", "f", NULL);
    tick(&x); /* learns the nodes' pods */
    int mark = ctlfix_mark(f);
    /* b goes, a, c and g come (each with a pod), d's pods change, f's do not */
    ctlfix_del(f, NW_KUBE_NODECLAIMS, "", "b");
    ctlfix_del(f, NW_KUBE_NODES, "", "node-b");
    ctlfix_node_pair(f, "a", NULL);
    ctlfix_node_pair(f, "c", NULL);
    ctlfix_node_pair(f, "g", NULL);
    pod_on(f, "pa", "a", NULL);
    pod_on(f, "pc", "c", NULL);
    pod_on(f, "pg", "g", NULL);
    pod_on(f, "pd2", "d", NULL);
    nw_clock_fake_advance(&f->clk, 2 * SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS "d/status", "lastPodEventTime", NULL),
                     1);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS, "lastPodEventTime", NULL), 1);
    /* now every node is known: a change on the new ones and on f is written for each */
    mark = ctlfix_mark(f);
    pod_on(f, "pa2", "a", NULL);
    pod_on(f, "pf2", "f", NULL);
    pod_on(f, "pg2", "g", NULL);
    nw_clock_fake_advance(&f->clk, 2 * SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS "a/status", "lastPodEventTime", NULL),
                     1);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS "f/status", "lastPodEventTime", NULL),
                     1);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS "g/status", "lastPodEventTime", NULL),
                     1);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS, "lastPodEventTime", NULL), 3);
    dfx_free(&x);
}
END_TEST

/* A light look takes each node's match (its Node, pool, labels) from the last light
 * look's state while no NodePool, NodeClaim or Node changed since: a Node that changes
 * alone (it turns NotReady; its NodeClaim stays as it was) is read again, and the pool's
 * budget sees the node as disrupting. */
START_TEST(kept_match_follows_a_node_change)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"Never\",\"budgets\":[{\"nodes\":\"0\"}]}", 0);
    ctlfix_t *f = &x.f;
    f->deps.series = nw_series_new();
    ck_assert_ptr_nonnull(f->deps.series);
    ctlfix_node_pair(f, "a", NULL);
    ctlfix_node_pair(f, "b", NULL);
    const char *v[] = {"default", "Empty"};
    for (int i = 0; i < 3; i++) { /* looks at rest: the later ones on the kept state */
        tick(&x);
        nw_clock_fake_advance(&f->clk, 11 * SEC);
    }
    ck_assert(nw_series_get(f->deps.series, &NW_KMETRICS_NODEPOOLS_NODES_CONSUMING_BUDGETS, v) ==
              0);
    /* a snapshot from before the change keeps the Node's old record alive (a look that
     * took the old match would read it, not freed memory) */
    nw_kube_snap_t *before = nw_kube_cache_snapshot(f->deps.cache);
    cJSON *n = ctlfix_get(f, "/api/v1/nodes/node-b");
    ck_assert_ptr_nonnull(n);
    cJSON *conds = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(n, "status"),
                                                    "conditions");
    cJSON *ready = cJSON_GetArrayItem(conds, 0);
    cJSON_ReplaceItemInObjectCaseSensitive(ready, "status", cJSON_CreateString("False"));
    char *txt = cJSON_PrintUnformatted(n);
    ctlfix_put(f, NW_KUBE_NODES, txt, 1);
    free(txt);
    cJSON_Delete(n);
    for (int i = 0; i < 3; i++) {
        tick(&x);
        nw_clock_fake_advance(&f->clk, 11 * SEC);
    }
    ck_assert(nw_series_get(f->deps.series, &NW_KMETRICS_NODEPOOLS_NODES_CONSUMING_BUDGETS, v) ==
              1);
    nw_kube_cache_snap_release(before);
    nw_series_t *series = f->deps.series;
    dfx_free(&x);
    nw_series_free(series);
}
END_TEST

/* A look's writes stop when a provisioning batch comes to wait (the client's rate would
 * hold the batch behind them); the next look makes them. */
START_TEST(look_writes_step_aside_for_a_batch)
{
    dfx_t x;
    dfx_init(&x, "{\"consolidateAfter\":\"Never\",\"budgets\":[{\"nodes\":\"0\"}]}", 0);
    ctlfix_t *f = &x.f;
    f->deps.batch_waiting = batch_waiting_fn;
    batch_waits = false;
    ctlfix_node_pair(f, "a", NULL);
    pod_on(f, "p0", "a", NULL);
    tick(&x); /* learns the node's pods */
    int mark = ctlfix_mark(f);
    pod_on(f, "p1", "a", NULL);
    batch_waits = true;
    nw_clock_fake_advance(&f->clk, 2 * SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS, "lastPodEventTime", NULL), 0);
    batch_waits = false;
    nw_clock_fake_advance(&f->clk, 2 * SEC);
    tick(&x);
    ck_assert_int_eq(ctlfix_count(f, mark, "PATCH " CLAIMS "a/status", "lastPodEventTime", NULL),
                     1);
    dfx_free(&x);
}
END_TEST

Suite *nw_disruption_ctl_suite(void)
{
    Suite *s = suite_create("disruption_ctl");
    TCase *t = tcase_create("ticks");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, empty_nodes_within_budget);
    tcase_add_test(t, empty_node_waits_for_validation);
    tcase_add_test(t, validation_rejects_a_node_that_got_a_pod);
    tcase_add_test(t, pdb_blocks_drift);
    tcase_add_test(t, drift_replaces_then_deletes);
    tcase_add_test(t, pass_steps_aside_for_a_batch);
    tcase_add_test(t, look_writes_step_aside_for_a_batch);
    tcase_add_test(t, new_term_forgets_command_and_cleans_up);
    tcase_add_test(t, accel_idle_reclaimed_despite_pod_churn);
    tcase_add_test(t, staged_rollout_one_at_a_time);
    tcase_add_test(t, full_ticks_follow_the_view_duty);
    tcase_add_test(t, zero_budgets_skip_the_pass);
    tcase_add_test(t, budget_window_opens_without_a_change);
    tcase_add_test(t, budget_freed_by_a_deletion_between_passes);
    tcase_add_test(t, no_pass_while_unchanged);
    tcase_add_test(t, consolidate_after_elapses_without_a_change);
    tcase_add_test(t, pod_change_after_a_look_without_one);
    tcase_add_test(t, pod_fingerprints_follow_their_nodeclaims);
    tcase_add_test(t, kept_match_follows_a_node_change);
    suite_add_tcase(s, t);
    return s;
}
