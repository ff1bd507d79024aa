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

#include "api/wellknown.h"
#include "scaler/sched/solve_int.h"

/* ---- nw_solve_finalize ---------------------------------------------------------------------- */

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

/* What a claim's finalization works with: its pool, the capacity types the pool and the
 * claim allow (on-demand, spot, reserved) and the one it launches with. */
typedef struct {
    const pctx_t *pc;
    bool ct_ok[3];
    bool use_res, use_spot;
} fin_t;

/* Offering o of type t's zone (zone_find) and capacity type (ct_index), from the indexes
 * offer_index made when it has. */
static int offer_zone(const ctx_t *c, int t, int o, const nw_sched_offering_t *of)
{
    return c->off_zone ? c->off_zone[c->off_first[t] + o] : zone_find(c, of->zone);
}

static int offer_ct(const ctx_t *c, int t, int o, const nw_sched_offering_t *of)
{
    return c->off_ct ? c->off_ct[c->off_first[t] + o] : ct_index(of->capacity_type);
}

static void choose_capacity(const ctx_t *c, const claim_t *cl, fin_t *f)
{
    const nw_sched_snap_t *s = c->s;
    /* reserved capacity first while a reservation of the pool's class has room (Karpenter's
     * reserved offerings, priced near zero), then spot whenever the requirements allow it
     * and spot is offered */
    const char *ncl = f->pc->p->nodeclass;
    const bool *ct_ok = f->ct_ok;
    bool use_res = false;
    if (ct_ok[2]) {
        FOR_BITS(cl->bits, c->nw, t)
        {
            const nw_sched_itype_t *it = &s->itypes[t].t;
            for (int o = 0; o < it->noffer && !use_res; o++) {
                const nw_sched_offering_t *of = &it->offerings[o];
                int z = offer_zone(c, t, o, of);
                use_res = of->available && of->resv && nw_sv_offer_visible(c, of, ncl) && z >= 0 &&
                          (cl->zmask >> z & 1);
            }
        }
    }
    bool use_spot = false;
    if (ct_ok[1] && !use_res) {
        FOR_BITS(cl->bits, c->nw, t)
        {
            const nw_sched_itype_t *it = &s->itypes[t].t;
            for (int o = 0; o < it->noffer && !use_spot; o++) {
                int z = offer_zone(c, t, o, &it->offerings[o]);
                use_spot = it->offerings[o].available &&
                           offer_ct(c, t, o, &it->offerings[o]) == 1 && z >= 0 &&
                           (cl->zmask >> z & 1);
            }
        }
    }
    f->use_res = use_res;
    f->use_spot = use_spot;
}

/* The claim's types with an offering of the chosen capacity type in its zones, cheapest
 * first, into rk (at most 600); their number. */
