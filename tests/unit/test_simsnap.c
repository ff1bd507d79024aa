/* tests/unit/test_simsnap.c — the live snapshot for the scheduling simulation
 * (scaler/state/simsnap.h): nodes, in-flight NodeClaims, nominations, exclusions and
 * rescheduled pods, pending pods on/off, and what nw_solve then decides. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission/gpu.h"
#include "common/json.h"
#include "common/yaml.h"
#include "fakecloud.h"
#include "scaler/sched/snap.h"
#include "scaler/state/simsnap.h"
#include "tests/unit/testutil.h"

Suite *nw_simsnap_suite(void);

typedef struct {
    fake_cloud_t *cloud;
    nw_clock_fake_t clk;
    nw_nominations_t *noms;
    nw_simsnap_env_t env; /* the builder's inputs (env_now sets the time) */
    nw_kube_cache_t *cache;
} fx_t;

/* the builder's inputs at the fake clock's current time */
static const nw_simsnap_env_t *env_now(fx_t *f)
{
    f->env.now_mono = nw_clock_mono(&f->clk.base);
    return &f->env;
}

static void fx_init(fx_t *f)
{
    memset(f, 0, sizeof *f);
    nw_clock_fake_init(&f->clk, 1700000000LL * NW_NS_PER_SEC);
    f->cloud = fake_cloud_new(&f->clk.base);
    f->cache = nw_kube_cache_new(NULL);
    f->noms = nw_nominations_new();
    ck_assert_ptr_nonnull(f->noms);
    f->env.catalog = f->cloud->cat;
    f->env.ice = f->cloud->ice;
    f->env.vm_overhead = 0.075;
    f->env.noms = f->noms;
    ck_assert_ptr_nonnull(f->cache);
}

static void fx_free(fx_t *f)
{
    nw_nominations_free(f->noms);
    nw_kube_cache_free(f->cache);
    fake_cloud_free(f->cloud);
}

static void put(fx_t *f, nw_kube_kind_t k, const char *json)
{
    cJSON *o = cJSON_Parse(json);
    ck_assert_msg(o != NULL, "bad fixture JSON: %s", json);
    ck_assert_int_eq(nw_kube_cache_upsert(f->cache, k, o), NW_OK);
}

/* the status of a reconciled, ready EC2NodeClass (a class's pools are used only then) */
#define READY_STATUS                                                                               \
    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"Ready\","    \
    "\"message\":\"\",\"observedGeneration\":1,\"lastTransitionTime\":\"2026-11-30T11:59:00Z\"}]}"

static const char *POOL =
    "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{\"name\":\"default\","
    "\"uid\":\"p1\"},\"spec\":{\"template\":{\"spec\":{\"nodeClassRef\":{\"group\":"
    "\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\",\"name\":\"default\"},\"requirements\":["
    "{\"key\":\"karpenter.k8s.aws/instance-category\",\"operator\":\"In\",\"values\":[\"m\"]},"
    "{\"key\":\"kubernetes.io/arch\",\"operator\":\"In\",\"values\":[\"amd64\"]},"
    "{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\",\"values\":[\"on-demand\"]}]}}}}";

/* a pod of cpu/mem; node "" = pending (Unschedulable) */
static void pod(fx_t *f, const char *name, const char *cpu, const char *mem, const char *node,
                const char *owner_kind)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"uid-%s\","
             "\"creationTimestamp\":\"2024-01-01T00:00:00Z\"%s%s%s},"
             "\"spec\":{%s%s%s\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
             "{\"cpu\":\"%s\",\"memory\":\"%s\"}}}]},"
             "\"status\":{\"phase\":\"%s\"%s}}",
             name, name, owner_kind ? ",\"ownerReferences\":[{\"kind\":\"" : "",
             owner_kind ? owner_kind : "",
             owner_kind ? "\",\"name\":\"o\",\"controller\":true}]" : "",
             *node ? "\"nodeName\":\"" : "", node, *node ? "\"," : "", cpu, mem,
             *node ? "Running" : "Pending",
             *node ? ""
                   : ",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
                     "\"reason\":\"Unschedulable\"}]");
    put(f, NW_KUBE_PODS, b);
}

/* an initialized node of the pool, m5.xlarge (4 cpu, ~14.8Gi allocatable) */
static void node(fx_t *f, const char *name, const char *extra_taint, int deleting)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"uid\":\"n-%s\"%s,\"labels\":{"
             "\"karpenter.sh/nodepool\":\"default\",\"karpenter.sh/initialized\":\"true\","
             "\"node.kubernetes.io/instance-type\":\"m5.xlarge\",\"kubernetes.io/arch\":\"amd64\","
             "\"topology.kubernetes.io/zone\":\"us-west-2a\",\"karpenter.sh/capacity-type\":"
             "\"on-demand\",\"karpenter.k8s.aws/instance-category\":\"m\"}},"
             "\"spec\":{\"providerID\":\"aws:///us-west-2a/i-%s\"%s},"
             "\"status\":{\"allocatable\":{\"cpu\":\"3920m\",\"memory\":\"14Gi\",\"pods\":\"58\"},"
             "\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"58\"}}}",
             name, name, deleting ? ",\"deletionTimestamp\":\"2024-01-01T00:00:00Z\"" : "", name,
             extra_taint ? extra_taint : "");
    put(f, NW_KUBE_NODES, b);
}

/* an in-flight NodeClaim (launched, no node yet) of type m5.large */
static void claim(fx_t *f, const char *name)
{
    char b[2048];
    snprintf(
        b, sizeof b,
        "{\"metadata\":{\"name\":\"%s\",\"uid\":\"c-%s\",\"labels\":{"
        "\"karpenter.sh/nodepool\":\"default\",\"node.kubernetes.io/instance-type\":"
        "\"m5.large\",\"topology.kubernetes.io/zone\":\"us-west-2a\"}},"
        "\"spec\":{\"requirements\":[{\"key\":\"node.kubernetes.io/instance-type\","
        "\"operator\":\"In\",\"values\":[\"m5.large\"]},{\"key\":\"karpenter.sh/capacity-type\","
        "\"operator\":\"In\",\"values\":[\"on-demand\"]}]},"
        "\"status\":{\"providerID\":\"aws:///us-west-2a/i-%s\"}}",
        name, name, name);
    put(f, NW_KUBE_NODECLAIMS, b);
}

typedef struct {
    nw_simsnap_t ss;
    nw_sched_results_t r;
    nw_kube_snap_t *ks;
} run_t;

static void run(fx_t *f, const nw_simsnap_opts_t *o, run_t *out)
{
    nw_err_t err = {0};
    out->ks = nw_kube_cache_snapshot(f->cache);
    ck_assert_int_eq(nw_simsnap_build(env_now(f), out->ks, o, &out->ss, &err), NW_OK);
    ck_assert_int_eq(nw_solve(out->ss.sched, 0, &out->r, &err), NW_OK);
}

static void run_free(run_t *r)
{
    nw_solve_results_free(&r->r);
    nw_simsnap_free(&r->ss);
    nw_kube_cache_snap_release(r->ks);
}

static int snap_pod(const run_t *r, const char *name)
{
    for (size_t i = 0; i < r->ss.npods; i++)
        if (strcmp(r->ss.pods[i]->name, name) == 0)
            return (int)i;
    return -1;
}

static const char *placed_on(const run_t *r, const char *name)
{
    int pi = snap_pod(r, name);
    for (int i = 0; i < r->r.nplaced; i++)
        if (r->r.placed[i].pod == pi)
            return r->r.placed[i].node;
    return NULL;
}

static int in_new_claim(const run_t *r, const char *name)
{
    int pi = snap_pod(r, name);
    for (int i = 0; i < r->r.nclaims; i++)
        for (int k = 0; k < r->r.claims[i].npods; k++)
            if (r->r.claims[i].pods[k] == pi)
                return 1;
    return 0;
}

