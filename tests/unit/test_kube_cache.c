/* Unit tests for scaler/kube/cache: stores, indexes, snapshots, relist, notifications. */
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scaler/kube/cache.h"

Suite *nw_kube_cache_suite(void);

static cJSON *pod(const char *ns, const char *name, const char *rv, const char *node,
                  const char *phase, int unschedulable)
{
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"resourceVersion\":\"%s\","
             "\"uid\":\"u-%s\"},\"spec\":{\"nodeName\":\"%s\"},\"status\":{\"phase\":\"%s\"%s}}",
             name, ns, rv, name, node, phase,
             unschedulable ? ",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
                             "\"reason\":\"Unschedulable\"}]"
                           : "");
    cJSON *j = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(j);
    return j;
}

static cJSON *named(const char *name, const char *rv, const char *extra)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%s\"%s}%s}",
             name, rv, "", extra ? extra : "");
    cJSON *j = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(j);
    return j;
}

START_TEST(pending_predicate)
{
    cJSON *p = pod("a", "p", "1", "", "Pending", 1);
    ck_assert_int_eq(nw_kube_cache_pod_is_pending(p), 1);
    cJSON_Delete(p);
    p = pod("a", "p", "1", "node-1", "Pending", 1); /* bound */
    ck_assert_int_eq(nw_kube_cache_pod_is_pending(p), 0);
    cJSON_Delete(p);
    p = pod("a", "p", "1", "", "Pending", 0); /* not yet marked unschedulable */
    ck_assert_int_eq(nw_kube_cache_pod_is_pending(p), 0);
    cJSON_Delete(p);
    p = pod("a", "p", "1", "", "Failed", 1);
    ck_assert_int_eq(nw_kube_cache_pod_is_pending(p), 0);
    cJSON_Delete(p);
    p = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Pending\","
                    "\"nominatedNodeName\":\"n\",\"conditions\":[{\"type\":\"PodScheduled\","
                    "\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}");
    ck_assert_int_eq(nw_kube_cache_pod_is_pending(p), 0); /* preemption in progress */
    cJSON_Delete(p);
    p = cJSON_Parse("{\"metadata\":{\"name\":\"p\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"},"
                    "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
                    "\"status\":\"False\",\"reason\":\"Unschedulable\"}]}}");
    ck_assert_int_eq(nw_kube_cache_pod_is_pending(p), 0); /* terminating */
    cJSON_Delete(p);
    p = cJSON_Parse("{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Pending\","
                    "\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
                    "\"reason\":\"SchedulingGated\"}]}}");
    ck_assert_int_eq(nw_kube_cache_pod_is_pending(p), 0);
    cJSON_Delete(p);
}
END_TEST

/* The pods by phase: each phase's range, by key, whatever the phases around it. */
START_TEST(pods_by_phase)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    const char *ph[] = {"Running", "Pending", "Succeeded", "Failed",  "Unknown",
                        "Running", "Pending", "Failed",    "Running", "Pending"};
    for (int i = 0; i < 10; i++) {
        char name[8];
        snprintf(name, sizeof name, "q%d", 9 - i);
        bool pend = strcmp(ph[i], "Pending") == 0;
        ck_assert_int_eq(
            nw_kube_cache_upsert(c, NW_KUBE_PODS,
                                 pod("x", name, name + 1, pend ? "" : "n1", ph[i], pend)),
            NW_OK);
    }
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    const nw_kube_obj_t *const *v;
    const struct {
        const char *phase;
        size_t n;
        const char *first, *last;
    } want[] = {{"Running", 3, "x/q1", "x/q9"},   {"Pending", 3, "x/q0", "x/q8"},
                {"Succeeded", 1, "x/q7", "x/q7"}, {"Failed", 2, "x/q2", "x/q6"},
                {"Unknown", 1, "x/q5", "x/q5"},   {"Evicted", 0, NULL, NULL}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        size_t n = nw_kube_cache_snap_pods_in_phase(s, want[k].phase, &v);
        ck_assert_uint_eq(n, want[k].n);
        for (size_t i = 0; i < n; i++)
            ck_assert_str_eq(v[i]->phase, want[k].phase);
        if (n) {
            ck_assert_str_eq(v[0]->key, want[k].first);
            ck_assert_str_eq(v[n - 1]->key, want[k].last);
        }
    }
    nw_kube_cache_snap_release(s);
    nw_kube_cache_free(c);
}
END_TEST

