/* scaler/controllers/statemetrics_nodes.c — the per-node state gauges (see
 * statemetrics_int.h). */
#include "scaler/controllers/statemetrics_int.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "common/strs.h"
#include "scaler/metrics/kmetrics.h"

/* The per-node families, in the order of a gauge record's values. */
enum { F_ALLOC, F_REQ, F_LIM, F_DREQ, F_DLIM, F_OVER, NFAM };
static const nw_series_desc_t *const FAMILY[NFAM] = {
    &NW_KMETRICS_NODES_ALLOCATABLE,   &NW_KMETRICS_NODES_POD_REQUESTS,
    &NW_KMETRICS_NODES_POD_LIMITS,    &NW_KMETRICS_NODES_DAEMON_REQUESTS,
    &NW_KMETRICS_NODES_DAEMON_LIMITS, &NW_KMETRICS_NODES_SYSTEM_OVERHEAD};

/* One series of a node family: its resource_type (interned, m->rts) and value. */
typedef struct {
    const char *rt;
    double v;
} gval_t;

/* One Node's gauges as a scrape writes them. Immutable once published; counted, and freed
 * by whichever of the reconcile thread and a scrape lets go of it last. The label strings
 * live in the same block, after the values. */
typedef struct {
    _Atomic int refs;
    const char *labels[NW_SERIES_MAX_LABELS]; /* the well-known labels, node_name, phase,
                                                 managed; the slot after is resource_type's */
    bool aged;                                /* creationTimestamp read */
    int64_t created;                          /* epoch ns */
    uint16_t off[NFAM + 1];                   /* family f: vals[off[f] .. off[f + 1]) */
    gval_t vals[];
} gnode_t;

/* The requests and limits of one pod spec: pods share their spec (api/pod.h, interned),
 * so the replicas of a ReplicaSet are summed from one parse. Counted by the node entries
 * whose sums include it; dropped at zero, so an entry's spec is always one that a pod of
 * the snapshot of the last update (held by the owner) points to, and its address cannot
 * have been reused. */
typedef struct spec_memo {
    const cJSON *spec;
    size_t refs;
    struct spec_memo *next;
    nw_resources_t req, lim;
} spec_memo_t;

/* A pod a node's sums counted: its spec's memo (NULL: finished, not counted; one
 * reference otherwise) and whether it is a DaemonSet pod. obj is only compared, never
 * read: an unchanged pod is the same object from one snapshot to the next. */
typedef struct {
    const nw_kube_obj_t *obj;
    struct spec_memo *sm;
    bool daemon;
} podref_t;

/* A Node the gauges show (reconcile thread; views read only g, under the owner's mutex). */
typedef struct {
    gnode_t *g;
    const nw_kube_obj_t *obj;  /* the Node it was built from (in the held snapshot) */
    bool managed;              /* a NodeClaim has its providerID */
    nw_resources_t alloc, req; /* what the cluster sums hold of this node */
    nw_resources_t over;       /* its system overhead */
    podref_t *pods;            /* the pods bound to it, in key order */
    size_t npods;
} node_t;

/* A resource name and its resource_type (owned by the first name that has it). */
typedef struct {
    char *name, *own;
    const char *rt;
} rtname_t;

struct nw_statemetrics_nodes {
    node_t **v; /* sorted by name; views read only their g, under the owner's mutex */
    size_t n;
    bool redo;            /* the next update starts from nothing (after out of memory) */
    spec_memo_t **spec_b; /* hash buckets by spec pointer */
    size_t spec_nb, spec_n;
    rtname_t *rts;
    size_t nrts, caprts;
    nw_resources_t cl_alloc, cl_req; /* the sums of every node's alloc and req */
    bool sums_exact;                 /* they equal the sums in name order (no add failed) */
};

static void gnode_drop(gnode_t *g)
{
    if (g && atomic_fetch_sub(&g->refs, 1) == 1)
        free(g);
}

static void spec_release(nw_statemetrics_nodes_t *m, spec_memo_t *sm);

static void pods_release(nw_statemetrics_nodes_t *m, podref_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].sm)
            spec_release(m, v[i].sm);
    free(v);
}

static void node_free(nw_statemetrics_nodes_t *m, node_t *n)
{
    if (!n)
        return;
    gnode_drop(n->g);
    pods_release(m, n->pods, n->npods);
    nw_resources_cleanup(&n->alloc);
    nw_resources_cleanup(&n->req);
    nw_resources_cleanup(&n->over);
    free(n);
}

