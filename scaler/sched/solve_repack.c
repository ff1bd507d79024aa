/* scaler/sched/solve_repack.c — the provisioning simulation (scaler/sched/solve.c): the re-pack of
 * interchangeable claims (opts.repack). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/wellknown.h"
#include "scaler/sched/solve_int.h"

/* ---- nw_solve_repack_rebalance: re-pack groups of interchangeable claims (opts.repack)
 * ----------- */
/*
 * The placement above is Karpenter's: each claim takes pods until only the largest
 * types still hold them, then launches the cheapest of those. With pods of one shape
 * that ends on the biggest type whatever its balance (18 pods of 3.5 CPU / 28 Gi fill
 * a 128-vCPU / 512-GiB type at half its CPU). Afterwards, claims that are
 * interchangeable — same pool, same accumulated requirements, same zones, no
 * hostname-level topology on or against their pods, no accelerator pods, a pool
 * without limits or minValues — are pooled and re-packed (first-fit decreasing) onto
 * the one type that costs least for them, each resulting claim then keeping every
 * type that holds its own pods (so nw_solve_finalize right-sizes the last ones). The re-pack
 * is kept only when it is cheaper than the claims it replaces.
 */
#define REBALANCE_CANDIDATES 12
/* bins up to which a pod is costed against every bin, and pairs of bins are merged */
#define REPACK_SCAN_BINS 64

static bool req_equal(const nw_req_t *a, const nw_req_t *b)
{
    if (strcmp(a->key, b->key) != 0 || a->complement != b->complement || a->nvalues != b->nvalues ||
        a->has_gte != b->has_gte || a->has_lte != b->has_lte || (a->has_gte && a->gte != b->gte) ||
        (a->has_lte && a->lte != b->lte) || a->min_values != b->min_values)
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
        if (c->s->classes[p->cls].wants_accel || p->nhostports)
            return false;
        for (int k = 0; k < p->ntcs; k++)
            if (c->s->groups[p->tcs[k].group].hostname)
                return false;
        const pstate_t *st = &c->ps[pod];
        for (int k = 0; k < st->nsel; k++)
            if (c->s->groups[st->selgroups[k]].hostname)
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

/* The group's types cheapest first, the lower index first among equal prices, so that the
 * first that holds a need is the one a scan of the bits by index keeping only a strictly
 * lower price would find (tprice_t: solve_int.h). */
int nw_solve_repack_cmp_tprice(const void *a, const void *b)
{
    const tprice_t *x = a, *y = b;
    if (x->price != y->price)
        return x->price < y->price ? -1 : 1;
    return x->t - y->t;
}

/* The types of bits priced below 1e300 into out, cheapest first; their number. */
static int sort_by_price(const ctx_t *c, const pctx_t *pc, const word_t *bits, tprice_t *out)
{
    int n = 0;
    FOR_BITS(bits, c->nw, t)
    {
        if (pc->price[t] < 1e300)
            out[n++] = (tprice_t){.price = pc->price[t], .t = t};
    }
    qsort(out, (size_t)n, sizeof *out, nw_solve_repack_cmp_tprice);
    return n;
}

/* The cheapest of the n sorted types that holds need: its index (-1 if none). */
static int cheapest_type(const ctx_t *c, const pctx_t *pc, const tprice_t *sorted, int n,
                         const nw_sched_res_t *need)
{
    for (int i = 0; i < n; i++)
        if (fits(need, &pc->avail[sorted[i].t], c->nres))
            return sorted[i].t;
    return -1;
}

static bool same_req(const nw_sched_res_t *a, const nw_sched_res_t *b, int nres)
{
    for (int k = 0; k < nres; k++)
        if (a->v[k] != b->v[k])
            return false;
    return true;
}

/* First-fit decreasing of pods onto bins of type t: bin index per pod in bin_of,
 * the bins' usage in used; returns the bin count (-1 when a pod does not fit t). */
static int ffd(const ctx_t *c, const pctx_t *pc, int t, pkey_t *order, int n, nw_sched_res_t *used,
               int *bin_of)
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
    const nw_sched_res_t *last_r = NULL;
    int last_b = 0;
    for (int i = 0; i < n; i++) {
        const nw_sched_res_t *r = &c->s->pods[order[i].pod].req;
        /* the bins before the one the previous pod of the same requests went to did not
         * hold it and have not changed since: they do not hold this one either */
        int b = last_r && same_req(last_r, r, c->nres) ? last_b : 0;
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
        last_r = r;
        last_b = b;
    }
    return nb;
}

