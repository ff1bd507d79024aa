/*
 * scaler/state/simsnap.c — the live cluster as a scheduling snapshot, nominations, and
 * NodeClaims from simulated claims (see simsnap.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admission/gpu.h"
#include "common/json.h"
#include "api/wellknown.h"
#include "api/requirements.h"
#include "common/log.h"
#include "common/oom.h"
#include "scaler/cloud/compat.h"
#include "scaler/cloud/kubelet.h"
#include "scaler/sched/from_catalog.h"
#include "scaler/state/simsnap.h"

/* ---- catalog ---- */

static void res_str(cJSON *o, const char *name, const char *suffix, long long v)
{
    char b[48];
    snprintf(b, sizeof b, "%lld%s", v, suffix);
    cJSON_AddStringToObject(o, name, b);
}

static cJSON *catres_json(const nw_cat_res_t *r)
{
    cJSON *o = cJSON_CreateObject();
    res_str(o, "cpu", "m", (long long)r->cpu_m);
    if (r->memory_bytes % 1048576 == 0)
        res_str(o, "memory", "Mi", (long long)(r->memory_bytes / 1048576));
    else
        res_str(o, "memory", "", (long long)r->memory_bytes);
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

static void overhead(const nw_simsnap_env_t *e, nw_overhead_opts_t *o)
{
    nw_catalog_overhead_opts_default(o);
    if (e->vm_overhead > 0)
        o->vm_memory_overhead_percent = e->vm_overhead;
    o->reserved_enis = e->reserved_enis;
    o->default_max_pods = e->default_max_pods;
}

/* the settings' overhead with nodeclass's kubelet settings; a class whose settings do not
 * parse (admission refuses them; an object stored before) keeps the settings' alone */
static void class_overhead(const nw_simsnap_env_t *e, const cJSON *nodeclass, nw_overhead_opts_t *o)
{
    overhead(e, o);
    nw_err_t err = {0};
    if (nw_kubelet_overhead(nodeclass, o, &err) != NW_OK)
        nw_log_warn("provisioner", "EC2NodeClass kubelet settings ignored",
                    NW_LS("ec2nodeclass", nw_json_str_at(nodeclass, "metadata.name")),
                    NW_LS("field", err.path), NW_LS("error", err.msg));
}

cJSON *nw_simsnap_type_resources(const nw_simsnap_env_t *e, const cJSON *nodeclass,
                                 const char *type, int allocatable)
{
    const nw_itype_t *t = type && e->catalog ? nw_catalog_find(e->catalog, type) : NULL;
    if (!t)
        return NULL;
    nw_overhead_opts_t oo;
    class_overhead(e, nodeclass, &oo);
    nw_cat_res_t r;
    if (allocatable)
        nw_catalog_itype_allocatable(t, &oo, &r);
    else
        nw_catalog_itype_capacity(t, &oo, &r);
    return catres_json(&r);
}

/* ---- the snapshot ---- */

/* A NodeClaim's Initialized condition is True (its record). */
static bool claim_initialized(const nw_kube_obj_t *nc)
{
    const nw_node_cond_t *c = nw_node_meta_condition(&nc->nodeclaim->m, "Initialized");
    return c && strcmp(c->status_name, "True") == 0;
}

static bool excluded(const nw_simsnap_opts_t *o, const char *name)
{
    for (size_t i = 0; name && i < o->nexclude; i++)
        if (o->exclude[i] && strcmp(o->exclude[i], name) == 0)
            return true;
    return false;
}

/* "reschedulable" (kubernetes-sigs/karpenter pkg/utils/pod/scheduling.go IsReschedulable): active,
 * not DaemonSet, not mirror, not do-not-disrupt */
bool nw_simsnap_pod_reschedulable(const nw_kube_obj_t *o)
{
    const nw_pod_t *p = o->pod;
    if (nw_pod_is_terminal(p) || p->terminating)
        return false;
    if (nw_pod_owned_by(p, "DaemonSet") || nw_pod_owned_by(p, "Node"))
        return false;
    const char *dnd = nw_pod_annotation(p, "karpenter.sh/do-not-disrupt");
    return !(dnd && strcmp(dnd, "true") == 0);
}

typedef struct {
    const nw_simsnap_env_t *env;
    const nw_kube_snap_t *ks;
    const nw_simsnap_opts_t *o;
    nw_simsnap_t *out;
    size_t cpods, centries;
    nw_err_t *err;
} build_t;

/* the class's first device resource that is a name, not a "prefix*" pattern */
static const char *device_resource(const nw_accel_class_t *c)
{
    for (size_t i = 0; i < c->nresources; i++)
        if (!strchr(c->resources[i], '*'))
            return c->resources[i];
    return NULL;
}

bool nw_simsnap_dra_apply(const struct nw_gpu_policy *gpu, cJSON *j,
                          const struct nw_gpu_dra_src *src, const char **res_out, int *count_out)
{
    const nw_gpu_policy_t *p = gpu;
    if (res_out)
        *res_out = NULL;
    if (count_out)
        *count_out = 0;
    const cJSON *md = nw_json_get(j, "metadata");
    cJSON *spec = cJSON_GetObjectItemCaseSensitive(j, "spec");
    if (!p || !p->enabled || !cJSON_IsObject(spec) ||
        cJSON_GetArraySize(nw_json_get(spec, "resourceClaims")) == 0)
        return false;
    nw_gpu_dra_t dra;
    nw_gpu_dra_pod(p, spec, nw_json_str(md, "namespace"), nw_json_str(md, "name"), src, &dra);
    int k = -1;
    for (size_t i = 0; i < p->nclasses && k < 0; i++)
        if (dra.classes & (1u << i))
            k = (int)i;
    if (k < 0)
        return false;
    const nw_accel_class_t *c = &p->classes[k];
    cJSON *sel = cJSON_GetObjectItemCaseSensitive(spec, "nodeSelector");
    if (!cJSON_IsObject(sel)) {
        cJSON_DeleteItemFromObjectCaseSensitive(spec, "nodeSelector");
        sel = nw_json_add_object(spec, "nodeSelector");
    }
    if (!cJSON_GetObjectItemCaseSensitive(sel, p->label_key))
        nw_json_add_string(sel, p->label_key, c->label_value);
    const char *res = device_resource(c);
    cJSON *ctr = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(spec, "containers"), 0);
    if (res && cJSON_IsObject(ctr) && dra.devices[k] > 0) {
        cJSON *r = cJSON_GetObjectItemCaseSensitive(ctr, "resources");
        if (!cJSON_IsObject(r)) {
            cJSON_DeleteItemFromObjectCaseSensitive(ctr, "resources");
            r = nw_json_add_object(ctr, "resources");
        }
        cJSON *req = cJSON_GetObjectItemCaseSensitive(r, "requests");
        if (!cJSON_IsObject(req)) {
            cJSON_DeleteItemFromObjectCaseSensitive(r, "requests");
            req = nw_json_add_object(r, "requests");
        }
        if (!cJSON_GetObjectItemCaseSensitive(req, res)) {
            char n[24];
            snprintf(n, sizeof n, "%d", dra.devices[k]);
            nw_json_add_string(req, res, n);
            if (res_out)
                *res_out = res;
            if (count_out)
                *count_out = dra.devices[k];
        }
    }
    return true;
}

cJSON *nw_simsnap_dra_view(const struct nw_gpu_policy *gpu, const nw_kube_snap_t *ks,
                           const nw_kube_obj_t *pod, const char **res_out, int *count_out)
{
    const nw_gpu_policy_t *p = gpu;
    if (res_out)
        *res_out = NULL;
    if (count_out)
        *count_out = 0;
    if (!p || !p->enabled || !pod->pod ||
        cJSON_GetArraySize(nw_json_get(pod->pod->spec, "resourceClaims")) == 0)
        return NULL;
    nw_gpu_dra_src_t src = {nw_kube_cache_snap_lookup, (void *)ks, true};
    cJSON *j = nw_pod_to_json(pod->pod);
    if (nw_simsnap_dra_apply(gpu, j, &src, res_out, count_out))
        return j;
    cJSON_Delete(j);
    return NULL;
}

