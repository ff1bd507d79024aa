/* scaler/kube/cache.c — stores (hash maps of refcounted immutable objects), snapshots. */
#include "scaler/kube/cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/jsonfreeze.h"
#include "common/log.h"

static const nw_kube_res_t *const kind_res[NW_KUBE_KINDS] = {
    &nw_kube_client_res_pods,           &nw_kube_client_res_nodes,
    &nw_kube_client_res_nodepools,      &nw_kube_client_res_ec2nodeclasses,
    &nw_kube_client_res_nodeclaims,     &nw_kube_client_res_pdbs,
    &nw_kube_client_res_daemonsets,     &nw_kube_client_res_pvs,
    &nw_kube_client_res_pvcs,           &nw_kube_client_res_storageclasses,
    &nw_kube_client_res_namespaces,     &nw_kube_client_res_csinodes,
    &nw_kube_client_res_resourceclaims, &nw_kube_client_res_resourceclaimtemplates,
    &nw_kube_client_res_deviceclasses,
};

const nw_kube_res_t *nw_kube_cache_kind_res(nw_kube_kind_t k)
{
    return k < NW_KUBE_KINDS ? kind_res[k] : NULL;
}

const char *nw_kube_cache_kind_name(nw_kube_kind_t k)
{
    return k < NW_KUBE_KINDS ? kind_res[k]->plural : "?";
}

/* ---- objects -------------------------------------------------------------------- */

static const char *sfield(const cJSON *o, const char *a, const char *b)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsString(x) ? x->valuestring : "";
}

bool nw_kube_cache_pod_is_pending(const cJSON *pod)
{
    nw_jsonintern_t *in = nw_jsonintern_new();
    nw_pod_t *p = NULL;
    nw_err_t err = {0};
    bool pending = in && nw_pod_decode(pod, in, &p, &err) == NW_OK && p->pending;
    nw_pod_free(p);
    nw_jsonintern_free(in);
    return pending;
}

/* What no reader uses and a real API server sends in bulk: every object's
 * metadata.managedFields (often half its bytes) and the kubelet's last-applied
 * annotation. */
static void drop_unread(cJSON *json)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(json, "metadata");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(meta, "annotations"),
                                            "kubectl.kubernetes.io/last-applied-configuration");
}

/* A pod: its record holds everything; the JSON is dropped (api/pod.h). */
static nw_kube_obj_t *pod_obj_new(nw_jsonintern_t *in, cJSON *json)
{
    nw_pod_t *p = NULL;
    nw_err_t err = {0};
    nw_rc_t rc = nw_pod_decode(json, in, &p, &err);
    cJSON_Delete(json);
    if (rc != NW_OK)
        return NULL;
    nw_kube_obj_t *o = calloc(1, sizeof *o);
    if (!o) {
        nw_pod_free(p);
        return NULL;
    }
    atomic_init(&o->refs_, 1);
    o->pod = p;
    o->key = p->key;
    o->ns = p->ns;
    o->name = p->name;
    o->uid = p->uid;
    o->rv = p->rv;
    o->node_name = p->node_name;
    o->phase = p->phase_name;
    o->pending = p->pending;
    o->terminating = p->terminating;
    o->provider_id = o->nodepool = "";
    return o;
}

static void obj_unref(nw_kube_obj_t *o);

/* A Node or NodeClaim: its record holds what the scaler reads; the JSON is dropped (a write
 * that needs the whole object GETs it). NULL when it has no name (silently, as any kind),
 * or its record does not decode: not what an API server sends (it validates these
 * fields), refused with a warning naming the field. */
static nw_kube_obj_t *node_obj_new(nw_kube_kind_t kind, cJSON *json)
{
    const char *name = sfield(cJSON_GetObjectItemCaseSensitive(json, "metadata"), "name", NULL);
    if (!name[0]) {
        cJSON_Delete(json);
        return NULL;
    }
    nw_node_t *n = NULL;
    nw_node_claim_t *nc = NULL;
    nw_err_t err = {0};
    nw_rc_t rc = kind == NW_KUBE_NODES ? nw_node_decode(json, &n, &err)
                                       : nw_node_claim_decode(json, &nc, &err);
    if (rc != NW_OK)
        nw_log_warn("kube.cache", "object refused", NW_LS("kind", nw_kube_cache_kind_name(kind)),
                    NW_LS("name", name), NW_LS("field", err.path), NW_LS("error", err.msg));
    cJSON_Delete(json);
    if (rc != NW_OK)
        return NULL;
    nw_kube_obj_t *o = calloc(1, sizeof *o);
    if (!o) {
        nw_node_free(n);
        nw_node_claim_free(nc);
        return NULL;
    }
    atomic_init(&o->refs_, 1);
    o->node = n;
    o->nodeclaim = nc;
    const nw_node_meta_t *m = n ? &n->m : &nc->m;
    o->key = o->name = m->name;
    o->ns = "";
    o->uid = m->uid;
    o->rv = m->rv;
    o->terminating = m->terminating;
    o->node_name = o->phase = "";
    o->provider_id = n ? n->provider_id : nc->provider_id;
    o->nodepool = nc ? nc->nodepool : "";
    return o;
}

static nw_kube_obj_t *obj_new(nw_jsonintern_t *in, nw_kube_kind_t kind, cJSON *json)
{
    if (kind == NW_KUBE_PODS)
        return pod_obj_new(in, json);
    if (kind == NW_KUBE_NODES || kind == NW_KUBE_NODECLAIMS)
        return node_obj_new(kind, json);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(json, "metadata");
    const char *name = sfield(meta, "name", NULL);
    if (!name[0]) {
        cJSON_Delete(json);
        return NULL;
    }
    drop_unread(json);
    /* kept frozen: one block instead of an allocation per value, key and string */
    cJSON *frozen = nw_jsonfreeze(json);
    cJSON_Delete(json);
    json = frozen;
    nw_kube_obj_t *o = json ? calloc(1, sizeof *o) : NULL;
    if (!o) {
        nw_jsonfreeze_free(json);
        return NULL;
    }
    atomic_init(&o->refs_, 1);
    o->json = json;
    meta = cJSON_GetObjectItemCaseSensitive(json, "metadata");
    name = sfield(meta, "name", NULL);
    o->name = name;
    o->ns = kind_res[kind]->namespaced ? sfield(meta, "namespace", NULL) : "";
    o->uid = sfield(meta, "uid", NULL);
    o->rv = sfield(meta, "resourceVersion", NULL);
    size_t nsl = strlen(o->ns), nl = strlen(name);
    char *key = malloc(nsl + nl + 2);
    if (!key) {
        nw_jsonfreeze_free(json);
        free(o);
        return NULL;
    }
    if (nsl) {
        memcpy(key, o->ns, nsl);
        key[nsl] = '/';
        memcpy(key + nsl + 1, name, nl + 1);
    } else {
        memcpy(key, name, nl + 1);
    }
    o->key = o->key_ = key;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp");
    o->terminating = dt && !cJSON_IsNull(dt);
    o->node_name = o->phase = o->provider_id = o->nodepool = "";
    return o;
}

static void obj_unref(nw_kube_obj_t *o)
{
    if (o && atomic_fetch_sub_explicit(&o->refs_, 1, memory_order_acq_rel) == 1) {
        nw_pod_free((nw_pod_t *)o->pod);
        nw_node_free((nw_node_t *)o->node);
        nw_node_claim_free((nw_node_claim_t *)o->nodeclaim);
        nw_jsonfreeze_free(o->json);
        free(o->key_);
        free(o);
    }
}

const nw_kube_obj_t *nw_kube_cache_obj_hold(const nw_kube_obj_t *o)
{
    nw_kube_obj_t *m = (nw_kube_obj_t *)o; /* the count is the only thing that changes */
    atomic_fetch_add_explicit(&m->refs_, 1, memory_order_relaxed);
    return o;
}

