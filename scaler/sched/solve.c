/*
 * scaler/sched/solve.c — the provisioning simulation (kubernetes-sigs/karpenter
 * pkg/controllers/provisioning/scheduling/scheduler.go, nodeclaim.go, topology.go).
 *
 * Data layout for speed: instance types are bit positions; each (pod class, variant,
 * pool) caches the bitset of types whose requirements and offerings suit it; each
 * candidate NodeClaim keeps the bitset of types that can still hold all its pods and
 * the best free room over them (a cheap first reject). Topology counts are flat int
 * arrays per group over zones and over host slots (existing nodes, then new claims).
 * The per-pod path allocates only when a claim's requirements change (a pod with its
 * own requirements, or a zone being pinned).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/sched/snap.h"
#include "api/wellknown.h"

#define MAX_ZONES 64
#define MAX_TCS 64
#define FLAG_ALLOW NW_REQS_ALLOW_UNDEFINED_WELL_KNOWN

typedef uint64_t word_t;

typedef struct {
    bool built;
    nw_reqs_t reqs;  /* selector ∩ term ∩ preferred term */
    int8_t *status;  /* per pool: 0 unknown, 1 ok, 2 incompatible, 3 no type */
    char **reason;   /* per pool when status 2/3 */
    nw_reqs_t *merged; /* per pool when status 1: pool ∩ pod */
    word_t *bits;    /* per pool: nw words */
    uint64_t *zmask; /* per pool: zones allowed by merged reqs */
} variant_t;

typedef struct {
    variant_t *v; /* nterms' × (nprefs+1) */
    int nv;
} vcache_t;

typedef struct {
    int term, pref;        /* variant */
    bool tol_prefer;       /* relaxation 6 */
    uint64_t tc_off;       /* bit i: tcs[i] relaxed */
    bool placed;
    int *selgroups;        /* groups selecting this pod */
    int nsel;
    int last_len, epoch;
} pstate_t;

typedef struct {
    int pool;
    nw_reqs_t reqs;
    word_t *bits;
    nw_sched_res_t used;
    int64_t maxfree[3];
    double minprice; /* cheapest type still in bits */
    nw_sched_res_t reserved; /* max capacity over bits (limits) */
    uint64_t zmask;
    int *pods;
    int npods, cpods;
    int idx; /* creation order */
} claim_t;

typedef struct {
    const nw_spool_t *p;
    int idx;
    word_t *types;         /* compatible with pool reqs, some allowed offering */
    nw_sched_res_t *avail; /* per type: allocatable − daemonset overhead */
    nw_sched_res_t *ovh;
    double *price;         /* per type: cheapest available offering the pool allows */
    word_t **zbits;        /* per zone */
    bool ct_allowed[3];    /* on-demand, spot, reserved */
    int64_t remaining[NW_SCHED_NRES];
    int64_t nodes_left;
    bool has_prefer_taint;
} pctx_t;

typedef struct {
    int snode;             /* snapshot node index */
    nw_sched_res_t free;   /* allocatable − pods − daemonset overhead */
    int zone;              /* -1 unknown */
} enode_t;

typedef struct {
    const nw_sched_snap_t *s;
    int nt, nw, nres, nz;
    char *zones[MAX_ZONES];
    pctx_t *pools; /* in weight order */
    int npools;
    vcache_t *vc;
    pstate_t *ps;
    enode_t *en;
    int nen;
    claim_t *claims;
    int nclaims, cclaims;
    int *corder;
    /* topology, per group */
    int **zcount, **zowners, **hcount, **howners;
    int *gtotal;
    int hcap;
    word_t *scratch, *scratch2;
    double *alone; /* per snapshot pool, scratch of try_claims */
    bool any_prefer_taint;
} ctx_t;

static int ct_index(const char *ct)
{
    if (strcmp(ct, "on-demand") == 0)
        return 0;
    if (strcmp(ct, "spot") == 0)
        return 1;
    return 2;
}

static int zone_index(ctx_t *c, const char *z)
{
    for (int i = 0; i < c->nz; i++)
        if (strcmp(c->zones[i], z) == 0)
            return i;
    if (c->nz >= MAX_ZONES)
        return -1;
    c->zones[c->nz] = (char *)z;
    return c->nz++;
}

static int zone_find(const ctx_t *c, const char *z)
{
    for (int i = 0; i < c->nz; i++)
        if (strcmp(c->zones[i], z) == 0)
            return i;
    return -1;
}

static uint64_t zmask_of(const ctx_t *c, const nw_reqs_t *r)
{
    const nw_req_t *q = nw_reqs_get(r, NW_LABEL_ZONE);
    uint64_t m = 0;
    for (int i = 0; i < c->nz; i++)
        if (!q || nw_req_has(q, c->zones[i]))
            m |= 1ULL << i;
    return m;
}

static inline bool fits(const nw_sched_res_t *need, const nw_sched_res_t *have, int nres)
{
    for (int k = 0; k < nres; k++)
        if (need->v[k] > have->v[k])
            return false;
    return true;
}

static inline bool bit_get(const word_t *b, int i)
{
    return (b[i >> 6] >> (i & 63)) & 1;
}

static bool bits_any(const word_t *b, int nw)
{
    for (int i = 0; i < nw; i++)
        if (b[i])
            return true;
    return false;
}

#define FOR_BITS(b, nw, t)                                                                   \
    for (int _w = 0; _w < (nw); _w++)                                                        \
        for (word_t _x = (b)[_w]; _x; _x &= _x - 1)                                          \
            for (int t = _w * 64 + __builtin_ctzll(_x), _once = 1; _once; _once = 0)

/* ---- preparation ------------------------------------------------------------- */

static bool type_allows_offering(const nw_sitype_t *it, const nw_reqs_t *r, const bool *cts,
                                 uint64_t zmask, const ctx_t *c)
{
    const nw_req_t *zq = r ? nw_reqs_get(r, NW_LABEL_ZONE) : NULL;
    const nw_req_t *cq = r ? nw_reqs_get(r, NW_LABEL_CAPACITY_TYPE) : NULL;
    for (int i = 0; i < it->t.noffer; i++) {
        const nw_sched_offering_t *o = &it->t.offerings[i];
        if (!o->available)
            continue;
        if (cts && !cts[ct_index(o->capacity_type)])
            continue;
        if (zq && !nw_req_has(zq, o->zone))
            continue;
        if (cq && !nw_req_has(cq, o->capacity_type))
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
    if (!nw_taints_tolerated(&p->taints, &d->tols, NW_TAINTS_SCHEDULING))
        return false;
    if (nw_reqs_compatible(&p->reqs, &d->strict, FLAG_ALLOW, NULL) &&
        nw_reqs_intersects(&t->reqs, &d->strict, NULL))
        return true;
    for (size_t i = 1; i < d->nterms; i++) {
        nw_reqs_t r;
        if (nw_reqs_intersect(&d->selector, &d->terms[i], &r) != NW_OK)
            return false;
        bool ok = nw_reqs_compatible(&p->reqs, &r, FLAG_ALLOW, NULL) &&
                  nw_reqs_intersects(&t->reqs, &r, NULL);
        nw_reqs_cleanup(&r);
        if (ok)
            return true;
    }
    return false;
}

static int cmp_pool(const void *a, const void *b)
{
    const pctx_t *x = a, *y = b;
    if (x->p->weight != y->p->weight)
        return y->p->weight > x->p->weight ? 1 : -1;
    return -strcmp(x->p->name, y->p->name);
}

static nw_rc_t prep_pools(ctx_t *c)
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
        const nw_req_t *cq = nw_reqs_get(&p->p->reqs, NW_LABEL_CAPACITY_TYPE);
        p->ct_allowed[0] = !cq || nw_req_has(cq, "on-demand");
        p->ct_allowed[1] = !cq || nw_req_has(cq, "spot");
        p->ct_allowed[2] = cq && nw_req_has(cq, "reserved");
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
            if (!nw_reqs_intersects(&it->reqs, &p->p->reqs, NULL))
                continue;
            if (!type_allows_offering(it, &p->p->reqs, p->ct_allowed, pz, c))
                continue;
            p->types[t >> 6] |= 1ULL << (t & 63);
            p->price[t] = 1e300;
            for (int o = 0; o < it->t.noffer; o++) {
                const nw_sched_offering_t *of = &it->t.offerings[o];
                if (of->available && p->ct_allowed[ct_index(of->capacity_type)] &&
                    of->price < p->price[t])
                    p->price[t] = of->price;
            }
            for (size_t d = 0; d < s->ndss; d++)
                if (ds_fits_pool_type(&s->dss[d], p->p, it))
                    for (int k = 0; k < NW_SCHED_NRES; k++)
                        p->ovh[t].v[k] += s->dss[d].req.v[k];
            for (int k = 0; k < NW_SCHED_NRES; k++)
                p->avail[t].v[k] = it->t.allocatable.v[k] - p->ovh[t].v[k];
            for (int z = 0; z < c->nz; z++)
                if (type_allows_offering(it, &p->p->reqs, p->ct_allowed, 1ULL << z, c))
                    p->zbits[z][t >> 6] |= 1ULL << (t & 63);
        }
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
                const nw_req_t *r = nw_reqs_get(&nd->reqs, NW_LABEL_INSTANCE_TYPE);
                if (!itn && r && !r->complement && r->nvalues > 0)
                    itn = r->values[0];
                memset(&tmp, 0, sizeof tmp);
                for (size_t t = 0; itn && t < s->nitypes; t++)
                    if (strcmp(s->itypes[t].t.name, itn) == 0)
                        tmp = s->itypes[t].t.capacity;
                cap = &tmp;
            }
            for (int k = 0; k < NW_SCHED_NRES; k++)
                if (p->p->has_limits[k])
                    p->remaining[k] -= cap->v[k];
            if (p->p->has_node_limit)
                p->nodes_left--;
        }
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