unsigned nw_simsnap_dra_classes(const nw_pod_t *pod, void *ud)
{
    const nw_simsnap_dra_ctx_t *x = ud;
    const nw_gpu_policy_t *p = x ? x->gpu : NULL;
    if (!p || !p->enabled || !pod ||
        cJSON_GetArraySize(nw_json_get(pod->spec, "resourceClaims")) == 0)
        return 0;
    nw_gpu_dra_src_t src = {nw_kube_cache_snap_lookup, (void *)x->ks, true};
    nw_gpu_dra_t dra;
    nw_gpu_dra_pod(p, pod->spec, pod->ns, pod->name, &src, &dra);
    return dra.classes;
}

/* Add pod p (as `as` says; NULL: where it is); one the simulation refuses is logged and
 * left out. A pod whose DRA claims ask for a class's devices enters as its DRA view. */
static NW_MUST_USE nw_rc_t push_pod(build_t *b, const nw_kube_obj_t *p, const nw_sched_pod_as_t *as,
                                    int resched)
{
    nw_simsnap_t *out = b->out;
    nw_err_t e = {0};
    size_t before = nw_snapshot_npods(out->sched);
    const char *dra_res = NULL;
    int dra_count = 0;
    cJSON *view = nw_simsnap_dra_view(b->env->gpu, b->ks, p, &dra_res, &dra_count);
    nw_rc_t rc = view ? nw_snap_pod_add_json_as(out->sched, view, as, &e)
                      : nw_snap_pod_add_as(out->sched, p->pod, as, &e);
    cJSON_Delete(view);
    if (rc == NW_ENOMEM)
        return nw_err_set(b->err, rc, "", "out of memory");
    if (rc != NW_OK) {
        nw_log_debug("provisioner", "pod left out of the simulation", NW_LS("pod", p->key),
                     NW_LS("field", e.path), NW_LS("error", e.msg));
        return NW_OK;
    }
    if (nw_snapshot_npods(out->sched) == before)
        return NW_OK;
    if (out->npods == b->cpods) {
        size_t n = b->cpods ? b->cpods * 2 : 256;
        const nw_kube_obj_t **v = realloc(out->pods, n * sizeof *v);
        if (!v)
            return nw_err_set(b->err, NW_ENOMEM, "", "out of memory");
        out->pods = v;
        unsigned char *r = realloc(out->rescheduled, n);
        if (!r)
            return nw_err_set(b->err, NW_ENOMEM, "", "out of memory");
        out->rescheduled = r;
        const char **dr = realloc(out->dra_res, n * sizeof *dr);
        if (!dr)
            return nw_err_set(b->err, NW_ENOMEM, "", "out of memory");
        out->dra_res = dr;
        int *dc = realloc(out->dra_count, n * sizeof *dc);
        if (!dc)
            return nw_err_set(b->err, NW_ENOMEM, "", "out of memory");
        out->dra_count = dc;
        b->cpods = n;
    }
    out->pods[out->npods] = p;
    out->rescheduled[out->npods] = (unsigned char)(resched != 0);
    out->dra_res[out->npods] = dra_res;
    out->dra_count[out->npods] = dra_count;
    out->npods++;
    return NW_OK;
}

static NW_MUST_USE nw_rc_t push_entry(build_t *b, const char *name, const char *claim)
{
    nw_simsnap_t *out = b->out;
    if (out->nentries == b->centries) {
        size_t n = b->centries ? b->centries * 2 : 32;
        char **a = realloc(out->entry_names, n * sizeof *a);
        if (!a)
            return NW_ENOMEM;
        out->entry_names = a;
        char **c2 = realloc(out->entry_claims, n * sizeof *c2);
        if (!c2)
            return NW_ENOMEM;
        out->entry_claims = c2;
        b->centries = n;
    }
    char *x = strdup(name), *y = strdup(claim);
    if (!x || !y) {
        free(x);
        free(y);
        return NW_ENOMEM;
    }
    out->entry_names[out->nentries] = x;
    out->entry_claims[out->nentries] = y;
    out->nentries++;
    return NW_OK;
}

const char *nw_simsnap_claim_of(const nw_simsnap_t *s, const char *target)
{
    for (size_t i = 0; target && i < s->nentries; i++)
        if (strcmp(s->entry_names[i], target) == 0)
            return s->entry_claims[i];
    return NULL;
}

/* The snapshot name under which a NodeClaim's capacity appears, or NULL. */
static const char *entry_of_claim(const nw_simsnap_t *s, const char *claim)
{
    for (size_t i = 0; claim && i < s->nentries; i++)
        if (strcmp(s->entry_claims[i], claim) == 0)
            return s->entry_names[i];
    return NULL;
}

/* One of an in-flight entry's resource lists: the NodeClaim's status.<which> when it has
 * one, else what the instance type offers (nw_simsnap_type_resources) when the type is
 * known; into out (initialised). false on out of memory. */
static bool entry_res(const nw_simsnap_env_t *env, const nw_resources_t *have,
                      const cJSON *nodeclass, const char *type, bool allocatable,
                      nw_resources_t *out)
{
    nw_err_t e = {0};
    if (nw_resources_len(have))
        return nw_resources_copy(out, have, &e) == NW_OK;
    cJSON *v = nw_simsnap_type_resources(env, nodeclass, type, allocatable);
    nw_rc_t rc = v ? nw_resources_from_json(out, v, NULL, &e) : NW_OK;
    cJSON_Delete(v);
    return rc != NW_ENOMEM;
}

/* In-flight capacity for the simulation, from the NodeClaim's record: under name, with the
 * claim's labels (plus what the launch recorded and every single-valued In requirement),
 * requirements, taints and startup taints, and its status.allocatable and capacity (or, while
 * it has none, those of its instance type: the label's, else the first its requirements
 * list, the cheapest, as the provisioner writes them; the launch's as remembered, while
 * the claim does not show it yet). */
static NW_MUST_USE nw_rc_t add_entry_rec(build_t *b, const nw_node_claim_t *nc, const char *name,
                                         const char *claim)
{
    const nw_simsnap_env_t *env = b->env;
    const nw_inflight_claim_t *m = env->inflight ? nw_inflight_find(env->inflight, claim) : NULL;
    const nw_kube_obj_t *ncl =
        nc->class_name[0]
            ? nw_kube_cache_snap_get(b->ks, NW_KUBE_EC2NODECLASSES, NULL, nc->class_name)
            : NULL;
    nw_labels_t l;
    nw_resources_t al, cap;
    nw_labels_init(&l);
    nw_resources_init(&al);
    nw_resources_init(&cap);
    bool ok = true;
    for (size_t i = 0; ok && i < nc->m.nlabels; i++)
        ok = nw_labels_set(&l, nc->m.labels[i].key, nc->m.labels[i].value) == NW_OK;
    if (m && m->status) {
        const char *kv[][2] = {
            {"node.kubernetes.io/instance-type", nw_json_str_at(m->status, "type")},
            {"topology.kubernetes.io/zone", nw_json_str_at(m->status, "zone")},
            {"karpenter.sh/capacity-type", nw_json_str_at(m->status, "ct")}};
        for (size_t i = 0; ok && i < 3; i++)
            if (kv[i][1] && *kv[i][1] && !nw_labels_get(&l, kv[i][0]))
                ok = nw_labels_set(&l, kv[i][0], kv[i][1]) == NW_OK;
    }
    for (size_t i = 0; ok && i < nc->requirements.n; i++) {
        const nw_req_t *r = &nc->requirements.v[i];
        if (!r->complement && r->nvalues == 1 && !nw_labels_get(&l, r->key))
            ok = nw_labels_set(&l, r->key, r->values[0]) == NW_OK;
    }
    const char *type = nw_labels_get(&l, "node.kubernetes.io/instance-type");
    if (!type && nc->type_first[0])
        type = nc->type_first;
    const cJSON *class = ncl ? ncl->json : NULL;
    ok = ok && entry_res(env, &nc->allocatable, class, type, true, &al) &&
         entry_res(env, &nc->capacity, class, type, false, &cap);
    nw_err_t er = {0};
    nw_rc_t rc = NW_ENOMEM;
    if (ok) {
        nw_snap_claim_as_t as = {name, &l, &al, &cap};
        rc = nw_snap_node_add_claim_as(b->out->sched, nc, &as, &er);
    }
    nw_labels_cleanup(&l);
    nw_resources_cleanup(&al);
    nw_resources_cleanup(&cap);
    if (rc == NW_ENOMEM)
        return nw_err_set(b->err, rc, "", "out of memory");
    if (rc != NW_OK) {
        nw_log_warn("provisioner", "NodeClaim left out of the simulation",
                    NW_LS("nodeclaim", claim), NW_LS("field", er.path), NW_LS("error", er.msg));
        return NW_OK;
    }
    if (push_entry(b, name, claim) != NW_OK)
        return nw_err_set(b->err, NW_ENOMEM, "", "out of memory");
    return NW_OK;
}