/* a pod of 100m with one claim; node "" = pending */
static void vol_pod(fx_t *f, const char *name, const char *claim, const char *node)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"uid-%s\"},"
             "\"spec\":{%s%s%s\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
             "{\"cpu\":\"100m\",\"memory\":\"64Mi\"}}}],\"volumes\":[{\"name\":\"d\","
             "\"persistentVolumeClaim\":{\"claimName\":\"%s\"}}]},"
             "\"status\":{\"phase\":\"%s\"%s}}",
             name, name, *node ? "\"nodeName\":\"" : "", node, *node ? "\"," : "", claim,
             *node ? "Running" : "Pending",
             *node ? ""
                   : ",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
                     "\"reason\":\"Unschedulable\"}]");
    put(f, NW_KUBE_PODS, b);
}

static void ebs_claim(fx_t *f, const char *name)
{
    char b[512];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},\"spec\":{"
             "\"storageClassName\":\"ebs\",\"accessModes\":[\"ReadWriteOnce\"]}}",
             name);
    put(f, NW_KUBE_PVCS, b);
}

static void csinode(fx_t *f, const char *node, int count)
{
    char b[512];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"drivers\":[{\"name\":"
             "\"ebs.csi.aws.com\",\"nodeID\":\"i-%s\",\"allocatable\":{\"count\":%d}}]}}",
             node, node, count);
    put(f, NW_KUBE_CSINODES, b);
}

/* The accelerator isolation policy in the scheduling input (issue 33): a generic pool
 * the webhook never mutated must not plan a type of an uncounted family (here a g6f that
 * EC2 described without any GPU, so no device label keeps a pool off it). Without the
 * policy the 3-CPU pod goes to that g6f (the m6i.large is too small); with it, the pool
 * enters the simulation with instance-family NotIn [g6f, gr6f, p5, vt1] and the pod
 * finds no type. */
START_TEST(test_pools_isolated_by_policy)
{
    static const char *cat_json =
        "{\"types\":[{\"name\":\"m6i.large\",\"vcpu\":2,\"memMiB\":8192,\"arch\":"
        "\"amd64\",\"cpu\":\"intel\",\"enis\":3,\"ipv4\":10,\"price\":0.096,"
        "\"hypervisor\":\"nitro\"},{\"name\":\"g6f.xlarge\",\"vcpu\":4,\"memMiB\":16384,"
        "\"arch\":\"amd64\",\"cpu\":\"amd\",\"enis\":4,\"ipv4\":15,\"price\":0.3,"
        "\"hypervisor\":\"nitro\"}]}";
    nw_gpu_policy_t gpu;
    ck_assert_int_eq(nw_gpu_policy_init(&gpu, ""), NW_OK);
    for (int with = 0; with < 2; with++) {
        fx_t f;
        fx_init(&f);
        nw_catalog_t *cat = NULL;
        nw_err_t err = {0};
        ck_assert_int_eq(
            nw_catalog_new_from_json(cat_json, strlen(cat_json), "us-west-2", &cat, &err), NW_OK);
        nw_catalog_zone_t z[1] = {{"us-west-2a", "usw2-az1"}};
        ck_assert_int_eq(nw_catalog_set_zones(cat, z, 1, &err), NW_OK);
        f.env.catalog = cat;
        f.env.gpu = with ? &gpu : NULL;
        put(&f, NW_KUBE_NODEPOOLS,
            "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{"
            "\"name\":\"default\",\"uid\":\"p1\"},\"spec\":{\"template\":{\"spec\":{"
            "\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\","
            "\"name\":\"default\"},\"requirements\":[{\"key\":\"karpenter.sh/capacity-type\","
            "\"operator\":\"In\",\"values\":[\"on-demand\"]}]}}}}");
        pod(&f, "big", "3", "1Gi", "", NULL);
        nw_simsnap_opts_t o = {.include_pending = true};
        run_t r;
        run(&f, &o, &r);
        ck_assert_int_eq(in_new_claim(&r, "big"), with ? 0 : 1);
        if (!with) {
            const nw_sched_itype_t *t = nw_snapshot_itype(r.ss.sched, (size_t)r.r.claims[0].itype);
            ck_assert_str_eq(t->name, "g6f.xlarge");
        }
        run_free(&r);
        fx_free(&f);
        nw_catalog_free(cat);
    }
    nw_gpu_policy_cleanup(&gpu);
}
END_TEST

/* DRA (issue 33): a pending pod whose claim template asks for 2 NVIDIA devices enters the
 * simulation as an NVIDIA pod (the class's label required, 2 nvidia.com/gpu): with a generic
 * pool and an NVIDIA pool it gets a new NodeClaim of the NVIDIA pool on a type with at least
 * 2 GPUs, never the generic pool; the same pod without the toleration gets none; a pod whose
 * claim asks for a NIC is a generic pod. */
static void dra_pod(fx_t *f, const char *name, const char *tmpl, bool tolerates)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"uid-%s\"},"
             "\"spec\":{%s\"resourceClaims\":[{\"name\":\"d\",\"resourceClaimTemplateName\":"
             "\"%s\"}],\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":"
             "\"1\",\"memory\":\"1Gi\"},\"claims\":[{\"name\":\"d\"}]}}]},"
             "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
             "\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}",
             name, name,
             tolerates ? "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]," : "", tmpl);
    put(f, NW_KUBE_PODS, b);
}

START_TEST(test_dra_pods)
{
    nw_gpu_policy_t gpu;
    ck_assert_int_eq(nw_gpu_policy_init(&gpu, ""), NW_OK);
    fx_t f;
    fx_init(&f);
    f.env.gpu = &gpu;
    put(&f, NW_KUBE_NODEPOOLS,
        "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{"
        "\"name\":\"default\",\"uid\":\"p1\"},\"spec\":{\"template\":{\"spec\":{"
        "\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\","
        "\"name\":\"default\"},\"requirements\":[{\"key\":\"karpenter.sh/capacity-type\","
        "\"operator\":\"In\",\"values\":[\"on-demand\"]}]}}}}");
    put(&f, NW_KUBE_NODEPOOLS,
        "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{"
        "\"name\":\"gpu\",\"uid\":\"p2\"},\"spec\":{\"template\":{\"metadata\":{\"labels\":{"
        "\"node.accelerator\":\"nvidia-gpu\"}},\"spec\":{"
        "\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\","
        "\"name\":\"default\"},\"taints\":[{\"key\":\"gpu\",\"value\":\"true\",\"effect\":"
        "\"NoSchedule\"}],\"requirements\":[{\"key\":\"karpenter.sh/capacity-type\","
        "\"operator\":\"In\",\"values\":[\"on-demand\"]},{\"key\":"
        "\"karpenter.k8s.aws/instance-family\",\"operator\":\"In\",\"values\":[\"g5\"]}]}}}}");
    put(&f, NW_KUBE_RESOURCECLAIMTEMPLATES,
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":"
        "{\"name\":\"two-gpus\",\"namespace\":\"default\"},\"spec\":{\"spec\":{\"devices\":{"
        "\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\","
        "\"count\":2}}]}}}}");
    put(&f, NW_KUBE_RESOURCECLAIMTEMPLATES,
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":"
        "{\"name\":\"nic\",\"namespace\":\"default\"},\"spec\":{\"spec\":{\"devices\":{"
        "\"requests\":[{\"name\":\"n\",\"exactly\":{\"deviceClassName\":\"rdma\"}}]}}}}");
    dra_pod(&f, "train", "two-gpus", true);
    dra_pod(&f, "blind", "two-gpus", false);
    dra_pod(&f, "net", "nic", false);

    /* the view itself */
    const char *vres = NULL;
    int vcount = 0;
    nw_kube_snap_t *ks = nw_kube_cache_snapshot(f.cache);
    const nw_kube_obj_t *o = nw_kube_cache_snap_get(ks, NW_KUBE_PODS, "default", "train");
    cJSON *v = nw_simsnap_dra_view(&gpu, ks, o, &vres, &vcount);
    ck_assert_ptr_nonnull(v);
    const cJSON *sel = nw_json_get(nw_json_get(v, "spec"), "nodeSelector");
    ck_assert_str_eq(nw_json_str(sel, "node.accelerator"), "nvidia-gpu");
    const cJSON *req = nw_json_get(
        nw_json_get(cJSON_GetArrayItem(nw_json_get(nw_json_get(v, "spec"), "containers"), 0),
                    "resources"),
        "requests");
    ck_assert_str_eq(nw_json_str(req, "nvidia.com/gpu"), "2");
    ck_assert_str_eq(nw_json_str(req, "cpu"), "1");
    ck_assert_str_eq(vres, "nvidia.com/gpu");
    ck_assert_int_eq(vcount, 2);
    cJSON_Delete(v);
    o = nw_kube_cache_snap_get(ks, NW_KUBE_PODS, "default", "net");
    ck_assert_ptr_null(nw_simsnap_dra_view(&gpu, ks, o, &vres, &vcount));
    ck_assert_ptr_null(nw_simsnap_dra_view(NULL, ks, o, NULL, NULL));
    nw_kube_cache_snap_release(ks);

    /* what the simulation does with them */
    nw_simsnap_opts_t opts = {.include_pending = true};
    run_t r;
    run(&f, &opts, &r);
    int pi = snap_pod(&r, "train");
    ck_assert_int_ge(pi, 0);
    bool found = false;
    for (int i = 0; i < r.r.nclaims; i++)
        for (int k = 0; k < r.r.claims[i].npods; k++) {
            if (r.r.claims[i].pods[k] != pi)
                continue;
            found = true;
            const nw_sched_itype_t *t = nw_snapshot_itype(r.ss.sched, (size_t)r.r.claims[i].itype);
            ck_assert_msg(strncmp(t->name, "g5.", 3) == 0, "train planned on %s", t->name);
            ck_assert_str_eq(r.ss.sched->pools[r.r.claims[i].pool].name, "gpu");
            /* the NodeClaim does not ask its node to register the DRA devices as
             * nvidia.com/gpu (the driver publishes them as a ResourceSlice) */
            int nt = 0;
            const char *first = NULL;
            nw_err_t err = {0};
            nw_simsnap_claim_opts_t co;
            memset(&co, 0, sizeof co);
            cJSON *body = nw_simsnap_claim_body(
                &r.ss, &r.r.claims[i], nw_kube_cache_snap_get(r.ks, NW_KUBE_NODEPOOLS, "", "gpu"),
                &co, &nt, &first, &err);
            ck_assert_msg(body != NULL, "%s", err.msg);
            const cJSON *creq =
                nw_json_get(nw_json_get(nw_json_get(body, "spec"), "resources"), "requests");
            ck_assert_ptr_nonnull(nw_json_get(creq, "cpu"));
            ck_assert_ptr_null(nw_json_get(creq, "nvidia.com/gpu"));
            cJSON_Delete(body);
        }
    ck_assert_msg(found, "the DRA pod got no NodeClaim");
    ck_assert_int_eq(in_new_claim(&r, "blind"), 0); /* no toleration: nothing planned */
    ck_assert_int_eq(in_new_claim(&r, "net"), 1);   /* a generic pod: the generic pool */
    run_free(&r);
    fx_free(&f);
    nw_gpu_policy_cleanup(&gpu);
}
END_TEST

