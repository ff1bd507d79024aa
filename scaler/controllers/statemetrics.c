/* scaler/controllers/statemetrics.c — Karpenter's state gauges (see statemetrics.h); the
 * per-node ones are statemetrics_nodes.c's (statemetrics_int.h). */
#include "scaler/controllers/statemetrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strs.h"
#include "scaler/controllers/statemetrics_int.h"
#include "scaler/metrics/kmetrics.h"

#define PERIOD_NS (5 * NW_NS_PER_SEC) /* offerings; the unsynced time */

/* A pod seen Pending: found again by namespace and name (an index lookup, so a tick
 * costs the pods waiting, not every pod), the same pod only if the uid matches. */
typedef struct {
    char *ns, *name, *uid;
} waiting_t;

/* One family's text, as nw_series_write wrote it. Immutable once published; counted, and
 * freed by whichever of the reconcile thread and a scrape lets go of it last. */
typedef struct {
    _Atomic int refs;
    size_t len;
    char s[];
} text_t;

struct nw_statemetrics {
    nw_ctl_deps_t *deps;
    pthread_mutex_t mu;
    /* what a scrape reads, under mu */
    nw_statemetrics_nodes_t *nodes; /* the per-node gauges (its published part) */
    nw_kube_snap_t *prev;           /* the snapshot the gauges show (karpenter_pods_state is written
                                       from it); held */
    text_t **text;                  /* per family of nw_kmetrics_state: the families kept as text */
    /* the reconcile thread's */
    int64_t next_mono;
    int built;
    waiting_t *pending; /* pods seen Pending and not Ready yet */
    size_t npending;
    uint64_t startups_gen;  /* the pods' generation pod_startups last looked at (0: none) */
    int64_t unsynced_since; /* mono ns the state went out of sync, 0 in sync */
    uint64_t offer_fp;      /* the offerings' fingerprint when last written */
    bool offer_done;
};