static NW_MUST_USE nw_rc_t claim_slot(ctx_t *c, int *idx)
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

/* A group of interchangeable claims being re-packed: its pool, the types every pod allows,
 * its pods (order: n of them, their total), the candidate types, and the working and best
 * first-fit decreasing packings. */
typedef struct {
    const pctx_t *pc;
    word_t *compat;
    pkey_t *order, *best_order;
    int *bin_of, *best_bin;
    nw_sched_res_t *used, *best_used;
    cand_t *cands;
    int *btype;    /* bestfit_cost: each bin's type */
    double *price; /* each bin's cheapest price */
    /* bestfit_cost: per bin, the cheapest type holding it with the current pod's requests
     * added and its price, while grown_ok (reset when the bin or the requests change) */
    int *grown_t;
    double *grown_price;
    bool *grown_ok;
    int *free_bins; /* bestfit_cost: the bins whose type still holds the pod, by index */
    int nfree;
    double *free_slack; /* each bin's slack with the pod, while in free_bins */
    tprice_t *by_price; /* compat's types, cheapest first (nbp of them) */
    int nbp;
    int n;
    nw_sched_res_t total;
} group_t;

/* The group's pods into order and their total; compat: the types every pod's requirements
 * allow (and the pinned zone offers). */
static NW_MUST_USE nw_rc_t gather_pods(ctx_t *c, group_t *g, const int *members, int nm)
{
    const pctx_t *pc = g->pc;
    const claim_t *first = &c->claims[members[0]];
    word_t *compat = g->compat;
    /* types every pod's requirements allow (and the pinned zone offers) */
    memcpy(compat, pc->types, (size_t)c->nw * sizeof(word_t));
    int z = nw_solve_claims_single_zone(first->zmask);
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
            variant_t *v = nw_solve_prep_variant_get(c, pod);
            if (!v)
                return NW_ENOMEM;
            const word_t *vb = &v->bits[(size_t)pc->idx * (size_t)c->nw];
            for (int w = 0; w < c->nw; w++)
                compat[w] &= vb[w];
            for (int r = 0; r < c->nres; r++)
                total.v[r] += c->s->pods[pod].req.v[r];
            g->order[n++].pod = pod;
        }
    }
    g->total = total;
    g->n = n;
    return NW_OK;
}

/* The price of the cheapest type of the group's that holds need, 1e300 if none. */
static double cheapest_fit(const ctx_t *c, const group_t *g, const nw_sched_res_t *need)
{
    int t = cheapest_type(c, g->pc, g->by_price, g->nbp, need);
    return t < 0 ? 1e300 : g->pc->price[t];
}

/* The candidate types into g->cands by their fractional lower bound on the group; their
 * number. */
static int rank_candidates(const ctx_t *c, group_t *g)
{
    const pctx_t *pc = g->pc;
    const nw_sched_res_t total = g->total;
    cand_t *cands = g->cands;
    int nc = 0;
    FOR_BITS(g->compat, c->nw, t)
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
    return nc;
}

/* Whether type nt holds a bin's usage used with r added. */
static bool holds_with(const ctx_t *c, const pctx_t *pc, const nw_sched_res_t *used,
                       const nw_sched_res_t *r, int nt)
{
    for (int k = 0; k < c->nres; k++)
        if (used->v[k] + r->v[k] > pc->avail[nt].v[k])
            return false;
    return true;
}

