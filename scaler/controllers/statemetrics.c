/* scaler/controllers/statemetrics.c — Karpenter's state gauges (see statemetrics.h). */
#include "scaler/controllers/statemetrics.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/resources.h"
#include "common/strs.h"
#include "scaler/metrics/kmetrics.h"

#define REBUILD_NS (5 * NW_NS_PER_SEC)

/* A pod seen Pending: found again by namespace and name (an index lookup, so a tick
 * costs the pods waiting, not every pod), the same pod only if the uid matches. */
typedef struct {
    char *ns, *name, *uid;
} waiting_t;

struct nw_statemetrics {
    nw_ctl_deps_t *deps;
    pthread_mutex_t mu;
    nw_series_t *cur; /* under mu */
    int64_t next_mono;
    int built;
    waiting_t *pending; /* pods seen Pending and not Ready yet */
    size_t npending;
    int64_t unsynced_since; /* mono ns the state went out of sync, 0 in sync */
    nw_series_t *pods;      /* karpenter_pods_state, changed incrementally (pods_state) */
    nw_kube_snap_t *prev;   /* the snapshot m->pods was last brought up to date with */
};

nw_statemetrics_t *nw_statemetrics_new(nw_ctl_deps_t *deps)
{
    nw_statemetrics_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    if (pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m);
        return NULL;
    }
    m->deps = deps;
    m->pods = nw_series_new(); /* NULL: the family stays empty */
    return m;
}

static void free_pending(waiting_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].ns);
        free(v[i].name);
        free(v[i].uid);
    }
    free(v);
}