/* DRA (issue 33): an NVIDIA node whose devices come through DRA registers no
 * nvidia.com/gpu; with a DeviceClass of the NVIDIA class in the cluster the simulation gives
 * it its instance type's GPUs (a g5.12xlarge: 4), so a pending pod whose claim asks for 2
 * goes there, not to a new NodeClaim; without any such DeviceClass the node has none. */
START_TEST(test_dra_node_devices)
{
    nw_gpu_policy_t gpu;
    ck_assert_int_eq(nw_gpu_policy_init(&gpu, ""), NW_OK);
    for (int with_class = 0; with_class < 2; with_class++) {
        fx_t f;
        fx_init(&f);
        f.env.gpu = &gpu;
        put(&f, NW_KUBE_NODEPOOLS,
            "{\"apiVersion\":\"karpenter.sh/v1\",\"kind\":\"NodePool\",\"metadata\":{"
            "\"name\":\"gpu\",\"uid\":\"p2\"},\"spec\":{\"template\":{\"metadata\":{\"labels\":{"
            "\"node.accelerator\":\"nvidia-gpu\"}},\"spec\":{"
            "\"nodeClassRef\":{\"group\":\"karpenter.k8s.aws\",\"kind\":\"EC2NodeClass\","
            "\"name\":\"default\"},\"taints\":[{\"key\":\"gpu\",\"value\":\"true\",\"effect\":"
            "\"NoSchedule\"}],\"requirements\":[{\"key\":\"karpenter.sh/capacity-type\","
            "\"operator\":\"In\",\"values\":[\"on-demand\"]},{\"key\":"
            "\"karpenter.k8s.aws/instance-family\",\"operator\":\"In\",\"values\":[\"g5\"]}]}}}}");
        put(&f, NW_KUBE_NODES,
            "{\"metadata\":{\"name\":\"g\",\"uid\":\"n-g\",\"labels\":{"
            "\"karpenter.sh/nodepool\":\"gpu\",\"karpenter.sh/initialized\":\"true\","
            "\"node.accelerator\":\"nvidia-gpu\",\"node.kubernetes.io/instance-type\":"
            "\"g5.12xlarge\",\"kubernetes.io/arch\":\"amd64\",\"topology.kubernetes.io/zone\":"
            "\"us-west-2a\",\"karpenter.sh/capacity-type\":\"on-demand\"}},"
            "\"spec\":{\"providerID\":\"aws:///us-west-2a/i-g\",\"taints\":[{\"key\":\"gpu\","
            "\"value\":\"true\",\"effect\":\"NoSchedule\"}]},"
            "\"status\":{\"allocatable\":{\"cpu\":\"47\",\"memory\":\"180Gi\",\"pods\":\"200\"},"
            "\"capacity\":{\"cpu\":\"48\",\"memory\":\"192Gi\",\"pods\":\"200\"}}}");
        if (with_class)
            put(&f, NW_KUBE_DEVICECLASSES,
                "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":"
                "{\"name\":\"gpu.nvidia.com\"},\"spec\":{}}");
        put(&f, NW_KUBE_RESOURCECLAIMTEMPLATES,
            "{\"apiVersion\":\"resource.k8s.io/"
            "v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":"
            "{\"name\":\"two-gpus\",\"namespace\":\"default\"},\"spec\":{\"spec\":{\"devices\":{"
            "\"requests\":[{\"name\":\"g\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\","
            "\"count\":2}}]}}}}");
        dra_pod(&f, "train", "two-gpus", true);
        nw_simsnap_opts_t opts = {.include_pending = true};
        run_t r;
        run(&f, &opts, &r);
        if (with_class) {
            ck_assert_int_eq(in_new_claim(&r, "train"), 0);
            ck_assert_str_eq(placed_on(&r, "train") ? placed_on(&r, "train") : "(none)", "g");
        } else {
            ck_assert_ptr_null(placed_on(&r, "train"));
            ck_assert_int_eq(in_new_claim(&r, "train"), 1);
        }
        run_free(&r);
        fx_free(&f);
    }
    nw_gpu_policy_cleanup(&gpu);
}
END_TEST

/* attach limits from the watched CSINodes (Karpenter volumeusage.go): a pending pod whose
 * claim would take an existing node past its driver's count goes to a new NodeClaim */