nw_statemetrics_t *nw_statemetrics_new(nw_ctl_deps_t *deps)
{
    nw_statemetrics_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    if (!(m->text = calloc(nw_kmetrics_nstate, sizeof *m->text)) ||
        !(m->nodes = nw_statemetrics_nodes_new()) || pthread_mutex_init(&m->mu, NULL) != 0) {
        nw_statemetrics_nodes_free(m->nodes);
        free(m->text);
        free(m);
        return NULL;
    }
    m->deps = deps;
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

static void text_drop(text_t *t)
{
    if (t && atomic_fetch_sub(&t->refs, 1) == 1)
        free(t);
}

void nw_statemetrics_free(nw_statemetrics_t *m)
{
    if (!m)
        return;
    nw_statemetrics_nodes_free(m->nodes);
    for (size_t i = 0; i < nw_kmetrics_nstate; i++)
        text_drop(m->text[i]);
    free(m->text);
    nw_kube_cache_snap_release(m->prev);
    free_pending(m->pending, m->npending);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* ---- the families kept as text ---- */

/* The families ds[0..n) of registry r, each as text into text (per family of
 * nw_kmetrics_state; what was there is let go of). */
static void texts_of(nw_series_t *r, const nw_series_desc_t *const *ds, size_t n, text_t **text)
{
    for (size_t i = 0; i < n; i++) {
        size_t at = 0;
        while (at < nw_kmetrics_nstate && nw_kmetrics_state[at] != ds[i])
            at++;
        nw_buf_t b;
        nw_buf_init(&b, SIZE_MAX / 2);
        text_t *t = NULL;
        if (at < nw_kmetrics_nstate && r && nw_series_write(r, &ds[i], 1, &b) == NW_OK &&
            (t = malloc(sizeof *t + b.len + 1))) {
            atomic_init(&t->refs, 1);
            t->len = b.len;
            memcpy(t->s, b.data ? b.data : "", b.len + 1);
            text_drop(text[at]);
            text[at] = t;
        }
        nw_buf_cleanup(&b);
    }
}

static void utilization(nw_statemetrics_t *m, text_t **text)
{
    nw_series_t *g = nw_series_new();
    if (g)
        nw_statemetrics_nodes_utilization(m->nodes, g);
    const nw_series_desc_t *ds[] = {&NW_KMETRICS_CLUSTER_UTILIZATION};
    texts_of(g, ds, 1, text);
    nw_series_free(g);
}

static void pool_resources(nw_series_t *g, const nw_series_desc_t *d, const char *pool,
                           const cJSON *obj)
{
    nw_resources_t r;
    nw_resources_init(&r);
    nw_statemetrics_add_json(&r, obj);
    for (size_t i = 0; i < nw_resources_len(&r); i++) {
        const char *name = nw_resources_name_at(&r, i);
        char rt[128];
        nw_kmetrics_resource_type(name, rt, sizeof rt);
        const char *v[] = {rt, pool};
        nw_series_set(g, d, v, nw_statemetrics_value(name, nw_resources_at(&r, i).milli));
    }
    nw_resources_cleanup(&r);
}

static void nodepools(const nw_kube_snap_t *s, text_t **text)
{
    nw_series_t *g = nw_series_new();
    for (size_t i = 0; g && i < nw_kube_cache_snap_count(s, NW_KUBE_NODEPOOLS); i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(s, NW_KUBE_NODEPOOLS, i);
        pool_resources(g, &NW_KMETRICS_NODEPOOLS_LIMIT, o->name,
                       nw_json_get(nw_json_get(o->json, "spec"), "limits"));
        pool_resources(g, &NW_KMETRICS_NODEPOOLS_USAGE, o->name,
                       nw_json_get(nw_json_get(o->json, "status"), "resources"));
    }
    const nw_series_desc_t *ds[] = {&NW_KMETRICS_NODEPOOLS_LIMIT, &NW_KMETRICS_NODEPOOLS_USAGE};
    texts_of(g, ds, 2, text);
    nw_series_free(g);
}

/* FNV-1a over bytes: the offerings' fingerprint. */
static uint64_t fp_mix(uint64_t h, const void *p, size_t n)
{
    for (const unsigned char *c = p; n--; c++)
        h = (h ^ *c) * 1099511628211ULL;
    return h;
}

static uint64_t fp_str(uint64_t h, const char *s)
{
    return fp_mix(h, s, strlen(s) + 1);
}

/* The offerings, written into g (NULL: only their fingerprint, returned). */
static uint64_t offerings(nw_series_t *g, nw_ctl_deps_t *c)
{
    const nw_catalog_t *cat =
        c->cloud && c->cloud->ops->catalog ? c->cloud->ops->catalog(c->cloud) : NULL;
    nw_ice_t *ice = c->cloud && c->cloud->ops->ice ? c->cloud->ops->ice(c->cloud) : NULL;
    int64_t mono = nw_clock_mono(c->clock);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; cat && i < nw_catalog_len(cat); i++) {
        const nw_itype_t *t = nw_catalog_at(cat, i);
        nw_offering_t o[NW_CATALOG_MAX_OFFERINGS];
        int n = nw_catalog_offerings(t, ice, mono, o, NW_CATALOG_MAX_OFFERINGS);
        h = fp_str(h, t->name);
        for (int k = 0; k < n; k++) {
            if (!g) {
                char av = o[k].available ? 1 : 0;
                h = fp_mix(fp_str(fp_str(h, o[k].capacity_type), o[k].zone), &av, 1);
                h = fp_mix(h, &o[k].price, sizeof o[k].price);
                continue;
            }
            const char *v[] = {t->name, o[k].capacity_type, o[k].zone};
            const char *r[] = {t->name, "reserved", o[k].zone};
            double av = nw_series_get(g, &NW_KMETRICS_OFFERING_AVAILABLE, v);
            nw_series_set(g, &NW_KMETRICS_OFFERING_AVAILABLE, v, av > 0 || o[k].available ? 1 : 0);
            nw_series_set(g, &NW_KMETRICS_OFFERING_PRICE, v, o[k].price);
            nw_series_set(g, &NW_KMETRICS_OFFERING_AVAILABLE, r, 0);
            nw_series_set(g, &NW_KMETRICS_OFFERING_PRICE, r, 0);
        }
    }
    return h;
}

/* The offering families again when any offering changed since they were last written. */
static void offerings_update(nw_statemetrics_t *m, text_t **text)
{
    uint64_t fp = offerings(NULL, m->deps);
    if (m->offer_done && fp == m->offer_fp)
        return;
    nw_series_t *g = nw_series_new();
    if (!g)
        return;
    (void)offerings(g, m->deps);
    const nw_series_desc_t *ds[] = {&NW_KMETRICS_OFFERING_AVAILABLE, &NW_KMETRICS_OFFERING_PRICE};
    texts_of(g, ds, 2, text);
    nw_series_free(g);
    m->offer_fp = fp;
    m->offer_done = true;
}

/* karpenter_cluster_state_{node_count,synced,unsynced_time_seconds}
 * (kubernetes-sigs/karpenter pkg/controllers/state/cluster.go): the state's nodes are the
 * NodeClaims and the Nodes no NodeClaim claims by providerID; it is in sync once every kind
 * is listed and every live NodeClaim has its providerID (the launches are recorded). */
static void cluster_state(nw_statemetrics_t *m, const nw_kube_snap_t *s, text_t **text)
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
    nw_series_t *g = nw_series_new();
    if (!g)
        return;
    nw_series_set(g, &NW_KMETRICS_CLUSTER_STATE_NODE_COUNT, NULL, (double)count);
    nw_series_set(g, &NW_KMETRICS_CLUSTER_STATE_SYNCED, NULL, synced ? 1 : 0);
    nw_series_set(g, &NW_KMETRICS_CLUSTER_STATE_UNSYNCED_TIME, NULL,
                  synced ? 0 : (double)(mono - m->unsynced_since) / 1e9);
    const nw_series_desc_t *ds[] = {&NW_KMETRICS_CLUSTER_STATE_NODE_COUNT,
                                    &NW_KMETRICS_CLUSTER_STATE_SYNCED,
                                    &NW_KMETRICS_CLUSTER_STATE_UNSYNCED_TIME};
    texts_of(g, ds, 3, text);
    nw_series_free(g);
}