static int cmp_enode(const void *a, const void *b, void *arg)
{
    const nw_sched_snap_t *s = arg;
    const nw_snode_t *x = &s->nodes[((const enode_t *)a)->snode];
    const nw_snode_t *y = &s->nodes[((const enode_t *)b)->snode];
    if (x->initialized != y->initialized)
        return x->initialized ? -1 : 1;
    return strcmp(x->name, y->name);
}

static nw_rc_t prep_nodes(ctx_t *c)
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
            const nw_req_t *r = nw_reqs_get(&n->reqs, NW_LABEL_INSTANCE_TYPE);
            if (!itn && r && !r->complement && r->nvalues > 0)
                itn = r->values[0];
            const nw_sitype_t *it = find_itype(s, itn);
            if (it)
                e->free = it->t.allocatable;
        }
        const char *z = nw_labels_get(&n->labels, NW_LABEL_ZONE);
        const nw_req_t *zr = nw_reqs_get(&n->reqs, NW_LABEL_ZONE);
        if (!z && zr && !zr->complement && zr->nvalues == 1)
            z = zr->values[0];
        e->zone = z ? zone_find(c, z) : -1;
    }
    qsort_r(c->en, (size_t)c->nen, sizeof *c->en, cmp_enode, (void *)s);
    /* bound pods use room; DaemonSets not yet running there reserve theirs */
    for (int i = 0; i < c->nen; i++) {
        enode_t *e = &c->en[i];
        const nw_snode_t *n = &s->nodes[e->snode];
        for (size_t p = 0; p < s->npods; p++) {
            const nw_spod_t *pd = &s->pods[p];
            if (!pd->node_name || pd->finished || strcmp(pd->node_name, n->name) != 0)
                continue;
            for (int k = 0; k < NW_SCHED_NRES; k++)
                e->free.v[k] -= pd->req.v[k];
        }
        for (size_t d = 0; d < s->ndss; d++) {
            const nw_sds_t *ds = &s->dss[d];
            if (!nw_taints_tolerated(&n->taints, &ds->tols, NW_TAINTS_SCHEDULING) ||
                !nw_reqs_match_labels(&ds->strict, &n->labels, NULL))
                continue;
            bool running = false;
            for (size_t p = 0; p < s->npods && !running; p++) {
                const nw_spod_t *pd = &s->pods[p];
                running = pd->node_name && strcmp(pd->node_name, n->name) == 0 &&
                          pd->owner_kind && strcmp(pd->owner_kind, "DaemonSet") == 0 &&
                          pd->owner_name && strcmp(pd->owner_name, ds->name) == 0 &&
                          strcmp(pd->ns, ds->ns) == 0;
            }
            if (!running)
                for (int k = 0; k < NW_SCHED_NRES; k++)
                    e->free.v[k] -= ds->req.v[k];
        }
    }
    return NW_OK;
}

static nw_rc_t host_grow(ctx_t *c, int need)
{
    if (need <= c->hcap)
        return NW_OK;
    int cap = c->hcap ? c->hcap : 64;
    while (cap < need)
        cap *= 2;
    for (size_t g = 0; g < c->s->ngroups; g++) {
        int *a = realloc(c->hcount[g], (size_t)cap * sizeof(int));
        if (!a)
            return NW_ENOMEM;
        memset(a + c->hcap, 0, (size_t)(cap - c->hcap) * sizeof(int));
        c->hcount[g] = a;
        int *b = realloc(c->howners[g], (size_t)cap * sizeof(int));
        if (!b)
            return NW_ENOMEM;
        memset(b + c->hcap, 0, (size_t)(cap - c->hcap) * sizeof(int));
        c->howners[g] = b;
    }
    c->hcap = cap;
    return NW_OK;
}

static void topo_record(ctx_t *c, int pod, int host, int zone)
{
    const nw_spod_t *p = &c->s->pods[pod];
    pstate_t *st = &c->ps[pod];
    for (int i = 0; i < st->nsel; i++) {
        int g = st->selgroups[i];
        if (host >= 0)
            c->hcount[g][host]++;
        if (zone >= 0)
            c->zcount[g][zone]++;
        if (zone >= 0 || c->s->groups[g].key == NW_SCHED_HOSTNAME)
            c->gtotal[g]++;
    }
    for (int i = 0; i < p->ntcs; i++) {
        int g = p->tcs[i].group;
        if (c->s->groups[g].kind != NW_TG_ANTI || (st->tc_off >> i & 1))
            continue;
        if (host >= 0)
            c->howners[g][host]++;
        if (zone >= 0)
            c->zowners[g][zone]++;
    }
}

static nw_rc_t prep_topology(ctx_t *c)
{
    const nw_sched_snap_t *s = c->s;
    size_t ng = s->ngroups ? s->ngroups : 1;
    c->zcount = calloc(ng, sizeof(int *));
    c->zowners = calloc(ng, sizeof(int *));
    c->hcount = calloc(ng, sizeof(int *));
    c->howners = calloc(ng, sizeof(int *));
    c->gtotal = calloc(ng, sizeof(int));
    if (!c->zcount || !c->zowners || !c->hcount || !c->howners || !c->gtotal)
        return NW_ENOMEM;
    for (size_t g = 0; g < s->ngroups; g++) {
        c->zcount[g] = calloc(MAX_ZONES, sizeof(int));
        c->zowners[g] = calloc(MAX_ZONES, sizeof(int));
        if (!c->zcount[g] || !c->zowners[g])
            return NW_ENOMEM;
    }
    if (host_grow(c, c->nen + 64) != NW_OK)
        return NW_ENOMEM;
    for (size_t p = 0; p < s->npods; p++) {
        pstate_t *st = &c->ps[p];
        int *sel = NULL;
        int n = 0;
        for (size_t g = 0; g < s->ngroups; g++) {
            if (!nw_sched_group_selects(&s->groups[g], &s->pods[p]))
                continue;
            int *ns = realloc(sel, (size_t)(n + 1) * sizeof(int));
            if (!ns) {
                free(sel);
                return NW_ENOMEM;
            }
            sel = ns;
            sel[n++] = (int)g;
        }
        st->selgroups = sel;
        st->nsel = n;
    }
    /* bound pods count in their node's domains */
    for (size_t p = 0; p < s->npods; p++) {
        const nw_spod_t *pd = &s->pods[p];
        if (!pd->node_name || pd->finished)
            continue;
        for (int i = 0; i < c->nen; i++)
            if (strcmp(s->nodes[c->en[i].snode].name, pd->node_name) == 0) {
                topo_record(c, (int)p, i, c->en[i].zone);
                break;
            }
    }
    return NW_OK;
}

/* ---- pod requirement variants --------------------------------------------------- */

static variant_t *variant_get(ctx_t *c, int pod)
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
    if (nw_reqs_copy(&v->reqs, &cl->selector) != NW_OK)
        return NULL;
    if (cl->nterms && nw_reqs_add_all(&v->reqs, &cl->terms[st->term]) != NW_OK)
        return NULL;
    if (st->pref < (int)cl->nprefs && nw_reqs_add_all(&v->reqs, &cl->prefs[st->pref]) != NW_OK)
        return NULL;
    (void)tmp;
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
static int variant_pool(ctx_t *c, variant_t *v, const nw_pclass_t *cl, const pctx_t *pc)
{
    int pi = pc->idx;
    if (v->status[pi])
        return v->status[pi];
    nw_reqs_conflict_t cf;
    char buf[1200];
    if (!nw_reqs_compatible(&pc->p->reqs, &v->reqs, FLAG_ALLOW, &cf)) {
        snprintf(buf, sizeof buf, "incompatible requirements, %s", cf.msg);
        v->reason[pi] = strdup(buf);
        return v->status[pi] = 2;
    }
    if (nw_reqs_intersect(&pc->p->reqs, &v->reqs, &v->merged[pi]) != NW_OK)
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
        if (!nw_reqs_intersects(&it->reqs, &v->merged[pi], NULL))
            continue;
        any_compatible = true;
        if (!type_allows_offering(it, &v->merged[pi], pc->ct_allowed, zm, c))
            continue;
        b[t >> 6] |= 1ULL << (t & 63);
    }
    if (!bits_any(b, c->nw)) {
        char rq[900];
        nw_reqs_format(&v->merged[pi], rq, sizeof rq);
        snprintf(buf, sizeof buf, "no instance type satisfied requirements%s %s",
                 any_compatible ? " with an available offering," : ",", rq);
        v->reason[pi] = strdup(buf);
        nw_reqs_cleanup(&v->merged[pi]);
        return v->status[pi] = 3;
    }
    return v->status[pi] = 1;
}

