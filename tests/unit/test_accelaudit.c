/*
 * Unit tests for scaler/controllers/accelaudit: pods without a request for the node's
 * accelerator class on accelerator nodes of every class (found by label, taint or
 * instance labels) are reported once as an Event, counted and shown in the gauge; the
 * exempt ones (DaemonSet, mirror, exempt namespace, finished, of the node's class) are
 * not; with evict on they are evicted through the Eviction API, a PDB's 429 retried
 * later, a pod annotated skip never; a replica that does not lead writes nothing.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "admission/gpu.h"
#include "scaler/controllers/accelaudit.h"
#include "tests/unit/ctlfix.h"

Suite *nw_accelaudit_suite(void);

static int hook(void *ud, const fake_req_t *r, fake_conn_t *c)
{
    const char *blocked = ud;
    if (!strstr(r->path, "/eviction"))
        return 0;
    if (blocked && strstr(r->path, blocked))
        fake_reply(c, 429, "",
                   "{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"TooManyRequests\","
                   "\"message\":\"Cannot evict pod as it would violate the pod's disruption "
                   "budget.\",\"code\":429}");
    else
        fake_reply(c, 201, "", "{\"kind\":\"Status\",\"status\":\"Success\"}");
    return 1;
}

static void node(ctlfix_t *f, const char *name, const char *labels, const char *taints)
{
    char b[1024];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\",\"labels\":{%s}},"
             "\"spec\":{\"taints\":[%s]}}",
             name, name, labels, taints);
    ctlfix_put(f, NW_KUBE_NODES, b, 0);
}

/* extra: more of spec; meta: more of metadata; res: the limits map */
static void pod(ctlfix_t *f, const char *ns, const char *name, const char *node, const char *res,
                const char *meta, const char *phase)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"uid-%s\"%s},"
             "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\",\"resources\":"
             "{\"limits\":{%s}}}]},\"status\":{\"phase\":\"%s\"}}",
             name, ns, name, meta, node, res, phase);
    ctlfix_put(f, NW_KUBE_PODS, b, 1);
}

static void tick(ctlfix_t *f, nw_accelaudit_t *a)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(f->deps.cache);
    nw_accelaudit_tick(a, s);
    nw_kube_cache_snap_release(s);
}

static int evictions(ctlfix_t *f, int m, const char *pod)
{
    char path[128];
    snprintf(path, sizeof path, "/pods/%s/eviction", pod);
    return ctlfix_count(f, m, "POST", path, NULL);
}

static int events(ctlfix_t *f, int m, const char *reason, const char *pod)
{
    char name[64];
    snprintf(name, sizeof name, "\"name\":\"%s\"", pod);
    return ctlfix_count(f, m, "/events", reason, name);
}

static void cluster(ctlfix_t *f)
{
    node(f, "n-nv", "\"node.accelerator\":\"nvidia-gpu\"",
         "{\"key\":\"gpu\",\"value\":\"true\",\"effect\":\"NoSchedule\"}");
    node(f, "n-inf", "\"karpenter.k8s.aws/instance-family\":\"inf2\"",
         "{\"key\":\"aws.amazon.com/neuron\",\"effect\":\"NoSchedule\"}");
    node(f, "n-dl",
         "\"karpenter.k8s.aws/instance-family\":\"dl1\","
         "\"karpenter.k8s.aws/instance-gpu-manufacturer\":\"habana\"",
         "");
    node(f, "n-cpu", "\"karpenter.k8s.aws/instance-family\":\"m6i\"", "");
    /* on the NVIDIA node */
    pod(f, "default", "cuda", "n-nv", "\"nvidia.com/gpu\":\"1\"", "", "Running");
    pod(f, "default", "mig", "n-nv", "\"nvidia.com/mig-1g.5gb\":\"1\"", "", "Running");
    pod(f, "default", "web", "n-nv", "\"cpu\":\"1\"", "", "Running");
    pod(f, "default", "rocm", "n-nv", "\"amd.com/gpu\":\"1\"", "", "Running");
    pod(f, "default", "dp", "n-nv", "",
        ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"name\":\"d\","
        "\"uid\":\"x\"}]",
        "Running");
    pod(f, "kube-system", "sys", "n-nv", "", "", "Running");
    pod(f, "default", "static", "n-nv", "",
        ",\"annotations\":{\"kubernetes.io/config.mirror\":\"abc\"}", "Running");
    pod(f, "default", "done", "n-nv", "", "", "Succeeded");
    /* the Neuron node (by its taint), the Gaudi node (by its instance labels) */
    pod(f, "default", "llm", "n-inf", "\"aws.amazon.com/neuroncore\":\"2\"", "", "Running");
    pod(f, "default", "tolerant", "n-inf", "", "", "Running");
    pod(f, "default", "batch", "n-dl", "\"cpu\":\"2\"", "", "Pending");
    pod(f, "default", "skipme", "n-dl", "",
        ",\"annotations\":{\"nodewarden.io/gpu-policy\":\"skip\"}", "Running");
    /* a CPU node: nothing to say */
    pod(f, "default", "plain", "n-cpu", "", "", "Running");
}