START_TEST(test_csinode_attach_limit)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    put(&f, NW_KUBE_STORAGECLASSES,
        "{\"metadata\":{\"name\":\"ebs\"},\"provisioner\":\"ebs.csi.aws.com\","
        "\"volumeBindingMode\":\"WaitForFirstConsumer\"}");
    node(&f, "n1", NULL, 0);
    ebs_claim(&f, "one");
    ebs_claim(&f, "two");
    vol_pod(&f, "bound", "one", "n1");
    vol_pod(&f, "p2", "two", "");
    csinode(&f, "n1", 1);
    nw_simsnap_opts_t o = {.include_pending = true};
    run_t r;
    run(&f, &o, &r);
    ck_assert_ptr_null(placed_on(&r, "p2"));
    ck_assert(in_new_claim(&r, "p2"));
    run_free(&r);
    /* room for two volumes: it joins n1 */
    csinode(&f, "n1", 2);
    run(&f, &o, &r);
    ck_assert_str_eq(placed_on(&r, "p2"), "n1");
    ck_assert_int_eq(r.r.nclaims, 0);
    run_free(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_existing_then_inflight_then_new)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    node(&f, "n1", NULL, 0);
    pod(&f, "bound", "3", "1Gi", "n1", NULL);
    claim(&f, "default-abc");
    pod(&f, "p-small", "500m", "512Mi", "", NULL);  /* fits on n1 (920m left) */
    pod(&f, "p-mid", "1200m", "1Gi", "", NULL);     /* n1 too small now: the claim (m5.large) */
    pod(&f, "p-big", "3", "4Gi", "", NULL);         /* neither: a new claim */
    pod(&f, "ds", "100m", "10Mi", "", "DaemonSet"); /* never provisioned */
    nw_simsnap_opts_t o = {.include_pending = true};
    run_t r;
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.considered, 3);
    ck_assert_str_eq(placed_on(&r, "p-small"), "n1");
    ck_assert_str_eq(placed_on(&r, "p-mid"), "default-abc");
    ck_assert_str_eq(nw_simsnap_claim_of(&r.ss, "default-abc"), "default-abc");
    ck_assert_ptr_null(nw_simsnap_claim_of(&r.ss, "n1"));
    ck_assert_int_eq(r.r.nclaims, 1);
    ck_assert(in_new_claim(&r, "p-big"));
    run_free(&r);

    /* without pending pods nothing is considered */
    o.include_pending = false;
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.considered, 0);
    ck_assert_int_lt(snap_pod(&r, "p-big"), 0);
    ck_assert_int_ge(snap_pod(&r, "bound"), 0);
    run_free(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_nomination_reserves_inflight_room)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    claim(&f, "default-abc"); /* m5.large: 2 cpu */
    pod(&f, "p1", "1200m", "1Gi", "", NULL);
    pod(&f, "p2", "1200m", "1Gi", "", NULL);
    /* p1 was nominated to the claim by an earlier batch: it counts as bound there,
     * so p2 (which would otherwise take the claim's room) needs new capacity */
    nw_nominations_nominate(f.noms, "uid-p1", "default-abc", nw_clock_mono(&f.clk.base));
    nw_simsnap_opts_t o = {.include_pending = true};
    run_t r;
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.considered, 1);
    ck_assert_ptr_null(placed_on(&r, "p1"));
    ck_assert(!in_new_claim(&r, "p1"));
    ck_assert(in_new_claim(&r, "p2"));
    ck_assert(nw_simsnap_is_nominated(f.noms, r.ks, "default-abc", nw_clock_mono(&f.clk.base),
                                      20 * NW_NS_PER_SEC));
    ck_assert(!nw_simsnap_is_nominated(f.noms, r.ks, "other", nw_clock_mono(&f.clk.base),
                                       20 * NW_NS_PER_SEC));
    run_free(&r);
    /* the claim is gone (ICE): the nomination no longer binds p1 */
    cJSON *gone = cJSON_Parse("{\"metadata\":{\"name\":\"default-abc\"}}");
    nw_kube_cache_remove(f.cache, NW_KUBE_NODECLAIMS, gone);
    cJSON_Delete(gone);
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.considered, 2);
    ck_assert(in_new_claim(&r, "p1") && in_new_claim(&r, "p2"));
    run_free(&r);
    fx_free(&f);
}
END_TEST

/* The NodeClaim of node `name` (node(), providerID i-<name>), initialized: no longer in
 * flight. */
static void claim_of_node(fx_t *f, const char *claim, const char *name)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"uid\":\"c-%s\",\"labels\":{"
             "\"karpenter.sh/nodepool\":\"default\",\"node.kubernetes.io/instance-type\":"
             "\"m5.xlarge\"}},\"spec\":{\"requirements\":[]},\"status\":{\"providerID\":"
             "\"aws:///us-west-2a/i-%s\",\"nodeName\":\"%s\",\"conditions\":[{\"type\":"
             "\"Initialized\",\"status\":\"True\",\"reason\":\"Initialized\","
             "\"lastTransitionTime\":\"2026-11-30T12:00:00Z\"}]}}",
             claim, claim, name, name);
    put(f, NW_KUBE_NODECLAIMS, b);
}

/* Two NodeClaims of an earlier batch came up as na (3500m free) and nb (2500m free) with
 * their pods still pending: na was planned 1.5 + 1 + 1 CPU, nb 1.5 + 1. Placed afresh, the
 * largest first onto the first node with room, they would not fit (1.5 and 1.5 on na, two
 * 1s on nb, the third 1 nowhere: a new NodeClaim); a later look puts each back on its
 * planned Node first. A Node that no longer takes a pod (a NoSchedule taint) gets none. */
