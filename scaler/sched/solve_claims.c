/* scaler/sched/solve_claims.c — the provisioning simulation (scaler/sched/solve.c): placing one
 * pod: existing capacity, open claims, a new claim; the reason per pool when nothing fits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "api/wellknown.h"
#include "scaler/sched/solve_int.h"

/* ---- claims ------------------------------------------------------------------------ */

void nw_solve_claims_stats(ctx_t *c, claim_t *cl, const pctx_t *pc)
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
        const nw_sched_res_t *cap = nw_snap_node_type_capacity(c->s, pc->cls, (size_t)t);
        for (int k = 0; k < c->nres; k++)
            if (pc->p->has_limits[k] && cap->v[k] > cl->reserved.v[k])
                cl->reserved.v[k] = cap->v[k];
    }
}

/* narrow `out` (a copy of `in`) to types that hold `need` */
bool nw_solve_claims_filter_fit(const ctx_t *c, const pctx_t *pc, const word_t *in, word_t *out,
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

/* the distinct values of q's key over the types of bits that q allows (at most 256) */
static int min_values_count(const ctx_t *c, const nw_req_t *q, const word_t *bits)
{
    const char *seen[256];
    int n = 0;
    FOR_BITS(bits, c->nw, t)
    {
        const char *v = nw_labels_get(&c->s->itypes[t].t.labels, q->key);
        if (!v || !nw_requirements_req_has(q, v))
            continue;
        bool dup = false;
        for (int k = 0; k < n && !dup; k++)
            dup = strcmp(seen[k], v) == 0;
        if (!dup && n < 256)
            seen[n++] = v;
    }
    return n;
}

static bool min_values_ok(const ctx_t *c, const nw_reqs_t *r, const word_t *bits)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->v[i].min_values > 0 && min_values_count(c, &r->v[i], bits) < r->v[i].min_values)
            return false;
    return true;
}

/* minValuesPolicy BestEffort (Karpenter's filterInstanceTypesByRequirements with
 * relaxMinValues, on a new NodeClaim only): each minValues the types of bits cannot meet
 * is lowered to the number of values they give. Whether any was lowered. */
static bool min_values_relax(const ctx_t *c, nw_reqs_t *r, const word_t *bits)
{
    bool any = false;
    for (size_t i = 0; i < r->n; i++) {
        if (r->v[i].min_values <= 0)
            continue;
        int n = min_values_count(c, &r->v[i], bits);
        if (n < r->v[i].min_values) {
            r->v[i].min_values = n;
            any = true;
        }
    }
    return any;
}

