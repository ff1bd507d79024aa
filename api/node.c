/* api/node.c — Node and NodeClaim typed records, decoded once (see node.h). */
#include "api/node.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/duration.h"
#include "common/clock.h"
#include "common/json.h"

/* annotations never kept: large, and read by no controller */
static const char *const annotation_drop[] = {
    "kubectl.kubernetes.io/last-applied-configuration",
};

/* The record's block: the record, its arrays, then its strings. Decoding runs twice over
 * the same code: the first pass (base NULL) validates and counts the bytes, the second
 * writes into a block of that size, so a record is one allocation. */
typedef struct {
    char *base;
    size_t used;
} arena_t;

static void *a_alloc(arena_t *a, size_t n)
{
    const size_t al = alignof(max_align_t);
    a->used = (a->used + al - 1) / al * al;
    void *r = a->base ? a->base + a->used : NULL;
    a->used += n;
    return r;
}

static const char *a_str(arena_t *a, const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *d = a->base ? a->base + a->used : NULL;
    a->used += n;
    if (!d)
        return "";
    memcpy(d, s, n);
    return d;
}

static int64_t time_of(const char *s)
{
    int64_t t = 0;
    if (!s || nw_clock_time_parse(s, &t) != NW_OK)
        return 0;
    return t;
}

static nw_node_cond_status_t cond_status_of(const char *s)
{
    if (!s)
        return NW_NODE_COND_UNKNOWN;
    if (!strcmp(s, "True"))
        return NW_NODE_COND_TRUE;
    if (!strcmp(s, "False"))
        return NW_NODE_COND_FALSE;
    return NW_NODE_COND_UNKNOWN;
}

static bool dropped_annotation(const char *k)
{
    for (size_t i = 0; i < sizeof annotation_drop / sizeof *annotation_drop; i++)
        if (!strcmp(k, annotation_drop[i]))
            return true;
    return false;
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const nw_node_kv_t *)a)->key, ((const nw_node_kv_t *)b)->key);
}

/* A string map (labels, annotations): an object of strings, or absent / null. */
static nw_rc_t decode_map(arena_t *a, const cJSON *obj, const char *path, bool annotations,
                          const nw_node_kv_t **out, size_t *n, nw_err_t *err)
{
    *out = NULL;
    *n = 0;
    if (!obj || cJSON_IsNull(obj))
        return NW_OK;
    if (!cJSON_IsObject(obj))
        return nw_err_set(err, NW_EINVAL, path, "must be an object, not %s",
                          nw_json_type_name(obj));
    size_t count = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, obj)
    {
        if (!cJSON_IsString(e)) {
            char p[320];
            snprintf(p, sizeof p, "%s[%s]", path, e->string ? e->string : "");
            return nw_err_set(err, NW_EINVAL, p, "must be a string, not %s", nw_json_type_name(e));
        }
        if (!(annotations && dropped_annotation(e->string)))
            count++;
    }
    nw_node_kv_t *kv = count ? a_alloc(a, count * sizeof *kv) : NULL;
    size_t i = 0;
    cJSON_ArrayForEach(e, obj)
    {
        if (annotations && dropped_annotation(e->string))
            continue;
        const char *k = a_str(a, e->string), *v = a_str(a, e->valuestring);
        if (kv)
            kv[i] = (nw_node_kv_t){k, v};
        i++;
    }
    if (kv)
        qsort(kv, count, sizeof *kv, kv_cmp);
    *out = kv;
    *n = count;
    return NW_OK;
}

static nw_rc_t decode_finalizers(arena_t *a, const cJSON *arr, const char *const **out, size_t *n,
                                 nw_err_t *err)
{
    *out = NULL;
    *n = 0;
    if (!arr || cJSON_IsNull(arr))
        return NW_OK;
    if (!cJSON_IsArray(arr))
        return nw_err_set(err, NW_EINVAL, "metadata.finalizers", "must be an array, not %s",
                          nw_json_type_name(arr));
    size_t count = (size_t)cJSON_GetArraySize(arr), i = 0;
    const char **f = count ? a_alloc(a, count * sizeof *f) : NULL;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        if (!cJSON_IsString(e)) {
            char p[64];
            snprintf(p, sizeof p, "metadata.finalizers[%zu]", i);
            return nw_err_set(err, NW_EINVAL, p, "must be a string, not %s", nw_json_type_name(e));
        }
        const char *s = a_str(a, e->valuestring);
        if (f)
            f[i] = s;
        i++;
    }
    *out = f;
    *n = count;
    return NW_OK;
}