START_TEST(store_and_indexes)
{
    nw_kube_metrics_t *m = nw_kube_metrics_new();
    nw_kube_cache_t *c = nw_kube_cache_new(m);
    ck_assert_int_eq(nw_kube_cache_has_synced(c), 0);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("b", "p1", "1", "n1", "Running", 0)),
                     NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p2", "2", "n1", "Running", 0)),
                     NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p3", "3", "n2", "Running", 0)),
                     NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p4", "4", "", "Pending", 1)),
                     NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p5", "5", "", "Pending", 1)),
                     NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(
                         c, NW_KUBE_NODES,
                         named("n1", "6", ",\"spec\":{\"providerID\":\"aws:///us-west-2a/i-1\"}")),
                     NW_OK);
    ck_assert_int_eq(
        nw_kube_cache_upsert(c, NW_KUBE_NODECLAIMS,
                             cJSON_Parse("{\"metadata\":{\"name\":\"nc1\",\"labels\":"
                                         "{\"karpenter.sh/nodepool\":\"gpu\"}},\"status\":"
                                         "{\"providerID\":\"aws:///us-west-2a/i-1\"}}")),
        NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_NODECLAIMS,
                                          cJSON_Parse("{\"metadata\":{\"name\":\"nc2\",\"labels\":"
                                                      "{\"karpenter.sh/nodepool\":\"gpu\"}}}")),
                     NW_OK);
    /* no name: rejected, no leak */
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_NODES, cJSON_Parse("{\"metadata\":{}}")),
                     NW_EINVAL);
    ck_assert_int_eq(nw_kube_metrics_get(m, NW_KM_CACHE_OBJECTS, NULL, "pods", -1), 5);

    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    ck_assert_uint_eq(nw_kube_cache_snap_count(s, NW_KUBE_PODS), 5);
    ck_assert_str_eq(nw_kube_cache_snap_at(s, NW_KUBE_PODS, 0)->key, "a/p2"); /* sorted by key */
    ck_assert_str_eq(nw_kube_cache_snap_at(s, NW_KUBE_PODS, 4)->key, "b/p1");
    const nw_kube_obj_t *const *v;
    ck_assert_uint_eq(nw_kube_cache_snap_pods_on_node(s, "n1", &v), 2);
    ck_assert_str_eq(v[0]->key, "a/p2");
    ck_assert_str_eq(v[1]->key, "b/p1");
    ck_assert_uint_eq(nw_kube_cache_snap_pods_on_node(s, "n9", &v), 0);
    ck_assert_uint_eq(nw_kube_cache_snap_pending_pods(s, &v), 2);
    ck_assert_str_eq(v[0]->name, "p4");
    ck_assert_uint_eq(nw_kube_cache_snap_pods_in_phase(s, "Running", &v), 3);
    ck_assert_uint_eq(nw_kube_cache_snap_pods_in_phase(s, "Pending", &v), 2);
    ck_assert_str_eq(v[0]->key, "a/p4"); /* each phase by key */
    ck_assert_str_eq(v[1]->key, "a/p5");
    ck_assert_ptr_nonnull(nw_kube_cache_snap_node_by_provider_id(s, "aws:///us-west-2a/i-1"));
    ck_assert_str_eq(nw_kube_cache_snap_nodeclaim_by_provider_id(s, "aws:///us-west-2a/i-1")->name,
                     "nc1");
    ck_assert_ptr_null(nw_kube_cache_snap_node_by_provider_id(s, ""));
    ck_assert_uint_eq(nw_kube_cache_snap_nodeclaims_for_nodepool(s, "gpu", &v), 2);
    ck_assert_str_eq(nw_kube_cache_snap_get(s, NW_KUBE_PODS, "a", "p3")->node_name, "n2");
    ck_assert_ptr_null(nw_kube_cache_snap_get(s, NW_KUBE_PODS, "b", "p3"));
    ck_assert_str_eq(nw_kube_cache_snap_get(s, NW_KUBE_NODES, "ignored", "n1")->name, "n1");

    /* the snapshot is immutable: later changes do not show in it */
    const nw_kube_obj_t *p3 = nw_kube_cache_snap_get(s, NW_KUBE_PODS, "a", "p3");
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p3", "9", "n1", "Running", 0)),
                     NW_OK);
    cJSON *del = pod("b", "p1", "10", "", "", 0);
    ck_assert_int_eq(nw_kube_cache_remove(c, NW_KUBE_PODS, del), NW_OK);
    cJSON_Delete(del);
    ck_assert_str_eq(p3->rv, "3");
    ck_assert_str_eq(p3->node_name, "n2");
    ck_assert_uint_eq(nw_kube_cache_snap_count(s, NW_KUBE_PODS), 5);
    nw_kube_snap_t *s2 = nw_kube_cache_snapshot(c);
    ck_assert_uint_eq(nw_kube_cache_snap_count(s2, NW_KUBE_PODS), 4);
    ck_assert_str_eq(nw_kube_cache_snap_get(s2, NW_KUBE_PODS, "a", "p3")->rv, "9");
    ck_assert_uint_eq(nw_kube_cache_snap_pods_on_node(s2, "n1", &v), 2);
    ck_assert_uint_gt(nw_kube_cache_snap_generation(s2), nw_kube_cache_snap_generation(s));
    /* same generation: the same snapshot */
    nw_kube_snap_t *s3 = nw_kube_cache_snapshot(c);
    ck_assert_ptr_eq(s2, s3);
    nw_kube_cache_snap_release(s3);
    /* a kind's generation moves only with its own changes */
    ck_assert_uint_gt(nw_kube_cache_snap_kind_generation(s2, NW_KUBE_PODS),
                      nw_kube_cache_snap_kind_generation(s, NW_KUBE_PODS));
    ck_assert_uint_eq(nw_kube_cache_snap_kind_generation(s2, NW_KUBE_NODES),
                      nw_kube_cache_snap_kind_generation(s, NW_KUBE_NODES));
    ck_assert_uint_gt(nw_kube_cache_snap_kind_generation(s, NW_KUBE_NODES), 0);
    ck_assert_uint_eq(nw_kube_cache_snap_kind_generation(s, NW_KUBE_PDBS), 0);
    nw_kube_cache_snap_release(s);
    nw_kube_cache_snap_release(s2);
    nw_kube_cache_free(c);
    nw_kube_metrics_free(m);
}
END_TEST

typedef struct {
    char log[4096];
} hooklog_t;

static void hook(nw_kube_kind_t kind, nw_kube_change_t ch, const nw_kube_obj_t *o,
                 const nw_kube_obj_t *n, void *ud)
{
    hooklog_t *h = ud;
    size_t l = strlen(h->log);
    snprintf(h->log + l, sizeof h->log - l, "%s %c %s;", nw_kube_cache_kind_name(kind),
             ch == NW_KUBE_ADDED      ? 'A'
             : ch == NW_KUBE_MODIFIED ? 'M'
                                      : 'D',
             n ? n->key : o->key);
}