/* ---- topology ------------------------------------------------------------------ */

static bool tc_active(const ctx_t *c, int pod, int i)
{
    return !(c->ps[pod].tc_off >> i & 1);
}

static bool selects_self(const ctx_t *c, int pod, int g)
{
    const pstate_t *st = &c->ps[pod];
    for (int i = 0; i < st->nsel; i++)
        if (st->selgroups[i] == g)
            return true;
    return false;
}

/* Which zones (subset of zin) and whether the host slot (-1 = a brand-new node) are
 * allowed for pod. Returns the allowed zone mask; *host_ok false rejects. *zone_pinned
 * says a zone must be chosen (the pod has zone constraints). why (nullable) names the
 * first constraint that failed. */
static uint64_t topo_allowed(const ctx_t *c, int pod, int host, uint64_t zin, uint64_t pod_zones,
                             bool *host_ok, bool *zone_pinned, const char **why)
{
    const nw_spod_t *p = &c->s->pods[pod];
    const pstate_t *st = &c->ps[pod];
    uint64_t m = zin;
    *host_ok = true;
    *zone_pinned = false;
    int pick_spread = -1;
    for (int i = 0; i < p->ntcs && *host_ok && m; i++) {
        if (!tc_active(c, pod, i))
            continue;
        int g = p->tcs[i].group;
        const nw_tgroup_t *gr = &c->s->groups[g];
        bool self = selects_self(c, pod, g);
        if (gr->key == NW_SCHED_HOSTNAME) {
            int cnt = host >= 0 ? c->hcount[g][host] : 0;
            switch (gr->kind) {
            case NW_TG_SPREAD:
                if (cnt + (self ? 1 : 0) > gr->max_skew) {
                    *host_ok = false;
                    if (why)
                        *why = "topology spread (kubernetes.io/hostname)";
                }
                break;
            case NW_TG_AFFINITY:
                if (c->gtotal[g] > 0 ? cnt == 0 : !self) {
                    *host_ok = false;
                    if (why)
                        *why = "pod affinity (kubernetes.io/hostname)";
                }
                break;
            case NW_TG_ANTI:
                if (cnt > 0) {
                    *host_ok = false;
                    if (why)
                        *why = "pod anti-affinity (kubernetes.io/hostname)";
                }
                break;
            }
            continue;
        }
        *zone_pinned = true;
        const int *zc = c->zcount[g];
        switch (gr->kind) {
        case NW_TG_SPREAD: {
            int64_t mn = INT64_MAX;
            int elig = 0;
            for (int z = 0; z < c->nz; z++)
                if (pod_zones >> z & 1) {
                    elig++;
                    if (zc[z] < mn)
                        mn = zc[z];
                }
            if (elig < gr->min_domains || mn == INT64_MAX)
                mn = 0;
            uint64_t ok = 0;
            for (int z = 0; z < c->nz; z++)
                if ((m >> z & 1) && zc[z] + (self ? 1 : 0) - mn <= gr->max_skew)
                    ok |= 1ULL << z;
            m = ok;
            if (!m && why)
                *why = "topology spread (topology.kubernetes.io/zone)";
            pick_spread = g;
            break;
        }
        case NW_TG_AFFINITY:
            if (c->gtotal[g] > 0) {
                uint64_t ok = 0;
                for (int z = 0; z < c->nz; z++)
                    if (zc[z] > 0)
                        ok |= 1ULL << z;
                m &= ok;
            } else if (!self) {
                m = 0;
            }
            if (!m && why)
                *why = "pod affinity (topology.kubernetes.io/zone)";
            break;
        case NW_TG_ANTI: {
            uint64_t ok = 0;
            for (int z = 0; z < c->nz; z++)
                if (zc[z] == 0)
                    ok |= 1ULL << z;
            m &= ok;
            if (!m && why)
                *why = "pod anti-affinity (topology.kubernetes.io/zone)";
            break;
        }
        }
    }
    /* inverse anti-affinity: pods whose required anti-affinity selects this one */
    for (int i = 0; i < st->nsel && *host_ok && m; i++) {
        int g = st->selgroups[i];
        const nw_tgroup_t *gr = &c->s->groups[g];
        if (gr->kind != NW_TG_ANTI)
            continue;
        if (gr->key == NW_SCHED_HOSTNAME) {
            if (host >= 0 && c->howners[g][host] > 0) {
                *host_ok = false;
                if (why)
                    *why = "another pod's anti-affinity (kubernetes.io/hostname)";
            }
        } else {
            uint64_t ok = 0;
            for (int z = 0; z < c->nz; z++)
                if (c->zowners[g][z] == 0)
                    ok |= 1ULL << z;
            if ((m & ok) != m)
                *zone_pinned = true;
            m &= ok;
            if (!m && why)
                *why = "another pod's anti-affinity (topology.kubernetes.io/zone)";
        }
    }
    if (!*host_ok)
        return 0;
    if (*zone_pinned && m) {
        /* choose one zone: the least used for spread, else the first */
        int best = -1;
        for (int z = 0; z < c->nz; z++) {
            if (!(m >> z & 1))
                continue;
            if (best < 0 ||
                (pick_spread >= 0 && c->zcount[pick_spread][z] < c->zcount[pick_spread][best]))
                best = z;
        }
        m = 1ULL << best;
    }
    return m;
}

/* ---- claims ------------------------------------------------------------------------ */

static void claim_stats(ctx_t *c, claim_t *cl, const pctx_t *pc)
{
    for (int k = 0; k < 3; k++)
        cl->maxfree[k] = INT64_MIN;
    memset(&cl->reserved, 0, sizeof cl->reserved);
    cl->minprice = 1e300;
    FOR_BITS(cl->bits, c->nw, t)
    {
        if (pc->price[t] < cl->minprice)
            cl->minprice = pc->price[t];
        for (int k = 0; k < 3; k++) {
            int64_t f = pc->avail[t].v[k] - cl->used.v[k];
            if (f > cl->maxfree[k])
                cl->maxfree[k] = f;
        }
        const nw_sched_res_t *cap = &c->s->itypes[t].t.capacity;
        for (int k = 0; k < c->nres; k++)
            if (pc->p->has_limits[k] && cap->v[k] > cl->reserved.v[k])
                cl->reserved.v[k] = cap->v[k];
    }
}

/* narrow `out` (a copy of `in`) to types that hold `need` */
static bool filter_fit(const ctx_t *c, const pctx_t *pc, const word_t *in, word_t *out,
                       const nw_sched_res_t *need)
{
    bool any = false;
    for (int w = 0; w < c->nw; w++) {
        word_t keep = 0;
        for (word_t x = in[w]; x; x &= x - 1) {
            int t = w * 64 + __builtin_ctzll(x);
            if (fits(need, &pc->avail[t], c->nres))
                keep |= 1ULL << (t & 63);
        }
        out[w] = keep;
        any |= keep != 0;
    }
    return any;
}

static double bits_minprice(const ctx_t *c, const pctx_t *pc, const word_t *b)
{
    double m = 1e300;
    FOR_BITS(b, c->nw, t)
    {
        if (pc->price[t] < m)
            m = pc->price[t];
    }
    return m;
}

static bool min_values_ok(const ctx_t *c, const nw_reqs_t *r, const word_t *bits)
{
    for (size_t i = 0; i < r->n; i++) {
        const nw_req_t *q = &r->v[i];
        if (q->min_values <= 0)
            continue;
        const char *seen[256];
        int n = 0;
        FOR_BITS(bits, c->nw, t)
        {
            const char *v = nw_labels_get(&c->s->itypes[t].t.labels, q->key);
            if (!v || !nw_req_has(q, v))
                continue;
            bool dup = false;
            for (int k = 0; k < n && !dup; k++)
                dup = strcmp(seen[k], v) == 0;
            if (!dup && n < 256)
                seen[n++] = v;
        }
        if (n < q->min_values)
            return false;
    }
    return true;
}

static bool tolerates(const ctx_t *c, int pod, const nw_taints_t *taints, bool ignore_ephemeral,
                      const nw_taints_t *startup, const nw_taint_t **bad)
{
    const nw_pclass_t *cl = &c->s->classes[c->s->pods[pod].cls];
    for (size_t i = 0; i < taints->n; i++) {
        const nw_taint_t *t = &taints->v[i];
        if (c->ps[pod].tol_prefer && t->effect == NW_TAINT_PREFER_NO_SCHEDULE)
            continue;
        if (ignore_ephemeral && nw_taint_is_known_ephemeral(t))
            continue;
        bool is_startup = false;
        for (size_t k = 0; startup && k < startup->n && !is_startup; k++)
            is_startup = strcmp(startup->v[k].key, t->key) == 0 &&
                         startup->v[k].effect == t->effect;
        if (is_startup)
            continue;
        if (!nw_tolerations_tolerate(&cl->tols, t)) {
            if (bad)
                *bad = t;
            return false;
        }
    }
    return true;
}