/* metadata.ownerReferences: the owners' uids, in order */
static nw_rc_t decode_owners(arena_t *a, const cJSON *arr, const char *const **out, size_t *n,
                             nw_err_t *err)
{
    *out = NULL;
    *n = 0;
    if (!arr || cJSON_IsNull(arr))
        return NW_OK;
    if (!cJSON_IsArray(arr))
        return nw_err_set(err, NW_EINVAL, "metadata.ownerReferences", "must be an array, not %s",
                          nw_json_type_name(arr));
    size_t count = (size_t)cJSON_GetArraySize(arr), i = 0;
    const char **u = count ? a_alloc(a, count * sizeof *u) : NULL;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const char *uid = nw_json_str(e, "uid");
        if (!uid) {
            char p[64];
            snprintf(p, sizeof p, "metadata.ownerReferences[%zu].uid", i);
            return nw_err_set(err, NW_EINVAL, p, "Required value");
        }
        const char *s = a_str(a, uid);
        if (u)
            u[i] = s;
        i++;
    }
    *out = u;
    *n = count;
    return NW_OK;
}

static nw_rc_t decode_conds(arena_t *a, const cJSON *arr, const nw_node_cond_t **out, size_t *n,
                            nw_err_t *err)
{
    *out = NULL;
    *n = 0;
    if (!arr || cJSON_IsNull(arr))
        return NW_OK;
    if (!cJSON_IsArray(arr))
        return nw_err_set(err, NW_EINVAL, "status.conditions", "must be an array, not %s",
                          nw_json_type_name(arr));
    size_t count = (size_t)cJSON_GetArraySize(arr), i = 0;
    nw_node_cond_t *cs = count ? a_alloc(a, count * sizeof *cs) : NULL;
    const cJSON *c;
    cJSON_ArrayForEach(c, arr)
    {
        const char *type = nw_json_str(c, "type");
        if (!cJSON_IsObject(c) || !type || !*type) {
            char p[64];
            snprintf(p, sizeof p, "status.conditions[%zu]%s", i, cJSON_IsObject(c) ? ".type" : "");
            return nw_err_set(err, NW_EINVAL, p,
                              cJSON_IsObject(c) ? "Required value" : "must be an object");
        }
        const char *st = nw_json_str(c, "status"), *since = nw_json_str(c, "lastTransitionTime");
        const cJSON *og = nw_json_get(c, "observedGeneration");
        if (og && !cJSON_IsNull(og) && !cJSON_IsNumber(og)) {
            char p[80];
            snprintf(p, sizeof p, "status.conditions[%zu].observedGeneration", i);
            return nw_err_set(err, NW_EINVAL, p, "must be a number, not %s", nw_json_type_name(og));
        }
        nw_node_cond_t d = {
            .type = a_str(a, type),
            .status_name = a_str(a, st),
            .reason = a_str(a, nw_json_str(c, "reason")),
            .message = a_str(a, nw_json_str(c, "message")),
            .since_text = a_str(a, since),
            .status = cond_status_of(st),
            .since = time_of(since),
            .observed_gen_set = cJSON_IsNumber(og),
            .observed_gen = cJSON_IsNumber(og) ? (int64_t)og->valuedouble : 0,
        };
        if (cs)
            cs[i] = d;
        i++;
    }
    *out = cs;
    *n = count;
    return NW_OK;
}

