/* scaler/sched/solve_topo.c — the provisioning simulation (scaler/sched/solve.c): topology spread
 * and pod (anti-)affinity on any topology key, as kubernetes-sigs/karpenter
 * pkg/controllers/provisioning/scheduling/topology.go, topologygroup.go,
 * topologydomaingroup.go and topologynodefilter.go count them; and host ports
 * (pkg/scheduling/hostportusage.go). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/wellknown.h"
#include "common/strs.h"
#include "scaler/sched/solve_int.h"

/* ---- keys and domains ---------------------------------------------------------- */

bool nw_solve_topo_tc_active(const ctx_t *c, int pod, int i)
{
    return !(c->ps[pod].tc_off >> i & 1);
}

static uint64_t all_of(const ctx_t *c, int k)
{
    int nd = k == 0 ? c->nz : c->keys[k].nd;
    return nd >= 64 ? ~0ULL : (1ULL << nd) - 1;
}

uint64_t nw_solve_topo_key_mask(const ctx_t *c, int k, const nw_reqs_t *r)
{
    if (k == 0)
        return zmask_of(c, r);
    const tkey_t *tk = &c->keys[k];
    const nw_req_t *q = nw_requirements_get(r, tk->name);
    if (!q)
        return all_of(c, k);
    uint64_t m = 0;
    for (int d = 0; d < tk->nd; d++)
        if (nw_requirements_req_has(q, tk->dom[d]))
            m |= 1ULL << d;
    return m;
}

static int dom_find(const ctx_t *c, int k, const char *v)
{
    if (k == 0)
        return zone_find(c, v);
    const tkey_t *tk = &c->keys[k];
    for (int d = 0; d < tk->nd; d++)
        if (strcmp(tk->dom[d], v) == 0)
            return d;
    return -1;
}

static void dom_add(ctx_t *c, int k, const char *v)
{
    tkey_t *tk = &c->keys[k];
    if (k == 0 || dom_find(c, k, v) >= 0 || tk->nd >= MAX_DOMAINS)
        return;
    tk->dom[tk->nd++] = v;
}

static void dom_add_req(ctx_t *c, int k, const nw_reqs_t *r)
{
    const nw_req_t *q = nw_requirements_get(r, c->keys[k].name);
    for (size_t i = 0; q && !q->complement && i < q->nvalues; i++)
        dom_add(c, k, q->values[i]);
}

static int key_of(ctx_t *c, const char *name)
{
    for (int k = 0; k < c->nkeys; k++)
        if (strcmp(c->keys[k].name, name) == 0)
            return k;
    if (c->nkeys >= MAX_TKEYS)
        return -2;
    c->keys[c->nkeys].name = name;
    return c->nkeys++;
}

static uint64_t bit_of(const ctx_t *c, int k, const char *v)
{
    int d = v ? dom_find(c, k, v) : -1;
    return d >= 0 ? 1ULL << d : 0;
}

/* the domains of key k on a snapshot node: its label; a claim's requirement; none for a
 * key the node does not carry unless it is well known (Karpenter's
 * AllowUndefinedWellKnownLabels) */
static uint64_t node_domains(const ctx_t *c, int k, const nw_snode_t *n, int zone)
{
    if (k == 0 && zone >= 0)
        return 1ULL << zone;
    const char *v = nw_labels_get(&n->labels, c->keys[k].name);
    if (v)
        return bit_of(c, k, v);
    if (nw_requirements_get(&n->reqs, c->keys[k].name) || k == 0)
        return nw_solve_topo_key_mask(c, k, &n->reqs);
    return nw_wellknown_is_known(c->keys[k].name) ? all_of(c, k) : 0;
}

/* does pod class cls tolerate the taints of pool pc */
static bool pool_tolerated(const ctx_t *c, int cls, const pctx_t *pc)
{
    return pc->p->taints.n == 0 ||
           nw_tolerations_tolerate_all(&pc->p->taints, &c->s->classes[cls].tols,
                                       NW_TAINTS_SCHEDULING);
}

/* the spread's node filter (topologynodefilter.go Matches): nodeAffinityPolicy Honor = the
 * node is compatible with the pod's nodeSelector and one required term; nodeTaintsPolicy
 * Honor = the pod tolerates the node's taints */
static bool filter_matches(const ctx_t *c, int g, const nw_reqs_t *reqs, const nw_taints_t *taints)
{
    const nw_tgroup_t *gr = &c->s->groups[g];
    if (gr->kind != NW_TG_SPREAD)
        return true;
    if (gr->taints_honor && taints &&
        !nw_tolerations_tolerate_all(taints, &c->s->classes[gr->cls].tols, NW_TAINTS_SCHEDULING))
        return false;
    if (!gr->affinity_honor || c->ngfilt[g] == 0 || !reqs)
        return true;
    for (int i = 0; i < c->ngfilt[g]; i++)
        if (nw_requirements_compatible(reqs, &c->gfilt[g][i], FLAG_ALLOW, NULL))
            return true;
    return false;
}