static nw_rc_t claim_add_pod(claim_t *cl, int pod)
{
    if (cl->npods == cl->cpods) {
        int n = cl->cpods ? cl->cpods * 2 : 8;
        int *p = realloc(cl->pods, (size_t)n * sizeof(int));
        if (!p)
            return NW_ENOMEM;
        cl->pods = p;
        cl->cpods = n;
    }
    cl->pods[cl->npods++] = pod;
    return NW_OK;
}

static nw_rc_t pin_zone(ctx_t *c, claim_t *cl, uint64_t m)
{
    if (m == cl->zmask)
        return NW_OK;
    const char *vals[MAX_ZONES];
    size_t n = 0;
    for (int z = 0; z < c->nz; z++)
        if (m >> z & 1)
            vals[n++] = c->zones[z];
    cl->zmask = m;
    return nw_reqs_add(&cl->reqs, NW_LABEL_ZONE, NW_REQ_IN, vals, n, 0, NULL);
}

static int single_zone(uint64_t m)
{
    return (m && !(m & (m - 1))) ? __builtin_ctzll(m) : -1;
}

/* claims stay ordered by (pod count, creation) ascending */
static void corder_bump(ctx_t *c, int pos)
{
    while (pos + 1 < c->nclaims) {
        claim_t *a = &c->claims[c->corder[pos]], *b = &c->claims[c->corder[pos + 1]];
        if (a->npods < b->npods || (a->npods == b->npods && a->idx < b->idx))
            break;
        int t = c->corder[pos];
        c->corder[pos] = c->corder[pos + 1];
        c->corder[pos + 1] = t;
        pos++;
    }
}

static int try_claims(ctx_t *c, int pod, variant_t *v, nw_rc_t *rc)
{
    const nw_spod_t *p = &c->s->pods[pod];
    const nw_pclass_t *cls = &c->s->classes[p->cls];
    double *alone = c->alone;
    for (size_t i = 0; i < c->s->npools; i++)
        alone[i] = -1;
    for (int oi = 0; oi < c->nclaims; oi++) {
        claim_t *cl = &c->claims[c->corder[oi]];
        if (p->req.v[0] > cl->maxfree[0] || p->req.v[1] > cl->maxfree[1] ||
            p->req.v[2] > cl->maxfree[2])
            continue;
        const pctx_t *pc = NULL;
        for (int i = 0; i < c->npools; i++)
            if (c->pools[i].idx == cl->pool)
                pc = &c->pools[i];
        if (variant_pool(c, v, cls, pc) != 1)
            continue;
        if (!tolerates(c, pod, &pc->p->taints, false, NULL, NULL))
            continue;
        if (v->reqs.n && !nw_reqs_compatible(&cl->reqs, &v->reqs, FLAG_ALLOW, NULL))
            continue;
        bool host_ok, pinned;
        uint64_t zm = topo_allowed(c, pod, c->nen + cl->idx, cl->zmask & v->zmask[pc->idx],
                                   v->zmask[pc->idx], &host_ok, &pinned, NULL);
        if (!host_ok || (pinned && !zm))
            continue;
        word_t *nb = c->scratch;
        const word_t *vb = &v->bits[(size_t)pc->idx * (size_t)c->nw];
        for (int w = 0; w < c->nw; w++)
            nb[w] = cl->bits[w] & vb[w];
        uint64_t newz = pinned ? zm : cl->zmask & v->zmask[pc->idx];
        if (newz != cl->zmask) {
            int z = single_zone(newz);
            if (z >= 0)
                for (int w = 0; w < c->nw; w++)
                    nb[w] &= pc->zbits[z][w];
        }
        nw_sched_res_t need = cl->used;
        for (int k = 0; k < c->nres; k++)
            need.v[k] += p->req.v[k];
        if (!filter_fit(c, pc, nb, c->scratch2, &need))
            continue;
        if (pc->p->has_min_values && !min_values_ok(c, &cl->reqs, c->scratch2))
            continue;
        /* an accelerator pod joins only if that costs no more than a node of its own
         * (the pool's types that hold it alone): keeps 1-GPU pods off 8-GPU machines,
         * whose price is mostly GPUs the pods do not use. Other pods pack as Karpenter
         * packs them (fewer, larger nodes). */
        double grown = cls->wants_accel ? bits_minprice(c, pc, c->scratch2) : 0;
        if (cls->wants_accel && grown > cl->minprice + 1e-9) {
            if (alone[pc->idx] < 0) {
                const word_t *vb0 = &v->bits[(size_t)pc->idx * (size_t)c->nw];
                alone[pc->idx] = 1e300;
                FOR_BITS(vb0, c->nw, t)
                {
                    if (pc->price[t] < alone[pc->idx] && fits(&p->req, &pc->avail[t], c->nres))
                        alone[pc->idx] = pc->price[t];
                }
            }
            if (grown - cl->minprice > alone[pc->idx] + 1e-9)
                continue;
        }
        /* commit */
        if (v->reqs.n && (*rc = nw_reqs_add_all(&cl->reqs, &v->reqs)) != NW_OK)
            return -1;
        if (newz != cl->zmask && (*rc = pin_zone(c, cl, newz)) != NW_OK)
            return -1;
        memcpy(cl->bits, c->scratch2, (size_t)c->nw * sizeof(word_t));
        cl->used = need;
        /* limits: the claim's reservation can only shrink */
        pctx_t *pcm = (pctx_t *)pc;
        nw_sched_res_t old = cl->reserved;
        claim_stats(c, cl, pc);
        for (int k = 0; k < c->nres; k++)
            if (pc->p->has_limits[k])
                pcm->remaining[k] += old.v[k] - cl->reserved.v[k];
        if ((*rc = claim_add_pod(cl, pod)) != NW_OK)
            return -1;
        topo_record(c, pod, c->nen + cl->idx, single_zone(cl->zmask));
        corder_bump(c, oi);
        return 1;
    }
    return 0;
}

static int try_existing(ctx_t *c, int pod, variant_t *v)
{
    const nw_spod_t *p = &c->s->pods[pod];
    for (int i = 0; i < c->nen; i++) {
        enode_t *e = &c->en[i];
        if (!fits(&p->req, &e->free, c->nres))
            continue;
        const nw_snode_t *n = &c->s->nodes[e->snode];
        if (!tolerates(c, pod, &n->taints, !n->initialized && n->pool, &n->startup_taints, NULL))
            continue;
        if (v->reqs.n && !nw_reqs_compatible(&n->reqs, &v->reqs, FLAG_ALLOW, NULL))
            continue;
        bool host_ok, pinned;
        uint64_t zin = e->zone >= 0 ? 1ULL << e->zone : 0;
        uint64_t zm = topo_allowed(c, pod, i, zin, zin ? zin : ~0ULL, &host_ok, &pinned, NULL);
        if (!host_ok || (pinned && !zm))
            continue;
        for (int k = 0; k < c->nres; k++)
            e->free.v[k] -= p->req.v[k];
        topo_record(c, pod, i, e->zone);
        return i;
    }
    return -1;
}

