/*
 * scaler/sched/solve_int.h — what the files of the provisioning simulation share: its
 * working state (ctx_t and friends), bit sets, and the functions one part calls in
 * another. Only for scaler/sched/solve*.c: solve_prep.c (pools, nodes, topology
 * groups, pod requirement variants), solve_topo.c (topology), solve_claims.c (placing
 * a pod: existing capacity, open claims, new claims; reasons), solve_repack.c (the
 * re-pack, opts.repack), solve_split.c (the free pods of tied claims re-packed, opts.repack),
 * solve.c (finalize and the loop).
 */
#ifndef NW_SCALER_SCHED_SOLVE_INT_H
#define NW_SCALER_SCHED_SOLVE_INT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scaler/sched/snap.h"
#include "api/wellknown.h"

#define MAX_ZONES 64
#define MAX_TCS 64
#define MAX_TKEYS 16   /* distinct topology keys other than the hostname (zone is key 0) */
#define MAX_DOMAINS 64 /* domains per key (its values); more are not counted */
#define FLAG_ALLOW NW_REQS_ALLOW_UNDEFINED_WELL_KNOWN

typedef uint64_t word_t;

typedef struct {
    bool built;
    nw_reqs_t reqs;    /* selector ∩ term ∩ preferred term */
    int8_t *status;    /* per pool: 0 unknown, 1 ok, 2 incompatible, 3 no type */
    char **reason;     /* per pool when status 2/3 */
    nw_reqs_t *merged; /* per pool when status 1: pool ∩ pod */
    word_t *bits;      /* per pool: nw words */
    uint64_t *zmask;   /* per pool: zones allowed by merged reqs */
    nw_reqs_t strict;  /* selector ∩ term: what narrows topology domains (no preferences) */
    uint64_t pmask[MAX_TKEYS]; /* per topology key: domains strict allows */
    uint64_t vmask[MAX_TKEYS]; /* per topology key: domains reqs allows */
    /* the existing nodes (c->en indexes, ascending) whose requirements reqs is compatible
     * with, built on the variant's first try_existing (a node's requirements do not change
     * during a solve): its pods are tried on these only, so a pod whose selector no
     * existing node matches (a pool's label) costs nothing per node. en_list NULL once
     * built: every node (reqs empty, or out of memory), en_n of them */
    bool en_built;
    int *en_list;
    int en_n;
} variant_t;

typedef struct {
    variant_t *v; /* nterms' × (nprefs+1) */
    int nv;
} vcache_t;

typedef struct {
    int term, pref;  /* variant */
    bool tol_prefer; /* relaxation 6 */
    uint64_t tc_off; /* bit i: tcs[i] relaxed */
    bool placed;
    int *selgroups; /* groups selecting this pod */
    int nsel;
    int last_len, epoch;
} pstate_t;

typedef struct {
    int pool;
    nw_reqs_t reqs;
    word_t *bits;
    nw_sched_res_t used;
    int64_t maxfree[3];
    double minprice;         /* cheapest type still in bits */
    nw_sched_res_t reserved; /* max capacity over bits (limits) */
    uint64_t zmask;
    int *pods;
    int npods, cpods;
    int idx;        /* creation order */
    bool relaxed;   /* minValues lowered in reqs (BestEffort) */
    bool is_static; /* a static NodePool's replica */
} claim_t;

typedef struct {
    const nw_spool_t *p;
    int idx;
    const nw_sclass_t *cls; /* the pool's node class resources, NULL: the types' own */
    word_t *types;          /* compatible with pool reqs, some allowed offering */
    nw_sched_res_t *avail;  /* per type: allocatable − daemonset overhead */
    nw_sched_res_t *ovh;
    double *price;      /* per type: cheapest available offering the pool allows */
    word_t **zbits;     /* per zone */
    bool ct_allowed[3]; /* on-demand, spot, reserved */
    int64_t remaining[NW_SCHED_NRES];
    int64_t nodes_left;
    bool has_prefer_taint;
    int *dsports; /* DaemonSets with host ports that run on the pool's new nodes */
    int ndsports;
} pctx_t;