void nw_statemetrics_free(nw_statemetrics_t *m)
{
    if (!m)
        return;
    nw_series_free(m->cur);
    nw_series_free(m->pods);
    nw_kube_cache_snap_release(m->prev);
    free_pending(m->pending, m->npending);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* ---- resources ---- */

/* Karpenter's value of a quantity: cpu in cores, the others their Value() (rounded up). */
static double value_of(const char *name, int64_t milli)
{
    if (strcmp(name, "cpu") == 0)
        return (double)milli / 1000.0;
    return (double)(milli / 1000 + (milli % 1000 > 0));
}

static void add_json(nw_resources_t *acc, const cJSON *obj)
{
    nw_resources_t r;
    nw_resources_init(&r);
    if (obj && nw_resources_from_json(&r, obj, NULL, NULL) == NW_OK)
        /* out of range or memory: the gauge is short by this object */
        (void)nw_resources_add(acc, &r, NULL);
    nw_resources_cleanup(&r);
}

/* A pod's requests or limits (which: "requests" / "limits"): containers summed, at least
 * each init container's, plus the overhead (requests only). */
static void pod_resources(const nw_pod_t *pod, const char *which, nw_resources_t *out)
{
    const cJSON *spec = pod->spec, *c;
    nw_resources_t sum;
    nw_resources_init(&sum);
    cJSON_ArrayForEach(c, nw_json_get(spec, "containers"))
    {
        add_json(&sum, nw_json_get(nw_json_get(c, "resources"), which));
    }
    cJSON_ArrayForEach(c, nw_json_get(spec, "initContainers"))
    {
        nw_resources_t one;
        nw_resources_init(&one);
        add_json(&one, nw_json_get(nw_json_get(c, "resources"), which));
        (void)nw_resources_max(&sum, &one, NULL);
        nw_resources_cleanup(&one);
    }
    if (strcmp(which, "requests") == 0)
        add_json(&sum, nw_json_get(spec, "overhead"));
    (void)nw_resources_add(out, &sum, NULL);
    nw_resources_cleanup(&sum);
}

static bool is_daemon(const nw_pod_t *pod)
{
    const char *k = nw_json_str(cJSON_GetArrayItem(pod->owners, 0), "kind");
    return k && strcmp(k, "DaemonSet") == 0;
}

static bool terminal(const nw_kube_obj_t *p)
{
    return p->phase && (strcmp(p->phase, "Succeeded") == 0 || strcmp(p->phase, "Failed") == 0);
}

/* Each resource of r as a series of d with the node's labels and resource_type. */
static void set_resources(nw_series_t *g, const nw_series_desc_t *d, const char **values,
                          const nw_resources_t *r)
{
    for (size_t i = 0; i < nw_resources_len(r); i++) {
        const char *name = nw_resources_name_at(r, i);
        char rt[128];
        nw_kmetrics_resource_type(name, rt, sizeof rt);
        values[nw_kmetrics_nnode_labels + 3] = rt;
        nw_series_set(g, d, values, value_of(name, nw_resources_at(r, i).milli));
    }
}

static const char *label_of(const cJSON *o, const char *k)
{
    const char *v = nw_json_str(nw_json_get(nw_json_get(o, "metadata"), "labels"), k);
    return v ? v : "";
}

static void node_gauges(nw_series_t *g, const nw_kube_snap_t *s, const nw_kube_obj_t *n,
                        int64_t now, nw_resources_t *cl_alloc, nw_resources_t *cl_req)
{
    const char *values[NW_SERIES_MAX_LABELS];
    for (int i = 0; i < nw_kmetrics_nnode_labels; i++)
        values[i] = label_of(n->json, nw_kmetrics_node_label_keys[i]);
    const char *phase = nw_json_str_at(n->json, "status.phase");
    int managed = n->provider_id && *n->provider_id &&
                  nw_kube_cache_snap_nodeclaim_by_provider_id(s, n->provider_id) != NULL;
    values[nw_kmetrics_nnode_labels] = n->name;
    values[nw_kmetrics_nnode_labels + 1] = phase ? phase : "";
    values[nw_kmetrics_nnode_labels + 2] = managed ? "true" : "false";
    nw_resources_t alloc, cap, req, lim, dreq, dlim;
    nw_resources_t *all[] = {&alloc, &cap, &req, &lim, &dreq, &dlim};
    for (size_t i = 0; i < 6; i++)
        nw_resources_init(all[i]);
    add_json(&alloc, nw_json_get(nw_json_get(n->json, "status"), "allocatable"));
    add_json(&cap, nw_json_get(nw_json_get(n->json, "status"), "capacity"));
    const nw_kube_obj_t *const *pods = NULL;
    size_t np = nw_kube_cache_snap_pods_on_node(s, n->name, &pods);
    for (size_t i = 0; i < np; i++) {
        if (terminal(pods[i]))
            continue;
        pod_resources(pods[i]->pod, "requests", &req);
        pod_resources(pods[i]->pod, "limits", &lim);
        if (is_daemon(pods[i]->pod)) {
            pod_resources(pods[i]->pod, "requests", &dreq);
            pod_resources(pods[i]->pod, "limits", &dlim);
        }
    }
    /* system overhead: capacity - allocatable, for what the capacity lists */
    nw_resources_t over;
    nw_resources_init(&over);
    for (size_t i = 0; i < nw_resources_len(&cap); i++) {
        const char *name = nw_resources_name_at(&cap, i);
        nw_quantity_t q = nw_resources_at(&cap, i);
        q.milli -= nw_resources_get_or_zero(&alloc, name).milli;
        (void)nw_resources_set(&over, name, q, NULL);
    }
    set_resources(g, &NW_KMETRICS_NODES_ALLOCATABLE, values, &alloc);
    set_resources(g, &NW_KMETRICS_NODES_POD_REQUESTS, values, &req);
    set_resources(g, &NW_KMETRICS_NODES_POD_LIMITS, values, &lim);
    set_resources(g, &NW_KMETRICS_NODES_DAEMON_REQUESTS, values, &dreq);
    set_resources(g, &NW_KMETRICS_NODES_DAEMON_LIMITS, values, &dlim);
    set_resources(g, &NW_KMETRICS_NODES_SYSTEM_OVERHEAD, values, &over);
    int64_t created = 0;
    const char *ct = nw_json_str_at(n->json, "metadata.creationTimestamp");
    if (ct && nw_clock_time_parse(ct, &created) == NW_OK)
        nw_series_set(g, &NW_KMETRICS_NODES_LIFETIME, values, (double)(now - created) / 1e9);
    (void)nw_resources_add(cl_alloc, &alloc, NULL);
    (void)nw_resources_add(cl_req, &req, NULL);
    nw_resources_cleanup(&over);
    for (size_t i = 0; i < 6; i++)
        nw_resources_cleanup(all[i]);
}

static void utilization(nw_series_t *g, const nw_resources_t *alloc, const nw_resources_t *req)
{
    for (size_t i = 0; i < nw_resources_len(alloc); i++) {
        const char *name = nw_resources_name_at(alloc, i);
        int64_t a = nw_resources_at(alloc, i).milli, u = nw_resources_get_or_zero(req, name).milli;
        if (value_of(name, a) == 0)
            continue;
        char rt[128];
        nw_kmetrics_resource_type(name, rt, sizeof rt);
        const char *v[] = {rt};
        nw_series_set(g, &NW_KMETRICS_CLUSTER_UTILIZATION, v, 100.0 * (double)u / (double)a);
    }
}

static void pool_resources(nw_series_t *g, const nw_series_desc_t *d, const char *pool,
                           const cJSON *obj)
{
    nw_resources_t r;
    nw_resources_init(&r);
    add_json(&r, obj);
    for (size_t i = 0; i < nw_resources_len(&r); i++) {
        const char *name = nw_resources_name_at(&r, i);
        char rt[128];
        nw_kmetrics_resource_type(name, rt, sizeof rt);
        const char *v[] = {rt, pool};
        nw_series_set(g, d, v, value_of(name, nw_resources_at(&r, i).milli));
    }
    nw_resources_cleanup(&r);
}

/* ---- pods ---- */

static bool ready_since(const nw_pod_t *pod, int64_t *at)
{
    /* the first Ready=True condition with a readable lastTransitionTime */
    for (int i = 0; i < pod->nconds; i++) {
        const nw_pod_cond_t *c = &pod->conds[i];
        if (strcmp(c->type, "Ready") == 0 && c->status == NW_POD_COND_TRUE) {
            *at = c->since;
            return c->since != 0;
        }
    }
    return false;
}

/* karpenter_pods_state of pod p in snapshot s: set, or removed (!set). */
static void pod_state(nw_series_t *g, const nw_kube_snap_t *s, const nw_kube_obj_t *p, bool set)
{
    char owner[512] = "";
    const cJSON *o = cJSON_GetArrayItem(p->pod->owners, 0);
    if (o) {
        char kind[128];
        nw_kmetrics_resource_type(nw_json_str(o, "kind") ? nw_json_str(o, "kind") : "", kind,
                                  sizeof kind);
        for (char *k = kind; *k; k++)
            if (*k == '_')
                *k = '-'; /* strings.ToLower only */
        const char *av = nw_json_str(o, "apiVersion"), *on = nw_json_str(o, "name");
        snprintf(owner, sizeof owner, "/apis/%s/namespaces/%s/%ss/%s", av ? av : "", p->ns, kind,
                 on ? on : "");
    }
    const char *nn = p->node_name ? p->node_name : "";
    const nw_kube_obj_t *node = *nn ? nw_kube_cache_snap_get(s, NW_KUBE_NODES, "", nn) : NULL;
    const cJSON *nj = node ? node->json : NULL;
    int64_t at = 0;
    const char *np = label_of(nj, NW_LABEL_NODEPOOL);
    const char *v[] = {p->name,
                       p->ns,
                       owner,
                       nn,
                       *nn ? "true" : "false",
                       np,
                       label_of(nj, "topology.kubernetes.io/zone"),
                       label_of(nj, "kubernetes.io/arch"),
                       label_of(nj, NW_LABEL_CAPACITY_TYPE),
                       label_of(nj, "node.kubernetes.io/instance-type"),
                       p->phase ? p->phase : "",
                       ready_since(p->pod, &at) ? "true" : "false",
                       *np ? "true" : "false"};
    if (set)
        nw_series_set(g, &NW_KMETRICS_PODS_STATE, v, 1);
    else
        nw_series_remove(g, &NW_KMETRICS_PODS_STATE, v);
}

/* The names of the nodes that differ between two snapshots (added, removed, replaced),
 * sorted; their count. Objects are immutable, so an unchanged node is the same pointer. */
static size_t changed_nodes(const nw_kube_snap_t *a, const nw_kube_snap_t *b, const char ***out)
{
    size_t na = a ? nw_kube_cache_snap_count(a, NW_KUBE_NODES) : 0;
    size_t nb = nw_kube_cache_snap_count(b, NW_KUBE_NODES), i = 0, j = 0, k = 0;
    const char **v = calloc(na + nb + 1, sizeof *v);
    *out = v;
    if (!v)
        return 0;
    while (i < na || j < nb) {
        const nw_kube_obj_t *x = i < na ? nw_kube_cache_snap_at(a, NW_KUBE_NODES, i) : NULL;
        const nw_kube_obj_t *y = j < nb ? nw_kube_cache_snap_at(b, NW_KUBE_NODES, j) : NULL;
        int c = !x ? 1 : !y ? -1 : strcmp(x->key, y->key);
        if (c < 0) {
            v[k++] = x->name;
            i++;
        } else if (c > 0) {
            v[k++] = y->name;
            j++;
        } else {
            if (x != y)
                v[k++] = y->name;
            i++;
            j++;
        }
    }
    return k; /* in key order, and a node's key is its name */
}

static bool in_sorted(const char *const *v, size_t n, const char *name)
{
    return n && *name && bsearch(&name, v, n, sizeof *v, nw_strs_cmp) != NULL;
}

/* karpenter_pods_state, kept in m->pods and changed only where the cluster changed: a
 * merge of the previous snapshot's pods with this one's (both sorted by key). A pod is
 * set again when its object changed or its node did (the node's labels are in its
 * series); a pod that went is removed. The previous snapshot is held until the next
 * pass, so the old objects are there to name the series to remove. */
static void pods_state(nw_statemetrics_t *m, const nw_kube_snap_t *s)
{
    const nw_kube_snap_t *a = m->prev;
    const char **chg = NULL;
    size_t nchg = changed_nodes(a, s, &chg);
    size_t na = a ? nw_kube_cache_snap_count(a, NW_KUBE_PODS) : 0;
    size_t nb = nw_kube_cache_snap_count(s, NW_KUBE_PODS), i = 0, j = 0;
    while (i < na || j < nb) {
        const nw_kube_obj_t *x = i < na ? nw_kube_cache_snap_at(a, NW_KUBE_PODS, i) : NULL;
        const nw_kube_obj_t *y = j < nb ? nw_kube_cache_snap_at(s, NW_KUBE_PODS, j) : NULL;
        int c = !x ? 1 : !y ? -1 : strcmp(x->key, y->key);
        if (c < 0) {
            pod_state(m->pods, a, x, false);
            i++;
        } else if (c > 0) {
            pod_state(m->pods, s, y, true);
            j++;
        } else {
            if (x != y || in_sorted(chg, nchg, x->node_name) ||
                in_sorted(chg, nchg, y->node_name)) {
                pod_state(m->pods, a, x, false);
                pod_state(m->pods, s, y, true);
            }
            i++;
            j++;
        }
    }
    free(chg);
}

static bool waiting_add(waiting_t *v, size_t *n, const nw_kube_obj_t *p)
{
    waiting_t w = {strdup(p->ns), strdup(p->name), strdup(p->uid)};
    if (!w.ns || !w.name || !w.uid) {
        free(w.ns);
        free(w.name);
        free(w.uid);
        return false;
    }
    v[(*n)++] = w;
    return true;
}

/* Startup durations: pods seen Pending, then Ready (creation to the Ready transition).
 * Each tick looks at the pods Pending now (the phase index) and at the ones it waited for
 * (by name): never at every pod. */
static void pod_startups(nw_statemetrics_t *m, const nw_kube_snap_t *s)
{
    const nw_kube_obj_t *const *pend;
    size_t np = nw_kube_cache_snap_pods_in_phase(s, "Pending", &pend), k = 0;
    waiting_t *next = calloc(np + m->npending + 1, sizeof *next);
    if (!next)
        return;
    for (size_t i = 0; i < np; i++)
        if (pend[i]->uid[0])
            (void)waiting_add(next, &k, pend[i]);
    for (size_t i = 0; i < m->npending; i++) {
        const waiting_t *w = &m->pending[i];
        const nw_kube_obj_t *p = nw_kube_cache_snap_get(s, NW_KUBE_PODS, w->ns, w->name);
        if (!p || strcmp(p->uid, w->uid) != 0 || strcmp(p->phase, "Pending") == 0)
            continue; /* gone, replaced, or still Pending (listed above) */
        int64_t ready = 0, created = p->pod->created;
        if (!ready_since(p->pod, &ready))
            (void)waiting_add(next, &k, p); /* Running, not Ready yet: still waiting */
        else if (created && m->deps->series)
            nw_series_observe(m->deps->series, &NW_KMETRICS_PODS_STARTUP_DURATION, NULL,
                              (double)(ready - created) / 1e9);
    }
    free_pending(m->pending, m->npending);
    m->pending = next;
    m->npending = k;
}

/* ---- offerings ---- */

static void offerings(nw_series_t *g, nw_ctl_deps_t *c)
{
    const nw_catalog_t *cat =
        c->cloud && c->cloud->ops->catalog ? c->cloud->ops->catalog(c->cloud) : NULL;
    nw_ice_t *ice = c->cloud && c->cloud->ops->ice ? c->cloud->ops->ice(c->cloud) : NULL;
    int64_t mono = nw_clock_mono(c->clock);
    for (size_t i = 0; cat && i < nw_catalog_len(cat); i++) {
        const nw_itype_t *t = nw_catalog_at(cat, i);
        nw_offering_t o[NW_CATALOG_MAX_OFFERINGS];
        int n = nw_catalog_offerings(t, ice, mono, o, NW_CATALOG_MAX_OFFERINGS);
        for (int k = 0; k < n; k++) {
            const char *v[] = {t->name, o[k].capacity_type, o[k].zone};
            const char *r[] = {t->name, "reserved", o[k].zone};
            double av = nw_series_get(g, &NW_KMETRICS_OFFERING_AVAILABLE, v);
            nw_series_set(g, &NW_KMETRICS_OFFERING_AVAILABLE, v, av > 0 || o[k].available ? 1 : 0);
            nw_series_set(g, &NW_KMETRICS_OFFERING_PRICE, v, o[k].price);
            nw_series_set(g, &NW_KMETRICS_OFFERING_AVAILABLE, r, 0);
            nw_series_set(g, &NW_KMETRICS_OFFERING_PRICE, r, 0);
        }
    }
}

/* ---- the rebuild ---- */

/* karpenter_cluster_state_{node_count,synced,unsynced_time_seconds}
 * (kubernetes-sigs/karpenter pkg/controllers/state/cluster.go): the state's nodes are the
 * NodeClaims and the Nodes no NodeClaim claims by providerID; it is in sync once every kind
 * is listed and every live NodeClaim has its providerID (the launches are recorded). */
static void cluster_state(nw_statemetrics_t *m, nw_series_t *g, const nw_kube_snap_t *s)
{
    size_t count = nw_kube_cache_snap_count(s, NW_KUBE_NODECLAIMS);
    int synced = nw_kube_cache_snap_synced(s) && nw_ctl_claims_launched(s);
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODES); i++) {
        const nw_kube_obj_t *n = nw_kube_cache_snap_at(s, NW_KUBE_NODES, i);
        if (!n->provider_id[0] || !nw_kube_cache_snap_nodeclaim_by_provider_id(s, n->provider_id))
            count++;
    }
    int64_t mono = nw_clock_mono(m->deps->clock);
    if (synced)
        m->unsynced_since = 0;
    else if (!m->unsynced_since)
        m->unsynced_since = mono;
    nw_series_set(g, &NW_KMETRICS_CLUSTER_STATE_NODE_COUNT, NULL, (double)count);
    nw_series_set(g, &NW_KMETRICS_CLUSTER_STATE_SYNCED, NULL, synced ? 1 : 0);
    nw_series_set(g, &NW_KMETRICS_CLUSTER_STATE_UNSYNCED_TIME, NULL,
                  synced ? 0 : (double)(mono - m->unsynced_since) / 1e9);
}

