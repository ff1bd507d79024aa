/* scaler/sched/solve_split.c — the provisioning simulation (scaler/sched/solve.c): after the
 * re-pack of interchangeable claims (solve_repack.c), the pods that nothing ties to their
 * node are re-packed out of the claims that hold tied pods too (opts.repack). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaler/sched/solve_int.h"

/*
 * The re-pack of solve_repack.c leaves alone every claim that holds a pod under a
 * hostname-level constraint (anti-affinity, affinity or spread over kubernetes.io/hostname,
 * on the pod or selecting it): such a claim is not interchangeable with another. But
 * Karpenter's greedy placement also fills those claims with pods that nothing ties there,
 * and their requests then choose the claim's type: in bench/scaleout's *wide* shape 32
 * claims each hold one pod of each of six hostname-constrained Deployments (5.5 vCPU,
 * 8.4 GiB) and 10-11 unconstrained pods (11-13 vCPU, 128-207 GiB), so each is an r6a.8xlarge
 * that the tied pods alone would not need.
 *
 * Here each such claim keeps its tied pods (it stays the node those constraints were
 * counted on) and its free pods are packed again, with the free pods of the other claims
 * of its group (same pool, same accumulated requirements, same zones) and the group's
 * interchangeable claims; a claim with tied pods is a bin that starts with them. Several
 * packings are tried (split_search), each settled as a consolidation pass would settle it
 * (settle), and the cheapest with no more claims than the group had is kept when it costs
 * less than the group's claims as they were: where the constraints force a node per pod,
 * the node count stays what they force. A pod is free when it has no hostname-level
 * constraint, none selects it, it has no host ports and asks for no accelerator, and any
 * other topology of its is zonal on a claim pinned to one zone (it stays in that zone, so
 * every zonal count is unchanged).
 */
/* groups with more claims than this are left as they are (the pods are costed against
 * every claim) */
#define SPLIT_MAX_MEMBERS 128

static const pctx_t *split_pool_ctx(const ctx_t *c, int idx)
{
    for (int i = 0; i < c->npools; i++)
        if (c->pools[i].idx == idx)
            return &c->pools[i];
    return NULL;
}

/* Can pod leave its claim (pinned to one zone when one_zone) for another of the same pool,
 * zones and requirements without any constraint noticing? */
static bool pod_free(const ctx_t *c, int pod, bool one_zone)
{
    const nw_spod_t *p = &c->s->pods[pod];
    if (c->s->classes[p->cls].wants_accel || p->nhostports)
        return false;
    for (int k = 0; k < p->ntcs; k++)
        if (c->gkey[p->tcs[k].group] != 0 || !one_zone)
            return false;
    const pstate_t *st = &c->ps[pod];
    for (int k = 0; k < st->nsel; k++)
        if (c->gkey[st->selgroups[k]] != 0 || !one_zone)
            return false;
    return true;
}

/* A claim's part here: 0 none, 1 every pod free (interchangeable), 2 tied and free pods
 * (a seed: it keeps the tied ones). */
static int claim_part(const ctx_t *c, const claim_t *cl)
{
    const pctx_t *pc = split_pool_ctx(c, cl->pool);
    if (!pc || pc->p->has_min_values || pc->p->has_node_limit || cl->npods == 0 || cl->is_static)
        return 0;
    for (int k = 0; k < c->nres; k++)
        if (pc->p->has_limits[k])
            return 0;
    bool one_zone = nw_solve_claims_single_zone(cl->zmask) >= 0;
    int nfree = 0;
    for (int i = 0; i < cl->npods; i++)
        nfree += pod_free(c, cl->pods[i], one_zone);
    if (nfree == 0)
        return 0;
    return nfree == cl->npods ? 1 : 2;
}

/* A group being split: its claims (members, the seeds first), the types its requirements and
 * zones allow (allowed), those every free pod allows too (compat), per seed the types its
 * tied pods allow (seedbits) and those with the free pods' too (seedmix); the free pods
 * (pods, largest first), and the packing: each pod's bin, each bin's usage, cheapest price
 * and its type. Bins 0..nseed-1 are the seeds. */
typedef struct {
    const pctx_t *pc;
    int *members;
    int nm, nseed;
    word_t *allowed, *compat, *seedbits, *seedmix;
    int *pods;
    int npods;
    int *bin_of;
    nw_sched_res_t *used;
    double *price;
    int *btype;
    bool *mixed; /* per seed: took a free pod */
    double current;
    int *byprice; /* the allowed types with a price, cheapest first */
    int nbyprice;
} split_t;

/* The cheapest type of bits that holds need (its index in *t, -1 none); 1e300 if none. The
 * group's types are scanned by price (byprice), so the first that fits is the one. */