/* The strings of metadata and the maps, arrays and conditions: one pass of either kind. */
static nw_rc_t decode_meta(arena_t *a, const cJSON *obj, nw_node_meta_t *m, nw_err_t *err)
{
    const cJSON *md = nw_json_get(obj, "metadata"), *st = nw_json_get(obj, "status");
    const char *name = nw_json_str(md, "name");
    if (!name || !*name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    m->name = a_str(a, name);
    m->uid = a_str(a, nw_json_str(md, "uid"));
    m->rv = a_str(a, nw_json_str(md, "resourceVersion"));
    const char *ct = nw_json_str(md, "creationTimestamp"),
               *dt = nw_json_str(md, "deletionTimestamp");
    m->created_text = a_str(a, ct);
    m->deleted_text = a_str(a, dt);
    m->created = time_of(ct);
    m->deleted = time_of(dt);
    const cJSON *gen = nw_json_get(md, "generation");
    if (gen && !cJSON_IsNull(gen) && !cJSON_IsNumber(gen))
        return nw_err_set(err, NW_EINVAL, "metadata.generation", "must be a number, not %s",
                          nw_json_type_name(gen));
    m->generation = cJSON_IsNumber(gen) ? (int64_t)gen->valuedouble : 0;
    const cJSON *del = nw_json_get(md, "deletionTimestamp");
    m->terminating = del && !cJSON_IsNull(del);
    m->has_annotations =
        cJSON_IsObject(nw_json_get(md, "annotations")) && nw_json_get(md, "annotations")->child;
    nw_rc_t rc;
    if ((rc = decode_map(a, nw_json_get(md, "labels"), "metadata.labels", false, &m->labels,
                         &m->nlabels, err)) != NW_OK ||
        (rc = decode_map(a, nw_json_get(md, "annotations"), "metadata.annotations", true,
                         &m->annotations, &m->nannotations, err)) != NW_OK ||
        (rc = decode_finalizers(a, nw_json_get(md, "finalizers"), &m->finalizers, &m->nfinalizers,
                                err)) != NW_OK ||
        (rc = decode_owners(a, nw_json_get(md, "ownerReferences"), &m->owner_uids, &m->nowners,
                            err)) != NW_OK ||
        (rc = decode_conds(a, nw_json_get(st, "conditions"), &m->conds, &m->nconds, err)) != NW_OK)
        return rc;
    return NW_OK;
}

static void meta_cleanup(nw_node_meta_t *m)
{
    nw_taints_cleanup(&m->taints);
}

static nw_rc_t parse_res(const cJSON *parent, const char *key, const char *path, nw_resources_t *r,
                         nw_err_t *err)
{
    return nw_resources_from_json(r, parent ? nw_json_get(parent, key) : NULL, path, err);
}

static nw_rc_t oom(nw_err_t *err, const char *kind, const cJSON *obj)
{
    const char *name = nw_json_str_at(obj, "metadata.name");
    return nw_err_set(err, NW_ENOMEM, "metadata.name", "%s %s: out of memory", kind,
                      name ? name : "");
}

/* ---- Node ---- */

static nw_rc_t node_pass(arena_t *a, const cJSON *obj, nw_node_t *n, nw_err_t *err)
{
    nw_rc_t rc = decode_meta(a, obj, &n->m, err);
    if (rc != NW_OK)
        return rc;
    const cJSON *spec = nw_json_get(obj, "spec"), *st = nw_json_get(obj, "status");
    n->provider_id = a_str(a, nw_json_str(spec, "providerID"));
    n->phase = a_str(a, nw_json_str(st, "phase"));
    n->unschedulable = cJSON_IsTrue(nw_json_get(spec, "unschedulable"));
    return NW_OK;
}

void nw_node_free(nw_node_t *n)
{
    if (!n)
        return;
    meta_cleanup(&n->m);
    nw_resources_cleanup(&n->capacity);
    nw_resources_cleanup(&n->allocatable);
    free(n);
}

nw_rc_t nw_node_decode(const cJSON *obj, nw_node_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!cJSON_IsObject(obj))
        return nw_err_set(err, NW_EINVAL, "", "a Node must be an object");
    nw_node_t scratch = {0};
    arena_t a = {NULL, 0};
    a_alloc(&a, sizeof scratch);
    nw_rc_t rc = node_pass(&a, obj, &scratch, err);
    if (rc != NW_OK)
        return rc;
    char *block = calloc(1, a.used);
    if (!block)
        return oom(err, "node", obj);
    a = (arena_t){block, 0};
    nw_node_t *n = a_alloc(&a, sizeof *n);
    rc = node_pass(&a, obj, n, err); /* the same input: cannot fail now */
    nw_taints_init(&n->m.taints);
    nw_resources_init(&n->capacity);
    nw_resources_init(&n->allocatable);
    const cJSON *spec = nw_json_get(obj, "spec"), *st = nw_json_get(obj, "status");
    if (rc == NW_OK &&
        (rc = nw_taints_parse(nw_json_get(spec, "taints"), "spec.taints", &n->m.taints, err)) ==
            NW_OK &&
        (rc = parse_res(st, "capacity", "status.capacity", &n->capacity, err)) == NW_OK)
        rc = parse_res(st, "allocatable", "status.allocatable", &n->allocatable, err);
    /* block is n itself (the arena's first allocation): the record owns it */
    if (rc != NW_OK) {
        nw_node_free(n);
        // cppcheck-suppress memleak
        return rc;
    }
    n->ready = nw_node_meta_condition_status(&n->m, "Ready");
    n->bytes_ = a.used;
    *out = n;
    // cppcheck-suppress memleak
    return NW_OK;
}

