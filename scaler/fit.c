/*
 * scaler/fit.c — minimal first-fit placement (see fit.h for what it does and does not do).
 */
#include "scaler/fit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/requirements.h"
#include "api/resources.h"
#include "api/taints.h"

#define GET(o, k) cJSON_GetObjectItemCaseSensitive((o), (k))

static const char *const ACCEL[] = {"nvidia.com/gpu", "amd.com/gpu", "aws.amazon.com/neuron",
                                    "aws.amazon.com/neuroncore", "habana.ai/gaudi"};

static nw_rc_t res_of(const cJSON *j, nw_resources_t *r, nw_err_t *err)
{
    nw_resources_init(r);
    if (!j || cJSON_IsNull(j))
        return NW_OK;
    return nw_resources_from_json(r, j, "resources", err);
}

static nw_rc_t pod_requests(const cJSON *pod, nw_resources_t *out, nw_err_t *err)
{
    nw_resources_init(out);
    const cJSON *spec = GET(pod, "spec");
    const cJSON *c;
    cJSON_ArrayForEach(c, GET(spec, "containers"))
    {
        nw_resources_t r;
        if (res_of(GET(GET(c, "resources"), "requests"), &r, err) != NW_OK ||
            nw_resources_add(out, &r, err) != NW_OK) {
            nw_resources_cleanup(&r);
            return NW_EINVAL;
        }
        nw_resources_cleanup(&r);
    }
    cJSON_ArrayForEach(c, GET(spec, "initContainers"))
    {
        nw_resources_t r;
        if (res_of(GET(GET(c, "resources"), "requests"), &r, err) != NW_OK ||
            nw_resources_max(out, &r, err) != NW_OK) {
            nw_resources_cleanup(&r);
            return NW_EINVAL;
        }
        nw_resources_cleanup(&r);
    }
    nw_quantity_t one = nw_quantity_from_milli(1000, NW_QTY_DECIMAL_SI), cur;
    if (!nw_resources_get(out, NW_RES_PODS, &cur))
        return nw_resources_set(out, NW_RES_PODS, one, err);
    return NW_OK;
}

cJSON *nw_fit_pod_requests(const cJSON *pod, nw_err_t *err)
{
    nw_resources_t r;
    if (pod_requests(pod, &r, err) != NW_OK) {
        nw_resources_cleanup(&r);
        return NULL;
    }
    cJSON *j = nw_resources_to_json(&r);
    nw_resources_cleanup(&r);
    return j;
}

cJSON *nw_fit_res_add(const cJSON *a, const cJSON *b)
{
    nw_resources_t ra, rb;
    cJSON *out = NULL;
    if (res_of(a, &ra, NULL) == NW_OK && res_of(b, &rb, NULL) == NW_OK &&
        nw_resources_add(&ra, &rb, NULL) == NW_OK)
        out = nw_resources_to_json(&ra);
    nw_resources_cleanup(&ra);
    nw_resources_cleanup(&rb);
    return out;
}

static int wants_accel(const nw_resources_t *r)
{
    for (size_t i = 0; i < sizeof ACCEL / sizeof *ACCEL; i++) {
        nw_quantity_t q;
        if (nw_resources_get(r, ACCEL[i], &q) && q.milli > 0)
            return 1;
    }
    return 0;
}

/* ---- parsed input ---- */

typedef struct {
    const char *zone, *ct;
    double price;
    int available;
} offer_t;

typedef struct {
    const char *name;
    nw_labels_t labels;
    nw_resources_t cap, alloc;
    int exotic;
    offer_t *offers;
    int noffers;
} itype_t;

typedef struct {
    const cJSON *obj;
    const char *name;
    int weight;
    nw_reqs_t reqs;     /* template requirements AND template labels */
    nw_labels_t labels; /* template labels + karpenter.sh/nodepool */
    nw_taints_t taints;
    nw_resources_t limits, used;
    int has_limits;
} pool_t;

typedef struct {
    const cJSON *obj;
    nw_reqs_t reqs;
    nw_tolerations_t tols;
    nw_resources_t req;
    int accel;
    int bad;
    char badmsg[640];
} pod_t;

typedef struct {
    const char *name;
    nw_labels_t labels;
    nw_taints_t taints;
    nw_resources_t alloc, used;
} bin_t;