static double split_cheapest(const ctx_t *c, const split_t *g, const word_t *bits,
                             const nw_sched_res_t *need, int *t)
{
    for (int i = 0; i < g->nbyprice; i++) {
        int u = g->byprice[i];
        if (bit_get(bits, u) && fits(need, &g->pc->avail[u], c->nres)) {
            *t = u;
            return g->pc->price[u];
        }
    }
    *t = -1;
    return 1e300;
}

/* allowed: the pool's types in the group's zones whose labels and offerings its claims'
 * requirements allow; byprice: those with a price, cheapest first */
static NW_MUST_USE nw_rc_t split_allowed(const ctx_t *c, split_t *g)
{
    const pctx_t *pc = g->pc;
    const claim_t *first = &c->claims[g->members[0]];
    tprice_t *tp = malloc(((size_t)c->nt + 1) * sizeof *tp);
    if (!tp)
        return NW_ENOMEM;
    memset(g->allowed, 0, (size_t)c->nw * sizeof(word_t));
    g->nbyprice = 0;
    FOR_BITS(pc->types, c->nw, t)
    {
        const nw_sitype_t *it = &c->s->itypes[t];
        if (!nw_requirements_intersects(&it->reqs, &first->reqs, NULL) ||
            !nw_solve_prep_type_allows_offering(it, &first->reqs, pc->ct_allowed, first->zmask, c,
                                                pc->p->nodeclass))
            continue;
        g->allowed[t >> 6] |= 1ULL << (t & 63);
        if (pc->price[t] < 1e300)
            tp[g->nbyprice++] = (tprice_t){.t = t, .price = pc->price[t]};
    }
    qsort(tp, (size_t)g->nbyprice, sizeof *tp, nw_solve_repack_cmp_tprice);
    for (int i = 0; i < g->nbyprice; i++)
        g->byprice[i] = tp[i].t;
    free(tp);
    return NW_OK;
}

/* and into dst the types pod's requirement variant allows in the group's pool */
static NW_MUST_USE nw_rc_t and_variant(ctx_t *c, const split_t *g, int pod, word_t *dst)
{
    variant_t *v = nw_solve_prep_variant_get(c, pod);
    if (!v)
        return NW_ENOMEM;
    const word_t *vb = &v->bits[(size_t)g->pc->idx * (size_t)c->nw];
    for (int w = 0; w < c->nw; w++)
        dst[w] &= vb[w];
    return NW_OK;
}

/* The seeds' tied pods as their bins, the free pods of every member into pods; the current
 * cost. False when a seed's tied pods fit none of its types (left as they are). */
static NW_MUST_USE nw_rc_t split_gather(ctx_t *c, split_t *g, bool *ok)
{
    nw_rc_t rc;
    memcpy(g->compat, g->allowed, (size_t)c->nw * sizeof(word_t));
    g->npods = 0;
    g->current = 0;
    *ok = true;
    for (int i = 0; i < g->nm; i++) {
        const claim_t *cl = &c->claims[g->members[i]];
        bool one_zone = nw_solve_claims_single_zone(cl->zmask) >= 0;
        word_t *sb = i < g->nseed ? &g->seedbits[(size_t)i * (size_t)c->nw] : NULL;
        g->current += cl->minprice;
        if (sb) {
            memcpy(sb, g->allowed, (size_t)c->nw * sizeof(word_t));
            memset(&g->used[i], 0, sizeof g->used[i]);
        }
        for (int k = 0; k < cl->npods; k++) {
            int pod = cl->pods[k];
            bool free_pod = pod_free(c, pod, one_zone);
            if ((rc = and_variant(c, g, pod, free_pod ? g->compat : sb)) != NW_OK)
                return rc;
            if (free_pod) {
                g->pods[g->npods++] = pod;
                continue;
            }
            for (int r = 0; r < c->nres; r++)
                g->used[i].v[r] += c->s->pods[pod].req.v[r];
        }
        if (sb) {
            g->price[i] = split_cheapest(c, g, sb, &g->used[i], &g->btype[i]);
            g->mixed[i] = false;
            *ok &= g->btype[i] >= 0;
        }
    }
    for (int i = 0; i < g->nseed; i++) {
        const word_t *sb = &g->seedbits[(size_t)i * (size_t)c->nw];
        word_t *sm = &g->seedmix[(size_t)i * (size_t)c->nw];
        for (int w = 0; w < c->nw; w++)
            sm[w] = sb[w] & g->compat[w];
    }
    return NW_OK;
}

typedef struct {
    int pod;
    double key;
} share_t;

static int cmp_share(const void *a, const void *b)
{
    const share_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return x->pod - y->pod;
}

