/*
 * scaler/provisioner.c — batching, placement, NodeClaim creation and launch
 * (scaler-behavior.md §1.1, 1.2, 1.10, 1.11). The placement is scaler/fit.c's
 * minimal first-fit until scaler/schedule/ (nw_sched_solve) lands on main.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "scaler/ctl.h"
#include "scaler/fit.h"

#define GET(o, k) cJSON_GetObjectItemCaseSensitive((o), (k))
#define RESOLVE_EVERY_NS (10 * NW_NS_PER_SEC)
#define LAUNCH_RETRY_NS (5 * NW_NS_PER_SEC)
#define CLAIM_MEMORY_NS (120 * NW_NS_PER_SEC)

/* ---- shared helpers (declared in ctl.h) ---- */

int nw_ctl_may_write(nw_ctl_t *c)
{
    return atomic_load(&c->leading) && !atomic_load(&c->stopping);
}

const char *nw_ctl_str(const cJSON *obj, const char *path)
{
    char seg[128];
    const cJSON *cur = obj;
    const char *p = path;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n >= sizeof seg)
            return NULL;
        memcpy(seg, p, n);
        seg[n] = 0;
        cur = GET(cur, seg);
        p = dot ? dot + 1 : p + n;
    }
    return cJSON_IsString(cur) ? cur->valuestring : NULL;
}

const char *nw_ctl_condition(const cJSON *obj, const char *type)
{
    const cJSON *cd;
    cJSON_ArrayForEach(cd, GET(GET(obj, "status"), "conditions"))
    {
        const char *t = cJSON_GetStringValue(GET(cd, "type"));
        if (t && strcmp(t, type) == 0)
            return cJSON_GetStringValue(GET(cd, "status"));
    }
    return NULL;
}