static bool tolerates(const ctx_t *c, int pod, const nw_taints_t *taints, bool ignore_ephemeral,
                      const nw_taints_t *startup, const nw_taint_t **bad)
{
    const nw_pclass_t *cl = &c->s->classes[c->s->pods[pod].cls];
    for (size_t i = 0; i < taints->n; i++) {
        const nw_taint_t *t = &taints->v[i];
        if (c->ps[pod].tol_prefer && t->effect == NW_TAINT_PREFER_NO_SCHEDULE)
            continue;
        if (ignore_ephemeral && nw_taints_is_known_ephemeral(t))
            continue;
        bool is_startup = false;
        for (size_t k = 0; startup && k < startup->n && !is_startup; k++)
            is_startup =
                strcmp(startup->v[k].key, t->key) == 0 && startup->v[k].effect == t->effect;
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

nw_rc_t nw_solve_claims_add_pod(claim_t *cl, int pod)
{
    return push_int(&cl->pods, &cl->npods, &cl->cpods, pod);
}

static NW_MUST_USE nw_rc_t pin_zone(ctx_t *c, claim_t *cl, uint64_t m)
{
    if (m == cl->zmask && nw_requirements_get(&cl->reqs, NW_LABEL_ZONE))
        return NW_OK;
    const char *vals[MAX_ZONES];
    size_t n = 0;
    for (int z = 0; z < c->nz; z++)
        if (m >> z & 1)
            vals[n++] = c->zones[z];
    cl->zmask = m;
    return nw_requirements_add(&cl->reqs, NW_LABEL_ZONE, NW_REQ_IN, vals, n, 0, NULL);
}

/* keep in nb only the types with an offering in one of the zones of zm */
static void zone_narrow(const ctx_t *c, const pctx_t *pc, word_t *nb, uint64_t zm)
{
    for (int w = 0; w < c->nw; w++) {
        word_t u = 0;
        for (uint64_t x = zm; x; x &= x - 1)
            u |= pc->zbits[__builtin_ctzll(x)][w];
        nb[w] &= u;
    }
}

/* the requirements the topology adds for keys other than the zone (extra: key In
 * [domains]), and nb narrowed to the types that allow them (in the zones of zm) */
static NW_MUST_USE nw_rc_t topo_narrow(const ctx_t *c, const pctx_t *pc, const nw_reqs_t *base,
                                       const uint64_t *out, uint32_t touched, uint64_t zm,
                                       word_t *nb, nw_reqs_t *extra)
{
    nw_requirements_init(extra);
    for (int k = 1; k < c->nkeys; k++) {
        if (!(touched >> k & 1))
            continue;
        const char *name = c->keys[k].name;
        if (out[k] == nw_solve_topo_key_mask(c, k, base) && nw_requirements_get(base, name))
            continue;
        const char *vals[MAX_DOMAINS];
        size_t n = 0;
        for (uint64_t x = out[k]; x; x &= x - 1)
            vals[n++] = c->keys[k].dom[__builtin_ctzll(x)];
        nw_rc_t rc = nw_requirements_add(extra, name, NW_REQ_IN, vals, n, 0, NULL);
        if (rc != NW_OK)
            return rc;
    }
    if (extra->n == 0)
        return NW_OK;
    for (int w = 0; w < c->nw; w++)
        for (word_t x = nb[w]; x; x &= x - 1) {
            int t = w * 64 + __builtin_ctzll(x);
            const nw_sitype_t *it = &c->s->itypes[t];
            if (!nw_requirements_intersects(&it->reqs, extra, NULL) ||
                !nw_solve_prep_type_allows_offering(it, extra, pc->ct_allowed, zm, c,
                                                    pc->p->nodeclass))
                nb[w] &= ~(1ULL << (t & 63));
        }
    return NW_OK;
}

/* a claim's domains per topology key */
static void claim_domains(const ctx_t *c, const claim_t *cl, uint64_t *dm)
{
    dm[0] = cl->zmask;
    for (int k = 1; k < c->nkeys; k++)
        dm[k] = nw_solve_topo_key_mask(c, k, &cl->reqs);
}

int nw_solve_claims_single_zone(uint64_t m)
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

/* Does the pod fit claim cl narrowed to nb: need (the claim's pods and this one) fits one of
 * its types (those that hold it go to c->scratch2), minValues still hold, and an accelerator
 * pod costs no more there than on a node of its own. */
static bool join_fits(ctx_t *c, int pod, const variant_t *v, const pctx_t *pc, const claim_t *cl,
                      const word_t *nb, nw_sched_res_t *need)
{
    const nw_spod_t *p = &c->s->pods[pod];
    const nw_pclass_t *cls = &c->s->classes[p->cls];
    double *alone = c->alone;
    *need = cl->used;
    for (int k = 0; k < c->nres; k++)
        need->v[k] += p->req.v[k];
    if (!nw_solve_claims_filter_fit(c, pc, nb, c->scratch2, need) ||
        (pc->p->has_min_values && !min_values_ok(c, &cl->reqs, c->scratch2)))
        return false;
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
            return false;
    }
    return true;
}

int nw_solve_claims_try(ctx_t *c, int pod, variant_t *v, nw_rc_t *rc)
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
        if (!pc || nw_solve_prep_variant_pool(c, v, cls, pc) != 1)
            continue;
        if (!tolerates(c, pod, &pc->p->taints, false, NULL, NULL))
            continue;
        if (v->reqs.n && !nw_requirements_compatible(&cl->reqs, &v->reqs, FLAG_ALLOW, NULL))
            continue;
        int host = c->nen + cl->idx;
        if (nw_solve_topo_hostports_conflict(c, pod, host) ||
            nw_solve_topo_ds_ports_conflict(c, pod, pc))
            continue;
        uint64_t cand[MAX_TKEYS], out[MAX_TKEYS];
        claim_domains(c, cl, cand);
        cand[0] &= v->zmask[pc->idx];
        for (int k = 1; k < c->nkeys; k++)
            cand[k] &= v->vmask[k];
        uint32_t touched;
        if (!nw_solve_topo_allowed(c, pod, v, host, cand, out, &touched, NULL, 0))
            continue;
        word_t *nb = c->scratch;
        const word_t *vb = &v->bits[(size_t)pc->idx * (size_t)c->nw];
        for (int w = 0; w < c->nw; w++)
            nb[w] = cl->bits[w] & vb[w];
        uint64_t newz = out[0];
        if (newz != cl->zmask)
            zone_narrow(c, pc, nb, newz);
        nw_reqs_t extra;
        if ((*rc = topo_narrow(c, pc, &cl->reqs, out, touched, newz, nb, &extra)) != NW_OK) {
            nw_requirements_cleanup(&extra);
            return -1;
        }
        nw_sched_res_t need;
        if (!join_fits(c, pod, v, pc, cl, nb, &need)) {
            nw_requirements_cleanup(&extra);
            continue;
        }
        /* commit */
        if (v->reqs.n && (*rc = nw_requirements_add_all(&cl->reqs, &v->reqs)) != NW_OK)
            goto fail_extra;
        if ((newz != cl->zmask || (touched & 1)) && (*rc = pin_zone(c, cl, newz)) != NW_OK)
            goto fail_extra;
        *rc = nw_requirements_add_all(&cl->reqs, &extra);
        nw_requirements_cleanup(&extra);
        if (*rc != NW_OK)
            return -1;
        memcpy(cl->bits, c->scratch2, (size_t)c->nw * sizeof(word_t));
        cl->used = need;
        /* limits: the claim's reservation can only shrink */
        pctx_t *pcm = (pctx_t *)pc;
        nw_sched_res_t old = cl->reserved;
        nw_solve_claims_stats(c, cl, pc);
        for (int k = 0; k < c->nres; k++)
            if (pc->p->has_limits[k])
                pcm->remaining[k] += old.v[k] - cl->reserved.v[k];
        if ((*rc = nw_solve_claims_add_pod(cl, pod)) != NW_OK ||
            (*rc = nw_solve_topo_hostports_add(c, pod, host)) != NW_OK)
            return -1;
        uint64_t dm[MAX_TKEYS];
        claim_domains(c, cl, dm);
        nw_solve_topo_record(c, pod, host, dm, &cl->reqs, &pc->p->taints);
        corder_bump(c, oi);
        return 1;
    fail_extra:
        nw_requirements_cleanup(&extra);
        return -1;
    }
    return 0;
}