void nw_kube_cache_obj_release(const nw_kube_obj_t *o)
{
    obj_unref((nw_kube_obj_t *)o);
}

/* ---- hash map: key -> obj ---------------------------------------------------------- */

typedef struct ent {
    nw_kube_obj_t *o;
    uint64_t h;
    struct ent *next;
} ent_t;

typedef struct {
    ent_t **b;
    size_t nb, n;
} map_t;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static int map_grow(map_t *m)
{
    size_t nb = m->nb ? m->nb * 2 : 64;
    ent_t **b = calloc(nb, sizeof *b);
    if (!b)
        return -1;
    for (size_t i = 0; i < m->nb; i++) {
        ent_t *e = m->b[i];
        while (e) {
            ent_t *nx = e->next;
            e->next = b[e->h & (nb - 1)];
            b[e->h & (nb - 1)] = e;
            e = nx;
        }
    }
    free(m->b);
    m->b = b;
    m->nb = nb;
    return 0;
}

static ent_t **map_slot(map_t *m, const char *key, uint64_t h)
{
    if (!m->nb)
        return NULL;
    ent_t **pp = &m->b[h & (m->nb - 1)];
    while (*pp && ((*pp)->h != h || strcmp((*pp)->o->key, key) != 0))
        pp = &(*pp)->next;
    return pp;
}

static nw_kube_obj_t *map_get(map_t *m, const char *key)
{
    ent_t **pp = map_slot(m, key, hash_str(key));
    return pp && *pp ? (*pp)->o : NULL;
}

/* Insert o (the map takes the caller's reference); returns the replaced object (its
 * reference passes to the caller) or NULL. On OOM returns o itself (not inserted). */
static nw_kube_obj_t *map_put(map_t *m, nw_kube_obj_t *o)
{
    uint64_t h = hash_str(o->key);
    ent_t **pp = map_slot(m, o->key, h);
    if (pp && *pp) {
        nw_kube_obj_t *old = (*pp)->o;
        (*pp)->o = o;
        return old;
    }
    if (m->n + 1 > m->nb * 3 / 4) {
        if (map_grow(m) != 0)
            return o;
    }
    ent_t *e = malloc(sizeof *e);
    if (!e)
        return o;
    e->o = o;
    e->h = h;
    e->next = m->b[h & (m->nb - 1)];
    m->b[h & (m->nb - 1)] = e;
    m->n++;
    return NULL;
}

static nw_kube_obj_t *map_del(map_t *m, const char *key)
{
    ent_t **pp = map_slot(m, key, hash_str(key));
    if (!pp || !*pp)
        return NULL;
    ent_t *e = *pp;
    nw_kube_obj_t *o = e->o;
    *pp = e->next;
    free(e);
    m->n--;
    return o;
}

static void map_clear(map_t *m)
{
    for (size_t i = 0; i < m->nb; i++) {
        ent_t *e = m->b[i];
        while (e) {
            ent_t *nx = e->next;
            obj_unref(e->o);
            free(e);
            e = nx;
        }
    }
    free(m->b);
    m->b = NULL;
    m->nb = m->n = 0;
}

/* ---- sorted vectors: each kind by key, and the indexes ------------------------------- */

typedef struct {
    const nw_kube_obj_t **v;
    size_t n, cap;
} vec_t;

static int cmp_key(const void *a, const void *b)
{
    const nw_kube_obj_t *x = *(const nw_kube_obj_t *const *)a;
    const nw_kube_obj_t *y = *(const nw_kube_obj_t *const *)b;
    return strcmp(x->key, y->key);
}

#define DEF_CMP(fname, field)                                                                      \
    static int fname(const void *a, const void *b)                                                 \
    {                                                                                              \
        const nw_kube_obj_t *x = *(const nw_kube_obj_t *const *)a;                                 \
        const nw_kube_obj_t *y = *(const nw_kube_obj_t *const *)b;                                 \
        int r = strcmp(x->field, y->field);                                                        \
        return r ? r : strcmp(x->key, y->key);                                                     \
    }
DEF_CMP(cmp_node, node_name)
DEF_CMP(cmp_phase, phase)
DEF_CMP(cmp_pid, provider_id)
DEF_CMP(cmp_pool, nodepool)

/* The indexes, kept sorted as objects come and go (so a snapshot only copies them). */
enum {
    IX_PODS_BY_NODE,
    IX_PODS_BY_PHASE,
    IX_PENDING,
    IX_NODES_BY_PID,
    IX_CLAIMS_BY_PID,
    IX_CLAIMS_BY_POOL,
    NIDX
};

static const struct {
    nw_kube_kind_t kind;
    size_t off;   /* the string field that is the index's first sort key */
    bool pending; /* membership: o->pending instead of a non-empty field */
    int (*cmp)(const void *, const void *);
} IDX[NIDX] = {
    [IX_PODS_BY_NODE] = {NW_KUBE_PODS, offsetof(nw_kube_obj_t, node_name), false, cmp_node},
    [IX_PODS_BY_PHASE] = {NW_KUBE_PODS, offsetof(nw_kube_obj_t, phase), false, cmp_phase},
    [IX_PENDING] = {NW_KUBE_PODS, 0, true, cmp_key},
    [IX_NODES_BY_PID] = {NW_KUBE_NODES, offsetof(nw_kube_obj_t, provider_id), false, cmp_pid},
    [IX_CLAIMS_BY_PID] = {NW_KUBE_NODECLAIMS, offsetof(nw_kube_obj_t, provider_id), false, cmp_pid},
    [IX_CLAIMS_BY_POOL] = {NW_KUBE_NODECLAIMS, offsetof(nw_kube_obj_t, nodepool), false, cmp_pool},
};

static const char *field_at(const nw_kube_obj_t *o, size_t off)
{
    return *(const char *const *)((const char *)o + off);
}

/* Pods in phase Running (nearly all of them) are left out of the index by phase, so that a
 * pod event and a snapshot do not move or copy a vector of every pod for it; the snapshot
 * lists them on demand (nw_kube_cache_snap_pods_in_phase). */
static const char RUNNING[] = "Running";

static bool ix_member(int ix, const nw_kube_obj_t *o)
{
    if (IDX[ix].pending)
        return o->pending != 0;
    const char *f = field_at(o, IDX[ix].off);
    return f[0] != '\0' && (ix != IX_PODS_BY_PHASE || strcmp(f, RUNNING) != 0);
}

/* First position whose entry does not sort before o. */
static size_t vec_lower(const vec_t *v, const nw_kube_obj_t *o,
                        int (*cmp)(const void *, const void *))
{
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp(&v->v[mid], &o) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool vec_insert(vec_t *v, const nw_kube_obj_t *o, int (*cmp)(const void *, const void *))
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        const nw_kube_obj_t **nv = realloc(v->v, cap * sizeof *nv);
        if (!nv)
            return false;
        v->v = nv;
        v->cap = cap;
    }
    size_t i = vec_lower(v, o, cmp);
    memmove(v->v + i + 1, v->v + i, (v->n - i) * sizeof *v->v);
    v->v[i] = o;
    v->n++;
    return true;
}

static void vec_remove(vec_t *v, const nw_kube_obj_t *o, int (*cmp)(const void *, const void *))
{
    size_t i = vec_lower(v, o, cmp);
    if (i < v->n && v->v[i] == o) {
        memmove(v->v + i, v->v + i + 1, (v->n - i - 1) * sizeof *v->v);
        v->n--;
    }
}