/* ---- NodeClaim ---- */

/* The first value of the first `node.kubernetes.io/instance-type In [...]` item of a
 * requirement list, as written; NULL without one (the list's shape is checked later, by
 * the requirements' parse). */
static const char *type_first(const cJSON *reqs)
{
    if (!cJSON_IsArray(reqs))
        return NULL;
    const cJSON *r;
    cJSON_ArrayForEach(r, reqs)
    {
        const char *k = nw_json_str(r, "key"), *op = nw_json_str(r, "operator");
        if (k && op && !strcmp(k, "node.kubernetes.io/instance-type") && !strcmp(op, "In"))
            return cJSON_GetStringValue(cJSON_GetArrayItem(nw_json_get(r, "values"), 0));
    }
    return NULL;
}

static nw_rc_t claim_pass(arena_t *a, const cJSON *obj, nw_node_claim_t *c, nw_err_t *err)
{
    nw_rc_t rc = decode_meta(a, obj, &c->m, err);
    if (rc != NW_OK)
        return rc;
    const cJSON *spec = nw_json_get(obj, "spec"), *st = nw_json_get(obj, "status");
    const cJSON *ref = nw_json_get(spec, "nodeClassRef");
    if (ref && !cJSON_IsNull(ref) && !cJSON_IsObject(ref))
        return nw_err_set(err, NW_EINVAL, "spec.nodeClassRef", "must be an object, not %s",
                          nw_json_type_name(ref));
    c->class_group = a_str(a, nw_json_str(ref, "group"));
    c->class_kind = a_str(a, nw_json_str(ref, "kind"));
    c->class_name = a_str(a, nw_json_str(ref, "name"));
    static const char *const durations[] = {"expireAfter", "terminationGracePeriod"};
    for (size_t i = 0; i < 2; i++) {
        const cJSON *d = nw_json_get(spec, durations[i]);
        if (d && !cJSON_IsNull(d) && !cJSON_IsString(d)) {
            char p[64];
            snprintf(p, sizeof p, "spec.%s", durations[i]);
            return nw_err_set(err, NW_EINVAL, p, "must be a string, not %s", nw_json_type_name(d));
        }
    }
    c->expire_after = a_str(a, nw_json_str(spec, "expireAfter"));
    c->expire_after_set = nw_json_str(spec, "expireAfter") != NULL;
    c->tgp = a_str(a, nw_json_str(spec, "terminationGracePeriod"));
    c->tgp_set = nw_json_str(spec, "terminationGracePeriod") != NULL;
    c->provider_id = a_str(a, nw_json_str(st, "providerID"));
    c->node_name = a_str(a, nw_json_str(st, "nodeName"));
    c->image_id = a_str(a, nw_json_str(st, "imageID"));
    c->type_first = a_str(a, type_first(nw_json_get(spec, "requirements")));
    c->last_pod_event = time_of(nw_json_str(st, "lastPodEventTime"));
    return NW_OK;
}