/* The free pods largest first: by their largest share of the group's biggest type. */
static NW_MUST_USE nw_rc_t split_sort(const ctx_t *c, split_t *g)
{
    int big = -1;
    FOR_BITS(g->compat, c->nw, t)
    {
        if (big < 0 || g->pc->avail[t].v[NW_SR_CPU] > g->pc->avail[big].v[NW_SR_CPU])
            big = t;
    }
    if (big < 0)
        return NW_OK;
    share_t *sh = malloc((size_t)g->npods * sizeof *sh);
    if (!sh)
        return NW_ENOMEM;
    const nw_sched_res_t *av = &g->pc->avail[big];
    for (int i = 0; i < g->npods; i++) {
        const nw_sched_res_t *r = &c->s->pods[g->pods[i]].req;
        sh[i] = (share_t){.pod = g->pods[i], .key = 0};
        for (int k = 0; k < c->nres; k++)
            if (av->v[k] > 0 && (double)r->v[k] / (double)av->v[k] > sh[i].key)
                sh[i].key = (double)r->v[k] / (double)av->v[k];
    }
    qsort(sh, (size_t)g->npods, sizeof *sh, cmp_share);
    for (int i = 0; i < g->npods; i++)
        g->pods[i] = sh[i].pod;
    free(sh);
    return NW_OK;
}

/* The bin b's types for a free pod: a seed's mixed set, else the free pods' */
static const word_t *bin_bits(const ctx_t *c, const split_t *g, int b)
{
    return b < g->nseed ? &g->seedmix[(size_t)b * (size_t)c->nw] : g->compat;
}

/* bins up to which a pod that fits no bin's type as it stands is costed against every bin
 * (a scan of the types each) */
#define SPLIT_SCAN_BINS 64

/* What it costs bin b to take need (its pods and one more): 0 when its type still holds
 * them, else the step to the cheapest type of its set that does (*nt that type, -1 none);
 * scan false: only the first. slack: the shares left free in *nt. */
static double bin_growth(const ctx_t *c, const split_t *g, int b, const nw_sched_res_t *need,
                         bool scan, int *nt, double *slack)
{
    const pctx_t *pc = g->pc;
    const word_t *bits = bin_bits(c, g, b);
    double np = g->price[b];
    *nt = g->btype[b];
    if (*nt < 0 || !bit_get(bits, *nt) || !fits(need, &pc->avail[*nt], c->nres)) {
        if (!scan) {
            *nt = -1;
            return 1e300;
        }
        np = split_cheapest(c, g, bits, need, nt);
        if (*nt < 0)
            return 1e300;
    }
    *slack = 0;
    for (int k = 0; k < c->nres; k++)
        if (pc->avail[*nt].v[k] > 0)
            *slack += 1.0 - (double)need->v[k] / (double)pc->avail[*nt].v[k];
    return np - g->price[b];
}

/* Place free pod i (of g->pods) into the bin whose cheapest type grows least for it (among
 * those with room as they stand when there are any; fullest first); a new bin of its own
 * when none takes it, or (eager) when that costs less. nb bins so far. The new bin count, -1
 * when the pod fits nowhere. */
static int place_free(const ctx_t *c, split_t *g, int i, int nb, bool eager)
{
    const nw_sched_res_t *r = &c->s->pods[g->pods[i]].req;
    int best = -1, best_t = -1;
    double best_inc = 1e300, best_slack = 1e300;
    for (int pass = 0; pass < 2 && best < 0; pass++) {
        if (pass == 1 && nb > SPLIT_SCAN_BINS)
            break;
        for (int b = 0; b < nb; b++) {
            nw_sched_res_t m = g->used[b];
            for (int k = 0; k < c->nres; k++)
                m.v[k] += r->v[k];
            int nt;
            double slack = 0, inc = bin_growth(c, g, b, &m, pass == 1, &nt, &slack);
            if (nt < 0)
                continue;
            if (inc < best_inc - 1e-12 || (inc <= best_inc + 1e-12 && slack < best_slack)) {
                best = b;
                best_inc = inc;
                best_slack = slack;
                best_t = nt;
            }
        }
    }
    int at;
    double alone = split_cheapest(c, g, g->compat, r, &at);
    if (best < 0 || (eager && at >= 0 && alone < best_inc - 1e-12)) {
        if (at < 0)
            return -1;
        memset(&g->used[nb], 0, sizeof g->used[nb]);
        g->price[nb] = 0;
        best = nb++;
        best_inc = alone;
        best_t = at;
    }
    for (int k = 0; k < c->nres; k++)
        g->used[best].v[k] += r->v[k];
    g->price[best] += best_inc;
    g->btype[best] = best_t;
    if (best < g->nseed)
        g->mixed[best] = true;
    g->bin_of[i] = best;
    return nb;
}