START_TEST(replace_and_sync)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    hooklog_t h = {{0}};
    nw_kube_cache_set_hook(c, hook, &h);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_NODES, named("n1", "1", NULL)), NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_NODES, named("n2", "1", NULL)), NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_NODES, named("n3", "1", NULL)), NW_OK);
    nw_kube_snap_t *before = nw_kube_cache_snapshot(c);
    cJSON *items = cJSON_CreateArray();
    cJSON_AddItemToArray(items, named("n2", "1", NULL));           /* unchanged */
    cJSON_AddItemToArray(items, named("n3", "5", NULL));           /* modified */
    cJSON_AddItemToArray(items, named("n4", "5", NULL));           /* new */
    cJSON_AddItemToArray(items, cJSON_Parse("{\"metadata\":{}}")); /* skipped */
    h.log[0] = '\0';
    ck_assert_int_eq(nw_kube_cache_replace(c, NW_KUBE_NODES, items), NW_OK);
    ck_assert_ptr_nonnull(strstr(h.log, "nodes D n1;"));
    ck_assert_ptr_nonnull(strstr(h.log, "nodes M n3;"));
    ck_assert_ptr_nonnull(strstr(h.log, "nodes A n4;"));
    ck_assert_ptr_null(strstr(h.log, "n2"));
    nw_kube_snap_t *after = nw_kube_cache_snapshot(c);
    ck_assert_uint_eq(nw_kube_cache_snap_count(before, NW_KUBE_NODES), 3);
    ck_assert_str_eq(nw_kube_cache_snap_at(before, NW_KUBE_NODES, 0)->name, "n1");
    ck_assert_uint_eq(nw_kube_cache_snap_count(after, NW_KUBE_NODES), 3);
    ck_assert_str_eq(nw_kube_cache_snap_at(after, NW_KUBE_NODES, 0)->name, "n2");
    ck_assert_str_eq(nw_kube_cache_snap_at(after, NW_KUBE_NODES, 2)->name, "n4");
    ck_assert_int_eq(nw_kube_cache_snap_synced(after), 0);
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        if (k != NW_KUBE_NODES)
            nw_kube_cache_mark_synced(c, (nw_kube_kind_t)k);
    ck_assert_int_eq(nw_kube_cache_has_synced(c), 1);
    ck_assert_int_eq(nw_kube_cache_wait_synced(c, 0), 1);
    nw_buf_t out;
    nw_buf_init(&out, 1 << 20);
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    ck_assert_int_eq(nw_kube_cache_snap_synced(s), 1);
    ck_assert_int_eq(nw_kube_cache_snap_dump_json(s, &out), NW_OK);
    cJSON *d = cJSON_Parse(nw_buf_str(&out));
    ck_assert_ptr_nonnull(d);
    char *flat = cJSON_PrintUnformatted(d);
    ck_assert_str_eq(flat, "{\"pods\":[],\"nodes\":[\"n2\",\"n3\",\"n4\"],\"nodepools\":[],"
                           "\"ec2nodeclasses\":[],\"nodeclaims\":[],\"poddisruptionbudgets\":[],"
                           "\"daemonsets\":[],\"persistentvolumes\":[],"
                           "\"persistentvolumeclaims\":[],\"storageclasses\":[],\"namespaces\":[],"
                           "\"csinodes\":[],\"resourceclaims\":[],\"resourceclaimtemplates\":[],"
                           "\"deviceclasses\":[]}");
    free(flat);
    cJSON_Delete(d);
    /* --versions: the same keys, each with its resourceVersion */
    nw_buf_reset(&out);
    ck_assert_int_eq(nw_kube_cache_snap_dump_versions_json(s, &out), NW_OK);
    d = cJSON_Parse(nw_buf_str(&out));
    ck_assert_ptr_nonnull(d);
    flat = cJSON_PrintUnformatted(d);
    ck_assert_str_eq(flat, "{\"pods\":{},\"nodes\":{\"n2\":\"1\",\"n3\":\"5\",\"n4\":\"5\"},"
                           "\"nodepools\":{},\"ec2nodeclasses\":{},\"nodeclaims\":{},"
                           "\"poddisruptionbudgets\":{},\"daemonsets\":{},\"persistentvolumes\":{},"
                           "\"persistentvolumeclaims\":{},\"storageclasses\":{},\"namespaces\":{},"
                           "\"csinodes\":{},\"resourceclaims\":{},\"resourceclaimtemplates\":{},"
                           "\"deviceclasses\":{}}");
    free(flat);
    cJSON_Delete(d);
    nw_buf_cleanup(&out);
    nw_kube_cache_snap_release(s);
    nw_kube_cache_snap_release(before);
    nw_kube_cache_snap_release(after);
    nw_kube_cache_free(c);
}
END_TEST

typedef struct {
    nw_kube_cache_t *c;
    int n;
    _Atomic int done;
} writer_t;

static void *writer(void *arg)
{
    writer_t *w = arg;
    char name[32], rv[32];
    for (int i = 0; i < w->n; i++) {
        snprintf(name, sizeof name, "p%d", i % 50);
        snprintf(rv, sizeof rv, "%d", i);
        nw_kube_cache_upsert(w->c, NW_KUBE_PODS,
                             pod("ns", name, rv, i % 2 ? "n1" : "", "Running", 0));
        if (i % 100 == 99) {
            cJSON *items = cJSON_CreateArray();
            for (int j = 0; j < 10; j++) {
                snprintf(name, sizeof name, "r%d", j);
                cJSON_AddItemToArray(items, pod("ns", name, rv, "n2", "Running", 0));
            }
            nw_kube_cache_replace(w->c, NW_KUBE_PODS, items);
        }
    }
    atomic_store(&w->done, 1);
    return NULL;
}

/* A reader racing a writer always sees a consistent snapshot: after a relist there are
 * exactly the 10 relisted pods plus whatever was upserted since; never half a relist. */