static int rank_types(const ctx_t *c, const claim_t *cl, const fin_t *f, rank_t *rk)
{
    const nw_sched_snap_t *s = c->s;
    const pctx_t *pc = f->pc;
    const bool *ct_ok = f->ct_ok;
    const char *ncl = pc->p->nodeclass;
    bool use_res = f->use_res, use_spot = f->use_spot;
    int n = 0;
    bool any_plain = false;
    FOR_BITS(cl->bits, c->nw, t)
    {
        const nw_sched_itype_t *it = &s->itypes[t].t;
        rank_t r = {.t = t, .price = 1e300, .offer = -1, .metal = it->metal};
        for (int o = 0; o < it->noffer; o++) {
            const nw_sched_offering_t *of = &it->offerings[o];
            int ci = offer_ct(c, t, o, of);
            int z = offer_zone(c, t, o, of);
            if (!of->available || !ct_ok[ci] || z < 0 || !(cl->zmask >> z & 1) ||
                !nw_sv_offer_visible(c, of, ncl))
                continue;
            if (use_spot != (ci == 1) || use_res != (ci == 2))
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
    return n;
}

/* The claim's requirements: accumulated, the types kept, the capacity types offered (and
 * the reservation taken), the zones of a zone-id requirement. */
static NW_MUST_USE nw_rc_t claim_reqs(ctx_t *c, const claim_t *cl, const fin_t *f, const rank_t *rk,
                                      int n, nw_sched_claim_t *out)
{
    const nw_sched_snap_t *s = c->s;
    const bool *ct_ok = f->ct_ok;
    bool use_res = f->use_res, use_spot = f->use_spot;
    /* requirements: accumulated + instance types kept + capacity types offered */
    nw_requirements_init(&out->reqs);
    nw_rc_t rc = nw_requirements_copy(&out->reqs, &cl->reqs);
    const char **names = malloc((size_t)(n ? n : 1) * sizeof(char *));
    if (rc == NW_OK && names) {
        for (int i = 0; i < n; i++)
            names[i] = s->itypes[rk[i].t].t.name;
        const nw_req_t *old = nw_requirements_get(&cl->reqs, NW_LABEL_INSTANCE_TYPE);
        rc = nw_requirements_add(&out->reqs, NW_LABEL_INSTANCE_TYPE, NW_REQ_IN, names, (size_t)n,
                                 old ? old->min_values : 0, NULL);
        /* a pool that allows reserved capacity: the launch tries the node class's
         * capacity reservations first (scaler/aws/fleet.c), then this offering's type */
        const char *cts[2];
        size_t nc = 0;
        const nw_sched_offering_t *ro = n ? &s->itypes[rk[0].t].t.offerings[rk[0].offer] : NULL;
        if (use_res && ro && ro->resv) {
            /* the reservation takes this node (Karpenter's ReservationManager) */
            int64_t *left = &c->resv_left[ro->resv - 1];
            if (*left > 0)
                (*left)--;
            const char *id = s->resvs[ro->resv - 1].id;
            cts[nc++] = "reserved";
            if (rc == NW_OK)
                rc = nw_requirements_add(&out->reqs, NW_LABEL_CAPACITY_RESERVATION_ID, NW_REQ_IN,
                                         &id, 1, 0, NULL);
        } else if (ct_ok[2] && (use_spot || ct_ok[0]))
            cts[nc++] = "reserved";
        if (!use_res && use_spot)
            cts[nc++] = "spot";
        else if (!use_res && ct_ok[0])
            cts[nc++] = "on-demand";
        else if (!use_res && ct_ok[2] && nc == 0)
            cts[nc++] = "reserved";
        if (rc == NW_OK && nc)
            rc = nw_requirements_add(&out->reqs, NW_LABEL_CAPACITY_TYPE, NW_REQ_IN, cts, nc, 0,
                                     NULL);
        /* a zone-id requirement: the zones it names, so the launch picks one of them */
        if (rc == NW_OK && nw_requirements_get(&cl->reqs, NW_LABEL_ZONE_ID)) {
            const char *zv[MAX_ZONES];
            size_t nzv = 0;
            for (int z = 0; z < c->nz; z++)
                if (cl->zmask >> z & 1)
                    zv[nzv++] = c->zones[z];
            rc = nw_requirements_add(&out->reqs, NW_LABEL_ZONE, NW_REQ_IN, zv, nzv, 0, NULL);
        }
    } else if (!names) {
        rc = NW_ENOMEM;
    }
    free(names);
    return rc;
}

nw_rc_t nw_solve_finalize(ctx_t *c, claim_t *cl, nw_sched_claim_t *out)
{
    const nw_sched_snap_t *s = c->s;
    const pctx_t *pc = NULL;
    for (int i = 0; i < c->npools; i++)
        if (c->pools[i].idx == cl->pool)
            pc = &c->pools[i];
    if (!pc)
        return NW_EINVAL; /* a claim always belongs to one of the solve's pools */
    fin_t f = {.pc = pc};
    const nw_req_t *cq = nw_requirements_get(&cl->reqs, NW_LABEL_CAPACITY_TYPE);
    bool *ct_ok = f.ct_ok;
    for (int k = 0; k < 3; k++)
        ct_ok[k] = pc->ct_allowed[k];
    if (cq) {
        ct_ok[0] &= nw_requirements_req_has(cq, "on-demand");
        ct_ok[1] &= nw_requirements_req_has(cq, "spot");
        ct_ok[2] &= nw_requirements_req_has(cq, "reserved");
    }
    choose_capacity(c, cl, &f);
    rank_t *rk = calloc((size_t)c->nt + 1, sizeof *rk);
    if (!rk)
        return NW_ENOMEM;
    int n = rank_types(c, cl, &f, rk);
    out->pool = cl->pool;
    out->min_values_relaxed = cl->relaxed;
    out->is_static = cl->is_static;
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
    nw_rc_t rc = claim_reqs(c, cl, &f, rk, n, out);
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
        free(p->dsports);
        free(p->price);
        for (int z = 0; p->zbits && z < c->nz; z++)
            free(p->zbits[z]);
        free(p->zbits);
    }
    free(c->pools);
    free(c->off_first);
    free(c->off_zone);
    free(c->off_ct);
    for (size_t k = 0; c->vc && k < s->nclasses; k++) {
        for (int i = 0; i < c->vc[k].nv; i++) {
            variant_t *v = &c->vc[k].v[i];
            if (!v->built && !v->status)
                continue;
            nw_requirements_cleanup(&v->reqs);
            nw_requirements_cleanup(&v->strict);
            for (size_t p = 0; p < s->npools; p++) {
                if (v->reason)
                    free(v->reason[p]);
                if (v->merged && v->status && v->status[p] == 1)
                    nw_requirements_cleanup(&v->merged[p]);
            }
            free(v->status);
            free(v->reason);
            free(v->merged);
            free(v->bits);
            free(v->zmask);
            free(v->en_list);
        }
        free(c->vc[k].v);
    }
    free(c->vc);
    for (size_t p = 0; c->ps && p < s->npods; p++)
        free(c->ps[p].selgroups);
    free(c->ps);
    for (int i = 0; c->en && i < c->nen; i++)
        free(c->en[i].vols);
    free(c->en);
    for (int i = 0; i < c->nclaims; i++) {
        free(c->claims[i].bits);
        free(c->claims[i].pods);
        nw_requirements_cleanup(&c->claims[i].reqs);
    }
    free(c->claims);
    free(c->corder);
    for (size_t g = 0; g < s->ngroups; g++) {
        if (c->dcount)
            free(c->dcount[g]);
        if (c->downers)
            free(c->downers[g]);
        if (c->hcount)
            free(c->hcount[g]);
        if (c->howners)
            free(c->howners[g]);
        for (int i = 0; c->gfilt && c->gfilt[g] && i < c->ngfilt[g]; i++)
            nw_requirements_cleanup(&c->gfilt[g][i]);
        if (c->gfilt)
            free(c->gfilt[g]);
    }
    free(c->dcount);
    free(c->downers);
    free(c->hcount);
    free(c->howners);
    free(c->hneed);
    free(c->gtotal);
    free(c->gkey);
    free(c->gdom);
    free(c->gidom);
    free(c->ginv);
    free(c->gfilt);
    free(c->ngfilt);
    for (int k = 0; k < c->nkeys; k++)
        free(c->keys[k].pool);
    for (int h = 0; c->hp && h < c->hcap; h++)
        free(c->hp[h].v);
    free(c->hp);
    free(c->scratch);
    free(c->scratch2);
    free(c->alone);
    free(c->resv_left);
}

void nw_solve_results_free(nw_sched_results_t *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nclaims; i++) {
        free(r->claims[i].itypes);
        free(r->claims[i].pods);
        nw_requirements_cleanup(&r->claims[i].reqs);
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

static NW_MUST_USE nw_rc_t add_unsched(ctx_t *c, nw_sched_results_t *r, int pod, const char *single)
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
        u->reasons[c->pools[i].idx] = nw_solve_claims_pool_reason(c, pod, &c->pools[i]);
        if (!u->reasons[c->pools[i].idx])
            return NW_ENOMEM;
    }
    return NW_OK;
}