void nw_ctl_set_condition(cJSON *obj, const char *type, const char *status, const char *reason,
                          const char *message, int64_t now_ns)
{
    cJSON *st = GET(obj, "status");
    if (!cJSON_IsObject(st)) {
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
        st = cJSON_AddObjectToObject(obj, "status");
    }
    cJSON *conds = GET(st, "conditions");
    if (!cJSON_IsArray(conds)) {
        cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
        conds = cJSON_AddArrayToObject(st, "conditions");
    }
    char ts[40];
    nw_time_format(now_ns, ts, sizeof ts);
    cJSON *cd;
    cJSON_ArrayForEach(cd, conds)
    {
        const char *t = cJSON_GetStringValue(GET(cd, "type"));
        if (t && strcmp(t, type) == 0)
            break;
    }
    if (!cd) {
        cd = cJSON_CreateObject();
        cJSON_AddItemToArray(conds, cd);
        cJSON_AddStringToObject(cd, "type", type);
    }
    const char *old = cJSON_GetStringValue(GET(cd, "status"));
    if (!old || strcmp(old, status) != 0 || !GET(cd, "lastTransitionTime")) {
        cJSON_DeleteItemFromObjectCaseSensitive(cd, "lastTransitionTime");
        cJSON_AddStringToObject(cd, "lastTransitionTime", ts);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(cd, "status");
    cJSON_AddStringToObject(cd, "status", status);
    cJSON_DeleteItemFromObjectCaseSensitive(cd, "reason");
    cJSON_AddStringToObject(cd, "reason", reason);
    cJSON_DeleteItemFromObjectCaseSensitive(cd, "message");
    cJSON_AddStringToObject(cd, "message", message ? message : "");
    const cJSON *gen = GET(GET(obj, "metadata"), "generation");
    cJSON_DeleteItemFromObjectCaseSensitive(cd, "observedGeneration");
    if (cJSON_IsNumber(gen))
        cJSON_AddNumberToObject(cd, "observedGeneration", gen->valuedouble);
}

nw_ctl_claim_t *nw_ctl_claim_find(nw_ctl_t *c, const char *name)
{
    for (nw_ctl_claim_t *m = c->claims; m; m = m->next)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

static nw_ctl_claim_t *claim_remember(nw_ctl_t *c, const char *name)
{
    nw_ctl_claim_t *m = nw_ctl_claim_find(c, name);
    if (m)
        return m;
    m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    snprintf(m->name, sizeof m->name, "%s", name);
    m->created_mono = nw_clock_mono(c->clock);
    m->next = c->claims;
    c->claims = m;
    return m;
}

static void claim_free(nw_ctl_claim_t *m)
{
    cJSON_Delete(m->obj);
    cJSON_Delete(m->status);
    free(m);
}

void nw_prov_cleanup(nw_ctl_t *c)
{
    while (c->claims) {
        nw_ctl_claim_t *m = c->claims;
        c->claims = m->next;
        claim_free(m);
    }
    for (size_t i = 0; i < c->nseen; i++)
        free(c->seen_uids[i]);
    free(c->seen_uids);
    c->seen_uids = NULL;
    c->nseen = 0;
}

/* Forget remembered claims the cache shows with our status (or that are gone for good). */
static void claims_expire(nw_ctl_t *c, const nw_kube_snap_t *s)
{
    int64_t now = nw_clock_mono(c->clock);
    nw_ctl_claim_t **pp = &c->claims;
    while (*pp) {
        nw_ctl_claim_t *m = *pp;
        const nw_kube_obj_t *o = nw_kube_snap_get(s, NW_KUBE_NODECLAIMS, NULL, m->name);
        if (o)
            m->seen_in_cache = 1;
        int settled = o && (!m->launched || (o->provider_id[0] != 0));
        if (!o && (m->seen_in_cache || m->deleted))
            settled = 1; /* gone */
        else if (!o && now - m->created_mono < CLAIM_MEMORY_NS)
            settled = 0;
        else if (!o)
            settled = 1;
        if (settled && now - m->created_mono > 2 * NW_NS_PER_SEC) {
            *pp = m->next;
            claim_free(m);
        } else
            pp = &m->next;
    }
}

/* ---- catalog → fit input ---- */

static void res_str(cJSON *o, const char *name, const char *suffix, long long v)
{
    char b[48];
    snprintf(b, sizeof b, "%lld%s", v, suffix);
    cJSON_AddStringToObject(o, name, b);
}

static cJSON *catres_json(const nw_resources_t *r)
{
    cJSON *o = cJSON_CreateObject();
    res_str(o, "cpu", "m", (long long)r->cpu_m);
    res_str(o, "memory", "Mi", (long long)r->memory_mib);
    res_str(o, "ephemeral-storage", "", (long long)r->ephemeral_bytes);
    res_str(o, "pods", "", (long long)r->pods);
    if (r->nvidia_gpu)
        res_str(o, "nvidia.com/gpu", "", (long long)r->nvidia_gpu);
    if (r->amd_gpu)
        res_str(o, "amd.com/gpu", "", (long long)r->amd_gpu);
    if (r->neuron)
        res_str(o, "aws.amazon.com/neuron", "", (long long)r->neuron);
    if (r->neuroncore)
        res_str(o, "aws.amazon.com/neuroncore", "", (long long)r->neuroncore);
    if (r->efa)
        res_str(o, "vpc.amazonaws.com/efa", "", (long long)r->efa);
    return o;
}

static void overhead(nw_ctl_t *c, nw_overhead_opts_t *o)
{
    nw_overhead_opts_default(o);
    if (c->vm_overhead > 0)
        o->vm_memory_overhead_percent = c->vm_overhead;
    o->reserved_enis = c->reserved_enis;
}

static cJSON *type_json(nw_ctl_t *c, const nw_itype_t *t, int64_t now, int with_offers)
{
    nw_overhead_opts_t oo;
    overhead(c, &oo);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", t->name);
    nw_label_t lab[48];
    int nl = nw_itype_labels(t, lab, 48);
    cJSON *labels = cJSON_AddObjectToObject(o, "labels");
    for (int i = 0; i < nl; i++)
        cJSON_AddStringToObject(labels, lab[i].key, lab[i].value);
    nw_resources_t cap, alloc;
    nw_itype_capacity(t, &oo, &cap);
    nw_itype_allocatable(t, &oo, &alloc);
    cJSON_AddItemToObject(o, "capacity", catres_json(&cap));
    cJSON_AddItemToObject(o, "allocatable", catres_json(&alloc));
    cJSON_AddBoolToObject(o, "exotic", nw_itype_is_exotic(t));
    if (with_offers) {
        nw_offering_t offs[NW_CATALOG_MAX_OFFERINGS];
        int n = nw_catalog_offerings(t, c->cloud->ops->ice(c->cloud), now, offs,
                                     NW_CATALOG_MAX_OFFERINGS);
        cJSON *arr = cJSON_AddArrayToObject(o, "offerings");
        for (int i = 0; i < n; i++) {
            cJSON *of = cJSON_CreateObject();
            cJSON_AddStringToObject(of, "zone", offs[i].zone);
            cJSON_AddStringToObject(of, "capacityType", offs[i].capacity_type);
            cJSON_AddNumberToObject(of, "price", offs[i].price);
            cJSON_AddBoolToObject(of, "available", offs[i].available && offs[i].price > 0);
            cJSON_AddItemToArray(arr, of);
        }
    }
    return o;
}

/* Capacity/allocatable JSON of a named catalog type (NULL if unknown). */
static cJSON *type_res(nw_ctl_t *c, const char *name, const char *which)
{
    const nw_itype_t *t = nw_catalog_find(c->cloud->ops->catalog(c->cloud), name);
    if (!t)
        return NULL;
    cJSON *tj = type_json(c, t, 0, 0);
    cJSON *r = cJSON_DetachItemFromObjectCaseSensitive(tj, which);
    cJSON_Delete(tj);
    return r;
}

/* The values of requirement key in a NodeClaim's spec.requirements (borrowed array). */
static const cJSON *req_values(const cJSON *nc, const char *key)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, GET(GET(nc, "spec"), "requirements"))
    {
        const char *k = cJSON_GetStringValue(GET(r, "key"));
        const char *op = cJSON_GetStringValue(GET(r, "operator"));
        if (k && op && strcmp(k, key) == 0 && strcmp(op, "In") == 0)
            return GET(r, "values");
    }
    return NULL;
}

/* The smallest (by cpu) instance type a not-yet-launched NodeClaim may become. */
static const char *claim_type(nw_ctl_t *c, const cJSON *nc)
{
    const cJSON *labels = GET(GET(nc, "metadata"), "labels");
    const char *t = cJSON_GetStringValue(GET(labels, "node.kubernetes.io/instance-type"));
    if (t)
        return t;
    const cJSON *vals = req_values(nc, "node.kubernetes.io/instance-type"), *v;
    const char *best = NULL;
    int bestcpu = 0;
    const nw_catalog_t *cat = c->cloud->ops->catalog(c->cloud);
    cJSON_ArrayForEach(v, vals)
    {
        const nw_itype_t *it = nw_catalog_find(cat, cJSON_GetStringValue(v));
        if (it && (!best || it->vcpu < bestcpu)) {
            best = it->name;
            bestcpu = it->vcpu;
        }
    }
    return best;
}

/* The labels a NodeClaim promises to its node: metadata.labels plus every
 * requirement In with exactly one value. */