typedef struct {
    int pool;
    nw_reqs_t reqs;
    nw_resources_t req;
    int accel;
    int *types; /* candidate itype indexes */
    int ntypes;
    int *pods;
    int npods, podcap;
} claim_t;

typedef struct {
    itype_t *it;
    int nit;
    pool_t *pools;
    int npools;
    pod_t *pods;
    int npods;
    bin_t *bins;
    int nbins;
    claim_t *claims;
    int nclaims, claimcap;
} st_t;

static void st_free(st_t *s)
{
    for (int i = 0; i < s->nit; i++) {
        nw_labels_cleanup(&s->it[i].labels);
        nw_resources_cleanup(&s->it[i].cap);
        nw_resources_cleanup(&s->it[i].alloc);
        free(s->it[i].offers);
    }
    for (int i = 0; i < s->npools; i++) {
        nw_reqs_cleanup(&s->pools[i].reqs);
        nw_labels_cleanup(&s->pools[i].labels);
        nw_taints_cleanup(&s->pools[i].taints);
        nw_resources_cleanup(&s->pools[i].limits);
        nw_resources_cleanup(&s->pools[i].used);
    }
    for (int i = 0; i < s->npods; i++) {
        nw_reqs_cleanup(&s->pods[i].reqs);
        nw_tolerations_cleanup(&s->pods[i].tols);
        nw_resources_cleanup(&s->pods[i].req);
    }
    for (int i = 0; i < s->nbins; i++) {
        nw_labels_cleanup(&s->bins[i].labels);
        nw_taints_cleanup(&s->bins[i].taints);
        nw_resources_cleanup(&s->bins[i].alloc);
        nw_resources_cleanup(&s->bins[i].used);
    }
    for (int i = 0; i < s->nclaims; i++) {
        nw_reqs_cleanup(&s->claims[i].reqs);
        nw_resources_cleanup(&s->claims[i].req);
        free(s->claims[i].types);
        free(s->claims[i].pods);
    }
    free(s->it);
    free(s->pools);
    free(s->pods);
    free(s->bins);
    free(s->claims);
}

static nw_rc_t parse_itypes(st_t *s, const cJSON *arr, nw_err_t *err)
{
    int n = cJSON_GetArraySize(arr);
    s->it = calloc((size_t)n + 1, sizeof *s->it);
    if (!s->it)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    const cJSON *t;
    cJSON_ArrayForEach(t, arr)
    {
        itype_t *it = &s->it[s->nit++];
        nw_labels_init(&it->labels);
        nw_resources_init(&it->cap);
        nw_resources_init(&it->alloc);
        const cJSON *name = GET(t, "name");
        if (!cJSON_IsString(name))
            return nw_err_set(err, NW_EINVAL, NULL, "itypes[%d].name: required", s->nit - 1);
        it->name = name->valuestring;
        if (nw_labels_parse(GET(t, "labels"), "labels", &it->labels, err) != NW_OK)
            return NW_EINVAL;
        nw_resources_cleanup(&it->cap);
        nw_resources_cleanup(&it->alloc);
        if (res_of(GET(t, "capacity"), &it->cap, err) != NW_OK ||
            res_of(GET(t, "allocatable"), &it->alloc, err) != NW_OK)
            return NW_EINVAL;
        it->exotic = cJSON_IsTrue(GET(t, "exotic"));
        const cJSON *offs = GET(t, "offerings");
        int no = cJSON_GetArraySize(offs);
        it->offers = calloc((size_t)no + 1, sizeof *it->offers);
        if (!it->offers)
            return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
        const cJSON *o;
        cJSON_ArrayForEach(o, offs)
        {
            offer_t *of = &it->offers[it->noffers++];
            of->zone = cJSON_GetStringValue(GET(o, "zone"));
            of->ct = cJSON_GetStringValue(GET(o, "capacityType"));
            of->price = cJSON_GetNumberValue(GET(o, "price"));
            of->available = cJSON_IsTrue(GET(o, "available"));
            if (!of->zone || !of->ct)
                return nw_err_set(err, NW_EINVAL, NULL, "itypes[%s].offerings: zone and capacityType required",
                                  it->name);
        }
    }
    return NW_OK;
}

static int pool_cmp(const void *a, const void *b)
{
    const pool_t *x = a, *y = b;
    if (x->weight != y->weight)
        return y->weight - x->weight;
    return strcmp(x->name, y->name);
}