/* The bin's slack with r added in type nt: the free shares left, summed. */
static double slack_with(const ctx_t *c, const pctx_t *pc, const nw_sched_res_t *used,
                         const nw_sched_res_t *r, int nt)
{
    double slack = 0;
    for (int k = 0; k < c->nres; k++)
        if (pc->avail[nt].v[k] > 0)
            slack += 1.0 - (double)(used->v[k] + r->v[k]) / (double)pc->avail[nt].v[k];
    return slack;
}

/* Bin b changed (or r did): it stays in, joins or leaves g->free_bins (the bins whose type
 * still holds r, by index) and its slack with r is taken again. */
static void free_bin_update(const ctx_t *c, group_t *g, const nw_sched_res_t *r, int b)
{
    int i = 0;
    while (i < g->nfree && g->free_bins[i] < b)
        i++;
    bool in = i < g->nfree && g->free_bins[i] == b;
    if (!holds_with(c, g->pc, &g->used[b], r, g->btype[b])) {
        if (in)
            memmove(&g->free_bins[i], &g->free_bins[i + 1],
                    (size_t)(g->nfree - i - 1) * sizeof(int));
        g->nfree -= in;
        return;
    }
    if (!in) {
        memmove(&g->free_bins[i + 1], &g->free_bins[i], (size_t)(g->nfree - i) * sizeof(int));
        g->free_bins[i] = b;
        g->nfree++;
    }
    g->free_slack[b] = slack_with(c, g->pc, &g->used[b], r, g->btype[b]);
}

/* Without a bin whose type still holds r (and few bins): the bin whose cheapest type grows
 * least with r (the emptier after it among equals), its new type and price; -1 if none. */
static int grown_bin(const ctx_t *c, group_t *g, const nw_sched_res_t *r, int nb, double *inc_out,
                     double *new_out, int *t_out)
{
    const pctx_t *pc = g->pc;
    int best = -1;
    double best_inc = 1e300, best_slack = 1e300;
    for (int b = 0; b < nb; b++) {
        if (!g->grown_ok[b]) {
            nw_sched_res_t m = g->used[b];
            for (int k = 0; k < c->nres; k++)
                m.v[k] += r->v[k];
            g->grown_t[b] = cheapest_type(c, pc, g->by_price, g->nbp, &m);
            g->grown_ok[b] = true;
        }
        int nt = g->grown_t[b];
        if (nt < 0)
            continue;
        double inc = pc->price[nt] - g->price[b];
        double slack = slack_with(c, pc, &g->used[b], r, nt);
        if (inc < best_inc - 1e-12 || (inc <= best_inc + 1e-12 && slack < best_slack)) {
            best = b;
            best_inc = inc;
            best_slack = slack;
            *new_out = pc->price[nt];
            *t_out = nt;
        }
    }
    *inc_out = best_inc;
    return best;
}

/* Best fit by cost: pods largest first (by their share of type t, the group's biggest
 * candidate), each into the bin whose cheapest type grows least for it (a bin its type
 * still holds it in costs nothing; among those the fullest), else into a new bin of the
 * cheapest type that holds it alone. Unlike first-fit decreasing onto one type, bins
 * follow the pods' shapes (CPU-heavy pods on compute types, memory-heavy on memory
 * types). Each bin's cheapest price goes to g->price (n of them at most). The bin count.
 *
 * Pods of one shape come one after the other (sorted by their share), and placing a pod
 * changes one bin: the bins whose type holds the shape (g->free_bins, with their slack),
 * each bin's cheapest type with the pod added (g->grown_*) and the cheapest type that
 * holds the pod alone are kept from one pod to the next and taken again for the bin that
 * changed, or for all when the shape does. */