static cJSON *claim_labels(const cJSON *nc)
{
    cJSON *l = cJSON_Duplicate(GET(GET(nc, "metadata"), "labels"), 1);
    if (!cJSON_IsObject(l)) {
        cJSON_Delete(l);
        l = cJSON_CreateObject();
    }
    const cJSON *r;
    cJSON_ArrayForEach(r, GET(GET(nc, "spec"), "requirements"))
    {
        const char *k = cJSON_GetStringValue(GET(r, "key"));
        const char *op = cJSON_GetStringValue(GET(r, "operator"));
        const cJSON *vals = GET(r, "values");
        if (k && op && strcmp(op, "In") == 0 && cJSON_GetArraySize(vals) == 1 && !GET(l, k))
            cJSON_AddStringToObject(l, k, cJSON_GetStringValue(cJSON_GetArrayItem(vals, 0)));
    }
    return l;
}

static cJSON *claim_bin(nw_ctl_t *c, const cJSON *nc, const nw_kube_snap_t *s)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "name", nw_ctl_str(nc, "metadata.name"));
    cJSON_AddItemToObject(b, "labels", claim_labels(nc));
    const cJSON *taints = GET(GET(nc, "spec"), "taints");
    cJSON_AddItemToObject(b, "taints", taints ? cJSON_Duplicate(taints, 1) : cJSON_CreateArray());
    const cJSON *alloc = GET(GET(nc, "status"), "allocatable");
    const char *t = claim_type(c, nc);
    cJSON *a = alloc ? cJSON_Duplicate(alloc, 1) : (t ? type_res(c, t, "allocatable") : NULL);
    cJSON_AddItemToObject(b, "allocatable", a ? a : cJSON_CreateObject());
    cJSON *pods = cJSON_AddArrayToObject(b, "pods");
    const char *node = nw_ctl_str(nc, "status.nodeName");
    if (node && *node) {
        const nw_kube_obj_t *const *on;
        size_t n = nw_kube_snap_pods_on_node(s, node, &on);
        for (size_t i = 0; i < n; i++)
            cJSON_AddItemToArray(pods, cJSON_CreateObjectReference(on[i]->json->child));
    }
    return b;
}

static int pod_terminal(const nw_kube_obj_t *p)
{
    return strcmp(p->phase, "Succeeded") == 0 || strcmp(p->phase, "Failed") == 0;
}

static cJSON *node_bin(const nw_kube_obj_t *n, const nw_kube_snap_t *s)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(b, "name", n->name);
    const cJSON *l = GET(GET(n->json, "metadata"), "labels");
    cJSON_AddItemToObject(b, "labels", l ? cJSON_Duplicate(l, 1) : cJSON_CreateObject());
    const cJSON *t = GET(GET(n->json, "spec"), "taints");
    cJSON_AddItemToObject(b, "taints", t ? cJSON_Duplicate(t, 1) : cJSON_CreateArray());
    const cJSON *a = GET(GET(n->json, "status"), "allocatable");
    cJSON_AddItemToObject(b, "allocatable", a ? cJSON_Duplicate(a, 1) : cJSON_CreateObject());
    cJSON *pods = cJSON_AddArrayToObject(b, "pods");
    const nw_kube_obj_t *const *on;
    size_t np = nw_kube_snap_pods_on_node(s, n->name, &on);
    for (size_t i = 0; i < np; i++)
        if (!pod_terminal(on[i]))
            cJSON_AddItemToArray(pods, cJSON_CreateObjectReference(on[i]->json->child));
    return b;
}

static int claim_initialized(const cJSON *nc)
{
    const char *st = nw_ctl_condition(nc, "Initialized");
    return st && strcmp(st, "True") == 0;
}

/* The catalog has no offerings when it was not refreshed from the API: offer every
 * type in the zones of the EC2NodeClasses' subnets (what the cloud does at launch). */
static void ensure_zones(nw_ctl_t *c, const nw_kube_snap_t *s)
{
    const nw_catalog_t *cat = c->cloud->ops->catalog(c->cloud);
    if (nw_catalog_len(cat) == 0 || nw_catalog_at(cat, 0)->noffer > 0)
        return;
    nw_catalog_zone_t z[16];
    int nz = 0;
    for (size_t i = 0; i < nw_kube_snap_count(s, NW_KUBE_EC2NODECLASSES); i++) {
        const nw_nodeclass_resolved_t *r = NULL;
        if (c->cloud->ops->resolve(c->cloud, nw_kube_snap_at(s, NW_KUBE_EC2NODECLASSES, i)->json,
                                   &r, NULL) != NW_OK || !r)
            continue;
        for (size_t k = 0; k < r->nsubnets && nz < 16; k++) {
            int dup = 0;
            for (int j = 0; j < nz; j++)
                dup |= strcmp(z[j].name, r->subnets[k].zone) == 0;
            if (dup)
                continue;
            snprintf(z[nz].name, sizeof z[nz].name, "%s", r->subnets[k].zone);
            snprintf(z[nz].id, sizeof z[nz].id, "%s", r->subnets[k].zone_id);
            nz++;
        }
    }
    nw_err_t err = {0};
    if (nz && nw_catalog_set_zones((nw_catalog_t *)cat, z, nz, &err) != NW_OK)
        nw_log_warn("provisioner", "cannot set the catalog's zones", NW_LS("error", err.msg));
}