static nw_rc_t parse_pools(st_t *s, const cJSON *arr, nw_err_t *err)
{
    int n = cJSON_GetArraySize(arr);
    s->pools = calloc((size_t)n + 1, sizeof *s->pools);
    if (!s->pools)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    const cJSON *p;
    cJSON_ArrayForEach(p, arr)
    {
        pool_t *pl = &s->pools[s->npools++];
        nw_reqs_init(&pl->reqs);
        nw_labels_init(&pl->labels);
        nw_taints_init(&pl->taints);
        nw_resources_init(&pl->limits);
        nw_resources_init(&pl->used);
        pl->obj = p;
        pl->name = cJSON_GetStringValue(GET(GET(p, "metadata"), "name"));
        if (!pl->name)
            return nw_err_set(err, NW_EINVAL, NULL, "pools[%d].metadata.name: required", s->npools - 1);
        const cJSON *w = GET(GET(p, "spec"), "weight");
        pl->weight = cJSON_IsNumber(w) ? (int)w->valuedouble : 0;
        const cJSON *tmpl = GET(GET(p, "spec"), "template");
        nw_reqs_cleanup(&pl->reqs);
        if (nw_reqs_parse_list(GET(GET(tmpl, "spec"), "requirements"),
                               "spec.template.spec.requirements", NW_REQS_PARSE_KARPENTER,
                               &pl->reqs, err) != NW_OK)
            return NW_EINVAL;
        nw_labels_cleanup(&pl->labels);
        if (nw_labels_parse(GET(GET(tmpl, "metadata"), "labels"), "spec.template.metadata.labels",
                            &pl->labels, err) != NW_OK)
            return NW_EINVAL;
        nw_reqs_t lr;
        if (nw_reqs_from_labels(&pl->labels, &lr) != NW_OK)
            return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
        nw_rc_t rc = nw_reqs_add_all(&pl->reqs, &lr);
        nw_reqs_cleanup(&lr);
        if (rc != NW_OK)
            return nw_err_set(err, rc, NULL, "pool %s: requirements", pl->name);
        const char *pv[] = {pl->name};
        if (nw_labels_set(&pl->labels, "karpenter.sh/nodepool", pl->name) != NW_OK ||
            nw_reqs_add(&pl->reqs, "karpenter.sh/nodepool", NW_REQ_IN, pv, 1, 0, NULL) != NW_OK)
            return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
        nw_taints_cleanup(&pl->taints);
        if (nw_taints_parse(GET(GET(tmpl, "spec"), "taints"), "spec.template.spec.taints",
                            &pl->taints, err) != NW_OK)
            return NW_EINVAL;
        const cJSON *lim = GET(GET(p, "spec"), "limits");
        if (lim && cJSON_IsObject(lim)) {
            nw_resources_cleanup(&pl->limits);
            if (res_of(lim, &pl->limits, err) != NW_OK)
                return NW_EINVAL;
            pl->has_limits = nw_resources_len(&pl->limits) > 0;
        }
    }
    qsort(s->pools, (size_t)s->npools, sizeof *s->pools, pool_cmp);
    return NW_OK;
}

static _Thread_local st_t *t_sort;