/* A pod spec's requests or limits (which: "requests" / "limits"): containers summed, at
 * least each init container's, plus the overhead (requests only). */
static void spec_resources(const cJSON *spec, const char *which, nw_resources_t *out)
{
    const cJSON *c;
    nw_resources_t sum;
    nw_resources_init(&sum);
    cJSON_ArrayForEach(c, nw_json_get(spec, "containers"))
    {
        nw_statemetrics_add_json(&sum, nw_json_get(nw_json_get(c, "resources"), which));
    }
    cJSON_ArrayForEach(c, nw_json_get(spec, "initContainers"))
    {
        nw_resources_t one;
        nw_resources_init(&one);
        nw_statemetrics_add_json(&one, nw_json_get(nw_json_get(c, "resources"), which));
        (void)nw_resources_max(&sum, &one, NULL);
        nw_resources_cleanup(&one);
    }
    if (strcmp(which, "requests") == 0)
        nw_statemetrics_add_json(&sum, nw_json_get(spec, "overhead"));
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

/* ---- the spec memo ---- */

static size_t spec_hash(const cJSON *spec, size_t nb)
{
    return (size_t)(((uint64_t)(uintptr_t)spec >> 4) * 0x9E3779B97F4A7C15ULL >> 20) & (nb - 1);
}

/* The memo of spec with one more reference; NULL on out of memory. */
static spec_memo_t *spec_get(nw_statemetrics_nodes_t *m, const cJSON *spec)
{
    if (m->spec_nb) {
        for (spec_memo_t *e = m->spec_b[spec_hash(spec, m->spec_nb)]; e; e = e->next)
            if (e->spec == spec) {
                e->refs++;
                return e;
            }
    }
    if (m->spec_n >= m->spec_nb) { /* grow: at most one memo per bucket on average */
        size_t nb = m->spec_nb ? 2 * m->spec_nb : 256;
        spec_memo_t **b = calloc(nb, sizeof *b);
        if (!b)
            return NULL;
        for (size_t i = 0; i < m->spec_nb; i++)
            for (spec_memo_t *e = m->spec_b[i], *next; e; e = next) {
                next = e->next;
                size_t h = spec_hash(e->spec, nb);
                e->next = b[h];
                b[h] = e;
            }
        free(m->spec_b);
        m->spec_b = b;
        m->spec_nb = nb;
    }
    spec_memo_t *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->spec = spec;
    e->refs = 1;
    nw_resources_init(&e->req);
    nw_resources_init(&e->lim);
    spec_resources(spec, "requests", &e->req);
    spec_resources(spec, "limits", &e->lim);
    size_t h = spec_hash(spec, m->spec_nb);
    e->next = m->spec_b[h];
    m->spec_b[h] = e;
    m->spec_n++;
    return e;
}

static void spec_release(nw_statemetrics_nodes_t *m, spec_memo_t *sm)
{
    if (--sm->refs)
        return;
    for (spec_memo_t **pp = &m->spec_b[spec_hash(sm->spec, m->spec_nb)]; *pp; pp = &(*pp)->next)
        if (*pp == sm) {
            *pp = sm->next;
            break;
        }
    m->spec_n--;
    nw_resources_cleanup(&sm->req);
    nw_resources_cleanup(&sm->lim);
    free(sm);
}

/* ---- reading a Node (its record, api/node.h) ---- */

static const char *node_label(const nw_kube_obj_t *n, const char *key)
{
    const char *v = nw_node_meta_label(&n->node->m, key);
    return v ? v : "";
}

static const char *node_phase(const nw_kube_obj_t *n)
{
    return n->node->phase;
}

static bool node_created(const nw_kube_obj_t *n, int64_t *at)
{
    const char *ct = n->node->m.created_text;
    return ct[0] && nw_clock_time_parse(ct, at) == NW_OK;
}

/* status.allocatable or status.capacity added to out (out of range or memory: the gauge
 * is short by this node). */
static void node_resources(const nw_resources_t *which, nw_resources_t *out)
{
    (void)nw_resources_add(out, which, NULL);
}

/* ---- one node's gauges ---- */

/* The resource_type of a resource name, interned for the life of m (NULL on OOM). */
static const char *rt_of(nw_statemetrics_nodes_t *m, const char *name)
{
    for (size_t i = 0; i < m->nrts; i++)
        if (strcmp(m->rts[i].name, name) == 0)
            return m->rts[i].rt;
    char rt[128];
    nw_kmetrics_resource_type(name, rt, sizeof rt);
    const char *same = NULL; /* two names of one resource_type share its string */
    for (size_t i = 0; i < m->nrts && !same; i++)
        if (strcmp(m->rts[i].rt, rt) == 0)
            same = m->rts[i].rt;
    if (m->nrts == m->caprts) {
        size_t cap = m->caprts ? 2 * m->caprts : 16;
        rtname_t *v = realloc(m->rts, cap * sizeof *v);
        if (!v)
            return NULL;
        m->rts = v;
        m->caprts = cap;
    }
    rtname_t e = {strdup(name), same ? NULL : strdup(rt), same};
    if (!e.rt)
        e.rt = e.own;
    if (!e.name || !e.rt) {
        free(e.name);
        free(e.own);
        return NULL;
    }
    m->rts[m->nrts++] = e;
    return e.rt;
}

/* The gauges of a node: the label values (nl of them), the six families' resources. As a
 * registry would keep them: a resource_type that two names share is one series, where the
 * first was, with the last value. NULL on out of memory. */
static gnode_t *gnode_new(nw_statemetrics_nodes_t *m, const char *const *labels, int nl,
                          const nw_resources_t *r, bool aged, int64_t created)
{
    size_t nv = 0, ns = 0;
    for (int f = 0; f < NFAM; f++)
        nv += nw_resources_len(&r[f]);
    for (int i = 0; i < nl; i++)
        ns += strlen(labels[i]) + 1;
    if (nv > UINT16_MAX)
        return NULL;
    gnode_t *g = malloc(sizeof *g + nv * sizeof g->vals[0] + ns);
    if (!g)
        return NULL;
    atomic_init(&g->refs, 1);
    char *p = (char *)&g->vals[nv];
    for (int i = 0; i < nl; i++) {
        size_t len = strlen(labels[i]) + 1;
        memcpy(p, labels[i], len);
        g->labels[i] = p;
        p += len;
    }
    g->aged = aged;
    g->created = created;
    size_t k = 0;
    for (int f = 0; f < NFAM; f++) {
        g->off[f] = (uint16_t)k;
        for (size_t i = 0; i < nw_resources_len(&r[f]); i++) {
            const char *name = nw_resources_name_at(&r[f], i);
            const char *rt = rt_of(m, name);
            if (!rt) {
                free(g);
                return NULL;
            }
            double v = nw_statemetrics_value(name, nw_resources_at(&r[f], i).milli);
            size_t j = g->off[f];
            while (j < k && g->vals[j].rt != rt)
                j++;
            if (j < k)
                g->vals[j].v = v;
            else
                g->vals[k++] = (gval_t){rt, v};
        }
    }
    g->off[NFAM] = (uint16_t)k;
    return g;
}

/* What a node's gauges read of the Node itself (labels, allocatable, overhead, age), into
 * labels and r; from old's when old was built from this same object and its NodeClaim
 * still says the same (managed), which is the case of every node whose pods alone changed. */
static void node_own(const nw_kube_snap_t *s, const nw_kube_obj_t *n, const node_t *old,
                     const char **labels, nw_resources_t *r, bool *aged, int64_t *created)
{
    const int nn = nw_kmetrics_nnode_labels;
    bool managed = n->provider_id && *n->provider_id &&
                   nw_kube_cache_snap_nodeclaim_by_provider_id(s, n->provider_id) != NULL;
    if (old && old->obj == n && old->managed == managed &&
        nw_resources_copy(&r[F_ALLOC], &old->alloc, NULL) == NW_OK &&
        nw_resources_copy(&r[F_OVER], &old->over, NULL) == NW_OK) {
        memcpy(labels, old->g->labels, (size_t)(nn + 3) * sizeof *labels);
        *aged = old->g->aged;
        *created = old->g->created;
        return;
    }
    for (int i = 0; i < nn; i++)
        labels[i] = node_label(n, nw_kmetrics_node_label_keys[i]);
    labels[nn] = n->name;
    labels[nn + 1] = node_phase(n);
    labels[nn + 2] = managed ? "true" : "false";
    nw_resources_t cap;
    nw_resources_init(&cap);
    nw_resources_cleanup(&r[F_ALLOC]);
    nw_resources_cleanup(&r[F_OVER]);
    node_resources(&n->node->allocatable, &r[F_ALLOC]);
    node_resources(&n->node->capacity, &cap);
    /* system overhead: capacity - allocatable, for what the capacity lists */
    for (size_t i = 0; i < nw_resources_len(&cap); i++) {
        const char *name = nw_resources_name_at(&cap, i);
        nw_quantity_t q = nw_resources_at(&cap, i);
        q.milli -= nw_resources_get_or_zero(&r[F_ALLOC], name).milli;
        (void)nw_resources_set(&r[F_OVER], name, q, NULL);
    }
    nw_resources_cleanup(&cap);
    *aged = node_created(n, created);
}

/* Pod p of a node being built again: what old counted of it when old has this same
 * object (looked for at *at, where the pod after the last one found would be, then
 * everywhere: pointers only, no pod is read), else read now; one more memo reference.
 * false on out of memory. */
static bool pod_ref(nw_statemetrics_nodes_t *m, const node_t *old, const nw_kube_obj_t *p,
                    size_t *at, podref_t *out)
{
    const podref_t *o = NULL;
    if (old) {
        if (*at < old->npods && old->pods[*at].obj == p)
            o = &old->pods[*at];
        for (size_t x = 0; !o && x < old->npods; x++)
            if (old->pods[x].obj == p)
                o = &old->pods[x];
        if (o)
            *at = (size_t)(o - old->pods) + 1;
    }
    if (o) {
        *out = *o;
        if (out->sm)
            out->sm->refs++;
        return true;
    }
    *out = (podref_t){p, NULL, false};
    if (terminal(p))
        return true;
    if (!(out->sm = spec_get(m, p->pod->spec)))
        return false;
    out->daemon = is_daemon(p->pod);
    return true;
}

/* Node n of snapshot s into out (every field; out's previous contents are the caller's),
 * reusing what old (the entry of the same name, NULL for a new node) read of an unchanged
 * Node. false on out of memory, with nothing held. */
static bool node_build(nw_statemetrics_nodes_t *m, const nw_kube_snap_t *s, const nw_kube_obj_t *n,
                       const node_t *old, node_t *out)
{
    const char *labels[NW_SERIES_MAX_LABELS];
    nw_resources_t r[NFAM];
    for (int f = 0; f < NFAM; f++)
        nw_resources_init(&r[f]);
    bool aged = false;
    int64_t created = 0;
    node_own(s, n, old, labels, r, &aged, &created);
    const nw_kube_obj_t *const *pods = NULL;
    size_t np = nw_kube_cache_snap_pods_on_node(s, n->name, &pods), at = 0, done = 0;
    podref_t *refs = np ? malloc(np * sizeof *refs) : NULL;
    bool ok = !np || refs;
    for (; ok && done < np; done++) {
        if (!(ok = pod_ref(m, old, pods[done], &at, &refs[done])))
            break;
        const podref_t *pr = &refs[done];
        if (!pr->sm)
            continue;
        (void)nw_resources_add(&r[F_REQ], &pr->sm->req, NULL);
        (void)nw_resources_add(&r[F_LIM], &pr->sm->lim, NULL);
        if (pr->daemon) {
            (void)nw_resources_add(&r[F_DREQ], &pr->sm->req, NULL);
            (void)nw_resources_add(&r[F_DLIM], &pr->sm->lim, NULL);
        }
    }
    const int nl = nw_kmetrics_nnode_labels + 3;
    gnode_t *g = ok ? gnode_new(m, labels, nl, r, aged, created) : NULL;
    if (g && nw_resources_copy(&out->alloc, &r[F_ALLOC], NULL) == NW_OK &&
        nw_resources_copy(&out->req, &r[F_REQ], NULL) == NW_OK &&
        nw_resources_copy(&out->over, &r[F_OVER], NULL) == NW_OK) {
        out->g = g;
        out->obj = n;
        out->managed = strcmp(labels[nl - 1], "true") == 0;
        out->pods = refs;
        out->npods = np;
    } else {
        free(g);
        g = NULL;
        pods_release(m, refs, done);
    }
    for (int f = 0; f < NFAM; f++)
        nw_resources_cleanup(&r[f]);
    return g != NULL;
}

/* ---- what changed between two snapshots ---- */

typedef struct {
    const nw_kube_snap_t *s;
    const char **v; /* the names of the nodes to build again (borrowed from the snapshots) */
    size_t n, cap;
    bool oom, nodes, claims, pools; /* which kinds changed */
} dirty_t;

static void dirty_add(dirty_t *d, const char *name)
{
    if (!name || !*name)
        return;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        const char **v = realloc(d->v, cap * sizeof *v);
        if (!v) {
            d->oom = true;
            return;
        }
        d->v = v;
        d->cap = cap;
    }
    d->v[d->n++] = name;
}