/* The existing nodes whose requirements the variant's are compatible with (v->en_list,
 * see variant_t), built once per variant. Which of them a pod then takes is decided in
 * c->en order, as a walk over every node that skipped the others would. */
static void en_candidates(ctx_t *c, variant_t *v)
{
    if (v->en_built)
        return;
    v->en_built = true;
    v->en_list = NULL;
    v->en_n = c->nen;
    if (!v->reqs.n || c->nen == 0)
        return; /* every node */
    int *l = malloc((size_t)c->nen * sizeof *l);
    if (!l)
        return; /* out of memory: every node, each asked in turn */
    int k = 0;
    for (int i = 0; i < c->nen; i++)
        if (nw_requirements_compatible(&c->s->nodes[c->en[i].snode].reqs, &v->reqs, FLAG_ALLOW,
                                       NULL))
            l[k++] = i;
    v->en_list = l;
    v->en_n = k;
}

/* Pod on existing node i (c->en) when it fits there (room, taints, requirements unless
 * known compatible, host ports, volumes, topology): 1 placed, 0 not, -2 out of memory. */
static int try_node(ctx_t *c, int pod, variant_t *v, int i, bool check_reqs)
{
    const nw_spod_t *p = &c->s->pods[pod];
    enode_t *e = &c->en[i];
    if (!fits(&p->req, &e->free, c->nres))
        return 0;
    const nw_snode_t *n = &c->s->nodes[e->snode];
    if (!tolerates(c, pod, &n->taints, !n->initialized && n->pool, &n->startup_taints, NULL))
        return 0;
    if (check_reqs && v->reqs.n &&
        !nw_requirements_compatible(&n->reqs, &v->reqs, FLAG_ALLOW, NULL))
        return 0;
    if (nw_solve_topo_hostports_conflict(c, pod, i) || nw_solve_topo_volumes_exceed(c, pod, e))
        return 0;
    uint64_t out[MAX_TKEYS];
    uint32_t touched;
    if (!nw_solve_topo_allowed(c, pod, v, i, e->dm, out, &touched, NULL, 0))
        return 0;
    if (nw_solve_topo_hostports_add(c, pod, i) != NW_OK ||
        nw_solve_topo_volumes_add(c, pod, e) != NW_OK)
        return -2;
    for (int k = 0; k < c->nres; k++)
        e->free.v[k] -= p->req.v[k];
    for (int k = 0; k < c->nkeys; k++)
        if (touched >> k & 1)
            e->dm[k] = out[k];
    nw_solve_topo_record(c, pod, i, e->dm, &n->reqs, &n->taints);
    return 1;
}