START_TEST(node_classes)
{
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, ""), NW_OK);
    static const struct {
        const char *json;
        const char *cls; /* NULL: not an accelerator node */
    } nodes[] = {
        {"{\"metadata\":{\"labels\":{\"node.accelerator\":\"amd-gpu\"}}}", "amd"},
        {"{\"metadata\":{},\"spec\":{\"taints\":[{\"key\":\"habana.ai/gaudi\","
         "\"effect\":\"NoSchedule\"}]}}",
         "gaudi"},
        {"{\"metadata\":{\"labels\":{\"karpenter.k8s.aws/instance-family\":\"trn1\"}}}", "neuron"},
        {"{\"metadata\":{\"labels\":{\"karpenter.k8s.aws/instance-gpu-manufacturer\":"
         "\"nvidia\"}}}",
         "nvidia"},
        /* the class's taint key with any value (issue 33): the class's node */
        {"{\"metadata\":{\"labels\":{\"karpenter.k8s.aws/instance-family\":\"c7i\"}},"
         "\"spec\":{\"taints\":[{\"key\":\"gpu\",\"value\":\"l4\",\"effect\":\"NoSchedule\"}]}}",
         "nvidia"},
        {"{\"metadata\":{\"labels\":{\"karpenter.k8s.aws/instance-family\":\"c7i\"}},"
         "\"spec\":{\"taints\":[{\"key\":\"gpux\",\"value\":\"true\",\"effect\":\"NoSchedule\"}]}}",
         NULL},
        {"{}", NULL},
        {"{\"metadata\":{\"labels\":7},\"spec\":{\"taints\":{}}}", NULL},
    };
    for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++) {
        cJSON *n = cJSON_Parse(nodes[i].json);
        ck_assert_ptr_nonnull(n);
        /* the class is read from the Node's record (api/node.h), as the cache keeps it */
        cJSON *md = cJSON_GetObjectItem(n, "metadata");
        if (!md)
            md = cJSON_AddObjectToObject(n, "metadata");
        cJSON_AddStringToObject(md, "name", "n");
        nw_node_t *rec = NULL;
        nw_err_t err = {0};
        if (nw_node_decode(n, &rec, &err) != NW_OK) {
            /* malformed: the cache refuses it, so it is no accelerator node either */
            ck_assert_msg(!nodes[i].cls, "%s: %s", nodes[i].json, err.msg);
            cJSON_Delete(n);
            continue;
        }
        int k = nw_accelaudit_node_class(&p, rec);
        nw_node_free(rec);
        if (nodes[i].cls)
            ck_assert_msg(k >= 0 && strcmp(p.classes[k].name, nodes[i].cls) == 0, "%s: class %d",
                          nodes[i].json, k);
        else
            ck_assert_msg(k < 0, "%s: class %d", nodes[i].json, k);
        cJSON_Delete(n);
    }
    nw_gpu_policy_cleanup(&p);
}
END_TEST