START_TEST(test_planned_pods_kept_on_their_nodes)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    node(&f, "na", NULL, 0);
    node(&f, "nb", NULL, 0);
    claim_of_node(&f, "c-na", "na");
    claim_of_node(&f, "c-nb", "nb");
    pod(&f, "fill-a", "420m", "64Mi", "na", NULL);
    pod(&f, "fill-b", "1420m", "64Mi", "nb", NULL);
    const char *plan[][2] = {{"big-1", "c-na"},
                             {"small-1", "c-na"},
                             {"small-2", "c-na"},
                             {"big-2", "c-nb"},
                             {"small-3", "c-nb"}};
    for (size_t i = 0; i < 5; i++) {
        char uid[64];
        pod(&f, plan[i][0], plan[i][0][0] == 'b' ? "1500m" : "1", "100Mi", "", NULL);
        snprintf(uid, sizeof uid, "uid-%s", plan[i][0]);
        nw_nominations_nominate(f.noms, uid, plan[i][1], nw_clock_mono(&f.clk.base));
    }
    nw_simsnap_opts_t o = {.include_pending = true};
    run_t r;
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.considered, 5);
    ck_assert_int_eq(r.r.nclaims, 0);
    ck_assert_int_eq(r.r.nunsched, 0);
    for (size_t i = 0; i < 5; i++) {
        const char *on = placed_on(&r, plan[i][0]);
        ck_assert_msg(on != NULL, "%s not placed", plan[i][0]);
        ck_assert_str_eq(on, plan[i][1] + 2);
    }
    run_free(&r);
    /* nb now refuses pods: its two go where there is room, or to new capacity */
    node(&f, "nb", ",\"taints\":[{\"key\":\"x\",\"effect\":\"NoSchedule\"}]", 0);
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.nunsched, 0);
    for (size_t i = 0; i < 5; i++) {
        const char *on = placed_on(&r, plan[i][0]);
        ck_assert(on == NULL || strcmp(on, "nb") != 0);
        if (i < 3)
            ck_assert_str_eq(on, "na");
    }
    ck_assert(in_new_claim(&r, "big-2") && in_new_claim(&r, "small-3"));
    run_free(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_exclude_and_reschedule)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    node(&f, "n1", NULL, 0);
    node(&f, "n2", NULL, 0);
    pod(&f, "a", "1", "1Gi", "n1", NULL);
    pod(&f, "b", "1", "1Gi", "n1", NULL);
    pod(&f, "dsp", "100m", "64Mi", "n1", "DaemonSet");
    pod(&f, "c", "1", "1Gi", "n2", NULL);
    pod(&f, "pend", "1", "1Gi", "", NULL);
    const char *ex[] = {"n1"};
    nw_simsnap_opts_t o = {.exclude = ex, .nexclude = 1, .reschedule_excluded = true};
    run_t r;
    run(&f, &o, &r);
    /* a and b come back as pending (rescheduled), the DaemonSet pod does not; n1 is
     * not capacity: both fit on n2 (2.9 cpu left) */
    ck_assert_int_eq(r.r.considered, 2);
    ck_assert(r.ss.rescheduled[snap_pod(&r, "a")] && r.ss.rescheduled[snap_pod(&r, "b")]);
    ck_assert(!r.ss.rescheduled[snap_pod(&r, "c")]);
    ck_assert_int_lt(snap_pod(&r, "dsp"), 0);
    ck_assert_int_lt(snap_pod(&r, "pend"), 0);
    ck_assert_str_eq(placed_on(&r, "a"), "n2");
    ck_assert_str_eq(placed_on(&r, "b"), "n2");
    ck_assert_int_eq(r.r.nclaims, 0);
    run_free(&r);
    /* excluded without rescheduling: the pods vanish; with pending: pend counts */
    o.reschedule_excluded = false;
    o.include_pending = true;
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.considered, 1);
    ck_assert_int_lt(snap_pod(&r, "a"), 0);
    ck_assert_str_eq(placed_on(&r, "pend"), "n2");
    run_free(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_deleting_and_disrupted_nodes)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    node(&f, "gone", NULL, 1);
    node(&f, "tainted",
         ",\"taints\":[{\"key\":\"karpenter.sh/disrupted\",\"effect\":\"NoSchedule\"}]", 0);
    pod(&f, "x", "3", "1Gi", "gone", NULL);
    pod(&f, "y", "3", "1Gi", "tainted", NULL);
    char dnd[1024];
    snprintf(dnd, sizeof dnd,
             "{\"metadata\":{\"name\":\"z\",\"namespace\":\"default\",\"uid\":\"uid-z\","
             "\"annotations\":{\"karpenter.sh/do-not-disrupt\":\"true\"}},\"spec\":{\"nodeName\":"
             "\"tainted\",\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":"
             "\"1\"}}}]},"
             "\"status\":{\"phase\":\"Running\"}}");
    put(&f, NW_KUBE_PODS, dnd);
    nw_simsnap_opts_t o = {.include_pending = true, .reschedule_deleting = true};
    run_t r;
    run(&f, &o, &r);
    /* x and y need new capacity (neither node offers room); z is not moved */
    ck_assert_int_eq(r.r.considered, 2);
    ck_assert(in_new_claim(&r, "x") && in_new_claim(&r, "y"));
    ck_assert_int_lt(snap_pod(&r, "z"), 0);
    run_free(&r);
    o.reschedule_deleting = false;
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.considered, 0);
    run_free(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_ice_and_type_resources)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    pod(&f, "p", "1", "1Gi", "", NULL);
    nw_simsnap_opts_t o = {.include_pending = true};
    run_t r;
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.nclaims, 1);
    char first[64];
    snprintf(first, sizeof first, "%s",
             nw_snapshot_itype(r.ss.sched, (size_t)r.r.claims[0].itype)->name);
    char zone[64];
    snprintf(zone, sizeof zone, "%s", r.r.claims[0].zone);
    run_free(&r);
    /* the cheapest offering is ICE'd in every zone: another type wins */
    const char *zs[] = {"us-west-2a", "us-west-2b", "us-west-2c"};
    for (int i = 0; i < 3; i++)
        nw_ice_mark(f.cloud->ice, "on-demand", first, zs[i], nw_clock_mono(&f.clk.base));
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.nclaims, 1);
    ck_assert_str_ne(nw_snapshot_itype(r.ss.sched, (size_t)r.r.claims[0].itype)->name, first);
    run_free(&r);
    cJSON *al = nw_simsnap_type_resources(env_now(&f), NULL, "m5.large", 1);
    ck_assert_ptr_nonnull(al);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(al, "cpu")), "1930m");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(al, "pods")), "29");
    cJSON_Delete(al);
    ck_assert_ptr_null(nw_simsnap_type_resources(env_now(&f), NULL, "no.such", 1));
    /* the EC2NodeClass's kubelet settings */
    cJSON *ncl = cJSON_Parse("{\"metadata\":{\"name\":\"default\"},\"spec\":{\"kubelet\":{"
                             "\"maxPods\":20,\"systemReserved\":{\"cpu\":\"430m\"}}}}");
    al = nw_simsnap_type_resources(env_now(&f), ncl, "m5.large", 1);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(al, "cpu")), "1500m");
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(al, "pods")), "20");
    cJSON_Delete(al);
    cJSON_Delete(ncl);
    fx_free(&f);
}
END_TEST

/* an EC2NodeClass with kubelet.maxPods makes the simulation pack by pods per node; the
 * pod-density setting stands in where maxPods is unset */
START_TEST(test_nodeclass_kubelet)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    for (int i = 0; i < 50; i++) {
        char n[32];
        snprintf(n, sizeof n, "p%02d", i);
        pod(&f, n, "10m", "16Mi", "", NULL);
    }
    nw_simsnap_opts_t o = {.include_pending = 1};
    run_t r;
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.nclaims, 1); /* ENI-limited types hold 50 pods */
    run_free(&r);
    f.env.default_max_pods = 110;
    put(&f, NW_KUBE_EC2NODECLASSES,
        "{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{"
        "\"name\":\"default\",\"uid\":\"k1\"},\"spec\":{\"kubelet\":{\"maxPods\":20}}," READY_STATUS
        "}");
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.nclaims, 3);
    for (int i = 0; i < r.r.nclaims; i++)
        ck_assert_int_le(r.r.claims[i].npods, 20);
    run_free(&r);
    fx_free(&f);
}
END_TEST

/* the class's compatibility filters (scaler/cloud/compat.h): an efa-only interface leaves
 * the types without EFA out of its pools' plans */
START_TEST(test_nodeclass_compat)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    pod(&f, "p", "1", "1Gi", "", NULL);
    nw_simsnap_opts_t o = {.include_pending = 1};
    run_t r;
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.nclaims, 1);
    char cheap[64];
    snprintf(cheap, sizeof cheap, "%s",
             nw_snapshot_itype(r.ss.sched, (size_t)r.r.claims[0].itype)->name);
    ck_assert_int_eq(nw_catalog_find(f.env.catalog, cheap)->efa, 0);
    run_free(&r);
    put(&f, NW_KUBE_EC2NODECLASSES,
        "{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{"
        "\"name\":\"default\",\"uid\":\"k1\"},\"spec\":{\"networkInterfaces\":["
        "{\"networkCardIndex\":0,\"deviceIndex\":0,\"interfaceType\":\"efa-only\"}]}," READY_STATUS
        "}");
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.nclaims, 0); /* no m type of the catalog has EFA */
    run_free(&r);
    put(&f, NW_KUBE_EC2NODECLASSES,
        "{\"apiVersion\":\"karpenter.k8s.aws/v1\",\"kind\":\"EC2NodeClass\",\"metadata\":{"
        "\"name\":\"default\",\"uid\":\"k1\"},\"spec\":{\"networkInterfaces\":["
        "{\"networkCardIndex\":0,\"deviceIndex\":0,\"interfaceType\":\"interface\"}]}," READY_STATUS
        "}");
    run(&f, &o, &r);
    ck_assert_int_eq(r.r.nclaims, 1);
    ck_assert_str_eq(nw_snapshot_itype(r.ss.sched, (size_t)r.r.claims[0].itype)->name, cheap);
    run_free(&r);
    fx_free(&f);
}
END_TEST

START_TEST(test_event_once)
{
    fx_t f;
    fx_init(&f);
    ck_assert_int_eq(nw_nominations_event_once(f.noms, "u1", "m1"), 1);
    ck_assert_int_eq(nw_nominations_event_once(f.noms, "u1", "m1"), 0);
    ck_assert_int_eq(nw_nominations_event_once(f.noms, "u2", "m1"), 1);
    ck_assert_int_eq(nw_nominations_event_once(f.noms, "u1", "m2"), 1);
    nw_nominations_event_prune(f.noms);
    /* u1 and u2 were reported since the last prune: kept */
    ck_assert_int_eq(nw_nominations_event_once(f.noms, "u1", "m2"), 0);
    nw_nominations_event_prune(f.noms);
    /* u2 was not reported: forgotten */
    ck_assert_int_eq(nw_nominations_event_once(f.noms, "u2", "m1"), 1);
    fx_free(&f);
}
END_TEST

/* A batch's nominations are appended and sorted in by the next lookup; a pod nominated
 * twice keeps the last; targets are answered per claim, in flight or within the window. */