static int pod_order(const void *a, const void *b)
{
    const pod_t *pa = &t_sort->pods[*(const int *)a], *pb = &t_sort->pods[*(const int *)b];
    int64_t ca = nw_resources_get_or_zero(&pa->req, NW_RES_CPU).milli,
            cb = nw_resources_get_or_zero(&pb->req, NW_RES_CPU).milli;
    if (ca != cb)
        return ca > cb ? -1 : 1;
    int64_t ma = nw_resources_get_or_zero(&pa->req, NW_RES_MEMORY).milli,
            mb = nw_resources_get_or_zero(&pb->req, NW_RES_MEMORY).milli;
    if (ma != mb)
        return ma > mb ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

static nw_rc_t parse_pods(st_t *s, const cJSON *arr, nw_err_t *err)
{
    int n = cJSON_GetArraySize(arr);
    s->pods = calloc((size_t)n + 1, sizeof *s->pods);
    if (!s->pods)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    const cJSON *p;
    cJSON_ArrayForEach(p, arr)
    {
        pod_t *pd = &s->pods[s->npods++];
        pd->obj = p;
        nw_reqs_init(&pd->reqs);
        nw_tolerations_init(&pd->tols);
        nw_resources_init(&pd->req);
        nw_err_t e = {0};
        const cJSON *spec = GET(p, "spec");
        nw_reqs_cleanup(&pd->reqs);
        nw_tolerations_cleanup(&pd->tols);
        nw_resources_cleanup(&pd->req);
        if (nw_reqs_parse_pod_spec(spec, "spec", 0, &pd->reqs, &e) != NW_OK ||
            nw_tolerations_parse(GET(spec, "tolerations"), "spec.tolerations", &pd->tols, &e) !=
                NW_OK ||
            pod_requests(p, &pd->req, &e) != NW_OK) {
            pd->bad = 1;
            snprintf(pd->badmsg, sizeof pd->badmsg, "invalid pod: %s", e.msg);
            continue;
        }
        pd->accel = wants_accel(&pd->req);
    }
    return NW_OK;
}

static nw_rc_t parse_bins(st_t *s, const cJSON *arr, nw_err_t *err)
{
    int n = cJSON_GetArraySize(arr);
    s->bins = calloc((size_t)n + 1, sizeof *s->bins);
    if (!s->bins)
        return nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
    const cJSON *b;
    cJSON_ArrayForEach(b, arr)
    {
        bin_t *bn = &s->bins[s->nbins++];
        nw_labels_init(&bn->labels);
        nw_taints_init(&bn->taints);
        nw_resources_init(&bn->alloc);
        nw_resources_init(&bn->used);
        bn->name = cJSON_GetStringValue(GET(b, "name"));
        if (!bn->name)
            return nw_err_set(err, NW_EINVAL, NULL, "bins[%d].name: required", s->nbins - 1);
        nw_labels_cleanup(&bn->labels);
        nw_taints_cleanup(&bn->taints);
        nw_resources_cleanup(&bn->alloc);
        if (nw_labels_parse(GET(b, "labels"), "labels", &bn->labels, err) != NW_OK ||
            nw_taints_parse(GET(b, "taints"), "taints", &bn->taints, err) != NW_OK ||
            res_of(GET(b, "allocatable"), &bn->alloc, err) != NW_OK)
            return NW_EINVAL;
        const cJSON *p;
        cJSON_ArrayForEach(p, GET(b, "pods"))
        {
            nw_resources_t r;
            if (pod_requests(p, &r, NULL) == NW_OK)
                nw_resources_add(&bn->used, &r, NULL);
            nw_resources_cleanup(&r);
        }
    }
    return NW_OK;
}

static nw_rc_t parse_pool_capacity(st_t *s, const cJSON *arr, nw_err_t *err)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, arr)
    {
        const char *pn = cJSON_GetStringValue(GET(c, "pool"));
        for (int i = 0; pn && i < s->npools; i++)
            if (strcmp(s->pools[i].name, pn) == 0) {
                nw_resources_t r;
                if (res_of(GET(c, "capacity"), &r, err) != NW_OK) {
                    nw_resources_cleanup(&r);
                    return NW_EINVAL;
                }
                nw_resources_add(&s->pools[i].used, &r, NULL);
                nw_resources_cleanup(&r);
            }
    }
    return NW_OK;
}

/* ---- matching ---- */

/* Does an offering (type labels + zone + capacity type + pool labels) satisfy reqs?
 * Keys the offering does not define are not judged here (pool compatibility did). */
static int offer_ok(const nw_reqs_t *reqs, const itype_t *it, const offer_t *of,
                    const nw_labels_t *pool_labels)
{
    for (size_t i = 0; i < reqs->n; i++) {
        const nw_req_t *r = &reqs->v[i];
        const char *v = nw_labels_get(&it->labels, r->key);
        if (!v && strcmp(r->key, "topology.kubernetes.io/zone") == 0)
            v = of ? of->zone : NULL;
        if (!v && strcmp(r->key, "karpenter.sh/capacity-type") == 0)
            v = of ? of->ct : NULL;
        if (!v && pool_labels)
            v = nw_labels_get(pool_labels, r->key);
        if (!v)
            continue;
        if (!nw_req_matches(r, v))
            return 0;
    }
    return 1;
}