static NW_MUST_USE nw_rc_t build_filter(ctx_t *c, int g)
{
    const nw_tgroup_t *gr = &c->s->groups[g];
    const nw_pclass_t *cl = &c->s->classes[gr->cls];
    if (gr->kind != NW_TG_SPREAD || !gr->affinity_honor || (cl->selector.n == 0 && !cl->nterms))
        return NW_OK;
    int n = cl->nterms ? (int)cl->nterms : 1;
    c->gfilt[g] = calloc((size_t)n, sizeof(nw_reqs_t));
    if (!c->gfilt[g])
        return NW_ENOMEM;
    for (int i = 0; i < n; i++) {
        nw_requirements_init(&c->gfilt[g][i]);
        c->ngfilt[g]++;
        if (nw_requirements_copy(&c->gfilt[g][i], &cl->selector) != NW_OK ||
            (cl->nterms &&
             nw_requirements_add_all(&c->gfilt[g][i],
                                     cl->sterms ? &cl->sterms[i] : &cl->terms[i]) != NW_OK))
            return NW_ENOMEM;
    }
    return NW_OK;
}

nw_rc_t nw_solve_topo_host_grow(ctx_t *c, int need)
{
    if (need <= c->hcap)
        return NW_OK;
    int cap = c->hcap ? c->hcap : 64;
    while (cap < need)
        cap *= 2;
    for (size_t g = 0; g < c->s->ngroups; g++) {
        if (c->hneed[g] & 1) {
            int *a = realloc(c->hcount[g], (size_t)cap * sizeof(int));
            if (!a)
                return NW_ENOMEM;
            memset(a + c->hcap, 0, (size_t)(cap - c->hcap) * sizeof(int));
            c->hcount[g] = a;
        }
        if (c->hneed[g] & 2) {
            int *b = realloc(c->howners[g], (size_t)cap * sizeof(int));
            if (!b)
                return NW_ENOMEM;
            memset(b + c->hcap, 0, (size_t)(cap - c->hcap) * sizeof(int));
            c->howners[g] = b;
        }
    }
    hpods_t *h = realloc(c->hp, (size_t)cap * sizeof *h);
    if (!h)
        return NW_ENOMEM;
    memset(h + c->hcap, 0, (size_t)(cap - c->hcap) * sizeof *h);
    c->hp = h;
    c->hcap = cap;
    return NW_OK;
}

/* the snapshot node named name (a Node, not an in-flight claim), or -1 */
/* The per-group arrays, the keys (the zone first, then the groups'), each group's domain
 * counts and filter, the host slots. */
static NW_MUST_USE nw_rc_t alloc_topology(ctx_t *c)
{
    const nw_sched_snap_t *s = c->s;
    size_t ng = s->ngroups ? s->ngroups : 1;
    c->dcount = calloc(ng, sizeof(int *));
    c->downers = calloc(ng, sizeof(int *));
    c->hcount = calloc(ng, sizeof(int *));
    c->howners = calloc(ng, sizeof(int *));
    c->gtotal = calloc(ng, sizeof(int));
    c->gkey = calloc(ng, sizeof(int));
    c->gdom = calloc(ng, sizeof(uint64_t));
    c->gidom = calloc(ng, sizeof(uint64_t));
    c->ginv = calloc(ng, sizeof(bool));
    c->gfilt = calloc(ng, sizeof(nw_reqs_t *));
    c->ngfilt = calloc(ng, sizeof(int));
    c->hneed = calloc(ng, 1);
    if (!c->dcount || !c->downers || !c->hcount || !c->howners || !c->gtotal || !c->gkey ||
        !c->gdom || !c->gidom || !c->ginv || !c->gfilt || !c->ngfilt || !c->hneed)
        return NW_ENOMEM;
    /* the hostname groups' per-host arrays that are read: hcount of a constraint of a pod
     * to place (nw_solve_topo_allowed asks only for those), howners of a required
     * anti-affinity (the inverse) */
    for (size_t p = 0; p < s->npods; p++)
        for (int i = 0; i < s->pods[p].ntcs; i++) {
            const nw_pod_tc_t *tc = &s->pods[p].tcs[i];
            if (!s->groups[tc->group].hostname)
                continue;
            if (!s->pods[p].node_name)
                c->hneed[tc->group] |= 1;
            if (s->groups[tc->group].kind == NW_TG_ANTI && !tc->preferred)
                c->hneed[tc->group] |= 2;
        }
    /* keys: the zone first, then the groups' */
    c->keys[0].name = NW_LABEL_ZONE;
    c->nkeys = 1;
    for (size_t g = 0; g < s->ngroups; g++) {
        c->gkey[g] = s->groups[g].hostname ? -1 : key_of(c, s->groups[g].key);
        c->dcount[g] = calloc(MAX_DOMAINS, sizeof(int));
        c->downers[g] = calloc(MAX_DOMAINS, sizeof(int));
        if (!c->dcount[g] || !c->downers[g] || build_filter(c, (int)g) != NW_OK)
            return NW_ENOMEM;
    }
    if (nw_solve_topo_host_grow(c, c->nen + 64) != NW_OK)
        return NW_ENOMEM;
    return NW_OK;
}