/* Objects new to a kind wait in a small sorted vector of their own (add) before they join
 * the kind's vector (all) in one merge, at the next snapshot or once ADD_MAX wait: a burst
 * of 10,000 new pods in a cache of 100,000 would otherwise move half of the pods' vector
 * for each one (about 4 GB moved for the burst). all and add are disjoint. */
#define ADD_MAX 512

/* Merge add into all (both sorted by key), add left empty. false on OOM (both unchanged). */
static bool all_flush(vec_t *all, vec_t *add)
{
    if (!add->n)
        return true;
    if (all->n + add->n > all->cap) {
        size_t cap = all->cap ? all->cap : 64;
        while (cap < all->n + add->n)
            cap *= 2;
        const nw_kube_obj_t **nv = realloc(all->v, cap * sizeof *nv);
        if (!nv)
            return false;
        all->v = nv;
        all->cap = cap;
    }
    /* from the end: each entry of all moves once, those before add's first key not at all */
    size_t i = all->n, j = add->n, w = all->n + add->n;
    while (j > 0) {
        if (i > 0 && cmp_key(&all->v[i - 1], &add->v[j - 1]) > 0)
            all->v[--w] = all->v[--i];
        else
            all->v[--w] = add->v[--j];
    }
    all->n += add->n;
    add->n = 0;
    return true;
}

/* Put new where old was (same key) in all or add, or insert new into add (old NULL) /
 * remove old from where it is (new NULL); and the same in each of the kind's indexes. false
 * on OOM (the vectors may then miss new: the caller forces a relist). */
static bool vecs_change(vec_t *all, vec_t *add, vec_t *idx, nw_kube_kind_t kind,
                        const nw_kube_obj_t *old, const nw_kube_obj_t *nw)
{
    bool ok = true;
    if (old) {
        vec_t *in = all;
        size_t i = vec_lower(all, old, cmp_key);
        if (i >= all->n || all->v[i] != old) {
            in = add;
            i = vec_lower(add, old, cmp_key);
        }
        if (i < in->n && in->v[i] == old) {
            if (nw)
                in->v[i] = nw;
            else {
                memmove(in->v + i, in->v + i + 1, (in->n - i - 1) * sizeof *in->v);
                in->n--;
            }
        }
    } else if (nw) {
        ok = vec_insert(add, nw, cmp_key) && (add->n < ADD_MAX || all_flush(all, add));
    }
    for (int x = 0; x < NIDX; x++) {
        if (IDX[x].kind != kind)
            continue;
        bool was = old && ix_member(x, old), is = nw && ix_member(x, nw);
        if (was && is && IDX[x].cmp(&old, &nw) == 0) {
            size_t i = vec_lower(&idx[x], old, IDX[x].cmp);
            if (i < idx[x].n && idx[x].v[i] == old) {
                idx[x].v[i] = nw; /* same place in the order */
                continue;
            }
        }
        if (was)
            vec_remove(&idx[x], old, IDX[x].cmp);
        if (is)
            ok = vec_insert(&idx[x], nw, IDX[x].cmp) && ok;
    }
    return ok;
}

/* Rebuild a kind's vector and its indexes from a store (a relist), sorting once (add
 * emptied: its objects are in the store). */
static bool vecs_rebuild(vec_t *all, vec_t *add, vec_t *idx, nw_kube_kind_t kind, const map_t *m)
{
    add->n = 0;
    vec_t na = {malloc((m->n ? m->n : 1) * sizeof *na.v), 0, m->n ? m->n : 1};
    if (!na.v)
        return false;
    for (size_t i = 0; i < m->nb; i++)
        for (ent_t *e = m->b[i]; e; e = e->next)
            na.v[na.n++] = e->o;
    qsort(na.v, na.n, sizeof *na.v, cmp_key);
    vec_t nx[NIDX] = {{0}};
    for (int x = 0; x < NIDX; x++) {
        if (IDX[x].kind != kind)
            continue;
        nx[x].v = malloc(na.cap * sizeof *nx[x].v);
        if (!nx[x].v) {
            for (int y = 0; y < x; y++)
                free(nx[y].v);
            free(na.v);
            return false;
        }
        nx[x].cap = na.cap;
        for (size_t i = 0; i < na.n; i++) /* already in key order */
            if (ix_member(x, na.v[i]))
                nx[x].v[nx[x].n++] = na.v[i];
        if (IDX[x].cmp != cmp_key)
            qsort(nx[x].v, nx[x].n, sizeof *nx[x].v, IDX[x].cmp);
    }
    free(all->v);
    *all = na;
    for (int x = 0; x < NIDX; x++)
        if (IDX[x].kind == kind) {
            free(idx[x].v);
            idx[x] = nx[x];
        }
    return true;
}

/* ---- the generation of each node's last pod change ------------------------------- */

/* Node name -> the generation of the last change to a pod bound to it (open addressing,
 * linear probing; a power-of-two capacity, at most half full). Only the watch thread
 * writes it, under the cache mutex; readers take the mutex (nw_kube_cache_snap_node_pods_gen). */
typedef struct {
    char *node; /* owned; NULL: an empty slot */
    uint64_t gen;
} ngen_t;

typedef struct {
    ngen_t *v;
    size_t cap, n;
} ngens_t;

static void ngens_clear(ngens_t *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->v[i].node);
    free(t->v);
    memset(t, 0, sizeof *t);
}

/* The slot of node, or the empty slot where it would go (t->cap > 0). */
static ngen_t *ngens_slot(const ngens_t *t, const char *node)
{
    size_t i = (size_t)hash_str(node) & (t->cap - 1);
    while (t->v[i].node && strcmp(t->v[i].node, node) != 0)
        i = (i + 1) & (t->cap - 1);
    return &t->v[i];
}

static uint64_t ngens_get(const ngens_t *t, const char *node)
{
    if (!t->cap)
        return 0;
    const ngen_t *e = ngens_slot(t, node);
    return e->node ? e->gen : 0;
}

/* false on out of memory (the table is then unchanged) */
static bool ngens_set(ngens_t *t, const char *node, uint64_t gen)
{
    if (2 * (t->n + 1) > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        ngens_t nt = {calloc(cap, sizeof *nt.v), cap, t->n};
        if (!nt.v)
            return false;
        for (size_t i = 0; i < t->cap; i++)
            if (t->v[i].node)
                *ngens_slot(&nt, t->v[i].node) = t->v[i];
        free(t->v);
        *t = nt;
    }
    ngen_t *e = ngens_slot(t, node);
    if (!e->node) {
        if (!(e->node = strdup(node)))
            return false;
        t->n++;
    }
    e->gen = gen;
    return true;
}

/* ---- cache ------------------------------------------------------------------------ */

/* An object that left the store at generation gen: snapshots older than gen may still
 * hold it, so it is freed once none of them is alive (reclaim). The cache's list of them
 * is a queue in the order they left, so by generation (only the watch thread retires, at
 * the generation of its change): reclaim frees from its head and stops at the first one a
 * snapshot may still hold, so a long-held snapshot costs an upsert nothing per object
 * retired behind it. */
typedef struct {
    nw_kube_obj_t *o;
    uint64_t gen;
} retired_t;

/* Live snapshots per generation (a handful at a time). */
typedef struct {
    uint64_t gen;
    size_t n;
} live_t;

/* A snapshot's copy of one vector, shared by the snapshots taken while its kind did not
 * change (under a stream of pod events, a snapshot copies the pods' vectors only: the
 * Nodes', NodeClaims' and the rest are the previous snapshot's). Reference-counted: the
 * cache holds the latest of each vector, each snapshot the ones it reads. */
typedef struct {
    _Atomic int refs;
    uint64_t gen; /* the cache's generation when copied */
    size_t n;
    size_t cap; /* entries v can hold */
    const nw_kube_obj_t *v[];
} vblock_t;

