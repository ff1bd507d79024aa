/* scaler/sched/snap_node.c — building a scheduling snapshot (scaler/sched/snapshot.c): nodes and
 * NodeClaims, NodePools, DaemonSets and instance types. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "api/wellknown.h"
#include "common/json.h"
#include "scaler/sched/mig.h"
#include "scaler/sched/snap.h"
/* ---- nodes and NodeClaims ---------------------------------------------------- */

/* A Node and its NodeClaim are one node (Karpenter's cluster state pairs them by
 * providerID, pkg/controllers/state/cluster.go); the Node stands for both and keeps
 * the claim's startup taints, so it is usable before it is initialized. A NodeClaim whose
 * Node is known hands it its pool and startup taints (*merged: n adds nothing); a Node
 * replaces the NodeClaim of its providerID. */
static NW_MUST_USE nw_rc_t pair_node(nw_sched_snap_t *s, nw_snode_t *n, const char *nn, bool claim,
                                     bool *merged, nw_err_t *err)
{
    *merged = false;
    if (claim) {
        for (size_t i = 0; i < s->nnodes; i++) {
            nw_snode_t *o = &s->nodes[i];
            if (o->claim || !((nn && strcmp(o->name, nn) == 0) ||
                              (n->provider_id && o->provider_id &&
                               strcmp(o->provider_id, n->provider_id) == 0)))
                continue;
            if (!o->pool && n->pool && !(o->pool = strdup(n->pool)))
                return nw_err_set(err, NW_ENOMEM, "", "out of memory");
            nw_taints_cleanup(&o->startup_taints);
            o->startup_taints = n->startup_taints;
            nw_taints_init(&n->startup_taints);
            *merged = true;
            return NW_OK;
        }
    } else {
        for (size_t i = 0; n->provider_id && i < s->nnodes; i++) {
            nw_snode_t *o = &s->nodes[i];
            if (!o->claim || !o->provider_id || strcmp(o->provider_id, n->provider_id) != 0)
                continue;
            nw_taints_cleanup(&n->startup_taints);
            n->startup_taints = o->startup_taints;
            nw_taints_init(&o->startup_taints);
            if (!n->pool && o->pool) {
                n->pool = o->pool;
                o->pool = NULL;
                const char *ini = nw_labels_get(&n->labels, NW_LABEL_INITIALIZED);
                n->initialized = ini && strcmp(ini, "true") == 0;
            }
            nw_snapshot_node_free(o);
            memmove(o, o + 1, (s->nnodes - i - 1) * sizeof *o);
            s->nnodes--;
            break;
        }
    }
    return NW_OK;
}

/* The rest of a node (n: name, labels, requirements, taints, resources and deleting set;
 * taken, also on error): its pool, whether it is initialized, its provider ID, paired with
 * its Node or NodeClaim (nn: a NodeClaim's status.nodeName) and added. */
static NW_MUST_USE nw_rc_t node_push(nw_sched_snap_t *s, nw_snode_t *np, bool claim,
                                     const char *pid, const char *nn, nw_err_t *err)
{
    nw_snode_t n = *np;
    nw_rc_t rc;
    const char *pool = nw_labels_get(&n.labels, NW_LABEL_NODEPOOL);
    if (!pool && claim) {
        const nw_req_t *r = nw_requirements_get(&n.reqs, NW_LABEL_NODEPOOL);
        if (r && !r->complement && r->nvalues == 1)
            pool = r->values[0];
    }
    n.pool = nw_snapshot_dupstr(pool);
    const char *init = nw_labels_get(&n.labels, NW_LABEL_INITIALIZED);
    n.initialized = pool == NULL || (init && strcmp(init, "true") == 0);
    if (claim)
        n.initialized = false;
    if (pid && *pid && !(n.provider_id = strdup(pid))) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    /* a Node and its NodeClaim are one node */
    bool merged;
    if ((rc = pair_node(s, &n, nn, claim, &merged, err)) != NW_OK)
        goto fail;
    if (merged)
        goto skip;
    nw_snode_t *nn2 = nw_snapshot_grow(s->nodes, &s->cnodes, s->nnodes, sizeof *nn2);
    if (!nn2) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    s->nodes = nn2;
    s->nodes[s->nnodes++] = n;
    return NW_OK;
skip:
    nw_snapshot_node_free(&n);
    return NW_OK;
fail:
    nw_snapshot_node_free(&n);
    return rc;
}

