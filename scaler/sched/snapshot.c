/*
 * scaler/sched/snapshot.c — building a scheduling snapshot from Kubernetes JSON
 * (pods, nodes, NodeClaims, NodePools, DaemonSets) and instance types: its life
 * cycle, accessors, resources and time; pods in snap_pod.c, the rest in snap_node.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/quantity.h"
#include "api/wellknown.h"
#include "common/json.h"
#include "scaler/sched/snap.h"
static const char *const fixed_names[NW_SR_FIXED] = {
    "cpu",
    "memory",
    "pods",
    "ephemeral-storage",
    "nvidia.com/gpu",
    "amd.com/gpu",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "aws.amazon.com/neurondevice",
    "habana.ai/gaudi",
    "vpc.amazonaws.com/efa",
};

uint64_t nw_snapshot_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

void *nw_snapshot_grow(void *p, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return p;
    size_t nc = *cap ? *cap * 2 : 16;
    void *q = realloc(p, nc * elem);
    if (!q)
        return NULL;
    memset((char *)q + *cap * elem, 0, (nc - *cap) * elem);
    *cap = nc;
    return q;
}

char *nw_snapshot_dupstr(const char *s)
{
    return s ? strdup(s) : NULL;
}

nw_sched_snap_t *nw_snapshot_new(void)
{
    nw_sched_snap_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    for (int i = 0; i < NW_SR_FIXED; i++)
        s->res_names[i] = (char *)fixed_names[i];
    s->nres = NW_SR_FIXED;
    return s;
}

void nw_snapshot_pclass_free(nw_pclass_t *c)
{
    free(c->sig);
    nw_requirements_cleanup(&c->selector);
    nw_requirements_json_terms_free(c->terms, c->nterms);
    if (c->sterms)
        nw_requirements_json_terms_free(c->sterms, c->nterms);
    nw_requirements_json_terms_free(c->prefs, c->nprefs);
    free(c->volume_err);
    nw_tolerations_cleanup(&c->tols);
    free(c->invalid);
}

void nw_snapshot_pod_free(nw_spod_t *p)
{
    free(p->ns);
    free(p->name);
    free(p->uid);
    free(p->key);
    free(p->node_name);
    free(p->prefer);
    free(p->owner_kind);
    free(p->owner_name);
    free(p->tcs);
    free(p->hostports);
    for (int i = 0; i < p->nvols; i++) {
        free(p->vols[i].driver);
        free(p->vols[i].id);
    }
    free(p->vols);
}

void nw_snapshot_spec_free(nw_sspec_t *e)
{
    free(e->hostports);
    for (size_t i = 0; i < e->ntcs; i++) {
        free(e->tcs[i].ns);
        free(e->tcs[i].tcs);
    }
    free(e->tcs);
}

void nw_snapshot_group_free(nw_tgroup_t *g)
{
    nw_requirements_cleanup(&g->sel);
    nw_requirements_cleanup(&g->nssel);
    free(g->key);
    for (size_t i = 0; i < g->nns; i++)
        free(g->ns[i]);
    free(g->ns);
    free(g->sig);
}

void nw_snapshot_storage_free(nw_sched_snap_t *s)
{
    for (size_t i = 0; i < s->npvs; i++) {
        free(s->pvs[i].name);
        free(s->pvs[i].driver);
        nw_requirements_json_terms_free(s->pvs[i].terms, s->pvs[i].nterms);
    }
    free(s->pvs);
    for (size_t i = 0; i < s->npvcs; i++) {
        free(s->pvcs[i].ns);
        free(s->pvcs[i].name);
        free(s->pvcs[i].volume);
        free(s->pvcs[i].sc);
    }
    free(s->pvcs);
    for (size_t i = 0; i < s->nscs; i++) {
        free(s->scs[i].name);
        free(s->scs[i].provisioner);
        nw_requirements_json_terms_free(s->scs[i].alts, s->scs[i].nalts);
    }
    free(s->scs);
    for (size_t i = 0; i < s->ncsinodes; i++) {
        nw_scsinode_t *c = &s->csinodes[i];
        free(c->node);
        for (int k = 0; k < c->n; k++)
            free(c->drivers[k]);
        free(c->drivers);
        free(c->limits);
    }
    free(s->csinodes);
}

void nw_snapshot_node_free(nw_snode_t *n)
{
    free(n->name);
    free(n->provider_id);
    nw_labels_cleanup(&n->labels);
    nw_requirements_cleanup(&n->reqs);
    nw_taints_cleanup(&n->taints);
    nw_taints_cleanup(&n->startup_taints);
    free(n->pool);
}

void nw_snapshot_pool_free(nw_spool_t *p)
{
    free(p->name);
    free(p->nodeclass);
    nw_requirements_cleanup(&p->reqs);
    nw_labels_cleanup(&p->labels);
    nw_taints_cleanup(&p->taints);
    nw_taints_cleanup(&p->startup_taints);
}

void nw_snapshot_ds_free(nw_sds_t *d)
{
    free(d->ns);
    free(d->name);
    nw_requirements_cleanup(&d->strict);
    nw_requirements_json_terms_free(d->terms, d->nterms);
    nw_requirements_cleanup(&d->selector);
    nw_tolerations_cleanup(&d->tols);
    free(d->hostports);
}

void nw_snapshot_free(nw_sched_snap_t *s)
{
    if (!s)
        return;
    for (int i = NW_SR_FIXED; i < s->nres; i++)
        free(s->res_names[i]);
    for (size_t i = 0; i < s->npods; i++)
        nw_snapshot_pod_free(&s->pods[i]);
    free(s->pods);
    for (size_t i = 0; i < s->nspecs; i++)
        nw_snapshot_spec_free(&s->specs[i]);
    free(s->specs);
    free(s->spec_map.slots);
    for (size_t i = 0; i < s->nlsets; i++) {
        nw_labels_cleanup(s->lsets[i]);
        free(s->lsets[i]);
    }
    free(s->lsets);
    free(s->labels_map.slots);
    for (size_t i = 0; i < s->nrecs; i++)
        nw_pod_free(s->recs[i]);
    free(s->recs);
    nw_jsonintern_free(s->intern); /* after the records that hold its values */
    for (size_t i = 0; i < s->nclasses; i++)
        nw_snapshot_pclass_free(&s->classes[i]);
    free(s->classes);
    free(s->resvs);
    free(s->class_hash);
    free(s->group_hash);
    for (size_t i = 0; i < s->ngroups; i++)
        nw_snapshot_group_free(&s->groups[i]);
    free(s->groups);
    for (size_t i = 0; i < s->nnss; i++) {
        free(s->nss[i].name);
        nw_labels_cleanup(&s->nss[i].labels);
    }
    free(s->nss);
    nw_snapshot_storage_free(s);
    for (size_t i = 0; i < s->nnodes; i++)
        nw_snapshot_node_free(&s->nodes[i]);
    free(s->nodes);
    for (size_t i = 0; i < s->npools; i++)
        nw_snapshot_pool_free(&s->pools[i]);
    free(s->pools);
    for (size_t i = 0; i < s->ndss; i++)
        nw_snapshot_ds_free(&s->dss[i]);
    free(s->dss);
    for (size_t i = 0; i < s->nitypes; i++) {
        nw_labels_cleanup(&s->itypes[i].t.labels);
        nw_requirements_cleanup(&s->itypes[i].reqs);
    }
    free(s->itypes);
    for (size_t i = 0; i < s->nnominated; i++)
        free(s->nominated[i]);
    free(s->nominated);
    for (size_t i = 0; i < s->nclass_res; i++) {
        free(s->nclasses_res[i].name);
        free(s->nclasses_res[i].capacity);
        free(s->nclasses_res[i].allocatable);
        free(s->nclasses_res[i].set);
        free(s->nclasses_res[i].excluded);
    }
    free(s->nclasses_res);
    free(s->mark.spec_ntcs);
    free(s);
}