/* Blocks no snapshot holds any more are kept for the next copies rather than freed: under a
 * stream of pod events each snapshot copies the pods' vectors (about 800 KB each at 100,000
 * pods), and a block that large is an mmap of its own (server/https.c sets the malloc
 * thresholds), so allocating a fresh one each time cost a page fault per 4 KiB touched and
 * an munmap: more than the copy itself. */
#define STASH_MAX 8

/* Drop a reference; true when it was the last (the caller stashes or frees the block). */
static bool vblock_unref(vblock_t *b)
{
    return b && atomic_fetch_sub(&b->refs, 1) == 1;
}

static void vblock_drop(vblock_t *b)
{
    if (vblock_unref(b))
        free(b);
}

struct nw_kube_cache {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    map_t store[NW_KUBE_KINDS];
    vec_t all[NW_KUBE_KINDS];     /* each store's objects, sorted by key, but ... */
    vec_t add[NW_KUBE_KINDS];     /* ... those added since the last merge (all_flush) */
    vec_t idx[NIDX];              /* the indexes, sorted */
    uint64_t kgen[NW_KUBE_KINDS]; /* the generation of each kind's last change */
    uint64_t bgen; /* the generation of the last change to a bound pod (or of a pod relist) */
    vblock_t *ball[NW_KUBE_KINDS], *bidx[NIDX]; /* the latest snapshot copies (vblock_t) */
    bool synced[NW_KUBE_KINDS];
    bool vec_oom; /* a vector missed a change (out of memory): rebuilt at the next change */
    uint64_t gen;
    int woken;            /* nw_kube_cache_wake since the last wait returned */
    nw_kube_snap_t *snap; /* cached snapshot of generation snap->gen, or NULL */
    retired_t *retired;   /* [retired_head, nretired): waiting, oldest first */
    size_t retired_head, nretired, capretired;
    live_t *live;
    size_t nlive, caplive;
    int efd;
    nw_kube_metrics_t *metrics;
    nw_jsonintern_t *intern; /* the pods' shared labels, annotations, owners and specs */
    nw_kube_cache_hook_fn hook;
    void *hook_ud;
    const nw_clock_t *clock; /* stamps pods' pending_since */
    /* the generation of each node's last pod change, and of a change to every node's pods
     * (a relist of pods, or the table dropped: out of memory, or grown past the nodes) */
    ngens_t pod_nodes;
    uint64_t pods_all_gen;
    vblock_t *stash[STASH_MAX]; /* blocks held by no snapshot, for reuse (vblock_t) */
    size_t nstash;
};

struct nw_kube_snap {
    _Atomic int refs;
    nw_kube_cache_t *cache;
    uint64_t gen;
    uint64_t kgen[NW_KUBE_KINDS]; /* the generation of each kind's last change as of gen */
    uint64_t bgen;                /* the cache's bgen as of gen */
    bool synced;
    vec_t all[NW_KUBE_KINDS]; /* the cache's vectors as of gen (no reference per object:
                                 the cache keeps what a live snapshot holds, see retired_t),
                                 in the blocks below */
    vec_t idx[NIDX];
    vblock_t *ball[NW_KUBE_KINDS], *bidx[NIDX];
    /* the pods in phase Running, listed on the first ask (not in the index by phase) */
    pthread_mutex_t running_mu;
    bool running_listed;
    vec_t running;
};