/* Cheapest available offering of it under reqs; -1 if none. */
static double type_price(const nw_reqs_t *reqs, const itype_t *it, const nw_labels_t *pl,
                         const offer_t **best)
{
    double p = -1;
    for (int i = 0; i < it->noffers; i++) {
        const offer_t *of = &it->offers[i];
        if (!of->available || !offer_ok(reqs, it, of, pl))
            continue;
        if (p < 0 || of->price < p) {
            p = of->price;
            if (best)
                *best = of;
        }
    }
    return p;
}

/* The smallest (by cpu) candidate of an open claim: what it will at least cost
 * against its pool's limits. */
static const itype_t *claim_min_type(const st_t *s, const claim_t *c)
{
    const itype_t *small = NULL;
    for (int k = 0; k < c->ntypes; k++) {
        const itype_t *t = &s->it[c->types[k]];
        if (!small || nw_resources_get_or_zero(&t->cap, NW_RES_CPU).milli <
                          nw_resources_get_or_zero(&small->cap, NW_RES_CPU).milli)
            small = t;
    }
    return small;
}

/* Would a node of type it stay within pool pli's limits, counting existing capacity
 * and every other claim opened in this run (skip: the claim being extended, or -1)? */
static int within_limits(const st_t *s, int pli, int skip, const itype_t *it)
{
    const pool_t *pl = &s->pools[pli];
    if (!pl->has_limits)
        return 1;
    for (size_t i = 0; i < nw_resources_len(&pl->limits); i++) {
        const char *name = nw_resources_name_at(&pl->limits, i);
        int64_t lim = nw_resources_at(&pl->limits, i).milli;
        int64_t used = nw_resources_get_or_zero(&pl->used, name).milli;
        for (int c = 0; c < s->nclaims; c++) {
            if (c == skip || s->claims[c].pool != pli)
                continue;
            const itype_t *m = claim_min_type(s, &s->claims[c]);
            if (m)
                used += nw_resources_get_or_zero(&m->cap, name).milli;
        }
        int64_t add = nw_resources_get_or_zero(&it->cap, name).milli;
        if (used + add > lim)
            return 0;
    }
    return 1;
}

static int bin_fits(const bin_t *b, const pod_t *p)
{
    if (!nw_reqs_match_labels(&p->reqs, &b->labels, NULL))
        return 0;
    if (!nw_taints_tolerated(&b->taints, &p->tols, NW_TAINTS_SCHEDULING))
        return 0;
    nw_resources_t tot;
    nw_resources_init(&tot);
    nw_resources_copy(&tot, &b->used, NULL);
    nw_resources_add(&tot, &p->req, NULL);
    int ok = nw_resources_fits(&tot, &b->alloc, NULL);
    nw_resources_cleanup(&tot);
    return ok;
}

/* Types (from cand) that can hold req under reqs; writes them to out, returns count. */
static int filter_types(const st_t *s, const pool_t *pl, const nw_reqs_t *reqs,
                        const nw_resources_t *req, int accel, const int *cand, int ncand,
                        int *out)
{
    int n = 0;
    for (int k = 0; k < ncand; k++) {
        const itype_t *it = &s->it[cand[k]];
        if (it->exotic && !accel)
            continue;
        if (!nw_resources_fits(req, &it->alloc, NULL))
            continue;
        if (type_price(reqs, it, &pl->labels, NULL) < 0)
            continue;
        out[n++] = cand[k];
    }
    return n;
}

static nw_rc_t claim_add_pod(claim_t *c, int pod)
{
    if (c->npods == c->podcap) {
        int nc = c->podcap ? c->podcap * 2 : 8;
        int *np = realloc(c->pods, (size_t)nc * sizeof *np);
        if (!np)
            return NW_ENOMEM;
        c->pods = np;
        c->podcap = nc;
    }
    c->pods[c->npods++] = pod;
    return NW_OK;
}