/* A claim slot at the end of c->claims (its index in *idx), empty, with the pool, zones and
 * requirements of claim tmpl. */
static NW_MUST_USE nw_rc_t split_new_claim(ctx_t *c, int tmpl, int *idx)
{
    nw_rc_t rc = nw_solve_repack_claim_slot(c, idx);
    if (rc != NW_OK)
        return rc;
    claim_t *cl = &c->claims[*idx];
    const claim_t *t = &c->claims[tmpl];
    cl->pool = t->pool;
    cl->zmask = t->zmask;
    cl->bits = calloc((size_t)c->nw, sizeof(word_t));
    if (!cl->bits || nw_requirements_copy(&cl->reqs, &t->reqs) != NW_OK)
        return NW_ENOMEM;
    return NW_OK;
}

/* Claim slot of bin b's pods (the seeds' tied pods stay), its usage, types and price. */
static NW_MUST_USE nw_rc_t refill_claim(ctx_t *c, const split_t *g, int slot, int b)
{
    claim_t *cl = &c->claims[slot];
    nw_rc_t rc;
    if (b < g->nseed) {
        int keep = 0;
        bool one_zone = nw_solve_claims_single_zone(cl->zmask) >= 0;
        for (int k = 0; k < cl->npods; k++)
            if (!pod_free(c, cl->pods[k], one_zone))
                cl->pods[keep++] = cl->pods[k];
        cl->npods = keep;
    } else {
        cl->npods = 0;
    }
    for (int i = 0; i < g->npods; i++)
        if (g->bin_of[i] == b && (rc = nw_solve_claims_add_pod(cl, g->pods[i])) != NW_OK)
            return rc;
    cl->used = g->used[b];
    const word_t *bits =
        b < g->nseed && !g->mixed[b] ? &g->seedbits[(size_t)b * (size_t)c->nw] : bin_bits(c, g, b);
    nw_solve_claims_filter_fit(c, g->pc, bits, cl->bits, &cl->used);
    nw_solve_claims_stats(c, cl, g->pc);
    return NW_OK;
}

/* The group's claims refilled from the packing of nb bins: the seeds keep their slots, the
 * other bins take the interchangeable members' slots, then new ones; slots left over are
 * emptied. */
static NW_MUST_USE nw_rc_t split_rebuild(ctx_t *c, const split_t *g, int nb)
{
    nw_rc_t rc;
    for (int b = 0; b < g->nseed; b++)
        if ((rc = refill_claim(c, g, g->members[b], b)) != NW_OK)
            return rc;
    int next = g->nseed;
    for (int b = g->nseed; b < nb; b++) {
        int slot;
        if (next < g->nm)
            slot = g->members[next++];
        else if ((rc = split_new_claim(c, g->members[0], &slot)) != NW_OK)
            return rc;
        if ((rc = refill_claim(c, g, slot, b)) != NW_OK)
            return rc;
    }
    for (; next < g->nm; next++)
        c->claims[g->members[next]].npods = 0;
    return NW_OK;
}

static void split_free(split_t *g)
{
    free(g->allowed);
    free(g->compat);
    free(g->seedbits);
    free(g->seedmix);
    free(g->pods);
    free(g->bin_of);
    free(g->used);
    free(g->price);
    free(g->btype);
    free(g->mixed);
    free(g->byprice);
}

/* A packing of the free pods: each one's bin, each bin's usage, price and type, which seeds
 * took free pods; nb bins costing cost. */
typedef struct {
    int *bin_of;
    nw_sched_res_t *used;
    double *price;
    int *btype;
    bool *mixed;
    int nb;
    double cost;
} packing_t;

static void packing_copy(packing_t *dst, const split_t *g, int nb, double cost)
{
    memcpy(dst->bin_of, g->bin_of, (size_t)g->npods * sizeof(int));
    memcpy(dst->used, g->used, (size_t)nb * sizeof *g->used);
    memcpy(dst->price, g->price, (size_t)nb * sizeof *g->price);
    memcpy(dst->btype, g->btype, (size_t)nb * sizeof *g->btype);
    memcpy(dst->mixed, g->mixed, (size_t)g->nseed * sizeof *g->mixed);
    dst->nb = nb;
    dst->cost = cost;
}

static void packing_restore(split_t *g, const packing_t *src)
{
    memcpy(g->bin_of, src->bin_of, (size_t)g->npods * sizeof(int));
    memcpy(g->used, src->used, (size_t)src->nb * sizeof *g->used);
    memcpy(g->price, src->price, (size_t)src->nb * sizeof *g->price);
    memcpy(g->btype, src->btype, (size_t)src->nb * sizeof *g->btype);
    memcpy(g->mixed, src->mixed, (size_t)g->nseed * sizeof *g->mixed);
}