/* Call fn for each object of kind k that differs between a and b: added (x NULL), removed
 * (y NULL) or replaced. Both are sorted by key and held, so an object in both is the same
 * pointer and an equal pointer is the same object. */
static void diff_kind(const nw_kube_snap_t *a, const nw_kube_snap_t *b, nw_kube_kind_t k,
                      void (*fn)(dirty_t *d, const nw_kube_obj_t *x, const nw_kube_obj_t *y),
                      dirty_t *d)
{
    size_t na = nw_kube_cache_snap_count(a, k), nb = nw_kube_cache_snap_count(b, k), i = 0, j = 0;
    while (i < na || j < nb) {
        const nw_kube_obj_t *x = i < na ? nw_kube_cache_snap_at(a, k, i) : NULL;
        const nw_kube_obj_t *y = j < nb ? nw_kube_cache_snap_at(b, k, j) : NULL;
        if (x == y) {
            i++;
            j++;
            continue;
        }
        int c = !x ? 1 : !y ? -1 : strcmp(x->key, y->key);
        fn(d, c <= 0 ? x : NULL, c >= 0 ? y : NULL);
        i += c <= 0;
        j += c >= 0;
    }
}

static void node_changed(dirty_t *d, const nw_kube_obj_t *x, const nw_kube_obj_t *y)
{
    d->nodes = true;
    dirty_add(d, x ? x->name : y->name);
}