/* The domains of each key, per pool, per node and per group. */
static NW_MUST_USE nw_rc_t collect_domains(ctx_t *c)
{
    const nw_sched_snap_t *s = c->s;
    /* domains of the other keys: instance types, NodePools, nodes */
    for (int k = 1; k < c->nkeys; k++) {
        for (size_t t = 0; t < s->nitypes; t++)
            dom_add_req(c, k, &s->itypes[t].reqs);
        for (size_t p = 0; p < s->npools; p++)
            dom_add_req(c, k, &s->pools[p].reqs);
        for (size_t n = 0; n < s->nnodes; n++) {
            const char *v = nw_labels_get(&s->nodes[n].labels, c->keys[k].name);
            if (v)
                dom_add(c, k, v);
            else
                dom_add_req(c, k, &s->nodes[n].reqs);
        }
    }
    /* per pool: the domains its requirements and its instance types give (Karpenter's
     * buildDomainGroups) */
    for (int k = 0; k < c->nkeys; k++) {
        c->keys[k].pool = calloc((size_t)c->npools + 1, sizeof(uint64_t));
        if (!c->keys[k].pool)
            return NW_ENOMEM;
        for (int pi = 0; pi < c->npools; pi++) {
            const nw_req_t *pr = nw_requirements_get(&c->pools[pi].p->reqs, c->keys[k].name);
            uint64_t m = 0;
            for (size_t t = 0; t < s->nitypes; t++) {
                const nw_req_t *tr = nw_requirements_get(&s->itypes[t].reqs, c->keys[k].name);
                for (size_t i = 0; tr && !tr->complement && i < tr->nvalues; i++)
                    if (!pr || nw_requirements_req_has(pr, tr->values[i]))
                        m |= bit_of(c, k, tr->values[i]);
            }
            for (size_t i = 0; pr && !pr->complement && i < pr->nvalues; i++)
                m |= bit_of(c, k, pr->values[i]);
            c->keys[k].pool[pi] = m;
        }
    }
    /* the nodes' domains per key */
    for (int i = 0; i < c->nen; i++)
        for (int k = 0; k < c->nkeys; k++)
            c->en[i].dm[k] = node_domains(c, k, &s->nodes[c->en[i].snode], c->en[i].zone);
    /* each registered node's domain of each key by its label (0: a claim, or no label, or
     * not a counted domain), and their union per key: a spread group's walk over the nodes
     * below reads these, and ends once it has every domain the nodes can give */
    uint64_t *lbit = calloc((size_t)c->nkeys * (size_t)(c->nen + 1), sizeof *lbit);
    uint64_t lall[MAX_TKEYS] = {0};
    if (!lbit)
        return NW_ENOMEM;
    for (int k = 0; k < c->nkeys; k++)
        for (int i = 0; i < c->nen; i++) {
            const nw_snode_t *n = &s->nodes[c->en[i].snode];
            const char *v = n->claim ? NULL : nw_labels_get(&n->labels, c->keys[k].name);
            uint64_t b = v ? bit_of(c, k, v) : 0;
            lbit[(size_t)k * (size_t)c->nen + (size_t)i] = b;
            lall[k] |= b;
        }
    /* each group's domains: its pools' (the owner's tolerations decide unless the spread
     * ignores taints), and for a spread the registered nodes it counts */
    for (size_t g = 0; g < s->ngroups; g++) {
        int k = c->gkey[g];
        if (k < 0)
            continue;
        const nw_tgroup_t *gr = &s->groups[g];
        for (int pi = 0; pi < c->npools; pi++) {
            bool any = gr->kind == NW_TG_SPREAD && !gr->taints_honor;
            if (any || pool_tolerated(c, gr->cls, &c->pools[pi]))
                c->gdom[g] |= c->keys[k].pool[pi];
            if (pool_tolerated(c, gr->cls, &c->pools[pi]))
                c->gidom[g] |= c->keys[k].pool[pi];
        }
        if (gr->kind != NW_TG_SPREAD)
            continue;
        const uint64_t *kb = lbit + (size_t)k * (size_t)c->nen;
        for (int i = 0; i < c->nen && (c->gdom[g] & lall[k]) != lall[k]; i++) {
            const nw_snode_t *n = &s->nodes[c->en[i].snode];
            if (kb[i] && !(c->gdom[g] & kb[i]) && filter_matches(c, (int)g, &n->reqs, &n->taints))
                c->gdom[g] |= kb[i];
        }
    }
    free(lbit);
    return NW_OK;
}

