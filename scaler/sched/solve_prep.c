/* scaler/sched/solve_prep.c — the provisioning simulation (scaler/sched/solve.c): preparation:
 * pools, existing nodes, topology groups, and the requirement variants of a pod class. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/wellknown.h"
#include "common/strs.h"
#include "scaler/sched/mig.h"
#include "scaler/sched/solve_int.h"

/* ---- preparation ------------------------------------------------------------- */

bool nw_solve_prep_type_allows_offering(const nw_sitype_t *it, const nw_reqs_t *r, const bool *cts,
                                        uint64_t zmask, const ctx_t *c, const char *nodeclass)
{
    const nw_req_t *zq = r ? nw_requirements_get(r, NW_LABEL_ZONE) : NULL;
    const nw_req_t *ziq = r ? nw_requirements_get(r, NW_LABEL_ZONE_ID) : NULL;
    const nw_req_t *cq = r ? nw_requirements_get(r, NW_LABEL_CAPACITY_TYPE) : NULL;
    for (int i = 0; i < it->t.noffer; i++) {
        const nw_sched_offering_t *o = &it->t.offerings[i];
        if (!o->available || !nw_sv_offer_visible(c, o, nodeclass))
            continue;
        if (cts && !cts[ct_index(o->capacity_type)])
            continue;
        if (zq && !nw_requirements_req_has(zq, o->zone))
            continue;
        if (ziq && !nw_requirements_req_has(ziq, o->zone_id))
            continue;
        if (cq && !nw_requirements_req_has(cq, o->capacity_type))
            continue;
        int z = zone_find(c, o->zone);
        if (z < 0 || !((zmask >> z) & 1))
            continue;
        return true;
    }
    return false;
}

static bool ds_fits_pool_type(const nw_sds_t *d, const nw_spool_t *p, const nw_sitype_t *t)
{
    if (!nw_tolerations_tolerate_all(&p->taints, &d->tols, NW_TAINTS_SCHEDULING))
        return false;
    if (nw_requirements_compatible(&p->reqs, &d->strict, FLAG_ALLOW, NULL) &&
        nw_requirements_intersects(&t->reqs, &d->strict, NULL))
        return true;
    for (size_t i = 1; i < d->nterms; i++) {
        nw_reqs_t r;
        if (nw_requirements_intersect(&d->selector, &d->terms[i], &r) != NW_OK)
            return false;
        bool ok = nw_requirements_compatible(&p->reqs, &r, FLAG_ALLOW, NULL) &&
                  nw_requirements_intersects(&t->reqs, &r, NULL);
        nw_requirements_cleanup(&r);
        if (ok)
            return true;
    }
    return false;
}

static bool int_in(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return true;
    return false;
}

static int cmp_pool(const void *a, const void *b)
{
    const pctx_t *x = a, *y = b;
    if (x->p->weight != y->p->weight)
        return y->p->weight > x->p->weight ? 1 : -1;
    return -strcmp(x->p->name, y->p->name);
}

/* The pool's capacity types, its types (those its requirements and offerings allow, per
 * zone too) with their price, DaemonSet overhead and room for pods. */