nw_rc_t nw_snapshot_static_want(nw_sched_snap_t *s, const char *pool, int64_t n)
{
    for (size_t i = 0; i < s->npools; i++)
        if (strcmp(s->pools[i].name, pool) == 0) {
            s->pools[i].static_want = n < 0 ? 0 : n;
            return NW_OK;
        }
    return NW_ENOTFOUND;
}

void nw_snapshot_set_opts(nw_sched_snap_t *s, const nw_sched_opts_t *o)
{
    s->opts = *o;
}

int nw_snapshot_res_slot(nw_sched_snap_t *s, const char *name)
{
    for (int i = 0; i < s->nres; i++)
        if (strcmp(s->res_names[i], name) == 0)
            return i;
    if (s->nres >= NW_SCHED_NRES)
        return -1;
    s->res_names[s->nres] = strdup(name);
    if (!s->res_names[s->nres])
        return -1;
    return s->nres++;
}

int nw_snapshot_res_slot_find(const nw_sched_snap_t *s, const char *name)
{
    for (int i = 0; i < s->nres; i++)
        if (strcmp(s->res_names[i], name) == 0)
            return i;
    return -1;
}

const char *nw_snapshot_res_name(const nw_sched_snap_t *s, int i)
{
    return (i >= 0 && i < s->nres) ? s->res_names[i] : NULL;
}