nw_kube_cache_t *nw_kube_cache_new(nw_kube_metrics_t *metrics)
{
    nw_kube_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    pthread_mutex_init(&c->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    c->metrics = metrics;
    c->clock = nw_clock_system();
    if (!(c->intern = nw_jsonintern_new())) {
        nw_kube_cache_free(c);
        return NULL;
    }
    return c;
}

void nw_kube_cache_free(nw_kube_cache_t *c)
{
    if (!c)
        return;
    nw_kube_cache_snap_release(c->snap);
    for (size_t i = c->retired_head; i < c->nretired; i++)
        obj_unref(c->retired[i].o);
    free(c->retired);
    free(c->live);
    for (int k = 0; k < NW_KUBE_KINDS; k++) {
        map_clear(&c->store[k]);
        free(c->all[k].v);
        free(c->add[k].v);
        vblock_drop(c->ball[k]);
    }
    for (int x = 0; x < NIDX; x++) {
        free(c->idx[x].v);
        vblock_drop(c->bidx[x]);
    }
    for (size_t i = 0; i < c->nstash; i++)
        free(c->stash[i]);
    if (c->efd >= 0)
        close(c->efd);
    nw_jsonintern_free(c->intern);
    ngens_clear(&c->pod_nodes);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void nw_kube_cache_set_hook(nw_kube_cache_t *c, nw_kube_cache_hook_fn fn, void *ud)
{
    c->hook = fn;
    c->hook_ud = ud;
}

/* Call with c->mu held: publish a change. The cached snapshot is detached (returned, to
 * be released after unlocking): it no longer matches and must not keep retired objects. */
static nw_kube_snap_t *changed_locked(nw_kube_cache_t *c, nw_kube_kind_t kind, bool bound)
{
    c->gen++;
    c->kgen[kind] = c->gen;
    if (kind == NW_KUBE_PODS && bound)
        c->bgen = c->gen;
    pthread_cond_broadcast(&c->cv);
    if (c->efd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(c->efd, &one, sizeof one);
        (void)w;
    }
    nw_kube_metrics_add(c->metrics, NW_KM_CACHE_OBJECTS, NULL, kind_res[kind]->plural, -1,
                        (int64_t)c->store[kind].n);
    nw_kube_snap_t *prev = c->snap;
    c->snap = NULL;
    return prev;
}

/* Call with c->mu held: o left the store at generation gen. false on OOM (then o is
 * freed at once: only safe when no snapshot can hold it, so the caller avoids that). */
static bool retire_locked(nw_kube_cache_t *c, nw_kube_obj_t *o, uint64_t gen)
{
    if (c->nretired == c->capretired && c->retired_head > 0) {
        memmove(c->retired, c->retired + c->retired_head,
                (c->nretired - c->retired_head) * sizeof *c->retired);
        c->nretired -= c->retired_head;
        c->retired_head = 0;
    }
    if (c->nretired == c->capretired) {
        size_t cap = c->capretired ? c->capretired * 2 : 256;
        retired_t *v = realloc(c->retired, cap * sizeof *v);
        if (!v)
            return false;
        c->retired = v;
        c->capretired = cap;
    }
    c->retired[c->nretired++] = (retired_t){o, gen};
    return true;
}

/* Free the retired objects no live snapshot can see (those that left at a generation
 * no newer than the oldest live snapshot's): the head of the queue, in batches freed
 * outside the mutex. */
static void reclaim(nw_kube_cache_t *c)
{
    bool more = true;
    while (more) {
        pthread_mutex_lock(&c->mu);
        uint64_t oldest = UINT64_MAX;
        for (size_t i = 0; i < c->nlive; i++)
            if (c->live[i].gen < oldest)
                oldest = c->live[i].gen;
        size_t h = c->retired_head, nfree = 0;
        nw_kube_obj_t *batch[256];
        while (h < c->nretired && c->retired[h].gen <= oldest &&
               nfree < sizeof batch / sizeof *batch)
            batch[nfree++] = c->retired[h++].o;
        if (h == c->nretired)
            h = c->nretired = 0;
        c->retired_head = h;
        more = h < c->nretired && c->retired[h].gen <= oldest;
        pthread_mutex_unlock(&c->mu);
        for (size_t i = 0; i < nfree; i++)
            obj_unref(batch[i]);
    }
}

/* Call with c->mu held: keep the sorted vectors in step with a change of the store. */
static void vecs_locked(nw_kube_cache_t *c, nw_kube_kind_t kind, const nw_kube_obj_t *old,
                        const nw_kube_obj_t *nw)
{
    if (c->vec_oom || !vecs_change(&c->all[kind], &c->add[kind], c->idx, kind, old, nw))
        c->vec_oom = !vecs_rebuild(&c->all[kind], &c->add[kind], c->idx, kind, &c->store[kind]);
}

/* Call with c->mu held, after changed_locked: the pods bound to o's node changed at the
 * current generation (o a pod, NULL-safe). */
static void pod_node_changed_locked(nw_kube_cache_t *c, const nw_kube_obj_t *o)
{
    if (!o || !o->node_name[0])
        return;
    /* a table grown well past the nodes (names of nodes long gone) is dropped, as is one
     * that cannot grow: every node's pods count as changed now */
    if (c->pod_nodes.n > 2 * c->store[NW_KUBE_NODES].n + 4096 ||
        !ngens_set(&c->pod_nodes, o->node_name, c->gen)) {
        ngens_clear(&c->pod_nodes);
        c->pods_all_gen = c->gen;
    }
}

static char *key_of(nw_kube_kind_t kind, const cJSON *obj);
static nw_rc_t remove_key(nw_kube_cache_t *c, nw_kube_kind_t kind, char *key);

void nw_kube_cache_set_clock(nw_kube_cache_t *c, const nw_clock_t *clock)
{
    c->clock = clock ? clock : nw_clock_system();
}

/* A pod's pending_since: the old version's while it was pending already, else now. */
static void stamp_pending(nw_kube_obj_t *o, const nw_kube_obj_t *old, int64_t now)
{
    if (o->pending)
        o->pending_since = old && old->pending && old->pending_since ? old->pending_since : now;
}

nw_rc_t nw_kube_cache_upsert(nw_kube_cache_t *c, nw_kube_kind_t kind, cJSON *obj)
{
    /* a Node or NodeClaim whose record does not decode replaces the version before it by
     * nothing, as a relist would leave it out */
    char *key = kind == NW_KUBE_NODES || kind == NW_KUBE_NODECLAIMS ? key_of(kind, obj) : NULL;
    nw_kube_obj_t *o = obj_new(c->intern, kind, obj);
    if (!o) {
        if (key)
            (void)remove_key(c, kind, key);
        return NW_EINVAL;
    }
    free(key);
    int64_t now = nw_clock_mono(c->clock);
    pthread_mutex_lock(&c->mu);
    nw_kube_obj_t *old = map_put(&c->store[kind], o);
    if (old == o) {
        pthread_mutex_unlock(&c->mu);
        obj_unref(o);
        return NW_ENOMEM;
    }
    stamp_pending(o, old, now); /* before a snapshot can show o */
    vecs_locked(c, kind, old, o);
    nw_kube_snap_t *stale = changed_locked(c, kind, (old && old->node_name[0]) || o->node_name[0]);
    if (kind == NW_KUBE_PODS) {
        pod_node_changed_locked(c, old);
        pod_node_changed_locked(c, o);
    }
    uint64_t gen = c->gen;
    pthread_mutex_unlock(&c->mu);
    nw_kube_cache_snap_release(stale);
    /* the hook runs before old is retired: only this thread changes the store, so o and
     * old stay alive through it */
    if (c->hook)
        c->hook(kind, old ? NW_KUBE_MODIFIED : NW_KUBE_ADDED, old, o, c->hook_ud);
    if (old) {
        pthread_mutex_lock(&c->mu);
        bool kept = retire_locked(c, old, gen);
        pthread_mutex_unlock(&c->mu);
        if (!kept)
            return NW_ENOMEM; /* leaked rather than freed under a live snapshot */
        reclaim(c);
    }
    return NW_OK;
}

static char *key_of(nw_kube_kind_t kind, const cJSON *obj)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const char *name = sfield(meta, "name", NULL);
    const char *ns = kind_res[kind]->namespaced ? sfield(meta, "namespace", NULL) : "";
    if (!name[0])
        return NULL;
    size_t n = strlen(ns) + strlen(name) + 2;
    char *k = malloc(n);
    if (k) {
        if (ns[0])
            snprintf(k, n, "%s/%s", ns, name);
        else
            snprintf(k, n, "%s", name);
    }
    return k;
}

/* Remove the object of this key (taken). Absent is not an error. */
static nw_rc_t remove_key(nw_kube_cache_t *c, nw_kube_kind_t kind, char *key)
{
    pthread_mutex_lock(&c->mu);
    nw_kube_obj_t *old = map_del(&c->store[kind], key);
    nw_kube_snap_t *stale = NULL;
    if (old) {
        vecs_locked(c, kind, old, NULL);
        stale = changed_locked(c, kind, old->node_name[0] != 0);
        if (kind == NW_KUBE_PODS)
            pod_node_changed_locked(c, old);
    }
    uint64_t gen = c->gen;
    pthread_mutex_unlock(&c->mu);
    free(key);
    nw_kube_cache_snap_release(stale);
    if (!old)
        return NW_OK;
    if (c->hook)
        c->hook(kind, NW_KUBE_DELETED, old, NULL, c->hook_ud);
    pthread_mutex_lock(&c->mu);
    bool kept = retire_locked(c, old, gen);
    pthread_mutex_unlock(&c->mu);
    if (!kept)
        return NW_ENOMEM;
    reclaim(c);
    return NW_OK;
}

nw_rc_t nw_kube_cache_remove(nw_kube_cache_t *c, nw_kube_kind_t kind, const cJSON *obj)
{
    char *key = key_of(kind, obj);
    if (!key)
        return NW_EINVAL;
    return remove_key(c, kind, key);
}

/* The hook's view of a relist: deletes for what vanished, adds and modifies for what
 * changed (old and nm are both alive: old's objects are retired only afterwards). */
static void replace_notify(nw_kube_cache_t *c, nw_kube_kind_t kind, map_t *old, map_t *nm)
{
    for (size_t i = 0; i < old->nb; i++)
        for (ent_t *e = old->b[i]; e; e = e->next)
            if (!map_get(nm, e->o->key))
                c->hook(kind, NW_KUBE_DELETED, e->o, NULL, c->hook_ud);
    for (size_t i = 0; i < nm->nb; i++)
        for (ent_t *e = nm->b[i]; e; e = e->next) {
            nw_kube_obj_t *prev = map_get(old, e->o->key);
            if (!prev)
                c->hook(kind, NW_KUBE_ADDED, NULL, e->o, c->hook_ud);
            else if (strcmp(prev->rv, e->o->rv) != 0)
                c->hook(kind, NW_KUBE_MODIFIED, prev, e->o, c->hook_ud);
        }
}

/* Retire every object of a replaced store, then free its entries. */
static bool retire_store(nw_kube_cache_t *c, map_t *old, uint64_t gen)
{
    bool ok = true;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < old->nb; i++)
        for (ent_t *e = old->b[i], *nx; e; e = nx) {
            nx = e->next;
            if (!retire_locked(c, e->o, gen))
                ok = false; /* leaked: it may be in a live snapshot */
            free(e);
        }
    pthread_mutex_unlock(&c->mu);
    free(old->b);
    memset(old, 0, sizeof *old);
    return ok;
}

/* A relist in the making: the objects of the pages seen so far, decoded page by page. */
struct nw_kube_cache_stage {
    nw_kube_cache_t *c;
    nw_kube_kind_t kind;
    map_t m;
    nw_rc_t rc; /* the first failure (the commit then applies nothing) */
};

nw_kube_cache_stage_t *nw_kube_cache_stage_new(nw_kube_cache_t *c, nw_kube_kind_t kind)
{
    nw_kube_cache_stage_t *st = calloc(1, sizeof *st);
    if (st) {
        st->c = c;
        st->kind = kind;
    }
    return st;
}