static int bestfit_cost(const ctx_t *c, group_t *g, int t)
{
    const pctx_t *pc = g->pc;
    const nw_sched_res_t *av = &pc->avail[t];
    int n = g->n;
    for (int i = 0; i < n; i++) {
        const nw_sched_res_t *r = &c->s->pods[g->order[i].pod].req;
        double key = 0;
        for (int k = 0; k < c->nres; k++)
            if (av->v[k] > 0 && (double)r->v[k] / (double)av->v[k] > key)
                key = (double)r->v[k] / (double)av->v[k];
        g->order[i].key = key;
    }
    qsort(g->order, (size_t)n, sizeof *g->order, cmp_pkey);
    int nb = 0;
    const nw_sched_res_t *last_r = NULL;
    double alone = 1e300;
    int at = -1;
    g->nfree = 0;
    for (int i = 0; i < n; i++) {
        const nw_sched_res_t *r = &c->s->pods[g->order[i].pod].req;
        if (!last_r || !same_req(last_r, r, c->nres)) {
            at = cheapest_type(c, pc, g->by_price, g->nbp, r);
            alone = at < 0 ? 1e300 : pc->price[at];
            memset(g->grown_ok, 0, (size_t)nb * sizeof *g->grown_ok);
            g->nfree = 0;
            for (int b = 0; b < nb; b++)
                free_bin_update(c, g, r, b);
            last_r = r;
        }
        int best = -1, best_t = -1;
        double best_inc = 1e300, best_new = 0;
        if (g->nfree > 0) {
            /* a bin whose type still holds the pod costs nothing: the fullest of those
             * (increments are never negative) */
            double best_slack = 1e300;
            for (int j = 0; j < g->nfree; j++) {
                int b = g->free_bins[j];
                if (g->free_slack[b] < best_slack) {
                    best = b;
                    best_slack = g->free_slack[b];
                }
            }
            best_inc = 0;
            best_new = g->price[best];
            best_t = g->btype[best];
        } else if (nb <= REPACK_SCAN_BINS) {
            best = grown_bin(c, g, r, nb, &best_inc, &best_new, &best_t);
        }
        if (best < 0 || (at >= 0 && alone < best_inc - 1e-12)) {
            if (at < 0)
                return -1;
            memset(&g->used[nb], 0, sizeof g->used[nb]);
            best = nb++;
            best_new = alone;
            best_t = at;
        }
        for (int k = 0; k < c->nres; k++)
            g->used[best].v[k] += r->v[k];
        g->price[best] = best_new;
        g->btype[best] = best_t;
        g->grown_ok[best] = false;
        free_bin_update(c, g, r, best);
        g->bin_of[i] = best;
    }
    return nb;
}

/* Merge pairs of bins whose union one type holds for less than the two (bins of
 * best_used/best_bin, prices in price): fewer nodes for less money. Small packings only
 * (the pairs are all tried). The new bin count. */
static int merge_bins(const ctx_t *c, group_t *g, int nb, double *price)
{
    if (nb > REPACK_SCAN_BINS)
        return nb;
    bool merged = true;
    while (merged) {
        merged = false;
        for (int a = 0; a < nb && !merged; a++)
            for (int b = a + 1; b < nb && !merged; b++) {
                nw_sched_res_t m = g->best_used[a];
                for (int k = 0; k < c->nres; k++)
                    m.v[k] += g->best_used[b].v[k];
                double p = cheapest_fit(c, g, &m);
                if (p >= price[a] + price[b] - 1e-9)
                    continue;
                /* b into a; the last bin into b */
                g->best_used[a] = m;
                price[a] = p;
                for (int i = 0; i < g->n; i++)
                    if (g->best_bin[i] == b)
                        g->best_bin[i] = a;
                nb--;
                if (b != nb) {
                    g->best_used[b] = g->best_used[nb];
                    price[b] = price[nb];
                    for (int i = 0; i < g->n; i++)
                        if (g->best_bin[i] == nb)
                            g->best_bin[i] = b;
                }
                merged = true;
            }
    }
    return nb;
}

/* Keep the working packing (order, bin_of, used: nb bins costing cost) as the best when
 * it is: cheaper by 1 %, or within 1 % with fewer nodes, or as many nodes for less. */