size_t nw_snapshot_nreservations(const nw_sched_snap_t *s)
{
    return s->nresvs;
}

size_t nw_snapshot_npods(const nw_sched_snap_t *s)
{
    return s->npods;
}
size_t nw_snapshot_npools(const nw_sched_snap_t *s)
{
    return s->npools;
}
size_t nw_snapshot_nitypes(const nw_sched_snap_t *s)
{
    return s->nitypes;
}
const nw_sched_itype_t *nw_snapshot_itype(const nw_sched_snap_t *s, size_t i)
{
    return i < s->nitypes ? &s->itypes[i].t : NULL;
}
const char *nw_snapshot_pod_key(const nw_sched_snap_t *s, size_t i)
{
    return i < s->npods ? s->pods[i].key : NULL;
}
const char *nw_snapshot_pool_name(const nw_sched_snap_t *s, size_t i)
{
    return i < s->npools ? s->pools[i].name : NULL;
}
const char *nw_snapshot_pool_nodeclass(const nw_sched_snap_t *s, size_t i)
{
    return i < s->npools ? s->pools[i].nodeclass : NULL;
}

cJSON *nw_snapshot_res_to_json(const nw_sched_snap_t *s, const nw_sched_res_t *r)
{
    cJSON *o = nw_json_new_object();
    if (!o)
        return NULL;
    for (int i = 0; i < s->nres; i++) {
        if (r->v[i] == 0)
            continue;
        nw_quantity_format_t f =
            (i == NW_SR_MEMORY || i == NW_SR_EPHEMERAL) ? NW_QTY_BINARY_SI : NW_QTY_DECIMAL_SI;
        char buf[64];
        nw_quantity_format(nw_quantity_from_milli(r->v[i], f), buf, sizeof buf);
        nw_json_add_string(o, s->res_names[i], buf);
    }
    return o;
}

/* ---- resources ------------------------------------------------------------- */

nw_rc_t nw_snapshot_parse_res(nw_sched_snap_t *s, const cJSON *obj, const char *path,
                              nw_sched_res_t *out, bool *present, nw_err_t *err)
{
    memset(out, 0, sizeof *out);
    if (present)
        memset(present, 0, sizeof(bool) * NW_SCHED_NRES);
    if (!obj || cJSON_IsNull(obj))
        return NW_OK;
    if (!cJSON_IsObject(obj))
        return nw_err_set(err, NW_EINVAL, path, "must be an object");
    const cJSON *it;
    cJSON_ArrayForEach(it, obj)
    {
        char p[160];
        snprintf(p, sizeof p, "%s[%s]", path, it->string);
        int64_t milli;
        if (cJSON_IsString(it)) {
            nw_quantity_t q;
            nw_err_t e = {0};
            if (nw_quantity_parse(it->valuestring, &q, &e) != NW_OK)
                return nw_err_set(err, NW_EINVAL, p, "%s", e.msg);
            milli = q.milli;
        } else if (cJSON_IsNumber(it)) {
            double d = it->valuedouble * 1000.0;
            if (!(fabs(d) < 9e18))
                return nw_err_set(err, NW_EINVAL, p, "quantity out of range");
            milli = (int64_t)ceil(d);
        } else {
            return nw_err_set(err, NW_EINVAL, p, "must be a quantity string or number");
        }
        if (strcmp(it->string, "nodes") == 0 && present == NULL)
            continue;
        int slot = nw_snapshot_res_slot(s, it->string);
        if (slot < 0)
            return nw_err_set(err, NW_EINVAL, p, "more than %d distinct resource names",
                              NW_SCHED_NRES);
        out->v[slot] = milli;
        if (present)
            present[slot] = true;
    }
    return NW_OK;
}