void nw_node_claim_free(nw_node_claim_t *c)
{
    if (!c)
        return;
    meta_cleanup(&c->m);
    nw_requirements_cleanup(&c->requirements);
    nw_taints_cleanup(&c->startup_taints);
    nw_resources_cleanup(&c->requests);
    nw_resources_cleanup(&c->capacity);
    nw_resources_cleanup(&c->allocatable);
    free(c);
}

nw_rc_t nw_node_claim_decode(const cJSON *obj, nw_node_claim_t **out, nw_err_t *err)
{
    *out = NULL;
    if (!cJSON_IsObject(obj))
        return nw_err_set(err, NW_EINVAL, "", "a NodeClaim must be an object");
    nw_node_claim_t scratch = {0};
    arena_t a = {NULL, 0};
    a_alloc(&a, sizeof scratch);
    nw_rc_t rc = claim_pass(&a, obj, &scratch, err);
    if (rc != NW_OK)
        return rc;
    char *block = calloc(1, a.used);
    if (!block)
        return oom(err, "nodeclaim", obj);
    a = (arena_t){block, 0};
    nw_node_claim_t *c = a_alloc(&a, sizeof *c);
    rc = claim_pass(&a, obj, c, err);
    nw_taints_init(&c->m.taints);
    nw_taints_init(&c->startup_taints);
    nw_requirements_init(&c->requirements);
    nw_resources_init(&c->requests);
    nw_resources_init(&c->capacity);
    nw_resources_init(&c->allocatable);
    const cJSON *spec = nw_json_get(obj, "spec"), *st = nw_json_get(obj, "status");
    if (rc == NW_OK &&
        (rc = nw_taints_parse(nw_json_get(spec, "taints"), "spec.taints", &c->m.taints, err)) ==
            NW_OK &&
        (rc = nw_taints_parse(nw_json_get(spec, "startupTaints"), "spec.startupTaints",
                              &c->startup_taints, err)) == NW_OK &&
        (rc = nw_requirements_json_parse_list(nw_json_get(spec, "requirements"),
                                              "spec.requirements", NW_REQS_PARSE_KARPENTER,
                                              &c->requirements, err)) == NW_OK &&
        (rc = parse_res(nw_json_get(spec, "resources"), "requests", "spec.resources.requests",
                        &c->requests, err)) == NW_OK &&
        (rc = parse_res(st, "capacity", "status.capacity", &c->capacity, err)) == NW_OK)
        rc = parse_res(st, "allocatable", "status.allocatable", &c->allocatable, err);
    /* block is c itself (the arena's first allocation): the record owns it */
    if (rc != NW_OK) {
        nw_node_claim_free(c);
        // cppcheck-suppress memleak
        return rc;
    }
    const char *pool = nw_node_meta_label(&c->m, "karpenter.sh/nodepool");
    c->nodepool = pool ? pool : "";
    c->bytes_ = a.used;
    if (c->expire_after_set) {
        nw_err_t e = {0};
        c->expire_after_ok = nw_duration_parse_or_never(c->expire_after, true, &c->expire_after_ns,
                                                        NULL, &e) == NW_OK;
    }
    if (c->tgp_set) {
        nw_err_t e = {0};
        c->tgp_ok = nw_duration_parse(c->tgp, &c->tgp_ns, &e) == NW_OK;
    }
    *out = c;
    // cppcheck-suppress memleak
    return NW_OK;
}

/* ---- readers ---- */