void nw_kube_cache_stage_free(nw_kube_cache_stage_t *st)
{
    if (!st)
        return;
    map_clear(&st->m);
    free(st);
}

size_t nw_kube_cache_stage_count(const nw_kube_cache_stage_t *st)
{
    return st ? st->m.n : 0;
}

nw_rc_t nw_kube_cache_stage_add(nw_kube_cache_stage_t *st, cJSON *items)
{
    if (items && !cJSON_IsArray(items)) {
        cJSON_Delete(items);
        return st->rc = NW_EINVAL;
    }
    int64_t now = nw_clock_mono(st->c->clock);
    while (!st->rc && items && items->child) {
        cJSON *it = cJSON_DetachItemViaPointer(items, items->child);
        nw_kube_obj_t *o = obj_new(st->c->intern, st->kind, it);
        if (!o)
            continue;
        stamp_pending(o, NULL, now); /* the old store's is taken at the commit */
        nw_kube_obj_t *old = map_put(&st->m, o);
        if (old == o) {
            obj_unref(o);
            st->rc = NW_ENOMEM;
            break;
        }
        obj_unref(old); /* duplicate name in a list: keep the later one */
    }
    cJSON_Delete(items);
    return st->rc;
}

nw_rc_t nw_kube_cache_stage_commit(nw_kube_cache_stage_t *st)
{
    nw_kube_cache_t *c = st->c;
    nw_kube_kind_t kind = st->kind;
    nw_rc_t rc = st->rc;
    if (rc) {
        nw_kube_cache_stage_free(st);
        return rc;
    }
    map_t nm = st->m;
    free(st);
    pthread_mutex_lock(&c->mu);
    map_t old = c->store[kind];
    if (kind == NW_KUBE_PODS) /* a pod pending before the relist keeps its arrival */
        for (size_t i = 0; i < c->all[kind].n + c->add[kind].n; i++) {
            const nw_kube_obj_t *was =
                i < c->all[kind].n ? c->all[kind].v[i] : c->add[kind].v[i - c->all[kind].n];
            nw_kube_obj_t *now = was->pending ? map_get(&nm, was->key) : NULL;
            if (now && now->pending && was->pending_since)
                now->pending_since = was->pending_since;
        }
    /* an empty list of a kind synced empty already (a kind the API server does not serve,
     * listed again at every retry) changes nothing: no new generation, so the controllers
     * that skip ticks while nothing changed do not look again for it */
    bool same = c->synced[kind] && old.n == 0 && nm.n == 0;
    c->store[kind] = nm;
    c->synced[kind] = true;
    c->vec_oom = !vecs_rebuild(&c->all[kind], &c->add[kind], c->idx, kind, &c->store[kind]);
    nw_kube_snap_t *stale = same ? NULL : changed_locked(c, kind, true);
    if (kind == NW_KUBE_PODS && !same) {
        ngens_clear(&c->pod_nodes);
        c->pods_all_gen = c->gen;
    }
    uint64_t gen = c->gen;
    pthread_mutex_unlock(&c->mu);
    nw_kube_cache_snap_release(stale);
    /* nm is the store now; only this thread changes it, so reading it unlocked is safe */
    if (c->hook)
        replace_notify(c, kind, &old, &nm);
    bool kept = retire_store(c, &old, gen);
    reclaim(c);
    return kept ? NW_OK : NW_ENOMEM;
}

nw_rc_t nw_kube_cache_replace(nw_kube_cache_t *c, nw_kube_kind_t kind, cJSON *items)
{
    if (items && !cJSON_IsArray(items)) {
        cJSON_Delete(items);
        return NW_EINVAL;
    }
    nw_kube_cache_stage_t *st = nw_kube_cache_stage_new(c, kind);
    if (!st) {
        cJSON_Delete(items);
        return NW_ENOMEM;
    }
    (void)nw_kube_cache_stage_add(st, items); /* a failure is kept for the commit */
    return nw_kube_cache_stage_commit(st);
}

void nw_kube_cache_mark_synced(nw_kube_cache_t *c, nw_kube_kind_t kind)
{
    nw_kube_snap_t *stale = NULL;
    pthread_mutex_lock(&c->mu);
    if (!c->synced[kind]) {
        c->synced[kind] = true;
        stale = changed_locked(c, kind, true);
    }
    pthread_mutex_unlock(&c->mu);
    nw_kube_cache_snap_release(stale);
}

void nw_kube_cache_mark_unsynced(nw_kube_cache_t *c, nw_kube_kind_t kind)
{
    nw_kube_snap_t *stale = NULL;
    pthread_mutex_lock(&c->mu);
    if (c->synced[kind]) {
        c->synced[kind] = false;
        stale = changed_locked(c, kind, true);
    }
    pthread_mutex_unlock(&c->mu);
    nw_kube_cache_snap_release(stale);
}

static bool synced_locked(const nw_kube_cache_t *c)
{
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        if (!c->synced[k])
            return false;
    return true;
}

bool nw_kube_cache_has_synced(nw_kube_cache_t *c)
{
    pthread_mutex_lock(&c->mu);
    bool s = synced_locked(c);
    pthread_mutex_unlock(&c->mu);
    return s;
}

uint64_t nw_kube_cache_generation(nw_kube_cache_t *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t g = c->gen;
    pthread_mutex_unlock(&c->mu);
    return g;
}

static void deadline_after(struct timespec *ts, int64_t ms)
{
    nw_clock_deadline_after(ts, CLOCK_MONOTONIC, ms);
}

uint64_t nw_kube_cache_wait(nw_kube_cache_t *c, uint64_t seen, int64_t timeout_ms)
{
    struct timespec dl;
    if (timeout_ms >= 0)
        deadline_after(&dl, timeout_ms);
    pthread_mutex_lock(&c->mu);
    while (c->gen == seen && !c->woken) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&c->cv, &c->mu);
        } else if (pthread_cond_timedwait(&c->cv, &c->mu, &dl) == ETIMEDOUT) {
            break;
        }
    }
    c->woken = 0;
    uint64_t g = c->gen;
    pthread_mutex_unlock(&c->mu);
    return g;
}

void nw_kube_cache_wake(nw_kube_cache_t *c)
{
    pthread_mutex_lock(&c->mu);
    c->woken = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

bool nw_kube_cache_wait_synced(nw_kube_cache_t *c, int64_t timeout_ms)
{
    struct timespec dl;
    if (timeout_ms >= 0)
        deadline_after(&dl, timeout_ms);
    pthread_mutex_lock(&c->mu);
    while (!synced_locked(c)) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&c->cv, &c->mu);
        } else if (pthread_cond_timedwait(&c->cv, &c->mu, &dl) == ETIMEDOUT) {
            break;
        }
    }
    bool s = synced_locked(c);
    pthread_mutex_unlock(&c->mu);
    return s;
}

int nw_kube_cache_eventfd(nw_kube_cache_t *c)
{
    return c->efd;
}

size_t nw_kube_cache_count(nw_kube_cache_t *c, nw_kube_kind_t kind)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->store[kind].n;
    pthread_mutex_unlock(&c->mu);
    return n;
}