typedef struct {
    int snode;                /* snapshot node index */
    nw_sched_res_t free;      /* allocatable − pods − daemonset overhead */
    int zone;                 /* -1 unknown */
    uint64_t dm[MAX_TKEYS];   /* per topology key: the node's domains (its label; a claim's
                                 requirement) */
    const nw_scsinode_t *csi; /* its attach limits, NULL none */
    const nw_svol_t **vols;   /* the volumes of its pods (and of pods placed on it) */
    int nvols, cvols;
} enode_t;

/* A topology key other than the hostname and its domains (values seen in NodePools,
 * instance types and node labels). Key 0 is the zone, whose domains are ctx_t.zones. */
typedef struct {
    const char *name;
    int nd;
    const char *dom[MAX_DOMAINS];
    uint64_t *pool; /* per ctx pool: the domains its requirements and types give */
} tkey_t;

/* pods with host ports on one host slot */
typedef struct {
    int *v;
    int n, cap;
} hpods_t;

typedef struct {
    const nw_sched_snap_t *s;
    int nt, nw, nres, nz;
    char *zones[MAX_ZONES];
    const char *zone_ids[MAX_ZONES]; /* topology.k8s.aws/zone-id of each zone, NULL unknown */
    pctx_t *pools;                   /* in weight order */
    int npools;
    vcache_t *vc;
    pstate_t *ps;
    enode_t *en;
    int nen;
    claim_t *claims;
    int nclaims, cclaims;
    int *corder;
    /* topology keys, and per group: the key (-1 hostname), counts per domain (dcount,
     * downers: required anti-affinity owners), registered domains (gdom; gidom for the
     * inverse anti-affinity), node filter (gfilt: the spread's nodeAffinityPolicy) */
    tkey_t keys[MAX_TKEYS];
    int nkeys;
    int *gkey;
    int **dcount, **downers, **hcount, **howners;
    /* per group: which per-host arrays it has (bit 0 hcount: a pod to place has the
     * hostname constraint; bit 1 howners: a pod has it as required anti-affinity); the
     * others stay NULL, never read: at 5,000 nodes and thousands of groups the dense
     * arrays of every group were hundreds of MB to clear per solve */
    unsigned char *hneed;
    uint64_t *gdom, *gidom;
    bool *ginv;
    nw_reqs_t **gfilt;
    int *ngfilt;
    int *gtotal;
    int hcap;
    hpods_t *hp; /* per host slot */
    word_t *scratch, *scratch2;
    double *alone; /* per snapshot pool, scratch of nw_solve_claims_try */
    bool any_prefer_taint;
    int64_t *resv_left; /* per snapshot reservation: nodes it still holds (< 0: no limit) */
    /* for nw_solve_finalize, once the zones are known: each instance type's offerings from
     * off_first[t] on, their zone (zone_find) and capacity type (ct_index) */
    int *off_first, *off_zone, *off_ct;
} ctx_t;

/* A reserved offering is seen only by pools of its reservation's node class, and only while
 * the reservation has room in this solve. */
static inline bool nw_sv_offer_visible(const ctx_t *c, const nw_sched_offering_t *o,
                                       const char *nodeclass)
{
    if (!o->resv)
        return true;
    return nodeclass && strcmp(c->s->resvs[o->resv - 1].nodeclass, nodeclass) == 0 &&
           (!c->resv_left || c->resv_left[o->resv - 1] != 0);
}

static inline int ct_index(const char *ct)
{
    if (strcmp(ct, "on-demand") == 0)
        return 0;
    if (strcmp(ct, "spot") == 0)
        return 1;
    return 2;
}