START_TEST(concurrent_readers)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    writer_t w = {c, 3000, 0};
    pthread_t th;
    pthread_create(&th, NULL, writer, &w);
    uint64_t seen = 0;
    nw_kube_snap_t *held = NULL; /* kept across changes: its retired objects must live on */
    for (int i = 0; i < 400 && !atomic_load(&w.done); i++) {
        seen = nw_kube_cache_wait(c, seen, 50);
        nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
        ck_assert_ptr_nonnull(s);
        if (held) {
            for (size_t j = 0; j < nw_kube_cache_snap_count(held, NW_KUBE_PODS); j++) {
                const nw_kube_obj_t *o = nw_kube_cache_snap_at(held, NW_KUBE_PODS, j);
                ck_assert_str_eq(o->pod->key, o->key);
                ck_assert(cJSON_IsObject(o->pod->spec));
            }
            nw_kube_cache_snap_release(held);
        }
        held = NULL;
        size_t relisted = 0;
        for (size_t j = 0; j < nw_kube_cache_snap_count(s, NW_KUBE_PODS); j++)
            relisted += nw_kube_cache_snap_at(s, NW_KUBE_PODS, j)->name[0] == 'r';
        ck_assert(relisted == 0 || relisted == 10);
        const nw_kube_obj_t *const *v;
        size_t on_n2 = nw_kube_cache_snap_pods_on_node(s, "n2", &v);
        ck_assert_uint_eq(on_n2, relisted);
        if (i % 2 == 0)
            held = s; /* released on the next round, after more changes */
        else
            nw_kube_cache_snap_release(s);
    }
    nw_kube_cache_snap_release(held);
    pthread_join(th, NULL);
    ck_assert_uint_le(nw_kube_cache_count(c, NW_KUBE_PODS), 60);
    /* eventfd was signalled */
    struct pollfd pfd = {.fd = nw_kube_cache_eventfd(c), .events = POLLIN};
    ck_assert_int_eq(poll(&pfd, 1, 0), 1);
    nw_kube_cache_free(c);
}
END_TEST

/* Objects retired behind held snapshots stay readable through them and are freed once the
 * snapshots that can see them are released, oldest first, whatever the order of release. */
START_TEST(retired_freed_when_snapshots_released)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    char rv[16];
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p", "1", "", "Pending", 1)),
                     NW_OK);
    nw_kube_snap_t *s1 = nw_kube_cache_snapshot(c);
    for (int i = 2; i < 700; i++) { /* past a reclaim batch and the queue's first capacity */
        snprintf(rv, sizeof rv, "%d", i);
        ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p", rv, "", "Pending", 1)),
                         NW_OK);
    }
    nw_kube_snap_t *s2 = nw_kube_cache_snapshot(c);
    for (int i = 700; i < 1500; i++) {
        snprintf(rv, sizeof rv, "%d", i);
        ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p", rv, "", "Pending", 1)),
                         NW_OK);
    }
    ck_assert_uint_eq(nw_kube_cache_retired(c), 1498);
    ck_assert_str_eq(nw_kube_cache_snap_at(s1, NW_KUBE_PODS, 0)->rv, "1");
    ck_assert_str_eq(nw_kube_cache_snap_at(s2, NW_KUBE_PODS, 0)->rv, "699");
    nw_kube_cache_snap_release(s2); /* the newer first: s1 still holds everything retired */
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p", "1500", "", "Pending", 1)),
                     NW_OK);
    ck_assert_uint_eq(nw_kube_cache_retired(c), 1499);
    ck_assert_str_eq(nw_kube_cache_snap_at(s1, NW_KUBE_PODS, 0)->rv, "1");
    nw_kube_cache_snap_release(s1);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p", "1501", "", "Pending", 1)),
                     NW_OK);
    ck_assert_uint_eq(nw_kube_cache_retired(c), 0);
    nw_kube_cache_free(c);
}
END_TEST

/* A held object outlives its snapshot and its retirement, and holds back nothing else: the
 * versions retired after it are freed once no snapshot can see them. */
START_TEST(held_object_outlives_its_snapshot)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    char rv[16];
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p", "1", "n1", "Running", 0)),
                     NW_OK);
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    const nw_kube_obj_t *held = nw_kube_cache_obj_hold(nw_kube_cache_snap_at(s, NW_KUBE_PODS, 0));
    nw_kube_cache_snap_release(s);
    for (int i = 2; i < 300; i++) {
        snprintf(rv, sizeof rv, "%d", i);
        ck_assert_int_eq(
            nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p", rv, "n1", "Running", 0)), NW_OK);
    }
    /* no snapshot is alive: nothing waits, yet the held version is whole */
    ck_assert_uint_eq(nw_kube_cache_retired(c), 0);
    ck_assert_str_eq(held->rv, "1");
    ck_assert_str_eq(held->key, "a/p");
    ck_assert_str_eq(held->pod->node_name, "n1");
    ck_assert_str_eq(held->pod->phase_name, "Running");
    /* two holds of the current version, released from another snapshot's lifetime */
    s = nw_kube_cache_snapshot(c);
    const nw_kube_obj_t *cur = nw_kube_cache_snap_at(s, NW_KUBE_PODS, 0);
    ck_assert_ptr_eq(nw_kube_cache_obj_hold(cur), cur);
    ck_assert_ptr_eq(nw_kube_cache_obj_hold(cur), cur);
    nw_kube_cache_snap_release(s);
    cJSON *gone = pod("a", "p", "300", "", "", 0);
    ck_assert_int_eq(nw_kube_cache_remove(c, NW_KUBE_PODS, gone), NW_OK);
    cJSON_Delete(gone);
    ck_assert_uint_eq(nw_kube_cache_count(c, NW_KUBE_PODS), 0);
    ck_assert_str_eq(cur->rv, "299");
    nw_kube_cache_obj_release(cur);
    ck_assert_str_eq(cur->rv, "299");
    nw_kube_cache_obj_release(cur);
    nw_kube_cache_obj_release(held);
    nw_kube_cache_obj_release(NULL);
    nw_kube_cache_free(c);
}
END_TEST