/* The free pods placed from the seeds' start (seeds: their bins with only the tied pods),
 * eager or not (place_free); the bin count (-1 a pod fits nowhere), *cost their price. */
static int pack(const ctx_t *c, split_t *g, const packing_t *seeds, bool eager, double *cost)
{
    packing_restore(g, seeds);
    int nb = g->nseed;
    for (int i = 0; i < g->npods && nb >= 0; i++)
        nb = place_free(c, g, i, nb, eager);
    *cost = 0;
    for (int b = 0; b < nb; b++)
        *cost += g->price[b];
    return nb;
}

static bool packing_alloc(packing_t *p, size_t npods, size_t nbins, size_t nseed)
{
    p->bin_of = calloc(npods + 1, sizeof(int));
    p->used = calloc(nbins, sizeof *p->used);
    p->price = calloc(nbins, sizeof *p->price);
    p->btype = calloc(nbins, sizeof *p->btype);
    p->mixed = calloc(nseed + 1, sizeof *p->mixed);
    return p->bin_of && p->used && p->price && p->btype && p->mixed;
}

static void packing_free(packing_t *p)
{
    free(p->bin_of);
    free(p->used);
    free(p->price);
    free(p->btype);
    free(p->mixed);
}

/* First-fit onto type t from the seeds' start: each pod (largest first) into the first bin
 * where t still holds it (a seed's bin only when t is one of its types), else a new bin;
 * then each bin priced at the cheapest of its types that holds it. The bin count (-1 when a
 * pod or a bin fits nothing), *cost their price. */
static int ffd_onto(const ctx_t *c, split_t *g, const packing_t *seeds, int t, double *cost)
{
    const pctx_t *pc = g->pc;
    packing_restore(g, seeds);
    int nb = g->nseed;
    for (int i = 0; i < g->npods; i++) {
        const nw_sched_res_t *r = &c->s->pods[g->pods[i]].req;
        int b = 0;
        for (; b < nb; b++) {
            if (b < g->nseed && !bit_get(bin_bits(c, g, b), t))
                continue;
            bool ok = true;
            for (int k = 0; k < c->nres && ok; k++)
                ok = g->used[b].v[k] + r->v[k] <= pc->avail[t].v[k];
            if (ok)
                break;
        }
        if (b == nb) {
            if (!fits(r, &pc->avail[t], c->nres))
                return -1;
            memset(&g->used[nb++], 0, sizeof g->used[0]);
        }
        for (int k = 0; k < c->nres; k++)
            g->used[b].v[k] += r->v[k];
        if (b < g->nseed)
            g->mixed[b] = true;
        g->bin_of[i] = b;
    }
    *cost = 0;
    for (int b = 0; b < nb; b++) {
        const word_t *bits = b < g->nseed && !g->mixed[b] ? &g->seedbits[(size_t)b * (size_t)c->nw]
                                                          : bin_bits(c, g, b);
        g->price[b] = split_cheapest(c, g, bits, &g->used[b], &g->btype[b]);
        if (g->btype[b] < 0)
            return -1;
        *cost += g->price[b];
    }
    return nb;
}

typedef struct {
    int t;
    double bound;
} scand_t;

static int cmp_scand(const void *a, const void *b)
{
    const scand_t *x = a, *y = b;
    if (x->bound != y->bound)
        return x->bound < y->bound ? -1 : 1;
    return x->t - y->t;
}

/* The types of the free pods' set by the lower bound of their price on the free pods'
 * total, cheapest first, into cands; their number. */
static int split_candidates(const ctx_t *c, const split_t *g, scand_t *cands)
{
    nw_sched_res_t total;
    memset(&total, 0, sizeof total);
    for (int i = 0; i < g->npods; i++)
        for (int k = 0; k < c->nres; k++)
            total.v[k] += c->s->pods[g->pods[i]].req.v[k];
    int n = 0;
    FOR_BITS(g->compat, c->nw, t)
    {
        double frac = 0;
        for (int k = 0; k < c->nres && frac >= 0; k++) {
            if (total.v[k] <= 0)
                continue;
            if (g->pc->avail[t].v[k] <= 0)
                frac = -1;
            else if ((double)total.v[k] / (double)g->pc->avail[t].v[k] > frac)
                frac = (double)total.v[k] / (double)g->pc->avail[t].v[k];
        }
        if (frac >= 0 && g->pc->price[t] < 1e300)
            cands[n++] = (scand_t){.t = t, .bound = g->pc->price[t] * frac};
    }
    qsort(cands, (size_t)n, sizeof *cands, cmp_scand);
    return n;
}

/* Keep g's packing (nb bins costing cost, no more than the group's claims) in best when it
 * is better: 1 % cheaper, within 1 % with fewer bins, or as many bins for less. */