/* The same for a NodeClaim this process created that the cache does not show yet (its
 * JSON, from the create's answer): decoded into a record first. */
static NW_MUST_USE nw_rc_t add_entry_json(build_t *b, const cJSON *nc, const char *name)
{
    nw_node_claim_t *rec = NULL;
    nw_err_t er = {0};
    nw_rc_t rc = nw_node_claim_decode(nc, &rec, &er);
    if (rc == NW_ENOMEM)
        return nw_err_set(b->err, rc, "", "out of memory");
    if (rc != NW_OK) {
        nw_log_warn("provisioner", "NodeClaim left out of the simulation", NW_LS("nodeclaim", name),
                    NW_LS("field", er.path), NW_LS("error", er.msg));
        return NW_OK;
    }
    rc = add_entry_rec(b, rec, name, name);
    nw_node_claim_free(rec);
    return rc;
}

static NW_MUST_USE nw_rc_t add_bound_pods(build_t *b, const char *node)
{
    const nw_kube_obj_t *const *on;
    size_t n = nw_kube_cache_snap_pods_on_node(b->ks, node, &on);
    for (size_t i = 0; i < n; i++) {
        if (nw_pod_is_terminal(on[i]->pod))
            continue;
        nw_rc_t rc = push_pod(b, on[i], NULL, 0);
        if (rc != NW_OK)
            return rc;
    }
    return NW_OK;
}

/* The snapshot target of a pod's nomination: the entry of its NodeClaim while that
 * is in flight. Once the claim's node initialized, the kube-scheduler decides where
 * the pod goes and the simulation places it afresh. NULL: none. */
static const char *nominated_target(build_t *b, const char *uid)
{
    const char *claim = nw_nominations_claim_of(b->env->noms, uid);
    if (!claim)
        return NULL;
    nw_simsnap_t *o = b->out;
    if (o->nlooked_up == o->clooked_up) {
        size_t n = o->clooked_up ? 2 * o->clooked_up : 64;
        const char **v = realloc(o->looked_up, n * sizeof *v);
        if (v) {
            o->looked_up = v;
            o->clooked_up = n;
        }
    }
    if (o->nlooked_up < o->clooked_up)
        o->looked_up[o->nlooked_up++] = uid;
    return entry_of_claim(o, claim);
}

/* The Node that NodeClaim claim registered as, once it is no longer in flight (it has no
 * entry: initialized), NULL when none or either is being deleted. */
static const char *claim_node_now(build_t *b, const char *claim)
{
    const nw_kube_obj_t *nc =
        claim ? nw_kube_cache_snap_get(b->ks, NW_KUBE_NODECLAIMS, NULL, claim) : NULL;
    if (!nc || nc->terminating)
        return NULL;
    const nw_kube_obj_t *node =
        nc->provider_id[0] ? nw_kube_cache_snap_node_by_provider_id(b->ks, nc->provider_id) : NULL;
    if (!node && nc->nodeclaim->node_name[0])
        node = nw_kube_cache_snap_get(b->ks, NW_KUBE_NODES, NULL, nc->nodeclaim->node_name);
    return node && !node->terminating ? node->name : NULL;
}

/* Where a pending pod goes in the snapshot: nominated to an in-flight NodeClaim, bound to
 * it; nominated to one whose Node initialized since, pending with that Node preferred (the
 * solve puts it back there first while the Node has room: nw_sched_pod_as_t.prefer). */
static void nominated_as(build_t *b, const nw_kube_obj_t *p, nw_sched_pod_as_t *as)
{
    as->node = nominated_target(b, p->pod->uid);
    if (as->node)
        as->pending = false;
    else
        as->prefer = claim_node_now(b, nw_nominations_claim_of(b->env->noms, p->pod->uid));
}

static NW_MUST_USE nw_rc_t add_pending(build_t *b, const nw_kube_obj_t *p, int resched)
{
    /* from a node left out or being deleted: pending again */
    nw_sched_pod_as_t as = {.pending = resched != 0};
    nominated_as(b, p, &as);
    return push_pod(b, p, as.node || as.pending || as.prefer ? &as : NULL, resched);
}

void nw_simsnap_free(nw_simsnap_t *s)
{
    if (!s)
        return;
    nw_snapshot_free(s->sched);
    free(s->pods);
    free(s->rescheduled);
    free(s->dra_res);
    free(s->dra_count);
    for (size_t i = 0; i < s->nentries; i++) {
        free(s->entry_names[i]);
        free(s->entry_claims[i]);
    }
    free(s->entry_names);
    free(s->entry_claims);
    free(s->looked_up);
    free(s->notready);
    memset(s, 0, sizeof *s);
}

/* The EC2NodeClasses: each one's allocatable, the types it cannot launch, its capacity
 * reservations. */
static NW_MUST_USE nw_rc_t add_classes(build_t *b)
{
    const nw_simsnap_env_t *env = b->env;
    const nw_kube_snap_t *ks = b->ks;
    nw_simsnap_t *out = b->out;
    nw_err_t *err = b->err;
    nw_rc_t rc;
    /* each EC2NodeClass's kubelet settings and AMI family make its own allocatable */
    for (size_t i = 0; i < nw_kube_cache_snap_count(ks, NW_KUBE_EC2NODECLASSES); i++) {
        const nw_kube_obj_t *k = nw_kube_cache_snap_at(ks, NW_KUBE_EC2NODECLASSES, i);
        nw_overhead_opts_t co;
        class_overhead(env, k->json, &co);
        if ((rc = nw_from_catalog_add_class(out->sched, env->catalog, k->name, &co, err)) != NW_OK)
            return rc;
        /* the types the class cannot launch (its placement group's strategy is the launch's
         * to check: the class is not resolved here) */
        for (size_t t = 0; t < nw_catalog_len(env->catalog); t++) {
            const nw_itype_t *it = nw_catalog_at(env->catalog, t);
            nw_err_t e = {0};
            if (!nw_compat_class_compatible(it, k->json, NULL, NULL, 0) &&
                nw_snap_node_exclude_class_type(out->sched, k->name, it->name, &e) == NW_ENOMEM)
                return nw_err_set(err, NW_ENOMEM, "", "out of memory");
        }
        /* its status.capacityReservations: reserved offerings only its pools see */
        if ((rc = nw_snap_node_add_class_reservations(out->sched, k->json, NULL,
                                                      env->reservation_available,
                                                      env->reservation_ud, err)) != NW_OK)
            return rc;
    }
    return NW_OK;
}