static int try_new(ctx_t *c, int pod, variant_t *v, nw_rc_t *rc)
{
    const nw_spod_t *p = &c->s->pods[pod];
    const nw_pclass_t *cls = &c->s->classes[p->cls];
    for (int pi = 0; pi < c->npools; pi++) {
        pctx_t *pc = &c->pools[pi];
        if (pc->nodes_left <= 0)
            continue;
        if (!tolerates(c, pod, &pc->p->taints, false, NULL, NULL))
            continue;
        if (variant_pool(c, v, cls, pc) != 1)
            continue;
        bool host_ok, pinned;
        uint64_t zm = topo_allowed(c, pod, -1, v->zmask[pc->idx], v->zmask[pc->idx], &host_ok,
                                   &pinned, NULL);
        if (!host_ok || !zm)
            continue;
        word_t *nb = c->scratch;
        const word_t *vb = &v->bits[(size_t)pc->idx * (size_t)c->nw];
        memcpy(nb, vb, (size_t)c->nw * sizeof(word_t));
        int z = pinned ? single_zone(zm) : -1;
        if (z >= 0)
            for (int w = 0; w < c->nw; w++)
                nb[w] &= pc->zbits[z][w];
        /* types within the pool's remaining limits */
        for (int w = 0; w < c->nw; w++)
            for (word_t x = nb[w]; x; x &= x - 1) {
                int t = w * 64 + __builtin_ctzll(x);
                const nw_sched_res_t *cap = &c->s->itypes[t].t.capacity;
                for (int k = 0; k < c->nres; k++)
                    if (pc->p->has_limits[k] && cap->v[k] > pc->remaining[k]) {
                        nb[w] &= ~(1ULL << (t & 63));
                        break;
                    }
            }
        if (!filter_fit(c, pc, nb, c->scratch2, &p->req))
            continue;
        if (pc->p->has_min_values && !min_values_ok(c, &v->merged[pc->idx], c->scratch2))
            continue;
        if (c->nclaims == c->cclaims) {
            int n = c->cclaims ? c->cclaims * 2 : 16;
            claim_t *nc = realloc(c->claims, (size_t)n * sizeof *nc);
            int *no = realloc(c->corder, (size_t)n * sizeof(int));
            if (nc)
                c->claims = nc;
            if (no)
                c->corder = no;
            if (!nc || !no) {
                *rc = NW_ENOMEM;
                return -1;
            }
            c->cclaims = n;
        }
        if ((*rc = host_grow(c, c->nen + c->nclaims + 1)) != NW_OK)
            return -1;
        claim_t *cl = &c->claims[c->nclaims];
        memset(cl, 0, sizeof *cl);
        cl->pool = pc->idx;
        cl->idx = c->nclaims;
        cl->bits = calloc((size_t)c->nw, sizeof(word_t));
        if (!cl->bits || nw_reqs_copy(&cl->reqs, &v->merged[pc->idx]) != NW_OK) {
            free(cl->bits);
            nw_reqs_cleanup(&cl->reqs);
            *rc = NW_ENOMEM;
            return -1;
        }
        c->nclaims++;
        memcpy(cl->bits, c->scratch2, (size_t)c->nw * sizeof(word_t));
        cl->used = p->req;
        cl->zmask = v->zmask[pc->idx];
        if (pinned && (*rc = pin_zone(c, cl, zm)) != NW_OK)
            return -1;
        claim_stats(c, cl, pc);
        for (int k = 0; k < c->nres; k++)
            if (pc->p->has_limits[k])
                pc->remaining[k] -= cl->reserved.v[k];
        if (pc->p->has_node_limit)
            pc->nodes_left--;
        if ((*rc = claim_add_pod(cl, pod)) != NW_OK)
            return -1;
        /* insert keeping (count, creation) order: it has 1 pod and the newest index */
        int pos = c->nclaims - 1;
        c->corder[pos] = cl->idx;
        while (pos > 0 && c->claims[c->corder[pos - 1]].npods > 1) {
            c->corder[pos] = c->corder[pos - 1];
            c->corder[pos - 1] = cl->idx;
            pos--;
        }
        topo_record(c, pod, c->nen + cl->idx, single_zone(cl->zmask));
        return 1;
    }
    return 0;
}

/* one relaxation step (§1.4); false when nothing is left */
static bool relax(ctx_t *c, int pod)
{
    const nw_spod_t *p = &c->s->pods[pod];
    const nw_pclass_t *cl = &c->s->classes[p->cls];
    pstate_t *st = &c->ps[pod];
    if (cl->nterms > 1 && st->term + 1 < (int)cl->nterms) {
        st->term++;
        return true;
    }
    for (int kind = NW_TG_AFFINITY; kind <= NW_TG_ANTI; kind++) {
        int best = -1;
        for (int i = 0; i < p->ntcs; i++) {
            const nw_tgroup_t *g = &c->s->groups[p->tcs[i].group];
            if ((int)g->kind == kind && p->tcs[i].preferred && tc_active(c, pod, i) &&
                (best < 0 || p->tcs[i].weight > p->tcs[best].weight))
                best = i;
        }
        if (best >= 0) {
            st->tc_off |= 1ULL << best;
            return true;
        }
    }
    if (st->pref < (int)cl->nprefs) {
        st->pref++;
        return true;
    }
    for (int i = 0; i < p->ntcs; i++)
        if (c->s->groups[p->tcs[i].group].kind == NW_TG_SPREAD && p->tcs[i].preferred &&
            tc_active(c, pod, i)) {
            st->tc_off |= 1ULL << i;
            return true;
        }
    if (!st->tol_prefer && c->any_prefer_taint) {
        st->tol_prefer = true;
        return true;
    }
    return false;
}

/* ---- reasons ------------------------------------------------------------------------ */

static char *res_str(const nw_sched_snap_t *s, const nw_sched_res_t *r)
{
    cJSON *j = nw_sched_res_to_json(s, r);
    char *out = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return out;
}

static char *pool_reason(ctx_t *c, int pod, const pctx_t *pc)
{
    const nw_spod_t *p = &c->s->pods[pod];
    const nw_pclass_t *cls = &c->s->classes[p->cls];
    char buf[1600];
    const nw_taint_t *bad = NULL;
    if (!tolerates(c, pod, &pc->p->taints, false, NULL, &bad)) {
        nw_taint_untolerated_msg(bad, buf, sizeof buf);
        return strdup(buf);
    }
    variant_t *v = variant_get(c, pod);
    if (!v)
        return NULL;
    if (variant_pool(c, v, cls, pc) != 1)
        return strdup(v->reason[pc->idx]);
    const word_t *vb = &v->bits[(size_t)pc->idx * (size_t)c->nw];
    if (!filter_fit(c, pc, vb, c->scratch2, &p->req)) {
        char *rs = res_str(c->s, &p->req);
        char rq[900];
        nw_reqs_format(&v->merged[pc->idx], rq, sizeof rq);
        snprintf(buf, sizeof buf,
                 "no instance type satisfied resources %s and requirements %s (daemonset overhead "
                 "included)",
                 rs ? rs : "{}", rq);
        free(rs);
        return strdup(buf);
    }
    if (pc->nodes_left <= 0) {
        snprintf(buf, sizeof buf, "node limit reached for nodepool \"%s\"", pc->p->name);
        return strdup(buf);
    }
    bool within = false;
    FOR_BITS(c->scratch2, c->nw, t)
    {
        const nw_sched_res_t *cap = &c->s->itypes[t].t.capacity;
        bool ok = true;
        for (int k = 0; k < c->nres && ok; k++)
            ok = !(pc->p->has_limits[k] && cap->v[k] > pc->remaining[k]);
        within |= ok;
    }
    if (!within) {
        snprintf(buf, sizeof buf, "all available instance types exceed limits for nodepool: \"%s\"",
                 pc->p->name);
        return strdup(buf);
    }
    if (pc->p->has_min_values && !min_values_ok(c, &v->merged[pc->idx], c->scratch2)) {
        snprintf(buf, sizeof buf, "NodePool couldn't meet minValues");
        return strdup(buf);
    }
    bool host_ok, pinned;
    const char *why = NULL;
    uint64_t zm = topo_allowed(c, pod, -1, v->zmask[pc->idx], v->zmask[pc->idx], &host_ok,
                               &pinned, &why);
    if (!host_ok || !zm) {
        snprintf(buf, sizeof buf, "would violate %s", why ? why : "topology constraints");
        return strdup(buf);
    }
    return strdup("could not be placed with the other pods of this batch");
}

/* ---- rebalance: re-pack groups of interchangeable claims (opts.repack) ----------- */
/*
 * The placement above is Karpenter's: each claim takes pods until only the largest
 * types still hold them, then launches the cheapest of those. With pods of one shape
 * that ends on the biggest type whatever its balance (18 pods of 3.5 CPU / 28 Gi fill
 * a 128-vCPU / 512-GiB type at half its CPU). Afterwards, claims that are
 * interchangeable — same pool, same accumulated requirements, same zones, no
 * hostname-level topology on or against their pods, no accelerator pods, a pool
 * without limits or minValues — are pooled and re-packed (first-fit decreasing) onto
 * the one type that costs least for them, each resulting claim then keeping every
 * type that holds its own pods (so finalize right-sizes the last ones). The re-pack
 * is kept only when it is cheaper than the claims it replaces.
 */
#define REBALANCE_CANDIDATES 12

static bool req_equal(const nw_req_t *a, const nw_req_t *b)
{
    if (strcmp(a->key, b->key) != 0 || a->complement != b->complement ||
        a->nvalues != b->nvalues || a->has_gte != b->has_gte || a->has_lte != b->has_lte ||
        (a->has_gte && a->gte != b->gte) || (a->has_lte && a->lte != b->lte) ||
        a->min_values != b->min_values)
        return false;
    for (size_t i = 0; i < a->nvalues; i++)
        if (strcmp(a->values[i], b->values[i]) != 0)
            return false;
    return true;
}

static bool reqs_equal(const nw_reqs_t *a, const nw_reqs_t *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (!req_equal(&a->v[i], &b->v[i]))
            return false;
    return true;
}

static const pctx_t *pool_ctx(const ctx_t *c, int idx)
{
    for (int i = 0; i < c->npools; i++)
        if (c->pools[i].idx == idx)
            return &c->pools[i];
    return NULL;
}