/* A NodeClaim decides whether the Node with its providerID is managed. */
static void claim_changed(dirty_t *d, const nw_kube_obj_t *x, const nw_kube_obj_t *y)
{
    d->claims = true;
    for (int i = 0; i < 2; i++) {
        const nw_kube_obj_t *c = i ? y : x;
        const nw_kube_obj_t *n = c && c->provider_id[0]
                                     ? nw_kube_cache_snap_node_by_provider_id(d->s, c->provider_id)
                                     : NULL;
        if (n)
            dirty_add(d, n->name);
    }
}

/* The Nodes whose pods changed from prev to s. Only a Node of s can be built again (a
 * pod bound to a name that is no Node there is counted nowhere; a Node gone is dirty by
 * the Nodes' diff), and the cache keeps the generation of each node's last pod change, so
 * the Nodes are asked instead of the two pod vectors being diffed: a pod event costs a
 * lookup per Node, not a walk of every pod. A generation the cache cannot tell (after the
 * snapshot, or its table dropped) counts as changed. */
static void pods_dirty(const nw_kube_snap_t *prev, const nw_kube_snap_t *s, dirty_t *d)
{
    uint64_t since = nw_kube_cache_snap_generation(prev);
    if (nw_kube_cache_snap_kind_generation(s, NW_KUBE_PODS) ==
        nw_kube_cache_snap_kind_generation(prev, NW_KUBE_PODS))
        return; /* no pod changed since prev */
    size_t n = nw_kube_cache_snap_count(s, NW_KUBE_NODES);
    const char **names = calloc(n + 1, sizeof *names);
    uint64_t *gens = calloc(n + 1, sizeof *gens);
    if (names && gens) { /* every Node's generation under one take of the cache mutex */
        for (size_t i = 0; i < n; i++)
            names[i] = nw_kube_cache_snap_at(s, NW_KUBE_NODES, i)->name;
        nw_kube_cache_snap_node_pods_gens(s, names, n, gens);
    }
    for (size_t i = 0; i < n; i++) {
        const char *name = nw_kube_cache_snap_at(s, NW_KUBE_NODES, i)->name;
        if ((names && gens ? gens[i] : nw_kube_cache_snap_node_pods_gen(s, name)) > since)
            dirty_add(d, name);
    }
    free(names);
    free(gens);
}