/* The condition of type in obj's status.conditions, or NULL. */
static const cJSON *condition(const cJSON *obj, const char *type)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, nw_json_get(nw_json_get(obj, "status"), "conditions"))
    {
        const char *t = nw_json_str(c, "type");
        if (t && strcmp(t, type) == 0)
            return c;
    }
    return NULL;
}

/* A pool whose EC2NodeClass is not ready is left out (*unready), and why is added to
 * out->notready. Only Ready=True counts as ready: a class with no Ready condition yet (just
 * created, not reconciled) or Ready=Unknown waits as one with Ready=False does, as
 * Karpenter's NodePool readiness turns a class's unknown readiness into NodeClassReady False
 * (NodeClassReadinessUnknown) and its provisioner then leaves the pool out. A pool whose
 * class does not exist is kept: its NodeClaims fail at launch, naming the missing class. */
static NW_MUST_USE nw_rc_t pool_class_unready(build_t *b, const nw_kube_obj_t *p, bool *unready)
{
    *unready = false;
    const char *cn = nw_json_str_at(p->json, "spec.template.spec.nodeClassRef.name");
    const nw_kube_obj_t *k =
        cn ? nw_kube_cache_snap_get(b->ks, NW_KUBE_EC2NODECLASSES, NULL, cn) : NULL;
    const cJSON *rd = k ? condition(k->json, "Ready") : NULL;
    const char *st = nw_json_str(rd, "status");
    if (!k || (st && strcmp(st, "True") == 0))
        return NW_OK;
    *unready = true;
    const char *reason = nw_json_str(rd, "reason"), *msg = nw_json_str(rd, "message");
    if (!st || strcmp(st, "False") != 0) {
        /* no verdict yet: Karpenter's words for it */
        reason = "NodeClassReadinessUnknown";
        msg = rd ? "Node Class Readiness Unknown" : "the EC2NodeClass has no status yet";
    }
    char one[900];
    int n = snprintf(one, sizeof one,
                     "%snodepool \"%.200s\": EC2NodeClass \"%.200s\" is not ready: %s%s%.400s",
                     b->out->nnotready ? "; " : "", p->name, cn, reason ? reason : "NotReady",
                     msg && *msg ? ": " : "", msg ? msg : "");
    if (n < 0)
        return NW_OK;
    if ((size_t)n >= sizeof one)
        n = (int)sizeof one - 1;
    size_t have = b->out->notready ? strlen(b->out->notready) : 0;
    char *t = realloc(b->out->notready, have + (size_t)n + 1);
    if (!t)
        return nw_err_set(b->err, NW_ENOMEM, "", "out of memory");
    memcpy(t + have, one, (size_t)n + 1);
    b->out->notready = t;
    b->out->nnotready++;
    nw_log_debug("provisioner", "NodePool left out: its EC2NodeClass is not ready",
                 NW_LS("nodepool", p->name), NW_LS("ec2nodeclass", cn),
                 NW_LS("reason", reason ? reason : ""));
    return NW_OK;
}

/* The pool as the isolation policy's pool rules make it (an owned copy), or NULL when
 * they change nothing (no policy, disabled, skipped, denied, or already isolated). */
static cJSON *isolated_pool(const nw_simsnap_env_t *env, const cJSON *pool)
{
    const nw_gpu_policy_t *gpu = (const nw_gpu_policy_t *)env->gpu;
    if (!gpu || !gpu->enabled)
        return NULL;
    nw_jsonpatch_t patch;
    nw_jsonpatch_init(&patch);
    nw_rc_t rc = nw_gpu_pool_patch(gpu, pool, &patch, NULL);
    char *text = rc == NW_OK ? nw_jsonpatch_take_text(&patch) : NULL;
    if (rc == NW_ENOMEM || patch.rc == NW_ENOMEM)
        nw_oom("isolated NodePool");
    nw_jsonpatch_cleanup(&patch);
    if (!text)
        return NULL;
    cJSON *doc = nw_json_dup(pool);
    nw_err_t e = {0};
    if (nw_jsonpatch_apply_text(&doc, text, &e) != NW_OK) {
        cJSON_Delete(doc);
        doc = NULL;
    }
    free(text);
    return doc;
}

/* The NodePools and DaemonSets (a bad one is left out and logged). */
static NW_MUST_USE nw_rc_t add_pools(build_t *b)
{
    const nw_kube_snap_t *ks = b->ks;
    nw_simsnap_t *out = b->out;
    nw_err_t *err = b->err;
    nw_rc_t rc;
    for (size_t i = 0; i < nw_kube_cache_snap_count(ks, NW_KUBE_NODEPOOLS); i++) {
        const nw_kube_obj_t *p = nw_kube_cache_snap_at(ks, NW_KUBE_NODEPOOLS, i);
        if (p->terminating)
            continue;
        bool unready = false;
        if ((rc = pool_class_unready(b, p, &unready)) != NW_OK)
            return rc;
        if (unready)
            continue;
        nw_err_t e = {0};
        cJSON *iso = isolated_pool(b->env, p->json);
        rc = nw_snap_node_add_pool_json(out->sched, iso ? iso : p->json, &e);
        cJSON_Delete(iso);
        if (rc == NW_ENOMEM)
            return nw_err_set(err, rc, "", "out of memory");
        if (rc != NW_OK)
            nw_log_warn("provisioner", "NodePool left out of the simulation",
                        NW_LS("nodepool", p->name), NW_LS("field", e.path), NW_LS("error", e.msg));
    }
    for (size_t i = 0; i < nw_kube_cache_snap_count(ks, NW_KUBE_DAEMONSETS); i++) {
        const nw_kube_obj_t *d = nw_kube_cache_snap_at(ks, NW_KUBE_DAEMONSETS, i);
        nw_err_t e = {0};
        if ((rc = nw_snap_node_add_daemonset_json(out->sched, d->json, &e)) == NW_ENOMEM)
            return nw_err_set(err, rc, "", "out of memory");
        if (rc != NW_OK)
            nw_log_debug("provisioner", "DaemonSet left out of the simulation",
                         NW_LS("daemonset", d->key), NW_LS("error", e.msg));
    }
    return NW_OK;
}

/* Volumes, storage classes, namespaces and CSINodes (a bad one is left out and logged). */
static NW_MUST_USE nw_rc_t add_objects(build_t *b)
{
    const nw_kube_snap_t *ks = b->ks;
    nw_simsnap_t *out = b->out;
    nw_err_t *err = b->err;
    nw_rc_t rc;
    /* storage and namespaces, before the pods whose volumes and affinities use them */
    static const struct {
        nw_kube_kind_t k;
        nw_rc_t (*add)(nw_sched_snap_t *, const cJSON *, nw_err_t *);
    } extra[] = {{NW_KUBE_PVS, nw_snap_volume_add_pv_json},
                 {NW_KUBE_PVCS, nw_snap_volume_add_pvc_json},
                 {NW_KUBE_STORAGECLASSES, nw_snap_volume_add_storageclass_json},
                 {NW_KUBE_NAMESPACES, nw_snap_pod_add_namespace_json},
                 {NW_KUBE_CSINODES, nw_snap_volume_add_csinode_json}};
    for (size_t x = 0; x < sizeof extra / sizeof extra[0]; x++)
        for (size_t i = 0; i < nw_kube_cache_snap_count(ks, extra[x].k); i++) {
            const nw_kube_obj_t *d = nw_kube_cache_snap_at(ks, extra[x].k, i);
            nw_err_t e = {0};
            if ((rc = extra[x].add(out->sched, d->json, &e)) == NW_ENOMEM)
                return nw_err_set(err, rc, "", "out of memory");
            if (rc != NW_OK)
                nw_log_warn("provisioner", "object left out of the simulation",
                            NW_LS("kind", nw_kube_cache_kind_name(extra[x].k)),
                            NW_LS("name", d->key), NW_LS("field", e.path), NW_LS("error", e.msg));
        }
    return NW_OK;
}