START_TEST(report_then_evict)
{
    ctlfix_t f;
    ctlfix_init(&f);
    f.api.hook = hook;
    f.api.hook_ud = (void *)"/pods/web/";
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, "nodewarden"), NW_OK);
    cluster(&f);

    /* report only (the default) */
    nw_accelaudit_opts_t o = {&p, false};
    nw_accelaudit_t *a = nw_accelaudit_new(&f.deps, &o);
    ck_assert_ptr_nonnull(a);
    int m = ctlfix_mark(&f);
    tick(&f, a);
    static const char *const bad[] = {"web", "rocm", "tolerant", "batch", "skipme"};
    static const char *const good[] = {"cuda",   "mig",  "dp",  "sys",
                                       "static", "done", "llm", "plain"};
    for (size_t i = 0; i < 5; i++)
        ck_assert_msg(events(&f, m, "AcceleratorIsolation", bad[i]) == 1, "no event for %s",
                      bad[i]);
    for (size_t i = 0; i < 8; i++)
        ck_assert_msg(events(&f, m, "AcceleratorIsolation", good[i]) == 0, "event for %s", good[i]);
    ck_assert_int_eq(ctlfix_count(&f, m, "/eviction", NULL, NULL), 0);
    ck_assert_uint_eq(nw_accelaudit_current(a, 0), 2); /* nvidia: web, rocm */
    ck_assert_uint_eq(nw_accelaudit_current(a, 1), 0);
    ck_assert_uint_eq(nw_accelaudit_current(a, 2), 1); /* neuron: tolerant */
    ck_assert_uint_eq(nw_accelaudit_current(a, 3), 2); /* gaudi: batch, skipme */
    nw_buf_t b;
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_accelaudit_metrics(a, &b),
                            "nodewarden_accelerator_isolation_violations{class=\"gaudi\"} 2\n"));
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_accelaudit_metrics(a, &b),
                            "nodewarden_accelerator_isolation_violations_total{class=\"nvidia\"} "
                            "2\n"));
    /* once per pod */
    m = ctlfix_mark(&f);
    tick(&f, a);
    ck_assert_int_eq(ctlfix_count(&f, m, "/events", "AcceleratorIsolation", NULL), 0);
    ck_assert_uint_eq(nw_accelaudit_current(a, 0), 2);
    nw_accelaudit_free(a);

    /* evict: every violator but the skipped one, through the Eviction API with its UID */
    o.evict = true;
    a = nw_accelaudit_new(&f.deps, &o);
    m = ctlfix_mark(&f);
    tick(&f, a);
    ck_assert_int_eq(ctlfix_count(&f, m, "/pods/rocm/eviction", "\"uid\":\"uid-rocm\"", NULL), 1);
    ck_assert_int_eq(evictions(&f, m, "tolerant"), 1);
    ck_assert_int_eq(evictions(&f, m, "batch"), 1);
    ck_assert_int_eq(evictions(&f, m, "web"), 1); /* answered 429 (its PDB) */
    ck_assert_int_eq(ctlfix_count(&f, m, "/eviction", NULL, NULL), 4);
    ck_assert_int_eq(events(&f, m, "Evicted", "rocm"), 1);
    ck_assert_int_eq(events(&f, m, "Evicted", "web"), 0);
    nw_buf_init(&b, 1 << 20);
    ck_assert(ctlfix_metric(&b, nw_accelaudit_metrics(a, &b),
                            "nodewarden_accelerator_isolation_evictions_total{class=\"nvidia\"} "
                            "1\n"));
    /* not again at once; the PDB-blocked pod again after the retry interval */
    m = ctlfix_mark(&f);
    tick(&f, a);
    ck_assert_int_eq(ctlfix_count(&f, m, "/eviction", NULL, NULL), 0);
    nw_clock_fake_advance(&f.clk, 11 * NW_NS_PER_SEC);
    f.api.hook_ud = NULL;
    m = ctlfix_mark(&f);
    tick(&f, a);
    ck_assert_int_eq(evictions(&f, m, "web"), 1);
    ck_assert_int_eq(events(&f, m, "Evicted", "web"), 1);
    ck_assert_int_eq(evictions(&f, m, "skipme"), 0);

    /* a replica that does not lead counts but writes nothing */
    nw_accelaudit_free(a);
    a = nw_accelaudit_new(&f.deps, &o);
    atomic_store(&f.deps.leading, 0);
    m = ctlfix_mark(&f);
    tick(&f, a);
    ck_assert_int_eq(ctlfix_mark(&f), m);
    ck_assert_uint_eq(nw_accelaudit_current(a, 3), 2);
    nw_accelaudit_free(a);

    /* policy off: nothing */
    atomic_store(&f.deps.leading, 1);
    p.enabled = false;
    a = nw_accelaudit_new(&f.deps, &o);
    m = ctlfix_mark(&f);
    tick(&f, a);
    ck_assert_int_eq(ctlfix_mark(&f), m);
    ck_assert_uint_eq(nw_accelaudit_current(a, 0), 0);
    nw_accelaudit_free(a);
    nw_gpu_policy_cleanup(&p);
    ctlfix_free(&f);
}
END_TEST