static NW_MUST_USE nw_rc_t node_common(nw_sched_snap_t *s, const cJSON *obj, bool claim,
                                       nw_err_t *err)
{
    if (!cJSON_IsObject(obj))
        return nw_err_set(err, NW_EINVAL, "", "must be an object");
    const cJSON *md = nw_json_get(obj, "metadata"), *spec = nw_json_get(obj, "spec"),
                *st = nw_json_get(obj, "status");
    const char *name = nw_json_str(md, "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    nw_snode_t n = {.claim = claim};
    nw_labels_init(&n.labels);
    nw_requirements_init(&n.reqs);
    nw_taints_init(&n.taints);
    nw_taints_init(&n.startup_taints);
    nw_rc_t rc;
    if (!(n.name = strdup(name))) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    if ((rc = nw_labels_parse(nw_json_get(md, "labels"), "metadata.labels", &n.labels, err)) !=
        NW_OK)
        goto fail;
    if ((rc = nw_requirements_from_labels(&n.labels, &n.reqs)) != NW_OK)
        goto fail;
    if (claim && spec) {
        nw_reqs_t r;
        if ((rc = nw_requirements_json_parse_list(nw_json_get(spec, "requirements"),
                                                  "spec.requirements", NW_REQS_PARSE_KARPENTER, &r,
                                                  err)) != NW_OK)
            goto fail;
        rc = nw_requirements_add_all(&n.reqs, &r);
        nw_requirements_cleanup(&r);
        if (rc != NW_OK)
            goto fail;
        if ((rc = nw_taints_parse(nw_json_get(spec, "startupTaints"), "spec.startupTaints",
                                  &n.startup_taints, err)) != NW_OK)
            goto fail;
    }
    nw_taints_cleanup(&n.taints);
    if ((rc = nw_taints_parse(spec ? nw_json_get(spec, "taints") : NULL, "spec.taints", &n.taints,
                              err)) != NW_OK)
        goto fail;
    if ((rc = nw_snapshot_parse_res(s, st ? nw_json_get(st, "allocatable") : NULL,
                                    "status.allocatable", &n.allocatable, NULL, err)) != NW_OK)
        goto fail;
    if ((rc = nw_snapshot_parse_res(s, st ? nw_json_get(st, "capacity") : NULL, "status.capacity",
                                    &n.capacity, NULL, err)) != NW_OK)
        goto fail;
    n.deleting =
        nw_json_get(md, "deletionTimestamp") && !cJSON_IsNull(nw_json_get(md, "deletionTimestamp"));
    const char *pid = claim ? nw_json_str(st, "providerID") : nw_json_str(spec, "providerID");
    return node_push(s, &n, claim, pid, claim ? nw_json_str(st, "nodeName") : NULL, err);
fail:
    nw_snapshot_node_free(&n);
    return rc;
}

/* A resource list of a record into a snapshot's slots ("nodes" is no node resource). */
static NW_MUST_USE nw_rc_t res_of(nw_sched_snap_t *s, const nw_resources_t *r, const char *path,
                                  nw_sched_res_t *out, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < nw_resources_len(r); i++) {
        const char *name = nw_resources_name_at(r, i);
        if (strcmp(name, "nodes") == 0)
            continue;
        int slot = nw_snapshot_res_slot(s, name);
        if (slot < 0)
            return nw_err_set(err, NW_EINVAL, path, "%s: more than %d distinct resource names",
                              name, NW_SCHED_NRES);
        out->v[slot] = nw_resources_at(r, i).milli;
    }
    return NW_OK;
}

nw_rc_t nw_snap_node_add_node(nw_sched_snap_t *s, const nw_node_t *node, nw_err_t *err)
{
    nw_snode_t n = {.claim = false};
    nw_labels_init(&n.labels);
    nw_requirements_init(&n.reqs);
    nw_taints_init(&n.taints);
    nw_taints_init(&n.startup_taints);
    nw_rc_t rc = NW_ENOMEM;
    if (!(n.name = strdup(node->m.name)))
        goto oom;
    for (size_t i = 0; i < node->m.nlabels; i++)
        if (nw_labels_set(&n.labels, node->m.labels[i].key, node->m.labels[i].value) != NW_OK)
            goto oom;
    if (nw_requirements_from_labels(&n.labels, &n.reqs) != NW_OK)
        goto oom;
    for (size_t i = 0; i < node->m.taints.n; i++) {
        const nw_taint_t *t = &node->m.taints.v[i];
        if (nw_taints_add(&n.taints, t->key, t->value, t->effect) != NW_OK)
            goto oom;
    }
    if ((rc = res_of(s, &node->allocatable, "status.allocatable", &n.allocatable, err)) != NW_OK ||
        (rc = res_of(s, &node->capacity, "status.capacity", &n.capacity, err)) != NW_OK) {
        nw_snapshot_node_free(&n);
        return rc;
    }
    n.deleting = node->m.terminating;
    return node_push(s, &n, false, node->provider_id, NULL, err);
oom:
    nw_snapshot_node_free(&n);
    return nw_err_set(err, NW_ENOMEM, "", "out of memory");
}