static NW_MUST_USE nw_rc_t pool_types(ctx_t *c, pctx_t *p)
{
    const nw_sched_snap_t *s = c->s;
    p->cls = nw_snap_node_class_res(s, p->p->nodeclass);
    const nw_req_t *cq = nw_requirements_get(&p->p->reqs, NW_LABEL_CAPACITY_TYPE);
    p->ct_allowed[0] = !cq || nw_requirements_req_has(cq, "on-demand");
    p->ct_allowed[1] = !cq || nw_requirements_req_has(cq, "spot");
    p->ct_allowed[2] = cq && nw_requirements_req_has(cq, "reserved");
    for (size_t k = 0; k < p->p->taints.n; k++)
        if (p->p->taints.v[k].effect == NW_TAINT_PREFER_NO_SCHEDULE)
            p->has_prefer_taint = c->any_prefer_taint = true;
    p->types = calloc((size_t)c->nw, sizeof(word_t));
    p->avail = calloc((size_t)c->nt + 1, sizeof *p->avail);
    p->ovh = calloc((size_t)c->nt + 1, sizeof *p->ovh);
    p->price = calloc((size_t)c->nt + 1, sizeof *p->price);
    p->zbits = calloc((size_t)c->nz + 1, sizeof *p->zbits);
    if (!p->types || !p->avail || !p->ovh || !p->zbits || !p->price)
        return NW_ENOMEM;
    for (int z = 0; z < c->nz; z++)
        if (!(p->zbits[z] = calloc((size_t)c->nw, sizeof(word_t))))
            return NW_ENOMEM;
    uint64_t pz = zmask_of(c, &p->p->reqs);
    for (int t = 0; t < c->nt; t++) {
        const nw_sitype_t *it = &s->itypes[t];
        if (p->cls && (size_t)t < p->cls->n && p->cls->excluded[t])
            continue;
        if (!nw_requirements_intersects(&it->reqs, &p->p->reqs, NULL))
            continue;
        if (!nw_solve_prep_type_allows_offering(it, &p->p->reqs, p->ct_allowed, pz, c,
                                                p->p->nodeclass))
            continue;
        p->types[t >> 6] |= 1ULL << (t & 63);
        p->price[t] = 1e300;
        for (int o = 0; o < it->t.noffer; o++) {
            const nw_sched_offering_t *of = &it->t.offerings[o];
            if (of->available && p->ct_allowed[ct_index(of->capacity_type)] &&
                nw_sv_offer_visible(c, of, p->p->nodeclass) && of->price < p->price[t])
                p->price[t] = of->price;
        }
        for (size_t d = 0; d < s->ndss; d++)
            if (ds_fits_pool_type(&s->dss[d], p->p, it)) {
                for (int k = 0; k < NW_SCHED_NRES; k++)
                    p->ovh[t].v[k] += s->dss[d].req.v[k];
                if (s->dss[d].nhostports && !int_in(p->dsports, p->ndsports, (int)d)) {
                    int *nd = realloc(p->dsports, (size_t)(p->ndsports + 1) * sizeof *nd);
                    if (!nd)
                        return NW_ENOMEM;
                    p->dsports = nd;
                    nd[p->ndsports++] = (int)d;
                }
            }
        nw_sched_res_t alloc = *nw_snap_node_type_allocatable(s, p->cls, (size_t)t);
        /* a pool that shares its GPUs (MIG slices, time-slicing replicas): scaler/sched/mig.h */
        nw_mig_adjust(&p->p->labels, &it->t.labels, s->res_names, s->nres, &alloc);
        for (int k = 0; k < NW_SCHED_NRES; k++)
            p->avail[t].v[k] = alloc.v[k] - p->ovh[t].v[k];
        for (int z = 0; z < c->nz; z++)
            if (nw_solve_prep_type_allows_offering(it, &p->p->reqs, p->ct_allowed, 1ULL << z, c,
                                                   p->p->nodeclass))
                p->zbits[z][t >> 6] |= 1ULL << (t & 63);
    }
    return NW_OK;
}