static bool claim_movable(ctx_t *c, const claim_t *cl)
{
    const pctx_t *pc = pool_ctx(c, cl->pool);
    if (!pc || pc->p->has_min_values || pc->p->has_node_limit || cl->npods == 0)
        return false;
    for (int k = 0; k < c->nres; k++)
        if (pc->p->has_limits[k])
            return false;
    for (int i = 0; i < cl->npods; i++) {
        int pod = cl->pods[i];
        const nw_spod_t *p = &c->s->pods[pod];
        if (c->s->classes[p->cls].wants_accel)
            return false;
        for (int k = 0; k < p->ntcs; k++)
            if (c->s->groups[p->tcs[k].group].key == NW_SCHED_HOSTNAME)
                return false;
        const pstate_t *st = &c->ps[pod];
        for (int k = 0; k < st->nsel; k++)
            if (c->s->groups[st->selgroups[k]].key == NW_SCHED_HOSTNAME)
                return false;
    }
    return true;
}

typedef struct {
    int t;
    double bound;
    int64_t cpu;
} cand_t;

/* by bound; within 1 % the larger type first (fewer nodes for the same money) */
static int cmp_cand(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    double lo = x->bound < y->bound ? x->bound : y->bound;
    if (x->bound > y->bound + lo * 0.01 || y->bound > x->bound + lo * 0.01)
        return x->bound < y->bound ? -1 : 1;
    if (x->cpu != y->cpu)
        return x->cpu > y->cpu ? -1 : 1;
    return x->t - y->t;
}

typedef struct {
    int pod;
    double key;
} pkey_t;

static int cmp_pkey(const void *a, const void *b)
{
    const pkey_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->pod - y->pod;
}

/* The cheapest type of bits that holds need (price), 1e300 if none. */
static double cheapest_fit(const ctx_t *c, const pctx_t *pc, const word_t *bits,
                           const nw_sched_res_t *need)
{
    double m = 1e300;
    FOR_BITS(bits, c->nw, t)
    {
        if (pc->price[t] < m && fits(need, &pc->avail[t], c->nres))
            m = pc->price[t];
    }
    return m;
}

/* First-fit decreasing of pods onto bins of type t: bin index per pod in bin_of,
 * the bins' usage in used; returns the bin count (-1 when a pod does not fit t). */
static int ffd(const ctx_t *c, const pctx_t *pc, int t, pkey_t *order, int n,
               nw_sched_res_t *used, int *bin_of)
{
    const nw_sched_res_t *av = &pc->avail[t];
    for (int i = 0; i < n; i++) {
        const nw_sched_res_t *r = &c->s->pods[order[i].pod].req;
        double key = 0;
        for (int k = 0; k < c->nres; k++) {
            if (r->v[k] > av->v[k])
                return -1;
            if (av->v[k] > 0) {
                double f = (double)r->v[k] / (double)av->v[k];
                if (f > key)
                    key = f;
            }
        }
        order[i].key = key;
    }
    qsort(order, (size_t)n, sizeof *order, cmp_pkey);
    int nb = 0;
    for (int i = 0; i < n; i++) {
        const nw_sched_res_t *r = &c->s->pods[order[i].pod].req;
        int b = 0;
        for (; b < nb; b++) {
            bool ok = true;
            for (int k = 0; k < c->nres && ok; k++)
                ok = used[b].v[k] + r->v[k] <= av->v[k];
            if (ok)
                break;
        }
        if (b == nb) {
            memset(&used[nb], 0, sizeof used[nb]);
            nb++;
        }
        for (int k = 0; k < c->nres; k++)
            used[b].v[k] += r->v[k];
        bin_of[i] = b;
    }
    return nb;
}

static nw_rc_t claim_slot(ctx_t *c, int *idx)
{
    if (c->nclaims == c->cclaims) {
        int n = c->cclaims ? c->cclaims * 2 : 16;
        claim_t *nc = realloc(c->claims, (size_t)n * sizeof *nc);
        if (!nc)
            return NW_ENOMEM;
        c->claims = nc;
        int *no = realloc(c->corder, (size_t)n * sizeof(int));
        if (!no)
            return NW_ENOMEM;
        c->corder = no;
        c->cclaims = n;
    }
    claim_t *cl = &c->claims[c->nclaims];
    memset(cl, 0, sizeof *cl);
    cl->idx = c->nclaims;
    *idx = c->nclaims++;
    return NW_OK;
}

static nw_rc_t rebalance_group(ctx_t *c, const int *members, int nm)
{
    claim_t *first = &c->claims[members[0]];
    const pctx_t *pc = pool_ctx(c, first->pool);
    int npods = 0;
    double current = 0;
    for (int i = 0; i < nm; i++) {
        npods += c->claims[members[i]].npods;
        current += c->claims[members[i]].minprice;
    }
    word_t *compat = calloc((size_t)c->nw, sizeof(word_t));
    pkey_t *order = calloc((size_t)npods, sizeof *order);
    pkey_t *best_order = calloc((size_t)npods, sizeof *best_order);
    int *bin_of = calloc((size_t)npods, sizeof(int)), *best_bin = calloc((size_t)npods, sizeof(int));
    nw_sched_res_t *used = calloc((size_t)npods, sizeof *used);
    nw_sched_res_t *best_used = calloc((size_t)npods, sizeof *best_used);
    cand_t *cands = calloc((size_t)c->nt + 1, sizeof *cands);
    nw_rc_t rc = NW_ENOMEM;
    if (!compat || !order || !best_order || !bin_of || !best_bin || !used || !best_used || !cands)
        goto out;
    /* types every pod's requirements allow (and the pinned zone offers) */
    memcpy(compat, pc->types, (size_t)c->nw * sizeof(word_t));
    int z = single_zone(first->zmask);
    if (z >= 0)
        for (int w = 0; w < c->nw; w++)
            compat[w] &= pc->zbits[z][w];
    nw_sched_res_t total;
    memset(&total, 0, sizeof total);
    int n = 0;
    for (int i = 0; i < nm; i++) {
        const claim_t *cl = &c->claims[members[i]];
        for (int k = 0; k < cl->npods; k++) {
            int pod = cl->pods[k];
            variant_t *v = variant_get(c, pod);
            if (!v)
                goto out;
            const word_t *vb = &v->bits[(size_t)pc->idx * (size_t)c->nw];
            for (int w = 0; w < c->nw; w++)
                compat[w] &= vb[w];
            for (int r = 0; r < c->nres; r++)
                total.v[r] += c->s->pods[pod].req.v[r];
            order[n++].pod = pod;
        }
    }
    /* candidates by their fractional lower bound on this group */
    int nc = 0;
    FOR_BITS(compat, c->nw, t)
    {
        if (pc->price[t] >= 1e300)
            continue;
        double frac = 0;
        for (int r = 0; r < c->nres; r++) {
            if (total.v[r] <= 0)
                continue;
            if (pc->avail[t].v[r] <= 0) {
                frac = -1;
                break;
            }
            double f = (double)total.v[r] / (double)pc->avail[t].v[r];
            if (f > frac)
                frac = f;
        }
        if (frac < 0)
            continue;
        cands[nc].t = t;
        cands[nc].bound = pc->price[t] * frac;
        cands[nc].cpu = pc->avail[t].v[NW_SR_CPU];
        nc++;
    }
    qsort(cands, (size_t)nc, sizeof *cands, cmp_cand);
    /* worth it only when at least 1 % cheaper; among re-packs within 1 % of each other
     * the one with fewer nodes */
    double limit = current * 0.99, best = 1e300;
    int best_nb = -1, tried = 0;
    for (int i = 0; i < nc && tried < REBALANCE_CANDIDATES; i++) {
        if (cands[i].bound >= limit || cands[i].bound >= best * 1.01)
            break;
        int nb = ffd(c, pc, cands[i].t, order, n, used, bin_of);
        if (nb < 0)
            continue;
        tried++;
        double cost = 0;
        for (int b = 0; b < nb && cost < limit; b++)
            cost += cheapest_fit(c, pc, compat, &used[b]);
        if (cost >= limit)
            continue;
        bool better = best_nb < 0 || cost < best * 0.99 || (cost <= best * 1.01 && nb < best_nb) ||
                      (nb == best_nb && cost < best);
        if (better) {
            best = cost;
            best_nb = nb;
            memcpy(best_order, order, (size_t)n * sizeof *order);
            memcpy(best_bin, bin_of, (size_t)n * sizeof(int));
            memcpy(best_used, used, (size_t)nb * sizeof *used);
        }
    }
    if (best_nb < 0) {
        rc = NW_OK;
        goto out;
    }
    /* rebuild: the group's claims become best_nb claims (extra slots emptied) */
    int *slots = calloc((size_t)(best_nb > nm ? best_nb : nm), sizeof(int));
    if (!slots)
        goto out;
    for (int i = 0; i < nm; i++)
        slots[i] = members[i];
    for (int b = nm; b < best_nb; b++) {
        if ((rc = claim_slot(c, &slots[b])) != NW_OK) {
            free(slots);
            goto out;
        }
        claim_t *cl = &c->claims[slots[b]];
        first = &c->claims[members[0]]; /* claims may have moved */
        cl->pool = first->pool;
        cl->zmask = first->zmask;
        cl->bits = calloc((size_t)c->nw, sizeof(word_t));
        if (!cl->bits || nw_reqs_copy(&cl->reqs, &first->reqs) != NW_OK) {
            free(slots);
            rc = NW_ENOMEM;
            goto out;
        }
    }
    rc = NW_OK;
    for (int b = 0; b < (best_nb > nm ? best_nb : nm); b++) {
        claim_t *cl = &c->claims[slots[b]];
        cl->npods = 0;
        if (b >= best_nb)
            continue;
        cl->used = best_used[b];
        filter_fit(c, pc, compat, cl->bits, &cl->used);
        for (int i = 0; i < n; i++)
            if (best_bin[i] == b && (rc = claim_add_pod(cl, best_order[i].pod)) != NW_OK)
                break;
        if (rc != NW_OK)
            break;
        claim_stats(c, cl, pc);
    }
    free(slots);
out:
    free(compat);
    free(order);
    free(best_order);
    free(bin_of);
    free(best_bin);
    free(used);
    free(best_used);
    free(cands);
    return rc;
}