cJSON *nw_node_meta_conditions_json(const nw_node_meta_t *m)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < m->nconds; i++) {
        const nw_node_cond_t *c = &m->conds[i];
        cJSON *o = cJSON_CreateObject();
        bool added = o && cJSON_AddItemToArray(arr, o); /* arr owns o from here */
        bool ok = added && cJSON_AddStringToObject(o, "type", c->type) &&
                  cJSON_AddStringToObject(o, "status", c->status_name) &&
                  cJSON_AddStringToObject(o, "reason", c->reason) &&
                  cJSON_AddStringToObject(o, "message", c->message) &&
                  (!c->since_text[0] ||
                   cJSON_AddStringToObject(o, "lastTransitionTime", c->since_text)) &&
                  (!c->observed_gen_set ||
                   cJSON_AddNumberToObject(o, "observedGeneration", (double)c->observed_gen));
        if (!ok) {
            if (!added)
                cJSON_Delete(o);
            cJSON_Delete(arr);
            return NULL;
        }
    }
    return arr;
}

static size_t res_heap(const nw_resources_t *r)
{
    size_t b = r->cap * sizeof(nw_res_entry_t);
    for (size_t i = 0; i < nw_resources_len(r); i++) {
        const nw_res_entry_t *e = (r->heap ? r->heap : r->inl) + i;
        if (e->owned)
            b += strlen(e->name) + 1;
    }
    return b;
}

static size_t taints_heap(const nw_taints_t *t)
{
    size_t b = t->n * sizeof *t->v;
    for (size_t i = 0; i < t->n; i++)
        b += strlen(t->v[i].key) + strlen(t->v[i].value) + 2;
    return b;
}

static size_t reqs_heap(const nw_reqs_t *r)
{
    size_t b = r->n * sizeof *r->v;
    for (size_t i = 0; i < r->n; i++) {
        b += strlen(r->v[i].key) + 1 + r->v[i].nvalues * sizeof(char *);
        for (size_t j = 0; j < r->v[i].nvalues; j++)
            b += strlen(r->v[i].values[j]) + 1;
    }
    return b;
}

size_t nw_node_bytes(const nw_node_t *n)
{
    return n->bytes_ + taints_heap(&n->m.taints) + res_heap(&n->capacity) +
           res_heap(&n->allocatable);
}

size_t nw_node_claim_bytes(const nw_node_claim_t *c)
{
    return c->bytes_ + taints_heap(&c->m.taints) + taints_heap(&c->startup_taints) +
           reqs_heap(&c->requirements) + res_heap(&c->requests) + res_heap(&c->capacity) +
           res_heap(&c->allocatable);
}

static const char *kv_find(const nw_node_kv_t *kv, size_t n, const char *key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(kv[mid].key, key);
        if (!c)
            return kv[mid].value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *nw_node_meta_label(const nw_node_meta_t *m, const char *key)
{
    return kv_find(m->labels, m->nlabels, key);
}

const char *nw_node_meta_annotation(const nw_node_meta_t *m, const char *key)
{
    return kv_find(m->annotations, m->nannotations, key);
}

const nw_node_cond_t *nw_node_meta_condition(const nw_node_meta_t *m, const char *type)
{
    for (size_t i = 0; i < m->nconds; i++)
        if (!strcmp(m->conds[i].type, type))
            return &m->conds[i];
    return NULL;
}

nw_node_cond_status_t nw_node_meta_condition_status(const nw_node_meta_t *m, const char *type)
{
    const nw_node_cond_t *c = nw_node_meta_condition(m, type);
    return c ? c->status : NW_NODE_COND_ABSENT;
}

bool nw_node_meta_has_finalizer(const nw_node_meta_t *m, const char *f)
{
    for (size_t i = 0; i < m->nfinalizers; i++)
        if (!strcmp(m->finalizers[i], f))
            return true;
    return false;
}

bool nw_node_meta_has_taint(const nw_node_meta_t *m, const char *key, const char *effect)
{
    for (size_t i = 0; i < m->taints.n; i++)
        if (!strcmp(m->taints.v[i].key, key) &&
            (!effect || !strcmp(nw_taints_effect_str(m->taints.v[i].effect), effect)))
            return true;
    return false;
}