/* ---- the sorted vectors under random changes ---- */

#define RN 120 /* pod names */
typedef struct {
    bool present;
    int node;  /* -1 unbound, else n<node> */
    int phase; /* 0 Pending, 1 Running, 2 Succeeded */
    bool unsched;
} model_pod_t;

static const char *const PHASES[] = {"Pending", "Running", "Succeeded"};

static cJSON *model_json(int i, const model_pod_t *m, int rv)
{
    char name[16], node[16], rvs[16];
    snprintf(name, sizeof name, "p%03d", i);
    snprintf(node, sizeof node, "n%d", m->node);
    snprintf(rvs, sizeof rvs, "%d", rv);
    return pod(i % 3 ? "a" : "b", name, rvs, m->node < 0 ? "" : node, PHASES[m->phase], m->unsched);
}

/* What a snapshot must hold for the model: every pod in key order, each node's pods, the
 * pending ones. */
static void check_against(const nw_kube_snap_t *s, const model_pod_t *m)
{
    size_t want = 0, pend = 0, prev = 0;
    for (int i = 0; i < RN; i++) {
        want += m[i].present;
        pend += m[i].present && m[i].node < 0 && m[i].phase != 2 && m[i].unsched;
    }
    ck_assert_uint_eq(nw_kube_cache_snap_count(s, NW_KUBE_PODS), want);
    for (size_t i = 1; i < want; i++)
        ck_assert(strcmp(nw_kube_cache_snap_at(s, NW_KUBE_PODS, i - 1)->key,
                         nw_kube_cache_snap_at(s, NW_KUBE_PODS, i)->key) < 0);
    const nw_kube_obj_t *const *v;
    ck_assert_uint_eq(nw_kube_cache_snap_pending_pods(s, &v), pend);
    for (int n = 0; n < 6; n++) {
        char node[16];
        snprintf(node, sizeof node, "n%d", n);
        size_t on = 0;
        for (int i = 0; i < RN; i++)
            on += m[i].present && m[i].node == n;
        size_t got = nw_kube_cache_snap_pods_on_node(s, node, &v);
        ck_assert_uint_eq(got, on);
        for (size_t k = 0; k < got; k++) {
            ck_assert_str_eq(v[k]->node_name, node);
            ck_assert(k == 0 || strcmp(v[k - 1]->key, v[k]->key) < 0);
        }
        prev += on;
    }
    (void)prev;
    size_t running = 0;
    for (int i = 0; i < RN; i++)
        running += m[i].present && m[i].phase == 1;
    ck_assert_uint_eq(nw_kube_cache_snap_pods_in_phase(s, "Running", &v), running);
}

START_TEST(random_changes_keep_vectors_and_snapshots)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    model_pod_t m[RN] = {{0}};
    unsigned seed = 27;
    /* snapshots held across changes, with the keys and nodes they showed when taken */
    nw_kube_snap_t *held[3] = {0};
    char *seen[3] = {0};
    for (int step = 0; step < 4000; step++) {
        int i = (int)(rand_r(&seed) % RN), op = (int)(rand_r(&seed) % 10);
        if (op < 6) {
            m[i] = (model_pod_t){true, (int)(rand_r(&seed) % 7) - 1, (int)(rand_r(&seed) % 3),
                                 rand_r(&seed) % 2 == 0};
            ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, model_json(i, &m[i], step)),
                             NW_OK);
        } else if (op < 9) {
            cJSON *j = model_json(i, &m[i], step);
            ck_assert_int_eq(nw_kube_cache_remove(c, NW_KUBE_PODS, j), NW_OK);
            cJSON_Delete(j);
            m[i].present = false;
        } else if (step % 7 == 0) { /* a relist: a new random population */
            cJSON *items = cJSON_CreateArray();
            for (int k = 0; k < RN; k++) {
                m[k].present = rand_r(&seed) % 2 == 0;
                if (m[k].present)
                    cJSON_AddItemToArray(items, model_json(k, &m[k], step));
            }
            ck_assert_int_eq(nw_kube_cache_replace(c, NW_KUBE_PODS, items), NW_OK);
        }
        if (step % 13 == 0) {
            nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
            check_against(s, m);
            int h = (int)(rand_r(&seed) % 3);
            if (held[h]) { /* a snapshot taken long ago still shows what it showed */
                nw_buf_t b;
                nw_buf_init(&b, 1 << 20);
                ck_assert_int_eq(nw_kube_cache_snap_dump_json(held[h], &b), NW_OK);
                ck_assert_str_eq(nw_buf_str(&b), seen[h]);
                for (size_t k = 0; k < nw_kube_cache_snap_count(held[h], NW_KUBE_PODS); k++) {
                    const nw_kube_obj_t *o = nw_kube_cache_snap_at(held[h], NW_KUBE_PODS, k);
                    ck_assert_str_eq(o->pod->key, o->key); /* alive (ASan would tell) */
                }
                nw_buf_cleanup(&b);
                nw_kube_cache_snap_release(held[h]);
                free(seen[h]);
            }
            held[h] = s;
            nw_buf_t b;
            nw_buf_init(&b, 1 << 20);
            ck_assert_int_eq(nw_kube_cache_snap_dump_json(s, &b), NW_OK);
            seen[h] = strdup(nw_buf_str(&b));
            nw_buf_cleanup(&b);
        }
    }
    for (int h = 0; h < 3; h++) {
        nw_kube_cache_snap_release(held[h]);
        free(seen[h]);
    }
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    check_against(s, m);
    nw_kube_cache_snap_release(s);
    nw_kube_cache_free(c);
}
END_TEST

/* A kind listed empty again while it is synced empty (a resource the API server does not
 * serve, listed at every retry) is no change: the generation stays. A first empty list, an
 * empty list after the kind lost its sync, and one that empties a kind are changes. */