/* The Nodes (and the NodeClaims they registered for) with their pods; those excluded or
 * being deleted go to resched when their pods are to be placed again. */
/* Does the cluster have a DeviceClass of class k (by name or by its selectors)? */
static bool class_has_deviceclass(const nw_gpu_policy_t *p, const nw_kube_snap_t *ks, int k)
{
    size_t n = nw_kube_cache_snap_count(ks, NW_KUBE_DEVICECLASSES);
    for (size_t i = 0; i < n; i++) {
        const nw_kube_obj_t *o = nw_kube_cache_snap_at(ks, NW_KUBE_DEVICECLASSES, i);
        if (nw_gpu_dra_device_class(p, o->name, o->json) == k)
            return true;
    }
    return false;
}

/* A node of an accelerator class whose devices come through DRA: its kubelet registers no
 * device resource (the driver publishes a ResourceSlice), so the simulation, which counts
 * DRA pods' devices as the class's device resource (nw_simsnap_dra_view), gives it its
 * instance type's count of that resource. Only when the cluster has a DeviceClass of the
 * class and the node's allocatable has none of it: 1 and *view, the node's record with its
 * own allocatable and capacity holding that count (the caller cleans those two up); 0:
 * the node as it is; -1: out of memory. */
static int dra_node_view(build_t *b, const nw_kube_obj_t *n, nw_node_t *view)
{
    const nw_gpu_policy_t *p = b->env->gpu;
    if (!p || !p->enabled || nw_kube_cache_snap_count(b->ks, NW_KUBE_DEVICECLASSES) == 0)
        return 0;
    const nw_node_meta_t *meta = &n->node->m;
    const char *lv = nw_node_meta_label(meta, p->label_key);
    int k = -1;
    for (size_t i = 0; lv && i < p->nclasses && k < 0; i++)
        if (strcmp(lv, p->classes[i].label_value) == 0)
            k = (int)i;
    const char *res = k >= 0 ? device_resource(&p->classes[k]) : NULL;
    nw_quantity_t have;
    if (!res || (nw_resources_get(&n->node->allocatable, res, &have) && have.milli != 0) ||
        !class_has_deviceclass(p, b->ks, k))
        return 0;
    cJSON *cap = nw_simsnap_type_resources(b->env, NULL,
                                           nw_node_meta_label(meta, NW_LABEL_INSTANCE_TYPE), 0);
    const char *count = nw_json_str(cap, res);
    nw_quantity_t q;
    nw_err_t e = {0};
    if (!count || nw_quantity_parse(count, &q, &e) != NW_OK) {
        cJSON_Delete(cap);
        return 0;
    }
    cJSON_Delete(cap);
    /* the record's fields, borrowed, but for its two resource lists, copied and set */
    *view = *n->node;
    nw_resources_init(&view->allocatable);
    nw_resources_init(&view->capacity);
    const nw_resources_t *from[2] = {&n->node->allocatable, &n->node->capacity};
    nw_resources_t *to[2] = {&view->allocatable, &view->capacity};
    for (int i = 0; i < 2; i++)
        if (nw_resources_len(from[i]) && (nw_resources_copy(to[i], from[i], &e) != NW_OK ||
                                          nw_resources_set(to[i], res, q, &e) != NW_OK)) {
            nw_resources_cleanup(&view->allocatable);
            nw_resources_cleanup(&view->capacity);
            return -1;
        }
    return 1;
}

static NW_MUST_USE nw_rc_t add_nodes(build_t *b, const nw_kube_obj_t **resched, size_t *nresched)
{
    const nw_kube_snap_t *ks = b->ks;
    const nw_simsnap_opts_t *o = b->o;
    nw_simsnap_t *out = b->out;
    nw_err_t *err = b->err;
    nw_rc_t rc = NW_OK;
    size_t nn = nw_kube_cache_snap_count(ks, NW_KUBE_NODES);
    for (size_t i = 0; i < nn && rc == NW_OK; i++) {
        const nw_kube_obj_t *n = nw_kube_cache_snap_at(ks, NW_KUBE_NODES, i);
        const nw_kube_obj_t *nc =
            n->provider_id[0] ? nw_kube_cache_snap_nodeclaim_by_provider_id(ks, n->provider_id)
                              : NULL;
        int excl = excluded(o, n->name) || (nc && excluded(o, nc->name));
        int deleting = n->terminating || (nc && nc->terminating) ||
                       nw_node_meta_has_taint(&n->node->m, NW_TAINT_DISRUPTED, "NoSchedule");
        if (excl || deleting) {
            if ((excl && o->reschedule_excluded) || (!excl && o->reschedule_deleting))
                resched[(*nresched)++] = n;
            continue;
        }
        if (n->node->unschedulable)
            continue;
        if (nc && !claim_initialized(nc))
            rc = add_entry_rec(b, nc->nodeclaim, n->name, nc->name);
        else {
            nw_err_t e = {0};
            /* from the Node's record, or its DRA view */
            nw_node_t view;
            int dra = dra_node_view(b, n, &view);
            rc = dra < 0 ? nw_err_set(&e, NW_ENOMEM, "", "out of memory")
                         : nw_snap_node_add_node(out->sched, dra ? &view : n->node, &e);
            if (dra > 0) {
                nw_resources_cleanup(&view.allocatable);
                nw_resources_cleanup(&view.capacity);
            }
            if (rc == NW_ENOMEM)
                nw_err_set(err, rc, "", "out of memory");
            else if (rc != NW_OK) {
                nw_log_warn("provisioner", "Node left out of the simulation",
                            NW_LS("node", n->name), NW_LS("field", e.path), NW_LS("error", e.msg));
                rc = NW_OK;
                continue;
            }
        }
        if (rc == NW_OK)
            rc = add_bound_pods(b, n->name);
    }
    return rc;
}

/* The NodeClaims in flight without a Node: the cache's and those this process created
 * that the cache does not show yet. */
static NW_MUST_USE nw_rc_t add_claims(build_t *b)
{
    const nw_simsnap_env_t *env = b->env;
    const nw_kube_snap_t *ks = b->ks;
    const nw_simsnap_opts_t *o = b->o;
    nw_rc_t rc = NW_OK;
    /* in-flight NodeClaims without a Node */
    for (size_t i = 0; i < nw_kube_cache_snap_count(ks, NW_KUBE_NODECLAIMS) && rc == NW_OK; i++) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_at(ks, NW_KUBE_NODECLAIMS, i);
        if (nc->terminating || excluded(o, nc->name))
            continue;
        const nw_kube_obj_t *node =
            nc->provider_id[0] ? nw_kube_cache_snap_node_by_provider_id(ks, nc->provider_id) : NULL;
        const char *nname = nc->nodeclaim->node_name;
        if (!node && *nname)
            node = nw_kube_cache_snap_get(ks, NW_KUBE_NODES, NULL, nname);
        if (node)
            continue; /* handled with the Nodes */
        rc = add_entry_rec(b, nc->nodeclaim, nc->name, nc->name);
    }
    /* NodeClaims this process created that the cache does not show yet */
    for (const nw_inflight_claim_t *m = env->inflight ? env->inflight->head : NULL;
         m && rc == NW_OK; m = m->next) {
        if (!m->obj || m->deleted || excluded(o, m->name) ||
            nw_kube_cache_snap_get(ks, NW_KUBE_NODECLAIMS, NULL, m->name))
            continue;
        rc = add_entry_json(b, m->obj, m->name);
    }
    return rc;
}