/* Try to add pod p to open claim c. */
static int try_claim(st_t *s, int ci, int pi, int *scratch)
{
    claim_t *c = &s->claims[ci];
    const pod_t *p = &s->pods[pi];
    const pool_t *pl = &s->pools[c->pool];
    if (p->accel != c->accel && (p->accel || c->accel))
        return 0;
    if (!nw_taints_tolerated(&pl->taints, &p->tols, NW_TAINTS_STRICT))
        return 0;
    if (!nw_reqs_compatible(&c->reqs, &p->reqs, NW_REQS_ALLOW_UNDEFINED_WELL_KNOWN, NULL))
        return 0;
    nw_reqs_t nr;
    if (nw_reqs_intersect(&c->reqs, &p->reqs, &nr) != NW_OK)
        return 0;
    nw_resources_t tot;
    nw_resources_init(&tot);
    nw_resources_copy(&tot, &c->req, NULL);
    nw_resources_add(&tot, &p->req, NULL);
    int n = filter_types(s, pl, &nr, &tot, c->accel, c->types, c->ntypes, scratch);
    int m = 0;
    for (int k = 0; k < n; k++)
        if (within_limits(s, c->pool, ci, &s->it[scratch[k]]))
            scratch[m++] = scratch[k];
    n = m;
    if (n == 0 || claim_add_pod(c, pi) != NW_OK) {
        nw_reqs_cleanup(&nr);
        nw_resources_cleanup(&tot);
        return 0;
    }
    memcpy(c->types, scratch, (size_t)n * sizeof *scratch);
    c->ntypes = n;
    nw_reqs_cleanup(&c->reqs);
    c->reqs = nr;
    nw_resources_cleanup(&c->req);
    c->req = tot;
    return 1;
}

/* Open a new claim on pool pl for pod pi, or explain why not (msg). */
static int open_claim(st_t *s, int pli, int pi, int *all, int *scratch, char *msg, size_t mlen)
{
    const pod_t *p = &s->pods[pi];
    pool_t *pl = &s->pools[pli];
    nw_reqs_conflict_t cf;
    if (!nw_reqs_compatible(&pl->reqs, &p->reqs, NW_REQS_ALLOW_UNDEFINED_WELL_KNOWN, &cf)) {
        snprintf(msg, mlen, "incompatible requirements, %s", cf.msg);
        return 0;
    }
    const nw_taint_t *t = nw_taints_first_untolerated(&pl->taints, &p->tols, NW_TAINTS_STRICT);
    if (t) {
        char tb[256];
        nw_taint_untolerated_msg(t, tb, sizeof tb);
        snprintf(msg, mlen, "%s", tb);
        return 0;
    }
    nw_reqs_t nr;
    if (nw_reqs_intersect(&pl->reqs, &p->reqs, &nr) != NW_OK) {
        snprintf(msg, mlen, "out of memory");
        return 0;
    }
    int n = filter_types(s, pl, &nr, &p->req, p->accel, all, s->nit, scratch);
    if (n == 0) {
        snprintf(msg, mlen, "no instance type has enough resources and matches the requirements");
        nw_reqs_cleanup(&nr);
        return 0;
    }
    int m = 0;
    for (int k = 0; k < n; k++)
        if (within_limits(s, pli, -1, &s->it[scratch[k]]))
            scratch[m++] = scratch[k];
    if (m == 0) {
        snprintf(msg, mlen, "all available instance types exceed limits for nodepool: \"%s\"",
                 pl->name);
        nw_reqs_cleanup(&nr);
        return 0;
    }
    if (s->nclaims == s->claimcap) {
        int nc = s->claimcap ? s->claimcap * 2 : 8;
        claim_t *np = realloc(s->claims, (size_t)nc * sizeof *np);
        if (!np) {
            nw_reqs_cleanup(&nr);
            return 0;
        }
        s->claims = np;
        s->claimcap = nc;
    }
    claim_t *c = &s->claims[s->nclaims];
    memset(c, 0, sizeof *c);
    c->types = malloc((size_t)m * sizeof *c->types);
    if (!c->types || claim_add_pod(c, pi) != NW_OK) {
        free(c->types);
        free(c->pods);
        nw_reqs_cleanup(&nr);
        return 0;
    }
    memcpy(c->types, scratch, (size_t)m * sizeof *scratch);
    c->ntypes = m;
    c->pool = pli;
    c->reqs = nr;
    c->accel = p->accel;
    nw_resources_init(&c->req);
    nw_resources_copy(&c->req, &p->req, NULL);
    s->nclaims++;
    return 1;
}

/* ---- output ---- */