/* requests of one container, limits standing in for missing requests (API defaulting) */
static NW_MUST_USE nw_rc_t container_res(nw_sched_snap_t *s, const cJSON *c, const char *path,
                                         nw_sched_res_t *out, nw_err_t *err)
{
    const cJSON *res = nw_json_get(c, "resources");
    char p[160];
    nw_sched_res_t lim;
    snprintf(p, sizeof p, "%s.resources.requests", path);
    nw_rc_t rc =
        nw_snapshot_parse_res(s, res ? nw_json_get(res, "requests") : NULL, p, out, NULL, err);
    if (rc != NW_OK)
        return rc;
    snprintf(p, sizeof p, "%s.resources.limits", path);
    bool pres[NW_SCHED_NRES];
    rc = nw_snapshot_parse_res(s, res ? nw_json_get(res, "limits") : NULL, p, &lim, pres, err);
    if (rc != NW_OK)
        return rc;
    const cJSON *rq = res ? nw_json_get(res, "requests") : NULL;
    for (int i = 0; i < NW_SCHED_NRES; i++)
        if (pres[i] && !(rq && nw_json_get(rq, s->res_names[i])))
            out->v[i] = lim.v[i];
    return NW_OK;
}

nw_rc_t nw_snapshot_pod_requests(nw_sched_snap_t *s, const cJSON *spec, const char *path,
                                 nw_sched_res_t *out, nw_err_t *err)
{
    nw_sched_res_t apps = {{0}}, side = {{0}}, peak = {{0}}, c;
    char p[160];
    const cJSON *arr = nw_json_get(spec, "containers"), *it;
    int i = 0;
    nw_rc_t rc;
    if (arr && !cJSON_IsArray(arr))
        return nw_err_set(err, NW_EINVAL, "spec.containers", "must be a list");
    cJSON_ArrayForEach(it, arr)
    {
        snprintf(p, sizeof p, "%s.containers[%d]", path, i++);
        if ((rc = container_res(s, it, p, &c, err)) != NW_OK)
            return rc;
        for (int k = 0; k < NW_SCHED_NRES; k++)
            apps.v[k] += c.v[k];
    }
    arr = nw_json_get(spec, "initContainers");
    i = 0;
    cJSON_ArrayForEach(it, arr)
    {
        snprintf(p, sizeof p, "%s.initContainers[%d]", path, i++);
        if ((rc = container_res(s, it, p, &c, err)) != NW_OK)
            return rc;
        const char *rp = nw_json_str(it, "restartPolicy");
        bool sidecar = rp && strcmp(rp, "Always") == 0;
        for (int k = 0; k < NW_SCHED_NRES; k++) {
            int64_t v = sidecar ? side.v[k] + c.v[k] : c.v[k] + side.v[k];
            if (v > peak.v[k])
                peak.v[k] = v;
            if (sidecar)
                side.v[k] += c.v[k];
        }
    }
    for (int k = 0; k < NW_SCHED_NRES; k++) {
        int64_t v = apps.v[k] + side.v[k];
        out->v[k] = v > peak.v[k] ? v : peak.v[k];
    }
    const cJSON *pr = nw_json_get(spec, "resources");
    if (pr && nw_json_get(pr, "requests")) {
        nw_sched_res_t podlvl;
        bool pres[NW_SCHED_NRES];
        snprintf(p, sizeof p, "%s.resources.requests", path);
        if ((rc = nw_snapshot_parse_res(s, nw_json_get(pr, "requests"), p, &podlvl, pres, err)) !=
            NW_OK)
            return rc;
        for (int k = 0; k < NW_SCHED_NRES; k++)
            if (pres[k])
                out->v[k] = podlvl.v[k];
    }
    const cJSON *ov = nw_json_get(spec, "overhead");
    if (ov) {
        nw_sched_res_t o;
        snprintf(p, sizeof p, "%s.overhead", path);
        if ((rc = nw_snapshot_parse_res(s, ov, p, &o, NULL, err)) != NW_OK)
            return rc;
        for (int k = 0; k < NW_SCHED_NRES; k++)
            out->v[k] += o.v[k];
    }
    out->v[NW_SR_PODS] = 1000;
    return NW_OK;
}