void nw_statemetrics_rebuild(nw_statemetrics_t *m, const nw_kube_snap_t *s)
{
    nw_series_t *g = nw_series_new();
    if (!g)
        return;
    nw_ctl_deps_t *c = m->deps;
    int64_t now = nw_clock_now(c->clock);
    nw_resources_t cl_alloc, cl_req;
    nw_resources_init(&cl_alloc);
    nw_resources_init(&cl_req);
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODES); i++)
        node_gauges(g, s, nw_kube_cache_snap_at(s, NW_KUBE_NODES, i), now, &cl_alloc, &cl_req);
    utilization(g, &cl_alloc, &cl_req);
    nw_resources_cleanup(&cl_alloc);
    nw_resources_cleanup(&cl_req);
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODEPOOLS); i++) {
        const nw_kube_obj_t *p = nw_kube_cache_snap_at(s, NW_KUBE_NODEPOOLS, i);
        pool_resources(g, &NW_KMETRICS_NODEPOOLS_LIMIT, p->name,
                       nw_json_get(nw_json_get(p->json, "spec"), "limits"));
        pool_resources(g, &NW_KMETRICS_NODEPOOLS_USAGE, p->name,
                       nw_json_get(nw_json_get(p->json, "status"), "resources"));
    }
    if (m->pods) {
        pods_state(m, s);
        nw_kube_cache_snap_release(m->prev);
        m->prev = nw_kube_cache_snap_hold(s);
    }
    offerings(g, c);
    cluster_state(m, g, s);
    pthread_mutex_lock(&m->mu);
    nw_series_t *old = m->cur;
    m->cur = g;
    pthread_mutex_unlock(&m->mu);
    nw_series_free(old);
    m->built = 1;
}