static void pool_changed(dirty_t *d, const nw_kube_obj_t *x, const nw_kube_obj_t *y)
{
    d->pools = true;
}

static const char *node_name(const node_t *n)
{
    return n->g->labels[nw_kmetrics_nnode_labels];
}

/* The nodes to build again: what changed from prev to s, or every node (prev NULL). */
static void find_dirty(nw_statemetrics_nodes_t *m, const nw_kube_snap_t *prev,
                       const nw_kube_snap_t *s, dirty_t *d)
{
    d->s = s;
    if (!prev) {
        d->nodes = d->claims = d->pools = true;
        for (size_t i = 0; i < nw_kube_cache_snap_count(s, NW_KUBE_NODES); i++)
            dirty_add(d, nw_kube_cache_snap_at(s, NW_KUBE_NODES, i)->name);
        for (size_t i = 0; i < m->n; i++)
            dirty_add(d, node_name(m->v[i]));
    } else {
        diff_kind(prev, s, NW_KUBE_NODES, node_changed, d);
        diff_kind(prev, s, NW_KUBE_NODECLAIMS, claim_changed, d);
        pods_dirty(prev, s, d);
        diff_kind(prev, s, NW_KUBE_NODEPOOLS, pool_changed, d);
    }
    if (d->n)
        qsort(d->v, d->n, sizeof *d->v, nw_strs_cmp);
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++)
        if (!k || strcmp(d->v[k - 1], d->v[i]) != 0)
            d->v[k++] = d->v[i];
    d->n = k;
}