/* What the pool's limits leave: limits − capacity of its existing nodes and claims. */
static void pool_remaining(const ctx_t *c, pctx_t *p)
{
    const nw_sched_snap_t *s = c->s;
    /* limits: remaining = limits − capacity of existing nodes and claims of the pool */
    for (int k = 0; k < NW_SCHED_NRES; k++)
        p->remaining[k] = p->p->has_limits[k] ? p->p->limits.v[k] : INT64_MAX;
    p->nodes_left = p->p->has_node_limit ? p->p->node_limit : INT64_MAX;
    for (size_t n = 0; n < s->nnodes; n++) {
        const nw_snode_t *nd = &s->nodes[n];
        if (!nd->pool || strcmp(nd->pool, p->p->name) != 0)
            continue;
        const nw_sched_res_t *cap = &nd->capacity;
        nw_sched_res_t tmp;
        bool zero = true;
        for (int k = 0; k < NW_SCHED_NRES; k++)
            zero &= cap->v[k] == 0;
        if (zero) {
            const char *itn = nw_labels_get(&nd->labels, NW_LABEL_INSTANCE_TYPE);
            const nw_req_t *r = nw_requirements_get(&nd->reqs, NW_LABEL_INSTANCE_TYPE);
            if (!itn && r && !r->complement && r->nvalues > 0)
                itn = r->values[0];
            memset(&tmp, 0, sizeof tmp);
            for (size_t t = 0; itn && t < s->nitypes; t++)
                if (strcmp(s->itypes[t].t.name, itn) == 0)
                    tmp = *nw_snap_node_type_capacity(s, p->cls, t);
            cap = &tmp;
        }
        for (int k = 0; k < NW_SCHED_NRES; k++)
            if (p->p->has_limits[k])
                p->remaining[k] -= cap->v[k];
        if (p->p->has_node_limit)
            p->nodes_left--;
    }
}

nw_rc_t nw_solve_prep_pools(ctx_t *c)
{
    const nw_sched_snap_t *s = c->s;
    c->pools = calloc(s->npools ? s->npools : 1, sizeof *c->pools);
    if (!c->pools)
        return NW_ENOMEM;
    for (size_t i = 0; i < s->npools; i++) {
        if (s->pools[i].deleting)
            continue;
        pctx_t *p = &c->pools[c->npools++];
        p->p = &s->pools[i];
        p->idx = (int)i;
    }
    qsort(c->pools, (size_t)c->npools, sizeof *c->pools, cmp_pool);
    for (int pi = 0; pi < c->npools; pi++) {
        pctx_t *p = &c->pools[pi];
        nw_rc_t rc = pool_types(c, p);
        if (rc != NW_OK)
            return rc;
        pool_remaining(c, p);
    }
    return NW_OK;
}

static const nw_sitype_t *find_itype(const nw_sched_snap_t *s, const char *name)
{
    for (size_t t = 0; name && t < s->nitypes; t++)
        if (strcmp(s->itypes[t].t.name, name) == 0)
            return &s->itypes[t];
    return NULL;
}

/* the node class resources of the pool named pool, NULL when none */
static const nw_sclass_t *class_of_pool(const nw_sched_snap_t *s, const char *pool)
{
    for (size_t i = 0; pool && i < s->npools; i++)
        if (strcmp(s->pools[i].name, pool) == 0)
            return nw_snap_node_class_res(s, s->pools[i].nodeclass);
    return NULL;
}