static inline int zone_index(ctx_t *c, const char *z)
{
    for (int i = 0; i < c->nz; i++)
        if (strcmp(c->zones[i], z) == 0)
            return i;
    if (c->nz >= MAX_ZONES)
        return -1;
    c->zones[c->nz] = (char *)z;
    return c->nz++;
}

static inline int zone_find(const ctx_t *c, const char *z)
{
    for (int i = 0; i < c->nz; i++)
        if (strcmp(c->zones[i], z) == 0)
            return i;
    return -1;
}

/* the zones r allows: by name (topology.kubernetes.io/zone) and by id
 * (topology.k8s.aws/zone-id; a zone whose id is unknown has none) */
static inline uint64_t zmask_of(const ctx_t *c, const nw_reqs_t *r)
{
    const nw_req_t *q = nw_requirements_get(r, NW_LABEL_ZONE);
    const nw_req_t *qi = nw_requirements_get(r, NW_LABEL_ZONE_ID);
    uint64_t m = 0;
    for (int i = 0; i < c->nz; i++)
        if ((!q || nw_requirements_req_has(q, c->zones[i])) &&
            (!qi ||
             (c->zone_ids[i] ? nw_requirements_req_has(qi, c->zone_ids[i]) : qi->complement)))
            m |= 1ULL << i;
    return m;
}