/* Build the placement input from the snapshot (pending: the pods that count). */
static cJSON *fit_input(nw_ctl_t *c, const nw_kube_snap_t *s, const nw_kube_obj_t *const *pend,
                        size_t npend)
{
    int64_t now = nw_clock_now(c->clock);
    cJSON *in = cJSON_CreateObject();
    cJSON *pools = cJSON_AddArrayToObject(in, "pools");
    for (size_t i = 0; i < nw_kube_snap_count(s, NW_KUBE_NODEPOOLS); i++) {
        const nw_kube_obj_t *p = nw_kube_snap_at(s, NW_KUBE_NODEPOOLS, i);
        if (!p->terminating)
            cJSON_AddItemToArray(pools, cJSON_CreateObjectReference(p->json->child));
    }
    cJSON *pending = cJSON_AddArrayToObject(in, "pending");
    for (size_t i = 0; i < npend; i++)
        cJSON_AddItemToArray(pending, cJSON_CreateObjectReference(pend[i]->json->child));
    cJSON *its = cJSON_AddArrayToObject(in, "itypes");
    const nw_catalog_t *cat = c->cloud->ops->catalog(c->cloud);
    for (size_t i = 0; i < nw_catalog_len(cat); i++)
        cJSON_AddItemToArray(its, type_json(c, nw_catalog_at(cat, i), now, 1));
    cJSON *bins = cJSON_AddArrayToObject(in, "bins");
    cJSON *pcap = cJSON_AddArrayToObject(in, "poolCapacity");
    /* nodes: real capacity unless they belong to a NodeClaim not yet initialized */
    for (size_t i = 0; i < nw_kube_snap_count(s, NW_KUBE_NODES); i++) {
        const nw_kube_obj_t *n = nw_kube_snap_at(s, NW_KUBE_NODES, i);
        if (n->terminating || cJSON_IsTrue(GET(GET(n->json, "spec"), "unschedulable")))
            continue;
        const nw_kube_obj_t *nc =
            n->provider_id[0] ? nw_kube_snap_nodeclaim_by_provider_id(s, n->provider_id) : NULL;
        if (nc && !claim_initialized(nc->json))
            continue; /* counted below, as the claim */
        cJSON_AddItemToArray(bins, node_bin(n, s));
    }
    /* NodeClaims (cached and just created) */
    for (size_t i = 0; i < nw_kube_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        const nw_kube_obj_t *nc = nw_kube_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (nc->terminating)
            continue;
        const char *t = claim_type(c, nc->json);
        const cJSON *cap = GET(GET(nc->json, "status"), "capacity");
        cJSON *pc = cJSON_CreateObject();
        cJSON_AddStringToObject(pc, "pool", nc->nodepool);
        cJSON *cj = cap ? cJSON_Duplicate(cap, 1) : (t ? type_res(c, t, "capacity") : NULL);
        cJSON_AddItemToObject(pc, "capacity", cj ? cj : cJSON_CreateObject());
        cJSON_AddItemToArray(pcap, pc);
        const nw_kube_obj_t *node =
            nc->provider_id[0] ? nw_kube_snap_node_by_provider_id(s, nc->provider_id) : NULL;
        if (!node || !claim_initialized(nc->json))
            cJSON_AddItemToArray(bins, claim_bin(c, nc->json, s));
    }
    for (nw_ctl_claim_t *m = c->claims; m; m = m->next) {
        if (!m->obj || m->deleted || nw_kube_snap_get(s, NW_KUBE_NODECLAIMS, NULL, m->name))
            continue;
        const char *t = claim_type(c, m->obj);
        cJSON *pc = cJSON_CreateObject();
        const char *pool = cJSON_GetStringValue(
            GET(GET(GET(m->obj, "metadata"), "labels"), NW_LABEL_NODEPOOL));
        cJSON_AddStringToObject(pc, "pool", pool ? pool : "");
        cJSON *cj = t ? type_res(c, t, "capacity") : NULL;
        cJSON_AddItemToObject(pc, "capacity", cj ? cj : cJSON_CreateObject());
        cJSON_AddItemToArray(pcap, pc);
        cJSON_AddItemToArray(bins, claim_bin(c, m->obj, s));
    }
    return in;
}

/* ---- NodeClaim object (§1.10) ---- */

static cJSON *nodeclaim_json(const cJSON *fitclaim, const nw_kube_obj_t *pool)
{
    const cJSON *tmpl = GET(GET(pool->json, "spec"), "template");
    const cJSON *tspec = GET(tmpl, "spec");
    const char *class = nw_ctl_str(tspec, "nodeClassRef.name");
    cJSON *nc = cJSON_CreateObject();
    cJSON_AddStringToObject(nc, "apiVersion", "karpenter.sh/v1");
    cJSON_AddStringToObject(nc, "kind", "NodeClaim");
    cJSON *md = cJSON_AddObjectToObject(nc, "metadata");
    char gen[300];
    snprintf(gen, sizeof gen, "%s-", pool->name);
    cJSON_AddStringToObject(md, "generateName", gen);
    const cJSON *tl = GET(GET(tmpl, "metadata"), "labels");
    cJSON *labels = tl ? cJSON_Duplicate(tl, 1) : cJSON_CreateObject();
    cJSON_DeleteItemFromObjectCaseSensitive(labels, NW_LABEL_NODEPOOL);
    cJSON_AddStringToObject(labels, NW_LABEL_NODEPOOL, pool->name);
    if (class) {
        cJSON_DeleteItemFromObjectCaseSensitive(labels, NW_LABEL_NODECLASS);
        cJSON_AddStringToObject(labels, NW_LABEL_NODECLASS, class);
    }
    cJSON_AddItemToObject(md, "labels", labels);
    const cJSON *ta = GET(GET(tmpl, "metadata"), "annotations");
    cJSON *ann = ta ? cJSON_Duplicate(ta, 1) : cJSON_CreateObject();
    cJSON_AddStringToObject(ann, "karpenter.sh/nodepool-hash-version", "v3");
    cJSON_AddStringToObject(ann, "karpenter.sh/nodeclaim-min-values-relaxed", "false");
    cJSON_AddItemToObject(md, "annotations", ann);
    cJSON *owners = cJSON_AddArrayToObject(md, "ownerReferences");
    cJSON *own = cJSON_CreateObject();
    cJSON_AddStringToObject(own, "apiVersion", "karpenter.sh/v1");
    cJSON_AddStringToObject(own, "kind", "NodePool");
    cJSON_AddStringToObject(own, "name", pool->name);
    cJSON_AddStringToObject(own, "uid", pool->uid);
    cJSON_AddBoolToObject(own, "blockOwnerDeletion", 1);
    cJSON_AddItemToArray(owners, own);
    cJSON *fins = cJSON_AddArrayToObject(md, "finalizers");
    cJSON_AddItemToArray(fins, cJSON_CreateString(NW_FINALIZER));
    cJSON *spec = cJSON_AddObjectToObject(nc, "spec");
    cJSON_AddItemToObject(spec, "requirements",
                          cJSON_Duplicate(GET(fitclaim, "requirements"), 1));
    cJSON *res = cJSON_AddObjectToObject(spec, "resources");
    cJSON_AddItemToObject(res, "requests", cJSON_Duplicate(GET(fitclaim, "requests"), 1));
    const cJSON *ref = GET(tspec, "nodeClassRef");
    if (ref)
        cJSON_AddItemToObject(spec, "nodeClassRef", cJSON_Duplicate(ref, 1));
    const char *copy[] = {"taints", "startupTaints", "terminationGracePeriod"};
    for (size_t i = 0; i < sizeof copy / sizeof *copy; i++) {
        const cJSON *v = GET(tspec, copy[i]);
        if (v)
            cJSON_AddItemToObject(spec, copy[i], cJSON_Duplicate(v, 1));
    }
    const char *exp = cJSON_GetStringValue(GET(tspec, "expireAfter"));
    cJSON_AddStringToObject(spec, "expireAfter", exp ? exp : "720h");
    return nc;
}