/* The solve's context: the type bitset width, the zones (offerings, then node labels) and
 * the working memory; false: out of memory. */
static bool ctx_init(ctx_t *c, const nw_sched_snap_t *s)
{
    c->s = s;
    c->nt = (int)s->nitypes;
    c->nw = (c->nt + 63) / 64;
    if (c->nw == 0)
        c->nw = 1;
    c->nres = s->nres;
    /* zones: offerings, then node labels */
    for (size_t t = 0; t < s->nitypes; t++)
        for (int o = 0; o < s->itypes[t].t.noffer; o++) {
            const nw_sched_offering_t *of = &s->itypes[t].t.offerings[o];
            int z = zone_index(c, of->zone);
            if (z >= 0 && !c->zone_ids[z] && of->zone_id[0])
                c->zone_ids[z] = of->zone_id;
        }
    for (size_t n = 0; n < s->nnodes; n++) {
        const char *z = nw_labels_get(&s->nodes[n].labels, NW_LABEL_ZONE);
        if (z)
            zone_index(c, z);
    }
    c->scratch = calloc((size_t)c->nw, sizeof(word_t));
    c->scratch2 = calloc((size_t)c->nw, sizeof(word_t));
    c->alone = calloc(s->npools + 1, sizeof(double));
    c->resv_left = calloc(s->nresvs + 1, sizeof *c->resv_left);
    for (size_t k = 0; c->resv_left && k < s->nresvs; k++)
        c->resv_left[k] = s->resvs[k].count;
    c->vc = calloc(s->nclasses + 1, sizeof *c->vc);
    c->ps = calloc(s->npods + 1, sizeof *c->ps);
    return c->scratch && c->scratch2 && c->alone && c->resv_left && c->vc && c->ps;
}