/* ---- the cluster sums ---- */

/* Take a node's old contribution out (old, may be NULL) and put its new one in (new, may
 * be NULL). An addition that fails (out of range, memory) leaves the sums to be recounted. */
static void sums_move(nw_statemetrics_nodes_t *m, const node_t *old, const node_t *new)
{
    if (!m->sums_exact)
        return;
    bool ok = true;
    if (old)
        ok = nw_resources_sub(&m->cl_alloc, &old->alloc, NULL) == NW_OK &&
             nw_resources_sub(&m->cl_req, &old->req, NULL) == NW_OK;
    if (ok && new)
        ok = nw_resources_add(&m->cl_alloc, &new->alloc, NULL) == NW_OK &&
             nw_resources_add(&m->cl_req, &new->req, NULL) == NW_OK;
    m->sums_exact = ok;
}

/* The sums counted again over every node in name order, as a rebuild from scratch adds
 * them (a node whose addition fails is left out). */
static void sums_recount(nw_statemetrics_nodes_t *m, node_t *const *v, size_t n)
{
    nw_resources_cleanup(&m->cl_alloc);
    nw_resources_cleanup(&m->cl_req);
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        ok = nw_resources_add(&m->cl_alloc, &v[i]->alloc, NULL) == NW_OK && ok;
        ok = nw_resources_add(&m->cl_req, &v[i]->req, NULL) == NW_OK && ok;
    }
    m->sums_exact = ok;
}

static void utilization(nw_series_t *g, const nw_resources_t *alloc, const nw_resources_t *req)
{
    for (size_t i = 0; i < nw_resources_len(alloc); i++) {
        const char *name = nw_resources_name_at(alloc, i);
        int64_t a = nw_resources_at(alloc, i).milli, u = nw_resources_get_or_zero(req, name).milli;
        if (nw_statemetrics_value(name, a) == 0)
            continue;
        char rt[128];
        nw_kmetrics_resource_type(name, rt, sizeof rt);
        const char *v[] = {rt};
        nw_series_set(g, &NW_KMETRICS_CLUSTER_UTILIZATION, v, 100.0 * (double)u / (double)a);
    }
}

/* An update to publish: the new list, the kept nodes whose gauges change (swap[i] gets
 * g_new[i]; g_old[i] is what it had), and the nodes that went. */
struct nw_statemetrics_nodes_pub {
    node_t **v, **old_v;
    size_t n;
    node_t **swap;
    gnode_t **g_new, **g_old;
    size_t nswap;
    node_t **gone;
    size_t ngone;
    size_t built; /* nodes built (new or again) */
};

/* Build again the nodes named in d (sorted) from s into p. The cluster sums follow. false
 * when out of memory before any change. */