START_TEST(empty_relist_of_an_empty_kind_is_no_change)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    uint64_t g0 = nw_kube_cache_generation(c);
    ck_assert_int_eq(nw_kube_cache_replace(c, NW_KUBE_PDBS, NULL), NW_OK);
    uint64_t g1 = nw_kube_cache_generation(c);
    ck_assert_uint_gt(g1, g0);
    ck_assert_int_eq(nw_kube_cache_replace(c, NW_KUBE_PDBS, NULL), NW_OK);
    ck_assert_int_eq(nw_kube_cache_replace(c, NW_KUBE_PDBS, cJSON_CreateArray()), NW_OK);
    ck_assert_uint_eq(nw_kube_cache_generation(c), g1);
    nw_kube_cache_mark_unsynced(c, NW_KUBE_PDBS);
    uint64_t g2 = nw_kube_cache_generation(c);
    ck_assert_int_eq(nw_kube_cache_replace(c, NW_KUBE_PDBS, NULL), NW_OK);
    ck_assert_uint_gt(nw_kube_cache_generation(c), g2);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_NODES, named("n1", "1", NULL)), NW_OK);
    uint64_t g3 = nw_kube_cache_generation(c);
    ck_assert_int_eq(nw_kube_cache_replace(c, NW_KUBE_NODES, NULL), NW_OK);
    ck_assert_uint_gt(nw_kube_cache_generation(c), g3);
    ck_assert_uint_eq(nw_kube_cache_count(c, NW_KUBE_NODES), 0);
    nw_kube_cache_free(c);
}
END_TEST

/* New objects wait in a small sorted vector before they join the kind's in one merge (at
 * a snapshot, or once 512 wait): many more than that between two snapshots, in shuffled
 * order, changed and removed while waiting or after joining, leave every snapshot with each
 * pod once, in key order, at its last version, the removed ones gone. */
#define BN 1400
static void check_burst(const nw_kube_snap_t *s, const int *rv)
{
    size_t want = 0;
    for (int i = 0; i < BN; i++)
        want += rv[i] > 0;
    ck_assert_uint_eq(nw_kube_cache_snap_count(s, NW_KUBE_PODS), want);
    for (size_t i = 1; i < want; i++)
        ck_assert(strcmp(nw_kube_cache_snap_at(s, NW_KUBE_PODS, i - 1)->key,
                         nw_kube_cache_snap_at(s, NW_KUBE_PODS, i)->key) < 0);
    for (int i = 0; i < BN; i++) {
        char name[16], rvs[16];
        snprintf(name, sizeof name, "p%04d", i);
        const nw_kube_obj_t *o = nw_kube_cache_snap_get(s, NW_KUBE_PODS, "a", name);
        if (rv[i] <= 0) {
            ck_assert_ptr_null(o);
            continue;
        }
        ck_assert_ptr_nonnull(o);
        snprintf(rvs, sizeof rvs, "%d", rv[i]);
        ck_assert_str_eq(o->rv, rvs);
    }
}

START_TEST(many_new_objects_between_snapshots)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    int rv[BN] = {0}, order[BN], serial = 1;
    unsigned seed = 5;
    for (int i = 0; i < BN; i++)
        order[i] = i;
    for (int i = BN - 1; i > 0; i--) {
        int j = (int)(rand_r(&seed) % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    char name[16], rvs[16];
    for (int round = 0; round < 2; round++) {
        /* 1,100 new pods (round 1: some of them removed in round 0) */
        for (int k = 0; k < 1100; k++) {
            int i = order[(k + round * 300) % BN];
            if (rv[i] > 0)
                continue;
            snprintf(name, sizeof name, "p%04d", i);
            rv[i] = ++serial;
            snprintf(rvs, sizeof rvs, "%d", rv[i]);
            ck_assert_int_eq(
                nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", name, rvs, "", "Pending", 1)),
                NW_OK);
        }
        /* changes and removals among the waiting and the merged ones */
        for (int k = 0; k < 400; k++) {
            int i = (int)(rand_r(&seed) % BN);
            if (rv[i] <= 0)
                continue;
            snprintf(name, sizeof name, "p%04d", i);
            snprintf(rvs, sizeof rvs, "%d", ++serial);
            cJSON *j = pod("a", name, rvs, k % 2 ? "n1" : "", "Running", 0);
            if (k % 3 == 0) {
                ck_assert_int_eq(nw_kube_cache_remove(c, NW_KUBE_PODS, j), NW_OK);
                cJSON_Delete(j);
                rv[i] = 0;
            } else {
                ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, j), NW_OK);
                rv[i] = serial;
            }
        }
        nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
        check_burst(s, rv);
        nw_kube_cache_snap_release(s);
    }
    nw_kube_cache_free(c);
}
END_TEST

/* Nodes and NodeClaims are decoded on ingest: the record is on the object, its fields
 * index the object, and one that does not decode is refused as a nameless one is. */