/* ---- an update ---- */

/* Make the update what a scrape sees (s: the snapshot it now shows, NULL: the same; pub:
 * the node gauges' update, NULL: none), then let go of what it replaced. */
static void publish(nw_statemetrics_t *m, const nw_kube_snap_t *s, nw_statemetrics_nodes_pub_t *pub,
                    text_t **text)
{
    nw_kube_snap_t *old_snap = NULL, *held = s ? nw_kube_cache_snap_hold(s) : NULL;
    pthread_mutex_lock(&m->mu);
    if (pub)
        nw_statemetrics_nodes_publish(m->nodes, pub);
    for (size_t i = 0; i < nw_kmetrics_nstate; i++)
        if (text[i]) {
            text_t *t = m->text[i];
            m->text[i] = text[i];
            text[i] = t;
        }
    if (held) {
        old_snap = m->prev;
        m->prev = held;
    }
    pthread_mutex_unlock(&m->mu);
    if (pub)
        nw_statemetrics_nodes_settle(m->nodes, pub);
    for (size_t i = 0; i < nw_kmetrics_nstate; i++)
        text_drop(text[i]);
    free(text);
    nw_kube_cache_snap_release(old_snap); /* after the memos of its pods went (settle) */
}

/* Bring the gauges up to date with s: the nodes, the utilization, the NodePools and the
 * cluster state where the cache changed since the last update; on a periodic update also
 * the offerings and the time out of sync. */