nw_rc_t nw_snap_node_add_claim(nw_sched_snap_t *s, const nw_node_claim_t *nc, nw_err_t *err)
{
    nw_snode_t n = {.claim = true};
    nw_labels_init(&n.labels);
    nw_requirements_init(&n.reqs);
    nw_taints_init(&n.taints);
    nw_taints_init(&n.startup_taints);
    nw_rc_t rc = NW_ENOMEM;
    if (!(n.name = strdup(nc->m.name)))
        goto oom;
    for (size_t i = 0; i < nc->m.nlabels; i++)
        if (nw_labels_set(&n.labels, nc->m.labels[i].key, nc->m.labels[i].value) != NW_OK)
            goto oom;
    if (nw_requirements_from_labels(&n.labels, &n.reqs) != NW_OK ||
        nw_requirements_add_all(&n.reqs, &nc->requirements) != NW_OK)
        goto oom;
    for (size_t i = 0; i < nc->startup_taints.n; i++) {
        const nw_taint_t *t = &nc->startup_taints.v[i];
        if (nw_taints_add(&n.startup_taints, t->key, t->value, t->effect) != NW_OK)
            goto oom;
    }
    for (size_t i = 0; i < nc->m.taints.n; i++) {
        const nw_taint_t *t = &nc->m.taints.v[i];
        if (nw_taints_add(&n.taints, t->key, t->value, t->effect) != NW_OK)
            goto oom;
    }
    if ((rc = res_of(s, &nc->allocatable, "status.allocatable", &n.allocatable, err)) != NW_OK ||
        (rc = res_of(s, &nc->capacity, "status.capacity", &n.capacity, err)) != NW_OK) {
        nw_snapshot_node_free(&n);
        return rc;
    }
    n.deleting = nc->m.terminating;
    return node_push(s, &n, true, nc->provider_id, nc->node_name[0] ? nc->node_name : NULL, err);
oom:
    nw_snapshot_node_free(&n);
    return nw_err_set(err, NW_ENOMEM, "", "out of memory");
}

nw_rc_t nw_snap_node_add_claim_as(nw_sched_snap_t *s, const nw_node_claim_t *nc,
                                  const nw_snap_claim_as_t *as, nw_err_t *err)
{
    nw_snode_t n = {.claim = true};
    nw_labels_init(&n.labels);
    nw_requirements_init(&n.reqs);
    nw_taints_init(&n.taints);
    nw_taints_init(&n.startup_taints);
    nw_rc_t rc = NW_ENOMEM;
    if (!(n.name = strdup(as->name)) || nw_labels_copy(&n.labels, as->labels) != NW_OK ||
        nw_requirements_from_labels(&n.labels, &n.reqs) != NW_OK ||
        nw_requirements_add_all(&n.reqs, &nc->requirements) != NW_OK)
        goto oom;
    for (size_t i = 0; i < nc->startup_taints.n; i++) {
        const nw_taint_t *t = &nc->startup_taints.v[i];
        if (nw_taints_add(&n.startup_taints, t->key, t->value, t->effect) != NW_OK)
            goto oom;
    }
    for (size_t i = 0; i < nc->m.taints.n; i++) {
        const nw_taint_t *t = &nc->m.taints.v[i];
        if (nw_taints_add(&n.taints, t->key, t->value, t->effect) != NW_OK)
            goto oom;
    }
    if ((rc = res_of(s, as->allocatable, "status.allocatable", &n.allocatable, err)) != NW_OK ||
        (rc = res_of(s, as->capacity, "status.capacity", &n.capacity, err)) != NW_OK) {
        nw_snapshot_node_free(&n);
        return rc;
    }
    return node_push(s, &n, true, NULL, NULL, err);
oom:
    nw_snapshot_node_free(&n);
    return nw_err_set(err, NW_ENOMEM, "", "out of memory");
}

nw_rc_t nw_snap_node_add_json(nw_sched_snap_t *s, const cJSON *node, nw_err_t *err)
{
    return node_common(s, node, false, err);
}

nw_rc_t nw_snap_node_add_nodeclaim_json(nw_sched_snap_t *s, const cJSON *nc, nw_err_t *err)
{
    return node_common(s, nc, true, err);
}

/* ---- NodePools ----------------------------------------------------------------- */