static bool nodes_update(nw_statemetrics_nodes_t *m, const nw_kube_snap_t *s, const dirty_t *d,
                         nw_statemetrics_nodes_pub_t *p)
{
    size_t cap = m->n + d->n;
    p->v = malloc((cap ? cap : 1) * sizeof *p->v);
    p->swap = malloc((d->n ? d->n : 1) * sizeof *p->swap);
    p->g_new = malloc((d->n ? d->n : 1) * sizeof *p->g_new);
    p->g_old = malloc((d->n ? d->n : 1) * sizeof *p->g_old);
    p->gone = malloc((d->n ? d->n : 1) * sizeof *p->gone);
    if (!p->v || !p->swap || !p->g_new || !p->g_old || !p->gone)
        return false;
    size_t i = 0, j = 0, k = 0;
    while (i < m->n || j < d->n) {
        int c = i >= m->n ? 1 : j >= d->n ? -1 : strcmp(node_name(m->v[i]), d->v[j]);
        if (c < 0) {
            p->v[k++] = m->v[i++];
            continue;
        }
        node_t *old = c == 0 ? m->v[i++] : NULL;
        const nw_kube_obj_t *o = nw_kube_cache_snap_get(s, NW_KUBE_NODES, "", d->v[j++]);
        if (!o) { /* gone */
            if (old) {
                sums_move(m, old, NULL);
                p->gone[p->ngone++] = old;
            }
            continue;
        }
        node_t b = {0};
        nw_resources_init(&b.alloc);
        nw_resources_init(&b.req);
        nw_resources_init(&b.over);
        node_t *nn = old ? NULL : malloc(sizeof *nn);
        if ((!old && !nn) || !node_build(m, s, o, old, &b)) {
            free(nn);
            nw_resources_cleanup(&b.alloc);
            nw_resources_cleanup(&b.req);
            nw_resources_cleanup(&b.over);
            m->redo = true; /* out of memory: the old gauges stay until the next update */
            if (old) {      /* its pods and Node may go with the snapshot it was built from */
                old->obj = NULL;
                pods_release(m, old->pods, old->npods);
                old->pods = NULL;
                old->npods = 0;
                p->v[k++] = old;
            }
            continue;
        }
        sums_move(m, old, &b);
        p->built++;
        if (old) { /* keep the entry; its gauges are swapped when published */
            pods_release(m, old->pods, old->npods);
            old->pods = b.pods;
            old->npods = b.npods;
            nw_resources_cleanup(&old->alloc);
            nw_resources_cleanup(&old->req);
            nw_resources_cleanup(&old->over);
            old->alloc = b.alloc; /* moved, not copied */
            old->req = b.req;
            old->over = b.over;
            old->obj = b.obj;
            old->managed = b.managed;
            p->swap[p->nswap] = old;
            p->g_new[p->nswap++] = b.g;
            p->v[k++] = old;
        } else {
            *nn = b;
            p->v[k++] = nn;
        }
    }
    p->n = k;
    if (!m->sums_exact)
        sums_recount(m, p->v, k);
    return true;
}

static void pub_free(nw_statemetrics_nodes_pub_t *p)
{
    if (!p)
        return;
    free(p->v);
    free(p->swap);
    free(p->g_new);
    free(p->g_old);
    free(p->gone);
    free(p);
}

/* ---- the interface (statemetrics_int.h) ---- */

nw_statemetrics_nodes_t *nw_statemetrics_nodes_new(void)
{
    nw_statemetrics_nodes_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    nw_resources_init(&m->cl_alloc);
    nw_resources_init(&m->cl_req);
    return m;
}

void nw_statemetrics_nodes_free(nw_statemetrics_nodes_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        node_free(m, m->v[i]);
    free(m->v);
    free(m->spec_b); /* empty now: every memo was released with its nodes */
    for (size_t i = 0; i < m->nrts; i++) {
        free(m->rts[i].name);
        free(m->rts[i].own);
    }
    free(m->rts);
    nw_resources_cleanup(&m->cl_alloc);
    nw_resources_cleanup(&m->cl_req);
    free(m);
}

nw_rc_t nw_statemetrics_nodes_update(nw_statemetrics_nodes_t *m, const nw_kube_snap_t *prev,
                                     const nw_kube_snap_t *s, nw_statemetrics_changed_t *what,
                                     nw_statemetrics_nodes_pub_t **pub)
{
    *pub = NULL;
    if (m->redo || !prev) { /* every node again, the sums counted again */
        prev = NULL;
        m->sums_exact = false;
    }
    m->redo = false;
    dirty_t d = {0};
    find_dirty(m, prev, s, &d);
    nw_statemetrics_nodes_pub_t *p = calloc(1, sizeof *p);
    if (d.oom || !p || !nodes_update(m, s, &d, p)) {
        free(d.v);
        pub_free(p);
        m->redo = true;
        return NW_ENOMEM;
    }
    *what = (nw_statemetrics_changed_t){d.nodes, d.claims, d.pools};
    free(d.v);
    *pub = p;
    return NW_OK;
}