START_TEST(test_nominations_batch)
{
    nw_nominations_t *n = nw_nominations_new();
    ck_assert_ptr_nonnull(n);
    char uid[32], claim[32];
    const int64_t S = NW_NS_PER_SEC;
    for (int i = 999; i >= 0; i--) { /* in reverse, as nothing promises an order */
        snprintf(uid, sizeof uid, "u%04d", i);
        snprintf(claim, sizeof claim, "c%d", i % 10);
        nw_nominations_nominate(n, uid, claim, 100 * S);
    }
    nw_nominations_nominate(n, "u0005", "c9", 101 * S); /* again before any lookup */
    ck_assert_str_eq(nw_nominations_claim_of(n, "u0005"), "c9");
    ck_assert_str_eq(nw_nominations_claim_of(n, "u0999"), "c9");
    ck_assert_str_eq(nw_nominations_claim_of(n, "u0000"), "c0");
    ck_assert_ptr_null(nw_nominations_claim_of(n, "u1000"));
    /* once sorted, a nomination in place; then a new one appended */
    nw_nominations_nominate(n, "u0001", "c7", 102 * S);
    nw_nominations_nominate(n, "x", "c11", 102 * S);
    ck_assert_str_eq(nw_nominations_claim_of(n, "u0001"), "c7");
    ck_assert_str_eq(nw_nominations_claim_of(n, "x"), "c11");
    /* targets: any nomination when in flight; else the newest within the window */
    ck_assert(nw_nominations_targets(n, "c0", true, 500 * S, 10 * S));
    ck_assert(!nw_nominations_targets(n, "c0", false, 500 * S, 10 * S));
    ck_assert(nw_nominations_targets(n, "c0", false, 105 * S, 10 * S));
    ck_assert(nw_nominations_targets(n, "c11", false, 111 * S, 10 * S));
    ck_assert(!nw_nominations_targets(n, "c12", true, 105 * S, 10 * S));
    /* u0005 moved to c9 and u0001 to c7: c5 and c1 keep their other pods */
    ck_assert(nw_nominations_targets(n, "c5", true, 105 * S, 10 * S));
    /* a missed claim's doubling survives a nomination to the same claim */
    int64_t due = INT64_MAX;
    ck_assert(!nw_nominations_missed(n, "x", 1, true, 102 * S, S, &due));
    ck_assert(!nw_nominations_missed(n, "x", 1, true, 103 * S, S, &due)); /* not tried again */
    ck_assert(nw_nominations_missed(n, "x", 2, true, 103 * S, S, &due));
    nw_nominations_nominate(n, "x", "c11", 103 * S);
    due = INT64_MAX;
    ck_assert(!nw_nominations_missed(n, "x", 2, true, 103 * S, S, &due)); /* the new base */
    ck_assert(!nw_nominations_missed(n, "x", 3, true, 104 * S, S, &due)); /* grace doubled */
    ck_assert(nw_nominations_missed(n, "x", 3, true, 105 * S, S, &due));
    /* prune keeps the looked-up and the recent */
    const char *keep[] = {"u0002"};
    nw_nominations_prune(n, keep, 1, 200 * S);
    ck_assert_str_eq(nw_nominations_claim_of(n, "u0002"), "c2");
    ck_assert_ptr_null(nw_nominations_claim_of(n, "u0003"));
    ck_assert(nw_nominations_targets(n, "c2", true, 200 * S, 10 * S));
    ck_assert(!nw_nominations_targets(n, "c3", true, 200 * S, 10 * S));
    nw_nominations_free(n);
}
END_TEST

/* Pods enter from their cache records: pods with equal scheduling specs (bound, pending or
 * rescheduled alike: the node is not part of the spec) hold one spec, which the snapshot
 * derives once. */
START_TEST(test_replicas_one_spec)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    node(&f, "n1", NULL, 0);
    node(&f, "gone", NULL, 1);
    pod(&f, "b1", "1", "1Gi", "n1", NULL);
    pod(&f, "b2", "1", "1Gi", "gone", NULL);
    pod(&f, "p1", "1", "1Gi", "", NULL);
    pod(&f, "p2", "1", "1Gi", "", NULL);
    pod(&f, "big", "2", "1Gi", "", NULL);
    nw_simsnap_opts_t o = {.include_pending = true, .reschedule_deleting = true};
    run_t r;
    run(&f, &o, &r);
    ck_assert_int_eq(r.ss.npods, 5);
    ck_assert_int_eq(r.ss.sched->nspecs, 2);
    ck_assert(r.ss.rescheduled[snap_pod(&r, "b2")]);
    ck_assert_int_eq(r.r.considered, 4);
    /* largest first: the 2-CPU pod joins b1 on n1 (3.92 CPUs), the three 1-CPU pods need a
     * new claim */
    ck_assert_str_eq(placed_on(&r, "big"), "n1");
    ck_assert(in_new_claim(&r, "p1") && in_new_claim(&r, "p2") && in_new_claim(&r, "b2"));
    run_free(&r);
    fx_free(&f);
}
END_TEST

/* ---- the Nodes' part kept between builds (nw_simsnap_cache_t) ---- */

/* a pod of app `app` with a zone spread and a preferred hostname anti-affinity over its app
 * (bench/cluster's Deployments); node "" = pending */
static void app_pod_ns(fx_t *f, const char *ns, const char *name, const char *app, const char *node)
{
    char b[3072];
    snprintf(
        b, sizeof b,
        "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"uid-%s\","
        "\"labels\":{\"app\":\"%s\"},\"creationTimestamp\":\"2024-01-01T00:00:00Z\","
        "\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"%s-rs\",\"controller\":"
        "true}]},\"spec\":{%s%s%s\"topologySpreadConstraints\":[{\"maxSkew\":1,"
        "\"topologyKey\":\"topology.kubernetes.io/zone\",\"whenUnsatisfiable\":"
        "\"ScheduleAnyway\",\"labelSelector\":{\"matchLabels\":{\"app\":\"%s\"}}}],"
        "\"affinity\":{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":"
        "[{\"weight\":50,\"podAffinityTerm\":{\"topologyKey\":\"kubernetes.io/hostname\","
        "\"labelSelector\":{\"matchLabels\":{\"app\":\"%s\"}}}}]}},"
        "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
        "{\"cpu\":\"500m\",\"memory\":\"512Mi\"}}}]},\"status\":{\"phase\":\"%s\"%s}}",
        name, ns, name, app, app, *node ? "\"nodeName\":\"" : "", node, *node ? "\"," : "", app,
        app, *node ? "Running" : "Pending",
        *node ? ""
              : ",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
                "\"reason\":\"Unschedulable\"}]");
    put(f, NW_KUBE_PODS, b);
}

/* the same in namespace ns-<app> */
static void app_pod(fx_t *f, const char *name, const char *app, const char *node)
{
    char ns[64];
    snprintf(ns, sizeof ns, "ns-%s", app);
    app_pod_ns(f, ns, name, app, node);
}

/* an initialized node of the pool in zone, m5.xlarge */
static void zone_node(fx_t *f, const char *name, const char *zone)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"uid\":\"n-%s\",\"labels\":{"
             "\"karpenter.sh/nodepool\":\"default\",\"karpenter.sh/initialized\":\"true\","
             "\"node.kubernetes.io/instance-type\":\"m5.xlarge\",\"kubernetes.io/arch\":\"amd64\","
             "\"kubernetes.io/hostname\":\"%s\",\"topology.kubernetes.io/zone\":\"%s\","
             "\"karpenter.sh/capacity-type\":\"on-demand\","
             "\"karpenter.k8s.aws/instance-category\":\"m\"}},"
             "\"spec\":{\"providerID\":\"aws:///%s/i-%s\"},"
             "\"status\":{\"allocatable\":{\"cpu\":\"3920m\",\"memory\":\"14Gi\",\"pods\":\"58\"},"
             "\"capacity\":{\"cpu\":\"4\",\"memory\":\"16Gi\",\"pods\":\"58\"}}}",
             name, name, name, zone, zone, name);
    put(f, NW_KUBE_NODES, b);
}

static void drop(fx_t *f, nw_kube_kind_t k, const char *ns, const char *name)
{
    char b[256];
    snprintf(b, sizeof b, "{\"metadata\":{\"name\":\"%s\"%s%s%s}}", name,
             ns ? ",\"namespace\":\"" : "", ns ? ns : "", ns ? "\"" : "");
    cJSON *o = cJSON_Parse(b);
    ck_assert_int_eq(nw_kube_cache_remove(f->cache, k, o), NW_OK);
    cJSON_Delete(o);
}