nw_rc_t nw_snap_node_add_pool_json(nw_sched_snap_t *s, const cJSON *np, nw_err_t *err)
{
    if (!cJSON_IsObject(np))
        return nw_err_set(err, NW_EINVAL, "", "NodePool must be an object");
    const cJSON *md = nw_json_get(np, "metadata"), *spec = nw_json_get(np, "spec");
    const char *name = nw_json_str(md, "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    for (size_t i = 0; i < s->npools; i++)
        if (strcmp(s->pools[i].name, name) == 0)
            return nw_err_set(err, NW_EINVAL, "metadata.name", "duplicate NodePool \"%s\"", name);
    const cJSON *tmpl = spec ? nw_json_get(spec, "template") : NULL;
    const cJSON *tmd = tmpl ? nw_json_get(tmpl, "metadata") : NULL;
    const cJSON *tsp = tmpl ? nw_json_get(tmpl, "spec") : NULL;
    nw_spool_t p = {0};
    nw_requirements_init(&p.reqs);
    nw_labels_init(&p.labels);
    nw_taints_init(&p.taints);
    nw_taints_init(&p.startup_taints);
    nw_rc_t rc;
    p.name = strdup(name);
    const cJSON *ref = tsp ? nw_json_get(tsp, "nodeClassRef") : NULL;
    p.nodeclass = nw_snapshot_dupstr(nw_json_str(ref, "name") ? nw_json_str(ref, "name") : "");
    if (!p.name || !p.nodeclass) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    const cJSON *w = spec ? nw_json_get(spec, "weight") : NULL;
    p.weight = cJSON_IsNumber(w) ? w->valueint : 0;
    if ((rc = nw_requirements_json_parse_list(tsp ? nw_json_get(tsp, "requirements") : NULL,
                                              "spec.template.spec.requirements",
                                              NW_REQS_PARSE_KARPENTER, &p.reqs, err)) != NW_OK)
        goto fail;
    if ((rc = nw_labels_parse(tmd ? nw_json_get(tmd, "labels") : NULL,
                              "spec.template.metadata.labels", &p.labels, err)) != NW_OK)
        goto fail;
    for (size_t i = 0; i < p.labels.n; i++) {
        const char *v[1] = {p.labels.v[i].value};
        if ((rc = nw_requirements_add(&p.reqs, p.labels.v[i].key, NW_REQ_IN, v, 1, 0, err)) !=
            NW_OK)
            goto fail;
    }
    const char *pv[1] = {name};
    if ((rc = nw_requirements_add(&p.reqs, NW_LABEL_NODEPOOL, NW_REQ_IN, pv, 1, 0, err)) != NW_OK)
        goto fail;
    for (size_t i = 0; i < p.reqs.n; i++)
        if (p.reqs.v[i].min_values > 0)
            p.has_min_values = true;
    if ((rc = nw_taints_parse(tsp ? nw_json_get(tsp, "taints") : NULL, "spec.template.spec.taints",
                              &p.taints, err)) != NW_OK)
        goto fail;
    if ((rc = nw_taints_parse(tsp ? nw_json_get(tsp, "startupTaints") : NULL,
                              "spec.template.spec.startupTaints", &p.startup_taints, err)) != NW_OK)
        goto fail;
    const cJSON *lim = spec ? nw_json_get(spec, "limits") : NULL;
    if ((rc = nw_snapshot_parse_res(s, lim, "spec.limits", &p.limits, p.has_limits, err)) != NW_OK)
        goto fail;
    const cJSON *nl = lim ? nw_json_get(lim, "nodes") : NULL;
    if (nl) {
        int slot = nw_snapshot_res_slot_find(s, "nodes");
        p.has_node_limit = true;
        p.node_limit = slot >= 0 ? p.limits.v[slot] / 1000 : 0;
        if (slot >= 0)
            p.has_limits[slot] = false;
    }
    p.deleting =
        nw_json_get(md, "deletionTimestamp") && !cJSON_IsNull(nw_json_get(md, "deletionTimestamp"));
    const cJSON *rep = spec ? nw_json_get(spec, "replicas") : NULL;
    p.replicas = cJSON_IsNumber(rep) && rep->valuedouble >= 0 ? (int64_t)rep->valuedouble : -1;
    p.static_want = -1;
    nw_spool_t *n = nw_snapshot_grow(s->pools, &s->cpools, s->npools, sizeof *n);
    if (!n) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    s->pools = n;
    s->pools[s->npools++] = p;
    return NW_OK;
fail:
    nw_snapshot_pool_free(&p);
    return rc;
}

/* ---- DaemonSets ------------------------------------------------------------------ */

nw_rc_t nw_snap_node_add_daemonset_json(nw_sched_snap_t *s, const cJSON *ds, nw_err_t *err)
{
    if (!cJSON_IsObject(ds))
        return nw_err_set(err, NW_EINVAL, "", "DaemonSet must be an object");
    const cJSON *md = nw_json_get(ds, "metadata"), *spec = nw_json_get(ds, "spec");
    const cJSON *tmpl = spec ? nw_json_get(spec, "template") : NULL;
    const cJSON *ps = tmpl ? nw_json_get(tmpl, "spec") : NULL;
    const char *name = nw_json_str(md, "name");
    if (!name)
        return nw_err_set(err, NW_EINVAL, "metadata.name", "Required value");
    if (!cJSON_IsObject(ps))
        return nw_err_set(err, NW_EINVAL, "spec.template.spec", "Required value");
    nw_sds_t d = {0};
    nw_requirements_init(&d.strict);
    nw_requirements_init(&d.selector);
    nw_tolerations_init(&d.tols);
    nw_rc_t rc;
    d.ns = strdup(nw_json_str(md, "namespace") ? nw_json_str(md, "namespace") : "default");
    d.name = strdup(name);
    if (!d.ns || !d.name) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    if ((rc = nw_snapshot_pod_requests(s, ps, "spec.template.spec", &d.req, err)) != NW_OK)
        goto fail;
    if ((rc = nw_requirements_json_parse_node_selector(nw_json_get(ps, "nodeSelector"),
                                                       "spec.template.spec.nodeSelector",
                                                       &d.selector, err)) != NW_OK)
        goto fail;
    const cJSON *aff = nw_json_get(ps, "affinity");
    const cJSON *na = aff ? nw_json_get(aff, "nodeAffinity") : NULL;
    const cJSON *req =
        na ? nw_json_get(na, "requiredDuringSchedulingIgnoredDuringExecution") : NULL;
    if (req &&
        (rc = nw_requirements_json_parse_terms(nw_json_get(req, "nodeSelectorTerms"),
                                               "spec.template.spec.affinity.nodeAffinity."
                                               "requiredDuringSchedulingIgnoredDuringExecution."
                                               "nodeSelectorTerms",
                                               &d.terms, &d.nterms, err)) != NW_OK)
        goto fail;
    if ((rc = nw_requirements_json_parse_pod_spec(ps, "spec.template.spec", 0, &d.strict, err)) !=
        NW_OK)
        goto fail;
    if ((rc = nw_tolerations_parse(nw_json_get(ps, "tolerations"), "spec.template.spec.tolerations",
                                   &d.tols, err)) != NW_OK)
        goto fail;
    if ((rc = nw_snap_pod_parse_hostports(ps, "spec.template.spec", &d.hostports, &d.nhostports,
                                          err)) != NW_OK)
        goto fail;
    nw_sds_t *n = nw_snapshot_grow(s->dss, &s->cdss, s->ndss, sizeof *n);
    if (!n) {
        rc = nw_err_set(err, NW_ENOMEM, "", "out of memory");
        goto fail;
    }
    s->dss = n;
    s->dss[s->ndss++] = d;
    return NW_OK;
fail:
    nw_snapshot_ds_free(&d);
    return rc;
}

/* ---- instance types -------------------------------------------------------------- */

static NW_MUST_USE nw_rc_t itype_finish(nw_sched_snap_t *s, nw_sitype_t *it, nw_err_t *err)
{
    nw_rc_t rc = nw_requirements_from_labels(&it->t.labels, &it->reqs);
    if (rc != NW_OK)
        return nw_err_set(err, rc, "", "out of memory");
    const char *zones[NW_SCHED_MAX_OFFERINGS], *cts[NW_SCHED_MAX_OFFERINGS];
    const char *zids[NW_SCHED_MAX_OFFERINGS];
    size_t nz = 0, nc = 0, ni = 0;
    for (int i = 0; i < it->t.noffer; i++) {
        const nw_sched_offering_t *o = &it->t.offerings[i];
        bool seen = false;
        for (size_t k = 0; k < nz && !seen; k++)
            seen = strcmp(zones[k], o->zone) == 0;
        if (!seen)
            zones[nz++] = o->zone;
        seen = !o->zone_id[0];
        for (size_t k = 0; k < ni && !seen; k++)
            seen = strcmp(zids[k], o->zone_id) == 0;
        if (!seen)
            zids[ni++] = o->zone_id;
        seen = false;
        for (size_t k = 0; k < nc && !seen; k++)
            seen = strcmp(cts[k], o->capacity_type) == 0;
        if (!seen)
            cts[nc++] = o->capacity_type;
    }
    if (nz &&
        (rc = nw_requirements_add(&it->reqs, NW_LABEL_ZONE, NW_REQ_IN, zones, nz, 0, err)) != NW_OK)
        return rc;
    /* zone ids as Karpenter's computeRequirements: only when the offerings know them */
    if (ni && (rc = nw_requirements_add(&it->reqs, NW_LABEL_ZONE_ID, NW_REQ_IN, zids, ni, 0,
                                        err)) != NW_OK)
        return rc;
    if (nc && (rc = nw_requirements_add(&it->reqs, NW_LABEL_CAPACITY_TYPE, NW_REQ_IN, cts, nc, 0,
                                        err)) != NW_OK)
        return rc;
    for (int k = NW_SR_NVIDIA_GPU; k <= NW_SR_GAUDI; k++)
        it->accel |= it->t.capacity.v[k] > 0;
    (void)s;
    return NW_OK;
}

static NW_MUST_USE nw_rc_t itype_push(nw_sched_snap_t *s, nw_sitype_t *it, nw_err_t *err)
{
    for (size_t i = 0; i < s->nitypes; i++)
        if (strcmp(s->itypes[i].t.name, it->t.name) == 0)
            return nw_err_set(err, NW_EINVAL, "name", "duplicate instance type \"%s\"", it->t.name);
    nw_rc_t rc = itype_finish(s, it, err);
    if (rc != NW_OK)
        return rc;
    nw_sitype_t *n = nw_snapshot_grow(s->itypes, &s->citypes, s->nitypes, sizeof *n);
    if (!n)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    s->itypes = n;
    s->itypes[s->nitypes++] = *it;
    return NW_OK;
}

nw_rc_t nw_snap_node_add_itype(nw_sched_snap_t *s, const nw_sched_itype_t *t, nw_err_t *err)
{
    nw_sitype_t it;
    memset(&it, 0, sizeof it);
    it.t = *t;
    nw_labels_init(&it.t.labels);
    nw_requirements_init(&it.reqs);
    nw_rc_t rc = nw_labels_copy(&it.t.labels, &t->labels);
    if (rc == NW_OK)
        rc = itype_push(s, &it, err);
    else
        nw_err_set(err, rc, "", "out of memory");
    if (rc != NW_OK) {
        nw_labels_cleanup(&it.t.labels);
        nw_requirements_cleanup(&it.reqs);
    }
    return rc;
}

nw_rc_t nw_snap_node_add_itype_raw(nw_sched_snap_t *s, const char *name, const char *const *keys,
                                   const char *const *values, int nlabels,
                                   const nw_sched_res_t *capacity,
                                   const nw_sched_res_t *allocatable, bool metal,
                                   const nw_sched_offering_t *offers, int noffer, nw_err_t *err)
{
    if (noffer > NW_SCHED_MAX_OFFERINGS)
        return nw_err_set(err, NW_EINVAL, "offerings", "more than %d offerings",
                          NW_SCHED_MAX_OFFERINGS);
    nw_sitype_t it;
    memset(&it, 0, sizeof it);
    snprintf(it.t.name, sizeof it.t.name, "%s", name);
    nw_labels_init(&it.t.labels);
    nw_requirements_init(&it.reqs);
    nw_rc_t rc = NW_OK;
    for (int i = 0; i < nlabels && rc == NW_OK; i++)
        rc = nw_labels_set(&it.t.labels, keys[i], values[i]);
    if (rc == NW_OK && !nw_labels_get(&it.t.labels, NW_LABEL_INSTANCE_TYPE))
        rc = nw_labels_set(&it.t.labels, NW_LABEL_INSTANCE_TYPE, name);
    it.t.capacity = *capacity;
    it.t.allocatable = *allocatable;
    it.t.metal = metal;
    memcpy(it.t.offerings, offers, sizeof *offers * (size_t)noffer);
    it.t.noffer = noffer;
    if (rc == NW_OK)
        rc = itype_push(s, &it, err);
    else
        nw_err_set(err, rc, "", "out of memory");
    if (rc != NW_OK) {
        nw_labels_cleanup(&it.t.labels);
        nw_requirements_cleanup(&it.reqs);
    }
    return rc;
}

nw_rc_t nw_snap_node_add_reservation(nw_sched_snap_t *s, const char *nodeclass, const char *id,
                                     const char *reservation_type, const char *itype,
                                     const char *zone, const char *zone_id, double price,
                                     int64_t count, nw_err_t *err)
{
    nw_sitype_t *it = NULL;
    for (size_t i = 0; i < s->nitypes && !it; i++)
        if (strcmp(s->itypes[i].t.name, itype) == 0)
            it = &s->itypes[i];
    if (!it)
        return nw_err_set(err, NW_ENOTFOUND, "instanceType", "instance type \"%s\" unknown", itype);
    if (it->t.noffer >= NW_SCHED_MAX_OFFERINGS || s->nresvs >= UINT16_MAX - 1)
        return nw_err_set(err, NW_EINVAL, "offerings", "more than %d offerings",
                          NW_SCHED_MAX_OFFERINGS);
    nw_sresv_t *v = nw_snapshot_grow(s->resvs, &s->cresvs, s->nresvs, sizeof *v);
    if (!v)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory");
    s->resvs = v;
    nw_sresv_t *r = &s->resvs[s->nresvs++];
    memset(r, 0, sizeof *r);
    snprintf(r->nodeclass, sizeof r->nodeclass, "%s", nodeclass ? nodeclass : "");
    snprintf(r->id, sizeof r->id, "%s", id);
    snprintf(r->type, sizeof r->type, "%s", reservation_type ? reservation_type : "default");
    r->count = count;
    nw_sched_offering_t *o = &it->t.offerings[it->t.noffer++];
    memset(o, 0, sizeof *o);
    snprintf(o->zone, sizeof o->zone, "%s", zone);
    snprintf(o->zone_id, sizeof o->zone_id, "%s", zone_id ? zone_id : "");
    snprintf(o->capacity_type, sizeof o->capacity_type, "reserved");
    o->price = price;
    o->available = count != 0;
    o->resv = (uint16_t)s->nresvs;
    /* the type's zone and capacity-type requirements include the new offering */
    nw_requirements_cleanup(&it->reqs);
    nw_requirements_init(&it->reqs);
    return itype_finish(s, it, err);
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

nw_rc_t nw_snap_node_add_class_reservations(nw_sched_snap_t *s, const cJSON *nc,
                                            double (*od_price)(void *ud, const char *type),
                                            int64_t (*available)(void *ud, const char *id),
                                            void *ud, nw_err_t *err)
{
    const char *name = jstr(cJSON_GetObjectItemCaseSensitive(nc, "metadata"), "name");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(nc, "status");
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(st, "capacityReservations"))
    {
        const char *id = jstr(e, "id"), *type = jstr(e, "instanceType"),
                   *zone = jstr(e, "availabilityZone"), *state = jstr(e, "state");
        if (!id || !type || !zone || (state && strcmp(state, "active") != 0))
            continue;
        int64_t count = available ? available(ud, id) : -1;
        const cJSON *ac = cJSON_GetObjectItemCaseSensitive(e, "availableInstanceCount");
        if (count < 0 && cJSON_IsNumber(ac))
            count = ac->valuedouble < 0 ? 0 : (int64_t)ac->valuedouble;
        /* the zone's id as the type's offerings in that zone know it */
        const char *zid = NULL;
        for (size_t i = 0; i < s->nitypes && !zid; i++)
            for (int k = 0; k < s->itypes[i].t.noffer && !zid; k++)
                if (strcmp(s->itypes[i].t.offerings[k].zone, zone) == 0 &&
                    s->itypes[i].t.offerings[k].zone_id[0])
                    zid = s->itypes[i].t.offerings[k].zone_id;
        char zbuf[64];
        snprintf(zbuf, sizeof zbuf, "%s", zid ? zid : "");
        double od = od_price ? od_price(ud, type) : 0;
        for (size_t i = 0; !od_price && i < s->nitypes; i++)
            for (int k = 0; strcmp(s->itypes[i].t.name, type) == 0 && k < s->itypes[i].t.noffer;
                 k++)
                if (strcmp(s->itypes[i].t.offerings[k].capacity_type, "on-demand") == 0)
                    od = s->itypes[i].t.offerings[k].price;
        double price = od / 10000000.0;
        nw_rc_t rc = nw_snap_node_add_reservation(s, name, id, jstr(e, "reservationType"), type,
                                                  zone, zbuf, price, count, err);
        if (rc == NW_ENOMEM)
            return rc;
        nw_err_clear(err);
    }
    return NW_OK;
}

void nw_snap_node_ice(nw_sched_snap_t *s, const char *itype, const char *zone,
                      const char *capacity_type)
{
    for (size_t i = 0; i < s->nitypes; i++) {
        nw_sched_itype_t *t = &s->itypes[i].t;
        if (strcmp(t->name, itype) != 0)
            continue;
        for (int k = 0; k < t->noffer; k++)
            if ((!zone || strcmp(t->offerings[k].zone, zone) == 0) &&
                (!capacity_type || strcmp(t->offerings[k].capacity_type, capacity_type) == 0))
                t->offerings[k].available = false;
    }
}

/* ---- per node class resources ---- */

const nw_sclass_t *nw_snap_node_class_res(const nw_sched_snap_t *s, const char *name)
{
    for (size_t i = 0; name && i < s->nclass_res; i++)
        if (strcmp(s->nclasses_res[i].name, name) == 0)
            return &s->nclasses_res[i];
    return NULL;
}

const nw_sched_res_t *nw_snap_node_type_capacity(const nw_sched_snap_t *s, const nw_sclass_t *cls,
                                                 size_t t)
{
    if (cls && t < cls->n && cls->set[t])
        return &cls->capacity[t];
    return &s->itypes[t].t.capacity;
}

const nw_sched_res_t *nw_snap_node_type_allocatable(const nw_sched_snap_t *s,
                                                    const nw_sclass_t *cls, size_t t)
{
    if (cls && t < cls->n && cls->set[t])
        return &cls->allocatable[t];
    return &s->itypes[t].t.allocatable;
}

static NW_MUST_USE nw_rc_t class_grow(nw_sclass_t *c, size_t n)
{
    if (n <= c->n)
        return NW_OK;
    nw_sched_res_t *cap = realloc(c->capacity, n * sizeof *cap);
    if (!cap)
        return NW_ENOMEM;
    c->capacity = cap;
    nw_sched_res_t *al = realloc(c->allocatable, n * sizeof *al);
    if (!al)
        return NW_ENOMEM;
    c->allocatable = al;
    bool *set = realloc(c->set, n * sizeof *set);
    if (!set)
        return NW_ENOMEM;
    c->set = set;
    memset(c->set + c->n, 0, (n - c->n) * sizeof *set);
    bool *ex = realloc(c->excluded, n * sizeof *ex);
    if (!ex)
        return NW_ENOMEM;
    c->excluded = ex;
    memset(c->excluded + c->n, 0, (n - c->n) * sizeof *ex);
    c->n = n;
    return NW_OK;
}

/* the class entry of nodeclass, made when missing, grown to every type; NULL: no memory */
static nw_sclass_t *class_entry(nw_sched_snap_t *s, const char *nodeclass, nw_err_t *err)
{
    nw_sclass_t *c = (nw_sclass_t *)nw_snap_node_class_res(s, nodeclass);
    if (!c) {
        nw_sclass_t *v = realloc(s->nclasses_res, (s->nclass_res + 1) * sizeof *v);
        if (!v)
            return nw_err_set(err, NW_ENOMEM, "", "out of memory"), NULL;
        s->nclasses_res = v;
        c = &v[s->nclass_res];
        memset(c, 0, sizeof *c);
        if (!(c->name = nw_snapshot_dupstr(nodeclass)))
            return nw_err_set(err, NW_ENOMEM, "", "out of memory"), NULL;
        s->nclass_res++;
    }
    if (class_grow(c, s->nitypes) != NW_OK)
        return nw_err_set(err, NW_ENOMEM, "", "out of memory"), NULL;
    return c;
}

static size_t type_index(const nw_sched_snap_t *s, const char *itype)
{
    size_t t = 0;
    while (t < s->nitypes && strcmp(s->itypes[t].t.name, itype) != 0)
        t++;
    return t;
}

/* The class entry and type index of (nodeclass, itype); NW_EINVAL for an unknown type. */
static NW_MUST_USE nw_rc_t class_type(nw_sched_snap_t *s, const char *nodeclass, const char *itype,
                                      nw_sclass_t **c, size_t *t, nw_err_t *err)
{
    *t = type_index(s, itype);
    if (*t == s->nitypes)
        return nw_err_set(err, NW_EINVAL, "instanceType", "unknown instance type %s", itype);
    return (*c = class_entry(s, nodeclass, err)) ? NW_OK : NW_ENOMEM;
}

nw_rc_t nw_snap_node_exclude_class_type(nw_sched_snap_t *s, const char *nodeclass,
                                        const char *itype, nw_err_t *err)
{
    nw_sclass_t *c;
    size_t t;
    nw_rc_t rc = class_type(s, nodeclass, itype, &c, &t, err);
    if (rc == NW_OK)
        c->excluded[t] = true;
    return rc;
}

nw_rc_t nw_snap_node_set_class_res(nw_sched_snap_t *s, const char *nodeclass, const char *itype,
                                   const nw_sched_res_t *capacity,
                                   const nw_sched_res_t *allocatable, nw_err_t *err)
{
    nw_sclass_t *c;
    size_t t;
    nw_rc_t rc = class_type(s, nodeclass, itype, &c, &t, err);
    if (rc != NW_OK)
        return rc;
    c->capacity[t] = *capacity;
    c->allocatable[t] = *allocatable;
    c->set[t] = true;
    return NW_OK;
}

bool nw_snap_node_pool_type_allocatable(const nw_sched_snap_t *s, size_t pool, size_t itype,
                                        nw_sched_res_t *out)
{
    if (pool >= s->npools || itype >= s->nitypes)
        return false;
    *out = *nw_snap_node_type_allocatable(s, nw_snap_node_class_res(s, s->pools[pool].nodeclass),
                                          itype);
    nw_mig_adjust(&s->pools[pool].labels, &s->itypes[itype].t.labels, s->res_names, s->nres, out);
    return true;
}