static void keep_if_better(group_t *g, int nb, double cost, double *best, int *best_nb)
{
    bool better = *best_nb < 0 || cost < *best * 0.99 || (cost <= *best * 1.01 && nb < *best_nb) ||
                  (nb == *best_nb && cost < *best);
    if (!better)
        return;
    *best = cost;
    *best_nb = nb;
    memcpy(g->best_order, g->order, (size_t)g->n * sizeof *g->order);
    memcpy(g->best_bin, g->bin_of, (size_t)g->n * sizeof(int));
    memcpy(g->best_used, g->used, (size_t)nb * sizeof *g->used);
}

/* The cheapest packing found: first-fit decreasing onto each of the best candidates, and
 * best fit by cost, then pairs of bins merged where one type holds both for less; it goes
 * to best_order, best_bin and best_used. Its bin count, -1 when it does not beat the nm
 * claims costing current: it must be 1 % cheaper, or cheaper with no more nodes. */
static int search_best(const ctx_t *c, group_t *g, int nc, double current, int nm)
{
    const pctx_t *pc = g->pc;
    const cand_t *cands = g->cands;
    int n = g->n;
    double best = 1e300;
    int best_nb = -1, tried = 0, big = -1;
    for (int i = 0; i < nc && tried < REBALANCE_CANDIDATES; i++) {
        if (big < 0 || pc->avail[cands[i].t].v[NW_SR_CPU] > pc->avail[big].v[NW_SR_CPU])
            big = cands[i].t;
        if (cands[i].bound >= current || cands[i].bound >= best * 1.01)
            break;
        int nb = ffd(c, pc, cands[i].t, g->order, n, g->used, g->bin_of);
        if (nb < 0)
            continue;
        tried++;
        double cost = 0;
        for (int b = 0; b < nb && cost < current; b++)
            cost += cheapest_fit(c, g, &g->used[b]);
        if (cost < current)
            keep_if_better(g, nb, cost, &best, &best_nb);
    }
    for (int i = 0; i < nc; i++)
        if (big < 0 || pc->avail[cands[i].t].v[NW_SR_CPU] > pc->avail[big].v[NW_SR_CPU])
            big = cands[i].t;
    if (big >= 0) {
        int nb = bestfit_cost(c, g, big);
        double cost = 0;
        for (int b = 0; b < nb; b++)
            cost += g->price[b];
        if (nb > 0 && cost < current)
            keep_if_better(g, nb, cost, &best, &best_nb);
    }
    if (best_nb < 0)
        return -1;
    for (int b = 0; b < best_nb; b++)
        g->price[b] = cheapest_fit(c, g, &g->best_used[b]);
    best_nb = merge_bins(c, g, best_nb, g->price);
    best = 0;
    for (int b = 0; b < best_nb; b++)
        best += g->price[b];
    if (best < current * 0.99 || (best < current - 1e-9 && best_nb <= nm))
        return best_nb;
    return -1;
}

/* The group's claims become best_nb claims (extra slots emptied), each with its bin's pods
 * and every type that holds them. */
static NW_MUST_USE nw_rc_t rebuild_group(ctx_t *c, const group_t *g, const int *members, int nm,
                                         int best_nb)
{
    const pctx_t *pc = g->pc;
    nw_rc_t rc;
    int *slots = calloc((size_t)(best_nb > nm ? best_nb : nm), sizeof(int));
    if (!slots)
        return NW_ENOMEM;
    for (int i = 0; i < nm; i++)
        slots[i] = members[i];
    for (int b = nm; b < best_nb; b++) {
        if ((rc = claim_slot(c, &slots[b])) != NW_OK) {
            free(slots);
            return rc;
        }
        claim_t *cl = &c->claims[slots[b]];
        const claim_t *first = &c->claims[members[0]]; /* claims may have moved */
        cl->pool = first->pool;
        cl->zmask = first->zmask;
        cl->bits = calloc((size_t)c->nw, sizeof(word_t));
        if (!cl->bits || nw_requirements_copy(&cl->reqs, &first->reqs) != NW_OK) {
            free(slots);
            return NW_ENOMEM;
        }
    }
    rc = NW_OK;
    for (int b = 0; b < (best_nb > nm ? best_nb : nm); b++) {
        claim_t *cl = &c->claims[slots[b]];
        cl->npods = 0;
        if (b >= best_nb)
            continue;
        cl->used = g->best_used[b];
        nw_solve_claims_filter_fit(c, pc, g->compat, cl->bits, &cl->used);
        for (int i = 0; i < g->n; i++)
            if (g->best_bin[i] == b &&
                (rc = nw_solve_claims_add_pod(cl, g->best_order[i].pod)) != NW_OK)
                break;
        if (rc != NW_OK)
            break;
        nw_solve_claims_stats(c, cl, pc);
    }
    free(slots);
    return rc;
}