/* The pods of the resched nodes, as pending. */
static NW_MUST_USE nw_rc_t add_rescheduled(build_t *b, const nw_kube_obj_t *const *resched,
                                           size_t nresched)
{
    const nw_kube_snap_t *ks = b->ks;
    nw_rc_t rc = NW_OK;
    for (size_t i = 0; i < nresched && rc == NW_OK; i++) {
        const nw_kube_obj_t *const *on;
        size_t np = nw_kube_cache_snap_pods_on_node(ks, resched[i]->name, &on);
        for (size_t k = 0; k < np && rc == NW_OK; k++)
            if (nw_simsnap_pod_reschedulable(on[k]))
                rc = add_pending(b, on[k], 1);
    }
    return rc;
}

/* The first part of a build: the snapshot, its options, the catalog, node classes,
 * NodePools, DaemonSets, storage and namespaces, then the Nodes with their bound pods
 * (resched: the Nodes whose pods are to be placed again, *nresched of them, room for
 * every Node). */
static NW_MUST_USE nw_rc_t build_base(build_t *b, const nw_kube_obj_t **resched, size_t *nresched)
{
    const nw_simsnap_env_t *env = b->env;
    const nw_simsnap_opts_t *o = b->o;
    nw_simsnap_t *out = b->out;
    nw_err_t *err = b->err;
    if (!(out->sched = nw_snapshot_new()))
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    nw_sched_opts_t so = {.require_unschedulable = true,
                          .ignore_preferences = o->ignore_preferences || env->ignore_preferences,
                          .repack = o->repack,
                          .min_values_best_effort = env->min_values_best_effort};
    nw_snapshot_set_opts(out->sched, &so);
    nw_overhead_opts_t oo;
    overhead(env, &oo);
    if (!env->catalog)
        return nw_err_set(err, NW_EINVAL, "catalog", "no instance-type catalog");
    nw_rc_t rc = nw_from_catalog_add(out->sched, env->catalog, env->ice, env->now_mono, &oo, err);
    if (rc != NW_OK)
        return rc;
    if ((rc = add_classes(b)) != NW_OK || (rc = add_pools(b)) != NW_OK ||
        (rc = add_objects(b)) != NW_OK)
        return rc;
    /* Nodes (and the NodeClaims they registered for) */
    return add_nodes(b, resched, nresched);
}

/* The rest: in-flight NodeClaims, the pods of excluded / deleting Nodes and the pending
 * pods. */
static NW_MUST_USE nw_rc_t build_rest(build_t *b, const nw_kube_obj_t *const *resched,
                                      size_t nresched)
{
    const nw_simsnap_opts_t *o = b->o;
    nw_rc_t rc = add_claims(b);
    /* pods of excluded / deleting nodes, as pending */
    if (rc == NW_OK)
        rc = add_rescheduled(b, resched, nresched);
    if (o->include_pending && rc == NW_OK) {
        const nw_kube_obj_t *const *pend;
        size_t np = nw_kube_cache_snap_pending_pods(b->ks, &pend);
        for (size_t i = 0; i < np && rc == NW_OK; i++)
            rc = add_pending(b, pend[i], 0);
        /* pods nominated by the provisioner's own write: pending as far as it is
         * concerned (not a preemption in progress) */
        for (size_t i = 0; i < o->nown_nominated && rc == NW_OK; i++) {
            const nw_kube_obj_t *p = o->own_nominated[i];
            nw_sched_pod_as_t as = {.pending = true};
            nominated_as(b, p, &as);
            rc = push_pod(b, p, &as, 0);
        }
    }
    return rc;
}

nw_rc_t nw_simsnap_build(const nw_simsnap_env_t *env, const nw_kube_snap_t *ks,
                         const nw_simsnap_opts_t *o, nw_simsnap_t *out, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    static const nw_simsnap_opts_t defaults = {0};
    if (!o)
        o = &defaults;
    build_t b = {env, ks, o, out, 0, 0, err};
    size_t nn = nw_kube_cache_snap_count(ks, NW_KUBE_NODES);
    const nw_kube_obj_t **resched = calloc(nn + 1, sizeof *resched);
    size_t nresched = 0;
    if (!resched)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    nw_rc_t rc = build_base(&b, resched, &nresched);
    if (rc == NW_OK)
        rc = build_rest(&b, resched, nresched);
    free(resched);
    return rc;
}

/* ---- the Nodes' part kept between builds ---- */

/* What the Nodes' part of a build read, besides the Nodes and their bound pods: equal
 * keys, equal parts (the struct is zeroed before it is filled, so it compares whole). */
typedef struct {
    uint64_t kgen[NW_KUBE_KINDS]; /* every kind's last change but the pods' */
    uint64_t bound;               /* the bound pods' last change */
    const nw_catalog_t *catalog;
    uint64_t catalog_version;
    const nw_ice_t *ice;
    uint64_t ice_seq;
    size_t ice_live;
    double vm_overhead;
    int64_t default_max_pods;
    int reserved_enis;
    bool min_values_best_effort, ignore_preferences, reschedule_deleting, repack;
    const void *gpu;
    const void *reservation_available;
} base_key_t;

struct nw_simsnap_cache {
    bool have;       /* ss holds a marked Nodes' part */
    bool lent;       /* ss is a build's, until nw_simsnap_release */
    base_key_t key;  /* what it was built from */
    nw_simsnap_t ss; /* the Nodes' part (npods pods then) */
    size_t npods;
    size_t cpods, centries;        /* the room of ss's arrays */
    const nw_kube_obj_t **resched; /* the Nodes whose pods move, borrowed */
    size_t nresched;
    uint64_t builds, reuses;
};

static void base_key(base_key_t *k, const nw_simsnap_env_t *env, const nw_kube_snap_t *ks,
                     const nw_simsnap_opts_t *o)
{
    memset(k, 0, sizeof *k);
    for (int i = 0; i < NW_KUBE_KINDS; i++)
        if (i != NW_KUBE_PODS)
            k->kgen[i] = nw_kube_cache_snap_kind_generation(ks, (nw_kube_kind_t)i);
    k->bound = nw_kube_cache_snap_bound_pods_generation(ks);
    k->catalog = env->catalog;
    k->catalog_version = nw_catalog_version(env->catalog);
    k->ice = env->ice;
    k->ice_seq = env->ice ? nw_ice_seq(env->ice) : 0;
    k->ice_live = nw_ice_live(env->ice, env->now_mono);
    k->vm_overhead = env->vm_overhead;
    k->default_max_pods = env->default_max_pods;
    k->reserved_enis = env->reserved_enis;
    k->min_values_best_effort = env->min_values_best_effort;
    k->ignore_preferences = o->ignore_preferences || env->ignore_preferences;
    k->reschedule_deleting = o->reschedule_deleting;
    k->repack = o->repack;
    k->gpu = env->gpu;
    k->reservation_available = env->reservation_available ? env->reservation_ud : NULL;
}

nw_simsnap_cache_t *nw_simsnap_cache_new(void)
{
    return calloc(1, sizeof(nw_simsnap_cache_t));
}

void nw_simsnap_cache_drop(nw_simsnap_cache_t *c)
{
    if (!c || c->lent)
        return;
    nw_simsnap_free(&c->ss);
    free(c->resched);
    c->resched = NULL;
    c->nresched = 0;
    c->have = false;
}

void nw_simsnap_cache_free(nw_simsnap_cache_t *c)
{
    if (!c)
        return;
    c->lent = false; /* a build still lent out is the caller's bug: its memory goes with it */
    nw_simsnap_cache_drop(c);
    free(c);
}

void nw_simsnap_cache_counts(const nw_simsnap_cache_t *c, uint64_t *builds, uint64_t *reuses)
{
    *builds = c ? c->builds : 0;
    *reuses = c ? c->reuses : 0;
}