/* ---- launch ---- */

static int str_list(const cJSON *arr, const char **out, int max)
{
    int n = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, arr)
    {
        if (n < max && cJSON_IsString(v))
            out[n++] = v->valuestring;
    }
    return n;
}

typedef struct {
    nw_ctl_t *c;
    const nw_launch_result_t *r;
    const char *provider_id, *type, *zone, *ct, *image;
} launched_t;

static cJSON *status_of_launch(nw_ctl_t *c, const launched_t *l, const cJSON *base)
{
    cJSON *st = base ? cJSON_Duplicate(base, 1) : cJSON_CreateObject();
    if (!cJSON_IsObject(st)) {
        cJSON_Delete(st);
        st = cJSON_CreateObject();
    }
    const char *keys[] = {"providerID", "imageID", "capacity", "allocatable"};
    for (size_t i = 0; i < 4; i++)
        cJSON_DeleteItemFromObjectCaseSensitive(st, keys[i]);
    cJSON_AddStringToObject(st, "providerID", l->provider_id);
    if (l->image && *l->image)
        cJSON_AddStringToObject(st, "imageID", l->image);
    cJSON *cap = type_res(c, l->type, "capacity"), *al = type_res(c, l->type, "allocatable");
    cJSON_AddItemToObject(st, "capacity", cap ? cap : cJSON_CreateObject());
    cJSON_AddItemToObject(st, "allocatable", al ? al : cJSON_CreateObject());
    return st;
}

static int mutate_launched(cJSON *obj, void *ud)
{
    const launched_t *l = ud;
    if (cJSON_IsObject(GET(obj, "status")) &&
        nw_ctl_str(obj, "status.providerID") &&
        strcmp(nw_ctl_str(obj, "status.providerID"), l->provider_id) == 0 &&
        nw_ctl_condition(obj, "Launched"))
        return 1;
    cJSON *st = status_of_launch(l->c, l, GET(obj, "status"));
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
    cJSON_AddItemToObject(obj, "status", st);
    nw_ctl_set_condition(obj, "Launched", "True", "Launched", "", nw_clock_now(l->c->clock));
    return 0;
}

static int mutate_labels(cJSON *obj, void *ud)
{
    const launched_t *l = ud;
    cJSON *md = GET(obj, "metadata");
    cJSON *labels = GET(md, "labels");
    if (!cJSON_IsObject(labels)) {
        cJSON_DeleteItemFromObjectCaseSensitive(md, "labels");
        labels = cJSON_AddObjectToObject(md, "labels");
    }
    const char *kv[][2] = {{"node.kubernetes.io/instance-type", l->type},
                           {"topology.kubernetes.io/zone", l->zone},
                           {"karpenter.sh/capacity-type", l->ct}};
    int changed = 0;
    for (size_t i = 0; i < 3; i++) {
        if (!kv[i][1] || !*kv[i][1])
            continue;
        const char *cur = cJSON_GetStringValue(GET(labels, kv[i][0]));
        if (cur && strcmp(cur, kv[i][1]) == 0)
            continue;
        cJSON_DeleteItemFromObjectCaseSensitive(labels, kv[i][0]);
        cJSON_AddStringToObject(labels, kv[i][0], kv[i][1]);
        changed = 1;
    }
    return changed ? 0 : 1;
}

static void record_launch(nw_ctl_t *c, const cJSON *nc, const launched_t *l)
{
    const char *name = nw_ctl_str(nc, "metadata.name");
    nw_err_t err = {0};
    if (nw_kube_update_retry(c->kube, &nw_kube_res_nodeclaims, NULL, name, 0, mutate_labels,
                             (void *)l, 5, NULL, &err) != NW_OK)
        nw_log_warn("provisioner", "cannot label the NodeClaim", NW_LS("nodeclaim", name),
                    NW_LS("error", err.msg));
    nw_err_clear(&err);
    if (nw_kube_update_retry(c->kube, &nw_kube_res_nodeclaims, NULL, name, 1, mutate_launched,
                             (void *)l, 5, NULL, &err) != NW_OK)
        nw_log_warn("provisioner", "cannot record the launch in the NodeClaim status",
                    NW_LS("nodeclaim", name), NW_LS("error", err.msg));
}