static NW_MUST_USE nw_rc_t rebalance_group(ctx_t *c, const int *members, int nm)
{
    const claim_t *first = &c->claims[members[0]];
    group_t g = {.pc = pool_ctx(c, first->pool)};
    int npods = 0;
    double current = 0;
    for (int i = 0; i < nm; i++) {
        npods += c->claims[members[i]].npods;
        current += c->claims[members[i]].minprice;
    }
    g.compat = calloc((size_t)c->nw, sizeof(word_t));
    g.order = calloc((size_t)npods, sizeof *g.order);
    g.best_order = calloc((size_t)npods, sizeof *g.best_order);
    g.bin_of = calloc((size_t)npods, sizeof(int));
    g.best_bin = calloc((size_t)npods, sizeof(int));
    g.used = calloc((size_t)npods, sizeof *g.used);
    g.best_used = calloc((size_t)npods, sizeof *g.best_used);
    g.cands = calloc((size_t)c->nt + 1, sizeof *g.cands);
    g.btype = calloc((size_t)npods, sizeof *g.btype);
    g.price = calloc((size_t)npods, sizeof *g.price);
    g.grown_t = calloc((size_t)npods, sizeof *g.grown_t);
    g.grown_price = calloc((size_t)npods, sizeof *g.grown_price);
    g.grown_ok = calloc((size_t)npods, sizeof *g.grown_ok);
    g.by_price = calloc((size_t)c->nt + 1, sizeof *g.by_price);
    g.free_bins = calloc((size_t)npods, sizeof *g.free_bins);
    g.free_slack = calloc((size_t)npods, sizeof *g.free_slack);
    nw_rc_t rc = NW_ENOMEM;
    if (!g.compat || !g.order || !g.best_order || !g.bin_of || !g.best_bin || !g.used ||
        !g.best_used || !g.cands || !g.btype || !g.price || !g.grown_t || !g.grown_price ||
        !g.grown_ok || !g.by_price || !g.free_bins || !g.free_slack)
        goto out;
    if ((rc = gather_pods(c, &g, members, nm)) != NW_OK)
        goto out;
    g.nbp = sort_by_price(c, g.pc, g.compat, g.by_price);
    int nc = rank_candidates(c, &g);
    int best_nb = search_best(c, &g, nc, current, nm);
    rc = best_nb < 0 ? NW_OK : rebuild_group(c, &g, members, nm, best_nb);
out:
    free(g.compat);
    free(g.order);
    free(g.best_order);
    free(g.bin_of);
    free(g.best_bin);
    free(g.used);
    free(g.best_used);
    free(g.cands);
    free(g.btype);
    free(g.price);
    free(g.grown_t);
    free(g.grown_price);
    free(g.grown_ok);
    free(g.by_price);
    free(g.free_bins);
    free(g.free_slack);
    return rc;
}

nw_rc_t nw_solve_repack_rebalance(ctx_t *c)
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

/* ---- for solve_split.c ---------------------------------------------------------------- */

nw_rc_t nw_solve_repack_claim_slot(ctx_t *c, int *idx)
{
    return claim_slot(c, idx);
}

bool nw_solve_repack_alike(const claim_t *a, const claim_t *b)
{
    return a->pool == b->pool && a->zmask == b->zmask && reqs_equal(&a->reqs, &b->reqs);
}