START_TEST(nodes_and_claims_carry_records)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    ck_assert_int_eq(
        nw_kube_cache_upsert(c, NW_KUBE_NODES,
                             named("n1", "1",
                                   ",\"spec\":{\"providerID\":\"aws:///z/i-1\",\"taints\":[{"
                                   "\"key\":\"k\",\"effect\":\"NoSchedule\"}]},\"status\":{"
                                   "\"allocatable\":{\"cpu\":\"2\"},\"conditions\":[{"
                                   "\"type\":\"Ready\",\"status\":\"True\"}]}")),
        NW_OK);
    ck_assert_int_eq(
        nw_kube_cache_upsert(c, NW_KUBE_NODECLAIMS,
                             named("c1", "2",
                                   ",\"status\":{\"providerID\":\"aws:///z/i-1\",\"nodeName\":"
                                   "\"n1\"}")),
        NW_OK);
    /* a malformed quantity: refused, the store unchanged */
    ck_assert_int_ne(
        nw_kube_cache_upsert(c, NW_KUBE_NODES,
                             named("n2", "3", ",\"status\":{\"capacity\":{\"cpu\":\"x\"}}")),
        NW_OK);
    ck_assert_uint_eq(nw_kube_cache_count(c, NW_KUBE_NODES), 1);
    /* ... and a version that does not decode takes the one before it out, as a relist
     * would leave it out */
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_NODES, named("n3", "4", NULL)), NW_OK);
    ck_assert_uint_eq(nw_kube_cache_count(c, NW_KUBE_NODES), 2);
    ck_assert_int_ne(
        nw_kube_cache_upsert(c, NW_KUBE_NODES,
                             named("n3", "5", ",\"status\":{\"allocatable\":{\"cpu\":[]}}")),
        NW_OK);
    ck_assert_uint_eq(nw_kube_cache_count(c, NW_KUBE_NODES), 1);
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    const nw_kube_obj_t *n = nw_kube_cache_snap_get(s, NW_KUBE_NODES, NULL, "n1");
    ck_assert_ptr_nonnull(n);
    ck_assert_ptr_nonnull(n->node);
    ck_assert_ptr_null(n->nodeclaim);
    ck_assert_ptr_null(n->json); /* records only: a write that needs the JSON GETs it */
    ck_assert_str_eq(n->node->m.name, "n1");
    ck_assert_int_eq(n->node->ready, NW_NODE_COND_TRUE);
    ck_assert_uint_eq(n->node->m.taints.n, 1);
    ck_assert_int_eq(nw_resources_get_or_zero(&n->node->allocatable, "cpu").milli, 2000);
    ck_assert_ptr_eq(nw_kube_cache_snap_node_by_provider_id(s, "aws:///z/i-1"), n);
    const nw_kube_obj_t *nc = nw_kube_cache_snap_get(s, NW_KUBE_NODECLAIMS, NULL, "c1");
    ck_assert_ptr_nonnull(nc->nodeclaim);
    ck_assert_ptr_null(nc->node);
    ck_assert_str_eq(nc->nodeclaim->node_name, "n1");
    ck_assert_ptr_eq(nw_kube_cache_snap_nodeclaim_by_provider_id(s, "aws:///z/i-1"), nc);
    nw_kube_cache_snap_release(s);
    nw_kube_cache_free(c);
}
END_TEST

static cJSON *pod_in(const char *name, const char *rv, bool pending)
{
    char b[1024];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\",\"uid\":\"u-%s\","
             "\"resourceVersion\":\"%s\"},\"spec\":{%s},\"status\":{\"phase\":"
             "\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"%s\","
             "\"reason\":\"%s\"}]}}",
             name, name, rv, pending ? "" : "\"nodeName\":\"n1\"", pending ? "False" : "True",
             pending ? "Unschedulable" : "");
    cJSON *o = cJSON_Parse(b);
    ck_assert_ptr_nonnull(o);
    return o;
}

static int64_t since_of(nw_kube_cache_t *c, const char *name)
{
    nw_kube_snap_t *s = nw_kube_cache_snapshot(c);
    const nw_kube_obj_t *o = nw_kube_cache_snap_get(s, NW_KUBE_PODS, "ns", name);
    ck_assert_ptr_nonnull(o);
    int64_t v = o->pending_since;
    nw_kube_cache_snap_release(s);
    return v;
}

/* A pod's arrival (pending_since) is when the cache first saw it pending, on the cache's
 * clock: kept while updates leave it pending (and across a relist), reset once it was not
 * pending, 0 for a pod that is not pending. */
START_TEST(pending_since_is_the_arrival)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    nw_clock_fake_t clk;
    nw_clock_fake_init(&clk, INT64_C(1796040000) * NW_NS_PER_SEC);
    nw_kube_cache_set_clock(c, &clk.base);
    int64_t t0 = nw_clock_mono(&clk.base);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod_in("a", "1", true)), NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod_in("b", "1", false)), NW_OK);
    ck_assert_int_eq(since_of(c, "a"), t0);
    ck_assert_int_eq(since_of(c, "b"), 0);
    nw_clock_fake_advance(&clk, 3 * NW_NS_PER_SEC);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod_in("a", "2", true)), NW_OK);
    ck_assert_int_eq(since_of(c, "a"), t0); /* still pending: the same arrival */
    /* a relist keeps the arrival of a pod pending before it; a new one arrives now */
    cJSON *items = cJSON_CreateArray();
    cJSON_AddItemToArray(items, pod_in("a", "3", true));
    cJSON_AddItemToArray(items, pod_in("b", "3", true));
    ck_assert_int_eq(nw_kube_cache_replace(c, NW_KUBE_PODS, items), NW_OK);
    ck_assert_int_eq(since_of(c, "a"), t0);
    ck_assert_int_eq(since_of(c, "b"), t0 + 3 * NW_NS_PER_SEC);
    /* bound, then pending again: a new arrival */
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod_in("a", "4", false)), NW_OK);
    ck_assert_int_eq(since_of(c, "a"), 0);
    nw_clock_fake_advance(&clk, NW_NS_PER_SEC);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod_in("a", "5", true)), NW_OK);
    ck_assert_int_eq(since_of(c, "a"), t0 + 4 * NW_NS_PER_SEC);
    nw_kube_cache_free(c);
}
END_TEST

/* Each node's pods generation moves with a change to a pod bound to it (added, changed,
 * moved away, removed) and with a relist of pods, and not with other nodes' changes; an
 * older snapshot answers "changed after me". */