/* Make c hold the Nodes' part for (env, ks, o): kept when its key holds, else built and
 * marked. *kept: it can be kept (no exclusion, no in-flight entry among the Nodes, no
 * capacity reservation: what they read is not in the key). On an error c holds nothing. */
static NW_MUST_USE nw_rc_t cache_base(nw_simsnap_cache_t *c, const nw_simsnap_env_t *env,
                                      const nw_kube_snap_t *ks, const nw_simsnap_opts_t *o,
                                      bool *kept, nw_err_t *err)
{
    base_key_t k;
    base_key(&k, env, ks, o);
    *kept = true;
    if (c->have && memcmp(&k, &c->key, sizeof k) == 0)
        return NW_OK;
    nw_simsnap_cache_drop(c);
    size_t nn = nw_kube_cache_snap_count(ks, NW_KUBE_NODES);
    if (!(c->resched = calloc(nn + 1, sizeof *c->resched)))
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    memset(&c->ss, 0, sizeof c->ss);
    build_t b = {env, ks, o, &c->ss, 0, 0, err};
    nw_rc_t rc = build_base(&b, c->resched, &c->nresched);
    c->builds++;
    c->cpods = b.cpods;
    c->centries = b.centries;
    c->npods = c->ss.npods;
    c->key = k;
    c->have = true;
    if (rc != NW_OK) {
        nw_simsnap_cache_drop(c);
        return rc;
    }
    *kept = c->ss.nentries == 0 && nw_snapshot_nreservations(c->ss.sched) == 0;
    if (*kept && nw_snap_mark_set(c->ss.sched) != NW_OK)
        *kept = false;
    return NW_OK;
}

nw_rc_t nw_simsnap_cache_prepare(nw_simsnap_cache_t *c, const nw_simsnap_env_t *env,
                                 const nw_kube_snap_t *ks, const nw_simsnap_opts_t *o,
                                 nw_err_t *err)
{
    if (!c || c->lent || !o || o->nexclude)
        return NW_OK;
    bool kept;
    nw_rc_t rc = cache_base(c, env, ks, o, &kept, err);
    if (rc == NW_OK && !kept)
        nw_simsnap_cache_drop(c);
    return rc;
}

nw_rc_t nw_simsnap_build_cached(nw_simsnap_cache_t *c, const nw_simsnap_env_t *env,
                                const nw_kube_snap_t *ks, const nw_simsnap_opts_t *o,
                                nw_simsnap_t *out, nw_err_t *err)
{
    if (!c || c->lent || !o || o->nexclude)
        return nw_simsnap_build(env, ks, o, out, err);
    memset(out, 0, sizeof *out);
    bool kept;
    uint64_t builds = c->builds;
    nw_rc_t rc = cache_base(c, env, ks, o, &kept, err);
    if (rc != NW_OK)
        return rc;
    if (c->builds == builds)
        c->reuses++;
    *out = c->ss;
    build_t b = {env, ks, o, out, c->cpods, c->centries, err};
    rc = build_rest(&b, c->resched, c->nresched);
    if (!kept) {
        /* the build is the caller's alone */
        memset(&c->ss, 0, sizeof c->ss);
        nw_simsnap_cache_drop(c);
        return rc;
    }
    c->cpods = b.cpods;
    c->centries = b.centries;
    c->lent = true;
    return rc;
}

void nw_simsnap_release(nw_simsnap_cache_t *c, nw_simsnap_t *s)
{
    if (!c || !c->lent || !s->sched || s->sched != c->ss.sched) {
        nw_simsnap_free(s);
        return;
    }
    c->lent = false;
    /* back to the Nodes' part: no in-flight entry was in it, no nomination looked up */
    for (size_t i = 0; i < s->nentries; i++) {
        free(s->entry_names[i]);
        free(s->entry_claims[i]);
    }
    s->nentries = 0;
    s->nlooked_up = 0;
    s->npods = c->npods;
    c->ss = *s;
    memset(s, 0, sizeof *s);
    if (!nw_snap_mark_rewind(c->ss.sched))
        nw_simsnap_cache_drop(c);
}

bool nw_simsnap_is_nominated(nw_nominations_t *noms, const nw_kube_snap_t *ks,
                             const char *node_or_claim, int64_t now_mono, int64_t window_ns)
{
    if (!node_or_claim)
        return false;
    /* the name may be a Node: its NodeClaim is the nomination target */
    const char *claim = node_or_claim;
    const nw_kube_obj_t *n = nw_kube_cache_snap_get(ks, NW_KUBE_NODES, NULL, node_or_claim);
    if (n && n->provider_id[0]) {
        const nw_kube_obj_t *nc = nw_kube_cache_snap_nodeclaim_by_provider_id(ks, n->provider_id);
        if (nc)
            claim = nc->name;
    }
    const nw_kube_obj_t *nc = nw_kube_cache_snap_get(ks, NW_KUBE_NODECLAIMS, NULL, claim);
    bool in_flight = nc && !claim_initialized(nc);
    return nw_nominations_targets(noms, claim, in_flight, now_mono, window_ns);
}

/* ---- NodeClaims ---- */

static cJSON *req_json(const nw_req_t *r)
{
    cJSON *o = nw_json_new_object();
    nw_json_add_string(o, "key", r->key);
    char num[32];
    if (r->has_gte || r->has_lte) {
        /* Gt/Lt are strict; a set with both bounds keeps the lower one here and the upper
         * one in a second requirement (added by the caller) */
        nw_json_add_string(o, "operator", r->has_gte ? "Gt" : "Lt");
        snprintf(num, sizeof num, "%lld", (long long)(r->has_gte ? r->gte - 1 : r->lte + 1));
        nw_json_push(nw_json_add_array(o, "values"), nw_json_new_string(num));
        return o;
    }
    const char *op =
        !r->complement ? (r->nvalues ? "In" : "DoesNotExist") : (r->nvalues ? "NotIn" : "Exists");
    nw_json_add_string(o, "operator", op);
    if (r->nvalues) {
        cJSON *vals = nw_json_add_array(o, "values");
        for (size_t i = 0; i < r->nvalues; i++)
            nw_json_push(vals, nw_json_new_string(r->values[i]));
    }
    if (r->min_values > 0)
        nw_json_add_number(o, "minValues", r->min_values);
    return o;
}

static bool in_list(const char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] && strcmp(v[i], s) == 0)
            return true;
    return false;
}

/* The NodeClaim body (kubernetes-sigs/karpenter
 * pkg/controllers/provisioning/scheduling/nodeclaimtemplate.go ToNodeClaim). NULL with err set
 * when nothing is left to launch. */
/* The NodeClaim's metadata in md: generateName, the template's labels (with the pool, the
 * class and the single-valued custom requirements) and annotations, the owner, the finalizer. */