void nw_statemetrics_tick(nw_statemetrics_t *m, const nw_kube_snap_t *s)
{
    if (!m)
        return;
    /* pod startups on every tick (a pod Pending for less than 5 s counts too) */
    pod_startups(m, s);
    int64_t mono = nw_clock_mono(m->deps->clock);
    if (m->built && mono < m->next_mono)
        return;
    m->next_mono = mono + REBUILD_NS;
    nw_statemetrics_rebuild(m, s);
}

nw_rc_t nw_statemetrics_write(nw_statemetrics_t *m, nw_buf_t *out)
{
    pthread_mutex_lock(&m->mu);
    nw_series_t *empty = m->cur && m->pods ? NULL : nw_series_new();
    nw_rc_t rc = m->cur && m->pods ? NW_OK : empty ? NW_OK : NW_ENOMEM;
    /* the families in their order, each from the registry that holds it */
    for (size_t i = 0; i < nw_kmetrics_nstate && rc == NW_OK; i++) {
        const nw_series_desc_t *d = nw_kmetrics_state[i];
        nw_series_t *from = d == &NW_KMETRICS_PODS_STATE ? m->pods : m->cur;
        rc = nw_series_write(from ? from : empty, &d, 1, out);
    }
    nw_series_free(empty);
    pthread_mutex_unlock(&m->mu);
    return rc;
}