static nw_rc_t rebalance(ctx_t *c)
{
    int n0 = c->nclaims;
    if (n0 == 0)
        return NW_OK;
    bool *movable = calloc((size_t)n0, sizeof(bool)), *done = calloc((size_t)n0, sizeof(bool));
    int *members = calloc((size_t)n0, sizeof(int));
    nw_rc_t rc = NW_ENOMEM;
    if (!movable || !done || !members)
        goto out;
    for (int i = 0; i < n0; i++)
        movable[i] = claim_movable(c, &c->claims[i]);
    rc = NW_OK;
    for (int i = 0; i < n0 && rc == NW_OK; i++) {
        if (!movable[i] || done[i])
            continue;
        int nm = 0;
        for (int j = i; j < n0; j++) {
            const claim_t *a = &c->claims[i], *b = &c->claims[j];
            if (!movable[j] || done[j] || a->pool != b->pool || a->zmask != b->zmask ||
                !reqs_equal(&a->reqs, &b->reqs))
                continue;
            done[j] = true;
            members[nm++] = j;
        }
        rc = rebalance_group(c, members, nm);
    }
out:
    free(movable);
    free(done);
    free(members);
    return rc;
}

/* ---- finalize ---------------------------------------------------------------------- */

typedef struct {
    int t;
    double price;
    int offer;
    bool metal;
} rank_t;

static int cmp_rank(const void *a, const void *b)
{
    const rank_t *x = a, *y = b;
    if (x->price != y->price)
        return x->price < y->price ? -1 : 1;
    return x->t - y->t;
}

static nw_rc_t finalize(ctx_t *c, claim_t *cl, nw_sched_claim_t *out)
{
    const nw_sched_snap_t *s = c->s;
    const pctx_t *pc = NULL;
    for (int i = 0; i < c->npools; i++)
        if (c->pools[i].idx == cl->pool)
            pc = &c->pools[i];
    const nw_req_t *cq = nw_reqs_get(&cl->reqs, NW_LABEL_CAPACITY_TYPE);
    bool ct_ok[3];
    for (int k = 0; k < 3; k++)
        ct_ok[k] = pc->ct_allowed[k];
    if (cq) {
        ct_ok[0] &= nw_req_has(cq, "on-demand");
        ct_ok[1] &= nw_req_has(cq, "spot");
        ct_ok[2] &= nw_req_has(cq, "reserved");
    }
    /* Karpenter launches spot whenever the requirements allow it and spot is offered */
    bool use_spot = false;
    if (ct_ok[1]) {
        FOR_BITS(cl->bits, c->nw, t)
        {
            const nw_sched_itype_t *it = &s->itypes[t].t;
            for (int o = 0; o < it->noffer && !use_spot; o++) {
                int z = zone_find(c, it->offerings[o].zone);
                use_spot = it->offerings[o].available &&
                           ct_index(it->offerings[o].capacity_type) == 1 && z >= 0 &&
                           (cl->zmask >> z & 1);
            }
        }
    }
    int n = 0;
    rank_t *rk = calloc((size_t)c->nt + 1, sizeof *rk);
    if (!rk)
        return NW_ENOMEM;
    bool any_plain = false;
    FOR_BITS(cl->bits, c->nw, t)
    {
        const nw_sched_itype_t *it = &s->itypes[t].t;
        rank_t r = {.t = t, .price = 1e300, .offer = -1, .metal = it->metal};
        for (int o = 0; o < it->noffer; o++) {
            const nw_sched_offering_t *of = &it->offerings[o];
            int ci = ct_index(of->capacity_type);
            int z = zone_find(c, of->zone);
            if (!of->available || !ct_ok[ci] || z < 0 || !(cl->zmask >> z & 1))
                continue;
            if (use_spot != (ci == 1))
                continue;
            if (of->price < r.price) {
                r.price = of->price;
                r.offer = o;
            }
        }
        if (r.offer < 0)
            continue;
        any_plain |= !it->metal;
        rk[n++] = r;
    }
    /* exotic filter: metal sizes only when nothing else is left (and no minValues) */
    if (any_plain && !pc->p->has_min_values) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (!rk[i].metal)
                rk[m++] = rk[i];
        n = m;
    }
    qsort(rk, (size_t)n, sizeof *rk, cmp_rank);
    if (n > 600)
        n = 600;
    out->pool = cl->pool;
    out->itypes = malloc((size_t)(n ? n : 1) * sizeof(int));
    if (!out->itypes) {
        free(rk);
        return NW_ENOMEM;
    }
    out->nitypes = n;
    for (int i = 0; i < n; i++)
        out->itypes[i] = rk[i].t;
    out->itype = n ? rk[0].t : -1;
    if (n) {
        const nw_sched_offering_t *of = &s->itypes[rk[0].t].t.offerings[rk[0].offer];
        snprintf(out->zone, sizeof out->zone, "%s", of->zone);
        snprintf(out->capacity_type, sizeof out->capacity_type, "%s", of->capacity_type);
        out->price = of->price;
    }
    /* requests: pods + the smallest DaemonSet overhead over the kept types */
    out->requests = cl->used;
    int best = -1;
    for (int i = 0; i < n; i++) {
        const nw_sched_res_t *o = &pc->ovh[rk[i].t];
        if (best < 0 || o->v[NW_SR_CPU] + o->v[NW_SR_MEMORY] / 1000000000 <
                            pc->ovh[best].v[NW_SR_CPU] + pc->ovh[best].v[NW_SR_MEMORY] / 1000000000)
            best = rk[i].t;
    }
    if (best >= 0)
        for (int k = 0; k < NW_SCHED_NRES; k++)
            out->requests.v[k] += pc->ovh[best].v[k];
    /* requirements: accumulated + instance types kept + capacity types offered */
    nw_reqs_init(&out->reqs);
    nw_rc_t rc = nw_reqs_copy(&out->reqs, &cl->reqs);
    const char **names = malloc((size_t)(n ? n : 1) * sizeof(char *));
    if (rc == NW_OK && names) {
        for (int i = 0; i < n; i++)
            names[i] = s->itypes[rk[i].t].t.name;
        const nw_req_t *old = nw_reqs_get(&cl->reqs, NW_LABEL_INSTANCE_TYPE);
        rc = nw_reqs_add(&out->reqs, NW_LABEL_INSTANCE_TYPE, NW_REQ_IN, names,
                         (size_t)n, old ? old->min_values : 0, NULL);
        const char *cts[2];
        size_t nc = 0;
        if (use_spot)
            cts[nc++] = "spot";
        else if (ct_ok[0])
            cts[nc++] = "on-demand";
        else if (ct_ok[2])
            cts[nc++] = "reserved";
        if (rc == NW_OK && nc)
            rc = nw_reqs_add(&out->reqs, NW_LABEL_CAPACITY_TYPE, NW_REQ_IN, cts, nc, 0,
                             NULL);
    } else if (!names) {
        rc = NW_ENOMEM;
    }
    free(names);
    free(rk);
    out->pods = cl->pods;
    out->npods = cl->npods;
    cl->pods = NULL;
    return rc;
}

/* ---- the loop ---------------------------------------------------------------------- */

static int cmp_pods(const void *a, const void *b, void *arg)
{
    const nw_sched_snap_t *s = arg;
    const nw_spod_t *x = &s->pods[*(const int *)a], *y = &s->pods[*(const int *)b];
    if (x->req.v[NW_SR_CPU] != y->req.v[NW_SR_CPU])
        return x->req.v[NW_SR_CPU] > y->req.v[NW_SR_CPU] ? -1 : 1;
    if (x->req.v[NW_SR_MEMORY] != y->req.v[NW_SR_MEMORY])
        return x->req.v[NW_SR_MEMORY] > y->req.v[NW_SR_MEMORY] ? -1 : 1;
    if (x->created != y->created)
        return x->created < y->created ? -1 : 1;
    return strcmp(x->uid, y->uid);
}

