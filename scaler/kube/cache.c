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

static const nw_kube_res_t *const kind_res[NW_KUBE_KINDS] = {
    &nw_kube_client_res_pods,       &nw_kube_client_res_nodes,
    &nw_kube_client_res_nodepools,  &nw_kube_client_res_ec2nodeclasses,
    &nw_kube_client_res_nodeclaims, &nw_kube_client_res_pdbs,
    &nw_kube_client_res_daemonsets, &nw_kube_client_res_pvs,
    &nw_kube_client_res_pvcs,       &nw_kube_client_res_storageclasses,
    &nw_kube_client_res_namespaces, &nw_kube_client_res_csinodes,
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
 * metadata.managedFields (often half its bytes), a Node's status.images (every image on
 * the node, with sizes) and the kubelet's last-applied annotation. */
static void drop_unread(nw_kube_kind_t kind, cJSON *json)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(json, "metadata");
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(meta, "annotations"),
                                            "kubectl.kubernetes.io/last-applied-configuration");
    if (kind == NW_KUBE_NODES)
        cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(json, "status"),
                                                "images");
}

static nw_kube_obj_t *obj_new(nw_jsonintern_t *in, nw_kube_kind_t kind, cJSON *json)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(json, "metadata");
    const char *name = sfield(meta, "name", NULL);
    if (!name[0]) {
        cJSON_Delete(json);
        return NULL;
    }
    drop_unread(kind, json);
    nw_kube_obj_t *o = calloc(1, sizeof *o);
    if (!o) {
        cJSON_Delete(json);
        return NULL;
    }
    atomic_init(&o->refs_, 1);
    o->json = json;
    o->name = name;
    o->ns = kind_res[kind]->namespaced ? sfield(meta, "namespace", NULL) : "";
    o->uid = sfield(meta, "uid", NULL);
    o->rv = sfield(meta, "resourceVersion", NULL);
    size_t kl = strlen(o->ns) + strlen(name) + 2;
    o->key = malloc(kl);
    if (!o->key) {
        cJSON_Delete(json);
        free(o);
        return NULL;
    }
    if (o->ns[0]) {
        memcpy(o->key, o->ns, strlen(o->ns));
        o->key[strlen(o->ns)] = '/';
        memcpy(o->key + strlen(o->ns) + 1, name, strlen(name) + 1);
    } else {
        memcpy(o->key, name, strlen(name) + 1);
    }
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp");
    o->terminating = dt && !cJSON_IsNull(dt);
    o->node_name = o->phase = o->provider_id = o->nodepool = "";
    switch (kind) {
    case NW_KUBE_PODS: {
        nw_pod_t *p = NULL;
        nw_err_t err = {0};
        if (nw_pod_decode(json, in, &p, &err) != NW_OK) {
            cJSON_Delete(json);
            free(o->key);
            free(o);
            return NULL;
        }
        o->pod = p;
        o->node_name = p->node_name;
        o->phase = p->phase_name;
        o->pending = p->pending;
        break;
    }
    case NW_KUBE_NODES:
        o->provider_id = sfield(json, "spec", "providerID");
        break;
    case NW_KUBE_NODECLAIMS:
        o->provider_id = sfield(json, "status", "providerID");
        o->nodepool =
            sfield(cJSON_GetObjectItemCaseSensitive(meta, "labels"), "karpenter.sh/nodepool", NULL);
        break;
    default:
        break;
    }
    return o;
}

static void obj_ref(nw_kube_obj_t *o)
{
    atomic_fetch_add_explicit(&o->refs_, 1, memory_order_relaxed);
}