int nw_solve_claims_try_existing(ctx_t *c, int pod, variant_t *v)
{
    en_candidates(c, v);
    bool all = !v->en_list;
    for (int j = 0; j < v->en_n; j++) {
        int i = all ? j : v->en_list[j];
        int ok = try_node(c, pod, v, i, all);
        if (ok)
            return ok > 0 ? i : -2;
    }
    return -1;
}

int nw_solve_claims_try_node(ctx_t *c, int pod, variant_t *v, int i)
{
    return i < 0 || i >= c->nen ? 0 : try_node(c, pod, v, i, true);
}

/* Drop from nb the types that would exceed the pool's remaining limits. */
static void within_limits(const ctx_t *c, const pctx_t *pc, word_t *nb)
{
    for (int w = 0; w < c->nw; w++)
        for (word_t x = nb[w]; x; x &= x - 1) {
            int t = w * 64 + __builtin_ctzll(x);
            const nw_sched_res_t *cap = nw_snap_node_type_capacity(c->s, pc->cls, (size_t)t);
            for (int k = 0; k < c->nres; k++)
                if (pc->p->has_limits[k] && cap->v[k] > pc->remaining[k]) {
                    nb[w] &= ~(1ULL << (t & 63));
                    break;
                }
        }
}

/* A new claim of pool pc: the variant's merged requirements and extra (consumed either way),
 * the types of c->scratch2, a host slot; NULL (*rc set) when out of memory. */
static claim_t *new_claim(ctx_t *c, const pctx_t *pc, const variant_t *v, nw_reqs_t *extra,
                          nw_rc_t *rc)
{
    if (c->nclaims == c->cclaims) {
        int n = c->cclaims ? c->cclaims * 2 : 16;
        claim_t *nc = realloc(c->claims, (size_t)n * sizeof *nc);
        int *no = realloc(c->corder, (size_t)n * sizeof(int));
        if (nc)
            c->claims = nc;
        if (no)
            c->corder = no;
        if (!nc || !no) {
            nw_requirements_cleanup(extra);
            *rc = NW_ENOMEM;
            return NULL;
        }
        c->cclaims = n;
    }
    if ((*rc = nw_solve_topo_host_grow(c, c->nen + c->nclaims + 1)) != NW_OK) {
        nw_requirements_cleanup(extra);
        return NULL;
    }
    claim_t *cl = &c->claims[c->nclaims];
    memset(cl, 0, sizeof *cl);
    cl->pool = pc->idx;
    cl->idx = c->nclaims;
    cl->bits = calloc((size_t)c->nw, sizeof(word_t));
    if (!cl->bits || nw_requirements_copy(&cl->reqs, &v->merged[pc->idx]) != NW_OK ||
        nw_requirements_add_all(&cl->reqs, extra) != NW_OK) {
        free(cl->bits);
        nw_requirements_cleanup(&cl->reqs);
        nw_requirements_cleanup(extra);
        *rc = NW_ENOMEM;
        return NULL;
    }
    nw_requirements_cleanup(extra);
    c->nclaims++;
    memcpy(cl->bits, c->scratch2, (size_t)c->nw * sizeof(word_t));
    return cl;
}