static void event(nw_ctl_t *c, const nw_kube_res_t *res, const cJSON *obj, const char *type,
                  const char *reason, const char *msg)
{
    if (!nw_ctl_may_write(c))
        return;
    nw_kube_event(c->rec, res, obj, type, reason, msg, NULL);
}

/* Look for an instance already tagged for this NodeClaim (a launch before a crash). */
static int find_tagged(nw_ctl_t *c, const char *name, nw_ec2_instance_t *out, int *failed)
{
    nw_ec2_instances_t list = {0};
    nw_err_t err = {0};
    *failed = 0;
    if (c->cloud->ops->list(c->cloud, &list, &err) != NW_OK) {
        nw_log_warn("provisioner", "cannot list instances", NW_LS("error", err.msg));
        *failed = 1;
        nw_ec2_instances_free(&list);
        return 0;
    }
    int found = 0;
    for (size_t i = 0; i < list.n && !found; i++) {
        const nw_ec2_instance_t *in = &list.v[i];
        if (strcmp(in->state, "terminated") == 0 || strcmp(in->state, "shutting-down") == 0)
            continue;
        for (int k = 0; k < in->tags.n; k++)
            if (strcmp(in->tags.v[k].key, "karpenter.sh/nodeclaim") == 0 &&
                strcmp(in->tags.v[k].value, name) == 0) {
                *out = *in;
                found = 1;
                break;
            }
    }
    nw_ec2_instances_free(&list);
    return found;
}

/* Launch one NodeClaim that has no providerID. fresh: we created it this tick
 * (no earlier launch can exist, so the tag lookup is skipped). */
static void launch_claim(nw_ctl_t *c, const nw_kube_snap_t *s, const cJSON *nc, int fresh)
{
    const char *name = nw_ctl_str(nc, "metadata.name");
    if (!name || !nw_ctl_may_write(c))
        return;
    nw_ctl_claim_t *m = claim_remember(c, name);
    if (!m)
        return;
    int64_t mono = nw_clock_mono(c->clock);
    if (m->launched) {
        /* launched by us; the cache has not caught up or the status write failed */
        if (mono - m->created_mono > 10 * NW_NS_PER_SEC && mono >= m->next_try_mono) {
            launched_t l = {c, NULL, m->provider_id, nw_ctl_str(m->status, "type"),
                            nw_ctl_str(m->status, "zone"), nw_ctl_str(m->status, "ct"),
                            nw_ctl_str(m->status, "image")};
            record_launch(c, nc, &l);
            m->next_try_mono = mono + LAUNCH_RETRY_NS;
        }
        return;
    }
    if (mono < m->next_try_mono)
        return;
    m->next_try_mono = mono + LAUNCH_RETRY_NS;
    char pid[192];
    if (!fresh) {
        nw_ec2_instance_t in;
        int failed = 0;
        if (find_tagged(c, name, &in, &failed)) {
            snprintf(pid, sizeof pid, "aws:///%s/%s", in.zone, in.id);
            const char *ct = strcmp(in.lifecycle, "spot") == 0 ? "spot" : "on-demand";
            launched_t l = {c, NULL, pid, in.type, in.zone, ct, in.image_id};
            nw_log_info("provisioner", "found the instance of a NodeClaim launched before a restart",
                        NW_LS("nodeclaim", name), NW_LS("providerID", pid));
            m->launched = 1;
            snprintf(m->provider_id, sizeof m->provider_id, "%s", pid);
            cJSON_Delete(m->status);
            m->status = cJSON_CreateObject();
            cJSON_AddStringToObject(m->status, "type", in.type);
            cJSON_AddStringToObject(m->status, "zone", in.zone);
            cJSON_AddStringToObject(m->status, "ct", ct);
            cJSON_AddStringToObject(m->status, "image", in.image_id);
            record_launch(c, nc, &l);
            return;
        }
        if (failed)
            return;
    }
    const char *class = nw_ctl_str(nc, "spec.nodeClassRef.name");
    const nw_kube_obj_t *ncl =
        class ? nw_kube_snap_get(s, NW_KUBE_EC2NODECLASSES, NULL, class) : NULL;
    nw_err_t err = {0};
    if (!ncl) {
        nw_log_warn("provisioner", "the NodeClaim's EC2NodeClass does not exist; not launching",
                    NW_LS("nodeclaim", name), NW_LS("ec2nodeclass", class ? class : ""));
        return;
    }
    const nw_nodeclass_resolved_t *rs = NULL;
    if (c->cloud->ops->resolve(c->cloud, ncl->json, &rs, &err) != NW_OK) {
        nw_log_warn("provisioner", "cannot resolve the EC2NodeClass", NW_LS("nodeclaim", name),
                    NW_LS("error", err.msg));
        return;
    }
    const char *types[NW_LAUNCH_MAX_TYPES * 10], *zones[16], *cts[4];
    int nt = str_list(req_values(nc, "node.kubernetes.io/instance-type"), types,
                      (int)(sizeof types / sizeof *types));
    int nz = str_list(req_values(nc, "topology.kubernetes.io/zone"), zones, 16);
    int nct = str_list(req_values(nc, "karpenter.sh/capacity-type"), cts, 4);
    int minv = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, GET(GET(nc, "spec"), "requirements"))
    {
        if (GET(r, "minValues"))
            minv = 1;
    }
    nw_launch_req_t req = {
        .nodepool = cJSON_GetStringValue(GET(GET(GET(nc, "metadata"), "labels"), NW_LABEL_NODEPOOL)),
        .nodeclaim = name,
        .nodeclass = ncl->json,
        .resolved = rs,
        .types = types,
        .ntypes = nt,
        .zones = nz ? zones : NULL,
        .nzones = nz,
        .capacity_types = nct ? cts : NULL,
        .ncapacity_types = nct,
        .min_values = minv,
    };
    nw_launch_result_t res;
    memset(&res, 0, sizeof res);
    nw_ec2_error_t ae;
    memset(&ae, 0, sizeof ae);
    if (!nw_ctl_may_write(c))
        return;
    if (c->cloud->ops->launch(c->cloud, &req, &res, &ae, &err) != NW_OK) {
        atomic_fetch_add(&c->n_launch_failed, 1);
        char msg[700];
        snprintf(msg, sizeof msg, "launching nodeclaim: %s", err.msg);
        nw_log_warn("provisioner", "launch failed", NW_LS("nodeclaim", name),
                    NW_LS("error", err.msg));
        if (ae.cls == NW_EC2_CAPACITY) {
            /* Karpenter: an insufficient-capacity launch deletes the NodeClaim; the
             * pods are placed again next batch without the ICE'd offerings. */
            event(c, &nw_kube_res_nodeclaims, nc, "Warning", "InsufficientCapacityError", msg);
            nw_err_t e2 = {0};
            nw_kube_delete(c->kube, &nw_kube_res_nodeclaims, NULL, name, NULL, NULL, &e2);
            m->deleted = 1;
            c->next_resolve_mono = 0;
        } else
            event(c, &nw_kube_res_nodeclaims, nc, "Warning", "LaunchFailed", msg);
        return;
    }
    atomic_fetch_add(&c->n_launched, 1);
    m->launched = 1;
    snprintf(m->provider_id, sizeof m->provider_id, "%s", res.provider_id);
    cJSON_Delete(m->status);
    m->status = cJSON_CreateObject();
    cJSON_AddStringToObject(m->status, "type", res.type);
    cJSON_AddStringToObject(m->status, "zone", res.zone);
    cJSON_AddStringToObject(m->status, "ct", res.capacity_type);
    cJSON_AddStringToObject(m->status, "image", res.image_id);
    nw_log_info("provisioner", "launched", NW_LS("nodeclaim", name),
                NW_LS("instanceType", res.type), NW_LS("zone", res.zone),
                NW_LS("capacityType", res.capacity_type), NW_LS("providerID", res.provider_id),
                NW_LF("price", res.price));
    char msg[512];
    snprintf(msg, sizeof msg, "Launched %s %s instance %s in %s", res.capacity_type, res.type,
             res.instance_id, res.zone);
    event(c, &nw_kube_res_nodeclaims, nc, "Normal", "Launched", msg);
    launched_t l = {c, &res, res.provider_id, res.type, res.zone, res.capacity_type, res.image_id};
    record_launch(c, nc, &l);
}