static int cmp_enode(const void *a, const void *b, void *arg)
{
    const nw_sched_snap_t *s = arg;
    const nw_snode_t *x = &s->nodes[((const enode_t *)a)->snode];
    const nw_snode_t *y = &s->nodes[((const enode_t *)b)->snode];
    if (x->initialized != y->initialized)
        return x->initialized ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* A bound pod by its node's name (nw_solve_prep_nodes). */
typedef struct {
    const char *node;
    int pod;
} bound_t;

static int bound_cmp(const void *a, const void *b)
{
    const bound_t *x = a, *y = b;
    int r = strcmp(x->node, y->node);
    return r ? r : (x->pod > y->pod) - (x->pod < y->pod);
}

/* The first entry bound to node (nbound when none). */
static size_t bound_first(const bound_t *v, size_t n, const char *node)
{
    return nw_strs_lower(v, n, sizeof *v, offsetof(bound_t, node), node, NULL);
}

nw_rc_t nw_solve_prep_nodes(ctx_t *c)
{
    const nw_sched_snap_t *s = c->s;
    c->en = calloc(s->nnodes + 1, sizeof *c->en);
    if (!c->en)
        return NW_ENOMEM;
    for (size_t i = 0; i < s->nnodes; i++) {
        const nw_snode_t *n = &s->nodes[i];
        if (n->deleting)
            continue;
        enode_t *e = &c->en[c->nen++];
        e->snode = (int)i;
        e->free = n->allocatable;
        bool zero = true;
        for (int k = 0; k < NW_SCHED_NRES; k++)
            zero &= e->free.v[k] == 0;
        if (zero) { /* in-flight claim without status: the type's allocatable */
            const char *itn = nw_labels_get(&n->labels, NW_LABEL_INSTANCE_TYPE);
            const nw_req_t *r = nw_requirements_get(&n->reqs, NW_LABEL_INSTANCE_TYPE);
            if (!itn && r && !r->complement && r->nvalues > 0)
                itn = r->values[0];
            const nw_sitype_t *it = find_itype(s, itn);
            if (it)
                e->free = *nw_snap_node_type_allocatable(s, class_of_pool(s, n->pool),
                                                         (size_t)(it - s->itypes));
        }
        const char *z = nw_labels_get(&n->labels, NW_LABEL_ZONE);
        const nw_req_t *zr = nw_requirements_get(&n->reqs, NW_LABEL_ZONE);
        if (!z && zr && !zr->complement && zr->nvalues == 1)
            z = zr->values[0];
        e->zone = z ? zone_find(c, z) : -1;
    }
    qsort_r(c->en, (size_t)c->nen, sizeof *c->en, cmp_enode, (void *)s);
    /* the pods by the node they are bound to, so each node finds its own in a search
     * (not a walk over every pod per node) */
    bound_t *bound = calloc(s->npods + 1, sizeof *bound);
    if (!bound)
        return NW_ENOMEM;
    size_t nbound = 0;
    for (size_t p = 0; p < s->npods; p++)
        if (s->pods[p].node_name)
            bound[nbound++] = (bound_t){s->pods[p].node_name, (int)p};
    qsort(bound, nbound, sizeof *bound, bound_cmp);
    nw_rc_t rc = NW_OK;
    /* bound pods use room; DaemonSets not yet running there reserve theirs */
    for (int i = 0; i < c->nen && rc == NW_OK; i++) {
        enode_t *e = &c->en[i];
        const nw_snode_t *n = &s->nodes[e->snode];
        e->csi = n->claim ? NULL : nw_snap_volume_csinode(s, n->name);
        size_t lo = bound_first(bound, nbound, n->name), hi = lo;
        while (hi < nbound && strcmp(bound[hi].node, n->name) == 0)
            hi++;
        for (size_t b = lo; b < hi && rc == NW_OK; b++) {
            const nw_spod_t *pd = &s->pods[bound[b].pod];
            if (pd->finished)
                continue;
            for (int k = 0; k < NW_SCHED_NRES; k++)
                e->free.v[k] -= pd->req.v[k];
            if (pd->nvols && nw_solve_topo_volumes_add(c, bound[b].pod, e) != NW_OK)
                rc = NW_ENOMEM;
        }
        for (size_t d = 0; d < s->ndss && rc == NW_OK; d++) {
            const nw_sds_t *ds = &s->dss[d];
            if (!nw_tolerations_tolerate_all(&n->taints, &ds->tols, NW_TAINTS_SCHEDULING) ||
                !nw_requirements_match_labels(&ds->strict, &n->labels, NULL))
                continue;
            bool running = false;
            for (size_t b = lo; b < hi && !running; b++) {
                const nw_spod_t *pd = &s->pods[bound[b].pod];
                running = pd->owner_kind && strcmp(pd->owner_kind, "DaemonSet") == 0 &&
                          pd->owner_name && strcmp(pd->owner_name, ds->name) == 0 &&
                          strcmp(pd->ns, ds->ns) == 0;
            }
            if (!running)
                for (int k = 0; k < NW_SCHED_NRES; k++)
                    e->free.v[k] -= ds->req.v[k];
        }
    }
    free(bound);
    return rc;
}

/* ---- pod requirement variants --------------------------------------------------- */

variant_t *nw_solve_prep_variant_get(ctx_t *c, int pod)
{
    const nw_spod_t *p = &c->s->pods[pod];
    const nw_pclass_t *cl = &c->s->classes[p->cls];
    vcache_t *vc = &c->vc[p->cls];
    pstate_t *st = &c->ps[pod];
    int nterms = cl->nterms ? (int)cl->nterms : 1;
    if (!vc->v) {
        vc->nv = nterms * ((int)cl->nprefs + 1);
        vc->v = calloc((size_t)vc->nv, sizeof *vc->v);
        if (!vc->v)
            return NULL;
    }
    variant_t *v = &vc->v[st->term * ((int)cl->nprefs + 1) + st->pref];
    if (v->built)
        return v;
    nw_reqs_t tmp;
    if (nw_requirements_copy(&v->reqs, &cl->selector) != NW_OK)
        return NULL;
    if (cl->nterms && nw_requirements_add_all(&v->reqs, &cl->terms[st->term]) != NW_OK)
        return NULL;
    if (nw_requirements_copy(&v->strict, &cl->selector) != NW_OK ||
        (cl->nterms &&
         nw_requirements_add_all(&v->strict, cl->sterms ? &cl->sterms[st->term]
                                                        : &cl->terms[st->term]) != NW_OK))
        return NULL;
    if (st->pref < (int)cl->nprefs &&
        nw_requirements_add_all(&v->reqs, &cl->prefs[st->pref]) != NW_OK)
        return NULL;
    (void)tmp;
    for (int k = 0; k < c->nkeys; k++) {
        v->pmask[k] = nw_solve_topo_key_mask(c, k, &v->strict);
        v->vmask[k] = nw_solve_topo_key_mask(c, k, &v->reqs);
    }
    int np = c->s->npools ? (int)c->s->npools : 1;
    v->status = calloc((size_t)np, 1);
    v->reason = calloc((size_t)np, sizeof(char *));
    v->merged = calloc((size_t)np, sizeof(nw_reqs_t));
    v->bits = calloc((size_t)np * (size_t)c->nw + 1, sizeof(word_t));
    v->zmask = calloc((size_t)np, sizeof(uint64_t));
    if (!v->status || !v->reason || !v->merged || !v->bits || !v->zmask)
        return NULL;
    v->built = true;
    return v;
}

/* status of (variant, pool): 1 ok; else reason set */
int nw_solve_prep_variant_pool(ctx_t *c, variant_t *v, const nw_pclass_t *cl, const pctx_t *pc)
{
    int pi = pc->idx;
    if (v->status[pi])
        return v->status[pi];
    nw_reqs_conflict_t cf;
    char buf[1200];
    if (!nw_requirements_compatible(&pc->p->reqs, &v->reqs, FLAG_ALLOW, &cf)) {
        snprintf(buf, sizeof buf, "incompatible requirements, %s", cf.msg);
        v->reason[pi] = strdup(buf);
        return v->status[pi] = 2;
    }
    if (nw_requirements_intersect(&pc->p->reqs, &v->reqs, &v->merged[pi]) != NW_OK)
        return v->status[pi] = 2;
    word_t *b = &v->bits[(size_t)pi * (size_t)c->nw];
    uint64_t zm = zmask_of(c, &v->merged[pi]);
    v->zmask[pi] = zm;
    bool any_compatible = false;
    FOR_BITS(pc->types, c->nw, t)
    {
        const nw_sitype_t *it = &c->s->itypes[t];
        if (it->accel && !cl->wants_accel)
            continue;
        if (!nw_requirements_intersects(&it->reqs, &v->merged[pi], NULL))
            continue;
        any_compatible = true;
        if (!nw_solve_prep_type_allows_offering(it, &v->merged[pi], pc->ct_allowed, zm, c,
                                                pc->p->nodeclass))
            continue;
        b[t >> 6] |= 1ULL << (t & 63);
    }
    if (!bits_any(b, c->nw)) {
        char rq[900];
        nw_requirements_format(&v->merged[pi], rq, sizeof rq);
        snprintf(buf, sizeof buf, "no instance type satisfied requirements%s %s",
                 any_compatible ? " with an available offering," : ",", rq);
        v->reason[pi] = strdup(buf);
        nw_requirements_cleanup(&v->merged[pi]);
        return v->status[pi] = 3;
    }
    return v->status[pi] = 1;
}