int nw_solve_claims_try_new(ctx_t *c, int pod, variant_t *v, nw_rc_t *rc)
{
    const nw_spod_t *p = &c->s->pods[pod];
    const nw_pclass_t *cls = &c->s->classes[p->cls];
    for (int pi = 0; pi < c->npools; pi++) {
        pctx_t *pc = &c->pools[pi];
        if (pc->nodes_left <= 0 || pc->p->replicas >= 0)
            continue; /* a static NodePool is not provisioned for pods */
        if (!tolerates(c, pod, &pc->p->taints, false, NULL, NULL))
            continue;
        if (nw_solve_prep_variant_pool(c, v, cls, pc) != 1)
            continue;
        if (nw_solve_topo_ds_ports_conflict(c, pod, pc))
            continue;
        uint64_t cand[MAX_TKEYS], out[MAX_TKEYS];
        cand[0] = v->zmask[pc->idx];
        for (int k = 1; k < c->nkeys; k++)
            cand[k] = nw_solve_topo_key_mask(c, k, &v->merged[pc->idx]);
        uint32_t touched;
        if (!nw_solve_topo_allowed(c, pod, v, -1, cand, out, &touched, NULL, 0))
            continue;
        word_t *nb = c->scratch;
        const word_t *vb = &v->bits[(size_t)pc->idx * (size_t)c->nw];
        memcpy(nb, vb, (size_t)c->nw * sizeof(word_t));
        uint64_t zm = out[0];
        if (zm != cand[0])
            zone_narrow(c, pc, nb, zm);
        nw_reqs_t extra;
        if ((*rc = topo_narrow(c, pc, &v->merged[pc->idx], out, touched, zm, nb, &extra)) !=
            NW_OK) {
            nw_requirements_cleanup(&extra);
            return -1;
        }
        /* types within the pool's remaining limits */
        within_limits(c, pc, nb);
        bool relax = false;
        if (!nw_solve_claims_filter_fit(c, pc, nb, c->scratch2, &p->req)) {
            nw_requirements_cleanup(&extra);
            continue;
        }
        if (pc->p->has_min_values && !min_values_ok(c, &v->merged[pc->idx], c->scratch2)) {
            if (!c->s->opts.min_values_best_effort) {
                nw_requirements_cleanup(&extra);
                continue;
            }
            relax = true;
        }
        claim_t *cl = new_claim(c, pc, v, &extra, rc);
        if (!cl)
            return -1;
        if (relax)
            cl->relaxed = min_values_relax(c, &cl->reqs, cl->bits);
        cl->used = p->req;
        cl->zmask = v->zmask[pc->idx];
        if ((touched & 1) && (*rc = pin_zone(c, cl, zm)) != NW_OK)
            return -1;
        nw_solve_claims_stats(c, cl, pc);
        for (int k = 0; k < c->nres; k++)
            if (pc->p->has_limits[k])
                pc->remaining[k] -= cl->reserved.v[k];
        if (pc->p->has_node_limit)
            pc->nodes_left--;
        if ((*rc = nw_solve_claims_add_pod(cl, pod)) != NW_OK)
            return -1;
        /* insert keeping (count, creation) order: it has 1 pod and the newest index */
        int pos = c->nclaims - 1;
        c->corder[pos] = cl->idx;
        while (pos > 0 && c->claims[c->corder[pos - 1]].npods > 1) {
            c->corder[pos] = c->corder[pos - 1];
            c->corder[pos - 1] = cl->idx;
            pos--;
        }
        int host = c->nen + cl->idx;
        if ((*rc = nw_solve_topo_hostports_add(c, pod, host)) != NW_OK)
            return -1;
        uint64_t dm[MAX_TKEYS];
        claim_domains(c, cl, dm);
        nw_solve_topo_record(c, pod, host, dm, &cl->reqs, &pc->p->taints);
        return 1;
    }
    return 0;
}

/* one relaxation step (kubernetes-sigs/karpenter
 * pkg/controllers/provisioning/scheduling/preferences.go Relax); false when nothing is left */
bool nw_solve_claims_relax(ctx_t *c, int pod)
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
            if ((int)g->kind == kind && p->tcs[i].preferred && nw_solve_topo_tc_active(c, pod, i) &&
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
            nw_solve_topo_tc_active(c, pod, i)) {
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
    cJSON *j = nw_snapshot_res_to_json(s, r);
    char *out = j ? nw_json_print(j) : NULL;
    cJSON_Delete(j);
    return out;
}