size_t nw_kube_cache_retired(nw_kube_cache_t *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->nretired - c->retired_head;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---- snapshots -------------------------------------------------------------------- */

/* Call with c->mu held: the snapshot copy of src as of generation gen, for a kind last
 * changed at generation changed: *latest when it is that recent, else a new copy (which
 * becomes *latest); one reference taken for the snapshot, its vector view set. */
/* Call with c->mu held: a block for n entries, from the stash when one is big enough (the
 * smallest such) and not much bigger, else new. NULL on OOM. */
static vblock_t *vblock_get_locked(nw_kube_cache_t *c, size_t n)
{
    size_t best = c->nstash;
    for (size_t i = 0; i < c->nstash; i++)
        if (c->stash[i]->cap >= n && c->stash[i]->cap <= 2 * n + 64 &&
            (best == c->nstash || c->stash[i]->cap < c->stash[best]->cap))
            best = i;
    if (best < c->nstash) {
        vblock_t *b = c->stash[best];
        c->stash[best] = c->stash[--c->nstash];
        return b;
    }
    /* room to grow by an eighth before the block no longer fits */
    size_t cap = n + n / 8 + 16;
    vblock_t *b = malloc(sizeof *b + cap * sizeof b->v[0]);
    if (b)
        b->cap = cap;
    return b;
}

/* Call with c->mu held: b (no reference left) to the stash, or freed when the stash is full
 * (then the smallest block goes). */
static void vblock_put_locked(nw_kube_cache_t *c, vblock_t *b)
{
    if (c->nstash < STASH_MAX) {
        c->stash[c->nstash++] = b;
        return;
    }
    size_t small = 0;
    for (size_t i = 1; i < c->nstash; i++)
        if (c->stash[i]->cap < c->stash[small]->cap)
            small = i;
    if (c->stash[small]->cap < b->cap) {
        free(c->stash[small]);
        c->stash[small] = b;
    } else
        free(b);
}

/* Call with c->mu held: drop one reference to b, stashing it when it was the last. */
static void vblock_release_locked(nw_kube_cache_t *c, vblock_t *b)
{
    if (vblock_unref(b))
        vblock_put_locked(c, b);
}

static bool vec_share(nw_kube_cache_t *c, vblock_t **latest, uint64_t changed, uint64_t gen,
                      const vec_t *src, vblock_t **out, vec_t *view)
{
    if (!*latest || (*latest)->gen < changed) {
        vblock_t *b = vblock_get_locked(c, src->n ? src->n : 1);
        if (!b)
            return false;
        atomic_init(&b->refs, 1);
        b->gen = gen;
        b->n = src->n;
        if (src->n)
            memcpy(b->v, src->v, src->n * sizeof b->v[0]);
        vblock_release_locked(c, *latest);
        *latest = b;
    }
    atomic_fetch_add(&(*latest)->refs, 1);
    *out = *latest;
    view->v = (*latest)->v;
    view->n = view->cap = (*latest)->n;
    return true;
}

/* Call with c->mu held: drop the snapshot's blocks (stashed when it held the last
 * reference) and free it. */
static void snap_free_locked(nw_kube_cache_t *c, nw_kube_snap_t *s)
{
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        vblock_release_locked(c, s->ball[k]);
    for (int x = 0; x < NIDX; x++)
        vblock_release_locked(c, s->bidx[x]);
    free(s->running.v);
    pthread_mutex_destroy(&s->running_mu);
    free(s);
}

/* Call with c->mu held: one more live snapshot of generation gen. */
static bool live_add_locked(nw_kube_cache_t *c, uint64_t gen)
{
    for (size_t i = 0; i < c->nlive; i++)
        if (c->live[i].gen == gen) {
            c->live[i].n++;
            return true;
        }
    if (c->nlive == c->caplive) {
        size_t cap = c->caplive ? c->caplive * 2 : 8;
        live_t *v = realloc(c->live, cap * sizeof *v);
        if (!v)
            return false;
        c->live = v;
        c->caplive = cap;
    }
    c->live[c->nlive++] = (live_t){gen, 1};
    return true;
}

static void live_drop_locked(nw_kube_cache_t *c, uint64_t gen)
{
    for (size_t i = 0; i < c->nlive; i++)
        if (c->live[i].gen == gen && --c->live[i].n == 0) {
            c->live[i] = c->live[--c->nlive];
            return;
        }
}

/* Call with c->mu held: a new snapshot of the current generation (copies of the sorted
 * vectors, shared with the previous snapshot for the kinds that did not change since;
 * O(n) memory copies of the others, no sorting), registered as live. NULL on OOM. */
static nw_kube_snap_t *snap_new_locked(nw_kube_cache_t *c)
{
    for (int k = 0; k < NW_KUBE_KINDS; k++) /* the objects added since: one merge each */
        c->vec_oom |= !all_flush(&c->all[k], &c->add[k]);
    if (c->vec_oom) {
        c->vec_oom = false;
        for (int k = 0; k < NW_KUBE_KINDS; k++)
            c->vec_oom |=
                !vecs_rebuild(&c->all[k], &c->add[k], c->idx, (nw_kube_kind_t)k, &c->store[k]);
        if (c->vec_oom)
            return NULL;
    }
    nw_kube_snap_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    atomic_init(&s->refs, 1);
    pthread_mutex_init(&s->running_mu, NULL);
    s->cache = c;
    s->gen = c->gen;
    memcpy(s->kgen, c->kgen, sizeof s->kgen);
    s->bgen = c->bgen;
    s->synced = synced_locked(c);
    bool ok = true;
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        ok = vec_share(c, &c->ball[k], c->kgen[k], c->gen, &c->all[k], &s->ball[k], &s->all[k]) &&
             ok;
    for (int x = 0; x < NIDX; x++)
        ok = vec_share(c, &c->bidx[x], c->kgen[IDX[x].kind], c->gen, &c->idx[x], &s->bidx[x],
                       &s->idx[x]) &&
             ok;
    if (!ok || !live_add_locked(c, s->gen)) {
        snap_free_locked(c, s);
        return NULL;
    }
    return s;
}

nw_kube_snap_t *nw_kube_cache_snapshot(nw_kube_cache_t *c)
{
    pthread_mutex_lock(&c->mu);
    if (!c->snap)
        c->snap = snap_new_locked(c); /* the cache keeps one reference for the next caller */
    nw_kube_snap_t *s = c->snap;
    if (s)
        atomic_fetch_add(&s->refs, 1);
    pthread_mutex_unlock(&c->mu);
    return s;
}

nw_kube_snap_t *nw_kube_cache_snap_hold(const nw_kube_snap_t *s)
{
    nw_kube_snap_t *m = (nw_kube_snap_t *)s; /* the count is the only thing that changes */
    atomic_fetch_add(&m->refs, 1);
    return m;
}

void nw_kube_cache_snap_release(nw_kube_snap_t *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    nw_kube_cache_t *c = s->cache;
    pthread_mutex_lock(&c->mu);
    live_drop_locked(c, s->gen);
    snap_free_locked(c, s);
    pthread_mutex_unlock(&c->mu);
    reclaim(c);
}

uint64_t nw_kube_cache_snap_kind_generation(const nw_kube_snap_t *s, nw_kube_kind_t kind)
{
    return s && kind >= 0 && kind < NW_KUBE_KINDS ? s->kgen[kind] : 0;
}

uint64_t nw_kube_cache_snap_bound_pods_generation(const nw_kube_snap_t *s)
{
    return s ? s->bgen : 0;
}

uint64_t nw_kube_cache_snap_generation(const nw_kube_snap_t *s)
{
    return s->gen;
}

bool nw_kube_cache_snap_synced(const nw_kube_snap_t *s)
{
    return s->synced;
}

size_t nw_kube_cache_snap_count(const nw_kube_snap_t *s, nw_kube_kind_t kind)
{
    return kind < NW_KUBE_KINDS ? s->all[kind].n : 0;
}

const nw_kube_obj_t *nw_kube_cache_snap_at(const nw_kube_snap_t *s, nw_kube_kind_t kind, size_t i)
{
    return kind < NW_KUBE_KINDS && i < s->all[kind].n ? s->all[kind].v[i] : NULL;
}

const nw_kube_obj_t *nw_kube_cache_snap_get(const nw_kube_snap_t *s, nw_kube_kind_t kind,
                                            const char *ns, const char *name)
{
    if (kind >= NW_KUBE_KINDS || !name)
        return NULL;
    char buf[512];
    if (kind_res[kind]->namespaced && ns && ns[0])
        snprintf(buf, sizeof buf, "%s/%s", ns, name);
    else
        snprintf(buf, sizeof buf, "%s", name);
    const vec_t *v = &s->all[kind];
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(v->v[mid]->key, buf);
        if (r == 0)
            return v->v[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

cJSON *nw_kube_cache_snap_lookup(void *snap, const char *group, const char *kind, const char *name)
{
    const nw_kube_snap_t *s = snap;
    if (!s || !group || !kind || !name)
        return NULL;
    for (int k = 0; k < NW_KUBE_KINDS; k++) {
        const nw_kube_res_t *r = kind_res[k];
        const char *slash = strrchr(r->api_version, '/');
        size_t gl = slash ? (size_t)(slash - r->api_version) : 0;
        if (k == NW_KUBE_PODS || strcmp(r->kind, kind) != 0 || strlen(group) != gl ||
            strncmp(r->api_version, group, gl) != 0)
            continue;
        /* "namespace/name" is the cache's own key of a namespaced object */
        const nw_kube_obj_t *o = nw_kube_cache_snap_get(s, (nw_kube_kind_t)k, "", name);
        return o && o->json ? cJSON_Duplicate(o->json, 1) : NULL;
    }
    return NULL;
}

/* Range of entries whose field (at offset off) equals val in an index sorted by field. */
static size_t range(const vec_t *v, size_t off, const char *val, const nw_kube_obj_t *const **out)
{
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(*(const char *const *)((const char *)v->v[mid] + off), val) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < v->n && !strcmp(*(const char *const *)((const char *)v->v[end] + off), val))
        end++;
    *out = v->v + lo;
    return end - lo;
}

size_t nw_kube_cache_snap_pods_on_node(const nw_kube_snap_t *s, const char *node,
                                       const nw_kube_obj_t *const **out)
{
    return range(&s->idx[IX_PODS_BY_NODE], offsetof(nw_kube_obj_t, node_name), node ? node : "",
                 out);
}

uint64_t nw_kube_cache_snap_node_pods_gen(const nw_kube_snap_t *s, const char *node)
{
    nw_kube_cache_t *c = s->cache;
    pthread_mutex_lock(&c->mu);
    uint64_t g = ngens_get(&c->pod_nodes, node ? node : "");
    if (c->pods_all_gen > g)
        g = c->pods_all_gen;
    pthread_mutex_unlock(&c->mu);
    return g > s->gen ? UINT64_MAX : g;
}

void nw_kube_cache_snap_node_pods_gens(const nw_kube_snap_t *s, const char *const *nodes, size_t n,
                                       uint64_t *out)
{
    nw_kube_cache_t *c = s->cache;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < n; i++) {
        uint64_t g = ngens_get(&c->pod_nodes, nodes[i] ? nodes[i] : "");
        if (c->pods_all_gen > g)
            g = c->pods_all_gen;
        out[i] = g > s->gen ? UINT64_MAX : g;
    }
    pthread_mutex_unlock(&c->mu);
}

size_t nw_kube_cache_snap_pods_in_phase(const nw_kube_snap_t *s, const char *phase,
                                        const nw_kube_obj_t *const **out)
{
    if (!phase || strcmp(phase, RUNNING) != 0)
        return range(&s->idx[IX_PODS_BY_PHASE], offsetof(nw_kube_obj_t, phase), phase ? phase : "",
                     out);
    /* in key order, as the index would have them; the list is the snapshot's, made once */
    nw_kube_snap_t *m = (nw_kube_snap_t *)s; /* only the lazily made list changes */
    pthread_mutex_lock(&m->running_mu);
    if (!m->running_listed) {
        const vec_t *all = &s->all[NW_KUBE_PODS];
        m->running.v = malloc((all->n ? all->n : 1) * sizeof *m->running.v);
        for (size_t i = 0; m->running.v && i < all->n; i++)
            if (strcmp(all->v[i]->phase, RUNNING) == 0)
                m->running.v[m->running.n++] = all->v[i];
        m->running_listed = m->running.v != NULL; /* out of memory: none, asked again */
    }
    pthread_mutex_unlock(&m->running_mu);
    *out = m->running.v;
    return m->running.n;
}

size_t nw_kube_cache_snap_pending_pods(const nw_kube_snap_t *s, const nw_kube_obj_t *const **out)
{
    *out = s->idx[IX_PENDING].v;
    return s->idx[IX_PENDING].n;
}

size_t nw_kube_cache_snap_nodeclaims_for_nodepool(const nw_kube_snap_t *s, const char *nodepool,
                                                  const nw_kube_obj_t *const **out)
{
    return range(&s->idx[IX_CLAIMS_BY_POOL], offsetof(nw_kube_obj_t, nodepool),
                 nodepool ? nodepool : "", out);
}

const nw_kube_obj_t *nw_kube_cache_snap_node_by_provider_id(const nw_kube_snap_t *s,
                                                            const char *pid)
{
    const nw_kube_obj_t *const *v;
    return pid && pid[0] &&
                   range(&s->idx[IX_NODES_BY_PID], offsetof(nw_kube_obj_t, provider_id), pid, &v)
               ? v[0]
               : NULL;
}

const nw_kube_obj_t *nw_kube_cache_snap_nodeclaim_by_provider_id(const nw_kube_snap_t *s,
                                                                 const char *pid)
{
    const nw_kube_obj_t *const *v;
    return pid && pid[0] &&
                   range(&s->idx[IX_CLAIMS_BY_PID], offsetof(nw_kube_obj_t, provider_id), pid, &v)
               ? v[0]
               : NULL;
}

nw_rc_t nw_kube_cache_snap_dump_json(const nw_kube_snap_t *s, nw_buf_t *out)
{
    nw_rc_t rc = nw_buf_adds(out, "{");
    for (int k = 0; k < NW_KUBE_KINDS && !rc; k++) {
        rc = nw_buf_addf(out, "%s\n  \"%s\": [", k ? "," : "", kind_res[k]->plural);
        for (size_t i = 0; i < s->all[k].n && !rc; i++) {
            rc = nw_buf_adds(out, i ? ", \"" : "\"");
            if (!rc)
                rc = nw_buf_add_json_escaped(out, s->all[k].v[i]->key);
            if (!rc)
                rc = nw_buf_adds(out, "\"");
        }
        if (!rc)
            rc = nw_buf_adds(out, "]");
    }
    if (!rc)
        rc = nw_buf_adds(out, "\n}\n");
    return rc;
}

nw_rc_t nw_kube_cache_snap_dump_versions_json(const nw_kube_snap_t *s, nw_buf_t *out)
{
    nw_rc_t rc = nw_buf_adds(out, "{");
    for (int k = 0; k < NW_KUBE_KINDS && !rc; k++) {
        rc = nw_buf_addf(out, "%s\n  \"%s\": {", k ? "," : "", kind_res[k]->plural);
        for (size_t i = 0; i < s->all[k].n && !rc; i++) {
            const nw_kube_obj_t *o = s->all[k].v[i];
            rc = nw_buf_adds(out, i ? ", \"" : "\"");
            if (!rc)
                rc = nw_buf_add_json_escaped(out, o->key);
            if (!rc)
                rc = nw_buf_adds(out, "\": \"");
            if (!rc)
                rc = nw_buf_add_json_escaped(out, o->rv ? o->rv : "");
            if (!rc)
                rc = nw_buf_adds(out, "\"");
        }
        if (!rc)
            rc = nw_buf_adds(out, "}");
    }
    if (!rc)
        rc = nw_buf_adds(out, "\n}\n");
    return rc;
}