static void update(nw_statemetrics_t *m, const nw_kube_snap_t *s, bool periodic)
{
    bool changed = s != m->prev;
    if (!changed && !periodic)
        return;
    text_t **text = calloc(nw_kmetrics_nstate, sizeof *text);
    if (!text)
        return;
    nw_statemetrics_nodes_pub_t *pub = NULL;
    nw_statemetrics_changed_t what = {0};
    if (changed && nw_statemetrics_nodes_update(m->nodes, m->prev, s, &what, &pub) != NW_OK) {
        free(text); /* out of memory: nothing changed, the next update starts from nothing */
        return;
    }
    if (pub && (nw_statemetrics_nodes_pub_changed(pub) || !m->built))
        utilization(m, text);
    if (what.pools)
        nodepools(s, text);
    bool state = what.nodes || what.claims ||
                 (changed &&
                  (!m->prev || nw_kube_cache_snap_synced(s) != nw_kube_cache_snap_synced(m->prev)));
    if (periodic) {
        offerings_update(m, text);
        state = state || m->unsynced_since != 0;
    }
    if (state)
        cluster_state(m, s, text);
    publish(m, changed ? s : NULL, pub, text);
    m->built = 1;
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
    uint64_t gen = nw_kube_cache_snap_kind_generation(s, NW_KUBE_PODS);
    if (gen && gen == m->startups_gen)
        return; /* no pod changed since: nothing became Pending or Ready */
    const nw_kube_obj_t *const *pend;
    size_t np = nw_kube_cache_snap_pods_in_phase(s, "Pending", &pend), k = 0;
    waiting_t *next = calloc(np + m->npending + 1, sizeof *next);
    if (!next)
        return;
    m->startups_gen = gen;
    /* the pods still Pending keep their entry (moved over: a 5,000-pod scale-out's ticks
     * copied and freed 15,000 strings each, and looked up every pod that was Pending) */
    nw_strs_index_t ix = {0};
    bool indexed = m->npending && nw_strs_index_build(&ix, m->pending, m->npending,
                                                      sizeof *m->pending, offsetof(waiting_t, uid));
    for (size_t i = 0; i < np; i++) {
        if (!pend[i]->uid[0])
            continue;
        size_t at = indexed ? nw_strs_index_find(&ix, pend[i]->uid) : SIZE_MAX;
        waiting_t *w = at != SIZE_MAX ? &m->pending[at] : NULL;
        if (w && strcmp(w->ns, pend[i]->ns) == 0 && strcmp(w->name, pend[i]->name) == 0) {
            next[k++] = *w;
            *w = (waiting_t){0}; /* moved: not looked at below */
        } else
            (void)waiting_add(next, &k, pend[i]);
    }
    nw_strs_index_free(&ix);
    for (size_t i = 0; i < m->npending; i++) {
        const waiting_t *w = &m->pending[i];
        if (!w->uid)
            continue;
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

void nw_statemetrics_rebuild(nw_statemetrics_t *m, const nw_kube_snap_t *s)
{
    update(m, s, true);
}

void nw_statemetrics_tick(nw_statemetrics_t *m, const nw_kube_snap_t *s)
{
    if (!m)
        return;
    /* pod startups on every tick (a pod Pending for less than 5 s counts too) */
    pod_startups(m, s);
    int64_t mono = nw_clock_mono(m->deps->clock);
    bool periodic = !m->built || mono >= m->next_mono;
    if (periodic)
        m->next_mono = mono + PERIOD_NS;
    update(m, s, periodic);
}

/* ---- the page ---- */

static int label_index(const char *key)
{
    for (int i = 0; i < nw_kmetrics_nnode_labels; i++)
        if (strcmp(nw_kmetrics_node_label_keys[i], key) == 0)
            return i;
    return -1;
}

/* karpenter_pods_state of every pod of s, in key order, with its node's labels. */
static nw_rc_t write_pods(nw_buf_t *out, const nw_kube_snap_t *s,
                          const nw_statemetrics_nodes_view_t *nodes)
{
    const int at[] = {label_index(NW_LABEL_NODEPOOL), label_index(NW_LABEL_ZONE),
                      label_index(NW_LABEL_ARCH), label_index(NW_LABEL_CAPACITY_TYPE),
                      label_index(NW_LABEL_INSTANCE_TYPE)};
    nw_rc_t rc = NW_OK;
    for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_PODS) && rc == NW_OK; i++) {
        const nw_kube_obj_t *p = nw_kube_cache_snap_at(s, NW_KUBE_PODS, i);
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
            snprintf(owner, sizeof owner, "/apis/%s/namespaces/%s/%ss/%s", av ? av : "", p->ns,
                     kind, on ? on : "");
        }
        const char *nn = p->node_name ? p->node_name : "";
        const char *const *nl = *nn ? nw_statemetrics_nodes_labels(nodes, nn) : NULL;
        const char *l[5];
        for (int k = 0; k < 5; k++)
            l[k] = nl && at[k] >= 0 ? nl[at[k]] : "";
        int64_t since = 0;
        const char *v[] = {p->name,
                           p->ns,
                           owner,
                           nn,
                           *nn ? "true" : "false",
                           l[0],
                           l[1],
                           l[2],
                           l[3],
                           l[4],
                           p->phase ? p->phase : "",
                           ready_since(p->pod, &since) ? "true" : "false",
                           *l[0] ? "true" : "false"};
        rc = nw_series_write_sample(out, &NW_KMETRICS_PODS_STATE, v, 1);
    }
    return rc;
}

nw_rc_t nw_statemetrics_write(nw_statemetrics_t *m, nw_buf_t *out)
{
    /* take what the last update published, then write it without the lock: the reconcile
     * thread never waits for a scrape */
    text_t **text = calloc(nw_kmetrics_nstate, sizeof *text);
    nw_statemetrics_nodes_view_t *nodes = NULL;
    nw_kube_snap_t *s = NULL;
    pthread_mutex_lock(&m->mu);
    if (text && (nodes = nw_statemetrics_nodes_view(m->nodes))) {
        for (size_t i = 0; i < nw_kmetrics_nstate; i++)
            if ((text[i] = m->text[i]))
                atomic_fetch_add(&text[i]->refs, 1);
        s = m->prev ? nw_kube_cache_snap_hold(m->prev) : NULL;
    }
    pthread_mutex_unlock(&m->mu);
    nw_rc_t rc = nodes ? NW_OK : NW_ENOMEM;
    int64_t now = nw_clock_now(m->deps->clock);
    /* the families in their order, each from where it is kept */
    for (size_t i = 0; i < nw_kmetrics_nstate && rc == NW_OK; i++) {
        const nw_series_desc_t *d = nw_kmetrics_state[i];
        if (text[i]) {
            rc = nw_buf_add(out, text[i]->s, text[i]->len);
            continue;
        }
        rc = nw_series_write_header(out, d);
        if (rc == NW_OK && nw_statemetrics_nodes_family(d))
            rc = nw_statemetrics_nodes_write(nodes, d, now, out);
        else if (rc == NW_OK && d == &NW_KMETRICS_PODS_STATE && s)
            rc = write_pods(out, s, nodes);
    }
    for (size_t i = 0; text && i < nw_kmetrics_nstate; i++)
        text_drop(text[i]);
    free(text);
    nw_statemetrics_nodes_view_free(nodes);
    nw_kube_cache_snap_release(s);
    return rc;
}