/* Which pods select which groups; required anti-affinity makes a group inverse. */
/* Which groups a pod may select, found without trying every group on every pod: a group
 * whose selector requires one label value (matchLabels, or In with one value) is listed
 * under that key and value (its anchor); only the groups anchored on one of the pod's
 * labels, and those without an anchor, can select it. */
typedef struct {
    const char *key, *value;
    int g;
} anchor_t;

static int anchor_cmp(const void *a, const void *b)
{
    const anchor_t *x = a, *y = b;
    int r = strcmp(x->key, y->key);
    if (!r)
        r = strcmp(x->value, y->value);
    return r ? r : (x->g > y->g) - (x->g < y->g);
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

typedef struct {
    anchor_t *anchors; /* sorted by key, value, group */
    size_t nanchors;
    int *free_groups; /* groups without an anchor, ascending */
    size_t nfree;
} gindex_t;

static void gindex_free(gindex_t *x)
{
    free(x->anchors);
    free(x->free_groups);
}

static NW_MUST_USE nw_rc_t gindex_build(const nw_sched_snap_t *s, gindex_t *x)
{
    *x = (gindex_t){0};
    x->anchors = calloc(s->ngroups + 1, sizeof *x->anchors);
    x->free_groups = calloc(s->ngroups + 1, sizeof *x->free_groups);
    if (!x->anchors || !x->free_groups)
        return NW_ENOMEM;
    for (size_t g = 0; g < s->ngroups; g++) {
        const nw_tgroup_t *tg = &s->groups[g];
        if (tg->sel_nothing)
            continue; /* selects no pod */
        const nw_req_t *a = NULL;
        for (size_t i = 0; i < tg->sel.n && !a; i++)
            if (!tg->sel.v[i].complement && tg->sel.v[i].nvalues == 1 && !tg->sel.v[i].has_gte &&
                !tg->sel.v[i].has_lte && !tg->sel.v[i].absent_ok &&
                !nw_wellknown_alias(tg->sel.v[i].key)) /* a pod may carry the alias instead */
                a = &tg->sel.v[i];
        if (a)
            x->anchors[x->nanchors++] = (anchor_t){a->key, a->values[0], (int)g};
        else
            x->free_groups[x->nfree++] = (int)g;
    }
    qsort(x->anchors, x->nanchors, sizeof *x->anchors, anchor_cmp);
    return NW_OK;
}

/* The groups that select pod p (ascending) into *out (owned; NULL when none). */
static NW_MUST_USE nw_rc_t pod_groups(const nw_sched_snap_t *s, const gindex_t *x,
                                      const nw_spod_t *pd, int **out, int *nout)
{
    *out = NULL;
    *nout = 0;
    size_t cap = x->nfree, n = 0;
    int *cand = NULL;
    const nw_labels_t *l = pd->labels;
    for (size_t i = 0; l && i < l->n; i++) { /* the anchors on the pod's labels */
        anchor_t key = {l->v[i].key, l->v[i].value, -1};
        size_t lo = 0, hi = x->nanchors;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (anchor_cmp(&x->anchors[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t k = lo; k < x->nanchors && strcmp(x->anchors[k].key, key.key) == 0 &&
                            strcmp(x->anchors[k].value, key.value) == 0;
             k++) {
            if (n == cap) {
                size_t nc = cap ? cap * 2 : 16;
                int *g = realloc(cand, nc * sizeof *g);
                if (!g) {
                    free(cand);
                    return NW_ENOMEM;
                }
                cand = g;
                cap = nc;
            }
            cand[n++] = x->anchors[k].g;
        }
    }
    if (n + x->nfree > 0) {
        int *g = realloc(cand, (n + x->nfree) * sizeof *g);
        if (!g) {
            free(cand);
            return NW_ENOMEM;
        }
        cand = g;
        memcpy(cand + n, x->free_groups, x->nfree * sizeof *cand);
        n += x->nfree;
    }
    if (n > 1)
        qsort(cand, n, sizeof *cand, int_cmp);
    int m = 0;
    for (size_t i = 0; i < n; i++)
        if ((i == 0 || cand[i] != cand[i - 1]) &&
            nw_snap_pod_group_selects(s, &s->groups[cand[i]], pd))
            cand[m++] = cand[i];
    if (!m) {
        free(cand);
        cand = NULL;
    }
    *out = cand;
    *nout = m;
    return NW_OK;
}

/* The first pod with each shared label set (by address): open addressing, a power-of-two
 * capacity at least twice the snapshot's label sets; a set past half full is not kept. */
typedef struct {
    const nw_labels_t **key;
    int *pod;
    size_t cap, n;
} lsmemo_t;

static size_t lsmemo_slot(const lsmemo_t *m, const nw_labels_t *l)
{
    uint64_t x = (uint64_t)(uintptr_t)l;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    size_t i = (size_t)x & (m->cap - 1);
    while (m->key[i] && m->key[i] != l)
        i = (i + 1) & (m->cap - 1);
    return i;
}

/* the earlier pod whose answer holds for pd (same label set, same namespace), else -1;
 * pd (index p) is remembered when its label set is new */
static int lsmemo_find(lsmemo_t *m, const nw_sched_snap_t *s, const nw_spod_t *pd, int p)
{
    if (!m->cap || !pd->labels)
        return -1;
    size_t i = lsmemo_slot(m, pd->labels);
    if (m->key[i])
        return strcmp(s->pods[m->pod[i]].ns, pd->ns) == 0 ? m->pod[i] : -1;
    if (2 * (m->n + 1) <= m->cap) {
        m->key[i] = pd->labels;
        m->pod[i] = p;
        m->n++;
    }
    return -1;
}

static NW_MUST_USE nw_rc_t select_groups(ctx_t *c)
{
    const nw_sched_snap_t *s = c->s;
    gindex_t x;
    nw_rc_t rc = gindex_build(s, &x);
    lsmemo_t memo = {0};
    for (memo.cap = 64; memo.cap < 2 * (s->nlsets + 1); memo.cap *= 2)
        ;
    memo.key = calloc(memo.cap, sizeof *memo.key);
    memo.pod = calloc(memo.cap, sizeof *memo.pod);
    if (!memo.key || !memo.pod)
        memo.cap = 0; /* out of memory: each pod's groups found on their own */
    /* which pods select which groups; required anti-affinity makes a group inverse */
    for (size_t p = 0; p < s->npods && rc == NW_OK; p++) {
        pstate_t *st = &c->ps[p];
        const nw_spod_t *pd = &s->pods[p];
        /* pods of one ReplicaSet share their labels (and namespace): the answer for the
         * first pod of that label set holds for this one (a node's pods come from many
         * ReplicaSets, so the previous pod's seldom does) */
        int same = lsmemo_find(&memo, s, pd, (int)p);
        if (same >= 0) {
            const pstate_t *ps = &c->ps[same];
            st->nsel = ps->nsel;
            st->selgroups = ps->nsel ? malloc((size_t)ps->nsel * sizeof(int)) : NULL;
            if (ps->nsel && !st->selgroups)
                rc = NW_ENOMEM;
            else if (ps->nsel)
                memcpy(st->selgroups, ps->selgroups, (size_t)ps->nsel * sizeof(int));
        } else {
            rc = pod_groups(s, &x, pd, &st->selgroups, &st->nsel);
        }
        for (int i = 0; i < pd->ntcs; i++)
            if (s->groups[pd->tcs[i].group].kind == NW_TG_ANTI && !pd->tcs[i].preferred &&
                (pd->provisionable_state || pd->node_name))
                c->ginv[pd->tcs[i].group] = true;
    }
    free(memo.key);
    free(memo.pod);
    gindex_free(&x);
    return rc;
}

/* The bound (and nominated) pods in their nodes' domains. */
typedef struct {
    const char *name;
    int node; /* index into the snapshot's nodes */
} nameref_t;

static int nameref_cmp(const void *a, const void *b)
{
    const nameref_t *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    return r ? r : (x->node > y->node) - (x->node < y->node);
}

/* Where a bound pod counts: the lowest existing-node slot whose node has its node name,
 * else the first node (not a NodeClaim) of that name (*slot -1); -1 when none. The
 * names are sorted (refs), so this is a search, not a walk over every node. */
static int bound_node(const ctx_t *c, const nameref_t *refs, size_t nrefs, const int *slot_of,
                      const char *name, int *slot)
{
    size_t k, lo = nw_strs_lower(refs, nrefs, sizeof *refs, offsetof(nameref_t, name), name, &k);
    int first = -1;
    *slot = -1;
    for (size_t i = lo; i < lo + k; i++) {
        int sn = refs[i].node, sl = slot_of[sn];
        if (sl >= 0 && (*slot < 0 || sl < *slot))
            *slot = sl;
        if (first < 0 && !c->s->nodes[sn].claim)
            first = sn;
    }
    return *slot >= 0 ? c->en[*slot].snode : first;
}

static NW_MUST_USE nw_rc_t count_bound(ctx_t *c)
{
    const nw_sched_snap_t *s = c->s;
    nameref_t *refs = calloc(s->nnodes + 1, sizeof *refs);
    int *slot_of = calloc(s->nnodes + 1, sizeof *slot_of);
    if (!refs || !slot_of) {
        free(refs);
        free(slot_of);
        return NW_ENOMEM;
    }
    size_t nrefs = 0;
    for (size_t i = 0; i < s->nnodes; i++) {
        slot_of[i] = -1;
        if (s->nodes[i].name)
            refs[nrefs++] = (nameref_t){s->nodes[i].name, (int)i};
    }
    qsort(refs, nrefs, sizeof *refs, nameref_cmp);
    for (int i = c->nen - 1; i >= 0; i--)
        slot_of[c->en[i].snode] = i; /* the lowest slot of a node wins */
    nw_rc_t rc = NW_OK;
    /* bound pods count in their node's domains (countDomains, updateInverseAffinities);
     * pods nominated to an in-flight NodeClaim count there, as placed by an earlier batch */
    /* a node's bound pods come one after the other in the snapshot: its lookup and
     * domains hold for the next pod on it */
    const char *last = NULL;
    int sn = -1, slot = -1;
    uint64_t dm[MAX_TKEYS];
    for (size_t p = 0; p < s->npods && rc == NW_OK; p++) {
        const nw_spod_t *pd = &s->pods[p];
        if (!pd->node_name || pd->finished || pd->terminating)
            continue;
        if (!last || strcmp(last, pd->node_name) != 0) {
            last = pd->node_name;
            sn = bound_node(c, refs, nrefs, slot_of, pd->node_name, &slot);
            for (int k = 0; sn >= 0 && k < c->nkeys; k++)
                dm[k] = slot >= 0 ? c->en[slot].dm[k] : node_domains(c, k, &s->nodes[sn], -1);
        }
        if (sn < 0)
            continue;
        const nw_snode_t *n = &s->nodes[sn];
        nw_solve_topo_record(c, (int)p, slot, dm, &n->reqs, &n->taints);
        if (slot >= 0 && pd->nhostports && nw_solve_topo_hostports_add(c, (int)p, slot) != NW_OK)
            rc = NW_ENOMEM;
    }
    free(refs);
    free(slot_of);
    return rc;
}

nw_rc_t nw_solve_topo_prep(ctx_t *c)
{
    nw_rc_t rc;
    if ((rc = alloc_topology(c)) != NW_OK || (rc = collect_domains(c)) != NW_OK ||
        (rc = select_groups(c)) != NW_OK || (rc = count_bound(c)) != NW_OK)
        return rc;
    return NW_OK;
}

/* ---- Karpenter's TopologyGroup.Get ------------------------------------------------ */

static bool selects_self(const ctx_t *c, int pod, int g)
{
    const pstate_t *st = &c->ps[pod];
    for (int i = 0; i < st->nsel; i++)
        if (st->selgroups[i] == g)
            return true;
    return false;
}

/* the domain of m the name of which sorts first */
static int first_domain(const ctx_t *c, int k, uint64_t m)
{
    int best = -1;
    for (uint64_t x = m; x; x &= x - 1) {
        int d = __builtin_ctzll(x);
        if (best < 0 || strcmp(k == 0 ? c->zones[d] : c->keys[k].dom[d],
                               k == 0 ? c->zones[best] : c->keys[k].dom[best]) < 0)
            best = d;
    }
    return best;
}

/* nextDomainTopologySpread: the least-used valid domain, as one */
static uint64_t spread_next(const ctx_t *c, int g, int k, bool self, uint64_t pd, uint64_t nd)
{
    const nw_tgroup_t *gr = &c->s->groups[g];
    const int *cnt = c->dcount[g];
    uint64_t dom = c->gdom[g];
    int64_t mn = INT32_MAX;
    int supported = 0;
    for (uint64_t x = dom & pd; x; x &= x - 1) {
        int d = __builtin_ctzll(x);
        supported++;
        if (cnt[d] < mn)
            mn = cnt[d];
    }
    if (gr->min_domains > 0 && supported < gr->min_domains)
        mn = 0;
    int best = -1;
    for (uint64_t x = dom & nd; x; x &= x - 1) {
        int d = __builtin_ctzll(x);
        int64_t n = cnt[d] + (self ? 1 : 0);
        if (n - mn > gr->max_skew)
            continue;
        if (best < 0 || cnt[d] < cnt[best] ||
            (cnt[d] == cnt[best] && first_domain(c, k, (1ULL << d) | (1ULL << best)) == d))
            best = d;
    }
    return best >= 0 ? 1ULL << best : 0;
}

/* nextDomainAffinity */
static uint64_t affinity_next(const ctx_t *c, int g, int k, bool self, uint64_t pd, uint64_t nd)
{
    const int *cnt = c->dcount[g];
    uint64_t dom = c->gdom[g], used = 0;
    for (uint64_t x = dom; x; x &= x - 1) {
        int d = __builtin_ctzll(x);
        if (cnt[d] > 0)
            used |= 1ULL << d;
    }
    uint64_t opt = used & pd & nd;
    if (opt || !self || (used && (used & pd)))
        return opt;
    /* self-selecting and nothing to follow yet: start a domain, in the node's domains if
     * one fits, else any the pod allows */
    int d = first_domain(c, k, dom & pd & nd);
    if (d < 0)
        d = first_domain(c, k, dom & pd);
    return d >= 0 ? 1ULL << d : 0;
}

/* nextDomainAntiAffinity: the empty domains */
static uint64_t anti_next(const int *cnt, uint64_t dom, uint64_t pd, uint64_t nd)
{
    uint64_t empty = 0;
    for (uint64_t x = dom; x; x &= x - 1) {
        int d = __builtin_ctzll(x);
        if (cnt[d] == 0)
            empty |= 1ULL << d;
    }
    return empty & pd & nd;
}

static void say(char *why, size_t whyn, const char *what, const char *key)
{
    if (why && !*why)
        snprintf(why, whyn, "%s (%s)", what, key);
}

static const char *what_of(nw_tg_kind_t kind)
{
    return kind == NW_TG_SPREAD     ? "topology spread"
           : kind == NW_TG_AFFINITY ? "pod affinity"
                                    : "pod anti-affinity";
}

bool nw_solve_topo_allowed(const ctx_t *c, int pod, const variant_t *v, int host,
                           const uint64_t *cand, uint64_t *out, uint32_t *touched, char *why,
                           size_t whyn)
{
    const nw_spod_t *p = &c->s->pods[pod];
    const pstate_t *st = &c->ps[pod];
    if (why && whyn)
        *why = 0;
    *touched = 0;
    for (int k = 0; k < c->nkeys; k++)
        out[k] = cand[k];
    for (int i = 0; i < p->ntcs; i++) {
        if (!nw_solve_topo_tc_active(c, pod, i))
            continue;
        int g = p->tcs[i].group, k = c->gkey[g];
        const nw_tgroup_t *gr = &c->s->groups[g];
        if (k == -2) {
            say(why, whyn, "more than 16 topology keys", gr->key);
            return false;
        }
        bool self = selects_self(c, pod, g);
        if (k == -1) {
            int cnt = host >= 0 && c->hcount[g] ? c->hcount[g][host] : 0;
            bool ok = gr->kind == NW_TG_SPREAD     ? cnt + (self ? 1 : 0) <= gr->max_skew
                      : gr->kind == NW_TG_AFFINITY ? (cnt > 0 || (self && c->gtotal[g] == 0))
                                                   : cnt == 0;
            if (!ok) {
                say(why, whyn, what_of(gr->kind), gr->key);
                return false;
            }
            continue;
        }
        uint64_t r = gr->kind == NW_TG_SPREAD ? spread_next(c, g, k, self, v->pmask[k], cand[k])
                     : gr->kind == NW_TG_AFFINITY
                         ? affinity_next(c, g, k, self, v->pmask[k], cand[k])
                         : anti_next(c->dcount[g], c->gdom[g], v->pmask[k], cand[k]);
        out[k] &= r;
        *touched |= 1u << k;
        if (!out[k]) {
            say(why, whyn, what_of(gr->kind), gr->key);
            return false;
        }
    }
    /* inverse anti-affinity: pods whose required anti-affinity selects this one */
    for (int i = 0; i < st->nsel; i++) {
        int g = st->selgroups[i], k = c->gkey[g];
        const nw_tgroup_t *gr = &c->s->groups[g];
        if (gr->kind != NW_TG_ANTI || !c->ginv[g] || k == -2)
            continue;
        if (k == -1) {
            if (host >= 0 && c->howners[g] && c->howners[g][host] > 0) {
                say(why, whyn, "another pod's anti-affinity", gr->key);
                return false;
            }
            continue;
        }
        out[k] &= anti_next(c->downers[g], c->gidom[g], v->pmask[k], cand[k]);
        *touched |= 1u << k;
        if (!out[k]) {
            say(why, whyn, "another pod's anti-affinity", gr->key);
            return false;
        }
    }
    return true;
}

/* ---- Karpenter's Topology.Record -------------------------------------------------- */

void nw_solve_topo_record(ctx_t *c, int pod, int host, const uint64_t *dm, const nw_reqs_t *reqs,
                          const nw_taints_t *taints)
{
    const nw_spod_t *p = &c->s->pods[pod];
    const pstate_t *st = &c->ps[pod];
    for (int i = 0; i < st->nsel; i++) {
        int g = st->selgroups[i], k = c->gkey[g];
        const nw_tgroup_t *gr = &c->s->groups[g];
        if (k == -2 || !filter_matches(c, g, reqs, taints))
            continue;
        if (k == -1) {
            if (host >= 0 && c->hcount[g]) /* a group no pod to place asks about */
                c->hcount[g][host]++;
            c->gtotal[g]++;
            continue;
        }
        /* a requirement that names no values (absent, Exists) records nothing */
        if (!nw_requirements_get(reqs, gr->key))
            continue;
        uint64_t m = dm[k];
        if (gr->kind != NW_TG_ANTI && (m & (m - 1)))
            continue; /* spread and affinity count only a decided domain */
        for (uint64_t x = m; x; x &= x - 1)
            c->dcount[g][__builtin_ctzll(x)]++;
        c->gdom[g] |= m;
    }
    for (int i = 0; i < p->ntcs; i++) {
        int g = p->tcs[i].group, k = c->gkey[g];
        const nw_tgroup_t *gr = &c->s->groups[g];
        if (gr->kind != NW_TG_ANTI || p->tcs[i].preferred || k == -2)
            continue;
        if (k == -1) {
            if (host >= 0 && c->howners[g])
                c->howners[g][host]++;
            continue;
        }
        if (!nw_requirements_get(reqs, gr->key))
            continue;
        for (uint64_t x = dm[k]; x; x &= x - 1)
            c->downers[g][__builtin_ctzll(x)]++;
        c->gidom[g] |= dm[k];
    }
}

/* ---- host ports ------------------------------------------------------------------- */

static bool ports_match(const nw_hostport_t *a, const nw_hostport_t *b)
{
    return a->port == b->port && strcmp(a->proto, b->proto) == 0 &&
           (!a->ip[0] || !b->ip[0] || strcmp(a->ip, b->ip) == 0);
}

static bool ports_overlap(const nw_hostport_t *a, int na, const nw_hostport_t *b, int nb)
{
    for (int i = 0; i < na; i++)
        for (int k = 0; k < nb; k++)
            if (ports_match(&a[i], &b[k]))
                return true;
    return false;
}

bool nw_solve_topo_hostports_conflict(const ctx_t *c, int pod, int host)
{
    const nw_spod_t *p = &c->s->pods[pod];
    if (!p->nhostports || host < 0)
        return false;
    const hpods_t *h = &c->hp[host];
    for (int i = 0; i < h->n; i++) {
        const nw_spod_t *q = &c->s->pods[h->v[i]];
        if (ports_overlap(p->hostports, p->nhostports, q->hostports, q->nhostports))
            return true;
    }
    return false;
}

/* ---- volume attach limits ------------------------------------------------------------ */

static bool vol_on(const enode_t *e, const nw_svol_t *v)
{
    for (int i = 0; i < e->nvols; i++)
        if (strcmp(e->vols[i]->driver, v->driver) == 0 && strcmp(e->vols[i]->id, v->id) == 0)
            return true;
    return false;
}

bool nw_solve_topo_volumes_exceed(const ctx_t *c, int pod, const enode_t *e)
{
    const nw_spod_t *p = &c->s->pods[pod];
    if (!e->csi || !p->nvols)
        return false;
    for (int d = 0; d < e->csi->n; d++) {
        const char *drv = e->csi->drivers[d];
        int used = 0, added = 0;
        for (int i = 0; i < e->nvols; i++)
            used += strcmp(e->vols[i]->driver, drv) == 0;
        for (int k = 0; k < p->nvols; k++) {
            bool dup = false;
            for (int j = 0; j < k && !dup; j++)
                dup = strcmp(p->vols[j].driver, p->vols[k].driver) == 0 &&
                      strcmp(p->vols[j].id, p->vols[k].id) == 0;
            added += !dup && strcmp(p->vols[k].driver, drv) == 0 && !vol_on(e, &p->vols[k]);
        }
        if (added && used + added > e->csi->limits[d])
            return true;
    }
    return false;
}

nw_rc_t nw_solve_topo_volumes_add(ctx_t *c, int pod, enode_t *e)
{
    const nw_spod_t *p = &c->s->pods[pod];
    for (int k = 0; k < p->nvols; k++) {
        if (vol_on(e, &p->vols[k]))
            continue;
        if (e->nvols == e->cvols) {
            int n = e->cvols ? e->cvols * 2 : 8;
            const nw_svol_t **nv = realloc(e->vols, (size_t)n * sizeof *nv);
            if (!nv)
                return NW_ENOMEM;
            e->vols = nv;
            e->cvols = n;
        }
        e->vols[e->nvols++] = &p->vols[k];
    }
    return NW_OK;
}

bool nw_solve_topo_ds_ports_conflict(const ctx_t *c, int pod, const pctx_t *pc)
{
    const nw_spod_t *p = &c->s->pods[pod];
    for (int i = 0; p->nhostports && i < pc->ndsports; i++) {
        const nw_sds_t *d = &c->s->dss[pc->dsports[i]];
        if (ports_overlap(p->hostports, p->nhostports, d->hostports, d->nhostports))
            return true;
    }
    return false;
}

nw_rc_t nw_solve_topo_hostports_add(ctx_t *c, int pod, int host)
{
    if (!c->s->pods[pod].nhostports || host < 0)
        return NW_OK;
    hpods_t *h = &c->hp[host];
    return push_int(&h->v, &h->n, &h->cap, pod);
}