START_TEST(node_pods_generation)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    nw_kube_snap_t *s0 = nw_kube_cache_snapshot(c);
    ck_assert_uint_eq(nw_kube_cache_snap_node_pods_gen(s0, "n1"), 0);
    nw_kube_cache_snap_release(s0);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p1", "1", "n1", "Running", 0)),
                     NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p2", "2", "n2", "Running", 0)),
                     NW_OK);
    nw_kube_snap_t *s1 = nw_kube_cache_snapshot(c);
    uint64_t g1 = nw_kube_cache_snap_node_pods_gen(s1, "n1");
    uint64_t g2 = nw_kube_cache_snap_node_pods_gen(s1, "n2");
    ck_assert_uint_gt(g1, 0);
    ck_assert_uint_gt(g2, g1);
    ck_assert_uint_le(g2, nw_kube_cache_snap_generation(s1));
    ck_assert_uint_eq(nw_kube_cache_snap_node_pods_gen(s1, "n9"), 0);
    /* a node's own change; another kind's change moves nothing */
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p1", "3", "n1", "Failed", 0)),
                     NW_OK);
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_NODES, named("n2", "4", NULL)), NW_OK);
    nw_kube_snap_t *s2 = nw_kube_cache_snapshot(c);
    uint64_t g1b = nw_kube_cache_snap_node_pods_gen(s2, "n1");
    ck_assert_uint_gt(g1b, g2);
    ck_assert_uint_eq(nw_kube_cache_snap_node_pods_gen(s2, "n2"), g2);
    ck_assert_uint_eq(nw_kube_cache_snap_node_pods_gen(s1, "n1"), UINT64_MAX);
    ck_assert_uint_eq(nw_kube_cache_snap_node_pods_gen(s1, "n2"), g2);
    /* the batched lookup answers each node as the single one does, the older snapshot's
     * "changed after me" included */
    const char *names[] = {"n2", "n1", "n9"};
    uint64_t got[3] = {7, 7, 7};
    nw_kube_cache_snap_node_pods_gens(s1, names, 3, got);
    ck_assert_uint_eq(got[0], g2);
    ck_assert_uint_eq(got[1], UINT64_MAX);
    ck_assert_uint_eq(got[2], 0);
    nw_kube_cache_snap_node_pods_gens(s2, names, 3, got);
    ck_assert_uint_eq(got[0], g2);
    ck_assert_uint_eq(got[1], g1b);
    ck_assert_uint_eq(got[2], 0);
    /* a pod moved from n2 to n3 changes both; a removal its node */
    ck_assert_int_eq(nw_kube_cache_upsert(c, NW_KUBE_PODS, pod("a", "p2", "5", "n3", "Running", 0)),
                     NW_OK);
    nw_kube_snap_t *s3 = nw_kube_cache_snapshot(c);
    ck_assert_uint_gt(nw_kube_cache_snap_node_pods_gen(s3, "n2"), g1b);
    ck_assert_uint_eq(nw_kube_cache_snap_node_pods_gen(s3, "n3"),
                      nw_kube_cache_snap_node_pods_gen(s3, "n2"));
    ck_assert_uint_eq(nw_kube_cache_snap_node_pods_gen(s3, "n1"), g1b);
    cJSON *gone = pod("a", "p1", "6", "n1", "Failed", 0);
    ck_assert_int_eq(nw_kube_cache_remove(c, NW_KUBE_PODS, gone), NW_OK);
    cJSON_Delete(gone);
    nw_kube_snap_t *s4 = nw_kube_cache_snapshot(c);
    ck_assert_uint_eq(nw_kube_cache_snap_node_pods_gen(s4, "n1"),
                      nw_kube_cache_snap_generation(s4));
    /* a relist: every node's pods count as changed, a node never seen too */
    ck_assert_int_eq(nw_kube_cache_replace(c, NW_KUBE_PODS, cJSON_CreateArray()), NW_OK);
    nw_kube_snap_t *s5 = nw_kube_cache_snapshot(c);
    uint64_t g5 = nw_kube_cache_snap_generation(s5);
    ck_assert_uint_eq(nw_kube_cache_snap_node_pods_gen(s5, "n2"), g5);
    ck_assert_uint_eq(nw_kube_cache_snap_node_pods_gen(s5, "n9"), g5);
    nw_kube_cache_snap_node_pods_gens(s5, names, 3, got);
    ck_assert_uint_eq(got[0], g5);
    ck_assert_uint_eq(got[1], g5);
    ck_assert_uint_eq(got[2], g5);
    nw_kube_cache_snap_release(s5);
    nw_kube_cache_snap_release(s4);
    nw_kube_cache_snap_release(s3);
    nw_kube_cache_snap_release(s2);
    nw_kube_cache_snap_release(s1);
    nw_kube_cache_free(c);
}
END_TEST

START_TEST(wait_times_out)
{
    nw_kube_cache_t *c = nw_kube_cache_new(NULL);
    uint64_t g = nw_kube_cache_generation(c);
    ck_assert_uint_eq(nw_kube_cache_wait(c, g, 10), g);
    ck_assert_int_eq(nw_kube_cache_wait_synced(c, 10), 0);
    nw_kube_cache_free(c);
}
END_TEST

Suite *nw_kube_cache_suite(void)
{
    Suite *s = suite_create("kube_cache");
    TCase *tc = tcase_create("cache");
    tcase_add_test(tc, pending_predicate);
    tcase_add_test(tc, store_and_indexes);
    tcase_add_test(tc, pods_by_phase);
    tcase_add_test(tc, node_pods_generation);
    tcase_add_test(tc, replace_and_sync);
    tcase_add_test(tc, concurrent_readers);
    tcase_add_test(tc, retired_freed_when_snapshots_released);
    tcase_add_test(tc, held_object_outlives_its_snapshot);
    tcase_add_test(tc, wait_times_out);
    tcase_add_test(tc, nodes_and_claims_carry_records);
    tcase_add_test(tc, pending_since_is_the_arrival);
    tcase_add_test(tc, random_changes_keep_vectors_and_snapshots);
    tcase_add_test(tc, many_new_objects_between_snapshots);
    tcase_add_test(tc, empty_relist_of_an_empty_kind_is_no_change);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