static void obj_unref(nw_kube_obj_t *o)
{
    if (o && atomic_fetch_sub_explicit(&o->refs_, 1, memory_order_acq_rel) == 1) {
        nw_pod_free((nw_pod_t *)o->pod);
        cJSON_Delete(o->json);
        free(o->key);
        free(o);
    }
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

/* ---- cache ------------------------------------------------------------------------ */

struct nw_kube_cache {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    map_t store[NW_KUBE_KINDS];
    bool synced[NW_KUBE_KINDS];
    uint64_t gen;
    int woken;            /* nw_kube_cache_wake since the last wait returned */
    nw_kube_snap_t *snap; /* cached snapshot of generation snap->gen, or NULL */
    int efd;
    nw_kube_metrics_t *metrics;
    nw_jsonintern_t *intern; /* the pods' shared labels, annotations, owners and specs */
    nw_kube_cache_hook_fn hook;
    void *hook_ud;
};

typedef struct {
    const nw_kube_obj_t **v;
    size_t n;
} vec_t;

struct nw_kube_snap {
    _Atomic int refs;
    uint64_t gen;
    bool synced;
    vec_t all[NW_KUBE_KINDS]; /* owns one reference per object */
    vec_t pods_by_node, pods_by_phase, pending, nodes_by_pid, claims_by_pid, claims_by_pool;
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
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        map_clear(&c->store[k]);
    if (c->efd >= 0)
        close(c->efd);
    nw_jsonintern_free(c->intern);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void nw_kube_cache_set_hook(nw_kube_cache_t *c, nw_kube_cache_hook_fn fn, void *ud)
{
    c->hook = fn;
    c->hook_ud = ud;
}

/* Call with c->mu held: publish a change. */
static void changed_locked(nw_kube_cache_t *c, nw_kube_kind_t kind)
{
    c->gen++;
    pthread_cond_broadcast(&c->cv);
    if (c->efd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(c->efd, &one, sizeof one);
        (void)w;
    }
    nw_kube_metrics_add(c->metrics, NW_KM_CACHE_OBJECTS, NULL, kind_res[kind]->plural, -1,
                        (int64_t)c->store[kind].n);
}

nw_rc_t nw_kube_cache_upsert(nw_kube_cache_t *c, nw_kube_kind_t kind, cJSON *obj)
{
    nw_kube_obj_t *o = obj_new(c->intern, kind, obj);
    if (!o)
        return NW_EINVAL;
    pthread_mutex_lock(&c->mu);
    nw_kube_obj_t *old = map_put(&c->store[kind], o);
    if (old == o) {
        pthread_mutex_unlock(&c->mu);
        obj_unref(o);
        return NW_ENOMEM;
    }
    if (c->hook)
        obj_ref(o);
    changed_locked(c, kind);
    pthread_mutex_unlock(&c->mu);
    if (c->hook) {
        c->hook(kind, old ? NW_KUBE_MODIFIED : NW_KUBE_ADDED, old, o, c->hook_ud);
        obj_unref(o);
    }
    obj_unref(old);
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

nw_rc_t nw_kube_cache_remove(nw_kube_cache_t *c, nw_kube_kind_t kind, const cJSON *obj)
{
    char *key = key_of(kind, obj);
    if (!key)
        return NW_EINVAL;
    pthread_mutex_lock(&c->mu);
    nw_kube_obj_t *old = map_del(&c->store[kind], key);
    if (old)
        changed_locked(c, kind);
    pthread_mutex_unlock(&c->mu);
    free(key);
    if (old && c->hook)
        c->hook(kind, NW_KUBE_DELETED, old, NULL, c->hook_ud);
    obj_unref(old);
    return NW_OK;
}

nw_rc_t nw_kube_cache_replace(nw_kube_cache_t *c, nw_kube_kind_t kind, cJSON *items)
{
    map_t nm = {0};
    nw_rc_t rc = NW_OK;
    if (items && !cJSON_IsArray(items)) {
        cJSON_Delete(items);
        return NW_EINVAL;
    }
    /* build the new store outside the lock */
    while (items && items->child) {
        cJSON *it = cJSON_DetachItemViaPointer(items, items->child);
        nw_kube_obj_t *o = obj_new(c->intern, kind, it);
        if (!o)
            continue;
        nw_kube_obj_t *old = map_put(&nm, o);
        if (old == o) {
            obj_unref(o);
            rc = NW_ENOMEM;
            break;
        }
        obj_unref(old); /* duplicate name in a list: keep the later one */
    }
    cJSON_Delete(items);
    if (rc) {
        map_clear(&nm);
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    map_t old = c->store[kind];
    c->store[kind] = nm;
    c->synced[kind] = true;
    changed_locked(c, kind);
    pthread_mutex_unlock(&c->mu);

    /* notifications: deletes for what vanished, adds/modifies for what changed */
    if (c->hook) {
        for (size_t i = 0; i < old.nb; i++)
            for (ent_t *e = old.b[i]; e; e = e->next)
                if (!map_get(&nm, e->o->key))
                    c->hook(kind, NW_KUBE_DELETED, e->o, NULL, c->hook_ud);
        for (size_t i = 0; i < nm.nb; i++)
            for (ent_t *e = nm.b[i]; e; e = e->next) {
                nw_kube_obj_t *prev = map_get(&old, e->o->key);
                if (!prev)
                    c->hook(kind, NW_KUBE_ADDED, NULL, e->o, c->hook_ud);
                else if (strcmp(prev->rv, e->o->rv) != 0)
                    c->hook(kind, NW_KUBE_MODIFIED, prev, e->o, c->hook_ud);
            }
    }
    /* nm is now owned by the store; only the watch thread mutates it, so reading it
     * above without the lock is safe. */
    map_clear(&old);
    return NW_OK;
}

void nw_kube_cache_mark_synced(nw_kube_cache_t *c, nw_kube_kind_t kind)
{
    pthread_mutex_lock(&c->mu);
    if (!c->synced[kind]) {
        c->synced[kind] = true;
        changed_locked(c, kind);
    }
    pthread_mutex_unlock(&c->mu);
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

/* ---- snapshots -------------------------------------------------------------------- */

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

/* Copy the entries of src for which field is non-empty (or pending), then sort. */
static int build_index(vec_t *dst, const vec_t *src, size_t off, int pending_only,
                       int (*cmp)(const void *, const void *))
{
    dst->v = malloc((src->n ? src->n : 1) * sizeof *dst->v);
    if (!dst->v)
        return -1;
    dst->n = 0;
    for (size_t i = 0; i < src->n; i++) {
        const nw_kube_obj_t *o = src->v[i];
        if (pending_only ? o->pending : (*(const char *const *)((const char *)o + off))[0] != '\0')
            dst->v[dst->n++] = o;
    }
    qsort(dst->v, dst->n, sizeof *dst->v, cmp);
    return 0;
}

nw_kube_snap_t *nw_kube_cache_snapshot(nw_kube_cache_t *c)
{
    pthread_mutex_lock(&c->mu);
    if (c->snap && c->snap->gen == c->gen) {
        atomic_fetch_add(&c->snap->refs, 1);
        nw_kube_snap_t *s = c->snap;
        pthread_mutex_unlock(&c->mu);
        return s;
    }
    nw_kube_snap_t *s = calloc(1, sizeof *s);
    if (!s) {
        pthread_mutex_unlock(&c->mu);
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->gen = c->gen;
    s->synced = synced_locked(c);
    bool oom = false;
    for (int k = 0; k < NW_KUBE_KINDS && !oom; k++) {
        map_t *m = &c->store[k];
        s->all[k].v = malloc((m->n ? m->n : 1) * sizeof *s->all[k].v);
        if (!s->all[k].v) {
            oom = true;
            break;
        }
        for (size_t i = 0; i < m->nb; i++)
            for (ent_t *e = m->b[i]; e; e = e->next) {
                obj_ref(e->o);
                s->all[k].v[s->all[k].n++] = e->o;
            }
    }
    pthread_mutex_unlock(&c->mu);
    if (oom) {
        nw_kube_cache_snap_release(s);
        return NULL;
    }
    for (int k = 0; k < NW_KUBE_KINDS; k++)
        qsort(s->all[k].v, s->all[k].n, sizeof *s->all[k].v, cmp_key);
    if (build_index(&s->pods_by_node, &s->all[NW_KUBE_PODS], offsetof(nw_kube_obj_t, node_name), 0,
                    cmp_node) ||
        build_index(&s->pods_by_phase, &s->all[NW_KUBE_PODS], offsetof(nw_kube_obj_t, phase), 0,
                    cmp_phase) ||
        build_index(&s->pending, &s->all[NW_KUBE_PODS], 0, 1, cmp_key) ||
        build_index(&s->nodes_by_pid, &s->all[NW_KUBE_NODES], offsetof(nw_kube_obj_t, provider_id),
                    0, cmp_pid) ||
        build_index(&s->claims_by_pid, &s->all[NW_KUBE_NODECLAIMS],
                    offsetof(nw_kube_obj_t, provider_id), 0, cmp_pid) ||
        build_index(&s->claims_by_pool, &s->all[NW_KUBE_NODECLAIMS],
                    offsetof(nw_kube_obj_t, nodepool), 0, cmp_pool)) {
        nw_kube_cache_snap_release(s);
        return NULL;
    }
    /* cache it for the next caller of the same generation */
    pthread_mutex_lock(&c->mu);
    if (c->gen == s->gen) {
        nw_kube_snap_t *prev = c->snap;
        atomic_fetch_add(&s->refs, 1);
        c->snap = s;
        pthread_mutex_unlock(&c->mu);
        nw_kube_cache_snap_release(prev);
    } else {
        pthread_mutex_unlock(&c->mu);
    }
    return s;
}

void nw_kube_cache_snap_release(nw_kube_snap_t *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    for (int k = 0; k < NW_KUBE_KINDS; k++) {
        for (size_t i = 0; i < s->all[k].n; i++)
            obj_unref((nw_kube_obj_t *)s->all[k].v[i]);
        free(s->all[k].v);
    }
    free(s->pods_by_node.v);
    free(s->pods_by_phase.v);
    free(s->pending.v);
    free(s->nodes_by_pid.v);
    free(s->claims_by_pid.v);
    free(s->claims_by_pool.v);
    free(s);
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
    return range(&s->pods_by_node, offsetof(nw_kube_obj_t, node_name), node ? node : "", out);
}

size_t nw_kube_cache_snap_pods_in_phase(const nw_kube_snap_t *s, const char *phase,
                                        const nw_kube_obj_t *const **out)
{
    return range(&s->pods_by_phase, offsetof(nw_kube_obj_t, phase), phase ? phase : "", out);
}

size_t nw_kube_cache_snap_pending_pods(const nw_kube_snap_t *s, const nw_kube_obj_t *const **out)
{
    *out = s->pending.v;
    return s->pending.n;
}

size_t nw_kube_cache_snap_nodeclaims_for_nodepool(const nw_kube_snap_t *s, const char *nodepool,
                                                  const nw_kube_obj_t *const **out)
{
    return range(&s->claims_by_pool, offsetof(nw_kube_obj_t, nodepool), nodepool ? nodepool : "",
                 out);
}

const nw_kube_obj_t *nw_kube_cache_snap_node_by_provider_id(const nw_kube_snap_t *s,
                                                            const char *pid)
{
    const nw_kube_obj_t *const *v;
    return pid && pid[0] && range(&s->nodes_by_pid, offsetof(nw_kube_obj_t, provider_id), pid, &v)
               ? v[0]
               : NULL;
}

const nw_kube_obj_t *nw_kube_cache_snap_nodeclaim_by_provider_id(const nw_kube_snap_t *s,
                                                                 const char *pid)
{
    const nw_kube_obj_t *const *v;
    return pid && pid[0] && range(&s->claims_by_pid, offsetof(nw_kube_obj_t, provider_id), pid, &v)
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