static void claim_metadata(cJSON *md, const nw_sched_claim_t *cl, const nw_kube_obj_t *pool,
                           const cJSON *tmpl, const char *class)
{
    char gen[300];
    snprintf(gen, sizeof gen, "%s-", pool->name);
    nw_json_add_string(md, "generateName", gen);
    const cJSON *tl = nw_json_get(nw_json_get(tmpl, "metadata"), "labels");
    cJSON *labels = cJSON_IsObject(tl) ? nw_json_dup(tl) : nw_json_new_object();
    cJSON_DeleteItemFromObjectCaseSensitive(labels, NW_LABEL_NODEPOOL);
    nw_json_add_string(labels, NW_LABEL_NODEPOOL, pool->name);
    if (class) {
        cJSON_DeleteItemFromObjectCaseSensitive(labels, NW_LABEL_NODECLASS);
        nw_json_add_string(labels, NW_LABEL_NODECLASS, class);
    }
    /* custom requirement keys that resolved to one value become labels */
    for (size_t i = 0; i < cl->reqs.n; i++) {
        const nw_req_t *r = &cl->reqs.v[i];
        if (!r->complement && r->nvalues == 1 && !r->has_gte && !r->has_lte && !r->well_known &&
            !nw_wellknown_is_restricted_node_label(r->key) && !nw_json_get(labels, r->key))
            nw_json_add_string(labels, r->key, r->values[0]);
    }
    nw_json_add_item(md, "labels", labels);
    const cJSON *ta = nw_json_get(nw_json_get(tmpl, "metadata"), "annotations");
    cJSON *ann = cJSON_IsObject(ta) ? nw_json_dup(ta) : nw_json_new_object();
    nw_json_add_string(ann, "karpenter.sh/nodepool-hash-version", "v3");
    nw_json_add_string(ann, "karpenter.sh/nodeclaim-min-values-relaxed",
                       cl->min_values_relaxed ? "true" : "false");
    nw_json_add_item(md, "annotations", ann);
    cJSON *own = nw_json_new_object();
    nw_json_add_string(own, "apiVersion", "karpenter.sh/v1");
    nw_json_add_string(own, "kind", "NodePool");
    nw_json_add_string(own, "name", pool->name);
    nw_json_add_string(own, "uid", pool->uid);
    nw_json_add_bool(own, "blockOwnerDeletion", 1);
    nw_json_push(nw_json_add_array(md, "ownerReferences"), own);
    nw_json_push(nw_json_add_array(md, "finalizers"), nw_json_new_string(NW_FINALIZER));
}

/* spec.requirements: the claim's, its instance types (types) and capacity types. */
static void claim_requirements(cJSON *spec, const nw_sched_claim_t *cl, cJSON *types,
                               const nw_simsnap_claim_opts_t *o)
{
    cJSON *reqs = nw_json_add_array(spec, "requirements");
    for (size_t i = 0; i < cl->reqs.n; i++) {
        const nw_req_t *r = &cl->reqs.v[i];
        if (strcmp(r->key, "node.kubernetes.io/instance-type") == 0 ||
            strcmp(r->key, "karpenter.sh/capacity-type") == 0 ||
            strcmp(r->key, "kubernetes.io/hostname") == 0)
            continue;
        nw_json_push(reqs, req_json(r));
        if (r->has_gte && r->has_lte) {
            nw_req_t upper = *r;
            upper.has_gte = false;
            nw_json_push(reqs, req_json(&upper));
        }
    }
    const nw_req_t *itr = nw_requirements_get(&cl->reqs, "node.kubernetes.io/instance-type");
    cJSON *it = nw_json_new_object();
    nw_json_add_string(it, "key", "node.kubernetes.io/instance-type");
    nw_json_add_string(it, "operator", "In");
    nw_json_add_item(it, "values", types);
    if (itr && itr->min_values > 0)
        nw_json_add_number(it, "minValues", itr->min_values);
    nw_json_push(reqs, it);
    cJSON *ct = nw_json_new_object();
    nw_json_add_string(ct, "key", "karpenter.sh/capacity-type");
    nw_json_add_string(ct, "operator", "In");
    cJSON *ctv = nw_json_add_array(ct, "values");
    const nw_req_t *ctr = nw_requirements_get(&cl->reqs, "karpenter.sh/capacity-type");
    if (o && o->capacity_type)
        nw_json_push(ctv, nw_json_new_string(o->capacity_type));
    else if (ctr && !ctr->complement && ctr->nvalues)
        for (size_t i = 0; i < ctr->nvalues; i++)
            nw_json_push(ctv, nw_json_new_string(ctr->values[i]));
    else
        nw_json_push(ctv, nw_json_new_string(cl->capacity_type));
    nw_json_push(reqs, ct);
}

/* The devices DRA views added (nw_simsnap_dra_view) are no resource the node's kubelet
 * registers: the DRA driver publishes them as a ResourceSlice. Left out of the NodeClaim's
 * requests, which its node must register in full to be initialized (lifecycle.c). */
static void leave_out_dra(const nw_simsnap_t *s, const nw_sched_claim_t *cl, cJSON *req)
{
    for (int k = 0; k < cl->npods; k++) {
        int i = cl->pods[k];
        if (i < 0 || (size_t)i >= s->npods || !s->dra_res || !s->dra_res[i])
            continue;
        cJSON *v = cJSON_GetObjectItemCaseSensitive(req, s->dra_res[i]);
        const char *q = cJSON_GetStringValue(v);
        if (!q)
            continue;
        long long left = atoll(q) - s->dra_count[i];
        if (left <= 0) {
            cJSON_DeleteItemFromObjectCaseSensitive(req, s->dra_res[i]);
        } else {
            char n[24];
            snprintf(n, sizeof n, "%lld", left);
            cJSON_ReplaceItemInObjectCaseSensitive(req, s->dra_res[i], cJSON_CreateString(n));
        }
    }
}

cJSON *nw_simsnap_claim_body(const nw_simsnap_t *s, const nw_sched_claim_t *cl,
                             const nw_kube_obj_t *pool, const nw_simsnap_claim_opts_t *o,
                             int *ntypes, const char **first_type, nw_err_t *err)
{
    const nw_sched_snap_t *ss = s->sched;
    cJSON *types = nw_json_new_array();
    int nt = 0;
    for (int i = 0; i < cl->nitypes && nt < 600; i++) {
        const char *tn = nw_snapshot_itype(ss, (size_t)cl->itypes[i])->name;
        if (o && o->itypes && !in_list(o->itypes, o->nitypes, tn))
            continue;
        if (!nt)
            *first_type = tn;
        nw_json_push(types, nw_json_new_string(tn));
        nt++;
    }
    *ntypes = nt;
    if (!nt) {
        cJSON_Delete(types);
        nw_err_set(err, NW_EINVAL, "", "no instance type left for the NodeClaim");
        return NULL;
    }
    const cJSON *tmpl = nw_json_get(nw_json_get(pool->json, "spec"), "template");
    const cJSON *tspec = nw_json_get(tmpl, "spec");
    const char *class = nw_json_str_at(tspec, "nodeClassRef.name");
    cJSON *nc = nw_json_new_object();
    nw_json_add_string(nc, "apiVersion", "karpenter.sh/v1");
    nw_json_add_string(nc, "kind", "NodeClaim");
    cJSON *md = nw_json_add_object(nc, "metadata");
    claim_metadata(md, cl, pool, tmpl, class);
    if (o && o->annotation_key && o->annotation_value) {
        cJSON *ann = cJSON_GetObjectItemCaseSensitive(md, "annotations");
        cJSON_DeleteItemFromObjectCaseSensitive(ann, o->annotation_key);
        nw_json_add_string(ann, o->annotation_key, o->annotation_value);
    }
    cJSON *spec = nw_json_add_object(nc, "spec");
    claim_requirements(spec, cl, types, o);
    cJSON *res = nw_json_add_object(spec, "resources");
    cJSON *req = nw_snapshot_res_to_json(ss, &cl->requests);
    leave_out_dra(s, cl, req);
    nw_json_add_item(res, "requests", req);
    const cJSON *ref = nw_json_get(tspec, "nodeClassRef");
    if (ref)
        nw_json_add_item(spec, "nodeClassRef", nw_json_dup(ref));
    const char *copy[] = {"taints", "startupTaints", "terminationGracePeriod"};
    for (size_t i = 0; i < sizeof copy / sizeof *copy; i++) {
        const cJSON *v = nw_json_get(tspec, copy[i]);
        if (v)
            nw_json_add_item(spec, copy[i], nw_json_dup(v));
    }
    const char *exp = nw_json_str(tspec, "expireAfter");
    nw_json_add_string(spec, "expireAfter", exp ? exp : "720h");
    return nc;
}