static void keep_better(const split_t *g, packing_t *best, int nb, double cost)
{
    if (nb < 0 || nb > g->nm)
        return;
    if (best->nb < 0 || cost < best->cost * 0.99 || (cost <= best->cost * 1.01 && nb < best->nb) ||
        (nb == best->nb && cost < best->cost))
        packing_copy(best, g, nb, cost);
}

/* ---- settle: what consolidation would do to the packing, done before it is made ---- */

/* packings up to which one is settled: bins, and bins × free pods (each round looks at
 * every pod of every bin against every other bin) */
#define SETTLE_MAX_BINS 128
#define SETTLE_MAX_WORK 65536

/* bin b's types for its pods as they are: a seed's own while it holds no free pod */
static const word_t *bin_set(const ctx_t *c, const split_t *g, int b)
{
    if (b < g->nseed && !g->mixed[b])
        return &g->seedbits[(size_t)b * (size_t)c->nw];
    return bin_bits(c, g, b);
}

/* A bin other than b (and not in skip) whose type as it stands also holds r (a seed's only
 * when that type is one of its mixed set); -1 none. The fullest such bin by the share r
 * would leave free is not sought: the first will do. */
static int room_elsewhere(const ctx_t *c, const split_t *g, int b, const nw_sched_res_t *r, int nb)
{
    for (int o = 0; o < nb; o++) {
        int t = g->btype[o];
        if (o == b || t < 0 || !bit_get(bin_bits(c, g, o), t))
            continue;
        bool ok = true;
        for (int k = 0; k < c->nres && ok; k++)
            ok = g->used[o].v[k] + r->v[k] <= g->pc->avail[t].v[k];
        if (ok)
            return o;
    }
    return -1;
}

/* Move free pod i from its bin to bin to (whose type holds it as it stands). */
static void move_pod(const ctx_t *c, split_t *g, int i, int to)
{
    const nw_sched_res_t *r = &c->s->pods[g->pods[i]].req;
    int from = g->bin_of[i];
    for (int k = 0; k < c->nres; k++) {
        g->used[from].v[k] -= r->v[k];
        g->used[to].v[k] += r->v[k];
    }
    g->bin_of[i] = to;
    if (to < g->nseed)
        g->mixed[to] = true;
    if (from < g->nseed) {
        bool any = false;
        for (int j = 0; j < g->npods && !any; j++)
            any = g->bin_of[j] == from;
        g->mixed[from] = any;
    }
}

/* Re-price bin b for its pods as they are (an empty bin that is not a seed costs nothing). */
static void reprice(const ctx_t *c, split_t *g, int b)
{
    bool empty = b >= g->nseed;
    for (int k = 0; k < c->nres && empty; k++)
        empty = g->used[b].v[k] == 0;
    if (empty) {
        g->price[b] = 0;
        g->btype[b] = -1;
        return;
    }
    g->price[b] = split_cheapest(c, g, bin_set(c, g, b), &g->used[b], &g->btype[b]);
}

/* Bin b (not a seed) emptied into the others' room as it stands, when all its pods fit there;
 * undone otherwise. */
static bool empty_bin(const ctx_t *c, split_t *g, int b, int nb, int *moved)
{
    int n = 0;
    for (int i = 0; i < g->npods; i++) {
        if (g->bin_of[i] != b)
            continue;
        int to = room_elsewhere(c, g, b, &c->s->pods[g->pods[i]].req, nb);
        if (to < 0) {
            for (int k = n - 1; k >= 0; k--) /* undo, newest first */
                move_pod(c, g, moved[2 * k], b);
            for (int k = 0; k < n; k++)
                reprice(c, g, moved[2 * k + 1]);
            return false;
        }
        move_pod(c, g, i, to);
        moved[2 * n] = i;
        moved[2 * n + 1] = to;
        n++;
    }
    for (int k = 0; k < n; k++)
        reprice(c, g, moved[2 * k + 1]);
    reprice(c, g, b);
    return n > 0;
}

/* One pod at a time out of bin b into another's room as it stands, where that lets b's type
 * get cheaper. */
static bool shrink_bin(const ctx_t *c, split_t *g, int b, int nb)
{
    bool any = false;
    for (int i = 0; i < g->npods; i++) {
        if (g->bin_of[i] != b)
            continue;
        const nw_sched_res_t *r = &c->s->pods[g->pods[i]].req;
        int to = room_elsewhere(c, g, b, r, nb);
        if (to < 0)
            continue;
        double before = g->price[b];
        int btype = g->btype[b];
        bool mixed = b < g->nseed && g->mixed[b];
        move_pod(c, g, i, to);
        reprice(c, g, b);
        if (g->btype[b] >= 0 || b >= g->nseed) {
            if (g->price[b] < before - 1e-9) {
                reprice(c, g, to);
                any = true;
                continue;
            }
        }
        move_pod(c, g, i, b); /* no cheaper: back */
        g->price[b] = before;
        g->btype[b] = btype;
        if (b < g->nseed)
            g->mixed[b] = mixed;
    }
    return any;
}