/* append x to the growable array *v (n used, cap allocated) */
static inline NW_MUST_USE nw_rc_t push_int(int **v, int *n, int *cap, int x)
{
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        int *p = realloc(*v, (size_t)nc * sizeof(int));
        if (!p)
            return NW_ENOMEM;
        *v = p;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return NW_OK;
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

static inline bool bits_any(const word_t *b, int nw)
{
    for (int i = 0; i < nw; i++)
        if (b[i])
            return true;
    return false;
}

#define FOR_BITS(b, nw, t)                                                                         \
    for (int _w = 0; _w < (nw); _w++)                                                              \
        for (word_t _x = (b)[_w]; _x; _x &= _x - 1)                                                \
            for (int t = _w * 64 + __builtin_ctzll(_x), _once = 1; _once; _once = 0)

/* solve_prep.c */
/* An instance type (its index) with its price for a pool, as the re-pack and the split sort
 * a group's types: cheapest first, the lower index first among equal prices
 * (nw_solve_repack_cmp_tprice, a qsort comparator). */
typedef struct {
    double price;
    int t;
} tprice_t;

int nw_solve_repack_cmp_tprice(const void *a, const void *b);

NW_MUST_USE nw_rc_t nw_solve_prep_pools(ctx_t *c);
NW_MUST_USE nw_rc_t nw_solve_prep_nodes(ctx_t *c);
variant_t *nw_solve_prep_variant_get(ctx_t *c, int pod);
int nw_solve_prep_variant_pool(ctx_t *c, variant_t *v, const nw_pclass_t *cl, const pctx_t *pc);
bool nw_solve_prep_type_allows_offering(const nw_sitype_t *it, const nw_reqs_t *r, const bool *cts,
                                        uint64_t zmask, const ctx_t *c, const char *nodeclass);

/* solve_topo.c */
bool nw_solve_topo_tc_active(const ctx_t *c, int pod, int i);
/** The domains of topology key k that r allows (no requirement on the key: all). */
uint64_t nw_solve_topo_key_mask(const ctx_t *c, int k, const nw_reqs_t *r);
/** Room for need host slots in the per-host topology counts and host ports. */
NW_MUST_USE nw_rc_t nw_solve_topo_host_grow(ctx_t *c, int need);
/** Topology keys, domains, groups and the counts of bound pods (after prep_nodes). */
NW_MUST_USE nw_rc_t nw_solve_topo_prep(ctx_t *c);
/** Karpenter's Topology.AddRequirements (topology.go): for pod (requirement variant v)
 * on host slot host (-1 = a new NodeClaim) whose domains per key are cand, the domains
 * each key may keep (out; bit k of *touched: a constraint narrowed key k). False (why
 * names the constraint) when a constraint leaves none. */
bool nw_solve_topo_allowed(const ctx_t *c, int pod, const variant_t *v, int host,
                           const uint64_t *cand, uint64_t *out, uint32_t *touched, char *why,
                           size_t whyn);
/** Karpenter's Topology.Record: pod placed on host slot host whose domains are now dm
 * (requirements reqs, taints taints: the spread's node filter). */
void nw_solve_topo_record(ctx_t *c, int pod, int host, const uint64_t *dm, const nw_reqs_t *reqs,
                          const nw_taints_t *taints);
/** Would pod's host ports conflict on host slot host; note them there. */
bool nw_solve_topo_hostports_conflict(const ctx_t *c, int pod, int host);
/** Would pod's volumes take existing node e past a CSI driver's attach limit (Karpenter
 * volumeusage.go ExceedsLimits: distinct claims per driver). */
bool nw_solve_topo_volumes_exceed(const ctx_t *c, int pod, const enode_t *e);
/** Count pod's volumes on existing node e. */
NW_MUST_USE nw_rc_t nw_solve_topo_volumes_add(ctx_t *c, int pod, enode_t *e);
/** Would pod's host ports conflict with those of the DaemonSets on a new node of pc
 * (Karpenter's daemonHostPortUsage of a NodeClaim template). */
bool nw_solve_topo_ds_ports_conflict(const ctx_t *c, int pod, const pctx_t *pc);
NW_MUST_USE nw_rc_t nw_solve_topo_hostports_add(ctx_t *c, int pod, int host);

/* solve_claims.c */
void nw_solve_claims_stats(ctx_t *c, claim_t *cl, const pctx_t *pc);
bool nw_solve_claims_filter_fit(const ctx_t *c, const pctx_t *pc, const word_t *in, word_t *out,
                                const nw_sched_res_t *need);
NW_MUST_USE nw_rc_t nw_solve_claims_add_pod(claim_t *cl, int pod);
int nw_solve_claims_single_zone(uint64_t m);
int nw_solve_claims_try(ctx_t *c, int pod, variant_t *v, nw_rc_t *rc);
/* the NodeClaims static NodePools lack (kubernetes-sigs/karpenter
 * pkg/controllers/static/provisioning), pods none */
NW_MUST_USE nw_rc_t nw_solve_claims_static(ctx_t *c);
int nw_solve_claims_try_existing(ctx_t *c, int pod, variant_t *v);
/* The pod on existing node i (c->en) alone, with every check try_existing makes: 1 placed,
 * 0 not, -2 out of memory. */
int nw_solve_claims_try_node(ctx_t *c, int pod, variant_t *v, int i);
int nw_solve_claims_try_new(ctx_t *c, int pod, variant_t *v, nw_rc_t *rc);
bool nw_solve_claims_relax(ctx_t *c, int pod);
char *nw_solve_claims_pool_reason(ctx_t *c, int pod, const pctx_t *pc);

/* solve_repack.c */
NW_MUST_USE nw_rc_t nw_solve_repack_rebalance(ctx_t *c);
/** An empty claim at the end of c->claims (*idx its index; pointers into c->claims move). */
NW_MUST_USE nw_rc_t nw_solve_repack_claim_slot(ctx_t *c, int *idx);
/** Same pool, zones and accumulated requirements. */
bool nw_solve_repack_alike(const claim_t *a, const claim_t *b);

/* solve_split.c */
/** The free pods of claims that also hold hostname-constrained pods, re-packed with their
 * group's interchangeable claims when that costs less (opts.repack, after the re-pack). */
NW_MUST_USE nw_rc_t nw_solve_split(ctx_t *c);

/* solve.c */
NW_MUST_USE nw_rc_t nw_solve_finalize(ctx_t *c, claim_t *cl, nw_sched_claim_t *out);

#endif