static int lset_index(const nw_sched_snap_t *s, const nw_labels_t *l)
{
    for (size_t k = 0; k < s->nlsets; k++)
        if (s->lsets[k] == l)
            return (int)k;
    return -1;
}

/* Two simulation inputs are the same, field by field where the simulation reads them. */
static void same_snapshot(const nw_simsnap_t *a, const nw_simsnap_t *b)
{
    const nw_sched_snap_t *x = a->sched, *y = b->sched;
    ck_assert_int_eq(a->npods, b->npods);
    ck_assert_int_eq(x->npods, y->npods);
    ck_assert_int_eq(a->nentries, b->nentries);
    for (size_t i = 0; i < a->nentries; i++) {
        ck_assert_str_eq(a->entry_names[i], b->entry_names[i]);
        ck_assert_str_eq(a->entry_claims[i], b->entry_claims[i]);
    }
    for (size_t i = 0; i < a->npods; i++) {
        ck_assert_ptr_eq(a->pods[i], b->pods[i]);
        ck_assert_int_eq(a->rescheduled[i], b->rescheduled[i]);
        const nw_spod_t *p = &x->pods[i], *q = &y->pods[i];
        ck_assert_str_eq(p->key, q->key);
        ck_assert_str_eq(p->uid, q->uid);
        ck_assert_str_eq(p->node_name ? p->node_name : "-", q->node_name ? q->node_name : "-");
        ck_assert_int_eq(p->cls, q->cls);
        ck_assert_int_eq(memcmp(&p->req, &q->req, sizeof p->req), 0);
        ck_assert_int_eq(p->ntcs, q->ntcs);
        for (int k = 0; k < p->ntcs; k++) {
            ck_assert_int_eq(p->tcs[k].group, q->tcs[k].group);
            ck_assert_int_eq(p->tcs[k].preferred, q->tcs[k].preferred);
            ck_assert_int_eq(p->tcs[k].weight, q->tcs[k].weight);
        }
        ck_assert_int_eq(lset_index(x, p->labels), lset_index(y, q->labels));
        ck_assert_int_eq(p->provisionable_state, q->provisionable_state);
        ck_assert_int_eq(p->unschedulable_cond, q->unschedulable_cond);
        ck_assert_int_eq(p->terminating, q->terminating);
        ck_assert_int_eq(p->finished, q->finished);
        ck_assert_int_eq(p->nhostports, q->nhostports);
        ck_assert_int_eq(p->nvols, q->nvols);
    }
    ck_assert_int_eq(x->nclasses, y->nclasses);
    for (size_t i = 0; i < x->nclasses; i++)
        ck_assert_str_eq(x->classes[i].sig, y->classes[i].sig);
    ck_assert_int_eq(x->ngroups, y->ngroups);
    for (size_t i = 0; i < x->ngroups; i++)
        ck_assert_str_eq(x->groups[i].sig, y->groups[i].sig);
    ck_assert_int_eq(x->nspecs, y->nspecs);
    for (size_t i = 0; i < x->nspecs; i++) {
        ck_assert_int_eq(x->specs[i].cls, y->specs[i].cls);
        ck_assert_int_eq(x->specs[i].ntcs, y->specs[i].ntcs);
        for (size_t k = 0; k < x->specs[i].ntcs; k++)
            ck_assert_str_eq(x->specs[i].tcs[k].ns, y->specs[i].tcs[k].ns);
    }
    ck_assert_int_eq(x->nlsets, y->nlsets);
    ck_assert_int_eq(x->nres, y->nres);
    for (int i = 0; i < x->nres; i++)
        ck_assert_str_eq(x->res_names[i], y->res_names[i]);
    ck_assert_int_eq(x->nnodes, y->nnodes);
    for (size_t i = 0; i < x->nnodes; i++) {
        const nw_snode_t *m = &x->nodes[i], *n = &y->nodes[i];
        ck_assert_str_eq(m->name, n->name);
        ck_assert_int_eq(m->claim, n->claim);
        ck_assert_int_eq(m->initialized, n->initialized);
        ck_assert_int_eq(m->deleting, n->deleting);
        ck_assert_int_eq(memcmp(&m->allocatable, &n->allocatable, sizeof m->allocatable), 0);
        ck_assert_str_eq(nw_labels_get(&m->labels, "topology.kubernetes.io/zone")
                             ? nw_labels_get(&m->labels, "topology.kubernetes.io/zone")
                             : "-",
                         nw_labels_get(&n->labels, "topology.kubernetes.io/zone")
                             ? nw_labels_get(&n->labels, "topology.kubernetes.io/zone")
                             : "-");
    }
    ck_assert_int_eq(x->npools, y->npools);
    ck_assert_int_eq(x->nitypes, y->nitypes);
}

/* The same decisions: what is placed where, the same new NodeClaims with the same pods. */
static void same_results(const nw_sched_results_t *a, const nw_sched_results_t *b)
{
    ck_assert_int_eq(a->considered, b->considered);
    ck_assert_int_eq(a->nplaced, b->nplaced);
    for (int i = 0; i < a->nplaced; i++) {
        ck_assert_int_eq(a->placed[i].pod, b->placed[i].pod);
        ck_assert_str_eq(a->placed[i].node, b->placed[i].node);
    }
    ck_assert_int_eq(a->nclaims, b->nclaims);
    for (int i = 0; i < a->nclaims; i++) {
        ck_assert_int_eq(a->claims[i].itype, b->claims[i].itype);
        ck_assert_int_eq(a->claims[i].nitypes, b->claims[i].nitypes);
        ck_assert_int_eq(a->claims[i].npods, b->claims[i].npods);
        for (int k = 0; k < a->claims[i].npods; k++)
            ck_assert_int_eq(a->claims[i].pods[k], b->claims[i].pods[k]);
    }
    ck_assert_int_eq(a->nunsched, b->nunsched);
}

/* A build through the cache against a fresh one on the same snapshot; *kept: the cache
 * took its Nodes' part as it was. */
static void cached_vs_fresh(fx_t *f, nw_simsnap_cache_t *c, const nw_simsnap_opts_t *o, bool *kept)
{
    nw_err_t err = {0};
    nw_kube_snap_t *ks = nw_kube_cache_snapshot(f->cache);
    uint64_t b0, r0, b1, r1;
    nw_simsnap_cache_counts(c, &b0, &r0);
    nw_simsnap_t a, b;
    ck_assert_int_eq(nw_simsnap_build_cached(c, env_now(f), ks, o, &a, &err), NW_OK);
    nw_simsnap_cache_counts(c, &b1, &r1);
    *kept = r1 == r0 + 1 && b1 == b0;
    ck_assert_int_eq(nw_simsnap_build(env_now(f), ks, o, &b, &err), NW_OK);
    same_snapshot(&a, &b);
    nw_sched_results_t ra, rb;
    ck_assert_int_eq(nw_solve(a.sched, 0, &ra, &err), NW_OK);
    ck_assert_int_eq(nw_solve(b.sched, 0, &rb, &err), NW_OK);
    same_results(&ra, &rb);
    nw_solve_results_free(&ra);
    nw_solve_results_free(&rb);
    nw_simsnap_release(c, &a);
    nw_simsnap_free(&b);
    nw_kube_cache_snap_release(ks);
}