/* The pods that count, in Karpenter's order (the largest first) into queue; their number in
 * *nq_out. Those that cannot be placed at all are unschedulable at once. */
static NW_MUST_USE nw_rc_t queue_pods(ctx_t *c, nw_sched_results_t *r, int *queue, int *nq_out)
{
    const nw_sched_snap_t *s = c->s;
    /* which pods count */
    int nq = 0;
    nw_rc_t rc;
    for (size_t i = 0; i < s->npods; i++) {
        const nw_spod_t *p = &s->pods[i];
        if (!p->provisionable_state || (s->opts.require_unschedulable && !p->unschedulable_cond))
            continue;
        const nw_pclass_t *cl = &s->classes[p->cls];
        if (cl->refuses)
            continue;
        r->considered++;
        if (cl->invalid || cl->volume_err) {
            char msg[700];
            snprintf(msg, sizeof msg, "ignoring pod, %s%s",
                     cl->invalid ? "invalid requirements: " : "",
                     cl->invalid ? cl->invalid : cl->volume_err);
            if ((rc = add_unsched(c, r, (int)i, msg)) != NW_OK)
                return rc;
            continue;
        }
        if (p->ntcs > MAX_TCS) {
            if ((rc = add_unsched(c, r, (int)i, "more than 64 topology constraints")) != NW_OK)
                return rc;
            continue;
        }
        if (s->opts.ignore_preferences) {
            c->ps[i].pref = (int)cl->nprefs;
            for (int k = 0; k < p->ntcs; k++)
                if (p->tcs[k].preferred)
                    c->ps[i].tc_off |= 1ULL << k;
        }
        c->ps[i].last_len = -1;
        queue[nq++] = (int)i;
    }
    qsort_r(queue, (size_t)nq, sizeof *queue, cmp_pods, (void *)s);
    *nq_out = nq;
    return NW_OK;
}

/* An existing node's name and its index in c->en (place_preferred). */
typedef struct {
    const char *name;
    int en;
} en_name_t;

static int cmp_en_name(const void *a, const void *b)
{
    return strcmp(((const en_name_t *)a)->name, ((const en_name_t *)b)->name);
}

/* Before anything else is placed: each queued pod an earlier batch planned on a node that
 * exists now (nw_spod_t.prefer) back onto that node while it still has room for it, in the
 * queue's order, with every check an existing node gets (try_node); the pods placed leave
 * the queue (*nq), the others are placed as any pod is. A later look so keeps pods where
 * the first plan put them rather than packing them afresh around what the kube-scheduler
 * bound meanwhile, which can leave a planned pod without room and add a NodeClaim. */