/* ---- batching ---- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Was this pending pod's uid already counted (sorted list, binary search)? */
static int seen(nw_ctl_t *c, const char *uid)
{
    return c->nseen && bsearch(&uid, c->seen_uids, c->nseen, sizeof *c->seen_uids, str_cmp);
}

static void seen_reset(nw_ctl_t *c, const nw_kube_obj_t *const *p, size_t n)
{
    /* keep only uids still pending, add the new ones */
    char **keep = calloc(n + 1, sizeof *keep);
    size_t nk = 0;
    for (size_t i = 0; keep && i < n; i++)
        if ((keep[nk] = strdup(p[i]->uid)) != NULL)
            nk++;
    for (size_t i = 0; i < c->nseen; i++)
        free(c->seen_uids[i]);
    free(c->seen_uids);
    c->seen_uids = keep;
    c->nseen = keep ? nk : 0;
    if (keep)
        qsort(keep, nk, sizeof *keep, str_cmp);
}

static void provision(nw_ctl_t *c, const nw_kube_snap_t *s, const nw_kube_obj_t *const *pend,
                      size_t npend)
{
    ensure_zones(c, s);
    cJSON *in = fit_input(c, s, pend, npend), *out = NULL;
    nw_err_t err = {0};
    atomic_fetch_add(&c->n_solves, 1);
    const char *dump = getenv("NW_DEBUG_FIT_DUMP"); /* debugging: write the placement input */
    if (dump && *dump) {
        char *txt = cJSON_Print(in);
        FILE *f = txt ? fopen(dump, "w") : NULL;
        if (f) {
            fputs(txt, f);
            fclose(f);
        }
        free(txt);
    }
    if (nw_fit_solve(in, &out, &err) != NW_OK) {
        nw_log_error("provisioner", "placement failed", NW_LS("error", err.msg));
        cJSON_Delete(in);
        return;
    }
    int nclaims = cJSON_GetArraySize(GET(out, "claims"));
    nw_log_info("provisioner", "batch placed (minimal first-fit placement)",
                NW_LI("pods", (long long)npend), NW_LI("newNodeClaims", nclaims),
                NW_LI("onExistingCapacity", cJSON_GetArraySize(GET(out, "placed"))),
                NW_LI("unschedulable", cJSON_GetArraySize(GET(out, "unschedulable"))));
    const cJSON *u;
    cJSON_ArrayForEach(u, GET(out, "unschedulable"))
    {
        int pi = (int)cJSON_GetNumberValue(GET(u, "pod"));
        if (pi < 0 || (size_t)pi >= npend)
            continue;
        char msg[2048];
        size_t off = 0;
        const char *r1 = cJSON_GetStringValue(GET(u, "reason"));
        if (r1)
            off = (size_t)snprintf(msg, sizeof msg, "Failed to schedule pod, %s", r1);
        else {
            off = (size_t)snprintf(msg, sizeof msg, "Failed to schedule pod");
            const cJSON *r;
            cJSON_ArrayForEach(r, GET(u, "reasons"))
            {
                if (off >= sizeof msg)
                    break;
                off += (size_t)snprintf(msg + off, sizeof msg - off, ", nodepool \"%s\": %s",
                                        r->string, cJSON_GetStringValue(r));
            }
        }
        nw_log_info("provisioner", "pod cannot be placed", NW_LS("pod", pend[pi]->key),
                    NW_LS("reason", msg));
        event(c, &nw_kube_res_pods, pend[pi]->json, "Warning", "FailedScheduling", msg);
    }
    const char *exit_after = getenv("NW_DEBUG_EXIT_AFTER_NODECLAIM");
    const cJSON *fc;
    cJSON_ArrayForEach(fc, GET(out, "claims"))
    {
        if (!nw_ctl_may_write(c))
            break;
        const char *poolname = cJSON_GetStringValue(GET(fc, "pool"));
        const nw_kube_obj_t *pool = nw_kube_snap_get(s, NW_KUBE_NODEPOOLS, NULL, poolname);
        if (!pool)
            continue;
        cJSON *body = nodeclaim_json(fc, pool), *created = NULL;
        nw_err_t e = {0};
        if (nw_kube_create(c->kube, &nw_kube_res_nodeclaims, NULL, body, &created, &e) != NW_OK) {
            nw_log_error("provisioner", "cannot create a NodeClaim", NW_LS("nodepool", poolname),
                         NW_LS("error", e.msg));
            cJSON_Delete(body);
            continue;
        }
        cJSON_Delete(body);
        atomic_fetch_add(&c->n_created, 1);
        const char *name = nw_ctl_str(created, "metadata.name");
        const cJSON *types = GET(fc, "types");
        nw_log_info("provisioner", "created NodeClaim", NW_LS("nodeclaim", name ? name : ""),
                    NW_LS("nodepool", poolname),
                    NW_LS("instanceType", cJSON_GetStringValue(cJSON_GetArrayItem(types, 0))),
                    NW_LI("instanceTypes", cJSON_GetArraySize(types)),
                    NW_LS("zone", cJSON_GetStringValue(GET(fc, "zone"))),
                    NW_LS("capacityType", cJSON_GetStringValue(GET(fc, "capacityType"))),
                    NW_LF("price", cJSON_GetNumberValue(GET(fc, "price"))),
                    NW_LI("pods", cJSON_GetArraySize(GET(fc, "pods"))));
        nw_ctl_claim_t *m = name ? claim_remember(c, name) : NULL;
        if (m) {
            cJSON_Delete(m->obj);
            m->obj = cJSON_Duplicate(created, 1);
        }
        const cJSON *pi;
        char msg[400];
        snprintf(msg, sizeof msg, "Pod should schedule on: nodeclaim/%s", name ? name : "");
        cJSON_ArrayForEach(pi, GET(fc, "pods"))
        {
            int k = (int)cJSON_GetNumberValue(pi);
            if (k >= 0 && (size_t)k < npend)
                event(c, &nw_kube_res_pods, pend[k]->json, "Normal", "Nominated", msg);
        }
        if (exit_after && *exit_after) {
            nw_log_warn("provisioner", "NW_DEBUG_EXIT_AFTER_NODECLAIM: exiting before the launch",
                        NW_LS("nodeclaim", name ? name : ""));
            _exit(3);
        }
        if (name)
            launch_claim(c, s, created, 1);
        cJSON_Delete(created);
    }
    cJSON_Delete(out);
    cJSON_Delete(in);
}