START_TEST(test_cached_nodes_part)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    zone_node(&f, "n1", "us-west-2a");
    zone_node(&f, "n2", "us-west-2b");
    node(&f, "gone", NULL, 1); /* deleting: its pod is placed again */
    app_pod(&f, "a1", "a", "n1");
    app_pod(&f, "a2", "a", "n2");
    app_pod(&f, "b1", "b", "n1");
    app_pod(&f, "g1", "a", "gone");
    app_pod(&f, "pa1", "a", ""); /* pending, of a bound pod's spec */
    app_pod(&f, "pc1", "c", ""); /* pending, a spec of its own */
    claim(&f, "default-abc");    /* in flight, no Node */
    nw_simsnap_opts_t o = {.include_pending = true, .reschedule_deleting = true};
    nw_simsnap_cache_t *c = nw_simsnap_cache_new();
    ck_assert_ptr_nonnull(c);
    bool kept;
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept); /* the first build makes it */
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(kept);
    /* pending pods come and go: the Nodes' part is kept */
    app_pod(&f, "pa2", "a", "");
    app_pod(&f, "pd1", "d", "");
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(kept);
    drop(&f, NW_KUBE_PODS, "ns-c", "pc1");
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(kept);
    /* a pending pod of a bound pod's spec in another namespace (the spec remembers its
     * namespace's constraints), then gone */
    app_pod_ns(&f, "ns-x", "x1", "a", "");
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(kept);
    drop(&f, NW_KUBE_PODS, "ns-x", "x1");
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(kept);
    /* a pod bound: made again, then kept */
    app_pod(&f, "pa1", "a", "n2");
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept);
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(kept);
    /* a bound pod deleted */
    drop(&f, NW_KUBE_PODS, "ns-b", "b1");
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept);
    /* a Node added, another removed */
    zone_node(&f, "n3", "us-west-2c");
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept);
    drop(&f, NW_KUBE_NODES, NULL, "n2");
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept);
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(kept);
    /* a Node's labels changed (its zone), a bound pod's labels changed */
    zone_node(&f, "n1", "us-west-2c");
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept);
    app_pod(&f, "a1", "b", "n1");
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept);
    /* an offering ICE'd: made again */
    nw_ice_mark(f.cloud->ice, "on-demand", "m5.large", "us-west-2a", nw_clock_mono(&f.clk.base));
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept);
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(kept);
    /* and once the ICE entry expired */
    nw_clock_fake_advance(&f.clk, 4 * 3600 * NW_NS_PER_SEC);
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept);
    /* other options, the same cache: made again for them */
    nw_simsnap_opts_t o2 = {.include_pending = true};
    cached_vs_fresh(&f, c, &o2, &kept);
    ck_assert(!kept);
    /* exclusions are never kept (built whole) */
    const char *ex[] = {"n1"};
    nw_simsnap_opts_t o3 = {.exclude = ex, .nexclude = 1, .reschedule_excluded = true};
    uint64_t b0, r0, b1, r1;
    nw_simsnap_cache_counts(c, &b0, &r0);
    cached_vs_fresh(&f, c, &o3, &kept);
    nw_simsnap_cache_counts(c, &b1, &r1);
    ck_assert(b1 == b0 && r1 == r0);
    /* prepared ahead, then taken */
    app_pod(&f, "a9", "a", "n3");
    nw_err_t err = {0};
    nw_kube_snap_t *ks = nw_kube_cache_snapshot(f.cache);
    ck_assert_int_eq(nw_simsnap_cache_prepare(c, env_now(&f), ks, &o, &err), NW_OK);
    nw_kube_cache_snap_release(ks);
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(kept);
    nw_simsnap_cache_drop(c);
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept);
    nw_simsnap_cache_free(c);
    fx_free(&f);
}
END_TEST

/* A Node registered for a NodeClaim that has not initialized reads the provisioner's
 * in-flight memory: such a Nodes' part is built whole each time, and the same. */
START_TEST(test_cached_nodes_part_inflight_entry)
{
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    zone_node(&f, "n1", "us-west-2a");
    claim(&f, "default-n1"); /* n1's NodeClaim (by providerID), not initialized */
    char b[1024];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"default-n1\",\"uid\":\"c-n1\",\"labels\":{"
             "\"karpenter.sh/nodepool\":\"default\"}},\"spec\":{},\"status\":{\"providerID\":"
             "\"aws:///us-west-2a/i-n1\",\"nodeName\":\"n1\"}}");
    put(&f, NW_KUBE_NODECLAIMS, b);
    app_pod(&f, "a1", "a", "n1");
    app_pod(&f, "pa1", "a", "");
    nw_simsnap_opts_t o = {.include_pending = true, .reschedule_deleting = true};
    nw_simsnap_cache_t *c = nw_simsnap_cache_new();
    bool kept;
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept);
    cached_vs_fresh(&f, c, &o, &kept);
    ck_assert(!kept);
    nw_simsnap_cache_free(c);
    fx_free(&f);
}
END_TEST

/* ---- the pool of a class that is not ready (tests/data/classready) ---- */

static const nw_test_cases_t *class_cases;

/* One case: the fixture's pool "default" and a pending pod of 1 CPU, with the case's
 * `class` (none: the class does not exist); expect.claims new NodeClaims and
 * expect.notready the text naming the pools left out (null: none). */
START_TEST(class_ready_case)
{
    const nw_test_case_t *tc = nw_test_case(class_cases, _i);
    size_t len = 0;
    char *text = nw_test_read_file(tc->path, &len);
    cJSON **docs = NULL;
    size_t nd = 0;
    nw_err_t err = {0};
    ck_assert_msg(nw_yaml_load_docs(text, len, &docs, &nd, &err) == NW_OK && nd == 1, "%s: %s",
                  tc->name, err.msg);
    free(text);
    const cJSON *exp = nw_json_get(docs[0], "expect");
    ck_assert_msg(cJSON_IsNumber(nw_json_get(exp, "claims")), "%s: expect.claims", tc->name);
    ck_assert_msg(cJSON_GetObjectItemCaseSensitive(exp, "notready"),
                  "%s: expect.notready (null: none)", tc->name);
    fx_t f;
    fx_init(&f);
    put(&f, NW_KUBE_NODEPOOLS, POOL);
    pod(&f, "p", "1", "1Gi", "", NULL);
    const cJSON *cls = nw_json_get(docs[0], "class");
    if (cls) {
        char *js = cJSON_PrintUnformatted(cls);
        ck_assert_ptr_nonnull(js);
        put(&f, NW_KUBE_EC2NODECLASSES, js);
        free(js);
    }
    nw_simsnap_opts_t o = {.include_pending = 1};
    run_t r;
    run(&f, &o, &r);
    ck_assert_msg(r.r.nclaims == nw_json_get(exp, "claims")->valueint, "%s: %d NodeClaims",
                  tc->name, r.r.nclaims);
    const char *want = nw_json_str(exp, "notready");
    if (want) {
        ck_assert_msg(r.ss.notready && strcmp(r.ss.notready, want) == 0, "%s: notready %s",
                      tc->name, r.ss.notready ? r.ss.notready : "(none)");
        ck_assert_int_eq(r.ss.nnotready, 1);
    } else
        ck_assert_msg(!r.ss.notready && r.ss.nnotready == 0, "%s: notready %s", tc->name,
                      r.ss.notready);
    run_free(&r);
    fx_free(&f);
    nw_yaml_docs_free(docs, nd);
}
END_TEST

Suite *nw_simsnap_suite(void)
{
    Suite *s = suite_create("simsnap");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_existing_then_inflight_then_new);
    tcase_add_test(tc, test_csinode_attach_limit);
    tcase_add_test(tc, test_nomination_reserves_inflight_room);
    tcase_add_test(tc, test_planned_pods_kept_on_their_nodes);
    tcase_add_test(tc, test_exclude_and_reschedule);
    tcase_add_test(tc, test_deleting_and_disrupted_nodes);
    tcase_add_test(tc, test_ice_and_type_resources);
    tcase_add_test(tc, test_event_once);
    tcase_add_test(tc, test_nominations_batch);
    tcase_add_test(tc, test_nodeclass_kubelet);
    tcase_add_test(tc, test_nodeclass_compat);
    tcase_add_test(tc, test_replicas_one_spec);
    tcase_add_test(tc, test_cached_nodes_part);
    tcase_add_test(tc, test_cached_nodes_part_inflight_entry);
    tcase_add_test(tc, test_pools_isolated_by_policy);
    tcase_add_test(tc, test_dra_pods);
    tcase_add_test(tc, test_dra_node_devices);
    class_cases = nw_test_cases_dir("tests/data/classready", ".yaml", 6);
    nw_test_add_cases(tc, class_ready_case, class_cases);
    suite_add_tcase(s, tc);
    return s;
}