/* What a consolidation pass would find in the packing (nb bins), done here: bins of free pods
 * whose pods all fit in the others' room are emptied, and pods move where that lets their
 * bin's type get cheaper; the empty bins are dropped. The bin count; *cost its price. */
static int settle(const ctx_t *c, split_t *g, int nb, double *cost, int *moved)
{
    if (nb < 0 || nb > SETTLE_MAX_BINS || (long)nb * g->npods > SETTLE_MAX_WORK)
        return nb;
    bool again = true;
    for (int round = 0; again && round < 4; round++) {
        again = false;
        for (int b = nb - 1; b >= g->nseed; b--)
            if (g->btype[b] >= 0)
                again |= empty_bin(c, g, b, nb, moved);
        for (int b = 0; b < nb; b++)
            if (g->btype[b] >= 0 || b < g->nseed)
                again |= shrink_bin(c, g, b, nb);
    }
    int n = g->nseed;
    for (int b = g->nseed; b < nb; b++) {
        if (g->btype[b] < 0)
            continue;
        for (int i = 0; i < g->npods; i++)
            if (g->bin_of[i] == b)
                g->bin_of[i] = n;
        g->used[n] = g->used[b];
        g->price[n] = g->price[b];
        g->btype[n] = g->btype[b];
        n++;
    }
    *cost = 0;
    for (int b = 0; b < n; b++)
        *cost += g->price[b];
    return n;
}

/* The best of several packings of the free pods (keep_better), each settled: best fit by
 * cost with new bins only when no bin takes a pod and with a new bin whenever a node of its
 * own costs less than a bin's growth, and first-fit onto each of the SPLIT_CANDIDATES types
 * of the lowest bound. None with more bins than the group has claims. Into g; its bin count
 * (-1 none), *cost its price. */
#define SPLIT_CANDIDATES 12
static NW_MUST_USE nw_rc_t split_search(const ctx_t *c, split_t *g, int *nb, double *cost)
{
    size_t nbins = (size_t)g->npods + (size_t)g->nseed + 1;
    packing_t seeds = {0}, best = {0};
    scand_t *cands = calloc((size_t)c->nt + 1, sizeof *cands);
    int *moved = calloc(2 * (size_t)g->npods + 2, sizeof(int));
    nw_rc_t rc = NW_ENOMEM;
    if (!cands || !moved || !packing_alloc(&seeds, (size_t)g->npods, nbins, (size_t)g->nseed) ||
        !packing_alloc(&best, (size_t)g->npods, nbins, (size_t)g->nseed))
        goto out;
    packing_copy(&seeds, g, g->nseed, 0);
    best.nb = -1;
    double cc;
    int n = pack(c, g, &seeds, false, &cc);
    keep_better(g, &best, settle(c, g, n, &cc, moved), cc);
    n = pack(c, g, &seeds, true, &cc);
    keep_better(g, &best, settle(c, g, n, &cc, moved), cc);
    int nc = split_candidates(c, g, cands);
    for (int i = 0; i < nc && i < SPLIT_CANDIDATES; i++) {
        n = ffd_onto(c, g, &seeds, cands[i].t, &cc);
        keep_better(g, &best, settle(c, g, n, &cc, moved), cc);
    }
    *nb = best.nb;
    *cost = best.cost;
    if (best.nb >= 0)
        packing_restore(g, &best);
    rc = NW_OK;
out:
    free(cands);
    free(moved);
    packing_free(&seeds);
    packing_free(&best);
    return rc;
}