char *nw_solve_claims_pool_reason(ctx_t *c, int pod, const pctx_t *pc)
{
    if (pc->p->replicas >= 0)
        return strdup("static NodePool (spec.replicas), not provisioned for pods");
    const nw_spod_t *p = &c->s->pods[pod];
    const nw_pclass_t *cls = &c->s->classes[p->cls];
    char buf[1600];
    const nw_taint_t *bad = NULL;
    if (!tolerates(c, pod, &pc->p->taints, false, NULL, &bad)) {
        nw_taints_untolerated_msg(bad, buf, sizeof buf);
        return strdup(buf);
    }
    variant_t *v = nw_solve_prep_variant_get(c, pod);
    if (!v)
        return NULL;
    if (nw_solve_prep_variant_pool(c, v, cls, pc) != 1)
        return strdup(v->reason[pc->idx]);
    const word_t *vb = &v->bits[(size_t)pc->idx * (size_t)c->nw];
    if (!nw_solve_claims_filter_fit(c, pc, vb, c->scratch2, &p->req)) {
        char *rs = res_str(c->s, &p->req);
        char rq[900];
        nw_requirements_format(&v->merged[pc->idx], rq, sizeof rq);
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
    if (nw_solve_topo_ds_ports_conflict(c, pod, pc)) {
        const nw_spod_t *sp = &c->s->pods[pod];
        for (int i = 0; i < pc->ndsports; i++) {
            const nw_sds_t *d = &c->s->dss[pc->dsports[i]];
            for (int a = 0; a < sp->nhostports; a++)
                for (int b = 0; b < d->nhostports; b++)
                    if (sp->hostports[a].port == d->hostports[b].port &&
                        strcmp(sp->hostports[a].proto, d->hostports[b].proto) == 0) {
                        snprintf(buf, sizeof buf,
                                 "host port %s/%d conflicts with daemonset %s/%s on nodepool "
                                 "\"%s\"",
                                 sp->hostports[a].proto, sp->hostports[a].port, d->ns, d->name,
                                 pc->p->name);
                        return strdup(buf);
                    }
        }
    }
    bool within = false;
    FOR_BITS(c->scratch2, c->nw, t)
    {
        const nw_sched_res_t *cap = nw_snap_node_type_capacity(c->s, pc->cls, (size_t)t);
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
    if (pc->p->has_min_values && !c->s->opts.min_values_best_effort &&
        !min_values_ok(c, &v->merged[pc->idx], c->scratch2)) {
        snprintf(buf, sizeof buf, "NodePool couldn't meet minValues");
        return strdup(buf);
    }
    uint64_t cand[MAX_TKEYS], out[MAX_TKEYS];
    cand[0] = v->zmask[pc->idx];
    for (int k = 1; k < c->nkeys; k++)
        cand[k] = nw_solve_topo_key_mask(c, k, &v->merged[pc->idx]);
    uint32_t touched;
    char why[400];
    if (!nw_solve_topo_allowed(c, pod, v, -1, cand, out, &touched, why, sizeof why)) {
        snprintf(buf, sizeof buf, "would violate %s", why[0] ? why : "topology constraints");
        return strdup(buf);
    }
    return strdup("could not be placed with the other pods of this batch");
}

nw_rc_t nw_solve_claims_static(ctx_t *c)
{
    for (int pi = 0; pi < c->npools; pi++) {
        pctx_t *pc = &c->pools[pi];
        const nw_spool_t *p = pc->p;
        if (p->replicas < 0)
            continue;
        int64_t want = p->static_want;
        if (want < 0) {
            int64_t have = 0;
            for (size_t n = 0; n < c->s->nnodes; n++)
                have += c->s->nodes[n].pool && strcmp(c->s->nodes[n].pool, p->name) == 0;
            want = p->replicas - have;
        }
        if (want > pc->nodes_left)
            want = pc->nodes_left; /* limits.nodes */
        bool any = false;
        for (int w = 0; w < c->nw; w++)
            any |= pc->types[w] != 0;
        for (int64_t k = 0; any && k < want; k++) {
            if (c->nclaims == c->cclaims) {
                int n = c->cclaims ? c->cclaims * 2 : 16;
                claim_t *nc = realloc(c->claims, (size_t)n * sizeof *nc);
                if (nc)
                    c->claims = nc;
                int *no = realloc(c->corder, (size_t)n * sizeof(int));
                if (no)
                    c->corder = no;
                if (!nc || !no)
                    return NW_ENOMEM;
                c->cclaims = n;
            }
            claim_t *cl = &c->claims[c->nclaims];
            memset(cl, 0, sizeof *cl);
            cl->pool = pc->idx;
            cl->idx = c->nclaims;
            cl->is_static = true;
            cl->bits = calloc((size_t)c->nw, sizeof(word_t));
            if (!cl->bits || nw_requirements_copy(&cl->reqs, &p->reqs) != NW_OK) {
                free(cl->bits);
                nw_requirements_cleanup(&cl->reqs);
                return NW_ENOMEM;
            }
            c->corder[c->nclaims] = cl->idx;
            c->nclaims++;
            memcpy(cl->bits, pc->types, (size_t)c->nw * sizeof(word_t));
            cl->zmask = zmask_of(c, &p->reqs);
            /* the static template relaxes minValues whatever the policy
             * (GetStaticNodeClaimTemplate) */
            if (p->has_min_values)
                cl->relaxed = min_values_relax(c, &cl->reqs, cl->bits);
            nw_solve_claims_stats(c, cl, pc);
            pc->nodes_left--;
        }
    }
    return NW_OK;
}