static void ctx_free(ctx_t *c)
{
    const nw_sched_snap_t *s = c->s;
    for (int i = 0; i < c->npools; i++) {
        pctx_t *p = &c->pools[i];
        free(p->types);
        free(p->avail);
        free(p->ovh);
        free(p->price);
        for (int z = 0; p->zbits && z < c->nz; z++)
            free(p->zbits[z]);
        free(p->zbits);
    }
    free(c->pools);
    for (size_t k = 0; c->vc && k < s->nclasses; k++) {
        for (int i = 0; i < c->vc[k].nv; i++) {
            variant_t *v = &c->vc[k].v[i];
            if (!v->built && !v->status)
                continue;
            nw_reqs_cleanup(&v->reqs);
            for (size_t p = 0; p < s->npools; p++) {
                if (v->reason)
                    free(v->reason[p]);
                if (v->merged && v->status && v->status[p] == 1)
                    nw_reqs_cleanup(&v->merged[p]);
            }
            free(v->status);
            free(v->reason);
            free(v->merged);
            free(v->bits);
            free(v->zmask);
        }
        free(c->vc[k].v);
    }
    free(c->vc);
    for (size_t p = 0; c->ps && p < s->npods; p++)
        free(c->ps[p].selgroups);
    free(c->ps);
    free(c->en);
    for (int i = 0; i < c->nclaims; i++) {
        free(c->claims[i].bits);
        free(c->claims[i].pods);
        nw_reqs_cleanup(&c->claims[i].reqs);
    }
    free(c->claims);
    free(c->corder);
    for (size_t g = 0; g < s->ngroups; g++) {
        if (c->zcount)
            free(c->zcount[g]);
        if (c->zowners)
            free(c->zowners[g]);
        if (c->hcount)
            free(c->hcount[g]);
        if (c->howners)
            free(c->howners[g]);
    }
    free(c->zcount);
    free(c->zowners);
    free(c->hcount);
    free(c->howners);
    free(c->gtotal);
    free(c->scratch);
    free(c->scratch2);
    free(c->alone);
}

void nw_sched_results_free(nw_sched_results_t *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nclaims; i++) {
        free(r->claims[i].itypes);
        free(r->claims[i].pods);
        nw_reqs_cleanup(&r->claims[i].reqs);
    }
    free(r->claims);
    free(r->placed);
    for (int i = 0; i < r->nunsched; i++) {
        for (int k = 0; k < r->unsched[i].nreasons; k++)
            free(r->unsched[i].reasons[k]);
        free(r->unsched[i].reasons);
        free(r->unsched[i].reason);
    }
    free(r->unsched);
    memset(r, 0, sizeof *r);
}

static nw_rc_t add_unsched(ctx_t *c, nw_sched_results_t *r, int pod, const char *single)
{
    nw_sched_unsched_t *u = &r->unsched[r->nunsched++];
    u->pod = pod;
    if (single || c->npools == 0) {
        u->reason = strdup(single ? single : "no NodePool is ready");
        return u->reason ? NW_OK : NW_ENOMEM;
    }
    u->nreasons = (int)c->s->npools;
    u->reasons = calloc(c->s->npools, sizeof(char *));
    if (!u->reasons)
        return NW_ENOMEM;
    for (int i = 0; i < c->npools; i++) {
        u->reasons[c->pools[i].idx] = pool_reason(c, pod, &c->pools[i]);
        if (!u->reasons[c->pools[i].idx])
            return NW_ENOMEM;
    }
    return NW_OK;
}

nw_rc_t nw_sched_solve(const nw_sched_snap_t *s, int64_t now, nw_sched_results_t *r,
                       nw_err_t *err)
{
    (void)now;
    memset(r, 0, sizeof *r);
    ctx_t c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.nt = (int)s->nitypes;
    c.nw = (c.nt + 63) / 64;
    if (c.nw == 0)
        c.nw = 1;
    c.nres = s->nres;
    nw_rc_t rc = NW_ENOMEM;
    int *queue = NULL;
    /* zones: offerings, then node labels */
    for (size_t t = 0; t < s->nitypes; t++)
        for (int o = 0; o < s->itypes[t].t.noffer; o++)
            zone_index(&c, s->itypes[t].t.offerings[o].zone);
    for (size_t n = 0; n < s->nnodes; n++) {
        const char *z = nw_labels_get(&s->nodes[n].labels, NW_LABEL_ZONE);
        if (z)
            zone_index(&c, z);
    }
    c.scratch = calloc((size_t)c.nw, sizeof(word_t));
    c.scratch2 = calloc((size_t)c.nw, sizeof(word_t));
    c.alone = calloc(s->npools + 1, sizeof(double));
    c.vc = calloc(s->nclasses + 1, sizeof *c.vc);
    c.ps = calloc(s->npods + 1, sizeof *c.ps);
    r->placed = calloc(s->npods + 1, sizeof *r->placed);
    r->unsched = calloc(s->npods + 1, sizeof *r->unsched);
    queue = malloc((s->npods + 1) * sizeof(int));
    if (!c.scratch || !c.scratch2 || !c.alone || !c.vc || !c.ps || !r->placed || !r->unsched || !queue)
        goto out;
    if ((rc = prep_pools(&c)) != NW_OK || (rc = prep_nodes(&c)) != NW_OK ||
        (rc = prep_topology(&c)) != NW_OK)
        goto out;
    /* which pods count */
    int nq = 0;
    for (size_t i = 0; i < s->npods; i++) {
        const nw_spod_t *p = &s->pods[i];
        if (!p->provisionable_state || (s->opts.require_unschedulable && !p->unschedulable_cond))
            continue;
        const nw_pclass_t *cl = &s->classes[p->cls];
        if (cl->refuses)
            continue;
        r->considered++;
        if (cl->invalid) {
            char msg[700];
            snprintf(msg, sizeof msg, "ignoring pod, invalid requirements: %s", cl->invalid);
            if ((rc = add_unsched(&c, r, (int)i, msg)) != NW_OK)
                goto out;
            continue;
        }
        if (p->ntcs > MAX_TCS) {
            if ((rc = add_unsched(&c, r, (int)i, "more than 64 topology constraints")) != NW_OK)
                goto out;
            continue;
        }
        if (s->opts.ignore_preferences) {
            c.ps[i].pref = (int)cl->nprefs;
            for (int k = 0; k < p->ntcs; k++)
                if (p->tcs[k].preferred)
                    c.ps[i].tc_off |= 1ULL << k;
        }
        c.ps[i].last_len = -1;
        queue[nq++] = (int)i;
    }
    qsort_r(queue, (size_t)nq, sizeof *queue, cmp_pods, (void *)s);
    /* ring queue */
    size_t qcap = s->npods + 1;
    size_t head = 0, len = (size_t)nq;
    int epoch = 1;
    while (len > 0) {
        int pod = queue[head];
        pstate_t *st = &c.ps[pod];
        if (st->epoch == epoch && st->last_len == (int)len)
            break;
        head = (head + 1) % qcap;
        len--;
        variant_t *v = variant_get(&c, pod);
        if (!v) {
            rc = NW_ENOMEM;
            goto out;
        }
        int e = try_existing(&c, pod, v);
        if (e >= 0) {
            nw_sched_placed_t *pl = &r->placed[r->nplaced++];
            pl->pod = pod;
            snprintf(pl->node, sizeof pl->node, "%s", s->nodes[c.en[e].snode].name);
            st->placed = true;
            continue;
        }
        rc = NW_OK;
        int ok = try_claims(&c, pod, v, &rc);
        if (ok == 0)
            ok = try_new(&c, pod, v, &rc);
        if (ok < 0)
            goto out;
        if (ok > 0) {
            st->placed = true;
            continue;
        }
        bool relaxed = relax(&c, pod);
        queue[(head + len) % qcap] = pod;
        len++;
        if (relaxed) {
            epoch++;
        } else {
            st->epoch = epoch;
            st->last_len = (int)len;
        }
    }
    for (size_t i = 0; i < len; i++) {
        int pod = queue[(head + i) % qcap];
        if ((rc = add_unsched(&c, r, pod, NULL)) != NW_OK)
            goto out;
    }
    if (s->opts.repack && (rc = rebalance(&c)) != NW_OK)
        goto out;
    r->claims = calloc((size_t)c.nclaims + 1, sizeof *r->claims);
    if (!r->claims) {
        rc = NW_ENOMEM;
        goto out;
    }
    for (int i = 0; i < c.nclaims; i++) {
        if (c.claims[i].npods == 0)
            continue;
        if ((rc = finalize(&c, &c.claims[i], &r->claims[r->nclaims++])) != NW_OK)
            goto out;
        r->total_price += r->claims[r->nclaims - 1].price;
    }
    rc = NW_OK;
out:
    free(queue);
    ctx_free(&c);
    if (rc != NW_OK)
        nw_err_set(err, rc, "", "scheduling simulation: %s", nw_rc_str(rc));
    return rc;
}