/* Split and re-pack one group (members: nseed seeds first, nm in all). */
static NW_MUST_USE nw_rc_t split_group(ctx_t *c, int *members, int nm, int nseed)
{
    split_t g = {.pc = split_pool_ctx(c, c->claims[members[0]].pool),
                 .members = members,
                 .nm = nm,
                 .nseed = nseed};
    int npods = 0;
    for (int i = 0; i < nm; i++)
        npods += c->claims[members[i]].npods;
    size_t nw = (size_t)c->nw, nbins = (size_t)npods + (size_t)nseed + 1;
    g.allowed = calloc(nw, sizeof(word_t));
    g.compat = calloc(nw, sizeof(word_t));
    g.seedbits = calloc(nw * (size_t)nseed, sizeof(word_t));
    g.seedmix = calloc(nw * (size_t)nseed, sizeof(word_t));
    g.pods = calloc((size_t)npods + 1, sizeof(int));
    g.bin_of = calloc((size_t)npods + 1, sizeof(int));
    g.used = calloc(nbins, sizeof *g.used);
    g.price = calloc(nbins, sizeof *g.price);
    g.btype = calloc(nbins, sizeof *g.btype);
    g.mixed = calloc((size_t)nseed + 1, sizeof *g.mixed);
    g.byprice = calloc((size_t)c->nt + 1, sizeof *g.byprice);
    nw_rc_t rc = NW_ENOMEM;
    if (!g.pc || !g.allowed || !g.compat || !g.seedbits || !g.seedmix || !g.pods || !g.bin_of ||
        !g.used || !g.price || !g.btype || !g.mixed || !g.byprice)
        goto out;
    bool ok;
    if ((rc = split_allowed(c, &g)) != NW_OK || (rc = split_gather(c, &g, &ok)) != NW_OK || !ok ||
        g.npods == 0)
        goto out;
    int nb = -1;
    double cost = 0;
    if ((rc = split_sort(c, &g)) != NW_OK || (rc = split_search(c, &g, &nb, &cost)) != NW_OK)
        goto out;
    if (nb >= 0 && nb <= nm && cost < g.current - 1e-9)
        rc = split_rebuild(c, &g, nb);
out:
    split_free(&g);
    return rc;
}

/* a claim's group key: its pool, zones and requirements hashed */
static uint64_t claim_key(const claim_t *cl)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)cl->pool ^ (cl->zmask * 0x9E3779B97F4A7C15ULL);
    for (size_t i = 0; i < cl->reqs.n; i++) {
        const nw_req_t *q = &cl->reqs.v[i];
        h = (h ^ nw_snapshot_hash(q->key)) * 1099511628211ULL;
        h = (h ^ (uint64_t)q->complement ^ ((uint64_t)q->nvalues << 1)) * 1099511628211ULL;
        for (size_t k = 0; k < q->nvalues; k++)
            h = (h ^ nw_snapshot_hash(q->values[k])) * 1099511628211ULL;
    }
    return h;
}

typedef struct {
    uint64_t key;
    int claim;
    int part;
} ckey_t;

static int cmp_ckey(const void *a, const void *b)
{
    const ckey_t *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->part != y->part)
        return y->part - x->part; /* seeds first */
    return x->claim - y->claim;
}

/* The claims of one run of equal keys (ks[0..n-1], seeds first) that are truly alike,
 * split group by group. */
static NW_MUST_USE nw_rc_t split_run(ctx_t *c, ckey_t *ks, int n, int *members)
{
    nw_rc_t rc = NW_OK;
    for (int i = 0; i < n && rc == NW_OK; i++) {
        if (ks[i].claim < 0 || ks[i].part != 2)
            continue;
        int nm = 0, nseed = 0;
        /* seeds, then the interchangeable claims, each alike the first seed */
        for (int pass = 2; pass >= 1; pass--)
            for (int j = i; j < n; j++) {
                if (ks[j].claim < 0 || ks[j].part != pass ||
                    !nw_solve_repack_alike(&c->claims[ks[i].claim], &c->claims[ks[j].claim]))
                    continue;
                members[nm++] = ks[j].claim;
                nseed += pass == 2;
                if (j != i)
                    ks[j].claim = -1;
            }
        ks[i].claim = -1;
        if (nm <= SPLIT_MAX_MEMBERS)
            rc = split_group(c, members, nm, nseed);
    }
    return rc;
}

nw_rc_t nw_solve_split(ctx_t *c)
{
    int n0 = c->nclaims, nk = 0;
    if (n0 == 0)
        return NW_OK;
    ckey_t *ks = calloc((size_t)n0, sizeof *ks);
    int *members = calloc((size_t)n0, sizeof(int));
    nw_rc_t rc = NW_ENOMEM;
    if (!ks || !members)
        goto out;
    bool any_seed = false;
    for (int i = 0; i < n0; i++) {
        int part = claim_part(c, &c->claims[i]);
        if (!part)
            continue;
        any_seed |= part == 2;
        ks[nk++] = (ckey_t){.key = claim_key(&c->claims[i]), .claim = i, .part = part};
    }
    rc = NW_OK;
    if (!any_seed)
        goto out;
    qsort(ks, (size_t)nk, sizeof *ks, cmp_ckey);
    for (int i = 0; i < nk && rc == NW_OK;) {
        int j = i;
        while (j < nk && ks[j].key == ks[i].key)
            j++;
        if (ks[i].part == 2)
            rc = split_run(c, ks + i, j - i, members);
        i = j;
    }
out:
    free(ks);
    free(members);
    return rc;
}