void nw_prov_tick(nw_ctl_t *c, const nw_kube_snap_t *s)
{
    claims_expire(c, s);
    /* NodeClaims that exist without a providerID: launch them (once) */
    for (size_t i = 0; i < nw_kube_snap_count(s, NW_KUBE_NODECLAIMS); i++) {
        const nw_kube_obj_t *nc = nw_kube_snap_at(s, NW_KUBE_NODECLAIMS, i);
        if (nc->terminating || nc->provider_id[0])
            continue;
        launch_claim(c, s, nc->json, 0);
    }
    const nw_kube_obj_t *const *pend;
    size_t np = nw_kube_snap_pending_pods(s, &pend);
    int64_t mono = nw_clock_mono(c->clock);
    int trigger = 0;
    for (size_t i = 0; i < np && !trigger; i++)
        if (!seen(c, pend[i]->uid))
            trigger = 1;
    if (np && c->next_resolve_mono && mono >= c->next_resolve_mono)
        trigger = 1; /* pods still pending: look again every 10 s */
    if (np && !c->next_resolve_mono)
        trigger = 1;
    if (trigger) {
        seen_reset(c, pend, np);
        if (!c->window_open_mono)
            c->window_open_mono = mono;
        c->last_trigger_mono = mono;
        c->next_resolve_mono = mono + RESOLVE_EVERY_NS;
    }
    if (!c->window_open_mono)
        return;
    if (mono - c->last_trigger_mono < c->batch_idle_ns &&
        mono - c->window_open_mono < c->batch_max_ns)
        return;
    c->window_open_mono = 0;
    if (np)
        provision(c, s, pend, np);
}

/* How long until the batch window closes (ns; < 0: no window open). */
int64_t nw_prov_next_deadline(const nw_ctl_t *c, int64_t mono);
int64_t nw_prov_next_deadline(const nw_ctl_t *c, int64_t mono)
{
    if (!c->window_open_mono)
        return c->next_resolve_mono ? c->next_resolve_mono - mono : -1;
    int64_t a = c->last_trigger_mono + c->batch_idle_ns - mono,
            b = c->window_open_mono + c->batch_max_ns - mono;
    return a < b ? a : b;
}