static cJSON *req_json(const nw_req_t *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "key", r->key);
    char num[32];
    if (r->has_gte || r->has_lte) {
        if (r->has_gte) {
            cJSON_AddStringToObject(o, "operator", "Gt");
            snprintf(num, sizeof num, "%lld", (long long)(r->gte - 1));
        } else {
            cJSON_AddStringToObject(o, "operator", "Lt");
            snprintf(num, sizeof num, "%lld", (long long)(r->lte + 1));
        }
        cJSON *vals = cJSON_AddArrayToObject(o, "values");
        cJSON_AddItemToArray(vals, cJSON_CreateString(num));
        return o;
    }
    const char *op = !r->complement ? (r->nvalues ? "In" : "DoesNotExist")
                                    : (r->nvalues ? "NotIn" : "Exists");
    cJSON_AddStringToObject(o, "operator", op);
    if (r->nvalues) {
        cJSON *vals = cJSON_AddArrayToObject(o, "values");
        for (size_t i = 0; i < r->nvalues; i++)
            cJSON_AddItemToArray(vals, cJSON_CreateString(r->values[i]));
    }
    if (r->min_values > 0)
        cJSON_AddNumberToObject(o, "minValues", r->min_values);
    return o;
}

typedef struct {
    int idx;
    double price;
} tp_t;

static int tp_cmp(const void *a, const void *b)
{
    const tp_t *x = a, *y = b;
    if (x->price != y->price)
        return x->price < y->price ? -1 : 1;
    return x->idx - y->idx;
}

static cJSON *claim_json(const st_t *s, const claim_t *c)
{
    const pool_t *pl = &s->pools[c->pool];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "pool", pl->name);
    tp_t *tp = calloc((size_t)c->ntypes + 1, sizeof *tp);
    if (!tp)
        return o;
    for (int k = 0; k < c->ntypes; k++) {
        tp[k].idx = c->types[k];
        tp[k].price = type_price(&c->reqs, &s->it[c->types[k]], &pl->labels, NULL);
    }
    qsort(tp, (size_t)c->ntypes, sizeof *tp, tp_cmp);
    cJSON *types = cJSON_AddArrayToObject(o, "types");
    for (int k = 0; k < c->ntypes && k < 600; k++)
        cJSON_AddItemToArray(types, cJSON_CreateString(s->it[tp[k].idx].name));
    const offer_t *best = NULL;
    const itype_t *bt = &s->it[tp[0].idx];
    double price = type_price(&c->reqs, bt, &pl->labels, &best);
    cJSON_AddStringToObject(o, "zone", best ? best->zone : "");
    cJSON_AddStringToObject(o, "capacityType", best ? best->ct : "");
    cJSON_AddNumberToObject(o, "price", price);
    /* capacity types that have an available compatible offering */
    int od = 0, spot = 0;
    for (int k = 0; k < c->ntypes; k++) {
        const itype_t *it = &s->it[tp[k].idx];
        for (int i = 0; i < it->noffers; i++)
            if (it->offers[i].available && offer_ok(&c->reqs, it, &it->offers[i], &pl->labels)) {
                if (strcmp(it->offers[i].ct, "spot") == 0)
                    spot = 1;
                else if (strcmp(it->offers[i].ct, "on-demand") == 0)
                    od = 1;
            }
    }
    cJSON *reqs = cJSON_AddArrayToObject(o, "requirements");
    for (size_t i = 0; i < c->reqs.n; i++) {
        const nw_req_t *r = &c->reqs.v[i];
        if (strcmp(r->key, "node.kubernetes.io/instance-type") == 0 ||
            strcmp(r->key, "karpenter.sh/capacity-type") == 0)
            continue;
        cJSON_AddItemToArray(reqs, req_json(r));
    }
    cJSON *it = cJSON_CreateObject();
    cJSON_AddStringToObject(it, "key", "node.kubernetes.io/instance-type");
    cJSON_AddStringToObject(it, "operator", "In");
    cJSON_AddItemToObject(it, "values", cJSON_Duplicate(types, 1));
    cJSON_AddItemToArray(reqs, it);
    cJSON *ct = cJSON_CreateObject();
    cJSON_AddStringToObject(ct, "key", "karpenter.sh/capacity-type");
    cJSON_AddStringToObject(ct, "operator", "In");
    cJSON *ctv = cJSON_AddArrayToObject(ct, "values");
    if (od)
        cJSON_AddItemToArray(ctv, cJSON_CreateString("on-demand"));
    if (spot)
        cJSON_AddItemToArray(ctv, cJSON_CreateString("spot"));
    cJSON_AddItemToArray(reqs, ct);
    cJSON_AddItemToObject(o, "requests", nw_resources_to_json(&c->req));
    cJSON *pods = cJSON_AddArrayToObject(o, "pods");
    for (int k = 0; k < c->npods; k++)
        cJSON_AddItemToArray(pods, cJSON_CreateNumber(c->pods[k]));
    free(tp);
    return o;
}