bool nw_statemetrics_nodes_pub_changed(const nw_statemetrics_nodes_pub_t *p)
{
    return p->built || p->ngone;
}

void nw_statemetrics_nodes_publish(nw_statemetrics_nodes_t *m, nw_statemetrics_nodes_pub_t *p)
{
    p->old_v = m->v;
    m->v = p->v;
    m->n = p->n;
    p->v = NULL;
    for (size_t i = 0; i < p->nswap; i++) {
        p->g_old[i] = p->swap[i]->g;
        p->swap[i]->g = p->g_new[i];
    }
}

void nw_statemetrics_nodes_settle(nw_statemetrics_nodes_t *m, nw_statemetrics_nodes_pub_t *p)
{
    free(p->old_v);
    for (size_t i = 0; i < p->nswap; i++)
        gnode_drop(p->g_old[i]);
    for (size_t i = 0; i < p->ngone; i++)
        node_free(m, p->gone[i]);
    pub_free(p);
}

void nw_statemetrics_nodes_utilization(const nw_statemetrics_nodes_t *m, nw_series_t *g)
{
    utilization(g, &m->cl_alloc, &m->cl_req);
}

/* ---- views: what a scrape writes ---- */

struct nw_statemetrics_nodes_view {
    size_t n;
    gnode_t *g[]; /* one reference each, in name order */
};

nw_statemetrics_nodes_view_t *nw_statemetrics_nodes_view(const nw_statemetrics_nodes_t *m)
{
    nw_statemetrics_nodes_view_t *v = malloc(sizeof *v + m->n * sizeof v->g[0]);
    if (!v)
        return NULL;
    v->n = m->n;
    for (size_t i = 0; i < m->n; i++) {
        v->g[i] = m->v[i]->g;
        atomic_fetch_add(&v->g[i]->refs, 1);
    }
    return v;
}

void nw_statemetrics_nodes_view_free(nw_statemetrics_nodes_view_t *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++)
        gnode_drop(v->g[i]);
    free(v);
}

bool nw_statemetrics_nodes_family(const nw_series_desc_t *d)
{
    for (int f = 0; f < NFAM; f++)
        if (FAMILY[f] == d)
            return true;
    return d == &NW_KMETRICS_NODES_LIFETIME;
}

nw_rc_t nw_statemetrics_nodes_write(const nw_statemetrics_nodes_view_t *v,
                                    const nw_series_desc_t *d, int64_t now, nw_buf_t *out)
{
    int f = 0;
    while (f < NFAM && FAMILY[f] != d)
        f++;
    const int nl = nw_kmetrics_nnode_labels + 3;
    nw_rc_t rc = NW_OK;
    for (size_t i = 0; i < v->n && rc == NW_OK; i++) {
        const gnode_t *g = v->g[i];
        if (f == NFAM) { /* the lifetime */
            if (g->aged)
                rc = nw_series_write_sample(out, d, g->labels, (double)(now - g->created) / 1e9);
            continue;
        }
        const char *lv[NW_SERIES_MAX_LABELS];
        memcpy(lv, g->labels, (size_t)nl * sizeof *lv);
        for (size_t k = g->off[f]; k < g->off[f + 1] && rc == NW_OK; k++) {
            lv[nl] = g->vals[k].rt;
            rc = nw_series_write_sample(out, d, lv, g->vals[k].v);
        }
    }
    return rc;
}

static int cmp_gnode_name(const void *key, const void *elt)
{
    const gnode_t *g = *(gnode_t *const *)elt;
    return strcmp(key, g->labels[nw_kmetrics_nnode_labels]);
}

const char *const *nw_statemetrics_nodes_labels(const nw_statemetrics_nodes_view_t *v,
                                                const char *name)
{
    gnode_t *const *g = bsearch(name, v->g, v->n, sizeof v->g[0], cmp_gnode_name);
    return g ? (*g)->labels : NULL;
}