static NW_MUST_USE nw_rc_t place_preferred(ctx_t *c, nw_sched_results_t *r, int *queue, int *nq)
{
    const nw_sched_snap_t *s = c->s;
    int any = 0;
    for (int q = 0; q < *nq && !any; q++)
        any = s->pods[queue[q]].prefer != NULL;
    if (!any || c->nen == 0)
        return NW_OK;
    en_name_t *names = malloc((size_t)c->nen * sizeof *names);
    if (!names)
        return NW_ENOMEM;
    for (int i = 0; i < c->nen; i++)
        names[i] = (en_name_t){s->nodes[c->en[i].snode].name, i};
    qsort(names, (size_t)c->nen, sizeof *names, cmp_en_name);
    nw_rc_t rc = NW_OK;
    int k = 0;
    for (int q = 0; q < *nq; q++) {
        int pod = queue[q];
        const char *want = s->pods[pod].prefer;
        const en_name_t key = {want, 0};
        const en_name_t *hit =
            want ? bsearch(&key, names, (size_t)c->nen, sizeof *names, cmp_en_name) : NULL;
        int ok = 0;
        if (hit && rc == NW_OK) {
            variant_t *v = nw_solve_prep_variant_get(c, pod);
            ok = v ? nw_solve_claims_try_node(c, pod, v, hit->en) : -2;
        }
        if (ok < 0)
            rc = NW_ENOMEM;
        if (ok > 0) {
            nw_sched_placed_t *pl = &r->placed[r->nplaced++];
            pl->pod = pod;
            snprintf(pl->node, sizeof pl->node, "%s", want);
            c->ps[pod].placed = true;
            continue;
        }
        queue[k++] = pod;
    }
    *nq = k;
    free(names);
    return rc;
}

/* Karpenter's loop: each pod on an existing node, an open claim or a new one, else relaxed
 * and queued again until a whole pass places nothing; the pods left are unschedulable. */
static NW_MUST_USE nw_rc_t place_pods(ctx_t *c, nw_sched_results_t *r, int *queue, int nq)
{
    const nw_sched_snap_t *s = c->s;
    nw_rc_t rc;
    /* ring queue */
    size_t qcap = s->npods + 1;
    size_t head = 0, len = (size_t)nq;
    int epoch = 1;
    while (len > 0) {
        int pod = queue[head];
        pstate_t *st = &c->ps[pod];
        if (st->epoch == epoch && st->last_len == (int)len)
            break;
        head = (head + 1) % qcap;
        len--;
        variant_t *v = nw_solve_prep_variant_get(c, pod);
        if (!v)
            return NW_ENOMEM;
        int e = nw_solve_claims_try_existing(c, pod, v);
        if (e == -2)
            return NW_ENOMEM;
        if (e >= 0) {
            nw_sched_placed_t *pl = &r->placed[r->nplaced++];
            pl->pod = pod;
            snprintf(pl->node, sizeof pl->node, "%s", s->nodes[c->en[e].snode].name);
            st->placed = true;
            continue;
        }
        rc = NW_OK;
        int ok = nw_solve_claims_try(c, pod, v, &rc);
        if (ok == 0)
            ok = nw_solve_claims_try_new(c, pod, v, &rc);
        if (ok < 0)
            return rc;
        if (ok > 0) {
            st->placed = true;
            continue;
        }
        bool relaxed = nw_solve_claims_relax(c, pod);
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
        if ((rc = add_unsched(c, r, pod, NULL)) != NW_OK)
            return rc;
    }
    return NW_OK;
}

/* The results' claims: each claim with pods (or static) finalized; one a taken reservation
 * left without a type is dropped and its pods are unschedulable. */
/* The offerings' zones and capacity types as indexes (off_first, off_zone, off_ct), so that
 * each claim's finalization compares no string; the zones are all known by then. */
static NW_MUST_USE nw_rc_t offer_index(ctx_t *c)
{
    const nw_sched_snap_t *s = c->s;
    c->off_first = malloc(((size_t)c->nt + 1) * sizeof(int));
    if (!c->off_first)
        return NW_ENOMEM;
    int total = 0;
    for (int t = 0; t < c->nt; t++) {
        c->off_first[t] = total;
        total += s->itypes[t].t.noffer;
    }
    c->off_first[c->nt] = total;
    c->off_zone = malloc(((size_t)total + 1) * sizeof(int));
    c->off_ct = malloc(((size_t)total + 1) * sizeof(int));
    if (!c->off_zone || !c->off_ct)
        return NW_ENOMEM;
    for (int t = 0; t < c->nt; t++)
        for (int o = 0; o < s->itypes[t].t.noffer; o++) {
            const nw_sched_offering_t *of = &s->itypes[t].t.offerings[o];
            c->off_zone[c->off_first[t] + o] = zone_find(c, of->zone);
            c->off_ct[c->off_first[t] + o] = ct_index(of->capacity_type);
        }
    return NW_OK;
}