nw_rc_t nw_fit_solve(const cJSON *in, cJSON **out, nw_err_t *err)
{
    *out = NULL;
    st_t s;
    memset(&s, 0, sizeof s);
    nw_rc_t rc;
    int *order = NULL, *all = NULL, *scratch = NULL;
    if ((rc = parse_itypes(&s, GET(in, "itypes"), err)) != NW_OK ||
        (rc = parse_pools(&s, GET(in, "pools"), err)) != NW_OK ||
        (rc = parse_pods(&s, GET(in, "pending"), err)) != NW_OK ||
        (rc = parse_bins(&s, GET(in, "bins"), err)) != NW_OK ||
        (rc = parse_pool_capacity(&s, GET(in, "poolCapacity"), err)) != NW_OK)
        goto done;
    order = calloc((size_t)s.npods + 1, sizeof *order);
    all = calloc((size_t)s.nit + 1, sizeof *all);
    scratch = calloc((size_t)s.nit + 1, sizeof *scratch);
    cJSON *res = cJSON_CreateObject();
    if (!order || !all || !scratch || !res) {
        cJSON_Delete(res);
        rc = nw_err_set(err, NW_ENOMEM, NULL, "out of memory");
        goto done;
    }
    for (int i = 0; i < s.nit; i++)
        all[i] = i;
    for (int i = 0; i < s.npods; i++)
        order[i] = i;
    t_sort = &s;
    qsort(order, (size_t)s.npods, sizeof *order, pod_order);
    t_sort = NULL;
    cJSON *placed = cJSON_AddArrayToObject(res, "placed");
    cJSON *uns = cJSON_AddArrayToObject(res, "unschedulable");
    for (int k = 0; k < s.npods; k++) {
        int pi = order[k];
        pod_t *p = &s.pods[pi];
        if (p->bad) {
            cJSON *u = cJSON_CreateObject();
            cJSON_AddNumberToObject(u, "pod", pi);
            cJSON_AddStringToObject(u, "reason", p->badmsg);
            cJSON_AddItemToArray(uns, u);
            continue;
        }
        int done = 0;
        for (int b = 0; b < s.nbins && !done; b++)
            if (bin_fits(&s.bins[b], p)) {
                nw_resources_add(&s.bins[b].used, &p->req, NULL);
                cJSON *pl = cJSON_CreateObject();
                cJSON_AddNumberToObject(pl, "pod", pi);
                cJSON_AddStringToObject(pl, "bin", s.bins[b].name);
                cJSON_AddItemToArray(placed, pl);
                done = 1;
            }
        for (int c = 0; c < s.nclaims && !done; c++)
            done = try_claim(&s, c, pi, scratch);
        if (done)
            continue;
        cJSON *reasons = cJSON_CreateObject();
        for (int pl = 0; pl < s.npools && !done; pl++) {
            char msg[1200];
            if (open_claim(&s, pl, pi, all, scratch, msg, sizeof msg))
                done = 1;
            else
                cJSON_AddStringToObject(reasons, s.pools[pl].name, msg);
        }
        if (done) {
            cJSON_Delete(reasons);
            continue;
        }
        cJSON *u = cJSON_CreateObject();
        cJSON_AddNumberToObject(u, "pod", pi);
        if (s.npools == 0) {
            cJSON_Delete(reasons);
            cJSON_AddStringToObject(u, "reason", "no nodepools found");
        } else
            cJSON_AddItemToObject(u, "reasons", reasons);
        cJSON_AddItemToArray(uns, u);
    }
    cJSON *claims = cJSON_AddArrayToObject(res, "claims");
    for (int c = 0; c < s.nclaims; c++)
        cJSON_AddItemToArray(claims, claim_json(&s, &s.claims[c]));
    *out = res;
    rc = NW_OK;
done:
    free(order);
    free(all);
    free(scratch);
    st_free(&s);
    return rc;
}