/* a pod bound to node whose claim `claim` (default namespace) it names */
static void dra_pod(ctlfix_t *f, const char *name, const char *node, const char *claim)
{
    char b[1024];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\",\"uid\":\"uid-%s\"},"
             "\"spec\":{\"nodeName\":\"%s\",\"resourceClaims\":[{\"name\":\"d\","
             "\"resourceClaimName\":\"%s\"}],\"containers\":[{\"name\":\"c\",\"resources\":"
             "{\"claims\":[{\"name\":\"d\"}]}}]},\"status\":{\"phase\":\"Running\"}}",
             name, name, node, claim);
    ctlfix_put(f, NW_KUBE_PODS, b, 1);
}

/* DRA (issue 33): a pod whose ResourceClaim asks for NVIDIA devices is an NVIDIA pod: not
 * reported on an NVIDIA node, reported on a generic node and on a Neuron node; a pod whose
 * claim asks for a NIC (no class's driver) is a generic pod on a generic node. */
START_TEST(dra_claims)
{
    ctlfix_t f;
    ctlfix_init(&f);
    nw_gpu_policy_t p;
    ck_assert_int_eq(nw_gpu_policy_init(&p, "nodewarden"), NW_OK);
    node(&f, "n-nv", "\"node.accelerator\":\"nvidia-gpu\"", "");
    node(&f, "n-inf", "\"node.accelerator\":\"aws-neuron\"", "");
    node(&f, "n-cpu", "\"karpenter.k8s.aws/instance-family\":\"m7i\"", "");
    ctlfix_put(&f, NW_KUBE_DEVICECLASSES,
               "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":"
               "{\"name\":\"a100\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
               "\"device.driver == 'gpu.nvidia.com'\"}}]}}",
               0);
    static const char *const claims[][2] = {{"gpu", "a100"}, {"nic", "rdma.example.com"}};
    for (size_t i = 0; i < 2; i++) {
        char b[512];
        snprintf(b, sizeof b,
                 "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":"
                 "{\"name\":\"%s\",\"namespace\":\"default\"},\"spec\":{\"devices\":{"
                 "\"requests\":[{\"name\":\"r\",\"exactly\":{\"deviceClassName\":\"%s\"}}]}}}",
                 claims[i][0], claims[i][1]);
        ctlfix_put(&f, NW_KUBE_RESOURCECLAIMS, b, 0);
    }
    dra_pod(&f, "train", "n-nv", "gpu");  /* its class's node: fine */
    dra_pod(&f, "stray", "n-cpu", "gpu"); /* NVIDIA devices on a generic node */
    dra_pod(&f, "lost", "n-inf", "gpu");  /* on the Neuron node */
    dra_pod(&f, "net", "n-cpu", "nic");   /* a NIC claim: a generic pod */
    nw_accelaudit_opts_t o = {&p, false};
    nw_accelaudit_t *a = nw_accelaudit_new(&f.deps, &o);
    int m = ctlfix_mark(&f);
    tick(&f, a);
    ck_assert_int_eq(events(&f, m, "AcceleratorIsolation", "train"), 0);
    ck_assert_int_eq(events(&f, m, "AcceleratorIsolation", "net"), 0);
    ck_assert_int_eq(events(&f, m, "AcceleratorIsolation", "stray"), 1);
    ck_assert_int_eq(ctlfix_count(&f, m, "/events", "DRA ResourceClaims request nvidia", NULL), 1);
    ck_assert_int_eq(events(&f, m, "AcceleratorIsolation", "lost"), 1);
    ck_assert_uint_eq(nw_accelaudit_current(a, 0), 1); /* nvidia: stray */
    ck_assert_uint_eq(nw_accelaudit_current(a, 2), 1); /* neuron: lost */
    /* a new such pod on a generic node is seen on the next tick */
    dra_pod(&f, "stray2", "n-cpu", "gpu");
    m = ctlfix_mark(&f);
    tick(&f, a);
    ck_assert_int_eq(events(&f, m, "AcceleratorIsolation", "stray2"), 1);
    ck_assert_uint_eq(nw_accelaudit_current(a, 0), 2);
    nw_accelaudit_free(a);
    nw_gpu_policy_cleanup(&p);
    ctlfix_free(&f);
}
END_TEST

Suite *nw_accelaudit_suite(void)
{
    Suite *s = suite_create("accelaudit");
    TCase *tc = tcase_create("audit");
    tcase_add_test(tc, node_classes);
    tcase_add_test(tc, report_then_evict);
    tcase_add_test(tc, dra_claims);
    suite_add_tcase(s, tc);
    return s;
}