static NW_MUST_USE nw_rc_t emit_claims(ctx_t *c, nw_sched_results_t *r)
{
    const nw_sched_snap_t *s = c->s;
    nw_rc_t rc;
    r->claims = calloc((size_t)c->nclaims + 1, sizeof *r->claims);
    if (!r->claims)
        return NW_ENOMEM;
    if ((rc = offer_index(c)) != NW_OK)
        return rc;
    for (int i = 0; i < c->nclaims; i++) {
        if (c->claims[i].npods == 0 && !c->claims[i].is_static)
            continue;
        if ((rc = nw_solve_finalize(c, &c->claims[i], &r->claims[r->nclaims++])) != NW_OK)
            return rc;
        nw_sched_claim_t *fc = &r->claims[r->nclaims - 1];
        if (fc->nitypes == 0 && s->nresvs > 0) {
            /* packed while a reservation had room, finalized after it was taken: its pods
             * wait (Karpenter's ReservationManager refuses the claim) */
            for (int k = 0; k < fc->npods && rc == NW_OK; k++)
                rc = add_unsched(c, r, fc->pods[k],
                                 "the capacity reservations of the NodePool's EC2NodeClass are "
                                 "taken and no other capacity type is allowed");
            free(fc->itypes);
            free(fc->pods);
            nw_requirements_cleanup(&fc->reqs);
            memset(fc, 0, sizeof *fc);
            r->nclaims--;
            if (rc != NW_OK)
                return rc;
            continue;
        }
        r->total_price += fc->price;
    }
    return NW_OK;
}

/* Would queue_pods count any pod, or does a static NodePool want NodeClaims of its own? When
 * neither, the simulation decides nothing and its preparation (every existing node, every
 * bound pod's topology groups: seconds at 100,000 pods) is skipped: a batch whose pending
 * pods are all held by their nominations to in-flight NodeClaims. */
static bool anything_to_decide(const nw_sched_snap_t *s)
{
    for (size_t i = 0; i < s->npools; i++)
        if (s->pools[i].replicas >= 0)
            return true;
    for (size_t i = 0; i < s->npods; i++) {
        const nw_spod_t *p = &s->pods[i];
        if (p->provisionable_state && (!s->opts.require_unschedulable || p->unschedulable_cond) &&
            !s->classes[p->cls].refuses)
            return true;
    }
    return false;
}

nw_rc_t nw_solve(const nw_sched_snap_t *s, int64_t now, nw_sched_results_t *r, nw_err_t *err)
{
    (void)now;
    memset(r, 0, sizeof *r);
    if (!anything_to_decide(s)) {
        r->placed = calloc(1, sizeof *r->placed);
        r->unsched = calloc(1, sizeof *r->unsched);
        if (r->placed && r->unsched)
            return NW_OK;
        nw_solve_results_free(r);
        return nw_err_set(err, NW_ENOMEM, "", "scheduling simulation: out of memory");
    }
    ctx_t c;
    memset(&c, 0, sizeof c);
    nw_rc_t rc = NW_ENOMEM;
    int *queue = NULL;
    bool ready = ctx_init(&c, s);
    r->placed = calloc(s->npods + 1, sizeof *r->placed);
    r->unsched = calloc(s->npods + 1, sizeof *r->unsched);
    queue = malloc((s->npods + 1) * sizeof(int));
    if (!ready || !r->placed || !r->unsched || !queue)
        goto out;
    if ((rc = nw_solve_prep_pools(&c)) != NW_OK || (rc = nw_solve_prep_nodes(&c)) != NW_OK ||
        (rc = nw_solve_topo_prep(&c)) != NW_OK)
        goto out;
    int nq = 0;
    if ((rc = queue_pods(&c, r, queue, &nq)) != NW_OK ||
        (rc = place_preferred(&c, r, queue, &nq)) != NW_OK ||
        (rc = place_pods(&c, r, queue, nq)) != NW_OK)
        goto out;
    if (s->opts.repack &&
        ((rc = nw_solve_repack_rebalance(&c)) != NW_OK || (rc = nw_solve_split(&c)) != NW_OK))
        goto out;
    if ((rc = nw_solve_claims_static(&c)) != NW_OK || (rc = emit_claims(&c, r)) != NW_OK)
        goto out;
    rc = NW_OK;
out:
    free(queue);
    ctx_free(&c);
    if (rc != NW_OK)
        nw_err_set(err, rc, "", "scheduling simulation: %s", nw_err_rc_str(rc));
    return rc;
}
